"""cykafka.ports: the typing.Protocol interfaces the Sender and Producer depend on, and the values that cross them
(the clients' shared values: `cykafka.ports.values`, re-exported here where they cross a port).

Adapters implement these; the core never calls them per record (one Compressor call per batch, one metadata
snapshot per sender loop). Times are integers in milliseconds and their names say so.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from uuid import UUID

from cykafka.errors import ConfigError
from cykafka.ports.values import Node as Node
from cykafka.ports.values import PartitionInfo as PartitionInfo
from cykafka.ports.values import TopicPartition as TopicPartition
from cykafka.ports.values import checked_partitions as checked_partitions
from cykafka.protocol import TransportRequest
from cykafka.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from cykafka.errors import KafkaError

# Record-batch codecs: ids (attributes bits 0-2) as Kafka numbers them, config names, level bounds.
CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4
CODEC_NAMES = {"none": CODEC_NONE, "gzip": CODEC_GZIP, "snappy": CODEC_SNAPPY, "lz4": CODEC_LZ4, "zstd": CODEC_ZSTD}
COMPRESSION_TYPES = tuple(CODEC_NAMES)  # compression.type's values
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")  # what the security adapter speaks
# compression.<codec>.level: default and bounds (the config validates them, the compressors apply them)
GZIP_LEVEL_DEFAULT = -1  # zlib's default
GZIP_LEVEL_MIN = 1
GZIP_LEVEL_MAX = 9
LZ4_LEVEL_DEFAULT = 9  # the fast compressor, as Java; other levels use LZ4HC
LZ4_LEVEL_MIN = 1
LZ4_LEVEL_MAX = 17
ZSTD_LEVEL_DEFAULT = 3
ZSTD_LEVEL_MIN = -131072
ZSTD_LEVEL_MAX = 22


@runtime_checkable
class Compressor(Protocol):
    """Compresses a batch's records section (one call per batch) and decompresses it on the read side."""

    codec_id: int
    name: str

    def compress(self, data: Buffer) -> bytes: ...

    def decompress(self, data: Buffer) -> bytes: ...


class Clock(Protocol):
    """Time as the Sender and Producer see it. monotonic_ms for deadlines, wall_ms for record timestamps; the
    Producer's waits (flush, close, max.block.ms) block through wait_ms, so this clock's time decides them."""

    def monotonic_ms(self) -> int: ...

    def wall_ms(self) -> int: ...

    def sleep_ms(self, duration_ms: int) -> None: ...

    def wait_ms(self, wait: Callable[[float], bool], timeout_ms: int) -> bool:
        """Blocks in `wait(timeout_s)` (an Event's or Condition's wait: True once what it waits for happened) for at
        most timeout_ms of this clock's time; returns wait's answer."""
        ...


def by_topic(tps: Iterable[TopicPartition], item: Callable[[TopicPartition], Any], partitions: str = "partitions",
             topic: str = "name") -> list[dict[str, Any]]:
    """The topic -> partitions nesting of a request body: [{topic: name, partitions: [item(tp), ...]}, ...]."""
    topics: dict[str, list[Any]] = defaultdict(list)
    for tp in tps:
        topics[tp.topic].append(item(tp))
    return [{topic: name, partitions: items} for name, items in topics.items()]


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Immutable metadata: brokers, and every known topic's partitions with leader and leader epoch, and its id."""

    nodes: Mapping[int, Node] = field(default_factory=dict)
    partitions: Mapping[str, Sequence[PartitionInfo]] = field(default_factory=dict)  # topic -> by partition id
    topic_errors: Mapping[str, int] = field(default_factory=dict)  # topic -> error code (e.g. 3 unknown topic)
    controller_id: int = -1
    cluster_id: str | None = None
    topic_ids: Mapping[str, UUID] = field(default_factory=dict)  # topic -> its id (Metadata v10+; KIP-516), if known

    @classmethod
    def from_metadata(cls, body: Mapping[str, Any]) -> ClusterSnapshot:
        """From a decoded Metadata response: nodes by id; per topic without error, partitions indexed by id.

        A leader that is not among the response's brokers counts as unknown (-1), as in Java's Cluster. A partition
        id missing from the response gets a placeholder with leader -1 and LEADER_NOT_AVAILABLE so list index == id.
        Topics with an error code go to topic_errors only; a topic without a name (v12+, by id) is skipped.
        """
        nodes = {b["node_id"]: Node.from_body(b) for b in body["brokers"]}
        partitions: dict[str, list[PartitionInfo]] = {}
        topic_errors: dict[str, int] = {}
        topic_ids: dict[str, UUID] = {}
        for topic in body["topics"]:
            name = topic["name"]
            if name is None:
                continue
            topic_id = topic.get("topic_id")
            if topic_id is not None and topic_id.int:
                topic_ids[name] = topic_id
            if topic["error_code"]:
                topic_errors[name] = topic["error_code"]
                continue
            by_id = {p["partition_index"]: p for p in topic["partitions"] if p["partition_index"] >= 0}
            infos = []
            for index in range(max(by_id) + 1 if by_id else 0):
                p = by_id.get(index)
                if p is None:
                    infos.append(PartitionInfo(name, index, -1, error_code=ErrorCode.LEADER_NOT_AVAILABLE))
                    continue
                leader = p["leader_id"] if p["leader_id"] in nodes else -1
                infos.append(PartitionInfo(name, index, leader, p.get("leader_epoch", -1), tuple(p["replica_nodes"]),
                                           tuple(p["isr_nodes"]), p["error_code"]))
            partitions[name] = infos
        return cls(nodes, partitions, topic_errors, body.get("controller_id", -1), body.get("cluster_id"), topic_ids)

    def partition_count(self, topic: str) -> int | None:
        parts = self.partitions.get(topic)
        return len(parts) if parts is not None else None

    def leader(self, topic: str, partition: int) -> int:
        parts = self.partitions.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            return -1
        return parts[partition].leader

    def available_partitions(self, topic: str) -> list[int]:
        return [p.partition for p in self.partitions.get(topic, ()) if p.leader >= 0]


class MetadataSource(Protocol):
    """Where cluster snapshots come from. The Sender asks for an update; the adapter fetches it over its own I/O."""

    def snapshot(self) -> ClusterSnapshot: ...

    def add_topic(self, topic: str, now_ms: int) -> None: ...

    def set_all_topics(self, on: bool) -> None:
        """Snapshots of every topic of the cluster (a consumer's pattern subscription), or only of those added."""
        ...

    def request_update(self) -> None: ...

    def maybe_update(self, now_ms: int) -> int:
        """Progress a pending refresh; returns ms until the next refresh is due."""
        ...


@dataclass(slots=True)
class ClientResponse:
    """What a Transport hands back for one request: the decoded response body (the generic codec's dict, also for
    Produce), or the error that ended it."""

    node_id: int
    request: TransportRequest
    handler: Callable[[ClientResponse], None] | None
    response: dict[str, Any] | None  # None for acks=0 produce, disconnects, timeouts
    error: KafkaError | None  # disconnect (retriable), request timeout, protocol error
    sent_ms: int
    received_ms: int


TRANSACTION_VERSION = "transaction.version"  # the feature choosing Transactions V2 (KIP-890) at level 2


@dataclass(frozen=True, slots=True)
class FinalizedFeatures:
    """The cluster's finalized features as the newest ApiVersions answer (v3+, tagged fields) gave them, Java's
    ApiVersions.FinalizedFeaturesInfo: `epoch` grows with every change (-1: no broker reported any: Tansu, a Kafka
    older than 2.7); `levels` maps a feature to its finalized max version level."""

    epoch: int = -1
    levels: Mapping[str, int] = field(default_factory=dict)

    def level(self, feature: str) -> int:
        """The finalized level of `feature`, 0 when the cluster has not finalized it."""
        return self.levels.get(feature, 0)


class Transport(Protocol):
    """Kafka's NetworkClient, narrowed: connections to nodes, requests in flight, responses out of poll().

    Requests are `cykafka.protocol.Request` (an API key and a dict body) or the hand-written
    `cykafka.protocol.ProduceRequest` (record batches sent uncopied); the transport picks each API's version from
    ApiVersions and cykafka.protocol's tables, at most the request's `max_version` when it sets one, and hands back
    the decoded body.
    Node ids < 0 are bootstrap addresses until metadata names the brokers.
    """

    def update_nodes(self, nodes: Mapping[int, Node]) -> None: ...

    def ready(self, node_id: int, now_ms: int) -> bool:
        """True when a request can go to node_id now; otherwise starts connecting if it may."""
        ...

    def connection_delay_ms(self, node_id: int, now_ms: int) -> int: ...

    def connection_failed(self, node_id: int) -> bool:
        """True while the last connection to node_id failed or was lost and no new one is open (Java's
        NetworkClient.connectionFailed): requests waiting for it should fail rather than wait."""
        ...

    def send(self, node_id: int, request: TransportRequest, now_ms: int,
             handler: Callable[[ClientResponse], None] | None = None, expect_response: bool = True,
             timeout_ms: int | None = None) -> None:
        """timeout_ms: how long the answer may take (None: request.timeout.ms), e.g. a JoinGroup the coordinator
        holds for the rebalance."""
        ...

    def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]: ...

    def in_flight_count(self, node_id: int | None = None) -> int: ...

    def finalized_features(self) -> FinalizedFeatures:
        """The finalized features of the newest epoch any connection's ApiVersions answer reported (one home for
        them: the producer reads `transaction.version` here)."""
        ...

    def least_loaded_node(self, now_ms: int) -> int | None: ...

    def connection_count(self) -> int:
        """Connections open now (Java's connection-count metric)."""
        ...

    @property
    def disconnect_count(self) -> int:
        """Connections lost or failed to open so far. A disconnect may come from stale metadata (a broker that lost
        its leaderships went away): the Sender then asks for a metadata update, as Java's NetworkClient does."""
        ...

    def authentication_error(self) -> KafkaError | None:
        """The latched SASL/TLS authentication failure (not retriable), None once a connection authenticates:
        the Sender fails queued batches with it and metadata waits raise it."""
        ...

    def wakeup(self) -> None: ...

    def close(self, linger_s: float = 0.0) -> None:
        """Closes every connection, waiting at most linger_s for a graceful shutdown."""
        ...


class FetchPumpPort(Protocol):
    """An optional capability of a Transport (`fetch_pump(node_id)`; SocketTransport has it, fakes need not): one
    connection's next Fetch written from the answer to its last Fetch as soon as that answer is read, before the
    answer's handler runs (core/fetch_pump.pyx). The Fetcher arms it after each incremental Fetch it has in flight;
    a Fetch it fires is handed to `on_fired(its partitions as [(topic, partition, fetch_offset)])`, which returns the
    handler of its answer."""

    def arm(self, session_id: int, next_epoch: int, max_wait_ms: int, min_bytes: int, fetch_max_bytes: int,
            read_committed: bool, rack_id: str, partitions: list[tuple[str, int, int, int, int, int]],
            fetch_ahead_answers: int,
            on_fired: Callable[[list[tuple[str, int, int]]], Callable[[ClientResponse], None]]) -> None: ...

    def disarm(self) -> None:
        """Any thread."""
        ...

    def set_buffered(self, answers: int, nbytes: int) -> None:
        """The broker's answers in the consumer's buffer and their bytes (any thread)."""
        ...


def fetch_pump_of(transport: Transport, node_id: int) -> FetchPumpPort | None:
    """The transport's fetch pump for node_id, None when it has none (FetchPumpPort)."""
    fetch_pump: Callable[[int], FetchPumpPort | None] | None = getattr(transport, "fetch_pump", None)
    return None if fetch_pump is None else fetch_pump(node_id)


def share_gil_of(transport: Transport, on: bool) -> None:
    """Tells a transport whose network thread may keep the GIL through busy turns (adapters/socket_transport.py)
    that the client's application thread runs an asyncio event loop (core/netio.pyx, wait_events' share_gil); a
    transport without the setting (the fakes) has nothing to change."""
    if hasattr(transport, "share_gil"):
        transport.share_gil = on


@dataclass(frozen=True, slots=True)
class SecuritySettings:
    """What the security adapter needs from a client's config (security.protocol, ssl.*, sasl.*), validated by it."""

    security_protocol: str = "plaintext"
    ssl_ca_location: str | None = None  # None: the system's default CAs
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_endpoint_identification_algorithm: str = "https"  # "" turns hostname verification off
    ssl_check_hostname: bool = True
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    sasl_oauthbearer_config: str = field(default="", repr=False)
    oauth_cb: Callable[[str], object] | None = None

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("ssl", "sasl_ssl")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("sasl_plaintext", "sasl_ssl")


MAX_RESPONSE_BYTES = 100 * 1024 * 1024  # a transport's default limit on a response's size


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """What a Transport adapter needs: where the brokers are, how to name ourselves, connection and request limits.
    Built by a client's config (`ProducerConfig.connection_settings()`, AdminConfig, ConsumerConfig)."""

    bootstrap_servers: tuple[str, ...]
    client_id: str = ""
    request_timeout_ms: int = 30000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000
    socket_connection_setup_timeout_ms: int = 10000
    max_in_flight_requests_per_connection: int = 5
    send_buffer_bytes: int = 131072
    receive_buffer_bytes: int = 32768
    security: SecuritySettings = field(default_factory=SecuritySettings)
    # a response's size prefix above this is a protocol error, never an allocation (a consumer raises it to fit its
    # fetch.max.bytes: ConsumerConfig)
    max_response_bytes: int = MAX_RESPONSE_BYTES
    error_cb: ErrorCallback | None = None  # told of all brokers down and of authentication failures
    socket_keepalive_enable: bool = False  # SO_KEEPALIVE (librdkafka's socket.keepalive.enable)
    client_dns_lookup: str = "use_all_dns_ips"  # Java's: try each address of a name in turn


ErrorCallback = Callable[["KafkaError"], object]  # error_cb: confluent-kafka's name and call shape


def report_error(error_cb: ErrorCallback | None, error: KafkaError, logger: logging.Logger) -> None:
    """Hands a client-level error (all brokers down, authentication failed, a fatal producer error) to the user's
    error_cb, from whichever thread found it; a callback that raises is logged at ERROR with its traceback on
    `logger` and the thread goes on (a user's bug must not stop a client's network thread)."""
    if error_cb is None:
        return
    try:
        error_cb(error)
    except Exception:
        logger.exception("error_cb raised while handed %s: %r (the client goes on)", type(error).__name__, error)


@dataclass(frozen=True, slots=True)
class MetadataSettings:
    """What a MetadataSource adapter needs: refresh ages, backoffs, and whether a Metadata request may create topics."""

    request_timeout_ms: int = 30000
    retry_backoff_ms: int = 100
    reconnect_backoff_ms: int = 50
    metadata_max_age_ms: int = 300000
    metadata_max_idle_ms: int = 300000
    allow_auto_create_topics: bool = True


@dataclass(frozen=True, slots=True)
class Ports:
    """What a test swaps in for the Producer's own wiring, given as `Producer(config, ports=Ports(...))`: one keyword
    that no config key can collide with. None means the production adapter (socket transport, broker metadata,
    system clock); start_sender=False leaves the Sender to be run by hand (`producer.sender.run_once()`)."""

    transport: Transport | None = None
    metadata: MetadataSource | None = None
    clock: Clock | None = None
    start_sender: bool = True

    @staticmethod
    def of(ports: object) -> Ports:
        """A client's `ports` argument: None is the production wiring; anything but a Ports is a ConfigError."""
        if ports is None:
            return Ports()
        if not isinstance(ports, Ports):
            raise ConfigError(f"ports must be a cykafka.ports.Ports (the adapters a test swaps in), got "
                              f"{type(ports).__name__}")
        return ports
