"""kafka-python's KafkaConsumer over cykafka's Consumer: positional topics, iteration with
consumer_timeout_ms, poll(timeout_ms, max_records) -> {TopicPartition: [ConsumerRecord]}, subscribe with a pattern or
a listener, commits, offsets lookups, metrics in kafka-python's shape.
"""

from __future__ import annotations

import collections
import concurrent.futures
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from cykafka.admin import Admin
from cykafka.compat.kafka._config import (
    _INF,
    CONSUMER_DEFAULTS,
    SELF_ASSIGN_REFRESH_S,
    _cy_admin_keys,
    _cy_consumer_keys,
    _cy_offset,
    _grouped,
    _now,
    _seconds,
    _serializer,
    kafka_config,
)
from cykafka.compat.kafka.errors import _T, _TC, IllegalStateError, KafkaConfigurationError, translated
from cykafka.compat.kafka.structs import ConsumerGroupMetadata, ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp
from cykafka.consumer import Consumer
from cykafka.fetch_collector import RecordsByPartition
from cykafka.ports.values import TopicPartition

# -- consumer ----------------------------------------------------------------------------------------------------


class KafkaConsumer:
    """kafka-python's KafkaConsumer over cykafka.Consumer: `KafkaConsumer(*topics, **configs)`, iteration (ends
    after consumer_timeout_ms without records), poll(timeout_ms, max_records) -> {TopicPartition: [ConsumerRecord]},
    subscribe / assign, seeks, offsets, commits; docs/migrating-kafka-python.md."""

    DEFAULT_CONFIG = CONSUMER_DEFAULTS

    def __init__(self, *topics: str, **configs: Any) -> None:
        self.config = {**CONSUMER_DEFAULTS, **configs}
        self._group_id = configs.get("group_id")
        handled = {"key_deserializer", "value_deserializer", "consumer_timeout_ms", "default_offset_commit_callback",
                   "max_in_flight_requests_per_connection", "exclude_internal_topics", "enable_auto_commit"}
        kafka = kafka_config(configs, CONSUMER_DEFAULTS, _cy_consumer_keys(), frozenset(handled))
        if self._group_id is not None:
            kafka["enable.auto.commit"] = bool(configs.get("enable_auto_commit", True))
        if configs.get("exclude_internal_topics", True) is not True:
            raise KafkaConfigurationError("exclude_internal_topics=False: cykafka.compat.kafka cannot honour it")
        self._key_deserializer = _serializer(configs.get("key_deserializer"), "deserialize")
        self._value_deserializer = _serializer(configs.get("value_deserializer"), "deserialize")
        timeout_ms = configs.get("consumer_timeout_ms", _INF)
        self._iter_timeout_s = math.inf if timeout_ms == _INF else float(timeout_ms) / 1000
        self._commit_callback = configs.get("default_offset_commit_callback")
        self._max_poll_records = int(configs.get("max_poll_records", 500))
        with _T:
            self._consumer = Consumer(kafka)
        self._iterator: collections.deque[ConsumerRecord] = collections.deque()
        # subscribed without a group_id (kafka-python assigns itself every partition of the topics then)
        self._self_assigned: list[str] | re.Pattern[str] | None = None
        self._self_assigned_at_s = -math.inf
        self._admin: Admin | None = None
        self._admin_config = {k: v for k, v in kafka.items() if k in _cy_admin_keys()}
        if topics:
            self.subscribe(topics)

    @property
    def consumer(self) -> Consumer:
        """The cykafka.Consumer underneath (poll_batch to Arrow: the fast path)."""
        return self._consumer

    def _records(self, records: list[Any]) -> list[ConsumerRecord]:
        """cykafka's records as kafka-python's tuples (tuple.__new__: no Python-level __new__ per record)."""
        kd, vd = self._key_deserializer, self._value_deserializer
        new, cls = tuple.__new__, ConsumerRecord
        if kd is None and vd is None:
            return [new(cls, (
                r.topic, r.partition, -1 if (e := r.leader_epoch) is None else e, r.offset, r.timestamp_ms,
                r.timestamp_type, (k := r.key), (v := r.value), (h := r.headers), None, -1 if k is None else len(k),
                -1 if v is None else len(v), sum(len(hk.encode()) + len(hv or b"") for hk, hv in h) if h else -1))
                for r in records]
        out = []
        for r in records:
            k, v, h, e = r.key, r.value, r.headers, r.leader_epoch
            out.append(new(cls, (
                r.topic, r.partition, -1 if e is None else e, r.offset, r.timestamp_ms, r.timestamp_type,
                k if kd is None else kd(r.topic, h, k), v if vd is None else vd(r.topic, h, v), h, None,
                -1 if k is None else len(k), -1 if v is None else len(v),
                sum(len(hk.encode()) + len(hv or b"") for hk, hv in h) if h else -1)))
        return out

    def poll(self, timeout_ms: int = 0, max_records: int | None = None,
             update_offsets: bool = True) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to max_records (default max_poll_records) records, waiting up to timeout_ms for some:
        {TopicPartition: [ConsumerRecord]}; {} when none came."""
        if timeout_ms < 0:
            raise ValueError("Timeout must not be negative")
        if max_records is not None and (not isinstance(max_records, int) or max_records < 1):
            raise ValueError("max_records must be positive")
        if self._consumer.closed:
            raise IllegalStateError("KafkaConsumer is closed")
        self._self_assign()
        sink = RecordsByPartition()
        with _T:
            self._consumer.poll_into(sink, timeout_ms / 1000, max_records or self._max_poll_records)
        return {tp: self._records(records) for tp, records in sink.by_partition.items()}

    def __iter__(self) -> Iterator[ConsumerRecord]:
        return self

    def __next__(self) -> ConsumerRecord:
        """The next record; StopIteration after consumer_timeout_ms without one, or once closed."""
        if self._iterator:
            return self._iterator.popleft()
        deadline = None if self._iter_timeout_s == math.inf else _now() + self._iter_timeout_s
        while not self._consumer.closed:
            self._self_assign()
            wait = 1.0 if deadline is None else max(0.0, min(1.0, deadline - _now()))
            with _T:
                got = self._consumer.poll(wait)
            if got:
                self._iterator.extend(self._records(got))
                return self._iterator.popleft()
            if deadline is not None and _now() >= deadline:
                raise StopIteration
        raise StopIteration("KafkaConsumer closed")

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None,
                  listener: object | None = None) -> None:
        """topics, or a regex pattern (a str, as kafka-python takes it), with an optional rebalance listener."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        if bool(topic_list) == (pattern is not None):
            raise IllegalStateError("You must choose only one way to configure your consumer: (1) subscribe to "
                                    "specific topics by name, (2) subscribe to topics matching a regex pattern")
        what: Any = re.compile(pattern) if pattern is not None else topic_list
        if self._group_id is None:  # no group: every partition of the topics, found again now and then
            self._self_assigned, self._self_assigned_at_s = what, -math.inf
            self._self_assign()
            return
        with _T:
            self._consumer.subscribe(what, listener=listener)

    def _self_assign(self) -> None:
        """Subscribed without a group_id: assigns every partition of the subscribed topics (the pattern's, from the
        cluster's topics), looked up again every SELF_ASSIGN_REFRESH_S."""
        what = self._self_assigned
        if what is None or _now() - self._self_assigned_at_s < SELF_ASSIGN_REFRESH_S:
            return
        self._self_assigned_at_s = _now()
        topics = [t for t in self.topics() if what.match(t)] if isinstance(what, re.Pattern) else what
        with _T:
            wanted = {TopicPartition(t, p.partition) for t in topics for p in self._consumer.partitions_for(t)}
            if wanted != self._consumer.assignment():
                self._consumer.assign(sorted(wanted))

    def subscription(self) -> set[str] | None:
        if self._self_assigned is not None:
            return {tp.topic for tp in self._consumer.assignment()}
        return self._consumer.subscription() or None

    def unsubscribe(self) -> None:
        self._self_assigned = None
        with _T:
            self._consumer.unsubscribe()
        self._iterator.clear()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        with _T:
            self._consumer.assign([TopicPartition(*tp) for tp in partitions])

    def assignment(self) -> set[TopicPartition]:
        return self._consumer.assignment()

    def seek(self, partition: TopicPartition, offset: int) -> None:
        if not isinstance(partition, tuple):
            raise TypeError("partition must be a TopicPartition namedtuple")
        if not isinstance(offset, int) or offset < 0:
            raise ValueError("Offset must be int >= 0")
        self._iterator = collections.deque(r for r in self._iterator
                                           if (r.topic, r.partition) != tuple(partition))
        with _T:
            self._consumer.seek(TopicPartition(*partition), offset)

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.seek_to_beginning(list(partitions) or None)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.seek_to_end(list(partitions) or None)

    def position(self, partition: TopicPartition, timeout_ms: int | None = None) -> int:
        with _T:
            return self._consumer.position(TopicPartition(*partition), _seconds(timeout_ms))

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark the last Fetch answer gave (None before one), no request."""
        with _T:
            high = self._consumer.watermarks(TopicPartition(*partition))[1]
        return None if high < 0 else high

    def pause(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.pause(list(partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.resume(list(partitions))

    def paused(self) -> set[TopicPartition]:
        return self._consumer.paused()

    def _need_group(self) -> None:
        if self._group_id is None:
            raise IllegalStateError("Requires group_id")

    def committed(self, partition: TopicPartition, metadata: bool = False,
                  timeout_ms: int | None = None) -> int | OffsetAndMetadata | None:
        """The group's committed offset of the partition (an OffsetAndMetadata with metadata=True), None if none."""
        self._need_group()
        if not isinstance(partition, tuple):
            raise TypeError("partition must be a TopicPartition namedtuple")
        with _T:
            got = self._consumer.committed([TopicPartition(*partition)], _seconds(timeout_ms))
        om = next(iter(got.values()), None)
        if om is None:
            return None
        return OffsetAndMetadata(om.offset, om.metadata or "", om.leader_epoch) if metadata else om.offset

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
               timeout_ms: int | None = None) -> None:
        """Commits the given offsets, or every position (the records handed out so far); waits for the answer."""
        self._need_group()
        cy = None if offsets is None else {TopicPartition(*tp): _cy_offset(om) for tp, om in offsets.items()}
        with _TC:
            self._consumer.commit(cy, _seconds(timeout_ms))

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
                     callback: Callable[[Any, Any], object] | None = None) -> concurrent.futures.Future[Any]:
        """Commits without waiting; callback(offsets, response_or_error) runs inside a later poll or commit."""
        self._need_group()
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        callback = callback or self._commit_callback

        def finished(error: BaseException | None, committed: Any) -> None:
            outcome = translated(error, commit=True) if error is not None else committed
            if callback is not None:
                callback(committed, outcome)
            if error is not None:
                done.set_exception(outcome)
            else:
                done.set_result(committed)

        cy = None if offsets is None else {TopicPartition(*tp): _cy_offset(om) for tp, om in offsets.items()}
        with _TC:
            self._consumer.commit_async(cy, callback=finished)
        return done

    def group_metadata(self) -> ConsumerGroupMetadata:
        if self._group_id is None:
            return ConsumerGroupMetadata(None)
        g = self._consumer.group_metadata()
        return ConsumerGroupMetadata(g.group_id, g.generation_id, g.member_id, g.group_instance_id)

    def beginning_offsets(self, partitions: Iterable[TopicPartition],
                          timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        with _T:
            return self._consumer.beginning_offsets([TopicPartition(*tp) for tp in partitions], _seconds(timeout_ms))

    def end_offsets(self, partitions: Iterable[TopicPartition],
                    timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        with _T:
            return self._consumer.end_offsets([TopicPartition(*tp) for tp in partitions], _seconds(timeout_ms))

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int],
                          timeout_ms: int | None = None) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"The target time for partition {tp} is {ts}. The target time cannot be negative.")
        with _T:
            got = self._consumer.offsets_for_times({TopicPartition(*tp): ts for tp, ts in timestamps.items()},
                                                   _seconds(timeout_ms))
        return {tp: None if info is None else OffsetAndTimestamp(info.offset, info.timestamp, info.leader_epoch)
                for tp, info in got.items()}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The topic's partition ids, None when the cluster does not know it."""
        with _T:
            infos = self._consumer.partitions_for(topic)
        return {p.partition for p in infos} or None

    def topics(self) -> set[str]:
        """Every topic the cluster has (internal ones left out)."""
        if self._admin is None:
            with _T:
                self._admin = Admin(self._admin_config)
        with _T:
            return set(self._admin.list_topics())

    def metrics(self, raw: bool = False) -> dict[str, dict[str, float]]:
        """{group: {name: value}} of the client-level metrics (kafka-python's shape; Java's groups and names, e.g.
        'consumer-fetch-manager-metrics' / 'records-consumed-total')."""
        return _grouped(self._consumer.metrics())

    def bootstrap_connected(self) -> bool:
        return not self._consumer.closed

    def close(self, autocommit: bool = True, timeout_ms: int | None = None) -> None:
        """Commits (with enable_auto_commit and autocommit), leaves the group, closes."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        timeout_s = 30.0 if timeout_ms is None else timeout_ms / 1000
        with _T:
            self._consumer.close(timeout_s)  # commits first with enable_auto_commit (also when autocommit=False)

    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


