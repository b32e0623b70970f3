"""The Producer's append seam: what a non-blocking send answers when it cannot queue the record yet, and the one
memory wait (Java's BufferPool.allocate loop) every blocking caller drives.

`Producer.try_send` returns the record's RecordFuture, or, with nothing queued:
- `NeedsMetadata`: the topic's metadata (or the partition) is not known yet; `Producer.poll_metadata` looks once
  without blocking (asking the sender thread for it), after which try_send is called again;
- `NeedsMemory`: buffer.memory is full; the record is prepared (intercepted, serialized, partitioned) and
  `Producer.memory_wait(needs, waiter)` returns the `MemoryWait` that appends it once the pool gives a buffer.

`MemoryWait` is the algorithm, written once: queue a waiter in the pool's FIFO (no barging), look for a buffer, wake
the sender (its ready() then sends everything queued, so memory comes back), wait on the waiter at most
MEMORY_RECHECK_MS, look again, until max.block.ms (BufferExhaustedError); on leaving, give the wake-up on to the next
waiter. Its drivers differ only in how they wait between steps: the sync Producer on a `ThreadWaiter` (an Event,
through the Clock port), cykafka.aio's AsyncProducer on an asyncio.Event set from the sender thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from cykafka.core import BufferPool, RecordAccumulator, RecordFuture
from cykafka.errors import (
    BufferExhaustedError,
    InvalidRecordError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
)
from cykafka.metrics import ProducerMetrics
from cykafka.ports import Clock, MetadataSource, Transport, share_gil_of
from cykafka.protocol.error_codes import ErrorCode, error_for

if TYPE_CHECKING:
    from cykafka.config import ProducerConfig

__all__ = ["MEMORY_RECHECK_MS", "METADATA_RECHECK_MS", "AppendSeam", "MemoryWait", "MemoryWaiter", "NeedsMemory",
           "NeedsMetadata", "ThreadWaiter", "WouldBlockError"]

T = TypeVar("T")
MEMORY_RECHECK_MS = 100  # a memory waiter looks again at least this often (a lost wake-up costs no more)
METADATA_RECHECK_MS = 100  # a metadata waiter looks again at least this often (woken at each new snapshot)
# a Metadata answer naming one of these for a topic fails its send at once (Java's maybeThrowExceptionForTopic)
_TOPIC_METADATA_ERRORS = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_TOPIC_EXCEPTION)
_AppendResult = tuple[RecordFuture, bool, bool, int]


@dataclass(frozen=True, slots=True)
class NeedsMetadata:
    """try_send's answer when the topic's metadata is missing (or has no such partition yet): nothing was queued.
    deadline_ms: the call's max.block.ms deadline on the producer's Clock port."""

    topic: str
    partition: int | None
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class NeedsMemory:
    """try_send's answer when buffer.memory is full: nothing was queued. record: the prepared record (opaque: the
    producer's append arguments); size_bytes: the buffer it needs; deadline_ms: the call's max.block.ms deadline."""

    record: tuple[Any, ...]
    size_bytes: int
    deadline_ms: int


class WouldBlockError(KafkaError):
    """A sync Producer call made on a thread it was told never to block (Producer.refuse_blocking_on: an event
    loop's) would have waited for metadata or memory."""

    def __init__(self, waits_for: str) -> None:
        super().__init__(f"the call would block the event loop waiting for {waits_for}: use AsyncProducer's "
                         f"coroutines on the loop, or call the sync Producer from another thread")


class MemoryWaiter(Protocol):
    """What waits in the pool's queue: notify() wakes it, from any thread, the producer lock held."""

    def notify(self) -> None: ...


class ThreadWaiter:
    """The sync driver's waiter: an Event the sender thread sets."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    def notify(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def wait(self, timeout_s: float | None) -> bool:
        return self._event.wait(timeout_s)


class MemoryWait(Generic[T]):
    """One caller's wait for a buffer of size_bytes, FIFO with every other; take(buffer) runs under the lock with
    the buffer the pool gave (appends the record, returns what the caller gets). Drive it as::

        wait = producer.memory_wait(needs, waiter)  # queued
        try:
            while True:
                waiter.clear()  # (the driver's own wake-up flag)
                outcome = wait.step()  # take()'s result, or the ms to wait at most before the next step
                if not isinstance(outcome, int):
                    return outcome
                wait on the waiter for outcome ms
        finally:
            wait.close()  # leaves the queue, passes a wake-up on, records the buffer-wait metric
    """

    def __init__(self, pool: BufferPool[Any], lock: Any, clock: Clock, metrics: ProducerMetrics,
                 wake_sender: Callable[[], object], take: Callable[[bytearray], T], size_bytes: int,
                 deadline_ms: int, waiter: MemoryWaiter, max_block_ms: int) -> None:
        self._pool, self._lock, self._clock, self._metrics = pool, lock, clock, metrics
        self._wake_sender, self._take = wake_sender, take
        self.size_bytes, self.deadline_ms, self.waiter = size_bytes, deadline_ms, waiter
        self._max_block_ms = max_block_ms
        self._started_ns = time.monotonic_ns()  # the metric's measure (ns); the Clock port decides the deadline
        with lock:
            pool.enqueue_waiter(waiter)

    def step(self) -> T | int:
        """One look: take()'s result once the pool gives a buffer, else the ms to wait before the next look
        (the sender woken); BufferExhaustedError at the deadline."""
        with self._lock:
            buffer = self._pool.try_allocate(self.size_bytes, self.waiter)
            if buffer is not None:
                return self._take(buffer)
        remaining_ms = self.deadline_ms - self._clock.monotonic_ms()
        if remaining_ms <= 0:
            raise BufferExhaustedError(
                f"failed to allocate {self.size_bytes} bytes within max.block.ms ({self._max_block_ms} ms): "
                f"buffer.memory {self._pool.total_memory_bytes} bytes, available "
                f"{self._pool.available_memory_bytes} bytes; the record was not queued")
        self._wake_sender()  # once per sender loop: its ready() then sends everything queued
        return min(remaining_ms, MEMORY_RECHECK_MS)

    def close(self) -> None:
        """Leaves the queue (done, timed out or cancelled) and wakes the next waiter if memory is free for it."""
        with self._lock:
            next_waiter = self._pool.remove_waiter(self.waiter)
            if next_waiter is not None:
                next_waiter.notify()
        self._metrics.record_buffer_wait(time.monotonic_ns() - self._started_ns)


class AppendSeam:
    """The Producer's append and its waits (a base of cykafka.Producer, which owns the attributes declared here):
    the slow append, the sync drivers of the metadata wait and of MemoryWait, and the seam's public calls
    (poll_metadata, memory_wait, refuse_blocking_on, clock) that a non-blocking caller drives itself."""

    if TYPE_CHECKING:  # the Producer's (and its compiled SendPath's)
        config: ProducerConfig
        _lock: Any
        _pool: BufferPool[Any]
        _clock: Clock
        _metrics: ProducerMetrics
        _accumulator: RecordAccumulator
        _metadata: MetadataSource
        _transport: Transport
        _closed: bool
        _thread: Any
        _never_block_thread: int | None
        _metadata_watchers: set[MemoryWaiter]

        def _wake_sender(self) -> None: ...
        def _sender_loop_started(self, snapshot: Any) -> None: ...

    def _append_slow(self, topic: str, partition: int, timestamp_ms: int, key_bytes: Any, value_bytes: Any,
                     header_list: Any, on_delivery: Any, deadline_ms: int | None = None,
                     block: bool = True) -> RecordFuture | NeedsMemory:
        """Appends; when the pool has no buffer, waits (FIFO) for one until deadline_ms (default: max.block.ms from
        now; send() passes the deadline its metadata wait already used part of), or (not block) returns NeedsMemory."""
        if deadline_ms is None:
            deadline_ms = self._clock.monotonic_ms() + self.config.max_block_ms
        args = (topic, partition, timestamp_ms, key_bytes, value_bytes, header_list, on_delivery)
        with self._lock:
            result = self._append(args, None, self._metadata.snapshot())
        if result is not None:
            return self._appended(result)
        needs = NeedsMemory(args, self._accumulator.allocation_size(key_bytes, value_bytes, header_list), deadline_ms)
        if not block:
            return needs
        if threading.get_ident() == self._never_block_thread:
            raise WouldBlockError("buffer memory (buffer.memory)")
        waiter = ThreadWaiter()
        return self._wait_for_memory(self.memory_wait(needs, waiter), waiter)

    def _append(self, args: tuple[Any, ...], buffer: bytearray | None, snapshot: Any) -> _AppendResult | None:
        topic, partition, timestamp_ms, key_bytes, value_bytes, header_list, on_delivery = args
        return self._accumulator.append(topic, partition, timestamp_ms, key_bytes, value_bytes, header_list,
                                        on_delivery, self._clock.monotonic_ms(), buffer, snapshot)

    def _appended(self, result: _AppendResult) -> RecordFuture:
        """An append's future, after waking the sender when a batch started or filled up."""
        future, batch_is_full, new_batch, _ = result
        if batch_is_full or new_batch:
            self._transport.wakeup()
        return future

    # -- the append seam (cykafka.producer_seam): try_send's answers, the one memory wait ---------------------

    def memory_wait(self, needs: NeedsMemory, waiter: MemoryWaiter,
                    deadline_ms: int | None = None) -> MemoryWait[RecordFuture]:
        """The wait for memory of a record try_send() answered NeedsMemory for: queued now in the buffer pool's FIFO
        with `waiter` (woken from the sender thread when memory is freed); its step() appends the record once a
        buffer is free (returns its RecordFuture), else says how long to wait; close() it in any case. deadline_ms:
        default needs.deadline_ms."""
        def take(buffer: bytearray) -> RecordFuture:  # under the lock
            result = self._append(needs.record, buffer, self._metadata.snapshot())
            assert result is not None  # a buffer was given
            if not result[2]:  # another batch took the record: give the buffer back
                self._give_back(buffer)
            return self._appended(result)

        return self._memory_wait(needs.size_bytes, needs.deadline_ms if deadline_ms is None else deadline_ms,
                                 waiter, take)

    def _memory_wait(self, size_bytes: int, deadline_ms: int, waiter: MemoryWaiter,
                     take: Callable[[bytearray], T]) -> MemoryWait[T]:
        return MemoryWait(self._pool, self._lock, self._clock, self._metrics, self._wake_sender, take, size_bytes,
                          deadline_ms, waiter, self.config.max_block_ms)

    def _wait_for_memory(self, wait: MemoryWait[T], waiter: ThreadWaiter) -> T:
        """MemoryWait's sync driver: the calling thread waits between steps (on the Clock port)."""
        try:
            while True:
                waiter.clear()
                outcome = wait.step()
                if not isinstance(outcome, int):
                    return outcome
                self._clock.wait_ms(waiter.wait, outcome)
        finally:
            wait.close()

    def _give_back(self, buffer: bytearray) -> None:
        """Called with the lock held: a buffer from a memory wait that no batch took."""
        next_waiter = self._pool.release(buffer, len(buffer))
        if next_waiter is not None:
            next_waiter.notify()

    def refuse_blocking_on(self, thread_id: int | None) -> None:
        """From now on, a call on the thread `thread_id` (threading.get_ident(); None: no thread) that would wait
        for metadata or memory raises WouldBlockError instead: an event loop's thread (cykafka.aio). The sender
        thread then lets the GIL go after each millisecond of busy turns, so that the loop does not wait a switch
        interval for it (ports.share_gil_of)."""
        self._never_block_thread = thread_id
        share_gil_of(self._transport, thread_id is not None)

    @property
    def clock(self) -> Clock:
        """The Clock port the producer's deadlines are on (max.block.ms, flush and close timeouts)."""
        return self._clock

    def _memory_freed(self, waiter: Any) -> None:
        with self._lock:
            waiter.notify()

    def _wait_on_metadata(self, topic: str, partition: int | None, deadline_ms: int) -> int:
        """Partition count of `topic`, waiting for metadata up to max.block.ms (Java's waitOnMetadata): looks again
        whenever the sender thread has a new snapshot (metadata_watch), at least every METADATA_RECHECK_MS."""
        waiter = ThreadWaiter()
        with self.metadata_watch(waiter):
            while True:
                waiter.clear()  # before the look: a snapshot that comes after it wakes the wait below
                count = self.poll_metadata(topic, partition, deadline_ms)
                if count is not None:
                    return count
                if threading.get_ident() == self._never_block_thread:
                    raise WouldBlockError(f"the metadata of topic {topic!r}")
                if self._thread is None:  # driven by hand (tests): nothing will fetch it
                    raise KafkaTimeoutError(f"topic {topic!r} not present in metadata and no sender thread runs")
                self._clock.wait_ms(waiter.wait, min(METADATA_RECHECK_MS, deadline_ms - self._clock.monotonic_ms()))

    @contextlib.contextmanager
    def metadata_watch(self, waiter: MemoryWaiter) -> Iterator[None]:
        """Within the block, waiter.notify() is called (from the sender thread) whenever the producer has new
        metadata (or a new authentication error) and when it closes: what wakes a wait for metadata between two
        poll_metadata looks."""
        with self._lock:
            self._metadata_watchers.add(waiter)
        try:
            yield
        finally:
            with self._lock:
                self._metadata_watchers.discard(waiter)

    def _metadata_changed(self) -> None:
        """The sender thread's news (and close()'s): every metadata wait looks again."""
        with self._lock:
            for waiter in self._metadata_watchers:
                waiter.notify()

    def poll_metadata(self, topic: str, partition: int | None, deadline_ms: int) -> int | None:
        """One look for `topic`'s metadata, never blocking: its partition count (the partition, if given, in
        range), or None after asking the sender thread for it (look again when metadata_watch's waiter is woken,
        or after METADATA_RECHECK_MS); raises what send() would: KafkaTimeoutError from deadline_ms (Clock port ms)
        on, at once InvalidRecordError (partition out of range), the broker's refusal of the topic,
        ProducerClosedError."""
        snapshot = self._metadata.snapshot()
        count = snapshot.partition_count(topic)
        if count is not None:
            self._sender_loop_started(snapshot)  # the compiled send path sees the topic from now on
        if count is not None and (partition is None or partition < count):
            if partition is not None and partition < 0:
                raise InvalidRecordError(f"partition {partition} is not in the range [0...{count - 1}]")
            return count
        if partition is not None and count is not None and not isinstance(partition, bool):
            raise InvalidRecordError(f"partition {partition} is not in the range [0...{count - 1}] of "
                                     f"topic {topic!r}")
        if self._closed:
            raise ProducerClosedError("the producer was closed while waiting for metadata")
        auth_error = self._transport.authentication_error()
        if auth_error is not None:
            raise auth_error
        code = snapshot.topic_errors.get(topic)
        if code in _TOPIC_METADATA_ERRORS:  # e.g. no DESCRIBE on the topic: retrying cannot help
            raise error_for(code, f"topic {topic!r}: the broker's Metadata answer refused it")
        now_ms = self._clock.monotonic_ms()
        if now_ms >= deadline_ms:
            servers = ",".join(self.config.bootstrap_servers)
            problem = getattr(self._transport, "connection_problem", lambda: None)()
            if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:  # waited out as Java does: see docs/delivery.md
                raise KafkaTimeoutError(
                    f"topic {topic!r} does not exist: the broker still answered UNKNOWN_TOPIC_OR_PARTITION after "
                    f"{self.config.max_block_ms} ms (max.block.ms); create it (cykafka.Admin.create_topics, "
                    f"`cykafka topics create`) or turn on the broker's auto.create.topics.enable; "
                    f"bootstrap.servers={servers}") from error_for(code, f"topic {topic!r}")
            raise KafkaTimeoutError(f"topic {topic!r} not present in metadata after {self.config.max_block_ms} "
                                    f"ms (max.block.ms); bootstrap.servers={servers}"
                                    + (f"; {problem}" if problem else ""))
        self._metadata.add_topic(topic, now_ms)
        self._metadata.request_update()
        self._transport.wakeup()
        return None
