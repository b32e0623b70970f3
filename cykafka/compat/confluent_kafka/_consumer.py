"""confluent-kafka's Consumer over cykafka's: owns the one-record-at-a-time hand-out (`poll()` returns one Message
from a batch of cykafka's poll, `consume()` a list), the application's positions and librdkafka's offset store
(`enable.auto.offset.store`, `store_offsets`), librdkafka's auto commit of the stored offsets (cykafka's own is
turned off: it would commit records not yet handed out), partition-EOF and error events as Messages, the rebalance
callbacks `on_assign(consumer, [TopicPartition])` / `on_revoke` / `on_lost`, `on_commit`, and confluent's offset
calls. Fetching, groups and commits are cykafka's Consumer's.
"""

from __future__ import annotations

import collections
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cykafka import errors
from cykafka.compat.confluent_kafka import _config
from cykafka.compat.confluent_kafka._metadata import MetadataSource
from cykafka.compat.confluent_kafka._types import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    ClusterMetadata,
    Message,
    TopicPartition,
)
from cykafka.compat.confluent_kafka.error import KafkaError, KafkaException, error_from, exception_from
from cykafka.consumer import Consumer as _Consumer
from cykafka.core import ConsumerRecord, confluent_message, confluent_messages
from cykafka.ports import TopicPartition as _TP
from cykafka.ports.values import ConsumerGroupMetadata, OffsetAndMetadata

RebalanceCallback = Callable[["Consumer", list[TopicPartition]], object]
CommitCallback = Callable[[KafkaError | None, list[TopicPartition]], object]
_AUTO_COMMIT_INTERVAL_MS = 5000  # librdkafka's (and Java's) auto.commit.interval.ms default
_POLL_SLICE_S = 1.0  # an unbounded poll asks cykafka's in slices of this


class _Listener:
    """cykafka's rebalance listener calling confluent's callbacks with (consumer, [TopicPartition])."""

    def __init__(self, owner: Consumer, on_assign: RebalanceCallback | None, on_revoke: RebalanceCallback | None,
                 on_lost: RebalanceCallback | None) -> None:
        self.owner = owner
        self.on_assign = on_assign
        self.on_revoke = on_revoke
        self.on_lost = on_lost

    def on_partitions_assigned(self, partitions: set[_TP]) -> None:
        self.owner._rebalance("assign", self.on_assign, partitions)

    def on_partitions_revoked(self, partitions: set[_TP]) -> None:
        self.owner._rebalance("revoke", self.on_revoke, partitions)

    def on_partitions_lost(self, partitions: set[_TP]) -> None:
        self.owner._rebalance("lost", self.on_lost or self.on_revoke, partitions)


def _ours(tps: Iterable[_TP], offsets: Mapping[_TP, int] | None = None) -> list[TopicPartition]:
    return sorted(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID if offsets is None else offsets.get(
        tp, OFFSET_INVALID)) for tp in tps)


def _checked(partitions: object, call: str) -> list[TopicPartition]:
    if not isinstance(partitions, list | tuple) or not all(isinstance(p, TopicPartition) for p in partitions):
        raise TypeError(f"{call}: expected list of TopicPartition")
    return list(partitions)


class Consumer:
    """confluent_kafka.Consumer's API over cykafka.Consumer (docs/migrating-confluent-kafka.md)."""

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        config = _config.merged(conf, kwargs)
        _config.drop_other_clients(config, "consumer")
        self._auto_store = _config.flag(config, "enable.auto.offset.store", True)
        self._auto_commit = _config.flag(config, "enable.auto.commit", True) and "group.id" in config
        self._auto_commit_interval_s = _config.number(config, "auto.commit.interval.ms", _AUTO_COMMIT_INTERVAL_MS) \
            / 1000
        self._on_commit: CommitCallback | None = config.pop("on_commit", config.pop("offset_commit_cb", None))
        eof = _config.flag(config, "enable.partition.eof", False)
        config["enable.auto.commit"] = False  # this layer commits what it handed out (cykafka's would commit more)
        config.setdefault("isolation.level", "read_committed")  # librdkafka's default (Java's: read_uncommitted)
        config["enable.partition.eof"] = eof
        if eof:
            config["partition_eof_cb"] = self._on_eof
        config["error_cb"] = _config.error_callback(config.get("error_cb", config.pop("error.cb", None)))
        self._stop_forwarding = _config.forward_logs_while(self, config)
        try:
            with _config.as_kafka_exception():
                self._consumer = _Consumer(config)
        except BaseException:
            self._stop_forwarding()
            raise
        self._group = config.get("group.id")
        self._batch: list[ConsumerRecord] = []
        self._next = 0
        self._events: collections.deque[Message] = collections.deque()
        self._positions: dict[tuple[str, int], int] = {}  # the next offset per partition after what was handed out
        self._stored: dict[tuple[str, int], int] = self._positions if self._auto_store else {}
        self._committed: dict[tuple[str, int], int] = {}  # what was last committed from the store
        self._next_auto_commit_s = time.monotonic() + self._auto_commit_interval_s
        self._commit_reports: collections.deque[tuple[KafkaError | None, list[TopicPartition]]] = collections.deque()
        self._rebalancing: str | None = None
        self._callback_error: BaseException | None = None
        self._closed = False
        self._closing = False
        self._metadata = MetadataSource(config)

    # -- poll ----------------------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next record as a Message, or an event (partition EOF, an error) as a Message whose error() is set;
        None when nothing came within timeout seconds (None or negative: no limit)."""
        self._check_open()
        return self._next_message(timeout)

    def _next_message(self, timeout: float | None) -> Message | None:
        if self._next < len(self._batch):
            record = self._batch[self._next]
            self._next += 1
            self._positions[record.topic, record.partition] = record.offset + 1
            return confluent_message(record)
        if self._events:
            return self._events.popleft()
        deadline_s = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while True:
            self._fill(deadline_s)
            if self._next < len(self._batch):
                return self._next_message(0)
            if self._events:
                return self._events.popleft()
            if deadline_s is not None and time.monotonic() >= deadline_s:
                return None

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Up to num_messages Messages (records and events), waiting up to timeout seconds (negative: no limit) for
        that many."""
        self._check_open()
        if not isinstance(num_messages, int) or not 0 <= num_messages <= 1000000:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        deadline_s = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        out: list[Message] = []
        positions = self._positions
        while len(out) < num_messages:
            if self._next < len(self._batch):
                take = confluent_messages(self._batch, self._next, self._next + num_messages - len(out), positions)
                self._next += len(take)
                out += take
                continue
            while self._events and len(out) < num_messages:
                out.append(self._events.popleft())
            if len(out) >= num_messages or (deadline_s is not None and time.monotonic() >= deadline_s):
                break
            self._fill(deadline_s)
        return out

    def _fill(self, deadline_s: float | None) -> None:
        """One cykafka poll into the batch (its errors as events), with the auto commit and callbacks due."""
        self._maybe_auto_commit()
        self._serve_commit_reports()
        left_s = _POLL_SLICE_S if deadline_s is None else max(0.0, deadline_s - time.monotonic())
        try:
            records = self._consumer.poll(left_s)
        except errors.IllegalStateError as e:
            if "closed" in str(e):
                raise RuntimeError("Consumer closed") from e
            raise exception_from(e) from e
        except errors.KafkaError as e:
            if self._callback_error is None:  # one event per partition it names (librdkafka's), else one
                value = error_from(e)
                where = getattr(e, "partitions", None) or [(None, None)]
                self._events.extend(Message(topic, partition, error=value) for topic, partition in where)
            records = []
        finally:
            self._raise_callback_error()
            self._serve_commit_reports()
        self._batch = records
        self._next = 0

    def _raise_callback_error(self) -> None:
        error, self._callback_error = self._callback_error, None
        if error is not None:
            raise error

    def _on_eof(self, tp: _TP, offset: int) -> None:
        self._events.append(Message(tp.topic, tp.partition, offset, error=KafkaError(
            KafkaError._PARTITION_EOF, f"Fetch from broker reached end of partition at offset {offset}")))

    def _drop_buffered(self, keep: Callable[[str, int], bool], rewind: bool) -> None:
        """Drops records not yet handed out of partitions keep() refuses; rewind: seeks them back to the first
        dropped one (pause: they come again after resume)."""
        rest = self._batch[self._next:]
        kept = [r for r in rest if keep(r.topic, r.partition)]
        if len(kept) != len(rest) and rewind:
            first: dict[_TP, int] = {}
            for r in rest:
                if not keep(r.topic, r.partition):
                    first.setdefault(_TP(r.topic, r.partition), r.offset)
            for tp, offset in first.items():
                self._consumer.seek(tp, offset)
        self._batch, self._next = kept, 0
        self._events = collections.deque(m for m in self._events if m.topic() is None or keep(
            m.topic() or "", m.partition() or 0))

    # -- subscription and assignment ---------------------------------------------------------------------------

    def subscribe(self, topics: list[str], on_assign: RebalanceCallback | None = None,
                  on_revoke: RebalanceCallback | None = None, on_lost: RebalanceCallback | None = None) -> None:
        """Joins group.id reading these topics ("^regex" entries: every topic the regex matches); the callbacks
        run inside poll() with (consumer, [TopicPartition])."""
        self._check_open()
        if not isinstance(topics, list | tuple) or not all(isinstance(t, str) for t in topics):
            raise TypeError("expected list of topic unicode strings")
        for name, cb in (("on_assign", on_assign), ("on_revoke", on_revoke), ("on_lost", on_lost)):
            if cb is not None and not callable(cb):
                raise TypeError(f"expected {name} to be callable")
        listener = _Listener(self, on_assign, on_revoke, on_lost)
        patterns = [t[1:] for t in topics if t.startswith("^")]
        target: list[str] | re.Pattern[str] = list(topics)
        if patterns:
            target = re.compile("|".join([f"(?:{p}).*" for p in patterns] + [re.escape(t) for t in topics
                                                                              if not t.startswith("^")]))
        self._call(self._consumer.subscribe, target, listener)

    def unsubscribe(self) -> None:
        self._check_open()
        self._call(self._consumer.unsubscribe)
        self._drop_buffered(lambda t, p: False, rewind=False)

    def _rebalance(self, kind: str, callback: RebalanceCallback | None, partitions: set[_TP]) -> None:
        if kind != "assign" and self._auto_commit and not self._closing and kind != "lost":
            self._commit_stored([(tp.topic, tp.partition) for tp in partitions], asynchronous=False,
                                quiet=True)
        self._rebalancing = kind
        try:
            if callback is not None:
                callback(self, _ours(partitions))
        except BaseException as e:  # raised by the poll() that ran the rebalance, as confluent-kafka does
            self._callback_error = e
        finally:
            self._rebalancing = None
        if kind != "assign":
            for tp in partitions:
                key = (tp.topic, tp.partition)
                self._positions.pop(key, None)
                self._stored.pop(key, None)
                self._committed.pop(key, None)

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Reads exactly these partitions (outside a group's rebalance); an offset set on one is where it starts
        (OFFSET_BEGINNING, OFFSET_END, or an offset), else the committed offset, else auto.offset.reset. Inside
        on_assign: the group's partitions, with those offsets."""
        self._check_open()
        tps = _checked(partitions, "assign")
        if self._rebalancing is None:
            keep = {(tp.topic, tp.partition) for tp in tps}
            self._drop_buffered(lambda t, p: (t, p) in keep, rewind=False)
            self._call(self._consumer.assign, [_TP(tp.topic, tp.partition) for tp in tps])
        self._seek_to_offsets(tps)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Adds these partitions to the assignment (offsets as assign())."""
        self._check_open()
        tps = _checked(partitions, "incremental_assign")
        if self._rebalancing is None:
            current = self._consumer.assignment()
            self._call(self._consumer.assign, [*current, *(_TP(tp.topic, tp.partition) for tp in tps
                                                           if _TP(tp.topic, tp.partition) not in current)])
        self._seek_to_offsets(tps)

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        gone = {(tp.topic, tp.partition) for tp in _checked(partitions, "incremental_unassign")}
        if self._rebalancing is None:
            self._drop_buffered(lambda t, p: (t, p) not in gone, rewind=False)
            self._call(self._consumer.assign, [tp for tp in self._consumer.assignment() if tp not in gone])

    def unassign(self) -> None:
        self._check_open()
        if self._rebalancing is None:
            self._drop_buffered(lambda t, p: False, rewind=False)
            self._call(self._consumer.assign, [])

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        return _ours(self._consumer.assignment())

    def _seek_to_offsets(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            if tp.offset >= 0 or tp.offset in (OFFSET_BEGINNING, OFFSET_END):
                self._seek(tp)

    # -- positions -----------------------------------------------------------------------------------------------

    def seek(self, partition: TopicPartition) -> None:
        """The next record of partition is at partition.offset (OFFSET_BEGINNING, OFFSET_END or an offset)."""
        self._check_open()
        if not isinstance(partition, TopicPartition):
            raise TypeError("expected TopicPartition")
        key = (partition.topic, partition.partition)
        self._drop_buffered(lambda t, p: (t, p) != key, rewind=False)
        self._seek(partition)

    def _seek(self, tp: TopicPartition) -> None:
        ours = _TP(tp.topic, tp.partition)
        if tp.offset == OFFSET_BEGINNING:
            self._call(self._consumer.seek_to_beginning, [ours])
        elif tp.offset == OFFSET_END:
            self._call(self._consumer.seek_to_end, [ours])
        elif tp.offset >= 0:
            self._call(self._consumer.seek, ours, tp.offset)
        else:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, f"seek: invalid offset {tp.offset} for "
                                            f"{tp.topic} [{tp.partition}]"))

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """For each partition, the offset after the last record handed out (OFFSET_INVALID before any)."""
        self._check_open()
        return [TopicPartition(tp.topic, tp.partition, self._positions.get((tp.topic, tp.partition), OFFSET_INVALID))
                for tp in _checked(partitions, "position")]

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stops handing out these partitions' records (the ones already fetched come again after resume())."""
        self._check_open()
        gone = {(tp.topic, tp.partition) for tp in _checked(partitions, "pause")}
        self._drop_buffered(lambda t, p: (t, p) not in gone, rewind=True)
        self._call(self._consumer.pause, [_TP(*key) for key in gone])

    def resume(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self._call(self._consumer.resume, [_TP(tp.topic, tp.partition) for tp in _checked(partitions, "resume")])

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        """(low, high) offsets of the partition, asked of its leader (also with cached=True)."""
        self._check_open()
        tp = _TP(partition.topic, partition.partition)
        wait_s = None if timeout is None or timeout < 0 else timeout
        low = self._call(self._consumer.beginning_offsets, [tp], wait_s)[tp]
        high = self._call(self._consumer.end_offsets, [tp], wait_s)[tp]
        return low, high

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float | None = None,
                          ) -> list[TopicPartition]:
        """For each partition (its offset: a timestamp in ms), the first offset whose timestamp is at or after it;
        -1 (OFFSET_END) when none is."""
        self._check_open()
        tps = _checked(partitions, "offsets_for_times")
        wait_s = None if timeout is None or timeout < 0 else timeout
        found = self._call(self._consumer.offsets_for_times, {_TP(tp.topic, tp.partition): tp.offset for tp in tps},
                           wait_s)
        out = []
        for tp in tps:
            info = found.get(_TP(tp.topic, tp.partition))
            out.append(TopicPartition(tp.topic, tp.partition, OFFSET_END if info is None else info.offset))
        return out

    # -- offsets and commits -------------------------------------------------------------------------------------

    def store_offsets(self, message: Message | None = None, offsets: list[TopicPartition] | None = None) -> None:
        """Stores the offset after message (or each partition's offset) for the next commit (enable.auto.commit or
        commit()); only with enable.auto.offset.store=false."""
        self._check_open()
        if self._auto_store:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "store_offsets() requires "
                                            "enable.auto.offset.store=false"))
        if (message is None) == (offsets is None):
            raise ValueError("expected either message or offsets")
        if message is not None:
            self._stored[message.topic() or "", message.partition() or 0] = (message.offset() or 0) + 1
        else:
            for tp in _checked(offsets, "store_offsets"):
                self._stored[tp.topic, tp.partition] = tp.offset

    def commit(self, message: Message | None = None, offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> list[TopicPartition] | None:
        """Commits the offset after message, the given offsets, or (neither) the stored offsets not yet committed;
        synchronous: waits and returns the committed partitions, raising KafkaException (_NO_OFFSET: nothing to
        commit); asynchronous: on_commit gets the outcome in a later poll()."""
        self._check_open()
        if message is not None and offsets is not None:
            raise ValueError("Commit takes either message or offsets, not both")
        if message is not None:
            if message.error() is not None:
                raise KafkaException(message.error())
            return self._commit({_TP(message.topic() or "", message.partition() or 0): OffsetAndMetadata(
                (message.offset() or 0) + 1)}, asynchronous)
        if offsets is not None:
            return self._commit({_TP(tp.topic, tp.partition): OffsetAndMetadata(tp.offset, tp.metadata)
                                 for tp in _checked(offsets, "commit")}, asynchronous)
        return self._commit_stored(None, asynchronous)

    def _commit_stored(self, only: list[tuple[str, int]] | None, asynchronous: bool,
                       quiet: bool = False) -> list[TopicPartition] | None:
        keys = self._stored.keys() if only is None else [k for k in only if k in self._stored]
        due = {key: self._stored[key] for key in keys if self._committed.get(key) != self._stored[key]}
        if not due:
            if quiet:
                return None
            error = KafkaError(KafkaError._NO_OFFSET, "Local: No offset stored")
            if asynchronous:
                self._commit_reports.append((error, []))
                return None
            raise KafkaException(error)
        return self._commit({_TP(*key): OffsetAndMetadata(offset) for key, offset in due.items()}, asynchronous,
                            quiet=quiet, on_success=lambda: self._committed.update(due))

    def _commit(self, offsets: dict[_TP, OffsetAndMetadata], asynchronous: bool, quiet: bool = False,
                on_success: Callable[[], object] | None = None) -> list[TopicPartition] | None:
        """Commits; the outcome goes to on_commit (from a later poll()); on_success runs once the group took the
        offsets (the store counts them as committed then, so a failed commit is tried again). quiet: a failure is
        only reported to on_commit (an auto commit's), not raised."""
        done = sorted(TopicPartition(tp.topic, tp.partition, o.offset, o.metadata) for tp, o in offsets.items())
        if asynchronous:
            def report(error: errors.KafkaError | None, _: object) -> None:
                if error is None and on_success is not None:
                    on_success()
                self._commit_reports.append((None if error is None else error_from(error), done))
            self._call(self._consumer.commit_async, offsets, report)
            return None
        try:
            self._consumer.commit(offsets)
        except errors.KafkaError as e:
            self._commit_reports.append((error_from(e), done))
            if quiet:
                return None
            raise exception_from(e) from e
        if on_success is not None:
            on_success()
        self._commit_reports.append((None, done))
        return done

    def _serve_commit_reports(self) -> None:
        while self._commit_reports:
            error, partitions = self._commit_reports.popleft()
            if self._on_commit is not None:
                self._on_commit(error, partitions)

    def _maybe_auto_commit(self) -> None:
        if self._auto_commit and time.monotonic() >= self._next_auto_commit_s:
            self._next_auto_commit_s = time.monotonic() + self._auto_commit_interval_s
            self._commit_stored(None, asynchronous=True, quiet=True)

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """The group's committed offsets (OFFSET_INVALID where none is)."""
        self._check_open()
        tps = _checked(partitions, "committed")
        wait_s = None if timeout is None or timeout < 0 else timeout
        found = self._call(self._consumer.committed, [_TP(tp.topic, tp.partition) for tp in tps], wait_s)
        out = []
        for tp in tps:
            o = found.get(_TP(tp.topic, tp.partition))
            out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID if o is None else o.offset,
                                      None if o is None else o.metadata))
        return out

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """For Producer.send_offsets_to_transaction."""
        self._check_open()
        return self._call(self._consumer.group_metadata)  # type: ignore[no-any-return]

    def memberid(self) -> str | None:
        self._check_open()
        return self.consumer_group_metadata().member_id or None

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        self._check_open()
        return self._metadata.list_topics(topic, timeout)

    def close(self) -> None:
        """Commits the stored offsets (enable.auto.commit), leaves the group (on_revoke runs) and closes."""
        if self._closed or self._closing:
            return
        self._closing = True  # on_revoke may still use the consumer while it leaves the group
        try:
            if self._auto_commit:
                self._commit_stored(None, asynchronous=False, quiet=True)
        finally:
            try:
                self._consumer.close()
            finally:
                self._closed = True
                self._metadata.close()
                self._stop_forwarding()
        self._serve_commit_reports()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @staticmethod
    def _call(call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except errors.KafkaError as e:
            raise exception_from(e) from e
