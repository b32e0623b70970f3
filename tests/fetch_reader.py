"""An independent read-back for the CLI and distribution tests: confluent-kafka's Consumer (librdkafka,
check.crcs=true) assigned every partition from offset 0, reading until its position reaches the high watermark the
Fetch responses report (`get_watermark_offsets(cached=True)`), never ListOffsets "latest" (wrong on Tansu).
Standalone (confluent-kafka only): tests/dist_smoke.py runs it in a fresh venv."""

from __future__ import annotations

import time
from typing import Any, NamedTuple


class Fetched(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def read_all(bootstrap_servers: str, topic: str, *, timeout_s: float = 60.0) -> list[Fetched]:
    """Every record of `topic`, in partition then offset order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer: Any = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"fetch-reader-{time.time_ns()}",
                              "enable.auto.commit": False, "check.crcs": True})
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        position = dict.fromkeys(partitions, 0)
        records: list[Fetched] = []
        deadline = time.monotonic() + timeout_s
        while True:
            for msg in consumer.consume(10_000, timeout=0.2):
                if msg.error() is not None:
                    raise RuntimeError(f"consumer error: {msg.error()}")
                records.append(Fetched(msg.partition(), msg.offset(), msg.key(), msg.value(),
                                       list(msg.headers() or [])))
                position[msg.partition()] = msg.offset() + 1
            high = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)[1] for p in partitions}
            if all(high[p] >= 0 and position[p] >= high[p] for p in partitions):  # < 0: no Fetch answer yet
                return sorted(records)
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic!r}: position {position}, Fetch high watermarks {high}")
    finally:
        consumer.close()
