"""cykafka.Consumer in assign mode against the embedded broker (Tansu) and librdkafka's mock cluster: records written
by confluent-kafka read back equal, poll_batch equal to poll, positions and offsets, commits seen by confluent-kafka,
auto.offset.reset, pause/resume, a bounded close with the broker gone, a leader move, typed errors for bad inputs."""

from __future__ import annotations

import math
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from cykafka import (
    Admin,
    ConcurrentAccessError,
    Consumer,
    CorruptRecordError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidTopicError,
    KafkaError,
    NewTopic,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    Producer,
    TimestampOverflowError,
    TopicPartition,
)
from cykafka.broker import EmbeddedBroker
from cykafka.protocol.apis import FETCH, LIST_OFFSETS
from cykafka.verify import read_back

confluent_kafka = pytest.importorskip("confluent_kafka")
POLLS = 200  # bound of every poll loop (each poll waits at most 0.5 s)


def _topic(prefix: str = "consume") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _consumer(bootstrap: str, **config: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                     "default.api.timeout.ms": 30000, **{k.replace("_", "."): v for k, v in config.items()}})


def _write(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes | None, list[Any]]],
           first_timestamp_ms: int = 1_700_000_000_000, **config: Any) -> None:
    """(partition, key, value, headers) records written by confluent-kafka, every one acknowledged."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    failures: list[Any] = []
    for i, (partition, key, value, headers) in enumerate(records):
        producer.produce(topic, value, key, partition=partition, headers=headers, timestamp=first_timestamp_ms + i,
                         on_delivery=lambda err, _msg: failures.append(err) if err else None)
    assert producer.flush(30) == 0 and not failures


def _poll_all(consumer: Consumer, count: int) -> list[Any]:
    records: list[Any] = []
    for _ in range(POLLS):
        if len(records) >= count:
            break
        batch = consumer.poll(0.5)
        assert len(batch) <= consumer.config.max_poll_records
        records += batch
    return records


def _rows(records: Iterator[Any] | list[Any]) -> list[tuple[Any, ...]]:
    return sorted((r.topic, r.partition, r.offset, r.timestamp_ms, r.key, r.value, [tuple(h) for h in r.headers])
                  for r in records)


def _mixed(count: int, partitions: int = 2) -> list[tuple[int, bytes | None, bytes | None, list[Any]]]:
    return [(i % partitions, None if i % 5 == 0 else b"k%d" % i, None if i % 7 == 0 else b"v%d" % i * (i % 13),
             [("h", b"x%d" % i), ("empty", None)] if i % 3 == 0 else []) for i in range(count)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_records_written_by_confluent_kafka_read_back_equal(broker: EmbeddedBroker, codec: str) -> None:
    topic = _topic(codec)
    _write(broker.bootstrap_servers, topic, _mixed(300), **{"compression.type": codec})
    expected = read_back(broker.bootstrap_servers, topic)
    with _consumer(broker.bootstrap_servers, max_poll_records=64) as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got = _poll_all(consumer, 300)
    assert len(got) == 300
    assert _rows(got) == sorted((topic, r.partition, r.offset, r.timestamp_ms, r.key, r.value,
                                 [tuple(h) for h in r.headers]) for r in expected)
    for partition in (0, 1):
        offsets = [r.offset for r in got if r.partition == partition]
        assert offsets == list(range(len(offsets)))  # in order, none twice


def test_poll_batch_equals_poll(broker: EmbeddedBroker) -> None:
    pytest.importorskip("pyarrow")
    topic = _topic("batch")
    _write(broker.bootstrap_servers, topic, _mixed(200), **{"compression.type": "lz4"})
    with _consumer(broker.bootstrap_servers) as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        records = _poll_all(consumer, 200)
    rows = []
    with _consumer(broker.bootstrap_servers) as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        for _ in range(POLLS):
            if len(rows) >= 200:
                break
            batch = consumer.poll_batch(0.5, max_records=50)
            assert batch.num_rows <= 50
            rows += batch.to_pylist()
        empty = consumer.poll_batch(0)
    assert empty.num_rows == 0 and empty.schema == batch.schema
    as_records = sorted((r["topic"], r["partition"], r["offset"], int(r["timestamp"].timestamp() * 1000), r["key"],
                         r["value"], [(h["key"], h["value"]) for h in r["headers"] or []]) for r in rows)
    assert as_records == _rows(records)


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_end_offsets_of_a_fetching_consumer_are_one_listoffsets_on_kafka(broker: Any, isolation: str) -> None:
    """Java's endOffsets: ListOffsets latest, the high watermark (the last stable offset with read_committed: a
    transaction left open at offset 2). A broker that reports finalized features (Apache Kafka) is asked that alone;
    Tansu, whose "latest" is one batch short, also gets the one-byte Fetch at it that reads the true watermark. A
    consumer fetching meanwhile keeps a long poll in flight, which each request waits behind on its connection: the
    second request made end_offsets take up to two fetch.max.wait.ms on Kafka (1.0 s) where Java's takes one."""
    topic = _topic("ends")
    tp = TopicPartition(topic, 0)
    bootstrap = broker.bootstrap_servers
    _write(bootstrap, topic, [(0, None, b"v0", []), (0, None, b"v1", [])])
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": f"open-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"open", partition=0)
    assert producer.flush(30) == 0
    with _consumer(bootstrap, isolation_level=isolation) as consumer:
        consumer.assign([tp])
        assert [r.value for r in _poll_all(consumer, 2)][:2] == [b"v0", b"v1"]
        consumer.poll(0.1)  # a long poll at the end goes out
        sent: list[tuple[int, int]] = []  # (api key, a Fetch's max_wait_ms: end_offsets' waits 1 ms) sent meanwhile
        send = consumer._transport.send

        def recorded(node_id: int, request: Any, *args: Any, **kwargs: Any) -> Any:
            sent.append((request.api_key, request.body.get("max_wait_ms", -1)))
            return send(node_id, request, *args, **kwargs)

        consumer._transport.send = recorded  # type: ignore[method-assign]
        ends = consumer.end_offsets([tp])
    producer.abort_transaction(30)
    assert ends == {tp: 2 if isolation == "read_committed" else 3}
    asked = [api for api, max_wait_ms in sent if api == LIST_OFFSETS.key or (api, max_wait_ms) == (FETCH.key, 1)]
    assert asked == ([LIST_OFFSETS.key] if broker.__class__.__name__ != "EmbeddedBroker" else
                     [LIST_OFFSETS.key, FETCH.key]), sent


def test_seek_position_and_offsets(broker: EmbeddedBroker) -> None:
    topic = _topic("seek")
    tp = TopicPartition(topic, 0)
    for i in range(10):  # one batch each: Tansu's ListOffsets by timestamp answers a batch's first offset
        _write(broker.bootstrap_servers, topic, [(0, None, b"v%d" % i, [])], 1_700_000_000_000 + i)
    one_batch = TopicPartition(topic, 1)
    _write(broker.bootstrap_servers, topic, [(1, None, b"v", [])] * 10, **{"linger.ms": 200})
    with _consumer(broker.bootstrap_servers) as consumer:
        consumer.assign([tp, one_batch])
        assert consumer.assignment() == {tp, one_batch}
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        # the high watermark: Tansu's ListOffsets latest would say 1 for the partition holding one batch of 10
        assert consumer.end_offsets([tp, one_batch]) == {tp: 10, one_batch: 10}
        consumer.assign([tp])
        assert consumer.position(tp) == 0
        consumer.seek(tp, 6)
        assert [r.offset for r in _poll_all(consumer, 4)] == [6, 7, 8, 9]
        assert consumer.position(tp) == 10
        consumer.seek_to_beginning([tp])
        assert consumer.position(tp) == 0
        consumer.seek_to_end()
        assert consumer.position(tp) == 10
        consumer.seek(tp, OffsetAndMetadata(3))
        assert _poll_all(consumer, 1)[0].offset == 3
        # Tansu looks timestamps up by its own append time and librdkafka's mock not at all: each pins one path
        found = consumer.offsets_for_times({tp: 0})
        assert found[tp] is not None and found[tp].offset == 0
        consumer.unassign()
        assert consumer.assignment() == set()


def test_commit_round_trip_seen_by_confluent_kafka(broker: EmbeddedBroker) -> None:
    topic, group = _topic("commit"), _topic("group")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    _write(broker.bootstrap_servers, topic, _mixed(40))
    with _consumer(broker.bootstrap_servers, group_id=group, enable_auto_commit=False) as consumer:
        consumer.assign(tps)
        assert consumer.committed(tps) == {tps[0]: None, tps[1]: None}
        _poll_all(consumer, 40)
        consumer.commit()
        assert {tp: om.offset for tp, om in consumer.committed(tps).items() if om} == {tps[0]: 20, tps[1]: 20}
        consumer.commit({tps[0]: 7, tps[1]: OffsetAndMetadata(9, "meta")})
        committed = consumer.committed(tps)
        assert committed[tps[0]] is not None and committed[tps[0]].offset == 7
        assert committed[tps[1]] is not None and committed[tps[1]].offset == 9  # Tansu keeps no commit metadata
        called: list[Any] = []
        consumer.commit_async({tps[0]: 11}, callback=lambda err, offsets: called.append((err, offsets)))
        for _ in range(POLLS):
            if called:
                break
            consumer.poll(0.05)
        assert called == [(None, {tps[0]: OffsetAndMetadata(11)})]
    other = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        seen = other.committed([confluent_kafka.TopicPartition(topic, 0), confluent_kafka.TopicPartition(topic, 1)],
                               timeout=20)
    finally:
        other.close()
    assert sorted((tp.partition, tp.offset) for tp in seen) == [(0, 11), (1, 9)]
    # a new consumer of the group starts at the committed offsets
    with _consumer(broker.bootstrap_servers, group_id=group) as consumer:
        consumer.assign(tps)
        assert (consumer.position(tps[0]), consumer.position(tps[1])) == (11, 9)


def test_a_raising_commit_callback_is_logged_and_poll_goes_on(broker: EmbeddedBroker,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    topic = _topic("callback")
    tp = TopicPartition(topic, 0)
    _write(broker.bootstrap_servers, topic, [(0, None, b"v", [])])
    with _consumer(broker.bootstrap_servers, group_id=_topic("group")) as consumer:
        consumer.assign([tp])
        called = threading.Event()

        def explode(err: KafkaError | None, offsets: Any) -> None:
            called.set()
            assert threading.current_thread() is threading.main_thread()
            raise RuntimeError("boom")

        consumer.commit_async({tp: 0}, callback=explode)
        records = []
        for _ in range(POLLS):
            if called.is_set():
                break
            records += consumer.poll(0.05)
        assert called.is_set() and "commit_async callback raised" in caplog.text
        assert [r.offset for r in records + _poll_all(consumer, 1 - len(records))] == [0]


def test_auto_commit_in_poll_and_on_close(broker: EmbeddedBroker) -> None:
    topic, group = _topic("auto"), _topic("group")
    tp = TopicPartition(topic, 0)
    _write(broker.bootstrap_servers, topic, [(0, None, b"v%d" % i, []) for i in range(5)])
    with _consumer(broker.bootstrap_servers, group_id=group, auto_commit_interval_ms=60000) as consumer:
        consumer.assign([tp])
        assert len(_poll_all(consumer, 5)) == 5
    with _consumer(broker.bootstrap_servers, group_id=group) as consumer:
        committed = consumer.committed([tp])[tp]
        assert committed is not None and committed.offset == 5


def test_auto_offset_reset_paths(broker: EmbeddedBroker) -> None:
    topic = _topic("reset")
    tp = TopicPartition(topic, 0)
    _write(broker.bootstrap_servers, topic, [(0, None, b"old", [])])
    with _consumer(broker.bootstrap_servers, auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        with pytest.raises(NoOffsetForPartitionError, match=rf"{topic} \[0\].*auto.offset.reset is none") as caught:
            consumer.poll(0.5)
        assert caught.value.partitions == [tp]
        consumer.seek(tp, 0)
        assert [r.value for r in _poll_all(consumer, 1)] == [b"old"]
    with _consumer(broker.bootstrap_servers, auto_offset_reset="latest") as consumer:
        consumer.assign([tp])
        assert consumer.position(tp) == 1
        _write(broker.bootstrap_servers, topic, [(0, None, b"new", [])])
        assert [r.value for r in _poll_all(consumer, 1)] == [b"new"]


def test_the_first_poll_after_assign_waits_for_the_metadata_not_a_retry_backoff(broker: EmbeddedBroker) -> None:
    """The first poll resolves the assigned partition's position before the metadata knows its leader: the
    ListOffsets goes as soon as the metadata answers (Java's awaitMetadataUpdate), not retry.backoff.ms later (8 s
    here; one poll of at most 15 s)."""
    topic = _topic("first-poll")
    _write(broker.bootstrap_servers, topic, [(0, None, b"first", [])])
    with _consumer(broker.bootstrap_servers, retry_backoff_ms=8000, retry_backoff_max_ms=8000) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        started = time.monotonic()
        got = consumer.poll(15)  # a poll longer than the backoff: before, it slept the backoff inside
        assert [r.value for r in got] == [b"first"] and time.monotonic() - started < 4


def test_pause_and_resume(broker: EmbeddedBroker) -> None:
    topic = _topic("pause")
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    _write(broker.bootstrap_servers, topic, _mixed(20))
    with _consumer(broker.bootstrap_servers) as consumer:
        consumer.assign(tps)
        consumer.pause([tps[1]])
        assert consumer.paused() == {tps[1]}
        first = _poll_all(consumer, 10)
        for _ in range(3):
            first += consumer.poll(0.2)
        assert {r.partition for r in first} == {0} and len(first) == 10
        consumer.resume([tps[1]])
        assert consumer.paused() == set()
        rest = _poll_all(consumer, 10)
        assert {r.partition for r in rest} == {1} and [r.offset for r in rest] == list(range(10))


def test_iteration_stops_on_close(broker: EmbeddedBroker) -> None:
    topic = _topic("iterate")
    _write(broker.bootstrap_servers, topic, [(0, None, b"v%d" % i, []) for i in range(3)])
    consumer = _consumer(broker.bootstrap_servers)
    consumer.assign([TopicPartition(topic, 0)])
    seen = []
    for record in consumer:
        seen.append(record.value)
        if len(seen) == 3:
            consumer.close()
    assert seen == [b"v0", b"v1", b"v2"]


def test_close_returns_by_its_deadline_with_the_broker_gone() -> None:
    own = EmbeddedBroker().start()
    topic = _topic("gone")
    tp = TopicPartition(topic, 0)
    try:
        _write(own.bootstrap_servers, topic, [(0, None, b"v", [])])
        consumer = _consumer(own.bootstrap_servers, group_id=_topic("group"))
        consumer.assign([tp])
        assert len(_poll_all(consumer, 1)) == 1
    finally:
        own.stop()
    closer = threading.Thread(target=consumer.close, args=(1.0,))
    closer.start()
    closer.join(60)  # bounded: close(1.0) keeps to its own deadline; this only keeps a broken close from hanging
    assert not closer.is_alive()
    with pytest.raises(KafkaError, match="closed"):
        consumer.poll(0)


def test_a_leader_move_and_out_of_range_on_the_mock_cluster(mock_cluster: Any) -> None:
    mock_cluster.create_topic("moving", [1, 2])
    tps = [TopicPartition("moving", 0), TopicPartition("moving", 1)]
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0}) as producer:
        for i in range(20):
            producer.send("moving", b"a%d" % i, partition=i % 2)
    with _consumer(mock_cluster.bootstrap_servers) as consumer:
        consumer.assign(tps)
        first = _poll_all(consumer, 20)
        mock_cluster.set_leader("moving", 0, 3)
        mock_cluster.set_leader("moving", 1, 1)
        with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0}) as producer:
            for i in range(20):
                producer.send("moving", b"b%d" % i, partition=i % 2)
        second = _poll_all(consumer, 20)
        assert sorted((r.partition, r.offset) for r in first + second) == sorted(
            (p, o) for p in (0, 1) for o in range(20))
        # past the end: OFFSET_OUT_OF_RANGE (Tansu never answers it) resets the position (auto.offset.reset
        # =earliest), so the partition is read again from its start
        consumer.pause([tps[1]])
        consumer.seek(tps[0], 50)
        again = _poll_all(consumer, 20)
        assert [(r.partition, r.offset) for r in again] == [(0, offset) for offset in range(20)]
        assert consumer.offsets_for_times({tps[0]: 1_700_000_000_000}) == {tps[0]: None}  # the mock finds none


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: c.assign("topic"), "assign takes an iterable of TopicPartition"),
    (lambda c: c.assign([("t", -1)]), "assign takes TopicPartition"),
    (lambda c: c.seek(TopicPartition("t", 0), -1), r"seek: offset must be an int in \[0, "),
    (lambda c: c.seek(TopicPartition("other", 0), 1), "seek: TopicPartition.*is not assigned"),
    (lambda c: c.poll(-1), "timeout must be a number of seconds >= 0"),
    (lambda c: c.poll("soon"), "timeout must be a number of seconds >= 0"),
    (lambda c: c.poll_batch(0, max_records=0), "poll_batch: max_records must be an int >= 1"),
    (lambda c: c.commit(), "commit needs a group.id"),
    (lambda c: c.committed([TopicPartition("t", 0)]), "committed needs a group.id"),
    (lambda c: c.offsets_for_times({TopicPartition("t", 0): -5}), "offsets_for_times: the timestamp"),
    (lambda c: c.pause([TopicPartition("other", 0)]), "pause: TopicPartition.*is not assigned"),
    (lambda c: c.position(TopicPartition("t", 0), timeout=-1), "timeout must be a number of seconds >= 0"),
])
def test_bad_inputs_raise_typed_errors_naming_the_argument(call: Any, message: str) -> None:
    with Consumer({"bootstrap.servers": "127.0.0.1:1"}) as consumer:
        consumer.assign([TopicPartition("t", 0)])
        with pytest.raises(InvalidArgumentError, match=message):
            call(consumer)


def test_commit_arguments_are_checked() -> None:
    with Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}) as consumer:
        with pytest.raises(InvalidArgumentError, match=r"commit: the offset of .* must be an int in \[0, "):
            consumer.commit({TopicPartition("t", 0): -3})
        with pytest.raises(InvalidArgumentError, match="commit_async: callback must be callable"):
            consumer.commit_async(callback="later")  # type: ignore[arg-type]
        consumer.close(0)


def test_read_committed_skips_aborted_records_and_holds_an_open_transaction(broker: EmbeddedBroker) -> None:
    """Tansu sends no aborted-transaction list and serves past the last stable offset: the markers decide."""
    topic = _topic("txn")
    tp = TopicPartition(topic, 0)
    _write(broker.bootstrap_servers, topic, [(0, None, b"plain", [])])
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers,
                                         "transactional.id": _topic("tid"), "linger.ms": 5})
    producer.init_transactions(30)
    for values, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2"], False), ([b"c3"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value, partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    producer.begin_transaction()
    producer.produce(topic, b"open", partition=0)
    producer.flush(30)
    with _consumer(broker.bootstrap_servers, isolation_level="read_committed", retry_backoff_ms=20) as consumer:
        consumer.assign([tp])
        seen = [r.value for r in _poll_all(consumer, 4)]
        for _ in range(5):  # the open transaction's record stays held
            seen += [r.value for r in consumer.poll(0.1)]
        assert seen == [b"plain", b"c1", b"c2", b"c3"]
        producer.commit_transaction(30)
        assert [r.value for r in _poll_all(consumer, 1)] == [b"open"]
    with _consumer(broker.bootstrap_servers) as uncommitted:  # read_uncommitted sees the aborted ones
        uncommitted.assign([tp])
        assert b"a1" in [r.value for r in _poll_all(uncommitted, 6)]


class _ScriptedFetches:
    """A Transport with one broker (node 1) that answers Fetch requests from a script: fetch offset -> records."""

    disconnect_count = 0

    def __init__(self, answers: dict[Any, bytes]) -> None:  # fetch offset, or (partition, fetch offset) -> records
        self.answers = answers
        self.fetched: list[tuple[int, int]] = []  # (fetch offset, partition_max_bytes) of each Fetch
        self.last_stable_offset = 6
        self._answered: list[Any] = []

    def send(self, node_id: int, request: Any, now_ms: int, handler: Any = None, expect_response: bool = True) -> None:
        from cykafka.errors import UnsupportedVersionError
        from cykafka.ports import ClientResponse
        from cykafka.protocol.apis import FETCH

        if request.api_key != FETCH.key:  # a broker without the API (KIP-714's telemetry, asked by default)
            raise UnsupportedVersionError(f"node {node_id} answers Fetch only")
        partitions = []
        for t in request.body["topics"]:
            for p in t["partitions"]:
                self.fetched.append((p["fetch_offset"], p["partition_max_bytes"]))
                partitions.append({"partition_index": p["partition"], "error_code": 0, "high_watermark": 6,
                                   "last_stable_offset": self.last_stable_offset, "log_start_offset": 0,
                                   "aborted_transactions": None,
                                   "records": self.answers.get((p["partition"], p["fetch_offset"]),
                                                               self.answers.get(p["fetch_offset"], b""))})
        body = {"error_code": 0, "responses": [{"topic": request.body["topics"][0]["topic"], "partitions": partitions}]}
        self._answered.append(ClientResponse(node_id, request, handler, body, None, now_ms, now_ms))

    def poll(self, timeout_ms: int, now_ms: int) -> list[Any]:
        answered, self._answered = self._answered, []
        return answered

    def update_nodes(self, nodes: Any) -> None: ...
    def ready(self, node_id: int, now_ms: int) -> bool: return True
    def connection_delay_ms(self, node_id: int, now_ms: int) -> int: return 0
    def in_flight_count(self, node_id: int | None = None) -> int: return 0
    def least_loaded_node(self, now_ms: int) -> int | None: return 1
    def authentication_error(self) -> None: return None
    def wakeup(self) -> None: ...
    def close(self, linger_s: float = 0.0) -> None: ...

    def finalized_features(self) -> Any:  # none reported, as Tansu: end offsets read from a Fetch too
        from cykafka.ports import FinalizedFeatures

        return FinalizedFeatures()


class _OneLeader:
    def __init__(self, topic: str) -> None:
        from cykafka.ports import ClusterSnapshot, Node, PartitionInfo

        self._snapshot = ClusterSnapshot({1: Node(1, "fake", 1)}, {topic: [PartitionInfo(topic, i, 1) for i in (0, 1)]})

    def snapshot(self) -> Any: return self._snapshot
    def add_topic(self, topic: str, now_ms: int) -> None: ...
    def set_all_topics(self, on: bool) -> None: ...
    def request_update(self) -> None: ...
    def maybe_update(self, now_ms: int) -> int: return 60_000


def _scripted_consumer(transport: _ScriptedFetches, **config: Any) -> Consumer:
    from cykafka.adapters.clock import ManualClock
    from cykafka.ports import Ports

    ports = Ports(transport=transport, metadata=_OneLeader("t"), clock=ManualClock(auto_tick_ms=1),  # type: ignore[arg-type]
                  start_sender=False)
    return Consumer({"bootstrap.servers": "fake:1", **config}, ports=ports)


def _offsets_polled(consumer: Consumer, count: int) -> list[int]:
    seen: list[int] = []
    for _ in range(50):
        seen += [r.offset for r in consumer.poll(0.01)]
        if len(seen) >= count:
            break
    return seen


def test_a_transaction_marker_past_the_answer_is_found_by_looking_ahead() -> None:
    """The fetcher runs ahead of a transaction whose marker is not in its answer: the answers past it give the
    marker, and the held answer is decoded again with it (no fetch again from the transaction's start)."""
    from test_fetch_decode import batch, control, values

    first = batch(0, values(2)) + batch(2, values(2, 2), producer_id=7, transactional=True)  # no marker in it
    transport = _ScriptedFetches({0: first, 4: control(4, 7, commit=True) + batch(5, values(1, 5))})
    consumer = _scripted_consumer(transport, **{"isolation.level": "read_committed"})
    tp = TopicPartition("t", 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    assert _offsets_polled(consumer, 5) == [0, 1, 2, 3, 5]
    assert 2 not in [offset for offset, _ in transport.fetched]
    consumer.close(0)


def test_looking_ahead_for_a_marker_goes_past_the_fetch_ahead_limit() -> None:
    """A transaction whose marker comes four answers later: the fetcher's limit of two answers fetched ahead
    (cykafka/fetch_buffer.py) does not hold a partition whose answer waits for a marker; it looks ahead until the
    marker comes (within fetch.max.bytes), and the held answer is decoded again with it."""
    from test_fetch_decode import batch, control, values

    def txn(offset: int) -> bytes:
        return batch(offset, values(1, offset), producer_id=7, transactional=True)

    first = batch(0, values(2)) + batch(2, values(2, 2), producer_id=7, transactional=True)  # no marker in it
    transport = _ScriptedFetches({0: first, 4: txn(4), 5: txn(5), 6: txn(6),
                                  7: control(7, 7, commit=True) + batch(8, values(1, 8))})
    transport.last_stable_offset = 9
    consumer = _scripted_consumer(transport, **{"isolation.level": "read_committed"})
    tp = TopicPartition("t", 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    assert _offsets_polled(consumer, 8) == [0, 1, 2, 3, 4, 5, 6, 8]
    assert [offset for offset, _ in transport.fetched][:5] == [0, 4, 5, 6, 7]  # never from the transaction's start
    consumer.close(0)


def test_an_open_transaction_is_fetched_again_from_its_start_with_more_room() -> None:
    """Open at the last stable offset, the transaction is fetched again from its first offset after
    retry.backoff.ms, asking for twice the room when the blocked answer was full."""
    from test_fetch_decode import batch, control, values

    first = batch(0, values(2)) + batch(2, values(2, 2), producer_id=7, transactional=True)
    transport = _ScriptedFetches({0: first})
    transport.last_stable_offset = 2  # the transaction is open
    consumer = _scripted_consumer(transport, **{"isolation.level": "read_committed", "retry.backoff.ms": 5,
                                                "max.partition.fetch.bytes": len(first)})
    tp = TopicPartition("t", 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    assert _offsets_polled(consumer, 2) == [0, 1]
    transport.answers[2] = batch(2, values(2, 2), producer_id=7, transactional=True) + control(
        4, 7, commit=True) + batch(5, values(1, 5))
    transport.last_stable_offset = 6  # committed
    assert _offsets_polled(consumer, 3) == [2, 3, 5]
    assert (2, 2 * len(first)) in transport.fetched  # fetched again from the transaction's start, with more room
    consumer.close(0)


def test_records_taken_before_a_corrupt_partition_are_returned_and_the_error_comes_next() -> None:
    from test_fetch_decode import batch, values


    corrupt = bytearray(batch(0, values(3)))
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    consumer = _scripted_consumer(_ScriptedFetches({(0, 0): batch(0, values(3)), (1, 0): bytes(corrupt)}))
    good, bad = TopicPartition("t", 0), TopicPartition("t", 1)
    consumer.assign([good, bad])
    consumer.seek(good, 0)
    consumer.seek(bad, 0)
    assert [(r.partition, r.offset) for r in consumer.poll(1)] == [(0, 0), (0, 1), (0, 2)]
    with pytest.raises(CorruptRecordError, match="partition 1"):
        consumer.poll(1)
    consumer.close(0)


def test_dropped_connections_lose_and_repeat_nothing(broker: EmbeddedBroker) -> None:
    from kafka_proxy import KafkaProxy

    topic = _topic("drops")
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20}) as producer:
        producer.send_batch(topic, [b"v%d" % i for i in range(20_000)], partitions=[i % 2 for i in range(20_000)]
                            ).result(60)
    proxy = KafkaProxy(broker.host, broker.port)
    try:
        with _consumer(proxy.bootstrap_servers, fetch_max_bytes=65536, max_partition_fetch_bytes=32768,
                       retry_backoff_ms=20, reconnect_backoff_ms=20) as consumer:
            consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
            got: list[Any] = []
            cuts = 0
            for _ in range(POLLS * 2):
                if len(got) >= 20_000:
                    break
                got += consumer.poll(0.5)
                if len(got) >= 2_000 * (cuts + 1) and cuts < 6:
                    cuts += 1
                    if cuts % 2:
                        proxy.drop_all()
                    else:
                        proxy.cut_mid_frame(100)
    finally:
        proxy.close()
    assert cuts == 6
    for partition in (0, 1):
        assert [r.offset for r in got if r.partition == partition] == list(range(10_000))


def test_read_committed_on_the_mock_cluster_one_batch_per_answer(mock_cluster: Any) -> None:
    """librdkafka's mock cluster answers one batch per Fetch with an empty aborted list: every transaction's marker
    lies past the answers holding its batches."""
    mock_cluster.create_topic("tx", [1], 1)
    producer = confluent_kafka.Producer({"bootstrap.servers": mock_cluster.bootstrap_servers,
                                         "transactional.id": "consumer-test", "linger.ms": 5})
    producer.init_transactions(30)
    for name, commit in ((b"c", True), (b"a", False), (b"d", True)):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("tx", name + b"%d" % i, partition=0)
        assert producer.flush(30) == 0
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    # the mock writes its transaction markers with CRC 0: checked, they are corrupt, and poll says so
    with _consumer(mock_cluster.bootstrap_servers, isolation_level="read_committed") as consumer:
        consumer.assign([TopicPartition("tx", 0)])
        with pytest.raises(CorruptRecordError, match="offset 3: record batch CRC32C 0x00000000"):
            _poll_all(consumer, 6)
    with _consumer(mock_cluster.bootstrap_servers, isolation_level="read_committed", check_crcs=False) as consumer:
        consumer.assign([TopicPartition("tx", 0)])
        got = _poll_all(consumer, 6)
    assert [r.value for r in got] == [b"c0", b"c1", b"c2", b"d0", b"d1", b"d2"]


# -- what probing found (issue 24) ------------------------------------------------------------------------------


def test_poll_batch_refuses_a_timestamp_beyond_arrow_and_poll_reads_it(broker: EmbeddedBroker) -> None:
    """CreateTime 2**62 or 2**63 - 1 (the producer takes [0, 2**63)) does not fit Arrow's timestamp[us]: poll_batch
    hands out the records before it, then raises naming it (never a wrapped 1970 value); poll() reads it right."""
    topic = _topic("far")
    tp = TopicPartition(topic, 0)
    far = [1_700_000_000_000, 2**62, 2**63 - 1]
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:  # Kafka 4 refuses those by default
        admin.create_topics([NewTopic(topic, 1, config={"message.timestamp.after.max.ms": str(2**63 - 1)})])[
            topic].result()
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0}) as producer:
        for i, timestamp_ms in enumerate(far):
            producer.send(topic, b"v%d" % i, partition=0, timestamp_ms=timestamp_ms).result(30)
    with _consumer(broker.bootstrap_servers) as consumer:
        consumer.assign([tp])
        first = consumer.poll_batch(10)
        for _ in range(POLLS):
            if first.num_rows:
                break
            first = consumer.poll_batch(0.5)
        assert first.column("offset").to_pylist() == [0]
        with pytest.raises(TimestampOverflowError, match=rf"partition 0 offset 1: the record's timestamp {2**62} ms"):
            consumer.poll_batch(1)
        assert consumer.position(tp) == 1  # nothing skipped
        assert [r.timestamp_ms for r in _poll_all(consumer, 2)] == far[1:]


def test_fetch_max_bytes_zero_still_fetches_one_batch_at_a_time(broker: EmbeddedBroker) -> None:
    """Java takes fetch.max.bytes=0 and still makes progress (KIP-74: at least one batch per answer)."""
    topic = _topic("zero")
    _write(broker.bootstrap_servers, topic, [(0, None, b"v%d" % i, []) for i in range(20)])
    with _consumer(broker.bootstrap_servers, fetch_max_bytes=0) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        assert [r.value for r in _poll_all(consumer, 20)] == [b"v%d" % i for i in range(20)]


def test_a_poll_wakes_the_network_thread_only_for_a_partition_with_no_fetch_out(broker: EmbeddedBroker) -> None:
    """Taking records used to wake the network thread at every poll (a byte through its wake-up socket, a turn of its
    loop and a GIL handoff: ~0.3 ms of a consumer's end-to-end latency) though the partition's next Fetch was already
    waiting at the broker, whose answer wakes the thread anyway. Now a poll wakes it only for a partition with no
    Fetch out (room freed in the buffer, or a partition to fetch again: test_dropped_connections_lose_and_repeat_nothing
    stalls without that)."""
    topic = _topic("wake")
    tp = TopicPartition(topic, 0)
    _write(broker.bootstrap_servers, topic, [(0, None, b"v%d" % i, []) for i in range(50)])
    with _consumer(broker.bootstrap_servers, max_poll_records=1, fetch_max_wait_ms=20000) as consumer:
        consumer.assign([tp])
        got = [r.value for r in consumer.poll(30)]
        state = consumer._subscriptions.states[tp]
        for _ in range(2000):  # the next Fetch goes out and waits at the broker for records after these
            if state.in_flight and state.fetch_offset == 50:
                break
            time.sleep(0.005)
        assert state.in_flight and state.fetch_offset == 50
        wakes: list[int] = []
        collector = consumer._collector
        wakeup = collector.wakeup
        collector.wakeup = lambda: (wakes.append(1), wakeup())
        got += [r.value for r in _poll_all(consumer, 49)]
    assert got == [b"v%d" % i for i in range(50)]
    assert wakes == []  # 49 before the change: one per poll


def test_infinite_timeouts_mean_no_limit(broker: EmbeddedBroker) -> None:
    topic, group = _topic("inf"), _topic("group")
    tp = TopicPartition(topic, 0)
    _write(broker.bootstrap_servers, topic, [(0, None, b"v", [])])
    with _consumer(broker.bootstrap_servers, group_id=group) as consumer:
        consumer.assign([tp])
        assert consumer.position(tp, math.inf) == 0
        assert [r.value for r in consumer.poll(math.inf)] == [b"v"]
        consumer.commit(timeout=math.inf)
        committed = consumer.committed([tp], 1e300)[tp]
        assert committed is not None and committed.offset == 1


def test_every_call_after_close_raises_illegal_state_at_once() -> None:
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"})
    consumer.close(0)
    tp = TopicPartition("t", 0)
    calls = [lambda c: c.partitions_for("t"), lambda c: c.poll(5), lambda c: c.position(tp), lambda c: c.assignment(),
             lambda c: c.end_offsets([tp]), lambda c: c.committed([tp]), lambda c: c.commit({tp: 1}),
             lambda c: c.subscribe(["t"]), lambda c: c.seek(tp, 1), lambda c: c.paused()]
    for call in calls:
        started = time.monotonic()
        with pytest.raises(IllegalStateError, match="the consumer is closed"):
            call(consumer)
        assert time.monotonic() - started < 1  # partitions_for waited default.api.timeout.ms (60 s)
    consumer.close()  # again: nothing


def test_partitions_for_a_topic_that_does_not_exist_is_empty_at_once(broker: EmbeddedBroker) -> None:
    """With auto-creation off, Java's partitionsFor returns an empty list when the broker says the topic does not
    exist (it waited default.api.timeout.ms, 60 s, then raised)."""
    with _consumer(broker.bootstrap_servers, allow_auto_create_topics=False) as consumer:
        started = time.monotonic()
        assert consumer.partitions_for(_topic("missing"), timeout=30) == []
        assert time.monotonic() - started < 10


def test_a_second_thread_gets_a_typed_error_naming_the_misuse(broker: EmbeddedBroker) -> None:
    """Java's ConcurrentModificationException: a Consumer is used from one thread at a time (the second thread got
    a raw KeyError now and then); close() alone may come from another thread, and it ends the first one's wait."""
    with _consumer(broker.bootstrap_servers) as consumer:
        consumer.assign([TopicPartition(_topic("busy"), 0)])
        polling = threading.Thread(target=consumer.poll, args=(30,))
        polling.start()
        time.sleep(0.3)
        for call in (lambda: consumer.poll(0), lambda: consumer.position(TopicPartition("t", 0)),
                     lambda: consumer.assignment()):
            with pytest.raises(ConcurrentAccessError, match=r"another thread is inside this Consumer's poll\(\)"):
                call()
        started = time.monotonic()
        consumer.close(10)
        polling.join(10)
        assert not polling.is_alive() and time.monotonic() - started < 5  # the poll's 30 s wait was interrupted


_FORKED_CONSUMER = """
import os
from cykafka import Consumer, IllegalStateError, TopicPartition

consumer = Consumer({"bootstrap.servers": "127.0.0.1:1"})
consumer.assign([TopicPartition("t", 0)])
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # the child: report what poll raised, and leave without running the parent's cleanup
    try:
        consumer.poll(0)
        outcome = b"no error"
    except IllegalStateError as e:
        outcome = str(e).encode()
    except BaseException as e:  # anything else fails the test in the parent
        outcome = repr(e).encode()
    consumer.close()
    os.write(write, outcome)
    os._exit(0)
os.close(write)
with os.fdopen(read, "rb") as pipe:
    print(pipe.read().decode())
os.waitpid(pid, 0)
print(consumer.assignment() == {TopicPartition("t", 0)})  # the parent's consumer is untouched
consumer.close(0)
"""


def test_a_consumer_used_in_a_forked_child_says_so() -> None:
    """A Consumer made before fork() belongs to the parent (threads, connections, group, fetched records): in the
    child every call raises IllegalStateError saying so, instead of handing out the parent's records, then []. Forked
    from an interpreter of its own: a child of the test process would also inherit (and rebuild, in their fork hooks)
    whatever other tests left running there, and a fork is only as safe as every thread it copies."""
    done = subprocess.run([sys.executable, "-c", _FORKED_CONSUMER], capture_output=True, text=True, timeout=60,
                          cwd="/")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()  # what the child's poll raised, then whether the parent's consumer is untouched
    assert "made in process" in lines[0] and "before a fork()" in lines[0], done.stdout
    assert lines[-1] == "True", done.stdout


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda c: c.seek(TopicPartition("t", 0), 2**63), InvalidArgumentError,
     r"seek: offset must be an int in \[0, 9223372036854775807\], got 9223372036854775808"),
    (lambda c: c.seek(TopicPartition("t", 0), 2**64), InvalidArgumentError, "seek: offset must be an int in"),
    (lambda c: c.commit({TopicPartition("t", 0): 2**63}), InvalidArgumentError,
     r"commit: the offset of TopicPartition\(topic='t', partition=0\) must be an int in \[0, "),
    (lambda c: c.commit({TopicPartition("t", 0): OffsetAndMetadata(3, 5)}), InvalidArgumentError,  # type: ignore[arg-type]
     r"commit: the offset of .*\.metadata must be a str or None, got 5"),
    (lambda c: c.commit({TopicPartition("t", 0): OffsetAndMetadata(3, None, 2**31)}), InvalidArgumentError,
     r"\.leader_epoch must be an int in \[-1, 2147483647\]"),
    (lambda c: c.assign([TopicPartition("t", 2**40)]), InvalidArgumentError, r"a partition in \[0, 2\*\*31 - 1\]"),
    (lambda c: c.assign([TopicPartition("a/b", 0)]), InvalidTopicError, "characters other than"),
    (lambda c: c.assign([TopicPartition("..", 0)]), InvalidTopicError, "must not be empty, '.' or '..'"),
    (lambda c: c.poll(float("nan")), InvalidArgumentError, "timeout must be a number of seconds >= 0"),
])
def test_arguments_no_request_can_carry_are_refused_naming_them(call: Any, error: type[Exception],
                                                                  message: str) -> None:
    """seek(tp, 2**63) was taken, then every Fetch failed to encode (at DEBUG) and was retried forever; a commit of
    2**63 or a non-str metadata failed in the encoder without naming the argument; assign() took what subscribe()
    refuses."""
    with Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}) as consumer:
        consumer.assign([TopicPartition("t", 0)])
        with pytest.raises(error, match=message):
            call(consumer)
        consumer.close(0)


def test_the_transport_takes_responses_as_large_as_fetch_max_bytes() -> None:
    """A response frame over 100 MiB was refused while fetch.max.bytes may be set higher: the consumer's transport
    takes fetch.max.bytes + 64 MiB (at least 100 MiB), and the transport keeps to its setting."""
    from cykafka.adapters.socket_transport import SocketTransport, _Connection
    from cykafka.config import ConsumerConfig
    from cykafka.ports import ConnectionSettings

    config = ConsumerConfig.parse({"bootstrap.servers": "127.0.0.1:1", "fetch.max.bytes": 200 * 2**20})
    assert config.connection.max_response_bytes == 264 * 2**20
    small = ConsumerConfig.parse({"bootstrap.servers": "b:1", "fetch.max.bytes": 1})
    assert small.connection.max_response_bytes == 100 * 2**20
    for limit_bytes, taken in ((300_000, False), (400_000, True)):
        transport = SocketTransport(ConnectionSettings(("127.0.0.1:1",), max_response_bytes=limit_bytes))
        conn = _Connection(1, "127.0.0.1", 1)
        conn.incoming = bytearray(struct.pack(">i", 350_000) + b"\0" * 100)
        transport._parse_frames(conn, 0)
        assert (conn.large_frame is not None) is taken  # being received, or refused (the connection dropped)
        transport.close()
