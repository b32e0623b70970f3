"""cykafka.compat.kafka: kafka-python 3.x's API (KafkaProducer, KafkaConsumer, KafkaAdminClient, their structs and
errors) over cykafka's Producer, Consumer and Admin. Owns only the translation: kafka-python's kwargs and defaults
into Kafka's config keys (a kwarg cykafka cannot honour is refused with KafkaConfigurationError naming it), its
call shapes, its record and metadata tuples, and its error types (each a cykafka KafkaError too). No protocol work
and no per-record Python work beyond what the API shape forces: a (de)serializer call where one is configured and
one ConsumerRecord tuple per record handed out. `from cykafka.compat.kafka.errors import ...` works as
`from kafka.errors import ...` does. What differs from kafka-python and why: docs/migrating-kafka-python.md.
"""

from __future__ import annotations

from cykafka.compat.kafka import errors as errors
from cykafka.compat.kafka._config import bootstrap, kafka_config
from cykafka.compat.kafka.admin import KafkaAdminClient
from cykafka.compat.kafka.consumer import KafkaConsumer
from cykafka.compat.kafka.errors import (
    IllegalArgumentError,
    KafkaConfigurationError,
    KafkaError,
    MessageSizeTooLargeError,
)
from cykafka.compat.kafka.producer import FutureRecordMetadata, KafkaProducer
from cykafka.compat.kafka.structs import (
    ConsumerGroupMetadata,
    ConsumerRebalanceListener,
    ConsumerRecord,
    DefaultSerializer,
    Deserializer,
    JsonSerializer,
    NewPartitions,
    NewTopic,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    RecordMetadata,
    Serializer,
)
from cykafka.ports.values import TopicPartition

__all__ = [
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "DefaultSerializer",
    "Deserializer",
    "FutureRecordMetadata",
    "IllegalArgumentError",
    "JsonSerializer",
    "KafkaAdminClient",
    "KafkaConfigurationError",
    "KafkaConsumer",
    "KafkaError",
    "KafkaProducer",
    "MessageSizeTooLargeError",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "RecordMetadata",
    "Serializer",
    "TopicPartition",
    "bootstrap",
    "errors",
    "kafka_config",
]
