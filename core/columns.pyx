# Columns for send_batch: a list of bytes-likes, or an Arrow binary/string/large_binary/large_string/fixed_size_binary
# array read in place through the buffer protocol (validity bitmap, offsets, data). pyarrow is never imported: an
# Arrow array is recognised by its type's module and read through .type, .offset, .null_count and .buffers().
# Rules: a _Column borrows; its owner (the send_batch call) keeps the list or array alive while records are appended.
# A list is checked entry by entry when the column is made (before anything is queued): a str is encoded to UTF-8
# there (CPython keeps the encoding in the str, so span() reads it back for free), a buffer is exported and checked
# (C-contiguous bytes) and released. Bytes and None entries cost one type check; Arrow columns are not scanned.

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport int32_t, int64_t


cdef bint _is_arrow(object obj):
    module = type(obj).__module__
    return module is not None and (<str>module).startswith("pyarrow")


@cython.final
cdef class _Column:

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
        if self.kind == _COL_LIST:
            item = <object>PyList_GET_ITEM(self.items, i)
            if PyBytes_CheckExact(item):
                span.ptr = <const unsigned char*>PyBytes_AS_STRING(item)
                span.size_bytes = PyBytes_GET_SIZE(item)
            elif item is None:
                span.ptr = NULL
                span.size_bytes = -1
            elif PyUnicode_Check(item):
                _str_span(span, item, field, i)
            else:
                _span_acquire(span, item, field, i)
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


cdef int _str_span(_Span* span, object text, str field, Py_ssize_t index) except -1:
    """text's UTF-8 into span (kept by CPython in the str); SerializationError naming field[index] for a str that has
    no UTF-8 form (a lone surrogate)."""
    cdef Py_ssize_t size_bytes
    try:
        span.ptr = <const unsigned char*>PyUnicode_AsUTF8AndSize(text, &size_bytes)
    except UnicodeEncodeError as e:
        raise SerializationError(f"{_field_name(field, index)} is a str with no UTF-8 form ({e.reason} at "
                                 f"index {e.start})") from None
    span.size_bytes = size_bytes
    return 0


cdef bint _is_arrow_array(object obj):
    """obj is a pyarrow Array or ChunkedArray (not a scalar, table or record batch)."""
    for cls in type(obj).__mro__:
        if cls.__name__ in ("Array", "ChunkedArray") and cls.__module__ == "pyarrow.lib":
            return True
    return False


cdef list _as_list(object obj, str field, object error):
    """A per-record argument as a list, read once (a generator is consumed here): a list as it is, an Arrow array's
    to_pylist(), any other iterable listed; `error` (a KafkaError class) naming field for anything else."""
    if type(obj) is list:
        return obj
    if _is_arrow(obj):
        if not _is_arrow_array(obj):
            raise error(f"{field} must be a list or an Arrow array, not a pyarrow {type(obj).__name__}")
        return obj.to_pylist()
    if isinstance(obj, (str, bytes, bytearray, memoryview)):
        raise error(f"{field} must be a list or an Arrow array with one entry per record, not one "
                    f"{type(obj).__name__}")
    try:
        return list(obj)
    except TypeError:
        raise error(f"{field} must be a list or an Arrow array with one entry per record, not "
                    f"{type(obj).__name__}") from None


cdef _Column _column(object obj, str field):
    """obj as a _Column; SerializationError naming field (and the entry) for anything not accepted."""
    cdef _Column col = _Column.__new__(_Column)
    cdef _Span span
    cdef Py_ssize_t i, n
    if obj is None:
        col.kind = _COL_NULL
        col.length = -1
        return col
    if _is_arrow(obj) and _is_arrow_array(obj):
        if hasattr(obj, "chunks"):  # ChunkedArray
            obj = obj.chunk(0) if obj.num_chunks == 1 else obj.combine_chunks()
        type_name = str(obj.type)
        if type_name in ("binary", "string"):
            col.kind = _COL_OFFSETS32
        elif type_name in ("large_binary", "large_string"):
            col.kind = _COL_OFFSETS64
        elif type_name.startswith("fixed_size_binary"):
            col.kind = _COL_FIXED
            col.width = obj.type.byte_width
        else:
            raise SerializationError(f"{field} must be an Arrow binary, string, large_binary, large_string or "
                                     f"fixed_size_binary array, not {type_name}")
        buffers = obj.buffers()
        col.array = obj
        col.length = len(obj)
        col.offset = obj.offset
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
            raise SerializationError(f"{field}: the Arrow array has no offsets buffer")
        return col
    obj = _as_list(obj, field, SerializationError)
    col.kind = _COL_LIST
    col.items = obj
    n = PyList_GET_SIZE(obj)
    col.length = n
    for i in range(n):
        item = <object>PyList_GET_ITEM(obj, i)
        if PyBytes_CheckExact(item) or item is None:
            continue
        if PyUnicode_Check(item):
            _str_span(&span, item, field, i)
            continue
        span.owned = 0
        try:
            _span_acquire(&span, item, field, i)
        finally:
            if span.owned:
                PyBuffer_Release(&span.view)
    return col
