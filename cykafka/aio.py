"""cykafka.aio: AsyncProducer and AsyncConsumer for asyncio, over the sync Producer and Consumer (the same core,
sender and network threads; no second protocol implementation). Nothing here blocks the event loop:

- AsyncProducer.send appends on the loop thread through the Producer's non-blocking append (`try_send`, the
  compiled send path; cykafka.producer_seam). When it answers what the record needs first, the coroutine awaits:
  metadata looked for again whenever the sender thread has a new snapshot (`poll_metadata` and `metadata_watch`, as
  the sync wait), memory through the Producer's one memory wait (`memory_wait`: a waiter in the pool's FIFO queue);
  the sender thread wakes either waiter with loop.call_soon_threadsafe. Both share one max.block.ms deadline and
  raise what the sync send raises (KafkaTimeoutError, BufferExhaustedError). The Producer's public members only: no
  subclass, no private hook.
- Acknowledgements: send() gives an asyncio future of the running loop (send_batch one per call), so gather,
  wait, as_completed and shield take it as it is (no Task each). The sender thread completes a batch; its Completion
  (cykafka.completion) hands the loop one call_soon_threadsafe, which resolves the futures of every record of that
  batch: one cross-thread call per batch, none per record. The sync RecordFuture and BatchResult are awaitable too.
- send() itself is compiled (cykafka.core's AsyncSends, this class's base; LoopFutures makes and resolves the
  futures in C, at most slice_records per turn of the loop): the common case queues the record in the call and
  returns an awaitable that is done at once; what must wait is the coroutine _send_blocked, as before.
- send_batch, transactions and close, and every AsyncConsumer call, run on one thread per client, in call order
  (the Consumer is single-threaded).
Cancellation and the other decisions: docs/asyncio.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from cykafka.completion import Completion
from cykafka.consumer import Consumer, ConsumerRebalanceListener
from cykafka.core import AsyncSends, BatchResult, ConsumerRecord, LoopFutures, RecordFuture, RecordMetadata
from cykafka.errors import KafkaError
from cykafka.fetch_collector import RecordsByPartition
from cykafka.metrics import MetricsSnapshot
from cykafka.ports.values import (
    ConsumerGroupMetadata,
    OffsetAndMetadata,
    PartitionInfo,
    TopicPartition,
    checked_seconds,
)
from cykafka.producer import Producer
from cykafka.producer_seam import METADATA_RECHECK_MS, NeedsMemory, NeedsMetadata
from cykafka.serialization import validate_topic

if TYPE_CHECKING:
    import re

    import pyarrow

__all__ = ["AsyncConsumer", "AsyncProducer", "AsyncRebalanceListener", "AsyncShareConsumer", "SendBatchFuture"]

T = TypeVar("T")


class _LoopWaiter:
    """A buffer-pool or metadata waiter (notify() is called with the producer lock held, from any thread) for a
    coroutine."""

    __slots__ = ("event", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.event = asyncio.Event()

    def notify(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.event.set)
        except RuntimeError:  # the loop is closed: its coroutine waits no more
            pass

    async def woken(self, timeout_ms: int) -> None:
        """Returns once notified (since the last event.clear()) or after timeout_ms."""
        try:
            async with asyncio.timeout(max(0, timeout_ms) / 1000):
                await self.event.wait()
        except TimeoutError:
            pass


class _ClientThread:
    """One thread per client running its blocking calls in call order."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._last: concurrent.futures.Future[Any] | None = None

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=self._name)
        future = self._last = self._executor.submit(fn, *args, **kwargs)
        return future

    def idle(self) -> bool:
        """Nothing submitted is unfinished (one thread, in order: the last call done means all are)."""
        return self._last is None or self._last.done()

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """fn(*args) on the thread. Cancelling the await: a call not started yet never runs; a running one ends
        there (its result is dropped)."""
        return await asyncio.wrap_future(self.submit(fn, *args, **kwargs))

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None


def loop_futures(**kwargs: Any) -> LoopFutures:
    """A LoopFutures (cykafka.core) making asyncio futures: send()'s, resolved a batch at a time on their loop."""
    return LoopFutures(asyncio.Future, asyncio.get_running_loop, **kwargs)


class AsyncProducer(AsyncSends):
    """The Producer for asyncio: `async with AsyncProducer({"bootstrap.servers": ...}) as producer:` then
    `await producer.send_and_wait(topic, value)`, or `future = await producer.send(...)` and `await future` later.
    Config keys and record arguments as Producer's (docs/config.md). Bound to one event loop; docs/asyncio.md."""

    def __init__(self, config: Mapping[str, object] | None = None, /, **kwargs: object) -> None:
        self._producer = Producer(config, **kwargs)
        self._thread = _ClientThread(f"cykafka-aio-{self._producer.config.client_id}")
        self._futures = loop_futures()  # send()'s futures, resolved a batch at a time
        # send() is AsyncSends.send (compiled): the try_send path and the future in one C call; what waits, here
        self._init_async_sends(self._producer, self._futures, self._on_thread, self._send_blocked)

    @property
    def producer(self) -> Producer:
        """The sync Producer underneath (config, metrics(); its send() blocks, so not on the loop)."""
        return self._producer

    async def start(self) -> None:
        """Optional (aiokafka's shape): the producer runs from construction."""
        self._on_thread(threading.get_ident())

    def _on_thread(self, thread: int) -> None:
        """send() runs on a new thread (the loop's): the sync Producer's calls that would wait raise
        WouldBlockError there."""
        self._producer.refuse_blocking_on(thread)

    async def stop(self, timeout: float | None = None) -> None:
        """Flushes (up to `timeout` s), then closes: records still pending then fail with ProducerClosedError."""
        pending = await self.flush(timeout)
        await self._thread.run(self._producer.close, 0 if pending else timeout)
        self._thread.shutdown()

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    if TYPE_CHECKING:  # AsyncSends.send (compiled), typed with this producer's futures
        def send(self, topic: str, value: object = None, key: object = None, *, partition: int | None = None,
                 timestamp_ms: int | None = None,
                 headers: object = None) -> Coroutine[Any, Any, asyncio.Future[RecordMetadata]]: ...

    async def _send_blocked(self, blocked: NeedsMetadata | NeedsMemory, topic: str, value: object, key: object,
                            partition: int | None, timestamp_ms: int | None,
                            headers: object) -> asyncio.Future[RecordMetadata]:
        """send() of a record that must wait (try_send's answer): awaited, then its future."""
        record = await self._append_blocked(blocked, topic, value, key, partition, timestamp_ms, headers)
        future: asyncio.Future[RecordMetadata] = self._futures.future_of(record)
        return future

    async def _append_blocked(self, blocked: NeedsMetadata | NeedsMemory, topic: str, value: object, key: object,
                            partition: int | None, timestamp_ms: int | None, headers: object) -> RecordFuture:
        """try_send's answer awaited: the metadata, then the call again; memory through the Producer's memory wait.
        One deadline, the first answer's (max.block.ms from the send)."""
        deadline_ms = blocked.deadline_ms
        while isinstance(blocked, NeedsMetadata):
            await self._metadata(blocked.topic, blocked.partition, deadline_ms)
            again = self._producer.try_send(topic, value, key, partition=partition, timestamp_ms=timestamp_ms,
                                            headers=headers)
            if isinstance(again, RecordFuture):
                return again
            blocked = again
        return await self._append_when_room(blocked, deadline_ms)

    async def _metadata(self, topic: str, partition: int | None, deadline_ms: int) -> int:
        """The topic's partition count, awaited until deadline_ms (then KafkaTimeoutError, as the sync send): looked
        for again at each new snapshot of the sender thread, at least every METADATA_RECHECK_MS."""
        producer = self._producer
        waiter = _LoopWaiter(asyncio.get_running_loop())
        with producer.metadata_watch(waiter):
            while True:
                waiter.event.clear()  # before the look: a snapshot that comes after it wakes the wait below
                if (count := producer.poll_metadata(topic, partition, deadline_ms)) is not None:
                    return count
                await waiter.woken(min(METADATA_RECHECK_MS, deadline_ms - producer.clock.monotonic_ms()))

    async def _append_when_room(self, needs: NeedsMemory, deadline_ms: int) -> RecordFuture:
        """The Producer's memory wait driven by a coroutine: queued in the pool's FIFO with the sync senders, woken
        by the sender thread (call_soon_threadsafe) when memory is freed; appended once a buffer is ours. Cancelled
        while waiting: leaves the queue, nothing appended."""
        waiter = _LoopWaiter(asyncio.get_running_loop())
        wait = self._producer.memory_wait(needs, waiter, deadline_ms)
        try:
            while True:
                waiter.event.clear()
                outcome = wait.step()
                if isinstance(outcome, RecordFuture):
                    return outcome
                await waiter.woken(outcome)
        finally:
            wait.close()

    async def send_and_wait(self, topic: str, value: object = None, key: object = None, *,
                            partition: int | None = None, timestamp_ms: int | None = None,
                            headers: object = None) -> RecordMetadata:
        """send(), then awaits the acknowledgement: the RecordMetadata, or the record's KafkaError raised."""
        future = await self.send(topic, value, key, partition=partition, timestamp_ms=timestamp_ms, headers=headers)
        return await future

    async def send_batch(self, topic: str, values: Any, keys: Any = None, *, partitions: Any = None,
                         timestamps_ms: Any = None, headers: Any = None) -> SendBatchFuture:
        """Producer.send_batch on the producer's thread (it may wait for memory between chunks); once every record
        is queued or failed, returns a SendBatchFuture (an asyncio future of the running loop): `await` it for the
        records delivered (or BatchDeliveryError); its batch_result is the call's BatchResult. Cancelling the first
        await stops waiting only: the call runs to its end (its records are sent or fail in the BatchResult)."""
        result = await self._thread.run(self._producer.send_batch, topic, values, keys, partitions=partitions,
                                        timestamps_ms=timestamps_ms, headers=headers)
        loop = asyncio.get_running_loop()
        future = SendBatchFuture(result, loop=loop)
        completion = result.waitable()
        if completion is None or result.done():
            _settle(future, result)
        else:
            assert isinstance(completion, Completion)
            completion.call_soon_on(loop, functools.partial(_settle, future, result))
        return future

    async def flush(self, timeout: float | None = None) -> int:
        """Sends everything queued now and awaits it; returns the records still pending (0: all done) when
        `timeout` seconds pass first. The futures send() returned before are resolved when it returns 0.
        Cancelled: stops waiting, the records are still sent."""
        timeout = checked_seconds(timeout, "timeout")  # math.inf: no limit, as the sync flush
        producer = self._producer
        waits = producer.begin_flush()
        settled = self._futures.settled_wait()
        try:
            async with asyncio.timeout(timeout):
                for completion, _ in waits:
                    await completion
                if settled is not None:  # resolved on the loop right after their batch's completion
                    await settled
        except TimeoutError:
            pass
        finally:
            pending = producer.end_flush(waits)
        return pending

    async def partitions_for(self, topic: str) -> list[PartitionInfo]:
        """Producer.partitions_for, the metadata wait awaited."""
        producer = self._producer
        validate_topic(topic)
        await self._metadata(topic, None, producer.clock.monotonic_ms() + producer.config.max_block_ms)
        return producer.partitions_for(topic)  # the metadata is there: no wait

    def metrics(self) -> MetricsSnapshot:
        """Producer.metrics() (no await: it reads counters)."""
        return self._producer.metrics()

    # -- transactions: the sync calls on the producer's thread -------------------------------------------------

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Producer.init_transactions."""
        await self._thread.run(self._producer.init_transactions, timeout)

    async def begin_transaction(self) -> None:
        """Producer.begin_transaction (no I/O; a coroutine for symmetry with commit and abort)."""
        self._producer.begin_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata],
                                          group_metadata: ConsumerGroupMetadata | str,
                                          timeout: float | None = None) -> None:
        """Producer.send_offsets_to_transaction."""
        await self._thread.run(self._producer.send_offsets_to_transaction, offsets, group_metadata, timeout)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Producer.commit_transaction: flushes, then commits."""
        await self.flush(timeout)
        await self._thread.run(self._producer.commit_transaction, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Producer.abort_transaction."""
        await self._thread.run(self._producer.abort_transaction, timeout)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """`async with producer.transaction():` begins; commits at the end, aborts when the block raises."""
        await self.begin_transaction()
        try:
            yield
        except BaseException:
            await self.abort_transaction()
            raise
        await self.commit_transaction()


class SendBatchFuture(asyncio.Future[int]):
    """What AsyncProducer.send_batch returns: an asyncio future of the call's outcome, the number of records
    delivered (or BatchDeliveryError listing (index, error) of each failed record), resolved on its loop once every
    record is final. batch_result: the call's BatchResult (errors, delivered_by_partition, so far)."""

    def __init__(self, batch_result: BatchResult, *, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self.batch_result = batch_result


def _settle(future: asyncio.Future[Any], outcome: RecordFuture | BatchResult) -> None:
    """Resolves future (on its loop) with a final outcome's result, or its error (a fresh copy each)."""
    if future.done():  # cancelled by its awaiter
        return
    try:
        future.set_result(outcome.result(0))
    except KafkaError as error:
        future.set_exception(error)


class AsyncRebalanceListener(Protocol):
    """What AsyncConsumer.subscribe(listener=...) takes: Consumer's rebalance listener, each method a plain function
    or `async def`; all run on the event loop while the consumer's thread waits for them."""

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> Awaitable[None] | None: ...

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> Awaitable[None] | None: ...


class _ListenerOnLoop:
    """The listener Consumer calls on its polling thread: has the user's listener methods (so the Consumer's own
    defaults apply to the missing ones), each running the user's on the loop while the polling thread waits (and
    lends the loop's thread the Consumer meanwhile: the sync `AsyncConsumer.consumer` may be used there)."""

    def __init__(self, listener: object, loop: asyncio.AbstractEventLoop, consumer: Consumer) -> None:
        self._loop, self._consumer, self._loop_thread = loop, consumer, threading.get_ident()
        for name in _LISTENER_METHODS:
            method = getattr(listener, name, None)
            inherited = getattr(type(listener), name, None) is getattr(ConsumerRebalanceListener, name)
            if callable(method) and not inherited:  # an inherited default calls the others: the Consumer does that
                setattr(self, name, functools.partial(self._call, method))

    def _call(self, method: Callable[[set[TopicPartition]], Any], partitions: set[TopicPartition]) -> None:
        async def run() -> None:
            outcome = method(partitions)
            if inspect.isawaitable(outcome):
                await outcome

        with self._consumer.lent_to(self._loop_thread):
            asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    @staticmethod
    def wrap(listener: object, loop: asyncio.AbstractEventLoop, consumer: Consumer) -> object:
        """The wrapper, or the listener itself when it has no listener method (the Consumer names it then)."""
        if listener is None or not any(callable(getattr(listener, name, None)) for name in _LISTENER_METHODS):
            return listener
        return _ListenerOnLoop(listener, loop, consumer)


_LISTENER_METHODS = tuple(name for name in vars(ConsumerRebalanceListener) if name.startswith("on_"))


class AsyncConsumer:
    """The Consumer for asyncio: `async with AsyncConsumer({...}) as consumer:`, `await consumer.assign([...])` or
    `consumer.subscribe([...])`, then `async for record in consumer` or `await consumer.getmany(...)`. Every call
    that touches the Consumer runs on the consumer's own thread, in call order, so they are coroutines (aiokafka's
    assign, seek and pause are not). Config keys as Consumer's; docs/asyncio.md."""

    def __init__(self, config: Mapping[str, object] | None = None, /, **kwargs: object) -> None:
        self._consumer = Consumer(config, **kwargs)
        self._thread = _ClientThread(f"cykafka-aio-{self._consumer.config.connection.client_id}")
        # a poll whose await was cancelled, by kind ("records", "arrow"): the next call of that kind returns it
        self._held: dict[str, concurrent.futures.Future[Any]] = {}
        # assign mode: a poll(0) may run on the loop thread while the consumer's thread is idle (in group mode a
        # poll may run the rebalance listener, which must run on the loop while the polling thread waits)
        self._poll_on_loop = True

    @property
    def consumer(self) -> Consumer:
        """The sync Consumer underneath (not thread-safe: leave it to this AsyncConsumer's thread)."""
        return self._consumer

    def metrics(self) -> MetricsSnapshot:
        """Consumer.metrics() (no await: it reads counters)."""
        return self._consumer.metrics()

    async def start(self) -> None:
        """Optional (aiokafka's shape): the consumer runs from construction."""

    async def stop(self, timeout: float = 30.0) -> None:
        """Consumer.close (commits with enable.auto.commit, leaves the group) within `timeout` seconds: a call
        waiting on the consumer's thread (a getmany's wait) is interrupted, not waited out."""
        await asyncio.to_thread(self._consumer.close, timeout)
        self._thread.shutdown()

    async def __aenter__(self) -> AsyncConsumer:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    # -- records ------------------------------------------------------------------------------------------------

    async def _poll(self, kind: str, fn: Callable[..., T], timeout_s: float, limit: int) -> T:
        """fn(timeout_s, limit), a poll of at most `limit` records. First fn(0) on the loop thread when the
        consumer's thread is idle (what is buffered already, decoded in C: no thread hop); when that found nothing,
        fn(timeout_s) waits on the consumer's thread. Cancelled while that runs: its records are held, and the
        next polls of the same kind hand them out first, at most their own limit each, so none is skipped."""
        future = self._held.pop(kind, None)
        if future is None:
            if self._poll_on_loop and self._thread.idle():
                got = fn(0.0, limit)
                if timeout_s <= 0 or len(got):  # type: ignore[arg-type]  # a dict or a pyarrow.RecordBatch
                    return got
            future = self._thread.submit(fn, timeout_s, limit)
        try:
            got = await asyncio.shield(asyncio.wrap_future(future))
        except asyncio.CancelledError:
            if not future.cancel():  # it runs or ran: keep what it returns
                self._held[kind] = future
            raise
        got, rest = _split(got, limit)
        if rest is not None:
            held: concurrent.futures.Future[Any] = concurrent.futures.Future()
            held.set_result(rest)
            self._held[kind] = held
        return got

    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None
                      ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to max_records (default max.poll.records) records, waiting up to timeout_ms for some, by partition
        (aiokafka's shape); {} when none came."""
        return await self._poll("records", self._poll_records, timeout_ms / 1000,
                                max_records or self._consumer.config.max_poll_records)

    async def getone(self) -> ConsumerRecord:
        """The next record, awaited as long as it takes."""
        while True:
            for records in (await self._poll("records", self._poll_records, 1.0, 1)).values():
                return records[0]

    async def poll(self, timeout: float) -> list[ConsumerRecord]:
        """Consumer.poll: up to max.poll.records records, waiting up to `timeout` s."""
        by_partition = await self._poll("records", self._poll_records, timeout,
                                        self._consumer.config.max_poll_records)
        return [record for records in by_partition.values() for record in records]

    async def poll_batch(self, timeout: float, max_records: int | None = None) -> pyarrow.RecordBatch:
        """Consumer.poll_batch: one pyarrow.RecordBatch (Spark's Kafka source schema), built in C."""
        return await self._poll("arrow", self._consumer.poll_batch, timeout,
                                max_records or self._consumer.config.max_poll_records)

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._records()

    async def _records(self) -> AsyncIterator[ConsumerRecord]:
        """Every record until stop(), as `for record in consumer` (commit() commits the positions after the last
        poll, as Java's)."""
        while not self._consumer.closed:
            for record in await self.poll(1.0):
                yield record

    def _poll_records(self, timeout_s: float, limit: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        return _poll_records(self._consumer, timeout_s, limit)

    # -- assignment, positions, offsets: the Consumer's calls on its thread ---------------------------------------

    async def subscribe(self, topics: Iterable[str] | re.Pattern[str],
                        listener: AsyncRebalanceListener | object | None = None) -> None:
        """Consumer.subscribe (group mode). The listener's methods (ConsumerRebalanceListener's) may be `async def`;
        they run on this loop while the consumer's thread (in the poll that rebalances) waits for them."""
        on_loop = _ListenerOnLoop.wrap(listener, asyncio.get_running_loop(), self._consumer)
        self._poll_on_loop = False
        await self._thread.run(self._consumer.subscribe, topics, listener=on_loop)

    async def unsubscribe(self) -> None:
        await self._thread.run(self._consumer.unsubscribe)

    async def subscription(self) -> set[str]:
        return await self._thread.run(self._consumer.subscription)

    async def assign(self, partitions: Iterable[TopicPartition]) -> None:
        await self._thread.run(self._consumer.assign, list(partitions))

    async def assignment(self) -> set[TopicPartition]:
        return await self._thread.run(self._consumer.assignment)

    async def unassign(self) -> None:
        await self._thread.run(self._consumer.unassign)

    async def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        await self._thread.run(self._consumer.seek, partition, offset)

    async def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        await self._thread.run(self._consumer.seek_to_beginning, partitions)

    async def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        await self._thread.run(self._consumer.seek_to_end, partitions)

    async def pause(self, partitions: Iterable[TopicPartition]) -> None:
        await self._thread.run(self._consumer.pause, list(partitions))

    async def resume(self, partitions: Iterable[TopicPartition]) -> None:
        await self._thread.run(self._consumer.resume, list(partitions))

    async def paused(self) -> set[TopicPartition]:
        return await self._thread.run(self._consumer.paused)

    async def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        return await self._thread.run(self._consumer.position, partition, timeout)

    async def committed(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return await self._thread.run(self._consumer.committed, list(partitions), timeout)

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
                     timeout: float | None = None) -> None:
        """Consumer.commit: the given offsets, or the positions after the last poll."""
        await self._thread.run(self._consumer.commit, offsets, timeout)

    async def beginning_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                                ) -> dict[TopicPartition, int]:
        return await self._thread.run(self._consumer.beginning_offsets, list(partitions), timeout)

    async def end_offsets(self, partitions: Iterable[TopicPartition], timeout: float | None = None
                          ) -> dict[TopicPartition, int]:
        return await self._thread.run(self._consumer.end_offsets, list(partitions), timeout)

    async def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        return await self._thread.run(self._consumer.partitions_for, topic, timeout)


def _poll_records(consumer: Consumer, timeout_s: float, limit: int) -> dict[TopicPartition, list[ConsumerRecord]]:
    """Consumer.poll with its own record limit (getmany's max_records, getone's 1; nothing is read ahead of what is
    returned, so positions and commits stay what the caller has seen), by partition."""
    sink = RecordsByPartition()
    consumer.poll_into(sink, timeout_s, limit)
    if not consumer.deserializes or not sink.by_partition:
        return sink.by_partition
    by_partition: dict[TopicPartition, list[ConsumerRecord]] = {}  # as Consumer.poll hands them out
    for record in consumer.deserialized([record for records in sink.by_partition.values() for record in records]):
        by_partition.setdefault(TopicPartition(record.topic, record.partition), []).append(record)
    return by_partition


def _split(got: Any, limit: int) -> tuple[Any, Any]:
    """A poll's outcome (records by partition, or a pyarrow.RecordBatch) cut at `limit` records: (the first ones,
    the rest or None)."""
    if isinstance(got, dict):
        if sum(map(len, got.values())) <= limit:
            return got, None
        first: dict[TopicPartition, list[ConsumerRecord]] = {}
        rest: dict[TopicPartition, list[ConsumerRecord]] = {}
        room = limit
        for tp, records in got.items():
            if room > 0:
                first[tp] = records[:room]
            if len(records) > room:
                rest[tp] = records[max(room, 0):]
            room -= len(records)
        return first, rest
    if got.num_rows <= limit:
        return got, None
    return got.slice(0, limit), got.slice(limit)


from cykafka.aio_share import AsyncShareConsumer  # noqa: E402  (it builds on this module's _ClientThread)
