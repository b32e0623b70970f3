"""OpenTelemetry metrics for cykafka clients (the `otel` extra): `CykafkaMetricsObserver` registers observable
instruments under the KIP-714 names (org.apache.kafka.producer.node.request.latency.avg, ...) with the tags as
attributes (client_id, node_id, topic, partition), read from the clients' `metrics()` when the SDK collects.

What it owns: the instruments and their callbacks. One instrument per metric name of the clients' types (the
CATALOGUE): `-total` ones observable counters, the rest observable gauges. One collection asks each client once
(snapshots are shared by the instruments' callbacks for SNAPSHOT_REUSE_S). Clients are held weakly.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry import metrics as otel_metrics
from opentelemetry.metrics import CallbackOptions, Observation

import cykafka
from cykafka.metrics import CATALOGUE, MetricName, MetricsSnapshot

__all__ = ["CykafkaMetricsObserver"]

SNAPSHOT_REUSE_S = 0.5


class CykafkaMetricsObserver:
    """`CykafkaMetricsObserver(producer, consumer, meter_provider=provider)`: the clients' metrics as observable
    instruments of the meter "cykafka". add(client) / remove(client) change the set later (of the client types
    given at construction, or `client_types=`)."""

    def __init__(self, *clients: Any, meter_provider: otel_metrics.MeterProvider | None = None,
                 client_types: Iterable[str] = ("producer", "consumer", "admin")) -> None:
        self._lock = threading.Lock()
        self._clients: list[weakref.ref[Any]] = [weakref.ref(c) for c in clients]
        self._snapshots: dict[int, tuple[float, MetricsSnapshot]] = {}
        meter = otel_metrics.get_meter("cykafka", cykafka.__version__, meter_provider)
        types = set(client_types)
        seen: set[str] = set()
        for client_type, group, name, _, meaning in CATALOGUE:
            metric = MetricName(name, group)
            telemetry = metric.telemetry_name
            if client_type not in types or telemetry in seen:
                continue
            seen.add(telemetry)
            callback = self._callback(group, name)
            if name.endswith("-total"):
                meter.create_observable_counter(telemetry, [callback], description=meaning)
            else:
                meter.create_observable_gauge(telemetry, [callback], description=meaning)

    def add(self, client: Any) -> None:
        with self._lock:
            self._clients.append(weakref.ref(client))

    def remove(self, client: Any) -> None:
        with self._lock:
            self._clients = [ref for ref in self._clients if ref() is not None and ref() is not client]

    def _snapshots_now(self) -> list[MetricsSnapshot]:
        now = time.monotonic()
        out = []
        with self._lock:
            for ref in self._clients:
                client = ref()
                if client is None:
                    continue
                taken = self._snapshots.get(id(client))
                if taken is None or now - taken[0] > SNAPSHOT_REUSE_S:
                    taken = self._snapshots[id(client)] = (now, client.metrics())
                out.append(taken[1])
        return out

    def _callback(self, group: str, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(value, metric.telemetry_tags) for snapshot in self._snapshots_now()
                    for metric, value in snapshot.all.items() if metric.name == name and metric.group == group]

        return observe
