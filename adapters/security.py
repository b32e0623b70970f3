"""Transport security for the socket transport: the client `ssl.SSLContext` built from the ssl.* keys, and Kafka's
framed SASL (SaslHandshake v1 + SaslAuthenticate, KIP-152) with the mechanisms PLAIN (RFC 4616), SCRAM-SHA-256 and
SCRAM-SHA-512 (RFC 5802 / RFC 7677, client side written here on hmac/hashlib/secrets) and OAUTHBEARER (RFC 7628,
token from the user's `oauth_cb`).

Sans-I/O like the wire codec: `SaslSession` turns responses into the next request; the transport sends them.
Failures are AuthenticationError (not retriable). Secrets (passwords, tokens, proofs) never reach a message or a log.
"""

from __future__ import annotations

import abc
import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from cykafka.errors import AuthenticationError, ConfigError, SslAuthenticationError
from cykafka.ports import SecuritySettings
from cykafka.protocol import Request
from cykafka.protocol.apis import SASL_AUTHENTICATE, SASL_HANDSHAKE
from cykafka.protocol.error_codes import ErrorCode, error_info
from cykafka.protocol.scram import SCRAM_HASHES, SCRAM_MIN_ITERATIONS, salted_password

log = logging.getLogger("cykafka.security")

_MAX_SASL_ROUNDS = 8  # every supported mechanism completes in 3 or fewer


# --- TLS -----------------------------------------------------------------------------------------------------------


def build_ssl_context(settings: SecuritySettings) -> ssl.SSLContext:
    """A TLS 1.2+ client context: CAs from ssl.ca.location (file or directory; else the system's), an optional
    client certificate, hostname verification unless ssl.endpoint.identification.algorithm is '' or
    ssl.check.hostname is false. A file that does not load raises ConfigError naming its key."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, check_hostname on
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if settings.ssl_ca_location is None:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        elif os.path.isdir(settings.ssl_ca_location):
            context.load_verify_locations(capath=settings.ssl_ca_location)
        else:
            context.load_verify_locations(cafile=settings.ssl_ca_location)
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"ssl.ca.location: cannot load CA certificates from {settings.ssl_ca_location!r}: "
                          f"{_ssl_reason(e)}") from None
    if settings.ssl_certificate_location is not None:
        try:
            context.load_cert_chain(settings.ssl_certificate_location, settings.ssl_key_location,
                                    password=settings.ssl_key_password)
        except (ssl.SSLError, OSError) as e:
            hint = "; is ssl.key.password right?" if settings.ssl_key_password is not None else ""
            raise ConfigError(f"ssl.certificate.location / ssl.key.location: cannot load the client certificate "
                              f"{settings.ssl_certificate_location!r} with key "
                              f"{settings.ssl_key_location or '(in the certificate file)'!r}: {_ssl_reason(e)}{hint}"
                              ) from None
    context.check_hostname = settings.ssl_endpoint_identification_algorithm == "https" and settings.ssl_check_hostname
    return context


def _ssl_reason(e: Exception) -> str:
    return str(getattr(e, "reason", None) or e)


def wrap_socket(context: ssl.SSLContext, sock: socket.socket, host: str) -> ssl.SSLSocket:
    """The TCP socket as a TLS client socket; the handshake is left to the caller's loop (`do_handshake()`)."""
    return context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)


def is_tls_alert(error: BaseException) -> TypeGuard[ssl.SSLError]:
    """A TLS-level failure (an alert, a bad record), not the peer simply going away."""
    return isinstance(error, ssl.SSLError) and not isinstance(
        error, ssl.SSLEOFError | ssl.SSLZeroReturnError | ssl.SSLWantReadError | ssl.SSLWantWriteError)


def tls_failure(error: ssl.SSLError, peer: str) -> SslAuthenticationError:
    """The typed error for a failed handshake, with the hint the user needs."""
    if isinstance(error, ssl.SSLCertVerificationError):
        detail = (error.verify_message or str(error)).rstrip(".")
        if "hostname" in detail.lower() or "ip address mismatch" in detail.lower():
            hint = ("the certificate does not name the host connected to; fix advertised.listeners or the "
                    "certificate's subjectAltName, or set ssl.endpoint.identification.algorithm='' to skip "
                    "hostname verification")
        else:
            hint = "the broker's certificate is not signed by a CA in ssl.ca.location (or the system's CAs)"
        return SslAuthenticationError(f"TLS handshake with {peer} failed: certificate verify failed: {detail}; "
                                      f"{hint}")
    reason = _ssl_reason(error)
    upper = reason.upper()
    hint = ""
    if "WRONG_VERSION_NUMBER" in upper:
        hint = "; is this a TLS listener? (security.protocol=SSL / SASL_SSL needs one)"
    elif any(alert in upper for alert in ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA",
                                          "CERTIFICATE_UNKNOWN")):
        hint = ("; the broker wants a client certificate it trusts (ssl.certificate.location, ssl.key.location)")
    return SslAuthenticationError(f"TLS handshake with {peer} failed: {reason}{hint}")


# --- SASL mechanisms -----------------------------------------------------------------------------------------------


class SaslMechanism(abc.ABC):
    """One client side of one exchange: `initial_response()`, then `evaluate(challenge)` per server message until
    it returns None (complete). Raises AuthenticationError when the server's message is wrong."""

    name: str

    @abc.abstractmethod
    def initial_response(self) -> bytes: ...

    @abc.abstractmethod
    def evaluate(self, challenge: bytes) -> bytes | None: ...

    def failure_detail(self) -> str:
        """What the server said on failure beyond its error message (OAUTHBEARER's JSON status)."""
        return ""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class PlainMechanism(SaslMechanism):
    """RFC 4616: authzid NUL authcid NUL passwd, one round."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password

    def initial_response(self) -> bytes:
        return b"\0" + self._username.encode() + b"\0" + self._password.encode()

    def evaluate(self, challenge: bytes) -> bytes | None:
        return None


SCRAM_MAX_ITERATIONS = 1 << 20  # bounds the PBKDF2 time a server can make the sender thread spend


def _scram_name(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def _scram_attributes(message: bytes, what: str) -> dict[str, str]:
    try:
        text = message.decode()
    except UnicodeDecodeError:
        raise AuthenticationError(f"SCRAM {what} is not UTF-8") from None
    attributes: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationError(f"malformed SCRAM {what}: attribute {key[:8]!r}")
        attributes.setdefault(key, value)
    return attributes


class ScramClient(SaslMechanism):
    """RFC 5802 client without channel binding (gs2 header 'n,,'), hash SHA-256 or SHA-512 (RFC 7677). Like Kafka's
    Java client, names are escaped ('=' '=2C') and passwords used as UTF-8 without SASLprep. `hash_name` and
    `nonce` are open for the RFC test vectors (SHA-1)."""

    def __init__(self, mechanism: str, username: str, password: str, *, hash_name: str | None = None,
                 nonce: str | None = None) -> None:
        self.name = mechanism
        self._hash_name = hash_name or SCRAM_HASHES[mechanism]
        self._username = username
        self._password = password
        self._client_nonce = nonce or base64.b64encode(secrets.token_bytes(24)).decode()
        self._client_first_bare = f"n={_scram_name(username)},r={self._client_nonce}"
        self._expected_server_signature: bytes | None = None
        self._step = 0

    def _hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash_name).digest()

    def initial_response(self) -> bytes:
        self._step = 1
        return ("n,," + self._client_first_bare).encode()

    def evaluate(self, challenge: bytes) -> bytes | None:
        if self._step == 1:
            self._step = 2
            return self._client_final(challenge)
        if self._step == 2:
            self._step = 3
            self._verify_server_final(challenge)
            return None
        raise AuthenticationError(f"{self.name}: unexpected server message after the exchange completed")

    def _client_final(self, server_first: bytes) -> bytes:
        attributes = _scram_attributes(server_first, "server-first-message")
        if "m" in attributes:
            raise AuthenticationError(f"{self.name}: the server requires an unsupported extension (m=)")
        if "e" in attributes:
            raise AuthenticationError(f"{self.name}: the server refused: {attributes['e']}")
        nonce, salt_b64, iterations_text = attributes.get("r"), attributes.get("s"), attributes.get("i")
        if nonce is None or salt_b64 is None or iterations_text is None:
            raise AuthenticationError(f"{self.name}: server-first-message lacks r, s or i")
        if not nonce.startswith(self._client_nonce) or len(nonce) <= len(self._client_nonce):
            raise AuthenticationError(f"{self.name}: the server's nonce does not extend ours")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            iterations = int(iterations_text)
        except ValueError:
            raise AuthenticationError(f"{self.name}: malformed salt or iteration count") from None
        if not SCRAM_MIN_ITERATIONS <= iterations <= SCRAM_MAX_ITERATIONS:
            raise AuthenticationError(f"{self.name}: iteration count {iterations} outside "
                                      f"[{SCRAM_MIN_ITERATIONS}, {SCRAM_MAX_ITERATIONS}]")
        salted = salted_password(self._hash_name, self._password.encode(), salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash_name, client_key).digest()
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first.decode()},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._expected_server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, server_final: bytes) -> None:
        attributes = _scram_attributes(server_final, "server-final-message")
        if "e" in attributes:
            raise AuthenticationError(f"{self.name}: the server refused: {attributes['e']}")
        try:
            signature = base64.b64decode(attributes.get("v", ""), validate=True)
        except ValueError:
            signature = b""
        expected = self._expected_server_signature
        if expected is None or not signature or not hmac.compare_digest(signature, expected):
            raise AuthenticationError(f"{self.name}: the server's signature is wrong: it does not know the "
                                      f"password (a man in the middle, or a broken server)")


_B64_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750 b64token
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")


class OAuthTokenSource:
    """Calls oauth_cb(sasl.oauthbearer.config) -> (token, expiry_time_s[, principal[, extensions]]) like
    confluent-kafka, and keeps the token until 80% of its lifetime has passed."""

    REFRESH_AT_FRACTION = 0.8

    def __init__(self, callback: Callable[[str], Any], oauthbearer_config: str,
                 wall_s: Callable[[], float] = time.time) -> None:
        self._callback = callback
        self._oauthbearer_config = oauthbearer_config
        self._wall_s = wall_s
        self._token: str | None = None
        self._extensions: Mapping[str, str] = {}
        self._refresh_at_s = 0.0

    def token(self) -> tuple[str, Mapping[str, str]]:
        now_s = self._wall_s()
        if self._token is not None and now_s < self._refresh_at_s:
            return self._token, self._extensions
        try:
            result = self._callback(self._oauthbearer_config)
        except Exception as e:
            raise AuthenticationError(f"oauth_cb raised {type(e).__name__}: {e}") from e
        token, expiry_s, extensions = self._check(result)
        self._token, self._extensions = token, extensions
        self._refresh_at_s = now_s + max(0.0, expiry_s - now_s) * self.REFRESH_AT_FRACTION
        return token, extensions

    @staticmethod
    def _check(result: object) -> tuple[str, float, Mapping[str, str]]:
        if not isinstance(result, tuple | list) or not 2 <= len(result) <= 4:
            raise AuthenticationError("oauth_cb must return (token, expiry_time_s[, principal[, extensions]]); "
                                      f"it returned a {type(result).__name__}")
        token, expiry_s = result[0], result[1]
        extensions = result[3] if len(result) == 4 and result[3] is not None else {}
        if not isinstance(token, str) or not _B64_TOKEN.fullmatch(token):
            raise AuthenticationError("oauth_cb returned a token that is not an RFC 6750 b64token string")
        if isinstance(expiry_s, bool) or not isinstance(expiry_s, int | float):
            raise AuthenticationError(f"oauth_cb returned expiry_time_s of type {type(expiry_s).__name__}, "
                                      f"expected seconds since the epoch")
        if not isinstance(extensions, Mapping) or not all(
                isinstance(k, str) and _EXTENSION_KEY.fullmatch(k) and k != "auth"
                and isinstance(v, str) and _EXTENSION_VALUE.fullmatch(v) for k, v in extensions.items()):
            raise AuthenticationError("oauth_cb returned invalid SASL extensions: keys [A-Za-z]+ (not 'auth'), "
                                      "printable string values")
        return token, float(expiry_s), dict(extensions)


class OAuthBearerMechanism(SaslMechanism):
    """RFC 7628 client initial response `n,,\\x01auth=Bearer <token>[\\x01key=value...]\\x01\\x01`. A server that
    rejects the token answers with a JSON error status; the client acknowledges it with \\x01 and the broker then
    fails the exchange."""

    name = "OAUTHBEARER"

    def __init__(self, source: OAuthTokenSource) -> None:
        self._source = source
        self._server_error = ""

    def initial_response(self) -> bytes:
        token, extensions = self._source.token()
        extra = "".join(f"\x01{key}={value}" for key, value in extensions.items())
        return f"n,,\x01auth=Bearer {token}{extra}\x01\x01".encode()

    def evaluate(self, challenge: bytes) -> bytes | None:
        if not challenge:
            return None
        if self._server_error:
            raise AuthenticationError("OAUTHBEARER: the server sent a second error status")
        self._server_error = challenge.decode(errors="replace")[:512]
        return b"\x01"

    def failure_detail(self) -> str:
        return f"; server status: {self._server_error}" if self._server_error else ""


# --- the exchange over Kafka's SASL requests ----------------------------------------------------------------------


class SaslSession:
    """One connection's authentication: SaslHandshake v1 naming the mechanism, then SaslAuthenticate rounds carrying
    the mechanism's messages. `on_response` returns the next request, or None once authenticated."""

    def __init__(self, mechanism: SaslMechanism, peer: str) -> None:
        self.mechanism = mechanism
        self.peer = peer
        self.session_lifetime_ms = 0
        self._rounds = 0
        self._handshaken = False  # SaslHandshake answered: what follows are SaslAuthenticate answers

    def handshake_request(self) -> Request:
        return Request(SASL_HANDSHAKE.key, {"mechanism": self.mechanism.name})

    def _authenticate(self, auth_bytes: bytes) -> Request:
        return Request(SASL_AUTHENTICATE.key, {"auth_bytes": auth_bytes})

    def on_response(self, response: Mapping[str, Any]) -> Request | None:
        """The answer to our last request (SaslHandshake first, then SaslAuthenticate), as decoded."""
        name = self.mechanism.name
        code = response["error_code"]
        if not self._handshaken:
            if code != ErrorCode.NONE:
                info = error_info(code)
                enabled = ", ".join(response["mechanisms"]) or "none"
                raise AuthenticationError(f"SASL handshake with {self.peer} failed: {info.name}: mechanism {name} "
                                          f"is not enabled on the broker (enabled: {enabled})", code=code)
            self._handshaken = True
            return self._authenticate(self.mechanism.initial_response())
        if code != ErrorCode.NONE:
            info = error_info(code)
            message = response["error_message"] or info.message
            raise AuthenticationError(f"SASL {name} authentication with {self.peer} failed: {info.name} "
                                      f"({code}): {message}{self.mechanism.failure_detail()}", code=code)
        self._rounds += 1
        if self._rounds > _MAX_SASL_ROUNDS:
            raise AuthenticationError(f"SASL {name} with {self.peer}: no end after {_MAX_SASL_ROUNDS} rounds")
        try:
            reply = self.mechanism.evaluate(response["auth_bytes"])
        except AuthenticationError as e:
            raise AuthenticationError(f"SASL {name} authentication with {self.peer} failed: {e}",
                                      code=ErrorCode.SASL_AUTHENTICATION_FAILED) from None
        if reply is None:
            self.session_lifetime_ms = response["session_lifetime_ms"]
            return None
        return self._authenticate(reply)


class Security:
    """What security.protocol asks of each new connection, built once per transport from its SecuritySettings: the
    TLS context (None for PLAINTEXT / SASL_PLAINTEXT) and a SaslSession factory (None without SASL)."""

    def __init__(self, settings: SecuritySettings) -> None:
        self.settings = settings
        self.ssl_context = build_ssl_context(settings) if settings.uses_ssl else None
        self.uses_sasl = settings.uses_sasl
        self._oauth = (OAuthTokenSource(settings.oauth_cb, settings.sasl_oauthbearer_config)
                       if settings.uses_sasl and settings.sasl_mechanism == "OAUTHBEARER"
                       and settings.oauth_cb is not None else None)

    def sasl_session(self, peer: str) -> SaslSession:
        cfg = self.settings
        mechanism: SaslMechanism
        if cfg.sasl_mechanism == "PLAIN":
            mechanism = PlainMechanism(cfg.sasl_username or "", cfg.sasl_password or "")
        elif cfg.sasl_mechanism in SCRAM_HASHES:
            mechanism = ScramClient(cfg.sasl_mechanism, cfg.sasl_username or "", cfg.sasl_password or "")
        elif cfg.sasl_mechanism == "OAUTHBEARER" and self._oauth is not None:
            mechanism = OAuthBearerMechanism(self._oauth)
        else:  # config validation keeps this out
            raise AuthenticationError(f"sasl.mechanism {cfg.sasl_mechanism!r} is not supported")
        return SaslSession(mechanism, peer)


__all__ = [
    "OAuthBearerMechanism",
    "OAuthTokenSource",
    "PlainMechanism",
    "SaslMechanism",
    "SaslSession",
    "ScramClient",
    "Security",
    "build_ssl_context",
    "is_tls_alert",
    "tls_failure",
    "wrap_socket",
]
