"""A throttling TCP proxy on 127.0.0.1 for the overload bench: bytes from clients to the broker are paced to
rate_bytes_per_s (one token bucket for all connections), answers flow back freely. The broker must advertise the
proxy's port (EmbeddedBroker(advertised_port=...)) so that clients stay behind it after the bootstrap."""

from __future__ import annotations

import socket
import threading
import time


class ThrottleProxy:
    def __init__(self, target_port: int, rate_bytes_per_s: float, port: int = 0) -> None:
        self.target_port = target_port
        self.rate_bytes_per_s = rate_bytes_per_s
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._next_free_s = 0.0  # when the bucket lets the next byte through
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()

    def start(self) -> ThrottleProxy:
        self._spawn(self._accept)
        return self

    def stop(self) -> None:
        self._stopped.set()
        for sock in [self._listener, *self._sockets]:
            try:
                sock.close()
            except OSError:
                pass
        for thread in self._threads:
            thread.join(5)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sockets += [client, upstream]
            self._spawn(self._pump, client, upstream, True)
            self._spawn(self._pump, upstream, client, False)

    def _pace(self, size_bytes: int) -> None:
        with self._lock:
            now = time.monotonic()
            self._next_free_s = max(self._next_free_s, now) + size_bytes / self.rate_bytes_per_s
            delay_s = self._next_free_s - now
        if delay_s > 0:
            time.sleep(delay_s)

    def _pump(self, source: socket.socket, sink: socket.socket, paced: bool) -> None:
        try:
            while not self._stopped.is_set():
                data = source.recv(16384 if paced else 262144)
                if not data:
                    break
                if paced:
                    self._pace(len(data))
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
