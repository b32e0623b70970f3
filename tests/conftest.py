"""Shared fixtures: the embedded Tansu broker (one per session, stopped by pid even when tests fail) and one local
SparkSession for the Spark tests (built on first use, so runs without Spark tests never start a JVM)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cykafka.broker import EmbeddedBroker

sys.path.insert(0, str(Path(__file__).parent))  # test helper modules (security_peers, mock_cluster) import by name


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    b = EmbeddedBroker().start()
    try:
        yield b
    finally:
        b.stop()


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
