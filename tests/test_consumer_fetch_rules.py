"""The consumer's fetch rules that a mutation round found untested (issue 24), each against the fake cluster in wire
mode (every request through the real codec) under one ManualClock, a producer and a consumer run by hand: a batch
larger than max.partition.fetch.bytes grows the fetch size; OFFSET_OUT_OF_RANGE resets by auto.offset.reset
(latest, none; earliest is in tests/test_consumer.py); a paused partition's buffered records stay buffered;
end_offsets() and seek_to_end() under read_committed stop at the last stable offset; a seek into the middle of a
compressed batch starts at the offset sought (poll and poll_batch)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from fakes import fake_producer

from cykafka import Consumer, NoOffsetForPartitionError, TopicPartition
from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.ports import Ports
from cykafka.protocol import Request
from cykafka.protocol.apis import FETCH

TOPIC = "rules"
TP0, TP1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
POLLS = 300


class _Setup:
    """One fake broker in wire mode, a topic of `partitions` partitions, a consumer assigned to them (at offset 0)."""

    def __init__(self, partitions: int = 1, cluster: dict[str, Any] | None = None, seek: bool = True,
                 **consumer_config: Any) -> None:
        self.clock = ManualClock(auto_tick_ms=1)
        self.cluster = FakeCluster(self.clock, num_brokers=1, wire=True, **(cluster or {}))
        self.cluster.create_topic(TOPIC, partitions)
        self.tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
        self.consumer = Consumer({"bootstrap.servers": "fake:9092", "auto.offset.reset": "earliest",
                                  **{k.replace("_", "."): v for k, v in consumer_config.items()}},
                                 ports=Ports(transport=self.cluster, clock=self.clock, start_sender=False))
        self.consumer.assign(self.tps)
        if seek:
            for tp in self.tps:
                self.consumer.seek(tp, 0)

    def write(self, values: list[bytes], partition: int = 0, **producer_config: Any) -> None:
        """The values as records of `partition`, sent together (one batch when they fit batch.size)."""
        producer = fake_producer(self.cluster, self.clock, topic=TOPIC,
                                 **{"linger.ms": 0, "batch.size": 1 << 20, **producer_config})
        futures = [producer.send(TOPIC, value, partition=partition) for value in values]
        for _ in range(100):
            if all(f.done() for f in futures):
                break
            self.clock.advance(10)
            producer.sender.run_once()
        assert all(f.done() and f.exception(0) is None for f in futures)
        producer.close(0)

    def read(self, count: int) -> list[tuple[int, int, bytes | None]]:
        """(partition, offset, value) of the next `count` records polled (fails if fewer come)."""
        got: list[tuple[int, int, bytes | None]] = []
        for _ in range(POLLS):
            if len(got) >= count:
                break
            got += [(r.partition, r.offset, r.value) for r in self.consumer.poll(0.005)]
        assert len(got) == count, got
        return got

    def fetch_sizes(self) -> list[int]:
        """partition_max_bytes of partition 0 in each Fetch sent."""
        return [p["partition_max_bytes"] for _, r in self.cluster.requests
                if isinstance(r, Request) and r.api_key == FETCH.key
                for t in r.body["topics"] for p in t["partitions"] if p["partition"] == 0]

    def fetch_offsets(self) -> list[int]:
        """fetch_offset of partition 0 in each Fetch that names it."""
        return [p["fetch_offset"] for _, r in self.cluster.requests
                if isinstance(r, Request) and r.api_key == FETCH.key
                for t in r.body["topics"] for p in t["partitions"] if p["partition"] == 0]

    def close(self) -> None:
        self.consumer.close(0)


def test_a_batch_larger_than_max_partition_fetch_bytes_grows_the_fetch_size() -> None:
    """An answer holding no whole batch (a broker before KIP-74 cut the first batch at the partition's limit) makes
    the consumer ask for twice as much, until the batch fits; then back to max.partition.fetch.bytes is not needed:
    the grown size stays for the partition. Without the growth the record never comes."""
    s = _Setup(cluster={"whole_first_batch": False}, max_partition_fetch_bytes=1024)
    s.write([b"x" * 5000])
    assert s.read(1) == [(0, 0, b"x" * 5000)]
    sizes = s.fetch_sizes()
    assert sizes[0] == 1024 and sizes[:4] == [1024, 2048, 4096, 8192], sizes
    s.close()


def test_offset_out_of_range_resets_to_the_end_with_latest() -> None:
    """OFFSET_OUT_OF_RANGE (a position past the log's end) with auto.offset.reset=latest: the position moves to the
    end, so only records written after it are read (earliest would read the partition again from 0)."""
    s = _Setup(auto_offset_reset="latest")
    s.write([b"old-%d" % i for i in range(5)])
    s.consumer.seek(TP0, 50)
    for _ in range(20):
        assert s.consumer.poll(0.005) == []
    assert s.consumer.position(TP0) == 5
    s.write([b"new"])
    assert s.read(1) == [(0, 5, b"new")]
    s.close()


def test_offset_out_of_range_with_none_raises_no_offset_for_partition() -> None:
    """auto.offset.reset=none: OFFSET_OUT_OF_RANGE leaves the partition without a position and poll raises
    NoOffsetForPartitionError naming it (Java: OffsetOutOfRangeException, a NoOffsetForPartition's sibling); a seek
    goes on from there."""
    s = _Setup(auto_offset_reset="none")
    s.write([b"v%d" % i for i in range(5)])
    s.consumer.seek(TP0, 50)
    with pytest.raises(NoOffsetForPartitionError, match=r"rules \[0\]") as caught:
        for _ in range(POLLS):
            assert s.consumer.poll(0.005) == []
    assert caught.value.partitions == [TP0]
    s.consumer.seek(TP0, 3)
    assert s.read(2) == [(0, 3, b"v3"), (0, 4, b"v4")]
    s.close()


def test_a_paused_partitions_buffered_records_are_not_returned() -> None:
    """Records of a partition fetched before pause() stay in the buffer: poll hands out none of them while it is
    paused (only the other partition's), and after resume() every one, in order."""
    s = _Setup(partitions=2, max_poll_records=1)
    s.write([b"a%d" % i for i in range(5)], partition=0)
    s.write([b"b%d" % i for i in range(5)], partition=1)
    first = s.read(2)  # both answers are buffered by now, one record handed out per poll
    held = {p: sum(1 for q, _, _ in first if q == p) for p in (0, 1)}
    s.consumer.pause([TP0])
    during = s.read(5 - held[1])
    assert {p for p, _, _ in during} == {1}
    for _ in range(20):
        assert s.consumer.poll(0.005) == []
    s.consumer.resume([TP0])
    after = s.read(5 - held[0])
    assert [(p, o) for p, o, _ in after] == [(0, o) for o in range(held[0], 5)]
    s.close()


def test_a_caller_that_does_not_poll_leaves_at_most_two_answers_fetched_ahead() -> None:
    """Records written one at a time while the caller does not poll: the network loop (driven by hand here) files
    two answers of the partition, then fetches it no more (the build before fetched and filed one answer per record,
    without end). A seek makes those two stale: the partition is fetched again at once, before any poll. The caller's
    polls then take every record from the offset sought, once and in order, the fetching resuming as they do."""
    s = _Setup(max_poll_records=1)

    def turns(count: int) -> None:
        for _ in range(count):
            s.clock.advance(10)
            s.consumer.network.run_once(0)

    for i in range(12):
        s.write([b"v%d" % i])
        turns(5)
    assert len(s.consumer._buffer.items) == 2
    sent = len(s.fetch_offsets())
    assert sent <= 3  # two answered, one more in flight at most
    s.consumer.seek(TP0, 3)
    turns(5)
    assert s.fetch_offsets()[sent] == 3
    assert [o for _, o, _ in s.read(9)] == list(range(3, 12))
    s.close()


def test_taking_records_wakes_the_network_thread_only_when_an_answer_leaves_the_buffer() -> None:
    """Two answers of five records held at the partition's end, one record per poll: the polls that leave the first
    answer in the buffer do not wake the network thread (nothing it could send changed; waking it on every poll cost
    the consume bench ~35% of its records/s), the one that takes the last record does, once."""
    s = _Setup(max_poll_records=1)

    def turns() -> None:
        for _ in range(5):
            s.clock.advance(10)
            s.consumer.network.run_once(0)

    turns()  # connected, the first Fetch waiting at the broker
    for first in (0, 5):
        s.write([b"v%d" % i for i in range(first, first + 5)])
        turns()
    assert len(s.consumer._buffer.items) == 2
    wakeups: list[int] = []
    s.consumer._collector.wakeup = lambda: wakeups.append(1)
    assert [o for _, o, _ in s.read(4)] == [0, 1, 2, 3]
    assert wakeups == []
    assert [o for _, o, _ in s.read(1)] == [4]
    assert wakeups == [1]
    s.close()


def test_a_caller_that_does_not_poll_is_fetched_ahead_while_catching_up() -> None:
    """Records already written, one answer holding one record (max.partition.fetch.bytes below two): behind the
    partition's end the fetcher reads ahead as far as fetch.max.bytes allows, not two answers (a consumer catching
    up gets full answers one after the other, as the build before)."""
    s = _Setup(max_poll_records=1, max_partition_fetch_bytes=100)
    s.write([b"v%02d" % i for i in range(12)], **{"batch.size": 90})  # about one record per batch
    for _ in range(60):
        s.clock.advance(10)
        s.consumer.network.run_once(0)
    assert len(s.consumer._buffer.items) > 4
    assert [o for _, o, _ in s.read(12)] == list(range(12))
    s.close()


def test_end_offsets_and_seek_to_end_under_read_committed_stop_at_the_last_stable_offset() -> None:
    """A transaction left open from offset 3: a read_committed consumer's end is the last stable offset (3), a
    read_uncommitted one's the high watermark (5)."""
    committed = _Setup(isolation_level="read_committed")
    committed.write([b"v%d" % i for i in range(5)])
    for record in committed.cluster.log(TOPIC, 0)[3:]:
        record.txn_state = "open"  # what the broker's answers say of a transaction not ended yet
    assert committed.consumer.end_offsets([TP0]) == {TP0: 3}
    committed.consumer.seek_to_end([TP0])
    assert committed.consumer.position(TP0) == 3
    committed.close()
    uncommitted = _Setup()
    uncommitted.write([b"v%d" % i for i in range(5)])
    for record in uncommitted.cluster.log(TOPIC, 0)[3:]:
        record.txn_state = "open"
    assert uncommitted.consumer.end_offsets([TP0]) == {TP0: 5}
    uncommitted.consumer.seek_to_end([TP0])
    assert uncommitted.consumer.position(TP0) == 5
    uncommitted.close()


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_seek_into_the_middle_of_a_compressed_batch_starts_there(codec: str) -> None:
    """Ten records in one batch of each codec; seek(6): the Fetch answers the whole batch from offset 0 and the
    records before 6 are skipped after decompression, by poll and by poll_batch."""
    s = _Setup(seek=False)
    s.write([b"v%d" % i for i in range(10)], **{"compression.type": codec})
    assert len(s.cluster.topics[TOPIC][0].log_batches) == 1  # one batch
    s.consumer.seek(TP0, 6)
    assert s.read(4) == [(0, o, b"v%d" % o) for o in range(6, 10)]
    if importlib.util.find_spec("pyarrow"):
        s.consumer.seek(TP0, 7)
        rows: list[dict[str, Any]] = []
        for _ in range(POLLS):
            if len(rows) >= 3:
                break
            rows += s.consumer.poll_batch(0.005).to_pylist()
        assert [(r["offset"], r["value"]) for r in rows] == [(o, b"v%d" % o) for o in range(7, 10)]
    s.close()
