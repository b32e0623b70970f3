"""Clock adapters: SystemClock (monotonic for deadlines, wall for timestamps) and ManualClock for tests; core_clock
gives the compiled send path its C-level view of a Clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from cykafka.core import CoreClock, PortClock, SystemCoreClock
from cykafka.ports import Clock


def core_clock(clock: Clock) -> CoreClock:
    """The clock the compiled send path reads for `clock`: the clock's own C-level one if it has one
    (SystemClock.core_clock), else its methods, called from C (PortClock)."""
    own = getattr(clock, "core_clock", None)
    return PortClock(clock) if own is None else own()


class SystemClock:
    def core_clock(self) -> CoreClock:
        """This clock read in C (clock_gettime, the same values), no Python call per record. A subclass that
        changes the time overrides this too."""
        return SystemCoreClock()

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep_ms(self, duration_ms: int) -> None:
        if duration_ms > 0:
            time.sleep(duration_ms / 1000)

    def wait_ms(self, wait: Callable[[float], bool], timeout_ms: int) -> bool:
        return wait(max(timeout_ms, 0) / 1000)


class ManualClock:
    """Time that moves only when told (Kafka's MockTime). `auto_tick_ms` advances it on every read."""

    def __init__(self, now_ms: int = 1_700_000_000_000, auto_tick_ms: int = 0) -> None:
        self._now_ms = now_ms
        self._start_ms = now_ms
        self.auto_tick_ms = auto_tick_ms
        self._lock = threading.Lock()

    def advance(self, duration_ms: int) -> None:
        with self._lock:
            self._now_ms += duration_ms

    def monotonic_ms(self) -> int:
        with self._lock:
            now = self._now_ms
            self._now_ms += self.auto_tick_ms
            return now - self._start_ms

    def wall_ms(self) -> int:
        with self._lock:
            now = self._now_ms
            self._now_ms += self.auto_tick_ms
            return now

    def sleep_ms(self, duration_ms: int) -> None:
        self.advance(max(duration_ms, 0))

    def wait_ms(self, wait: Callable[[float], bool], timeout_ms: int) -> bool:
        """No real waiting: unless wait(0) says it is over, the time moves timeout_ms on (as sleep_ms) and wait(0)
        answers at the deadline."""
        if wait(0):
            return True
        self.advance(max(timeout_ms, 0))
        return wait(0)
