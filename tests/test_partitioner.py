"""Partitioning: murmur2 equals Java's (vectors, kafka-python, librdkafka); the KIP-794 sticky adaptive partitioner."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from cykafka.broker import EmbeddedBroker
from cykafka.core import (
    BuiltInPartitioner,
    NodeLatencyStats,
    StickyPartitionInfo,
    leader_unavailable,
    murmur2,
    partition_for_key,
)

# org.apache.kafka.common.utils.UtilsTest.testMurmur2
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def _random_keys(count: int, seed: int, min_len: int = 0, max_len: int = 64) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randint(min_len, max_len)) for _ in range(count)]


# ---------------------------------------------------------------------------------------------------------- murmur2


def test_partitioner_is_compiled_core() -> None:
    assert BuiltInPartitioner.__module__ == "cykafka.core._core"
    assert "cython" in type(murmur2).__name__


def test_java_vectors() -> None:
    for key, expected in JAVA_VECTORS.items():
        assert murmur2(key) == expected, key
    assert murmur2(b"") == 275646681  # seed ^ 0, avalanche only


def test_every_tail_length_and_signedness() -> None:
    for n in range(12):
        key = bytes(range(200, 200 + n))
        assert murmur2(key) == _signed32(kafka_python_murmur2(key))
    assert any(murmur2(k) < 0 for k in JAVA_VECTORS) and any(murmur2(k) > 0 for k in JAVA_VECTORS)


def _signed32(u: int) -> int:
    return u - (1 << 32) if u & 0x80000000 else u


def test_parity_with_kafka_python_on_100k_random_keys() -> None:
    keys = _random_keys(100_000, seed=20240601, max_len=96)
    mismatches = [k for k in keys if murmur2(k) != _signed32(kafka_python_murmur2(k))]
    assert mismatches == []


def test_accepts_any_contiguous_buffer() -> None:
    key = b"a-little-bit-long-string"
    assert murmur2(bytearray(key)) == murmur2(memoryview(key)) == murmur2(key)
    assert murmur2(memoryview(b"xx" + key)[2:]) == murmur2(key)
    with pytest.raises(TypeError):
        murmur2(None)  # type: ignore[arg-type]


@given(st.binary(max_size=200), st.integers(min_value=1, max_value=100_000))
def test_partition_for_key_is_java_to_positive_mod(key: bytes, num_partitions: int) -> None:
    expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % num_partitions
    assert partition_for_key(key, num_partitions) == expected
    assert 0 <= partition_for_key(key, num_partitions) < num_partitions


def test_partition_for_key_rejects_no_partitions() -> None:
    with pytest.raises(ValueError, match="num_partitions"):
        partition_for_key(b"k", 0)


def _librdkafka_partitions(config: dict[str, object], topic: str, keys: list[bytes]) -> list[int]:
    """Produce keyed records with librdkafka's murmur2_random partitioner; the partition each key got, in order."""
    producer = confluent_kafka.Producer(
        {**config, "partitioner": "murmur2_random", "linger.ms": 5, "log_level": 3,
         "queue.buffering.max.messages": len(keys) + 1000}
    )
    got: dict[int, int] = {}
    errors: list[object] = []

    def on_delivery(err: object, msg: confluent_kafka.Message) -> None:
        if err is not None:
            errors.append(err)
        else:
            got[int.from_bytes(msg.value() or b"", "big")] = msg.partition() or 0

    for i, key in enumerate(keys):
        producer.produce(topic, key=key, value=i.to_bytes(4, "big"), on_delivery=on_delivery)
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == []
    return [got[i] for i in range(len(keys))]


def test_parity_with_librdkafka_murmur2_random_on_the_mock_cluster() -> None:
    config: dict[str, object] = {"test.mock.num.brokers": 1, "bootstrap.servers": ""}
    metadata_probe = confluent_kafka.Producer({**config, "log_level": 3})
    topic = "murmur2-parity"
    num_partitions = len(metadata_probe.list_topics(topic, timeout=10).topics[topic].partitions)
    assert num_partitions >= 2  # the mock cluster auto-creates topics (4 partitions)
    # one mock cluster per client: produce with the probe's cluster so the topic is the one just measured
    broker = next(iter(metadata_probe.list_topics(timeout=10).brokers.values()))
    keys = _random_keys(50_000, seed=7, min_len=1)  # librdkafka treats an empty key like no key
    partitions = _librdkafka_partitions({"bootstrap.servers": f"{broker.host}:{broker.port}"}, topic, keys)
    assert partitions == [partition_for_key(k, num_partitions) for k in keys]
    assert set(partitions) == set(range(num_partitions))


@pytest.mark.broker
@pytest.mark.parametrize("num_partitions", [37, 256])
def test_parity_with_librdkafka_on_tansu_with_odd_partition_counts(broker: EmbeddedBroker, num_partitions: int) -> None:
    topic = f"murmur2-parity-{num_partitions}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 3})
    for future in admin.create_topics([NewTopic(topic, num_partitions=num_partitions, replication_factor=1)]).values():
        future.result(30)
    keys = _random_keys(20_000, seed=num_partitions, min_len=1)
    partitions = _librdkafka_partitions({"bootstrap.servers": broker.bootstrap_servers}, topic, keys)
    assert partitions == [partition_for_key(k, num_partitions) for k in keys]


# ------------------------------------------------------------------------------------------- BuiltInPartitioner


def _fill(p: BuiltInPartitioner, record_bytes: int, records: int, available: list[int], num_partitions: int,
          enable_switch: bool = True) -> list[int]:
    """Append `records` keyless records; the partition each one went to."""
    out = []
    for _ in range(records):
        info = p.peek_current_partition_info(available, num_partitions)
        out.append(info.partition)
        p.update_partition_info(info, record_bytes, enable_switch, available, num_partitions)
    return out


def test_sticks_until_batch_size_then_switches() -> None:
    p = BuiltInPartitioner("t", 1000, seed=1)
    available = [0, 1, 2, 3, 4, 5, 6, 7]
    first = p.peek_current_partition(available, 8)
    info = p.peek_current_partition_info(available, 8)
    assert info.partition == first and info.produced_bytes == 0
    for _ in range(9):  # 900 bytes: below batch.size
        assert not p.update_partition_info(info, 100, True, available, 8)
        assert p.peek_current_partition_info(available, 8) is info
    assert p.update_partition_info(info, 100, True, available, 8)  # 1000 bytes: switch
    assert info.produced_bytes == 1000
    assert p.is_partition_changed(info)
    new = p.peek_current_partition_info(available, 8)
    assert new is not info and new.produced_bytes == 0 and p.sticky_partition == new.partition


def test_switch_points_follow_produced_bytes() -> None:
    p = BuiltInPartitioner("t", 1000, seed=2)
    seq = _fill(p, 300, 4000, list(range(50)), 50)
    # 4 records of 300 bytes reach 1000; a switch may land on the same partition again, so compare per 4 records
    chunks = [seq[i:i + 4] for i in range(0, len(seq), 4)]
    assert all(len(set(c)) == 1 for c in chunks)
    assert sum(a[0] != b[0] for a, b in itertools.pairwise(chunks)) > len(chunks) * 0.9


def test_disabled_switch_waits_up_to_twice_batch_size() -> None:
    p = BuiltInPartitioner("t", 1000, seed=3)
    info = p.peek_current_partition_info([0, 1], 2)
    for _ in range(19):  # 1900 bytes, batch never full
        assert not p.update_partition_info(info, 100, False, [0, 1], 2)
    assert p.update_partition_info(info, 100, False, [0, 1], 2)  # 2000 = 2x: switch regardless
    # the accumulator's partitionChanged(): a previously disabled switch completes once the batches are full
    info = p.peek_current_partition_info([0, 1], 2)
    assert not p.update_partition_info(info, 1500, False, [0, 1], 2)
    assert p.update_partition_info(info, 0, True, [0, 1], 2)
    assert p.is_partition_changed(info)


def test_stale_info_and_non_builtin_records() -> None:
    p = BuiltInPartitioner("t", 10, seed=4)
    info = p.peek_current_partition_info([0], 1)
    assert p.update_partition_info(info, 10, True, [0], 1)
    assert p.is_partition_changed(info)
    with pytest.raises(ValueError, match="stale"):
        p.update_partition_info(info, 1, True, [0], 1)
    assert not p.is_partition_changed(None)
    assert not p.update_partition_info(None, 10**6, True, [0], 1)  # keyed record: no-op
    with pytest.raises(ValueError):
        BuiltInPartitioner("t", 0)
    assert isinstance(info, StickyPartitionInfo)


def test_only_available_partitions_are_chosen_and_all_of_them() -> None:
    p = BuiltInPartitioner("t", 1, seed=5)
    available = [1, 4, 6, 9]
    seq = _fill(p, 1, 20_000, available, 12)
    counts = Counter(seq)
    assert set(counts) == set(available)
    for partition in available:  # uniform: 5000 expected each
        assert 4500 < counts[partition] < 5500, counts


def test_no_available_partition_falls_back_to_all() -> None:
    p = BuiltInPartitioner("t", 1, seed=6)
    seq = _fill(p, 1, 4000, [], 5)
    assert set(seq) == set(range(5))
    with pytest.raises(ValueError, match="no partitions"):
        BuiltInPartitioner("t", 1, seed=6).peek_current_partition([], 0)


def test_seeded_sequence_is_deterministic() -> None:
    a = _fill(BuiltInPartitioner("t", 1, seed=42), 1, 500, list(range(16)), 16)
    b = _fill(BuiltInPartitioner("t", 1, seed=42), 1, 500, list(range(16)), 16)
    c = _fill(BuiltInPartitioner("t", 1, seed=43), 1, 500, list(range(16)), 16)
    assert a == b and a != c


def test_load_stats_cumulative_frequency_table_java_example() -> None:
    p = BuiltInPartitioner("t", 1, seed=7)
    p.update_partition_load_stats([0, 3, 1], [0, 1, 2], 3)
    assert p.has_load_stats
    assert p.cumulative_frequency_table == [4, 5, 8]
    assert p.load_stats_partition_ids == [0, 1, 2]
    assert p.load_stats_range_end == 8


def test_load_stats_dropped_when_pointless() -> None:
    p = BuiltInPartitioner("t", 1, seed=8)
    p.update_partition_load_stats([2, 2, 2], [0, 1, 2])  # all equal, none excluded: uniform
    assert not p.has_load_stats
    p.update_partition_load_stats([5], [0], 1)  # single-partition topic
    assert not p.has_load_stats
    p.update_partition_load_stats([], [], 4)  # everything excluded
    assert not p.has_load_stats
    p.update_partition_load_stats([2, 2], [0, 2], 3)  # all equal but partition 1 excluded: adaptive
    assert p.cumulative_frequency_table == [1, 2] and p.load_stats_partition_ids == [0, 2]
    p.update_partition_load_stats([7], [3], 4)  # one left after exclusions: still adaptive
    assert p.load_stats_partition_ids == [3]
    p.update_partition_load_stats(None, None)
    assert not p.has_load_stats and p.load_stats_range_end == 0
    with pytest.raises(ValueError):
        p.update_partition_load_stats([1, 2], [0], 2)
    with pytest.raises(ValueError):
        p.update_partition_load_stats([1, 2], [0, 1], 1)
    with pytest.raises(ValueError):
        p.update_partition_load_stats([-1, 2], [0, 1], 2)


def test_adaptive_choice_is_proportional_to_inverted_queue_sizes() -> None:
    p = BuiltInPartitioner("t", 1, seed=9)
    queue_sizes = [0, 9, 4, 0]  # max+1 = 10 -> weights 10, 1, 6, 10 of 27
    p.update_partition_load_stats(queue_sizes, [0, 1, 2, 3], 4)
    draws = 54_000
    counts = Counter(_fill(p, 1, draws, [0, 1, 2, 3], 4))
    weights = {0: 10, 1: 1, 2: 6, 3: 10}
    for partition, weight in weights.items():
        expected = draws * weight / 27
        assert abs(counts[partition] - expected) < 5 * expected**0.5 + 1, (partition, counts)
    assert counts[1] < counts[2] < counts[0]  # the long queue is chosen least


def test_excluded_partitions_are_never_chosen_with_load_stats() -> None:
    p = BuiltInPartitioner("t", 1, seed=10)
    # partition 1's leader is slow: the accumulator left it out; available_partitions is ignored with stats
    p.update_partition_load_stats([3, 0, 3], [0, 2, 3], 4)
    counts = Counter(_fill(p, 1, 20_000, [0, 1, 2, 3], 4))
    assert 1 not in counts and set(counts) == {0, 2, 3}
    assert counts[2] > counts[0] and counts[2] > counts[3]  # weights 1, 4, 1


def test_leader_exclusion_helpers_follow_java_node_latency_stats() -> None:
    timeout_ms = 100
    stats = NodeLatencyStats(1_000)
    assert (stats.ready_time_ms, stats.drain_time_ms) == (1_000, 1_000)
    stats.update(1_050, can_drain=False)
    assert not stats.is_unavailable(timeout_ms)
    stats.update(1_101, can_drain=False)  # ready with data for 101 ms, never drained
    assert stats.is_unavailable(timeout_ms)
    assert not stats.is_unavailable(0)  # 0 = feature off
    stats.update(1_200, can_drain=True)
    assert not stats.is_unavailable(timeout_ms) and stats.drain_time_ms == 1_200
    assert leader_unavailable(500, 399, 100) and not leader_unavailable(500, 400, 100)
    assert not leader_unavailable(10**9, 0, 0) and not leader_unavailable(10**9, 0, -1)


def test_accumulator_style_loop_with_exclusion_and_stats() -> None:
    """What RecordAccumulator.ready does per topic: skip slow leaders, feed queue sizes, then keyless appends."""
    now_ms = 0
    node_of = {0: 1, 1: 2, 2: 1, 3: 3}
    nodes = {n: NodeLatencyStats(now_ms) for n in (1, 2, 3)}
    queue = {0: 1, 1: 0, 2: 1, 3: 5}
    now_ms = 500
    for n, s in nodes.items():
        s.update(now_ms, can_drain=(n != 2))  # node 2's connection stayed unready
    p = BuiltInPartitioner("t", 100, seed=11)
    ids = [tp for tp in sorted(queue) if not nodes[node_of[tp]].is_unavailable(250)]
    p.update_partition_load_stats([queue[tp] for tp in ids], ids, len(queue))
    assert ids == [0, 2, 3] and p.load_stats_partition_ids == [0, 2, 3]
    counts = Counter(_fill(p, 50, 6000, [0, 1, 2, 3], 4))
    assert 1 not in counts and counts[3] < counts[0] and counts[3] < counts[2]
