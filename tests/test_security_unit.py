"""Security without a network: the SCRAM client against RFC 5802 / RFC 7677 test vectors and against scramp's server,
PLAIN and OAUTHBEARER messages, SaslSession error mapping, the security config keys, secrets kept out of reprs, and
an authentication failure surfacing through the Producer (fake cluster)."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
import scramp

from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.adapters.security import (
    OAuthBearerMechanism,
    OAuthTokenSource,
    PlainMechanism,
    SaslSession,
    ScramClient,
    Security,
    build_ssl_context,
)
from cykafka.config import ProducerConfig
from cykafka.errors import AuthenticationError, ConfigError
from cykafka.ports import Ports
from cykafka.producer import Producer
from cykafka.protocol import Request
from cykafka.protocol.apis import SASL_AUTHENTICATE, SASL_HANDSHAKE

# --- SCRAM: RFC test vectors ---------------------------------------------------------------------------------------


def test_scram_sha1_rfc5802_vector() -> None:
    client = ScramClient("SCRAM-SHA-1", "user", "pencil", hash_name="sha1", nonce="fyko+d2lbbFgONRv9qkxdawL")
    assert client.initial_response() == b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
    final = client.evaluate(b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
    assert final == b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    assert client.evaluate(b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=") is None


def test_scram_sha256_rfc7677_vector() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.initial_response() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.evaluate(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert client.evaluate(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None


def test_scram_rejects_wrong_server_signature() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    client.initial_response()
    client.evaluate(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(AuthenticationError, match="signature"):
        client.evaluate(b"v=" + base64.b64encode(b"x" * 32))


@pytest.mark.parametrize("server_first, match", [
    (b"r=someoneelse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),
    (b"r=abcdef+srv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1024", "iteration"),
    (b"r=abcdef+srv,s=W22ZaJ0SNY7soEsUEjb6gQ==", "lacks"),
    (b"m=ext,r=abcdef+srv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "extension"),
    (b"e=unknown-user", "unknown-user"),
    (b"garbage", "malformed"),
])
def test_scram_rejects_bad_server_first(server_first: bytes, match: str) -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abcdef")
    client.initial_response()
    with pytest.raises(AuthenticationError, match=match):
        client.evaluate(server_first)


def test_scram_escapes_username() -> None:
    client = ScramClient("SCRAM-SHA-256", "a=b,c", "pw", nonce="n0nce")
    assert client.initial_response() == b"n,,n=a=3Db=2Cc,r=n0nce"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("password, ok", [("s3cr3t-påss", True), ("wrong", False)])
def test_scram_against_scramp_server(mechanism: str, password: str, ok: bool) -> None:
    server_mechanism = scramp.ScramMechanism(mechanism)
    auth_info = server_mechanism.make_auth_info("s3cr3t-påss", iteration_count=4096)
    server = server_mechanism.make_server(lambda username: auth_info)
    client = ScramClient(mechanism, "alice", password)
    server.set_client_first(client.initial_response().decode())
    final = client.evaluate(server.get_server_first().encode())
    assert final is not None
    if ok:
        server.set_client_final(final.decode())
        assert client.evaluate(server.get_server_final().encode()) is None
    else:
        with pytest.raises(scramp.ScramException):
            server.set_client_final(final.decode())


# --- PLAIN, OAUTHBEARER, the session -------------------------------------------------------------------------------


def test_plain_message() -> None:
    mech = PlainMechanism("alice", "pw")
    assert mech.initial_response() == b"\0alice\0pw"
    assert mech.evaluate(b"") is None
    assert "pw" not in repr(mech)


def test_oauthbearer_initial_response_and_token_cache() -> None:
    calls: list[str] = []
    now_s = [1000.0]

    def oauth_cb(oauth_config: str) -> tuple[str, float]:
        calls.append(oauth_config)
        return f"tok{len(calls)}", now_s[0] + 100

    source = OAuthTokenSource(oauth_cb, "scope=x", wall_s=lambda: now_s[0])
    assert OAuthBearerMechanism(source).initial_response() == b"n,,\x01auth=Bearer tok1\x01\x01"
    now_s[0] += 79  # under 80% of the lifetime: cached
    assert OAuthBearerMechanism(source).initial_response() == b"n,,\x01auth=Bearer tok1\x01\x01"
    now_s[0] += 2
    assert OAuthBearerMechanism(source).initial_response() == b"n,,\x01auth=Bearer tok2\x01\x01"
    assert calls == ["scope=x", "scope=x"]


def test_oauthbearer_extensions_and_server_error() -> None:
    source = OAuthTokenSource(lambda _: ("abc.def", time.time() + 60, "alice", {"tenant": "t1"}), "")
    mech = OAuthBearerMechanism(source)
    assert mech.initial_response() == b"n,,\x01auth=Bearer abc.def\x01tenant=t1\x01\x01"
    assert mech.evaluate(b'{"status":"invalid_token"}') == b"\x01"
    session = SaslSession(mech, "node 0")
    with pytest.raises(AuthenticationError, match="invalid_token") as info:
        session.on_response({"error_code": 0, "mechanisms": ["OAUTHBEARER"]})
        session.on_response({"error_code": 58, "error_message": "token rejected", "auth_bytes": b"",
                             "session_lifetime_ms": 0})
    assert "token rejected" in str(info.value) and not info.value.retriable


@pytest.mark.parametrize("result, match", [
    ("just-a-token", "must return"),
    (("has space", 1.0), "b64token"),
    (("tok", "soon"), "expiry_time_s"),
    (("tok", 1.0, None, {"auth": "x"}), "extensions"),
])
def test_oauthbearer_rejects_bad_callback_results(result: object, match: str) -> None:
    source = OAuthTokenSource(lambda _: result, "")
    with pytest.raises(AuthenticationError, match=match) as info:
        source.token()
    assert "has space" not in str(info.value)


def test_oauth_cb_exception_is_authentication_error() -> None:
    def broken(_: str) -> tuple[str, float]:
        raise RuntimeError("idp down")

    with pytest.raises(AuthenticationError, match="idp down"):
        OAuthTokenSource(broken, "").token()


def test_session_maps_handshake_and_authenticate_errors() -> None:
    session = SaslSession(PlainMechanism("alice", "hunter2"), "node 1 (h:1)")
    assert session.handshake_request() == Request(SASL_HANDSHAKE.key, {"mechanism": "PLAIN"})
    with pytest.raises(AuthenticationError, match=r"UNSUPPORTED_SASL_MECHANISM.*enabled: SCRAM-SHA-512"):
        session.on_response({"error_code": 33, "mechanisms": ["SCRAM-SHA-512"]})
    request = session.on_response({"error_code": 0, "mechanisms": ["PLAIN"]})
    assert request is not None and request.api_key == SASL_AUTHENTICATE.key and "hunter2" not in repr(request)
    with pytest.raises(AuthenticationError, match="Invalid username or password") as info:
        session.on_response({"error_code": 58, "error_message": "Invalid username or password", "auth_bytes": b"",
                             "session_lifetime_ms": 0})
    assert info.value.code == 58 and "hunter2" not in str(info.value)
    assert session.on_response({"error_code": 0, "error_message": None, "auth_bytes": b"",
                                "session_lifetime_ms": 3_600_000}) is None
    assert session.session_lifetime_ms == 3_600_000


# --- config --------------------------------------------------------------------------------------------------------

BASE = {"bootstrap.servers": "127.0.0.1:9092"}


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "ssl", "Sasl_Plaintext", "SASL_SSL"])
def test_security_protocol_case_insensitive(protocol: str) -> None:
    extra: dict[str, object] = {}
    if "sasl" in protocol.lower():
        extra = {"sasl.mechanism": "plain", "sasl.username": "u", "sasl.password": "p"}
    cfg = ProducerConfig.parse({**BASE, "security.protocol": protocol, **extra})
    assert cfg.security_protocol == protocol.lower()


@pytest.mark.parametrize("config, match", [
    ({"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "p"},
     r"sasl.mechanism is required.*GSSAPI.*PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, r"GSSAPI.*not supported.*accepted: PLAIN"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "DIGEST-MD5"}, r"sasl.mechanism must be one of"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.password": "p"}, r"needs sasl.username"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "u"},
     r"needs sasl.password"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, r"needs oauth_cb"),
    ({"security.protocol": "TLS"}, r"security.protocol must be one of plaintext, ssl, sasl_plaintext, sasl_ssl"),
    ({"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, r"ssl.ca.location: '/nonexistent"),
    ({"security.protocol": "SSL", "ssl.certificate.location": "/nonexistent/c.pem"}, r"ssl.certificate.location"),
    ({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "http"},
     r"ssl.endpoint.identification.algorithm must be 'https'"),
    ({"sasl.mechanism": "PLAIN", "sasl.username": "u"}, r"sasl.mechanism, sasl.username set but security.protocol "
                                                        r"is PLAINTEXT"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p",
      "ssl.ca.location": __file__}, r"ssl.ca.location set but security.protocol is SASL_PLAINTEXT"),
])
def test_security_config_errors(config: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ProducerConfig.parse({**BASE, **config})


def test_ssl_key_without_certificate(tmp_path: Path) -> None:
    key = tmp_path / "k.pem"
    key.write_text("x")
    with pytest.raises(ConfigError, match=r"ssl.key.location is set but ssl.certificate.location is not"):
        ProducerConfig.parse({**BASE, "security.protocol": "SSL", "ssl.key.location": str(key)})


def test_unloadable_ca_file_names_the_key(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate")
    cfg = ProducerConfig.parse({**BASE, "security.protocol": "SSL", "ssl.ca.location": str(ca)})
    with pytest.raises(ConfigError, match=r"ssl.ca.location"):
        build_ssl_context(cfg.security_settings())
    with pytest.raises(ConfigError, match=r"ssl.ca.location"):
        Producer(BASE, security_protocol="SSL", ssl_ca_location=str(ca), ports=Ports(start_sender=False))


def test_hostname_verification_switches() -> None:
    on = build_ssl_context(ProducerConfig.parse({**BASE, "security.protocol": "SSL"}).security_settings())
    assert on.check_hostname
    for extra in ({"ssl.endpoint.identification.algorithm": ""}, {"ssl.endpoint.identification.algorithm": "none"},
                  {"ssl.check.hostname": False}):
        ctx = build_ssl_context(ProducerConfig.parse({**BASE, "security.protocol": "SSL", **extra}).security_settings())
        assert not ctx.check_hostname


def test_secrets_hidden_from_repr_and_errors(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    cfg = ProducerConfig.parse({**BASE, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                "sasl.username": "alice", "sasl.password": "hunter2-secret",
                                "ssl.certificate.location": str(cert), "ssl.key.password": "keypass-secret"})
    text = repr(cfg) + str(cfg) + repr(cfg.connection_settings())  # the adapters' settings hide them too
    assert "hunter2-secret" not in text and "keypass-secret" not in text
    assert "sasl_password='[hidden]'" in text and "sasl_username='alice'" in text
    assert "sasl_oauthbearer_config=''" in text  # empty: nothing to hide
    with pytest.raises(ConfigError) as info:
        ProducerConfig.parse({**BASE, "security.protocol": "SASL_SSL", "sasl.password": b"hunter2-secret"})
    assert "hunter2" not in str(info.value)
    with pytest.raises(ConfigError) as info:
        build_ssl_context(cfg.security_settings())
    assert "keypass-secret" not in str(info.value) and "ssl.key.password" in str(info.value)


def test_oauth_cb_as_keyword_and_security_factory() -> None:
    cfg = ProducerConfig.parse(BASE, security_protocol="sasl_plaintext", sasl_mechanism="oauthbearer",
                               oauth_cb=lambda _: ("t", time.time() + 60))
    assert cfg.sasl_mechanism == "OAUTHBEARER" and callable(cfg.oauth_cb)
    session = Security(cfg.security_settings()).sasl_session("node 0")
    assert isinstance(session.mechanism, OAuthBearerMechanism)
    assert Security(cfg.security_settings()).ssl_context is None
    assert ProducerConfig.parse({**BASE, "sasl.mechanisms": "PLAIN", "security.protocol": "SASL_SSL",
                                 "sasl.username": "u", "sasl.password": ""}).sasl_mechanism == "PLAIN"


# --- surfacing through the Producer ---------------------------------------------------------------------------------


def test_authentication_failure_fails_metadata_waits_and_queued_sends() -> None:
    clock = ManualClock()
    cluster = FakeCluster(clock, num_brokers=1)
    cluster.create_topic("t", 1)
    producer = Producer(BASE, ports=Ports(transport=cluster, clock=clock, start_sender=False))
    producer._metadata.add_topic("t", clock.monotonic_ms())
    for _ in range(4):  # connect, fetch metadata
        producer.sender.run_once()
    future = producer.send("t", b"v", partition=0)
    cluster.auth_failure = AuthenticationError("SASL PLAIN authentication failed: bad password")
    producer.sender.run_once()
    with pytest.raises(AuthenticationError, match="bad password"):
        future.result(timeout=1)
    with pytest.raises(AuthenticationError, match="bad password"):
        producer.send("other-topic", b"v")  # waits on metadata: fails at once
    cluster.auth_failure = None  # authenticated again: sends go through
    late = producer.send("t", b"w", partition=0)
    clock.advance(10)
    for _ in range(3):
        producer.sender.run_once()
    assert late.result(timeout=1).offset == 0
    producer.close(0)
