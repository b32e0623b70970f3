"""`cykafka.compat.confluent_kafka`: confluent-kafka's API (Producer, Consumer, Message, TopicPartition, KafkaError,
KafkaException, the OFFSET_* / TIMESTAMP_* constants, SerializingProducer, DeserializingConsumer; admin.AdminClient,
serialization's serdes, error's exceptions) over cykafka's own clients. Change the
import, keep the code: docs/migrating-confluent-kafka.md lists what is identical and what differs. This module only
gathers the names; each lives in the module that owns it.
"""

from cykafka.compat.confluent_kafka._consumer import Consumer
from cykafka.compat.confluent_kafka._producer import Producer
from cykafka.compat.confluent_kafka._serializing import DeserializingConsumer, SerializingProducer
from cykafka.compat.confluent_kafka._types import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
    TopicPartition,
)
from cykafka.compat.confluent_kafka.admin import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ElectionType,
    IsolationLevel,
    Node,
    TopicCollection,
    TopicPartitionInfo,
)
from cykafka.compat.confluent_kafka.error import KafkaError, KafkaException
from cykafka.ports.values import ConsumerGroupMetadata

__all__ = [
    "OFFSET_BEGINNING", "OFFSET_END", "OFFSET_INVALID", "OFFSET_STORED", "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME", "TIMESTAMP_NOT_AVAILABLE", "Consumer", "ConsumerGroupMetadata", "ConsumerGroupState",
    "ConsumerGroupTopicPartitions", "DeserializingConsumer", "ElectionType", "IsolationLevel", "KafkaError",
    "KafkaException", "Message", "Node", "Producer", "SerializingProducer", "TopicCollection", "TopicPartition",
    "TopicPartitionInfo", "libversion", "version",
]


def version() -> tuple[str, int]:
    """cykafka's version, as confluent_kafka.version() gives its own: (string, int)."""
    from importlib.metadata import version as _version

    text = _version("cykafka")
    parts = [int(p) if p.isdigit() else 0 for p in text.split(".")[:3]] + [0, 0, 0]
    return text, (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8)


libversion = version
