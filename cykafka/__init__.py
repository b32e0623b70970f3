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
    ProtocolError,
    RecordTooLargeError,
    SerializationError,
    UnsupportedVersionError,
)

from cykafka.core import BatchResult, RecordFuture, RecordMetadata  # isort: skip  (the core imports cykafka.errors)
from cykafka.producer import Producer, ProducerRecord  # isort: skip

__version__ = "0.1.0"

__all__ = [
    "AuthenticationError",
    "BatchDeliveryError",
    "BatchResult",
    "BrokerNotFoundError",
    "BrokerResponseError",
    "BufferExhaustedError",
    "ConfigError",
    "CorruptRecordError",
    "InvalidRecordError",
    "InvalidTopicError",
    "KafkaError",
    "KafkaTimeoutError",
    "NetworkError",
    "Producer",
    "ProducerClosedError",
    "ProducerRecord",
    "ProtocolError",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLargeError",
    "SerializationError",
    "UnsupportedVersionError",
    "__version__",
]
