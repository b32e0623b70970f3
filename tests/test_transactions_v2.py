"""Transactions V2 (KIP-890 part 2) against the fake cluster's coordinator under a ManualClock: the producer takes V2
from the cluster's finalized `transaction.version` (the transport's `finalized_features`), sends no
AddPartitionsToTxn / AddOffsetsToTxn (Produce v12 and TxnOffsetCommit v5 add them), ends each transaction with
EndTxn v5 and takes the bumped epoch it answers; on `transaction.version` 1 it keeps V1 and caps Produce at v11,
EndTxn and TxnOffsetCommit at v4; TRANSACTION_ABORTABLE makes the transaction abortable and the next one commits; a
cluster moving to V2 mid-life bumps the epoch after the transaction then running (Java's rule)."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import fake_cluster
from test_transactions import TOPIC, bodies, initialized, kinds, make, run, run_until, state, visible

from cykafka.adapters.clock import ManualClock
from cykafka.errors import TransactionAbortableError
from cykafka.ports import FinalizedFeatures
from cykafka.ports.values import ConsumerGroupMetadata
from cykafka.producer import Producer
from cykafka.protocol.apis import END_TXN, INIT_PRODUCER_ID, PRODUCE, TXN_OFFSET_COMMIT
from cykafka.protocol.error_codes import ErrorCode


def versions(cluster: Any, api_key: int) -> list[int]:
    """The version of every request of one API, as the cluster answered it."""
    return [v for key, v in cluster.sent_versions if key == api_key]


def epoch(producer: Producer) -> int:
    return producer.transaction_state().producer_epoch


def commit(producer: Producer, clock: ManualClock) -> None:
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")


@pytest.mark.parametrize("wire", [None, {}], ids=["dicts", "wire"])
def test_v2_sends_no_add_partitions_and_each_end_txn_v5_bumps_the_epoch(wire: dict[int, int] | None) -> None:
    clock = ManualClock()
    producer, cluster, _ = make(fake_cluster(clock, TOPIC, wire=wire, transaction_version=2), clock)
    initialized(producer, clock)
    assert producer._txn is not None and producer._txn.transaction_v2
    first = epoch(producer)
    for round_ in range(3):
        producer.begin_transaction()
        futures = [producer.send(TOPIC, b"r%d-%d" % (round_, i), partition=i % 3) for i in range(6)]
        commit(producer, clock)
        assert all(f.result(0) for f in futures)
        assert epoch(producer) == first + round_ + 1, "EndTxn v5 answered the bumped epoch: the producer took it"
        assert cluster.transactions["tx-1"].epoch == epoch(producer)
    for p in range(3):
        assert visible(cluster, p) == [b"r%d-%d" % (r, i) for r in range(3) for i in range(p, 6, 3)]
    sent = kinds(cluster)
    assert "AddPartitionsToTxn" not in sent and "AddOffsetsToTxn" not in sent
    assert versions(cluster, END_TXN.key) == [5, 5, 5]
    assert set(versions(cluster, PRODUCE.key)) == {12}
    assert len([b for b in bodies(cluster, INIT_PRODUCER_ID)]) == 1, "no client epoch bump"
    assert cluster.produce_errors == {}


def test_v1_adds_partitions_and_caps_the_versions_that_would_act_as_v2() -> None:
    clock = ManualClock()
    producer, cluster, _ = make(fake_cluster(clock, TOPIC, transaction_version=1), clock)
    initialized(producer, clock)
    assert producer._txn is not None and not producer._txn.transaction_v2
    first = epoch(producer)
    group = ConsumerGroupMetadata("readers", generation_id=1, member_id="m")
    for round_ in range(2):
        producer.begin_transaction()
        producer.send(TOPIC, b"v%d" % round_, partition=1)
        producer.send_offsets_to_transaction({(TOPIC, 0): 10 + round_}, group)
        commit(producer, clock)
    assert epoch(producer) == first, "V1 keeps the epoch across transactions"
    assert kinds(cluster).count("AddPartitionsToTxn") == 2 and kinds(cluster).count("AddOffsetsToTxn") == 2
    assert versions(cluster, END_TXN.key) == [4, 4]
    assert versions(cluster, TXN_OFFSET_COMMIT.key) == [4, 4]
    assert set(versions(cluster, PRODUCE.key)) == {11}
    assert visible(cluster, 1) == [b"v0", b"v1"] and cluster.group_offsets["readers"] == {(TOPIC, 0): 11}


def test_v2_send_offsets_goes_straight_to_txn_offset_commit_v5() -> None:
    clock = ManualClock()
    producer, cluster, _ = make(fake_cluster(clock, TOPIC, transaction_version=2), clock)
    initialized(producer, clock)
    group = ConsumerGroupMetadata("readers", generation_id=3, member_id="m-1")
    producer.begin_transaction()
    producer.send_offsets_to_transaction({(TOPIC, 0): 10}, group)  # offsets only: the transaction has started
    commit(producer, clock)
    assert cluster.group_offsets["readers"] == {(TOPIC, 0): 10}
    producer.begin_transaction()
    producer.send(TOPIC, b"out", partition=2)
    producer.send_offsets_to_transaction({(TOPIC, 0): 12, (TOPIC, 1): 7}, group)
    producer.abort_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert cluster.group_offsets["readers"] == {(TOPIC, 0): 10}, "aborted with the transaction"
    assert "AddOffsetsToTxn" not in kinds(cluster)
    assert versions(cluster, TXN_OFFSET_COMMIT.key) == [5, 5]
    assert versions(cluster, END_TXN.key) == [5, 5]


@pytest.mark.parametrize("transaction_version", [2, 1])
def test_transaction_abortable_aborts_and_the_next_transaction_commits(transaction_version: int) -> None:
    clock = ManualClock()
    producer, cluster, _ = make(fake_cluster(clock, TOPIC, transaction_version=transaction_version), clock)
    initialized(producer, clock)
    before = epoch(producer)
    producer.begin_transaction()
    cluster.inject_error(ErrorCode.TRANSACTION_ABORTABLE, topic=TOPIC, partition=2)
    bad = producer.send(TOPIC, b"bad", partition=2)
    run_until(producer, clock, bad.done)
    assert state(producer) == "ABORTABLE_ERROR"
    with pytest.raises(TransactionAbortableError) as info:
        producer.commit_transaction()
    assert getattr(info.value.__cause__, "code", None) == ErrorCode.TRANSACTION_ABORTABLE
    producer.abort_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    bumps = [b for b in bodies(cluster, INIT_PRODUCER_ID) if b["producer_id"] >= 0]
    if transaction_version == 2:
        assert bumps == [], "V2: EndTxn v5 bumped the epoch, no InitProducerId"
    else:
        assert len(bumps) == 1, "V1: the abort is followed by an epoch bump (KIP-360)"
    assert epoch(producer) == before + 1
    producer.begin_transaction()
    good = producer.send(TOPIC, b"good", partition=2)
    commit(producer, clock)
    assert good.result(0) and visible(cluster, 2) == [b"good"]


def test_end_txn_answering_transaction_abortable_makes_the_transaction_abortable() -> None:
    clock = ManualClock()
    producer, cluster, _ = make(fake_cluster(clock, TOPIC, transaction_version=2), clock)
    initialized(producer, clock)
    producer.begin_transaction()
    producer.send(TOPIC, b"x", partition=0)
    end_txn = cluster._HANDLERS[END_TXN.key]
    cluster._HANDLERS = {**cluster._HANDLERS, END_TXN.key: lambda self, node, body: {
        "throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTION_ABORTABLE, "producer_id": -1,
        "producer_epoch": -1}}
    producer.commit_transaction()  # driven by hand: returns at once, the sender runs below
    run_until(producer, clock, lambda: state(producer) == "ABORTABLE_ERROR")
    cluster._HANDLERS = {**cluster._HANDLERS, END_TXN.key: end_txn}
    producer.abort_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert visible(cluster, 0) == []
    producer.begin_transaction()
    producer.send(TOPIC, b"y", partition=0)
    commit(producer, clock)
    assert visible(cluster, 0) == [b"y"]


def test_a_cluster_moving_to_v2_bumps_the_epoch_after_the_running_transaction() -> None:
    clock = ManualClock()
    producer, cluster, _ = make(fake_cluster(clock, TOPIC, transaction_version=1), clock)
    initialized(producer, clock)
    before = epoch(producer)
    producer.begin_transaction()
    producer.send(TOPIC, b"v1", partition=0)
    run(producer, clock, 5)
    cluster.set_transaction_version(2)
    commit(producer, clock)
    assert versions(cluster, END_TXN.key) == [4], "the transaction ends at the version it started with"
    assert [b["producer_epoch"] for b in bodies(cluster, INIT_PRODUCER_ID)] == [-1, before], "then an epoch bump"
    assert producer._txn is not None and producer._txn.transaction_v2
    producer.begin_transaction()
    producer.send(TOPIC, b"v2", partition=0)
    commit(producer, clock)
    assert versions(cluster, END_TXN.key) == [4, 5]
    assert kinds(cluster).count("AddPartitionsToTxn") == 1
    assert visible(cluster, 0) == [b"v1", b"v2"] and epoch(producer) == before + 2


def test_the_core_reads_only_newer_feature_epochs_and_only_a_transactional_producer_takes_v2() -> None:
    from cykafka.core import TransactionManager

    manager = TransactionManager("t")
    manager.update_transaction_version(3, 2, True)
    assert manager.transaction_v2 and manager.features_epoch == 3 and not manager.epoch_bump_required
    manager.update_transaction_version(3, 1, False)
    assert manager.transaction_v2, "the same epoch: nothing new"
    manager.update_transaction_version(4, 1, False)
    assert not manager.transaction_v2
    idempotent = TransactionManager(None)
    idempotent.update_transaction_version(1, 2, True)
    assert not idempotent.transaction_v2
    assert FinalizedFeatures().level("transaction.version") == 0
