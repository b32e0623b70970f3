"""ConsumerWaits: how a consumer's calls wait, for Consumer and ShareConsumer.

Owns: a call's timeout in seconds turned into its deadline in ms (None: default.api.timeout.ms where the call allows
it; math.inf, or anything past 2**62 ms: no deadline; the argument checked by ports.values.checked_seconds), and the
retry backoff between two tries of a call (the clock's sleep, or one turn of the network loop when the consumer runs
without a network thread: tests), which ends the call when close() runs on another thread (ConsumerLock) or its
deadline passed. No I/O of its own.
"""

from __future__ import annotations

from collections.abc import Callable

from cykafka.consumer_lock import ConsumerLock
from cykafka.errors import KafkaTimeoutError
from cykafka.ports import Clock
from cykafka.ports.values import FOREVER_MS, checked_seconds


class ConsumerWaits:
    def __init__(self, clock: Clock, lock: ConsumerLock, retry_backoff_ms: int, default_api_timeout_ms: int,
                 turn: Callable[[], None] | None) -> None:
        """turn: one turn of the network loop, when no network thread runs it (the waits run it instead)."""
        self.clock = clock
        self.lock = lock
        self.retry_backoff_ms = retry_backoff_ms
        self.default_api_timeout_ms = default_api_timeout_ms
        self.turn = turn

    def deadline(self, timeout: float | None, name: str, *, none_is_default: bool = True) -> int:
        """now + timeout seconds, in ms. None is default.api.timeout.ms when `none_is_default` (else refused, as
        poll's); anything else but a number >= 0 is an InvalidArgumentError naming `name` (checked_seconds)."""
        seconds = checked_seconds(timeout, name, none="default.api.timeout.ms" if none_is_default else None,
                                  at_least=0)
        now_ms = self.clock.monotonic_ms()
        if timeout is None:
            return now_ms + self.default_api_timeout_ms
        return now_ms + (FOREVER_MS if seconds is None else int(seconds * 1000))

    def backoff_wait(self, wait_ms: int) -> None:
        """How a retry backoff waits: the clock's sleep, or one turn of the loop without a network thread."""
        if self.turn is not None:
            self.turn()
        else:
            self.clock.sleep_ms(wait_ms)

    def backoff(self, deadline_ms: int) -> None:
        """Waits retry.backoff.ms (at most until the deadline) before a call tries again: IllegalStateError when the
        consumer is closed meanwhile, KafkaTimeoutError when the deadline passed."""
        self.lock.check_open()
        now_ms = self.clock.monotonic_ms()
        if now_ms >= deadline_ms:
            raise KafkaTimeoutError("no answer before the deadline")
        self.backoff_wait(min(self.retry_backoff_ms, deadline_ms - now_ms))
