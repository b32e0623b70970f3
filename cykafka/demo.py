"""`cykafka demo`, the README's main job: a local Spark pipeline on the embedded broker, through format("cykafka")
both ways: a generated DataFrame is written to topic A, A is read back, transformed and written to topic B, and an
independent consumer (confluent-kafka) checks B against A record by record; it prints rows/s for each leg and a
verified summary. `cykafka demo --plain` checks cykafka.Producer alone, without Spark."""

from __future__ import annotations

import time
from typing import Any

from cykafka.broker import EmbeddedBroker
from cykafka.errors import MissingDependencyError
from cykafka.producer import Producer
from cykafka.verify import read_back

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
    """The whole pipeline through format("cykafka"): generate -> write topic A -> read A, transform, write topic B ->
    verify B record by record against A with an independent consumer (confluent-kafka). Without the spark extra:
    MissingDependencyError naming it (and `--plain`, the demo without Spark)."""
    try:
        import pyarrow  # noqa: F401  (the data source's batches)
        from pyspark.sql import functions as sf
    except ImportError as e:
        raise MissingDependencyError(
            f"cykafka demo runs a Spark pipeline and needs the spark extra ({e.name or e} is missing): "
            f"pip install 'cykafka[spark]' (from a clone: pip install '.[spark]'), or run `cykafka demo --plain`, "
            f"the producer alone, without Spark") from e

    from cykafka.spark import local_session

    with EmbeddedBroker() as broker:
        started = time.perf_counter()
        spark = local_session(master, "cykafka-demo")
        session_s = time.perf_counter() - started
        bootstrap = broker.bootstrap_servers

        def timed(action: Any) -> float:
            began = time.perf_counter()
            action()
            return time.perf_counter() - began

        def write(frame: Any, topic: str) -> None:
            (frame.write.format("cykafka").option("kafka.bootstrap.servers", bootstrap)
             .option("kafka.compression.type", compression).option("kafka.linger.ms", "5")
             .option("topic", topic).mode("append").save())

        def read(topic: str) -> Any:
            return (spark.read.format("cykafka").option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", topic).option("includeHeaders", "true").load())

        try:
            write(demo_frame(spark, 10_000, value_bytes, partitions), "cykafka-demo-warmup")  # starts the workers
            read("cykafka-demo-warmup").count()
            source, sink = "cykafka-demo-a", "cykafka-demo-b"
            write_s = timed(lambda: write(demo_frame(spark, records, value_bytes, partitions), source))
            read_s = timed(lambda: read(source).count())
            transformed = read(source).select(  # the transform: value upper-cased, a header saying where it came from
                "key", sf.upper(sf.col("value").cast("string")).cast("binary").alias("value"),
                sf.concat("headers", sf.array(sf.struct(sf.lit("from").alias("key"),
                                                        sf.format_string("%s-%d-%d", "topic", "partition", "offset")
                                                        .cast("binary").alias("value")))).alias("headers"))
            pipeline_s = timed(lambda: write(transformed, sink))
        finally:
            spark.stop()
        problems = verify_pipeline(read_back(bootstrap, source, timeout_s=300),
                                   read_back(bootstrap, sink, timeout_s=300), source)
    ok = not problems
    print(f"cykafka spark demo: rows={records} value_bytes={value_bytes} ({master}, format=cykafka, "
          f"compression={compression}, session start {session_s:.1f} s)", flush=True)
    print(f"  write A            {records / write_s:>12,.0f} rows/s ({write_s:.1f} s)")
    print(f"  read A             {records / read_s:>12,.0f} rows/s ({read_s:.1f} s)")
    print(f"  read A -> write B  {records / pipeline_s:>12,.0f} rows/s ({pipeline_s:.1f} s)")
    print(f"cykafka spark demo: A={records} B verified record by record: "
          + ("VERIFIED" if ok else f"MISMATCH ({'; '.join(problems[:5])})"), flush=True)
    return 0 if ok else 1


def verify_pipeline(a: list[Any], b: list[Any], source: str) -> list[str]:
    """Every record of A is in B exactly once, transformed: same key, value upper-cased, A's headers then
    ("from", "<topic>-<partition>-<offset>" of the A record). Returns what does not hold (empty: verified)."""
    problems: list[str] = []
    by_origin: dict[bytes, Any] = {}
    for record in b:
        origin = record.headers[-1][1] if record.headers and record.headers[-1][0] == "from" else None
        if origin is None:
            problems.append(f"B {record.partition}/{record.offset} has no 'from' header")
        elif origin in by_origin:
            problems.append(f"A record {origin.decode()} is in B twice")
        else:
            by_origin[origin] = record
    for record in a:
        origin = f"{source}-{record.partition}-{record.offset}".encode()
        copy = by_origin.pop(origin, None)
        if copy is None:
            problems.append(f"A record {origin.decode()} is missing from B")
        elif (copy.key, copy.value, copy.headers[:-1]) != (record.key, (record.value or b"").upper(), record.headers):
            problems.append(f"B's copy of {origin.decode()} differs")
    problems += [f"B holds {origin.decode()}, which A does not" for origin in by_origin]
    return problems


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
