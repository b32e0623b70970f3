"""The consumer protocol's embedded bytes: what a consumer puts in JoinGroup's `protocols[].metadata`
(ConsumerProtocolSubscription) and what the leader hands out in SyncGroup's `assignments[].assignment`
(ConsumerProtocolAssignment). Neither is an API: each is a struct prefixed by its int16 version, as Java's
`MessageUtil.toVersionPrefixedByteBuffer` writes it, never flexible.

Described in the notation of cykafka.protocol.schema: a struct is held as an `Api` with key -1 whose request is the
struct (never framed, never in APIS), so the generic codec serves it unchanged.

Decoding follows Java's ConsumerProtocol rule: a version above the one we know is read as the highest we know (these
structs only ever append fields, "ignorable"), and its trailing bytes are skipped; a negative version is an error.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

from cykafka.errors import ProtocolError
from cykafka.protocol.apis import ALL, NULL
from cykafka.protocol.codec import decode_message, encode_message
from cykafka.protocol.schema import Api, F, api

PROTOCOL_TYPE = "consumer"  # JoinGroup's protocol_type for consumers

_TOPIC_PARTITIONS = (F("topic", "string", about="the topic's name"),
                     F("partitions", "[]int32", about="its partitions"))
_USER_DATA = F("user_data", "bytes", ALL, **NULL, about="the assignor's own data, if any")

SUBSCRIPTION: Api = api(-1, "ConsumerProtocolSubscription", "0-3", "none", request=(
    F("topics", "[]string", about="the topics the member subscribes to"),
    _USER_DATA,
    F("owned_partitions", "[]", "1+", *_TOPIC_PARTITIONS, ignorable=True,
      about="the partitions the member owns now (cooperative rebalancing)"),
    F("generation_id", "int32", "2+", default=-1, ignorable=True, about="the generation it owns them in, -1"),
    F("rack_id", "string", "3+", nullable="3+", default=None, ignorable=True, about="the member's rack, if any"),
), response=())

ASSIGNMENT: Api = api(-1, "ConsumerProtocolAssignment", "0-3", "none", request=(
    F("assigned_partitions", "[]", ALL, *_TOPIC_PARTITIONS, about="the partitions assigned to the member"),
    _USER_DATA,
), response=())

_VERSION = struct.Struct(">h")


def _encode(struct_: Api, version: int, value: Mapping[str, Any]) -> bytes:
    return _VERSION.pack(version) + encode_message(struct_, version, value)


def _decode(struct_: Api, data: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    """(version as written, fields): a newer version is read as the highest we describe (Java's rule)."""
    if len(data) < _VERSION.size:
        raise ProtocolError(f"{struct_.name}: {len(data)} bytes, too short for its int16 version")
    (version,) = _VERSION.unpack_from(data)
    if version < 0:
        raise ProtocolError(f"{struct_.name}: unsupported version {version}")
    known = min(version, struct_.valid[1])
    return version, decode_message(struct_, known, memoryview(data)[_VERSION.size:], strict=known == version)


def grouped(partitions: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
    """(topic, partition) pairs as the wire's [{topic, partitions}], topics and partitions sorted."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": sorted(by_topic[t])} for t in sorted(by_topic)]


def ungrouped(items: Iterable[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """The wire's [{topic, partitions}] as (topic, partition) pairs, in wire order."""
    return [(item["topic"], p) for item in items for p in item["partitions"]]


def encode_subscription(topics: Iterable[str], user_data: bytes | None = None,
                        owned_partitions: Iterable[tuple[str, int]] = (), generation_id: int = -1,
                        rack_id: str | None = None, version: int = 3) -> bytes:
    """JoinGroup metadata for one assignor (v3 by default, as Java 3.x writes it); topics go out sorted."""
    return _encode(SUBSCRIPTION, version, {
        "topics": sorted(topics), "user_data": user_data, "owned_partitions": grouped(owned_partitions),
        "generation_id": generation_id, "rack_id": rack_id})


def decode_subscription(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """A member's JoinGroup metadata: {version, topics, user_data, owned_partitions [(topic, partition)],
    generation_id (-1: unknown), rack_id}."""
    version, fields = _decode(SUBSCRIPTION, data)
    fields["version"] = version
    fields["owned_partitions"] = ungrouped(fields["owned_partitions"])
    return fields


def encode_assignment(partitions: Iterable[tuple[str, int]], user_data: bytes | None = None,
                      version: int = 3) -> bytes:
    """SyncGroup assignment bytes for one member."""
    return _encode(ASSIGNMENT, version, {"assigned_partitions": grouped(partitions), "user_data": user_data})


def decode_assignment(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """{version, assigned_partitions [(topic, partition)], user_data}. Empty bytes (what a broker sends with a
    SyncGroup error) decode as an empty assignment."""
    if len(data) == 0:
        return {"version": 0, "assigned_partitions": [], "user_data": None}
    version, fields = _decode(ASSIGNMENT, data)
    fields["version"] = version
    fields["assigned_partitions"] = ungrouped(fields["assigned_partitions"])
    return fields
