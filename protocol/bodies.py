"""Typed bodies of every API cykafka speaks, GENERATED from protocol/apis.py by
scripts/protocol_bodies.py: do not edit (tests/test_protocol_bodies.py checks it is up to date).

For mypy only: a request body is a `<Api>RequestBody` (total=False: a field left out takes its default), an answer a
`<Api>ResponseBody` (every field; a version lacking one holds its default); a struct nested in a body is named after
its path (`FetchRequestTopicsPartitions`). Annotate a body literal with its type and mypy checks its field names and
value types; at run time the codec checks them again (protocol/codec.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict
from uuid import UUID


class ProduceRequestTopicDataPartitionData(TypedDict, total=False):
    """Per partition of the topic."""

    # the partition (v0+)
    index: int
    # the record batches to append (v0+)
    records: bytes | bytearray | memoryview | None


class ProduceRequestTopicData(TypedDict, total=False):
    """The records to append, per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partition_data: Sequence[ProduceRequestTopicDataPartitionData]


class ProduceRequestBody(TypedDict, total=False):
    """Produce (key 0) request body, v3-12."""

    # the producer's transactional.id, if any (v0+)
    transactional_id: str | None
    # acknowledgements wanted: 0 none, 1 the leader, -1 every in-sync replica (v0+)
    acks: int
    # how long the broker may wait for the acknowledgements (v0+)
    timeout_ms: int
    # the records to append, per topic (v0+)
    topic_data: Sequence[ProduceRequestTopicData]


class ProduceResponseResponsesPartitionResponsesRecordErrors(TypedDict):
    """The records that made the batch fail."""

    # the record's index in its batch (v0+)
    batch_index: int
    # why the record was refused (v0+)
    batch_index_error_message: str | None


class ProduceResponseResponsesPartitionResponsesCurrentLeader(TypedDict):
    """The new leader, when this broker is not it."""

    # the partition's leader, -1 if unknown (v0+)
    leader_id: int
    # the leader's epoch, -1 if unknown (v0+)
    leader_epoch: int


class ProduceResponseResponsesPartitionResponses(TypedDict):
    """Per partition of the topic."""

    # the partition (v0+)
    index: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the offset given to the first record (v0+)
    base_offset: int
    # the append time with LogAppendTime, else -1 (v0+)
    log_append_time_ms: int
    # the partition's log start offset (v5+)
    log_start_offset: int
    # the records that made the batch fail (v8+)
    record_errors: list[ProduceResponseResponsesPartitionResponsesRecordErrors]
    # the broker's message for the error, if any (v8+)
    error_message: str | None
    # the new leader, when this broker is not it (v10+)
    current_leader: ProduceResponseResponsesPartitionResponsesCurrentLeader


class ProduceResponseResponses(TypedDict):
    """The outcome per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partition_responses: list[ProduceResponseResponsesPartitionResponses]


class ProduceResponseNodeEndpoints(TypedDict):
    """The brokers named as new leaders."""

    # the broker's id (v0+)
    node_id: int
    # the broker's host name (v0+)
    host: str
    # the broker's port (v0+)
    port: int
    # the broker's rack, if it has one (v1+)
    rack: str | None


class ProduceResponseBody(TypedDict):
    """Produce (key 0) response body, v3-12."""

    # the outcome per topic (v0+)
    responses: list[ProduceResponseResponses]
    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the brokers named as new leaders (v10+)
    node_endpoints: list[ProduceResponseNodeEndpoints]


class FetchRequestTopicsPartitions(TypedDict, total=False):
    """Per partition of the topic."""

    # the partition (v0+)
    partition: int
    # the leader epoch the consumer knows, -1 if none (v9+, ignorable)
    current_leader_epoch: int
    # the offset to fetch from (v0+)
    fetch_offset: int
    # the epoch of the last record fetched (v12+)
    last_fetched_epoch: int
    # a follower's log start offset; -1 for a consumer (v5+, ignorable)
    log_start_offset: int
    # at most this many bytes of this partition (v0+)
    partition_max_bytes: int


class FetchRequestTopics(TypedDict, total=False):
    """The partitions to fetch, per topic."""

    # the topic's name (v0+)
    topic: str
    # per partition of the topic (v0+)
    partitions: Sequence[FetchRequestTopicsPartitions]


class FetchRequestForgottenTopicsData(TypedDict, total=False):
    """Partitions leaving the fetch session."""

    # the topic's name (v0+)
    topic: str
    # the partitions to drop from the session (v0+)
    partitions: Sequence[int]


class FetchRequestBody(TypedDict, total=False):
    """Fetch (key 1) request body, v4-12."""

    # the cluster id, if known (KRaft only) (v12+, ignorable)
    cluster_id: str | None
    # the replica fetching; -1 for a consumer (v0+)
    replica_id: int
    # how long the broker may wait for min_bytes to arrive (v0+)
    max_wait_ms: int
    # the bytes to wait for before answering (v0+)
    min_bytes: int
    # at most this many bytes in the answer (v0+, ignorable)
    max_bytes: int
    # 0 read_uncommitted, 1 read_committed (v0+, ignorable)
    isolation_level: int
    # the fetch session (KIP-227), 0 for none (v7+, ignorable)
    session_id: int
    # the session's epoch: 0 opens one, -1 fetches outside any (or closes it) (v7+, ignorable)
    session_epoch: int
    # the partitions to fetch, per topic (v0+)
    topics: Sequence[FetchRequestTopics]
    # partitions leaving the fetch session (v7+)
    forgotten_topics_data: Sequence[FetchRequestForgottenTopicsData]
    # the consumer's rack (for a preferred read replica) (v11+, ignorable)
    rack_id: str


class FetchResponseResponsesPartitionsDivergingEpoch(TypedDict):
    """Where a follower's log diverges from the leader's."""

    # the epoch (v0+)
    epoch: int
    # its end offset (v0+)
    end_offset: int


class FetchResponseResponsesPartitionsCurrentLeader(TypedDict):
    """The leader, when it moved."""

    # the partition's leader, -1 if unknown (v0+)
    leader_id: int
    # the leader's epoch, -1 if unknown (v0+)
    leader_epoch: int


class FetchResponseResponsesPartitionsSnapshotId(TypedDict):
    """The snapshot to fetch instead (KRaft)."""

    # the snapshot's end offset (v0+)
    end_offset: int
    # the snapshot's epoch (v0+)
    epoch: int


class FetchResponseResponsesPartitionsAbortedTransactions(TypedDict):
    """The aborted transactions in the data (read_committed)."""

    # the aborting producer (v0+)
    producer_id: int
    # the transaction's first offset (v0+)
    first_offset: int


class FetchResponseResponsesPartitions(TypedDict):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the offset after the last committed record (v0+)
    high_watermark: int
    # the offset after the last decided transaction (v0+)
    last_stable_offset: int
    # the partition's first offset (v5+)
    log_start_offset: int
    # where a follower's log diverges from the leader's (v12+)
    diverging_epoch: FetchResponseResponsesPartitionsDivergingEpoch
    # the leader, when it moved (v12+)
    current_leader: FetchResponseResponsesPartitionsCurrentLeader
    # the snapshot to fetch instead (KRaft) (v12+)
    snapshot_id: FetchResponseResponsesPartitionsSnapshotId
    # the aborted transactions in the data (read_committed) (v0+)
    aborted_transactions: list[FetchResponseResponsesPartitionsAbortedTransactions] | None
    # a replica to fetch from instead, -1 (v11+)
    preferred_read_replica: int
    # the record batches (v0+)
    records: bytes | None


class FetchResponseResponses(TypedDict):
    """The data per topic."""

    # the topic's name (v0+)
    topic: str
    # per partition of the topic (v0+)
    partitions: list[FetchResponseResponsesPartitions]


class FetchResponseBody(TypedDict):
    """Fetch (key 1) response body, v4-12."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # a whole-request (session) error, 0 for none (v7+)
    error_code: int
    # the fetch session this answer belongs to, 0 for none (v7+)
    session_id: int
    # the data per topic (v0+)
    responses: list[FetchResponseResponses]


class ListOffsetsRequestTopicsPartitions(TypedDict, total=False):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the leader epoch the client knows, -1 if none (v4+, ignorable)
    current_leader_epoch: int
    # a timestamp in ms, or -1 latest, -2 earliest, -3 max timestamp (v0+)
    timestamp: int


class ListOffsetsRequestTopics(TypedDict, total=False):
    """The partitions to look up, per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partitions: Sequence[ListOffsetsRequestTopicsPartitions]


class ListOffsetsRequestBody(TypedDict, total=False):
    """ListOffsets (key 2) request body, v1-7."""

    # the replica asking; -1 for a client (v0+)
    replica_id: int
    # 0 read_uncommitted, 1 read_committed (the last stable offset) (v2+)
    isolation_level: int
    # the partitions to look up, per topic (v0+)
    topics: Sequence[ListOffsetsRequestTopics]


class ListOffsetsResponseTopicsPartitions(TypedDict):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the found record's timestamp, -1 if none (v0+)
    timestamp: int
    # the found offset, -1 if none (v0+)
    offset: int
    # the leader epoch of the found record (v4+)
    leader_epoch: int


class ListOffsetsResponseTopics(TypedDict):
    """The offsets found, per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partitions: list[ListOffsetsResponseTopicsPartitions]


class ListOffsetsResponseBody(TypedDict):
    """ListOffsets (key 2) response body, v1-7."""

    # how long the request was throttled by a quota, in ms (v2+)
    throttle_time_ms: int
    # the offsets found, per topic (v0+)
    topics: list[ListOffsetsResponseTopics]


class MetadataRequestTopics(TypedDict, total=False):
    """The topics to describe; null for every topic."""

    # the topic's id (zero: by name) (v10+)
    topic_id: UUID
    # the topic's name (v0+)
    name: str | None


class MetadataRequestBody(TypedDict, total=False):
    """Metadata (key 3) request body, v1-12."""

    # the topics to describe; null for every topic (v0+)
    topics: Sequence[MetadataRequestTopics] | None
    # whether asking creates a missing topic (v4+)
    allow_auto_topic_creation: bool
    # whether to list the cluster's ACL rights (v8-10)
    include_cluster_authorized_operations: bool
    # whether to list each topic's ACL rights (v8+)
    include_topic_authorized_operations: bool


class MetadataResponseBrokers(TypedDict):
    """Every broker of the cluster."""

    # the broker's id (v0+)
    node_id: int
    # the broker's host name (v0+)
    host: str
    # the broker's port (v0+)
    port: int
    # the broker's rack, if it has one (v1+)
    rack: str | None


class MetadataResponseTopicsPartitions(TypedDict):
    """The topic's partitions."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the partition (v0+)
    partition_index: int
    # the leader's broker id, -1 if none (v0+)
    leader_id: int
    # the leader's epoch (v7+)
    leader_epoch: int
    # the replicas' broker ids (v0+)
    replica_nodes: list[int]
    # the in-sync replicas' broker ids (v0+)
    isr_nodes: list[int]
    # the offline replicas' broker ids (v5+)
    offline_replicas: list[int]


class MetadataResponseTopics(TypedDict):
    """The topics asked for."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the topic's name (v0+)
    name: str | None
    # the topic's id (v10+)
    topic_id: UUID
    # whether the topic is internal (__consumer_offsets, ...) (v0+)
    is_internal: bool
    # the topic's partitions (v0+)
    partitions: list[MetadataResponseTopicsPartitions]
    # the topic's ACL rights (bits) (v8+)
    topic_authorized_operations: int


class MetadataResponseBody(TypedDict):
    """Metadata (key 3) response body, v1-12."""

    # how long the request was throttled by a quota, in ms (v3+)
    throttle_time_ms: int
    # every broker of the cluster (v0+)
    brokers: list[MetadataResponseBrokers]
    # the cluster's id (v2+)
    cluster_id: str | None
    # the controller's broker id, -1 if unknown (v0+)
    controller_id: int
    # the topics asked for (v0+)
    topics: list[MetadataResponseTopics]
    # the cluster's ACL rights (bits) (v8-10)
    cluster_authorized_operations: int


class OffsetCommitRequestTopicsPartitions(TypedDict, total=False):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the offset to commit (v0+)
    committed_offset: int
    # the leader epoch of the last record read, -1 (v6+, ignorable)
    committed_leader_epoch: int
    # the commit's time (v1 only), -1 (v1)
    commit_timestamp: int
    # the offset's metadata (v0+)
    committed_metadata: str | None


class OffsetCommitRequestTopics(TypedDict, total=False):
    """The offsets to commit, per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partitions: Sequence[OffsetCommitRequestTopicsPartitions]


class OffsetCommitRequestBody(TypedDict, total=False):
    """OffsetCommit (key 8) request body, v0-9."""

    # the group (v0+)
    group_id: str
    # the member's generation (classic) or member epoch (consumer protocol, KIP-848), -1 outside one (v1+, ignorable)
    generation_id_or_member_epoch: int
    # the member's id, empty outside a generation (v1+, ignorable)
    member_id: str
    # the static member's instance id, if any (v7+)
    group_instance_id: str | None
    # how long to keep the offsets, -1 (v2-4, ignorable)
    retention_time_ms: int
    # the offsets to commit, per topic (v0+)
    topics: Sequence[OffsetCommitRequestTopics]


class OffsetCommitResponseTopicsPartitions(TypedDict):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the error code, 0 for none (v0+)
    error_code: int


class OffsetCommitResponseTopics(TypedDict):
    """The outcome per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partitions: list[OffsetCommitResponseTopicsPartitions]


class OffsetCommitResponseBody(TypedDict):
    """OffsetCommit (key 8) response body, v0-9."""

    # how long the request was throttled by a quota, in ms (v3+)
    throttle_time_ms: int
    # the outcome per topic (v0+)
    topics: list[OffsetCommitResponseTopics]


class OffsetFetchRequestTopics(TypedDict, total=False):
    """The partitions to read, null for all (v0-7; the v8+ form is in groups)."""

    # the topic's name (v0+)
    name: str
    # its partitions (v0+)
    partition_indexes: Sequence[int]


class OffsetFetchRequestGroupsTopics(TypedDict, total=False):
    """The partitions to read, null for all."""

    # the topic's name (v0+)
    name: str
    # its partitions (v0+)
    partition_indexes: Sequence[int]


class OffsetFetchRequestGroups(TypedDict, total=False):
    """The groups to read (v8+; a body also carries the v0-7 form, group_id and topics)."""

    # the group (v0+)
    group_id: str
    # the consumer-protocol member asking (KIP-848), null outside one (v9+, ignorable)
    member_id: str | None
    # that member's epoch, -1 outside one (a stale one is answered STALE_MEMBER_EPOCH) (v9+, ignorable)
    member_epoch: int
    # the partitions to read, null for all (v0+)
    topics: Sequence[OffsetFetchRequestGroupsTopics] | None


class OffsetFetchRequestBody(TypedDict, total=False):
    """OffsetFetch (key 9) request body, v0-9."""

    # the group (v0-7; a body also carries the v8+ form, groups) (v0-7, ignorable)
    group_id: str
    # the partitions to read, null for all (v0-7; the v8+ form is in groups) (v0-7, ignorable)
    topics: Sequence[OffsetFetchRequestTopics] | None
    # the groups to read (v8+; a body also carries the v0-7 form, group_id and topics) (v8+, ignorable)
    groups: Sequence[OffsetFetchRequestGroups]
    # wait for pending transactional offsets (an older broker answers without waiting) (v7+, ignorable)
    require_stable: bool


class OffsetFetchResponseTopicsPartitions(TypedDict):
    """Per partition."""

    # the partition (v0+)
    partition_index: int
    # the committed offset, -1 if none (v0+)
    committed_offset: int
    # the committed leader epoch, -1 (v5+)
    committed_leader_epoch: int
    # the offset's metadata (v0+)
    metadata: str | None
    # the error code, 0 for none (v0+)
    error_code: int


class OffsetFetchResponseTopics(TypedDict):
    """The committed offsets, per topic (v0-7)."""

    # the topic's name (v0+)
    name: str
    # per partition (v0+)
    partitions: list[OffsetFetchResponseTopicsPartitions]


class OffsetFetchResponseGroupsTopicsPartitions(TypedDict):
    """Per partition."""

    # the partition (v0+)
    partition_index: int
    # the committed offset, -1 if none (v0+)
    committed_offset: int
    # the committed leader epoch, -1 (v0+)
    committed_leader_epoch: int
    # the offset's metadata (v0+)
    metadata: str | None
    # the error code, 0 for none (v0+)
    error_code: int


class OffsetFetchResponseGroupsTopics(TypedDict):
    """The committed offsets, per topic."""

    # the topic's name (v0+)
    name: str
    # per partition (v0+)
    partitions: list[OffsetFetchResponseGroupsTopicsPartitions]


class OffsetFetchResponseGroups(TypedDict):
    """Per group (v8+)."""

    # the group (v0+)
    group_id: str
    # the committed offsets, per topic (v0+)
    topics: list[OffsetFetchResponseGroupsTopics]
    # the error code, 0 for none (v0+)
    error_code: int


class OffsetFetchResponseBody(TypedDict):
    """OffsetFetch (key 9) response body, v0-9."""

    # how long the request was throttled by a quota, in ms (v3+)
    throttle_time_ms: int
    # the committed offsets, per topic (v0-7) (v0-7)
    topics: list[OffsetFetchResponseTopics]
    # a group-level error, 0 for none (v2-7) (v2-7)
    error_code: int
    # per group (v8+) (v8+)
    groups: list[OffsetFetchResponseGroups]


class FindCoordinatorRequestBody(TypedDict, total=False):
    """FindCoordinator (key 10) request body, v1-4."""

    # the group id or transactional.id (v0-3; a body also carries the v4+ form, coordinator_keys) (v0-3, ignorable)
    key: str
    # 0 a group, 1 a transactional.id (v0+)
    key_type: int
    # the keys to look up (v4+; a body also carries the v0-3 form, key) (v4+, ignorable)
    coordinator_keys: Sequence[str]


class FindCoordinatorResponseCoordinators(TypedDict):
    """One answer per key (v4+)."""

    # the key looked up (v0+)
    key: str
    # its coordinator's broker id (v0+)
    node_id: int
    # its host (v0+)
    host: str
    # its port (v0+)
    port: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class FindCoordinatorResponseBody(TypedDict):
    """FindCoordinator (key 10) response body, v1-4."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0-3) (v0-3)
    error_code: int
    # the broker's message for the error (v0-3) (v0-3)
    error_message: str | None
    # the coordinator's broker id (v0-3) (v0-3)
    node_id: int
    # the coordinator's host (v0-3) (v0-3)
    host: str
    # the coordinator's port (v0-3) (v0-3)
    port: int
    # one answer per key (v4+) (v4+)
    coordinators: list[FindCoordinatorResponseCoordinators]


class JoinGroupRequestProtocols(TypedDict, total=False):
    """The assignors the member supports, preferred first."""

    # the assignor (v0+)
    name: str
    # the member's subscription for it (v0+)
    metadata: bytes | bytearray | memoryview


class JoinGroupRequestBody(TypedDict, total=False):
    """JoinGroup (key 11) request body, v0-9."""

    # the group (v0+)
    group_id: str
    # how long the member may go without a heartbeat (v0+)
    session_timeout_ms: int
    # how long a rebalance may wait for the member to rejoin (v1+, ignorable)
    rebalance_timeout_ms: int
    # the member's id, empty on the first join (v0+)
    member_id: str
    # the static member's instance id, if any (v5+)
    group_instance_id: str | None
    # the kind of group: 'consumer' (v0+)
    protocol_type: str
    # the assignors the member supports, preferred first (v0+)
    protocols: Sequence[JoinGroupRequestProtocols]
    # why the member (re)joins (v8+, ignorable)
    reason: str | None


class JoinGroupResponseMembers(TypedDict):
    """Every member, for the leader to assign."""

    # the member's id (v0+)
    member_id: str
    # its instance id (v5+)
    group_instance_id: str | None
    # its subscription (v0+)
    metadata: bytes


class JoinGroupResponseBody(TypedDict):
    """JoinGroup (key 11) response body, v0-9."""

    # how long the request was throttled by a quota, in ms (v2+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the new generation (v0+)
    generation_id: int
    # the kind of group (v7+)
    protocol_type: str | None
    # the assignor the group chose (v0+)
    protocol_name: str | None
    # the leader's member id (v0+)
    leader: str
    # whether the leader skips assigning (static leader rejoin) (v9+)
    skip_assignment: bool
    # this member's id (v0+)
    member_id: str
    # every member, for the leader to assign (v0+)
    members: list[JoinGroupResponseMembers]


class HeartbeatRequestBody(TypedDict, total=False):
    """Heartbeat (key 12) request body, v0-4."""

    # the group (v0+)
    group_id: str
    # the member's generation (v0+)
    generation_id: int
    # the member's id (v0+)
    member_id: str
    # the static member's instance id, if any (v3+)
    group_instance_id: str | None


class HeartbeatResponseBody(TypedDict):
    """Heartbeat (key 12) response body, v0-4."""

    # how long the request was throttled by a quota, in ms (v1+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int


class LeaveGroupRequestMembers(TypedDict, total=False):
    """The members leaving (v3+; a body also carries the v0-2 form, member_id)."""

    # the member's id (v0+)
    member_id: str
    # its instance id (v0+)
    group_instance_id: str | None
    # why it leaves (v5+, ignorable)
    reason: str | None


class LeaveGroupRequestBody(TypedDict, total=False):
    """LeaveGroup (key 13) request body, v0-5."""

    # the group (v0+)
    group_id: str
    # the member leaving (v0-2; a body also carries the v3+ form, members) (v0-2, ignorable)
    member_id: str
    # the members leaving (v3+; a body also carries the v0-2 form, member_id) (v3+, ignorable)
    members: Sequence[LeaveGroupRequestMembers]


class LeaveGroupResponseMembers(TypedDict):
    """The outcome per member."""

    # the member's id (v0+)
    member_id: str
    # its instance id (v0+)
    group_instance_id: str | None
    # the error code, 0 for none (v0+)
    error_code: int


class LeaveGroupResponseBody(TypedDict):
    """LeaveGroup (key 13) response body, v0-5."""

    # how long the request was throttled by a quota, in ms (v1+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the outcome per member (v3+)
    members: list[LeaveGroupResponseMembers]


class SyncGroupRequestAssignments(TypedDict, total=False):
    """The leader's assignment per member; empty from a follower."""

    # the member's id (v0+)
    member_id: str
    # its assignment (v0+)
    assignment: bytes | bytearray | memoryview


class SyncGroupRequestBody(TypedDict, total=False):
    """SyncGroup (key 14) request body, v0-5."""

    # the group (v0+)
    group_id: str
    # the member's generation (v0+)
    generation_id: int
    # the member's id (v0+)
    member_id: str
    # the static member's instance id, if any (v3+)
    group_instance_id: str | None
    # the kind of group (v5+, ignorable)
    protocol_type: str | None
    # the assignor the group chose (v5+, ignorable)
    protocol_name: str | None
    # the leader's assignment per member; empty from a follower (v0+)
    assignments: Sequence[SyncGroupRequestAssignments]


class SyncGroupResponseBody(TypedDict):
    """SyncGroup (key 14) response body, v0-5."""

    # how long the request was throttled by a quota, in ms (v1+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the kind of group (v5+)
    protocol_type: str | None
    # the assignor the group chose (v5+)
    protocol_name: str | None
    # this member's assignment (v0+)
    assignment: bytes


class DescribeGroupsRequestBody(TypedDict, total=False):
    """DescribeGroups (key 15) request body, v0-5."""

    # the groups to describe (v0+)
    groups: Sequence[str]
    # whether to list each group's ACL rights (v3+)
    include_authorized_operations: bool


class DescribeGroupsResponseGroupsMembers(TypedDict):
    """The group's members."""

    # the member's id (v0+)
    member_id: str
    # its instance id (v4+)
    group_instance_id: str | None
    # its client.id (v0+)
    client_id: str
    # its host (v0+)
    client_host: str
    # its subscription (v0+)
    member_metadata: bytes
    # its assignment (v0+)
    member_assignment: bytes


class DescribeGroupsResponseGroups(TypedDict):
    """Per group."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the group (v0+)
    group_id: str
    # its state, e.g. Stable, Dead (v0+)
    group_state: str
    # the kind of group (v0+)
    protocol_type: str
    # the assignor it uses (v0+)
    protocol_data: str
    # the group's members (v0+)
    members: list[DescribeGroupsResponseGroupsMembers]
    # the group's ACL rights (bits) (v3+)
    authorized_operations: int


class DescribeGroupsResponseBody(TypedDict):
    """DescribeGroups (key 15) response body, v0-5."""

    # how long the request was throttled by a quota, in ms (v1+)
    throttle_time_ms: int
    # per group (v0+)
    groups: list[DescribeGroupsResponseGroups]


class ListGroupsRequestBody(TypedDict, total=False):
    """ListGroups (key 16) request body, v0-5."""

    # only groups in these states; empty for all (v4+)
    states_filter: Sequence[str]
    # only groups of these types (classic, consumer, share, streams); empty for all (v5+)
    types_filter: Sequence[str]


class ListGroupsResponseGroups(TypedDict):
    """The broker's groups."""

    # the group (v0+)
    group_id: str
    # the kind of group (v0+)
    protocol_type: str
    # its state (v4+)
    group_state: str
    # its type: classic, consumer, share or streams (v5+)
    group_type: str


class ListGroupsResponseBody(TypedDict):
    """ListGroups (key 16) response body, v0-5."""

    # how long the request was throttled by a quota, in ms (v1+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's groups (v0+)
    groups: list[ListGroupsResponseGroups]


class SaslHandshakeRequestBody(TypedDict, total=False):
    """SaslHandshake (key 17) request body, v0-1."""

    # the SASL mechanism to use (v0+)
    mechanism: str


class SaslHandshakeResponseBody(TypedDict):
    """SaslHandshake (key 17) response body, v0-1."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the mechanisms the broker has enabled (v0+)
    mechanisms: list[str]


class ApiVersionsRequestBody(TypedDict, total=False):
    """ApiVersions (key 18) request body, v0-3."""

    # the client's name (v3+, ignorable)
    client_software_name: str
    # the client's version (v3+, ignorable)
    client_software_version: str


class ApiVersionsResponseApiKeys(TypedDict):
    """The APIs the broker speaks."""

    # the API (v0+)
    api_key: int
    # the oldest version the broker speaks (v0+)
    min_version: int
    # the newest version the broker speaks (v0+)
    max_version: int


class ApiVersionsResponseSupportedFeatures(TypedDict):
    """The features the broker supports."""

    # the feature (v0+)
    name: str
    # its oldest version (v0+)
    min_version: int
    # its newest version (v0+)
    max_version: int


class ApiVersionsResponseFinalizedFeatures(TypedDict):
    """The features the cluster has finalized."""

    # the feature (v0+)
    name: str
    # its newest finalized level (v0+)
    max_version_level: int
    # its oldest finalized level (v0+)
    min_version_level: int


class ApiVersionsResponseBody(TypedDict):
    """ApiVersions (key 18) response body, v0-3."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the APIs the broker speaks (v0+)
    api_keys: list[ApiVersionsResponseApiKeys]
    # how long the request was throttled by a quota, in ms (v1+)
    throttle_time_ms: int
    # the features the broker supports (v3+)
    supported_features: list[ApiVersionsResponseSupportedFeatures]
    # the epoch of the finalized features (v3+)
    finalized_features_epoch: int
    # the features the cluster has finalized (v3+)
    finalized_features: list[ApiVersionsResponseFinalizedFeatures]
    # whether a ZooKeeper migration may start (v3+)
    zk_migration_ready: bool


class CreateTopicsRequestTopicsAssignments(TypedDict, total=False):
    """Replicas by hand, per partition."""

    # the partition (v0+)
    partition_index: int
    # the replicas' broker ids (v0+)
    broker_ids: Sequence[int]


class CreateTopicsRequestTopicsConfigs(TypedDict, total=False):
    """The topic's configs."""

    # the config key (v0+)
    name: str
    # its value (v0+)
    value: str | None


class CreateTopicsRequestTopics(TypedDict, total=False):
    """The topics to create."""

    # the topic's name (v0+)
    name: str
    # its partition count, -1 for the broker's default (v0+)
    num_partitions: int
    # its replication factor, -1 for the broker's default (v0+)
    replication_factor: int
    # replicas by hand, per partition (v0+)
    assignments: Sequence[CreateTopicsRequestTopicsAssignments]
    # the topic's configs (v0+)
    configs: Sequence[CreateTopicsRequestTopicsConfigs]


class CreateTopicsRequestBody(TypedDict, total=False):
    """CreateTopics (key 19) request body, v2-7."""

    # the topics to create (v0+)
    topics: Sequence[CreateTopicsRequestTopics]
    # how long the broker may take to create them (v0+)
    timeout_ms: int
    # whether to check only, creating nothing (v0+)
    validate_only: bool


class CreateTopicsResponseTopicsConfigs(TypedDict):
    """The topic's configs."""

    # the config key (v0+)
    name: str
    # its value (v0+)
    value: str | None
    # whether it is read-only (v0+)
    read_only: bool
    # where the value comes from (v0+)
    config_source: int
    # whether the value is secret (then null) (v0+)
    is_sensitive: bool


class CreateTopicsResponseTopics(TypedDict):
    """The outcome per topic."""

    # the topic's name (v0+)
    name: str
    # the new topic's id (v7+)
    topic_id: UUID
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # why its configs are not described (v5+)
    topic_config_error_code: int
    # its partition count (v5+)
    num_partitions: int
    # its replication factor (v5+)
    replication_factor: int
    # the topic's configs (v5+)
    configs: list[CreateTopicsResponseTopicsConfigs] | None


class CreateTopicsResponseBody(TypedDict):
    """CreateTopics (key 19) response body, v2-7."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per topic (v0+)
    topics: list[CreateTopicsResponseTopics]


class DeleteTopicsRequestTopics(TypedDict, total=False):
    """The topics to delete (v6+; a body also carries the v0-5 form, topic_names)."""

    # the topic's name (v0+)
    name: str | None
    # the topic's id (zero: by name) (v0+)
    topic_id: UUID


class DeleteTopicsRequestBody(TypedDict, total=False):
    """DeleteTopics (key 20) request body, v0-6."""

    # the topics to delete (v6+; a body also carries the v0-5 form, topic_names) (v6+, ignorable)
    topics: Sequence[DeleteTopicsRequestTopics]
    # the topics to delete (v0-5; a body also carries the v6+ form, topics) (v0-5, ignorable)
    topic_names: Sequence[str]
    # how long the broker may take to delete them (v0+)
    timeout_ms: int


class DeleteTopicsResponseResponses(TypedDict):
    """The outcome per topic."""

    # the topic's name (v0+)
    name: str | None
    # the topic's id (v6+)
    topic_id: UUID
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v5+)
    error_message: str | None


class DeleteTopicsResponseBody(TypedDict):
    """DeleteTopics (key 20) response body, v0-6."""

    # how long the request was throttled by a quota, in ms (v1+)
    throttle_time_ms: int
    # the outcome per topic (v0+)
    responses: list[DeleteTopicsResponseResponses]


class DeleteRecordsRequestTopicsPartitions(TypedDict, total=False):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # delete the records before it; -1: the high watermark (v0+)
    offset: int


class DeleteRecordsRequestTopics(TypedDict, total=False):
    """The partitions to cut, per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partitions: Sequence[DeleteRecordsRequestTopicsPartitions]


class DeleteRecordsRequestBody(TypedDict, total=False):
    """DeleteRecords (key 21) request body, v0-2."""

    # the partitions to cut, per topic (v0+)
    topics: Sequence[DeleteRecordsRequestTopics]
    # how long the broker may wait for the replicas (v0+)
    timeout_ms: int


class DeleteRecordsResponseTopicsPartitions(TypedDict):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the partition's new first offset (v0+)
    low_watermark: int
    # the error code, 0 for none (v0+)
    error_code: int


class DeleteRecordsResponseTopics(TypedDict):
    """The outcome per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partitions: list[DeleteRecordsResponseTopicsPartitions]


class DeleteRecordsResponseBody(TypedDict):
    """DeleteRecords (key 21) response body, v0-2."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per topic (v0+)
    topics: list[DeleteRecordsResponseTopics]


class InitProducerIdRequestBody(TypedDict, total=False):
    """InitProducerId (key 22) request body, v0-5."""

    # the transactional.id, null for an idempotent producer (v0+)
    transactional_id: str | None
    # how long a transaction may stay open (v0+)
    transaction_timeout_ms: int
    # the current producer id, to bump its epoch (KIP-360); -1 (v3+)
    producer_id: int
    # the current epoch, to bump it (KIP-360); -1 (v3+)
    producer_epoch: int


class InitProducerIdResponseBody(TypedDict):
    """InitProducerId (key 22) response body, v0-5."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the producer id to use (v0+)
    producer_id: int
    # the epoch to use (v0+)
    producer_epoch: int


class OffsetForLeaderEpochRequestTopicsPartitions(TypedDict, total=False):
    """Per partition of the topic."""

    # the partition (v0+)
    partition: int
    # the leader epoch the client knows, -1 (v2+)
    current_leader_epoch: int
    # the epoch whose end offset is wanted (v0+)
    leader_epoch: int


class OffsetForLeaderEpochRequestTopics(TypedDict, total=False):
    """The partitions to look up, per topic."""

    # the topic's name (v0+)
    topic: str
    # per partition of the topic (v0+)
    partitions: Sequence[OffsetForLeaderEpochRequestTopicsPartitions]


class OffsetForLeaderEpochRequestBody(TypedDict, total=False):
    """OffsetForLeaderEpoch (key 23) request body, v0-4."""

    # the replica asking; -1 a consumer, -2 debugging (v3+)
    replica_id: int
    # the partitions to look up, per topic (v0+)
    topics: Sequence[OffsetForLeaderEpochRequestTopics]


class OffsetForLeaderEpochResponseTopicsPartitions(TypedDict):
    """Per partition of the topic."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the partition (v0+)
    partition: int
    # the largest epoch up to the one asked (v1+)
    leader_epoch: int
    # that epoch's end offset (v0+)
    end_offset: int


class OffsetForLeaderEpochResponseTopics(TypedDict):
    """The end offsets, per topic."""

    # the topic's name (v0+)
    topic: str
    # per partition of the topic (v0+)
    partitions: list[OffsetForLeaderEpochResponseTopicsPartitions]


class OffsetForLeaderEpochResponseBody(TypedDict):
    """OffsetForLeaderEpoch (key 23) response body, v0-4."""

    # how long the request was throttled by a quota, in ms (v2+)
    throttle_time_ms: int
    # the end offsets, per topic (v0+)
    topics: list[OffsetForLeaderEpochResponseTopics]


class AddPartitionsToTxnRequestV3AndBelowTopics(TypedDict, total=False):
    """The partitions to add to the transaction."""

    # the topic's name (v0+)
    name: str
    # its partitions (v0+)
    partitions: Sequence[int]


class AddPartitionsToTxnRequestBody(TypedDict, total=False):
    """AddPartitionsToTxn (key 24) request body, v0-3."""

    # the producer's transactional.id (v0+)
    v3_and_below_transactional_id: str
    # the producer id (v0+)
    v3_and_below_producer_id: int
    # the producer epoch (v0+)
    v3_and_below_producer_epoch: int
    # the partitions to add to the transaction (v0+)
    v3_and_below_topics: Sequence[AddPartitionsToTxnRequestV3AndBelowTopics]


class AddPartitionsToTxnResponseResultsByTopicV3AndBelowResultsByPartition(TypedDict):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the error code, 0 for none (v0+)
    partition_error_code: int


class AddPartitionsToTxnResponseResultsByTopicV3AndBelow(TypedDict):
    """The outcome per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    results_by_partition: list[AddPartitionsToTxnResponseResultsByTopicV3AndBelowResultsByPartition]


class AddPartitionsToTxnResponseBody(TypedDict):
    """AddPartitionsToTxn (key 24) response body, v0-3."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per topic (v0+)
    results_by_topic_v3_and_below: list[AddPartitionsToTxnResponseResultsByTopicV3AndBelow]


class AddOffsetsToTxnRequestBody(TypedDict, total=False):
    """AddOffsetsToTxn (key 25) request body, v0-4."""

    # the producer's transactional.id (v0+)
    transactional_id: str
    # the producer id (v0+)
    producer_id: int
    # the producer epoch (v0+)
    producer_epoch: int
    # the group whose offsets the transaction will commit (v0+)
    group_id: str


class AddOffsetsToTxnResponseBody(TypedDict):
    """AddOffsetsToTxn (key 25) response body, v0-4."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int


class EndTxnRequestBody(TypedDict, total=False):
    """EndTxn (key 26) request body, v0-5."""

    # the producer's transactional.id (v0+)
    transactional_id: str
    # the producer id (v0+)
    producer_id: int
    # the producer epoch (v0+)
    producer_epoch: int
    # true commits the transaction, false aborts it (v0+)
    committed: bool


class EndTxnResponseBody(TypedDict):
    """EndTxn (key 26) response body, v0-5."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the producer id for the next transaction (Transactions V2) (v5+)
    producer_id: int
    # the bumped epoch for the next transaction (Transactions V2) (v5+)
    producer_epoch: int


class TxnOffsetCommitRequestTopicsPartitions(TypedDict, total=False):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the offset to commit (v0+)
    committed_offset: int
    # the leader epoch of the last record read, -1 (v2+, ignorable)
    committed_leader_epoch: int
    # the offset's metadata (v0+)
    committed_metadata: str | None


class TxnOffsetCommitRequestTopics(TypedDict, total=False):
    """The offsets to commit, per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partitions: Sequence[TxnOffsetCommitRequestTopicsPartitions]


class TxnOffsetCommitRequestBody(TypedDict, total=False):
    """TxnOffsetCommit (key 28) request body, v0-5."""

    # the producer's transactional.id (v0+)
    transactional_id: str
    # the group whose offsets are committed (v0+)
    group_id: str
    # the producer id (v0+)
    producer_id: int
    # the producer epoch (v0+)
    producer_epoch: int
    # the group generation, to fence zombies (KIP-447); -1 (v3+)
    generation_id: int
    # the member id in that generation (KIP-447) (v3+)
    member_id: str
    # the static member's instance id, if any (v3+)
    group_instance_id: str | None
    # the offsets to commit, per topic (v0+)
    topics: Sequence[TxnOffsetCommitRequestTopics]


class TxnOffsetCommitResponseTopicsPartitions(TypedDict):
    """Per partition of the topic."""

    # the partition (v0+)
    partition_index: int
    # the error code, 0 for none (v0+)
    error_code: int


class TxnOffsetCommitResponseTopics(TypedDict):
    """The outcome per topic."""

    # the topic's name (v0+)
    name: str
    # per partition of the topic (v0+)
    partitions: list[TxnOffsetCommitResponseTopicsPartitions]


class TxnOffsetCommitResponseBody(TypedDict):
    """TxnOffsetCommit (key 28) response body, v0-5."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per topic (v0+)
    topics: list[TxnOffsetCommitResponseTopics]


class DescribeAclsRequestBody(TypedDict, total=False):
    """DescribeAcls (key 29) request body, v1-3."""

    # the resource type to match (1: any) (v0+)
    resource_type_filter: int
    # the resource name to match, null for any (v0+)
    resource_name_filter: str | None
    # the pattern type to match (1 any, 2 match) (v0+)
    pattern_type_filter: int
    # the principal to match, null for any (v0+)
    principal_filter: str | None
    # the host to match, null for any (v0+)
    host_filter: str | None
    # the operation to match (1: any) (v0+)
    operation: int
    # the permission type to match (1: any) (v0+)
    permission_type: int


class DescribeAclsResponseResourcesAcls(TypedDict):
    """The resource's ACL entries."""

    # the principal, e.g. User:alice (v0+)
    principal: str
    # the host, * for any (v0+)
    host: str
    # the operation (AclOperation code) (v0+)
    operation: int
    # ALLOW (3) or DENY (2) (v0+)
    permission_type: int


class DescribeAclsResponseResources(TypedDict):
    """The matching ACLs, per resource."""

    # the resource type (v0+)
    resource_type: int
    # the resource name (or prefix) (v0+)
    resource_name: str
    # 3 literal, 4 prefixed (v0+)
    pattern_type: int
    # the resource's ACL entries (v0+)
    acls: list[DescribeAclsResponseResourcesAcls]


class DescribeAclsResponseBody(TypedDict):
    """DescribeAcls (key 29) response body, v1-3."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the matching ACLs, per resource (v0+)
    resources: list[DescribeAclsResponseResources]


class CreateAclsRequestCreations(TypedDict, total=False):
    """The ACLs to create."""

    # the resource type (v0+)
    resource_type: int
    # the resource name (or prefix) (v0+)
    resource_name: str
    # 3 literal, 4 prefixed (v0+)
    resource_pattern_type: int
    # the principal, e.g. User:alice (v0+)
    principal: str
    # the host, * for any (v0+)
    host: str
    # the operation (AclOperation code) (v0+)
    operation: int
    # ALLOW (3) or DENY (2) (v0+)
    permission_type: int


class CreateAclsRequestBody(TypedDict, total=False):
    """CreateAcls (key 30) request body, v1-3."""

    # the ACLs to create (v0+)
    creations: Sequence[CreateAclsRequestCreations]


class CreateAclsResponseResults(TypedDict):
    """The outcome per ACL, in the request's order."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class CreateAclsResponseBody(TypedDict):
    """CreateAcls (key 30) response body, v1-3."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per ACL, in the request's order (v0+)
    results: list[CreateAclsResponseResults]


class DeleteAclsRequestFilters(TypedDict, total=False):
    """The filters whose matching ACLs to delete."""

    # the resource type to match (1: any) (v0+)
    resource_type_filter: int
    # the resource name to match, null for any (v0+)
    resource_name_filter: str | None
    # the pattern type to match (1 any, 2 match) (v0+)
    pattern_type_filter: int
    # the principal to match, null for any (v0+)
    principal_filter: str | None
    # the host to match, null for any (v0+)
    host_filter: str | None
    # the operation to match (1: any) (v0+)
    operation: int
    # the permission type to match (1: any) (v0+)
    permission_type: int


class DeleteAclsRequestBody(TypedDict, total=False):
    """DeleteAcls (key 31) request body, v1-3."""

    # the filters whose matching ACLs to delete (v0+)
    filters: Sequence[DeleteAclsRequestFilters]


class DeleteAclsResponseFilterResultsMatchingAcls(TypedDict):
    """The ACLs the filter matched (deleted unless their error says otherwise)."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the resource type (v0+)
    resource_type: int
    # the resource name (or prefix) (v0+)
    resource_name: str
    # 3 literal, 4 prefixed (v0+)
    pattern_type: int
    # the principal, e.g. User:alice (v0+)
    principal: str
    # the host, * for any (v0+)
    host: str
    # the operation (AclOperation code) (v0+)
    operation: int
    # ALLOW (3) or DENY (2) (v0+)
    permission_type: int


class DeleteAclsResponseFilterResults(TypedDict):
    """The outcome per filter, in the request's order."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the ACLs the filter matched (deleted unless their error says otherwise) (v0+)
    matching_acls: list[DeleteAclsResponseFilterResultsMatchingAcls]


class DeleteAclsResponseBody(TypedDict):
    """DeleteAcls (key 31) response body, v1-3."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per filter, in the request's order (v0+)
    filter_results: list[DeleteAclsResponseFilterResults]


class DescribeConfigsRequestResources(TypedDict, total=False):
    """The resources whose configs to describe."""

    # 2 a topic, 4 a broker (v0+)
    resource_type: int
    # the topic's name, or the broker's id (v0+)
    resource_name: str
    # the configs to describe, null for all (v0+)
    configuration_keys: Sequence[str] | None


class DescribeConfigsRequestBody(TypedDict, total=False):
    """DescribeConfigs (key 32) request body, v0-4."""

    # the resources whose configs to describe (v0+)
    resources: Sequence[DescribeConfigsRequestResources]
    # whether to list each config's synonyms (v1+)
    include_synonyms: bool
    # whether to include each config's documentation (v3+)
    include_documentation: bool


class DescribeConfigsResponseResultsConfigsSynonyms(TypedDict):
    """The config's synonyms, by precedence."""

    # the synonym's key (v0+)
    name: str
    # its value (v0+)
    value: str | None
    # where it comes from (v0+)
    source: int


class DescribeConfigsResponseResultsConfigs(TypedDict):
    """The resource's configs."""

    # the config key (v0+)
    name: str
    # its value (null when sensitive) (v0+)
    value: str | None
    # whether it is read-only (v0+)
    read_only: bool
    # whether it has its default value (v0) (v0)
    is_default: bool
    # where the value comes from (v1+)
    config_source: int
    # whether the value is secret (v0+)
    is_sensitive: bool
    # the config's synonyms, by precedence (v1+)
    synonyms: list[DescribeConfigsResponseResultsConfigsSynonyms]
    # the config's type (v3+)
    config_type: int
    # the config's documentation (v3+)
    documentation: str | None


class DescribeConfigsResponseResults(TypedDict):
    """Per resource."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # 2 a topic, 4 a broker (v0+)
    resource_type: int
    # the topic's name, or the broker's id (v0+)
    resource_name: str
    # the resource's configs (v0+)
    configs: list[DescribeConfigsResponseResultsConfigs]


class DescribeConfigsResponseBody(TypedDict):
    """DescribeConfigs (key 32) response body, v0-4."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # per resource (v0+)
    results: list[DescribeConfigsResponseResults]


class SaslAuthenticateRequestBody(TypedDict, total=False):
    """SaslAuthenticate (key 36) request body, v0-2."""

    # the SASL mechanism's next message (v0+)
    auth_bytes: bytes | bytearray | memoryview


class SaslAuthenticateResponseBody(TypedDict):
    """SaslAuthenticate (key 36) response body, v0-2."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the SASL mechanism's answer (v0+)
    auth_bytes: bytes
    # how long the session lasts, 0 for ever (v1+)
    session_lifetime_ms: int


class CreatePartitionsRequestTopicsAssignments(TypedDict, total=False):
    """Replicas by hand, per new partition; null for the broker's choice."""

    # the new partition's replicas' broker ids (v0+)
    broker_ids: Sequence[int]


class CreatePartitionsRequestTopics(TypedDict, total=False):
    """The topics to grow."""

    # the topic's name (v0+)
    name: str
    # the topic's new partition count (v0+)
    count: int
    # replicas by hand, per new partition; null for the broker's choice (v0+)
    assignments: Sequence[CreatePartitionsRequestTopicsAssignments] | None


class CreatePartitionsRequestBody(TypedDict, total=False):
    """CreatePartitions (key 37) request body, v0-3."""

    # the topics to grow (v0+)
    topics: Sequence[CreatePartitionsRequestTopics]
    # how long the broker may take to create the partitions (v0+)
    timeout_ms: int
    # whether to check only, creating nothing (v0+)
    validate_only: bool


class CreatePartitionsResponseResults(TypedDict):
    """The outcome per topic."""

    # the topic's name (v0+)
    name: str
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class CreatePartitionsResponseBody(TypedDict):
    """CreatePartitions (key 37) response body, v0-3."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per topic (v0+)
    results: list[CreatePartitionsResponseResults]


class DeleteGroupsRequestBody(TypedDict, total=False):
    """DeleteGroups (key 42) request body, v0-2."""

    # the groups to delete (v0+)
    groups_names: Sequence[str]


class DeleteGroupsResponseResults(TypedDict):
    """The outcome per group."""

    # the group (v0+)
    group_id: str
    # the error code, 0 for none (v0+)
    error_code: int


class DeleteGroupsResponseBody(TypedDict):
    """DeleteGroups (key 42) response body, v0-2."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per group (v0+)
    results: list[DeleteGroupsResponseResults]


class ElectLeadersRequestTopicPartitions(TypedDict, total=False):
    """The partitions; null: every partition."""

    # the topic's name (v0+)
    topic: str
    # its partitions to elect a leader for (v0+)
    partitions: Sequence[int]


class ElectLeadersRequestBody(TypedDict, total=False):
    """ElectLeaders (key 43) request body, v1-2."""

    # 0 the preferred replica, 1 unclean: a live replica outside the ISR if none is (v0+)
    election_type: int
    # the partitions; null: every partition (v0+)
    topic_partitions: Sequence[ElectLeadersRequestTopicPartitions] | None
    # how long the controller may wait for the elections (v0+)
    timeout_ms: int


class ElectLeadersResponseReplicaElectionResultsPartitionResult(TypedDict):
    """Per partition."""

    # the partition (v0+)
    partition_id: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class ElectLeadersResponseReplicaElectionResults(TypedDict):
    """Per topic."""

    # the topic's name (v0+)
    topic: str
    # per partition (v0+)
    partition_result: list[ElectLeadersResponseReplicaElectionResultsPartitionResult]


class ElectLeadersResponseBody(TypedDict):
    """ElectLeaders (key 43) response body, v1-2."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # a whole-request error, 0 for none (v0+)
    error_code: int
    # per topic (v0+)
    replica_election_results: list[ElectLeadersResponseReplicaElectionResults]


class IncrementalAlterConfigsRequestResourcesConfigs(TypedDict, total=False):
    """The changes."""

    # the config key (v0+)
    name: str
    # 0 set, 1 delete, 2 append, 3 subtract (v0+)
    config_operation: int
    # the value the operation takes (v0+)
    value: str | None


class IncrementalAlterConfigsRequestResources(TypedDict, total=False):
    """The resources whose configs to change."""

    # 2 a topic, 4 a broker (v0+)
    resource_type: int
    # the topic's name, or the broker's id (v0+)
    resource_name: str
    # the changes (v0+)
    configs: Sequence[IncrementalAlterConfigsRequestResourcesConfigs]


class IncrementalAlterConfigsRequestBody(TypedDict, total=False):
    """IncrementalAlterConfigs (key 44) request body, v0-1."""

    # the resources whose configs to change (v0+)
    resources: Sequence[IncrementalAlterConfigsRequestResources]
    # whether to check only, changing nothing (v0+)
    validate_only: bool


class IncrementalAlterConfigsResponseResponses(TypedDict):
    """The outcome per resource."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # 2 a topic, 4 a broker (v0+)
    resource_type: int
    # the topic's name, or the broker's id (v0+)
    resource_name: str


class IncrementalAlterConfigsResponseBody(TypedDict):
    """IncrementalAlterConfigs (key 44) response body, v0-1."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the outcome per resource (v0+)
    responses: list[IncrementalAlterConfigsResponseResponses]


class DescribeUserScramCredentialsRequestUsers(TypedDict, total=False):
    """The users to describe; null or empty: every user with a credential."""

    # the user name (v0+)
    name: str


class DescribeUserScramCredentialsRequestBody(TypedDict, total=False):
    """DescribeUserScramCredentials (key 50) request body, v0."""

    # the users to describe; null or empty: every user with a credential (v0+)
    users: Sequence[DescribeUserScramCredentialsRequestUsers] | None


class DescribeUserScramCredentialsResponseResultsCredentialInfos(TypedDict):
    """The user's credentials."""

    # the SCRAM mechanism: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512 (v0+)
    mechanism: int
    # the credential's PBKDF2 iterations (v0+)
    iterations: int


class DescribeUserScramCredentialsResponseResults(TypedDict):
    """Per user."""

    # the user name (v0+)
    user: str
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the user's credentials (v0+)
    credential_infos: list[DescribeUserScramCredentialsResponseResultsCredentialInfos]


class DescribeUserScramCredentialsResponseBody(TypedDict):
    """DescribeUserScramCredentials (key 50) response body, v0."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # per user (v0+)
    results: list[DescribeUserScramCredentialsResponseResults]


class AlterUserScramCredentialsRequestDeletions(TypedDict, total=False):
    """The credentials to remove."""

    # the user name (v0+)
    name: str
    # the SCRAM mechanism: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512 (v0+)
    mechanism: int


class AlterUserScramCredentialsRequestUpsertions(TypedDict, total=False):
    """The credentials to create or replace."""

    # the user name (v0+)
    name: str
    # the SCRAM mechanism: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512 (v0+)
    mechanism: int
    # the PBKDF2 iterations (v0+)
    iterations: int
    # a random salt the client chose (v0+)
    salt: bytes | bytearray | memoryview
    # the password salted by the client (RFC 5802's SaltedPassword) (v0+)
    salted_password: bytes | bytearray | memoryview


class AlterUserScramCredentialsRequestBody(TypedDict, total=False):
    """AlterUserScramCredentials (key 51) request body, v0."""

    # the credentials to remove (v0+)
    deletions: Sequence[AlterUserScramCredentialsRequestDeletions]
    # the credentials to create or replace (v0+)
    upsertions: Sequence[AlterUserScramCredentialsRequestUpsertions]


class AlterUserScramCredentialsResponseResults(TypedDict):
    """Per user altered."""

    # the user name (v0+)
    user: str
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class AlterUserScramCredentialsResponseBody(TypedDict):
    """AlterUserScramCredentials (key 51) response body, v0."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # per user altered (v0+)
    results: list[AlterUserScramCredentialsResponseResults]


class DescribeClusterRequestBody(TypedDict, total=False):
    """DescribeCluster (key 60) request body, v0-1."""

    # whether to list the cluster's ACL rights (v0+)
    include_cluster_authorized_operations: bool
    # 1 brokers, 2 controllers (v1+)
    endpoint_type: int


class DescribeClusterResponseBrokers(TypedDict):
    """The cluster's brokers."""

    # the broker's id (v0+)
    broker_id: int
    # its host (v0+)
    host: str
    # its port (v0+)
    port: int
    # its rack, if it has one (v0+)
    rack: str | None


class DescribeClusterResponseBody(TypedDict):
    """DescribeCluster (key 60) response body, v0-1."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the kind of endpoints listed (v1+)
    endpoint_type: int
    # the cluster's id (v0+)
    cluster_id: str
    # the controller's broker id, -1 if unknown (v0+)
    controller_id: int
    # the cluster's brokers (v0+)
    brokers: list[DescribeClusterResponseBrokers]
    # the cluster's ACL rights (bits) (v0+)
    cluster_authorized_operations: int


class ConsumerGroupHeartbeatRequestTopicPartitions(TypedDict, total=False):
    """The partitions the member owns now; null if unchanged."""

    # the topic's id (v0+)
    topic_id: UUID
    # the partitions (v0+)
    partitions: Sequence[int]


class ConsumerGroupHeartbeatRequestBody(TypedDict, total=False):
    """ConsumerGroupHeartbeat (key 68) request body, v0-1."""

    # the group (v0+)
    group_id: str
    # the member's id: generated by the client (v1), kept for its lifetime (v0+)
    member_id: str
    # the member's epoch: 0 to join, -1 to leave, -2 a static member's leave (v0+)
    member_epoch: int
    # group.instance.id (static membership); null if unchanged (v0+)
    instance_id: str | None
    # the member's rack; null if unchanged (v0+)
    rack_id: str | None
    # max.poll.interval.ms: how long the member may take to revoke; -1 if unchanged (v0+)
    rebalance_timeout_ms: int
    # the topics subscribed to; null if unchanged (v0+)
    subscribed_topic_names: Sequence[str] | None
    # the RE2/J regex of the topics subscribed to (the broker evaluates it); null if unchanged (v1+, ignorable)
    subscribed_topic_regex: str | None
    # group.remote.assignor; null for the broker's default or unchanged (v0+)
    server_assignor: str | None
    # the partitions the member owns now; null if unchanged (v0+)
    topic_partitions: Sequence[ConsumerGroupHeartbeatRequestTopicPartitions] | None


class ConsumerGroupHeartbeatResponseAssignmentTopicPartitions(TypedDict):
    """The partitions assigned, per topic."""

    # the topic's id (v0+)
    topic_id: UUID
    # the partitions (v0+)
    partitions: list[int]


class ConsumerGroupHeartbeatResponseAssignment(TypedDict):
    """The member's whole target assignment; null if unchanged."""

    # the partitions assigned, per topic (v0+)
    topic_partitions: list[ConsumerGroupHeartbeatResponseAssignmentTopicPartitions]


class ConsumerGroupHeartbeatResponseBody(TypedDict):
    """ConsumerGroupHeartbeat (key 68) response body, v0-1."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the member's id, as the coordinator knows it (v0+)
    member_id: str | None
    # the member's epoch (v0+)
    member_epoch: int
    # how often to heartbeat, in ms (v0+)
    heartbeat_interval_ms: int
    # the member's whole target assignment; null if unchanged (v0+)
    assignment: ConsumerGroupHeartbeatResponseAssignment | None


class ConsumerGroupDescribeRequestBody(TypedDict, total=False):
    """ConsumerGroupDescribe (key 69) request body, v0-1."""

    # the consumer groups to describe (v0+)
    group_ids: Sequence[str]
    # whether to include the group's ACL rights (v0+)
    include_authorized_operations: bool


class ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions(TypedDict):
    """Per topic."""

    # the topic's id (v0+)
    topic_id: UUID
    # the topic's name (v0+)
    topic_name: str
    # the partitions (v0+)
    partitions: list[int]


class ConsumerGroupDescribeResponseGroupsMembersAssignment(TypedDict):
    """The partitions it owns now."""

    # per topic (v0+)
    topic_partitions: list[ConsumerGroupDescribeResponseGroupsMembersAssignmentTopicPartitions]


class ConsumerGroupDescribeResponseGroupsMembersTargetAssignmentTopicPartitions(TypedDict):
    """Per topic."""

    # the topic's id (v0+)
    topic_id: UUID
    # the topic's name (v0+)
    topic_name: str
    # the partitions (v0+)
    partitions: list[int]


class ConsumerGroupDescribeResponseGroupsMembersTargetAssignment(TypedDict):
    """The partitions it is to own."""

    # per topic (v0+)
    topic_partitions: list[ConsumerGroupDescribeResponseGroupsMembersTargetAssignmentTopicPartitions]


class ConsumerGroupDescribeResponseGroupsMembers(TypedDict):
    """The group's members."""

    # the member's id (v0+)
    member_id: str
    # its group.instance.id, if static (v0+)
    instance_id: str | None
    # its rack, if any (v0+)
    rack_id: str | None
    # its epoch (v0+)
    member_epoch: int
    # its client.id (v0+)
    client_id: str
    # its host (v0+)
    client_host: str
    # the topics it subscribed to (v0+)
    subscribed_topic_names: list[str]
    # the regex it subscribed with, if any (v0+)
    subscribed_topic_regex: str | None
    # the partitions it owns now (v0+)
    assignment: ConsumerGroupDescribeResponseGroupsMembersAssignment
    # the partitions it is to own (v0+)
    target_assignment: ConsumerGroupDescribeResponseGroupsMembersTargetAssignment
    # -1 unknown, 0 a classic-protocol member (online upgrade), 1 a consumer-protocol member (v1+)
    member_type: int


class ConsumerGroupDescribeResponseGroups(TypedDict):
    """Per group."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the group (v0+)
    group_id: str
    # its state: Empty, Assigning, Reconciling, Stable, Dead (v0+)
    group_state: str
    # the group's epoch (v0+)
    group_epoch: int
    # the target assignment's epoch (v0+)
    assignment_epoch: int
    # the server-side assignor (v0+)
    assignor_name: str
    # the group's members (v0+)
    members: list[ConsumerGroupDescribeResponseGroupsMembers]
    # the group's ACL rights (bits) (v0+)
    authorized_operations: int


class ConsumerGroupDescribeResponseBody(TypedDict):
    """ConsumerGroupDescribe (key 69) response body, v0-1."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # per group (v0+)
    groups: list[ConsumerGroupDescribeResponseGroups]


class GetTelemetrySubscriptionsRequestBody(TypedDict, total=False):
    """GetTelemetrySubscriptions (key 71) request body, v0."""

    # the client's instance id; zero on the first ask, then the one the broker assigned (v0+)
    client_instance_id: UUID


class GetTelemetrySubscriptionsResponseBody(TypedDict):
    """GetTelemetrySubscriptions (key 71) response body, v0."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the client's instance id, assigned by the broker when asked with zero (v0+)
    client_instance_id: UUID
    # the id of the matching subscriptions' set, sent back with each push (v0+)
    subscription_id: int
    # the compression types the broker takes for pushes, preferred first (empty: none) (v0+)
    accepted_compression_types: list[int]
    # how often to push, in ms (v0+)
    push_interval_ms: int
    # the largest metrics payload the broker takes, in bytes (v0+)
    telemetry_max_bytes: int
    # true: sums as deltas since the last push; false: cumulative (v0+)
    delta_temporality: bool
    # metric name prefixes wanted; empty: none (do not push), one empty string: all (v0+)
    requested_metrics: list[str]


class PushTelemetryRequestBody(TypedDict, total=False):
    """PushTelemetry (key 72) request body, v0."""

    # the client's instance id; zero on the first ask, then the one the broker assigned (v0+)
    client_instance_id: UUID
    # the subscription id the last GetTelemetrySubscriptions answer gave (v0+)
    subscription_id: int
    # true on the client's last push, as it closes (v0+)
    terminating: bool
    # the codec of metrics: 0 none, or an accepted compression type (v0+)
    compression_type: int
    # the metrics, an OTLP MetricsData protobuf message (v0+)
    metrics: bytes | bytearray | memoryview


class PushTelemetryResponseBody(TypedDict):
    """PushTelemetry (key 72) response body, v0."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int


class ShareGroupHeartbeatRequestBody(TypedDict, total=False):
    """ShareGroupHeartbeat (key 76) request body, v1."""

    # the share group (v0+)
    group_id: str
    # the member's id, generated by the client and kept for its lifetime (v0+)
    member_id: str
    # the member's epoch: 0 to join, -1 to leave (v0+)
    member_epoch: int
    # the member's rack; null if unchanged since the last heartbeat (v0+)
    rack_id: str | None
    # the topics subscribed to; null if unchanged since the last heartbeat (v0+)
    subscribed_topic_names: Sequence[str] | None


class ShareGroupHeartbeatResponseAssignmentTopicPartitions(TypedDict):
    """The partitions assigned, per topic."""

    # the topic's id (v0+)
    topic_id: UUID
    # the partitions (v0+)
    partitions: list[int]


class ShareGroupHeartbeatResponseAssignment(TypedDict):
    """The member's assignment; null if unchanged."""

    # the partitions assigned, per topic (v0+)
    topic_partitions: list[ShareGroupHeartbeatResponseAssignmentTopicPartitions]


class ShareGroupHeartbeatResponseBody(TypedDict):
    """ShareGroupHeartbeat (key 76) response body, v1."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the member's id, as the coordinator knows it (v0+)
    member_id: str | None
    # the member's epoch (v0+)
    member_epoch: int
    # how often to heartbeat, in ms (v0+)
    heartbeat_interval_ms: int
    # the member's assignment; null if unchanged (v0+)
    assignment: ShareGroupHeartbeatResponseAssignment | None


class ShareGroupDescribeRequestBody(TypedDict, total=False):
    """ShareGroupDescribe (key 77) request body, v1."""

    # the share groups to describe (v0+)
    group_ids: Sequence[str]
    # whether to include the group's ACL rights (v0+)
    include_authorized_operations: bool


class ShareGroupDescribeResponseGroupsMembersAssignmentTopicPartitions(TypedDict):
    """The partitions assigned, per topic."""

    # the topic's id (v0+)
    topic_id: UUID
    # the topic's name (v0+)
    topic_name: str
    # the partitions (v0+)
    partitions: list[int]


class ShareGroupDescribeResponseGroupsMembersAssignment(TypedDict):
    """Its assignment."""

    # the partitions assigned, per topic (v0+)
    topic_partitions: list[ShareGroupDescribeResponseGroupsMembersAssignmentTopicPartitions]


class ShareGroupDescribeResponseGroupsMembers(TypedDict):
    """The group's members."""

    # the member's id (v0+)
    member_id: str
    # its rack, if any (v0+)
    rack_id: str | None
    # its epoch (v0+)
    member_epoch: int
    # its client.id (v0+)
    client_id: str
    # its host (v0+)
    client_host: str
    # the topics it subscribed to (v0+)
    subscribed_topic_names: list[str]
    # its assignment (v0+)
    assignment: ShareGroupDescribeResponseGroupsMembersAssignment


class ShareGroupDescribeResponseGroups(TypedDict):
    """Per group."""

    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the group (v0+)
    group_id: str
    # its state: Empty, Stable, Dead (v0+)
    group_state: str
    # the group's epoch (v0+)
    group_epoch: int
    # the assignment's epoch (v0+)
    assignment_epoch: int
    # the server-side assignor (v0+)
    assignor_name: str
    # the group's members (v0+)
    members: list[ShareGroupDescribeResponseGroupsMembers]
    # the group's ACL rights (bits) (v0+)
    authorized_operations: int


class ShareGroupDescribeResponseBody(TypedDict):
    """ShareGroupDescribe (key 77) response body, v1."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # per group (v0+)
    groups: list[ShareGroupDescribeResponseGroups]


class ShareFetchRequestTopicsPartitionsAcknowledgementBatches(TypedDict, total=False):
    """The ranges of records acknowledged."""

    # the first offset acknowledged (v0+)
    first_offset: int
    # the last offset acknowledged (inclusive) (v0+)
    last_offset: int
    # one type for the whole range, or one per offset: 0 gap, 1 accept, 2 release, 3 reject, 4 renew (v0+)
    acknowledge_types: Sequence[int]


class ShareFetchRequestTopicsPartitions(TypedDict, total=False):
    """The partitions to add to the session or acknowledge."""

    # the partition (v0+)
    partition_index: int
    # the ranges of records acknowledged (v0+)
    acknowledgement_batches: Sequence[ShareFetchRequestTopicsPartitionsAcknowledgementBatches]


class ShareFetchRequestTopics(TypedDict, total=False):
    """The partitions to fetch (new to the session) and their acknowledgements."""

    # the topic's id (v0+)
    topic_id: UUID
    # the partitions to add to the session or acknowledge (v0+)
    partitions: Sequence[ShareFetchRequestTopicsPartitions]


class ShareFetchRequestForgottenTopicsData(TypedDict, total=False):
    """The partitions to remove from the session."""

    # the topic's id (v0+)
    topic_id: UUID
    # the partitions (v0+)
    partitions: Sequence[int]


class ShareFetchRequestBody(TypedDict, total=False):
    """ShareFetch (key 78) request body, v1-2."""

    # the share group (v0+)
    group_id: str | None
    # the member's id (v0+)
    member_id: str | None
    # the share session's epoch: 0 opens one, -1 closes it, else the next of consecutive requests (v0+)
    share_session_epoch: int
    # how long the broker may wait for min_bytes (v0+)
    max_wait_ms: int
    # the bytes to wait for (v0+)
    min_bytes: int
    # at most this many bytes in the answer (KIP-74 aside) (v0+)
    max_bytes: int
    # at most this many records (batch boundaries aside) (v0+)
    max_records: int
    # the preferred number of records per acquired batch (v0+)
    batch_size: int
    # 0 batch-optimized, 1 record-limit (v2+)
    share_acquire_mode: int
    # whether the request only renews acquisition locks (v2+)
    is_renew_ack: bool
    # the partitions to fetch (new to the session) and their acknowledgements (v0+)
    topics: Sequence[ShareFetchRequestTopics]
    # the partitions to remove from the session (v0+)
    forgotten_topics_data: Sequence[ShareFetchRequestForgottenTopicsData]


class ShareFetchResponseResponsesPartitionsCurrentLeader(TypedDict):
    """The partition's current leader."""

    # the leader, -1 if unknown (v0+)
    leader_id: int
    # the leader's epoch (v0+)
    leader_epoch: int


class ShareFetchResponseResponsesPartitionsAcquiredRecords(TypedDict):
    """The ranges of records acquired by this member."""

    # the first offset acquired (v0+)
    first_offset: int
    # the last offset acquired (inclusive) (v0+)
    last_offset: int
    # how many times these records were delivered, this one included (v0+)
    delivery_count: int


class ShareFetchResponseResponsesPartitions(TypedDict):
    """Per partition."""

    # the partition (v0+)
    partition_index: int
    # the fetch's error code, 0 for none (v0+)
    error_code: int
    # the fetch's error message (v0+)
    error_message: str | None
    # the acknowledgements' error code, 0 for none (v0+)
    acknowledge_error_code: int
    # the acknowledgements' error message (v0+)
    acknowledge_error_message: str | None
    # the partition's current leader (v0+)
    current_leader: ShareFetchResponseResponsesPartitionsCurrentLeader
    # the record batches holding the acquired records (v0+)
    records: bytes
    # the ranges of records acquired by this member (v0+)
    acquired_records: list[ShareFetchResponseResponsesPartitionsAcquiredRecords]


class ShareFetchResponseResponses(TypedDict):
    """Per topic."""

    # the topic's id (v0+)
    topic_id: UUID
    # per partition (v0+)
    partitions: list[ShareFetchResponseResponsesPartitions]


class ShareFetchResponseNodeEndpoints(TypedDict):
    """The brokers named as current leaders (with NOT_LEADER_OR_FOLLOWER)."""

    # the broker's id (v0+)
    node_id: int
    # its host (v0+)
    host: str
    # its port (v0+)
    port: int
    # its rack, if it has one (v0+)
    rack: str | None


class ShareFetchResponseBody(TypedDict):
    """ShareFetch (key 78) response body, v1-2."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # how long the acquired records stay locked, in ms (v0+)
    acquisition_lock_timeout_ms: int
    # per topic (v0+)
    responses: list[ShareFetchResponseResponses]
    # the brokers named as current leaders (with NOT_LEADER_OR_FOLLOWER) (v0+)
    node_endpoints: list[ShareFetchResponseNodeEndpoints]


class ShareAcknowledgeRequestTopicsPartitionsAcknowledgementBatches(TypedDict, total=False):
    """The ranges of records acknowledged."""

    # the first offset acknowledged (v0+)
    first_offset: int
    # the last offset acknowledged (inclusive) (v0+)
    last_offset: int
    # one type for the whole range, or one per offset: 0 gap, 1 accept, 2 release, 3 reject, 4 renew (v0+)
    acknowledge_types: Sequence[int]


class ShareAcknowledgeRequestTopicsPartitions(TypedDict, total=False):
    """Per partition."""

    # the partition (v0+)
    partition_index: int
    # the ranges of records acknowledged (v0+)
    acknowledgement_batches: Sequence[ShareAcknowledgeRequestTopicsPartitionsAcknowledgementBatches]


class ShareAcknowledgeRequestTopics(TypedDict, total=False):
    """The acknowledgements, per topic."""

    # the topic's id (v0+)
    topic_id: UUID
    # per partition (v0+)
    partitions: Sequence[ShareAcknowledgeRequestTopicsPartitions]


class ShareAcknowledgeRequestBody(TypedDict, total=False):
    """ShareAcknowledge (key 79) request body, v1-2."""

    # the share group (v0+)
    group_id: str | None
    # the member's id (v0+)
    member_id: str | None
    # the share session's epoch: 0 opens one, -1 closes it, else the next of consecutive requests (v0+)
    share_session_epoch: int
    # whether the request only renews acquisition locks (v2+)
    is_renew_ack: bool
    # the acknowledgements, per topic (v0+)
    topics: Sequence[ShareAcknowledgeRequestTopics]


class ShareAcknowledgeResponseResponsesPartitionsCurrentLeader(TypedDict):
    """The partition's current leader."""

    # the leader, -1 if unknown (v0+)
    leader_id: int
    # the leader's epoch (v0+)
    leader_epoch: int


class ShareAcknowledgeResponseResponsesPartitions(TypedDict):
    """The acknowledgements' outcome per partition."""

    # the partition (v0+)
    partition_index: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # the partition's current leader (v0+)
    current_leader: ShareAcknowledgeResponseResponsesPartitionsCurrentLeader


class ShareAcknowledgeResponseResponses(TypedDict):
    """Per topic."""

    # the topic's id (v0+)
    topic_id: UUID
    # the acknowledgements' outcome per partition (v0+)
    partitions: list[ShareAcknowledgeResponseResponsesPartitions]


class ShareAcknowledgeResponseNodeEndpoints(TypedDict):
    """The brokers named as current leaders (with NOT_LEADER_OR_FOLLOWER)."""

    # the broker's id (v0+)
    node_id: int
    # its host (v0+)
    host: str
    # its port (v0+)
    port: int
    # its rack, if it has one (v0+)
    rack: str | None


class ShareAcknowledgeResponseBody(TypedDict):
    """ShareAcknowledge (key 79) response body, v1-2."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # how long the acquired records stay locked, in ms (v2+)
    acquisition_lock_timeout_ms: int
    # per topic (v0+)
    responses: list[ShareAcknowledgeResponseResponses]
    # the brokers named as current leaders (with NOT_LEADER_OR_FOLLOWER) (v0+)
    node_endpoints: list[ShareAcknowledgeResponseNodeEndpoints]


class DescribeShareGroupOffsetsRequestGroupsTopics(TypedDict, total=False):
    """The partitions to describe; null for all."""

    # the topic (v0+)
    topic_name: str
    # the partitions (v0+)
    partitions: Sequence[int]


class DescribeShareGroupOffsetsRequestGroups(TypedDict, total=False):
    """The share groups."""

    # the group (v0+)
    group_id: str
    # the partitions to describe; null for all (v0+)
    topics: Sequence[DescribeShareGroupOffsetsRequestGroupsTopics] | None


class DescribeShareGroupOffsetsRequestBody(TypedDict, total=False):
    """DescribeShareGroupOffsets (key 90) request body, v0-1."""

    # the share groups (v0+)
    groups: Sequence[DescribeShareGroupOffsetsRequestGroups]


class DescribeShareGroupOffsetsResponseGroupsTopicsPartitions(TypedDict):
    """Per partition."""

    # the partition (v0+)
    partition_index: int
    # the share-partition start offset (-1: not initialized) (v0+)
    start_offset: int
    # the leader epoch of the start offset (v0+)
    leader_epoch: int
    # the records not yet delivered and acknowledged (-1: unknown) (v1+)
    lag: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class DescribeShareGroupOffsetsResponseGroupsTopics(TypedDict):
    """Per topic."""

    # the topic (v0+)
    topic_name: str
    # its id (v0+)
    topic_id: UUID
    # per partition (v0+)
    partitions: list[DescribeShareGroupOffsetsResponseGroupsTopicsPartitions]


class DescribeShareGroupOffsetsResponseGroups(TypedDict):
    """Per group."""

    # the group (v0+)
    group_id: str
    # per topic (v0+)
    topics: list[DescribeShareGroupOffsetsResponseGroupsTopics]
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class DescribeShareGroupOffsetsResponseBody(TypedDict):
    """DescribeShareGroupOffsets (key 90) response body, v0-1."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # per group (v0+)
    groups: list[DescribeShareGroupOffsetsResponseGroups]


class AlterShareGroupOffsetsRequestTopicsPartitions(TypedDict, total=False):
    """The partitions."""

    # the partition (v0+)
    partition_index: int
    # the new start offset (v0+)
    start_offset: int


class AlterShareGroupOffsetsRequestTopics(TypedDict, total=False):
    """The start offsets to set, per topic."""

    # the topic (v0+)
    topic_name: str
    # the partitions (v0+)
    partitions: Sequence[AlterShareGroupOffsetsRequestTopicsPartitions]


class AlterShareGroupOffsetsRequestBody(TypedDict, total=False):
    """AlterShareGroupOffsets (key 91) request body, v0."""

    # the group (v0+)
    group_id: str
    # the start offsets to set, per topic (v0+)
    topics: Sequence[AlterShareGroupOffsetsRequestTopics]


class AlterShareGroupOffsetsResponseResponsesPartitions(TypedDict):
    """Per partition."""

    # the partition (v0+)
    partition_index: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class AlterShareGroupOffsetsResponseResponses(TypedDict):
    """Per topic."""

    # the topic (v0+)
    topic_name: str
    # its id (v0+)
    topic_id: UUID
    # per partition (v0+)
    partitions: list[AlterShareGroupOffsetsResponseResponsesPartitions]


class AlterShareGroupOffsetsResponseBody(TypedDict):
    """AlterShareGroupOffsets (key 91) response body, v0."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # per topic (v0+)
    responses: list[AlterShareGroupOffsetsResponseResponses]


class DeleteShareGroupOffsetsRequestTopics(TypedDict, total=False):
    """The topics whose state to delete."""

    # the topic (v0+)
    topic_name: str


class DeleteShareGroupOffsetsRequestBody(TypedDict, total=False):
    """DeleteShareGroupOffsets (key 92) request body, v0."""

    # the group (v0+)
    group_id: str
    # the topics whose state to delete (v0+)
    topics: Sequence[DeleteShareGroupOffsetsRequestTopics]


class DeleteShareGroupOffsetsResponseResponses(TypedDict):
    """Per topic."""

    # the topic (v0+)
    topic_name: str
    # its id (v0+)
    topic_id: UUID
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None


class DeleteShareGroupOffsetsResponseBody(TypedDict):
    """DeleteShareGroupOffsets (key 92) response body, v0."""

    # how long the request was throttled by a quota, in ms (v0+)
    throttle_time_ms: int
    # the error code, 0 for none (v0+)
    error_code: int
    # the broker's message for the error, if any (v0+)
    error_message: str | None
    # per topic (v0+)
    responses: list[DeleteShareGroupOffsetsResponseResponses]
