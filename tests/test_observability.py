"""Errors you can see (issue 30, point 1): the per-component loggers under `cykafka`, Java's connection-failure
WARNING once per node per failure series (naming the address) with DEBUG for the rest of the series, and error_cb
(confluent-kafka's name and call shape) hearing client-level errors: every client with a dead bootstrap (a loopback
port nobody listens on) within 5 s, an authentication failure on Apache Kafka's SASL listener, a producer's fatal
error (a transactional id its user may not write), and a callback that raises neither stops the client's thread nor
goes unlogged."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from cykafka import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Admin,
    Consumer,
    PatternType,
    Producer,
    ResourcePattern,
    ResourceType,
)
from cykafka.aio import AsyncConsumer, AsyncProducer
from cykafka.aio_share import AsyncShareConsumer
from cykafka.broker import free_port
from cykafka.errors import (
    AllBrokersDownError,
    AuthenticationError,
    KafkaError,
    TransactionalIdAuthorizationError,
    TransactionFatalError,
)
from cykafka.share_consumer import ShareConsumer

DEADLINE_S = 5.0


def _dead_bootstrap() -> str:
    return f"127.0.0.1:{free_port()}"  # free: nobody listens there


class _Heard:
    """error_cb: collects what it is handed."""

    def __init__(self) -> None:
        self.errors: list[KafkaError] = []

    def __call__(self, error: KafkaError) -> None:
        self.errors.append(error)


def _warnings_naming(caplog: pytest.LogCaptureFixture, address: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING and address in r.getMessage()]


def _drive(action: Callable[[], Any], done: Callable[[], bool], timeout_s: float = DEADLINE_S) -> float:
    """Runs `action` (which may block) on a daemon thread and waits, bounded, until `done()`; the seconds it took."""
    started = time.monotonic()
    threading.Thread(target=_quietly(action), daemon=True).start()
    while not done() and time.monotonic() - started < timeout_s:
        time.sleep(0.05)
    return time.monotonic() - started


def _quietly(action: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        try:
            action()
        except KafkaError:  # the client's own timeout once the test has looked: not what is tested here
            pass
    return run


def _assert_seen(caplog: pytest.LogCaptureFixture, heard: _Heard, address: str, took_s: float) -> None:
    warnings = _warnings_naming(caplog, address)
    assert warnings, f"no WARNING naming {address} within {DEADLINE_S} s: {[r.getMessage() for r in caplog.records]}"
    assert warnings[0].name == "cykafka.network"
    assert "could not be established" in warnings[0].getMessage()
    assert any(isinstance(e, AllBrokersDownError) and address in str(e) for e in heard.errors), heard.errors
    assert took_s < DEADLINE_S


def _config(address: str, heard: _Heard, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": address, "error_cb": heard, **extra}


def test_producer_with_a_dead_bootstrap_warns_and_calls_error_cb(caplog: pytest.LogCaptureFixture) -> None:
    address, heard = _dead_bootstrap(), _Heard()
    with caplog.at_level(logging.INFO, logger="cykafka"):
        producer = Producer(_config(address, heard, **{"max.block.ms": 6000}))
        try:
            took_s = _drive(lambda: producer.send("t", b"x"),
                            lambda: bool(heard.errors) and bool(_warnings_naming(caplog, address)))
        finally:
            producer.close(1)
    _assert_seen(caplog, heard, address, took_s)


def test_consumer_with_a_dead_bootstrap_raises_nothing_warns_and_calls_error_cb(
        caplog: pytest.LogCaptureFixture) -> None:
    address, heard = _dead_bootstrap(), _Heard()
    with caplog.at_level(logging.INFO, logger="cykafka"):
        consumer = Consumer(_config(address, heard, **{"group.id": "g-dead"}))
        try:
            consumer.subscribe(["t"])
            started = time.monotonic()
            polled: list[Any] = []
            while time.monotonic() - started < DEADLINE_S and not (heard.errors and _warnings_naming(caplog, address)):
                polled.extend(consumer.poll(0.2))  # Java's contract: poll raises nothing, returns nothing
            took_s = time.monotonic() - started
        finally:
            consumer.close()
    assert polled == []
    _assert_seen(caplog, heard, address, took_s)


def test_admin_with_a_dead_bootstrap_warns_and_calls_error_cb(caplog: pytest.LogCaptureFixture) -> None:
    address, heard = _dead_bootstrap(), _Heard()
    with caplog.at_level(logging.INFO, logger="cykafka"):
        admin = Admin(_config(address, heard))
        try:
            took_s = _drive(lambda: admin.list_topics(timeout_ms=6000),
                            lambda: bool(heard.errors) and bool(_warnings_naming(caplog, address)))
        finally:
            admin.close()
    _assert_seen(caplog, heard, address, took_s)


def test_async_clients_with_a_dead_bootstrap_warn_and_call_error_cb(caplog: pytest.LogCaptureFixture) -> None:
    producer_address, consumer_address = _dead_bootstrap(), _dead_bootstrap()
    producer_heard, consumer_heard = _Heard(), _Heard()

    async def run() -> float:
        started = time.monotonic()
        producer = AsyncProducer(_config(producer_address, producer_heard, **{"max.block.ms": 6000}))
        consumer = AsyncConsumer(_config(consumer_address, consumer_heard, **{"group.id": "g-dead"}))
        await producer.start()
        await consumer.start()
        try:
            sending = asyncio.ensure_future(producer.send("t", b"x"))
            await consumer.subscribe(["t"])
            while time.monotonic() - started < DEADLINE_S and not (
                    producer_heard.errors and consumer_heard.errors
                    and _warnings_naming(caplog, producer_address) and _warnings_naming(caplog, consumer_address)):
                assert await consumer.poll(0.2) == []
            took_s = time.monotonic() - started
            sending.cancel()
            return took_s
        finally:
            await consumer.stop()
            await producer.stop(1)

    with caplog.at_level(logging.INFO, logger="cykafka"):
        took_s = asyncio.run(run())
    _assert_seen(caplog, producer_heard, producer_address, took_s)
    _assert_seen(caplog, consumer_heard, consumer_address, took_s)


def test_share_consumers_with_a_dead_bootstrap_warn_and_call_error_cb(caplog: pytest.LogCaptureFixture) -> None:
    address, heard = _dead_bootstrap(), _Heard()
    async_address, async_heard = _dead_bootstrap(), _Heard()
    with caplog.at_level(logging.INFO, logger="cykafka"):
        consumer = ShareConsumer(_config(address, heard, **{"group.id": "s-dead"}))
        try:
            consumer.subscribe(["t"])
            started = time.monotonic()
            while time.monotonic() - started < DEADLINE_S and not (heard.errors and _warnings_naming(caplog, address)):
                assert consumer.poll(0.2) == []
            took_s = time.monotonic() - started
        finally:
            consumer.close(1)  # nothing to acknowledge to a broker that never answered

        async def run() -> float:
            share = AsyncShareConsumer(_config(async_address, async_heard, **{"group.id": "s-dead"}))
            try:
                await share.subscribe(["t"])
                started = time.monotonic()
                while time.monotonic() - started < DEADLINE_S and not (
                        async_heard.errors and _warnings_naming(caplog, async_address)):
                    assert await share.poll(0.2) == []
                return time.monotonic() - started
            finally:
                await share.close(1)

        async_took_s = asyncio.run(run())
    _assert_seen(caplog, heard, address, took_s)
    _assert_seen(caplog, async_heard, async_address, async_took_s)


def test_connection_failures_warn_once_per_series_then_debug(caplog: pytest.LogCaptureFixture) -> None:
    address = _dead_bootstrap()
    with caplog.at_level(logging.DEBUG, logger="cykafka"):
        producer = Producer({"bootstrap.servers": address, "max.block.ms": 3000, "reconnect.backoff.max.ms": 200})
        try:
            _drive(lambda: producer.send("t", b"x"),
                   lambda: len([r for r in caplog.records if "could not be established" in r.getMessage()]) >= 4)
        finally:
            producer.close(1)
    failures = [r for r in caplog.records if "could not be established" in r.getMessage()]
    assert len(failures) >= 4, [r.getMessage() for r in caplog.records]
    assert [r.levelname for r in failures[:4]] == ["WARNING", "DEBUG", "DEBUG", "DEBUG"]
    assert f"Connection to node -1 ({address})" in failures[0].getMessage()


def test_an_error_cb_that_raises_is_logged_and_the_client_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    address = _dead_bootstrap()
    calls: list[KafkaError] = []

    def broken(error: KafkaError) -> None:
        calls.append(error)
        raise RuntimeError("a bug in the user's error_cb")

    with caplog.at_level(logging.DEBUG, logger="cykafka"):
        consumer = Consumer({"bootstrap.servers": address, "error_cb": broken, "group.id": "g-broken",
                             "reconnect.backoff.max.ms": 200})
        try:
            consumer.subscribe(["t"])
            started = time.monotonic()

            def logged() -> list[logging.LogRecord]:  # written by the network thread after error_cb raised
                return [r for r in caplog.records if r.levelno == logging.ERROR and "error_cb raised" in r.getMessage()]

            while not (calls and logged()) and time.monotonic() - started < DEADLINE_S:
                consumer.poll(0.2)
            assert calls, "error_cb was never called"
            assert logged() and logged()[0].exc_info is not None
            exc_info = logged()[0].exc_info
            assert exc_info is not None
            assert "a bug in the user's error_cb" in str(exc_info[1])
            # the network thread goes on: it keeps trying the node (DEBUG attempts after the first WARNING)
            seen = len([r for r in caplog.records if "could not be established" in r.getMessage()])
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline and len(
                    [r for r in caplog.records if "could not be established" in r.getMessage()]) <= seen:
                consumer.poll(0.2)
            assert len([r for r in caplog.records if "could not be established" in r.getMessage()]) > seen
        finally:
            consumer.close()


def test_an_error_cb_that_raises_does_not_stop_the_sender_thread(caplog: pytest.LogCaptureFixture) -> None:
    address = _dead_bootstrap()

    def broken(error: KafkaError) -> None:
        raise RuntimeError("a bug in the user's error_cb")

    with caplog.at_level(logging.DEBUG, logger="cykafka"):
        producer = Producer({"bootstrap.servers": address, "error_cb": broken, "max.block.ms": 1500,
                             "reconnect.backoff.max.ms": 200})
        try:
            with pytest.raises(KafkaError):  # no metadata within max.block.ms: the send fails, typed
                producer.send("t", b"x")
            assert [r for r in caplog.records if r.levelno == logging.ERROR and "error_cb raised" in r.getMessage()]
            thread = producer._thread
            attempts = len([r for r in caplog.records if "could not be established" in r.getMessage()])
            with pytest.raises(KafkaError):  # the sender still runs: it keeps connecting for the next send
                producer.send("t", b"y")
            assert len([r for r in caplog.records if "could not be established" in r.getMessage()]) > attempts
            assert thread is not None and thread.is_alive()
        finally:
            producer.close(1)


def test_a_child_logger_is_covered_by_the_cykafka_logger(caplog: pytest.LogCaptureFixture) -> None:
    names = {"cykafka.producer", "cykafka.consumer", "cykafka.network", "cykafka.group", "cykafka.transactions",
             "cykafka.share", "cykafka.spark", "cykafka.admin", "cykafka.security", "cykafka.config"}
    with caplog.at_level(logging.WARNING, logger="cykafka"):
        for name in sorted(names):
            logging.getLogger(name).warning("from %s", name)
    assert {r.name for r in caplog.records} == names


@pytest.mark.slow  # starts Apache Kafka (the kafka_broker fixture: its SASL listeners)
def test_an_authentication_failure_reaches_error_cb(kafka_broker: Any) -> None:
    heard = _Heard()
    config = {**kafka_broker.security_config("SASL_PLAINTEXT", user="alice", mechanism="SCRAM-SHA-512"),
              "sasl.password": "wrong", "error_cb": heard, "max.block.ms": 10000}
    with Producer(config) as producer:
        with pytest.raises(AuthenticationError):
            producer.send("auth-nope", b"x").result(15)
    assert [type(e) for e in heard.errors] == [AuthenticationError], heard.errors
    assert "SASL_AUTHENTICATION_FAILED" in str(heard.errors[0])


@pytest.mark.slow  # Apache Kafka's authorizer (the kafka_broker fixture)
def test_a_fatal_producer_error_reaches_error_cb_once(kafka_broker: Any) -> None:
    heard, transactional_id = _Heard(), f"tx-denied-{time.monotonic_ns()}"
    only_admin = AclBinding(ResourcePattern(ResourceType.TRANSACTIONAL_ID, transactional_id, PatternType.LITERAL),
                            AccessControlEntry("User:admin", "*", AclOperation.WRITE, AclPermissionType.ALLOW))
    with Admin(kafka_broker.security_config("SASL_PLAINTEXT", user="admin")) as admin:
        admin.create_acls([only_admin], timeout_ms=30000)[only_admin].result()
    time.sleep(0.5)  # the authorizer applies the ACLs from the metadata log
    producer = Producer({**kafka_broker.security_config("SASL_PLAINTEXT", user="alice"),
                         "transactional.id": transactional_id, "error_cb": heard})
    try:
        with pytest.raises(TransactionalIdAuthorizationError):  # alice may not WRITE that transactional id
            producer.init_transactions(20)
        deadline = time.monotonic() + DEADLINE_S
        while not heard.errors and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the sender loops on: still heard once
    finally:
        producer.close(5)
    assert len(heard.errors) == 1, heard.errors
    assert isinstance(heard.errors[0], TransactionalIdAuthorizationError | TransactionFatalError), heard.errors


@pytest.mark.broker
def test_a_connection_that_got_ready_starts_a_new_series(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    """WARNING on the first failure, DEBUG on the next ones; once the node's connection was ready, its next failure
    is a WARNING again (node 1 reached through a proxy that is closed, then a new one, then that one closed)."""
    from kafka_proxy import KafkaProxy

    from cykafka.adapters.socket_transport import SocketTransport
    from cykafka.ports import ConnectionSettings, Node

    host, port = broker.bootstrap_servers.rsplit(":", 1)
    heard = _Heard()
    transport = SocketTransport(ConnectionSettings((broker.bootstrap_servers,), reconnect_backoff_ms=10,
                                                   reconnect_backoff_max_ms=50, error_cb=heard))

    def drive(until: Callable[[], bool]) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not until() and time.monotonic() < deadline:
            now_ms = int(time.monotonic() * 1000)
            transport.ready(1, now_ms)
            transport.poll(20, now_ms)

    def failures(proxy_port: int) -> list[str]:
        return [r.levelname for r in caplog.records if f"(127.0.0.1:{proxy_port}) could not be established"
                in r.getMessage()]

    first = KafkaProxy(host, int(port))
    second: KafkaProxy | None = None
    try:
        with caplog.at_level(logging.DEBUG, logger="cykafka"):
            transport.update_nodes({1: Node(1, "127.0.0.1", first.port)})
            drive(lambda: transport.ready(1, int(time.monotonic() * 1000)))
            assert transport.ready(1, int(time.monotonic() * 1000)), "node 1 never got ready through the proxy"
            first.close()
            drive(lambda: len(failures(first.port)) >= 3)
            assert failures(first.port)[:3] == ["WARNING", "DEBUG", "DEBUG"]
            # nothing ready or connecting any more: error_cb hears it once for the series
            assert [type(e) for e in heard.errors] == [AllBrokersDownError], heard.errors
            second = KafkaProxy(host, int(port))
            transport.update_nodes({1: Node(1, "127.0.0.1", second.port)})  # disconnected: the address moves
            drive(lambda: transport.ready(1, int(time.monotonic() * 1000)))
            assert transport.ready(1, int(time.monotonic() * 1000))
            second.close()
            drive(lambda: len(failures(second.port)) >= 2)
            assert failures(second.port)[:2] == ["WARNING", "DEBUG"]  # a new series: WARNING again
            assert [type(e) for e in heard.errors] == [AllBrokersDownError] * 2, heard.errors  # and error_cb again
            assert f"127.0.0.1:{second.port}" in str(heard.errors[1])
    finally:
        first.close()
        if second is not None:
            second.close()
        transport.close(0)
