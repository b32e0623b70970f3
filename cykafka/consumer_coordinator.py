"""ConsumerCoordinator (Java's): the consumer's group work on the caller's thread: commits, committed offsets, auto
commit, and the group's news (revoked, lost, assigned) handled in Java's order with the rebalance listener.

Owns: `committed` (OffsetFetch) and `commit_sync` (OffsetCommit), each a call the group member builds (at its
coordinator, with its generation: cykafka/consumer_group.py's `GroupDriver.call`) asked through the request layer's
Asker (retried by the error table until the deadline; a call still out at the deadline is kept, so the next poll
waits for it instead of sending another); `commit_async` (not retried, its callback run inside a later poll or
commit); auto commit every auto.commit.interval.ms, before a revoke and on close; `handle_group_events` (the
listener's calls, which run on the caller's thread, never on the network thread) and `leave_group` (close's
LeaveGroup). The membership itself (JoinGroup, SyncGroup, Heartbeat; with group.protocol=consumer
ConsumerGroupHeartbeat, core/consumer_member.py) is the member's, on the network thread.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cykafka.config import ConsumerConfig
from cykafka.consumer_group import GroupDriver
from cykafka.core.consumer_member import Membership
from cykafka.errors import IllegalStateError, InvalidArgumentError, KafkaError
from cykafka.ports import Clock, TopicPartition
from cykafka.ports.values import ConsumerGroupMetadata, OffsetAndMetadata, checked_offsets
from cykafka.protocol import Request
from cykafka.requests.ask import Asker
from cykafka.requests.calls import Call
from cykafka.requests.offsets import offset_fetch_request, read_offset_commit, read_offset_fetch
from cykafka.serialization import validate_topic
from cykafka.subscription_state import SubscriptionState

log = logging.getLogger("cykafka.group")
CommitCallback = Callable[[KafkaError | None, dict[TopicPartition, OffsetAndMetadata]], None]


class ConsumerRebalanceListener:
    """Java's ConsumerRebalanceListener: subclass it (or pass any object with some of these methods) to
    `Consumer.subscribe`. Each runs on the thread that calls poll(), inside poll() (also unsubscribe() and close()),
    with the partitions as a set of TopicPartition; the consumer may be used from them (commit, seek, position)."""

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        """Before a rebalance takes these partitions away (all of them with an eager assignor, only those moving
        with cooperative-sticky) and on unsubscribe/close; the group still holds the generation, so a commit here
        counts. With enable.auto.commit the positions were committed just before."""

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        """After a rebalance, with the partitions newly assigned (maybe none); their positions are resolved later,
        from the committed offsets (else auto.offset.reset), unless seek() sets them here."""

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        """The partitions are already someone else's (the session expired, the member was fenced): committing them
        fails. Java's default, kept here: calls on_partitions_revoked."""
        self.on_partitions_revoked(partitions)


LISTENER_CALLS = {"revoked": "on_partitions_revoked", "assigned": "on_partitions_assigned",
                  "lost": "on_partitions_lost"}


@dataclass(slots=True, eq=False)
class _AsyncCommit:
    offsets: dict[TopicPartition, OffsetAndMetadata]
    callback: CommitCallback | None
    call: Call | None = None


class ConsumerCoordinator:
    """See the module docstring. `set_assignment(partitions)` is the consumer's; `backoff(deadline_ms)` waits a
    retry.backoff.ms (running the loop without a network thread), raising once the deadline passed."""

    def __init__(self, config: ConsumerConfig, subscriptions: SubscriptionState, driver: GroupDriver | None,
                 asker: Asker, clock: Clock, set_assignment: Callable[[Iterable[TopicPartition]], None],
                 backoff: Callable[[int], None], wakeup: Callable[[], None]) -> None:
        self.config = config
        self.subscriptions = subscriptions
        self.driver = driver
        self.asker = asker
        self.clock = clock
        self.set_assignment = set_assignment
        self.backoff = backoff
        self.wakeup = wakeup
        self.async_commits: list[_AsyncCommit] = []
        self._kept: dict[Hashable, Call] = {}
        self._next_auto_commit_ms = clock.monotonic_ms() + config.auto_commit_interval_ms

    def group(self, call: str) -> str:
        if self.config.group_id is None:
            raise InvalidArgumentError(f"{call} needs a group.id in the consumer's config (the offsets are a "
                                       f"group's)")
        return self.config.group_id

    def _ask(self, key: tuple[str, tuple[Any, ...]], build: Callable[[Membership], Request], deadline_ms: int,
             check: Callable[[Mapping[str, Any]], KafkaError | None]) -> dict[str, Any]:
        driver = self.driver
        assert driver is not None
        return self.asker.ask(None, driver.route, deadline_ms, check=check, kept=self._kept, key=key,
                              make=lambda call_deadline_ms: driver.call(build, call_deadline_ms)).body

    def subscribe(self, topics: Iterable[str] | re.Pattern[str], listener: object) -> bool:
        """Consumer.subscribe's checks and the member's new subscription; False for an empty list (unsubscribe)."""
        self.group("subscribe")
        if isinstance(topics, re.Pattern):
            names: list[str] = []
        elif isinstance(topics, str | bytes) or not isinstance(topics, Iterable):
            raise InvalidArgumentError(f"subscribe: topics must be a list of topic names or a compiled re.Pattern, "
                                       f"got {topics!r}" + (f" (for one topic: [{topics!r}])"
                                                            if isinstance(topics, str) else ""))
        else:
            names = list(topics)
            for name in names:
                validate_topic(name)
        if listener is not None and not any(callable(getattr(listener, name, None))
                                            for name in LISTENER_CALLS.values()):
            raise InvalidArgumentError(f"subscribe: listener must have on_partitions_revoked, on_partitions_assigned "
                                       f"or on_partitions_lost (a ConsumerRebalanceListener), got "
                                       f"{type(listener).__name__}")
        sub = self.subscriptions
        if sub.assigned() and not sub.subscribed:
            raise IllegalStateError("subscribe: partitions were assigned with assign(); unassign() first (a "
                                    "consumer either joins a group with subscribe() or picks its partitions)")
        if not names and not isinstance(topics, re.Pattern):
            return False
        driver = self.driver
        assert driver is not None
        with driver.lock:
            if isinstance(topics, re.Pattern):
                driver.member.subscribe_pattern(topics)
            else:
                driver.member.subscribe(names)
        sub.listener, sub.subscribed = listener, True
        return True

    def subscription(self) -> set[str]:
        """Consumer.subscription: the member's topics (a pattern's: those it matches now); empty unless subscribed."""
        driver = self.driver
        if driver is None or not self.subscriptions.subscribed:
            return set()
        with driver.lock:
            return set(driver.member.subscription)

    def unsubscribe(self) -> None:
        """Consumer.unsubscribe in group mode: the member leaves, its partitions revoked here first (auto commit,
        listener); nothing to do when not subscribed."""
        driver = self.driver
        if self.subscriptions.subscribed and driver is not None:
            with driver.lock:
                driver.member.unsubscribe(self.clock.monotonic_ms())
            self.subscriptions.subscribed = False
            self.handle_group_events()
            self.wakeup()

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, generation and member id, for Producer.send_offsets_to_transaction (KIP-447 fencing)."""
        group_id = self.group("group_metadata")
        driver = self.driver
        assert driver is not None
        with driver.lock:
            member = driver.member
            return ConsumerGroupMetadata(group_id, member.generation_id, member.member_id,
                                         self.config.group_instance_id)

    def poll_started(self) -> None:
        """A poll begins: max.poll.interval.ms starts again (group mode), finished commit_async run their callbacks,
        and the auto commit is sent when due."""
        driver = self.driver
        if driver is not None and self.subscriptions.subscribed:
            with driver.lock:
                driver.member.poll(self.clock.monotonic_ms())
        self.run_async_commits()
        self.maybe_auto_commit()

    # -- offsets ------------------------------------------------------------------------------------------------

    def committed(self, tps: list[TopicPartition], deadline_ms: int) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (OffsetFetch at its coordinator); None where none is committed."""
        group = self.group("committed")

        def check(answer: Mapping[str, Any]) -> KafkaError | None:
            try:
                found = read_offset_fetch(answer, group)
            except KafkaError as e:
                return e
            return next((e for e in found.values() if isinstance(e, KafkaError)), None)

        answer = self._ask(("committed", tuple(sorted(set(tps)))),
                           _offset_fetch_builder(group, tps), deadline_ms, check)
        found = read_offset_fetch(answer, group)
        return {tp: value if isinstance(value, OffsetAndMetadata) and value.offset >= 0 else None
                for tp in tps for value in [found.get(tp)]}

    def commit_sync(self, positions: dict[TopicPartition, OffsetAndMetadata], deadline_ms: int) -> None:
        group = self.group("commit")
        self._ask(("commit", tuple(sorted(positions.items()))), _commit_builder(positions), deadline_ms,
                  lambda answer: next((e for e in read_offset_commit(answer, group).values() if e is not None), None))

    def offsets_to_commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None,
                          call: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offsets a commit call names, checked; None: every known position."""
        if offsets is None:
            return self.subscriptions.positions()
        return checked_offsets(offsets, call)

    def commit_async(self, positions: dict[TopicPartition, OffsetAndMetadata],
                     callback: CommitCallback | None) -> None:
        self.async_commits.append(_AsyncCommit(positions, callback))
        self.run_async_commits()

    def run_async_commits(self) -> None:
        """Steps every pending commit_async; finished ones run their callbacks here, on the caller's thread."""
        driver = self.driver
        for job in list(self.async_commits):
            call = job.call
            if call is None:
                assert driver is not None
                job.call = driver.submit(_commit_builder(job.offsets),
                                         self.clock.monotonic_ms() + self.config.default_api_timeout_ms)
                continue
            if not call.done.is_set():
                continue
            error = call.error
            if error is None and call.response is not None:
                error = next((e for e in read_offset_commit(call.response, self.group("commit")).values()
                              if e is not None), None)
            self.async_commits.remove(job)
            if job.callback is not None:
                try:
                    job.callback(error, job.offsets)
                except BaseException:  # a user's callback never ends the caller's poll
                    log.exception("commit_async callback raised; ignored")

    def maybe_auto_commit(self) -> None:
        if not self.config.enable_auto_commit:
            return
        now_ms = self.clock.monotonic_ms()
        if now_ms >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms
            positions = self.subscriptions.positions()
            if positions:
                self.commit_async(positions, log_auto_commit)

    # -- the group's news ---------------------------------------------------------------------------------------

    def handle_group_events(self, deadline_ms: int | None = None) -> None:
        """The group's news on the caller's thread, in Java's order: revoked (auto commit first, then the listener,
        then the partitions go), lost, assigned (partitions added, then the listener); the member sends no
        JoinGroup or LeaveGroup before this returns. The auto commit waits until deadline_ms (default:
        default.api.timeout.ms from now). A failure of the group protocol, or a listener's, is raised after every
        event was handled."""
        driver = self.driver
        if driver is None:
            return
        with driver.lock:
            events = driver.member.take_events(hold=True)
            error, driver.error = driver.error, None
        try:
            for kind, tps in events:
                partitions = set(map(TopicPartition._make, tps))
                owned = self.subscriptions.assigned()
                if kind == "revoked" and self.config.enable_auto_commit and owned:
                    try:
                        self.commit_sync(self.subscriptions.positions(), deadline_ms or (
                            self.clock.monotonic_ms() + self.config.default_api_timeout_ms))
                    except KafkaError as e:
                        log.warning("auto commit before partitions were revoked failed: %s", e)
                if kind == "assigned":
                    self.set_assignment(owned | partitions)
                error = self._call_listener(kind, partitions) or error
                if kind != "assigned":
                    self.set_assignment(owned - partitions)
        finally:
            if events:
                with driver.lock:
                    driver.member.events_handled()
                self.wakeup()
        if error is not None:
            raise error

    def _call_listener(self, kind: str, partitions: set[TopicPartition]) -> KafkaError | None:
        """Runs the listener's method for kind; what it raises comes back as a KafkaError for poll to raise."""
        name = LISTENER_CALLS[kind]
        listener = self.subscriptions.listener
        method = getattr(listener, name, None)
        if method is None and kind == "lost":
            method = getattr(listener, LISTENER_CALLS["revoked"], None)
        if method is None:
            return None
        try:
            method(partitions)
        except Exception as e:  # raised by poll once the rebalance is handled (Java's KafkaException)
            log.exception("the rebalance listener's %s raised", name)
            failure = KafkaError(f"the rebalance listener's {name} raised {e!r}")
            failure.__cause__ = e
            return failure
        return None

    def close(self, deadline_ms: int) -> None:
        """Consumer.close's goodbyes until deadline_ms: LeaveGroup (revoking first) in group mode, else the last auto
        commit; then the pending commit_async are waited for."""
        if self.subscriptions.subscribed:
            self.leave_group(deadline_ms)
        elif self.config.enable_auto_commit:
            try:
                self.group("commit")
                positions = self.offsets_to_commit(None, "commit")
                self.run_async_commits()
                if positions:
                    self.commit_sync(positions, deadline_ms)
            except KafkaError as e:
                log.warning("the consumer's last auto commit failed on close: %s", e)
        while self.async_commits and self.clock.monotonic_ms() < deadline_ms:
            self.run_async_commits()
            if self.async_commits:
                self.backoff(deadline_ms)

    def leave_group(self, deadline_ms: int) -> None:
        """close()'s part in group mode: revoked partitions handled here (auto commit, listener), then the member's
        LeaveGroup, waited for until it is answered or deadline_ms."""
        driver = self.driver
        assert driver is not None
        with driver.lock:
            driver.member.close(self.clock.monotonic_ms())
        self.wakeup()
        try:
            self.handle_group_events(deadline_ms)
        except KafkaError as e:
            log.warning("leaving group %r: %s", self.config.group_id, e)
        while self.clock.monotonic_ms() < deadline_ms:
            with driver.lock:
                if driver.member.left:
                    return
            self.backoff(deadline_ms)


def _offset_fetch_builder(group: str, tps: list[TopicPartition]) -> Callable[[Membership], Request]:
    def build(member: Membership) -> Request:
        member_id, member_epoch = member.offset_fetch_member()
        return offset_fetch_request(group, tps, require_stable=True, member_id=member_id, member_epoch=member_epoch)

    return build


def _commit_builder(offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> Callable[[Membership], Request]:
    return lambda member: member.commit_request(
        {tp: (om.offset, om.metadata, om.leader_epoch) for tp, om in offsets.items()})


def log_auto_commit(error: KafkaError | None, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
    """As Java's: a retriable failure (the coordinator moving or gone, a lost connection) is logged at DEBUG, the next
    auto commit carries the offsets; any other at WARNING."""
    if error is not None:
        log.log(logging.DEBUG if error.retriable else logging.WARNING, "auto commit of %d offset(s) failed: %s",
                len(offsets), error)
