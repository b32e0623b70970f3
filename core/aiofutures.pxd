# aiofutures.pxd: what aiofutures.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from libc.stdint cimport int64_t

cdef class LoopFutures

@cython.final
cdef class _LoopQueue:
    cdef LoopFutures owner
    cdef object loop
    cdef dict settling               # Completion -> _BatchFutures, the batches whose futures are not all resolved
    cdef object batches              # deque of completed _BatchFutures, resolved in order
    cdef Py_ssize_t budget           # futures still to resolve in this turn of the loop
    cdef bint scheduled              # a call of this queue is on the loop (the next turn)
    cdef dict future_kwargs          # {"loop": loop}: each future is made with it (no dict made per future)
    cdef int64_t made                # _BatchFutures made on this queue (the next one's number)
    cdef object flush_waits          # deque of (number, future): set once every batch numbered below is resolved

@cython.final
cdef class _BatchFutures:
    cdef _LoopQueue queue
    cdef object completion           # the batch's Completion (the key in owner._settling)
    cdef Refs futures                # the asyncio futures handed out for its records, in send order, and
    cdef Refs records                # their RecordFutures (refs.pyx: the GC does not walk them; both outside it)
    cdef Py_ssize_t settled_count    # futures[:settled_count] are resolved (settling goes in slices)
    cdef object partition            # the records' topic partition in the metadata's layout (made once)
    cdef int64_t number              # made before it on its queue (settling keeps them in this order)

@cython.final
cdef class LoopFutures:
    cdef object _future_type         # asyncio.Future (the C _asyncio.Future), handed in: the core imports no asyncio
    cdef object _get_running_loop
    cdef object _loop                # the loop _running_loop found last (None: look again), on this thread:
    cdef unsigned long _loop_thread
    cdef object _loop_thread_id      # the loop's _thread_id then (the int its run_forever set)
    cdef unsigned long _loop_forks   # the process's forks then
    cdef object _error_of            # a record's KafkaError -> the exception its future gets (a fresh one each)
    cdef object _metadata_type       # None: cykafka's RecordMetadata; else a tuple type in aiokafka's layout
    cdef object _partition_type      # with _metadata_type: the tuple type of its topic_partition field
    cdef readonly Py_ssize_t slice_records  # the most futures resolved in one turn of the loop
    cdef bint _untrack               # a future resolved with a value leaves the cyclic GC (nothing to find there)
    cdef _LoopQueue _queue           # the running loop's (a new loop: a new queue; the old one's ends there)
    cdef object _last_completion     # the last record's batch (most records join the batch before them)
    cdef _BatchFutures _last_batch

    cpdef object future_of(self, RecordFuture record)
    cdef object _running_loop(self)
    cdef object _future_on(self, RecordFuture record, object loop)
    cdef int _resolve(self, object future, RecordFuture record, _BatchFutures batch) except -1
    cdef int _drain(self, _LoopQueue queue) except -1
    cdef int _release_flush_waits(self, _LoopQueue queue) except -1

cdef class AsyncSends:
    cdef SendPath _send_path         # the Producer
    cdef readonly LoopFutures futures
    cdef unsigned long _loop_thread  # the thread send() last ran on
    cdef bint _has_loop_thread
    cdef object _on_new_thread       # called with a thread id when send() runs on a new thread
    cdef object _blocked             # (answer, topic, value, key, partition, timestamp_ms, headers) -> a coroutine
    cdef object _translate           # an error send() raises -> the one raised instead, or None
