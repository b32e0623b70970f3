"""cykafka.Consumer with group.protocol=consumer (KIP-848) on Apache Kafka (Tansu has no ConsumerGroupHeartbeat):
three members split 6 partitions 2/2/2; a fourth joins and only the partitions that move are revoked, the members
keeping theirs reading on without a pause; a member closing hands its partitions to the others; every record read at
least once; a member killed with SIGKILL loses its partitions to the others after the session timeout; commits
carrying the member epoch survive a restart; a pattern goes to the broker; a taken group.instance.id, and a broker
without KIP-848, are typed errors from poll; classic and consumer-protocol members share a group; unsubscribe()'s
auto commit is taken in either protocol; a classic-only key is a ConfigError.

The test broker's consumer groups heartbeat every second and time out after 6 s (tests/apache_kafka.py:
group.consumer.heartbeat.interval.ms, group.consumer.session.timeout.ms)."""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_consumer_group import DEADLINE_S, _create, _name, _wait_until, kill_one_of_three

from cykafka import Admin, ConfigError, Consumer, Producer, TopicPartition
from cykafka.aio import AsyncConsumer
from cykafka.errors import UnreleasedInstanceIdError, UnsupportedVersionError

PARTITIONS = 6
CONFIG = {"group.protocol": "consumer", "auto.offset.reset": "earliest", "metadata.max.age.ms": 1000,
          "default.api.timeout.ms": 30000}


def _consumer(bootstrap: str, group: str, **config: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, **CONFIG,
                     **{k.replace("_", "."): v for k, v in config.items()}})


class Member(threading.Thread):
    """One consumer-protocol member polling on its own thread: the records it read, when it read (monotonic s of each
    non-empty poll), and its listener's calls in order."""

    def __init__(self, consumer: Consumer, topic: str) -> None:
        super().__init__(daemon=True)
        self.consumer, self.topic = consumer, topic
        self.records: list[tuple[int, int]] = []
        self.read_at: list[float] = []
        self.calls: list[tuple[str, frozenset[TopicPartition]]] = []
        self.owned: set[TopicPartition] = set()
        self.epoch = 0
        self.error: BaseException | None = None
        self.running = True

    # the rebalance listener
    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("revoked", frozenset(partitions)))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("assigned", frozenset(partitions)))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("lost", frozenset(partitions)))

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic], listener=self)
            while self.running:
                got = [(r.partition, r.offset) for r in self.consumer.poll(0.05)]
                if got:
                    self.records += got
                    self.read_at.append(time.monotonic())
                self.owned = self.consumer.assignment()
                self.epoch = self.consumer.group_metadata().generation_id
        except BaseException as e:
            self.error = e
        finally:
            self.consumer.close(10)
            self.owned = set()

    def revoked(self, since: int = 0) -> set[TopicPartition]:
        """The partitions revoked by the listener calls from the since-th on."""
        return {tp for kind, tps in self.calls[since:] if kind == "revoked" for tp in tps}

    def stop(self) -> None:
        self.running = False
        self.join(DEADLINE_S)
        assert not self.is_alive() and self.error is None, self.error


@pytest.fixture()
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for m in started:
        m.running = False
    for m in started:
        m.join(DEADLINE_S)


class Writer(threading.Thread):
    """Writes one record to every partition every 50 ms until stopped; `written` counts them per partition."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.topic, self.running, self.error = topic, True, None
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(0.05):
                for p in range(PARTITIONS):
                    self.producer.send(self.topic, b"x", partition=p)
            self.producer.flush(30)
        finally:
            self.producer.close(10)

    def stop(self) -> None:
        self.stopped.set()
        self.join(DEADLINE_S)


def _split(members: list[Member], sizes: list[int]) -> bool:
    owned = [m.owned for m in members]
    every = [tp for o in owned for tp in o]
    return sorted(len(o) for o in owned) == sorted(sizes) and len(set(every)) == len(every) == PARTITIONS


def _max_gap_s(times: list[float], start: float, end: float) -> float:
    inside = [start, *(t for t in times if start < t < end), end]
    return max(b - a for a, b in itertools.pairwise(inside))


def test_members_split_a_fourth_takes_only_what_moves_others_keep_reading_and_a_closed_ones_partitions_move(
        kafka_broker: Any, members: list[Member]) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = _name("kip848"), _name("g848")
    _create(bootstrap, (topic, PARTITIONS))
    writer = Writer(bootstrap, topic)
    writer.start()
    try:
        for _ in range(3):
            members.append(Member(_consumer(bootstrap, group), topic))
            members[-1].start()
        _wait_until(lambda: _split(members, [2, 2, 2]), "three members own 2 partitions each")
        before = {m.name: set(m.owned) for m in members}
        mark = {m.name: len(m.calls) for m in members}
        assert not any(kind == "lost" for m in members for kind, _ in m.calls)
        time.sleep(1.0)  # reading steadily before the fourth joins: the measured window starts 0.5 s before it
        joined_at = time.monotonic()
        members.append(Member(_consumer(bootstrap, group), topic))
        members[-1].start()
        _wait_until(lambda: _split(members, [2, 2, 1, 1]), "four members split the partitions 2/2/1/1")
        split_at = time.monotonic()
        moved = members[3].owned
        assert len(moved) in (1, 2)  # the uniform assignor: 2/2/1/1 in some order
        for m in members[:3]:
            revoked = m.revoked(mark[m.name])
            assert revoked <= before[m.name] and revoked == before[m.name] - m.owned, (m.name, m.calls)
            assert m.owned <= before[m.name] and m.owned, "a member keeps the partitions that do not move"
        assert set().union(*(m.revoked(mark[m.name]) for m in members[:3])) == moved, "only the moved were revoked"
        time.sleep(1.0)  # reads after the split, for the gap measure's end
        gaps = {m.name: _max_gap_s(m.read_at, joined_at - 0.5, split_at + 1.0) for m in members[:3]}
        print(f"\nrebalance (4th member) took {split_at - joined_at:.1f} s; longest pause of reads per member "
              f"during it: {', '.join(f'{g:.2f} s' for g in gaps.values())}; revoked: "
              f"{[sorted(p for _, p in m.revoked(mark[m.name])) for m in members[:3]]}")
        # the window is longer than 2 s (the rebalance takes about 1 s): a member whose reads stopped for the whole
        # rebalance would show a gap of its length
        assert split_at + 1.0 - (joined_at - 0.5) > 2.0 and max(gaps.values()) < 1.0, gaps

        leaving = members.pop(0)
        leaving.stop()
        _wait_until(lambda: _split(members, [2, 2, 2]), "the three left take the closed member's partitions")
        writer.stop()
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            ends = admin.list_offsets({TopicPartition(topic, p): "latest" for p in range(PARTITIONS)})
        end = {tp.partition: info.result().offset for tp, info in ends.items()}
        read = lambda: {r for m in [*members, leaving] for r in m.records}  # noqa: E731
        _wait_until(lambda: all(len({o for p, o in read() if p == q}) == end[q] for q in range(PARTITIONS)),
                    "every record read at least once")
        assert {r for r in read()} == {(p, o) for p in range(PARTITIONS) for o in range(end[p])}
        print(f"records: {sum(end.values())} written, {sum(len(m.records) for m in [*members, leaving])} read")
        for m in members:
            m.stop()
    finally:
        writer.stop()


def test_a_member_killed_with_sigkill_loses_its_partitions_to_the_others_after_the_session_timeout(
        kafka_broker: Any, tmp_path: Path) -> None:
    taken_over_s = kill_one_of_three(kafka_broker.bootstrap_servers, tmp_path, "consumer")
    print(f"\nSIGKILLed member: the survivors owned its partitions {taken_over_s:.1f} s after the kill (the broker's "
          f"session timeout: 6 s); nothing lost, duplicates only of records read after a member's last commit")
    assert taken_over_s > 4.0  # the broker waited for the session to expire (no heartbeat since the kill)


def test_commits_carry_the_member_epoch_and_a_new_member_resumes_at_them(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = _name("kip848c"), _name("g848c")
    _create(bootstrap, (topic, PARTITIONS))
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for p in range(PARTITIONS):
            for _ in range(10):
                producer.send(topic, b"old", partition=p)
        producer.flush(30)
    first = _consumer(bootstrap, group, enable_auto_commit=False)
    try:
        first.subscribe([topic])
        got: list[Any] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < 10 * PARTITIONS and time.monotonic() < deadline:
            got += first.poll(0.2)
        assert len(got) == 10 * PARTITIONS
        epoch = first.group_metadata().generation_id
        assert epoch > 0
        first.commit()  # OffsetCommit v9 with the member id and epoch
        everything = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = first.committed(everything)  # OffsetFetch v9 with them
        assert {tp.partition: om.offset for tp, om in committed.items() if om is not None} == \
            {p: 10 for p in range(PARTITIONS)}
        with Admin({"bootstrap.servers": bootstrap}) as admin:  # ConsumerGroupDescribe
            described = admin.describe_consumer_groups([group])[group].result()
        (member,) = described.members
        assert (described.type, described.partition_assignor, member.member_id, member.member_epoch) == (
            "consumer", "uniform", first.group_metadata().member_id, epoch)
        assert member.partitions == member.target_partitions == tuple(everything)
        print(f"\ndescribe_consumer_groups: type {described.type}, state {described.state}, assignor "
              f"{described.partition_assignor}, member epoch {member.member_epoch}, "
              f"{len(member.partitions)} partitions")
    finally:
        first.close(10)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for p in range(PARTITIONS):
            producer.send(topic, b"new", partition=p)
        producer.flush(30)
    second = _consumer(bootstrap, group, enable_auto_commit=False)
    try:
        second.subscribe([topic])
        later: list[Any] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(later) < PARTITIONS and time.monotonic() < deadline:
            later += second.poll(0.2)
        assert sorted((r.partition, r.offset, r.value) for r in later) == \
            [(p, 10, b"new") for p in range(PARTITIONS)]
        print(f"first member's epoch {epoch}; the new member resumed at offset 10 on all {PARTITIONS} partitions")
    finally:
        second.close(10)
    asyncio.run(_read_async(bootstrap, topic))


async def _read_async(bootstrap: str, topic: str) -> None:
    """AsyncConsumer (over Consumer) in a consumer-protocol group of its own, its listener on the event loop."""
    assigned: list[set[TopicPartition]] = []

    class Listener:
        def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
            assigned.append(partitions)

    async with AsyncConsumer({"bootstrap.servers": bootstrap, "group.id": _name("g848a"), **CONFIG}) as consumer:
        await consumer.subscribe([topic], listener=Listener())
        got: list[Any] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < 11 * PARTITIONS and time.monotonic() < deadline:
            got += await consumer.poll(0.2)
        assert len(got) == 11 * PARTITIONS and assigned == [{TopicPartition(topic, p) for p in range(PARTITIONS)}]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_unsubscribe_auto_commits_what_was_read_in_the_members_generation(kafka_broker: Any, protocol: str) -> None:
    """Java's onLeavePrepare on unsubscribe(): the auto commit of the revoked partitions names the member (its
    generation or epoch) and Apache Kafka takes it. It went without them and was refused (UNKNOWN_MEMBER_ID,
    logged; nothing committed) while the member was still in the group."""
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = _name("unsub"), _name("gunsub")
    _create(bootstrap, (topic, 2))
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for p in range(2):
            for _ in range(5):
                producer.send(topic, b"x", partition=p)
        producer.flush(30)
    config = {"group.protocol": protocol, "auto.offset.reset": "earliest", "auto.commit.interval.ms": 600_000}
    with Consumer({"bootstrap.servers": bootstrap, "group.id": group, **config}) as consumer:
        consumer.subscribe([topic])
        got: list[Any] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < 10 and time.monotonic() < deadline:
            got += consumer.poll(0.2)
        assert len(got) == 10
        consumer.unsubscribe()  # the only commit: the interval's first is 10 minutes away
        everything = [TopicPartition(topic, p) for p in range(2)]
        committed = consumer.committed(everything)
    assert {tp.partition: None if om is None else om.offset for tp, om in committed.items()} == {0: 5, 1: 5}


def test_a_classic_only_key_with_the_consumer_protocol_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^session\.timeout\.ms is not supported with group\.protocol=consumer"):
        Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "group.protocol": "consumer",
                  "session.timeout.ms": 10000})


def _poll_until(consumer: Consumer, condition: Any, what: str) -> list[Any]:
    records: list[Any] = []
    deadline = time.monotonic() + DEADLINE_S
    while not condition(records):
        assert time.monotonic() < deadline, f"not within {DEADLINE_S} s: {what}"
        records += consumer.poll(0.1)
    return records


def test_a_pattern_is_evaluated_by_the_broker_and_a_taken_instance_id_is_a_typed_error(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    prefix, group = _name("kip848re"), _name("g848re")
    _create(bootstrap, (f"{prefix}-a", 1), (f"{prefix}-b", 2), (f"other-{prefix}", 1))
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for topic, n in ((f"{prefix}-a", 1), (f"{prefix}-b", 2), (f"other-{prefix}", 1)):
            for p in range(n):
                producer.send(topic, b"x", partition=p)
        producer.flush(30)
    static = _consumer(bootstrap, group, group_instance_id="the-one")
    taken = _consumer(bootstrap, group, group_instance_id="the-one")
    try:
        static.subscribe(re.compile(re.escape(prefix) + "-.*"))  # sent as SubscribedTopicRegex
        got = _poll_until(static, lambda rs: len(rs) == 3, "the pattern's 3 partitions read")
        assert sorted((r.topic, r.partition) for r in got) == [(f"{prefix}-a", 0), (f"{prefix}-b", 0),
                                                               (f"{prefix}-b", 1)]
        assert static.subscription() == {f"{prefix}-a", f"{prefix}-b"}
        taken.subscribe([f"{prefix}-a"])
        with pytest.raises(UnreleasedInstanceIdError, match="UNRELEASED_INSTANCE_ID"):
            _poll_until(taken, lambda rs: False, "UNRELEASED_INSTANCE_ID raised by poll")
        print("\nthe broker's regex matched 2 of 3 topics; a second member with the static one's group.instance.id: "
              "UnreleasedInstanceIdError from poll")
    finally:
        taken.close(10)
        static.close(10)


@pytest.mark.broker_only("tansu", reason="the broker without ConsumerGroupHeartbeat")
def test_a_broker_without_kip_848_is_a_typed_error_from_poll(broker: Any) -> None:
    consumer = _consumer(broker.bootstrap_servers, _name("g848t"))
    try:
        consumer.subscribe([_name("t")])
        with pytest.raises(UnsupportedVersionError, match=r"group\.protocol=consumer needs a broker"):
            _poll_until(consumer, lambda rs: False, "UnsupportedVersionError raised by poll")
    finally:
        consumer.close(5)


def _classic(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                     "partition.assignment.strategy": "cooperative-sticky"})


@pytest.mark.parametrize("first", ["consumer", "classic"])
def test_a_classic_member_and_a_consumer_protocol_member_share_a_group(kafka_broker: Any, members: list[Member],
                                                                      first: str) -> None:
    """Kafka's online upgrade, both ways in: a consumer group takes a classic member (JoinGroup/SyncGroup, the broker
    assigns), and a stable classic group is converted when a consumer-protocol member joins it (Kafka refuses the
    conversion while the classic group rebalances: GROUP_ID_NOT_FOUND, fatal, as for Java's consumer)."""
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = _name("kip848mix"), _name("g848mix")
    _create(bootstrap, (topic, PARTITIONS))
    make = {"consumer": lambda: _consumer(bootstrap, group), "classic": lambda: _classic(bootstrap, group)}
    for kind in (first, "classic" if first == "consumer" else "consumer"):
        members.append(Member(make[kind](), topic))
        members[-1].start()
        if len(members) == 1:
            _wait_until(lambda: _split(members, [PARTITIONS]), f"the {kind} member owns every partition")
    _wait_until(lambda: _split(members, [3, 3]), "a consumer-protocol and a classic member own 3 partitions each")
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        described = admin.describe_consumer_groups([group])[group].result()
    assert described.type == "consumer" and sorted(len(m.partitions) for m in described.members) == [3, 3]
    assert all(m.error is None for m in members)
    print(f"\nmixed group ({first} member first): type {described.type}, members own 3 + 3 partitions")
