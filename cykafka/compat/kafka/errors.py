"""kafka-python's errors (kafka.errors): each a cykafka KafkaError too, so `except cykafka.KafkaError` works;
for_code and the translation of cykafka's typed errors into them (translated, the _T / _TC context managers).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from cykafka import errors as _cy
from cykafka.protocol.error_codes import ErrorCode

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


class Translating:
    """`with Translating(translate):` raises cykafka's errors as a compat layer's: translate(error, commit=) gives
    the peer's type (kafka-python's `translated` here; aiokafka's layer hands its own)."""

    __slots__ = ("commit", "translate")

    def __init__(self, translate: Callable[..., BaseException], commit: bool = False) -> None:
        self.translate = translate
        self.commit = commit

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None:
            new = self.translate(exc, commit=self.commit)
            if new is not exc:
                raise new from exc


_T = Translating(translated)
_TC = Translating(translated, commit=True)


