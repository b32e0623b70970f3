"""ProducerLock: threading.Lock's behaviour (the Producer's Condition-based memory waits depend on it)."""

from __future__ import annotations

import threading

import pytest

from cykafka.core import ProducerLock


def test_acquire_release_and_non_blocking() -> None:
    lock = ProducerLock()
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


def test_contended_acquire_waits_for_the_holder() -> None:
    lock = ProducerLock()
    order: list[str] = []
    lock.acquire()
    waiter = threading.Thread(target=lambda: (lock.acquire(), order.append("waiter"), lock.release()))
    waiter.start()
    order.append("holder")
    lock.release()
    waiter.join(5)
    assert order == ["holder", "waiter"] and not lock.locked()


def test_works_under_threading_condition() -> None:
    lock = ProducerLock()
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
