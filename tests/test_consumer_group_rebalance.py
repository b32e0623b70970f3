"""cykafka.Consumer's group behaviours beyond members coming and going (tests/test_consumer_group.py has those): a
subscribed topic that grows (on librdkafka's mock cluster: neither it nor Tansu speaks CreatePartitions), static
membership, max.poll.interval.ms and cooperative-sticky rebalances (on the embedded broker, Tansu)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from test_consumer_group import Member, _consumer, _create, _name, _split, _wait_until, _write
from test_consumer_group import members as members

from cykafka import Consumer, TopicPartition
from cykafka.broker import EmbeddedBroker
from cykafka.errors import ProtocolError
from cykafka.ports import ClientResponse
from cykafka.protocol import Request, apis


class Journal:
    """A rebalance listener that writes each call, in order, into its member's journal."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.entries.append(("revoked", partitions))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.entries.append(("assigned", partitions))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.entries.append(("lost", partitions))

    def calls(self, kind: str) -> list[set[TopicPartition]]:
        return [tps for k, tps in self.entries if k == kind]


class JournaledMember(Member):
    """A Member whose listener and polls share one journal ("read": the partitions of a non-empty poll), and that
    stops polling (but stays open) while `hold` is set."""

    def __init__(self, consumer: Consumer, topics: list[str]) -> None:
        self.journal = Journal()
        super().__init__(consumer, topics, self.journal)  # type: ignore[arg-type]
        self.hold = threading.Event()

    def run(self) -> None:
        try:
            self.consumer.subscribe(self.topics, listener=self.journal)
            while self.running:
                if self.hold.is_set():
                    time.sleep(0.05)
                    continue
                got = [(r.topic, r.partition, r.offset) for r in self.consumer.poll(0.1)]
                self.observe()
                if got:
                    self.records += got
                    self.journal.entries.append(("read", {TopicPartition(t, p) for t, p, _ in got}))
        except BaseException as e:
            self.error = e
        finally:
            self.consumer.close(10)


def _start(members: list[Member], member: Member) -> Member:
    members.append(member)
    member.start()
    return member


def _partitions(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


def test_a_subscribed_topic_that_grows_is_split_again_on_the_mock_cluster(mock_cluster: Any,
                                                                          members: list[Member]) -> None:
    mock_cluster.serve_classic_groups()
    bootstrap, topic, group = mock_cluster.bootstrap_servers, _name("grow"), _name("g")
    mock_cluster.create_topic(topic, [1, 2])
    # the mock answers a follower's SyncGroup that comes after the leader's with INVALID_REQUEST (and null bytes: the
    # connection is dropped), and sends the JoinGroup answers in the order the members first joined, so the follower
    # should be the member that joined first: the leader is the member with the lowest group.instance.id
    settings = {"session_timeout_ms": 1500, "heartbeat_interval_ms": 300}  # its rebalances wait session - 1000 ms
    first = _start(members, Member(_consumer(bootstrap, group, group_instance_id="b", **settings), [topic]))
    _wait_until(lambda: first.assignment() == _partitions(topic, 2), "the first member owns both partitions")
    two = [first, _start(members, Member(_consumer(bootstrap, group, group_instance_id="a", **settings), [topic]))]
    _wait_until(lambda: _split(two, _partitions(topic, 2)), "two members split two partitions")
    mock_cluster.recreate_topic(topic, [1, 2, 3, 1])
    # only the leader watches the partition counts (Java's rule): it rejoins, and the group splits four partitions
    _wait_until(lambda: _split(two, _partitions(topic, 4)) and all(len(m.assignment()) == 2 for m in two),
                "two members split the four partitions")
    _write(bootstrap, topic, 4, 5)
    _wait_until(lambda: sum(len(m.records) for m in two) >= 20, "every record read")
    for m in two:
        m.stop()
    assert sorted(r for m in two for r in m.records) == sorted((topic, p, o) for p in range(4) for o in range(5))
    assert all(len({p for _, p, _ in m.records}) == 2 for m in two)  # each read its own two partitions


def test_an_answer_that_cannot_be_read_fails_its_request_instead_of_losing_it(mock_cluster: Any) -> None:
    """The mock answers a SyncGroup it refuses with null assignment bytes, which the schema (and Java) do not accept:
    the connection is dropped and the request fails with the reason. It was once dropped unanswered, and a group
    member waited for its SyncGroup forever (the growth test above, now and then)."""
    from cykafka.adapters.clock import SystemClock
    from cykafka.adapters.socket_transport import SocketTransport
    from cykafka.config import AdminConfig

    mock_cluster.serve_classic_groups()
    clock = SystemClock()
    transport = SocketTransport(AdminConfig.parse({"bootstrap.servers": mock_cluster.bootstrap_servers}).connection,
                                clock_ms=clock.monotonic_ms)
    answers: list[ClientResponse] = []
    sync = Request(apis.SYNC_GROUP.key, {"group_id": _name("nobody"), "generation_id": 1, "member_id": "m",
                                         "group_instance_id": None, "protocol_type": "consumer",
                                         "protocol_name": "range", "assignments": []})
    try:
        deadline = time.monotonic() + 10  # the mock answers at once
        sent = False
        while not answers:
            assert time.monotonic() < deadline, "the SyncGroup was neither answered nor failed"
            now_ms = clock.monotonic_ms()
            node = transport.least_loaded_node(now_ms)
            if not sent and node is not None and transport.ready(node, now_ms):
                transport.send(node, sync, now_ms, handler=answers.append)
                sent = True
            for response in transport.poll(50, clock.monotonic_ms()):
                if response.handler is not None:
                    response.handler(response)
    finally:
        transport.close(0.0)
    assert isinstance(answers[0].error, ProtocolError) and "null bytes" in str(answers[0].error)


def test_a_static_member_restarted_within_the_session_gets_its_partitions_back_without_a_rebalance(
        broker: EmbeddedBroker, members: list[Member]) -> None:
    # Tansu counts a static member's session from its JoinGroup (it holds it session.timeout.ms / 2, then the
    # SyncGroup 3 s) to its first Heartbeat: 6000 expires it before that first Heartbeat (docs/consumer.md)
    bootstrap, topic, group = broker.bootstrap_servers, _name("static"), _name("g")
    _create(bootstrap, (topic, 2))
    settings = {"session_timeout_ms": 10_000, "heartbeat_interval_ms": 200}
    a = _start(members, JournaledMember(_consumer(bootstrap, group, group_instance_id="a", **settings), [topic]))
    b = _start(members, JournaledMember(_consumer(bootstrap, group, group_instance_id="b", **settings), [topic]))
    _wait_until(lambda: _split([a, b], _partitions(topic, 2)), "two static members split two partitions")
    owned_by_a, owned_by_b = a.assignment(), b.assignment()
    before = a.group
    # b may have joined a generation alone before a came (the two start at once): what counts is what comes after
    b_events = len([kind for kind, _ in b.journal.entries if kind != "read"])
    a.stop()  # a static member sends no LeaveGroup: the group waits session.timeout.ms for it
    again = _start(members, JournaledMember(_consumer(bootstrap, group, group_instance_id="a", **settings), [topic]))
    _wait_until(lambda: again.assignment() == owned_by_a, "the restarted member owns its partitions again")
    after = again.group
    assert after.generation_id == before.generation_id  # no rebalance: the same generation
    if isinstance(broker, EmbeddedBroker):
        assert after.member_id == before.member_id  # Tansu keeps the member id
    else:
        # Kafka (KIP-345) gives the returning instance a new member id in place of the old one
        assert after.member_id != before.member_id and after.member_id.startswith("a-")
    _write(bootstrap, topic, 2, 5)
    _wait_until(lambda: len(again.records) == len(b.records) == 5, "both members read their partition")
    assert [kind for kind, _ in b.journal.entries if kind != "read"][b_events:] == []  # b saw no rebalance
    assert b.assignment() == owned_by_b
    assert [kind for kind, _ in again.journal.entries if kind != "read"] == ["assigned"]


@pytest.mark.broker_only("kafka", reason="Tansu counts a static member's session from its held JoinGroup, so "
                         "sessions this short expire before the first Heartbeat (docs/consumer.md)")
def test_a_static_member_gone_longer_than_its_session_is_replaced_after_session_timeout(
        broker: Any, members: list[Member]) -> None:
    """Java's timing: a static member that sends no LeaveGroup keeps its partitions for session.timeout.ms, no
    longer; then the others get them in one rebalance."""
    bootstrap, topic, group = broker.bootstrap_servers, _name("static-gone"), _name("g")
    _create(bootstrap, (topic, 2))
    session_ms = 3000
    settings = {"session_timeout_ms": session_ms, "heartbeat_interval_ms": 300}
    a = _start(members, JournaledMember(_consumer(bootstrap, group, group_instance_id="a", **settings), [topic]))
    b = _start(members, JournaledMember(_consumer(bootstrap, group, group_instance_id="b", **settings), [topic]))
    _wait_until(lambda: _split([a, b], _partitions(topic, 2)), "two static members split two partitions")
    owned_by_b = b.assignment()
    a.stop()
    stopped = time.monotonic()
    time.sleep(session_ms / 1000 * 0.6)
    assert b.assignment() == owned_by_b  # within the session: nothing moved
    _wait_until(lambda: b.assignment() == _partitions(topic, 2), "b owns both partitions after the session")
    took_s = time.monotonic() - stopped
    print(f"static member replaced {took_s:.2f} s after it stopped (session.timeout.ms {session_ms})")
    assert session_ms / 1000 * 0.9 <= took_s <= session_ms / 1000 + 5


def test_a_member_that_stops_polling_leaves_and_its_next_poll_rejoins_reporting_its_partitions_lost(
        broker: EmbeddedBroker, members: list[Member]) -> None:
    bootstrap, topic, group = broker.bootstrap_servers, _name("slow"), _name("g")
    _create(bootstrap, (topic, 2))
    slow = _start(members, JournaledMember(_consumer(bootstrap, group, max_poll_interval_ms=3000), [topic]))
    _wait_until(lambda: slow.assignment() == _partitions(topic, 2), "the first member owns both partitions")
    other = _start(members, JournaledMember(_consumer(bootstrap, group), [topic]))
    _wait_until(lambda: _split([slow, other], _partitions(topic, 2)), "two members split two partitions")
    owned = slow.assignment()
    slow.hold.set()  # no poll for longer than max.poll.interval.ms: it leaves, the other takes everything
    _wait_until(lambda: other.assignment() == _partitions(topic, 2), "the other member owns both partitions")
    _write(bootstrap, topic, 2, 5)
    _wait_until(lambda: len(other.records) == 10, "the other member reads both partitions")
    entries = len(slow.journal.entries)
    slow.hold.clear()
    _wait_until(lambda: _split([slow, other], _partitions(topic, 2)), "the slow member is back in the group")
    after = slow.journal.entries[entries:]
    # its first poll reports the partitions it owned lost (another member has them: no commit), before any record
    assert after[0] == ("lost", owned), after
    # what it had fetched for them before leaving was dropped; the other committed on revoke: nothing read twice
    assert not set(slow.records) & set(other.records)


def test_cooperative_sticky_a_third_member_moves_only_what_it_takes_and_each_record_is_read_once(
        broker: EmbeddedBroker, members: list[Member]) -> None:
    bootstrap, topic, group = broker.bootstrap_servers, _name("coop"), _name("g")
    _create(bootstrap, (topic, 6))
    _write(bootstrap, topic, 6, 10)
    everything = _partitions(topic, 6)
    settings = {"partition_assignment_strategy": "cooperative-sticky"}
    two = [_start(members, JournaledMember(_consumer(bootstrap, group, **settings), [topic])) for _ in range(2)]
    _wait_until(lambda: _split(two, everything) and all(len(m.assignment()) == 3 for m in two),
                "two members split six partitions")
    _wait_until(lambda: sum(len(m.records) for m in two) == 60, "the two read every record")
    before = [m.assignment() for m in two]
    marks = [len(m.journal.entries) for m in two]  # (on Kafka the first may have had all six before the second)
    third = _start(members, JournaledMember(_consumer(bootstrap, group, **settings), [topic]))
    three = [*two, third]
    _wait_until(lambda: _split(three, everything) and all(len(m.assignment()) == 2 for m in three),
                "three members split six partitions")
    _write(bootstrap, topic, 6, 10, start=10)
    _wait_until(lambda: sum(len(m.records) for m in three) >= 120, "every record read")
    after = [m.assignment() for m in three]
    calls = [[(kind, tps) for kind, tps in m.journal.entries[mark:] if kind != "read"]  # since the third came,
             for m, mark in zip(three, [*marks, 0], strict=True)]                       # before closing
    for m in three:
        m.stop()
    for rest, owned, kept in zip(calls[:2], before, after[:2], strict=True):
        # one partition moved away from each, revoked alone; nothing lost, nothing added
        assert kept <= owned and len(owned - kept) == 1, calls
        assert [c for c in rest if c[1]] == [("revoked", owned - kept)], calls
    assert set().union(*(tps for kind, tps in calls[2] if kind == "assigned")) == after[2], calls
    assert not any(kind != "assigned" for kind, _ in calls[2]), calls
    read = [r for m in three for r in m.records]
    assert sorted(read) == sorted((topic, p, o) for p in range(6) for o in range(20))  # auto commit on revoke


def test_a_join_the_coordinator_holds_longer_than_request_timeout_ms_still_completes(broker: EmbeddedBroker,
                                                                                      members: list[Member]) -> None:
    """Tansu holds a JoinGroup session.timeout.ms / 2 (3 s here), past request.timeout.ms (1 s): as Java, a JoinGroup
    may take the rebalance timeout (max.poll.interval.ms) + 5 s, so the join is not cut off and retried forever."""
    topic, group = _name("slowjoin"), _name("g")
    _create(broker.bootstrap_servers, (topic, 2))
    members.append(Member(_consumer(broker.bootstrap_servers, group, request_timeout_ms=1000,
                                    max_poll_interval_ms=6000), [topic]))
    members[0].start()
    _wait_until(lambda: members[0].assignment() == {TopicPartition(topic, 0), TopicPartition(topic, 1)},
                "the member joins")
