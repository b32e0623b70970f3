"""The public Consumer (Java's KafkaConsumer) and its composition root: config -> transport, metadata, the request
layer (cykafka/requests: the coordinator cache, the call queue, the network loop), Fetcher, the group's member, and
the network thread that drives them (cykafka/consumer_network.py).

The network thread owns the transport, keeps one Fetch in flight per broker (cykafka/fetcher.py) and runs the group
protocol (cykafka/consumer_group.py: heartbeats go on while the caller works); the caller's thread decodes what came
back, lazily, in poll(). Everything else (positions to resolve, offsets, commits) runs on the caller's thread as
requests handed to the network thread, waited for up to the call's deadline; a request still out when poll's timeout
ends is picked up by the next poll, so poll(0) in a loop makes progress. The rebalance listener and commit callbacks
run on the caller's thread inside poll() (and commit(), unsubscribe(), close()), never on the network thread.

Not thread-safe (as Java's): one thread uses a Consumer at a time; close() may come from another. Decisions where Java
or the issue was silent, and Tansu's quirks: docs/consumer.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import logging
import math
import os
import re
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, overload

from cykafka.adapters.clock import SystemClock
from cykafka.adapters.compression import decompress
from cykafka.arrow_schema import kafka_source_schema
from cykafka.config import ConsumerConfig
from cykafka.consumer_group import GroupDriver
from cykafka.consumer_network import NetworkThread, stop_unclosed
from cykafka.core import ArrowBatchBuilder, ConsumerRecord, PartitionFetch
from cykafka.core.group import GroupMember, GroupSettings
from cykafka.errors import (
    ConcurrentAccessError,
    ConfigError,
    IllegalStateError,
    InvalidArgumentError,
    KafkaError,
    KafkaTimeoutError,
    LogTruncationError,
    NoOffsetForPartitionError,
    UnsupportedVersionError,
)
from cykafka.fetcher import Buffered, Fetcher, PartitionState, Subscription, divergence, fetch_request
from cykafka.metrics import ConsumerMetrics, MetricsSnapshot, StatsReporter
from cykafka.ports import (
    Clock,
    ClusterSnapshot,
    PartitionInfo,
    Ports,
    TopicPartition,
    by_topic,
    checked_partitions,
)
from cykafka.ports.values import ConsumerGroupMetadata, ListOffsetsResultInfo, OffsetAndMetadata, checked_offset
from cykafka.protocol import Request
from cykafka.protocol import apis as api
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, kinds_of
from cykafka.requests.calls import Call, CallQueue, NetworkLoop
from cykafka.requests.coordinators import Coordinators
from cykafka.requests.offsets import (
    list_offsets_request,
    offset_fetch_request,
    read_list_offsets,
    read_offset_commit,
    read_offset_fetch,
)
from cykafka.requests.routes import ANY_BROKER, Broker, Router
from cykafka.serialization import validate_topic

if TYPE_CHECKING:
    import pyarrow

T = TypeVar("T")
_Method = TypeVar("_Method", bound=Callable[..., Any])
log = logging.getLogger("cykafka")
_client_ids = itertools.count(1)
_EARLIEST, _LATEST = -2, -1  # ListOffsets timestamps
_WAIT_SLICE_S = 0.1  # a waiting call looks at positions to resolve, and at a close from another thread, this often
_FOREVER_MS = 2**62  # an infinite (or absurdly long) timeout: no deadline before the year 146 million
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


_LISTENER_CALLS = {"revoked": "on_partitions_revoked", "assigned": "on_partitions_assigned",
                   "lost": "on_partitions_lost"}


@dataclass(slots=True, eq=False)
class _AsyncCommit:
    offsets: dict[TopicPartition, OffsetAndMetadata]
    callback: CommitCallback | None
    call: Call | None = None


def _one_thread(method: _Method) -> _Method:
    """A public Consumer call (Java's acquireAndEnsureOpen): raises IllegalStateError when the consumer is closed or
    was made by another process (before a fork()), ConcurrentAccessError when another thread is inside a call."""
    @functools.wraps(method)
    def call(self: Consumer, *args: Any, **kwargs: Any) -> Any:
        self._acquire(method.__name__)
        try:
            return method(self, *args, **kwargs)
        finally:
            self._release()

    return call  # type: ignore[return-value]


class Consumer:
    """A Kafka consumer with Java's semantics: `Consumer({"bootstrap.servers": ..., "group.id": ...})`, then
    `subscribe(["t"])` (the group shares the partitions) or `assign([TopicPartition("t", 0)])`, and `poll(timeout)`;
    config keys: docs/config.md."""

    @overload
    def __init__(self, config: Mapping[str, object] | None = None, /, *, ports: Ports, **kwargs: object) -> None: ...

    @overload
    def __init__(self, config: Mapping[str, object] | None = None, /, **kwargs: object) -> None: ...

    def __init__(self, config: Mapping[str, object] | None = None, /, *, ports: object = None,
                 **kwargs: object) -> None:
        """config: Kafka consumer config keys, as a dict and/or keyword arguments with underscores; positional-only,
        so `Consumer(**config)` type-checks. ports: tests only, the adapters to use (cykafka.ports.Ports;
        start_sender=False: no network thread, the caller's waits run `consumer.network.run_once()`)."""
        if ports is None:
            ports = Ports()
        if not isinstance(ports, Ports):
            raise ConfigError(f"ports must be a cykafka.ports.Ports (the adapters a test swaps in), got "
                              f"{type(ports).__name__}")
        cfg = ConsumerConfig.parse(config, **kwargs)
        if not cfg.connection.client_id:
            cfg = dataclasses.replace(cfg, connection=dataclasses.replace(
                cfg.connection, client_id=f"cykafka-consumer-{next(_client_ids)}"))
        self.config = cfg
        conn = cfg.connection
        self._clock: Clock = ports.clock or SystemClock()
        self._closed = False
        self._closing_thread: int | None = None  # close() runs on it: other threads' calls end, new ones are refused
        self._owner_lock = threading.Condition(threading.Lock())
        self._owner: int | None = None  # the thread inside a call (Java's light lock), with its call and depth
        self._owner_call = ""
        self._owner_depth = 0
        self._lent: int | None = None  # a thread the one inside a call lets call too while it waits for it
        self._pid = os.getpid()
        transport = ports.transport
        self._owns_transport = transport is None
        if transport is None:
            from cykafka.adapters.socket_transport import SocketTransport

            transport = SocketTransport(conn, clock_ms=self._clock.monotonic_ms)
        metadata = ports.metadata
        if metadata is None:
            from cykafka.adapters.broker_metadata import BrokerMetadata

            metadata = BrokerMetadata(cfg.metadata, transport)
        self._transport, self._metadata = transport, metadata
        self._subscription = Subscription()
        coordinators = Coordinators(transport, cfg.retry_backoff_ms, dedicated_group_connections=True)
        self._calls = CallQueue(Router(transport, metadata, coordinators, cfg.retry_backoff_ms))
        self._fetcher = Fetcher(cfg, self._subscription, transport, metadata, decompress)
        self.network = NetworkLoop(transport, metadata, self._clock, [self._calls, coordinators, self._fetcher],
                                   conn.request_timeout_ms, coordinators)
        self._group_driver: GroupDriver | None = None
        if cfg.group_id is not None:
            member = GroupMember(GroupSettings(
                cfg.group_id, cfg.session_timeout_ms, cfg.heartbeat_interval_ms, cfg.max_poll_interval_ms,
                cfg.group_instance_id, cfg.partition_assignment_strategy, cfg.retry_backoff_ms))
            self._group_driver = GroupDriver(member, self._calls, coordinators, metadata, self._clock,
                                             conn.request_timeout_ms, _caller_waker(self._subscription))
            self.network.sources.insert(1, self._group_driver)
        self._subscribed = False
        self._listener: object = None
        self._outstanding: dict[tuple[int, int | None, str], Call] = {}
        self._outstanding_group: dict[tuple[str, tuple[TopicPartition, ...]], Call] = {}
        self._async_commits: list[_AsyncCommit] = []
        self._next_auto_commit_ms = self._clock.monotonic_ms() + cfg.auto_commit_interval_ms
        self._thread: NetworkThread | None = None
        if ports.start_sender:
            self._thread = NetworkThread(self.network, name=f"cykafka-consumer-{conn.client_id}")
            self._thread.start()
        # the thread holds no reference to this Consumer: dropped unclosed, it is finalized and its thread stopped
        self._finalizer = weakref.finalize(self, stop_unclosed, conn.client_id, self._thread, self.network,
                                           transport if self._owns_transport else None)
        _live_consumers.add(self)
        self._metrics = ConsumerMetrics.wired(cfg.read_committed, self.network, self._fetcher, self._group_driver)
        self._stats = StatsReporter.start_if_configured(cfg.statistics_interval_ms, cfg.stats_cb, self,
                                                        f"cykafka-stats-{conn.client_id}")

    # -- assignment ---------------------------------------------------------------------------------------------

    @_one_thread
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Reads exactly these partitions (replacing the assignment), outside any group rebalance. A partition kept
        keeps its position; a new one starts at its committed offset (with a group.id), else where
        auto.offset.reset says. Not while subscribed (IllegalStateError, as Java)."""
        tps = checked_partitions(partitions, "assign")
        for tp in tps:
            validate_topic(tp.topic)  # as subscribe()'s
        if self._subscribed:
            raise IllegalStateError("assign: the consumer is subscribed to topics; unsubscribe() first (a consumer "
                                    "either joins a group with subscribe() or picks its partitions with assign())")
        self._set_assignment(tps)

    def _set_assignment(self, tps: Iterable[TopicPartition]) -> None:
        now_ms = self._clock.monotonic_ms()
        sub = self._subscription
        with sub.lock:
            kept = {tp: sub.states[tp] for tp in tps if tp in sub.states}
            sub.states = {tp: kept.get(tp) or PartitionState(self.config.max_partition_fetch_bytes) for tp in tps}
            for item in [b for b in sub.buffer if b.tp not in sub.states]:
                sub.release(item)
        for topic in {tp.topic for tp in tps}:
            self._metadata.add_topic(topic, now_ms)
        self._transport.wakeup()

    @_one_thread
    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer reads: assign()'s, or what the group gave it (empty until it joined)."""
        with self._subscription.lock:
            return set(self._subscription.states)

    @_one_thread
    def subscribe(self, topics: Iterable[str] | re.Pattern[str],
                  listener: ConsumerRebalanceListener | object | None = None) -> None:
        """Joins the group (group.id) reading these topics, or every topic whose whole name matches a compiled
        pattern (`re.compile("orders-.*")`), sharing their partitions with the group's other members; the
        partitions arrive in a later poll(). Replaces an earlier subscription; an empty list unsubscribes.
        listener: a ConsumerRebalanceListener (or any object with some of its methods), called inside poll()."""
        self._group("subscribe")
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
                                            for name in _LISTENER_CALLS.values()):
            raise InvalidArgumentError(f"subscribe: listener must have on_partitions_revoked, on_partitions_assigned "
                                       f"or on_partitions_lost (a ConsumerRebalanceListener), got "
                                       f"{type(listener).__name__}")
        with self._subscription.lock:
            assigned = bool(self._subscription.states)
        if assigned and not self._subscribed:
            raise IllegalStateError("subscribe: partitions were assigned with assign(); unassign() first (a "
                                    "consumer either joins a group with subscribe() or picks its partitions)")
        if not names and not isinstance(topics, re.Pattern):
            self.unsubscribe()
            return
        driver = self._group_driver
        assert driver is not None
        with driver.lock:
            if isinstance(topics, re.Pattern):
                driver.member.subscribe_pattern(topics)
            else:
                driver.member.subscribe(names)
        self._listener, self._subscribed = listener, True
        self._transport.wakeup()

    @_one_thread
    def subscription(self) -> set[str]:
        """The subscribed topics (for a pattern: those it matches now); empty when not subscribed."""
        driver = self._group_driver
        if driver is None or not self._subscribed:
            return set()
        with driver.lock:
            return set(driver.member.subscription)

    @_one_thread
    def unsubscribe(self) -> None:
        """Reads nothing any more: leaves the group (its partitions are revoked first: listener, auto commit) or
        drops assign()'s partitions; fetched data is dropped."""
        driver = self._group_driver
        if self._subscribed and driver is not None:
            with driver.lock:
                driver.member.unsubscribe(self._clock.monotonic_ms())
            self._subscribed = False
            self._handle_group_events()
            self._transport.wakeup()
        self._set_assignment([])

    unassign = unsubscribe

    @_one_thread
    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, generation and member id, for Producer.send_offsets_to_transaction (KIP-447 fencing)."""
        group_id = self._group("group_metadata")
        driver = self._group_driver
        assert driver is not None
        with driver.lock:
            member = driver.member
            return ConsumerGroupMetadata(group_id, member.generation_id, member.member_id,
                                         self.config.group_instance_id)

    @_one_thread
    def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        """The topic's partitions (leader, replicas, ...) from the metadata, waiting for it up to timeout seconds;
        [] when the cluster answers that the topic does not exist (Java's: auto-creation off at the broker, or
        allow.auto.create.topics false here), at once instead of after the timeout."""
        validate_topic(topic)
        deadline_ms = self._deadline(timeout, "timeout")
        asked = None  # the snapshot when the metadata was asked for: an answer after it may say "no such topic"
        while True:
            snapshot = self._metadata.snapshot()
            parts = snapshot.partitions.get(topic)
            if parts:
                return list(parts)
            if (asked is not None and snapshot is not asked
                    and snapshot.topic_errors.get(topic) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                return []
            if asked is None:
                asked = snapshot
            self._metadata.add_topic(topic, self._clock.monotonic_ms())
            self._metadata.request_update()
            self._transport.wakeup()
            if self._clock.monotonic_ms() >= deadline_ms:
                raise KafkaTimeoutError(f"partitions_for({topic!r}): no metadata for the topic before the timeout")
            self._backoff(deadline_ms)

    # -- positions ----------------------------------------------------------------------------------------------

    def _state(self, tp: object, call: str) -> PartitionState:
        (checked,) = checked_partitions([tp], call)
        state = self._subscription.states.get(checked)
        if state is None:
            raise InvalidArgumentError(f"{call}: {checked} is not assigned to this consumer (assign() it first)")
        return state

    @_one_thread
    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """The next poll returns partition's records from offset on. An OffsetAndMetadata with a leader_epoch (a
        committed offset, LogTruncationError's divergent offset) is checked with the partition's leader first, as
        Java's seek does (KIP-320: docs/consumer.md)."""
        checked = checked_offset(offset, "seek: offset")
        value, epoch = checked.offset, checked.leader_epoch
        with self._subscription.lock:
            self._state(partition, "seek").seek(value, offset_epoch=epoch, validate=epoch >= 0)
        self._transport.wakeup()

    @_one_thread
    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Moves to the first offset of each partition (default: every assigned one), resolved on the next poll."""
        self._seek_to(partitions, "earliest", "seek_to_beginning")

    @_one_thread
    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Moves past the last record of each partition (default: every assigned one): the high watermark, the last
        stable offset with read_committed; resolved on the next poll."""
        self._seek_to(partitions, "latest", "seek_to_end")

    def _seek_to(self, partitions: Iterable[TopicPartition] | None, reset: str, call: str) -> None:
        with self._subscription.lock:
            tps = list(self._subscription.states) if partitions is None else checked_partitions(partitions, call)
            for tp in tps:
                self._state(tp, call).seek(None, reset)

    @_one_thread
    def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record poll returns for partition, resolved now if unknown (committed offset,
        else auto.offset.reset) within timeout seconds (default default.api.timeout.ms)."""
        with self._subscription.lock:
            state = self._state(partition, "position")
        deadline_ms = self._deadline(timeout, "timeout")
        while True:
            self._resolve_positions(deadline_ms)
            self._validate_positions()
            with self._subscription.lock:
                position = None if state.awaiting_validation else state.position
            if position is not None:
                return position
            if self._clock.monotonic_ms() >= deadline_ms:
                raise KafkaTimeoutError(f"position({partition}): not known before the timeout")
            if state.position is not None:  # its validation is out: wait a little for the answer
                self._backoff(deadline_ms)

    @_one_thread
    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stops fetching and returning these partitions (positions are kept) until resume()."""
        self._set_paused(partitions, True, "pause")

    @_one_thread
    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._set_paused(partitions, False, "resume")

    @_one_thread
    def paused(self) -> set[TopicPartition]:
        with self._subscription.lock:
            return {tp for tp, state in self._subscription.states.items() if state.paused}

    def _set_paused(self, partitions: Iterable[TopicPartition], paused: bool, call: str) -> None:
        tps = checked_partitions(partitions, call)
        with self._subscription.lock:
            for tp in tps:
                self._state(tp, call).paused = paused
        self._transport.wakeup()

    # -- offsets ------------------------------------------------------------------------------------------------

    @_one_thread
    def beginning_offsets(self, partitions: Iterable[TopicPartition],
                          timeout: float | None = None) -> dict[TopicPartition, int]:
        """The first offset of each partition (ListOffsets, earliest)."""
        tps = checked_partitions(partitions, "beginning_offsets")
        found = self._list_offsets(dict.fromkeys(tps, _EARLIEST), self._deadline(timeout, "timeout"))
        return {tp: info.offset for tp, info in found.items()}

    @_one_thread
    def end_offsets(self, partitions: Iterable[TopicPartition],
                    timeout: float | None = None) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition: the high watermark (the last stable offset with
        read_committed), from a Fetch answer (docs/consumer.md: why not ListOffsets latest)."""
        tps = checked_partitions(partitions, "end_offsets")
        return self._end_offsets(tps, self._deadline(timeout, "timeout"))

    @_one_thread
    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None,
                          ) -> dict[TopicPartition, ListOffsetsResultInfo | None]:
        """For each partition, the first offset whose record timestamp is >= the given one (ms), with that record's
        timestamp and leader epoch; None when no record is that recent."""
        tps = checked_partitions(timestamps, "offsets_for_times")
        for tp in tps:
            ts = timestamps[tp]
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise InvalidArgumentError(f"offsets_for_times: the timestamp of {tp} must be an int >= 0 (ms), got "
                                           f"{ts!r}")
        found = self._list_offsets({tp: timestamps[tp] for tp in tps}, self._deadline(timeout, "timeout"))
        return {tp: info if info.offset >= 0 else None for tp, info in found.items()}

    @_one_thread
    def committed(self, partitions: Iterable[TopicPartition],
                  timeout: float | None = None) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (OffsetFetch at its coordinator); None where none is committed."""
        group = self._group("committed")
        tps = checked_partitions(partitions, "committed")
        deadline_ms = self._deadline(timeout, "timeout")
        key = ("committed", tuple(sorted(set(tps))))
        while True:
            answer = self._ask_group(key, lambda member: offset_fetch_request(group, tps, require_stable=True),
                                     deadline_ms)
            try:
                found = read_offset_fetch(answer, group)
            except KafkaError as e:
                self._retry_or_raise(e, deadline_ms)
                continue
            failed = [e for e in found.values() if isinstance(e, KafkaError)]
            if not failed:
                return {tp: value if isinstance(value, OffsetAndMetadata) and value.offset >= 0 else None
                        for tp in tps for value in [found.get(tp)]}
            self._retry_or_raise(failed[0], deadline_ms)

    @_one_thread
    def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
               timeout: float | None = None) -> None:
        """Commits offsets for the group (default: every position; an offset is the next record to read), waiting
        for the answer; pending commit_async callbacks run first."""
        self._group("commit")
        positions = self._offsets_to_commit(offsets, "commit")
        deadline_ms = self._deadline(timeout, "timeout")
        self._run_async_commits()
        if positions:
            started_ms = self._clock.monotonic_ms()
            self._commit_sync(positions, deadline_ms)
            self._metrics.record_commit(self._clock.monotonic_ms() - started_ms)

    def _commit_sync(self, positions: dict[TopicPartition, OffsetAndMetadata], deadline_ms: int) -> None:
        key = ("commit", tuple(sorted(positions.items())))
        while True:
            answer = self._ask_group(key, _commit_builder(positions), deadline_ms)
            errors = [e for e in read_offset_commit(answer, self._group("commit")).values() if e is not None]
            if not errors:
                return
            self._retry_or_raise(errors[0], deadline_ms)

    @_one_thread
    def commit_async(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Commits without waiting; callback(error, offsets) runs on this thread inside a later poll() or commit()
        (a raising callback is logged). Not retried (Java's commitAsync)."""
        self._group("commit_async")
        if callback is not None and not callable(callback):
            raise InvalidArgumentError(f"commit_async: callback must be callable, got {type(callback).__name__}")
        positions = self._offsets_to_commit(offsets, "commit_async")
        if positions:
            self._async_commits.append(_AsyncCommit(positions, callback))
            self._run_async_commits()

    def _offsets_to_commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None,
                           call: str) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            with self._subscription.lock:
                return {tp: OffsetAndMetadata(s.position, leader_epoch=s.offset_epoch)
                        for tp, s in self._subscription.states.items()
                        if s.position is not None}
        if not isinstance(offsets, Mapping):
            raise InvalidArgumentError(f"{call}: offsets must be a mapping of TopicPartition to an offset or "
                                       f"OffsetAndMetadata, got {type(offsets).__name__}")
        return {tp: checked_offset(offset, f"{call}: the offset of {tp}")
                for tp, offset in zip(checked_partitions(offsets, call), offsets.values(), strict=True)}

    def _run_async_commits(self) -> None:
        """Steps every pending commit_async; finished ones run their callbacks here, on the caller's thread."""
        driver = self._group_driver
        for job in list(self._async_commits):
            call = job.call
            if call is None:
                assert driver is not None
                job.call = driver.submit(_commit_builder(job.offsets),
                                         self._clock.monotonic_ms() + self.config.default_api_timeout_ms)
                continue
            if not call.done.is_set():
                continue
            error = call.error
            if error is None and call.response is not None:
                error = next((e for e in read_offset_commit(call.response, self._group("commit")).values()
                              if e is not None), None)
            self._async_commits.remove(job)
            if job.callback is not None:
                try:
                    job.callback(error, job.offsets)
                except BaseException:  # a user's callback never ends the caller's poll
                    log.exception("commit_async callback raised; ignored")

    def _maybe_auto_commit(self) -> None:
        if not self.config.enable_auto_commit:
            return
        now_ms = self._clock.monotonic_ms()
        if now_ms >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms
            self.commit_async(callback=_log_auto_commit)

    # -- poll ---------------------------------------------------------------------------------------------------

    @_one_thread
    def poll(self, timeout: float) -> list[ConsumerRecord]:
        """The next records of the assigned partitions, at most max.poll.records; waits up to timeout seconds for
        some, returns [] when none came. Raises a partition's error (e.g. NoOffsetForPartitionError)."""
        records: list[ConsumerRecord] = []

        def take(fetch: PartitionFetch, limit: int) -> int:
            got = fetch.records(limit)
            records.extend(got)
            return len(got)

        self._poll(timeout, self.config.max_poll_records, take)
        return records

    @_one_thread
    def poll_batch(self, timeout: float, max_records: int | None = None) -> pyarrow.RecordBatch:
        """As poll, as one pyarrow.RecordBatch in Spark's Kafka source schema (key, value, topic, partition, offset,
        timestamp, timestampType, headers) built in C; empty (with the schema) when no record came in time."""
        if max_records is not None and (isinstance(max_records, bool) or not isinstance(max_records, int)
                                        or max_records < 1):
            raise InvalidArgumentError(f"poll_batch: max_records must be an int >= 1 or None (max.poll.records), got "
                                       f"{max_records!r}")
        builder = ArrowBatchBuilder(kafka_source_schema())
        self._poll(timeout, max_records or self.config.max_poll_records,
                   lambda fetch, limit: fetch.arrow_into(builder, limit))
        return builder.finish()

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Every record, as poll returns them, until close() (from the loop's body, or from another thread)."""
        while not self._interrupted():
            try:
                records = self.poll(1.0)
            except IllegalStateError:
                if self._interrupted():
                    return  # closed by another thread meanwhile
                raise
            yield from records

    def _poll(self, timeout: float, limit: int, take: Callable[[PartitionFetch, int], int]) -> None:
        deadline_ms = self._deadline(timeout, "timeout", default=None)
        self._metrics.record_poll()
        driver = self._group_driver
        if driver is not None and self._subscribed:
            with driver.lock:
                driver.member.poll(self._clock.monotonic_ms())  # max.poll.interval.ms starts again
        self._run_async_commits()
        self._maybe_auto_commit()
        try:
            self._poll_until(deadline_ms, limit, take)
        except IllegalStateError:
            if not self._interrupted():
                raise  # close() on another thread: the poll returns what it took

    def _poll_until(self, deadline_ms: int, limit: int, take: Callable[[PartitionFetch, int], int]) -> None:
        sub = self._subscription
        while True:
            self._handle_group_events()
            try:
                self._resolve_positions(deadline_ms)
            except KafkaTimeoutError:
                pass  # the requests stay out: a later poll picks up their answers
            self._validate_positions()
            if taken := self._drain(limit, take):
                self._metrics.record_consumed(taken)
                return
            remaining_ms = deadline_ms - self._clock.monotonic_ms()
            if remaining_ms <= 0 or self._interrupted():
                return
            if self._thread is None:
                self.network.run_once()
                continue
            with sub.lock:
                if not self._consumable():
                    sub.data_ready.wait(min(remaining_ms / 1000, _WAIT_SLICE_S))

    def _handle_group_events(self, deadline_ms: int | None = None) -> None:
        """The group's news on the caller's thread, in Java's order: revoked (auto commit first, then the listener,
        then the partitions go), lost, assigned (partitions added, then the listener); the member sends no
        JoinGroup or LeaveGroup before this returns. The auto commit waits until deadline_ms (default:
        default.api.timeout.ms from now). A failure of the group protocol, or a listener's, is raised after every
        event was handled."""
        driver = self._group_driver
        if driver is None:
            return
        with driver.lock:
            events = driver.member.take_events(hold=True)
            error, driver.error = driver.error, None
        try:
            for kind, tps in events:
                partitions = set(map(TopicPartition._make, tps))
                with self._subscription.lock:
                    owned = set(self._subscription.states)
                if kind == "revoked" and self.config.enable_auto_commit and owned:
                    try:
                        self._commit_sync(self._offsets_to_commit(None, "commit"), deadline_ms or (
                            self._clock.monotonic_ms() + self.config.default_api_timeout_ms))
                    except KafkaError as e:
                        log.warning("auto commit before partitions were revoked failed: %s", e)
                if kind == "assigned":
                    self._set_assignment(owned | partitions)
                error = self._call_listener(kind, partitions) or error
                if kind != "assigned":
                    self._set_assignment(owned - partitions)
        finally:
            if events:
                with driver.lock:
                    driver.member.events_handled()
                self._transport.wakeup()
        if error is not None:
            raise error

    def _call_listener(self, kind: str, partitions: set[TopicPartition]) -> KafkaError | None:
        """Runs the listener's method for kind; what it raises comes back as a KafkaError for poll to raise."""
        name = _LISTENER_CALLS[kind]
        method = getattr(self._listener, name, None)
        if method is None and kind == "lost":
            method = getattr(self._listener, _LISTENER_CALLS["revoked"], None)
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

    def _consumable(self) -> Buffered | None:
        """With the lock held: the first buffered fetch poll may return (stale ones are dropped on the way)."""
        sub = self._subscription
        held: set[TopicPartition] = set()  # paused, or waiting for a transaction's marker: offsets go in order
        for item in list(sub.buffer):
            state = sub.states.get(item.tp)
            if state is None or state.epoch != item.epoch:
                sub.release(item)
            elif item.tp in held or item.waiting or state.paused:
                held.add(item.tp)
            else:
                return item
        return None

    def _drain(self, limit: int, take: Callable[[PartitionFetch, int], int]) -> int:
        """Takes up to limit records from the buffer; returns how many. A partition's error (or corrupt data) is
        raised by a call that took nothing yet: records already taken are returned first, never lost."""
        sub, taken = self._subscription, 0
        while taken < limit:
            with sub.lock:
                if not taken:
                    self._raise_partition_error()
                item = self._consumable()
                if item is None:
                    break
            try:
                got = take(item.fetch, limit - taken)  # decoded without the lock: only this thread touches it
            except KafkaError:
                if taken:
                    break  # the next poll meets it again, first
                raise
            taken += got
            with sub.lock:
                state = sub.states.get(item.tp)
                if state is None or state.epoch != item.epoch:
                    continue
                fetch = item.fetch
                if fetch.next_offset != state.position:  # moved: the epoch of the batch it was reached in (KIP-320)
                    state.position, state.offset_epoch = fetch.next_offset, fetch.last_epoch
                if fetch.blocked_on_open_transaction and self._look_ahead(item, state):
                    continue
                if fetch.blocked_on_open_transaction:  # the transaction is open: fetch it again later
                    if fetch.bytes_size >= state.fetch_size_bytes:  # a full answer: the transaction may not fit
                        state.fetch_size_bytes = min(2 * state.fetch_size_bytes, 2**31 - 1)
                    state.seek(fetch.next_offset, offset_epoch=state.offset_epoch)
                    state.not_before_ms = self._clock.monotonic_ms() + self.config.retry_backoff_ms
                    sub.release(item)
                elif fetch.done:
                    state.fetch_size_bytes = self.config.max_partition_fetch_bytes  # grown for a transaction: back
                    sub.release(item)
                elif got:
                    continue
                else:
                    break  # more data, none taken: the Arrow builder is full (2 GiB column), finish it first
            self._transport.wakeup()  # room in the buffer, or a partition to fetch again
        return taken

    def _look_ahead(self, item: Buffered, state: PartitionState) -> bool:
        """With the lock held, item blocked on a transaction whose marker is not in its data: decodes it again with
        the markers of the partition's answers fetched past it (the fetcher runs ahead), or leaves it waiting for
        more of them. False when no more can come (the transaction is open at the last stable offset, or the
        broker's buffer room is used up): then it is fetched again later."""
        sub = self._subscription
        later = [b for b in sub.buffer if b.tp == item.tp and b.epoch == item.epoch and b is not item]
        markers = [marker for b in later for marker in b.fetch.transaction_markers()]
        if len(markers) > item.markers_seen:
            item.fetch = self._fetcher.decoder(item.tp, item.records, item.fetch.next_offset,
                                               item.aborted_transactions, markers)
            item.markers_seen = len(markers)
            return True
        stable = state.last_stable_offset if state.last_stable_offset >= 0 else state.high_watermark
        room_bytes = self.config.fetch_max_bytes - sub.buffered_bytes[item.node_id]
        if state.fetch_offset is not None and state.fetch_offset < stable and room_bytes > 0:
            item.waiting = True  # the next answer of this partition clears it
            return True
        return False

    def _raise_partition_error(self) -> None:
        for state in self._subscription.states.values():
            if state.error is not None:
                error, state.error = state.error, None
                raise error

    # -- resolving positions ------------------------------------------------------------------------------------

    def _resolve_positions(self, deadline_ms: int) -> None:
        """Positions of assigned partitions that have none: the committed offset (with a group.id), else
        auto.offset.reset; seek_to_beginning/seek_to_end and OFFSET_OUT_OF_RANGE leave a reset to do here."""
        sub = self._subscription
        with sub.lock:
            missing = {tp: (s.epoch, s.reset) for tp, s in sub.states.items() if s.position is None}
        if not missing:
            return
        fresh = [tp for tp, (_, reset) in missing.items() if reset is None]
        committed: Mapping[TopicPartition, OffsetAndMetadata | None] = {}
        if fresh and self.config.group_id is not None:
            committed = self.committed(fresh, max(0.0, (deadline_ms - self._clock.monotonic_ms()) / 1000))
        policy = self.config.auto_offset_reset
        resets: dict[str, list[TopicPartition]] = defaultdict(list)
        found: dict[TopicPartition, int] = {}
        epochs: dict[TopicPartition, int] = {}  # a committed offset's leader epoch: validated before fetching
        for tp, (_, reset) in missing.items():
            om = committed.get(tp)
            if om is not None:
                found[tp], epochs[tp] = om.offset, om.leader_epoch
            else:
                resets[reset or policy].append(tp)
        if resets["none"]:
            with sub.lock:
                for tp in resets["none"]:
                    state = sub.states.get(tp)
                    if state is not None and state.epoch == missing[tp][0]:
                        state.reset = "none"
            raise NoOffsetForPartitionError(
                f"no offset to start from for {', '.join(f'{tp.topic} [{tp.partition}]' for tp in resets['none'])}: "
                f"no committed offset (or it is out of range) and auto.offset.reset is none; seek() first",
                partitions=resets["none"])
        if resets["earliest"]:
            earliest = self._list_offsets(dict.fromkeys(resets["earliest"], _EARLIEST), deadline_ms)
            found.update((tp, info.offset) for tp, info in earliest.items())
        if resets["latest"]:
            found.update(self._end_offsets(resets["latest"], deadline_ms))
        with sub.lock:
            for tp, offset in found.items():
                state = sub.states.get(tp)
                if state is not None and state.epoch == missing[tp][0]:
                    epoch = epochs.get(tp, -1)
                    state.seek(offset, offset_epoch=epoch, validate=epoch >= 0)
        self._transport.wakeup()

    def _validate_positions(self) -> None:
        """KIP-320, Java's validatePositionsIfNeeded: a partition whose leader epoch grew since its position was
        checked, while the position knows the leader epoch it was read in (or comes with one: a committed offset, a
        seek with an OffsetAndMetadata), is not fetched until its leader answers OffsetForLeaderEpoch: where does that
        epoch end in your log? Never waits: the requests go out, a later call (the poll loop's next turn) takes the
        answers. `divergence` decides: the log holds the position (fetch on), or it was truncated under it: with
        auto.offset.reset the position moves to the first offset known to diverge (the policy's reset when that is
        unknown), with none LogTruncationError is raised, again by each poll until seek(). A broker without the API
        (Tansu) is not asked, nor a partition whose metadata carries no leader epoch: Java skips the check there."""
        snapshot = self._metadata.snapshot()
        now_ms = self._clock.monotonic_ms()
        due = self._positions_to_validate(snapshot, now_ms)
        if not due:
            return
        routes: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in due:
            routes[snapshot.leader(tp.topic, tp.partition)].append(tp)
        truncated: dict[TopicPartition, tuple[int, tuple[int, int]]] = {}
        for node_id, tps in routes.items():
            request = Request(api.OFFSET_FOR_LEADER_EPOCH.key, {"replica_id": -2, "topics": by_topic(tps, lambda tp: {
                "partition": tp.partition, "current_leader_epoch": due[tp][2], "leader_epoch": due[tp][1]},
                topic="topic")})
            try:
                _, answer = self._ask(node_id, request, now_ms)  # still out: KafkaTimeoutError, taken by a later call
            except KafkaTimeoutError:
                continue
            except UnsupportedVersionError:  # the broker cannot check: fetch without (Java)
                answer = {"topics": by_topic(tps, lambda tp: {"partition": tp.partition, "error_code": 0,
                                                              "leader_epoch": due[tp][1], "end_offset": due[tp][0]},
                                             topic="topic")}
            except KafkaError as e:
                if not e.retriable:
                    raise
                self._validation_backoff(tps, now_ms)  # a lost connection, mostly
                continue
            with self._subscription.lock:
                for t in answer["topics"]:
                    for p in t["partitions"]:
                        tp = TopicPartition(t["topic"], p["partition"])
                        if tp in due and (found := self._validated(tp, p, due[tp], now_ms)) is not None:
                            truncated[tp] = found
        self._transport.wakeup()
        if truncated:
            raise LogTruncationError(fetch_offsets={tp: position for tp, (position, _) in truncated.items()},
                                     divergent_offsets={tp: d for tp, (_, d) in truncated.items() if d[0] >= 0})

    def _validation_backoff(self, tps: Iterable[TopicPartition], now_ms: int) -> None:
        """A position's check failed in a way worth retrying: again after retry.backoff.ms, with fresh metadata."""
        self._metadata.request_update()
        with self._subscription.lock:
            for tp in tps:
                state = self._subscription.states.get(tp)
                if state is not None:
                    state.not_before_ms = now_ms + self.config.retry_backoff_ms

    def _positions_to_validate(self, snapshot: ClusterSnapshot, now_ms: int) -> dict[TopicPartition, tuple[int, int,
                                                                                                           int]]:
        """With the metadata's leader epochs: the positions to check now, {partition: (position, its leader epoch,
        the current leader epoch)}; a partition whose leader epoch grew starts awaiting validation here."""
        due: dict[TopicPartition, tuple[int, int, int]] = {}
        with self._subscription.lock:
            for tp, state in self._subscription.states.items():
                if state.position is None:
                    continue
                parts = snapshot.partitions.get(tp.topic)
                info = parts[tp.partition] if parts is not None and 0 <= tp.partition < len(parts) else None
                leader = info.leader if info is not None else -1
                if info is not None and leader >= 0 and info.leader_epoch > state.leader_epoch:
                    state.leader_epoch = info.leader_epoch
                    if state.offset_epoch >= 0 and not state.awaiting_validation:  # drops what was fetched for it
                        state.seek(state.position, offset_epoch=state.offset_epoch, validate=True)
                if not state.awaiting_validation or now_ms < state.not_before_ms:
                    continue
                if leader < 0:  # wait for the leader (the fetcher does not look at this partition now)
                    self._metadata.add_topic(tp.topic, now_ms)
                    self._metadata.request_update()
                    state.not_before_ms = now_ms + self.config.retry_backoff_ms
                elif state.leader_epoch < 0:  # the broker gives no leader epochs: nothing to check against
                    state.awaiting_validation = False
                else:
                    due[tp] = (state.position, state.offset_epoch, state.leader_epoch)
        return due

    def _validated(self, tp: TopicPartition, p: Mapping[str, Any], asked: tuple[int, int, int],
                   now_ms: int) -> tuple[int, tuple[int, int]] | None:
        """With the lock held: one partition's OffsetForLeaderEpoch answer p to `asked` (position, its epoch, leader
        epoch) applied to its state. Returns (position, divergence) when the log was truncated and auto.offset.reset
        is none (LogTruncationError's)."""
        state = self._subscription.states.get(tp)
        if (state is None or not state.awaiting_validation
                or (state.position, state.offset_epoch, state.leader_epoch) != asked):
            return None  # sought, reset or validated since it was asked
        position, offset_epoch, _ = asked
        if p["error_code"]:
            error = error_for(p["error_code"], f"validating the position of {tp.topic} [{tp.partition}] at offset "
                                               f"{position}")
            if not error.retriable:
                raise error
            self._metadata.request_update()  # a stale leader, mostly: again after a backoff
            state.not_before_ms = now_ms + self.config.retry_backoff_ms
            return None
        diverged = divergence(position, p["end_offset"], p["leader_epoch"])
        policy = self.config.auto_offset_reset
        if diverged is None:
            state.awaiting_validation = False
        elif policy == "none":
            log.warning("truncation detected for %s [%s] at offset %s (leader epoch %s): the leader's log ends at %s "
                        "in that epoch, and auto.offset.reset is none", tp.topic, tp.partition, position,
                        offset_epoch, diverged[0])
            state.not_before_ms = now_ms + self.config.retry_backoff_ms
            return position, diverged
        elif diverged[0] < 0:
            log.info("truncation detected for %s [%s] at offset %s (leader epoch %s), the first offset to diverge is "
                     "unknown: resetting the position (auto.offset.reset=%s)", tp.topic, tp.partition, position,
                     offset_epoch, policy)
            state.seek(None, policy)
        else:
            log.info("truncation detected for %s [%s] at offset %s (leader epoch %s): resetting the position to %s, "
                     "the first offset known to diverge (leader epoch %s)", tp.topic, tp.partition, position,
                     offset_epoch, *diverged)
            state.seek(diverged[0], offset_epoch=diverged[1])
        return None

    def _list_offsets(self, timestamps: Mapping[TopicPartition, int],
                      deadline_ms: int) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """ListOffsets at each partition's leader."""
        def request(tps: list[TopicPartition]) -> Request:
            return list_offsets_request({tp: timestamps[tp] for tp in tps}, read_committed=self.config.read_committed)

        return self._per_leader(list(timestamps), deadline_ms, request,
                                lambda answer: read_list_offsets(answer, "listing offsets of"))

    def _end_offsets(self, tps: list[TopicPartition], deadline_ms: int) -> dict[TopicPartition, int]:
        """High watermarks (last stable offsets with read_committed) from a Fetch at the offset ListOffsets latest
        gives: Kafka's is the high watermark, Tansu's the last batch's first offset + 1; both are in range, and the
        Fetch answer carries the true watermarks (docs/consumer.md)."""
        starts = {tp: info.offset for tp, info in
                  self._list_offsets(dict.fromkeys(tps, _LATEST), deadline_ms).items()}
        read_committed = self.config.read_committed

        def request(group: list[TopicPartition]) -> Request:  # Tansu answers max_wait_ms=0 with no partitions
            return fetch_request({tp: (starts[tp], 1, -1) for tp in group}, max_wait_ms=1, min_bytes=0, max_bytes=1,
                                 read_committed=read_committed)

        def end(answer: Mapping[str, Any]) -> dict[TopicPartition, int | KafkaError]:
            return {TopicPartition(t["topic"], p["partition_index"]):
                    error_for(p["error_code"], f"reading the end offset of {t['topic']} [{p['partition_index']}]")
                    if p["error_code"] else int(p["last_stable_offset"] if read_committed and p["last_stable_offset"]
                                                >= 0 else p["high_watermark"])
                    for t in answer["responses"] for p in t["partitions"]}

        return self._per_leader(tps, deadline_ms, request, end)

    def _per_leader(self, tps: list[TopicPartition], deadline_ms: int,
                    request: Callable[[list[TopicPartition]], Request],
                    read: Callable[[Mapping[str, Any]], Mapping[TopicPartition, T | KafkaError]],
                    ) -> dict[TopicPartition, T]:
        """One request per leader for its partitions, its answer read per partition. A stale leader's partitions, or
        those of a leader that could not be asked (it died: its connection failed), are asked again after a metadata
        refresh, until deadline_ms."""
        out: dict[TopicPartition, T] = {}
        pending = set(tps)
        while pending:
            for node, group in self._leaders(pending, deadline_ms).items():
                try:
                    _, answer = self._ask(node, request(group), deadline_ms, once=True)
                except KafkaError as e:
                    self._retry_or_raise(e, deadline_ms, sleep=False)
                    self._metadata.request_update()  # the leader may be gone: ask its partitions' new one
                    continue
                for tp, found in read(answer).items():
                    if tp not in pending:
                        continue
                    if isinstance(found, KafkaError):
                        self._retry_or_raise(found, deadline_ms, sleep=False)
                        continue
                    out[tp] = found
                    pending.discard(tp)
            if pending:
                self._backoff(deadline_ms)
        return out

    # -- requests from the caller's thread ----------------------------------------------------------------------

    def _submit(self, request: Request, node_id: int | None) -> Call:
        call = Call(ANY_BROKER if node_id is None else Broker(node_id),
                    self._clock.monotonic_ms() + self.config.connection.request_timeout_ms, request)
        self._calls.submit(call)
        return call

    def _ask(self, node_id: int | None, request: Request, deadline_ms: int,
             once: bool = False) -> tuple[int, dict[str, Any]]:
        """(node, answer) of request to node_id (None: the least loaded), sent again after retry.backoff.ms on a
        retriable failure until deadline_ms (once: the failure is raised, for the caller to choose the node again).
        A request still out at the deadline is kept: the same request asked again (the next poll) waits for it
        instead of sending another."""
        call = self._answer(self._outstanding, (request.api_key, node_id, repr(request.body)),
                            lambda: self._submit(request, node_id), deadline_ms,
                            f"{api.API_NAMES[request.api_key]}: no answer", once)
        assert call.response is not None
        return call.answered_by, call.response

    def _answer(self, outstanding: dict[Any, Call], key: Any, submit: Callable[[], Call], deadline_ms: int,
                no_answer: str, once: bool = False) -> Call:
        """The call kept under key in outstanding (submitted when none is out) once it has an answer; submitted
        again after retry.backoff.ms on a retriable failure until deadline_ms (once: its failure is raised). A call
        still out at the deadline stays: the same request asked again (the next poll) waits for it instead of
        sending another."""
        while True:
            call = outstanding.get(key)
            if call is None:
                call = outstanding[key] = submit()
            self._wait(call.done, deadline_ms)
            if not call.done.is_set():
                raise KafkaTimeoutError(f"{no_answer} before the deadline" + (
                    f" ({problem})" if (problem := getattr(self._transport, "connection_problem", lambda: None)())
                    else ""))
            del outstanding[key]
            if call.error is None and call.response is not None:
                return call
            if once:
                raise call.error or KafkaError(no_answer)
            self._retry_or_raise(call.error or KafkaError(no_answer), deadline_ms)

    def _wait(self, done: threading.Event, deadline_ms: int) -> None:
        while not done.is_set():
            self._check_open()
            remaining_ms = deadline_ms - self._clock.monotonic_ms()
            if remaining_ms <= 0:
                return
            if self._thread is None:
                self.network.run_once()
            else:
                done.wait(min(remaining_ms / 1000, _WAIT_SLICE_S))

    def _retry_or_raise(self, error: KafkaError, deadline_ms: int, sleep: bool = True) -> None:
        """Raises error unless it is retriable and the deadline leaves time; refreshes what it says is stale."""
        code = getattr(error, "code", None)
        if kinds_of(code) & ErrorKind.STALE_METADATA:
            self._metadata.request_update()
        if not error.retriable or self._clock.monotonic_ms() >= deadline_ms:
            raise error
        if sleep:
            self._backoff(deadline_ms)

    def _backoff(self, deadline_ms: int) -> None:
        self._check_open()
        now_ms = self._clock.monotonic_ms()
        if now_ms >= deadline_ms:
            raise KafkaTimeoutError("no answer before the deadline")
        if self._thread is None:
            self.network.run_once()
        else:
            self._clock.sleep_ms(min(self.config.retry_backoff_ms, deadline_ms - now_ms))

    def _leaders(self, tps: Iterable[TopicPartition], deadline_ms: int) -> dict[int, list[TopicPartition]]:
        """The partitions by leader node, waiting for metadata that names them until deadline_ms."""
        wanted = list(tps)
        while True:
            snapshot = self._metadata.snapshot()
            routes: dict[int, list[TopicPartition]] = defaultdict(list)
            unknown: list[TopicPartition] = []
            for tp in wanted:
                leader = snapshot.leader(tp.topic, tp.partition)
                (routes[leader] if leader >= 0 else unknown).append(tp)
            if not unknown:
                return dict(routes)
            now_ms = self._clock.monotonic_ms()
            for topic in {tp.topic for tp in unknown}:
                self._metadata.add_topic(topic, now_ms)
            self._metadata.request_update()
            self._transport.wakeup()
            if now_ms >= deadline_ms:
                raise KafkaTimeoutError(f"no leader known for {', '.join(map(str, unknown))} before the deadline "
                                        f"(the topic or partition may not exist)")
            self._backoff(deadline_ms)

    def _group(self, call: str) -> str:
        if self.config.group_id is None:
            raise InvalidArgumentError(f"{call} needs a group.id in the consumer's config (the offsets are a "
                                       f"group's)")
        return self.config.group_id

    def _ask_group(self, key: tuple[str, tuple[Any, ...]], build: Callable[[GroupMember], Request],
                   deadline_ms: int) -> dict[str, Any]:
        """The answer to a request the group member builds (at its coordinator, with its generation), sent again
        after a retriable failure until deadline_ms; a call still out at the deadline is kept under key, as _ask."""
        driver = self._group_driver
        assert driver is not None
        call = self._answer(self._outstanding_group, key, lambda: driver.submit(build, deadline_ms), deadline_ms,
                            f"group {self.config.group_id!r}: no answer from its coordinator")
        assert call.response is not None
        return call.response

    def _deadline(self, timeout: float | None, name: str, default: int | None = -1) -> int:
        """now + timeout seconds, in ms; math.inf (or any timeout past 2**62 ms) is no deadline."""
        if timeout is None and default is not None:
            return self._clock.monotonic_ms() + self.config.default_api_timeout_ms
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
            raise InvalidArgumentError(f"{name} must be a number of seconds >= 0 (math.inf: no limit)"
                                       f"{' or None (default.api.timeout.ms)' if default is not None else ''}, got "
                                       f"{timeout!r}")
        if math.isinf(timeout) or timeout * 1000 >= _FOREVER_MS:
            return self._clock.monotonic_ms() + _FOREVER_MS
        return self._clock.monotonic_ms() + int(timeout * 1000)

    def _acquire(self, call: str) -> None:
        """Enters a call on this thread (Java's acquireAndEnsureOpen, with a depth: a listener's calls inside poll
        are this thread's too); _release() leaves it."""
        if os.getpid() != self._pid:
            raise IllegalStateError(
                f"{call}: this Consumer was made in process {self._pid}, before a fork(); its threads, connections "
                f"and group membership stayed there (and its fetched records are the parent's to hand out): make a "
                f"new Consumer in this process")
        me = threading.get_ident()
        with self._owner_lock:
            closing, lent = self._closing_thread, me == self._lent
            if self._closed or (closing is not None and closing != me and not lent):
                raise IllegalStateError(f"{call}: the consumer is closed")
            if self._owner is not None and self._owner != me and not lent:
                raise ConcurrentAccessError(
                    f"{call}: another thread is inside this Consumer's {self._owner_call}(); a Consumer is not "
                    f"thread-safe (as Java's KafkaConsumer): use it from one thread at a time (one Consumer per "
                    f"thread), only close() may come from another thread")
            if self._owner is None:
                self._owner, self._owner_call = me, call
            self._owner_depth += 1

    def _release(self) -> None:
        with self._owner_lock:
            self._owner_depth -= 1
            if self._owner_depth == 0:
                self._owner = None
                self._owner_lock.notify_all()

    @contextlib.contextmanager
    def _lent_to(self, thread: int) -> Iterator[None]:
        """The calling thread, inside a call, lets `thread` make calls while it waits for it (cykafka.aio runs the
        rebalance listener on the event loop's thread while the polling thread waits)."""
        lent, self._lent = self._lent, thread
        try:
            yield
        finally:
            self._lent = lent

    def _interrupted(self) -> bool:
        """close() runs on another thread: this thread's waits end (a poll returns, other calls raise)."""
        closing, me = self._closing_thread, threading.get_ident()
        return self._closed or (closing is not None and closing != me and me != self._lent)

    def _check_open(self) -> None:
        if self._interrupted():
            raise IllegalStateError("the consumer is closed")

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        """Commits the positions (enable.auto.commit), leaves the group (the listener's on_partitions_revoked, then
        LeaveGroup, unless static), waits for pending commit_async, stops the network thread and closes the
        connections, all within timeout seconds. From another thread: a call running on the consumer's thread is
        interrupted first (a waiting poll returns, a waiting call raises IllegalStateError) and close waits for it to
        end; one still running at the deadline is left to end alone, and the goodbyes (commit, LeaveGroup) are
        skipped. In a process forked from the one that made it: only marks it closed (all it holds is the parent's)."""
        deadline_ms = self._deadline(timeout, "timeout")
        me = threading.get_ident()
        with self._owner_lock:
            if self._closed or self._closing_thread is not None:
                return
            self._closing_thread = me
            other = self._owner is not None and self._owner != me
        if os.getpid() != self._pid:
            self._closed = True
            return
        self._finalizer.detach()
        if other:  # interrupt its waits, then let it leave
            self._transport.wakeup()
            with self._subscription.lock:
                self._subscription.data_ready.notify_all()
            with self._owner_lock:
                while self._owner is not None and (remaining_ms := deadline_ms - self._clock.monotonic_ms()) > 0:
                    self._owner_lock.wait(min(remaining_ms / 1000, _WAIT_SLICE_S))
                other = self._owner is not None
        try:
            if other:
                log.warning("close(): a call of another thread (%s) did not end by the deadline: closing without "
                            "the last commit and LeaveGroup", self._owner_call)
            elif self._subscribed:
                self._leave_group(deadline_ms)
            elif self.config.enable_auto_commit:
                try:
                    self.commit(timeout=max(0.0, (deadline_ms - self._clock.monotonic_ms()) / 1000))
                except KafkaError as e:
                    log.warning("the consumer's last auto commit failed on close: %s", e)
            while not other and self._async_commits and self._clock.monotonic_ms() < deadline_ms:
                self._run_async_commits()
                if self._async_commits:
                    self._backoff(deadline_ms)
            self._fetcher.close_sessions()  # Java's close: each broker's fetch session ends (KIP-227)
            self._transport.wakeup()
            while not other and not self._fetcher.sessions_closed and self._clock.monotonic_ms() < deadline_ms:
                self._backoff(deadline_ms)
        except KafkaTimeoutError:
            pass
        finally:
            self._closed = True
            if self._stats is not None:
                self._stats.stop()
            self.network.running = False
            self._transport.wakeup()
            with self._subscription.lock:
                self._subscription.data_ready.notify_all()
            thread = self._thread
            if thread is not None:
                thread.join(max(0.0, (deadline_ms - self._clock.monotonic_ms()) / 1000))
            if self._owns_transport and (thread is None or not thread.is_alive()):
                self._transport.close(0.0)

    def _leave_group(self, deadline_ms: int) -> None:
        """close()'s part in group mode: revoked partitions handled here (auto commit, listener), then the member's
        LeaveGroup, waited for until it is answered or deadline_ms."""
        driver = self._group_driver
        assert driver is not None
        with driver.lock:
            driver.member.close(self._clock.monotonic_ms())
        self._transport.wakeup()
        try:
            self._handle_group_events(deadline_ms)
        except KafkaError as e:
            log.warning("leaving group %r: %s", self.config.group_id, e)
        while self._clock.monotonic_ms() < deadline_ms:
            with driver.lock:
                if driver.member.left:
                    return
            self._backoff(deadline_ms)

    def metrics(self) -> MetricsSnapshot:
        """The consumer's metrics now: a dict under Java's names (fetch-latency-avg, records-lag-max,
        commit-latency-avg, time-between-poll-avg, ...), and in its `all` every metric by MetricName, per partition
        (records-lag, records-lag-max, records-lead-min: tags topic, partition) and per node (request-latency-avg)
        ones included (docs/observability.md). Cheap enough to poll."""
        with self._subscription.lock:
            assigned = [(tp.topic, tp.partition, s.position, s.high_watermark, s.last_stable_offset,
                         s.log_start_offset) for tp, s in self._subscription.states.items()]
        return self._metrics.snapshot(self.config.connection.client_id, self._transport.connection_count(), assigned)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


_live_consumers: weakref.WeakSet[Consumer] = weakref.WeakSet()


def _forget_in_child() -> None:
    """After fork(), in the child: a Consumer of the parent is the parent's (threads, connections, group), so its
    finalizer must not stop or close anything here; its calls raise IllegalStateError (Consumer._acquire)."""
    for consumer in list(_live_consumers):
        consumer._finalizer.detach()


os.register_at_fork(after_in_child=_forget_in_child)


def _commit_builder(offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> Callable[[GroupMember], Request]:
    return lambda member: member.commit_request(
        {tp: (om.offset, om.metadata, om.leader_epoch) for tp, om in offsets.items()})


def _caller_waker(sub: Subscription) -> Callable[[], None]:
    """The group driver's hook into the caller's wait (events or an answer came): a closure over the subscription
    only, so the network thread holds no reference to the Consumer."""
    def wake_caller() -> None:
        with sub.lock:
            sub.data_ready.notify_all()

    return wake_caller


def _log_auto_commit(error: KafkaError | None, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
    """As Java's: a retriable failure (the coordinator moving or gone, a lost connection) is logged at DEBUG, the next
    auto commit carries the offsets; any other at WARNING."""
    if error is not None:
        log.log(logging.DEBUG if error.retriable else logging.WARNING, "auto commit of %d offset(s) failed: %s",
                len(offsets), error)

