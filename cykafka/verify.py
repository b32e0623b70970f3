"""Independent read-back for the demo and the tests: confluent-kafka's Consumer (librdkafka, check.crcs=true) reads
every partition from the beginning to its high watermark. Needs the `dev` extra (confluent-kafka)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ReadRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp_ms: int


def read_back(bootstrap_servers: str, topic: str, *, timeout_s: float = 60.0,
              isolation_level: str = "read_uncommitted", check_crcs: bool = True) -> list[ReadRecord]:
    """All records of `topic`, in partition then offset order. isolation_level="read_committed" skips records of
    aborted and open transactions; check_crcs=False for brokers that write control batches without a CRC
    (librdkafka's mock cluster)."""
    try:
        from confluent_kafka import Consumer, TopicPartition
    except ImportError as e:  # pragma: no cover - dev extra missing
        raise RuntimeError("read_back needs confluent-kafka: pip install 'cykafka[dev]'") from e
    consumer: Any = Consumer({
        "bootstrap.servers": bootstrap_servers, "group.id": f"cykafka-verify-{time.monotonic_ns()}",
        "enable.auto.commit": False, "check.crcs": check_crcs, "isolation.level": isolation_level,
        "fetch.max.bytes": 50 * 1024 * 1024, "max.partition.fetch.bytes": 10 * 1024 * 1024,
    })
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s)
        partitions = sorted(metadata.topics[topic].partitions)
        high = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions if high[p] > 0])
        records: list[ReadRecord] = []
        position = dict.fromkeys(partitions, 0)
        deadline = time.monotonic() + timeout_s
        while any(position[p] < high[p] for p in partitions):
            if time.monotonic() > deadline:
                missing = {p: high[p] - position[p] for p in partitions if position[p] < high[p]}
                raise TimeoutError(f"read_back of {topic!r} timed out; records not yet read per partition: {missing}")
            for msg in consumer.consume(10000, timeout=0.5):
                if msg.error() is not None:
                    raise RuntimeError(f"consumer error: {msg.error()}")
                records.append(ReadRecord(msg.partition(), msg.offset(), msg.key(), msg.value(),
                                          list(msg.headers() or []), msg.timestamp()[1]))
                position[msg.partition()] = msg.offset() + 1
            # the consumer's position also moves past control records (transaction markers) and aborted ones
            for tp in consumer.position([TopicPartition(topic, p) for p in partitions if high[p] > 0]):
                if tp.offset >= 0:
                    position[tp.partition] = max(position[tp.partition], tp.offset)
        records.sort(key=lambda r: (r.partition, r.offset))
        return records
    finally:
        consumer.close()
