"""The core TransactionManager: the state machine table, sequencing at drain, Java's drain gating and retry order,
epoch bumps that rewrite in-flight sequences, unresolved sequences after expiry (no I/O: the accumulator and the
manager driven by hand)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from cykafka.core import (
    TRANSACTION_TRANSITIONS,
    BufferPool,
    ProducerBatch,
    RecordAccumulator,
    TransactionManager,
    TransactionState,
    decode_batches,
)
from cykafka.errors import (
    KafkaTimeoutError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionFatalError,
    TransactionStateError,
)
from cykafka.ports import ClusterSnapshot, Node, PartitionInfo

S = TransactionState
T = "topic"
OUT_OF_ORDER, UNKNOWN_PRODUCER_ID = 45, 59

# Java's TransactionManager.State.isTransitionValid, written out: target -> sources
JAVA_TRANSITIONS = {
    S.UNINITIALIZED: {S.READY},
    S.INITIALIZING: {S.UNINITIALIZED, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION},  # 4.x: the V2 upgrade bump
    S.READY: {S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION},
    S.IN_TRANSACTION: {S.READY},
    S.COMMITTING_TRANSACTION: {S.IN_TRANSACTION},
    S.ABORTING_TRANSACTION: {S.IN_TRANSACTION, S.ABORTABLE_ERROR},
    S.ABORTABLE_ERROR: {S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR},
    S.FATAL_ERROR: set(S),
}


def manager_in(state: TransactionState) -> TransactionManager:
    """A transactional manager brought to `state` through allowed transitions only."""
    tm = TransactionManager("tx", 60000)
    if state == S.UNINITIALIZED:
        return tm
    tm.begin_initializing()
    if state == S.INITIALIZING:
        return tm
    tm.initialized(7, 0)
    if state == S.READY:
        return tm
    if state == S.FATAL_ERROR:
        tm.transition_to_fatal_error(RuntimeError("boom"))
        return tm
    tm.begin_transaction()
    if state == S.COMMITTING_TRANSACTION:
        tm.begin_commit()
    elif state == S.ABORTING_TRANSACTION:
        tm.begin_abort()
    elif state == S.ABORTABLE_ERROR:
        tm.transition_to_abortable_error(RuntimeError("a record failed"))
    assert tm.state == state
    return tm


def test_the_transition_table_is_javas() -> None:
    assert {k: set(v) for k, v in TRANSACTION_TRANSITIONS.items()} == JAVA_TRANSITIONS


@pytest.mark.parametrize("source", list(S))
@pytest.mark.parametrize("target", list(S))
def test_every_transition_is_allowed_exactly_as_the_table_says(source: S, target: S) -> None:
    tm = manager_in(source)
    error = RuntimeError("cause") if target in (S.ABORTABLE_ERROR, S.FATAL_ERROR) else None
    if source in JAVA_TRANSITIONS[target]:
        tm.transition_to(target, error)
        assert tm.state == target and tm.state_name == target.name
    else:
        with pytest.raises(TransactionStateError) as info:
            tm.transition_to(target, error)
        assert f"from state {source.name} to state {target.name}" in str(info.value)
        assert (info.value.from_state, info.value.to_state) == (source.name, target.name)
        assert tm.state == source


def test_error_states_keep_their_cause_and_other_states_clear_it() -> None:
    tm = manager_in(S.IN_TRANSACTION)
    with pytest.raises(ValueError):
        tm.transition_to(S.ABORTABLE_ERROR)
    cause = RuntimeError("record failed")
    tm.transition_to_abortable_error(cause)
    assert tm.last_error is cause and tm.has_abortable_error and tm.has_ongoing_transaction
    tm.begin_abort()
    assert tm.last_error is None and tm.is_aborting


def test_errors_surface_typed() -> None:
    tm = manager_in(S.IN_TRANSACTION)
    tm.transition_to_abortable_error(KafkaTimeoutError("expired"))
    with pytest.raises(TransactionAbortableError) as abortable:
        tm.begin_commit()
    assert isinstance(abortable.value.__cause__, KafkaTimeoutError)
    tm.begin_abort()  # the way out of an abortable error
    fenced = manager_in(S.IN_TRANSACTION)
    fenced.transition_to_fatal_error(ProducerFencedError("newer epoch", code=90))
    with pytest.raises(ProducerFencedError):
        fenced.begin_abort()
    fatal = manager_in(S.READY)
    fatal.transition_to_fatal_error(TransactionFatalError("unexpected"))
    with pytest.raises(TransactionFatalError):
        fatal.begin_transaction()


def test_send_is_refused_outside_a_transaction() -> None:
    tm = TransactionManager("tx")
    with pytest.raises(TransactionStateError, match="init_transactions"):
        tm.fail_if_not_ready_for_send()
    tm = manager_in(S.READY)
    with pytest.raises(TransactionStateError, match="begin_transaction"):
        tm.fail_if_not_ready_for_send()
    tm.begin_transaction()
    tm.fail_if_not_ready_for_send()
    idempotent = TransactionManager()
    idempotent.fail_if_not_ready_for_send()
    with pytest.raises(TransactionStateError, match=r"without transactional\.id"):
        idempotent.begin_transaction()


# -- sequencing through the accumulator ---------------------------------------------------------------------------


def snapshot(partitions: int = 2) -> ClusterSnapshot:
    return ClusterSnapshot({0: Node(0, "h", 9000)}, {T: [PartitionInfo(T, p, 0, 0) for p in range(partitions)]})


def setup(transactional_id: str | None = None) -> tuple[RecordAccumulator, TransactionManager]:
    acc = RecordAccumulator(1024, BufferPool(64 * 1024, 1024), linger_ms=0, retry_backoff_ms=10,
                            retry_backoff_max_ms=10, completion_factory=threading.Event)
    tm = TransactionManager(transactional_id)
    acc.set_transaction_manager(tm)
    return acc, tm


def initialize(tm: TransactionManager, producer_id: int = 7, epoch: int = 0) -> None:
    if tm.is_transactional:
        tm.begin_initializing()
    else:
        assert tm.bump_idempotent_epoch_and_reset_id_if_needed()
    tm.initialized(producer_id, epoch)


def append_batch(acc: RecordAccumulator, partition: int, records: int = 1, tag: int = 0) -> None:
    """`records` records of 600 bytes: one batch each (two do not fit in batch.size 1024)."""
    for i in range(records):
        acc.append(T, partition, 0, None, b"%d-%d-" % (tag, i) + b"x" * 600, None, None, 0)


def drain(acc: RecordAccumulator, now_ms: int = 0) -> list[ProducerBatch]:
    return acc.drain(snapshot(), {0}, 1 << 20, now_ms).get(0, [])


def acknowledged(acc: RecordAccumulator, tm: TransactionManager, *partitions: int) -> None:
    """Each partition first acknowledges one batch (sequence 0) of the current producer id, as a broker would: until
    then one batch at a time goes there. The test's own batches start at sequence 1."""
    for partition in partitions:
        append_batch(acc, partition, 1, tag=-1)
        (batch,) = drain(acc)
        tm.handle_completed_batch(batch, 0)


def header(batch: ProducerBatch) -> tuple[int, int, int, bool]:
    assert batch.records is not None
    (decoded,) = decode_batches(batch.records)  # also checks the CRC
    return decoded.producer_id, decoded.producer_epoch, decoded.base_sequence, decoded.is_transactional


def test_no_batch_drains_before_the_producer_id() -> None:
    acc, tm = setup()
    append_batch(acc, 0, 2)
    assert acc.ready(snapshot(), 10).ready_nodes == set()
    assert drain(acc) == []
    initialize(tm)
    assert acc.ready(snapshot(), 10).ready_nodes == {0}
    (batch,) = drain(acc)
    assert header(batch) == (7, 0, 0, False)


def test_a_partitions_first_batch_goes_alone_until_acknowledged() -> None:
    """Kafka appends any sequence from a producer id it holds no state for: until a partition acknowledged a batch
    of the current producer id, its next batch waits (tests/test_idempotence.py shows the loss this prevents)."""
    acc, tm = setup()
    initialize(tm)
    for tag in range(3):
        append_batch(acc, 0, 1, tag)
    (first,) = drain(acc)
    assert drain(acc) == [] and drain(acc) == []
    tm.handle_completed_batch(first, 0)
    second = drain(acc)
    third = drain(acc)
    assert [b.base_sequence for b in second + third] == [1, 2]  # now pipelined
    tm.handle_completed_batch(second[0], 1)
    tm.handle_completed_batch(third[0], 2)
    tm.request_epoch_bump_for_partition(T, 0)  # a fresh producer id: alone again until acknowledged
    initialize(tm, 8)
    for tag in range(2):
        append_batch(acc, 0, 1, 10 + tag)
    (fresh,) = drain(acc)
    assert (fresh.producer_id, fresh.base_sequence) == (8, 0) and drain(acc) == []


def test_drained_batches_take_consecutive_sequences_per_partition() -> None:
    acc, tm = setup()
    initialize(tm, 42, 3)
    acknowledged(acc, tm, 0, 1)
    for size in (300, 30, 500, 20):  # batches of 3 and 30 records, then 2 and 40
        for _ in range(1000 // size):
            acc.append(T, 0, 0, None, b"x" * size, None, None, 0)
            acc.append(T, 1, 0, None, b"y" * (size // 10 + 1), None, None, 0)
    seen: dict[int, list[ProducerBatch]] = {0: [], 1: []}
    for _ in range(20):
        for batch in drain(acc):
            seen[batch.partition].append(batch)
    for batches in seen.values():
        expected = 1
        for batch in batches:
            assert header(batch) == (42, 3, expected, False)
            expected += batch.record_count
        assert tm.next_sequence(T, batches[0].partition) == expected
        assert tm.first_in_flight_sequence(T, batches[0].partition) == 1
    assert len(seen[0]) > 3


def test_sequences_advance_only_on_success() -> None:
    acc, tm = setup()
    initialize(tm)
    append_batch(acc, 0, 1)
    (batch,) = drain(acc)
    assert tm.last_acked_sequence(T, 0) == -1
    tm.handle_completed_batch(batch, 100)
    assert tm.last_acked_sequence(T, 0) == 0 and tm.last_acked_offset(T, 0) == 100
    assert not tm.has_in_flight_batches(T, 0)


def test_retries_go_back_in_sequence_order_and_only_the_first_in_flight_is_resent() -> None:
    acc, tm = setup()
    initialize(tm)
    acknowledged(acc, tm, 0)
    for tag in range(3):
        append_batch(acc, 0, 1, tag)
    b0, b1, b2 = (drain(acc)[0] for _ in range(3))
    assert [b.base_sequence for b in (b0, b1, b2)] == [1, 2, 3]
    acc.reenqueue(b2, 0)  # answers come back out of order
    acc.reenqueue(b0, 0)
    acc.reenqueue(b1, 0)
    assert drain(acc, 100) == [b0], "only the batch holding the first in-flight sequence may go"
    assert drain(acc, 100) == [], "while it is out again, nothing else of the partition goes"
    tm.handle_completed_batch(b0, 0)
    assert drain(acc, 100) == [b1]
    tm.handle_completed_batch(b1, 2)
    assert drain(acc, 100) == [b2]
    tm.handle_completed_batch(b2, 4)
    append_batch(acc, 0, 1, tag=3)
    (fresh,) = drain(acc, 100)
    assert fresh.base_sequence == 4


def test_a_new_batch_waits_while_a_retry_is_pending_only_on_its_own_partition() -> None:
    acc, tm = setup()
    initialize(tm)
    acknowledged(acc, tm, 0, 1)
    append_batch(acc, 0, 1)
    append_batch(acc, 1, 1)
    out = drain(acc)
    first0 = next(b for b in out if b.partition == 0)
    acc.reenqueue(first0, 0)
    append_batch(acc, 1, 1, tag=1)
    later = drain(acc, 100)
    assert first0 in later, "the retry holds the first in-flight sequence of partition 0: it goes"
    assert any(b.partition == 1 for b in later), "partition 1 is not blocked by partition 0"


def test_out_of_order_for_the_next_batch_bumps_the_epoch_and_rewrites_in_flight_sequences() -> None:
    acc, tm = setup()
    initialize(tm, 7, 0)
    acknowledged(acc, tm, 0)
    for tag in range(3):
        append_batch(acc, 0, 1, tag)
    b0, b1, b2 = (drain(acc)[0] for _ in range(3))
    # b0 is the next expected batch: a real gap at the broker -> retry after an epoch bump
    assert tm.can_retry(b0, OUT_OF_ORDER, 0, False)
    assert tm.epoch_bump_required
    # b1 is not the next one: retried as is, no further bump needed
    assert tm.can_retry(b1, OUT_OF_ORDER, 0, False)
    for b in (b0, b1, b2):
        acc.reenqueue(b, 0)
    assert tm.bump_idempotent_epoch_and_reset_id_if_needed(), "a fresh producer id is requested"
    assert not tm.has_producer_id and drain(acc, 100) == []
    tm.initialized(8, 0)
    assert [(b.producer_id, b.base_sequence, b.sequence_has_been_reset) for b in (b0, b1, b2)] == [
        (8, 0, True), (8, 1, True), (8, 2, True)]
    assert drain(acc, 100) == [b0]
    assert header(b0) == (8, 0, 0, False), "the closed bytes are rewritten (and re-checksummed) at drain"
    assert tm.next_sequence(T, 0) == 3


def test_unknown_producer_id_bumps_for_the_idempotent_producer_and_fails_the_transactional_one() -> None:
    acc, tm = setup()
    initialize(tm)
    append_batch(acc, 0, 1)
    (batch,) = drain(acc)
    tm.handle_completed_batch(batch, 10)
    append_batch(acc, 0, 1, tag=1)
    (batch,) = drain(acc)
    assert tm.can_retry(batch, UNKNOWN_PRODUCER_ID, 5, False) and tm.epoch_bump_required
    tacc, ttm = setup("tx")
    initialize(ttm)
    ttm.begin_transaction()
    append_batch(tacc, 0, 1)
    tacc.ready(snapshot(), 0)
    ttm.partitions_added(ttm.take_new_partitions())
    (tbatch,) = drain(tacc)
    ttm.handle_completed_batch(tbatch, 10)
    append_batch(tacc, 0, 1, tag=1)
    (tbatch,) = drain(tacc)
    assert not ttm.can_retry(tbatch, UNKNOWN_PRODUCER_ID, 5, False)
    ttm.handle_failed_batch(tbatch, RuntimeError("UNKNOWN_PRODUCER_ID"), True)
    assert ttm.has_abortable_error and ttm.epoch_bump_required


def test_a_failed_batch_of_the_idempotent_producer_resequences_its_partition() -> None:
    acc, tm = setup()
    initialize(tm)
    acknowledged(acc, tm, 0)
    for tag in range(2):
        append_batch(acc, 0, 1, tag)
    b0, b1 = (drain(acc)[0] for _ in range(2))
    tm.handle_failed_batch(b0, RuntimeError("INVALID_RECORD"), True)
    acc.reenqueue(b1, 0)  # its answer: out of order (b0 never landed)
    assert tm.epoch_bump_required
    assert tm.bump_idempotent_epoch_and_reset_id_if_needed()
    tm.initialized(9, 0)
    assert (b1.producer_id, b1.base_sequence) == (9, 0)


def test_an_expired_sent_batch_leaves_its_partition_unresolved_until_it_drains() -> None:
    acc, tm = setup()
    initialize(tm)
    acknowledged(acc, tm, 0)
    for tag in range(2):
        append_batch(acc, 0, 1, tag)
    b0, b1 = (drain(acc)[0] for _ in range(2))
    tm.handle_failed_batch(b0, KafkaTimeoutError("expired"), False)
    tm.mark_sequence_unresolved(b0)
    append_batch(acc, 0, 1, tag=2)
    tm.maybe_resolve_sequences()
    assert tm.has_unresolved_sequence(T, 0) and drain(acc) == [], "no new sequence while b1 is still out"
    tm.handle_completed_batch(b1, 2)  # b1 landed, so b0 did too
    tm.maybe_resolve_sequences()
    assert not tm.has_unresolved_sequence(T, 0) and not tm.epoch_bump_required
    (fresh,) = drain(acc)
    assert fresh.base_sequence == 3


def test_an_unresolved_partition_whose_batches_all_expired_bumps_the_epoch() -> None:
    acc, tm = setup()
    initialize(tm)
    append_batch(acc, 0, 1)
    (b0,) = drain(acc)
    tm.handle_failed_batch(b0, KafkaTimeoutError("expired"), False)
    tm.mark_sequence_unresolved(b0)
    tm.maybe_resolve_sequences()
    assert tm.epoch_bump_required
    assert tm.bump_idempotent_epoch_and_reset_id_if_needed()
    tm.initialized(11, 0)
    append_batch(acc, 0, 1, tag=1)
    (fresh,) = drain(acc)
    assert (fresh.producer_id, fresh.base_sequence) == (11, 0)


def test_a_split_batch_hands_its_sequences_to_the_pieces() -> None:
    acc, tm = setup()
    initialize(tm)
    for i in range(8):
        acc.append(T, 0, 0, None, b"%d" % i + b"y" * 200, None, None, 0)
    (big,) = drain(acc)
    assert big.record_count == 4
    tm.remove_in_flight_batch(big)
    acc2_pieces = acc.split_and_reenqueue(big)
    assert acc2_pieces >= 1
    pieces = tm.in_flight_batches(T, 0)
    assert sum(p.record_count for p in pieces) == 4
    expected = 0
    for piece in pieces:
        assert piece.base_sequence == expected
        expected += piece.record_count


def test_a_transactional_partition_drains_only_once_added() -> None:
    acc, tm = setup("tx")
    initialize(tm)
    tm.begin_transaction()
    append_batch(acc, 1, 1)
    assert acc.ready(snapshot(), 10).ready_nodes == set()
    assert tm.is_partition_pending_add(T, 1)
    assert tm.take_new_partitions() == [(T, 1)]
    assert drain(acc) == [], "not before AddPartitionsToTxn answered"
    tm.partitions_added([(T, 1)])
    assert tm.transaction_started
    (batch,) = drain(acc)
    assert header(batch) == (7, 0, 0, True)


def test_v2_takes_end_txns_epoch_restarts_sequences_and_keeps_partitions_pipelined() -> None:
    """Transactions V2: a partition is in the transaction as soon as its data is queued (no AddPartitionsToTxn);
    EndTxn v5's producer id/epoch are taken and sequences restart at 0; a partition that acknowledged a batch of the
    same producer id sends the next transaction's batches without waiting for the first one's answer."""
    acc, tm = setup("tx")
    initialize(tm)
    tm.update_transaction_version(1, 2, True)
    tm.begin_transaction()
    append_batch(acc, 0, 2, tag=0)
    assert acc.ready(snapshot(), 10).ready_nodes == {0} and tm.is_partition_added(T, 0) and tm.transaction_started
    (first,) = drain(acc)
    tm.handle_completed_batch(first, 0)
    (second,) = drain(acc)
    tm.handle_completed_batch(second, 1)
    tm.begin_commit()
    tm.complete_transaction(7, 1)
    assert (tm.state_name, tm.producer_epoch, tm.next_sequence(T, 0)) == ("READY", 1, 0)
    assert not tm.is_partition_added(T, 0)
    tm.begin_transaction()
    append_batch(acc, 0, 2, tag=1)
    acc.ready(snapshot(), 10)
    both = drain(acc) + drain(acc)
    assert [header(b)[1:3] for b in both] == [(1, 0), (1, 1)], "the new epoch from 0, pipelined"
    for offset, batch in enumerate(both):
        tm.handle_completed_batch(batch, 2 + offset)
    tm.begin_commit()
    tm.complete_transaction(9, 0)  # the epoch overflowed: a new producer id, whose first batch goes alone
    tm.begin_transaction()
    append_batch(acc, 0, 2, tag=2)
    acc.ready(snapshot(), 10)
    (alone,) = drain(acc)
    assert header(alone)[:3] == (9, 0, 0) and drain(acc) == []


def test_aborting_fails_only_unsequenced_batches() -> None:
    acc, tm = setup("tx")
    initialize(tm)
    tm.begin_transaction()
    append_batch(acc, 0, 1)
    acc.ready(snapshot(), 0)
    tm.partitions_added(tm.take_new_partitions())
    (sent,) = drain(acc)
    append_batch(acc, 0, 1, tag=1)
    acc.reenqueue(sent, 0)
    queued: Any = acc.abort_unsequenced()
    assert sent not in queued and len(queued) == 1 and acc.queued_batch_count(T, 0) == 1
