"""Kafka's error codes, in one place: `ErrorCode` (Kafka's names and numbers) and `ERRORS`, each code's retriable flag
(Java's Errors.java: the exception extends RetriableException), meaning, exception class and the classifications the
producer decides on (`ErrorKind`). `error_for` builds the typed error a broker's code becomes.

Every other module names a code through `ErrorCode` and asks this table what it means; none holds a code's number
(tests/test_error_table.py scans the sources for that, and checks the core's C-level copies against this table).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Flag, IntEnum, auto
from types import MappingProxyType
from typing import Any, NamedTuple

from cykafka.errors import (
    AuthorizationError,
    BrokerResponseError,
    ClusterAuthorizationError,
    FencedMemberEpochError,
    GroupAuthorizationError,
    GroupMaxSizeReachedError,
    InvalidRecordStateError,
    StaleMemberEpochError,
    TopicAuthorizationError,
    TransactionalIdAuthorizationError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)


class ErrorCode(IntEnum):
    """Kafka's protocol error codes, by Kafka's names."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133

class ErrorKind(Flag):
    """The decisions more than one place makes on a code, beyond `retriable`."""

    STALE_METADATA = auto()  # the leader we used is stale: refresh metadata (Java: InvalidMetadataException)
    FENCED = auto()  # a newer producer with our transactional.id (a higher epoch) exists: ProducerFencedError
    PRODUCER_FATAL = auto()  # a batch failing with it makes the producer fatal (Java's maybeTransitionToErrorState)
    TXN_FATAL = auto()  # an AddPartitionsToTxn/EndTxn answer after which the transactional producer is fatal
    TXN_ABORTABLE = auto()  # the coordinator lost our producer id: abort the transaction (bump the epoch if possible)
    COORDINATOR_MOVED = auto()  # the coordinator is elsewhere or gone: look it up again, then retry
    COORDINATOR_LOADING = auto()  # the coordinator is still loading its state: retry it later
    CONTROLLER_MOVED = auto()  # the broker is no longer the controller: find it again (metadata), then retry
    MEMBER_FENCED = auto()  # a KIP-848 or share group member lost its place: its partitions are lost, rejoin at epoch 0
    MEMBER_EPOCH_STALE = auto()  # a commit/offset fetch carried an old member epoch: ask again, built with the next one


NO_KIND = ErrorKind(0)


class ErrorSpec(NamedTuple):
    """One code's row: Kafka's name, retriable, what it means (the message when the broker sent none), its kinds,
    and the class `error_for` builds (a BrokerResponseError: every code keeps `code` and `name`)."""

    name: str
    retriable: bool
    message: str
    kinds: ErrorKind = NO_KIND
    exception: type[BrokerResponseError] = BrokerResponseError


class _Row(NamedTuple):
    retriable: bool
    message: str
    kinds: ErrorKind = NO_KIND
    exception: type[BrokerResponseError] = BrokerResponseError


_E, _K = ErrorCode, ErrorKind
_ROWS: dict[ErrorCode, _Row] = {
    _E.UNKNOWN_SERVER_ERROR: _Row(False, "unexpected broker-side error"),
    _E.NONE: _Row(False, "no error"),
    _E.OFFSET_OUT_OF_RANGE: _Row(False, "offset outside the range the broker holds"),
    _E.CORRUPT_MESSAGE: _Row(True, "record failed its CRC or size checks, or is otherwise corrupt"),
    _E.UNKNOWN_TOPIC_OR_PARTITION: _Row(True, "broker does not host this topic-partition", _K.STALE_METADATA),
    _E.INVALID_FETCH_SIZE: _Row(False, "invalid fetch size"),
    _E.LEADER_NOT_AVAILABLE: _Row(True, "partition has no leader (election in progress)", _K.STALE_METADATA),
    _E.NOT_LEADER_OR_FOLLOWER: _Row(
        True, "broker is not the leader (or a replica) of this partition", _K.STALE_METADATA),
    _E.REQUEST_TIMED_OUT: _Row(True, "request timed out on the broker"),
    _E.BROKER_NOT_AVAILABLE: _Row(False, "broker not available"),
    _E.REPLICA_NOT_AVAILABLE: _Row(True, "replica not available for this partition", _K.STALE_METADATA),
    _E.MESSAGE_TOO_LARGE: _Row(False, "record batch larger than the broker or topic accepts"),
    _E.STALE_CONTROLLER_EPOCH: _Row(False, "controller moved to another broker"),
    _E.OFFSET_METADATA_TOO_LARGE: _Row(False, "offset commit metadata too large"),
    _E.NETWORK_EXCEPTION: _Row(True, "broker disconnected before answering"),
    _E.COORDINATOR_LOAD_IN_PROGRESS: _Row(True, "coordinator is still loading", _K.COORDINATOR_LOADING),
    _E.COORDINATOR_NOT_AVAILABLE: _Row(True, "coordinator not available", _K.COORDINATOR_MOVED),
    _E.NOT_COORDINATOR: _Row(True, "broker is not the coordinator for this key", _K.COORDINATOR_MOVED),
    _E.INVALID_TOPIC_EXCEPTION: _Row(False, "invalid topic"),
    _E.RECORD_LIST_TOO_LARGE: _Row(False, "record batch larger than the broker's segment size"),
    _E.NOT_ENOUGH_REPLICAS: _Row(True, "fewer in-sync replicas than min.insync.replicas"),
    _E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: _Row(True, "written, but to fewer in-sync replicas than required"),
    _E.INVALID_REQUIRED_ACKS: _Row(False, "invalid acks value"),
    _E.ILLEGAL_GENERATION: _Row(False, "group generation id not valid"),
    _E.INCONSISTENT_GROUP_PROTOCOL: _Row(False, "group protocol incompatible with the group's members"),
    _E.INVALID_GROUP_ID: _Row(False, "invalid group id"),
    _E.UNKNOWN_MEMBER_ID: _Row(False, "coordinator does not know this member", _K.MEMBER_FENCED),
    _E.INVALID_SESSION_TIMEOUT: _Row(False, "session timeout outside the broker's allowed range"),
    _E.REBALANCE_IN_PROGRESS: _Row(False, "group is rebalancing"),
    _E.INVALID_COMMIT_OFFSET_SIZE: _Row(False, "committed offset data size not valid"),
    _E.TOPIC_AUTHORIZATION_FAILED: _Row(False, "not authorized for this topic", NO_KIND, TopicAuthorizationError),
    _E.GROUP_AUTHORIZATION_FAILED: _Row(False, "not authorized for this group", NO_KIND, GroupAuthorizationError),
    _E.CLUSTER_AUTHORIZATION_FAILED: _Row(False, "not authorized for this cluster operation", _K.PRODUCER_FATAL,
                                          ClusterAuthorizationError),
    _E.INVALID_TIMESTAMP: _Row(False, "record timestamp outside the accepted range"),
    _E.UNSUPPORTED_SASL_MECHANISM: _Row(False, "broker does not support this SASL mechanism"),
    _E.ILLEGAL_SASL_STATE: _Row(False, "request not valid in the current SASL state"),
    _E.UNSUPPORTED_VERSION: _Row(False, "API version not supported by the broker", _K.PRODUCER_FATAL),
    _E.TOPIC_ALREADY_EXISTS: _Row(False, "topic already exists"),
    _E.INVALID_PARTITIONS: _Row(False, "invalid number of partitions"),
    _E.INVALID_REPLICATION_FACTOR: _Row(False, "replication factor below 1 or above the broker count"),
    _E.INVALID_REPLICA_ASSIGNMENT: _Row(False, "invalid replica assignment"),
    _E.INVALID_CONFIG: _Row(False, "invalid configuration"),
    _E.NOT_CONTROLLER: _Row(True, "broker is not the controller", _K.CONTROLLER_MOVED),
    _E.INVALID_REQUEST: _Row(False, "broker found the request malformed"),
    _E.UNSUPPORTED_FOR_MESSAGE_FORMAT: _Row(False, "broker's message format does not support this request"),
    _E.POLICY_VIOLATION: _Row(False, "request violates a configured policy"),
    _E.OUT_OF_ORDER_SEQUENCE_NUMBER: _Row(False, "broker received an out-of-order sequence number"),
    _E.DUPLICATE_SEQUENCE_NUMBER: _Row(False, "broker received a duplicate sequence number"),
    _E.INVALID_PRODUCER_EPOCH: _Row(False, "producer epoch is older than the broker's", _K.FENCED | _K.PRODUCER_FATAL),
    _E.INVALID_TXN_STATE: _Row(False, "transactional operation not valid in the current state", _K.TXN_FATAL),
    _E.INVALID_PRODUCER_ID_MAPPING: _Row(False, "producer id not assigned to this transactional id", _K.TXN_ABORTABLE),
    _E.INVALID_TRANSACTION_TIMEOUT: _Row(False, "transaction timeout above transaction.max.timeout.ms"),
    _E.CONCURRENT_TRANSACTIONS: _Row(True, "another transaction operation on this id is in progress"),
    _E.TRANSACTION_COORDINATOR_FENCED: _Row(False, "transaction coordinator fenced by a newer one"),
    _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: _Row(
        False, "not authorized for this transactional id", _K.PRODUCER_FATAL | _K.TXN_FATAL,
        TransactionalIdAuthorizationError),
    _E.SECURITY_DISABLED: _Row(False, "security features are disabled"),
    _E.OPERATION_NOT_ATTEMPTED: _Row(False, "broker did not attempt the operation"),
    _E.KAFKA_STORAGE_ERROR: _Row(True, "disk error on the broker"),
    _E.LOG_DIR_NOT_FOUND: _Row(False, "log directory not found"),
    _E.SASL_AUTHENTICATION_FAILED: _Row(False, "SASL authentication failed"),
    _E.UNKNOWN_PRODUCER_ID: _Row(False, "broker has no state for this producer id", _K.TXN_ABORTABLE),
    _E.REASSIGNMENT_IN_PROGRESS: _Row(False, "partition reassignment in progress"),
    _E.DELEGATION_TOKEN_AUTH_DISABLED: _Row(False, "delegation tokens are disabled"),
    _E.DELEGATION_TOKEN_NOT_FOUND: _Row(False, "delegation token not found"),
    _E.DELEGATION_TOKEN_OWNER_MISMATCH: _Row(False, "principal is not the token's owner or renewer"),
    _E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: _Row(False, "delegation tokens not allowed on this channel"),
    _E.DELEGATION_TOKEN_AUTHORIZATION_FAILED: _Row(False, "not authorized for delegation tokens", NO_KIND,
                                                   AuthorizationError),
    _E.DELEGATION_TOKEN_EXPIRED: _Row(False, "delegation token expired"),
    _E.INVALID_PRINCIPAL_TYPE: _Row(False, "principal type not supported"),
    _E.NON_EMPTY_GROUP: _Row(False, "group is not empty"),
    _E.GROUP_ID_NOT_FOUND: _Row(False, "group id not found"),
    _E.FETCH_SESSION_ID_NOT_FOUND: _Row(True, "fetch session id not found"),
    _E.INVALID_FETCH_SESSION_EPOCH: _Row(True, "fetch session epoch invalid"),
    _E.LISTENER_NOT_FOUND: _Row(True, "leader has no listener matching this connection's"),
    _E.TOPIC_DELETION_DISABLED: _Row(False, "topic deletion is disabled"),
    _E.FENCED_LEADER_EPOCH: _Row(True, "leader epoch in the request is older than the broker's", _K.STALE_METADATA),
    _E.UNKNOWN_LEADER_EPOCH: _Row(True, "leader epoch in the request is newer than the broker's", _K.STALE_METADATA),
    _E.UNSUPPORTED_COMPRESSION_TYPE: _Row(False, "compression type not supported for this request"),
    _E.STALE_BROKER_EPOCH: _Row(False, "broker epoch changed"),
    _E.OFFSET_NOT_AVAILABLE: _Row(True, "leader high watermark has not caught up yet"),
    _E.MEMBER_ID_REQUIRED: _Row(False, "member needs a member id to join"),
    _E.PREFERRED_LEADER_NOT_AVAILABLE: _Row(True, "preferred leader not available"),
    _E.GROUP_MAX_SIZE_REACHED: _Row(False, "group reached its maximum size", NO_KIND, GroupMaxSizeReachedError),
    _E.FENCED_INSTANCE_ID: _Row(False, "static member fenced by another with the same instance id"),
    _E.ELIGIBLE_LEADERS_NOT_AVAILABLE: _Row(True, "no eligible partition leaders available"),
    _E.ELECTION_NOT_NEEDED: _Row(True, "leader election not needed"),
    _E.NO_REASSIGNMENT_IN_PROGRESS: _Row(False, "no partition reassignment in progress"),
    _E.GROUP_SUBSCRIBED_TO_TOPIC: _Row(False, "group still subscribed to the topic"),
    _E.INVALID_RECORD: _Row(False, "broker-side record validation failed"),
    _E.UNSTABLE_OFFSET_COMMIT: _Row(True, "unstable offsets pending"),
    _E.THROTTLING_QUOTA_EXCEEDED: _Row(True, "throttling quota exceeded"),
    _E.PRODUCER_FENCED: _Row(
        False, "a newer producer with the same transactional id is active", _K.FENCED | _K.PRODUCER_FATAL),
    _E.RESOURCE_NOT_FOUND: _Row(False, "resource does not exist"),
    _E.DUPLICATE_RESOURCE: _Row(False, "resource named twice"),
    _E.UNACCEPTABLE_CREDENTIAL: _Row(False, "credential not acceptable"),
    _E.INCONSISTENT_VOTER_SET: _Row(False, "inconsistent raft voter set"),
    _E.INVALID_UPDATE_VERSION: _Row(False, "invalid update version"),
    _E.FEATURE_UPDATE_FAILED: _Row(False, "finalized feature update failed"),
    _E.PRINCIPAL_DESERIALIZATION_FAILURE: _Row(False, "principal could not be deserialized"),
    _E.SNAPSHOT_NOT_FOUND: _Row(False, "snapshot not found"),
    _E.POSITION_OUT_OF_RANGE: _Row(False, "position out of range"),
    _E.UNKNOWN_TOPIC_ID: _Row(True, "broker does not host this topic id"),
    _E.DUPLICATE_BROKER_REGISTRATION: _Row(False, "broker id already in use"),
    _E.BROKER_ID_NOT_REGISTERED: _Row(False, "broker id not registered"),
    _E.INCONSISTENT_TOPIC_ID: _Row(True, "topic id does not match the log's", _K.STALE_METADATA),
    _E.INCONSISTENT_CLUSTER_ID: _Row(False, "cluster id does not match"),
    _E.TRANSACTIONAL_ID_NOT_FOUND: _Row(False, "transactional id not found"),
    _E.FETCH_SESSION_TOPIC_ID_ERROR: _Row(True, "fetch session used topic ids inconsistently"),
    _E.INELIGIBLE_REPLICA: _Row(False, "new ISR holds an ineligible replica"),
    _E.NEW_LEADER_ELECTED: _Row(False, "partition state updated but the leader changed"),
    _E.OFFSET_MOVED_TO_TIERED_STORAGE: _Row(False, "offset moved to tiered storage"),
    _E.FENCED_MEMBER_EPOCH: _Row(False, "member epoch fenced by the group coordinator", _K.MEMBER_FENCED,
                                 FencedMemberEpochError),
    _E.UNRELEASED_INSTANCE_ID: _Row(False, "instance id still used by another member", NO_KIND,
                                    UnreleasedInstanceIdError),
    _E.UNSUPPORTED_ASSIGNOR: _Row(False, "assignor not supported by the group", NO_KIND, UnsupportedAssignorError),
    _E.STALE_MEMBER_EPOCH: _Row(False, "member epoch is stale", _K.MEMBER_EPOCH_STALE, StaleMemberEpochError),
    _E.MISMATCHED_ENDPOINT_TYPE: _Row(False, "request sent to the wrong endpoint type"),
    _E.UNSUPPORTED_ENDPOINT_TYPE: _Row(False, "endpoint type not supported"),
    _E.UNKNOWN_CONTROLLER_ID: _Row(False, "controller id not known"),
    _E.UNKNOWN_SUBSCRIPTION_ID: _Row(False, "telemetry subscription id unknown or outdated"),
    _E.TELEMETRY_TOO_LARGE: _Row(False, "telemetry push too large"),
    _E.INVALID_REGISTRATION: _Row(False, "broker registration invalid"),
    _E.TRANSACTION_ABORTABLE: _Row(False, "transaction failed; abort it to go on with this transactional id"),
    _E.INVALID_RECORD_STATE: _Row(False, "record not in a state that allows this acknowledgement (its acquisition "
                                         "lock expired, or it was acknowledged already)", NO_KIND,
                                  InvalidRecordStateError),
    _E.SHARE_SESSION_NOT_FOUND: _Row(True, "share session not found"),
    _E.INVALID_SHARE_SESSION_EPOCH: _Row(True, "share session epoch invalid"),
    _E.FENCED_STATE_EPOCH: _Row(False, "share coordinator rejected the share-group state epoch"),
    _E.INVALID_VOTER_KEY: _Row(False, "voter key does not match the receiving replica's"),
    _E.DUPLICATE_VOTER: _Row(False, "voter already in the voter set"),
    _E.VOTER_NOT_FOUND: _Row(False, "voter not in the voter set"),
    _E.INVALID_REGULAR_EXPRESSION: _Row(False, "regular expression not valid"),
    _E.REBOOTSTRAP_REQUIRED: _Row(False, "client metadata stale: rebootstrap"),
    _E.STREAMS_INVALID_TOPOLOGY: _Row(False, "streams topology invalid"),
    _E.STREAMS_INVALID_TOPOLOGY_EPOCH: _Row(False, "streams topology epoch invalid"),
    _E.STREAMS_TOPOLOGY_FENCED: _Row(False, "streams topology fenced"),
    _E.SHARE_SESSION_LIMIT_REACHED: _Row(False, "the broker's share session cache is full"),
}

ERRORS: Mapping[int, ErrorSpec] = MappingProxyType({code: ErrorSpec(code.name, *row) for code, row in _ROWS.items()})
ERROR_CODES: Mapping[str, int] = MappingProxyType({code.name: code for code in ErrorCode})


def error_info(code: int) -> ErrorSpec:
    return ERRORS.get(code) or ErrorSpec(f"UNKNOWN_ERROR_CODE_{code}", False, "error code unknown to cykafka")


def kinds_of(code: int | None) -> ErrorKind:
    """The code's kinds; none for no code (None) or a code unknown to cykafka."""
    spec = ERRORS.get(code) if code is not None else None
    return spec.kinds if spec is not None else NO_KIND


def error_for(code: int, message: str | None = None) -> BrokerResponseError:
    """The typed error for a broker's error code: the table's class, name and retriable flag, and the broker's
    message if any (else the table's)."""
    spec = error_info(code)
    return spec.exception(f"{spec.name} ({code}): {message or spec.message}", code=code, name=spec.name,
                          retriable=spec.retriable)


def answer_error(part: Mapping[str, Any], what: str) -> BrokerResponseError | None:
    """The error an answer (or one item of it) carries in its error_code and error_message, typed and naming what
    ("what: the broker's message"), or None when its code is 0: how a client reads every per-item error."""
    if not (code := part["error_code"]):
        return None
    return error_for(code, f"{what}: {part.get('error_message') or ''}".rstrip(": "))


__all__ = ["ERRORS", "ERROR_CODES", "NO_KIND", "ErrorCode", "ErrorKind", "ErrorSpec", "answer_error", "error_for",
           "error_info", "kinds_of"]
