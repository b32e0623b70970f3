"""The compat layers beside the peers they imitate (issue 31): the same code, the peer's own API shape, run once with
the peer's import and once with cykafka.compat's, on one embedded broker, produce and consume, interleaved rounds.

    python bench/compat_bench.py [--records N] [--rounds R] [--peers confluent,kafka-python,aiokafka] [--json]

Each (peer, import) runs in its own process: a produce worker sends --records 100-byte values (no key) to a fresh
4-partition topic through the peer's API (confluent-kafka: produce + poll(0), flush; kafka-python: send, flush;
aiokafka: send, then the futures awaited, stop) and times the first send to the end of flush; a consume worker reads
them back from the earliest offset without a group (confluent-kafka: assign + consume(1000); kafka-python:
poll(max_records=1000); aiokafka: getmany(max_records=1000)) and times the first poll to the last record. The same
settings for both imports (SETTINGS: acks=all with idempotence, but for aiokafka on Tansu, linger 5 ms, batch 16384
bytes, no compression, CRCs checked): like with like. The goal: each compat module >= 2x its peer, produce and consume.
bench/run.py --only compat runs this file with --json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

# measure the installed package, not the source tree (see e2e_bench.py)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

PEERS = ("confluent", "kafka-python", "aiokafka")
MODULES = {  # peer -> (its own import, cykafka's twin)
    "confluent": ("confluent_kafka", "cykafka.compat.confluent_kafka"),
    "kafka-python": ("kafka", "cykafka.compat.kafka"),
    "aiokafka": ("aiokafka", "cykafka.compat.aiokafka"),
}
SETTINGS = {  # the same for both imports of a peer, in the peer's spelling
    "confluent": {"acks": "all", "enable.idempotence": True, "linger.ms": 5, "batch.size": 16384,
                  "compression.type": "none", "check.crcs": True},
    "kafka-python": {"acks": "all", "enable_idempotence": True, "linger_ms": 5, "batch_size": 16384,
                     "compression_type": None},
    # aiokafka asks for a producer id with InitProducerId v0 only, which Tansu refuses (bench/run.py's
    # missing_idempotence): both imports run it without idempotence
    "aiokafka": {"acks": "all", "linger_ms": 5, "max_batch_size": 16384, "compression_type": None},
}
CONSUMER_SETTINGS = {"kafka-python": {"check_crcs": True}, "aiokafka": {"check_crcs": True}}
PARTITIONS = 4
VALUE = b"v" * 100
GOAL = 2.0


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(work: Callable[[], int]) -> dict[str, Any]:
    cpu, started = _cpu_s(), time.perf_counter()
    return _result(work(), started, cpu)


# -- the workers: one per peer, given the module to import (the peer's or cykafka's twin) ----------------------------


def confluent(module: Any, mode: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    if mode == "produce":
        producer = module.Producer({"bootstrap.servers": bootstrap, **SETTINGS["confluent"]})

        def produce() -> int:
            for _ in range(records):
                while True:
                    try:
                        producer.produce(topic, VALUE)
                        break
                    except BufferError:  # the queue is full: serve callbacks, as confluent's examples do
                        producer.poll(0.05)
                producer.poll(0)
            assert producer.flush(60) == 0
            return records

        return _timed(produce)
    consumer = module.Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                                "enable.auto.commit": False, "check.crcs": True})
    consumer.assign([module.TopicPartition(topic, p, module.OFFSET_BEGINNING) for p in range(PARTITIONS)])

    def consume() -> int:
        got, deadline = 0, time.monotonic() + 120
        while got < records and time.monotonic() < deadline:
            got += sum(1 for m in consumer.consume(1000, 1.0) if m.error() is None)
        consumer.close()
        return got

    return _timed(consume)


def kafka_python(module: Any, mode: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    if mode == "produce":
        producer = module.KafkaProducer(bootstrap_servers=bootstrap, **SETTINGS["kafka-python"])

        def produce() -> int:
            for _ in range(records):
                producer.send(topic, VALUE)
            producer.flush(60)
            producer.close()
            return records

        return _timed(produce)
    consumer = module.KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                    enable_auto_commit=False, **CONSUMER_SETTINGS["kafka-python"])
    consumer.assign([module.TopicPartition(topic, p) for p in range(PARTITIONS)])

    def consume() -> int:
        got, deadline = 0, time.monotonic() + 120
        while got < records and time.monotonic() < deadline:
            got += sum(len(batch) for batch in consumer.poll(timeout_ms=1000, max_records=1000).values())
        consumer.close()
        return got

    return _timed(consume)


def aiokafka(module: Any, mode: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    async def produce() -> dict[str, Any]:
        producer = module.AIOKafkaProducer(bootstrap_servers=bootstrap, **SETTINGS["aiokafka"])
        await producer.start()
        cpu, started = _cpu_s(), time.perf_counter()
        futures = [await producer.send(topic, VALUE) for _ in range(records)]
        await asyncio.gather(*futures)
        await producer.stop()
        return _result(records, started, cpu)

    async def consume() -> dict[str, Any]:
        consumer = module.AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                           enable_auto_commit=False, **CONSUMER_SETTINGS["aiokafka"])
        await consumer.start()
        consumer.assign([module.TopicPartition(topic, p) for p in range(PARTITIONS)])
        cpu, started = _cpu_s(), time.perf_counter()
        got, deadline = 0, time.monotonic() + 120
        while got < records and time.monotonic() < deadline:
            got += sum(len(batch) for batch in (await consumer.getmany(timeout_ms=1000, max_records=1000)).values())
        result = _result(got, started, cpu)
        await consumer.stop()
        return result

    return asyncio.run(produce() if mode == "produce" else consume())


def _result(records: int, started: float, cpu: float) -> dict[str, Any]:
    elapsed_s = time.perf_counter() - started
    return {"records": records, "s": elapsed_s, "rate": records / elapsed_s,
            "cpu_us_per_record": (_cpu_s() - cpu) / max(1, records) * 1e6}


WORKERS = {"confluent": confluent, "kafka-python": kafka_python, "aiokafka": aiokafka}


# -- the run ----------------------------------------------------------------------------------------------------------


def measure(peer: str, twin: bool, mode: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    from consume_bench import run_worker

    return run_worker(peer, [os.path.abspath(__file__), "--worker", peer, "--mode", mode, "--bootstrap", bootstrap,
                             "--topic", topic, "--records", str(records)] + (["--twin"] if twin else []), 300)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from cykafka import Admin, NewTopic
    from cykafka.broker import EmbeddedBroker

    peers = [p for p in args.peers.split(",") if p]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        peer: {key: [] for key in ("produce", "produce-compat", "consume", "consume-compat")} for peer in peers}
    with EmbeddedBroker() as broker, Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        for _ in range(args.rounds):
            for peer in peers:
                for twin in (False, True):
                    topic = f"compat-{peer}-{uuid.uuid4().hex[:8]}"
                    admin.create_topics([NewTopic(topic, PARTITIONS)])[topic].result()
                    suffix = "-compat" if twin else ""
                    runs[peer]["produce" + suffix].append(
                        measure(peer, twin, "produce", broker.bootstrap_servers, topic, args.records))
                    runs[peer]["consume" + suffix].append(
                        measure(peer, twin, "consume", broker.bootstrap_servers, topic, args.records))
    return {"records": args.records, "rounds": args.rounds, "runs": runs}


def _median(results: list[dict[str, Any]], key: str) -> float:
    good = [r[key] for r in results if "error" not in r]
    return statistics.median(good) if good else float("nan")


def table(result: dict[str, Any]) -> str:
    lines = [f"### The compat layers beside their peers, {result['records']:,} records of 100 B, {result['rounds']} "
             f"round(s) (median records/s; CPU µs per record)", "",
             f"| peer | mode | the peer | cykafka.compat | compat / peer | goal ≥ {GOAL:.0f}x |",
             "|---|---|---:|---:|---:|---|"]
    for peer, runs in result["runs"].items():
        for mode in ("produce", "consume"):
            peer_rate, twin_rate = _median(runs[mode], "rate"), _median(runs[mode + "-compat"], "rate")
            ratio = twin_rate / peer_rate if peer_rate > 0 else float("nan")
            errors = "; ".join(r["error"] for r in runs[mode] + runs[mode + "-compat"] if "error" in r)
            lines.append(f"| {peer} | {mode} | {peer_rate:,.0f} ({_median(runs[mode], 'cpu_us_per_record'):.1f} µs) "
                         f"| {twin_rate:,.0f} ({_median(runs[mode + '-compat'], 'cpu_us_per_record'):.1f} µs) | "
                         f"{ratio:.2f} | {'met' if ratio >= GOAL else 'not met'} |"
                         + (f" errors: {errors}" if errors else ""))
    return "\n".join(lines) + "\n"


def main() -> int:
    from consume_bench import worker_parser

    parser = worker_parser(__doc__, PEERS)
    parser.add_argument("--mode", choices=("produce", "consume"), default="produce")
    parser.add_argument("--twin", action="store_true", help="the worker imports cykafka.compat's twin of the peer")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON (for bench/run.py)")
    args = parser.parse_args()
    if args.worker:
        import importlib

        module = importlib.import_module(MODULES[args.worker][1 if args.twin else 0])
        result = WORKERS[args.worker](module, args.mode, args.bootstrap, args.topic, args.records)
        print(json.dumps({"client": args.worker, "module": module.__name__, **result}))
        return 0
    result = run(args)
    print(json.dumps(result) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
