"""Test peers for the security tests, all on 127.0.0.1 and stopped by their own pid / threads:

- `make_pki`: a CA, a server certificate for given names, and an unrelated CA (the `cryptography` package);
- `Stunnel`: Debian's stunnel4 terminating TLS in front of a backend port;
- `SaslProxy`: a small Kafka SASL front. It answers ApiVersions (the upstream broker's ranges plus SaslHandshake v0-1
  and SaslAuthenticate v0-2), SaslHandshake v1 and SaslAuthenticate for PLAIN, SCRAM-SHA-256/512 (server side from
  PyPI `scramp`, an implementation independent of the client's) and OAUTHBEARER, then splices the connection's
  remaining bytes to the real broker (Tansu cannot do SASL itself). Failures answer SASL_AUTHENTICATION_FAILED with
  Kafka's own messages and close the connection, as a broker does.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import selectors
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import scramp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cykafka.broker import _die_with_parent, _recv_exact, free_port
from cykafka.errors import ProtocolError
from cykafka.protocol import decode_request, decode_response, encode_request, encode_response
from cykafka.protocol.apis import API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE

HOST = "127.0.0.1"

# --- certificates ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca_pem: Path  # trust this
    server_cert_pem: Path  # for 127.0.0.1 and localhost
    server_key_pem: Path
    other_name_cert_pem: Path  # signed by the CA, names only other.example
    other_name_key_pem: Path
    other_ca_pem: Path  # a CA that signed nothing here
    client_cert_pem: Path  # mutual TLS: signed by the CA
    client_key_pem: Path  # encrypted with CLIENT_KEY_PASSWORD


CLIENT_KEY_PASSWORD = "client-key-pw"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path, password: str | None = None) -> Path:
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password is not None
                  else serialization.NoEncryption())
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
    return path


def _write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _make_ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(_name(common_name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False),
                           critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def _make_leaf(ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, dns: list[str],
               ips: list[str], usage: x509.ObjectIdentifier = x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
               ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    cert = (x509.CertificateBuilder().subject_name(_name(dns[0])).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def make_pki(directory: Path) -> Pki:
    ca_key, ca_cert = _make_ca("cykafka test CA")
    server_key, server_cert = _make_leaf(ca_key, ca_cert, ["localhost"], [HOST])
    other_key, other_cert = _make_leaf(ca_key, ca_cert, ["other.example"], [])
    _, other_ca = _make_ca("unrelated CA")
    client_key, client_cert = _make_leaf(ca_key, ca_cert, ["cykafka-client"], [],
                                         x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH)
    return Pki(
        ca_pem=_write_cert(ca_cert, directory / "ca.pem"),
        server_cert_pem=_write_cert(server_cert, directory / "server.pem"),
        server_key_pem=_write_key(server_key, directory / "server.key"),
        other_name_cert_pem=_write_cert(other_cert, directory / "other-name.pem"),
        other_name_key_pem=_write_key(other_key, directory / "other-name.key"),
        other_ca_pem=_write_cert(other_ca, directory / "other-ca.pem"),
        client_cert_pem=_write_cert(client_cert, directory / "client.pem"),
        client_key_pem=_write_key(client_key, directory / "client.key", CLIENT_KEY_PASSWORD),
    )


# --- stunnel -----------------------------------------------------------------------------------------------------


def stunnel_binary() -> str | None:
    return shutil.which("stunnel4") or shutil.which("stunnel")


def _wait_for_port(port: int, deadline_s: float, process: subprocess.Popen[bytes] | None = None) -> None:
    while time.monotonic() < deadline_s:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with code {process.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {HOST}:{port}")


class Stunnel:
    """stunnel4 in server mode: TLS on `port` (a free one unless given), plaintext to `backend_port`. With
    `client_ca`, clients must present a certificate signed by it (mutual TLS)."""

    def __init__(self, directory: Path, backend_port: int, cert: Path, key: Path, port: int | None = None,
                 client_ca: Path | None = None) -> None:
        self.port = port if port is not None else free_port()
        self.client_ca = client_ca
        self.directory = directory
        self.backend_port = backend_port
        self.cert, self.key = cert, key
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 15.0) -> Stunnel:
        binary = stunnel_binary()
        assert binary is not None
        conf = self.directory / f"stunnel-{self.port}.conf"
        self.log_path = self.directory / f"stunnel-{self.port}.log"
        conf.write_text(
            "foreground = yes\n"
            "pid =\n"
            "syslog = no\n"
            f"output = {self.log_path}\n"
            "debug = 5\n"
            "[kafka]\n"
            f"accept = {HOST}:{self.port}\n"
            f"connect = {HOST}:{self.backend_port}\n"
            f"cert = {self.cert}\n"
            f"key = {self.key}\n"
            + (f"requireCert = yes\nverifyChain = yes\nCAfile = {self.client_ca}\n" if self.client_ca else ""))
        self._process = subprocess.Popen([binary, str(conf)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        try:
            _wait_for_port(self.port, time.monotonic() + timeout_s, self._process)
        except Exception:
            self.stop()
            log = self.log_path.read_text() if self.log_path.exists() else ""
            raise RuntimeError(f"stunnel did not start: {log[-2000:]}") from None
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


# --- the SASL front ----------------------------------------------------------------------------------------------

FAILED = 58  # SASL_AUTHENTICATION_FAILED
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
_IO_TIMEOUT_S = 10.0
_MAX_CONNECTIONS = 64


def _send_response(sock: socket.socket, api_key: int, version: int, correlation_id: int,
                   body: dict[str, Any]) -> None:
    sock.sendall(encode_response(api_key, version, correlation_id, body))


def upstream_api_versions(port: int) -> list[dict[str, Any]]:
    """The upstream broker's ApiVersions ranges ({api_key, min_version, max_version} each)."""
    with socket.create_connection((HOST, port), timeout=_IO_TIMEOUT_S) as s:
        s.sendall(encode_request(API_VERSIONS.key, 0, 1, "sasl-proxy", {}))
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        _, response = decode_response(API_VERSIONS.key, 0, _recv_exact(s, size))
    assert response["error_code"] == 0
    return list(response["api_keys"])


@dataclass
class SaslEvent:
    mechanism: str
    principal: str
    ok: bool
    detail: str = ""


@dataclass
class SaslProxy:
    """Kafka SASL in front of the broker at 127.0.0.1:upstream_port. `users`: name -> password (PLAIN and SCRAM);
    `tokens`: bearer tokens accepted by OAUTHBEARER. Attributes may change between connections."""

    upstream_port: int
    users: dict[str, str] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
    session_lifetime_ms: int = 0
    port: int = 0
    events: list[SaslEvent] = field(default_factory=list)
    expired_sessions_closed: int = 0  # requests after session_lifetime_ms: closed, as a Kafka broker does (KIP-368)
    oauth_extensions: list[dict[str, str]] = field(default_factory=list)

    def start(self) -> SaslProxy:
        self._api_keys = {r["api_key"]: r for r in upstream_api_versions(self.upstream_port)}
        for described in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            self._api_keys[described.key] = {"api_key": described.key, "min_version": described.valid[0],
                                             "max_version": described.valid[1]}
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((HOST, self.port))
        self._listener.listen(16)
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept_loop, name=f"sasl-proxy-{self.port}", daemon=True)
        self._acceptor.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._acceptor.join(5)
        self.kick()
        for thread in self._threads:
            thread.join(5)
        self._listener.close()

    def kick(self) -> None:
        """Closes every client and upstream connection (a broker restart, as clients see it)."""
        with self._lock:
            sockets = list(self._sockets)
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def failures(self) -> list[SaslEvent]:
        return [e for e in self.events if not e.ok]

    def successes(self) -> list[SaslEvent]:
        return [e for e in self.events if e.ok]

    # -- per connection ------------------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._threads = [t for t in self._threads if t.is_alive()]
            if len(self._threads) >= _MAX_CONNECTIONS:
                client.close()
                continue
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            self._threads.append(thread)
            thread.start()

    @contextlib.contextmanager
    def _tracked(self, sock: socket.socket) -> Iterator[socket.socket]:
        with self._lock:
            self._sockets.add(sock)
        try:
            yield sock
        finally:
            with self._lock:
                self._sockets.discard(sock)
            sock.close()

    def _serve(self, client: socket.socket) -> None:
        with self._tracked(client):
            client.settimeout(_IO_TIMEOUT_S)
            try:
                if self._authenticate(client):
                    lifetime_ms = self.session_lifetime_ms
                    self._splice(client, time.monotonic() + lifetime_ms / 1000 if lifetime_ms else None)
            except (OSError, ConnectionError, ProtocolError):
                pass

    def _read_request(self, client: socket.socket) -> tuple[int, int, int, bytes]:
        size = struct.unpack(">i", _recv_exact(client, 4))[0]
        if not 8 <= size <= 1 << 20:
            raise ConnectionError(f"request of {size} bytes before authentication")
        frame = _recv_exact(client, size)
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
        return api_key, version, correlation_id, frame

    def _authenticate(self, client: socket.socket) -> bool:
        mechanism: str | None = None
        server: Any = None
        while not self._stopping.is_set():
            api_key, version, correlation_id, frame = self._read_request(client)
            if api_key == API_VERSIONS.key:
                self._answer_api_versions(client, version, correlation_id, frame)
                continue
            if api_key == SASL_HANDSHAKE.key and mechanism is None and version == 1:
                _, request = decode_request(frame)
                mechanisms = list(self.mechanisms)
                if request["mechanism"] not in self.mechanisms:
                    _send_response(client, api_key, version, correlation_id,
                                   {"error_code": UNSUPPORTED_SASL_MECHANISM, "mechanisms": mechanisms})
                    return False
                mechanism = request["mechanism"]
                server = _MechanismServer(self, mechanism)
                _send_response(client, api_key, version, correlation_id, {"error_code": 0, "mechanisms": mechanisms})
                continue
            if api_key == SASL_AUTHENTICATE.key and server is not None:
                _, request = decode_request(frame)
                reply, done, error = server.step(request["auth_bytes"])
                if error is not None:
                    self.events.append(SaslEvent(server.mechanism, server.principal, False, error))
                    _send_response(client, api_key, version, correlation_id,
                                   {"error_code": FAILED, "error_message": error})
                    return False
                lifetime_ms = self.session_lifetime_ms if done else 0
                _send_response(client, api_key, version, correlation_id,
                               {"error_code": 0, "auth_bytes": reply, "session_lifetime_ms": lifetime_ms})
                if done:
                    self.events.append(SaslEvent(server.mechanism, server.principal, True))
                    return True
                continue
            return False  # anything else before authentication: a broker closes the connection
        return False

    def _answer_api_versions(self, client: socket.socket, version: int, correlation_id: int, frame: bytes) -> None:
        low, high = API_VERSIONS.valid
        if not low <= version <= high:  # KIP-511: answer v0 with UNSUPPORTED_VERSION and our range
            ours = {"api_key": API_VERSIONS.key, "min_version": low, "max_version": high}
            _send_response(client, API_VERSIONS.key, 0, correlation_id, {"error_code": 35, "api_keys": [ours]})
            return
        decode_request(frame)
        ranges = sorted(self._api_keys.values(), key=lambda r: r["api_key"])
        _send_response(client, API_VERSIONS.key, version, correlation_id, {"error_code": 0, "api_keys": ranges})

    def _splice(self, client: socket.socket, session_expiry_s: float | None) -> None:
        upstream = socket.create_connection((HOST, self.upstream_port), timeout=_IO_TIMEOUT_S)
        with self._tracked(upstream):
            client.setblocking(False)
            upstream.setblocking(False)
            peers = {client: upstream, upstream: client}
            with selectors.DefaultSelector() as selector:
                selector.register(client, selectors.EVENT_READ)
                selector.register(upstream, selectors.EVENT_READ)
                while not self._stopping.is_set():
                    for key, _ in selector.select(0.2):
                        source: socket.socket = key.fileobj  # type: ignore[assignment]
                        try:
                            data = source.recv(256 * 1024)
                        except BlockingIOError:
                            continue
                        if not data:
                            return
                        if source is client and session_expiry_s is not None and time.monotonic() > session_expiry_s:
                            self.expired_sessions_closed += 1
                            return
                        target = peers[source]
                        target.setblocking(True)
                        target.settimeout(_IO_TIMEOUT_S)
                        target.sendall(data)
                        target.setblocking(False)


class _MechanismServer:
    """The server side of one exchange: step(client message) -> (reply, done, error message or None)."""

    def __init__(self, proxy: SaslProxy, mechanism: str) -> None:
        self.proxy = proxy
        self.mechanism = mechanism
        self.principal = ""
        self._scram: Any = None
        self._oauth_failed = False

    def step(self, message: bytes) -> tuple[bytes, bool, str | None]:
        if self.mechanism == "PLAIN":
            return self._plain(message)
        if self.mechanism == "OAUTHBEARER":
            return self._oauthbearer(message)
        return self._scram_step(message)

    def _plain(self, message: bytes) -> tuple[bytes, bool, str | None]:
        parts = message.split(b"\0")
        if len(parts) == 3:
            self.principal = parts[1].decode(errors="replace")
            if self.proxy.users.get(self.principal) == parts[2].decode(errors="replace"):
                return b"", True, None
        return b"", False, "Authentication failed: Invalid username or password"

    def _scram_step(self, message: bytes) -> tuple[bytes, bool, str | None]:
        failed = (f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                  f"{self.mechanism}")
        try:
            if self._scram is None:
                mechanism = scramp.ScramMechanism(self.mechanism)

                def auth_info(username: str) -> tuple[bytes, bytes, bytes, int]:
                    self.principal = username
                    if username not in self.proxy.users:
                        raise scramp.ScramException("unknown user")
                    return mechanism.make_auth_info(self.proxy.users[username], iteration_count=4096)

                self._scram = mechanism.make_server(auth_info)
                self._scram.set_client_first(message.decode())
                return self._scram.get_server_first().encode(), False, None
            self._scram.set_client_final(message.decode())
            return self._scram.get_server_final().encode(), True, None
        except (scramp.ScramException, UnicodeDecodeError):
            return b"", False, failed

    def _oauthbearer(self, message: bytes) -> tuple[bytes, bool, str | None]:
        failed = ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                  "OAUTHBEARER")
        if self._oauth_failed:  # the client's \x01 after our error status
            return b"", False, failed
        text = message.decode(errors="replace")
        gs2, sep, rest = text.partition("\x01")
        fields = dict(item.split("=", 1) for item in rest.split("\x01") if "=" in item)
        auth = fields.pop("auth", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        if not sep or not gs2.startswith("n,") or not text.endswith("\x01\x01") or token not in self.proxy.tokens:
            self._oauth_failed = True
            self.principal = "(token rejected)"
            return b'{"status":"invalid_token"}', False, None
        self.principal = "token"
        self.proxy.oauth_extensions.append(fields)
        return b"", True, None


def require_stunnel() -> str:
    """stunnel4's path; skips the test when absent, except under CI where scripts/env.sh must have installed it."""
    import pytest

    binary = stunnel_binary()
    if binary is None:
        reason = "stunnel4 is not installed (scripts/env.sh installs it when run as root with apt-get)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must have it")
        pytest.skip(reason)
    return binary


def fails_fast(config: dict[str, Any], error_type: type[Exception], within_s: float) -> Any:
    """The error a producer with `config` raises at its first send: of `error_type`, not retriable, well before
    max.block.ms (30 s here)."""
    import time

    import pytest

    from cykafka import Producer

    producer = Producer({**config, "max.block.ms": 30_000})
    started = time.monotonic()
    try:
        with pytest.raises(error_type) as info:
            producer.send(f"t-{time.monotonic_ns()}", b"never")
        elapsed_s = time.monotonic() - started
    finally:
        producer.close(1)
    assert elapsed_s < within_s, f"took {elapsed_s:.1f}s: must fail well before max.block.ms"
    assert not getattr(info.value, "retriable", True)
    return info.value
