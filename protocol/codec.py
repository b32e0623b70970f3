"""Encoders and decoders made from the descriptions: one plan per (API, version, request|response), built on first use.

A plan is a list of closures, one per field present in the version: `put(out, value)` appends to a bytearray,
`get(reader)` returns a value. Structs (and whole bodies) end with a tagged-field section when the version is flexible.
Every read is bounds-checked and every length is checked against the bytes left before anything is allocated, so
truncated or malformed input raises ProtocolError and nothing else; values that do not fit their wire type raise
RequestEncodeError, and so does a request body with a key the description lacks or a field set at a version that
does not carry it (schema.py: `ignorable`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any
from uuid import UUID

from cykafka.errors import ProtocolError, RequestEncodeError
from cykafka.protocol.schema import Api, Field

if TYPE_CHECKING:
    from typing_extensions import Buffer

Put = Callable[[bytearray, Any], None]
Get = Callable[["Reader"], Any]

_FIXED = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
          "int32": struct.Struct(">i"), "int64": struct.Struct(">q"), "float64": struct.Struct(">d")}
_I16, _I32 = _FIXED["int16"], _FIXED["int32"]
_MAX_STRING_BYTES = 0x7FFF
_DECODE_FAULTS = (struct.error, UnicodeDecodeError, ValueError, IndexError, OverflowError)
_ENCODE_FAULTS = (struct.error, UnicodeError, TypeError, ValueError, AttributeError, OverflowError)


class Reader:
    """A cursor over a buffer; every read past the end raises ProtocolError."""

    __slots__ = ("end", "pos", "view")

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self.view = memoryview(data).cast("B")
        self.pos = 0
        self.end = len(self.view)

    def take(self, size_bytes: int) -> memoryview:
        start = self.pos
        if size_bytes < 0 or size_bytes > self.end - start:
            raise ProtocolError(f"truncated: need {size_bytes} bytes at offset {start}, {self.end - start} left")
        self.pos = start + size_bytes
        return self.view[start:self.pos]

    def fixed(self, layout: struct.Struct) -> Any:
        return layout.unpack(self.take(layout.size))[0]

    def uvarint(self, max_bytes: int = 5) -> int:
        value = shift = 0
        for _ in range(max_bytes):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                if value >= 1 << (32 if max_bytes == 5 else 64):
                    raise ProtocolError(f"varint before offset {self.pos} overflows")
                return value
            shift += 7
        raise ProtocolError(f"varint before offset {self.pos} longer than {max_bytes} bytes")

    def length(self, flexible: bool, int16_prefix: bool = False, item_bytes: int = 1) -> int:
        """A length prefix: -1 for null; checked against the bytes left at `item_bytes` per item."""
        if flexible:
            length = self.uvarint() - 1
        else:
            length = self.fixed(_I16 if int16_prefix else _I32)
        if length < -1 or length * item_bytes > self.end - self.pos:
            raise ProtocolError(f"length {length} before offset {self.pos} does not fit the "
                                f"{self.end - self.pos} bytes left")
        return length


def put_uvarint(out: bytearray, value: int, max_value: int = 0xFFFFFFFF) -> None:
    if not 0 <= value <= max_value:
        raise RequestEncodeError(f"varint value {value} out of range 0..{max_value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def put_length(out: bytearray, length: int, flexible: bool, int16_prefix: bool = False) -> None:
    if not flexible:
        out += (_I16 if int16_prefix else _I32).pack(length)
    elif -1 <= length < 0x7F:
        out.append(length + 1)  # a one-byte varint: the usual
    else:
        put_uvarint(out, length + 1)


def put_string(out: bytearray, text: str, flexible: bool) -> None:
    """A string with its length (compact, or int16); RequestEncodeError past 32767 bytes."""
    raw = text.encode()
    if len(raw) > _MAX_STRING_BYTES:
        raise RequestEncodeError(f"string of {len(raw)} bytes exceeds the 32767-byte limit")
    put_length(out, len(raw), flexible, int16_prefix=True)
    out += raw


# --- for the hand-written hot paths (produce.py, fetch.py): reads in place, no Reader ---------------------------------


def read_length(data: Buffer, pos: int, flexible: bool, int16_prefix: bool = False) -> tuple[int, int]:
    """(length, position after it): compact (unsigned varint - 1) or int16/int32; -1 is null, -2 an overlong varint
    (never a usual answer). struct.error / IndexError past the end."""
    if not flexible:
        layout = _I16 if int16_prefix else _I32
        return layout.unpack_from(data, pos)[0], pos + layout.size
    value = shift = 0
    for _ in range(5):
        byte = data[pos]  # type: ignore[index]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value - 1, pos
        shift += 7
    return -2, pos


def read_topic_head(data: Buffer, pos: int, flexible: bool) -> tuple[str, int, int] | None:
    """A topic's entry in an answer, up to its partitions: (name, partition count, position after), or None where
    the usual answer has no null (a null name or array, a name past the end, an overlong varint)."""
    name_bytes, pos = read_length(data, pos, flexible, int16_prefix=True)
    if name_bytes < 0 or pos + name_bytes > len(data):  # type: ignore[arg-type]
        return None
    name = str(data[pos:pos + name_bytes], "utf-8")  # type: ignore[index]
    count, pos = read_length(data, pos + name_bytes, flexible)
    return None if count < 0 else (name, count, pos)


# --- primitives: (put, get, minimum wire bytes) ---------------------------------------------------------------------


def _primitive(type_: str, flexible: bool) -> tuple[Put, Get, int]:
    if type_ in _FIXED:
        layout = _FIXED[type_]

        def put_fixed(out: bytearray, v: Any) -> None:
            if type(v) is bool or (type_ != "float64" and not isinstance(v, int)):
                raise TypeError(f"{type_} takes an int, got {type(v).__name__}")
            out += layout.pack(v)

        return put_fixed, lambda r: r.fixed(layout), layout.size
    if type_ == "bool":
        def put_bool(out: bytearray, v: Any) -> None:
            out.append(1 if v else 0)

        return put_bool, lambda r: r.take(1)[0] != 0, 1
    if type_ in ("varint", "varlong"):
        bits = 32 if type_ == "varint" else 64

        def put_varint(out: bytearray, v: int) -> None:
            if not -(1 << (bits - 1)) <= v < 1 << (bits - 1):
                raise RequestEncodeError(f"{type_} value {v} out of int{bits} range")
            put_uvarint(out, (v << 1) ^ (v >> (bits - 1)), (1 << bits) - 1)

        def get_varint(r: Reader) -> int:
            n = r.uvarint(5 if bits == 32 else 10)
            return (n >> 1) ^ -(n & 1)

        return put_varint, get_varint, 1
    if type_ == "uuid":
        def put_uuid(out: bytearray, v: UUID) -> None:
            out += v.bytes

        return put_uuid, lambda r: UUID(bytes=bytes(r.take(16))), 16
    if type_ == "string":
        def put_text(out: bytearray, v: str) -> None:
            put_string(out, v, flexible)

        def get_string(r: Reader) -> str:
            length = r.length(flexible, int16_prefix=True)
            if length < 0:
                raise ProtocolError(f"null string before offset {r.pos} where a string is required")
            return str(r.take(length), "utf-8")

        return put_text, get_string, 1 if flexible else 2
    # bytes, records
    def put_bytes(out: bytearray, v: Any) -> None:
        view = memoryview(v).cast("B")
        put_length(out, len(view), flexible)
        out += view

    def get_bytes(r: Reader) -> bytes:
        length = r.length(flexible)
        if length < 0:
            raise ProtocolError(f"null bytes before offset {r.pos} where bytes are required")
        return bytes(r.take(length))

    return put_bytes, get_bytes, 1 if flexible else 4


# --- fields and structs ---------------------------------------------------------------------------------------------


def _nullable(put: Put, get: Get, flexible: bool, int16_prefix: bool) -> tuple[Put, Get]:
    """Wraps a length-prefixed codec so None goes out as length -1 and length -1 comes back as None."""
    def put_nullable(out: bytearray, v: Any) -> None:
        if v is None:
            put_length(out, -1, flexible, int16_prefix)
        else:
            put(out, v)

    def get_nullable(r: Reader) -> Any:
        pos = r.pos
        if flexible:
            if r.uvarint() - 1 == -1:
                return None
        elif r.fixed(_I16 if int16_prefix else _I32) == -1:
            return None
        r.pos = pos
        return get(r)

    return put_nullable, get_nullable


def _field(f: Field, version: int, flexible: bool, check: bool, path: str) -> tuple[Put, Get, int]:
    """Codec of one field's value at this version (arrays and structs included), and its minimum wire size."""
    if f.type == "{}":
        put, get, size_bytes = _struct(f.fields, version, flexible, check, f"{path}{f.name}.")
    elif f.type.startswith("[]"):
        if f.fields:
            put_item, get_item, item_bytes = _struct(f.fields, version, flexible, check, f"{path}{f.name}[].")
        else:
            put_item, get_item, item_bytes = _primitive(f.item_type, flexible)
        item_bytes = max(item_bytes, 1)

        def put_array(out: bytearray, v: Any) -> None:
            put_length(out, len(v), flexible)
            for item in v:
                put_item(out, item)

        def get_array(r: Reader) -> list[Any]:
            length = r.length(flexible, item_bytes=item_bytes)
            if length < 0:
                raise ProtocolError(f"null array before offset {r.pos} where an array is required")
            return [get_item(r) for _ in range(length)]

        put, get, size_bytes = put_array, get_array, 1 if flexible else 4
    else:
        put, get, size_bytes = _primitive(f.type, flexible)
    if f.nullable_in(version):
        if f.type == "{}":
            put, get = _nullable_struct(put, get)
            return put, get, 1
        if f.type not in ("string", "bytes", "records") and not f.type.startswith("[]"):
            raise ValueError(f"field {f.name}: a {f.type} cannot be nullable")
        put, get = _nullable(put, get, flexible, int16_prefix=f.type == "string")
    return put, get, size_bytes


def _nullable_struct(put: Put, get: Get) -> tuple[Put, Get]:
    """A nullable struct, as Kafka writes one: an int8 marker, -1 for null, 1 before the struct's fields."""
    def put_nullable(out: bytearray, v: Any) -> None:
        if v is None:
            out += b"\xff"
        else:
            out += b"\x01"
            put(out, v)

    def get_nullable(r: Reader) -> Any:
        marker = r.take(1)[0]
        if marker == 0xFF:
            return None
        return get(r)

    return put_nullable, get_nullable


def _struct(fields: tuple[Field, ...], version: int, flexible: bool, check: bool,
            path: str = "") -> tuple[Put, Get, int]:
    """Codec of a struct (a dict): its untagged fields in order, then (flexible) its tagged fields by tag. check (a
    request): a key the description lacks, or a field set to other than its default at a version that lacks it (and
    is not ignorable), raises RequestEncodeError instead of encoding as if it were not there."""
    plain: list[tuple[str, Put, Get, Callable[[], Any]]] = []
    tagged: dict[int, tuple[str, Put, Get, Callable[[], Any]]] = {}
    absent: list[tuple[str, Callable[[], Any]]] = []
    unsendable: list[tuple[str, Callable[[], Any]]] = []  # absent here, not ignorable: may only hold its default
    known = frozenset(f.name for f in fields)
    size_bytes = 1 if flexible else 0
    for f in fields:
        if not f.present(version) or (f.tag is not None and not flexible):
            absent.append((f.name, f.default))
            if not f.ignorable:
                unsendable.append((f.name, f.default))
        elif f.tag is None:
            put, get, field_bytes = _field(f, version, flexible, check, path)
            plain.append((f.name, put, get, f.default))
            size_bytes += field_bytes
        else:
            tagged[f.tag] = (f.name, *_field(f, version, True, check, path)[:2], f.default)
    tagged = dict(sorted(tagged.items()))

    def checked(value: Mapping[str, Any]) -> None:
        if not known.issuperset(value):
            unknown = sorted(str(k) for k in value if k not in known)
            raise RequestEncodeError(f"unknown field(s) {', '.join(path + k for k in unknown)}: the description "
                                     f"has {', '.join(sorted(known))}")
        for name, default in unsendable:
            if name in value and value[name] != default():
                raise RequestEncodeError(f"field {path}{name} is set ({value[name]!r}) but this version does not "
                                         f"carry it")

    def put_struct(out: bytearray, value: Mapping[str, Any]) -> None:
        if check:
            checked(value)
        for name, put, _, default in plain:
            put(out, value[name] if name in value else default())
        if not flexible:
            return
        written = []
        for tag, (name, put, _, default) in tagged.items():
            if name in value and value[name] != default():
                raw = bytearray()
                put(raw, value[name])
                written.append((tag, raw))
        put_uvarint(out, len(written))
        for tag, raw in written:
            put_uvarint(out, tag)
            put_uvarint(out, len(raw))
            out += raw

    def get_struct(r: Reader) -> dict[str, Any]:
        value = {name: get(r) for name, _, get, _ in plain}
        for name, default in absent:
            value[name] = default()
        if not flexible:
            return value
        for name, _, _, default in tagged.values():
            value[name] = default()
        count = r.uvarint()
        if 2 * count > r.end - r.pos:  # a tag and a size per field
            raise ProtocolError(f"{count} tagged fields before offset {r.pos} do not fit the bytes left")
        for _ in range(count):
            tag = r.uvarint()
            raw = r.take(r.uvarint())
            if tag in tagged:  # unknown tags are skipped, as Kafka does
                sub = Reader(raw)
                value[tagged[tag][0]] = tagged[tag][2](sub)
                if sub.pos != sub.end:
                    raise ProtocolError(f"tagged field {tag}: {sub.end - sub.pos} bytes left over")
        return value

    return put_struct, get_struct, size_bytes


@cache
def plan(api: Api, version: int, response: bool) -> tuple[Put, Get]:
    """The body codec of one API version, built once."""
    if version not in api.versions:
        raise RequestEncodeError(f"{api.name} v{version} is not described (v{api.valid[0]}-v{api.valid[1]})")
    fields = api.response if response else api.request
    put, get, _ = _struct(fields, version, api.is_flexible(version), check=not response)
    return put, get


def encode_message(api: Api, version: int, value: Mapping[str, Any], response: bool = False) -> bytes:
    """A request (or response) body from a dict; fields it lacks take their defaults. A request naming a field the
    description lacks, or setting one this version does not carry (unless the description marks it ignorable), raises
    RequestEncodeError. Responses (written only by fakes and tests, which may fill in every version's fields) are not
    checked so."""
    put, _ = plan(api, version, response)
    out = bytearray()
    try:
        put(out, value)
    except RequestEncodeError as e:
        raise RequestEncodeError(f"cannot encode {api.name} v{version}: {e}") from e
    except _ENCODE_FAULTS as e:
        raise RequestEncodeError(f"cannot encode {api.name} v{version}: {type(e).__name__}: {e}") from e
    return bytes(out)


def decode_message(api: Api, version: int, data: bytes | bytearray | memoryview | Reader, response: bool = False,
                   strict: bool = True) -> dict[str, Any]:
    """A body as a dict holding every field (a field the version lacks has its default); strict: trailing bytes are
    an error too."""
    _, get = plan(api, version, response)
    r = data if isinstance(data, Reader) else Reader(data)
    kind = "response" if response else "request"
    try:
        value: dict[str, Any] = get(r)
        if strict and r.pos != r.end:
            raise ProtocolError(f"{r.end - r.pos} unexpected trailing bytes at offset {r.pos}")
    except ProtocolError as e:
        raise ProtocolError(f"{api.name} v{version} {kind}: {e}") from e
    except _DECODE_FAULTS as e:
        raise ProtocolError(f"{api.name} v{version} {kind}: {type(e).__name__}: {e}") from e
    return value
