"""librdkafka's configuration over cykafka's: owns which librdkafka keys the compat layer itself honours (delivery
callbacks, the queue's message count, the offset store, auto commit, partition EOF, on_commit), librdkafka's
defaults where they differ from Java's (enable.idempotence false, isolation.level read_committed), the other client's
keys librdkafka ignores with a warning, and turning cykafka's ConfigError into confluent-kafka's KafkaException
(_INVALID_ARG, naming the key). Every other key goes to cykafka's config as it is (its aliases:
cykafka/config_spellings.py), which refuses what it cannot honour.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from cykafka import errors
from cykafka.compat.confluent_kafka.error import KafkaError, KafkaException, error_from
from cykafka.config import CONSUMER_KEYS, CONSUMER_ONLY_KEYS, PRODUCER_KEYS
from cykafka.config_spellings import ALIASES

log = logging.getLogger("cykafka.config")

_PRODUCER_ONLY_KEYS = PRODUCER_KEYS - CONSUMER_KEYS
_FALSE = ("false", "0", "no", "off")


def merged(conf: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """confluent-kafka's `Client(conf, **kwargs)`: the dict and the keyword arguments (logger=, ...) together."""
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"expected configuration dict, got {type(conf).__name__}")
    out = dict(conf or {})
    out.update(kwargs)
    for key in ("default.topic.config", "default_topic_config"):  # librdkafka's old topic-level dict, merged in
        topic_conf = out.pop(key, None)
        if topic_conf is not None:
            if not isinstance(topic_conf, Mapping):
                raise invalid(f"Invalid value for configuration property \"{key}\": expected a dict")
            for k, v in topic_conf.items():
                out.setdefault(k, v)
    return out


class _Forward(logging.Handler):
    """Hands cykafka's log records to the logger a confluent-kafka user gave as `logger`."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        if self.target.isEnabledFor(record.levelno):
            self.target.handle(record)


def forward_logs(conf: dict[str, Any]) -> Callable[[], None]:
    """Pops `logger`: cykafka's log records (the `cykafka` logger's, every client's) go to it too until the returned
    call removes the forwarding (the client's close())."""
    target = conf.pop("logger", None)
    if target is None:
        return lambda: None
    if not isinstance(target, logging.Logger):
        raise invalid("Invalid value for configuration property \"logger\": expected a logging.Logger")
    handler = _Forward(target)
    source = logging.getLogger("cykafka")
    source.addHandler(handler)
    return lambda: source.removeHandler(handler)


def forward_logs_while(client: object, conf: dict[str, Any]) -> Callable[[], None]:
    """forward_logs(conf), also ended when client is garbage collected (confluent-kafka's Producer has no close())."""
    stop = forward_logs(conf)
    weakref.finalize(client, stop)
    return stop


def flag(conf: dict[str, Any], key: str, default: bool) -> bool:
    """Pops a boolean librdkafka key ("true"/"false" strings too)."""
    if key not in conf:
        return default
    value = conf.pop(key)
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE
    if not isinstance(value, bool | int):
        raise invalid(f"Invalid value for configuration property \"{key}\": {value!r}")
    return bool(value)


def number(conf: dict[str, Any], key: str, default: int) -> int:
    """Pops an integer librdkafka key (a numeric string too)."""
    if key not in conf:
        return default
    value = conf.pop(key)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise invalid(f"Invalid value for configuration property \"{key}\": {value!r}") from None


def invalid(reason: str) -> KafkaException:
    return KafkaException(KafkaError(KafkaError._INVALID_ARG, reason))


def _canonical(key: str) -> str:
    return ALIASES.get(key, key)


def drop_other_clients(conf: dict[str, Any], client: str) -> None:
    """librdkafka warns about, and ignores, a consumer key given to a producer and the other way round (one dict
    shared by both is common); so does this layer."""
    other = CONSUMER_ONLY_KEYS if client == "producer" else _PRODUCER_ONLY_KEYS
    for key in [k for k in conf if isinstance(k, str) and _canonical(k) in other]:
        log.warning("configuration property %r is not a %s property and is ignored by this %s instance", key,
                    client, client)
        del conf[key]


@contextlib.contextmanager
def as_kafka_exception() -> Iterator[None]:
    """A cykafka ConfigError (an unknown key, a bad value: its message names the key) as confluent-kafka raises it:
    KafkaException(KafkaError(_INVALID_ARG))."""
    try:
        yield
    except errors.ConfigError as e:
        raise invalid(str(e)) from e


def error_callback(callback: Callable[[KafkaError], object] | None) -> Callable[[errors.KafkaError], None] | None:
    """cykafka's error_cb, calling confluent-kafka's with a KafkaError value."""
    if callback is None:
        return None
    def call(error: errors.KafkaError) -> None:
        callback(error_from(error))

    return call
