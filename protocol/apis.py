"""Every API cykafka speaks, described once (notation: cykafka.protocol.schema), written from the protocol's facts.

Version ranges are the ones we implement, not every version Kafka defines. The producer's APIs go to Transactions
V2 (KIP-890): Produce 12 (11 may answer TRANSACTION_ABORTABLE, 12 adds a transaction's partition implicitly), EndTxn 5
(answers the next producer id/epoch), TxnOffsetCommit 5 (adds the group's offsets implicitly), InitProducerId 5,
AddOffsetsToTxn 4 (the TRANSACTION_ABORTABLE versions); a transactional producer on Transactions V1 caps Produce at
11, EndTxn and TxnOffsetCommit at 4 (`Request.max_version`, as Java's builders). AddPartitionsToTxn stops at 3: 4+ is
broker-to-broker. The consumer and admin APIs
stop before topic ids replace topic names (KIP-516: Fetch 13, OffsetCommit 10, OffsetFetch 10; DeleteTopics 6 is
kept, it carries both), where noted; OffsetCommit 9 and OffsetFetch 9 carry a KIP-848 member's epoch.

Every field says what it is (`about`); `ignorable=True` marks what a request may set at a version that lacks it
(Java's ignorable fields, and the old and new forms of one thing a body carries side by side). protocol/bodies.py,
generated from these descriptions, gives mypy every body's field names (scripts/protocol_bodies.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cykafka.protocol.schema import Api, F, Field, api

if TYPE_CHECKING:
    from cykafka.protocol.bodies import OffsetCommitRequestTopics, OffsetCommitRequestTopicsPartitions

INT32_MIN = -(2**31)
ALL = "0+"
NULL: dict[str, Any] = {"nullable": ALL, "default": None}  # a nullable field whose default is null

_ERROR = F("error_code", "int16", about="the error code, 0 for none")
_ERROR_MESSAGE = F("error_message", "string", ALL, **NULL, about="the broker's message for the error, if any")


def _throttle(versions: str = ALL) -> Field:
    return F("throttle_time_ms", "int32", versions, about="how long the request was throttled by a quota, in ms")


def _topics(*partition_fields: Field, versions: str = ALL, name: str = "topics", topic: str = "name",
            partitions: str = "partitions", about: str = "per topic") -> Field:
    """The topic -> partitions nesting most APIs share."""
    return F(name, "[]", versions, F(topic, "string", versions, about="the topic's name"),
             F(partitions, "[]", versions, *partition_fields, about="per partition of the topic"), about=about)


_BROKER = (F("node_id", "int32", about="the broker's id"), F("host", "string", about="the broker's host name"),
           F("port", "int32", about="the broker's port"),
           F("rack", "string", "1+", **NULL, about="the broker's rack, if it has one"))
_LEADER_AND_EPOCH = (F("leader_id", "int32", default=-1, about="the partition's leader, -1 if unknown"),
                     F("leader_epoch", "int32", default=-1, about="the leader's epoch, -1 if unknown"))
_PARTITION_INDEX = F("partition_index", "int32", about="the partition")
_PARTITION_ERRORS = (_PARTITION_INDEX, _ERROR)

# --- the APIs the producer speaks ------------------------------------------------------------------------------------

PRODUCE = api(0, "Produce", "3-12", "9+", request=(
    F("transactional_id", "string", nullable=ALL, default=None, about="the producer's transactional.id, if any"),
    F("acks", "int16", about="acknowledgements wanted: 0 none, 1 the leader, -1 every in-sync replica"),
    F("timeout_ms", "int32", about="how long the broker may wait for the acknowledgements"),
    _topics(F("index", "int32", about="the partition"),
            F("records", "records", nullable=ALL, default=None, about="the record batches to append"),
            name="topic_data", partitions="partition_data", about="the records to append, per topic"),
), response=(
    _topics(F("index", "int32", about="the partition"), _ERROR,
            F("base_offset", "int64", about="the offset given to the first record"),
            F("log_append_time_ms", "int64", default=-1, about="the append time with LogAppendTime, else -1"),
            F("log_start_offset", "int64", "5+", default=-1, about="the partition's log start offset"),
            F("record_errors", "[]", "8+",
              F("batch_index", "int32", about="the record's index in its batch"),
              F("batch_index_error_message", "string", **NULL, about="why the record was refused"),
              about="the records that made the batch fail"),
            F("error_message", "string", "8+", **NULL, about="the broker's message for the error, if any"),
            F("current_leader", "{}", "10+", *_LEADER_AND_EPOCH, tag=0,
              about="the new leader, when this broker is not it"),
            name="responses", partitions="partition_responses", about="the outcome per topic"),
    _throttle(),
    F("node_endpoints", "[]", "10+", *_BROKER, tag=0, about="the brokers named as new leaders"),
))

FETCH = api(1, "Fetch", "4-12", "12+", request=(
    F("cluster_id", "string", "12+", tag=0, **NULL, ignorable=True, about="the cluster id, if known (KRaft only)"),
    F("replica_id", "int32", default=-1, about="the replica fetching; -1 for a consumer"),
    F("max_wait_ms", "int32", about="how long the broker may wait for min_bytes to arrive"),
    F("min_bytes", "int32", about="the bytes to wait for before answering"),
    F("max_bytes", "int32", default=0x7FFFFFFF, ignorable=True, about="at most this many bytes in the answer"),
    F("isolation_level", "int8", ignorable=True, about="0 read_uncommitted, 1 read_committed"),
    F("session_id", "int32", "7+", ignorable=True, about="the fetch session (KIP-227), 0 for none"),
    F("session_epoch", "int32", "7+", default=-1, ignorable=True,
      about="the session's epoch: 0 opens one, -1 fetches outside any (or closes it)"),
    _topics(F("partition", "int32", about="the partition"),
            F("current_leader_epoch", "int32", "9+", default=-1, ignorable=True,
              about="the leader epoch the consumer knows, -1 if none"),
            F("fetch_offset", "int64", about="the offset to fetch from"),
            F("last_fetched_epoch", "int32", "12+", default=-1, about="the epoch of the last record fetched"),
            F("log_start_offset", "int64", "5+", default=-1, ignorable=True,
              about="a follower's log start offset; -1 for a consumer"),
            F("partition_max_bytes", "int32", about="at most this many bytes of this partition"),
            topic="topic", about="the partitions to fetch, per topic"),
    F("forgotten_topics_data", "[]", "7+", F("topic", "string", about="the topic's name"),
      F("partitions", "[]int32", about="the partitions to drop from the session"),
      about="partitions leaving the fetch session"),
    F("rack_id", "string", "11+", ignorable=True, about="the consumer's rack (for a preferred read replica)"),
), response=(
    _throttle(),
    F("error_code", "int16", "7+", about="a whole-request (session) error, 0 for none"),
    F("session_id", "int32", "7+", about="the fetch session this answer belongs to, 0 for none"),
    _topics(_PARTITION_INDEX, _ERROR,
            F("high_watermark", "int64", about="the offset after the last committed record"),
            F("last_stable_offset", "int64", default=-1, about="the offset after the last decided transaction"),
            F("log_start_offset", "int64", "5+", default=-1, about="the partition's first offset"),
            F("diverging_epoch", "{}", "12+", F("epoch", "int32", default=-1, about="the epoch"),
              F("end_offset", "int64", default=-1, about="its end offset"), tag=0,
              about="where a follower's log diverges from the leader's"),
            F("current_leader", "{}", "12+", *_LEADER_AND_EPOCH, tag=1, about="the leader, when it moved"),
            F("snapshot_id", "{}", "12+", F("end_offset", "int64", default=-1, about="the snapshot's end offset"),
              F("epoch", "int32", default=-1, about="the snapshot's epoch"), tag=2,
              about="the snapshot to fetch instead (KRaft)"),
            F("aborted_transactions", "[]", ALL, F("producer_id", "int64", about="the aborting producer"),
              F("first_offset", "int64", about="the transaction's first offset"), **NULL,
              about="the aborted transactions in the data (read_committed)"),
            F("preferred_read_replica", "int32", "11+", default=-1, about="a replica to fetch from instead, -1"),
            F("records", "records", **NULL, about="the record batches"),
            name="responses", topic="topic", about="the data per topic"),
))

# ListOffsets' special timestamps: the offset of the next record, of the first, of the record with the max timestamp
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3

LIST_OFFSETS = api(2, "ListOffsets", "1-7", "6+", request=(
    F("replica_id", "int32", default=-1, about="the replica asking; -1 for a client"),
    F("isolation_level", "int8", "2+", about="0 read_uncommitted, 1 read_committed (the last stable offset)"),
    _topics(_PARTITION_INDEX,
            F("current_leader_epoch", "int32", "4+", default=-1, ignorable=True,
              about="the leader epoch the client knows, -1 if none"),
            F("timestamp", "int64", about="a timestamp in ms, or -1 latest, -2 earliest, -3 max timestamp"),
            about="the partitions to look up, per topic"),
), response=(
    _throttle("2+"),
    _topics(_PARTITION_INDEX, _ERROR,
            F("timestamp", "int64", default=-1, about="the found record's timestamp, -1 if none"),
            F("offset", "int64", default=-1, about="the found offset, -1 if none"),
            F("leader_epoch", "int32", "4+", default=-1, about="the leader epoch of the found record"),
            about="the offsets found, per topic"),
))

METADATA = api(3, "Metadata", "1-12", "9+", request=(
    F("topics", "[]", ALL, F("topic_id", "uuid", "10+", about="the topic's id (zero: by name)"),
      F("name", "string", nullable="10+", about="the topic's name"), nullable=ALL, default=None,
      about="the topics to describe; null for every topic"),
    F("allow_auto_topic_creation", "bool", "4+", default=True, about="whether asking creates a missing topic"),
    F("include_cluster_authorized_operations", "bool", "8-10", about="whether to list the cluster's ACL rights"),
    F("include_topic_authorized_operations", "bool", "8+", about="whether to list each topic's ACL rights"),
), response=(
    _throttle("3+"),
    F("brokers", "[]", ALL, *_BROKER, about="every broker of the cluster"),
    F("cluster_id", "string", "2+", **NULL, about="the cluster's id"),
    F("controller_id", "int32", default=-1, about="the controller's broker id, -1 if unknown"),
    F("topics", "[]", ALL, _ERROR, F("name", "string", nullable="12+", about="the topic's name"),
      F("topic_id", "uuid", "10+", about="the topic's id"),
      F("is_internal", "bool", about="whether the topic is internal (__consumer_offsets, ...)"),
      F("partitions", "[]", ALL, _ERROR, _PARTITION_INDEX,
        F("leader_id", "int32", about="the leader's broker id, -1 if none"),
        F("leader_epoch", "int32", "7+", default=-1, about="the leader's epoch"),
        F("replica_nodes", "[]int32", about="the replicas' broker ids"),
        F("isr_nodes", "[]int32", about="the in-sync replicas' broker ids"),
        F("offline_replicas", "[]int32", "5+", about="the offline replicas' broker ids"),
        about="the topic's partitions"),
      F("topic_authorized_operations", "int32", "8+", default=INT32_MIN, about="the topic's ACL rights (bits)"),
      about="the topics asked for"),
    F("cluster_authorized_operations", "int32", "8-10", default=INT32_MIN, about="the cluster's ACL rights (bits)"),
))

COORDINATOR_GROUP = 0  # FindCoordinator key_type: a consumer group
COORDINATOR_TRANSACTION = 1  # a transactional.id

FIND_COORDINATOR = api(10, "FindCoordinator", "1-4", "3+", request=(
    F("key", "string", "0-3", ignorable=True,
      about="the group id or transactional.id (v0-3; a body also carries the v4+ form, coordinator_keys)"),
    F("key_type", "int8", about="0 a group, 1 a transactional.id"),
    F("coordinator_keys", "[]string", "4+", ignorable=True,
      about="the keys to look up (v4+; a body also carries the v0-3 form, key)"),
), response=(
    _throttle(),
    F("error_code", "int16", "0-3", about="the error code, 0 for none (v0-3)"),
    F("error_message", "string", "0-3", **NULL, about="the broker's message for the error (v0-3)"),
    F("node_id", "int32", "0-3", about="the coordinator's broker id (v0-3)"),
    F("host", "string", "0-3", about="the coordinator's host (v0-3)"),
    F("port", "int32", "0-3", about="the coordinator's port (v0-3)"),
    F("coordinators", "[]", "4+", F("key", "string", about="the key looked up"),
      F("node_id", "int32", about="its coordinator's broker id"), F("host", "string", about="its host"),
      F("port", "int32", about="its port"), _ERROR, _ERROR_MESSAGE, about="one answer per key (v4+)"),
))


def coordinators_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The coordinators a decoded FindCoordinator answer names: v4+'s `coordinators`, or (v1-3, whose body holds
    one coordinator's fields) the body itself; an empty v4 answer names none."""
    if answer["coordinators"] or not (answer["host"] or answer["error_code"]):
        return list(answer["coordinators"])
    return [answer]


SASL_HANDSHAKE = api(17, "SaslHandshake", "0-1", "none", request=(
    F("mechanism", "string", about="the SASL mechanism to use"),
), response=(
    _ERROR,
    F("mechanisms", "[]string", about="the mechanisms the broker has enabled"),
))

API_VERSIONS = api(18, "ApiVersions", "0-3", "3+", request=(
    F("client_software_name", "string", "3+", ignorable=True, about="the client's name"),
    F("client_software_version", "string", "3+", ignorable=True, about="the client's version"),
), response=(
    _ERROR,
    F("api_keys", "[]", ALL, F("api_key", "int16", about="the API"),
      F("min_version", "int16", about="the oldest version the broker speaks"),
      F("max_version", "int16", about="the newest version the broker speaks"), about="the APIs the broker speaks"),
    _throttle("1+"),
    F("supported_features", "[]", "3+", F("name", "string", about="the feature"),
      F("min_version", "int16", about="its oldest version"), F("max_version", "int16", about="its newest version"),
      tag=0, about="the features the broker supports"),
    F("finalized_features_epoch", "int64", "3+", tag=1, default=-1, about="the epoch of the finalized features"),
    F("finalized_features", "[]", "3+", F("name", "string", about="the feature"),
      F("max_version_level", "int16", about="its newest finalized level"),
      F("min_version_level", "int16", about="its oldest finalized level"), tag=2,
      about="the features the cluster has finalized"),
    F("zk_migration_ready", "bool", "3+", tag=3, about="whether a ZooKeeper migration may start"),
))

CREATE_TOPICS = api(19, "CreateTopics", "2-7", "5+", request=(
    F("topics", "[]", ALL, F("name", "string", about="the topic's name"),
      F("num_partitions", "int32", about="its partition count, -1 for the broker's default"),
      F("replication_factor", "int16", about="its replication factor, -1 for the broker's default"),
      F("assignments", "[]", ALL, _PARTITION_INDEX,
        F("broker_ids", "[]int32", about="the replicas' broker ids"), about="replicas by hand, per partition"),
      F("configs", "[]", ALL, F("name", "string", about="the config key"),
        F("value", "string", **NULL, about="its value"), about="the topic's configs"),
      about="the topics to create"),
    F("timeout_ms", "int32", default=60000, about="how long the broker may take to create them"),
    F("validate_only", "bool", about="whether to check only, creating nothing"),
), response=(
    _throttle(),
    F("topics", "[]", ALL, F("name", "string", about="the topic's name"),
      F("topic_id", "uuid", "7+", about="the new topic's id"), _ERROR, _ERROR_MESSAGE,
      F("topic_config_error_code", "int16", "5+", tag=0, about="why its configs are not described"),
      F("num_partitions", "int32", "5+", default=-1, about="its partition count"),
      F("replication_factor", "int16", "5+", default=-1, about="its replication factor"),
      F("configs", "[]", "5+", F("name", "string", about="the config key"),
        F("value", "string", **NULL, about="its value"), F("read_only", "bool", about="whether it is read-only"),
        F("config_source", "int8", default=-1, about="where the value comes from"),
        F("is_sensitive", "bool", about="whether the value is secret (then null)"), **NULL,
        about="the topic's configs"),
      about="the outcome per topic"),
))

INIT_PRODUCER_ID = api(22, "InitProducerId", "0-5", "2+", request=(
    F("transactional_id", "string", **NULL, about="the transactional.id, null for an idempotent producer"),
    F("transaction_timeout_ms", "int32", about="how long a transaction may stay open"),
    F("producer_id", "int64", "3+", default=-1, about="the current producer id, to bump its epoch (KIP-360); -1"),
    F("producer_epoch", "int16", "3+", default=-1, about="the current epoch, to bump it (KIP-360); -1"),
), response=(
    _throttle(),
    _ERROR,
    F("producer_id", "int64", default=-1, about="the producer id to use"),
    F("producer_epoch", "int16", about="the epoch to use"),
))

_TXN = (F("transactional_id", "string", about="the producer's transactional.id"),
        F("producer_id", "int64", about="the producer id"), F("producer_epoch", "int16", about="the producer epoch"))

ADD_PARTITIONS_TO_TXN = api(24, "AddPartitionsToTxn", "0-3", "3+", request=(  # v4+ is broker-to-broker
    F("v3_and_below_transactional_id", "string", about="the producer's transactional.id"),
    F("v3_and_below_producer_id", "int64", about="the producer id"),
    F("v3_and_below_producer_epoch", "int16", about="the producer epoch"),
    F("v3_and_below_topics", "[]", ALL, F("name", "string", about="the topic's name"),
      F("partitions", "[]int32", about="its partitions"), about="the partitions to add to the transaction"),
), response=(
    _throttle(),
    _topics(_PARTITION_INDEX, F("partition_error_code", "int16", about="the error code, 0 for none"),
            name="results_by_topic_v3_and_below", partitions="results_by_partition", about="the outcome per topic"),
))

ADD_OFFSETS_TO_TXN = api(25, "AddOffsetsToTxn", "0-4", "3+", request=(
    *_TXN, F("group_id", "string", about="the group whose offsets the transaction will commit"),
), response=(_throttle(), _ERROR))

END_TXN = api(26, "EndTxn", "0-5", "3+", request=(
    *_TXN, F("committed", "bool", about="true commits the transaction, false aborts it"),
), response=(
    _throttle(), _ERROR,
    F("producer_id", "int64", "5+", default=-1, about="the producer id for the next transaction (Transactions V2)"),
    F("producer_epoch", "int16", "5+", default=-1,
      about="the bumped epoch for the next transaction (Transactions V2)"),
))

TXN_OFFSET_COMMIT = api(28, "TxnOffsetCommit", "0-5", "3+", request=(
    F("transactional_id", "string", about="the producer's transactional.id"),
    F("group_id", "string", about="the group whose offsets are committed"),
    F("producer_id", "int64", about="the producer id"),
    F("producer_epoch", "int16", about="the producer epoch"),
    F("generation_id", "int32", "3+", default=-1, about="the group generation, to fence zombies (KIP-447); -1"),
    F("member_id", "string", "3+", about="the member id in that generation (KIP-447)"),
    F("group_instance_id", "string", "3+", **NULL, about="the static member's instance id, if any"),
    _topics(_PARTITION_INDEX, F("committed_offset", "int64", about="the offset to commit"),
            F("committed_leader_epoch", "int32", "2+", default=-1, ignorable=True,
              about="the leader epoch of the last record read, -1"),
            F("committed_metadata", "string", **NULL, about="the offset's metadata"),
            about="the offsets to commit, per topic"),
), response=(
    _throttle(),
    _topics(*_PARTITION_ERRORS, about="the outcome per topic"),
))

SASL_AUTHENTICATE = api(36, "SaslAuthenticate", "0-2", "2+", request=(
    F("auth_bytes", "bytes", about="the SASL mechanism's next message"),
), response=(
    _ERROR,
    _ERROR_MESSAGE,
    F("auth_bytes", "bytes", about="the SASL mechanism's answer"),
    F("session_lifetime_ms", "int64", "1+", about="how long the session lasts, 0 for ever"),
))

# --- what the consumer and the admin client need next -------------------------------------------------------------

OFFSET_COMMIT = api(8, "OffsetCommit", "0-9", "8+", request=(  # 9: as 8, for KIP-848 members; 10: topic ids
    F("group_id", "string", about="the group"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True,
      about="the member's generation (classic) or member epoch (consumer protocol, KIP-848), -1 outside one"),
    F("member_id", "string", "1+", ignorable=True, about="the member's id, empty outside a generation"),
    F("group_instance_id", "string", "7+", **NULL, about="the static member's instance id, if any"),
    F("retention_time_ms", "int64", "2-4", default=-1, ignorable=True, about="how long to keep the offsets, -1"),
    _topics(_PARTITION_INDEX, F("committed_offset", "int64", about="the offset to commit"),
            F("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True,
              about="the leader epoch of the last record read, -1"),
            F("commit_timestamp", "int64", "1", default=-1, about="the commit's time (v1 only), -1"),
            F("committed_metadata", "string", **NULL, about="the offset's metadata"),
            about="the offsets to commit, per topic"),
), response=(
    _throttle("3+"),
    _topics(*_PARTITION_ERRORS, about="the outcome per topic"),
))


def offset_commit_topics(
        offsets: Mapping[tuple[str, int], int | tuple[int, str | None, int]]) -> list[OffsetCommitRequestTopics]:
    """OffsetCommit's `topics` from {(topic, partition): offset, or (offset, metadata, leader epoch)}: grouped by
    topic, partitions in order; what a group member (classic or KIP-848) and the Admin commit."""
    by_topic: dict[str, list[OffsetCommitRequestTopicsPartitions]] = {}
    for (topic, partition), value in sorted(offsets.items()):
        offset, metadata, epoch = (value, None, -1) if isinstance(value, int) else value
        by_topic.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                               "committed_leader_epoch": epoch, "committed_metadata": metadata})
    return [{"name": topic, "partitions": partitions} for topic, partitions in by_topic.items()]


_OFFSET_FETCH_PARTITION = (_PARTITION_INDEX, F("committed_offset", "int64", about="the committed offset, -1 if none"))
_OFFSET_FETCH_METADATA = F("metadata", "string", **NULL, about="the offset's metadata")

OFFSET_FETCH = api(9, "OffsetFetch", "0-9", "6+", request=(  # 9: member id and epoch (KIP-848); 10: topic ids
    F("group_id", "string", "0-7", ignorable=True,
      about="the group (v0-7; a body also carries the v8+ form, groups)"),
    F("topics", "[]", "0-7", F("name", "string", about="the topic's name"),
      F("partition_indexes", "[]int32", about="its partitions"), nullable="2-7", default=None, ignorable=True,
      about="the partitions to read, null for all (v0-7; the v8+ form is in groups)"),
    F("groups", "[]", "8+", F("group_id", "string", about="the group"),
      F("member_id", "string", "9+", **NULL, ignorable=True,
        about="the consumer-protocol member asking (KIP-848), null outside one"),
      F("member_epoch", "int32", "9+", default=-1, ignorable=True,
        about="that member's epoch, -1 outside one (a stale one is answered STALE_MEMBER_EPOCH)"),
      F("topics", "[]", ALL, F("name", "string", about="the topic's name"),
        F("partition_indexes", "[]int32", about="its partitions"), **NULL,
        about="the partitions to read, null for all"),
      ignorable=True, about="the groups to read (v8+; a body also carries the v0-7 form, group_id and topics)"),
    F("require_stable", "bool", "7+", ignorable=True,
      about="wait for pending transactional offsets (an older broker answers without waiting)"),
), response=(
    _throttle("3+"),
    F("topics", "[]", "0-7", F("name", "string", about="the topic's name"),
      F("partitions", "[]", ALL, *_OFFSET_FETCH_PARTITION,
        F("committed_leader_epoch", "int32", "5+", default=-1, about="the committed leader epoch, -1"),
        _OFFSET_FETCH_METADATA, _ERROR, about="per partition"),
      about="the committed offsets, per topic (v0-7)"),
    F("error_code", "int16", "2-7", about="a group-level error, 0 for none (v2-7)"),
    F("groups", "[]", "8+", F("group_id", "string", about="the group"),
      F("topics", "[]", ALL, F("name", "string", about="the topic's name"),
        F("partitions", "[]", ALL, *_OFFSET_FETCH_PARTITION,
          F("committed_leader_epoch", "int32", default=-1, about="the committed leader epoch, -1"),
          _OFFSET_FETCH_METADATA, _ERROR, about="per partition"),
        about="the committed offsets, per topic"),
      _ERROR, about="per group (v8+)"),
))

_GROUP_ID = F("group_id", "string", about="the group")
_GENERATION_ID = F("generation_id", "int32", about="the member's generation")
_MEMBER_ID = F("member_id", "string", about="the member's id")
_INSTANCE_ID_3 = F("group_instance_id", "string", "3+", **NULL, about="the static member's instance id, if any")

JOIN_GROUP = api(11, "JoinGroup", "0-9", "6+", request=(
    _GROUP_ID,
    F("session_timeout_ms", "int32", about="how long the member may go without a heartbeat"),
    F("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True,
      about="how long a rebalance may wait for the member to rejoin"),
    F("member_id", "string", about="the member's id, empty on the first join"),
    F("group_instance_id", "string", "5+", **NULL, about="the static member's instance id, if any"),
    F("protocol_type", "string", about="the kind of group: 'consumer'"),
    F("protocols", "[]", ALL, F("name", "string", about="the assignor"),
      F("metadata", "bytes", about="the member's subscription for it"),
      about="the assignors the member supports, preferred first"),
    F("reason", "string", "8+", **NULL, ignorable=True, about="why the member (re)joins"),
), response=(
    _throttle("2+"),
    _ERROR,
    F("generation_id", "int32", default=-1, about="the new generation"),
    F("protocol_type", "string", "7+", **NULL, about="the kind of group"),
    F("protocol_name", "string", nullable="7+", about="the assignor the group chose"),
    F("leader", "string", about="the leader's member id"),
    F("skip_assignment", "bool", "9+", about="whether the leader skips assigning (static leader rejoin)"),
    F("member_id", "string", about="this member's id"),
    F("members", "[]", ALL, _MEMBER_ID, F("group_instance_id", "string", "5+", **NULL, about="its instance id"),
      F("metadata", "bytes", about="its subscription"), about="every member, for the leader to assign"),
))

HEARTBEAT = api(12, "Heartbeat", "0-4", "4+", request=(
    _GROUP_ID, _GENERATION_ID, _MEMBER_ID, _INSTANCE_ID_3,
), response=(_throttle("1+"), _ERROR))

LEAVE_GROUP = api(13, "LeaveGroup", "0-5", "4+", request=(
    _GROUP_ID,
    F("member_id", "string", "0-2", ignorable=True,
      about="the member leaving (v0-2; a body also carries the v3+ form, members)"),
    F("members", "[]", "3+", _MEMBER_ID, F("group_instance_id", "string", **NULL, about="its instance id"),
      F("reason", "string", "5+", **NULL, ignorable=True, about="why it leaves"), ignorable=True,
      about="the members leaving (v3+; a body also carries the v0-2 form, member_id)"),
), response=(
    _throttle("1+"),
    _ERROR,
    F("members", "[]", "3+", _MEMBER_ID, F("group_instance_id", "string", **NULL, about="its instance id"), _ERROR,
      about="the outcome per member"),
))

SYNC_GROUP = api(14, "SyncGroup", "0-5", "4+", request=(
    _GROUP_ID, _GENERATION_ID, _MEMBER_ID, _INSTANCE_ID_3,
    F("protocol_type", "string", "5+", **NULL, ignorable=True, about="the kind of group"),
    F("protocol_name", "string", "5+", **NULL, ignorable=True, about="the assignor the group chose"),
    F("assignments", "[]", ALL, _MEMBER_ID, F("assignment", "bytes", about="its assignment"),
      about="the leader's assignment per member; empty from a follower"),
), response=(
    _throttle("1+"),
    _ERROR,
    F("protocol_type", "string", "5+", **NULL, about="the kind of group"),
    F("protocol_name", "string", "5+", **NULL, about="the assignor the group chose"),
    F("assignment", "bytes", about="this member's assignment"),
))

DESCRIBE_GROUPS = api(15, "DescribeGroups", "0-5", "5+", request=(
    F("groups", "[]string", about="the groups to describe"),
    F("include_authorized_operations", "bool", "3+", about="whether to list each group's ACL rights"),
), response=(
    _throttle("1+"),
    F("groups", "[]", ALL, _ERROR, _GROUP_ID, F("group_state", "string", about="its state, e.g. Stable, Dead"),
      F("protocol_type", "string", about="the kind of group"),
      F("protocol_data", "string", about="the assignor it uses"),
      F("members", "[]", ALL, _MEMBER_ID, F("group_instance_id", "string", "4+", **NULL, about="its instance id"),
        F("client_id", "string", about="its client.id"), F("client_host", "string", about="its host"),
        F("member_metadata", "bytes", about="its subscription"),
        F("member_assignment", "bytes", about="its assignment"), about="the group's members"),
      F("authorized_operations", "int32", "3+", default=INT32_MIN, about="the group's ACL rights (bits)"),
      about="per group"),
))

LIST_GROUPS = api(16, "ListGroups", "0-5", "3+", request=(
    F("states_filter", "[]string", "4+", about="only groups in these states; empty for all"),
    F("types_filter", "[]string", "5+", about="only groups of these types (classic, consumer, share, streams); "
                                             "empty for all"),
), response=(
    _throttle("1+"),
    _ERROR,
    F("groups", "[]", ALL, _GROUP_ID, F("protocol_type", "string", about="the kind of group"),
      F("group_state", "string", "4+", about="its state"),
      F("group_type", "string", "5+", about="its type: classic, consumer, share or streams"),
      about="the broker's groups"),
))

DELETE_TOPICS = api(20, "DeleteTopics", "0-6", "4+", request=(
    F("topics", "[]", "6+", F("name", "string", **NULL, about="the topic's name"),
      F("topic_id", "uuid", about="the topic's id (zero: by name)"), ignorable=True,
      about="the topics to delete (v6+; a body also carries the v0-5 form, topic_names)"),
    F("topic_names", "[]string", "0-5", ignorable=True,
      about="the topics to delete (v0-5; a body also carries the v6+ form, topics)"),
    F("timeout_ms", "int32", about="how long the broker may take to delete them"),
), response=(
    _throttle("1+"),
    F("responses", "[]", ALL, F("name", "string", nullable="6+", about="the topic's name"),
      F("topic_id", "uuid", "6+", about="the topic's id"), _ERROR,
      F("error_message", "string", "5+", **NULL, about="the broker's message for the error, if any"),
      about="the outcome per topic"),
))

DELETE_RECORDS = api(21, "DeleteRecords", "0-2", "2+", request=(
    _topics(_PARTITION_INDEX, F("offset", "int64", about="delete the records before it; -1: the high watermark"),
            about="the partitions to cut, per topic"),
    F("timeout_ms", "int32", about="how long the broker may wait for the replicas"),
), response=(
    _throttle(),
    _topics(_PARTITION_INDEX, F("low_watermark", "int64", about="the partition's new first offset"), _ERROR,
            about="the outcome per topic"),
))

OFFSET_FOR_LEADER_EPOCH = api(23, "OffsetForLeaderEpoch", "0-4", "4+", request=(
    F("replica_id", "int32", "3+", default=-2, about="the replica asking; -1 a consumer, -2 debugging"),
    _topics(F("partition", "int32", about="the partition"),
            F("current_leader_epoch", "int32", "2+", default=-1, about="the leader epoch the client knows, -1"),
            F("leader_epoch", "int32", about="the epoch whose end offset is wanted"), topic="topic",
            about="the partitions to look up, per topic"),
), response=(
    _throttle("2+"),
    _topics(_ERROR, F("partition", "int32", about="the partition"),
            F("leader_epoch", "int32", "1+", default=-1, about="the largest epoch up to the one asked"),
            F("end_offset", "int64", default=-1, about="that epoch's end offset"), topic="topic",
            about="the end offsets, per topic"),
))

_RESOURCE = (F("resource_type", "int8", about="2 a topic, 4 a broker"),
             F("resource_name", "string", about="the topic's name, or the broker's id"))

DESCRIBE_CONFIGS = api(32, "DescribeConfigs", "0-4", "4+", request=(
    F("resources", "[]", ALL, *_RESOURCE,
      F("configuration_keys", "[]string", **NULL, about="the configs to describe, null for all"),
      about="the resources whose configs to describe"),
    F("include_synonyms", "bool", "1+", about="whether to list each config's synonyms"),
    F("include_documentation", "bool", "3+", about="whether to include each config's documentation"),
), response=(
    _throttle(),
    F("results", "[]", ALL, _ERROR, _ERROR_MESSAGE, *_RESOURCE,
      F("configs", "[]", ALL, F("name", "string", about="the config key"),
        F("value", "string", **NULL, about="its value (null when sensitive)"),
        F("read_only", "bool", about="whether it is read-only"),
        F("is_default", "bool", "0", about="whether it has its default value (v0)"),
        F("config_source", "int8", "1+", default=-1, about="where the value comes from"),
        F("is_sensitive", "bool", about="whether the value is secret"),
        F("synonyms", "[]", "1+", F("name", "string", about="the synonym's key"),
          F("value", "string", **NULL, about="its value"), F("source", "int8", about="where it comes from"),
          about="the config's synonyms, by precedence"),
        F("config_type", "int8", "3+", about="the config's type"),
        F("documentation", "string", "3+", **NULL, about="the config's documentation"),
        about="the resource's configs"),
      about="per resource"),
))

INCREMENTAL_ALTER_CONFIGS = api(44, "IncrementalAlterConfigs", "0-1", "1+", request=(
    F("resources", "[]", ALL, *_RESOURCE,
      F("configs", "[]", ALL, F("name", "string", about="the config key"),
        F("config_operation", "int8", about="0 set, 1 delete, 2 append, 3 subtract"),
        F("value", "string", **NULL, about="the value the operation takes"), about="the changes"),
      about="the resources whose configs to change"),
    F("validate_only", "bool", about="whether to check only, changing nothing"),
), response=(
    _throttle(),
    F("responses", "[]", ALL, _ERROR, _ERROR_MESSAGE, *_RESOURCE, about="the outcome per resource"),
))

DELETE_GROUPS = api(42, "DeleteGroups", "0-2", "2+", request=(
    F("groups_names", "[]string", about="the groups to delete"),
), response=(
    _throttle(),
    F("results", "[]", ALL, _GROUP_ID, _ERROR, about="the outcome per group"),
))

DESCRIBE_CLUSTER = api(60, "DescribeCluster", "0-1", "0+", request=(
    F("include_cluster_authorized_operations", "bool", about="whether to list the cluster's ACL rights"),
    F("endpoint_type", "int8", "1+", default=1, about="1 brokers, 2 controllers"),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("endpoint_type", "int8", "1+", default=1, about="the kind of endpoints listed"),
    F("cluster_id", "string", about="the cluster's id"),
    F("controller_id", "int32", default=-1, about="the controller's broker id, -1 if unknown"),
    F("brokers", "[]", ALL, F("broker_id", "int32", about="the broker's id"), F("host", "string", about="its host"),
      F("port", "int32", about="its port"), F("rack", "string", **NULL, about="its rack, if it has one"),
      about="the cluster's brokers"),
    F("cluster_authorized_operations", "int32", default=INT32_MIN, about="the cluster's ACL rights (bits)"),
))

CREATE_PARTITIONS = api(37, "CreatePartitions", "0-3", "2+", request=(
    F("topics", "[]", ALL, F("name", "string", about="the topic's name"),
      F("count", "int32", about="the topic's new partition count"),
      F("assignments", "[]", ALL, F("broker_ids", "[]int32", about="the new partition's replicas' broker ids"),
        **NULL, about="replicas by hand, per new partition; null for the broker's choice"),
      about="the topics to grow"),
    F("timeout_ms", "int32", about="how long the broker may take to create the partitions"),
    F("validate_only", "bool", about="whether to check only, creating nothing"),
), response=(
    _throttle(),
    F("results", "[]", ALL, F("name", "string", about="the topic's name"), _ERROR, _ERROR_MESSAGE,
      about="the outcome per topic"),
))

# ACLs (KIP-290 patterns): codes are Java's ResourceType, PatternType, AclOperation, AclPermissionType (cykafka/acl.py)
_ACL_FILTER = (F("resource_type_filter", "int8", about="the resource type to match (1: any)"),
               F("resource_name_filter", "string", **NULL, about="the resource name to match, null for any"),
               F("pattern_type_filter", "int8", default=3, about="the pattern type to match (1 any, 2 match)"),
               F("principal_filter", "string", **NULL, about="the principal to match, null for any"),
               F("host_filter", "string", **NULL, about="the host to match, null for any"),
               F("operation", "int8", about="the operation to match (1: any)"),
               F("permission_type", "int8", about="the permission type to match (1: any)"))
_ACE = (F("principal", "string", about="the principal, e.g. User:alice"),
        F("host", "string", about="the host, * for any"),
        F("operation", "int8", about="the operation (AclOperation code)"),
        F("permission_type", "int8", about="ALLOW (3) or DENY (2)"))

DESCRIBE_ACLS = api(29, "DescribeAcls", "1-3", "2+", request=_ACL_FILTER, response=(  # 0: removed in Kafka 4
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("resources", "[]", ALL, F("resource_type", "int8", about="the resource type"),
      F("resource_name", "string", about="the resource name (or prefix)"),
      F("pattern_type", "int8", default=3, about="3 literal, 4 prefixed"),
      F("acls", "[]", ALL, *_ACE, about="the resource's ACL entries"), about="the matching ACLs, per resource"),
))

CREATE_ACLS = api(30, "CreateAcls", "1-3", "2+", request=(
    F("creations", "[]", ALL, F("resource_type", "int8", about="the resource type"),
      F("resource_name", "string", about="the resource name (or prefix)"),
      F("resource_pattern_type", "int8", default=3, about="3 literal, 4 prefixed"), *_ACE,
      about="the ACLs to create"),
), response=(
    _throttle(),
    F("results", "[]", ALL, _ERROR, _ERROR_MESSAGE, about="the outcome per ACL, in the request's order"),
))

DELETE_ACLS = api(31, "DeleteAcls", "1-3", "2+", request=(
    F("filters", "[]", ALL, *_ACL_FILTER, about="the filters whose matching ACLs to delete"),
), response=(
    _throttle(),
    F("filter_results", "[]", ALL, _ERROR, _ERROR_MESSAGE,
      F("matching_acls", "[]", ALL, _ERROR, _ERROR_MESSAGE,
        F("resource_type", "int8", about="the resource type"),
        F("resource_name", "string", about="the resource name (or prefix)"),
        F("pattern_type", "int8", default=3, about="3 literal, 4 prefixed"), *_ACE,
        about="the ACLs the filter matched (deleted unless their error says otherwise)"),
      about="the outcome per filter, in the request's order"),
))

# --- the consumer group protocol (KIP-848; GA in Kafka 4.0) -------------------------------------------------------

_CONSUMER_TOPIC_PARTITIONS = (F("topic_id", "uuid", about="the topic's id"),
                              F("partitions", "[]int32", about="the partitions"))

CONSUMER_GROUP_HEARTBEAT = api(68, "ConsumerGroupHeartbeat", "0-1", "0+", request=(
    _GROUP_ID,
    F("member_id", "string", about="the member's id: generated by the client (v1), kept for its lifetime"),
    F("member_epoch", "int32", about="the member's epoch: 0 to join, -1 to leave, -2 a static member's leave"),
    F("instance_id", "string", **NULL, about="group.instance.id (static membership); null if unchanged"),
    F("rack_id", "string", **NULL, about="the member's rack; null if unchanged"),
    F("rebalance_timeout_ms", "int32", default=-1,
      about="max.poll.interval.ms: how long the member may take to revoke; -1 if unchanged"),
    F("subscribed_topic_names", "[]string", **NULL, about="the topics subscribed to; null if unchanged"),
    F("subscribed_topic_regex", "string", "1+", **NULL, ignorable=True,
      about="the RE2/J regex of the topics subscribed to (the broker evaluates it); null if unchanged"),
    F("server_assignor", "string", **NULL, about="group.remote.assignor; null for the broker's default or unchanged"),
    F("topic_partitions", "[]", ALL, *_CONSUMER_TOPIC_PARTITIONS, **NULL,
      about="the partitions the member owns now; null if unchanged"),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("member_id", "string", **NULL, about="the member's id, as the coordinator knows it"),
    F("member_epoch", "int32", about="the member's epoch"),
    F("heartbeat_interval_ms", "int32", about="how often to heartbeat, in ms"),
    F("assignment", "{}", ALL,
      F("topic_partitions", "[]", ALL, *_CONSUMER_TOPIC_PARTITIONS, about="the partitions assigned, per topic"),
      **NULL, about="the member's whole target assignment; null if unchanged"),
))

_DESCRIBED_ASSIGNMENT = (
    F("topic_partitions", "[]", ALL, F("topic_id", "uuid", about="the topic's id"),
      F("topic_name", "string", about="the topic's name"), F("partitions", "[]int32", about="the partitions"),
      about="per topic"),)

CONSUMER_GROUP_DESCRIBE = api(69, "ConsumerGroupDescribe", "0-1", "0+", request=(
    F("group_ids", "[]string", about="the consumer groups to describe"),
    F("include_authorized_operations", "bool", about="whether to include the group's ACL rights"),
), response=(
    _throttle(),
    F("groups", "[]", ALL, _ERROR, _ERROR_MESSAGE, _GROUP_ID,
      F("group_state", "string", about="its state: Empty, Assigning, Reconciling, Stable, Dead"),
      F("group_epoch", "int32", about="the group's epoch"),
      F("assignment_epoch", "int32", about="the target assignment's epoch"),
      F("assignor_name", "string", about="the server-side assignor"),
      F("members", "[]", ALL, _MEMBER_ID,
        F("instance_id", "string", **NULL, about="its group.instance.id, if static"),
        F("rack_id", "string", **NULL, about="its rack, if any"),
        F("member_epoch", "int32", about="its epoch"),
        F("client_id", "string", about="its client.id"), F("client_host", "string", about="its host"),
        F("subscribed_topic_names", "[]string", about="the topics it subscribed to"),
        F("subscribed_topic_regex", "string", **NULL, about="the regex it subscribed with, if any"),
        F("assignment", "{}", ALL, *_DESCRIBED_ASSIGNMENT, about="the partitions it owns now"),
        F("target_assignment", "{}", ALL, *_DESCRIBED_ASSIGNMENT, about="the partitions it is to own"),
        F("member_type", "int8", "1+", default=-1,
          about="-1 unknown, 0 a classic-protocol member (online upgrade), 1 a consumer-protocol member"),
        about="the group's members"),
      F("authorized_operations", "int32", default=INT32_MIN, about="the group's ACL rights (bits)"),
      about="per group"),
))

# --- share groups (KIP-932; GA in Kafka 4.2: share.version 1) ------------------------------------------------------
# Kafka 4.1 removed the early-access versions (ShareGroupHeartbeat 0, ShareFetch and ShareAcknowledge 0): we speak
# the stable ones. ShareFetch/ShareAcknowledge 2 add the acquire mode and RENEW acknowledgements (KIP-1206, KIP-1222).

SHARE_ACKNOWLEDGE_GAP, SHARE_ACKNOWLEDGE_ACCEPT, SHARE_ACKNOWLEDGE_RELEASE, SHARE_ACKNOWLEDGE_REJECT = 0, 1, 2, 3
SHARE_ACKNOWLEDGE_RENEW = 4  # ShareFetch/ShareAcknowledge v2+

SHARE_GROUP_HEARTBEAT = api(76, "ShareGroupHeartbeat", "1", "0+", request=(
    F("group_id", "string", about="the share group"),
    F("member_id", "string", about="the member's id, generated by the client and kept for its lifetime"),
    F("member_epoch", "int32", about="the member's epoch: 0 to join, -1 to leave"),
    F("rack_id", "string", **NULL, about="the member's rack; null if unchanged since the last heartbeat"),
    F("subscribed_topic_names", "[]string", **NULL,
      about="the topics subscribed to; null if unchanged since the last heartbeat"),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("member_id", "string", **NULL, about="the member's id, as the coordinator knows it"),
    F("member_epoch", "int32", about="the member's epoch"),
    F("heartbeat_interval_ms", "int32", about="how often to heartbeat, in ms"),
    F("assignment", "{}", ALL,
      F("topic_partitions", "[]", ALL, F("topic_id", "uuid", about="the topic's id"),
        F("partitions", "[]int32", about="the partitions"), about="the partitions assigned, per topic"),
      **NULL, about="the member's assignment; null if unchanged"),
))

_ACKNOWLEDGEMENT_BATCHES = F(
    "acknowledgement_batches", "[]", ALL,
    F("first_offset", "int64", about="the first offset acknowledged"),
    F("last_offset", "int64", about="the last offset acknowledged (inclusive)"),
    F("acknowledge_types", "[]int8",
      about="one type for the whole range, or one per offset: 0 gap, 1 accept, 2 release, 3 reject, 4 renew"),
    about="the ranges of records acknowledged")
_CURRENT_LEADER = F("current_leader", "{}", ALL, F("leader_id", "int32", about="the leader, -1 if unknown"),
                    F("leader_epoch", "int32", about="the leader's epoch"), about="the partition's current leader")
_NODE_ENDPOINTS = F("node_endpoints", "[]", ALL, F("node_id", "int32", about="the broker's id"),
                    F("host", "string", about="its host"), F("port", "int32", about="its port"),
                    F("rack", "string", **NULL, about="its rack, if it has one"),
                    about="the brokers named as current leaders (with NOT_LEADER_OR_FOLLOWER)")
_SHARE_SESSION = (
    F("group_id", "string", **NULL, about="the share group"),
    F("member_id", "string", **NULL, about="the member's id"),
    F("share_session_epoch", "int32",
      about="the share session's epoch: 0 opens one, -1 closes it, else the next of consecutive requests"),
)

SHARE_FETCH = api(78, "ShareFetch", "1-2", "0+", request=(
    *_SHARE_SESSION,
    F("max_wait_ms", "int32", about="how long the broker may wait for min_bytes"),
    F("min_bytes", "int32", about="the bytes to wait for"),
    F("max_bytes", "int32", default=0x7FFFFFFF, about="at most this many bytes in the answer (KIP-74 aside)"),
    F("max_records", "int32", about="at most this many records (batch boundaries aside)"),
    F("batch_size", "int32", about="the preferred number of records per acquired batch"),
    F("share_acquire_mode", "int8", "2+", about="0 batch-optimized, 1 record-limit"),
    F("is_renew_ack", "bool", "2+", about="whether the request only renews acquisition locks"),
    F("topics", "[]", ALL, F("topic_id", "uuid", about="the topic's id"),
      F("partitions", "[]", ALL, _PARTITION_INDEX, _ACKNOWLEDGEMENT_BATCHES,
        about="the partitions to add to the session or acknowledge"),
      about="the partitions to fetch (new to the session) and their acknowledgements"),
    F("forgotten_topics_data", "[]", ALL, F("topic_id", "uuid", about="the topic's id"),
      F("partitions", "[]int32", about="the partitions"), about="the partitions to remove from the session"),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("acquisition_lock_timeout_ms", "int32", about="how long the acquired records stay locked, in ms"),
    F("responses", "[]", ALL, F("topic_id", "uuid", about="the topic's id"),
      F("partitions", "[]", ALL, _PARTITION_INDEX,
        F("error_code", "int16", about="the fetch's error code, 0 for none"),
        F("error_message", "string", **NULL, about="the fetch's error message"),
        F("acknowledge_error_code", "int16", about="the acknowledgements' error code, 0 for none"),
        F("acknowledge_error_message", "string", **NULL, about="the acknowledgements' error message"),
        _CURRENT_LEADER,
        F("records", "records", about="the record batches holding the acquired records"),
        F("acquired_records", "[]", ALL, F("first_offset", "int64", about="the first offset acquired"),
          F("last_offset", "int64", about="the last offset acquired (inclusive)"),
          F("delivery_count", "int16", about="how many times these records were delivered, this one included"),
          about="the ranges of records acquired by this member"),
        about="per partition"),
      about="per topic"),
    _NODE_ENDPOINTS,
))

SHARE_ACKNOWLEDGE = api(79, "ShareAcknowledge", "1-2", "0+", request=(
    *_SHARE_SESSION,
    F("is_renew_ack", "bool", "2+", about="whether the request only renews acquisition locks"),
    F("topics", "[]", ALL, F("topic_id", "uuid", about="the topic's id"),
      F("partitions", "[]", ALL, _PARTITION_INDEX, _ACKNOWLEDGEMENT_BATCHES, about="per partition"),
      about="the acknowledgements, per topic"),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("acquisition_lock_timeout_ms", "int32", "2+", about="how long the acquired records stay locked, in ms"),
    F("responses", "[]", ALL, F("topic_id", "uuid", about="the topic's id"),
      F("partitions", "[]", ALL, _PARTITION_INDEX, _ERROR, _ERROR_MESSAGE, _CURRENT_LEADER,
        about="the acknowledgements' outcome per partition"),
      about="per topic"),
    _NODE_ENDPOINTS,
))

# KIP-714 client telemetry: the client asks which metrics the broker's subscriptions want and how often, then pushes
# them OTLP-encoded; a broker advertises both only with a ClientTelemetry plugin among its metric.reporters
_CLIENT_INSTANCE_ID = F("client_instance_id", "uuid",
                        about="the client's instance id; zero on the first ask, then the one the broker assigned")
GET_TELEMETRY_SUBSCRIPTIONS = api(71, "GetTelemetrySubscriptions", "0", "0+", request=(
    _CLIENT_INSTANCE_ID,
), response=(
    _throttle(),
    _ERROR,
    F("client_instance_id", "uuid", about="the client's instance id, assigned by the broker when asked with zero"),
    F("subscription_id", "int32", about="the id of the matching subscriptions' set, sent back with each push"),
    F("accepted_compression_types", "[]int8",
      about="the compression types the broker takes for pushes, preferred first (empty: none)"),
    F("push_interval_ms", "int32", about="how often to push, in ms"),
    F("telemetry_max_bytes", "int32", about="the largest metrics payload the broker takes, in bytes"),
    F("delta_temporality", "bool", about="true: sums as deltas since the last push; false: cumulative"),
    F("requested_metrics", "[]string",
      about="metric name prefixes wanted; empty: none (do not push), one empty string: all"),
))

PUSH_TELEMETRY = api(72, "PushTelemetry", "0", "0+", request=(
    _CLIENT_INSTANCE_ID,
    F("subscription_id", "int32", about="the subscription id the last GetTelemetrySubscriptions answer gave"),
    F("terminating", "bool", about="true on the client's last push, as it closes"),
    F("compression_type", "int8", about="the codec of metrics: 0 none, or an accepted compression type"),
    F("metrics", "bytes", about="the metrics, an OTLP MetricsData protobuf message"),
), response=(
    _throttle(),
    _ERROR,
))

SHARE_GROUP_DESCRIBE = api(77, "ShareGroupDescribe", "1", "0+", request=(
    F("group_ids", "[]string", about="the share groups to describe"),
    F("include_authorized_operations", "bool", about="whether to include the group's ACL rights"),
), response=(
    _throttle(),
    F("groups", "[]", ALL, _ERROR, _ERROR_MESSAGE, _GROUP_ID,
      F("group_state", "string", about="its state: Empty, Stable, Dead"),
      F("group_epoch", "int32", about="the group's epoch"),
      F("assignment_epoch", "int32", about="the assignment's epoch"),
      F("assignor_name", "string", about="the server-side assignor"),
      F("members", "[]", ALL, _MEMBER_ID,
        F("rack_id", "string", **NULL, about="its rack, if any"),
        F("member_epoch", "int32", about="its epoch"),
        F("client_id", "string", about="its client.id"), F("client_host", "string", about="its host"),
        F("subscribed_topic_names", "[]string", about="the topics it subscribed to"),
        F("assignment", "{}", ALL,
          F("topic_partitions", "[]", ALL, F("topic_id", "uuid", about="the topic's id"),
            F("topic_name", "string", about="the topic's name"), F("partitions", "[]int32", about="the partitions"),
            about="the partitions assigned, per topic"), about="its assignment"),
        about="the group's members"),
      F("authorized_operations", "int32", default=INT32_MIN, about="the group's ACL rights (bits)"),
      about="per group"),
))

DESCRIBE_SHARE_GROUP_OFFSETS = api(90, "DescribeShareGroupOffsets", "0-1", "0+", request=(
    F("groups", "[]", ALL, _GROUP_ID,
      F("topics", "[]", ALL, F("topic_name", "string", about="the topic"),
        F("partitions", "[]int32", about="the partitions"), **NULL, about="the partitions to describe; null for all"),
      about="the share groups"),
), response=(
    _throttle(),
    F("groups", "[]", ALL, _GROUP_ID,
      F("topics", "[]", ALL, F("topic_name", "string", about="the topic"), F("topic_id", "uuid", about="its id"),
        F("partitions", "[]", ALL, _PARTITION_INDEX,
          F("start_offset", "int64", about="the share-partition start offset (-1: not initialized)"),
          F("leader_epoch", "int32", about="the leader epoch of the start offset"),
          F("lag", "int64", "1+", default=-1, about="the records not yet delivered and acknowledged (-1: unknown)"),
          _ERROR, _ERROR_MESSAGE, about="per partition"),
        about="per topic"),
      _ERROR, _ERROR_MESSAGE, about="per group"),
))

ALTER_SHARE_GROUP_OFFSETS = api(91, "AlterShareGroupOffsets", "0", "0+", request=(
    _GROUP_ID,
    F("topics", "[]", ALL, F("topic_name", "string", about="the topic"),
      F("partitions", "[]", ALL, _PARTITION_INDEX, F("start_offset", "int64", about="the new start offset"),
        about="the partitions"), about="the start offsets to set, per topic"),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("responses", "[]", ALL, F("topic_name", "string", about="the topic"), F("topic_id", "uuid", about="its id"),
      F("partitions", "[]", ALL, _PARTITION_INDEX, _ERROR, _ERROR_MESSAGE, about="per partition"),
      about="per topic"),
))

DELETE_SHARE_GROUP_OFFSETS = api(92, "DeleteShareGroupOffsets", "0", "0+", request=(
    _GROUP_ID,
    F("topics", "[]", ALL, F("topic_name", "string", about="the topic"), about="the topics whose state to delete"),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("responses", "[]", ALL, F("topic_name", "string", about="the topic"), F("topic_id", "uuid", about="its id"),
      _ERROR, _ERROR_MESSAGE, about="per topic"),
))

ELECT_LEADERS = api(43, "ElectLeaders", "1-2", "2+", request=(  # 0 (preferred only): removed in Kafka 4
    F("election_type", "int8", about="0 the preferred replica, 1 unclean: a live replica outside the ISR if none is"),
    F("topic_partitions", "[]", ALL, F("topic", "string", about="the topic's name"),
      F("partitions", "[]int32", about="its partitions to elect a leader for"), **NULL,
      about="the partitions; null: every partition"),
    F("timeout_ms", "int32", default=60000, about="how long the controller may wait for the elections"),
), response=(
    _throttle(),
    F("error_code", "int16", about="a whole-request error, 0 for none"),
    F("replica_election_results", "[]", ALL, F("topic", "string", about="the topic's name"),
      F("partition_result", "[]", ALL, F("partition_id", "int32", about="the partition"), _ERROR, _ERROR_MESSAGE,
        about="per partition"), about="per topic"),
))

_SCRAM_MECHANISM = F("mechanism", "int8", about="the SCRAM mechanism: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512")

DESCRIBE_USER_SCRAM_CREDENTIALS = api(50, "DescribeUserScramCredentials", "0", "0+", request=(
    F("users", "[]", ALL, F("name", "string", about="the user name"), **NULL,
      about="the users to describe; null or empty: every user with a credential"),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("results", "[]", ALL, F("user", "string", about="the user name"), _ERROR, _ERROR_MESSAGE,
      F("credential_infos", "[]", ALL, _SCRAM_MECHANISM,
        F("iterations", "int32", about="the credential's PBKDF2 iterations"), about="the user's credentials"),
      about="per user"),
))

ALTER_USER_SCRAM_CREDENTIALS = api(51, "AlterUserScramCredentials", "0", "0+", request=(
    F("deletions", "[]", ALL, F("name", "string", about="the user name"), _SCRAM_MECHANISM,
      about="the credentials to remove"),
    F("upsertions", "[]", ALL, F("name", "string", about="the user name"), _SCRAM_MECHANISM,
      F("iterations", "int32", about="the PBKDF2 iterations"),
      F("salt", "bytes", about="a random salt the client chose"),
      F("salted_password", "bytes", about="the password salted by the client (RFC 5802's SaltedPassword)"),
      about="the credentials to create or replace"),
), response=(
    _throttle(),
    F("results", "[]", ALL, F("user", "string", about="the user name"), _ERROR, _ERROR_MESSAGE,
      about="per user altered"),
))

APIS: dict[int, Api] = {a.key: a for a in (
    PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT,
    LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, SASL_HANDSHAKE, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS,
    DELETE_RECORDS, INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN,
    TXN_OFFSET_COMMIT, DESCRIBE_CONFIGS, SASL_AUTHENTICATE, DELETE_GROUPS, INCREMENTAL_ALTER_CONFIGS,
    DESCRIBE_CLUSTER, CREATE_PARTITIONS, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS, SHARE_GROUP_HEARTBEAT, SHARE_FETCH,
    SHARE_ACKNOWLEDGE, GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY, SHARE_GROUP_DESCRIBE, DESCRIBE_SHARE_GROUP_OFFSETS,
    ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS, ELECT_LEADERS,
)}
API_NAMES: dict[int, str] = {key: a.name for key, a in APIS.items()}
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {key: a.valid for key, a in APIS.items()}


def common_versions(broker_api_keys: Iterable[Mapping[str, int]]) -> dict[int, tuple[int, int]]:
    """API key -> (lowest, highest) version both sides speak, from an ApiVersions answer's `api_keys` (api_key,
    min_version, max_version), never below the broker's minimum (Kafka 4 removed old versions, KIP-896). An API the
    broker lists with no version in common with ours is left out (the caller says what it lacks)."""
    common: dict[int, tuple[int, int]] = {}
    for entry in broker_api_keys:
        ours = SUPPORTED_VERSIONS.get(entry["api_key"])
        if ours is None:
            continue
        low, high = max(ours[0], entry["min_version"]), min(ours[1], entry["max_version"])
        if low <= high:
            common[entry["api_key"]] = (low, high)
    return common


def negotiate_versions(broker_api_keys: Iterable[Mapping[str, int]]) -> dict[int, int]:
    """API key -> the version to send: the highest of `common_versions`."""
    return {key: high for key, (_, high) in common_versions(broker_api_keys).items()}


def capped_version(common: tuple[int, int], max_version: int | None) -> int | None:
    """The version to send for a request allowed at most `max_version` (None: no cap), within the common range;
    None when the cap is below it (the broker no longer speaks a version the request may use)."""
    low, high = common
    if max_version is None:
        return high
    return min(high, max_version) if max_version >= low else None
FLEXIBLE_FROM: dict[int, int | None] = {key: a.flexible_from for key, a in APIS.items()}
