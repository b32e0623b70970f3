"""A prometheus_client Collector over cykafka clients' metrics (the `prometheus` extra): `CykafkaCollector`.

What it owns: the mapping of a client's `metrics()` onto Prometheus samples. A metric's Prometheus name is its
KIP-714 name with dots as underscores (producer-node-metrics / request-latency-avg ->
org_apache_kafka_producer_node_request_latency_avg, what Java's telemetry names become in Prometheus); its tags are
labels, spelled as KIP-714 spells them (client_id, node_id, topic, partition). `-total` metrics are counters, the
rest gauges. Each scrape asks every client once; clients are held weakly (a closed, dropped client disappears).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from cykafka.metrics import MetricName, meaning_of

__all__ = ["CykafkaCollector", "prometheus_name"]


def prometheus_name(name: MetricName) -> str:
    """org.apache.kafka.producer.node.request.latency.avg -> org_apache_kafka_producer_node_request_latency_avg."""
    return name.telemetry_name.replace(".", "_")


class CykafkaCollector(Collector):
    """`REGISTRY.register(CykafkaCollector(producer, consumer, admin))`: every metric of these clients on each
    scrape. add(client) / remove(client) change the set later."""

    def __init__(self, *clients: Any) -> None:
        self._clients: list[weakref.ref[Any]] = []
        for client in clients:
            self.add(client)

    def add(self, client: Any) -> None:
        """client: a Producer, Consumer, Admin, AsyncProducer or AsyncConsumer (anything with metrics())."""
        self._clients.append(weakref.ref(client))

    def remove(self, client: Any) -> None:
        self._clients = [ref for ref in self._clients if ref() is not None and ref() is not client]

    def describe(self) -> Iterable[Metric]:
        return []  # the names depend on what the clients saw; registering does not scrape them

    def collect(self) -> Iterable[Metric]:
        families: dict[str, Metric] = {}
        for ref in list(self._clients):
            client = ref()
            if client is None:
                continue
            for name, value in client.metrics().all.items():
                prom = prometheus_name(name)
                counter = name.name.endswith("-total")
                family_name = prom[:-len("_total")] if counter else prom
                family = families.get(family_name)
                if family is None:
                    family = families[family_name] = Metric(family_name, meaning_of(name) or name.name,
                                                            "counter" if counter else "gauge")
                family.add_sample(prom, name.telemetry_tags, value)
        return list(families.values())
