"""Shared fixtures: the brokers (one of each per session, started on first use, stopped by pid even when tests fail)
and one local SparkSession for the Spark tests (built on first use, so runs without Spark tests never start a JVM).

`broker` is parametrized over the brokers in CYKAFKA_TEST_BROKERS (default `tansu,kafka`): every test that takes it
runs on Tansu (`tansu_broker`, the embedded broker) and on Apache Kafka (`kafka_broker`: a single KRaft node of
tests/apache_kafka.py, security listeners and an authorizer included), ids `[tansu]` / `[kafka]`. A test that cannot
run on one of them says why: `@pytest.mark.broker_only("tansu", reason="...")` skips the others with that reason.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cykafka.broker import EmbeddedBroker

sys.path.insert(0, str(Path(__file__).parent))  # test helper modules (security_peers, mock_cluster) import by name


BROKERS = ("tansu", "kafka")
DEFAULT_BROKERS = "tansu,kafka"


def selected_brokers() -> list[str]:
    chosen = [name.strip() for name in os.environ.get("CYKAFKA_TEST_BROKERS", DEFAULT_BROKERS).split(",")]
    unknown = sorted(set(chosen) - set(BROKERS))
    if unknown:
        raise pytest.UsageError(f"CYKAFKA_TEST_BROKERS: unknown {unknown}; accepted: {', '.join(BROKERS)}")
    return [name for name in BROKERS if name in chosen]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "broker_only(*names, reason): run the `broker` tests only on these brokers")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "broker" not in metafunc.fixturenames:
        return
    only = metafunc.definition.get_closest_marker("broker_only")
    params = []
    for name in selected_brokers():
        marks = []
        if only is not None and name not in only.args:
            marks.append(pytest.mark.skip(reason=f"not on {name}: {only.kwargs['reason']}"))
        params.append(pytest.param(name, id=name, marks=marks))
    metafunc.parametrize("broker", params, indirect=True, scope="session")


@pytest.fixture(scope="session")
def tansu_broker() -> Iterator[EmbeddedBroker]:
    b = EmbeddedBroker().start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="session")
def apache_kafka() -> Any:
    """tests/apache_kafka.py's KafkaCluster, for a test that starts a cluster of its own; skipped when Apache Kafka
    is not among CYKAFKA_TEST_BROKERS."""
    if "kafka" not in selected_brokers():
        pytest.skip("Apache Kafka is not in CYKAFKA_TEST_BROKERS")
    from apache_kafka import KafkaCluster

    return KafkaCluster


@pytest.fixture(scope="session")
def kafka_broker(apache_kafka: Any) -> Iterator[Any]:
    """Apache Kafka (newest pinned version), one combined KRaft node with PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL."""
    cluster = apache_kafka(1, security=True).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kafka_cluster(apache_kafka: Any) -> Iterator[Any]:
    """Apache Kafka, three KRaft nodes (each broker and controller): replication factor 3, min.insync.replicas 2.
    Tests that kill or stop a node restart it before they end (`KafkaCluster.restart`)."""
    cluster = apache_kafka(3).start()
    try:
        yield cluster
    finally:
        cluster.stop()


# share groups' timing knobs, low for tests: a lost member's records come back after 4 s (the broker's floor: 1 s;
# 4 s leaves room for a loaded machine between a poll and its acknowledgements)
SHARE_RECORD_LOCK_DURATION_MS = 4000
SHARE_DELIVERY_COUNT_LIMIT = 3  # the broker's floor is 2 (Kafka 4.2+)


@pytest.fixture(scope="session")
def share_kafka(apache_kafka: Any) -> Iterator[Any]:
    """Apache Kafka (newest pinned version), one KRaft node with share groups (share.version=1, KIP-932), a record
    lock of SHARE_RECORD_LOCK_DURATION_MS and a delivery count limit of SHARE_DELIVERY_COUNT_LIMIT; started once."""
    cluster = apache_kafka(1, features={"share.version": 1}, broker_config={
        "group.share.record.lock.duration.ms": str(SHARE_RECORD_LOCK_DURATION_MS),
        "group.share.min.record.lock.duration.ms": "1000",
        "group.share.delivery.count.limit": str(SHARE_DELIVERY_COUNT_LIMIT),
        "group.share.min.delivery.count.limit": "2",
        "group.share.heartbeat.interval.ms": "1000",
        "group.share.min.heartbeat.interval.ms": "1000",
        "group.share.session.timeout.ms": "6000",
        "group.share.min.session.timeout.ms": "6000",
    }).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest) -> Any:
    """The broker of this parameter: `tansu_broker` or `kafka_broker` (both have .bootstrap_servers, .host, .port)."""
    return request.getfixturevalue(f"{getattr(request, 'param', 'tansu')}_broker")


@pytest.fixture()
def mock_cluster() -> Iterator[Any]:
    """librdkafka's mock cluster (from confluent-kafka's librdkafka): 3 brokers on 127.0.0.1, with its controls."""
    pytest.importorskip("confluent_kafka")
    from mock_cluster import MockCluster

    cluster = MockCluster(3)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from cykafka.spark import local_session

    # local[2,4]: 2 cores, a task may fail up to 4 times (local mode otherwise never retries)
    session = local_session("local[2,4]", "cykafka-tests", conf={
        "spark.sql.pyspark.worker.logging.enabled": "true",  # the tests read spark.tvf.python_worker_logs()
        "spark.sql.shuffle.partitions": "2",
    })
    try:
        yield session
    finally:
        session.stop()
