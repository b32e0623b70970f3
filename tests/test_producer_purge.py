"""Producer.purge() against the fake cluster under a ManualClock (answers held back by hand): queued records fail
with RecordPurgedError and are never sent; records in flight (in a request, or queued again for a retry) fail at once
with RecordPurgedError(in_flight=True) while their requests still complete, so idempotent sequences stay in order;
the first outcome of a record stays; later records go on."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fakes import fake_cluster, fake_producer

from cykafka import RecordPurgedError
from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.producer import Producer

TOPIC = "t"
REQUEST_TIMED_OUT, MESSAGE_TOO_LARGE, OUT_OF_ORDER = 7, 10, 45
BIG = b"x" * 600  # one record per batch at batch.size 1024
SETTINGS = {"linger.ms": 0, "batch.size": 1024, "retry.backoff.ms": 100, "retry.backoff.max.ms": 100}


def make(**config: Any) -> tuple[Producer, FakeCluster, ManualClock]:
    clock = ManualClock()
    cluster = fake_cluster(clock, TOPIC, 2, 1)
    return fake_producer(cluster, clock, topic=TOPIC, **{**SETTINGS, **config}), cluster, clock


def run(producer: Producer, clock: ManualClock, loops: int = 1, step_ms: int = 0) -> None:
    for _ in range(loops):
        clock.advance(step_ms)
        producer.sender.run_once()


def settle(producer: Producer, clock: ManualClock, cluster: FakeCluster, max_loops: int = 200) -> None:
    """Runs the sender until nothing is queued or in flight."""
    for _ in range(max_loops):
        if not producer.sender.has_pending() and cluster.in_flight_count() == 0:
            return
        run(producer, clock, step_ms=20)
    raise AssertionError("the producer still has work")


def values(cluster: FakeCluster, partition: int) -> list[bytes | None]:
    return [r.value[:2] if r.value else r.value for r in cluster.log(TOPIC, partition)]


def purged_in_flight(future: Any) -> bool | None:
    """None: delivered; else the RecordPurgedError's in_flight."""
    error = future.exception(0)
    if error is None:
        return None
    assert isinstance(error, RecordPurgedError), error
    return error.in_flight


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
def test_queued_records_are_never_sent_in_flight_ones_complete_in_the_background(idempotent: bool) -> None:
    producer, cluster, clock = make(**{"enable.idempotence": idempotent})
    producer.send(TOPIC, b"w0", partition=0)  # acknowledged: an idempotent partition's next batches go together
    settle(producer, clock, cluster)
    cluster.delay_ms[0] = 1000  # the one broker holds its answers 1 s
    callbacks: list[tuple[str, bool | None, str]] = []

    def on_delivery(name: str) -> Any:
        return lambda err, md: callbacks.append((name, getattr(err, "in_flight", None),
                                                 threading.current_thread().name))

    sent = [producer.send(TOPIC, b"s%d" % i + BIG, partition=0, on_delivery=on_delivery(f"s{i}")) for i in range(2)]
    run(producer, clock, loops=3)
    assert cluster.in_flight_count(0) == 2
    queued = [producer.send(TOPIC, b"q%d" % i + BIG, partition=i % 2, on_delivery=on_delivery(f"q{i}"))
              for i in range(3)]
    columnar = producer.send_batch(TOPIC, [b"c0", b"c1"], partitions=[1, 1])
    assert producer.purge() == 2 + 3 + 2
    assert [purged_in_flight(f) for f in sent + queued] == [True, True, False, False, False]
    with pytest.raises(Exception) as batch_error:
        columnar.result(0)
    assert [isinstance(e, RecordPurgedError) and not e.in_flight for _, e in batch_error.value.errors] == [True, True]
    me = threading.current_thread().name
    assert sorted(callbacks) == [("q0", False, me), ("q1", False, me), ("q2", False, me), ("s0", True, me),
                                 ("s1", True, me)]
    assert producer.flush(0) == 0  # nothing the caller waits for is pending
    callbacks.clear()
    settle(producer, clock, cluster)  # the purged requests' answers come: they settle, the records stay purged
    assert values(cluster, 0) == [b"w0", b"s0", b"s1"] and values(cluster, 1) == []
    assert [purged_in_flight(f) for f in sent] == [True, True] and callbacks == []
    later = [producer.send(TOPIC, b"a%d" % i + BIG, partition=i % 2) for i in range(4)]
    settle(producer, clock, cluster)
    assert [purged_in_flight(f) for f in later] == [None] * 4
    assert values(cluster, 0) == [b"w0", b"s0", b"s1", b"a0", b"a2"] and values(cluster, 1) == [b"a1", b"a3"]
    assert cluster.produce_errors.get(OUT_OF_ORDER, 0) == 0
    assert producer.completed_records == 1 + 2 + 3 + 2 + 4  # each record once, purged ones at the purge
    if idempotent:  # the sequences went on from the purged requests', no epoch bump
        assert [r.sequence for r in cluster.log(TOPIC, 0)] == [0, 1, 2, 3, 4]
        assert {r.producer_epoch for r in cluster.log(TOPIC, 0)} == {0}
    producer.close(0)


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
def test_a_batch_queued_again_for_a_retry_is_in_flight_to_purge(idempotent: bool) -> None:
    producer, cluster, clock = make(**{"enable.idempotence": idempotent})
    cluster.inject_error(REQUEST_TIMED_OUT, topic=TOPIC, partition=0)
    retried = producer.send(TOPIC, b"r0", partition=0)
    run(producer, clock, loops=2)
    assert not retried.done() and producer.sender.accumulator.sent_batches()
    assert producer.purge(in_flight=False) == 0 and not retried.done()  # sent once: not the queue's to purge
    assert producer.purge(in_queue=False) == 1 and purged_in_flight(retried) is True
    settle(producer, clock, cluster)  # still retried: it lands
    assert values(cluster, 0) == [b"r0"] and purged_in_flight(retried) is True
    after = producer.send(TOPIC, b"a0", partition=0)
    settle(producer, clock, cluster)
    assert after.result(0).offset == 1 and cluster.produce_errors.get(OUT_OF_ORDER, 0) == 0


def test_a_purged_batch_the_broker_finds_too_large_is_split_and_sent_keeping_the_records_outcome() -> None:
    producer, cluster, clock = make(**{"batch.size": 16384})
    cluster.delay_ms[0] = 1000
    cluster.inject_error(MESSAGE_TOO_LARGE, topic=TOPIC, partition=0)
    futures = [producer.send(TOPIC, b"v%d" % i, partition=0) for i in range(2)]  # one batch
    run(producer, clock, loops=3)
    assert cluster.in_flight_count(0) == 1
    assert producer.purge() == 2 and [purged_in_flight(f) for f in futures] == [True, True]
    settle(producer, clock, cluster)
    assert values(cluster, 0) == [b"v0", b"v1"] and [purged_in_flight(f) for f in futures] == [True, True]
    after = producer.send(TOPIC, b"a0", partition=0)
    settle(producer, clock, cluster)
    assert after.result(0).offset == 2 and producer.flush(0) == 0
    producer.close(0)


def test_an_interceptor_hears_a_purged_record_once() -> None:
    heard: list[Any] = []

    class Interceptor:
        def on_send(self, record: Any) -> Any:
            return record

        def on_acknowledgement(self, metadata: Any, error: Any) -> None:
            heard.append(type(error).__name__ if error is not None else metadata.offset)

    producer, cluster, clock = make(**{"interceptor.classes": [Interceptor()]})
    cluster.delay_ms[0] = 1000
    producer.send(TOPIC, b"s0", partition=0)
    run(producer, clock, loops=3)
    producer.purge()
    settle(producer, clock, cluster)
    assert heard == ["RecordPurgedError"]
