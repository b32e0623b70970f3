"""The notation: an API is an `Api` holding request and response fields, each made by `F`.

`F(name, type, versions, *fields, nullable=, tag=, default=, ignorable=, about=)`:
- type: a primitive ("int8", "int16", "uint16", "int32", "int64", "varint", "varlong", "uuid", "float64", "bool",
  "string", "bytes", "records"), "[]" + a primitive (an array of it), "[]" (an array of structs whose fields follow
  as positional arguments) or "{}" (one struct, fields follow).
- versions / nullable: "0+", "3+", "1", "2-4" or "none" (nullable's default: never null).
- tag: a tagged field's tag number (its tagged versions are `versions`); written only when the value differs from
  its default, as Kafka does.
- default: the value a decoder fills in for a field the version lacks; else 0, False, "", b"", [], a zero UUID,
  or (a struct) each field's default.
- ignorable: a request may set the field (to a value other than its default) at a version that lacks it, and the
  encoder leaves it out; without it that is a RequestEncodeError (Java's "ignorable", and for the fields where a body
  carries both the old and the new form of the same thing, e.g. FindCoordinator's `key` and `coordinator_keys`).
- about: what the field means, in a few words (every field has one; protocol/bodies.py carries them to mypy).
Values are plain data: a struct is a dict keyed by field name, an array a list, null is None. A request body naming a
field the description does not have is a RequestEncodeError (a typo never encodes as the default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

PRIMITIVES = frozenset({
    "int8", "int16", "uint16", "int32", "int64", "varint", "varlong", "uuid", "float64", "bool", "string", "bytes",
    "records",
})
MAX_VERSION = 0x7FFF
NEVER = (1, 0)  # an empty version range
_UNSET: Any = object()
_TYPE_DEFAULTS: dict[str, Any] = {"uuid": UUID(int=0), "float64": 0.0, "bool": False, "string": "", "bytes": b"",
                                  "records": b""}


def parse_versions(text: str) -> tuple[int, int]:
    """"3+" -> (3, MAX_VERSION), "2-4" -> (2, 4), "1" -> (1, 1), "none" -> NEVER (inclusive bounds)."""
    if text == "none":
        return NEVER
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    low, _, high = text.partition("-")
    return int(low), int(high or low)


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: str
    versions: tuple[int, int]
    nullable: tuple[int, int]
    tag: int | None
    explicit_default: Any
    fields: tuple[Field, ...]
    ignorable: bool = False
    about: str = ""

    @property
    def item_type(self) -> str:
        """The element type of an array ("" for an array of structs), else the type itself."""
        return self.type[2:] if self.type.startswith("[]") else self.type

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def nullable_in(self, version: int) -> bool:
        return self.nullable[0] <= version <= self.nullable[1]

    def default(self) -> Any:
        """A fresh default value (lists and dicts are never shared)."""
        if self.explicit_default is not _UNSET:
            return self.explicit_default
        if self.type.startswith("[]"):
            return []
        if self.type == "{}":
            return {f.name: f.default() for f in self.fields}
        return _TYPE_DEFAULTS.get(self.type, 0)


def F(name: str, type_: str, versions: str = "0+", *fields: Field, nullable: str = "none", tag: int | None = None,
      default: Any = _UNSET, ignorable: bool = False, about: str = "") -> Field:
    """One field; see the module docstring."""
    if type_ not in PRIMITIVES | {"[]", "{}"} and type_[2:] not in PRIMITIVES:
        raise ValueError(f"field {name}: unknown type {type_!r}")
    if bool(fields) != (type_ in ("[]", "{}")):
        raise ValueError(f"field {name}: sub-fields go with '[]' and '{{}}' only")
    return Field(name, type_, parse_versions(versions), parse_versions(nullable), tag, default, fields, ignorable,
                 about)


@dataclass(frozen=True, slots=True, eq=False)
class Api:
    """One Kafka API: its key, the versions we speak, the first flexible one (None: never), and both bodies. One
    object per API (protocol/apis.py), equal only to itself: codec.plan's cache is keyed by it, and a field-by-field
    hash of both bodies cost ~30 µs on every request encoded and every answer decoded."""

    key: int
    name: str
    valid: tuple[int, int]
    flexible_from: int | None
    request: tuple[Field, ...]
    response: tuple[Field, ...]

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    @property
    def versions(self) -> range:
        return range(self.valid[0], self.valid[1] + 1)


def api(key: int, name: str, valid: str, flexible: str, request: tuple[Field, ...],
        response: tuple[Field, ...]) -> Api:
    low, high = parse_versions(valid)
    flexible_from = None if flexible == "none" else parse_versions(flexible)[0]
    return Api(key, name, (low, high), flexible_from, request, response)
