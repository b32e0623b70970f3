"""Kafka wire codec, sans-I/O: frames, headers, the messages a producer speaks, error codes, metadata -> snapshot.

Owns: primitive readers/writers (`Reader`, `Writer`), request header v1/v2 and response header v0/v1, one frozen
dataclass per request/response with `encode_body`/`decode_body`, the Kafka error-code table, and turning a
MetadataResponse into a `ClusterSnapshot`. No sockets, no clocks: bytes in, values out.

Frame: int32 size, then header, then body. Request header: api_key int16, api_version int16, correlation_id int32,
client_id nullable int16-length string, then (v2, flexible versions only) tagged fields. Response header:
correlation_id int32, then (v1, flexible versions only, never for ApiVersions) tagged fields.
Flexible versions use compact strings/bytes/arrays (uvarint length + 1, 0 = null) and end every struct with
tagged fields (uvarint count, then uvarint tag, uvarint size, data per field).

Rules: every read is bounds-checked and every length is checked against the bytes left before anything is
allocated, so a truncated or malformed frame raises ProtocolError and nothing else. Produce record batches are
opaque buffers, attached to the encoded frame without a copy (`encode_request` returns a buffer list for
`socket.sendmsg`; one iovec per batch plus the chunks between them, mind IOV_MAX for huge requests).
Field layouts follow Kafka's message definitions (clients/src/main/resources/common/message/*.json).
"""

from __future__ import annotations

import abc
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar
from uuid import UUID

from cykafka.errors import (
    ProtocolError,
    RequestEncodeError,
    UnsupportedVersionError,
)
from cykafka.ports import ClusterSnapshot, Node, PartitionInfo
from cykafka.protocol import SUPPORTED_VERSIONS as _GENERIC_VERSIONS
from cykafka.protocol import frames as generic
from cykafka.protocol.error_codes import ERROR_CODES, ERRORS, ErrorCode, error_for, error_info
from cykafka.protocol.error_codes import ErrorSpec as ErrorInfo

if TYPE_CHECKING:
    from typing_extensions import Buffer

T = TypeVar("T")

# --- API keys and versions ---------------------------------------------------------------------------------------

PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
FIND_COORDINATOR = 10
SASL_HANDSHAKE = 17
API_VERSIONS = 18
CREATE_TOPICS = 19
INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28
SASL_AUTHENTICATE = 36

API_NAMES: dict[int, str] = {
    PRODUCE: "Produce",
    FETCH: "Fetch",
    LIST_OFFSETS: "ListOffsets",
    METADATA: "Metadata",
    FIND_COORDINATOR: "FindCoordinator",
    SASL_HANDSHAKE: "SaslHandshake",
    API_VERSIONS: "ApiVersions",
    CREATE_TOPICS: "CreateTopics",
    INIT_PRODUCER_ID: "InitProducerId",
    ADD_PARTITIONS_TO_TXN: "AddPartitionsToTxn",
    ADD_OFFSETS_TO_TXN: "AddOffsetsToTxn",
    END_TXN: "EndTxn",
    TXN_OFFSET_COMMIT: "TxnOffsetCommit",
    SASL_AUTHENTICATE: "SaslAuthenticate",
}

# Versions this codec reads and writes, inclusive. Produce stops at 10 (11 may answer TRANSACTION_ABORTABLE),
# the transaction APIs before their TRANSACTION_ABORTABLE versions, AddPartitionsToTxn at 3 (4+ is broker-only).
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    PRODUCE: (3, 10),
    FETCH: (4, 12),
    LIST_OFFSETS: (1, 7),
    METADATA: (1, 12),
    FIND_COORDINATOR: (1, 4),
    SASL_HANDSHAKE: (0, 1),
    API_VERSIONS: (0, 3),
    CREATE_TOPICS: (2, 7),
    INIT_PRODUCER_ID: (0, 4),
    ADD_PARTITIONS_TO_TXN: (0, 3),
    ADD_OFFSETS_TO_TXN: (0, 3),
    END_TXN: (0, 3),
    TXN_OFFSET_COMMIT: (0, 3),
    SASL_AUTHENTICATE: (0, 2),
}

# What a transport negotiates (ApiVersions): these hand-written ranges, and the generic codec's (cykafka.protocol)
# for the APIs only it describes, carried as `cykafka.protocol.Request` values.
NEGOTIATED_VERSIONS: dict[int, tuple[int, int]] = {**_GENERIC_VERSIONS, **SUPPORTED_VERSIONS}

# First flexible version per API (same for request and response); None: never flexible.
FLEXIBLE_FROM: dict[int, int | None] = {
    PRODUCE: 9,
    FETCH: 12,
    LIST_OFFSETS: 6,
    METADATA: 9,
    FIND_COORDINATOR: 3,
    SASL_HANDSHAKE: None,
    API_VERSIONS: 3,
    CREATE_TOPICS: 5,
    INIT_PRODUCER_ID: 2,
    ADD_PARTITIONS_TO_TXN: 3,
    ADD_OFFSETS_TO_TXN: 3,
    END_TXN: 3,
    TXN_OFFSET_COMMIT: 3,
    SASL_AUTHENTICATE: 2,
}

ZERO_UUID = UUID(int=0)
INT32_MIN = -(2**31)
UNSUPPORTED_VERSION_CODE = ErrorCode.UNSUPPORTED_VERSION


def api_name(api_key: int) -> str:
    return API_NAMES.get(api_key, f"api key {api_key}")


def is_flexible(api_key: int, version: int) -> bool:
    first = FLEXIBLE_FROM.get(api_key)
    return first is not None and version >= first


def request_header_version(api_key: int, version: int) -> int:
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    # ApiVersions answers with header v0 at every version, so a client can always read the error code.
    return 1 if is_flexible(api_key, version) and api_key != API_VERSIONS else 0


def pick_version(api_key: int, broker_min: int, broker_max: int) -> int:
    """The highest version both this codec and the broker support, else UnsupportedVersionError naming the API."""
    ours = SUPPORTED_VERSIONS.get(api_key)
    if ours is None:
        raise UnsupportedVersionError(f"cykafka does not implement {api_name(api_key)} (api key {api_key})")
    low, high = max(ours[0], broker_min), min(ours[1], broker_max)
    if high < low:
        raise UnsupportedVersionError(
            f"{api_name(api_key)} (api key {api_key}): broker supports v{broker_min}-v{broker_max}, "
            f"cykafka v{ours[0]}-v{ours[1]}; no common version"
        )
    return high


def _check_version(api_key: int, version: int) -> None:
    ours = SUPPORTED_VERSIONS.get(api_key)
    if ours is None or not ours[0] <= version <= ours[1]:
        supported = f"v{ours[0]}-v{ours[1]}" if ours else "none"
        raise UnsupportedVersionError(
            f"{api_name(api_key)} v{version} is not supported by cykafka (supported: {supported})"
        )


# --- primitives ----------------------------------------------------------------------------------------------------

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_NO_TAGS: Mapping[int, memoryview] = MappingProxyType({})
# Array item_bytes hints are lower bounds over both encodings; a name then an array is at least 3 bytes when
# flexible (compact string 1, compact array 1, tagged fields 1).
_NAME_AND_ARRAY_BYTES = 3


class Reader:
    """Reads Kafka primitives from a buffer. `flexible` selects compact strings/bytes/arrays and tagged fields.

    Every read past the end, negative or oversized length, overlong varint or invalid UTF-8 raises ProtocolError.
    """

    __slots__ = ("_end", "_pos", "_view", "flexible")

    def __init__(self, data: Buffer, flexible: bool = False) -> None:
        self._view = memoryview(data).cast("B")
        self._pos = 0
        self._end = len(self._view)
        self.flexible = flexible

    @property
    def position(self) -> int:
        return self._pos

    @property
    def remaining(self) -> int:
        return self._end - self._pos

    def _take(self, size_bytes: int) -> int:
        start = self._pos
        if size_bytes > self._end - start:
            raise ProtocolError(
                f"truncated: need {size_bytes} bytes at offset {start}, {self._end - start} left"
            )
        self._pos = start + size_bytes
        return start

    def _check_length(self, length: int, what: str, item_bytes: int = 1) -> int:
        if length < 0 or length * item_bytes > self._end - self._pos:
            raise ProtocolError(
                f"{what} length {length} at offset {self._pos} does not fit the {self._end - self._pos} bytes left"
            )
        return length

    def expect_end(self) -> None:
        if self._pos != self._end:
            raise ProtocolError(f"{self._end - self._pos} unexpected trailing bytes at offset {self._pos}")

    def int8(self) -> int:
        return int(_I8.unpack_from(self._view, self._take(1))[0])

    def boolean(self) -> bool:
        return self._view[self._take(1)] != 0

    def int16(self) -> int:
        return int(_I16.unpack_from(self._view, self._take(2))[0])

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...]:
        """Several fixed-size fields in one read."""
        return layout.unpack_from(self._view, self._take(layout.size))

    def peek_int16(self) -> int:
        start = self._take(2)
        self._pos = start
        return int(_I16.unpack_from(self._view, start)[0])

    def int32(self) -> int:
        return int(_I32.unpack_from(self._view, self._take(4))[0])

    def uint32(self) -> int:
        return int(_U32.unpack_from(self._view, self._take(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack_from(self._view, self._take(8))[0])

    def _unsigned_varint(self, max_bytes: int, max_value: int) -> int:
        view, pos, end = self._view, self._pos, self._end
        if pos < end and view[pos] < 0x80:  # one byte: most lengths and counts
            self._pos = pos + 1
            return view[pos]
        value = shift = 0
        for _ in range(max_bytes):
            if pos >= end:
                raise ProtocolError(f"truncated varint at offset {self._pos}")
            byte = view[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                if value > max_value:
                    raise ProtocolError(f"varint at offset {self._pos} overflows")
                self._pos = pos
                return value
            shift += 7
        raise ProtocolError(f"varint at offset {self._pos} longer than {max_bytes} bytes")

    def uvarint(self) -> int:
        return self._unsigned_varint(5, 0xFFFFFFFF)

    def uvarlong(self) -> int:
        return self._unsigned_varint(10, 0xFFFFFFFFFFFFFFFF)

    def varint(self) -> int:
        n = self._unsigned_varint(5, 0xFFFFFFFF)
        return (n >> 1) ^ -(n & 1)

    def varlong(self) -> int:
        n = self._unsigned_varint(10, 0xFFFFFFFFFFFFFFFF)
        return (n >> 1) ^ -(n & 1)

    def uuid(self) -> UUID:
        start = self._take(16)
        return UUID(bytes=bytes(self._view[start : start + 16]))

    def _text(self, length: int) -> str:
        start = self._take(length)
        try:
            return str(self._view[start : start + length], "utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError(f"invalid UTF-8 in string at offset {start}") from e

    def _string_length(self) -> int:
        """-1 for null; compact or int16 by `flexible`."""
        length = self.uvarint() - 1 if self.flexible else self.int16()
        if length < -1:
            raise ProtocolError(f"negative string length {length} before offset {self._pos}")
        return self._check_length(length, "string") if length >= 0 else -1

    def string(self) -> str:
        length = self._string_length()
        if length < 0:
            raise ProtocolError(f"null string before offset {self._pos} where a string is required")
        return self._text(length)

    def nullable_string(self) -> str | None:
        length = self._string_length()
        return None if length < 0 else self._text(length)

    def legacy_nullable_string(self) -> str | None:
        """int16-length nullable string whatever `flexible` says (the request header's client_id)."""
        length = self.int16()
        if length < -1:
            raise ProtocolError(f"negative string length {length} before offset {self._pos}")
        return None if length < 0 else self._text(self._check_length(length, "string"))

    def _bytes_length(self) -> int:
        length = self.uvarint() - 1 if self.flexible else self.int32()
        if length < -1:
            raise ProtocolError(f"negative bytes length {length} before offset {self._pos}")
        return self._check_length(length, "bytes") if length >= 0 else -1

    def bytes_view(self) -> memoryview:
        """Bytes field as a view into the frame (no copy)."""
        length = self._bytes_length()
        if length < 0:
            raise ProtocolError(f"null bytes before offset {self._pos} where bytes are required")
        start = self._take(length)
        return self._view[start : start + length]

    def nullable_bytes_view(self) -> memoryview | None:
        length = self._bytes_length()
        if length < 0:
            return None
        start = self._take(length)
        return self._view[start : start + length]

    def _array_length(self, item_bytes: int) -> int:
        length = self.uvarint() - 1 if self.flexible else self.int32()
        if length < -1:
            raise ProtocolError(f"negative array length {length} before offset {self._pos}")
        return self._check_length(length, "array", item_bytes) if length >= 0 else -1

    def array_length(self, item_bytes: int = 1) -> int:
        """Element count, checked against the bytes left at `item_bytes` (a lower bound on one element's size)."""
        length = self._array_length(item_bytes)
        if length < 0:
            raise ProtocolError(f"null array before offset {self._pos} where an array is required")
        return length

    def nullable_array_length(self, item_bytes: int = 1) -> int:
        """Element count, or -1 for a null array."""
        return self._array_length(item_bytes)

    def array(self, read_item: Callable[[Reader], T], item_bytes: int = 1) -> tuple[T, ...]:
        return tuple([read_item(self) for _ in range(self.array_length(item_bytes))])

    def nullable_array(self, read_item: Callable[[Reader], T], item_bytes: int = 1) -> tuple[T, ...] | None:
        length = self._array_length(item_bytes)
        return None if length < 0 else tuple([read_item(self) for _ in range(length)])

    def int32_array(self) -> tuple[int, ...]:
        count = self.array_length(4)
        start = self._take(4 * count)
        return struct.unpack_from(f">{count}i", self._view, start)

    def string_array(self) -> tuple[str, ...]:
        return tuple([self.string() for _ in range(self.array_length())])

    def tagged_fields(self) -> Mapping[int, memoryview]:
        """Tag -> raw value (views into the frame); unknown tags are simply not looked at. Empty if not flexible."""
        if not self.flexible:
            return _NO_TAGS
        pos = self._pos
        if pos < self._end and self._view[pos] == 0:  # no tagged fields: the usual case
            self._pos = pos + 1
            return _NO_TAGS
        count = self._check_length(self.uvarint(), "tagged fields", 2)
        if count == 0:
            return _NO_TAGS
        fields: dict[int, memoryview] = {}
        for _ in range(count):
            tag = self.uvarint()
            size_bytes = self._check_length(self.uvarint(), "tagged field")
            start = self._take(size_bytes)
            fields[tag] = self._view[start : start + size_bytes]
        return fields


def _zigzag(value: int) -> int:
    return value << 1 if value >= 0 else ((-value) << 1) - 1


class Writer:
    """Writes Kafka primitives; `attach` adds a caller's buffer as its own chunk without copying it."""

    __slots__ = ("_buf", "_chunks", "flexible")

    def __init__(self, flexible: bool = False, reserve_bytes: int = 0) -> None:
        self._buf = bytearray(reserve_bytes)
        self._chunks: list[bytes | memoryview] = []
        self.flexible = flexible

    def int8(self, value: int) -> None:
        self._buf += _I8.pack(value)

    def boolean(self, value: bool) -> None:
        self._buf.append(1 if value else 0)

    def int16(self, value: int) -> None:
        self._buf += _I16.pack(value)

    def int32(self, value: int) -> None:
        self._buf += _I32.pack(value)

    def uint32(self, value: int) -> None:
        self._buf += _U32.pack(value)

    def int64(self, value: int) -> None:
        self._buf += _I64.pack(value)

    def _unsigned_varint(self, value: int, max_value: int) -> None:
        if not 0 <= value <= max_value:
            raise RequestEncodeError(f"varint value {value} out of range 0..{max_value}")
        buf = self._buf
        while value >= 0x80:
            buf.append((value & 0x7F) | 0x80)
            value >>= 7
        buf.append(value)

    def uvarint(self, value: int) -> None:
        self._unsigned_varint(value, 0xFFFFFFFF)

    def uvarlong(self, value: int) -> None:
        self._unsigned_varint(value, 0xFFFFFFFFFFFFFFFF)

    def varint(self, value: int) -> None:
        if not -(2**31) <= value < 2**31:
            raise RequestEncodeError(f"varint value {value} out of int32 range")
        self._unsigned_varint(_zigzag(value), 0xFFFFFFFF)

    def varlong(self, value: int) -> None:
        if not -(2**63) <= value < 2**63:
            raise RequestEncodeError(f"varlong value {value} out of int64 range")
        self._unsigned_varint(_zigzag(value), 0xFFFFFFFFFFFFFFFF)

    def uuid(self, value: UUID) -> None:
        self._buf += value.bytes

    def _length(self, length: int, int16_prefix: bool = False) -> None:
        """length -1 = null."""
        if self.flexible:
            self.uvarint(length + 1)
        elif int16_prefix:
            self.int16(length)
        else:
            self.int32(length)

    def string(self, value: str) -> None:
        data = value.encode()
        if len(data) > 0x7FFF:
            raise RequestEncodeError(f"string of {len(data)} bytes exceeds the 32767-byte limit")
        self._length(len(data), int16_prefix=True)
        self._buf += data

    def nullable_string(self, value: str | None) -> None:
        if value is None:
            self._length(-1, int16_prefix=True)
        else:
            self.string(value)

    def legacy_nullable_string(self, value: str | None) -> None:
        """int16-length nullable string whatever `flexible` says (the request header's client_id)."""
        if value is None:
            self.int16(-1)
            return
        data = value.encode()
        if len(data) > 0x7FFF:
            raise RequestEncodeError(f"string of {len(data)} bytes exceeds the 32767-byte limit")
        self.int16(len(data))
        self._buf += data

    def bytes_(self, value: Buffer) -> None:
        view = memoryview(value).cast("B")
        self._length(len(view))
        self._buf += view

    def nullable_bytes(self, value: Buffer | None) -> None:
        if value is None:
            self._length(-1)
        else:
            self.bytes_(value)

    def attach(self, value: Buffer | None) -> None:
        """A nullable bytes field whose data goes out as the caller's own buffer (record batches): never copied."""
        if value is None:
            self._length(-1)
            return
        view = memoryview(value).cast("B")
        self._length(len(view))
        if len(view):
            self._chunks.append(bytes(self._buf))
            self._chunks.append(view)
            self._buf = bytearray()

    def array_length(self, length: int) -> None:
        self._length(length)

    def nullable_array_length(self, length: int | None) -> None:
        self._length(-1 if length is None else length)

    def array(self, items: Sequence[T], write_item: Callable[[Writer, T], None]) -> None:
        self._length(len(items))
        for item in items:
            write_item(self, item)

    def nullable_array(self, items: Sequence[T] | None, write_item: Callable[[Writer, T], None]) -> None:
        if items is None:
            self._length(-1)
        else:
            self.array(items, write_item)

    def int32_array(self, values: Sequence[int]) -> None:
        self._length(len(values))
        self._buf += struct.pack(f">{len(values)}i", *values)

    def string_array(self, values: Sequence[str]) -> None:
        self._length(len(values))
        for value in values:
            self.string(value)

    def tagged_fields(self, fields: Mapping[int, bytes] | None = None) -> None:
        """Tagged-field section (sorted by tag); writes nothing when not flexible."""
        if not self.flexible:
            return
        if not fields:
            self._buf.append(0)
            return
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag)
            self.uvarint(len(fields[tag]))
            self._buf += fields[tag]

    def chunks(self) -> list[bytes | memoryview]:
        """Everything written, in order: copied chunks as bytes, attached buffers as the caller's views."""
        return [*self._chunks, bytes(self._buf)] if self._buf or not self._chunks else list(self._chunks)

    def getvalue(self) -> bytes:
        return b"".join(self.chunks())

    def framed(self) -> list[bytes | memoryview]:
        """Chunks with the int32 size prefix filled in; the writer must have been made with reserve_bytes=4."""
        if self._chunks:
            first = bytearray(self._chunks[0])
            rest: list[bytes | memoryview] = [*self._chunks[1:], bytes(self._buf)] if self._buf else self._chunks[1:]
        else:
            first, rest = self._buf, []
        size_bytes = len(first) - 4 + sum(len(chunk) for chunk in rest)
        _I32.pack_into(first, 0, size_bytes)
        return [bytes(first), *rest]


def _tag_reader(raw: memoryview) -> Reader:
    return Reader(raw, flexible=True)


# --- message base --------------------------------------------------------------------------------------------------


class Message(abc.ABC):
    """A request or response body. API_KEY names the API; encode_body/decode_body take the API version."""

    __slots__ = ()
    API_KEY: ClassVar[int]

    @abc.abstractmethod
    def encode_body(self, w: Writer, version: int) -> None: ...

    @classmethod
    @abc.abstractmethod
    def decode_body(cls, r: Reader, version: int) -> Self: ...


class Request(Message):
    __slots__ = ()


class Response(Message):
    __slots__ = ()


# --- ApiVersions (18) ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApiVersionsRequest(Request):
    API_KEY: ClassVar[int] = API_VERSIONS
    client_software_name: str = "cykafka"
    client_software_version: str = "0.1.0"

    def encode_body(self, w: Writer, version: int) -> None:
        if version >= 3:
            w.string(self.client_software_name)
            w.string(self.client_software_version)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        if version < 3:
            return cls()
        name, software_version = r.string(), r.string()
        r.tagged_fields()
        return cls(name, software_version)


@dataclass(frozen=True, slots=True)
class ApiVersionRange:
    api_key: int
    min_version: int
    max_version: int


def _read_api_version_range(r: Reader) -> ApiVersionRange:
    item = ApiVersionRange(r.int16(), r.int16(), r.int16())
    r.tagged_fields()
    return item


def _write_api_version_range(w: Writer, item: ApiVersionRange) -> None:
    w.int16(item.api_key)
    w.int16(item.min_version)
    w.int16(item.max_version)
    w.tagged_fields()


@dataclass(frozen=True, slots=True)
class ApiVersionsResponse(Response):
    API_KEY: ClassVar[int] = API_VERSIONS
    error_code: int
    api_keys: tuple[ApiVersionRange, ...] = ()
    throttle_time_ms: int = 0

    def versions(self) -> dict[int, tuple[int, int]]:
        """api key -> (min, max) the broker supports."""
        return {item.api_key: (item.min_version, item.max_version) for item in self.api_keys}

    def encode_body(self, w: Writer, version: int) -> None:
        w.int16(self.error_code)
        w.array(self.api_keys, _write_api_version_range)
        if version >= 1:
            w.int32(self.throttle_time_ms)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        error_code = r.int16()
        api_keys = r.array(_read_api_version_range, 6)
        throttle_time_ms = r.int32() if version >= 1 else 0
        r.tagged_fields()  # supported/finalized features: not needed by a producer
        return cls(error_code, api_keys, throttle_time_ms)


# --- Metadata (3) --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetadataRequest(Request):
    """topics None asks for every topic; an empty sequence for none (brokers only)."""

    API_KEY: ClassVar[int] = METADATA
    topics: Sequence[str] | None = None
    allow_auto_topic_creation: bool = True
    include_topic_authorized_operations: bool = False

    def encode_body(self, w: Writer, version: int) -> None:
        if self.topics is None:
            w.nullable_array_length(None)
        else:
            w.array_length(len(self.topics))
            for name in self.topics:
                if version >= 10:
                    w.uuid(ZERO_UUID)
                w.string(name)
                w.tagged_fields()
        if version >= 4:
            w.boolean(self.allow_auto_topic_creation)
        if 8 <= version <= 10:
            w.boolean(False)  # include cluster authorized operations
        if version >= 8:
            w.boolean(self.include_topic_authorized_operations)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        count = r.nullable_array_length()
        topics: tuple[str, ...] | None = None
        if count >= 0:
            names = []
            for _ in range(count):
                if version >= 10:
                    r.uuid()
                name = r.nullable_string() if version >= 10 else r.string()
                if name is None:
                    raise ProtocolError("Metadata request by topic id is not supported")
                names.append(name)
                r.tagged_fields()
            topics = tuple(names)
        allow_auto_topic_creation = r.boolean() if version >= 4 else True
        if 8 <= version <= 10:
            r.boolean()
        include_topic_authorized_operations = r.boolean() if version >= 8 else False
        r.tagged_fields()
        return cls(topics, allow_auto_topic_creation, include_topic_authorized_operations)


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


def _read_broker(r: Reader) -> BrokerEndpoint:
    item = BrokerEndpoint(r.int32(), r.string(), r.int32(), r.nullable_string())
    r.tagged_fields()
    return item


def _write_broker(w: Writer, item: BrokerEndpoint) -> None:
    w.int32(item.node_id)
    w.string(item.host)
    w.int32(item.port)
    w.nullable_string(item.rack)
    w.tagged_fields()


@dataclass(frozen=True, slots=True)
class MetadataPartition:
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int = -1
    replica_nodes: tuple[int, ...] = ()
    isr_nodes: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class MetadataTopic:
    error_code: int
    name: str | None
    topic_id: UUID = ZERO_UUID
    is_internal: bool = False
    partitions: tuple[MetadataPartition, ...] = ()
    topic_authorized_operations: int = INT32_MIN


@dataclass(frozen=True, slots=True)
class MetadataResponse(Response):
    API_KEY: ClassVar[int] = METADATA
    brokers: tuple[BrokerEndpoint, ...] = ()
    cluster_id: str | None = None
    controller_id: int = -1
    topics: tuple[MetadataTopic, ...] = ()
    throttle_time_ms: int = 0
    cluster_authorized_operations: int = INT32_MIN

    def encode_body(self, w: Writer, version: int) -> None:
        if version >= 3:
            w.int32(self.throttle_time_ms)
        w.array(self.brokers, _write_broker)  # rack is v1+, our minimum
        if version >= 2:
            w.nullable_string(self.cluster_id)
        w.int32(self.controller_id)
        w.array_length(len(self.topics))
        for topic in self.topics:
            w.int16(topic.error_code)
            if version >= 12:
                w.nullable_string(topic.name)
            elif topic.name is None:
                raise RequestEncodeError(f"Metadata v{version} cannot carry a topic without a name")
            else:
                w.string(topic.name)
            if version >= 10:
                w.uuid(topic.topic_id)
            w.boolean(topic.is_internal)
            w.array_length(len(topic.partitions))
            for p in topic.partitions:
                w.int16(p.error_code)
                w.int32(p.partition_index)
                w.int32(p.leader_id)
                if version >= 7:
                    w.int32(p.leader_epoch)
                w.int32_array(p.replica_nodes)
                w.int32_array(p.isr_nodes)
                if version >= 5:
                    w.int32_array(p.offline_replicas)
                w.tagged_fields()
            if version >= 8:
                w.int32(topic.topic_authorized_operations)
            w.tagged_fields()
        if 8 <= version <= 10:
            w.int32(self.cluster_authorized_operations)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32() if version >= 3 else 0
        brokers = r.array(_read_broker, 9)
        cluster_id = r.nullable_string() if version >= 2 else None
        controller_id = r.int32()

        def read_partition(r: Reader) -> MetadataPartition:
            error_code, index, leader_id = r.int16(), r.int32(), r.int32()
            leader_epoch = r.int32() if version >= 7 else -1
            replicas, isr = r.int32_array(), r.int32_array()
            offline = r.int32_array() if version >= 5 else ()
            r.tagged_fields()
            return MetadataPartition(error_code, index, leader_id, leader_epoch, replicas, isr, offline)

        def read_topic(r: Reader) -> MetadataTopic:
            error_code = r.int16()
            name = r.nullable_string() if version >= 12 else r.string()
            topic_id = r.uuid() if version >= 10 else ZERO_UUID
            is_internal = r.boolean()
            partitions = r.array(read_partition, 14)
            operations = r.int32() if version >= 8 else INT32_MIN
            r.tagged_fields()
            return MetadataTopic(error_code, name, topic_id, is_internal, partitions, operations)

        topics = r.array(read_topic, 4)
        cluster_operations = r.int32() if 8 <= version <= 10 else INT32_MIN
        r.tagged_fields()
        return cls(brokers, cluster_id, controller_id, topics, throttle_time_ms, cluster_operations)


def to_cluster_snapshot(response: MetadataResponse) -> ClusterSnapshot:
    """The snapshot the core reads: nodes by id; per topic without error, partitions indexed by partition id.

    A leader that is not among the response's brokers counts as unknown (-1), as in Java's Cluster. A partition id
    missing from the response gets a placeholder with leader -1 and LEADER_NOT_AVAILABLE so list index == id.
    Topics with an error code go to topic_errors only.
    """
    nodes = {b.node_id: Node(b.node_id, b.host, b.port, b.rack) for b in response.brokers}
    partitions: dict[str, list[PartitionInfo]] = {}
    topic_errors: dict[str, int] = {}
    for topic in response.topics:
        if topic.name is None:
            continue
        if topic.error_code:
            topic_errors[topic.name] = topic.error_code
            continue
        by_id = {p.partition_index: p for p in topic.partitions if p.partition_index >= 0}
        count = max(by_id) + 1 if by_id else 0
        infos = []
        for index in range(count):
            p = by_id.get(index)
            if p is None:
                infos.append(PartitionInfo(topic.name, index, -1, error_code=ErrorCode.LEADER_NOT_AVAILABLE))
                continue
            leader = p.leader_id if p.leader_id in nodes else -1
            infos.append(
                PartitionInfo(topic.name, index, leader, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.error_code)
            )
        partitions[topic.name] = infos
    return ClusterSnapshot(nodes, partitions, topic_errors, response.controller_id, response.cluster_id)


# --- Produce (0) ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProduceRequest(Request):
    """topics: (topic, ((partition, record batch buffer), ...)). The buffers go out as they are, uncopied."""

    API_KEY: ClassVar[int] = PRODUCE
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topics: Sequence[tuple[str, Sequence[tuple[int, Buffer | None]]]]

    def encode_body(self, w: Writer, version: int) -> None:
        w.nullable_string(self.transactional_id)
        w.int16(self.acks)
        w.int32(self.timeout_ms)
        w.array_length(len(self.topics))
        for name, partitions in self.topics:
            w.string(name)
            w.array_length(len(partitions))
            for index, records in partitions:
                w.int32(index)
                w.attach(records)
                w.tagged_fields()
            w.tagged_fields()
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        transactional_id, acks, timeout_ms = r.nullable_string(), r.int16(), r.int32()

        def read_partition(r: Reader) -> tuple[int, Buffer | None]:
            item = (r.int32(), r.nullable_bytes_view())
            r.tagged_fields()
            return item

        def read_topic(r: Reader) -> tuple[str, tuple[tuple[int, Buffer | None], ...]]:
            item = (r.string(), r.array(read_partition, 5))
            r.tagged_fields()
            return item

        topics = r.array(read_topic, _NAME_AND_ARRAY_BYTES)
        r.tagged_fields()
        return cls(transactional_id, acks, timeout_ms, topics)


@dataclass(frozen=True, slots=True)
class RecordError:
    """A record (by index in its batch) that made the broker drop the whole batch."""

    batch_index: int
    message: str | None = None


@dataclass(frozen=True, slots=True)
class LeaderIdAndEpoch:
    leader_id: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ProducePartitionResponse:
    partition_index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: tuple[RecordError, ...] = ()
    error_message: str | None = None
    current_leader: LeaderIdAndEpoch | None = None  # v10+, sent with NOT_LEADER_OR_FOLLOWER (KIP-951)


@dataclass(frozen=True, slots=True)
class ProduceTopicResponse:
    name: str
    partitions: tuple[ProducePartitionResponse, ...]


def _leader_and_epoch_bytes(leader: LeaderIdAndEpoch) -> bytes:
    w = Writer(flexible=True)
    w.int32(leader.leader_id)
    w.int32(leader.leader_epoch)
    w.tagged_fields()
    return w.getvalue()


# Fixed head of a produce partition response: index, error code, base offset, log append time (, log start offset).
_PRODUCE_PARTITION_V3 = struct.Struct(">ihqq")
_PRODUCE_PARTITION_V5 = struct.Struct(">ihqqq")


def _read_leader_and_epoch(raw: memoryview) -> LeaderIdAndEpoch:
    r = _tag_reader(raw)
    item = LeaderIdAndEpoch(r.int32(), r.int32())
    r.tagged_fields()
    r.expect_end()
    return item


@dataclass(frozen=True, slots=True)
class ProduceResponse(Response):
    API_KEY: ClassVar[int] = PRODUCE
    topics: tuple[ProduceTopicResponse, ...]
    throttle_time_ms: int = 0
    node_endpoints: tuple[BrokerEndpoint, ...] = ()  # v10+, the leaders named in current_leader

    def encode_body(self, w: Writer, version: int) -> None:
        w.array_length(len(self.topics))
        for topic in self.topics:
            w.string(topic.name)
            w.array_length(len(topic.partitions))
            for p in topic.partitions:
                w.int32(p.partition_index)
                w.int16(p.error_code)
                w.int64(p.base_offset)
                w.int64(p.log_append_time_ms)
                if version >= 5:
                    w.int64(p.log_start_offset)
                if version >= 8:
                    w.array_length(len(p.record_errors))
                    for e in p.record_errors:
                        w.int32(e.batch_index)
                        w.nullable_string(e.message)
                        w.tagged_fields()
                    w.nullable_string(p.error_message)
                leader = p.current_leader
                w.tagged_fields({0: _leader_and_epoch_bytes(leader)} if version >= 10 and leader else None)
            w.tagged_fields()
        w.int32(self.throttle_time_ms)
        if version >= 10 and self.node_endpoints:
            t = Writer(flexible=True)
            t.array(self.node_endpoints, _write_broker)
            w.tagged_fields({0: t.getvalue()})
        else:
            w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        def read_record_error(r: Reader) -> RecordError:
            item = RecordError(r.int32(), r.nullable_string())
            r.tagged_fields()
            return item

        def read_partition(r: Reader) -> ProducePartitionResponse:
            if version >= 9:  # flexible: the usual answer has no record errors, no message and no tags
                pos, view = r._pos, r._view
                if r._end - pos >= 33 and view[pos + 30] == 1 and view[pos + 31] == 0 and view[pos + 32] == 0:
                    head = _PRODUCE_PARTITION_V5.unpack_from(view, pos)
                    r._pos = pos + 33
                    return ProducePartitionResponse(*head)
            if version >= 5:
                index, error_code, base_offset, append_time_ms, log_start_offset = r.unpack(_PRODUCE_PARTITION_V5)
            else:
                index, error_code, base_offset, append_time_ms = r.unpack(_PRODUCE_PARTITION_V3)
                log_start_offset = -1
            record_errors: tuple[RecordError, ...] = ()
            error_message = None
            if version >= 8:
                record_errors = r.array(read_record_error, 5)
                error_message = r.nullable_string()
            tags = r.tagged_fields()
            raw_leader = tags.get(0) if version >= 10 else None
            leader = _read_leader_and_epoch(raw_leader) if raw_leader is not None else None
            return ProducePartitionResponse(
                index, error_code, base_offset, append_time_ms, log_start_offset, record_errors, error_message, leader
            )

        def read_topic(r: Reader) -> ProduceTopicResponse:
            item = ProduceTopicResponse(r.string(), r.array(read_partition, 22))
            r.tagged_fields()
            return item

        topics = r.array(read_topic, _NAME_AND_ARRAY_BYTES)
        throttle_time_ms = r.int32()
        tags = r.tagged_fields()
        endpoints: tuple[BrokerEndpoint, ...] = ()
        raw_endpoints = tags.get(0) if version >= 10 else None
        if raw_endpoints is not None:
            t = _tag_reader(raw_endpoints)
            endpoints = t.array(_read_broker, 9)
            t.expect_end()
        return cls(topics, throttle_time_ms, endpoints)


# --- InitProducerId (22) -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InitProducerIdRequest(Request):
    """producer_id/producer_epoch (v3+) let a producer keep its id after INVALID_PRODUCER_EPOCH; -1 for a new one."""

    API_KEY: ClassVar[int] = INIT_PRODUCER_ID
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60000
    producer_id: int = -1
    producer_epoch: int = -1

    def encode_body(self, w: Writer, version: int) -> None:
        w.nullable_string(self.transactional_id)
        w.int32(self.transaction_timeout_ms)
        if version >= 3:
            w.int64(self.producer_id)
            w.int16(self.producer_epoch)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        transactional_id, timeout_ms = r.nullable_string(), r.int32()
        producer_id, producer_epoch = (r.int64(), r.int16()) if version >= 3 else (-1, -1)
        r.tagged_fields()
        return cls(transactional_id, timeout_ms, producer_id, producer_epoch)


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse(Response):
    API_KEY: ClassVar[int] = INIT_PRODUCER_ID
    error_code: int
    producer_id: int = -1
    producer_epoch: int = -1
    throttle_time_ms: int = 0

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        w.int16(self.error_code)
        w.int64(self.producer_id)
        w.int16(self.producer_epoch)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms, error_code, producer_id, producer_epoch = r.int32(), r.int16(), r.int64(), r.int16()
        r.tagged_fields()
        return cls(error_code, producer_id, producer_epoch, throttle_time_ms)


# --- FindCoordinator (10) ------------------------------------------------------------------------------------------

COORDINATOR_GROUP = 0
COORDINATOR_TRANSACTION = 1


@dataclass(frozen=True, slots=True)
class FindCoordinatorRequest(Request):
    """key_type 0 = group, 1 = transaction. Below v4 exactly one key; v4 batches them (KIP-699)."""

    API_KEY: ClassVar[int] = FIND_COORDINATOR
    keys: Sequence[str]
    key_type: int = COORDINATOR_TRANSACTION

    def encode_body(self, w: Writer, version: int) -> None:
        if version < 4:
            if len(self.keys) != 1:
                raise RequestEncodeError(f"FindCoordinator v{version} takes exactly one key, got {len(self.keys)}")
            w.string(self.keys[0])
            w.int8(self.key_type)
        else:
            w.int8(self.key_type)
            w.string_array(self.keys)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        if version < 4:
            key = r.string()
            key_type = r.int8()
            keys: tuple[str, ...] = (key,)
        else:
            key_type = r.int8()
            keys = r.string_array()
        r.tagged_fields()
        return cls(keys, key_type)


@dataclass(frozen=True, slots=True)
class Coordinator:
    """key is None below v4, where the response answers the request's single key."""

    key: str | None
    node_id: int
    host: str
    port: int
    error_code: int = ErrorCode.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class FindCoordinatorResponse(Response):
    API_KEY: ClassVar[int] = FIND_COORDINATOR
    coordinators: tuple[Coordinator, ...]
    throttle_time_ms: int = 0

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        if version < 4:
            if len(self.coordinators) != 1:
                raise RequestEncodeError(f"FindCoordinator v{version} answers exactly one key")
            c = self.coordinators[0]
            w.int16(c.error_code)
            w.nullable_string(c.error_message)
            w.int32(c.node_id)
            w.string(c.host)
            w.int32(c.port)
        else:
            w.array_length(len(self.coordinators))
            for c in self.coordinators:
                w.string(c.key if c.key is not None else "")
                w.int32(c.node_id)
                w.string(c.host)
                w.int32(c.port)
                w.int16(c.error_code)
                w.nullable_string(c.error_message)
                w.tagged_fields()
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32()
        if version < 4:
            error_code, error_message = r.int16(), r.nullable_string()
            coordinators: tuple[Coordinator, ...] = (
                Coordinator(None, r.int32(), r.string(), r.int32(), error_code, error_message),
            )
        else:

            def read_coordinator(r: Reader) -> Coordinator:
                item = Coordinator(r.string(), r.int32(), r.string(), r.int32(), r.int16(), r.nullable_string())
                r.tagged_fields()
                return item

            coordinators = r.array(read_coordinator, 14)
        r.tagged_fields()
        return cls(coordinators, throttle_time_ms)


# --- transactions: AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26), TxnOffsetCommit (28) ------------


@dataclass(frozen=True, slots=True)
class PartitionErrorCode:
    partition_index: int
    error_code: int


@dataclass(frozen=True, slots=True)
class TopicErrorCodes:
    name: str
    partitions: tuple[PartitionErrorCode, ...]


def _read_partition_error(r: Reader) -> PartitionErrorCode:
    item = PartitionErrorCode(r.int32(), r.int16())
    r.tagged_fields()
    return item


def _read_topic_errors(r: Reader) -> TopicErrorCodes:
    item = TopicErrorCodes(r.string(), r.array(_read_partition_error, 6))
    r.tagged_fields()
    return item


def _write_topic_errors(w: Writer, item: TopicErrorCodes) -> None:
    w.string(item.name)
    w.array_length(len(item.partitions))
    for p in item.partitions:
        w.int32(p.partition_index)
        w.int16(p.error_code)
        w.tagged_fields()
    w.tagged_fields()


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest(Request):
    """topics: (topic, partitions) to add to the producer's ongoing transaction (client versions 0-3)."""

    API_KEY: ClassVar[int] = ADD_PARTITIONS_TO_TXN
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: Sequence[tuple[str, Sequence[int]]]

    def encode_body(self, w: Writer, version: int) -> None:
        w.string(self.transactional_id)
        w.int64(self.producer_id)
        w.int16(self.producer_epoch)
        w.array_length(len(self.topics))
        for name, partitions in self.topics:
            w.string(name)
            w.int32_array(partitions)
            w.tagged_fields()
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        transactional_id, producer_id, producer_epoch = r.string(), r.int64(), r.int16()

        def read_topic(r: Reader) -> tuple[str, tuple[int, ...]]:
            item = (r.string(), r.int32_array())
            r.tagged_fields()
            return item

        topics = r.array(read_topic, _NAME_AND_ARRAY_BYTES)
        r.tagged_fields()
        return cls(transactional_id, producer_id, producer_epoch, topics)


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse(Response):
    API_KEY: ClassVar[int] = ADD_PARTITIONS_TO_TXN
    results: tuple[TopicErrorCodes, ...]
    throttle_time_ms: int = 0

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        w.array(self.results, _write_topic_errors)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32()
        results = r.array(_read_topic_errors, _NAME_AND_ARRAY_BYTES)
        r.tagged_fields()
        return cls(results, throttle_time_ms)


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest(Request):
    API_KEY: ClassVar[int] = ADD_OFFSETS_TO_TXN
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str

    def encode_body(self, w: Writer, version: int) -> None:
        w.string(self.transactional_id)
        w.int64(self.producer_id)
        w.int16(self.producer_epoch)
        w.string(self.group_id)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        item = cls(r.string(), r.int64(), r.int16(), r.string())
        r.tagged_fields()
        return item


@dataclass(frozen=True, slots=True)
class _ThrottleAndErrorResponse(Response):
    """A response that is only throttle_time_ms and error_code (AddOffsetsToTxn, EndTxn)."""

    error_code: int
    throttle_time_ms: int = 0

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        w.int16(self.error_code)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms, error_code = r.int32(), r.int16()
        r.tagged_fields()
        return cls(error_code, throttle_time_ms)


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnResponse(_ThrottleAndErrorResponse):
    API_KEY: ClassVar[int] = ADD_OFFSETS_TO_TXN


@dataclass(frozen=True, slots=True)
class EndTxnRequest(Request):
    """committed True commits the transaction, False aborts it."""

    API_KEY: ClassVar[int] = END_TXN
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool

    def encode_body(self, w: Writer, version: int) -> None:
        w.string(self.transactional_id)
        w.int64(self.producer_id)
        w.int16(self.producer_epoch)
        w.boolean(self.committed)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        item = cls(r.string(), r.int64(), r.int16(), r.boolean())
        r.tagged_fields()
        return item


@dataclass(frozen=True, slots=True)
class EndTxnResponse(_ThrottleAndErrorResponse):
    API_KEY: ClassVar[int] = END_TXN


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1  # v2+
    committed_metadata: str | None = None


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest(Request):
    """topics: (topic, partitions). generation_id/member_id/group_instance_id go out from v3 (KIP-447)."""

    API_KEY: ClassVar[int] = TXN_OFFSET_COMMIT
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    topics: Sequence[tuple[str, Sequence[TxnOffsetCommitPartition]]]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None

    def encode_body(self, w: Writer, version: int) -> None:
        w.string(self.transactional_id)
        w.string(self.group_id)
        w.int64(self.producer_id)
        w.int16(self.producer_epoch)
        if version >= 3:
            w.int32(self.generation_id)
            w.string(self.member_id)
            w.nullable_string(self.group_instance_id)
        w.array_length(len(self.topics))
        for name, partitions in self.topics:
            w.string(name)
            w.array_length(len(partitions))
            for p in partitions:
                w.int32(p.partition_index)
                w.int64(p.committed_offset)
                if version >= 2:
                    w.int32(p.committed_leader_epoch)
                w.nullable_string(p.committed_metadata)
                w.tagged_fields()
            w.tagged_fields()
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        transactional_id, group_id, producer_id, producer_epoch = r.string(), r.string(), r.int64(), r.int16()
        generation_id, member_id, instance_id = -1, "", None
        if version >= 3:
            generation_id, member_id, instance_id = r.int32(), r.string(), r.nullable_string()

        def read_partition(r: Reader) -> TxnOffsetCommitPartition:
            index, offset = r.int32(), r.int64()
            leader_epoch = r.int32() if version >= 2 else -1
            item = TxnOffsetCommitPartition(index, offset, leader_epoch, r.nullable_string())
            r.tagged_fields()
            return item

        def read_topic(r: Reader) -> tuple[str, tuple[TxnOffsetCommitPartition, ...]]:
            item = (r.string(), r.array(read_partition, 13))
            r.tagged_fields()
            return item

        topics = r.array(read_topic, _NAME_AND_ARRAY_BYTES)
        r.tagged_fields()
        return cls(
            transactional_id, group_id, producer_id, producer_epoch, topics, generation_id, member_id, instance_id
        )


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponse(Response):
    API_KEY: ClassVar[int] = TXN_OFFSET_COMMIT
    topics: tuple[TopicErrorCodes, ...]
    throttle_time_ms: int = 0

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        w.array(self.topics, _write_topic_errors)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32()
        topics = r.array(_read_topic_errors, _NAME_AND_ARRAY_BYTES)
        r.tagged_fields()
        return cls(topics, throttle_time_ms)


# --- SASL: SaslHandshake (17), SaslAuthenticate (36) ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SaslHandshakeRequest(Request):
    """v0: raw SASL tokens follow on the socket; v1: tokens travel in SaslAuthenticate."""

    API_KEY: ClassVar[int] = SASL_HANDSHAKE
    mechanism: str

    def encode_body(self, w: Writer, version: int) -> None:
        w.string(self.mechanism)

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        return cls(r.string())


@dataclass(frozen=True, slots=True)
class SaslHandshakeResponse(Response):
    API_KEY: ClassVar[int] = SASL_HANDSHAKE
    error_code: int
    mechanisms: tuple[str, ...] = ()

    def encode_body(self, w: Writer, version: int) -> None:
        w.int16(self.error_code)
        w.string_array(self.mechanisms)

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        return cls(r.int16(), r.string_array())


@dataclass(frozen=True, slots=True)
class SaslAuthenticateRequest(Request):
    API_KEY: ClassVar[int] = SASL_AUTHENTICATE
    auth_bytes: bytes = field(repr=False)  # PLAIN passwords, bearer tokens: never in a repr

    def encode_body(self, w: Writer, version: int) -> None:
        w.bytes_(self.auth_bytes)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        auth_bytes = bytes(r.bytes_view())
        r.tagged_fields()
        return cls(auth_bytes)


@dataclass(frozen=True, slots=True)
class SaslAuthenticateResponse(Response):
    API_KEY: ClassVar[int] = SASL_AUTHENTICATE
    error_code: int
    error_message: str | None = None
    auth_bytes: bytes = b""
    session_lifetime_ms: int = 0  # v1+; 0 = no re-authentication required

    def encode_body(self, w: Writer, version: int) -> None:
        w.int16(self.error_code)
        w.nullable_string(self.error_message)
        w.bytes_(self.auth_bytes)
        if version >= 1:
            w.int64(self.session_lifetime_ms)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        error_code, error_message, auth_bytes = r.int16(), r.nullable_string(), bytes(r.bytes_view())
        session_lifetime_ms = r.int64() if version >= 1 else 0
        r.tagged_fields()
        return cls(error_code, error_message, auth_bytes, session_lifetime_ms)


# --- CreateTopics (19) ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreatableTopic:
    """num_partitions/replication_factor -1 take the broker's defaults (v4+); assignments: (partition, broker ids)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Sequence[tuple[int, Sequence[int]]] = ()
    configs: Sequence[tuple[str, str | None]] = ()


@dataclass(frozen=True, slots=True)
class CreateTopicsRequest(Request):
    API_KEY: ClassVar[int] = CREATE_TOPICS
    topics: Sequence[CreatableTopic]
    timeout_ms: int = 60000
    validate_only: bool = False

    def encode_body(self, w: Writer, version: int) -> None:
        w.array_length(len(self.topics))
        for topic in self.topics:
            w.string(topic.name)
            w.int32(topic.num_partitions)
            w.int16(topic.replication_factor)
            w.array_length(len(topic.assignments))
            for partition, broker_ids in topic.assignments:
                w.int32(partition)
                w.int32_array(broker_ids)
                w.tagged_fields()
            w.array_length(len(topic.configs))
            for name, value in topic.configs:
                w.string(name)
                w.nullable_string(value)
                w.tagged_fields()
            w.tagged_fields()
        w.int32(self.timeout_ms)
        w.boolean(self.validate_only)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        def read_assignment(r: Reader) -> tuple[int, tuple[int, ...]]:
            item = (r.int32(), r.int32_array())
            r.tagged_fields()
            return item

        def read_config(r: Reader) -> tuple[str, str | None]:
            item = (r.string(), r.nullable_string())
            r.tagged_fields()
            return item

        def read_topic(r: Reader) -> CreatableTopic:
            name, num_partitions, replication_factor = r.string(), r.int32(), r.int16()
            item = CreatableTopic(
                name, num_partitions, replication_factor, r.array(read_assignment, 5), r.array(read_config, 3)
            )
            r.tagged_fields()
            return item

        topics = r.array(read_topic, 10)
        timeout_ms, validate_only = r.int32(), r.boolean()
        r.tagged_fields()
        return cls(topics, timeout_ms, validate_only)


@dataclass(frozen=True, slots=True)
class CreatableTopicConfig:
    name: str
    value: str | None
    read_only: bool = False
    config_source: int = -1
    is_sensitive: bool = False


@dataclass(frozen=True, slots=True)
class CreatableTopicResult:
    name: str
    error_code: int
    error_message: str | None = None
    topic_id: UUID = ZERO_UUID  # v7+
    num_partitions: int = -1  # v5+
    replication_factor: int = -1  # v5+
    configs: tuple[CreatableTopicConfig, ...] | None = None  # v5+
    topic_config_error_code: int = ErrorCode.NONE  # v5+ tagged field 0


def _read_topic_config(r: Reader) -> CreatableTopicConfig:
    item = CreatableTopicConfig(r.string(), r.nullable_string(), r.boolean(), r.int8(), r.boolean())
    r.tagged_fields()
    return item


def _write_topic_config(w: Writer, item: CreatableTopicConfig) -> None:
    w.string(item.name)
    w.nullable_string(item.value)
    w.boolean(item.read_only)
    w.int8(item.config_source)
    w.boolean(item.is_sensitive)
    w.tagged_fields()


@dataclass(frozen=True, slots=True)
class CreateTopicsResponse(Response):
    API_KEY: ClassVar[int] = CREATE_TOPICS
    topics: tuple[CreatableTopicResult, ...]
    throttle_time_ms: int = 0

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        w.array_length(len(self.topics))
        for t in self.topics:
            w.string(t.name)
            if version >= 7:
                w.uuid(t.topic_id)
            w.int16(t.error_code)
            w.nullable_string(t.error_message)
            if version >= 5:
                w.int32(t.num_partitions)
                w.int16(t.replication_factor)
                w.nullable_array(t.configs, _write_topic_config)
                code = t.topic_config_error_code
                w.tagged_fields({0: _I16.pack(code)} if code else None)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32()

        def read_result(r: Reader) -> CreatableTopicResult:
            name = r.string()
            topic_id = r.uuid() if version >= 7 else ZERO_UUID
            error_code, error_message = r.int16(), r.nullable_string()
            if version < 5:
                return CreatableTopicResult(name, error_code, error_message, topic_id)
            num_partitions, replication_factor = r.int32(), r.int16()
            configs = r.nullable_array(_read_topic_config, 6)
            raw_code = r.tagged_fields().get(0)
            config_error_code: int = ErrorCode.NONE
            if raw_code is not None:
                t = _tag_reader(raw_code)
                config_error_code = t.int16()
                t.expect_end()
            return CreatableTopicResult(
                name, error_code, error_message, topic_id, num_partitions, replication_factor, configs,
                config_error_code,
            )

        topics = r.array(read_result, 5)
        r.tagged_fields()
        return cls(topics, throttle_time_ms)


# --- Fetch (1) and ListOffsets (2): the minimum a test verifier needs to read records back ------------------------


@dataclass(frozen=True, slots=True)
class FetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int = 1 << 20
    current_leader_epoch: int = -1  # v9+
    log_start_offset: int = -1  # v5+
    last_fetched_epoch: int = -1  # v12+


@dataclass(frozen=True, slots=True)
class FetchRequest(Request):
    """A full (sessionless) fetch by topic name. isolation_level 0 = read_uncommitted, 1 = read_committed."""

    API_KEY: ClassVar[int] = FETCH
    topics: Sequence[tuple[str, Sequence[FetchPartition]]]
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 0x7FFFFFFF
    isolation_level: int = 0
    session_id: int = 0  # v7+
    session_epoch: int = -1  # v7+
    forgotten_topics: Sequence[tuple[str, Sequence[int]]] = ()  # v7+
    rack_id: str = ""  # v11+
    replica_id: int = -1

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.replica_id)
        w.int32(self.max_wait_ms)
        w.int32(self.min_bytes)
        w.int32(self.max_bytes)
        w.int8(self.isolation_level)
        if version >= 7:
            w.int32(self.session_id)
            w.int32(self.session_epoch)
        w.array_length(len(self.topics))
        for name, partitions in self.topics:
            w.string(name)
            w.array_length(len(partitions))
            for p in partitions:
                w.int32(p.partition)
                if version >= 9:
                    w.int32(p.current_leader_epoch)
                w.int64(p.fetch_offset)
                if version >= 12:
                    w.int32(p.last_fetched_epoch)
                if version >= 5:
                    w.int64(p.log_start_offset)
                w.int32(p.partition_max_bytes)
                w.tagged_fields()
            w.tagged_fields()
        if version >= 7:
            w.array_length(len(self.forgotten_topics))
            for name, forgotten in self.forgotten_topics:
                w.string(name)
                w.int32_array(forgotten)
                w.tagged_fields()
        if version >= 11:
            w.string(self.rack_id)
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level = (
            r.int32(), r.int32(), r.int32(), r.int32(), r.int8()
        )
        session_id, session_epoch = (r.int32(), r.int32()) if version >= 7 else (0, -1)

        def read_partition(r: Reader) -> FetchPartition:
            partition = r.int32()
            leader_epoch = r.int32() if version >= 9 else -1
            fetch_offset = r.int64()
            last_epoch = r.int32() if version >= 12 else -1
            log_start_offset = r.int64() if version >= 5 else -1
            max_bytes = r.int32()
            item = FetchPartition(partition, fetch_offset, max_bytes, leader_epoch, log_start_offset, last_epoch)
            r.tagged_fields()
            return item

        def read_topic(r: Reader) -> tuple[str, tuple[FetchPartition, ...]]:
            item = (r.string(), r.array(read_partition, 16))
            r.tagged_fields()
            return item

        def read_forgotten(r: Reader) -> tuple[str, tuple[int, ...]]:
            item = (r.string(), r.int32_array())
            r.tagged_fields()
            return item

        topics = r.array(read_topic, _NAME_AND_ARRAY_BYTES)
        forgotten: tuple[tuple[str, tuple[int, ...]], ...] = ()
        if version >= 7:
            forgotten = r.array(read_forgotten, _NAME_AND_ARRAY_BYTES)
        rack_id = r.string() if version >= 11 else ""
        r.tagged_fields()
        return cls(
            topics, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch, forgotten, rack_id,
            replica_id,
        )


@dataclass(frozen=True, slots=True)
class FetchPartitionResponse:
    """records: the raw record batches (possibly ending in a partial batch), None if the broker sent null."""

    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int = -1
    log_start_offset: int = -1  # v5+
    aborted_transactions: tuple[tuple[int, int], ...] | None = None  # (producer id, first offset)
    preferred_read_replica: int = -1  # v11+
    records: bytes | None = None


@dataclass(frozen=True, slots=True)
class FetchTopicResponse:
    topic: str
    partitions: tuple[FetchPartitionResponse, ...]


@dataclass(frozen=True, slots=True)
class FetchResponse(Response):
    API_KEY: ClassVar[int] = FETCH
    topics: tuple[FetchTopicResponse, ...]
    throttle_time_ms: int = 0
    error_code: int = ErrorCode.NONE  # v7+
    session_id: int = 0  # v7+

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.throttle_time_ms)
        if version >= 7:
            w.int16(self.error_code)
            w.int32(self.session_id)
        w.array_length(len(self.topics))
        for topic in self.topics:
            w.string(topic.topic)
            w.array_length(len(topic.partitions))
            for p in topic.partitions:
                w.int32(p.partition_index)
                w.int16(p.error_code)
                w.int64(p.high_watermark)
                w.int64(p.last_stable_offset)
                if version >= 5:
                    w.int64(p.log_start_offset)
                aborted = p.aborted_transactions
                w.nullable_array_length(None if aborted is None else len(aborted))
                for producer_id, first_offset in aborted or ():
                    w.int64(producer_id)
                    w.int64(first_offset)
                    w.tagged_fields()
                if version >= 11:
                    w.int32(p.preferred_read_replica)
                w.nullable_bytes(p.records)
                w.tagged_fields()
            w.tagged_fields()
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32()
        error_code, session_id = (r.int16(), r.int32()) if version >= 7 else (ErrorCode.NONE, 0)

        def read_aborted(r: Reader) -> tuple[int, int]:
            item = (r.int64(), r.int64())
            r.tagged_fields()
            return item

        def read_partition(r: Reader) -> FetchPartitionResponse:
            index, error, high_watermark, last_stable_offset = r.int32(), r.int16(), r.int64(), r.int64()
            log_start_offset = r.int64() if version >= 5 else -1
            aborted = r.nullable_array(read_aborted, 16)
            preferred_read_replica = r.int32() if version >= 11 else -1
            raw = r.nullable_bytes_view()
            r.tagged_fields()
            return FetchPartitionResponse(
                index, error, high_watermark, last_stable_offset, log_start_offset, aborted, preferred_read_replica,
                None if raw is None else bytes(raw),
            )

        def read_topic(r: Reader) -> FetchTopicResponse:
            item = FetchTopicResponse(r.string(), r.array(read_partition, 30))
            r.tagged_fields()
            return item

        topics = r.array(read_topic, _NAME_AND_ARRAY_BYTES)
        r.tagged_fields()
        return cls(topics, throttle_time_ms, error_code, session_id)


LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


@dataclass(frozen=True, slots=True)
class ListOffsetsPartition:
    """timestamp: -1 latest, -2 earliest, else the first offset at or after that time (ms)."""

    partition_index: int
    timestamp: int = LATEST_TIMESTAMP
    current_leader_epoch: int = -1  # v4+


@dataclass(frozen=True, slots=True)
class ListOffsetsRequest(Request):
    API_KEY: ClassVar[int] = LIST_OFFSETS
    topics: Sequence[tuple[str, Sequence[ListOffsetsPartition]]]
    isolation_level: int = 0  # v2+
    replica_id: int = -1

    def encode_body(self, w: Writer, version: int) -> None:
        w.int32(self.replica_id)
        if version >= 2:
            w.int8(self.isolation_level)
        w.array_length(len(self.topics))
        for name, partitions in self.topics:
            w.string(name)
            w.array_length(len(partitions))
            for p in partitions:
                w.int32(p.partition_index)
                if version >= 4:
                    w.int32(p.current_leader_epoch)
                w.int64(p.timestamp)
                w.tagged_fields()
            w.tagged_fields()
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        replica_id = r.int32()
        isolation_level = r.int8() if version >= 2 else 0

        def read_partition(r: Reader) -> ListOffsetsPartition:
            index = r.int32()
            leader_epoch = r.int32() if version >= 4 else -1
            item = ListOffsetsPartition(index, r.int64(), leader_epoch)
            r.tagged_fields()
            return item

        def read_topic(r: Reader) -> tuple[str, tuple[ListOffsetsPartition, ...]]:
            item = (r.string(), r.array(read_partition, 12))
            r.tagged_fields()
            return item

        topics = r.array(read_topic, _NAME_AND_ARRAY_BYTES)
        r.tagged_fields()
        return cls(topics, isolation_level, replica_id)


@dataclass(frozen=True, slots=True)
class ListOffsetsPartitionResponse:
    partition_index: int
    error_code: int
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1  # v4+


@dataclass(frozen=True, slots=True)
class ListOffsetsTopicResponse:
    name: str
    partitions: tuple[ListOffsetsPartitionResponse, ...]


@dataclass(frozen=True, slots=True)
class ListOffsetsResponse(Response):
    API_KEY: ClassVar[int] = LIST_OFFSETS
    topics: tuple[ListOffsetsTopicResponse, ...]
    throttle_time_ms: int = 0  # v2+

    def encode_body(self, w: Writer, version: int) -> None:
        if version >= 2:
            w.int32(self.throttle_time_ms)
        w.array_length(len(self.topics))
        for topic in self.topics:
            w.string(topic.name)
            w.array_length(len(topic.partitions))
            for p in topic.partitions:
                w.int32(p.partition_index)
                w.int16(p.error_code)
                w.int64(p.timestamp)
                w.int64(p.offset)
                if version >= 4:
                    w.int32(p.leader_epoch)
                w.tagged_fields()
            w.tagged_fields()
        w.tagged_fields()

    @classmethod
    def decode_body(cls, r: Reader, version: int) -> Self:
        throttle_time_ms = r.int32() if version >= 2 else 0

        def read_partition(r: Reader) -> ListOffsetsPartitionResponse:
            index, error_code, timestamp, offset = r.int32(), r.int16(), r.int64(), r.int64()
            leader_epoch = r.int32() if version >= 4 else -1
            r.tagged_fields()
            return ListOffsetsPartitionResponse(index, error_code, timestamp, offset, leader_epoch)

        def read_topic(r: Reader) -> ListOffsetsTopicResponse:
            item = ListOffsetsTopicResponse(r.string(), r.array(read_partition, 22))
            r.tagged_fields()
            return item

        topics = r.array(read_topic, _NAME_AND_ARRAY_BYTES)
        r.tagged_fields()
        return cls(topics, throttle_time_ms)


# --- frames --------------------------------------------------------------------------------------------------------

REQUEST_TYPES: dict[int, type[Request]] = {
    cls.API_KEY: cls
    for cls in (
        ProduceRequest, FetchRequest, ListOffsetsRequest, MetadataRequest, FindCoordinatorRequest,
        SaslHandshakeRequest, ApiVersionsRequest, CreateTopicsRequest, InitProducerIdRequest,
        AddPartitionsToTxnRequest, AddOffsetsToTxnRequest, EndTxnRequest, TxnOffsetCommitRequest,
        SaslAuthenticateRequest,
    )
}
RESPONSE_TYPES: dict[int, type[Response]] = {
    cls.API_KEY: cls
    for cls in (
        ProduceResponse, FetchResponse, ListOffsetsResponse, MetadataResponse, FindCoordinatorResponse,
        SaslHandshakeResponse, ApiVersionsResponse, CreateTopicsResponse, InitProducerIdResponse,
        AddPartitionsToTxnResponse, AddOffsetsToTxnResponse, EndTxnResponse, TxnOffsetCommitResponse,
        SaslAuthenticateResponse,
    )
}


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


def _encode_failed(what: str, e: Exception) -> RequestEncodeError:
    return RequestEncodeError(f"cannot encode {what}: {e}")


def _uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_PRODUCE_HEAD = struct.Struct(">hhi")
_ACKS_TIMEOUT = struct.Struct(">hi")


def _encode_produce(request: ProduceRequest, version: int, correlation_id: int,
                    client_id: str | None) -> list[bytes | memoryview]:
    """ProduceRequest.encode_body through encode_request in fewer steps: the same bytes, the batches attached."""
    flexible = version >= 9
    head = bytearray(4)
    head += _PRODUCE_HEAD.pack(PRODUCE, version, correlation_id)
    if client_id is None:
        head += b"\xff\xff"
    else:
        raw = client_id.encode()
        if len(raw) > 0x7FFF:
            raise RequestEncodeError(f"string of {len(raw)} bytes exceeds the 32767-byte limit")
        head += _I16.pack(len(raw)) + raw
    if flexible:
        head.append(0)
    transactional_id = request.transactional_id
    if transactional_id is None:
        head += b"\x00" if flexible else b"\xff\xff"
    else:
        raw = transactional_id.encode()
        if len(raw) > 0x7FFF:
            raise RequestEncodeError(f"string of {len(raw)} bytes exceeds the 32767-byte limit")
        head += (_uvarint_bytes(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw
    head += _ACKS_TIMEOUT.pack(request.acks, request.timeout_ms)
    head += _uvarint_bytes(len(request.topics) + 1) if flexible else _I32.pack(len(request.topics))
    chunks: list[bytes | memoryview] = []
    size_bytes = 0
    for name, partitions in request.topics:
        raw = name.encode()
        if len(raw) > 0x7FFF:
            raise RequestEncodeError(f"string of {len(raw)} bytes exceeds the 32767-byte limit")
        head += (_uvarint_bytes(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw
        head += _uvarint_bytes(len(partitions) + 1) if flexible else _I32.pack(len(partitions))
        for index, records in partitions:
            head += _I32.pack(index)
            if records is None:
                head += b"\x00" if flexible else b"\xff\xff\xff\xff"
            else:
                view = memoryview(records).cast("B")
                head += _uvarint_bytes(len(view) + 1) if flexible else _I32.pack(len(view))
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


def encode_request(
    request: Request | generic.Request, version: int, correlation_id: int, client_id: str | None
) -> list[bytes | memoryview]:
    """The size-prefixed request frame as buffers for socket.sendmsg; record batches are the caller's views.
    A `cykafka.protocol.Request` (a dict body) goes through the generic codec."""
    if isinstance(request, generic.Request):
        return [generic.encode_request(request.api_key, version, correlation_id, client_id, request.body)]
    api_key = request.API_KEY
    _check_version(api_key, version)
    if type(request) is ProduceRequest:
        try:
            return _encode_produce(request, version, correlation_id, client_id)
        except (struct.error, OverflowError, UnicodeError, TypeError) as e:
            raise _encode_failed(f"{api_name(api_key)} v{version} request", e) from e
    flexible = is_flexible(api_key, version)
    w = Writer(flexible, reserve_bytes=4)
    try:
        w.int16(api_key)
        w.int16(version)
        w.int32(correlation_id)
        w.legacy_nullable_string(client_id)
        w.tagged_fields()
        request.encode_body(w, version)
    except (struct.error, OverflowError, UnicodeError, TypeError) as e:
        raise _encode_failed(f"{api_name(api_key)} v{version} request", e) from e
    return w.framed()


def decode_response(api_key: int, version: int, frame: Buffer,
                    generic_body: bool = False) -> tuple[int, Response | dict[str, Any]]:
    """(correlation_id, response) from the bytes after the size prefix; ProtocolError if truncated or malformed.
    generic_body (or an API only the generic codec describes): the body as the generic codec's dict."""
    if generic_body or api_key not in RESPONSE_TYPES:
        return generic.decode_response(api_key, version, memoryview(frame))
    _check_version(api_key, version)
    r = Reader(frame, is_flexible(api_key, version))
    try:
        correlation_id = r.int32()
        if response_header_version(api_key, version) >= 1:
            r.tagged_fields()
        if api_key == API_VERSIONS and version > 0 and r.peek_int16() == UNSUPPORTED_VERSION_CODE:
            # A broker that does not know our ApiVersions version answers in v0 (KIP-511).
            version, r.flexible = 0, False
        response = RESPONSE_TYPES[api_key].decode_body(r, version)
        # trailing bytes are ignored, as Java's client does (librdkafka's mock broker sends one after Metadata v12)
    except ProtocolError as e:
        raise ProtocolError(f"{api_name(api_key)} v{version} response: {e}") from e
    return correlation_id, response


def decode_request(frame: Buffer) -> tuple[RequestHeader, Request]:
    """A request frame (after the size prefix) as a broker sees it: for fakes and tests."""
    r = Reader(frame)
    try:
        api_key, version, correlation_id = r.int16(), r.int16(), r.int32()
        low, high = SUPPORTED_VERSIONS.get(api_key, (0, -1))
        if not low <= version <= high:
            raise ProtocolError(f"unsupported request {api_name(api_key)} v{version}")
        client_id = r.legacy_nullable_string()
        r.flexible = is_flexible(api_key, version)
        r.tagged_fields()
        request = REQUEST_TYPES[api_key].decode_body(r, version)
        r.expect_end()
    except ProtocolError as e:
        raise ProtocolError(f"request: {e}") from e
    return RequestHeader(api_key, version, correlation_id, client_id), request


def encode_response(response: Response, version: int, correlation_id: int) -> list[bytes | memoryview]:
    """The size-prefixed response frame, as a broker would send it: for fakes and tests."""
    api_key = response.API_KEY
    _check_version(api_key, version)
    w = Writer(is_flexible(api_key, version), reserve_bytes=4)
    try:
        w.int32(correlation_id)
        if response_header_version(api_key, version) >= 1:
            w.tagged_fields()
        response.encode_body(w, version)
    except (struct.error, OverflowError, UnicodeError, TypeError) as e:
        raise _encode_failed(f"{api_name(api_key)} v{version} response", e) from e
    return w.framed()


__all__ = [
    "API_NAMES",
    "ERRORS",
    "ERROR_CODES",
    "FLEXIBLE_FROM",
    "REQUEST_TYPES",
    "RESPONSE_TYPES",
    "SUPPORTED_VERSIONS",
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "ApiVersionRange",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "BrokerEndpoint",
    "Coordinator",
    "CreatableTopic",
    "CreatableTopicConfig",
    "CreatableTopicResult",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "ErrorInfo",
    "FetchPartition",
    "FetchPartitionResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchTopicResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "LeaderIdAndEpoch",
    "ListOffsetsPartition",
    "ListOffsetsPartitionResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "ListOffsetsTopicResponse",
    "Message",
    "MetadataPartition",
    "MetadataRequest",
    "MetadataResponse",
    "MetadataTopic",
    "PartitionErrorCode",
    "ProducePartitionResponse",
    "ProduceRequest",
    "ProduceResponse",
    "ProduceTopicResponse",
    "Reader",
    "RecordError",
    "Request",
    "RequestHeader",
    "Response",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
    "TopicErrorCodes",
    "TxnOffsetCommitPartition",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "Writer",
    "api_name",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_for",
    "error_info",
    "is_flexible",
    "pick_version",
    "request_header_version",
    "response_header_version",
    "to_cluster_snapshot",
]
