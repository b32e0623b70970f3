"""In-memory fake cluster behind the Transport port (Kafka's MockClient + a tiny broker), deterministic under a
ManualClock. Brokers read requests and answer as cykafka.protocol's dict bodies; in wire mode (`wire=True`) every
request and answer goes through the real codec as bytes at the versions given (default: the highest we speak).
Produced batches are decoded with the core's decoder (CRC checked) and stored per partition with offsets. Tests
inject errors per request/partition (before or after the append), response delays, disconnects (before or after the
broker handled the requests), unreachable nodes and leader moves.

Like a broker it enforces idempotence per producer id and partition (epoch checks; the next sequence or
OUT_OF_ORDER_SEQUENCE_NUMBER; a duplicate of one of the last 5 batches answers success with its first offset as
Kafka does, or DUPLICATE_SEQUENCE_NUMBER as Tansu does) and runs transactions: InitProducerId, FindCoordinator,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn with commit/abort markers, so tests can read the
read_committed view of a partition and the committed group offsets. `transaction_version=2` finalizes Transactions
V2 (KIP-890; `finalized_features()`, `set_transaction_version` moves it later): a Produce v12 adds its partitions to
the transaction, a TxnOffsetCommit v5 its group, an EndTxn v5 bumps the epoch and answers it. `sent_versions` holds
the (api key, version) of every request, at the version the request was answered with (its `max_version` caps it).

Fetch is answered from the produced batches (offsets assigned, CRCs kept; transaction markers are not served), with
KIP-227 fetch sessions as a Kafka broker runs them (FetchManager): a full fetch (epoch 0) creates a session holding
its partitions and their fetch offsets (and drops the one its session_id names); an incremental one (the session's
expected epoch, then the next) adds and updates the partitions it lists, drops `forgotten_topics_data`, fetches every
session partition from the offset last sent for it and answers only those with news (records, an error, changed
watermarks); a wrong session id -> FETCH_SESSION_ID_NOT_FOUND, a wrong epoch -> INVALID_FETCH_SESSION_EPOCH; epoch -1
closes the session. `fetch_sessions=False`: session_id 0 in every answer, as Tansu and librdkafka's mock cluster.

ListOffsets (earliest, latest, by timestamp) at a partition's leader. Leader epochs as Kafka keeps them (KIP-320):
every appended batch carries its partition's leader epoch, each leader epoch's start offset is kept (Kafka's
LeaderEpochFileCache), a Fetch, ListOffsets or OffsetForLeaderEpoch naming an older current_leader_epoch is answered
FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, and OffsetForLeaderEpoch answers the end offset of the largest
epoch at or below the one asked. `unclean_election` moves a leader to a replica that lacks the log's tail: the log is
truncated and a new epoch starts there, what an unclean leader election does.
"""

from __future__ import annotations

import itertools
import threading
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cykafka.adapters.clock import SystemClock
from cykafka.adapters.compression import decompress
from cykafka.core import decode_batches
from cykafka.errors import CorruptRecordError, KafkaError, NetworkError, ProtocolError, UnsupportedVersionError
from cykafka.ports import TRANSACTION_VERSION, ClientResponse, Clock, FinalizedFeatures, Node
from cykafka.protocol import (
    API_NAMES,
    SUPPORTED_VERSIONS,
    ProduceRequest,
    TransportRequest,
    decode_any_response,
    decode_request,
    encode_any_request,
    encode_response,
)
from cykafka.protocol.apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    FETCH,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    METADATA,
    OFFSET_FOR_LEADER_EPOCH,
    PRODUCE,
    TXN_OFFSET_COMMIT,
)
from cykafka.protocol.error_codes import ErrorCode

CACHED_BATCHES = 5  # Kafka remembers the last 5 batches per producer and partition for duplicate detection
INT32_MAX = 2**31 - 1
_E = ErrorCode


@dataclass(slots=True)
class StoredRecord:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    producer_id: int
    base_sequence: int
    producer_epoch: int = -1
    sequence: int = -1
    # "none" (not transactional), "open", "committed" or "aborted" (its transaction's marker)
    txn_state: str = "none"


@dataclass(slots=True)
class ControlMarker:
    offset: int
    producer_id: int
    producer_epoch: int
    commit: bool


@dataclass(slots=True)
class _ProducerState:
    """One producer id on one partition (Kafka's ProducerStateEntry)."""

    epoch: int
    last_sequence: int
    batches: deque[tuple[int, int, int]] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))


@dataclass(slots=True)
class _Transaction:
    """The coordinator's view of one transactional.id."""

    producer_id: int
    epoch: int
    partitions: set[tuple[str, int]] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    offsets: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)  # group -> pending offsets


@dataclass(slots=True)
class _Pending:
    node_id: int
    request: TransportRequest
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
    after_append: bool = False


@dataclass(slots=True)
class _Partition:
    leader: int
    leader_epoch: int = 0
    records: list[StoredRecord] = field(default_factory=list)
    markers: list[ControlMarker] = field(default_factory=list)
    batches: int = 0
    next_offset: int = 0
    producers: dict[int, _ProducerState] = field(default_factory=dict)
    log_batches: list[tuple[int, bytes]] = field(default_factory=list)  # (last offset, the batch as Fetch serves it)
    epoch_starts: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])  # (leader epoch, start offset)

    @property
    def last_stable_offset(self) -> int:
        """The first record of a transaction still open, else the log end (Kafka's LSO)."""
        return next((r.offset for r in self.records if r.txn_state == "open"), self.next_offset)


@dataclass(slots=True)
class FetchSessionState:
    """A broker's fetch session (Kafka's FetchSession): per partition the last fetch offset and partition_max_bytes
    sent, and the watermarks last answered (an incremental answer names a partition only when they change)."""

    session_id: int
    epoch: int  # the epoch the next incremental fetch must carry
    partitions: dict[tuple[str, int], tuple[int, int]]
    answered: dict[tuple[str, int], tuple[int, int, int]] = field(default_factory=dict)


def _partition_answer(index: int, error_code: int, base_offset: int, *, log_start_offset: int = -1,
                      error_message: str | None = None) -> dict[str, Any]:
    """One partition's Produce answer, every field the sender reads present (as the decoder gives them)."""
    return {"index": index, "error_code": error_code, "base_offset": base_offset, "log_append_time_ms": -1,
            "log_start_offset": log_start_offset, "record_errors": [], "error_message": error_message,
            "current_leader": {"leader_id": -1, "leader_epoch": -1}}


class FakeCluster:
    """N brokers (ids 0..N-1) on fake addresses; topics auto-created with `default_partitions`."""

    def __init__(self, clock: Clock, num_brokers: int = 3, *, default_partitions: int = 4,
                 max_message_bytes: int = 1024 * 1024, max_in_flight: int = 5, auto_create: bool = True,
                 duplicate_answer: Literal["kafka", "tansu"] = "kafka", epoch_bump: bool = True,
                 wire: bool = False, versions: Mapping[int, int] | None = None, fetch_sessions: bool = True,
                 whole_first_batch: bool = True, transaction_version: int = 1) -> None:
        self.clock = clock
        # KIP-74: a Fetch answer's first batch comes whole even when larger than the limits; False: cut at the
        # partition's limit, as brokers before it answered (the client sees no whole batch and must ask for more)
        self.whole_first_batch = whole_first_batch
        self.nodes = {i: Node(i, f"fake-broker-{i}", 9092 + i) for i in range(num_brokers)}
        self.default_partitions = default_partitions
        self.max_message_bytes = max_message_bytes
        self.max_in_flight = max_in_flight
        self.auto_create = auto_create
        self.topics: dict[str, list[_Partition]] = {}
        self.unreachable: set[int] = set()
        self.delay_ms: dict[int, int] = {}
        self.requests: list[tuple[int, TransportRequest]] = []  # every request received, in order
        self._connected: set[int] = set()
        self._pending: deque[_Pending] = deque()
        self._injected: list[_Injected] = []
        self._dropped: list[ClientResponse] = []
        self.auth_failure: KafkaError | None = None  # set: every connection fails to authenticate with it
        self._woken = threading.Event()
        self.duplicate_answer = duplicate_answer
        self.epoch_bump = epoch_bump  # False: InitProducerId with the current id/epoch fails (Tansu)
        self.next_producer_id = 1000
        self.transactions: dict[str, _Transaction] = {}
        self.group_offsets: dict[str, dict[tuple[str, int], int]] = {}  # committed by transactions
        self.produce_errors: dict[int, int] = {}  # error code -> answers with it (what the producer met)
        self.disconnect_count = 0
        self.wire = wire  # every request and answer through the real codec as bytes
        self.versions: Mapping[int, int] = versions or {}  # wire mode: api key -> version (default: our highest)
        self._correlation_id = 0
        self.fetch_sessions = fetch_sessions  # False: Fetch answers carry session_id 0 (Tansu)
        self.sessions: dict[int, dict[int, FetchSessionState]] = {n: {} for n in self.nodes}  # node -> id -> session
        self._session_ids = itertools.count(7001)
        self.transaction_version = transaction_version
        self._features = FinalizedFeatures(1, {TRANSACTION_VERSION: transaction_version})
        self.sent_versions: list[tuple[int, int]] = []  # (api key, version) of every request handled
        self._version = 0  # of the request being answered

    # -- test controls -----------------------------------------------------------------------------------------

    def set_transaction_version(self, level: int) -> None:
        """Finalizes `transaction.version` at `level` (a newer feature epoch, as an upgrade with kafka-features)."""
        self.transaction_version = level
        self._features = FinalizedFeatures(self._features.epoch + 1, {TRANSACTION_VERSION: level})

    def finalized_features(self) -> FinalizedFeatures:
        return self._features

    def create_topic(self, topic: str, partitions: int | None = None) -> None:
        count = partitions or self.default_partitions
        self.topics[topic] = [_Partition(leader=p % len(self.nodes)) for p in range(count)]

    def inject_error(self, error_code: int, *, topic: str | None = None, partition: int | None = None,
                     count: int = 1, after_append: bool = False) -> None:
        """The next `count` produce answers for the matching partitions carry `error_code`; after_append: the
        records were appended anyway (a lost acknowledgement: the retry is a duplicate)."""
        self._injected.append(_Injected(error_code, topic, partition, count, after_append))

    def move_leader(self, topic: str, partition: int, leader: int) -> None:
        p = self.topics[topic][partition]
        p.leader = leader
        p.leader_epoch += 1
        p.epoch_starts.append((p.leader_epoch, p.next_offset))

    def unclean_election(self, topic: str, partition: int, leader: int, log_end_offset: int) -> None:
        """An out-of-sync replica becomes the leader (a new epoch) with the log up to log_end_offset only: the
        records from there on, acknowledged or read before, are gone; the next appends take their offsets."""
        p = self.topics[topic][partition]
        p.records = [r for r in p.records if r.offset < log_end_offset]
        p.markers = [m for m in p.markers if m.offset < log_end_offset]
        p.log_batches = [(last, raw) for last, raw in p.log_batches if last < log_end_offset]
        p.next_offset = min(p.next_offset, log_end_offset)
        p.epoch_starts = [(epoch, start) for epoch, start in p.epoch_starts if start < log_end_offset or start == 0]
        p.producers.clear()
        self.move_leader(topic, partition, leader)

    def disconnect(self, node_id: int, *, handled: bool = False) -> None:
        """Drops the connection: requests in flight to the node fail with a retriable NetworkError. handled: the
        broker had handled them (records appended) and only the answers are lost."""
        self._connected.discard(node_id)
        self.disconnect_count += 1
        now_ms = self.clock.monotonic_ms()
        keep: deque[_Pending] = deque()
        for pending in self._pending:
            if pending.node_id == node_id:
                if handled:
                    self._handle(pending.node_id, pending.request)
                self._dropped.append(ClientResponse(node_id, pending.request, pending.handler, None,
                                                    NetworkError(f"fake node {node_id} disconnected"),
                                                    pending.sent_ms, now_ms))
            else:
                keep.append(pending)
        self._pending = keep

    def evict_fetch_sessions(self, node_id: int) -> None:
        """The node forgets its fetch sessions (Kafka's session cache evicts them): the next incremental fetch there
        is answered FETCH_SESSION_ID_NOT_FOUND."""
        self.sessions[node_id].clear()

    def forget_producers(self, topic: str, partition: int) -> None:
        """The partition loses its producer state (retention): a producer's next non-zero sequence there is
        answered UNKNOWN_PRODUCER_ID, as brokers before KIP-360 did."""
        part = self.topics[topic][partition]
        for producer_id in list(part.producers):
            part.producers[producer_id] = _ProducerState(epoch=-2, last_sequence=-1)

    def log(self, topic: str, partition: int) -> list[StoredRecord]:
        return self.topics[topic][partition].records

    def read_committed(self, topic: str, partition: int) -> list[StoredRecord]:
        """What a read_committed consumer sees: records outside transactions and of committed ones, up to the
        first record of a transaction still open (the last stable offset)."""
        out = []
        for record in self.topics[topic][partition].records:
            if record.txn_state == "open":
                break
            if record.txn_state in ("none", "committed"):
                out.append(record)
        return out

    def all_records(self, topic: str) -> list[tuple[int, StoredRecord]]:
        return [(i, r) for i, p in enumerate(self.topics.get(topic, [])) for r in p.records]

    # -- ports.Transport ---------------------------------------------------------------------------------------

    def update_nodes(self, nodes: Mapping[int, Node]) -> None:
        pass

    def ready(self, node_id: int, now_ms: int) -> bool:
        if self.auth_failure is not None:
            return False
        if node_id in self.unreachable or (node_id >= 0 and node_id not in self.nodes):
            self.disconnect_count += 1  # a connection attempt that failed
            return False
        if node_id not in self._connected:
            self._connected.add(node_id)  # connects at once; ready from the next call, like a real handshake
            return False
        return self.in_flight_count(node_id) < self.max_in_flight

    def connection_delay_ms(self, node_id: int, now_ms: int) -> int:
        return 50 if node_id in self.unreachable else 0

    def connection_failed(self, node_id: int) -> bool:
        return node_id in self.unreachable

    def send(self, node_id: int, request: TransportRequest, now_ms: int,
             handler: Callable[[ClientResponse], None] | None = None, expect_response: bool = True,
             timeout_ms: int | None = None) -> None:
        if node_id not in self._connected:
            raise NetworkError(f"fake node {node_id} is not connected")
        if request.api_key not in self._HANDLERS:  # as a broker whose ApiVersions lacks it (KIP-714's, unplugged)
            raise UnsupportedVersionError(f"the fake cluster does not speak {API_NAMES.get(request.api_key)}")
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
        blocked: set[int] = set()  # a broker handles one connection's requests in order
        for pending in self._pending:
            if pending.due_ms > now_ms or pending.node_id in blocked:
                blocked.add(pending.node_id)
                keep.append(pending)
                continue
            response = self._handle(pending.node_id, pending.request)
            out.append(ClientResponse(pending.node_id, pending.request, pending.handler,
                                      response if pending.expect_response else None, None, pending.sent_ms, now_ms))
        self._pending = keep
        return out

    def connection_count(self) -> int:
        return len(self._connected)

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

    def _handle(self, node_id: int, request: TransportRequest) -> dict[str, Any]:
        """The broker's answer body. Wire mode: the request goes through the real codec as bytes both ways
        (encode_request -> decode_request -> handler -> encode_response -> decode_response) at `versions`."""
        api_key = request.api_key
        version = self.versions.get(api_key, SUPPORTED_VERSIONS[api_key][1])
        if request.max_version is not None:
            version = min(version, request.max_version)
        self._version = version
        self.sent_versions.append((api_key, version))
        if not self.wire:
            body = request.as_body() if isinstance(request, ProduceRequest) else request.body
            return self._answer(node_id, api_key, body)
        self._correlation_id += 1
        frame = b"".join(encode_any_request(request, version, self._correlation_id, "fake-client"))
        header, body = decode_request(frame[4:])
        answer = self._answer(node_id, header.api_key, body)
        raw = encode_response(header.api_key, header.api_version, header.correlation_id, answer)
        correlation_id, decoded = decode_any_response(api_key, version, raw[4:])
        assert correlation_id == self._correlation_id
        return decoded

    def _answer(self, node_id: int, api_key: int, body: Mapping[str, Any]) -> dict[str, Any]:
        handler = self._HANDLERS.get(api_key)
        if handler is None:
            raise ProtocolError(f"the fake cluster does not answer {API_NAMES.get(api_key, api_key)}")
        return handler(self, node_id, body)

    # -- coordinators ------------------------------------------------------------------------------------------

    def coordinator_for(self, key: str) -> int:
        """The node coordinating a transactional.id or group (stable, like Kafka's hash of the key)."""
        return zlib.crc32(key.encode()) % len(self.nodes)

    def _find_coordinator(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        answers = []
        for key in body["coordinator_keys"] or [body["key"]]:  # v4+ / v1-3
            node = self.nodes[self.coordinator_for(key)]
            answers.append({"key": key, "node_id": node.node_id, "host": node.host, "port": node.port,
                            "error_code": _E.NONE, "error_message": None})
        first = {k: answers[0][k] for k in ("node_id", "host", "port", "error_code", "error_message")}
        return {"throttle_time_ms": 0, **first, "coordinators": answers}  # both shapes: v1-3 read the first

    def _check_txn(self, node_id: int, transactional_id: str, producer_id: int, epoch: int) -> int:
        if self.coordinator_for(transactional_id) != node_id:
            return _E.NOT_COORDINATOR
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return _E.INVALID_PRODUCER_ID_MAPPING
        if epoch != txn.epoch:
            return _E.PRODUCER_FENCED
        return _E.NONE

    @staticmethod
    def _producer_id_answer(code: int, producer_id: int = -1, producer_epoch: int = -1) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": code, "producer_id": producer_id,
                "producer_epoch": producer_epoch}

    def _init_producer_id(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        tid = body["transactional_id"]
        if tid is None:  # idempotent producer: always a fresh id (what Kafka does for a null transactional.id)
            self.next_producer_id += 1
            return self._producer_id_answer(_E.NONE, self.next_producer_id, 0)
        if self.coordinator_for(tid) != node_id:
            return self._producer_id_answer(_E.NOT_COORDINATOR)
        txn = self.transactions.get(tid)
        producer_id, producer_epoch = body["producer_id"], body["producer_epoch"]
        if txn is None:
            self.next_producer_id += 1
            txn = self.transactions[tid] = _Transaction(self.next_producer_id, -1)
        elif producer_id >= 0 and not self.epoch_bump:
            return self._producer_id_answer(_E.UNKNOWN_SERVER_ERROR)
        elif producer_id >= 0 and (producer_id, producer_epoch) != (txn.producer_id, txn.epoch):
            return self._producer_id_answer(_E.PRODUCER_FENCED)
        if txn.partitions or txn.groups:  # an open transaction of the previous epoch is aborted
            self._write_markers(txn, commit=False)
        txn.epoch += 1
        return self._producer_id_answer(_E.NONE, txn.producer_id, txn.epoch)

    def _add_partitions(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        tid = body["v3_and_below_transactional_id"]
        code = self._check_txn(node_id, tid, body["v3_and_below_producer_id"], body["v3_and_below_producer_epoch"])
        results = []
        for topic in body["v3_and_below_topics"]:
            name, answers = topic["name"], []
            for partition in topic["partitions"]:
                known = name in self.topics and 0 <= partition < len(self.topics[name])
                answer = code if code != _E.NONE else (_E.NONE if known else _E.UNKNOWN_TOPIC_OR_PARTITION)
                if answer == _E.NONE:
                    self.transactions[tid].partitions.add((name, partition))
                answers.append({"partition_index": partition, "partition_error_code": answer})
            results.append({"name": name, "results_by_partition": answers})
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}

    def _add_offsets(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        tid = body["transactional_id"]
        code = self._check_txn(node_id, tid, body["producer_id"], body["producer_epoch"])
        if code == _E.NONE:
            self.transactions[tid].groups.add(body["group_id"])
        return {"throttle_time_ms": 0, "error_code": code}

    def _txn_offset_commit(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        code = _E.NONE
        group_id = body["group_id"]
        if self.coordinator_for(group_id) != node_id:
            code = _E.NOT_COORDINATOR
        else:
            txn = self.transactions.get(body["transactional_id"])
            if txn is None or txn.producer_id != body["producer_id"] or txn.epoch != body["producer_epoch"]:
                code = _E.PRODUCER_FENCED
            else:
                if group_id not in txn.groups and self._v2_request(5):
                    txn.groups.add(group_id)  # TxnOffsetCommit v5 adds the group (Transactions V2)
                if group_id not in txn.groups:
                    code = _E.INVALID_TXN_STATE
            if txn is not None and code == _E.NONE:
                pending = txn.offsets.setdefault(group_id, {})
                for topic in body["topics"]:
                    for p in topic["partitions"]:
                        pending[(topic["name"], p["partition_index"])] = p["committed_offset"]
        return {"throttle_time_ms": 0, "topics": [
            {"name": topic["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                                                   for p in topic["partitions"]]}
            for topic in body["topics"]]}

    def _end_txn(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        tid = body["transactional_id"]
        code = self._check_txn(node_id, tid, body["producer_id"], body["producer_epoch"])
        if code == _E.NONE:
            txn = self.transactions[tid]
            v2 = self._v2_request(5)
            if not txn.partitions and not txn.groups and (body["committed"] or not v2):
                code = _E.INVALID_TXN_STATE  # (V2 takes an abort of nothing: the client cannot know what was added)
            else:
                self._write_markers(txn, commit=body["committed"])
                if v2:  # EndTxn v5: the epoch is bumped at every transaction's end
                    txn.epoch += 1
                    return {"throttle_time_ms": 0, "error_code": code, "producer_id": txn.producer_id,
                            "producer_epoch": txn.epoch}
        return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}

    def _v2_request(self, from_version: int) -> bool:
        """The request being answered acts as Transactions V2 (the cluster finalized it and the version has it)."""
        return self.transaction_version >= 2 and self._version >= from_version

    def _write_markers(self, txn: _Transaction, commit: bool) -> None:
        for topic, partition in sorted(txn.partitions):
            part = self.topics[topic][partition]
            for record in part.records:
                if record.producer_id == txn.producer_id and record.txn_state == "open":
                    record.txn_state = "committed" if commit else "aborted"
            part.markers.append(ControlMarker(part.next_offset, txn.producer_id, txn.epoch, commit))
            part.next_offset += 1
        if commit:
            for group, offsets in txn.offsets.items():
                self.group_offsets.setdefault(group, {}).update(offsets)
        txn.partitions.clear()
        txn.groups.clear()
        txn.offsets.clear()

    def _metadata(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        names = list(self.topics) if body["topics"] is None else [t["name"] for t in body["topics"]]
        topics: list[dict[str, Any]] = []
        for name in names:
            if name not in self.topics:
                if not (self.auto_create and body["allow_auto_topic_creation"]):
                    topics.append({"error_code": _E.UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []})
                    continue
                self.create_topic(name)
            partitions = [{"error_code": _E.NONE, "partition_index": i, "leader_id": p.leader,
                           "leader_epoch": p.leader_epoch, "replica_nodes": list(self.nodes),
                           "isr_nodes": list(self.nodes)} for i, p in enumerate(self.topics[name])]
            topics.append({"error_code": _E.NONE, "name": name, "partitions": partitions})
        brokers = [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
                   for n in self.nodes.values()]
        return {"throttle_time_ms": 0, "brokers": brokers, "cluster_id": "fake", "controller_id": 0,
                "topics": topics}

    def _take_injected(self, topic: str, partition: int) -> _Injected | None:
        for injected in self._injected:
            if injected.remaining > 0 and injected.topic in (None, topic) and injected.partition in (None, partition):
                injected.remaining -= 1
                return injected
        return None

    def _produce(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        topics = []
        for topic in body["topic_data"]:
            answers = []
            for p in topic["partition_data"]:
                answer = self._append(node_id, topic["name"], p["index"], p["records"], body["transactional_id"])
                code = answer["error_code"]
                if code != _E.NONE:
                    self.produce_errors[code] = self.produce_errors.get(code, 0) + 1
                answers.append(answer)
            topics.append({"name": topic["name"], "partition_responses": answers})
        return {"responses": topics, "throttle_time_ms": 0}

    @staticmethod
    def _epoch_check(part: _Partition, current_leader_epoch: int) -> int:
        """Kafka's check of a request's current_leader_epoch (-1: none) against the partition's."""
        if 0 <= current_leader_epoch < part.leader_epoch:
            return _E.FENCED_LEADER_EPOCH
        if current_leader_epoch > part.leader_epoch:
            return _E.UNKNOWN_LEADER_EPOCH
        return _E.NONE

    def _list_offsets(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """ListOffsets at a partition's leader: earliest (-2) is 0, latest (-1) the log end (read_committed: the last
        stable offset, the first record of a transaction still open, as Kafka's), a timestamp the first record at or
        after it."""
        topics = []
        for t in body["topics"]:
            answers = []
            for q in t["partitions"]:
                index = q["partition_index"]
                answer = {"partition_index": index, "error_code": _E.NONE, "timestamp": -1, "offset": -1,
                          "leader_epoch": -1}
                parts = self.topics.get(t["name"])
                if parts is None or not 0 <= index < len(parts):
                    answers.append({**answer, "error_code": _E.UNKNOWN_TOPIC_OR_PARTITION})
                    continue
                part = parts[index]
                code = (_E.NOT_LEADER_OR_FOLLOWER if part.leader != node_id
                        else self._epoch_check(part, q.get("current_leader_epoch", -1)))
                if code == _E.NONE:
                    answer["leader_epoch"] = part.leader_epoch
                    if q["timestamp"] == -2:
                        answer["offset"] = 0
                    elif q["timestamp"] == -1:
                        answer["offset"] = part.last_stable_offset if body.get("isolation_level") == 1 \
                            else part.next_offset
                    else:
                        found = next((r for r in part.records if r.timestamp_ms >= q["timestamp"]), None)
                        if found is not None:
                            answer["offset"], answer["timestamp"] = found.offset, found.timestamp_ms
                answers.append({**answer, "error_code": code})
            topics.append({"name": t["name"], "partitions": answers})
        return {"throttle_time_ms": 0, "topics": topics}

    def _offset_for_leader_epoch(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Where each asked leader epoch ends in the log (Kafka's LeaderEpochFileCache.endOffsetFor)."""
        topics = []
        for t in body["topics"]:
            answers = []
            for q in t["partitions"]:
                answer = {"error_code": _E.NONE, "partition": q["partition"], "leader_epoch": -1, "end_offset": -1}
                parts = self.topics.get(t["topic"])
                if parts is None or not 0 <= q["partition"] < len(parts):
                    answers.append({**answer, "error_code": _E.UNKNOWN_TOPIC_OR_PARTITION})
                    continue
                part = parts[q["partition"]]
                code = (_E.NOT_LEADER_OR_FOLLOWER if part.leader != node_id
                        else self._epoch_check(part, q["current_leader_epoch"]))
                asked = q["leader_epoch"]
                if code != _E.NONE or asked < 0:
                    answers.append({**answer, "error_code": code})
                    continue
                if asked == part.epoch_starts[-1][0]:
                    answers.append({**answer, "leader_epoch": asked, "end_offset": part.next_offset})
                    continue
                later = [start for epoch, start in part.epoch_starts if epoch > asked]
                floor = [epoch for epoch, _ in part.epoch_starts if epoch <= asked]
                if later:
                    answers.append({**answer, "leader_epoch": max(floor) if floor else asked, "end_offset": later[0]})
                else:
                    answers.append(answer)
            topics.append({"topic": t["topic"], "partitions": answers})
        return {"throttle_time_ms": 0, "topics": topics}

    def _fetch(self, node_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Fetch with KIP-227 sessions, as Kafka's FetchManager runs them (the module docstring)."""
        session_id, epoch = body.get("session_id", 0), body.get("session_epoch", -1)
        sent = {(t["topic"], p["partition"]): (p["fetch_offset"], p["partition_max_bytes"])
                for t in body["topics"] for p in t["partitions"]}
        leader_epochs = {(t["topic"], p["partition"]): p.get("current_leader_epoch", -1)
                         for t in body["topics"] for p in t["partitions"]}
        sessions = self.sessions[node_id]
        session: FetchSessionState | None = None
        if epoch in (0, -1):  # full: replaces (or closes) the session it names, without an error if unknown
            sessions.pop(session_id, None)
            partitions = sent
            if epoch == 0 and self.fetch_sessions and sent:
                session = FetchSessionState(next(self._session_ids), 1, dict(sent))
                sessions[session.session_id] = session
        else:
            session = sessions.get(session_id)
            if session is None or epoch != session.epoch:
                code = _E.INVALID_FETCH_SESSION_EPOCH if session else _E.FETCH_SESSION_ID_NOT_FOUND
                return {"throttle_time_ms": 0, "error_code": code, "session_id": 0, "responses": []}
            for t in body.get("forgotten_topics_data", ()):
                for index in t["partitions"]:
                    session.partitions.pop((t["topic"], index), None)
                    session.answered.pop((t["topic"], index), None)
            session.partitions.update(sent)
            session.epoch = session.epoch + 1 if session.epoch < INT32_MAX else 1
            partitions = session.partitions
        room_bytes = body["max_bytes"]
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, index), (fetch_offset, max_bytes) in partitions.items():
            answer = self._fetch_partition(node_id, topic, index, fetch_offset, min(max_bytes, room_bytes),
                                           first=room_bytes == body["max_bytes"],
                                           current_leader_epoch=leader_epochs.get((topic, index), -1))
            room_bytes -= len(answer["records"] or b"")
            marks = (answer["high_watermark"], answer["last_stable_offset"], answer["log_start_offset"])
            if session is not None:
                news = answer["records"] or answer["error_code"] or session.answered.get((topic, index)) != marks
                session.answered[(topic, index)] = marks
                if epoch > 0 and not news:
                    continue
            by_topic.setdefault(topic, []).append(answer)
        return {"throttle_time_ms": 0, "error_code": _E.NONE, "session_id": session.session_id if session else 0,
                "responses": [{"topic": topic, "partitions": answers} for topic, answers in by_topic.items()]}

    def _fetch_partition(self, node_id: int, topic: str, index: int, fetch_offset: int, max_bytes: int,
                         first: bool, current_leader_epoch: int = -1) -> dict[str, Any]:
        """One partition's Fetch answer: whole batches from the one holding fetch_offset, within max_bytes (the
        first batch of the answer even when larger: KIP-74). current_leader_epoch: the request's (-1: not checked;
        a session's partitions not listed in an incremental fetch are not checked)."""
        answer: dict[str, Any] = {"partition_index": index, "error_code": _E.NONE, "high_watermark": -1,
                                  "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                                  "preferred_read_replica": -1, "records": None}
        parts = self.topics.get(topic)
        if parts is None or not 0 <= index < len(parts):
            return {**answer, "error_code": _E.UNKNOWN_TOPIC_OR_PARTITION}
        part = parts[index]
        if part.leader != node_id:
            return {**answer, "error_code": _E.NOT_LEADER_OR_FOLLOWER}
        if code := self._epoch_check(part, current_leader_epoch):
            return {**answer, "error_code": code}
        if not 0 <= fetch_offset <= part.next_offset:
            return {**answer, "error_code": _E.OFFSET_OUT_OF_RANGE}
        stable = part.last_stable_offset
        records = bytearray()
        for last_offset, raw in part.log_batches:
            if last_offset < fetch_offset:
                continue
            if len(records) + len(raw) > max_bytes and (records or not first):
                break
            if len(raw) > max_bytes and not self.whole_first_batch:
                records += raw[:max_bytes]
                break
            records += raw
        return {**answer, "high_watermark": part.next_offset, "last_stable_offset": stable, "log_start_offset": 0,
                "records": bytes(records)}

    _HANDLERS: dict[int, Callable[[FakeCluster, int, Mapping[str, Any]], dict[str, Any]]] = {
        PRODUCE.key: _produce,
        FETCH.key: _fetch,
        LIST_OFFSETS.key: _list_offsets,
        OFFSET_FOR_LEADER_EPOCH.key: _offset_for_leader_epoch,
        METADATA.key: _metadata,
        FIND_COORDINATOR.key: _find_coordinator,
        INIT_PRODUCER_ID.key: _init_producer_id,
        ADD_PARTITIONS_TO_TXN.key: _add_partitions,
        ADD_OFFSETS_TO_TXN.key: _add_offsets,
        TXN_OFFSET_COMMIT.key: _txn_offset_commit,
        END_TXN.key: _end_txn,
    }

    def _check_producer(self, part: _Partition, topic: str, index: int, batch: Any,
                        transactional_id: str | None) -> tuple[int, int]:
        """Kafka's producer state checks for one batch: (error code, base offset of a duplicate or -1)."""
        if batch.producer_id < 0:
            return _E.NONE, -1
        if batch.is_transactional:
            txn = self.transactions.get(transactional_id) if transactional_id is not None else None
            if txn is None or txn.producer_id != batch.producer_id:
                return _E.INVALID_PRODUCER_ID_MAPPING, -1
            if batch.producer_epoch < txn.epoch:
                return _E.INVALID_PRODUCER_EPOCH, -1
            if (topic, index) not in txn.partitions:
                if not self._v2_request(12):
                    return _E.INVALID_TXN_STATE, -1  # not added with AddPartitionsToTxn first
                txn.partitions.add((topic, index))  # Produce v12 adds it (Transactions V2)
        state = part.producers.get(batch.producer_id)
        first, count = batch.base_sequence, len(batch.records)
        last = (first + count - 1) % (INT32_MAX + 1)
        if state is None:
            # Kafka holds no state for this producer here: it accepts any sequence (its earlier batches may have
            # been deleted by retention), so a batch overtaking the producer's first one is appended
            return _E.NONE, -1
        if state.epoch == -2:  # forgotten
            return (_E.NONE, -1) if first == 0 else (_E.UNKNOWN_PRODUCER_ID, -1)
        if batch.producer_epoch < state.epoch:
            return _E.INVALID_PRODUCER_EPOCH, -1
        if batch.producer_epoch > state.epoch:
            return (_E.NONE, -1) if first == 0 else (_E.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        for cached_first, cached_last, cached_offset in state.batches:
            if (cached_first, cached_last) == (first, last):
                return _E.DUPLICATE_SEQUENCE_NUMBER, cached_offset
        if first != (state.last_sequence + 1) % (INT32_MAX + 1):
            return _E.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        return _E.NONE, -1

    def _append(self, node_id: int, topic: str, index: int, records: Any,
                transactional_id: str | None = None) -> dict[str, Any]:
        parts = self.topics.get(topic)
        if parts is None or not 0 <= index < len(parts):
            return _partition_answer(index, _E.UNKNOWN_TOPIC_OR_PARTITION, -1)
        part = parts[index]
        if part.leader != node_id:
            return _partition_answer(index, _E.NOT_LEADER_OR_FOLLOWER, -1)
        injected = self._take_injected(topic, index)
        if injected is not None and not injected.after_append:
            return _partition_answer(index, injected.error_code, -1)
        data = bytes(records)
        if len(data) > self.max_message_bytes:
            return _partition_answer(index, _E.MESSAGE_TOO_LARGE, -1)
        try:
            batches = decode_batches(data, decompress)
        except CorruptRecordError as e:
            return _partition_answer(index, _E.CORRUPT_MESSAGE, -1, error_message=str(e))
        for batch in batches:  # all or nothing, like a broker's validation before it appends
            code, duplicate_offset = self._check_producer(part, topic, index, batch, transactional_id)
            if code == _E.DUPLICATE_SEQUENCE_NUMBER and len(batches) == 1 and self.duplicate_answer == "kafka":
                return _partition_answer(index, _E.NONE, duplicate_offset)
            if code != _E.NONE:
                return _partition_answer(index, code, -1, log_start_offset=0)
        base_offset = part.next_offset
        pos = 0
        for batch in batches:
            batch_offset = part.next_offset
            size_bytes = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")  # base offset, length, the rest
            part.log_batches.append((batch_offset + len(batch.records) - 1,  # the leader's epoch stamped, as Kafka
                                     batch_offset.to_bytes(8, "big") + data[pos + 8:pos + 12]
                                     + part.leader_epoch.to_bytes(4, "big", signed=True)
                                     + data[pos + 16:pos + size_bytes]))
            pos += size_bytes
            for i, record in enumerate(batch.records):
                part.records.append(StoredRecord(
                    part.next_offset, record.timestamp_ms, record.key, record.value, list(record.headers),
                    batch.producer_id, batch.base_sequence, batch.producer_epoch,
                    batch.base_sequence + i if batch.base_sequence >= 0 else -1,
                    "open" if batch.is_transactional else "none"))
                part.next_offset += 1
            part.batches += 1
            if batch.producer_id >= 0:
                count = len(batch.records)
                last = (batch.base_sequence + count - 1) % (INT32_MAX + 1)
                state = part.producers.get(batch.producer_id)
                if state is None or state.epoch != batch.producer_epoch:
                    state = part.producers[batch.producer_id] = _ProducerState(batch.producer_epoch, last)
                state.last_sequence = last
                state.batches.append((batch.base_sequence, last, batch_offset))
        if injected is not None:  # appended, but the producer hears an error
            return _partition_answer(index, injected.error_code, -1)
        return _partition_answer(index, _E.NONE, base_offset, log_start_offset=0)
