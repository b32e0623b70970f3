"""confluent-kafka's error values over cykafka's typed errors: owns `KafkaError` (a value with librdkafka's codes:
its negative local ones, Kafka's broker codes under librdkafka's names), `KafkaException` (args[0] is the KafkaError;
also a cykafka.KafkaError, so either `except` catches it) and its subclasses of confluent_kafka.error (ConsumeError,
ProduceError, the (de)serialization errors), and the one table that maps cykafka's error classes onto
librdkafka's codes (`ERROR_CODES_BY_CLASS`, read by `error_from`).
"""

from __future__ import annotations

import builtins
from typing import Any

from cykafka import errors
from cykafka.protocol.error_codes import ErrorCode


class KafkaError:
    """An error value as confluent-kafka's: `code()`, `name()`, `str()`, `retriable()`, `fatal()`,
    `txn_requires_abort()`; equal to another with the same code, and to the code itself."""

    __slots__ = ("_code", "_fatal", "_reason", "_retriable", "_txn_requires_abort")

    # librdkafka's own (negative) codes
    _BAD_MSG = -199
    _BAD_COMPRESSION = -198
    _DESTROY = -197
    _FAIL = -196
    _TRANSPORT = -195
    _CRIT_SYS_RESOURCE = -194
    _RESOLVE = -193
    _MSG_TIMED_OUT = -192
    _PARTITION_EOF = -191
    _UNKNOWN_PARTITION = -190
    _FS = -189
    _UNKNOWN_TOPIC = -188
    _ALL_BROKERS_DOWN = -187
    _INVALID_ARG = -186
    _TIMED_OUT = -185
    _QUEUE_FULL = -184
    _ISR_INSUFF = -183
    _NODE_UPDATE = -182
    _SSL = -181
    _WAIT_COORD = -180
    _UNKNOWN_GROUP = -179
    _IN_PROGRESS = -178
    _PREV_IN_PROGRESS = -177
    _EXISTING_SUBSCRIPTION = -176
    _ASSIGN_PARTITIONS = -175
    _REVOKE_PARTITIONS = -174
    _CONFLICT = -173
    _STATE = -172
    _UNKNOWN_PROTOCOL = -171
    _NOT_IMPLEMENTED = -170
    _AUTHENTICATION = -169
    _NO_OFFSET = -168
    _OUTDATED = -167
    _TIMED_OUT_QUEUE = -166
    _UNSUPPORTED_FEATURE = -165
    _WAIT_CACHE = -164
    _INTR = -163
    _KEY_SERIALIZATION = -162
    _VALUE_SERIALIZATION = -161
    _KEY_DESERIALIZATION = -160
    _VALUE_DESERIALIZATION = -159
    _PARTIAL = -158
    _READ_ONLY = -157
    _NOENT = -156
    _UNDERFLOW = -155
    _INVALID_TYPE = -154
    _RETRY = -153
    _PURGE_QUEUE = -152
    _PURGE_INFLIGHT = -151
    _FATAL = -150
    _INCONSISTENT = -149
    _GAPLESS_GUARANTEE = -148
    _MAX_POLL_EXCEEDED = -147
    _UNKNOWN_BROKER = -146
    _NOT_CONFIGURED = -145
    _FENCED = -144
    _APPLICATION = -143
    _ASSIGNMENT_LOST = -142
    _NOOP = -141
    _AUTO_OFFSET_RESET = -140
    _LOG_TRUNCATION = -139
    _INVALID_DIFFERENT_RECORD = -138
    _DESTROY_BROKER = -137
    # the broker's: Kafka's codes (protocol/error_codes.py), under librdkafka's names
    UNKNOWN = ErrorCode.UNKNOWN_SERVER_ERROR
    NO_ERROR = ErrorCode.NONE
    OFFSET_OUT_OF_RANGE = ErrorCode.OFFSET_OUT_OF_RANGE
    INVALID_MSG = ErrorCode.CORRUPT_MESSAGE
    UNKNOWN_TOPIC_OR_PART = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    INVALID_MSG_SIZE = ErrorCode.INVALID_FETCH_SIZE
    LEADER_NOT_AVAILABLE = ErrorCode.LEADER_NOT_AVAILABLE
    NOT_LEADER_FOR_PARTITION = ErrorCode.NOT_LEADER_OR_FOLLOWER
    REQUEST_TIMED_OUT = ErrorCode.REQUEST_TIMED_OUT
    BROKER_NOT_AVAILABLE = ErrorCode.BROKER_NOT_AVAILABLE
    REPLICA_NOT_AVAILABLE = ErrorCode.REPLICA_NOT_AVAILABLE
    MSG_SIZE_TOO_LARGE = ErrorCode.MESSAGE_TOO_LARGE
    STALE_CTRL_EPOCH = ErrorCode.STALE_CONTROLLER_EPOCH
    OFFSET_METADATA_TOO_LARGE = ErrorCode.OFFSET_METADATA_TOO_LARGE
    NETWORK_EXCEPTION = ErrorCode.NETWORK_EXCEPTION
    COORDINATOR_LOAD_IN_PROGRESS = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    COORDINATOR_NOT_AVAILABLE = ErrorCode.COORDINATOR_NOT_AVAILABLE
    NOT_COORDINATOR = ErrorCode.NOT_COORDINATOR
    TOPIC_EXCEPTION = ErrorCode.INVALID_TOPIC_EXCEPTION
    RECORD_LIST_TOO_LARGE = ErrorCode.RECORD_LIST_TOO_LARGE
    NOT_ENOUGH_REPLICAS = ErrorCode.NOT_ENOUGH_REPLICAS
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    INVALID_REQUIRED_ACKS = ErrorCode.INVALID_REQUIRED_ACKS
    ILLEGAL_GENERATION = ErrorCode.ILLEGAL_GENERATION
    INCONSISTENT_GROUP_PROTOCOL = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    INVALID_GROUP_ID = ErrorCode.INVALID_GROUP_ID
    UNKNOWN_MEMBER_ID = ErrorCode.UNKNOWN_MEMBER_ID
    INVALID_SESSION_TIMEOUT = ErrorCode.INVALID_SESSION_TIMEOUT
    REBALANCE_IN_PROGRESS = ErrorCode.REBALANCE_IN_PROGRESS
    INVALID_COMMIT_OFFSET_SIZE = ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    TOPIC_AUTHORIZATION_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    GROUP_AUTHORIZATION_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED
    CLUSTER_AUTHORIZATION_FAILED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    INVALID_TIMESTAMP = ErrorCode.INVALID_TIMESTAMP
    UNSUPPORTED_SASL_MECHANISM = ErrorCode.UNSUPPORTED_SASL_MECHANISM
    ILLEGAL_SASL_STATE = ErrorCode.ILLEGAL_SASL_STATE
    UNSUPPORTED_VERSION = ErrorCode.UNSUPPORTED_VERSION
    TOPIC_ALREADY_EXISTS = ErrorCode.TOPIC_ALREADY_EXISTS
    INVALID_PARTITIONS = ErrorCode.INVALID_PARTITIONS
    INVALID_REPLICATION_FACTOR = ErrorCode.INVALID_REPLICATION_FACTOR
    INVALID_REPLICA_ASSIGNMENT = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    INVALID_CONFIG = ErrorCode.INVALID_CONFIG
    NOT_CONTROLLER = ErrorCode.NOT_CONTROLLER
    INVALID_REQUEST = ErrorCode.INVALID_REQUEST
    UNSUPPORTED_FOR_MESSAGE_FORMAT = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
    POLICY_VIOLATION = ErrorCode.POLICY_VIOLATION
    OUT_OF_ORDER_SEQUENCE_NUMBER = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    DUPLICATE_SEQUENCE_NUMBER = ErrorCode.DUPLICATE_SEQUENCE_NUMBER
    INVALID_PRODUCER_EPOCH = ErrorCode.INVALID_PRODUCER_EPOCH
    INVALID_TXN_STATE = ErrorCode.INVALID_TXN_STATE
    INVALID_PRODUCER_ID_MAPPING = ErrorCode.INVALID_PRODUCER_ID_MAPPING
    INVALID_TRANSACTION_TIMEOUT = ErrorCode.INVALID_TRANSACTION_TIMEOUT
    CONCURRENT_TRANSACTIONS = ErrorCode.CONCURRENT_TRANSACTIONS
    TRANSACTION_COORDINATOR_FENCED = ErrorCode.TRANSACTION_COORDINATOR_FENCED
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    SECURITY_DISABLED = ErrorCode.SECURITY_DISABLED
    OPERATION_NOT_ATTEMPTED = ErrorCode.OPERATION_NOT_ATTEMPTED
    KAFKA_STORAGE_ERROR = ErrorCode.KAFKA_STORAGE_ERROR
    LOG_DIR_NOT_FOUND = ErrorCode.LOG_DIR_NOT_FOUND
    SASL_AUTHENTICATION_FAILED = ErrorCode.SASL_AUTHENTICATION_FAILED
    UNKNOWN_PRODUCER_ID = ErrorCode.UNKNOWN_PRODUCER_ID
    REASSIGNMENT_IN_PROGRESS = ErrorCode.REASSIGNMENT_IN_PROGRESS
    DELEGATION_TOKEN_AUTH_DISABLED = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    DELEGATION_TOKEN_NOT_FOUND = ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    DELEGATION_TOKEN_OWNER_MISMATCH = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    DELEGATION_TOKEN_EXPIRED = ErrorCode.DELEGATION_TOKEN_EXPIRED
    INVALID_PRINCIPAL_TYPE = ErrorCode.INVALID_PRINCIPAL_TYPE
    NON_EMPTY_GROUP = ErrorCode.NON_EMPTY_GROUP
    GROUP_ID_NOT_FOUND = ErrorCode.GROUP_ID_NOT_FOUND
    FETCH_SESSION_ID_NOT_FOUND = ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    INVALID_FETCH_SESSION_EPOCH = ErrorCode.INVALID_FETCH_SESSION_EPOCH
    LISTENER_NOT_FOUND = ErrorCode.LISTENER_NOT_FOUND
    TOPIC_DELETION_DISABLED = ErrorCode.TOPIC_DELETION_DISABLED
    FENCED_LEADER_EPOCH = ErrorCode.FENCED_LEADER_EPOCH
    UNKNOWN_LEADER_EPOCH = ErrorCode.UNKNOWN_LEADER_EPOCH
    UNSUPPORTED_COMPRESSION_TYPE = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    STALE_BROKER_EPOCH = ErrorCode.STALE_BROKER_EPOCH
    OFFSET_NOT_AVAILABLE = ErrorCode.OFFSET_NOT_AVAILABLE
    MEMBER_ID_REQUIRED = ErrorCode.MEMBER_ID_REQUIRED
    PREFERRED_LEADER_NOT_AVAILABLE = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    GROUP_MAX_SIZE_REACHED = ErrorCode.GROUP_MAX_SIZE_REACHED
    FENCED_INSTANCE_ID = ErrorCode.FENCED_INSTANCE_ID
    ELIGIBLE_LEADERS_NOT_AVAILABLE = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    ELECTION_NOT_NEEDED = ErrorCode.ELECTION_NOT_NEEDED
    NO_REASSIGNMENT_IN_PROGRESS = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    GROUP_SUBSCRIBED_TO_TOPIC = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    INVALID_RECORD = ErrorCode.INVALID_RECORD
    UNSTABLE_OFFSET_COMMIT = ErrorCode.UNSTABLE_OFFSET_COMMIT
    THROTTLING_QUOTA_EXCEEDED = ErrorCode.THROTTLING_QUOTA_EXCEEDED
    PRODUCER_FENCED = ErrorCode.PRODUCER_FENCED
    RESOURCE_NOT_FOUND = ErrorCode.RESOURCE_NOT_FOUND
    DUPLICATE_RESOURCE = ErrorCode.DUPLICATE_RESOURCE
    UNACCEPTABLE_CREDENTIAL = ErrorCode.UNACCEPTABLE_CREDENTIAL
    INCONSISTENT_VOTER_SET = ErrorCode.INCONSISTENT_VOTER_SET
    INVALID_UPDATE_VERSION = ErrorCode.INVALID_UPDATE_VERSION
    FEATURE_UPDATE_FAILED = ErrorCode.FEATURE_UPDATE_FAILED
    PRINCIPAL_DESERIALIZATION_FAILURE = ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE
    UNKNOWN_TOPIC_ID = ErrorCode.UNKNOWN_TOPIC_ID
    INCONSISTENT_TOPIC_ID = ErrorCode.INCONSISTENT_TOPIC_ID
    FENCED_MEMBER_EPOCH = ErrorCode.FENCED_MEMBER_EPOCH
    UNRELEASED_INSTANCE_ID = ErrorCode.UNRELEASED_INSTANCE_ID
    UNSUPPORTED_ASSIGNOR = ErrorCode.UNSUPPORTED_ASSIGNOR
    STALE_MEMBER_EPOCH = ErrorCode.STALE_MEMBER_EPOCH
    MISMATCHED_ENDPOINT_TYPE = ErrorCode.MISMATCHED_ENDPOINT_TYPE
    UNSUPPORTED_ENDPOINT_TYPE = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    UNKNOWN_CONTROLLER_ID = ErrorCode.UNKNOWN_CONTROLLER_ID
    UNKNOWN_SUBSCRIPTION_ID = ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    TELEMETRY_TOO_LARGE = ErrorCode.TELEMETRY_TOO_LARGE
    INVALID_REGISTRATION = ErrorCode.INVALID_REGISTRATION
    TRANSACTION_ABORTABLE = ErrorCode.TRANSACTION_ABORTABLE
    INVALID_RECORD_STATE = ErrorCode.INVALID_RECORD_STATE
    SHARE_SESSION_NOT_FOUND = ErrorCode.SHARE_SESSION_NOT_FOUND
    INVALID_SHARE_SESSION_EPOCH = ErrorCode.INVALID_SHARE_SESSION_EPOCH
    FENCED_STATE_EPOCH = ErrorCode.FENCED_STATE_EPOCH
    INVALID_VOTER_KEY = ErrorCode.INVALID_VOTER_KEY
    DUPLICATE_VOTER = ErrorCode.DUPLICATE_VOTER
    VOTER_NOT_FOUND = ErrorCode.VOTER_NOT_FOUND
    INVALID_REGULAR_EXPRESSION = ErrorCode.INVALID_REGULAR_EXPRESSION
    REBOOTSTRAP_REQUIRED = ErrorCode.REBOOTSTRAP_REQUIRED
    STREAMS_INVALID_TOPOLOGY = ErrorCode.STREAMS_INVALID_TOPOLOGY
    STREAMS_INVALID_TOPOLOGY_EPOCH = ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH
    STREAMS_TOPOLOGY_FENCED = ErrorCode.STREAMS_TOPOLOGY_FENCED
    SHARE_SESSION_LIMIT_REACHED = ErrorCode.SHARE_SESSION_LIMIT_REACHED

    def __init__(self, error: int, reason: str | None = None, fatal: bool = False, retriable: bool = False,
                 txn_requires_abort: bool = False) -> None:
        self._code = int(error)
        self._reason = reason
        self._fatal = fatal
        self._retriable = retriable
        self._txn_requires_abort = txn_requires_abort

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        return _NAMES.get(self._code, f"ERR_{self._code}")

    def str(self) -> str:
        """The reason given, else the code's name."""
        return self._reason if self._reason else self.name()

    def fatal(self) -> bool:
        return self._fatal

    def retriable(self) -> bool:
        return self._retriable

    def txn_requires_abort(self) -> bool:
        return self._txn_requires_abort

    def __str__(self) -> builtins.str:
        return f"KafkaError{{code={self.name()},val={self._code},str=\"{self.str()}\"}}"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other._code
        if isinstance(other, int):
            return self._code == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._code)

    def __lt__(self, other: KafkaError | int) -> bool:
        return self._code < (other._code if isinstance(other, KafkaError) else other)


_NAMES: dict[int, str] = {}
for _name, _value in list(vars(KafkaError).items()):
    if _name.isupper() or (_name.startswith("_") and _name[1:2].isupper()):
        if isinstance(_value, int):
            _NAMES.setdefault(int(_value), _name)


class KafkaException(errors.KafkaError):
    """confluent-kafka's exception: `args[0]` is the KafkaError. A cykafka.KafkaError too (`code`, `retriable`)."""

    def __init__(self, kafka_error: KafkaError | int | Any = None, *args: Any, **kwargs: Any) -> None:
        if isinstance(kafka_error, int) and not isinstance(kafka_error, bool):
            kafka_error = KafkaError(kafka_error, *args, **kwargs)
        super().__init__(str(kafka_error), code=kafka_error.code() if isinstance(kafka_error, KafkaError) else None,
                         retriable=kafka_error.retriable() if isinstance(kafka_error, KafkaError) else None)
        self.args = (kafka_error,)

    def __str__(self) -> str:
        return str(self.args[0])


class SerializationError(KafkaException):
    """A serializer or deserializer failed (confluent_kafka.serialization.SerializationError)."""

    def __init__(self, kafka_error: KafkaError | int | str | Any = None, *args: Any, **kwargs: Any) -> None:
        if isinstance(kafka_error, str) or kafka_error is None:  # confluent's serdes raise it with a message
            kafka_error = KafkaError(KafkaError._FAIL, kafka_error)
        super().__init__(kafka_error, *args, **kwargs)


class _KafkaClientError(KafkaException):
    """A client's error with the exception that caused it and the Message it concerns (confluent-kafka's)."""

    def __init__(self, kafka_error: KafkaError, exception: BaseException | None = None,
                 kafka_message: Any = None) -> None:
        super().__init__(kafka_error)
        self.exception = exception
        self.kafka_message = kafka_message
        self.name = kafka_error.name()


class ConsumeError(_KafkaClientError):
    """DeserializingConsumer.poll() got an error event (partition EOF too) instead of a record."""


class ProduceError(_KafkaClientError):
    """SerializingProducer.produce() failed."""


class KeySerializationError(ProduceError, SerializationError):
    def __init__(self, exception: BaseException | None = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError(KafkaError._KEY_SERIALIZATION, str(exception)), exception, kafka_message)


class ValueSerializationError(ProduceError, SerializationError):
    def __init__(self, exception: BaseException | None = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError(KafkaError._VALUE_SERIALIZATION, str(exception)), exception, kafka_message)


class KeyDeserializationError(ConsumeError, SerializationError):
    def __init__(self, exception: BaseException | None = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError(KafkaError._KEY_DESERIALIZATION, str(exception)), exception, kafka_message)


class ValueDeserializationError(ConsumeError, SerializationError):
    def __init__(self, exception: BaseException | None = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError(KafkaError._VALUE_DESERIALIZATION, str(exception)), exception, kafka_message)


# The one table: cykafka's error classes -> librdkafka's codes, most specific first (the first match wins). An error
# carrying a broker code (BrokerResponseError, or any with `code` set) keeps that code.
ERROR_CODES_BY_CLASS: tuple[tuple[type[errors.KafkaError], int], ...] = (
    (errors.BufferExhaustedError, KafkaError._QUEUE_FULL),
    (errors.KafkaTimeoutError, KafkaError._TIMED_OUT),
    (errors.RecordTooLargeError, KafkaError.MSG_SIZE_TOO_LARGE),
    (errors.AllBrokersDownError, KafkaError._ALL_BROKERS_DOWN),
    (errors.NetworkError, KafkaError._TRANSPORT),
    (errors.SslAuthenticationError, KafkaError._SSL),
    (errors.AuthenticationError, KafkaError._AUTHENTICATION),
    (errors.ConfigError, KafkaError._INVALID_ARG),
    (errors.InvalidTopicError, KafkaError.TOPIC_EXCEPTION),
    (errors.SerializationError, KafkaError._VALUE_SERIALIZATION),
    (errors.RecordDeserializationError, KafkaError._VALUE_DESERIALIZATION),
    (errors.InvalidArgumentError, KafkaError._INVALID_ARG),
    (errors.InvalidRecordError, KafkaError._INVALID_ARG),
    (errors.ProducerFencedError, KafkaError._FENCED),
    (errors.TransactionFatalError, KafkaError._FATAL),
    (errors.TransactionAbortableError, KafkaError._STATE),
    (errors.TransactionStateError, KafkaError._STATE),
    (errors.ProducerClosedError, KafkaError._DESTROY),
    (errors.IllegalStateError, KafkaError._STATE),
    (errors.NoOffsetForPartitionError, KafkaError._AUTO_OFFSET_RESET),
    (errors.LogTruncationError, KafkaError._LOG_TRUNCATION),
    (errors.UnsupportedVersionError, KafkaError._UNSUPPORTED_FEATURE),
    (errors.CorruptRecordError, KafkaError._BAD_MSG),
    (errors.BrokerNotFoundError, KafkaError._UNKNOWN_BROKER),
    (errors.ProtocolError, KafkaError._BAD_MSG),
)


def error_from(error: BaseException, *, timeout_code: int | None = None) -> KafkaError:
    """The KafkaError value for a cykafka error (any other exception: _FAIL); timeout_code replaces _TIMED_OUT
    (a delivery report's timeout is _MSG_TIMED_OUT)."""
    if isinstance(error, KafkaException):
        value = error.args[0]
        return value if isinstance(value, KafkaError) else KafkaError(KafkaError._FAIL, str(error))
    reason = str(error) or type(error).__name__
    if not isinstance(error, errors.KafkaError):
        return KafkaError(KafkaError._FAIL, reason)
    fatal = isinstance(error, errors.TransactionFatalError)
    abortable = isinstance(error, errors.TransactionAbortableError)
    code = next((c for cls, c in ERROR_CODES_BY_CLASS if isinstance(error, cls)), None)
    if isinstance(error, errors.RecordPurgedError):
        code = KafkaError._PURGE_INFLIGHT if error.in_flight else KafkaError._PURGE_QUEUE
    if isinstance(error, errors.BrokerResponseError) or (code is None and error.code is not None) or (
            abortable and error.code):
        code = error.code
    if code is None:
        code = KafkaError._FAIL
    if code == KafkaError._TIMED_OUT and timeout_code is not None:
        code = timeout_code
    return KafkaError(code, reason, fatal=fatal, retriable=bool(error.retriable), txn_requires_abort=abortable)


def exception_from(error: BaseException) -> KafkaException:
    """A KafkaException for a cykafka error, chained to it by the caller (`raise ... from error`)."""
    if isinstance(error, KafkaException):
        return error
    return KafkaException(error_from(error))
