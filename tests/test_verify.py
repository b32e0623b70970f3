"""cykafka.verify reads until the high watermark of the Fetch answers, never ListOffsets "latest" (Tansu answers the
last batch's base offset + 1 there, below what is readable and acknowledged)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from cykafka import Producer
from cykafka.broker import EmbeddedBroker
from cykafka.verify import count_back, read_back

confluent_kafka = pytest.importorskip("confluent_kafka")
TOPIC = "verify"
BATCHES = {0: [10], 1: [10, 10], 2: []}  # per partition, the record count of each batch


class TansuLikeConsumer:
    """A consumer of a broker whose ListOffsets "latest" is the last batch's base offset + 1 (Tansu's answer) while
    Fetch answers carry the true high watermark. consume() hands out one message per call, as it may."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.ends = {p: sum(sizes) for p, sizes in BATCHES.items()}
        self.queue: list[tuple[int, int]] = []
        self.next_offset: dict[int, int] = {}
        self.fetched = False

    def list_topics(self, topic: str, timeout: float) -> Any:
        return SimpleNamespace(topics={topic: SimpleNamespace(partitions=dict.fromkeys(BATCHES))})

    def get_watermark_offsets(self, tp: Any, timeout: float | None = None, cached: bool = False) -> tuple[int, int]:
        if cached:  # what the last Fetch answer said
            return (0, self.ends[tp.partition]) if self.fetched else (-1001, -1001)
        sizes = BATCHES[tp.partition]
        return 0, sum(sizes[:-1]) + 1 if sizes else 0  # ListOffsets "latest", as Tansu answers it

    def assign(self, partitions: list[Any]) -> None:
        self.queue = [(tp.partition, o) for tp in partitions for o in range(tp.offset, self.ends[tp.partition])]

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        self.fetched = True
        if not self.queue:
            return []
        partition, offset = self.queue.pop(0)
        self.next_offset[partition] = offset + 1
        return [SimpleNamespace(error=lambda: None, partition=lambda: partition, offset=lambda: offset,
                                key=lambda: None, value=lambda: b"%d-%d" % (partition, offset), headers=lambda: None,
                                timestamp=lambda: (1, 0))]

    def position(self, partitions: list[Any]) -> list[Any]:
        return [confluent_kafka.TopicPartition(tp.topic, tp.partition, self.next_offset.get(tp.partition, -1001))
                for tp in partitions]

    def close(self) -> None:
        pass


def test_read_back_reads_to_the_fetch_high_watermark_not_list_offsets_latest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confluent_kafka, "Consumer", TansuLikeConsumer)
    records = read_back("fake:9092", TOPIC, timeout_s=5)
    assert [(r.partition, r.offset) for r in records] == [(p, o) for p, sizes in BATCHES.items()
                                                          for o in range(sum(sizes))]
    assert count_back("fake:9092", TOPIC, timeout_s=5).per_partition == {0: 10, 1: 20}


def test_read_back_on_tansu_reads_every_batch_and_stops_at_empty_partitions(broker: EmbeddedBroker) -> None:
    """Tansu: ListOffsets says 1 and 11 here; the Fetch high watermarks say 10 and 20 (and 0 for the empty ones)."""
    topic = "verify-batches"
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 50}) as producer:
        for partition, sizes in BATCHES.items():
            for size in sizes:
                producer.send_batch(topic, [b"v"] * size, partitions=partition)
                assert producer.flush(30) == 0
    records = read_back(broker.bootstrap_servers, topic, timeout_s=30)
    assert [(r.partition, r.offset) for r in records] == [(p, o) for p, sizes in BATCHES.items()
                                                          for o in range(sum(sizes))]
