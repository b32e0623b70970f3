# TransactionManager: the idempotent and transactional producer's state (Java's TransactionManager, our own code).
# Rules:
# - the caller holds the producer lock around every call; no I/O, no clock, no threads: the Sender builds the
#   requests (cykafka/transactions.py) and reports answers here;
# - the transaction state machine is the table TRANSACTION_TRANSITIONS (target -> allowed sources); an invalid
#   transition raises TransactionStateError naming both states;
# - sequences: per partition the next base sequence, the last acknowledged sequence and offset, and the drained
#   batches holding a sequence (in flight or waiting to be retried) in sequence order. Sequences advance at drain
#   and are confirmed only by success; the drain sends a partition's retried batch only when it holds the first
#   in-flight sequence (so while retrying, one request per partition is out), and a new batch only once the
#   partition acknowledged a batch of the current producer id or has nothing in flight (Kafka appends any sequence
#   from a producer id it holds no state for: a batch must never overtake the producer's first one there);
# - Transactions V2 (KIP-890 part 2), chosen from the cluster's finalized `transaction.version` >= 2
#   (`update_transaction_version`, Java's maybeUpdateTransactionV2Enabled): a partition joins the transaction when
#   its data is queued (Produce v12 adds it at the broker; no AddPartitionsToTxn), EndTxn v5 answers the next producer
#   id/epoch (`complete_transaction` takes them and restarts every sequence), and an abortable error needs no
#   client-side epoch bump (the broker bumps the epoch at every EndTxn); V1 otherwise, as before;
# - an epoch bump (KIP-360) rewrites the sequences of a partition's in-flight batches from 0 under the new
#   producer id/epoch; the batch bytes are rewritten when the batch is drained again (never while on the wire).

from enum import IntEnum

from cykafka.protocol.error_codes import ErrorCode, ErrorKind, kinds_of


class TransactionState(IntEnum):
    UNINITIALIZED = S_UNINITIALIZED
    INITIALIZING = S_INITIALIZING
    READY = S_READY
    IN_TRANSACTION = S_IN_TRANSACTION
    COMMITTING_TRANSACTION = S_COMMITTING_TRANSACTION
    ABORTING_TRANSACTION = S_ABORTING_TRANSACTION
    ABORTABLE_ERROR = S_ABORTABLE_ERROR
    FATAL_ERROR = S_FATAL_ERROR


_S = TransactionState
# target state -> the states it may be entered from (FATAL_ERROR: from any state)
TRANSACTION_TRANSITIONS = {
    _S.UNINITIALIZED: frozenset({_S.READY}),
    # (from COMMITTING_TRANSACTION: a commit followed by the epoch bump of a move to Transactions V2, as Java)
    _S.INITIALIZING: frozenset({_S.UNINITIALIZED, _S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION}),
    _S.READY: frozenset({_S.INITIALIZING, _S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION}),
    _S.IN_TRANSACTION: frozenset({_S.READY}),
    _S.COMMITTING_TRANSACTION: frozenset({_S.IN_TRANSACTION}),
    _S.ABORTING_TRANSACTION: frozenset({_S.IN_TRANSACTION, _S.ABORTABLE_ERROR}),
    _S.ABORTABLE_ERROR: frozenset({_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION, _S.ABORTABLE_ERROR}),
    _S.FATAL_ERROR: frozenset(_S),
}

# the broker error codes this file compares in C, from the one error table (cykafka/protocol/error_codes.py)
cdef int _OUT_OF_ORDER_SEQUENCE_NUMBER = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
cdef int _UNKNOWN_PRODUCER_ID = ErrorCode.UNKNOWN_PRODUCER_ID

cdef int32_t _NO_SEQUENCE = -1


def transaction_state_name(int state):
    return TransactionState(state).name if 0 <= state < 8 else f"UNKNOWN_STATE_{state}"


cdef inline int32_t _increment_sequence(int32_t sequence, int32_t increment):
    # Kafka's DefaultRecordBatch.incrementSequence: wraps to 0 past INT32_MAX
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


cdef class _PartitionSequences:
    """One partition's sequence bookkeeping (Java's TopicPartitionEntry)."""

    def __cinit__(self):
        self.producer_id = -1
        self.producer_epoch = -1
        self.next_sequence = 0
        self.last_acked_sequence = _NO_SEQUENCE
        self.last_acked_offset = -1
        self.acked_producer_id = -1
        self.in_flight = []

    cdef void insert(self, ProducerBatch batch):
        cdef int i = len(self.in_flight)
        while i > 0 and (<ProducerBatch>self.in_flight[i - 1]).base_sequence > batch.base_sequence:
            i -= 1
        self.in_flight.insert(i, batch)

    cdef void remove(self, ProducerBatch batch):
        cdef int i
        for i in range(len(self.in_flight)):
            if self.in_flight[i] is batch:
                del self.in_flight[i]
                return


cdef class TransactionManager:
    """Producer id/epoch, the transaction state machine, per-partition sequences and the partitions/offsets of the
    ongoing transaction. transactional_id None: the idempotent producer (no transactions, same sequencing)."""

    def __init__(self, str transactional_id=None, int transaction_timeout_ms=60000):
        self.transactional_id = transactional_id
        self._transactional = transactional_id is not None
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = S_UNINITIALIZED
        self.producer_id = -1
        self.producer_epoch = -1
        self.coordinator_supports_epoch_bump = True
        self.transaction_v2 = False
        self.features_epoch = -1
        self._partitions = {}
        self._unresolved = {}
        self._to_rewrite = set()
        self._new_partitions = set()
        self._pending_partitions = set()
        self._partitions_in_txn = set()

    # -- state ------------------------------------------------------------------------------------------------

    @property
    def is_transactional(self):
        return self._transactional

    @property
    def state_name(self):
        return transaction_state_name(self.state)

    @property
    def has_producer_id(self):
        return self.producer_id >= 0

    @property
    def has_error(self):
        return self.state == S_ABORTABLE_ERROR or self.state == S_FATAL_ERROR

    @property
    def has_fatal_error(self):
        return self.state == S_FATAL_ERROR

    @property
    def has_abortable_error(self):
        return self.state == S_ABORTABLE_ERROR

    @property
    def is_completing(self):
        return self.state == S_COMMITTING_TRANSACTION or self.state == S_ABORTING_TRANSACTION

    @property
    def is_aborting(self):
        return self.state == S_ABORTING_TRANSACTION

    @property
    def has_ongoing_transaction(self):
        return (self.state == S_IN_TRANSACTION or self.state == S_COMMITTING_TRANSACTION
                or self.state == S_ABORTING_TRANSACTION or self.state == S_ABORTABLE_ERROR)

    @property
    def can_bump_epoch(self):
        """An abortable error can be recovered from (Java's canHandleAbortableError): the idempotent producer always;
        a transactional one when its coordinator bumps epochs on request (KIP-360) or at every EndTxn (V2)."""
        return not self._transactional or self.coordinator_supports_epoch_bump or self.transaction_v2

    @property
    def needs_client_epoch_bump(self):
        """Recovering from an abortable error takes an InitProducerId epoch bump after the abort (Java's
        needToTriggerEpochBumpFromClient): V1 with a KIP-360 coordinator; never in V2 (EndTxn v5 bumps it)."""
        return not self._transactional or (self.coordinator_supports_epoch_bump and not self.transaction_v2)

    cpdef void update_transaction_version(self, int64_t features_epoch, int transaction_version,
                                          bint on_initialization) except *:
        """The cluster's finalized `transaction.version` level as of `features_epoch` (the transport's finalized
        features): V2 at level 2 and above, for a transactional producer. Read after init_transactions()
        (on_initialization) and whenever a transaction completes; an answer no newer than the one already read
        changes nothing. Moving to V2 later bumps the epoch after the transaction completing (Java: the old
        epoch's partitions must not count as added to the first V2 transaction)."""
        if features_epoch <= self.features_epoch:
            return
        self.features_epoch = features_epoch
        cdef bint was_v2 = self.transaction_v2
        self.transaction_v2 = self._transactional and transaction_version >= 2
        if not on_initialization and not was_v2 and self.transaction_v2:
            self.epoch_bump_required = True

    cpdef void transition_to(self, int target, object error=None) except *:
        """Moves to `target` if the table allows it from the current state; TransactionStateError otherwise.
        The error states need the error that caused them; any other state clears it."""
        allowed = TRANSACTION_TRANSITIONS.get(target)
        if allowed is None or self.state not in allowed:
            prefix = f"TransactionalId {self.transactional_id}: " if self._transactional else ""
            raise TransactionStateError(
                f"{prefix}invalid transition attempted from state {transaction_state_name(self.state)} to state "
                f"{transaction_state_name(target)}", from_state=transaction_state_name(self.state),
                to_state=transaction_state_name(target))
        if target == S_FATAL_ERROR or target == S_ABORTABLE_ERROR:
            if error is None:
                raise ValueError(f"cannot enter {transaction_state_name(target)} without an error")
            self.last_error = error
        else:
            self.last_error = None
        self.state = target

    cdef void _ensure_transactional(self) except *:
        if not self._transactional:
            raise TransactionStateError("transactional method called on a producer without transactional.id")

    cpdef void maybe_fail_with_error(self) except *:
        """Raises the typed error of an error state: ProducerFencedError, TransactionFatalError or
        TransactionAbortableError (whose cause is the error that put the producer there)."""
        if not (self.state == S_ABORTABLE_ERROR or self.state == S_FATAL_ERROR):
            return
        cause = self.last_error
        if isinstance(cause, ProducerFencedError):
            raise ProducerFencedError(f"the producer was fenced: {cause}", code=cause.code) from cause
        if isinstance(cause, AuthorizationError):  # typed, as Java's initTransactions surfaces it
            raise type(cause)(f"{cause} (the producer can only be closed)", code=cause.code, name=cause.name) \
                from cause
        if self.state == S_FATAL_ERROR:
            raise TransactionFatalError(f"the producer is in a fatal error state and can only be closed: "
                                        f"{cause}") from cause
        raise TransactionAbortableError(f"the transaction failed and must be aborted (abort_transaction()): "
                                        f"{cause}") from cause

    cpdef void fail_if_not_ready_for_send(self) except *:
        """send() checks (Java's failIfNotReadyForSend)."""
        self.maybe_fail_with_error()
        if self._transactional:
            if self.producer_id < 0:
                raise TransactionStateError("send() before init_transactions() completed on a transactional "
                                            "producer")
            if self.state != S_IN_TRANSACTION:
                raise TransactionStateError(f"send() in state {transaction_state_name(self.state)}: call "
                                            f"begin_transaction() first")

    cpdef void transition_to_abortable_error(self, object error) except *:
        if self.state == S_ABORTING_TRANSACTION or self.state == S_FATAL_ERROR:
            return  # already aborting / nothing left to abort
        if self.state not in TRANSACTION_TRANSITIONS[S_ABORTABLE_ERROR]:
            return  # no transaction is open (a late answer after it ended)
        self.transition_to(S_ABORTABLE_ERROR, error)

    cpdef void transition_to_fatal_error(self, object error) except *:
        self.transition_to(S_FATAL_ERROR, error)

    cpdef void abortable_error_if_possible(self, object error) except *:
        """Abortable when the producer can recover (KIP-360, V2), with a client epoch bump in V1, else fatal."""
        if self.can_bump_epoch:
            if self.needs_client_epoch_bump:
                self.epoch_bump_required = True
            self.transition_to_abortable_error(error)
        else:
            self.transition_to_fatal_error(error)

    # -- producer id ------------------------------------------------------------------------------------------

    cpdef void begin_initializing(self) except *:
        """init_transactions(): UNINITIALIZED -> INITIALIZING (the caller sends InitProducerId)."""
        self._ensure_transactional()
        if self.state == S_FATAL_ERROR:
            self.maybe_fail_with_error()
        self.transition_to(S_INITIALIZING)

    cpdef void initialized(self, int64_t producer_id, int16_t producer_epoch, bint is_epoch_bump=False) except *:
        """An InitProducerId answer: the new id/epoch, with no transaction open; READY. Partitions waiting for an
        epoch bump restart their in-flight sequences at 0 under it; a transactional epoch bump resets every
        partition."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.transition_to(S_READY)
        self.transaction_started = False  # a new id/epoch has no transaction open
        self._new_partitions.clear()
        self._pending_partitions.clear()
        self._partitions_in_txn.clear()
        if is_epoch_bump:
            self._partitions.clear()
            self._unresolved.clear()
        for tp in self._to_rewrite:
            if tp in self._partitions:
                self._start_sequences_at_beginning(<_PartitionSequences>self._partitions[tp])
            self._unresolved.pop(tp, None)
        self._to_rewrite.clear()
        self.epoch_bump_required = False

    cpdef bint bump_idempotent_epoch_and_reset_id_if_needed(self) except *:
        """The idempotent producer, once per sender loop: True when an InitProducerId must be sent now.
        An epoch bump takes a fresh producer id (see docs/delivery.md): Kafka gives a non-transactional
        InitProducerId a new id anyway, and some brokers (Tansu) refuse a client-side epoch bump."""
        if self._transactional or self.state == S_FATAL_ERROR:
            return False
        if self.epoch_bump_required and self.state == S_READY:
            self.producer_id = -1
            self.producer_epoch = -1
            self.transition_to(S_UNINITIALIZED)
        if self.state == S_UNINITIALIZED:
            self.transition_to(S_INITIALIZING)
            return True
        return False

    # -- transactions -----------------------------------------------------------------------------------------

    cpdef void begin_transaction(self) except *:
        self._ensure_transactional()
        self.maybe_fail_with_error()
        self.transition_to(S_IN_TRANSACTION)

    cpdef void begin_commit(self) except *:
        self._ensure_transactional()
        self.maybe_fail_with_error()
        self.transition_to(S_COMMITTING_TRANSACTION)

    cpdef void begin_abort(self) except *:
        self._ensure_transactional()
        if self.state != S_ABORTABLE_ERROR:
            self.maybe_fail_with_error()
        self.transition_to(S_ABORTING_TRANSACTION)
        self._new_partitions.clear()

    cpdef void complete_transaction(self, int64_t producer_id=-1, int16_t producer_epoch=-1) except *:
        """EndTxn succeeded (or there was nothing to end): READY, or INITIALIZING when an epoch bump follows.
        producer_id >= 0: EndTxn v5's producer id/epoch for the next transaction (V2): taken, and every partition's
        sequences start over under them (Java's resetSequenceNumbers)."""
        cdef dict kept
        cdef _PartitionSequences entry, fresh
        if producer_id >= 0:
            # sequences restart at 0 under the new epoch; a partition that acknowledged a batch of this producer id
            # keeps that fact: the broker holds state for the id there and refuses a new epoch's sequence other
            # than 0, so its batches need not go one at a time again (the drain's gate, should_stop_drain)
            kept = {}
            for tp, entry in self._partitions.items():
                if entry.acked_producer_id == producer_id and not entry.in_flight:
                    fresh = _PartitionSequences()
                    fresh.acked_producer_id = producer_id
                    kept[tp] = fresh
            self._partitions = kept
            self.producer_id = producer_id
            self.producer_epoch = producer_epoch
            self._unresolved.clear()
        self.transition_to(S_INITIALIZING if self.epoch_bump_required else S_READY)
        self.transaction_started = False
        self._new_partitions.clear()
        self._pending_partitions.clear()
        self._partitions_in_txn.clear()

    cpdef void mark_transaction_started(self):
        self.transaction_started = True

    cpdef void maybe_add_partition(self, str topic, int partition):
        """A partition with data in the ongoing transaction; queued for AddPartitionsToTxn unless known. In V2 it is
        in the transaction at once: its first Produce (v12) adds it at the broker, and the transaction has started."""
        tp = (topic, partition)
        if self.transaction_v2:
            self._partitions_in_txn.add(tp)
            self.transaction_started = True
            return
        if tp in self._partitions_in_txn or tp in self._pending_partitions or tp in self._new_partitions:
            return
        self._new_partitions.add(tp)

    cdef inline void _note_queued_partition(self, str topic, int partition):
        # ready(): data for a partition of the transaction (appended while IN_TRANSACTION)
        if self._transactional and (self.state == S_IN_TRANSACTION or self.state == S_COMMITTING_TRANSACTION):
            self.maybe_add_partition(topic, partition)

    @property
    def has_partitions_to_add(self):
        return bool(self._new_partitions) or bool(self._pending_partitions)

    @property
    def has_new_partitions(self):
        return bool(self._new_partitions)

    cpdef list take_new_partitions(self):
        """The partitions for the next AddPartitionsToTxn: new ones join those already pending (sorted)."""
        self._pending_partitions.update(self._new_partitions)
        self._new_partitions.clear()
        return sorted(self._pending_partitions)

    cpdef void partitions_added(self, list partitions):
        for tp in partitions:
            self._pending_partitions.discard(tuple(tp))
            self._partitions_in_txn.add(tuple(tp))
        self.transaction_started = True

    cpdef void partitions_not_added(self, list partitions):
        for tp in partitions:
            self._pending_partitions.discard(tuple(tp))

    def is_partition_added(self, str topic, int partition):
        return (topic, partition) in self._partitions_in_txn

    def is_partition_pending_add(self, str topic, int partition):
        return (topic, partition) in self._new_partitions or (topic, partition) in self._pending_partitions

    cpdef bint is_send_to_partition_allowed(self, str topic, int partition):
        if self.state == S_FATAL_ERROR:
            return False
        return not self._transactional or (topic, partition) in self._partitions_in_txn

    # -- sequences --------------------------------------------------------------------------------------------

    cdef _PartitionSequences _entry(self, object tp):
        cdef _PartitionSequences entry = self._partitions.get(tp)
        if entry is None:
            entry = _PartitionSequences()
            self._partitions[tp] = entry
        return entry

    cdef void _start_sequences_at_beginning(self, _PartitionSequences entry):
        cdef int32_t sequence = 0
        cdef ProducerBatch batch
        for batch in entry.in_flight:
            batch.reset_producer_state(self.producer_id, self.producer_epoch, sequence, batch.is_transactional)
            sequence = _increment_sequence(sequence, batch.builder.record_count)
        entry.producer_id = self.producer_id
        entry.producer_epoch = self.producer_epoch
        entry.next_sequence = sequence
        entry.last_acked_sequence = _NO_SEQUENCE

    cdef inline bint _has_in_flight(self, object tp):
        cdef _PartitionSequences entry = self._partitions.get(tp)
        return entry is not None and len(entry.in_flight) > 0

    cdef inline bint _has_stale_producer_id(self, object tp):
        cdef _PartitionSequences entry = self._partitions.get(tp)
        return (entry is None or entry.producer_id != self.producer_id
                or entry.producer_epoch != self.producer_epoch)

    def next_sequence(self, str topic, int partition):
        return self._entry((topic, partition)).next_sequence

    def last_acked_sequence(self, str topic, int partition):
        """The last acknowledged sequence of the partition, -1 when none."""
        cdef _PartitionSequences entry = self._partitions.get((topic, partition))
        return entry.last_acked_sequence if entry is not None else _NO_SEQUENCE

    def last_acked_offset(self, str topic, int partition):
        cdef _PartitionSequences entry = self._partitions.get((topic, partition))
        return entry.last_acked_offset if entry is not None else -1

    def in_flight_batches(self, str topic, int partition):
        cdef _PartitionSequences entry = self._partitions.get((topic, partition))
        return list(entry.in_flight) if entry is not None else []

    def has_in_flight_batches(self, str topic, int partition):
        return self._has_in_flight((topic, partition))

    cpdef int32_t first_in_flight_sequence(self, str topic, int partition):
        cdef _PartitionSequences entry = self._partitions.get((topic, partition))
        if entry is None or not entry.in_flight:
            return _NO_SEQUENCE
        return (<ProducerBatch>entry.in_flight[0]).base_sequence

    cpdef bint should_stop_drain(self, ProducerBatch first):
        """Java's shouldStopDrainBatchesForPartition: True when the partition's head batch must wait."""
        tp = (first.topic, first.partition)
        if self.state == S_FATAL_ERROR:
            return True
        if self._transactional and tp not in self._partitions_in_txn:
            return True
        if self.producer_id < 0:
            return True  # no producer id yet (or being replaced)
        if first.base_sequence == _NO_SEQUENCE:
            if self._has_in_flight(tp) and self._has_stale_producer_id(tp):
                return True  # earlier batches under the old id/epoch first: a new epoch starts at sequence 0
            if tp in self._unresolved:
                return True  # an expired batch's fate is unknown
            if self._has_in_flight(tp) and self._entry(tp).acked_producer_id != self.producer_id:
                # nothing of this producer id acknowledged here yet: the broker may hold no state for it on the
                # partition, and then Kafka appends any sequence; a second batch overtaking a first that failed
                # (NOT_LEADER_OR_FOLLOWER on a new partition) would be appended and the first never could be.
                # (With state for the id, a new epoch's sequence other than 0 is refused: no gate needed.)
                return True
            return False
        cdef int32_t first_in_flight = self.first_in_flight_sequence(first.topic, first.partition)
        return first_in_flight != _NO_SEQUENCE and first.base_sequence != first_in_flight

    cdef void _assign_sequence(self, ProducerBatch batch):
        # drain: a batch without a sequence takes the partition's next one and becomes tracked
        tp = (batch.topic, batch.partition)
        cdef _PartitionSequences entry = self._entry(tp)
        if (entry.producer_id != self.producer_id or entry.producer_epoch != self.producer_epoch) \
                and not entry.in_flight:
            self._start_sequences_at_beginning(entry)
        batch.producer_id = self.producer_id
        batch.producer_epoch = self.producer_epoch
        batch.base_sequence = entry.next_sequence
        batch.is_transactional = self._transactional
        entry.next_sequence = _increment_sequence(entry.next_sequence, batch.builder.record_count)
        entry.insert(batch)

    cpdef void add_in_flight_batch(self, ProducerBatch batch) except *:
        """Tracks a batch that already holds a sequence (split pieces)."""
        if batch.base_sequence == _NO_SEQUENCE:
            raise ValueError(f"cannot track {batch!r}: it has no sequence")
        self._entry((batch.topic, batch.partition)).insert(batch)

    cpdef void remove_in_flight_batch(self, ProducerBatch batch):
        cdef _PartitionSequences entry = self._partitions.get((batch.topic, batch.partition))
        if entry is not None:
            entry.remove(batch)

    cpdef void handle_completed_batch(self, ProducerBatch batch, int64_t base_offset):
        """A success (also DUPLICATE_SEQUENCE_NUMBER, and a late success for an expired batch)."""
        tp = (batch.topic, batch.partition)
        cdef _PartitionSequences entry = self._partitions.get(tp)
        if entry is None:
            if self._transactional:
                return
            entry = self._entry(tp)  # reset while the batch was out: track it again
        if batch.base_sequence != _NO_SEQUENCE and batch.producer_id == self.producer_id:
            entry.acked_producer_id = batch.producer_id
        if batch.base_sequence != _NO_SEQUENCE and batch.producer_id == entry.producer_id \
                and batch.producer_epoch == entry.producer_epoch:
            last_sequence = _increment_sequence(batch.base_sequence, batch.builder.record_count - 1)
            if last_sequence > entry.last_acked_sequence:
                entry.last_acked_sequence = last_sequence
        if base_offset >= 0 and base_offset + batch.builder.record_count - 1 > entry.last_acked_offset:
            entry.last_acked_offset = base_offset + batch.builder.record_count - 1
        entry.remove(batch)

    cpdef bint is_acknowledged_past(self, ProducerBatch batch):
        """True when a later sequence of the same producer id/epoch was acknowledged on the batch's partition: the
        broker appends a producer's sequences in order, so this batch is in the log whatever its retry is answered
        (Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER for a duplicate older than its last 5 batches)."""
        cdef _PartitionSequences entry = self._partitions.get((batch.topic, batch.partition))
        if entry is None or batch.base_sequence == _NO_SEQUENCE or entry.last_acked_sequence == _NO_SEQUENCE:
            return False
        if batch.producer_id != entry.producer_id or batch.producer_epoch != entry.producer_epoch:
            return False
        return batch.base_sequence + batch.builder.record_count - 1 <= entry.last_acked_sequence

    cdef void _maybe_transition_to_error_state(self, object error) except *:
        code = getattr(error, "code", None)
        # as Java's maybeTransitionToErrorState: a failed authentication is not on the fatal list (records fail
        # with it; a transaction becomes abortable; the producer goes on once the credentials work)
        if (isinstance(error, (ProducerFencedError, UnsupportedVersionError))
                or kinds_of(code) & ErrorKind.PRODUCER_FATAL):
            if self.state != S_FATAL_ERROR:
                self.transition_to_fatal_error(error)
        elif self._transactional:
            if self.needs_client_epoch_bump and not (self.state == S_COMMITTING_TRANSACTION
                                                     or self.state == S_ABORTING_TRANSACTION):
                self.epoch_bump_required = True
            self.transition_to_abortable_error(error)

    cpdef void handle_failed_batch(self, ProducerBatch batch, object error, bint adjust_sequence_numbers) except *:
        """A batch failed for good (error, retries exhausted, expiry). adjust_sequence_numbers: the broker surely
        did not append it, so later sequences may close the gap."""
        self._maybe_transition_to_error_state(error)
        self.remove_in_flight_batch(batch)
        if self.state == S_FATAL_ERROR:
            return
        tp = (batch.topic, batch.partition)
        code = getattr(error, "code", None)
        if code == _OUT_OF_ORDER_SEQUENCE_NUMBER and not self._transactional:
            self.request_epoch_bump_for_partition(batch.topic, batch.partition)
        elif code == _UNKNOWN_PRODUCER_ID:
            self._partitions.pop(tp, None)  # the broker lost our state: the partition starts over
            self._unresolved.pop(tp, None)
        elif adjust_sequence_numbers and batch.base_sequence != _NO_SEQUENCE:
            if not self._transactional:
                self.request_epoch_bump_for_partition(batch.topic, batch.partition)
            else:
                self._adjust_sequences_due_to_failed_batch(batch)

    cdef void _adjust_sequences_due_to_failed_batch(self, ProducerBatch failed):
        cdef _PartitionSequences entry = self._partitions.get((failed.topic, failed.partition))
        if entry is None:
            return
        cdef int32_t count = failed.builder.record_count
        cdef ProducerBatch batch
        entry.next_sequence = max(entry.next_sequence - count, 0)
        for batch in entry.in_flight:
            if batch.base_sequence >= failed.base_sequence:
                batch.reset_producer_state(batch.producer_id, batch.producer_epoch,
                                           max(batch.base_sequence - count, 0), batch.is_transactional)

    cpdef void request_epoch_bump_for_partition(self, str topic, int partition):
        self.epoch_bump_required = True
        self._to_rewrite.add((topic, partition))

    cpdef bint can_retry(self, ProducerBatch batch, int error_code, int64_t log_start_offset,
                         bint retriable) except *:
        """Java's TransactionManager.canRetry: OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID are retried
        (with an epoch bump for the idempotent producer) when the sequences say so; else `retriable`."""
        tp = (batch.topic, batch.partition)
        cdef _PartitionSequences entry
        if error_code == _UNKNOWN_PRODUCER_ID:
            if log_start_offset == -1:
                return True
            if batch.sequence_has_been_reset:
                return True
            entry = self._partitions.get(tp)
            if entry is not None and entry.last_acked_offset < log_start_offset:
                if self._transactional:
                    self._start_sequences_at_beginning(entry)
                else:
                    self.request_epoch_bump_for_partition(batch.topic, batch.partition)
                return True
            if not self._transactional:
                self.request_epoch_bump_for_partition(batch.topic, batch.partition)
                return True
            return False
        if error_code == _OUT_OF_ORDER_SEQUENCE_NUMBER:
            unresolved = self._unresolved.get(tp)
            if unresolved is None and (batch.sequence_has_been_reset or not self._is_next_sequence(
                    tp, batch.base_sequence)):
                return True  # not the batch right after the last acknowledged one: an earlier one failed
            if not self._transactional:
                if unresolved is None or unresolved == batch.base_sequence:
                    self.request_epoch_bump_for_partition(batch.topic, batch.partition)
                return True
            return False
        return retriable

    cdef bint _is_next_sequence(self, object tp, int32_t sequence):
        cdef _PartitionSequences entry = self._partitions.get(tp)
        cdef int32_t last = entry.last_acked_sequence if entry is not None else _NO_SEQUENCE
        return sequence - last == 1

    cpdef void mark_sequence_unresolved(self, ProducerBatch batch):
        """A batch that was sent expired: its fate at the broker is unknown until the partition drains."""
        if batch.base_sequence == _NO_SEQUENCE:
            return
        tp = (batch.topic, batch.partition)
        cdef int32_t next_sequence = _increment_sequence(batch.base_sequence, batch.builder.record_count)
        current = self._unresolved.get(tp)
        self._unresolved[tp] = next_sequence if current is None else max(current, next_sequence)

    def has_unresolved_sequence(self, str topic, int partition):
        return (topic, partition) in self._unresolved

    @property
    def has_unresolved_sequences(self):
        return bool(self._unresolved)

    cpdef void maybe_resolve_sequences(self) except *:
        """Once per sender loop: an unresolved partition with nothing in flight is resolved if the last
        acknowledged sequence is right before the next one; else the idempotent producer bumps the epoch, the
        transactional one must abort (or, if it cannot bump, stop)."""
        cdef _PartitionSequences entry
        for tp in list(self._unresolved):
            if self._has_in_flight(tp):
                continue
            entry = self._entry(tp)
            if not self._is_next_sequence(tp, entry.next_sequence):
                if self._transactional:
                    text = "the client got no acknowledgment for some sent records and can no longer retry them"
                    if self.can_bump_epoch:
                        if self.needs_client_epoch_bump:
                            self.epoch_bump_required = True
                        self.transition_to_abortable_error(
                            TransactionAbortableError(text + "; it is safe to abort the transaction and go on"))
                    else:
                        self.transition_to_fatal_error(TransactionFatalError(text + "; it is not safe to go on"))
                else:
                    self.request_epoch_bump_for_partition(tp[0], tp[1])
            del self._unresolved[tp]

    def __repr__(self):
        return (f"TransactionManager(transactional_id={self.transactional_id!r}, state={self.state_name}, "
                f"producer_id={self.producer_id}, producer_epoch={self.producer_epoch})")
