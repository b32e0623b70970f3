"""cykafka: a Kafka producer for Python with a Cython core, built as ports and adapters (composition root here)."""

from cykafka.errors import (
    AuthenticationError,
    BrokerNotFoundError,
    BufferExhaustedError,
    ConfigError,
    CorruptRecordError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProtocolError,
    RecordTooLargeError,
)

__version__ = "0.1.0"

__all__ = [
    "AuthenticationError",
    "BrokerNotFoundError",
    "BufferExhaustedError",
    "ConfigError",
    "CorruptRecordError",
    "KafkaError",
    "KafkaTimeoutError",
    "ProducerClosedError",
    "ProtocolError",
    "RecordTooLargeError",
    "__version__",
]
