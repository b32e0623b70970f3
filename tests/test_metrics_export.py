"""The metrics exporters (issue 30, point 3): cykafka.metrics.prometheus's Collector scraped as Prometheus text, and
cykafka.metrics.otel's observable instruments under the KIP-714 names read by the OpenTelemetry SDK's
InMemoryMetricReader; both over real clients of a real broker."""

from __future__ import annotations

import gc
import uuid
from typing import Any

import pytest

from cykafka import Consumer, Producer, TopicPartition

prometheus_client = pytest.importorskip("prometheus_client")
pytest.importorskip("opentelemetry.sdk.metrics")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from cykafka.metrics.otel import CykafkaMetricsObserver  # noqa: E402
from cykafka.metrics.prometheus import CykafkaCollector  # noqa: E402

POLLS = 100


def _clients(bootstrap: str) -> tuple[Producer, Consumer, str]:
    topic = f"export-{uuid.uuid4().hex[:10]}"
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "export-producer"})
    for i in range(10):
        producer.send(topic, b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": "export-consumer",
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0)])
    got = 0
    for _ in range(POLLS):
        if got >= 10:
            break
        got += len(consumer.poll(0.5))
    assert got == 10
    return producer, consumer, topic


def test_prometheus_collector_scrape(broker: Any) -> None:
    producer, consumer, topic = _clients(broker.bootstrap_servers)
    registry = prometheus_client.CollectorRegistry()
    collector = CykafkaCollector(producer, consumer)
    registry.register(collector)
    try:
        text = prometheus_client.generate_latest(registry).decode()
    finally:
        producer.close()
        consumer.close()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    assert samples[("org_apache_kafka_producer_record_send_total", (("client_id", "export-producer"),))] == 10
    assert samples[("org_apache_kafka_consumer_fetch_manager_records_consumed_total",
                    (("client_id", "export-consumer"),))] == 10
    lag = ("org_apache_kafka_consumer_fetch_manager_records_lag",
           (("client_id", "export-consumer"), ("partition", "0"), ("topic", topic)))
    assert samples[lag] == 0
    node_latency = [labels for name, labels in samples if name == "org_apache_kafka_producer_node_request_latency_avg"]
    assert node_latency and all(dict(labels)["node_id"].startswith("node-") for labels in node_latency)
    assert "# TYPE org_apache_kafka_producer_record_send_total counter" in text
    assert "# TYPE org_apache_kafka_consumer_fetch_manager_records_lag gauge" in text
    assert "# HELP org_apache_kafka_producer_record_send_rate records acknowledged per second" in text
    del producer, consumer
    gc.collect()  # clients are held weakly: once dropped, a scrape leaves them out
    assert "export_producer" not in prometheus_client.generate_latest(registry).decode().replace("-", "_")


def test_opentelemetry_observable_instruments_with_kip714_names(broker: Any) -> None:
    producer, consumer, topic = _clients(broker.bootstrap_servers)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    CykafkaMetricsObserver(producer, consumer, meter_provider=provider)
    try:
        data = reader.get_metrics_data()
    finally:
        producer.close()
        consumer.close()
        provider.shutdown()
    points: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "cykafka"
            for metric in scope.metrics:
                points[metric.name] = list(metric.data.data_points)
    latency = points["org.apache.kafka.producer.node.request.latency.avg"]
    assert latency and all(p.attributes["client_id"] == "export-producer" and
                           str(p.attributes["node_id"]).startswith("node-") for p in latency)
    [sent] = points["org.apache.kafka.producer.record.send.total"]
    assert sent.value == 10 and dict(sent.attributes) == {"client_id": "export-producer"}
    lag = {tuple(sorted(p.attributes.items())): p.value
           for p in points["org.apache.kafka.consumer.fetch.manager.records.lag"]}
    assert lag == {(("client_id", "export-consumer"), ("partition", "0"), ("topic", topic)): 0}
    [consumed] = points["org.apache.kafka.consumer.fetch.manager.records.consumed.total"]
    assert consumed.value == 10
    assert "org.apache.kafka.consumer.coordinator.commit.latency.avg" in points
