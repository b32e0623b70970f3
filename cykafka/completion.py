"""Completion: the Event a producer batch (and a send_batch BatchResult) sets once final, awaitable from a coroutine.

Threads wait on it as on a threading.Event; a coroutine (`await future` on a RecordFuture or BatchResult) gets an
asyncio future of its own loop, resolved from set() through loop.call_soon_threadsafe: one call per loop per
completion, whatever the number of awaiters. The sender thread calls set(); it never blocks there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator
from typing import Any


class Completion(threading.Event):
    """A threading.Event that also wakes the coroutines awaiting it, each on its own event loop."""

    def __init__(self) -> None:
        super().__init__()
        self._waiters_lock = threading.Lock()
        self._loop_waiters: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] | None = None

    def set(self) -> None:
        super().set()
        with self._waiters_lock:  # an awaiter registers under this lock only while the flag is unset
            waiters, self._loop_waiters = self._loop_waiters, None
        if waiters:
            for loop, futures in waiters.items():
                try:
                    loop.call_soon_threadsafe(_resolve, futures)
                except RuntimeError:  # that loop is closed: nobody is left to wake there
                    pass

    def __await__(self) -> Generator[Any, None, None]:
        if self.is_set():
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._waiters_lock:
            if self.is_set():
                return
            if self._loop_waiters is None:
                self._loop_waiters = {}
            self._loop_waiters.setdefault(loop, []).append(future)
        yield from future.__await__()


def _resolve(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():  # a cancelled awaiter's future is done already
            future.set_result(None)
