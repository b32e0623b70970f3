"""The Admin client (Java's AdminClient, synchronous): topics, cluster, configs, offsets, records, consumer groups,
leader elections; ACLs and SCRAM credentials (cykafka/admin_security.py), share groups (cykafka/admin_share.py).

A composition root like the Producer's: it builds a SocketTransport and the request layer over it (cykafka/requests:
the coordinator cache, the call queue, the network loop, the asker) and drives that loop from the calling thread
while a call waits (one call at a time, under a lock). A call on many items is a `Fanout` (Java's AdminApiDriver):
each item's route (a partition's leader from a Metadata answer, a group's coordinator, the controller, a broker), one
request per route, per-item results, retriable items asked again by the error table's kinds. Every request is a
`cykafka.protocol.Request` (a dict body) encoded by the generic codec, so a call is a few lines over its API's
description. Per-item outcomes are `Result`s (Java's per-item futures, already complete): `.error` is a KafkaError
or None, `.result()` returns the value or raises the error; nothing is dropped. Whole-call failures (no broker
reached before the deadline, a broken connection setup) raise. Reference and Tansu's quirks: docs/admin.md.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from cykafka import admin_security, admin_share
from cykafka.acl import AclBinding, AclBindingFilter, FilterResult
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.socket_transport import SocketTransport
from cykafka.admin_types import (  # the types are cykafka.admin's too (its public API)
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    DeletedRecords,
    ElectionType,
    MemberDescription,
    NewPartitions,
    NewTopic,
    TopicDescription,
    check_configs,
    check_new_partitions,
    check_new_topic,
    checked_names,
    classic_group_described,
    consumer_group_described,
)
from cykafka.config import AdminConfig
from cykafka.errors import (
    BrokerNotFoundError,
    InvalidArgumentError,
    KafkaError,
    UnsupportedVersionError,
)
from cykafka.metrics import AdminMetrics, MetricsSnapshot, StatsReporter
from cykafka.ports import Clock, ClusterSnapshot, by_topic
from cykafka.ports.values import (
    ListOffsetsResultInfo,
    Node,
    OffsetAndMetadata,
    PartitionInfo,
    Result,
    TopicPartition,
    checked_offsets,
    checked_partitions,
)
from cykafka.protocol import Request
from cykafka.protocol import apis as api
from cykafka.protocol.error_codes import ErrorCode, answer_error, error_for
from cykafka.requests.ask import Answer, Asker
from cykafka.requests.calls import CallQueue, NetworkLoop
from cykafka.requests.coordinators import Coordinators, group_coordinator
from cykafka.requests.fanout import CONTROLLER_MOVED, COORDINATOR_MOVED, LEADER_MOVED, Again, Fanout, Lookup
from cykafka.requests.offsets import (
    admin_offset_commit_request,
    list_offsets_request,
    offset_commit_retriable,
    offset_fetch_error,
    offset_fetch_request,
    read_list_offsets,
    read_offset_commit,
    read_offset_fetch,
)
from cykafka.requests.routes import ANY_BROKER, Broker, Route, Router
from cykafka.scram import (
    UserScramCredentialAlteration,
    UserScramCredentialsDescription,
)
from cykafka.serialization import validate_topic

if TYPE_CHECKING:  # the generated bodies are for mypy only
    from cykafka.protocol.bodies import (
        CreatePartitionsRequestBody,
        CreatePartitionsRequestTopics,
    )

T = TypeVar("T")
_client_ids = itertools.count(1)  # an Admin without client.id reports its metrics as cykafka-admin-N
_RESOURCE_TYPES = {"topic": 2, "broker": 4, "group": 32}  # ConfigResource.Type codes
_CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                   3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                   6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
_ALTER_OPS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}
_OFFSET_SPECS = {"earliest": api.EARLIEST_TIMESTAMP, "latest": api.LATEST_TIMESTAMP,
                 "max_timestamp": api.MAX_TIMESTAMP}


class _AskedMetadata:
    """Admin's metadata (a MetadataSource for the request layer's routes and the transport's nodes): the snapshot of
    the last Metadata answer Admin asked for itself; it never asks on its own. `stale` once an answer said the
    controller moved or a leader is stale: the next lookup asks again."""

    def __init__(self) -> None:
        self._snapshot = ClusterSnapshot()
        self.stale = True

    def update(self, answer: Mapping[str, Any]) -> None:
        self._snapshot = ClusterSnapshot.from_metadata(answer)
        self.stale = False

    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    def add_topic(self, topic: str, now_ms: int) -> None:
        pass  # Admin names its topics in each Metadata request

    def set_all_topics(self, on: bool) -> None:
        pass

    def request_update(self) -> None:
        self.stale = True

    def maybe_update(self, now_ms: int) -> int:
        return 2**31


def _resource_name(resource: ConfigResource) -> str:
    return f"{resource.type} {resource.name!r}"


def _resource_results(items: list[dict[str, Any]], group: list[ConfigResource],
                      value: Callable[[Mapping[str, Any]], T]) -> dict[ConfigResource, T | KafkaError]:
    """A DescribeConfigs / IncrementalAlterConfigs answer per resource of group: value(item), or its typed error."""
    types = {code: name for name, code in _RESOURCE_TYPES.items()}
    results: dict[ConfigResource, T | KafkaError] = {}
    for item in items:
        resource = ConfigResource(types.get(item["resource_type"], "?"), item["resource_name"])
        if resource in group:
            error = answer_error(item, _resource_name(resource))
            results[resource] = value(item) if error is None else error
    return results


class Admin:
    """Kafka's AdminClient: `Admin({"bootstrap.servers": "host:9092"})`. Thread-safe (one call at a time)."""

    def __init__(self, config: Mapping[str, object] | None = None, /, **kwargs: object) -> None:
        """config: Kafka config keys, as a dict and/or keyword arguments with underscores, as Producer takes them;
        positional-only, and no other keyword, so `Admin(**config)` type-checks."""
        self.config = cfg = AdminConfig.parse(config, **kwargs)
        self._clock: Clock = SystemClock()
        self._transport = SocketTransport(cfg.connection, clock_ms=self._clock.monotonic_ms)
        self._lock = threading.Lock()
        self._closed = False
        self._metadata_seen = _AskedMetadata()
        self._coordinators = Coordinators(self._transport, cfg.retry_backoff_ms)
        calls = CallQueue(Router(self._transport, self._metadata_seen, self._coordinators, cfg.retry_backoff_ms))
        self._loop = NetworkLoop(self._transport, self._metadata_seen, self._clock, [calls, self._coordinators],
                                 cfg.connection.request_timeout_ms, self._coordinators)
        self._local = threading.local()  # the timeout of this thread's call, for its timeout's message
        self._asker = Asker(calls, self._clock, cfg.retry_backoff_ms, drive=self._loop.run_once,
                            closed=lambda: self._closed, client="Admin client",
                            timeout_note=lambda: getattr(self._local, "timeout", ""))
        self._metrics = AdminMetrics()
        self._client_id = cfg.connection.client_id or f"cykafka-admin-{next(_client_ids)}"
        self._loop.on_response = self._metrics.nodes.record_response
        self._stats = StatsReporter.start_if_configured(cfg.statistics_interval_ms, cfg.stats_cb, self,
                                                        f"cykafka-stats-{self._client_id}")

    def metrics(self) -> MetricsSnapshot:
        """Admin's metrics now: connection-count (admin-client-metrics) and, in its `all`, request-latency-avg/-max
        and request-total per node (admin-client-node-metrics); docs/observability.md."""
        return self._metrics.snapshot(self._client_id, self._transport.connection_count())

    # -- the loop ---------------------------------------------------------------------------------------------------

    def _deadline(self, timeout_ms: int | None) -> int:
        if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int)
                                       or timeout_ms < 0):
            raise InvalidArgumentError(f"timeout_ms must be an int >= 0 (None: default.api.timeout.ms), got "
                                       f"{timeout_ms!r}")
        self._local.timeout = (f"default.api.timeout.ms {self.config.default_api_timeout_ms}" if timeout_ms is None
                               else f"timeout_ms {timeout_ms}")  # this thread's call, for its timeout's message
        timeout = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        return self._clock.monotonic_ms() + timeout

    def _ask(self, request: Request, route: Route, deadline_ms: int) -> Answer:
        return self._asker.ask(request, route, deadline_ms)

    @property
    def _nodes(self) -> dict[int, Node]:
        return dict(self._metadata_seen.snapshot().nodes)

    def _metadata(self, topics: list[str] | None, deadline_ms: int) -> dict[str, Any]:
        """A Metadata answer (topics None: every topic), its brokers handed to the transport."""
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False}
        answer = self._ask(Request(api.METADATA.key, body), ANY_BROKER, deadline_ms).body
        self._metadata_seen.update(answer)
        self._loop.update_nodes()
        return answer

    def _call(self, what: Callable[[], T]) -> T:
        with self._lock:
            try:
                return what()
            finally:
                if self._closed:
                    self._transport.close(0.0)

    # -- routes (the fan-out's lookups) ---------------------------------------------------------------------------

    def _controller(self, deadline_ms: int) -> Lookup[str]:
        """Topics' route: the controller (asked for when unknown or after NOT_CONTROLLER), else any broker."""
        def lookup(items: list[str]) -> dict[str, Route | KafkaError | Again]:
            snapshot = self._metadata_seen.snapshot()
            if self._metadata_seen.stale or snapshot.controller_id not in snapshot.nodes:
                self._metadata([], deadline_ms)
                snapshot = self._metadata_seen.snapshot()
            controller = snapshot.controller_id
            route: Route = Broker(controller) if controller in snapshot.nodes else ANY_BROKER
            return dict.fromkeys(items, route)

        return lookup

    def _leaders(self, deadline_ms: int) -> Lookup[TopicPartition]:
        """Partitions' route: their leader, from a fresh Metadata answer. A topic the answer does not know is looked up
        again until the deadline, as Java's PartitionLeaderStrategy does: on KRaft a broker learns of a topic after the
        controller answered its CreateTopics, so one just created can be unknown for a moment (at the deadline its
        items end with UNKNOWN_TOPIC_OR_PARTITION); a partition a known topic does not have fails at once; one without
        a leader is looked up again."""
        def lookup(items: list[TopicPartition]) -> dict[TopicPartition, Route | KafkaError | Again]:
            answer = self._metadata(sorted({tp.topic for tp in items}), deadline_ms)
            nodes = self._metadata_seen.snapshot().nodes
            leaders: dict[TopicPartition, int] = {}
            codes: dict[TopicPartition, int] = {}
            topic_codes = {t["name"]: t["error_code"] for t in answer["topics"]}
            for t in answer["topics"]:
                for p in t["partitions"]:
                    tp = TopicPartition(t["name"], p["partition_index"])
                    leaders[tp], codes[tp] = p["leader_id"], p["error_code"] or t["error_code"]
            routes: dict[TopicPartition, Route | KafkaError | Again] = {}
            unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            for tp in items:
                code = codes.get(tp) or topic_codes.get(tp.topic) or ErrorCode.NONE
                where = f"{tp.topic} [{tp.partition}]"
                if leaders.get(tp, -1) in nodes:
                    routes[tp] = Broker(leaders[tp])
                elif topic_codes.get(tp.topic, unknown) == unknown:  # not known yet
                    routes[tp] = Again(error_for(unknown, where))
                elif tp not in leaders or code == unknown:  # final: no such partition
                    routes[tp] = error_for(code or unknown, where)
                else:  # no leader yet (an election): looked up again
                    routes[tp] = Again(error_for(code or ErrorCode.LEADER_NOT_AVAILABLE, where))
            return routes

        return lookup

    def _by_leader(self, tps: list[TopicPartition], deadline_ms: int, build: Callable[[list[TopicPartition]], Request],
                   read: Callable[[Mapping[str, Any]], Mapping[TopicPartition, T | KafkaError]],
                   ) -> dict[TopicPartition, Result[T]]:
        """Per-partition requests at each partition's leader (list_offsets, delete_records); see
        cykafka/requests/fanout.py for the retries. A leader that cannot be reached sends its items back to the
        lookup (Java's PartitionLeaderStrategy: a dead leader's partitions go to its successor once metadata names
        it); the items then end with the last failure, not a KafkaTimeoutError of the call."""
        fanout: Fanout[TopicPartition, T] = Fanout(
            self._asker, self._leaders(deadline_ms), build, lambda items, body, node: read(body), moves=LEADER_MOVED,
            name=lambda tp: f"{tp.topic} [{tp.partition}]", reroute=True)
        return fanout.run(tps, deadline_ms)

    def _per_topic(self, api_key: int, topics: list[str], body: Callable[[list[str], int], dict[str, Any]],
                   answers: Callable[[dict[str, Any]], Iterable[dict[str, Any]]], deadline_ms: int,
                   ) -> dict[str, Result[None]]:
        """CreateTopics / DeleteTopics / CreatePartitions: to the controller; NOT_CONTROLLER items go again after a
        metadata update."""
        def build(pending: list[str]) -> Request:
            return Request(api_key, body(pending, max(0, deadline_ms - self._clock.monotonic_ms())))

        def read(pending: list[str], answer: Mapping[str, Any], node: int) -> dict[str, KafkaError | None]:
            return {item["name"]: answer_error(item, f"topic {item['name']!r}") for item in answers(dict(answer))
                    if item["name"] in pending}

        fanout: Fanout[str, None] = Fanout(self._asker, self._controller(deadline_ms), build, read,
                                           moves=CONTROLLER_MOVED, name=lambda name: f"topic {name!r}")
        return fanout.run(topics, deadline_ms)

    # -- topics -----------------------------------------------------------------------------------------------------

    def create_topics(self, new_topics: Iterable[NewTopic], *, validate_only: bool = False,
                      timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Creates topics (CreateTopics, at the controller): {name: Result}; an existing topic's Result holds a
        TOPIC_ALREADY_EXISTS error. validate_only: the broker checks, creates nothing."""
        topics = list(new_topics)
        for t in topics:
            check_new_topic(t)
        by_name = {t.name: t for t in topics}
        names = checked_names([t.name for t in topics], "create_topics' topics")
        deadline_ms = self._deadline(timeout_ms)

        def body(pending: list[str], broker_timeout_ms: int) -> dict[str, Any]:
            return {"topics": [{"name": n, "num_partitions": by_name[n].num_partitions,
                                "replication_factor": by_name[n].replication_factor,
                                "configs": [{"name": k, "value": v} for k, v in (by_name[n].config or {}).items()]}
                               for n in pending],
                    "timeout_ms": broker_timeout_ms, "validate_only": validate_only}

        return self._call(lambda: self._per_topic(api.CREATE_TOPICS.key, names, body, lambda a: a["topics"],
                                                  deadline_ms))

    def delete_topics(self, topics: Iterable[str], *, timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Deletes topics (DeleteTopics, at the controller): {name: Result}; an unknown topic's Result holds an
        UNKNOWN_TOPIC_OR_PARTITION error."""
        names = checked_names(topics, "delete_topics' topics")
        deadline_ms = self._deadline(timeout_ms)

        def body(pending: list[str], broker_timeout_ms: int) -> dict[str, Any]:
            return {"topic_names": pending, "topics": [{"name": n} for n in pending],
                    "timeout_ms": broker_timeout_ms}

        return self._call(lambda: self._per_topic(api.DELETE_TOPICS.key, names, body, lambda a: a["responses"],
                                                  deadline_ms))

    def create_partitions(self, new_partitions: Mapping[str, NewPartitions], *, validate_only: bool = False,
                          timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Adds partitions to topics (CreatePartitions, at the controller; Java's createPartitions):
        {topic: NewPartitions(total_count)} -> {topic: Result}. A count that does not grow the topic gets
        INVALID_PARTITIONS, an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a broker without the API (Tansu)
        UnsupportedVersionError. validate_only: the broker checks, creates nothing."""
        if not isinstance(new_partitions, Mapping):
            raise InvalidArgumentError(f"create_partitions takes {{topic: NewPartitions}}, got "
                                       f"{type(new_partitions).__name__}")
        names = checked_names(list(new_partitions), "create_partitions' topics")
        for name in names:
            validate_topic(name)
        assignments = {name: check_new_partitions(name, new_partitions[name]) for name in names}
        deadline_ms = self._deadline(timeout_ms)

        def body(pending: list[str], broker_timeout_ms: int) -> dict[str, Any]:
            topics: list[CreatePartitionsRequestTopics] = [
                {"name": n, "count": new_partitions[n].total_count, "assignments": assignments[n]} for n in pending]
            request: CreatePartitionsRequestBody = {"topics": topics, "timeout_ms": broker_timeout_ms,
                                                    "validate_only": validate_only}
            return dict(request)

        return self._call(lambda: self._per_topic(api.CREATE_PARTITIONS.key, names, body, lambda a: a["results"],
                                                  deadline_ms))

    @staticmethod
    def _description(topic: dict[str, Any]) -> TopicDescription:
        parts = sorted(topic["partitions"], key=lambda p: p["partition_index"])
        return TopicDescription(topic["name"], tuple(
            PartitionInfo(topic["name"], p["partition_index"], p["leader_id"], p["leader_epoch"],
                          tuple(p["replica_nodes"]), tuple(p["isr_nodes"]), p["error_code"]) for p in parts),
            topic["is_internal"])

    def list_topics(self, *, include_internal: bool = False,
                    timeout_ms: int | None = None) -> dict[str, TopicDescription]:
        """Every topic (Metadata): {name: TopicDescription}, sorted by name; internal topics (__consumer_offsets,
        __transaction_state) only with include_internal."""
        deadline_ms = self._deadline(timeout_ms)
        answer = self._call(lambda: self._metadata(None, deadline_ms))
        topics = sorted((t for t in answer["topics"] if t["error_code"] == ErrorCode.NONE and (include_internal
                                                                                or not t["is_internal"])),
                        key=lambda t: str(t["name"]))
        return {t["name"]: self._description(t) for t in topics}

    def describe_topics(self, topics: Iterable[str], *,
                        timeout_ms: int | None = None) -> dict[str, Result[TopicDescription]]:
        """Named topics (Metadata, never auto-creating): {name: Result}; an unknown topic's Result holds an
        UNKNOWN_TOPIC_OR_PARTITION error."""
        names = checked_names(topics, "describe_topics' topics")
        deadline_ms = self._deadline(timeout_ms)
        answer = self._call(lambda: self._metadata(names, deadline_ms))
        found = {t["name"]: t for t in answer["topics"]}
        results: dict[str, Result[TopicDescription]] = {}
        for name in names:
            t = found.get(name)
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if t is None else t["error_code"]
            results[name] = Result(self._description(t)) if t is not None and not code \
                else Result(error=error_for(code, f"topic {name!r}"))
        return results

    # -- cluster and configs ----------------------------------------------------------------------------------------

    def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        """The cluster id, the controller's node id and the brokers (DescribeCluster; Metadata on older brokers)."""
        deadline_ms = self._deadline(timeout_ms)

        def describe() -> ClusterDescription:
            try:
                a = self._ask(Request(api.DESCRIBE_CLUSTER.key, {}), ANY_BROKER, deadline_ms).body
            except UnsupportedVersionError:
                a = self._metadata([], deadline_ms)
                return ClusterDescription(a["cluster_id"], a["controller_id"], tuple(self._nodes.values()))
            if a["error_code"]:
                raise error_for(a["error_code"], a["error_message"])
            nodes = tuple(Node(b["broker_id"], b["host"], b["port"], b["rack"]) for b in a["brokers"])
            return ClusterDescription(a["cluster_id"], a["controller_id"], nodes)

        return self._call(describe)

    def describe_configs(self, resources: Iterable[ConfigResource], *,
                         timeout_ms: int | None = None) -> dict[ConfigResource, Result[dict[str, ConfigEntry]]]:
        """Configs of topics and brokers (DescribeConfigs; a broker's at that broker): {resource: Result of
        {config name: ConfigEntry}}."""
        wanted = self._checked_resources(resources, "describe_configs")
        deadline_ms = self._deadline(timeout_ms)

        def build(group: list[ConfigResource]) -> Request:
            return Request(api.DESCRIBE_CONFIGS.key, {"resources": [
                {"resource_type": _RESOURCE_TYPES[r.type], "resource_name": r.name, "configuration_keys": None}
                for r in group]})

        def entries(item: Mapping[str, Any]) -> dict[str, ConfigEntry]:
            return {c["name"]: ConfigEntry(c["name"], c["value"], _CONFIG_SOURCES.get(c["config_source"], "UNKNOWN"),
                                           c["is_default"] or c["config_source"] == 5, c["read_only"],
                                           c["is_sensitive"]) for c in item["configs"]}

        fanout: Fanout[ConfigResource, dict[str, ConfigEntry]] = Fanout(
            self._asker, self._config_routes(deadline_ms), build,
            lambda group, answer, node: _resource_results(answer["results"], group, entries), name=_resource_name)
        return self._call(lambda: fanout.run(wanted, deadline_ms))

    def incremental_alter_configs(self, changes: Mapping[ConfigResource, Iterable[tuple[str, str, str | None]]], *,
                                  validate_only: bool = False,
                                  timeout_ms: int | None = None) -> dict[ConfigResource, Result[None]]:
        """Changes configs (IncrementalAlterConfigs): {resource: [(name, op, value)]} with op "set", "delete",
        "append" or "subtract" (list configs); {resource: Result}."""
        wanted = self._checked_resources(changes, "incremental_alter_configs")
        ops: dict[ConfigResource, list[dict[str, Any]]] = {}
        for resource in wanted:
            ops[resource] = []
            for entry in changes[resource]:
                if not (isinstance(entry, tuple) and len(entry) == 3 and entry[1] in _ALTER_OPS):
                    raise InvalidArgumentError(f"incremental_alter_configs: {resource} takes (name, op, value) "
                                               f"tuples with op one of {', '.join(_ALTER_OPS)}, got {entry!r}")
                check_configs({entry[0]: entry[2]}, f"incremental_alter_configs: {resource}")
                ops[resource].append({"name": entry[0], "config_operation": _ALTER_OPS[entry[1]], "value": entry[2]})
        deadline_ms = self._deadline(timeout_ms)

        def build(group: list[ConfigResource]) -> Request:
            return Request(api.INCREMENTAL_ALTER_CONFIGS.key, {"resources": [
                {"resource_type": _RESOURCE_TYPES[r.type], "resource_name": r.name, "configs": ops[r]} for r in group],
                "validate_only": validate_only})

        fanout: Fanout[ConfigResource, None] = Fanout(
            self._asker, self._config_routes(deadline_ms), build,
            lambda group, answer, node: _resource_results(answer["responses"], group, lambda item: None),
            name=_resource_name)
        return self._call(lambda: fanout.run(wanted, deadline_ms))

    @staticmethod
    def _checked_resources(resources: Iterable[ConfigResource], call: str) -> list[ConfigResource]:
        out = list(resources)
        for r in out:
            if not isinstance(r, ConfigResource) or r.type not in _RESOURCE_TYPES or not isinstance(r.name, str):
                raise InvalidArgumentError(f"{call} takes ConfigResource(type, name) with type one of "
                                           f"{', '.join(_RESOURCE_TYPES)}, got {r!r}")
            if r.type == "broker" and not r.name.isdigit():
                raise InvalidArgumentError(f"{call}: a broker resource's name is its node id, got {r.name!r}")
        return out

    def _config_routes(self, deadline_ms: int) -> Lookup[ConfigResource]:
        """A broker's configs at that broker (Java's rule), topics' at any broker; a broker id the metadata does not
        name fails its resource."""
        def lookup(resources: list[ConfigResource]) -> dict[ConfigResource, Route | KafkaError | Again]:
            if any(r.type == "broker" for r in resources):
                self._metadata([], deadline_ms)
            nodes = self._nodes
            routes: dict[ConfigResource, Route | KafkaError | Again] = {}
            for r in resources:
                if r.type != "broker":
                    routes[r] = ANY_BROKER
                elif int(r.name) in nodes:
                    routes[r] = Broker(int(r.name))
                else:
                    routes[r] = BrokerNotFoundError(f"broker {r.name!r}: no such node in the cluster's metadata "
                                                    f"(nodes: {sorted(nodes)})")
            return routes

        return lookup

    # -- offsets and records ----------------------------------------------------------------------------------------

    def list_offsets(self, specs: Mapping[TopicPartition, str | int], *, isolation_level: str = "read_uncommitted",
                     timeout_ms: int | None = None) -> dict[TopicPartition, Result[ListOffsetsResultInfo]]:
        """Offsets by spec (ListOffsets, at each leader): "earliest", "latest", "max_timestamp" or a timestamp in ms
        (the first offset whose timestamp is >= it; offset -1 if none). {TopicPartition: Result}."""
        tps = checked_partitions(specs, "list_offsets")
        timestamps: dict[TopicPartition, int] = {}
        for tp, spec in zip(tps, specs.values(), strict=True):
            ts = _OFFSET_SPECS.get(spec) if isinstance(spec, str) else spec
            if not isinstance(ts, int) or isinstance(ts, bool) or (ts < 0 and not isinstance(spec, str)):
                raise InvalidArgumentError(f"list_offsets: the spec of {tp} must be one of {', '.join(_OFFSET_SPECS)}"
                                           f" or a timestamp in ms >= 0, got {spec!r}")
            timestamps[tp] = ts
        if isolation_level not in ("read_uncommitted", "read_committed"):
            raise InvalidArgumentError(f"isolation_level must be read_uncommitted or read_committed, got "
                                       f"{isolation_level!r}")
        deadline_ms = self._deadline(timeout_ms)
        read_committed = isolation_level == "read_committed"
        return self._call(lambda: self._by_leader(
            tps, deadline_ms, lambda group: list_offsets_request({tp: timestamps[tp] for tp in group},
                                                                 read_committed=read_committed),
            read_list_offsets))

    def delete_records(self, before: Mapping[TopicPartition, int], *,
                       timeout_ms: int | None = None) -> dict[TopicPartition, Result[DeletedRecords]]:
        """Deletes the records before each offset (DeleteRecords, at each leader; -1: up to the high watermark):
        {TopicPartition: Result of DeletedRecords(low_watermark)}."""
        tps = checked_partitions(before, "delete_records")
        offsets = dict(zip(tps, before.values(), strict=True))
        for tp, offset in offsets.items():
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < -1:
                raise InvalidArgumentError(f"delete_records: the offset of {tp} must be an int >= 0 (or -1: the "
                                           f"high watermark), got {offset!r}")
        deadline_ms = self._deadline(timeout_ms)

        def build(group: list[TopicPartition]) -> Request:
            return Request(api.DELETE_RECORDS.key, {
                "topics": by_topic(group, lambda tp: {"partition_index": tp.partition, "offset": offsets[tp]}),
                "timeout_ms": max(0, deadline_ms - self._clock.monotonic_ms())})

        def read(answer: Mapping[str, Any]) -> dict[TopicPartition, DeletedRecords | KafkaError]:
            return {TopicPartition(t["name"], p["partition_index"]):
                    error_for(code, f"{t['name']} [{p['partition_index']}]") if (code := p["error_code"])
                    else DeletedRecords(p["low_watermark"]) for t in answer["topics"] for p in t["partitions"]}

        return self._call(lambda: self._by_leader(tps, deadline_ms, build, read))

    def elect_leaders(self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None = None, *,
                      timeout_ms: int | None = None) -> dict[TopicPartition, Result[None]]:
        """Elects leaders (ElectLeaders, at any broker, which hands it to the controller; Java's electLeaders):
        PREFERRED moves each partition's leadership back to its preferred replica, UNCLEAN elects a live replica
        outside the ISR where no in-sync one lives. partitions None: every partition, and the answer names those an
        election was held for or failed. {partition: Result[None]}, per partition: ELECTION_NOT_NEEDED (already led
        by it), PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, typed by
        the broker's code and never asked again (Java's). The whole answer's error raises typed
        (ClusterAuthorizationError without ALTER on the cluster)."""
        if not isinstance(election_type, ElectionType):
            raise InvalidArgumentError(f"election_type must be ElectionType.PREFERRED or ElectionType.UNCLEAN, got "
                                       f"{election_type!r}")
        wanted = None if partitions is None else list(dict.fromkeys(checked_partitions(partitions, "elect_leaders")))
        deadline_ms = self._deadline(timeout_ms)

        def elect() -> dict[TopicPartition, Result[None]]:
            request = Request(api.ELECT_LEADERS.key, {
                "election_type": int(election_type),
                "topic_partitions": None if wanted is None else by_topic(wanted, lambda tp: tp.partition,
                                                                         topic="topic"),
                "timeout_ms": max(0, deadline_ms - self._clock.monotonic_ms())})
            answer = self._ask(request, ANY_BROKER, deadline_ms).body
            if code := answer["error_code"]:
                raise error_for(code, "ElectLeaders")
            out: dict[TopicPartition, Result[None]] = {}
            for t in answer["replica_election_results"]:
                for p in t["partition_result"]:
                    tp = TopicPartition(t["topic"], p["partition_id"])
                    out[tp] = Result(None, answer_error(p, f"{tp.topic} [{tp.partition}]"))
            for tp in wanted or ():
                out.setdefault(tp, Result(error=KafkaError(f"{tp.topic} [{tp.partition}]: the broker's answer left "
                                                           "it out")))
            return out

        return self._call(elect)

    # -- consumer groups --------------------------------------------------------------------------------------------

    def _per_group(self, group_ids: list[str], deadline_ms: int, build: Callable[[str], Request],
                   read: Callable[[str, Mapping[str, Any], int], T | KafkaError]) -> dict[str, Result[T]]:
        """One request per group at its coordinator (the coordinator cache finds it); a failure to find it is that
        group's result."""
        fanout: Fanout[str, T] = Fanout(
            self._asker, lambda groups: {g: group_coordinator(g) for g in groups}, lambda groups: build(groups[0]),
            lambda groups, answer, node: {groups[0]: read(groups[0], answer, node)}, moves=COORDINATOR_MOVED,
            batch=False, name=lambda group: f"group {group!r}")
        return fanout.run(group_ids, deadline_ms)

    def _listed_groups(self, states: list[str] | None, group_type: str | None,
                       deadline_ms: int) -> list[Mapping[str, Any]]:
        """ListGroups at every broker (Java's listGroups): the groups' rows, only those in `states` when given, only
        those of `group_type` when given (ListGroups v5's types_filter); a broker's error raises."""
        self._metadata([], deadline_ms)
        body: dict[str, Any] = {"states_filter": states or []}
        if group_type is not None:
            body["types_filter"] = [group_type]
        rows: list[Mapping[str, Any]] = []
        for node in sorted(self._nodes):
            a = self._ask(Request(api.LIST_GROUPS.key, body), Broker(node), deadline_ms).body
            if a["error_code"]:
                raise error_for(a["error_code"], f"ListGroups at node {node}")
            rows += [g for g in a["groups"] if (states is None or g["group_state"] in states)
                     and (group_type is None or g["group_type"] == group_type)]
        return rows

    def list_consumer_groups(self, *, states: Iterable[str] | None = None,
                             timeout_ms: int | None = None) -> list[ConsumerGroupListing]:
        """Every group on every broker (ListGroups, Java's listConsumerGroups), optionally only those in states
        (e.g. "Stable", "Empty"; ListGroups v4+). A broker's error raises."""
        wanted = None if states is None else checked_names(states, "list_consumer_groups' states")
        deadline_ms = self._deadline(timeout_ms)

        def list_groups() -> list[ConsumerGroupListing]:
            return sorted((ConsumerGroupListing(g["group_id"], g["protocol_type"], g["group_state"] or None)
                           for g in self._listed_groups(wanted, None, deadline_ms)), key=lambda g: g.group_id)

        return self._call(list_groups)

    def describe_consumer_groups(self, group_ids: Iterable[str], *,
                                 timeout_ms: int | None = None) -> dict[str, Result[ConsumerGroupDescription]]:
        """Groups' type, state and members with their partitions, at each coordinator: ConsumerGroupDescribe first
        (a KIP-848 group, type "consumer"), DescribeGroups for the groups it does not know (type "classic"; a broker
        without ConsumerGroupDescribe, Tansu, is asked DescribeGroups only), as Java's admin client. {group id:
        Result}; a group that does not exist gets GROUP_ID_NOT_FOUND (from the broker's state "Dead")."""
        names = checked_names(group_ids, "describe_consumer_groups' group ids")
        deadline_ms = self._deadline(timeout_ms)

        def describe() -> dict[str, Result[ConsumerGroupDescription]]:
            results = self._per_group(names, deadline_ms, lambda g: Request(api.CONSUMER_GROUP_DESCRIBE.key, {
                "group_ids": [g], "include_authorized_operations": False}), consumer_group_described)
            classic = [g for g, r in results.items() if isinstance(r.error, UnsupportedVersionError) or (
                r.error is not None and r.error.code == ErrorCode.GROUP_ID_NOT_FOUND)]
            if classic:  # not a consumer group (or no such group), or a broker without KIP-848
                results.update(self._per_group(
                    classic, deadline_ms, lambda g: Request(api.DESCRIBE_GROUPS.key, {"groups": [g]}),
                    classic_group_described))
            return {g: results[g] for g in names}

        return self._call(describe)

    def delete_consumer_groups(self, group_ids: Iterable[str], *,
                               timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Deletes groups with no members (DeleteGroups at each coordinator): {group id: Result}."""
        names = checked_names(group_ids, "delete_consumer_groups' group ids")
        return self._deleted_groups(names, self._deadline(timeout_ms))

    def _deleted_groups(self, names: list[str], deadline_ms: int) -> dict[str, Result[None]]:
        """DeleteGroups at each group's coordinator (consumer and share groups alike): {group id: Result}."""
        def read(group_id: str, a: Mapping[str, Any], node: int) -> KafkaError | None:
            code = next((r["error_code"] for r in a["results"] if r["group_id"] == group_id), None)
            if code is None:
                return KafkaError(f"group {group_id!r}: the broker's answer left it out")
            return error_for(code, f"group {group_id!r}") if code else None

        return self._call(lambda: self._per_group(
            names, deadline_ms, lambda g: Request(api.DELETE_GROUPS.key, {"groups_names": [g]}), read))

    def list_consumer_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None, *,
                                    timeout_ms: int | None = None,
                                    ) -> dict[TopicPartition, Result[OffsetAndMetadata]]:
        """A group's committed offsets (OffsetFetch at its coordinator): every partition it committed, or the
        given ones (offset -1: none committed). {TopicPartition: Result}; a group-level error raises."""
        (group,) = checked_names([group_id], "list_consumer_group_offsets' group_id")
        tps = None if partitions is None else checked_partitions(partitions, "list_consumer_group_offsets")
        deadline_ms = self._deadline(timeout_ms)

        def fetch() -> dict[TopicPartition, Result[OffsetAndMetadata]]:
            answer = self._asker.ask(offset_fetch_request(group, tps), group_coordinator(group), deadline_ms,
                                     check=lambda body: offset_fetch_error(body, group))
            return {tp: Result(error=found) if isinstance(found, KafkaError) else Result(found)
                    for tp, found in read_offset_fetch(answer.body, group).items()}

        return self._call(fetch)

    def alter_consumer_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
                                     *, timeout_ms: int | None = None) -> dict[TopicPartition, Result[None]]:
        """Sets a group's committed offsets (OffsetCommit at its coordinator, from outside the group: Java's
        alterConsumerGroupOffsets), {TopicPartition: Result}. The group must have no members (else each Result
        holds the coordinator's error, UNKNOWN_MEMBER_ID); a group-level error raises."""
        (group,) = checked_names([group_id], "alter_consumer_group_offsets' group_id")
        checked = checked_offsets(offsets, "alter_consumer_group_offsets")
        deadline_ms = self._deadline(timeout_ms)

        def commit() -> dict[TopicPartition, Result[None]]:
            answer = self._asker.ask(admin_offset_commit_request(group, checked), group_coordinator(group),
                                     deadline_ms, check=lambda body: offset_commit_retriable(body, group))
            return {tp: Result(error=error) if error is not None else Result(None)
                    for tp, error in read_offset_commit(answer.body, group).items()}

        return self._call(commit)

    # -- ACLs and SCRAM credentials (cykafka/admin_security.py) --------------------------------------------------------

    def create_acls(self, acls: Iterable[AclBinding], *,
                    timeout_ms: int | None = None) -> dict[AclBinding, Result[None]]:
        """Creates ACLs (CreateAcls, at any broker; Java's createAcls): {binding: Result}. Without ALTER on the
        cluster each Result holds a ClusterAuthorizationError; without an authorizer, SECURITY_DISABLED."""
        return admin_security.create_acls(self, acls, timeout_ms=timeout_ms)

    def describe_acls(self, acl_filter: AclBindingFilter, *, timeout_ms: int | None = None) -> list[AclBinding]:
        """The ACLs matching acl_filter (DescribeAcls, at any broker; Java's describeAcls; AclBindingFilter.ANY:
        all). The broker's error raises typed (ClusterAuthorizationError without DESCRIBE on the cluster)."""
        return admin_security.describe_acls(self, acl_filter, timeout_ms=timeout_ms)

    def delete_acls(self, filters: Iterable[AclBindingFilter], *,
                    timeout_ms: int | None = None) -> dict[AclBindingFilter, Result[list[FilterResult]]]:
        """Deletes the ACLs matching each filter (DeleteAcls, at any broker; Java's deleteAcls): {filter: Result of
        the bindings it matched, each a FilterResult(binding, error): deleted when error is None}. A filter's own
        error (ClusterAuthorizationError without ALTER on the cluster) is its Result's."""
        return admin_security.delete_acls(self, filters, timeout_ms=timeout_ms)

    def describe_user_scram_credentials(self, users: Iterable[str] | None = None, *, timeout_ms: int | None = None,
                                        ) -> dict[str, Result[UserScramCredentialsDescription]]:
        """The SCRAM credentials of `users` (None or empty: every user that has one) as {user:
        Result[UserScramCredentialsDescription]} (DescribeUserScramCredentials, at any broker; Java's
        describeUserScramCredentials): mechanisms and iterations, never a salt or password. A user named without a
        credential: its Result holds the broker's RESOURCE_NOT_FOUND (a BrokerResponseError). The whole answer's
        error raises typed (ClusterAuthorizationError without DESCRIBE on the cluster)."""
        return admin_security.describe_user_scram_credentials(self, users, timeout_ms=timeout_ms)

    def alter_user_scram_credentials(self, alterations: Iterable[UserScramCredentialAlteration], *,
                                     timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Creates, replaces (UserScramCredentialUpsertion: the password salted here) or deletes
        (UserScramCredentialDeletion) SCRAM credentials (AlterUserScramCredentials, at any broker, which hands them
        to the controller; Java's alterUserScramCredentials): {user: Result[None]}, one per user named. Per-user
        errors, typed by the broker's code: RESOURCE_NOT_FOUND (no such credential to delete), DUPLICATE_RESOURCE
        (one user altered twice in a call: Kafka takes a user once per request), UNACCEPTABLE_CREDENTIAL,
        ClusterAuthorizationError without ALTER on the cluster."""
        return admin_security.alter_user_scram_credentials(self, alterations, timeout_ms=timeout_ms)

    # -- share groups (cykafka/admin_share.py) -----------------------------------------------------------------------

    def list_share_groups(self, *, states: Iterable[str] | None = None,
                          timeout_ms: int | None = None) -> list[admin_share.ShareGroupListing]:
        """Every share group (ListGroups v5, type share), optionally only those in states ("Empty", "Stable")."""
        return admin_share.list_share_groups(self, states, timeout_ms)

    def describe_share_groups(self, group_ids: Iterable[str], *, timeout_ms: int | None = None,
                              ) -> dict[str, Result[admin_share.ShareGroupDescription]]:
        """Share groups' state and members (ShareGroupDescribe): {group id: Result}."""
        return admin_share.describe_share_groups(self, group_ids, timeout_ms)

    def list_share_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None, *,
                                 timeout_ms: int | None = None,
                                 ) -> dict[TopicPartition, Result[admin_share.SharePartitionOffsetInfo]]:
        """A share group's start offsets and lag (DescribeShareGroupOffsets): {TopicPartition: Result}."""
        return admin_share.list_share_group_offsets(self, group_id, partitions, timeout_ms)

    def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int], *,
                                  timeout_ms: int | None = None) -> dict[TopicPartition, Result[None]]:
        """Sets a share group's start offsets (the group must have no members): {TopicPartition: Result}."""
        return admin_share.alter_share_group_offsets(self, group_id, offsets, timeout_ms)

    def delete_share_group_offsets(self, group_id: str, topics: Iterable[str], *,
                                   timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Deletes a share group's state for topics (the group must have no members): {topic: Result}."""
        return admin_share.delete_share_group_offsets(self, group_id, topics, timeout_ms)

    def delete_share_groups(self, group_ids: Iterable[str], *,
                            timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Deletes share groups with no members (DeleteGroups): {group id: Result}."""
        return admin_share.delete_share_groups(self, group_ids, timeout_ms)

    # -- lifecycle --------------------------------------------------------------------------------------------------

    def close(self, timeout: float = 5.0) -> None:
        """Closes the connections; returns within timeout seconds (a call running in another thread ends with an
        error at its next step and closes them)."""
        self._closed = True
        if self._stats is not None:
            self._stats.stop()
        self._transport.wakeup()
        if self._lock.acquire(timeout=max(0.0, timeout)):
            try:
                self._transport.close(0.0)
            finally:
                self._lock.release()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


__all__ = [
    "Admin", "ClusterDescription", "ConfigEntry", "ConfigResource", "ConsumerGroupDescription",
    "ConsumerGroupListing", "DeletedRecords", "ElectionType", "InvalidArgumentError", "ListOffsetsResultInfo",
    "MemberDescription", "NewPartitions", "NewTopic", "Result", "TopicDescription", "TopicPartition",
]
