"""BufferPool: Java BufferPool accounting and FIFO fairness, without blocking (the caller waits)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cykafka.core import BufferPool

POOLABLE = 100
TOTAL = 1000


def _check_invariant(pool: BufferPool[Any]) -> None:
    assert pool.allocated_memory_bytes + pool.available_memory_bytes == pool.total_memory_bytes
    assert pool.available_memory_bytes == pool.unallocated_memory_bytes + pool.free_buffer_count * POOLABLE
    assert 0 <= pool.unallocated_memory_bytes <= pool.total_memory_bytes


def test_pool_is_compiled_core() -> None:
    assert BufferPool.__module__ == "cykafka.core._core"


def test_poolable_buffers_are_recycled() -> None:
    pool: BufferPool[object] = BufferPool(TOTAL, POOLABLE)
    assert (pool.total_memory_bytes, pool.poolable_size_bytes, pool.available_memory_bytes) == (TOTAL, POOLABLE, TOTAL)
    buf = pool.try_allocate(POOLABLE)
    assert isinstance(buf, bytearray) and len(buf) == POOLABLE
    assert pool.available_memory_bytes == TOTAL - POOLABLE and pool.unallocated_memory_bytes == TOTAL - POOLABLE
    assert pool.release(buf, POOLABLE) is None
    assert pool.free_buffer_count == 1 and pool.unallocated_memory_bytes == TOTAL - POOLABLE
    assert pool.available_memory_bytes == TOTAL
    assert pool.try_allocate(POOLABLE) is buf  # the same buffer back from the free list
    _check_invariant(pool)


def test_non_poolable_sizes_are_counted_not_pooled() -> None:
    pool: BufferPool[object] = BufferPool(TOTAL, POOLABLE)
    big = pool.try_allocate(350)
    small = pool.try_allocate(7)
    assert big is not None and small is not None and (len(big), len(small)) == (350, 7)
    assert pool.available_memory_bytes == TOTAL - 357
    pool.release(big, 350)
    pool.release(small, 7)
    assert pool.free_buffer_count == 0 and pool.unallocated_memory_bytes == TOTAL
    # a poolable-sized release of a buffer that is not poolable-sized (e.g. grown) is only counted
    odd = pool.try_allocate(POOLABLE)
    assert odd is not None
    pool.release(bytearray(3 * POOLABLE), POOLABLE)
    assert pool.free_buffer_count == 0 and pool.available_memory_bytes == TOTAL
    _check_invariant(pool)


def test_free_up_drops_pooled_buffers_newest_first() -> None:
    pool: BufferPool[object] = BufferPool(TOTAL, POOLABLE)
    bufs = [pool.try_allocate(POOLABLE) for _ in range(10)]
    assert pool.available_memory_bytes == 0 and pool.try_allocate(1) is None
    for b in bufs:
        assert b is not None
        pool.release(b, POOLABLE)
    assert pool.free_buffer_count == 10 and pool.unallocated_memory_bytes == 0
    big = pool.try_allocate(250)  # frees 3 pooled buffers: 300 unallocated, 250 taken
    assert big is not None and len(big) == 250
    assert pool.free_buffer_count == 7 and pool.unallocated_memory_bytes == 50
    assert pool.try_allocate(POOLABLE) is bufs[0]  # oldest pooled buffer first (Java pollFirst)
    assert pool.try_allocate(800) is None  # 50 + 6 * 100 available
    assert pool.try_allocate(650) is not None and pool.free_buffer_count == 0
    _check_invariant(pool)


def test_size_errors() -> None:
    pool: BufferPool[object] = BufferPool(TOTAL, POOLABLE)
    with pytest.raises(ValueError, match="hard limit"):
        pool.try_allocate(TOTAL + 1)
    with pytest.raises(ValueError):
        pool.try_allocate(-1)
    with pytest.raises(ValueError, match="allocated"):
        pool.release(None, 1)  # nothing allocated: a double release would break the accounting
    with pytest.raises(ValueError):
        BufferPool(TOTAL, 0)
    with pytest.raises(ValueError):
        BufferPool(-1, POOLABLE)
    whole = pool.try_allocate(TOTAL)
    assert whole is not None and pool.available_memory_bytes == 0
    empty = pool.try_allocate(0)
    assert empty is not None and len(empty) == 0
    _check_invariant(pool)


def test_waiters_are_served_in_fifo_order() -> None:
    pool: BufferPool[str] = BufferPool(TOTAL, POOLABLE)
    held = pool.try_allocate(TOTAL)
    assert held is not None
    assert pool.try_allocate(300, "a") is None
    pool.enqueue_waiter("a")
    assert pool.try_allocate(100, "b") is None
    pool.enqueue_waiter("b")
    assert pool.queued_waiters == 2 and pool.head_waiter() == "a"
    assert pool.waiter_to_wake() is None  # no memory
    assert pool.release(held, TOTAL) == "a"
    # memory is free, but "b" and newcomers may not barge ahead of the head waiter
    assert pool.try_allocate(100, "b") is None
    assert pool.try_allocate(100) is None
    got = pool.try_allocate(300, "a")
    assert got is not None and len(got) == 300
    assert pool.queued_waiters == 1 and pool.head_waiter() == "b"
    assert pool.waiter_to_wake() == "b"  # memory left over: the caller wakes the next one
    assert pool.try_allocate(100, "b") is not None
    assert pool.queued_waiters == 0 and pool.waiter_to_wake() is None
    assert pool.try_allocate(100) is not None  # no waiters: anyone may allocate
    _check_invariant(pool)


def test_head_waiter_with_a_big_request_holds_back_later_ones() -> None:
    pool: BufferPool[str] = BufferPool(TOTAL, POOLABLE)
    held = [pool.try_allocate(POOLABLE) for _ in range(10)]
    pool.enqueue_waiter("big")
    pool.enqueue_waiter("small")
    assert pool.release(held.pop(), POOLABLE) == "big"
    assert pool.try_allocate(500, "big") is None  # 100 available
    assert pool.try_allocate(POOLABLE, "small") is None  # would fit, but "big" is ahead
    for _ in range(4):
        buf = held.pop()
        assert buf is not None
        pool.release(buf, POOLABLE)
    assert pool.try_allocate(500, "big") is not None  # freeUp of the 5 pooled buffers
    assert pool.free_buffer_count == 0 and pool.waiter_to_wake() is None
    _check_invariant(pool)


def test_removing_a_timed_out_head_wakes_the_next() -> None:
    pool: BufferPool[str] = BufferPool(TOTAL, POOLABLE)
    held = pool.try_allocate(950)
    assert held is not None
    pool.enqueue_waiter("a")
    pool.enqueue_waiter("b")
    pool.enqueue_waiter("c")
    with pytest.raises(ValueError, match="already queued"):
        pool.enqueue_waiter("a")
    assert pool.remove_waiter("b") == "a"  # memory available (50): head is still "a"
    assert pool.remove_waiter("a") == "c"
    assert pool.remove_waiter("a") == "c"  # absent: fine
    assert pool.try_allocate(50, "c") is not None
    assert pool.remove_waiter("c") is None and pool.queued_waiters == 0


def test_waiters_compare_by_identity() -> None:
    pool: BufferPool[list[int]] = BufferPool(TOTAL, POOLABLE)
    first, second = [1], [1]  # equal, not identical
    held = pool.try_allocate(TOTAL)
    pool.enqueue_waiter(first)
    pool.enqueue_waiter(second)
    pool.release(held, TOTAL)
    assert pool.try_allocate(10, second) is None
    pool.remove_waiter(second)
    assert pool.head_waiter() is first and pool.queued_waiters == 1


def test_caller_loop_with_threads_grants_memory_in_arrival_order() -> None:
    """The documented caller loop (threading.Condition per waiter, one producer lock) under real threads."""
    lock = threading.Lock()
    pool: BufferPool[threading.Condition] = BufferPool(TOTAL, POOLABLE)
    with lock:
        held = [pool.try_allocate(POOLABLE) for _ in range(10)]
    granted: list[int] = []

    def allocate(index: int, size: int) -> None:
        with lock:
            buf = pool.try_allocate(size)
            if buf is None:
                cond = threading.Condition(lock)
                pool.enqueue_waiter(cond)
                try:
                    while (buf := pool.try_allocate(size, cond)) is None:
                        if not cond.wait(timeout=30):
                            raise TimeoutError(index)
                finally:
                    pool.remove_waiter(cond)
            granted.append(index)
            if (w := pool.waiter_to_wake()) is not None:
                w.notify()

    threads = []
    for index, size in enumerate([300, 100, 200]):
        t = threading.Thread(target=allocate, args=(index, size))
        t.start()
        threads.append(t)
        while True:  # queue them in a known order
            with lock:
                if pool.queued_waiters == index + 1:
                    break
            time.sleep(0.001)
    for buf in held[:6]:
        with lock:
            assert buf is not None
            if (w := pool.release(buf, POOLABLE)) is not None:
                w.notify()
    for t in threads:
        t.join(30)
    assert granted == [0, 1, 2]
    with lock:
        assert pool.queued_waiters == 0 and pool.available_memory_bytes == 0
        _check_invariant(pool)


SIZES = st.sampled_from([POOLABLE, POOLABLE, POOLABLE, 1, 50, 150, 250, 999, TOTAL, 0])


class PoolMachine(RuleBasedStateMachine):
    """Random allocate/release/wait sequences against a model of Java's BufferPool accounting."""

    def __init__(self) -> None:
        super().__init__()
        self.pool: BufferPool[int] = BufferPool(TOTAL, POOLABLE)
        self.outstanding: list[tuple[bytearray, int]] = []
        self.waiters: list[int] = []
        self.next_waiter = 0

    def _allocated(self) -> int:
        return sum(size for _, size in self.outstanding)

    def _take(self, size: int, waiter: int | None) -> None:
        may = not self.waiters or (waiter is not None and self.waiters[0] == waiter)
        fits = TOTAL - self._allocated() >= size
        pooled_before = self.pool.free_buffer_count
        buf = self.pool.try_allocate(size, waiter)
        if not (may and fits):
            assert buf is None
            return
        assert buf is not None and len(buf) == size
        assert all(buf is not b for b, _ in self.outstanding)
        if size == POOLABLE and pooled_before:
            assert self.pool.free_buffer_count == pooled_before - 1
        self.outstanding.append((buf, size))
        if self.waiters and waiter == self.waiters[0]:
            self.waiters.pop(0)

    @rule(size=SIZES)
    def allocate(self, size: int) -> None:
        self._take(size, None)

    @precondition(lambda self: bool(self.waiters))
    @rule(size=SIZES, which=st.integers(min_value=0, max_value=3))
    def allocate_as_waiter(self, size: int, which: int) -> None:
        self._take(size, self.waiters[which % len(self.waiters)])

    @rule()
    def enqueue(self) -> None:
        self.pool.enqueue_waiter(self.next_waiter)
        self.waiters.append(self.next_waiter)
        self.next_waiter += 1

    @precondition(lambda self: bool(self.waiters))
    @rule(which=st.integers(min_value=0, max_value=3))
    def remove(self, which: int) -> None:
        w = self.waiters.pop(which % len(self.waiters))
        wake = self.pool.remove_waiter(w)
        assert wake == (self.waiters[0] if self.waiters and self.pool.available_memory_bytes > 0 else None)

    @precondition(lambda self: bool(self.outstanding))
    @rule(which=st.integers(min_value=0, max_value=50))
    def release(self, which: int) -> None:
        buf, size = self.outstanding.pop(which % len(self.outstanding))
        pooled_before = self.pool.free_buffer_count
        wake = self.pool.release(buf, size)
        pooled = self.pool.free_buffer_count - pooled_before
        assert pooled == (1 if size == POOLABLE else 0)
        assert wake == (self.waiters[0] if self.waiters and self.pool.available_memory_bytes > 0 else None)

    @invariant()
    def accounting(self) -> None:
        _check_invariant(self.pool)
        assert self.pool.allocated_memory_bytes == self._allocated() <= TOTAL
        assert self.pool.queued_waiters == len(self.waiters)
        assert self.pool.head_waiter() == (self.waiters[0] if self.waiters else None)


PoolMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
TestPoolMachine = PoolMachine.TestCase
