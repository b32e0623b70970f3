"""ConsumerLock: a consumer's one-thread rule (Java's KafkaConsumer / KafkaShareConsumer light lock,
acquireAndEnsureOpen / release) and its close handshake with another thread, for Consumer and ShareConsumer; and
`one_thread`, the decorator their public calls wear.

Owns: which thread is inside a call (with the call's name and a depth: a rebalance listener's calls inside poll are
that thread's too), a thread the owner lends the consumer to while it waits for it (asyncio's listener on the event
loop), the process that made the consumer (after a fork() the child's calls fail), whether close() runs (on which
thread) or has finished, and the interruption it means for the owner's waits. No I/O, no clock reads but the
deadline it is handed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from cykafka.errors import ConcurrentAccessError, IllegalStateError

_WAIT_SLICE_S = 0.1  # close() looks at the owner this often while it waits for it to leave
_Method = TypeVar("_Method", bound=Callable[..., Any])


def one_thread(method: _Method) -> _Method:
    """A public call of a consumer (anything with `calling(call)`, as Consumer and ShareConsumer): holds it for this
    thread while the call runs (ConsumerLock.calling)."""
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self.calling(method.__name__):
            return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


class ConsumerLock:
    def __init__(self, client: str = "Consumer", java: str = "KafkaConsumer", noun: str = "consumer") -> None:
        """client: the class it guards, as messages name it (Java's counterpart: `java`; in prose: `noun`)."""
        self.client, self.java, self._noun = client, java, noun
        self.closed = False
        self.closing_thread: int | None = None  # close() runs on it: other threads' calls end, new ones are refused
        self._lock = threading.Condition(threading.Lock())
        self.owner: int | None = None  # the thread inside a call, with its call and depth
        self.owner_call = ""
        self._depth = 0
        self._lent: int | None = None  # a thread the one inside a call lets call too while it waits for it
        self.pid = os.getpid()

    @property
    def forked(self) -> bool:
        """This process is not the one that made the consumer."""
        return os.getpid() != self.pid

    @contextlib.contextmanager
    def calling(self, call: str) -> Iterator[None]:
        """See Consumer.calling."""
        if self.forked:
            raise IllegalStateError(
                f"{call}: this {self.client} was made in process {self.pid}, before a fork(); its threads, connections "
                f"and group membership stayed there (and its fetched records are the parent's to hand out): make a "
                f"new {self.client} in this process")
        me = threading.get_ident()
        with self._lock:
            closing, lent = self.closing_thread, me == self._lent
            if self.closed or (closing is not None and closing != me and not lent):
                raise IllegalStateError(f"{call}: the {self._noun} is closed")
            if self.owner is not None and self.owner != me and not lent:
                raise ConcurrentAccessError(
                    f"{call}: another thread is inside this {self.client}'s {self.owner_call}(); a {self.client} is "
                    f"not thread-safe (as Java's {self.java}): use it from one thread at a time (one {self.client} "
                    f"per thread), only close() may come from another thread")
            if self.owner is None:
                self.owner, self.owner_call = me, call
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self.owner = None
                    self._lock.notify_all()

    @contextlib.contextmanager
    def lent_to(self, thread: int) -> Iterator[None]:
        """See Consumer.lent_to."""
        lent, self._lent = self._lent, thread
        try:
            yield
        finally:
            self._lent = lent

    def interrupted(self) -> bool:
        """close() runs on another thread: this thread's waits end (a poll returns, other calls raise)."""
        closing, me = self.closing_thread, threading.get_ident()
        return self.closed or (closing is not None and closing != me and me != self._lent)

    def check_open(self) -> None:
        if self.interrupted():
            raise IllegalStateError(f"the {self._noun} is closed")

    def begin_close(self) -> bool | None:
        """close() starts on this thread: None when it already ran or runs; else whether another thread is inside a
        call (its waits are interrupted; `wait_for_owner` waits for it to leave)."""
        with self._lock:
            if self.closed or self.closing_thread is not None:
                return None
            self.closing_thread = me = threading.get_ident()
            return self.owner is not None and self.owner != me

    def wait_for_owner(self, remaining_ms: Callable[[], int]) -> bool:
        """Waits while another thread is inside a call and time remains; True when it is still inside."""
        with self._lock:
            while self.owner is not None and (left_ms := remaining_ms()) > 0:
                self._lock.wait(min(left_ms / 1000, _WAIT_SLICE_S))
            return self.owner is not None
