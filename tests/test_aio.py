"""cykafka.aio (issue 19): awaitable RecordFuture / BatchResult, AsyncProducer waits that never block the loop (a
loop-lag probe while the buffer is full), cancellation (read back: nothing lost or duplicated), 10,000 concurrent
sends, AsyncConsumer equal to the sync Consumer field by field."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import math
import operator
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from cykafka import (
    BrokerResponseError,
    BufferExhaustedError,
    Consumer,
    IllegalStateError,
    InvalidArgumentError,
    InvalidRecordError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    Producer,
    RecordMetadata,
    TopicPartition,
)
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.aio import AsyncConsumer, AsyncProducer
from cykafka.broker import EmbeddedBroker
from cykafka.completion import Completion
from cykafka.consumer import ConsumerRebalanceListener
from cykafka.core import BatchResult
from cykafka.ports import Ports
from cykafka.protocol.error_codes import ErrorCode

POLLS = 120  # bounded read-back loops: 120 polls of at most 0.5 s


def _topic() -> str:
    return f"aio-{uuid.uuid4().hex[:10]}"


def _read_back(bootstrap: str, topic: str, count: int, partitions: int = 4) -> list[Any]:
    """Every record of topic (partitions 0..3, Tansu's auto-created count), read by the sync Consumer."""
    records: list[Any] = []
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        for _ in range(POLLS):
            if len(records) >= count:
                break
            records += consumer.poll(0.5)
        records += consumer.poll(0.2)  # nothing more may come
    return records


def _rows(records: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((r.topic, r.partition, r.offset, r.timestamp_ms, r.timestamp_type, r.key, r.value,
                   [tuple(h) for h in r.headers]) for r in records)


@contextlib.contextmanager
def _paused(broker: EmbeddedBroker) -> Iterator[None]:
    """The broker process stopped (SIGSTOP): requests go unanswered, so the producer's buffer fills. The signal stops
    the process's threads a little later: until every one is stopped, a request sent could still be answered (a
    buffer freed after the test filled them, seen in CI), so this waits for that (bounded)."""
    assert broker.pid is not None
    os.kill(broker.pid, signal.SIGSTOP)
    tasks = Path(f"/proc/{broker.pid}/task")
    for _ in range(2000):
        states = []
        for task in tasks.iterdir():
            with contextlib.suppress(OSError):  # a thread that just ended
                states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        if states and all(state in ("T", "t") for state in states):
            break
        time.sleep(0.001)
    else:
        raise AssertionError(f"the broker (pid {broker.pid}) did not stop within 2 s of SIGSTOP")
    try:
        yield
    finally:
        os.kill(broker.pid, signal.SIGCONT)


class _LagProbe:
    """A coroutine ticking every 1 ms; max_lag_s is the worst lateness of a tick: how long the loop was blocked."""

    def __init__(self) -> None:
        self.max_lag_s = 0.0
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            self.max_lag_s = max(self.max_lag_s, time.perf_counter() - before - 0.001)
            self.ticks += 1

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[_LagProbe]:
        self._task = asyncio.create_task(self._run())
        try:
            yield self
        finally:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def _fill_buffer(producer: AsyncProducer, topic: str) -> list[Any]:
    """Sends 1 KiB records to partition 0 until the next send has to wait for memory; returns their futures."""
    futures = []
    for _ in range(10_000):  # bounded: buffer.memory is 64 KiB
        task = asyncio.ensure_future(producer.send(topic, b"x" * 1024, partition=0))
        await asyncio.sleep(0)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return futures
        futures.append(task.result())
    raise AssertionError("the buffer never filled")


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _small_buffer_config(broker: EmbeddedBroker, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap_servers, "buffer.memory": 65536, "batch.size": 16384,
            "linger.ms": 0, "max.in.flight.requests.per.connection": 1, **extra}


# -- the awaitables ----------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_completion_set_on_another_thread_wakes_its_awaiters_on_the_loop() -> None:
    completion = Completion()
    woken: list[int] = []

    async def waiter(i: int) -> None:
        await completion
        woken.append(i)

    tasks = [asyncio.create_task(waiter(i)) for i in range(3)]
    cancelled = asyncio.create_task(waiter(99))
    await asyncio.sleep(0.01)
    cancelled.cancel()
    assert woken == []
    threading.Thread(target=completion.set).start()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert sorted(woken) == [0, 1, 2] and cancelled.cancelled()
    await completion  # set already: returns at once
    assert completion.wait(0)


def test_a_completion_wakes_every_waiting_thread_and_times_out_as_a_threading_event() -> None:
    completion = Completion()
    assert not completion.wait(0) and not completion.wait(-1) and not completion.is_set()
    started = time.monotonic()
    assert not completion.wait(0.05) and time.monotonic() - started >= 0.04
    results: list[bool] = []
    with pytest.raises(InvalidArgumentError, match="timeout must be a number of seconds"):
        completion.wait("1")  # type: ignore[arg-type]
    waiters = [threading.Thread(target=lambda t=t: results.append(completion.wait(t)))
               for t in (None, 5, math.inf, None)]
    for waiter in waiters:
        waiter.start()
    time.sleep(0.05)
    assert results == []
    completion.set()
    completion.set()  # a second set() changes nothing
    for waiter in waiters:
        waiter.join(5)
    assert results == [True] * 4 and completion.is_set() and completion.wait() and completion.wait(0)


def test_a_thread_waiting_on_a_completion_can_be_interrupted_by_a_signal() -> None:
    """As threading.Event.wait: Ctrl-C reaches a main thread blocked in RecordFuture.result() or flush()."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            Completion().wait(10)
        assert time.monotonic() - started < 5
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_completion_is_one_object_for_the_garbage_collector() -> None:
    """A batch's Completion lives as long as its batch, and a fast asyncio loop queues thousands of batches: each
    object the collector tracks brings its next full collection nearer, and a full collection walks every future the
    program keeps (the loop's longest stall, docs/asyncio.md). A threading.Event is seven such objects; a loop
    callback (a batch's futures, one loop) adds none."""
    loop = asyncio.new_event_loop()
    try:
        gc.collect()
        before = len(gc.get_objects())
        completions = [Completion() for _ in range(1000)]
        waited = [Completion() for _ in range(100)]
        for completion in waited:
            completion.wait(0)  # the first waiting thread makes the gate: one object more
        for completion in completions:
            completion.call_soon_on(loop, gc.isenabled)
        assert len(gc.get_objects()) - before <= 1000 + 2 * 100 + 10
        assert not any(completion.is_set() for completion in completions + waited)
    finally:
        loop.close()


@pytest.mark.broker
@pytest.mark.asyncio
async def test_record_future_and_batch_result_are_awaitable(broker: EmbeddedBroker) -> None:
    topic = _topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20}) as producer:
        future = producer.send(topic, b"v", partition=1)  # metadata wait: blocking, a sync Producer
        async with _LagProbe().running() as probe:
            metadata = await future
            result = producer.send_batch(topic, [b"a", b"b", b"c"], partitions=2)
            assert await result == 3
        assert isinstance(metadata, RecordMetadata) and (metadata.topic, metadata.partition) == (topic, 1)
        assert metadata == future.result(0) and result.delivered_by_partition == {(topic, 2): 3}
        assert probe.ticks > 0


class _CallCounter:
    def __init__(self) -> None:
        self.count = 0


def _count_calls(loop: asyncio.AbstractEventLoop, method: str) -> _CallCounter:
    """Counts the loop's calls of `method` (e.g. call_soon_threadsafe) from now on: the loop's own attribute,
    wrapped (del it to stop)."""
    counter = _CallCounter()
    original = getattr(loop, method)

    def counting(*args: Any, **kwargs: Any) -> Any:
        counter.count += 1
        return original(*args, **kwargs)

    setattr(loop, method, counting)
    return counter


def test_a_completion_made_while_the_owner_is_released_on_another_thread_is_set() -> None:
    """The completion factory is Python code: another thread may release the owner, or make a completion of its
    own, meanwhile. The waiter must get a set completion, and every waiter the same one (else it waits forever)."""
    def releasing_factory() -> Completion:
        result._record_done(0, None)  # the sender thread releases it while the completion is being made
        return Completion()

    result = BatchResult(1, releasing_factory)
    completion = result.waitable()
    assert completion is not None and completion.wait(0)

    made: list[Completion] = []

    def racing_factory() -> Completion:
        completion = Completion()
        made.append(completion)
        if len(made) == 1:
            other.waitable()  # another waiter makes and stores one meanwhile
        return completion

    other = BatchResult(1, racing_factory)
    assert other.waitable() is made[1] and other.waitable() is made[1] and len(made) == 2
    other._record_done(0, None)
    assert made[1].wait(0)


@pytest.mark.asyncio
async def test_completion_callbacks_run_on_the_loop_in_order_once_per_loop() -> None:
    loop = asyncio.get_running_loop()
    completion = Completion()
    calls: list[str] = []
    threadsafe = _count_calls(loop, "call_soon_threadsafe")
    for name in "abc":
        completion.call_soon_on(loop, functools.partial(calls.append, name))
    await asyncio.to_thread(completion.set)
    await asyncio.sleep(0)
    completion.call_soon_on(loop, functools.partial(calls.append, "late"))  # set already: after those
    await asyncio.sleep(0)
    assert calls == ["a", "b", "c", "late"] and threadsafe.count <= 2  # to_thread's own + the completion's one


@pytest.mark.asyncio
async def test_completion_callbacks_on_two_loops_each_run_on_their_own_loop_in_order() -> None:
    here = asyncio.get_running_loop()
    there = asyncio.new_event_loop()
    runner = threading.Thread(target=there.run_forever)
    runner.start()
    try:
        completion = Completion()
        calls: list[tuple[str, asyncio.AbstractEventLoop]] = []

        def call(name: str) -> None:
            calls.append((name, asyncio.get_running_loop()))

        for name, loop in (("a", here), ("x", there), ("b", here), ("y", there), ("c", here)):
            completion.call_soon_on(loop, functools.partial(call, name))
        await asyncio.to_thread(completion.set)
        for _ in range(500):
            if len(calls) == 5:
                break
            await asyncio.sleep(0.01)
        assert [name for name, loop in calls if loop is here] == ["a", "b", "c"]
        assert [name for name, loop in calls if loop is there] == ["x", "y"]
    finally:
        there.call_soon_threadsafe(there.stop)
        runner.join(5)
        there.close()


@pytest.mark.asyncio
async def test_a_lone_completion_callback_that_raises_is_reported_by_its_loop() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda loop, context: reported.append(context))
    try:
        completion = Completion()
        completion.call_soon_on(loop, functools.partial(operator.truediv, 1, 0))
        completion.set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert [type(context.get("exception")) for context in reported] == [ZeroDivisionError]
    finally:
        loop.set_exception_handler(None)


# -- AsyncProducer -----------------------------------------------------------------------------------------------


@pytest.mark.broker
@pytest.mark.asyncio
async def test_send_returns_asyncio_futures_resolved_once_per_batch(broker: EmbeddedBroker) -> None:
    """What send() returns is an asyncio future of the loop: gather, wait, as_completed and shield take it as it
    is (no Task each), and a batch's records are resolved by one cross-thread call, not one per record."""
    topic = _topic()
    loop = asyncio.get_running_loop()
    async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 200,
                              "batch.size": 1 << 20}) as producer:
        await producer.send_and_wait(topic, b"warm-up", partition=0)
        threadsafe, tasks_made = _count_calls(loop, "call_soon_threadsafe"), _count_calls(loop, "create_task")
        futures = [await producer.send(topic, b"%d" % i, partition=0) for i in range(2000)]
        assert all(type(f) is asyncio.Future and asyncio.ensure_future(f) is f for f in futures)
        metadata = await asyncio.wait_for(asyncio.gather(*futures), 30)
        del loop.create_task
        assert tasks_made.count == 0 and threadsafe.count <= 2, (tasks_made.count, threadsafe.count)
        assert [m.offset for m in metadata] == list(range(1, 2001))
        done, pending = await asyncio.wait(futures)
        assert len(done) == 2000 and not pending
        assert len([f async for f in _as_completed(futures)]) == 2000
        assert (await asyncio.shield(futures[7])).offset == 8
        for i, future in enumerate(futures):
            assert (await future).offset == i + 1


async def _as_completed(futures: list[Any]) -> AsyncIterator[Any]:
    for next_done in asyncio.as_completed(futures):
        yield await next_done


@pytest.mark.asyncio
async def test_failed_records_fail_their_futures_each_with_its_own_error() -> None:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic("t", 2)
    cluster.inject_error(ErrorCode.INVALID_RECORD, topic="t", partition=1)
    async with AsyncProducer({"bootstrap.servers": "fake:9092", "linger.ms": 50, "retries": 0},
                             ports=Ports(transport=cluster)) as producer:
        futures = [await producer.send("t", b"v%d" % i, partition=i % 2) for i in range(10)]
        outcomes = await asyncio.gather(*futures, return_exceptions=True)
        batch = await producer.send_batch("t", [b"a", b"b"], partitions=0)
        assert asyncio.isfuture(batch) and await asyncio.gather(batch) == [2]
        assert batch.batch_result.delivered_by_partition == {("t", 0): 2}
    assert [isinstance(o, RecordMetadata) for o in outcomes] == [True, False] * 5
    errors = outcomes[1::2]
    assert all(isinstance(e, BrokerResponseError) and e.name == "INVALID_RECORD" for e in errors)
    assert len({id(e) for e in errors}) == 5  # a copy each: tracebacks of one never pile up on another's




def _released_batches_alive() -> int:
    """Batches released and not freed yet (a batch is outside the collector, gc.get_objects(), until released)."""
    return sum(type(o).__name__ == "ProducerBatch" for o in gc.get_objects())


@pytest.mark.asyncio
async def test_flush_waits_on_one_future_and_holds_no_batch() -> None:
    """flush() over many batches makes one future to wait for the futures handed out (not one per batch: 2,000 of
    them, all promoted, set off a full collection of the garbage collector), and waits on the batches' completions,
    not on the batches: each batch is freed as it completes, not all at once as flush returns (for 2,000 batches of
    200,000 records, an 8-10 ms turn of the loop; docs/asyncio.md)."""
    producer, cluster = _fake_producer(**{"linger.ms": 60000, "retry.backoff.ms": 2000, "retry.backoff.max.ms": 2000})
    cluster.create_topic("t", 8)
    cluster.inject_error(ErrorCode.NOT_ENOUGH_REPLICAS, topic="t", partition=7)  # retried after the backoff
    loop = asyncio.get_running_loop()
    async with producer:
        gc.collect()
        alive_before = _released_batches_alive()
        futures = [await producer.send("t", b"%d" % i, partition=i % 8) for i in range(80)]
        assert len(producer.producer._accumulator.incomplete) == 8 and not any(f.done() for f in futures)
        futures_made = _count_calls(loop, "create_future")
        flushing = asyncio.create_task(producer.flush())
        await asyncio.sleep(0)
        assert futures_made.count <= 2  # flush's one, and the first completion it awaits
        for _ in range(100):  # 1 s at most: partition 7's retry comes after 2 s, and flush ends then
            if all(f.done() for f in futures[:7]) and _released_batches_alive() == alive_before:
                break
            await asyncio.sleep(0.01)
        assert [f.done() for f in futures[:8]] == [True] * 7 + [False]
        # partitions 0-6's released batches are freed (the sender thread dropped them), partition 7's is in its
        # retry backoff: nothing else holds a batch while flush still waits
        assert not flushing.done() and _released_batches_alive() == alive_before
        assert await asyncio.wait_for(flushing, 10) == 0
        assert all(f.done() and f.result().partition == i % 8 for i, f in enumerate(futures))


@pytest.mark.asyncio
async def test_a_flush_that_times_out_leaves_another_flush_waiting_to_the_end() -> None:
    producer, cluster = _fake_producer(**{"linger.ms": 60000, "retry.backoff.ms": 1000, "retry.backoff.max.ms": 1000})
    cluster.inject_error(ErrorCode.NOT_ENOUGH_REPLICAS, topic="t", partition=1)
    async with producer:
        futures = [await producer.send("t", b"%d" % i, partition=i % 2) for i in range(10)]
        patient = asyncio.create_task(producer.flush())
        for _ in range(50):
            if futures[0].done():
                break
            await asyncio.sleep(0.01)
        assert await producer.flush(timeout=0.05) == 5  # partition 1's records, in their backoff
        assert await asyncio.wait_for(patient, 10) == 0
        assert all(f.done() and not f.cancelled() for f in futures)


def _fake_producer(**config: Any) -> tuple[AsyncProducer, FakeCluster]:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic("t", 2)
    return AsyncProducer({"bootstrap.servers": "fake:9092", "linger.ms": 50, **config},
                         ports=Ports(transport=cluster)), cluster


@pytest.mark.asyncio
async def test_send_queues_in_one_call_and_its_await_gives_the_future_or_raises() -> None:
    producer, _ = _fake_producer()
    async with producer:
        await producer.send_and_wait("t", b"warm-up", partition=0)  # metadata known: the compiled path from here
        sent = producer.send("t", b"v", partition=0)
        assert asyncio.iscoroutine(sent)  # create_task and ensure_future take it as an async def's coroutine
        future = await sent
        assert asyncio.isfuture(future) and future.get_loop() is asyncio.get_running_loop()
        task_future = await asyncio.create_task(producer.send("t", b"w", partition=1))
        refused = producer.send("t", b"x", partition=7)  # no exception at the call, as a coroutine's
        with pytest.raises(InvalidRecordError, match="partition"):
            await refused
        assert (await future).offset == 1 and (await task_future).partition == 1


@pytest.mark.asyncio
async def test_a_cancelled_future_leaves_its_batch_resolved_and_its_record_sent() -> None:
    producer, cluster = _fake_producer()
    async with producer:
        futures = [await producer.send("t", b"v%d" % i, partition=0) for i in range(10)]
        futures[3].cancel()
        assert await producer.flush(30) == 0
    assert futures[3].cancelled()
    assert [f.result().offset for i, f in enumerate(futures) if i != 3] == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert len(cluster.log("t", 0)) == 10


@pytest.mark.asyncio
async def test_a_batch_of_futures_is_resolved_slice_records_a_turn_of_the_loop() -> None:
    turn = 0

    async def turns() -> None:
        nonlocal turn
        while True:
            await asyncio.sleep(0)
            turn += 1

    producer, _ = _fake_producer(**{"batch.size": 1 << 20, "linger.ms": 200})
    async with producer:
        await producer.send_and_wait("t", b"warm-up", partition=0)
        counting = asyncio.create_task(turns())
        futures = [await producer.send("t", b"v", partition=0) for _ in range(250)]  # one batch
        resolved_on: list[int] = []
        for future in futures:
            future.add_done_callback(lambda _: resolved_on.append(turn))
        assert await producer.flush(30) == 0
        await asyncio.sleep(0)
        counting.cancel()
    assert len(resolved_on) == 250 and producer._futures.slice_records == 100
    # 100, 100, 50: three turns; the loop ran between them
    assert [resolved_on.count(t) for t in sorted(set(resolved_on))] == [100, 100, 50]


@pytest.mark.asyncio
async def test_a_future_stays_outside_the_cyclic_gc_unless_it_fails() -> None:
    producer, cluster = _fake_producer(retries=0)
    cluster.inject_error(ErrorCode.INVALID_RECORD, topic="t", partition=1)
    async with producer:
        futures = [await producer.send("t", b"v", partition=i % 2) for i in range(6)]
        assert not any(gc.is_tracked(f) for f in futures)  # pending: held by its batch, nothing to find through it
        await asyncio.gather(*futures, return_exceptions=True)
    assert [gc.is_tracked(f) for f in futures] == [False, True] * 3  # an error's traceback may hold a cycle
    assert [f.exception() is None for f in futures] == [True, False] * 3
    first = weakref.ref(futures[0])
    del futures
    assert first() is None  # an untracked future is freed by its reference count as any other


@pytest.mark.asyncio
async def test_flush_takes_math_inf_as_no_limit_and_refuses_a_timeout_that_is_not_a_number() -> None:
    producer, _ = _fake_producer(**{"linger.ms": 60_000})
    async with producer:
        future = await producer.send("t", b"v", partition=0)
        with pytest.raises(InvalidArgumentError, match="timeout must be a number of seconds"):
            await producer.flush("1")  # type: ignore[arg-type]
        assert await producer.flush(math.inf) == 0 and future.done()


@pytest.mark.asyncio
async def test_no_container_the_collector_walks_holds_a_pending_future() -> None:
    """A batch keeps its records' futures (asyncio's, and the RecordFutures under them) in arrays the collector does
    not walk (core/refs.pyx): a loop sending flat out has hundreds of thousands pending, each a cache miss in every
    collection that reaches its batch, and nothing the collector could free through them."""
    producer, _ = _fake_producer(**{"linger.ms": 60_000})
    async with producer:
        future = await producer.send("t", b"v", partition=0)
        assert [type(r) for r in gc.get_referrers(future) if isinstance(r, (list, tuple, dict, set))] == []
        assert await producer.flush(30) == 0


@pytest.mark.asyncio
async def test_a_future_cancelled_while_pending_is_back_in_the_cyclic_gc_once_its_batch_ends() -> None:
    producer, _ = _fake_producer(**{"linger.ms": 60_000})
    async with producer:
        future = await producer.send("t", b"v", partition=0)
        future.cancel([future])  # the future keeps its cancel message: a reference cycle
        cycle = weakref.ref(future)
        del future
        assert not gc.is_tracked(cycle())  # still held by its batch
        assert await producer.flush(30) == 0
    gc.collect()
    assert cycle() is None  # left untracked, the collector could not have freed the cycle


@pytest.mark.asyncio
async def test_a_queued_batch_and_its_completion_are_outside_the_cyclic_gc_until_released() -> None:
    """A loop sending flat out queues thousands of batches (the sender thread gets the GIL at the switch interval);
    each object of theirs the collector tracks is promoted while it waits and brings the next full collection (the
    loop's longest stall, 10-15 ms) nearer: a 200,000-record send loop set one off. The producer holds a batch and
    its completion until it releases them, so the collector could free nothing through them before."""
    producer, _ = _fake_producer(**{"linger.ms": 60_000})
    async with producer:
        future = await producer.send("t", b"v", partition=0)
        (batch,) = producer.producer._accumulator.incomplete
        completion = batch.waitable()
        assert not gc.is_tracked(batch) and not gc.is_tracked(completion)
        assert await producer.flush(30) == 0 and future.done()
        assert gc.is_tracked(batch) and gc.is_tracked(completion) and completion.is_set()


def test_a_producer_used_on_a_loop_that_closed_with_futures_pending_flushes_and_stops_on_another() -> None:
    """flush() waits for the futures handed out on its own loop: those of a loop that closed before their batches
    completed are resolved by nobody (as any asyncio future of a closed loop), and a future of that loop cannot be
    awaited on another (flush raised RuntimeError: a Future attached to a different loop, and so did stop())."""
    producer, cluster = _fake_producer(**{"linger.ms": 60_000})

    async def send_some() -> list[Any]:
        return [await producer.send("t", b"v", partition=i % 2) for i in range(4)]

    stranded = asyncio.run(send_some())  # its loop closes with both batches queued (linger.ms)
    try:
        assert asyncio.run(producer.flush(30)) == 0
        assert [len(cluster.log("t", p)) for p in (0, 1)] == [2, 2] and not any(f.done() for f in stranded)
    finally:
        asyncio.run(producer.stop(5))


def test_send_without_a_running_loop_queues_nothing() -> None:
    producer, cluster = _fake_producer()
    try:
        sent = producer.send("t", b"v", partition=0)
        with pytest.raises(RuntimeError, match="no running event loop"):
            sent.send(None)  # what a Task does with it: the error, nothing queued
        assert asyncio.run(producer.flush(5)) == 0
        assert cluster.log("t", 0) == [] and producer.producer.metrics()["record-send-total"] == 0
    finally:
        asyncio.run(producer.stop(5))


def test_one_producer_resolves_the_futures_of_each_loop_it_is_used_on() -> None:
    producer, _ = _fake_producer()

    async def send_some(tag: bytes) -> list[int]:
        futures = [await producer.send("t", tag, partition=0) for _ in range(5)]
        return [(await f).offset for f in futures]

    try:
        assert asyncio.run(send_some(b"a")) == [0, 1, 2, 3, 4]
        assert asyncio.run(send_some(b"b")) == [5, 6, 7, 8, 9]
    finally:
        asyncio.run(producer.stop(5))


def test_a_send_future_belongs_to_the_loop_running_on_the_calling_thread() -> None:
    """send() finds the running loop without asking asyncio each time (its getpid on 3.11) only while the loop it
    found last still runs on the same thread: another thread's loop and a later loop on the same thread each get
    futures of their own (a fork child: the next test)."""
    producer, _ = _fake_producer()
    sent_on_a, release_a = threading.Event(), threading.Event()
    loops: dict[str, tuple[object, object]] = {}

    async def send_one(tag: str, hold: bool = False) -> None:
        future = await producer.send("t", tag.encode(), partition=0)
        loops[tag] = (future.get_loop(), asyncio.get_running_loop())
        if hold:  # loop A keeps running while the main thread's loop sends
            sent_on_a.set()
            await asyncio.to_thread(release_a.wait, 30)
        await future

    a = threading.Thread(target=asyncio.run, args=(send_one("a", hold=True),))
    try:
        a.start()
        assert sent_on_a.wait(30)
        asyncio.run(send_one("b"))  # loop A runs still, on thread A
        release_a.set()
        a.join(30)
        asyncio.run(send_one("c"))  # a new loop on this thread, after the one of "b" ended
        for tag in "abc":
            future_loop, running = loops[tag]
            assert future_loop is running, tag
    finally:
        release_a.set()
        a.join(30)
        asyncio.run(producer.stop(5))


def test_a_send_in_a_fork_child_of_a_running_loop_finds_no_running_loop_as_asyncio_says() -> None:
    script = """if True:
        import asyncio, os, sys
        sys.path.insert(0, sys.argv[1])
        from test_aio import _fake_producer
        producer, _ = _fake_producer()

        async def main():
            await (await producer.send("t", b"parent", partition=0))  # the loop found, on this thread
            record = producer.producer.try_send("t", b"queued", partition=0)  # its metadata is known: queued
            pid = os.fork()
            if pid == 0:  # the child runs on in the copied loop's frames; asyncio says no loop runs here
                try:
                    producer._futures.future_of(record)  # send()'s own lookup of the loop
                except RuntimeError as e:
                    os._exit(0 if "no running event loop" in str(e) else 3)
                os._exit(4)
            return os.waitpid(pid, 0)[1]

        status = asyncio.run(main())
        asyncio.run(producer.stop(5))
        sys.exit(os.waitstatus_to_exitcode(status))
    """
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", script,
                           os.path.dirname(os.path.abspath(__file__))], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.broker
@pytest.mark.asyncio
async def test_a_full_buffer_is_awaited_without_blocking_the_loop_until_max_block_ms(broker: EmbeddedBroker) -> None:
    topic = _topic()
    async with AsyncProducer(_small_buffer_config(broker, **{"max.block.ms": 1500})) as producer:
        await producer.send_and_wait(topic, b"warm-up", partition=0)  # metadata known, connection up
        with _paused(broker):
            futures = await _fill_buffer(producer, topic)
            async with _LagProbe().running() as probe:
                started = time.monotonic()
                with pytest.raises(BufferExhaustedError, match=r"max\.block\.ms"):
                    await producer.send(topic, b"y" * 1024, partition=0)
                waited_s = time.monotonic() - started
        assert waited_s >= 1.4  # the sync send's deadline, awaited
        # the loop ran all along: a blocked loop would show one tick ~1.5 s late
        assert probe.max_lag_s < 0.2 and probe.ticks > 100, (probe.max_lag_s, probe.ticks)
        assert await producer.flush(30) == 0
        assert all(f.exception() is None for f in futures)


@pytest.mark.asyncio
async def test_missing_metadata_is_awaited_and_times_out_as_the_sync_send() -> None:
    async with AsyncProducer({"bootstrap.servers": "127.0.0.1:1", "max.block.ms": 1000}) as producer:
        async with _LagProbe().running() as probe:
            with pytest.raises(KafkaTimeoutError, match=r"not present in metadata after 1000 ms"):
                await producer.send(_topic(), b"v")
        # a loop blocked by the wait would show one tick ~1 s late; a late tick of a few hundred ms is the process
        # (a collection in a long test session: CI saw 0.26 s once with the old 300 ms wait)
        assert probe.max_lag_s < 0.5 and probe.ticks > 100, (probe.max_lag_s, probe.ticks)
        await producer.stop(0)


@pytest.mark.asyncio
async def test_interceptors_see_each_record_once_when_the_send_awaits_metadata() -> None:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic("t", 2)
    seen: list[Any] = []

    class Interceptor:
        def on_send(self, record: Any) -> None:
            seen.append(record.value)

    async with AsyncProducer({"bootstrap.servers": "fake:9092", "interceptor.classes": [Interceptor()],
                              "max.block.ms": 5000}, ports=Ports(transport=cluster)) as producer:
        metadata = await producer.send_and_wait("t", b"v", partition=1)  # the topic is unknown until fetched
        assert seen == [b"v"]
        with pytest.raises(InvalidTopicError):
            await producer.send(123, b"v")  # type: ignore[arg-type]
        with pytest.raises(KafkaError, match="would block the event loop waiting for the metadata of topic 'u'"):
            producer.producer.send("u", b"u")  # the sync send, on the loop's thread
    assert (metadata.topic, metadata.partition, metadata.offset) == ("t", 1, 0)


@pytest.mark.broker
@pytest.mark.asyncio
async def test_cancellation_loses_and_duplicates_nothing(broker: EmbeddedBroker) -> None:
    topic = _topic()
    async with AsyncProducer(_small_buffer_config(broker, **{"max.block.ms": 60000})) as producer:
        await producer.send_and_wait(topic, b"first", partition=0)
        with _paused(broker):
            appended = await _fill_buffer(producer, topic)  # the buffer is full now
            waiting = asyncio.create_task(producer.send(topic, b"cancelled".ljust(1024, b"-"), partition=1))
            await asyncio.sleep(0.2)
            assert not waiting.done()  # waits for memory
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            # appended: cancelling a wait stops the wait only. A task awaiting the future cancels it (asyncio's
            # rule: that future tells nothing more), a shielded one resolves; both records are sent
            ack_wait = asyncio.create_task(_await(appended[-2]))
            shielded = asyncio.create_task(_await(asyncio.shield(appended[-1])))
            await asyncio.sleep(0.05)
            assert not ack_wait.done() and not shielded.done()
            ack_wait.cancel()
            shielded.cancel()
        assert await producer.flush(30) == 0
        assert appended[-2].cancelled() and not appended[-1].cancelled()
        last = await producer.send_and_wait(topic, b"last", partition=0)
    records = _read_back(broker.bootstrap_servers, topic, len(appended) + 2)
    values = [r.value for r in records]
    assert b"cancelled".ljust(1024, b"-") not in values and all(r.partition == 0 for r in records)
    assert values == [b"first", *[b"x" * 1024] * len(appended), b"last"]
    assert appended[-1].result().offset == len(appended)
    assert last.offset == len(appended) + 1


@pytest.mark.broker
@pytest.mark.asyncio
async def test_ten_thousand_concurrent_sends_are_all_acknowledged(broker: EmbeddedBroker) -> None:
    topic = _topic()
    count = 10_000
    async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": "lz4"}) as producer:
        metadata = await asyncio.gather(*(producer.send_and_wait(topic, b"%d" % i, key=b"k%d" % (i % 7))
                                          for i in range(count)))
    assert len({(m.partition, m.offset) for m in metadata}) == count
    records = _read_back(broker.bootstrap_servers, topic, count)
    assert sorted(r.value for r in records) == sorted(b"%d" % i for i in range(count))


@pytest.mark.broker
@pytest.mark.asyncio
async def test_send_batch_flush_and_a_transaction(broker: EmbeddedBroker) -> None:
    topic = _topic()
    async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers,
                              "transactional.id": f"aio-{uuid.uuid4().hex[:8]}"}) as producer:
        await producer.init_transactions()
        async with producer.transaction():
            result = await producer.send_batch(topic, [b"a", b"b"], partitions=0)
            future = await producer.send(topic, b"c", partition=0)
            assert await producer.flush(10) == 0
        assert await result == 2 and (await future).offset == 2
        with pytest.raises(RuntimeError):
            async with producer.transaction():
                aborted = await producer.send(topic, b"aborted", partition=0)
                raise RuntimeError("abort it")
        assert producer.producer.transaction_state().state == "READY"
    values = [r.value for r in _read_back(broker.bootstrap_servers, topic, 3) if r.value]
    # the aborted record fails unsent, or (sent before the abort) Tansu shows it to read_uncommitted readers
    assert values == [b"a", b"b", b"c"] + ([] if aborted.exception() else [b"aborted"])


# -- AsyncConsumer -----------------------------------------------------------------------------------------------


@pytest.mark.broker
@pytest.mark.asyncio
async def test_async_consumer_reads_what_was_written_equal_to_the_sync_consumer(broker: EmbeddedBroker) -> None:
    topic = _topic()
    count = 300
    written = [(i % 4, 1_700_000_000_000 + i, None if i % 5 == 0 else b"k%d" % i, None if i % 7 == 0 else b"v%d" % i,
                [("h", b"x%d" % i), ("empty", None)] if i % 3 == 0 else []) for i in range(count)]
    async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for partition, timestamp_ms, key, value, headers in written:
            await producer.send(topic, value, key=key, partition=partition, timestamp_ms=timestamp_ms,
                                headers=headers or None)
        assert await producer.flush(30) == 0
    expected = _rows(_read_back(broker.bootstrap_servers, topic, count))
    assert sorted((p, ts, k, v, h) for _, p, _, ts, _, k, v, h in expected) == sorted(written)
    tps = [TopicPartition(topic, p) for p in range(4)]
    config = {"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest",
              "max.poll.records": 50}
    async with AsyncConsumer(config) as consumer:
        await consumer.assign(tps)
        got: list[Any] = []
        async with _LagProbe().running() as probe:
            for _ in range(POLLS):
                if len(got) >= count:
                    break
                by_partition = await consumer.getmany(timeout_ms=500, max_records=40)
                for tp, records in by_partition.items():
                    assert len(records) <= 40 and all(TopicPartition(r.topic, r.partition) == tp for r in records)
                    got += records
        assert _rows(got) == expected
        assert probe.max_lag_s < 0.2
        assert await consumer.position(tps[0]) == count // 4
        await consumer.seek(tps[1], 0)
        one = await consumer.getone()
        assert (one.partition, one.offset) == (1, 0)
        batch = await consumer.poll_batch(1.0, max_records=10)
        assert 1 <= batch.num_rows <= 10 and batch.column("partition").to_pylist() == [1] * batch.num_rows
    async with AsyncConsumer(config) as consumer:
        await consumer.assign(tps)
        streamed = []
        async for record in consumer:
            streamed.append(record)
            if len(streamed) == count:
                break
        assert _rows(streamed) == expected


@pytest.mark.broker
@pytest.mark.asyncio
async def test_a_cancelled_getmany_skips_no_record(broker: EmbeddedBroker) -> None:
    topic = _topic()
    tp = TopicPartition(topic, 0)
    async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer, AsyncConsumer(
            {"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"}) as consumer:
        await producer.send_and_wait(topic, b"before", partition=0)
        await consumer.assign([tp])
        assert [r.value for r in (await consumer.getmany(timeout_ms=5000))[tp]] == [b"before"]
        task = asyncio.create_task(consumer.getmany(timeout_ms=5000))
        await asyncio.sleep(0.3)  # its poll waits on the consumer's thread for a record
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await producer.send_and_wait(topic, b"taken-by-the-cancelled-poll", partition=0)
        seen: list[Any] = []
        for _ in range(20):
            if seen:
                break
            seen += (await consumer.getmany(timeout_ms=500)).get(tp, [])
        assert [r.value for r in seen] == [b"taken-by-the-cancelled-poll"]
        assert await consumer.position(tp) == 2


@pytest.mark.broker
@pytest.mark.asyncio
async def test_records_held_from_a_cancelled_getmany_come_back_one_by_one_to_getone(broker: EmbeddedBroker) -> None:
    """The held batch of 10 was taken whole by the first getone(), which returned one record: 9 were lost. Held
    records now come back first, each call taking at most its own limit (getone 1, getmany max_records)."""
    topic = _topic()
    tp = TopicPartition(topic, 0)
    async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20}) as producer, \
            AsyncConsumer({"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"}) as consumer:
        await producer.send_and_wait(topic, b"first", partition=0)
        await consumer.assign([tp])
        assert [r.value for r in (await consumer.getmany(timeout_ms=5000))[tp]] == [b"first"]
        task = asyncio.create_task(consumer.getmany(timeout_ms=10000))
        await asyncio.sleep(0.3)  # its poll waits on the consumer's thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        futures = [await producer.send(topic, b"%d" % i, partition=0) for i in range(10)]
        await asyncio.gather(*futures)  # one batch: the cancelled poll takes all 10
        values = [(await asyncio.wait_for(consumer.getone(), 10)).value for _ in range(3)]  # bounded: 9 got lost
        values += [r.value for r in (await consumer.getmany(timeout_ms=100, max_records=4))[tp]]
        for _ in range(20):
            if len(values) >= 10:
                break
            values += [r.value for r in await consumer.poll(0.5)]
        assert values == [b"%d" % i for i in range(10)]
        assert await consumer.position(tp) == 11


@pytest.mark.broker
@pytest.mark.asyncio
async def test_stop_interrupts_a_waiting_getmany(broker: EmbeddedBroker) -> None:
    """stop(timeout=2) while a getmany(timeout_ms=15000) waited took 14.5 s: the close queued behind the poll."""
    consumer = AsyncConsumer({"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest"})
    await consumer.assign([TopicPartition(_topic(), 0)])
    waiting = asyncio.create_task(consumer.getmany(timeout_ms=15000))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await consumer.stop(timeout=2)
    assert time.monotonic() - started < 3
    assert await asyncio.wait_for(waiting, 3) == {}  # the interrupted poll returned empty
    with pytest.raises(IllegalStateError, match="closed"):
        await consumer.getmany()


@pytest.mark.broker
@pytest.mark.asyncio
async def test_group_mode_runs_an_async_listener_on_the_loop(broker: EmbeddedBroker) -> None:
    topic = _topic()
    async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for p in range(4):
            await producer.send(topic, b"v%d" % p, partition=p)
        assert await producer.flush(30) == 0
    loop_thread = threading.get_ident()
    calls: list[tuple[str, set[TopicPartition], bool]] = []

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
            await asyncio.sleep(0)  # a coroutine: awaited on the loop, the polling thread waits for it
            calls.append(("assigned", partitions, threading.get_ident() == loop_thread))

        def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
            calls.append(("revoked", partitions, threading.get_ident() == loop_thread))
            try:  # the sync Consumer, lent to the loop's thread while the listener runs (close() would log a raise)
                consumer.consumer.commit()
                calls.append(("committed", partitions, True))
            except KafkaError as e:
                calls.append((repr(e), partitions, False))

    tps = {TopicPartition(topic, p) for p in range(4)}
    async with AsyncConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{topic}",
                              "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                              "auto.offset.reset": "earliest"}) as consumer:
        await consumer.subscribe([topic], listener=Listener())
        assert await consumer.subscription() == {topic}
        got: list[Any] = []
        async with _LagProbe().running() as probe:
            for _ in range(POLLS):  # the join is held for session.timeout.ms / 2 by Tansu
                if len(got) >= 4:
                    break
                got += [r for records in (await consumer.getmany(timeout_ms=500)).values() for r in records]
        assert sorted(r.value for r in got) == [b"v0", b"v1", b"v2", b"v3"]
        assert probe.max_lag_s < 0.2 and await consumer.assignment() == tps
    # revoked on close, on the loop too
    assert calls == [("assigned", tps, True), ("revoked", tps, True), ("committed", tps, True)]


class _RecordingWaiter:
    """A pool waiter that only counts its wake-ups."""

    def __init__(self) -> None:
        self.notified = 0

    def notify(self) -> None:
        self.notified += 1


@pytest.mark.asyncio
async def test_a_cancelled_memory_wait_wakes_the_next_waiter() -> None:
    """The head waiter for memory is woken when memory is freed; cancelled before it ran, it leaves the queue and
    must pass the wake-up on to the waiter behind it (Java's signalNextWaiterIfMemoryAvailable), else that one
    sleeps through free memory (until its next look, 100 ms later; a sync sender until max.block.ms with a lost
    notify). The memory is taken and given back by hand: nothing here depends on timing."""
    cluster = FakeCluster(SystemClock())
    cluster.create_topic("t", 1)
    async with AsyncProducer({"bootstrap.servers": "fake:9092", "buffer.memory": 65536, "batch.size": 16384,
                              "max.block.ms": 30000}, ports=Ports(transport=cluster)) as producer:
        await producer.send_and_wait("t", b"first")  # metadata known: the next send goes straight to the pool
        sync, pool = producer.producer, producer.producer._pool
        with sync._lock:
            taken = []
            while (buffer := pool.try_allocate(16384)) is not None:
                taken.append(buffer)
        waiting = asyncio.create_task(producer.send("t", b"x" * 1024))
        for _ in range(100):
            await asyncio.sleep(0)
            with sync._lock:
                if pool.head_waiter() is not None:
                    break
        behind = _RecordingWaiter()
        with sync._lock:
            assert pool.head_waiter() is not None and not waiting.done()  # the send waits at the queue's head
            pool.enqueue_waiter(behind)
            for buffer in taken:
                pool.release(buffer, 16384)  # memory again: the head would be woken (not yet run)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        with sync._lock:
            assert pool.head_waiter() is behind
            pool.remove_waiter(behind)
        assert behind.notified >= 1
