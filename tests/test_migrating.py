"""Config keys users bring from confluent-kafka (librdkafka), kafka-python, aiokafka and Java (docs/migrating.md):
aliases where the semantics are the same, and for the others an error that says what to use instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cykafka import ConfigError
from cykafka.config import ALIASES, NOT_ALIASES, VALIDATORS, ProducerConfig

BASE = {"bootstrap.servers": "127.0.0.1:9092"}


@pytest.mark.parametrize(("alias", "value", "field", "expected"), [
    ("metadata.broker.list", "a:1,b:2", "bootstrap_servers", ("a:1", "b:2")),
    ("queue.buffering.max.ms", 7, "linger_ms", 7),
    ("compression.codec", "lz4", "compression_type", "lz4"),
    ("message.max.bytes", 2_000_000, "max_request_size", 2_000_000),
    ("request.required.acks", "1", "acks", 1),
    ("message.timeout.ms", 300_000, "delivery_timeout_ms", 300_000),
    ("message.send.max.retries", 3, "retries", 3),
    ("max.in.flight", 2, "max_in_flight_requests_per_connection", 2),
    ("topic.metadata.refresh.interval.ms", 60_000, "metadata_max_age_ms", 60_000),
    ("max.batch.size", 65536, "batch_size", 65536),
])
def test_an_alias_sets_cykafkas_key(alias: str, value: object, field: str, expected: object) -> None:
    cfg = ProducerConfig.parse({alias: value} if field == "bootstrap_servers" else {**BASE, alias: value})
    assert getattr(cfg, field) == expected
    assert ALIASES[alias] in cfg.user_keys  # counted as set by the user (Java changes defaults only for unset keys)


def test_kafka_python_keyword_arguments(tmp_path: Path) -> None:
    files = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key")}
    for path in files.values():
        path.write_text("-")
    cfg = ProducerConfig.parse(BASE, security_protocol="SASL_SSL", ssl_cafile=str(files["ca"]),
                               ssl_certfile=str(files["cert"]), ssl_keyfile=str(files["key"]), ssl_password="k",
                               sasl_mechanism="PLAIN", sasl_plain_username="u", sasl_plain_password="p")
    assert (cfg.ssl_ca_location, cfg.ssl_certificate_location, cfg.ssl_key_location) == (
        str(files["ca"]), str(files["cert"]), str(files["key"]))
    assert (cfg.ssl_key_password, cfg.sasl_username, cfg.sasl_password) == ("k", "u", "p")


def test_every_alias_names_a_real_key_and_no_key_is_both_alias_and_not() -> None:
    assert set(ALIASES.values()) <= set(VALIDATORS)
    assert not set(ALIASES) & set(NOT_ALIASES)
    assert not (set(ALIASES) | set(NOT_ALIASES)) & set(VALIDATORS)


def test_an_alias_and_its_key_together_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"linger\.ms and queue\.buffering\.max\.ms are both given; they are the "
                                          r"same key \(linger\.ms\): give one"):
        ProducerConfig.parse({**BASE, "linger.ms": 5, "queue.buffering.max.ms": 7})


@pytest.mark.parametrize(("config", "message"), [
    # librdkafka's 0 = no timeout has no equivalent: rejected, naming both spellings
    ({"message.timeout.ms": 0}, "message.timeout.ms (cykafka's delivery.timeout.ms) must be in [1, "),
    ({"topic.metadata.refresh.interval.ms": -1}, "topic.metadata.refresh.interval.ms (cykafka's "
                                                 "metadata.max.age.ms) must be in [0, "),
    ({"compression.codec": "brotli"}, "compression.codec (cykafka's compression.type) must be one of none, gzip"),
])
def test_a_bad_value_under_an_alias_names_both_keys(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.parse({**BASE, **config})
    assert message in str(info.value)


@pytest.mark.parametrize(("key", "says", "never"), [
    ("queue.buffering.max.kbytes", ["buffer.memory (bytes)", "not an alias", "QUEUE_FULL", "max.block.ms",
                                    "kbytes * 1024"], []),
    ("queue.buffering.max.messages", ["no limit on the number of queued records", "buffer.memory"], []),
    ("batch.num.messages", ["no per-batch record count limit", "Java's producer has none either"],
     ["did you mean"]),
    ("enable.ssl.certificate.verification", ["always verifies the broker's certificate", "ssl.ca.location"],
     ["enable.idempotence"]),
    ("compression.level", ["compression.gzip.level", "compression.zstd.level"], []),
    ("partitioner", ["murmur2", "partitioner.class"], []),
    ("dr_msg_cb", ["pass on_delivery=callback to send()"], []),
    ("error_cb", ["no error callback"], []),
    ("ssl.truststore.location", ["PEM", "ssl.ca.location"], []),
    ("sasl.jaas.config", ["sasl.mechanism, sasl.username and sasl.password"], []),
])
def test_another_clients_key_says_what_to_use_instead(key: str, says: list[str], never: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.parse({**BASE, key: 1})
    message = str(info.value)
    assert message.startswith(f"unknown config key {key!r} (another client's): ")
    for text in says:
        assert text in message
    for text in never:
        assert text not in message


def test_keyword_arguments_reach_the_same_explanations() -> None:
    with pytest.raises(ConfigError, match=r"unknown config key 'on\.delivery' .* pass on_delivery=callback to send"):
        ProducerConfig.parse(BASE, on_delivery=print)


@pytest.mark.parametrize(("key", "hint"), [
    ("lingr.ms", "; did you mean linger.ms."),
    ("bacth.size", "; did you mean batch.size."),
    ("enable.foo.verification", None),  # shares a word with enable.idempotence, means something else: no hint
    ("socket.timeout", None),
])
def test_did_you_mean_only_for_typos(key: str, hint: str | None) -> None:
    with pytest.raises(ConfigError) as info:
        ProducerConfig.parse({**BASE, key: 1})
    message = str(info.value)
    assert message.startswith(f"unknown config key {key!r}")
    if hint is None:
        assert "did you mean" not in message
    else:
        assert hint in message
