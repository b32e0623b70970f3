"""cykafka.compat.kafka: kafka-python 3.x's API (KafkaProducer, KafkaConsumer, KafkaAdminClient, their structs and
errors) over cykafka's Producer, Consumer and Admin. Owns only the translation: kafka-python's kwargs and defaults
into Kafka's config keys (a kwarg cykafka cannot honour is refused with KafkaConfigurationError naming it), its
call shapes, its record and metadata tuples, and its error types (each a cykafka KafkaError too). No protocol work
and no per-record Python work beyond what the API shape forces: a (de)serializer call where one is configured and
one ConsumerRecord tuple per record handed out. `from cykafka.compat.kafka.errors import ...` works as
`from kafka.errors import ...` does. What differs from kafka-python and why: docs/migrating-kafka-python.md.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import json
import math
import re
import sys
import threading
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from cykafka import errors as _cy
from cykafka.admin import Admin
from cykafka.admin_types import NewTopic as _CyNewTopic
from cykafka.completion import Completion
from cykafka.consumer import Consumer
from cykafka.core import RecordFuture
from cykafka.fetch_collector import RecordsByPartition
from cykafka.metrics import MetricsSnapshot
from cykafka.ports.values import ConsumerGroupMetadata as _CyGroupMetadata
from cykafka.ports.values import OffsetAndMetadata as _CyOffsetAndMetadata
from cykafka.ports.values import TopicPartition
from cykafka.producer import Producer
from cykafka.protocol.error_codes import ErrorCode

__all__ = [
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "DefaultSerializer",
    "Deserializer",
    "FutureRecordMetadata",
    "JsonSerializer",
    "KafkaAdminClient",
    "KafkaConsumer",
    "KafkaProducer",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "RecordMetadata",
    "Serializer",
    "TopicPartition",
    "errors",
]

# -- errors: kafka-python's names and shapes; each is a cykafka KafkaError (so `except cykafka.KafkaError` works) ----


class KafkaError(_cy.KafkaError):
    """kafka-python's base error (kafka.errors.KafkaError): str() is "ClassName: message"."""

    retriable = False
    invalid_metadata = False

    def __init__(self, *args: object) -> None:
        Exception.__init__(self, *args)

    def __str__(self) -> str:
        if not self.args:
            return type(self).__name__
        return f"{type(self).__name__}: {Exception.__str__(self)}"


class RetriableError(KafkaError):
    retriable = True


class InvalidMetadataError(RetriableError):
    invalid_metadata = True


class IllegalArgumentError(KafkaError, ValueError):
    """A bad argument (a ValueError too, as kafka-python raises ValueError for most)."""


class IllegalStateError(KafkaError, _cy.IllegalStateError):
    """A call the client's state does not allow (send after close, commit without group_id, ...)."""


class KafkaConfigurationError(KafkaError, _cy.ConfigError):
    """A kwarg kafka-python does not know, or one cykafka cannot honour; the message names it. A ValueError too
    (kafka-python's KafkaProducer raises ValueError for an unknown kwarg)."""


class KafkaTimeoutError(RetriableError, _cy.KafkaTimeoutError):
    pass


class KafkaConnectionError(InvalidMetadataError):
    pass


class NoBrokersAvailable(KafkaError):
    """kafka-python 2.x's name for "no broker answered" (3.x raises KafkaConnectionError / KafkaTimeoutError)."""


class NoOffsetForPartitionError(KafkaError):
    pass


class CommitFailedError(KafkaError):
    def __init__(self, *args: object) -> None:
        super().__init__(*(args or ("Commit cannot be completed since the group has already rebalanced and assigned "
                                    "the partitions to another member.",)))


class UnsupportedCodecError(KafkaError):
    pass


class BrokerResponseError(KafkaError):
    """An error code a broker answered with: errno (Kafka's code), message (Kafka's name), description."""

    errno: int | None = None
    message: str | None = None
    description: str | None = None

    def __str__(self) -> str:
        return f"[Error {self.errno}] {super().__str__()}"


class AuthorizationError(BrokerResponseError):
    pass


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:  # a code newer than the table
        return "UNKNOWN"


def _broker_error(name: str, code: int, *bases: type) -> type[BrokerResponseError]:
    """kafka.errors' class of a Kafka error code: errno (and cykafka's `code`) the code, message Kafka's name."""
    cls: Any = types.new_class(name, bases or (BrokerResponseError,))
    cls.errno, cls.message, cls.__module__ = int(code), _error_name(code), __name__
    cls.code = int(code)
    return cls  # type: ignore[no-any-return]


UnknownError = _broker_error("UnknownError", ErrorCode.UNKNOWN_SERVER_ERROR)
OffsetOutOfRangeError = _broker_error("OffsetOutOfRangeError", ErrorCode.OFFSET_OUT_OF_RANGE)
CorruptRecordError = _broker_error("CorruptRecordError", ErrorCode.CORRUPT_MESSAGE)
UnknownTopicOrPartitionError = _broker_error("UnknownTopicOrPartitionError", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                             InvalidMetadataError, BrokerResponseError)
LeaderNotAvailableError = _broker_error("LeaderNotAvailableError", ErrorCode.LEADER_NOT_AVAILABLE,
                                        InvalidMetadataError, BrokerResponseError)
NotLeaderForPartitionError = _broker_error("NotLeaderForPartitionError", ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                           InvalidMetadataError, BrokerResponseError)
RequestTimedOutError = _broker_error("RequestTimedOutError", ErrorCode.REQUEST_TIMED_OUT, RetriableError,
                                     BrokerResponseError)
MessageSizeTooLargeError = _broker_error("MessageSizeTooLargeError", ErrorCode.MESSAGE_TOO_LARGE)
CoordinatorLoadInProgressError = _broker_error("CoordinatorLoadInProgressError", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                               RetriableError, BrokerResponseError)
CoordinatorNotAvailableError = _broker_error("CoordinatorNotAvailableError", ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                             RetriableError, BrokerResponseError)
NotCoordinatorError = _broker_error("NotCoordinatorError", ErrorCode.NOT_COORDINATOR, RetriableError,
                                    BrokerResponseError)
InvalidTopicError = _broker_error("InvalidTopicError", ErrorCode.INVALID_TOPIC_EXCEPTION)
RecordListTooLargeError = _broker_error("RecordListTooLargeError", ErrorCode.RECORD_LIST_TOO_LARGE)
IllegalGenerationError = _broker_error("IllegalGenerationError", ErrorCode.ILLEGAL_GENERATION)
UnknownMemberIdError = _broker_error("UnknownMemberIdError", ErrorCode.UNKNOWN_MEMBER_ID)
RebalanceInProgressError = _broker_error("RebalanceInProgressError", ErrorCode.REBALANCE_IN_PROGRESS)
TopicAuthorizationFailedError = _broker_error("TopicAuthorizationFailedError", ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                              AuthorizationError)
GroupAuthorizationFailedError = _broker_error("GroupAuthorizationFailedError", ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                              AuthorizationError)
ClusterAuthorizationFailedError = _broker_error("ClusterAuthorizationFailedError",
                                                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, AuthorizationError)
UnsupportedVersionError = _broker_error("UnsupportedVersionError", ErrorCode.UNSUPPORTED_VERSION)
TopicAlreadyExistsError = _broker_error("TopicAlreadyExistsError", ErrorCode.TOPIC_ALREADY_EXISTS)
InvalidPartitionsError = _broker_error("InvalidPartitionsError", ErrorCode.INVALID_PARTITIONS)
InvalidReplicationFactorError = _broker_error("InvalidReplicationFactorError", ErrorCode.INVALID_REPLICATION_FACTOR)
InvalidConfigurationError = _broker_error("InvalidConfigurationError", ErrorCode.INVALID_CONFIG)
PolicyViolationError = _broker_error("PolicyViolationError", ErrorCode.POLICY_VIOLATION)
InvalidProducerEpochError = _broker_error("InvalidProducerEpochError", ErrorCode.INVALID_PRODUCER_EPOCH)
InvalidTxnStateError = _broker_error("InvalidTxnStateError", ErrorCode.INVALID_TXN_STATE)
TransactionalIdAuthorizationFailedError = _broker_error("TransactionalIdAuthorizationFailedError",
                                                        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                        AuthorizationError)
NonEmptyGroupError = _broker_error("NonEmptyGroupError", ErrorCode.NON_EMPTY_GROUP)
GroupIdNotFoundError = _broker_error("GroupIdNotFoundError", ErrorCode.GROUP_ID_NOT_FOUND)
ProducerFencedError = _broker_error("ProducerFencedError", ErrorCode.PRODUCER_FENCED)

_BY_ERRNO: dict[int, type[BrokerResponseError]] = {
    cls.errno: cls for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, BrokerResponseError) and cls.errno is not None}
# the group moved on: kafka-python's CommitFailedError
_COMMIT_FAILED_CODES = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID,
                                  ErrorCode.REBALANCE_IN_PROGRESS})


def for_code(error_code: int) -> type[BrokerResponseError]:
    """The error class of a Kafka error code (kafka.errors.for_code); an unlisted code gets a class of its own."""
    cls = _BY_ERRNO.get(error_code)
    if cls is None:
        cls = _BY_ERRNO[error_code] = _broker_error("UnrecognizedBrokerError", error_code, UnknownError)
    return cls


def translated(error: BaseException, *, commit: bool = False) -> BaseException:
    """cykafka's error as the kafka-python type its users catch (the original as __cause__); what is already one,
    or no cykafka KafkaError (TypeError, ...), is returned as it is."""
    if isinstance(error, KafkaError) or not isinstance(error, _cy.KafkaError):
        return error
    text = str(error)
    new: KafkaError
    if isinstance(error, _cy.BrokerResponseError):
        if commit and error.code in _COMMIT_FAILED_CODES:
            new = CommitFailedError(text)
        else:
            new = for_code(error.code if error.code is not None else ErrorCode.UNKNOWN_SERVER_ERROR)(text)
    elif isinstance(error, _cy.KafkaTimeoutError):
        new = KafkaTimeoutError(text)
    elif isinstance(error, _cy.ConfigError):
        new = KafkaConfigurationError(text)
    elif isinstance(error, _cy.IllegalStateError | _cy.ProducerClosedError | _cy.TransactionStateError):
        new = IllegalStateError(text)
    elif isinstance(error, _cy.NoOffsetForPartitionError):
        new = NoOffsetForPartitionError(text)
    elif isinstance(error, _cy.RecordTooLargeError):
        new = MessageSizeTooLargeError(text)
    elif isinstance(error, _cy.InvalidArgumentError | _cy.InvalidRecordError | _cy.InvalidTopicError):
        return error  # already a ValueError / TypeError, as kafka-python raises for bad arguments
    elif isinstance(error, _cy.NetworkError):
        new = KafkaConnectionError(text)
    else:
        new = KafkaError(text)
    new.__cause__ = error
    return new


class _Translating:
    """`with _Translating():` raises cykafka's errors as kafka-python's (translated)."""

    __slots__ = ("commit",)

    def __init__(self, commit: bool = False) -> None:
        self.commit = commit

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None:
            new = translated(exc, commit=self.commit)
            if new is not exc:
                raise new from exc


_T = _Translating()
_TC = _Translating(commit=True)

errors = types.ModuleType(f"{__name__}.errors", "kafka.errors' names (the classes above), for "
                                                "`from cykafka.compat.kafka.errors import KafkaError`.")
for _name, _value in list(globals().items()):
    if isinstance(_value, type) and issubclass(_value, KafkaError):
        setattr(errors, _name, _value)
errors.for_code = for_code  # type: ignore[attr-defined]
sys.modules[errors.__name__] = errors

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


# -- config: kafka-python's kwargs into Kafka's keys ----------------------------------------------------------------

_INF = float("inf")
# kwargs that change nothing in cykafka (client internals of kafka-python): accepted at any value
_NO_EFFECT = frozenset({
    "api_version", "api_version_auto_timeout_ms", "bootstrap_timeout_ms", "metric_reporters", "metrics_enabled",
    "metrics_num_samples", "metrics_sample_window_ms", "metric_group_prefix", "selector", "kafka_client",
    "socket_options", "receive_message_max_bytes", "enable_incremental_fetch_sessions",
})
_SHARED_DEFAULTS: dict[str, object] = {
    "bootstrap_servers": "localhost", "client_id": None, "request_timeout_ms": 30000, "retry_backoff_ms": 100,
    "reconnect_backoff_ms": 50, "reconnect_backoff_max_ms": 30000, "metadata_max_age_ms": 300000,
    "connections_max_idle_ms": 540000, "receive_buffer_bytes": None, "send_buffer_bytes": None,
    "security_protocol": "PLAINTEXT", "ssl_context": None, "ssl_check_hostname": True, "ssl_cafile": None,
    "ssl_certfile": None, "ssl_keyfile": None, "ssl_crlfile": None, "ssl_password": None, "ssl_ciphers": None,
    "sasl_mechanism": None, "sasl_plain_username": None, "sasl_plain_password": None, "sasl_kerberos_name": None,
    "sasl_kerberos_service_name": "kafka", "sasl_kerberos_domain_name": None, "sasl_oauth_token_provider": None,
    "proxy_url": None, "socks5_proxy": None, "client_dns_lookup": "use_all_dns_ips",
    "allow_auto_create_topics": True, "max_in_flight_requests_per_connection": 5,
    **dict.fromkeys(_NO_EFFECT),
}
PRODUCER_DEFAULTS: dict[str, object] = {  # kafka-python 3.x KafkaProducer's
    **_SHARED_DEFAULTS, "key_serializer": None, "value_serializer": None, "enable_idempotence": True,
    "transactional_id": None, "transaction_timeout_ms": 60000, "delivery_timeout_ms": 120000, "acks": -1,
    "compression_type": None, "retries": _INF, "batch_size": 16384, "linger_ms": 0, "partitioner": None,
    "max_block_ms": 60000, "max_request_size": 1048576,
}
CONSUMER_DEFAULTS: dict[str, object] = {  # kafka-python 3.x KafkaConsumer's
    **_SHARED_DEFAULTS, "client_rack": "", "group_id": None, "group_instance_id": None, "key_deserializer": None,
    "value_deserializer": None, "fetch_max_wait_ms": 500, "fetch_min_bytes": 1, "fetch_max_bytes": 52428800,
    "max_partition_fetch_bytes": 1048576, "auto_offset_reset": "latest", "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000, "default_offset_commit_callback": None, "check_crcs": True,
    "isolation_level": "read_uncommitted", "partition_assignment_strategy": None, "max_poll_records": 500,
    "max_poll_interval_ms": 300000, "session_timeout_ms": 45000, "heartbeat_interval_ms": 3000,
    "consumer_timeout_ms": _INF, "exclude_internal_topics": True,
}
ADMIN_DEFAULTS: dict[str, object] = {**_SHARED_DEFAULTS}
# kwarg -> Kafka's key, for those passed on as they are
_SAME = {
    "client_id": "client.id", "request_timeout_ms": "request.timeout.ms", "retry_backoff_ms": "retry.backoff.ms",
    "reconnect_backoff_ms": "reconnect.backoff.ms", "reconnect_backoff_max_ms": "reconnect.backoff.max.ms",
    "metadata_max_age_ms": "metadata.max.age.ms", "connections_max_idle_ms": "connections.max.idle.ms",
    "receive_buffer_bytes": "receive.buffer.bytes", "send_buffer_bytes": "send.buffer.bytes",
    "security_protocol": "security.protocol", "ssl_check_hostname": "ssl.check.hostname",
    "ssl_cafile": "ssl.ca.location", "ssl_certfile": "ssl.certificate.location", "ssl_keyfile": "ssl.key.location",
    "ssl_password": "ssl.key.password", "sasl_mechanism": "sasl.mechanism", "sasl_plain_username": "sasl.username",
    "sasl_plain_password": "sasl.password", "client_dns_lookup": "client.dns.lookup",
    # producer
    "enable_idempotence": "enable.idempotence", "transactional_id": "transactional.id",
    "transaction_timeout_ms": "transaction.timeout.ms", "delivery_timeout_ms": "delivery.timeout.ms",
    "batch_size": "batch.size", "max_batch_size": "batch.size", "linger_ms": "linger.ms",
    "max_block_ms": "max.block.ms",
    "max_request_size": "max.request.size",
    # consumer
    "group_id": "group.id", "group_instance_id": "group.instance.id", "client_rack": "client.rack",
    "fetch_max_wait_ms": "fetch.max.wait.ms", "fetch_min_bytes": "fetch.min.bytes",
    "fetch_max_bytes": "fetch.max.bytes", "max_partition_fetch_bytes": "max.partition.fetch.bytes",
    "auto_offset_reset": "auto.offset.reset", "auto_commit_interval_ms": "auto.commit.interval.ms",
    "check_crcs": "check.crcs", "isolation_level": "isolation.level",
    "allow_auto_create_topics": "allow.auto.create.topics", "max_poll_records": "max.poll.records",
    "max_poll_interval_ms": "max.poll.interval.ms", "session_timeout_ms": "session.timeout.ms",
    "heartbeat_interval_ms": "heartbeat.interval.ms",
}
_ACKS: dict[object, str] = {-1: "all", "all": "all", 0: "0", 1: "1", "0": "0", "1": "1", "-1": "all"}
_ASSIGNORS = {"range": "range", "roundrobin": "roundrobin", "cooperative-sticky": "cooperative-sticky"}


def bootstrap(servers: object) -> str:
    """kafka-python's bootstrap_servers (a str or a list of 'host[:port]', default port 9092) as Kafka's value."""
    items = [servers] if isinstance(servers, str) else list(servers)  # type: ignore[call-overload]
    out = []
    for item in items:
        for one in str(item).split(","):
            one = one.strip()
            if one and not re.search(r":\d+$", one):
                one += ":9092"
            if one:
                out.append(one)
    return ",".join(out)


def kafka_config(configs: Mapping[str, object], defaults: Mapping[str, object], accepted: frozenset[str],
                 handled: frozenset[str], unknown_error: type[KafkaError] | None = None) -> dict[str, object]:
    """kafka-python (or aiokafka) kwargs as a cykafka config: unknown kwargs (not the peer's: `unknown_error`,
    default KafkaConfigurationError) and ones cykafka cannot honour (not at the peer's default:
    KafkaConfigurationError) are refused naming them. `accepted`: the Kafka keys the client takes; `handled`: kwargs
    the caller deals with itself."""
    unknown = sorted(set(configs) - set(defaults))
    if unknown:
        raise (unknown_error or KafkaConfigurationError)(f"Unrecognized configs: {unknown}")
    out: dict[str, object] = {}
    for name, default in defaults.items():
        value = configs.get(name, default)
        if name in handled or name in _NO_EFFECT:
            continue
        if name == "bootstrap_servers":
            out["bootstrap.servers"] = bootstrap(value)
        elif name == "acks":
            acks = _ACKS.get(value)
            if acks is None:
                raise KafkaConfigurationError(f"acks: {value!r} is none of 0, 1, -1, 'all'")
            out["acks"] = acks
        elif name == "compression_type":
            out["compression.type"] = "none" if value is None else value
        elif name == "retries":
            if value != _INF:
                out["retries"] = value
        elif name == "partition_assignment_strategy":
            if value is not None:
                names = [_ASSIGNORS.get(str(getattr(a, "name", a))) for a in value]  # type: ignore[attr-defined]
                if None in names:
                    raise KafkaConfigurationError(f"partition_assignment_strategy: {value!r}: cykafka has the range, "
                                                  "roundrobin and cooperative-sticky assignors (by their name)")
                out["partition.assignment.strategy"] = ",".join(n for n in names if n)
        elif name in _SAME and _SAME[name] in accepted:
            if value is not None and not (name == "client_rack" and value == ""):
                out[_SAME[name]] = value
        elif value != default:
            raise KafkaConfigurationError(f"{name}={value!r}: cykafka.compat.kafka cannot honour it (only its "
                                          f"default {default!r}); docs/migrating-kafka-python.md")
    return out


def _serializer(serializer: object, what: str) -> Callable[[str, Any, Any], Any] | None:
    """kafka-python's (de)serializer: an object with serialize/deserialize(topic, headers, data), or a function of
    the data alone (called for None too, as kafka-python 3.x does)."""
    if serializer is None:
        return None
    method = getattr(serializer, what, None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(serializer):
        fn = serializer
        return lambda topic, headers, data: fn(data)
    raise KafkaConfigurationError(f"{what[:-3]}er: {serializer!r} is neither callable nor has {what}()")


# -- producer ----------------------------------------------------------------------------------------------------

_client_ids = itertools.count(1)
SELF_ASSIGN_REFRESH_S = 5.0  # a group-less subscription looks for new topics / partitions this often
WAIT_FOR_TOPICS_POLL_S = 0.05  # KafkaAdminClient.wait_for_topics asks the metadata this often


class _CallbackThread:
    """Runs the futures' callbacks added before their record was final, off the sender thread, in order (what a
    batch's Completion hands it: one call per batch, none per record). Duck-types the loop `call_soon_on` takes."""

    def __init__(self, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)

    def call_soon_threadsafe(self, fn: Callable[..., object], *args: object) -> None:
        self._executor.submit(fn, *args)

    def call_soon(self, fn: Callable[..., object], *args: object) -> None:
        self._executor.submit(fn, *args)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class FutureRecordMetadata:
    """What KafkaProducer.send returns: ``get(timeout)`` -> RecordMetadata (or raises the record's error),
    ``add_callback(fn, *args)`` / ``add_errback(fn, *args)`` (each returns the future; called at once when it is
    final already, else on the producer's callback thread), is_done, succeeded(), failed(), value, exception."""

    __slots__ = ("_callbacks", "_future", "_producer", "_sizes")

    def __init__(self, producer: KafkaProducer, future: RecordFuture, sizes: tuple[int, int, int]) -> None:
        self._producer, self._future, self._sizes = producer, future, sizes
        self._callbacks: list[tuple[bool, Callable[..., object], tuple[object, ...]]] | None = None

    def _metadata(self) -> RecordMetadata:
        md = self._future.result(0)
        return RecordMetadata(md.topic, md.partition, TopicPartition(md.topic, md.partition), md.offset,
                              md.timestamp_ms, None, *self._sizes)

    def get(self, timeout: float | None = None) -> RecordMetadata:
        with _T:
            self._future.result(timeout)
            return self._metadata()

    @property
    def is_done(self) -> bool:
        return self._future.done()

    def succeeded(self) -> bool:
        return self._future.done() and self._future.exception(0) is None

    def failed(self) -> bool:
        return self._future.done() and self._future.exception(0) is not None

    @property
    def value(self) -> RecordMetadata | None:
        return self._metadata() if self.succeeded() else None

    @property
    def exception(self) -> BaseException | None:
        if not self._future.done():
            return None
        error = self._future.exception(0)
        return None if error is None else translated(error)

    def add_callback(self, fn: Callable[..., object], *args: object, **kwargs: object) -> FutureRecordMetadata:
        return self._add(True, fn, args, kwargs)

    def add_errback(self, fn: Callable[..., object], *args: object, **kwargs: object) -> FutureRecordMetadata:
        return self._add(False, fn, args, kwargs)

    def add_both(self, fn: Callable[..., object], *args: object, **kwargs: object) -> FutureRecordMetadata:
        return self._add(True, fn, args, kwargs)._add(False, fn, args, kwargs)

    def _add(self, on_success: bool, fn: Callable[..., object], args: tuple[object, ...],
             kwargs: Mapping[str, object]) -> FutureRecordMetadata:
        call = (lambda *a: fn(*a, **kwargs)) if kwargs else fn
        producer = self._producer
        with producer._callbacks_lock:
            completion = self._future.waitable()
            if isinstance(completion, Completion):
                if self._callbacks is None:
                    self._callbacks = []
                    producer._pending_callbacks.add(self)
                    completion.call_soon_on(producer._callback_thread(), self._fire)  # type: ignore[arg-type]
                self._callbacks.append((on_success, call, args))
                return self
        self._run(on_success, call, args)  # final: now, on this thread (kafka-python does the same)
        return self

    def _fire(self) -> None:
        """Runs the callbacks added so far (once: on the callback thread, or in flush() if that comes first)."""
        producer = self._producer
        with producer._callbacks_lock:
            callbacks, self._callbacks = self._callbacks or [], []
            producer._pending_callbacks.discard(self)
        for on_success, call, args in callbacks:
            self._run(on_success, call, args)

    def _run(self, on_success: bool, call: Callable[..., object], args: tuple[object, ...]) -> None:
        error = self._future.exception(0)
        try:
            if on_success and error is None:
                call(*args, self._metadata())
            elif not on_success and error is not None:
                call(*args, translated(error))
        except Exception:  # kafka-python logs and goes on
            import logging
            logging.getLogger(__name__).exception("a FutureRecordMetadata callback raised")


class KafkaProducer:
    """kafka-python's KafkaProducer over cykafka.Producer: `KafkaProducer(bootstrap_servers=..., **configs)` with
    kafka-python's kwargs and defaults (acks=all, idempotence on, linger_ms=0); docs/migrating-kafka-python.md."""

    DEFAULT_CONFIG = PRODUCER_DEFAULTS

    def __init__(self, **configs: Any) -> None:
        self.config = {**PRODUCER_DEFAULTS, **configs}
        if configs.get("client_id") is None:
            configs = {**configs, "client_id": f"kafka-python-producer-{next(_client_ids)}"}
        partitioner = configs.get("partitioner")
        custom = partitioner is not None and type(partitioner).__name__ != "DefaultPartitioner"
        if custom and not (callable(partitioner) or callable(getattr(partitioner, "partition", None))):
            raise KafkaConfigurationError(f"partitioner={partitioner!r} has no partition() and is not callable")
        if configs.get("transactional_id") and configs.get("enable_idempotence") is False:
            raise KafkaConfigurationError("Cannot set transactional_id without enable_idempotence.")
        kafka = kafka_config(configs, PRODUCER_DEFAULTS, _cy_producer_keys(),
                             frozenset({"key_serializer", "value_serializer", "partitioner"}))
        if custom:
            kafka["partitioner.class"] = _partitioner(partitioner)
        self._key_serializer = _serializer(configs.get("key_serializer"), "serialize")
        self._value_serializer = _serializer(configs.get("value_serializer"), "serialize")
        with _T:
            self._producer = Producer(kafka)
        self._closed = False
        self._callbacks: _CallbackThread | None = None
        self._callbacks_lock = threading.Lock()
        self._pending_callbacks: set[FutureRecordMetadata] = set()  # callbacks added before the record was final

    @property
    def producer(self) -> Producer:
        """The cykafka.Producer underneath (its send() is the fast path: no FutureRecordMetadata)."""
        return self._producer

    def _callback_thread(self) -> _CallbackThread:
        """The thread running callbacks (made on first use; called with _callbacks_lock held)."""
        if self._callbacks is None:
            self._callbacks = _CallbackThread(f"{self._producer.config.client_id}-callbacks")
        return self._callbacks

    def _run_callbacks(self) -> None:
        """The callbacks of every final record run before flush() / close() return, as kafka-python's do."""
        with self._callbacks_lock:
            final = [f for f in self._pending_callbacks if f.is_done]
        for future in final:
            future._fire()

    def send(self, topic: str, value: Any = None, key: Any = None, headers: list[tuple[str, bytes]] | None = None,
             partition: int | None = None, timestamp_ms: int | None = None) -> FutureRecordMetadata:
        """Queues a record; returns its FutureRecordMetadata. Serializers run here, on the caller's thread."""
        if self._closed:
            raise IllegalStateError("KafkaProducer already closed!")
        if value is None and key is None:
            raise ValueError("Need at least one: key or value")
        if self._key_serializer is not None:
            key = self._key_serializer(topic, headers or [], key)
        if self._value_serializer is not None:
            value = self._value_serializer(topic, headers or [], value)
        sizes = (-1 if key is None else len(key), -1 if value is None else len(value),
                 sum(len(k.encode()) + len(v or b"") for k, v in headers) if headers else -1)
        with _T:
            future = self._producer.send(topic, value, key, partition=partition, timestamp_ms=timestamp_ms,
                                         headers=headers)
        return FutureRecordMetadata(self, future, sizes)

    def flush(self, timeout: float | None = None) -> None:
        """Sends everything queued and waits for it; KafkaTimeoutError when `timeout` seconds pass first."""
        with _T:
            pending = self._producer.flush(timeout)
        self._run_callbacks()
        if pending:
            raise KafkaTimeoutError(f"Timeout after waiting for {timeout} secs: {pending} records pending")

    def close(self, timeout: float | None = None) -> None:
        """Flushes (up to `timeout` s), then closes; a second close does nothing."""
        if self._closed:
            return
        if timeout is not None and not (0 <= timeout <= threading.TIMEOUT_MAX):
            raise ValueError(f"Invalid timeout: {timeout}")
        self._closed = True
        with _T:
            self._producer.close(timeout)
        self._run_callbacks()
        if self._callbacks is not None:
            self._callbacks.shutdown()

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partitions_for(self, topic: str) -> set[int]:
        """The topic's partition ids (waiting up to max_block_ms for its metadata)."""
        with _T:
            return {p.partition for p in self._producer.partitions_for(topic)}

    def metrics(self, raw: bool = False) -> dict[str, dict[str, float]]:
        """{group: {name: value}} of the client-level metrics (kafka-python's shape; Java's groups and names, e.g.
        'producer-metrics' / 'record-send-total')."""
        return _grouped(self._producer.metrics())

    def bootstrap_connected(self) -> bool:
        return not self._closed

    # -- transactions ------------------------------------------------------------------------------------------

    def init_transactions(self) -> None:
        if not self._producer.config.transactional_id:
            raise IllegalStateError("Cannot call init_transactions without setting a transactional_id.")
        with _T:
            self._producer.init_transactions()

    def begin_transaction(self) -> None:
        with _T:
            self._producer.begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                    group_metadata: ConsumerGroupMetadata | str) -> None:
        """offsets {TopicPartition: OffsetAndMetadata}; group_metadata: KafkaConsumer.group_metadata() or a group
        id (kafka-python 2.x took the id)."""
        group: _CyGroupMetadata | str
        if isinstance(group_metadata, ConsumerGroupMetadata):
            group = _CyGroupMetadata(group_metadata.group_id or "", group_metadata.generation_id,
                                     group_metadata.member_id, group_metadata.group_instance_id)
        else:
            group = group_metadata
        with _T:
            self._producer.send_offsets_to_transaction({tp: _cy_offset(om) for tp, om in offsets.items()}, group)

    def commit_transaction(self) -> None:
        with _T:
            self._producer.commit_transaction()

    def abort_transaction(self) -> None:
        with _T:
            self._producer.abort_transaction()


class _Partitions:
    """What a kafka-python 3.x Partitioner.partition(...) gets as `metadata`: the topic's partitions (all counted as
    available: cykafka's partitioner.class call does not say which leaders are up)."""

    __slots__ = ("_partitions", "_topic")

    def __init__(self, topic: str, num_partitions: int) -> None:
        self._topic, self._partitions = topic, set(range(num_partitions))

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions if topic == self._topic else None

    available_partitions_for_topic = partitions_for_topic


def _partitioner(partitioner: Any) -> Callable[..., int]:
    """kafka-python's partitioner as cykafka's partitioner.class: 3.x's Partitioner object (partition(topic, key,
    key_bytes, value, value_bytes, metadata)) or 2.x's callable (key_bytes, all_partitions, available_partitions)."""
    method = getattr(partitioner, "partition", None)

    def partition(topic: str, key: object, key_bytes: bytes | None, value: object, value_bytes: bytes | None,
                  num_partitions: int) -> int:
        if method is not None:
            return method(topic, key, key_bytes, value, value_bytes, _Partitions(topic, num_partitions))  # type: ignore[no-any-return]
        partitions = list(range(num_partitions))
        return partitioner(key_bytes, partitions, partitions)  # type: ignore[no-any-return]

    return partition


def _cy_producer_keys() -> frozenset[str]:
    from cykafka.config import PRODUCER_KEYS
    return PRODUCER_KEYS


def _cy_consumer_keys() -> frozenset[str]:
    from cykafka.config import CONSUMER_KEYS
    return CONSUMER_KEYS


def _cy_admin_keys() -> frozenset[str]:
    from cykafka.config import ADMIN_KEYS
    return ADMIN_KEYS


def _cy_offset(om: object) -> _CyOffsetAndMetadata | int:
    if isinstance(om, OffsetAndMetadata):
        return _CyOffsetAndMetadata(om.offset, om.metadata, -1 if om.leader_epoch is None else om.leader_epoch)  # type: ignore[arg-type]
    return om  # type: ignore[return-value]


# -- consumer ----------------------------------------------------------------------------------------------------


class KafkaConsumer:
    """kafka-python's KafkaConsumer over cykafka.Consumer: `KafkaConsumer(*topics, **configs)`, iteration (ends
    after consumer_timeout_ms without records), poll(timeout_ms, max_records) -> {TopicPartition: [ConsumerRecord]},
    subscribe / assign, seeks, offsets, commits; docs/migrating-kafka-python.md."""

    DEFAULT_CONFIG = CONSUMER_DEFAULTS

    def __init__(self, *topics: str, **configs: Any) -> None:
        self.config = {**CONSUMER_DEFAULTS, **configs}
        self._group_id = configs.get("group_id")
        handled = {"key_deserializer", "value_deserializer", "consumer_timeout_ms", "default_offset_commit_callback",
                   "max_in_flight_requests_per_connection", "exclude_internal_topics", "enable_auto_commit"}
        kafka = kafka_config(configs, CONSUMER_DEFAULTS, _cy_consumer_keys(), frozenset(handled))
        if self._group_id is not None:
            kafka["enable.auto.commit"] = bool(configs.get("enable_auto_commit", True))
        if configs.get("exclude_internal_topics", True) is not True:
            raise KafkaConfigurationError("exclude_internal_topics=False: cykafka.compat.kafka cannot honour it")
        self._key_deserializer = _serializer(configs.get("key_deserializer"), "deserialize")
        self._value_deserializer = _serializer(configs.get("value_deserializer"), "deserialize")
        timeout_ms = configs.get("consumer_timeout_ms", _INF)
        self._iter_timeout_s = math.inf if timeout_ms == _INF else float(timeout_ms) / 1000
        self._commit_callback = configs.get("default_offset_commit_callback")
        self._max_poll_records = int(configs.get("max_poll_records", 500))
        with _T:
            self._consumer = Consumer(kafka)
        self._iterator: collections.deque[ConsumerRecord] = collections.deque()
        # subscribed without a group_id (kafka-python assigns itself every partition of the topics then)
        self._self_assigned: list[str] | re.Pattern[str] | None = None
        self._self_assigned_at_s = -math.inf
        self._admin: Admin | None = None
        self._admin_config = {k: v for k, v in kafka.items() if k in _cy_admin_keys()}
        if topics:
            self.subscribe(topics)

    @property
    def consumer(self) -> Consumer:
        """The cykafka.Consumer underneath (poll_batch to Arrow: the fast path)."""
        return self._consumer

    def _records(self, records: list[Any]) -> list[ConsumerRecord]:
        """cykafka's records as kafka-python's tuples (tuple.__new__: no Python-level __new__ per record)."""
        kd, vd = self._key_deserializer, self._value_deserializer
        new, cls = tuple.__new__, ConsumerRecord
        if kd is None and vd is None:
            return [new(cls, (
                r.topic, r.partition, -1 if (e := r.leader_epoch) is None else e, r.offset, r.timestamp_ms,
                r.timestamp_type, (k := r.key), (v := r.value), (h := r.headers), None, -1 if k is None else len(k),
                -1 if v is None else len(v), sum(len(hk.encode()) + len(hv or b"") for hk, hv in h) if h else -1))
                for r in records]
        out = []
        for r in records:
            k, v, h, e = r.key, r.value, r.headers, r.leader_epoch
            out.append(new(cls, (
                r.topic, r.partition, -1 if e is None else e, r.offset, r.timestamp_ms, r.timestamp_type,
                k if kd is None else kd(r.topic, h, k), v if vd is None else vd(r.topic, h, v), h, None,
                -1 if k is None else len(k), -1 if v is None else len(v),
                sum(len(hk.encode()) + len(hv or b"") for hk, hv in h) if h else -1)))
        return out

    def poll(self, timeout_ms: int = 0, max_records: int | None = None,
             update_offsets: bool = True) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to max_records (default max_poll_records) records, waiting up to timeout_ms for some:
        {TopicPartition: [ConsumerRecord]}; {} when none came."""
        if timeout_ms < 0:
            raise ValueError("Timeout must not be negative")
        if max_records is not None and (not isinstance(max_records, int) or max_records < 1):
            raise ValueError("max_records must be positive")
        if self._consumer.closed:
            raise IllegalStateError("KafkaConsumer is closed")
        self._self_assign()
        sink = RecordsByPartition()
        with _T:
            self._consumer.poll_into(sink, timeout_ms / 1000, max_records or self._max_poll_records)
        return {tp: self._records(records) for tp, records in sink.by_partition.items()}

    def __iter__(self) -> Iterator[ConsumerRecord]:
        return self

    def __next__(self) -> ConsumerRecord:
        """The next record; StopIteration after consumer_timeout_ms without one, or once closed."""
        if self._iterator:
            return self._iterator.popleft()
        deadline = None if self._iter_timeout_s == math.inf else _now() + self._iter_timeout_s
        while not self._consumer.closed:
            self._self_assign()
            wait = 1.0 if deadline is None else max(0.0, min(1.0, deadline - _now()))
            with _T:
                got = self._consumer.poll(wait)
            if got:
                self._iterator.extend(self._records(got))
                return self._iterator.popleft()
            if deadline is not None and _now() >= deadline:
                raise StopIteration
        raise StopIteration("KafkaConsumer closed")

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None,
                  listener: object | None = None) -> None:
        """topics, or a regex pattern (a str, as kafka-python takes it), with an optional rebalance listener."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        if bool(topic_list) == (pattern is not None):
            raise IllegalStateError("You must choose only one way to configure your consumer: (1) subscribe to "
                                    "specific topics by name, (2) subscribe to topics matching a regex pattern")
        what: Any = re.compile(pattern) if pattern is not None else topic_list
        if self._group_id is None:  # no group: every partition of the topics, found again now and then
            self._self_assigned, self._self_assigned_at_s = what, -math.inf
            self._self_assign()
            return
        with _T:
            self._consumer.subscribe(what, listener=listener)

    def _self_assign(self) -> None:
        """Subscribed without a group_id: assigns every partition of the subscribed topics (the pattern's, from the
        cluster's topics), looked up again every SELF_ASSIGN_REFRESH_S."""
        what = self._self_assigned
        if what is None or _now() - self._self_assigned_at_s < SELF_ASSIGN_REFRESH_S:
            return
        self._self_assigned_at_s = _now()
        topics = [t for t in self.topics() if what.match(t)] if isinstance(what, re.Pattern) else what
        with _T:
            wanted = {TopicPartition(t, p.partition) for t in topics for p in self._consumer.partitions_for(t)}
            if wanted != self._consumer.assignment():
                self._consumer.assign(sorted(wanted))

    def subscription(self) -> set[str] | None:
        if self._self_assigned is not None:
            return {tp.topic for tp in self._consumer.assignment()}
        return self._consumer.subscription() or None

    def unsubscribe(self) -> None:
        self._self_assigned = None
        with _T:
            self._consumer.unsubscribe()
        self._iterator.clear()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        with _T:
            self._consumer.assign([TopicPartition(*tp) for tp in partitions])

    def assignment(self) -> set[TopicPartition]:
        return self._consumer.assignment()

    def seek(self, partition: TopicPartition, offset: int) -> None:
        if not isinstance(partition, tuple):
            raise TypeError("partition must be a TopicPartition namedtuple")
        if not isinstance(offset, int) or offset < 0:
            raise ValueError("Offset must be int >= 0")
        self._iterator = collections.deque(r for r in self._iterator
                                           if (r.topic, r.partition) != tuple(partition))
        with _T:
            self._consumer.seek(TopicPartition(*partition), offset)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.seek_to_beginning(list(partitions) or None)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.seek_to_end(list(partitions) or None)

    def position(self, partition: TopicPartition, timeout_ms: int | None = None) -> int:
        with _T:
            return self._consumer.position(TopicPartition(*partition), _seconds(timeout_ms))

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark the last Fetch answer gave (None before one), no request."""
        with _T:
            high = self._consumer.watermarks(TopicPartition(*partition))[1]
        return None if high < 0 else high

    def pause(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.pause(list(partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.resume(list(partitions))

    def paused(self) -> set[TopicPartition]:
        return self._consumer.paused()

    def _need_group(self) -> None:
        if self._group_id is None:
            raise IllegalStateError("Requires group_id")

    def committed(self, partition: TopicPartition, metadata: bool = False,
                  timeout_ms: int | None = None) -> int | OffsetAndMetadata | None:
        """The group's committed offset of the partition (an OffsetAndMetadata with metadata=True), None if none."""
        self._need_group()
        if not isinstance(partition, tuple):
            raise TypeError("partition must be a TopicPartition namedtuple")
        with _T:
            got = self._consumer.committed([TopicPartition(*partition)], _seconds(timeout_ms))
        om = next(iter(got.values()), None)
        if om is None:
            return None
        return OffsetAndMetadata(om.offset, om.metadata or "", om.leader_epoch) if metadata else om.offset

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
               timeout_ms: int | None = None) -> None:
        """Commits the given offsets, or every position (the records handed out so far); waits for the answer."""
        self._need_group()
        cy = None if offsets is None else {TopicPartition(*tp): _cy_offset(om) for tp, om in offsets.items()}
        with _TC:
            self._consumer.commit(cy, _seconds(timeout_ms))

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
                     callback: Callable[[Any, Any], object] | None = None) -> concurrent.futures.Future[Any]:
        """Commits without waiting; callback(offsets, response_or_error) runs inside a later poll or commit."""
        self._need_group()
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        callback = callback or self._commit_callback

        def finished(error: BaseException | None, committed: Any) -> None:
            outcome = translated(error, commit=True) if error is not None else committed
            if callback is not None:
                callback(committed, outcome)
            if error is not None:
                done.set_exception(outcome)
            else:
                done.set_result(committed)

        cy = None if offsets is None else {TopicPartition(*tp): _cy_offset(om) for tp, om in offsets.items()}
        with _TC:
            self._consumer.commit_async(cy, callback=finished)
        return done

    def group_metadata(self) -> ConsumerGroupMetadata:
        if self._group_id is None:
            return ConsumerGroupMetadata(None)
        g = self._consumer.group_metadata()
        return ConsumerGroupMetadata(g.group_id, g.generation_id, g.member_id, g.group_instance_id)

    def beginning_offsets(self, partitions: Iterable[TopicPartition],
                          timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        with _T:
            return self._consumer.beginning_offsets([TopicPartition(*tp) for tp in partitions], _seconds(timeout_ms))

    def end_offsets(self, partitions: Iterable[TopicPartition],
                    timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        with _T:
            return self._consumer.end_offsets([TopicPartition(*tp) for tp in partitions], _seconds(timeout_ms))

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int],
                          timeout_ms: int | None = None) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"The target time for partition {tp} is {ts}. The target time cannot be negative.")
        with _T:
            got = self._consumer.offsets_for_times({TopicPartition(*tp): ts for tp, ts in timestamps.items()},
                                                   _seconds(timeout_ms))
        return {tp: None if info is None else OffsetAndTimestamp(info.offset, info.timestamp, info.leader_epoch)
                for tp, info in got.items()}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The topic's partition ids, None when the cluster does not know it."""
        with _T:
            infos = self._consumer.partitions_for(topic)
        return {p.partition for p in infos} or None

    def topics(self) -> set[str]:
        """Every topic the cluster has (internal ones left out)."""
        if self._admin is None:
            with _T:
                self._admin = Admin(self._admin_config)
        with _T:
            return set(self._admin.list_topics())

    def metrics(self, raw: bool = False) -> dict[str, dict[str, float]]:
        """{group: {name: value}} of the client-level metrics (kafka-python's shape; Java's groups and names, e.g.
        'consumer-fetch-manager-metrics' / 'records-consumed-total')."""
        return _grouped(self._consumer.metrics())

    def bootstrap_connected(self) -> bool:
        return not self._consumer.closed

    def close(self, autocommit: bool = True, timeout_ms: int | None = None) -> None:
        """Commits (with enable_auto_commit and autocommit), leaves the group, closes."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        timeout_s = 30.0 if timeout_ms is None else timeout_ms / 1000
        with _T:
            self._consumer.close(timeout_s)  # commits first with enable_auto_commit (also when autocommit=False)

    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _grouped(snapshot: MetricsSnapshot) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, value in snapshot.all.items():
        if len(name.tags) == 1:  # client-id only: a client-level metric
            out.setdefault(name.group, {})[name.name] = value
    return out


def _seconds(timeout_ms: int | None) -> float | None:
    return None if timeout_ms is None else timeout_ms / 1000


def _now() -> float:
    return time.monotonic()


# -- admin -------------------------------------------------------------------------------------------------------


class KafkaAdminClient:
    """kafka-python's KafkaAdminClient over cykafka.Admin (topics, groups, configs, partitions); a failed item
    raises its kafka-python error (raise_errors=True, kafka-python's default)."""

    DEFAULT_CONFIG = ADMIN_DEFAULTS

    def __init__(self, **configs: Any) -> None:
        self.config = {**ADMIN_DEFAULTS, **configs}
        kafka = kafka_config(configs, ADMIN_DEFAULTS, _cy_admin_keys(),
                             frozenset({"max_in_flight_requests_per_connection", "allow_auto_create_topics"}))
        with _T:
            self._admin = Admin(kafka)

    @property
    def admin(self) -> Admin:
        """The cykafka.Admin underneath."""
        return self._admin

    def close(self) -> None:
        self._admin.close()

    @staticmethod
    def _raise_first(results: Mapping[Any, Any], raise_errors: bool) -> None:
        if raise_errors:
            for result in results.values():
                if result.error is not None:
                    raise translated(result.error)

    def create_topics(self, new_topics: Any, timeout_ms: int | None = None, validate_only: bool = False,
                      raise_errors: bool = True, wait_for_metadata: bool = False) -> dict[str, Any]:
        """new_topics: [NewTopic], topic names, or {name: {num_partitions, replication_factor, configs}}.
        Returns {'topics': [{'name', 'error_code', 'error_message'}]}. wait_for_metadata: then wait_for_topics."""
        topics: list[_CyNewTopic] = []
        if isinstance(new_topics, Mapping):
            for name, spec in new_topics.items():
                topics.append(_CyNewTopic(name, spec.get("num_partitions", -1), spec.get("replication_factor", -1),
                                          spec.get("configs") or None))
        else:
            for t in new_topics:
                if isinstance(t, str):
                    topics.append(_CyNewTopic(t, -1, -1))
                else:
                    topics.append(_CyNewTopic(t.name, t.num_partitions, t.replication_factor,
                                              t.topic_configs or None))
        with _T:
            results = self._admin.create_topics(topics, validate_only=validate_only, timeout_ms=timeout_ms)
        self._raise_first(results, raise_errors)
        if wait_for_metadata and not validate_only:
            self.wait_for_topics([name for name, r in results.items() if r.error is None])
        return {"topics": [_item(name, r) for name, r in results.items()]}

    def wait_for_topics(self, topic_names: Iterable[str], timeout_ms: int = 10000) -> None:
        """Waits until the metadata lists every topic with a leader for each partition (a broker lists a new topic
        a moment after CreateTopics answered); KafkaTimeoutError after timeout_ms."""
        names = list(topic_names)
        deadline_s = _now() + timeout_ms / 1000
        while True:
            with _T:
                described = self._admin.describe_topics(names)
            if all(r.error is None and r.value is not None and r.value.partitions
                   and all(p.leader >= 0 for p in r.value.partitions) for r in described.values()):
                return
            if _now() >= deadline_s:
                raise KafkaTimeoutError(f"topics {names} not ready after {timeout_ms} ms")
            time.sleep(WAIT_FOR_TOPICS_POLL_S)

    def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None,
                      raise_errors: bool = True) -> dict[str, Any]:
        with _T:
            results = self._admin.delete_topics(list(topics), timeout_ms=timeout_ms)
        self._raise_first(results, raise_errors)
        return {"responses": [_item(name, r) for name, r in results.items()]}

    def create_partitions(self, topic_partitions: Mapping[str, NewPartitions], timeout_ms: int | None = None,
                          validate_only: bool = False, raise_errors: bool = True) -> dict[str, Any]:
        from cykafka.admin_types import NewPartitions as _CyNewPartitions
        asked = {name: _CyNewPartitions(np.total_count, np.new_assignments) for name, np in topic_partitions.items()}
        with _T:
            results = self._admin.create_partitions(asked, validate_only=validate_only, timeout_ms=timeout_ms)
        self._raise_first(results, raise_errors)
        return {"results": [_item(name, r) for name, r in results.items()]}

    def list_topics(self) -> list[str]:
        with _T:
            return list(self._admin.list_topics())

    def describe_topics(self, topics: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """[{'name', 'error_code', 'is_internal', 'partitions': [{'partition_index', 'leader_id', 'leader_epoch',
        'replica_nodes', 'isr_nodes', 'error_code'}]}]"""
        with _T:
            if topics is None:
                found = {name: d for name, d in self._admin.list_topics().items()}
                described: dict[str, Any] = {name: (d, None) for name, d in found.items()}
            else:
                described = {name: (r.value, r.error) for name, r in self._admin.describe_topics(list(topics)).items()}
        out = []
        for name, (d, error) in described.items():
            if error is not None:
                out.append({"name": name, "error_code": error.code, "is_internal": False, "partitions": []})
                continue
            out.append({"name": name, "error_code": 0, "is_internal": d.internal, "partitions": [
                {"partition_index": p.partition, "leader_id": p.leader, "leader_epoch": p.leader_epoch,
                 "replica_nodes": list(p.replicas), "isr_nodes": list(p.isr), "error_code": p.error_code}
                for p in d.partitions]})
        return out

    def list_groups(self, broker_ids: object = None, states_filter: Iterable[str] | None = None,
                    types_filter: object = None) -> list[dict[str, Any]]:
        """kafka-python 3.x's: [{'group_id', 'protocol_type', 'group_state'}] of every group."""
        with _T:
            listed = self._admin.list_consumer_groups(states=states_filter)
        return [{"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state} for g in listed]

    def list_consumer_groups(self, broker_ids: object = None,
                             states: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """kafka-python 2.x's: [(group_id, protocol_type)]."""
        return [(g["group_id"], g["protocol_type"]) for g in self.list_groups(states_filter=states)]

    def describe_groups(self, group_ids: Iterable[str], group_coordinator_id: object = None,
                        include_authorized_operations: bool = False) -> dict[str, dict[str, Any]]:
        """{group_id: {'group_id', 'group_state', 'protocol_type', 'protocol_data', 'members': [{'member_id',
        'group_instance_id', 'client_id', 'client_host', 'member_assignment' (raw bytes)}]}}; a group's error is
        raised (kafka-python: "Any errors are immediately raised")."""
        with _T:
            got = self._admin.describe_consumer_groups(list(group_ids))
        out = {}
        for group_id, result in got.items():
            if result.error is not None:
                raise translated(result.error)
            d = result.result()
            out[group_id] = {"group_id": d.group_id, "group_state": d.state, "protocol_type": d.protocol_type,
                             "protocol_data": d.partition_assignor, "members": [
                                 {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                  "client_id": m.client_id, "client_host": m.host,
                                  "member_assignment": m.assignment} for m in d.members]}
        return out

    def list_consumer_group_offsets(self, group_id: str, group_coordinator_id: object = None,
                                    partitions: Iterable[TopicPartition] | None = None
                                    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """{TopicPartition: OffsetAndMetadata} of a group's committed offsets (kafka-python 2.x's call)."""
        with _T:
            got = self._admin.list_consumer_group_offsets(group_id, partitions)
        out = {}
        for tp, result in got.items():
            if result.error is not None:
                raise translated(result.error)
            om = result.result()
            out[tp] = OffsetAndMetadata(om.offset, om.metadata or "", om.leader_epoch)
        return out

    def list_group_offsets(self, group_ids: Iterable[str]) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """kafka-python 3.x's: {group_id: {TopicPartition: OffsetAndMetadata}} for each group named."""
        return {g: self.list_consumer_group_offsets(g) for g in group_ids}

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, BaseException | None]:
        with _T:
            got = self._admin.delete_consumer_groups(list(group_ids))
        return {g: None if r.error is None else translated(r.error) for g, r in got.items()}

    delete_consumer_groups = delete_groups

    def describe_configs(self, config_resources: Iterable[Any], include_synonyms: bool = False
                         ) -> dict[tuple[str, str], dict[str, str | None]]:
        """{(type, name): {config name: value}}; a resource is a cykafka ConfigResource or (type, name)."""
        from cykafka.admin_types import ConfigResource
        resources = [r if isinstance(r, ConfigResource) else ConfigResource(str(getattr(
            getattr(r, "resource_type", r[0]), "name", getattr(r, "resource_type", r[0]))).lower(),
            getattr(r, "name", None) or r[1]) for r in config_resources]
        with _T:
            got = self._admin.describe_configs(resources)
        out = {}
        for res, result in got.items():
            if result.error is not None:
                raise translated(result.error)
            out[(res.type, res.name)] = {name: entry.value for name, entry in result.result().items()}
        return out


def _item(name: str, result: Any) -> dict[str, Any]:
    error = result.error
    return {"name": name, "error_code": 0 if error is None else error.code,
            "error_message": None if error is None else str(error)}
