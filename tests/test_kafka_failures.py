"""Failures on the 3-node Apache Kafka (issue 25, item 5): every node broker and controller, replication factor 3,
min.insync.replicas 2 (the session's `kafka_cluster`). Each scenario is checked record by record by an independent
reader, confluent-kafka's consumer with isolation.level=read_committed and check.crcs=true (`cykafka.verify`), and
prints its counts (sent, acknowledged, read, lost, duplicated). What each one proves: docs/reliability.md.

Brokers are SIGKILLed (`KafkaCluster.kill`) or shut down (`stop_node`) and restarted before each test ends, so the
next one finds three nodes; always from the test's own thread: a node started from another thread dies when that
thread ends (PR_SET_PDEATHSIG names the parent thread). A SIGKILLed node keeps its partitions leaderless until the
controllers fence it (broker.session.timeout.ms, 9 s): that is most of each scenario's time, with the JVM starts. The
Spark scenario's standalone cluster starts in the background when the module begins."""

from __future__ import annotations

import collections
import importlib.util
import logging
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import confluent_kafka
import pytest
from confluent_kafka import ElectionType, KafkaException
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, NewTopic

from cykafka import (
    Consumer,
    KafkaTimeoutError,
    LogTruncationError,
    OffsetAndMetadata,
    Producer,
    TopicPartition,
    TransactionAbortableError,
)
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.socket_transport import SocketTransport
from cykafka.broker import _recv_exact
from cykafka.config import ConsumerConfig
from cykafka.ports import Ports, TransportRequest
from cykafka.protocol import decode_response, encode_request
from cykafka.protocol.apis import FIND_COORDINATOR, OFFSET_FOR_LEADER_EPOCH
from cykafka.verify import ReadRecord, read_back

pytestmark = pytest.mark.slow
T = TypeVar("T")


# -- helpers --------------------------------------------------------------------------------------------------------

def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _wait_for(what: str, check: Callable[[], T | None], timeout_s: float, step_s: float = 0.25) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found is not None and found is not False:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(step_s)


class _Cluster:
    """The session's 3-node cluster seen through confluent-kafka's AdminClient (independent of cykafka)."""

    def __init__(self, kafka: Any) -> None:
        self.kafka = kafka
        self.bootstrap = kafka.bootstrap_servers
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def create(self, topic: str, partitions: int, **options: Any) -> None:
        new = NewTopic(topic, partitions, **options) if "replica_assignment" in options else NewTopic(
            topic, partitions, 3, **options)
        for future in self.admin.create_topics([new]).values():
            future.result(30)
        _wait_for(f"{topic} has a leader for each partition", lambda: len(self.partitions(topic)) == partitions and all(
            leader >= 0 for leader, _ in self.partitions(topic).values()), 30)

    def partitions(self, topic: str) -> dict[int, tuple[int, list[int]]]:
        """partition -> (leader, in-sync replicas), from a fresh Metadata answer."""
        try:
            described = self.admin.list_topics(topic, timeout=10).topics[topic]
        except KafkaException:
            return {}
        return {p: (m.leader, sorted(m.isrs)) for p, m in described.partitions.items()}

    def restart(self, node_id: int, topic: str | None = None) -> None:
        """Starts the node again; with `topic`, also waits until it is back in every in-sync replica set of it."""
        self.kafka.restart(node_id)
        if topic is not None:
            _wait_for(f"node {node_id} back in the ISR of {topic}", lambda: all(
                node_id in isr for _, isr in self.partitions(topic).values()), 120)

    def coordinator(self, key: str, key_type: int) -> int:
        """The node coordinating a group (key_type 0) or a transactional.id (1): FindCoordinator v4 at a live node."""
        frame = encode_request(FIND_COORDINATOR.key, 4, 1, "cykafka-test", {"key_type": key_type,
                                                                             "coordinator_keys": [key]})

        def ask() -> int | None:
            for node in self.kafka.nodes:
                if not node.alive:
                    continue
                try:
                    with socket.create_connection((self.kafka.host, node.ports["PLAINTEXT"]), timeout=5) as s:
                        s.sendall(frame)
                        _, answer = decode_response(FIND_COORDINATOR.key, 4,
                                                    _recv_exact(s, struct.unpack(">i", _recv_exact(s, 4))[0]))
                except OSError:
                    continue
                (found,) = answer["coordinators"]
                return int(found["node_id"]) if found["error_code"] == 0 else None
            return None

        return _wait_for(f"the coordinator of {key!r}", ask, 30)

    def victim(self, topic: str, coordinator: int) -> tuple[int, int]:
        """(node, partition): the coordinator and a partition of topic it leads, so killing it takes a leader and
        the coordinator at once; else the leader of partition 0."""
        leaders = self.partitions(topic)
        partition = next((p for p, (leader, _) in sorted(leaders.items()) if leader == coordinator), 0)
        return leaders[partition][0], partition

    def elect_preferred(self, topic: str) -> None:
        """Elects each partition's preferred replica and waits until a Metadata answer shows it leading: the election
        is answered once the controller has it, a broker's metadata learns it a moment later (so does the ISR a
        PREFERRED_LEADER_NOT_AVAILABLE answer was checked against: elected again until then)."""
        partitions = [ConfluentPartition(topic, p) for p in self.partitions(topic)]

        def led_by_preferred() -> bool:
            self.admin.elect_leaders(ElectionType.PREFERRED, partitions).result(30)  # per-partition errors: see above
            described = self.admin.list_topics(topic, timeout=10).topics[topic].partitions
            return all(m.leader == m.replicas[0] for m in described.values())

        _wait_for(f"the preferred replicas lead {topic}", led_by_preferred, 60, step_s=0.5)


class _RecordingTransport(SocketTransport):
    """A consumer's own socket transport noting each OffsetForLeaderEpoch it sends: (node, {(topic, partition):
    (leader_epoch, current_leader_epoch)})."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.validations: list[tuple[int, dict[tuple[str, int], tuple[int, int]]]] = []

    def send(self, node_id: int, request: TransportRequest, now_ms: int, handler: Any = None,
             expect_response: bool = True, timeout_ms: int | None = None) -> None:
        if request.api_key == OFFSET_FOR_LEADER_EPOCH.key:
            self.validations.append((node_id, {(t["topic"], p["partition"]): (p["leader_epoch"],
                                                                               p["current_leader_epoch"])
                                               for t in request.body["topics"] for p in t["partitions"]}))
        super().send(node_id, request, now_ms, handler, expect_response, timeout_ms)


def _consumer(bootstrap: str, **config: Any) -> tuple[Consumer, _RecordingTransport]:
    settings = {"bootstrap.servers": bootstrap, **config}
    transport = _RecordingTransport(ConsumerConfig.parse(settings).connection, clock_ms=SystemClock().monotonic_ms)
    return Consumer(settings, ports=Ports(transport=transport)), transport


class _ProducerErrors(logging.Handler):
    """Counts the errors the producer retried on, by Kafka's error name (the Sender's DEBUG 'retrying' lines)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.retried: collections.Counter[str] = collections.Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("retrying "):
            reason = message.split("): ", 1)[-1]
            self.retried[reason.split(" ", 1)[0] if reason[:1].isupper() else "connection"] += 1


@pytest.fixture()
def producer_errors() -> Iterator[_ProducerErrors]:
    handler = _ProducerErrors()
    logger = logging.getLogger("cykafka")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture()
def cluster(kafka_cluster: Any) -> Iterator[_Cluster]:
    """The 3-node cluster; every node running again when the test ends (also when it failed)."""
    view = _Cluster(kafka_cluster)
    try:
        yield view
    finally:
        for node in kafka_cluster.nodes:
            if not node.alive:
                kafka_cluster.restart(node.node_id)


def _values(records: list[ReadRecord]) -> list[bytes]:
    return [r.value for r in records if r.value is not None]


def _counts(name: str, **counts: int) -> None:
    print(f"\n{name}: " + " ".join(f"{key}={value}" for key, value in counts.items()))


# -- 1. the leader of a partition SIGKILLed under an idempotent producer and a consumer group ------------------------

RECORDS = 500_000
CHUNK = 10_000  # records per send_batch call
PARTITIONS = 3


class _Member(threading.Thread):
    """One member of the group in a thread: polls until told to stop, auto-commits (in poll, before a revoke, on
    close), notes (partition, offset, value) of every record read."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(name=name, daemon=True)
        self.consumer, self.transport = _consumer(bootstrap, **{
            "group.id": group, "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": True,
            "auto.commit.interval.ms": 200, "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
            "max.poll.records": 5000})
        self.topic = topic
        self.reads: list[tuple[int, int, bytes | None]] = []
        self.assigned: frozenset[TopicPartition] = frozenset()  # after its last poll (a Consumer is one thread's)
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.consumer.subscribe([self.topic])
            deadline = time.monotonic() + 300
            while not self.stop.is_set() and time.monotonic() < deadline:
                self.reads.extend((r.partition, r.offset, r.value) for r in self.consumer.poll(0.2))
                self.assigned = frozenset(self.consumer.assignment())
        except BaseException as e:  # the test reports it
            self.error = e
        finally:
            try:
                self.consumer.close(30)
            finally:
                self.transport.close()


def test_leader_killed_under_an_idempotent_producer_and_a_consumer_group(cluster: _Cluster) -> None:
    """500,000 records (idempotent, acks=all) sent while a 3-member group (cykafka Consumers, auto commit) reads
    them; a partition's leader, also the group's coordinator, is SIGKILLed after 150,000, one member leaves and
    another joins after the kill. Every acknowledged record is in the log once, in send order per partition; the
    members, going on from each other's committed offsets, read every record at least once; the positions on that
    partition are validated at the new leader (KIP-320); the killed broker restarted and leading again changes
    nothing; a member joining then starts at the committed offsets."""
    topic, group = _topic("kill"), f"kill-{uuid.uuid4().hex[:8]}"
    cluster.create(topic, PARTITIONS)
    members = [_Member(f"member-{i}", cluster.bootstrap, group, topic) for i in range(3)]
    for member in members:
        member.start()
    _wait_for("every member has partitions", lambda: all(m.assigned for m in members), 60)
    coordinator = cluster.coordinator(group, 0)
    victim, killed = cluster.victim(topic, coordinator)  # also the group's coordinator
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "compression.type": "lz4"})
    results = []
    started = time.monotonic()
    for first in range(0, RECORDS, CHUNK):
        if first == 150_000:
            results[-1].result(60)  # what came before is acknowledged: now the leader of partition `killed` dies
            cluster.kafka.kill(victim)
            killed_at = time.monotonic()
        results.append(producer.send_batch(topic, [b"%d" % i for i in range(first, first + CHUNK)],
                                           partitions=[i % PARTITIONS for i in range(first, first + CHUNK)]))
        if first == 250_000:  # a member leaves (committing), another joins: partitions change hands
            members[2].stop.set()
            members.append(_Member("member-3", cluster.bootstrap, group, topic))
            members[-1].start()
    producer.flush(180)
    produced_s = time.monotonic() - started
    failed = {first + index for first, result in zip(range(0, RECORDS, CHUNK), results, strict=True)
              for index, _ in (result.errors if result.done() else [(i, None) for i in range(CHUNK)])}
    producer.close(10)
    acknowledged = set(range(RECORDS)) - failed

    log = read_back(cluster.bootstrap, topic, isolation_level="read_committed", timeout_s=120)
    by_offset = {(r.partition, r.offset): r.value for r in log}
    in_log = [int(value) for value in _values(log)]

    def read_everything() -> bool:
        seen = {(p, o) for m in members for p, o, _ in m.reads}
        return len(seen) >= len(log)

    try:
        _wait_for("the group has read every record", read_everything, 120, step_s=0.5)
    except AssertionError:  # what each member was doing, for the failure report
        for m in members:
            group = m.consumer._group_driver.member if m.consumer._group_driver else None
            print(m.name, "running" if m.is_alive() else "stopped", "error", m.error,
                  "reads", dict(collections.Counter(p for p, _, _ in m.reads)),
                  "group", group and (group.state, group.generation_id, sorted(group.assignment),
                                      sorted(group._in_flight)))
        raise
    caught_up_s = time.monotonic() - started - produced_s
    for member in members:
        member.stop.set()
    for member in members:
        member.join(60)
        assert member.error is None, member.error
    reads = [read for m in members for read in m.reads]
    read_once = {(p, o) for p, o, _ in reads}

    lost = acknowledged - set(in_log)
    duplicated = len(in_log) - len(set(in_log))
    _counts("leader killed", sent=RECORDS, acknowledged=len(acknowledged), failed=len(failed), in_log=len(in_log),
            lost=len(lost), duplicated=duplicated, read=len(reads), read_distinct=len(read_once),
            read_again=len(reads) - len(read_once), unread=len(set(by_offset) - read_once))
    print(f"killed node {victim} (leader of {topic} [{killed}], the group's coordinator: "
          f"{victim == coordinator or 'no'}) after 150,000 records; the 500,000 acknowledged in "
          f"{produced_s:.1f} s, {started + produced_s - killed_at:.1f} s after the kill; the group had read them all "
          f"{caught_up_s:.1f} s later; positions validated: "
          f"{[(node, epochs) for m in members for node, epochs in m.transport.validations]}")
    assert not lost and not duplicated and not failed
    for partition in range(PARTITIONS):  # send order per partition: i, i + 3, i + 6, ...
        values = [int(r.value) for r in log if r.partition == partition and r.value is not None]
        assert values == list(range(partition, RECORDS, PARTITIONS)), f"partition {partition} out of order"
    assert read_once == set(by_offset), "a record the group never read"
    assert all(by_offset[(p, o)] == value for p, o, value in reads), "a member read a value the log does not have"

    # KIP-320: a member owning the killed partition asked its new leader where its position's epoch ends
    asked = [(node, epochs[(topic, killed)]) for m in members for node, epochs in m.transport.validations
             if (topic, killed) in epochs]
    assert any(node != victim and leader_epoch < current for node, (leader_epoch, current) in asked), asked

    # the group's committed offsets are the log's ends; a member joining later starts there and reads only new records
    ends = {p: max(o for q, o in by_offset if q == p) + 1 for p in range(PARTITIONS)}
    late = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    committed = late.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    assert {tp.partition: om.offset for tp, om in committed.items() if om is not None} == ends

    # the killed broker back, in every ISR, leading its partition again: the log reads the same, record by record
    cluster.restart(victim, topic)
    cluster.elect_preferred(topic)
    leaders = cluster.partitions(topic)
    again = read_back(cluster.bootstrap, topic, isolation_level="read_committed", timeout_s=120)
    _counts("after the restart", leader_of_killed_partition=leaders[killed][0], in_log=len(again),
            identical=int(again == log))
    assert leaders[killed][0] == victim and again == log
    with Producer({"bootstrap.servers": cluster.bootstrap}) as producer:
        producer.send_batch(topic, [b"new-%d" % i for i in range(30)], partitions=[i % 3 for i in range(30)]).result(60)
    late.subscribe([topic])
    new_reads: list[bytes | None] = []
    deadline = time.monotonic() + 60
    while len(new_reads) < 30 and time.monotonic() < deadline:
        new_reads += [r.value for r in late.poll(0.5)]
    new_reads += [r.value for r in late.poll(1.0)]  # and nothing after them
    late.close(10)
    _counts("a member joining after the restart", read=len(new_reads), new=30)
    assert sorted(new_reads) == sorted(b"new-%d" % i for i in range(30)), "it did not start at the committed offsets"


# -- 2. two brokers down: sends wait, then succeed or fail at delivery.timeout.ms ------------------------------------

def test_two_brokers_down_sends_wait_then_succeed_or_fail_at_the_delivery_timeout(
        cluster: _Cluster, producer_errors: _ProducerErrors) -> None:
    """The two followers of a partition shut down: its leader is alone in the ISR, below min.insync.replicas 2, and
    answers NOT_ENOUGH_REPLICAS (retriable). Records wait, retried; with delivery.timeout.ms 5 s they fail then with
    KafkaTimeoutError, with the default (120 s) they are delivered once a follower is back. Nothing acknowledged is
    missing from the log, nothing is in it twice, and what failed was never written (refused before the append)."""
    topic = _topic("two-down")
    cluster.create(topic, 1)
    leader = cluster.partitions(topic)[0][0]
    followers = [node.node_id for node in cluster.kafka.nodes if node.node_id != leader]
    common = {"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0}
    waiting = Producer(common)  # delivery.timeout.ms 120000, Java's default
    short = Producer({**common, "request.timeout.ms": 2000, "delivery.timeout.ms": 5000})
    for name, producer in (("waiting", waiting), ("short", short)):  # producer ids and metadata before the outage
        producer.send(topic, b"warm-up-" + name.encode(), partition=0).result(30)
    for node_id in followers:
        cluster.kafka.stop_node(node_id)  # a controlled shutdown leaves the ISR at once
    _wait_for(f"the ISR of {topic} is its leader alone", lambda: cluster.partitions(topic).get(0) == (leader, [leader]),
              30)
    producer_errors.retried.clear()
    started = time.monotonic()
    short_futures = [short.send(topic, b"short-%d" % i, partition=0) for i in range(100)]
    waiting_futures = [waiting.send(topic, b"wait-%d" % i, partition=0) for i in range(100)]
    short_errors = [future.exception(30) for future in short_futures]
    failed_after_s = time.monotonic() - started
    still_waiting = sum(not future.done() for future in waiting_futures)
    retried_while_down = dict(producer_errors.retried)
    cluster.restart(followers[0])  # one follower back: two in-sync replicas again once it caught up
    delivered = [future.result(120) for future in waiting_futures]
    delivered_after_s = time.monotonic() - started
    cluster.restart(followers[1])  # (from this thread: a node dies with the thread that started it, PDEATHSIG)
    short.close(5)
    waiting.close(5)
    log = _values(read_back(cluster.bootstrap, topic, isolation_level="read_committed"))
    acknowledged = [b"warm-up-waiting", b"warm-up-short"] + [b"wait-%d" % i for i in range(100)]
    failed = [b"short-%d" % i for i in range(100)]
    lost = [v for v in acknowledged if v not in log]
    _counts("two brokers down", sent=202, acknowledged=len(acknowledged), failed=len(failed), in_log=len(log),
            lost=len(lost), duplicated=len(log) - len(set(log)), failed_in_log=sum(v in log for v in failed))
    print(f"failed with KafkaTimeoutError after {failed_after_s:.1f} s (delivery.timeout.ms 5000), {still_waiting} "
          f"still waiting then; delivered {delivered_after_s:.1f} s after sending, once a follower was back; errors "
          f"retried while down: {retried_while_down}, in all: {dict(producer_errors.retried)}")
    assert all(isinstance(e, KafkaTimeoutError) for e in short_errors), short_errors[:3]
    assert 4.5 <= failed_after_s < 15 and still_waiting == 100
    assert retried_while_down.get("NOT_ENOUGH_REPLICAS", 0) > 0, retried_while_down
    assert [md.offset for md in delivered] == sorted(md.offset for md in delivered)
    assert not lost and len(log) == len(set(log)) == len(acknowledged)  # the failed records were never appended


# -- 3. a transaction whose partition leader is SIGKILLed in the middle ----------------------------------------------

def test_leader_killed_mid_transaction_commits_or_aborts_atomically(cluster: _Cluster) -> None:
    """A transaction of 6,000 records on 3 partitions: after the first 3,000 are written, a partition's leader, also
    the transaction's coordinator, is SIGKILLed; the rest is sent and the transaction committed (KafkaTimeoutError:
    asked again). A read_committed reader sees all of it or nothing, each record once; a next transaction commits as
    usual."""
    topic = _topic("txn")
    cluster.create(topic, PARTITIONS)
    transactional_id = f"txn-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": transactional_id,
                         "linger.ms": 5})
    producer.init_transactions(30)
    producer.begin_transaction()
    first = producer.send_batch(topic, [b"t1-%d" % i for i in range(3000)],
                                partitions=[i % PARTITIONS for i in range(3000)])
    first.result(60)  # written (not visible: the transaction is open)
    victim, killed = cluster.victim(topic, coordinator := cluster.coordinator(transactional_id, 1))
    cluster.kafka.kill(victim)
    killed_at = time.monotonic()
    second = producer.send_batch(topic, [b"t1-%d" % i for i in range(3000, 6000)],
                                 partitions=[i % PARTITIONS for i in range(3000, 6000)])
    outcome, end, attempts = "committed", producer.commit_transaction, 0
    while True:
        attempts += 1
        try:
            end(30)
            break
        except KafkaTimeoutError:  # the commit (or abort) goes on in the background: ask again (docs/delivery.md)
            assert attempts < 8, f"the transaction did not end in 240 s ({outcome})"
        except TransactionAbortableError as e:
            print(f"commit failed ({e}); aborting")
            outcome, end = "aborted", producer.abort_transaction
    ended_s = time.monotonic() - killed_at
    producer.begin_transaction()
    producer.send_batch(topic, [b"t2-%d" % i for i in range(3)], partitions=[0, 1, 2])
    producer.commit_transaction(60)
    producer.close(10)
    cluster.restart(victim)

    committed = _values(read_back(cluster.bootstrap, topic, isolation_level="read_committed"))
    written = _values(read_back(cluster.bootstrap, topic, isolation_level="read_uncommitted"))
    first_txn = [v for v in committed if v.startswith(b"t1-")]
    expected = [b"t1-%d" % i for i in range(6000)] if outcome == "committed" else []
    _counts("leader killed mid-transaction", sent=6003, acknowledged=(6000 if outcome == "committed" else 0) + 3,
            read=len(committed), lost=len(set(expected) - set(first_txn)),
            duplicated=len(committed) - len(set(committed)), in_log_uncommitted=sum(v.startswith(b"t1-")
                                                                                    for v in written))
    print(f"killed node {victim} (leader of {topic} [{killed}], the transaction coordinator: "
          f"{victim == coordinator or 'no'}) mid-transaction; {outcome} after {attempts} commit "
          f"call(s), {ended_s:.1f} s after the kill; second batch {second.succeeded_count} delivered")
    assert sorted(first_txn) == sorted(expected), "the transaction was not all-or-nothing"
    assert sorted(v for v in committed if v.startswith(b"t2-")) == [b"t2-0", b"t2-1", b"t2-2"]
    assert len(committed) == len(set(committed))


# -- 4. a real truncation: an unclean leader election, seen by consumers (KIP-320) ------------------------------------

def test_elect_leaders_gives_a_partition_back_to_its_preferred_replica(cluster: _Cluster) -> None:
    """The partition's preferred replica (its first) shut down and started again: another replica leads (the
    independent confluent-kafka sees it) until cykafka's Admin.elect_leaders(PREFERRED) hands leadership back;
    asked again, ELECTION_NOT_NEEDED; a partition the topic lacks, UNKNOWN_TOPIC_OR_PARTITION (each in its own
    Result). The compat AdminClient gives confluent-kafka's shape and codes, beside confluent-kafka's own."""
    import cykafka
    import cykafka.compat.confluent_kafka as ck

    nodes = [n.node_id for n in cluster.kafka.nodes]
    topic, preferred = _topic("elect"), nodes[0]
    cluster.create(topic, 1, replica_assignment=[[preferred, *nodes[1:]]])
    tp, missing = TopicPartition(topic, 0), TopicPartition(topic, 7)
    cluster.kafka.stop_node(preferred)
    try:
        _wait_for("another replica leads", lambda: cluster.partitions(topic).get(0, (-1, []))[0] not in (
            -1, preferred), 60)
    finally:
        cluster.restart(preferred, topic)
    assert cluster.partitions(topic)[0][0] != preferred
    with cykafka.Admin({"bootstrap.servers": cluster.bootstrap}) as admin:
        elected = admin.elect_leaders(cykafka.ElectionType.PREFERRED, [tp, missing])
        assert list(elected) == [tp, missing] and elected[tp].error is None
        assert getattr(elected[missing].error, "name", None) == "UNKNOWN_TOPIC_OR_PARTITION"
        _wait_for("the preferred replica leads", lambda: cluster.partitions(topic)[0][0] == preferred, 30)
        again = admin.elect_leaders(cykafka.ElectionType.PREFERRED, [tp])[tp].error
        assert getattr(again, "name", None) == "ELECTION_NOT_NEEDED"
    codes = []
    for client in (ck.admin.AdminClient({"bootstrap.servers": cluster.bootstrap}), cluster.admin):
        kind = ck.ElectionType.PREFERRED if client is not cluster.admin else ElectionType.PREFERRED
        partition = (ck.TopicPartition if client is not cluster.admin else ConfluentPartition)(topic, 0)
        answer = client.elect_leaders(kind, [partition]).result(30)  # type: ignore[arg-type]
        codes.append([(p.topic, p.partition, e.code()) for p, e in answer.items()])  # a KafkaError per partition
    assert codes[0] == codes[1] == [(topic, 0, 84)]  # ELECTION_NOT_NEEDED, from both clients


def test_an_unclean_leader_election_truncates_the_log_and_consumers_detect_it(cluster: _Cluster) -> None:
    """A partition on nodes A and B (min.insync.replicas 1, unclean.leader.election.enable): 10 records on both, B
    shut down, 10 more on A alone (acknowledged: acks=all meets min ISR 1), read by two cykafka consumers; A
    SIGKILLed, B back: B becomes leader uncleanly, without those 10, and 5 new records take their offsets. The
    consumer with auto.offset.reset=earliest validates its position at B (OffsetForLeaderEpoch) and moves to the
    first offset known to diverge, reading the 5 new records; the one with none gets LogTruncationError naming it,
    then seeks there. The independent reader agrees: the log holds the first 10 and the 5 new."""
    topic = _topic("truncate")
    a, b = 1, 2
    cluster.create(topic, 1, replica_assignment=[[a, b]],
                   config={"min.insync.replicas": "1", "unclean.leader.election.enable": "true"})
    tp = TopicPartition(topic, 0)

    def send(values: list[bytes]) -> None:
        with Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0}) as producer:
            for value in values:
                producer.send(topic, value, partition=0).result(60)

    send([b"one-%d" % i for i in range(10)])
    cluster.kafka.stop_node(b)
    _wait_for("B out of the ISR", lambda: cluster.partitions(topic).get(0) == (a, [a]), 30)
    send([b"two-%d" % i for i in range(10)])
    lenient, lenient_transport = _consumer(cluster.bootstrap, **{"auto.offset.reset": "earliest"})
    strict, strict_transport = _consumer(cluster.bootstrap, **{"auto.offset.reset": "none"})
    for consumer in (lenient, strict):
        consumer.assign([tp])
    strict.seek(tp, 0)

    def poll(consumer: Consumer, count: int) -> list[tuple[int, bytes | None, int | None]]:
        got: list[tuple[int, bytes | None, int | None]] = []
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            got += [(r.offset, r.value, r.leader_epoch) for r in consumer.poll(0.2)]
        assert len(got) == count, got
        return got

    before = {name: poll(consumer, 20) for name, consumer in (("lenient", lenient), ("strict", strict))}
    epoch_a = before["lenient"][-1][2]
    assert epoch_a is not None and [v for _, v, _ in before["strict"]] == [v for _, v, _ in before["lenient"]]

    cluster.kafka.kill(a)
    cluster.kafka.restart(b)  # B and the third node: a controller quorum again
    _wait_for("B leads after the unclean election", lambda: cluster.partitions(topic).get(0, (-1, []))[0] == b, 90)
    send([b"three-%d" % i for i in range(5)])
    after = poll(lenient, 5)
    truncation: LogTruncationError | None = None
    deadline = time.monotonic() + 60
    while truncation is None and time.monotonic() < deadline:
        try:
            assert strict.poll(0.2) == []
        except LogTruncationError as e:
            truncation = e
    assert truncation is not None
    strict.seek(tp, OffsetAndMetadata(truncation.divergent_offsets[tp][0]))
    after_seek = poll(strict, 5)
    validations = [(node, epochs[(topic, 0)]) for node, epochs in lenient_transport.validations]
    for consumer, transport in ((lenient, lenient_transport), (strict, strict_transport)):
        consumer.close(10)
        transport.close()

    log = read_back(cluster.bootstrap, topic, isolation_level="read_committed")
    expected = [b"one-%d" % i for i in range(10)] + [b"three-%d" % i for i in range(5)]
    _counts("unclean leader election", sent=25, acknowledged=25, in_log=len(log),
            truncated=25 - len(log), read_before=20, read_after=len(after), lost_unseen=0,
            duplicated=len(log) - len({(r.partition, r.offset) for r in log}))
    print(f"validations by the earliest consumer (node, (epoch asked, current epoch)): {validations}; "
          f"LogTruncationError: {truncation}")
    assert _values(log) == expected
    assert [(o, v) for o, v, _ in after] == [(10 + i, b"three-%d" % i) for i in range(5)]
    assert all(epoch is not None and epoch > epoch_a for _, _, epoch in after)
    assert any(node == b and asked == epoch_a and current > epoch_a for node, (asked, current) in validations)
    assert truncation.fetch_offsets == {tp: 20} and truncation.divergent_offsets[tp][0] == 10
    assert after_seek == after
    cluster.restart(a)  # A's extra 10 records are truncated to B's log as it follows again


# -- 5. a Spark job (exactly-once write, then read) with a broker SIGKILLed mid-job ----------------------------------

@pytest.fixture(scope="module", autouse=True)
def spark_standalone(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                     ) -> Iterator[Future[Any] | None]:
    """The standalone Spark cluster (a master, 2 workers) of the Spark scenario, started in the background when the
    module begins, so its JVMs start while the Kafka scenarios mostly wait for fencing and restarts; None when that
    scenario is not selected or pyspark is missing. Stopped when the module ends."""
    selected = any(item.module is request.module and item.name.startswith("test_spark")
                   for item in request.session.items)
    if not selected or importlib.util.find_spec("pyspark") is None:
        yield None
        return
    from spark_cluster import StandaloneCluster

    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), workers=2)
    with ThreadPoolExecutor(1) as background:
        starting = background.submit(cluster.start)
        try:
            yield starting
        finally:
            try:
                starting.result(300)
            finally:
                cluster.stop()


SPARK_ROWS = 200_000
SPARK_DRIVER = """
import time
frame = spark.range(0, PARAMS["rows"], numPartitions=4).select(
    sf.col("id").cast("string").cast("binary").alias("key"), sf.col("id").cast("string").cast("binary").alias("value"))
started = time.monotonic()
(frame.write.format("cykafka").option("kafka.bootstrap.servers", PARAMS["bootstrap"]).option("topic", PARAMS["topic"])
 .option("cykafka.delivery", "exactly-once").mode("append").save())
written_s = time.monotonic() - started
# the commit's markers: Kafka writes them after EndTxn answers, and those of the dead leader's partition wait for its
# successor; a read_committed read stops at the last stable offset, so it is planned once every partition is stable
from cykafka import Admin, TopicPartition
with Admin({"bootstrap.servers": PARAMS["bootstrap"]}) as admin:
    parts = [TopicPartition(PARAMS["topic"], p) for p in range(PARAMS["partitions"])]
    for _ in range(240):
        stable = admin.list_offsets({tp: "latest" for tp in parts}, isolation_level="read_committed")
        end = admin.list_offsets({tp: "latest" for tp in parts})
        if all(stable[tp].result().offset == end[tp].result().offset for tp in parts):
            break
        time.sleep(0.5)
read = (spark.read.format("cykafka").option("kafka.bootstrap.servers", PARAMS["bootstrap"])
        .option("subscribe", PARAMS["topic"]).option("kafka.isolation.level", "read_committed").load())
summary = read.agg(sf.count("*").alias("rows"), sf.countDistinct("value").alias("distinct")).first()
print(json.dumps({"rows": summary["rows"], "distinct": summary["distinct"], "written_s": written_s}))
spark.stop()
"""


def test_spark_exactly_once_job_with_a_broker_killed_mid_job(cluster: _Cluster,
                                                             spark_standalone: Future[Any] | None) -> None:
    """format("cykafka") on a standalone Spark cluster (a master, 2 workers): 200,000 rows written exactly-once (a
    transaction per task, committed by the driver), then read back by the job with read_committed; the leader of
    partition 0 is SIGKILLed as soon as the first records of the write are in its log. Every row once, in the job's
    count and for the independent reader."""
    pytest.importorskip("pyspark")
    from spark_cluster import DRIVER_SESSION

    topic = _topic("spark")
    cluster.create(topic, PARTITIONS)
    victim = cluster.partitions(topic)[0][0]
    assert spark_standalone is not None
    waited_for_spark = time.monotonic()
    spark = spark_standalone.result(300)
    spark_wait_s = time.monotonic() - waited_for_spark
    outcome: dict[str, Any] = {}

    def job() -> None:
        try:
            outcome["result"] = spark.run_job(DRIVER_SESSION + SPARK_DRIVER, bootstrap=cluster.bootstrap, topic=topic,
                                              partitions=PARTITIONS,
                                              rows=SPARK_ROWS)
        except BaseException as e:  # the test reports it
            outcome["error"] = e

    watcher = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "watch",
                                        "log_level": 0})
    try:
        driver = threading.Thread(target=job, daemon=True)
        started = time.monotonic()
        driver.start()

        def written() -> bool:  # uncommitted records in the log: the tasks' transactions are under way
            return outcome != {} or any(watcher.get_watermark_offsets(ConfluentPartition(topic, p), timeout=5)[1] > 0
                                        for p in range(PARTITIONS))

        _wait_for("the job's first records", written, 300, step_s=0.1)
        killed_at = time.monotonic()
        cluster.kafka.kill(victim)
        driver.join(600)
        job_s = time.monotonic() - started
    finally:
        watcher.close()
    assert "error" not in outcome and "result" in outcome, outcome.get("error", "the job did not end in 600 s")
    result = outcome["result"]
    cluster.restart(victim)
    values = _values(read_back(cluster.bootstrap, topic, isolation_level="read_committed", timeout_s=120))
    expected = {b"%d" % i for i in range(SPARK_ROWS)}
    _counts("Spark job, broker killed", sent=SPARK_ROWS, read_by_job=result["rows"], distinct_by_job=result["distinct"],
            read=len(values), lost=len(expected - set(values)), duplicated=len(values) - len(set(values)))
    print(f"waited {spark_wait_s:.1f} s more for the Spark cluster; killed node {victim} "
          f"{killed_at - started:.1f} s into the job, whose write took {result['written_s']:.1f} s and which ended "
          f"after {job_s:.1f} s")
    assert result["rows"] == result["distinct"] == SPARK_ROWS
    assert len(values) == SPARK_ROWS and set(values) == expected
