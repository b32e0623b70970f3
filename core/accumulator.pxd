# accumulator.pxd: what accumulator.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport int16_t, int32_t, int64_t, uint64_t

cdef enum:
    STATE_INCOMPLETE = 0
    STATE_SUCCEEDED = 1
    STATE_FAILED = 2
    STATE_SPLIT = 3

@cython.final
cdef class RecordMetadata:
    cdef readonly str topic
    cdef readonly int partition
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp_ms
    cdef readonly int serialized_key_size
    cdef readonly int serialized_value_size

@cython.final
cdef class RecordFuture:
    cdef ProducerBatch _batch          # the batch currently holding the record (changes on split)
    cdef ProducerBatch _wait_batch     # the batch it was first appended to: its completion covers split children
    cdef int _relative_offset
    cdef int64_t _timestamp_ms
    cdef int _key_size
    cdef int _value_size
    cdef public object _callback
    cdef bint _done
    cdef str _topic                    # RecordMetadata is made from these on first ask (most never are)
    cdef int _partition
    cdef int64_t _offset
    cdef object _metadata
    cdef object _error

    cdef object _get_metadata(self)
    cdef void _wait(self, object timeout) except *

@cython.final
cdef class ProducerBatch:
    cdef readonly str topic
    cdef readonly int partition
    cdef readonly RecordBatchBuilder builder
    cdef readonly int64_t created_ms
    cdef readonly int64_t last_attempt_ms
    cdef readonly int64_t drained_ms
    cdef readonly int attempts
    cdef readonly bint in_retry
    cdef readonly int64_t retry_backoff_ms      # backoff chosen (with jitter) at the last re-enqueue
    cdef Refs _futures                         # its records' RecordFutures, in append order (refs.pyx: not walked
                                               # by the GC, as they are outside it)
    cdef object _completion_factory
    cdef object _completion                     # the caller's Event-like object, made on first wait
    cdef bint _released                         # final, callbacks run: waiters may go
    cdef readonly int buffer_size_bytes         # bytes charged to the pool (0 for split batches)
    cdef bytearray _pooled_buffer
    cdef object _records
    cdef public int64_t producer_id
    cdef public int16_t producer_epoch
    cdef public int32_t base_sequence
    cdef public bint is_transactional
    cdef readonly bint sequence_has_been_reset  # its sequence was rewritten (epoch bump, failed batch before it)
    cdef bint _reopened                         # closed bytes whose producer state is rewritten at the next drain
    cdef public int32_t leader_epoch            # leader epoch seen at drain (a newer one skips retry backoff)
    cdef readonly int final_state
    cdef readonly object error
    cdef readonly int64_t base_offset
    cdef ProducerBatch _parent
    cdef int _pending_children
    cdef list _segments                         # _Segment per send_batch call with records here, or None
    cdef readonly bint given_up                 # purge(): its records were completed early; the batch is still the
                                                # sender's (its sequence, its buffer, its answer)

    cdef RecordFuture _add_future(self, int32_t relative_offset, int64_t timestamp_ms, Py_ssize_t key_size,
                                  Py_ssize_t value_size, object callback)
    cdef int _keep_future(self, RecordFuture future) except -1
    cdef void _drop_futures(self) noexcept
    cdef _Segment _segment_for(self, BatchResult result, int32_t relative_offset)
    cpdef object close(self, object compressor)
    cpdef object waitable(self)
    cpdef void release_waiters(self)
    cpdef list complete(self, int64_t base_offset, int64_t log_append_time_ms, object error)
    cpdef list give_up(self, object error)
    cdef list _complete_records(self, int64_t base_offset, int64_t log_append_time_ms, object error)
    cpdef void reset_producer_state(self, int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                                    bint is_transactional)
    cdef void _reenqueued(self, int64_t now_ms, int64_t backoff_ms)

cdef class _TopicPartitioning:
    cdef BuiltInPartitioner partitioner
    cdef object snapshot
    cdef list available
    cdef int num_partitions

@cython.final
cdef class ReadyResult:
    cdef readonly set ready_nodes
    cdef readonly int64_t next_ready_check_delay_ms
    cdef readonly set unknown_leader_topics

cdef struct AppendResult:
    # What one append did. The objects are borrowed (the partition's deque holds the batch, the batch its futures):
    # valid while the caller holds the producer lock.
    PyObject* batch             # the batch that took the record; NULL: a new one was needed and the pool had no buffer
    PyObject* future            # the record's RecordFuture (_append: send()'s records), else NULL
    int partition               # the record's partition (the built-in partitioner's choice for partition < 0)
    bint new_batch              # the record started a batch (taking the buffer given, if any)
    bint batch_full             # the partition has a full batch now: the sender has something to send

@cython.final
cdef class RecordAccumulator:
    cdef readonly int batch_size_bytes
    cdef readonly int codec
    cdef readonly int64_t linger_ms
    cdef readonly int64_t retry_backoff_ms
    cdef readonly int64_t retry_backoff_max_ms
    cdef readonly int64_t delivery_timeout_ms
    cdef readonly BufferPool pool
    cdef object compressor
    cdef object completion_factory
    cdef dict _batches            # topic -> {partition: deque[ProducerBatch]}
    cdef dict _ratios             # topic -> compression ratio estimate
    cdef set _muted               # {(topic, partition)}
    cdef dict _drain_index        # node id -> int
    cdef readonly set incomplete
    cdef int _flushes_in_progress
    cdef readonly bint closed
    cdef object _by_node_snapshot
    cdef dict _by_node            # node id -> [(topic, partition)] for _by_node_snapshot
    cdef uint64_t _rng
    cdef dict _partitioners       # topic -> _TopicPartitioning (records without a key, or partitioner.ignore.keys)
    cdef bint _adaptive
    cdef int64_t _availability_timeout_ms
    cdef dict _node_stats         # node id -> NodeLatencyStats (partitioner.availability.timeout.ms)
    cdef TransactionManager _txn  # idempotence/transactions: sequences at drain, drain gating, retry order
    cdef str _cached_topic        # _deque's last topic and its {partition: deque}
    cdef dict _cached_parts

    cdef object _deque(self, str topic, int partition)
    cdef _TopicPartitioning _partitioning(self, str topic, object snapshot)
    cpdef tuple append(self, str topic, int partition, int64_t timestamp_ms, object key, object value,
                       object headers, object callback, int64_t now_ms, bytearray buffer=*, object snapshot=*)
    cdef AppendResult _append(self, str topic, int partition, int64_t timestamp_ms, object key, object value,
                              object headers, object callback, CoreClock clock, bytearray buffer,
                              object snapshot) except *
    cdef AppendResult _append_record(self, str topic, int partition, int64_t timestamp_ms, _Parts* parts,
                                     CoreClock clock, bytearray buffer, object snapshot) except *
    cdef bint _backing_off(self, ProducerBatch batch, int32_t leader_epoch, int64_t now_ms)
    cpdef ReadyResult ready(self, object snapshot, int64_t now_ms)
    cdef dict _partitions_by_node(self, object snapshot)
    cpdef dict drain(self, object snapshot, object node_ids, int max_request_size_bytes, int64_t now_ms)
    cdef NodeLatencyStats _latency_stats(self, object node, int64_t now_ms)
    cdef void _close_batch(self, ProducerBatch batch)
    cdef double _random_unit(self)
    cdef uint64_t _random_seed(self)
    cpdef int64_t retry_backoff_for(self, int attempts)
    cpdef void reenqueue(self, ProducerBatch batch, int64_t now_ms)
    cdef void _insert_in_sequence_order(self, object dq, ProducerBatch batch)
    cpdef list expired_batches(self, int64_t now_ms)
    cpdef int64_t next_expiry_delay_ms(self, int64_t now_ms)
    cpdef void mute(self, str topic, int partition)
    cpdef void unmute(self, str topic, int partition)
    cpdef object deallocate(self, ProducerBatch batch)
