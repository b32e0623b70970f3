"""A consumer's membership in a consumer group of KIP-848's protocol (`group.protocol=consumer`; Java's
ConsumerMembershipManager, AbstractMembershipManager and ConsumerHeartbeatRequestManager's HeartbeatState), sans-I/O:
no sockets, no threads, no clock reads, no randomness (the member id comes in). Pure Python: it runs a few times per
heartbeat interval, never per record.

It offers the shell the same calls as the classic member (core/group.py's GroupMember; cykafka/consumer_group.py
drives either): subscribe / subscribe_pattern, update_metadata, coordinator_found / take_coordinator_lost,
take_events / events_handled, next_request, on_response / on_failure / on_offsets_answer, poll, close, commit_request,
offset_fetch_request. Only one request of its own goes out: ConsumerGroupHeartbeat.

The protocol (KIP-848): the broker owns the assignment. The member's id is its own (v1), kept for its lifetime; it
joins with epoch 0 and its full state (subscribed topic names, or a regex the broker evaluates; rack; the
max.poll.interval.ms as rebalance timeout; group.remote.assignor; an empty owned list), then heartbeats every
`heartbeat_interval_ms` the broker returns, carrying only what changed since the last heartbeat that was answered
(Java's sentFields; after an error or no answer, everything again). An answer may carry the member's whole target
assignment, by topic id: the member resolves the ids to names through the shell's metadata (topic ids, Metadata v10+;
unresolved ones wait for the next update) and reconciles, as Java's new consumer: the partitions no longer assigned
are revoked (event "revoked": the shell commits them with auto commit, then calls on_partitions_revoked), the new ones
added (event "assigned", with the added partitions, empty on the first assignment after a join: on_partitions_assigned),
and once the shell has handled those events the next heartbeat, sent at once, acknowledges the partitions now owned.
A partition moving to another member is given to it by the broker only after this member acknowledged its release,
so the members keeping theirs never stop.

Errors (the one error table): FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID (kind MEMBER_FENCED) -> the owned partitions
are lost (event "lost": on_partitions_lost) and the member joins again with epoch 0 and the same id; the coordinator
moved or is loading, a retriable code, or no answer -> the heartbeat goes again after retry_backoff_ms with the full
state (the shell looks a moved coordinator up again); any other code (UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
GROUP_MAX_SIZE_REACHED, GROUP_AUTHORIZATION_FAILED, ...) is fatal: the owned partitions are lost and every later
`next_request` raises the typed error (the consumer's poll raises it). Commits and offset fetches carry the member id
and epoch (OffsetCommit v9, OffsetFetch v9); an answer STALE_MEMBER_EPOCH sends a heartbeat at once (the request
layer asks again, built with the epoch it brings).

Leaving: close() revokes what is owned (lost when fenced), and once those events are handled and the commits built
here answered, a heartbeat with epoch -1 (a static member, group.instance.id: -2, the broker keeps its partitions for
it for the session timeout) leaves. max.poll.interval.ms without a poll(): the member leaves with epoch -1, and the
next poll() reports its partitions lost and joins again (Java's STALE state).

States (ConsumerMemberState, Java's MemberState) change only through TRANSITIONS, one table of
(event, from state) -> to state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cykafka.core.group import GroupEvent, GroupMember
from cykafka.errors import IllegalStateError, KafkaError
from cykafka.protocol import apis
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, kinds_of
from cykafka.protocol.frames import Request

if TYPE_CHECKING:  # the generated bodies are for mypy only
    from cykafka.protocol.bodies import OffsetCommitRequestBody

TP = tuple[str, int]
TopicIdPartition = tuple[UUID, int]
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
_FIRST_HEARTBEAT_INTERVAL_MS = 5_000  # until the broker says (group.consumer.heartbeat.interval.ms's default)


class ConsumerMemberState(Enum):
    """Java's MemberState, as this member uses it."""

    UNSUBSCRIBED = "unsubscribed"  # not in the group
    JOINING = "joining"  # heartbeats with epoch 0 until the broker answers with an epoch
    RECONCILING = "reconciling"  # a target assignment differs from what is owned: events out, waiting to be handled
    ACKNOWLEDGING = "acknowledging"  # reconciled: the next heartbeat, at once, names what is owned now
    STABLE = "stable"  # owns its target assignment; heartbeats every interval
    FENCED = "fenced"  # the broker forgot it: its partitions are reported lost, then it joins again
    STALE = "stale"  # left for max.poll.interval.ms: joins again at the next poll()
    PREPARE_LEAVING = "prepare_leaving"  # closing: its partitions revoked (events), then the leave heartbeat
    LEAVING = "leaving"  # the leave heartbeat is to go or went
    FATAL = "fatal"  # a fatal error: every next_request raises it


class ConsumerMemberEvent(Enum):
    """What moves the member from one ConsumerMemberState to another (the only inputs of TRANSITIONS)."""

    SUBSCRIBE = "subscribed: join the group"
    NEW_TARGET = "a heartbeat answer brought a target assignment to reconcile"
    RECONCILED = "the reconciliation's events were handled: acknowledge"
    ACKNOWLEDGED = "the heartbeat naming the owned partitions went and the target is reached"
    FENCE = "FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: partitions lost"
    REJOIN = "join again with epoch 0 (after fenced, or a poll after max.poll.interval.ms)"
    POLL_EXPIRED = "no poll() for max.poll.interval.ms: leave"
    LEAVE = "close() or unsubscribe(): revoke, then leave"
    LEAVE_SENT = "the leave heartbeat is to go"
    LEFT = "out of the group"
    FAIL = "a fatal error"


_S, _V = ConsumerMemberState, ConsumerMemberEvent
_IN_GROUP = (_S.JOINING, _S.RECONCILING, _S.ACKNOWLEDGING, _S.STABLE)
# Every state change of the member, in one table (core/group.py's idiom): event -> {from state: to state}; a pair not
# in it is a bug, raised as IllegalStateError.
TRANSITIONS: dict[ConsumerMemberEvent, dict[ConsumerMemberState, ConsumerMemberState]] = {
    _V.SUBSCRIBE: {_S.UNSUBSCRIBED: _S.JOINING},  # (also when subscribe() came while an unsubscribe's leave was out)
    _V.NEW_TARGET: {state: _S.RECONCILING for state in _IN_GROUP},
    _V.RECONCILED: {_S.RECONCILING: _S.ACKNOWLEDGING},
    _V.ACKNOWLEDGED: {_S.ACKNOWLEDGING: _S.STABLE},
    _V.FENCE: {state: _S.FENCED for state in (*_IN_GROUP, _S.FENCED)},
    _V.REJOIN: {_S.FENCED: _S.JOINING, _S.STALE: _S.JOINING},
    _V.POLL_EXPIRED: {state: _S.STALE for state in _IN_GROUP},
    _V.LEAVE: {state: _S.PREPARE_LEAVING for state in (*_IN_GROUP, _S.FENCED, _S.STALE)},
    _V.LEAVE_SENT: {_S.PREPARE_LEAVING: _S.LEAVING},
    _V.LEFT: {_S.PREPARE_LEAVING: _S.UNSUBSCRIBED, _S.LEAVING: _S.UNSUBSCRIBED},
    _V.FAIL: {state: _S.FATAL for state in ConsumerMemberState},
}


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    """The consumer config keys the consumer group protocol reads (names as in Kafka, Java's defaults)."""

    group_id: str
    member_id: str  # the member's own id for its lifetime (Java: a random Uuid's text), made by the shell
    max_poll_interval_ms: int = 300_000  # max.poll.interval.ms, also the heartbeat's rebalance timeout
    group_instance_id: str | None = None  # group.instance.id: static membership
    remote_assignor: str | None = None  # group.remote.assignor (None: the broker's default)
    retry_backoff_ms: int = 100  # retry.backoff.ms
    client_rack: str | None = None  # client.rack


class ConsumerGroupMember:
    """One consumer's membership in a KIP-848 group; see the module docstring."""

    def __init__(self, settings: ConsumerGroupSettings) -> None:
        self.settings = settings
        self.state = ConsumerMemberState.UNSUBSCRIBED
        self.member_id = settings.member_id
        self.member_epoch = JOIN_EPOCH
        self.heartbeat_interval_ms = _FIRST_HEARTBEAT_INTERVAL_MS
        self.has_coordinator = False
        self._coordinator_lost = False
        self.assignment: frozenset[TP] = frozenset()  # owned, by name
        self._owned_ids: frozenset[TopicIdPartition] = frozenset()  # owned, by topic id (what heartbeats name)
        self._target: frozenset[TopicIdPartition] | None = None  # the broker's last target (None: none yet)
        self._first_target = True  # the first target after a join is reconciled even when empty (assigned event)
        self._names: dict[UUID, str] = {}  # topic id -> name, from the metadata
        self._unresolved = False  # the target names topic ids the metadata does not know yet
        self._topics: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self._events: list[GroupEvent] = []
        self._events_held = False
        self._reconciled = False  # the events out are a reconciliation's: handled, the member acknowledges
        self._lost_rejoin = False  # the events out are a fencing's: handled, the member joins again
        self._sent: dict[str, Any] = {}  # the fields the last heartbeat carried (Java's sentFields); {}: send all
        self._in_flight = False  # a heartbeat awaits its answer
        self._leave_out = False  # that heartbeat is a leave (epoch -1 or -2)
        self._heartbeat_due_ms = 0
        self._commits_in_flight = 0
        self._last_poll_ms: int | None = None
        self._closing = False
        self._reopen = False
        self._leave_epoch: int | None = None  # the leave heartbeat to send (closing, or max.poll.interval.ms)
        self._fatal: KafkaError | None = None
        self._error: KafkaError | None = None  # raised once by next_request

    # -- the shell's inputs (as core/group.py's GroupMember) -------------------------------------------------------

    @property
    def generation_id(self) -> int:
        """The member epoch (what a commit carries where the classic protocol carries the generation)."""
        return self.member_epoch

    @property
    def stable(self) -> bool:
        return self.state is ConsumerMemberState.STABLE

    def subscribe(self, topics: Iterable[str]) -> None:
        self._pattern = None
        self._subscribed(frozenset(topics))

    def subscribe_pattern(self, pattern: str | re.Pattern[str]) -> None:
        """Subscribe by a regex the broker evaluates (SubscribedTopicRegex, RE2/J syntax; full-name match)."""
        self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self._subscribed(frozenset())

    def _subscribed(self, topics: frozenset[str]) -> None:
        self._topics = topics
        if self.state is ConsumerMemberState.UNSUBSCRIBED and not self._closing:
            self._transition(ConsumerMemberEvent.SUBSCRIBE)
            self._join()
        self._heartbeat_due_ms = 0  # the change goes with the next heartbeat, now

    @property
    def subscription(self) -> frozenset[str]:
        """The subscribed topics (for a pattern: the topics of the partitions owned)."""
        return self._topics if self._pattern is None else frozenset(t for t, _ in self.assignment)

    def metadata_topics(self) -> frozenset[str] | None:
        """Topics whose metadata the shell should keep fresh (their ids resolve the assignment); None: every topic
        (a pattern: the broker names topics by id the member cannot foresee)."""
        if self._pattern is not None:
            return None
        return self._topics | {t for t, _ in self.assignment}

    @property
    def wants_metadata(self) -> bool:
        """The target names a topic id the metadata does not know yet."""
        return self._unresolved

    def update_metadata(self, partition_counts: Mapping[str, int], now_ms: int,
                        topic_ids: Mapping[str, UUID] | None = None) -> None:
        """Fresh metadata; topic_ids (topic -> id) resolve the assignment's ids."""
        if topic_ids:
            self._names.update({topic_id: name for name, topic_id in topic_ids.items()})
        if self._unresolved:
            self._maybe_reconcile()

    def poll(self, now_ms: int) -> None:
        """The user called poll(): restarts the max.poll.interval.ms timer; after leaving on it, joins again."""
        self._last_poll_ms = now_ms
        if self.state is ConsumerMemberState.STALE and self._leave_epoch is None and not self._in_flight:
            self._transition(ConsumerMemberEvent.REJOIN)
            self._join()

    def take_events(self, hold: bool = False) -> list[GroupEvent]:
        events, self._events = self._events, []
        self._events_held = hold and bool(events)
        if not hold:
            self._after_events()
        return events

    def events_handled(self) -> None:
        self._events_held = False
        self._after_events()

    @property
    def wants_coordinator(self) -> bool:
        return not self.has_coordinator and (self.state in _IN_GROUP or self.state in (
            ConsumerMemberState.FENCED, ConsumerMemberState.PREPARE_LEAVING, ConsumerMemberState.LEAVING)
            or self._leave_epoch is not None)

    def coordinator_found(self, now_ms: int) -> None:
        self.has_coordinator = True
        self._coordinator_lost = False

    def coordinator_lookup_failed(self, error: KafkaError, now_ms: int) -> None:
        self._error = error

    def take_coordinator_lost(self) -> bool:
        lost, self._coordinator_lost = self._coordinator_lost, False
        return lost

    def close(self, now_ms: int) -> None:
        """Leave the group: the owned partitions revoked (lost when fenced), then the leave heartbeat (epoch -1, a
        static member -2); `left` turns True once it was answered (or could not go)."""
        if self._closing:
            return
        self._closing = True
        if self.state in (ConsumerMemberState.UNSUBSCRIBED, ConsumerMemberState.FATAL):
            return
        was = self.state
        self._transition(ConsumerMemberEvent.LEAVE)
        self._event("lost" if was in (ConsumerMemberState.FENCED, ConsumerMemberState.STALE) else "revoked",
                    self.assignment)
        self._set_owned(frozenset(), frozenset())
        self._reconciled = self._lost_rejoin = False
        self._target = None

    def unsubscribe(self, now_ms: int) -> None:
        """As close, and once left the member may subscribe again (same id, epoch 0)."""
        self.close(now_ms)
        self._reopen = True
        self._topics, self._pattern = frozenset(), None

    @property
    def left(self) -> bool:
        return self._closing and self.state in (ConsumerMemberState.UNSUBSCRIBED, ConsumerMemberState.FATAL) \
            and not self._in_flight and not self._commits_in_flight

    # -- decisions ---------------------------------------------------------------------------------------------------

    def next_request(self, now_ms: int) -> Request | None:
        """The next heartbeat to send now, or None. Raises a fatal error every time, any other failure once."""
        if self._fatal is not None:
            raise self._fatal
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        self._check_poll_timer(now_ms)
        s = self.state
        if s is ConsumerMemberState.PREPARE_LEAVING and not self._gated:
            if not self.has_coordinator or (self.member_epoch <= JOIN_EPOCH and not self._in_flight):
                self._left()  # never in the group (or no coordinator to tell): nothing to send
                return None
            self._transition(ConsumerMemberEvent.LEAVE_SENT)
            self._leave_epoch = STATIC_LEAVE_EPOCH if self.settings.group_instance_id is not None else LEAVE_EPOCH
        if self._in_flight or not self.has_coordinator:
            return None
        if self._leave_epoch is not None:
            epoch, self._leave_epoch = self._leave_epoch, None
            self._in_flight = self._leave_out = True
            return Request(apis.CONSUMER_GROUP_HEARTBEAT.key, {
                "group_id": self.settings.group_id, "member_id": self.member_id, "member_epoch": epoch,
                "instance_id": self.settings.group_instance_id})
        if s not in _IN_GROUP or now_ms < self._heartbeat_due_ms:
            return None
        self._in_flight = True
        self._heartbeat_due_ms = now_ms + self.heartbeat_interval_ms
        body = self._heartbeat_body()
        if s is ConsumerMemberState.ACKNOWLEDGING and self._target_reached():
            self._transition(ConsumerMemberEvent.ACKNOWLEDGED)
        return Request(apis.CONSUMER_GROUP_HEARTBEAT.key, body)

    def poll_timeout_ms(self, now_ms: int, events_elsewhere: bool = False) -> int:
        """How long the shell may wait before next_request is due (0: now)."""
        if self._error is not None or self._fatal is not None or (self._events and not events_elsewhere):
            return 0
        due = [now_ms + self.heartbeat_interval_ms]
        if self.has_coordinator and not self._in_flight:
            if self._leave_epoch is not None or (self.state is ConsumerMemberState.PREPARE_LEAVING
                                                 and not self._gated):
                due.append(now_ms)
            elif self.state in _IN_GROUP:
                due.append(self._heartbeat_due_ms)
        if self.state in _IN_GROUP and self._last_poll_ms is not None:
            due.append(self._last_poll_ms + self.settings.max_poll_interval_ms + 1)
        return max(0, min(due) - now_ms)

    # -- offsets -----------------------------------------------------------------------------------------------------

    def _in_group_fields(self) -> tuple[str, int]:
        """(member id, epoch) a commit or offset fetch carries: the member's when it has an epoch, else ("", -1)."""
        if self.member_epoch > JOIN_EPOCH and self.state in (*_IN_GROUP, ConsumerMemberState.PREPARE_LEAVING):
            return self.member_id, self.member_epoch
        return "", -1

    def commit_request(self, offsets: Mapping[TP, int | tuple[int, str | None, int]]) -> Request:
        """OffsetCommit (v9) with the member id and epoch (outside the group, -1 and no id: assign() mode)."""
        member_id, epoch = self._in_group_fields()
        body: OffsetCommitRequestBody = {
            "group_id": self.settings.group_id, "generation_id_or_member_epoch": epoch, "member_id": member_id,
            "group_instance_id": self.settings.group_instance_id if member_id else None,
            "topics": apis.offset_commit_topics(offsets)}
        self._commits_in_flight += 1
        return Request(apis.OFFSET_COMMIT.key, body)

    def offset_fetch_member(self) -> tuple[str | None, int]:
        """(member id, epoch) an OffsetFetch (v9) carries: the member's when in the group, else (None, -1)."""
        member_id, epoch = self._in_group_fields()
        return member_id or None, epoch

    # -- answers -----------------------------------------------------------------------------------------------------

    def on_response(self, api_key: int, body: Mapping[str, Any], now_ms: int) -> None:
        """A ConsumerGroupHeartbeat's answer."""
        self._in_flight = False
        code = body["error_code"]
        if self._leave_out:
            self._leave_out = False
            self._left()  # the leave heartbeat's answer, whatever it says
            return
        if self.state not in _IN_GROUP and self.state is not ConsumerMemberState.PREPARE_LEAVING:
            return  # an answer to a heartbeat sent before the member left or was fenced
        if code != ErrorCode.NONE:
            self._on_error(code, body.get("error_message"), now_ms)
            return
        if body.get("member_id"):
            self.member_id = body["member_id"]
        self.member_epoch = body["member_epoch"]
        if body["heartbeat_interval_ms"] > 0:
            self.heartbeat_interval_ms = body["heartbeat_interval_ms"]
            self._heartbeat_due_ms = min(self._heartbeat_due_ms, now_ms + self.heartbeat_interval_ms)
        if self.state is ConsumerMemberState.PREPARE_LEAVING:
            return
        assignment = body.get("assignment")
        if assignment is not None:
            self._target = frozenset((t["topic_id"], p) for t in assignment["topic_partitions"]
                                     for p in t["partitions"])
        self._maybe_reconcile()

    def on_offsets_answer(self, api_key: int, codes: Iterable[int], now_ms: int) -> None:
        """An OffsetCommit's (from commit_request) or OffsetFetch's error codes: a stale epoch or a fenced member
        makes the next heartbeat go now (it brings the epoch, or the fencing); a moved coordinator is looked up."""
        if api_key == apis.OFFSET_COMMIT.key:
            self._commits_in_flight = max(0, self._commits_in_flight - 1)
        for code in set(codes):
            if code == ErrorCode.STALE_MEMBER_EPOCH or kinds_of(code) & ErrorKind.MEMBER_FENCED:
                self._heartbeat_due_ms = 0
            elif kinds_of(code) & ErrorKind.COORDINATOR_MOVED:
                self._coordinator_unknown()

    def on_failure(self, api_key: int, now_ms: int) -> None:
        """A request this member built got no answer: the coordinator is looked up again; a heartbeat goes again after
        retry.backoff.ms with the full state (a leave heartbeat is not repeated)."""
        if api_key == apis.OFFSET_COMMIT.key:
            self._commits_in_flight = max(0, self._commits_in_flight - 1)
        if api_key == apis.CONSUMER_GROUP_HEARTBEAT.key:
            self._in_flight = False
            if self._leave_out:
                self._leave_out = False
                self._left()
            else:
                self._sent = {}
                self._heartbeat_due_ms = now_ms + self.settings.retry_backoff_ms
        self._coordinator_unknown()

    def _on_error(self, code: int, message: str | None, now_ms: int) -> None:
        context = f"group {self.settings.group_id!r}: ConsumerGroupHeartbeat"
        self._sent = {}  # after an error, the full state again (Java's HeartbeatState.reset)
        kinds = kinds_of(code)
        if kinds & ErrorKind.MEMBER_FENCED:
            self._transition(ConsumerMemberEvent.FENCE)
            self._event("lost", self.assignment)
            self._set_owned(frozenset(), frozenset())
            self._target, self._reconciled, self._lost_rejoin = None, False, True
            self._after_events()
        elif kinds & ErrorKind.COORDINATOR_MOVED:
            self._coordinator_unknown()
            self._heartbeat_due_ms = now_ms + self.settings.retry_backoff_ms
        elif kinds & ErrorKind.COORDINATOR_LOADING or error_for(code).retriable:
            self._heartbeat_due_ms = now_ms + self.settings.retry_backoff_ms
        else:
            self._fail(error_for(code, f"{context}: {message}" if message else context))

    def fail(self, error: KafkaError) -> None:
        """The member cannot go on (e.g. the broker has no ConsumerGroupHeartbeat): raised by every next_request."""
        self._in_flight = self._leave_out = False
        self._fail(error)

    # -- internals ---------------------------------------------------------------------------------------------------

    def _heartbeat_body(self) -> dict[str, Any]:
        """The heartbeat: group, member id, epoch and instance id always (Java's); every other field only when it
        changed since the last heartbeat (all of them when joining or after an error)."""
        s = self.settings
        joining = self.member_epoch == JOIN_EPOCH
        if joining:
            self._sent = {}
        owned = _by_topic(self._owned_ids) if not joining else []
        state: dict[str, Any] = {
            "rack_id": s.client_rack,
            "rebalance_timeout_ms": s.max_poll_interval_ms,
            "subscribed_topic_names": sorted(self._topics) if self._pattern is None else None,
            "subscribed_topic_regex": self._pattern.pattern if self._pattern is not None else None,
            "server_assignor": s.remote_assignor, "topic_partitions": owned}
        body: dict[str, Any] = {"group_id": s.group_id, "member_id": self.member_id,
                                "member_epoch": self.member_epoch, "instance_id": s.group_instance_id}
        for name, value in state.items():
            if name not in self._sent or self._sent[name] != value:
                body[name] = value
        if self._pattern is not None and "subscribed_topic_regex" in body:
            body.pop("subscribed_topic_names", None)
        self._sent = state
        return body

    def _maybe_reconcile(self) -> None:
        """Java's maybeReconcile: with no reconciliation's events out, the target resolved to names; revoked, then
        assigned (as events), then acknowledged once those are handled."""
        if self.state not in _IN_GROUP or self._target is None or self._events or self._events_held \
                or self._reconciled or self._lost_rejoin:
            return
        resolved = frozenset(tip for tip in self._target if tip[0] in self._names)
        self._unresolved = resolved != self._target
        if resolved == self._owned_ids and not self._first_target:
            return  # nothing to change (an acknowledgement still due goes with the next heartbeat)
        if self.state is not ConsumerMemberState.RECONCILING:
            self._transition(ConsumerMemberEvent.NEW_TARGET)
        self._first_target = False
        names = frozenset((self._names[tid], p) for tid, p in resolved)
        self._event("revoked", self.assignment - names)
        self._event("assigned", names - self.assignment, always=True)
        self._set_owned(resolved, names)
        self._reconciled = True

    def _after_events(self) -> None:
        """The events out were handled (or taken without hold): acknowledge a reconciliation, rejoin after fencing."""
        if self._events or self._events_held:
            return
        if self._reconciled:
            self._reconciled = False
            if self.state is ConsumerMemberState.RECONCILING:
                self._transition(ConsumerMemberEvent.RECONCILED)
                self._heartbeat_due_ms = 0  # acknowledge at once
        if self._lost_rejoin:
            self._lost_rejoin = False
            if self.state is ConsumerMemberState.FENCED:
                self._transition(ConsumerMemberEvent.REJOIN)
                self._join()
        if self.state in _IN_GROUP:
            self._maybe_reconcile()  # a target that came while the events were out

    def _target_reached(self) -> bool:
        return self._target is not None and frozenset(t for t in self._target if t[0] in self._names) \
            == self._owned_ids

    def _join(self) -> None:
        self.member_epoch, self._sent, self._heartbeat_due_ms = JOIN_EPOCH, {}, 0
        self._target, self._first_target, self._unresolved = None, True, False

    def _left(self) -> None:
        if self.state in (ConsumerMemberState.LEAVING, ConsumerMemberState.PREPARE_LEAVING):
            self._transition(ConsumerMemberEvent.LEFT)
            self.member_epoch = JOIN_EPOCH
            if self._reopen:
                self._closing = self._reopen = False
                if self._topics or self._pattern is not None:  # subscribed again while the leave was out
                    self._transition(ConsumerMemberEvent.SUBSCRIBE)
                    self._join()

    def _check_poll_timer(self, now_ms: int) -> None:
        if self.state in _IN_GROUP and not self._closing and self._last_poll_ms is not None \
                and now_ms - self._last_poll_ms > self.settings.max_poll_interval_ms:
            self._transition(ConsumerMemberEvent.POLL_EXPIRED)
            self._event("lost", self.assignment)  # taken by the next poll(), before it joins again
            self._set_owned(frozenset(), frozenset())
            self._target, self._reconciled = None, False
            self._leave_epoch = LEAVE_EPOCH if self.member_epoch > JOIN_EPOCH else None

    @property
    def _gated(self) -> bool:
        return bool(self._events) or self._events_held or self._commits_in_flight > 0

    def _set_owned(self, ids: frozenset[TopicIdPartition], names: frozenset[TP]) -> None:
        self._owned_ids, self.assignment = ids, names

    def _event(self, kind: str, partitions: Iterable[TP], always: bool = False) -> None:
        tps = tuple(sorted(partitions))
        if tps or always:
            self._events.append(GroupEvent(kind, tps))

    def _fail(self, error: KafkaError) -> None:
        self._fatal = error
        if self.state is not ConsumerMemberState.FATAL:
            self._transition(ConsumerMemberEvent.FAIL)
        self._event("lost", self.assignment)
        self._set_owned(frozenset(), frozenset())

    def _coordinator_unknown(self) -> None:
        if self.has_coordinator:
            self.has_coordinator = False
            self._coordinator_lost = True

    def _transition(self, event: ConsumerMemberEvent) -> None:
        to = TRANSITIONS[event].get(self.state)
        if to is None:
            raise IllegalStateError(f"group {self.settings.group_id!r}: {event.value} in state {self.state.name}: "
                                    f"no such transition")
        self.state = to


Membership = GroupMember | ConsumerGroupMember  # what the consumer's group driver and coordinator drive


def _by_topic(tips: Iterable[TopicIdPartition]) -> list[dict[str, Any]]:
    """Topic-id partitions as the heartbeat's topic_partitions, sorted."""
    out: dict[UUID, list[int]] = {}
    for topic_id, partition in sorted(tips, key=lambda t: (str(t[0]), t[1])):
        out.setdefault(topic_id, []).append(partition)
    return [{"topic_id": t, "partitions": ps} for t, ps in out.items()]
