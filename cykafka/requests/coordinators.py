"""The one coordinator cache: which broker coordinates a consumer group or a transactional id (franz-go's
loadCoordinators, Java's FindCoordinator handlers), for every client.

Owns: the coordinators found (one table, keyed by the `Coordinator` route), the lookups wanted (one FindCoordinator
in flight per key, the next after retry.backoff.ms when one failed), the lookups that failed for good, the one
FindCoordinator request builder (`lookup_request`) and answer reader (`read_coordinator`), and the coordinators'
addresses a transport must know (`extra_nodes`). A caller asks `node_id(route, now_ms)`: the node, or None and a
lookup goes out on the owner's next `send_ready`, or the lookup's error when it failed for good (every caller asking
within retry.backoff.ms of that failure gets it, so whatever waits for the coordinator fails at once; after that,
asking looks it up again); an answer saying the coordinator moved calls `forget(route)`, so the next ask looks it up
again.

A request source of its owner's network loop (`send_ready(now_ms)`), driven on one thread: the consumer's network
thread, the Sender's, or Admin's caller. With `dedicated_group_connections` (the consumer, as Java's) a group's
coordinator gets a connection of its own, node id COORDINATOR_NODE_BASE - its broker id, so a JoinGroup the broker
holds never delays fetches on the broker's ordinary connection.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cykafka.errors import KafkaError, ProtocolError
from cykafka.ports import ClientResponse, Node, Transport
from cykafka.protocol import Request
from cykafka.protocol.apis import COORDINATOR_GROUP, COORDINATOR_TRANSACTION, FIND_COORDINATOR, coordinators_of
from cykafka.protocol.error_codes import ErrorKind, answer_error, kinds_of
from cykafka.requests.routes import Coordinator, ready_node

if TYPE_CHECKING:  # the generated bodies are for mypy only
    from cykafka.protocol.bodies import FindCoordinatorRequestBody

log = logging.getLogger("cykafka.network")

COORDINATOR_NODE_BASE = 2**31 - 1  # a group coordinator's own connection id is this minus its broker id (Java)


def group_coordinator(group_id: str) -> Coordinator:
    return Coordinator(COORDINATOR_GROUP, group_id)


def transaction_coordinator(transactional_id: str) -> Coordinator:
    return Coordinator(COORDINATOR_TRANSACTION, transactional_id)


def lookup_request(route: Coordinator) -> Request:
    """FindCoordinator for one key, in both forms (v1-3's `key`, v4+'s `coordinator_keys`)."""
    body: FindCoordinatorRequestBody = {"key": route.key, "key_type": route.key_type, "coordinator_keys": [route.key]}
    return Request(FIND_COORDINATOR.key, body)


def read_coordinator(route: Coordinator, answer: Mapping[str, Any]) -> Node | KafkaError:
    """A FindCoordinator answer for one key: its coordinator, or the typed error (retriable when worth asking again:
    the coordinator is moving or loading)."""
    answered = coordinators_of(dict(answer))
    if len(answered) != 1:
        return ProtocolError(f"{route}: FindCoordinator answered {len(answered)} coordinators for one key")
    found = answered[0]
    if error := answer_error(found, f"{route}: FindCoordinator"):
        return error
    return Node(found["node_id"], found["host"], found["port"])


@dataclass(slots=True)
class _Lookup:
    wanted: bool = True
    in_flight: bool = False
    not_before_ms: int = 0  # retry.backoff.ms after a failed lookup


class Coordinators:
    """The coordinators of one client's groups and transactional ids; see the module docstring."""

    def __init__(self, transport: Transport, retry_backoff_ms: int, *,
                 dedicated_group_connections: bool = False) -> None:
        self.transport = transport
        self.retry_backoff_ms = retry_backoff_ms
        self.dedicated_group_connections = dedicated_group_connections
        self._nodes: dict[Coordinator, Node] = {}
        self._lookups: dict[Coordinator, _Lookup] = {}
        self._failures: dict[Coordinator, tuple[KafkaError, int]] = {}  # the error, raised until this ms
        self._extra: Mapping[int, Node] = {}

    # -- asking ------------------------------------------------------------------------------------------------

    def get(self, route: Coordinator) -> Node | None:
        """The coordinator found (its broker), or None."""
        return self._nodes.get(route)

    def node_id(self, route: Coordinator, now_ms: int) -> int | None:
        """The node id to send to (a group's own connection with dedicated_group_connections), or None while it is
        looked up (a lookup is wanted); raises the lookup's error when it failed for good, to every caller until
        retry.backoff.ms after the failure (then it is looked up again)."""
        node = self._nodes.get(route)
        if node is not None:
            return self._connection_id(route, node)
        failure = self._failures.get(route)
        if failure is not None:
            if now_ms < failure[1]:
                raise failure[0]
            del self._failures[route]
        self.want(route)
        return None

    def want(self, route: Coordinator) -> None:
        """Look the coordinator up (at once, or retry.backoff.ms after the last failed lookup)."""
        if route not in self._nodes:
            lookup = self._lookups.get(route)
            if lookup is None:
                self._lookups[route] = _Lookup()
            else:
                lookup.wanted = True

    def forget(self, route: Coordinator) -> None:
        """The coordinator moved or is gone (NOT_COORDINATOR, a disconnect, no answer): looked up again when next
        asked for (at once: Java backs off only after a failed lookup)."""
        if self._nodes.pop(route, None) is not None:
            self._extra = self._build_extra()
            log.debug("%s: forgotten, looked up again when next needed", route)

    @property
    def in_flight(self) -> bool:
        """A lookup is out."""
        return any(lookup.in_flight for lookup in self._lookups.values())

    def extra_nodes(self) -> Mapping[int, Node]:
        """The coordinators' addresses by the node ids requests to them use, for the transport (the metadata may not
        name a coordinator yet, and never names a group's own connection). A new mapping after every change."""
        return self._extra

    def _connection_id(self, route: Coordinator, node: Node) -> int:
        if self.dedicated_group_connections and route.key_type == COORDINATOR_GROUP:
            return COORDINATOR_NODE_BASE - node.node_id
        return node.node_id

    def _build_extra(self) -> Mapping[int, Node]:
        extra: dict[int, Node] = {}
        for route, node in self._nodes.items():
            connection = self._connection_id(route, node)
            extra[connection] = node if connection == node.node_id else Node(connection, node.host, node.port,
                                                                               node.rack)
        return extra

    # -- the lookups (a request source) ----------------------------------------------------------------------

    def send_ready(self, now_ms: int) -> int:
        """Sends the lookups due, each to the least loaded broker when its connection is ready; returns ms until the
        next one is due (an answer comes sooner)."""
        delay_ms = 2**31
        for route, lookup in list(self._lookups.items()):
            if not lookup.wanted or lookup.in_flight:
                continue
            if now_ms < lookup.not_before_ms:
                delay_ms = min(delay_ms, lookup.not_before_ms - now_ms)
                continue
            node, wait_ms = ready_node(self.transport, None, now_ms, self.retry_backoff_ms)
            if node is None:
                return min(delay_ms, wait_ms)
            try:
                self.transport.send(node, lookup_request(route), now_ms,
                                    handler=lambda r, k=route: self._answered(k, r))  # type: ignore[misc]
            except KafkaError as e:  # not connected after all (retriable), or no FindCoordinator version in common
                self._failed(route, e, now_ms)
                continue
            lookup.in_flight = True
        return delay_ms

    def _answered(self, route: Coordinator, response: ClientResponse) -> None:
        lookup = self._lookups.get(route)
        if lookup is not None:
            lookup.in_flight = False
        if response.error is None:
            assert response.response is not None  # the transport fails a request whose answer it cannot read
            found: Node | KafkaError = read_coordinator(route, response.response)
        else:
            found = response.error
        if isinstance(found, KafkaError):
            self._failed(route, found, response.received_ms)
            return
        self._lookups.pop(route, None)
        self._failures.pop(route, None)
        if self._nodes.get(route) != found:
            self._nodes[route] = found
            self._extra = self._build_extra()
        log.info("%s is node %s (%s:%s)", route, found.node_id, found.host, found.port)

    def _failed(self, route: Coordinator, error: KafkaError, now_ms: int) -> None:
        """A lookup failed: asked again after retry.backoff.ms while the error is retriable (the coordinator is
        moving or loading, the connection dropped); else the error waits for whoever asks next."""
        lookup = self._lookups.setdefault(route, _Lookup())
        lookup.in_flight = False
        lookup.not_before_ms = now_ms + self.retry_backoff_ms
        retriable = error.retriable or bool(kinds_of(error.code)
                                            & (ErrorKind.COORDINATOR_MOVED | ErrorKind.COORDINATOR_LOADING))
        log.debug("%s: lookup failed (%s)%s", route, error, "; asking again" if retriable else "")
        if not retriable:
            lookup.wanted = False
            self._failures[route] = (error, lookup.not_before_ms)
