# BatchResult: the one outcome of a Producer.send_batch call (no RecordFuture per record), and _Segment: the run of
# that call's records inside one ProducerBatch.
# Rules: counters change under the producer lock (completion) or with the GIL held (release, direct failures);
# segments grow under the producer lock, with or without the GIL;
# a call's records in one batch are contiguous while the call holds the lock, so a segment is (first relative offset,
# count) plus the call index of each record: first_index + j while they are consecutive, an explicit uint32 array
# from the first gap on (keyed or explicit-partition calls). Completion never runs callbacks or sets events here:
# release_waiters() of the batch does, after the Sender ran everything else (as for RecordFuture).

cimport cython
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.stdint cimport int32_t, uint32_t


ctypedef fused _Waitable:
    ProducerBatch
    BatchResult


cdef object _completion_of(_Waitable owner):
    """What a waiter of `owner` (a ProducerBatch or a BatchResult) waits on: its completion, made from its factory on
    first use (most are never waited on; None without a factory), set already when the owner was released.
    Race-free against release from another thread (which sets `_released`, then sets `_completion` if any): the
    factory is Python code, so another thread may make a completion or release the owner meanwhile; the first one
    stored is kept, and `_released` is read after it was stored."""
    cdef object made
    if owner._completion is None and owner._completion_factory is not None:
        made = owner._completion_factory()
        if owner._completion is None:
            owner._completion = made
            if _Waitable is ProducerBatch and not owner._released and PyObject_GC_IsTracked(made):
                # outside the cyclic GC while its batch is (ProducerBatch.__init__), back with it at release; no
                # Python code between the check and the untracking, so a release on another thread comes before
                # (untracked never) or after (it tracks it again)
                PyObject_GC_UnTrack(made)
    if owner._completion is not None and owner._released:
        owner._completion.set()
    return owner._completion


@cython.final
cdef class _Segment:

    def __dealloc__(self):
        if self.indices != NULL:
            PyMem_RawFree(self.indices)

    cdef int _add(self, Py_ssize_t index) except -1 nogil:
        """One more record (the call's record `index`) at relative offset first_offset + count."""
        cdef Py_ssize_t j, new_capacity
        cdef uint32_t* grown
        if self.count == 0:
            self.first_index = index
        elif self.indices == NULL and index != self.first_index + self.count:
            new_capacity = max(16, 2 * <Py_ssize_t>self.count)
            self.indices = <uint32_t*>PyMem_RawMalloc(new_capacity * sizeof(uint32_t))
            if self.indices == NULL:
                with gil:
                    raise MemoryError()
            self.capacity = new_capacity
            for j in range(self.count):
                self.indices[j] = <uint32_t>(self.first_index + j)
        if self.indices != NULL:
            if self.count == self.capacity:
                new_capacity = 2 * self.capacity
                grown = <uint32_t*>PyMem_RawRealloc(self.indices, new_capacity * sizeof(uint32_t))
                if grown == NULL:
                    with gil:
                        raise MemoryError()
                self.indices = grown
                self.capacity = new_capacity
            self.indices[self.count] = <uint32_t>index
        self.count += 1
        return 0

    cdef inline Py_ssize_t index_at(self, int32_t j) noexcept:
        if self.indices != NULL:
            return self.indices[j]
        return self.first_index + j


@cython.final
cdef class BatchResult:
    """BatchResult(record_count, completion_factory=None)\n--\n
    The outcome of one Producer.send_batch() call, for all of its records (made by send_batch, not by user code).

    result(timeout) waits for every record and returns how many were delivered (record_count), or raises
    BatchDeliveryError listing (index in the call, error) of each failed record; done() asks without waiting.
    record_count (int): records in the call; errors, succeeded_count, failed_count and delivered_by_partition read
    the outcome so far. Every error is a KafkaError.
    """

    def __cinit__(self):
        self._failures = []
        self._delivered = {}

    def __init__(self, Py_ssize_t record_count, object completion_factory=None):
        if record_count < 0 or record_count > 0xFFFFFFFF:
            raise InvalidRecordError(f"a send_batch call takes 0 to 2**32 - 1 records, not {record_count}")
        self.record_count = record_count
        self._pending = record_count
        self._unreleased = record_count
        self._completion_factory = completion_factory
        self._released = record_count == 0

    # -- called by the core and the Producer ---------------------------------------------------------------------

    cdef int _complete(self, _Segment segment, object error, object topic_partition) except -1:
        self._pending -= segment.count
        if error is not None:
            self._failed += segment.count
            self._failures.append((segment, error))
        else:
            self._delivered[topic_partition] = self._delivered.get(topic_partition, 0) + segment.count
        return 0

    cdef void _release(self, Py_ssize_t count):
        self._unreleased -= count
        if self._unreleased <= 0:
            self._released = True
            if self._completion is not None:
                self._completion.set()

    cpdef void _record_done(self, Py_ssize_t index, object error, object topic_partition=None):
        """Record `index` is final: failed before it was queued (too large, buffer exhausted), or delivered/failed
        through send() (a call that went record by record: interceptors, serializers, partitioner.class); a
        delivered record names its (topic, partition)."""
        self._pending -= 1
        if error is not None:
            self._failed += 1
            self._failures.append((index, error))
        elif topic_partition is not None:
            self._delivered[topic_partition] = self._delivered.get(topic_partition, 0) + 1
        self._release(1)

    # -- the caller's side ---------------------------------------------------------------------------------------

    cpdef object waitable(self):
        """The completion to wait on (cykafka.completion.Completion; cykafka.aio resolves an asyncio future from it),
        made on first use; already set when the records were released; None without a completion factory."""
        return _completion_of(self)

    def __await__(self):
        """`await result` in a coroutine: result() without blocking the event loop (the completion wakes the loop
        from the sender thread). Cancelling the awaiting task only stops the wait; the records are sent."""
        if not self._released:
            completion = self.waitable()
            if completion is None or not hasattr(completion, "__await__"):
                raise KafkaError("this BatchResult cannot be awaited: it was made without an awaitable completion")
            yield from completion.__await__()
        return self.result(0)

    def done(self) -> bool:
        """True once every record is acknowledged or failed and its waiters may go (never blocks)."""
        return self._released

    def result(self, timeout: float | None = None) -> int:
        """Waits up to `timeout` seconds (None: until done) and returns the number of records delivered: all of
        them, record_count.

        Raises BatchDeliveryError when any record failed (its `errors` are (index in the call, KafkaError) pairs
        by index; the other records were delivered), or KafkaTimeoutError when `timeout` passes first (records
        are still pending: call again to keep waiting).
        """
        if not self._released:
            completion = self.waitable()
            if completion is not None:
                completion.wait(timeout)
            if not self._released:
                raise KafkaTimeoutError(f"{self._pending} of {self.record_count} records not acknowledged within "
                                        f"{timeout}s (they are still pending)")
        errors = self.errors
        if errors:
            index, first = errors[0]
            raise BatchDeliveryError(
                f"{len(errors)} of {self.record_count} records failed; the first, index {index}: "
                f"{type(first).__name__}: {first}", errors=errors, record_count=self.record_count)
        return self.record_count

    @property
    def errors(self) -> list[tuple[int, KafkaError]]:
        """[(index in the call, error)] of the records failed so far, by index."""
        cdef list out = []
        cdef _Segment segment
        cdef int32_t j
        for owner, error in self._failures:
            if type(owner) is _Segment:
                segment = owner
                for j in range(segment.count):
                    out.append((segment.index_at(j), error))
            else:
                out.append((owner, error))
        out.sort(key=lambda item: item[0])
        return out

    @property
    def failed_count(self) -> int:
        """Records failed so far."""
        return self._failed

    @property
    def delivered_by_partition(self) -> dict[tuple[str, int], int]:
        """{(topic, partition): records acknowledged there} so far."""
        return dict(self._delivered)

    @property
    def succeeded_count(self) -> int:
        """Records acknowledged so far."""
        return self.record_count - self._pending - self._failed

    def __repr__(self):
        return (f"<BatchResult {'done' if self._released else 'pending'} records={self.record_count} "
                f"failed={self._failed}>")
