"""Every client's metrics (issue 30, point 2): Java's names, groups and tags from Producer, Consumer, Admin and the
async clients against real brokers; per-partition lag from the Fetch answers; statistics.interval.ms + stats_cb;
the KIP-714 names the exporters use."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from typing import Any

import pytest

from cykafka import Admin, Consumer, Producer, TopicPartition
from cykafka.admin import NewTopic
from cykafka.aio import AsyncConsumer, AsyncProducer
from cykafka.errors import ConfigError
from cykafka.metrics import CATALOGUE, MetricName, MetricsSnapshot

RECORDS_PER_PARTITION = 50
POLLS = 200  # bound of every poll loop (each poll waits at most 0.5 s)


def _topic(bootstrap: str, partitions: int = 2) -> str:
    topic = f"metrics-{uuid.uuid4().hex[:10]}"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, partitions)])[topic].result()
    return topic


def _tagged(snapshot: MetricsSnapshot, name: str, group: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {n.tags: v for n, v in snapshot.all.items() if n.name == name and n.group == group}


def _produce(bootstrap: str, topic: str, **config: Any) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "metrics-producer", **config})
    for i in range(2 * RECORDS_PER_PARTITION):
        producer.send(topic, b"value-%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    return producer


def test_producer_metrics_keep_their_names_and_add_node_metrics(broker: Any) -> None:
    topic = _topic(broker.bootstrap_servers)
    with _produce(broker.bootstrap_servers, topic) as producer:
        metrics = producer.metrics()
        assert isinstance(metrics, dict)  # the old shape: {Java name: float}
        assert metrics["record-send-total"] == 2 * RECORDS_PER_PARTITION
        assert metrics["connection-count"] >= 1
        assert metrics["buffer-total-bytes"] == producer.config.buffer_memory
        latency = _tagged(metrics, "request-latency-avg", "producer-node-metrics")
        totals = _tagged(metrics, "request-total", "producer-node-metrics")
        assert latency and all(dict(tags)["client-id"] == "metrics-producer" for tags in latency)
        assert all(dict(tags)["node-id"].startswith("node-") for tags in latency)
        assert sum(totals.values()) >= 2  # metadata and at least one Produce answer
        group = {n.group for n in metrics.all if n.name == "record-send-rate"}
        assert group == {"producer-metrics"}


def test_consumer_metrics_lag_lead_latencies_and_rates(broker: Any) -> None:
    topic = _topic(broker.bootstrap_servers)
    _produce(broker.bootstrap_servers, topic).close()
    config = {"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
              "client.id": "metrics-consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    with Consumer(config) as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got = 0
        for _ in range(POLLS):
            if got >= 2 * RECORDS_PER_PARTITION:
                break
            got += len(consumer.poll(0.5))
        assert got == 2 * RECORDS_PER_PARTITION
        for _ in range(POLLS):  # one more Fetch answer: the lag at the end of the partitions
            if consumer.metrics()["fetch-total"] >= 2:
                break
            assert consumer.poll(0.1) == []
        consumer.commit()
        metrics = consumer.metrics()
    assert metrics["records-consumed-total"] == 2 * RECORDS_PER_PARTITION
    assert metrics["bytes-consumed-total"] > 2 * RECORDS_PER_PARTITION * len(b"value-0")
    assert metrics["fetch-total"] >= 2 and metrics["fetch-latency-max"] >= metrics["fetch-latency-avg"] >= 0
    assert metrics["commit-total"] == 1 and metrics["commit-latency-avg"] >= 0
    assert metrics["time-between-poll-avg"] > 0 and metrics["connection-count"] >= 1
    # the first Fetch of each partition asked at offset 0 with its records all written: lag = its record count
    assert metrics["records-lag-max"] == RECORDS_PER_PARTITION
    assert metrics["records-lead-min"] == 0
    lag = _tagged(metrics, "records-lag", "consumer-fetch-manager-metrics")
    lag_max = _tagged(metrics, "records-lag-max", "consumer-fetch-manager-metrics")
    client = ("client-id", "metrics-consumer")
    expected = {(client, ("topic", topic), ("partition", str(p))) for p in (0, 1)}
    assert set(lag) == expected and set(lag.values()) == {0.0}
    assert {tags: value for tags, value in lag_max.items() if len(tags) == 3} == dict.fromkeys(
        expected, float(RECORDS_PER_PARTITION))
    assert _tagged(metrics, "records-lead", "consumer-fetch-manager-metrics") == dict.fromkeys(
        expected, float(RECORDS_PER_PARTITION))
    assert _tagged(metrics, "request-latency-avg", "consumer-node-metrics")


def test_rebalance_latency_after_a_subscribe(broker: Any) -> None:
    topic = _topic(broker.bootstrap_servers, partitions=1)
    config = {"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    with Consumer(config) as consumer:
        consumer.subscribe([topic])
        for _ in range(POLLS):
            consumer.poll(0.1)
            if consumer.assignment():
                break
        assert consumer.assignment() == {TopicPartition(topic, 0)}
        metrics = consumer.metrics()
    assert metrics["rebalance-total"] == 1
    assert metrics["rebalance-latency-max"] == metrics["rebalance-latency-avg"] > 0


def test_admin_metrics(broker: Any) -> None:
    with Admin({"bootstrap.servers": broker.bootstrap_servers, "client.id": "metrics-admin"}) as admin:
        admin.list_topics()
        metrics = admin.metrics()
    assert metrics["connection-count"] >= 1
    totals = _tagged(metrics, "request-total", "admin-client-node-metrics")
    assert sum(totals.values()) >= 1 and all(dict(t)["client-id"] == "metrics-admin" for t in totals)


def test_async_clients_have_metrics(broker: Any) -> None:
    topic = _topic(broker.bootstrap_servers, partitions=1)

    async def run() -> tuple[MetricsSnapshot, MetricsSnapshot]:
        async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
            await producer.send_and_wait(topic, b"x", partition=0)
            produced = producer.metrics()
        async with AsyncConsumer({"bootstrap.servers": broker.bootstrap_servers,
                                  "auto.offset.reset": "earliest"}) as consumer:
            await consumer.assign([TopicPartition(topic, 0)])
            await asyncio.wait_for(consumer.getone(), 30)
            consumed = consumer.metrics()
        return produced, consumed

    produced, consumed = asyncio.run(run())
    assert produced["record-send-total"] == 1 and consumed["records-consumed-total"] == 1


@pytest.mark.parametrize("client", ["producer", "consumer", "admin"])
def test_stats_cb_gets_the_metrics_as_json_every_interval(broker: Any, client: str) -> None:
    calls: list[str] = []
    arrived = threading.Event()

    def stats_cb(stats: str) -> None:
        calls.append(stats)
        if len(calls) >= 2:
            arrived.set()

    config = {"bootstrap.servers": broker.bootstrap_servers, "statistics.interval.ms": 100, "stats_cb": stats_cb}
    made = {"producer": Producer, "consumer": Consumer, "admin": Admin}[client](config)
    try:
        assert arrived.wait(10), calls
    finally:
        made.close()
    stats = json.loads(calls[-1])
    assert stats["type"] == client and stats["client_id"]
    assert "connection-count" in stats["metrics"]
    assert all({"name", "group", "tags", "value"} <= set(t) for t in stats["tagged"])
    seen = len(calls)
    time.sleep(0.3)
    assert len(calls) <= seen + 1  # close() stopped the reports


def test_stats_cb_needs_a_callable_and_the_interval_a_non_negative_int() -> None:
    with pytest.raises(ConfigError, match=r"statistics\.interval\.ms"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "statistics.interval.ms": -1})
    with pytest.raises(ConfigError, match="stats_cb"):
        Consumer({"bootstrap.servers": "127.0.0.1:1", "stats_cb": "not callable"})


def test_kip714_names_and_tags() -> None:
    tags = (("client-id", "c"), ("node-id", "node-1"))
    name = MetricName("request-latency-avg", "producer-node-metrics", tags)
    assert name.telemetry_name == "org.apache.kafka.producer.node.request.latency.avg"
    assert name.telemetry_tags == {"client_id": "c", "node_id": "node-1"}
    assert MetricName("records-lag", "consumer-fetch-manager-metrics").telemetry_name == \
        "org.apache.kafka.consumer.fetch.manager.records.lag"
    assert MetricName("connection-count", "admin-client-metrics").telemetry_name == \
        "org.apache.kafka.admin.client.connection.count"


def test_the_catalogue_lists_every_metric_a_client_reports() -> None:
    """Every metric a producer reports is in CATALOGUE (docs/observability.md's table is made from it)."""
    from cykafka.metrics import ProducerMetrics
    snapshot = ProducerMetrics().snapshot(buffer_available_bytes=1, buffer_total_bytes=1, waiting_threads=0,
                                          requests_in_flight=0, client_id="c")
    listed = {(group, name) for _, group, name, _, _ in CATALOGUE}
    assert {(n.group, n.name) for n in snapshot.all} <= listed
