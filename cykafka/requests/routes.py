"""Where a request goes and how it waits for its broker's connection.

Owns: the routes (`AnyBroker`: the least loaded broker; `Broker`: a given node; `Leader`: a partition's leader;
`Controller`: the cluster's controller; `Coordinator`: a group's or transactional id's coordinator), `ready_node`
(the one "is the node ready, else how long to wait for its connection" check) and `Router` (a route to a node id,
from the metadata snapshot and the coordinator cache). No I/O beyond asking the Transport port whether a node is
ready (which starts connecting when it may); no clock reads: time comes in as now_ms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cykafka.errors import BrokerNotFoundError, KafkaError
from cykafka.ports import MetadataSource, Transport
from cykafka.protocol.apis import COORDINATOR_GROUP
from cykafka.protocol.error_codes import ErrorKind, kinds_of

if TYPE_CHECKING:
    from cykafka.requests.coordinators import Coordinators


@dataclass(frozen=True, slots=True)
class AnyBroker:
    """The least loaded broker (Java's leastLoadedNode): metadata, FindCoordinator, ListGroups' first hop..."""

    def __str__(self) -> str:
        return "any broker"


ANY_BROKER = AnyBroker()


@dataclass(frozen=True, slots=True)
class Broker:
    """A given broker, by node id (a leader the caller resolved, a broker's own configs, ListGroups per broker)."""

    node_id: int

    def __str__(self) -> str:
        return f"node {self.node_id}"


@dataclass(frozen=True, slots=True)
class Leader:
    """The leader of a partition, from the metadata snapshot (unknown: a metadata update is asked for)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"the leader of {self.topic} [{self.partition}]"


@dataclass(frozen=True, slots=True)
class Controller:
    """The cluster's controller, from the metadata snapshot (CreateTopics, DeleteTopics)."""

    def __str__(self) -> str:
        return "the controller"


CONTROLLER = Controller()


@dataclass(frozen=True, slots=True)
class Coordinator:
    """The coordinator of a consumer group (key_type COORDINATOR_GROUP) or of a transactional id
    (COORDINATOR_TRANSACTION), from the coordinator cache (cykafka/requests/coordinators.py)."""

    key_type: int
    key: str

    def __str__(self) -> str:
        return f"the coordinator of {'group' if self.key_type == COORDINATOR_GROUP else 'transactional id'} " \
               f"{self.key!r}"


Route = AnyBroker | Broker | Leader | Controller | Coordinator


def ready_node(transport: Transport, node_id: int | None, now_ms: int, backoff_ms: int) -> tuple[int | None, int]:
    """The one "send when the connection is ready" check: (node_id, 0) when a request can go to node_id now (None:
    the least loaded broker), else (None, ms to wait): the connection's delay (at least 1 ms: a connection being set
    up ends the transport's poll when it is ready), or backoff_ms when there is no broker to try. Asking starts
    connecting when the transport may."""
    node = transport.least_loaded_node(now_ms) if node_id is None else node_id
    if node is None:
        return None, backoff_ms
    if transport.ready(node, now_ms):
        return node, 0
    return None, max(1, transport.connection_delay_ms(node, now_ms))


class Router:
    """Routes to node ids. Metadata (leaders, controller) comes from the MetadataSource's snapshot, coordinators from
    the coordinator cache; what is not known yet is asked for (a metadata update, a coordinator lookup) and the
    route resolves on a later turn."""

    def __init__(self, transport: Transport, metadata: MetadataSource | None, coordinators: Coordinators,
                 retry_backoff_ms: int) -> None:
        self.transport = transport
        self.metadata = metadata
        self.coordinators = coordinators
        self.retry_backoff_ms = retry_backoff_ms

    def node_for(self, route: Route, now_ms: int) -> int | None:
        """The node the route names now: None for the least loaded broker (ready_node picks it) or while it is not
        known yet (asked for); raises the coordinator lookup's error when it failed for good, BrokerNotFoundError
        for a route that needs metadata when there is none."""
        if isinstance(route, AnyBroker):
            return None
        if isinstance(route, Broker):
            return route.node_id
        if isinstance(route, Coordinator):
            return self.coordinators.node_id(route, now_ms)
        metadata = self.metadata
        if metadata is None:
            raise BrokerNotFoundError(f"{route}: this client keeps no metadata to find it in")
        snapshot = metadata.snapshot()
        if isinstance(route, Leader):
            leader = snapshot.leader(route.topic, route.partition)
            if leader >= 0:
                return leader
            metadata.add_topic(route.topic, now_ms)
        elif snapshot.controller_id in snapshot.nodes:
            return snapshot.controller_id
        metadata.request_update()
        return None

    def ready(self, route: Route, now_ms: int) -> tuple[int | None, int]:
        """(node id, 0) when a request on this route can go now, else (None, ms to wait); raises what node_for
        raises."""
        known = route if isinstance(route, AnyBroker) else self.node_for(route, now_ms)
        if known is None:
            return None, self.retry_backoff_ms
        return ready_node(self.transport, None if isinstance(known, AnyBroker) else known, now_ms,
                          self.retry_backoff_ms)

    def failed(self, route: Route, error: KafkaError) -> None:
        """What a failed answer on this route says about it, by the error table's kinds: a moved coordinator is looked
        up again, a stale leader or a moved controller asks for a metadata update."""
        kinds = kinds_of(error.code)
        if kinds & ErrorKind.COORDINATOR_MOVED and isinstance(route, Coordinator):
            self.coordinators.forget(route)
        if kinds & (ErrorKind.STALE_METADATA | ErrorKind.CONTROLLER_MOVED) and self.metadata is not None:
            self.metadata.request_update()
