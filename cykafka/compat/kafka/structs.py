"""kafka-python's structs and helpers (kafka.structs, the serializer classes): OffsetAndMetadata,
OffsetAndTimestamp, ConsumerGroupMetadata, RecordMetadata, ConsumerRecord, NewTopic, NewPartitions,
ConfigResource and ConfigResourceType, the rebalance listener and the (de)serializers.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from cykafka.compat.kafka.errors import IllegalArgumentError
from cykafka.ports.values import TopicPartition

# -- structs -----------------------------------------------------------------------------------------------------


class OffsetAndMetadata(NamedTuple):
    """kafka.structs.OffsetAndMetadata: the offset of the next record to read, metadata, leader epoch."""

    offset: int | None = None
    metadata: str = ""
    leader_epoch: int = -1


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: int | None


class ConsumerGroupMetadata(NamedTuple):
    group_id: str | None = None
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    state: str = "<unjoined>"


class RecordMetadata(NamedTuple):
    """What FutureRecordMetadata.get() returns (kafka-python's fields; checksum is always None, as for format v2)."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    serialized_header_size: int


class ConsumerRecord(NamedTuple):
    """A record as kafka-python's consumer hands it out, fields in its order (a tuple: built once per record)."""

    topic: str
    partition: int
    leader_epoch: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: list[tuple[str, bytes | None]]
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    serialized_header_size: int


class NewTopic:
    """kafka.admin.NewTopic (kafka-python 2.x's, deprecated but accepted by 3.x's create_topics)."""

    def __init__(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignments: Mapping[int, list[int]] | None = None,
                 topic_configs: Mapping[str, str] | None = None) -> None:
        self.name, self.num_partitions, self.replication_factor = name, num_partitions, replication_factor
        self.replica_assignments = dict(replica_assignments or {})
        self.topic_configs = dict(topic_configs or {})


class NewPartitions:
    """kafka.admin.NewPartitions: the total partition count a topic should have."""

    def __init__(self, total_count: int, new_assignments: list[list[int]] | None = None) -> None:
        self.total_count, self.new_assignments = total_count, new_assignments


class ConfigResourceType(enum.IntEnum):
    """kafka.admin.ConfigResourceType: the kinds of resource describe_configs takes (Kafka's resource type codes)."""

    TOPIC = 2
    BROKER = 4


class ConfigResource:
    """kafka.admin.ConfigResource(resource_type, name, configs=None): a ConfigResourceType or its name ("TOPIC",
    "broker"); anything else is an IllegalArgumentError (a ValueError too) naming the accepted ones, where
    kafka-python's raises a bare KeyError."""

    def __init__(self, resource_type: ConfigResourceType | str, name: str,
                 configs: Mapping[str, str | None] | None = None) -> None:
        if not isinstance(resource_type, ConfigResourceType):
            try:
                resource_type = ConfigResourceType[str(resource_type).upper()]
            except KeyError:
                raise IllegalArgumentError(f"resource_type must be a ConfigResourceType or one of "
                                 f"{', '.join(t.name for t in ConfigResourceType)}, got {resource_type!r}") from None
        self.resource_type, self.name, self.configs = resource_type, name, configs


class ConsumerRebalanceListener:
    """kafka.ConsumerRebalanceListener: subclass it and pass it to subscribe(listener=...)."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Before a rebalance takes these partitions (commit here)."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """After a rebalance, the partitions now assigned."""


class Serializer:
    """kafka.Serializer: serialize(topic, headers, data) -> bytes."""

    def serialize(self, topic: str, headers: list[tuple[str, bytes]], data: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release."""


class Deserializer:
    """kafka.Deserializer: deserialize(topic, headers, data: bytes) -> object."""

    def deserialize(self, topic: str, headers: list[tuple[str, bytes]], data: bytes | None) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release."""


class DefaultSerializer(Serializer, Deserializer):
    """kafka.DefaultSerializer: str <-> bytes in `encoding`; bytes-likes and None pass through."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, headers: list[tuple[str, bytes]], data: Any) -> Any:
        if data is None or isinstance(data, bytes | bytearray | memoryview):
            return data
        return str(data).encode(self.encoding)

    def deserialize(self, topic: str, headers: list[tuple[str, bytes]], data: bytes | None) -> Any:
        return None if data is None else bytes(data).decode(self.encoding)


class JsonSerializer(DefaultSerializer):
    """kafka.JsonSerializer: JSON text in `encoding`; None stays None."""

    def serialize(self, topic: str, headers: list[tuple[str, bytes]], data: Any) -> Any:
        return None if data is None else super().serialize(topic, headers, json.dumps(data))

    def deserialize(self, topic: str, headers: list[tuple[str, bytes]], data: bytes | None) -> Any:
        return None if data is None else json.loads(super().deserialize(topic, headers, data))


