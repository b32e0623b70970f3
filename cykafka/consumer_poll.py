"""PollLoop: one poll of the Consumer, on the caller's thread (Java's KafkaConsumer.poll: updateAssignmentMetadata-
IfNeeded, then pollForFetches, until records came or the poll's time is up).

Owns the order of a poll's work: max.poll.interval.ms starts again, commit_async callbacks and the auto commit run,
then in a loop: the group's news (the rebalance listener), missing positions resolved (a request still out, or a
leader that moved, is left to the next turn or poll) and validated, the FetchCollector's records taken into the
sink; the wait for fetched data in between (or one turn of the network loop when no network thread runs it); the
poll ends early when close() runs on another thread. Also the poll's metrics and enable.partition.eof's reports.
"""

from __future__ import annotations

from collections.abc import Callable

from cykafka.consumer_coordinator import ConsumerCoordinator
from cykafka.consumer_lock import ConsumerLock
from cykafka.core import network_yield
from cykafka.errors import IllegalStateError, KafkaError, KafkaTimeoutError
from cykafka.fetch_collector import FetchCollector, RecordSink
from cykafka.metrics import ConsumerMetrics
from cykafka.offset_fetcher import OffsetFetcher
from cykafka.partition_eof import EndOfPartition
from cykafka.ports import Clock
from cykafka.subscription_state import SubscriptionState

_WAIT_SLICE_S = 0.1  # a waiting poll looks at positions to resolve, and at a close from another thread, this often


class PollLoop:
    def __init__(self, clock: Clock, subscriptions: SubscriptionState, collector: FetchCollector,
                 coordinator: ConsumerCoordinator, offsets: OffsetFetcher, lock: ConsumerLock,
                 metrics: ConsumerMetrics, end_of_partition: EndOfPartition | None,
                 turn: Callable[[], None] | None) -> None:
        """turn: one turn of the network loop, when no network thread runs it (tests)."""
        self.clock = clock
        self.subscriptions = subscriptions
        self.collector = collector
        self.coordinator = coordinator
        self.offsets = offsets
        self.lock = lock
        self.metrics = metrics
        self.end_of_partition = end_of_partition
        self.turn = turn

    def poll(self, sink: RecordSink, deadline_ms: int, limit: int) -> int:
        """At most `limit` records into sink, waiting for some until deadline_ms; how many it took."""
        network_yield()  # a network thread waiting for the GIL gets it now (core/netio.pyx)
        self.metrics.record_poll()
        taken = self._collect(sink, deadline_ms, limit)
        if taken:
            self.metrics.record_consumed(taken)
        if self.end_of_partition is not None:  # enable.partition.eof
            with self.subscriptions.lock:
                due = self.end_of_partition.due(self.subscriptions.states)
            self.end_of_partition.report(due)
        return taken

    def _collect(self, sink: RecordSink, deadline_ms: int, limit: int) -> int:
        sub, coordinator, offsets = self.subscriptions, self.coordinator, self.offsets
        coordinator.poll_started()
        try:
            while True:
                coordinator.handle_group_events()
                try:
                    offsets.resolve_positions(deadline_ms)
                except KafkaError as e:  # the requests stay out, or a leader moved: a later poll tries again
                    if not (isinstance(e, KafkaTimeoutError) or e.retriable):
                        raise
                offsets.validate_positions()
                taken = self.collector.collect(limit, sink)
                remaining_ms = deadline_ms - self.clock.monotonic_ms()
                if taken or remaining_ms <= 0 or self.lock.interrupted():
                    return taken
                if self.turn is not None:
                    self.turn()
                    continue
                with sub.lock:
                    if not self.collector.has_consumable():
                        sub.data_ready.wait(min(remaining_ms / 1000, _WAIT_SLICE_S))
        except IllegalStateError:
            if not self.lock.interrupted():
                raise  # close() on another thread: the poll returns what it took
            return 0
