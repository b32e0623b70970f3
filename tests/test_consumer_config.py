"""ConsumerConfig: Java's consumer keys and defaults through the one VALIDATORS table; other clients' keys refused
naming the key; the producer refuses consumer keys the same way."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cykafka import ConfigError, Producer
from cykafka.config import CONSUMER_KEYS, CONSUMER_ONLY_KEYS, PRODUCER_KEYS, VALIDATORS, ConsumerConfig

BOOT = {"bootstrap.servers": "127.0.0.1:9"}


def test_java_defaults() -> None:
    cfg = ConsumerConfig.parse(BOOT)
    assert (cfg.group_id, cfg.auto_offset_reset, cfg.enable_auto_commit, cfg.isolation_level) == (
        None, "latest", False, "read_uncommitted")
    assert (cfg.fetch_min_bytes, cfg.fetch_max_wait_ms, cfg.fetch_max_bytes, cfg.max_partition_fetch_bytes) == (
        1, 500, 52428800, 1048576)
    assert (cfg.max_poll_records, cfg.session_timeout_ms, cfg.heartbeat_interval_ms, cfg.max_poll_interval_ms) == (
        500, 45000, 3000, 300000)
    assert cfg.partition_assignment_strategy == ("range", "cooperative-sticky")
    assert cfg.check_crcs and cfg.auto_commit_interval_ms == 5000 and cfg.default_api_timeout_ms == 60000
    assert cfg.connection.receive_buffer_bytes == 65536 and cfg.connection.request_timeout_ms == 30000
    assert cfg.connection.bootstrap_servers == ("127.0.0.1:9",)


def test_group_id_turns_auto_commit_on_as_java() -> None:
    assert ConsumerConfig.parse(BOOT, group_id="g").enable_auto_commit
    assert not ConsumerConfig.parse({**BOOT, "group.id": "g", "enable.auto.commit": "false"}).enable_auto_commit


def test_keys_as_kwargs_and_connection_keys() -> None:
    cfg = ConsumerConfig.parse(BOOT, max_poll_records=7, isolation_level="read_committed", retry_backoff_ms=5,
                               receive_buffer_bytes=1024, partition_assignment_strategy="roundrobin,range")
    assert cfg.max_poll_records == 7 and cfg.read_committed
    assert cfg.retry_backoff_ms == 5 and cfg.connection.receive_buffer_bytes == 1024
    assert cfg.partition_assignment_strategy == ("roundrobin", "range")
    java = ["org.apache.kafka.clients.consumer.CooperativeStickyAssignor"]
    assert ConsumerConfig.parse(BOOT, partition_assignment_strategy=java).partition_assignment_strategy == (
        "cooperative-sticky",)


@pytest.mark.parametrize(("config", "message"), [
    ({"auto.offset.reset": "oldest"}, "auto.offset.reset must be one of earliest, latest, none"),
    ({"isolation.level": "committed"}, "isolation.level must be one of read_uncommitted, read_committed"),
    ({"max.poll.records": 0}, r"max.poll.records must be in \[1, "),
    ({"fetch.max.bytes": "lots"}, "fetch.max.bytes must be an integer"),
    ({"check.crcs": "yes"}, "check.crcs must be true or false"),
    ({"partition.assignment.strategy": "sticky"}, "partition.assignment.strategy entries must be one of range"),
    ({"group.id": ""}, "group.id must be a non-empty string or None"),
    ({"enable.auto.commit": True}, "enable.auto.commit=true needs a group.id"),
    ({"group.id": "g", "heartbeat.interval.ms": 45000}, "heartbeat.interval.ms .* must be lower than session"),
    ({"fetch.max.wait.ms": 30000}, "request.timeout.ms .* must be greater than fetch.max.wait.ms"),
    ({"linger.ms": 5}, "config key 'linger.ms' is not a consumer key"),
    ({"max.poll.record": 5}, "unknown config key 'max.poll.record'; did you mean max.poll.records"),
    ({"transactional.id": "t"}, "config key 'transactional.id' is not a consumer key"),
    ({"metadata.broker.list": "127.0.0.1:9"}, "bootstrap.servers and metadata.broker.list are both given"),
])
def test_invalid_config_names_the_key(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ConsumerConfig.parse({**BOOT, **config})


def test_the_producer_refuses_consumer_keys_naming_them() -> None:
    with pytest.raises(ConfigError, match=r"config key 'group\.id' is not a producer key"):
        Producer({**BOOT, "group.id": "g"})
    with pytest.raises(ConfigError, match=r"config key 'default\.api\.timeout\.ms' is not a producer key"):
        Producer({**BOOT, "default.api.timeout.ms": 5})


def test_one_table_every_key_belongs_to_a_client() -> None:
    assert CONSUMER_ONLY_KEYS <= CONSUMER_KEYS <= set(VALIDATORS)
    assert PRODUCER_KEYS | CONSUMER_KEYS == set(VALIDATORS)
    assert not PRODUCER_KEYS & CONSUMER_ONLY_KEYS


def test_admin_and_consumer_parse_their_own_keys_without_a_producer_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection keys' shared rules (`_check_connection`) and settings (`_connection`): no throw-away
    ProducerConfig validates an Admin's or a Consumer's connection settings (issue 26)."""
    from cykafka import config

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a ProducerConfig was parsed for another client")

    monkeypatch.setattr(config.ProducerConfig, "parse", refuse)
    admin = config.AdminConfig.parse({**BOOT, "retry.backoff.ms": 7, "request.timeout.ms": 1234})
    assert (admin.retry_backoff_ms, admin.connection.request_timeout_ms, admin.default_api_timeout_ms) == (7, 1234,
                                                                                                         60000)
    consumer = ConsumerConfig.parse({**BOOT, "metadata.max.age.ms": 5000, "allow.auto.create.topics": False})
    assert consumer.metadata.metadata_max_age_ms == 5000 and not consumer.metadata.allow_auto_create_topics
    for client in (config.AdminConfig, ConsumerConfig):  # the shared security rules hold for each
        with pytest.raises(ConfigError, match=r"sasl\.username set but security\.protocol is PLAINTEXT"):
            client.parse({**BOOT, "sasl.username": "u"})
        with pytest.raises(ConfigError, match=r"retry\.backoff\.max\.ms must be >= retry\.backoff\.ms") \
                if client is ConsumerConfig else pytest.raises(ConfigError, match="not an Admin key"):
            client.parse({**BOOT, "retry.backoff.ms": 500, "retry.backoff.max.ms": 100})
        with pytest.raises(ConfigError, match=r"bootstrap\.servers is required"):
            client.parse({})


def test_group_protocol_consumer_and_its_remote_assignor() -> None:
    assert ConsumerConfig.parse(BOOT).group_protocol == "classic"
    cfg = ConsumerConfig.parse({**BOOT, "group.id": "g", "group.protocol": "CONSUMER",
                                "group.remote.assignor": "range"})
    assert (cfg.group_protocol, cfg.consumer_protocol, cfg.group_remote_assignor) == ("consumer", True, "range")
    assert ConsumerConfig.parse(BOOT, group_protocol="consumer").group_remote_assignor is None


@pytest.mark.parametrize("key, value", [("session.timeout.ms", 10000), ("heartbeat.interval.ms", 1000),
                                        ("partition.assignment.strategy", "range")])
def test_a_classic_only_key_with_the_consumer_protocol_is_a_config_error_naming_it(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(key)} is not supported with group"):
        ConsumerConfig.parse({**BOOT, "group.id": "g", "group.protocol": "consumer", key: value})
    ConsumerConfig.parse({**BOOT, "group.id": "g", key: value})  # classic takes it


def test_group_remote_assignor_with_the_classic_protocol_or_an_unknown_one_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^group\.remote\.assignor is only read with group\.protocol=consumer"):
        ConsumerConfig.parse({**BOOT, "group.remote.assignor": "uniform"})
    with pytest.raises(ConfigError, match=r"group\.remote\.assignor must be one of uniform, range"):
        ConsumerConfig.parse({**BOOT, "group.protocol": "consumer", "group.remote.assignor": "sticky"})
    with pytest.raises(ConfigError, match=r"group\.protocol must be one of classic, consumer"):
        ConsumerConfig.parse({**BOOT, "group.protocol": "eager"})
