"""confluent-kafka's Producer over cykafka's: owns `produce()` (librdkafka's arguments, BufferError at once when the
queue is full, never waiting: a record whose topic's metadata is not known yet is held, in order, until it is, or
fails after max.block.ms), the delivery reports (completed on cykafka's sender thread, served by `poll()` /
`flush()` on the caller's thread as `cb(err, Message)`), `len()`, `purge()` (cykafka's Producer.purge, plus the
records held for metadata) and confluent's transactional calls. Sending, batching and transactions are cykafka's
Producer's; this adds one small object per record with a callback (its report), and nothing per record without one
(len() counts them with the producer's completed_records).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cykafka import errors
from cykafka.compat.confluent_kafka import _config
from cykafka.compat.confluent_kafka._metadata import MetadataSource
from cykafka.compat.confluent_kafka._types import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    ClusterMetadata,
    Message,
    TopicPartition,
)
from cykafka.compat.confluent_kafka.error import KafkaError, KafkaException, error_from, exception_from
from cykafka.core import RecordFuture, RecordMetadata
from cykafka.ports.values import ConsumerGroupMetadata, OffsetAndMetadata
from cykafka.producer import Producer as _Producer
from cykafka.producer_seam import NeedsMemory, NeedsMetadata

DeliveryCallback = Callable[[KafkaError | None, Message], object]
_QUEUE_MAX_MESSAGES = 100000  # librdkafka's queue.buffering.max.messages default
_HELD_RECHECK_S = 0.005  # records waiting for their topic's metadata are looked at this often while poll() waits


class _Report:
    """One record's delivery report: filled on the sender thread, served by poll() on the caller's."""

    __slots__ = ("callback", "done_s", "error", "headers", "key", "metadata", "owner", "started_s", "topic", "value")

    def __init__(self, owner: Producer, callback: DeliveryCallback, topic: str, key: Any, value: Any,
                 headers: Any) -> None:
        self.owner = owner
        self.callback = callback
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.started_s = time.monotonic()
        self.error: errors.KafkaError | None = None
        self.metadata: RecordMetadata | None = None
        self.done_s = 0.0

    def __call__(self, error: errors.KafkaError | None, metadata: RecordMetadata | None) -> None:
        self.error = error
        self.metadata = metadata
        self.done_s = time.monotonic()
        owner = self.owner
        owner._reports.append(self)
        if owner._waiting:
            owner._wakeup.set()

    def message(self) -> Message:
        md = self.metadata
        error = None if self.error is None else error_from(self.error, timeout_code=KafkaError._MSG_TIMED_OUT)
        headers = _headers_list(self.headers)
        key, value = _encoded(self.key), _encoded(self.value)
        if md is None:
            return Message(self.topic, None, None, key, value, headers, error,
                           latency=self.done_s - self.started_s)
        timestamp = (TIMESTAMP_CREATE_TIME, md.timestamp_ms) if md.timestamp_ms >= 0 else (TIMESTAMP_NOT_AVAILABLE, 0)
        return Message(md.topic, md.partition, md.offset if md.offset >= 0 else None, key, value, headers,
                       error, timestamp, self.done_s - self.started_s)


# a produce() call's record held for its topic's metadata: topic, value, key, partition, timestamp_ms, headers, its
# report (None: no callback)
_Record = tuple[str, Any, Any, int | None, int | None, Any, "_Report | None"]


def _encoded(data: Any) -> Any:
    """What produce() took as the report shows it: a str as its UTF-8 bytes (confluent-kafka's)."""
    return data.encode() if isinstance(data, str) else data


def _headers_list(headers: Any) -> list[tuple[str, bytes | None]] | None:
    if not headers:
        return None
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(k, v.encode() if isinstance(v, str) else v) for k, v in items]


class Producer:
    """confluent_kafka.Producer's API over cykafka.Producer (docs/migrating-confluent-kafka.md)."""

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        config = _config.merged(conf, kwargs)
        _config.drop_other_clients(config, "producer")
        callback = None
        for key in ("on_delivery", "dr_msg_cb", "dr_cb", "on.delivery", "dr.msg.cb", "dr.cb"):
            if key in config:
                callback = config.pop(key)
        if callback is not None and not callable(callback):
            raise TypeError("expected on_delivery to be a callable")
        self._default_callback: DeliveryCallback | None = callback
        self._max_messages = _config.number(config, "queue.buffering.max.messages", _QUEUE_MAX_MESSAGES)
        if "queue.buffering.max.kbytes" in config:  # bytes of queued records: cykafka's buffer.memory bounds it
            config["buffer.memory"] = _config.number(config, "queue.buffering.max.kbytes", 0) * 1024
        if "enable.idempotence" not in config and "transactional.id" not in config:
            config["enable.idempotence"] = False  # librdkafka's default (Java's is true)
        config["error_cb"] = _config.error_callback(config.get("error_cb", config.pop("error.cb", None)))
        self._stop_forwarding = _config.forward_logs_while(self, config)
        try:
            with _config.as_kafka_exception():
                self._producer = _Producer(config)
        except BaseException:
            self._stop_forwarding()
            raise
        self._try_send = self._producer.try_send
        self._reports: collections.deque[_Report] = collections.deque()
        self._wakeup = threading.Event()
        self._waiting = False
        # len(): records held for metadata or given to cykafka's producer (`_queued`), less those it completed
        # (its completed_records, counted per batch: no Python work per record without a callback), plus the
        # reports not served yet. `_completed_seen`: completed_records when produce() last looked (a lower bound,
        # so `_queued - _completed_seen + len(_reports)` never says the queue has room when it has none)
        self._queued = 0
        self._completed_seen = 0
        self._metadata = MetadataSource(config)
        self._held: dict[str, collections.deque[_Record]] = {}  # per topic, records waiting for its metadata
        self._held_deadline_ms: dict[str, int] = {}  # when they fail (max.block.ms after the first, Clock port ms)
        self._held_lock = threading.RLock()
        self._held_failed = False  # a held record failed since the transaction began

    # -- produce and delivery reports ------------------------------------------------------------------------------

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
                on_delivery: DeliveryCallback | None = None, callback: DeliveryCallback | None = None,
                timestamp: int = 0, headers: Any = None) -> None:
        """Queues a record; its delivery report goes to on_delivery (or callback, or the config's on_delivery)
        from a later poll() or flush(). BufferError when queue.buffering.max.messages records (or
        queue.buffering.max.kbytes, as buffer.memory) are queued: call poll() and try again."""
        if self._queued - self._completed_seen + len(self._reports) >= self._max_messages:
            self._completed_seen = self._producer.completed_records
            if len(self) >= self._max_messages:
                raise BufferError("Local: Queue full")
        cb = on_delivery or callback or self._default_callback
        try:
            if self._held:
                self._release_held()
                if topic in self._held:  # behind the topic's records that wait for its metadata
                    with self._held_lock:
                        self._held[topic].append((topic, value, key, None if partition == -1 else partition,
                                                  timestamp or None, headers,
                                                  None if cb is None else _Report(self, cb, topic, key, value,
                                                                                  headers)))
                    self._queued += 1
                    return
            if cb is None and partition == -1 and not timestamp and headers is None:  # the common case: no kwargs
                report = None
                outcome = self._try_send(topic, value, key)
            else:
                report = None if cb is None else _Report(self, cb, topic, key, value, headers)
                outcome = self._try_send(topic, value, key, partition=None if partition == -1 else partition,
                                         timestamp_ms=timestamp or None, headers=headers, on_delivery=report)
            if outcome.__class__ is not RecordFuture:
                self._not_sent((topic, value, key, None if partition == -1 else partition, timestamp or None,
                                headers, report), outcome)
        except errors.BufferExhaustedError:
            raise BufferError("Local: Queue full") from None
        except errors.SerializationError:
            raise
        except errors.InvalidRecordError as e:
            if partition != -1 and self._partition_unknown(topic, partition):
                raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION, str(e))) from e
            raise exception_from(e) from e
        except errors.KafkaError as e:
            raise exception_from(e) from e
        self._queued += 1

    def _partition_unknown(self, topic: str, partition: int) -> bool:
        """Whether the topic's known metadata has no such partition (librdkafka: _UNKNOWN_PARTITION)."""
        try:
            count = self._producer.poll_metadata(topic, None, 2**62)  # never blocks; the deadline is not reached
        except errors.KafkaError:
            return False
        return count is not None and not 0 <= partition < count

    def _not_sent(self, record: _Record, outcome: object) -> None:
        """try_send's answer other than a future: memory full (BufferError), or the topic's metadata unknown
        yet: the record is held for _release_held(), as produce() never waits for metadata (librdkafka's)."""
        if isinstance(outcome, NeedsMemory):
            raise BufferError("Local: Queue full")
        assert isinstance(outcome, NeedsMetadata)
        topic, value, key, partition, timestamp_ms, headers, report = record
        if self._producer.poll_metadata(topic, partition, outcome.deadline_ms) is not None:  # known by now
            again = self._try_send(topic, value, key, partition=partition, timestamp_ms=timestamp_ms,
                                   headers=headers, on_delivery=report)
            if again.__class__ is RecordFuture:
                return
        with self._held_lock:
            self._held.setdefault(topic, collections.deque()).append(record)
            self._held_deadline_ms[topic] = outcome.deadline_ms

    def _release_held(self) -> None:
        """Appends the held records whose topic's metadata arrived, in order; fails them (their delivery report)
        when it cannot come (max.block.ms passed: _MSG_TIMED_OUT; the topic refused; a partition out of range)."""
        with self._held_lock:
            for topic in list(self._held):
                waiting, deadline_ms = self._held[topic], self._held_deadline_ms[topic]
                while waiting:
                    _, value, key, partition, timestamp_ms, headers, report = waiting[0]
                    try:
                        if self._producer.poll_metadata(topic, partition, deadline_ms) is None:
                            break
                        outcome = self._producer.try_send(topic, value, key, partition=partition,
                                                          timestamp_ms=timestamp_ms, headers=headers,
                                                          on_delivery=report)
                    except errors.KafkaError as e:
                        waiting.popleft()
                        self._held_failed = True  # a transaction holding it cannot commit
                        self._queued -= 1
                        if report is not None:
                            report(e, None)
                        continue
                    if not isinstance(outcome, RecordFuture):
                        break  # memory is full (or the partition not known yet): the next call tries again
                    waiting.popleft()
                if not waiting:
                    del self._held[topic], self._held_deadline_ms[topic]

    def poll(self, timeout: float | None = None) -> int:
        """Serves the delivery reports that are ready (each callback on this thread), waiting up to timeout seconds
        (None or negative: until one comes) for the first; returns how many it served."""
        if self._held:
            self._release_held()
        if not self._reports:
            if timeout == 0:  # poll(0) after each produce(): nothing to serve, nothing to wait for
                return 0
            self._wait(None if timeout is None or timeout < 0 else time.monotonic() + timeout,
                       lambda: bool(self._reports))
        return self._serve()

    def _wait(self, deadline_s: float | None, done: Callable[[], bool]) -> None:
        """Until done() (checked after each completion) or the deadline."""
        self._waiting = True
        try:
            while not done():
                left_s = None if deadline_s is None else deadline_s - time.monotonic()
                if left_s is not None and left_s <= 0:
                    return
                if self._held or self._queued > self._producer.completed_records:  # no report may come: soon
                    left_s = _HELD_RECHECK_S if left_s is None else min(left_s, _HELD_RECHECK_S)
                self._wakeup.wait(left_s)
                self._wakeup.clear()
                if self._held:
                    self._release_held()
        finally:
            self._waiting = False

    def _serve(self) -> int:
        reports = self._reports
        served = 0
        while reports:
            report = reports.popleft()
            served += 1
            report.callback(None if report.error is None else error_from(
                report.error, timeout_code=KafkaError._MSG_TIMED_OUT), report.message())
        return served

    def flush(self, timeout: float | None = None) -> int:
        """Sends everything queued and serves the delivery reports, up to timeout seconds (None or negative: no
        limit); returns how many records are still queued or unreported (0: all done)."""
        deadline_s = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while self._held and (deadline_s is None or time.monotonic() < deadline_s):
            self._wait(deadline_s, lambda: not self._held)
        self._producer.flush(None if deadline_s is None else max(0.0, deadline_s - time.monotonic()))
        self._serve()
        while len(self) and (deadline_s is None or time.monotonic() < deadline_s):
            # a completed batch's callbacks may still be running
            self._wait(deadline_s, lambda: bool(self._reports) or not len(self))
            self._serve()
        return len(self)

    def __len__(self) -> int:
        """Records queued or in flight, plus delivery reports not yet served."""
        return self._queued - self._producer.completed_records + len(self._reports)

    def __bool__(self) -> bool:
        return True

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """librdkafka's purge: in_queue, the records not sent yet (held for metadata, or queued) fail with
        _PURGE_QUEUE and are never sent; in_flight, the records sent and not answered fail with _PURGE_INFLIGHT
        (whether the broker appended them is not known). Their delivery reports are served by the next poll() or
        flush(). `blocking` is accepted: the purge is complete when this returns (cykafka's Producer.purge)."""
        if in_queue:
            self._drop_held(errors.RecordPurgedError("purged from the queue by purge(): never sent"))
        try:
            self._producer.purge(bool(in_queue), bool(in_flight))
        except errors.KafkaError as e:
            raise exception_from(e) from e

    def _drop_held(self, error: errors.KafkaError) -> None:
        """The records held for their topic's metadata fail with `error` (their reports queued)."""
        with self._held_lock:
            held, self._held = self._held, {}
            self._held_deadline_ms.clear()
        for waiting in held.values():
            for record in waiting:
                self._queued -= 1
                if record[-1] is not None:
                    record[-1](error, None)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """The cluster's brokers and topics (one topic when given), waiting up to timeout seconds."""
        return self._metadata.list_topics(topic, timeout)

    # -- transactions --------------------------------------------------------------------------------------------

    def _txn(self, call: Callable[..., None], *args: Any) -> None:
        if self._producer.config.transactional_id is None:
            raise KafkaException(KafkaError(KafkaError._NOT_CONFIGURED, "The Transactional API requires "
                                            "transactional.id to be configured"))
        try:
            call(*args)
        except errors.KafkaError as e:
            raise exception_from(e) from e

    def init_transactions(self, timeout: float | None = None) -> None:
        self._txn(self._producer.init_transactions, _seconds(timeout))

    def begin_transaction(self) -> None:
        self._txn(self._producer.begin_transaction)
        self._held_failed = False

    def send_offsets_to_transaction(self, positions: Iterable[TopicPartition], group_metadata: ConsumerGroupMetadata,
                                    timeout: float | None = None) -> None:
        """Adds the consumer's positions (offset: the next record to read) to the transaction."""
        offsets = {(tp.topic, tp.partition): OffsetAndMetadata(tp.offset, tp.metadata) for tp in positions}
        self._txn(self._producer.send_offsets_to_transaction, offsets, group_metadata, _seconds(timeout))

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flushes (serving delivery reports, appending records held for metadata) and commits; a record that
        failed makes it raise with txn_requires_abort()."""
        deadline_s = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        try:
            while self._held and (deadline_s is None or time.monotonic() < deadline_s):
                self._wait(deadline_s, lambda: not self._held)
            if self._held:
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "commit_transaction: records still wait "
                                                "for their topic's metadata", retriable=True))
            if self._held_failed:
                raise KafkaException(KafkaError(KafkaError._STATE, "a record of the transaction failed: "
                                                "abort_transaction()", txn_requires_abort=True))
            self._txn(self._producer.commit_transaction,
                      None if deadline_s is None else max(0.0, deadline_s - time.monotonic()))
        finally:
            self._serve()

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Aborts; records still held for metadata are dropped, reported with _PURGE_QUEUE."""
        self._drop_held(errors.RecordPurgedError("the transaction was aborted"))
        try:
            self._txn(self._producer.abort_transaction, _seconds(timeout))
        finally:
            self._held_failed = False
            self._serve()

    def set_sasl_credentials(self, username: str, password: str) -> None:
        raise KafkaException(KafkaError(KafkaError._NOT_IMPLEMENTED, "set_sasl_credentials: give sasl.username "
                                        "and sasl.password in the config"))

    def close(self, timeout: float | None = None) -> bool:
        """Flushes and closes (confluent-kafka 2.x's close()); True when everything was delivered."""
        left = self.flush(timeout)
        self._producer.close(_seconds(timeout))
        self._metadata.close()
        self._stop_forwarding()
        return left == 0

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _seconds(timeout: float | None) -> float | None:
    return None if timeout is None or timeout < 0 else timeout
