"""What send() and send_batch() take (issue 13, items 1-3, 7, 8): one rule for both paths; every bad input a typed
error (a KafkaError, also a TypeError or ValueError) naming the argument, raised before anything of the call is
queued; send_batch() respects the transaction state as send() does and reads each iterable once."""

from __future__ import annotations

import array
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from fakes import fake_producer

from cykafka import (
    InvalidRecordError,
    KafkaError,
    Producer,
    SerializationError,
    TransactionStateError,
)
from cykafka.adapters.clock import ManualClock, SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.core import partition_for_key
from cykafka.ports import Ports

T = "inputs"
NON_CONTIGUOUS = memoryview(b"abcdef")[::2]
SURROGATE = "a\ud800"
RELEASED = memoryview(b"x")
RELEASED.release()


@pytest.fixture
def cluster() -> FakeCluster:
    cluster = FakeCluster(SystemClock(), num_brokers=1)
    cluster.create_topic(T, 3)
    return cluster


def make(cluster: FakeCluster, **config: Any) -> Producer:
    return fake_producer(cluster, **{"linger.ms": 1, "max.block.ms": 2000, **config})


@pytest.fixture
def producer(cluster: FakeCluster) -> Iterator[Producer]:
    producer = make(cluster)
    yield producer
    producer.close(5)


def stored(cluster: FakeCluster) -> list[tuple[int, bytes | None, bytes | None, list[Any]]]:
    """(partition, key, value, headers) of every stored record, by value."""
    return sorted(((p, r.key, r.value, r.headers) for p, r in cluster.all_records(T)), key=lambda r: r[2] or b"")


class Interceptor:
    def __init__(self, returns: Any = None) -> None:
        self.returns = returns
        self.seen: list[Any] = []

    def on_send(self, record: Any) -> Any:
        self.seen.append(record.value)
        return self.returns

    def on_acknowledgement(self, metadata: Any, error: Any) -> None:
        pass


# -- 1: send_batch() and the transaction state ---------------------------------------------------------------------


def test_send_batch_checks_the_transaction_state_as_send_does() -> None:
    clock = ManualClock()
    cluster = FakeCluster(clock, num_brokers=1)
    cluster.create_topic(T, 3)
    producer = Producer({"bootstrap.servers": "fake:1", "linger.ms": 5, "transactional.id": "tx-1"},
                        ports=Ports(transport=cluster, clock=clock, start_sender=False))

    def run_until(done: Callable[[], bool]) -> None:
        for _ in range(300):
            if done():
                return
            clock.advance(5)
            producer.sender.run_once()
        raise AssertionError(f"not done; state {producer.transaction_state()}")

    producer._metadata.add_topic(T, clock.monotonic_ms())
    run_until(lambda: producer._metadata.snapshot().partition_count(T) is not None)
    sends: list[Callable[[], object]] = [lambda: producer.send(T, b"early", partition=0),
                                         lambda: producer.send_batch(T, [b"early-1", b"early-2"], partitions=0)]
    for send in sends:
        with pytest.raises(TransactionStateError, match="init_transactions"):
            send()
    producer.init_transactions()
    run_until(lambda: producer.transaction_state().state == "READY")
    for send in sends:
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            send()
    producer.begin_transaction()
    result = producer.send_batch(T, [b"in-1", b"in-2"], partitions=0)
    run_until(result.done)
    producer.commit_transaction()
    run_until(lambda: producer.transaction_state().state == "READY")
    assert result.result(0) == 2
    assert [r.value for r in cluster.read_committed(T, 0)] == [b"in-1", b"in-2"]  # nothing early swept in
    producer.close(0)


# -- 2: a bad entry anywhere raises before anything of the call is queued ------------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"values": [b"ok", SURROGATE]}, SerializationError, r"values\[1\] is a str with no UTF-8 form"),
    ({"values": [b"ok"] * 3000 + [SURROGATE]}, SerializationError, r"values\[3000\] is a str"),  # after 2 chunks
    ({"values": [b"ok", b"ok"], "keys": [b"k", SURROGATE]}, SerializationError, r"keys\[1\] is a str"),
    ({"values": [b"ok", NON_CONTIGUOUS]}, SerializationError, r"values\[1\] must be a C-contiguous"),
    ({"values": [b"ok", RELEASED]}, SerializationError, r"values\[1\] must be a C-contiguous .*: operation forbidden"),
    ({"values": [b"ok", b"ok"], "keys": ["k", NON_CONTIGUOUS]}, SerializationError, r"keys\[1\] must be a C-con"),
    ({"values": [b"ok", b"ok"], "headers": [None, [(SURROGATE, b"x")]]}, SerializationError,
     r"headers\[1\]: header 'a\\ud800' key is a str with no UTF-8 form"),
    ({"values": [b"ok", b"ok"], "headers": [None, [("h", SURROGATE)]]}, SerializationError,
     r"headers\[1\]: header 'h' value is a str"),
    ({"values": [b"ok", b"ok"], "headers": [None, [("h", NON_CONTIGUOUS)]]}, SerializationError,
     r"headers\[1\]: header 'h' value must be a C-contiguous"),
    ({"values": [b"ok", b"ok"], "timestamps_ms": [1, 2**63]}, InvalidRecordError,
     r"timestamps_ms\[1\] is 9223372036854775808: it must be None or an int in \[0, 2\*\*63\)"),
    ({"values": [b"ok", b"ok"], "timestamps_ms": [1, -1]}, InvalidRecordError, r"timestamps_ms\[1\] is -1"),
    ({"values": pa.array([b"ok", b"ok"]), "keys": [b"k", SURROGATE]}, SerializationError, r"keys\[1\] is a str"),
])
def test_a_bad_entry_anywhere_raises_before_anything_is_queued(producer: Producer, cluster: FakeCluster,
                                                               kwargs: dict[str, Any], error: type[Exception],
                                                               message: str) -> None:
    with pytest.raises(error, match=message):
        producer.send_batch(T, **kwargs)
    assert producer.flush(5) == 0 and cluster.all_records(T) == []


def test_one_by_one_prepares_every_record_before_queueing_any(cluster: FakeCluster) -> None:
    """With serializers or interceptors a record that cannot be serialized raises too, and nothing is queued."""
    producer = make(cluster, **{"key.serializer": "str"})
    try:
        with pytest.raises(SerializationError, match="'str' serializer takes str, got bytes"):
            producer.send_batch(T, [b"a", b"b", b"c"], ["k1", "k2", b"k3"])
        with pytest.raises(SerializationError, match="'str' serializer's value is a str with no UTF-8 form"):
            producer.send_batch(T, [b"a", b"b"], ["k1", SURROGATE])
        assert producer.flush(5) == 0 and cluster.all_records(T) == []
    finally:
        producer.close(5)


# -- 3: iterables read once on the one-by-one path -----------------------------------------------------------------


@pytest.mark.parametrize("config", [
    {"value.serializer": "str", "key.serializer": "str"},
    {"interceptor.classes": [Interceptor()]},
    {"partitioner.class": lambda topic, key, key_bytes, value, value_bytes, n: 2},
])
def test_send_batch_reads_generators_once_through_send(cluster: FakeCluster, config: dict[str, Any]) -> None:
    producer = make(cluster, **config)
    try:
        result = producer.send_batch(T, (v for v in ["a", "b", "c"]), (k for k in ["x", "y", "z"]),
                                     partitions=(p for p in [0, 1, None]), timestamps_ms=(t for t in [5, 6, 7]),
                                     headers=(h for h in [None, [("h", b"1")], [("g", b"2")]]))
        assert result.result(10) == 3
    finally:
        producer.close(5)
    last_partition = 2 if "partitioner.class" in config else partition_for_key(b"z", 3)
    assert stored(cluster) == [(0, b"x", b"a", []), (1, b"y", b"b", [("h", b"1")]),
                               (last_partition, b"z", b"c", [("g", b"2")])]
    assert sorted(r.timestamp_ms for _, r in cluster.all_records(T)) == [5, 6, 7]


def test_send_batch_through_send_takes_what_the_serializers_take(cluster: FakeCluster) -> None:
    producer = make(cluster, **{"value.serializer": "json", "key.serializer": "int"})
    try:
        assert producer.send_batch(T, [{"n": 1}, [2]], pa.array([7, 8]), partitions=0).result(10) == 2
    finally:
        producer.close(5)
    assert [(r.key, r.value) for r in cluster.log(T, 0)] == [((7).to_bytes(8, "big"), b'{"n":1}'),
                                                           ((8).to_bytes(8, "big"), b"[2]")]


# -- 7: typed errors naming the argument ---------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"value": b"v", "timestamp_ms": 2**63}, InvalidRecordError, "timestamp_ms must be a non-negative int below"),
    ({"value": SURROGATE}, SerializationError, "value is a str with no UTF-8 form"),
    ({"value": b"v", "key": SURROGATE}, SerializationError, "key is a str with no UTF-8 form"),
    ({"value": b"v", "headers": [(SURROGATE, b"x")]}, SerializationError, "header 'a\\\\ud800' key is a str"),
    ({"value": b"v", "headers": {"h": SURROGATE}}, SerializationError, "header 'h' value is a str"),
    ({"value": NON_CONTIGUOUS}, SerializationError, "value must be a C-contiguous bytes-like object"),
    ({"value": RELEASED}, SerializationError, "value must be a C-contiguous bytes-like object: operation forbidden"),
    ({"value": b"v", "key": NON_CONTIGUOUS}, SerializationError, "key must be a C-contiguous bytes-like object"),
    ({"value": b"v", "headers": [("h", NON_CONTIGUOUS)]}, SerializationError, "header 'h' value must be a C-con"),
    ({"value": b"v", "headers": ["h=1"]}, SerializationError,
     r"each header must be a \(key, value\) pair \(the key a str, the value bytes-like, str or None\), got 'h=1'"),
])
def test_send_inputs_raise_typed_errors_naming_the_argument(producer: Producer, cluster: FakeCluster,
                                                            kwargs: dict[str, Any], error: type[Exception],
                                                            message: str) -> None:
    with pytest.raises(error, match=message) as info:
        producer.send(T, **kwargs)
    assert isinstance(info.value, KafkaError) and isinstance(info.value, TypeError | ValueError)
    assert producer.flush(5) == 0 and cluster.all_records(T) == []


@pytest.mark.parametrize(("args", "kwargs", "error", "message"), [
    ((pa.scalar(b"x"),), {}, SerializationError, "values must be a list or an Arrow array, not a pyarrow Binary"),
    ((pa.table({"v": [b"x"]}),), {}, SerializationError, "values must be a list or an Arrow array, not a pyarrow Tab"),
    ((b"abc",), {}, SerializationError, "values must be a list or an Arrow array .*, not one bytes"),
    (("abc",), {}, SerializationError, "values must be a list or an Arrow array .*, not one str"),
    ((5,), {}, SerializationError, "values must be a list or an Arrow array .*, not int"),
    ((None,), {}, SerializationError, "values must be a list or an Arrow array .*, not None"),
    ((pa.array([1, 2]),), {}, SerializationError, "values must be an Arrow binary, .* not int64"),
    ((pa.array(["a"], type=pa.string_view()),), {}, SerializationError, "values must be an Arrow .* not string_view"),
    (([b"a"], pa.array([1])), {}, SerializationError, "keys must be an Arrow binary, .* not int64"),
    (([b"a"],), {"headers": ["h=1"]}, SerializationError, r"headers\[0\] must be None, a dict or a list of"),
    (([b"a"],), {"headers": 5}, SerializationError, "headers must be a list or an Arrow array .*, not int"),
    (([b"a"],), {"timestamps_ms": 2**63}, InvalidRecordError, r"timestamps_ms 9223372036854775808 is out of range"),
    (([b"a"],), {"partitions": True}, InvalidRecordError, r"partitions must be None, an int in \[0, 3\) .* not bool"),
    (([b"a"],), {"timestamps_ms": 1.5}, InvalidRecordError, r"timestamps_ms must be None, an int .* not float"),
])
def test_send_batch_inputs_raise_typed_errors_naming_the_argument(producer: Producer, cluster: FakeCluster,
                                                                  args: tuple[Any, ...], kwargs: dict[str, Any],
                                                                  error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as info:
        producer.send_batch(T, *args, **kwargs)
    assert isinstance(info.value, KafkaError) and isinstance(info.value, TypeError | ValueError)
    assert producer.flush(5) == 0 and cluster.all_records(T) == []


@pytest.mark.parametrize("call", ["send", "send_batch"])
def test_an_interceptor_returning_a_non_record_is_a_typed_error(cluster: FakeCluster, call: str) -> None:
    interceptor = Interceptor(returns="not a record")
    producer = make(cluster, **{"interceptor.classes": [interceptor]})
    try:
        with pytest.raises(InvalidRecordError, match=r"interceptor\.classes: .*on_send returned str; it must "
                                                     r"return a ProducerRecord or None"):
            if call == "send":
                producer.send(T, b"v")
            else:
                producer.send_batch(T, [b"v1", b"v2"])
        assert interceptor.seen == ([b"v"] if call == "send" else [b"v1"])
        assert producer.flush(5) == 0 and cluster.all_records(T) == []
    finally:
        producer.close(5)


def test_serialization_errors_are_invalid_record_errors_and_type_errors() -> None:
    assert issubclass(SerializationError, InvalidRecordError) and issubclass(SerializationError, TypeError)
    assert issubclass(InvalidRecordError, ValueError) and issubclass(InvalidRecordError, KafkaError)


# -- 8: one rule for both paths ------------------------------------------------------------------------------------


def test_buffers_of_wider_items_are_refused_by_both_paths(producer: Producer, cluster: FakeCluster) -> None:
    np = pytest.importorskip("numpy")
    message = r"must be a buffer of bytes \(format B, b or c\), not int64 of 8-byte items"
    calls: list[Callable[[], object]] = [
        lambda: producer.send_batch(T, np.arange(3)),  # each element's 8 raw bytes as a value, before
        lambda: producer.send_batch(T, [b"ok", memoryview(np.arange(3))]),
        lambda: producer.send_batch(T, [b"ok"], headers=[[("h", np.arange(3))]]),
        lambda: producer.send(T, np.int64(7)),
        lambda: producer.send(T, memoryview(np.arange(3))),
        lambda: producer.send(T, b"v", key=array.array("q", [7])),
        lambda: producer.send(T, b"v", headers=[("h", np.arange(3))]),
    ]
    for call in calls:
        with pytest.raises(SerializationError, match=message.replace("int64", ".*")):
            call()
    assert producer.flush(5) == 0 and cluster.all_records(T) == []
    # buffers of bytes are bytes-like in both
    producer.send(T, np.frombuffer(b"np-send", np.uint8), key=array.array("b", b"k1"), partition=0).result(5)
    assert producer.send_batch(T, [np.frombuffer(b"np-batch", np.uint8)], [array.array("B", b"k2")],
                               partitions=0).result(5) == 1
    assert [(r.key, r.value) for r in cluster.log(T, 0)] == [(b"k1", b"np-send"), (b"k2", b"np-batch")]


@pytest.mark.parametrize("chosen", [True, False, 3, -1, 1.0])
def test_a_partitioners_result_is_checked_as_the_partition_argument(cluster: FakeCluster, chosen: Any) -> None:
    producer = make(cluster, **{"partitioner.class": lambda topic, key, key_bytes, value, value_bytes, n: chosen})
    try:
        message = rf"partitioner\.class returned {chosen!r}, not an int in \[0, 3\)"
        with pytest.raises(InvalidRecordError, match=message):
            producer.send(T, b"v")
        with pytest.raises(InvalidRecordError, match=message):
            producer.send_batch(T, [b"v1", b"v2"])
        with pytest.raises(InvalidRecordError, match="partition must be an int or None, got True"):
            producer.send(T, b"v", partition=True)
        assert producer.flush(5) == 0 and cluster.all_records(T) == []
    finally:
        producer.close(5)


HEADER_SHAPES: list[Any] = [
    {"h": b"1", "s": "text"},
    [("h", b"1"), ("s", "text")],
    [["h", bytearray(b"1")], ["s", "text"]],
    (("h", memoryview(b"1")), ("s", b"text")),
]


@pytest.mark.parametrize("headers", HEADER_SHAPES)
def test_send_and_send_batch_take_the_same_header_shapes(producer: Producer, cluster: FakeCluster,
                                                         headers: Any) -> None:
    producer.send(T, b"one", headers=headers, partition=0).result(5)
    assert producer.send_batch(T, [b"batch", b"none"], headers=[headers, None], partitions=0).result(5) == 2
    expected = [("h", b"1"), ("s", b"text")]
    assert [(r.value, r.headers) for r in cluster.log(T, 0)] == [(b"one", expected), (b"batch", expected),
                                                                (b"none", [])]


def test_send_batch_leaves_the_callers_header_lists_alone(producer: Producer) -> None:
    headers = [[("h", b"1")], [("g", b"2")]]
    assert producer.send_batch(T, [b"a", b"b"], headers=headers).result(5) == 2
    assert headers == [[("h", b"1")], [("g", b"2")]] and all(type(h) is list for h in headers)
