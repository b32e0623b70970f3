"""The consumer's network thread: one loop that owns the Transport and drives a list of request sources.

A request source (`RequestSource`) is anything that sends requests when they are due and handles their answers on
this thread: the Fetcher (cykafka/fetcher.py), the caller's one-off calls (`Calls`: ListOffsets, OffsetCommit, ...),
later the group coordinator. `ConsumerNetwork.run_once()` is one turn (metadata, every source, one transport poll);
`NetworkThread` is the thin shell that loops it, as the producer's SenderThread loops Sender.run_once. Only this thread
touches the transport; other threads hand work over through locked queues and `transport.wakeup()`.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cykafka.errors import KafkaError, KafkaTimeoutError, NetworkError
from cykafka.ports import ClientResponse, Clock, MetadataSource, Node, Transport
from cykafka.protocol import API_NAMES, Request

log = logging.getLogger("cykafka")


class RequestSource(Protocol):
    def send_ready(self, now_ms: int) -> int:
        """Sends what is due through the transport (handlers run on the network thread); returns ms until it next
        needs to run (a wakeup or an answer may come sooner)."""
        ...


@dataclass(slots=True, eq=False)
class Call:
    """One request from a caller's thread to a node (None: the least loaded), answered on the network thread."""

    request: Request
    node_id: int | None
    expires_ms: int  # dropped unsent after this
    done: threading.Event = field(default_factory=threading.Event)
    answered_by: int = -1
    response: dict[str, Any] | None = None
    error: KafkaError | None = None


class Calls:
    """The caller's one-off requests as a request source: submit() from any thread, sent when the node is ready."""

    def __init__(self, transport: Transport, retry_backoff_ms: int) -> None:
        self.transport = transport
        self.retry_backoff_ms = retry_backoff_ms
        self._queue: deque[Call] = deque()
        self._lock = threading.Lock()

    def submit(self, call: Call) -> None:
        with self._lock:
            self._queue.append(call)
        self.transport.wakeup()

    def send_ready(self, now_ms: int) -> int:
        delay_ms = 2**31
        with self._lock:
            queued, self._queue = self._queue, deque()
        waiting: deque[Call] = deque()
        for call in queued:
            if now_ms >= call.expires_ms:
                call.error = KafkaTimeoutError(f"{API_NAMES[call.request.api_key]}: not sent before its deadline")
                call.done.set()
                continue
            node = self.transport.least_loaded_node(now_ms) if call.node_id is None else call.node_id
            if node is None or not self.transport.ready(node, now_ms):
                if node is not None and call.node_id is not None and self.transport.connection_failed(node):
                    # a node that went away (a dead leader): fail now, the caller picks the node again (Java's
                    # ConsumerNetworkClient fails the unsent requests of a disconnected node)
                    call.error = NetworkError(f"{API_NAMES[call.request.api_key]} not sent: the connection to "
                                              f"node {node} failed")
                    call.done.set()
                    continue
                waiting.append(call)
                wait_ms = self.retry_backoff_ms if node is None else self.transport.connection_delay_ms(node, now_ms)
                delay_ms = min(delay_ms, max(1, wait_ms), call.expires_ms - now_ms)
                continue
            try:
                self.transport.send(node, call.request, now_ms,
                                    handler=lambda r, c=call: self._answered(c, r))  # type: ignore[misc]
            except KafkaError as e:
                call.error = e
                call.done.set()
        with self._lock:
            self._queue.extendleft(reversed(waiting))
        return delay_ms

    @staticmethod
    def _answered(call: Call, response: ClientResponse) -> None:
        call.answered_by = response.node_id
        call.error = response.error
        call.response = response.response if isinstance(response.response, dict) else None
        call.done.set()


class ConsumerNetwork:
    """One turn of the network loop: metadata, every request source, one transport poll."""

    def __init__(self, transport: Transport, metadata: MetadataSource, clock: Clock, sources: list[RequestSource],
                 request_timeout_ms: int) -> None:
        self.transport = transport
        self.metadata = metadata
        self.clock = clock
        self.sources = sources
        self.request_timeout_ms = request_timeout_ms
        self.extra_nodes: Mapping[int, Node] = {}  # coordinators metadata does not name (replaced, never mutated)
        self._disconnects_seen = 0
        self._nodes_source: tuple[object, object] | None = None
        self._nodes: Mapping[int, Node] = {}
        self.running = True

    def run_once(self) -> None:
        now_ms = self.clock.monotonic_ms()
        if self.transport.disconnect_count != self._disconnects_seen:  # a lost broker may have lost leaderships
            self._disconnects_seen = self.transport.disconnect_count
            self.metadata.request_update()
        delay_ms = self.metadata.maybe_update(now_ms)
        snapshot, extra = self.metadata.snapshot(), self.extra_nodes
        if (snapshot.nodes, extra) != self._nodes_source:
            self._nodes = {**extra, **snapshot.nodes} if extra else snapshot.nodes
            self._nodes_source = (snapshot.nodes, extra)
        self.transport.update_nodes(self._nodes)
        for source in self.sources:
            delay_ms = min(delay_ms, source.send_ready(now_ms))
        timeout_ms = max(0, min(delay_ms, self.request_timeout_ms))
        for response in self.transport.poll(timeout_ms, self.clock.monotonic_ms()):
            if response.handler is not None:
                response.handler(response)


class NetworkThread(threading.Thread):
    """Loops ConsumerNetwork.run_once until `network.running` is False; an unexpected error is logged and the loop
    goes on (nothing but close() ends it)."""

    def __init__(self, network: ConsumerNetwork, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.network = network
        self.last_error: BaseException | None = None
        self.transport_to_close: Transport | None = None  # set when the consumer was dropped unclosed

    def run(self) -> None:
        network = self.network
        while network.running:
            try:
                network.run_once()
            except BaseException as e:  # nothing ends this thread but close()
                if type(e) is not type(self.last_error) or str(e) != str(self.last_error):
                    log.error("unexpected error in the consumer's network loop; continuing", exc_info=e)
                self.last_error = e
                network.clock.sleep_ms(10)
        if self.transport_to_close is not None:
            self.transport_to_close.close(0)


def stop_unclosed(client_id: str, thread: NetworkThread | None, network: ConsumerNetwork,
                  transport: Transport | None) -> None:
    """A Consumer nobody references was never closed: warn as an unclosed file does, stop its network thread, which
    then closes the transport it owned. Never blocks (a finalizer)."""
    warnings.warn(f"unclosed cykafka Consumer {client_id!r}: close() it, or use it in a with block",
                  ResourceWarning, stacklevel=2)
    if thread is not None and thread.is_alive():
        thread.transport_to_close = transport
    elif transport is not None:
        transport.close(0)
    network.running = False
    network.transport.wakeup()
