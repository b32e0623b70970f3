"""The codecs against independent sources: the hand-written Produce hot path (cykafka/protocol/produce.py) against
the generic codec on every Produce version, the generic codec against kafka-python's encoders, and the descriptions
against the field facts in kafka-python's message files."""

from __future__ import annotations

import re
import struct
from typing import Any

import pytest
from hypothesis import strategies as st
from protocol_strategies import each_message, message_values

from cykafka.errors import ProtocolError, UnsupportedVersionError
from cykafka.protocol import (
    APIS,
    ProduceRequest,
    decode_produce_response,
    decode_response,
    encode_produce_request,
    encode_request,
    encode_response,
    produce,
)
from cykafka.protocol.apis import PRODUCE
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
