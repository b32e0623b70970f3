# fetch.pxd: what fetch.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython

cdef enum:
    _CONTROL_ABORT = 0
    _CONTROL_COMMIT = 1
    _NO_MARKER = 2  # a transaction with no marker in this data yet
    _DELIVER = 0
    _DROP = 1
    _BLOCK = 2
    _CRC_NOGIL_BYTES = 16384  # batches at least this big are checked with the GIL released

cdef class ConsumerRecord:
    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp_ms
    cdef readonly int timestamp_type
    cdef readonly object key
    cdef readonly object value
    cdef list _headers  # None: no headers (made [] on first access)
    cdef int32_t _leader_epoch  # -1: none

cdef enum:  # the part of a record _Fields.problem is about
    _FIELD_HEAD
    _FIELD_KEY
    _FIELD_VALUE
    _FIELD_HEADERS
    _FIELD_HEADER_KEY

cdef struct _Fields:
    _RecordHead head
    int64_t offset
    const unsigned char* key
    int64_t key_bytes  # -1: null
    const unsigned char* value
    int64_t value_bytes  # -1: null
    Py_ssize_t headers_at  # the header count's position
    int64_t header_count
    int field  # which part is malformed, and
    Py_ssize_t problem  # the reader's _BAD_* code

@cython.final
cdef class PartitionFetch:
    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int64_t fetch_offset
    cdef readonly int64_t next_offset
    cdef readonly int32_t last_epoch  # partition leader epoch of the last batch passed or entered; -1: none (KIP-320)
    cdef readonly bint read_committed
    cdef readonly bint check_crcs
    cdef readonly bint blocked_on_open_transaction
    cdef readonly Py_ssize_t bytes_size
    cdef bytes _topic_utf8
    cdef const unsigned char* _topic_utf8_ptr
    cdef Py_ssize_t _topic_bytes
    cdef object _decompress
    cdef object _records
    cdef Py_buffer _view
    cdef bint _has_view
    cdef const unsigned char* _data
    cdef Py_ssize_t _pos  # the next batch's position in _data
    cdef bint _ended  # no batch after _pos can be handed out (end of data, partial batch, or blocked)
    # the batch being read
    cdef bint _in_batch
    cdef _BatchHeader _batch
    cdef Py_buffer _plain_view  # the decompressed records section
    cdef bint _has_plain_view
    cdef const unsigned char* _section
    cdef Py_ssize_t _section_bytes
    cdef Py_ssize_t _record_pos
    cdef int32_t _records_left
    cdef int32_t _record_index
    # read_committed
    cdef bint _markers_decide  # no aborted list from the broker: markers decide (see the module comment)
    cdef bint _scanned
    cdef bint _walked
    cdef bint _busy  # a call is under way (it may have released the GIL): another thread must not step in
    cdef int64_t _end_offset
    cdef list _markers_after  # [(offset, producer_id, commit)] past this data, from look-ahead fetches
    cdef bytearray _decisions  # per batch in order: _DELIVER, _DROP or _BLOCK (markers decide)
    cdef Py_ssize_t _batch_index
    cdef list _aborted  # [(first_offset, producer_id)] sorted, consumed from _aborted_next
    cdef Py_ssize_t _aborted_next
    cdef set _aborting  # producers whose aborted transaction is under way

    cdef void _release(self) noexcept
    cdef inline void _release_plain(self) noexcept
    cdef object _corrupt(self, str what, int64_t offset)
    cdef object _wrapped(self, object error)
    cdef int _claim(self) except -1
    cdef inline bint _ready(self) except -1
    cdef int _finish_batch(self) except -1
    cdef bint _enter_batch(self) except -1
    cdef int _inflate(self, int codec, Py_ssize_t start, Py_ssize_t end) except -1
    cdef int _decide(self, const unsigned char* p, Py_ssize_t size_bytes) except -1
    cdef int _marker(self, const unsigned char* p, Py_ssize_t size_bytes, _BatchHeader* h) except -2
    cdef list _walk_markers(self)
    cdef int _scan(self) except -1
    cdef inline int _parse(self, _Fields* f) noexcept nogil
    cdef inline void _consumed(self, _Fields* f, bint handed_out) noexcept nogil
    cdef inline int64_t _timestamp_ms(self, _Fields* f, bint log_append) noexcept nogil
    cdef object _problem(self, _Fields* f)
    cdef int _records_into(self, list out, Py_ssize_t max_records) except -1
    cdef int _arrow_into(self, ArrowBatchBuilder builder, Py_ssize_t max_records, Py_ssize_t* appended) except -1
    cdef int _arrow_batch(self, _Columns* c, Py_ssize_t max_records, bint include_headers, Py_ssize_t* appended,
                          _Fields* f) noexcept nogil
