"""A loopback Kafka proxy for fault tests: forwards 127.0.0.1 connections to one broker (rewriting the broker
addresses in Metadata/FindCoordinator answers to itself) and cuts every connection on command, between frames
(drop_all) or in the middle of the next request or response (cut_mid_frame); `rewrite[api_key]` changes answers on
their way (an error the broker would not give on its own). One thread, bounded, stopped by close().
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from cykafka.protocol import decode_response, encode_response
from cykafka.protocol.apis import FIND_COORDINATOR, METADATA

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api key, version, correlation id
_REWRITTEN = (METADATA.key, FIND_COORDINATOR.key)


class _Pipe:
    """One client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.from_client = bytearray()
        self.from_upstream = bytearray()
        self.to_client = bytearray()
        self.to_upstream = bytearray()
        self.requests: dict[int, tuple[int, int]] = {}  # correlation id -> (api key, version)


class KafkaProxy:
    """Forwards 127.0.0.1 connections to one broker; rewrites the broker addresses it answers with to its own; drops
    every connection on drop_all(). One thread, at most max_connections clients, stopped by close()."""

    def __init__(self, upstream_host: str, upstream_port: int, max_connections: int = 64) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.max_connections = max_connections
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._pipes: list[_Pipe] = []
        self._lock = threading.Lock()
        self._drop = False
        self._cut_after_bytes: int | None = None  # cut_mid_frame(): forward this many bytes of the next frame, then cut
        self._stop = False
        # api key -> function(decoded answer) -> answer: what the broker said, rewritten on its way to the client
        self.rewrite: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
        self.drops = 0
        self.cut_requests = 0  # requests in flight when connections were cut
        self.connections = 0
        self._thread = threading.Thread(target=self._run, name="kafka-proxy", daemon=True)
        self._thread.start()

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def drop_all(self, timeout_s: float = 5.0) -> None:
        """Closes every client and upstream connection (requests in flight are lost or answered into the void);
        returns once the proxy thread did it (at most timeout_s), so drops never merge."""
        with self._lock:
            self._drop = True
            target = self.drops + 1
        self._wait_for_drops(target, timeout_s)

    def cut_mid_frame(self, after_bytes: int, timeout_s: float = 5.0) -> bool:
        """The next frame in either direction (a request or a response) is forwarded only up to `after_bytes`, then
        every connection is cut. Returns once that happened (False if no frame passed within timeout_s)."""
        with self._lock:
            self._cut_after_bytes = after_bytes
            target = self.drops + 1
        self._wait_for_drops(target, timeout_s)
        with self._lock:
            self._cut_after_bytes = None
        return self.drops >= target

    def _wait_for_drops(self, target: int, timeout_s: float) -> None:
        """Until the proxy thread has dropped its connections `target` times in all (at most timeout_s)."""
        deadline = time.monotonic() + timeout_s
        while self.drops < target and time.monotonic() < deadline:
            time.sleep(0.0005)

    def close(self) -> None:
        with self._lock:
            self._stop = True
        self._thread.join(10)
        for pipe in self._pipes:
            self._close_pipe(pipe)
        self._selector.close()
        self._listener.close()

    # -- the loop --------------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                stop, drop, self._drop = self._stop, self._drop, False
            if stop:
                return
            if drop:
                for pipe in list(self._pipes):
                    self.cut_requests += len(pipe.requests)  # forwarded, not answered yet
                    self._close_pipe(pipe)
                self.drops += 1
            for key, events in self._selector.select(0.002):  # a drop_all() waits for this loop
                if key.data is None:
                    self._accept()
                    continue
                pipe, is_client = key.data
                if pipe not in self._pipes:
                    continue
                try:
                    if events & selectors.EVENT_READ:
                        self._read(pipe, is_client)
                    if pipe in self._pipes and events & selectors.EVENT_WRITE:
                        self._write(pipe)
                except OSError:
                    self._close_pipe(pipe)

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        if len(self._pipes) >= self.max_connections:
            client.close()
            return
        upstream = socket.create_connection(self.upstream, timeout=5)
        for sock in (client, upstream):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pipe = _Pipe(client, upstream)
        self._pipes.append(pipe)
        self.connections += 1
        self._selector.register(client, selectors.EVENT_READ, (pipe, True))
        self._selector.register(upstream, selectors.EVENT_READ, (pipe, False))

    def _close_pipe(self, pipe: _Pipe) -> None:
        if pipe in self._pipes:
            self._pipes.remove(pipe)
        for sock in (pipe.client, pipe.upstream):
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError):
                pass
            sock.close()

    def _read(self, pipe: _Pipe, is_client: bool) -> None:
        sock = pipe.client if is_client else pipe.upstream
        try:
            chunk = sock.recv(1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self._close_pipe(pipe)
            return
        buffer = pipe.from_client if is_client else pipe.from_upstream
        buffer += chunk
        offset = 0
        while len(buffer) - offset >= 4:
            (size,) = _SIZE.unpack_from(buffer, offset)
            if len(buffer) - offset - 4 < size:
                break
            frame = bytes(buffer[offset + 4: offset + 4 + size])
            offset += 4 + size
            if is_client:
                api_key, version, correlation_id = _HEADER.unpack_from(frame)
                pipe.requests[correlation_id] = (api_key, version)
                out = _SIZE.pack(len(frame)) + frame
            else:
                out = self._answer(pipe, frame)
            with self._lock:
                cut, self._cut_after_bytes = self._cut_after_bytes, None
            if cut is not None:  # half a request to the broker, or half a response to the client, then nothing
                sock = pipe.upstream if is_client else pipe.client
                try:
                    sock.setblocking(True)
                    sock.sendall(out[:max(1, min(cut, len(out) - 1))])
                except OSError:
                    pass
                for other in list(self._pipes):
                    self.cut_requests += len(other.requests)
                    self._close_pipe(other)
                self.drops += 1
                return
            (pipe.to_upstream if is_client else pipe.to_client).extend(out)
        del buffer[:offset]
        self._write(pipe)

    def _answer(self, pipe: _Pipe, frame: bytes) -> bytes:
        (correlation_id,) = _SIZE.unpack_from(frame)
        api_key, version = pipe.requests.pop(correlation_id, (-1, -1))
        rewrite = self.rewrite.get(api_key)
        if api_key not in _REWRITTEN and rewrite is None:
            return _SIZE.pack(len(frame)) + frame
        _, response = decode_response(api_key, version, frame)
        here = {"host": "127.0.0.1", "port": self.port}
        if api_key == METADATA.key:
            response["brokers"] = [{**b, **here} for b in response["brokers"]]
        elif api_key == FIND_COORDINATOR.key:  # the body's own fields (v1-3) and each coordinator (v4+)
            response.update(here, coordinators=[{**c, **here} for c in response["coordinators"]])
        if rewrite is not None:
            response = rewrite(response)
        return encode_response(api_key, version, correlation_id, response)

    def _write(self, pipe: _Pipe) -> None:
        for sock, out, is_client in ((pipe.client, pipe.to_client, True), (pipe.upstream, pipe.to_upstream, False)):
            if out:
                try:
                    sent = sock.send(out)
                except BlockingIOError:
                    sent = 0
                del out[:sent]
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0)
            self._selector.modify(sock, events, (pipe, is_client))


