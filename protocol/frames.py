"""Frames: int32 size, header, body. The headers are the one part written by hand (client_id keeps its int16 length
even in the flexible request header v2, and ApiVersions answers with header v0 at every version, KIP-511).

Request header v1: api_key int16, api_version int16, correlation_id int32, client_id nullable string (int16 length);
v2 (flexible versions) adds a tagged-field section. Response header v0: correlation_id int32; v1 (flexible versions,
never ApiVersions) adds a tagged-field section.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cykafka.errors import ProtocolError, RequestEncodeError, UnsupportedVersionError
from cykafka.protocol.apis import API_VERSIONS, APIS
from cykafka.protocol.codec import Reader, decode_message, encode_message
from cykafka.protocol.error_codes import ErrorCode
from cykafka.protocol.schema import Api

_HEAD = struct.Struct(">hhi")
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Request:
    """A request as data, for a transport to carry: the API key and the body as `encode_message` takes it. The
    transport picks the version (ApiVersions) and encodes it with `encode_request`; the answer is the decoded dict."""

    api_key: int
    body: Mapping[str, Any] = field(repr=False)  # may hold credentials (SaslAuthenticate): never in a log line
    max_version: int | None = None  # the newest version this request may go at (None: the newest both speak)


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def lookup(api_key: int, version: int) -> Api:
    """The description of this API version, else UnsupportedVersionError naming what we speak."""
    described = APIS.get(api_key)
    if described is None:
        raise UnsupportedVersionError(f"cykafka does not describe api key {api_key}")
    if version not in described.versions:
        raise UnsupportedVersionError(
            f"{described.name} v{version} is not supported by cykafka "
            f"(supported: v{described.valid[0]}-v{described.valid[1]})")
    return described


def framed(out: bytearray) -> bytes:
    """The frame with its size written into its first 4 bytes."""
    _I32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def request_head(described: Api, version: int, correlation_id: int, client_id: str | None) -> bytearray:
    """A request frame's start: 4 bytes for its size (filled in once the frame is whole), then the header. The one
    writer of request headers: the generic codec's and the hand-written hot paths' (`produce`, `fetch`)."""
    out = bytearray(4)
    try:
        out += _HEAD.pack(described.key, version, correlation_id)
        raw = None if client_id is None else client_id.encode()
        if raw is not None and len(raw) > 0x7FFF:
            raise RequestEncodeError(f"client_id of {len(raw)} bytes exceeds the 32767-byte limit")
        out += _I16.pack(-1) if raw is None else _I16.pack(len(raw)) + raw
    except (struct.error, UnicodeError, AttributeError) as e:
        raise RequestEncodeError(f"cannot encode the {described.name} v{version} request header: {e}") from e
    if described.is_flexible(version):
        out.append(0)
    return out


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: Mapping[str, Any]) -> bytes:
    """The size-prefixed request frame."""
    described = lookup(api_key, version)
    out = request_head(described, version, correlation_id, client_id)
    out += encode_message(described, version, body)
    return framed(out)


def encode_response(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """The size-prefixed response frame, as a broker sends it (for fakes and tests)."""
    described = lookup(api_key, version)
    out = bytearray(4)
    try:
        out += _I32.pack(correlation_id)
    except struct.error as e:
        raise RequestEncodeError(f"cannot encode the {described.name} v{version} response header: {e}") from e
    if described.is_flexible(version) and api_key != API_VERSIONS.key:
        out.append(0)
    out += encode_message(described, version, body, response=True)
    return framed(out)


def _skip_tags(r: Reader) -> None:
    for _ in range(r.uvarint()):
        r.uvarint()
        r.take(r.uvarint())


def decode_response(api_key: int, version: int, frame: bytes | bytearray | memoryview) -> tuple[int, dict[str, Any]]:
    """(correlation_id, body) from the bytes after the size prefix; ProtocolError if truncated or malformed.
    Trailing bytes are ignored, as Java's client does (librdkafka's mock broker sends one after Metadata v12)."""
    described = lookup(api_key, version)
    r = Reader(frame)
    try:
        correlation_id = r.fixed(_I32)
        if described.is_flexible(version) and api_key != API_VERSIONS.key:
            _skip_tags(r)
        if api_key == API_VERSIONS.key and version > 0 and r.end - r.pos >= 2 \
                and _I16.unpack_from(r.view, r.pos)[0] == ErrorCode.UNSUPPORTED_VERSION:
            version = 0  # a broker that does not know our ApiVersions version answers in v0 (KIP-511)
    except ProtocolError as e:
        raise ProtocolError(f"{described.name} v{version} response header: {e}") from e
    return correlation_id, decode_message(described, version, r, response=True, strict=False)


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, dict[str, Any]]:
    """A request frame (after the size prefix) as a broker reads it (for fakes and tests)."""
    r = Reader(frame)
    try:
        api_key, version, correlation_id = _HEAD.unpack(r.take(_HEAD.size))
        length = r.fixed(_I16)
        client_id = None if length == -1 else str(r.take(length), "utf-8")
        described = lookup(api_key, version)
        if described.is_flexible(version):
            _skip_tags(r)
    except UnsupportedVersionError as e:
        raise ProtocolError(f"request: {e}") from e
    except (ProtocolError, UnicodeDecodeError) as e:
        raise ProtocolError(f"request header: {e}") from e
    body = decode_message(described, version, r)
    return RequestHeader(api_key, version, correlation_id, client_id), body
