"""The public Producer and the composition root: config -> pool, accumulator, compressor, transport, metadata, Sender,
and with idempotence (the default) the core TransactionManager and the transactional request queue.

Tests inject a ManualClock, the in-memory fake cluster or a static metadata source through the same constructor, in
one keyword no config key can collide with (`Producer(config, ports=Ports(transport=..., clock=...))`), and may run the
Sender by hand (`Ports(start_sender=False)`, then `producer.sender.run_once()`).

Fork safety: threads, sockets and locks do not survive fork(). Every live Producer is in a WeakSet; an
`os.register_at_fork(after_in_child=...)` hook gives each one in the child a fresh lock, pool, accumulator, sender
thread and (when the producer built them) a fresh transport and metadata. Batches queued before the fork are dropped
in the child without delivery or callbacks: the parent still owns and delivers them (their futures, as copied into
the child, never complete there). The child closes only its own copies of the inherited sockets; the parent keeps
working. close() in a child before that hook ran (an at-fork hook registered earlier, such as a client cache's, closes
it; or a fork skipped Python's hooks) does that and no more: it never stops, flushes or disconnects the parent's.

Unclosed producers: the sender thread holds no strong reference to its Producer, so a dropped one is finalized
(ResourceWarning; its thread delivers what is queued within UNCLOSED_TIMEOUT_S, then closes the sockets), and an
atexit hook closes the live ones within the same budget. Either way undelivered records are counted in a WARNING.
"""

from __future__ import annotations

import atexit
import dataclasses
import itertools
import logging
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from cykafka.adapters.clock import SystemClock, core_clock
from cykafka.adapters.compression import compressor_for
from cykafka.completion import Completion
from cykafka.config import ProducerConfig
from cykafka.core import (
    BatchResult,
    BufferPool,
    ClientLock,
    RecordAccumulator,
    RecordFuture,
    SendPath,
    TransactionManager,
    TransactionState,
    checked_headers,
    estimate_size_upper_bound,
    partition_for_key,
)
from cykafka.errors import (
    BufferExhaustedError,
    ConfigError,
    InvalidRecordError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
    TransactionStateError,
)
from cykafka.metrics import MetricsSnapshot, ProducerMetrics, StatsReporter
from cykafka.ports import CODEC_NAMES, Clock, MetadataSource, PartitionInfo, Ports, Transport
from cykafka.ports.values import (
    ConsumerGroupMetadata,
    OffsetAndMetadata,
    TransactionInfo,
    checked_offsets,
    checked_seconds,
)
from cykafka.producer_seam import AppendSeam, MemoryWaiter, NeedsMemory, NeedsMetadata, ThreadWaiter
from cykafka.requests.coordinators import Coordinators
from cykafka.sender import Sender, SenderThread, undelivered_records
from cykafka.serialization import (
    MessageField,
    SerializationContext,
    context_headers,
    make_serializer,
    takes_context,
    validate_topic,
)
from cykafka.telemetry import TelemetrySource, weak_metrics
from cykafka.transactions import TransactionalResult, TransactionRequests

log = logging.getLogger("cykafka.producer")
# what an unclosed producer gets to deliver its queued records when it is garbage-collected or alive at interpreter
# exit (one budget shared by all producers at exit); what is left then fails, and the count is logged (WARNING)
UNCLOSED_TIMEOUT_S = 10.0
_AppendResult = tuple[RecordFuture, bool, bool, int]
_Prepared = tuple[str, int, int, Any, Any, Any, Any]  # _append_slow's arguments
T = TypeVar("T")
_TIMESTAMP_END_MS = 1 << 63  # timestamps are int64 on the wire
_client_ids = itertools.count(1)
_PORT_NAMES = frozenset(f.name for f in dataclasses.fields(Ports))  # Producer(transport=...) names Ports
_BATCH_CHUNK_RECORDS = 1024  # send_batch appends this many per lock hold, then lets the sender thread run


@dataclass(slots=True)
class ProducerRecord:
    """A record as interceptors see it; on_send may return a changed copy."""

    topic: str
    value: Any = None
    key: Any = None
    partition: int | None = None
    timestamp_ms: int | None = None
    headers: Any = None


class Producer(SendPath, AppendSeam):
    """A thread-safe Kafka producer with Java's semantics; config keys: docs/config.md.

    send() queues a record and returns a RecordFuture whose result(timeout) is its RecordMetadata or raises its
    KafkaError; its on_delivery(err, metadata) callback runs on the sender thread. send_batch() queues many records
    in one call. flush() waits for everything queued; close() flushes and stops (also on leaving a `with` block).
    send() and send_batch() take the same keys, values and headers: a key or value is bytes-like (bytes, bytearray,
    memoryview or any C-contiguous buffer of bytes, format B, b or c), a str (UTF-8) or None (or what a configured
    serializer takes); headers are None, a dict or a list of (key, value) pairs (the key a str, the value
    bytes-like, str or None); a partition is an int (not a bool) in range, also from a partitioner.class; a timestamp
    an int in [0, 2**63). Anything else raises SerializationError / InvalidRecordError naming the argument, with
    nothing of the call queued.
    """

    # two overloads so that `Producer(**config)` with a dict[str, object] type-checks: it cannot match `ports`
    @overload
    def __init__(self, config: Mapping[str, object] | None = None, /, *, ports: Ports, **kwargs: object) -> None: ...

    @overload
    def __init__(self, config: Mapping[str, object] | None = None, /, **kwargs: object) -> None: ...

    def __init__(self, config: Mapping[str, object] | None = None, /, *, ports: object = None,
                 **kwargs: object) -> None:
        """config: a dict of Kafka config keys (`{"bootstrap.servers": ..., "linger.ms": 5}`), and/or the same keys as
        keyword arguments with underscores (`linger_ms=5`); unknown keys and invalid values raise ConfigError.
        ports: tests only, the adapters to use instead of the production ones (cykafka.ports.Ports)."""
        ports = Ports.of(ports)
        stray = sorted(_PORT_NAMES.intersection(kwargs))
        if stray:  # the keywords before ports= existed
            raise ConfigError(f"{stray[0]}= is not a config key: a test passes it as ports=Ports({stray[0]}=...) "
                              f"(cykafka.ports.Ports)")
        cfg = ProducerConfig.parse(config, **kwargs)
        if not cfg.client_id:
            cfg = cfg.replace(client_id=f"cykafka-producer-{next(_client_ids)}")
        self.config = cfg
        self._clock: Clock = ports.clock or SystemClock()
        self._lock = ClientLock()
        self._closed = False
        self._metadata_watchers: set[MemoryWaiter] = set()  # the waits for metadata (producer_seam.metadata_watch)
        self._never_block_thread: int | None = None  # refuse_blocking_on
        self._metrics = ProducerMetrics()
        self._key_serializer = make_serializer(cfg.key_serializer, "key")
        self._value_serializer = make_serializer(cfg.value_serializer, "value")
        # a serializer taking a context may append headers (a schema id): it is given a list of the record's own
        self._serializer_headers = any(callable(spec) and takes_context(spec, f"{name}.serializer") for name, spec
                                       in (("key", cfg.key_serializer), ("value", cfg.value_serializer)))
        self._interceptors = cfg.interceptor_classes
        level = {"gzip": cfg.compression_gzip_level, "lz4": cfg.compression_lz4_level,
                 "zstd": cfg.compression_zstd_level}.get(cfg.compression_type)
        self._compressor = compressor_for(cfg.compression_type, level)
        self._owns_transport = ports.transport is None
        self._owns_metadata = ports.metadata is None
        self._start_sender = ports.start_sender
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._build_runtime(ports.transport, ports.metadata)
        _live_producers.add(self)
        self._stats = StatsReporter.start_if_configured(cfg.statistics_interval_ms, cfg.stats_cb, self,
                                                        f"cykafka-stats-{cfg.client_id}")

    def _build_runtime(self, transport: Transport | None, metadata: MetadataSource | None) -> None:
        """Pool, accumulator, transport, metadata, Sender and its thread: at construction and again after a fork."""
        cfg = self.config
        self._runtime_pid = os.getpid()  # the process these threads, sockets and locks belong to
        self._pool: BufferPool[Any] = BufferPool(  # waiters: threading.Condition, cykafka.aio's loop waiters
            cfg.buffer_memory, cfg.batch_size)
        self._accumulator = RecordAccumulator(
            cfg.batch_size, self._pool, codec=CODEC_NAMES[cfg.compression_type], compressor=self._compressor,
            linger_ms=cfg.linger_ms, retry_backoff_ms=cfg.retry_backoff_ms,
            retry_backoff_max_ms=cfg.retry_backoff_max_ms, delivery_timeout_ms=cfg.delivery_timeout_ms,
            completion_factory=Completion,
            adaptive_partitioning=cfg.partitioner_adaptive_partitioning_enable,
            partition_availability_timeout_ms=cfg.partitioner_availability_timeout_ms,
        )
        if transport is None:
            from cykafka.adapters.socket_transport import SocketTransport

            transport = SocketTransport(cfg.connection_settings())
        self._transport = transport
        if metadata is None:
            from cykafka.adapters.broker_metadata import BrokerMetadata

            metadata = BrokerMetadata(cfg.metadata_settings(), transport)
        self._metadata = metadata
        self._txn: TransactionManager | None = None
        self._txn_requests: TransactionRequests | None = None
        if cfg.enable_idempotence:
            self._txn = TransactionManager(cfg.transactional_id, cfg.transaction_timeout_ms)
            self._accumulator.set_transaction_manager(self._txn)
            self._txn_requests = TransactionRequests(self._txn, cfg, Coordinators(transport, cfg.retry_backoff_ms),
                                                    transport.finalized_features)
        # the sender thread holds these callbacks weakly bound: a producer nobody references can be finalized
        self.sender = Sender(cfg, self._accumulator, transport, metadata, self._clock, self._lock, self._metrics,
                             on_batch_done=_weakly_bound(self, "_on_batch_done") if self._interceptors else None,
                             memory_freed=_weakly_bound(self, "_memory_freed"),
                             loop_started=_weakly_bound(self, "_sender_loop_started"),
                             metadata_changed=_weakly_bound(self, "_metadata_changed"),
                             transactions=self._txn_requests,
                             waiting_for_responses=_weakly_bound(self, "_sender_waits_for_responses"),
                             telemetry=TelemetrySource(
                                 transport, "producer", weak_metrics(self), self._clock.wall_ms, cfg.retry_backoff_ms,
                                 {"client_id": cfg.client_id}) if cfg.enable_metrics_push else None)
        fast = not (self._interceptors or cfg.partitioner_class or cfg.key_serializer not in (None, "bytes")
                    or cfg.value_serializer not in (None, "bytes"))
        self._columnar_fast = fast
        self._init_send_path(self._accumulator, self._lock, core_clock(self._clock), transport.wakeup, fast,
                             cfg.partitioner_ignore_keys, min(cfg.max_request_size, cfg.buffer_memory),
                             metadata.snapshot(),
                             self._txn if cfg.transactional_id is not None else None)  # send() checks its state
        self._thread: SenderThread | None = None
        if self._start_sender:
            self._thread = SenderThread(self.sender, name=f"cykafka-sender-{cfg.client_id}")
            self._thread.start()
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._thread is not None or self._owns_transport:  # holds a thread or sockets: close it when dropped
            self._finalizer = weakref.finalize(self, _finalize_unclosed, cfg.client_id, self._thread,
                                               transport if self._owns_transport else None)
            self._finalizer.atexit = False  # _close_at_exit closes the live ones

    def _after_fork_in_child(self) -> None:
        """Runs in a forked child: drops the parent's batches undelivered, rebuilds everything a fork breaks."""
        if self._closed or self._runtime_pid == os.getpid():
            return
        self._abandon_inherited()
        self._lock = ClientLock()
        self._metrics = ProducerMetrics()
        self._build_runtime(None if self._owns_transport else self._transport,
                            None if self._owns_metadata else self._metadata)

    def _abandon_inherited(self) -> None:
        """In a forked child: closes this process's copies of the parent's sockets and nothing else (no shutdown,
        no epoll_ctl on the epoll set the two processes share): the parent's connections stay intact."""
        abandon = getattr(self._transport, "abandon_after_fork", None)
        if self._owns_transport and abandon is not None:
            abandon()

    # -- sending: SendPath.send (compiled) handles the common case and calls these for everything else -------------

    if TYPE_CHECKING:  # SendPath.try_send (compiled), typed with the seam's answers
        def try_send(self, topic: str, value: object = None, key: object = None, *, partition: int | None = None,
                     timestamp_ms: int | None = None, headers: object = None,
                     on_delivery: Callable[[KafkaError | None, Any], object] | None = None,
                     ) -> RecordFuture | NeedsMetadata | NeedsMemory: ...

    def _send_slow(self, topic: Any, value: Any, key: Any, partition: Any, timestamp_ms: Any, headers: Any,
                   on_delivery: Any, block: bool = True) -> RecordFuture | NeedsMetadata | NeedsMemory:
        """send() (block) and try_send() with interceptors, serializers, metadata waits and every argument check and
        error message."""
        if self._closed:
            raise ProducerClosedError("send() after close(): the producer is closed")
        deadline_ms = self._clock.monotonic_ms() + self.config.max_block_ms  # the metadata and memory waits share it
        if not block and self._interceptors:  # interceptors see a record once: its metadata before they run
            validate_topic(topic)
            if self.poll_metadata(topic, None, deadline_ms) is None:
                return NeedsMetadata(topic, None, deadline_ms)
        prepared = self._prepare(topic, value, key, partition, timestamp_ms, headers, on_delivery, deadline_ms, block)
        if isinstance(prepared, NeedsMetadata):
            return prepared
        return self._append_slow(*prepared, deadline_ms, block)

    def _prepare(self, topic: Any, value: Any, key: Any, partition: Any, timestamp_ms: Any, headers: Any,
                 on_delivery: Any, deadline_ms: int | None = None, block: bool = True) -> _Prepared | NeedsMetadata:
        """send()'s work before the append, nothing queued: interceptors, argument checks, serializers, the metadata
        wait (until deadline_ms, default max.block.ms from now; not block: NeedsMetadata instead) and the partition
        choice. Returns _append_slow's arguments."""
        if self._interceptors:
            record = self._intercept(ProducerRecord(topic, value, key, partition, timestamp_ms, headers))
            topic, value, key, partition, timestamp_ms, headers = (
                record.topic, record.value, record.key, record.partition, record.timestamp_ms, record.headers)
        validate_topic(topic)
        if self._serializer_headers:
            headers = context_headers(headers)
            key_bytes = self._key_serializer(key, SerializationContext(topic, MessageField.KEY, headers))
            value_bytes = self._value_serializer(value, SerializationContext(topic, MessageField.VALUE, headers))
        else:  # no serializer takes a context: none is made
            key_bytes, value_bytes = self._key_serializer(key, None), self._value_serializer(value, None)
        header_tuple = checked_headers(headers)
        if timestamp_ms is None:
            timestamp_ms = self._clock.wall_ms()
        elif not _is_int(timestamp_ms) or not 0 <= timestamp_ms < _TIMESTAMP_END_MS:
            raise InvalidRecordError(f"timestamp_ms must be a non-negative int below 2**63 or None, got "
                                     f"{timestamp_ms!r:.40}")
        if on_delivery is not None and not callable(on_delivery):
            raise InvalidRecordError(f"on_delivery must be callable, got {type(on_delivery).__name__}")
        if partition is not None and not _is_int(partition):
            raise InvalidRecordError(f"partition must be an int or None, got {partition!r:.40}")
        size_bytes = estimate_size_upper_bound(key_bytes, value_bytes, header_tuple)
        if size_bytes > self.config.max_request_size:
            raise RecordTooLargeError(f"the record is {size_bytes} bytes when serialized, larger than "
                                      f"max.request.size ({self.config.max_request_size})")
        if size_bytes > self.config.buffer_memory:
            raise RecordTooLargeError(f"the record is {size_bytes} bytes when serialized, larger than "
                                      f"buffer.memory ({self.config.buffer_memory})")
        if deadline_ms is None:
            deadline_ms = self._clock.monotonic_ms() + self.config.max_block_ms
        if block:
            num_partitions = self._wait_on_metadata(topic, partition, deadline_ms)
        elif (count := self.poll_metadata(topic, partition, deadline_ms)) is None:
            return NeedsMetadata(topic, partition, deadline_ms)
        else:
            num_partitions = count
        if partition is None:
            partition = self._partition(topic, key, key_bytes, value, value_bytes, num_partitions)
        return topic, partition, timestamp_ms, key_bytes, value_bytes, header_tuple, on_delivery

    # -- columnar ------------------------------------------------------------------------------------------------

    def send_batch(self, topic: str, values: Any, keys: Any = None, *, partitions: Any = None,
                   timestamps_ms: Any = None, headers: Any = None) -> BatchResult:
        """Queues len(values) records in one call and returns one BatchResult for all of them (no future per record).

        values, keys: one entry per record, as a list (or any other iterable, read once), or a pyarrow binary,
        string, large_binary, large_string or fixed_size_binary array (read in place, zero-copy; a null is a null key
        or value). An entry is what send() takes: bytes-like (bytes, bytearray, memoryview or any C-contiguous buffer
        of bytes: format B, b or c, so a numpy array of wider items is refused), str (UTF-8) or None. keys=None: no
        keys (the built-in partitioner spreads them). partitions / timestamps_ms: None, one int for every record, or
        one per record (list or Arrow array; a None entry: the key's partition or the built-in partitioner's / the
        current time); a partition is an int (not a bool) in [0, partition count), a timestamp an int in [0, 2**63).
        headers: None or, per record, what send() takes: None, a dict or a list of (str, value) pairs, each value
        bytes-like, str or None; or a pyarrow list<struct<key, value>> array (list or large_list; key string or
        binary holding UTF-8; value binary, string or their large forms, or fixed_size_binary; a chunked array is
        combined, a slice's offsets honoured), read in place in C with no Python object per header: a null or empty
        list means no headers, a null value a null header value; a null header or key raises SerializationError
        naming headers[i], as the list path does. The BatchResult's delivered_by_partition counts the acknowledged
        records per (topic, partition). A transactional producer takes it only inside a transaction, as send().
        With interceptors, a partitioner.class or key/value serializers configured each record goes through send()'s
        steps (entries are then what the serializers take); every record is intercepted, serialized and checked
        before any is queued. Argument errors (InvalidRecordError, SerializationError, which name the argument and
        entry) raise before anything is queued; a record too large, or still without memory after max.block.ms,
        fails alone, in the BatchResult (the others are delivered).
        """
        if self._closed:
            raise ProducerClosedError("send_batch() after close(): the producer is closed")
        self._fail_if_not_ready_for_send()
        validate_topic(topic)
        if self._columnar_fast:
            value_column, key_column = self._batch_columns(values, keys)
            count, key_count = value_column.length, key_column.length
        else:
            values, keys = self._batch_lists(values, keys)
            count, key_count = len(values), -1 if keys is None else len(keys)
        if key_count not in (-1, count):
            raise InvalidRecordError(f"keys has {key_count} entries for {count} values")
        deadline_ms = self._clock.monotonic_ms() + self.config.max_block_ms
        num_partitions = self._wait_on_metadata(topic, partitions if type(partitions) is int else None, deadline_ms)
        partitions, timestamps_ms, headers = self._batch_check(count, num_partitions, partitions, timestamps_ms,
                                                               headers)
        result = BatchResult(count, Completion)
        if self._columnar_fast:
            self._send_batch_columns(topic, value_column, key_column, partitions, timestamps_ms, headers, result)
        else:
            self._send_batch_one_by_one(topic, values, keys, partitions, timestamps_ms, headers, result)
        return result

    def _send_batch_columns(self, topic: str, value_column: Any, key_column: Any, partitions: Any,
                            timestamps_ms: Any, headers: Any, result: BatchResult) -> None:
        """send_batch's columnar path: chunks of records appended in C, waiting for memory between chunks."""
        count: int = value_column.length
        start = 0
        buffer: bytearray | None = None
        while start < count:
            stop = min(count, start + _BATCH_CHUNK_RECORDS)
            try:
                start, buffer, needed_bytes = self._send_columns(topic, value_column, key_column, partitions,
                                                                 timestamps_ms, headers, result, start, stop, buffer)
            except ProducerClosedError as e:
                if start == 0:
                    raise
                self._fail_rest(result, start, count, e)
                return
            if buffer is not None:
                with self._lock:
                    self._give_back(buffer)
                buffer = None
            if start < stop:  # the pool is empty: wait for memory as send() does, then go on from `start`
                waiter = ThreadWaiter()
                try:
                    buffer = self._wait_for_memory(self._memory_wait(
                        needed_bytes, self._clock.monotonic_ms() + self.config.max_block_ms, waiter, _own_buffer),
                        waiter)
                except BufferExhaustedError as e:
                    self._fail_rest(result, start, count, e)
                    return

    @staticmethod
    def _fail_rest(result: BatchResult, start: int, count: int, error: KafkaError) -> None:
        for index in range(start, count):
            result._record_done(index, error)

    def _send_batch_one_by_one(self, topic: str, values: list[Any], keys: list[Any] | None, partitions: Any,
                               timestamps_ms: Any, headers: Any, result: BatchResult) -> None:
        """send_batch through send()'s steps: interceptors, serializers and partitioner.class see every record. All
        records are prepared (and checked) before the first is queued; a record too large fails alone."""
        prepared: list[tuple[int, _Prepared]] = []
        for index, value in enumerate(values):
            def done(error: KafkaError | None, metadata: Any, index: int = index) -> None:
                result._record_done(index, error, None if error else (metadata.topic, metadata.partition))

            try:
                prepared.append((index, self._prepare(  # type: ignore[arg-type]  # blocking: never NeedsMetadata
                    topic, value, None if keys is None else keys[index],
                    partitions if partitions is None or type(partitions) is int else partitions[index],
                    timestamps_ms if timestamps_ms is None or type(timestamps_ms) is int else timestamps_ms[index],
                    None if headers is None else headers[index], done)))
            except RecordTooLargeError as e:
                result._record_done(index, e)
        for index, args in prepared:
            try:
                self._append_slow(*args)
            except KafkaError as e:
                result._record_done(index, e)

    def _partition(self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any,
                   num_partitions: int) -> int:
        custom = self.config.partitioner_class
        if custom is not None:
            chosen = custom(topic, key, key_bytes, value, value_bytes, num_partitions)
            if not _is_int(chosen) or not 0 <= chosen < num_partitions:  # as strict as send()'s partition argument
                raise InvalidRecordError(f"partitioner.class returned {chosen!r:.40}, not an int in "
                                         f"[0, {num_partitions})")
            return int(chosen)
        if key_bytes is not None and not self.config.partitioner_ignore_keys:
            return int(partition_for_key(key_bytes, num_partitions))
        return -1  # the accumulator's built-in sticky partitioner chooses

    def _intercept(self, record: ProducerRecord) -> ProducerRecord:
        for interceptor in self._interceptors:
            try:
                changed = interceptor.on_send(record)
            except Exception:
                log.exception("interceptor %r on_send raised; the record goes on unchanged by it", interceptor)
                continue
            if isinstance(changed, ProducerRecord):
                record = changed
            elif changed is not None:
                raise InvalidRecordError(f"interceptor.classes: {interceptor!r:.60}.on_send returned "
                                         f"{type(changed).__name__}; it must return a ProducerRecord or None")
        return record

    def _on_batch_done(self, batch: Any) -> None:
        for future in batch.futures:
            error, metadata = future._callback_args
            for interceptor in self._interceptors:
                try:
                    interceptor.on_acknowledgement(metadata, error)
                except BaseException:  # on the sender thread: SystemExit, KeyboardInterrupt must not end it
                    log.exception("interceptor %r on_acknowledgement raised; ignored", interceptor)

    # -- flush, close, introspection ---------------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> int:
        """Sends everything queued now and waits for it; returns the number of records still pending (0 = all done)
        when `timeout` seconds pass first."""
        if self._thread is not None and threading.current_thread() is self._thread:
            raise KafkaError("flush() from a delivery callback or interceptor would deadlock the sender thread")
        timeout_ms = _timeout_ms(timeout)
        waits = self.begin_flush()
        deadline_ms = None if timeout_ms is None else self._clock.monotonic_ms() + timeout_ms
        try:
            for completion, _ in waits:
                if deadline_ms is None:
                    completion.wait()
                else:
                    self._clock.wait_ms(completion.wait, deadline_ms - self._clock.monotonic_ms())
        finally:
            pending = self.end_flush(waits)
        return pending

    def purge(self, in_queue: bool = True, in_flight: bool = True) -> int:
        """Gives up records not delivered yet (librdkafka's rd_kafka_purge; Java has none) and returns how many.

        `in_queue`: every record not sent yet fails with RecordPurgedError (`in_flight` False) and is never sent.
        `in_flight`: every record sent and not answered yet (or waiting for a retry) fails with
        RecordPurgedError(in_flight=True): whether the broker appended it is not known, and never will be. Its
        request still completes in the background, so idempotent sequences stay in order and later records go on
        as usual. The records' on_delivery callbacks run before purge() returns, on the calling thread; waiting
        futures and flush() return. Never blocks. In a transaction, purged records make commit_transaction() fail:
        abort it."""
        if self._thread is not None and threading.current_thread() is self._thread:
            raise KafkaError("purge() from a delivery callback or interceptor would deadlock the sender thread")
        purged = self.sender.purge(in_queue, in_flight)
        self._transport.wakeup()
        return purged

    @property
    def completed_records(self) -> int:
        """How many records this producer has completed (acknowledged, failed or purged; their on_delivery
        callbacks have run) since it started: with a count of the records sent, how many are still pending, at the
        cost of one attribute read (counted per batch by the sender)."""
        return self.sender.completed_records

    def begin_flush(self) -> list[tuple[Completion, int]]:
        """flush()'s first half, never blocking (flush() is both halves; an event loop awaits in between): the
        batches queued now, sent at once (linger ends for them), as (completion, records) pairs: each completion is
        set once its batch is final and its callbacks ran. The waiter holds these, not the batches, so each batch
        is freed where it completes (the sender thread), not all at once when the wait ends: 2,000 batches of
        200,000 records (their futures, buffers) were 8-10 ms of an event loop's turn (docs/asyncio.md).
        Always follow it with end_flush(waits)."""
        with self._lock:
            self._accumulator.begin_flush()
            # waitable() is never None here: the accumulator makes each batch with Completion as its factory
            waits = [(cast(Completion, batch.waitable()), batch.record_count)
                     for batch in self._accumulator.incomplete]
        self._transport.wakeup()
        return waits

    def end_flush(self, waits: list[tuple[Completion, int]]) -> int:
        """flush()'s second half, also after an error or a cancelled wait: linger applies again; returns the records
        of `waits` (begin_flush's) still pending."""
        with self._lock:
            self._accumulator.end_flush()
        return sum(records for completion, records in waits if not completion.is_set())

    def close(self, timeout: float | None = None) -> None:
        """Flushes and stops the sender. After `timeout` seconds, fails what is left with ProducerClosedError."""
        if self._thread is not None and threading.current_thread() is self._thread:
            raise KafkaError("close() from a delivery callback would deadlock; use close(0) from another thread")
        timeout_ms = _timeout_ms(timeout)
        if self._closed:
            return
        self._closed = True
        self._metadata_changed()  # a send waiting for metadata raises ProducerClosedError now
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._runtime_pid != os.getpid():
            # forked and not rebuilt yet (an at-fork hook registered before ours closes it, or a fork that skips
            # Python's hooks): the threads, sockets and queued records are the parent's, to stop and deliver
            self._abandon_inherited()
            return
        if self._stats is not None:
            self._stats.stop()
        with self._lock:
            self._accumulator.close()
        self.sender.running = False
        self._transport.wakeup()
        deadline_ms = None if timeout_ms is None else self._clock.monotonic_ms() + timeout_ms
        if self._thread is not None:
            # the last tenth of the timeout (at most 250 ms) is kept for failing what is left
            reserve_ms = 0 if timeout_ms is None else min(timeout_ms // 10, 250)
            self._join_sender(None if deadline_ms is None else deadline_ms - reserve_ms)
            if self._thread.is_alive():
                self.sender.force_close = True
                self._transport.wakeup()
                self._join_sender(deadline_ms)
        if self._thread is None or not self._thread.is_alive():
            self.sender.abort_all(ProducerClosedError("the producer was closed before the record was delivered"))
            linger_s = 2.0 if deadline_ms is None else max(0, deadline_ms - self._clock.monotonic_ms()) / 1000
            self._transport.close(linger_s)
        for interceptor in self._interceptors:
            close = getattr(interceptor, "close", None)
            if close is not None:
                close()

    def _join_sender(self, deadline_ms: int | None) -> None:
        """Waits for the sender thread to end, until deadline_ms on the Clock port (None: no limit)."""
        thread = self._thread
        if thread is None:
            return
        if deadline_ms is None:
            thread.join()
            return

        def joined(timeout_s: float) -> bool:
            thread.join(timeout_s)
            return not thread.is_alive()

        self._clock.wait_ms(joined, deadline_ms - self._clock.monotonic_ms())

    def partitions_for(self, topic: str) -> list[PartitionInfo]:
        """The partitions of `topic` by partition id, each a PartitionInfo (leader node id, -1 when unknown; leader
        epoch; replicas; in-sync replicas), from the producer's metadata. Waits up to max.block.ms for the topic
        to appear in the metadata (a broker with auto-creation creates it), then raises KafkaTimeoutError."""
        validate_topic(topic)
        self._wait_on_metadata(topic, None, self._clock.monotonic_ms() + self.config.max_block_ms)
        return list(self._metadata.snapshot().partitions[topic])

    def metrics(self) -> MetricsSnapshot:
        """The producer's metrics now: a dict under Java's producer-metrics names (record-send-rate,
        request-latency-avg, buffer-available-bytes, ...; docs/observability.md lists them all), and in its `all`
        every metric by MetricName (name, group, tags), per node ones included (producer-node-metrics). Rates are
        per second over the last 30 s; averages and maxima cover the producer's life. Cheap enough to poll."""
        return self._metrics.snapshot(
            buffer_available_bytes=self._pool.available_memory_bytes,
            buffer_total_bytes=self._pool.total_memory_bytes,
            waiting_threads=self._pool.queued_waiters,
            requests_in_flight=self._transport.in_flight_count(),
            client_id=self.config.client_id,
            connection_count=self._transport.connection_count(),
        )

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- transactions (Java's KafkaProducer transactional API) -------------------------------------------------

    def _fail_if_not_ready_for_send(self) -> None:
        """send_batch() of a transactional producer (send() checks in the core): only inside a transaction, never
        after an error (Java's failIfNotReadyForSend); nothing to check otherwise."""
        if self._txn is not None and self._txn.transactional_id is not None:
            self._txn.fail_if_not_ready_for_send()

    def _transactional(self) -> tuple[TransactionManager, TransactionRequests]:
        if self._txn is None or self._txn_requests is None or self._txn.transactional_id is None:
            raise TransactionStateError("transactional method called on a producer without transactional.id")
        if self._closed:
            raise ProducerClosedError("the producer is closed")
        return self._txn, self._txn_requests

    def _await(self, result: TransactionalResult, timeout: float | None) -> None:
        self._transport.wakeup()
        if self._thread is None:  # driven by hand (tests): the caller runs the sender, then calls again
            if result.is_completed:
                result.wait(0)
            return
        timeout_ms = self.config.max_block_ms if timeout is None else _timeout_ms(timeout)
        result.wait(None if timeout_ms is None else timeout_ms / 1000)

    def init_transactions(self, timeout: float | None = None) -> None:
        """Finds the transaction coordinator and gets the producer id/epoch for transactional.id, fencing older
        producers with the same id and finishing (aborting) what they left open. Call once, first. Waits up to
        `timeout` s (default max.block.ms); after KafkaTimeoutError, call again to keep waiting."""
        _, requests = self._transactional()
        with self._lock:
            result = requests.initialize()
        self._await(result, timeout)

    def begin_transaction(self) -> None:
        """Starts a transaction: records sent until commit/abort are written atomically."""
        txn, _ = self._transactional()
        with self._lock:
            txn.begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata],
                                    group_metadata: ConsumerGroupMetadata | str,
                                    timeout: float | None = None) -> None:
        """Adds consumer positions to the transaction: they are committed for the group if and only if the
        transaction commits (consume-transform-produce). offsets: {TopicPartition or (topic, partition): next
        offset to read, an int or OffsetAndMetadata}, checked as Consumer.commit's (InvalidArgumentError naming
        this call, nothing sent)."""
        _, requests = self._transactional()
        group = group_metadata if isinstance(group_metadata, ConsumerGroupMetadata) else ConsumerGroupMetadata(
            group_metadata)
        positions = checked_offsets(offsets, "send_offsets_to_transaction")
        with self._lock:
            result = requests.send_offsets(positions, group)
        self._await(result, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flushes, then commits the transaction. Raises TransactionAbortableError if a record or request of the
        transaction failed (abort_transaction(), then try again), ProducerFencedError / TransactionFatalError if
        the producer can only be closed, KafkaTimeoutError after `timeout` s (call again to keep waiting)."""
        _, requests = self._transactional()
        timeout_ms = _timeout_ms(timeout)
        deadline_ms = None if timeout_ms is None else self._clock.monotonic_ms() + timeout_ms
        if self._thread is not None and requests.in_transaction:
            self.flush(timeout)
        with self._lock:
            result = requests.begin_commit()
        self._await(result, timeout if deadline_ms is None else max(0, deadline_ms - self._clock.monotonic_ms()) / 1000)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Aborts the transaction: records not yet sent fail, records sent are never visible to read_committed
        consumers. The way out of TransactionAbortableError."""
        _, requests = self._transactional()
        with self._lock:
            result = requests.begin_abort()
        self._await(result, timeout)

    def transaction_state(self) -> TransactionInfo:
        """Advanced (two-phase commit): this producer's transactional.id, producer id/epoch and state. Another
        process can finish the open transaction with complete_transaction() given these."""
        with self._lock:
            if self._txn_requests is None:
                return TransactionInfo(self.config.transactional_id, -1, -1, TransactionState.UNINITIALIZED.name)
            return self._txn_requests.info()

    def prepare_transaction(self, timeout: float | None = None) -> TransactionInfo:
        """Advanced (two-phase commit): flushes the open transaction and leaves it open for another process to
        finish with complete_transaction(); close() then does not abort it. Raises the transaction's error if a
        record failed. Returns what that process needs."""
        _, requests = self._transactional()
        if self.flush(timeout) != 0:
            raise KafkaTimeoutError(f"prepare_transaction(): records still pending after {timeout} s")
        with self._lock:
            requests.check_preparable()
            self.sender.keep_transaction_open = True
        return self.transaction_state()

    def complete_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                             timeout: float | None = None) -> None:
        """Advanced (two-phase commit): commits (or aborts) the transaction that producer id/epoch holds open for
        transactional_id, e.g. one a worker left prepared. Sends EndTxn to that id's coordinator; this producer's
        own state is unchanged. ProducerFencedError: a newer epoch owns the id now (the transaction was already
        finished by the coordinator)."""
        if self._txn_requests is None:
            raise TransactionStateError("complete_transaction() needs enable.idempotence (the default)")
        if self._closed:
            raise ProducerClosedError("the producer is closed")
        with self._lock:
            result = self._txn_requests.complete_external(transactional_id, producer_id, producer_epoch, commit)
        self._await(result, timeout)

def _own_buffer(buffer: bytearray) -> bytearray:
    """send_batch's memory wait takes the buffer itself (its next chunk appends with it)."""
    return buffer


def _timeout_ms(timeout_s: float | None) -> int | None:
    """A timeout argument in seconds as ms on the Clock port: None for no limit (None, math.inf), a negative one is
    0; not a number: InvalidArgumentError (ports.values.checked_seconds)."""
    seconds = checked_seconds(timeout_s, "timeout")
    return None if seconds is None else max(0, round(seconds * 1000))


def _is_int(value: object) -> bool:
    """An int as send() takes a partition or timestamp: int or a subclass, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


_live_producers: weakref.WeakSet[Producer] = weakref.WeakSet()


def _weakly_bound(producer: Producer, name: str) -> Callable[..., None]:
    """producer.name(...) while the producer lives; nothing once it is gone."""
    ref = weakref.ref(producer)
    method = getattr(type(producer), name)

    def call(*args: Any) -> None:
        target = ref()
        if target is not None:
            method(target, *args)

    return call


def _finalize_unclosed(client_id: str, thread: SenderThread | None, transport: Transport | None) -> None:
    """A Producer nobody references was never closed: warn as an unclosed file does, and let its sender thread
    deliver what is queued within UNCLOSED_TIMEOUT_S, then stop and close the transport. Never blocks."""
    warnings.warn(f"unclosed cykafka Producer {client_id!r}: close() it, or use it in a with block",
                  ResourceWarning, stacklevel=2)
    if thread is not None and thread.is_alive():
        thread.finish_unclosed(int(UNCLOSED_TIMEOUT_S * 1000), transport)
    elif transport is not None:
        transport.close(0)


def _close_at_exit() -> None:
    """At interpreter exit (as kafka-python): closes every live producer, all within one UNCLOSED_TIMEOUT_S budget,
    and waits (in that budget) for dropped ones still delivering; logs how many records could not be delivered."""
    deadline = time.monotonic() + UNCLOSED_TIMEOUT_S
    for producer in list(_live_producers):
        if producer._closed or producer._thread is None:
            continue
        with producer._lock:
            batches = list(producer._accumulator.incomplete)
        try:
            producer.close(max(0.0, deadline - time.monotonic()))
        except Exception:
            log.exception("closing producer %s at exit failed", producer.config.client_id)
        lost = undelivered_records(batches)
        if lost:
            log.warning("%d record(s) of producer %s were not delivered by interpreter exit (a %.1f s budget, "
                        "UNCLOSED_TIMEOUT_S); close() or flush() a producer to wait for its records", lost,
                        producer.config.client_id, UNCLOSED_TIMEOUT_S)
    for thread in threading.enumerate():
        if isinstance(thread, SenderThread) and thread.unclosed:
            thread.join(max(0.0, deadline - time.monotonic()))


def _after_fork_in_child() -> None:
    for producer in list(_live_producers):
        try:
            producer._after_fork_in_child()
        except Exception:  # a fork hook must not raise; the child's send() would then fail loudly instead
            log.exception("cykafka: rebuilding producer %s after fork failed", producer.config.client_id)


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_close_at_exit)
