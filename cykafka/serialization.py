"""Record shaping before the core: serializers and topic checks (headers: cykafka.core.checked_headers, the rule
send_batch shares). Errors name the field and accepted types."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cykafka.errors import InvalidTopicError, SerializationError

Headers = Sequence[tuple[str, bytes | None]] | Mapping[str, bytes | None]
Serialized = bytes | bytearray | memoryview | None
_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_LENGTH = 249


def utf8(text: str, field: str) -> bytes:
    """text as UTF-8; SerializationError naming field for a str with no UTF-8 form (a lone surrogate)."""
    try:
        return text.encode()
    except UnicodeEncodeError as e:
        raise SerializationError(f"{field} is a str with no UTF-8 form ({e.reason} at index {e.start})") from None


def _bytes_like(field: str) -> Callable[[Any], Any]:
    """Without a serializer: a bytes-like passes through (the core checks it is C-contiguous bytes, as send_batch
    does), a str is encoded."""
    def serialize(value: Any) -> Any:
        if value is None or isinstance(value, bytes | bytearray | memoryview):
            return value
        if isinstance(value, str):
            return utf8(value, field)
        try:
            memoryview(value).release()  # any other buffer (e.g. a numpy uint8 array)
        except TypeError:
            raise SerializationError(f"{field} must be bytes, bytearray, memoryview, str or None without a "
                                     f"{field}.serializer; got {type(value).__name__}") from None
        return value

    return serialize


def _str(value: Any) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SerializationError(f"the 'str' serializer takes str, got {type(value).__name__}")
    return utf8(value, "the 'str' serializer's value")


def _int(value: Any) -> bytes | None:
    """Java's LongSerializer: 8 bytes big-endian, signed."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SerializationError(f"the 'int' serializer takes int, got {type(value).__name__}")
    try:
        return value.to_bytes(8, "big", signed=True)
    except OverflowError:
        raise SerializationError(f"the 'int' serializer takes 64-bit signed integers, got {value}") from None


def _json(value: Any) -> bytes | None:
    if value is None:
        return None
    try:
        return json.dumps(value, separators=(",", ":")).encode()
    except (TypeError, ValueError) as e:
        raise SerializationError(f"the 'json' serializer could not encode {type(value).__name__}: {e}") from e


BUILTIN = {"bytes": None, "str": _str, "int": _int, "json": _json}


def make_serializer(spec: Any, field: str) -> Callable[[Any], Serialized]:
    """None/'bytes' -> bytes-like or str passes through; 'str', 'int', 'json' built-ins; or the user's callable."""
    if spec is None or spec == "bytes":
        return _bytes_like(field)
    if isinstance(spec, str):
        return BUILTIN[spec] or _bytes_like(field)
    user: Callable[[Any], Any] = spec

    def serialize(value: Any) -> Serialized:
        result = user(value)
        if result is not None and not isinstance(result, bytes | bytearray | memoryview):
            raise SerializationError(f"{field}.serializer returned {type(result).__name__}, expected bytes or None")
        return result

    return serialize


def validate_topic(topic: Any) -> None:
    if not isinstance(topic, str):
        raise InvalidTopicError(f"topic must be a str, got {type(topic).__name__}")
    if not topic or topic in (".", ".."):
        raise InvalidTopicError(f"topic name {topic!r} is invalid: it must not be empty, '.' or '..'")
    if len(topic) > MAX_TOPIC_LENGTH:
        raise InvalidTopicError(f"topic name is {len(topic)} characters; the maximum is {MAX_TOPIC_LENGTH}")
    if not _TOPIC_RE.match(topic):
        raise InvalidTopicError(f"topic name {topic!r} has characters other than ASCII letters, digits, '.', '_', '-'")
