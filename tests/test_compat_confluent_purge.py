"""cykafka.compat.confluent_kafka's Producer.purge (issue 31), librdkafka's rd_kafka_purge: queued records fail with
_PURGE_QUEUE and never reach the log (read back with confluent-kafka, check.crcs=true), in-flight ones with
_PURGE_INFLIGHT without waiting for their answers, later records go on (idempotent too); each sequence of calls run
against the real confluent_kafka on the same broker gives the same reports, len() and flush()."""

from __future__ import annotations

import time
import uuid
from types import ModuleType
from typing import Any

import pytest

import cykafka.compat.confluent_kafka as ck
from cykafka.broker import EmbeddedBroker
from cykafka.verify import read_back

pytestmark = pytest.mark.broker


def _topic(prefix: str) -> str:
    return f"ck-{prefix}-{uuid.uuid4().hex[:8]}"


def _reporter(reports: list[tuple[int | None, bytes]]) -> Any:
    return lambda err, msg: reports.append((None if err is None else err.code(), msg.value()))


def _purge_queued(kafka: ModuleType, bootstrap: str, topic: str, idempotent: bool) -> dict[str, Any]:
    """Records queued behind a long linger.ms, purged (in_flight=False), then more records sent."""
    seen: dict[str, Any] = {}
    reports: list[tuple[int | None, bytes]] = []
    p = kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 60000, "enable.idempotence": idempotent})
    p.produce(topic, b"warm", partition=0, on_delivery=_reporter(reports))
    seen["warm"] = (p.flush(30), list(reports))  # the topic's metadata known: the records below are queued
    reports.clear()
    for i in range(5):
        p.produce(topic, b"q%d" % i, partition=i % 2, on_delivery=_reporter(reports))
    p.produce(topic, b"q-silent", partition=1)  # no callback: purged all the same, no report
    seen["len before purge"] = len(p)
    started = time.monotonic()
    # blocking=False: confluent-kafka's Producer_purge passes librdkafka's NON_BLOCKING flag when blocking is true,
    # and a purge left to run in the background also takes records produced right after it (cykafka's purge is
    # done when it returns, whatever `blocking` says)
    p.purge(in_flight=False, blocking=False)
    seen["flush after purge"] = p.flush(10)
    seen["flush returned at once"] = time.monotonic() - started < 5
    seen["len after purge"] = len(p)
    seen["purged"] = sorted(reports, key=repr)
    reports.clear()
    for i in range(3):
        p.produce(topic, b"a%d" % i, partition=i % 2, on_delivery=_reporter(reports))
    seen["flush after"] = p.flush(30)
    seen["after"] = sorted(reports, key=repr)
    seen["log"] = sorted(r.value for r in read_back(bootstrap, topic, timeout_s=30))
    return seen


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
def test_purged_queued_records_fail_with_purge_queue_and_never_reach_the_log(broker: Any, idempotent: bool) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    theirs = _purge_queued(confluent_kafka, broker.bootstrap_servers, _topic("purge-theirs"), idempotent)
    ours = _purge_queued(ck, broker.bootstrap_servers, _topic("purge-ours"), idempotent)
    if idempotent and isinstance(broker, EmbeddedBroker):
        # librdkafka's records after its purge of idempotent ones are answered PRODUCER_FENCED by Tansu (it recovers
        # its msgid gap with a new epoch, which Tansu mishandles; Apache Kafka takes them): not compared here
        theirs.pop("after"), theirs.pop("log")
    assert {k: v for k, v in ours.items() if k in theirs} == theirs
    assert ours["len before purge"] == 6 and ours["len after purge"] == 0 and ours["flush after purge"] == 0
    assert ours["purged"] == [(ck.KafkaError._PURGE_QUEUE, b"q%d" % i) for i in range(5)]
    assert ours["after"] == [(None, b"a0"), (None, b"a1"), (None, b"a2")] and ours["flush after"] == 0
    assert ours["log"] == [b"a0", b"a1", b"a2", b"warm"]


def test_records_held_for_metadata_are_purged_from_the_queue_too(broker: Any) -> None:
    """produce() never waits for a topic's metadata (the records are held): purge() fails them as queued."""
    topic = _topic("purge-held")
    reports: list[tuple[int | None, bytes]] = []
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(3):
        p.produce(topic, b"h%d" % i, on_delivery=_reporter(reports))
    p.purge()
    assert p.poll(0) == 3 and len(p) == 0
    assert reports == [(ck.KafkaError._PURGE_QUEUE, b"h%d" % i) for i in range(3)]
    reports.clear()
    p.produce(topic, b"after", on_delivery=_reporter(reports))
    assert p.flush(30) == 0 and reports == [(None, b"after")]
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, timeout_s=30)] == [b"after"]


def _purge_in_flight(kafka: ModuleType, mock: Any, topic: str) -> dict[str, Any]:
    """Idempotent records sent to brokers that hold their answers 3 s, purged in flight (in_queue=False)."""
    seen: dict[str, Any] = {}
    reports: list[tuple[int | None, bytes]] = []
    p = kafka.Producer({"bootstrap.servers": mock.bootstrap_servers, "enable.idempotence": True, "linger.ms": 0})
    p.produce(topic, b"warm", partition=0, on_delivery=_reporter(reports))
    seen["warm"] = (p.flush(30), list(reports))
    reports.clear()
    for broker_id in (1, 2, 3):
        mock.set_rtt(broker_id, 3000)
    for i in range(3):
        p.produce(topic, b"f%d" % i, partition=0, on_delivery=_reporter(reports))
    seen["flush while in flight"] = p.flush(0.5)  # sent, not answered
    started = time.monotonic()
    p.purge(in_queue=False, blocking=False)  # blocking=False: see _purge_queued
    seen["flush after purge"] = p.flush(10)
    seen["did not wait for the answers"] = time.monotonic() - started < 2
    seen["len after purge"] = len(p)
    seen["purged"] = sorted(reports, key=repr)
    reports.clear()
    for broker_id in (1, 2, 3):
        mock.set_rtt(broker_id, 0)
    for i in range(3):
        p.produce(topic, b"a%d" % i, partition=0, on_delivery=_reporter(reports))
    seen["flush after"] = p.flush(30)
    seen["after"] = sorted(reports, key=repr)  # no OutOfOrderSequence: the purged batches kept their sequences
    return seen


def test_purged_in_flight_records_fail_with_purge_inflight_at_once_and_later_records_go_on(mock_cluster: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    mock_cluster.create_topic("purge-theirs", [1])
    mock_cluster.create_topic("purge-ours", [1])
    theirs = _purge_in_flight(confluent_kafka, mock_cluster, "purge-theirs")
    ours = _purge_in_flight(ck, mock_cluster, "purge-ours")
    assert ours == theirs
    assert ours["flush while in flight"] == 3 and ours["flush after purge"] == 0 and ours["len after purge"] == 0
    assert ours["did not wait for the answers"]
    assert ours["purged"] == [(ck.KafkaError._PURGE_INFLIGHT, b"f%d" % i) for i in range(3)]
    assert ours["after"] == [(None, b"a0"), (None, b"a1"), (None, b"a2")] and ours["flush after"] == 0
    # the purged records' requests completed in the background: the log has them, in order, before the later ones
    log = [r.value for r in read_back(mock_cluster.bootstrap_servers, "purge-ours", timeout_s=30)]
    assert log == [b"warm", b"f0", b"f1", b"f2", b"a0", b"a1", b"a2"]
