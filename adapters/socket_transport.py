"""Socket transport: non-blocking TCP connections (one per broker) driven by `selectors`, Kafka framing and
correlation ids, ApiVersions negotiation on connect (the versions per connection, a request's `max_version` capping
them; the cluster's finalized features of the newest epoch any answer carried), max in-flight,
request/connection-setup timeouts, reconnect backoff. Implements ports.Transport; the caller owns the loop and passes
now_ms in.

Connection states: connecting -> [tls handshaking] -> negotiating (ApiVersions) -> [authenticating (SASL)] -> ready.
TLS and SASL come from adapters.security; an authentication failure is latched (`authentication_error()`).
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import random
import select
import selectors
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from cykafka.adapters import security
from cykafka.core import (
    FETCH_PUMP_VERSION,
    FetchPump,
    gil_kept,
    sock_recv_into,
    sock_send,
    wait_ended_us,
    wait_events,
)
from cykafka.errors import (
    AllBrokersDownError,
    AuthenticationError,
    KafkaError,
    KafkaTimeoutError,
    NetworkError,
    ProtocolError,
    UnsupportedVersionError,
)
from cykafka.ports import ClientResponse, ConnectionSettings, FinalizedFeatures, Node, report_error
from cykafka.protocol import (
    Request,
    TransportRequest,
    decode_any_response,
    encode_any_request,
)
from cykafka.protocol.apis import (
    API_NAMES,
    API_VERSIONS,
    FETCH,
    PRODUCE,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SUPPORTED_VERSIONS,
    capped_version,
    common_versions,
)
from cykafka.protocol.error_codes import ErrorCode, error_for

log = logging.getLogger("cykafka.network")

_CONNECTING, _NEGOTIATING, _READY, _DISCONNECTED = "connecting", "negotiating", "ready", "disconnected"
_TLS_HANDSHAKING, _AUTHENTICATING = "tls handshaking", "authenticating"
_SETTING_UP = frozenset({_CONNECTING, _TLS_HANDSHAKING, _NEGOTIATING, _AUTHENTICATING})
_READ_CHUNK_BYTES = 256 * 1024
_NEVER_MS = 2**63  # no deadline
_TLS_COALESCE_BYTES = 64 * 1024  # small buffers are joined into one TLS write up to this
_SIZE = struct.Struct(">i")
_PUMPED = Request(FETCH.key, {})  # the request of a Fetch the pump wrote (its handler knows what it asked)


@dataclass(slots=True)
class _Request:
    correlation_id: int
    api_key: int
    version: int
    request: TransportRequest
    handler: Callable[[ClientResponse], None] | None
    sent_ms: int
    expect_response: bool
    internal: bool = False  # ApiVersions / SASL sent by the transport itself
    timeout_ms: int = 0  # how long its answer may take; 0: request.timeout.ms
    written_ns: int = 0  # time.monotonic_ns() when its last byte was written (a Produce request's; else 0)


@dataclass(slots=True, eq=False)  # compared by identity (selectors compares its data on every modify)
class _Connection:
    node_id: int
    host: str
    port: int
    state: str = _DISCONNECTED
    sock: socket.socket | None = None
    outgoing: deque[memoryview] = field(default_factory=deque)
    unwritten_requests: deque[tuple[_Request, int]] = field(default_factory=deque)  # request, bytes left to write
    in_flight: deque[_Request] = field(default_factory=deque)
    incoming: bytearray = field(default_factory=bytearray)
    large_frame: bytearray | None = None  # a frame over _READ_CHUNK_BYTES, received in place (no copies on the way)
    large_frame_filled: int = 0
    # correlation ids of acks=0 produce requests: Kafka sends no response, some brokers (Tansu) do; skip those
    unanswered: deque[int] = field(default_factory=lambda: deque(maxlen=4096))
    api_versions: dict[int, int] = field(default_factory=dict)  # api key -> version we use
    version_ranges: dict[int, tuple[int, int]] = field(default_factory=dict)  # api key -> versions both speak
    connect_started_ms: int = 0
    last_failure_ms: int = -(2**62)
    failures: int = 0
    backoff_ms: int = 0
    tls: bool = False
    tls_retry: memoryview | bytes | None = None  # a TLS write that wanted to block is retried with the same bytes
    sasl: security.SaslSession | None = None
    reauthenticate_at_ms: int | None = None  # SASL session lifetime (KIP-368): reconnect before it ends
    not_kafka_warned: bool = False  # logged that the peer is no Kafka broker (again only after it was ready once)
    failure_warned: bool = False  # this series of failed attempts was logged at WARNING (until a ready connection)
    address_index: int = 0  # client.dns.lookup=use_all_dns_ips: the next attempt after a failure takes the next address
    produce_answer_us: int = 0  # the last Produce request's answer came this long after its last byte (0: none yet)
    last_fetch_id: int = -1  # the correlation id of the last Fetch sent
    pump: _ConnectionPump | None = None  # the connection's fetch pump, once the Fetcher asked for it


class _ConnectionPump:
    """ports.FetchPumpPort for one plain-TCP connection: core/fetch_pump.pyx's FetchPump armed for the last Fetch
    sent on it (the network thread's wait reads its answer and writes the Fetch it fires, core/netio.pyx), and the
    Fetcher's callback for a Fetch it fires."""

    __slots__ = ("conn", "core", "on_fired", "reserve_id")

    def __init__(self, conn: _Connection, client_id: str | None, reserve_id: Callable[[], int]) -> None:
        assert conn.sock is not None
        self.conn = conn
        self.core = FetchPump(client_id)
        self.core.attach(conn.sock.fileno())
        self.reserve_id = reserve_id  # the transport's next correlation id, for the Fetch the pump may fire
        self.on_fired: Callable[[list[tuple[str, int, int]]], Callable[[ClientResponse], None]] | None = None

    def arm(self, session_id: int, next_epoch: int, max_wait_ms: int, min_bytes: int, fetch_max_bytes: int,
            read_committed: bool, rack_id: str, partitions: list[tuple[str, int, int, int, int, int]],
            fetch_ahead_answers: int,
            on_fired: Callable[[list[tuple[str, int, int]]], Callable[[ClientResponse], None]]) -> None:
        self.on_fired = on_fired
        self.core.arm(self.conn.last_fetch_id, self.reserve_id(), session_id, next_epoch, max_wait_ms, min_bytes,
                      fetch_max_bytes, read_committed, rack_id, partitions, fetch_ahead_answers)

    def disarm(self) -> None:
        self.core.disarm()

    def set_buffered(self, answers: int, nbytes: int) -> None:
        self.core.set_buffered(answers, nbytes)


class SocketTransport:
    """Kafka's NetworkClient over plain TCP sockets."""

    def __init__(self, settings: ConnectionSettings, *, clock_ms: Callable[[], int] | None = None) -> None:
        self.settings = settings
        self._security = security.Security(settings.security)  # first: a bad ssl.* file fails before any socket exists
        self._selector = selectors.EpollSelector()  # wait_events waits on its epoll set
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._connections: dict[int, _Connection] = {}
        for index, (host, port) in enumerate(_bootstrap_addresses(settings)):
            self._connections[-(index + 1)] = _Connection(-(index + 1), host, port)
        self._nodes: Mapping[int, Node] = {}
        self._correlation_id = 0
        self._pumps: list[_ConnectionPump] = []  # the connections' fetch pumps
        self._pump_cores: list[FetchPump] = []  # theirs, for wait_events
        self.share_gil = False  # the client's application thread runs an asyncio loop (ports.share_gil_of)
        self._completed: list[ClientResponse] = []
        self._random = random.Random()
        self._closed = False
        self._wakeup_pending = False
        self._authentication_error: AuthenticationError | None = None
        self._disconnect_count = 0
        self._connection_problem: str | None = None  # why no connection gets ready, until one does
        self._all_down_reported = False  # error_cb heard AllBrokersDownError since a connection was last ready
        self._read_buffer = memoryview(bytearray(_READ_CHUNK_BYTES))  # recv_into this: no 256 KiB allocation per read
        self._features = FinalizedFeatures()
        self._wake_buffer = bytearray(4096)
        # no request and no connection set-up can time out before then (a lower bound: each request and set-up lowers
        # it to its own deadline; _check_timeouts, once it is reached, reads them all and sets the next): the check
        # on every poll is one comparison, not a walk over every connection's requests
        self._timeouts_due_ms = _NEVER_MS

    # -- ports.Transport ---------------------------------------------------------------------------------------

    def update_nodes(self, nodes: Mapping[int, Node]) -> None:
        if nodes is self._nodes:
            return
        self._nodes = nodes
        for node in nodes.values():
            conn = self._connections.get(node.node_id)
            if conn is None:
                self._connections[node.node_id] = _Connection(node.node_id, node.host, node.port)
            elif (conn.host, conn.port) != (node.host, node.port) and conn.state == _DISCONNECTED:
                conn.host, conn.port = node.host, node.port

    def ready(self, node_id: int, now_ms: int) -> bool:
        conn = self._connections.get(node_id)
        if conn is None:
            return False
        if conn.state == _READY and conn.reauthenticate_at_ms is not None and now_ms >= conn.reauthenticate_at_ms:
            if conn.in_flight or conn.unwritten_requests:
                return False  # let them finish, then authenticate again on a new connection
            log.info("SASL session with node %s ends soon: reconnecting to authenticate again", conn.node_id)
            self._disconnect(conn, now_ms, NetworkError("SASL session lifetime reached"), backoff=False)
        if conn.state == _READY:
            in_flight = len(conn.in_flight) + len(conn.unwritten_requests)
            return in_flight < self.settings.max_in_flight_requests_per_connection
        if conn.state == _DISCONNECTED and now_ms - conn.last_failure_ms >= conn.backoff_ms:
            self._connect(conn, now_ms)
        return False

    def connection_delay_ms(self, node_id: int, now_ms: int) -> int:
        conn = self._connections.get(node_id)
        if conn is None:
            return self.settings.reconnect_backoff_ms
        if conn.state == _DISCONNECTED:
            return max(0, conn.last_failure_ms + conn.backoff_ms - now_ms)
        if conn.state in _SETTING_UP:
            return max(0, conn.connect_started_ms + self.settings.socket_connection_setup_timeout_ms - now_ms)
        return 2**31  # connected: poll() wakes when a response frees a slot

    def connection_failed(self, node_id: int) -> bool:
        conn = self._connections.get(node_id)
        return conn is not None and conn.state == _DISCONNECTED and conn.failures > 0

    def fetch_pump(self, node_id: int) -> _ConnectionPump | None:
        """The connection's fetch pump (ports.FetchPumpPort), None when it is not ready, uses TLS (the wait cannot
        read it) or speaks Fetch at another version than the pump's."""
        conn = self._connections.get(node_id)
        if conn is None or conn.state != _READY or conn.tls or conn.api_versions.get(FETCH.key) != FETCH_PUMP_VERSION:
            return None
        if conn.pump is None:
            conn.pump = _ConnectionPump(conn, self.settings.client_id, self._reserve_correlation_id)
            conn.pump.core.idle = self._idle(conn)
            self._pumps.append(conn.pump)
            self._pump_cores.append(conn.pump.core)
        return conn.pump

    def _reserve_correlation_id(self) -> int:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        return self._correlation_id

    @staticmethod
    def _idle(conn: _Connection) -> bool:
        """Nothing of the transport's waits on the connection, to write or to parse: its pump may read and write."""
        return not conn.outgoing and not conn.incoming and conn.large_frame is None

    def send(self, node_id: int, request: TransportRequest, now_ms: int,
             handler: Callable[[ClientResponse], None] | None = None, expect_response: bool = True,
             timeout_ms: int | None = None) -> None:
        conn = self._connections[node_id]
        if conn.state != _READY:
            raise NetworkError(f"node {node_id} is not ready for requests")
        api_key = request.api_key
        version = conn.api_versions.get(api_key)
        if version is None:
            low, high = SUPPORTED_VERSIONS.get(api_key, (0, -1))
            raise UnsupportedVersionError(f"broker {node_id} does not support {API_NAMES.get(api_key, 'API')} (API "
                                          f"key {api_key}) at any version cykafka speaks ({low}-{high})")
        if request.max_version is not None:
            capped = capped_version(conn.version_ranges[api_key], request.max_version)
            if capped is None:
                raise UnsupportedVersionError(
                    f"broker {node_id} speaks {API_NAMES.get(api_key, api_key)} from "
                    f"v{conn.version_ranges[api_key][0]} only; this request may go at v{request.max_version} at most")
            version = capped
        self._enqueue(conn, request, api_key, version, handler, now_ms, expect_response, timeout_ms=timeout_ms or 0)

    def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]:
        self._check_timeouts(now_ms)
        for conn in self._connections.values():
            if conn.outgoing and conn.sock is not None:
                self._write(conn, now_ms)
        if self._completed:
            timeout_ms = 0
        fd_to_key = self._selector.get_map()
        # the wait without the GIL, which the application's next send() or poll() hands back (core/netio.pyx); a
        # thread whose socket calls keep the GIL waits keeping it for a Produce answer due within 1 ms
        due_us = self._produce_answer_due_us() if timeout_ms > 0 and gil_kept() else -1
        ready = wait_events(self._selector.fileno(), max(timeout_ms, 0), due_us, self._pump_cores, self.share_gil)
        for pump in self._pumps:  # Fetches the wait fired go in flight before any answer read is handled
            if (fired := pump.core.take_fired()) is not None:
                self._pumped(pump, *fired, now_ms)
        for fd, events in ready:
            key = fd_to_key.get(fd)
            if key is None or not events & key.events:
                continue
            events &= key.events
            conn = key.data
            if conn is None:
                self._drain_wakeups()
                continue
            if conn.state == _CONNECTING:
                if events & selectors.EVENT_WRITE:
                    self._finish_connect(conn, now_ms)
                continue
            if conn.state == _TLS_HANDSHAKING:
                self._tls_handshake(conn, now_ms)
                continue
            if conn.sock is not None and events & selectors.EVENT_WRITE and conn.state != _CONNECTING:
                self._write(conn, now_ms)
            if conn.sock is not None and events & selectors.EVENT_READ:
                self._read(conn, now_ms)
        completed, self._completed = self._completed, []
        return completed

    def _produce_answer_due_us(self) -> int:
        """In how many µs the first Produce answer in flight is due, going by its connection's last one (-1: none
        in flight, or none answered yet on its connection)."""
        now_ns = time.monotonic_ns()
        due_us = -1
        for conn in self._connections.values():
            if conn.produce_answer_us:
                req = next((r for r in conn.in_flight if r.written_ns), None)
                if req is not None:
                    conn_due_us = max(0, conn.produce_answer_us - (now_ns - req.written_ns) // 1000)
                    due_us = conn_due_us if due_us < 0 else min(due_us, conn_due_us)
        return due_us

    def in_flight_count(self, node_id: int | None = None) -> int:
        conns = self._connections.values() if node_id is None else [self._connections.get(node_id)]
        return sum(len(c.in_flight) + len(c.unwritten_requests) for c in conns if c is not None)

    def connection_count(self) -> int:
        return sum(1 for c in list(self._connections.values()) if c.state != _DISCONNECTED)

    def finalized_features(self) -> FinalizedFeatures:
        return self._features

    def least_loaded_node(self, now_ms: int) -> int | None:
        """A ready node with the fewest requests in flight, else one connecting, else one out of backoff."""
        candidates = [c for c in self._connections.values() if c.node_id >= 0] or list(self._connections.values())
        if self._nodes:  # once metadata names brokers, prefer them (bootstrap ids stay as a fallback)
            candidates = [c for c in candidates if c.node_id in self._nodes] or candidates
        self._random.shuffle(candidates)
        best: _Connection | None = None
        for conn in candidates:
            if conn.state == _READY and (best is None or best.state != _READY
                                         or len(conn.in_flight) < len(best.in_flight)):
                best = conn
        if best is not None:
            return best.node_id
        for conn in candidates:
            if conn.state in _SETTING_UP:
                return conn.node_id
        ok = [c for c in candidates if now_ms - c.last_failure_ms >= c.backoff_ms]
        if not ok and self._connections:
            ok = [c for c in self._connections.values() if now_ms - c.last_failure_ms >= c.backoff_ms]
        return ok[0].node_id if ok else None

    @property
    def disconnect_count(self) -> int:
        return self._disconnect_count

    def authentication_error(self) -> AuthenticationError | None:
        """The last SASL or TLS authentication failure; cleared when a connection next authenticates."""
        return self._authentication_error

    def connection_problem(self) -> str | None:
        """Why connections fail to set up (the last failure), None once one is ready: for timeout messages."""
        return self._connection_problem

    def wakeup(self) -> None:
        if self._wakeup_pending:  # one byte in the pipe is enough until poll() drains it
            return
        self._wakeup_pending = True
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass

    def close(self, linger_s: float = 2.0) -> None:
        """Closes every connection. Connections that carried acks=0 requests close gracefully (FIN, then read the
        broker's answers until it closes, at most linger_s in all): closing a socket with unread answers sends a
        reset, and a reset makes the broker drop requests it has not read yet."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + linger_s
        for conn in self._connections.values():
            if conn.sock is not None and conn.unanswered and conn.state == _READY:
                self._close_gracefully(conn.sock, deadline)
            self._disconnect(conn, 0, NetworkError("transport closed"), backoff=False)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    @staticmethod
    def _close_gracefully(sock: socket.socket, deadline: float) -> None:
        try:
            sock.shutdown(socket.SHUT_WR)
            while (remaining := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([sock], [], [], remaining)
                if readable and not sock.recv(65536):
                    return
        except OSError:
            return

    def abandon_after_fork(self) -> None:
        """In a forked child: closes this process's copies of the inherited fds and nothing else. No epoll_ctl (the
        epoll set is shared with the parent), no shutdown(), no wakeup byte: the parent's connections stay intact."""
        self._closed = True
        for conn in self._connections.values():
            if conn.sock is not None:
                conn.sock.close()
                conn.sock = None
            conn.state = _DISCONNECTED
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- connections -------------------------------------------------------------------------------------------

    def _connect(self, conn: _Connection, now_ms: int) -> None:
        try:
            infos = socket.getaddrinfo(conn.host, conn.port, type=socket.SOCK_STREAM)
            family, _, _, _, address = infos[conn.address_index % len(infos)]  # use_all_dns_ips: each in turn
            sock = socket.socket(family, socket.SOCK_STREAM)
        except (OSError, ValueError) as e:  # ValueError: a host name getaddrinfo refuses (UnicodeError)
            self._fail_connect(conn, now_ms, e)
            return
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.settings.socket_keepalive_enable:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if self.settings.send_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.settings.send_buffer_bytes)
            if self.settings.receive_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.settings.receive_buffer_bytes)
        except OSError as e:
            sock.close()
            self._fail_connect(conn, now_ms, e)
            return
        conn.sock = sock
        conn.state = _CONNECTING
        conn.connect_started_ms = now_ms
        self._timeout_due(now_ms + self.settings.socket_connection_setup_timeout_ms)
        conn.incoming.clear()
        conn.large_frame = None
        try:
            sock.connect_ex(address)
        except OSError as e:
            self._disconnect(conn, now_ms, NetworkError(f"connect to {conn.host}:{conn.port} failed: {e}"))
            return
        self._selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)

    def _fail_connect(self, conn: _Connection, now_ms: int, error: Exception) -> None:
        self._connection_problem = f"cannot connect to {conn.host}:{conn.port}: {error}"
        self._set_backoff(conn, now_ms)
        self._connect_failed(conn, error)

    def _connect_failed(self, conn: _Connection, error: Exception, warn: bool = True) -> None:
        """A connection did not get ready. Java's words at WARNING on the first failure of a series (a ready connection
        ends it), DEBUG after; every address of the name is tried in turn; and when every known broker (the metadata's,
        else the bootstrap servers) has failed and no connection is ready or setting up, error_cb hears
        AllBrokersDownError once (again only after one was ready)."""
        conn.address_index += 1
        if isinstance(error, AuthenticationError):  # the broker is up: error_cb hears the failure itself
            return
        if warn:
            log.log(logging.DEBUG if conn.failure_warned else logging.WARNING,
                    "Connection to node %s (%s:%s) could not be established: %s. Node may not be available.",
                    conn.node_id, conn.host, conn.port, error)
            conn.failure_warned = True
        # the brokers: the metadata's (librdkafka counts every known broker), the bootstrap servers before any
        brokers = [self._connections[i] for i in self._nodes if i in self._connections] or \
            [c for i, c in self._connections.items() if i < 0]
        if self._all_down_reported or any(c.state != _DISCONNECTED for c in self._connections.values()) or \
                any(c.failures == 0 for c in brokers):
            return
        self._all_down_reported = True
        report_error(self.settings.error_cb, AllBrokersDownError(
            f"all brokers are down: {len(brokers)}/{len(brokers)} failed to connect "
            f"({', '.join(f'{c.host}:{c.port}' for c in brokers)}); the last: node {conn.node_id} ({conn.host}:"
            f"{conn.port}): {error}"), log)

    def _finish_connect(self, conn: _Connection, now_ms: int) -> None:
        assert conn.sock is not None
        err = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err != 0:
            self._disconnect(conn, now_ms, NetworkError(f"{errno.errorcode.get(err, err)} ({os.strerror(err)})"))
            return
        if self._security.ssl_context is not None:
            self._start_tls(conn, now_ms)
        else:
            self._start_negotiating(conn, now_ms)

    def _start_tls(self, conn: _Connection, now_ms: int) -> None:
        assert conn.sock is not None and self._security.ssl_context is not None
        self._selector.unregister(conn.sock)
        raw, conn.sock = conn.sock, None
        try:
            conn.sock = security.wrap_socket(self._security.ssl_context, raw, conn.host)
        except (OSError, ValueError) as e:
            raw.close()
            self._disconnect(conn, now_ms, NetworkError(f"TLS setup for node {conn.node_id} failed: {e}"))
            return
        conn.tls = True
        conn.state = _TLS_HANDSHAKING
        self._selector.register(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)
        self._tls_handshake(conn, now_ms)

    def _tls_handshake(self, conn: _Connection, now_ms: int) -> None:
        sock = conn.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._selector.modify(sock, selectors.EVENT_READ, conn)
            return
        except ssl.SSLWantWriteError:
            self._selector.modify(sock, selectors.EVENT_WRITE, conn)
            return
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError) as e:  # the peer went away: a network failure
            self._disconnect(conn, now_ms, NetworkError(f"node {conn.node_id} ({conn.host}:{conn.port}) closed "
                                                        f"the connection during the TLS handshake: {e}"))
            return
        except ssl.SSLError as e:
            self._fail_authentication(conn, now_ms, security.tls_failure(e, self._peer(conn)))
            return
        except OSError as e:
            self._disconnect(conn, now_ms, NetworkError(f"TLS handshake with node {conn.node_id} failed: {e}"))
            return
        log.debug("TLS with node %s: %s %s", conn.node_id, sock.version(), (sock.cipher() or ("?",))[0])
        self._start_negotiating(conn, now_ms)

    def _start_negotiating(self, conn: _Connection, now_ms: int) -> None:
        assert conn.sock is not None
        conn.state = _NEGOTIATING
        self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
        self._send_api_versions(conn, API_VERSIONS.valid[1], now_ms)

    @staticmethod
    def _peer(conn: _Connection) -> str:
        return f"node {conn.node_id} ({conn.host}:{conn.port})"

    def _send_api_versions(self, conn: _Connection, version: int, now_ms: int) -> None:
        request = Request(API_VERSIONS.key, {"client_software_name": "cykafka", "client_software_version": "0.1.0"})
        self._enqueue(conn, request, API_VERSIONS.key, version, None, now_ms, True, internal=True)

    def _on_api_versions(self, conn: _Connection, req: _Request, response: dict[str, Any], now_ms: int) -> None:
        code = response["error_code"]
        if code == ErrorCode.UNSUPPORTED_VERSION and req.version > 0:  # retry at v0 (KIP-511)
            self._send_api_versions(conn, 0, now_ms)
            return
        if code != ErrorCode.NONE:
            self._disconnect(conn, now_ms, error_for(code, "ApiVersions failed"))
            return
        conn.version_ranges = common_versions(response["api_keys"])
        conn.api_versions = {key: high for key, (_, high) in conn.version_ranges.items()}
        if response["finalized_features_epoch"] > self._features.epoch:
            self._features = FinalizedFeatures(response["finalized_features_epoch"], {
                f["name"]: f["max_version_level"] for f in response["finalized_features"]})
        produce = conn.api_versions.get(PRODUCE.key)
        if produce is None:
            self._disconnect(conn, now_ms, UnsupportedVersionError(
                f"broker {conn.node_id} does not support Produce v3+ (RecordBatch v2)"), backoff=True)
            return
        if self._security.uses_sasl:
            self._start_sasl(conn, now_ms)
        else:
            self._set_ready(conn, now_ms)

    def _set_ready(self, conn: _Connection, now_ms: int) -> None:
        conn.state = _READY
        conn.failures = 0
        conn.backoff_ms = 0
        conn.not_kafka_warned = False
        conn.failure_warned = False
        self._authentication_error = None
        self._connection_problem = None
        self._all_down_reported = False
        log.debug("connected to node %s at %s:%s (produce v%s)", conn.node_id, conn.host, conn.port,
                  conn.api_versions.get(PRODUCE.key))

    def _start_sasl(self, conn: _Connection, now_ms: int) -> None:
        if conn.api_versions.get(SASL_HANDSHAKE.key) != 1 or SASL_AUTHENTICATE.key not in conn.api_versions:
            self._fail_authentication(conn, now_ms, AuthenticationError(
                f"{self._peer(conn)} does not support SaslHandshake v1 + SaslAuthenticate (KIP-152, Kafka 1.0+)"))
            return
        try:
            conn.sasl = self._security.sasl_session(self._peer(conn))
            request = conn.sasl.handshake_request()
        except AuthenticationError as e:
            self._fail_authentication(conn, now_ms, e)
            return
        conn.state = _AUTHENTICATING
        self._enqueue(conn, request, SASL_HANDSHAKE.key, 1, None, now_ms, True, internal=True)

    def _on_sasl(self, conn: _Connection, response: dict[str, Any], now_ms: int) -> None:
        session = conn.sasl
        assert session is not None
        try:
            request = session.on_response(response)
        except AuthenticationError as e:
            self._fail_authentication(conn, now_ms, e)
            return
        if request is not None:
            self._enqueue(conn, request, SASL_AUTHENTICATE.key, conn.api_versions[SASL_AUTHENTICATE.key], None,
                          now_ms, True, internal=True)
            return
        conn.sasl = None
        if session.session_lifetime_ms > 0:  # Java re-authenticates at 85-95% of the lifetime
            conn.reauthenticate_at_ms = now_ms + int(session.session_lifetime_ms * self._random.uniform(0.85, 0.95))
        log.debug("SASL %s authenticated with node %s", session.mechanism.name, conn.node_id)
        self._set_ready(conn, now_ms)

    def _fail_authentication(self, conn: _Connection, now_ms: int, error: AuthenticationError) -> None:
        log.error("authentication with node %s (%s:%s) failed: %s", conn.node_id, conn.host, conn.port, error)
        first = self._authentication_error is None  # error_cb hears it once until a connection authenticates
        self._authentication_error = error
        self._disconnect(conn, now_ms, error)
        if first:
            report_error(self.settings.error_cb, error, log)

    def _set_backoff(self, conn: _Connection, now_ms: int) -> None:
        conn.last_failure_ms = now_ms
        conn.failures += 1
        base = self.settings.reconnect_backoff_ms * 2 ** min(conn.failures - 1, 30)
        conn.backoff_ms = int(min(base, self.settings.reconnect_backoff_max_ms) * self._random.uniform(0.8, 1.2))

    def _disconnect(self, conn: _Connection, now_ms: int, error: KafkaError, backoff: bool = True) -> None:
        if conn.sock is not None:
            try:
                self._selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
            conn.sock.close()
            conn.sock = None
        conn.tls = False
        conn.tls_retry = None
        conn.sasl = None
        if conn.pump is not None:  # a new connection gets a new pump
            conn.pump.disarm()
            conn.pump.core.attach(-1)
            self._pumps.remove(conn.pump)
            self._pump_cores.remove(conn.pump.core)
            conn.pump = None
        conn.reauthenticate_at_ms = None
        setting_up = conn.state in _SETTING_UP and not self._closed
        if conn.state == _READY:  # Java logs a lost connection at INFO; one that never got ready: _connect_failed
            log.info("disconnected from node %s (%s:%s): %s", conn.node_id, conn.host, conn.port, error)
        not_kafka = setting_up and conn.state == _NEGOTIATING and isinstance(error, ProtocolError)
        if not_kafka:  # the first answer is not Kafka's
            self._not_kafka(conn, cast(ProtocolError, error))
        elif setting_up:
            self._connection_problem = f"connecting to {conn.host}:{conn.port} failed: {error}"
        self._disconnect_count += 1
        conn.state = _DISCONNECTED
        if backoff:
            self._set_backoff(conn, now_ms)
        if setting_up:  # authentication failures and non-Kafka peers have their own words
            self._connect_failed(conn, error, warn=not not_kafka)
        failed = list(conn.in_flight) + [r for r, _ in conn.unwritten_requests]
        conn.in_flight.clear()
        conn.unwritten_requests.clear()
        conn.outgoing.clear()
        conn.incoming.clear()
        conn.large_frame = None
        conn.unanswered.clear()
        for req in failed:
            if not req.internal:
                self._completed.append(ClientResponse(conn.node_id, req.request, req.handler, None, error,
                                                      req.sent_ms, now_ms))

    def _not_kafka(self, conn: _Connection, error: ProtocolError) -> None:
        self._connection_problem = (f"the peer at {conn.host}:{conn.port} is not a Kafka broker (its answer to "
                                    f"ApiVersions is not the Kafka protocol: {error})")
        if not conn.not_kafka_warned:  # once per series of attempts, not on every reconnect
            conn.not_kafka_warned = True
            log.warning("%s; check bootstrap.servers and the broker's listener port", self._connection_problem)

    def _timeout_due(self, due_ms: int) -> None:
        if due_ms < self._timeouts_due_ms:
            self._timeouts_due_ms = due_ms

    def _check_timeouts(self, now_ms: int) -> None:
        """Disconnects what timed out: a connection not set up within socket.connection.setup.timeout.ms, one with a
        request unanswered past its timeout (request.timeout.ms unless it has its own). Reads them only once the
        earliest deadline may have passed (_timeouts_due_ms), then notes the next."""
        if now_ms < self._timeouts_due_ms:
            return
        self._timeouts_due_ms = _NEVER_MS
        setup_ms = self.settings.socket_connection_setup_timeout_ms
        default_ms = self.settings.request_timeout_ms
        for conn in self._connections.values():
            if conn.state in _SETTING_UP:
                if now_ms - conn.connect_started_ms >= setup_ms:
                    self._disconnect(conn, now_ms, NetworkError(
                        f"connection to node {conn.node_id} ({conn.host}:{conn.port}) not set up within "
                        f"socket.connection.setup.timeout.ms ({setup_ms})"))
                else:
                    self._timeout_due(conn.connect_started_ms + setup_ms)
            late = None
            for r in itertools.chain(conn.in_flight, (r for r, _ in conn.unwritten_requests)):
                due_ms = r.sent_ms + (r.timeout_ms or default_ms)
                if now_ms >= due_ms:
                    late = r
                    break
                self._timeout_due(due_ms)
            if late is not None:
                self._disconnect(conn, now_ms, KafkaTimeoutError(
                    f"no response from node {conn.node_id} within "
                    f"{f'{late.timeout_ms} ms' if late.timeout_ms else f'request.timeout.ms ({default_ms})'}; "
                    f"disconnected", retriable=True))

    # -- framing -----------------------------------------------------------------------------------------------

    def _enqueue(self, conn: _Connection, request: TransportRequest, api_key: int, version: int,
                 handler: Callable[[ClientResponse], None] | None, now_ms: int, expect_response: bool,
                 internal: bool = False, timeout_ms: int = 0) -> None:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        buffers = encode_any_request(request, version, self._correlation_id, self.settings.client_id)
        size = 0
        for buf in buffers:
            view = memoryview(buf).cast("B")
            conn.outgoing.append(view)
            size += len(view)
        req = _Request(self._correlation_id, api_key, version, request, handler, now_ms, expect_response, internal,
                       timeout_ms)
        if api_key == FETCH.key:
            conn.last_fetch_id = self._correlation_id
        self._timeout_due(now_ms + (timeout_ms or self.settings.request_timeout_ms))
        conn.unwritten_requests.append((req, size))
        assert conn.sock is not None
        self._write(conn, now_ms)

    def _write(self, conn: _Connection, now_ms: int) -> None:
        sock = conn.sock
        assert sock is not None
        while conn.outgoing:
            try:
                if conn.tls:  # SSL sockets have no sendmsg
                    data = conn.tls_retry if conn.tls_retry is not None else self._tls_chunk(conn)
                    conn.tls_retry = data
                    written = sock.send(data)
                    conn.tls_retry = None
                else:
                    written = sock_send(sock.fileno(), conn.outgoing)
                    if written < 0:  # the socket's buffer is full
                        break
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                break
            except OSError as e:
                self._io_failed(conn, now_ms, "write to", e)
                return
            while written > 0:
                head = conn.outgoing[0]
                if written >= len(head):
                    written -= len(head)
                    conn.outgoing.popleft()
                    self._account_written(conn, len(head), now_ms)
                else:
                    conn.outgoing[0] = head[written:]
                    self._account_written(conn, written, now_ms)
                    written = 0
        if conn.pump is not None:
            conn.pump.core.idle = self._idle(conn)
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.outgoing else 0)
        # the selector's key says what it watches: told again only when that changes (an epoll_ctl less per request)
        if conn.sock is not None and conn.state != _CONNECTING and self._selector.get_key(conn.sock).events != events:
            self._selector.modify(conn.sock, events, conn)

    @staticmethod
    def _tls_chunk(conn: _Connection) -> memoryview | bytes:
        """The head buffer, or the small buffers at the head joined (one TLS record instead of several)."""
        head = conn.outgoing[0]
        if len(head) >= _TLS_COALESCE_BYTES // 4 or len(conn.outgoing) == 1:
            return head
        parts: list[memoryview] = []
        total = 0
        for view in conn.outgoing:
            if parts and total + len(view) > _TLS_COALESCE_BYTES:
                break
            parts.append(view)
            total += len(view)
        return head if len(parts) == 1 else b"".join(parts)

    def _account_written(self, conn: _Connection, nbytes: int, now_ms: int) -> None:
        while nbytes > 0 and conn.unwritten_requests:
            req, left = conn.unwritten_requests[0]
            if nbytes >= left:
                nbytes -= left
                conn.unwritten_requests.popleft()
                if req.expect_response:
                    if req.api_key == PRODUCE.key:
                        req.written_ns = time.monotonic_ns()
                    conn.in_flight.append(req)
                else:  # acks=0: complete once written
                    conn.unanswered.append(req.correlation_id)
                    self._completed.append(ClientResponse(conn.node_id, req.request, req.handler, None, None,
                                                          req.sent_ms, now_ms))
            else:
                conn.unwritten_requests[0] = (req, left - nbytes)
                nbytes = 0

    def _read(self, conn: _Connection, now_ms: int) -> None:
        sock = conn.sock
        assert sock is not None
        if conn.pump is not None and (stash := conn.pump.core.take_stash()):
            # what the wait read for the pump: up to the socket's end then (epoll tells again of more); no read
            # now, which would hand the GIL to a caller running Python until its next call
            conn.incoming += stash
            self._parse_frames(conn, now_ms)
            return
        read_bytes = 0
        buffer = self._read_buffer
        ended: KafkaError | OSError | None = None  # the peer's close, or a failed read, acted on after the parse
        while True:
            large = conn.large_frame
            try:
                if large is not None:  # straight into the frame's own memory
                    with memoryview(large) as view:
                        size_bytes = self._recv_into(conn, view[conn.large_frame_filled:])
                else:
                    size_bytes = self._recv_into(conn, buffer)
                if size_bytes < 0:  # nothing more there
                    break
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except OSError as e:
                ended = e
                break
            if not size_bytes:
                ended = NetworkError(f"node {conn.node_id} ({conn.host}:{conn.port}) closed the connection")
                break
            read_bytes += size_bytes
            if large is not None:
                conn.large_frame_filled += size_bytes
                if conn.large_frame_filled == len(large):
                    conn.large_frame = None
                    try:
                        self._on_frame(conn, bytes(large), now_ms)
                    except ProtocolError as e:
                        self._disconnect(conn, now_ms, e)
                        return
                    if conn.sock is None:
                        return
                continue
            conn.incoming += buffer[:size_bytes]
            if conn.tls:  # a TLS recv returns one record; decrypted bytes in sock.pending() never wake select
                if read_bytes >= _READ_CHUNK_BYTES and not sock.pending():  # type: ignore[attr-defined]
                    break
            elif size_bytes < _READ_CHUNK_BYTES:
                break
        # what came before a close is answered first (a TLS read goes on after a short record: a broker that writes
        # its SASL failure and closes at once was seen as a lost connection, and retried)
        self._parse_frames(conn, now_ms)
        if ended is None or conn.sock is None:
            return
        if isinstance(ended, OSError):
            self._io_failed(conn, now_ms, "read from", ended)
        else:
            self._disconnect(conn, now_ms, ended)

    @staticmethod
    def _recv_into(conn: _Connection, buffer: memoryview) -> int:
        """What the socket has, into buffer: bytes read, -1 when nothing is there; a plain socket's read through
        core/netio.pyx (the GIL handed back by the application's next call), a TLS socket's through ssl."""
        sock = conn.sock
        assert sock is not None
        return sock.recv_into(buffer) if conn.tls else sock_recv_into(sock.fileno(), buffer)

    def _io_failed(self, conn: _Connection, now_ms: int, what: str, error: OSError) -> None:
        if conn.tls and conn.state == _NEGOTIATING:
            # TLS 1.3: the server judges our certificate after the handshake; its alert ends the first exchange
            alert = error if security.is_tls_alert(error) else self._pending_tls_alert(conn)
            if alert is not None:
                self._fail_authentication(conn, now_ms, security.tls_failure(alert, self._peer(conn)))
                return
        self._disconnect(conn, now_ms, NetworkError(f"{what} node {conn.node_id} failed: {error}"))

    @staticmethod
    def _pending_tls_alert(conn: _Connection) -> ssl.SSLError | None:
        """The alert the server sent before closing, if a write failed first."""
        try:
            if conn.sock is not None:
                conn.sock.recv(1)
        except ssl.SSLError as e:
            return e if security.is_tls_alert(e) else None
        except OSError:
            pass
        return None

    def _parse_frames(self, conn: _Connection, now_ms: int) -> None:
        data = conn.incoming
        offset = 0
        try:
            while len(data) - offset >= 4:
                (size,) = _SIZE.unpack_from(data, offset)
                if size < 4 or size > self.settings.max_response_bytes:
                    raise ProtocolError(f"response frame of {size} bytes from node {conn.node_id} (the limit: "
                                        f"{self.settings.max_response_bytes} bytes)")
                if len(data) - offset - 4 < size:
                    if size > _READ_CHUNK_BYTES:  # the rest is received in place (_read)
                        conn.large_frame, conn.large_frame_filled = bytearray(size), len(data) - offset - 4
                        with memoryview(data) as view:
                            conn.large_frame[:conn.large_frame_filled] = view[offset + 4:]
                        offset = len(data)
                    break
                with memoryview(data) as view:
                    frame = bytes(view[offset + 4: offset + 4 + size])
                offset += 4 + size
                self._on_frame(conn, frame, now_ms)
                if conn.sock is None:
                    return
        except ProtocolError as e:
            self._disconnect(conn, now_ms, e)
            return
        del data[:offset]
        if conn.pump is not None:
            conn.pump.core.idle = self._idle(conn)

    def _on_frame(self, conn: _Connection, frame: bytes, now_ms: int) -> None:
        (correlation_id,) = _SIZE.unpack_from(frame)
        if conn.in_flight and conn.in_flight[0].correlation_id == correlation_id:
            req = conn.in_flight.popleft()
            if req.written_ns:  # to when the wait found it: a GIL held elsewhere meanwhile is not the broker's
                conn.produce_answer_us = max(1, wait_ended_us() - req.written_ns // 1000)
        elif correlation_id in conn.unanswered:  # an answer to an acks=0 request: already complete
            while conn.unanswered.popleft() != correlation_id:
                pass
            return
        else:
            raise ProtocolError(f"unexpected response (correlation id {correlation_id}) from node {conn.node_id}")
        try:
            _, response = decode_any_response(req.api_key, req.version, frame)
        except ProtocolError:
            # an UNSUPPORTED_VERSION answer to ApiVersions in a body layout we cannot read (librdkafka's mock
            # broker): its error code is still the first field; fall back to v0 as for a readable one
            if req.internal and req.version > 0 and frame[4:6] == b"\x00\x23":
                self._send_api_versions(conn, 0, now_ms)
                return
            conn.in_flight.appendleft(req)  # the disconnect this raises fails it with the others, not drops it
            raise
        if req.internal:
            if req.api_key == API_VERSIONS.key:
                self._on_api_versions(conn, req, response, now_ms)
            else:
                self._on_sasl(conn, response, now_ms)
            return
        self._completed.append(ClientResponse(conn.node_id, req.request, req.handler, response, None, req.sent_ms,
                                              now_ms))

    def _pumped(self, pump: _ConnectionPump, correlation_id: int, frame: bytes, written: int, now_ms: int) -> None:
        """A Fetch the wait fired on pump's connection (core/netio.pyx): in flight (what the socket did not take is
        written as the transport's own), with the Fetcher's handler for its answer."""
        conn = pump.conn
        assert pump.on_fired is not None
        conn.last_fetch_id = correlation_id
        handler = pump.on_fired(pump.core.fired_offsets())
        req = _Request(correlation_id, FETCH.key, FETCH_PUMP_VERSION, _PUMPED, handler, now_ms, True)
        self._timeout_due(now_ms + self.settings.request_timeout_ms)
        if written == len(frame):
            conn.in_flight.append(req)
            return
        conn.outgoing.append(memoryview(frame)[written:])
        conn.unwritten_requests.append((req, len(frame) - written))
        self._write(conn, now_ms)

    def _drain_wakeups(self) -> None:
        try:  # one recv: wakeup() writes one byte until this runs; a leftover only makes the next select return
            sock_recv_into(self._wake_r.fileno(), self._wake_buffer)
        except OSError:
            pass
        # cleared after draining: a wakeup racing with this sees the flag set and skips its byte, but its append
        # happened before our next ready(), so nothing is missed
        self._wakeup_pending = False


def _bootstrap_addresses(settings: ConnectionSettings) -> list[tuple[str, int]]:
    """bootstrap.servers as (host, port); client.dns.lookup=resolve_canonical_bootstrap_servers_only (Java's
    ClientUtils): each name is resolved and replaced by the canonical (reverse-DNS) names of its addresses, which is
    what a Kerberos or TLS setup behind a DNS alias needs. A name that does not resolve is kept (tried, and its
    failure logged, like any other)."""
    addresses = []
    for server in settings.bootstrap_servers:
        host, _, port = server.rpartition(":")
        host = host.strip("[]")
        if settings.client_dns_lookup != "resolve_canonical_bootstrap_servers_only":
            addresses.append((host, int(port)))
            continue
        try:
            infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except (OSError, ValueError):
            addresses.append((host, int(port)))
            continue
        for info in infos:
            ip = str(info[4][0])
            try:
                canonical = socket.getnameinfo((ip, int(port)), socket.NI_NAMEREQD)[0]
            except OSError:
                canonical = ip  # no reverse name: Java's getCanonicalHostName gives the address back too
            if (canonical, int(port)) not in addresses:
                addresses.append((canonical, int(port)))
    return addresses
