"""Spark → Kafka side by side on one DataFrame and one embedded broker: format("cykafka") versus the usual
hand-written sink, `foreachPartition` with a confluent-kafka Producer per partition; interleaved rounds, medians,
every topic counted back by an independent consumer.

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--compression", default="lz4")
    args = parser.parse_args()
    from cykafka.spark import local_session

    os.chdir(tempfile.mkdtemp(prefix="cykafka-spark-bench-"))  # Spark's workers start in our cwd: not the source tree

    with EmbeddedBroker() as broker:
        spark = local_session("local[2]", "cykafka-spark-bench")
        try:
            frame = demo_frame(spark, args.rows, 100, args.partitions).cache()
            frame.count()  # generated once, outside the timings

            def cykafka_write(topic: str) -> None:
                (frame.write.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
                 .option("kafka.compression.type", args.compression).option("kafka.linger.ms", "5")
                 .option("topic", topic).mode("append").save())

            def confluent_write(topic: str) -> None:
                frame.foreachPartition(confluent_partition_writer(broker.bootstrap_servers, topic, args.compression))

            writers = {"format(\"cykafka\")": cykafka_write, "foreachPartition + confluent-kafka": confluent_write}
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
    if any(c != args.rows for counts in counted.values() for c in counts):
        sys.exit("a writer lost or duplicated rows")


if __name__ == "__main__":
    main()
