"""The share consumer's network side: heartbeats, share fetches and acknowledgements, as a request source the network
thread drives (cykafka/requests/calls.py's RequestSource, looped by cykafka/consumer_network.py's NetworkThread).

Owns `ShareState`, what the caller's thread and the network thread share under one lock (`ShareState.lock`, a
Condition the caller waits on): the fetched data not yet handed out, the acknowledgements handed over per broker, the
acknowledgement results for the caller's callback and commits, the first fatal error. `ShareNetwork` drives
core/share.py's ShareMember (ShareGroupHeartbeat to the group's coordinator) and one ShareSession per broker: per
broker at most one request at a time (the session epoch orders them): a ShareAcknowledge when a commit waits for
acknowledgements, else a ShareFetch carrying the acknowledgements handed over (piggy-backed) when no fetched data of
that broker waits to be handed out (or what waits would not fill the caller's next poll: `Fetched.low`), else a
ShareAcknowledge for acknowledgements alone; a ShareFetch that goes ahead of the caller (it holds records just handed
out) waits 0 ms at the broker (`ShareState.fetch_ahead`); while that broker's data still waits for the caller,
acknowledgements are held (up to _ACK_HOLD_MS) for the ShareFetch that follows, so a batch costs one request, as
Java's (measured: 85 ShareFetch and ~35 ShareAcknowledge per 50,000 records before, 85 and 1 after, 1.3-1.9x the
records/s of one member). Acknowledgements holding a RENEW always go in a ShareAcknowledge with is_renew_ack
(KIP-1222: a ShareFetch that renews fetches nothing).
Closing: the member leaves (epoch -1) and every open session ends with a ShareAcknowledge at epoch -1 carrying the
last acknowledgements (the broker releases what the member still held). Every request is a Call on the client's
CallQueue: one way to wait for a connection and a coordinator. Nothing here runs user code.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cykafka.core.share import FATAL, LEFT, UNSUBSCRIBED, Acknowledgements, ShareMember, ShareSession, TopicIdPartition
from cykafka.errors import KafkaError, RequestEncodeError, ShareGroupsUnsupportedError, UnsupportedVersionError
from cykafka.ports import Clock, MetadataSource, TopicPartition
from cykafka.protocol import Request
from cykafka.protocol.apis import SHARE_ACKNOWLEDGE, SHARE_ACKNOWLEDGE_RENEW, SHARE_FETCH, SHARE_GROUP_HEARTBEAT
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, kinds_of
from cykafka.requests.calls import Call, CallQueue
from cykafka.requests.coordinators import group_coordinator
from cykafka.requests.routes import Broker

if TYPE_CHECKING:
    from cykafka.config import ConsumerConfig

log = logging.getLogger("cykafka.share")
_METADATA_TOUCH_MS = 10_000  # re-adds the subscribed topics this often, so metadata.max.idle.ms never drops them
# acknowledgements handed over while that broker's fetched data still waits for the caller are held this long at
# most for the next ShareFetch to carry (one request per batch, as Java's, instead of a fetch and an acknowledge)
_ACK_HOLD_MS = 500
AckResults = dict[TopicPartition, KafkaError | None]


def unsupported(detail: str) -> ShareGroupsUnsupportedError:
    return ShareGroupsUnsupportedError(
        f"the broker offers no share groups ({detail}): a share consumer needs Apache Kafka 4.2+ with the "
        f"share.version feature at 1 (kafka-features.sh upgrade --feature share.version=1)")


def _renews(acks: dict[TopicIdPartition, Acknowledgements]) -> bool:
    """Whether these acknowledgements renew a lock: they go in a ShareAcknowledge with is_renew_ack (KIP-1222), never
    on a ShareFetch (one that renews fetches nothing)."""
    return any(t == SHARE_ACKNOWLEDGE_RENEW for ack in acks.values() for t in ack.types.values())


@dataclass(slots=True)
class Fetched:
    """One partition's data from one ShareFetch answer: its records and the ranges acquired by this member."""

    node_id: int
    tip: TopicIdPartition
    tp: TopicPartition
    records: Any  # the records section (bytes-like)
    acquired: list[tuple[int, int, int]]  # (first offset, last offset, delivery count)
    # what is left of it would not fill the caller's next poll: its broker may be fetched from again (the next
    # answer is on its way while the caller takes the rest: one round trip less per poll)
    low: bool = False


@dataclass(slots=True, eq=False)
class Commit:
    """A caller's commit: the brokers whose acknowledgements it waits for, the results per partition."""

    nodes: set[int]
    results: AckResults = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)

    def node_done(self, node_id: int) -> None:
        self.nodes.discard(node_id)
        if not self.nodes:
            self.done.set()


class ShareState:
    """What the caller's thread and the network thread share, under `lock` (module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Condition(threading.RLock())  # reentrant: a call failing at once answers inside submit
        self.buffer: list[Fetched] = []
        self.acks: dict[int, dict[TopicIdPartition, Acknowledgements]] = {}  # node -> handed over, not yet sent
        self.commits: dict[int, list[Commit]] = {}  # node -> commits waiting for its acknowledgements
        self.results: list[tuple[dict[TopicPartition, set[int]], KafkaError | None]] = []  # for the callback
        self.error: KafkaError | None = None
        self.names: dict[UUID, str] = {}  # topic id -> name, of what was fetched
        # a fetch is wanted: the caller's poll waits for records, or handed out all it had (one fetch ahead of the
        # next poll); each fetch sent uses it up, so a member that stops polling stops acquiring records
        self.fetch_wanted = False
        # the fetch wanted goes ahead of the caller, who holds records just handed out (their acknowledgements come
        # with its next poll): it waits 0 ms at the broker. A fetch that waits there (fetch.max.wait.ms) holds the
        # session, and with it those acknowledgements: when the members of a share partition hold its in-flight
        # limit (share.partition.max.record.locks, 2000 by default) between them, every member's fetch waited the
        # whole fetch.max.wait.ms for locks the acknowledgements behind it would free (4 members: 1/3 of Java's
        # rate). A fetch for a poll that found nothing (its acknowledgements on board) waits as usual.
        self.fetch_ahead = False
        self.closing = False
        self.closed = False  # the network side finished closing

    def hand_over(self, acks: dict[int, dict[TopicIdPartition, Acknowledgements]], commit: Commit | None) -> None:
        """With the lock held: the caller's acknowledgements, to go with the next request to each broker."""
        for node_id, by_tip in acks.items():
            mine = self.acks.setdefault(node_id, {})
            for tip, ack in by_tip.items():
                if tip in mine:
                    mine[tip].types.update(ack.types)
                else:
                    mine[tip] = ack
            if commit is not None:
                self.commits.setdefault(node_id, []).append(commit)


class ShareNetwork:
    """The share member's requests, on the network thread (module docstring)."""

    def __init__(self, member: ShareMember, state: ShareState, calls: CallQueue, metadata: MetadataSource,
                 clock: Clock, settings: ConsumerConfig, request_timeout_ms: int,
                 wake_caller: Callable[[], None]) -> None:
        self.member = member
        self.state = state
        self.calls = calls
        self.metadata = metadata
        self.clock = clock
        self.settings = settings  # fetch sizes and waits
        self.request_timeout_ms = request_timeout_ms
        self.route = group_coordinator(member.group_id)
        self.sessions: dict[int, ShareSession] = {}
        self._wake_caller = wake_caller
        self._touched_ms = -(2**62)
        self._topics: frozenset[str] = frozenset()
        self._acks_seen_ms: dict[int, int] = {}  # node -> when its waiting acknowledgements were first seen
        self._hold_until_ms: int | None = None  # the earliest end of a hold (send_ready's delay)

    # -- the request source ---------------------------------------------------------------------------------------

    def send_ready(self, now_ms: int) -> int:
        with self.state.lock:
            self._feed_metadata(now_ms)
            delay_ms = self._heartbeat(now_ms)
            if self.state.closing:
                self._close_sessions(now_ms)
            elif self.member.error is None:
                self._hold_until_ms = None
                self._fetch(now_ms)
                hold_until_ms: int | None = self._hold_until_ms
                if hold_until_ms is not None:
                    delay_ms = min(delay_ms, max(1, hold_until_ms - now_ms))
            return delay_ms

    def _feed_metadata(self, now_ms: int) -> None:
        topics = self.member.topics
        if topics != self._topics or now_ms - self._touched_ms >= _METADATA_TOUCH_MS:
            for topic in topics:
                self.metadata.add_topic(topic, now_ms)
            self._topics, self._touched_ms = topics, now_ms

    def _heartbeat(self, now_ms: int) -> int:
        member = self.member
        body = member.next_heartbeat(now_ms)
        if body is not None:
            self.calls.submit(Call(self.route, now_ms + self.request_timeout_ms,
                                   Request(SHARE_GROUP_HEARTBEAT.key, body), on_answer=self._heartbeat_answered,
                                   what=f"share group {member.group_id!r} heartbeat"), now_ms)
        return member.next_delay_ms(now_ms)

    def _heartbeat_answered(self, call: Call) -> None:
        now_ms = self.clock.monotonic_ms()
        with self.state.lock:
            member = self.member
            if call.error is not None or call.response is None:
                error = call.error or KafkaError("ShareGroupHeartbeat: no answer")
                if isinstance(error, UnsupportedVersionError):
                    member.fail(unsupported(str(error)))
                else:
                    log.debug("share group %s: heartbeat failed: %s", member.group_id, error)
                    self.calls.router.failed(self.route, error)
                    member.on_heartbeat_failed(error, now_ms)
            else:
                if call.response["error_code"] == ErrorCode.UNSUPPORTED_VERSION:
                    member.fail(unsupported("ShareGroupHeartbeat answered UNSUPPORTED_VERSION"))
                else:
                    refused = member.on_heartbeat(call.response, now_ms)
                    if refused is not None:
                        log.debug("share group %s: heartbeat answered %s", member.group_id, refused)
                        self.calls.router.failed(self.route, refused)
            self.state.lock.notify_all()
        self._wake_caller()

    # -- fetches and acknowledgements -------------------------------------------------------------------------------

    def _leaders(self) -> dict[int, set[TopicIdPartition]]:
        """The assigned partitions by their leader (those whose topic name or leader is not known yet wait for
        metadata)."""
        snapshot = self.metadata.snapshot()
        names = {topic_id: name for name, topic_id in snapshot.topic_ids.items()}
        by_node: dict[int, set[TopicIdPartition]] = {}
        for tip in self.member.assignment:
            name = names.get(tip[0])
            leader = snapshot.leader(name, tip[1]) if name is not None else -1
            if leader < 0:
                self.metadata.request_update()
                continue
            self.state.names[tip[0]] = name  # type: ignore[assignment]
            by_node.setdefault(leader, set()).add(tip)
        return by_node

    def _fetch(self, now_ms: int) -> None:
        state = self.state
        by_node = self._leaders()
        buffered = {f.node_id for f in state.buffer if not f.low}
        fetched = False
        for node_id in set(by_node) | {n for n, a in state.acks.items() if a}:
            session = self.sessions.get(node_id)
            if session is None:
                session = self.sessions[node_id] = ShareSession(node_id, self.member.group_id)
            if session.in_flight is not None:
                continue
            acks = state.acks.get(node_id, {})
            waiting_commit = bool(state.commits.get(node_id))
            wanted = by_node.get(node_id, set())
            if acks and not session.acks_allowed:  # epoch 0: the broker refuses acknowledgements there
                failed = state.commits.pop(node_id, [])
                self._acks_failed(state.acks.pop(node_id), KafkaError(
                    f"acknowledgements not sent: the share session with node {node_id} was lost (the records went "
                    f"back to the group)"), failed)
                for commit in failed:
                    commit.node_done(node_id)
                self._acks_seen_ms.pop(node_id, None)
                acks = {}
                waiting_commit = False
            renew = _renews(acks)
            if acks and node_id in buffered and wanted and not waiting_commit and not renew:
                held_until_ms = self._acks_seen_ms.setdefault(node_id, now_ms) + _ACK_HOLD_MS
                if now_ms < held_until_ms:  # for the fetch that goes once the caller took that data
                    self._hold_until_ms = min(held_until_ms, self._hold_until_ms or held_until_ms)
                    continue
            if acks and (waiting_commit or not wanted or node_id in buffered or renew):
                self._send_acknowledge(node_id, session, now_ms, close=False)
            elif wanted and node_id not in buffered and state.fetch_wanted:
                state.acks.pop(node_id, None)
                self._acks_seen_ms.pop(node_id, None)
                fetched = True
                commits = state.commits.pop(node_id, [])
                cfg = self.settings
                body = session.fetch(self.member.member_id, wanted, acks,
                                     max_wait_ms=0 if state.fetch_ahead else cfg.fetch_max_wait_ms,
                                     min_bytes=cfg.fetch_min_bytes, max_bytes=cfg.fetch_max_bytes,
                                     max_records=cfg.max_poll_records)
                self.calls.submit(Call(Broker(node_id), now_ms + self.request_timeout_ms,
                                       Request(SHARE_FETCH.key, body),
                                       on_answer=self._fetch_handler(node_id, session, acks, commits),
                                       what=f"ShareFetch to node {node_id}"), now_ms)
            elif waiting_commit and not acks:  # nothing to send there: the commit waits for nothing from it
                for commit in state.commits.pop(node_id):
                    commit.node_done(node_id)
        if fetched:  # the poll's fetch went out: the next fetch waits for the next poll
            state.fetch_wanted = False

    def _send_acknowledge(self, node_id: int, session: ShareSession, now_ms: int, *, close: bool) -> None:
        acks = self.state.acks.pop(node_id, {})
        self._acks_seen_ms.pop(node_id, None)
        commits = self.state.commits.pop(node_id, [])
        body = session.acknowledge(self.member.member_id, acks, close=close, renew=_renews(acks))
        self.calls.submit(Call(Broker(node_id), now_ms + self.request_timeout_ms,
                               Request(SHARE_ACKNOWLEDGE.key, body),
                               on_answer=lambda call: self._acknowledge_answered(call, node_id, session, acks,
                                                                                 commits),
                               what=f"ShareAcknowledge to node {node_id}"), now_ms)

    def _close_sessions(self, now_ms: int) -> None:
        state = self.state
        for node_id, acks in list(state.acks.items()):  # acknowledgements for a broker with no open session fail
            session = self.sessions.get(node_id)
            if acks and (session is None or not session.acks_allowed) and (session is None or
                                                                            session.in_flight is None):
                failed = state.commits.pop(node_id, [])
                self._acks_failed(state.acks.pop(node_id), KafkaError(
                    f"acknowledgements not sent: no share session with node {node_id}"), failed)
                for commit in failed:
                    commit.node_done(node_id)
        for node_id, session in self.sessions.items():
            if session.in_flight is None and not session.closed and session.acks_allowed:
                self._send_acknowledge(node_id, session, now_ms, close=True)
        if not state.closed and self.closed_enough():
            state.closed = True
            state.lock.notify_all()

    def closed_enough(self) -> bool:
        """With the lock held, closing: every session closed and answered, the member out of the group."""
        member = self.member
        sessions_done = all(s.in_flight is None and (s.closed or not s.acks_allowed) for s in self.sessions.values())
        return sessions_done and not member.in_flight and member.state in (LEFT, FATAL, UNSUBSCRIBED)

    def _fetch_handler(self, node_id: int, session: ShareSession, acks: dict[TopicIdPartition, Acknowledgements],
                       commits: list[Commit]) -> Callable[[Call], None]:
        return lambda call: self._fetch_answered(call, node_id, session, acks, commits)

    def _fetch_answered(self, call: Call, node_id: int, session: ShareSession,
                        acks: dict[TopicIdPartition, Acknowledgements], commits: list[Commit]) -> None:
        state = self.state

        def fetched(tip: TopicIdPartition, p: dict[str, Any]) -> None:
            if p["error_code"]:
                self._partition_error(tip, p["error_code"], p["error_message"])
            elif p["acquired_records"]:
                name = state.names.get(tip[0])
                if name is not None:
                    state.buffer.append(Fetched(node_id, tip, TopicPartition(name, tip[1]), p["records"],
                                                [(a["first_offset"], a["last_offset"], a["delivery_count"])
                                                 for a in p["acquired_records"]]))

        self._answered(call, node_id, session, acks, commits, "acknowledge_error_code", fetched)

    def _acknowledge_answered(self, call: Call, node_id: int, session: ShareSession,
                              acks: dict[TopicIdPartition, Acknowledgements], commits: list[Commit]) -> None:
        self._answered(call, node_id, session, acks, commits, "error_code", None)

    def _answered(self, call: Call, node_id: int, session: ShareSession,
                  acks: dict[TopicIdPartition, Acknowledgements], commits: list[Commit], ack_code: str,
                  on_partition: Callable[[TopicIdPartition, dict[str, Any]], None] | None) -> None:
        """A ShareFetch's or ShareAcknowledge's answer (or failure): the session's epoch moves on, each partition's
        acknowledgements are answered from its `ack_code` field (and its message, the same name with "message"),
        on_partition sees each partition answered (a fetch's records), the commits served learn this node is done."""
        state = self.state
        ack_message = ack_code.replace("code", "message")
        with state.lock:
            body = call.response if call.error is None else None
            if body is None:
                error = call.error or KafkaError(f"{call.name}: no answer")
                if isinstance(error, RequestEncodeError):  # never sent: the session's epoch did not move
                    session.on_unsent()
                    error = self._unsendable(node_id, acks, error)
                else:
                    session.on_answer(None)
                    self.calls.router.failed(Broker(node_id), error)
                self._acks_failed(acks, error, commits)
            else:
                top = body["error_code"]
                session.on_answer(top)
                if top:
                    self._top_level_error(node_id, acks, top, body.get("error_message"), commits)
                else:
                    answered: set[TopicIdPartition] = set()
                    for topic in body["responses"]:
                        for p in topic["partitions"]:
                            tip = (topic["topic_id"], p["partition_index"])
                            answered.add(tip)
                            if tip in acks:
                                code = p[ack_code]
                                self._ack_result(tip, acks[tip], error_for(code, p[ack_message]) if code else None,
                                                 commits)
                            if on_partition is not None:
                                on_partition(tip, p)
                    for tip, ack in acks.items():
                        if tip not in answered:
                            self._ack_result(tip, ack, None, commits)
            for commit in commits:
                commit.node_done(node_id)
            state.lock.notify_all()
        self._wake_caller()

    @staticmethod
    def _unsendable(node_id: int, acks: dict[TopicIdPartition, Acknowledgements],
                    error: KafkaError) -> KafkaError:
        """Why acknowledgements could not be written for this broker: RENEW needs ShareAcknowledge v2."""
        if _renews(acks):
            return UnsupportedVersionError(
                f"AcknowledgeType.RENEW is not supported by broker {node_id}: it needs ShareAcknowledge v2 "
                f"(KIP-1222, Apache Kafka 4.2+); use ACCEPT, RELEASE or REJECT there ({error})")
        return error

    def _top_level_error(self, node_id: int, acks: dict[TopicIdPartition, Acknowledgements], code: int,
                         message: str | None, commits: list[Commit]) -> None:
        error = error_for(code, message)
        self._acks_failed(acks, error, commits)
        if code in (ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH):
            log.info("share session with node %s lost (%s): opening a new one", node_id, error)
        elif code == ErrorCode.UNSUPPORTED_VERSION:
            self.state.error = unsupported(str(error))
        elif not error.retriable and not kinds_of(code) & ErrorKind.STALE_METADATA:
            self.state.error = error  # e.g. GROUP_AUTHORIZATION_FAILED: poll raises it
        else:
            self.metadata.request_update()

    def _partition_error(self, tip: TopicIdPartition, code: int, message: str | None) -> None:
        error = error_for(code, message)
        if kinds_of(code) & ErrorKind.STALE_METADATA or code == ErrorCode.UNKNOWN_TOPIC_ID:
            self.metadata.request_update()
        elif not error.retriable:
            self.state.error = error
        log.debug("share fetch of %s: %s", tip, error)

    def _ack_result(self, tip: TopicIdPartition, ack: Acknowledgements, error: KafkaError | None,
                    commits: list[Commit]) -> None:
        """One partition's acknowledgements answered: for the callback, and the result of the commits they served."""
        tp = TopicPartition(self.state.names.get(tip[0], str(tip[0])), tip[1])
        self.state.results.append(({tp: set(ack.types)}, error))
        for commit in commits:
            if error is not None or tp not in commit.results:
                commit.results[tp] = error

    def _acks_failed(self, acks: dict[TopicIdPartition, Acknowledgements], error: KafkaError,
                     commits: list[Commit]) -> None:
        for tip, ack in acks.items():
            self._ack_result(tip, ack, error, commits)
