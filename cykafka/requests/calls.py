"""Calls: the requests a caller waits for, sent when their route resolves and their connection is ready.

Owns: `Call` (the one record of a request and its outcome, for every client: the consumer's one-off requests, its
group member's requests and commits, Admin's), `CallQueue` (a client's calls as a request source: each goes when its
route resolves to a ready node, fails when its deadline passes unsent, its answer completes it), `RequestSource` (what
a network loop drives) and `NetworkLoop` (one turn of a client's network loop: metadata, the nodes the transport must
know, every request source, one transport poll). Nothing here retries: `cykafka.requests.ask` decides, by the error
table, whether a failed call is asked again.

Threads: `submit` from any thread; everything else on the thread that owns the transport (a consumer's network
thread, Admin's caller). A call's `on_answer` runs there, then `done` is set for whoever waits.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cykafka.errors import KafkaError, KafkaTimeoutError, NetworkError
from cykafka.ports import ClientResponse, Clock, MetadataSource, Node, Transport
from cykafka.protocol import API_NAMES, Request
from cykafka.requests.coordinators import Coordinators
from cykafka.requests.routes import AnyBroker, Route, Router


class RequestSource(Protocol):
    def send_ready(self, now_ms: int) -> int:
        """Sends what is due through the transport (handlers run on the network thread); returns ms until it next
        needs to run (a wakeup or an answer may come sooner)."""
        ...


@dataclass(slots=True, eq=False)
class Call:
    """One request and its outcome. `request`, or `build` to make it when it goes (a group member's commit carries
    the generation of that moment); `route` says where; not sent by `deadline_ms`, it fails with KafkaTimeoutError.
    `timeout_ms`: how long its answer may take (None: request.timeout.ms). `on_answer` runs on the network thread
    when it completes, before `done` is set."""

    route: Route
    deadline_ms: int
    request: Request | None = None
    build: Callable[[], Request] | None = None
    timeout_ms: int | None = None
    on_answer: Callable[[Call], None] | None = None
    what: str = ""  # names it in errors (default: the API's name)
    done: threading.Event = field(default_factory=threading.Event)
    answered_by: int = -1  # the node that answered
    response: dict[str, Any] | None = None
    error: KafkaError | None = None

    @property
    def name(self) -> str:
        return self.what or (API_NAMES.get(self.request.api_key, "request") if self.request else "request")

    def finish(self, response: dict[str, Any] | None, error: KafkaError | None, node_id: int = -1) -> None:
        self.answered_by, self.response, self.error = node_id, response, error
        if self.on_answer is not None:
            self.on_answer(self)
        self.done.set()


class CallQueue:
    """One client's calls, sent on its network thread (`send_ready`); `submit` from any thread."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.transport = router.transport
        self._queue: deque[Call] = deque()
        self._lock = threading.Lock()

    def submit(self, call: Call, now_ms: int | None = None) -> None:
        """Queues call for the next turn; with now_ms (on the network thread only), sends it at once if it can go."""
        if now_ms is not None and self._try(call, now_ms) is None:
            return
        with self._lock:
            self._queue.append(call)
        self.transport.wakeup()

    def send_ready(self, now_ms: int) -> int:
        delay_ms = 2**31
        with self._lock:
            queued, self._queue = self._queue, deque()
        waiting: deque[Call] = deque()
        for call in queued:
            wait_ms = self._try(call, now_ms)
            if wait_ms is not None:
                waiting.append(call)
                delay_ms = min(delay_ms, wait_ms)
        with self._lock:
            self._queue.extendleft(reversed(waiting))
        return delay_ms

    def _try(self, call: Call, now_ms: int) -> int | None:
        """Sends call if it can go (None); else ms until it may (it stays queued), or None when it failed: its deadline
        passed, its route cannot resolve, or the connection to the node it names failed."""
        if now_ms >= call.deadline_ms:
            call.finish(None, KafkaTimeoutError(f"{call.name}: not sent before its deadline ({call.route})"))
            return None
        try:
            node, wait_ms = self.router.ready(call.route, now_ms)
        except KafkaError as e:  # the route cannot resolve (a coordinator lookup failed for good)
            call.finish(None, e)
            return None
        if node is None:
            failure = self.transport.authentication_error()
            if failure is not None:  # not retriable: what waits for a connection fails now
                call.finish(None, failure)
                return None
            named = None if isinstance(call.route, AnyBroker) else self.router.node_for(call.route, now_ms)
            if named is not None and self.transport.connection_failed(named):
                # a node that went away (a dead leader or coordinator): fail now, the caller routes it again (Java's
                # ConsumerNetworkClient fails the unsent requests of a disconnected node)
                call.finish(None, NetworkError(f"{call.name} not sent: the connection to node {named} failed"), named)
                return None
            return max(1, min(wait_ms, call.deadline_ms - now_ms))
        try:
            request = call.request if call.request is not None else call.build() if call.build else None
            if request is None:
                raise KafkaError(f"{call.name}: a call with neither a request nor a way to build one")
            call.request = request
            handler: Callable[[ClientResponse], None] = lambda r: self._answered(call, r)  # noqa: E731
            if call.timeout_ms is None:
                self.transport.send(node, request, now_ms, handler=handler)
            else:  # its own answer timeout (a JoinGroup the coordinator holds)
                self.transport.send(node, request, now_ms, handler=handler, timeout_ms=call.timeout_ms)
        except KafkaError as e:  # not connected after all, no version in common, or the builder refused
            call.finish(None, e, node)
        return None

    @staticmethod
    def _answered(call: Call, response: ClientResponse) -> None:
        body = response.response if isinstance(response.response, dict) else None
        error = response.error if response.error is not None or body is not None else KafkaError(
            f"{call.name}: no answer")
        call.finish(body, error, response.node_id)


class NetworkLoop:
    """One turn of a client's network loop (`run_once`): metadata, the nodes the transport must know (the metadata's
    and the coordinators' it does not name), every request source in order, one transport poll whose answers run
    their handlers. The consumer's network thread loops it; Admin runs it while a call waits."""

    def __init__(self, transport: Transport, metadata: MetadataSource, clock: Clock, sources: list[RequestSource],
                 request_timeout_ms: int, coordinators: Coordinators | None = None) -> None:
        self.transport = transport
        self.metadata = metadata
        self.clock = clock
        self.sources = sources
        self.request_timeout_ms = request_timeout_ms
        self.coordinators = coordinators
        self._disconnects_seen = 0
        self._nodes_source: tuple[object, object] | None = None
        self._nodes: Mapping[int, Node] = {}
        self.running = True
        self.on_response: Callable[[ClientResponse], None] | None = None  # a client's metrics: each answer once

    def run_once(self, max_wait_ms: int | None = None) -> None:
        """One turn; max_wait_ms caps the poll (a caller driving the loop while it waits for its deadline)."""
        now_ms = self.clock.monotonic_ms()
        if self.transport.disconnect_count != self._disconnects_seen:  # a lost broker may have lost leaderships
            self._disconnects_seen = self.transport.disconnect_count
            self.metadata.request_update()
        delay_ms = self.metadata.maybe_update(now_ms)
        self.update_nodes()
        for source in self.sources:
            delay_ms = min(delay_ms, source.send_ready(now_ms))
        timeout_ms = max(0, min(delay_ms, self.request_timeout_ms, 2**31 if max_wait_ms is None else max_wait_ms))
        on_response = self.on_response
        for response in self.transport.poll(timeout_ms, self.clock.monotonic_ms()):
            if on_response is not None:
                on_response(response)
            if response.handler is not None:
                response.handler(response)

    def update_nodes(self) -> None:
        """Hands the transport the metadata's brokers and the coordinators it does not name (a new mapping only when
        either changed)."""
        snapshot = self.metadata.snapshot()
        extra = self.coordinators.extra_nodes() if self.coordinators is not None else {}
        if (snapshot.nodes, extra) != self._nodes_source:
            self._nodes = {**extra, **snapshot.nodes} if extra else snapshot.nodes
            self._nodes_source = (snapshot.nodes, extra)
        self.transport.update_nodes(self._nodes)
