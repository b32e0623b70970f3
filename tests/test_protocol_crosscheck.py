"""The codecs against independent sources: the hand-written Produce and Fetch hot paths (cykafka/protocol/produce.py,
fetch.py) against the generic codec on every version of theirs, the generic codec against kafka-python's encoders,
and the descriptions against the field facts in kafka-python's message files."""

from __future__ import annotations

import re
import struct
from typing import Any

import pytest
from hypothesis import strategies as st
from protocol_strategies import each_message, message_values

from cykafka.errors import ProtocolError, RequestEncodeError, UnsupportedVersionError
from cykafka.fetcher import fetch_request
from cykafka.ports import TopicPartition
from cykafka.protocol import (
    APIS,
    ProduceRequest,
    decode_produce_response,
    decode_response,
    encode_produce_request,
    encode_request,
    encode_response,
    fetch,
    produce,
)
from cykafka.protocol.apis import FETCH, PRODUCE
from cykafka.protocol.fetch import decode_fetch_response, encode_fetch_request
from cykafka.protocol.schema import MAX_VERSION, Field

# --- the hand-written Produce hot path against the generic codec ---------------------------------------------------

PRODUCE_CASES = [(PRODUCE.key, v, response) for v in PRODUCE.versions for response in (False, True)]


def _produce_request(body: dict[str, Any]) -> ProduceRequest:
    return ProduceRequest(body["transactional_id"], body["acks"], body["timeout_ms"],
                          [(t["name"], [(p["index"], p["records"]) for p in t["partition_data"]])
                           for t in body["topic_data"]])


@each_message(PRODUCE_CASES, 40)
def test_produce_hot_path_equals_the_generic_codec(case: tuple[int, int, bool], data: st.DataObject) -> None:
    """Request: the hand-written frame (batches attached uncopied) is the generic codec's, byte for byte. Response:
    the hand-written decoder gives the generic decoder's value, whether it takes its fast path or falls back."""
    _, version, response = case
    value = data.draw(message_values(PRODUCE, version, response))
    if response:
        frame = encode_response(PRODUCE.key, version, 9, value)
        assert decode_produce_response(version, frame[4:]) == decode_response(PRODUCE.key, version, frame[4:]) \
            == (9, value)
    else:
        request = _produce_request(value)
        assert request.as_body() == value
        frame = b"".join(encode_produce_request(request, version, 9, "cross"))
        assert frame == encode_request(PRODUCE.key, version, 9, "cross", value)


@pytest.mark.parametrize("version", PRODUCE.versions)
@pytest.mark.parametrize("client_id", [None, "client"])
def test_produce_batches_are_attached_not_copied(version: int, client_id: str | None) -> None:
    batch_a = bytearray(b"A" * 300)
    batch_b = memoryview(bytearray(b"B" * 50))
    request = ProduceRequest("tx-\u00e9", -1, 30000, [("topic-a", [(0, batch_a), (3, None), (2, memoryview(b""))]),
                                                     ("b" * 200, [(1, batch_b)])])
    parts = encode_produce_request(request, version, 77, client_id)
    views = [p for p in parts if isinstance(p, memoryview)]
    assert [len(v) for v in views] == [300, 50]
    batch_a[0], batch_b[0] = ord("Z"), ord("Y")  # the frame sees the caller's memory
    assert bytes(views[0][:1]) == b"Z" and bytes(views[1][:1]) == b"Y"
    frame = b"".join(parts)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert frame == encode_request(PRODUCE.key, version, 77, client_id, request.as_body())


def test_produce_versions_we_do_not_speak_are_refused() -> None:
    with pytest.raises(UnsupportedVersionError, match="Produce v2"):
        encode_produce_request(ProduceRequest(None, 1, 1, ()), 2, 1, None)
    with pytest.raises(UnsupportedVersionError, match="Produce v13"):
        decode_produce_response(13, b"")


def _usual_answer(version: int, partitions: int = 200) -> bytes:
    body = {"responses": [{"name": "t\u00e9", "partition_responses": [
        {"index": i, "error_code": i % 2, "base_offset": 10 * i, "log_append_time_ms": -1, "log_start_offset": 3}
        for i in range(partitions)]}, {"name": "u", "partition_responses": []}], "throttle_time_ms": 7}
    return encode_response(PRODUCE.key, version, 5, body)[4:]


@pytest.mark.parametrize("version", PRODUCE.versions)
def test_the_usual_produce_answer_takes_the_fast_path(version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """No record errors, no message, no tags (200 partitions: a two-byte compact length): never the generic
    decoder, so the send path keeps its speed."""
    frame = _usual_answer(version)
    expected = decode_response(PRODUCE.key, version, frame)

    def no_fallback(*args: Any) -> Any:
        raise AssertionError("the usual answer fell back to the generic decoder")

    monkeypatch.setattr(produce, "decode_response", no_fallback)
    assert decode_produce_response(version, frame) == expected


@pytest.mark.parametrize("version", [3, 8, 9, 10])
def test_a_truncated_produce_answer_raises_protocol_error(version: int) -> None:
    frame = _usual_answer(version, partitions=3)
    for end in range(len(frame)):
        with pytest.raises(ProtocolError):
            decode_produce_response(version, frame[:end])


# --- the hand-written Fetch hot path against the generic codec -----------------------------------------------------

FETCH_CASES = [(FETCH.key, v, response) for v in FETCH.versions for response in (False, True)]


@each_message(FETCH_CASES, 40)
def test_fetch_hot_path_equals_the_generic_codec(case: tuple[int, int, bool], data: st.DataObject) -> None:
    """Request: the hand-written frame is the generic codec's, byte for byte, for the Fetcher's keys (cluster_id left
    out when null, as the Fetcher does) and for any other body (the generic encoder's turn). Response: the hand-written
    decoder gives the generic decoder's value, whether it takes its fast path (no tagged field set) or falls back."""
    _, version, response = case
    value = data.draw(message_values(FETCH, version, response))
    if response:
        frame = encode_response(FETCH.key, version, 9, value)
        assert decode_fetch_response(version, frame[4:]) == decode_response(FETCH.key, version, frame[4:]) \
            == (9, value)
        return
    if value["cluster_id"] is None:
        assert encode_fetch_request(version, 9, "cross", value) == encode_request(FETCH.key, version, 9, "cross", value)
        del value["cluster_id"]
    try:
        expected = encode_request(FETCH.key, version, 9, "cross", value)
    except RequestEncodeError as e:  # last_fetched_epoch set below v12: refused the same way
        with pytest.raises(RequestEncodeError, match=re.escape(str(e))):
            encode_fetch_request(version, 9, "cross", value)
        return
    assert encode_fetch_request(version, 9, "cross", value) == expected


def _no_fallback(*args: Any) -> Any:
    raise AssertionError("the Fetcher's usual message fell back to the generic codec")


@pytest.mark.parametrize("version", FETCH.versions)
def test_the_fetchers_request_takes_the_fast_path(version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """fetch_request's body, in a session forgetting a partition (v7+, sessions) and not (200 partitions: a two-byte
    compact length),
    never goes to the generic encoder, and its bytes are the generic encoder's."""
    wanted = {TopicPartition(f"t{i % 3}\u00e9", i): (10 * i, 1 << 20, i % 5 - 1) for i in range(200)}
    requests = [fetch_request(wanted, max_wait_ms=500, min_bytes=1, max_bytes=50 << 20, read_committed=True,
                              session_id=77, session_epoch=3, forgotten=[TopicPartition("gone", 4)] * (version >= 7),
                              rack_id="r1"),
                fetch_request({TopicPartition("t", 0): (5, 1, -1)}, max_wait_ms=0, min_bytes=0, max_bytes=1,
                              read_committed=False)]
    expected = [encode_request(FETCH.key, version, 3, "c", r.body) for r in requests]
    monkeypatch.setattr(fetch, "encode_request", _no_fallback)
    assert [encode_fetch_request(version, 3, "c", r.body) for r in requests] == expected


def test_a_fetch_value_out_of_range_gets_the_generic_encoders_error() -> None:
    body = dict(fetch_request({TopicPartition("t", 0): (1 << 63, 1, -1)}, max_wait_ms=0, min_bytes=0, max_bytes=1,
                              read_committed=False).body)
    with pytest.raises(RequestEncodeError, match="Fetch v12"):
        encode_fetch_request(12, 1, None, body)
    with pytest.raises(UnsupportedVersionError, match="Fetch v13"):
        encode_fetch_request(13, 1, None, body)


@pytest.mark.parametrize("version", FETCH.versions)
def test_a_fetch_field_set_where_the_version_lacks_it_gets_the_generic_encoders_error(version: int) -> None:
    """last_fetched_epoch (v12+) and forgotten topics (v7+) set at a version without them: the generic encoder's
    RequestEncodeError, never a frame that leaves them out."""
    request = fetch_request({TopicPartition("t", 0): (5, 1, -1)}, max_wait_ms=0, min_bytes=0, max_bytes=1,
                            read_committed=False, forgotten=[TopicPartition("gone", 1)])
    epoch_set = {**request.body, "topics": [{"topic": "t", "partitions": [
        {**request.body["topics"][0]["partitions"][0], "last_fetched_epoch": 3}]}]}
    for body, refused in ((epoch_set, version < 12), (request.body, version < 7)):
        if not refused:
            assert encode_fetch_request(version, 1, None, body) == encode_request(FETCH.key, version, 1, None, body)
            continue
        with pytest.raises(RequestEncodeError, match="does not carry it") as generic:
            encode_request(FETCH.key, version, 1, None, body)
        with pytest.raises(RequestEncodeError, match=re.escape(str(generic.value))):
            encode_fetch_request(version, 1, None, body)


def _usual_fetch_answer(version: int, partitions: int = 200) -> bytes:
    body = {"throttle_time_ms": 7, "error_code": 0, "session_id": 12, "responses": [
        {"topic": "t\u00e9", "partitions": [
            {"partition_index": i, "error_code": i % 2, "high_watermark": 10 * i, "last_stable_offset": 9 * i,
             "log_start_offset": 3, "preferred_read_replica": -1,
             "aborted_transactions": None if i % 3 == 0 else [{"producer_id": i, "first_offset": 2}] * (i % 3),
             "records": None if i % 4 == 0 else b"r" * (i % 200)}
            for i in range(partitions)]},
        {"topic": "u", "partitions": []}]}
    return encode_response(FETCH.key, version, 5, body)[4:]


@pytest.mark.parametrize("version", FETCH.versions)
def test_the_usual_fetch_answer_takes_the_fast_path(version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Errors, aborted transactions, null and empty records, 200 partitions (two-byte compact lengths), from bytes
    and from a memoryview into a larger buffer: never the generic decoder, and the generic decoder's value."""
    frame = _usual_fetch_answer(version)
    expected = decode_response(FETCH.key, version, frame)
    monkeypatch.setattr(fetch, "decode_response", _no_fallback)
    assert decode_fetch_response(version, frame) == expected
    assert decode_fetch_response(version, memoryview(b"\x00" + frame + b"\x00")[1:-1]) == expected


@pytest.mark.parametrize("field", ["aborted_transactions", "records"])
def test_an_overlong_varint_in_a_fetch_answer_raises_protocol_error(field: str) -> None:
    """A compact length of more than 5 bytes (v12): ProtocolError from the generic decoder, never a value."""
    body = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "aborted_transactions": None,
                                                         "records": None}]}]}
    frame = encode_response(FETCH.key, 12, 5, body)[4:]
    # header 5, top 10, topic count 1, name 2, partition count 1, partition's fixed fields 30
    at = 49 if field == "aborted_transactions" else 49 + 1 + 4
    assert frame[at] == 0  # the null's compact length
    bad = frame[:at] + b"\x80\x80\x80\x80\x80\x00" + frame[at + 1:]
    with pytest.raises(ProtocolError, match="longer than 5 bytes"):
        decode_response(FETCH.key, 12, bad)
    with pytest.raises(ProtocolError, match="longer than 5 bytes"):
        decode_fetch_response(12, bad)


@pytest.mark.parametrize("version", [4, 7, 11, 12])
def test_a_truncated_fetch_answer_raises_protocol_error(version: int) -> None:
    frame = _usual_fetch_answer(version, partitions=5)
    for end in range(len(frame)):
        with pytest.raises(ProtocolError):
            decode_fetch_response(version, frame[:end])


# --- the facts: our descriptions against the message files kafka-python ships (read at test time, not copied) -----

def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _range(text: str | None) -> tuple[int, int]:
    if not text or text == "none":
        return 1, 0
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _facts(fields: list[dict[str, Any]], version: int) -> list[tuple[Any, ...]]:
    out = []
    for f in fields:
        low, high = _range(f.get("taggedVersions") or f["versions"])
        if not low <= version <= high:
            continue
        type_ = f["type"]
        if f.get("fields"):
            type_ = "[]" if type_.startswith("[]") else "{}"
        n_low, n_high = _range(f.get("nullableVersions"))
        out.append((_snake(f["name"]), type_, n_low <= version <= n_high, f.get("tag"),
                    _facts(f.get("fields") or [], version)))
    return sorted(out, key=lambda t: (t[3] is not None, t[3] or 0))  # tagged fields last, by tag


def _ours(fields: tuple[Field, ...], version: int) -> list[tuple[Any, ...]]:
    out = [(f.name, f.type, f.nullable_in(version), f.tag, _ours(f.fields, version)) for f in fields
           if f.present(version)]
    return sorted(out, key=lambda t: (t[3] is not None, t[3] or 0))


@pytest.mark.parametrize("key", sorted(APIS), ids=lambda key: APIS[key].name)
def test_descriptions_match_the_message_facts(key: int) -> None:
    load_json = pytest.importorskip("kafka.protocol.schemas.load_json").load_json
    described = APIS[key]
    for response in (False, True):
        try:
            facts = load_json(described.name + ("Response" if response else "Request"))
        except FileNotFoundError:  # newer than kafka-python (share groups): checked against Kafka's own schemas
            pytest.skip(f"kafka-python ships no {described.name} schema (tests/test_protocol_kafka_schemas.py checks "
                        f"it against Kafka 4.4's)")
        assert facts["apiKey"] == key
        valid = _range(facts["validVersions"])
        flexible = _range(facts["flexibleVersions"])
        for version in described.versions:
            if version > valid[1]:
                continue  # newer than the files kafka-python ships
            assert described.is_flexible(version) == (flexible[0] <= version <= flexible[1]), version
            ours = _ours(described.response if response else described.request, version)
            assert ours == _facts(facts["fields"], version), f"{described.name} v{version} response={response}"


# --- kafka-python's encoders (generated from Kafka's message files), on a handful of APIs, every version -----------

KAFKA_PYTHON = ["ApiVersions", "Metadata", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
                "OffsetFetch", "DescribeGroups", "ListGroups", "DeleteGroups", "DeleteTopics", "DeleteRecords",
                "DescribeConfigs", "IncrementalAlterConfigs", "DescribeCluster", "OffsetForLeaderEpoch",
                # the producer's
                "Produce", "Fetch", "ListOffsets", "FindCoordinator", "SaslHandshake", "CreateTopics", "InitProducerId",
                "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "SaslAuthenticate"]
_BY_NAME = {a.name: a for a in APIS.values()}


def _kafka_python_class(name: str) -> Any:
    import kafka.protocol.admin.cluster
    import kafka.protocol.admin.configs
    import kafka.protocol.admin.groups
    import kafka.protocol.admin.topics
    import kafka.protocol.consumer.fetch
    import kafka.protocol.consumer.group
    import kafka.protocol.consumer.offsets
    import kafka.protocol.metadata.api_versions
    import kafka.protocol.metadata.find_coordinator
    import kafka.protocol.metadata.metadata
    import kafka.protocol.producer.produce
    import kafka.protocol.producer.transaction
    import kafka.protocol.sasl

    for module in (kafka.protocol.admin.cluster, kafka.protocol.admin.configs, kafka.protocol.admin.groups,
                   kafka.protocol.admin.topics, kafka.protocol.consumer.fetch, kafka.protocol.consumer.group,
                   kafka.protocol.consumer.offsets, kafka.protocol.metadata.api_versions,
                   kafka.protocol.metadata.find_coordinator, kafka.protocol.metadata.metadata,
                   kafka.protocol.producer.produce, kafka.protocol.producer.transaction, kafka.protocol.sasl):
        if hasattr(module, name):
            return getattr(module, name)
    raise AssertionError(name)


# our name -> kafka-python's, where they differ
_KAFKA_PYTHON_NAMES = {"generation_id": "generation_id_or_member_epoch",
                       "cluster_authorized_operations": "authorized_operations",
                       "topic_authorized_operations": "authorized_operations"}


def _kbuild(data_class: Any, version: int, values: dict[str, Any], fields: tuple[Field, ...]) -> Any:
    """kafka-python's message from our value; only the fields present at this version (kafka-python refuses a
    struct built at a version its struct does not exist in)."""
    kwargs = {}
    for our in fields:
        if not our.present(version):
            continue
        value = values[our.name]
        name = our.name if our.name in data_class.fields else _KAFKA_PYTHON_NAMES[our.name]
        f = data_class.fields[name]
        if f.is_struct_array() and value is not None:
            value = [_kbuild(f.data_class, version, item, our.fields) for item in value]
        elif f.is_struct() and value is not None:
            value = _kbuild(f.data_class, version, value, our.fields)
        elif name.endswith("authorized_operations") and type(value) is int:  # kafka-python takes a set of bits
            value = None if value == -(2**31) else {b for b in range(32) if value >> b & 1}
        kwargs[name] = value
    return data_class(version=version, **kwargs)


@each_message([(_BY_NAME[name].key, v, response) for name in KAFKA_PYTHON for v in _BY_NAME[name].versions
               for response in (False, True)], 5)
def test_generic_bytes_equal_kafka_python(case: tuple[int, int, bool], data: st.DataObject) -> None:
    pytest.importorskip("kafka.protocol.admin.cluster")
    key, version, response = case
    described = APIS[key]
    value = data.draw(message_values(described, version, response))
    cls = _kafka_python_class(described.name + ("Response" if response else "Request"))
    message = _kbuild(cls, version, value, described.response if response else described.request)
    if response:
        message.with_header(correlation_id=5)
        assert bytes(message.encode(header=True, framed=True)) == encode_response(key, version, 5, value)
    else:
        message.with_header(correlation_id=5, client_id="kp")
        assert bytes(message.encode(header=True, framed=True)) == encode_request(key, version, 5, "kp", value)
