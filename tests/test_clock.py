"""Time through the Clock port: the C-level clock the compiled send path reads (SystemClock's read in C, any other
Clock called through its methods), and the shell's deadlines (flush, close, max.block.ms) under a ManualClock: its
time, not the machine's, decides them, and a wait on it takes no real time (it moves the clock, as sleep_ms)."""

from __future__ import annotations

import threading

from fakes import fake_cluster, fake_producer

from cykafka import BufferExhaustedError
from cykafka.adapters.clock import ManualClock, SystemClock, core_clock
from cykafka.core import PortClock, SystemCoreClock
from cykafka.producer import Producer

TOPIC = "t"


def make(clock: ManualClock, **config: object) -> Producer:
    """A producer on the fake cluster, its sender run by hand under `clock`, the topic's metadata known."""
    return fake_producer(fake_cluster(clock, TOPIC, brokers=1), clock, topic=TOPIC, **config)


def test_the_send_path_reads_the_clock_port() -> None:
    clock = ManualClock()
    assert isinstance(core_clock(SystemClock()), SystemCoreClock)
    wrapped = core_clock(clock)
    assert isinstance(wrapped, PortClock) and wrapped.clock is clock
    producer = make(clock)
    clock.advance(1234)
    future = producer.send(TOPIC, b"v", partition=0)  # the compiled fast path
    [batch] = producer._accumulator.incomplete
    assert batch.created_ms == clock.monotonic_ms()
    for _ in range(3):
        clock.advance(5)  # past linger.ms
        producer.sender.run_once()
    assert future.result(0).timestamp_ms == clock.wall_ms() - 15
    producer.close(0)


def test_the_system_core_clock_gives_system_clocks_values() -> None:
    system = SystemClock()
    with fake_producer(fake_cluster(system, TOPIC, partitions=1, brokers=1), topic=TOPIC, **{"linger.ms": 60000}) \
            as producer:
        wall_before_ms, monotonic_before_ms = system.wall_ms(), system.monotonic_ms()
        future = producer.send(TOPIC, b"v", partition=0)
        wall_after_ms, monotonic_after_ms = system.wall_ms(), system.monotonic_ms()
        [batch] = producer._accumulator.incomplete  # lingers: the sender thread leaves it queued
        assert monotonic_before_ms <= batch.created_ms <= monotonic_after_ms
        producer.flush()
        assert wall_before_ms <= future.result(0).timestamp_ms <= wall_after_ms


class CountingClock(ManualClock):
    def __init__(self) -> None:
        super().__init__()
        self.monotonic_reads = 0

    def monotonic_ms(self) -> int:
        self.monotonic_reads += 1
        return super().monotonic_ms()


def test_appends_read_the_monotonic_clock_once_per_new_batch() -> None:
    clock = CountingClock()
    producer = make(clock)
    before = clock.monotonic_reads
    for _ in range(10):
        producer.send(TOPIC, b"v", partition=0)
    assert clock.monotonic_reads - before == 1
    before = clock.monotonic_reads
    producer.send_batch(TOPIC, [b"v"] * 10, partitions=1)
    assert clock.monotonic_reads - before == 2  # send_batch's max.block.ms deadline, the new batch
    producer.close(0)


def test_flush_returns_at_the_manual_clocks_deadline() -> None:
    clock = ManualClock()
    producer = make(clock)
    producer.send(TOPIC, b"v", partition=0)  # the sender is never run: the record stays pending
    started_ms = clock.monotonic_ms()
    assert producer.flush(timeout=1) == 1
    assert clock.monotonic_ms() == started_ms + 1000
    producer.close(0)


def test_max_block_ms_on_a_full_buffer_is_decided_by_the_manual_clock() -> None:
    clock = ManualClock()
    producer = make(clock, **{"buffer.memory": 2048, "batch.size": 1024, "max.block.ms": 3000})
    producer.send(TOPIC, b"v", partition=0)
    producer.send(TOPIC, b"v", partition=1)  # two batches: the pool is empty
    started_ms = clock.monotonic_ms()
    raised: list[BaseException] = []

    def send() -> None:
        try:
            producer.send(TOPIC, b"v", partition=2)
        except BaseException as e:
            raised.append(e)

    sending = threading.Thread(target=send, daemon=True)
    sending.start()
    sending.join(30)  # a guard against a hang (a wait on the machine's clock), not a timing check
    assert not sending.is_alive(), "send() still waits for memory: the ManualClock did not decide max.block.ms"
    assert len(raised) == 1 and isinstance(raised[0], BufferExhaustedError), raised
    assert "max.block.ms (3000 ms)" in str(raised[0])
    assert clock.monotonic_ms() == started_ms + 3000
    producer.close(0)


def test_close_gives_up_on_the_sender_at_the_manual_clocks_deadline() -> None:
    clock = ManualClock()
    producer = make(clock)
    stuck = threading.Event()
    producer._thread = threading.Thread(target=stuck.wait, daemon=True)  # type: ignore[assignment]  # a sender
    producer._thread.start()  # that never ends
    started_ms = clock.monotonic_ms()
    try:
        producer.close(timeout=2)
        assert clock.monotonic_ms() == started_ms + 2000
        assert producer.sender.force_close  # asked to stop at once after 9/10 of the timeout
    finally:
        stuck.set()
