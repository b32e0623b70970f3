"""Transactions V1 and V2 (KIP-890 part 2) on real brokers: Apache Kafka 4.4 as formatted by default (V2), Apache
Kafka formatted with `--feature transaction.version=1` (V1) and Tansu (no finalized features: V1). The producer's
own socket transport notes each request's API and version as it goes out: V2 sends no AddPartitionsToTxn or
AddOffsetsToTxn, Produce v12, TxnOffsetCommit v5 and EndTxn v5, and the epoch goes up by one per transaction; V1
sends AddPartitionsToTxn/AddOffsetsToTxn, Produce <= v11, EndTxn <= v4 and keeps its epoch. confluent-kafka's
read_committed consumer reads the committed records and none of the aborted ones on both Kafkas (Tansu sends no
aborted-transaction list, which librdkafka needs: there cykafka's read_committed consumer, which reads the markers,
checks it). A TRANSACTION_ABORTABLE answer (rewritten in by tests/kafka_proxy.py) aborts the transaction and the
next one commits."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import selected_brokers
from kafka_proxy import KafkaProxy

from cykafka import Consumer, Producer
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.socket_transport import SocketTransport
from cykafka.config import ProducerConfig
from cykafka.errors import BrokerResponseError, TransactionAbortableError
from cykafka.ports import Ports, TopicPartition
from cykafka.ports.values import ConsumerGroupMetadata
from cykafka.protocol import Request, TransportRequest
from cykafka.protocol.apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    INIT_PRODUCER_ID,
    PRODUCE,
    TXN_OFFSET_COMMIT,
)
from cykafka.protocol.error_codes import ErrorCode

PEERS = ["kafka-v2", "kafka-v1", "tansu"]


class _RecordingTransport(SocketTransport):
    """The producer's socket transport, noting (api key, version) of every request at the version it goes out."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[int, int]] = []
        self.epoch_bumps = 0  # InitProducerId naming the current producer id/epoch (KIP-360), retries included

    def _enqueue(self, conn: Any, request: TransportRequest, api_key: int, version: int, *args: Any,
                 **kwargs: Any) -> None:
        self.sent.append((api_key, version))
        if api_key == INIT_PRODUCER_ID.key and isinstance(request, Request) and request.body["producer_id"] >= 0:
            self.epoch_bumps += 1
        super()._enqueue(conn, request, api_key, version, *args, **kwargs)

    def versions(self, api_key: int) -> list[int]:
        return [v for key, v in self.sent if key == api_key]


@pytest.fixture(scope="module")
def kafka_v1(apache_kafka: Any) -> Iterator[Any]:
    """Apache Kafka 4.4 formatted at transaction.version 1: the V1 path."""
    cluster = apache_kafka(1, features={"transaction.version": 1}).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=PEERS)
def peer(request: pytest.FixtureRequest) -> tuple[str, Any]:
    name = request.param
    if name == "tansu" and "tansu" not in selected_brokers():
        pytest.skip("Tansu is not in CYKAFKA_TEST_BROKERS")
    fixture = {"kafka-v2": "kafka_broker", "kafka-v1": "kafka_v1", "tansu": "tansu_broker"}[name]
    return name, request.getfixturevalue(fixture)


def _producer(bootstrap: str, transactional_id: str) -> tuple[Producer, _RecordingTransport]:
    settings = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    transport = _RecordingTransport(ProducerConfig.parse(settings).connection_settings(),
                                    clock_ms=SystemClock().monotonic_ms)
    return Producer(settings, ports=Ports(transport=transport)), transport


def _confluent_read_committed(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    from confluent_kafka import Consumer as ConfluentConsumer
    from confluent_kafka import TopicPartition as ConfluentPartition

    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{uuid.uuid4().hex[:6]}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "check.crcs": True})
    try:
        consumer.assign([ConfluentPartition(topic, p, 0) for p in range(partitions)])
        got: list[bytes] = []
        for _ in range(60):  # bounded: 60 polls of at most 0.5 s, and a few more once the expected count is in
            message = consumer.poll(0.5)
            if message is None:
                if len(got) >= expected:
                    break
                continue
            assert message.error() is None, message.error()
            got.append(message.value())
        return got
    finally:
        consumer.close()


def _cykafka_read_committed(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    got: list[bytes] = []
    with Consumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        for _ in range(100):
            got += [r.value for r in consumer.poll(0.2)]
            if len(got) >= expected:
                break
    return got


def test_the_broker_finalized_transaction_version_decides_the_path(peer: tuple[str, Any]) -> None:
    name, broker = peer
    v2 = name == "kafka-v2"
    bootstrap, topic = broker.bootstrap_servers, f"txv2-{name}-{uuid.uuid4().hex[:8]}"
    producer, transport = _producer(bootstrap, f"{topic}-tx")
    group = ConsumerGroupMetadata(f"{topic}-g", generation_id=-1, member_id="")
    try:
        producer.init_transactions(60)
        assert producer._txn is not None and producer._txn.transaction_v2 is v2
        epochs = [producer.transaction_state().producer_epoch]
        committed: list[bytes] = []
        for round_, outcome in enumerate(["commit", "abort", "commit", "commit"]):
            producer.begin_transaction()
            values = [b"%s-%d-%d" % (outcome.encode(), round_, i) for i in range(10)]
            futures = [producer.send(topic, v, partition=i % 2) for i, v in enumerate(values)]
            producer.send_offsets_to_transaction({(topic, 0): 10 * (round_ + 1)}, group)
            if outcome == "commit":
                producer.commit_transaction(60)
                committed += values
            else:
                producer.flush(60)
                producer.abort_transaction(60)
            assert all(f.result(0) for f in futures)
            epochs.append(producer.transaction_state().producer_epoch)
    finally:
        producer.close(30)

    if v2:
        assert epochs == list(range(epochs[0], epochs[0] + 5)), f"one epoch bump per transaction: {epochs}"
        assert transport.versions(ADD_PARTITIONS_TO_TXN.key) == [], "Produce v12 added the partitions"
        assert transport.versions(ADD_OFFSETS_TO_TXN.key) == [], "TxnOffsetCommit v5 added the group"
        assert transport.versions(END_TXN.key) == [5] * 4
        assert set(transport.versions(TXN_OFFSET_COMMIT.key)) == {5}
        assert set(transport.versions(PRODUCE.key)) == {12}
    else:
        assert len(set(epochs)) == 1, f"V1 keeps the epoch: {epochs}"
        assert len(transport.versions(ADD_PARTITIONS_TO_TXN.key)) >= 4
        assert len(transport.versions(ADD_OFFSETS_TO_TXN.key)) >= 4  # (retried on CONCURRENT_TRANSACTIONS)
        assert max(transport.versions(END_TXN.key)) <= 4 and len(transport.versions(END_TXN.key)) >= 4
        assert max(transport.versions(TXN_OFFSET_COMMIT.key)) <= 4
        assert max(transport.versions(PRODUCE.key)) <= 11

    if name == "tansu":  # no aborted-transaction list (librdkafka needs it): cykafka reads the markers
        got = _cykafka_read_committed(bootstrap, topic, 2, len(committed))
    else:
        got = _confluent_read_committed(bootstrap, topic, 2, len(committed))
    assert sorted(got) == sorted(committed)
    for p in range(2):  # per partition in order
        assert [v for v in got if int(v.rsplit(b"-", 1)[1]) % 2 == p] == [
            v for v in committed if int(v.rsplit(b"-", 1)[1]) % 2 == p]
    with Consumer({"bootstrap.servers": bootstrap, "group.id": group.group_id}) as consumer:
        assert consumer.committed([TopicPartition(topic, 0)])[TopicPartition(topic, 0)].offset == 40


@pytest.mark.parametrize("peer", ["kafka-v2", "kafka-v1"], indirect=True)
def test_transaction_abortable_aborts_and_the_next_transaction_commits(peer: tuple[str, Any]) -> None:
    """The broker's Produce answer is rewritten to TRANSACTION_ABORTABLE once (its records were appended): the
    transaction is abortable, commit refuses, the abort goes through (V2: EndTxn v5 bumps the epoch, no
    InitProducerId; V1: an epoch bump follows), and the next transaction commits; read_committed sees only it."""
    name, broker = peer
    proxy = KafkaProxy(broker.host, broker.port)
    topic = f"txv2-abortable-{name}-{uuid.uuid4().hex[:8]}"
    injected = []

    def abortable_once(answer: dict[str, Any]) -> dict[str, Any]:
        if not injected:
            for t in answer["responses"]:
                for p in t["partition_responses"]:
                    p["error_code"] = ErrorCode.TRANSACTION_ABORTABLE
                    injected.append((t["name"], p["index"]))
        return answer

    try:
        producer, transport = _producer(proxy.bootstrap_servers, f"{topic}-tx")
        try:
            producer.init_transactions(60)
            producer.begin_transaction()
            proxy.rewrite[PRODUCE.key] = abortable_once
            bad = producer.send(topic, b"bad", partition=0)
            with pytest.raises(BrokerResponseError) as failed:  # the record fails with the broker's error
                bad.result(60)
            assert failed.value.code == ErrorCode.TRANSACTION_ABORTABLE
            assert producer.transaction_state().state == "ABORTABLE_ERROR"
            with pytest.raises(TransactionAbortableError):
                producer.commit_transaction(60)
            epoch = producer.transaction_state().producer_epoch
            producer.abort_transaction(60)
            assert producer.transaction_state().producer_epoch == epoch + 1
            producer.begin_transaction()
            good = producer.send(topic, b"good", partition=0)
            producer.commit_transaction(60)
            assert good.result(0)
        finally:
            producer.close(30)
    finally:
        proxy.close()
    assert injected == [(topic, 0)]
    if name == "kafka-v2":
        assert transport.epoch_bumps == 0, "V2: no client epoch bump (EndTxn v5 bumped the epoch)"
    else:
        assert transport.epoch_bumps >= 1, "V1: the abort is followed by an epoch bump (KIP-360)"
    assert _confluent_read_committed(broker.bootstrap_servers, topic, 1, 1) == [b"good"]
