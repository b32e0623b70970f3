"""core/consumer_member.py's ConsumerGroupMember (KIP-848) without a broker: a fake coordinator answers its heartbeats.
Joining with the full state and heartbeating only what changed, reconciling (revoked, then assigned, then the
acknowledgement), FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID (partitions lost, join again at epoch 0 with the same id),
STALE_MEMBER_EPOCH on a commit (a heartbeat at once; the request layer asks again), fatal codes as typed errors,
leaving with epoch -1 / -2, and the transition table's refusals."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from cykafka.core.consumer_member import (
    TRANSITIONS,
    ConsumerGroupMember,
    ConsumerGroupSettings,
    ConsumerMemberEvent,
    ConsumerMemberState,
)
from cykafka.core.group import GroupEvent
from cykafka.errors import (
    GroupMaxSizeReachedError,
    IllegalStateError,
    StaleMemberEpochError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from cykafka.protocol import apis
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, kinds_of

S = ConsumerMemberState
T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
IDS = {"a": T1, "b": T2}
HEARTBEAT = apis.CONSUMER_GROUP_HEARTBEAT.key


class FakeCoordinator:
    """Answers a member's heartbeats: the epoch it gives, the target it assigns (by topic id), an error to answer."""

    def __init__(self, member: ConsumerGroupMember, interval_ms: int = 1000) -> None:
        self.member, self.interval_ms, self.epoch = member, interval_ms, 0
        self.target: dict[uuid.UUID, list[int]] | None = None
        self.sent: list[dict[str, Any]] = []
        self.member.coordinator_found(0)
        self.member.update_metadata({"a": 4, "b": 4}, 0, IDS)

    def beat(self, now_ms: int, error: int = 0, target_changed: bool = True) -> dict[str, Any]:
        """The member's next request (a heartbeat, which must be due) answered."""
        request = self.member.next_request(now_ms)
        assert request is not None and request.api_key == HEARTBEAT
        body = dict(request.body)
        self.sent.append(body)
        if error:
            self.member.on_response(HEARTBEAT, {"error_code": error, "error_message": None, "member_id": None,
                                                "member_epoch": -1, "heartbeat_interval_ms": 0,
                                                "assignment": None}, now_ms)
            return body
        if body["member_epoch"] < 0:
            self.member.on_response(HEARTBEAT, {"error_code": 0, "error_message": None, "member_id": body["member_id"],
                                                "member_epoch": body["member_epoch"], "heartbeat_interval_ms": 0,
                                                "assignment": None}, now_ms)
            return body
        if body["member_epoch"] == 0 or target_changed:
            self.epoch += 1
        assignment = None if self.target is None or not target_changed else {"topic_partitions": [
            {"topic_id": t, "partitions": ps} for t, ps in self.target.items()]}
        self.member.on_response(HEARTBEAT, {"error_code": 0, "error_message": None, "member_id": body["member_id"],
                                            "member_epoch": self.epoch, "heartbeat_interval_ms": self.interval_ms,
                                            "assignment": assignment}, now_ms)
        return body


def _member(**settings: Any) -> ConsumerGroupMember:
    member = ConsumerGroupMember(ConsumerGroupSettings("g", "member-1", **settings))
    member.subscribe(["a", "b"])
    return member


def _handle(member: ConsumerGroupMember) -> list[GroupEvent]:
    """What the consumer's poll does with the events: take them (held), then say they were handled."""
    events = member.take_events(hold=True)
    member.events_handled()
    return events


def _joined(coordinator: FakeCoordinator, target: dict[uuid.UUID, list[int]]) -> None:
    coordinator.target = target
    coordinator.beat(0)
    _handle(coordinator.member)
    coordinator.beat(0, target_changed=False)  # the acknowledgement


def test_join_sends_the_full_state_then_reconciles_and_acknowledges_at_once() -> None:
    member = _member(remote_assignor="uniform", client_rack="r1", max_poll_interval_ms=60_000)
    coordinator = FakeCoordinator(member)
    coordinator.target = {T1: [0, 1], T2: [3]}
    join = coordinator.beat(0)
    assert join == {"group_id": "g", "member_id": "member-1", "member_epoch": 0, "instance_id": None,
                    "rack_id": "r1", "rebalance_timeout_ms": 60_000, "subscribed_topic_names": ["a", "b"],
                    "subscribed_topic_regex": None, "server_assignor": "uniform", "topic_partitions": []}
    assert member.state is S.RECONCILING and member.member_epoch == 1
    assert member.next_request(10) is None  # no acknowledgement before the events are handled
    assert _handle(member) == [GroupEvent("assigned", (("a", 0), ("a", 1), ("b", 3)))]
    assert member.state is S.ACKNOWLEDGING
    ack = coordinator.beat(10, target_changed=False)  # at once, not after the interval
    assert ack["topic_partitions"] == [{"topic_id": T1, "partitions": [0, 1]}, {"topic_id": T2, "partitions": [3]}]
    assert set(ack) == {"group_id", "member_id", "member_epoch", "instance_id", "topic_partitions"}  # what changed
    assert member.state is S.STABLE
    assert member.next_request(500) is None  # the broker's interval
    assert coordinator.beat(1010, target_changed=False) == {"group_id": "g", "member_id": "member-1",
                                                             "member_epoch": 1, "instance_id": None}


def test_a_shrinking_target_revokes_only_what_moves_then_acknowledges() -> None:
    member = _member()
    coordinator = FakeCoordinator(member)
    _joined(coordinator, {T1: [0, 1, 2]})
    coordinator.target = {T1: [0, 2]}
    coordinator.beat(2000)
    assert member.assignment == {("a", 0), ("a", 2)}
    assert _handle(member) == [GroupEvent("revoked", (("a", 1),)), GroupEvent("assigned", ())]
    ack = coordinator.beat(2000, target_changed=False)
    assert ack["topic_partitions"] == [{"topic_id": T1, "partitions": [0, 2]}] and member.state is S.STABLE


def test_an_unknown_topic_id_waits_for_the_metadata() -> None:
    member = _member()
    coordinator = FakeCoordinator(member)
    t3 = uuid.UUID(int=3)
    coordinator.target = {T1: [0], t3: [1]}
    coordinator.beat(0)
    assert member.wants_metadata
    assert _handle(member) == [GroupEvent("assigned", (("a", 0),))]
    member.update_metadata({"c": 2}, 5, {"c": t3})
    assert not member.wants_metadata
    assert member.state is S.RECONCILING and _handle(member) == [GroupEvent("assigned", (("c", 1),))]


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_or_unknown_member_loses_its_partitions_and_joins_again_at_epoch_0(code: ErrorCode) -> None:
    member = _member()
    coordinator = FakeCoordinator(member)
    _joined(coordinator, {T1: [0, 1]})
    assert kinds_of(code) & ErrorKind.MEMBER_FENCED
    coordinator.beat(1000, error=code)
    assert member.state is S.FENCED and member.assignment == frozenset()
    assert member.next_request(1000) is None  # the partitions are reported lost first
    assert _handle(member) == [GroupEvent("lost", (("a", 0), ("a", 1)))]
    assert member.state is S.JOINING
    rejoin = coordinator.beat(1000)
    assert (rejoin["member_epoch"], rejoin["member_id"], rejoin["subscribed_topic_names"], rejoin["topic_partitions"]) \
        == (0, "member-1", ["a", "b"], [])
    assert _handle(member) == [GroupEvent("assigned", (("a", 0), ("a", 1)))]


def test_a_stale_epoch_on_a_commit_sends_the_heartbeat_at_once_and_the_commit_is_asked_again() -> None:
    member = _member()
    coordinator = FakeCoordinator(member)
    _joined(coordinator, {T1: [0]})
    commit = member.commit_request({("a", 0): 5})
    assert (commit.body["generation_id_or_member_epoch"], commit.body["member_id"]) == (member.member_epoch, "member-1")
    assert member.offset_fetch_member() == ("member-1", member.member_epoch)
    assert member.next_request(100) is None  # the next heartbeat is due at 1000
    member.on_offsets_answer(apis.OFFSET_COMMIT.key, [ErrorCode.STALE_MEMBER_EPOCH], 100)
    assert member.next_request(100) is not None  # at once: it brings the current epoch
    stale = error_for(ErrorCode.STALE_MEMBER_EPOCH)
    assert isinstance(stale, StaleMemberEpochError) and kinds_of(stale.code) & ErrorKind.MEMBER_EPOCH_STALE


@pytest.mark.parametrize("code, error", [(ErrorCode.UNRELEASED_INSTANCE_ID, UnreleasedInstanceIdError),
                                         (ErrorCode.UNSUPPORTED_ASSIGNOR, UnsupportedAssignorError),
                                         (ErrorCode.GROUP_MAX_SIZE_REACHED, GroupMaxSizeReachedError)])
def test_fatal_codes_are_typed_errors_raised_by_every_next_request(code: ErrorCode, error: type) -> None:
    member = _member()
    coordinator = FakeCoordinator(member)
    _joined(coordinator, {T1: [0]})
    coordinator.beat(1000, error=code)
    assert member.state is S.FATAL
    for _ in range(2):
        with pytest.raises(error, match=re.escape(ErrorCode(code).name)):
            member.next_request(1000)
    assert member.take_events() == [GroupEvent("lost", (("a", 0),))]


@pytest.mark.parametrize("instance_id, epoch", [(None, -1), ("static-1", -2)])
def test_close_revokes_then_leaves_with_epoch_minus_1_or_minus_2_for_a_static_member(instance_id: str | None,
                                                                                       epoch: int) -> None:
    member = _member(group_instance_id=instance_id)
    coordinator = FakeCoordinator(member)
    _joined(coordinator, {T1: [0]})
    member.close(500)
    assert member.next_request(500) is None and not member.left  # revoked first
    assert _handle(member) == [GroupEvent("revoked", (("a", 0),))]
    leave = coordinator.beat(500)
    assert (leave["member_epoch"], leave["instance_id"]) == (epoch, instance_id)
    assert member.left and member.state is S.UNSUBSCRIBED


def test_a_pattern_goes_as_the_regex_the_broker_evaluates() -> None:
    member = ConsumerGroupMember(ConsumerGroupSettings("g", "m"))
    member.subscribe_pattern(re.compile("orders-.*"))
    coordinator = FakeCoordinator(member)
    join = coordinator.beat(0)
    assert (join["subscribed_topic_regex"], "subscribed_topic_names" in join) == ("orders-.*", False)
    assert member.metadata_topics() is None  # every topic: the broker names topics by id


def test_the_transition_table_refuses_what_it_lacks() -> None:
    member = ConsumerGroupMember(ConsumerGroupSettings("g", "m"))
    assert S.UNSUBSCRIBED not in TRANSITIONS[ConsumerMemberEvent.RECONCILED]
    with pytest.raises(IllegalStateError, match="no such transition"):
        member._transition(ConsumerMemberEvent.RECONCILED)
    assert all(to in ConsumerMemberState for row in TRANSITIONS.values() for to in row.values())


def test_no_poll_for_max_poll_interval_leaves_and_the_next_poll_reports_lost_and_joins_again() -> None:
    member = _member(max_poll_interval_ms=10_000)
    coordinator = FakeCoordinator(member)
    member.poll(0)
    _joined(coordinator, {T1: [0]})
    assert member.poll_timeout_ms(1000) <= 10_001 - 1000
    leave = coordinator.beat(10_001)  # the poll timer expired: leave with epoch -1
    assert leave["member_epoch"] == -1 and member.state is S.STALE
    assert member.next_request(20_000) is None  # no heartbeat until the next poll
    member.poll(20_000)
    assert member.take_events() == [GroupEvent("lost", (("a", 0),))]
    assert member.state is S.JOINING and coordinator.beat(20_000)["member_epoch"] == 0


def test_subscribing_again_while_the_unsubscribe_s_leave_is_out_joins_after_it() -> None:
    member = _member()
    coordinator = FakeCoordinator(member)
    _joined(coordinator, {T1: [0]})
    member.unsubscribe(100)
    assert _handle(member) == [GroupEvent("revoked", (("a", 0),))]
    request = member.next_request(100)
    assert request is not None and request.body["member_epoch"] == -1
    member.subscribe(["b"])  # before the leave's answer
    member.on_response(HEARTBEAT, {"error_code": 0, "error_message": None, "member_id": "member-1",
                                   "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}, 150)
    assert member.state is S.JOINING
    join = coordinator.beat(150)
    assert (join["member_epoch"], join["subscribed_topic_names"]) == (0, ["b"])
