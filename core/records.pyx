# RecordBatch v2 (magic 2): the builder the accumulator appends into, and the decoder for verification and splitting.
# Rules: records are written straight into a pooled bytearray through a char pointer (length computed first); nothing
# per record goes through a Python-level call; compression is ONE compressor.compress() per batch; CRC32C is computed
# on the buffer in place (cyk_crc32c, declared in checksum.pyx which _core.pyx includes first).
#
# Wire schema (big-endian), header 61 bytes:
#   0 baseOffset int64 (0) | 8 batchLength int32 (bytes after this field) | 12 partitionLeaderEpoch int32 (-1)
#   16 magic int8 (2) | 17 crc uint32 (CRC32C of byte 21..end) | 21 attributes int16 (bits 0-2 codec, 3 timestamp
#   type, 4 transactional, 5 control) | 23 lastOffsetDelta int32 | 27 baseTimestamp int64 | 35 maxTimestamp int64
#   43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32 | 57 recordsCount int32 | 61 records...
# Record: length varint | attributes int8 (0) | timestampDelta varlong | offsetDelta varint | keyLength varint (-1 null)
#   | key | valueLength varint (-1 null) | value | headersCount varint | per header: keyLength varint, key utf8,
#   valueLength varint (-1 null), value. Varints are zigzag. Compression covers only the records section.

cimport cython
from cpython.buffer cimport (
    PyBUF_C_CONTIGUOUS,
    PyBUF_FORMAT,
    PyBUF_SIMPLE,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.tuple cimport PyTuple_Check, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport INT32_MAX, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

from cykafka.errors import CorruptRecordError


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size_bytes) except NULL
    object PyUnicode_DecodeUTF8(const char* data, Py_ssize_t size_bytes, const char* errors)
    bint PyUnicode_Check(object obj)


RECORD_BATCH_OVERHEAD_BYTES = _HEADER_BYTES


# ---- varints and fixed-width big-endian fields -------------------------------------------------------------------

cdef inline uint64_t _zigzag64(int64_t n) noexcept nogil:
    return (<uint64_t>n << 1) ^ <uint64_t>(n >> 63)


cdef inline int _uvarint_size(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline unsigned char* _put_uvarint(unsigned char* p, uint64_t v) noexcept nogil:
    while v >= 0x80:
        p[0] = <unsigned char>(v | 0x80)
        p += 1
        v >>= 7
    p[0] = <unsigned char>v
    return p + 1


cdef inline void _put_be16(unsigned char* p, uint16_t v) noexcept nogil:
    p[0] = <unsigned char>(v >> 8)
    p[1] = <unsigned char>v


cdef inline void _put_be32(unsigned char* p, uint32_t v) noexcept nogil:
    p[0] = <unsigned char>(v >> 24)
    p[1] = <unsigned char>(v >> 16)
    p[2] = <unsigned char>(v >> 8)
    p[3] = <unsigned char>v


cdef inline void _put_be64(unsigned char* p, uint64_t v) noexcept nogil:
    _put_be32(p, <uint32_t>(v >> 32))
    _put_be32(p + 4, <uint32_t>v)


cdef inline uint16_t _get_be16(const unsigned char* p) noexcept nogil:
    return (<uint16_t>p[0] << 8) | p[1]


cdef inline uint32_t _get_be32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline uint64_t _get_be64(const unsigned char* p) noexcept nogil:
    return (<uint64_t>_get_be32(p) << 32) | _get_be32(p + 4)


cdef inline Py_ssize_t _get_zigzag(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end, int max_bytes,
                                   int64_t* out) noexcept nogil:
    """Reads a zigzag varint of at most max_bytes (5 int32, 10 int64) from p[pos:end]; new pos, or -1 if malformed."""
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef int i
    cdef unsigned char b
    for i in range(max_bytes):
        if pos >= end:
            return -1
        b = p[pos]
        pos += 1
        raw |= <uint64_t>(b & 0x7F) << shift
        if not (b & 0x80):
            if max_bytes == 5:
                raw &= <uint64_t>0xFFFFFFFFu  # Java's readVarint keeps 32 bits
                out[0] = <int32_t>(<uint32_t>(raw >> 1) ^ (0 - <uint32_t>(raw & 1)))
            else:
                out[0] = <int64_t>((raw >> 1) ^ (0 - (raw & 1)))
            return pos
        shift += 7
    return -1


# ---- borrowing a record's bytes without copying -------------------------------------------------------------------


cdef inline void _parts_init(_Parts* parts) noexcept nogil:
    parts.key.owned = 0
    parts.value.owned = 0
    parts.header_count = 0
    parts.headers_acquired = 0
    parts.heap = NULL


cdef void _parts_release(_Parts* parts) noexcept:
    cdef Py_ssize_t i
    if parts.key.owned:
        PyBuffer_Release(&parts.key.view)
        parts.key.owned = 0
    if parts.value.owned:
        PyBuffer_Release(&parts.value.view)
        parts.value.owned = 0
    for i in range(parts.headers_acquired):
        if parts.header_values[i].owned:
            PyBuffer_Release(&parts.header_values[i].view)
    parts.headers_acquired = 0
    if parts.heap != NULL:
        PyMem_Free(parts.heap)
        parts.heap = NULL


cdef int _span_acquire(_Span* span, object obj, str field, Py_ssize_t index=-1) except -1:
    """Borrows a bytes-like obj: bytes, or any C-contiguous buffer of bytes (format B, b or c: a numpy array of
    wider items is refused, not written as raw memory). SerializationError names field (and index, when >= 0)."""
    if obj is None:
        span.ptr = NULL
        span.size_bytes = -1
        return 0
    if PyBytes_CheckExact(obj):
        span.ptr = <const unsigned char*>PyBytes_AS_STRING(obj)
        span.size_bytes = PyBytes_GET_SIZE(obj)
        return 0
    if not PyObject_CheckBuffer(obj):
        raise SerializationError(f"{_field_name(field, index)} must be bytes-like (bytes, bytearray, memoryview), "
                                 f"str or None, not {type(obj).__name__}")
    try:
        # an export also pins a bytearray's size until we are done
        PyObject_GetBuffer(obj, &span.view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
    except (BufferError, ValueError) as e:  # ValueError: a released memoryview
        raise SerializationError(f"{_field_name(field, index)} must be a C-contiguous bytes-like object: "
                                 f"{e}") from None
    if span.view.itemsize != 1 or not _is_byte_format(span.view.format):
        item_format = "B" if span.view.format == NULL else (<bytes>span.view.format).decode("ascii", "replace")
        item_size_bytes = span.view.itemsize
        PyBuffer_Release(&span.view)
        raise SerializationError(f"{_field_name(field, index)} must be a buffer of bytes (format B, b or c), not "
                                 f"{type(obj).__name__} of {item_size_bytes}-byte items '{item_format}'")
    span.owned = 1
    span.ptr = <const unsigned char*>span.view.buf
    span.size_bytes = span.view.len
    return 0


cdef inline bint _is_byte_format(const char* item_format) noexcept nogil:
    """A struct format of one byte: NULL (B), or B, b or c after an optional byte-order mark."""
    if item_format == NULL:
        return True
    if (item_format[0] == b"@" or item_format[0] == b"=" or item_format[0] == b"<" or item_format[0] == b">"
            or item_format[0] == b"!"):
        item_format += 1
    return (item_format[0] == b"B" or item_format[0] == b"b" or item_format[0] == b"c") and item_format[1] == 0


cdef str _field_name(str field, Py_ssize_t index):
    return field if index < 0 else f"{field}[{index}]"


cdef inline Py_ssize_t _bytes_field_size(Py_ssize_t size_bytes) noexcept nogil:
    if size_bytes < 0:
        return 1
    return _uvarint_size(_zigzag64(size_bytes)) + size_bytes


cdef object _headers_tuple(object headers):
    """None or a tuple snapshot (list pairs made tuples), so borrowed pointers stay valid while we write."""
    if headers is None:
        return None
    if type(headers) is list:
        if not headers:
            return None
        headers = tuple(headers)
    elif type(headers) is not tuple:
        if isinstance(headers, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"headers must be a list of (str, bytes-like or None) pairs, not {type(headers).__name__}")
        try:
            headers = tuple(headers)
        except TypeError:
            raise TypeError(
                f"headers must be a list of (str, bytes-like or None) pairs, not {type(headers).__name__}") from None
    if not headers:
        return None
    for item in headers:
        if type(item) is not tuple and isinstance(item, list):
            return tuple([tuple(h) if isinstance(h, list) else h for h in headers])
    return headers


cdef int _parts_acquire(_Parts* parts, object key, object value, object headers) except -1:
    """headers: None or the tuple from _headers_tuple. Call _parts_release afterwards, also on error."""
    _span_acquire(&parts.key, key, "key")
    _span_acquire(&parts.value, value, "value")
    return _parts_finish(parts, headers)


cdef int _parts_finish(_Parts* parts, object headers) except -1:
    """With parts.key and parts.value set: borrows the headers (None or a _headers_tuple) and sizes the record."""
    cdef Py_ssize_t i, n, size
    cdef Py_ssize_t key_len
    cdef const char* key_utf8
    size = _bytes_field_size(parts.key.size_bytes) + _bytes_field_size(parts.value.size_bytes)
    if headers is None:
        parts.fields_size_bytes = size + 1
        return 0
    n = PyTuple_GET_SIZE(headers)
    if n <= _INLINE_HEADERS:
        parts.header_keys = parts.inline_spans
        parts.header_values = parts.inline_spans + _INLINE_HEADERS
    else:
        parts.heap = <_Span*>PyMem_Malloc(2 * n * sizeof(_Span))
        if parts.heap == NULL:
            raise MemoryError()
        parts.header_keys = parts.heap
        parts.header_values = parts.heap + n
    parts.header_count = n
    size += _uvarint_size(_zigzag64(n))
    for i in range(n):
        item = <object>PyTuple_GET_ITEM(headers, i)
        if not PyTuple_Check(item) or PyTuple_GET_SIZE(item) != 2:
            raise TypeError(f"headers[{i}] must be a (str, bytes-like or None) pair, not {item!r:.80}")
        header_key = <object>PyTuple_GET_ITEM(item, 0)
        if not PyUnicode_Check(header_key):
            raise TypeError(f"headers[{i}] key must be str, not {type(header_key).__name__}")
        key_utf8 = PyUnicode_AsUTF8AndSize(header_key, &key_len)
        parts.header_keys[i].ptr = <const unsigned char*>key_utf8
        parts.header_keys[i].size_bytes = key_len
        parts.header_values[i].owned = 0
        parts.headers_acquired = i + 1
        _span_acquire(&parts.header_values[i], <object>PyTuple_GET_ITEM(item, 1), "header value")
        size += _bytes_field_size(key_len) + _bytes_field_size(parts.header_values[i].size_bytes)
    parts.fields_size_bytes = size
    return 0


cdef inline unsigned char* _put_bytes_field(unsigned char* p, const _Span* span) noexcept nogil:
    if span.size_bytes < 0:
        p[0] = 1  # zigzag(-1)
        return p + 1
    p = _put_uvarint(p, _zigzag64(span.size_bytes))
    if span.size_bytes:
        memcpy(p, span.ptr, span.size_bytes)
    return p + span.size_bytes


# ---- builder ------------------------------------------------------------------------------------------------------

@cython.final
@cython.no_gc  # holds a bytearray and a memoryview of it: no cycle can pass through it, so no GC work per batch
cdef class RecordBatchBuilder:
    """Appends records into a pooled bytearray after 61 reserved header bytes; close() writes the header.

    Room is judged like Java's MemoryRecordsBuilder: the first record always fits; later ones need
    write_limit_bytes >= estimated_size_bytes + the record's uncompressed size.
    """


    def __cinit__(self, *args, **kwargs):
        # safe defaults even if __init__ never runs (RecordBatchBuilder.__new__)
        self._adopt(bytearray(_HEADER_BYTES))
        self._pos = _HEADER_BYTES
        self._ratio_estimate = 1.0
        self._actual_ratio = 1.0
        self.base_timestamp_ms = -1
        self.max_timestamp_ms = -1
        self.buffer_is_original = True

    def __init__(self, bytearray buffer not None, int write_limit_bytes, int codec=0,
                 double compression_ratio_estimate=1.0, bint log_append_time=False):
        if not 0 <= codec <= _MAX_CODEC:
            raise ValueError(f"codec must be 0 (none), 1 (gzip), 2 (snappy), 3 (lz4) or 4 (zstd), not {codec}")
        if not compression_ratio_estimate > 0.0:
            raise ValueError(f"compression_ratio_estimate must be > 0, not {compression_ratio_estimate}")
        self._adopt(buffer)
        self.buffer_is_original = True
        self.write_limit_bytes = write_limit_bytes
        self.codec = codec
        self._ratio_estimate = <float>compression_ratio_estimate
        self.log_append_time = log_append_time
        self._pos = _HEADER_BYTES
        self._size_bytes = 0
        self._actual_ratio = 1.0
        self._view = None
        self.record_count = 0
        self.base_timestamp_ms = -1
        self.max_timestamp_ms = -1
        self.is_closed = False
        self._reserve(_HEADER_BYTES)

    cdef int _reserve(self, Py_ssize_t needed_bytes) except -1:
        """Makes the buffer at least needed_bytes long, moving into a bigger bytearray when it is not."""
        cdef Py_ssize_t capacity = PyByteArray_GET_SIZE(self._buffer)
        if needed_bytes <= capacity:
            return 0
        grown = PyByteArray_FromStringAndSize(NULL, max(needed_bytes, 2 * capacity))
        if self._pos:
            memcpy(PyByteArray_AS_STRING(grown), PyByteArray_AS_STRING(self._buffer), min(self._pos, capacity))
        self._adopt(grown)
        self.buffer_is_original = False
        return 0

    cdef inline void _adopt(self, bytearray buffer):
        self._buffer = buffer
        self._data = <unsigned char*>PyByteArray_AS_STRING(buffer)
        self._capacity = PyByteArray_GET_SIZE(buffer)

    cdef inline Py_ssize_t _estimated(self) noexcept nogil:
        if self.codec == 0:
            return self._pos
        # float math as Java's estimatedBytesWritten: records * ratio * COMPRESSION_RATE_ESTIMATION_FACTOR (1.05f)
        return _HEADER_BYTES + <Py_ssize_t>(<float>(self._pos - _HEADER_BYTES) * self._ratio_estimate * <float>1.05)

    cdef int _append(self, int64_t timestamp_ms, _Parts* parts, bint write) except -1:
        """1 appended (or would be, when not write), 0 no room."""
        cdef int64_t timestamp_delta
        cdef Py_ssize_t body_bytes, total_bytes
        if self.is_closed:
            raise RuntimeError("RecordBatchBuilder is closed for appends")
        total_bytes = self._record_bytes(timestamp_ms, parts, &timestamp_delta, &body_bytes)
        if self.record_count:
            if self.write_limit_bytes < self._estimated() + total_bytes:
                return 0
            if self._pos + total_bytes > INT32_MAX or self.record_count == INT32_MAX:
                return 0
        elif total_bytes > INT32_MAX - _HEADER_BYTES:
            raise ValueError(f"a record of {total_bytes} bytes exceeds the RecordBatch format's limit")
        if not write:
            return 1
        self._reserve(self._pos + total_bytes)
        self._write(timestamp_ms, timestamp_delta, body_bytes, total_bytes, parts)
        return 1

    cdef int _append_nogil(self, int64_t timestamp_ms, _Parts* parts) noexcept nogil:
        """_append into a batch that has records, without the GIL: 1 appended; 0 not (no room, closed, or the
        buffer would have to grow), and then _append, with the GIL, decides."""
        cdef int64_t timestamp_delta
        cdef Py_ssize_t body_bytes, total_bytes
        if self.is_closed or self.record_count == 0 or self.record_count == INT32_MAX:
            return 0
        total_bytes = self._record_bytes(timestamp_ms, parts, &timestamp_delta, &body_bytes)
        if (self.write_limit_bytes < self._estimated() + total_bytes or self._pos + total_bytes > self._capacity
                or self._pos + total_bytes > INT32_MAX):
            return 0
        self._write(timestamp_ms, timestamp_delta, body_bytes, total_bytes, parts)
        return 1

    cdef inline Py_ssize_t _record_bytes(self, int64_t timestamp_ms, _Parts* parts, int64_t* timestamp_delta,
                                         Py_ssize_t* body_bytes) noexcept nogil:
        """The record's size in this batch (length prefix included); its timestamp delta and body size."""
        timestamp_delta[0] = (<int64_t>(<uint64_t>timestamp_ms - <uint64_t>self.base_timestamp_ms)
                              if self.record_count else 0)
        body_bytes[0] = (1 + _uvarint_size(_zigzag64(timestamp_delta[0])) + _uvarint_size(_zigzag64(self.record_count))
                         + parts.fields_size_bytes)
        return _uvarint_size(_zigzag64(body_bytes[0])) + body_bytes[0]

    cdef inline void _write(self, int64_t timestamp_ms, int64_t timestamp_delta, Py_ssize_t body_bytes,
                            Py_ssize_t total_bytes, _Parts* parts) noexcept nogil:
        cdef Py_ssize_t i
        cdef unsigned char* p = self._data + self._pos
        p = _put_uvarint(p, _zigzag64(body_bytes))
        p[0] = 0  # record attributes
        p = _put_uvarint(p + 1, _zigzag64(timestamp_delta))
        p = _put_uvarint(p, _zigzag64(self.record_count))
        p = _put_bytes_field(p, &parts.key)
        p = _put_bytes_field(p, &parts.value)
        p = _put_uvarint(p, _zigzag64(parts.header_count))
        for i in range(parts.header_count):
            p = _put_bytes_field(p, &parts.header_keys[i])
            p = _put_bytes_field(p, &parts.header_values[i])
        self._pos += total_bytes
        if self.record_count == 0:
            self.base_timestamp_ms = timestamp_ms
            self.max_timestamp_ms = timestamp_ms
        elif timestamp_ms > self.max_timestamp_ms:
            self.max_timestamp_ms = timestamp_ms
        self.record_count += 1

    cpdef bint try_append(self, int64_t timestamp_ms, object key, object value, object headers):
        """Appends one record; False (nothing appended) when it does not fit. Raises after close()."""
        cdef _Parts parts
        if self.is_closed:
            raise RuntimeError("RecordBatchBuilder is closed for appends")
        if headers is not None:
            headers = _headers_tuple(headers)
        _parts_init(&parts)
        try:
            _parts_acquire(&parts, key, value, headers)
            return self._append(timestamp_ms, &parts, True)
        finally:
            _parts_release(&parts)

    cpdef bint has_room_for(self, int64_t timestamp_ms, object key, object value, object headers):
        """Java's hasRoomFor: False when full or closed; True for the first record."""
        cdef _Parts parts
        if self.is_closed:
            return False
        if headers is not None:
            headers = _headers_tuple(headers)
        _parts_init(&parts)
        try:
            _parts_acquire(&parts, key, value, headers)
            return self._append(timestamp_ms, &parts, False)
        finally:
            _parts_release(&parts)

    @property
    def estimated_size_bytes(self):
        """The batch size as estimated while open (compressed: records * ratio * 1.05); the real size once closed."""
        if self.is_closed:
            return self._size_bytes
        return self._estimated()

    @property
    def uncompressed_size_bytes(self):
        return self._pos

    cdef inline bint _full(self) noexcept nogil:
        return self.is_closed or (self.record_count > 0 and self.write_limit_bytes <= self._estimated())

    @property
    def is_full(self):
        return self._full()

    @property
    def actual_compression_ratio(self):
        """Compressed records bytes / uncompressed records bytes, after close; 1.0 for codec none."""
        return self._actual_ratio

    @property
    def buffer(self):
        return self._buffer

    cpdef object close(self, object compressor, int64_t producer_id=-1, int16_t producer_epoch=-1,
                       int32_t base_sequence=-1, bint is_transactional=False):
        """Writes the header, compresses the records section, computes the CRC; a memoryview of the batch."""
        cdef Py_ssize_t records_bytes = self._pos - _HEADER_BYTES
        cdef Py_ssize_t compressed_bytes
        cdef Py_buffer out
        cdef unsigned char* p
        cdef int16_t attributes = self.codec
        if self.is_closed:
            return self._view
        if self.codec != 0:
            if compressor is None:
                raise ValueError(f"codec {self.codec} needs a compressor")
            if getattr(compressor, "codec_id", self.codec) != self.codec:
                raise ValueError(f"compressor codec_id {compressor.codec_id} does not match codec {self.codec}")
            section = memoryview(self._buffer)[_HEADER_BYTES:self._pos]
            try:
                compressed = compressor.compress(section)
            finally:
                section.release()
            PyObject_GetBuffer(compressed, &out, PyBUF_SIMPLE)
            try:
                compressed_bytes = out.len
                if compressed_bytes > INT32_MAX - _HEADER_BYTES:
                    raise ValueError(f"compressed records of {compressed_bytes} bytes exceed the format's limit")
                self._reserve(_HEADER_BYTES + compressed_bytes)
                memcpy(PyByteArray_AS_STRING(self._buffer) + _HEADER_BYTES, out.buf, compressed_bytes)
            finally:
                PyBuffer_Release(&out)
            self._actual_ratio = (<double>compressed_bytes / records_bytes) if records_bytes else 1.0
            self._size_bytes = _HEADER_BYTES + compressed_bytes
        else:
            self._size_bytes = self._pos
        if self.log_append_time:
            attributes |= _ATTR_LOG_APPEND_TIME
        if is_transactional:
            attributes |= _ATTR_TRANSACTIONAL
        p = <unsigned char*>PyByteArray_AS_STRING(self._buffer)
        _put_be64(p, 0)
        _put_be32(p + 8, <uint32_t>(self._size_bytes - _LOG_OVERHEAD_BYTES))
        _put_be32(p + 12, <uint32_t>-1)  # partitionLeaderEpoch
        p[16] = 2
        _put_be16(p + 21, <uint16_t>attributes)
        _put_be32(p + 23, <uint32_t>(self.record_count - 1))  # lastOffsetDelta
        _put_be64(p + 27, <uint64_t>self.base_timestamp_ms)
        _put_be64(p + 35, <uint64_t>self.max_timestamp_ms)
        _put_be64(p + 43, <uint64_t>producer_id)
        _put_be16(p + 51, <uint16_t>producer_epoch)
        _put_be32(p + 53, <uint32_t>base_sequence)
        _put_be32(p + 57, <uint32_t>self.record_count)
        _put_be32(p + 17, cyk_crc32c(0, p + _CRC_START, self._size_bytes - _CRC_START, -1))
        self.is_closed = True
        self._view = memoryview(self._buffer)[:self._size_bytes]
        return self._view


def estimate_size_upper_bound(object key, object value, object headers):
    """Java's AbstractRecords.estimateSizeInBytesUpperBound for magic 2: 61 + the record's upper-bound size."""
    cdef _Parts parts
    headers = _headers_tuple(headers)
    _parts_init(&parts)
    try:
        _parts_acquire(&parts, key, value, headers)
        return _HEADER_BYTES + _MAX_RECORD_OVERHEAD_BYTES + parts.fields_size_bytes
    finally:
        _parts_release(&parts)


cdef inline Py_ssize_t _batch_size(const unsigned char* p, Py_ssize_t available_bytes, bint check_crc) noexcept nogil:
    """Validates the batch header at p (and its CRC32C when check_crc); the batch's total size or a _BATCH_* code."""
    cdef int32_t batch_length
    if available_bytes < _HEADER_BYTES:
        return _BATCH_SHORT
    batch_length = <int32_t>_get_be32(p + 8)
    if batch_length < _HEADER_BYTES - _LOG_OVERHEAD_BYTES:
        return _BATCH_LENGTH_SMALL
    if batch_length > available_bytes - _LOG_OVERHEAD_BYTES:
        return _BATCH_LENGTH_OVERRUN
    if p[16] != 2:
        return _BATCH_MAGIC
    if check_crc and cyk_crc32c(0, p + _CRC_START, batch_length + _LOG_OVERHEAD_BYTES - _CRC_START, -1) != \
            _get_be32(p + 17):
        return _BATCH_CRC
    return batch_length + _LOG_OVERHEAD_BYTES


cdef str _batch_problem(Py_ssize_t code, const unsigned char* p, Py_ssize_t available_bytes):
    """The message for a _BATCH_* code of the batch at p."""
    cdef int32_t batch_length
    if code == _BATCH_SHORT:
        return f"record batch of {available_bytes} bytes is shorter than its 61-byte header"
    batch_length = <int32_t>_get_be32(p + 8)
    if code == _BATCH_LENGTH_SMALL:
        return f"record batch length {batch_length} is smaller than the header"
    if code == _BATCH_LENGTH_OVERRUN:
        return f"record batch length {batch_length} exceeds the {available_bytes} bytes given"
    if code == _BATCH_MAGIC:
        return f"record batch magic {p[16]} is not 2"
    crc = cyk_crc32c(0, p + _CRC_START, batch_length + _LOG_OVERHEAD_BYTES - _CRC_START, -1)
    return f"record batch CRC32C {_get_be32(p + 17):#010x} does not match {crc:#010x}"


cdef Py_ssize_t _checked_batch_length(const unsigned char* p, Py_ssize_t available_bytes) except -1:
    """Validates a whole, uncorrupted batch header at p; its total size."""
    cdef Py_ssize_t size_bytes = _batch_size(p, available_bytes, True)
    if size_bytes < 0:
        raise CorruptRecordError(_batch_problem(size_bytes, p, available_bytes))
    return size_bytes


def rewrite_producer_state(object batch, int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                           bint is_transactional):
    """Rewrites producer id/epoch/base sequence and the transactional bit of a closed batch in place; new CRC."""
    cdef unsigned char[::1] view
    cdef unsigned char* p
    cdef Py_ssize_t size_bytes
    cdef uint16_t attributes
    try:
        view = batch
    except (TypeError, BufferError, ValueError) as e:
        raise TypeError(f"batch must be a writable C-contiguous buffer: {e}") from None
    if view.shape[0] == 0:
        raise CorruptRecordError("record batch is empty")
    p = &view[0]
    size_bytes = _checked_batch_length(p, view.shape[0])
    attributes = _get_be16(p + 21)
    if is_transactional:
        attributes |= _ATTR_TRANSACTIONAL
    else:
        attributes &= ~_ATTR_TRANSACTIONAL
    _put_be16(p + 21, attributes)
    _put_be64(p + 43, <uint64_t>producer_id)
    _put_be16(p + 51, <uint16_t>producer_epoch)
    _put_be32(p + 53, <uint32_t>base_sequence)
    _put_be32(p + 17, cyk_crc32c(0, p + _CRC_START, size_bytes - _CRC_START, -1))


# ---- decoder ------------------------------------------------------------------------------------------------------

@cython.final
cdef class DecodedRecord:
    """One record of a decoded batch; offset and timestamp_ms are absolute."""


    def __repr__(self):
        return (f"DecodedRecord(offset={self.offset}, timestamp_ms={self.timestamp_ms}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")


@cython.final
cdef class DecodedBatch:
    """One decoded RecordBatch v2: every header field, and its records."""


    def __repr__(self):
        return (f"DecodedBatch(base_offset={self.base_offset}, codec={self.codec}, records={len(self.records)}, "
                f"producer_id={self.producer_id}, producer_epoch={self.producer_epoch}, "
                f"base_sequence={self.base_sequence}, is_transactional={self.is_transactional})")


cdef inline object _corrupt(str what, int64_t offset):
    return CorruptRecordError(f"{what} (record at offset {offset})")


# ---- shared readers (decode_batches here, PartitionFetch in fetch.pyx): no objects, no GIL -------------------------


cdef inline void _read_batch_header(const unsigned char* p, _BatchHeader* h) noexcept nogil:
    """The 61 header bytes at p (the caller checked they are there)."""
    h.base_offset = <int64_t>_get_be64(p)
    h.batch_length = <int32_t>_get_be32(p + 8)
    h.partition_leader_epoch = <int32_t>_get_be32(p + 12)
    h.magic = p[16]
    h.crc = _get_be32(p + 17)
    h.attributes = <int16_t>_get_be16(p + 21)
    h.last_offset_delta = <int32_t>_get_be32(p + 23)
    h.base_timestamp_ms = <int64_t>_get_be64(p + 27)
    h.max_timestamp_ms = <int64_t>_get_be64(p + 35)
    h.producer_id = <int64_t>_get_be64(p + 43)
    h.producer_epoch = <int16_t>_get_be16(p + 51)
    h.base_sequence = <int32_t>_get_be32(p + 53)
    h.record_count = <int32_t>_get_be32(p + 57)


cdef inline Py_ssize_t _read_record_head(const unsigned char* p, Py_ssize_t pos, Py_ssize_t size_bytes,
                                         _RecordHead* r) noexcept nogil:
    """Length, attributes, timestamp and offset deltas of the record at p[pos:size_bytes]; the position of its key
    length, or a _BAD_* code."""
    pos = _get_zigzag(p, pos, size_bytes, 5, &r.length)
    if pos < 0:
        return _BAD_LENGTH_VARINT
    r.left_bytes = size_bytes - pos
    if r.length < 6 or r.length > size_bytes - pos:
        return _BAD_LENGTH
    r.end = pos + r.length
    pos += 1  # attributes, unused
    pos = _get_zigzag(p, pos, r.end, 10, &r.timestamp_delta)
    if pos < 0:
        return _BAD_TIMESTAMP_DELTA
    pos = _get_zigzag(p, pos, r.end, 5, &r.offset_delta)
    if pos < 0:
        return _BAD_OFFSET_DELTA
    return pos


cdef inline Py_ssize_t _read_bytes_field(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end,
                                         const unsigned char** data, int64_t* size_bytes) noexcept nogil:
    """A length-prefixed field of p[pos:end]: data[0] and size_bytes[0] (-1: null); the position after it, or a
    _BAD_FIELD_* code (then data[0] - p is where the field's bytes would start)."""
    cdef Py_ssize_t at = _get_zigzag(p, pos, end, 5, size_bytes)
    if at < 0:
        return _BAD_FIELD_VARINT
    data[0] = p + at
    if size_bytes[0] < 0:
        if size_bytes[0] != -1:
            return _BAD_FIELD_NEGATIVE
        return at
    if size_bytes[0] > end - at:
        return _BAD_FIELD_OVERRUN
    return at + size_bytes[0]


cdef object _field_problem(Py_ssize_t code, str what, int64_t size_bytes, Py_ssize_t left_bytes, int64_t offset):
    if code == _BAD_FIELD_VARINT:
        return _corrupt(f"malformed {what} length varint", offset)
    if code == _BAD_FIELD_NEGATIVE:
        return _corrupt(f"invalid {what} length {size_bytes}", offset)
    return _corrupt(f"{what} length {size_bytes} exceeds the record's remaining {left_bytes} bytes", offset)


cdef object _record_problem(Py_ssize_t code, int32_t index, _RecordHead* r, int64_t offset):
    if code == _BAD_LENGTH_VARINT:
        return _corrupt(f"malformed length varint of record {index}", offset)
    if code == _BAD_LENGTH:
        return _corrupt(f"record {index} length {r.length} is invalid for the {r.left_bytes} bytes left", offset)
    if code == _BAD_TIMESTAMP_DELTA:
        return _corrupt(f"malformed timestamp delta of record {index}", offset)
    return _corrupt(f"malformed offset delta of record {index}", offset)


cdef object _decode_bytes_field(const unsigned char* p, Py_ssize_t* pos, Py_ssize_t end, str what, int64_t offset):
    """bytes or None (length -1) from p[pos[0]:end]; advances pos[0]."""
    cdef const unsigned char* data = p
    cdef int64_t size_bytes = 0  # set by _read_bytes_field on every path it returns by; gcc cannot see that
    cdef Py_ssize_t at = _read_bytes_field(p, pos[0], end, &data, &size_bytes)
    if at < 0:
        raise _field_problem(at, what, size_bytes, end - (data - p), offset)
    pos[0] = at
    if size_bytes < 0:
        return None
    return PyBytes_FromStringAndSize(<const char*>data, size_bytes)


cdef list _decode_headers(const unsigned char* p, Py_ssize_t* pos, Py_ssize_t end, int32_t index, int64_t offset):
    """A record's headers from p[pos[0]:end] as [(str, bytes | None)]; advances pos[0]."""
    cdef int64_t header_count, key_len, h
    cdef Py_ssize_t at = _get_zigzag(p, pos[0], end, 5, &header_count)
    cdef list headers = []
    if at < 0 or header_count < 0 or header_count > (end - at) // 2:
        raise _corrupt(f"invalid header count of record {index}", offset)
    for h in range(header_count):
        at = _get_zigzag(p, at, end, 5, &key_len)
        if at < 0 or key_len < 0 or key_len > end - at:
            raise _corrupt(f"invalid header key length of record {index}", offset)
        try:
            header_key = PyUnicode_DecodeUTF8(<const char*>p + at, key_len, NULL)
        except UnicodeDecodeError:
            raise _corrupt(f"header key of record {index} is not UTF-8", offset) from None
        at += key_len
        headers.append((header_key, _decode_bytes_field(p, &at, end, "header value", offset)))
    pos[0] = at
    return headers


cdef int _decode_records(DecodedBatch batch, const unsigned char* p, Py_ssize_t size_bytes, int32_t count) except -1:
    cdef Py_ssize_t pos = 0
    cdef _RecordHead r
    cdef int32_t i
    cdef int64_t offset = batch.base_offset
    cdef bint log_append = batch.timestamp_type == 1
    cdef DecodedRecord record
    cdef list records = batch.records
    for i in range(count):
        pos = _read_record_head(p, pos, size_bytes, &r)
        if pos < 0:
            raise _record_problem(pos, i, &r, offset)
        offset = <int64_t>(<uint64_t>batch.base_offset + <uint64_t>r.offset_delta)
        record = DecodedRecord.__new__(DecodedRecord)
        record.offset = offset
        if log_append:
            record.timestamp_ms = batch.max_timestamp_ms
        else:
            record.timestamp_ms = <int64_t>(<uint64_t>batch.base_timestamp_ms + <uint64_t>r.timestamp_delta)
        record.key = _decode_bytes_field(p, &pos, r.end, "key", offset)
        record.value = _decode_bytes_field(p, &pos, r.end, "value", offset)
        record.headers = _decode_headers(p, &pos, r.end, i, offset)
        if pos != r.end:
            raise _corrupt(f"record {i} declares {r.length} bytes but its fields take {r.length - (r.end - pos)}",
                           offset)
        records.append(record)
    if pos != size_bytes:
        raise CorruptRecordError(f"{size_bytes - pos} bytes left after the {count} records of the batch at offset "
                                 f"{batch.base_offset}")
    return 0


def decode_batches(object data, object decompress=None, *, bint allow_partial=False):
    """Parses concatenated RecordBatch v2 batches; a list of DecodedBatch.

    decompress(codec_id, bytes) -> bytes-like is called once per compressed batch. Every length, varint and CRC is
    checked; anything malformed raises CorruptRecordError. A trailing partial batch is skipped only when
    allow_partial (as Kafka consumers do with fetch responses cut at max.partition.fetch.bytes).
    """
    cdef const unsigned char[::1] view = data
    cdef const unsigned char[::1] section
    cdef const unsigned char* p
    cdef Py_ssize_t pos = 0, n = view.shape[0], size_bytes, remaining
    cdef int32_t batch_length, count
    cdef DecodedBatch batch
    cdef _BatchHeader header
    batches = []
    while pos < n:
        p = &view[pos]
        remaining = n - pos
        if remaining < _LOG_OVERHEAD_BYTES:
            if allow_partial:
                break
            raise CorruptRecordError(f"{remaining} trailing bytes are too few for a record batch at byte {pos}")
        batch_length = <int32_t>_get_be32(p + 8)
        if batch_length < _HEADER_BYTES - _LOG_OVERHEAD_BYTES:
            raise CorruptRecordError(f"record batch length {batch_length} at byte {pos} is smaller than the header")
        if batch_length > remaining - _LOG_OVERHEAD_BYTES:
            if allow_partial:
                break
            raise CorruptRecordError(
                f"record batch at byte {pos} declares {batch_length} bytes but only {remaining - 12} follow")
        size_bytes = _checked_batch_length(p, remaining)
        _read_batch_header(p, &header)
        batch = DecodedBatch.__new__(DecodedBatch)
        batch.base_offset = header.base_offset
        batch.batch_length = batch_length
        batch.partition_leader_epoch = header.partition_leader_epoch
        batch.magic = header.magic
        batch.crc = header.crc
        batch.attributes = header.attributes
        batch.codec = batch.attributes & _ATTR_CODEC_MASK
        batch.timestamp_type = 1 if batch.attributes & _ATTR_LOG_APPEND_TIME else 0
        batch.is_transactional = (batch.attributes & _ATTR_TRANSACTIONAL) != 0
        batch.is_control = (batch.attributes & _ATTR_CONTROL) != 0
        batch.last_offset_delta = header.last_offset_delta
        batch.base_timestamp_ms = header.base_timestamp_ms
        batch.max_timestamp_ms = header.max_timestamp_ms
        batch.producer_id = header.producer_id
        batch.producer_epoch = header.producer_epoch
        batch.base_sequence = header.base_sequence
        count = header.record_count
        batch.records = []
        if count < 0:
            raise CorruptRecordError(f"record batch at byte {pos} has a negative record count {count}")
        if batch.codec > _MAX_CODEC:
            raise CorruptRecordError(f"record batch at byte {pos} has unknown codec {batch.codec}")
        if batch.codec == 0:
            if count > (size_bytes - _HEADER_BYTES) // 7:
                raise CorruptRecordError(f"record batch at byte {pos} claims {count} records in too few bytes")
            _decode_records(batch, p + _HEADER_BYTES, size_bytes - _HEADER_BYTES, count)
        else:
            if decompress is None:
                raise ValueError(f"record batch at byte {pos} is compressed (codec {batch.codec}); pass decompress")
            compressed = PyBytes_FromStringAndSize(<const char*>p + _HEADER_BYTES, size_bytes - _HEADER_BYTES)
            try:
                plain = decompress(batch.codec, compressed)
            except CorruptRecordError:
                raise
            except Exception as e:
                raise CorruptRecordError(
                    f"record batch at byte {pos} does not decompress (codec {batch.codec}): {e!r}") from e
            section = plain
            if section.shape[0] == 0:
                if count:
                    raise CorruptRecordError(f"record batch at byte {pos} decompressed to no bytes")
            else:
                _decode_records(batch, &section[0], section.shape[0], count)
            p = &view[pos]
        batches.append(batch)
        pos += size_bytes
    return batches
