"""Serializers and deserializers (cykafka/serialization.py, docs/serialization.md): the call shape, decided once by
signature (one argument, or confluent-kafka's (obj, SerializationContext)); the built-ins both ways; a context
serializer's headers sent; key.deserializer / value.deserializer on Consumer.poll, AsyncConsumer and the CLI; a
deserializer that raises: RecordDeserializationError naming the record, the position left at it (seek past it);
poll_batch refusing deserializers."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from cykafka import (
    ConfigError,
    Consumer,
    ConsumerRecord,
    Producer,
    RecordDeserializationError,
    SerializationError,
    TopicPartition,
)
from cykafka.aio import AsyncConsumer
from cykafka.serialization import (
    Deserializers,
    MessageField,
    SerializationContext,
    make_deserializer,
    make_serializer,
    takes_context,
)

confluent_serialization = pytest.importorskip("confluent_kafka.serialization")
POLLS = 60  # bound of every poll loop (each poll waits at most 0.5 s)


def _topic() -> str:
    return f"serdes-{uuid.uuid4().hex[:10]}"


def _consumer(bootstrap: str, **config: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                     "default.api.timeout.ms": 30000, **config})


def _poll_until(consumer: Consumer, count: int) -> list[ConsumerRecord]:
    records: list[ConsumerRecord] = []
    for _ in range(POLLS):
        if len(records) >= count:
            break
        records += consumer.poll(0.5)
    return records


def _write(bootstrap: str, topic: str, values: list[bytes | None], partition: int = 0) -> None:
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer:
        for i, value in enumerate(values):
            producer.send(topic, value, key=b"k%d" % i, partition=partition)
        assert producer.flush(30) == 0


# -- the call shape ---------------------------------------------------------------------------------------------


def test_the_call_shape_is_decided_by_signature_once() -> None:
    def one(value: Any) -> bytes:
        return b""

    def two(value: Any, ctx: Any) -> bytes:
        return b""

    def defaulted_ctx(value: Any, ctx: Any = None) -> bytes:
        return b""

    def defaulted_other(value: Any, encoding: str = "utf-8") -> bytes:
        return b""

    assert [takes_context(f, "value.serializer") for f in (one, two, defaulted_ctx, defaulted_other, str.encode,
                                                           json.dumps, bytes)] == [
        False, True, True, False, False, False, False]
    # confluent-kafka's Serializer / Deserializer: __call__(self, obj, ctx=None)
    assert takes_context(confluent_serialization.StringSerializer(), "value.serializer")
    assert takes_context(confluent_serialization.IntegerDeserializer(), "value.deserializer")

    def three(value: Any, ctx: Any, other: Any) -> bytes:
        return b""

    with pytest.raises(ConfigError, match=r"value\.serializer must take \(data\) or \(data, ctx"):
        make_serializer(three, "value")
    with pytest.raises(ConfigError, match=r"key\.deserializer must take"):
        make_deserializer(three, "key")


def test_serializers_see_the_context_and_one_argument_ones_still_work() -> None:
    seen: list[tuple[str, str, Any]] = []

    def with_context(value: Any, ctx: SerializationContext) -> bytes:
        seen.append((ctx.topic, ctx.field, ctx.headers))
        return value.encode()

    headers = [("h", b"1")]
    ctx = SerializationContext("t", MessageField.VALUE, headers)
    assert make_serializer(with_context, "value")("v", ctx) == b"v"
    assert seen == [("t", "value", headers)] and ctx.field == confluent_serialization.MessageField.VALUE
    assert make_serializer(str.encode, "value")("é", ctx) == "é".encode()
    assert make_serializer(confluent_serialization.StringSerializer(), "key")("k", ctx) == b"k"
    with pytest.raises(SerializationError, match=r"value\.serializer returned int, expected bytes or None"):
        make_serializer(lambda v: 1, "value")("v", ctx)


def test_builtin_deserializers_read_what_the_builtin_serializers_write() -> None:
    ctx = SerializationContext("t", MessageField.VALUE, [])
    for name, value in (("str", "héllo"), ("int", -(2**63)), ("int", 2**63 - 1), ("json", {"a": [1, None]})):
        data = make_serializer(name, "value")(value, ctx)
        deserializer = make_deserializer(name, "value")
        assert deserializer is not None and deserializer(bytes(data or b""), ctx) == value
    assert make_deserializer("bytes", "value") is None and make_deserializer(None, "value") is None
    assert Deserializers.of(None, "bytes") is None
    with pytest.raises(SerializationError, match=r"'int' deserializer takes 8 bytes .* got 3"):
        make_deserializer("int", "value")(b"abc", ctx)  # type: ignore[misc]
    with pytest.raises(SerializationError, match=r"'str' deserializer takes UTF-8"):
        make_deserializer("str", "value")(b"\xff", ctx)  # type: ignore[misc]


@pytest.mark.parametrize("key", ["key.deserializer", "value.deserializer"])
def test_a_bad_deserializer_setting_is_refused_naming_the_key(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"{key} must be a callable .* or one of bytes, str, int, json; got 'avro'"):
        Consumer({"bootstrap.servers": "127.0.0.1:1", key: "avro"})


def test_a_failing_deserializer_names_the_record_and_field() -> None:
    def bad(data: bytes) -> Any:
        raise ValueError("not mine")

    record = ConsumerRecord("t", 3, 17, 0, 0, b"k", b"v", [("h", b"1")])
    deserializers = Deserializers.of("str", bad)
    assert deserializers is not None
    out, error = deserializers.records([ConsumerRecord("t", 3, 16, 0, 0, b"k", None), record])
    assert [(r.offset, r.key, r.value) for r in out] == [(16, "k", None)]  # a null value is never deserialized
    assert isinstance(error, RecordDeserializationError)
    assert (error.topic, error.partition, error.offset, error.field) == ("t", 3, 17, "value")
    assert isinstance(error.__cause__, ValueError) and "t [3] at offset 17" in str(error)


# -- against the brokers ----------------------------------------------------------------------------------------


def test_producer_and_consumer_pass_the_context_and_the_serializers_headers(broker: Any) -> None:
    """A context serializer appends a header (as confluent's serdes do with a schema id in headers): it is sent;
    the deserializers see topic, field and the record's headers."""
    topic = _topic()

    def value_serializer(value: Any, ctx: SerializationContext) -> bytes:
        assert (ctx.topic, ctx.field) == (topic, MessageField.VALUE)
        assert ctx.headers is not None
        ctx.headers.append(("serialized-by", b"cykafka"))
        return json.dumps(value).encode()

    seen: list[tuple[str, str, list[Any]]] = []

    def value_deserializer(data: bytes, ctx: SerializationContext) -> Any:
        seen.append((ctx.topic, str(ctx.field), list(ctx.headers or [])))
        return json.loads(data)

    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0,
                   "key.serializer": confluent_serialization.StringSerializer(),
                   "value.serializer": value_serializer}) as producer:
        given = {"own": b"1"}
        producer.send(topic, {"n": 1}, key="k1", partition=0, headers=given)
        producer.send(topic, {"n": 2}, key="k2", partition=0)
        assert producer.flush(30) == 0
        assert given == {"own": b"1"}  # the caller's headers are left as given
    with _consumer(broker.bootstrap_servers, **{"key.deserializer": confluent_serialization.StringDeserializer(),
                                                "value.deserializer": value_deserializer}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        records = _poll_until(consumer, 2)
    assert [(r.key, r.value, r.headers) for r in records] == [
        ("k1", {"n": 1}, [("own", b"1"), ("serialized-by", b"cykafka")]),
        ("k2", {"n": 2}, [("serialized-by", b"cykafka")])]
    assert seen == [(topic, "value", [("own", b"1"), ("serialized-by", b"cykafka")]),
                    (topic, "value", [("serialized-by", b"cykafka")])]


def test_a_record_that_fails_to_deserialize_stops_the_position_at_it_until_sought_past(broker: Any) -> None:
    """Java's RecordDeserializationException: the records before it are returned, the next poll raises naming
    topic/partition/offset, the position stays at it (poll raises again), seek past it goes on."""
    topic = _topic()
    _write(broker.bootstrap_servers, topic, [b"0", b"1", b"oops", b"3", None])
    tp = TopicPartition(topic, 0)
    with _consumer(broker.bootstrap_servers, **{"value.deserializer": lambda data: int(data)}) as consumer:
        consumer.assign([tp])
        before: list[ConsumerRecord] = []
        error = None
        for _ in range(POLLS):
            try:
                before += consumer.poll(0.5)
            except RecordDeserializationError as e:
                error = e
                break
        assert [r.value for r in before] == [0, 1]
        assert error is not None and (error.topic, error.partition, error.offset, error.field) == (topic, 0, 2,
                                                                                                  "value")
        assert isinstance(error.__cause__, ValueError)
        assert consumer.position(tp) == 2
        with pytest.raises(RecordDeserializationError, match=rf"{topic} \[0\] at offset 2"):
            for _ in range(POLLS):
                consumer.poll(0.5)
        assert consumer.position(tp) == 2
        consumer.seek(tp, 3)
        after = _poll_until(consumer, 2)
        assert [(r.offset, r.value) for r in after] == [(3, 3), (4, None)]
        assert consumer.position(tp) == 5


def test_poll_batch_refuses_deserializers_naming_the_key(broker: Any) -> None:
    with _consumer(broker.bootstrap_servers, **{"key.deserializer": "str"}) as consumer:
        consumer.assign([TopicPartition(_topic(), 0)])
        with pytest.raises(ConfigError, match=r"poll_batch returns the keys and values as fetched.*key\.deserializer "
                                              r"is set \('str'\): use poll\(\)"):
            consumer.poll_batch(0.1)
    with _consumer(broker.bootstrap_servers, **{"key.deserializer": "bytes"}) as consumer:
        consumer.assign([TopicPartition(_topic(), 0)])
        assert consumer.poll_batch(0.1).num_rows == 0  # "bytes" is no deserializer


@pytest.mark.asyncio
async def test_async_consumer_deserializes_and_raises_at_a_bad_record(broker: Any) -> None:
    topic = _topic()
    _write(broker.bootstrap_servers, topic, [b'{"a": 1}', b"{", b'{"a": 3}'])
    tp = TopicPartition(topic, 0)
    config = {"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest",
              "value.deserializer": "json", "key.deserializer": "str"}
    async with AsyncConsumer(config) as consumer:
        await consumer.assign([tp])
        got: list[Any] = []
        error = None
        for _ in range(POLLS):
            try:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got += records
            except RecordDeserializationError as e:
                error = e
                break
        assert [(r.key, r.value) for r in got] == [("k0", {"a": 1})]
        assert error is not None and error.offset == 1 and await consumer.position(tp) == 1
        with pytest.raises(ConfigError, match=r"key\.deserializer is set \(.str.\)"):
            await consumer.poll_batch(0.1)
        await consumer.seek(tp, 2)
        record = await consumer.getone()
        assert (record.offset, record.key, record.value) == (2, "k2", {"a": 3})
