"""The consumer's side of its group's coordinator, on the network thread: core/group.py's GroupMember driven as a
request source (cykafka/consumer_network.py).

Owns the member (under `lock`), the requests it decided on that wait for a ready connection (failed, as Java's
ConsumerNetworkClient fails unsent requests, when the connection to their node fails or their timeout passes: the
member then looks its coordinator up again), the coordinator's
address handed to the network (`extra_nodes`), the metadata the member asks for, and the caller's group calls
(OffsetCommit / OffsetFetch built by the member, so they carry its generation and hold back its next JoinGroup until
answered) — in assign mode too, where the member is never subscribed and only finds the coordinator. Nothing here
runs user code: the caller's thread takes the member's events in poll() (cykafka/consumer.py).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cykafka.core.group import GroupMember, Outgoing
from cykafka.errors import KafkaError, KafkaTimeoutError, NetworkError
from cykafka.ports import ClientResponse, Clock, MetadataSource, Node, Transport
from cykafka.protocol import API_NAMES
from cykafka.protocol.apis import JOIN_GROUP

log = logging.getLogger("cykafka")
_METADATA_TOUCH_MS = 10_000  # re-adds the member's topics this often, so metadata.max.idle.ms never drops them
_JOIN_TIMEOUT_LAPSE_MS = 5_000  # a JoinGroup may take the rebalance timeout plus this (Java's JOIN_GROUP_TIMEOUT_LAPSE)


@dataclass(slots=True, eq=False)
class _Unsent:
    """A request the member decided on (for a caller's call, or its own), waiting for a ready connection."""

    out: Outgoing
    call: GroupCall | None
    expires_ms: int  # failed unsent after this: its own timeout from when it was decided


@dataclass(slots=True, eq=False)
class GroupCall:
    """A caller's request the member builds (None while it has no coordinator yet), answered on the network thread."""

    build: Callable[[GroupMember], Outgoing | None]
    expires_ms: int
    done: threading.Event = field(default_factory=threading.Event)
    response: dict[str, Any] | None = None
    error: KafkaError | None = None


class GroupDriver:
    """Sends what the member decides, feeds it answers, metadata and the time; `on_change` (no lock held) tells the
    caller's thread that events or an answer may wait."""

    def __init__(self, member: GroupMember, transport: Transport, metadata: MetadataSource, clock: Clock,
                 request_timeout_ms: int, set_coordinator: Callable[[Node | None], None],
                 on_change: Callable[[], None]) -> None:
        self.member = member
        # the coordinator holds a JoinGroup until the group has joined: up to the rebalance timeout (Java)
        self._join_timeout_ms = max(request_timeout_ms,
                                    member.settings.max_poll_interval_ms + _JOIN_TIMEOUT_LAPSE_MS)
        self._request_timeout_ms = request_timeout_ms
        self.lock = threading.Lock()
        self.transport = transport
        self.metadata = metadata
        self.clock = clock
        self.error: KafkaError | None = None  # a failure of the group protocol, raised by the caller's next poll
        self._set_coordinator = set_coordinator
        self._on_change = on_change
        self._coordinator: Node | None = None
        self._calls: deque[GroupCall] = deque()
        self._outbox: deque[_Unsent] = deque()
        self._snapshot: object = None
        self._topics: frozenset[str] | None = frozenset()  # the member's last metadata topics (None: every topic)
        self._touched_ms = -(2**62)

    def submit(self, build: Callable[[GroupMember], Outgoing | None], expires_ms: int) -> GroupCall:
        call = GroupCall(build, expires_ms)
        with self.lock:
            self._calls.append(call)
        self.transport.wakeup()
        return call

    def send_ready(self, now_ms: int) -> int:
        finished: list[GroupCall] = []
        failed = False
        with self.lock:
            member = self.member
            self._feed_metadata(now_ms)
            for _ in range(len(self._calls)):
                call = self._calls.popleft()
                try:
                    out = call.build(member) if now_ms < call.expires_ms else None
                except KafkaError as e:
                    call.error = e
                    finished.append(call)
                    continue
                if out is not None:
                    self._outbox.append(_Unsent(out, call, now_ms + self._timeout_ms(out)))
                elif now_ms >= call.expires_ms:
                    call.error = KafkaTimeoutError("no group coordinator found before the deadline")
                    finished.append(call)
                else:
                    self._calls.append(call)  # the member now wants its coordinator: FindCoordinator comes next
            try:
                while (out := member.next_request(now_ms)) is not None:
                    self._outbox.append(_Unsent(out, None, now_ms + self._timeout_ms(out)))
            except KafkaError as e:
                self.error, failed = e, True
                if not e.retriable:  # e.g. GROUP_AUTHORIZATION_FAILED: calls waiting for a coordinator get it too
                    finished += self._calls
                    for call in self._calls:
                        call.error = e
                    self._calls.clear()
            delay_ms = member.poll_timeout_ms(now_ms, events_elsewhere=True)
            if self._calls:
                delay_ms = min(delay_ms, max(1, min(c.expires_ms for c in self._calls) - now_ms))
            delay_ms = min(delay_ms, self._send_outbox(now_ms, finished))
        for call in finished:
            call.done.set()
        if finished or failed:
            self._on_change()
        return delay_ms

    def _timeout_ms(self, out: Outgoing) -> int:
        return self._join_timeout_ms if out.request.api_key == JOIN_GROUP.key else self._request_timeout_ms

    def _send_outbox(self, now_ms: int, finished: list[GroupCall]) -> int:
        delay_ms = 2**31
        for _ in range(len(self._outbox)):
            unsent = self._outbox.popleft()
            out, call = unsent.out, unsent.call
            node = self.transport.least_loaded_node(now_ms) if out.node_id is None else out.node_id
            error: KafkaError | None = None
            if node is not None and self.transport.ready(node, now_ms):
                try:
                    self.transport.send(node, out.request, now_ms,
                                        handler=lambda r, o=out, c=call: self._answered(o, c, r),  # type: ignore[misc]
                                        timeout_ms=self._timeout_ms(out))
                    continue
                except KafkaError as e:
                    error = e
            elif node is not None and self.transport.connection_failed(node):  # e.g. the coordinator died
                error = NetworkError(f"{API_NAMES[out.request.api_key]} not sent: the connection to node {node} "
                                     f"failed")
            elif now_ms >= unsent.expires_ms:
                error = KafkaTimeoutError(f"{API_NAMES[out.request.api_key]} not sent within its timeout: node "
                                          f"{node} not ready")
            if error is None:
                self._outbox.append(unsent)
                delay_ms = min(delay_ms, unsent.expires_ms - now_ms, 100 if node is None else max(
                    1, self.transport.connection_delay_ms(node, now_ms)))
                continue
            log.debug("group %s: %s", self.member.settings.group_id, error)
            self.member.on_failure(out.request.api_key, now_ms)  # finds the coordinator again, retries what was lost
            if call is not None:
                call.error = error
                finished.append(call)
        return delay_ms

    def _answered(self, out: Outgoing, call: GroupCall | None, response: ClientResponse) -> None:
        api_key = out.request.api_key
        now_ms = self.clock.monotonic_ms()
        body = response.response if response.error is None and isinstance(response.response, dict) else None
        with self.lock:
            if body is not None:
                self.member.on_response(api_key, body, now_ms)
            else:
                log.debug("group %s: %s got no answer: %s", self.member.settings.group_id, API_NAMES[api_key],
                          response.error)
                self.member.on_failure(api_key, now_ms)
            coordinator = self.member.coordinator
            if coordinator != self._coordinator:
                self._coordinator = coordinator
                self._set_coordinator(coordinator)
        if call is not None:
            call.response = body
            call.error = None if body is not None else response.error or KafkaError(f"{API_NAMES[api_key]}: no answer")
            call.done.set()
        self._on_change()

    def _feed_metadata(self, now_ms: int) -> None:
        """The member's topics into the metadata (every topic for a pattern), fresh snapshots into the member."""
        member, metadata = self.member, self.metadata
        topics = member.metadata_topics()
        if (topics is None) != (self._topics is None):
            metadata.set_all_topics(topics is None)
        if topics is not None and (topics != self._topics or now_ms - self._touched_ms >= _METADATA_TOUCH_MS):
            for topic in topics:
                metadata.add_topic(topic, now_ms)
            self._touched_ms = now_ms
        self._topics = topics
        snapshot = metadata.snapshot()
        if snapshot is not self._snapshot:
            self._snapshot = snapshot
            member.update_metadata({t: len(parts) for t, parts in snapshot.partitions.items()
                                    if topics is None or t in topics}, now_ms)
        elif member.wants_metadata:
            metadata.request_update()
