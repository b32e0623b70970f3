"""KIP-714 client telemetry (core/telemetry.py, cykafka/telemetry.py): the state machine's decisions with time passed
in; and on Apache Kafka with a ClientTelemetry plugin (jvm/tools/TelemetryReceiver.java, compiled here against the
pinned kafka-clients and put on the broker's classpath) and a client-metrics subscription, a cykafka Producer's
metrics arrive at the broker, OTLP-encoded (decoded there by the OTLP classes kafka-clients carries), under KIP-714's
names, only those the subscription asks for; enable.metrics.push=false pushes nothing."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from cykafka import Admin, Consumer, Producer, TopicPartition
from cykafka.core.telemetry import (
    DISABLED,
    PUSH_NEEDED,
    SUBSCRIPTION_NEEDED,
    TERMINATED,
    TERMINATING_PUSH_IN_PROGRESS,
    ClientTelemetry,
)
from cykafka.protocol import Request
from cykafka.protocol.apis import INCREMENTAL_ALTER_CONFIGS
from cykafka.protocol.error_codes import ErrorCode
from cykafka.requests.routes import ANY_BROKER

ROOT = Path(__file__).resolve().parents[1]
RECEIVER = ROOT / "jvm" / "tools" / "TelemetryReceiver.java"
CLIENT_METRICS_RESOURCE = 16  # ConfigResource.Type CLIENT_METRICS
INSTANCE = UUID("6a1f9d4e-2b3c-4d5e-8f90-123456789abc")


def _subscriptions(**changes: Any) -> dict[str, Any]:
    return {"error_code": 0, "client_instance_id": INSTANCE, "subscription_id": 7, "accepted_compression_types": [],
            "push_interval_ms": 1000, "telemetry_max_bytes": 1 << 20, "delta_temporality": False,
            "requested_metrics": ["org.apache.kafka.producer.record."], **changes}


def test_the_state_machine_asks_then_pushes_every_interval() -> None:
    telemetry = ClientTelemetry(retry_backoff_ms=100)
    assert telemetry.delay_ms(0) == 0
    assert telemetry.request(0) == ("subscriptions", {"client_instance_id": UUID(int=0)})
    assert telemetry.delay_ms(5) is None and telemetry.request(5) is None  # the answer is awaited
    telemetry.on_subscriptions(_subscriptions(), 10)
    assert (telemetry.state, telemetry.delay_ms(10)) == (PUSH_NEEDED, 1000)
    assert telemetry.request(1009) is None
    kind, body = telemetry.request(1010) or ("", {})
    assert kind == "push" and body == {"client_instance_id": INSTANCE, "subscription_id": 7, "terminating": False,
                                       "compression_type": 0}
    assert telemetry.wants("org.apache.kafka.producer.record.send.rate")
    assert not telemetry.wants("org.apache.kafka.producer.request.latency.avg")
    telemetry.on_push({"error_code": 0}, 1020)
    assert (telemetry.state, telemetry.delay_ms(1020), telemetry.pushes) == (PUSH_NEEDED, 1000, 1)
    # closing: one last push at once, terminating=true, then nothing more whatever comes back
    assert telemetry.terminate() and telemetry.delay_ms(1030) == 0
    assert telemetry.request(1030) == ("push", {**body, "terminating": True})
    assert telemetry.state == TERMINATING_PUSH_IN_PROGRESS and telemetry.terminating
    telemetry.on_push({"error_code": 0}, 1040)
    assert (telemetry.state, telemetry.pushes, telemetry.request(99_999)) == (TERMINATED, 2, None)


def test_closing_with_nothing_subscribed_or_a_push_out_just_ends() -> None:
    telemetry = ClientTelemetry(retry_backoff_ms=100)
    assert not telemetry.terminate() and telemetry.state == TERMINATED and telemetry.request(0) is None
    telemetry = ClientTelemetry(retry_backoff_ms=100)
    telemetry.request(0)
    telemetry.on_subscriptions(_subscriptions(), 0)
    telemetry.request(1000)  # a push is out
    assert not telemetry.terminate()
    telemetry.on_push({"error_code": 0}, 1010)  # its answer, after close: ignored
    assert telemetry.state == TERMINATED and telemetry.delay_ms(2000) is None


def test_answers_move_it_as_javas_reporter() -> None:
    telemetry = ClientTelemetry(retry_backoff_ms=100)
    telemetry.request(0)
    telemetry.on_subscriptions(_subscriptions(requested_metrics=[]), 0)  # nothing asked: ask again later
    assert (telemetry.state, telemetry.delay_ms(0)) == (SUBSCRIPTION_NEEDED, 1000)
    telemetry.request(1000)
    telemetry.on_subscriptions(_subscriptions(requested_metrics=[""]), 1000)
    assert telemetry.wants("org.apache.kafka.producer.anything")
    for code, state, delay_ms in ((ErrorCode.UNKNOWN_SUBSCRIPTION_ID, SUBSCRIPTION_NEEDED, 0),
                                  (ErrorCode.TELEMETRY_TOO_LARGE, PUSH_NEEDED, 1000),
                                  (ErrorCode.THROTTLING_QUOTA_EXCEEDED, PUSH_NEEDED, 1000)):
        telemetry.state, telemetry.due_ms = PUSH_NEEDED, 0
        assert telemetry.request(5000) is not None
        telemetry.on_push({"error_code": code}, 5000)
        assert (telemetry.state, telemetry.delay_ms(5000)) == (state, delay_ms), code
    telemetry.state, telemetry.due_ms = PUSH_NEEDED, 0
    telemetry.request(6000)
    telemetry.on_failure(6000)  # a lost connection: the subscriptions again, after the interval
    assert (telemetry.state, telemetry.delay_ms(6000)) == (SUBSCRIPTION_NEEDED, 1000)
    telemetry.request(7000)
    telemetry.on_subscriptions({**_subscriptions(), "error_code": ErrorCode.INVALID_REQUEST}, 7000)
    assert telemetry.state == DISABLED and telemetry.delay_ms(7000) is None and telemetry.request(9000) is None


def _pushes(directory: Path) -> list[dict[str, Any]]:
    """The plugin's files: {"client_id": ..., "resource": {k: v}, "metrics": {name: (kind, value)}} per push."""
    pushes = []
    for path in sorted(directory.glob("*.txt")):
        push: dict[str, Any] = {"resource": {}, "metrics": {}}
        for line in path.read_text().splitlines():
            head, _, rest = line.partition(" ")
            if head == "resource":
                key, _, value = rest.partition("=")
                push["resource"][key] = value
            elif head.startswith("org.apache.kafka."):
                kind, value, *temporality = rest.split(" ")
                push["metrics"][head] = (kind, float(value), *temporality)
            else:
                push[head] = rest
        pushes.append(push)
    return pushes


def _sent_total(pushes: list[dict[str, Any]]) -> float:
    return sum(p["metrics"].get("org.apache.kafka.producer.record.send.total", ("", 0.0))[1] for p in pushes)


@pytest.mark.slow
def test_the_broker_receives_the_producers_metrics_as_otlp(apache_kafka: Any, tmp_path: Path) -> None:
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac (a JDK) on PATH")
    from apache_kafka import kafka_lib

    classes = tmp_path / "classes"
    received = tmp_path / "received"
    classes.mkdir()
    received.mkdir()
    subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", str(kafka_lib() / "*"), str(RECEIVER)], check=True,
                   timeout=300, capture_output=True)
    cluster = apache_kafka(1, classpath=[classes], broker_config={
        "metric.reporters": "TelemetryReceiver", "cykafka.telemetry.dir": str(received)}).start()
    try:
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            body = {"resources": [{"resource_type": CLIENT_METRICS_RESOURCE, "resource_name": "cykafka-producers",
                                   "configs": [
                                       {"name": "metrics", "config_operation": 0,
                                        "value": "org.apache.kafka.producer.record.,org.apache.kafka.producer.request,"
                                                 "org.apache.kafka.consumer.fetch.manager.records.consumed"},
                                       {"name": "interval.ms", "config_operation": 0, "value": "1000"},
                                       {"name": "match", "config_operation": 0, "value": "client_id=telemetry-.*"}]}],
                    "validate_only": False}
            answer = admin._call(lambda: admin._ask(Request(INCREMENTAL_ALTER_CONFIGS.key, body), ANY_BROKER,
                                                    admin._deadline(None)))
            assert [r["error_code"] for r in answer.body["responses"]] == [0], answer.body
        topic = f"telemetry-{uuid.uuid4().hex[:8]}"
        bootstrap = cluster.bootstrap_servers
        with Producer({"bootstrap.servers": bootstrap, "client.id": "telemetry-on", "linger.ms": 0}) as producer, \
                Producer({"bootstrap.servers": bootstrap, "client.id": "telemetry-off", "linger.ms": 0,
                          "enable.metrics.push": False}) as silent:
            for i in range(20):
                producer.send(topic, b"v%d" % i)
                silent.send(topic, b"s%d" % i)
            assert producer.flush(30) == 0 and silent.flush(30) == 0
            sent = producer.metrics()["record-send-total"]
            deadline = time.monotonic() + 30
            pushes: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                pushes = _pushes(received)
                if _sent_total(pushes) >= sent:
                    break
                time.sleep(0.2)
            during = len(pushes)
        # closed: its last push, terminating=true, went before close() returned
        pushes = _pushes(received)
        assert len(pushes) > during and pushes[-1]["terminating"] == "true", pushes[-1]
        assert sent == 20.0
        assert pushes, "no push reached the broker's plugin within 30 s"
        assert {p["client_id"] for p in pushes} == {"telemetry-on"}  # the silent producer never pushed
        last = pushes[during - 1]
        assert last["content_type"] == "OTLP" and last["terminating"] == "false"
        assert last["resource"] == {"client_id": "telemetry-on"}
        metrics = last["metrics"]
        # Kafka's subscriptions ask for delta temporality: each push's sum counts the records since the one before
        totals = [p["metrics"]["org.apache.kafka.producer.record.send.total"] for p in pushes]
        assert {(kind, temporality) for kind, _, temporality in totals} == {("sum", "AGGREGATION_TEMPORALITY_DELTA")}
        assert _sent_total(pushes) == 20.0
        assert metrics["org.apache.kafka.producer.record.send.rate"][0] == "gauge"
        assert metrics["org.apache.kafka.producer.request.latency.avg"][0] == "gauge"
        assert metrics["org.apache.kafka.producer.request.latency.avg"][1] > 0
        # only what the subscription asks for
        assert all(name.startswith(("org.apache.kafka.producer.record.", "org.apache.kafka.producer.request"))
                   for name in metrics), sorted(metrics)
        assert "org.apache.kafka.producer.buffer.available.bytes" not in metrics
        print(f"{len(pushes)} pushes; the last: {len(metrics)} metrics, {sorted(metrics)[:4]} ...")
        # the consumer pushes too (Java's consumer default), under its groups' names, its last push on close
        consumed_total = "org.apache.kafka.consumer.fetch.manager.records.consumed.total"
        with Consumer({"bootstrap.servers": bootstrap, "client.id": "telemetry-consumer",
                       "auto.offset.reset": "earliest"}) as consumer:
            consumer.assign([TopicPartition(topic, p.partition) for p in consumer.partitions_for(topic)])
            read, deadline = 0, time.monotonic() + 30
            while time.monotonic() < deadline and (read < 40 or not any(
                    p["client_id"] == "telemetry-consumer" for p in _pushes(received))):
                read += len(consumer.poll(0.5))
        assert read == 40
        by_consumer = [p for p in _pushes(received) if p["client_id"] == "telemetry-consumer"]
        assert len(by_consumer) >= 2 and by_consumer[-1]["terminating"] == "true", by_consumer
        assert all(set(p["metrics"]) <= {consumed_total, consumed_total[:-len("total")] + "rate"} for p in by_consumer)
        assert sum(p["metrics"].get(consumed_total, ("", 0.0))[1] for p in by_consumer) == 40.0  # deltas
    finally:
        cluster.stop()
