"""spark.read / readStream .format("cykafka") on the shared local[2] SparkSession against the embedded broker: every
record equal to what an independent consumer (confluent-kafka) reads, offset ranges, minPartitions, headers, and a
streaming query that resumes from its checkpoint with no gap and no repeat."""

from __future__ import annotations

import json
import threading
import time
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
    # nothing to read (an empty topic; or a range that ends where it starts): no ranges, and pyspark runs one task
    # anyway with a bare InputPartition(None), which reads nothing (it failed an assertion once)
    assert _load(spark, broker, subscribe=_topic(broker, 2)).count() == 0
    assert _load(spark, broker, assign=f'{{"{topic}": [0]}}', startingOffsets=f'{{"{topic}": {{"0": {start}}}}}',
                 endingOffsets=f'{{"{topic}": {{"0": {start}}}}}').count() == 0


@pytest.mark.broker_only("kafka", reason="Tansu answers ListOffsets by its own append time, not the records' "
                         "timestamps (test_spark_source.py checks the plan against a stand-in that answers as Kafka)")
def test_timestamp_bounds_use_the_brokers_offsets_for_times(spark: Any, broker: Any) -> None:
    """startingTimestamp / endingTimestamp / *OffsetsByTimestamp against Kafka's real ListOffsets by time: each bound
    is the first offset whose record timestamp is >= the time (Spark's Kafka source semantics)."""
    topic = _topic(broker, 2)
    base_ms = 1_700_000_000_000
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5}) as producer:
        for i in range(100):  # partition 0: a record every 10 ms; partition 1: every 25 ms
            producer.send(topic, b"p0-%d" % i, partition=0, timestamp_ms=base_ms + 10 * i)
        for i in range(40):
            producer.send(topic, b"p1-%d" % i, partition=1, timestamp_ms=base_ms + 5 + 25 * i)

    def offsets(**options: str) -> dict[int, list[int]]:
        rows = _load(spark, broker, subscribe=topic, **options).select("partition", "offset").collect()
        got: dict[int, list[int]] = {0: [], 1: []}
        for row in rows:
            got[row.partition].append(row.offset)
        return {p: sorted(o) for p, o in got.items()}

    # 1025 ms in: p0's first at or after it is offset 3 (1030), p1's offset 1 (1030); 655 ms: p0 66, p1 26 (655)
    assert offsets(startingTimestamp=str(base_ms + 25), endingTimestamp=str(base_ms + 655)) == {
        0: list(range(3, 66)), 1: list(range(1, 26))}
    assert offsets(startingOffsetsByTimestamp=json.dumps({topic: {"0": base_ms, "1": base_ms + 506}}),
                   endingOffsetsByTimestamp=json.dumps({topic: {"0": base_ms + 500, "1": base_ms + 10**9}})) == {
        0: list(range(0, 50)), 1: list(range(21, 40))}
    # 982 ms: later than every record of p1 (its last is at 980): Spark fails, or starts p1 at its end
    with pytest.raises(Exception, match=f"no offset of {topic}-1 has a timestamp >="):
        offsets(startingTimestamp=str(base_ms + 982))
    assert offsets(startingTimestamp=str(base_ms + 982), startingOffsetsByTimestampStrategy="latest") == {
        0: [99], 1: []}


def test_bad_options_fail_on_the_driver(spark: Any, broker: EmbeddedBroker) -> None:
    with pytest.raises(Exception, match="can't be latest for batch"):
        _load(spark, broker, subscribe="x", startingOffsets="latest").collect()
    with pytest.raises(Exception, match=r"kafka\.auto\.offset\.reset is not supported"):
        _load(spark, broker, subscribe="x", **{"kafka.auto.offset.reset": "earliest"}).collect()


def _available_now(spark: Any, broker: EmbeddedBroker, source: str, sink: str, checkpoint: str,
                   **options: str) -> Any:
    """One run of a stream -> stream query with trigger(availableNow=True), from the checkpoint; the ended query."""
    reader = (spark.readStream.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
              .option("subscribe", source).option("startingOffsets", "earliest"))
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load().selectExpr("key", "value").writeStream.format("cykafka")
             .option("kafka.bootstrap.servers", broker.bootstrap_servers).option("topic", sink)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    assert query.awaitTermination(180)
    assert query.exception() is None
    return query


def _batch_sizes(query: Any) -> list[int]:
    return [progress["numInputRows"] for progress in query.recentProgress if progress["numInputRows"]]


def test_stream_resumes_from_its_checkpoint_with_no_gap_and_no_repeat(spark: Any, broker: EmbeddedBroker,
                                                                     tmp_path: Path) -> None:
    """availableNow reads up to the query's start in micro-batches of maxOffsetsPerTrigger (not Spark's one-batch
    fallback); then three stop/restart cycles while a producer thread writes, and a last run after it: the output
    topic holds every input record exactly once."""
    source, sink = _topic(broker, 2), _topic(broker, 2)
    group = f"lag-{source}"
    _produce(broker, source, 500)
    checkpoint = str(tmp_path / "checkpoint")
    options = {"maxOffsetsPerTrigger": "150", "cykafka.commit.group": group}

    first = _available_now(spark, broker, source, sink, checkpoint, **options)
    sizes = _batch_sizes(first)
    assert sum(sizes) == 500 and len(sizes) >= 4 and max(sizes) <= 150, sizes  # several rate-limited batches
    assert len(read_back(broker.bootstrap_servers, sink)) == 500

    total, chunk = 1700, 100
    writer_error: list[BaseException] = []

    def write() -> None:  # the topic grows while the query stops and restarts
        try:
            for start in range(500, total, chunk):
                _produce(broker, source, chunk, start=start)
                time.sleep(0.3)
        except BaseException as e:  # reported by the test thread
            writer_error.append(e)

    writer = threading.Thread(target=write, name="test-writer")
    writer.start()
    try:
        for _ in range(3):  # stop (the run ends) and restart from the checkpoint, three times
            _available_now(spark, broker, source, sink, checkpoint, **options)
    finally:
        writer.join(120)
    assert not writer.is_alive() and not writer_error
    _available_now(spark, broker, source, sink, checkpoint, **options)  # what came after the last restart
    values = sorted(r.value for r in read_back(broker.bootstrap_servers, sink))
    assert values == sorted(b"value-%d" % i for i in range(total))  # none lost, none repeated
    # cykafka.commit.group: Spark tells a source a micro-batch is done when it plans the next one, so the group
    # holds the ends of the last micro-batch but one (the checkpoint's offsets log): behind, never ahead
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        committed = admin.list_consumer_group_offsets(group)
    assert {tp.partition: r.result().offset for tp, r in committed.items() if tp.topic == source} == _logged_ends(
        checkpoint, source, back=1)


def _logged_ends(checkpoint: str, topic: str, back: int) -> dict[int, int]:
    """The end offsets of the micro-batch `back` before the last, from the checkpoint's offsets log (its last
    line: the source's offsets JSON)."""
    logs = sorted((int(p.name), p) for p in (Path(checkpoint) / "offsets").iterdir() if p.name.isdigit())
    ends = json.loads(logs[-1 - back][1].read_text().splitlines()[-1])[topic]
    return {int(partition): offset for partition, offset in ends.items()}


class _TransactionalWriter:
    """Writes to partitions 0 and 1 of a topic: plain records interleaved with committed and aborted transactions
    of a transactional producer; `visible` and `aborted` hold the values in each class."""

    def __init__(self, broker: EmbeddedBroker, topic: str) -> None:
        config = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5}
        self.topic, self.plain = topic, Producer(config)
        self.txn = Producer({**config, "transactional.id": f"txn-{topic}"})
        self.txn.init_transactions(30)
        self.visible: list[bytes] = []
        self.aborted: list[bytes] = []
        self.count = 0

    def _send(self, producer: Producer, records: int) -> list[bytes]:
        values = []
        for _ in range(records):
            values.append(b"value-%d" % self.count)
            producer.send(self.topic, values[-1], partition=self.count % 2)
            self.count += 1
        producer.flush(30)
        return values

    def rounds(self, rounds: int) -> None:
        for _ in range(rounds):
            self.visible += self._send(self.plain, 20)
            self.txn.begin_transaction()
            self.visible += self._send(self.txn, 30)
            self.txn.commit_transaction(30)
            self.visible += self._send(self.plain, 5)
            self.txn.begin_transaction()
            self.aborted += self._send(self.txn, 30)  # written, then aborted
            self.txn.abort_transaction(30)

    def open_transaction(self, records: int) -> list[bytes]:
        self.txn.begin_transaction()
        return self._send(self.txn, records)

    def close(self) -> None:
        self.plain.close()
        self.txn.close()


def test_read_committed_batch_and_stream_read_no_aborted_or_open_records(spark: Any, broker: EmbeddedBroker,
                                                                        tmp_path: Path) -> None:
    """kafka.isolation.level=read_committed: batch and streaming reads return the committed and non-transactional
    records, none aborted; the end offset is the last stable offset, so an open transaction and what follows it
    wait for the next read; a range that ends inside the open transaction fails in pollTimeoutMs, naming it."""
    from cykafka.errors import KafkaTimeoutError
    from cykafka.spark import read_range
    from cykafka.spark.source_options import OffsetRange, parse_source_options

    topic = _topic(broker, 2)
    committed = {"kafka.isolation.level": "read_committed"}
    writer = _TransactionalWriter(broker, topic)
    try:
        writer.rounds(8)
        before_open = list(writer.visible)
        held = writer.open_transaction(40)
        after_open = writer._send(writer.plain, 10)  # behind the open transaction: not stable yet
        uncommitted = {r.value for r in _load(spark, broker, subscribe=topic).collect()}
        assert set(writer.aborted) | set(held) | set(after_open) <= uncommitted  # all of them are in the log

        rows = _load(spark, broker, subscribe=topic, **committed).collect()
        assert sorted(r.value for r in rows) == sorted(before_open)

        checkpoint = str(tmp_path / "checkpoint")

        def stream() -> list[bytes]:  # one availableNow run from the checkpoint; the values of its micro-batches
            values: list[bytes] = []
            query = (spark.readStream.format("cykafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
                     .option("subscribe", topic).option("startingOffsets", "earliest")
                     .option("maxOffsetsPerTrigger", "200").option("kafka.isolation.level", "read_committed")
                     .load().writeStream.option("checkpointLocation", checkpoint)
                     .foreachBatch(lambda df, _: values.extend(r.value for r in df.select("value").collect()))
                     .trigger(availableNow=True).start())
            assert query.awaitTermination(180)
            assert query.exception() is None
            return values

        first = stream()
        assert sorted(first) == sorted(before_open)

        options = parse_source_options({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic,
                                        "kafkaConsumer.pollTimeoutMs": "2000", **committed}, streaming=False)
        ends = _ends(broker, topic)
        with pytest.raises(KafkaTimeoutError, match=r"past the last stable offset .*still open"):
            list(read_range(options, OffsetRange(topic, 0, 0, ends[0])))

        writer.txn.commit_transaction(30)
        writer.visible += held + after_open
        writer.rounds(2)
        second = stream()  # restarted from the checkpoint
        assert sorted(first + second) == sorted(writer.visible)  # no repeat, no gap, nothing aborted
        assert sorted(r.value for r in _load(spark, broker, subscribe=topic, **committed).collect()) == sorted(
            writer.visible)
    finally:
        writer.close()


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
    from cykafka.spark.source_options import parse_source_options

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


def test_available_now_reads_to_the_ends_at_the_query_start_in_limited_batches() -> None:
    from pyspark.sql.streaming.datasource import ReadMaxRows

    from cykafka.spark import CykafkaStreamReader
    from cykafka.spark.source_options import parse_source_options

    options = parse_source_options({"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t",
                                    "maxOffsetsPerTrigger": "10", "minOffsetsPerTrigger": "4"}, streaming=True)
    reader = CykafkaStreamReader(options)
    lookups = _Lookups()
    reader._offsets = lookups  # type: ignore[assignment]
    lookups.latest = {lookups.tps[0]: 8, lookups.tps[1]: 13}
    reader.prepareForTriggerAvailableNow()
    lookups.latest = {lookups.tps[0]: 100, lookups.tps[1]: 100}  # written after the query started: not read
    ends = [{"t": {"0": 0, "1": 0}}]
    for _ in range(4):
        ends.append(reader.latestOffset(ends[-1], ReadMaxRows(10)))
    # 10 offsets shared by backlog, then the last 3 although minOffsetsPerTrigger is 4, then no new micro-batch
    assert [e["t"] for e in ends[1:]] == [{"0": 3, "1": 6}, {"0": 7, "1": 11}, {"0": 8, "1": 13}, {"0": 8, "1": 13}]
