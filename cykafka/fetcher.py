"""The Fetcher (Java's AbstractFetch/Fetcher): the consumer's Fetch requests, a request source of the network loop
(cykafka/requests/calls.py), and the filing of their answers.

Reads the SubscriptionState (cykafka/subscription_state.py: which partitions, at which fetch offset, paused, backing
off) and files what comes back into the FetchBuffer (cykafka/fetch_buffer.py) as CompletedFetches, decoded by the
FetchCollector's decoder (cykafka/fetch_collector.py), all under the SubscriptionState's lock.

Sending: one Fetch in flight per broker, for every fetchable partition it leads (position known, not paused, no
backoff, not at its end with FETCH_AHEAD_ANSWERS answers in the buffer: cykafka/fetch_buffer.py), asking for at most
fetch.max.bytes minus what that broker's data already holds in the buffer: buffered data stays within about
fetch.max.bytes per broker, and the next Fetch goes out while the caller works on the last answer (the fetch offset
runs ahead of the position; no fixed pause). Answers: data -> the buffer; OFFSET_OUT_OF_RANGE -> the
position is reset (auto.offset.reset, resolved by the caller's next poll); stale leaders -> metadata refresh and retry
after retry.backoff.ms; a lost connection -> retry after retry.backoff.ms.

Fetch sessions (KIP-227, core/fetch_session.py, Java's FetchSessionHandler): one `FetchSession` per broker. The first
Fetch to a broker is full; when its answer opens a session the next ones list only partitions added or whose fetch
offset or size changed, and forget those no longer fetched there (paused, moved, unassigned, in backoff); the answer
names only partitions with news. A broker that lost the session (FETCH_SESSION_ID_NOT_FOUND,
INVALID_FETCH_SESSION_EPOCH) gets a full fetch at once; a lost answer makes the next fetch full too.
`close_sessions()` turns the Fetcher into closing the sessions (epoch -1), as Java's consumer does on close.

Positions after a leader change (KIP-320, Java's SubscriptionState validation): a partition whose metadata shows a
newer leader epoch than its `leader_epoch`, while its position carries an `offset_epoch`, awaits validation: it is not
fetched (what was fetched for it is dropped) until the caller's poll has asked the leader with OffsetForLeaderEpoch
where `offset_epoch` ends in its log (cykafka/offset_fetcher.py); `divergence` (cykafka/subscription_state.py)
decides from the answer. Every Fetch carries the partition's `leader_epoch`, so a leader the consumer has not
validated against answers FENCED_LEADER_EPOCH instead of data.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cykafka.config import ConsumerConfig
from cykafka.core import PartitionFetch
from cykafka.core.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID, FetchPlan, FetchSession, next_epoch
from cykafka.errors import KafkaError
from cykafka.fetch_buffer import FETCH_AHEAD_ANSWERS, CompletedFetch, FetchBuffer
from cykafka.fetch_collector import grow_fetch_size
from cykafka.ports import (
    ClientResponse,
    FetchPumpPort,
    MetadataSource,
    TopicPartition,
    Transport,
    by_topic,
    fetch_pump_of,
)
from cykafka.protocol import Request
from cykafka.protocol import apis as api
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, kinds_of
from cykafka.requests.routes import ready_node
from cykafka.subscription_state import PartitionState, SubscriptionState

Decoder = Callable[[TopicPartition, bytes, int, Any], PartitionFetch]  # the FetchCollector's decoder

log = logging.getLogger("cykafka.consumer")
_SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH)

def fetch_request(partitions: Mapping[TopicPartition, tuple[int, int, int]], *, max_wait_ms: int, min_bytes: int,
                  max_bytes: int, read_committed: bool, session_id: int = INVALID_SESSION_ID,
                  session_epoch: int = FINAL_EPOCH, forgotten: Iterable[TopicPartition] = (),
                  rack_id: str = "") -> Request:
    """A Fetch for {partition: (fetch offset, partition_max_bytes, current leader epoch or -1)}; by default outside
    any fetch session (KIP-227), else in the session and epoch given, forgetting `forgotten` (core/fetch_session.py
    plans them). rack_id: client.rack (KIP-392: the broker may name a preferred read replica in its rack)."""
    return Request(api.FETCH.key, {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
        "isolation_level": int(read_committed), "session_id": session_id, "session_epoch": session_epoch,
        "topics": by_topic(partitions, lambda tp: {
            "partition": tp.partition, "current_leader_epoch": partitions[tp][2], "fetch_offset": partitions[tp][0],
            "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": partitions[tp][1]},
            topic="topic"),
        "forgotten_topics_data": by_topic(forgotten, lambda tp: tp.partition, topic="topic"),
        "rack_id": rack_id})


def _session_data(states: Mapping[TopicPartition, PartitionState]) -> dict[TopicPartition, tuple[int, int, int]]:
    """What a Fetch says of each partition (fetch_request's tuple): the fetch session compares these."""
    return {tp: (state.fetch_offset, state.fetch_size_bytes, state.leader_epoch)  # type: ignore[misc]
            for tp, state in states.items()}


class _Pumped:
    """A Fetch the transport's pump sent (ports.FetchPumpPort) before its predecessor's answer was filed: what it
    lists, and once the Fetcher adopted it (in that answer's handler) what it fetches, as send_ready's `sent`."""

    __slots__ = ("offsets", "sent")

    def __init__(self, offsets: list[tuple[str, int, int]]) -> None:
        self.offsets = offsets
        self.sent: dict[TopicPartition, tuple[int, int]] | None = None


class Fetcher:
    """Sends Fetch requests for the assigned partitions and files their answers; runs on the network thread."""

    def __init__(self, config: ConsumerConfig, subscriptions: SubscriptionState, buffer: FetchBuffer,
                 transport: Transport, metadata: MetadataSource, decoder: Decoder) -> None:
        self.config = config
        self.decoder = decoder
        self.subscriptions = subscriptions
        self.buffer = buffer
        self.transport = transport
        self.metadata = metadata
        self._nodes_in_flight: set[int] = set()
        self._retry_backoff_ms = config.retry_backoff_ms
        self.metadata_max_age_ms = config.metadata.metadata_max_age_ms  # how long a preferred read replica holds
        self.sessions: dict[int, FetchSession[TopicPartition, tuple[int, int, int]]] = defaultdict(FetchSession)
        self._closing = False
        self._closes_in_flight: set[int] = set()
        self.on_fetch: Callable[[ClientResponse, dict[str, Any] | None, dict[TopicPartition, PartitionState]], None] \
            | None = None  # the consumer's metrics: each answer once, the lock held
        self._pumps: dict[int, FetchPumpPort] = {}  # node id -> the pump last armed for it
        self._pumped: dict[int, _Pumped] = {}  # node id -> the Fetch its pump sent, until the answer before it is filed
        buffer.node_changed = self._buffer_changed

    def close_sessions(self) -> None:
        """Stops fetching: the next send_ready sends every broker holding a session of ours the Fetch that closes it
        (epoch -1, Java's close); a broker not ready then is skipped (its session expires there)."""
        self._closing = True
        self.replan()

    def replan(self) -> None:
        """What the next Fetch asks for changed on the caller's thread (a seek, a pause or resume, a new assignment,
        closing): a pump armed with the old plan would send it when the answer in flight comes, and the Fetch at the
        new positions would wait behind that one's fetch.max.wait.ms. So the pumps are disarmed (any thread: their
        flag is atomic) and the network thread is woken: the answer is filed, and the Fetcher plans the next Fetch."""
        for pump in list(self._pumps.values()):
            pump.disarm()
        self.transport.wakeup()

    @property
    def sessions_closed(self) -> bool:
        """After close_sessions: every closing Fetch was sent and answered (or failed)."""
        return self._closing and not self._closes_in_flight and not any(
            s.session_id != INVALID_SESSION_ID for s in self.sessions.values())

    def _send_closes(self, now_ms: int) -> int:
        for node_id, session in self.sessions.items():
            plan = session.close()
            if plan is None:
                continue
            if ready_node(self.transport, node_id, now_ms, self._retry_backoff_ms)[0] is None:
                log.debug("fetch session %s on node %s not closed: not connected", plan.session_id, node_id)
                continue
            try:
                self.transport.send(node_id, self._request(plan, max_wait_ms=0, max_bytes=0), now_ms,
                                    handler=lambda r: self._closes_in_flight.discard(r.node_id))
            except KafkaError as e:
                log.debug("fetch session %s on node %s not closed: %s", plan.session_id, node_id, e)
                continue
            self._closes_in_flight.add(node_id)
        return 2**31

    def _request(self, plan: FetchPlan[TopicPartition, tuple[int, int, int]], *, max_wait_ms: int,
                 max_bytes: int) -> Request:
        return fetch_request(plan.to_send, max_wait_ms=max_wait_ms, min_bytes=self.config.fetch_min_bytes,
                             max_bytes=max_bytes, read_committed=self.config.read_committed,
                             session_id=plan.session_id, session_epoch=plan.epoch, forgotten=plan.to_forget,
                             rack_id=self.config.client_rack)

    def _read_replica(self, tp: TopicPartition, state: PartitionState, leader: int, nodes: Mapping[int, Any],
                      now_ms: int) -> int:
        """Where tp is fetched from: its preferred read replica while that holds (Java's selectReadReplica), else
        the leader."""
        replica = state.read_replica
        if replica is None:
            return leader
        if now_ms < state.read_replica_until_ms and replica in nodes and not self.transport.connection_failed(replica):
            return replica
        log.debug("%s [%s]: back to the leader (node %s) from read replica %s", tp.topic, tp.partition, leader,
                  replica)
        state.read_replica = None
        return leader

    def _fetched_ahead(self, tp: TopicPartition, state: PartitionState) -> bool:
        """At the end of what tp can return (its high watermark; read_committed: its last stable offset, as of the
        last answer) and already FETCH_AHEAD_ANSWERS answers of it in the buffer: not fetched until the caller takes
        one (which wakes the loop). Behind the end (catching up) only the bytes bound holds: full answers follow."""
        end = state.last_stable_offset if self.config.read_committed else state.high_watermark
        return state.fetch_offset is not None and state.fetch_offset >= end and self.buffer.fetched_ahead(
            tp, state.epoch)

    def _fetchable(self, now_ms: int) -> tuple[dict[int, dict[TopicPartition, PartitionState]], int]:
        """With the lock held: the partitions to fetch now by the node to fetch them from (position known, not paused,
        not in flight, no error, validated, out of backoff, a leader known, not fetched ahead), and how long until a
        backoff ends."""
        snapshot = self.metadata.snapshot()
        delay_ms = 2**31
        by_node: dict[int, dict[TopicPartition, PartitionState]] = defaultdict(dict)
        for tp, state in self.subscriptions.states.items():
            if (state.fetch_offset is None or state.paused or state.in_flight or state.error is not None
                    or state.awaiting_validation or self._fetched_ahead(tp, state)):
                continue
            if now_ms < state.not_before_ms:
                delay_ms = min(delay_ms, state.not_before_ms - now_ms)
                continue
            leader = snapshot.leader(tp.topic, tp.partition)
            self.metadata.add_topic(tp.topic, now_ms)
            if leader < 0:
                self.metadata.request_update()
                state.not_before_ms = now_ms + self._retry_backoff_ms
                continue
            by_node[self._read_replica(tp, state, leader, snapshot.nodes, now_ms)][tp] = state
        return by_node, delay_ms

    def send_ready(self, now_ms: int) -> int:
        if self._closing:
            return self._send_closes(now_ms)
        sub = self.subscriptions
        with sub.lock:
            by_node, delay_ms = self._fetchable(now_ms)
            for node_id, states in by_node.items():
                buffered_bytes = self.buffer.buffered_bytes[node_id]
                # room for fetch.max.bytes per broker in the buffer; with none of its data buffered, at least 1 byte
                # (fetch.max.bytes=0 as Java: Kafka still answers with one batch, KIP-74; Tansu answers 0 with none)
                room_bytes = max(self.config.fetch_max_bytes - buffered_bytes, 0 if buffered_bytes else 1)
                if node_id in self._nodes_in_flight or room_bytes <= 0:
                    continue  # an answer or the caller's consuming frees it
                ready, wait_ms = ready_node(self.transport, node_id, now_ms, self._retry_backoff_ms)
                if ready is None:
                    delay_ms = min(delay_ms, wait_ms)
                    continue
                sent = {tp: (state.epoch, state.fetch_offset) for tp, state in states.items()}
                session = self.sessions[node_id]
                plan = session.build(_session_data(states))
                request = self._request(plan, max_wait_ms=self.config.fetch_max_wait_ms, max_bytes=room_bytes)
                try:
                    self.transport.send(node_id, request, now_ms,
                                        handler=lambda r, s=sent, f=plan.full: self._on_answer(r, s, f))  # type: ignore[misc]
                except KafkaError as e:
                    log.debug("fetch to node %s not sent: %s", node_id, e)
                    session.handle_error()
                    continue
                self._nodes_in_flight.add(node_id)
                for state in states.values():
                    state.in_flight = True
                if not plan.full:
                    self._arm(node_id, session)
        return delay_ms

    # -- the transport's fetch pump (ports.FetchPumpPort): the next Fetch sent as the answer is read --------------

    def _arm(self, node_id: int, session: FetchSession[TopicPartition, tuple[int, int, int]]) -> None:
        """The incremental Fetch to node_id in flight, the lock held: its answer may send the next one at once, as
        this Fetcher would send it once that answer is filed (the session's partitions at the offsets it moves),
        when it is plain (core/fetch_pump.pyx says which are)."""
        pump = fetch_pump_of(self.transport, node_id)
        if pump is None or self._closing:
            self._pumps.pop(node_id, None)
            return
        self._pumps[node_id] = pump
        states = self.subscriptions.states
        read_committed = self.config.read_committed
        partitions = []
        for tp, (fetch_offset, max_bytes, leader_epoch) in session.partitions.items():
            state = states.get(tp)
            end = -1 if state is None else state.last_stable_offset if read_committed else state.high_watermark
            partitions.append((tp.topic, tp.partition, fetch_offset, max_bytes, leader_epoch, end))
        pump.set_buffered(self.buffer.buffered_answers[node_id], self.buffer.buffered_bytes[node_id])
        pump.arm(session.session_id, next_epoch(session.epoch), self.config.fetch_max_wait_ms,
                 self.config.fetch_min_bytes, self.config.fetch_max_bytes, read_committed, self.config.client_rack,
                 partitions, FETCH_AHEAD_ANSWERS, lambda offsets: self._fired(node_id, offsets))

    def _buffer_changed(self, node_id: int) -> None:
        pump = self._pumps.get(node_id)
        if pump is not None:
            pump.set_buffered(self.buffer.buffered_answers[node_id], self.buffer.buffered_bytes[node_id])

    def _fired(self, node_id: int, offsets: list[tuple[str, int, int]]) -> Callable[[ClientResponse], None]:
        """The pump sent node_id's next Fetch (inside the transport's poll): adopted when the answer before it is
        filed (_on_answer); returns the handler of its own answer."""
        pumped = self._pumped[node_id] = _Pumped(offsets)
        return lambda r: self._on_pumped_answer(r, pumped)

    def _adopt(self, node_id: int, pumped: _Pumped, now_ms: int) -> None:
        """The Fetch the pump sent becomes this Fetcher's, the lock held: the session plans it as sent (its epoch,
        the partitions it moved), its partitions are in flight, and the pump is armed for its answer."""
        session = self.sessions[node_id]
        wanted = dict(session.partitions)
        moved = set()
        for topic, partition, fetch_offset in pumped.offsets:
            tp = TopicPartition(topic, partition)
            data = wanted.get(tp)
            if data is not None:
                wanted[tp] = (fetch_offset, data[1], data[2])
                moved.add(tp)
        plan = session.build(wanted)
        if plan.full or set(plan.to_send) != moved or len(moved) != len(pumped.offsets):
            log.debug("fetch session of node %s: the pumped fetch is not the session's next; starting over", node_id)
            session.handle_error()  # its answer is dropped (_on_pumped_answer), the next fetch is full
            return
        states = self.subscriptions.states
        pumped.sent = {tp: (state.epoch, data[0]) for tp, data in wanted.items()
                       if (state := states.get(tp)) is not None}
        # armed again only while it fetches what this Fetcher would (nothing paused, sought, assigned or fetched
        # ahead since): each Fetch it fires is then one this Fetcher would send, sent sooner
        rearm = _session_data(self._fetchable(now_ms)[0].get(node_id, {})) == session.partitions
        for tp in pumped.sent:
            states[tp].in_flight = True
        self._nodes_in_flight.add(node_id)
        if rearm:
            self._arm(node_id, session)

    def _on_pumped_answer(self, response: ClientResponse, pumped: _Pumped) -> None:
        if pumped.sent is not None:
            self._on_answer(response, pumped.sent, False)
            return
        with self.subscriptions.lock:  # never adopted: its predecessor's answer was lost, or the session moved on
            self._nodes_in_flight.discard(response.node_id)
            self.sessions[response.node_id].handle_error()
            self.subscriptions.data_ready.notify_all()

    def _on_answer(self, response: ClientResponse, sent: dict[TopicPartition, tuple[int, int]], full: bool) -> None:
        """The answer to a Fetch of `sent` {partition: (its epoch, fetch offset) when sent}; full: a full fetch."""
        sub, now_ms = self.subscriptions, response.received_ms
        self._nodes_in_flight.discard(response.node_id)
        pumped = self._pumped.pop(response.node_id, None)  # the pump sent the next Fetch as this answer was read
        with sub.lock:
            self._file_answer(response, sent, full, now_ms)
            if pumped is not None:
                self._adopt(response.node_id, pumped, now_ms)

    def _file_answer(self, response: ClientResponse, sent: dict[TopicPartition, tuple[int, int]], full: bool,
                     now_ms: int) -> None:
        """_on_answer's filing, the lock held: the session's bookkeeping, then each partition's data or error."""
        sub = self.subscriptions
        body = response.response if isinstance(response.response, dict) else None
        session = self.sessions[response.node_id]
        for tp in sent:
            state = sub.states.get(tp)
            if state is not None:
                state.in_flight = False
        if self._closing:
            return
        problem: KafkaError | str | None = response.error
        if problem is not None or body is None:
            session.handle_error()
            problem = problem or "no answer"
        elif not session.handle_response(
                code := body.get("error_code", ErrorCode.NONE), body.get("session_id", INVALID_SESSION_ID),
                (TopicPartition(t["topic"], p["partition_index"]) for t in body["responses"]
                 for p in t["partitions"])):
            if not full and code in _SESSION_ERRORS:  # the broker lost our session: at once a full fetch (Java)
                log.debug("fetch session of node %s lost: %s", response.node_id, error_for(code))
                return
            problem = error_for(code) if code else "an answer naming partitions outside the fetch session"
        if problem is not None:
            log.debug("fetch from node %s failed: %s", response.node_id, problem)
            self.metadata.request_update()
            for tp in sent:
                state = sub.states.get(tp)
                if state is not None:
                    state.not_before_ms = now_ms + self._retry_backoff_ms
                    state.read_replica = None  # a failed fetch goes back to the leader (Java's)
            return
        assert body is not None
        for topic in body["responses"]:
            for p in topic["partitions"]:
                tp = TopicPartition(topic["topic"], p["partition_index"])
                state = sub.states.get(tp)
                if state is None or tp not in sent or sent[tp] != (state.epoch, state.fetch_offset):
                    continue  # unassigned, sought or reset since it was sent
                self._file(tp, state, p, response.node_id, now_ms)
        if self.on_fetch is not None:
            self.on_fetch(response, body, sub.states)
        sub.data_ready.notify_all()

    def _file(self, tp: TopicPartition, state: PartitionState, p: dict[str, Any], node_id: int, now_ms: int) -> None:
        """One partition's answer, with the lock held."""
        code = p["error_code"]
        replica = p.get("preferred_read_replica", -1)
        if code == ErrorCode.NONE and replica >= 0 and replica != node_id:  # KIP-392: the leader names a replica
            log.debug("%s [%s]: fetching from read replica %s (client.rack=%s), as node %s says", tp.topic,
                      tp.partition, replica, self.config.client_rack, node_id)
            state.read_replica = replica
            state.read_replica_until_ms = now_ms + self.metadata_max_age_ms
            return
        if code != ErrorCode.NONE and state.read_replica is not None:
            state.read_replica = None  # any error from a read replica: back to the leader (Java's)
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:  # the replica lags the leader: ask the leader, do not reset
                log.debug("%s [%s]: offset %s out of range on read replica %s; asking the leader", tp.topic,
                          tp.partition, state.fetch_offset, node_id)
                return
        if code == ErrorCode.NONE:
            state.high_watermark, state.log_start_offset = p["high_watermark"], p["log_start_offset"]
            state.last_stable_offset = p["last_stable_offset"]
            records = p["records"]
            if not records:
                return
            fetch_offset = state.fetch_offset
            assert fetch_offset is not None
            aborted = p["aborted_transactions"]  # None or [] (Tansu, the mock cluster): the markers decide
            fetch = self.decoder(tp, records, fetch_offset, aborted)
            try:
                end = fetch.end_offset  # the offset after the last whole batch: read from batch headers only
            except KafkaError as e:  # a corrupt marker batch (its CRC is checked here): poll raises it
                state.error = e
                return
            if end <= fetch_offset:  # no complete batch: one larger than partition_max_bytes (pre-KIP-74 brokers)
                grow_fetch_size(state)
                return
            self.buffer.add(CompletedFetch(tp, state.epoch, fetch, node_id, len(records), records, aborted))
            state.fetch_offset = end
            return
        error = error_for(code, f"fetching {tp.topic} [{tp.partition}] at offset {state.fetch_offset}")
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            policy = self.config.auto_offset_reset
            log.info("%s; resetting the position (auto.offset.reset=%s)", error, policy)
            state.seek(None, policy)
        elif kinds_of(code) & ErrorKind.STALE_METADATA:
            self.metadata.request_update()
            state.not_before_ms = now_ms + self._retry_backoff_ms
        elif error.retriable:
            state.not_before_ms = now_ms + self._retry_backoff_ms
        else:
            state.error = error
