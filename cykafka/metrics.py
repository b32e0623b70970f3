"""Producer metrics under Java's names (producer-metrics group): rates over a sliding window, averages, gauges.

Updated per batch or per request by the Sender, never per record on the send path.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

WINDOW_S = 30.0


class _Rate:
    """Events per second over the last WINDOW_S seconds, summed in one-second buckets (bounded memory, no allocation
    per call within a second)."""

    def __init__(self) -> None:
        self._buckets: deque[list[float]] = deque()  # [bucket start s, amount]

    def record(self, amount: float, now_s: float) -> None:
        buckets = self._buckets
        if buckets and now_s - buckets[-1][0] < 1.0:
            buckets[-1][1] += amount
            return
        buckets.append([now_s, amount])
        self._expire(now_s)

    def _expire(self, now_s: float) -> None:
        buckets = self._buckets
        while buckets and buckets[0][0] < now_s - WINDOW_S:
            buckets.popleft()

    def value(self, now_s: float) -> float:
        self._expire(now_s)
        if not self._buckets:
            return 0.0
        span = max(now_s - self._buckets[0][0], 1.0)
        return sum(amount for _, amount in self._buckets) / span


class _Avg:
    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0
        self.max = 0.0

    def record(self, value: float) -> None:
        self.total += value
        self.count += 1
        self.max = max(self.max, value)

    def value(self) -> float:
        return self.total / self.count if self.count else 0.0


class ProducerMetrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.record_send_rate = _Rate()
        self.record_retry_rate = _Rate()
        self.record_error_rate = _Rate()
        self.batch_size = _Avg()
        self.compression_rate = _Avg()
        self.record_queue_time = _Avg()
        self.request_latency = _Avg()
        self.records_per_request = _Avg()
        self.buffer_wait_ns = 0
        self.created_ns = time.monotonic_ns()
        self.records_sent_total = 0
        self.records_error_total = 0
        self.records_retry_total = 0

    def record_drained(self, batch: Any, now_ms: int) -> None:
        with self._lock:
            self.batch_size.record(len(batch.records))
            uncompressed = batch.builder.uncompressed_size_bytes
            self.compression_rate.record(len(batch.records) / uncompressed if uncompressed else 1.0)
            self.record_queue_time.record(now_ms - batch.created_ms)

    def record_sent(self, batch: Any) -> None:
        with self._lock:
            self.records_sent_total += batch.record_count
            self.record_send_rate.record(batch.record_count, time.monotonic())

    def record_retry(self, count: int) -> None:
        with self._lock:
            self.records_retry_total += count
            self.record_retry_rate.record(count, time.monotonic())

    def record_errors(self, count: int) -> None:
        with self._lock:
            self.records_error_total += count
            self.record_error_rate.record(count, time.monotonic())

    def record_request_latency(self, latency_ms: int) -> None:
        with self._lock:
            self.request_latency.record(latency_ms)

    def record_buffer_wait(self, waited_ns: int) -> None:
        with self._lock:
            self.buffer_wait_ns += waited_ns

    def snapshot(self, *, buffer_available_bytes: int, buffer_total_bytes: int, waiting_threads: int,
                 requests_in_flight: int) -> dict[str, float]:
        now_s = time.monotonic()
        with self._lock:
            elapsed_ns = max(time.monotonic_ns() - self.created_ns, 1)
            return {
                "record-send-rate": self.record_send_rate.value(now_s),
                "record-send-total": float(self.records_sent_total),
                "record-retry-rate": self.record_retry_rate.value(now_s),
                "record-retry-total": float(self.records_retry_total),
                "record-error-rate": self.record_error_rate.value(now_s),
                "record-error-total": float(self.records_error_total),
                "batch-size-avg": self.batch_size.value(),
                "batch-size-max": self.batch_size.max,
                "compression-rate-avg": self.compression_rate.value(),
                "record-queue-time-avg": self.record_queue_time.value(),
                "record-queue-time-max": self.record_queue_time.max,
                "request-latency-avg": self.request_latency.value(),
                "request-latency-max": self.request_latency.max,
                "buffer-available-bytes": float(buffer_available_bytes),
                "buffer-total-bytes": float(buffer_total_bytes),
                "bufferpool-wait-ratio": self.buffer_wait_ns / elapsed_ns,
                "waiting-threads": float(waiting_threads),
                "requests-in-flight": float(requests_in_flight),
            }
