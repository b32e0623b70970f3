# SendPath: Producer.send's per-record work in C (the Producer's base class): argument checks, partition choice
# (explicit, murmur2 of the key, or the built-in partitioner), the size check and the accumulator append, with no
# Python-level call on the default path. Anything unusual (serializers, interceptors, a topic not in the metadata
# snapshot yet, a full buffer pool, every error) goes to the subclass's Python `_send_slow`, which has the messages.
# Time: with system_time, record timestamps are CLOCK_REALTIME and batch times CLOCK_MONOTONIC, read here in C (the
# one place the core reads a clock, for the same values SystemClock gives); otherwise the injected Clock is called.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int64_t


cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clock_id, timespec* tp)
    int CLOCK_REALTIME
    int CLOCK_MONOTONIC


cdef inline int64_t _clock_ms(int clock_id) noexcept nogil:
    cdef timespec ts
    clock_gettime(clock_id, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


cdef class SendPath:
    cdef RecordAccumulator _accumulator
    cdef object _acquire
    cdef object _release
    cdef object _clock
    cdef bint _system_time
    cdef object _wakeup
    cdef bint _wakeup_sent
    cdef bint _fast
    cdef bint _ignore_keys
    cdef int64_t _max_record_bytes
    cdef object _snapshot
    cdef dict _partitions
    cdef public bint _closed

    def _init_send_path(self, RecordAccumulator accumulator, object lock, object clock, bint system_time,
                        object wakeup, bint fast, bint ignore_keys, int64_t max_record_bytes, object snapshot):
        self._accumulator = accumulator
        self._acquire = lock.acquire
        self._release = lock.release
        self._clock = clock
        self._system_time = system_time
        self._wakeup = wakeup
        self._fast = fast
        self._ignore_keys = ignore_keys
        self._max_record_bytes = max_record_bytes
        self.sender_loop_started(snapshot)

    cpdef sender_loop_started(self, object snapshot):
        """The sender is about to look at the accumulator: appends from now on need a new wakeup; and the metadata
        snapshot the fast path reads (also refreshed by the slow path after a metadata wait)."""
        self._wakeup_sent = False
        if snapshot is not self._snapshot:
            self._snapshot = snapshot
            self._partitions = dict(snapshot.partitions)

    cdef inline int64_t _now_ms(self) except? -1:
        if self._system_time:
            return _clock_ms(CLOCK_MONOTONIC)
        return self._clock.monotonic_ms()

    def send(self, topic, value=None, key=None, *, partition=None, timestamp_ms=None, headers=None,
             on_delivery=None):
        """Queues a record; returns its RecordFuture. See Producer.send."""
        cdef int64_t ts, size_bytes
        cdef int chosen, n
        if self._closed or not self._fast or type(topic) is not str:
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        infos = self._partitions.get(topic)
        if infos is None:
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        n = len(infos)
        if key is not None and type(key) is not bytes:
            if type(key) is str:
                key = (<str>key).encode()
            elif type(key) is not bytearray and type(key) is not memoryview:
                return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        if value is not None and type(value) is not bytes:
            if type(value) is str:
                value = (<str>value).encode()
            elif type(value) is not bytearray and type(value) is not memoryview:
                return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        if (headers is not None and type(headers) is not list) or (on_delivery is not None
                                                                     and not callable(on_delivery)):
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        if timestamp_ms is None:
            ts = _clock_ms(CLOCK_REALTIME) if self._system_time else self._clock.wall_ms()
        elif type(timestamp_ms) is int and timestamp_ms >= 0:
            ts = timestamp_ms
        else:
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
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
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        if headers is None and (key is None or type(key) is bytes) and (value is None or type(value) is bytes):
            size_bytes = (_HEADER_BYTES + _MAX_RECORD_OVERHEAD_BYTES + 1
                          + _bytes_field_size(-1 if key is None else PyBytes_GET_SIZE(key))
                          + _bytes_field_size(-1 if value is None else PyBytes_GET_SIZE(value)))
        else:
            try:
                size_bytes = estimate_size_upper_bound(key, value, headers)
            except TypeError:  # a malformed header: the slow path says what is wrong
                return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        if size_bytes > self._max_record_bytes:
            return self._send_slow(topic, value, key, partition, timestamp_ms, headers, on_delivery)
        cdef RecordAccumulator accumulator = self._accumulator
        cdef RecordFuture future
        now_ms = self._now_ms()
        self._acquire()
        try:
            future = accumulator._append(topic, chosen, ts, key, value, headers, on_delivery, now_ms, None,
                                         self._snapshot)
        finally:
            self._release()
        if future is None:  # the pool is empty: wait for memory up to max.block.ms
            return self._append_blocking(topic, chosen, ts, key, value, headers, on_delivery)
        if (accumulator._last_full or accumulator._last_new) and not self._wakeup_sent:
            self._wakeup_sent = True
            self._wakeup()
        return future
