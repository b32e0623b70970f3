"""ConsumerWaits: how a consumer's calls wait, for Consumer and ShareConsumer.

Owns: a call's timeout in seconds turned into its deadline in ms (None: default.api.timeout.ms where the call allows
it; math.inf, or anything past 2**62 ms: no deadline), and the retry backoff between two tries of a call (the
clock's sleep, or one turn of the network loop when the consumer runs without a network thread: tests), which ends
the call when close() runs on another thread (ConsumerLock) or its deadline passed. No I/O of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from cykafka.consumer_lock import ConsumerLock
from cykafka.errors import InvalidArgumentError, KafkaTimeoutError
from cykafka.ports import Clock
from cykafka.ports.values import FOREVER_MS


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
        poll's); anything else but a number >= 0 is an InvalidArgumentError naming `name`."""
        if timeout is None and none_is_default:
            return self.clock.monotonic_ms() + self.default_api_timeout_ms
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
            raise InvalidArgumentError(f"{name} must be a number of seconds >= 0 (math.inf: no limit)"
                                       f"{' or None (default.api.timeout.ms)' if none_is_default else ''}, got "
                                       f"{timeout!r}")
        if math.isinf(timeout) or timeout * 1000 >= FOREVER_MS:
            return self.clock.monotonic_ms() + FOREVER_MS
        return self.clock.monotonic_ms() + int(timeout * 1000)

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
