# ArrowBatchBuilder: records as Arrow columns, filled in C (PartitionFetch.arrow_into, fetch.pyx, appends rows).
# Rules: the columns are the layout COLUMNS names, in that order (Spark's Kafka source columns: key, value, topic,
# partition, offset, timestamp in microseconds, timestampType, and headers as a list of (key string, value binary)
# structs, null for a record without headers, as Spark gives); their Arrow schema is passed in, never spelled here
# (cykafka/arrow_schema.py spells it once, for the Consumer's poll_batch and the Spark data source), and finish()
# builds each column with the schema's own type. The builder fills plain malloc'd buffers while the GIL is released;
# finish() hands them to pyarrow without a copy. No I/O, no clock; pyarrow is imported by finish() only.

from importlib import import_module

COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")  # then "headers", optional

cdef extern from "stdlib.h" nogil:
    void* realloc(void* ptr, size_t size)
    void free(void* ptr)


cdef extern from "Python.h":
    int PyBuffer_FillInfo(Py_buffer* view, object exporter, void* buf, Py_ssize_t size_bytes, int readonly,
                          int flags) except -1


cdef int _buf_grow(_Buf* b, Py_ssize_t needed_bytes) noexcept nogil:
    """0, or -1 when out of memory (b unchanged)."""
    cdef Py_ssize_t capacity = b.capacity * 2
    cdef unsigned char* grown
    if capacity < needed_bytes:
        capacity = needed_bytes
    if capacity < 256:
        capacity = 256
    grown = <unsigned char*>realloc(b.data, capacity)
    if grown == NULL:
        return -1
    b.data = grown
    b.capacity = capacity
    return 0


cdef inline int _buf_reserve(_Buf* b, Py_ssize_t extra_bytes) noexcept nogil:
    if b.size + extra_bytes <= b.capacity:
        return 0
    return _buf_grow(b, b.size + extra_bytes)


cdef inline void _put_i32(_Buf* b, int32_t v) noexcept nogil:
    (<int32_t*>(b.data + b.size))[0] = v
    b.size += 4


cdef inline void _put_i64(_Buf* b, int64_t v) noexcept nogil:
    (<int64_t*>(b.data + b.size))[0] = v
    b.size += 8


cdef inline void _put_bit(_Buf* bitmap, Py_ssize_t row, bint valid) noexcept nogil:
    """Row's validity bit (room for it reserved: one byte per 8 rows)."""
    if row & 7 == 0:
        bitmap.data[bitmap.size] = 0
        bitmap.size += 1
    if valid:
        bitmap.data[row >> 3] |= <unsigned char>(1 << (row & 7))


cdef inline void _put_span(_Buf* offsets, _Buf* data, const unsigned char* p, Py_ssize_t size_bytes) noexcept nogil:
    """Appends p[:size_bytes] (room reserved) and its end offset."""
    if size_bytes > 0:
        memcpy(data.data + data.size, p, size_bytes)
        data.size += size_bytes
    _put_i32(offsets, <int32_t>data.size)


cdef bint _utf8_valid(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """Well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF), as Arrow strings must be."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c
    cdef int follow, k
    cdef uint32_t cp
    while i < n:
        c = p[i]
        if c < 0x80:
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            follow = 1
            cp = c & 0x1F
        elif 0xE0 <= c <= 0xEF:
            follow = 2
            cp = c & 0x0F
        elif 0xF0 <= c <= 0xF4:
            follow = 3
            cp = c & 0x07
        else:
            return False
        if i + follow >= n:
            return False
        for k in range(1, follow + 1):
            if p[i + k] & 0xC0 != 0x80:
                return False
            cp = (cp << 6) | (p[i + k] & 0x3F)
        if (follow == 2 and (cp < 0x800 or 0xD800 <= cp <= 0xDFFF)) or (follow == 3 and not 0x10000 <= cp <= 0x10FFFF):
            return False
        i += follow + 1
    return True


# the widest timestamp (ms) Arrow's timestamp[us] column holds: INT64_MAX // 1000 (a year beyond 292,000)
cdef int64_t _ARROW_MAX_TIMESTAMP_MS = 9223372036854775


cdef int _columns_start(_Columns* c) noexcept nogil:
    """Empty columns (each offsets buffer holds its leading 0); -1 when out of memory."""
    cdef _Buf* offsets[6]
    cdef int i
    offsets[0], offsets[1], offsets[2] = &c.b[_KEY_OFFSETS], &c.b[_VALUE_OFFSETS], &c.b[_TOPIC_OFFSETS]
    offsets[3], offsets[4], offsets[5] = &c.b[_HEADERS_OFFSETS], &c.b[_HEADER_KEY_OFFSETS], &c.b[_HEADER_VALUE_OFFSETS]
    for i in range(6):
        if _buf_reserve(offsets[i], 4) < 0:
            return -1
        _put_i32(offsets[i], 0)
    return 0


cdef inline int _reserve_rows(_Columns* c, Py_ssize_t rows, bint include_headers) noexcept nogil:
    """Room for `rows` more rows in every fixed-width column and bitmap."""
    cdef Py_ssize_t bitmap_bytes = rows // 8 + 1
    if (_buf_reserve(&c.b[_KEY_VALID], bitmap_bytes) or _buf_reserve(&c.b[_VALUE_VALID], bitmap_bytes)
            or _buf_reserve(&c.b[_KEY_OFFSETS], 4 * rows) or _buf_reserve(&c.b[_VALUE_OFFSETS], 4 * rows)
            or _buf_reserve(&c.b[_TOPIC_OFFSETS], 4 * rows) or _buf_reserve(&c.b[_PARTITION], 4 * rows)
            or _buf_reserve(&c.b[_OFFSET], 8 * rows) or _buf_reserve(&c.b[_TIMESTAMP], 8 * rows)
            or _buf_reserve(&c.b[_TIMESTAMP_TYPE], 4 * rows)):
        return -1
    if include_headers and (_buf_reserve(&c.b[_HEADERS_VALID], bitmap_bytes)
                            or _buf_reserve(&c.b[_HEADERS_OFFSETS], 4 * rows)):
        return -1
    return 0


cdef int _append_headers(_Columns* c, const unsigned char* p, Py_ssize_t pos, Py_ssize_t end,
                         int64_t header_count) noexcept nogil:
    """A record's headers section at p[pos:end] (walked by _skip_headers already) into the header columns."""
    cdef int64_t i
    cdef int64_t size_bytes = 0  # set by every _get_zigzag / _read_bytes_field below (gcc could not tell)
    cdef const unsigned char* data = p
    cdef Py_ssize_t at = _get_zigzag(p, pos, end, 5, &size_bytes)  # the count, known
    cdef Py_ssize_t scan = at
    for i in range(header_count):  # keys are UTF-8: checked before anything is written
        scan = _get_zigzag(p, scan, end, 5, &size_bytes)
        if not _utf8_valid(p + scan, size_bytes):
            return _ROW_BAD_HEADER_KEY
        scan = _read_bytes_field(p, scan + size_bytes, end, &data, &size_bytes)
    if (_buf_reserve(&c.b[_HEADER_KEY_OFFSETS], 4 * header_count) or _buf_reserve(&c.b[_HEADER_VALUE_OFFSETS], 4 * header_count)
            or _buf_reserve(&c.b[_HEADER_VALUE_VALID], header_count // 8 + 1)
            or _buf_reserve(&c.b[_HEADER_KEY_DATA], end - pos) or _buf_reserve(&c.b[_HEADER_VALUE_DATA], end - pos)):
        return _ROW_NO_MEMORY
    for i in range(header_count):
        at = _get_zigzag(p, at, end, 5, &size_bytes)
        _put_span(&c.b[_HEADER_KEY_OFFSETS], &c.b[_HEADER_KEY_DATA], p + at, size_bytes)
        at = _read_bytes_field(p, at + size_bytes, end, &data, &size_bytes)
        _put_bit(&c.b[_HEADER_VALUE_VALID], c.header_entries, size_bytes >= 0)
        if size_bytes < 0:
            c.header_value_nulls += 1
            size_bytes = 0
        _put_span(&c.b[_HEADER_VALUE_OFFSETS], &c.b[_HEADER_VALUE_DATA], data, size_bytes)
        c.header_entries += 1
    return _ROW_OK


cdef void _columns_free(_Columns* c) noexcept nogil:
    cdef _Buf* bufs = &c.b[_KEY_VALID]
    cdef int i
    for i in range(19):  # the _Buf members, in declaration order
        free(bufs[i].data)
        bufs[i].data = NULL
        bufs[i].size = 0
        bufs[i].capacity = 0
    c.rows = c.key_nulls = c.value_nulls = c.headers_nulls = c.header_entries = c.header_value_nulls = 0


@cython.final
@cython.no_gc
cdef class _ArrowMemory:
    """A malloc'd buffer handed to pyarrow (pa.py_buffer keeps this alive; freed with it)."""


    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.data, self.size_bytes, 1, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass

    def __dealloc__(self):
        free(self.data)


@cython.final
cdef class ArrowBatchBuilder:
    """ArrowBatchBuilder(schema)
    --

    Collects records from PartitionFetch.arrow_into() as Arrow columns; finish() makes the pyarrow.RecordBatch of the
    schema passed in and empties the builder. The schema's columns are COLUMNS, in that order, with a "headers"
    column last or none (then header keys are not even read); cykafka.arrow_schema.kafka_source_schema() is Spark's
    Kafka source schema."""


    def __cinit__(self, *args, **kwargs):
        if _columns_start(&self.c) < 0:
            raise MemoryError()

    def __init__(self, schema not None):
        names = tuple(getattr(schema, "names", ()))
        if names not in (COLUMNS, COLUMNS + ("headers",)):
            raise InvalidArgumentError(f"ArrowBatchBuilder: schema must be a pyarrow schema of the columns "
                                       f"{', '.join(COLUMNS)}[, headers] in that order (kafka_source_schema()), got "
                                       f"{names or type(schema).__name__}")
        self.schema = schema
        self.include_headers = len(names) == len(COLUMNS) + 1

    def __dealloc__(self):
        _columns_free(&self.c)

    def __len__(self):
        return self.c.rows

    def __repr__(self):
        return f"ArrowBatchBuilder(rows={self.c.rows}, include_headers={self.include_headers})"

    cdef object _take(self, object pa, _Buf* b):
        """b's memory as a pyarrow Buffer, without a copy; b is left empty."""
        if b.data == NULL:  # never written: pyarrow wants an address even for no bytes
            return pa.py_buffer(b"")
        memory = _ArrowMemory.__new__(_ArrowMemory)
        (<_ArrowMemory>memory).data = b.data
        (<_ArrowMemory>memory).size_bytes = b.size
        b.data = NULL
        b.size = b.capacity = 0
        return pa.py_buffer(memory)

    cdef object _validity(self, object pa, _Buf* b, Py_ssize_t nulls):
        return self._take(pa, b) if nulls else None

    def finish(self):
        """The collected rows as a pyarrow.RecordBatch of the builder's schema (zero rows when empty); the builder
        starts over."""
        try:
            pa = import_module("pyarrow")  # importlib's rules (a None in sys.modules is missing), not Cython's
        except ImportError:
            raise MissingDependencyError(
                "ArrowBatchBuilder.finish() needs pyarrow: pip install 'cykafka[spark]'") from None
        cdef _Columns* c = &self.c
        if self._busy:
            raise KafkaError("the ArrowBatchBuilder is being filled by another thread: finish() it after arrow_into")
        cdef Py_ssize_t n = c.rows
        schema = self.schema
        types = [f.type for f in schema]
        columns = [
            pa.Array.from_buffers(types[0], n, [self._validity(pa, &c.b[_KEY_VALID], c.key_nulls),
                                                self._take(pa, &c.b[_KEY_OFFSETS]), self._take(pa, &c.b[_KEY_DATA])],
                                  c.key_nulls),
            pa.Array.from_buffers(types[1], n, [self._validity(pa, &c.b[_VALUE_VALID], c.value_nulls),
                                                self._take(pa, &c.b[_VALUE_OFFSETS]), self._take(pa, &c.b[_VALUE_DATA])],
                                  c.value_nulls),
            pa.Array.from_buffers(types[2], n, [None, self._take(pa, &c.b[_TOPIC_OFFSETS]),
                                                self._take(pa, &c.b[_TOPIC_DATA])]),
            pa.Array.from_buffers(types[3], n, [None, self._take(pa, &c.b[_PARTITION])]),
            pa.Array.from_buffers(types[4], n, [None, self._take(pa, &c.b[_OFFSET])]),
            pa.Array.from_buffers(types[5], n, [None, self._take(pa, &c.b[_TIMESTAMP])]),
            pa.Array.from_buffers(types[6], n, [None, self._take(pa, &c.b[_TIMESTAMP_TYPE])]),
        ]
        if self.include_headers:
            m = c.header_entries
            entry_fields = list(types[7].value_type)
            entries = pa.StructArray.from_arrays(
                [pa.Array.from_buffers(entry_fields[0].type, m, [None, self._take(pa, &c.b[_HEADER_KEY_OFFSETS]),
                                                                 self._take(pa, &c.b[_HEADER_KEY_DATA])]),
                 pa.Array.from_buffers(entry_fields[1].type, m, [
                     self._validity(pa, &c.b[_HEADER_VALUE_VALID], c.header_value_nulls),
                     self._take(pa, &c.b[_HEADER_VALUE_OFFSETS]), self._take(pa, &c.b[_HEADER_VALUE_DATA])],
                     c.header_value_nulls)],
                fields=entry_fields)
            columns.append(pa.Array.from_buffers(
                types[7], n,
                [self._validity(pa, &c.b[_HEADERS_VALID], c.headers_nulls), self._take(pa, &c.b[_HEADERS_OFFSETS])],
                c.headers_nulls, children=[entries]))
        _columns_free(c)
        if _columns_start(c) < 0:
            raise MemoryError()
        return pa.RecordBatch.from_arrays(columns, schema=schema)


