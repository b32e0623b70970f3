# FetchPump: a steady fetch session's next Fetch, written from the answer to the last one as soon as it is read
# (issue 32). It owns one broker connection's armed request: the session (id, next epoch), the partitions as the
# session has them, the limits the Fetcher applies (fetch.max.bytes less what the consumer's buffer holds of this
# broker's data, FETCH_AHEAD_ANSWERS); `fire` reads an answer's frame -- its partitions' error codes, watermarks and
# record batch headers, never a record -- and decides: either the next incremental Fetch (the partitions whose fetch
# offset the answer moved, at the offset after their last whole batch, exactly what cykafka/fetcher.py would send
# once it filed the answer) is written, size-prefixed, for the transport to send at once, or nothing is, and the
# Fetcher sends the next one as always. Either way the pump disarms (one answer, one decision); the Fetcher arms it
# again with the request it then has in flight.
# It fires only on a plain answer: no error (top level or partition), the armed session, only armed partitions, no
# tagged field (a diverging epoch, a new leader), no preferred read replica, a whole batch for each partition with
# records, and room by the buffer's bounds; anything else is the Fetcher's to handle in Python. Pure: bytes in, bytes
# out, no I/O, no clock; `_fire` runs without the GIL.
# Fetch v12 only (flexible, topic names: cykafka's newest Fetch). The decision works on a
# plain C struct (PumpCore, fetch_pump.pxd) through its `fire` pointer: the network thread's wait (netio.pyx) reads
# the answer and writes the request without the GIL.

from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

from cykafka.protocol.error_codes import ErrorCode

cdef int16_t _NO_ERROR = ErrorCode.NONE


cdef extern from *:
    """
    #define cyk_pump_load(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
    #define cyk_pump_store(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
    """
    int cyk_pump_load_int "cyk_pump_load"(int*) nogil
    long long cyk_pump_load_ll "cyk_pump_load"(long long*) nogil
    void cyk_pump_store_int "cyk_pump_store"(int*, int) nogil
    void cyk_pump_store_ll "cyk_pump_store"(long long*, long long) nogil


FETCH_PUMP_VERSION = PUMP_FETCH_VERSION  # the one Fetch version a FetchPump reads and writes

_PUMP_REFUSALS = {
    _PUMP_FIRED: None,
    _PUMP_DISARMED: "not armed",
    _PUMP_CORRELATION: "an answer to another request",
    _PUMP_MALFORMED: "a truncated or malformed answer",
    _PUMP_TAGGED: "a tagged field",
    _PUMP_ERROR: "an error code",
    _PUMP_SESSION: "another fetch session",
    _PUMP_OUTSIDE: "a partition the request did not fetch",
    _PUMP_REPLICA: "a preferred read replica",
    _PUMP_NO_BATCH: "records without a whole batch",
    _PUMP_AHEAD: "fetched ahead of the caller",
    _PUMP_BYTES: "no room in fetch.max.bytes",
}


cdef inline Py_ssize_t _read_uvarint(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end,
                                     uint64_t* out) noexcept nogil:
    """An unsigned varint of at most 5 bytes (the protocol's lengths and counts) at p[pos:end]; new pos, -1 if
    malformed."""
    cdef uint64_t value = 0
    cdef int shift = 0
    while pos < end and shift < 35:
        value |= <uint64_t>(p[pos] & 0x7F) << shift
        if not p[pos] & 0x80:
            out[0] = value
            return pos + 1
        pos += 1
        shift += 7
    return -1


cdef inline Py_ssize_t _read_count(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end,
                                   Py_ssize_t* count) noexcept nogil:
    """A compact array or string length (uvarint, length + 1; 0 is null): count -1 for null; new pos, -1 if
    malformed."""
    cdef uint64_t raw
    pos = _read_uvarint(p, pos, end, &raw)
    if pos < 0 or raw > 0x7FFFFFFF:
        return -1
    count[0] = <Py_ssize_t>raw - 1
    return pos


cdef inline Py_ssize_t _no_tags(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end) noexcept nogil:
    """An empty tagged-field section at pos: its new pos; -1 malformed, -2 a tagged field is set."""
    if pos >= end:
        return -1
    return pos + 1 if p[pos] == 0 else -2


cdef inline int _tags_refusal(Py_ssize_t pos) noexcept nogil:
    """What _no_tags' failure (-1, -2) means for the pump."""
    return _PUMP_MALFORMED if pos == -1 else _PUMP_TAGGED


cdef inline int64_t _batches_end(const unsigned char* p, Py_ssize_t size_bytes, int64_t fetch_offset) noexcept nogil:
    """The offset after the last whole record batch in p[:size_bytes], read from batch headers only (fetch_offset
    when there is none): PartitionFetch.end_offset's walk (fetch.pyx), stopping where it stops."""
    cdef Py_ssize_t pos = 0, batch_bytes
    cdef int64_t end = fetch_offset, last
    while True:
        batch_bytes = _batch_size(p + pos, size_bytes - pos, False)
        if batch_bytes < 0:
            return end
        last = <int64_t>(<uint64_t>_get_be64(p + pos) + <uint64_t><int32_t>_get_be32(p + pos + 23)) + 1
        if last > end:
            end = last
        pos += batch_bytes


cdef class FetchPump:
    """FetchPump(client_id)\n--\n
    One broker connection's next Fetch written from the answer to its last (module comment)."""

    def __cinit__(self):
        memset(&self._c, 0, sizeof(PumpCore))
        self._c.fire = _pump_fire
        self._c.fd = -1
        self._c.refusal = _PUMP_DISARMED

    def __init__(self, client_id):
        self._client_id = None if client_id is None else client_id.encode("utf-8")
        if self._client_id is not None and len(self._client_id) > 0x7FFF:
            raise InvalidArgumentError(f"client_id of {len(self._client_id)} bytes exceeds the 32767-byte limit")
        self._c.client_id_len = -1 if self._client_id is None else len(self._client_id)
        self._c.client_id = NULL if self._client_id is None else PyBytes_AS_STRING(self._client_id)
        self._rack_id = b""
        self._c.rack_id, self._c.rack_id_len = PyBytes_AS_STRING(self._rack_id), 0
        self._topics = []

    def __dealloc__(self):
        free(self._c.parts)
        free(<void*>self._c.topic_names)
        free(self._c.topic_lens)
        free(self._c.out)
        free(self._c.stash)

    def arm(self, int32_t correlation_id, int32_t next_correlation_id, int32_t session_id, int32_t next_epoch,
            int32_t max_wait_ms, int32_t min_bytes, int32_t fetch_max_bytes, bint read_committed, str rack_id,
            list partitions, int fetch_ahead_answers):
        """arm(correlation_id, next_correlation_id, session_id, next_epoch, max_wait_ms, min_bytes, fetch_max_bytes,
        read_committed, rack_id, partitions, fetch_ahead_answers)\n--\n
        The Fetch with correlation_id is in flight in session session_id; its answer may fire the next, at
        next_epoch, carrying next_correlation_id. partitions: the session's, in its order, as [(topic, partition,
        fetch_offset, partition_max_bytes, current_leader_epoch, end_offset)] (end_offset: the high watermark,
        read_committed: the last stable offset, as last known)."""
        cdef Py_ssize_t i, n = len(partitions), t
        cdef _PumpPartition* part
        cdef dict topic_index = {}
        cyk_pump_store_int(&self._c.armed, 0)
        if n > self._c.part_capacity:
            part = <_PumpPartition*>realloc(self._c.parts, n * sizeof(_PumpPartition))
            if part == NULL:
                raise MemoryError()
            self._c.parts, self._c.part_capacity = part, n
        topics = []
        for i in range(n):
            topic, partition, fetch_offset, max_bytes, leader_epoch, end_offset = partitions[i]
            t = topic_index.get(topic, -1)
            if t < 0:
                t = topic_index[topic] = len(topics)
                topics.append(topic.encode("utf-8"))
            part = &self._c.parts[i]
            part.topic, part.partition, part.fetch_offset = t, partition, fetch_offset
            part.max_bytes, part.leader_epoch, part.end_offset = max_bytes, leader_epoch, end_offset
            part.next_offset, part.changed = fetch_offset, False
        self._c.part_count = n
        self._set_topics(topics)
        self._rack_id = rack_id.encode("utf-8")
        self._c.rack_id, self._c.rack_id_len = PyBytes_AS_STRING(self._rack_id), len(self._rack_id)
        self._c.answer_correlation_id, self._c.next_correlation_id = correlation_id, next_correlation_id
        self._c.session_id, self._c.next_epoch = session_id, next_epoch
        self._c.max_wait_ms, self._c.min_bytes, self._c.fetch_max_bytes = max_wait_ms, min_bytes, fetch_max_bytes
        self._c.isolation_level = 1 if read_committed else 0
        self._c.fetch_ahead_answers = fetch_ahead_answers
        self._c.refusal = _PUMP_DISARMED
        cyk_pump_store_int(&self._c.armed, 1)

    cdef int _set_topics(self, list topics) except -1:
        cdef Py_ssize_t i, n = len(topics)
        cdef const char** names = <const char**>realloc(<void*>self._c.topic_names, max(n, 1) * sizeof(const char*))
        if names == NULL:
            raise MemoryError()
        self._c.topic_names = names
        cdef Py_ssize_t* lens = <Py_ssize_t*>realloc(self._c.topic_lens, max(n, 1) * sizeof(Py_ssize_t))
        if lens == NULL:
            raise MemoryError()
        self._c.topic_lens = lens
        self._topics = topics
        for i in range(n):
            names[i] = PyBytes_AS_STRING(topics[i])
            lens[i] = PyBytes_GET_SIZE(topics[i])
        self._c.topic_count = n
        return 0

    def disarm(self):
        """disarm()\n--\n
        No answer fires a Fetch until the next arm() (any thread may call it: the consumer closing)."""
        cyk_pump_store_int(&self._c.armed, 0)

    @property
    def armed(self):
        return cyk_pump_load_int(&self._c.armed) == 1

    def set_buffered(self, long long answers, long long nbytes):
        """set_buffered(answers, nbytes)\n--\n
        The broker's answers (per partition) in the consumer's buffer and their bytes, now (any thread)."""
        cyk_pump_store_ll(&self._c.buffered_answers, answers)
        cyk_pump_store_ll(&self._c.buffered_bytes, nbytes)

    def fire(self, frame):
        """fire(frame)\n--\n
        frame: an answer's bytes after the size prefix. When it is the plain answer to the armed request, the next
        Fetch as a size-prefixed frame, else None (`refusal` says why). Disarms. (The network thread's wait does
        this itself without the GIL, netio.pyx: this is the decision alone.)"""
        cdef const unsigned char[::1] view = frame
        cdef int fired
        with nogil:
            fired = _pump_fire(&self._c, &view[0] if view.shape[0] else NULL, view.shape[0])
        return PyBytes_FromStringAndSize(<const char*>self._c.out, self._c.out_len) if fired else None

    @property
    def refusal(self):
        """Why the last answer fired nothing (None: it fired)."""
        return _PUMP_REFUSALS[self._c.refusal]

    def fired_offsets(self):
        """fired_offsets()\n--\n
        What the last request fired lists: [(topic, partition, fetch_offset)], the session's order."""
        cdef Py_ssize_t i
        cdef _PumpPartition* part
        out = []
        if self._c.refusal != _PUMP_FIRED:
            return out
        for i in range(self._c.part_count):
            part = &self._c.parts[i]
            if part.changed:
                out.append((self._topics[part.topic].decode("utf-8"), part.partition, part.next_offset))
        return out

    # -- the network side (netio.pyx reads and writes for the pump; the transport takes what it did) --------------

    def attach(self, int fd):
        """attach(fd)\n--\n
        The connection's socket: the network thread's wait reads the armed answer from it and writes the Fetch it
        fires (plain TCP only)."""
        self._c.fd = fd

    @property
    def idle(self):
        """Whether the wait may read and write for the pump: nothing of the transport's own waits on the connection
        (bytes to write, a frame partly read)."""
        return self._c.idle

    @idle.setter
    def idle(self, bint value):
        self._c.idle = value

    def take_stash(self):
        """take_stash()\n--\n
        What the wait read from the connection and the transport has not taken yet (b"" for nothing)."""
        out = PyBytes_FromStringAndSize(<const char*>self._c.stash, self._c.stash_len)
        self._c.stash_len = 0
        return out

    def take_fired(self):
        """take_fired()\n--\n
        The Fetch the wait fired since the last call, as (correlation_id, frame, bytes written), or None."""
        if not self._c.fired:
            return None
        self._c.fired = False
        return (self._c.next_correlation_id, PyBytes_FromStringAndSize(<const char*>self._c.out, self._c.out_len),
                self._c.written)


cdef int _pump_fire(PumpCore* c, const unsigned char* frame, Py_ssize_t frame_len) noexcept nogil:
    """1 when the next request is written to c.out; else 0 with c.refusal set. Disarms either way."""
    cdef long long data_bytes = 0, answers, buffered_bytes, room
    cdef Py_ssize_t i
    cdef _PumpPartition* part
    if cyk_pump_load_int(&c.armed) != 1:
        c.refusal = _PUMP_DISARMED
        return 0
    cyk_pump_store_int(&c.armed, 0)
    c.refusal = _pump_read_answer(c, frame, frame_len, &data_bytes)
    if c.refusal != _PUMP_FIRED:
        return 0
    answers = cyk_pump_load_ll(&c.buffered_answers)
    buffered_bytes = cyk_pump_load_ll(&c.buffered_bytes) + data_bytes
    # fetcher.py's rules once the answer is filed: a partition at its end holding FETCH_AHEAD_ANSWERS answers is
    # not fetched (counted per broker here, at least as many as per partition), nor a broker without room
    for i in range(c.part_count):
        part = &c.parts[i]
        if part.changed and part.next_offset >= part.end_offset and answers + 1 >= c.fetch_ahead_answers:
            c.refusal = _PUMP_AHEAD
            return 0
    room = c.fetch_max_bytes - buffered_bytes
    if buffered_bytes <= 0 and room < 1:
        room = 1  # fetch.max.bytes 0 with nothing buffered: at least 1 byte, as the Fetcher asks
    if room <= 0:
        c.refusal = _PUMP_BYTES
        return 0
    if _pump_write_request(c, <int32_t>min(room, 0x7FFFFFFF)) < 0:
        c.refusal = _PUMP_MALFORMED  # out of memory: the Fetcher's turn
        return 0
    for i in range(c.part_count):
        part = &c.parts[i]
        if part.changed:
            part.fetch_offset = part.next_offset
    return 1

cdef int _pump_read_answer(PumpCore* c, const unsigned char* p, Py_ssize_t end,
                           long long* data_bytes) noexcept nogil:
    """Reads the answer into the partitions' next_offset / end_offset / changed; _PUMP_FIRED when it may fire."""
    cdef Py_ssize_t pos, topic_count, part_count, name_len, aborted, records_len, t, i, k, j
    cdef int16_t error_code
    cdef int32_t partition
    cdef int64_t high_watermark, last_stable_offset, next_offset
    cdef _PumpPartition* part
    for i in range(c.part_count):
        c.parts[i].next_offset = c.parts[i].fetch_offset
        c.parts[i].changed = False
    if end < 4:
        return _PUMP_MALFORMED
    if <int32_t>_get_be32(p) != c.answer_correlation_id:
        return _PUMP_CORRELATION
    pos = _no_tags(p, 4, end)  # the response header's tags
    if pos < 0:
        return _tags_refusal(pos)
    if pos + 10 > end:  # throttle_time_ms, error_code, session_id
        return _PUMP_MALFORMED
    if <int16_t>_get_be16(p + pos + 4) != _NO_ERROR:  # after throttle_time_ms
        return _PUMP_ERROR
    if <int32_t>_get_be32(p + pos + 6) != c.session_id:
        return _PUMP_SESSION
    pos = _read_count(p, pos + 10, end, &topic_count)
    if pos < 0 or topic_count < 0:
        return _PUMP_MALFORMED
    for k in range(topic_count):
        pos = _read_count(p, pos, end, &name_len)
        if pos < 0 or name_len < 0 or pos + name_len > end:
            return _PUMP_MALFORMED
        t = -1
        for i in range(c.topic_count):
            if c.topic_lens[i] == name_len and memcmp(c.topic_names[i], p + pos, name_len) == 0:
                t = i
                break
        if t < 0:
            return _PUMP_OUTSIDE
        pos = _read_count(p, pos + name_len, end, &part_count)
        if pos < 0 or part_count < 0:
            return _PUMP_MALFORMED
        for j in range(part_count):
            # partition_index, error_code, high_watermark, last_stable_offset, log_start_offset
            if pos + 4 + 2 + 8 + 8 + 8 > end:
                return _PUMP_MALFORMED
            partition = <int32_t>_get_be32(p + pos)
            error_code = <int16_t>_get_be16(p + pos + 4)
            high_watermark = <int64_t>_get_be64(p + pos + 6)
            last_stable_offset = <int64_t>_get_be64(p + pos + 14)
            pos = _read_count(p, pos + 30, end, &aborted)
            if pos < 0:
                return _PUMP_MALFORMED
            for i in range(max(aborted, 0)):  # producer_id, first_offset, their tags
                if pos + 16 > end:
                    return _PUMP_MALFORMED
                pos = _no_tags(p, pos + 16, end)
                if pos < 0:
                    return _tags_refusal(pos)
            if pos + 4 > end:
                return _PUMP_MALFORMED
            if <int32_t>_get_be32(p + pos) != -1:
                return _PUMP_REPLICA
            pos = _read_count(p, pos + 4, end, &records_len)
            if pos < 0 or pos + max(records_len, 0) > end:
                return _PUMP_MALFORMED
            part = NULL
            for i in range(c.part_count):
                if c.parts[i].topic == t and c.parts[i].partition == partition:
                    part = &c.parts[i]
                    break
            if part == NULL:
                return _PUMP_OUTSIDE
            if error_code != _NO_ERROR:
                return _PUMP_ERROR
            part.end_offset = last_stable_offset if c.isolation_level else high_watermark
            if records_len > 0:
                next_offset = _batches_end(p + pos, records_len, part.fetch_offset)
                if next_offset <= part.fetch_offset:
                    return _PUMP_NO_BATCH
                part.next_offset, part.changed = next_offset, True
                data_bytes[0] += records_len
            pos = _no_tags(p, pos + max(records_len, 0), end)  # the partition's tags (diverging epoch, leader)
            if pos < 0:
                return _tags_refusal(pos)
        pos = _no_tags(p, pos, end)  # the topic's
        if pos < 0:
            return _tags_refusal(pos)
    pos = _no_tags(p, pos, end)  # the body's
    if pos < 0:
        return _tags_refusal(pos)
    return _PUMP_FIRED

cdef int _pump_write_request(PumpCore* c, int32_t max_bytes) noexcept nogil:
    """The next Fetch into c.out: fetcher.py's fetch_request for the changed partitions, grouped by topic in the
    session's order (ports.by_topic), no forgotten partitions; -1 out of memory."""
    cdef Py_ssize_t i, j, t, count, size, client_len = c.client_id_len, rack_len = c.rack_id_len
    cdef unsigned char* out
    cdef unsigned char* q
    cdef _PumpPartition* part
    # an upper bound: head, fixed fields, per topic its name and counts, per partition 32 bytes and its tags
    size = 4 + 8 + 2 + max(client_len, 0) + 1 + 25 + 5 + 1 + 5 + rack_len + 1
    for t in range(c.topic_count):
        size += 5 + c.topic_lens[t] + 5 + 1
    size += c.part_count * 33
    if size > c.out_capacity:
        out = <unsigned char*>realloc(c.out, size)
        if out == NULL:
            return -1
        c.out, c.out_capacity = out, size
    q = c.out + 4
    _put_be16(q, 1)  # api key: Fetch
    _put_be16(q + 2, PUMP_FETCH_VERSION)
    _put_be32(q + 4, <uint32_t>c.next_correlation_id)
    q += 8
    if client_len < 0:
        _put_be16(q, 0xFFFF)
        q += 2
    else:
        _put_be16(q, <uint16_t>client_len)
        memcpy(q + 2, c.client_id, client_len)
        q += 2 + client_len
    q[0] = 0  # the header's tags
    _put_be32(q + 1, <uint32_t>-1)  # replica_id
    _put_be32(q + 5, <uint32_t>c.max_wait_ms)
    _put_be32(q + 9, <uint32_t>c.min_bytes)
    _put_be32(q + 13, <uint32_t>max_bytes)
    q[17] = <unsigned char>c.isolation_level
    _put_be32(q + 18, <uint32_t>c.session_id)
    _put_be32(q + 22, <uint32_t>c.next_epoch)
    q += 26
    count = 0  # topics with a changed partition
    for t in range(c.topic_count):
        for i in range(c.part_count):
            if c.parts[i].topic == t and c.parts[i].changed:
                count += 1
                break
    q = _put_uvarint(q, count + 1)
    # by_topic groups in the order topics first appear among the partitions sent: the session's order
    for i in range(c.part_count):
        part = &c.parts[i]
        if not part.changed or _pump_first_changed(c, part.topic) != i:
            continue
        t = part.topic
        q = _put_uvarint(q, c.topic_lens[t] + 1)
        memcpy(q, c.topic_names[t], c.topic_lens[t])
        q += c.topic_lens[t]
        count = 0
        for j in range(i, c.part_count):
            if c.parts[j].topic == t and c.parts[j].changed:
                count += 1
        q = _put_uvarint(q, count + 1)
        for j in range(i, c.part_count):
            part = &c.parts[j]
            if part.topic != t or not part.changed:
                continue
            _put_be32(q, <uint32_t>part.partition)
            _put_be32(q + 4, <uint32_t>part.leader_epoch)
            _put_be64(q + 8, <uint64_t>part.next_offset)
            _put_be32(q + 16, <uint32_t>-1)  # last_fetched_epoch
            _put_be64(q + 20, <uint64_t>-1)  # log_start_offset
            _put_be32(q + 28, <uint32_t>part.max_bytes)
            q[32] = 0
            q += 33
        q[0] = 0  # the topic's tags
        q += 1
    q[0] = 1  # forgotten_topics_data: none
    q = _put_uvarint(q + 1, rack_len + 1)
    memcpy(q, c.rack_id, rack_len)
    q += rack_len
    q[0] = 0  # the body's tags
    q += 1
    c.out_len = q - c.out
    _put_be32(c.out, <uint32_t>(c.out_len - 4))
    return 0

cdef Py_ssize_t _pump_first_changed(PumpCore* c, Py_ssize_t topic) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(c.part_count):
        if c.parts[i].topic == topic and c.parts[i].changed:
            return i
    return -1
