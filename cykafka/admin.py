"""The Admin client (Java's AdminClient, synchronous): topics, cluster, configs, offsets, records, consumer groups.

A composition root like the Producer's: it builds a SocketTransport and drives it from the calling thread (send a
request, poll until its answer or the call's deadline; one call at a time, under a lock). Every request is a
`cykafka.protocol.Request` (a dict body) encoded by the generic codec, so a call is a few lines over its API's
description. Per-item outcomes are `Result`s (Java's per-item futures, already complete): `.error` is a KafkaError
or None, `.result()` returns the value or raises the error; nothing is dropped. Whole-call failures (no broker
reached before the deadline, a broken connection setup) raise. Reference and Tansu's quirks: docs/admin.md.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, NamedTuple, TypeVar

from cykafka.adapters.clock import SystemClock
from cykafka.adapters.socket_transport import SocketTransport
from cykafka.config import AdminConfig
from cykafka.errors import (
    BrokerNotFoundError,
    BrokerResponseError,
    InvalidArgumentError,
    KafkaError,
    KafkaTimeoutError,
    UnsupportedVersionError,
)
from cykafka.ports import Clock, Node, PartitionInfo, TopicPartition, by_topic, checked_partitions
from cykafka.protocol import Request
from cykafka.protocol import apis as api
from cykafka.protocol.error_codes import ErrorCode, error_for
from cykafka.serialization import validate_topic
from cykafka.transactions import OffsetAndMetadata

T = TypeVar("T")

# leader/coordinator moving or loading: ask again
_RETRY_PER_ITEM = frozenset({ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION,
                             ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_CONTROLLER, ErrorCode.CONCURRENT_TRANSACTIONS})
# a group's answer saying its coordinator is loading or has moved: find it again and ask again (Java's
# CoordinatorStrategy); a fresh Apache Kafka answers NOT_COORDINATOR while __consumer_offsets is being created
_COORDINATOR_MOVING = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                 ErrorCode.NOT_COORDINATOR})
_RESOURCE_TYPES = {"topic": 2, "broker": 4}  # ConfigResource.Type codes
_CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                   3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                   6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
_ALTER_OPS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}
_OFFSET_SPECS = {"earliest": api.EARLIEST_TIMESTAMP, "latest": api.LATEST_TIMESTAMP,
                 "max_timestamp": api.MAX_TIMESTAMP}


class Result(Generic[T]):
    """One item's outcome (Java's per-item KafkaFuture, complete): the value, or the error that ended it."""

    __slots__ = ("error", "value")

    def __init__(self, value: T | None = None, error: KafkaError | None = None) -> None:
        self.value = value
        self.error = error

    def result(self) -> T:
        """The value, or raises the item's error."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Result(error={self.error!r})" if self.error is not None else f"Result({self.value!r})"


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create. num_partitions / replication_factor -1: the broker's defaults (CreateTopics v4+)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = 1
    config: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    partitions: tuple[PartitionInfo, ...]
    internal: bool = False


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int  # -1: none known
    nodes: tuple[Node, ...]


class ConfigResource(NamedTuple):
    """A config owner: type "topic" (name: the topic) or "broker" (name: the broker's node id as a string)."""

    type: str
    name: str


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str  # Java's ConfigEntry.ConfigSource name, e.g. DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG
    is_default: bool
    read_only: bool
    is_sensitive: bool


@dataclass(frozen=True, slots=True)
class ListOffsetsResultInfo:
    offset: int
    timestamp: int  # -1 when the broker gives none
    leader_epoch: int  # -1 when unknown


@dataclass(frozen=True, slots=True)
class DeletedRecords:
    low_watermark: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupListing:
    group_id: str
    protocol_type: str  # "consumer" for consumer groups; "" for simple (offsets-only) groups
    state: str | None  # None from brokers before ListGroups v4


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: bytes  # the raw ConsumerProtocol assignment


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    state: str
    protocol_type: str
    partition_assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: int


MAX_PARTITIONS_PER_TOPIC = 10_000  # Kafka's controller refuses more per CreateTopics request (KAFKA-17870)


def _check_new_topic(topic: object) -> None:
    """A NewTopic whose fields a CreateTopics request can carry and a broker should take, else the error naming the
    field: a valid topic name (the producer's rule: InvalidTopicError), num_partitions -1 (the broker's default) or
    1..MAX_PARTITIONS_PER_TOPIC, replication_factor -1 or 1..32767, config {str: str or None}."""
    if not isinstance(topic, NewTopic):
        raise InvalidArgumentError(f"create_topics takes NewTopic values, got {type(topic).__name__}")
    validate_topic(topic.name)
    for field, value, high in (("num_partitions", topic.num_partitions, MAX_PARTITIONS_PER_TOPIC),
                               ("replication_factor", topic.replication_factor, 2**15 - 1)):
        if isinstance(value, bool) or not isinstance(value, int) or not (value == -1 or 1 <= value <= high):
            raise InvalidArgumentError(f"NewTopic({topic.name!r}).{field} must be an int, -1 (the broker's default) "
                                       f"or 1 to {high}, got {value!r}")
    _check_configs(topic.config or {}, f"NewTopic({topic.name!r}).config")


def _check_configs(configs: object, what: str) -> None:
    """{name: value} as a request carries it: str names, str (or None) values; else InvalidArgumentError naming it."""
    if not isinstance(configs, Mapping):
        raise InvalidArgumentError(f"{what} must be a mapping of config names to str values, got "
                                   f"{type(configs).__name__}")
    for name, value in configs.items():
        if not isinstance(name, str) or not (value is None or isinstance(value, str)):
            raise InvalidArgumentError(f"{what}: {name!r} must map to a str value (e.g. '{value}'), got {value!r}")


def _checked_names(names: object, what: str) -> list[str]:
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise InvalidArgumentError(f"{what} must be a list of str, got {type(names).__name__}")
    out = list(names)
    bad = [n for n in out if not isinstance(n, str) or not n]
    if bad:
        raise InvalidArgumentError(f"{what} must be non-empty str, got {bad[0]!r}")
    if len(set(out)) != len(out):
        twice = sorted(n for n in set(out) if out.count(n) > 1)
        raise InvalidArgumentError(f"{what} name the same item twice: {twice}")
    return out


class Admin:
    """Kafka's AdminClient: `Admin({"bootstrap.servers": "host:9092"})`. Thread-safe (one call at a time)."""

    def __init__(self, config: Mapping[str, object] | None = None, /, **kwargs: object) -> None:
        """config: Kafka config keys, as a dict and/or keyword arguments with underscores, as Producer takes them;
        positional-only, and no other keyword, so `Admin(**config)` type-checks."""
        self.config = AdminConfig.parse(config, **kwargs)
        self._clock: Clock = SystemClock()
        self._transport = SocketTransport(self.config.connection, clock_ms=self._clock.monotonic_ms)
        self._lock = threading.Lock()
        self._closed = False
        self._nodes: dict[int, Node] = {}
        self._cluster_id: str | None = None
        self._controller_id = -1
        self._last_error: KafkaError | None = None  # the last retriable failure, for a timeout's message
        self._local = threading.local()

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

    def _timed_out(self, what: str) -> KafkaTimeoutError:
        problem = self._transport.connection_problem() or (self._last_error and f"last error: {self._last_error}")
        return KafkaTimeoutError(f"{what}: no answer before the call's deadline "
                                 f"({getattr(self._local, 'timeout', 'its timeout')})"
                                 + (f"; {problem}" if problem else ""))

    def _request(self, api_key: int, body: Mapping[str, Any], deadline_ms: int, node_id: int | None = None,
                 ) -> tuple[int, dict[str, Any]]:
        """(node id, answer) of one request to node_id (None: the least loaded broker), sent again after
        retry.backoff.ms on a retriable transport error (disconnect, request.timeout.ms) until deadline_ms."""
        transport, name = self._transport, api.API_NAMES[api_key]
        if node_id is not None and node_id not in self._nodes:
            raise BrokerNotFoundError(f"{name}: node {node_id} is not in the cluster's metadata")
        request = Request(api_key, body)
        self._last_error = None
        backoff_ms = self.config.retry_backoff_ms
        while True:
            if self._closed:
                raise KafkaError(f"{name}: the Admin client is closed")
            now_ms = self._clock.monotonic_ms()
            if now_ms >= deadline_ms:
                raise self._timed_out(name)
            node = transport.least_loaded_node(now_ms) if node_id is None else node_id
            if node is None or not transport.ready(node, now_ms):
                failure = transport.authentication_error()
                if failure is not None:
                    raise failure
                wait_ms = backoff_ms if node is None else transport.connection_delay_ms(node, now_ms)
                transport.poll(max(1, min(wait_ms, deadline_ms - now_ms, 100)), now_ms)
                continue
            transport.send(node, request, now_ms)
            while (now_ms := self._clock.monotonic_ms()) < deadline_ms and not self._closed:
                answers = [r for r in transport.poll(min(deadline_ms - now_ms, 100), now_ms) if r.request is request]
                if not answers:
                    continue
                answer = answers[0]
                if answer.error is None:
                    assert isinstance(answer.response, dict)
                    return node, answer.response
                if not answer.error.retriable:
                    raise answer.error
                self._last_error = answer.error
                self._clock.sleep_ms(min(backoff_ms, max(0, deadline_ms - self._clock.monotonic_ms())))
                break

    def _metadata(self, topics: list[str] | None, deadline_ms: int) -> dict[str, Any]:
        """A Metadata answer (topics None: every topic), its brokers handed to the transport."""
        body = {"topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False}
        _, answer = self._request(api.METADATA.key, body, deadline_ms)
        self._nodes = {b["node_id"]: Node.from_body(b) for b in answer["brokers"]}
        self._cluster_id, self._controller_id = answer["cluster_id"], answer["controller_id"]
        self._transport.update_nodes(dict(self._nodes))
        return answer

    def _controller(self, deadline_ms: int) -> int | None:
        if self._controller_id < 0:
            self._metadata([], deadline_ms)
        return self._controller_id if self._controller_id in self._nodes else None

    def _call(self, what: Callable[[], T]) -> T:
        with self._lock:
            try:
                return what()
            finally:
                if self._closed:
                    self._transport.close(0.0)

    def _per_topic(self, api_key: int, topics: list[str], body: Callable[[list[str], int], dict[str, Any]],
                   answers: Callable[[dict[str, Any]], Iterable[dict[str, Any]]], deadline_ms: int,
                   ) -> dict[str, Result[None]]:
        """CreateTopics / DeleteTopics: to the controller; NOT_CONTROLLER items go again after a metadata update."""
        results: dict[str, Result[None]] = {}
        pending = list(topics)
        while pending:
            node = self._controller(deadline_ms)
            now_ms = self._clock.monotonic_ms()
            _, answer = self._request(api_key, body(pending, max(0, deadline_ms - now_ms)), deadline_ms, node)
            retry: list[str] = []
            for item in answers(answer):
                name, code = item["name"], item["error_code"]
                if name not in pending:
                    continue
                if code == ErrorCode.NOT_CONTROLLER:
                    retry.append(name)
                    continue
                results[name] = Result(None, error_for(code, f"topic {name!r}: {item.get('error_message') or ''}"
                                                       .rstrip(": ")) if code else None)
            missing = [t for t in pending if t not in results and t not in retry]
            for name in missing:
                results[name] = Result(None, KafkaError(f"topic {name!r}: the broker's answer left it out"))
            pending = retry
            if pending:
                self._controller_id = -1
                self._clock.sleep_ms(self.config.retry_backoff_ms)
        return results

    # -- topics -----------------------------------------------------------------------------------------------------

    def create_topics(self, new_topics: Iterable[NewTopic], *, validate_only: bool = False,
                      timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Creates topics (CreateTopics, at the controller): {name: Result}; an existing topic's Result holds a
        TOPIC_ALREADY_EXISTS error. validate_only: the broker checks, creates nothing."""
        topics = list(new_topics)
        for t in topics:
            _check_new_topic(t)
        by_name = {t.name: t for t in topics}
        names = _checked_names([t.name for t in topics], "create_topics' topics")
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
        names = _checked_names(topics, "delete_topics' topics")
        deadline_ms = self._deadline(timeout_ms)

        def body(pending: list[str], broker_timeout_ms: int) -> dict[str, Any]:
            return {"topic_names": pending, "topics": [{"name": n} for n in pending],
                    "timeout_ms": broker_timeout_ms}

        return self._call(lambda: self._per_topic(api.DELETE_TOPICS.key, names, body, lambda a: a["responses"],
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
        names = _checked_names(topics, "describe_topics' topics")
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
                _, a = self._request(api.DESCRIBE_CLUSTER.key, {}, deadline_ms)
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

        def describe() -> dict[ConfigResource, Result[dict[str, ConfigEntry]]]:
            results: dict[ConfigResource, Result[dict[str, ConfigEntry]]] = {}
            for node, group in self._config_routes(wanted, results, deadline_ms).items():
                body = {"resources": [{"resource_type": _RESOURCE_TYPES[r.type], "resource_name": r.name,
                                       "configuration_keys": None} for r in group]}
                _, answer = self._request(api.DESCRIBE_CONFIGS.key, body, deadline_ms, node)
                for item, resource in self._match_resources(answer["results"], group, results):
                    results[resource] = Result({c["name"]: ConfigEntry(
                        c["name"], c["value"], _CONFIG_SOURCES.get(c["config_source"], "UNKNOWN"),
                        c["is_default"] or c["config_source"] == 5, c["read_only"], c["is_sensitive"])
                        for c in item["configs"]})
            return {r: results[r] for r in wanted}  # in the caller's order

        return self._call(describe)

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
                _check_configs({entry[0]: entry[2]}, f"incremental_alter_configs: {resource}")
                ops[resource].append({"name": entry[0], "config_operation": _ALTER_OPS[entry[1]], "value": entry[2]})
        deadline_ms = self._deadline(timeout_ms)

        def alter() -> dict[ConfigResource, Result[None]]:
            results: dict[ConfigResource, Result[None]] = {}
            for node, group in self._config_routes(wanted, results, deadline_ms).items():
                body = {"resources": [{"resource_type": _RESOURCE_TYPES[r.type], "resource_name": r.name,
                                       "configs": ops[r]} for r in group], "validate_only": validate_only}
                _, answer = self._request(api.INCREMENTAL_ALTER_CONFIGS.key, body, deadline_ms, node)
                for _, resource in self._match_resources(answer["responses"], group, results):
                    results[resource] = Result(None)
            return {r: results[r] for r in wanted}  # in the caller's order

        return self._call(alter)

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

    def _config_routes(self, resources: list[ConfigResource], results: dict[ConfigResource, Any],
                       deadline_ms: int) -> dict[int | None, list[ConfigResource]]:
        """A broker's configs at that broker (Java's rule), topics' at any broker (None); a broker id the metadata
        does not name gets its error in results."""
        if any(r.type == "broker" for r in resources):
            self._metadata([], deadline_ms)
        routes: dict[int | None, list[ConfigResource]] = defaultdict(list)
        for r in resources:
            if r.type == "broker" and int(r.name) not in self._nodes:
                results[r] = Result(error=BrokerNotFoundError(f"broker {r.name!r}: no such node in the cluster's "
                                                              f"metadata (nodes: {sorted(self._nodes)})"))
                continue
            routes[int(r.name) if r.type == "broker" else None].append(r)
        return routes

    @staticmethod
    def _match_resources(items: list[dict[str, Any]], group: list[ConfigResource],
                         results: dict[ConfigResource, Any]) -> Iterable[tuple[dict[str, Any], ConfigResource]]:
        """The answer's items that succeeded, with their resource; failed and missing ones go into results."""
        types = {code: name for name, code in _RESOURCE_TYPES.items()}
        seen = set()
        for item in items:
            resource = ConfigResource(types.get(item["resource_type"], "?"), item["resource_name"])
            if resource not in group:
                continue
            seen.add(resource)
            if item["error_code"]:
                results[resource] = Result(error=error_for(item["error_code"], f"{resource.type} {resource.name!r}: "
                                                           f"{item['error_message'] or ''}".rstrip(": ")))
            else:
                yield item, resource
        for resource in group:
            if resource not in seen:
                results[resource] = Result(error=KafkaError(f"{resource.type} {resource.name!r}: the broker's "
                                                            f"answer left it out"))

    # -- offsets and records ----------------------------------------------------------------------------------------

    def _by_leader(self, wanted: list[TopicPartition], deadline_ms: int,
                   ask: Callable[[int, list[TopicPartition]], dict[TopicPartition, Result[Any]]],
                   ) -> dict[TopicPartition, Result[Any]]:
        """Per-partition requests at each partition's leader; items whose leader moved or is unknown go again after
        a metadata update, until deadline_ms (then they keep their last error)."""
        results: dict[TopicPartition, Result[Any]] = {}
        pending = list(wanted)
        while pending:
            answer = self._metadata(sorted({tp.topic for tp in pending}), deadline_ms)
            leaders: dict[TopicPartition, int] = {}
            codes: dict[TopicPartition, int] = {}
            for t in answer["topics"]:
                for p in t["partitions"]:
                    tp = TopicPartition(t["name"], p["partition_index"])
                    leaders[tp], codes[tp] = p["leader_id"], p["error_code"] or t["error_code"]
                for tp in pending:
                    if tp.topic == t["name"] and tp not in leaders and t["error_code"]:
                        codes[tp] = t["error_code"]
            routes: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp in pending:
                leader = leaders.get(tp, -1)
                if leader in self._nodes:
                    routes[leader].append(tp)
                else:
                    results[tp] = Result(error=error_for(codes.get(tp) or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                         f"{tp.topic} [{tp.partition}]"))
            for node, tps in routes.items():
                try:
                    results.update(ask(node, tps))
                except UnsupportedVersionError as e:  # this broker does not speak the API: each item says so
                    results.update((tp, Result(error=e)) for tp in tps)
            pending = [tp for tp in pending if getattr(results[tp].error, "code", None) in _RETRY_PER_ITEM]
            if pending:
                if self._clock.monotonic_ms() + self.config.retry_backoff_ms >= deadline_ms:
                    break
                self._clock.sleep_ms(self.config.retry_backoff_ms)
        return results

    @staticmethod
    def _partition_items(answer_topics: list[dict[str, Any]], tps: list[TopicPartition],
                         ok: Callable[[dict[str, Any]], Any]) -> dict[TopicPartition, Result[Any]]:
        results: dict[TopicPartition, Result[Any]] = {}
        for t in answer_topics:
            for p in t["partitions"]:
                tp = TopicPartition(t["name"], p["partition_index"])
                if tp in tps:
                    code = p["error_code"]
                    results[tp] = Result(error=error_for(code, f"{tp.topic} [{tp.partition}]")) if code \
                        else Result(ok(p))
        for tp in tps:
            results.setdefault(tp, Result(error=KafkaError(f"{tp.topic} [{tp.partition}]: the broker's answer left "
                                                           f"it out")))
        return results

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

        def ask(node: int, group: list[TopicPartition]) -> dict[TopicPartition, Result[Any]]:
            body = {"isolation_level": int(isolation_level == "read_committed"),
                    "topics": by_topic(group, lambda tp: {"partition_index": tp.partition,
                                                           "timestamp": timestamps[tp]})}
            _, answer = self._request(api.LIST_OFFSETS.key, body, deadline_ms, node)
            return self._partition_items(answer["topics"], group, lambda p: ListOffsetsResultInfo(
                p["offset"], p["timestamp"], p["leader_epoch"]))

        return self._call(lambda: self._by_leader(tps, deadline_ms, ask))

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

        def ask(node: int, group: list[TopicPartition]) -> dict[TopicPartition, Result[Any]]:
            body = {"topics": by_topic(group, lambda tp: {"partition_index": tp.partition, "offset": offsets[tp]}),
                    "timeout_ms": max(0, deadline_ms - self._clock.monotonic_ms())}
            _, answer = self._request(api.DELETE_RECORDS.key, body, deadline_ms, node)
            return self._partition_items(answer["topics"], group, lambda p: DeletedRecords(p["low_watermark"]))

        return self._call(lambda: self._by_leader(tps, deadline_ms, ask))

    # -- consumer groups --------------------------------------------------------------------------------------------

    def _coordinator(self, group_id: str, deadline_ms: int) -> int:
        """The group's coordinator (FindCoordinator), asked again while it is loading or moving."""
        while True:
            body = {"key": group_id, "key_type": api.COORDINATOR_GROUP, "coordinator_keys": [group_id]}
            _, a = self._request(api.FIND_COORDINATOR.key, body, deadline_ms)
            answered = api.coordinators_of(a)
            if not answered:
                raise KafkaError(f"group {group_id!r}: FindCoordinator named no coordinator")
            found = answered[0]
            code = found["error_code"]
            if code == ErrorCode.NONE:
                node = Node(found["node_id"], found["host"], found["port"])
                if self._nodes.get(node.node_id) != node:
                    self._nodes[node.node_id] = node
                    self._transport.update_nodes(dict(self._nodes))
                return node.node_id
            if code not in _RETRY_PER_ITEM or self._clock.monotonic_ms() >= deadline_ms:
                raise error_for(code, f"group {group_id!r}: {found['error_message'] or ''}".rstrip(": "))
            self._clock.sleep_ms(self.config.retry_backoff_ms)

    def _per_group(self, group_ids: list[str], deadline_ms: int,
                   ask: Callable[[int, str], Result[Any]]) -> dict[str, Result[Any]]:
        """One request per group at its coordinator; an error finding it is that group's result."""
        results: dict[str, Result[Any]] = {}
        for group_id in group_ids:

            def asked(node: int, group_id: str = group_id) -> Result[Any]:
                result = ask(node, group_id)
                if isinstance(result.error, BrokerResponseError) and result.error.code in _COORDINATOR_MOVING:
                    raise result.error
                return result

            try:
                results[group_id] = self._at_coordinator(group_id, deadline_ms, asked)
            except BrokerResponseError as e:
                results[group_id] = Result(error=e)
        return results

    def _at_coordinator(self, group_id: str, deadline_ms: int, ask: Callable[[int], T]) -> T:
        """ask(the group's coordinator), asked again with the coordinator looked up again while the answer says
        it is loading or has moved (Java's CoordinatorStrategy), until deadline_ms; then that error."""
        while True:
            try:
                return ask(self._coordinator(group_id, deadline_ms))
            except BrokerResponseError as e:
                if e.code not in _COORDINATOR_MOVING or self._clock.monotonic_ms() >= deadline_ms:
                    raise
            self._clock.sleep_ms(self.config.retry_backoff_ms)

    def list_consumer_groups(self, *, states: Iterable[str] | None = None,
                             timeout_ms: int | None = None) -> list[ConsumerGroupListing]:
        """Every group on every broker (ListGroups, Java's listConsumerGroups), optionally only those in states
        (e.g. "Stable", "Empty"; ListGroups v4+). A broker's error raises."""
        wanted = None if states is None else _checked_names(states, "list_consumer_groups' states")
        deadline_ms = self._deadline(timeout_ms)

        def list_groups() -> list[ConsumerGroupListing]:
            self._metadata([], deadline_ms)
            listings: list[ConsumerGroupListing] = []
            for node in sorted(self._nodes):
                _, a = self._request(api.LIST_GROUPS.key, {"states_filter": wanted or []}, deadline_ms, node)
                if a["error_code"]:
                    raise error_for(a["error_code"], f"ListGroups at node {node}")
                listings += [ConsumerGroupListing(g["group_id"], g["protocol_type"], g["group_state"] or None)
                             for g in a["groups"] if wanted is None or g["group_state"] in wanted]
            return sorted(listings, key=lambda g: g.group_id)

        return self._call(list_groups)

    def describe_consumer_groups(self, group_ids: Iterable[str], *,
                                 timeout_ms: int | None = None) -> dict[str, Result[ConsumerGroupDescription]]:
        """Groups' state and members (DescribeGroups at each coordinator): {group id: Result}; a group that does not
        exist gets GROUP_ID_NOT_FOUND (as Java's admin client, from the broker's state "Dead")."""
        names = _checked_names(group_ids, "describe_consumer_groups' group ids")
        deadline_ms = self._deadline(timeout_ms)

        def ask(node: int, group_id: str) -> Result[Any]:
            _, a = self._request(api.DESCRIBE_GROUPS.key, {"groups": [group_id]}, deadline_ms, node)
            g = next((g for g in a["groups"] if g["group_id"] == group_id), None)
            code = ErrorCode.GROUP_ID_NOT_FOUND if g is not None and g["group_state"] == "Dead" else (g or {}).get(
                "error_code", 0)
            if g is None or code:
                return Result(error=error_for(code, f"group {group_id!r}") if code else KafkaError(
                    f"group {group_id!r}: the broker's answer left it out"))
            members = tuple(MemberDescription(m["member_id"], m["group_instance_id"], m["client_id"],
                                              m["client_host"], m["member_assignment"]) for m in g["members"])
            return Result(ConsumerGroupDescription(group_id, g["group_state"], g["protocol_type"],
                                                   g["protocol_data"], members, node))

        return self._call(lambda: self._per_group(names, deadline_ms, ask))

    def delete_consumer_groups(self, group_ids: Iterable[str], *,
                               timeout_ms: int | None = None) -> dict[str, Result[None]]:
        """Deletes groups with no members (DeleteGroups at each coordinator): {group id: Result}."""
        names = _checked_names(group_ids, "delete_consumer_groups' group ids")
        deadline_ms = self._deadline(timeout_ms)

        def ask(node: int, group_id: str) -> Result[Any]:
            _, a = self._request(api.DELETE_GROUPS.key, {"groups_names": [group_id]}, deadline_ms, node)
            code = next((r["error_code"] for r in a["results"] if r["group_id"] == group_id), None)
            if code is None:
                return Result(error=KafkaError(f"group {group_id!r}: the broker's answer left it out"))
            return Result(error=error_for(code, f"group {group_id!r}")) if code else Result(None)

        return self._call(lambda: self._per_group(names, deadline_ms, ask))

    def list_consumer_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None, *,
                                    timeout_ms: int | None = None,
                                    ) -> dict[TopicPartition, Result[OffsetAndMetadata]]:
        """A group's committed offsets (OffsetFetch at its coordinator): every partition it committed, or the
        given ones (offset -1: none committed). {TopicPartition: Result}; a group-level error raises."""
        (group,) = _checked_names([group_id], "list_consumer_group_offsets' group_id")
        tps = None if partitions is None else checked_partitions(partitions, "list_consumer_group_offsets")
        deadline_ms = self._deadline(timeout_ms)
        topics = None if tps is None else by_topic(tps, lambda tp: tp.partition, "partition_indexes")

        def fetch(node: int) -> dict[TopicPartition, Result[OffsetAndMetadata]]:
            body = {"group_id": group, "topics": topics, "groups": [{"group_id": group, "topics": topics}]}
            _, a = self._request(api.OFFSET_FETCH.key, body, deadline_ms, node)
            found = a["groups"][0] if a["groups"] else a
            if found["error_code"]:
                raise error_for(found["error_code"], f"group {group!r}")
            results: dict[TopicPartition, Result[OffsetAndMetadata]] = {}
            for t in found["topics"]:
                for p in sorted(t["partitions"], key=lambda p: p["partition_index"]):
                    tp = TopicPartition(t["name"], p["partition_index"])
                    results[tp] = Result(error=error_for(p["error_code"], f"group {group!r} {tp.topic} "
                                                         f"[{tp.partition}]")) if p["error_code"] else Result(
                        OffsetAndMetadata(p["committed_offset"], p["metadata"], p["committed_leader_epoch"]))
            return results

        return self._call(lambda: self._at_coordinator(group, deadline_ms, fetch))

    # -- lifecycle --------------------------------------------------------------------------------------------------

    def close(self, timeout: float = 5.0) -> None:
        """Closes the connections; returns within timeout seconds (a call running in another thread ends with an
        error at its next step and closes them)."""
        self._closed = True
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
    "ConsumerGroupListing", "DeletedRecords", "InvalidArgumentError", "ListOffsetsResultInfo", "MemberDescription",
    "NewTopic", "Result", "TopicDescription", "TopicPartition",
]
