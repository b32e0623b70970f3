"""The Spark sink's parts without a SparkSession: option and schema checks, Arrow and Row column extraction, the
task write path against the embedded broker, and the per-process producer cache (reuse, idle eviction, fork)."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest

pytest.importorskip("pyspark")

import pyarrow as pa
from fakes import fake_cluster, fake_producer
from pyspark.sql import Row
from pyspark.sql import datasource as ds
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from cykafka import SerializationError
from cykafka import spark as sink
from cykafka.adapters.clock import SystemClock
from cykafka.broker import EmbeddedBroker
from cykafka.core import partition_for_key
from cykafka.errors import ConfigError, KafkaTimeoutError
from cykafka.spark.sink import _headers_column, _send_columns
from cykafka.verify import read_back

HEADERS = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
HEADERS_ARROW = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _schema(**columns: Any) -> StructType:
    return StructType([StructField(name, data_type) for name, data_type in columns.items()])


# -- planning ---------------------------------------------------------------------------------------------------


def test_plan_strips_kafka_prefix_and_keeps_our_options() -> None:
    plan = sink.plan_sink({"kafka.bootstrap.servers": "127.0.0.1:1", "kafka.linger.ms": "7", "topic": "events",
                           "cykafka.producer.idle.timeout.ms": "1000", "checkpointLocation": "/x"},
                          _schema(value=StringType(), key=BinaryType(), other=LongType()))
    assert plan.producer_config == (("bootstrap.servers", "127.0.0.1:1"), ("linger.ms", "7"))
    assert plan.topic == "events" and plan.idle_timeout_ms == 1000
    assert plan.columns == frozenset({"value", "key"}), "unknown columns are ignored, as in Spark's Kafka sink"
    assert plan.flush_timeout_ms == 120_000 + 30_000


@pytest.mark.parametrize(("options", "message"), [
    ({}, "kafka.bootstrap.servers is required"),
    ({"kafka.key.serializer": "x"}, "kafka.key.serializer is not supported"),
    ({"kafka.acks": "2"}, "acks must be one of"),
    ({"cykafka.nope": "1"}, "unknown option cykafka.nope"),
    ({"cykafka.flush.timeout.ms": "-5"}, "cykafka.flush.timeout.ms must be > 0"),
    ({"cykafka.log.level": "LOUD"}, "cykafka.log.level must be a logging level"),
    ({"topic": "bad topic"}, "characters other than"),
])
def test_plan_rejects_bad_options(options: dict[str, str], message: str) -> None:
    full = {"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t", **options}
    if not options:
        del full["kafka.bootstrap.servers"]
    with pytest.raises(ConfigError, match=message):
        sink.plan_sink(full, _schema(value=BinaryType()))


@pytest.mark.parametrize(("columns", "message"), [
    ({"key": BinaryType()}, "required column 'value'"),
    ({"value": LongType()}, "'value' must be binary or string, got bigint"),
    ({"value": BinaryType(), "topic": BinaryType()}, "'topic' must be string, got binary"),
    ({"value": BinaryType(), "partition": LongType()}, "'partition' must be int, got bigint"),
    ({"value": BinaryType(), "headers": ArrayType(StringType())}, "'headers' must be array<struct"),
    ({"value": BinaryType(), "headers": ArrayType(StructType([StructField("key", BinaryType()),
                                                              StructField("value", BinaryType())]))},
     "'headers' must be array<struct"),
    ({"value": BinaryType(), "timestamp": StringType()}, "'timestamp' must be timestamp"),
])
def test_plan_rejects_bad_columns(columns: dict[str, Any], message: str) -> None:
    with pytest.raises(sink.SinkSchemaError, match=message):
        sink.plan_sink({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t"}, _schema(**columns))


def test_plan_needs_a_topic_option_or_column() -> None:
    with pytest.raises(sink.SinkSchemaError, match="no topic"):
        sink.plan_sink({"kafka.bootstrap.servers": "127.0.0.1:1"}, _schema(value=BinaryType()))
    plan = sink.plan_sink({"kafka.bootstrap.servers": "127.0.0.1:1"}, _schema(value=BinaryType(), topic=StringType()))
    assert plan.topic is None and "topic" in plan.columns


def test_data_source_writers_are_the_arrow_ones() -> None:
    source = sink.CykafkaDataSource({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t"})
    schema = _schema(value=BinaryType())
    assert isinstance(source.writer(schema, False), ds.DataSourceArrowWriter)
    stream_writer = source.streamWriter(schema, False)
    assert isinstance(stream_writer, getattr(ds, "DataSourceStreamArrowWriter", sink.CykafkaStreamRowWriter))
    with pytest.raises(ConfigError, match="cannot be overwritten"):
        source.writer(schema, True)
    # the cykafka.test.* kill switches live in cykafka/spark/faults.py: only a test's options get those writers
    from cykafka.spark import faults

    assert not isinstance(source.writer(schema, False), faults.FaultyArrowWriter)
    tested = sink.CykafkaDataSource({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t",
                                     "cykafka.test.fail_once_marker": "/nonexistent/marker"})
    assert isinstance(tested.writer(schema, False), faults.FaultyArrowWriter)
    assert sink.plan_sink(source.options, schema).faults is None


# -- columns ----------------------------------------------------------------------------------------------------


def test_arrow_columns_every_type_on_a_sliced_batch() -> None:
    batch = pa.record_batch({
        "value": pa.array(["skip", "a", None, "ü"]),
        "key": pa.array([b"s", None, b"k2", b"k3"], type=pa.large_binary()),
        "topic": pa.array(["x", "t1", "t2", "t3"]),
        "partition": pa.array([9, 0, None, 3], type=pa.int32()),
        "timestamp": pa.array([0, 1_500, None, 2_000_999], type=pa.timestamp("us", tz="UTC")),
        "headers": pa.array([[{"key": "skip", "value": b"s"}], None, [],
                             [{"key": "h1", "value": b"1"}, {"key": "h2", "value": None}]], type=HEADERS_ARROW),
    }).slice(1)
    plan = sink.plan_sink(
        {"kafka.bootstrap.servers": "127.0.0.1:1"},
        _schema(value=StringType(), key=BinaryType(), topic=StringType(), partition=IntegerType(),
                timestamp=TimestampType(), headers=HEADERS))
    cols = sink._arrow_columns(batch, plan)
    assert cols.rows == 3
    assert cols.value.to_pylist() == ["a", None, "ü"]  # Arrow arrays, which send_batch reads in place
    assert cols.key.to_pylist() == [None, b"k2", b"k3"]
    assert cols.topic == ["t1", "t2", "t3"]
    assert cols.partition == [0, None, 3]
    assert cols.timestamp_ms == [1, None, 2_000]
    # the headers column goes to send_batch as it is (read in place in C), the slice's offset kept
    assert cols.headers.offset == 1 and cols.headers.to_pylist() == [
        None, [], [{"key": "h1", "value": b"1"}, {"key": "h2", "value": None}]]


def test_view_typed_headers_are_cast_for_send_batch() -> None:
    views = pa.array([[{"key": "h", "value": b"1"}], None],
                     type=pa.list_(pa.struct([("key", pa.string_view()), ("value", pa.binary_view())])))
    cast = _headers_column(views)
    assert cast.type == HEADERS_ARROW and cast.to_pylist() == views.to_pylist()
    assert _headers_column(pa.array([None], type=HEADERS_ARROW)).type == HEADERS_ARROW


@pytest.mark.parametrize(("arrow_type", "raw", "expected_ms"), [
    (pa.timestamp("s"), 3, 3_000), (pa.timestamp("ms"), 3, 3), (pa.timestamp("ns"), 3_999_999, 3),
    (pa.int64(), 42, 42),
])
def test_timestamp_units(arrow_type: Any, raw: int, expected_ms: int) -> None:
    assert sink._timestamp_ms_list(pa.array([raw, None], type=arrow_type)) == [expected_ms, None]


def test_null_topic_and_null_header_key_are_errors() -> None:
    plan = sink.plan_sink({"kafka.bootstrap.servers": "127.0.0.1:1"},
                          _schema(value=BinaryType(), topic=StringType(), headers=HEADERS))
    nulls = pa.record_batch({"value": pa.array([b"v"]), "topic": pa.array([None], type=pa.string()),
                             "headers": pa.array([None], type=HEADERS_ARROW)})
    with pytest.raises(sink.SinkSchemaError, match="null topic"):
        sink._arrow_columns(nulls, plan)
    null_key = pa.record_batch({"value": pa.array([b"v"]), "topic": pa.array(["t"]),
                                "headers": pa.array([[{"key": None, "value": b"x"}]], type=HEADERS_ARROW)})
    cols = sink._arrow_columns(null_key, plan)  # send_batch refuses the null key before anything is queued
    producer = fake_producer(fake_cluster(SystemClock(), "t"), topic="t")
    try:
        with pytest.raises(SerializationError, match=r"^headers\[0\]: header keys must be str, got NoneType$"):
            _send_columns(producer, plan, cols)
        assert producer.flush(5) == 0
    finally:
        producer.close(5)


def test_row_columns_match_the_arrow_path() -> None:
    plan = sink.plan_sink({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t"},
                          _schema(value=BinaryType(), key=StringType(), timestamp=TimestampNTZType(),
                                  headers=HEADERS))
    rows = [Row(value=bytearray(b"v1"), key="k1", timestamp=datetime.datetime(2024, 1, 2, 3, 4, 5, 6000),
                headers=[Row(key="h", value=bytearray(b"x"))]),
            Row(value=None, key=None, timestamp=None, headers=[])]
    cols = sink._row_columns(rows, plan)
    expected_ms = int(datetime.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.UTC).timestamp() * 1000)
    assert cols.rows == 2 and cols.topic is None
    assert cols.value == [bytearray(b"v1"), None] and cols.key == ["k1", None]
    assert cols.timestamp_ms == [expected_ms, None]
    assert cols.headers == [[("h", bytearray(b"x"))], None]


# -- the task path against the broker ---------------------------------------------------------------------------


@pytest.mark.broker
@pytest.mark.parametrize("encoding", ["arrow", "rows"])
def test_write_task_sends_every_row_with_only_a_value_column(broker: EmbeddedBroker, encoding: str) -> None:
    topic = f"sink-{encoding}-{uuid.uuid4().hex[:8]}"
    plan = sink.plan_sink({"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic},
                          _schema(value=StringType()))
    rows = 5_000
    values = [str(i) for i in range(rows)]
    batches: list[Any]
    if encoding == "arrow":
        batches = [pa.record_batch({"value": pa.array(values[i:i + 1000])}) for i in range(0, rows, 1000)]
    else:
        batches = [[Row(value=v) for v in values[i:i + 1000]] for i in range(0, rows, 1000)]
    message = sink.write_task(plan, batches, encoding)
    assert message.rows == rows and message.encoding == encoding
    assert sum(message.acked.values()) == rows and {t for t, _ in message.acked} == {topic}
    assert sorted(int(r.value or b"") for r in read_back(broker.bootstrap_servers, topic)) == list(range(rows))


@pytest.mark.broker
@pytest.mark.parametrize("encoding", ["arrow", "rows"])
def test_write_task_goes_through_send_batch_per_topic(broker: EmbeddedBroker, encoding: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of two topics in one batch, null partitions and timestamps: one send_batch call per topic, the
    partition column honoured where set, the key's partition elsewhere; the commit message counts per partition."""
    def no_send(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the sink sends through send_batch, not record by record")

    monkeypatch.setattr(sink.Producer, "send", no_send)
    first, second = (f"sink-mix-{n}-{uuid.uuid4().hex[:8]}" for n in (1, 2))
    plan = sink.plan_sink({"kafka.bootstrap.servers": broker.bootstrap_servers},
                          _schema(value=BinaryType(), key=BinaryType(), topic=StringType(), partition=IntegerType(),
                                  timestamp=LongType()))
    rows = 600
    columns = {"value": [b"v%d" % i for i in range(rows)], "key": [b"k%d" % i for i in range(rows)],
               "topic": [first if i % 3 else second for i in range(rows)],
               "partition": [i % 4 if i % 2 else None for i in range(rows)],
               "timestamp": [None if i % 5 == 0 else 1_000 + i for i in range(rows)]}
    batch: Any
    if encoding == "arrow":
        batch = pa.record_batch({**{k: pa.array(v) for k, v in columns.items() if k != "partition"},
                                 "partition": pa.array(columns["partition"], type=pa.int32())})
    else:
        batch = [Row(**{k: v[i] for k, v in columns.items()}) for i in range(rows)]
    message = sink.write_task(plan, [batch], encoding)
    assert message.rows == rows
    acked: dict[tuple[str, int], int] = {}
    for topic in (first, second):
        for record in read_back(broker.bootstrap_servers, topic):
            i = int(record.value[1:])
            assert topic == (first if i % 3 else second)
            assert record.key == b"k%d" % i
            assert record.partition == (i % 4 if i % 2 else partition_for_key(record.key, 4))
            assert i % 5 == 0 or record.timestamp_ms == 1_000 + i
            acked[(topic, record.partition)] = acked.get((topic, record.partition), 0) + 1
    assert message.acked == acked and sum(acked.values()) == rows


@pytest.mark.broker
def test_write_task_raises_the_first_delivery_error(broker: EmbeddedBroker) -> None:
    topic = f"sink-error-{uuid.uuid4().hex[:8]}"
    plan = sink.plan_sink({"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic,
                           "kafka.max.block.ms": "2000"},
                          _schema(value=BinaryType(), partition=IntegerType()))
    batch = pa.record_batch({"value": pa.array([b"v"]), "partition": pa.array([99], type=pa.int32())})
    with pytest.raises(Exception, match=r"partitions\[0\] is 99"):  # the topic has 4 partitions
        sink.write_task(plan, [batch], "arrow")


@pytest.mark.broker
def test_write_task_raises_when_records_are_not_acknowledged() -> None:
    """The broker dies between two tasks of one worker: the second task's records expire (delivery.timeout.ms) and
    its write() raises DeliveryError instead of returning a commit message."""
    with EmbeddedBroker() as own_broker:
        plan = sink.plan_sink({"kafka.bootstrap.servers": own_broker.bootstrap_servers, "topic": "doomed",
                               "kafka.linger.ms": "0", "kafka.request.timeout.ms": "500",
                               "kafka.delivery.timeout.ms": "1500", "kafka.max.block.ms": "1000",
                               "kafka.reconnect.backoff.max.ms": "100"},
                              _schema(value=BinaryType()))
        batch = pa.record_batch({"value": pa.array([b"v"] * 10)})
        try:
            assert sink.write_task(plan, [batch], "arrow").rows == 10  # metadata is cached from here on
            own_broker.kill()
            with pytest.raises(sink.DeliveryError, match=r"10 of 10 records .* failed delivery") as failure:
                sink.write_task(plan, [batch], "arrow")
            assert isinstance(failure.value.__cause__, KafkaTimeoutError)
        finally:
            sink.PRODUCERS.evict_idle(10**9)


# -- the producer cache -----------------------------------------------------------------------------------------


def test_cache_reuses_per_config_and_evicts_idle() -> None:
    cache = sink.ProducerCache()
    config_a = (("bootstrap.servers", "127.0.0.1:1"),)
    config_b = (("bootstrap.servers", "127.0.0.1:1"), ("linger.ms", "1"))
    try:
        first = cache.acquire(config_a, 60_000)
        cache.release(config_a)
        assert cache.acquire(config_a, 60_000) is first, "the next task reuses the producer"
        other = cache.acquire(config_b, 60_000)
        assert other is not first and len(cache) == 2
        cache.release(config_b)
        assert cache.evict_idle() == 0, "not idle long enough yet"
        far_future_s = 10**9
        assert cache.evict_idle(far_future_s) == 1, "only the unused producer is evicted; config_a is in use"
        assert other._closed and not first._closed
        cache.release(config_a)
        assert cache.evict_idle(far_future_s) == 1 and first._closed and len(cache) == 0
    finally:
        cache.close_all(0)
