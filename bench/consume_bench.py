"""Consumer benchmarks, side by side on one broker: cykafka (`poll` and `poll_batch`), Kafka's Java KafkaConsumer
(bench/java/JavaBench.java, its own JVM), confluent-kafka (its defaults and its best setting,
`fetch.queue.backoff.ms=1`), aiokafka and kafka-python, each in its own process (so its CPU time is its own),
interleaved round by round, reading the same topic from its beginning.

    python bench/consume_bench.py [--records N] [--slow-records M] [--rounds R] [--codec lz4|none|...]
                                  [--clients cykafka,cykafka-batch,java,confluent,confluent-default,aiokafka,...]
                                  [--bootstrap HOST:PORT]   # an existing broker (default: an embedded Tansu)
    python -m cProfile -o consume.prof bench/consume_bench.py --worker cykafka --bootstrap HOST:PORT --topic T ...

The topic (--partitions partitions, keyed 10-byte keys, --value-bytes values, --codec) is written once per run by
cykafka's producer. A worker (--worker CLIENT) assigns every partition, reads from the earliest offset until it has
--records records, touching every value (its length, summed; poll_batch: Arrow's binary_length, summed), and prints
records, elapsed_s, cpu_s (user+sys of the process), peak_rss_growth_mib and the settings it used. Every client reads
with the same guarantee: CRCs checked (Java's check.crcs default; librdkafka's is off, so it is set on), no group, no
commits, and up to CALL_RECORDS records per call (`consume(num_messages=)`, `getmany(max_records=)`,
`poll(max_records=)`, `max.poll.records`). The clock starts when the worker has its assignment, before its first
fetch. bench/run.py runs this file with --json and puts its tables in bench/results/results.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

# measure the installed package, not the source tree (see e2e_bench.py)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

CALL_RECORDS = 10_000
CLIENTS = ("cykafka", "cykafka-batch", "java", "confluent", "confluent-default", "aiokafka", "kafka-python")
SLOW = frozenset({"kafka-python"})  # read --slow-records only
BASE = "confluent"  # ratios against confluent-kafka with its best setting
# The one record of each client's settings, on top of bootstrap and "read from the earliest offset".
SETTINGS: dict[str, dict[str, Any]] = {
    "cykafka": {"check.crcs": True, "max.poll.records": CALL_RECORDS, "enable.auto.commit": False},
    "cykafka-batch": {"check.crcs": True, "enable.auto.commit": False},
    "confluent": {"check.crcs": True, "fetch.queue.backoff.ms": 1, "enable.auto.commit": False},
    "confluent-default": {"check.crcs": True, "enable.auto.commit": False},
    "aiokafka": {"check_crcs": True, "enable_auto_commit": False},
    "kafka-python": {"check_crcs": True, "enable_auto_commit": False},
    # KafkaConsumer: assign, seekToBeginning, max.poll.records (bench/java/JavaBench.java), its defaults otherwise
    "java": {"check.crcs": True, "enable.auto.commit": False, "max.poll.records": CALL_RECORDS},
}


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Clock:
    """Wall and CPU time of this process from start() to stop() (or to result()), and its RSS growth. A consumer
    stops it once it has read the last record, before it closes: a close waits for the Fetch in flight (up to
    fetch.max.wait.ms on Apache Kafka, as Java's close does), 0.5 s that counted put into a 0.05 s read."""

    stopped: tuple[float, Any] | None = None

    def start(self) -> None:
        self.stopped = None
        self.rss_before = rss_bytes()
        self.peak_rss = self.rss_before
        self.rusage = resource.getrusage(resource.RUSAGE_SELF)
        self.started = time.perf_counter()

    def stop(self) -> None:
        self.stopped = (time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF))

    def sample_rss(self) -> None:
        self.peak_rss = max(self.peak_rss, rss_bytes())

    def result(self, records: int) -> dict[str, Any]:
        ended, now = self.stopped or (time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF))
        elapsed_s = ended - self.started
        cpu_s = (now.ru_utime - self.rusage.ru_utime) + (now.ru_stime - self.rusage.ru_stime)
        return {"records": records, "elapsed_s": elapsed_s, "cpu_s": cpu_s,
                "peak_rss_growth_mib": (self.peak_rss - self.rss_before) / 2**20}


# -- clients: each reads `records` records of `topic` (partitions 0..n-1) from the beginning -------------------------


def run_cykafka(bootstrap: str, topic: str, partitions: int, records: int, clock: Clock, batch: bool) -> int:
    from cykafka import Consumer, TopicPartition

    config = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
              **SETTINGS["cykafka-batch" if batch else "cykafka"]}
    if batch:  # imported before the clock starts (0.3-0.5 s of CPU, as any Arrow user pays once at startup)
        import pyarrow.compute as pc
    with Consumer(config) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        clock.start()
        seen = touched = 0
        if batch:
            while seen < records:
                got = consumer.poll_batch(1.0, max_records=CALL_RECORDS)
                if got.num_rows:
                    touched += pc.sum(pc.binary_length(got.column("value"))).as_py() or 0
                    seen += got.num_rows
                    clock.sample_rss()
        else:
            while seen < records:
                got = consumer.poll(1.0)
                for record in got:
                    touched += len(record.value or b"")
                seen += len(got)
                if got:
                    clock.sample_rss()
        clock.stop()
        return seen


def run_confluent(bootstrap: str, topic: str, partitions: int, records: int, clock: Clock,
                  settings: dict[str, Any]) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", **settings})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        clock.start()
        seen = touched = 0
        while seen < records:
            got = consumer.consume(num_messages=CALL_RECORDS, timeout=1.0)
            for message in got:
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
                touched += len(message.value() or b"")
            seen += len(got)
            if got:
                clock.sample_rss()
        clock.stop()
        return seen
    finally:
        consumer.close()


def run_aiokafka(bootstrap: str, topic: str, partitions: int, records: int, clock: Clock,
                 read: Callable[..., Awaitable[int]] | None = None) -> int:
    """read: read_all, or a reader with its signature (bench/async_bench.py's, which also probes the loop)."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> int:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                    **SETTINGS["aiokafka"])
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            return await (read or read_all)(lambda: consumer.getmany(timeout_ms=1000, max_records=CALL_RECORDS),
                                            records, clock)
        finally:
            await consumer.stop()

    return asyncio.run(main())


async def read_all(getmany: Callable[[], Awaitable[dict[Any, list[Any]]]], records: int, clock: Clock) -> int:
    """An asyncio consumer's loop (aiokafka's getmany shape): `records` records, every value touched."""
    clock.start()
    seen = 0
    while seen < records:
        got = await getmany()
        seen += touch(got)
        if got:
            clock.sample_rss()
    clock.stop()
    return seen


def touch(by_partition: dict[Any, list[Any]]) -> int:
    """The records of a getmany / poll answer ({partition: [records]}), each value touched (its length read)."""
    seen = touched = 0
    for messages in by_partition.values():
        for message in messages:
            touched += len(message.value or b"")
        seen += len(messages)
    return seen


def run_kafka_python(bootstrap: str, topic: str, partitions: int, records: int, clock: Clock) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **SETTINGS["kafka-python"])
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        clock.start()
        seen = 0
        while seen < records:
            got = consumer.poll(timeout_ms=1000, max_records=CALL_RECORDS)
            seen += touch(got)
            if got:
                clock.sample_rss()
        clock.stop()
        return seen
    finally:
        consumer.close()


RUNNERS: dict[str, Callable[[str, str, int, int, Clock], int]] = {
    "cykafka": lambda b, t, p, n, c: run_cykafka(b, t, p, n, c, batch=False),
    "cykafka-batch": lambda b, t, p, n, c: run_cykafka(b, t, p, n, c, batch=True),
    "confluent": lambda b, t, p, n, c: run_confluent(b, t, p, n, c, SETTINGS["confluent"]),
    "confluent-default": lambda b, t, p, n, c: run_confluent(b, t, p, n, c, SETTINGS["confluent-default"]),
    "aiokafka": run_aiokafka,
    "kafka-python": run_kafka_python,
}


def worker(args: argparse.Namespace) -> None:
    clock = Clock()
    seen = RUNNERS[args.worker](args.bootstrap, args.topic, args.partitions, args.records, clock)
    print(json.dumps({"client": args.worker, **clock.result(seen), "settings": SETTINGS[args.worker]}))


# -- driver --------------------------------------------------------------------------------------------------------


def fill(bootstrap: str, topic: str, partitions: int, records: int, value_bytes: int, codec: str) -> None:
    """Writes the topic once: 10-byte keys spread over the partitions, value_bytes values, the codec."""
    from cykafka import Admin, NewTopic, Producer

    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, partitions)])[topic].result()
    keys = [b"key-%06d" % i for i in range(1024)]
    values = [(b"%08d" % i + b"v" * value_bytes)[:value_bytes] for i in range(1024)]
    with Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5,
                   "batch.size": 65536}) as producer:
        for start in range(0, records, 10_000):
            count = min(10_000, records - start)
            producer.send_batch(topic, [values[i % 1024] for i in range(start, start + count)],
                                [keys[i % 1024] for i in range(start, start + count)])
        producer.flush()


def measure(client: str, bootstrap: str, topic: str, partitions: int, records: int,
            java_version: str | None = None) -> dict[str, Any]:
    if client == "java":
        import java_peer

        command = java_peer.consumer_command(bootstrap, topic, partitions, records,
                                             version=java_version or java_peer.VERSION)
        result = run_worker(client, command, python=False)
        result["settings"] = result.pop("config", SETTINGS["java"])
        return result
    return run_worker(client, [os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap, "--topic",
                               topic, "--partitions", str(partitions), "--records", str(records)])


def run_worker(client: str, arguments: list[str], timeout_s: int = 900, python: bool = True) -> dict[str, Any]:
    """A worker process (this Python and these arguments, or the command itself): the JSON of its last stdout line,
    or {"client", "error"} when it failed."""
    done = subprocess.run([sys.executable, *arguments] if python else arguments, capture_output=True, text=True,
                          timeout=timeout_s, check=False)
    if done.returncode != 0:
        return {"client": client, "error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    import contextlib

    from cykafka.broker import EmbeddedBroker

    clients = [c for c in args.clients.split(",") if c]
    runs: dict[str, list[dict[str, Any]]] = {client: [] for client in clients}
    # an existing broker (bench/run.py --broker kafka: one node for the run, a fresh topic here), else Tansu
    with contextlib.nullcontext(args.bootstrap) if args.bootstrap else EmbeddedBroker() as broker:
        bootstrap = broker if isinstance(broker, str) else broker.bootstrap_servers
        topic = f"consume-{args.codec}-{time.monotonic_ns()}"
        fill(bootstrap, topic, args.partitions, args.records, args.value_bytes, args.codec)
        for _ in range(args.rounds):
            for client in clients:
                count = args.slow_records if client in SLOW else args.records
                runs[client].append(measure(client, bootstrap, topic, args.partitions, count,
                                            getattr(args, "java_version", None)))
        if args.bootstrap:
            from cykafka import Admin

            with Admin({"bootstrap.servers": bootstrap}) as admin:
                admin.delete_topics([topic])[topic].result()
    return {"codec": args.codec, "records": args.records, "value_bytes": args.value_bytes,
            "partitions": args.partitions, "runs": runs}


def rates(result: dict[str, Any], client: str) -> tuple[float, float, float]:
    """Median records/s, CPU µs per record and peak RSS growth (MiB) of a client's runs (nan when none worked)."""
    good = [r for r in result["runs"][client] if "error" not in r and r["records"]]
    if not good:
        return float("nan"), float("nan"), float("nan")
    return (statistics.median(r["records"] / r["elapsed_s"] for r in good),
            statistics.median(r["cpu_s"] / r["records"] * 1e6 for r in good),
            statistics.median(r["peak_rss_growth_mib"] for r in good))


def table(result: dict[str, Any]) -> str:
    nan = (float("nan"),) * 3
    base_rate, base_cpu, _ = rates(result, BASE) if BASE in result["runs"] else nan
    java_rate, java_cpu, _ = rates(result, "java") if "java" in result["runs"] else nan
    lines = [f"### Consume, {result['value_bytes']} B values, {result['codec']}, {result['partitions']} partitions, "
             f"{result['records']:,} records", "",
             "| client | records/s | vs confluent (tuned) | vs Java | CPU µs/record | CPU vs confluent | CPU vs Java | "
             "peak RSS growth MiB |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for client, runs in result["runs"].items():
        rate, cpu, rss = rates(result, client)
        errors = "; ".join(r["error"] for r in runs if "error" in r)
        lines.append(f"| {client} | {rate:,.0f} | {rate / base_rate:.2f}x | {rate / java_rate:.2f}x | {cpu:.2f} | "
                     f"{cpu / base_cpu:.2f}x | {cpu / java_cpu:.2f}x | {rss:.0f} |"
                     + (f" errors: {errors}" if errors else ""))
    return "\n".join(lines) + "\n"


def worker_parser(doc: str, clients: tuple[str, ...]) -> argparse.ArgumentParser:
    """A bench script's arguments: the doc's first paragraph as description, and its workers' --worker CLIENT,
    --bootstrap and --topic."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=clients, help="run one client (internal)")
    parser.add_argument("--bootstrap", default="", help="an existing broker (e.g. one Apache Kafka node; fresh topics "
                        "per run) instead of an embedded Tansu")
    parser.add_argument("--topic", default="")
    return parser


def bench_parser(doc: str, clients: tuple[str, ...], records: int, slow_help: str) -> argparse.ArgumentParser:
    """The command line of a bench script run by bench/run.py (this one and async_bench.py)."""
    parser = worker_parser(doc, clients)
    parser.add_argument("--records", type=int, default=records)
    parser.add_argument("--slow-records", type=int, default=records // 10, help=slow_help)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--codec", default="lz4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(clients))
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON (for bench/run.py)")
    return parser


def dispatch(args: argparse.Namespace, worker: Callable[[argparse.Namespace], None],
             run: Callable[[argparse.Namespace], dict[str, Any]], table: Callable[[dict[str, Any]], str]) -> int:
    """A bench script's main once parsed: one worker (--worker), or every run and its table (--json: raw)."""
    if args.worker:
        worker(args)
        return 0
    result = run(args)
    print(json.dumps(result) if args.json else table(result))
    return 0


def main() -> int:
    parser = bench_parser(__doc__, CLIENTS, 2_000_000, "records for kafka-python")
    parser.add_argument("--java-version", default=None, help="the Java client's kafka-clients version (default: "
                        "bench/java_peer.py VERSION, the Apache Kafka broker's)")
    return dispatch(parser.parse_args(), worker, run, table)


if __name__ == "__main__":
    sys.exit(main())
