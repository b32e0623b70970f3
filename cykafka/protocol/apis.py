"""Every API cykafka speaks, described once (notation: cykafka.protocol.schema), written from the protocol's facts.

Version ranges are the ones we implement, not every version Kafka defines. The producer's APIs stop where the
producer's behaviour is written for (Produce at 10: 11 may answer TRANSACTION_ABORTABLE; the transaction APIs before
their TRANSACTION_ABORTABLE versions; AddPartitionsToTxn at 3: 4+ is broker-to-broker). The consumer and admin APIs
stop before topic ids replace topic names (KIP-516: Fetch 13, OffsetCommit 9, DeleteTopics 6 is kept, it carries
both) or before KIP-848's group fields, where noted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cykafka.protocol.schema import Api, F, Field, api

INT32_MIN = -(2**31)
ALL = "0+"
NULL: dict[str, Any] = {"nullable": ALL, "default": None}  # a nullable field whose default is null

_ERROR = F("error_code", "int16")
_ERROR_MESSAGE = F("error_message", "string", ALL, **NULL)


def _throttle(versions: str = ALL) -> Field:
    return F("throttle_time_ms", "int32", versions)


def _topics(*partition_fields: Field, versions: str = ALL, name: str = "topics", topic: str = "name",
            partitions: str = "partitions") -> Field:
    """The topic -> partitions nesting most APIs share."""
    return F(name, "[]", versions, F(topic, "string", versions), F(partitions, "[]", versions, *partition_fields))


_BROKER = (F("node_id", "int32"), F("host", "string"), F("port", "int32"), F("rack", "string", "1+", **NULL))
_LEADER_AND_EPOCH = (F("leader_id", "int32", default=-1), F("leader_epoch", "int32", default=-1))
_PARTITION_ERRORS = (F("partition_index", "int32"), _ERROR)

# --- the APIs the producer speaks ------------------------------------------------------------------------------------

PRODUCE = api(0, "Produce", "3-10", "9+", request=(
    F("transactional_id", "string", nullable=ALL, default=None),
    F("acks", "int16"),
    F("timeout_ms", "int32"),
    _topics(F("index", "int32"), F("records", "records", nullable=ALL, default=None),
            name="topic_data", partitions="partition_data"),
), response=(
    _topics(F("index", "int32"), _ERROR, F("base_offset", "int64"), F("log_append_time_ms", "int64", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("record_errors", "[]", "8+", F("batch_index", "int32"), F("batch_index_error_message", "string",
                                                                            **NULL)),
            F("error_message", "string", "8+", **NULL),
            F("current_leader", "{}", "10+", *_LEADER_AND_EPOCH, tag=0),
            name="responses", partitions="partition_responses"),
    _throttle(),
    F("node_endpoints", "[]", "10+", *_BROKER, tag=0),
))

FETCH = api(1, "Fetch", "4-12", "12+", request=(
    F("cluster_id", "string", "12+", tag=0, **NULL),
    F("replica_id", "int32", default=-1),
    F("max_wait_ms", "int32"),
    F("min_bytes", "int32"),
    F("max_bytes", "int32", default=0x7FFFFFFF),
    F("isolation_level", "int8"),
    F("session_id", "int32", "7+"),
    F("session_epoch", "int32", "7+", default=-1),
    _topics(F("partition", "int32"), F("current_leader_epoch", "int32", "9+", default=-1),
            F("fetch_offset", "int64"), F("last_fetched_epoch", "int32", "12+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1), F("partition_max_bytes", "int32"), topic="topic"),
    F("forgotten_topics_data", "[]", "7+", F("topic", "string"), F("partitions", "[]int32")),
    F("rack_id", "string", "11+"),
), response=(
    _throttle(),
    F("error_code", "int16", "7+"),
    F("session_id", "int32", "7+"),
    _topics(F("partition_index", "int32"), _ERROR, F("high_watermark", "int64"),
            F("last_stable_offset", "int64", default=-1), F("log_start_offset", "int64", "5+", default=-1),
            F("diverging_epoch", "{}", "12+", F("epoch", "int32", default=-1), F("end_offset", "int64", default=-1),
              tag=0),
            F("current_leader", "{}", "12+", *_LEADER_AND_EPOCH, tag=1),
            F("snapshot_id", "{}", "12+", F("end_offset", "int64", default=-1), F("epoch", "int32", default=-1),
              tag=2),
            F("aborted_transactions", "[]", ALL, F("producer_id", "int64"), F("first_offset", "int64"), **NULL),
            F("preferred_read_replica", "int32", "11+", default=-1),
            F("records", "records", **NULL),
            name="responses", topic="topic"),
))

# ListOffsets' special timestamps: the offset of the next record, of the first, of the record with the max timestamp
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3

LIST_OFFSETS = api(2, "ListOffsets", "1-7", "6+", request=(
    F("replica_id", "int32", default=-1),
    F("isolation_level", "int8", "2+"),
    _topics(F("partition_index", "int32"), F("current_leader_epoch", "int32", "4+", default=-1),
            F("timestamp", "int64")),
), response=(
    _throttle("2+"),
    _topics(F("partition_index", "int32"), _ERROR, F("timestamp", "int64", default=-1),
            F("offset", "int64", default=-1), F("leader_epoch", "int32", "4+", default=-1)),
))

METADATA = api(3, "Metadata", "1-12", "9+", request=(
    F("topics", "[]", ALL, F("topic_id", "uuid", "10+"), F("name", "string", nullable="10+"), nullable=ALL,
      default=None),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
    F("include_cluster_authorized_operations", "bool", "8-10"),
    F("include_topic_authorized_operations", "bool", "8+"),
), response=(
    _throttle("3+"),
    F("brokers", "[]", ALL, *_BROKER),
    F("cluster_id", "string", "2+", **NULL),
    F("controller_id", "int32", default=-1),
    F("topics", "[]", ALL, _ERROR, F("name", "string", nullable="12+"), F("topic_id", "uuid", "10+"),
      F("is_internal", "bool"),
      F("partitions", "[]", ALL, _ERROR, F("partition_index", "int32"), F("leader_id", "int32"),
        F("leader_epoch", "int32", "7+", default=-1), F("replica_nodes", "[]int32"), F("isr_nodes", "[]int32"),
        F("offline_replicas", "[]int32", "5+")),
      F("topic_authorized_operations", "int32", "8+", default=INT32_MIN)),
    F("cluster_authorized_operations", "int32", "8-10", default=INT32_MIN),
))

COORDINATOR_GROUP = 0  # FindCoordinator key_type: a consumer group
COORDINATOR_TRANSACTION = 1  # a transactional.id

FIND_COORDINATOR = api(10, "FindCoordinator", "1-4", "3+", request=(
    F("key", "string", "0-3"),
    F("key_type", "int8"),
    F("coordinator_keys", "[]string", "4+"),
), response=(
    _throttle(),
    F("error_code", "int16", "0-3"),
    F("error_message", "string", "0-3", **NULL),
    F("node_id", "int32", "0-3"),
    F("host", "string", "0-3"),
    F("port", "int32", "0-3"),
    F("coordinators", "[]", "4+", F("key", "string"), F("node_id", "int32"), F("host", "string"),
      F("port", "int32"), _ERROR, _ERROR_MESSAGE),
))



def coordinators_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The coordinators a decoded FindCoordinator answer names: v4+'s `coordinators`, or (v1-3, whose body holds
    one coordinator's fields) the body itself; an empty v4 answer names none."""
    if answer["coordinators"] or not (answer["host"] or answer["error_code"]):
        return list(answer["coordinators"])
    return [answer]


SASL_HANDSHAKE = api(17, "SaslHandshake", "0-1", "none", request=(
    F("mechanism", "string"),
), response=(
    _ERROR,
    F("mechanisms", "[]string"),
))

API_VERSIONS = api(18, "ApiVersions", "0-3", "3+", request=(
    F("client_software_name", "string", "3+"),
    F("client_software_version", "string", "3+"),
), response=(
    _ERROR,
    F("api_keys", "[]", ALL, F("api_key", "int16"), F("min_version", "int16"), F("max_version", "int16")),
    _throttle("1+"),
    F("supported_features", "[]", "3+", F("name", "string"), F("min_version", "int16"), F("max_version", "int16"),
      tag=0),
    F("finalized_features_epoch", "int64", "3+", tag=1, default=-1),
    F("finalized_features", "[]", "3+", F("name", "string"), F("max_version_level", "int16"),
      F("min_version_level", "int16"), tag=2),
    F("zk_migration_ready", "bool", "3+", tag=3),
))

CREATE_TOPICS = api(19, "CreateTopics", "2-7", "5+", request=(
    F("topics", "[]", ALL, F("name", "string"), F("num_partitions", "int32"), F("replication_factor", "int16"),
      F("assignments", "[]", ALL, F("partition_index", "int32"), F("broker_ids", "[]int32")),
      F("configs", "[]", ALL, F("name", "string"), F("value", "string", **NULL))),
    F("timeout_ms", "int32", default=60000),
    F("validate_only", "bool"),
), response=(
    _throttle(),
    F("topics", "[]", ALL, F("name", "string"), F("topic_id", "uuid", "7+"), _ERROR, _ERROR_MESSAGE,
      F("topic_config_error_code", "int16", "5+", tag=0),
      F("num_partitions", "int32", "5+", default=-1), F("replication_factor", "int16", "5+", default=-1),
      F("configs", "[]", "5+", F("name", "string"), F("value", "string", **NULL), F("read_only", "bool"),
        F("config_source", "int8", default=-1), F("is_sensitive", "bool"), **NULL)),
))

INIT_PRODUCER_ID = api(22, "InitProducerId", "0-4", "2+", request=(
    F("transactional_id", "string", **NULL),
    F("transaction_timeout_ms", "int32"),
    F("producer_id", "int64", "3+", default=-1),
    F("producer_epoch", "int16", "3+", default=-1),
), response=(
    _throttle(),
    _ERROR,
    F("producer_id", "int64", default=-1),
    F("producer_epoch", "int16"),
))

_TXN = (F("transactional_id", "string"), F("producer_id", "int64"), F("producer_epoch", "int16"))

ADD_PARTITIONS_TO_TXN = api(24, "AddPartitionsToTxn", "0-3", "3+", request=(  # v4+ is broker-to-broker
    F("v3_and_below_transactional_id", "string"),
    F("v3_and_below_producer_id", "int64"),
    F("v3_and_below_producer_epoch", "int16"),
    F("v3_and_below_topics", "[]", ALL, F("name", "string"), F("partitions", "[]int32")),
), response=(
    _throttle(),
    _topics(F("partition_index", "int32"), F("partition_error_code", "int16"),
            name="results_by_topic_v3_and_below", partitions="results_by_partition"),
))

ADD_OFFSETS_TO_TXN = api(25, "AddOffsetsToTxn", "0-3", "3+", request=(
    *_TXN, F("group_id", "string"),
), response=(_throttle(), _ERROR))

END_TXN = api(26, "EndTxn", "0-3", "3+", request=(
    *_TXN, F("committed", "bool"),
), response=(_throttle(), _ERROR))

TXN_OFFSET_COMMIT = api(28, "TxnOffsetCommit", "0-3", "3+", request=(
    F("transactional_id", "string"),
    F("group_id", "string"),
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("generation_id", "int32", "3+", default=-1),
    F("member_id", "string", "3+"),
    F("group_instance_id", "string", "3+", **NULL),
    _topics(F("partition_index", "int32"), F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "2+", default=-1), F("committed_metadata", "string", **NULL)),
), response=(
    _throttle(),
    _topics(*_PARTITION_ERRORS),
))

SASL_AUTHENTICATE = api(36, "SaslAuthenticate", "0-2", "2+", request=(
    F("auth_bytes", "bytes"),
), response=(
    _ERROR,
    _ERROR_MESSAGE,
    F("auth_bytes", "bytes"),
    F("session_lifetime_ms", "int64", "1+"),
))

# --- what the consumer and the admin client need next -------------------------------------------------------------

OFFSET_COMMIT = api(8, "OffsetCommit", "0-8", "8+", request=(  # 9: topic ids
    F("group_id", "string"),
    F("generation_id", "int32", "1+", default=-1),
    F("member_id", "string", "1+"),
    F("group_instance_id", "string", "7+", **NULL),
    F("retention_time_ms", "int64", "2-4", default=-1),
    _topics(F("partition_index", "int32"), F("committed_offset", "int64"),
            F("committed_leader_epoch", "int32", "6+", default=-1), F("commit_timestamp", "int64", "1", default=-1),
            F("committed_metadata", "string", **NULL)),
), response=(
    _throttle("3+"),
    _topics(*_PARTITION_ERRORS),
))

OFFSET_FETCH = api(9, "OffsetFetch", "0-8", "6+", request=(  # 9: topic ids, member id and epoch
    F("group_id", "string", "0-7"),
    F("topics", "[]", "0-7", F("name", "string"), F("partition_indexes", "[]int32"), nullable="2-7", default=None),
    F("groups", "[]", "8+", F("group_id", "string"),
      F("topics", "[]", ALL, F("name", "string"), F("partition_indexes", "[]int32"), **NULL)),
    F("require_stable", "bool", "7+"),
), response=(
    _throttle("3+"),
    F("topics", "[]", "0-7", F("name", "string"),
      F("partitions", "[]", ALL, F("partition_index", "int32"), F("committed_offset", "int64"),
        F("committed_leader_epoch", "int32", "5+", default=-1), F("metadata", "string", **NULL), _ERROR)),
    F("error_code", "int16", "2-7"),
    F("groups", "[]", "8+", F("group_id", "string"),
      F("topics", "[]", ALL, F("name", "string"),
        F("partitions", "[]", ALL, F("partition_index", "int32"), F("committed_offset", "int64"),
          F("committed_leader_epoch", "int32", default=-1), F("metadata", "string", **NULL), _ERROR)),
      _ERROR),
))

JOIN_GROUP = api(11, "JoinGroup", "0-9", "6+", request=(
    F("group_id", "string"),
    F("session_timeout_ms", "int32"),
    F("rebalance_timeout_ms", "int32", "1+", default=-1),
    F("member_id", "string"),
    F("group_instance_id", "string", "5+", **NULL),
    F("protocol_type", "string"),
    F("protocols", "[]", ALL, F("name", "string"), F("metadata", "bytes")),
    F("reason", "string", "8+", **NULL),
), response=(
    _throttle("2+"),
    _ERROR,
    F("generation_id", "int32", default=-1),
    F("protocol_type", "string", "7+", **NULL),
    F("protocol_name", "string", nullable="7+"),
    F("leader", "string"),
    F("skip_assignment", "bool", "9+"),
    F("member_id", "string"),
    F("members", "[]", ALL, F("member_id", "string"), F("group_instance_id", "string", "5+", **NULL),
      F("metadata", "bytes")),
))

HEARTBEAT = api(12, "Heartbeat", "0-4", "4+", request=(
    F("group_id", "string"),
    F("generation_id", "int32"),
    F("member_id", "string"),
    F("group_instance_id", "string", "3+", **NULL),
), response=(_throttle("1+"), _ERROR))

LEAVE_GROUP = api(13, "LeaveGroup", "0-5", "4+", request=(
    F("group_id", "string"),
    F("member_id", "string", "0-2"),
    F("members", "[]", "3+", F("member_id", "string"), F("group_instance_id", "string", **NULL),
      F("reason", "string", "5+", **NULL)),
), response=(
    _throttle("1+"),
    _ERROR,
    F("members", "[]", "3+", F("member_id", "string"), F("group_instance_id", "string", **NULL), _ERROR),
))

SYNC_GROUP = api(14, "SyncGroup", "0-5", "4+", request=(
    F("group_id", "string"),
    F("generation_id", "int32"),
    F("member_id", "string"),
    F("group_instance_id", "string", "3+", **NULL),
    F("protocol_type", "string", "5+", **NULL),
    F("protocol_name", "string", "5+", **NULL),
    F("assignments", "[]", ALL, F("member_id", "string"), F("assignment", "bytes")),
), response=(
    _throttle("1+"),
    _ERROR,
    F("protocol_type", "string", "5+", **NULL),
    F("protocol_name", "string", "5+", **NULL),
    F("assignment", "bytes"),
))

DESCRIBE_GROUPS = api(15, "DescribeGroups", "0-5", "5+", request=(
    F("groups", "[]string"),
    F("include_authorized_operations", "bool", "3+"),
), response=(
    _throttle("1+"),
    F("groups", "[]", ALL, _ERROR, F("group_id", "string"), F("group_state", "string"),
      F("protocol_type", "string"), F("protocol_data", "string"),
      F("members", "[]", ALL, F("member_id", "string"), F("group_instance_id", "string", "4+", **NULL),
        F("client_id", "string"), F("client_host", "string"), F("member_metadata", "bytes"),
        F("member_assignment", "bytes")),
      F("authorized_operations", "int32", "3+", default=INT32_MIN)),
))

LIST_GROUPS = api(16, "ListGroups", "0-4", "3+", request=(  # 5: types filter (KIP-848)
    F("states_filter", "[]string", "4+"),
), response=(
    _throttle("1+"),
    _ERROR,
    F("groups", "[]", ALL, F("group_id", "string"), F("protocol_type", "string"), F("group_state", "string", "4+")),
))

DELETE_TOPICS = api(20, "DeleteTopics", "0-6", "4+", request=(
    F("topics", "[]", "6+", F("name", "string", **NULL), F("topic_id", "uuid")),
    F("topic_names", "[]string", "0-5"),
    F("timeout_ms", "int32"),
), response=(
    _throttle("1+"),
    F("responses", "[]", ALL, F("name", "string", nullable="6+"), F("topic_id", "uuid", "6+"), _ERROR,
      F("error_message", "string", "5+", **NULL)),
))

DELETE_RECORDS = api(21, "DeleteRecords", "0-2", "2+", request=(
    _topics(F("partition_index", "int32"), F("offset", "int64")),
    F("timeout_ms", "int32"),
), response=(
    _throttle(),
    _topics(F("partition_index", "int32"), F("low_watermark", "int64"), _ERROR),
))

OFFSET_FOR_LEADER_EPOCH = api(23, "OffsetForLeaderEpoch", "0-4", "4+", request=(
    F("replica_id", "int32", "3+", default=-2),
    _topics(F("partition", "int32"), F("current_leader_epoch", "int32", "2+", default=-1),
            F("leader_epoch", "int32"), topic="topic"),
), response=(
    _throttle("2+"),
    _topics(_ERROR, F("partition", "int32"), F("leader_epoch", "int32", "1+", default=-1),
            F("end_offset", "int64", default=-1), topic="topic"),
))

DESCRIBE_CONFIGS = api(32, "DescribeConfigs", "0-4", "4+", request=(
    F("resources", "[]", ALL, F("resource_type", "int8"), F("resource_name", "string"),
      F("configuration_keys", "[]string", **NULL)),
    F("include_synonyms", "bool", "1+"),
    F("include_documentation", "bool", "3+"),
), response=(
    _throttle(),
    F("results", "[]", ALL, _ERROR, _ERROR_MESSAGE, F("resource_type", "int8"), F("resource_name", "string"),
      F("configs", "[]", ALL, F("name", "string"), F("value", "string", **NULL), F("read_only", "bool"),
        F("is_default", "bool", "0"), F("config_source", "int8", "1+", default=-1), F("is_sensitive", "bool"),
        F("synonyms", "[]", "1+", F("name", "string"), F("value", "string", **NULL), F("source", "int8")),
        F("config_type", "int8", "3+"), F("documentation", "string", "3+", **NULL))),
))

INCREMENTAL_ALTER_CONFIGS = api(44, "IncrementalAlterConfigs", "0-1", "1+", request=(
    F("resources", "[]", ALL, F("resource_type", "int8"), F("resource_name", "string"),
      F("configs", "[]", ALL, F("name", "string"), F("config_operation", "int8"), F("value", "string", **NULL))),
    F("validate_only", "bool"),
), response=(
    _throttle(),
    F("responses", "[]", ALL, _ERROR, _ERROR_MESSAGE, F("resource_type", "int8"), F("resource_name", "string")),
))

DELETE_GROUPS = api(42, "DeleteGroups", "0-2", "2+", request=(
    F("groups_names", "[]string"),
), response=(
    _throttle(),
    F("results", "[]", ALL, F("group_id", "string"), _ERROR),
))

DESCRIBE_CLUSTER = api(60, "DescribeCluster", "0-1", "0+", request=(
    F("include_cluster_authorized_operations", "bool"),
    F("endpoint_type", "int8", "1+", default=1),
), response=(
    _throttle(),
    _ERROR,
    _ERROR_MESSAGE,
    F("endpoint_type", "int8", "1+", default=1),
    F("cluster_id", "string"),
    F("controller_id", "int32", default=-1),
    F("brokers", "[]", ALL, F("broker_id", "int32"), F("host", "string"), F("port", "int32"),
      F("rack", "string", **NULL)),
    F("cluster_authorized_operations", "int32", default=INT32_MIN),
))

APIS: dict[int, Api] = {a.key: a for a in (
    PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT,
    LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, SASL_HANDSHAKE, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS,
    DELETE_RECORDS, INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN,
    TXN_OFFSET_COMMIT, DESCRIBE_CONFIGS, SASL_AUTHENTICATE, DELETE_GROUPS, INCREMENTAL_ALTER_CONFIGS,
    DESCRIBE_CLUSTER,
)}
API_NAMES: dict[int, str] = {key: a.name for key, a in APIS.items()}
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {key: a.valid for key, a in APIS.items()}


def negotiate_versions(broker_api_keys: Iterable[Mapping[str, int]]) -> dict[int, int]:
    """API key -> the version to send, from an ApiVersions answer's `api_keys` (api_key, min_version, max_version):
    the highest version both sides speak, never below the broker's minimum (Kafka 4 removed old versions, KIP-896).
    An API the broker lists with no version in common with ours is left out (the caller says what it lacks)."""
    chosen: dict[int, int] = {}
    for entry in broker_api_keys:
        ours = SUPPORTED_VERSIONS.get(entry["api_key"])
        if ours is None:
            continue
        low, high = max(ours[0], entry["min_version"]), min(ours[1], entry["max_version"])
        if low <= high:
            chosen[entry["api_key"]] = high
    return chosen
FLEXIBLE_FROM: dict[int, int | None] = {key: a.flexible_from for key, a in APIS.items()}
