"""The consumer protocol's embedded structs (cykafka.protocol.consumer_protocol): round trips at every version, Java's
rule for newer versions, and byte equality with kafka-python's encoders of the same structs."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cykafka.errors import ProtocolError
from cykafka.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

kp = pytest.importorskip("kafka.protocol.consumer.metadata")

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
tps = st.lists(st.tuples(names, st.integers(0, 50)), max_size=6, unique=True)


@given(topics=st.lists(names, max_size=4, unique=True), user_data=st.none() | st.binary(max_size=8), owned=tps,
       generation=st.integers(-1, 2**31 - 1), rack=st.none() | names, version=st.integers(0, 3))
def test_subscription_round_trips_and_equals_kafka_python(topics: list[str], user_data: bytes | None,
                                                          owned: list[tuple[str, int]], generation: int,
                                                          rack: str | None, version: int) -> None:
    data = encode_subscription(topics, user_data, owned, generation, rack, version)
    got = decode_subscription(data)
    assert got["version"] == version and got["topics"] == sorted(topics) and got["user_data"] == user_data
    assert sorted(got["owned_partitions"]) == (sorted(owned) if version >= 1 else [])
    assert got["generation_id"] == (generation if version >= 2 else -1)
    assert got["rack_id"] == (rack if version >= 3 else None)
    S = kp.ConsumerProtocolSubscription
    by_topic: dict[str, list[int]] = {}
    for t, p in owned:
        by_topic.setdefault(t, []).append(p)
    theirs_owned = [S.TopicPartition(topic=t, partitions=sorted(ps)) for t, ps in sorted(by_topic.items())]
    theirs = S(topics=sorted(topics), user_data=user_data, generation_id=generation, rack_id=rack,
               owned_partitions=theirs_owned)
    assert theirs.encode(version=version) == data


@given(assigned=tps, user_data=st.none() | st.binary(max_size=8), version=st.integers(0, 3))
def test_assignment_round_trips_and_equals_kafka_python(assigned: list[tuple[str, int]], user_data: bytes | None,
                                                        version: int) -> None:
    data = encode_assignment(assigned, user_data, version)
    got = decode_assignment(data)
    assert got["version"] == version and sorted(got["assigned_partitions"]) == sorted(assigned)
    assert got["user_data"] == user_data
    decoded = kp.ConsumerProtocolAssignment.decode(data)
    assert sorted((t.topic, p) for t in decoded.assigned_partitions for p in t.partitions) == sorted(assigned)
    assert decoded.user_data == user_data


def test_a_newer_version_is_read_by_the_fields_we_know() -> None:
    """Java's ConsumerProtocol rule: version 9 is read as v3; the bytes of fields added later are skipped."""
    v3 = encode_subscription(["t"], None, [("t", 1)], 7, "rack")
    future = struct.pack(">h", 9) + v3[2:] + b"\x00\x00\x00\x2a more fields"
    got = decode_subscription(future)
    assert got["version"] == 9 and got["topics"] == ["t"] and got["owned_partitions"] == [("t", 1)]
    assert got["generation_id"] == 7 and got["rack_id"] == "rack"
    assignment = struct.pack(">h", 4) + encode_assignment([("t", 0)])[2:] + b"\x01\x02"
    assert decode_assignment(assignment)["assigned_partitions"] == [("t", 0)]


def test_known_versions_keep_strict_lengths_and_bad_input_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="trailing"):
        decode_subscription(encode_subscription(["t"]) + b"\x00")
    with pytest.raises(ProtocolError, match="unsupported version -1"):
        decode_subscription(struct.pack(">h", -1))
    with pytest.raises(ProtocolError, match="too short"):
        decode_assignment(b"\x00")
    with pytest.raises(ProtocolError):
        decode_subscription(encode_subscription(["topic"])[:-2])
    assert decode_assignment(b"")["assigned_partitions"] == []  # SyncGroup's bytes when it failed
