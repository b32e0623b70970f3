"""The Sender step by step on the in-memory fake cluster under a ManualClock (Java's SenderTest, our own words)."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from cykafka import KafkaTimeoutError, ProducerClosedError
from cykafka.adapters import kafka_protocol as kp
from cykafka.adapters.clock import ManualClock, SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.ports import Ports
from cykafka.producer import Producer

TOPIC = "t"


def make(clock: Any = None, **config: Any) -> tuple[Producer, FakeCluster, ManualClock]:
    clock = clock or ManualClock()
    cluster = FakeCluster(clock, num_brokers=3)
    cluster.create_topic(TOPIC, 4)
    settings = {"bootstrap.servers": "fake:9092", "linger.ms": 5, "retry.backoff.ms": 100,
                "retry.backoff.max.ms": 100, "delivery.timeout.ms": 120000, "request.timeout.ms": 30000}
    settings.update(config)
    producer = Producer(settings, ports=Ports(transport=cluster, clock=clock,
                                              start_sender=isinstance(clock, SystemClock)))
    if isinstance(clock, SystemClock):
        producer.partitions_for(TOPIC)  # the sender thread fetches it
        return producer, cluster, clock
    producer._metadata.add_topic(TOPIC, clock.monotonic_ms())
    for _ in range(4):  # connect, fetch metadata
        producer.sender.run_once()
    return producer, cluster, clock


def produce_requests(cluster: FakeCluster) -> list[tuple[int, kp.ProduceRequest]]:
    return [(n, r) for n, r in cluster.requests if isinstance(r, kp.ProduceRequest)]


def run(producer: Producer, times: int = 3) -> None:
    for _ in range(times):
        producer.sender.run_once()


def test_linger_holds_a_batch_until_it_expires() -> None:
    producer, cluster, clock = make()
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


def test_full_batch_goes_before_linger() -> None:
    producer, cluster, _ = make(**{"batch.size": 1024, "linger.ms": 10000})
    futures = [producer.send(TOPIC, b"x" * 100, partition=0) for _ in range(20)]
    run(producer)
    assert produce_requests(cluster), "a full batch must not wait for linger.ms"
    assert futures[0].done()


def test_retriable_error_is_retried_after_backoff() -> None:
    producer, cluster, clock = make()
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


def test_non_retriable_error_fails_the_records() -> None:
    producer, cluster, clock = make()
    cluster.inject_error(87, topic=TOPIC, partition=0)  # INVALID_RECORD
    errors: list[Any] = []
    future = producer.send(TOPIC, b"v", partition=0, on_delivery=lambda err, md: errors.append(err))
    clock.advance(5)
    run(producer)
    with pytest.raises(Exception) as info:
        future.result(0)
    assert getattr(info.value, "code", None) == 87 and len(errors) == 1
    assert type(errors[0]) is type(info.value) and str(errors[0]) == str(info.value)  # result() raises a copy


def test_not_leader_refreshes_metadata_then_succeeds() -> None:
    producer, cluster, clock = make()
    cluster.move_leader(TOPIC, 1, 0)  # the producer's snapshot still names node 1
    future = producer.send(TOPIC, b"v", partition=1)
    metadata_before = sum(isinstance(r, kp.MetadataRequest) for _, r in cluster.requests)
    for _ in range(10):
        clock.advance(60)
        run(producer)
    assert sum(isinstance(r, kp.MetadataRequest) for _, r in cluster.requests) > metadata_before
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


def test_delivery_timeout_fails_in_flight_batches_and_ignores_the_late_answer() -> None:
    producer, cluster, clock = make()
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


def test_disconnect_mid_request_retries_without_loss_or_duplicate() -> None:
    producer, cluster, clock = make()
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


def test_message_too_large_splits_the_batch() -> None:
    producer, cluster, clock = make(**{"compression.type": "lz4", "batch.size": 16384})
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
