"""The per-process client caches of Spark's Python workers (executors): one Producer per distinct config, shared by
the tasks that follow (Spark reuses workers), exclusive Consumers for read tasks; idle ones closed by a reaper thread,
the parent's forgotten in a forked child.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from cykafka.consumer import Consumer
    from cykafka.producer import Producer

log = logging.getLogger("cykafka.spark")


# -- the per-process client caches (executors) ---------------------------------------------------------------------


class _Client(Protocol):
    def close(self, timeout: float = ...) -> None: ...


Client = TypeVar("Client", bound=_Client)
ConfigKey = tuple[tuple[str, str], ...]


@dataclass(slots=True)
class _Cached(Generic[Client]):
    client: Client
    idle_timeout_s: float
    users: int = 0
    last_used_s: float = field(default_factory=time.monotonic)


class ClientCache(Generic[Client]):
    """Clients of one kind per distinct config in this process, built on first use and reused by the tasks that
    follow (Spark reuses Python workers). Shared (producers, thread-safe: every task of the config uses one) or
    exclusive (consumers: a task holds one alone; a concurrent task of the same config gets another). Idle ones are
    closed by a daemon reaper thread; after a fork the child forgets the parent's (os.register_at_fork, and a pid
    check for forks that skip Python's hooks) and builds its own."""

    def __init__(self, factory: Callable[[dict[str, str]], Client], kind: str, *, exclusive: bool) -> None:
        self._factory, self._kind, self._exclusive = factory, kind, exclusive
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[ConfigKey, list[_Cached[Client]]] = {}
        self._pid = os.getpid()
        self._wake = threading.Event()
        self._reaper: threading.Thread | None = None

    def acquire(self, config: ConfigKey, idle_timeout_ms: int) -> Client:
        if os.getpid() != self._pid:  # forked without Python's at-fork hooks: the inherited clients are unusable
            self._reset()
        with self._lock:
            entries = self._entries.setdefault(config, [])
            entry = next((e for e in entries if not (self._exclusive and e.users)), None)
            if entry is None:
                entry = _Cached(self._factory(dict(config)), idle_timeout_ms / 1000)
                entries.append(entry)
                log.debug("cykafka: new %s in pid %d", self._kind, self._pid)
            entry.users += 1
            return entry.client

    def release(self, config: ConfigKey, client: Client | None = None) -> None:
        """Gives back a client acquire() returned (exclusive caches need to know which)."""
        with self._lock:
            entry = next((e for e in self._entries.get(config, ()) if client is None or e.client is client), None)
            if entry is None:
                return
            entry.users -= 1
            entry.last_used_s = time.monotonic()
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name=f"cykafka-{self._kind}-reaper", daemon=True)
                self._reaper.start()
        self._wake.set()

    def evict_idle(self, now_s: float | None = None) -> int:
        """Closes clients unused for their idle timeout; returns how many."""
        now_s = time.monotonic() if now_s is None else now_s
        evicted: list[_Cached[Client]] = []
        with self._lock:
            for config, entries in list(self._entries.items()):
                idle = [e for e in entries if e.users == 0 and now_s - e.last_used_s >= e.idle_timeout_s]
                evicted += idle
                kept = [e for e in entries if e not in idle]
                if kept:
                    self._entries[config] = kept
                else:
                    del self._entries[config]
        for entry in evicted:
            log.debug("cykafka: closing an idle %s", self._kind)
            entry.client.close(30)
        return len(evicted)

    def close_all(self, timeout_s: float = 30) -> None:
        with self._lock:
            entries = [e for es in self._entries.values() for e in es]
            self._entries = {}
        for entry in entries:
            entry.client.close(timeout_s)

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._entries.values())

    def _next_eviction_delay_s(self, now_s: float) -> float | None:
        with self._lock:
            due = [e.last_used_s + e.idle_timeout_s - now_s for es in self._entries.values() for e in es
                   if e.users == 0]
        return max(0.0, min(due)) if due else None

    def _reap(self) -> None:
        wake = self._wake
        while True:
            if wake.wait(self._next_eviction_delay_s(time.monotonic())):
                wake.clear()
            try:
                self.evict_idle()
            except Exception:
                log.exception("cykafka: closing an idle %s failed", self._kind)

    def after_fork_in_child(self) -> None:
        # start over; close() in a forked child is safe in either hook order: a client its own hook already rebuilt
        # closes its fresh threads, one not rebuilt yet only lets go of its copies of the parent's (never theirs)
        entries = [e for es in self._entries.values() for e in es]
        self._reset()
        for entry in entries:
            entry.client.close(0)


def _producer(config: dict[str, str]) -> Producer:
    from cykafka.producer import Producer  # imported by the first task that writes: a reader's process never does

    return Producer(config)


def _consumer(config: dict[str, str]) -> Consumer:
    from cykafka.consumer import Consumer  # a read task's or the planner's: a writer's process never does

    return Consumer(config)


class ProducerCache(ClientCache["Producer"]):
    """The producers of this process: one per config, shared by its tasks."""

    def __init__(self) -> None:
        super().__init__(_producer, "producer", exclusive=False)


PRODUCERS = ProducerCache()
os.register_at_fork(after_in_child=PRODUCERS.after_fork_in_child)


CONSUMERS: ClientCache[Consumer] = ClientCache(_consumer, "consumer", exclusive=True)
