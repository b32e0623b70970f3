"""security.protocol=SSL for real: stunnel4 terminates TLS (a CA and server certificates made by the test) in front
of Tansu, which advertises the stunnel port so every connection after bootstrap stays TLS. Records produced through
cykafka are read back by librdkafka through the same TLS listener; a wrong CA and a hostname mismatch fail fast with
SslAuthenticationError."""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from security_peers import CLIENT_KEY_PASSWORD, HOST, Pki, Stunnel, fails_fast, make_pki, require_stunnel

from cykafka.adapters.socket_transport import SocketTransport, _Connection
from cykafka.broker import EmbeddedBroker, free_port
from cykafka.errors import ConfigError, KafkaError, KafkaTimeoutError, SslAuthenticationError
from cykafka.ports import ConnectionSettings
from cykafka.producer import Producer
from cykafka.verify import read_back

pytestmark = pytest.mark.broker


@dataclass
class TlsCluster:
    pki: Pki
    broker: EmbeddedBroker
    tls_port: int  # stunnel with a certificate for 127.0.0.1 / localhost; what Tansu advertises
    other_name_port: int  # stunnel with a certificate for other.example only
    mutual_port: int  # stunnel that requires a client certificate signed by the CA

    def config(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": f"{HOST}:{self.tls_port}", "security.protocol": "SSL",
                "ssl.ca.location": str(self.pki.ca_pem), "linger.ms": 5, **extra}

    def read_back(self, topic: str) -> list[Any]:
        return read_back(f"{HOST}:{self.tls_port}", topic, timeout_s=30,
                         config={"security.protocol": "SSL", "ssl.ca.location": str(self.pki.ca_pem)})


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsCluster]:
    require_stunnel()
    directory = tmp_path_factory.mktemp("tls")
    pki = make_pki(directory)
    tls_port = free_port()
    broker = EmbeddedBroker(advertised_port=tls_port).start()
    fronts: list[Stunnel] = []
    try:
        fronts.append(Stunnel(directory, broker.port, pki.server_cert_pem, pki.server_key_pem, port=tls_port).start())
        fronts.append(Stunnel(directory, broker.port, pki.other_name_cert_pem, pki.other_name_key_pem).start())
        fronts.append(Stunnel(directory, broker.port, pki.server_cert_pem, pki.server_key_pem,
                              client_ca=pki.ca_pem).start())
        yield TlsCluster(pki, broker, tls_port, fronts[1].port, fronts[2].port)
    finally:
        for front in fronts:
            front.stop()
        broker.stop()


def _topic() -> str:
    return f"tls-{uuid.uuid4().hex[:10]}"


def test_produce_over_tls_and_read_back(tls: TlsCluster) -> None:
    topic = _topic()
    with Producer(tls.config()) as producer:
        futures = [producer.send(topic, b"value-%d" % i, key=b"key-%d" % (i % 7)) for i in range(500)]
        producer.flush(30)
        offsets = [f.result(timeout=10).offset for f in futures]
    assert len(offsets) == 500
    records = tls.read_back(topic)
    assert sorted(r.value for r in records if r.value is not None) == sorted(b"value-%d" % i for i in range(500))


def test_large_batches_over_tls(tls: TlsCluster) -> None:
    """Requests far larger than a TLS record and than the socket buffer: partial and retried TLS writes."""
    topic = _topic()
    payloads = [os.urandom(300_000) for _ in range(6)] + [os.urandom(2000) for _ in range(3000)]
    with Producer(tls.config(**{"batch.size": 1_000_000, "max.request.size": 4_000_000, "linger.ms": 50,
                                "compression.type": "none"})) as producer:
        futures = [producer.send(topic, p, partition=i % 4) for i, p in enumerate(payloads)]
        producer.flush(60)
        for future in futures:
            future.result(timeout=10)
    records = tls.read_back(topic)
    assert sorted(r.value for r in records if r.value is not None) == sorted(payloads)


def test_hostname_verification_off_reaches_the_broker(tls: TlsCluster) -> None:
    config = tls.config(**{"ssl.endpoint.identification.algorithm": ""})
    config["bootstrap.servers"] = f"{HOST}:{tls.other_name_port}"
    with Producer(config) as producer:
        assert len(producer.partitions_for(_topic())) == 4


def _fails_fast(config: dict[str, Any]) -> SslAuthenticationError:
    error: SslAuthenticationError = fails_fast(config, SslAuthenticationError, 10)
    return error


def test_wrong_ca_fails_with_a_clear_error(tls: TlsCluster) -> None:
    error = _fails_fast(tls.config(**{"ssl.ca.location": str(tls.pki.other_ca_pem)}))
    assert "certificate verify failed" in str(error) and "ssl.ca.location" in str(error)


def test_hostname_mismatch_fails_with_a_clear_error(tls: TlsCluster) -> None:
    config = tls.config()
    config["bootstrap.servers"] = f"{HOST}:{tls.other_name_port}"
    error = _fails_fast(config)
    assert "certificate verify failed" in str(error)
    assert "127.0.0.1" in str(error) and "ssl.endpoint.identification.algorithm" in str(error)


def test_tls_handshake_that_stalls_hits_the_setup_timeout(tls: TlsCluster, caplog: pytest.LogCaptureFixture) -> None:
    config = tls.config()
    config["bootstrap.servers"] = tls.broker.bootstrap_servers  # Tansu itself: no TLS there, the handshake stalls
    producer = Producer({**config, "max.block.ms": 2500, "socket.connection.setup.timeout.ms": 500,
                         "socket.connection.setup.timeout.max.ms": 500})
    try:
        with caplog.at_level("INFO", logger="cykafka"), pytest.raises(KafkaTimeoutError):
            producer.send(_topic(), b"never")
    finally:
        producer.close(1)
    assert "not set up within socket.connection.setup.timeout.ms" in caplog.text


def test_mutual_tls_with_an_encrypted_client_key(tls: TlsCluster) -> None:
    config = tls.config(**{"ssl.certificate.location": str(tls.pki.client_cert_pem),
                           "ssl.key.location": str(tls.pki.client_key_pem), "ssl.key.password": CLIENT_KEY_PASSWORD})
    config["bootstrap.servers"] = f"{HOST}:{tls.mutual_port}"
    with Producer(config) as producer:
        assert len(producer.partitions_for(_topic())) == 4


def test_mutual_tls_without_a_client_certificate_fails(tls: TlsCluster) -> None:
    config = tls.config()
    config["bootstrap.servers"] = f"{HOST}:{tls.mutual_port}"
    error = _fails_fast(config)
    assert "certificate" in str(error).lower()


def test_wrong_client_key_password_is_a_config_error(tls: TlsCluster) -> None:
    with pytest.raises(ConfigError, match=r"ssl.key.password") as info:
        Producer(tls.config(**{"ssl.certificate.location": str(tls.pki.client_cert_pem),
                               "ssl.key.location": str(tls.pki.client_key_pem), "ssl.key.password": "nope"}))
    assert "nope" not in str(info.value)


def test_no_ca_file_uses_system_cas_and_rejects_the_test_ca(tls: TlsCluster, tmp_path: Path) -> None:
    config = tls.config()
    del config["ssl.ca.location"]
    error = _fails_fast(config)
    assert "certificate verify failed" in str(error)


class _ClosingTlsSocket:
    """A TLS socket whose peer wrote one answer and closed: a read gives the answer, the next one the close."""

    def __init__(self, *reads: bytes) -> None:
        self.reads = list(reads)

    def recv_into(self, buffer: memoryview) -> int:
        data = self.reads.pop(0)
        buffer[:len(data)] = data
        return len(data)

    def pending(self) -> int:
        return 0


def test_an_answer_read_with_the_peers_close_on_a_tls_connection_is_handled_before_the_close() -> None:
    """A TLS read goes on after a short record; finding the peer's close there dropped what it had read, so a broker
    that wrote its SASL failure and closed at once was seen as a lost connection and tried again (CI: the wrong
    password reported after 5.05 s, past its request timeout)."""
    transport = SocketTransport(ConnectionSettings(("127.0.0.1:1",)))
    try:
        conn = _Connection(1, "127.0.0.1", 1, tls=True)
        conn.sock = _ClosingTlsSocket(struct.pack(">ii", 8, 7) + b"body", b"")  # type: ignore[assignment]
        events: list[tuple[str, object]] = []
        transport._on_frame = lambda c, frame, now_ms: events.append(("answer", frame))  # type: ignore[method-assign]

        def disconnect(c: _Connection, now_ms: int, error: KafkaError, backoff: bool = True) -> None:
            events.append(("closed", str(error)))
            c.sock = None

        transport._disconnect = disconnect  # type: ignore[method-assign]
        transport._read(conn, 0)
        assert events == [("answer", struct.pack(">i", 7) + b"body"),
                          ("closed", "node 1 (127.0.0.1:1) closed the connection")]
    finally:
        transport.close()
