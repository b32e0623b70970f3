"""The Sender step by step on the in-memory fake cluster under a ManualClock (Java's SenderTest, our own words)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Any

import pytest
from fakes import fake_producer

from cykafka import BufferExhaustedError, KafkaTimeoutError, ProducerClosedError
from cykafka.adapters.clock import ManualClock, SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.ports import ClusterSnapshot, MetadataSource
from cykafka.producer import Producer
from cykafka.protocol import APIS, ProduceRequest, Request
from cykafka.protocol.apis import METADATA

TOPIC = "t"


OLDEST = {key: described.valid[0] for key, described in APIS.items()}


@pytest.fixture(params=[None, {}, OLDEST], ids=["dicts", "wire", "wire-oldest"])
def wire(request: pytest.FixtureRequest) -> dict[int, int] | None:
    """The fake cluster answering with dict bodies (None), or in wire mode: every request and answer as bytes
    through the real codec (the Produce hot path included) at our highest versions ({}) or our oldest."""
    return request.param  # type: ignore[no-any-return]


def make(clock: Any = None, cluster_class: type[FakeCluster] = FakeCluster, wire: dict[int, int] | None = None,
         **config: Any) -> tuple[Producer, FakeCluster, ManualClock]:
    clock = clock or ManualClock()
    cluster = cluster_class(clock, num_brokers=3, wire=wire is not None, versions=wire)
    cluster.create_topic(TOPIC, 4)
    settings = {"linger.ms": 5, "retry.backoff.ms": 100, "retry.backoff.max.ms": 100, "delivery.timeout.ms": 120000,
                "request.timeout.ms": 30000, **config}
    return fake_producer(cluster, clock, topic=TOPIC, **settings), cluster, clock


def produce_requests(cluster: FakeCluster) -> list[tuple[int, ProduceRequest]]:
    return [(n, r) for n, r in cluster.requests if isinstance(r, ProduceRequest)]


def metadata_requests(cluster: FakeCluster) -> int:
    return sum(isinstance(r, Request) and r.api_key == METADATA.key for _, r in cluster.requests)


def run(producer: Producer, times: int = 3) -> None:
    for _ in range(times):
        producer.sender.run_once()


def test_linger_holds_a_batch_until_it_expires(wire: dict[int, int] | None) -> None:
    producer, cluster, clock = make(wire=wire)
    future = producer.send(TOPIC, b"v", partition=1)
    run(producer)
    assert produce_requests(cluster) == []
    clock.advance(4)
    run(producer)
    assert produce_requests(cluster) == []
    clock.advance(1)
    run(producer)
    assert len(produce_requests(cluster)) == 1
    md = future.result(0)
    assert (md.topic, md.partition, md.offset) == (TOPIC, 1, 0)
    assert cluster.log(TOPIC, 1)[0].value == b"v"


def test_full_batch_goes_before_linger(wire: dict[int, int] | None) -> None:
    producer, cluster, _ = make(**{"batch.size": 1024, "linger.ms": 10000}, wire=wire)
    futures = [producer.send(TOPIC, b"x" * 100, partition=0) for _ in range(20)]
    run(producer)
    assert produce_requests(cluster), "a full batch must not wait for linger.ms"
    assert futures[0].done()


def test_retriable_error_is_retried_after_backoff(wire: dict[int, int] | None) -> None:
    producer, cluster, clock = make(wire=wire)
    cluster.inject_error(7, topic=TOPIC, partition=2)  # REQUEST_TIMED_OUT
    future = producer.send(TOPIC, b"v", partition=2)
    clock.advance(5)
    run(producer)
    assert len(produce_requests(cluster)) == 1 and not future.done()
    clock.advance(50)
    run(producer)
    assert len(produce_requests(cluster)) == 1, "retried before retry.backoff.ms"
    clock.advance(100)
    run(producer)
    assert len(produce_requests(cluster)) == 2
    assert future.result(0).offset == 0
    assert [r.value for r in cluster.log(TOPIC, 2)] == [b"v"]
    assert producer.metrics()["record-retry-total"] == 1


def test_non_retriable_error_fails_the_records(wire: dict[int, int] | None) -> None:
    producer, cluster, clock = make(wire=wire)
    cluster.inject_error(87, topic=TOPIC, partition=0)  # INVALID_RECORD
    errors: list[Any] = []
    future = producer.send(TOPIC, b"v", partition=0, on_delivery=lambda err, md: errors.append(err))
    clock.advance(5)
    run(producer)
    with pytest.raises(Exception) as info:
        future.result(0)
    assert getattr(info.value, "code", None) == 87 and len(errors) == 1
    assert type(errors[0]) is type(info.value) and str(errors[0]) == str(info.value)  # result() raises a copy


def test_not_leader_refreshes_metadata_then_succeeds(wire: dict[int, int] | None) -> None:
    producer, cluster, clock = make(wire=wire)
    cluster.move_leader(TOPIC, 1, 0)  # the producer's snapshot still names node 1
    future = producer.send(TOPIC, b"v", partition=1)
    metadata_before = metadata_requests(cluster)
    for _ in range(10):
        clock.advance(60)
        run(producer)
    assert metadata_requests(cluster) > metadata_before
    assert future.result(0).offset == 0
    assert produce_requests(cluster)[-1][0] == 0


def test_an_unreachable_leader_refreshes_metadata_until_leadership_moves() -> None:
    """Java's NetworkClient: a failed connection may come from stale metadata, so it asks for an update. Records for
    a leader that cannot be reached go to the new leader once metadata names it, not after metadata.max.age.ms."""
    producer, cluster, clock = make()
    cluster.unreachable.add(1)
    cluster.move_leader(TOPIC, 1, 2)  # the producer's snapshot still names node 1, and nothing was sent there
    future = producer.send(TOPIC, b"v", partition=1)
    for _ in range(10):
        clock.advance(60)
        run(producer)
    assert future.result(0).offset == 0
    assert produce_requests(cluster)[-1][0] == 2


def test_delivery_timeout_fails_queued_batches() -> None:
    producer, cluster, clock = make()
    cluster.unreachable.update(cluster.nodes)
    future = producer.send(TOPIC, b"v", partition=0)
    clock.advance(119_999)
    run(producer)
    assert not future.done()
    clock.advance(1)
    run(producer)
    with pytest.raises(KafkaTimeoutError, match=r"delivery\.timeout\.ms"):
        future.result(0)
    assert producer.metrics()["buffer-available-bytes"] == producer.config.buffer_memory


def test_delivery_timeout_fails_in_flight_batches_and_ignores_the_late_answer(wire: dict[int, int] | None) -> None:
    producer, cluster, clock = make(wire=wire)
    cluster.delay_ms[0] = 200_000
    future = producer.send(TOPIC, b"v", partition=0)
    clock.advance(5)
    run(producer)
    assert len(produce_requests(cluster)) == 1
    clock.advance(120_000)
    run(producer)
    with pytest.raises(KafkaTimeoutError):
        future.result(0)
    clock.advance(200_000)
    run(producer)  # the late success changes nothing
    with pytest.raises(KafkaTimeoutError):
        future.result(0)


def test_disconnect_mid_request_retries_without_loss_or_duplicate(wire: dict[int, int] | None) -> None:
    producer, cluster, clock = make(wire=wire)
    cluster.delay_ms[1] = 10
    future = producer.send(TOPIC, b"v", partition=1)
    clock.advance(5)
    run(producer)
    assert len(produce_requests(cluster)) == 1
    cluster.disconnect(1)
    for _ in range(10):
        clock.advance(100)
        run(producer)
    assert future.result(0).offset == 0
    assert len(cluster.log(TOPIC, 1)) == 1


def test_message_too_large_splits_the_batch(wire: dict[int, int] | None) -> None:
    producer, cluster, clock = make(**{"compression.type": "lz4", "batch.size": 16384}, wire=wire)
    cluster.max_message_bytes = 20000
    for _ in range(20):  # teach the ratio estimator that this topic compresses very well
        for _ in range(50):
            producer.send(TOPIC, b"a" * 1000, partition=0)
        clock.advance(5)
        run(producer)
    futures = [producer.send(TOPIC, os.urandom(1000), partition=0) for _ in range(60)]
    for _ in range(10):
        clock.advance(5)
        run(producer)
    assert all(f.done() for f in futures)
    offsets = [f.result(0).offset for f in futures]
    assert offsets == sorted(offsets) and len(set(offsets)) == 60
    stored = {r.offset: r.value for r in cluster.log(TOPIC, 0)}
    assert [len(stored[o]) for o in offsets] == [1000] * 60  # type: ignore[arg-type]


def test_a_piece_refused_again_is_split_in_halves_until_it_fits(wire: dict[int, int] | None) -> None:
    """batch.size over the topic's max.message.bytes: the first split's batch.size piece holds every record again and
    is refused again. Java's split since KAFKA-8350, ours: a piece refused again is split into halves by size, so
    the records go in pieces that fit, in order; before, the same piece was split and refused until
    delivery.timeout.ms (none of the 20 records delivered)."""
    producer, cluster, clock = make(**{"batch.size": 16384}, wire=wire)
    cluster.max_message_bytes = 600
    futures = [producer.send(TOPIC, b"%02d" % i + b"v" * 98, partition=0) for i in range(20)]  # one ~2.5 KB batch
    for _ in range(20):
        clock.advance(5)
        run(producer)
    assert all(f.done() for f in futures)
    assert [f.result(0).offset for f in futures] == list(range(20))
    assert [r.value[:2] for r in cluster.log(TOPIC, 0)] == [b"%02d" % i for i in range(20)]  # type: ignore[index]


def test_close_with_a_dead_cluster_returns_by_its_deadline() -> None:
    producer, cluster, _ = make(SystemClock())
    cluster.unreachable.update(cluster.nodes)
    future = producer.send(TOPIC, b"v", partition=0)
    started = time.monotonic()
    producer.close(0.5)
    elapsed = time.monotonic() - started
    assert elapsed < 0.5 * 1.1 + 0.1, elapsed
    with pytest.raises(ProducerClosedError):
        future.result(1)


# -- what mutation testing found the suite let through (issue 13) ------------------------------------------------------


@pytest.mark.parametrize(("acks", "on_the_wire"), [(0, 0), ("1", 1), ("all", -1), (-1, -1)])
def test_produce_requests_carry_the_configured_acks(acks: Any, on_the_wire: int) -> None:
    producer, cluster, clock = make(acks=acks)
    future = producer.send(TOPIC, b"v", partition=0)
    clock.advance(5)
    run(producer)
    ((_, request),) = produce_requests(cluster)
    assert request.acks == on_the_wire
    assert future.result(0).offset == (-1 if on_the_wire == 0 else 0)  # acks=0: no answer, so no offset


class LogAppendTimeCluster(FakeCluster):
    """Topics with message.timestamp.type=LogAppendTime: the broker answers with the time it appended the batch."""

    def _append(self, node_id: int, topic: str, index: int, records: Any,
                transactional_id: str | None = None) -> dict[str, Any]:
        answer = super()._append(node_id, topic, index, records, transactional_id)
        if answer["error_code"] != 0:
            return answer
        return {**answer, "log_append_time_ms": self.clock.wall_ms()}


def test_log_append_time_from_the_broker_becomes_the_records_timestamp(wire: dict[int, int] | None) -> None:
    producer, _, clock = make(cluster_class=LogAppendTimeCluster, wire=wire)
    seen: list[Any] = []
    future = producer.send(TOPIC, b"v", partition=0, timestamp_ms=1000, on_delivery=lambda err, md: seen.append(md))
    clock.advance(5)
    run(producer)
    appended_at_ms = clock.wall_ms()
    assert future.result(0).timestamp_ms == appended_at_ms != 1000
    assert seen[0].timestamp_ms == appended_at_ms


@pytest.mark.parametrize("idempotence", [True, False])
def test_retries_bounds_the_attempts_after_the_first(idempotence: bool) -> None:
    producer, cluster, clock = make(retries=2, **{"enable.idempotence": idempotence})
    cluster.inject_error(7, topic=TOPIC, partition=2, count=10)  # REQUEST_TIMED_OUT, every time
    future = producer.send(TOPIC, b"v", partition=2)
    for _ in range(10):
        clock.advance(150)  # past linger.ms and any retry backoff (100 ms +20%)
        run(producer)
    assert future.done()
    assert getattr(future.exception(0), "code", None) == 7
    assert len(produce_requests(cluster)) == 3, "retries=2: the first attempt and two retries"
    assert producer.metrics()["record-retry-total"] == 2


def test_split_pieces_are_retried_as_often_as_the_batch_they_came_from() -> None:
    """A MESSAGE_TOO_LARGE split is not an attempt: with retries=1 a piece that meets a retriable error is retried."""
    producer, cluster, clock = make(retries=1)
    cluster.inject_error(10, topic=TOPIC, partition=0)  # MESSAGE_TOO_LARGE: split
    cluster.inject_error(7, topic=TOPIC, partition=0)  # REQUEST_TIMED_OUT for the piece
    futures = [producer.send(TOPIC, b"v%d" % i, partition=0) for i in range(2)]
    for _ in range(6):
        clock.advance(150)
        run(producer)
    assert len(produce_requests(cluster)) == 3
    assert [f.result(0).offset for f in futures] == [0, 1]
    assert producer.metrics()["record-retry-total"] == 2


def fill_the_buffer(producer: Producer, cluster: FakeCluster) -> None:
    """Takes all of buffer.memory (2048, batch.size 1024) with batches no broker can take."""
    cluster.unreachable.update(cluster.nodes)
    for _ in range(2):
        producer.send(TOPIC, b"x" * 900, partition=0)
    assert producer.metrics()["buffer-available-bytes"] == 0


def test_a_full_buffer_makes_send_raise_after_max_block_ms_not_later() -> None:
    max_block_ms = 80
    producer, cluster, clock = make(**{"buffer.memory": 2048, "batch.size": 1024, "max.block.ms": max_block_ms})
    fill_the_buffer(producer, cluster)
    clock.auto_tick_ms = 10  # every clock read moves time: the memory wait's loop advances it
    started_ms = clock.monotonic_ms()
    with pytest.raises(BufferExhaustedError, match=r"max\.block\.ms \(80 ms\)"):
        producer.send(TOPIC, b"x" * 900, partition=0)
    waited_ms = clock.monotonic_ms() - started_ms  # max.block.ms and a few clock reads outside the wait
    assert max_block_ms <= waited_ms < 2 * max_block_ms, waited_ms


class LateTopicMetadata:
    """The producer's metadata without `topic` until the clock reaches at_ms."""

    def __init__(self, inner: MetadataSource, clock: ManualClock, topic: str, at_ms: int) -> None:
        self.inner, self.clock, self.topic, self.at_ms = inner, clock, topic, at_ms

    def snapshot(self) -> ClusterSnapshot:
        snapshot = self.inner.snapshot()
        if self.clock.monotonic_ms() < self.at_ms:
            return ClusterSnapshot(snapshot.nodes, {t: p for t, p in snapshot.partitions.items() if t != self.topic})
        return snapshot

    def add_topic(self, topic: str, now_ms: int) -> None:
        self.inner.add_topic(topic, now_ms)

    def set_all_topics(self, on: bool) -> None:
        self.inner.set_all_topics(on)

    def request_update(self) -> None:
        self.inner.request_update()

    def maybe_update(self, now_ms: int) -> int:
        return self.inner.maybe_update(now_ms)


def test_the_metadata_and_memory_waits_of_one_send_share_max_block_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    """Java's doSend(): one max.block.ms for both waits. Metadata comes after 60 ms of 100, then no memory comes:
    BufferExhaustedError at 100 ms, not 160."""
    max_block_ms = 100
    producer, cluster, clock = make(**{"buffer.memory": 2048, "batch.size": 1024, "max.block.ms": max_block_ms})
    late = "late"
    cluster.create_topic(late, 2)
    producer._metadata.add_topic(late, clock.monotonic_ms())
    clock.advance(100)  # retry.backoff.ms since the last metadata request
    run(producer, 4)
    assert producer._metadata.snapshot().partition_count(late) == 2
    fill_the_buffer(producer, cluster)
    started_ms = clock.monotonic_ms()
    metadata = LateTopicMetadata(producer._metadata, clock, late, started_ms + 60)
    monkeypatch.setattr(producer, "_metadata", metadata)
    producer._sender_loop_started(metadata.snapshot())  # send()'s compiled path forgets the topic too
    idle = threading.Thread(target=lambda: None)  # send() waits for metadata only while a sender thread runs;
    idle.start()  # here the test plays its part (the metadata above), so any finished thread will do
    idle.join()
    monkeypatch.setattr(producer, "_thread", idle)
    clock.auto_tick_ms = 10  # every clock read moves time: the memory wait's loop advances it
    with pytest.raises(BufferExhaustedError, match=r"max\.block\.ms \(100 ms\)"):
        producer.send(late, b"x" * 900, partition=0)
    waited_ms = clock.monotonic_ms() - started_ms
    assert max_block_ms <= waited_ms < max_block_ms + 60, waited_ms


def test_keyless_records_spread_over_every_partition_while_the_sender_runs() -> None:
    """The adaptive partitioner draws from the queue sizes of every partition only once every partition has a deque
    (Java); drawing from the deques there are would keep keyless records on the partitions used first."""
    producer, _, clock = make(**{"batch.size": 1024})
    futures = []
    for i in range(400):
        futures.append(producer.send(TOPIC, b"x" * 100))
        if i % 5 == 0:
            clock.advance(5)
            run(producer, 1)
    for _ in range(5):
        clock.advance(5)
        run(producer)
    counts = Counter(f.result(0).partition for f in futures)
    assert set(counts) == {0, 1, 2, 3}, counts


def test_an_unreachable_leaders_partitions_leave_the_keyless_choice_after_the_availability_timeout() -> None:
    """partitioner.availability.timeout.ms: node 0 (partitions 0 and 3) has data ready but cannot be reached for
    longer than 100 ms: keyless records then go to the other partitions and are delivered."""
    producer, cluster, clock = make(**{"partitioner.availability.timeout.ms": 100, "batch.size": 64})
    cluster.unreachable.add(0)
    for partition in range(4):  # every partition gets a deque: adaptive choice starts (Java)
        producer.send(TOPIC, b"v", partition=partition)
    producer.send(TOPIC, b"x" * 200)  # the topic's built-in partitioner now exists and gets the load stats
    for _ in range(5):
        clock.advance(50)
        run(producer)
    futures = [producer.send(TOPIC, b"x" * 200) for _ in range(30)]  # each is 2 x batch.size: a switch after each
    for _ in range(20):  # a drain takes one batch per partition
        clock.advance(5)
        run(producer)
    assert all(f.done() for f in futures[1:]), "a keyless record went to node 0 (the first may: chosen before)"
    assert {f.result(0).partition for f in futures[1:]} == {1, 2}
