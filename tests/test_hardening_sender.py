"""Issue 13, the sender side: no backoff before the first InitProducerId, int configs bounded as Java types them, a
repeating sender-loop error logged without flooding, callbacks and interceptors raising BaseException, odd config
inputs, unclosed producers (garbage-collected or alive at exit), a peer that is not a Kafka broker, the embedded
broker's log file."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import socketserver
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from typing import Any

import pytest

from cykafka import ConfigError, KafkaTimeoutError, Producer
from cykafka.adapters.clock import ManualClock, SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.broker import EmbeddedBroker
from cykafka.ports import Ports
from cykafka.sender import SenderThread
from cykafka.verify import read_back

TOPIC = "t"


class SlowConnects(FakeCluster):
    """The fake cluster with connections set up as SocketTransport's are: ready() starts one, it completes during the
    next poll(), and meanwhile connection_delay_ms() is the setup timeout left."""

    SETUP_TIMEOUT_MS = 10000

    def __init__(self, clock: Any, **kwargs: Any) -> None:
        super().__init__(clock, **kwargs)
        self.setting_up: set[int] = set()

    def ready(self, node_id: int, now_ms: int) -> bool:
        if node_id in self._connected or node_id in self.unreachable:
            return super().ready(node_id, now_ms)
        self.setting_up.add(node_id)
        return False

    def connection_delay_ms(self, node_id: int, now_ms: int) -> int:
        return self.SETUP_TIMEOUT_MS if node_id in self.setting_up else super().connection_delay_ms(node_id, now_ms)

    def poll(self, timeout_ms: int, now_ms: int) -> list[Any]:
        self._connected |= self.setting_up
        self.setting_up.clear()
        return super().poll(timeout_ms, now_ms)


# -- 4: the first record waits for no retry.backoff.ms -------------------------------------------------------------

def test_first_record_goes_without_waiting_a_retry_backoff() -> None:
    """Java sends InitProducerId as soon as a connection is ready; it backs off only after a failure. The clock
    never moves here: a backoff anywhere on the way would leave the record pending."""
    clock = ManualClock()
    cluster = SlowConnects(clock, num_brokers=3)
    cluster.create_topic(TOPIC, 4)
    producer = Producer({"bootstrap.servers": "fake:9092", "linger.ms": 0, "retry.backoff.ms": 10000,
                         "retry.backoff.max.ms": 10000},
                        ports=Ports(transport=cluster, clock=clock, start_sender=False))
    producer._metadata.add_topic(TOPIC, clock.monotonic_ms())
    for _ in range(6):
        producer.sender.run_once()
    future = producer.send(TOPIC, b"v", partition=0)
    for _ in range(10):
        producer.sender.run_once()
    assert future.result(0).offset == 0
    assert producer.sender.txn is not None and producer.sender.txn.producer_id >= 0


def test_first_record_with_a_long_retry_backoff_is_delivered_by_a_broker(broker: EmbeddedBroker) -> None:
    """retry.backoff.ms=10000 > delivery.timeout.ms=5000: nothing fails, so nothing may wait a backoff."""
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "retry.backoff.ms": 10000,
                   "retry.backoff.max.ms": 10000, "delivery.timeout.ms": 5000, "request.timeout.ms": 4000,
                   "linger.ms": 0}) as producer:
        metadata = producer.send("hardening-first-record", b"v").result(30)
    assert metadata.offset >= 0


# -- 5: int configs bounded as Java types them; a repeating sender-loop error does not flood the log ---------------

JAVA_INT_KEYS = ["batch.size", "delivery.timeout.ms", "request.timeout.ms", "max.request.size", "retries",
                 "max.in.flight.requests.per.connection", "transaction.timeout.ms", "send.buffer.bytes",
                 "receive.buffer.bytes", "linger.ms"]  # linger.ms is a long in Java, used as an int
JAVA_LONG_KEYS = ["buffer.memory", "max.block.ms", "retry.backoff.ms", "retry.backoff.max.ms", "reconnect.backoff.ms",
                  "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms",
                  "socket.connection.setup.timeout.max.ms", "metadata.max.age.ms", "metadata.max.idle.ms",
                  "partitioner.availability.timeout.ms", "connections.max.idle.ms"]


@pytest.mark.parametrize("key", JAVA_INT_KEYS + JAVA_LONG_KEYS)
def test_int_configs_are_bounded_as_java_types_them(key: str) -> None:
    too_big = 2**31 if key in JAVA_INT_KEYS else 2**63
    for value in (too_big, str(too_big)):
        with pytest.raises(ConfigError, match=rf"{key} must be in \[-?\d+, {too_big - 1}\], got {too_big}"):
            Producer({"bootstrap.servers": "fake:9092", key: value},
                     ports=Ports(transport=FakeCluster(ManualClock()), start_sender=False))


def deliver_one(config: dict[str, Any]) -> None:
    """A record through the fake cluster with the sender thread running (SystemClock)."""
    cluster = FakeCluster(SystemClock(), num_brokers=1)
    with Producer({"bootstrap.servers": "fake:9092", "linger.ms": 0, **config},
                  ports=Ports(transport=cluster)) as producer:
        assert producer.send(TOPIC, b"v").result(10).offset == 0


@pytest.mark.parametrize("key", JAVA_LONG_KEYS)
def test_a_long_config_at_its_largest_value_works(key: str, caplog: pytest.LogCaptureFixture) -> None:
    config: dict[str, Any] = {key: 2**63 - 1}
    if key == "retry.backoff.ms":
        config["retry.backoff.max.ms"] = 2**63 - 1
    if key == "socket.connection.setup.timeout.ms":
        config["socket.connection.setup.timeout.max.ms"] = 2**63 - 1
    with caplog.at_level(logging.ERROR, logger="cykafka"):
        deliver_one(config)
    assert not caplog.records, [r.getMessage() for r in caplog.records]


@pytest.mark.parametrize("key", ["send.buffer.bytes", "receive.buffer.bytes"])
def test_socket_buffer_sizes_at_their_largest_value_connect(broker: EmbeddedBroker, key: str,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="cykafka"), Producer(
            {"bootstrap.servers": broker.bootstrap_servers, key: 2**31 - 1, "max.block.ms": 10000}) as producer:
        assert producer.send("hardening-buffers", b"v").result(10).offset >= 0
    assert not caplog.records, [r.getMessage() for r in caplog.records]


def test_a_repeating_sender_loop_error_is_logged_once_then_counted(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    producer = Producer({"bootstrap.servers": "fake:9092"},
                        ports=Ports(transport=FakeCluster(clock), clock=clock, start_sender=False))
    thread = SenderThread(producer.sender, "test-sender")  # driven by hand, never started

    def broken() -> None:
        raise TypeError("a bug in the loop")

    producer.sender.run_once = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.DEBUG, logger="cykafka"):
        for _ in range(1000):  # 10 ms apart: 10 s
            thread._run_once_logged()
    logged = [r for r in caplog.records if r.name == "cykafka.producer"]
    assert len(logged) == 1 and logged[0].exc_info is not None and "a bug in the loop" in str(logged[0].exc_info[1])
    clock.advance(SenderThread.REPEAT_LOG_INTERVAL_MS)
    with caplog.at_level(logging.DEBUG, logger="cykafka"):
        thread._run_once_logged()
    summary = [r.getMessage() for r in caplog.records if r.name == "cykafka.producer"][1:]
    assert summary == ["unexpected error in the sender loop repeated 1000 more time(s): TypeError: a bug in the loop"]
    assert isinstance(thread.last_error, TypeError)


# -- 6: the sender thread survives anything a callback or interceptor raises ---------------------------------------

class CustomBaseError(BaseException):
    pass


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt(), CustomBaseError("custom"), ValueError("v")])
def test_a_callback_raising_base_exception_does_not_stop_the_sender(raised: BaseException,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    def callback(err: Any, md: Any) -> None:
        raise raised

    cluster = FakeCluster(SystemClock(), num_brokers=1)
    with caplog.at_level(logging.ERROR, logger="cykafka"), Producer(
            {"bootstrap.servers": "fake:9092", "linger.ms": 0}, ports=Ports(transport=cluster)) as producer:
        producer.send(TOPIC, b"first", on_delivery=callback).result(10)
        later = [producer.send(TOPIC, b"later", on_delivery=callback) for _ in range(3)]
        assert producer.flush(10) == 0
        assert [f.result(0).offset for f in later] == [1, 2, 3]
        assert producer._thread is not None and producer._thread.is_alive()
    assert sum("on_delivery callback raised" in r.getMessage() for r in caplog.records) == 4
    assert all(r.exc_info is not None and r.exc_info[1] is raised for r in caplog.records)


class RaisingInterceptor:
    def __init__(self, raised: BaseException) -> None:
        self.raised = raised
        self.acknowledged = 0

    def on_send(self, record: Any) -> Any:
        return record

    def on_acknowledgement(self, metadata: Any, error: Any) -> None:
        self.acknowledged += 1
        raise self.raised


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt(), CustomBaseError("custom")])
def test_an_interceptor_raising_base_exception_does_not_stop_the_sender(raised: BaseException,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    interceptor = RaisingInterceptor(raised)
    cluster = FakeCluster(SystemClock(), num_brokers=1)
    with caplog.at_level(logging.ERROR, logger="cykafka"), Producer(
            {"bootstrap.servers": "fake:9092", "linger.ms": 0, "interceptor.classes": [interceptor]},
            ports=Ports(transport=cluster)) as producer:
        futures = [producer.send(TOPIC, b"v%d" % i) for i in range(3)]
        assert producer.flush(10) == 0
        assert sorted(f.result(0).offset for f in futures) == [0, 1, 2]
        assert producer._thread is not None and producer._thread.is_alive()
    assert interceptor.acknowledged == 3
    assert sum("on_acknowledgement raised" in r.getMessage() for r in caplog.records) == 3


# -- 7: odd config inputs are typed ConfigErrors naming the key ----------------------------------------------------

B = {"bootstrap.servers": "fake:9092"}


@pytest.mark.parametrize(("config", "message"), [
    ("bootstrap.servers=fake:9092", r"config must be a mapping .* got a str"),
    ([("bootstrap.servers", "fake:9092")], r"config must be a mapping .* got a list"),
    ({**B, 7: 1}, r"config keys must be str .* got 7"),
    ({**B, ("linger.ms",): 1}, r"config keys must be str .* got \('linger.ms',\)"),
    ({**B, "linger.ms": 2**63}, r"linger.ms must be in \[0, 2147483647\]"),
    ({**B, "max.block.ms": 2**63}, r"max.block.ms must be in \[0, 9223372036854775807\]"),
    ({**B, "client.id": 5}, r"client.id must be a string, got 5"),
    ({**B, "client.id": "x" * 32768}, r"client.id must be at most 32767 bytes in UTF-8, got 32768"),
    ({**B, "client.id": "\ud800"}, r"client.id must be valid text"),
    ({**B, "transactional.id": "x" * 40000}, r"transactional.id must be at most 32767 bytes"),
    ({**B, "key.serializer": [1, 2]}, r"key.serializer must be a callable or one of bytes, str, int, json"),
    ({"bootstrap.servers": "a\x00b:9092"}, r"bootstrap.servers entries must be host:port"),
    ({"bootstrap.servers": "x" * 300 + ":9092"}, r"bootstrap.servers entries must be host:port"),
    ({"bootstrap.servers": "my host:9092"}, r"bootstrap.servers entries must be host:port"),
])
def test_odd_config_inputs_raise_config_error(config: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Producer(config, ports=Ports(transport=FakeCluster(ManualClock()), start_sender=False))


def test_an_array_as_serializer_is_a_config_error() -> None:
    np = pytest.importorskip("numpy")
    with pytest.raises(ConfigError, match=r"value\.serializer must be a callable"):
        Producer({**B, "value.serializer": np.array([1, 2])},
                 ports=Ports(transport=FakeCluster(ManualClock()), start_sender=False))


def test_client_id_none_is_the_default() -> None:
    producer = Producer({**B, "client.id": None}, ports=Ports(transport=FakeCluster(ManualClock()), start_sender=False))
    assert producer.config.client_id.startswith("cykafka-producer-")


# -- a: a producer nobody references is closed: its thread and sockets go, with a ResourceWarning ------------------

def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def sender_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if isinstance(t, SenderThread)]


def wait_until(condition: Any, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


@pytest.mark.parametrize("transactional", [False, True])
def test_a_dropped_producer_is_closed_and_delivers_what_it_queued(broker: EmbeddedBroker, transactional: bool) -> None:
    gc.collect()
    threads_before, fds_before = len(sender_threads()), open_fds()
    futures = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(5):
            config = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 200}
            if transactional:
                config["transactional.id"] = f"hardening-dropped-{i}"
            producer = Producer(config)
            if transactional:
                producer.init_transactions(30)
                producer.begin_transaction()
            futures.append(producer.send("hardening-dropped", b"%d" % i))  # lingers: queued when dropped
            del producer
        gc.collect()
        assert wait_until(lambda: len(sender_threads()) <= threads_before), sender_threads()
        assert wait_until(lambda: open_fds() <= fds_before), (open_fds(), fds_before)
    unclosed = [w for w in caught if issubclass(w.category, ResourceWarning) and "unclosed cykafka Producer" in
                str(w.message)]
    assert len(unclosed) == 5
    assert all(f.done() for f in futures)
    if not transactional:  # (a transactional one aborts its open transaction, as close() does)
        assert all(f.result(0).offset >= 0 for f in futures)


def test_a_dropped_producer_that_cannot_deliver_logs_how_many_records_it_lost(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cykafka.producer.UNCLOSED_TIMEOUT_S", 0.2, raising=False)
    cluster = FakeCluster(SystemClock(), num_brokers=1)
    producer = Producer({"bootstrap.servers": "fake:9092", "linger.ms": 0}, ports=Ports(transport=cluster))
    producer.partitions_for(TOPIC)
    cluster.unreachable.add(0)
    cluster.disconnect(0)
    futures = [producer.send(TOPIC, b"v") for _ in range(3)]
    thread = producer._thread
    assert thread is not None
    with caplog.at_level(logging.WARNING, logger="cykafka"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        del producer
        gc.collect()
        thread.join(30)
    assert not thread.is_alive()
    assert all(isinstance(f.exception(0), Exception) for f in futures)
    assert any("3 record(s) of the unclosed producer" in r.getMessage() for r in caplog.records), caplog.text


# -- b: at interpreter exit, live producers are closed within a budget ---------------------------------------------

def run_script(source: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source), *args], capture_output=True, text=True,
                          timeout=120, cwd="/")


def test_records_sent_without_flush_are_delivered_at_exit(broker: EmbeddedBroker) -> None:
    topic = f"hardening-exit-{time.monotonic_ns()}"
    done = run_script("""
        import sys
        from cykafka import Producer
        producer = Producer({"bootstrap.servers": sys.argv[1], "linger.ms": 100})
        for i in range(1000):
            producer.send(sys.argv[2], b"%d" % i)
    """, broker.bootstrap_servers, topic)
    assert done.returncode == 0, done.stderr
    assert "not delivered" not in done.stderr
    assert sorted(r.value for r in read_back(broker.bootstrap_servers, topic)) == sorted(b"%d" % i for i in range(1000))


def test_records_that_cannot_be_delivered_by_exit_are_counted_in_a_warning() -> None:
    done = run_script("""
        import cykafka.producer
        from cykafka import Producer
        from cykafka.adapters.clock import SystemClock
        from cykafka.adapters.fake_cluster import FakeCluster
        from cykafka.ports import Ports
        cykafka.producer.UNCLOSED_TIMEOUT_S = 0.5
        cluster = FakeCluster(SystemClock(), num_brokers=1)
        producer = Producer({"bootstrap.servers": "fake:9092", "linger.ms": 0}, ports=Ports(transport=cluster))
        producer.partitions_for("t")
        cluster.unreachable.add(0)
        cluster.disconnect(0)
        for _ in range(3):
            producer.send("t", b"v")
    """)
    assert done.returncode == 0, done.stderr
    assert "3 record(s) of producer cykafka-producer-1 were not delivered by interpreter exit" in done.stderr


# -- c: a peer that does not speak Kafka is named as such ----------------------------------------------------------

class GarbageServer(socketserver.ThreadingTCPServer):
    """A TCP server on 127.0.0.1 answering every connection with bytes that are not Kafka's protocol."""

    daemon_threads = True

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.connections = 0
        super().__init__(("127.0.0.1", 0), _GarbageHandler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _GarbageHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server = self.server
        assert isinstance(server, GarbageServer)
        server.connections += 1
        self.request.settimeout(1.0)
        with contextlib.suppress(OSError):
            self.request.recv(4096)
            self.request.sendall(server.answer)
            self.request.recv(4096)  # until the client closes


@pytest.mark.parametrize("answer", [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                                    b"\x00\x00\x00\x08garbage!"])
def test_a_peer_that_is_not_kafka_is_named_in_a_warning_and_the_timeout(answer: bytes,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    server = GarbageServer(answer)
    try:
        with caplog.at_level(logging.INFO, logger="cykafka"), Producer(
                {"bootstrap.servers": f"127.0.0.1:{server.port}", "max.block.ms": 1500,
                 "reconnect.backoff.max.ms": 100}) as producer:
            with pytest.raises(KafkaTimeoutError, match=f"the peer at 127.0.0.1:{server.port} is not a Kafka "
                                                        f"broker"):
                producer.send("t", b"v")
            producer.close(0)
        assert server.connections >= 3  # the producer kept trying
    finally:
        server.close()
    warnings_logged = [r for r in caplog.records if r.levelno == logging.WARNING and "not a Kafka broker" in
                       r.getMessage()]
    assert len(warnings_logged) == 1, [r.getMessage() for r in warnings_logged]


# -- d: the embedded broker removes its log file on stop -----------------------------------------------------------

def test_embedded_broker_removes_its_temp_log_file_on_stop(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("CYKAFKA_KEEP_BROKER_LOG", raising=False)
    broker = EmbeddedBroker().start()
    assert broker.log_path is not None and os.path.dirname(broker.log_path) == str(tmp_path)
    assert os.path.exists(broker.log_path)
    broker.stop()
    assert list(tmp_path.iterdir()) == []
    kept = EmbeddedBroker(keep_log=True)
    kept.start().stop()
    monkeypatch.setenv("CYKAFKA_KEEP_BROKER_LOG", "1")
    kept_by_env = EmbeddedBroker()
    kept_by_env.start().stop()
    assert sorted(str(p) for p in tmp_path.iterdir()) == sorted([str(kept.log_path), str(kept_by_env.log_path)])
    own = tmp_path / "own.log"
    monkeypatch.delenv("CYKAFKA_KEEP_BROKER_LOG")
    EmbeddedBroker(log_path=str(own)).start().stop()
    assert own.exists()  # the caller's own file stays
