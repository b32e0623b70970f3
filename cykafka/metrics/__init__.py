"""Every client's metrics under Java's names: a small registry of `MetricName`s (name, group, tags, as Java's
org.apache.kafka.common.MetricName), the recorders each client feeds, and the one snapshot shape `metrics()` returns.

Recording is per batch, per response, per poll call or per commit, never per record: the producer's Sender records
batches and Produce answers, every client's network loop records each answer's latency for its node, the consumer's
fetcher records each Fetch answer once (its latency, its bytes, every partition's lag from the answer's high
watermark and the consumer's position). Rates are per second over the last WINDOW_S seconds; averages and maxima
cover the client's life. The exporters (`cykafka.metrics.prometheus`, `cykafka.metrics.otel`) read snapshots.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cykafka.ports.values import TopicPartition

log = logging.getLogger("cykafka")

WINDOW_S = 30.0
KIP714_PREFIX = "org.apache.kafka"


@dataclass(frozen=True, slots=True)
class MetricName:
    """Java's MetricName: a metric's name, its group and its tags (client-id always; node-id, topic, partition where
    the metric is per node or per partition)."""

    name: str
    group: str
    tags: tuple[tuple[str, str], ...] = ()

    @property
    def telemetry_name(self) -> str:
        """The KIP-714 name (Java's TelemetryMetricNamingConvention): org.apache.kafka + the group without "-metrics"
        + the name, hyphens as dots: producer-node-metrics / request-latency-avg ->
        org.apache.kafka.producer.node.request.latency.avg."""
        group = self.group.lower().replace("-", ".").replace(".metrics", "")
        return f"{KIP714_PREFIX}.{group}.{self.name.lower().replace('-', '.')}"

    @property
    def telemetry_tags(self) -> dict[str, str]:
        """The tags as KIP-714 spells them: hyphens as underscores (client_id, node_id)."""
        return {key.replace("-", "_"): value for key, value in self.tags}


# Every metric the clients report: (client type, group, name, per: "" client-level, "node" (node-id tag) or
# "partition" (topic, partition tags), meaning). docs/observability.md's table; the exporters' help texts.
CATALOGUE: tuple[tuple[str, str, str, str, str], ...] = (
    *(("producer", "producer-metrics", name, "", meaning) for name, meaning in (
        ("record-send-rate", "records acknowledged per second"),
        ("record-send-total", "records acknowledged"),
        ("record-retry-rate", "records re-sent per second"),
        ("record-retry-total", "records re-sent"),
        ("record-error-rate", "records failed per second"),
        ("record-error-total", "records failed"),
        ("batch-size-avg", "bytes of a batch as sent, average"),
        ("batch-size-max", "bytes of the largest batch sent"),
        ("compression-rate-avg", "compressed over uncompressed size of the batches sent, average"),
        ("record-queue-time-avg", "ms a batch waited from its first record until sent, average"),
        ("record-queue-time-max", "ms of the longest such wait"),
        ("request-latency-avg", "ms from a Produce request to its answer, average"),
        ("request-latency-max", "ms of the slowest Produce answer"),
        ("buffer-available-bytes", "bytes of buffer.memory free"),
        ("buffer-total-bytes", "buffer.memory"),
        ("bufferpool-wait-ratio", "time send() waited for buffer memory over the producer's life"),
        ("waiting-threads", "threads blocked in send() for buffer memory"),
        ("requests-in-flight", "requests sent and not answered yet"),
        ("connection-count", "connections open"))),
    *(("consumer", "consumer-metrics", name, "", meaning) for name, meaning in (
        ("connection-count", "connections open"),
        ("time-between-poll-avg", "ms between two poll calls, average"),
        ("time-between-poll-max", "ms of the longest time between two poll calls"),
        ("last-poll-seconds-ago", "seconds since the last poll call (-1: none yet)"))),
    *(("consumer", "consumer-fetch-manager-metrics", name, "", meaning) for name, meaning in (
        ("fetch-latency-avg", "ms from a Fetch request to its answer, average"),
        ("fetch-latency-max", "ms of the slowest Fetch answer"),
        ("fetch-total", "Fetch answers"),
        ("records-consumed-rate", "records handed out by poll per second"),
        ("records-consumed-total", "records handed out by poll"),
        ("bytes-consumed-rate", "record bytes fetched per second"),
        ("bytes-consumed-total", "record bytes fetched"),
        ("records-lag-max", "the largest records-lag-max of the assigned partitions"),
        ("records-lead-min", "the smallest records-lead-min of the assigned partitions"))),
    *(("consumer", "consumer-fetch-manager-metrics", name, "partition", meaning) for name, meaning in (
        ("records-lag", "high watermark (last stable offset with read_committed) minus the position, at the last "
                        "Fetch answer"),
        ("records-lag-max", "the largest records-lag seen"),
        ("records-lead", "the position minus the log start offset, at the last Fetch answer"),
        ("records-lead-min", "the smallest records-lead seen"))),
    *(("consumer", "consumer-coordinator-metrics", name, "", meaning) for name, meaning in (
        ("commit-latency-avg", "ms of a commit() from call to answer, average"),
        ("commit-latency-max", "ms of the slowest commit()"),
        ("commit-total", "commit() calls answered"),
        ("rebalance-latency-avg", "ms from JoinGroup sent to the assignment received, average"),
        ("rebalance-latency-max", "ms of the slowest rebalance"),
        ("rebalance-total", "rebalances completed"))),
    ("admin", "admin-client-metrics", "connection-count", "", "connections open"),
    *((client, f"{client}{'-client' if client == 'admin' else ''}-node-metrics", name, "node", meaning)
      for client in ("producer", "consumer", "admin") for name, meaning in (
        ("request-latency-avg", "ms from a request to this node to its answer, average (every API)"),
        ("request-latency-max", "ms of the slowest answer of this node"),
        ("request-total", "answers from this node"))),
)


def meaning_of(name: MetricName) -> str:
    """The CATALOGUE's meaning of a metric ("" for one it does not list)."""
    per = "node" if any(k == "node-id" for k, _ in name.tags) else "partition" if len(name.tags) > 1 else ""
    return next((m for _, g, n, p, m in CATALOGUE if g == name.group and n == name.name and p == per), "")


class MetricsSnapshot(dict[str, float]):
    """What `metrics()` returns: a dict of the client-level values by their Java name (``snapshot["record-send-rate"]``,
    as before), and in `all` every metric by its MetricName, the per-node and per-partition ones included (the
    exporters read that). `client_type` is producer, consumer or admin."""

    def __init__(self, client_type: str, client_id: str, values: Mapping[MetricName, float]) -> None:
        super().__init__()
        self.client_type = client_type
        self.client_id = client_id
        self.all: dict[MetricName, float] = {name: float(value) for name, value in values.items()}
        for name, value in self.all.items():
            if len(name.tags) == 1:  # client-id only: a client-level metric
                self[name.name] = value

    def to_json(self) -> str:
        """The statistics callback's JSON (docs/observability.md): {"type", "client_id", "ts_ms", "metrics":
        {name: value} of the client-level ones, "tagged": [{"name", "group", "tags", "value"}] of every one}."""
        return json.dumps({
            "type": self.client_type, "client_id": self.client_id, "ts_ms": int(time.time() * 1000),
            "metrics": dict(self),
            "tagged": [{"name": n.name, "group": n.group, "tags": dict(n.tags), "value": v}
                       for n, v in self.all.items()],
        })


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


class NodeMetrics:
    """Per node: each answer's latency (request-latency-avg/-max, request-total), from the answers' sent and received
    times; fed by a client's network loop once per answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latency: dict[int, _Avg] = {}

    def record_response(self, response: Any) -> None:
        with self._lock:
            avg = self._latency.get(response.node_id)
            if avg is None:
                avg = self._latency[response.node_id] = _Avg()
            avg.record(response.received_ms - response.sent_ms)

    def values(self, group: str, client_tag: tuple[str, str]) -> dict[MetricName, float]:
        out: dict[MetricName, float] = {}
        with self._lock:
            for node_id, avg in self._latency.items():
                tags = (client_tag, ("node-id", f"node-{node_id}"))
                out[MetricName("request-latency-avg", group, tags)] = avg.value()
                out[MetricName("request-latency-max", group, tags)] = avg.max
                out[MetricName("request-total", group, tags)] = float(avg.count)
        return out


def _named(group: str, client_tag: tuple[str, str], values: Mapping[str, float]) -> dict[MetricName, float]:
    return {MetricName(name, group, (client_tag,)): value for name, value in values.items()}


class ProducerMetrics:
    """The producer's metrics (producer-metrics, producer-node-metrics), fed by the Sender per batch and answer."""

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
        self.nodes = NodeMetrics()

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
                 requests_in_flight: int, client_id: str = "", connection_count: int = 0) -> MetricsSnapshot:
        now_s = time.monotonic()
        with self._lock:
            elapsed_ns = max(time.monotonic_ns() - self.created_ns, 1)
            values = {
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
                "connection-count": float(connection_count),
            }
        client_tag = ("client-id", client_id)
        return MetricsSnapshot("producer", client_id, {**_named("producer-metrics", client_tag, values),
                                                       **self.nodes.values("producer-node-metrics", client_tag)})


@dataclass(slots=True)
class _PartitionLag:
    lag: int = 0
    lag_max: int = 0
    lead: int = 0
    lead_min: int = 2**63 - 1


class ConsumerMetrics:
    """The consumer's metrics (consumer-metrics, consumer-fetch-manager-metrics, consumer-coordinator-metrics,
    consumer-node-metrics): a Fetch answer once (latency, bytes, each partition's lag and lead), a poll call once
    (time between polls, records handed out), a commit and a rebalance once."""

    def __init__(self, read_committed: bool = False) -> None:
        self._lock = threading.Lock()
        self._read_committed = read_committed
        self.fetch_latency = _Avg()
        self.commit_latency = _Avg()
        self.rebalance_latency = _Avg()
        self.time_between_poll = _Avg()
        self.records_consumed = _Rate()
        self.bytes_consumed = _Rate()
        self.records_consumed_total = 0
        self.bytes_consumed_total = 0
        self.partitions: dict[tuple[str, int], _PartitionLag] = {}
        self.last_poll_s: float | None = None
        self.nodes = NodeMetrics()

    @classmethod
    def wired(cls, read_committed: bool, network: Any, fetcher: Any, group_driver: Any) -> ConsumerMetrics:
        """Metrics fed by the consumer's parts: each answer of its network loop, each Fetch answer of its fetcher,
        each rebalance its group driver completes."""
        metrics = cls(read_committed)
        network.on_response = metrics.nodes.record_response
        fetcher.on_fetch = metrics.record_fetch
        if group_driver is not None:
            group_driver.on_rebalanced = metrics.record_rebalance
        return metrics

    def record_fetch(self, response: Any, body: Mapping[str, Any] | None, states: Mapping[Any, Any]) -> None:
        """One Fetch answer (on the network thread, the subscription's lock held): its latency, its record bytes,
        and each answered partition's lag (high watermark, or last stable offset with read_committed, minus the
        consumer's position) and lead (position minus log start offset)."""
        with self._lock:
            self.fetch_latency.record(response.received_ms - response.sent_ms)
            if body is None:
                return
            nbytes = 0
            for topic in body.get("responses", ()):
                name = topic["topic"]
                for p in topic["partitions"]:
                    records = p.get("records")
                    nbytes += len(records) if records else 0
                    key = (name, p["partition_index"])
                    state = states.get(TopicPartition(name, p["partition_index"]))
                    position = None if state is None else state.position
                    if position is None or p.get("error_code"):
                        continue
                    self._record_lag(key, position, p["high_watermark"], p["last_stable_offset"],
                                     p["log_start_offset"])
            self.bytes_consumed_total += nbytes
            self.bytes_consumed.record(nbytes, time.monotonic())

    def _record_lag(self, key: tuple[str, int], position: int, high_watermark: int, last_stable_offset: int,
                    log_start_offset: int) -> None:
        """With the lock held: a partition's lag and lead now."""
        end = last_stable_offset if self._read_committed else high_watermark
        lag = self.partitions.get(key)
        if lag is None:
            lag = self.partitions[key] = _PartitionLag()
        if end >= 0:
            lag.lag = max(end - position, 0)
            lag.lag_max = max(lag.lag_max, lag.lag)
        if log_start_offset >= 0:
            lag.lead = max(position - log_start_offset, 0)
            lag.lead_min = min(lag.lead_min, lag.lead)

    def record_poll(self) -> None:
        """A poll call began (the caller's thread): time-between-poll."""
        now_s = time.monotonic()
        with self._lock:
            if self.last_poll_s is not None:
                self.time_between_poll.record((now_s - self.last_poll_s) * 1000)
            self.last_poll_s = now_s

    def record_consumed(self, count: int) -> None:
        """A poll handed out count records."""
        with self._lock:
            self.records_consumed_total += count
            self.records_consumed.record(count, time.monotonic())

    def record_commit(self, latency_ms: float) -> None:
        with self._lock:
            self.commit_latency.record(latency_ms)

    def record_rebalance(self, latency_ms: float) -> None:
        with self._lock:
            self.rebalance_latency.record(latency_ms)

    def snapshot(self, client_id: str, connection_count: int,
                 assigned: Iterable[tuple[str, int, int | None, int, int, int]] = ()) -> MetricsSnapshot:
        """assigned: (topic, partition, position, high watermark, last stable offset, log start offset) of each
        assigned partition now: records-lag and records-lead are these values' (Java's, after the last poll)."""
        now_s = time.monotonic()
        client_tag = ("client-id", client_id)
        out: dict[MetricName, float] = {}
        with self._lock:
            keys = set()
            for topic, partition, position, high_watermark, last_stable_offset, log_start_offset in assigned:
                keys.add((topic, partition))
                if position is not None and high_watermark >= 0:
                    self._record_lag((topic, partition), position, high_watermark, last_stable_offset,
                                     log_start_offset)
            partitions = {k: v for k, v in self.partitions.items() if k in keys}
            out.update(_named("consumer-metrics", client_tag, {
                "connection-count": float(connection_count),
                "time-between-poll-avg": self.time_between_poll.value(),
                "time-between-poll-max": self.time_between_poll.max,
                "last-poll-seconds-ago": now_s - self.last_poll_s if self.last_poll_s is not None else -1.0,
            }))
            out.update(_named("consumer-fetch-manager-metrics", client_tag, {
                "fetch-latency-avg": self.fetch_latency.value(),
                "fetch-latency-max": self.fetch_latency.max,
                "fetch-total": float(self.fetch_latency.count),
                "records-consumed-rate": self.records_consumed.value(now_s),
                "records-consumed-total": float(self.records_consumed_total),
                "bytes-consumed-rate": self.bytes_consumed.value(now_s),
                "bytes-consumed-total": float(self.bytes_consumed_total),
                "records-lag-max": float(max((p.lag_max for p in partitions.values()), default=0)),
                "records-lead-min": float(min((p.lead_min for p in partitions.values()
                                               if p.lead_min < 2**63 - 1), default=0)),
            }))
            out.update(_named("consumer-coordinator-metrics", client_tag, {
                "commit-latency-avg": self.commit_latency.value(),
                "commit-latency-max": self.commit_latency.max,
                "commit-total": float(self.commit_latency.count),
                "rebalance-latency-avg": self.rebalance_latency.value(),
                "rebalance-latency-max": self.rebalance_latency.max,
                "rebalance-total": float(self.rebalance_latency.count),
            }))
            for (topic, partition), p in sorted(partitions.items()):
                tags = (client_tag, ("topic", topic), ("partition", str(partition)))
                group = "consumer-fetch-manager-metrics"
                out[MetricName("records-lag", group, tags)] = float(p.lag)
                out[MetricName("records-lag-max", group, tags)] = float(p.lag_max)
                out[MetricName("records-lead", group, tags)] = float(p.lead)
                out[MetricName("records-lead-min", group, tags)] = float(p.lead_min if p.lead_min < 2**63 - 1
                                                                          else 0)
        out.update(self.nodes.values("consumer-node-metrics", client_tag))
        return MetricsSnapshot("consumer", client_id, out)


class AdminMetrics:
    """Admin's metrics (admin-client-metrics, admin-client-node-metrics)."""

    def __init__(self) -> None:
        self.nodes = NodeMetrics()

    def snapshot(self, client_id: str, connection_count: int) -> MetricsSnapshot:
        client_tag = ("client-id", client_id)
        return MetricsSnapshot("admin", client_id, {
            **_named("admin-client-metrics", client_tag, {"connection-count": float(connection_count)}),
            **self.nodes.values("admin-client-node-metrics", client_tag)})


class StatsReporter:
    """statistics.interval.ms + stats_cb: a daemon thread that calls stats_cb(json) every interval with the client's
    metrics() as MetricsSnapshot.to_json(); started only when both are set, stopped by the client's close(). It holds
    the client weakly: a client nobody references is still finalized (the reports then end)."""

    def __init__(self, interval_ms: int, callback: Callable[[str], object], client: Any, name: str) -> None:
        self._interval_s = interval_ms / 1000
        self._callback = callback
        self._metrics = weakref.WeakMethod(client.metrics)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @classmethod
    def start_if_configured(cls, interval_ms: int, callback: Callable[[str], object] | None, client: Any,
                            name: str) -> StatsReporter | None:
        if interval_ms <= 0 or callback is None:
            return None
        return cls(interval_ms, callback, client, name)

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            metrics = self._metrics()
            if metrics is None:
                return
            try:
                snapshot: MetricsSnapshot = metrics()
                del metrics
                self._callback(snapshot.to_json())
            except Exception:  # a callback's failure must not end the reports
                log.exception("stats_cb raised")

    def stop(self) -> None:
        self._stopped.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(5.0)
