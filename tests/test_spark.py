"""The cykafka Spark data source on a real local[2] SparkSession (shared, from conftest) against the embedded broker:
batch and streaming writes read back by an independent consumer, the Arrow path, task retry, planning-time errors."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import functions as sf

from cykafka.broker import EmbeddedBroker
from cykafka.verify import count_back, read_back

pytestmark = [pytest.mark.slow, pytest.mark.broker]

BASE_TIMESTAMP_MS = 1_700_000_000_000


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _frame(spark: Any, rows: int, partitions: int = 2) -> Any:
    """id, key (string), value (binary), partition (int), headers, timestamp: every column the sink knows."""
    id_bytes = sf.col("id").cast("string").cast("binary")
    return spark.range(0, rows, numPartitions=partitions).select(
        sf.col("id"),
        sf.concat(sf.lit("key-"), sf.col("id").cast("string")).alias("key"),
        sf.concat(sf.lit(b"value-"), id_bytes).alias("value"),
        (sf.col("id") % 4).cast("int").alias("partition"),
        sf.array(
            sf.struct(sf.lit("seq").alias("key"), id_bytes.alias("value")),
            sf.struct(sf.lit("source").alias("key"), sf.lit(b"spark").alias("value")),
        ).alias("headers"),
        sf.timestamp_millis(sf.lit(BASE_TIMESTAMP_MS) + sf.col("id")).alias("timestamp"),
    )


def _task_reports(directory: Path) -> list[dict[str, Any]]:
    """The commit messages the tasks wrote through the cykafka.test.task_report_dir hook."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("task-*.json"))]


def _worker_log_messages(spark: Any, needle: str) -> list[str]:
    logs = spark.tvf.python_worker_logs().where(sf.col("logger").startswith("cykafka"))
    return [row.msg for row in logs.where(sf.col("msg").contains(needle)).select("msg").collect()]


def test_batch_write_every_column_arrow_path(spark: Any, broker: EmbeddedBroker, tmp_path: Path) -> None:
    rows = 200_000
    topic = _topic("spark-batch")
    (_frame(spark, rows).withColumn("topic", sf.lit(topic))  # the topic column, no topic option
     .write.format("cykafka")
     .option("kafka.bootstrap.servers", broker.bootstrap_servers)
     .option("kafka.linger.ms", "10")
     .option("kafka.compression.type", "lz4")
     .option("cykafka.log.level", "INFO")
     .option("cykafka.test.task_report_dir", str(tmp_path))
     .mode("append").save())
    records = read_back(broker.bootstrap_servers, topic, timeout_s=120)
    assert len(records) == rows
    seen = set()
    for record in records:
        assert record.headers[0][0] == "seq" and record.headers[1] == ("source", b"spark")
        i = int(record.headers[0][1] or b"-1")
        seen.add(i)
        assert record.key == b"key-%d" % i
        assert record.value == b"value-%d" % i
        assert record.partition == i % 4, "the partition column decides the partition"
        assert record.timestamp_ms == BASE_TIMESTAMP_MS + i
    assert seen == set(range(rows))
    reports = _task_reports(tmp_path)
    assert [r["encoding"] for r in reports] == ["arrow", "arrow"], "DataSourceArrowWriter encoded every row"
    assert sum(r["rows"] for r in reports) == rows
    acked: dict[str, int] = {}
    for report in reports:
        for tp, count in report["acked"].items():
            acked[tp] = acked.get(tp, 0) + count
    assert acked == {f"{topic}-{p}": rows // 4 for p in range(4)}, "commit messages carry per-partition counts"
    # the driver's commit() logs the totals (read from Spark's Python worker log table)
    commits = _worker_log_messages(spark, f"'{topic}': {rows}")
    assert len(commits) == 1 and f"{rows} rows from 2 tasks (writer path: arrow)" in commits[0], commits


def test_producer_reused_across_tasks_and_topic_option(spark: Any, broker: EmbeddedBroker, tmp_path: Path) -> None:
    producers: list[set[tuple[int, str]]] = []
    for job in range(2):  # same kafka.* options, so the same cached producer per worker
        topic = _topic("spark-reuse")
        reports = tmp_path / f"job{job}"
        reports.mkdir()
        (spark.range(0, 20_000, numPartitions=4)
         .select(sf.col("id").cast("string").alias("value"), sf.lit("ignored").alias("topic"))
         .write.format("cykafka")
         .option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("topic", topic)  # overrides the column, as in Spark's Kafka sink
         .option("cykafka.test.task_report_dir", str(reports))
         .mode("append").save())
        assert count_back(broker.bootstrap_servers, topic).records == 20_000
        producers.append({(r["pid"], r["producer"]) for r in _task_reports(reports)})
    first, second = producers
    assert 1 <= len(first) <= 2, f"local[2]: at most two Python workers, one producer each for this config: {first}"
    assert second <= first, f"the second job's tasks reuse the workers' producers: {first} vs {second}"


def test_streaming_rate_source(spark: Any, broker: EmbeddedBroker, tmp_path: Path) -> None:
    topic = _topic("spark-stream")
    stream = (spark.readStream.format("rate").option("rowsPerSecond", 4000).option("numPartitions", 2).load()
              .select(sf.col("value").cast("string").alias("key"),
                      sf.col("value").cast("string").alias("value"),
                      sf.array(sf.struct(sf.lit("seq").alias("key"),
                                         sf.col("value").cast("string").cast("binary").alias("value"))).alias("headers")))
    query = (stream.writeStream.format("cykafka")
             .option("kafka.bootstrap.servers", broker.bootstrap_servers)
             .option("topic", topic)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .option("cykafka.test.task_report_dir", str(tmp_path))
             .trigger(processingTime="500 milliseconds")
             .start())
    try:
        deadline = time.monotonic() + 120
        while sum(1 for p in query.recentProgress if p["numInputRows"] > 0) < 3:
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, f"fewer than 3 micro-batches in 120 s: {query.recentProgress}"
            time.sleep(0.2)
    finally:
        query.stop()
    assert query.exception() is None
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    committed_rows = sum(p["numInputRows"] for p in progress)
    values = [int(r.value or b"-1") for r in read_back(broker.bootstrap_servers, topic, timeout_s=120)]
    # the rate source numbers rows 0, 1, 2, ... across micro-batches: the committed ones are in Kafka exactly once;
    # the batch that stop() interrupted may have written some of its rows too (at-least-once: no transactions)
    committed = sorted(v for v in values if v < committed_rows)
    assert committed == list(range(committed_rows))
    assert len(values) == len(set(values)) >= committed_rows
    encodings = {r["encoding"] for r in _task_reports(tmp_path)}
    assert encodings == {"arrow"}, "every micro-batch task went through DataSourceStreamArrowWriter"


def test_failed_task_is_retried_at_least_once(spark: Any, broker: EmbeddedBroker, tmp_path: Path) -> None:
    rows = 50_000
    topic = _topic("spark-retry")
    marker = tmp_path / "failed-once"
    (_frame(spark, rows).write.format("cykafka")
     .option("kafka.bootstrap.servers", broker.bootstrap_servers)
     .option("topic", topic)
     .option("cykafka.test.fail_once_marker", str(marker))
     .mode("append").save())
    assert marker.exists(), "one task failed on purpose"
    counts = count_back(broker.bootstrap_servers, topic, unique_header="seq")
    assert counts.unique == rows, "every row arrived"
    # the failed attempt flushed its first Arrow batch before failing; the retry sent it again
    assert counts.records > rows


def _assert_fails_at_planning(spark: Any, write: Any, message: str) -> None:
    group = f"cykafka-planning-{uuid.uuid4().hex[:8]}"
    spark.sparkContext.setJobGroup(group, "planning-time failure")
    try:
        with pytest.raises(Exception, match=message):
            write()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    tracker = spark.sparkContext.statusTracker()
    assert tracker.getJobIdsForGroup(group) == [], "no Spark job may start before the error"


@pytest.mark.broker_only("tansu", reason="it fails at planning, before any broker is asked")
@pytest.mark.parametrize(("option", "value", "message"), [
    ("kafka.key.serializer", "org.apache.kafka.common.serialization.StringSerializer",
     "option kafka.key.serializer is not supported"),
    ("kafka.value.serializer", "x", "option kafka.value.serializer is not supported"),
    ("kafka.linger.ms", "soon", "linger.ms must be an integer"),
    ("kafka.no.such.key", "1", "no.such.key"),
    ("cykafka.flush.timeout", "1", "unknown option cykafka.flush.timeout"),
])
def test_invalid_option_fails_at_planning(spark: Any, broker: EmbeddedBroker, option: str, value: str,
                                          message: str) -> None:
    frame = spark.range(10).select(sf.col("id").cast("string").alias("value"))

    def write() -> None:
        (frame.write.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("topic", "never-written").option(option, value).mode("append").save())

    _assert_fails_at_planning(spark, write, message)


@pytest.mark.broker_only("tansu", reason="it fails at planning, before any broker is asked")
@pytest.mark.parametrize(("name", "expression", "message"), [
    ("value", "id", "column 'value' must be binary or string, got bigint"),
    ("key", "array(id)", "column 'key' must be binary or string, got array<bigint>"),
    ("partition", "id", "column 'partition' must be int, got bigint"),
    ("headers", "array('x')", "column 'headers' must be array<struct<key:string,value:binary>>"),
    ("timestamp", "1.5", "column 'timestamp' must be timestamp"),
])
def test_wrong_column_type_fails_at_planning(spark: Any, broker: EmbeddedBroker, name: str, expression: str,
                                             message: str) -> None:
    frame = spark.range(10).selectExpr("id", "cast(id as string) as value").withColumn(name, sf.expr(expression))

    def write() -> None:
        (frame.write.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("topic", "never-written").mode("append").save())

    _assert_fails_at_planning(spark, write, message)


@pytest.mark.broker_only("tansu", reason="it fails at planning, before any broker is asked")
def test_missing_value_and_topic_fail_at_planning(spark: Any, broker: EmbeddedBroker) -> None:
    def no_value() -> None:
        (spark.range(3).write.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("topic", "never-written").mode("append").save())

    def no_topic() -> None:
        (spark.range(3).select(sf.col("id").cast("string").alias("value")).write.format("cykafka")
         .option("kafka.bootstrap.servers", broker.bootstrap_servers).mode("append").save())

    _assert_fails_at_planning(spark, no_value, "required column 'value'")
    _assert_fails_at_planning(spark, no_topic, "no topic")


@pytest.mark.broker_only("tansu", reason="it fails at planning, before any broker is asked")
def test_invalid_option_fails_streaming_query_at_start(spark: Any, broker: EmbeddedBroker, tmp_path: Path) -> None:
    stream = spark.readStream.format("rate").load().select(sf.col("value").alias("value"))  # bigint: wrong
    with pytest.raises(Exception, match="column 'value' must be binary or string"):
        query = (stream.writeStream.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
                 .option("topic", "never-written").option("checkpointLocation", str(tmp_path / "cp")).start())
        try:
            query.awaitTermination(60)
        finally:
            query.stop()
