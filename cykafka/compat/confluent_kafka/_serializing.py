"""confluent-kafka's SerializingProducer and DeserializingConsumer over the compat Producer and Consumer: owns
calling the `key.serializer` / `value.serializer` (and deserializer) objects of the config with a
SerializationContext, and confluent's errors for them (Key/ValueSerializationError, ConsumeError,
Key/ValueDeserializationError).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from cykafka.compat.confluent_kafka._consumer import Consumer
from cykafka.compat.confluent_kafka._producer import DeliveryCallback, Producer
from cykafka.compat.confluent_kafka._types import Message
from cykafka.compat.confluent_kafka.error import (
    ConsumeError,
    KeyDeserializationError,
    KeySerializationError,
    ValueDeserializationError,
    ValueSerializationError,
)
from cykafka.serialization import MessageField, SerializationContext

Serde = Callable[[Any, SerializationContext], Any]


def _pop_callable(conf: dict[str, Any], key: str) -> Serde | None:
    found = conf.pop(key, None)
    if found is not None and not callable(found):
        raise ValueError(f"{key} must be callable")
    return cast(Serde | None, found)


class SerializingProducer(Producer):
    """A Producer whose produce() serializes key and value with the config's key.serializer / value.serializer."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        config = dict(conf)
        self._key_serializer = _pop_callable(config, "key.serializer")
        self._value_serializer = _pop_callable(config, "value.serializer")
        super().__init__(config)

    def produce(self, topic: str, key: Any = None, value: Any = None, partition: int = -1,  # type: ignore[override]
                on_delivery: DeliveryCallback | None = None, timestamp: int = 0, headers: Any = None) -> None:
        if self._key_serializer is not None:
            try:
                key = self._key_serializer(key, SerializationContext(topic, MessageField.KEY, headers))
            except Exception as e:
                raise KeySerializationError(e) from e
        if self._value_serializer is not None:
            try:
                value = self._value_serializer(value, SerializationContext(topic, MessageField.VALUE, headers))
            except Exception as e:
                raise ValueSerializationError(e) from e
        super().produce(topic, value, key, partition=partition, on_delivery=on_delivery, timestamp=timestamp,
                        headers=headers)


class DeserializingConsumer(Consumer):
    """A Consumer whose poll() deserializes key and value with the config's key.deserializer /
    value.deserializer, and raises ConsumeError for an error event instead of returning it."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        config = dict(conf)
        self._key_deserializer = _pop_callable(config, "key.deserializer")
        self._value_deserializer = _pop_callable(config, "value.deserializer")
        super().__init__(config)

    def poll(self, timeout: float | None = -1) -> Message | None:
        msg = super().poll(timeout)
        if msg is None:
            return None
        error = msg.error()
        if error is not None:
            raise ConsumeError(error, kafka_message=msg)
        if self._value_deserializer is not None:
            try:
                msg.set_value(self._value_deserializer(msg.value(), SerializationContext(
                    msg.topic() or "", MessageField.VALUE, msg.headers())))
            except Exception as e:
                raise ValueDeserializationError(e, msg) from e
        if self._key_deserializer is not None:
            try:
                msg.set_key(self._key_deserializer(msg.key(), SerializationContext(
                    msg.topic() or "", MessageField.KEY, msg.headers())))
            except Exception as e:
                raise KeyDeserializationError(e, msg) from e
        return msg

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Not in confluent-kafka's DeserializingConsumer either."""
        raise NotImplementedError
