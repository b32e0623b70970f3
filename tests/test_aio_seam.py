"""cykafka.aio stands on the clients' public seams (issue 26): no attribute `x._name` of another object in aio.py
(only self's and cls's; dunders are public), checked on the source with ast; and the Producer's seam itself:
try_send never waits, answering NeedsMetadata / NeedsMemory with nothing queued, and the one MemoryWait that the
sync send drives appends the record that waited once memory is freed."""

from __future__ import annotations

import ast
import asyncio
import threading
import time
from pathlib import Path

import pytest

from cykafka import Producer, aio, producer_seam
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.core import RecordFuture
from cykafka.errors import BufferExhaustedError, ProducerClosedError
from cykafka.ports import Ports
from cykafka.producer_seam import NeedsMemory, NeedsMetadata, ThreadWaiter, WouldBlockError

AIO = Path(__file__).resolve().parent.parent / "cykafka" / "aio.py"


def private_members_of_others(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, `x._name`) of every attribute access to a private member of something other than self or cls."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append((node.lineno, f"{ast.unparse(node.value)}.{name}"))
    return found


def test_the_checker_finds_a_private_member_of_another_object() -> None:
    source = "def f(self, producer):\n    self._ok = producer.config\n    return producer._lock, self._p._pool\n"
    assert private_members_of_others(source) == [(3, "producer._lock"), (3, "self._p._pool")]
    assert private_members_of_others("x.__class__; self._y; cls._z") == []


def test_aio_uses_no_private_member_of_another_class() -> None:
    found = private_members_of_others(AIO.read_text(), str(AIO))
    assert found == [], f"cykafka/aio.py reaches into private members: {found}"


def _producer(cluster: FakeCluster, clock: object = None, **config: object) -> Producer:
    settings: dict[str, object] = {"bootstrap.servers": "fake:9092", "buffer.memory": 32768, "batch.size": 16384,
                                   "max.block.ms": 2000, "linger.ms": 0}
    settings.update(config)
    return Producer(settings, ports=Ports(transport=cluster, clock=clock))  # type: ignore[arg-type]


def _fill(producer: Producer, topic: str) -> list[bytearray]:
    """Takes the pool's every buffer by hand: the next new batch finds no memory."""
    taken = []
    pool = producer._pool
    with producer._lock:
        while (buffer := pool.try_allocate(pool.poolable_size_bytes)) is not None:
            taken.append(buffer)
    return taken


def test_try_send_answers_what_the_record_needs_and_queues_nothing() -> None:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic("t", 2)
    with _producer(cluster) as producer:
        needs = producer.try_send("t", b"v", partition=1)
        assert isinstance(needs, NeedsMetadata) and (needs.topic, needs.partition) == ("t", 1)
        deadline_ms = producer.clock.monotonic_ms() + 2000
        for _ in range(400):
            if producer.poll_metadata("t", 1, deadline_ms) is not None:
                break
            threading.Event().wait(0.005)
        first = producer.try_send("t", b"v", partition=1)
        assert isinstance(first, RecordFuture)
        first.result(5)
        taken = _fill(producer, "t")
        queued = producer.flush(5)
        blocked = producer.try_send("t", b"w" * 100, partition=0)
        assert queued == 0 and isinstance(blocked, NeedsMemory) and blocked.size_bytes == 16384
        assert producer.metrics()["record-send-total"] == 1  # nothing of the blocked record was queued
        waiter = ThreadWaiter()
        wait = producer.memory_wait(blocked, waiter)
        try:
            assert isinstance(wait.step(), int)  # no memory yet: how long to wait
            with producer._lock:
                for buffer in taken:
                    producer._give_back(buffer)
            assert waiter.wait(1)  # the freed memory woke the head waiter
            appended = wait.step()
        finally:
            wait.close()
        assert isinstance(appended, RecordFuture)
        assert appended.result(5).partition == 0 and producer._pool.queued_waiters == 0


def test_the_sync_send_drives_the_same_memory_wait_to_its_deadline() -> None:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic("t", 1)
    producer = _producer(cluster, None, **{"max.block.ms": 300})
    try:
        producer.send("t", b"first").result(5)
        _fill(producer, "t")
        started_s = time.monotonic()
        with pytest.raises(BufferExhaustedError, match=r"within max\.block\.ms \(300 ms\).*not queued"):
            producer.send("t", b"v")
        assert time.monotonic() - started_s >= 0.29 and producer._pool.queued_waiters == 0
        producer.refuse_blocking_on(threading.get_ident())
        with pytest.raises(WouldBlockError, match=r"buffer memory"):
            producer.send("t", b"v")
        with pytest.raises(WouldBlockError, match=r"metadata of topic 'u'"):
            producer.send("u", b"v")
        producer.refuse_blocking_on(None)  # lifted: the send waits (to the deadline) again
        with pytest.raises(BufferExhaustedError):
            producer.send("t", b"v")
    finally:
        producer.close(0)


@pytest.fixture
def no_recheck(monkeypatch: pytest.MonkeyPatch) -> None:
    """A metadata wait that is not woken sleeps a minute: only a wake-up ends it within the tests' bounds."""
    monkeypatch.setattr(producer_seam, "METADATA_RECHECK_MS", 60_000)
    monkeypatch.setattr(aio, "METADATA_RECHECK_MS", 60_000)


@pytest.mark.usefixtures("no_recheck")
def test_a_send_waiting_for_metadata_is_woken_by_the_new_snapshot_and_by_close() -> None:
    """Java's waitOnMetadata: the wait looks again when the sender thread has a new snapshot (here the one naming
    the topic, created while the send waits), not on a timer; close() wakes a waiting send, which raises."""
    cluster = FakeCluster(SystemClock(), auto_create=False)
    producer = _producer(cluster, None, **{"max.block.ms": 30_000, "retry.backoff.ms": 50})
    outcome: list[object] = []

    def send(topic: str) -> None:
        try:
            outcome.append(producer.send(topic, b"v").result(5))
        except Exception as e:
            outcome.append(e)

    try:
        sender = threading.Thread(target=send, args=("t",))
        sender.start()
        time.sleep(0.2)  # the send waits: the topic does not exist
        assert outcome == [] and sender.is_alive()
        cluster.create_topic("t", 1)
        sender.join(10)
        assert not sender.is_alive() and getattr(outcome[0], "topic", None) == "t", outcome
        waiting = threading.Thread(target=send, args=("missing",))
        waiting.start()
        time.sleep(0.2)
        assert waiting.is_alive()
    finally:
        producer.close(0)
    waiting.join(10)
    assert not waiting.is_alive() and isinstance(outcome[1], ProducerClosedError), outcome


@pytest.mark.usefixtures("no_recheck")
def test_an_async_send_waiting_for_metadata_is_woken_by_the_new_snapshot() -> None:
    cluster = FakeCluster(SystemClock(), auto_create=False)

    async def main() -> object:
        async with aio.AsyncProducer({"bootstrap.servers": "fake:9092", "linger.ms": 0, "max.block.ms": 30_000,
                                      "retry.backoff.ms": 50}, ports=Ports(transport=cluster)) as producer:
            sending = asyncio.ensure_future(producer.send_and_wait("t", b"v"))
            await asyncio.sleep(0.2)
            assert not sending.done()
            cluster.create_topic("t", 1)
            return await asyncio.wait_for(sending, 10)

    assert asyncio.run(main()).topic == "t"  # type: ignore[attr-defined]
