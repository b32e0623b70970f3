"""The Kafka wire codec: primitives, round trips for every API/version, bytes equal to kafka-python's independent
codec, a real broker (Tansu) answering what we send, and malformed input only ever raising ProtocolError."""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cykafka.adapters import kafka_protocol as kp
from cykafka.adapters.kafka_protocol import (
    ApiVersionRange,
    BrokerEndpoint,
    Coordinator,
    CreatableTopic,
    CreatableTopicConfig,
    CreatableTopicResult,
    FetchPartition,
    FetchPartitionResponse,
    FetchTopicResponse,
    LeaderIdAndEpoch,
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
    MetadataPartition,
    MetadataTopic,
    PartitionErrorCode,
    ProducePartitionResponse,
    ProduceTopicResponse,
    Reader,
    RecordError,
    TopicErrorCodes,
    TxnOffsetCommitPartition,
    Writer,
)
from cykafka.errors import BrokerResponseError, KafkaError, ProtocolError, RequestEncodeError, UnsupportedVersionError
from cykafka.ports import ClusterSnapshot, Node, PartitionInfo

# kafka-python loads its JSON schemas through importlib.resources' deprecated text API
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated. Use files:DeprecationWarning")

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")


def versions(api_key: int) -> range:
    low, high = kp.SUPPORTED_VERSIONS[api_key]
    return range(low, high + 1)


ALL_API_VERSIONS = [(api, v) for api in sorted(kp.SUPPORTED_VERSIONS) for v in versions(api)]


def joined(parts: list[bytes | memoryview]) -> bytes:
    return b"".join(parts)


# --- primitives ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
     (2**32 - 1, b"\xff\xff\xff\xff\x0f")],
)
def test_uvarint_known_encodings(value: int, encoded: bytes) -> None:
    w = Writer()
    w.uvarint(value)
    assert w.getvalue() == encoded
    r = Reader(encoded)
    assert r.uvarint() == value
    r.expect_end()


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"), (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
     (-(2**31), b"\xff\xff\xff\xff\x0f")],
)
def test_zigzag_varint_known_encodings(value: int, encoded: bytes) -> None:
    w = Writer()
    w.varint(value)
    assert w.getvalue() == encoded
    assert Reader(encoded).varint() == value


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip_and_matches_kafka_python(value: int) -> None:
    from kafka.record.util import encode_varint

    w = Writer()
    w.varlong(value)
    theirs = bytearray()
    encode_varint(value, theirs.append)
    assert w.getvalue() == bytes(theirs)
    r = Reader(w.getvalue())
    assert r.varlong() == value
    r.expect_end()


@given(st.integers(0, 2**64 - 1), st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**32 - 1))
def test_varint_family_round_trip(unsigned_long: int, signed: int, unsigned: int) -> None:
    w = Writer()
    w.uvarlong(unsigned_long)
    w.varint(signed)
    w.uvarint(unsigned)
    r = Reader(w.getvalue())
    assert (r.uvarlong(), r.varint(), r.uvarint()) == (unsigned_long, signed, unsigned)
    r.expect_end()


@given(
    flexible=st.booleans(),
    i8=st.integers(-128, 127),
    i16=st.integers(-(2**15), 2**15 - 1),
    i32=st.integers(-(2**31), 2**31 - 1),
    i64=st.integers(-(2**63), 2**63 - 1),
    u32=st.integers(0, 2**32 - 1),
    text=st.text(max_size=40),
    maybe_text=st.none() | st.text(max_size=10),
    data=st.binary(max_size=40),
    maybe_data=st.none() | st.binary(max_size=10),
    ints=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=10),
    texts=st.lists(st.text(max_size=5), max_size=5),
    flag=st.booleans(),
    ident=st.uuids(),
)
def test_primitives_round_trip(
    flexible: bool, i8: int, i16: int, i32: int, i64: int, u32: int, text: str, maybe_text: str | None,
    data: bytes, maybe_data: bytes | None, ints: list[int], texts: list[str], flag: bool, ident: uuid.UUID,
) -> None:
    w = Writer(flexible)
    w.int8(i8)
    w.int16(i16)
    w.int32(i32)
    w.int64(i64)
    w.uint32(u32)
    w.string(text)
    w.nullable_string(maybe_text)
    w.legacy_nullable_string(maybe_text)
    w.bytes_(data)
    w.nullable_bytes(maybe_data)
    w.int32_array(ints)
    w.string_array(texts)
    w.nullable_array_length(None)
    w.boolean(flag)
    w.uuid(ident)
    w.tagged_fields({3: b"abc", 1: b""})
    r = Reader(w.getvalue(), flexible)
    assert (r.int8(), r.int16(), r.int32(), r.int64(), r.uint32()) == (i8, i16, i32, i64, u32)
    assert (r.string(), r.nullable_string(), r.legacy_nullable_string()) == (text, maybe_text, maybe_text)
    assert r.bytes_view() == data
    got = r.nullable_bytes_view()
    assert (None if got is None else bytes(got)) == maybe_data
    assert r.int32_array() == tuple(ints)
    assert r.string_array() == tuple(texts)
    assert r.nullable_array_length() == -1
    assert r.boolean() is flag
    assert r.uuid() == ident
    tags = r.tagged_fields()
    assert {k: bytes(v) for k, v in tags.items()} == ({1: b"", 3: b"abc"} if flexible else {})
    r.expect_end()


def test_compact_and_legacy_encodings_on_the_wire() -> None:
    w = Writer(flexible=True)
    w.string("ab")
    w.nullable_string(None)
    w.array_length(2)
    w.nullable_bytes(None)
    w.tagged_fields()
    assert w.getvalue() == b"\x03ab\x00\x03\x00\x00"
    w = Writer(flexible=False)
    w.string("ab")
    w.nullable_string(None)
    w.array_length(2)
    w.nullable_bytes(None)
    w.tagged_fields()
    assert w.getvalue() == b"\x00\x02ab\xff\xff\x00\x00\x00\x02\xff\xff\xff\xff"


MALFORMED: list[tuple[str, bytes, bool, Callable[[Reader], object]]] = [
    ("truncated int32", b"\x00\x01", False, Reader.int32),
    ("truncated int64", b"\x00" * 7, False, Reader.int64),
    ("string longer than data", b"\x00\x05ab", False, Reader.string),
    ("negative string length", b"\xff\xfe", False, Reader.nullable_string),
    ("null where string required", b"\xff\xff", False, Reader.string),
    ("compact null where string required", b"\x00", True, Reader.string),
    ("compact string longer than data", b"\x10ab", True, Reader.string),
    ("invalid utf-8", b"\x00\x02\xff\xfe", False, Reader.string),
    ("bytes longer than data", b"\x7f\xff\xff\xffab", False, Reader.bytes_view),
    ("negative bytes length", b"\xff\xff\xff\xf0", False, Reader.nullable_bytes_view),
    ("absurd array length", b"\x7f\xff\xff\xff\x00\x00\x00\x00", False, Reader.int32_array),
    ("absurd compact array length", b"\xff\xff\xff\xff\x0f", True, Reader.string_array),
    ("array of int32 longer than data", b"\x00\x00\x00\x02\x00\x00\x00\x01", False, Reader.int32_array),
    ("negative array length", b"\xff\xff\xff\xfe", False, lambda r: r.nullable_array_length()),
    ("null array where required", b"\xff\xff\xff\xff", False, lambda r: r.array_length()),
    ("overlong varint", b"\x80\x80\x80\x80\x80\x01", False, Reader.uvarint),
    ("varint above 32 bits", b"\xff\xff\xff\xff\x1f", False, Reader.uvarint),
    ("truncated varint", b"\x80\x80", False, Reader.varlong),
    ("tagged field longer than data", b"\x01\x00\x05ab", True, Reader.tagged_fields),
    ("absurd tagged field count", b"\xff\xff\xff\xff\x0f", True, Reader.tagged_fields),
    ("truncated uuid", b"\x00" * 15, False, Reader.uuid),
]


@pytest.mark.parametrize(("what", "data", "flexible", "read"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_primitives_raise_protocol_error(
    what: str, data: bytes, flexible: bool, read: Callable[[Reader], object]
) -> None:
    with pytest.raises(ProtocolError):
        read(Reader(data, flexible))


def test_expect_end_rejects_trailing_bytes() -> None:
    r = Reader(b"\x00\x01\x02")
    r.int16()
    with pytest.raises(ProtocolError, match="trailing"):
        r.expect_end()


def test_writer_rejects_out_of_range_values() -> None:
    with pytest.raises(RequestEncodeError):
        Writer().uvarint(-1)
    with pytest.raises(RequestEncodeError):
        Writer().varint(2**31)
    with pytest.raises(RequestEncodeError):
        Writer().string("x" * 40000)
    with pytest.raises(RequestEncodeError):
        kp.encode_request(kp.InitProducerIdRequest(None, 2**40), 4, 1, None)
    with pytest.raises(RequestEncodeError, match="exactly one key"):
        kp.encode_request(kp.FindCoordinatorRequest(("a", "b")), 3, 1, None)


# --- headers, framing, versions ------------------------------------------------------------------------------------


def test_request_header_v1_and_v2_on_the_wire() -> None:
    v1 = joined(kp.encode_request(kp.ApiVersionsRequest(), 2, 0x01020304, "ab"))
    assert v1 == b"\x00\x00\x00\x0c" + b"\x00\x12\x00\x02\x01\x02\x03\x04\x00\x02ab"
    v2 = joined(kp.encode_request(kp.ApiVersionsRequest("n", "1"), 3, 5, None))
    # header v2: client_id keeps its int16 length, then an empty tagged-field section
    assert v2 == b"\x00\x00\x00\x10" + b"\x00\x12\x00\x03\x00\x00\x00\x05\xff\xff\x00" + b"\x02n\x021\x00"


def test_header_versions_follow_flexible_thresholds() -> None:
    assert [kp.request_header_version(kp.PRODUCE, v) for v in (3, 8, 9, 10)] == [1, 1, 2, 2]
    assert [kp.response_header_version(kp.PRODUCE, v) for v in (8, 9)] == [0, 1]
    assert [kp.response_header_version(kp.METADATA, v) for v in (8, 9)] == [0, 1]
    assert kp.response_header_version(kp.API_VERSIONS, 3) == 0  # always v0
    assert kp.request_header_version(kp.API_VERSIONS, 3) == 2
    assert kp.response_header_version(kp.SASL_HANDSHAKE, 1) == 0
    assert [kp.response_header_version(kp.INIT_PRODUCER_ID, v) for v in (1, 2)] == [0, 1]


def test_pick_version() -> None:
    assert kp.pick_version(kp.PRODUCE, 0, 11) == 10
    assert kp.pick_version(kp.PRODUCE, 0, 7) == 7
    assert kp.pick_version(kp.INIT_PRODUCER_ID, 0, 5) == 4
    with pytest.raises(UnsupportedVersionError, match="Produce"):
        kp.pick_version(kp.PRODUCE, 0, 2)
    with pytest.raises(UnsupportedVersionError, match="Metadata"):
        kp.pick_version(kp.METADATA, 13, 14)
    with pytest.raises(UnsupportedVersionError, match="api key 99"):
        kp.pick_version(99, 0, 1)
    assert issubclass(UnsupportedVersionError, KafkaError)


def test_unsupported_versions_are_refused() -> None:
    with pytest.raises(UnsupportedVersionError):
        kp.encode_request(kp.ProduceRequest(None, 1, 1, ()), 2, 1, None)
    with pytest.raises(UnsupportedVersionError):
        kp.decode_response(kp.METADATA, 13, b"")
    with pytest.raises(ProtocolError):
        kp.decode_request(b"\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff")  # Produce v2


def test_produce_records_are_attached_not_copied() -> None:
    batch_a = bytearray(b"A" * 100)
    batch_b = memoryview(bytearray(b"B" * 50))
    request = kp.ProduceRequest(None, -1, 1000, (("t", ((0, batch_a), (1, batch_b))),))
    parts = kp.encode_request(request, 9, 1, "c")
    views = [p for p in parts if isinstance(p, memoryview)]
    assert [len(v) for v in views] == [100, 50]
    batch_a[0] = ord("Z")  # the frame sees the caller's memory
    batch_b[0] = ord("Y")
    assert bytes(views[0][:1]) == b"Z" and bytes(views[1][:1]) == b"Y"
    frame = joined(parts)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    header, decoded = kp.decode_request(frame[4:])
    assert header == kp.RequestHeader(kp.PRODUCE, 9, 1, "c")
    assert decoded == request


def test_api_versions_falls_back_to_v0_on_unsupported_version() -> None:
    # A broker that does not know our version answers in v0 with error 35 and its own range for ApiVersions.
    body = struct.pack(">ihi3h", 9, 35, 1, 18, 0, 2)
    correlation_id, response = kp.decode_response(kp.API_VERSIONS, 3, body)
    assert correlation_id == 9
    assert response == kp.ApiVersionsResponse(35, (ApiVersionRange(18, 0, 2),))


def test_unknown_tagged_fields_are_skipped() -> None:
    w = Writer(flexible=True)
    w.int32(7)  # correlation id
    w.tagged_fields({9: b"header-tag"})
    w.int32(0)
    w.int16(0)
    w.int64(42)
    w.int16(1)
    w.tagged_fields({0: b"x", 5: b"unknown"})
    correlation_id, response = kp.decode_response(kp.INIT_PRODUCER_ID, 2, w.getvalue())
    assert (correlation_id, response) == (7, kp.InitProducerIdResponse(0, 42, 1, 0))


# --- round trips for every API and version -------------------------------------------------------------------------


def _many(m: bool, item: Any, rich: tuple[Any, ...]) -> tuple[Any, ...]:
    """Minimal samples: 40 minimal items (tests the array length lower bounds); else the rich items."""
    return (item,) * 40 if m else rich


def sample(api: int, v: int, m: bool) -> tuple[kp.Request, kp.Response]:
    """A request and a response for `api` at version `v` carrying only what that version can carry."""
    s = "" if m else "name"
    if api == kp.API_VERSIONS:
        req: kp.Request = kp.ApiVersionsRequest(s, s) if v >= 3 else kp.ApiVersionsRequest()
        ranges = _many(m, ApiVersionRange(0, 0, 0), (ApiVersionRange(0, 3, 11), ApiVersionRange(18, 0, 4)))
        return req, kp.ApiVersionsResponse(0, ranges, 12 if v >= 1 else 0)
    if api == kp.METADATA:
        req = kp.MetadataRequest(
            None if m else ("a", "bb"), v < 4 or v % 2 == 0, include_topic_authorized_operations=v >= 8 and not m
        )
        brokers = _many(m, BrokerEndpoint(0, "", 0), (BrokerEndpoint(1, "h1", 9092), BrokerEndpoint(2, "h", 1, "r")))
        part = MetadataPartition(
            0 if m else 9, 0 if m else 3, 1, (5 if v >= 7 else -1), () if m else (1, 2), () if m else (1,),
            (2,) if v >= 5 and not m else (),
        )
        topic = MetadataTopic(
            0 if m else 3, s, TOPIC_ID if v >= 10 else kp.ZERO_UUID, not m, _many(m, part, (part, part)),
            0b1010 if v >= 8 else kp.INT32_MIN,
        )
        topics = _many(m, topic, (topic, MetadataTopic(0, None) if v >= 12 else MetadataTopic(0, "")))
        return req, kp.MetadataResponse(
            brokers, "cluster" if v >= 2 and not m else None, 2, topics, 3 if v >= 3 else 0,
            7 if 8 <= v <= 10 else kp.INT32_MIN,
        )
    if api == kp.PRODUCE:
        req = kp.ProduceRequest(
            None if m else "txn", -1, 30000,
            _many(m, ("", ()), (("t", ((0, b"batch0"), (3, b""), (2, None))), ("u", ((1, memoryview(b"xyz")),)))),
        )
        partition = ProducePartitionResponse(
            0 if m else 7, 0 if m else 6, 100, 1234, 5 if v >= 5 else -1,
            _many(m, RecordError(0), (RecordError(2, "bad"), RecordError(3))) if v >= 8 else (),
            "msg" if v >= 8 and not m else None, LeaderIdAndEpoch(4, 7) if v >= 10 and not m else None,
        )
        topics = _many(m, ProduceTopicResponse("", ()), (ProduceTopicResponse("t", (partition,)),))
        if m:
            topics = (*topics, ProduceTopicResponse("", _many(m, partition, ())))
        endpoints = (BrokerEndpoint(4, "h4", 9094, "rack"),) if v >= 10 and not m else ()
        return req, kp.ProduceResponse(topics, 9, endpoints)
    if api == kp.INIT_PRODUCER_ID:
        req = kp.InitProducerIdRequest(None if m else "txn", 60000, 77 if v >= 3 else -1, 3 if v >= 3 else -1)
        return req, kp.InitProducerIdResponse(0 if m else 47, 1000, 2, 5)
    if api == kp.FIND_COORDINATOR:
        if v < 4:
            coordinators: tuple[Coordinator, ...] = (Coordinator(None, 1, s, 9092, 0 if m else 15, None if m else "x"),)
            return kp.FindCoordinatorRequest((s,), 0 if m else 1), kp.FindCoordinatorResponse(coordinators, 4)
        rich = (Coordinator("a", 1, "h", 9092), Coordinator("b", -1, "", -1, 15, "no"))
        coordinators = _many(m, Coordinator("", 0, "", 0), rich)
        return kp.FindCoordinatorRequest(_many(m, "", ("a", "b"))), kp.FindCoordinatorResponse(coordinators, 4)
    if api == kp.ADD_PARTITIONS_TO_TXN:
        req = kp.AddPartitionsToTxnRequest(s, 5, 1, _many(m, ("", ()), (("t", (0, 1, 2)), ("u", ()))))
        rich_errors = (TopicErrorCodes("t", (PartitionErrorCode(0, 0), PartitionErrorCode(1, 51))),)
        errors = _many(m, TopicErrorCodes("", ()), rich_errors)
        return req, kp.AddPartitionsToTxnResponse(errors, 1)
    if api == kp.ADD_OFFSETS_TO_TXN:
        return kp.AddOffsetsToTxnRequest(s, 5, 1, s), kp.AddOffsetsToTxnResponse(0 if m else 51, 2)
    if api == kp.END_TXN:
        return kp.EndTxnRequest(s, 5, 1, not m), kp.EndTxnResponse(0 if m else 48, 3)
    if api == kp.TXN_OFFSET_COMMIT:
        p1 = TxnOffsetCommitPartition(0, 10, 4 if v >= 2 else -1, None if m else "meta")
        req = kp.TxnOffsetCommitRequest(
            s, s, 5, 1, _many(m, ("", (p1,)), (("t", (p1, TxnOffsetCommitPartition(1, 11))), ("u", ()))),
            3 if v >= 3 else -1, "member" if v >= 3 and not m else "", "inst" if v >= 3 and not m else None,
        )
        ok = (PartitionErrorCode(0, 0),)
        errors = _many(m, TopicErrorCodes("", ok), (TopicErrorCodes("t", ok),))
        return req, kp.TxnOffsetCommitResponse(errors, 1)
    if api == kp.SASL_HANDSHAKE:
        mechanisms = _many(m, "", ("PLAIN", "SCRAM-SHA-256"))
        return kp.SaslHandshakeRequest(s), kp.SaslHandshakeResponse(0 if m else 33, mechanisms)
    if api == kp.SASL_AUTHENTICATE:
        return kp.SaslAuthenticateRequest(b"" if m else b"\x00user\x00pass"), kp.SaslAuthenticateResponse(
            0 if m else 58, None if m else "failed", b"" if m else b"token", 3600000 if v >= 1 and not m else 0
        )
    if api == kp.CREATE_TOPICS:
        topics_req = _many(m, CreatableTopic(""), (
            CreatableTopic("t", 3, 1),
            CreatableTopic("u", -1, -1, ((0, (1, 2)), (1, (2,))), (("cleanup.policy", "compact"), ("x", None))),
        ))
        config = CreatableTopicConfig("a", "b", False, 5, False)
        results = _many(m, CreatableTopicResult("", 0), (
            CreatableTopicResult(
                "t", 0, None, TOPIC_ID if v >= 7 else kp.ZERO_UUID, 3 if v >= 5 else -1, 1 if v >= 5 else -1,
                (config, CreatableTopicConfig("s", None, True, -1, True)) if v >= 5 else None,
            ),
            CreatableTopicResult("u", 36, "exists", kp.ZERO_UUID, -1, -1, () if v >= 5 else None, 29 if v >= 5 else 0),
        ))
        return kp.CreateTopicsRequest(topics_req, 5000, not m), kp.CreateTopicsResponse(results, 2)
    if api == kp.FETCH:
        fp = FetchPartition(0, 5, 1000, 3 if v >= 9 else -1, 2 if v >= 5 else -1, 1 if v >= 12 else -1)
        req = kp.FetchRequest(
            _many(m, ("", ()), (("t", (fp, FetchPartition(1, 0))),)), 100, 1, 1 << 20, 1,
            7 if v >= 7 else 0, 2 if v >= 7 else -1, (("f", (1, 2)),) if v >= 7 and not m else (),
            "rack" if v >= 11 and not m else "",
        )
        partition = FetchPartitionResponse(
            0, 0, 10, 9, 1 if v >= 5 else -1, None if m else ((5, 3),), 2 if v >= 11 else -1, None if m else b"recs"
        )
        rich_topics = (FetchTopicResponse("t", (partition, FetchPartitionResponse(1, 1, -1))),)
        topics_resp = _many(m, FetchTopicResponse("", ()), rich_topics)
        if m:
            topics_resp = (*topics_resp, FetchTopicResponse("", _many(m, partition, ())))
        return req, kp.FetchResponse(topics_resp, 1, 0 if m or v < 7 else 70, 7 if v >= 7 else 0)
    if api == kp.LIST_OFFSETS:
        lp = ListOffsetsPartition(0, -1, 2 if v >= 4 else -1)
        wanted = _many(m, ("", (lp,)), (("t", (lp, ListOffsetsPartition(1, -2))),))
        req = kp.ListOffsetsRequest(wanted, 1 if v >= 2 else 0)
        lr = ListOffsetsPartitionResponse(0, 0, -1, 42, 2 if v >= 4 else -1)
        topics_lo = _many(m, ListOffsetsTopicResponse("", (lr,)), (ListOffsetsTopicResponse("t", (lr, lr)),))
        return req, kp.ListOffsetsResponse(topics_lo, 3 if v >= 2 else 0)
    raise AssertionError(f"no sample for api {api}")


@pytest.mark.parametrize("minimal", [False, True], ids=["rich", "minimal"])
@pytest.mark.parametrize(("api", "version"), ALL_API_VERSIONS)
def test_round_trip(api: int, version: int, minimal: bool) -> None:
    request, response = sample(api, version, minimal)
    frame = joined(kp.encode_request(request, version, 42, "client-1"))
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    header, decoded_request = kp.decode_request(frame[4:])
    assert header == kp.RequestHeader(api, version, 42, "client-1")
    assert decoded_request == request
    frame = joined(kp.encode_response(response, version, 43))
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    correlation_id, decoded_response = kp.decode_response(api, version, frame[4:])
    assert correlation_id == 43
    assert decoded_response == response


partition_responses = st.builds(
    ProducePartitionResponse,
    partition_index=st.integers(0, 2**31 - 1),
    error_code=st.sampled_from(sorted(kp.ERRORS)),
    base_offset=st.integers(-1, 2**63 - 1),
    log_append_time_ms=st.integers(-1, 2**62),
    log_start_offset=st.integers(-1, 2**62),
    record_errors=st.lists(st.builds(RecordError, st.integers(0, 1000), st.none() | st.text(max_size=8)), max_size=3)
    .map(tuple),
    error_message=st.none() | st.text(max_size=8),
    current_leader=st.none() | st.builds(LeaderIdAndEpoch, st.integers(-1, 100), st.integers(-1, 100)),
)


@given(
    version=st.sampled_from(versions(kp.PRODUCE)),
    topics=st.lists(
        st.builds(ProduceTopicResponse, st.text(max_size=10), st.lists(partition_responses, max_size=4).map(tuple)),
        max_size=4,
    ),
    throttle_time_ms=st.integers(0, 2**31 - 1),
)
def test_produce_response_round_trip_hypothesis(
    version: int, topics: list[ProduceTopicResponse], throttle_time_ms: int
) -> None:
    def fit(p: ProducePartitionResponse) -> ProducePartitionResponse:  # drop what the version cannot carry
        return ProducePartitionResponse(
            p.partition_index, p.error_code, p.base_offset, p.log_append_time_ms,
            p.log_start_offset if version >= 5 else -1, p.record_errors if version >= 8 else (),
            p.error_message if version >= 8 else None, p.current_leader if version >= 10 else None,
        )

    response = kp.ProduceResponse(
        tuple(ProduceTopicResponse(t.name, tuple(map(fit, t.partitions))) for t in topics), throttle_time_ms
    )
    frame = joined(kp.encode_response(response, version, 1))
    assert kp.decode_response(kp.PRODUCE, version, frame[4:]) == (1, response)


@given(
    version=st.sampled_from(versions(kp.PRODUCE)),
    transactional_id=st.none() | st.text(max_size=10),
    acks=st.sampled_from([-1, 0, 1]),
    topics=st.lists(
        st.tuples(st.text(max_size=10), st.lists(st.tuples(st.integers(0, 1000), st.binary(max_size=64)), max_size=4)),
        max_size=4,
    ),
)
def test_produce_request_round_trip_hypothesis(
    version: int, transactional_id: str | None, acks: int, topics: list[tuple[str, list[tuple[int, bytes]]]]
) -> None:
    request = kp.ProduceRequest(transactional_id, acks, 1500, tuple((t, tuple(ps)) for t, ps in topics))
    header, decoded = kp.decode_request(joined(kp.encode_request(request, version, 3, None))[4:])
    assert header.client_id is None
    assert decoded == request


# --- golden: byte-for-byte against kafka-python's codec (generated from Kafka's JSON definitions) ---------------


def _kbuild(data_class: Any, version: int, values: dict[str, Any]) -> Any:
    kwargs = {}
    for name, value in values.items():
        f = data_class.fields[name]
        if f.is_struct_array() and value is not None:
            value = [_kbuild(f.data_class, version, item) for item in value]
        elif f.is_struct() and value is not None:
            value = _kbuild(f.data_class, version, value)
        kwargs[name] = value
    return data_class(version=version, **kwargs)


def _bits(operations: int) -> set[int] | None:
    return None if operations == kp.INT32_MIN else {b for b in range(32) if operations >> b & 1}


def _kafka_python_request(api: int, v: int, r: Any) -> tuple[Any, dict[str, Any]]:
    from kafka.protocol.admin.topics import CreateTopicsRequest
    from kafka.protocol.consumer.fetch import FetchRequest
    from kafka.protocol.consumer.offsets import ListOffsetsRequest
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
    from kafka.protocol.metadata.metadata import MetadataRequest
    from kafka.protocol.producer.produce import ProduceRequest
    from kafka.protocol.producer.transaction import (
        AddOffsetsToTxnRequest,
        AddPartitionsToTxnRequest,
        EndTxnRequest,
        InitProducerIdRequest,
        TxnOffsetCommitRequest,
    )
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    if api == kp.API_VERSIONS:
        d: dict[str, Any] = (
            {"client_software_name": r.client_software_name, "client_software_version": r.client_software_version}
            if v >= 3 else {}
        )
        return ApiVersionsRequest, d
    if api == kp.METADATA:
        d = {"topics": None if r.topics is None else [{"name": t, "topic_id": kp.ZERO_UUID} for t in r.topics],
             "allow_auto_topic_creation": r.allow_auto_topic_creation,
             "include_topic_authorized_operations": r.include_topic_authorized_operations}
        if 8 <= v <= 10:
            d["include_cluster_authorized_operations"] = False
        return MetadataRequest, d
    if api == kp.PRODUCE:
        return ProduceRequest, {
            "transactional_id": r.transactional_id, "acks": r.acks, "timeout_ms": r.timeout_ms,
            "topic_data": [{"name": t, "partition_data": [{"index": i, "records": None if b is None else bytes(b)}
                                                          for i, b in ps]} for t, ps in r.topics],
        }
    if api == kp.INIT_PRODUCER_ID:
        return InitProducerIdRequest, {"transactional_id": r.transactional_id,
                                       "transaction_timeout_ms": r.transaction_timeout_ms,
                                       "producer_id": r.producer_id, "producer_epoch": r.producer_epoch}
    if api == kp.FIND_COORDINATOR:
        d = {"key_type": r.key_type}
        d.update({"coordinator_keys": list(r.keys)} if v >= 4 else {"key": r.keys[0]})
        return FindCoordinatorRequest, d
    if api == kp.ADD_PARTITIONS_TO_TXN:
        return AddPartitionsToTxnRequest, {
            "v3_and_below_transactional_id": r.transactional_id, "v3_and_below_producer_id": r.producer_id,
            "v3_and_below_producer_epoch": r.producer_epoch,
            "v3_and_below_topics": [{"name": t, "partitions": list(ps)} for t, ps in r.topics],
        }
    if api == kp.ADD_OFFSETS_TO_TXN:
        return AddOffsetsToTxnRequest, {"transactional_id": r.transactional_id, "producer_id": r.producer_id,
                                        "producer_epoch": r.producer_epoch, "group_id": r.group_id}
    if api == kp.END_TXN:
        return EndTxnRequest, {"transactional_id": r.transactional_id, "producer_id": r.producer_id,
                               "producer_epoch": r.producer_epoch, "committed": r.committed}
    if api == kp.TXN_OFFSET_COMMIT:
        return TxnOffsetCommitRequest, {
            "transactional_id": r.transactional_id, "group_id": r.group_id, "producer_id": r.producer_id,
            "producer_epoch": r.producer_epoch, "generation_id": r.generation_id, "member_id": r.member_id,
            "group_instance_id": r.group_instance_id,
            "topics": [{"name": t, "partitions": [
                {"partition_index": p.partition_index, "committed_offset": p.committed_offset,
                 "committed_leader_epoch": p.committed_leader_epoch, "committed_metadata": p.committed_metadata}
                for p in ps]} for t, ps in r.topics],
        }
    if api == kp.SASL_HANDSHAKE:
        return SaslHandshakeRequest, {"mechanism": r.mechanism}
    if api == kp.SASL_AUTHENTICATE:
        return SaslAuthenticateRequest, {"auth_bytes": r.auth_bytes}
    if api == kp.CREATE_TOPICS:
        return CreateTopicsRequest, {
            "topics": [{"name": t.name, "num_partitions": t.num_partitions, "replication_factor": t.replication_factor,
                        "assignments": [{"partition_index": i, "broker_ids": list(b)} for i, b in t.assignments],
                        "configs": [{"name": n, "value": val} for n, val in t.configs]} for t in r.topics],
            "timeout_ms": r.timeout_ms, "validate_only": r.validate_only,
        }
    if api == kp.FETCH:
        return FetchRequest, {
            "replica_id": r.replica_id, "max_wait_ms": r.max_wait_ms, "min_bytes": r.min_bytes,
            "max_bytes": r.max_bytes, "isolation_level": r.isolation_level, "session_id": r.session_id,
            "session_epoch": r.session_epoch,
            "topics": [{"topic": t, "partitions": [
                {"partition": p.partition, "current_leader_epoch": p.current_leader_epoch,
                 "fetch_offset": p.fetch_offset, "last_fetched_epoch": p.last_fetched_epoch,
                 "log_start_offset": p.log_start_offset, "partition_max_bytes": p.partition_max_bytes}
                for p in ps]} for t, ps in r.topics],
            "forgotten_topics_data": [{"topic": t, "partitions": list(ps)} for t, ps in r.forgotten_topics],
            "rack_id": r.rack_id,
        }
    if api == kp.LIST_OFFSETS:
        return ListOffsetsRequest, {
            "replica_id": r.replica_id, "isolation_level": r.isolation_level,
            "topics": [{"name": t, "partitions": [
                {"partition_index": p.partition_index, "current_leader_epoch": p.current_leader_epoch,
                 "timestamp": p.timestamp} for p in ps]} for t, ps in r.topics],
        }
    raise AssertionError(api)


def _kafka_python_response(api: int, v: int, r: Any) -> tuple[Any, dict[str, Any]]:
    from kafka.protocol.admin.topics import CreateTopicsResponse
    from kafka.protocol.consumer.fetch import FetchResponse
    from kafka.protocol.consumer.offsets import ListOffsetsResponse
    from kafka.protocol.metadata.api_versions import ApiVersionsResponse
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse
    from kafka.protocol.metadata.metadata import MetadataResponse
    from kafka.protocol.producer.produce import ProduceResponse
    from kafka.protocol.producer.transaction import (
        AddOffsetsToTxnResponse,
        AddPartitionsToTxnResponse,
        EndTxnResponse,
        InitProducerIdResponse,
        TxnOffsetCommitResponse,
    )
    from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

    def broker(b: BrokerEndpoint) -> dict[str, Any]:
        return {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}

    def topic_errors(t: TopicErrorCodes, key: str, code_key: str) -> dict[str, Any]:
        return {"name": t.name, key: [{"partition_index": p.partition_index, code_key: p.error_code}
                                      for p in t.partitions]}

    if api == kp.API_VERSIONS:
        return ApiVersionsResponse, {
            "error_code": r.error_code, "throttle_time_ms": r.throttle_time_ms,
            "api_keys": [{"api_key": a.api_key, "min_version": a.min_version, "max_version": a.max_version}
                         for a in r.api_keys],
        }
    if api == kp.METADATA:
        d: dict[str, Any] = {
            "throttle_time_ms": r.throttle_time_ms, "brokers": [broker(b) for b in r.brokers],
            "cluster_id": r.cluster_id, "controller_id": r.controller_id,
            "topics": [{"error_code": t.error_code, "name": t.name, "topic_id": t.topic_id,
                        "is_internal": t.is_internal,
                        "authorized_operations": _bits(t.topic_authorized_operations),
                        "partitions": [{"error_code": p.error_code, "partition_index": p.partition_index,
                                        "leader_id": p.leader_id, "leader_epoch": p.leader_epoch,
                                        "replica_nodes": list(p.replica_nodes), "isr_nodes": list(p.isr_nodes),
                                        "offline_replicas": list(p.offline_replicas)} for p in t.partitions]}
                       for t in r.topics],
        }
        if 8 <= v <= 10:
            d["authorized_operations"] = _bits(r.cluster_authorized_operations)
        return MetadataResponse, d
    if api == kp.PRODUCE:
        def partition(p: ProducePartitionResponse) -> dict[str, Any]:
            d = {"index": p.partition_index, "error_code": p.error_code, "base_offset": p.base_offset,
                 "log_append_time_ms": p.log_append_time_ms, "log_start_offset": p.log_start_offset,
                 "record_errors": [{"batch_index": e.batch_index, "batch_index_error_message": e.message}
                                   for e in p.record_errors],
                 "error_message": p.error_message}
            if p.current_leader is not None:
                d["current_leader"] = {"leader_id": p.current_leader.leader_id,
                                       "leader_epoch": p.current_leader.leader_epoch}
            return d

        d = {"throttle_time_ms": r.throttle_time_ms,
             "responses": [{"name": t.name, "partition_responses": [partition(p) for p in t.partitions]}
                           for t in r.topics]}
        if r.node_endpoints:
            d["node_endpoints"] = [broker(b) for b in r.node_endpoints]
        return ProduceResponse, d
    if api == kp.INIT_PRODUCER_ID:
        return InitProducerIdResponse, {"throttle_time_ms": r.throttle_time_ms, "error_code": r.error_code,
                                        "producer_id": r.producer_id, "producer_epoch": r.producer_epoch}
    if api == kp.FIND_COORDINATOR:
        if v < 4:
            c = r.coordinators[0]
            return FindCoordinatorResponse, {"throttle_time_ms": r.throttle_time_ms, "error_code": c.error_code,
                                             "error_message": c.error_message, "node_id": c.node_id,
                                             "host": c.host, "port": c.port}
        return FindCoordinatorResponse, {
            "throttle_time_ms": r.throttle_time_ms,
            "coordinators": [{"key": c.key, "node_id": c.node_id, "host": c.host, "port": c.port,
                              "error_code": c.error_code, "error_message": c.error_message} for c in r.coordinators],
        }
    if api == kp.ADD_PARTITIONS_TO_TXN:
        return AddPartitionsToTxnResponse, {
            "throttle_time_ms": r.throttle_time_ms,
            "results_by_topic_v3_and_below": [topic_errors(t, "results_by_partition", "partition_error_code")
                                              for t in r.results],
        }
    if api in (kp.ADD_OFFSETS_TO_TXN, kp.END_TXN):
        cls = AddOffsetsToTxnResponse if api == kp.ADD_OFFSETS_TO_TXN else EndTxnResponse
        return cls, {"throttle_time_ms": r.throttle_time_ms, "error_code": r.error_code}
    if api == kp.TXN_OFFSET_COMMIT:
        return TxnOffsetCommitResponse, {"throttle_time_ms": r.throttle_time_ms,
                                         "topics": [topic_errors(t, "partitions", "error_code") for t in r.topics]}
    if api == kp.SASL_HANDSHAKE:
        return SaslHandshakeResponse, {"error_code": r.error_code, "mechanisms": list(r.mechanisms)}
    if api == kp.SASL_AUTHENTICATE:
        return SaslAuthenticateResponse, {"error_code": r.error_code, "error_message": r.error_message,
                                          "auth_bytes": r.auth_bytes, "session_lifetime_ms": r.session_lifetime_ms}
    if api == kp.CREATE_TOPICS:
        def result(t: CreatableTopicResult) -> dict[str, Any]:
            d = {"name": t.name, "topic_id": t.topic_id, "error_code": t.error_code, "error_message": t.error_message,
                 "num_partitions": t.num_partitions, "replication_factor": t.replication_factor,
                 "configs": None if t.configs is None else [
                     {"name": c.name, "value": c.value, "read_only": c.read_only, "config_source": c.config_source,
                      "is_sensitive": c.is_sensitive} for c in t.configs]}
            if t.topic_config_error_code:
                d["topic_config_error_code"] = t.topic_config_error_code
            return d

        return CreateTopicsResponse, {"throttle_time_ms": r.throttle_time_ms, "topics": [result(t) for t in r.topics]}
    if api == kp.FETCH:
        return FetchResponse, {
            "throttle_time_ms": r.throttle_time_ms, "error_code": r.error_code, "session_id": r.session_id,
            "responses": [{"topic": t.topic, "partitions": [
                {"partition_index": p.partition_index, "error_code": p.error_code,
                 "high_watermark": p.high_watermark, "last_stable_offset": p.last_stable_offset,
                 "log_start_offset": p.log_start_offset, "preferred_read_replica": p.preferred_read_replica,
                 "aborted_transactions": None if p.aborted_transactions is None else [
                     {"producer_id": a, "first_offset": b} for a, b in p.aborted_transactions],
                 "records": p.records} for p in t.partitions]} for t in r.topics],
        }
    if api == kp.LIST_OFFSETS:
        return ListOffsetsResponse, {
            "throttle_time_ms": r.throttle_time_ms,
            "topics": [{"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": p.error_code, "timestamp": p.timestamp,
                 "offset": p.offset, "leader_epoch": p.leader_epoch} for p in t.partitions]} for t in r.topics],
        }
    raise AssertionError(api)


def kafka_python_request_frame(api: int, v: int, request: kp.Request, correlation_id: int, client_id: str) -> bytes:
    cls, values = _kafka_python_request(api, v, request)
    message = _kbuild(cls, v, values)
    message.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(message.encode(header=True, framed=True))


def kafka_python_response_frame(api: int, v: int, response: kp.Response, correlation_id: int) -> bytes:
    cls, values = _kafka_python_response(api, v, response)
    message = _kbuild(cls, v, values)
    message.with_header(correlation_id=correlation_id)
    return bytes(message.encode(header=True, framed=True))


@pytest.mark.parametrize(("api", "version"), ALL_API_VERSIONS)
def test_request_bytes_equal_kafka_python(api: int, version: int) -> None:
    request, _ = sample(api, version, False)
    ours = joined(kp.encode_request(request, version, 1234, "golden"))
    assert ours == kafka_python_request_frame(api, version, request, 1234, "golden")


@pytest.mark.parametrize(("api", "version"), ALL_API_VERSIONS)
def test_response_bytes_equal_kafka_python(api: int, version: int) -> None:
    _, response = sample(api, version, False)
    theirs = kafka_python_response_frame(api, version, response, 99)
    assert joined(kp.encode_response(response, version, 99)) == theirs
    assert kp.decode_response(api, version, theirs[4:]) == (99, response)


# --- errors and metadata snapshot ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [(-1, "UNKNOWN_SERVER_ERROR", False), (2, "CORRUPT_MESSAGE", True), (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
     (6, "NOT_LEADER_OR_FOLLOWER", True), (7, "REQUEST_TIMED_OUT", True), (10, "MESSAGE_TOO_LARGE", False),
     (13, "NETWORK_EXCEPTION", True), (14, "COORDINATOR_LOAD_IN_PROGRESS", True),
     (15, "COORDINATOR_NOT_AVAILABLE", True), (16, "NOT_COORDINATOR", True), (17, "INVALID_TOPIC_EXCEPTION", False),
     (18, "RECORD_LIST_TOO_LARGE", False), (19, "NOT_ENOUGH_REPLICAS", True),
     (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True), (21, "INVALID_REQUIRED_ACKS", False),
     (29, "TOPIC_AUTHORIZATION_FAILED", False), (33, "UNSUPPORTED_SASL_MECHANISM", False),
     (34, "ILLEGAL_SASL_STATE", False), (36, "TOPIC_ALREADY_EXISTS", False),
     (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False), (46, "DUPLICATE_SEQUENCE_NUMBER", False),
     (47, "INVALID_PRODUCER_EPOCH", False), (48, "INVALID_TXN_STATE", False),
     (49, "INVALID_PRODUCER_ID_MAPPING", False), (50, "INVALID_TRANSACTION_TIMEOUT", False),
     (51, "CONCURRENT_TRANSACTIONS", True), (52, "TRANSACTION_COORDINATOR_FENCED", False),
     (56, "KAFKA_STORAGE_ERROR", True), (58, "SASL_AUTHENTICATION_FAILED", False), (59, "UNKNOWN_PRODUCER_ID", False),
     (74, "FENCED_LEADER_EPOCH", True), (75, "UNKNOWN_LEADER_EPOCH", True), (87, "INVALID_RECORD", False),
     (89, "THROTTLING_QUOTA_EXCEEDED", True), (90, "PRODUCER_FENCED", False), (120, "TRANSACTION_ABORTABLE", False)],
)
def test_error_table_matches_kafka(code: int, name: str, retriable: bool) -> None:
    assert kp.ERRORS[code].name == name
    assert kp.ERRORS[code].retriable is retriable
    assert kp.ERROR_CODES[name] == code
    error = kp.error_for(code, "broker says hi")
    assert isinstance(error, BrokerResponseError) and isinstance(error, KafkaError)
    assert (error.code, error.name, error.retriable) == (code, name, retriable)
    assert name in str(error) and "broker says hi" in str(error)


def test_error_table_is_complete_and_consistent() -> None:
    assert set(kp.ERRORS) == set(range(-1, 121))
    assert len(kp.ERROR_CODES) == len(kp.ERRORS)
    assert "not the leader" in str(kp.error_for(6))  # the table's message when the broker sent none
    unknown = kp.error_for(9999)
    assert isinstance(unknown, BrokerResponseError)
    assert (unknown.code, unknown.name, unknown.retriable) == (9999, "UNKNOWN_ERROR_CODE_9999", False)


def test_error_table_retriable_flags_match_kafka_python() -> None:
    import kafka.errors as ke

    for code, info in kp.ERRORS.items():
        theirs = ke.for_code(code)
        if (theirs is ke.UnknownError and code != -1) or code == 2:
            continue  # codes kafka-python does not know; CORRUPT_MESSAGE is retriable in Java, not in kafka-python
        assert bool(getattr(theirs, "retriable", False)) is info.retriable, (code, info.name)


def test_cluster_snapshot_from_metadata() -> None:
    response = kp.MetadataResponse(
        brokers=(BrokerEndpoint(1, "h1", 9092, "r1"), BrokerEndpoint(2, "h2", 9093)),
        cluster_id="c",
        controller_id=2,
        topics=(
            MetadataTopic(0, "t", partitions=(
                MetadataPartition(0, 2, 2, 7, (2, 1), (2,)),
                MetadataPartition(0, 0, 1, 5, (1, 2), (1, 2)),
                MetadataPartition(5, 1, 9, 1, (9,), ()),  # leader not among the brokers
            )),
            MetadataTopic(3, "missing"),
            MetadataTopic(0, "gap", partitions=(MetadataPartition(0, 1, 1),)),
            MetadataTopic(0, None),
        ),
    )
    snapshot = kp.to_cluster_snapshot(response)
    assert isinstance(snapshot, ClusterSnapshot)
    assert snapshot.nodes == {1: Node(1, "h1", 9092, "r1"), 2: Node(2, "h2", 9093, None)}
    assert snapshot.partitions["t"] == [
        PartitionInfo("t", 0, 1, 5, (1, 2), (1, 2), 0),
        PartitionInfo("t", 1, -1, 1, (9,), (), 5),
        PartitionInfo("t", 2, 2, 7, (2, 1), (2,), 0),
    ]
    assert snapshot.partitions["gap"] == [PartitionInfo("gap", 0, -1, error_code=5), PartitionInfo("gap", 1, 1)]
    assert snapshot.topic_errors == {"missing": 3}
    assert (snapshot.controller_id, snapshot.cluster_id) == (2, "c")
    assert snapshot.partition_count("t") == 3 and snapshot.leader("t", 2) == 2
    assert snapshot.available_partitions("t") == [0, 2]


# --- a real broker (Tansu) -----------------------------------------------------------------------------------------


class Connection:
    """A blocking socket speaking the codec; keeps every response frame for the fuzz tests."""

    def __init__(self, host: str, port: int, frames: list[tuple[int, int, bytes]] | None = None) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.correlation_id = 0
        self.frames = frames if frames is not None else []

    def call(self, request: kp.Request, version: int) -> Any:
        self.correlation_id += 1
        parts = kp.encode_request(request, version, self.correlation_id, "cykafka-test")
        total = sum(len(p) for p in parts)
        assert self.sock.sendmsg(parts) == total
        size = struct.unpack(">i", self._recv(4))[0]
        frame = self._recv(size)
        self.frames.append((request.API_KEY, version, frame))
        correlation_id, response = kp.decode_response(request.API_KEY, version, frame)
        assert correlation_id == self.correlation_id
        return response

    def _recv(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def conn(broker: Any) -> Iterator[Connection]:
    c = Connection(broker.host, broker.port)
    yield c
    c.close()


def _fresh_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _batch(key_prefix: bytes, count: int, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
           transactional: bool = False) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=1 << 20,
    )
    for i in range(count):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=key_prefix + b"-%d" % i, value=b"value-%d" % i,
                       headers=[])
    return bytes(builder.build())


def _consume(broker: Any, topic: str, partition: int, count: int, committed_only: bool = False) -> list[Any]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap_servers, "group.id": _fresh_topic("verify"),
        "enable.auto.commit": False, "check.crcs": True,
        "isolation.level": "read_committed" if committed_only else "read_uncommitted",
    })
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        messages: list[Any] = []
        for _ in range(100):
            if len(messages) >= count:
                break
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
        return messages
    finally:
        consumer.close()


@pytest.mark.broker
def test_broker_api_versions_every_version(conn: Connection) -> None:
    for version in versions(kp.API_VERSIONS):
        response = conn.call(kp.ApiVersionsRequest(), version)
        assert response.error_code == 0
        broker_versions = response.versions()
        for api in kp.SUPPORTED_VERSIONS:  # Tansu speaks every API we do, in an overlapping range
            assert kp.pick_version(api, *broker_versions[api]) >= kp.SUPPORTED_VERSIONS[api][0]


@pytest.mark.broker
def test_broker_metadata_every_version_auto_creates_topic(conn: Connection, broker: Any) -> None:
    for version in versions(kp.METADATA):
        topic = _fresh_topic(f"meta-v{version}")
        response = conn.call(kp.MetadataRequest((topic,)), version)
        assert [t.name for t in response.topics] == [topic]
        (meta_topic,) = response.topics
        assert meta_topic.error_code == 0
        assert sorted(p.partition_index for p in meta_topic.partitions) == [0, 1, 2, 3]
        (node,) = response.brokers
        assert (node.host, node.port) == (broker.host, broker.port)
        assert {p.leader_id for p in meta_topic.partitions} == {node.node_id}
        snapshot = kp.to_cluster_snapshot(response)
        assert snapshot.nodes == {node.node_id: Node(node.node_id, broker.host, broker.port, node.rack)}
        assert [p.partition for p in snapshot.partitions[topic]] == [0, 1, 2, 3]
        assert snapshot.available_partitions(topic) == [0, 1, 2, 3]


@pytest.mark.broker
def test_broker_create_topics_every_version(conn: Connection) -> None:
    for version in versions(kp.CREATE_TOPICS):
        topic = _fresh_topic(f"create-v{version}")
        response = conn.call(kp.CreateTopicsRequest((CreatableTopic(topic, 3, 1),), 10000), version)
        assert [(t.name, t.error_code) for t in response.topics] == [(topic, 0)]
        metadata = conn.call(kp.MetadataRequest((topic,)), 12)
        assert len(metadata.topics[0].partitions) == 3
        again = conn.call(kp.CreateTopicsRequest((CreatableTopic(topic, 3, 1),), 10000), version)
        assert again.topics[0].error_code == kp.ERROR_CODES["TOPIC_ALREADY_EXISTS"]


@pytest.mark.broker
def test_broker_init_producer_id_idempotent(conn: Connection) -> None:
    for version in (3, 4):  # Tansu's v0-2 are broken
        response = conn.call(kp.InitProducerIdRequest(None, 60000), version)
        assert response.error_code == 0
        assert response.producer_id >= 0 and response.producer_epoch >= 0


@pytest.mark.broker
def test_broker_produce_every_version_then_consume_with_librdkafka(conn: Connection, broker: Any) -> None:
    topic = _fresh_topic("produce")
    conn.call(kp.MetadataRequest((topic,)), 12)  # auto-create, 4 partitions
    pid = conn.call(kp.InitProducerIdRequest(None, 60000), 4)
    assert pid.error_code == 0
    sequences = [0, 0, 0, 0]
    expected: dict[int, list[tuple[int, bytes]]] = {0: [], 1: [], 2: [], 3: []}
    for version in versions(kp.PRODUCE):
        partition = version % 4
        key = b"v%d" % version
        batch = _batch(key, 3, pid.producer_id, pid.producer_epoch, sequences[partition])
        sequences[partition] += 3
        response = conn.call(kp.ProduceRequest(None, -1, 10000, ((topic, ((partition, memoryview(batch)),)),)), version)
        ((name, result),) = [(t.name, t.partitions) for t in response.topics]
        assert name == topic
        (p,) = result
        assert (p.partition_index, p.error_code) == (partition, 0), p
        expected[partition] += [(p.base_offset + i, key + b"-%d" % i) for i in range(3)]
    # one v9 request, several partitions, several batches
    batches = []
    for partition in range(4):
        batches.append((partition, _batch(b"multi", 2, pid.producer_id, pid.producer_epoch, sequences[partition])))
        sequences[partition] += 2
    response = conn.call(kp.ProduceRequest(None, -1, 10000, ((topic, tuple(batches)),)), 9)
    for p in response.topics[0].partitions:
        assert p.error_code == 0
        expected[p.partition_index] += [(p.base_offset + i, b"multi-%d" % i) for i in range(2)]
    for partition, records in expected.items():
        messages = _consume(broker, topic, partition, len(records))
        assert [(m.offset(), m.key()) for m in messages] == records


@pytest.mark.broker
def test_broker_fetch_and_list_offsets_every_version(conn: Connection) -> None:
    from kafka.record.memory_records import MemoryRecords

    topic = _fresh_topic("fetch")
    conn.call(kp.MetadataRequest((topic,)), 12)
    produced = conn.call(kp.ProduceRequest(None, -1, 10000, ((topic, ((0, _batch(b"f", 5)),)),)), 9)
    assert produced.topics[0].partitions[0].error_code == 0
    for version in versions(kp.FETCH):
        request = kp.FetchRequest(((topic, (FetchPartition(0, 0, 1 << 20),)),), max_wait_ms=100)
        response = conn.call(request, version)
        (partition,) = response.topics[0].partitions
        assert (partition.error_code, partition.high_watermark) == (0, 5)
        records = MemoryRecords(partition.records)
        keys = []
        while (batch := records.next_batch()) is not None:
            keys += [record.key for record in batch]
        assert keys == [b"f-%d" % i for i in range(5)]
    for version in versions(kp.LIST_OFFSETS):
        request = kp.ListOffsetsRequest(((topic, (ListOffsetsPartition(0, kp.EARLIEST_TIMESTAMP),)),))
        response = conn.call(request, version)
        (partition,) = response.topics[0].partitions
        assert (partition.error_code, partition.offset) == (0, 0)


@pytest.mark.broker
def test_broker_transaction_every_version(conn: Connection, broker: Any) -> None:
    topic = _fresh_topic("txn")
    conn.call(kp.MetadataRequest((topic,)), 12)
    committed_keys = []
    for version in range(4):
        txn_id = _fresh_topic(f"txn-v{version}")
        coordinator = conn.call(kp.FindCoordinatorRequest((txn_id,), kp.COORDINATOR_TRANSACTION), min(version + 1, 4))
        assert [c.error_code for c in coordinator.coordinators] == [0]
        init = conn.call(kp.InitProducerIdRequest(txn_id, 60000), 3 + version % 2)
        assert init.error_code == 0
        pid, epoch = init.producer_id, init.producer_epoch
        added = conn.call(kp.AddPartitionsToTxnRequest(txn_id, pid, epoch, ((topic, (0,)),)), version)
        assert [(t.name, [p.error_code for p in t.partitions]) for t in added.results] == [(topic, [0])]
        key = b"t%d" % version
        batch = _batch(key, 2, pid, epoch, 0, transactional=True)
        produced = conn.call(kp.ProduceRequest(txn_id, -1, 10000, ((topic, ((0, batch),)),)), 9)
        assert produced.topics[0].partitions[0].error_code == 0
        group = _fresh_topic("group")
        assert conn.call(kp.AddOffsetsToTxnRequest(txn_id, pid, epoch, group), version).error_code == 0
        offsets = conn.call(kp.TxnOffsetCommitRequest(
            txn_id, group, pid, epoch, ((topic, (TxnOffsetCommitPartition(0, 1),)),)), version)
        assert [[p.error_code for p in t.partitions] for t in offsets.topics] == [[0]]
        ended = conn.call(kp.EndTxnRequest(txn_id, pid, epoch, True), version)
        assert ended.error_code == 0
        committed_keys += [key + b"-0", key + b"-1"]
    messages = _consume(broker, topic, 0, len(committed_keys), committed_only=True)
    assert [m.key() for m in messages] == committed_keys


@pytest.mark.broker
def test_broker_sasl_handshake_decodes(broker: Any) -> None:
    for version in versions(kp.SASL_HANDSHAKE):
        c = Connection(broker.host, broker.port)
        try:
            response = c.call(kp.SaslHandshakeRequest("PLAIN"), version)
            assert isinstance(response, kp.SaslHandshakeResponse)
        finally:
            c.close()


# --- malformed input: truncated and corrupted frames only ever raise ProtocolError --------------------------------


@pytest.fixture(scope="module")
def real_frames(broker: Any) -> list[tuple[int, int, bytes]]:
    """Response frames from the broker (every API we can drive there) and from kafka-python's encoder."""
    frames: list[tuple[int, int, bytes]] = []
    c = Connection(broker.host, broker.port, frames)
    try:
        topic = _fresh_topic("fuzz")
        for version in versions(kp.API_VERSIONS):
            c.call(kp.ApiVersionsRequest(), version)
        for version in versions(kp.METADATA):
            c.call(kp.MetadataRequest((topic, _fresh_topic("fuzz"))), version)
        for version in versions(kp.CREATE_TOPICS):
            c.call(kp.CreateTopicsRequest((CreatableTopic(topic, 2, 1), CreatableTopic(_fresh_topic("f"), 1, 1))),
                   version)
        pid = c.call(kp.InitProducerIdRequest(None, 60000), 4)
        for version in versions(kp.PRODUCE):
            batch = _batch(b"z", 2, pid.producer_id, pid.producer_epoch, 2 * (version - 3))
            c.call(kp.ProduceRequest(None, -1, 10000, ((topic, ((0, batch), (5, _batch(b"bad", 1)))),)), version)
        for version in versions(kp.FETCH):
            c.call(kp.FetchRequest(((topic, (FetchPartition(0, 0), FetchPartition(1, 0))),), max_wait_ms=10),
                   version)
        for version in versions(kp.LIST_OFFSETS):
            c.call(kp.ListOffsetsRequest(((topic, (ListOffsetsPartition(0), ListOffsetsPartition(1, -2))),)), version)
        for version in versions(kp.FIND_COORDINATOR):
            c.call(kp.FindCoordinatorRequest(("some-txn",)), version)
    finally:
        c.close()
    for api, version in ALL_API_VERSIONS:
        _, response = sample(api, version, False)
        frames.append((api, version, kafka_python_response_frame(api, version, response, 5)[4:]))
    return frames


def _decodes_or_protocol_error(api: int, version: int, data: bytes) -> bool:
    try:
        kp.decode_response(api, version, data)
    except ProtocolError:
        return False
    return True


@pytest.mark.broker
def test_every_prefix_of_real_responses_is_a_protocol_error(real_frames: list[tuple[int, int, bytes]]) -> None:
    assert len(real_frames) > 100
    for api, version, frame in real_frames:
        assert _decodes_or_protocol_error(api, version, frame)
        view = memoryview(frame)
        for size in range(len(frame)):
            with pytest.raises(ProtocolError):
                kp.decode_response(api, version, view[:size])


@pytest.mark.broker
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_responses_decode_or_raise_protocol_error(
    real_frames: list[tuple[int, int, bytes]], data: st.DataObject
) -> None:
    api, version, frame = data.draw(st.sampled_from(real_frames))
    corrupted = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        if not corrupted:
            break
        index = data.draw(st.integers(0, len(corrupted) - 1))
        corrupted[index] = data.draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80, corrupted[index] ^ 0x01]))
    if data.draw(st.booleans()):
        corrupted += data.draw(st.binary(max_size=4))
    _decodes_or_protocol_error(api, version, bytes(corrupted))


@given(api_version=st.sampled_from(ALL_API_VERSIONS), garbage=st.binary(max_size=200))
def test_garbage_responses_decode_or_raise_protocol_error(api_version: tuple[int, int], garbage: bytes) -> None:
    _decodes_or_protocol_error(*api_version, garbage)


@given(garbage=st.binary(max_size=200))
def test_garbage_requests_decode_or_raise_protocol_error(garbage: bytes) -> None:
    try:
        kp.decode_request(garbage)
    except ProtocolError:
        pass


@pytest.mark.parametrize(("api", "version"), ALL_API_VERSIONS)
def test_every_prefix_of_requests_is_a_protocol_error(api: int, version: int) -> None:
    request, _ = sample(api, version, False)
    frame = joined(kp.encode_request(request, version, 1, "c"))[4:]
    view = memoryview(frame)
    for size in range(len(frame)):
        with pytest.raises(ProtocolError):
            kp.decode_request(view[:size])


def _generic_frame(request: kp.Request, version: int, correlation_id: int, client_id: str | None) -> bytes:
    """encode_request's general path (Writer + encode_body), which the Produce fast path must equal."""
    w = kp.Writer(kp.is_flexible(request.API_KEY, version), reserve_bytes=4)
    w.int16(request.API_KEY)
    w.int16(version)
    w.int32(correlation_id)
    w.legacy_nullable_string(client_id)
    w.tagged_fields()
    request.encode_body(w, version)
    return b"".join(bytes(c) for c in w.framed())


@pytest.mark.parametrize("version", range(3, 11))
@pytest.mark.parametrize("transactional_id", [None, "tx-é"])
@pytest.mark.parametrize("client_id", [None, "client"])
def test_produce_fast_path_writes_the_general_paths_bytes(version: int, transactional_id: str | None,
                                                          client_id: str | None) -> None:
    batch = bytearray(b"\x01" * 300)
    topics = [("topic-a", [(0, batch), (3, None), (2, memoryview(b""))]), ("b" * 200, [(1, memoryview(batch)[:10])])]
    request = kp.ProduceRequest(transactional_id, -1, 30000, topics)
    chunks = kp.encode_request(request, version, 77, client_id)
    assert b"".join(bytes(c) for c in chunks) == _generic_frame(request, version, 77, client_id)
    assert any(isinstance(c, memoryview) and c.obj is batch for c in chunks)  # attached, not copied


@pytest.mark.parametrize("version", range(3, 11))
def test_produce_response_fast_path_reads_what_the_general_path_does(version: int) -> None:
    plain = ProducePartitionResponse(1, 0, 42, -1, 7)
    with_message = ProducePartitionResponse(2, 87, -1, -1, 7, (kp.RecordError(3, "bad"),), "invalid record")
    response = kp.ProduceResponse((ProduceTopicResponse("t", (plain, with_message, plain)),), 5)
    frame = b"".join(bytes(c) for c in kp.encode_response(response, version, 9))[4:]
    _, decoded = kp.decode_response(kp.PRODUCE, version, frame)
    assert isinstance(decoded, kp.ProduceResponse)
    got = decoded.topics[0].partitions
    assert (got[0].partition_index, got[0].base_offset, got[2].base_offset) == (1, 42, 42)
    assert got[1].error_code == 87
    if version >= 5:
        assert got[0].log_start_offset == 7
    if version >= 8:
        assert got[1].record_errors == (kp.RecordError(3, "bad"),) and got[1].error_message == "invalid record"
