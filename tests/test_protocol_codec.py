"""The generic codec (cykafka.protocol): round trips drawn from every description, known encodings, malformed input,
and one conversation with the embedded broker."""

from __future__ import annotations

import random
import socket
import struct
import time
from typing import Any
from uuid import UUID

import pytest
from hypothesis import strategies as st
from protocol_strategies import ALL_MESSAGES, each_message, message_values

from cykafka.errors import ProtocolError, RequestEncodeError, UnsupportedVersionError
from cykafka.ports import ClusterSnapshot, Node, PartitionInfo
from cykafka.protocol import (
    APIS,
    F,
    api,
    decode_message,
    decode_request,
    decode_response,
    encode_message,
    encode_request,
    encode_response,
)
from cykafka.protocol.apis import API_VERSIONS, FETCH, LIST_OFFSETS, METADATA, PRODUCE, SHARE_GROUP_HEARTBEAT
from cykafka.protocol.error_codes import ErrorCode

# --- every message, every version: values drawn from the description round-trip --------------------------------


@each_message(ALL_MESSAGES, 12)
def test_round_trip(case: tuple[int, int, bool], data: st.DataObject) -> None:
    key, version, response = case
    described = APIS[key]
    value = data.draw(message_values(described, version, response))
    body = encode_message(described, version, value, response)
    assert decode_message(described, version, body, response) == value
    if response:
        frame = encode_response(key, version, 7, value)
        assert decode_response(key, version, frame[4:]) == (7, value)
    else:
        frame = encode_request(key, version, 7, "c", value)
        header, decoded = decode_request(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (key, version, 7, "c")
        assert decoded == value
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4


# --- known bytes: what the wire looks like, independent of the codec's own decoder ------------------------------


def test_request_header_v1_and_v2() -> None:
    # ApiVersions v0: header v1 only (no body); v3: header v2 (client_id still int16-length, then no tags)
    assert encode_request(18, 0, 1, "ab", {}) == b"\x00\x00\x00\x0c" + b"\x00\x12\x00\x00\x00\x00\x00\x01\x00\x02ab"
    frame = encode_request(18, 3, 1, None, {"client_software_name": "n", "client_software_version": ""})
    assert frame[4:] == b"\x00\x12\x00\x03\x00\x00\x00\x01\xff\xff" + b"\x00" + b"\x02n" + b"\x01" + b"\x00"


def test_compact_and_classic_lengths() -> None:
    topics = {"topics": [{"name": "t", "partitions": [{"partition_index": 2, "timestamp": -1}]}]}
    classic = encode_message(LIST_OFFSETS, 5, topics)  # replica_id, isolation, [name, [index, epoch, ts]]
    assert classic == (b"\xff\xff\xff\xff" + b"\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x01"
                       + b"\x00\x00\x00\x02" + b"\xff\xff\xff\xff" + b"\xff" * 8)
    compact = encode_message(LIST_OFFSETS, 6, topics)
    assert compact == (b"\xff\xff\xff\xff" + b"\x00" + b"\x02" + b"\x02t" + b"\x02" + b"\x00\x00\x00\x02"
                       + b"\xff\xff\xff\xff" + b"\xff" * 8 + b"\x00" + b"\x00" + b"\x00")


def test_nulls_and_defaults() -> None:
    assert encode_message(METADATA, 4, {}) == b"\xff\xff\xff\xff\x01"  # topics null (all), auto-create default true
    assert encode_message(METADATA, 9, {"topics": []}) == b"\x01\x01\x00\x00" + b"\x00"
    decoded = decode_message(METADATA, 1, b"\xff\xff\xff\xff")
    assert decoded == {"topics": None, "allow_auto_topic_creation": True,
                       "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}


def test_tagged_fields_written_only_when_not_default_and_unknown_tags_skipped() -> None:
    base = {"responses": [], "throttle_time_ms": 0}
    assert encode_message(PRODUCE, 10, base, response=True) == b"\x01" + b"\x00\x00\x00\x00" + b"\x00"
    endpoints = [{"node_id": 1, "host": "h", "port": 9, "rack": None}]
    with_tag = encode_message(PRODUCE, 10, {**base, "node_endpoints": endpoints}, response=True)
    tag_body = b"\x02" + b"\x00\x00\x00\x01" + b"\x02h" + b"\x00\x00\x00\x09" + b"\x00" + b"\x00"
    assert with_tag == b"\x01" + b"\x00\x00\x00\x00" + b"\x01\x00" + bytes([len(tag_body)]) + tag_body
    unknown = b"\x01" + b"\x00\x00\x00\x00" + b"\x01\x07\x02ab"  # tag 7, two bytes: not ours, skipped
    assert decode_message(PRODUCE, 10, unknown, response=True)["node_endpoints"] == []


def test_version_tables_derive_from_descriptions() -> None:
    from cykafka.protocol import FLEXIBLE_FROM, SUPPORTED_VERSIONS

    assert SUPPORTED_VERSIONS[FETCH.key] == (4, 12) and FLEXIBLE_FROM[FETCH.key] == 12
    assert FLEXIBLE_FROM[18] == 3 and FLEXIBLE_FROM[17] is None
    assert SUPPORTED_VERSIONS == {key: (a.versions[0], a.versions[-1]) for key, a in APIS.items()}


def test_notation_rejects_bad_fields() -> None:
    with pytest.raises(ValueError, match="unknown type"):
        F("x", "int33")
    with pytest.raises(ValueError, match="sub-fields"):
        F("x", "[]")
    bad = api(9999, "Bad", "0", "none", request=(F("x", "int32", nullable="0+"),), response=())
    with pytest.raises(ValueError, match="cannot be nullable"):
        encode_message(bad, 0, {"x": None})


# --- what cannot be encoded: RequestEncodeError naming the API ---------------------------------------------------


@pytest.mark.parametrize(("value", "match"), [
    ({"acks": 1 << 15}, "Produce v9"),
    ({"acks": "1"}, "int16 takes an int"),
    ({"transactional_id": "x" * 40000}, "32767-byte limit"),
    ({"topic_data": [{"name": 5}]}, "Produce v9"),
    ({"topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": 12}]}]}, "Produce v9"),
])
def test_unencodable_values_raise_request_encode_error(value: dict[str, Any], match: str) -> None:
    with pytest.raises(RequestEncodeError, match=match):
        encode_message(PRODUCE, 9, value)


def test_unknown_api_or_version() -> None:
    with pytest.raises(UnsupportedVersionError, match="api key 9999"):
        encode_request(9999, 0, 1, None, {})
    with pytest.raises(UnsupportedVersionError, match=r"Produce v2 is not supported by cykafka \(supported: v3-v12\)"):
        encode_request(0, 2, 1, None, {})
    with pytest.raises(ProtocolError, match="Produce v2"):
        decode_request(b"\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff")


def test_api_versions_answer_in_v0_when_the_broker_does_not_know_our_version() -> None:
    v0 = encode_response(18, 0, 5, {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0,
                                                                    "max_version": 2}]})
    correlation_id, body = decode_response(18, 3, v0[4:])
    assert correlation_id == 5 and body["error_code"] == 35 and body["api_keys"][0]["max_version"] == 2


# --- malformed input: ProtocolError and nothing else ---------------------------------------------------------------


@each_message(ALL_MESSAGES, 3)
def test_every_truncation_raises_protocol_error(case: tuple[int, int, bool], data: st.DataObject) -> None:
    key, version, response = case
    described = APIS[key]
    body = encode_message(described, version, data.draw(message_values(described, version, response)), response)
    for end in range(len(body)):
        with pytest.raises(ProtocolError):
            decode_message(described, version, body[:end], response)
    with pytest.raises(ProtocolError, match="trailing"):
        decode_message(described, version, body + b"\x00", response)


@each_message(ALL_MESSAGES, 2)
def test_fuzzed_bytes_decode_or_raise_protocol_error(case: tuple[int, int, bool], data: st.DataObject) -> None:
    key, version, response = case
    described = APIS[key]
    body = bytearray(encode_message(described, version, data.draw(message_values(described, version, response)),
                                    response))
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for _ in range(40):  # bounded: flip, insert or drop a few bytes, then decode
        mutated = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(mutated) + 1)
            op = rng.random()
            if op < 0.5 and at < len(mutated):
                mutated[at] = rng.choice((0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)))
            elif op < 0.8:
                mutated[at:at] = bytes([rng.randrange(256)])
            elif at < len(mutated):
                del mutated[at]
        try:
            decode_message(described, version, bytes(mutated), response)
        except ProtocolError:
            pass
        try:
            decode_response(key, version, bytes(mutated)) if response else decode_request(bytes(mutated))
        except ProtocolError:
            pass


@pytest.mark.parametrize("frame", [
    b"", b"\x00", b"\x00\x12\x00\x03\x00\x00\x00\x01", b"\x00\x12\x00\x03\x00\x00\x00\x01\x00\x05ab",
    b"\x00\x12\x00\x03\x00\x00\x00\x01\xff\xfe", b"\x00\x12\x00\x03\x00\x00\x00\x01\x00\x01\xff\x00",
    b"\x00\x12\x00\x03\x00\x00\x00\x01\xff\xff\x05",
    b"\x00\x12\x00\x03\x00\x00\x00\x01\xff\xff\x00\xff\xff\xff\xff\xff",
    b"\x7f\x00\x00\x00\x00\x00\x00\x01\xff\xff",
])
def test_malformed_request_headers(frame: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_request(frame)


def test_huge_lengths_are_refused_before_allocating() -> None:
    with pytest.raises(ProtocolError, match="does not fit"):
        decode_message(PRODUCE, 3, b"\xff\xff" + b"\x00\x01" + b"\x00\x00\x00\x00" + b"\x7f\xff\xff\xff")
    with pytest.raises(ProtocolError, match="tagged fields"):
        decode_message(API_VERSIONS, 3, b"\x01\x01\x7f")


# --- the embedded broker: the new codec over a plain socket ------------------------------------------------------


def _call(sock: socket.socket, key: int, version: int, correlation_id: int, body: dict[str, Any]) -> dict[str, Any]:
    sock.sendall(encode_request(key, version, correlation_id, "cykafka-protocol-test", body))
    size = struct.unpack(">i", _read(sock, 4))[0]
    got_id, response = decode_response(key, version, _read(sock, size))
    assert got_id == correlation_id
    return response


def _read(sock: socket.socket, size_bytes: int) -> bytes:
    data = b""
    while len(data) < size_bytes:
        chunk = sock.recv(size_bytes - len(data))
        assert chunk, "broker closed the connection"
        data += chunk
    return data


def test_broker_conversation(broker: Any) -> None:
    with socket.create_connection((broker.host, broker.port), timeout=10) as sock:
        versions = _call(sock, 18, 3, 1, {"client_software_name": "cykafka", "client_software_version": "0"})
        assert versions["error_code"] == 0
        ranges = {a["api_key"]: (a["min_version"], a["max_version"]) for a in versions["api_keys"]}

        def pick(key: int) -> int:
            return min(APIS[key].valid[1], ranges[key][1])

        topic = "protocol-codec-topic"
        metadata = {}
        for _ in range(100):  # auto-creation: the first answers may lack the topic or its leaders (Kafka)
            metadata = _call(sock, 3, pick(3), 2, {"topics": [{"name": topic}], "allow_auto_topic_creation": True})
            parts = metadata["topics"][0]["partitions"] if metadata["topics"] else []
            if metadata["topics"] and metadata["topics"][0]["error_code"] == 0 and parts \
                    and all(p["leader_id"] >= 0 for p in parts):
                break
            time.sleep(0.05)
        assert metadata["brokers"] and metadata["topics"][0]["name"] == topic
        for _ in range(100):  # Kafka's replica may become leader after its metadata cache says it is
            offsets = _call(sock, 2, pick(2), 3, {"topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "timestamp": -2}]}]})
            if offsets["topics"][0]["partitions"][0]["error_code"] not in (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    ErrorCode.LEADER_NOT_AVAILABLE):
                break
            time.sleep(0.05)
        assert offsets["topics"][0]["partitions"][0]["error_code"] == 0
        assert offsets["topics"][0]["partitions"][0]["offset"] == 0
        fetch = _call(sock, 1, pick(1), 4, {"max_wait_ms": 10, "min_bytes": 0, "topics": [
            {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 16}]}]})
        partition = fetch["responses"][0]["partitions"][0]
        assert partition["error_code"] == 0 and partition["high_watermark"] == 0


# --- a decoded Metadata answer as the core's snapshot ------------------------------------------------------------


def test_cluster_snapshot_from_metadata() -> None:
    """Brokers become ports.Node (one type); a leader not among the brokers is unknown (-1); a missing partition id
    gets a LEADER_NOT_AVAILABLE placeholder; topics with an error, or without a name, are not partitions."""
    body = encode_response(3, 12, 1, {
        "brokers": [{"node_id": 1, "host": "h1", "port": 9092, "rack": "r1"},
                    {"node_id": 2, "host": "h2", "port": 9093}],
        "cluster_id": "c", "controller_id": 2,
        "topics": [
            {"name": "t", "topic_id": UUID(int=5), "partitions": [
                {"partition_index": 2, "leader_id": 2, "leader_epoch": 7, "replica_nodes": [2, 1], "isr_nodes": [2]},
                {"partition_index": 0, "leader_id": 1, "leader_epoch": 5, "replica_nodes": [1, 2], "isr_nodes": [1, 2]},
                {"error_code": 5, "partition_index": 1, "leader_id": 9, "leader_epoch": 1, "replica_nodes": [9]}]},
            {"error_code": 3, "name": "missing"},
            {"name": "gap", "partitions": [{"partition_index": 1, "leader_id": 1}]},
            {"name": None},
        ]})
    snapshot = ClusterSnapshot.from_metadata(decode_response(3, 12, body[4:])[1])
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
    assert snapshot.topic_ids == {"t": UUID(int=5)}  # a zero id (unknown) is left out


def test_a_nullable_struct_is_an_int8_marker_then_its_fields() -> None:
    """ShareGroupHeartbeat's assignment, as Kafka writes it: -1 for null, 1 then the struct."""

    body = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m", "member_epoch": 3,
            "heartbeat_interval_ms": 5000, "assignment": None}
    null = encode_message(SHARE_GROUP_HEARTBEAT, 1, body, response=True)
    assert null.endswith(b"\xff\x00")  # the marker, then the body's (empty) tagged fields
    assert decode_message(SHARE_GROUP_HEARTBEAT, 1, null, response=True) == body
    body["assignment"] = {"topic_partitions": [{"topic_id": UUID(int=7), "partitions": [0, 2]}]}
    raw = encode_message(SHARE_GROUP_HEARTBEAT, 1, body, response=True)
    assert raw[len(null) - 2] == 1 and decode_message(SHARE_GROUP_HEARTBEAT, 1, raw, response=True) == body


def test_an_api_description_is_equal_only_to_itself_so_the_codec_cache_finds_it_without_hashing_its_fields() -> None:
    """codec.plan's cache is keyed by the Api: hashed field by field (both bodies, every nested field) that cost ~30
    µs on every request encoded and every answer decoded (a Fetch of one partition: 42 -> 17 µs to encode)."""
    assert type(FETCH).__hash__ is object.__hash__ and type(FETCH).__eq__ is object.__eq__
    assert FETCH == APIS[FETCH.key] and FETCH != api(FETCH.key, FETCH.name, "4-12", "12+", FETCH.request,
                                                     FETCH.response)
