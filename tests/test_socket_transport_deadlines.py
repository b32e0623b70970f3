"""The socket transport's deadlines (adapters/socket_transport.py): a connection not set up within
socket.connection.setup.timeout.ms and a request unanswered past its timeout (request.timeout.ms, or its own) are
disconnected at the first poll at or after the deadline, never before, whatever order the deadlines came in. The
transport reads them only once the earliest may have passed; these tests pin that bound down with the time handed to
poll (now_ms), not the wall clock's."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cykafka.adapters.socket_transport import SocketTransport
from cykafka.errors import KafkaTimeoutError, NetworkError
from cykafka.ports import ClientResponse, ConnectionSettings
from cykafka.protocol import Request
from cykafka.protocol.apis import METADATA

DEADLINE_S = 10.0  # each wait on the real sockets below is bounded by this


def _metadata() -> Request:
    return Request(METADATA.key, {"topics": [], "allow_auto_topic_creation": False})


@pytest.fixture
def silent_peer() -> Iterator[socket.socket]:
    """A TCP listener on 127.0.0.1 that accepts (the kernel's backlog) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    try:
        yield listener
    finally:
        listener.close()


def test_a_connection_not_set_up_in_time_is_dropped_at_its_deadline_not_before(silent_peer: socket.socket) -> None:
    transport = SocketTransport(ConnectionSettings((f"127.0.0.1:{silent_peer.getsockname()[1]}",),
                                                   socket_connection_setup_timeout_ms=1000))
    try:
        node = -1  # the bootstrap address
        transport.ready(node, 0)  # connects; ApiVersions is never answered
        transport.poll(50, 0)
        transport.poll(0, 999)
        assert transport.disconnect_count == 0
        transport.poll(0, 1000)
        assert transport.disconnect_count == 1
    finally:
        transport.close(0.0)


def _ready_transport(bootstrap: str, **settings: Any) -> tuple[SocketTransport, int]:
    """A transport connected to the first node it reaches at bootstrap, its time at 0 ms."""
    transport = SocketTransport(ConnectionSettings(tuple(bootstrap.split(",")), **settings))
    deadline = time.monotonic() + DEADLINE_S
    while True:
        assert time.monotonic() < deadline, "no connection got ready"
        node = transport.least_loaded_node(0)
        if node is not None and transport.ready(node, 0):
            return transport, node
        transport.poll(20, 0)


def _answered(transport: SocketTransport, answers: list[ClientResponse], count: int, now_ms: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while len(answers) < count:
        assert time.monotonic() < deadline, f"{len(answers)} of {count} answers"
        for response in transport.poll(20, now_ms):
            if response.handler is not None:
                response.handler(response)


def _hold_answers(mock_cluster: Any, rtt_ms: int) -> None:
    for broker_id in (1, 2, 3):
        mock_cluster.set_rtt(broker_id, rtt_ms)


def test_a_request_still_out_when_an_earlier_deadline_passed_fails_at_its_own(mock_cluster: Any) -> None:
    """Once an answered request's deadline has passed, the one still out is failed at its deadline, not before."""
    transport, node = _ready_transport(mock_cluster.bootstrap_servers, request_timeout_ms=1000)
    answers: list[ClientResponse] = []
    try:
        transport.send(node, _metadata(), 0, handler=answers.append, timeout_ms=200)  # due at 200, answered at once
        _answered(transport, answers, 1, 0)
        assert answers[0].error is None
        _hold_answers(mock_cluster, 30_000)
        transport.send(node, _metadata(), 100, handler=answers.append)  # due at 1100 (request.timeout.ms)
        transport.poll(0, 250)  # past the first deadline: the transport looks, and finds nothing late
        transport.poll(0, 1099)
        assert len(answers) == 1 and transport.disconnect_count == 0
        _answered(transport, answers, 2, 1100)
        assert isinstance(answers[1].error, KafkaTimeoutError)
        assert "request.timeout.ms (1000)" in str(answers[1].error)
    finally:
        _hold_answers(mock_cluster, 0)
        transport.close(0.0)


def test_a_request_with_a_shorter_timeout_sent_later_fails_first(mock_cluster: Any) -> None:
    transport, node = _ready_transport(mock_cluster.bootstrap_servers, request_timeout_ms=1000)
    answers: list[ClientResponse] = []
    try:
        _hold_answers(mock_cluster, 30_000)
        transport.send(node, _metadata(), 0, handler=answers.append)  # due at 1000
        transport.send(node, _metadata(), 500, handler=answers.append, timeout_ms=200)  # due at 700: first
        transport.poll(0, 699)
        assert answers == [] and transport.disconnect_count == 0
        _answered(transport, answers, 2, 700)
        assert all(isinstance(a.error, (KafkaTimeoutError, NetworkError)) for a in answers)
        assert any("within 200 ms" in str(a.error) for a in answers), [str(a.error) for a in answers]
    finally:
        _hold_answers(mock_cluster, 0)
        transport.close(0.0)
