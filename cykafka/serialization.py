"""Records' keys and values to and from bytes: serializers (the producer's, before the core), deserializers (the
consumers', where poll hands records to the caller), the context both receive (confluent-kafka's call shape:
`serializer(obj, SerializationContext(topic, MessageField.KEY, headers))`), and topic checks (headers:
cykafka.core.checked_headers, the rule send_batch shares). Errors name the field and accepted types;
docs/serialization.md."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from cykafka.core import ConsumerRecord
from cykafka.errors import ConfigError, InvalidTopicError, RecordDeserializationError, SerializationError

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


class MessageField(StrEnum):
    """Which part of a record a serializer or deserializer is given (confluent-kafka's MessageField: equal to its
    members and to the strings "key" / "value", so its Schema Registry serdes read it unchanged)."""

    NONE = "none"
    KEY = "key"
    VALUE = "value"


class SerializationContext:
    """What a serializer or deserializer is told besides the data (confluent-kafka's SerializationContext): the
    record's `topic`, `field` (MessageField.KEY or VALUE) and `headers`, a list of (str, bytes | None) pairs. A
    serializer may append to headers (confluent's serdes put a schema id there when configured to): they are the
    record's headers when it is sent."""

    __slots__ = ("field", "headers", "topic")

    def __init__(self, topic: str, field: MessageField, headers: list[tuple[str, Any]] | None = None) -> None:
        self.topic = topic
        self.field = field
        self.headers = headers

    def __repr__(self) -> str:
        return f"SerializationContext(topic={self.topic!r}, field={self.field}, headers={self.headers!r})"


def takes_context(fn: Any, key: str) -> bool:
    """Whether a user's serializer or deserializer is called as fn(data, ctx) (confluent-kafka's shape, decided once
    at construction): its second positional parameter is required, or is named ctx / context (confluent's
    Serializer and Deserializer: `__call__(self, obj, ctx=None)`); otherwise fn(data), the one-argument form.
    ConfigError naming key when it requires more than two arguments."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: the one-argument form
        return False
    positional = [p for p in signature.parameters.values()
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    required = [p for p in signature.parameters.values()
                if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    if len(required) > 2:
        raise ConfigError(f"{key} must take (data) or (data, ctx: SerializationContext); {fn!r} requires "
                          f"{len(required)} arguments")
    if len(positional) < 2:
        return False
    return positional[1].default is inspect.Parameter.empty or positional[1].name in ("ctx", "context")


def make_serializer(spec: Any, field: str) -> Callable[[Any, SerializationContext | None], Serialized]:
    """None/'bytes' -> bytes-like or str passes through; 'str', 'int', 'json' built-ins; or the user's callable,
    called as user(value, ctx) or user(value) (takes_context). The result is called with (value, ctx); ctx may be
    None only when takes_context(spec) is False (the producer then makes none)."""
    if spec is None or isinstance(spec, str):
        plain = (BUILTIN[spec] if isinstance(spec, str) else None) or _bytes_like(field)
        return lambda value, ctx: plain(value)
    user: Callable[..., Any] = spec
    with_context = takes_context(user, f"{field}.serializer")

    def serialize(value: Any, ctx: SerializationContext | None) -> Serialized:
        result = user(value, ctx) if with_context else user(value)
        if result is not None and not isinstance(result, bytes | bytearray | memoryview):
            raise SerializationError(f"{field}.serializer returned {type(result).__name__}, expected bytes or None")
        return result

    return serialize


def context_headers(headers: Any) -> list[Any]:
    """A record's headers as the list a serializer's context carries (a new list: the caller's stays as given;
    what the serializers append is sent)."""
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers)


# -- deserializers: bytes -> the caller's objects --------------------------------------------------------------------


def _from_str(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise SerializationError(f"the 'str' deserializer takes UTF-8: {e.reason} at byte {e.start}") from None


def _from_int(data: bytes) -> int:
    """Java's LongDeserializer: 8 bytes big-endian, signed (what the 'int' serializer writes)."""
    if len(data) != 8:
        raise SerializationError(f"the 'int' deserializer takes 8 bytes (a signed 64-bit big-endian integer), got "
                                 f"{len(data)}")
    return int.from_bytes(data, "big", signed=True)


def _from_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as e:
        raise SerializationError(f"the 'json' deserializer could not decode the data: {e}") from None


DESERIALIZERS: dict[str, Callable[[bytes], Any] | None] = {
    "bytes": None, "str": _from_str, "int": _from_int, "json": _from_json}


def make_deserializer(spec: Any, field: str) -> Callable[[bytes, SerializationContext], Any] | None:
    """None/'bytes' -> None (the bytes as fetched); 'str', 'int', 'json' built-ins; or the user's callable, called
    as user(data, ctx) or user(data) (takes_context)."""
    if spec is None or isinstance(spec, str):
        plain = DESERIALIZERS[spec] if isinstance(spec, str) else None
        return None if plain is None else lambda data, ctx: plain(data)
    user: Callable[..., Any] = spec
    if takes_context(user, f"{field}.deserializer"):
        return user
    return lambda data, ctx: user(data)


class Deserializers:
    """A consumer's key.deserializer and value.deserializer applied to the records poll hands out. A null key or
    value stays None (Java's: a deserializer never sees null); a deserializer that raises is a
    RecordDeserializationError naming the record."""

    __slots__ = ("key", "value")

    def __init__(self, key: Callable[[bytes, SerializationContext], Any] | None,
                 value: Callable[[bytes, SerializationContext], Any] | None) -> None:
        self.key = key
        self.value = value

    @classmethod
    def of(cls, key_spec: Any, value_spec: Any) -> Deserializers | None:
        """The deserializers of a config's key.deserializer / value.deserializer; None when both leave bytes."""
        key, value = make_deserializer(key_spec, "key"), make_deserializer(value_spec, "value")
        return None if key is None and value is None else cls(key, value)

    def key_value(self, record: Any) -> tuple[Any, Any]:
        """record's key and value deserialized (any object with topic, partition, offset, key, value, headers)."""
        key, value = record.key, record.value
        field = "key"
        try:
            if key is not None and self.key is not None:
                key = self.key(key, SerializationContext(record.topic, MessageField.KEY, record.headers))
            field = "value"
            if value is not None and self.value is not None:
                value = self.value(value, SerializationContext(record.topic, MessageField.VALUE, record.headers))
        except Exception as e:
            error = RecordDeserializationError(
                f"{field}.deserializer raised on {record.topic} [{record.partition}] at offset {record.offset}: "
                f"{e!r}; seek past the record to go on", topic=record.topic, partition=record.partition,
                offset=record.offset, field=field)
            error.__cause__ = e
            raise error from e
        return key, value

    def records(self, records: list[ConsumerRecord]) -> tuple[list[ConsumerRecord], RecordDeserializationError | None]:
        """records deserialized, in order, up to the first that fails; with that failure (None when none did)."""
        out: list[ConsumerRecord] = []
        for record in records:
            try:
                key, value = self.key_value(record)
            except RecordDeserializationError as e:
                return out, e
            out.append(ConsumerRecord(record.topic, record.partition, record.offset, record.timestamp_ms,
                                      record.timestamp_type, key, value, record.headers, record.leader_epoch))
        return out, None


def validate_topic(topic: Any) -> None:
    if not isinstance(topic, str):
        raise InvalidTopicError(f"topic must be a str, got {type(topic).__name__}")
    if not topic or topic in (".", ".."):
        raise InvalidTopicError(f"topic name {topic!r} is invalid: it must not be empty, '.' or '..'")
    if len(topic) > MAX_TOPIC_LENGTH:
        raise InvalidTopicError(f"topic name is {len(topic)} characters; the maximum is {MAX_TOPIC_LENGTH}")
    if not _TOPIC_RE.match(topic):
        raise InvalidTopicError(f"topic name {topic!r} has characters other than ASCII letters, digits, '.', '_', '-'")
