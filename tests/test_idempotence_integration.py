"""Idempotence and transactions against real brokers: Tansu (200k idempotent records through a proxy that drops every
connection several times mid-run; a committed transaction seen by a read_committed consumer; fencing) and
librdkafka's mock cluster (abort and commit markers). Every record is read back by confluent-kafka's consumer.

Tansu shows aborted records to read_committed consumers and librdkafka's mock cluster does not filter them either
(broker bugs), so what read_committed hides after an abort is checked on the fake cluster (tests/test_transactions.py);
here the abort is checked by its marker.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_proxy import KafkaProxy
from mock_cluster import MockCluster

from cykafka import Producer
from cykafka.broker import EmbeddedBroker
from cykafka.errors import ProducerFencedError
from cykafka.verify import read_back


@pytest.fixture()
def proxy(broker: EmbeddedBroker) -> Iterator[KafkaProxy]:
    p = KafkaProxy(broker.host, broker.port)
    try:
        yield p
    finally:
        p.close()


# -- idempotence through dropped connections ------------------------------------------------------------------------

RECORDS = 200_000
DROPS = 5


def test_idempotent_producer_through_dropped_connections_delivers_each_record_once_in_order(
        broker: EmbeddedBroker, proxy: KafkaProxy) -> None:
    topic = "idem-drops"
    errors: list[BaseException] = []

    def on_delivery(err: BaseException | None, _md: Any) -> None:
        if err is not None:
            errors.append(err)

    with Producer({"bootstrap.servers": proxy.bootstrap_servers, "linger.ms": 5, "batch.size": 16384,
                   "retry.backoff.ms": 20, "retry.backoff.max.ms": 200, "reconnect.backoff.ms": 10}) as producer:
        assert producer.config.enable_idempotence
        sent = 0

        def send_up_to(count: int) -> None:
            nonlocal sent
            for i in range(sent, count):
                producer.send(topic, b"%08d-" % i + b"p" * 40, key=b"k%d" % (i % 1000) if i % 2 else None,
                              on_delivery=on_delivery)
            sent = count

        # cut every connection DROPS times while the records are being delivered, each time with requests out; the
        # records go in 20 parts, the next when nothing is in flight, so a fast delivery cannot end before the cuts
        part = RECORDS // 20
        send_up_to(part)
        deadline = time.monotonic() + 60
        while proxy.drops < DROPS and time.monotonic() < deadline:
            cut_before = proxy.cut_requests
            while producer.metrics()["requests-in-flight"] == 0 and time.monotonic() < deadline:
                if sent < RECORDS:
                    send_up_to(min(RECORDS, sent + part))
                else:
                    time.sleep(0.0002)
            proxy.drop_all()
            if proxy.cut_requests == cut_before:  # answered just before the cut: try again
                proxy.drops -= 1
        send_up_to(RECORDS)
        assert producer.flush(120) == 0
        retries = producer.metrics()["record-retry-total"]
        producer_id = producer.transaction_state().producer_id
    assert errors == []
    assert proxy.drops == DROPS and proxy.connections > DROPS
    assert proxy.cut_requests > 0, f"no drop hit a request in flight ({proxy.drops} drops, {retries} retries)"
    assert retries >= 0
    assert producer_id >= 0
    read = read_back(broker.bootstrap_servers, topic)
    seqs = [int(r.value[:8]) for r in read]  # type: ignore[index]
    assert len(seqs) == len(set(seqs)), "duplicates"
    assert sorted(seqs) == list(range(RECORDS)), "gaps"
    last: dict[int, int] = {}
    for r, seq in zip(read, seqs, strict=True):
        assert seq > last.get(r.partition, -1), f"reordered in partition {r.partition}"
        last[r.partition] = seq


# -- transactions on Tansu ---------------------------------------------------------------------------------------


def test_a_committed_transaction_is_read_by_a_read_committed_consumer(broker: EmbeddedBroker) -> None:
    topic = "txn-commit"
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "it-commit"}) as producer:
        producer.init_transactions(30)
        for round_ in range(3):
            producer.begin_transaction()
            for i in range(1000):
                producer.send(topic, b"%d-%04d" % (round_, i), partition=i % 4)
            producer.commit_transaction(30)
        info = producer.transaction_state()
    assert info.state == "READY" and info.producer_id >= 0
    read = read_back(broker.bootstrap_servers, topic, isolation_level="read_committed")
    assert [r.value for r in read if r.partition == 1] == [b"%d-%04d" % (r, i) for r in range(3)
                                                           for i in range(1, 1000, 4)]
    assert len(read) == 3000


def test_a_second_producer_fences_the_first_on_tansu(broker: EmbeddedBroker) -> None:
    topic = "txn-fence"
    config = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "it-fence"}
    with Producer(config) as first:
        first.init_transactions(30)
        first.begin_transaction()
        first.send(topic, b"first", partition=0).result(30)
        with Producer(config) as second:
            second.init_transactions(30)
            assert second.transaction_state().producer_epoch > first.transaction_state().producer_epoch
            late = first.send(topic, b"zombie", partition=0)
            with pytest.raises(ProducerFencedError):
                late.result(30)
            assert first.transaction_state().state == "FATAL_ERROR"
            with pytest.raises(ProducerFencedError):
                first.commit_transaction(10)
            with pytest.raises(ProducerFencedError):
                first.send(topic, b"more", partition=1)
            second.begin_transaction()
            second.send(topic, b"second", partition=0)
            second.commit_transaction(30)
    values = [r.value for r in read_back(broker.bootstrap_servers, topic)]
    assert b"second" in values and b"zombie" not in values


def test_offsets_sent_to_a_transaction_are_committed_for_the_group(broker: EmbeddedBroker) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "it-offsets"}) as producer:
        producer.init_transactions(30)
        producer.partitions_for("txn-source")
        producer.begin_transaction()
        producer.send("txn-sink", b"derived", partition=0)
        producer.send_offsets_to_transaction({("txn-source", 0): 42, ("txn-source", 1): 7}, "it-group", 30)
        producer.commit_transaction(30)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "it-group",
                                        "enable.auto.commit": False})
    try:
        committed = consumer.committed([confluent_kafka.TopicPartition("txn-source", p) for p in (0, 1)],
                                       timeout=30)
    finally:
        consumer.close()
    assert [(tp.partition, tp.offset) for tp in committed] == [(0, 42), (1, 7)]


# -- librdkafka's mock cluster -----------------------------------------------------------------------------------


def test_abort_then_commit_on_the_mock_cluster_writes_both_markers(mock_cluster: MockCluster) -> None:
    topic = "txn-mock"
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "transactional.id": "mock-tx"}) as producer:
        producer.init_transactions(30)
        producer.begin_transaction()
        aborted = [producer.send(topic, b"abort-%d" % i, partition=i % 4) for i in range(40)]
        assert producer.flush(30) == 0 and all(f.result(0).offset >= 0 for f in aborted)
        producer.abort_transaction(30)
        producer.begin_transaction()
        committed = [producer.send(topic, b"commit-%d" % i, partition=i % 4) for i in range(40)]
        producer.commit_transaction(30)
        offsets = [f.result(0).offset for f in committed]
    # each partition: 10 aborted records, the abort marker, then the committed ones
    assert offsets == [11 + i // 4 for i in range(40)]
    read = read_back(mock_cluster.bootstrap_servers, topic, check_crcs=False)  # the mock writes markers without a CRC
    assert len(read) == 80
    by_partition: dict[int, list[tuple[int, bytes]]] = {}
    for r in read:
        by_partition.setdefault(r.partition, []).append((r.offset, r.value or b""))
    for records in by_partition.values():
        assert [o for o, _ in records] == list(range(10)) + list(range(11, 21)), "a marker between the two"
        assert all(v.startswith(b"abort-") for _, v in records[:10])
        assert all(v.startswith(b"commit-") for _, v in records[10:])


def test_idempotent_producer_on_the_mock_cluster(mock_cluster: MockCluster) -> None:
    topic = "idem-mock"
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "enable.idempotence": True}) as producer:
        futures = [producer.send(topic, b"%06d" % i) for i in range(20_000)]
        assert producer.flush(60) == 0
        assert all(f.result(0).offset >= 0 for f in futures)
        assert producer.transaction_state().producer_id >= 0
    read = read_back(mock_cluster.bootstrap_servers, topic)
    assert sorted(int(r.value) for r in read) == list(range(20_000))  # type: ignore[arg-type]
