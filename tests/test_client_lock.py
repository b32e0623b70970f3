"""ClientLock: threading.Lock's behaviour (the Producer's Condition-based memory waits and the consumer's data_ready
depend on it), with and without hand_back (tests/test_gil_handoff.py checks what hand_back adds)."""

from __future__ import annotations

import threading
import time

import pytest

from cykafka.core import ClientLock


def test_acquire_release_and_non_blocking() -> None:
    lock = ClientLock()
    assert lock.acquire() and lock.locked()
    assert not lock.acquire(False)
    assert not lock.acquire(timeout=0.01)
    lock.release()
    assert not lock.locked()
    with pytest.raises(RuntimeError, match="release unlocked lock"):
        lock.release()
    with pytest.raises(ValueError):
        lock.acquire(False, 1.0)
    with lock:
        assert lock.locked()
    assert not lock.locked()


@pytest.mark.parametrize("hand_back", [False, True])
def test_contended_acquire_waits_for_the_holder(hand_back: bool) -> None:
    lock = ClientLock(hand_back)
    order: list[str] = []
    lock.acquire()
    waiter = threading.Thread(target=lambda: (lock.acquire(), order.append("waiter"), lock.release()))
    waiter.start()
    order.append("holder")
    lock.release()
    waiter.join(5)
    assert order == ["holder", "waiter"] and not lock.locked()


@pytest.mark.parametrize("hand_back", [False, True])
def test_works_under_threading_condition(hand_back: bool) -> None:
    lock = ClientLock(hand_back)
    condition = threading.Condition(lock)  # type: ignore[arg-type]
    ready: list[bool] = []

    def notify() -> None:
        with condition:
            ready.append(True)
            condition.notify()

    with condition:
        threading.Thread(target=notify).start()
        assert condition.wait_for(lambda: ready, timeout=5)
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        condition.notify()  # not held


def test_give_to_waiter_lets_a_blocked_thread_in_before_the_holder_again() -> None:
    """send_batch gives the lock this way between chunks: a plain release would let the holder, which goes on
    running, take it again before the woken waiter does (the OS lock is not fair)."""
    lock = ClientLock()
    for _ in range(20):
        order: list[str] = []
        lock.acquire()
        waiter = threading.Thread(target=lambda order=order: (lock.acquire(), order.append("waiter"),
                                                              lock.release()))
        waiter.start()
        deadline_s = time.monotonic() + 5
        while lock.waiting == 0 and time.monotonic() < deadline_s:
            time.sleep(0.001)
        assert lock.waiting == 1
        lock.give_to_waiter()
        with lock:
            order.append("holder")
        waiter.join(5)
        assert order == ["waiter", "holder"] and lock.waiting == 0
    assert lock.acquire()
    lock.give_to_waiter()  # no waiter: a plain release
    assert not lock.locked()
