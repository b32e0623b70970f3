"""confluent_kafka.serialization over cykafka's: owns confluent's Serializer / Deserializer bases and its built-in
String, Integer (int32) and Double serdes. SerializationContext and MessageField are cykafka's own (they already
take confluent-kafka's call shape, so its Schema Registry serdes work with both); SerializationError is the compat
one (a KafkaException).
"""

from __future__ import annotations

import struct
from typing import Any

from cykafka.compat.confluent_kafka.error import SerializationError
from cykafka.serialization import MessageField, SerializationContext

__all__ = [
    "Deserializer", "DoubleDeserializer", "DoubleSerializer", "IntegerDeserializer", "IntegerSerializer",
    "MessageField", "SerializationContext", "SerializationError", "Serializer", "StringDeserializer",
    "StringSerializer",
]


class Serializer:
    """Turns an object into bytes: `serializer(obj, ctx)`; None stays None."""

    __slots__: tuple[str, ...] = ()

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        raise NotImplementedError


class Deserializer:
    """Turns bytes into an object: `deserializer(value, ctx)`; None stays None."""

    __slots__: tuple[str, ...] = ()

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        raise NotImplementedError


class _Packed(Serializer):
    __slots__ = ("_format",)

    def __init__(self, fmt: str) -> None:
        self._format = fmt

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        try:
            return struct.pack(self._format, obj)
        except struct.error as e:
            raise SerializationError(str(e)) from e


class _Unpacked(Deserializer):
    __slots__ = ("_format",)

    def __init__(self, fmt: str) -> None:
        self._format = fmt

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if value is None:
            return None
        try:
            return struct.unpack(self._format, value)[0]
        except struct.error as e:
            raise SerializationError(str(e)) from e


class IntegerSerializer(_Packed):
    """An int as 4 bytes, big-endian, signed (Java's IntegerSerializer)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(">i")


class IntegerDeserializer(_Unpacked):
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(">i")


class DoubleSerializer(_Packed):
    """A float as 8 bytes, big-endian IEEE 754 (Java's DoubleSerializer)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(">d")


class DoubleDeserializer(_Unpacked):
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(">d")


class StringSerializer(Serializer):
    """A str in codec (default UTF-8)."""

    __slots__ = ("codec",)

    def __init__(self, codec: str = "utf_8") -> None:
        self.codec = codec

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        try:
            return obj.encode(self.codec)  # type: ignore[no-any-return]
        except (AttributeError, UnicodeError) as e:
            raise SerializationError(str(e)) from e


class StringDeserializer(Deserializer):
    __slots__ = ("codec",)

    def __init__(self, codec: str = "utf_8") -> None:
        self.codec = codec

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if value is None:
            return None
        try:
            return value.decode(self.codec)
        except UnicodeError as e:
            raise SerializationError(str(e)) from e
