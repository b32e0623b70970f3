"""Where format("cykafka")'s exactly-once writes and its availableNow stream spend their time: each phase of each
task timed inside Spark's Python workers (and the driver-side commits and offset lookups in Spark's Python planner
processes), on one Apache Kafka node (or --bootstrap), local[2], 200,000 rows by default.

Per exactly-once task: the wait for Spark's first Arrow batch, the task's Producer built, init_transactions
(FindCoordinator + InitProducerId), the streaming replay check (the committed micro-batch id), sending, the flush
(AddPartitionsToTxn rides on it), prepare (send_offsets + prepare_transaction), close; per job: the driver's commit
(EndTxn of every task's transaction). Per stream: micro-batches, the reader's offset calls (initialOffset,
latestOffset, partitions, commit) and each read task's consumer acquired / assigned / first batch.

    python bench/spark_eos_probe.py [--rows N] [--rounds R] [--bootstrap HOST:PORT]

Phases are wall-clock ms: sums over tasks, tasks of one job run two at a time (local[2]).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

REPORT_ENV = "CYKAFKA_PROBE_REPORT"

# -- in Spark's Python processes: timing wrappers, reported as JSON lines -----------------------------------------

class _Phases:
    """This process's phase times, kept on the cykafka.spark module: the writer and reader are unpickled anew for
    every task, the wrappers installed once per process must find the same dict."""

    def _get(self) -> dict[str, float]:
        import cykafka.spark

        found: dict[str, float] = cykafka.spark.__dict__.setdefault("_probe_phases", defaultdict(float))
        return found

    def __getitem__(self, key: str) -> float:
        return self._get()[key]

    def __setitem__(self, key: str, value: float) -> None:
        self._get()[key] = value

    def clear(self) -> None:
        self._get().clear()

    def items(self) -> Any:
        return self._get().items()


_phases = _Phases()


def _report(kind: str, phases: _Phases, **extra: Any) -> None:
    with open(os.environ.get(REPORT_ENV, "/tmp/cykafka-probe.jsonl"), "a") as f:
        f.write(json.dumps({"kind": kind, "pid": os.getpid(), **extra,
                            "ms": {k: round(v, 2) for k, v in phases.items()}}) + "\n")


def _timed(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _phases[name] += (time.perf_counter() - started) * 1000

    call.__cykafka_probe__ = True  # type: ignore[attr-defined]
    return call


def install_probes() -> None:
    """Wraps the phases of cykafka's Spark paths in this process (once)."""
    from cykafka import producer as producer_module
    from cykafka.spark import clients, exactly_once, sink

    if getattr(exactly_once._TaskTransaction.begin, "__cykafka_probe__", False):
        return
    p = producer_module.Producer
    p.__init__ = _timed("producer built", p.__init__)  # type: ignore[method-assign]
    p.init_transactions = _timed("init_transactions", p.init_transactions)  # type: ignore[method-assign]
    p.send_offsets_to_transaction = _timed("send_offsets_to_transaction",  # type: ignore[method-assign]
                                           p.send_offsets_to_transaction)
    p.prepare_transaction = _timed("prepare_transaction (flush)", p.prepare_transaction)  # type: ignore[method-assign]
    p.complete_transaction = _timed("complete_transaction", p.complete_transaction)  # type: ignore[method-assign]
    p.close = _timed("producer close", p.close)  # type: ignore[method-assign]
    t = exactly_once._TaskTransaction
    t.begin = _timed("transaction begin (all)", t.begin)  # type: ignore[method-assign]
    t.committed_batch_id = _timed("committed_batch_id (replay check)",  # type: ignore[method-assign]
                                  t.committed_batch_id)
    t.prepare = _timed("prepare (all)", t.prepare)  # type: ignore[method-assign]
    sink._send_columns = _timed("send_batch", sink._send_columns)
    sink._TaskDeliveries.wait = _timed("flush + acks", sink._TaskDeliveries.wait)  # type: ignore[method-assign]
    sink.complete_transactions = _timed("driver commit (all)", sink.complete_transactions)
    c = clients.CONSUMERS
    c.acquire = _timed("consumer acquire", c.acquire)  # type: ignore[method-assign]
    from cykafka import consumer as consumer_module

    k = consumer_module.Consumer
    k.assign = _timed("consumer assign", k.assign)  # type: ignore[method-assign]
    k.seek = _timed("consumer seek", k.seek)  # type: ignore[method-assign]
    k.poll_batch = _timed("poll_batch", k.poll_batch)  # type: ignore[method-assign]
    k.unassign = _timed("consumer unassign", k.unassign)  # type: ignore[method-assign]
    k.end_offsets = _timed("end_offsets", k.end_offsets)  # type: ignore[method-assign]
    k.beginning_offsets = _timed("beginning_offsets", k.beginning_offsets)  # type: ignore[method-assign]
    k.partitions_for = _timed("partitions_for", k.partitions_for)  # type: ignore[method-assign]
    k.__init__ = _timed("consumer built", k.__init__)  # type: ignore[method-assign]


def _timed_iterator(iterator: Any) -> Any:
    """Spark's batches, the time spent waiting for each counted as 'spark batches'."""
    while True:
        started = time.perf_counter()
        try:
            item = next(iterator)
        except StopIteration:
            _phases["spark batches (wait)"] += (time.perf_counter() - started) * 1000
            return
        _phases["spark batches (wait)"] += (time.perf_counter() - started) * 1000
        yield item


def probe_source() -> Any:
    """format("cykafka_probe"): format("cykafka") with every task, commit and offset call timed."""
    from pyspark.sql import datasource as ds

    from cykafka.spark.datasource import CykafkaDataSource
    from cykafka.spark.sink import CykafkaArrowWriter, StreamArrowWriter
    from cykafka.spark.source import CykafkaStreamReader

    def task(kind: str, fn: Any) -> Any:
        install_probes()
        _phases.clear()
        started = time.perf_counter()
        result = fn()
        _phases["task (all)"] = (time.perf_counter() - started) * 1000
        _report(kind, _phases)
        return result

    class Writer(CykafkaArrowWriter):
        def write(self, iterator: Any) -> Any:
            return task("write task", lambda: CykafkaArrowWriter.write(self, _timed_iterator(iterator)))

        def commit(self, messages: Any) -> None:
            task("driver commit", lambda: CykafkaArrowWriter.commit(self, messages))

    class StreamWriter(StreamArrowWriter):  # type: ignore[misc,valid-type]
        def write(self, iterator: Any) -> Any:
            def run() -> Any:
                rows = StreamArrowWriter.write(self, _timed_iterator(iterator))
                return rows
            return task("stream task", run)

        def commit(self, messages: Any, batchId: int) -> None:
            task("stream commit", lambda: StreamArrowWriter.commit(self, messages, batchId))

    class StreamReader(CykafkaStreamReader):
        def _call(self, name: str, fn: Any) -> Any:
            install_probes()
            _phases.clear()
            started = time.perf_counter()
            result = fn()
            _phases["call"] = (time.perf_counter() - started) * 1000
            _report(f"reader {name}", _phases)
            return result

        def initialOffset(self) -> Any:
            return self._call("initialOffset", super().initialOffset)

        def prepareForTriggerAvailableNow(self) -> None:
            self._call("prepareForTriggerAvailableNow", super().prepareForTriggerAvailableNow)

        def latestOffset(self, start: Any = None, limit: Any = None) -> Any:
            return self._call("latestOffset", lambda: CykafkaStreamReader.latestOffset(self, start, limit))

        def partitions(self, start: Any, end: Any) -> Any:
            return self._call("partitions", lambda: CykafkaStreamReader.partitions(self, start, end))

        def commit(self, end: Any) -> None:
            self._call("commit", lambda: CykafkaStreamReader.commit(self, end))

        def read(self, partition: Any) -> Any:
            install_probes()
            _phases.clear()
            started = time.perf_counter()
            rows = 0
            for batch in CykafkaStreamReader.read(self, partition):
                rows += batch.num_rows
                yield batch
            _phases["read task (all, with Spark's consumption)"] = (time.perf_counter() - started) * 1000
            _report("read task", _phases, rows=rows)

    class Probe(CykafkaDataSource):
        @classmethod
        def name(cls) -> str:
            return "cykafka_probe"

        def writer(self, schema: Any, overwrite: bool) -> ds.DataSourceWriter:
            inner = super().writer(schema, overwrite)
            return Writer(inner.plan)  # type: ignore[attr-defined]

        def streamWriter(self, schema: Any, overwrite: bool) -> ds.DataSourceStreamWriter:
            inner = super().streamWriter(schema, overwrite)
            return StreamWriter(inner.plan)  # type: ignore[attr-defined]

        def streamReader(self, schema: Any) -> ds.DataSourceStreamReader:
            inner = super().streamReader(schema)
            return StreamReader(inner.options)  # type: ignore[attr-defined]

    return Probe


# -- the driver ----------------------------------------------------------------------------------------------------


def summarize(lines: list[dict[str, Any]]) -> str:
    by_kind: dict[str, list[dict[str, float]]] = defaultdict(list)
    for line in lines:
        by_kind[line["kind"]].append(line["ms"])
    out = []
    for kind, entries in by_kind.items():
        keys = sorted({k for e in entries for k in e})
        out.append(f"  {kind}: {len(entries)} calls, pids {sorted({ln['pid'] for ln in lines if ln['kind'] == kind})}")
        for key in keys:
            values = [e.get(key, 0.0) for e in entries]
            out.append(f"    {key:45s} median {statistics.median(values):8.1f} ms  "
                       f"max {max(values):8.1f}  sum {sum(values):8.1f}")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--bootstrap", default="", help="a running broker (default: start one Apache Kafka node)")
    parser.add_argument("--only", default="write,stream", help="write and/or stream")
    args = parser.parse_args()
    sys.path.append(os.path.join(_ROOT, "tests"))
    sys.path.append(HERE)
    from spark_bench import prepare_coordinators

    from cykafka import Admin, NewTopic
    from cykafka.demo import demo_frame
    from cykafka.spark import local_session
    from cykafka.verify import count_back

    broker = None
    bootstrap = args.bootstrap
    if not bootstrap:
        import apache_kafka

        broker = apache_kafka.KafkaCluster(1).start()
        bootstrap = broker.bootstrap_servers
    workdir = tempfile.mkdtemp(prefix="cykafka-eos-probe-")
    report = os.path.join(workdir, "report.jsonl")
    os.environ[REPORT_ENV] = report
    os.chdir(workdir)
    try:
        prepare_coordinators(bootstrap)

        def new_topic(prefix: str) -> str:
            topic = f"{prefix}-{time.monotonic_ns()}"
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                admin.create_topics([NewTopic(topic, args.partitions)])[topic].result()
            return topic

        spark = local_session("local[2]", "cykafka-eos-probe", {"spark.executorEnv." + REPORT_ENV: report})
        try:
            spark.dataSource.register(probe_source())
            frame = demo_frame(spark, args.rows, 100, args.partitions).cache()
            frame.count()

            def write(topic: str, delivery: str) -> float:
                started = time.perf_counter()
                (frame.write.format("cykafka_probe").option("kafka.bootstrap.servers", bootstrap)
                 .option("kafka.compression.type", "lz4").option("kafka.linger.ms", "5").option("topic", topic)
                 .option("cykafka.delivery", delivery).mode("append").save())
                return time.perf_counter() - started

            def stream(source_topic: str, topic: str, delivery: str) -> tuple[float, int]:
                started = time.perf_counter()
                query = (spark.readStream.format("cykafka_probe").option("kafka.bootstrap.servers", bootstrap)
                         .option("subscribe", source_topic).option("startingOffsets", "earliest").load()
                         .select("key", "value").writeStream.format("cykafka_probe")
                         .option("kafka.bootstrap.servers", bootstrap).option("kafka.compression.type", "lz4")
                         .option("kafka.linger.ms", "5").option("topic", topic).option("cykafka.delivery", delivery)
                         .option("checkpointLocation", tempfile.mkdtemp(dir=workdir))
                         .trigger(availableNow=True).start())
                query.awaitTermination()
                return time.perf_counter() - started, len(query.recentProgress)

            source_topic = new_topic("probe-source")
            write(source_topic, "at-least-once")
            for what in args.only.split(","):
                for delivery in ("at-least-once", "exactly-once"):
                    for round_ in range(args.rounds + 1):  # round 0: warm-up, not reported
                        open(report, "w").close()
                        topic = new_topic(f"probe-{what}")
                        if what == "write":
                            seconds, batches = write(topic, delivery), 1
                        else:
                            seconds, batches = stream(source_topic, topic, delivery)
                        with open(report) as f:
                            lines = [json.loads(line) for line in f]
                        counted = count_back(bootstrap, topic).records
                        if round_ == 0:
                            continue
                        print(f"{what} {delivery} round {round_}: {seconds * 1000:.0f} ms, "
                              f"{args.rows / seconds:,.0f} rows/s, {counted} rows counted back, "
                              f"progress entries {batches}, load {os.getloadavg()[0]:.1f}")
                        print(summarize(lines), flush=True)
        finally:
            spark.stop()
    finally:
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
