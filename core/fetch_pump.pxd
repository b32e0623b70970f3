# fetch_pump.pxd: what fetch_pump.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cdef enum:
    PUMP_FETCH_VERSION = 12  # the one Fetch version the pump reads and writes (flexible, topic names)
    # why the last answer did not fire (FetchPump.refusal); 0: it fired
    _PUMP_FIRED = 0
    _PUMP_DISARMED = 1
    _PUMP_CORRELATION = 2
    _PUMP_MALFORMED = 3
    _PUMP_TAGGED = 4
    _PUMP_ERROR = 5
    _PUMP_SESSION = 6
    _PUMP_OUTSIDE = 7
    _PUMP_REPLICA = 8
    _PUMP_NO_BATCH = 9
    _PUMP_AHEAD = 10
    _PUMP_BYTES = 11

cdef struct _PumpPartition:
    Py_ssize_t topic  # index into the pump's topic names
    int32_t partition
    int64_t fetch_offset  # as the session has it (the armed request's)
    int32_t max_bytes  # partition_max_bytes
    int32_t leader_epoch  # current_leader_epoch
    int64_t end_offset  # high watermark (read_committed: last stable offset) as last known
    int64_t next_offset  # after an answer: where the next fetch starts (fetch_offset when it brought no batch)
    bint changed  # the answer moved next_offset: the next request lists it

cdef struct PumpCore:
    # what the decision reads and writes: plain C, so that the network thread's wait (netio.pyx) runs it without
    # the GIL through `fire`
    int (*fire)(PumpCore* core, const unsigned char* frame, Py_ssize_t frame_len) noexcept nogil
    int armed  # 0 or 1, read and written atomically (disarm() may come from another thread)
    int32_t answer_correlation_id  # the request whose answer may fire
    int32_t next_correlation_id  # the one the fired request carries (reserved by the transport)
    int32_t session_id
    int32_t next_epoch
    int32_t max_wait_ms
    int32_t min_bytes
    int32_t fetch_max_bytes
    int isolation_level  # 0 read_uncommitted, 1 read_committed
    int fetch_ahead_answers
    const char* client_id  # utf-8 (kept alive by the FetchPump), NULL for a null client id
    Py_ssize_t client_id_len
    const char* rack_id
    Py_ssize_t rack_id_len
    const char** topic_names  # utf-8, kept alive by the FetchPump
    Py_ssize_t* topic_lens
    Py_ssize_t topic_count
    _PumpPartition* parts
    Py_ssize_t part_count
    Py_ssize_t part_capacity
    long long buffered_answers  # the broker's answers in the consumer's buffer (atomic: the caller's thread sets it)
    long long buffered_bytes  # and their bytes
    unsigned char* out  # the last request written (size-prefixed frame)
    Py_ssize_t out_len
    Py_ssize_t out_capacity
    int refusal  # _PUMP_*: why the last answer did not fire
    # the network side (netio.pyx's): the connection, what it read for the pump, what it wrote of a fired request
    int fd  # -1: none
    bint idle  # nothing of the transport's own waits on the connection (to write, or a frame partly read)
    unsigned char* stash  # bytes read from the connection the transport has not taken yet
    Py_ssize_t stash_len
    Py_ssize_t stash_capacity
    bint fired  # a request was written (or started) by the wait, not yet taken by the transport
    Py_ssize_t written  # of it

cdef class FetchPump:
    cdef PumpCore _c
    cdef bytes _client_id
    cdef bytes _rack_id
    cdef list _topics  # utf-8 names, kept alive for _c.topic_names

    cdef int _set_topics(self, list topics) except -1
