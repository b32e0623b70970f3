# Columns for send_batch: a list of bytes-likes, or an Arrow binary/string/large_binary/large_string/fixed_size_binary
# array read in place through the buffer protocol (validity bitmap, offsets, data). pyarrow is never imported: an
# Arrow array is recognised by its type's module and read through .type, .offset, .null_count and .buffers().
# Rules: a _Column borrows; its owner (the send_batch call) keeps the list or array alive while records are appended.

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport int32_t, int64_t

cdef enum:
    _COL_NULL = 0        # no column: every record's field is null
    _COL_LIST = 1        # list of bytes / bytearray / memoryview / str / None
    _COL_OFFSETS32 = 2   # Arrow binary, string
    _COL_OFFSETS64 = 3   # Arrow large_binary, large_string
    _COL_FIXED = 4       # Arrow fixed_size_binary[width]


cdef bint _is_arrow(object obj):
    module = type(obj).__module__
    return module is not None and (<str>module).startswith("pyarrow")


@cython.final
cdef class _Column:
    cdef int kind
    cdef list items
    cdef object array
    cdef readonly Py_ssize_t length
    cdef Py_ssize_t offset      # Arrow slice offset, in elements
    cdef Py_ssize_t width
    cdef const unsigned char* validity
    cdef const int32_t* off32
    cdef const int64_t* off64
    cdef const unsigned char* data
    cdef Py_buffer views[3]
    cdef int nviews

    def __dealloc__(self):
        cdef int i
        for i in range(self.nviews):
            PyBuffer_Release(&self.views[i])
        self.nviews = 0

    cdef const unsigned char* _borrow(self, object buffer) except? NULL:
        if buffer is None:
            return NULL
        PyObject_GetBuffer(buffer, &self.views[self.nviews], PyBUF_SIMPLE)
        self.nviews += 1
        return <const unsigned char*>self.views[self.nviews - 1].buf

    cdef int span(self, Py_ssize_t i, _Span* span, str field) except -1:
        """Record i's bytes into span (borrowed; a non-bytes buffer is exported: _parts_release releases it)."""
        cdef Py_ssize_t size_bytes
        cdef const char* utf8
        if self.kind == _COL_LIST:
            item = <object>PyList_GET_ITEM(self.items, i)
            if PyBytes_CheckExact(item):
                span.ptr = <const unsigned char*>PyBytes_AS_STRING(item)
                span.size_bytes = PyBytes_GET_SIZE(item)
            elif item is None:
                span.ptr = NULL
                span.size_bytes = -1
            elif PyUnicode_Check(item):
                utf8 = PyUnicode_AsUTF8AndSize(item, &size_bytes)
                span.ptr = <const unsigned char*>utf8
                span.size_bytes = size_bytes
            else:
                _span_acquire(span, item, field)
            return 0
        self._span_nogil(i, span)
        return 0

    cdef inline void _span_nogil(self, Py_ssize_t i, _Span* span) noexcept nogil:
        """span() of a column that is not a list (no object is touched)."""
        cdef Py_ssize_t at, start
        if self.kind == _COL_NULL:
            span.ptr = NULL
            span.size_bytes = -1
            return
        at = self.offset + i
        if self.validity != NULL and not (self.validity[at >> 3] >> (at & 7)) & 1:
            span.ptr = NULL
            span.size_bytes = -1
            return
        if self.kind == _COL_OFFSETS32:
            start = self.off32[at]
            span.size_bytes = self.off32[at + 1] - start
        elif self.kind == _COL_OFFSETS64:
            start = <Py_ssize_t>self.off64[at]
            span.size_bytes = <Py_ssize_t>(self.off64[at + 1] - self.off64[at])
        else:
            start = at * self.width
            span.size_bytes = self.width
        span.ptr = self.data + start if self.data != NULL else <const unsigned char*>b""


cdef _Column _column(object obj, str field):
    """obj as a _Column; TypeError (SerializationError for list items) when it is none of the accepted kinds."""
    cdef _Column col = _Column.__new__(_Column)
    cdef Py_ssize_t i, n
    if obj is None:
        col.kind = _COL_NULL
        col.length = -1
        return col
    if _is_arrow(obj):
        if hasattr(obj, "chunks"):  # ChunkedArray
            obj = obj.chunk(0) if obj.num_chunks == 1 else obj.combine_chunks()
        type_name = str(obj.type)
        buffers = obj.buffers()
        col.array = obj
        col.length = len(obj)
        col.offset = obj.offset
        if type_name in ("binary", "string"):
            col.kind = _COL_OFFSETS32
        elif type_name in ("large_binary", "large_string"):
            col.kind = _COL_OFFSETS64
        elif type_name.startswith("fixed_size_binary"):
            col.kind = _COL_FIXED
            col.width = obj.type.byte_width
        else:
            raise TypeError(f"{field} must be an Arrow binary, string, large_binary, large_string or "
                            f"fixed_size_binary array, not {type_name}")
        if obj.null_count:
            col.validity = col._borrow(buffers[0])
        if col.kind == _COL_FIXED:
            col.data = col._borrow(buffers[1])
        else:
            if col.kind == _COL_OFFSETS32:
                col.off32 = <const int32_t*>col._borrow(buffers[1])
            else:
                col.off64 = <const int64_t*>col._borrow(buffers[1])
            col.data = col._borrow(buffers[2])
        if col.length and col.off32 == NULL and col.off64 == NULL and col.kind != _COL_FIXED:
            raise TypeError(f"{field}: the Arrow array has no offsets buffer")
        return col
    if type(obj) is not list:
        if isinstance(obj, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"{field} must be a list or an Arrow array of records, not one {type(obj).__name__}")
        try:
            obj = list(obj)
        except TypeError:
            raise TypeError(f"{field} must be a list or an Arrow array, not {type(obj).__name__}") from None
    col.kind = _COL_LIST
    col.items = obj
    n = PyList_GET_SIZE(obj)
    col.length = n
    for i in range(n):
        item = <object>PyList_GET_ITEM(obj, i)
        if not (PyBytes_CheckExact(item) or item is None or PyUnicode_Check(item) or PyObject_CheckBuffer(item)):
            raise SerializationError(f"{field}[{i}] must be bytes-like, str or None, not {type(item).__name__}")
    return col
