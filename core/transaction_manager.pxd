# transaction_manager.pxd: what transaction_manager.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).


cdef enum:
    S_UNINITIALIZED = 0
    S_INITIALIZING = 1
    S_READY = 2
    S_IN_TRANSACTION = 3
    S_COMMITTING_TRANSACTION = 4
    S_ABORTING_TRANSACTION = 5
    S_ABORTABLE_ERROR = 6
    S_FATAL_ERROR = 7

cdef class _PartitionSequences:
    cdef int64_t producer_id
    cdef int16_t producer_epoch
    cdef int32_t next_sequence
    cdef int32_t last_acked_sequence
    cdef int64_t last_acked_offset
    cdef int64_t acked_producer_id   # the last producer id the partition acknowledged a batch of (-1: none)
    cdef list in_flight              # ProducerBatch with a sequence, not final, in base_sequence order

    cdef void insert(self, ProducerBatch batch)
    cdef void remove(self, ProducerBatch batch)

cdef class TransactionManager:
    cdef readonly str transactional_id
    cdef readonly int transaction_timeout_ms
    cdef readonly int state
    cdef readonly object last_error
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly bint epoch_bump_required
    cdef readonly bint transaction_started
    cdef readonly bint transaction_v2                  # Transactions V2 (KIP-890): see the rules above
    cdef readonly int64_t features_epoch               # of the finalized features transaction_v2 was read from
    cdef public bint coordinator_supports_epoch_bump   # InitProducerId v3+ (KIP-360) at the coordinator
    cdef bint _transactional
    cdef dict _partitions           # (topic, partition) -> _PartitionSequences
    cdef dict _unresolved           # (topic, partition) -> sequence after the expired batch
    cdef set _to_rewrite            # partitions whose in-flight sequences restart at the next producer id/epoch
    cdef set _new_partitions        # in the transaction's batches, not yet in an AddPartitionsToTxn request
    cdef set _pending_partitions    # in an AddPartitionsToTxn request in flight
    cdef set _partitions_in_txn     # added to the transaction by the coordinator

    cpdef void update_transaction_version(self, int64_t features_epoch, int transaction_version,
                                          bint on_initialization) except *
    cpdef void transition_to(self, int target, object error=*) except *
    cdef void _ensure_transactional(self) except *
    cpdef void maybe_fail_with_error(self) except *
    cpdef void fail_if_not_ready_for_send(self) except *
    cpdef void transition_to_abortable_error(self, object error) except *
    cpdef void transition_to_fatal_error(self, object error) except *
    cpdef void abortable_error_if_possible(self, object error) except *
    cpdef void begin_initializing(self) except *
    cpdef void initialized(self, int64_t producer_id, int16_t producer_epoch, bint is_epoch_bump=*) except *
    cpdef bint bump_idempotent_epoch_and_reset_id_if_needed(self) except *
    cpdef void begin_transaction(self) except *
    cpdef void begin_commit(self) except *
    cpdef void begin_abort(self) except *
    cpdef void complete_transaction(self, int64_t producer_id=*, int16_t producer_epoch=*) except *
    cpdef void mark_transaction_started(self)
    cpdef void maybe_add_partition(self, str topic, int partition)
    cdef inline void _note_queued_partition(self, str topic, int partition)
    cpdef list take_new_partitions(self)
    cpdef void partitions_added(self, list partitions)
    cpdef void partitions_not_added(self, list partitions)
    cpdef bint is_send_to_partition_allowed(self, str topic, int partition)
    cdef _PartitionSequences _entry(self, object tp)
    cdef void _start_sequences_at_beginning(self, _PartitionSequences entry)
    cdef inline bint _has_in_flight(self, object tp)
    cdef inline bint _has_stale_producer_id(self, object tp)
    cpdef int32_t first_in_flight_sequence(self, str topic, int partition)
    cpdef bint should_stop_drain(self, ProducerBatch first)
    cdef void _assign_sequence(self, ProducerBatch batch)
    cpdef void add_in_flight_batch(self, ProducerBatch batch) except *
    cpdef void remove_in_flight_batch(self, ProducerBatch batch)
    cpdef void handle_completed_batch(self, ProducerBatch batch, int64_t base_offset)
    cpdef bint is_acknowledged_past(self, ProducerBatch batch)
    cdef void _maybe_transition_to_error_state(self, object error) except *
    cpdef void handle_failed_batch(self, ProducerBatch batch, object error, bint adjust_sequence_numbers) except *
    cdef void _adjust_sequences_due_to_failed_batch(self, ProducerBatch failed)
    cpdef void request_epoch_bump_for_partition(self, str topic, int partition)
    cpdef bint can_retry(self, ProducerBatch batch, int error_code, int64_t log_start_offset,
                         bint retriable) except *
    cdef bint _is_next_sequence(self, object tp, int32_t sequence)
    cpdef void mark_sequence_unresolved(self, ProducerBatch batch)
    cpdef void maybe_resolve_sequences(self) except *
