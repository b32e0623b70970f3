# aiofutures: send()'s asyncio futures in C, for cykafka.aio's AsyncProducer and cykafka.compat.aiokafka's producer
# (the compiled shell, as sendpath; no asyncio import: the composition root hands in the Future type and
# get_running_loop; no thread, no clock, no I/O).
# - LoopFutures: the asyncio future of each queued record, made by calling the (C) Future type (on the running loop,
#   found once while it runs on the caller's thread: _running_loop), filed with the other
#   futures of its batch (one append to an array the GC does not walk, refs.pyx); the batch's Completion hands the
#   loop one callback once the batch is final (one cross-thread call per batch, none per record), which resolves
#   them there in C: cykafka's RecordMetadata, or a tuple in aiokafka's RecordMetadata layout built without its
#   Python-level __new__. At most slice_records futures are resolved per turn of the loop (the rest in the next
#   turns, in batch order), so a thousand futures each awaited by gather do not stall the loop in one callback.
# - AsyncSends.send: AsyncProducer.send's common case in one C call: SendPath._send (try_send's path), then the
#   future, returned through an awaitable that is done at once (sent.h: `await` gives the future, no coroutine, no
#   frame); what must wait (metadata, memory) goes to the Python coroutine handed in, unchanged.

import os as _os
from collections import deque

from cpython.object cimport PyObject_Call
from cpython.ref cimport PyObject


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object op)


cdef extern from "pythread.h":
    unsigned long PyThread_get_thread_ident() nogil


cdef extern from "sent.h":
    object cyk_sent_new(PyObject* value, PyObject* error)
    int cyk_sent_ready() except -1
    object cyk_sent_type()
    object cyk_tuple_as(object type, PyObject** items, Py_ssize_t n)
    bint cyk_is_plain_tuple_type(object type)


cyk_sent_ready()
Sent = cyk_sent_type()

cdef unsigned long _forks = 0  # forks this process was made by (a loop found before one is not taken after it)


def _forked():
    global _forks
    _forks += 1


_os.register_at_fork(after_in_child=_forked)


cdef object _fresh_error(object error):
    """A copy of a record's error (as RecordFuture.result raises it): each future gets its own, so a traceback
    added where one is raised reaches no other awaiter."""
    clone = type(error).__new__(type(error))
    clone.args = error.args
    clone.__dict__.update(error.__dict__)
    return clone


@cython.final
cdef class _LoopQueue:
    """The batches of one loop: those with futures handed out (settling), those completed and not all resolved yet
    (batches). Called on the loop at the start of a turn: resolves the next slice."""

    def __call__(self):
        self.scheduled = False
        if self.batches:
            self.scheduled = True  # first: a drain that raises leaves the rest to the next turn, not to nobody
            self.loop.call_soon(self)
            self.budget = self.owner.slice_records
            self.owner._drain(self)


@cython.final
cdef class _BatchFutures:
    """The futures handed out on one loop for the records of one producer batch. Called on the loop (through the
    batch's Completion) once the batch is final."""

    def __dealloc__(self):
        refs_clear(&self.futures)
        refs_clear(&self.records)

    def __call__(self):
        cdef _LoopQueue queue = self.queue
        queue.batches.append(self)
        if not queue.scheduled:  # the first completion of this turn: resolve a slice now, the rest next turn
            queue.scheduled = True
            queue.loop.call_soon(queue)
            queue.budget = queue.owner.slice_records
            queue.owner._drain(queue)


@cython.final
cdef class LoopFutures:
    """LoopFutures(future_type, get_running_loop, *, error_of=None, metadata_type=None, partition_type=None,
    slice_records=100, untrack=True)\n--\n
    The asyncio futures of a producer's records (future_of), each resolved on the loop that asked for it together
    with the other records of its batch: one loop callback per batch, none per record. future_type: asyncio.Future;
    get_running_loop: asyncio.get_running_loop. A future gets the record's RecordMetadata, or with metadata_type (a
    NamedTuple of aiokafka's RecordMetadata fields: topic, partition, topic_partition, offset, timestamp,
    timestamp_type, log_start_offset) that tuple, its topic_partition a partition_type (topic, partition) tuple; a
    failed record's future gets error_of(its KafkaError) (default: a copy of it). At most slice_records futures are
    resolved in one turn of the loop. untrack: a future is outside the cyclic GC while pending and once resolved with
    a value (see _future_on)."""

    def __init__(self, future_type, get_running_loop, *, error_of=None, metadata_type=None, partition_type=None,
                 Py_ssize_t slice_records=100, bint untrack=True):
        if metadata_type is not None and not (cyk_is_plain_tuple_type(metadata_type)
                                              and cyk_is_plain_tuple_type(partition_type)):
            raise InvalidArgumentError("metadata_type and partition_type must be tuple types without __dict__ "
                                       "(NamedTuples)")
        if slice_records < 1:
            raise InvalidArgumentError(f"slice_records must be at least 1, got {slice_records}")
        self._future_type = future_type
        self._get_running_loop = get_running_loop
        self._error_of = error_of
        self._metadata_type = metadata_type
        self._partition_type = partition_type
        self.slice_records = slice_records
        self._untrack = untrack

    cpdef object future_of(self, RecordFuture record):
        """A future of the running loop for `record`, resolved with its batch (at once when it is final)."""
        return self._future_on(record, self._running_loop())

    cdef object _running_loop(self):
        """get_running_loop(), without its getpid system call (CPython 3.11: ~10% of a send's time on the loop
        thread) while the loop it gave last still runs on this thread: same thread, no fork since, and the loop's
        _thread_id (asyncio's BaseEventLoop: set by run_forever, None once it ends; a new run sets a new int) the
        very object it was then. Any other loop type, or any doubt: get_running_loop() itself."""
        cdef unsigned long thread = PyThread_get_thread_ident()
        loop = self._loop
        if (loop is not None and thread == self._loop_thread and self._loop_forks == _forks
                and getattr(loop, "_thread_id", None) is self._loop_thread_id):
            return loop
        loop = self._get_running_loop()
        self._loop_thread_id = getattr(loop, "_thread_id", None)
        self._loop = loop if self._loop_thread_id is not None else None
        self._loop_thread = thread
        self._loop_forks = _forks
        return loop

    cdef object _future_on(self, RecordFuture record, object loop):
        cdef _BatchFutures batch
        cdef _LoopQueue queue = self._queue
        cdef ProducerBatch wait_batch
        if queue is None or loop is not queue.loop:  # a new loop: the old one's futures are resolved there still
            queue = self._queue = _LoopQueue.__new__(_LoopQueue)
            queue.owner = self
            queue.loop = loop
            queue.settling = {}
            queue.batches = deque()
            queue.future_kwargs = {"loop": loop}
            queue.flush_waits = deque()
            self._last_completion = self._last_batch = None
        future = PyObject_Call(self._future_type, (), queue.future_kwargs)  # Future(loop=loop), no dict made
        if self._untrack and type(future) is self._future_type:
            # outside the cyclic GC while pending: its batch holds it (and so whatever its callbacks refer to) until
            # _resolve, so the collector could free nothing through it; back in it when it fails or was cancelled
            # (_track, peer_records.pyx), out for good when resolved with a value. The futures a program keeps
            # (200,000 of a send loop) are then not walked by every collection: each full one took ~30 ms with them,
            # the loop's lag (docs/asyncio.md)
            PyObject_GC_UnTrack(future)
        wait_batch = record._wait_batch
        completion = None if record._done or wait_batch is None else _completion_of(wait_batch)
        if completion is None:  # final already (or a producer without completions: its error says so)
            self._resolve(future, record, None)
            return future
        if completion is self._last_completion:
            batch = self._last_batch
        else:
            batch = queue.settling.get(completion)
            if batch is None:
                batch = _BatchFutures.__new__(_BatchFutures)
                batch.queue = queue
                batch.completion = completion
                batch.number = queue.made
                queue.made += 1
                queue.settling[completion] = batch
                completion.call_soon_on(loop, batch)
            self._last_completion = completion
            self._last_batch = batch
        refs_append(&batch.futures, future)
        refs_append(&batch.records, record)
        return future

    def settled_wait(self):
        """A future of the running loop's queue set once the futures handed out so far are all resolved (flush
        awaits it), or None when they are: one future whatever the number of batches. None too when the queue is
        another loop's (no future was handed out on this one yet): that loop resolves its own futures, or nobody
        does when it closed first, and a future of it cannot be awaited here."""
        cdef _LoopQueue queue = self._queue
        if queue is None or not queue.settling or queue.loop is not self._running_loop():
            return None
        wait = queue.loop.create_future()  # each flush its own (its timeout cancels it)
        queue.flush_waits.append((queue.made, wait))
        return wait

    cdef int _release_flush_waits(self, _LoopQueue queue) except -1:
        """Sets the flush waits whose batches are all resolved: those numbered below the oldest batch settling
        (settling is a dict: in the order the batches were made, as their numbers)."""
        cdef _BatchFutures oldest
        cdef int64_t settled_below = queue.made
        if queue.settling:
            oldest = next(iter(queue.settling.values()))
            settled_below = oldest.number
        while queue.flush_waits and (<tuple>queue.flush_waits[0])[0] <= settled_below:
            wait = (<tuple>queue.flush_waits.popleft())[1]
            if not wait.done():  # its flush was cancelled or timed out
                wait.set_result(None)
        return 0

    cdef int _drain(self, _LoopQueue queue) except -1:
        """Resolves the completed batches' futures in order, up to the queue's budget for this turn."""
        cdef _BatchFutures batch
        cdef Py_ssize_t i, n, stop
        while queue.batches and queue.budget > 0:
            batch = queue.batches[0]
            n = batch.futures.count
            stop = min(n, batch.settled_count + queue.budget)
            for i in range(batch.settled_count, stop):
                self._resolve(<object>batch.futures.items[i], <RecordFuture>batch.records.items[i], batch)
            queue.budget -= stop - batch.settled_count
            batch.settled_count = stop
            if stop == n:
                queue.batches.popleft()
                if queue.settling.get(batch.completion) is batch:
                    del queue.settling[batch.completion]
                if self._last_batch is batch:
                    self._last_completion = self._last_batch = None
                refs_clear(&batch.futures)
                refs_clear(&batch.records)
                if queue.flush_waits:
                    self._release_flush_waits(queue)
        return 0

    cdef int _resolve(self, object future, RecordFuture record, _BatchFutures batch) except -1:
        cdef PyObject* items[7]
        cdef object topic, partition, topic_partition, offset, timestamp
        if future.done():  # cancelled by its awaiter: its cancel message may lead back to it
            _track(future)
            return 0
        if not record._done:  # only without a completion: result(0) says it is pending
            try:
                record.result(0)
            except KafkaError as error:
                _track(future)
                future.set_exception(error)
            return 0
        if record._error is not None:
            error = record._error
            try:
                error = _fresh_error(error) if self._error_of is None else self._error_of(error)
            except Exception as failed:  # the future still gets an error: what went wrong making it
                error = failed
            _track(future)  # an error's traceback may hold a cycle
            future.set_exception(error)
            return 0
        if self._metadata_type is None:
            future.set_result(record._get_metadata())
        else:
            topic = record._topic
            partition = record._partition
            if batch is None or batch.partition is None:
                items[0] = <PyObject*>topic
                items[1] = <PyObject*>partition
                topic_partition = cyk_tuple_as(self._partition_type, items, 2)
                if batch is not None:
                    batch.partition = topic_partition
            else:
                topic_partition = batch.partition
            offset = record._offset
            timestamp = record._timestamp_ms
            items[0] = <PyObject*>topic
            items[1] = <PyObject*>partition
            items[2] = <PyObject*>topic_partition
            items[3] = <PyObject*>offset
            items[4] = <PyObject*>timestamp
            items[5] = <PyObject*>_CREATE_TIME
            items[6] = <PyObject*>None
            future.set_result(cyk_tuple_as(self._metadata_type, items, 7))
        # resolved with a value that refers to nothing mutable, its callbacks handed to the loop: it can be in no
        # reference cycle but through its loop, which refers to no future; it stays outside the collector
        return 0


cdef object _CREATE_TIME = 0  # aiokafka's timestamp_type of a record (RecordMetadata.timestamp_type)


cdef class AsyncSends:
    """AsyncSends()\n--\n
    AsyncProducer.send in one C call (AsyncProducer's base class; cykafka.compat.aiokafka's producer holds one):
    send(...) queues the record through the send path's try_send path and returns an awaitable done at once, whose
    `await` gives the record's future from `futures` (a LoopFutures); an error send() raises is raised by that await
    instead (translate(error) when given), as an `async def` would. When the record must wait (metadata, memory),
    returns blocked(answer, topic, value, key, partition, timestamp_ms, headers), a coroutine giving the future.
    on_new_thread(thread_id) is called first when send() runs on a new thread."""

    def _init_async_sends(self, SendPath send_path not None, LoopFutures futures not None, on_new_thread, blocked,
                          translate=None):
        self._send_path = send_path
        self.futures = futures
        self._on_new_thread = on_new_thread
        self._blocked = blocked
        self._translate = translate

    def send(self, topic, value=None, key=None, *, partition=None, timestamp_ms=None, headers=None):
        """Queues the record, waiting (not blocking) up to max.block.ms for its topic's metadata or for buffer
        memory; `await` it for the record's asyncio future (of the running loop): `await` that for the
        RecordMetadata or the record's KafkaError (aiokafka's two awaits; one: send_and_wait); gather, wait,
        as_completed and shield take it as it is. The await raises what Producer.send raises. Cancelled while
        waiting for room: nothing was queued. Cancelling the returned future only stops waiting for it: the record
        is sent. The common case is one C call: the record is queued by the call itself, its await is done at
        once."""
        cdef unsigned long thread = PyThread_get_thread_ident()
        try:
            loop = self.futures._running_loop()  # first: without a running loop nothing is queued
            if thread != self._loop_thread or not self._has_loop_thread:
                self._on_new_thread(thread)
                self._loop_thread = thread
                self._has_loop_thread = True
            record = self._send_path._send(topic, value, key, partition, timestamp_ms, headers, None, False)
            if type(record) is RecordFuture:
                future = self.futures._future_on(<RecordFuture>record, loop)
                return cyk_sent_new(<PyObject*>future, NULL)
        except BaseException as error:
            raised = error if self._translate is None else self._translate(error)
            return cyk_sent_new(NULL, <PyObject*>raised)
        return self._blocked(record, topic, value, key, partition, timestamp_ms, headers)
