"""cykafka.Consumer in a consumer group (subscribe) against the embedded broker (Tansu; it holds a join for
session.timeout.ms / 2, so these tests use 6000): members split the partitions and hand them over as members come and
go, the rebalance listener in Java's order with commits from it, pattern subscriptions, and a member killed with
SIGKILL whose partitions the others take over from the committed offsets (at-least-once)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cykafka import (
    Admin,
    Consumer,
    ConsumerRebalanceListener,
    IllegalStateError,
    InvalidArgumentError,
    KafkaError,
    NewTopic,
    Producer,
    TopicPartition,
)
from cykafka.broker import EmbeddedBroker

GROUP_CONFIG = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest",
                "metadata.max.age.ms": 1000, "default.api.timeout.ms": 30000}
DEADLINE_S = 60.0  # every wait below gives up after this


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _create(bootstrap: str, *topics: tuple[str, int]) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        for result in admin.create_topics([NewTopic(t, n) for t, n in topics]).values():
            result.result()  # raises the topic's error


def _write(bootstrap: str, topic: str, partitions: int, per_partition: int, start: int = 0) -> None:
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        for i in range(start, start + per_partition):
            for p in range(partitions):
                producer.send(topic, b"%d-%d" % (p, i), partition=p)
        producer.flush(30)


def _consumer(bootstrap: str, group: str, **config: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, **GROUP_CONFIG,
                     **{k.replace("_", "."): v for k, v in config.items()}})


class Member(threading.Thread):
    """One consumer polling on its own thread (a group rebalances only when every member polls), collecting
    records and its assignments, until stop()."""

    def __init__(self, consumer: Consumer, topics: list[str] | re.Pattern[str],
                 listener: ConsumerRebalanceListener | None = None) -> None:
        super().__init__(daemon=True)
        self.consumer, self.topics, self.listener = consumer, topics, listener
        self.records: list[tuple[str, int, int]] = []
        self.owned: set[TopicPartition] = set()  # the assignment and subscription after the last poll
        self.subscribed: set[str] = set()
        self.group: Any = None  # its ConsumerGroupMetadata
        self.error: BaseException | None = None
        self.running = True

    def run(self) -> None:
        try:
            self.consumer.subscribe(self.topics, listener=self.listener)
            while self.running:
                self.records += [(r.topic, r.partition, r.offset) for r in self.consumer.poll(0.1)]
                self.observe()
        except BaseException as e:
            self.error = e
        finally:
            self.owned = set()
            self.consumer.close(10)

    def observe(self) -> None:
        """What the test thread reads, asked on this thread: a Consumer is used by one thread at a time."""
        self.owned, self.subscribed = self.consumer.assignment(), self.consumer.subscription()
        self.group = self.consumer.group_metadata()

    def assignment(self) -> set[TopicPartition]:
        return self.owned if self.is_alive() else set()

    def stop(self) -> None:
        self.running = False
        self.join(DEADLINE_S)
        assert not self.is_alive() and self.error is None, self.error


def _wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {DEADLINE_S} s: {what}"
        time.sleep(0.05)


def _split(members: list[Member], partitions: set[TopicPartition]) -> bool:
    """Every partition owned by exactly one member, each member owning some."""
    owned = [m.assignment() for m in members]
    return all(owned) and sorted(tp for o in owned for tp in o) == sorted(partitions)


@pytest.fixture()
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for m in started:
        m.running = False
    for m in started:
        m.join(DEADLINE_S)


def test_two_then_three_members_split_the_partitions_and_read_each_record_once(broker: EmbeddedBroker,
                                                                              members: list[Member]) -> None:
    topic, group = _name("group"), _name("g")
    _create(broker.bootstrap_servers, (topic, 6))
    _write(broker.bootstrap_servers, topic, 6, 20)
    everything = {TopicPartition(topic, p) for p in range(6)}
    members.append(Member(_consumer(broker.bootstrap_servers, group), [topic]))
    members[0].start()
    _wait_until(lambda: members[0].assignment() == everything, "the first member owns every partition")
    for count in (2, 3):
        members.append(Member(_consumer(broker.bootstrap_servers, group), [topic]))
        members[-1].start()
        _wait_until(lambda: _split(members, everything), f"{count} members split the partitions")
        assert sorted(len(m.assignment()) for m in members) == [6 // count] * count
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:  # a classic group: DescribeGroups
        described = admin.describe_consumer_groups([group])[group].result()
    assert described.type == "classic" and len(described.members) == 3
    if not isinstance(broker, EmbeddedBroker):  # Tansu's DescribeGroups leaves the members' assignments empty
        assert sorted(tp for m in described.members for tp in m.partitions) == sorted(everything)
    _write(broker.bootstrap_servers, topic, 6, 20, start=20)
    _wait_until(lambda: sum(len(m.records) for m in members) >= 240, "every record read")
    for m in members:
        m.stop()
    read = [r for m in members for r in m.records]
    # auto commit on revoke: a partition handed over goes on from the last position, nothing read twice
    assert sorted(read) == sorted((topic, p, o) for p in range(6) for o in range(40))


class Recorder(ConsumerRebalanceListener):
    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.calls: list[tuple[str, set[TopicPartition]]] = []
        self.inside_revoked: list[tuple[set[TopicPartition], dict[TopicPartition, int]] | KafkaError] = []

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("revoked", partitions))
        try:  # the revoked partitions are still the consumer's here (Java): assignment, position, commit see them
            self.inside_revoked.append((self.consumer.assignment(),
                                        {tp: self.consumer.position(tp) for tp in partitions}))
            self.consumer.commit()
        except KafkaError as e:
            self.inside_revoked.append(e)
        if partitions:  # the generation is still the group's: a commit from here counts
            self.consumer.commit({tp: 1000 + tp.partition for tp in partitions})

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("assigned", partitions))


def test_the_listener_sees_java_s_order_and_commits_from_on_partitions_revoked(broker: EmbeddedBroker,
                                                                             members: list[Member]) -> None:
    topic, group = _name("listen"), _name("g")
    _create(broker.bootstrap_servers, (topic, 2))
    first = _consumer(broker.bootstrap_servers, group, enable_auto_commit=False)
    recorder = Recorder(first)
    members.append(Member(first, [topic], recorder))
    members[0].start()
    both = {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    _wait_until(lambda: members[0].assignment() == both, "the first member owns both partitions")
    members.append(Member(_consumer(broker.bootstrap_servers, group, enable_auto_commit=False), [topic]))
    members[1].start()
    _wait_until(lambda: _split(members, both), "two members split the partitions")
    members[0].stop()
    # eager (range): everything revoked, then the new assignment; close revokes what is left
    assert [kind for kind, _ in recorder.calls] == ["assigned", "revoked", "assigned", "revoked"]
    assert recorder.calls[0][1] == both and recorder.calls[1][1] == both
    assert len(recorder.calls[2][1]) == 1 and recorder.calls[3][1] == recorder.calls[2][1]
    # inside on_partitions_revoked (the rebalance's, then close's) the partitions were still assigned, with
    # positions (a mutant removed them first: assignment() was empty and position() raised)
    assert all(isinstance(seen, tuple) for seen in recorder.inside_revoked), recorder.inside_revoked
    assert [(seen[0], set(seen[1])) for seen in recorder.inside_revoked if isinstance(seen, tuple)] == [
        (both, both), (recorder.calls[2][1], recorder.calls[2][1])]
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        committed = admin.list_consumer_group_offsets(group)
    assert {tp: om.result().offset for tp, om in committed.items()} == {tp: 1000 + tp.partition for tp in both}


def test_a_pattern_subscription_follows_topics_as_they_appear(broker: EmbeddedBroker, members: list[Member]) -> None:
    prefix, group = _name("pat"), _name("g")
    _create(broker.bootstrap_servers, (f"{prefix}-a", 1), (f"{prefix}-b", 2), (f"other-{prefix}", 1))
    members.append(Member(_consumer(broker.bootstrap_servers, group), re.compile(re.escape(prefix) + "-.*")))
    members[0].start()
    wanted = {TopicPartition(f"{prefix}-a", 0), TopicPartition(f"{prefix}-b", 0), TopicPartition(f"{prefix}-b", 1)}
    _wait_until(lambda: members[0].assignment() == wanted, "the matching topics' partitions")
    _create(broker.bootstrap_servers, (f"{prefix}-c", 1))
    _wait_until(lambda: members[0].assignment() == wanted | {TopicPartition(f"{prefix}-c", 0)},
                "the new topic joins the subscription")
    assert members[0].subscribed == {f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"}


@pytest.mark.broker_only("kafka", reason="Tansu has no CreatePartitions")
def test_a_group_resplits_when_its_topic_grows_and_reads_the_new_partitions(broker: EmbeddedBroker,
                                                                            members: list[Member]) -> None:
    """Two members split a 2-partition topic; Admin.create_partitions grows it to 6; within metadata.max.age.ms
    (1000 here) the leader sees the new count, the group rebalances, the 6 partitions are split 3 and 3, and the
    records written to the new partitions are read, each once."""
    from cykafka import NewPartitions

    topic, group = _name("grows"), _name("g")
    _create(broker.bootstrap_servers, (topic, 2))
    _write(broker.bootstrap_servers, topic, 2, 10)
    members += [Member(_consumer(broker.bootstrap_servers, group), [topic]) for _ in range(2)]
    for m in members:
        m.start()
    before = {TopicPartition(topic, p) for p in range(2)}
    _wait_until(lambda: _split(members, before), "2 members split 2 partitions")
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_partitions({topic: NewPartitions(6)})[topic].result()
    grown_at = time.monotonic()
    after = {TopicPartition(topic, p) for p in range(6)}
    _wait_until(lambda: _split(members, after), "2 members split the 6 partitions")
    resplit_s = time.monotonic() - grown_at
    assert sorted(len(m.assignment()) for m in members) == [3, 3]
    _write(broker.bootstrap_servers, topic, 6, 10, start=10)
    _wait_until(lambda: sum(len(m.records) for m in members) >= 2 * 20 + 4 * 10, "every record read")
    for m in members:
        m.stop()
    read = [r for m in members for r in m.records]
    new_partitions = sum(1 for r in read if r[1] >= 2)
    print(f"re-split {resplit_s:.1f} s after the topic grew; read {len(read)} records, {new_partitions} from the "
          f"new partitions")
    assert new_partitions == 40
    assert sorted(read) == sorted([(topic, p, o) for p in range(2) for o in range(20)]
                                  + [(topic, p, o) for p in range(2, 6) for o in range(10)])


def test_records_written_by_confluent_kafka_read_equal_in_group_mode_without_aborted_ones(
        broker: EmbeddedBroker) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from test_consumer import _mixed, _rows  # the assign-mode test's data and row shape
    from test_consumer import _write as confluent_write

    from cykafka.verify import read_back

    topic, group = _name("gread"), _name("g")
    _create(broker.bootstrap_servers, (topic, 2))
    confluent_write(broker.bootstrap_servers, topic, _mixed(300), **{"compression.type": "lz4"})
    expected = sorted((topic, r.partition, r.offset, r.timestamp_ms, r.key, r.value, [tuple(h) for h in r.headers])
                      for r in read_back(broker.bootstrap_servers, topic))
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5,
                                         "transactional.id": _name("tid"), "compression.type": "zstd"})
    producer.init_transactions(30)
    for values, commit in ((b"c1 c2", True), (b"a1 a2", False), (b"c3", True)):
        producer.begin_transaction()
        for i, value in enumerate(values.split()):
            producer.produce(topic, value, partition=i % 2)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    with _consumer(broker.bootstrap_servers, group, isolation_level="read_committed") as consumer:
        consumer.subscribe([topic])
        got: list[Any] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < 303 and time.monotonic() < deadline:
            got += consumer.poll(0.2)
    plain = [r for r in got if r.value not in (b"c1", b"c2", b"c3")]
    assert _rows(plain) == expected
    assert sorted(r.value for r in got if r.value in (b"c1", b"c2", b"c3")) == [b"c1", b"c2", b"c3"]
    assert len(got) == 303  # no aborted record, nothing twice


def test_subscribe_and_assign_do_not_mix_and_bad_arguments_are_named(broker: EmbeddedBroker) -> None:
    with _consumer(broker.bootstrap_servers, _name("g")) as consumer:
        consumer.assign([TopicPartition("t", 0)])
        with pytest.raises(IllegalStateError, match="unassign"):
            consumer.subscribe(["t"])
        consumer.unassign()
        with pytest.raises(InvalidArgumentError, match=r"for one topic: \['t'\]"):
            consumer.subscribe("t")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="listener must have on_partitions_revoked"):
            consumer.subscribe(["t"], listener=object())
        consumer.subscribe(["t"])
        with pytest.raises(IllegalStateError, match="unsubscribe"):
            consumer.assign([TopicPartition("t", 0)])
        consumer.unsubscribe()
        assert consumer.subscription() == set() and consumer.assignment() == set()
    with Consumer({"bootstrap.servers": broker.bootstrap_servers}) as no_group, \
            pytest.raises(InvalidArgumentError, match=r"needs a group\.id"):
        no_group.subscribe(["t"])


WORKER = Path(__file__).with_name("group_worker.py")


def _spawn(bootstrap: str, topic: str, group: str, out: Path, protocol: str = "classic") -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(WORKER), bootstrap, topic, group, str(out), protocol],
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def test_a_member_killed_with_sigkill_loses_nothing_and_repeats_only_what_it_read_after_its_last_commit(
        broker: EmbeddedBroker, tmp_path: Path) -> None:
    kill_one_of_three(broker.bootstrap_servers, tmp_path, "classic")


def kill_one_of_three(bootstrap: str, tmp_path: Path, protocol: str) -> float:
    """Three members (group_worker.py processes of this group.protocol) split six partitions, one is killed with
    SIGKILL, the survivors read every record to the end: nothing lost, and a record read twice was read by a member
    that never committed it. Returns the seconds from the kill to the survivors owning every partition."""
    topic, group = _name("kill"), _name("g")
    _create(bootstrap, (topic, 6))
    outs = [tmp_path / f"member-{i}.jsonl" for i in range(3)]
    procs = [_spawn(bootstrap, topic, group, out, protocol) for out in outs]
    taken_over_s = 0.0
    try:
        def owned() -> list[set[int]]:
            latest: list[set[int]] = []
            for out in outs:
                assigned = [line["assigned"] for line in _lines(out) if "assigned" in line]
                latest.append(set(assigned[-1]) if assigned else set())
            return latest

        _wait_until(lambda: sorted(p for o in owned() for p in o) == list(range(6)) and all(owned()),
                    "three members split six partitions")
        victim = 0
        _write(bootstrap, topic, 6, 50)
        _wait_until(lambda: any("record" in line for line in _lines(outs[victim])), "the victim reads")
        procs[victim].send_signal(signal.SIGKILL)
        procs[victim].wait(DEADLINE_S)
        killed_at = time.monotonic()
        _write(bootstrap, topic, 6, 50, start=50)
        survivors = [i for i in range(3) if i != victim]
        _wait_until(lambda: sorted(p for i in survivors for p in owned()[i]) == list(range(6)),
                    "the survivors own every partition")
        taken_over_s = time.monotonic() - killed_at

        def survivors_read_to_the_end() -> bool:
            last: dict[int, int] = {}
            for i in survivors:
                for line in _lines(outs[i]):
                    if "record" in line:
                        partition, offset = line["record"]
                        last[partition] = max(last.get(partition, -1), offset)
            return last == dict.fromkeys(range(6), 99)

        _wait_until(survivors_read_to_the_end, "the survivors read every partition to its end")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(DEADLINE_S)
    readers: dict[tuple[int, int], list[int]] = {}
    uncommitted: set[tuple[int, int, int]] = set()  # (member, partition, offset): read, never covered by its commit
    for i, out in enumerate(outs):
        reads: dict[int, list[int]] = {}  # partition -> offsets read since the member's last commit of it
        for line in _lines(out):
            if "record" in line:
                partition, offset = line["record"]
                readers.setdefault((partition, offset), []).append(i)
                reads.setdefault(partition, []).append(offset)
            elif "committed" in line:
                for partition, end in line["committed"].items():
                    reads[int(partition)] = [o for o in reads.get(int(partition), []) if o >= end]
            else:  # an assignment changed: what was read and not committed stays uncommitted
                uncommitted |= {(i, p, o) for p, offsets in reads.items() for o in offsets}
                reads.clear()
        uncommitted |= {(i, p, o) for p, offsets in reads.items() for o in offsets}  # killed, or closed
    assert set(readers) == {(p, o) for p in range(6) for o in range(100)}  # nothing lost
    # a record read twice was read by a member that never committed it (it died, or lost the partition in a
    # rebalance before its next commit): duplicates only after the last commit (at-least-once)
    repeated = {key: who for key, who in readers.items() if len(who) > 1}
    assert all(any((i, p, o) in uncommitted for i in who) for (p, o), who in repeated.items()), repeated
    return taken_over_s


def test_close_keeps_its_deadline_when_the_coordinator_is_gone() -> None:
    """close(1.0) of a member whose broker went away: the auto commit before revoke, the listener and the LeaveGroup
    all stop at close's deadline (the commit waited default.api.timeout.ms, 60 s, once)."""
    own = EmbeddedBroker().start()
    try:
        topic = _name("gone")
        _create(own.bootstrap_servers, (topic, 1))
        consumer = Consumer({"bootstrap.servers": own.bootstrap_servers, "group.id": _name("g"),
                             "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        consumer.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment"
            consumer.poll(0.1)
        consumer.position(TopicPartition(topic, 0))  # a position to commit
    finally:
        own.stop()
    closer = threading.Thread(target=consumer.close, args=(1.0,))
    closer.start()
    closer.join(15)  # bounded: close(1.0) keeps to its own deadline; default.api.timeout.ms is 60 s
    assert not closer.is_alive()
