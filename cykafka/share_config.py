"""The share consumer's configuration (Java's KafkaShareConsumer keys and defaults), parsed as the consumer's is.

A share consumer takes the consumer's connection, fetch and group.id keys (cykafka/config.py's ConsumerConfig, the
one table of keys and validators) plus its own, `share.acknowledgement.mode` (implicit | explicit); group.id is
required. The consumer keys a share group has no use for are refused, as Java's ShareConsumerConfig refuses them,
with what takes their place (the group's configs, set on the broker).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cykafka.config import ConsumerConfig
from cykafka.errors import ConfigError

ACKNOWLEDGEMENT_MODES = ("implicit", "explicit")
_GROUP_CONFIG = ("a share group's own setting: set it on the group (Admin.incremental_alter_configs on the GROUP "
                 "resource: share.auto.offset.reset, share.record.lock.duration.ms, ...) or the broker "
                 "(group.share.*)")
# consumer keys Java's ShareConsumerConfig refuses, and why
REFUSED = {
    "auto.offset.reset": f"where a new share group starts is {_GROUP_CONFIG}",
    "enable.auto.commit": "a share consumer acknowledges records, it commits no offsets (share.acknowledgement.mode)",
    "auto.commit.interval.ms": "a share consumer acknowledges records, it commits no offsets",
    "group.instance.id": "share groups have no static members",
    "isolation.level": f"a share group reads committed records only; it is {_GROUP_CONFIG} (share.isolation.level)",
    "partition.assignment.strategy": "the share group's coordinator assigns partitions (server-side assignor)",
    "session.timeout.ms": f"the member's session timeout is {_GROUP_CONFIG}",
    "heartbeat.interval.ms": f"the heartbeat interval is {_GROUP_CONFIG}",
    "max.poll.interval.ms": "a share consumer holds records under acquisition locks, not a poll interval",
    "enable.partition.eof": "a share consumer has no positions of its own: records of a partition are shared among "
    "the group's members, so no member reaches its end",
    "partition_eof_cb": "a share consumer has no positions of its own: records of a partition are shared among the "
    "group's members, so no member reaches its end",
    "enable.metrics.push": "the share consumer pushes no KIP-714 telemetry yet (the Consumer and the Producer do)",
}
SHARE_KEYS = frozenset({"share.acknowledgement.mode", "client.rack"})


@dataclass(frozen=True, slots=True)
class ShareConsumerConfig:
    """Validated share consumer settings: the consumer's (connection, fetch sizes, group.id) and its own."""

    consumer: ConsumerConfig
    group_id: str
    acknowledgement_mode: str = "implicit"
    client_rack: str | None = None

    @property
    def explicit(self) -> bool:
        return self.acknowledgement_mode == "explicit"

    @classmethod
    def parse(cls, config: Mapping[str, object] | None = None, **kwargs: object) -> ShareConsumerConfig:
        if config is not None and not isinstance(config, Mapping):
            raise ConfigError(f"the share consumer config must be a mapping of Kafka keys to values (a dict such as "
                              f"{{'bootstrap.servers': 'host:9092', 'group.id': 'workers'}}), got a "
                              f"{type(config).__name__}")
        rest: dict[str, object] = {}
        own: dict[str, object] = {}
        for key, value in [*(config or {}).items(), *((k.replace("_", "."), v) for k, v in kwargs.items())]:
            if not isinstance(key, str):
                raise ConfigError(f"config keys must be str (Kafka's dotted names such as 'group.id'), got {key!r}")
            if key in REFUSED:
                raise ConfigError(f"{key} is not a share consumer key: {REFUSED[key]}")
            (own if key in SHARE_KEYS else rest)[key] = value
        mode = own.get("share.acknowledgement.mode", "implicit")
        if not isinstance(mode, str) or mode.lower() not in ACKNOWLEDGEMENT_MODES:
            raise ConfigError(f"share.acknowledgement.mode must be one of {', '.join(ACKNOWLEDGEMENT_MODES)}; got "
                              f"{mode!r}")
        rack = own.get("client.rack")
        if rack is not None and (not isinstance(rack, str) or not rack):
            raise ConfigError(f"client.rack must be a non-empty string or None, got {rack!r}")
        consumer = ConsumerConfig.parse(rest)
        if consumer.group_id is None:
            raise ConfigError("group.id is required: the share group this consumer joins")
        return cls(consumer, consumer.group_id, mode.lower(), rack)
