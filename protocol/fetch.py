"""The Fetch hot path, written by hand for speed beside Produce's (`produce`): a consumer sends a Fetch and reads its
answer on every turn of its network thread, and the generic codec's closures cost ~45 µs a cycle there.

- `encode_fetch_request`: the frame of a Fetch body shaped as the consumer's Fetcher builds it (cykafka/fetcher.py
  `fetch_request`: the same keys, no cluster_id), byte for byte `encode_request(FETCH.key, ...)`'s. Any other body,
  and any value the fast path cannot write, goes to the generic encoder, so the bytes (or the RequestEncodeError) are
  always the generic codec's. One difference, on purpose: a bool where an int is due is written as 0/1 here.
- `decode_fetch_response`: the usual answer (no tagged fields set) straight into the generic decoder's dict; any other
  answer, and any truncated or malformed one, goes to the generic decoder, so the value (or the ProtocolError) is
  always the generic codec's. The frame is read in place; only topic names and record batches are copied out.
tests/test_protocol_crosscheck.py checks both against the generic codec on every Fetch version.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from cykafka.errors import RequestEncodeError
from cykafka.protocol.apis import FETCH
from cykafka.protocol.codec import put_length, put_string, read_length, read_topic_head
from cykafka.protocol.error_codes import ErrorCode
from cykafka.protocol.frames import decode_response, encode_request, framed, lookup, request_head
from cykafka.protocol.schema import Field

if TYPE_CHECKING:
    from typing_extensions import Buffer

# the request body's keys as the Fetcher writes them, top level and per partition
_REQUEST_KEYS = frozenset(("replica_id", "max_wait_ms", "min_bytes", "max_bytes", "isolation_level", "session_id",
                           "session_epoch", "topics", "forgotten_topics_data", "rack_id"))
_PARTITION_KEYS = frozenset(("partition", "current_leader_epoch", "fetch_offset", "last_fetched_epoch",
                             "log_start_offset", "partition_max_bytes"))
_I32 = struct.Struct(">i")
_TOP_V4, _TOP_V7 = struct.Struct(">iiiib"), struct.Struct(">iiiibii")  # the request's fixed fields
_ANSWER_TOP_V7 = struct.Struct(">ihi")  # throttle, error code, session id
_ANSWER_PARTITION_V4, _ANSWER_PARTITION_V5 = struct.Struct(">ihqq"), struct.Struct(">ihqqq")  # (+ log start offset)
_ABORTED = struct.Struct(">qq")
_ENCODE_FAULTS = (RequestEncodeError, struct.error, OverflowError, UnicodeError, TypeError, ValueError, KeyError,
                  AttributeError)
_DECODE_FAULTS = (struct.error, IndexError, UnicodeDecodeError, ValueError)


class _NotUsual(Exception):
    """The fast path's way out: the generic codec's turn."""


def _put_topic_head(out: bytearray, topic: Mapping[str, Any], flexible: bool) -> Any:
    """A topic's entry up to its partitions ({"topic", "partitions"}, nothing else); returns the partitions."""
    if len(topic) != 2:
        raise _NotUsual
    put_string(out, topic["topic"], flexible)
    partitions = topic["partitions"]
    put_length(out, len(partitions), flexible)
    return partitions


def _partition_fields(body: tuple[Field, ...]) -> tuple[Field, ...]:
    """The per-partition fields of a Fetch body's description (request or response)."""
    topics = next(f for f in body if f.name in ("topics", "responses"))
    return next(f for f in topics.fields if f.name == "partitions").fields


_STRUCT_CODES = {"int32": "i", "int64": "q"}  # the request partition's field types


def _partition_layout(version: int) -> tuple[struct.Struct, tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """A request partition at this version, from the description: its fields as one struct and their names in order,
    and the fields it lacks that may only hold their defaults (set otherwise, the generic encoder refuses them)."""
    fields = _partition_fields(FETCH.request)
    present = [f for f in fields if f.present(version)]
    return (struct.Struct(">" + "".join(_STRUCT_CODES[f.type] for f in present)), tuple(f.name for f in present),
            tuple((f.name, f.default()) for f in fields if not f.present(version) and not f.ignorable))


_PARTITION_LAYOUTS = {v: _partition_layout(v) for v in FETCH.versions}


def _encode_body(out: bytearray, version: int, body: Mapping[str, Any]) -> None:
    flexible = FETCH.is_flexible(version)
    if version >= 7:
        out += _TOP_V7.pack(body["replica_id"], body["max_wait_ms"], body["min_bytes"], body["max_bytes"],
                            body["isolation_level"], body["session_id"], body["session_epoch"])
    else:
        out += _TOP_V4.pack(body["replica_id"], body["max_wait_ms"], body["min_bytes"], body["max_bytes"],
                            body["isolation_level"])
    layout, names, unsendable = _PARTITION_LAYOUTS[version]
    topics = body["topics"]
    put_length(out, len(topics), flexible)
    for topic in topics:
        for p in _put_topic_head(out, topic, flexible):
            if p.keys() != _PARTITION_KEYS or any(p[name] != default for name, default in unsendable):
                raise _NotUsual  # another shape, or a field set where the version lacks it: the generic encoder's turn
            out += layout.pack(*[p[name] for name in names])
            if flexible:
                out.append(0)
        if flexible:
            out.append(0)
    forgotten = body["forgotten_topics_data"]
    if version < 7 and forgotten:
        raise _NotUsual  # set where the version lacks it: the generic encoder's error
    if version >= 7:
        put_length(out, len(forgotten), flexible)
        for topic in forgotten:
            partitions = _put_topic_head(out, topic, flexible)
            out += struct.pack(f">{len(partitions)}i", *partitions)
            if flexible:
                out.append(0)
    if version >= 11:
        put_string(out, body["rack_id"], flexible)
    if flexible:
        out.append(0)  # no tagged fields: cluster_id is not the Fetcher's


def encode_fetch_request(version: int, correlation_id: int, client_id: str | None, body: Mapping[str, Any]) -> bytes:
    """The size-prefixed Fetch frame, equal to `encode_request(FETCH.key, version, correlation_id, client_id, body)`."""
    described = lookup(FETCH.key, version)
    if body.keys() == _REQUEST_KEYS:
        out = request_head(described, version, correlation_id, client_id)
        try:
            _encode_body(out, version, body)
        except (_NotUsual, *_ENCODE_FAULTS):
            pass
        else:
            return framed(out)
    return encode_request(FETCH.key, version, correlation_id, client_id, body)


# --- the answer -----------------------------------------------------------------------------------------------------


@cache
def _partition_defaults(version: int) -> tuple[tuple[str, Any], ...]:
    """The partition fields this version does not carry, or carries tagged, with their defaults (the generic decoder
    fills them in; a tagged one actually sent sends the answer to the generic decoder)."""
    defaults = tuple((f.name, f.default()) for f in _partition_fields(FETCH.response)
                     if not f.present(version) or f.tag is not None)
    assert all(not isinstance(v, dict) or not any(isinstance(x, (dict, list)) for x in v.values())
               for _, v in defaults), "a nested default: copy deeper below"
    return defaults


def _decode_usual(version: int, view: memoryview) -> tuple[int, dict[str, Any]]:
    """The usual answer as the generic decoder decodes it; _NotUsual (or a decode fault) for anything else."""
    flexible = FETCH.is_flexible(version)
    size = len(view)
    correlation_id = _I32.unpack_from(view, 0)[0]
    pos = 4
    if flexible:
        if view[pos]:
            raise _NotUsual  # header tags
        pos += 1
    if version >= 7:
        throttle_time_ms, error_code, session_id = _ANSWER_TOP_V7.unpack_from(view, pos)
        pos += 10
    else:  # no session before v7: the generic decoder's defaults
        throttle_time_ms, error_code, session_id = _I32.unpack_from(view, pos)[0], ErrorCode.NONE.value, 0
        pos += 4
    head = _ANSWER_PARTITION_V5 if version >= 5 else _ANSWER_PARTITION_V4
    head_bytes = head.size
    defaults = _partition_defaults(version)
    topic_count, pos = read_length(view, pos, flexible)
    if topic_count < 0:
        raise _NotUsual
    topics = []
    for _ in range(topic_count):
        topic = read_topic_head(view, pos, flexible)
        if topic is None:
            raise _NotUsual
        name, count, pos = topic
        partitions = []
        for _ in range(count):
            fields = head.unpack_from(view, pos)
            pos += head_bytes
            aborted_count, pos = read_length(view, pos, flexible)
            aborted: list[dict[str, int]] | None = None
            if aborted_count < -1:
                raise _NotUsual  # an overlong varint
            if aborted_count >= 0:
                aborted = []
                for _ in range(aborted_count):
                    producer_id, first_offset = _ABORTED.unpack_from(view, pos)
                    pos += 16
                    if flexible:
                        if view[pos]:
                            raise _NotUsual
                        pos += 1
                    aborted.append({"producer_id": producer_id, "first_offset": first_offset})
            partition = {"partition_index": fields[0], "error_code": fields[1], "high_watermark": fields[2],
                         "last_stable_offset": fields[3], "aborted_transactions": aborted}
            if version >= 5:
                partition["log_start_offset"] = fields[4]
            if version >= 11:
                partition["preferred_read_replica"] = _I32.unpack_from(view, pos)[0]
                pos += 4
            records_bytes, pos = read_length(view, pos, flexible)
            if records_bytes < -1 or pos + records_bytes > size:  # < -1: an overlong varint
                raise _NotUsual
            if records_bytes >= 0:
                partition["records"] = bytes(view[pos:pos + records_bytes])
                pos += records_bytes
            else:
                partition["records"] = None
            if flexible:
                if view[pos]:
                    raise _NotUsual  # a tagged field set (a diverging epoch, a new leader, a snapshot)
                pos += 1
            for key, value in defaults:
                partition[key] = dict(value) if type(value) is dict else value
            partitions.append(partition)
        if flexible:
            if view[pos]:
                raise _NotUsual
            pos += 1
        topics.append({"topic": name, "partitions": partitions})
    if flexible and view[pos]:
        raise _NotUsual
    return correlation_id, {"throttle_time_ms": throttle_time_ms, "error_code": error_code, "session_id": session_id,
                            "responses": topics}


def decode_fetch_response(version: int, frame: Buffer) -> tuple[int, dict[str, Any]]:
    """(correlation_id, body) from the bytes after the size prefix, equal to the generic decoder's; ProtocolError
    if truncated or malformed. Trailing bytes are ignored, as by the generic decoder."""
    lookup(FETCH.key, version)
    view = memoryview(frame).cast("B")
    try:
        return _decode_usual(version, view)
    except (_NotUsual, *_DECODE_FAULTS):
        return decode_response(FETCH.key, version, view)
