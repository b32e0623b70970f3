"""The idempotent producer against the fake cluster (which checks sequences like a broker) under a ManualClock:
producer id first, sequences per partition, lost acknowledgements, gaps and lost producer state healed by an epoch
bump, expiry of sent batches, Java's config rules, and 1000 batches through injected faults."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest
from fakes import fake_cluster, fake_producer

from cykafka import AuthenticationError, ConfigError
from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.config import ProducerConfig
from cykafka.producer import Producer
from cykafka.protocol import API_NAMES, Api, Request
from cykafka.protocol.apis import INIT_PRODUCER_ID, PRODUCE

TOPIC = "t"
REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, INVALID_RECORD = 7, 19, 20, 87
OUT_OF_ORDER, DUPLICATE, UNKNOWN_PRODUCER_ID = 45, 46, 59
BIG = b"x" * 600  # one record per batch at batch.size 1024


SETTINGS = {"linger.ms": 0, "batch.size": 1024, "retry.backoff.ms": 100, "retry.backoff.max.ms": 100}


def make(partitions: int = 4, brokers: int = 3, duplicate_answer: Any = "kafka",
         **config: Any) -> tuple[Producer, FakeCluster, ManualClock]:
    clock = ManualClock()
    cluster = fake_cluster(clock, TOPIC, partitions, brokers, duplicate_answer=duplicate_answer)
    return fake_producer(cluster, clock, topic=TOPIC, **{**SETTINGS, **config}), cluster, clock


def run(producer: Producer, clock: ManualClock, loops: int = 1, step_ms: int = 0) -> None:
    for _ in range(loops):
        clock.advance(step_ms)
        producer.sender.run_once()


def run_until_done(producer: Producer, clock: ManualClock, futures: list[Any], max_loops: int = 500) -> None:
    for _ in range(max_loops):
        if all(f.done() for f in futures):
            return
        run(producer, clock, step_ms=20)
    raise AssertionError(f"{sum(not f.done() for f in futures)} records still pending")


def requests_of(cluster: FakeCluster, described: Api) -> list[Any]:
    """One API's requests, in order: Produce as ProduceRequest, the others as their bodies."""
    return [r.body if isinstance(r, Request) else r for _, r in cluster.requests if r.api_key == described.key]


def values(cluster: FakeCluster, partition: int) -> list[bytes | None]:
    return [r.value for r in cluster.log(TOPIC, partition)]


def test_the_producer_id_comes_first_and_batches_carry_sequences() -> None:
    producer, cluster, clock = make()
    kinds = [API_NAMES[r.api_key] for _, r in cluster.requests]
    assert "InitProducerId" in kinds and "Produce" not in kinds
    (init,) = requests_of(cluster, INIT_PRODUCER_ID)
    assert init["transactional_id"] is None and init["producer_id"] == -1
    futures = [producer.send(TOPIC, b"%d" % i + BIG, partition=i % 2) for i in range(6)]
    run_until_done(producer, clock, futures)
    info = producer.transaction_state()
    assert info.producer_id >= 0 and info.producer_epoch == 0 and info.state == "READY"
    for p in (0, 1):
        stored = cluster.log(TOPIC, p)
        assert [r.sequence for r in stored] == [0, 1, 2]
        assert {(r.producer_id, r.producer_epoch) for r in stored} == {(info.producer_id, 0)}


def test_without_idempotence_batches_carry_no_producer_id() -> None:
    producer, cluster, clock = make(**{"enable.idempotence": False})
    assert requests_of(cluster, INIT_PRODUCER_ID) == []
    future = producer.send(TOPIC, b"v", partition=0)
    run_until_done(producer, clock, [future])
    assert cluster.log(TOPIC, 0)[0].producer_id == -1


@pytest.mark.parametrize("duplicate_answer", ["kafka", "tansu"])
def test_a_lost_acknowledgement_is_retried_without_a_duplicate(duplicate_answer: str) -> None:
    producer, cluster, clock = make(duplicate_answer=duplicate_answer)
    cluster.inject_error(NOT_ENOUGH_REPLICAS_AFTER_APPEND, topic=TOPIC, partition=1, after_append=True)
    future = producer.send(TOPIC, b"once", partition=1)
    run_until_done(producer, clock, [future])
    assert values(cluster, 1) == [b"once"]
    assert len(requests_of(cluster, PRODUCE)) == 2
    # Kafka answers a duplicate with its first offset; Tansu with DUPLICATE_SEQUENCE_NUMBER (offset unknown: -1)
    assert future.result(0).offset == (0 if duplicate_answer == "kafka" else -1)
    assert cluster.produce_errors.get(DUPLICATE, 0) == (1 if duplicate_answer == "tansu" else 0)


def acknowledged(producer: Producer, clock: ManualClock, partition: int) -> None:
    """One record acknowledged on `partition` (sequence 0): until a partition acknowledged a batch of the producer
    id, one batch at a time goes there (test_a_partitions_first_batch_is_acknowledged_before_the_next_is_sent)."""
    run_until_done(producer, clock, [producer.send(TOPIC, b"w", partition=partition)])


def test_a_failed_batch_with_others_in_flight_heals_by_an_epoch_bump() -> None:
    producer, cluster, clock = make()
    acknowledged(producer, clock, 0)
    leader = cluster.topics[TOPIC][0].leader
    cluster.delay_ms[leader] = 50  # three requests for partition 0 out at once
    cluster.inject_error(INVALID_RECORD, topic=TOPIC, partition=0)
    futures = [producer.send(TOPIC, b"%d" % i + BIG, partition=0) for i in range(3)]
    run(producer, clock, loops=3)
    assert cluster.in_flight_count(leader) == 3
    first_id = producer.transaction_state().producer_id
    run_until_done(producer, clock, futures)
    with pytest.raises(Exception) as info:
        futures[0].result(0)
    assert getattr(info.value, "code", None) == INVALID_RECORD
    assert [f.result(0).offset for f in futures[1:]] == [1, 2]
    assert [v[:1] for v in values(cluster, 0)] == [b"w", b"1", b"2"]  # type: ignore[index]
    assert cluster.produce_errors.get(OUT_OF_ORDER, 0) >= 1, "the broker saw the gap"
    stored = cluster.log(TOPIC, 0)
    new_id = producer.transaction_state().producer_id
    assert new_id != first_id and [(r.producer_id, r.sequence) for r in stored] == [
        (first_id, 0), (new_id, 0), (new_id, 1)]


def test_unknown_producer_id_is_healed_by_an_epoch_bump() -> None:
    producer, cluster, clock = make()
    first = producer.send(TOPIC, b"a", partition=2)
    run_until_done(producer, clock, [first])
    first_id = producer.transaction_state().producer_id
    cluster.forget_producers(TOPIC, 2)
    second = producer.send(TOPIC, b"b", partition=2)
    run_until_done(producer, clock, [second])
    assert cluster.produce_errors.get(UNKNOWN_PRODUCER_ID) == 1
    assert values(cluster, 2) == [b"a", b"b"] and second.result(0).offset == 1
    assert producer.transaction_state().producer_id != first_id
    assert cluster.log(TOPIC, 2)[1].sequence == 0


def expire_first_of_two(**config: Any) -> tuple[Producer, FakeCluster, ManualClock, list[Any], int]:
    """Two batches of partition 3 out at once; the first expires (t=2000) while the second is within its delivery
    timeout (until t=3500); both answers are due at t=2500. Returns the producer, cluster, clock, the futures and
    the first producer id."""
    producer, cluster, clock = make(**{"delivery.timeout.ms": 2000, "request.timeout.ms": 1000, **config})
    acknowledged(producer, clock, 3)
    leader = cluster.topics[TOPIC][3].leader
    cluster.delay_ms[leader] = 2500
    first = producer.send(TOPIC, b"first" + BIG, partition=3)
    run(producer, clock)
    clock.advance(1500)
    cluster.delay_ms[leader] = 500
    second = producer.send(TOPIC, b"second" + BIG, partition=3)
    run(producer, clock)
    assert len(requests_of(cluster, PRODUCE)) == 3  # with the first partition's acknowledged one
    run(producer, clock, step_ms=500)
    with pytest.raises(Exception, match=r"delivery\.timeout\.ms"):
        first.result(0)
    assert not second.done()
    return producer, cluster, clock, [first, second], producer.transaction_state().producer_id


def test_an_expired_sent_batch_holds_new_sequences_until_a_later_success_resolves_it() -> None:
    producer, cluster, clock, (_, second), producer_id = expire_first_of_two()
    later = producer.send(TOPIC, b"later", partition=3)
    run(producer, clock, loops=3, step_ms=10)
    assert len(requests_of(cluster, PRODUCE)) == 3, "no new sequence while the expired one is unknown"
    assert producer.metrics()["buffer-available-bytes"] < producer.config.buffer_memory, \
        "the expired batch's buffer stays out while its request may still be read"
    clock.advance(500)  # both answers arrive: success, so the expired batch landed
    run_until_done(producer, clock, [second, later])
    assert [v[:6] for v in values(cluster, 3)] == [b"w", b"firstx", b"second", b"later"]  # type: ignore[index]
    assert producer.transaction_state().producer_id == producer_id, "resolved without an epoch bump"
    assert cluster.log(TOPIC, 3)[3].sequence == 3
    assert producer.metrics()["buffer-available-bytes"] == producer.config.buffer_memory


def test_an_expired_sent_batch_the_broker_never_got_is_resolved_by_an_epoch_bump() -> None:
    producer, cluster, clock, (_, second), producer_id = expire_first_of_two()
    later = producer.send(TOPIC, b"later", partition=3)
    leader = cluster.topics[TOPIC][3].leader
    cluster.delay_ms[leader] = 0
    cluster.disconnect(leader)  # neither request reached the log: the second's retry meets a gap
    run_until_done(producer, clock, [second, later])
    assert cluster.produce_errors.get(OUT_OF_ORDER) == 1
    assert [v[:6] for v in values(cluster, 3)] == [b"w", b"second", b"later"]  # type: ignore[index]
    new_id = producer.transaction_state().producer_id
    assert new_id != producer_id
    assert [(r.producer_id, r.sequence) for r in cluster.log(TOPIC, 3)] == [
        (producer_id, 0), (new_id, 0), (new_id, 1)]


def test_a_lone_expired_sent_batch_bumps_the_epoch_at_once_as_java_does() -> None:
    producer, cluster, clock = make(**{"delivery.timeout.ms": 2000, "request.timeout.ms": 1000})
    leader = cluster.topics[TOPIC][1].leader
    cluster.delay_ms[leader] = 100_000
    lost = producer.send(TOPIC, b"lost", partition=1)
    run(producer, clock)
    run(producer, clock, step_ms=2000)
    assert lost.done()
    producer_id = producer.transaction_state().producer_id
    cluster.delay_ms[leader] = 0
    cluster.disconnect(leader)
    later = producer.send(TOPIC, b"later", partition=1)
    run_until_done(producer, clock, [later])
    assert values(cluster, 1) == [b"later"]
    assert producer.transaction_state().producer_id != producer_id
    assert cluster.log(TOPIC, 1)[0].sequence == 0


@pytest.mark.parametrize("handled", [False, True])
def test_a_sent_batch_failed_by_an_authentication_error_does_not_leave_a_gap(handled: bool) -> None:
    """A batch in retry (sent once, its connection lost) fails with the authentication error of the reconnect: the
    broker may or may not have it, so its sequence is unresolved, as an expired one's; the next records go through
    once authentication works again (with a gap they met OUT_OF_ORDER_SEQUENCE_NUMBER until delivery.timeout.ms)."""
    producer, cluster, clock = make()
    run_until_done(producer, clock, [producer.send(TOPIC, b"first", partition=1)])
    leader = cluster.topics[TOPIC][1].leader
    cluster.delay_ms[leader] = 100_000
    second = producer.send(TOPIC, b"second", partition=1)
    run(producer, clock)
    cluster.delay_ms[leader] = 0
    cluster.disconnect(leader, handled=handled)
    run(producer, clock)  # the disconnect: the batch goes back to the queue, in retry
    assert not second.done()
    cluster.auth_failure = AuthenticationError("SASL SCRAM-SHA-256 authentication failed: bad password")
    run(producer, clock)
    with pytest.raises(AuthenticationError):
        second.result(0)
    cluster.auth_failure = None
    third = producer.send(TOPIC, b"third", partition=1)
    run_until_done(producer, clock, [third])
    assert values(cluster, 1) == ([b"first", b"second", b"third"] if handled else [b"first", b"third"])


# -- config ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("conflict", [{"acks": "1"}, {"acks": 0}, {"retries": 0},
                                      {"max.in.flight.requests.per.connection": 6}])
def test_explicit_idempotence_rejects_conflicting_settings(conflict: dict[str, Any]) -> None:
    key = next(iter(conflict))
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "enable.idempotence": True, **conflict})
    with pytest.raises(ConfigError, match=r"transactional\.id"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "transactional.id": "tx", **conflict})


@pytest.mark.parametrize("conflict", [{"acks": "1"}, {"retries": 0}, {"max.in.flight.requests.per.connection": 6}])
def test_default_idempotence_yields_to_conflicting_settings(conflict: dict[str, Any],
                                                           caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="cykafka"):
        cfg = ProducerConfig.parse({"bootstrap.servers": "h:1", **conflict})
    assert not cfg.enable_idempotence
    assert "idempotence disabled" in caplog.text


def test_idempotence_defaults_on_and_transactions_require_it() -> None:
    assert ProducerConfig.parse({"bootstrap.servers": "h:1"}).enable_idempotence
    assert ProducerConfig.parse({"bootstrap.servers": "h:1", "max.in.flight.requests.per.connection": 5,
                                 "enable.idempotence": "true"}).enable_idempotence
    with pytest.raises(ConfigError, match=r"requires enable\.idempotence"):
        ProducerConfig.parse({"bootstrap.servers": "h:1", "transactional.id": "tx", "enable.idempotence": False})


# -- faults at scale ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("duplicate_answer", ["kafka", "tansu"])
def test_1000_batches_through_retriable_errors_and_disconnects_arrive_once_in_order(duplicate_answer: str) -> None:
    rng = random.Random(5)
    partitions = 6
    producer, cluster, clock = make(partitions=partitions, duplicate_answer=duplicate_answer,
                                    **{"delivery.timeout.ms": 3_600_000, "retry.backoff.ms": 10,
                                       "retry.backoff.max.ms": 50})
    futures = [producer.send(TOPIC, b"%06d-" % i + BIG, partition=i % partitions) for i in range(1000)]
    max_in_flight = 0
    for _ in range(20_000):
        if all(f.done() for f in futures):
            break
        roll = rng.random()
        if roll < 0.1:
            cluster.inject_error(rng.choice([REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS]),
                                 partition=rng.randrange(partitions))
        elif roll < 0.2:
            cluster.inject_error(NOT_ENOUGH_REPLICAS_AFTER_APPEND, partition=rng.randrange(partitions),
                                 after_append=True)
        elif roll < 0.25:
            cluster.disconnect(rng.randrange(3), handled=rng.random() < 0.5)
        for node in cluster.nodes:
            cluster.delay_ms[node] = rng.choice([0, 0, 5, 20])
        max_in_flight = max(max_in_flight, *(cluster.in_flight_count(n) for n in cluster.nodes))
        run(producer, clock, step_ms=rng.choice([0, 1, 5, 10]))
    assert all(f.done() for f in futures)
    for f in futures:
        f.result(0)
    for p in range(partitions):
        got = [int(v[:6]) for v in values(cluster, p)]  # type: ignore[index]
        assert got == list(range(p, 1000, partitions)), f"partition {p}: lost, duplicated or reordered"
    assert max_in_flight == 5, "up to max.in.flight requests per connection"
    assert producer.metrics()["record-retry-total"] > 100
    assert cluster.produce_errors.get(OUT_OF_ORDER, 0) > 0, "later requests met the gap a failed one left"
    if duplicate_answer == "tansu":
        assert cluster.produce_errors.get(DUPLICATE, 0) > 0


def test_a_partitions_first_batch_is_acknowledged_before_the_next_is_sent() -> None:
    """Kafka accepts any sequence from a producer it holds no state for on a partition. Found on Kafka 4.4: a new
    topic's partition answered the producer's first batch NOT_LEADER_OR_FOLLOWER (its leader was still being
    created) and, a moment later, appended the second batch (sequence 503); the first could then never be appended
    (OUT_OF_ORDER_SEQUENCE_NUMBER), and since a later sequence was acknowledged the producer took it for written:
    records reported delivered, not in the log. So until a partition acknowledges a sequence of the current producer
    id and epoch, one batch at a time goes there."""
    producer, cluster, clock = make(partitions=1, **{"max.in.flight.requests.per.connection": 5})
    for node_id in cluster.nodes:
        cluster.delay_ms[node_id] = 50  # answers take 50 ms: requests pile up in flight
    cluster.inject_error(6, topic=TOPIC, partition=0, count=1)  # NOT_LEADER_OR_FOLLOWER, nothing appended
    futures = [producer.send(TOPIC, b"%d" % i + BIG, partition=0) for i in range(8)]
    run(producer, clock, loops=10, step_ms=1)
    assert cluster.in_flight_count() == 1  # the first batch alone, though 5 may be in flight
    run_until_done(producer, clock, futures)
    assert all(f.exception(0) is None for f in futures)
    assert [v[:1] for v in values(cluster, 0)] == [b"%d" % i for i in range(8)]  # every record, in order
    # once the partition acknowledged a sequence, batches are pipelined again
    more = [producer.send(TOPIC, b"%d" % i + BIG, partition=0) for i in range(8, 14)]
    run(producer, clock, loops=10, step_ms=1)
    assert cluster.in_flight_count() == 5
    run_until_done(producer, clock, more)
    assert len(values(cluster, 0)) == 14
