"""Transactions against the fake cluster's coordinator under a ManualClock: commit and abort with read_committed
views, AddPartitionsToTxn before a partition's first batch, offsets committed with the transaction, fencing by a
second producer, abortable errors, and the two-phase-commit hooks (prepare, transaction_state,
complete_transaction)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fakes import fake_cluster, fake_producer

from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.errors import (
    InvalidArgumentError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionFatalError,
    TransactionStateError,
    UnsupportedVersionError,
)
from cykafka.ports.values import ConsumerGroupMetadata, OffsetAndMetadata
from cykafka.producer import Producer
from cykafka.protocol import API_NAMES, APIS, Api, ProduceRequest, Request, TransportRequest
from cykafka.protocol.apis import (
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    TXN_OFFSET_COMMIT,
)

TOPIC = "t"
INVALID_RECORD = 87


def make(cluster: FakeCluster | None = None, clock: ManualClock | None = None, transactional_id: str = "tx-1",
         wire: dict[int, int] | None = None, **config: Any) -> tuple[Producer, FakeCluster, ManualClock]:
    """wire: None for dict bodies, else the fake cluster's wire mode at these versions ({}: our highest)."""
    clock = clock or ManualClock()
    cluster = cluster or fake_cluster(clock, TOPIC, wire=wire)
    settings: dict[str, Any] = {"linger.ms": 5, "retry.backoff.ms": 20, "retry.backoff.max.ms": 20, **config}
    if transactional_id:
        settings["transactional.id"] = transactional_id
    return fake_producer(cluster, clock, topic=TOPIC, step_ms=5, **settings), cluster, clock


def run(producer: Producer, clock: ManualClock, loops: int = 1) -> None:
    for _ in range(loops):
        clock.advance(5)
        producer.sender.run_once()


def run_until(producer: Producer, clock: ManualClock, done: Callable[[], bool], loops: int = 300) -> None:
    for _ in range(loops):
        if done():
            return
        run(producer, clock)
    raise AssertionError(f"not done after {loops} loops; state {producer.transaction_state()}")


def state(producer: Producer) -> str:
    return producer.transaction_state().state


def initialized(producer: Producer, clock: ManualClock) -> Producer:
    producer.init_transactions()
    run_until(producer, clock, lambda: state(producer) == "READY")
    return producer


def requests(cluster: FakeCluster) -> list[Any]:
    return [r for _, r in cluster.requests]


def kinds(cluster: FakeCluster) -> list[str]:
    """The API name of every request the cluster got, in order."""
    return [API_NAMES[r.api_key] for r in requests(cluster)]


def bodies(cluster: FakeCluster, described: Api) -> list[dict[str, Any]]:
    """The bodies of one API's requests, in order."""
    return [dict(r.body) for r in requests(cluster) if isinstance(r, Request) and r.api_key == described.key]


def visible(cluster: FakeCluster, partition: int) -> list[bytes | None]:
    return [r.value for r in cluster.read_committed(TOPIC, partition)]


def test_init_transactions_finds_the_coordinator_and_takes_an_id_for_the_transactional_id() -> None:
    producer, cluster, clock = make()
    assert state(producer) == "UNINITIALIZED"
    initialized(producer, clock)
    sent = kinds(cluster)
    assert sent.index("FindCoordinator") < sent.index("InitProducerId")
    (init,) = bodies(cluster, INIT_PRODUCER_ID)
    assert init["transactional_id"] == "tx-1" and init["transaction_timeout_ms"] == 60000
    info = producer.transaction_state()
    assert info.transactional_id == "tx-1" and info.producer_epoch == 0 and not info.in_transaction
    assert cluster.transactions["tx-1"].producer_id == info.producer_id


@pytest.mark.parametrize("wire", [None, {}, {key: described.valid[0] for key, described in APIS.items()}],
                         ids=["dicts", "wire", "wire-oldest"])
def test_commit_makes_every_partition_visible_at_once(wire: dict[int, int] | None) -> None:
    producer, cluster, clock = make(wire=wire)
    initialized(producer, clock)
    producer.begin_transaction()
    futures = [producer.send(TOPIC, b"v%d" % i, partition=i % 3) for i in range(9)]
    run_until(producer, clock, lambda: all(f.done() for f in futures))
    assert all(cluster.log(TOPIC, p) for p in range(3))
    assert all(visible(cluster, p) == [] for p in range(3)), "open: nothing visible to read_committed"
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    for p in range(3):
        assert visible(cluster, p) == [b"v%d" % i for i in range(p, 9, 3)]
        assert [m.commit for m in cluster.topics[TOPIC][p].markers] == [True]
    # every partition was added before its first batch went out
    added: set[tuple[str, int]] = set()
    for request in requests(cluster):
        if isinstance(request, Request) and request.api_key == ADD_PARTITIONS_TO_TXN.key:
            added.update((t["name"], p) for t in request.body["v3_and_below_topics"] for p in t["partitions"])
        if isinstance(request, ProduceRequest):
            assert request.transactional_id == "tx-1"
            assert all((t, p) in added for t, parts in request.topics for p, _ in parts)
    assert [e["committed"] for e in bodies(cluster, END_TXN)] == [True]
    assert cluster.produce_errors == {}


def test_commit_sends_what_is_still_queued_before_ending_the_transaction() -> None:
    producer, cluster, clock = make(**{"linger.ms": 60_000})
    initialized(producer, clock)
    producer.begin_transaction()
    futures = [producer.send(TOPIC, b"late-%d" % i, partition=1) for i in range(3)]
    producer.commit_transaction()  # the sender flushes first: linger.ms does not hold it
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert all(f.done() for f in futures) and visible(cluster, 1) == [b"late-0", b"late-1", b"late-2"]
    sent = kinds(cluster)
    assert sent.index("EndTxn") > max(i for i, k in enumerate(sent) if k == "Produce")


def test_a_coordinator_whose_connection_fails_is_looked_up_again_at_once() -> None:
    """Java's Sender looks the coordinator up again as soon as its connection fails (awaitReady's IOException), not
    after request.timeout.ms; found on the 3-node Apache Kafka: with the transaction coordinator SIGKILLed, a commit
    waited 30 s for the dead node before asking who took over (tests/test_kafka_failures.py)."""
    producer, cluster, clock = make(**{"request.timeout.ms": 30_000})
    initialized(producer, clock)
    producer.begin_transaction()
    futures = [producer.send(TOPIC, b"v%d" % i, partition=0) for i in range(3)]
    run_until(producer, clock, lambda: all(f.done() for f in futures))
    cluster.unreachable.add(cluster.coordinator_for("tx-1"))
    lookups = kinds(cluster).count("FindCoordinator")
    producer.commit_transaction()
    run(producer, clock, 40)  # 200 ms of the fake clock: far below request.timeout.ms
    assert kinds(cluster).count("FindCoordinator") > lookups
    cluster.unreachable.clear()  # back (in Kafka: another node took over and FindCoordinator names it)
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert visible(cluster, 0) == [b"v0", b"v1", b"v2"]


def test_abort_hides_the_records_and_the_next_transaction_goes_on() -> None:
    producer, cluster, clock = make()
    initialized(producer, clock)
    producer.begin_transaction()
    aborted = [producer.send(TOPIC, b"no-%d" % i, partition=0) for i in range(3)]
    run_until(producer, clock, lambda: all(f.done() for f in aborted))
    producer.abort_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert [r.txn_state for r in cluster.log(TOPIC, 0)] == ["aborted"] * 3
    producer.begin_transaction()
    kept = producer.send(TOPIC, b"yes", partition=0)
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert kept.result(0).offset == 4  # after 3 records and the abort marker
    assert visible(cluster, 0) == [b"yes"]


def test_abort_fails_records_not_yet_sent() -> None:
    producer, cluster, clock = make(**{"linger.ms": 60_000})
    initialized(producer, clock)
    producer.begin_transaction()
    queued = producer.send(TOPIC, b"never", partition=2)
    producer.abort_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    with pytest.raises(TransactionAbortableError, match="aborted"):
        queued.result(0)
    assert cluster.log(TOPIC, 2) == []
    assert not bodies(cluster, END_TXN), "nothing was added: no EndTxn"


def test_an_empty_transaction_needs_no_end_txn() -> None:
    producer, cluster, clock = make()
    initialized(producer, clock)
    producer.begin_transaction()
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert not bodies(cluster, END_TXN)


def test_offsets_are_committed_for_the_group_only_with_the_transaction() -> None:
    producer, cluster, clock = make()
    initialized(producer, clock)
    group = ConsumerGroupMetadata("readers", generation_id=3, member_id="m-1")
    producer.begin_transaction()
    producer.send_offsets_to_transaction({(TOPIC, 0): 10}, group)
    run(producer, clock, 20)
    producer.abort_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert cluster.group_offsets.get("readers") is None
    producer.begin_transaction()
    producer.send(TOPIC, b"out", partition=3)
    producer.send_offsets_to_transaction({(TOPIC, 0): OffsetAndMetadata(12, "meta"), (TOPIC, 1): 7}, "readers")
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert cluster.group_offsets["readers"] == {(TOPIC, 0): 12, (TOPIC, 1): 7}
    commits = [(n, r.body) for n, r in cluster.requests if r.api_key == TXN_OFFSET_COMMIT.key]
    assert {n for n, _ in commits} == {cluster.coordinator_for("readers")}, "to the group coordinator"
    assert (commits[0][1]["generation_id"], commits[0][1]["member_id"]) == (3, "m-1")


@pytest.mark.parametrize("offsets", [[(TOPIC, 0)], {(TOPIC, "0"): 1}, {("", 0): 1}, {(TOPIC, -1): 1}, {5: 1},
                                     {(TOPIC, 0): -2}, {(TOPIC, 0): "1"}])
def test_send_offsets_to_transaction_refuses_bad_offsets_naming_the_call_and_queues_nothing(offsets: Any) -> None:
    """As Consumer.commit and Admin.alter_consumer_group_offsets (one check, ports.values.checked_offsets): a typed
    error naming the call before anything goes out; the transaction goes on."""
    producer, cluster, clock = make()
    initialized(producer, clock)
    producer.begin_transaction()
    with pytest.raises(InvalidArgumentError, match="send_offsets_to_transaction"):
        producer.send_offsets_to_transaction(offsets, "readers")
    producer.send_offsets_to_transaction({(TOPIC, 0): 4}, "readers")
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert cluster.group_offsets["readers"] == {(TOPIC, 0): 4}


def test_a_second_producer_with_the_same_transactional_id_fences_the_first() -> None:
    first, cluster, clock = make()
    initialized(first, clock)
    first.begin_transaction()
    sent = first.send(TOPIC, b"zombie", partition=0)
    run_until(first, clock, sent.done)
    second, _, _ = make(cluster, clock)
    initialized(second, clock)
    assert second.transaction_state().producer_epoch == first.transaction_state().producer_epoch + 1
    assert [r.txn_state for r in cluster.log(TOPIC, 0)] == ["aborted"], "the open transaction was aborted"
    late = first.send(TOPIC, b"late", partition=0)  # goes out: its partition is in the transaction already
    run_until(first, clock, late.done)
    with pytest.raises(ProducerFencedError):
        late.result(0)
    with pytest.raises(ProducerFencedError):
        first.commit_transaction()
    assert state(first) == "FATAL_ERROR"
    with pytest.raises(ProducerFencedError):
        first.send(TOPIC, b"more", partition=0)
    with pytest.raises(ProducerFencedError):
        first.begin_transaction()
    second.begin_transaction()
    second.send(TOPIC, b"live", partition=0)
    second.commit_transaction()
    run_until(second, clock, lambda: state(second) == "READY")
    assert visible(cluster, 0) == [b"live"]


def test_fenced_at_commit_time_is_fatal() -> None:
    first, cluster, clock = make()
    initialized(first, clock)
    first.begin_transaction()
    first.send(TOPIC, b"x", partition=1)
    run(first, clock, 10)
    second, _, _ = make(cluster, clock)
    initialized(second, clock)
    first.commit_transaction()
    run_until(first, clock, lambda: state(first) == "FATAL_ERROR")
    with pytest.raises(ProducerFencedError):
        first.commit_transaction()


@pytest.mark.parametrize("epoch_bump", [True, False], ids=["kip360-bump", "no-bump-like-tansu"])
def test_a_failed_record_makes_the_transaction_abortable_then_the_producer_goes_on(epoch_bump: bool) -> None:
    clock = ManualClock()
    cluster = FakeCluster(clock, epoch_bump=epoch_bump)
    cluster.create_topic(TOPIC, 4)
    producer, _, _ = make(cluster, clock)
    initialized(producer, clock)
    epoch = producer.transaction_state().producer_epoch
    producer.begin_transaction()
    cluster.inject_error(INVALID_RECORD, topic=TOPIC, partition=2)
    bad = producer.send(TOPIC, b"bad", partition=2)
    run_until(producer, clock, bad.done)
    assert state(producer) == "ABORTABLE_ERROR"
    with pytest.raises(TransactionAbortableError) as info:
        producer.commit_transaction()
    assert getattr(info.value.__cause__, "code", None) == INVALID_RECORD
    with pytest.raises(TransactionAbortableError):
        producer.send(TOPIC, b"refused", partition=2)
    producer.abort_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert producer.transaction_state().producer_epoch == epoch + 1, "the abort bumped the epoch (KIP-360)"
    bumps = [b for b in bodies(cluster, INIT_PRODUCER_ID) if b["producer_id"] >= 0]
    assert len(bumps) == 1  # refused (Tansu): a plain InitProducerId for the transactional.id bumps it instead
    producer.begin_transaction()
    good = producer.send(TOPIC, b"good", partition=2)
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert good.result(0) and visible(cluster, 2) == [b"good"]


def test_transactional_calls_in_the_wrong_state_name_both_states() -> None:
    producer, _, clock = make()
    with pytest.raises(TransactionStateError, match="init_transactions"):
        producer.send(TOPIC, b"v", partition=0)
    initialized(producer, clock)
    with pytest.raises(TransactionStateError, match="begin_transaction"):
        producer.send(TOPIC, b"v", partition=0)
    with pytest.raises(TransactionStateError, match="from state READY to state COMMITTING_TRANSACTION"):
        producer.commit_transaction()
    with pytest.raises(TransactionStateError, match="from state READY to state INITIALIZING"):
        producer.init_transactions()
    with pytest.raises(TransactionStateError, match="no transaction is open"):
        producer.send_offsets_to_transaction({(TOPIC, 0): 1}, "g")
    idempotent, _, _ = make(transactional_id="")
    with pytest.raises(TransactionStateError, match=r"without transactional\.id"):
        idempotent.begin_transaction()


def test_a_transactional_producers_send_is_the_class_method_and_checks_the_state_in_the_core() -> None:
    producer, _, clock = make()
    assert "send" not in vars(producer) and type(producer).send is Producer.send  # no per-instance send
    for topic in (TOPIC, 7):  # the compiled fast path and the slow path (a non-str topic) check alike
        with pytest.raises(TransactionStateError, match="init_transactions"):
            producer.send(topic, b"v", partition=0)
    initialized(producer, clock)
    for topic in (TOPIC, 7):
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            producer.send(topic, b"v", partition=0)
    producer.begin_transaction()
    assert producer.send(TOPIC, b"v", partition=0) is not None


def test_a_prepared_transaction_is_committed_by_another_producer() -> None:
    worker, cluster, clock = make(transactional_id="worker-7")
    initialized(worker, clock)
    worker.begin_transaction()
    futures = [worker.send(TOPIC, b"w%d" % i, partition=i % 2) for i in range(4)]
    run_until(worker, clock, lambda: all(f.done() for f in futures))
    info = worker.prepare_transaction(timeout=0)
    assert (info.transactional_id, info.state, info.in_transaction) == ("worker-7", "IN_TRANSACTION", True)
    assert worker.sender.keep_transaction_open
    assert visible(cluster, 0) == []
    committer, _, _ = make(cluster, clock, transactional_id="")
    assert committer._txn_requests is not None  # driven by hand: wait on the result the method waits on
    wrong = committer._txn_requests.complete_external(info.transactional_id, info.producer_id,
                                                      info.producer_epoch + 5, True)
    run_until(committer, clock, lambda: wrong.is_completed)
    with pytest.raises(ProducerFencedError):  # a wrong epoch is refused by the coordinator
        wrong.wait(0)
    committer.complete_transaction(info.transactional_id, info.producer_id, info.producer_epoch, commit=True)
    run_until(committer, clock, lambda: visible(cluster, 0) == [b"w0", b"w2"])
    assert visible(cluster, 1) == [b"w1", b"w3"]
    assert state(committer) == "READY", "the committer's own state is untouched"


def test_closing_with_an_open_transaction_aborts_it() -> None:
    producer, cluster, clock = make()
    initialized(producer, clock)
    producer.begin_transaction()
    sent = producer.send(TOPIC, b"dangling", partition=3)
    run_until(producer, clock, sent.done)
    assert producer.sender.begin_shutdown_abort()
    run_until(producer, clock, lambda: not producer.sender.begin_shutdown_abort())
    assert [r.txn_state for r in cluster.log(TOPIC, 3)] == ["aborted"]
    assert state(producer) == "READY"


def test_a_lost_producer_id_mapping_is_abortable_and_the_abort_reinitializes() -> None:
    producer, cluster, clock = make()
    initialized(producer, clock)
    first_id = producer.transaction_state().producer_id
    producer.begin_transaction()
    producer.send(TOPIC, b"v", partition=0)
    run(producer, clock, 10)
    del cluster.transactions["tx-1"]  # the coordinator lost the id: INVALID_PRODUCER_ID_MAPPING
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "ABORTABLE_ERROR")
    with pytest.raises(TransactionAbortableError) as info:
        producer.commit_transaction()
    assert info.value.__cause__ is not None and getattr(info.value.__cause__, "code", None) == 49
    ends = len(bodies(cluster, END_TXN))
    producer.abort_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    assert len(bodies(cluster, END_TXN)) == ends, "no EndTxn: re-initialized"
    assert producer.transaction_state().producer_id != first_id
    producer.begin_transaction()
    producer.send(TOPIC, b"after", partition=0)
    producer.commit_transaction()
    run_until(producer, clock, lambda: state(producer) == "READY")
    last = cluster.log(TOPIC, 0)[-1]
    assert (last.value, last.txn_state) == (b"after", "committed")


class _NoTransactionApis(FakeCluster):
    """A broker that speaks no version of the transaction APIs we know."""

    def send(self, node_id: int, request: TransportRequest, now_ms: int, handler: Any = None,
             expect_response: bool = True) -> None:
        if request.api_key == FIND_COORDINATOR.key:
            raise UnsupportedVersionError("broker supports no version of FindCoordinator that cykafka speaks")
        super().send(node_id, request, now_ms, handler, expect_response)


def test_a_broker_without_the_transaction_apis_is_a_fatal_error() -> None:
    clock = ManualClock()
    cluster = _NoTransactionApis(clock)
    cluster.create_topic(TOPIC, 4)
    producer, _, _ = make(cluster, clock)
    producer.init_transactions()
    run_until(producer, clock, lambda: state(producer) == "FATAL_ERROR")
    with pytest.raises(TransactionFatalError, match="FindCoordinator"):
        producer.init_transactions()
