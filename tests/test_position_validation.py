"""KIP-320 in the consumer: after a leader change the position is checked with OffsetForLeaderEpoch before fetching
(Java's SubscriptionState validation), and a truncated log is reported as Java does: the position moves to the first
offset known to diverge (with auto.offset.reset) or LogTruncationError (with none). The decision (`divergence`) alone,
then the Consumer against the fake cluster in wire mode (every request through the real codec), whose brokers keep
leader epochs as Kafka does and can elect an unclean leader. The real leader changes on Apache Kafka are in
tests/test_kafka_failures.py."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fakes import fake_cluster, fake_producer

from cykafka import Consumer, LogTruncationError, OffsetAndMetadata, TopicPartition, UnsupportedVersionError
from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.ports import Ports, TransportRequest
from cykafka.protocol import Request
from cykafka.protocol.apis import FETCH, OFFSET_FOR_LEADER_EPOCH
from cykafka.subscription_state import divergence

TOPIC = "epochs"
TP = TopicPartition(TOPIC, 0)


# -- the decision -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("position", "end_offset", "end_epoch", "expected"), [
    (10, 10, 0, None),  # the epoch ends where the consumer is: nothing lost
    (10, 25, 3, None),  # it ends later: the position is in the log
    (10, 6, 0, (6, 0)),  # it ends before the position: records 6-9 are gone, the log diverges from 6
    (10, 6, 2, (6, 2)),  # the leader's largest epoch at or below the asked one was 2: that one diverges
    (10, -1, -1, (-1, -1)),  # UNDEFINED: the leader knows no epoch that old, where it diverges is unknown
    (10, 12, -1, (-1, -1)),  # an undefined epoch is undefined whatever the offset
])
def test_divergence_decides_from_the_leaders_end_offset(position: int, end_offset: int, end_epoch: int,
                                                        expected: tuple[int, int] | None) -> None:
    assert divergence(position, end_offset, end_epoch) == expected


# -- the consumer against the fake cluster ----------------------------------------------------------------------------

class _Setup:
    """Two fake brokers in wire mode, one partition led by node 0 in leader epoch 0, a producer and a consumer (assign
    mode) run by hand under one ManualClock."""

    def __init__(self, cluster_class: type[FakeCluster] = FakeCluster, **consumer_config: Any) -> None:
        self.clock = ManualClock(auto_tick_ms=1)
        if cluster_class is FakeCluster:
            self.cluster = fake_cluster(self.clock, TOPIC, partitions=1, brokers=2, wire={})
        else:
            self.cluster = cluster_class(self.clock, num_brokers=2, wire=True)
            self.cluster.create_topic(TOPIC, 1)
        self.consumer = Consumer({"bootstrap.servers": "fake:9092", "auto.offset.reset": "earliest",
                                  **consumer_config},
                                 ports=Ports(transport=self.cluster, clock=self.clock, start_sender=False))
        self.consumer.assign([TP])
        self.consumer.seek(TP, 0)
        self.written = 0

    def write(self, count: int) -> None:
        """count records (values "0", "1", ... by write order) through a fresh producer (a new leader after an
        unclean election has no producer state)."""
        producer = fake_producer(self.cluster, self.clock, topic=TOPIC, **{"linger.ms": 0, "acks": "all"})
        futures = [producer.send(TOPIC, b"%d" % (self.written + i), partition=0) for i in range(count)]
        for _ in range(100):
            if all(f.done() for f in futures):
                break
            self.clock.advance(10)
            producer.sender.run_once()
        assert all(f.done() and f.exception(0) is None for f in futures)
        producer.close(0)
        self.written += count

    def read(self, count: int, polls: int = 200) -> list[tuple[int, bytes | None, int | None]]:
        """(offset, value, leader epoch) of the next `count` records polled (fails if fewer come)."""
        got: list[tuple[int, bytes | None, int | None]] = []
        for _ in range(polls):
            if len(got) >= count:
                break
            got += [(r.offset, r.value, r.leader_epoch) for r in self.consumer.poll(0.005)]
        assert len(got) == count, got
        return got

    def requests(self, api_key: int) -> list[tuple[int, dict[str, Any]]]:
        return [(node, r.body) for node, r in self.cluster.requests if isinstance(r, Request) and r.api_key == api_key]

    def validations(self) -> list[tuple[int, list[tuple[int, int]]]]:
        """(node, [(leader_epoch asked, current_leader_epoch)]) of each OffsetForLeaderEpoch sent."""
        return [(node, [(p["leader_epoch"], p["current_leader_epoch"]) for t in body["topics"]
                        for p in t["partitions"]]) for node, body in self.requests(OFFSET_FOR_LEADER_EPOCH.key)]

    def close(self) -> None:
        self.consumer.close(0)


def _values(first: int, last: int) -> list[bytes]:
    return [b"%d" % i for i in range(first, last + 1)]


def test_a_leader_change_is_validated_before_fetching_from_the_new_leader() -> None:
    s = _Setup()
    s.write(10)
    assert s.read(10) == [(i, b"%d" % i, 0) for i in range(10)]
    assert s.validations() == []  # no leader change yet: nothing to validate
    s.cluster.move_leader(TOPIC, 0, 1)  # epoch 1 from offset 10; the consumer hears NOT_LEADER from node 0
    s.write(5)
    assert s.read(5) == [(i, b"%d" % i, 1) for i in range(10, 15)]  # nothing lost, nothing read twice
    assert s.validations() == [(1, [(0, 1)])]  # at the new leader: where does epoch 0 end? (current epoch 1)
    epochs = {(node, p["current_leader_epoch"]) for node, body in s.requests(FETCH.key) for t in body["topics"]
              for p in t["partitions"]}
    assert epochs == {(0, 0), (1, 1)}  # every Fetch names the leader epoch its position was checked against
    assert s.consumer.position(TP) == 15
    s.close()


def test_a_truncated_log_moves_the_position_to_the_first_offset_known_to_diverge(
        caplog: pytest.LogCaptureFixture) -> None:
    s = _Setup()
    s.write(10)
    assert [offset for offset, _, _ in s.read(10)] == list(range(10))  # offsets 0-9 read in epoch 0
    s.cluster.unclean_election(TOPIC, 0, leader=1, log_end_offset=6)  # node 1 had only 0-5: 6-9 are gone
    s.write(4)  # new records at offsets 6-9, epoch 1
    with caplog.at_level(logging.INFO, logger="cykafka"):
        got = s.read(4)
    # without validation the consumer fetches at 10, past the new log's end, and never sees these four
    assert got == [(6 + i, b"%d" % (10 + i), 1) for i in range(4)]
    assert s.validations() == [(1, [(0, 1)])]
    assert any("truncation detected" in r.getMessage() and "resetting the position to 6" in r.getMessage()
               for r in caplog.records)
    s.close()


def test_a_truncated_log_with_auto_offset_reset_none_raises_log_truncation_error_until_sought() -> None:
    s = _Setup(**{"auto.offset.reset": "none"})
    s.write(10)
    assert len(s.read(10)) == 10
    s.cluster.unclean_election(TOPIC, 0, leader=1, log_end_offset=6)
    s.write(4)
    errors: list[LogTruncationError] = []
    for _ in range(100):
        try:
            assert s.consumer.poll(0.005) == []
        except LogTruncationError as e:
            errors.append(e)
            if len(errors) == 2:
                break
    assert len(errors) == 2  # raised again by a later poll: the partition waits for a seek
    error = errors[0]
    assert error.fetch_offsets == {TP: 10} and error.divergent_offsets == {TP: (6, 0)} and error.partitions == [TP]
    assert "epochs [0]: position 10, diverges from offset 6 (leader epoch 0)" in str(error)
    assert not error.retriable
    s.consumer.seek(TP, OffsetAndMetadata(error.divergent_offsets[TP][0]))
    assert s.read(4) == [(6 + i, b"%d" % (10 + i), 1) for i in range(4)]
    s.close()


def test_a_seek_with_a_leader_epoch_is_validated_first() -> None:
    """seek(tp, OffsetAndMetadata(offset, leader_epoch=...)), as a committed offset restores a position: checked
    with the leader before the first fetch (Java's seekUnvalidated)."""
    s = _Setup()
    s.write(10)
    s.cluster.unclean_election(TOPIC, 0, leader=1, log_end_offset=6)
    s.write(4)
    s.consumer.seek(TP, OffsetAndMetadata(9, leader_epoch=0))  # read up to 8 in epoch 0, which ends at 6 now
    assert s.read(4) == [(6 + i, b"%d" % (10 + i), 1) for i in range(4)]
    assert s.validations() == [(1, [(0, 1)])]
    s.consumer.seek(TP, OffsetAndMetadata(8, leader_epoch=1))  # in the current epoch: valid as it is
    assert s.read(2) == [(8, b"12", 1), (9, b"13", 1)]
    assert s.validations()[1:] == [(1, [(1, 1)])]
    s.close()


class _WithoutTheApi(FakeCluster):
    """A broker that speaks no OffsetForLeaderEpoch (Tansu): the socket transport refuses to send it."""

    def send(self, node_id: int, request: TransportRequest, now_ms: int, handler: Any = None,
             expect_response: bool = True, timeout_ms: int | None = None) -> None:
        if request.api_key == OFFSET_FOR_LEADER_EPOCH.key:
            raise UnsupportedVersionError(f"broker {node_id} supports no version of API 23 that cykafka speaks")
        super().send(node_id, request, now_ms, handler, expect_response, timeout_ms)


def test_a_broker_without_offset_for_leader_epoch_is_not_asked() -> None:
    s = _Setup(_WithoutTheApi)
    s.write(10)
    assert len(s.read(10)) == 10
    s.cluster.move_leader(TOPIC, 0, 1)
    s.write(5)
    assert [offset for offset, _, _ in s.read(5)] == list(range(10, 15))  # fetched on, as Java does there
    s.close()


def test_commits_carry_the_leader_epoch_of_the_position() -> None:
    s = _Setup(**{"group.id": "g", "enable.auto.commit": False})
    s.write(3)
    assert len(s.read(3)) == 3
    assert s.consumer._coordinator.offsets_to_commit(None, "commit") == {TP: OffsetAndMetadata(3, leader_epoch=0)}
    s.close()
