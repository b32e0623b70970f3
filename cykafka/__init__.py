"""cykafka: a Kafka client for Python (producer, consumer, admin, asyncio, Spark) with a Cython core, built as ports
and adapters (composition root here)."""

from typing import TYPE_CHECKING

from cykafka.errors import (
    AllBrokersDownError,
    AuthenticationError,
    AuthorizationError,
    BatchDeliveryError,
    BrokerNotFoundError,
    BrokerResponseError,
    BufferExhaustedError,
    ClusterAuthorizationError,
    ConcurrentAccessError,
    ConfigError,
    CorruptRecordError,
    GroupAuthorizationError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidRecordError,
    InvalidRecordStateError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    LogTruncationError,
    MissingDependencyError,
    NetworkError,
    NoOffsetForPartitionError,
    ProducerClosedError,
    ProducerFencedError,
    ProtocolError,
    RecordDeserializationError,
    RecordPurgedError,
    RecordTooLargeError,
    SerializationError,
    ShareGroupsUnsupportedError,
    TimestampOverflowError,
    TopicAuthorizationError,
    TransactionAbortableError,
    TransactionalIdAuthorizationError,
    TransactionFatalError,
    TransactionStateError,
    UnsupportedVersionError,
)
from cykafka.lazy import lazy_names

# The clients' names load on first use (PEP 562): a process that needs only the consumer (a Spark stream's planner, a
# task's worker) does not import the producer, the admin client or asyncio. `_HOMES` is the table; the imports below
# say the same to mypy (tests/test_typing.py checks they agree).
if TYPE_CHECKING:
    from cykafka import aio
    from cykafka.acl import (
        AccessControlEntry,
        AccessControlEntryFilter,
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        FilterResult,
        PatternType,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )
    from cykafka.admin import (
        Admin,
        ClusterDescription,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        TopicDescription,
    )
    from cykafka.consumer import (
        Consumer,
        ConsumerRebalanceListener,
    )
    from cykafka.core import (
        BatchResult,
        ConsumerRecord,
        RecordFuture,
        RecordMetadata,
    )
    from cykafka.ports.values import (
        ConsumerGroupMetadata,
        ListOffsetsResultInfo,
        OffsetAndMetadata,
        Result,
        TopicPartition,
        TransactionInfo,
    )
    from cykafka.producer import (
        Producer,
        ProducerRecord,
    )
    from cykafka.scram import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialsDescription,
        UserScramCredentialUpsertion,
    )
    from cykafka.share_consumer import (
        AcknowledgeType,
        ShareConsumer,
        ShareRecord,
    )

_HOMES: dict[str, str] = {name: module for module, names in (  # name -> the module it loads from
    ("cykafka.core", ("BatchResult", "ConsumerRecord", "RecordFuture", "RecordMetadata")),
    ("cykafka.producer", ("Producer", "ProducerRecord")),
    ("cykafka.admin", ("Admin", "ClusterDescription", "ConfigEntry", "ConfigResource", "NewPartitions", "NewTopic",
                       "TopicDescription")),
    ("cykafka.acl", ("AccessControlEntry", "AccessControlEntryFilter", "AclBinding", "AclBindingFilter",
                     "AclOperation", "AclPermissionType", "FilterResult", "PatternType", "ResourcePattern",
                     "ResourcePatternFilter", "ResourceType")),
    ("cykafka.ports.values", ("ConsumerGroupMetadata", "ListOffsetsResultInfo", "OffsetAndMetadata", "Result",
                              "TopicPartition", "TransactionInfo")),
    ("cykafka.consumer", ("Consumer", "ConsumerRebalanceListener")),
    ("cykafka.share_consumer", ("AcknowledgeType", "ShareConsumer", "ShareRecord")),
    ("cykafka.scram", ("ScramCredentialInfo", "ScramMechanism", "UserScramCredentialDeletion",
                       "UserScramCredentialUpsertion", "UserScramCredentialsDescription")),
) for name in names}


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())


__version__ = "0.1.0"

__all__ = [
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AcknowledgeType",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "Admin",
    "AllBrokersDownError",
    "AuthenticationError",
    "AuthorizationError",
    "BatchDeliveryError",
    "BatchResult",
    "BrokerNotFoundError",
    "BrokerResponseError",
    "BufferExhaustedError",
    "ClusterAuthorizationError",
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
    "FilterResult",
    "GroupAuthorizationError",
    "IllegalStateError",
    "InvalidArgumentError",
    "InvalidRecordError",
    "InvalidRecordStateError",
    "InvalidTopicError",
    "KafkaError",
    "KafkaTimeoutError",
    "ListOffsetsResultInfo",
    "LogTruncationError",
    "MissingDependencyError",
    "NetworkError",
    "NewPartitions",
    "NewTopic",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "PatternType",
    "Producer",
    "ProducerClosedError",
    "ProducerFencedError",
    "ProducerRecord",
    "ProtocolError",
    "RecordDeserializationError",
    "RecordFuture",
    "RecordMetadata",
    "RecordPurgedError",
    "RecordTooLargeError",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "Result",
    "ScramCredentialInfo",
    "ScramMechanism",
    "SerializationError",
    "ShareConsumer",
    "ShareGroupsUnsupportedError",
    "ShareRecord",
    "TimestampOverflowError",
    "TopicAuthorizationError",
    "TopicDescription",
    "TopicPartition",
    "TransactionAbortableError",
    "TransactionFatalError",
    "TransactionInfo",
    "TransactionStateError",
    "TransactionalIdAuthorizationError",
    "UnsupportedVersionError",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
    "__version__",
    "aio",
]
