"""RecordAccumulator semantics (Java's RecordAccumulatorTest, our own words) and a property test over random runs."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cykafka.core import BufferPool, RecordAccumulator, decode_batches
from cykafka.ports import ClusterSnapshot, Node, PartitionInfo

T = "topic"


def snapshot(partitions: int = 3, nodes: int = 2, leader_epoch: int = 0) -> ClusterSnapshot:
    infos = [PartitionInfo(T, p, p % nodes, leader_epoch) for p in range(partitions)]
    return ClusterSnapshot({n: Node(n, "h", 9000 + n) for n in range(nodes)}, {T: infos})


def accumulator(batch_size: int = 1024, memory: int = 10 * 1024, **kw: Any) -> RecordAccumulator:
    kw.setdefault("linger_ms", 10)
    return RecordAccumulator(batch_size, BufferPool(memory, batch_size), completion_factory=threading.Event, **kw)


def test_full_batch_makes_its_leader_ready_before_linger() -> None:
    acc = accumulator(linger_ms=10_000)
    md = snapshot()
    appended = 0
    while True:
        result = acc.append(T, 0, 0, None, b"x" * 100, None, None, 0)
        assert result is not None
        appended += 1
        if result[1]:
            break
        assert acc.ready(md, 0).ready_nodes == set()
    assert appended >= 8  # 61-byte header + ~108 bytes a record in 1024
    assert acc.ready(md, 0).ready_nodes == {0}


def test_linger_expiry_makes_ready_and_next_check_delay_counts_down() -> None:
    acc = accumulator(linger_ms=10)
    md = snapshot()
    acc.append(T, 1, 0, None, b"v", None, None, 100)
    ready = acc.ready(md, 104)
    assert ready.ready_nodes == set() and ready.next_ready_check_delay_ms == 6
    assert acc.ready(md, 110).ready_nodes == {1}


def test_drain_round_robins_one_batch_per_partition_up_to_max_request_size() -> None:
    acc = accumulator(linger_ms=0)
    md = snapshot(partitions=4, nodes=1)
    for p in range(4):
        for _ in range(2):  # two batches each
            for _ in range(9):
                acc.append(T, p, 0, None, b"x" * 100, None, None, 0)
    first = acc.drain(md, {0}, 2500, 0)[0]
    assert [b.partition for b in first] == [0, 1]
    second = acc.drain(md, {0}, 2500, 0)[0]
    assert [b.partition for b in second] == [2, 3], "the drain index must move on, not restart at partition 0"
    single = acc.drain(md, {0}, 10, 0)[0]
    assert len(single) == 1, "an oversized batch still goes alone"


def test_retry_backoff_holds_a_reenqueued_batch() -> None:
    acc = accumulator(linger_ms=0, retry_backoff_ms=100, retry_backoff_max_ms=100)
    md = snapshot()
    acc.append(T, 0, 0, None, b"v", None, None, 0)
    (batch,) = acc.drain(md, {0}, 1 << 20, 0)[0]
    acc.reenqueue(batch, 10)
    assert batch.attempts == 1
    assert acc.ready(md, 50).ready_nodes == set()
    assert acc.drain(md, {0}, 1 << 20, 50) == {}
    assert acc.ready(md, 10 + 121).ready_nodes == {0}  # 100 ms +20% jitter at most
    assert acc.drain(md, {0}, 1 << 20, 131)[0] == [batch]


def test_a_new_leader_epoch_skips_the_backoff() -> None:
    acc = accumulator(linger_ms=0, retry_backoff_ms=1000, retry_backoff_max_ms=1000)
    acc.append(T, 0, 0, None, b"v", None, None, 0)
    (batch,) = acc.drain(snapshot(leader_epoch=3), {0}, 1 << 20, 0)[0]
    acc.reenqueue(batch, 0)
    assert acc.ready(snapshot(leader_epoch=3), 1).ready_nodes == set()
    assert acc.ready(snapshot(leader_epoch=4), 1).ready_nodes == {0}


def test_expired_batches_by_delivery_timeout_from_creation() -> None:
    acc = accumulator(delivery_timeout_ms=1000)
    acc.append(T, 0, 0, None, b"v", None, None, 0)
    assert acc.expired_batches(999) == []
    (expired,) = acc.expired_batches(1000)
    assert expired.partition == 0 and not acc.has_undrained()


def test_unknown_leader_is_reported_not_ready() -> None:
    acc = accumulator(linger_ms=0)
    acc.append(T, 0, 0, None, b"v", None, None, 0)
    md = ClusterSnapshot({0: Node(0, "h", 1)}, {T: [PartitionInfo(T, 0, -1)]})
    ready = acc.ready(md, 100)
    assert ready.ready_nodes == set() and ready.unknown_leader_topics == {T}


def test_muted_partitions_are_skipped() -> None:
    acc = accumulator(linger_ms=0)
    acc.append(T, 0, 0, None, b"v", None, None, 0)
    acc.mute(T, 0)
    assert acc.ready(snapshot(), 5).ready_nodes == set()
    acc.unmute(T, 0)
    assert acc.ready(snapshot(), 5).ready_nodes == {0}


def test_flush_and_exhausted_pool_make_lingering_batches_ready() -> None:
    acc = accumulator(linger_ms=10_000)
    acc.append(T, 0, 0, None, b"v", None, None, 0)
    assert acc.ready(snapshot(), 1).ready_nodes == set()
    acc.begin_flush()
    assert acc.ready(snapshot(), 1).ready_nodes == {0}
    acc.end_flush()
    acc.pool.enqueue_waiter(object())
    assert acc.ready(snapshot(), 1).ready_nodes == {0}


def test_pool_exhaustion_returns_none_and_a_given_buffer_is_used() -> None:
    acc = accumulator(batch_size=1024, memory=2048, linger_ms=0)
    assert acc.append(T, 0, 0, None, b"v", None, None, 0) is not None
    assert acc.append(T, 1, 0, None, b"v", None, None, 0) is not None
    assert acc.append(T, 2, 0, None, b"v", None, None, 0) is None
    result = acc.append(T, 2, 0, None, b"v", None, None, 0, bytearray(1024))
    assert result is not None and result[2]


def test_unkeyed_records_stick_to_one_partition_then_switch() -> None:
    acc = accumulator(batch_size=1024, memory=1 << 20, linger_ms=10_000)
    md = snapshot(partitions=4)
    chosen = [acc.append(T, -1, 0, None, b"x" * 100, None, None, 0, None, md)[3] for _ in range(40)]
    assert len(set(chosen[:8])) == 1
    assert len(set(chosen)) > 1
    runs = [chosen[0]]
    for p in chosen[1:]:
        if p != runs[-1]:
            runs.append(p)
    assert len(runs) <= 6


@pytest.mark.parametrize("linger_ms", [0, 10_000])
def test_a_batch_backing_off_is_checked_again_when_its_backoff_ends(linger_ms: int) -> None:
    """Java's ready(): a retried batch waits retry backoff, not linger.ms: the next check comes when it ends (not at
    once with linger.ms=0, which would spin the sender; not after linger.ms=10 s, which would stall the retry)."""
    acc = accumulator(linger_ms=linger_ms, retry_backoff_ms=100, retry_backoff_max_ms=100)
    md = snapshot()
    acc.append(T, 0, 0, None, b"v", None, None, 0)
    (batch,) = acc.drain(md, {0}, 1 << 20, 0)[0]
    acc.reenqueue(batch, 10)
    assert 80 <= batch.retry_backoff_ms <= 120
    ready = acc.ready(md, 50)
    assert ready.ready_nodes == set()
    assert ready.next_ready_check_delay_ms == batch.retry_backoff_ms - 40
    assert acc.ready(md, 10 + batch.retry_backoff_ms).ready_nodes == {0}


def test_retry_backoff_doubles_with_each_attempt_up_to_its_max() -> None:
    """Java's ExponentialBackoff: retry.backoff.ms * 2**(attempt - 1), +-20% jitter, capped at retry.backoff.max.ms."""
    acc = accumulator(linger_ms=0, retry_backoff_ms=100, retry_backoff_max_ms=1000)
    md = snapshot()
    acc.append(T, 0, 0, None, b"v", None, None, 0)
    now = 0
    for attempt in range(1, 7):
        (batch,) = acc.drain(md, {0}, 1 << 20, now)[0]
        acc.reenqueue(batch, now)
        assert batch.attempts == attempt
        expected = min(100 * 2 ** (attempt - 1), 1000)
        assert 0.8 * expected <= batch.retry_backoff_ms <= min(1.2 * expected, 1000), (attempt, batch.retry_backoff_ms)
        assert acc.drain(md, {0}, 1 << 20, now + batch.retry_backoff_ms - 1) == {}
        now += batch.retry_backoff_ms


def test_split_pieces_keep_the_attempts_of_the_batch_they_came_from() -> None:
    """A split is not an attempt: the pieces of a batch retried once carry attempts=1, as the batch did."""
    acc = accumulator(batch_size=1024, memory=1 << 20, linger_ms=0, retry_backoff_ms=10, retry_backoff_max_ms=10)
    md = snapshot()
    acc.append(T, 0, 0, None, b"x" * 100, None, None, 0, bytearray(4096))  # a batch larger than batch.size
    for _ in range(29):
        result = acc.append(T, 0, 0, None, b"x" * 100, None, None, 0)
        assert result is not None and not result[2]
    (big,) = acc.drain(md, {0}, 1 << 20, 0)[0]
    acc.reenqueue(big, 0)
    (big,) = acc.drain(md, {0}, 1 << 20, 100)[0]
    assert big.attempts == 1
    pieces_count = acc.split_and_reenqueue(big)
    assert pieces_count >= 3
    pieces = [acc.drain(md, {0}, 1 << 20, 100)[0][0] for _ in range(pieces_count)]
    assert [p.attempts for p in pieces] == [1] * pieces_count
    assert sum(p.record_count for p in pieces) == 30 and not acc.has_undrained()


def test_drain_skips_a_muted_partition() -> None:
    """max.in.flight.requests.per.connection=1: a partition with a request out is muted; drain() must not send its
    next batch (ready() skipping it is not enough: the node is ready for the node's other partitions)."""
    acc = accumulator(linger_ms=0)
    md = snapshot(partitions=3, nodes=2)  # partitions 0 and 2 on node 0
    acc.append(T, 0, 0, None, b"a", None, None, 0)
    acc.append(T, 2, 0, None, b"b", None, None, 0)
    acc.mute(T, 0)
    assert acc.ready(md, 0).ready_nodes == {0}
    assert [b.partition for b in acc.drain(md, {0}, 1 << 20, 0)[0]] == [2]
    assert acc.drain(md, {0}, 1 << 20, 0) == {}
    acc.unmute(T, 0)
    assert [b.partition for b in acc.drain(md, {0}, 1 << 20, 0)[0]] == [0]


def test_a_retried_batch_goes_back_to_the_head_of_its_deque() -> None:
    """Per-partition order: a retried batch goes before the batches queued behind it since it was drained."""
    acc = accumulator(linger_ms=0, retry_backoff_ms=10, retry_backoff_max_ms=10)
    md = snapshot()
    acc.append(T, 0, 0, None, b"first", None, None, 0)
    (first,) = acc.drain(md, {0}, 1 << 20, 0)[0]
    acc.append(T, 0, 0, None, b"second", None, None, 1)
    acc.reenqueue(first, 1)
    assert acc.queued_batch_count(T, 0) == 2
    assert acc.drain(md, {0}, 1 << 20, 2) == {}, "the head is backing off: nothing of the partition may go"
    assert acc.drain(md, {0}, 1 << 20, 20)[0] == [first]
    (second,) = acc.drain(md, {0}, 1 << 20, 20)[0]
    (decoded,) = decode_batches(second.records)
    assert [r.value for r in decoded.records] == [b"second"]


def test_the_sticky_partition_moves_on_once_its_batches_are_full() -> None:
    """Java's partitionChanged(): once batch.size bytes went to the sticky partition, the record its batches have no
    room for starts the next partition instead of a new batch there (the 2 x batch.size switch is for batches left
    open). So the partition left behind holds only full batches."""
    reference = accumulator(batch_size=1024, memory=1 << 20)
    per_batch = 0
    while reference.append(T, 0, 0, None, b"x" * 100, None, None, 0) and reference.queued_batch_count(T, 0) == 1:
        per_batch += 1
    acc = accumulator(batch_size=1024, memory=1 << 20, linger_ms=10_000)
    md = snapshot(partitions=4)
    first = acc.append(T, -1, 0, None, b"x" * 100, None, None, 0, None, md)[3]
    appended = 1  # records that went to `first`
    while appended < 100 and acc.append(T, -1, 0, None, b"x" * 100, None, None, 0, None, md)[3] == first:
        appended += 1
    assert 1 < appended < 100
    assert appended % per_batch == 0, f"switched after {appended} records: a batch of {per_batch} was left open"
    assert acc.queued_batch_count(T, first) == appended // per_batch


def test_partitions_of_a_leader_unavailable_past_the_timeout_leave_the_adaptive_choice() -> None:
    """partitioner.availability.timeout.ms (Java's NodeLatencyStats): a leader with data ready that could not be
    drained for longer than the timeout is left out of the load stats; keyless records then avoid its partitions."""
    acc = accumulator(batch_size=64, memory=1 << 20, linger_ms=0, partition_availability_timeout_ms=100)
    md = snapshot(partitions=4, nodes=2)  # node 0 leads partitions 0 and 2, node 1 leads 1 and 3
    for p in range(4):  # adaptive choice starts once every partition has a deque (Java)
        acc.append(T, p, 0, None, b"v", None, None, 0)
    acc.append(T, -1, 0, None, b"v", None, None, 0, None, md)
    assert acc.ready(md, 0).ready_nodes == {0, 1}
    acc.drain(md, {1}, 1 << 20, 0)  # node 1 drains; node 0's connection never becomes ready
    assert acc.ready(md, 101).ready_nodes == {0}
    acc.ready(md, 102)  # node 0 had data ready 101 ms without a drain: its partitions leave the load stats
    chosen = [acc.append(T, -1, 0, None, b"x" * 200, None, None, 0, None, md)[3] for _ in range(40)]
    assert set(chosen[1:]) <= {1, 3}, chosen  # the first went to the partition chosen before
    assert set(chosen[1:]) == {1, 3}


OPS = ["append", "append", "drain", "complete", "fail_retry", "fail_retry", "expire", "tick"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 2), st.integers(1, 600)), min_size=15, max_size=120))
def test_random_runs_never_lose_duplicate_or_reorder_records(ops: list[tuple[str, int, int]]) -> None:
    """Appends, drains, acknowledgements, retries and expiry in random order. A retry fails the newest batch in flight
    of the op's partition (so sending order is still the partition's order: what is in flight of a partition is
    older than what is queued) and puts it back; it must go before anything queued behind it."""
    memory = 8 * 1024
    acc = accumulator(batch_size=1024, memory=memory, linger_ms=5, retry_backoff_ms=10, retry_backoff_max_ms=10,
                      delivery_timeout_ms=10_000)
    md = snapshot(partitions=3, nodes=2)
    now = 0
    sent: dict[int, list[int]] = {0: [], 1: [], 2: []}
    delivered: dict[int, list[int]] = {0: [], 1: [], 2: []}
    failed: set[int] = set()
    in_flight: list[Any] = []
    seq = 0
    for op, partition, size in ops:
        if op == "append":
            value = seq.to_bytes(4, "big") + b"x" * size
            result = acc.append(T, partition, now, None, value, None, None, now)
            if result is not None:
                sent[partition].append(seq)
                seq += 1
        elif op == "drain":
            for batches in acc.drain(md, {0, 1}, 4096, now).values():
                in_flight.extend(batches)
        elif op == "complete" and in_flight:
            batch = in_flight.pop(0)
            (decoded,) = decode_batches(batch.records)
            delivered[batch.partition].extend(int.from_bytes(r.value[:4], "big") for r in decoded.records)
            batch.complete(0, -1, None)
            acc.deallocate(batch)
        elif op == "fail_retry":
            mine = [i for i, b in enumerate(in_flight) if b.partition == partition]
            if mine:
                acc.reenqueue(in_flight.pop(mine[-1]), now)
        elif op == "expire":
            for batch in acc.expired_batches(now):
                batch.complete(-1, -1, TimeoutError("expired"))
                acc.deallocate(batch)
                (decoded,) = decode_batches(batch.close(None))
                failed.update(int.from_bytes(r.value[:4], "big") for r in decoded.records)
        now += 3 if op == "tick" else 0
        assert acc.pool.available_memory_bytes <= memory
    # finish: drain everything and complete it
    for _ in range(200):
        now += 20
        for batches in acc.drain(md, {0, 1}, 1 << 20, now).values():
            in_flight.extend(batches)
        while in_flight:
            batch = in_flight.pop(0)
            (decoded,) = decode_batches(batch.records)
            delivered[batch.partition].extend(int.from_bytes(r.value[:4], "big") for r in decoded.records)
            batch.complete(0, -1, None)
            acc.deallocate(batch)
        if not acc.has_undrained():
            break
    for p in sent:
        expected = [s for s in sent[p] if s not in failed]
        assert delivered[p] == expected
    assert not acc.has_incomplete()
    assert acc.pool.available_memory_bytes == memory
