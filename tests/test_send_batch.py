"""Producer.send_batch: lists and Arrow arrays in, one BatchResult out; partitioning, timestamps, headers, per-record
errors (too large, broker errors, split), the one-by-one path through send(), and a round trip through Tansu."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from fakes import fake_producer
from hypothesis import given, settings
from hypothesis import strategies as st

from cykafka import (
    BatchDeliveryError,
    BatchResult,
    InvalidRecordError,
    Producer,
    ProducerClosedError,
    RecordTooLargeError,
    SerializationError,
)
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.broker import EmbeddedBroker
from cykafka.core import partition_for_key
from cykafka.verify import read_back

T = "columns"


@pytest.fixture
def cluster() -> FakeCluster:
    cluster = FakeCluster(SystemClock(), num_brokers=2)
    cluster.create_topic(T, 3)
    return cluster


@pytest.fixture
def producer(cluster: FakeCluster) -> Iterator[Producer]:
    producer = make(cluster)
    yield producer
    producer.close(5)


def make(cluster: FakeCluster, **config: Any) -> Producer:
    return fake_producer(cluster, **{"linger.ms": 1, "max.block.ms": 2000, "batch.size": 2048, **config})


def stored(cluster: FakeCluster, topic: str = T) -> dict[bytes | None, tuple[int, Any]]:
    """value -> (partition, record) of everything the fake cluster holds."""
    return {r.value: (p, r) for p, r in cluster.all_records(topic)}


def test_keyed_list_lands_like_send(producer: Producer, cluster: FakeCluster) -> None:
    values = [b"v%05d" % i for i in range(3000)]
    keys = [b"k%d" % (i % 97) for i in range(3000)]
    result = producer.send_batch(T, values, keys)
    assert isinstance(result, BatchResult)
    assert result.result(10) == 3000 and result.done()
    assert (result.succeeded_count, result.failed_count, result.errors) == (3000, 0, [])
    records = stored(cluster)
    assert len(records) == 3000
    for value, key in zip(values, keys, strict=True):
        partition, record = records[value]
        assert record.key == key and partition == partition_for_key(key, 3)
    for p in range(3):  # call order within each partition
        log = [r.value for r in cluster.log(T, p)]
        assert log == sorted(log)


def test_unkeyed_records_use_the_sticky_partitioner(producer: Producer, cluster: FakeCluster) -> None:
    assert producer.send_batch(T, [b"x" * 100] * 500).result(10) == 500
    counts = [len(cluster.log(T, p)) for p in range(3)]
    assert sum(counts) == 500 and all(r.key is None for _, r in cluster.all_records(T))


@pytest.mark.parametrize("arrow_type", [pa.binary(), pa.string(), pa.large_binary(), pa.large_string()])
def test_arrow_arrays_with_nulls_and_slices(producer: Producer, cluster: FakeCluster, arrow_type: Any) -> None:
    texts = [None if i % 7 == 3 else f"value-{i}-é" for i in range(1000)]
    keys = [None if i % 5 == 0 else f"key-{i}" for i in range(1000)]
    as_bytes = arrow_type in (pa.binary(), pa.large_binary())
    values_array = pa.array([t.encode() if t is not None and as_bytes else t for t in texts], type=arrow_type)
    keys_array = pa.array([k.encode() if k is not None and as_bytes else k for k in keys], type=arrow_type)
    # a slice: the arrays' offset is not 0
    result = producer.send_batch(T, values_array[100:900], keys_array[100:900])
    assert result.result(10) == 800
    got = sorted(((r.key, r.value) for _, r in cluster.all_records(T)), key=lambda kv: repr(kv))
    want = sorted(((None if k is None else k.encode(), None if t is None else t.encode())
                   for k, t in zip(keys[100:900], texts[100:900], strict=True)), key=lambda kv: repr(kv))
    assert got == want


@pytest.mark.parametrize("partitions", [None, 2])
def test_arrow_runs_land_as_the_list_path(partitions: int | None) -> None:
    """Arrow keys and values go in runs appended without the GIL, lists record by record: the same records, logs,
    per-partition order and failed indices, across many batches, null keys (sticky partitioner) and records too
    large in the middle."""
    values = [b"x" * 5000 if i % 997 == 500 else b"v%06d" % i for i in range(20_000)]
    keys = [None if i % 101 == 7 else b"k%d" % (i % 113) for i in range(20_000)]
    logs, failed = [], []
    for as_arrow in (False, True):
        cluster = FakeCluster(SystemClock(), num_brokers=2)
        cluster.create_topic(T, 3)
        producer = make(cluster, **{"max.request.size": 4096, "partitioner.adaptive.partitioning.enable": False})
        try:
            result = producer.send_batch(T, pa.array(values) if as_arrow else values,
                                         pa.array(keys) if as_arrow else keys, partitions=partitions)
            with pytest.raises(BatchDeliveryError) as info:
                result.result(30)
            failed.append([index for index, _ in info.value.errors])
            keyed_logs = [[(r.key, r.value) for r in cluster.log(T, p) if r.key is not None] for p in range(3)]
            unkeyed = sorted(r.value for _, r in cluster.all_records(T) if r.key is None)
            logs.append((keyed_logs, unkeyed, result.delivered_by_partition))
        finally:
            producer.close(5)
    assert failed[0] == failed[1] == [i for i in range(20_000) if i % 997 == 500]
    assert logs[0][:2] == logs[1][:2]
    keyed_logs, unkeyed, _ = logs[1]
    for p in range(3):
        assert [v for _, v in keyed_logs[p]] == sorted(v for _, v in keyed_logs[p]), "call order per partition"
        assert all(partitions == p if partitions is not None else partition_for_key(k, 3) == p
                   for k, _ in keyed_logs[p])
    assert sum(len(log) for log in keyed_logs) + len(unkeyed) == 20_000 - len(failed[1])
    assert sum(logs[1][2].values()) == 20_000 - len(failed[1])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 400)), st.one_of(st.none(), st.integers(0, 40))),
                max_size=1500),
       st.one_of(st.none(), st.integers(0, 2)), st.booleans())
def test_arrow_runs_match_the_list_path_property(records: list[tuple[int | None, int | None]],
                                                 partitions: int | None, large_types: bool) -> None:
    """Any mix of null and empty values and keys, sizes around the batch size, with or without a fixed partition:
    Arrow columns (runs without the GIL) and lists (record by record) deliver the same records, in the same order
    per partition for keyed or fixed-partition records, and fail the same indices."""
    values = [None if v is None else b"%05d" % i + b"v" * v for i, (v, _) in enumerate(records)]
    keys = [None if k is None else b"k%d" % k for _, k in records]
    arrow_type = pa.large_binary() if large_types else pa.binary()
    outcomes = []
    for as_arrow in (False, True):
        cluster = FakeCluster(SystemClock(), num_brokers=2)
        cluster.create_topic(T, 3)
        producer = make(cluster, **{"batch.size": 1024, "max.request.size": 300})
        try:
            result = producer.send_batch(T, pa.array(values, type=arrow_type) if as_arrow else values,
                                         pa.array(keys, type=arrow_type) if as_arrow else keys, partitions=partitions)
            try:
                result.result(30)
            except BatchDeliveryError:
                pass
            ordered = [[(r.key, r.value) for r in cluster.log(T, p) if partitions is not None or r.key is not None]
                       for p in range(3)]
            everything = sorted((r.key or b"", r.value or b"") for _, r in cluster.all_records(T))
            outcomes.append((ordered, everything, [i for i, _ in result.errors], result.delivered_by_partition))
        finally:
            producer.close(5)
    (list_ordered, list_all, list_failed, _), (arrow_ordered, arrow_all, arrow_failed, delivered) = outcomes
    assert arrow_ordered == list_ordered and arrow_all == list_all and arrow_failed == list_failed
    assert sum(delivered.values()) == len(records) - len(arrow_failed) == len(arrow_all)


def test_arrow_runs_name_the_failed_indices(producer: Producer, cluster: FakeCluster) -> None:
    cluster.inject_error(87, topic=T, partition=1, count=100)  # INVALID_RECORD: not retriable
    keys = [b"k%d" % i for i in range(3000)]
    result = producer.send_batch(T, pa.array([b"v%d" % i for i in range(3000)]), pa.array(keys))
    with pytest.raises(BatchDeliveryError) as info:
        result.result(10)
    failed = [index for index, _ in info.value.errors]
    assert failed == [i for i, k in enumerate(keys) if partition_for_key(k, 3) == 1]
    assert result.delivered_by_partition == {(T, p): sum(partition_for_key(k, 3) == p for k in keys) for p in (0, 2)}


def test_arrow_chunked_and_fixed_size(producer: Producer, cluster: FakeCluster) -> None:
    chunked = pa.chunked_array([[b"a1", b"a2"], [b"a3"]])
    fixed = pa.array([b"k1", b"k2", b"k3"], type=pa.binary(2))
    assert producer.send_batch(T, chunked, fixed).result(10) == 3
    assert {(r.key, r.value) for _, r in cluster.all_records(T)} == {(b"k1", b"a1"), (b"k2", b"a2"), (b"k3", b"a3")}


def test_partitions_timestamps_and_headers(producer: Producer, cluster: FakeCluster) -> None:
    values = [b"a", b"b", b"c", b"d"]
    headers = [None, [("h", b"1")], [("h", None), ("g", b"2")], []]
    result = producer.send_batch(T, values, partitions=[2, 0, 2, 1], timestamps_ms=[5, 6, 7, 8], headers=headers)
    assert result.result(10) == 4
    records = stored(cluster)
    assert [records[v][0] for v in values] == [2, 0, 2, 1]
    assert [records[v][1].timestamp_ms for v in values] == [5, 6, 7, 8]
    assert [records[v][1].headers for v in values] == [[], [("h", b"1")], [("h", None), ("g", b"2")], []]
    assert producer.send_batch(T, [b"e", b"f"], partitions=1, timestamps_ms=42).result(10) == 2
    assert {(records[0], records[1].timestamp_ms) for v, records in stored(cluster).items() if v in (b"e", b"f")} == {
        (1, 42)}


def test_none_entries_take_the_default_and_results_count_per_partition(producer: Producer,
                                                                        cluster: FakeCluster) -> None:
    keys = [b"k1", b"k2", b"k3", b"k4"]
    before_ms = int(time.time() * 1000)
    result = producer.send_batch(T, [b"n0", b"n1", b"n2", b"n3"], keys, partitions=[None, 2, None, 0],
                                 timestamps_ms=[None, 7, 8, None])
    assert result.result(10) == 4
    records = stored(cluster)
    assert [records[v][0] for v in (b"n0", b"n1", b"n2", b"n3")] == [partition_for_key(b"k1", 3), 2,
                                                                    partition_for_key(b"k3", 3), 0]
    assert records[b"n1"][1].timestamp_ms == 7 and records[b"n2"][1].timestamp_ms == 8
    assert all(records[v][1].timestamp_ms >= before_ms for v in (b"n0", b"n3"))
    expected: dict[tuple[str, int], int] = {}
    for v in (b"n0", b"n1", b"n2", b"n3"):
        expected[(T, records[v][0])] = expected.get((T, records[v][0]), 0) + 1
    assert result.delivered_by_partition == expected


def test_argument_errors_raise_before_anything_is_queued(producer: Producer, cluster: FakeCluster) -> None:
    with pytest.raises(InvalidRecordError, match="keys has 1 entries for 2 values"):
        producer.send_batch(T, [b"a", b"b"], [b"k"])
    with pytest.raises(SerializationError, match=r"values\[1\] must be bytes-like"):
        producer.send_batch(T, [b"a", 5])
    with pytest.raises(InvalidRecordError, match=r"partitions\[1\] is 3: it must be None or an int in \[0, 3\)"):
        producer.send_batch(T, [b"a", b"b"], partitions=[0, 3])
    with pytest.raises(InvalidRecordError, match="timestamps_ms has 1 entries"):
        producer.send_batch(T, [b"a", b"b"], timestamps_ms=[1])
    with pytest.raises(SerializationError, match=r"headers\[0\]: header 'h' value must be bytes-like"):
        producer.send_batch(T, [b"a"], headers=[[("h", 5)]])
    with pytest.raises(TypeError, match="Arrow binary, string"):
        producer.send_batch(T, pa.array([1, 2]))
    with pytest.raises(TypeError, match="not one bytes"):
        producer.send_batch(T, b"abc")
    assert producer.flush(5) == 0 and cluster.all_records(T) == []


def test_too_large_records_fail_alone(cluster: FakeCluster) -> None:
    producer = make(cluster, **{"max.request.size": 4096})
    try:
        result = producer.send_batch(T, [b"small", b"x" * 5000, b"also small"])
        with pytest.raises(BatchDeliveryError) as info:
            result.result(10)
        [(index, error)] = info.value.errors
        assert index == 1 and isinstance(error, RecordTooLargeError)
        assert (result.succeeded_count, result.failed_count) == (2, 1)
        assert {r.value for _, r in cluster.all_records(T)} == {b"small", b"also small"}
    finally:
        producer.close(5)


def test_broker_errors_name_the_failed_indices(producer: Producer, cluster: FakeCluster) -> None:
    cluster.inject_error(87, topic=T, partition=1, count=100)  # INVALID_RECORD: not retriable
    keys = [b"k%d" % i for i in range(300)]
    result = producer.send_batch(T, [b"v%d" % i for i in range(300)], keys)
    with pytest.raises(BatchDeliveryError) as info:
        result.result(10)
    failed = [index for index, _ in info.value.errors]
    assert failed == [i for i, k in enumerate(keys) if partition_for_key(k, 3) == 1]
    assert result.succeeded_count == 300 - len(failed) == len(cluster.all_records(T))


def test_split_batches_keep_the_call_indices(cluster: FakeCluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cykafka")
    producer = make(cluster, **{"compression.type": "lz4", "batch.size": 16384, "linger.ms": 20})
    cluster.max_message_bytes = 20000
    try:
        for _ in range(40):  # teach the ratio estimator that this topic compresses very well
            producer.send_batch(T, [b"a" * 1000] * 100, partitions=0).result(10)
        before = len(cluster.log(T, 0))
        values = [b"%04d" % i + os.urandom(996) for i in range(60)]
        futures = [producer.send(T, b"single", partition=0)]
        result = producer.send_batch(T, values, partitions=[0 if i % 3 else 1 for i in range(60)])
        futures.append(producer.send(T, b"single-2", partition=0))
        assert result.result(10) == 60
        assert [f.result(10).partition for f in futures] == [0, 0]
        log0 = [r.value for r in cluster.log(T, 0)][before:]
        assert log0 == [b"single"] + [v for i, v in enumerate(values) if i % 3] + [b"single-2"]
        assert "split a batch" in caplog.text
    finally:
        producer.close(5)


def test_one_by_one_with_interceptors(cluster: FakeCluster) -> None:
    seen: list[Any] = []

    class Interceptor:
        def on_send(self, record: Any) -> Any:
            seen.append(record.value)
            return None

        def on_acknowledgement(self, metadata: Any, error: Any) -> None:
            pass

    producer = make(cluster, **{"interceptor.classes": [Interceptor()]})
    try:
        result = producer.send_batch(T, pa.array([b"a", b"b"]), [b"k1", None], partitions=[0, 1])
        assert result.result(10) == 2 and seen == [b"a", b"b"]
        assert {(p, r.key, r.value) for p, r in cluster.all_records(T)} == {(0, b"k1", b"a"), (1, None, b"b")}
    finally:
        producer.close(5)


def test_empty_call_and_closed_producer(cluster: FakeCluster) -> None:
    producer = make(cluster)
    assert producer.send_batch(T, []).result(0) == 0
    producer.close(5)
    with pytest.raises(ProducerClosedError):
        producer.send_batch(T, [b"a"])


def test_large_call_in_many_chunks_with_flush(producer: Producer, cluster: FakeCluster) -> None:
    values = pa.array([b"%06d" % i for i in range(40_000)])
    result = producer.send_batch(T, values)
    assert producer.flush(30) == 0 and result.done()
    assert result.result(0) == 40_000 and len(cluster.all_records(T)) == 40_000


@pytest.mark.broker
def test_arrow_round_trip_through_tansu(broker: EmbeddedBroker) -> None:
    topic = "send-batch-tansu"
    values = pa.array([b"value-%05d" % i for i in range(5000)])
    keys = pa.array([None if i % 10 == 0 else b"key-%d" % (i % 50) for i in range(5000)])
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": "lz4"}) as producer:
        assert producer.send_batch(topic, values, keys).result(30) == 5000
    got = read_back(broker.bootstrap_servers, topic)
    assert sorted(r.value or b"" for r in got) == sorted(values.to_pylist())
    for r in got:
        if r.key is not None:
            assert r.partition == partition_for_key(r.key, 4)


def test_a_batch_result_out_of_range_is_an_invalid_record_error() -> None:
    with pytest.raises(InvalidRecordError, match="a send_batch call takes 0 to 2\\*\\*32 - 1 records, not -1"):
        BatchResult(-1)
