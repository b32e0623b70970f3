"""In-memory fake cluster behind the Transport port (Kafka's MockClient + a tiny broker), deterministic under a
ManualClock. Brokers answer Metadata and Produce from the wire-codec dataclasses; produced batches are decoded with
the core's decoder (CRC checked) and stored per partition with offsets. Tests inject errors per request/partition,
response delays, disconnects, unreachable nodes and leader moves.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cykafka.adapters import kafka_protocol as kp
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.compression import decompress
from cykafka.core import decode_batches
from cykafka.errors import CorruptRecordError, KafkaError, NetworkError, ProtocolError
from cykafka.ports import ClientResponse, Clock, Node

NONE, NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE, CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION = 0, 6, 10, 2, 3


@dataclass(slots=True)
class StoredRecord:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    producer_id: int
    base_sequence: int


@dataclass(slots=True)
class _Pending:
    node_id: int
    request: Any
    handler: Callable[[ClientResponse], None] | None
    sent_ms: int
    due_ms: int
    expect_response: bool


@dataclass(slots=True)
class _Injected:
    error_code: int
    topic: str | None
    partition: int | None
    remaining: int


@dataclass(slots=True)
class _Partition:
    leader: int
    leader_epoch: int = 0
    records: list[StoredRecord] = field(default_factory=list)
    batches: int = 0


class FakeCluster:
    """N brokers (ids 0..N-1) on fake addresses; topics auto-created with `default_partitions`."""

    def __init__(self, clock: Clock, num_brokers: int = 3, *, default_partitions: int = 4,
                 max_message_bytes: int = 1024 * 1024, max_in_flight: int = 5, auto_create: bool = True) -> None:
        self.clock = clock
        self.nodes = {i: Node(i, f"fake-broker-{i}", 9092 + i) for i in range(num_brokers)}
        self.default_partitions = default_partitions
        self.max_message_bytes = max_message_bytes
        self.max_in_flight = max_in_flight
        self.auto_create = auto_create
        self.topics: dict[str, list[_Partition]] = {}
        self.unreachable: set[int] = set()
        self.delay_ms: dict[int, int] = {}
        self.requests: list[tuple[int, Any]] = []  # every request received, in order
        self._connected: set[int] = set()
        self._pending: deque[_Pending] = deque()
        self._injected: list[_Injected] = []
        self._dropped: list[ClientResponse] = []
        self.auth_failure: KafkaError | None = None  # set: every connection fails to authenticate with it
        self._woken = threading.Event()

    # -- test controls -----------------------------------------------------------------------------------------

    def create_topic(self, topic: str, partitions: int | None = None) -> None:
        count = partitions or self.default_partitions
        self.topics[topic] = [_Partition(leader=p % len(self.nodes)) for p in range(count)]

    def inject_error(self, error_code: int, *, topic: str | None = None, partition: int | None = None,
                     count: int = 1) -> None:
        """The next `count` produce answers for the matching partitions carry `error_code`."""
        self._injected.append(_Injected(error_code, topic, partition, count))

    def move_leader(self, topic: str, partition: int, leader: int) -> None:
        p = self.topics[topic][partition]
        p.leader = leader
        p.leader_epoch += 1

    def disconnect(self, node_id: int) -> None:
        """Drops the connection: requests in flight to the node fail with a retriable NetworkError."""
        self._connected.discard(node_id)
        now_ms = self.clock.monotonic_ms()
        keep: deque[_Pending] = deque()
        for pending in self._pending:
            if pending.node_id == node_id:
                self._dropped.append(ClientResponse(node_id, pending.request, pending.handler, None,
                                                    NetworkError(f"fake node {node_id} disconnected"),
                                                    pending.sent_ms, now_ms))
            else:
                keep.append(pending)
        self._pending = keep

    def log(self, topic: str, partition: int) -> list[StoredRecord]:
        return self.topics[topic][partition].records

    def all_records(self, topic: str) -> list[tuple[int, StoredRecord]]:
        return [(i, r) for i, p in enumerate(self.topics.get(topic, [])) for r in p.records]

    # -- ports.Transport ---------------------------------------------------------------------------------------

    def update_nodes(self, nodes: Mapping[int, Node]) -> None:
        pass

    def ready(self, node_id: int, now_ms: int) -> bool:
        if self.auth_failure is not None:
            return False
        if node_id in self.unreachable or (node_id >= 0 and node_id not in self.nodes):
            return False
        if node_id not in self._connected:
            self._connected.add(node_id)  # connects at once; ready from the next call, like a real handshake
            return False
        return self.in_flight_count(node_id) < self.max_in_flight

    def connection_delay_ms(self, node_id: int, now_ms: int) -> int:
        return 50 if node_id in self.unreachable else 0

    def send(self, node_id: int, request: object, now_ms: int,
             handler: Callable[[ClientResponse], None] | None = None, expect_response: bool = True) -> None:
        if node_id not in self._connected:
            raise NetworkError(f"fake node {node_id} is not connected")
        self.requests.append((node_id, request))
        self._pending.append(_Pending(node_id, request, handler, now_ms, now_ms + self.delay_ms.get(node_id, 0),
                                      expect_response))

    def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]:
        """Answers what is due. Under a real clock it waits like a selector (up to timeout_ms, or until wakeup() or
        an answer falls due) when nothing is ready; under a ManualClock it never waits (time moves by hand)."""
        if isinstance(self.clock, SystemClock) and timeout_ms > 0 and not self._dropped:
            due_ms = min((p.due_ms for p in self._pending), default=now_ms + timeout_ms) - now_ms
            if min(timeout_ms, due_ms) > 0:
                self._woken.wait(min(timeout_ms, due_ms) / 1000)
            self._woken.clear()
        now_ms = self.clock.monotonic_ms()
        out, self._dropped = self._dropped, []
        keep: deque[_Pending] = deque()
        for pending in self._pending:
            if pending.due_ms > now_ms:
                keep.append(pending)
                continue
            response = self._handle(pending.node_id, pending.request)
            out.append(ClientResponse(pending.node_id, pending.request, pending.handler,
                                      response if pending.expect_response else None, None, pending.sent_ms, now_ms))
        self._pending = keep
        return out

    def in_flight_count(self, node_id: int | None = None) -> int:
        return sum(1 for p in self._pending if node_id is None or p.node_id == node_id)

    def least_loaded_node(self, now_ms: int) -> int | None:
        reachable = [n for n in self.nodes if n not in self.unreachable]
        return min(reachable, key=self.in_flight_count) if reachable else None

    def authentication_error(self) -> KafkaError | None:
        return self.auth_failure

    def wakeup(self) -> None:
        self._woken.set()

    def close(self, linger_s: float = 0.0) -> None:
        self._pending.clear()

    # -- the brokers -------------------------------------------------------------------------------------------

    def _handle(self, node_id: int, request: Any) -> Any:
        if isinstance(request, kp.MetadataRequest):
            return self._metadata(request)
        if isinstance(request, kp.ProduceRequest):
            return self._produce(node_id, request)
        raise ProtocolError(f"the fake cluster does not answer {type(request).__name__}")

    def _metadata(self, request: kp.MetadataRequest) -> kp.MetadataResponse:
        names = list(self.topics) if request.topics is None else list(request.topics)
        topics = []
        for name in names:
            if name not in self.topics:
                if not (self.auto_create and request.allow_auto_topic_creation):
                    topics.append(kp.MetadataTopic(UNKNOWN_TOPIC_OR_PARTITION, name))
                    continue
                self.create_topic(name)
            parts = tuple(
                kp.MetadataPartition(NONE, i, p.leader, p.leader_epoch, tuple(self.nodes), tuple(self.nodes))
                for i, p in enumerate(self.topics[name]))
            topics.append(kp.MetadataTopic(NONE, name, partitions=parts))
        brokers = tuple(kp.BrokerEndpoint(n.node_id, n.host, n.port) for n in self.nodes.values())
        return kp.MetadataResponse(brokers=brokers, cluster_id="fake", controller_id=0, topics=tuple(topics))

    def _take_injected(self, topic: str, partition: int) -> int:
        for injected in self._injected:
            if injected.remaining > 0 and injected.topic in (None, topic) and injected.partition in (None, partition):
                injected.remaining -= 1
                return injected.error_code
        return NONE

    def _produce(self, node_id: int, request: kp.ProduceRequest) -> kp.ProduceResponse:
        topics = []
        for name, partitions in request.topics:
            answers = []
            for index, records in partitions:
                answers.append(self._append(node_id, name, index, records))
            topics.append(kp.ProduceTopicResponse(name, tuple(answers)))
        return kp.ProduceResponse(tuple(topics))

    def _append(self, node_id: int, topic: str, index: int, records: Any) -> kp.ProducePartitionResponse:
        parts = self.topics.get(topic)
        if parts is None or not 0 <= index < len(parts):
            return kp.ProducePartitionResponse(index, UNKNOWN_TOPIC_OR_PARTITION, -1)
        part = parts[index]
        if part.leader != node_id:
            return kp.ProducePartitionResponse(index, NOT_LEADER_OR_FOLLOWER, -1)
        injected = self._take_injected(topic, index)
        if injected != NONE:
            return kp.ProducePartitionResponse(index, injected, -1)
        data = bytes(records)
        if len(data) > self.max_message_bytes:
            return kp.ProducePartitionResponse(index, MESSAGE_TOO_LARGE, -1)
        try:
            batches = decode_batches(data, decompress)
        except CorruptRecordError as e:
            return kp.ProducePartitionResponse(index, CORRUPT_MESSAGE, -1, error_message=str(e))
        base_offset = len(part.records)
        for batch in batches:
            for record in batch.records:
                part.records.append(StoredRecord(len(part.records), record.timestamp_ms, record.key, record.value,
                                                 list(record.headers), batch.producer_id, batch.base_sequence))
            part.batches += 1
        return kp.ProducePartitionResponse(index, NONE, base_offset)
