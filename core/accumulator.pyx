# RecordAccumulator, ProducerBatch, RecordFuture, RecordMetadata: Kafka's producer queue between send() and the Sender.
# Rules (Java's RecordAccumulator semantics, our own code):
# - the caller holds the producer lock around every call; time arrives as now_ms, or for an append as a CoreClock
#   read only when the record starts a batch; metadata as a ClusterSnapshot value;
# - one Compressor call per batch, at drain, when the batch is closed;
# - decisions are returned (ready nodes + next check delay, drained batches, expired batches); the caller acts;
# - callbacks never run here: completion marks futures and returns; the caller signals waiters and runs callbacks.

from collections import deque

cimport cython
from cpython.ref cimport PyObject

from libc.stdint cimport int16_t, int32_t, int64_t, uint64_t


cdef object _as_kafka_error(object error):
    """Callbacks, futures and BatchResults only ever see KafkaErrors: anything else (from a Transport that broke the
    port's contract) is wrapped, with the original as __cause__."""
    wrapped = KafkaError(f"{type(error).__name__}: {error}")
    wrapped.__cause__ = error
    return wrapped


# Java's CompressionRatioEstimator steps
cdef double RATIO_DETERIORATE_STEP = 0.05
cdef double RATIO_IMPROVING_STEP = 0.005


@cython.final
@cython.no_gc  # holds only a str: no cycle can pass through it
cdef class RecordMetadata:
    """RecordMetadata(topic, partition, offset, timestamp_ms, serialized_key_size=-1, serialized_value_size=-1)\n--\n
    Where an acknowledged record landed: what RecordFuture.result() returns and an on_delivery callback receives.

    topic (str) and partition (int); offset (int): the record's offset in the partition, -1 when it is not known
    (acks=0 gets no answer; a batch an idempotent producer re-sent that the broker already had); timestamp_ms (int):
    the record's timestamp, the broker's log-append time when the topic has message.timestamp.type=LogAppendTime;
    serialized_key_size and serialized_value_size (int): bytes after serialization, -1 for a null key or value.
    Two are equal when topic, partition, offset and timestamp_ms are; hashable.
    """

    def __init__(self, str topic, int partition, int64_t offset, int64_t timestamp_ms,
                 int serialized_key_size=-1, int serialized_value_size=-1):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp_ms = timestamp_ms
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    def __repr__(self):
        return (f"RecordMetadata(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
                f"timestamp_ms={self.timestamp_ms})")

    def __eq__(self, other):
        if not isinstance(other, RecordMetadata):
            return NotImplemented
        cdef RecordMetadata o = other
        return (self.topic, self.partition, self.offset, self.timestamp_ms) == (o.topic, o.partition, o.offset,
                                                                                o.timestamp_ms)

    def __hash__(self):
        return hash((self.topic, self.partition, self.offset))


@cython.final
@cython.no_gc
@cython.freelist(4096)
cdef class RecordFuture:
    """RecordFuture()\n--\n
    One record's outcome, as Producer.send() returns it (not made by user code): result(timeout) waits for the
    acknowledgement and returns the record's RecordMetadata or raises its KafkaError; exception(timeout) returns the
    error instead of raising it; done() asks without waiting. The record's on_delivery callback, if any, has run by
    the time result() returns.
    """
    # Not tracked by the GC (millions are alive at once): every reference cycle through it is broken by hand: the
    # batch links are dropped at completion, the callback after it ran, and result() raises a copy of the error (a
    # raised exception's traceback would reach back to the frame holding the future).

    def done(self) -> bool:
        """True once the record is acknowledged or failed (never blocks)."""
        return self._done

    cdef object _get_metadata(self):
        cdef RecordMetadata metadata
        if self._metadata is None and self._done and self._error is None:
            metadata = RecordMetadata.__new__(RecordMetadata)  # the fields set in C: no __init__ call
            metadata.topic = self._topic
            metadata.partition = self._partition
            metadata.offset = self._offset
            metadata.timestamp_ms = self._timestamp_ms
            metadata.serialized_key_size = self._key_size
            metadata.serialized_value_size = self._value_size
            self._metadata = metadata
        return self._metadata

    @property
    def _callback_args(self):
        """(error, metadata) for an on_delivery callback, once done."""
        return (self._error, self._get_metadata())

    cdef void _wait(self, object timeout) except *:
        cdef ProducerBatch wait_batch
        if not self._done:
            wait_batch = self._wait_batch
            if wait_batch is not None:
                completion = wait_batch.waitable()
                if completion is not None:
                    completion.wait(timeout)
            if not self._done:
                raise KafkaTimeoutError(f"record not acknowledged within {timeout}s (it is still pending)")

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Waits up to `timeout` seconds (None: until done) and returns the record's RecordMetadata.

        Raises the record's delivery error (a KafkaError: KafkaTimeoutError after delivery.timeout.ms,
        RecordTooLargeError, BrokerResponseError, ProducerClosedError, ...; a fresh copy on each call), or
        KafkaTimeoutError when `timeout` passes first (the record is still pending: call again to keep waiting).
        """
        self._wait(timeout)
        if self._error is not None:
            error = self._error
            clone = type(error).__new__(type(error))
            clone.args = error.args
            clone.__dict__.update(error.__dict__)
            raise clone
        return self._get_metadata()

    def exception(self, timeout: float | None = None) -> KafkaError | None:
        """Waits up to `timeout` seconds (None: until done) and returns the record's delivery error, None when it
        was delivered. Raises KafkaTimeoutError when `timeout` passes first."""
        self._wait(timeout)
        return self._error

    def waitable(self):
        """The completion set once the record is final and its callback ran (its first batch's: it covers split
        pieces; cykafka.aio resolves an asyncio future from it), made on first use; None once the record is final
        (or when its producer gives no completion)."""
        if self._done or self._wait_batch is None:
            return None
        return self._wait_batch.waitable()

    def __await__(self):
        """`await future` in a coroutine: result() without blocking the event loop (the batch's completion wakes
        the loop from the sender thread). Cancelling the awaiting task only stops the wait; the record is sent."""
        cdef ProducerBatch wait_batch
        if not self._done:
            wait_batch = self._wait_batch
            completion = None if wait_batch is None else wait_batch.waitable()
            if completion is None or not hasattr(completion, "__await__"):
                raise KafkaError("this RecordFuture cannot be awaited: its producer gives no awaitable completion")
            yield from completion.__await__()
        return self.result(0)

    def __repr__(self):
        if not self._done:
            return f"<RecordFuture pending {self._topic}[{self._partition}]>"
        return f"<RecordFuture {'error' if self._error is not None else 'done'}>"


@cython.final
cdef class ProducerBatch:
    """An open or closed record batch for one partition, its futures and its retry state."""

    def __init__(self, str topic, int partition, RecordBatchBuilder builder, int64_t created_ms,
                 object completion_factory, bytearray pooled_buffer=None, int buffer_size_bytes=0):
        self.topic = topic
        self.partition = partition
        self.builder = builder
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.drained_ms = -1
        self._completion_factory = completion_factory
        self._pooled_buffer = pooled_buffer
        self.buffer_size_bytes = buffer_size_bytes
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.leader_epoch = -1
        self.base_offset = -1
        # outside the cyclic GC until released (release_waiters), as its completion (_completion_of): the producer
        # holds it till then, so the collector could free nothing through it, and a fast asyncio loop queues
        # thousands of batches, each promoted one bringing the next full collection (the loop's longest stall,
        # docs/asyncio.md) nearer
        PyObject_GC_UnTrack(self)

    cdef RecordFuture _add_future(self, int32_t relative_offset, int64_t timestamp_ms, Py_ssize_t key_size,
                                  Py_ssize_t value_size, object callback):
        """The future of the record just appended at relative_offset (sizes -1 for null)."""
        cdef RecordFuture future = RecordFuture.__new__(RecordFuture)
        future._batch = self
        future._wait_batch = self
        future._relative_offset = relative_offset
        future._timestamp_ms = timestamp_ms
        future._key_size = <int>key_size
        future._value_size = <int>value_size
        future._topic = self.topic
        future._partition = self.partition
        future._callback = callback
        self._keep_future(future)
        return future

    cdef int _keep_future(self, RecordFuture future) except -1:
        return refs_append(&self._futures, future)

    cdef void _drop_futures(self) noexcept:
        refs_clear(&self._futures)

    def __dealloc__(self):
        self._drop_futures()

    @property
    def futures(self):
        """The futures of the records appended through send() (send_batch records have none), in append order."""
        cdef Py_ssize_t i
        return [<object>self._futures.items[i] for i in range(self._futures.count)]

    cdef _Segment _segment_for(self, BatchResult result, int32_t relative_offset):
        """The segment of `result` the record at relative_offset joins: the last one if it ends right before it,
        else a new one (records of one send_batch call in one batch are contiguous while the lock is held)."""
        cdef _Segment segment
        if self._segments is None:
            self._segments = []
        elif self._segments:
            segment = self._segments[len(self._segments) - 1]
            if segment.result is result and segment.first_offset + segment.count == relative_offset:
                return segment
        segment = _Segment.__new__(_Segment)
        segment.result = result
        segment.first_offset = relative_offset
        self._segments.append(segment)
        return segment

    @property
    def record_count(self):
        return self.builder.record_count

    @property
    def estimated_size_bytes(self):
        return self.builder.estimated_size_bytes

    @property
    def is_full(self):
        return self.builder.is_full

    @property
    def records(self):
        """The closed batch's bytes (a memoryview), or None while open."""
        return self._records

    @property
    def pooled_buffer(self):
        return self._pooled_buffer

    @property
    def is_done(self):
        return self.final_state != STATE_INCOMPLETE

    cpdef object close(self, object compressor):
        if self._records is None:
            self._records = self.builder.close(compressor, self.producer_id, self.producer_epoch, self.base_sequence,
                                               self.is_transactional)
        return self._records

    @property
    def completion(self):
        """The Event-like object waiters block on, or None if nobody waited yet."""
        return self._completion

    cpdef object waitable(self):
        """The completion to wait on, made on first use (most batches are never waited on); already set when the
        batch was released."""
        return _completion_of(self)

    cpdef void release_waiters(self):
        """Called once the batch is final and its callbacks ran: wakes its waiters, and a split parent's once all
        its pieces are released."""
        cdef ProducerBatch b = self
        cdef _Segment segment
        while True:
            if b._released:  # released already (purge() gave up its records, or a split parent so released)
                return
            b._released = True
            _track(b)  # back in the cyclic GC (see __init__)
            if b._completion is not None:
                _track(b._completion)  # first: its waiters may run as soon as set() runs
                b._completion.set()
            if b._segments is not None:
                for segment in b._segments:
                    segment.result._release(segment.count)
            if b._parent is None:
                return
            b._parent._pending_children -= 1
            if b._parent._pending_children > 0:
                return
            b = b._parent

    cpdef list complete(self, int64_t base_offset, int64_t log_append_time_ms, object error):
        """Marks every record done (success when error is None); returns the futures that have callbacks.
        False-safe: a batch completes once (a late response for an expired batch is ignored: returns []); the
        records of a batch given up (give_up()) keep their first outcome."""
        if self.final_state != STATE_INCOMPLETE:
            return []
        if error is not None and not isinstance(error, KafkaError):
            error = _as_kafka_error(error)
        self.final_state = STATE_SUCCEEDED if error is None else STATE_FAILED
        self.error = error
        self.base_offset = base_offset
        if self.given_up:
            return []
        return self._complete_records(base_offset, log_append_time_ms, error)

    cpdef list give_up(self, object error):
        """Producer.purge() of a batch the sender holds (sent, its outcome unknown): completes its records now with
        `error` and returns the futures that have callbacks, leaving the batch itself incomplete: the sender still
        settles its sequence and its buffer when the answer comes, and complete() then leaves the records as they
        are (the first completion wins). [] when the batch is final or given up already."""
        if self.final_state != STATE_INCOMPLETE or self.given_up:
            return []
        self.given_up = True
        return self._complete_records(-1, -1, error)

    cdef list _complete_records(self, int64_t base_offset, int64_t log_append_time_ms, object error):
        cdef list with_callbacks = []
        cdef RecordFuture f
        cdef _Segment segment
        cdef Py_ssize_t i
        for i in range(self._futures.count):
            f = <RecordFuture>self._futures.items[i]
            if error is None:
                if log_append_time_ms >= 0:
                    f._timestamp_ms = log_append_time_ms
                f._offset = base_offset + f._relative_offset if base_offset >= 0 else -1
            else:
                f._error = error
            f._done = True
            f._batch = None  # no cycles through untracked futures (see RecordFuture)
            f._wait_batch = None
            if f._callback is not None:
                with_callbacks.append(f)
        if self._segments is not None:
            topic_partition = (self.topic, self.partition)
            for segment in self._segments:
                segment.result._complete(segment, error, topic_partition)
        return with_callbacks

    @property
    def has_sequence(self):
        return self.base_sequence != -1

    cpdef void reset_producer_state(self, int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                                    bint is_transactional):
        """New producer id/epoch/base sequence (Java's resetProducerState). A closed batch's bytes are rewritten
        when it is drained again, never while a request holding them may still be on the wire."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.sequence_has_been_reset = True
        if self._records is not None:
            self._reopened = True

    cdef void _reenqueued(self, int64_t now_ms, int64_t backoff_ms):
        self.attempts += 1
        self.last_attempt_ms = now_ms
        self.in_retry = True
        self.retry_backoff_ms = backoff_ms

    def __repr__(self):
        return (f"ProducerBatch({self.topic}[{self.partition}], records={self.builder.record_count}, "
                f"attempts={self.attempts}, state={self.final_state})")


cdef class _TopicPartitioning:
    """The built-in partitioner of one topic and the snapshot facts it last chose from."""


@cython.final
cdef class ReadyResult:
    """What ready() decided: nodes with sendable data, when to check again, topics whose leader is unknown."""

    def __iter__(self):
        return iter((self.ready_nodes, self.next_ready_check_delay_ms, self.unknown_leader_topics))


@cython.final
cdef class RecordAccumulator:
    """Per-partition deques of batches; ready/drain policy; expiry; retry re-enqueue; split; flush/close state."""

    def __init__(self, int batch_size_bytes, object pool, *, int codec=0, object compressor=None,
                 int64_t linger_ms=5, int64_t retry_backoff_ms=100, int64_t retry_backoff_max_ms=1000,
                 int64_t delivery_timeout_ms=120000, object completion_factory=None, uint64_t seed=0x9E3779B97F4A7C15,
                 bint adaptive_partitioning=True, int64_t partition_availability_timeout_ms=0):
        if codec != 0 and compressor is None:
            raise ValueError("a compressor is required for a compressed codec")
        self.batch_size_bytes = batch_size_bytes
        self.pool = pool
        self.codec = codec
        self.compressor = compressor
        self.linger_ms = linger_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self.delivery_timeout_ms = delivery_timeout_ms
        self.completion_factory = completion_factory
        self._batches = {}
        self._ratios = {}
        self._muted = set()
        self._drain_index = {}
        self.incomplete = set()
        self._rng = seed if seed != 0 else 1
        self._partitioners = {}
        self._adaptive = adaptive_partitioning
        self._availability_timeout_ms = partition_availability_timeout_ms
        self._node_stats = {}

    # -- append ------------------------------------------------------------------------------------------------

    cdef object _deque(self, str topic, int partition):
        cdef dict parts
        if topic is self._cached_topic:
            parts = self._cached_parts
        else:
            parts = self._batches.get(topic)
            if parts is None:
                parts = {}
                self._batches[topic] = parts
            self._cached_topic = topic
            self._cached_parts = parts
        dq = parts.get(partition)
        if dq is None:
            dq = deque()
            (<dict>parts)[partition] = dq
        return dq

    cdef _TopicPartitioning _partitioning(self, str topic, object snapshot):
        cdef _TopicPartitioning tp = self._partitioners.get(topic)
        if tp is None:
            tp = _TopicPartitioning.__new__(_TopicPartitioning)
            tp.partitioner = BuiltInPartitioner(topic, self.batch_size_bytes, self._random_seed())
            self._partitioners[topic] = tp
        if tp.snapshot is not snapshot:
            if snapshot is None or snapshot.partition_count(topic) is None:
                raise ValueError(f"no metadata for topic {topic!r}: the built-in partitioner needs a snapshot")
            tp.snapshot = snapshot
            tp.num_partitions = snapshot.partition_count(topic)
            tp.available = snapshot.available_partitions(topic)
        return tp

    cpdef tuple append(self, str topic, int partition, int64_t timestamp_ms, object key, object value,
                       object headers, object callback, int64_t now_ms, bytearray buffer=None, object snapshot=None):
        """Appends to the partition's last open batch, else to a new batch from `buffer` or the pool.
        partition < 0: the topic's built-in sticky partitioner chooses, from `snapshot`.
        Returns (future, batch_is_full, new_batch_created, partition), or None when a new buffer is needed and the
        pool had none: the caller waits for memory (max.block.ms), then calls again passing the buffer it obtained."""
        cdef AppendResult result = self._append(topic, partition, timestamp_ms, key, value, headers, callback,
                                                _fixed_clock(now_ms), buffer, snapshot)
        if result.batch == NULL:
            return None
        return (<object>result.future, result.batch_full, result.new_batch, result.partition)

    cdef AppendResult _append(self, str topic, int partition, int64_t timestamp_ms, object key, object value,
                              object headers, object callback, CoreClock clock, bytearray buffer,
                              object snapshot) except *:
        """_append_record for send()'s key, value and headers objects; the result's future is the record's."""
        cdef _Parts parts
        cdef AppendResult result
        cdef RecordFuture future
        if headers is not None:
            headers = _headers_tuple(headers)
        _parts_init(&parts)
        try:
            _parts_acquire(&parts, key, value, headers)
            result = self._append_record(topic, partition, timestamp_ms, &parts, clock, buffer, snapshot)
        finally:
            _parts_release(&parts)
        if result.batch != NULL:
            future = (<ProducerBatch>result.batch)._add_future(
                (<ProducerBatch>result.batch).builder.record_count - 1, timestamp_ms, parts.key.size_bytes,
                parts.value.size_bytes, callback)
            result.future = <PyObject*>future  # the batch holds it
        return result

    cdef AppendResult _append_record(self, str topic, int partition, int64_t timestamp_ms, _Parts* parts,
                                     CoreClock clock, bytearray buffer, object snapshot) except *:
        """Appends one record (its borrowed spans) to the partition's last open batch, else to a new batch from
        `buffer` or the pool, created at clock.monotonic_ms() (read only then); the record is the batch's
        builder's last. partition < 0: the built-in partitioner chooses."""
        cdef AppendResult result
        result.batch = NULL
        result.future = NULL
        result.new_batch = False
        result.batch_full = False
        if self.closed:
            raise ProducerClosedError("the producer is closed: send() after close()")
        cdef _TopicPartitioning tp = None
        cdef StickyPartitionInfo info = None
        cdef ProducerBatch last
        cdef RecordBatchBuilder builder
        cdef int64_t size_before = 0
        if partition < 0:
            tp = self._partitioning(topic, snapshot)
        while True:
            if tp is not None:
                info = tp.partitioner.peek_current_partition_info(tp.available, tp.num_partitions)
                partition = info.partition
            dq = self._deque(topic, partition)
            if dq:
                last = dq[len(dq) - 1]
                if last._records is None:
                    builder = last.builder
                    if tp is not None:
                        size_before = builder._estimated()
                    if builder._append(timestamp_ms, parts, True):
                        if tp is not None:
                            tp.partitioner.update_partition_info(info, builder._estimated() - size_before,
                                                                 builder._full(), tp.available, tp.num_partitions)
                        result.batch = <PyObject*>last
                        result.partition = partition
                        result.batch_full = len(dq) > 1 or builder._full()
                        return result
            # no batch of the partition takes the record: all are full (Java's partitionChanged), so a switch the
            # partitioner held back for an open batch happens now and the record goes to the next partition
            if tp is None or not tp.partitioner.update_partition_info(info, 0, True, tp.available,
                                                                      tp.num_partitions):
                break
        result.partition = partition
        cdef int64_t created_ms = clock.monotonic_ms()  # before the pool: a clock that raises leaks no buffer
        cdef int64_t size_bytes = max(<int64_t>self.batch_size_bytes,
                                      <int64_t>(_HEADER_BYTES + _MAX_RECORD_OVERHEAD_BYTES + parts.fields_size_bytes))
        if buffer is None:
            buffer = self.pool.try_allocate(size_bytes)
            if buffer is None:
                return result
        size_bytes = len(buffer)
        builder = RecordBatchBuilder(buffer, size_bytes, self.codec, self._ratios.get(topic, 1.0))
        cdef ProducerBatch batch = ProducerBatch(topic, partition, builder, created_ms, self.completion_factory,
                                                 buffer, size_bytes)
        if not builder._append(timestamp_ms, parts, True):
            # the builder always takes the first record of a buffer sized by the upper bound
            raise AssertionError("a new batch refused its first record")
        dq.append(batch)
        self.incomplete.add(batch)
        if tp is not None:
            tp.partitioner.update_partition_info(info, builder._estimated(), builder._full(), tp.available,
                                                 tp.num_partitions)
        result.batch = <PyObject*>batch
        result.new_batch = True
        result.batch_full = len(dq) > 1 or builder._full()
        return result

    def allocation_size(self, key, value, headers):
        """Bytes a new batch for this record takes from the pool."""
        return max(self.batch_size_bytes, estimate_size_upper_bound(key, value, headers))

    # -- ready / drain -----------------------------------------------------------------------------------------

    cdef bint _backing_off(self, ProducerBatch batch, int32_t leader_epoch, int64_t now_ms):
        if batch.attempts == 0:
            return False
        if leader_epoch >= 0 and batch.leader_epoch >= 0 and leader_epoch > batch.leader_epoch:
            return False  # a new leader: retry at once (KIP-951)
        return now_ms - batch.last_attempt_ms < batch.retry_backoff_ms

    cpdef ReadyResult ready(self, object snapshot, int64_t now_ms):
        cdef ReadyResult result = ReadyResult.__new__(ReadyResult)
        result.ready_nodes = set()
        result.unknown_leader_topics = set()
        cdef int64_t next_delay = 9223372036854775807
        cdef bint exhausted = self.pool.queued_waiters > 0
        cdef bint forced = exhausted or self.closed or self._flushes_in_progress > 0 or (
            self._txn is not None and self._txn.is_completing)
        cdef ProducerBatch batch
        cdef int64_t waited_ms, time_to_wait_ms
        cdef bint backing_off, full, adaptive
        cdef int leader
        cdef int32_t leader_epoch
        cdef _TopicPartitioning tpart
        cdef list queue_sizes, partition_ids
        cdef NodeLatencyStats stats
        all_partitions = snapshot.partitions
        for topic, parts in self._batches.items():
            infos = all_partitions.get(topic)
            tpart = self._partitioners.get(topic) if self._adaptive else None
            # Java: adaptive only once every partition has a deque; the load stats list only those, so a partition
            # without one could never be drawn (keyless records would all go to the first partitions used)
            adaptive = tpart is not None and infos is not None and len(<dict>parts) >= len(infos)
            queue_sizes = [] if adaptive else None
            partition_ids = [] if adaptive else None
            for partition, dq in (<dict>parts).items():
                if dq and self._txn is not None:
                    self._txn._note_queued_partition(topic, partition)
                if infos is None or partition >= len(infos):
                    if dq:
                        result.unknown_leader_topics.add(topic)
                    continue
                info = infos[partition]
                leader = info.leader
                if leader < 0:
                    if dq:
                        result.unknown_leader_topics.add(topic)
                    continue
                if queue_sizes is not None:
                    stats = self._node_stats.get(leader)
                    if stats is None or not stats.is_unavailable(self._availability_timeout_ms):
                        queue_sizes.append(len(dq))
                        partition_ids.append(partition)
                if not dq or leader in result.ready_nodes or (topic, partition) in self._muted:
                    continue
                batch = dq[0]
                if self._txn is not None and self._txn.should_stop_drain(batch):
                    continue  # unblocked by an answer (sequence, producer id, AddPartitionsToTxn), not by time
                leader_epoch = info.leader_epoch
                waited_ms = now_ms - batch.last_attempt_ms
                backing_off = self._backing_off(batch, leader_epoch, now_ms)
                time_to_wait_ms = batch.retry_backoff_ms if backing_off else self.linger_ms
                full = len(dq) > 1 or batch.builder.is_full
                if (full or waited_ms >= time_to_wait_ms or forced) and not backing_off:
                    result.ready_nodes.add(leader)
                else:
                    next_delay = min(next_delay, max(time_to_wait_ms - waited_ms, 0))
            if tpart is not None and infos is not None:
                tpart.partitioner.update_partition_load_stats(queue_sizes, partition_ids, len(infos))
        if self._availability_timeout_ms > 0:
            for node in result.ready_nodes:
                self._latency_stats(node, now_ms).update(now_ms, False)
        result.next_ready_check_delay_ms = next_delay
        return result

    cdef dict _partitions_by_node(self, object snapshot):
        if snapshot is not self._by_node_snapshot:
            by_node = {}
            for topic, infos in snapshot.partitions.items():
                for info in infos:
                    if info.leader >= 0:
                        by_node.setdefault(info.leader, []).append((topic, info.partition))
            self._by_node = by_node
            self._by_node_snapshot = snapshot
        return self._by_node

    cpdef dict drain(self, object snapshot, object node_ids, int max_request_size_bytes, int64_t now_ms):
        """Per node, round-robin over its partitions from the node's drain index, one batch per partition, until
        max.request.size (a single oversized batch still goes alone). Drained batches are closed."""
        cdef dict by_node = self._partitions_by_node(snapshot)
        cdef dict drained = {}
        cdef list parts, ready
        cdef int n, start, index, current
        cdef int64_t size
        cdef ProducerBatch first
        all_partitions = snapshot.partitions
        for node in node_ids:
            parts = by_node.get(node)
            if not parts:
                continue
            n = len(parts)
            start = index = self._drain_index.get(node, 0) % n
            ready = []
            size = 0
            while True:
                topic, partition = parts[index]
                current = index
                index = (index + 1) % n
                tp_batches = self._batches.get(topic)
                dq = (<dict>tp_batches).get(partition) if tp_batches is not None else None
                if dq and (topic, partition) not in self._muted:
                    first = dq[0]
                    info = all_partitions[topic][partition]
                    if not self._backing_off(first, info.leader_epoch, now_ms) and not (
                            self._txn is not None and self._txn.should_stop_drain(first)):
                        if ready and size + first.builder.estimated_size_bytes > max_request_size_bytes:
                            index = current  # it goes first next time (Java would skip past it)
                            break
                        dq.popleft()
                        if self._txn is not None and first.base_sequence == -1:
                            self._txn._assign_sequence(first)
                        self._close_batch(first)
                        first.leader_epoch = info.leader_epoch
                        first.drained_ms = now_ms
                        size += len(first._records)
                        ready.append(first)
                if index == start:
                    break
            self._drain_index[node] = index
            if ready:
                drained[node] = ready
            if self._availability_timeout_ms > 0:
                self._latency_stats(node, now_ms).update(now_ms, True)
        return drained

    cdef NodeLatencyStats _latency_stats(self, object node, int64_t now_ms):
        stats = self._node_stats.get(node)
        if stats is None:
            stats = NodeLatencyStats(now_ms)
            self._node_stats[node] = stats
        return stats

    cdef void _close_batch(self, ProducerBatch batch):
        if batch._reopened:  # a retry whose sequence was reset: rewrite the closed header in place
            rewrite_producer_state(batch._records, batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                   batch.is_transactional)
            batch._reopened = False
            return
        batch.close(self.compressor)
        if self.codec != 0:
            observed = batch.builder.actual_compression_ratio
            current = self._ratios.get(batch.topic, 1.0)
            if observed > current:
                self._ratios[batch.topic] = max(current + RATIO_DETERIORATE_STEP, observed)
            elif observed < current:
                self._ratios[batch.topic] = max(current - RATIO_IMPROVING_STEP, observed)

    # -- retries, expiry, split --------------------------------------------------------------------------------

    cdef double _random_unit(self):
        # xorshift64*: deterministic jitter, no global RNG in the core
        self._rng ^= self._rng >> 12
        self._rng ^= self._rng << 25
        self._rng ^= self._rng >> 27
        return <double>((self._rng * <uint64_t>0x2545F4914F6CDD1D) >> 11) / <double>(1 << 53)

    cdef uint64_t _random_seed(self):
        return <uint64_t>(self._random_unit() * 9007199254740992.0) + 1

    cpdef int64_t retry_backoff_for(self, int attempts):
        """Exponential backoff with +-20% jitter, capped at retry.backoff.max.ms (Java's ExponentialBackoff)."""
        cdef double term = self.retry_backoff_ms
        cdef int i
        for i in range(max(attempts - 1, 0)):
            term *= 2
            if term >= self.retry_backoff_max_ms:
                break
        term *= 0.8 + 0.4 * self._random_unit()
        return <int64_t>min(term, <double>self.retry_backoff_max_ms)

    cpdef void reenqueue(self, ProducerBatch batch, int64_t now_ms):
        """A failed attempt goes back to the head of its deque, to be retried after its backoff; with sequences,
        to its place in sequence order (Java's insertInSequenceOrder)."""
        batch._reenqueued(now_ms, self.retry_backoff_for(batch.attempts + 1))
        dq = self._deque(batch.topic, batch.partition)
        if self._txn is not None and batch.base_sequence != -1:
            self._insert_in_sequence_order(dq, batch)
        else:
            dq.appendleft(batch)

    cdef void _insert_in_sequence_order(self, object dq, ProducerBatch batch):
        # the queue's head holds the sequenced batches in order; unsequenced (never drained) ones follow
        cdef list before = []
        cdef ProducerBatch head
        while dq:
            head = dq[0]
            if head.base_sequence == -1 or head.base_sequence >= batch.base_sequence:
                break
            before.append(dq.popleft())
        dq.appendleft(batch)
        for head in reversed(before):
            dq.appendleft(head)

    cpdef list expired_batches(self, int64_t now_ms):
        """Queued batches that reached delivery.timeout.ms since creation, removed from their deques (oldest first
        per partition: the first one that has not expired ends the scan)."""
        cdef list expired = []
        cdef ProducerBatch batch
        for parts in self._batches.values():
            for dq in (<dict>parts).values():
                while dq:
                    batch = dq[0]
                    if now_ms - batch.created_ms < self.delivery_timeout_ms:
                        break
                    dq.popleft()
                    expired.append(batch)
        return expired

    cpdef int64_t next_expiry_delay_ms(self, int64_t now_ms):
        cdef int64_t delay = 9223372036854775807
        cdef ProducerBatch batch
        for parts in self._batches.values():
            for dq in (<dict>parts).values():
                if dq:
                    batch = dq[0]
                    delay = min(delay, max(batch.created_ms + self.delivery_timeout_ms - now_ms, 0))
        return delay

    def split_and_reenqueue(self, ProducerBatch big):
        """Splits a batch the broker found too large into batch.size pieces (same creation time, not charged to the
        pool), re-points its futures at the pieces and puts them at the head of the deque. Returns the piece count.
        A piece refused again is split into halves by size (one record at least), as Java's since KAFKA-8350: when
        batch.size is over the topic's max.message.bytes, batch.size pieces were refused and split until
        delivery.timeout.ms (20 records of 50 B to a topic of max.message.bytes 200 on Apache Kafka)."""
        decompress = None
        if self.compressor is not None:
            compressor = self.compressor
            decompress = lambda codec, data: compressor.decompress(data)
        closed = big.close(self.compressor)
        cdef Py_ssize_t split_bytes = self.batch_size_bytes
        if big._parent is not None:
            split_bytes = len(closed) // 2  # a record larger than that still gets a piece of its own (below)
        batches = decode_batches(closed, decompress)
        if len(batches) != 1:
            raise CorruptRecordError("a batch to split did not decode as exactly one batch")
        cdef list records = batches[0].records
        cdef list pieces = []
        cdef ProducerBatch piece = None
        cdef RecordFuture future
        cdef _Segment segment, piece_segment
        cdef int i, j
        cdef list owners = [None] * len(records)  # per record: its RecordFuture, or (segment, j) of a send_batch
        for future in big.futures:
            owners[future._relative_offset] = future
        big._drop_futures()  # the pieces hold them now
        if big._segments is not None:
            for segment in big._segments:
                for j in range(segment.count):
                    owners[segment.first_offset + j] = (segment, j)
        for i in range(len(records)):
            record = records[i]
            owner = owners[i]
            if piece is None or not piece.builder.try_append(record.timestamp_ms, record.key, record.value,
                                                             record.headers):
                size = max(split_bytes, estimate_size_upper_bound(record.key, record.value, record.headers))
                builder = RecordBatchBuilder(bytearray(size), size, self.codec, self._ratios.get(big.topic, 1.0))
                piece = ProducerBatch(big.topic, big.partition, builder, big.created_ms, self.completion_factory)
                piece._parent = big
                piece.given_up = big.given_up  # its records are done already: the pieces only carry the bytes
                piece.attempts = big.attempts
                piece.last_attempt_ms = big.last_attempt_ms
                pieces.append(piece)
                if not builder.try_append(record.timestamp_ms, record.key, record.value, record.headers):
                    raise AssertionError("a split piece refused its first record")
            if big.given_up:
                continue
            if type(owner) is RecordFuture:
                future = owner
                future._batch = piece
                future._relative_offset = piece.builder.record_count - 1
                piece._keep_future(future)
            else:
                segment, j = owner
                piece_segment = piece._segment_for(segment.result, piece.builder.record_count - 1)
                piece_segment._add(segment.index_at(j))
        if self.codec != 0:  # the estimate was wrong: start the topic's pieces from no compression (Java)
            self._ratios[big.topic] = max(1.0, big.builder.actual_compression_ratio)
        big.final_state = STATE_SPLIT
        big._segments = None  # the pieces report for them now
        big._pending_children = len(pieces)
        self.incomplete.discard(big)
        dq = self._deque(big.topic, big.partition)
        cdef int32_t sequence = big.base_sequence
        if self._txn is not None and sequence != -1:
            # the pieces take the big batch's sequences, in order, and are tracked in flight (Java's split)
            for piece in pieces:
                piece.producer_id = big.producer_id
                piece.producer_epoch = big.producer_epoch
                piece.base_sequence = sequence
                piece.is_transactional = big.is_transactional
                sequence = _increment_sequence(sequence, piece.builder.record_count)
                self._txn.add_in_flight_batch(piece)
            for piece in reversed(pieces):
                self._insert_in_sequence_order(dq, piece)
                self.incomplete.add(piece)
            return len(pieces)
        for piece in reversed(pieces):
            dq.appendleft(piece)
            self.incomplete.add(piece)
        return len(pieces)

    # -- muting, flush, close, abort ---------------------------------------------------------------------------

    cpdef void mute(self, str topic, int partition):
        self._muted.add((topic, partition))

    cpdef void unmute(self, str topic, int partition):
        self._muted.discard((topic, partition))

    def begin_flush(self):
        self._flushes_in_progress += 1

    def end_flush(self):
        self._flushes_in_progress -= 1

    @property
    def flush_in_progress(self):
        return self._flushes_in_progress > 0

    def close(self):
        """No more appends; ready() now treats every queued batch as sendable."""
        self.closed = True

    def has_undrained(self):
        for parts in self._batches.values():
            for dq in (<dict>parts).values():
                if dq:
                    return True
        return False

    def has_incomplete(self):
        return bool(self.incomplete)

    def queued_batch_count(self, str topic, int partition):
        parts = self._batches.get(topic)
        dq = parts.get(partition) if parts is not None else None
        return len(dq) if dq is not None else 0

    def abort_unsequenced(self, bint keep_sent=False):
        """Removes every queued batch that holds no sequence (never sent) and returns them: an aborting
        transaction fails them; sequenced ones must still resolve at the broker (Java's abortUndrainedBatches).
        keep_sent: also keeps the batches queued again for a retry (Producer.purge(): sent once, they are in flight
        to it; without idempotence they hold no sequence)."""
        cdef list aborted = []
        cdef ProducerBatch b
        for parts in self._batches.values():
            for dq in (<dict>parts).values():
                keep = [b for b in dq if b.base_sequence != -1 or (keep_sent and b.in_retry)]
                if len(keep) != len(dq):
                    aborted.extend([b for b in dq if not (b.base_sequence != -1 or (keep_sent and b.in_retry))])
                    dq.clear()
                    dq.extend(keep)
        return aborted

    def sent_batches(self):
        """The queued batches that were sent before (queued again for a retry; with idempotence, holding a
        sequence): Producer.purge() gives up their records and leaves them queued, as their sequences must still
        resolve at the broker."""
        cdef list sent = []
        cdef ProducerBatch b
        for parts in self._batches.values():
            for dq in (<dict>parts).values():
                sent.extend([b for b in dq if b.base_sequence != -1 or b.in_retry])
        return sent

    def set_transaction_manager(self, TransactionManager txn):
        """Idempotence/transactions: drained batches take sequences from `txn`, which also gates the drain."""
        self._txn = txn

    @property
    def transaction_manager(self):
        return self._txn

    def abort_undrained(self):
        """Removes every queued batch and returns them; the caller fails them (complete with an error)."""
        cdef list aborted = []
        for parts in self._batches.values():
            for dq in (<dict>parts).values():
                aborted.extend(dq)
                dq.clear()
        return aborted

    cpdef object deallocate(self, ProducerBatch batch):
        """A final batch leaves the incomplete set and gives its buffer back; returns a pool waiter to wake."""
        self.incomplete.discard(batch)
        if batch._pooled_buffer is None:
            return None
        buffer = batch._pooled_buffer if batch.builder.buffer_is_original else None
        size = batch.buffer_size_bytes
        batch._pooled_buffer = None
        return self.pool.release(buffer, size)
