"""Shared fixtures: the embedded Tansu broker (one per session, stopped by pid even when tests fail) and one local
SparkSession for the Spark tests (built on first use, so runs without Spark tests never start a JVM)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cykafka.broker import EmbeddedBroker

sys.path.insert(0, str(Path(__file__).parent))  # test helper modules (security_peers) import by name


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    b = EmbeddedBroker().start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[str]:
    """librdkafka's mock cluster (inside confluent-kafka): 3 brokers on 127.0.0.1, alive while the handle lives."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    handle = confluent_kafka.Producer({"test.mock.num.brokers": 3, "bootstrap.servers": ""})
    brokers = handle.list_topics(timeout=10).brokers
    yield ",".join(f"{b.host}:{b.port}" for b in brokers.values())
    handle.flush(1)


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
