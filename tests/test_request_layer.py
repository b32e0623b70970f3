"""The request layer (cykafka/requests, issue 26) on a scripted transport under a ManualClock: routes resolve from the
metadata and the one coordinator cache, a request waits for its connection in one way, `ask` asks again by the error
table's kinds (a stale leader refreshes metadata, a moved coordinator is looked up again), and a fan-out asks again
only the items whose error says their kind of route moved."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from cykafka.adapters.clock import ManualClock
from cykafka.errors import BrokerResponseError, KafkaError, KafkaTimeoutError, NetworkError
from cykafka.ports import ClientResponse, ClusterSnapshot, Node, TopicPartition
from cykafka.protocol import API_NAMES, Request
from cykafka.protocol.apis import COORDINATOR_GROUP, FIND_COORDINATOR, LIST_OFFSETS, OFFSET_FETCH
from cykafka.protocol.error_codes import ErrorCode, error_for
from cykafka.requests.ask import Asker
from cykafka.requests.calls import Call, CallQueue, NetworkLoop
from cykafka.requests.coordinators import COORDINATOR_NODE_BASE, Coordinators, group_coordinator, lookup_request
from cykafka.requests.fanout import CONTROLLER_MOVED, LEADER_MOVED, Again, Fanout
from cykafka.requests.offsets import list_offsets_request, offset_fetch_error, offset_fetch_request, read_list_offsets
from cykafka.requests.routes import ANY_BROKER, CONTROLLER, Broker, Leader, Router, ready_node

BACKOFF_MS = 100
Script = Callable[[int, Request], dict[str, Any] | KafkaError]  # (node, request) -> answer body or failure


class ScriptedTransport:
    """Nodes 0-2; a node is ready from its second `ready` (connecting first); every request is answered on the next
    poll by `script`, and recorded in `sent` as (node, API name)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.sent: list[tuple[int, str]] = []
        self.connected: set[int] = set()
        self.unreachable: set[int] = set()  # connecting, never ready
        self.failed: set[int] = set()  # their last connection failed (unreachable too)
        self.nodes: Mapping[int, Node] = {}
        self._pending: list[tuple[int, Request, Any]] = []
        self.disconnect_count = 0
        self.failure: KafkaError | None = None

    def update_nodes(self, nodes: Mapping[int, Node]) -> None:
        self.nodes = nodes

    def ready(self, node_id: int, now_ms: int) -> bool:
        if node_id in self.unreachable:
            return False
        if node_id not in self.connected:
            self.connected.add(node_id)
            return False
        return True

    def connection_delay_ms(self, node_id: int, now_ms: int) -> int:
        return 50 if node_id in self.unreachable else 0

    def connection_failed(self, node_id: int) -> bool:
        return node_id in self.failed

    def send(self, node_id: int, request: Any, now_ms: int, handler: Any = None, expect_response: bool = True,
             timeout_ms: int | None = None) -> None:
        self.sent.append((node_id, API_NAMES[request.api_key]))
        self._pending.append((node_id, request, handler))

    def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]:
        out = []
        for node_id, request, handler in self._pending:
            answer = self.script(node_id, request)
            error = answer if isinstance(answer, KafkaError) else None
            body = None if error is not None else answer
            out.append(ClientResponse(node_id, request, handler, body, error, now_ms, now_ms))  # type: ignore[arg-type]
        self._pending = []
        return out

    def in_flight_count(self, node_id: int | None = None) -> int:
        return len(self._pending)

    def least_loaded_node(self, now_ms: int) -> int | None:
        return next((n for n in (0, 1, 2) if n not in self.unreachable), None)

    def authentication_error(self) -> KafkaError | None:
        return self.failure

    def wakeup(self) -> None:
        pass

    def close(self, linger_s: float = 0.0) -> None:
        pass


class Metadata:
    """A MetadataSource holding a fixed snapshot; counts the updates asked for and the topics added."""

    def __init__(self, leaders: Mapping[tuple[str, int], int] | None = None, controller_id: int = 2) -> None:
        body = {"brokers": [{"node_id": n, "host": f"b{n}", "port": 9092, "rack": None} for n in (0, 1, 2)],
                "topics": [{"error_code": 0, "name": topic, "partitions": [
                    {"error_code": 0, "partition_index": p, "leader_id": leader, "leader_epoch": 0,
                     "replica_nodes": [leader], "isr_nodes": [leader]}]} for (topic, p), leader in
                    (leaders or {}).items()],
                "controller_id": controller_id, "cluster_id": "c"}
        self._snapshot = ClusterSnapshot.from_metadata(body)
        self.updates = 0
        self.added: list[str] = []

    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    def add_topic(self, topic: str, now_ms: int) -> None:
        self.added.append(topic)

    def set_all_topics(self, on: bool) -> None:
        pass

    def request_update(self) -> None:
        self.updates += 1

    def maybe_update(self, now_ms: int) -> int:
        return 2**31


class Client:
    """The request layer wired as a client wires it: coordinator cache, router, call queue, loop, asker (driven)."""

    def __init__(self, script: Script, metadata: Metadata | None = None, dedicated: bool = False) -> None:
        self.clock = ManualClock()
        self.transport = ScriptedTransport(script)
        self.metadata = metadata or Metadata()
        self.coordinators = Coordinators(self.transport, BACKOFF_MS, dedicated_group_connections=dedicated)
        self.router = Router(self.transport, self.metadata, self.coordinators, BACKOFF_MS)
        self.calls = CallQueue(self.router)
        self.loop = NetworkLoop(self.transport, self.metadata, self.clock, [self.calls, self.coordinators], 30_000,
                                self.coordinators)
        self.asker = Asker(self.calls, self.clock, BACKOFF_MS, drive=self._turn)

    def _turn(self, max_wait_ms: int) -> None:
        self.clock.advance(1)
        self.loop.run_once(max_wait_ms)


def _found(node: int, key: str = "g") -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "node_id": 0, "host": "", "port": 0,
            "coordinators": [{"key": key, "node_id": node, "host": f"b{node}", "port": 9092, "error_code": 0,
                              "error_message": None}]}


def _not_found(code: int, key: str = "g") -> dict[str, Any]:
    answer = _found(0, key)
    answer["coordinators"][0]["error_code"] = code
    return answer


def _offsets(code: int = 0) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [], "error_code": 0, "groups": [
        {"group_id": "g", "error_code": code, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "metadata": None,
             "error_code": 0}]}]}]}


def _list_offsets(code: int, offset: int = 7) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "error_code": code, "timestamp": -1, "offset": offset, "leader_epoch": -1}]}]}


# -- routes and the one connection wait -----------------------------------------------------------------------------

def test_ready_node_goes_when_the_connection_is_ready_else_says_how_long_to_wait() -> None:
    transport = ScriptedTransport(lambda node, request: {})
    assert ready_node(transport, 1, 0, BACKOFF_MS) == (None, 1)  # connecting now (at least 1 ms: the poll ends it)
    assert ready_node(transport, 1, 0, BACKOFF_MS) == (1, 0)
    assert ready_node(transport, None, 0, BACKOFF_MS) == (None, 1)  # the least loaded: node 0, connecting
    assert ready_node(transport, None, 0, BACKOFF_MS) == (0, 0)
    transport.unreachable = {0, 1, 2}
    assert ready_node(transport, None, 0, BACKOFF_MS) == (None, BACKOFF_MS)  # no broker to try: back off
    assert ready_node(transport, 2, 0, BACKOFF_MS) == (None, 50)  # the connection's own delay


def test_routes_resolve_from_the_metadata_and_the_coordinator_cache() -> None:
    metadata = Metadata({("t", 0): 1}, controller_id=2)
    client = Client(lambda node, request: _found(1), metadata, dedicated=True)
    router = client.router
    assert router.node_for(ANY_BROKER, 0) is None and router.node_for(Broker(2), 0) == 2
    assert router.node_for(Leader("t", 0), 0) == 1
    assert router.node_for(CONTROLLER, 0) == 2
    assert router.node_for(Leader("u", 3), 0) is None  # unknown: asked for
    assert metadata.added == ["u"] and metadata.updates == 1
    group = group_coordinator("g")
    assert router.node_for(group, 0) is None  # a lookup is wanted
    client.loop.run_once()  # connecting
    client.loop.run_once()
    assert client.transport.sent == [(0, "FindCoordinator")]
    assert router.node_for(group, 0) == COORDINATOR_NODE_BASE - 1  # the group's own connection (Java)
    assert client.coordinators.extra_nodes() == {COORDINATOR_NODE_BASE - 1: Node(COORDINATOR_NODE_BASE - 1, "b1",
                                                                                  9092)}
    client.loop.run_once()
    assert client.transport.nodes[COORDINATOR_NODE_BASE - 1].host == "b1"  # the next turn hands it to the transport


# -- the coordinator cache ------------------------------------------------------------------------------------------

def test_one_lookup_per_key_retried_after_backoff_and_forgotten_when_it_moved() -> None:
    answers = [_not_found(ErrorCode.COORDINATOR_NOT_AVAILABLE), _found(1), _found(2)]
    client = Client(lambda node, request: answers.pop(0))
    cache, sent, route = client.coordinators, client.transport.sent, group_coordinator("g")
    for _ in range(2):  # two asking: one lookup
        assert cache.node_id(route, 0) is None
    cache.send_ready(0)  # connecting to the least loaded broker
    cache.send_ready(0)
    assert sent == [(0, "FindCoordinator")]
    assert cache.in_flight and cache.send_ready(0) == 2**31  # one in flight per key
    client.loop.run_once()  # COORDINATOR_NOT_AVAILABLE: retriable
    assert cache.get(route) is None and not cache.in_flight
    assert cache.send_ready(50) == BACKOFF_MS - 50 and len(sent) == 1  # retry.backoff.ms after a failed lookup
    cache.send_ready(BACKOFF_MS)
    client.loop.run_once()
    assert cache.get(route) == Node(1, "b1", 9092) and len(sent) == 2
    assert cache.node_id(route, 0) == 1 and client.transport.nodes[1] == Node(1, "b1", 9092)
    cache.forget(route)  # NOT_COORDINATOR, a disconnect: looked up again when next asked
    assert cache.get(route) is None and cache.extra_nodes() == {}
    assert cache.node_id(route, 0) is None
    client.loop.run_once()
    assert cache.get(route) == Node(2, "b2", 9092) and len(sent) == 3


def test_a_lookup_that_fails_for_good_fails_whatever_waits_for_it() -> None:
    client = Client(lambda node, request: _not_found(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    route = group_coordinator("g")
    waiting = [Call(route, 10_000, offset_fetch_request("g", None)) for _ in range(2)]
    for call in waiting:
        client.calls.submit(call)
    for _ in range(4):  # connect, look up, the answer; the calls meet the failure: both fail at once
        client.loop.run_once()
    assert all(isinstance(call.error, BrokerResponseError) and call.error.code == ErrorCode.GROUP_AUTHORIZATION_FAILED
               for call in waiting)
    failed_ms = client.clock.monotonic_ms()
    with pytest.raises(BrokerResponseError, match="GROUP_AUTHORIZATION_FAILED"):
        client.coordinators.node_id(route, failed_ms)
    assert client.coordinators.node_id(route, failed_ms + BACKOFF_MS) is None  # after retry.backoff.ms: looked up
    assert [api for _, api in client.transport.sent] == ["FindCoordinator"]
    assert lookup_request(route).body == {"key": "g", "key_type": COORDINATOR_GROUP, "coordinator_keys": ["g"]}


# -- ask: retries by the error table's kinds ------------------------------------------------------------------------

def test_ask_refreshes_metadata_and_asks_again_after_a_stale_leader() -> None:
    answers = [_list_offsets(ErrorCode.NOT_LEADER_OR_FOLLOWER), _list_offsets(0)]
    metadata = Metadata({("t", 0): 1})
    client = Client(lambda node, request: answers.pop(0), metadata)
    request = list_offsets_request({TopicPartition("t", 0): -1}, read_committed=False)

    def check(body: Mapping[str, Any]) -> KafkaError | None:
        found = read_list_offsets(body)[TopicPartition("t", 0)]
        return found if isinstance(found, KafkaError) else None

    answer = client.asker.ask(request, Leader("t", 0), 10_000, check=check)
    assert read_list_offsets(answer.body)[TopicPartition("t", 0)].offset == 7  # type: ignore[union-attr]
    assert client.transport.sent == [(1, "ListOffsets"), (1, "ListOffsets")]
    assert metadata.updates == 1  # STALE_METADATA: a metadata update before asking again
    assert client.clock.monotonic_ms() >= BACKOFF_MS  # after retry.backoff.ms


def test_ask_looks_a_moved_coordinator_up_again() -> None:
    finds = [_found(1), _found(2)]

    def script(node: int, request: Request) -> dict[str, Any] | KafkaError:
        if request.api_key == FIND_COORDINATOR.key:
            return finds.pop(0)
        return _offsets(ErrorCode.NOT_COORDINATOR if node == 1 else 0)

    client = Client(script)
    answer = client.asker.ask(offset_fetch_request("g", [("t", 0)]), group_coordinator("g"), 10_000,
                              check=lambda body: offset_fetch_error(body, "g"))
    assert answer.node_id == 2
    assert client.transport.sent == [(0, "FindCoordinator"), (1, "OffsetFetch"), (0, "FindCoordinator"),
                                     (2, "OffsetFetch")]


def test_ask_looks_the_coordinator_up_again_after_a_lost_connection() -> None:
    finds = [_found(1), _found(2)]
    fetches: list[dict[str, Any] | KafkaError] = [NetworkError("connection lost"), _offsets()]

    def script(node: int, request: Request) -> dict[str, Any] | KafkaError:
        return finds.pop(0) if request.api_key == FIND_COORDINATOR.key else fetches.pop(0)

    client = Client(script)
    assert client.asker.ask(offset_fetch_request("g", None), group_coordinator("g"), 10_000).node_id == 2


def test_ask_raises_what_is_not_retriable_at_once_and_times_out_on_what_is() -> None:
    client = Client(lambda node, request: _offsets(ErrorCode.GROUP_AUTHORIZATION_FAILED) if request.api_key ==
                    OFFSET_FETCH.key else _found(1))
    with pytest.raises(BrokerResponseError, match="GROUP_AUTHORIZATION_FAILED"):
        client.asker.ask(offset_fetch_request("g", None), group_coordinator("g"), 10_000,
                         check=lambda body: offset_fetch_error(body, "g"))
    assert [api for _, api in client.transport.sent].count("OffsetFetch") == 1
    loading = Client(lambda node, request: _offsets(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) if request.api_key ==
                     OFFSET_FETCH.key else _found(1))
    with pytest.raises(KafkaTimeoutError, match=r"OffsetFetch: no answer before the call.s deadline.*LOAD_IN_PROGRESS"):
        loading.asker.ask(offset_fetch_request("g", None), group_coordinator("g"), 1_000,
                          check=lambda body: offset_fetch_error(body, "g"))
    assert [api for _, api in loading.transport.sent].count("OffsetFetch") > 3
    assert [api for _, api in loading.transport.sent].count("FindCoordinator") == 1  # loading: not moved


# -- calls -----------------------------------------------------------------------------------------------------------

def test_a_call_not_sent_by_its_deadline_fails_and_an_authentication_failure_fails_what_waits() -> None:
    client = Client(lambda node, request: {})
    client.transport.unreachable = {0, 1, 2}
    late = Call(Broker(1), 5, Request(LIST_OFFSETS.key, {}))
    client.calls.submit(late)
    assert client.calls.send_ready(0) == 5  # waits for the connection, at most until its deadline
    client.calls.send_ready(5)
    assert isinstance(late.error, KafkaTimeoutError) and "not sent before its deadline (node 1)" in str(late.error)
    waiting = Call(ANY_BROKER, 10_000, Request(LIST_OFFSETS.key, {}))
    client.calls.submit(waiting)
    client.transport.failure = KafkaError("SASL authentication failed")
    client.calls.send_ready(6)
    assert waiting.done.is_set() and waiting.error is client.transport.failure


def test_a_call_waiting_for_a_node_whose_connection_failed_fails_at_once() -> None:
    """Java's ConsumerNetworkClient.checkDisconnects: a dead node's unsent requests fail (NetworkError, retriable:
    the caller routes them again), not wait out their deadline; one whose connection is still being made waits."""
    client = Client(lambda node, request: _list_offsets(0))
    client.transport.unreachable, client.transport.failed = {1}, {1}
    dead = Call(Broker(1), 10_000, Request(LIST_OFFSETS.key, {}))
    client.calls.submit(dead)
    client.calls.send_ready(0)
    assert isinstance(dead.error, NetworkError) and "connection to node 1 failed" in str(dead.error)
    connecting = Call(Broker(1), 10_000, Request(LIST_OFFSETS.key, {}))
    client.transport.failed = set()  # still connecting: it waits
    client.calls.submit(connecting)
    client.calls.send_ready(1)
    assert not connecting.done.is_set()


# -- fan-out --------------------------------------------------------------------------------------------------------

def test_a_fanout_asks_again_only_the_items_whose_kind_of_route_moved() -> None:
    a, b, c = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
    answers: dict[int, list[Any]] = {1: [{a: error_for(ErrorCode.NOT_LEADER_OR_FOLLOWER)}, {a: 3}],
                                     2: [{b: error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}]}
    lookups: list[list[TopicPartition]] = []
    client = Client(lambda node, request: {})

    def lookup(items: list[TopicPartition]) -> Mapping[TopicPartition, Any]:
        lookups.append(list(items))
        first = len(lookups) == 1
        routes = {a: Broker(1), b: Broker(2) if first else error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                  c: Again(error_for(ErrorCode.LEADER_NOT_AVAILABLE))}  # b: then the metadata names no such topic
        return {item: routes[item] for item in items}

    def read(items: list[TopicPartition], body: Mapping[str, Any], node: int) -> Mapping[TopicPartition, Any]:
        return answers[node].pop(0)

    fanout: Any = Fanout(client.asker, lookup, lambda items: Request(LIST_OFFSETS.key, {}), read, moves=LEADER_MOVED,
                         name=lambda tp: f"{tp.topic} [{tp.partition}]")
    results = fanout.run([a, b, c], 1_000)
    assert results[a].result() == 3  # NOT_LEADER_OR_FOLLOWER: the leader moved, asked again of a fresh lookup
    assert lookups[1] == [a, b, c]  # b's UNKNOWN_TOPIC_OR_PARTITION is stale metadata too: looked up again...
    assert results[b].error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and b not in lookups[2]  # ...then final
    assert lookups[2] == [c] and results[c].error.code == ErrorCode.LEADER_NOT_AVAILABLE  # no leader till the end
    at_controller: Any = Fanout(client.asker, lambda items: dict.fromkeys(items, Broker(2)),
                                lambda items: Request(LIST_OFFSETS.key, {}),
                                lambda items, body, node: {items[0]: error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)},
                                moves=CONTROLLER_MOVED)
    sent = len(client.transport.sent)
    assert at_controller.run(["gone"], 1_000)["gone"].error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert len(client.transport.sent) == sent + 1  # a controller's answer about a topic: final, asked once


def test_a_kept_call_still_out_at_the_deadline_is_waited_for_by_the_same_ask_made_again() -> None:
    """The consumer's poll(0) in a loop: a request not answered by the deadline stays out (kept), and the same ask
    made again takes its answer instead of sending another; without `kept` each ask sends its own."""
    answers: list[dict[str, Any]] = []
    client = Client(lambda node, request: answers.pop(0) if answers else KafkaTimeoutError("no answer yet"))
    client.transport.unreachable = {1}  # connecting: the call cannot go before the deadline
    client.asker.min_call_ms = 30_000
    kept: dict[Any, Call] = {}
    request = list_offsets_request({TopicPartition("t", 0): -1}, read_committed=False)
    with pytest.raises(KafkaTimeoutError):
        client.asker.ask(request, Broker(1), client.clock.monotonic_ms(), kept=kept)
    (call,) = kept.values()
    assert call.deadline_ms >= 30_000 and not call.done.is_set()  # the call has its own time to be sent
    client.transport.unreachable = set()
    answers.append(_list_offsets(0))
    answer = client.asker.ask(request, Broker(1), client.clock.monotonic_ms() + 1_000, kept=kept)
    assert read_list_offsets(answer.body)[TopicPartition("t", 0)].offset == 7  # type: ignore[union-attr]
    assert client.transport.sent == [(1, "ListOffsets")] and kept == {}  # one request for both asks


def test_a_rerouting_fanout_sends_the_items_of_a_dead_broker_back_to_the_lookup() -> None:
    """Routes resolved from metadata (the consumer's leaders): the whole request failing with a retriable error (its
    broker died) sends its items back to the lookup after a metadata update, instead of asking the dead broker
    again; without reroute the Asker asks the same broker until the deadline."""
    tp = TopicPartition("t", 0)
    client = Client(lambda node, request: NetworkError("the connection closed") if node == 1 else _list_offsets(0))
    leaders = [Broker(1), Broker(2)]
    lookups: list[Any] = []

    def lookup(items: list[TopicPartition]) -> Mapping[TopicPartition, Any]:
        lookups.append(leaders[0] if len(leaders) == 1 else leaders.pop(0))
        return dict.fromkeys(items, lookups[-1])

    def read(items: list[TopicPartition], body: Mapping[str, Any], node: int) -> Mapping[TopicPartition, Any]:
        return read_list_offsets(body)

    fanout: Any = Fanout(client.asker, lookup, lambda items: list_offsets_request(dict.fromkeys(items, -1),
                                                                                  read_committed=False),
                         read, moves=LEADER_MOVED, reroute=True)
    updates = client.metadata.updates
    assert fanout.run([tp], 10_000)[tp].result().offset == 7
    assert lookups == [Broker(1), Broker(2)] and client.transport.sent == [(1, "ListOffsets"), (2, "ListOffsets")]
    assert client.metadata.updates > updates  # the dead broker's partitions: a metadata update first


def _reset_items_timeout(client: Client, deadline_ms: int = 1_000) -> None:
    """One partition's ListOffsets through a rerouting Fanout (routes from metadata: node 1) until deadline_ms from
    now; its Result must be the KafkaTimeoutError naming the API and the connection's reset (its cause)."""
    tp = TopicPartition("t", 0)

    def read(items: list[TopicPartition], body: Mapping[str, Any], node: int) -> Mapping[TopicPartition, Any]:
        return read_list_offsets(body)

    fanout: Any = Fanout(client.asker, lambda items: dict.fromkeys(items, Broker(1)),
                         lambda items: list_offsets_request(dict.fromkeys(items, -1), read_committed=False),
                         read, moves=LEADER_MOVED, reroute=True)
    result = fanout.run([tp], client.clock.monotonic_ms() + deadline_ms)[tp]
    with pytest.raises(KafkaTimeoutError, match=r"ListOffsets not answered before the deadline; last: "
                                                r"the connection closed") as raised:
        result.result()
    assert isinstance(raised.value.__cause__, NetworkError)


def test_a_rerouted_item_still_unanswered_at_the_deadline_ends_with_a_timeout_naming_its_last_failure() -> None:
    """Java's AdminApiDriver: a key whose broker keeps failing is looked up and asked again until the deadline, then
    its future fails with a TimeoutException; here the item's Result is a KafkaTimeoutError naming the API and the
    last failure (its cause), while the call itself returns."""
    client = Client(lambda node, request: NetworkError("the connection closed"))
    _reset_items_timeout(client)
    assert len(client.transport.sent) > 1  # asked again, not given up after the first failure


def test_a_rerouted_items_failure_arriving_as_the_deadline_passes_ends_it_with_the_timeout_too() -> None:
    """The broker's failure (Tansu resetting the connection on DeleteRecords) arriving just after the deadline: the
    item still ends with the KafkaTimeoutError naming its last failure, not the raw NetworkError raised out of the
    call (test_admin's test_delete_records_on_tansu_fails_the_call failed so in a CI run, and 2 runs in 8 here)."""
    deadline_ms = 1_000

    def answer(node: int, request: Any) -> NetworkError:
        client.clock.advance(deadline_ms)  # the answer comes as the deadline passes
        return NetworkError("the connection closed")

    client = Client(answer)
    _reset_items_timeout(client, deadline_ms)
    assert len(client.transport.sent) == 1


def test_a_rerouted_item_asked_again_and_unanswered_at_the_deadline_ends_with_the_timeout_naming_its_failure() -> None:
    """The item's first request failed (a reset), the one asking again is still out at the deadline: the item ends
    with the KafkaTimeoutError naming the reset, and the call returns (it raised the Asker's own timeout: the other
    way test_delete_records_on_tansu_fails_the_call failed, 1 run in 10)."""

    def answer(node: int, request: Any) -> NetworkError:
        client.transport.poll = lambda timeout_ms, now_ms: []  # never answered again
        return NetworkError("the connection closed")

    client = Client(answer)
    _reset_items_timeout(client)
    assert len(client.transport.sent) == 2
