"""A consumer's membership in a classic consumer group (Java's AbstractCoordinator + ConsumerCoordinator), sans-I/O:
no sockets, no threads, no clock reads. Time comes in as `now_ms`; requests go out as decisions; answers come back as
decoded dicts. Pure Python: it runs a few times per heartbeat interval, never per record.

The shell's loop (one `GroupMember` per consumer; cykafka/consumer_group.py is the consumer's):

    member.subscribe(topics) / member.subscribe_pattern(regex)
    while ...:
        member.update_metadata(partition_counts, now_ms)   # when fresh; `wants_metadata`, `metadata_topics()` say when
        the coordinator: member.coordinator_found(now_ms) once the shell knows it (it looks it up while
                         `wants_coordinator`; a lookup failed for good: coordinator_lookup_failed(error, now_ms)),
                         and forgets it when take_coordinator_lost() says the member decided it is gone
        for event in member.take_events():                 # revoked / assigned / lost: the rebalance listener, and
            ...                                            #   commits of revoked partitions (commit_request)
        while (request := member.next_request(now_ms)) is not None:
            send request to the group's coordinator
        ...on an answer: member.on_response(api_key, body, now_ms); on a disconnect/timeout: member.on_failure(...);
           an OffsetCommit's or OffsetFetch's answer: member.on_offsets_answer(api_key, error codes, now_ms)
        wait at most member.poll_timeout_ms(now_ms)
    on each user poll(): member.poll(now_ms);   on close: member.close(now_ms), then send what next_request gives

The coordinator itself is not the member's: the shell's coordinator cache (cykafka/requests/coordinators.py, one for
groups and transactions) looks it up with FindCoordinator and keeps it; the member only knows whether it is known.

The flow (Java's): the coordinator -> JoinGroup (KIP-394: a first join with an empty member id is answered
MEMBER_ID_REQUIRED with the id to use; we join again with it at once) -> the leader runs the assignor the group chose
(`protocol_name`) over the members' subscriptions and the partition counts -> SyncGroup -> assignment -> Heartbeat
every heartbeat.interval.ms (counted from the last one sent; retry.backoff.ms after a failed one).

Errors (from the one error table): REBALANCE_IN_PROGRESS -> rejoin keeping the generation; UNKNOWN_MEMBER_ID and
ILLEGAL_GENERATION -> forget the member id and generation and rejoin (what was owned is reported lost);
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a disconnect or no heartbeat answer within session.timeout.ms -> find the
coordinator again; COORDINATOR_LOAD_IN_PROGRESS -> retry after retry.backoff.ms; FENCED_INSTANCE_ID -> fatal (every
later `next_request` raises it); any other error -> raised once by the next `next_request`, as Java's poll() raises.

States (MemberState) change only through TRANSITIONS, one table of (event, from state) -> to state: JOIN_SENT ->
PREPARING_REBALANCE, JOINED -> COMPLETING_REBALANCE, SYNCED -> STABLE, OUT -> UNJOINED.

Rebalance protocol (the highest all configured assignors support): EAGER revokes everything before joining;
COOPERATIVE (KIP-429) keeps its partitions while rejoining, revokes only those the new assignment moves away, and
rejoins at once when it revoked any so they can be handed over. Events come out in Java's listener order and only
between requests: `next_request` sends no JoinGroup or LeaveGroup while events wait in `take_events()` or an
OffsetCommit built here is unanswered, so a shell that commits on revoke commits before the group moves on.

max.poll.interval.ms: if `poll()` was not called for longer while in the group, the member leaves (LeaveGroup unless
static) and forgets its generation; it joins again at the next `poll()`, reporting its partitions lost. Static members
(group.instance.id) send no LeaveGroup, on close neither (Java's rule: their partitions wait out the session).
Metadata: when a pattern matches a new topic the subscription changes and the member rejoins; the leader also rejoins
when a partition count of any topic in the group's subscription differs from the one it assigned with.

Coordinator connection: as Java, the shell sends to the coordinator on a connection of its own (the coordinator
cache's dedicated group connections), so a JoinGroup the broker holds never delays fetches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple
from uuid import UUID

from cykafka.core.assignors import (
    ASSIGNORS,
    TP,
    Member,
    RebalanceProtocol,
    member_generation,
    rebalance_protocol,
    subscription_user_data,
)
from cykafka.errors import IllegalStateError, InvalidArgumentError, KafkaError, ProtocolError
from cykafka.protocol import apis
from cykafka.protocol.consumer_protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, kinds_of
from cykafka.protocol.frames import Request

if TYPE_CHECKING:  # the generated bodies are for mypy only
    from cykafka.protocol.bodies import OffsetCommitRequestBody

NO_GENERATION = -1
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})  # never matched by a pattern (Java)
_RESET = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION})


class MemberState(Enum):
    """Java's MemberState."""

    UNJOINED = "unjoined"  # not in the group (or left it)
    PREPARING_REBALANCE = "preparing_rebalance"  # JoinGroup sent
    COMPLETING_REBALANCE = "completing_rebalance"  # joined; SyncGroup to send or sent
    STABLE = "stable"  # assignment received; heartbeating


class MemberEvent(Enum):
    """What moves the member from one MemberState to another (the only inputs of TRANSITIONS)."""

    JOIN_SENT = "a JoinGroup went out"
    JOINED = "the JoinGroup was answered with a generation"
    SYNCED = "the SyncGroup was answered with an assignment"
    OUT = "out of the group: a join or sync failed or is to be retried, the generation was reset, or it left"


_S, _V = MemberState, MemberEvent
# Every state change of the member, in one table (h11's idiom): event -> {from state: to state}. A pair not in it is a
# bug, raised as IllegalStateError. The less obvious rows: a JoinGroup goes out from STABLE (a rejoin; cooperative
# members stay STABLE while they wait for it) and from COMPLETING_REBALANCE (the leader met an assignor it does not
# know and rejoins at once); a join or sync answer may find the member UNJOINED (an answer to an earlier request
# reset its generation meanwhile: the answer still stands, as before this table).
TRANSITIONS: dict[MemberEvent, dict[MemberState, MemberState]] = {
    _V.JOIN_SENT: {_S.UNJOINED: _S.PREPARING_REBALANCE, _S.STABLE: _S.PREPARING_REBALANCE,
                   _S.COMPLETING_REBALANCE: _S.PREPARING_REBALANCE},
    _V.JOINED: {_S.PREPARING_REBALANCE: _S.COMPLETING_REBALANCE, _S.UNJOINED: _S.COMPLETING_REBALANCE},
    _V.SYNCED: {_S.COMPLETING_REBALANCE: _S.STABLE, _S.UNJOINED: _S.STABLE},
    _V.OUT: {state: _S.UNJOINED for state in MemberState},
}


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The consumer config keys the group protocol reads (names as in Kafka, Java's defaults)."""

    group_id: str
    session_timeout_ms: int = 45_000  # session.timeout.ms
    heartbeat_interval_ms: int = 3_000  # heartbeat.interval.ms
    max_poll_interval_ms: int = 300_000  # max.poll.interval.ms (also JoinGroup's rebalance timeout)
    group_instance_id: str | None = None  # group.instance.id: static membership
    assignors: tuple[str, ...] = ("range", "cooperative-sticky")  # partition.assignment.strategy, preferred first
    retry_backoff_ms: int = 100  # retry.backoff.ms
    client_rack: str | None = None  # client.rack, sent in the subscription (v3)

    def __post_init__(self) -> None:
        unknown = [a for a in self.assignors if a not in ASSIGNORS]
        if not self.assignors or unknown:
            raise InvalidArgumentError(f"partition.assignment.strategy: {unknown or 'empty'} not accepted; accepted: "
                                       f"{', '.join(ASSIGNORS)} (one or more, preferred first)")


class GroupEvent(NamedTuple):
    """For the rebalance listener: kind "revoked", "assigned" or "lost", and the partitions, sorted."""

    kind: str
    partitions: tuple[TP, ...]


class GroupMember:
    """One consumer's group membership; see the module docstring for the loop and the rules."""

    def __init__(self, settings: GroupSettings) -> None:
        self.settings = settings
        self.protocol = rebalance_protocol(settings.assignors)
        self.state = MemberState.UNJOINED
        self.member_id = ""
        self.generation_id = NO_GENERATION
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.has_coordinator = False  # the shell knows the group's coordinator (coordinator_found)
        self._coordinator_lost = False  # decided here that it is gone: the shell forgets it (take_coordinator_lost)
        self.assignment: frozenset[TP] = frozenset()
        self._topics: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self._joined_topics: frozenset[str] | None = None  # the subscription the last JoinGroup carried
        self._partition_counts: dict[str, int] = {}
        self._metadata_updates = 0
        self._events: list[GroupEvent] = []
        self._events_held = False  # taken with hold, not yet handled: no JoinGroup or LeaveGroup
        self._in_flight: set[int] = set()  # group API keys awaiting an answer (one of each at most)
        self._commits_in_flight = 0
        self._join_after_ms = 0
        self._heartbeat_due_ms = 0
        self._last_heartbeat_ok_ms = 0
        self._last_poll_ms: int | None = None
        self._poll_expired = False  # left for max.poll.interval.ms: no rejoin before the next poll()
        self._rejoin_reason: str | None = "initial join"
        self._needs_join_prepare = True
        self._sync_body: dict[str, Any] | None = None  # the SyncGroup to send
        self._leader_waits_since = -1  # the metadata update count a waiting leader needs to exceed
        self._leader_members: list[Member] = []
        self._group_topics: frozenset[str] = frozenset()  # the leader's view of everyone's topics
        self._assigned_with: dict[str, int] | None = None  # the leader's partition counts at assignment
        self._closing = False
        self._close_pending = False  # closing: the LeaveGroup (if any) is still to go
        self._reopen = False  # unsubscribe: a member again once it has left
        self._leave_body: dict[str, Any] | None = None  # the LeaveGroup after max.poll.interval.ms
        self._error: KafkaError | None = None  # raised once by next_request
        self._fatal: KafkaError | None = None  # raised by every next_request

    # -- the shell's inputs ------------------------------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to these topics (replacing any earlier subscription); a change rejoins the group."""
        self._pattern = None
        self._set_topics(frozenset(topics))

    def subscribe_pattern(self, pattern: str | re.Pattern[str]) -> None:
        """Subscribe to every topic whose whole name matches (internal topics excepted), as metadata shows them."""
        self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self._set_topics(self._matching(self._partition_counts))

    @property
    def subscription(self) -> frozenset[str]:
        return self._topics

    def _matching(self, topics: Iterable[str]) -> frozenset[str]:
        assert self._pattern is not None
        return frozenset(t for t in topics if t not in INTERNAL_TOPICS and self._pattern.fullmatch(t))

    def _set_topics(self, topics: frozenset[str]) -> None:
        if topics != self._topics:
            self._topics = topics
            if self._joined_topics is not None and topics != self._joined_topics:
                self._request_rejoin("subscription changed")

    def metadata_topics(self) -> frozenset[str] | None:
        """Topics whose metadata the shell should keep fresh (None: every topic, for a pattern); the leader adds
        every member's topics, as Java does."""
        if self._pattern is not None:
            return None
        return self._topics | self._group_topics

    @property
    def wants_metadata(self) -> bool:
        """True while the leader waits for a metadata update before it can assign."""
        return self._leader_waits_since >= 0

    def update_metadata(self, partition_counts: Mapping[str, int], now_ms: int,
                        topic_ids: Mapping[str, UUID] | None = None) -> None:
        """Fresh metadata: {topic: partition count} for the topics asked (absent: the topic does not exist); topic_ids
        are for the consumer protocol's member (core/consumer_member.py), unused here."""
        self._partition_counts = dict(partition_counts)
        self._metadata_updates += 1
        if self._pattern is not None:
            self._set_topics(self._matching(partition_counts))
        if 0 <= self._leader_waits_since < self._metadata_updates and self._sync_body is not None:
            self._assign()
        if self._assigned_with is not None and self.state is MemberState.STABLE:
            if {t: partition_counts.get(t, 0) for t in self._assigned_with} != self._assigned_with:
                self._request_rejoin("partition counts of the group's topics changed")

    def poll(self, now_ms: int) -> None:
        """The user called poll(): restarts the max.poll.interval.ms timer; after leaving on it, reports the partitions
        lost at once (take_events) and rejoins."""
        self._last_poll_ms = now_ms
        if self._poll_expired:
            self._poll_expired = False
            self._request_rejoin("polled again after max.poll.interval.ms")
            if self._needs_join_prepare:  # Java's onJoinPrepare in this poll: lost before any record is handed out
                self._join_prepare()

    def take_events(self, hold: bool = False) -> list[GroupEvent]:
        """The rebalance listener's events so far, oldest first. Taking them lets a JoinGroup or LeaveGroup go; with
        hold, not before `events_handled()` (Java runs the listener, and its commits, before the JoinGroup)."""
        events, self._events = self._events, []
        self._events_held = hold and bool(events)
        return events

    def events_handled(self) -> None:
        """The events taken with hold are handled (listener run, its commits built): the group may move on."""
        self._events_held = False

    @property
    def stable(self) -> bool:
        """In the group with an assignment (a rebalance ended)."""
        return self.state is MemberState.STABLE

    def offset_fetch_member(self) -> tuple[str | None, int]:
        """(member id, epoch) an OffsetFetch v9 carries: none for a classic member (KIP-848's fields)."""
        return None, -1

    @property
    def wants_coordinator(self) -> bool:
        """The shell should look the coordinator up: the member is in (or joining) a group and does not know it."""
        return not self.has_coordinator and not self._closing and self._subscribed()

    def coordinator_found(self, now_ms: int) -> None:
        """The shell knows the group's coordinator (found, or found again after a move): requests may go."""
        self.has_coordinator = True
        self._coordinator_lost = False
        self._last_heartbeat_ok_ms = now_ms  # the session timer starts over with the coordinator

    def coordinator_lookup_failed(self, error: KafkaError, now_ms: int) -> None:
        """The coordinator could not be found (not retriable, e.g. GROUP_AUTHORIZATION_FAILED): raised by the next
        next_request; the shell looks it up again after retry.backoff.ms."""
        self._error = error

    def take_coordinator_lost(self) -> bool:
        """True once after the member decided its coordinator is gone (an answer said it moved, no answer, no
        heartbeat answer for session.timeout.ms): the shell forgets it, so it is looked up again."""
        lost, self._coordinator_lost = self._coordinator_lost, False
        return lost

    def close(self, now_ms: int) -> None:
        """Leave the group (Java's onLeavePrepare, then maybeLeaveGroup): the owned partitions are revoked (lost if
        the generation is gone); once those events are taken and the commits built so far answered, the generation
        is dropped and a LeaveGroup (dynamic members with a known coordinator) comes out of next_request. The
        generation stays valid until then, so the listener can still commit. `left` turns True once nothing more is
        to be sent or awaited."""
        if self._closing:
            return
        self._leave_prepare()
        self._closing = self._close_pending = True

    def unsubscribe(self, now_ms: int) -> None:
        """Stop being a member (Java's unsubscribe): as close, and once the LeaveGroup is out the member can
        subscribe again."""
        self.close(now_ms)
        self._reopen = True
        self._topics = frozenset()
        self._pattern = None

    @property
    def left(self) -> bool:
        """Closing and nothing left to send or await (LeaveGroup answered or not needed, commits answered)."""
        return self._closing and not self._close_pending and not self._in_flight and not self._commits_in_flight

    # -- decisions ---------------------------------------------------------------------------------------------------

    def next_request(self, now_ms: int) -> Request | None:
        """The next request to send now to the group's coordinator, or None; call again until None. Raises a fatal
        error (FENCED_INSTANCE_ID) every time, and any other failure of the group protocol once."""
        if self._fatal is not None:
            raise self._fatal
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        self._check_timers(now_ms)
        if self._close_pending:
            if self._gated:
                return None
            body = self._leave_request("the consumer is being closed") if self.has_coordinator else None
            self._close_pending = False
            self._reset_generation()
            self._closing = not self._reopen
            self._reopen = False
            if body is not None and self.has_coordinator:
                return self._send(apis.LEAVE_GROUP.key, body)
        if self._closing:
            return None
        if not self.has_coordinator:
            self._leave_body = None  # Java sends no LeaveGroup without a known coordinator
            return None
        if self._leave_body is not None:
            if self._gated:
                return None
            body, self._leave_body = self._leave_body, None
            return self._send(apis.LEAVE_GROUP.key, body)
        if self._sync_body is not None and not self.wants_metadata:
            body, self._sync_body = self._sync_body, None
            return self._send(apis.SYNC_GROUP.key, body)
        if self._wants_join(now_ms):
            if self._needs_join_prepare:
                self._join_prepare()
            if not self._gated:
                out = self._send(apis.JOIN_GROUP.key, self._join_body())
                self._joined_topics = self._topics
                self._rejoin_reason = None  # a rejoin asked for from now on takes another JoinGroup
                return out
        if self.state is MemberState.STABLE and apis.HEARTBEAT.key not in self._in_flight \
                and now_ms >= self._heartbeat_due_ms:
            self._heartbeat_due_ms = now_ms + self.settings.heartbeat_interval_ms
            return self._send(apis.HEARTBEAT.key, self._member_fields())
        return None

    def poll_timeout_ms(self, now_ms: int, events_elsewhere: bool = False) -> int:
        """How long the shell may wait before the next call to next_request is due (0: now). Waiting events make it 0,
        unless events_elsewhere: another thread takes them (a network thread must not spin until it does)."""
        s = self.settings
        if self._error is not None or self._fatal is not None or (self._events and not events_elsewhere) \
                or (self._close_pending and not self._gated):
            return 0
        due = [now_ms + s.heartbeat_interval_ms]
        if self._closing or not self.has_coordinator:
            pass  # the coordinator's answer (its lookup's) ends the shell's wait
        elif (self._sync_body is not None and not self.wants_metadata) or self._leave_body is not None:
            due.append(now_ms)
        elif self._wants_join(max(now_ms, self._join_after_ms)) and not self._commits_in_flight:
            due.append(self._join_after_ms)
        if self.state is MemberState.STABLE and not self._closing and self.has_coordinator:
            if apis.HEARTBEAT.key not in self._in_flight:
                due.append(self._heartbeat_due_ms)
            due.append(self._last_heartbeat_ok_ms + s.session_timeout_ms + 1)
            if self._last_poll_ms is not None:
                due.append(self._last_poll_ms + s.max_poll_interval_ms + 1)
        return max(0, min(due) - now_ms)

    # -- offsets -----------------------------------------------------------------------------------------------------

    def commit_request(self, offsets: Mapping[TP, int | tuple[int, str | None, int]]) -> Request:
        """OffsetCommit of {(topic, partition): offset or (offset, metadata, leader epoch)} with this member's
        generation and id while it is in the group, leaving included (the revoked partitions' commit of unsubscribe
        and close, Java's onLeavePrepare); else (manual assignment) generation -1 and no member id, as Java. To send
        to the group's coordinator; its answer comes back through on_offsets_answer. Raises REBALANCE_IN_PROGRESS's
        error while a subscribed member is rebalancing (Java's RebalanceInProgressException: the commit could not
        name a generation)."""
        if self._subscribed() and self.state is not MemberState.STABLE:
            raise error_for(ErrorCode.REBALANCE_IN_PROGRESS, f"group {self.settings.group_id!r}: offset commit "
                            "cannot be completed since the consumer is undergoing a rebalance")
        in_group = self.generation_id != NO_GENERATION and bool(self.member_id)
        body: OffsetCommitRequestBody = {
            "group_id": self.settings.group_id,
            "generation_id_or_member_epoch": self.generation_id if in_group else NO_GENERATION,
            "member_id": self.member_id if in_group else "",
            "group_instance_id": self.settings.group_instance_id if in_group else None,
            "topics": apis.offset_commit_topics(offsets)}
        self._commits_in_flight += 1
        return Request(apis.OFFSET_COMMIT.key, body)

    # -- answers -----------------------------------------------------------------------------------------------------

    def on_response(self, api_key: int, body: Mapping[str, Any], now_ms: int) -> None:
        """A decoded answer to a group request from next_request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)."""
        self._in_flight.discard(api_key)
        if api_key == apis.JOIN_GROUP.key:
            self._on_join(body, now_ms)
        elif api_key == apis.SYNC_GROUP.key:
            self._on_sync(body, now_ms)
        elif api_key == apis.HEARTBEAT.key:
            self._on_heartbeat(body, now_ms)
        # LeaveGroup: nothing to do whatever the answer (Java logs it)

    def on_offsets_answer(self, api_key: int, codes: Iterable[int], now_ms: int) -> None:
        """The error codes of an answer to an OffsetCommit (from commit_request) or OffsetFetch sent to the group's
        coordinator (the shell reads the answer with cykafka/requests/offsets.py): a commit is no longer in flight;
        a code saying the member or the coordinator is gone is acted on (a partition's own error is the caller's)."""
        if api_key == apis.OFFSET_COMMIT.key:
            self._commits_in_flight = max(0, self._commits_in_flight - 1)
        what = "OffsetCommit" if api_key == apis.OFFSET_COMMIT.key else "OffsetFetch"
        for code in set(codes):
            self._group_error(code, what, now_ms, fail=False)

    def on_failure(self, api_key: int, now_ms: int) -> None:
        """A request this member built got no answer (disconnect, request timeout): find the coordinator again and
        retry what was lost (a JoinGroup or SyncGroup after retry.backoff.ms)."""
        self._in_flight.discard(api_key)
        if api_key == apis.OFFSET_COMMIT.key:
            self._commits_in_flight = max(0, self._commits_in_flight - 1)
        if api_key in (apis.JOIN_GROUP.key, apis.SYNC_GROUP.key):
            self._retry_join(now_ms, "the coordinator did not answer the " +
                             ("JoinGroup" if api_key == apis.JOIN_GROUP.key else "SyncGroup"))
        elif api_key == apis.HEARTBEAT.key:
            self._heartbeat_due_ms = now_ms + self.settings.retry_backoff_ms
        if api_key != apis.LEAVE_GROUP.key:
            self._coordinator_unknown(now_ms)

    # -- handlers ----------------------------------------------------------------------------------------------------

    def _on_join(self, body: Mapping[str, Any], now_ms: int) -> None:
        code = body["error_code"]
        if code == ErrorCode.NONE:
            self.member_id, self.generation_id = body["member_id"], body["generation_id"]
            self.protocol_name, self.leader_id = body["protocol_name"], body["leader"]
            if self._closing:
                return
            self._transition(MemberEvent.JOINED)
            self._assigned_with, self._group_topics = None, frozenset()  # a leader's view, kept only by the leader
            self._sync_body = {**self._member_fields(), "protocol_type": PROTOCOL_TYPE,
                               "protocol_name": self.protocol_name, "assignments": []}
            if self.leader_id == self.member_id:
                try:
                    self._leader_members = [self._member(m) for m in body["members"]]
                except ProtocolError as e:
                    self._error = ProtocolError(f"group {self.settings.group_id!r}: a member's subscription: {e}")
                    self._retry_join(now_ms, "a member's subscription could not be read")
                    return
                self._group_topics = frozenset(t for m in self._leader_members for t in m.topics)
                if self._group_topics - self._partition_counts.keys():
                    self._leader_waits_since = self._metadata_updates  # assign after the next update
                else:
                    self._assign()
            return
        self._transition(MemberEvent.OUT)
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = body["member_id"]
            self._request_rejoin("the coordinator gave this member its id (KIP-394)")
            return
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            self._request_rejoin("a rebalance is in progress")
            return
        self._group_error(code, "JoinGroup", now_ms, fail=True)

    def _member(self, joined: Mapping[str, Any]) -> Member:
        sub = decode_subscription(joined["metadata"])
        return Member(joined["member_id"], frozenset(sub["topics"]), tuple(sub["owned_partitions"]),
                      member_generation(sub), joined["group_instance_id"])

    def _assign(self) -> None:
        """The leader's assignment: the chosen assignor over the members and the current partition counts."""
        assert self._sync_body is not None and self.protocol_name is not None
        self._leader_waits_since = -1
        assignor = ASSIGNORS.get(self.protocol_name)
        if assignor is None:
            self._error = KafkaError(f"group {self.settings.group_id!r} chose assignor {self.protocol_name!r}, "
                                     f"which this member does not know ({', '.join(ASSIGNORS)})")
            self._sync_body = None
            self._request_rejoin("unknown assignor")
            return
        counts = {t: n for t, n in self._partition_counts.items() if t in self._group_topics}
        assignment = assignor(self._leader_members, counts)
        self._assigned_with = {t: counts.get(t, 0) for t in self._group_topics}
        self._sync_body["assignments"] = [{"member_id": m, "assignment": encode_assignment(tps)}
                                          for m, tps in sorted(assignment.items())]

    def _on_sync(self, body: Mapping[str, Any], now_ms: int) -> None:
        code = body["error_code"]
        if self._closing:
            return
        if code != ErrorCode.NONE:
            self._transition(MemberEvent.OUT)
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                self._request_rejoin("a rebalance is in progress")
            else:
                self._group_error(code, "SyncGroup", now_ms, fail=True)
            return
        try:
            assigned = frozenset(decode_assignment(body["assignment"])["assigned_partitions"])
        except ProtocolError as e:
            self._error = ProtocolError(f"group {self.settings.group_id!r}: the assignment: {e}")
            self._retry_join(now_ms, "the assignment could not be read")
            return
        self._transition(MemberEvent.SYNCED)
        self._needs_join_prepare = True
        self._last_heartbeat_ok_ms = now_ms
        self._heartbeat_due_ms = now_ms + self.settings.heartbeat_interval_ms
        if self._last_poll_ms is None:
            self._last_poll_ms = now_ms
        revoked = self.assignment - assigned
        if revoked:
            self._event("revoked", revoked)
            self._request_rejoin("partitions were revoked; rejoining to hand them over (KIP-429)")
        self._event("assigned", assigned - self.assignment, always=True)
        self.assignment = assigned
        if self._joined_topics != self._topics:
            self._request_rejoin("subscription changed during the rebalance")

    def _on_heartbeat(self, body: Mapping[str, Any], now_ms: int) -> None:
        code = body["error_code"]
        if code == ErrorCode.NONE:
            self._last_heartbeat_ok_ms = now_ms
            return
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self._request_rejoin("the group is rebalancing")
            return
        self._heartbeat_due_ms = now_ms + self.settings.retry_backoff_ms
        self._group_error(code, "Heartbeat", now_ms, fail=True)

    def _group_error(self, code: int, what: str, now_ms: int, fail: bool) -> None:
        """The shared reaction to a group-level error code (fail: an unknown code is raised)."""
        if code == ErrorCode.NONE:
            return
        context = f"group {self.settings.group_id!r}: {what}"
        if code == ErrorCode.FENCED_INSTANCE_ID:
            self._fatal = error_for(code, f"{context}: group.instance.id {self.settings.group_instance_id!r} is "
                                          "used by another member")
        elif code in _RESET:
            self._reset_generation()
            self._request_rejoin(f"{what}: {ErrorCode(code).name}")
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self._request_rejoin(f"{what}: the group is rebalancing")
        elif kinds_of(code) & ErrorKind.COORDINATOR_MOVED:
            self._coordinator_unknown(now_ms)
            if what in ("JoinGroup", "SyncGroup"):
                self._retry_join(now_ms, f"{what}: the coordinator moved")
        elif kinds_of(code) & ErrorKind.COORDINATOR_LOADING:
            if what in ("JoinGroup", "SyncGroup"):
                self._retry_join(now_ms, f"{what}: the coordinator is loading")
        elif fail:
            self._error = error_for(code, context)
            if what in ("JoinGroup", "SyncGroup"):
                self._retry_join(now_ms, f"{what} failed")

    # -- internals ---------------------------------------------------------------------------------------------------

    def _send(self, api_key: int, body: Mapping[str, Any]) -> Request:
        self._in_flight.add(api_key)
        if api_key == apis.JOIN_GROUP.key:
            self._transition(MemberEvent.JOIN_SENT)
        return Request(api_key, body)

    def _transition(self, event: MemberEvent) -> None:
        """The state change event makes, by TRANSITIONS; one the table lacks is a bug."""
        to = TRANSITIONS[event].get(self.state)
        if to is None:
            raise IllegalStateError(f"group {self.settings.group_id!r}: {event.value} in state {self.state.name}: no "
                                    f"such transition")
        self.state = to

    def _member_fields(self) -> dict[str, Any]:
        return {"group_id": self.settings.group_id, "generation_id": self.generation_id,
                "member_id": self.member_id, "group_instance_id": self.settings.group_instance_id}

    def _join_body(self) -> dict[str, Any]:
        s = self.settings
        owned = sorted(self.assignment)
        protocols = [{"name": name, "metadata": encode_subscription(
            self._topics, subscription_user_data(name, self.generation_id), owned, self.generation_id,
            s.client_rack)} for name in s.assignors]
        return {"group_id": s.group_id, "session_timeout_ms": s.session_timeout_ms,
                "rebalance_timeout_ms": s.max_poll_interval_ms, "member_id": self.member_id,
                "group_instance_id": s.group_instance_id, "protocol_type": PROTOCOL_TYPE, "protocols": protocols,
                "reason": self._rejoin_reason}

    def _leave_request(self, reason: str) -> dict[str, Any] | None:
        """A LeaveGroup body when Java would send one: a dynamic member that has a member id."""
        if self.settings.group_instance_id is not None or not self.member_id:
            return None
        return {"group_id": self.settings.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None, "reason": reason}]}

    @property
    def _gated(self) -> bool:
        """No JoinGroup or LeaveGroup now: listener events wait, or commits built here are unanswered."""
        return bool(self._events) or self._events_held or self._commits_in_flight > 0

    def _subscribed(self) -> bool:
        return bool(self._topics) or self._pattern is not None

    def _wants_join(self, now_ms: int) -> bool:
        if self._poll_expired or not self._subscribed() or now_ms < self._join_after_ms:
            return False
        if self._in_flight & {apis.JOIN_GROUP.key, apis.SYNC_GROUP.key} or self._sync_body is not None:
            return False
        return self._rejoin_reason is not None or self.state is MemberState.UNJOINED

    def _request_rejoin(self, reason: str) -> None:
        if self._rejoin_reason is None:
            self._rejoin_reason = reason

    def _retry_join(self, now_ms: int, reason: str) -> None:
        self._transition(MemberEvent.OUT)
        self._sync_body = None
        self._leader_waits_since = -1
        self._join_after_ms = now_ms + self.settings.retry_backoff_ms
        self._request_rejoin(reason)

    def _reset_generation(self) -> None:
        self.member_id, self.generation_id = "", NO_GENERATION
        self._transition(MemberEvent.OUT)
        self._needs_join_prepare = True  # what is still owned is reported lost before the next join
        self._sync_body = None
        self._leader_waits_since = -1
        self._assigned_with = None
        self._group_topics = frozenset()

    def _coordinator_unknown(self, now_ms: int) -> None:
        """Java's markCoordinatorUnknown: the shell forgets it and looks it up again at once (retry.backoff.ms only
        after a failed lookup, the coordinator cache's rule)."""
        if self.has_coordinator:
            self.has_coordinator = False
            self._coordinator_lost = True

    def _event(self, kind: str, partitions: Iterable[TP], always: bool = False) -> None:
        tps = tuple(sorted(partitions))
        if tps or always:
            self._events.append(GroupEvent(kind, tps))

    def _join_prepare(self) -> None:
        """Java's onJoinPrepare: lost after a reset generation; EAGER revokes all; COOPERATIVE revokes only the
        partitions of topics no longer subscribed."""
        self._needs_join_prepare = False
        self._assigned_with = None
        if self.generation_id == NO_GENERATION or not self.member_id:
            self._event("lost", self.assignment)
            self.assignment = frozenset()
        elif self.protocol is RebalanceProtocol.EAGER:
            self._event("revoked", self.assignment, always=True)
            self.assignment = frozenset()
        else:
            gone = {tp for tp in self.assignment if tp[0] not in self._topics}
            self._event("revoked", gone)
            self.assignment = self.assignment - gone

    def _leave_prepare(self) -> None:
        """Java's onLeavePrepare: everything owned is revoked, or lost when the generation is gone."""
        lost = self.generation_id == NO_GENERATION or not self.member_id
        self._event("lost" if lost else "revoked", self.assignment)
        self.assignment = frozenset()

    def _check_timers(self, now_ms: int) -> None:
        s = self.settings
        if self.state is not MemberState.STABLE or self._closing:
            return
        if self._last_poll_ms is not None and now_ms - self._last_poll_ms > s.max_poll_interval_ms:
            # Java's maybeLeaveGroup("consumer poll timeout has expired"): leave, forget the generation
            self._leave_body = self._leave_request("consumer poll timeout has expired")
            self._reset_generation()
            self._poll_expired = True
        elif self.has_coordinator and now_ms - self._last_heartbeat_ok_ms > s.session_timeout_ms:
            self._coordinator_unknown(now_ms)


