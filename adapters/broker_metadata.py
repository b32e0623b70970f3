"""Broker-backed metadata: Metadata requests over the Transport to the least-loaded node, on bootstrap, on demand
(unknown leader, NOT_LEADER errors), every metadata.max.age.ms; topics unused for metadata.max.idle.ms are dropped.
Each answer becomes a new immutable ClusterSnapshot (ports.ClusterSnapshot).
"""

from __future__ import annotations

import logging
import threading

from cykafka.ports import ClientResponse, ClusterSnapshot, MetadataSettings, Transport
from cykafka.protocol import Request
from cykafka.protocol.apis import METADATA

log = logging.getLogger("cykafka.network")


class BrokerMetadata:
    def __init__(self, settings: MetadataSettings, transport: Transport) -> None:
        self.settings = settings
        self.transport = transport
        self._snapshot = ClusterSnapshot()
        self._topics: dict[str, int] = {}  # topic -> last used (monotonic ms)
        self._lock = threading.Lock()
        self._update_requested = True
        self._in_flight = False
        self._last_refresh_ms = -(2**62)
        self._last_attempt_ms: int | None = None
        self.version = 0
        self._all_topics = False

    def set_all_topics(self, on: bool) -> None:
        """Every topic of the cluster in the snapshots (a pattern subscription), or only those added."""
        if on != self._all_topics:
            self._all_topics = on
            self._update_requested = True
            self._last_attempt_ms = None

    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    def add_topic(self, topic: str, now_ms: int) -> None:
        with self._lock:
            if topic not in self._topics:  # a new topic is fetched at once (Java's requestUpdateForNewTopics)
                self._update_requested = True
                self._last_attempt_ms = None
            self._topics[topic] = now_ms

    def request_update(self) -> None:
        self._update_requested = True

    def maybe_update(self, now_ms: int) -> int:
        """Sends a Metadata request when one is due; returns ms until the next check."""
        if self._in_flight:
            return self.settings.request_timeout_ms
        due_ms = self._last_refresh_ms + self.settings.metadata_max_age_ms
        if self._update_requested:  # the first attempt goes at once, whatever retry.backoff.ms
            due_ms = min(due_ms, now_ms if self._last_attempt_ms is None
                         else self._last_attempt_ms + self.settings.retry_backoff_ms)
        if now_ms < due_ms:
            return due_ms - now_ms
        node = self.transport.least_loaded_node(now_ms)
        if node is None:
            return self.settings.reconnect_backoff_ms
        if not self.transport.ready(node, now_ms):
            return max(1, min(self.transport.connection_delay_ms(node, now_ms), self.settings.reconnect_backoff_ms))
        with self._lock:
            idle_before_ms = now_ms - self.settings.metadata_max_idle_ms
            for topic in [t for t, used in self._topics.items() if used < idle_before_ms]:
                del self._topics[topic]
            topics = sorted(self._topics)
        request = Request(METADATA.key, {"topics": None if self._all_topics else [{"name": t} for t in topics],
                                         "allow_auto_topic_creation": self.settings.allow_auto_create_topics})
        self._in_flight = True
        self._last_attempt_ms = now_ms
        self._update_requested = False
        self.transport.send(node, request, now_ms, handler=self._on_response)
        return self.settings.request_timeout_ms

    def _on_response(self, response: ClientResponse) -> None:
        self._in_flight = False
        if response.error is not None or response.response is None:
            log.debug("metadata request failed: %s", response.error)
            self._update_requested = True
            return
        snapshot = ClusterSnapshot.from_metadata(response.response)
        if not snapshot.nodes:
            self._update_requested = True
            return
        with self._lock:
            wanted = set(self._topics)
        # a topic still without leaders (being created) or missing: ask again after retry.backoff.ms
        for topic in wanted:
            parts = snapshot.partitions.get(topic)
            if not parts or any(p.leader < 0 for p in parts):
                self._update_requested = True
        self._snapshot = snapshot
        self._last_refresh_ms = response.received_ms
        self.version += 1
