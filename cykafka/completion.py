"""Completion: the Event a producer batch (and a send_batch BatchResult) sets once final, awaitable from a coroutine.

Threads wait on it as on a threading.Event. An event loop asks for a callback instead (`call_soon_on`): set() hands
each loop with callbacks one `loop.call_soon_threadsafe`, whatever the number of callbacks or awaiters there: this is
how cykafka.aio resolves the asyncio futures of a whole batch of records with one cross-thread call. `await
completion` is such a callback (it resolves an asyncio future of the awaiting loop). The sender thread calls set(); it
never blocks there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from typing import Any


class Completion(threading.Event):
    """A threading.Event that also runs callbacks on event loops once set (each on its own loop)."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks_lock = threading.Lock()
        self._fired = False  # set() has handed the callbacks to their loops (under the lock)
        self._loop_callbacks: dict[asyncio.AbstractEventLoop, list[Callable[[], object]]] | None = None

    def set(self) -> None:
        super().set()
        with self._callbacks_lock:  # scheduled under the lock: a callback added later runs after these (FIFO)
            self._fired = True
            callbacks, self._loop_callbacks = self._loop_callbacks, None
            if callbacks:
                for loop, calls in callbacks.items():
                    try:
                        loop.call_soon_threadsafe(_run_all, calls)
                    except RuntimeError:  # that loop is closed: nobody is left to call there
                        pass

    def call_soon_on(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        """callback() on `loop` once this is set (at once, through the loop, when it is set already), after the
        callbacks added before it; call it on the loop's own thread."""
        with self._callbacks_lock:
            if not self._fired:
                if self._loop_callbacks is None:
                    self._loop_callbacks = {}
                self._loop_callbacks.setdefault(loop, []).append(callback)
                return
        loop.call_soon(callback)

    def __await__(self) -> Generator[Any, None, None]:
        if self.is_set():
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.call_soon_on(future.get_loop(), lambda: None if future.done() else future.set_result(None))
        yield from future.__await__()


def _run_all(callbacks: list[Callable[[], object]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception as e:  # the others still run
            asyncio.get_running_loop().call_exception_handler(
                {"message": "a Completion callback raised", "exception": e})
