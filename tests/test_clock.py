"""Time through the Clock port: the C-level clock the compiled send path reads (SystemClock's read in C, any other
Clock called through its methods), and the shell's deadlines under a ManualClock."""

from __future__ import annotations

from cykafka.adapters.clock import ManualClock, SystemClock, core_clock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.core import PortClock, SystemCoreClock
from cykafka.ports import Ports
from cykafka.producer import Producer

TOPIC = "t"


def make(clock: ManualClock, **config: object) -> Producer:
    """A producer on the fake cluster, its sender run by hand under `clock`, the topic's metadata known."""
    cluster = FakeCluster(clock, num_brokers=1)
    cluster.create_topic(TOPIC, 4)
    producer = Producer({"bootstrap.servers": "fake:9092", **config},
                        ports=Ports(transport=cluster, clock=clock, start_sender=False))
    producer._metadata.add_topic(TOPIC, clock.monotonic_ms())
    for _ in range(4):  # connect, fetch metadata
        producer.sender.run_once()
    return producer


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
    cluster = FakeCluster(system, num_brokers=1)
    cluster.create_topic(TOPIC, 1)
    with Producer({"bootstrap.servers": "fake:9092", "linger.ms": 60000, "delivery.timeout.ms": 120000},
                  ports=Ports(transport=cluster)) as producer:
        producer.partitions_for(TOPIC)
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
