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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--compression", default="lz4")
    args = parser.parse_args()
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
