"""spark.read / readStream .format("cykafka") on the shared local[2] SparkSession against the embedded broker: every
record equal to what an independent consumer (confluent-kafka) reads, offset ranges, minPartitions, headers, and a
streaming query that resumes from its checkpoint with no gap and no repeat."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from cykafka import Admin, NewTopic, Producer
from cykafka.broker import EmbeddedBroker
from cykafka.verify import read_back

pytestmark = [pytest.mark.slow, pytest.mark.broker]


def _topic(broker: EmbeddedBroker, partitions: int) -> str:
    name = f"read-{uuid.uuid4().hex[:8]}"
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(name, partitions)])[name].result()
    return name


def _produce(broker: EmbeddedBroker, topic: str, count: int, start: int = 0, codec: str = "lz4") -> None:
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec,
                   "linger.ms": 5}) as producer:
        for i in range(start, start + count):
            producer.send(topic, b"value-%d" % i, None if i % 7 == 0 else b"key-%d" % (i % 50),
                          headers=[("seq", b"%d" % i), ("empty", None)] if i % 3 == 0 else None,
                          timestamp_ms=1_700_000_000_000 + i)
        producer.flush()


def _load(spark: Any, broker: EmbeddedBroker, **options: Any) -> Any:
    reader = spark.read.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_read_equals_an_independent_consumer(spark: Any, broker: EmbeddedBroker) -> None:
    topic = _topic(broker, 3)
    _produce(broker, topic, 3000)
    rows = _load(spark, broker, subscribe=topic, includeHeaders="true").collect()
    expected = read_back(broker.bootstrap_servers, topic)
    assert len(rows) == len(expected) == 3000
    got = sorted(((r.partition, r.offset), r) for r in rows)
    for (_, row), record in zip(got, expected, strict=True):
        assert (row.topic, row.partition, row.offset) == (topic, record.partition, record.offset)
        assert (row.key, row.value) == (record.key, record.value)
        assert int(row.timestamp.timestamp() * 1000) == record.timestamp_ms and row.timestampType == 0
        assert [(h.key, h.value) for h in row.headers or []] == record.headers


def test_schema_and_columns_are_sparks_kafka_source(spark: Any, broker: EmbeddedBroker) -> None:
    topic = _topic(broker, 1)
    _produce(broker, topic, 5)
    df = _load(spark, broker, subscribe=topic)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"), ("offset", "bigint"),
        ("timestamp", "timestamp"), ("timestampType", "int")]
    assert "headers" in _load(spark, broker, subscribe=topic, includeHeaders="true").columns


def test_offset_ranges_and_min_partitions(spark: Any, broker: EmbeddedBroker) -> None:
    topic = _topic(broker, 2)
    _produce(broker, topic, 400, codec="none")
    per_partition = {p: [r.offset for r in read_back(broker.bootstrap_servers, topic) if r.partition == p]
                     for p in (0, 1)}
    start, end = per_partition[0][10], per_partition[0][60]
    df = _load(spark, broker, assign=f'{{"{topic}": [0]}}',
               startingOffsets=f'{{"{topic}": {{"0": {start}}}}}', endingOffsets=f'{{"{topic}": {{"0": {end}}}}}')
    assert sorted(r.offset for r in df.select("offset").collect()) == per_partition[0][10:60]
    split = _load(spark, broker, subscribe=topic, minPartitions="8")
    assert split.rdd.getNumPartitions() >= 8
    assert split.count() == 400


def test_bad_options_fail_on_the_driver(spark: Any, broker: EmbeddedBroker) -> None:
    with pytest.raises(Exception, match="can't be latest for batch"):
        _load(spark, broker, subscribe="x", startingOffsets="latest").collect()
    with pytest.raises(Exception, match=r"kafka\.auto\.offset\.reset is not supported"):
        _load(spark, broker, subscribe="x", **{"kafka.auto.offset.reset": "earliest"}).collect()


def test_stream_resumes_from_its_checkpoint_with_no_gap_and_no_repeat(spark: Any, broker: EmbeddedBroker,
                                                                     tmp_path: Path) -> None:
    source, sink = _topic(broker, 2), _topic(broker, 2)
    group = f"lag-{source}"
    _produce(broker, source, 500)
    checkpoint = str(tmp_path / "checkpoint")

    def run_once() -> None:
        stream = (spark.readStream.format("cykafka")
                  .option("kafka.bootstrap.servers", broker.bootstrap_servers)
                  .option("subscribe", source).option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", "150").option("cykafka.commit.group", group).load())
        query = (stream.selectExpr("key", "value").writeStream.format("cykafka")
                 .option("kafka.bootstrap.servers", broker.bootstrap_servers).option("topic", sink)
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        assert query.awaitTermination(180)
        assert query.exception() is None

    run_once()
    assert len(read_back(broker.bootstrap_servers, sink)) == 500
    first_ends = _ends(broker, source)
    _produce(broker, source, 300, start=500)
    run_once()  # restarted from the checkpoint: only the 300 new records
    values = sorted(r.value for r in read_back(broker.bootstrap_servers, sink))
    assert values == sorted(b"value-%d" % i for i in range(800))
    # cykafka.commit.group: Spark tells a source a micro-batch is done when it plans the next one (a restart
    # included), so the group holds the first run's ends now: what lag tools read, one micro-batch behind
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        committed = admin.list_consumer_group_offsets(group)
    assert {tp.partition: r.result().offset for tp, r in committed.items() if tp.topic == source} == first_ends


def _ends(broker: EmbeddedBroker, topic: str) -> dict[int, int]:
    ends: dict[int, int] = {}
    for record in read_back(broker.bootstrap_servers, topic):
        ends[record.partition] = record.offset + 1
    return ends


def test_the_demo_verification_finds_missing_duplicated_and_changed_records() -> None:
    from cykafka.demo import verify_pipeline
    from cykafka.verify import ReadRecord

    a = [ReadRecord(0, i, b"k%d" % i, b"v%d" % i, [("seq", b"%d" % i)], 1) for i in range(3)]

    def copy(record: ReadRecord, value: bytes | None = None) -> ReadRecord:
        origin = b"A-%d-%d" % (record.partition, record.offset)
        return ReadRecord(1, record.offset, record.key, value or (record.value or b"").upper(),
                          [*record.headers, ("from", origin)], 1)

    assert verify_pipeline(a, [copy(r) for r in a], "A") == []
    assert verify_pipeline(a, [copy(a[0]), copy(a[1])], "A") == ["A record A-0-2 is missing from B"]
    assert verify_pipeline(a, [copy(r) for r in a] + [copy(a[1])], "A") == ["A record A-0-1 is in B twice"]
    assert verify_pipeline(a, [copy(a[0]), copy(a[1]), copy(a[2], b"other")], "A") == ["B's copy of A-0-2 differs"]


class _Lookups:
    """The driver's offset lookups, stubbed: two partitions, latest offsets as the test sets them."""

    def __init__(self) -> None:
        from cykafka import TopicPartition

        self.tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
        self.latest = {tp: 0 for tp in self.tps}
        self.consumer = self

    def partitions(self) -> list[Any]:
        return self.tps

    def beginning_offsets(self, tps: list[Any]) -> dict[Any, int]:
        return {tp: 0 for tp in tps}

    def end_offsets(self, tps: list[Any]) -> dict[Any, int]:
        return {tp: self.latest[tp] for tp in tps}


def test_stream_reader_applies_the_engines_read_limit_and_the_trigger_options() -> None:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from cykafka.spark import CykafkaStreamReader
    from cykafka.spark_source import parse_source_options

    options = parse_source_options({"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t",
                                    "maxOffsetsPerTrigger": "10", "minOffsetsPerTrigger": "4",
                                    "maxTriggerDelay": "1m"}, streaming=True)
    reader = CykafkaStreamReader(options)
    lookups = _Lookups()
    reader._offsets = lookups  # type: ignore[assignment]
    now = [100.0]
    reader._now_s = lambda: now[0]
    reader._last_batch_s = now[0]
    start = {"t": {"0": 0, "1": 0}}
    assert reader.getDefaultReadLimit() == ReadMaxRows(10)
    lookups.latest = {lookups.tps[0]: 40, lookups.tps[1]: 60}
    assert reader.latestOffset(start, ReadMaxRows(10)) == {"t": {"0": 4, "1": 6}}  # the engine's cap, by backlog
    assert reader.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 40, "1": 60}}  # no cap, whatever the options
    lookups.latest = {lookups.tps[0]: 1, lookups.tps[1]: 2}
    assert reader.latestOffset(start, ReadMaxRows(10)) == start  # 3 new offsets < minOffsetsPerTrigger 4: wait
    now[0] += 61
    assert reader.latestOffset(start, ReadMaxRows(10)) == {"t": {"0": 1, "1": 2}}  # maxTriggerDelay passed
