"""Producer.send_batch's headers as an Arrow list<struct<key, value>> array (read in place by the core): the same
records as the list path for the same input (null and empty lists, null values, string and binary keys and values,
many headers per record, sliced, chunked and offset children), on the GIL-free run path, the per-record path and
the path through send(); the argument errors; and both paths read back from the brokers by confluent-kafka."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from fakes import fake_producer

from cykafka import InvalidRecordError, Producer, SerializationError
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.verify import read_back

T = "headers"
N = 300


def _pairs(i: int) -> list[tuple[str, bytes | None]] | None:
    """Record i's headers: None, empty, a null value, a non-ASCII key, and (every 7th) more than the 8 inline ones."""
    if i % 11 == 3:
        return None
    if i % 11 == 5:
        return []
    count = 12 if i % 7 == 0 else 1 + i % 3
    return [(f"h{j}-ü" if j == 1 else f"h{j}", None if (i + j) % 5 == 0 else b"v%d.%d" % (i, j))
            for j in range(count)]


HEADERS = [_pairs(i) for i in range(N)]


def _struct(key_type: Any, value_type: Any) -> Any:
    return pa.struct([("key", key_type), ("value", value_type)])


STRING, BINARY = pa.string(), pa.binary()


def _arrow(pairs: list[Any], key_type: Any = STRING, value_type: Any = BINARY,
           list_type: Callable[[Any], Any] = pa.list_) -> Any:
    as_str = pa.types.is_string(value_type) or pa.types.is_large_string(value_type)
    as_bytes_key = pa.types.is_binary(key_type) or pa.types.is_large_binary(key_type)
    rows = [None if hs is None else [{"key": k.encode() if as_bytes_key else k,
                                      "value": v.decode() if as_str and v is not None else v} for k, v in hs]
            for hs in pairs]
    return pa.array(rows, type=list_type(_struct(key_type, value_type)))


def _offset_children(pairs: list[Any]) -> Any:
    """A list array over a struct child that is itself a slice (the offsets index the child's logical entries)."""
    flat = [{"key": "junk", "value": b"junk"}] * 3 + [{"key": k, "value": v} for hs in pairs for k, v in hs or ()]
    structs = pa.array(flat, type=_struct(pa.string(), pa.binary())).slice(3)
    offsets, position = [], 0
    for hs in pairs:
        offsets.append(position)
        position += len(hs or ())
    offsets.append(position)
    mask = pa.array([hs is None for hs in pairs])
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), structs, mask=mask)


VARIANTS: dict[str, Callable[[], Any]] = {
    "string-binary": lambda: _arrow(HEADERS),
    "large": lambda: _arrow(HEADERS, pa.large_string(), pa.large_binary(), pa.large_list),
    "string-values": lambda: _arrow(HEADERS, pa.string(), pa.string()),
    "binary-keys": lambda: _arrow(HEADERS, pa.binary(), pa.binary()),
    "sliced": lambda: _arrow([[("x", b"y")], None] * 5 + HEADERS + [[("z", None)]]).slice(10, N),
    "chunked": lambda: pa.chunked_array([_arrow(HEADERS[:100]), _arrow(HEADERS[100:101]), _arrow(HEADERS[101:])]),
    "offset-children": lambda: _offset_children(HEADERS),
}


def _records(cluster: FakeCluster) -> list[tuple[int, Any, Any, Any]]:
    return [(p, r.key, r.value, r.headers) for p in range(3) for r in cluster.log(T, p)]


def _send(headers: Any, keys: Any, partitions: Any, **config: Any) -> list[tuple[int, Any, Any, Any]]:
    cluster = FakeCluster(SystemClock(), num_brokers=1)
    cluster.create_topic(T, 3)
    producer = fake_producer(cluster, **{"linger.ms": 1, "max.block.ms": 2000, "batch.size": 4096, **config})
    try:
        values = pa.array([b"value-%04d" % i for i in range(N)])
        assert producer.send_batch(T, values, keys, partitions=partitions, timestamps_ms=1_000,
                                   headers=headers).result(10) == N
        return _records(cluster)
    finally:
        producer.close(5)


@pytest.fixture(scope="module")
def list_path() -> Iterator[Callable[[Any, Any], Any]]:
    cache: dict[str, Any] = {}

    def expected(keys_name: str, partitions: Any) -> Any:
        name = f"{keys_name}/{partitions}"
        if name not in cache:
            cache[name] = _send(HEADERS, KEYS[keys_name](), partitions)
        return cache[name]

    yield expected


KEYS: dict[str, Callable[[], Any]] = {
    # Arrow keys: runs appended without the GIL (headers in them); list keys: the per-record path
    "arrow": lambda: pa.array([b"k%d" % (i % 13) for i in range(N)]),
    "list": lambda: [b"k%d" % (i % 13) for i in range(N)],
}


@pytest.mark.parametrize("keys_name", list(KEYS))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_arrow_headers_land_as_the_list_path(variant: str, keys_name: str,
                                             list_path: Callable[[Any, Any], Any]) -> None:
    got = _send(VARIANTS[variant](), KEYS[keys_name](), None)
    want = list_path(keys_name, None)
    assert got == want
    assert [h for *_, h in sorted(got, key=lambda r: r[2])] == [hs or [] for hs in HEADERS]


def test_arrow_headers_with_a_fixed_partition_and_through_send(list_path: Callable[[Any, Any], Any]) -> None:
    """partitions=1: runs without keys; interceptors: every record through send() (the column's __getitem__)."""
    fixed = _send(VARIANTS["sliced"](), None, 1)
    assert fixed == _send(HEADERS, None, 1)
    assert [(p, h) for p, _, _, h in fixed] == [(1, hs or []) for hs in HEADERS]

    class Interceptor:
        def on_send(self, record: Any) -> Any:
            return None

        def on_acknowledgement(self, metadata: Any, error: Any) -> None:
            pass

    through_send = _send(VARIANTS["binary-keys"](), KEYS["list"](), None, **{"interceptor.classes": [Interceptor()]})
    assert sorted(through_send) == sorted(list_path("list", None))


def test_arrow_header_errors_name_headers_and_queue_nothing() -> None:
    cluster = FakeCluster(SystemClock(), num_brokers=1)
    cluster.create_topic(T, 3)
    producer = fake_producer(cluster, **{"linger.ms": 1})
    try:
        headers_type = pa.list_(_struct(pa.string(), pa.binary()))
        null_key = pa.array([[{"key": "a", "value": b"1"}],
                             [{"key": "b", "value": b"2"}, {"key": None, "value": b"x"}]], type=headers_type)
        with pytest.raises(SerializationError, match=r"^headers\[1\]: header keys must be str, got NoneType$"):
            producer.send_batch(T, [b"a", b"b"], headers=null_key)
        null_header = pa.array([[{"key": "a", "value": b"1"}, None]], type=headers_type)
        with pytest.raises(SerializationError, match=r"^headers\[0\]: each header must be a \(key, value\) "
                                                     r"pair \(the key a str, the value bytes-like, str or None\), "
                                                     r"got None$"):
            producer.send_batch(T, [b"a"], headers=null_header)
        other_names = pa.array([[{"name": "a", "value": b"1"}]], type=pa.list_(pa.struct([("name", pa.string()),
                                                                                          ("value", pa.binary())])))
        with pytest.raises(SerializationError, match=r"struct of fields key and value, not one of \['name', 'value'\]"):
            producer.send_batch(T, [b"a"], headers=other_names)
        with pytest.raises(SerializationError, match=r"headers must be None, a list of per-record headers or an "
                                                     r"Arrow list<struct.*not an Arrow list<item: string>"):
            producer.send_batch(T, [b"a"], headers=pa.array([["x"]]))
        int_keys = pa.array([[{"key": 1, "value": b"1"}]], type=pa.list_(_struct(pa.int32(), pa.binary())))
        with pytest.raises(SerializationError, match="an Arrow header key must be string or binary, not int32"):
            producer.send_batch(T, [b"a"], headers=int_keys)
        int_values = pa.array([[{"key": "k", "value": 1}]], type=pa.list_(_struct(pa.string(), pa.int32())))
        with pytest.raises(SerializationError, match="headers must be an Arrow binary, string"):
            producer.send_batch(T, [b"a"], headers=int_values)
        not_utf8 = pa.array([[{"key": b"ok", "value": b"1"}], [{"key": b"\xff", "value": b"1"}]],
                            type=pa.list_(_struct(pa.binary(), pa.binary())))
        with pytest.raises(SerializationError, match="headers: an Arrow header key must be UTF-8"):
            producer.send_batch(T, [b"a", b"b"], headers=not_utf8)
        with pytest.raises(InvalidRecordError, match=r"^headers has 2 entries for 1 records$"):
            producer.send_batch(T, [b"a"], headers=null_key)
        assert producer.flush(5) == 0 and cluster.all_records(T) == [], "nothing queued by the calls refused"
        # a bad key outside the slice is not a record's header: accepted
        assert producer.send_batch(T, [b"a"], headers=not_utf8.slice(0, 1)).result(10) == 1
        assert producer.send_batch(T, [b"a"], headers=null_key.slice(0, 1)).result(10) == 1
        assert sorted(r.headers for _, r in cluster.all_records(T)) == [[("a", b"1")], [("ok", b"1")]]
    finally:
        producer.close(5)


@pytest.mark.broker
def test_arrow_headers_read_back_equal_to_the_list_path(broker: Any) -> None:
    """Each variant sent by both paths into its own partition of two topics; confluent-kafka (check.crcs=true)
    reads back the same keys, values and headers in the same order."""
    stamp = int(time.time() * 1000)
    topics = {"list": f"headers-list-{stamp}", "arrow": f"headers-arrow-{stamp}"}
    values = pa.array([b"value-%04d" % i for i in range(N)])
    keys = KEYS["arrow"]()
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "batch.size": 8192}) as producer:
        results = [producer.send_batch(topics["list"], values, keys, partitions=0, timestamps_ms=stamp,
                                       headers=HEADERS)]
        for variant in ("string-binary", "large", "string-values", "sliced", "chunked", "offset-children"):
            results.append(producer.send_batch(topics["arrow"], values, keys, partitions=0, timestamps_ms=stamp,
                                               headers=VARIANTS[variant]()))
        assert [r.result(60) for r in results] == [N] * 7
    listed = [(r.key, r.value, r.headers) for r in read_back(broker.bootstrap_servers, topics["list"])]
    arrow = [(r.key, r.value, r.headers) for r in read_back(broker.bootstrap_servers, topics["arrow"])]
    assert len(listed) == N and len(arrow) == 6 * N
    assert [h for *_, h in listed] == [hs or [] for hs in HEADERS]
    for k in range(6):
        assert arrow[k * N:(k + 1) * N] == listed
