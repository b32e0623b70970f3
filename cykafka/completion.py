"""Completion: the event a producer batch (and a send_batch BatchResult) sets once final, awaitable from a coroutine.

Threads wait on it as on a threading.Event (`wait(timeout)`, `is_set()`, `set()`). An event loop asks for a callback
instead (`call_soon_on`): set() hands each loop with callbacks one `loop.call_soon_threadsafe`, whatever the number
of callbacks or awaiters there: this is how cykafka.aio resolves the asyncio futures of a whole batch of records with
one cross-thread call. `await completion` is such a callback (it resolves an asyncio future of the awaiting loop).
The sender thread calls set(); it never blocks there.

Lean on purpose: an asyncio producer makes one per batch, and the batches a fast loop queues live long enough for
the cyclic garbage collector to promote what they hold. A threading.Event is seven objects the collector tracks (its
Condition, locks, deque, bound methods, dicts) and each promoted one brings the next full collection nearer; each
full collection also walks every future the program keeps, and that is the event loop's longest stall
(docs/asyncio.md). This is one tracked object, its guard a ClientLock (not tracked); its first loop and callback are
kept in two slots (the common case: one batch's futures on one loop), a list and a dict only for more; the gate
threads block on (a lock held until set(), interruptible as Event.wait is) is made by the first waiting thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from typing import Any

from cykafka.core import ClientLock
from cykafka.ports.values import checked_seconds


class Completion:
    """A threading.Event's wait/is_set/set that also runs callbacks on event loops once set (each on its own loop)."""

    __slots__ = ("_fired", "_first_callbacks", "_first_loop", "_gate", "_guard", "_loop_callbacks")

    def __init__(self) -> None:
        self._guard = ClientLock()  # guards _fired, _gate's making and the callbacks
        self._fired = False  # set() ran: the gate is open and the callbacks are handed to their loops
        self._gate: threading.Lock | None = None  # held until set(); made by the first thread that waits
        self._first_loop: asyncio.AbstractEventLoop | None = None  # the loop of the first callback
        # that loop's callback, or its list of callbacks once it has several
        self._first_callbacks: Callable[[], object] | list[Callable[[], object]] | None = None
        self._loop_callbacks: dict[asyncio.AbstractEventLoop, list[Callable[[], object]]] | None = None  # others

    def is_set(self) -> bool:
        return self._fired

    def set(self) -> None:
        with self._guard:  # scheduled under the guard: a callback added later runs after these (FIFO)
            if self._fired:
                return
            self._fired = True
            gate = self._gate
            loop, first = self._first_loop, self._first_callbacks
            if loop is not None and first is not None:  # set together by call_soon_on
                self._first_loop = self._first_callbacks = None
                _hand_to(loop, first)
                others, self._loop_callbacks = self._loop_callbacks, None
                if others:
                    for loop, calls in others.items():
                        _hand_to(loop, calls)
        if gate is not None:
            gate.release()

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until set() or `timeout` seconds (None or math.inf: no limit; 0 or less: does not block), as
        threading.Event.wait; True once set. A timeout that is not a number: InvalidArgumentError."""
        timeout = checked_seconds(timeout, "timeout")
        with self._guard:
            if self._fired:
                return True
            gate = self._gate
            if gate is None:
                gate = self._gate = threading.Lock()
                gate.acquire()
        if timeout is None:
            opened = gate.acquire()
        elif timeout > 0:
            opened = gate.acquire(True, min(timeout, threading.TIMEOUT_MAX))
        else:
            opened = gate.acquire(False)
        if opened:
            gate.release()  # the next waiter passes too
        return self._fired

    def call_soon_on(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        """callback() on `loop` once this is set (at once, through the loop, when it is set already), after the
        callbacks added before it; call it on the loop's own thread."""
        with self._guard:
            if not self._fired:
                first = self._first_callbacks
                if first is None:
                    self._first_loop, self._first_callbacks = loop, callback
                elif loop is self._first_loop:
                    if isinstance(first, list):
                        first.append(callback)
                    else:
                        self._first_callbacks = [first, callback]
                else:
                    if self._loop_callbacks is None:
                        self._loop_callbacks = {}
                    self._loop_callbacks.setdefault(loop, []).append(callback)
                return
        loop.call_soon(callback)

    def __await__(self) -> Generator[Any, None, None]:
        if self._fired:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.call_soon_on(future.get_loop(), lambda: None if future.done() else future.set_result(None))
        yield from future.__await__()


def _hand_to(loop: asyncio.AbstractEventLoop, callbacks: Callable[[], object] | list[Callable[[], object]]) -> None:
    """One cross-thread call to `loop` for its callbacks (a lone one is the call: the loop reports what it raises)."""
    try:
        if isinstance(callbacks, list):
            loop.call_soon_threadsafe(_run_all, callbacks)
        else:
            loop.call_soon_threadsafe(callbacks)
    except RuntimeError:  # that loop is closed: nobody is left to call there
        pass


def _run_all(callbacks: list[Callable[[], object]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception as e:  # the others still run
            asyncio.get_running_loop().call_exception_handler(
                {"message": "a Completion callback raised", "exception": e})
