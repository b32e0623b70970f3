"""The Produce hot path, written by hand for speed; everything else goes through the generic codec.

- `ProduceRequest` and `encode_produce_request`: the request frame as buffers for `socket.sendmsg`, each record
  batch attached as the caller's own buffer (never copied). The bytes equal `encode_request(0, version, ...,
  request.as_body())`.
- `decode_produce_response`: reads the usual answer (no record errors, no error message, no tagged fields) straight
  into the generic codec's dict; any other answer, and any malformed one, goes to the generic decoder, so the value
  (or the ProtocolError) is always the generic codec's.
tests/test_protocol_crosscheck.py checks both against the generic codec on every Produce version.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from cykafka.errors import RequestEncodeError
from cykafka.protocol.apis import PRODUCE
from cykafka.protocol.codec import put_length, put_string, read_length, read_topic_head
from cykafka.protocol.frames import decode_response, lookup, request_head

if TYPE_CHECKING:
    from typing_extensions import Buffer

_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
# a partition's answer: index, error code, base offset, log append time (, log start offset: v5+)
_PARTITION_V3 = struct.Struct(">ihqq")
_PARTITION_V5 = struct.Struct(">ihqqq")
# what ends the usual partition answer: no record errors, a null error message (v8+), no tagged fields (v9+)
_USUAL_END_V8 = b"\x00\x00\x00\x00\xff\xff"
_USUAL_END_FLEXIBLE = b"\x01\x00\x00"
_FAST_PATH_FAULTS = (struct.error, IndexError, UnicodeDecodeError)


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    """topics: (topic, ((partition, record batch buffer), ...)). The buffers go out as they are, uncopied."""

    api_key: ClassVar[int] = PRODUCE.key
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topics: Sequence[tuple[str, Sequence[tuple[int, Buffer | None]]]]
    max_version: int | None = None  # 11: a transaction on Transactions V1 (v12 adds partitions implicitly, KIP-890)

    def as_body(self) -> dict[str, Any]:
        """The same request as the generic codec's body."""
        return {"transactional_id": self.transactional_id, "acks": self.acks, "timeout_ms": self.timeout_ms,
                "topic_data": [{"name": name, "partition_data": [{"index": index, "records": records}
                                                                 for index, records in partitions]}
                               for name, partitions in self.topics]}


def _encode(request: ProduceRequest, version: int, correlation_id: int,
            client_id: str | None) -> list[bytes | memoryview]:
    flexible = PRODUCE.is_flexible(version)
    head = request_head(PRODUCE, version, correlation_id, client_id)
    if request.transactional_id is None:
        head += b"\x00" if flexible else b"\xff\xff"
    else:
        put_string(head, request.transactional_id, flexible)
    head += _ACKS_TIMEOUT.pack(request.acks, request.timeout_ms)
    put_length(head, len(request.topics), flexible)
    chunks: list[bytes | memoryview] = []
    size_bytes = 0
    for name, partitions in request.topics:
        put_string(head, name, flexible)
        put_length(head, len(partitions), flexible)
        for index, records in partitions:
            head += _I32.pack(index)
            if records is None:
                put_length(head, -1, flexible)
            else:
                view = memoryview(records).cast("B")
                put_length(head, len(view), flexible)
                if len(view):
                    chunks.append(bytes(head))
                    chunks.append(view)
                    size_bytes += len(head) + len(view)
                    head = bytearray()
            if flexible:
                head.append(0)
        if flexible:
            head.append(0)
    if flexible:
        head.append(0)
    if head:
        chunks.append(bytes(head))
        size_bytes += len(head)
    first = bytearray(chunks[0])
    _I32.pack_into(first, 0, size_bytes - 4)
    chunks[0] = bytes(first)
    return chunks


def encode_produce_request(request: ProduceRequest, version: int, correlation_id: int,
                           client_id: str | None) -> list[bytes | memoryview]:
    """The size-prefixed Produce frame as buffers for socket.sendmsg; record batches are the caller's views."""
    lookup(PRODUCE.key, version)
    try:
        return _encode(request, version, correlation_id, client_id)
    except (struct.error, OverflowError, UnicodeError, TypeError, ValueError) as e:
        raise RequestEncodeError(f"cannot encode the Produce v{version} request: {e}") from e


def _decode_usual(version: int, data: bytes) -> tuple[int, dict[str, Any]] | None:
    """The usual answer as the generic codec decodes it, or None for anything else (the generic decoder's turn).
    Raises struct.error / IndexError / UnicodeDecodeError on truncated or malformed input (the same)."""
    flexible = PRODUCE.is_flexible(version)
    head = _PARTITION_V5 if version >= 5 else _PARTITION_V3
    head_bytes = head.size
    end = _USUAL_END_FLEXIBLE if flexible else _USUAL_END_V8 if version >= 8 else b""
    end_bytes = len(end)
    correlation_id = _I32.unpack_from(data, 0)[0]
    pos = 4
    if flexible:
        if data[pos]:
            return None
        pos += 1
    topic_count, pos = read_length(data, pos, flexible)
    if topic_count < 0:
        return None
    topics = []
    for _ in range(topic_count):
        topic = read_topic_head(data, pos, flexible)
        if topic is None:
            return None
        name, count, pos = topic
        partitions = []
        for _ in range(count):
            fields = head.unpack_from(data, pos)
            pos += head_bytes
            if end_bytes:
                if data[pos:pos + end_bytes] != end:
                    return None
                pos += end_bytes
            partitions.append({
                "index": fields[0], "error_code": fields[1], "base_offset": fields[2],
                "log_append_time_ms": fields[3], "log_start_offset": fields[4] if version >= 5 else -1,
                "record_errors": [], "error_message": None, "current_leader": {"leader_id": -1, "leader_epoch": -1},
            })
        if flexible:
            if data[pos]:
                return None
            pos += 1
        topics.append({"name": name, "partition_responses": partitions})
    throttle_time_ms = _I32.unpack_from(data, pos)[0]
    if flexible and data[pos + 4]:
        return None
    return correlation_id, {"responses": topics, "throttle_time_ms": throttle_time_ms, "node_endpoints": []}


def decode_produce_response(version: int, frame: Buffer) -> tuple[int, dict[str, Any]]:
    """(correlation_id, body) from the bytes after the size prefix, equal to the generic decoder's; ProtocolError
    if truncated or malformed. Trailing bytes are ignored, as by the generic decoder."""
    lookup(PRODUCE.key, version)
    data = frame if isinstance(frame, bytes) else bytes(frame)
    try:
        usual = _decode_usual(version, data)
    except _FAST_PATH_FAULTS:
        usual = None
    return usual if usual is not None else decode_response(PRODUCE.key, version, data)

