"""The consumer when a broker dies, the client's side of what tests/test_kafka_failures.py found on the 3-node Apache
Kafka. Requests waiting for a connection to a node that failed fail at once, as Java's ConsumerNetworkClient fails
the unsent requests of a disconnected node, and are asked again where the metadata now says:
- the group member's (cykafka/consumer_group.py's GroupDriver, with a transport stand-in): with the group coordinator
  SIGKILLed, a JoinGroup and a Heartbeat decided for it waited forever, the member never heard of the new
  coordinator, and the partitions of a member that left were never handed over; one waiting past its own timeout
  fails too; the auto commits failing meanwhile are logged as Java logs them;
- the caller's offset lookups (the fake cluster): a ListOffsets for a partition whose leader died was sent again and
  again to the dead leader until its deadline, so a Spark read planned right after a broker's death failed."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fakes import fake_cluster

from cykafka import Consumer, KafkaError, NetworkError, TopicPartition
from cykafka.adapters.clock import ManualClock
from cykafka.consumer_coordinator import log_auto_commit as _log_auto_commit
from cykafka.consumer_group import GroupDriver
from cykafka.core.group import GroupMember, GroupSettings
from cykafka.ports import ClientResponse, ClusterSnapshot, Node, PartitionInfo, Ports, TransportRequest
from cykafka.ports.values import OffsetAndMetadata
from cykafka.protocol.apis import FIND_COORDINATOR, JOIN_GROUP
from cykafka.protocol.error_codes import ErrorCode, error_for
from cykafka.requests.calls import CallQueue
from cykafka.requests.coordinators import COORDINATOR_NODE_BASE, Coordinators, group_coordinator
from cykafka.requests.routes import Router

BROKER = 0
COORDINATOR = COORDINATOR_NODE_BASE - 1  # broker 1's coordinator connection


class _Transport:
    """Broker 0 takes requests (answered by the test); the coordinator's connection is never ready, and `failed`
    says whether its last attempt failed (refused) or is still under way."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int]] = []  # (node, api key)
        self.handlers: list[tuple[TransportRequest, Any]] = []
        self.failed = True
        self.disconnect_count = 0

    def update_nodes(self, nodes: Any) -> None:
        pass

    def ready(self, node_id: int, now_ms: int) -> bool:
        return node_id == BROKER

    def connection_delay_ms(self, node_id: int, now_ms: int) -> int:
        return 50

    def connection_failed(self, node_id: int) -> bool:
        return node_id != BROKER and self.failed

    def authentication_error(self) -> None:
        return None

    def send(self, node_id: int, request: TransportRequest, now_ms: int, handler: Any = None,
             expect_response: bool = True, timeout_ms: int | None = None) -> None:
        self.sent.append((node_id, request.api_key))
        self.handlers.append((request, handler))

    def least_loaded_node(self, now_ms: int) -> int:
        return BROKER

    def wakeup(self) -> None:
        pass


class _Metadata:
    def __init__(self) -> None:
        self._snapshot = ClusterSnapshot({BROKER: Node(BROKER, "b0", 9092)}, {"t": [PartitionInfo("t", 0, BROKER)]})

    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    def add_topic(self, topic: str, now_ms: int) -> None:
        pass

    def set_all_topics(self, on: bool) -> None:
        pass

    def request_update(self) -> None:
        pass


class _Driver:
    """A member of group "g" subscribed to "t" (request.timeout.ms 5 s, max.poll.interval.ms 30 s) on the request
    layer as the Consumer builds it (its CallQueue, coordinator cache and GroupDriver), turned by hand; broker 1
    coordinates the group (its FindCoordinator answered), the clock at 0."""

    def __init__(self, transport: _Transport) -> None:
        self.transport = transport
        self.member = GroupMember(GroupSettings("g", session_timeout_ms=10_000, heartbeat_interval_ms=1_000,
                                                max_poll_interval_ms=30_000))
        self.member.subscribe(["t"])
        metadata = _Metadata()
        self.coordinators = Coordinators(transport, 100, dedicated_group_connections=True)  # type: ignore[arg-type]
        calls = CallQueue(Router(transport, metadata, self.coordinators, 100))  # type: ignore[arg-type]
        self.driver = GroupDriver(self.member, calls, self.coordinators, metadata,  # type: ignore[arg-type]
                                  ManualClock(now_ms=0), 5_000, lambda: None)
        self.sources = [calls, self.driver, self.coordinators]  # the consumer's network loop's order
        self.turn(0)
        request, handler = transport.handlers.pop()
        assert request.api_key == FIND_COORDINATOR.key
        handler(ClientResponse(BROKER, request, handler, {"throttle_time_ms": 0, "coordinators": [
            {"key": "g", "node_id": 1, "host": "b1", "port": 9093, "error_code": 0, "error_message": None}]}, None,
            0, 0))
        assert self.coordinators.node_id(group_coordinator("g"), 0) == COORDINATOR

    def turn(self, now_ms: int) -> None:
        for source in self.sources:
            source.send_ready(now_ms)


def test_a_request_for_a_coordinator_whose_connection_failed_fails_and_the_coordinator_is_found_again() -> None:
    transport = _Transport()
    group = _Driver(transport)
    group.turn(1)  # the JoinGroup for the coordinator: its connection was refused
    assert not group.member.has_coordinator and JOIN_GROUP.key not in group.member._in_flight
    for now_ms in range(2, 300, 10):
        group.turn(now_ms)
    assert transport.sent.count((BROKER, FIND_COORDINATOR.key)) == 2  # looked up again (no JoinGroup left behind)


def test_a_request_waiting_past_its_timeout_for_a_connection_fails() -> None:
    transport = _Transport()
    transport.failed = False  # connecting, forever: neither refused nor ready
    group = _Driver(transport)
    group.turn(1)
    assert JOIN_GROUP.key in group.member._in_flight  # waits for the connection
    group.turn(1 + 30_000 + 5_000 - 1)  # a JoinGroup's timeout: max.poll.interval.ms + 5 s
    assert JOIN_GROUP.key in group.member._in_flight
    group.turn(1 + 30_000 + 5_000)
    assert JOIN_GROUP.key not in group.member._in_flight and not group.member.has_coordinator


@pytest.mark.parametrize(("error", "level"), [
    (NetworkError("OffsetCommit not sent: the connection to node 2147483646 failed"), logging.DEBUG),
    (error_for(ErrorCode.COORDINATOR_NOT_AVAILABLE), logging.DEBUG),
    (error_for(ErrorCode.NOT_COORDINATOR), logging.DEBUG),
    (error_for(ErrorCode.GROUP_AUTHORIZATION_FAILED), logging.WARNING),
    (KafkaError("the rebalance listener's on_partitions_revoked raised"), logging.WARNING),
])
def test_an_auto_commit_failing_while_the_coordinator_moves_is_not_a_warning(
        error: KafkaError, level: int, caplog: pytest.LogCaptureFixture) -> None:
    """Java logs a retriable auto commit failure at DEBUG (the next auto commit carries the offsets), others at
    WARN. With the coordinator SIGKILLed, every auto commit (each auto.commit.interval.ms) fails until the new one is
    found: dozens of WARNING lines for nothing lost."""
    with caplog.at_level(logging.DEBUG, logger="cykafka"):
        _log_auto_commit(error, {TopicPartition("t", 0): OffsetAndMetadata(5)})
    expected = [(level, f"auto commit of 1 offset(s) failed: {error}")]
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == expected


def test_offsets_of_a_partition_whose_leader_died_are_asked_of_its_new_leader() -> None:
    clock = ManualClock(auto_tick_ms=1)
    cluster = fake_cluster(clock, "t", partitions=1, brokers=2, wire={})
    consumer = Consumer({"bootstrap.servers": "fake:9092", "request.timeout.ms": 30_000,
                         "default.api.timeout.ms": 60_000},
                        ports=Ports(transport=cluster, clock=clock, start_sender=False))
    tp = TopicPartition("t", 0)
    assert consumer.beginning_offsets([tp], timeout=5) == {tp: 0}  # node 0 leads
    cluster.unreachable.add(0)  # node 0 dies; node 1 takes over
    cluster.move_leader("t", 0, 1)
    started_ms = clock.monotonic_ms()
    assert consumer.beginning_offsets([tp], timeout=60) == {tp: 0}
    assert clock.monotonic_ms() - started_ms < 30_000  # not after request.timeout.ms, at the dead node
    consumer.close(0)
