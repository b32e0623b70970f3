# SendPath: Producer.send's per-record work in C (the Producer's base class): argument checks, partition choice
# (explicit, murmur2 of the key, or the built-in partitioner), the size check and the accumulator append, with no
# Python-level call on the default path. Anything unusual (serializers, interceptors, a topic not in the metadata
# snapshot yet, a full buffer pool, every error) goes to the subclass's Python `_send_slow` (and `_append_slow`),
# which has the messages and the waits. try_send() is send() that returns what it would wait for instead.
# Time: from the CoreClock the composition root hands in (clock.pyx): SystemCoreClock reads clock_gettime in C, a
# PortClock calls the Producer's Clock port.
# send_batch's loop (_send_columns) is here too: one lock hold per chunk, records appended straight from the columns
# into the accumulator, one BatchResult segment per (call, batch) instead of a RecordFuture per record; runs of
# Arrow records (headers too: an Arrow list<struct> column, columns.pyx's _HeaderColumn) into batches the call has
# open are appended with the GIL released (_append_run).
# Input rule, one for both paths: send_batch checks every argument (each list entry, header, partition, timestamp)
# before it queues anything, with the same functions the append loop then reads through, so that loop cannot fail on
# an argument; send() and send_batch() accept the same key/value/header shapes (_checked_headers, _span_acquire).

from collections.abc import Mapping

from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_AsTuple, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int64_t


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)


cdef class SendPath:

    def _init_send_path(self, RecordAccumulator accumulator, object lock, CoreClock clock not None, object wakeup,
                        bint fast, bint ignore_keys, int64_t max_record_bytes, object snapshot,
                        TransactionManager transaction):
        self._accumulator = accumulator
        self._lock = lock if type(lock) is ClientLock else None
        self._acquire = lock.acquire
        self._release = lock.release
        self._clock = clock
        self._wakeup = wakeup
        self._fast = fast
        self._ignore_keys = ignore_keys
        self._max_record_bytes = max_record_bytes
        self._transaction = transaction
        self._sender_loop_started(snapshot)

    cpdef _sender_loop_started(self, object snapshot):
        """The sender is about to look at the accumulator: appends from now on need a new wakeup; and the metadata
        snapshot the fast path reads (also refreshed by the slow path after a metadata wait)."""
        self._wakeup_sent = False
        if snapshot is not self._snapshot:
            self._snapshot = snapshot
            self._partitions = dict(snapshot.partitions)
            self._last_topic = None

    cpdef _wake_sender(self):
        """Wakes the sender unless it was woken since its loop started or waits for responses anyway."""
        if not self._wakeup_sent:
            self._wakeup_sent = True
            self._wakeup()

    cpdef _sender_waits_for_responses(self):
        """Every leader has all the requests in flight it may: until the sender's next loop, appends do not wake it
        (a response will)."""
        self._wakeup_sent = True

    cdef inline int _take_lock(self) except -1:
        if self._lock is not None:
            self._lock.take()
        else:
            self._acquire()
        return 0

    cdef inline int _give_lock(self) except -1:
        if self._lock is not None:
            self._lock.give()
        else:
            self._release()
        return 0

    def send(self, topic: str, value: object = None, key: object = None, *, partition: int | None = None,
             timestamp_ms: int | None = None, headers: object = None,
             on_delivery: Callable[[KafkaError | None, RecordMetadata | None], object] | None = None) -> RecordFuture:
        """Queues a record for `topic` and returns its RecordFuture; the record goes out in a batch (linger.ms,
        batch.size), and future.result() waits for the acknowledgement.

        value, key: bytes, bytearray, memoryview, str (UTF-8) or None (a null), or anything key.serializer /
        value.serializer turn into bytes. partition: None (the key's murmur2 partition, Java's, or for a record
        without a key the built-in sticky partitioner's choice; partitioner.class if configured), or an int in
        [0, partitions). timestamp_ms: None (now) or ms since the epoch. headers: None, a list of (str, bytes | None)
        pairs, or a dict. on_delivery(err, metadata): called once on the sender thread when the record is final,
        with err None and its RecordMetadata, or its KafkaError and None; it must not block (no flush() there), and
        an exception it raises is logged.

        Blocks up to max.block.ms while the topic's metadata is unknown or buffer.memory is full, then raises
        KafkaTimeoutError / BufferExhaustedError. Raises at once, with nothing queued: InvalidTopicError,
        InvalidRecordError (partition out of range, bad timestamp or callback), SerializationError,
        RecordTooLargeError (over max.request.size or buffer.memory), ProducerClosedError after close(); on a
        transactional producer, TransactionStateError outside a transaction and the transaction's error
        (TransactionAbortableError, ...) once it failed. Thread-safe.
        """
        yield_to_network()
        if _send_trace_gate.hook is not None and _send_trace_gate.wants():
            return _send_trace_gate.hook(self, topic, value, key, partition, timestamp_ms, headers, on_delivery)
        return self._send(topic, value, key, partition, timestamp_ms, headers, on_delivery, True)

    def _send_untraced(self, topic, value, key, partition, timestamp_ms, headers, on_delivery):
        """send() past the trace gate: the instrumentation's hook calls it once its span is current."""
        return self._send(topic, value, key, partition, timestamp_ms, headers, on_delivery, True)

    def try_send(self, topic: str, value: object = None, key: object = None, *, partition: int | None = None,
                 timestamp_ms: int | None = None, headers: object = None,
                 on_delivery: Callable[[KafkaError | None, RecordMetadata | None], object] | None = None) -> object:
        """send() that never waits: the record's RecordFuture when it was queued, else what it needs first, with
        nothing queued: a NeedsMetadata (the topic's metadata: look with poll_metadata(), then call again) or a
        NeedsMemory (buffer.memory is full: memory_wait() appends it once a buffer is free); both carry the
        max.block.ms deadline of this call (cykafka.producer_seam). Raises what send() raises."""
        yield_to_network()
        return self._send(topic, value, key, partition, timestamp_ms, headers, on_delivery, False)

    @cython.final  # a direct C call the compiler inlines into send() and try_send(): no vtable on the hot path
    cdef inline object _send(self, object topic, object value, object key, object partition, object timestamp_ms,
                             object headers, object on_delivery, bint block):
        """send() (block) and try_send() (not block): the common case in C; the rest in the subclass's _send_slow
        and, when the pool is empty, _append_slow."""
        cdef int64_t ts, size_bytes
        cdef int chosen, n, overflow
        if self._transaction is not None:
            self._transaction.fail_if_not_ready_for_send()
        if self._closed or not self._fast or type(topic) is not str:
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
        if topic is self._last_topic:
            infos = self._last_infos
        else:
            infos = self._partitions.get(topic)
            if infos is None:
                return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
            self._last_topic = topic
            self._last_infos = infos
        n = len(infos)
        if key is not None and type(key) is not bytes:
            if type(key) is str:
                try:
                    key = (<str>key).encode()
                except UnicodeEncodeError:  # the slow path says what is wrong
                    return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
            elif type(key) is not bytearray and type(key) is not memoryview:
                return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
        if value is not None and type(value) is not bytes:
            if type(value) is str:
                try:
                    value = (<str>value).encode()
                except UnicodeEncodeError:
                    return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
            elif type(value) is not bytearray and type(value) is not memoryview:
                return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
        if (headers is not None and type(headers) is not list) or (on_delivery is not None
                                                                     and not callable(on_delivery)):
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
        if timestamp_ms is None:
            ts = self._clock.wall_ms()
        else:
            ts = -1
            overflow = 0
            if type(timestamp_ms) is int:
                ts = PyLong_AsLongLongAndOverflow(timestamp_ms, &overflow)
            if ts < 0 or overflow:  # below 0, 2**63 and up, or not an int
                return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
        if partition is None:
            if key is None or self._ignore_keys:
                chosen = -1
            elif type(key) is bytes:
                chosen = partition_for_key_ptr(<const unsigned char*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                                               n)
            else:
                chosen = partition_for_key(key, n)
        elif type(partition) is int and 0 <= partition < n:
            chosen = partition
        else:
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
        if headers is None and (key is None or type(key) is bytes) and (value is None or type(value) is bytes):
            size_bytes = (_HEADER_BYTES + _MAX_RECORD_OVERHEAD_BYTES + 1
                          + _bytes_field_size(-1 if key is None else PyBytes_GET_SIZE(key))
                          + _bytes_field_size(-1 if value is None else PyBytes_GET_SIZE(value)))
        else:
            try:
                size_bytes = estimate_size_upper_bound(key, value, headers)
            except (TypeError, ValueError):  # a header not in the core's form: the slow path says what is wrong
                return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
        if size_bytes > self._max_record_bytes:
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery, block)
        cdef AppendResult appended
        cdef RecordFuture future = None
        self._take_lock()
        try:
            appended = self._accumulator._append(topic, chosen, ts, key, value, headers, on_delivery, self._clock,
                                                 None, self._snapshot)
            if appended.future != NULL:
                future = <RecordFuture>appended.future  # our own reference before the lock goes
        finally:
            self._give_lock()
        if future is None:  # the pool is empty: wait for memory up to max.block.ms
            return self._append_slow(topic, chosen, ts, key, value, headers, on_delivery, None, block)
        if (appended.batch_full or appended.new_batch) and not self._wakeup_sent:
            self._wakeup_sent = True
            self._wakeup()
        return future

    # -- send_batch: the columnar path (Producer.send_batch validates, waits for metadata and memory) ------------

    def _batch_columns(self, values, keys):
        """(values, keys) as columns the core reads in place, every entry checked; SerializationError naming the
        argument and entry for anything else."""
        if values is None:
            raise SerializationError("values must be a list or an Arrow array with one entry per record, not None")
        cdef _Column value_col = _column(values, "values")
        cdef _Column key_col = _column(keys, "keys")
        return value_col, key_col

    def _batch_lists(self, values, keys):
        """(values, keys) as lists, each read once, for send_batch through send() (serializers, interceptors or a
        partitioner.class see the entries as given); keys None stays None."""
        if values is None:
            raise SerializationError("values must be a list or an Arrow array with one entry per record, not None")
        return _as_list(values, "values", SerializationError), (None if keys is None else
                                                                  _as_list(keys, "keys", SerializationError))

    def _batch_check(self, Py_ssize_t n, int num_partitions, partitions, timestamps_ms, headers):
        """Validates the per-record arguments before anything is queued; (partitions, timestamps_ms, headers) as
        the core reads them: None, one int for all, or a list of n; headers None, a list of n tuples-or-None or a
        _HeaderColumn (an Arrow list<struct<key, value>> array, read in place)."""
        cdef Py_ssize_t i
        partitions = _int_column(partitions, n, "partitions", num_partitions, str(num_partitions))
        timestamps_ms = _int_column(timestamps_ms, n, "timestamps_ms", _TIMESTAMP_END_MS, "2**63")
        headers = _header_column(headers, n)
        if headers is not None and type(headers) is not _HeaderColumn:
            entries = _as_list(headers, "headers", SerializationError)
            if len(entries) != n:
                raise InvalidRecordError(f"headers has {len(entries)} entries for {n} records")
            headers = [_checked_headers(entries[i], i) for i in range(n)]
        return partitions, timestamps_ms, headers

    def _send_columns(self, str topic, _Column values, _Column keys, object partitions, object timestamps_ms,
                      object headers, BatchResult result, Py_ssize_t start, Py_ssize_t stop, bytearray buffer):
        """Appends records [start, stop) under the lock in one loop. Returns (next, unused buffer, bytes needed):
        next < stop when record `next` needs a new batch of that many bytes and the pool is empty (the caller waits
        for memory, then calls again with the buffer it got); a given buffer no new batch took comes back. Records
        too large fail in `result`."""
        cdef RecordAccumulator accumulator = self._accumulator
        cdef AppendResult appended
        cdef ProducerBatch batch
        yield_to_network()
        cdef _Segment segment
        cdef _Parts parts
        cdef Py_ssize_t i
        cdef int n_parts, chosen, fixed_partition = -1
        cdef int64_t ts, fixed_ts = -1, size_bytes
        cdef bint keyed = keys.kind != _COL_NULL and not self._ignore_keys
        cdef bint wake = False
        cdef list partition_list = None, ts_list = None
        cdef list header_list = headers if type(headers) is list else None
        cdef _HeaderColumn header_col = headers if type(headers) is _HeaderColumn else None
        infos = self._partitions.get(topic)
        if infos is None:
            raise AssertionError("send_batch before the topic's metadata arrived")
        n_parts = len(infos)
        if partitions is None:
            pass
        elif type(partitions) is int:
            fixed_partition = partitions
        else:
            partition_list = partitions
        if type(timestamps_ms) is int:
            fixed_ts = timestamps_ms
        else:  # None entries of a list get the current time too
            fixed_ts = self._clock.wall_ms()
            ts_list = timestamps_ms
        cdef RecordBatchBuilder builder
        cdef list open_batches = [None] * n_parts    # per partition: the batch this call last appended to
        cdef list open_segments = [None] * n_parts   # and this call's segment in it
        # runs of records into those batches are appended with the GIL released (the sender thread runs meanwhile)
        # when nothing per record is a Python object: Arrow or no keys and values, Arrow or no headers, no
        # per-record partitions or timestamps, and a partition from the key or the call
        cdef bint runs = (values.kind != _COL_LIST and keys.kind != _COL_LIST and header_list is None
                          and partition_list is None and ts_list is None and (keyed or fixed_partition >= 0))
        # every field set (zeroed) before the `if runs` below fills them: _append_run reads them only when runs,
        # which the compiler cannot see through (it warned -Wmaybe-uninitialized for each field)
        cdef _OpenRun run = _OpenRun(builders=NULL, segments=NULL, open_count=0, values=NULL, keys=NULL,
                                     headers=NULL, keyed=False, fixed_partition=-1, num_partitions=0, timestamp_ms=0,
                                     max_record_bytes=0, wake=False)
        if runs:
            run.builders = <PyObject**>PyMem_Calloc(2 * n_parts, sizeof(PyObject*))
            if run.builders == NULL:
                raise MemoryError()
            run.segments = run.builders + n_parts
            run.open_count = 0
            run.values = <PyObject*>values
            run.keys = <PyObject*>keys
            if header_col is not None:
                run.headers = <PyObject*>header_col
            run.keyed = keyed
            run.fixed_partition = fixed_partition
            run.num_partitions = n_parts
            run.timestamp_ms = fixed_ts
            run.max_record_bytes = self._max_record_bytes
            run.wake = False
        self._take_lock()
        i = start - 1
        try:
            if accumulator.closed:
                raise ProducerClosedError("the producer is closed: send_batch() after close()")
            while True:
                i += 1
                if runs and i < stop and run.open_count:
                    with nogil:
                        i = _append_run(&run, i, stop)
                if i >= stop:
                    break
                _parts_init(&parts)
                try:
                    values.span(i, &parts.value, "values")
                    keys.span(i, &parts.key, "keys")
                    _parts_finish(&parts, None if header_list is None else <object>PyList_GET_ITEM(header_list, i))
                    if header_col is not None:
                        header_col.headers(i, &parts)
                    size_bytes = _HEADER_BYTES + _MAX_RECORD_OVERHEAD_BYTES + parts.fields_size_bytes
                    if size_bytes > self._max_record_bytes:
                        result._record_done(i, RecordTooLargeError(
                            f"the record is {size_bytes} bytes when serialized, larger than max.request.size or "
                            f"buffer.memory ({self._max_record_bytes})"))
                        continue
                    item = None if partition_list is None else <object>PyList_GET_ITEM(partition_list, i)
                    if item is not None:
                        chosen = item
                    elif fixed_partition >= 0:
                        chosen = fixed_partition
                    elif keyed and parts.key.size_bytes >= 0:
                        chosen = partition_for_key_ptr(parts.key.ptr, parts.key.size_bytes, n_parts)
                    else:
                        chosen = -1
                    item = None if ts_list is None else <object>PyList_GET_ITEM(ts_list, i)
                    ts = fixed_ts if item is None else <int64_t>item
                    if chosen >= 0:
                        # the partition's batch this call appended to last is still its deque's last, open one
                        # (the lock is held): append there without the deque lookup while it has room
                        cached = <object>PyList_GET_ITEM(open_batches, chosen)
                        if cached is not None:
                            batch = <ProducerBatch>cached
                            builder = batch.builder
                            if builder._append(ts, &parts, True):
                                if builder._full():
                                    wake = True
                                segment = <_Segment><object>PyList_GET_ITEM(open_segments, chosen)
                                if segment.first_offset + segment.count != builder.record_count - 1:
                                    segment = batch._segment_for(result, builder.record_count - 1)
                                    open_segments[chosen] = segment
                                segment._add(i)
                                if runs:
                                    run.segments[chosen] = <PyObject*>segment
                                continue
                    appended = accumulator._append_record(topic, chosen, ts, &parts, self._clock, buffer,
                                                          self._snapshot)
                    if appended.batch == NULL:
                        return i, None, max(<int64_t>accumulator.batch_size_bytes, size_bytes)
                    batch = <ProducerBatch>appended.batch
                    if appended.new_batch:
                        buffer = None  # taken (or there was none)
                        wake = True
                    elif appended.batch_full:
                        wake = True
                    segment = batch._segment_for(result, batch.builder.record_count - 1)
                    segment._add(i)
                    if chosen >= 0:
                        open_batches[chosen] = batch
                        open_segments[chosen] = segment
                        if runs:
                            if run.builders[chosen] == NULL:
                                run.open_count += 1
                            run.builders[chosen] = <PyObject*>batch.builder
                            run.segments[chosen] = <PyObject*>segment
                finally:
                    _parts_release(&parts)
        finally:
            if self._lock is not None:
                self._lock.give_to_waiter()  # the sender thread, blocked on the lock, goes before the next chunk
            else:
                self._release()
            if run.builders != NULL:
                wake = wake or run.wake
                PyMem_Free(run.builders)
            if wake and not self._wakeup_sent:
                self._wakeup_sent = True
                self._wakeup()
        return stop, buffer, 0


cdef Py_ssize_t _append_run(_OpenRun* run, Py_ssize_t i, Py_ssize_t stop) except -1 nogil:
    """Appends records i, i+1, ... while each goes into a batch of run->builders with room; returns the first one
    it did not append (the caller's GIL path takes that one). The caller holds the producer lock and keeps every
    object alive; no object is created or released here."""
    cdef _Parts parts
    cdef int chosen
    cdef PyObject* builder
    cdef PyObject* segment
    _parts_init(&parts)
    while i < stop:
        (<_Column>run.values)._span_nogil(i, &parts.value)
        (<_Column>run.keys)._span_nogil(i, &parts.key)
        parts.fields_size_bytes = (_bytes_field_size(parts.key.size_bytes)
                                   + _bytes_field_size(parts.value.size_bytes) + 1)
        if run.headers != NULL and not (<_HeaderColumn>run.headers)._headers_nogil(i, &parts):
            return i  # more headers than the inline spans: the GIL path allocates
        if _HEADER_BYTES + _MAX_RECORD_OVERHEAD_BYTES + parts.fields_size_bytes > run.max_record_bytes:
            return i
        if run.fixed_partition >= 0:
            chosen = run.fixed_partition
        elif run.keyed and parts.key.size_bytes >= 0:
            chosen = partition_for_key_ptr(parts.key.ptr, parts.key.size_bytes, run.num_partitions)
        else:
            return i
        builder = run.builders[chosen]
        segment = run.segments[chosen]
        if (builder == NULL or (<_Segment>segment).first_offset + (<_Segment>segment).count
                != (<RecordBatchBuilder>builder).record_count
                or not (<RecordBatchBuilder>builder)._append_nogil(run.timestamp_ms, &parts)):
            return i
        (<_Segment>segment)._add(i)
        if (<RecordBatchBuilder>builder)._full():
            run.wake = True
        i += 1
    return i


cdef object _TIMESTAMP_END_MS = 1 << 63  # timestamps are int64 on the wire


cdef object _int_column(object arg, Py_ssize_t n, str field, object end, str end_text):
    """None, one int for every record, or n entries (a list, an Arrow array, any iterable), each an int in [0, end)
    or None (that record gets the default: the partitioner's choice, the current time); InvalidRecordError naming
    field otherwise."""
    cdef Py_ssize_t i
    if arg is None:
        return None
    if type(arg) is int:
        if not 0 <= arg < end:
            raise InvalidRecordError(f"{field} {arg} is out of range [0, {end_text})")
        return arg
    if isinstance(arg, (bool, int, float)):
        raise InvalidRecordError(f"{field} must be None, an int in [0, {end_text}) or one such int or None per "
                                 f"record, not {type(arg).__name__}")
    arg = _as_list(arg, field, InvalidRecordError)
    if len(arg) != n:
        raise InvalidRecordError(f"{field} has {len(arg)} entries for {n} records")
    for i in range(n):
        item = arg[i]
        if item is not None and (type(item) is not int or not 0 <= item < end):
            raise InvalidRecordError(f"{field}[{i}] is {item!r:.40}: it must be None or an int in [0, {end_text})")
    return arg


cdef object _checked_headers(object headers, Py_ssize_t index):
    """One record's headers as send() and send_batch() take them -- None, a dict, or an iterable of (key, value)
    pairs (tuples or 2-item lists); key a str, value bytes-like, str (written as UTF-8) or None -- as the tuple of
    pairs the core writes (the pairs given when no change is needed), or None; SerializationError naming headers
    (headers[index] of send_batch) and the header."""
    cdef Py_ssize_t i
    cdef list rewritten = None  # made when the first pair needs a change (a list pair, a str value)
    if headers is None:
        return None
    if type(headers) is tuple:
        items = headers
    elif type(headers) is list:
        items = PyList_AsTuple(headers)
    elif isinstance(headers, Mapping):
        items = tuple(headers.items())
    elif isinstance(headers, (str, bytes, bytearray, memoryview)):
        items = None
    else:
        try:
            items = tuple(headers)
        except TypeError:
            items = None
    if items is None:
        raise SerializationError(f"{_field_name('headers', index)} must be None, a dict or a list of (key, value) "
                                 f"pairs (the key a str, the value bytes-like, str or None), not "
                                 f"{type(headers).__name__}")
    for i in range(PyTuple_GET_SIZE(items)):
        item = <object>PyTuple_GET_ITEM(items, i)
        if type(item) is tuple and PyTuple_GET_SIZE(item) == 2:
            key = <object>PyTuple_GET_ITEM(item, 0)
            value = <object>PyTuple_GET_ITEM(item, 1)
        elif type(item) is list and PyList_GET_SIZE(item) == 2:
            key = <object>PyList_GET_ITEM(item, 0)
            value = <object>PyList_GET_ITEM(item, 1)
        else:
            raise SerializationError(f"{_field_name('headers', index)}: each header must be a (key, value) "
                                     f"pair (the key a str, the value bytes-like, str or None), got {item!r:.80}")
        if not PyUnicode_Check(key):
            raise SerializationError(f"{_field_name('headers', index)}: header keys must be str, got "
                                     f"{type(key).__name__}")
        if not (PyUnicode_IS_ASCII(key) and (value is None or PyBytes_CheckExact(value))):
            value = _checked_header_value(key, value, index)
        if type(item) is not tuple or value is not <object>PyTuple_GET_ITEM(item, 1):
            if rewritten is None:
                rewritten = list(items)
            rewritten[i] = (key, value)
    if rewritten is not None:
        return tuple(rewritten)
    return items if PyTuple_GET_SIZE(items) else None


cdef object _checked_header_value(object key, object value, Py_ssize_t index):
    """A header's value as the core writes it (a str as UTF-8 bytes), after checking key and value (the cases
    _checked_headers cannot pass by their type alone)."""
    cdef _Span span
    try:
        _str_span(&span, key, "key", -1)
        if PyUnicode_Check(value):
            _str_span(&span, value, "value", -1)
            return PyBytes_FromStringAndSize(<const char*>span.ptr, span.size_bytes)
        if value is not None and not PyBytes_CheckExact(value):
            span.owned = 0
            try:
                _span_acquire(&span, value, "value")
            finally:
                if span.owned:
                    PyBuffer_Release(&span.view)
    except SerializationError as e:
        raise SerializationError(f"{_field_name('headers', index)}: header {key!r:.40} {e}") from None
    return value


def checked_headers(headers):
    """send()'s headers as the core writes them (see _checked_headers); SerializationError names what is wrong."""
    return _checked_headers(headers, -1)
