"""cykafka: a Kafka client for Python (producer, consumer, admin, asyncio, Spark) with a Cython core, built as ports
and adapters (composition root here)."""

from cykafka.errors import (
    AuthenticationError,
    BatchDeliveryError,
    BrokerNotFoundError,
    BrokerResponseError,
    BufferExhaustedError,
    ConcurrentAccessError,
    ConfigError,
    CorruptRecordError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidRecordError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    MissingDependencyError,
    NetworkError,
    NoOffsetForPartitionError,
    ProducerClosedError,
    ProducerFencedError,
    ProtocolError,
    RecordTooLargeError,
    SerializationError,
    TimestampOverflowError,
    TransactionAbortableError,
    TransactionFatalError,
    TransactionStateError,
    UnsupportedVersionError,
)

from cykafka.core import BatchResult, RecordFuture, RecordMetadata  # isort: skip  (the core imports cykafka.errors)
from cykafka.producer import Producer, ProducerRecord  # isort: skip
from cykafka.transactions import ConsumerGroupMetadata, OffsetAndMetadata, TransactionInfo  # isort: skip
from cykafka.admin import (  # isort: skip
    Admin,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ListOffsetsResultInfo,
    NewTopic,
    Result,
    TopicDescription,
)
from cykafka.ports import TopicPartition  # isort: skip
from cykafka.consumer import Consumer, ConsumerRebalanceListener  # isort: skip
from cykafka.core import ConsumerRecord  # isort: skip
from cykafka import aio  # isort: skip  (AsyncProducer, AsyncConsumer: cykafka.aio)

__version__ = "0.1.0"

__all__ = [
    "Admin",
    "AuthenticationError",
    "BatchDeliveryError",
    "BatchResult",
    "BrokerNotFoundError",
    "BrokerResponseError",
    "BufferExhaustedError",
    "ClusterDescription",
    "ConcurrentAccessError",
    "ConfigEntry",
    "ConfigError",
    "ConfigResource",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "CorruptRecordError",
    "IllegalStateError",
    "InvalidArgumentError",
    "InvalidRecordError",
    "InvalidTopicError",
    "KafkaError",
    "KafkaTimeoutError",
    "ListOffsetsResultInfo",
    "MissingDependencyError",
    "NetworkError",
    "NewTopic",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "Producer",
    "ProducerClosedError",
    "ProducerFencedError",
    "ProducerRecord",
    "ProtocolError",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLargeError",
    "Result",
    "SerializationError",
    "TimestampOverflowError",
    "TopicDescription",
    "TopicPartition",
    "TransactionAbortableError",
    "TransactionFatalError",
    "TransactionInfo",
    "TransactionStateError",
    "UnsupportedVersionError",
    "__version__",
    "aio",
]
