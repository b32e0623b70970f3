"""Overload: a producer ~10x faster than its (fake, deliberately slow) broker keeps its memory within buffer.memory and
blocks in send(); a broker that stops answering makes send() raise BufferExhaustedError after max.block.ms. These
tests assert on memory and on outcomes, never on speed."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cykafka import BufferExhaustedError, Producer
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.ports import Ports

T = "overload"
MiB = 1024 * 1024
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


class DiscardingCluster(FakeCluster):
    """A fake broker that answers every produce request after delay_ms and keeps no records (so its memory is not
    counted against the producer's)."""

    def __init__(self, delay_ms: int) -> None:
        super().__init__(SystemClock(), num_brokers=1)
        self.create_topic(T, 4)
        self.delay_ms[0] = delay_ms
        self.offsets = [0, 0, 0, 0]
        self.received_bytes = 0

    def _append(self, node_id: int, topic: str, index: int, records: Any,
                transactional_id: str | None = None) -> dict[str, Any]:
        self.received_bytes += len(memoryview(records))
        base, self.offsets[index] = self.offsets[index], self.offsets[index] + 1
        return {"index": index, "error_code": 0, "base_offset": base, "log_append_time_ms": -1,
                "log_start_offset": -1, "error_message": None}


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE_BYTES


class PeakRss:
    """Samples this process's RSS every few ms on a thread; `growth_bytes` = peak - the RSS at start."""

    def __init__(self) -> None:
        self.baseline_bytes = rss_bytes()
        self.peak_bytes = self.baseline_bytes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak_bytes = max(self.peak_bytes, rss_bytes())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.peak_bytes = max(self.peak_bytes, rss_bytes())

    @property
    def growth_bytes(self) -> int:
        return self.peak_bytes - self.baseline_bytes


@pytest.fixture
def slow_cluster() -> Iterator[DiscardingCluster]:
    # 5 requests in flight of at most 4 x 16 KiB every 40 ms: ~8 MB/s, far below what send() does
    yield DiscardingCluster(delay_ms=40)


def test_rss_stays_within_buffer_memory_when_the_broker_is_slower(slow_cluster: DiscardingCluster) -> None:
    buffer_memory = 16 * MiB
    value = os.urandom(1024)
    total_bytes = 64 * MiB  # four times buffer.memory goes through
    producer = Producer({"bootstrap.servers": "fake:1", "buffer.memory": buffer_memory, "linger.ms": 5,
                         "max.block.ms": 60_000}, ports=Ports(transport=slow_cluster))
    try:
        producer.send(T, b"warm-up").result(10)
        with PeakRss() as rss:
            for i in range(total_bytes // len(value)):
                producer.send(T, value, b"%d" % (i % 64))
            assert producer.flush(120) == 0
        metrics = producer.metrics()
    finally:
        producer.close(5)
    assert slow_cluster.received_bytes > total_bytes
    assert metrics["bufferpool-wait-ratio"] > 0, "send() never had to wait for memory: not overloaded"
    assert rss.growth_bytes <= buffer_memory + 64 * MiB, (rss.growth_bytes / MiB, "MiB")


def test_send_batch_rss_stays_within_buffer_memory(slow_cluster: DiscardingCluster) -> None:
    buffer_memory = 16 * MiB
    values = [os.urandom(1024)] * 8192
    keys = [b"%d" % (i % 64) for i in range(8192)]  # spread over the partitions, as the send() test does
    producer = Producer({"bootstrap.servers": "fake:1", "buffer.memory": buffer_memory, "linger.ms": 5,
                         "max.block.ms": 60_000}, ports=Ports(transport=slow_cluster))
    try:
        producer.send(T, b"warm-up").result(10)
        with PeakRss() as rss:
            results = [producer.send_batch(T, values, keys) for _ in range(6)]  # 48 MiB
            assert [r.result(120) for r in results] == [8192] * 6
    finally:
        producer.close(5)
    assert rss.growth_bytes <= buffer_memory + 64 * MiB, (rss.growth_bytes / MiB, "MiB")


def test_send_blocks_then_raises_buffer_exhausted_when_the_broker_stalls() -> None:
    stalled = DiscardingCluster(delay_ms=0)
    buffer_memory = 2 * MiB
    producer = Producer({"bootstrap.servers": "fake:1", "buffer.memory": buffer_memory, "linger.ms": 5,
                         "max.block.ms": 300, "request.timeout.ms": 60_000, "delivery.timeout.ms": 120_000},
                        ports=Ports(transport=stalled))
    value = os.urandom(1024)
    queued = 0
    try:
        producer.send(T, b"warm-up").result(10)
        stalled.delay_ms[0] = 3_600_000  # from now on it never answers within the test
        with PeakRss() as rss, pytest.raises(BufferExhaustedError, match=r"max\.block\.ms \(300 ms\)") as info:
            for _ in range(100_000):  # bounded: 100 MiB would be far past buffer.memory
                producer.send(T, value)
                queued += 1
        assert "the record was not queued" in str(info.value)
        assert queued * len(value) <= buffer_memory  # everything queued fit in buffer.memory
        assert producer.metrics()["bufferpool-wait-ratio"] > 0
        result = producer.send_batch(T, [value] * 10)  # the columnar path fails the records it cannot queue
        assert result.done() and result.failed_count == 10
        assert all(isinstance(error, BufferExhaustedError) for _, error in result.errors)
    finally:
        producer.close(0)
    assert rss.growth_bytes <= buffer_memory + 64 * MiB
