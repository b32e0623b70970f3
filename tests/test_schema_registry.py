"""Schema Registry through cykafka with confluent-kafka's own serdes (docs/serialization.md): Avro, Protobuf and JSON
Schema records round-trip through cykafka's Producer and Consumer (AvroSerializer / ProtobufSerializer /
JSONSerializer as value.serializer, their deserializers as value.deserializer), against confluent-kafka's mock://
registry (no registry server installs here) on both brokers; the bytes are Confluent's wire format and read back by
confluent-kafka's DeserializingConsumer; bytes written by confluent-kafka's SerializingProducer with the same serdes
read back by cykafka; the schema id sent in a header (header_schema_id_serializer) through the serializer's
context. The Protobuf message class is built here from descriptors (no protoc needed)."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from cykafka import Consumer, ConsumerRecord, Producer, TopicPartition

pytest.importorskip("confluent_kafka.schema_registry.avro", reason="needs confluent-kafka[avro,protobuf,json]")
pytest.importorskip("google.protobuf")
import confluent_kafka
from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import StringDeserializer, StringSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

POLLS = 60  # bound of every poll loop (each poll waits at most 0.5 s)
AVRO_USER = """{"type": "record", "name": "User", "namespace": "cykafka.test",
 "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
            {"name": "email", "type": ["null", "string"], "default": null}]}"""
JSON_USER = """{"$schema": "http://json-schema.org/draft-07/schema#", "title": "User", "type": "object",
 "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": ["string", "null"]}},
 "required": ["name", "age"]}"""
USERS = [{"name": "Ada Lovelace", "age": 36, "email": None}, {"name": "Alan Turing", "age": 41,
                                                               "email": "alan@example.com"},
         {"name": "Grace Hopper", "age": 85, "email": "grace@example.com"}]


def _protobuf_user() -> Any:
    """A generated-message class for `message User {string name = 1; int32 age = 2; string email = 3;}`, from a
    FileDescriptorProto in a pool of its own (what protoc's _pb2 module would hold)."""
    proto = descriptor_pb2.FileDescriptorProto(name="cykafka_test_user.proto", package="cykafka.test",
                                               syntax="proto3")
    message = proto.message_type.add(name="User")
    for number, (name, kind) in enumerate((("name", descriptor_pb2.FieldDescriptorProto.TYPE_STRING),
                                           ("age", descriptor_pb2.FieldDescriptorProto.TYPE_INT32),
                                           ("email", descriptor_pb2.FieldDescriptorProto.TYPE_STRING)), start=1):
        message.field.add(name=name, number=number, type=kind,
                          label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("cykafka.test.User"))


ProtoUser = _protobuf_user()
PROTOBUF_CONF = {"use.deprecated.format": False}


def _serdes(kind: str, registry: Any) -> tuple[Any, Any, list[Any]]:
    """(serializer, deserializer, the values to send) of one format; a deserialized value equals its value."""
    if kind == "avro":
        return AvroSerializer(registry, AVRO_USER), AvroDeserializer(registry), USERS
    if kind == "protobuf":
        return (ProtobufSerializer(ProtoUser, registry, conf=PROTOBUF_CONF),
                ProtobufDeserializer(ProtoUser, conf=PROTOBUF_CONF),
                [ProtoUser(name=u["name"], age=u["age"], email=u["email"] or "") for u in USERS])
    assert kind == "json"
    return JSONSerializer(JSON_USER, registry), JSONDeserializer(JSON_USER, schema_registry_client=registry), USERS


def _registry() -> Any:
    return SchemaRegistryClient.new_client({"url": "mock://"})


def _topic(kind: str) -> str:
    return f"sr-{kind}-{uuid.uuid4().hex[:10]}"


def _read(bootstrap: str, topic: str, count: int, **config: Any) -> list[ConsumerRecord]:
    records: list[ConsumerRecord] = []
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", **config}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        for _ in range(POLLS):
            if len(records) >= count:
                break
            records += consumer.poll(0.5)
    return records


def _confluent_read(bootstrap: str, topic: str, count: int, deserializer: Any) -> list[tuple[Any, Any]]:
    consumer = confluent_kafka.DeserializingConsumer({
        "bootstrap.servers": bootstrap, "group.id": f"sr-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "key.deserializer": StringDeserializer(), "value.deserializer": deserializer})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        got: list[tuple[Any, Any]] = []
        for _ in range(POLLS):
            if len(got) >= count:
                break
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                got.append((message.key(), message.value()))
        return got
    finally:
        consumer.close()


FORMATS = ["avro", "protobuf", "json"]


@pytest.mark.parametrize("kind", FORMATS)
def test_records_round_trip_through_cykafka_with_confluent_serdes(broker: Any, kind: str) -> None:
    registry = _registry()
    serializer, deserializer, values = _serdes(kind, registry)
    topic = _topic(kind)
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0,
                   "key.serializer": StringSerializer(), "value.serializer": serializer}) as producer:
        for i, value in enumerate(values):
            producer.send(topic, value, key=f"user-{i}", partition=0)
        producer.send(topic, None, key="gone", partition=0)  # a tombstone stays None both ways
        assert producer.flush(30) == 0
    count = len(values) + 1
    records = _read(broker.bootstrap_servers, topic, count, **{"key.deserializer": StringDeserializer(),
                                                               "value.deserializer": deserializer})
    assert [(r.key, r.value) for r in records] == [
        *((f"user-{i}", value) for i, value in enumerate(values)), ("gone", None)]
    # Confluent's wire format: magic byte 0, the registered schema id (big-endian), the body
    schema_id = registry.get_latest_version(f"{topic}-value").schema_id
    raw = _read(broker.bootstrap_servers, topic, count)
    assert {bytes(r.value[:5]) for r in raw[:-1]} == {struct.pack(">bI", 0, schema_id)}
    assert registry.get_subjects() == [f"{topic}-value"]
    # and confluent-kafka's own consumer reads what cykafka wrote
    assert _confluent_read(broker.bootstrap_servers, topic, count, deserializer) == [(r.key, r.value)
                                                                                     for r in records]


@pytest.mark.parametrize("kind", FORMATS)
def test_records_written_by_confluent_kafka_with_its_serdes_are_read_by_cykafka(broker: Any, kind: str) -> None:
    registry = _registry()
    serializer, deserializer, values = _serdes(kind, registry)
    topic = _topic(kind)
    producer = confluent_kafka.SerializingProducer({
        "bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, "key.serializer": StringSerializer(),
        "value.serializer": serializer})
    failures: list[Any] = []
    for i, value in enumerate(values):
        producer.produce(topic, key=f"user-{i}", value=value, partition=0,
                         on_delivery=lambda err, _msg: failures.append(err) if err else None)
    assert producer.flush(30) == 0 and failures == []
    records = _read(broker.bootstrap_servers, topic, len(values), **{"key.deserializer": StringDeserializer(),
                                                                     "value.deserializer": deserializer})
    assert [(r.key, r.value) for r in records] == [(f"user-{i}", value) for i, value in enumerate(values)]


def test_the_schema_id_in_a_header_goes_through_the_serializers_context(broker: Any) -> None:
    """header_schema_id_serializer appends __value_schema_id to the context's headers: cykafka sends it (the
    payload then has no prefix), next to the record's own headers, and AvroDeserializer finds it there."""
    registry = _registry()
    topic = _topic("avro-header")
    serializer = AvroSerializer(registry, AVRO_USER, conf={"schema.id.serializer": header_schema_id_serializer})
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0,
                   "value.serializer": serializer}) as producer:
        own = [("trace", b"t1")]
        producer.send(topic, USERS[1], partition=0, headers=own)
        assert producer.flush(30) == 0
        assert own == [("trace", b"t1")]
    (raw,) = _read(broker.bootstrap_servers, topic, 1)
    assert [name for name, _ in raw.headers] == ["trace", "__value_schema_id"]
    assert raw.value[:1] != b"\x00"  # no magic-byte prefix: the id is in the header
    guid = registry.get_latest_version(f"{topic}-value").guid
    assert uuid.UUID(bytes=raw.headers[1][1][1:]) == uuid.UUID(guid)
    deserialize: Callable[..., Any] = AvroDeserializer(registry)
    (record,) = _read(broker.bootstrap_servers, topic, 1, **{"value.deserializer": deserialize})
    assert record.value == USERS[1]
