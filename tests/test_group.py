"""The group membership state machine (cykafka.core.group.GroupMember) driven by hand: each request it decides on is
checked and answered with a scripted dict, time passed explicitly (Java's MockClient + MockTime idiom). The
coordinator is the shell's (the request layer's coordinator cache): here the script says when it is found."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cykafka.core.group import TRANSITIONS, GroupEvent, GroupMember, GroupSettings, MemberEvent, MemberState
from cykafka.errors import BrokerResponseError, IllegalStateError, InvalidArgumentError, ProtocolError
from cykafka.ports.values import OffsetAndMetadata
from cykafka.protocol import apis
from cykafka.protocol.codec import decode_message, encode_message
from cykafka.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from cykafka.protocol.error_codes import ErrorCode
from cykafka.protocol.schema import Api
from cykafka.requests.offsets import offset_commit_codes, offset_fetch_request, read_offset_commit, read_offset_fetch

JOIN, SYNC, HEARTBEAT, LEAVE = apis.JOIN_GROUP, apis.SYNC_GROUP, apis.HEARTBEAT, apis.LEAVE_GROUP
HB_MS, SESSION_MS, MAX_POLL_MS, BACKOFF_MS = 3_000, 10_000, 60_000, 100


def answer(api: Api, **fields: Any) -> dict[str, Any]:
    """A response body at the newest version we describe: every field's default, then `fields`."""
    version = api.valid[1]
    body = decode_message(api, version, encode_message(api, version, {}, response=True), response=True)
    body.update(fields)
    return body


class Script:
    """One member and the clock; `expect` takes the next request and checks its API."""

    def __init__(self, **settings: Any) -> None:
        settings = {"group_id": "g", "heartbeat_interval_ms": HB_MS, "session_timeout_ms": SESSION_MS,
                    "max_poll_interval_ms": MAX_POLL_MS, "retry_backoff_ms": BACKOFF_MS, **settings}
        self.member = GroupMember(GroupSettings(**settings))
        self.now_ms = 1_000

    def expect(self, api: Api | None) -> dict[str, Any]:
        out = self.member.next_request(self.now_ms)
        if api is None:
            assert out is None, out
            return {}
        assert out is not None and out.api_key == api.key, (api.name, out)
        return dict(out.body)

    def answer(self, api: Api, **fields: Any) -> None:
        self.member.on_response(api.key, answer(api, **fields), self.now_ms)

    def commit_answer(self, **fields: Any) -> None:
        self.member.on_offsets_answer(apis.OFFSET_COMMIT.key, offset_commit_codes(answer(apis.OFFSET_COMMIT,
                                                                                         **fields)), self.now_ms)

    def find(self) -> None:
        """The shell found the coordinator (its coordinator cache)."""
        self.expect(None)  # nothing goes without it
        self.member.coordinator_found(self.now_ms)

    def lost_coordinator(self) -> bool:
        """The member decided its coordinator is gone: the shell is to forget it and look it up again."""
        return not self.member.has_coordinator and self.member.take_coordinator_lost()

    def eager_rejoin(self) -> dict[str, Any]:
        """The JoinGroup that follows an eager member's revocation (held until the event is taken)."""
        self.expect(None)
        assert [e.kind for e in self.member.take_events()] == ["revoked"]
        return self.expect(JOIN)

    def join(self, member_id: str = "m1", generation: int = 1, assigned: list[tuple[str, int]] | None = None,
             leader: bool = False, others: tuple[str, ...] = ()) -> dict[str, Any]:
        """JoinGroup (with the KIP-394 round trip when the member has no id), SyncGroup; returns the SyncGroup body."""
        body = self.expect(JOIN)
        if body["member_id"] == "":
            self.answer(JOIN, error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
            body = self.expect(JOIN)
        assert body["member_id"] == member_id
        members = [{"member_id": m, "group_instance_id": None, "metadata": p["metadata"]}
                   for m in (member_id, *others) for p in body["protocols"][:1]] if leader else []
        self.answer(JOIN, generation_id=generation, protocol_name=body["protocols"][0]["name"],
                    leader=member_id if leader else "someone", member_id=member_id, members=members)
        if leader and self.member.wants_metadata:
            self.expect(None)
            self.member.update_metadata({"t": 4}, self.now_ms)
        sync = self.expect(SYNC)
        assert sync["generation_id"] == generation and sync["member_id"] == member_id
        self.answer(SYNC, assignment=encode_assignment(assigned if assigned is not None else [("t", 0), ("t", 1)]))
        return sync


def joined(**settings: Any) -> Script:
    s = Script(**settings)
    s.member.subscribe(["t"])
    s.member.poll(s.now_ms)
    s.find()
    s.join()
    assert s.member.state is MemberState.STABLE
    assert s.member.take_events() == [GroupEvent("assigned", (("t", 0), ("t", 1)))]
    return s


def test_join_with_the_member_id_round_trip_then_the_leader_assigns_after_fresh_metadata() -> None:
    s = Script(assignors=("range", "roundrobin"))
    s.member.subscribe(["t"])
    assert s.member.wants_coordinator
    s.find()
    assert s.member.has_coordinator and not s.member.wants_coordinator
    first = s.expect(JOIN)
    assert first["member_id"] == "" and first["protocol_type"] == "consumer"
    assert first["session_timeout_ms"] == SESSION_MS and first["rebalance_timeout_ms"] == MAX_POLL_MS
    assert [p["name"] for p in first["protocols"]] == ["range", "roundrobin"]
    assert decode_subscription(first["protocols"][0]["metadata"])["topics"] == ["t"]
    s.expect(None)  # one JoinGroup at a time
    s.answer(JOIN, error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id="m1")
    sync = s.join(leader=True, others=("m2",), assigned=[("t", 0), ("t", 1)])
    assert s.member.metadata_topics() == frozenset({"t"})
    by_member = {a["member_id"]: decode_assignment(a["assignment"])["assigned_partitions"]
                 for a in sync["assignments"]}
    assert by_member == {"m1": [("t", 0), ("t", 1)], "m2": [("t", 2), ("t", 3)]}  # range over the 4 partitions
    assert s.member.assignment == {("t", 0), ("t", 1)} and s.member.generation_id == 1
    assert s.member.take_events() == [GroupEvent("assigned", (("t", 0), ("t", 1)))]


def test_a_follower_syncs_with_no_assignments() -> None:
    s = Script()
    s.member.subscribe(["t"])
    s.find()
    assert s.join()["assignments"] == []


def test_heartbeats_run_on_their_own_schedule() -> None:
    s = joined()
    s.expect(None)
    assert s.member.poll_timeout_ms(s.now_ms) == HB_MS
    s.now_ms += HB_MS - 1
    s.expect(None)
    s.now_ms += 1
    body = s.expect(HEARTBEAT)
    assert body == {"group_id": "g", "generation_id": 1, "member_id": "m1", "group_instance_id": None}
    s.expect(None)  # one in flight
    s.now_ms += 500
    s.answer(HEARTBEAT)
    s.now_ms += HB_MS - 500
    s.expect(HEARTBEAT)  # counted from the last one sent


def test_rebalance_in_progress_rejoins_keeping_the_generation_and_eager_revokes_first() -> None:
    s = joined()
    s.now_ms += HB_MS
    s.expect(HEARTBEAT)
    s.answer(HEARTBEAT, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    s.expect(None)  # the revocation waits to be taken before the JoinGroup goes
    assert s.member.take_events() == [GroupEvent("revoked", (("t", 0), ("t", 1)))]
    body = s.expect(JOIN)
    assert body["member_id"] == "m1" and body["reason"] == "the group is rebalancing"
    sub = decode_subscription(body["protocols"][0]["metadata"])
    assert sub["owned_partitions"] == [] and sub["generation_id"] == 1  # eager owns nothing when it joins


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
@pytest.mark.parametrize("where", ["heartbeat", "sync", "commit"])
def test_unknown_member_or_illegal_generation_resets_and_rejoins_with_partitions_lost(code: ErrorCode,
                                                                                      where: str) -> None:
    s = joined(assignors=("cooperative-sticky",))  # a cooperative member still owns its partitions while joining
    if where == "heartbeat":
        s.now_ms += HB_MS
        s.expect(HEARTBEAT)
        s.answer(HEARTBEAT, error_code=code)
    elif where == "commit":
        assert s.member.commit_request({("t", 0): 5}).api_key == apis.OFFSET_COMMIT.key
        s.commit_answer(topics=[{"name": "t", "partitions": [{"partition_index": 0, "error_code": code}]}])
    else:  # a rebalance, then the SyncGroup fails
        s.now_ms += HB_MS
        s.expect(HEARTBEAT)
        s.answer(HEARTBEAT, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
        s.expect(JOIN)
        s.answer(JOIN, generation_id=2, protocol_name="cooperative-sticky", leader="other", member_id="m1")
        s.expect(SYNC)
        s.answer(SYNC, error_code=code)
    assert s.member.member_id == "" and s.member.generation_id == -1
    s.expect(None)
    assert s.member.take_events() == [GroupEvent("lost", (("t", 0), ("t", 1)))]
    assert s.expect(JOIN)["member_id"] == ""


@pytest.mark.parametrize("code", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE])
def test_coordinator_errors_find_it_again(code: ErrorCode) -> None:
    s = joined()
    s.now_ms += HB_MS
    s.expect(HEARTBEAT)
    s.answer(HEARTBEAT, error_code=code)
    assert s.lost_coordinator() and s.member.wants_coordinator
    s.find()
    assert s.member.state is MemberState.STABLE and s.member.generation_id == 1  # still a member
    s.now_ms += BACKOFF_MS
    s.expect(HEARTBEAT)


def test_a_join_error_on_the_coordinator_or_a_disconnect_rediscovers_and_joins_again() -> None:
    s = Script()
    s.member.subscribe(["t"])
    s.find()
    s.expect(JOIN)
    s.answer(JOIN, error_code=ErrorCode.NOT_COORDINATOR)
    assert s.lost_coordinator()
    s.now_ms += BACKOFF_MS
    s.find()
    s.expect(JOIN)
    s.member.on_failure(JOIN.key, s.now_ms)  # disconnected
    assert s.lost_coordinator()
    s.now_ms += BACKOFF_MS
    s.find()
    s.join()
    assert s.member.state is MemberState.STABLE


def test_session_timeout_without_heartbeat_answers_looks_for_the_coordinator() -> None:
    s = joined()
    s.now_ms += HB_MS
    s.expect(HEARTBEAT)
    s.now_ms += SESSION_MS - HB_MS  # no answer yet: still within session.timeout.ms
    s.member.poll(s.now_ms)
    s.expect(None)
    s.now_ms += HB_MS + 1
    s.member.poll(s.now_ms)
    s.expect(None)
    assert s.lost_coordinator() and s.member.wants_coordinator


def test_fenced_instance_id_is_fatal_for_a_static_member() -> None:
    s = Script(group_instance_id="i1")
    s.member.subscribe(["t"])
    s.find()
    body = s.expect(JOIN)
    assert body["group_instance_id"] == "i1"
    s.answer(JOIN, error_code=ErrorCode.FENCED_INSTANCE_ID)
    for _ in range(2):
        with pytest.raises(BrokerResponseError, match="i1") as caught:
            s.member.next_request(s.now_ms)
        assert caught.value.code == ErrorCode.FENCED_INSTANCE_ID


def test_other_join_errors_are_raised_once_then_the_member_tries_again() -> None:
    s = Script()
    s.member.subscribe(["t"])
    s.find()
    s.expect(JOIN)
    s.answer(JOIN, error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    with pytest.raises(BrokerResponseError, match="JoinGroup"):
        s.member.next_request(s.now_ms)
    s.now_ms += BACKOFF_MS
    s.expect(JOIN)


def test_close_revokes_then_leaves_a_dynamic_member() -> None:
    s = joined()
    s.member.close(s.now_ms)
    s.expect(None)  # the revocation is taken (and its offsets committed) first
    assert s.member.take_events() == [GroupEvent("revoked", (("t", 0), ("t", 1)))]
    body = s.expect(LEAVE)
    assert body["members"] == [{"member_id": "m1", "group_instance_id": None, "reason": "the consumer is being closed"}]
    assert body["member_id"] == "m1" and not s.member.left
    s.answer(LEAVE)
    assert s.member.left
    s.expect(None)


@pytest.mark.parametrize("leave", ["close", "unsubscribe"])
def test_the_listener_commits_on_leaving_with_the_generation_and_the_leave_waits_for_it(leave: str) -> None:
    """Java's onLeavePrepare, on close() and on unsubscribe(): the revoked partitions' commit (the auto commit, the
    listener's) still names the member and its generation; without them the coordinator answers UNKNOWN_MEMBER_ID
    while the member is in the group (Apache Kafka 4.4: every unsubscribe() of an auto-committing consumer logged
    a failed auto commit)."""
    s = joined()
    getattr(s.member, leave)(s.now_ms)
    assert [e.kind for e in s.member.take_events()] == ["revoked"]
    commit = s.member.commit_request({("t", 0): 9})  # the rebalance listener's commit
    assert commit.body["generation_id_or_member_epoch"] == 1 and commit.body["member_id"] == "m1"
    s.expect(None)  # LeaveGroup waits for the commit's answer
    s.commit_answer()
    s.expect(LEAVE)
    assert s.member.generation_id == -1 and s.member.state is MemberState.UNJOINED


def test_unsubscribe_leaves_then_the_member_can_subscribe_again() -> None:
    s = joined()
    s.member.unsubscribe(s.now_ms)
    s.member.take_events()
    s.expect(LEAVE)
    s.answer(LEAVE)
    s.now_ms += HB_MS
    s.expect(None)  # not subscribed: no heartbeat, no join
    s.member.subscribe(["t"])
    assert s.expect(JOIN)["member_id"] == ""


def test_a_static_member_sends_no_leave_group_on_close() -> None:
    s = joined(group_instance_id="i1")
    s.member.close(s.now_ms)
    assert s.member.take_events() == [GroupEvent("revoked", (("t", 0), ("t", 1)))]
    s.expect(None)
    assert s.member.left


def test_max_poll_interval_leaves_the_group_and_the_next_poll_rejoins() -> None:
    s = joined()
    for _ in range(MAX_POLL_MS // HB_MS):  # heartbeats go on while the user does not poll
        s.now_ms += HB_MS
        s.expect(HEARTBEAT)
        s.answer(HEARTBEAT)
    s.now_ms += 1
    body = s.expect(LEAVE)
    assert body["members"][0]["reason"] == "consumer poll timeout has expired"
    s.answer(LEAVE)
    assert s.member.member_id == "" and s.member.state is MemberState.UNJOINED
    s.now_ms += HB_MS
    s.expect(None)  # no rejoin until the user polls
    s.member.poll(s.now_ms)
    # lost at once, before the shell's next request: the poll hands out no record of them (Java's onJoinPrepare)
    assert s.member.take_events() == [GroupEvent("lost", (("t", 0), ("t", 1)))]
    assert s.expect(JOIN)["member_id"] == ""


def test_max_poll_interval_for_a_static_member_sends_no_leave_group() -> None:
    s = joined(group_instance_id="i1")
    s.now_ms += MAX_POLL_MS + 1
    s.expect(None)
    assert s.member.state is MemberState.UNJOINED


def test_cooperative_revokes_only_the_moved_partitions_then_rejoins_at_once() -> None:
    s = Script(assignors=("cooperative-sticky",))
    s.member.subscribe(["t"])
    s.member.poll(s.now_ms)
    s.find()
    s.join(assigned=[("t", 0), ("t", 1), ("t", 2), ("t", 3)])
    assert s.member.take_events() == [GroupEvent("assigned", tuple(("t", p) for p in range(4)))]
    s.now_ms += HB_MS
    s.expect(HEARTBEAT)
    s.answer(HEARTBEAT, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    body = s.expect(JOIN)  # nothing revoked before joining
    assert s.member.take_events() == []
    sub = decode_subscription(body["protocols"][0]["metadata"])
    assert sub["owned_partitions"] == [("t", p) for p in range(4)] and sub["generation_id"] == 1
    assert sub["user_data"] == b"\x00\x00\x00\x01"
    s.answer(JOIN, generation_id=2, protocol_name="cooperative-sticky", leader="other", member_id="m1")
    s.expect(SYNC)
    s.answer(SYNC, assignment=encode_assignment([("t", 0), ("t", 1)]))
    assert s.member.take_events() == [GroupEvent("revoked", (("t", 2), ("t", 3))), GroupEvent("assigned", ())]
    body = s.expect(JOIN)  # at once: the revoked partitions can now go to their new owner
    assert decode_subscription(body["protocols"][0]["metadata"])["owned_partitions"] == [("t", 0), ("t", 1)]


def test_the_leader_rejoins_when_a_partition_count_grows_a_follower_does_not() -> None:
    s = Script()
    s.member.subscribe(["t"])
    s.find()
    s.join(leader=True)
    s.member.take_events()
    s.member.update_metadata({"t": 4}, s.now_ms)
    s.expect(None)
    s.member.update_metadata({"t": 6}, s.now_ms)
    assert s.eager_rejoin()["reason"] == "partition counts of the group's topics changed"
    follower = joined()
    follower.member.update_metadata({"t": 4}, follower.now_ms)
    follower.member.update_metadata({"t": 6}, follower.now_ms)
    follower.expect(None)


def test_a_pattern_that_matches_a_new_topic_rejoins() -> None:
    s = Script()
    s.member.subscribe_pattern("t.*")
    assert s.member.metadata_topics() is None
    s.member.update_metadata({"t1": 1, "x": 1, "__consumer_offsets": 50}, s.now_ms)
    assert s.member.subscription == {"t1"}
    s.find()
    s.join(assigned=[("t1", 0)])
    assert s.member.assignment == {("t1", 0)}
    s.member.take_events()
    s.member.update_metadata({"t1": 1, "x": 1}, s.now_ms)
    s.expect(None)
    s.member.update_metadata({"t1": 1, "t2": 3, "x": 1}, s.now_ms)
    body = s.eager_rejoin()
    assert decode_subscription(body["protocols"][0]["metadata"])["topics"] == ["t1", "t2"]


def test_commits_carry_the_generation_and_hold_a_join_until_answered() -> None:
    s = joined()
    out = s.member.commit_request({("t", 1): (42, "meta", 3), ("t", 0): 7})
    body = out.body
    assert body["generation_id_or_member_epoch"] == 1 and body["member_id"] == "m1" and body["group_id"] == "g"
    assert body["topics"] == [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1, "committed_metadata": None},
        {"partition_index": 1, "committed_offset": 42, "committed_leader_epoch": 3, "committed_metadata": "meta"}]}]
    s.now_ms += HB_MS
    s.expect(HEARTBEAT)
    s.answer(HEARTBEAT, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    s.expect(None)
    assert [e.kind for e in s.member.take_events()] == ["revoked"]
    s.expect(None)  # the commit is still out: no JoinGroup yet
    s.now_ms += HB_MS
    s.expect(HEARTBEAT)  # the session is kept alive meanwhile
    s.answer(HEARTBEAT, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    answer_body = answer(apis.OFFSET_COMMIT, topics=[{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": 0},
        {"partition_index": 1, "error_code": ErrorCode.OFFSET_METADATA_TOO_LARGE}]}])
    s.member.on_offsets_answer(apis.OFFSET_COMMIT.key, offset_commit_codes(answer_body), s.now_ms)
    errors = read_offset_commit(answer_body, "g")
    assert errors[("t", 0)] is None and isinstance(errors[("t", 1)], BrokerResponseError)
    s.expect(JOIN)
    with pytest.raises(BrokerResponseError, match="undergoing a rebalance"):
        s.member.commit_request({("t", 0): 8})  # Java's RebalanceInProgressException: no generation to name


def test_offset_fetch_and_manual_assignment_commits() -> None:
    s = Script()
    assert not s.member.wants_coordinator  # not subscribed: a commit's call looks the coordinator up, not the member
    s.find()
    out = offset_fetch_request("g", [("t", 1), ("t", 0)], require_stable=True)
    assert out.body["topics"] == [{"name": "t", "partition_indexes": [0, 1]}]
    assert out.body["groups"][0]["group_id"] == "g" and out.body["require_stable"]
    body = answer(apis.OFFSET_FETCH, groups=[{"group_id": "g", "error_code": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 2, "metadata": "", "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": None,
         "error_code": 0}]}]}])
    assert read_offset_fetch(body, "g") == {("t", 0): OffsetAndMetadata(5, "", 2),
                                            ("t", 1): OffsetAndMetadata(-1, None, -1)}
    commit = s.member.commit_request({("t", 0): 6})  # not subscribed: no generation, no member id (Java)
    assert commit.body["generation_id_or_member_epoch"] == -1 and commit.body["member_id"] == ""
    s.member.on_offsets_answer(apis.OFFSET_FETCH.key, [ErrorCode.NOT_COORDINATOR], s.now_ms)
    assert s.lost_coordinator()


def test_the_member_changes_state_only_by_its_transition_table() -> None:
    """One table (h11's idiom): a join and a sync walk it, every change a row of it; OUT (failed, reset, left) from
    any state; a pair the table lacks is a bug and raises (a SyncGroup answer while a JoinGroup is out)."""
    seen: list[tuple[MemberState, MemberState]] = []
    s = Script()
    real = GroupMember._transition

    def watched(member: GroupMember, event: MemberEvent) -> None:
        before = member.state
        real(member, event)
        seen.append((before, member.state))
        assert TRANSITIONS[event][before] is member.state

    GroupMember._transition = watched  # type: ignore[method-assign]
    try:
        s.member.subscribe(["t"])
        s.find()
        s.join()
    finally:
        GroupMember._transition = real  # type: ignore[method-assign]
    U, P, C, S = (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE,
                  MemberState.STABLE)
    assert seen == [(U, P), (P, U), (U, P), (P, C), (C, S)]  # KIP-394's round trip, then joined and synced
    assert TRANSITIONS[MemberEvent.OUT] == dict.fromkeys(MemberState, U)
    s.member.state = P
    with pytest.raises(IllegalStateError, match=r"SyncGroup was answered .* in state PREPARING_REBALANCE"):
        s.member._transition(MemberEvent.SYNCED)


def test_settings_name_the_config_key() -> None:
    with pytest.raises(InvalidArgumentError, match=r"partition\.assignment\.strategy.*sticky"):
        GroupSettings("g", assignors=("sticky",))


# -- against the embedded broker ------------------------------------------------------------------------------------

def test_two_members_of_a_real_group_split_the_partitions(broker: Any) -> None:
    """Two GroupMembers (cooperative-sticky), each over its own SocketTransport and coordinator cache (the request
    layer's, as the consumer's), with a tiny loop over the generic codec: both end stable in one generation with
    disjoint assignments covering every partition, and their listener events add up to what they own. Then the first
    closes (LeaveGroup) and the second takes every partition."""
    import time
    import uuid

    from cykafka.adapters.clock import SystemClock
    from cykafka.adapters.socket_transport import SocketTransport
    from cykafka.admin import Admin, NewTopic
    from cykafka.config import AdminConfig
    from cykafka.ports import Node
    from cykafka.protocol import Request
    from cykafka.requests.coordinators import Coordinators, group_coordinator

    topic, group = f"grp-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, 5)])[topic].result()
    clock = SystemClock()
    connection = AdminConfig.parse({"bootstrap.servers": broker.bootstrap_servers}).connection
    members, transports, nodes, caches = [], [], [], []
    route = group_coordinator(group)
    owned: list[set[tuple[str, int]]] = [set(), set()]
    for _ in range(2):
        m = GroupMember(GroupSettings(group, session_timeout_ms=6_000, heartbeat_interval_ms=500,
                                      assignors=("cooperative-sticky",)))
        m.subscribe([topic])
        members.append(m)
        transports.append(SocketTransport(connection, clock_ms=clock.monotonic_ms))
        caches.append(Coordinators(transports[-1], 100, dedicated_group_connections=True))
        nodes.append({})
    metadata = Request(apis.METADATA.key, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})

    def settled() -> bool:
        a, b = members
        return (a.state is b.state is MemberState.STABLE and a.generation_id == b.generation_id
                and not a.assignment & b.assignment and len(a.assignment | b.assignment) == 5
                and owned[0] == a.assignment and owned[1] == b.assignment)

    asked_metadata = [0.0, 0.0]

    def run(done: Callable[[], bool]) -> None:
        deadline_s = time.monotonic() + 60
        while not done():
            assert time.monotonic() < deadline_s, [(m.state, m.generation_id, m.assignment) for m in members]
            for i, (m, t) in enumerate(zip(members, transports, strict=True)):
                if m.left:
                    continue
                now_ms = clock.monotonic_ms()
                m.poll(now_ms)
                for event in m.take_events():
                    if event.kind == "assigned":
                        owned[i] |= set(event.partitions)
                    else:
                        owned[i] -= set(event.partitions)
                outgoing = []
                if (m.wants_metadata or not asked_metadata[i]) and time.monotonic() - asked_metadata[i] > 0.5:
                    asked_metadata[i] = time.monotonic()
                    outgoing.append((None, metadata))
                cache = caches[i]
                if m.take_coordinator_lost():
                    cache.forget(route)
                if cache.get(route) is not None and not m.has_coordinator:
                    m.coordinator_found(now_ms)
                elif m.wants_coordinator:
                    cache.node_id(route, now_ms)
                cache.send_ready(now_ms)
                coordinator = cache.node_id(route, now_ms) if cache.get(route) is not None else None
                while (out := m.next_request(now_ms)) is not None:
                    outgoing.append((coordinator, out))
                if {**nodes[i], **cache.extra_nodes()} != nodes[i]:
                    nodes[i].update(cache.extra_nodes())
                    t.update_nodes(dict(nodes[i]))
                for node, request in outgoing:
                    target = t.least_loaded_node(now_ms) if node is None else node
                    for _ in range(200):  # connect (bounded)
                        if target is not None and t.ready(target, now_ms):
                            break
                        t.poll(5, now_ms)
                        now_ms = clock.monotonic_ms()
                        target = t.least_loaded_node(now_ms) if node is None else node
                    assert target is not None
                    t.send(target, request, now_ms)
                for r in t.poll(10, clock.monotonic_ms()):
                    key = getattr(r.request, "api_key", None)
                    now_ms = clock.monotonic_ms()
                    if r.handler is not None:  # the coordinator cache's lookup
                        r.handler(r)
                    elif key == apis.METADATA.key:
                        assert r.error is None and isinstance(r.response, dict)
                        for b in r.response["brokers"]:
                            nodes[i][b["node_id"]] = Node(b["node_id"], b["host"], b["port"])
                        t.update_nodes(dict(nodes[i]))
                        m.update_metadata({x["name"]: len(x["partitions"]) for x in r.response["topics"]
                                           if x["error_code"] == 0}, now_ms)
                    elif key is not None and r.error is not None:
                        m.on_failure(key, now_ms)
                    elif key is not None:
                        assert isinstance(r.response, dict)
                        m.on_response(key, r.response, now_ms)

    try:
        run(settled)
        assert members[0].member_id != members[1].member_id and all(m.has_coordinator for m in members)
        # the first leaves (LeaveGroup): the second takes every partition in the next generation
        generation = members[1].generation_id
        members[0].close(clock.monotonic_ms())
        run(lambda: members[0].left and members[1].state is MemberState.STABLE
            and members[1].generation_id > generation and len(owned[1]) == 5 and owned[1] == members[1].assignment)
        assert owned[0] == set()
    finally:
        for t in transports:
            t.close(0.0)


# -- several members against a fake coordinator ----------------------------------------------------------------------

class FakeCoordinator:
    """The broker side of the classic protocol, small: KIP-394 ids, a join completes once every member has rejoined,
    followers' SyncGroups wait for the leader's, heartbeats answer REBALANCE_IN_PROGRESS while a rebalance is on.
    `handle` answers at once or holds the answer; `released` hands out the held ones."""

    def __init__(self) -> None:
        self.members: dict[str, bytes] = {}  # member id -> the first protocol's metadata
        self.joining: dict[str, int] = {}  # member id -> who asked (held JoinGroup)
        self.syncing: dict[str, int] = {}
        self.assignments: dict[str, bytes] = {}
        self.generation, self.leader, self.rebalancing, self.next_id = 0, "", False, 0
        self.out: list[tuple[int, int, dict[str, Any]]] = []

    def handle(self, who: int, api_key: int, body: dict[str, Any]) -> dict[str, Any] | None:
        if api_key == JOIN.key:
            if not body["member_id"]:
                self.next_id += 1
                return answer(JOIN, error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id=f"m{self.next_id}")
            self.members[body["member_id"]] = body["protocols"][0]["metadata"]
            self.joining[body["member_id"]] = who
            self.rebalancing = True
            self._maybe_complete_join(body["protocols"][0]["name"])
            return None
        if api_key == SYNC.key:
            if body["member_id"] == self.leader:
                self.assignments = {a["member_id"]: a["assignment"] for a in body["assignments"]}
            self.syncing[body["member_id"]] = who
            if self.assignments:
                for member, asker in self.syncing.items():
                    self.out.append((asker, SYNC.key, answer(SYNC, assignment=self.assignments.get(member, b""))))
                self.syncing.clear()
            return None
        if api_key == HEARTBEAT.key:
            if body["member_id"] not in self.members:
                return answer(HEARTBEAT, error_code=ErrorCode.UNKNOWN_MEMBER_ID)
            code = ErrorCode.REBALANCE_IN_PROGRESS if self.rebalancing else ErrorCode.NONE
            return answer(HEARTBEAT, error_code=code)
        if api_key == LEAVE.key:
            self.members.pop(body["members"][0]["member_id"], None)
            self.rebalancing = True
            return answer(LEAVE)
        raise AssertionError(api_key)

    def _maybe_complete_join(self, protocol: str) -> None:
        if set(self.joining) != set(self.members):
            return
        self.generation += 1
        self.leader = min(self.joining)
        self.rebalancing = False
        self.assignments = {}
        everyone = [{"member_id": m, "group_instance_id": None, "metadata": meta} for m, meta in self.members.items()]
        for member, asker in self.joining.items():
            self.out.append((asker, JOIN.key, answer(JOIN, generation_id=self.generation, protocol_name=protocol,
                                                      leader=self.leader, member_id=member,
                                                      members=everyone if member == self.leader else [])))
        self.joining.clear()

    def released(self) -> list[tuple[int, int, dict[str, Any]]]:
        out, self.out = self.out, []
        return out


def test_cooperative_members_hand_partitions_over_without_ever_sharing_one() -> None:
    """A and B own t's six partitions; C joins. Through the state machines and a fake coordinator: A and B revoke
    only what moves, C gets it one rebalance later, and at no moment do two members own one partition (KIP-429)."""
    coordinator = FakeCoordinator()
    members: list[GroupMember] = []
    owned: list[set[tuple[str, int]]] = []
    now_ms = 0

    def add_member() -> None:
        m = GroupMember(GroupSettings("g", heartbeat_interval_ms=HB_MS, session_timeout_ms=SESSION_MS,
                                      max_poll_interval_ms=MAX_POLL_MS, assignors=("cooperative-sticky",)))
        m.subscribe(["t"])
        m.update_metadata({"t": 6}, now_ms)
        m.coordinator_found(now_ms)
        members.append(m)
        owned.append(set())

    def run_until_stable(rounds: int = 500) -> None:
        nonlocal now_ms
        for _ in range(rounds):
            now_ms += 100
            for i, m in reversed(list(enumerate(members))):  # newcomers' listeners run first: the harder case
                m.poll(now_ms)
                for event in m.take_events():
                    owned[i] = owned[i] | set(event.partitions) if event.kind == "assigned" \
                        else owned[i] - set(event.partitions)
                assert owned[i] == m.assignment
                held = [tp for o in owned for tp in o]
                assert len(held) == len(set(held)), f"a partition owned twice: {owned}"
            if all(m.state is MemberState.STABLE and m.generation_id == coordinator.generation for m in members) \
                    and len(held) == 6 and not coordinator.rebalancing:
                return
            for i, m in enumerate(members):
                while (out := m.next_request(now_ms)) is not None:
                    got = coordinator.handle(i, out.api_key, dict(out.body))
                    if got is not None:
                        m.on_response(out.api_key, got, now_ms)
            for i, api_key, body in coordinator.released():
                members[i].on_response(api_key, body, now_ms)
        raise AssertionError(f"not stable after {rounds} rounds: {[(m.state, m.assignment) for m in members]}")

    add_member()
    add_member()
    run_until_stable()
    assert sorted(len(o) for o in owned) == [3, 3]
    before = [set(o) for o in owned]
    add_member()
    run_until_stable()
    assert sorted(len(o) for o in owned) == [2, 2, 2]
    assert owned[0] <= before[0] and owned[1] <= before[1]  # sticky: A and B only gave partitions up
    assert coordinator.generation >= 3  # C's join, then the handover of what A and B revoked


def test_poll_timeout_names_the_next_deadline() -> None:
    s = Script(session_timeout_ms=4_000)
    assert s.member.poll_timeout_ms(s.now_ms) == HB_MS  # not subscribed: nothing due
    s.member.subscribe(["t"])
    assert s.member.wants_coordinator  # the shell's coordinator lookup wakes it, not a timer of the member's
    assert s.member.poll_timeout_ms(s.now_ms) == HB_MS
    s.find()
    assert s.member.poll_timeout_ms(s.now_ms) == 0  # the join
    s.expect(JOIN)
    s.answer(JOIN, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert s.member.poll_timeout_ms(s.now_ms) == BACKOFF_MS  # the join again after retry.backoff.ms
    s.expect(None)
    s.now_ms += BACKOFF_MS
    s.join()
    s.member.take_events()
    s.member.poll(s.now_ms)
    s.now_ms += HB_MS
    s.expect(HEARTBEAT)  # in flight, unanswered: the session timeout is next
    assert s.member.poll_timeout_ms(s.now_ms) == 4_000 - HB_MS + 1
    s.answer(HEARTBEAT)
    assert s.member.poll_timeout_ms(s.now_ms) == HB_MS  # the next heartbeat


def test_unreadable_embedded_bytes_are_raised_once_and_the_member_joins_again() -> None:
    s = Script()
    s.member.subscribe(["t"])
    s.find()
    body = s.expect(JOIN)
    s.answer(JOIN, generation_id=1, protocol_name="range", leader="m1", member_id="m1",
             members=[{"member_id": "m1", "group_instance_id": None, "metadata": b"\x00"}])
    with pytest.raises(ProtocolError, match="subscription"):
        s.member.next_request(s.now_ms)
    s.now_ms += BACKOFF_MS
    s.expect(JOIN)
    s.answer(JOIN, generation_id=2, protocol_name="range", leader="other", member_id="m1")
    s.expect(SYNC)
    s.answer(SYNC, assignment=b"\x00\x00\x00\x00\x00\x09")  # one topic, then nothing
    with pytest.raises(ProtocolError, match="assignment"):
        s.member.next_request(s.now_ms)
    assert s.member.state is MemberState.UNJOINED and body["protocols"]


def test_a_rejoin_asked_for_during_a_rebalance_is_not_forgotten() -> None:
    s = joined()
    s.now_ms += HB_MS
    s.expect(HEARTBEAT)
    s.answer(HEARTBEAT, error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    s.eager_rejoin()
    s.member.subscribe(["t", "u"])  # while the JoinGroup is out
    s.answer(JOIN, generation_id=2, protocol_name="range", leader="other", member_id="m1")
    s.expect(SYNC)
    s.answer(SYNC, assignment=encode_assignment([("t", 0)]))
    assert s.member.state is MemberState.STABLE
    s.expect(None)
    assert [e.kind for e in s.member.take_events()] == ["assigned", "revoked"]
    assert decode_subscription(s.expect(JOIN)["protocols"][0]["metadata"])["topics"] == ["t", "u"]
