"""Faults against a real broker: deadlines hold with a dead broker, expired records fail in time with a typed error,
and the producer recovers when the broker comes back. Every future completes; nothing stays pending."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mock_cluster import MockCluster

from cykafka import KafkaTimeoutError, Producer, ProducerClosedError
from cykafka.broker import EmbeddedBroker
from cykafka.verify import read_back


def _settled(futures: list[Any]) -> tuple[int, int]:
    ok = failed = 0
    for f in futures:
        assert f.done(), "a future is still pending"
        if f.exception(0) is None:
            ok += 1
        else:
            failed += 1
    return ok, failed


def test_flush_and_close_with_a_dead_broker_return_by_their_deadlines() -> None:
    broker = EmbeddedBroker().start()
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 1})
    try:
        producer.send("rel-dead", b"before").result(30)
        broker.kill()
        futures = [producer.send("rel-dead", b"after-%d" % i) for i in range(1000)]
        started = time.monotonic()
        pending = producer.flush(1.0)
        flush_s = time.monotonic() - started
        assert pending == 1000
        assert 0.9 <= flush_s <= 1.1, flush_s
        started = time.monotonic()
        producer.close(1.0)
        close_s = time.monotonic() - started
        assert close_s <= 1.1, close_s
        ok, failed = _settled(futures)
        assert (ok, failed) == (0, 1000)
        with pytest.raises(ProducerClosedError):
            futures[0].result(0)
    finally:
        producer.close(0)
        broker.stop()


def test_unreachable_longer_than_delivery_timeout_fails_in_time_then_recovers() -> None:
    broker = EmbeddedBroker().start()
    config = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "delivery.timeout.ms": 2000,
              "request.timeout.ms": 1000, "retry.backoff.max.ms": 200, "reconnect.backoff.max.ms": 200}
    producer = Producer(config)
    try:
        producer.send("rel-gone", b"warm").result(30)
        broker.kill()
        sent_at = time.monotonic()
        futures = [producer.send("rel-gone", b"lost-%d" % i, partition=i % 4) for i in range(2000)]
        for f in futures:
            with pytest.raises(KafkaTimeoutError):
                f.result(10)
        waited_s = time.monotonic() - sent_at
        assert waited_s < 2.0 + 1.5, f"delivery.timeout.ms is 2 s; the last future failed after {waited_s:.1f} s"
        assert _settled(futures) == (0, 2000)
        broker.start()  # same port, empty memory storage
        deadline = time.monotonic() + 30
        while True:
            try:
                md = producer.send("rel-gone", b"back").result(10)
                break
            except KafkaTimeoutError:
                assert time.monotonic() < deadline, "the producer did not recover after the broker came back"
        assert md.offset >= 0
        assert producer.flush(10) == 0
    finally:
        producer.close(5)
        broker.stop()


# -- connections cut at random points, 100 times ---------------------------------------------------------------------

CUTS = 100


def test_connections_cut_100_times_mid_request_and_mid_response_lose_and_duplicate_nothing(
        broker: EmbeddedBroker) -> None:
    """An idempotent producer through a proxy that cuts every connection 100 times, half of them in the middle of a
    request or a response: every future completes, every acknowledged record is in the log exactly once, in order
    per partition."""
    from kafka_proxy import KafkaProxy

    proxy = KafkaProxy(broker.host, broker.port)
    topic = "rel-cuts"
    rng = random.Random(3)
    records = 60_000
    try:
        with Producer({"bootstrap.servers": proxy.bootstrap_servers, "linger.ms": 2, "batch.size": 4096,
                       "retry.backoff.ms": 10, "retry.backoff.max.ms": 100, "reconnect.backoff.ms": 5,
                       "reconnect.backoff.max.ms": 50}) as producer:
            futures = []
            per_cut = records // CUTS
            for cut in range(CUTS):
                futures += [producer.send(topic, b"%08d" % i, key=b"k%d" % (i % 97))
                            for i in range(cut * per_cut, (cut + 1) * per_cut)]
                if cut % 2:
                    proxy.cut_mid_frame(rng.randint(1, 200))
                else:
                    proxy.drop_all()
            assert producer.flush(120) == 0
        ok, failed = _settled(futures)
        assert proxy.drops >= CUTS * 0.9, proxy.drops  # a mid-frame cut may find no frame passing
    finally:
        proxy.close()
    assert failed == 0 and ok == records
    _assert_once_in_order(read_back(broker.bootstrap_servers, topic), records)


def _assert_once_in_order(read: list[Any], records: int) -> None:
    """The log holds values b"%08d" % 0..records-1, each once, ascending within each partition."""
    seqs = [int(r.value or b"-1") for r in read]
    where: dict[int, list[tuple[int, int]]] = {}
    for r in read:
        where.setdefault(int(r.value or b"-1"), []).append((r.partition, r.offset))
    repeated = {seq: places for seq, places in where.items() if len(places) > 1}
    assert not repeated, f"{len(repeated)} records written more than once (value: [(partition, offset)]): " \
                         f"{dict(list(repeated.items())[:20])}"
    assert len(seqs) == len(set(seqs)) == records, "losses"
    last: dict[int, int] = {}
    for r in read:
        seq = int(r.value or b"-1")
        assert seq > last.get(r.partition, -1), "reordered within a partition"
        last[r.partition] = seq


# -- leaders moving and brokers going down on librdkafka's mock cluster ------------------------------------------------

MOVES = 6


@pytest.mark.parametrize("config", [{"transactional.id": "rel-moves"},
                                    {"enable.idempotence": False, "max.in.flight.requests.per.connection": 1}],
                         ids=["transactional", "one-in-flight"])
def test_leaders_moving_between_brokers_lose_duplicate_and_reorder_nothing(
        mock_cluster: MockCluster, config: dict[str, Any]) -> None:
    """Leadership of every partition rotates across three brokers six times while records are queued and in flight:
    the old leaders answer NOT_LEADER_OR_FOLLOWER, the producer refreshes its metadata and retries on the new ones.
    With five requests in flight, order rests on the broker's sequence checks, which the mock makes only for
    transactional producers (an idempotent one without transactional.id gets none): hence a transaction here."""
    topic = "rel-moves"
    mock_cluster.create_topic(topic, leaders=[1, 2, 3, 1])
    records = 60_000
    per_move = records // MOVES
    transactional = "transactional.id" in config
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 2, "batch.size": 4096,
                   "retry.backoff.ms": 10, **config}) as producer:
        if transactional:
            producer.init_transactions(30)
            producer.begin_transaction()
        futures = []
        for move in range(1, MOVES + 1):
            block = [producer.send(topic, b"%08d" % i, key=b"k%d" % (i % 97))
                     for i in range((move - 1) * per_move, move * per_move)]
            futures += block
            if move > 1:
                # the block's first record went out after the last move, to the leader the producer knew before it
                # (NOT_LEADER_OR_FOLLOWER, a retry) unless an error since made it refresh (a retry too). Without
                # this wait all requests may go out before the first move, or while leaders are where they started
                # (moves 3 and 6): no retry at all
                block[0].result(30)
            for partition in range(4):
                mock_cluster.set_leader(topic, partition, 1 + (partition + move) % 3)
        if transactional:
            producer.commit_transaction(60)
        assert producer.flush(60) == 0
        # the records sent after the first move went to the old leaders first (nothing told the producer before)
        assert producer.metrics()["record-retry-total"] > 0
    assert _settled(futures) == (records, 0)
    # the mock writes its commit marker without a CRC
    _assert_once_in_order(read_back(mock_cluster.bootstrap_servers, topic, check_crcs=not transactional), records)


def test_records_for_a_leader_that_went_down_are_delivered_once_leadership_moves(mock_cluster: MockCluster) -> None:
    """Broker 1 drops its connections and refuses new ones; its partitions' records wait (retrying, refreshing
    metadata) until the cluster names another leader, then go there. Nothing fails within delivery.timeout.ms."""
    topic = "rel-down"
    mock_cluster.create_topic(topic, leaders=[1, 2, 3, 1])
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 2, "retry.backoff.ms": 10,
                   "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 100}) as producer:
        futures = [producer.send(topic, b"%08d" % i, partition=i % 4) for i in range(4000)]
        assert producer.flush(30) == 0
        mock_cluster.set_broker_up(1, False)
        futures += [producer.send(topic, b"%08d" % i, partition=i % 4) for i in range(4000, 8000)]
        deadline = time.monotonic() + 10  # partitions 1 and 2 (brokers 2, 3) keep going; 0 and 3 wait
        while time.monotonic() < deadline and not all(f.done() for f in futures[4000 + 1::4]):
            time.sleep(0.01)
        assert all(f.done() for f in futures[4000 + 1::4]) and not any(f.done() for f in futures[4000::4])
        for partition in (0, 3):
            mock_cluster.set_leader(topic, partition, 2)
        assert producer.flush(30) == 0
        mock_cluster.set_broker_up(1, True)
    assert _settled(futures) == (8000, 0)
    _assert_once_in_order(read_back(mock_cluster.bootstrap_servers, topic), 8000)


def test_injected_produce_errors_retriable_ones_retried_others_fail_only_their_records(
        mock_cluster: MockCluster) -> None:
    """The mock answers Produce requests with the errors pushed to it: retriable ones are retried until the record is
    written once; a non-retriable one fails that record with its Kafka error name and the next record goes through."""
    from cykafka.errors import BrokerResponseError
    from cykafka.protocol.error_codes import ERROR_CODES

    topic = "rel-errors"
    mock_cluster.create_topic(topic, leaders=[2])
    retriable = ["NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "LEADER_NOT_AVAILABLE", "NOT_ENOUGH_REPLICAS",
                 "NOT_ENOUGH_REPLICAS_AFTER_APPEND"]
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0,
                   "retry.backoff.ms": 10}) as producer:
        assert producer.send(topic, b"00000000").result(30).offset == 0  # connected, producer id assigned
        mock_cluster.push_request_errors(PRODUCE, [ERROR_CODES[name] for name in retriable])
        assert producer.send(topic, b"00000001").result(30).offset == 1
        assert producer.metrics()["record-retry-total"] == len(retriable)
        mock_cluster.push_request_errors(PRODUCE, [ERROR_CODES["TOPIC_AUTHORIZATION_FAILED"]])
        with pytest.raises(BrokerResponseError) as failed:
            producer.send(topic, b"rejected").result(30)
        assert failed.value.name == "TOPIC_AUTHORIZATION_FAILED" and not failed.value.retriable
        assert producer.send(topic, b"00000002").result(30).offset == 2
    _assert_once_in_order(read_back(mock_cluster.bootstrap_servers, topic), 3)


PRODUCE = 0  # Kafka's ApiKey


# -- broker killed and restarted on durable storage --------------------------------------------------------------------


@pytest.fixture()
def s3_broker(tmp_path: Any) -> Iterator[EmbeddedBroker]:
    """Tansu on s3:// storage served by a local moto server (both on 127.0.0.1, both stopped at the end)."""
    import subprocess
    import sys

    import boto3

    from cykafka.broker import api_versions_answers, free_port

    port = free_port()
    moto_bin = os.path.join(os.path.dirname(sys.executable), "moto_server")
    moto = subprocess.Popen([moto_bin, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "eu-west-2",
           "AWS_ENDPOINT": f"http://127.0.0.1:{port}", "AWS_ALLOW_HTTP": "true"}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                s3 = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT"], region_name=env["AWS_DEFAULT_REGION"],
                                  aws_access_key_id="test", aws_secret_access_key="test")
                s3.create_bucket(Bucket="tansu", CreateBucketConfiguration={"LocationConstraint": "eu-west-2"})
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        broker = EmbeddedBroker(storage_url="s3://tansu/", env=env).start()
        assert api_versions_answers(broker.host, broker.port)
        try:
            yield broker
        finally:
            broker.stop()
    finally:
        moto.kill()
        moto.wait(10)


def test_broker_killed_and_restarted_three_times_on_durable_storage(s3_broker: EmbeddedBroker) -> None:
    records, restarts = 300_000, 3
    topic = "rel-restarts"
    acked: set[int] = set()
    errors: list[BaseException] = []
    with Producer({"bootstrap.servers": s3_broker.bootstrap_servers, "linger.ms": 5, "retry.backoff.max.ms": 200,
                   "reconnect.backoff.max.ms": 200, "request.timeout.ms": 5000}) as producer:
        futures = []
        per_round = records // (restarts + 1)
        for round_ in range(restarts + 1):
            futures += [producer.send(topic, b"%08d" % i + b"r" * 60, key=b"k%d" % (i % 101))
                        for i in range(round_ * per_round, (round_ + 1) * per_round)]
            if round_ < restarts:
                time.sleep(0.2)  # some of it in flight
                s3_broker.kill()
                s3_broker.start()
        producer.flush(120)
    for i, f in enumerate(futures):
        assert f.done(), "a future is still pending"
        error = f.exception(0)
        if error is None:
            acked.add(i)
        else:
            errors.append(error)
    stored = read_back(s3_broker.bootstrap_servers, topic, timeout_s=120)
    seqs = [int((r.value or b"")[:8]) for r in stored]
    counts: dict[int, int] = {}
    for s in seqs:
        counts[s] = counts.get(s, 0) + 1
    with_offset = {i for i in acked if futures[i].result(0).offset >= 0}
    # offset -1: acknowledged by a DUPLICATE_SEQUENCE_NUMBER answer, which Kafka gives only for batches it has.
    # Tansu on s3 gives it after a SIGKILL for batches it lost (a broker bug): those are counted, not asserted.
    missing = sorted(i for i in with_offset if i not in counts)
    duplicated = sorted(i for i in counts if counts[i] > 1)
    claimed_lost = len([i for i in acked - with_offset if i not in counts])
    print(f"restarts={restarts} records={records} acknowledged={len(acked)} (by DUPLICATE answer: "
          f"{len(acked - with_offset)}, of those missing: {claimed_lost}) failed={len(errors)} stored={len(seqs)}")
    assert not missing and not duplicated, (f"acknowledged with an offset but missing: {len(missing)} {missing[:5]}; "
                                            f"duplicated: {len(duplicated)} {duplicated[:5]}")
    assert len(acked) + len(errors) == records
    assert len(acked) >= records * 0.9, f"only {len(acked)} of {records} acknowledged; errors: {errors[:3]}"
