"""Config keys users bring from confluent-kafka (librdkafka), kafka-python, aiokafka and Java (docs/migrating.md):
aliases where the semantics are the same, and for the others an error that says what to use instead."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from cykafka import ConfigError
from cykafka.config import ALIASES, NOT_ALIASES, VALIDATORS, AdminConfig, ConsumerConfig, ProducerConfig

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
    ({"message.timeout.ms": -1}, "message.timeout.ms (cykafka's delivery.timeout.ms) must be in [1, "),
    ({"message.timeout.ms": 3, "linger.ms": 5}, "message.timeout.ms (cykafka's delivery.timeout.ms, 3) must be "
                                                "greater than linger.ms (5)"),
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
    ("enable.auto.offset.store", ["enable.auto.commit=false", "consumer.commit(offsets)"], []),
    ("queued.min.messages", ["fetch.max.bytes", "max.poll.records"], []),
    ("fetch.error.backoff.ms", ["use retry.backoff.ms"], []),
    ("consumer_timeout_ms", ["poll(timeout)"], []),
    ("socket.nagle.disable", ["TCP_NODELAY"], []),
    ("broker.address.family", ["use client.dns.lookup"], []),
    ("log_level", ["logging.getLogger('cykafka')", "debug="], []),
    ("logger", ["cykafka.network", "error_cb"], []),
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


# -- librdkafka keys with cykafka's meaning (issue 30, point 6) ---------------------------------------------------

def test_message_timeout_ms_takes_librdkafkas_meaning() -> None:
    cfg = ProducerConfig.parse({**BASE, "message.timeout.ms": 30_000})  # librdkafka's most common setting
    assert cfg.delivery_timeout_ms == 30_000
    assert cfg.request_timeout_ms == 30_000 - cfg.linger_ms  # a request never outlives its records
    assert ProducerConfig.parse({**BASE, "message.timeout.ms": 0}).delivery_timeout_ms == 2**31 - 1  # 0: no limit
    assert ProducerConfig.parse({**BASE, "message.timeout.ms": 300_000}).request_timeout_ms == 30_000
    with pytest.raises(ConfigError, match=r"delivery.timeout.ms \(30000\) must be >= linger.ms \+ request.timeout"):
        ProducerConfig.parse({**BASE, "message.timeout.ms": 30_000, "request.timeout.ms": 30_000})
    with pytest.raises(ConfigError, match=r"delivery.timeout.ms \(30000\) must be >= linger.ms \+ request.timeout"):
        ProducerConfig.parse({**BASE, "delivery.timeout.ms": 30_000})  # Java's key keeps Java's rule


@pytest.mark.parametrize(("value", "expected"), [("smallest", "earliest"), ("beginning", "earliest"),
                                                 ("largest", "latest"), ("end", "latest"), ("error", "none"),
                                                 ("EARLIEST", "earliest")])
def test_auto_offset_reset_takes_librdkafkas_words(value: str, expected: str) -> None:
    assert ConsumerConfig.parse({**BASE, "auto.offset.reset": value}).auto_offset_reset == expected


def test_auto_offset_reset_refuses_other_words_naming_the_accepted() -> None:
    with pytest.raises(ConfigError, match=r"auto.offset.reset must be one of earliest, latest, none \(librdkafka's "
                                          r"smallest/beginning, largest/end and error are taken as those\); got 'x'"):
        ConsumerConfig.parse({**BASE, "auto.offset.reset": "x"})


def test_fetch_wait_max_ms_is_fetch_max_wait_ms() -> None:
    assert ConsumerConfig.parse({**BASE, "fetch.wait.max.ms": 100}).fetch_max_wait_ms == 100
    assert ConsumerConfig.parse({**BASE, "fetch.message.max.bytes": 65536}).max_partition_fetch_bytes == 65536


def test_connection_keys_reach_the_transport_settings_of_every_client() -> None:
    def cb(error: object) -> None:
        pass

    extra = {"socket.keepalive.enable": True, "client.dns.lookup": "resolve_canonical_bootstrap_servers_only",
             "error_cb": cb}
    for connection in (ProducerConfig.parse({**BASE, **extra}).connection_settings(),
                       ConsumerConfig.parse({**BASE, **extra}).connection,
                       AdminConfig.parse({**BASE, **extra}).connection):
        assert connection.socket_keepalive_enable is True
        assert connection.client_dns_lookup == "resolve_canonical_bootstrap_servers_only"
        assert connection.error_cb is cb
    assert ProducerConfig.parse(BASE, error_cb=cb).error_cb is cb  # the keyword argument, confluent-kafka's name
    with pytest.raises(ConfigError, match=r"client\.dns\.lookup must be one of use_all_dns_ips, "
                                          r"resolve_canonical_bootstrap_servers_only; got 'default'"):
        ProducerConfig.parse({**BASE, "client.dns.lookup": "default"})
    with pytest.raises(ConfigError, match="error_cb must be a callable or None, got 3"):
        ConsumerConfig.parse({**BASE, "error_cb": 3})


def test_debug_sets_the_named_components_loggers_to_debug() -> None:
    names = ("cykafka.network", "cykafka.group", "cykafka.consumer")
    before = {name: logging.getLogger(name).level for name in names}
    try:
        ConsumerConfig.parse({**BASE, "debug": "broker,protocol,cgrp"})
        assert logging.getLogger("cykafka.network").level == logging.DEBUG
        assert logging.getLogger("cykafka.group").level == logging.DEBUG
        assert logging.getLogger("cykafka.consumer").level == before["cykafka.consumer"]  # not named
    finally:
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)
    with pytest.raises(ConfigError, match="debug: 'brokers' is not a librdkafka debug context; accepted: generic"):
        ProducerConfig.parse({**BASE, "debug": "brokers"})


def test_socket_keepalive_enable_sets_so_keepalive() -> None:
    import socket

    from cykafka.adapters.socket_transport import SocketTransport

    listener = socket.create_server(("127.0.0.1", 0))
    try:
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        for enabled in (True, False):
            transport = SocketTransport(ProducerConfig.parse(
                {"bootstrap.servers": address, "socket.keepalive.enable": enabled}).connection_settings())
            try:
                transport.ready(-1, 0)  # starts connecting
                sock = transport._connections[-1].sock
                assert sock is not None
                assert bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)) is enabled
            finally:
                transport.close(0)
    finally:
        listener.close()


def test_client_dns_lookup_resolves_bootstrap_names_to_canonical_names() -> None:
    from cykafka.adapters.socket_transport import SocketTransport

    settings = ProducerConfig.parse({"bootstrap.servers": "localhost:9092",
                                     "client.dns.lookup": "resolve_canonical_bootstrap_servers_only"})
    transport = SocketTransport(settings.connection_settings())
    try:
        hosts = {(c.host, c.port) for c in transport._connections.values()}
        # localhost resolves to loopback addresses whose reverse names are localhost (or the address: no PTR)
        assert hosts and all(port == 9092 for _, port in hosts)
        assert all(host in ("localhost", "127.0.0.1", "::1", "ip6-localhost", "ip6-loopback") for host, _ in hosts)
    finally:
        transport.close(0)


def test_enable_partition_eof_needs_its_callback() -> None:
    with pytest.raises(ConfigError, match=r"enable.partition.eof=true needs partition_eof_cb: a callable "
                                          r"\(TopicPartition, offset\)"):
        ConsumerConfig.parse({**BASE, "enable.partition.eof": True})
    cfg = ConsumerConfig.parse(BASE, partition_eof_cb=print)  # the callback alone turns it on
    assert cfg.enable_partition_eof and cfg.partition_eof_cb is print
    assert not ConsumerConfig.parse({**BASE, "enable.partition.eof": False, "partition_eof_cb": print}) \
        .enable_partition_eof


@pytest.mark.parametrize("key", sorted(NOT_ALIASES))
def test_every_refused_key_says_what_to_use_instead_to_every_client(key: str) -> None:
    """The one table (NOT_ALIASES): the producer, the consumer and Admin refuse each key with its explanation."""
    for parse in (ProducerConfig.parse, ConsumerConfig.parse, AdminConfig.parse):
        with pytest.raises(ConfigError) as info:
            parse({**BASE, key: 1})
        assert str(info.value).startswith(f"unknown config key {key!r} (another client's): {NOT_ALIASES[key]}.")


@pytest.mark.parametrize(("alias", "value", "field", "expected"), [
    ("socket.send.buffer.bytes", 0, "send_buffer_bytes", 0),
    ("socket.receive.buffer.bytes", 65536, "receive_buffer_bytes", 65536),
])
def test_librdkafka_socket_buffer_aliases(alias: str, value: int, field: str, expected: int) -> None:
    assert getattr(ProducerConfig.parse({**BASE, alias: value}), field) == expected


def test_use_all_dns_ips_tries_the_next_address_after_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name resolving to a dead address and then a live one (client.dns.lookup=use_all_dns_ips, Java's default):
    the attempt after the failure connects to the second address."""
    import socket
    import time

    from cykafka.adapters.socket_transport import SocketTransport
    from cykafka.broker import free_port

    live = socket.create_server(("127.0.0.1", 0))
    live.setblocking(False)
    addresses = [("127.0.0.1", free_port()), live.getsockname()]
    real = socket.getaddrinfo

    def resolve(host: object, port: object, *args: Any, **kwargs: Any) -> Any:
        if host == "kafka.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", address) for address in addresses]
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    transport = SocketTransport(ProducerConfig.parse({"bootstrap.servers": "kafka.test:9092",
                                                      "reconnect.backoff.max.ms": 50}).connection_settings())
    accepted = None
    try:
        deadline = time.monotonic() + 5
        while accepted is None and time.monotonic() < deadline:
            now_ms = int(time.monotonic() * 1000)
            transport.ready(-1, now_ms)
            transport.poll(20, now_ms)
            try:
                accepted, _ = live.accept()
            except BlockingIOError:
                pass
        assert accepted is not None, "never connected to the name's second address"
        assert transport._connections[-1].failures >= 1  # the first address was tried and failed
    finally:
        if accepted is not None:
            accepted.close()
        transport.close(0)
        live.close()
