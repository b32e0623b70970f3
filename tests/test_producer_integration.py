"""cykafka.Producer against real brokers: Tansu (every codec x acks), Apache Kafka (a batch over the topic's
max.message.bytes split until it fits) and librdkafka's 3-broker mock cluster.

Every record is read back by an independent client (confluent-kafka's consumer, check.crcs=true) and compared field
by field: key, value, headers, timestamp, partition (keyed records where librdkafka's murmur2_random puts them), and
order within each partition.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from mock_cluster import MockCluster

from cykafka import Admin, Consumer, NewTopic, Producer, TopicPartition
from cykafka.broker import EmbeddedBroker
from cykafka.core import partition_for_key
from cykafka.verify import read_back

RECORDS = 100_000
BASE_TS_MS = 1_700_000_000_000


def _record(i: int) -> dict[str, Any]:
    """Thirds: keyed; unkeyed; keyed with headers and an explicit timestamp."""
    value = b"value-%08d-" % i + b"x" * 80
    kind = i % 3
    if kind == 0:
        return {"value": value, "key": b"key-%d" % (i % 5000)}
    if kind == 1:
        return {"value": value}
    return {"value": value, "key": b"key-%d" % (i % 5000), "timestamp_ms": BASE_TS_MS + i,
            "headers": [("seq", b"%d" % i), ("empty", None), ("utf8-ключ", b"\x00\xff")]}


def produce_and_verify(bootstrap: str, topic: str, config: dict[str, Any], records: int = RECORDS) -> list[Any]:
    errors: list[BaseException] = []

    def on_delivery(err: BaseException | None, _md: Any) -> None:
        if err is not None:
            errors.append(err)

    with Producer({"bootstrap.servers": bootstrap, **config}) as producer:
        for i in range(records):
            producer.send(topic, on_delivery=on_delivery, **_record(i))
        assert producer.flush(120) == 0
        partitions = len(producer.partitions_for(topic))
    assert errors == []
    read = read_back(bootstrap, topic)
    assert len(read) == records
    by_seq = {}
    for r in read:
        assert r.value is not None
        by_seq[int(r.value[6:14])] = r
    assert sorted(by_seq) == list(range(records)), "lost or duplicated records"
    last_seq_in_partition: dict[int, int] = {}
    for r in read:  # partition then offset order: sends from one thread keep their order per partition
        seq = int(r.value[6:14])  # type: ignore[index]
        assert seq > last_seq_in_partition.get(r.partition, -1)
        last_seq_in_partition[r.partition] = seq
    for seq, r in by_seq.items():
        expected = _record(seq)
        assert r.value == expected["value"]
        assert r.key == expected.get("key")
        if "key" in expected:
            assert r.partition == partition_for_key(expected["key"], partitions)
        if "headers" in expected:
            assert r.headers == expected["headers"]
            assert r.timestamp_ms == expected["timestamp_ms"]
        else:
            assert r.headers == [] and r.timestamp_ms > BASE_TS_MS
    return read


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_and_acks_round_trip_through_tansu(broker: EmbeddedBroker, codec: str, acks: str) -> None:
    topic = f"it-{codec}-{acks}"
    # created and served first: with acks=0 nothing tells the producer that Kafka refused records (NOT_LEADER) while a
    # new partition's leadership was still being taken, so an auto-created topic lost a few percent of them
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, 4)], timeout_ms=30_000)[topic].result()
        answers = admin.list_offsets({TopicPartition(topic, p): "earliest" for p in range(4)}, timeout_ms=30_000)
        assert all(r.error is None for r in answers.values()), answers
    read = produce_and_verify(broker.bootstrap_servers, topic, {"compression.type": codec, "acks": acks,
                                                                "linger.ms": 5})
    assert len({r.partition for r in read}) == 4


def test_a_new_client_waits_for_its_connection_and_answers_not_for_retry_backoffs(broker: EmbeddedBroker) -> None:
    """A new transactional producer's init_transactions sends its FindCoordinator once the connection is up, and a
    new consumer's partitions_for returns once the metadata answers: neither waits retry.backoff.ms (5 s here) on a
    healthy broker (the Spark sink's exactly-once tasks and its source's planning build new ones every time)."""
    topic = f"it-no-backoff-{uuid.uuid4().hex[:8]}"
    bootstrap = broker.bootstrap_servers
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 2)], timeout_ms=30_000)[topic].result()
    with Producer({"bootstrap.servers": bootstrap, "transactional.id": f"warm-{topic}"}) as warm:
        warm.init_transactions(30)  # the transaction coordinator is loaded (a new Kafka creates its topic first)
    with Consumer({"bootstrap.servers": bootstrap}) as warm_consumer:
        deadline_s = time.monotonic() + 30
        while len(warm_consumer.partitions_for(topic, 30)) != 2 and time.monotonic() < deadline_s:
            time.sleep(0.05)  # the new topic is in the metadata
    slow_retries = {"bootstrap.servers": bootstrap, "retry.backoff.ms": 5000, "retry.backoff.max.ms": 5000}
    started_s = time.monotonic()
    with Producer({**slow_retries, "transactional.id": f"txn-{topic}"}) as producer:
        producer.init_transactions(30)
    assert time.monotonic() - started_s < 3
    with Consumer(slow_retries) as consumer:
        started_s = time.monotonic()
        assert len(consumer.partitions_for(topic, 30)) == 2
        assert time.monotonic() - started_s < 3


def test_futures_resolve_to_the_offsets_the_broker_assigned(broker: EmbeddedBroker) -> None:
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
        futures = [producer.send("it-offsets", b"%d" % i, partition=i % 2) for i in range(1000)]
        metadata = [f.result(30) for f in futures]
    assert [m.offset for m in metadata if m.partition == 0] == list(range(500))
    assert [m.offset for m in metadata if m.partition == 1] == list(range(500))
    read = read_back(broker.bootstrap_servers, "it-offsets")
    assert {(r.partition, r.offset): r.value for r in read} == {
        (m.partition, m.offset): b"%d" % i for i, m in enumerate(metadata)}


def test_records_batched_past_the_topics_max_message_bytes_are_split_until_they_fit(kafka_broker: Any) -> None:
    """batch.size (16 KiB) over a topic's max.message.bytes (300): Apache Kafka refuses the batch, the split's first
    piece and then its halves until they fit (Java's split since KAFKA-8350); every record lands once, in order
    (read back by confluent-kafka). Before, the same piece was refused until delivery.timeout.ms."""
    topic = f"it-split-{uuid.uuid4().hex[:8]}"
    bootstrap = kafka_broker.bootstrap_servers
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 1, config={"max.message.bytes": "300"})], timeout_ms=30_000)[
            topic].result()
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "delivery.timeout.ms": 10_000,
                   "request.timeout.ms": 5_000}) as producer:
        futures = [producer.send(topic, b"%02d" % i + b"v" * 48, partition=0) for i in range(20)]
        assert [f.result(30).offset for f in futures] == list(range(20))
    assert [r.value for r in read_back(bootstrap, topic)] == [b"%02d" % i + b"v" * 48 for i in range(20)]


def test_multi_broker_mock_cluster_all_records_arrive(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("it-mock", leaders=[1, 2, 3, 1])
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers}) as producer:
        assert [p.leader for p in producer.partitions_for("it-mock")] == [1, 2, 3, 1]
    read = produce_and_verify(mock_cluster.bootstrap_servers, "it-mock", {"compression.type": "lz4"})
    assert len({r.partition for r in read}) >= 4
