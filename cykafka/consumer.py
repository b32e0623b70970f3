"""The public Consumer (Java's KafkaConsumer): its API and its composition root, nothing else. Config -> transport,
metadata, the request layer (cykafka/requests: the coordinator cache, the call queue, the asker, the network loop)
and the consumer's parts, as Java splits them (docs/architecture.md, "The consumer's parts"):

- SubscriptionState (cykafka/subscription_state.py): the assigned partitions, positions, paused, pending resets;
- Fetcher (cykafka/fetcher.py), on the network thread: one Fetch in flight per broker, answers filed into the
- FetchBuffer (cykafka/fetch_buffer.py): the completed fetches, the only owner of draining;
- FetchCollector (cykafka/fetch_collector.py), on the caller's thread: records for poll / poll_batch / poll_into,
  read_committed look-ahead, fetch-size growth;
- OffsetFetcher (cykafka/offset_fetcher.py): missing positions (committed, auto.offset.reset, ListOffsets), offset
  lookups, KIP-320 validation;
- ConsumerCoordinator (cykafka/consumer_coordinator.py): commits, auto commit, the rebalance listener; the group
  membership itself runs on the network thread (cykafka/consumer_group.py, cykafka/consumer_network.py);
- PollLoop (cykafka/consumer_poll.py): one poll, the order of its work and its wait;
- TopicMetadataFetcher (cykafka/topic_metadata_fetcher.py): partitions_for;
- ConsumerLock (cykafka/consumer_lock.py): one thread inside at a time, and close()'s handshake with it;
  ConsumerWaits (cykafka/consumer_waits.py): deadlines and the retry backoff.

Everything but the Fetcher and the group membership runs on the caller's thread as requests handed to the network
thread, waited for up to the call's deadline; a request still out when poll's timeout ends is picked up by the next
poll, so poll(0) in a loop makes progress. Not thread-safe (as Java's): one thread uses a Consumer at a time;
close() may come from another. Decisions where Java or the issue was silent, and Tansu's quirks: docs/consumer.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import os
import re
import weakref
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, overload

from cykafka.adapters.clock import SystemClock
from cykafka.adapters.compression import decompress
from cykafka.adapters.defaults import consumer_adapters
from cykafka.arrow_schema import kafka_source_schema
from cykafka.config import ConsumerConfig
from cykafka.consumer_coordinator import CommitCallback, ConsumerCoordinator, ConsumerRebalanceListener
from cykafka.consumer_group import GroupDriver, member_for
from cykafka.consumer_lock import ConsumerLock, one_thread
from cykafka.consumer_network import NetworkThread, stop_network, stop_unclosed
from cykafka.consumer_poll import PollLoop
from cykafka.consumer_waits import ConsumerWaits
from cykafka.core import ArrowBatchBuilder, ConsumerRecord
from cykafka.errors import IllegalStateError, InvalidArgumentError, KafkaTimeoutError
from cykafka.fetch_buffer import FetchBuffer
from cykafka.fetch_collector import ArrowSink, FetchCollector, RecordList, RecordSink
from cykafka.fetcher import Fetcher
from cykafka.metrics import ConsumerMetrics, MetricsSnapshot, StatsReporter
from cykafka.offset_fetcher import OffsetFetcher
from cykafka.partition_eof import EndOfPartition
from cykafka.ports import Clock, PartitionInfo, Ports, TopicPartition, checked_partitions
from cykafka.ports.values import ConsumerGroupMetadata, ListOffsetsResultInfo, OffsetAndMetadata, checked_offset
from cykafka.requests.ask import Asker
from cykafka.requests.calls import CallQueue, NetworkLoop
from cykafka.requests.coordinators import Coordinators
from cykafka.requests.routes import Router
from cykafka.serialization import Deserializers, validate_topic
from cykafka.subscription_state import SubscriptionState
from cykafka.telemetry import TelemetrySource, weak_metrics
from cykafka.topic_metadata_fetcher import TopicMetadataFetcher

if TYPE_CHECKING:
    import pyarrow

__all__ = ["CommitCallback", "Consumer", "ConsumerRebalanceListener", "RecordSink"]
log = logging.getLogger("cykafka.consumer")
_client_ids = itertools.count(1)


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
        ports = Ports.of(ports)
        cfg = ConsumerConfig.parse(config, **kwargs)
        if not cfg.connection.client_id:
            cfg = dataclasses.replace(cfg, connection=dataclasses.replace(
                cfg.connection, client_id=f"cykafka-consumer-{next(_client_ids)}"))
        self.config = cfg
        conn = cfg.connection
        self._clock: Clock = ports.clock or SystemClock()
        self._lock = ConsumerLock()  # the one thread inside, and close()'s handshake with it
        self._owns_transport = ports.transport is None
        transport, metadata = consumer_adapters(ports, conn, cfg.metadata, self._clock)
        self._transport, self._metadata = transport, metadata
        self._subscriptions = sub = SubscriptionState(cfg.max_partition_fetch_bytes)
        buffer = FetchBuffer(sub)
        self._collector = FetchCollector(cfg, sub, buffer, self._clock, decompress, transport.wakeup)
        self._buffer = buffer
        coordinators = Coordinators(transport, cfg.retry_backoff_ms, dedicated_group_connections=True)
        calls = CallQueue(Router(transport, metadata, coordinators, cfg.retry_backoff_ms))
        self._fetcher = Fetcher(cfg, sub, buffer, transport, metadata, self._collector.decoder)
        self.network = NetworkLoop(transport, metadata, self._clock, [calls, coordinators, self._fetcher],
                                   conn.request_timeout_ms, coordinators)
        self._thread: NetworkThread | None = None
        turn = None if ports.start_sender else self.network.run_once
        self._waits = waits = ConsumerWaits(self._clock, self._lock, cfg.retry_backoff_ms, cfg.default_api_timeout_ms,
                                            turn)
        asker = Asker(calls, self._clock, cfg.retry_backoff_ms, drive=turn, closed=self._lock.interrupted,
                      client="consumer", backoff_wait=waits.backoff_wait, min_call_ms=conn.request_timeout_ms)
        driver = None
        if cfg.group_id is not None:
            driver = GroupDriver(member_for(cfg), calls, coordinators, metadata, self._clock, conn.request_timeout_ms,
                                 sub.wake)  # the subscription state's: the network thread holds no Consumer
            self.network.sources.insert(1, driver)
        self._group_driver = driver
        self._coordinator = ConsumerCoordinator(cfg, sub, driver, asker, self._clock, self._set_assignment,
                                                waits.backoff, transport.wakeup)
        self._deserializers = Deserializers.of(cfg.key_deserializer, cfg.value_deserializer)
        self._offsets = OffsetFetcher(cfg, sub, metadata, self._clock, asker,
                                      lambda tps, deadline_ms: self._coordinator.committed(tps, deadline_ms),
                                      transport.wakeup, waits.backoff)
        self._topics = TopicMetadataFetcher(metadata, self._clock, transport.wakeup, waits.backoff)
        self._end_of_partition = EndOfPartition(cfg.partition_eof_cb, cfg.read_committed) \
            if cfg.enable_partition_eof else None
        self._metrics = ConsumerMetrics.wired(cfg.read_committed, self.network, self._fetcher, self._group_driver)
        self._telemetry = TelemetrySource(transport, "consumer", weak_metrics(self), self._clock.wall_ms,
                                          cfg.retry_backoff_ms, {"client_id": conn.client_id}) \
            if cfg.enable_metrics_push else None
        if self._telemetry is not None:
            self.network.sources.append(self._telemetry)
        if ports.start_sender:
            self._thread = NetworkThread(self.network, name=f"cykafka-consumer-{conn.client_id}")
            self._thread.start()
        # the thread holds no reference to this Consumer: dropped unclosed, it is finalized and its thread stopped
        self._finalizer = weakref.finalize(self, stop_unclosed, conn.client_id, self._thread, self.network,
                                           transport if self._owns_transport else None)
        _live_consumers.add(self)
        self._poll = PollLoop(self._clock, sub, self._collector, self._coordinator, self._offsets, self._lock,
                              self._metrics, self._end_of_partition, turn)
        self._stats = StatsReporter.start_if_configured(cfg.statistics_interval_ms, cfg.stats_cb, self,
                                                        f"cykafka-stats-{conn.client_id}")

    # -- assignment ---------------------------------------------------------------------------------------------

    @one_thread
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Reads exactly these partitions (replacing the assignment), outside any group rebalance. A partition kept
        keeps its position; a new one starts at its committed offset (with a group.id), else where
        auto.offset.reset says. Not while subscribed (IllegalStateError, as Java)."""
        tps = checked_partitions(partitions, "assign")
        for tp in tps:
            validate_topic(tp.topic)  # as subscribe()'s
        if self._subscriptions.subscribed:
            raise IllegalStateError("assign: the consumer is subscribed to topics; unsubscribe() first (a consumer "
                                    "either joins a group with subscribe() or picks its partitions with assign())")
        self._set_assignment(tps)

    def _set_assignment(self, tps: Iterable[TopicPartition]) -> None:
        tps = list(tps)
        with self._subscriptions.lock:
            self._subscriptions.assign(tps)
            self._buffer.drop_unassigned()
        now_ms = self._clock.monotonic_ms()
        for topic in {tp.topic for tp in tps}:
            self._metadata.add_topic(topic, now_ms)
        self._fetcher.replan()

    @one_thread
    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer reads: assign()'s, or what the group gave it (empty until it joined)."""
        return self._subscriptions.assigned()

    @one_thread
    def subscribe(self, topics: Iterable[str] | re.Pattern[str],
                  listener: ConsumerRebalanceListener | object | None = None) -> None:
        """Joins the group (group.id) reading these topics, or every topic whose whole name matches a compiled
        pattern (`re.compile("orders-.*")`), sharing their partitions with the group's other members; the
        partitions arrive in a later poll(). Replaces an earlier subscription; an empty list unsubscribes.
        listener: a ConsumerRebalanceListener (or any object with some of its methods), called inside poll()."""
        if not self._coordinator.subscribe(topics, listener):
            self.unsubscribe()  # an empty list
            return
        self._transport.wakeup()

    @one_thread
    def subscription(self) -> set[str]:
        """The subscribed topics (for a pattern: those it matches now); empty when not subscribed."""
        return self._coordinator.subscription()

    @one_thread
    def unsubscribe(self) -> None:
        """Reads nothing any more: leaves the group (its partitions are revoked first: listener, auto commit) or
        drops assign()'s partitions; fetched data is dropped."""
        self._coordinator.unsubscribe()
        self._set_assignment([])

    unassign = unsubscribe

    @one_thread
    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group, generation and member id, for Producer.send_offsets_to_transaction (KIP-447 fencing)."""
        return self._coordinator.group_metadata()

    @one_thread
    def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        """The topic's partitions (leader, replicas, ...) from the metadata, waiting for it up to timeout seconds;
        [] when the cluster answers that the topic does not exist (Java's: auto-creation off at the broker, or
        allow.auto.create.topics false here), at once instead of after the timeout."""
        validate_topic(topic)
        return self._topics.partitions_for(topic, self._waits.deadline(timeout, "timeout"))

    # -- positions ----------------------------------------------------------------------------------------------

    @one_thread
    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """The next poll returns partition's records from offset on. An OffsetAndMetadata with a leader_epoch (a
        committed offset, LogTruncationError's divergent offset) is checked with the partition's leader first, as
        Java's seek does (KIP-320: docs/consumer.md)."""
        checked = checked_offset(offset, "seek: offset")
        value, epoch = checked.offset, checked.leader_epoch
        with self._subscriptions.lock:
            self._subscriptions.state(partition, "seek").seek(value, offset_epoch=epoch, validate=epoch >= 0)
        self._fetcher.replan()

    @one_thread
    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Moves to the first offset of each partition (default: every assigned one), resolved on the next poll."""
        self._subscriptions.seek_to(partitions, "earliest", "seek_to_beginning")
        self._fetcher.replan()

    @one_thread
    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Moves past the last record of each partition (default: every assigned one): the high watermark, the last
        stable offset with read_committed; resolved on the next poll."""
        self._subscriptions.seek_to(partitions, "latest", "seek_to_end")
        self._fetcher.replan()

    @one_thread
    def position(self, partition: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record poll returns for partition, resolved now if unknown (committed offset,
        else auto.offset.reset) within timeout seconds (default default.api.timeout.ms)."""
        return self._offsets.position(partition, self._waits.deadline(timeout, "timeout"))

    @one_thread
    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stops fetching and returning these partitions (positions are kept) until resume()."""
        self._subscriptions.set_paused(partitions, True, "pause")
        self._fetcher.replan()

    @one_thread
    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._subscriptions.set_paused(partitions, False, "resume")
        self._fetcher.replan()

    @one_thread
    def paused(self) -> set[TopicPartition]:
        return self._subscriptions.paused()

    @one_thread
    def watermarks(self, partition: TopicPartition) -> tuple[int, int, int]:
        """(log start offset, high watermark, last stable offset) of an assigned partition as the last Fetch answer
        for it gave them, -1 each before one came (no request: aiokafka's highwater / last_stable_offset,
        confluent-kafka's get_watermark_offsets(cached=True)). IllegalStateError when it is not assigned."""
        with self._subscriptions.lock:
            state = self._subscriptions.states.get(partition)
            if state is None:
                raise IllegalStateError(f"watermarks: {partition} is not assigned to this consumer")
            return state.log_start_offset, state.high_watermark, state.last_stable_offset

    # -- offsets ------------------------------------------------------------------------------------------------

    @one_thread
    def beginning_offsets(self, partitions: Iterable[TopicPartition],
                          timeout: float | None = None) -> dict[TopicPartition, int]:
        """The first offset of each partition (ListOffsets, earliest)."""
        tps = checked_partitions(partitions, "beginning_offsets")
        return self._offsets.beginning_offsets(tps, self._waits.deadline(timeout, "timeout"))

    @one_thread
    def end_offsets(self, partitions: Iterable[TopicPartition],
                    timeout: float | None = None) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition: the high watermark (the last stable offset with
        read_committed), from a Fetch answer (docs/consumer.md: why not ListOffsets latest)."""
        tps = checked_partitions(partitions, "end_offsets")
        return self._offsets.end_offsets(tps, self._waits.deadline(timeout, "timeout"))

    @one_thread
    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int], timeout: float | None = None,
                          ) -> dict[TopicPartition, ListOffsetsResultInfo | None]:
        """For each partition, the first offset whose record timestamp is >= the given one (ms), with that record's
        timestamp and leader epoch; None when no record is that recent."""
        return self._offsets.offsets_for_times(timestamps, self._waits.deadline(timeout, "timeout"))

    @one_thread
    def committed(self, partitions: Iterable[TopicPartition],
                  timeout: float | None = None) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (OffsetFetch at its coordinator); None where none is committed."""
        self._coordinator.group("committed")
        tps = checked_partitions(partitions, "committed")
        return self._coordinator.committed(tps, self._waits.deadline(timeout, "timeout"))

    @one_thread
    def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
               timeout: float | None = None) -> None:
        """Commits offsets for the group (default: every position; an offset is the next record to read), waiting
        for the answer; pending commit_async callbacks run first."""
        self._coordinator.group("commit")
        positions = self._coordinator.offsets_to_commit(offsets, "commit")
        deadline_ms = self._waits.deadline(timeout, "timeout")
        self._coordinator.run_async_commits()
        if positions:
            started_ms = self._clock.monotonic_ms()
            self._coordinator.commit_sync(positions, deadline_ms)
            self._metrics.record_commit(self._clock.monotonic_ms() - started_ms)

    @one_thread
    def commit_async(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Commits without waiting; callback(error, offsets) runs on this thread inside a later poll() or commit()
        (a raising callback is logged). Not retried (Java's commitAsync)."""
        self._coordinator.group("commit_async")
        if callback is not None and not callable(callback):
            raise InvalidArgumentError(f"commit_async: callback must be callable, got {type(callback).__name__}")
        positions = self._coordinator.offsets_to_commit(offsets, "commit_async")
        if positions:
            self._coordinator.commit_async(positions, callback)

    # -- poll ---------------------------------------------------------------------------------------------------

    @one_thread
    def poll(self, timeout: float) -> list[ConsumerRecord]:
        """The next records of the assigned partitions, at most max.poll.records; waits up to timeout seconds for
        some, returns [] when none came. Raises a partition's error (e.g. NoOffsetForPartitionError)."""
        sink = RecordList()
        self._poll_into(sink, timeout, self.config.max_poll_records)
        return sink.records if self._deserializers is None else self.deserialized(sink.records)

    @one_thread
    def poll_batch(self, timeout: float, max_records: int | None = None) -> pyarrow.RecordBatch:
        """As poll, as one pyarrow.RecordBatch in Spark's Kafka source schema (key, value, topic, partition, offset,
        timestamp, timestampType, headers) built in C; empty (with the schema) when no record came in time. Keys and
        values are the bytes as fetched: with key.deserializer or value.deserializer set it raises ConfigError
        (docs/serialization.md)."""
        self.config.refuse_deserializers("poll_batch")
        sink = ArrowSink(ArrowBatchBuilder(kafka_source_schema()))
        self._poll_into(sink, timeout, self.config.poll_limit(max_records, "poll_batch"))
        return sink.builder.finish()

    @one_thread
    def poll_into(self, sink: RecordSink, timeout: float, max_records: int | None = None) -> int:
        """As poll, into sink (a cykafka.fetch_collector.RecordSink: RecordList, RecordsByPartition, ArrowSink, or
        your own), at most max_records (default max.poll.records); returns how many records it took. The records
        are as fetched: deserialized() applies key.deserializer / value.deserializer as poll does."""
        return self._poll_into(sink, timeout, self.config.poll_limit(max_records, "poll_into"))

    @property
    def deserializes(self) -> bool:
        """Whether key.deserializer or value.deserializer is set (poll applies them; poll_into's caller calls
        deserialized())."""
        return self._deserializers is not None

    def deserialized(self, records: list[ConsumerRecord]) -> list[ConsumerRecord]:
        """records (as poll_into took them) through key.deserializer / value.deserializer, as poll hands them out.
        When one fails, the records before it are returned and every partition from that record on is sought back to
        it (Java's: the position stays at the failed record, a poll raises RecordDeserializationError when it meets it
        first; the caller may seek past it)."""
        if self._deserializers is None:
            return records
        out, error = self._deserializers.records(records)
        if error is None:
            return out
        self._subscriptions.rewind(records[len(out):])
        self._fetcher.replan()
        if out:
            return out
        raise error

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Every record, as poll returns them, until close() (from the loop's body, or from another thread)."""
        while not self._lock.interrupted():
            try:
                records = self.poll(1.0)
            except IllegalStateError:
                if self._lock.interrupted():
                    return  # closed by another thread meanwhile
                raise
            yield from records

    def _poll_into(self, sink: RecordSink, timeout: float, limit: int) -> int:
        return self._poll.poll(sink, self._waits.deadline(timeout, "timeout", none_is_default=False), limit)

    # -- waits, deadlines, the one thread inside ----------------------------------------------------------------

    @contextlib.contextmanager
    def calling(self, call: str) -> Iterator[None]:
        """Holds the consumer for this thread while the block runs, as every public call does (Java's
        acquireAndEnsureOpen, with a depth: a listener's calls inside poll are this thread's too): raises
        IllegalStateError when the consumer is closed or was made in another process (before a fork()),
        ConcurrentAccessError naming `call` when another thread is inside a call."""
        with self._lock.calling(call):
            yield

    def lent_to(self, thread: int) -> contextlib.AbstractContextManager[None]:
        """The calling thread, inside a call, lets `thread` (a threading.get_ident()) make calls while the block
        runs, as it waits for that thread (cykafka.aio runs the rebalance listener on the event loop's thread while
        the polling thread waits)."""
        return self._lock.lent_to(thread)

    @property
    def closed(self) -> bool:
        """close() has finished (or the consumer belongs to the process it was forked from)."""
        return self._lock.closed

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        """Commits the positions (enable.auto.commit), leaves the group (the listener's on_partitions_revoked, then
        LeaveGroup, unless static), waits for pending commit_async, stops the network thread and closes the
        connections, all within timeout seconds. From another thread: a call running on the consumer's thread is
        interrupted first (a waiting poll returns, a waiting call raises IllegalStateError) and close waits for it to
        end; one still running at the deadline is left to end alone, and the goodbyes (commit, LeaveGroup) are
        skipped. In a process forked from the one that made it: only marks it closed (all it holds is the parent's)."""
        deadline_ms = self._waits.deadline(timeout, "timeout")
        other = self._lock.begin_close()
        if other is None:
            return
        if self._lock.forked:
            self._lock.closed = True
            return
        self._finalizer.detach()
        if other:  # interrupt its waits, then let it leave
            self._transport.wakeup()
            self._subscriptions.wake()
            other = self._lock.wait_for_owner(lambda: deadline_ms - self._clock.monotonic_ms())
        coordinator = self._coordinator
        try:
            if other:
                log.warning("close(): a call of another thread (%s) did not end by the deadline: closing without "
                            "the last commit and LeaveGroup", self._lock.owner_call)
            else:
                coordinator.close(deadline_ms)
            self._fetcher.close_sessions()  # Java's close: each broker's fetch session ends (KIP-227)
            telemetry = self._telemetry
            if telemetry is not None:
                telemetry.close()  # KIP-714's last push, bounded by request.timeout.ms too
            self._transport.wakeup()
            goodbyes_ms = min(deadline_ms, self._clock.monotonic_ms() + self.config.connection.request_timeout_ms)
            while not other and not (self._fetcher.sessions_closed and (telemetry is None or telemetry.closed)) \
                    and self._clock.monotonic_ms() < goodbyes_ms:
                self._waits.backoff(goodbyes_ms)
        except KafkaTimeoutError:
            pass
        finally:
            self._lock.closed = True
            if self._stats is not None:
                self._stats.stop()
            self._subscriptions.wake()
            stop_network(self.network, self._thread, self._transport if self._owns_transport else None,
                         (deadline_ms - self._clock.monotonic_ms()) / 1000)

    def metrics(self) -> MetricsSnapshot:
        """The consumer's metrics now: a dict under Java's names (fetch-latency-avg, records-lag-max,
        commit-latency-avg, time-between-poll-avg, ...), and in its `all` every metric by MetricName, per partition
        (records-lag, records-lag-max, records-lead-min: tags topic, partition) and per node (request-latency-avg)
        ones included (docs/observability.md). Cheap enough to poll."""
        with self._subscriptions.lock:
            assigned = [(tp.topic, tp.partition, s.position, s.high_watermark, s.last_stable_offset,
                         s.log_start_offset) for tp, s in self._subscriptions.states.items()]
        return self._metrics.snapshot(self.config.connection.client_id, self._transport.connection_count(), assigned)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


_live_consumers: weakref.WeakSet[Consumer] = weakref.WeakSet()


def _forget_in_child() -> None:
    """After fork(), in the child: a Consumer of the parent is the parent's (threads, connections, group), so its
    finalizer must not stop or close anything here; its calls raise IllegalStateError (Consumer.calling)."""
    for consumer in list(_live_consumers):
        consumer._finalizer.detach()


os.register_at_fork(after_in_child=_forget_in_child)
