"""`cykafka demo`, the README's main job: a local Spark pipeline writes a generated DataFrame to the embedded broker
through format("cykafka"), an independent consumer (confluent-kafka) counts what arrived, and a summary line says
whether sent = read back. `cykafka demo --plain` runs the same check through cykafka.Producer alone, without Spark."""

from __future__ import annotations

import time
from typing import Any

from cykafka.broker import EmbeddedBroker
from cykafka.producer import Producer
from cykafka.verify import count_back, read_back

SPARK_DEMO_ROWS = 1_000_000
PLAIN_DEMO_RECORDS = 500_000


def demo_frame(spark: Any, rows: int, value_bytes: int = 100, partitions: int = 4) -> Any:
    """The demo's DataFrame: key (string), value (binary, value_bytes), headers [("seq", id), ("source", ...)]."""
    from pyspark.sql import functions as sf

    seq = sf.col("id").cast("string")
    return spark.range(0, rows, numPartitions=partitions).select(
        sf.concat(sf.lit("key-"), seq).alias("key"),
        sf.rpad(sf.concat(sf.lit("value-"), seq), value_bytes, "x").cast("binary").alias("value"),
        sf.array(sf.struct(sf.lit("seq").alias("key"), seq.cast("binary").alias("value")),
                 sf.struct(sf.lit("source").alias("key"), sf.lit(b"cykafka-demo").alias("value")),
                 ).alias("headers"),
    )


def run_spark(records: int = SPARK_DEMO_ROWS, value_bytes: int = 100, compression: str = "lz4",
              master: str = "local[2]", partitions: int = 4) -> int:
    """Spark DataFrame (key, value, headers) -> format("cykafka") -> Tansu -> confluent-kafka count."""
    from cykafka.spark import local_session

    with EmbeddedBroker() as broker:
        started = time.perf_counter()
        spark = local_session(master, "cykafka-demo")
        session_s = time.perf_counter() - started
        try:
            def write(rows: int, topic: str) -> float:
                began = time.perf_counter()
                (demo_frame(spark, rows, value_bytes, partitions).write.format("cykafka")
                 .option("kafka.bootstrap.servers", broker.bootstrap_servers)
                 .option("kafka.compression.type", compression)
                 .option("kafka.linger.ms", "5")
                 .option("topic", topic)
                 .mode("append").save())
                return time.perf_counter() - began

            write(10_000, "cykafka-demo-warmup")  # starts the Python workers and their producers
            topic = "cykafka-spark-demo"
            elapsed_s = write(records, topic)
        finally:
            spark.stop()
        counts = count_back(broker.bootstrap_servers, topic, unique_header="seq")
    ok = counts.records == records and counts.unique == records
    print(f"cykafka spark demo: rows={records} read_back={counts.records} unique={counts.unique} "
          f"kafka_partitions={len(counts.per_partition)} spark_partitions={partitions} "
          f"{records / elapsed_s:,.0f} rows/s ({master}, format=cykafka, compression={compression}, "
          f"write {elapsed_s:.1f} s, session start {session_s:.1f} s) -> {'VERIFIED' if ok else 'MISMATCH'}",
          flush=True)
    return 0 if ok else 1


def run_plain(records: int = PLAIN_DEMO_RECORDS, value_bytes: int = 100, compression: str = "lz4") -> int:
    """cykafka.Producer alone: N keyed records with headers, read back and checked one by one."""
    with EmbeddedBroker() as broker:
        topic = "cykafka-demo"
        payload = b"v" * value_bytes
        errors: list[BaseException] = []

        def on_delivery(err: BaseException | None, _metadata: object) -> None:
            if err is not None:
                errors.append(err)

        started = time.perf_counter()
        with Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": compression,
                       "linger.ms": 5}) as producer:
            for i in range(records):
                producer.send(topic, payload, key=b"key-%d" % i, headers=[("seq", b"%d" % i)],
                              on_delivery=on_delivery)
            pending = producer.flush(120)
        elapsed_s = time.perf_counter() - started
        read = read_back(broker.bootstrap_servers, topic)
        seqs = {int(r.headers[0][1] or b"-1") for r in read if r.headers}
        ok = not errors and pending == 0 and len(read) == records and seqs == set(range(records))
        print(f"cykafka demo: sent={records} errors={len(errors)} read_back={len(read)} unique={len(seqs)} "
              f"partitions={len({r.partition for r in read})} {records / elapsed_s:,.0f} records/s "
              f"compression={compression} -> {'VERIFIED' if ok else 'MISMATCH'}")
        return 0 if ok else 1


run = run_plain  # the name the plain demo had before the Spark pipeline
