# records.pxd: what records.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t

cdef enum:
    _HEADER_BYTES = 61
    _LOG_OVERHEAD_BYTES = 12  # baseOffset + batchLength: the part batchLength does not count
    _CRC_START = 21  # attributes
    _MAX_RECORD_OVERHEAD_BYTES = 21  # Java DefaultRecord.MAX_RECORD_OVERHEAD: length 5 + attrs 1 + ts 10 + offset 5
    _INLINE_HEADERS = 8
    _ATTR_CODEC_MASK = 0x07
    _ATTR_LOG_APPEND_TIME = 0x08
    _ATTR_TRANSACTIONAL = 0x10
    _ATTR_CONTROL = 0x20
    _MAX_CODEC = 4

cdef struct _Span:
    const unsigned char* ptr
    Py_ssize_t size_bytes  # -1: null
    int owned  # view must be released
    Py_buffer view

cdef struct _Parts:
    _Span key
    _Span value
    Py_ssize_t header_count
    Py_ssize_t headers_acquired
    _Span* header_keys
    _Span* header_values
    _Span* heap  # 2 * header_count spans when more than _INLINE_HEADERS
    Py_ssize_t fields_size_bytes  # Java DefaultRecord.sizeOf(key, value, headers)
    _Span inline_spans[2 * _INLINE_HEADERS]

@cython.final
cdef class RecordBatchBuilder:
    cdef bytearray _buffer
    cdef unsigned char* _data  # _buffer's bytes and size (appends without the GIL write through these)
    cdef Py_ssize_t _capacity
    cdef Py_ssize_t _pos  # write position = 61 + uncompressed records bytes
    cdef Py_ssize_t _size_bytes  # finished batch size, after close
    cdef float _ratio_estimate
    cdef double _actual_ratio
    cdef object _view
    cdef readonly int write_limit_bytes
    cdef readonly int codec
    cdef readonly int32_t record_count
    cdef readonly int64_t base_timestamp_ms
    cdef readonly int64_t max_timestamp_ms
    cdef readonly bint is_closed
    cdef readonly bint buffer_is_original
    cdef readonly bint log_append_time

    cdef int _reserve(self, Py_ssize_t needed_bytes) except -1
    cdef inline void _adopt(self, bytearray buffer)
    cdef inline Py_ssize_t _estimated(self) noexcept nogil
    cdef int _append(self, int64_t timestamp_ms, _Parts* parts, bint write) except -1
    cdef int _append_nogil(self, int64_t timestamp_ms, _Parts* parts) noexcept nogil
    cdef inline Py_ssize_t _record_bytes(self, int64_t timestamp_ms, _Parts* parts, int64_t* timestamp_delta,
                                         Py_ssize_t* body_bytes) noexcept nogil
    cdef inline void _write(self, int64_t timestamp_ms, int64_t timestamp_delta, Py_ssize_t body_bytes,
                            Py_ssize_t total_bytes, _Parts* parts) noexcept nogil
    cpdef bint try_append(self, int64_t timestamp_ms, object key, object value, object headers)
    cpdef bint has_room_for(self, int64_t timestamp_ms, object key, object value, object headers)
    cdef inline bint _full(self) noexcept nogil
    cpdef object close(self, object compressor, int64_t producer_id=*, int16_t producer_epoch=*,
                       int32_t base_sequence=*, bint is_transactional=*)

cdef enum:  # what _batch_size found wrong
    _BATCH_SHORT = -1
    _BATCH_LENGTH_SMALL = -2
    _BATCH_LENGTH_OVERRUN = -3
    _BATCH_MAGIC = -4
    _BATCH_CRC = -5

@cython.final
cdef class DecodedRecord:
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp_ms
    cdef readonly object key
    cdef readonly object value
    cdef readonly list headers

@cython.final
cdef class DecodedBatch:
    cdef readonly int64_t base_offset
    cdef readonly int32_t batch_length
    cdef readonly int32_t partition_leader_epoch
    cdef readonly int magic
    cdef readonly uint32_t crc
    cdef readonly int attributes
    cdef readonly int codec
    cdef readonly int timestamp_type
    cdef readonly bint is_transactional
    cdef readonly bint is_control
    cdef readonly int32_t last_offset_delta
    cdef readonly int64_t base_timestamp_ms
    cdef readonly int64_t max_timestamp_ms
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly list records

cdef struct _BatchHeader:
    int64_t base_offset
    int32_t batch_length
    int32_t partition_leader_epoch
    int magic
    uint32_t crc
    int attributes  # int16 on the wire, sign-extended
    int32_t last_offset_delta
    int64_t base_timestamp_ms
    int64_t max_timestamp_ms
    int64_t producer_id
    int16_t producer_epoch
    int32_t base_sequence
    int32_t record_count

cdef enum:  # what _read_record_head / _read_bytes_field found wrong
    _BAD_LENGTH_VARINT = -1
    _BAD_LENGTH = -2
    _BAD_TIMESTAMP_DELTA = -3
    _BAD_OFFSET_DELTA = -4
    _BAD_FIELD_VARINT = -1
    _BAD_FIELD_NEGATIVE = -2
    _BAD_FIELD_OVERRUN = -3

cdef struct _RecordHead:
    Py_ssize_t end  # end of the record
    int64_t length
    Py_ssize_t left_bytes  # bytes after the length varint (for messages)
    int64_t timestamp_delta
    int64_t offset_delta
