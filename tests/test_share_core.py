"""core/share.py, sans-I/O: the share member's heartbeat state machine and the share session's epochs, partitions and
acknowledgement ranges, driven with bodies and times by hand (no broker)."""

from __future__ import annotations

import uuid

import pytest

from cykafka.core.share import (
    FATAL,
    JOINING,
    LEAVING,
    LEFT,
    STABLE,
    Acknowledgements,
    ShareMember,
    ShareSession,
    next_epoch,
)
from cykafka.errors import GroupAuthorizationError, NetworkError, RequestEncodeError, UnsupportedVersionError
from cykafka.protocol.apis import SHARE_ACKNOWLEDGE, SHARE_ACKNOWLEDGE_ACCEPT, SHARE_ACKNOWLEDGE_RENEW
from cykafka.protocol.error_codes import ErrorCode
from cykafka.protocol.frames import encode_request
from cykafka.share_network import ShareNetwork

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def _answer(epoch: int, assignment: list[tuple[uuid.UUID, list[int]]] | None = None, code: int = 0,
            interval_ms: int = 1000) -> dict[str, object]:
    return {"error_code": code, "error_message": None, "member_id": None, "member_epoch": epoch,
            "heartbeat_interval_ms": interval_ms,
            "assignment": None if assignment is None else {
                "topic_partitions": [{"topic_id": t, "partitions": ps} for t, ps in assignment]}}


def test_a_member_joins_with_its_topics_then_heartbeats_without_them_every_interval() -> None:
    member = ShareMember("g", "m1", retry_backoff_ms=100)
    assert member.next_heartbeat(0) is None  # not subscribed
    member.subscribe(["b", "a"])
    join = member.next_heartbeat(0)
    assert join == {"group_id": "g", "member_id": "m1", "member_epoch": 0, "rack_id": None,
                    "subscribed_topic_names": ["a", "b"]}
    assert member.next_heartbeat(0) is None  # one in flight
    assert member.on_heartbeat(_answer(5, [(T1, [0, 1])]), 10) is None
    assert (member.state, member.epoch, member.assignment) == (STABLE, 5, frozenset({(T1, 0), (T1, 1)}))
    assert member.next_heartbeat(500) is None and member.next_delay_ms(500) == 510
    beat = member.next_heartbeat(1010)
    assert beat is not None and (beat["member_epoch"], beat["subscribed_topic_names"]) == (5, None)
    member.on_heartbeat(_answer(6), 1020)  # no assignment in the answer: unchanged
    assert member.assignment == frozenset({(T1, 0), (T1, 1)})
    member.subscribe(["a", "b", "c"])  # a changed subscription goes with the next heartbeat
    beat = member.next_heartbeat(1020)
    assert beat is not None and beat["subscribed_topic_names"] == ["a", "b", "c"]


def test_a_fenced_member_rejoins_at_epoch_0_with_its_id_and_no_assignment() -> None:
    member = ShareMember("g", "m1", retry_backoff_ms=100)
    member.subscribe(["a"])
    member.next_heartbeat(0)
    member.on_heartbeat(_answer(3, [(T1, [0])]), 0)
    member.next_heartbeat(1000)
    error = member.on_heartbeat(_answer(0, code=ErrorCode.FENCED_MEMBER_EPOCH), 1000)
    assert error is not None and error.code == ErrorCode.FENCED_MEMBER_EPOCH
    assert (member.state, member.epoch, member.assignment) == (JOINING, 0, frozenset())
    rejoin = member.next_heartbeat(1000)
    assert rejoin is not None and (rejoin["member_id"], rejoin["member_epoch"], rejoin["subscribed_topic_names"]) == (
        "m1", 0, ["a"])


def test_retriable_errors_back_off_and_others_are_fatal() -> None:
    member = ShareMember("g", "m1", retry_backoff_ms=100)
    member.subscribe(["a"])
    member.next_heartbeat(0)
    member.on_heartbeat(_answer(0, code=ErrorCode.COORDINATOR_NOT_AVAILABLE), 0)
    assert member.next_heartbeat(50) is None and member.next_heartbeat(100) is not None
    member.on_heartbeat_failed(NetworkError("lost"), 100)
    assert member.state == JOINING and member.next_heartbeat(200) is not None
    member.on_heartbeat(_answer(0, code=ErrorCode.GROUP_AUTHORIZATION_FAILED), 200)
    assert member.state == FATAL and isinstance(member.error, GroupAuthorizationError)
    assert member.next_heartbeat(10_000) is None
    other = ShareMember("g", "m2", retry_backoff_ms=100)
    other.subscribe(["a"])
    other.next_heartbeat(0)
    other.on_heartbeat_failed(UnsupportedVersionError("no ShareGroupHeartbeat"), 0)
    assert other.state == FATAL


def test_leaving_sends_epoch_minus_1_once_joined() -> None:
    member = ShareMember("g", "m1", retry_backoff_ms=100)
    member.subscribe(["a"])
    member.next_heartbeat(0)
    member.on_heartbeat(_answer(2, [(T1, [0])]), 0)
    member.leave()
    assert member.state == LEAVING and member.assignment == frozenset()
    leave = member.next_heartbeat(1)
    assert leave is not None and leave["member_epoch"] == -1
    member.on_heartbeat(_answer(-1), 2)
    assert member.state == LEFT
    never = ShareMember("g", "m2", retry_backoff_ms=100)
    never.leave()  # never joined: nothing to send
    assert never.state == LEFT and never.next_heartbeat(0) is None


def test_acknowledgements_go_as_ranges_of_one_type() -> None:
    acks = Acknowledgements()
    for offset, type_ in [(5, 1), (3, 1), (4, 1), (6, 2), (9, 3), (10, 3), (7, 1)]:
        acks.add(offset, type_)
    assert acks.batches() == [
        {"first_offset": 3, "last_offset": 5, "acknowledge_types": [1]},
        {"first_offset": 6, "last_offset": 6, "acknowledge_types": [2]},
        {"first_offset": 7, "last_offset": 7, "acknowledge_types": [1]},
        {"first_offset": 9, "last_offset": 10, "acknowledge_types": [3]},
    ]


def test_a_session_opens_at_epoch_0_then_sends_only_changes_and_starts_over_when_lost() -> None:
    session = ShareSession(1, "g")
    sizes = {"max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1000, "max_records": 10}
    first = session.fetch("m", {(T1, 0), (T1, 1)}, {}, **sizes)
    assert first["share_session_epoch"] == 0 and not session.acks_allowed
    assert first["topics"] == [{"topic_id": T1, "partitions": [
        {"partition_index": 0, "acknowledgement_batches": []}, {"partition_index": 1, "acknowledgement_batches": []}]}]
    session.on_answer(ErrorCode.NONE)
    assert session.epoch == 1 and session.acks_allowed
    acks = {(T1, 0): Acknowledgements({7: 1})}
    second = session.fetch("m", {(T1, 0), (T2, 0)}, acks, **sizes)
    assert second["share_session_epoch"] == 1
    assert second["topics"] == [  # the acknowledged partition and the new one; (T1, 1) is forgotten
        {"topic_id": T1, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": 7, "last_offset": 7, "acknowledge_types": [1]}]}]},
        {"topic_id": T2, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}]
    assert second["forgotten_topics_data"] == [{"topic_id": T1, "partitions": [1]}]
    session.on_answer(ErrorCode.NONE)
    closing = session.acknowledge("m", {}, close=True)
    assert closing["share_session_epoch"] == -1 and session.closed
    lost = ShareSession(2, "g")
    lost.fetch("m", {(T1, 0)}, {}, **sizes)
    lost.on_answer(ErrorCode.NONE)
    lost.fetch("m", {(T1, 0)}, {}, **sizes)
    lost.on_answer(ErrorCode.SHARE_SESSION_NOT_FOUND)
    assert (lost.epoch, lost.partitions) == (0, set())
    lost.fetch("m", {(T1, 0)}, {}, **sizes)
    lost.on_answer(None)  # no answer at all: the broker's epoch is unknown
    assert lost.epoch == 0


def test_the_session_epoch_wraps_to_1() -> None:
    assert [next_epoch(e) for e in (0, 1, 2**31 - 1, -1)] == [1, 2, 1, -1]


def test_renew_goes_with_is_renew_ack_and_a_broker_without_v2_gets_a_typed_error_naming_it() -> None:
    """RENEW acknowledgements go in a ShareAcknowledge with is_renew_ack (v2, KIP-1222); written for a broker that
    speaks v1 only, the request cannot be encoded, the session keeps its epoch (the broker never saw it) and the
    acknowledgements fail with UnsupportedVersionError naming AcknowledgeType.RENEW."""
    session = ShareSession(1, "g")
    session.fetch("m", {(T1, 0)}, {}, max_wait_ms=1, min_bytes=1, max_bytes=1, max_records=1)
    session.on_answer(ErrorCode.NONE)
    acks = {(T1, 0): Acknowledgements({5: SHARE_ACKNOWLEDGE_RENEW, 6: SHARE_ACKNOWLEDGE_ACCEPT})}
    body = session.acknowledge("m", acks, renew=True)
    assert body["is_renew_ack"] is True and body["share_session_epoch"] == 1
    encode_request(SHARE_ACKNOWLEDGE.key, 2, 1, "c", body)  # v2 carries it
    with pytest.raises(RequestEncodeError, match="is_renew_ack"):
        encode_request(SHARE_ACKNOWLEDGE.key, 1, 1, "c", body)
    session.on_unsent()
    assert (session.epoch, session.in_flight, session.acks_allowed) == (1, None, True)
    error = ShareNetwork._unsendable(1, acks, RequestEncodeError("field is_renew_ack is set"))
    assert isinstance(error, UnsupportedVersionError)
    assert "AcknowledgeType.RENEW" in str(error) and "ShareAcknowledge v2" in str(error)
    plain = {(T1, 0): Acknowledgements({5: SHARE_ACKNOWLEDGE_ACCEPT})}
    assert "is_renew_ack" not in session.acknowledge("m", plain)
