"""Independent read-back for the demo and the tests: confluent-kafka's Consumer (librdkafka, check.crcs=true) reads
every partition from the beginning to the high watermark its Fetch answers report; `count_back` counts without
keeping the records. Never ListOffsets "latest": Tansu's answer can be below what is readable and acknowledged.
Needs the `broker` extra (confluent-kafka)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
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
              isolation_level: str = "read_uncommitted", config: Mapping[str, Any] | None = None,
              check_crcs: bool = True) -> list[ReadRecord]:
    """All records of `topic`, in partition then offset order. isolation_level="read_committed" skips records of
    aborted and open transactions; `config`: extra librdkafka settings (e.g. security.protocol, ssl.ca.location,
    sasl.* to read through a TLS or SASL listener); check_crcs=False for brokers that write control batches without
    a CRC (librdkafka's mock cluster)."""
    records = [ReadRecord(msg.partition(), msg.offset(), msg.key(), msg.value(), list(msg.headers() or []),
                          msg.timestamp()[1])
               for msg in _messages(bootstrap_servers, topic, timeout_s, isolation_level, config, check_crcs)]
    records.sort(key=lambda r: (r.partition, r.offset))
    return records


@dataclass(frozen=True, slots=True)
class ReadCounts:
    records: int
    per_partition: dict[int, int]
    unique: int  # distinct values of the header asked for (0 if none was)


def count_back(bootstrap_servers: str, topic: str, *, unique_header: str | None = None,
               timeout_s: float = 120.0) -> ReadCounts:
    """Counts `topic`'s records per partition without keeping them; with `unique_header`, also how many distinct
    values that header has (each record's first header of that name), to tell duplicates from distinct records."""
    per_partition: dict[int, int] = {}
    seen: set[bytes | None] = set()
    for msg in _messages(bootstrap_servers, topic, timeout_s, "read_uncommitted", None, True):
        per_partition[msg.partition()] = per_partition.get(msg.partition(), 0) + 1
        if unique_header is not None:
            seen.add(next((v for k, v in msg.headers() or () if k == unique_header), None))
    return ReadCounts(sum(per_partition.values()), dict(sorted(per_partition.items())), len(seen))


def _messages(bootstrap_servers: str, topic: str, timeout_s: float, isolation_level: str,
              config: Mapping[str, Any] | None, check_crcs: bool) -> Iterator[Any]:
    """Every message of every partition of `topic` from offset 0 until the consumer's position reaches the high
    watermark (the last stable offset with read_committed) of a Fetch answer, which librdkafka caches per partition."""
    try:
        from confluent_kafka import Consumer, TopicPartition
    except ImportError as e:  # pragma: no cover - dev extra missing
        raise RuntimeError("read_back needs confluent-kafka: pip install 'cykafka[broker]'") from e
    consumer: Any = Consumer({
        "bootstrap.servers": bootstrap_servers, "group.id": f"cykafka-verify-{time.monotonic_ns()}",
        "enable.auto.commit": False, "check.crcs": check_crcs, "isolation.level": isolation_level,
        "fetch.max.bytes": 50 * 1024 * 1024, "max.partition.fetch.bytes": 10 * 1024 * 1024, **(config or {}),
    })
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s)
        partitions = sorted(metadata.topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        position = dict.fromkeys(partitions, 0)
        high = dict.fromkeys(partitions, -1)  # from the last Fetch answer; -1 until one came
        deadline = time.monotonic() + timeout_s
        while any(high[p] < 0 or position[p] < high[p] for p in partitions):
            if time.monotonic() > deadline:
                missing = {p: "no Fetch answer" if high[p] < 0 else high[p] - position[p] for p in partitions
                           if high[p] < 0 or position[p] < high[p]}
                raise TimeoutError(f"read_back of {topic!r} timed out; records not yet read per partition: {missing}")
            for msg in consumer.consume(10000, timeout=0.5):
                if msg.error() is not None:
                    raise RuntimeError(f"consumer error: {msg.error()}")
                yield msg
                position[msg.partition()] = msg.offset() + 1
            # the consumer's position also moves past control records (transaction markers) and aborted ones
            for tp in consumer.position([TopicPartition(topic, p) for p in partitions]):
                if tp.offset >= 0:
                    position[tp.partition] = max(position[tp.partition], tp.offset)
            for p in partitions:
                high[p] = max(high[p], consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)[1])
    finally:
        consumer.close()
