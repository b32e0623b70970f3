"""Spark ↔ Kafka side by side on one embedded broker, interleaved rounds, medians.

Writes, one DataFrame: format("cykafka") (at-least-once, and exactly-once: a transaction per task, committed by the
driver) versus the usual hand-written sink, `foreachPartition` with a confluent-kafka Producer per partition; every
topic counted back by an independent consumer.
Reads, one topic: spark.read.format("cykafka") (Arrow batches from Consumer.poll_batch) versus the Python Data Source
a user would write with confluent-kafka (one task per Kafka partition, a Consumer assigned to it, rows yielded as
tuples); the same query over both (every value's length summed, so every row and value is read), and the row counts
and sums must agree. A third reader is the ceiling of Spark's Python read path: a Data Source yielding ready-made
Arrow batches of the same shape, no Kafka at all; cykafka's share of the read time is what separates it from that.

    python bench/spark_bench.py [--rows N] [--rounds R] [--partitions P] [--compression lz4]

--jvm: Spark's own JVM connector, format("kafka") (spark-sql-kafka-0-10, at-least-once), beside format("cykafka")
(at-least-once and exactly-once), on the same broker, the same DataFrame (demo_frame: a key, a 100-byte value, 2
headers), the same topic layout (--partitions partitions, created first) and compression: a batch write, a batch read
(every value's length summed; and the no-Kafka ceiling of Spark's Python read path beside it), and a stream read ->
write (readStream from the beginning -> writeStream, trigger availableNow), each on local[2] and on a standalone
cluster (a master and 2 one-core workers, tests/spark_cluster.py), on Tansu and/or Apache Kafka (--broker).
Every written topic is counted back by an independent consumer (duplicates told by the rows' seq header); every
read's rows and bytes are checked. The connector must match the running Spark exactly and Maven Central has none for
the project's pyspark (4.3.0), so this runs on the pinned pyspark of bench/spark_jvm.py (SPARK_VERSION), in a child
process per (broker, master); the same cykafka build.

    python bench/spark_bench.py --jvm [--broker tansu|kafka|both] [--masters local,cluster] [--rows N] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

from cykafka.broker import EmbeddedBroker  # noqa: E402
from cykafka.demo import demo_frame  # noqa: E402
from cykafka.verify import count_back  # noqa: E402


def kafka_source_columns() -> Any:
    """Spark's Kafka source columns (no headers), as the bench's own sources declare them: format("cykafka")'s own
    schema, spelled once in cykafka/arrow_schema.py."""
    from cykafka.spark import source_schema

    return source_schema(False)


def confluent_partition_writer(bootstrap: str, topic: str, compression: str) -> Any:
    def write(rows: Iterable[Any]) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": compression})
        errors: list[Any] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        for row in rows:
            headers = [(h["key"], h["value"]) for h in row["headers"]] if row["headers"] else None
            while True:
                try:
                    producer.produce(topic, row["value"], row["key"], headers=headers, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        producer.flush()
        if errors:
            raise RuntimeError(f"confluent-kafka delivery failed: {errors[0]}")

    return write


def confluent_source() -> Any:
    """The Kafka reader a user writes with confluent-kafka and pyspark's Data Source API: partitions from the
    watermarks, each task a Consumer assigned to its partition, rows as tuples (Spark's Kafka source columns)."""
    import datetime

    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Range(InputPartition):  # type: ignore[misc]
        def __init__(self, partition: int, low: int, high: int) -> None:
            self.partition, self.low, self.high = partition, low, high

    class Reader(DataSourceReader):  # type: ignore[misc]
        def __init__(self, options: dict[str, str]) -> None:
            self.bootstrap, self.topic = options["kafka.bootstrap.servers"], options["subscribe"]

        def partitions(self) -> list[Range]:
            from confluent_kafka import Consumer, TopicPartition

            consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "bench"})
            try:  # the high watermark from a Fetch (cached): Tansu answers ListOffsets "latest" wrongly
                count = len(consumer.list_topics(self.topic, timeout=30).topics[self.topic].partitions)
                ranges = []
                for p in range(count):
                    low, _ = consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=30)
                    consumer.assign([TopicPartition(self.topic, p, low)])
                    consumer.consume(num_messages=1, timeout=10)
                    ranges.append(Range(p, low, consumer.get_watermark_offsets(TopicPartition(self.topic, p),
                                                                               cached=True)[1]))
                return ranges
            finally:
                consumer.close()

        def read(self, partition: Range) -> Any:
            from confluent_kafka import Consumer, TopicPartition

            consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "bench", "check.crcs": True,
                                 "enable.auto.commit": False, "fetch.queue.backoff.ms": 1})
            consumer.assign([TopicPartition(self.topic, partition.partition, partition.low)])
            utc = datetime.UTC
            try:
                position = partition.low
                while position < partition.high:
                    for m in consumer.consume(num_messages=10_000, timeout=1.0):
                        if m.error() is not None:
                            raise RuntimeError(str(m.error()))
                        if m.offset() >= partition.high:
                            continue
                        kind, ms = m.timestamp()
                        position = m.offset() + 1
                        yield (m.key(), m.value(), m.topic(), m.partition(), m.offset(),
                               datetime.datetime.fromtimestamp(ms / 1000, utc), kind - 1)
            finally:
                consumer.close()

    class ConfluentKafkaSource(DataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "confluent_kafka_bench"

        def schema(self) -> Any:
            return kafka_source_columns()

        def reader(self, schema: Any) -> Reader:
            return Reader(self.options)

    return ConfluentKafkaSource


def arrow_ceiling_source(rows: int, partitions: int, value_bytes: int) -> Any:
    """Spark's Python read path with nothing to read: each task yields one prebuilt Arrow batch of 10,000 rows (the
    columns and types format("cykafka") yields, value_bytes values) until its share of rows is out."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Share(InputPartition):  # type: ignore[misc]
        def __init__(self, partition: int, count: int) -> None:
            self.partition, self.count = partition, count

    class Reader(DataSourceReader):  # type: ignore[misc]
        def partitions(self) -> list[Share]:
            return [Share(p, rows // partitions + (p < rows % partitions)) for p in range(partitions)]

        def read(self, partition: Share) -> Any:
            import pyarrow as pa

            from cykafka.arrow_schema import kafka_source_schema

            def batch(count: int) -> Any:
                return pa.RecordBatch.from_pydict({
                    "key": [b"key-%06d" % i for i in range(count)], "value": [b"v" * value_bytes] * count,
                    "topic": ["ceiling"] * count, "partition": [partition.partition] * count, "offset": range(count),
                    "timestamp": [1_700_000_000_000_000] * count, "timestampType": [0] * count},
                    schema=kafka_source_schema(False))

            full, left = batch(10_000), partition.count
            while left >= 10_000:
                yield full
                left -= 10_000
            if left:
                yield batch(left)

    class ArrowCeiling(DataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "arrow_ceiling_bench"

        def schema(self) -> Any:
            return kafka_source_columns()

        def reader(self, schema: Any) -> Reader:
            return Reader()

    return ArrowCeiling


def arrow_sink_ceiling() -> Any:
    """Spark's Python write path with nothing to write: a Data Source whose writers count each task's Arrow batches
    (no Kafka, no encoding) and whose commit (in a Python worker of the driver) appends the count to the file of its
    `count_file` option — what any Python data source's writes cost on this Spark before it does anything (batch:
    DataSourceArrowWriter; streaming: DataSourceStreamArrowWriter, pyspark >= 4.1). The ceiling of
    format("cykafka")'s writes, as arrow_ceiling_source is of its reads."""
    import pyspark.sql.datasource as ds

    class Counted(ds.WriterCommitMessage):  # type: ignore[misc]
        def __init__(self, rows: int) -> None:
            self.rows = rows

    def counted(iterator: Any) -> Counted:
        return Counted(sum(batch.num_rows for batch in iterator))

    def commit(count_file: str, messages: list[Any]) -> None:
        with open(count_file, "a") as out:
            out.write(f"{sum(m.rows for m in messages if isinstance(m, Counted))}\n")

    class Writer(ds.DataSourceArrowWriter):  # type: ignore[misc]
        def __init__(self, count_file: str) -> None:
            self.count_file = count_file

        def write(self, iterator: Any) -> Counted:
            return counted(iterator)

        def commit(self, messages: list[Any]) -> None:
            commit(self.count_file, messages)

    class ArrowSinkCeiling(ds.DataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "arrow_sink_ceiling_bench"

        def writer(self, schema: Any, overwrite: bool) -> Writer:
            return Writer(self.options["count_file"])

    if hasattr(ds, "DataSourceStreamArrowWriter"):
        class StreamWriter(ds.DataSourceStreamArrowWriter):  # type: ignore[misc,name-defined,unused-ignore]
            def __init__(self, count_file: str) -> None:
                self.count_file = count_file

            def write(self, iterator: Any) -> Counted:
                return counted(iterator)

            def commit(self, messages: list[Any], batch_id: int) -> None:
                commit(self.count_file, messages)

        ArrowSinkCeiling.streamWriter = lambda self, schema, overwrite: StreamWriter(self.options["count_file"])
    return ArrowSinkCeiling


def committed_rows(count_file: str) -> int:
    """The rows arrow_sink_ceiling's commits counted so far."""
    try:
        with open(count_file) as lines:
            return sum(int(line) for line in lines)
    except FileNotFoundError:
        return 0


# -- --jvm: Spark's own Kafka connector beside format("cykafka") ----------------------------------------------------

SINK_CEILING = "ceiling: Spark's Python write path alone (Arrow to a no-op writer, no Kafka)"
JVM_WRITERS = {"format(\"kafka\")": ("kafka", {}),
               "format(\"cykafka\")": ("cykafka", {}),
               "format(\"cykafka\") exactly-once": ("cykafka", {"cykafka.delivery": "exactly-once"}),
               SINK_CEILING: ("arrow_sink_ceiling_bench", {"count_file": ""})}  # jvm_child sets its file
JVM_READERS = {"format(\"kafka\")": "kafka", "format(\"cykafka\")": "cykafka",
               "ceiling: Spark's Python read path alone (prebuilt Arrow, no Kafka)": "arrow_ceiling_bench"}
JVM_BASE = "format(\"kafka\")"
STREAM_PARTS = [("kafka", "kafka"), ("cykafka", "cykafka"), ("cykafka", "kafka"), ("kafka", "cykafka"),
                ("kafka", "noop"), ("cykafka", "noop")]  # --stream-parts: (readStream source, writeStream sink)


def jvm_child(args: argparse.Namespace) -> None:
    """One (broker, master): every writer, reader and stream, interleaved rounds; one JSON line of seconds and
    counts. Runs under the pinned pyspark (spark_jvm.pinned_python)."""
    import json

    import pyspark
    from pyspark.sql import functions as sf

    from cykafka import Admin, NewTopic
    from cykafka.spark import local_session

    sys.path.append(os.path.join(os.path.dirname(HERE), "tests"))
    workdir = tempfile.mkdtemp(prefix="cykafka-spark-jvm-")
    os.chdir(workdir)  # Spark's workers start in our cwd: not the source tree
    cluster = None
    master = "local[2]"
    if args.master == "cluster":
        from pathlib import Path

        from spark_cluster import StandaloneCluster

        cluster = StandaloneCluster(Path(workdir)).start()
        master = cluster.url
    bootstrap = args.bootstrap
    counter = iter(range(1_000_000))

    def new_topic(prefix: str) -> str:
        topic = f"{prefix}-{next(counter)}-{time.monotonic_ns()}"
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic(topic, args.partitions)])[topic].result()
        return topic

    try:
        spark = local_session(master, "cykafka-spark-jvm-bench", {"spark.jars": args.jars,
                                                                 "spark.executor.memory": "512m"})
        try:
            spark.dataSource.register(arrow_ceiling_source(args.rows, args.partitions, 100))
            spark.dataSource.register(arrow_sink_ceiling())
            count_file = os.path.join(workdir, "ceiling-rows")
            frame = demo_frame(spark, args.rows, 100, args.partitions).cache()
            frame.count()  # generated once, outside the timings

            def write(name: str, topic: str) -> None:
                source, options = JVM_WRITERS[name]
                writer = (frame.write.format(source).option("kafka.bootstrap.servers", bootstrap)
                          .option("kafka.compression.type", args.compression).option("kafka.linger.ms", "5")
                          .option("topic", topic))
                for key, value in options.items():
                    writer = writer.option(key, value or count_file if key == "count_file" else value)
                writer.mode("append").save()

            def read(source: str, topic: str) -> tuple[int, int]:
                loaded = (spark.read.format(source).option("kafka.bootstrap.servers", bootstrap)
                          .option("subscribe", topic).load())
                row = loaded.agg(sf.count("*").alias("rows"), sf.sum(sf.length("value")).alias("bytes")).first()
                return int(row["rows"]), int(row["bytes"] or 0)

            def stream(name: str, source_topic: str, topic: str) -> None:
                sink, options = JVM_WRITERS[name]  # the ceiling's stream: the JVM's Kafka source into it
                stream_with("kafka" if name == SINK_CEILING else sink, sink, options, source_topic, topic)

            def stream_with(source: str, sink: str, options: dict[str, str], source_topic: str, topic: str) -> None:
                query = (spark.readStream.format(source).option("kafka.bootstrap.servers", bootstrap)
                         .option("subscribe", source_topic).option("startingOffsets", "earliest").load()
                         .select("key", "value").writeStream.format(sink)
                         .option("kafka.bootstrap.servers", bootstrap)
                         .option("kafka.compression.type", args.compression).option("kafka.linger.ms", "5")
                         .option("topic", topic).option("checkpointLocation", tempfile.mkdtemp(dir=workdir)))
                for key, value in options.items():
                    query = query.option(key, value or count_file if key == "count_file" else value)
                query.trigger(availableNow=True).start().awaitTermination()

            for name in JVM_WRITERS:  # warm up: the Python workers, the JVM's classes, each path once
                write(name, new_topic("warmup"))
            result: dict[str, Any] = {"pyspark": pyspark.__version__, "master": args.master, "rows": args.rows,
                                      "write_s": {n: [] for n in JVM_WRITERS}, "write_topics": {n: [] for n in
                                                                                                JVM_WRITERS},
                                      "read_s": {n: [] for n in JVM_READERS}, "read_answers": {n: [] for n in
                                                                                               JVM_READERS},
                                      "stream_s": {n: [] for n in JVM_WRITERS},
                                      "stream_topics": {n: [] for n in JVM_WRITERS}}
            ceiling_rows: dict[str, list[int]] = {"write": [], "stream": []}  # rows the ceiling's writers counted
            for round_ in range(args.rounds):
                names = list(JVM_WRITERS)
                names = names[round_ % len(names):] + names[:round_ % len(names)]  # no writer always first
                for name in names:
                    topic = new_topic("spark-jvm-write")
                    committed = committed_rows(count_file)
                    started = time.perf_counter()
                    write(name, topic)
                    result["write_s"][name].append(time.perf_counter() - started)
                    result["write_topics"][name].append(topic)
                    if name == SINK_CEILING:
                        ceiling_rows["write"].append(committed_rows(count_file) - committed)
            read_topic = result["write_topics"][JVM_BASE][0]
            for source in JVM_READERS.values():  # warm up
                read(source, read_topic)
            for _ in range(args.rounds):
                for name, source in JVM_READERS.items():
                    started = time.perf_counter()
                    answer = read(source, read_topic if source != "arrow_ceiling_bench" else "ceiling")
                    result["read_s"][name].append(time.perf_counter() - started)
                    result["read_answers"][name].append(answer)
            for name in JVM_WRITERS:  # warm up: a stream's first query starts its source's Python planner
                stream(name, read_topic, new_topic("warmup-stream"))
            for round_ in range(args.rounds):
                names = list(JVM_WRITERS)
                for name in names[round_ % len(names):] + names[:round_ % len(names)]:
                    topic = new_topic("spark-jvm-stream")
                    committed = committed_rows(count_file)
                    started = time.perf_counter()
                    stream(name, read_topic, topic)
                    result["stream_s"][name].append(time.perf_counter() - started)
                    result["stream_topics"][name].append(topic)
                    if name == SINK_CEILING:
                        ceiling_rows["stream"].append(committed_rows(count_file) - committed)
            if args.stream_parts:  # where a stream's time goes: each source into each sink, and into "noop"
                result["parts_s"] = {f"{a} -> {b}": [] for a, b in STREAM_PARTS}
                for source, sink in STREAM_PARTS:  # warm up
                    stream_with(source, sink, {}, read_topic, new_topic("warmup-parts"))
                for _ in range(args.rounds):
                    for source, sink in STREAM_PARTS:
                        started = time.perf_counter()
                        stream_with(source, sink, {}, read_topic, new_topic("spark-jvm-parts"))
                        result["parts_s"][f"{source} -> {sink}"].append(time.perf_counter() - started)
        finally:
            spark.stop()
    finally:
        if cluster is not None:
            cluster.stop()
    counts = {t: count_back(bootstrap, t, unique_header="seq") for n, ts in result["write_topics"].items()
              if n != SINK_CEILING for t in ts}
    result["write_counted"] = {n: [[counts[t].records, counts[t].unique] for t in ts]
                               for n, ts in result["write_topics"].items() if n != SINK_CEILING}
    result["stream_counted"] = {n: [count_back(bootstrap, t).records for t in ts]
                                for n, ts in result["stream_topics"].items() if n != SINK_CEILING}
    # the ceiling wrote no topic: its rows as its writers counted them, per write and per stream
    result["write_counted"][SINK_CEILING] = [[rows, rows] for rows in ceiling_rows["write"]]
    result["stream_counted"][SINK_CEILING] = ceiling_rows["stream"]
    print(json.dumps(result))


def jvm_parent(args: argparse.Namespace) -> int:
    """Fetches the connector and the pinned pyspark, starts each broker, runs a child per (broker, master), prints
    the tables; exit 1 when a row was lost or duplicated or a read disagreed."""
    import json
    import subprocess

    import java_peer
    import spark_jvm

    from cykafka.broker import EmbeddedBroker

    jars = ",".join(str(jar) for jar in spark_jvm.connector_jars())
    python = spark_jvm.pinned_python()
    masters = [m.strip() for m in args.masters.split(",") if m.strip()]
    results: list[dict[str, Any]] = []
    for broker_name in (["tansu", "kafka"] if args.broker == "both" else [args.broker]):
        broker: Any = (EmbeddedBroker() if broker_name == "tansu" else java_peer.apache_kafka.KafkaCluster(1)).start()
        try:
            prepare_coordinators(broker.bootstrap_servers)
            for master in masters:
                print(f"spark --jvm: {broker_name}, {master}", file=sys.stderr, flush=True)
                load_before = os.getloadavg()
                done = subprocess.run([python, os.path.abspath(__file__), "--jvm-child", "--bootstrap",
                                       broker.bootstrap_servers, "--master", master, "--jars", jars, "--rows",
                                       str(args.rows), "--rounds", str(args.rounds), "--partitions",
                                       str(args.partitions), "--compression", args.compression]
                                      + (["--stream-parts"] if args.stream_parts else []),
                                      capture_output=True, text=True, timeout=3600, check=False, cwd="/")
                if done.returncode != 0:
                    raise RuntimeError(f"the Spark child ({broker_name}, {master}) failed:\n{done.stderr[-5000:]}")
                result = json.loads(done.stdout.strip().splitlines()[-1])
                result.update(broker=broker_name, load_before=load_before, load_after=os.getloadavg())
                results.append(result)
        finally:
            broker.stop()
    print(jvm_tables(results, args))
    if args.json:
        print(json.dumps(results))
    return 0 if all(jvm_verified(r) for r in results) else 1


def prepare_coordinators(bootstrap: str) -> None:
    """A group offset commit and a transaction before any clock, so a new Apache Kafka has created and loaded
    __consumer_offsets and __transaction_state (the first exactly-once stream otherwise meets the offsets topic being
    created: NOT_COORDINATOR from the OffsetFetch that looks up its last batch, which Admin does not retry)."""
    from cykafka import Consumer, Producer, TopicPartition

    topic = f"prepare-{time.monotonic_ns()}"
    with Producer({"bootstrap.servers": bootstrap, "transactional.id": topic}) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"prepare")
        producer.commit_transaction()
    with Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.commit({TopicPartition(topic, 0): 0})


def jvm_verified(result: dict[str, Any]) -> bool:
    """Every written topic holds every row once (records == distinct seq == rows), every stream wrote every row,
    every read saw every row. Except format("kafka") reading from Tansu, which answers ListOffsets "latest" short
    of the end (the connector misses the last batch of each partition; cykafka takes the end from a Fetch's high
    watermark): its reads and streams are shown, not failed."""
    rows = result["rows"]
    quirk = {JVM_BASE} if result["broker"] == "tansu" else set()
    writes = all(c == [rows, rows] for counts in result["write_counted"].values() for c in counts)
    streams = all(c == rows for name, counts in result["stream_counted"].items() if name not in quirk for c in counts)
    reads = all(a[0] == rows for name, answers in result["read_answers"].items() if name not in quirk for a in answers)
    return writes and streams and reads


def jvm_tables(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [f"\nSpark {results[0]['pyspark'] if results else '?'} (pinned: the newest with spark-sql-kafka on Maven "
             f"Central), {args.rows:,} rows x {args.partitions} partitions (key, 100-byte value, 2 headers), "
             f"compression {args.compression}, linger.ms 5, median of {args.rounds} interleaved rounds\n",
             "| broker | master | what | path | rows/s | vs format(\"kafka\") | rows counted back per round "
             "(records, distinct) |", "|---|---|---|---|---:|---:|---|"]
    for r in results:
        where = f"| {r['broker']} | {r['master']} "
        for what, seconds, counted in (("batch write", r["write_s"], r["write_counted"]),
                                       ("batch read", r["read_s"], r["read_answers"]),
                                       ("stream read -> write", r["stream_s"], r["stream_counted"])):
            rate = {name: statistics.median(r["rows"] / s for s in secs) for name, secs in seconds.items()}
            for name in seconds:
                lines.append(f"{where}| {what} | {name} | {rate[name]:,.0f} | {rate[name] / rate[JVM_BASE]:.2f}x | "
                             f"{counted[name]} |")
        eos = {what: statistics.median(r["rows"] / s for s in r[key]["format(\"cykafka\") exactly-once"])
               / statistics.median(r["rows"] / s for s in r[key]["format(\"cykafka\")"])
               for what, key in (("batch write", "write_s"), ("stream", "stream_s"))}
        for combo, secs in r.get("parts_s", {}).items():
            lines.append(f"{where}| stream part | {combo} | {statistics.median(r['rows'] / x for x in secs):,.0f} | "
                         f"| |")
        lines.append(f"{where}| exactly-once / at-least-once | format(\"cykafka\") | | "
                     f"{eos['batch write']:.2f}x (write), {eos['stream']:.2f}x (stream) | load "
                     f"{r['load_before'][0]:.1f} -> {r['load_after'][0]:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--compression", default="lz4")
    parser.add_argument("--jvm", action="store_true", help="Spark's own JVM connector beside format(\"cykafka\")")
    parser.add_argument("--broker", choices=["tansu", "kafka", "both"], default="both", help="--jvm: the brokers")
    parser.add_argument("--masters", default="local,cluster", help="--jvm: local (local[2]) and/or cluster")
    parser.add_argument("--json", action="store_true", help="--jvm: also print the raw results as JSON")
    parser.add_argument("--stream-parts", action="store_true",
                        help="--jvm: also time each stream source into each sink and into noop (where the time goes)")
    parser.add_argument("--jvm-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", default="", help=argparse.SUPPRESS)
    parser.add_argument("--master", default="local", help=argparse.SUPPRESS)
    parser.add_argument("--jars", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.jvm_child:
        jvm_child(args)
        return
    if args.jvm:
        sys.exit(jvm_parent(args))
    from pyspark.sql import functions as sf

    from cykafka.spark import local_session

    os.chdir(tempfile.mkdtemp(prefix="cykafka-spark-bench-"))  # Spark's workers start in our cwd: not the source tree

    with EmbeddedBroker() as broker:
        spark = local_session("local[2]", "cykafka-spark-bench")
        try:
            frame = demo_frame(spark, args.rows, 100, args.partitions).cache()
            frame.count()  # generated once, outside the timings

            def cykafka_write(topic: str, delivery: str = "at-least-once") -> None:
                (frame.write.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
                 .option("kafka.compression.type", args.compression).option("kafka.linger.ms", "5")
                 .option("cykafka.delivery", delivery).option("topic", topic).mode("append").save())

            def cykafka_exactly_once(topic: str) -> None:
                cykafka_write(topic, "exactly-once")

            def confluent_write(topic: str) -> None:
                frame.foreachPartition(confluent_partition_writer(broker.bootstrap_servers, topic, args.compression))

            writers = {"format(\"cykafka\")": cykafka_write,
                       "format(\"cykafka\") cykafka.delivery=exactly-once": cykafka_exactly_once,
                       "foreachPartition + confluent-kafka": confluent_write}
            for name, write in writers.items():  # warm up the Python workers
                write(f"warmup-{len(name)}")
            seconds: dict[str, list[float]] = {name: [] for name in writers}
            topics: dict[str, list[str]] = {name: [] for name in writers}
            for round_ in range(args.rounds):
                for index, (name, write) in enumerate(writers.items()):
                    topic = f"spark-bench-{index}-{round_}"
                    started = time.perf_counter()
                    write(topic)
                    seconds[name].append(time.perf_counter() - started)
                    topics[name].append(topic)
            spark.dataSource.register(confluent_source())
            spark.dataSource.register(arrow_ceiling_source(args.rows, args.partitions, 100))
            read_topic = topics["format(\"cykafka\")"][0]

            def read_with(source: str) -> Any:
                frame = (spark.read.format(source).option("kafka.bootstrap.servers", broker.bootstrap_servers)
                         .option("subscribe", read_topic).load())
                return frame.agg(sf.count("*").alias("rows"), sf.sum(sf.length("value")).alias("bytes")).first()

            readers = {"format(\"cykafka\")": "cykafka", "Data Source on confluent-kafka": "confluent_kafka_bench",
                       "ceiling: prebuilt Arrow batches, no Kafka": "arrow_ceiling_bench"}
            for source in readers.values():  # warm up
                read_with(source)
            read_seconds: dict[str, list[float]] = {name: [] for name in readers}
            read_answers: dict[str, set[tuple[int, int]]] = {name: set() for name in readers}
            for _ in range(args.rounds):
                for name, source in readers.items():
                    started = time.perf_counter()
                    answer = read_with(source)
                    read_seconds[name].append(time.perf_counter() - started)
                    read_answers[name].add((answer["rows"], answer["bytes"]))
        finally:
            spark.stop()
        counted = {name: [count_back(broker.bootstrap_servers, t).records for t in ts] for name, ts in topics.items()}
    rate = {name: statistics.median(args.rows / s for s in secs) for name, secs in seconds.items()}
    base = "foreachPartition + confluent-kafka"
    print(f"\nSpark local[2], {args.rows:,} rows x {args.partitions} partitions (key, 100-byte value, 2 headers), "
          f"compression {args.compression}, median of {args.rounds} interleaved rounds\n")
    print("| writer | rows/s | vs foreachPartition + confluent-kafka | rows counted back per round |")
    print("|---|---:|---:|---|")
    for name in seconds:
        print(f"| {name} | {rate[name]:,.0f} | {rate[name] / rate[base]:.2f}x | {counted[name]} |")
    read_rate = {name: statistics.median(args.rows / s for s in secs) for name, secs in read_seconds.items()}
    read_base = "Data Source on confluent-kafka"
    print(f"\n| reader ({args.rows:,} rows, {args.partitions} Kafka partitions) | rows/s | vs a Data Source on "
          f"confluent-kafka | (rows, value bytes) read |")
    print("|---|---:|---:|---|")
    for name in read_seconds:
        print(f"| {name} | {read_rate[name]:,.0f} | {read_rate[name] / read_rate[read_base]:.2f}x | "
              f"{sorted(read_answers[name])} |")
    if any(c != args.rows for counts in counted.values() for c in counts):
        sys.exit("a writer lost or duplicated rows")
    if len({answer for name, answers in read_answers.items() if "ceiling" not in name for answer in answers}) != 1:
        sys.exit("the readers disagree on what the topic holds")


if __name__ == "__main__":
    main()
