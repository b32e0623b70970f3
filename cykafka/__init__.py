"""cykafka: a Kafka producer for Python with a Cython core, built as ports and adapters (composition root here)."""

from cykafka.errors import (
    AuthenticationError,
    BatchDeliveryError,
    BrokerNotFoundError,
    BrokerResponseError,
    BufferExhaustedError,
    ConfigError,
    CorruptRecordError,
    InvalidRecordError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    NetworkError,
    ProducerClosedError,
    ProducerFencedError,
    ProtocolError,
    RecordTooLargeError,
    SerializationError,
    TransactionAbortableError,
    TransactionFatalError,
    TransactionStateError,
    UnsupportedVersionError,
)

from cykafka.core import BatchResult, RecordFuture, RecordMetadata  # isort: skip  (the core imports cykafka.errors)
from cykafka.producer import Producer, ProducerRecord  # isort: skip
from cykafka.transactions import ConsumerGroupMetadata, OffsetAndMetadata, TransactionInfo  # isort: skip

__version__ = "0.1.0"

__all__ = [
    "AuthenticationError",
    "BatchDeliveryError",
    "BatchResult",
    "BrokerNotFoundError",
    "BrokerResponseError",
    "BufferExhaustedError",
    "ConfigError",
    "ConsumerGroupMetadata",
    "CorruptRecordError",
    "InvalidRecordError",
    "InvalidTopicError",
    "KafkaError",
    "KafkaTimeoutError",
    "NetworkError",
    "OffsetAndMetadata",
    "Producer",
    "ProducerClosedError",
    "ProducerFencedError",
    "ProducerRecord",
    "ProtocolError",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLargeError",
    "SerializationError",
    "TransactionAbortableError",
    "TransactionFatalError",
    "TransactionInfo",
    "TransactionStateError",
    "UnsupportedVersionError",
    "__version__",
]
