"""End-to-end producer throughput, side by side on one embedded broker: cykafka, confluent-kafka (librdkafka),
aiokafka and kafka-python, each in its own process (so its CPU time is its own), interleaved round by round.

    python bench/e2e_bench.py [--records N] [--slow-records M] [--rounds R] [--value-bytes B] [--codec none|lz4|...]
                              [--clients cykafka,confluent,aiokafka,kafka-python] [--bootstrap HOST:PORT]
    python -m cProfile -o bench/results/e2e.prof bench/e2e_bench.py --worker cykafka --bootstrap HOST:PORT

Same payloads (keyed, B-byte values), same batching (linger.ms=5, batch.size=16384, acks=all, the codec) for every
client. Reports medians, client CPU (user+sys) per record, and ratios against confluent-kafka as a markdown table.
The pure-Python clients send --slow-records records (their rate is steady-state) to keep the run short.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

# measure the installed package: `python -m cProfile` puts the working directory (the source tree) first on sys.path
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

LINGER_MS = 5
BATCH_SIZE = 16384


def payloads(count: int, value_bytes: int) -> tuple[list[bytes], list[bytes]]:
    keys = [b"key-%06d" % (i * 7919 % 1_000_000) for i in range(1024)]
    values = [(b"%08d" % i + b"v" * value_bytes)[:value_bytes] for i in range(1024)]
    return [keys[i % 1024] for i in range(count)], [values[i % 1024] for i in range(count)]


def run_cykafka(bootstrap: str, topic: str, keys: list[bytes], values: list[bytes], codec: str) -> int:
    from cykafka import Producer

    with Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS, "batch.size": BATCH_SIZE,
                   "compression.type": codec}) as producer:
        send = producer.send
        for key, value in zip(keys, values, strict=True):
            send(topic, value, key)
        producer.flush()
        return int(producer.metrics()["record-error-total"])


def run_confluent(bootstrap: str, topic: str, keys: list[bytes], values: list[bytes], codec: str) -> int:
    from confluent_kafka import Producer

    errors = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal errors
        if err is not None:
            errors += 1

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS, "batch.size": BATCH_SIZE,
                         "compression.type": codec, "acks": "all", "queue.buffering.max.messages": 2_000_000,
                         "partitioner": "murmur2_random"})
    produce, poll = producer.produce, producer.poll
    for i, (key, value) in enumerate(zip(keys, values, strict=True)):
        while True:
            try:
                produce(topic, value, key, on_delivery=on_delivery)
                break
            except BufferError:
                poll(0.01)
        if i % 10000 == 0:
            poll(0)
    producer.flush()
    return errors


def run_aiokafka(bootstrap: str, topic: str, keys: list[bytes], values: list[bytes], codec: str) -> int:
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def main() -> int:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=LINGER_MS, max_batch_size=BATCH_SIZE,
                                    compression_type=None if codec == "none" else codec, acks="all")
        await producer.start()
        try:
            futures = [await producer.send(topic, value, key=key) for key, value in zip(keys, values, strict=True)]
            results = await asyncio.gather(*futures, return_exceptions=True)
            return sum(isinstance(r, BaseException) for r in results)
        finally:
            await producer.stop()

    return asyncio.run(main())


def run_kafka_python(bootstrap: str, topic: str, keys: list[bytes], values: list[bytes], codec: str) -> int:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=LINGER_MS, batch_size=BATCH_SIZE, acks="all",
                             compression_type=None if codec == "none" else codec)
    futures = [producer.send(topic, value, key=key) for key, value in zip(keys, values, strict=True)]
    producer.flush()
    producer.close()
    return sum(1 for f in futures if f.failed())


CLIENTS = {"cykafka": run_cykafka, "confluent": run_confluent, "aiokafka": run_aiokafka,
           "kafka-python": run_kafka_python}
SLOW = {"aiokafka", "kafka-python"}
MODULES = {"cykafka": "cykafka", "confluent": "confluent_kafka", "aiokafka": "aiokafka", "kafka-python": "kafka"}


def worker(args: argparse.Namespace) -> None:
    keys, values = payloads(args.records, args.value_bytes)
    topic = args.topic or f"bench-{args.worker}-{time.monotonic_ns()}"
    importlib.import_module(MODULES[args.worker])  # import time is not send time
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    errors = CLIENTS[args.worker](args.bootstrap, topic, keys, values, args.codec)
    elapsed_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"client": args.worker, "records": args.records, "elapsed_s": elapsed_s, "cpu_s": cpu_s,
                      "errors": errors}))


def measure(client: str, bootstrap: str, records: int, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap,
               "--records", str(records), "--value-bytes", str(args.value_bytes), "--codec", args.codec]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=900)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--slow-records", type=int, default=50_000, help="records for aiokafka and kafka-python")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    parser.add_argument("--clients", default="cykafka,confluent,aiokafka,kafka-python")
    parser.add_argument("--bootstrap", default=None, help="an existing broker (default: start the embedded one)")
    parser.add_argument("--worker", choices=sorted(CLIENTS), help=argparse.SUPPRESS)
    parser.add_argument("--topic", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        if not args.bootstrap:
            parser.error("--worker needs --bootstrap")
        worker(args)
        return
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    from cykafka.broker import EmbeddedBroker

    broker = None if args.bootstrap else EmbeddedBroker().start()
    bootstrap = args.bootstrap or broker.bootstrap_servers  # type: ignore[union-attr]
    try:
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
        for _ in range(args.rounds):
            for client in clients:
                runs[client].append(measure(client, bootstrap, args.slow_records if client in SLOW else args.records,
                                            args))
    finally:
        if broker is not None:
            broker.stop()
    rate = {c: statistics.median(r["records"] / r["elapsed_s"] for r in runs[c]) for c in clients}
    cpu_us = {c: statistics.median(r["cpu_s"] / r["records"] * 1e6 for r in runs[c]) for c in clients}
    base = "confluent" if "confluent" in clients else clients[0]
    print(f"\nend to end, {args.value_bytes}-byte keyed values, codec {args.codec}, linger.ms={LINGER_MS}, "
          f"batch.size={BATCH_SIZE}, acks=all, median of {args.rounds} interleaved rounds\n")
    print(f"| client | records | records/s | vs {base} | client CPU µs/record | CPU vs {base} | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for c in clients:
        print(f"| {c} | {runs[c][0]['records']:,} | {rate[c]:,.0f} | {rate[c] / rate[base]:.2f}x | "
              f"{cpu_us[c]:.2f} | {cpu_us[c] / cpu_us[base]:.2f}x | {sum(r['errors'] for r in runs[c])} |")


if __name__ == "__main__":
    main()
