"""The consumer's side of its group's coordinator, on the network thread: the group member (core/group.py's classic
GroupMember, or core/consumer_member.py's ConsumerGroupMember with group.protocol=consumer: KIP-848's heartbeats)
driven as a request source (cykafka/requests/calls.py's RequestSource) over the request layer.

Owns the member (under `lock`), its view of the coordinator kept in step with the client's coordinator cache (found,
lost, a lookup wanted or failed), the metadata the member asks for, and the caller's group calls (an OffsetCommit the
member builds when it goes, so it carries its generation and holds back its next JoinGroup until answered; an
OffsetFetch) — in assign mode too, where the member is never subscribed. Every request, the member's own and the
caller's, is a `Call` to the group's coordinator on the client's CallQueue: one way to wait for a connection, one
call record; one of the member's that cannot go within its own timeout, or whose coordinator's connection failed,
fails, and the member looks its coordinator up again. Nothing here runs user code: the caller's thread takes the
member's events in poll() (cykafka/consumer.py).
"""

from __future__ import annotations

import base64
import logging
import threading
import uuid
from collections.abc import Callable

from cykafka.config import ConsumerConfig
from cykafka.core.consumer_member import ConsumerGroupMember, ConsumerGroupSettings, Membership
from cykafka.core.group import GroupMember, GroupSettings
from cykafka.errors import KafkaError, UnsupportedVersionError
from cykafka.ports import Clock, MetadataSource
from cykafka.protocol import API_NAMES, Request
from cykafka.protocol.apis import JOIN_GROUP, OFFSET_COMMIT
from cykafka.requests.calls import Call, CallQueue
from cykafka.requests.coordinators import Coordinators, group_coordinator
from cykafka.requests.offsets import offset_commit_codes, offset_fetch_error

log = logging.getLogger("cykafka.group")
_METADATA_TOUCH_MS = 10_000  # re-adds the member's topics this often, so metadata.max.idle.ms never drops them
_JOIN_TIMEOUT_LAPSE_MS = 5_000  # a JoinGroup may take the rebalance timeout plus this (Java's JOIN_GROUP_TIMEOUT_LAPSE)


def member_for(cfg: ConsumerConfig) -> Membership:
    """The group member a consumer's config asks for: the classic protocol's (core/group.py), or with
    group.protocol=consumer KIP-848's (core/consumer_member.py), whose member id is the client's own (Java's)."""
    assert cfg.group_id is not None
    if cfg.consumer_protocol:
        return ConsumerGroupMember(ConsumerGroupSettings(
            cfg.group_id, base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode(),
            cfg.max_poll_interval_ms, cfg.group_instance_id, cfg.group_remote_assignor, cfg.retry_backoff_ms,
            cfg.client_rack or None))
    return GroupMember(GroupSettings(
        cfg.group_id, cfg.session_timeout_ms, cfg.heartbeat_interval_ms, cfg.max_poll_interval_ms,
        cfg.group_instance_id, cfg.partition_assignment_strategy, cfg.retry_backoff_ms, cfg.client_rack or None))


class GroupDriver:
    """Sends what the member decides, feeds it answers, the coordinator, metadata and the time; `on_change` (no lock
    held) tells the caller's thread that events or an answer may wait."""

    def __init__(self, member: Membership, calls: CallQueue, coordinators: Coordinators, metadata: MetadataSource,
                 clock: Clock, request_timeout_ms: int, on_change: Callable[[], None]) -> None:
        self.member = member
        # the coordinator holds a JoinGroup until the group has joined: up to the rebalance timeout (Java)
        self._join_timeout_ms = max(request_timeout_ms,
                                    member.settings.max_poll_interval_ms + _JOIN_TIMEOUT_LAPSE_MS)
        self._request_timeout_ms = request_timeout_ms
        self.lock = threading.Lock()
        self.calls = calls
        self.coordinators = coordinators
        self.route = group_coordinator(member.settings.group_id)
        self.metadata = metadata
        self.clock = clock
        self.error: KafkaError | None = None  # a failure of the group protocol, raised by the caller's next poll
        self._on_change = on_change
        self._snapshot: object = None
        self._topics: frozenset[str] | None = frozenset()  # the member's last metadata topics (None: every topic)
        self._touched_ms = -(2**62)
        self.on_rebalanced: Callable[[int], None] | None = None  # the consumer's metrics: a rebalance's ms, JoinGroup
        self._rebalance_started_ms: int | None = None  # to SyncGroup answered (rebalance-latency)

    def call(self, build: Callable[[Membership], Request], deadline_ms: int) -> Call:
        """A caller's request at the group's coordinator (not submitted yet), built by build(member) when it goes
        (under the lock); its answer feeds the member (a commit's, an offset fetch's codes) before the caller sees
        it."""
        def made() -> Request:
            with self.lock:
                return build(self.member)

        return Call(self.route, deadline_ms, build=made, on_answer=self._caller_answered,
                    what=f"group {self.member.settings.group_id!r}")

    def submit(self, build: Callable[[Membership], Request], deadline_ms: int) -> Call:
        """call(build, deadline_ms), submitted."""
        call = self.call(build, deadline_ms)
        self.calls.submit(call)
        return call

    def send_ready(self, now_ms: int) -> int:
        failed = False
        requests: list[Request] = []
        with self.lock:
            member = self.member
            self._feed_metadata(now_ms)
            self._sync_coordinator(now_ms)
            try:
                while (request := member.next_request(now_ms)) is not None:
                    requests.append(request)
            except KafkaError as e:
                self.error, failed = e, True  # (calls waiting for a coordinator that cannot be found fail with the
                #                              cache's lookup error themselves, in the CallQueue)
            delay_ms = member.poll_timeout_ms(now_ms, events_elsewhere=True)
        for request in requests:  # outside the lock: a send that fails at once completes its call here
            timeout_ms = self._join_timeout_ms if request.api_key == JOIN_GROUP.key else self._request_timeout_ms
            if request.api_key == JOIN_GROUP.key and self._rebalance_started_ms is None:
                self._rebalance_started_ms = now_ms
            # unsent within its own timeout (or its coordinator's connection failed), it fails and the member looks
            # its coordinator up again (Java's ConsumerNetworkClient)
            self.calls.submit(Call(self.route, now_ms + timeout_ms, request, on_answer=self._member_answered,
                                   timeout_ms=timeout_ms if request.api_key == JOIN_GROUP.key else None), now_ms)
        if failed:
            self._on_change()
        return delay_ms

    def _sync_coordinator(self, now_ms: int) -> None:
        """With the lock held: the member's view of its coordinator follows the coordinator cache, and what the
        member decided (it is gone; look it up) goes to the cache."""
        member, coordinators, route = self.member, self.coordinators, self.route
        if member.take_coordinator_lost():
            coordinators.forget(route)
        known = coordinators.get(route) is not None
        if known and not member.has_coordinator:
            member.coordinator_found(now_ms)
        elif not known and member.has_coordinator:  # forgotten on another call's answer (NOT_COORDINATOR)
            member.has_coordinator = False
        if not known and member.wants_coordinator:
            try:
                coordinators.node_id(route, now_ms)  # wanted: the cache's lookup goes on its next turn
            except KafkaError as e:  # the lookup failed for good (GROUP_AUTHORIZATION_FAILED)
                member.coordinator_lookup_failed(e, now_ms)

    def _member_answered(self, call: Call) -> None:
        """The answer (or failure) of a request from member.next_request."""
        assert call.request is not None
        api_key = call.request.api_key
        now_ms = self.clock.monotonic_ms()
        with self.lock:
            if call.error is None and call.response is not None:
                self.member.on_response(api_key, call.response, now_ms)
            elif isinstance(call.error, UnsupportedVersionError) and isinstance(self.member, ConsumerGroupMember):
                self.member.fail(UnsupportedVersionError(
                    f"group.protocol=consumer needs a broker speaking ConsumerGroupHeartbeat (KIP-848: Apache Kafka "
                    f"4.0+; not Tansu); use group.protocol=classic with this one ({call.error})"))
            else:
                log.debug("group %s: %s got no answer: %s", self.member.settings.group_id, API_NAMES[api_key],
                          call.error)
                self.member.on_failure(api_key, now_ms)
            started_ms = self._rebalance_started_ms
            if started_ms is not None and self.member.stable:
                self._rebalance_started_ms = None
                if self.on_rebalanced is not None:
                    self.on_rebalanced(now_ms - started_ms)
        self._on_change()

    def _caller_answered(self, call: Call) -> None:
        """The answer of a caller's call: the member sees a commit's (or offset fetch's) error codes, or that a
        request it built got no answer; one never built (the coordinator not found in time) it never saw."""
        if call.request is None:
            self._on_change()
            return
        api_key = call.request.api_key
        now_ms = self.clock.monotonic_ms()
        body = call.response if call.error is None else None
        with self.lock:
            if body is None:
                self.member.on_failure(api_key, now_ms)
            elif api_key == OFFSET_COMMIT.key:
                self.member.on_offsets_answer(api_key, offset_commit_codes(body), now_ms)
            else:
                error = offset_fetch_error(body, self.member.settings.group_id)
                self.member.on_offsets_answer(api_key, [error.code or 0] if error is not None else [], now_ms)
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
                                    if topics is None or t in topics}, now_ms, snapshot.topic_ids)
        elif member.wants_metadata:
            metadata.request_update()
