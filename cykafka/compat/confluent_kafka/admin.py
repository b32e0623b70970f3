"""confluent_kafka.admin over cykafka's Admin: owns `AdminClient` (each call returns at once, its outcome in
`concurrent.futures.Future`s keyed as confluent-kafka keys them, completed by one worker thread running cykafka's
Admin call), confluent's argument types (NewTopic, NewPartitions, ConfigResource, ConfigEntry,
ConsumerGroupTopicPartitions, TopicCollection, OffsetSpec, IsolationLevel; the ACL values are _acl.py's) and result
types (ListConsumerGroupsResult, ConsumerGroupListing, ConsumerGroupDescription, MemberDescription, TopicDescription,
TopicPartitionInfo, Node, DescribeClusterResult, ListOffsetsResultInfo, DeletedRecords). The requests are cykafka's
Admin's.
"""

from __future__ import annotations

import concurrent.futures
import enum
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

from cykafka import errors
from cykafka.admin import Admin
from cykafka.admin_types import ConfigResource as _ConfigResource
from cykafka.admin_types import ElectionType as _ElectionType
from cykafka.admin_types import NewPartitions as _NewPartitions
from cykafka.admin_types import NewTopic as _NewTopic
from cykafka.compat.confluent_kafka import _acl, _config, _scram
from cykafka.compat.confluent_kafka._acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
)
from cykafka.compat.confluent_kafka._metadata import cluster_metadata, timeout_ms
from cykafka.compat.confluent_kafka._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from cykafka.compat.confluent_kafka._types import (
    BrokerMetadata,
    ClusterMetadata,
    PartitionMetadata,
    TopicMetadata,
    TopicPartition,
)
from cykafka.compat.confluent_kafka.error import KafkaError, KafkaException, exception_from
from cykafka.config import ADMIN_KEYS
from cykafka.config_spellings import ALIASES
from cykafka.ports import TopicPartition as _TP
from cykafka.ports.values import OffsetAndMetadata as _CyOffsetAndMetadata
from cykafka.ports.values import Result

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "AdminClient",
    "BrokerMetadata",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "DeletedRecords",
    "DescribeClusterResult",
    "ElectionType",
    "IsolationLevel",
    "KafkaError",
    "KafkaException",
    "ListConsumerGroupsResult",
    "ListOffsetsResultInfo",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "Node",
    "OffsetSpec",
    "PartitionMetadata",
    "ResourcePatternType",
    "ResourceType",
    "ScramCredentialInfo",
    "ScramMechanism",
    "TopicCollection",
    "TopicDescription",
    "TopicMetadata",
    "TopicPartitionInfo",
    "UserScramCredentialAlteration",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
]

K = TypeVar("K", bound=Hashable)


class ResourceType(enum.Enum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    TRANSACTIONAL_ID = 5


class ConfigSource(enum.Enum):
    UNKNOWN_CONFIG = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


class ElectionType(enum.Enum):
    PREFERRED = 0
    UNCLEAN = 1


class ConsumerGroupState(enum.Enum):
    """A group's state as confluent-kafka names it (the broker's "Stable", "Empty", ...)."""

    UNKNOWN = 0
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5

    @classmethod
    def of(cls, broker_state: str | None) -> ConsumerGroupState:
        return _STATES.get(broker_state or "", cls.UNKNOWN)


_STATES = {"PreparingRebalance": ConsumerGroupState.PREPARING_REBALANCING,
           "CompletingRebalance": ConsumerGroupState.COMPLETING_REBALANCING, "Stable": ConsumerGroupState.STABLE,
           "Dead": ConsumerGroupState.DEAD, "Empty": ConsumerGroupState.EMPTY}


class NewTopic:
    """A topic to create: name, partitions (-1: the broker's default), replication factor (-1: the broker's
    default), configs."""

    def __init__(self, topic: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignment: list[list[int]] | None = None, config: Mapping[str, str] | None = None) -> None:
        if replica_assignment is not None:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "NewTopic: replica_assignment is not "
                                            "supported by cykafka's Admin; give num_partitions and "
                                            "replication_factor"))
        self.topic = topic
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignment = replica_assignment
        self.config = dict(config or {})

    def __repr__(self) -> str:
        return f"NewTopic(topic={self.topic},num_partitions={self.num_partitions})"


class NewPartitions:
    """A topic's new total partition count."""

    def __init__(self, topic: str, new_total_count: int, replica_assignment: list[list[int]] | None = None) -> None:
        self.topic = topic
        self.new_total_count = new_total_count
        self.replica_assignment = replica_assignment


class ConfigEntry:
    """A config's name and value, where it comes from and its flags (describe_configs' values)."""

    def __init__(self, name: str, value: str | None, source: ConfigSource = ConfigSource.UNKNOWN_CONFIG,
                 is_read_only: bool = False, is_default: bool = False, is_sensitive: bool = False,
                 is_synonym: bool = False, synonyms: Mapping[str, ConfigEntry] | None = None,
                 incremental_operation: Any = None) -> None:
        self.name = name
        self.value = value
        self.source = source
        self.is_read_only = is_read_only
        self.is_default = is_default
        self.is_sensitive = is_sensitive
        self.is_synonym = is_synonym
        self.synonyms = dict(synonyms or {})
        self.incremental_operation = incremental_operation

    def __repr__(self) -> str:
        return f"ConfigEntry({self.name}=\"{self.value}\")"

    def __str__(self) -> str:
        return f"{self.name}=\"{self.value}\""


class ConfigResource:
    """A config owner: restype ResourceType.TOPIC / BROKER / GROUP (or "topic", "broker", "group") and its name;
    set_config() collects configs for alter_configs. Equal and hashed by (type, name)."""

    def __init__(self, restype: ResourceType | str | int, name: str, set_config: Mapping[str, str] | None = None,
                 described_configs: Any = None, error: KafkaError | None = None,
                 incremental_configs: list[ConfigEntry] | None = None) -> None:
        if isinstance(restype, str):
            restype = ResourceType[restype.upper()]
        elif isinstance(restype, int):
            restype = ResourceType(restype)
        self.restype = restype
        self.name = name
        self.set_config_dict = dict(set_config or {})
        self.incremental_configs = list(incremental_configs or [])
        self.configs = described_configs
        self.error = error

    def set_config(self, name: str, value: str, overwrite: bool = True) -> None:
        if not overwrite and name in self.set_config_dict:
            return
        self.set_config_dict[name] = value

    def __len__(self) -> int:
        return len(self.set_config_dict)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigResource):
            return NotImplemented
        return (self.restype, self.name) == (other.restype, other.name)

    def __hash__(self) -> int:
        return hash((self.restype, self.name))

    def __repr__(self) -> str:
        return f"ConfigResource({self.restype},{self.name})"

    def ours(self) -> _ConfigResource:
        return _ConfigResource(self.restype.name.lower(), self.name)


class ConsumerGroupTopicPartitions:
    """A group and (optionally) its partitions: list_consumer_group_offsets' argument and result."""

    def __init__(self, group_id: str, topic_partitions: list[TopicPartition] | None = None) -> None:
        self.group_id = group_id
        self.topic_partitions = topic_partitions

    def __repr__(self) -> str:
        return f"ConsumerGroupTopicPartitions({self.group_id}, {self.topic_partitions})"


class ConsumerGroupListing:
    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 state: ConsumerGroupState | None = None) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.state = state


class ListConsumerGroupsResult:
    def __init__(self, valid: list[ConsumerGroupListing] | None = None,
                 errors: list[KafkaError] | None = None) -> None:
        self.valid = valid or []
        self.errors = errors or []


class MemberDescription:
    def __init__(self, member_id: str, client_id: str, host: str, group_instance_id: str | None = None) -> None:
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.group_instance_id = group_instance_id


class ConsumerGroupDescription:
    def __init__(self, group_id: str, is_simple_consumer_group: bool, members: list[MemberDescription],
                 partition_assignor: str, state: ConsumerGroupState, coordinator: int) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = state
        self.coordinator = coordinator


class Node:
    """A broker: id, host, port, rack."""

    def __init__(self, id: int, host: str, port: int, rack: str | None = None) -> None:
        self.id = id
        self.id_string = str(id)
        self.host = host
        self.port = port
        self.rack = rack

    def __repr__(self) -> str:
        return f"Node(id={self.id}, host={self.host}, port={self.port}, rack={self.rack})"


class TopicCollection:
    """describe_topics' argument: the topic names."""

    def __init__(self, topic_names: list[str]) -> None:
        self.topic_names = topic_names


class TopicPartitionInfo:
    """A partition of a described topic: its id, leader, replicas and in-sync replicas (Nodes)."""

    def __init__(self, id: int, leader: Node | None, replicas: list[Node], isr: list[Node]) -> None:
        self.id = id
        self.leader = leader
        self.replicas = replicas
        self.isr = isr


class TopicDescription:
    """describe_topics' value: name, topic_id (None: cykafka's Admin does not read it), is_internal, partitions."""

    def __init__(self, name: str, topic_id: Any, is_internal: bool, partitions: list[TopicPartitionInfo],
                 authorized_operations: list[Any] | None = None) -> None:
        self.name = name
        self.topic_id = topic_id
        self.is_internal = is_internal
        self.partitions = partitions
        self.authorized_operations = authorized_operations


class DescribeClusterResult:
    """describe_cluster's value: controller (a Node, None when unknown), nodes, cluster_id."""

    def __init__(self, controller: Node | None, nodes: list[Node], cluster_id: str | None = None,
                 authorized_operations: list[Any] | None = None) -> None:
        self.controller = controller
        self.nodes = nodes
        self.cluster_id = cluster_id
        self.authorized_operations = authorized_operations


class IsolationLevel(enum.Enum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class OffsetSpec:
    """list_offsets' spec of a partition: OffsetSpec.earliest(), latest(), max_timestamp(), for_timestamp(ms)."""

    def __init__(self, value: int) -> None:
        self._value = value

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(-2)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(-1)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return cls(-3)

    @classmethod
    def for_timestamp(cls, timestamp: int) -> OffsetSpec:
        if timestamp < 0:
            raise ValueError("timestamp must be >= 0")
        return cls(timestamp)

    def ours(self) -> str | int:
        return {-2: "earliest", -1: "latest", -3: "max_timestamp"}.get(self._value, self._value)


class ListOffsetsResultInfo:
    """list_offsets' value: offset, timestamp, leader_epoch (None when unknown)."""

    def __init__(self, offset: int, timestamp: int, leader_epoch: int | None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.leader_epoch = leader_epoch if leader_epoch is not None and leader_epoch >= 0 else None


class DeletedRecords:
    """delete_records' value: the partition's low watermark after the deletion."""

    def __init__(self, low_watermark: int) -> None:
        self.low_watermark = low_watermark


class AdminClient:
    """confluent_kafka.admin.AdminClient's API over cykafka.Admin: each call returns {key: Future} (or one Future)
    at once; the futures complete when the cluster answered, with the value or a KafkaException."""

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        config = _config.merged(conf, kwargs)
        for key in [k for k in config if isinstance(k, str) and ALIASES.get(k, k) not in ADMIN_KEYS
                    and ALIASES.get(k, k) != "default.api.timeout.ms" and k not in ("logger", "error.cb")]:
            del config[key]  # librdkafka ignores a client's other keys; so does cykafka's Admin here
        # callbacks run on cykafka's threads as they come; poll() waits for them and counts them (_counted)
        self._callbacks = threading.Condition()
        self._callbacks_run = 0  # since the last poll()
        self._closed = False
        error_cb = _config.error_callback(config.get("error_cb", config.pop("error.cb", None)))
        config["error_cb"] = None if error_cb is None else self._counted(error_cb)
        self._stop_forwarding = _config.forward_logs_while(self, config)
        try:
            with _config.as_kafka_exception():
                self._admin = Admin(config)
        except BaseException:
            self._stop_forwarding()
            raise
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cykafka-compat-admin")

    def _each(self, keys: list[K], call: Callable[[], Mapping[Any, Result[Any]]],
              key_of: Callable[[K], Any] = lambda k: k, value: Callable[[Any], Any] = lambda v: v,
              ) -> dict[K, concurrent.futures.Future[Any]]:
        """{key: Future} completed from the cykafka call's {key_of(key): Result} (value() turns a value into
        confluent's)."""
        futures: dict[K, concurrent.futures.Future[Any]] = {k: concurrent.futures.Future() for k in keys}

        def run() -> None:
            try:
                results = call()
            except BaseException as e:  # the whole call failed: every future gets it
                failure = exception_from(e) if isinstance(e, errors.KafkaError) else e
                for f in futures.values():
                    f.set_exception(failure)
                return
            for k, f in futures.items():
                result = results.get(key_of(k))
                if result is None:
                    f.set_exception(KafkaException(KafkaError(KafkaError._FAIL, f"no result for {k!r}")))
                elif result.error is not None:
                    f.set_exception(exception_from(result.error))
                else:
                    try:
                        f.set_result(value(result.value))
                    except BaseException as e:
                        f.set_exception(e)

        self._worker.submit(run)
        return futures

    def _one(self, call: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        def run() -> Any:
            try:
                return call()
            except errors.KafkaError as e:
                raise exception_from(e) from e
        return self._worker.submit(run)

    @staticmethod
    def _checked_list(items: object, kind: type, call: str) -> list[Any]:
        if not isinstance(items, list | tuple) or not items:
            raise ValueError(f"{call}: expected a non-empty list of {kind.__name__}")
        if not all(isinstance(i, kind) for i in items):
            raise TypeError(f"{call}: expected a list of {kind.__name__}")
        return list(items)

    # -- topics --------------------------------------------------------------------------------------------------

    def create_topics(self, new_topics: list[NewTopic], operation_timeout: float = 0, request_timeout: float = -1,
                      validate_only: bool = False) -> dict[str, concurrent.futures.Future[None]]:
        topics = self._checked_list(new_topics, NewTopic, "create_topics")
        ours = [_NewTopic(t.topic, t.num_partitions, t.replication_factor, t.config or None) for t in topics]
        return self._each([t.topic for t in topics], lambda: self._admin.create_topics(
            ours, validate_only=validate_only, timeout_ms=_wait_ms(operation_timeout, request_timeout)))

    def delete_topics(self, topics: list[str], operation_timeout: float = 0,
                      request_timeout: float = -1) -> dict[str, concurrent.futures.Future[None]]:
        names = self._checked_list(topics, str, "delete_topics")
        return self._each(names, lambda: self._admin.delete_topics(
            names, timeout_ms=_wait_ms(operation_timeout, request_timeout)))

    def create_partitions(self, new_partitions: list[NewPartitions], operation_timeout: float = 0,
                          request_timeout: float = -1,
                          validate_only: bool = False) -> dict[str, concurrent.futures.Future[None]]:
        parts = self._checked_list(new_partitions, NewPartitions, "create_partitions")
        ours = {p.topic: _NewPartitions(p.new_total_count, p.replica_assignment) for p in parts}
        return self._each([p.topic for p in parts], lambda: self._admin.create_partitions(
            ours, validate_only=validate_only, timeout_ms=_wait_ms(operation_timeout, request_timeout)))

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """The cluster's brokers and topics (one topic when given); waits up to timeout seconds."""
        return cluster_metadata(self._admin, topic, timeout)

    # -- configs ---------------------------------------------------------------------------------------------------

    def describe_configs(self, resources: list[ConfigResource], request_timeout: float = -1,
                         ) -> dict[ConfigResource, concurrent.futures.Future[dict[str, ConfigEntry]]]:
        wanted = self._checked_list(resources, ConfigResource, "describe_configs")

        def entries(found: Mapping[str, Any]) -> dict[str, ConfigEntry]:
            return {name: ConfigEntry(name, e.value, ConfigSource.__members__.get(
                e.source, ConfigSource.UNKNOWN_CONFIG), e.read_only, e.is_default, e.is_sensitive)
                for name, e in found.items()}

        return self._each(wanted, lambda: self._admin.describe_configs(
            [r.ours() for r in wanted], timeout_ms=timeout_ms(request_timeout)), ConfigResource.ours, entries)

    def incremental_alter_configs(self, resources: list[ConfigResource], request_timeout: float = -1,
                                  validate_only: bool = False) -> dict[ConfigResource, concurrent.futures.Future[None]]:
        wanted = self._checked_list(resources, ConfigResource, "incremental_alter_configs")
        changes = {r.ours(): [(e.name, _op_name(e.incremental_operation), e.value) for e in r.incremental_configs]
                   for r in wanted}
        return self._each(wanted, lambda: self._admin.incremental_alter_configs(
            changes, validate_only=validate_only, timeout_ms=timeout_ms(request_timeout)), ConfigResource.ours)

    def alter_configs(self, resources: list[ConfigResource], request_timeout: float = -1,
                      validate_only: bool = False) -> dict[ConfigResource, concurrent.futures.Future[None]]:
        """Sets each resource's set_config() values (IncrementalAlterConfigs SET: configs not given keep their
        values, where librdkafka's AlterConfigs resets them to their defaults)."""
        wanted = self._checked_list(resources, ConfigResource, "alter_configs")
        changes = {r.ours(): [(k, "set", v) for k, v in r.set_config_dict.items()] for r in wanted}
        return self._each(wanted, lambda: self._admin.incremental_alter_configs(
            changes, validate_only=validate_only, timeout_ms=timeout_ms(request_timeout)), ConfigResource.ours)

    # -- groups ----------------------------------------------------------------------------------------------------

    def list_consumer_groups(self, request_timeout: float = -1, states: Iterable[Any] | None = None,
                             ) -> concurrent.futures.Future[ListConsumerGroupsResult]:
        wanted = None if states is None else [_state_name(s) for s in states]

        def run() -> ListConsumerGroupsResult:
            found = self._admin.list_consumer_groups(states=wanted, timeout_ms=timeout_ms(request_timeout))
            return ListConsumerGroupsResult([ConsumerGroupListing(g.group_id, g.protocol_type == "",
                                                                  ConsumerGroupState.of(g.state))
                                             for g in found])
        return self._one(run)

    def describe_consumer_groups(self, group_ids: list[str], request_timeout: float = -1,
                                 ) -> dict[str, concurrent.futures.Future[ConsumerGroupDescription]]:
        names = self._checked_list(group_ids, str, "describe_consumer_groups")

        def described(d: Any) -> ConsumerGroupDescription:
            return ConsumerGroupDescription(d.group_id, d.protocol_type == "", [
                MemberDescription(m.member_id, m.client_id, m.host, m.group_instance_id) for m in d.members],
                d.partition_assignor, ConsumerGroupState.of(d.state), d.coordinator)

        return self._each(names, lambda: self._admin.describe_consumer_groups(
            names, timeout_ms=timeout_ms(request_timeout)), value=described)

    def delete_consumer_groups(self, group_ids: list[str], request_timeout: float = -1,
                               ) -> dict[str, concurrent.futures.Future[None]]:
        names = self._checked_list(group_ids, str, "delete_consumer_groups")
        return self._each(names, lambda: self._admin.delete_consumer_groups(
            names, timeout_ms=timeout_ms(request_timeout)))

    def list_consumer_group_offsets(self, list_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions],
                                    require_stable: bool = False, request_timeout: float = -1,
                                    ) -> dict[str, concurrent.futures.Future[ConsumerGroupTopicPartitions]]:
        """One group's committed offsets (confluent-kafka takes one request per call), {group_id: Future}."""
        requests = self._checked_list(list_consumer_group_offsets_request, ConsumerGroupTopicPartitions,
                                      "list_consumer_group_offsets")
        if len(requests) != 1:
            raise ValueError("Currently we support listing offsets for a single consumer group only")
        (request,) = requests
        tps = None if request.topic_partitions is None else [_TP(tp.topic, tp.partition)
                                                             for tp in request.topic_partitions]

        def run() -> ConsumerGroupTopicPartitions:
            found = self._admin.list_consumer_group_offsets(request.group_id, tps,
                                                            timeout_ms=timeout_ms(request_timeout))
            out = []
            for tp, result in sorted(found.items()):
                ours = TopicPartition(tp.topic, tp.partition)
                if result.error is not None:
                    ours.error = exception_from(result.error).args[0]
                elif result.value is not None:
                    ours.offset = result.value.offset
                    ours.metadata = result.value.metadata or None  # librdkafka reads an empty one as None
                out.append(ours)
            return ConsumerGroupTopicPartitions(request.group_id, out)

        return {request.group_id: self._one(run)}

    def alter_consumer_group_offsets(self, alter_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions],
                                     request_timeout: float = -1,
                                     ) -> dict[str, concurrent.futures.Future[ConsumerGroupTopicPartitions]]:
        """Sets one group's committed offsets (confluent-kafka takes one request per call), {group_id: Future}: its
        ConsumerGroupTopicPartitions, each partition's error set where the coordinator refused it."""
        requests = self._checked_list(alter_consumer_group_offsets_request, ConsumerGroupTopicPartitions,
                                      "alter_consumer_group_offsets")
        if len(requests) != 1:
            raise ValueError("Currently we support altering offsets for a single consumer group only")
        (request,) = requests
        if not request.topic_partitions:
            raise ValueError("Non empty topic partition list must be present")
        offsets = {_TP(tp.topic, tp.partition): _CyOffsetAndMetadata(tp.offset, tp.metadata)
                   for tp in request.topic_partitions}

        def run() -> ConsumerGroupTopicPartitions:
            done = self._admin.alter_consumer_group_offsets(request.group_id, offsets,
                                                            timeout_ms=timeout_ms(request_timeout))
            out = []
            for tp, result in sorted(done.items()):
                ours = TopicPartition(tp.topic, tp.partition, offsets[tp].offset, metadata=offsets[tp].metadata)
                if result.error is not None:
                    ours.error = exception_from(result.error).args[0]
                out.append(ours)
            return ConsumerGroupTopicPartitions(request.group_id, out)

        return {request.group_id: self._one(run)}

    # -- topics and the cluster, described ----------------------------------------------------------------------

    def _nodes(self, timeout_ms_: int | None) -> tuple[dict[int, Node], int, str | None]:
        cluster = self._admin.describe_cluster(timeout_ms=timeout_ms_)
        nodes = {n.node_id: Node(n.node_id, n.host, n.port, n.rack) for n in cluster.nodes}
        return nodes, cluster.controller_id, cluster.cluster_id

    def describe_topics(self, topics: TopicCollection, request_timeout: float = -1,
                        include_authorized_operations: bool = False,
                        ) -> dict[str, concurrent.futures.Future[TopicDescription]]:
        if not isinstance(topics, TopicCollection):
            raise TypeError("Expected input to be instance of TopicCollection")
        names = list(topics.topic_names)
        if not all(isinstance(n, str) and n for n in names):
            raise ValueError("Expected list of non-empty topic names")
        wait_ms = timeout_ms(request_timeout)
        nodes: dict[int, Node] = {}

        def call() -> Mapping[str, Result[Any]]:
            nodes.update(self._nodes(wait_ms)[0])
            return self._admin.describe_topics(names, timeout_ms=wait_ms)

        def described(d: Any) -> TopicDescription:
            def node(node_id: int) -> Node:
                return nodes.get(node_id) or Node(node_id, "", -1)
            return TopicDescription(d.name, None, d.internal, [
                TopicPartitionInfo(p.partition, node(p.leader) if p.leader >= 0 else None,
                                   [node(r) for r in p.replicas], [node(r) for r in p.isr]) for p in d.partitions],
                [] if include_authorized_operations else None)

        return self._each(names, call, value=described)

    def describe_cluster(self, request_timeout: float = -1, include_authorized_operations: bool = False,
                         ) -> concurrent.futures.Future[DescribeClusterResult]:
        def run() -> DescribeClusterResult:
            nodes, controller, cluster_id = self._nodes(timeout_ms(request_timeout))
            return DescribeClusterResult(nodes.get(controller), sorted(nodes.values(), key=lambda n: n.id),
                                         cluster_id, [] if include_authorized_operations else None)
        return self._one(run)

    def elect_leaders(self, election_type: ElectionType, partitions: list[TopicPartition] | None = None,
                      request_timeout: float = -1, operation_timeout: float = -1,
                      ) -> concurrent.futures.Future[dict[TopicPartition, KafkaError | None]]:
        """One Future of {TopicPartition: None, or the partition's KafkaError} (confluent-kafka's shape)."""
        if not isinstance(election_type, ElectionType):
            raise TypeError("Expected 'election_type' to be of type 'ElectionType'")
        if partitions is not None:
            if not isinstance(partitions, list):
                raise TypeError(f"Expected 'partitions' to be a list, got '{type(partitions).__name__}'")
            if not all(isinstance(tp, TopicPartition) for tp in partitions):
                raise TypeError("Element of the 'partitions' list must be of type 'TopicPartition'")
            if any(tp.partition < 0 for tp in partitions):
                raise ValueError("Elements of the 'partitions' list must not have negative value for 'partition'")
        ours = None if partitions is None else [_TP(tp.topic, tp.partition) for tp in partitions]

        def elect() -> dict[TopicPartition, KafkaError | None]:
            results = self._admin.elect_leaders(_ElectionType(election_type.value), ours,
                                                timeout_ms=_wait_ms(operation_timeout, request_timeout))
            return {TopicPartition(tp.topic, tp.partition): None if r.error is None else exception_from(
                r.error).args[0] for tp, r in results.items()}

        return self._one(elect)

    def cluster_id(self, timeout: float = -1) -> str | None:
        """The cluster's id (DescribeCluster), waiting up to timeout seconds."""
        try:
            return self._admin.describe_cluster(timeout_ms=timeout_ms(timeout)).cluster_id
        except errors.KafkaError as e:
            raise exception_from(e) from e

    # -- offsets and records -------------------------------------------------------------------------------------

    def list_offsets(self, topic_partition_offsets: Mapping[TopicPartition, OffsetSpec],
                     isolation_level: IsolationLevel | None = None, request_timeout: float = -1,
                     ) -> dict[TopicPartition, concurrent.futures.Future[ListOffsetsResultInfo]]:
        if not isinstance(topic_partition_offsets, Mapping):
            raise TypeError("Expected topic_partition_offsets to be a dict of TopicPartition: OffsetSpec")
        if not all(isinstance(tp, TopicPartition) and isinstance(s, OffsetSpec)
                   for tp, s in topic_partition_offsets.items()):
            raise TypeError("Expected topic_partition_offsets to be a dict of TopicPartition: OffsetSpec")
        level = "read_committed" if isolation_level is IsolationLevel.READ_COMMITTED else "read_uncommitted"
        specs = {_TP(tp.topic, tp.partition): s.ours() for tp, s in topic_partition_offsets.items()}
        return self._each(list(topic_partition_offsets), lambda: self._admin.list_offsets(
            specs, isolation_level=level, timeout_ms=timeout_ms(request_timeout)),
            lambda tp: _TP(tp.topic, tp.partition),
            lambda info: ListOffsetsResultInfo(info.offset, info.timestamp, info.leader_epoch))

    def delete_records(self, topic_partition_offsets: list[TopicPartition], request_timeout: float = -1,
                       operation_timeout: float = 0,
                       ) -> dict[TopicPartition, concurrent.futures.Future[DeletedRecords]]:
        """Deletes each partition's records before its TopicPartition's offset (OFFSET_END, -1: all)."""
        tps = self._checked_list(topic_partition_offsets, TopicPartition, "delete_records")
        before = {_TP(tp.topic, tp.partition): tp.offset for tp in tps}
        return self._each(tps, lambda: self._admin.delete_records(
            before, timeout_ms=_wait_ms(operation_timeout, request_timeout)),
            lambda tp: _TP(tp.topic, tp.partition), lambda d: DeletedRecords(d.low_watermark))

    # -- ACLs ------------------------------------------------------------------------------------------------------

    def create_acls(self, acls: list[AclBinding], request_timeout: float = -1,
                    ) -> dict[AclBinding, concurrent.futures.Future[None]]:
        bindings = self._checked_list(acls, AclBinding, "create_acls")
        if any(isinstance(b, AclBindingFilter) for b in bindings):
            raise TypeError("create_acls: expected a list of AclBinding")
        ours = {b: _acl.binding(b) for b in bindings}
        return self._each(bindings, lambda: self._admin.create_acls(
            ours.values(), timeout_ms=timeout_ms(request_timeout)), ours.__getitem__)

    def describe_user_scram_credentials(self, users: list[str] | None = None, request_timeout: float = -1) -> Any:
        """users None: one Future of {user: UserScramCredentialsDescription} for every user with a credential; a
        list: {user: Future[UserScramCredentialsDescription]} (confluent-kafka's two shapes)."""
        return _scram.describe(self, users, request_timeout)

    def alter_user_scram_credentials(self, alterations: list[UserScramCredentialAlteration],
                                     request_timeout: float = -1) -> dict[str, concurrent.futures.Future[None]]:
        """{user: Future[None]}, one per user altered."""
        return _scram.alter(self, alterations, request_timeout)

    def describe_acls(self, acl_binding_filter: AclBindingFilter, request_timeout: float = -1,
                      ) -> concurrent.futures.Future[list[AclBinding]]:
        if not isinstance(acl_binding_filter, AclBindingFilter):
            raise TypeError("Expected input to be instance of AclBindingFilter")
        wanted = _acl.binding_filter(acl_binding_filter)
        return self._one(lambda: [_acl.from_binding(b) for b in self._admin.describe_acls(
            wanted, timeout_ms=timeout_ms(request_timeout))])

    def delete_acls(self, acl_binding_filters: list[AclBindingFilter], request_timeout: float = -1,
                    ) -> dict[AclBindingFilter, concurrent.futures.Future[list[AclBinding]]]:
        filters = self._checked_list(acl_binding_filters, AclBindingFilter, "delete_acls")
        ours = {f: _acl.binding_filter(f) for f in filters}

        def deleted(matched: list[Any]) -> list[AclBinding]:
            failed = next((m.error for m in matched if m.error is not None), None)
            if failed is not None:
                raise exception_from(failed)
            return [_acl.from_binding(m.binding) for m in matched]

        return self._each(filters, lambda: self._admin.delete_acls(
            ours.values(), timeout_ms=timeout_ms(request_timeout)), ours.__getitem__, deleted)

    def _counted(self, callback: Callable[[errors.KafkaError], None]) -> Callable[[errors.KafkaError], None]:
        """callback, and then poll() told that a callback ran (whatever it raised)."""
        def call(error: errors.KafkaError) -> None:
            try:
                callback(error)
            finally:
                with self._callbacks:
                    self._callbacks_run += 1
                    self._callbacks.notify_all()

        return call

    def poll(self, timeout: float | None = None) -> int:
        """confluent's AdminClient.poll: serves its callbacks (error_cb). Here they run on cykafka's threads as they
        come, so there is nothing queued to serve: waits up to timeout seconds (None or negative: until one runs or
        the client is closed; 0: not at all) for a callback, and returns how many ran since the last poll()."""
        # as confluent's: a bool is a number (0 or 1 s), a str is not; NaN, which it takes as 0, is refused here
        if not (timeout is None or isinstance(timeout, int | float)) or timeout != timeout:
            raise TypeError(f"poll: timeout must be a number of seconds or None, not {timeout!r}")
        with self._callbacks:
            if timeout is None or timeout < 0:
                self._callbacks.wait_for(lambda: self._callbacks_run > 0 or self._closed)
            elif timeout > 0:
                self._callbacks.wait_for(lambda: self._callbacks_run > 0 or self._closed,
                                         min(timeout, threading.TIMEOUT_MAX))
            run, self._callbacks_run = self._callbacks_run, 0
        return run

    def close(self) -> None:
        with self._callbacks:
            self._closed = True
            self._callbacks.notify_all()
        self._worker.shutdown(wait=True)
        self._admin.close()
        self._stop_forwarding()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _wait_ms(operation_timeout_s: float, request_timeout_s: float) -> int | None:
    """confluent's two timeouts as cykafka's one (the longer of them; none given: cykafka's default)."""
    given = [t for t in (operation_timeout_s, request_timeout_s) if t is not None and t > 0]
    return int(max(given) * 1000) if given else None


def _op_name(operation: Any) -> str:
    name = getattr(operation, "name", operation)
    return str(name).lower()


def _state_name(state: Any) -> str:
    """ConsumerGroupState.STABLE as the broker spells it ("Stable"); a string as it is."""
    if isinstance(state, ConsumerGroupState):
        return next(name for name, s in _STATES.items() if s is state)
    return str(state)
