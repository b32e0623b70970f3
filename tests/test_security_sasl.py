"""SASL for real against a loopback SASL front (tests/security_peers.SaslProxy: scramp's SCRAM server, PLAIN,
OAUTHBEARER) that splices authenticated connections to Tansu, which advertises the front so every connection
authenticates. Records land in Tansu and librdkafka reads them back through the same front (its own SASL client).
Wrong credentials fail fast with AuthenticationError carrying the server's message; one SASL_SSL test puts stunnel4
before the front."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from security_peers import HOST, Pki, SaslProxy, Stunnel, fails_fast, make_pki, require_stunnel

from cykafka.broker import EmbeddedBroker, free_port
from cykafka.errors import AuthenticationError
from cykafka.producer import Producer
from cykafka.verify import read_back

pytestmark = pytest.mark.broker

USER, PASSWORD = "alice", "alice-s3cret=,pw"
TOKEN = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.sig"


@dataclass
class SaslCluster:
    broker: EmbeddedBroker
    proxy: SaslProxy
    port: int  # what clients connect to (the proxy, or stunnel before it)
    protocol: str
    pki: Pki | None = None

    def config(self, mechanism: str, **extra: Any) -> dict[str, Any]:
        config: dict[str, Any] = {"bootstrap.servers": f"{HOST}:{self.port}", "security.protocol": self.protocol,
                                  "sasl.mechanism": mechanism, "linger.ms": 5}
        if mechanism == "OAUTHBEARER":
            config["oauth_cb"] = lambda _: (TOKEN, time.time() + 3600)
        else:
            config.update({"sasl.username": USER, "sasl.password": PASSWORD})
        if self.pki is not None:
            config["ssl.ca.location"] = str(self.pki.ca_pem)
        return {**config, **extra}

    def read_back(self, topic: str) -> list[Any]:
        config = {"security.protocol": self.protocol, "sasl.mechanism": "PLAIN", "sasl.username": USER,
                  "sasl.password": PASSWORD}
        if self.pki is not None:
            config["ssl.ca.location"] = str(self.pki.ca_pem)
        return read_back(f"{HOST}:{self.port}", topic, timeout_s=30, config=config)


def _start(front_port: int, proxy_port: int = 0) -> tuple[EmbeddedBroker, SaslProxy]:
    """Tansu advertising `front_port`, and the SASL proxy before it (on `proxy_port`, 0: any)."""
    broker = EmbeddedBroker(advertised_port=front_port).start()
    try:
        return broker, SaslProxy(broker.port, users={USER: PASSWORD}, tokens={TOKEN}, port=proxy_port).start()
    except Exception:
        broker.stop()
        raise


@pytest.fixture(scope="module")
def sasl() -> Iterator[SaslCluster]:
    port = free_port()
    broker, proxy = _start(port, proxy_port=port)
    try:
        yield SaslCluster(broker, proxy, port, "SASL_PLAINTEXT")
    finally:
        proxy.stop()
        broker.stop()


@pytest.fixture(scope="module")
def sasl_ssl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslCluster]:
    require_stunnel()
    directory: Path = tmp_path_factory.mktemp("sasl-ssl")
    pki = make_pki(directory)
    tls_port = free_port()
    broker, proxy = _start(tls_port)
    front = None
    try:
        front = Stunnel(directory, proxy.port, pki.server_cert_pem, pki.server_key_pem, port=tls_port).start()
        yield SaslCluster(broker, proxy, tls_port, "SASL_SSL", pki)
    finally:
        if front is not None:
            front.stop()
        proxy.stop()
        broker.stop()


def _topic() -> str:
    return f"sasl-{uuid.uuid4().hex[:10]}"


def _produce_and_check(cluster: SaslCluster, config: dict[str, Any], count: int = 200) -> None:
    topic = _topic()
    with Producer(config) as producer:
        futures = [producer.send(topic, b"v-%d" % i, key=b"k-%d" % i) for i in range(count)]
        producer.flush(30)
        for future in futures:
            future.result(timeout=10)
    records = cluster.read_back(topic)
    assert sorted(r.value for r in records if r.value is not None) == sorted(b"v-%d" % i for i in range(count))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_password_mechanisms_produce(sasl: SaslCluster, mechanism: str) -> None:
    before = len(sasl.proxy.successes())
    _produce_and_check(sasl, sasl.config(mechanism))
    ours = [e for e in sasl.proxy.successes()[before:] if e.mechanism == mechanism]
    assert ours and all(e.principal == USER for e in ours)


def test_oauthbearer_with_token_callback(sasl: SaslCluster) -> None:
    calls: list[str] = []

    def oauth_cb(oauth_config: str) -> tuple[str, float, str, dict[str, str]]:
        calls.append(oauth_config)
        return TOKEN, time.time() + 3600, "alice", {"tenant": "t1"}

    before = len(sasl.proxy.successes())
    config = sasl.config("OAUTHBEARER", oauth_cb=oauth_cb, **{"sasl.oauthbearer.config": "scope=kafka"})
    _produce_and_check(sasl, config)
    assert calls and set(calls) == {"scope=kafka"}
    assert len(calls) == 1  # the token is cached across connections (bootstrap, then the broker)
    assert any(e.mechanism == "OAUTHBEARER" for e in sasl.proxy.successes()[before:])
    assert {"tenant": "t1"} in sasl.proxy.oauth_extensions


def _fails_fast(config: dict[str, Any]) -> AuthenticationError:
    error: AuthenticationError = fails_fast(config, AuthenticationError, 5)
    return error


@pytest.mark.parametrize("mechanism, message", [
    ("PLAIN", "Invalid username or password"),
    ("SCRAM-SHA-256", "invalid credentials with SASL mechanism SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "invalid credentials with SASL mechanism SCRAM-SHA-512"),
])
def test_wrong_password_fails_fast_with_the_server_message(sasl: SaslCluster, mechanism: str,
                                                          message: str) -> None:
    error = _fails_fast(sasl.config(mechanism, **{"sasl.password": "wrong-password"}))
    assert message in str(error) and "SASL_AUTHENTICATION_FAILED" in str(error)
    assert "wrong-password" not in str(error)


def test_no_tight_retry_loop_after_a_failure(sasl: SaslCluster) -> None:
    before = len(sasl.proxy.failures())
    producer = Producer(sasl.config("PLAIN", **{"sasl.password": "wrong", "max.block.ms": 30_000}))
    try:
        with pytest.raises(AuthenticationError):
            producer.send(_topic(), b"never")
        time.sleep(1.5)  # the sender thread keeps going with reconnect backoff (50 ms doubling up to 1 s)
    finally:
        producer.close(1)
    attempts = len(sasl.proxy.failures()) - before
    assert 1 <= attempts <= 8


def test_rejected_token(sasl: SaslCluster) -> None:
    error = _fails_fast(sasl.config("OAUTHBEARER", oauth_cb=lambda _: ("not-the-token", time.time() + 60)))
    assert "invalid_token" in str(error) and "OAUTHBEARER" in str(error)
    assert "not-the-token" not in str(error)


def test_mechanism_not_enabled(sasl: SaslCluster) -> None:
    sasl.proxy.mechanisms = ("SCRAM-SHA-512",)
    try:
        error = _fails_fast(sasl.config("PLAIN"))
    finally:
        sasl.proxy.mechanisms = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
    assert "UNSUPPORTED_SASL_MECHANISM" in str(error) and "SCRAM-SHA-512" in str(error)


def test_revoked_credentials_fail_queued_sends(sasl: SaslCluster) -> None:
    """Connected, then the password changes and the broker drops connections: what is queued fails with
    AuthenticationError instead of waiting for delivery.timeout.ms."""
    topic = _topic()
    producer = Producer(sasl.config("SCRAM-SHA-256", **{"linger.ms": 0}))
    try:
        producer.send(topic, b"first").result(timeout=10)
        sasl.proxy.users[USER] = "rotated"
        sasl.proxy.kick()
        future = producer.send(topic, b"second")  # metadata is known: queued at once
        with pytest.raises(AuthenticationError, match="SCRAM-SHA-256"):
            future.result(timeout=10)
        sasl.proxy.users[USER] = PASSWORD  # fixed on the server: the producer recovers
        deadline = time.monotonic() + 10
        while True:
            try:
                producer.send(topic, b"third").result(timeout=10)
                break
            except AuthenticationError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
    finally:
        sasl.proxy.users[USER] = PASSWORD
        producer.close(5)


def test_reauthenticates_before_the_session_lifetime_ends(sasl: SaslCluster) -> None:
    """The broker's SaslAuthenticate names a session lifetime (connections.max.reauth.ms); the client opens a new,
    authenticated connection before it ends instead of sending on an expired session (which the broker closes)."""
    sasl.proxy.session_lifetime_ms = 1000
    topic = _topic()
    try:
        with Producer(sasl.config("SCRAM-SHA-512", **{"linger.ms": 0})) as producer:
            producer.send(topic, b"a").result(timeout=10)
            before = len(sasl.proxy.successes())
            time.sleep(1.2)
            producer.send(topic, b"b").result(timeout=10)
            assert len(sasl.proxy.successes()) > before  # a new session for the second send
    finally:
        sasl.proxy.session_lifetime_ms = 0
    assert sasl.proxy.expired_sessions_closed == 0
    assert sorted(r.value for r in sasl.read_back(topic)) == [b"a", b"b"]


def test_sasl_ssl_scram(sasl_ssl: SaslCluster) -> None:
    before = len(sasl_ssl.proxy.successes())
    _produce_and_check(sasl_ssl, sasl_ssl.config("SCRAM-SHA-512"))
    assert any(e.mechanism == "SCRAM-SHA-512" for e in sasl_ssl.proxy.successes()[before:])
