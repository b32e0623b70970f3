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
from cpython.mem cimport PyMem_Malloc
from cpython.unicode cimport PyUnicode_DecodeUTF8
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


_HEADER_KEY_TYPES = ("string", "binary", "large_string", "large_binary")
_HEADERS_FORM = ("None, a list of per-record headers or an Arrow list<struct<key: string, value: binary>> array "
                 "(list or large_list; key string or binary, value binary or string)")


@cython.final
cdef class _HeaderColumn:
    """send_batch's headers as an Arrow list<struct<key, value>> array, read in place (see the file's rules)."""

    def __dealloc__(self):
        cdef int i
        for i in range(self.nviews):
            PyBuffer_Release(&self.views[i])
        self.nviews = 0

    cdef inline Py_ssize_t _range(self, Py_ssize_t i, Py_ssize_t* start) noexcept nogil:
        """Record i's header count (0 for a null list) and, in start, its first struct index."""
        cdef Py_ssize_t at = self.offset + i
        if self.validity != NULL and not (self.validity[at >> 3] >> (at & 7)) & 1:
            start[0] = 0
            return 0
        if self.off32 != NULL:
            start[0] = self.off32[at]
            return self.off32[at + 1] - self.off32[at]
        if self.off64 != NULL:
            start[0] = <Py_ssize_t>self.off64[at]
            return <Py_ssize_t>(self.off64[at + 1] - self.off64[at])
        start[0] = 0
        return 0

    cdef inline Py_ssize_t _fill(self, Py_ssize_t start, Py_ssize_t count, _Parts* parts) noexcept nogil:
        """Headers start .. start+count into parts' header spans (room for count); their serialized bytes (the
        count varint, each key and value field)."""
        cdef Py_ssize_t j
        cdef Py_ssize_t size = _uvarint_size(_zigzag64(count))
        for j in range(count):
            self.keys._span_nogil(start + j, &parts.header_keys[j])
            self.values._span_nogil(start + j, &parts.header_values[j])
            size += (_bytes_field_size(parts.header_keys[j].size_bytes)
                     + _bytes_field_size(parts.header_values[j].size_bytes))
        parts.header_count = count
        return size

    cdef inline bint _headers_nogil(self, Py_ssize_t i, _Parts* parts) noexcept nogil:
        """Record i's headers into parts (sized by _parts_finish without headers: fields_size_bytes grows by them);
        False, nothing done, when they need more than the inline spans (the caller's GIL path takes the record)."""
        cdef Py_ssize_t start
        cdef Py_ssize_t count = self._range(i, &start)
        if count > _INLINE_HEADERS:
            return False
        parts.header_keys = parts.inline_spans
        parts.header_values = parts.inline_spans + _INLINE_HEADERS
        parts.fields_size_bytes += self._fill(start, count, parts) - 1
        return True

    cdef int headers(self, Py_ssize_t i, _Parts* parts) except -1:
        """_headers_nogil for any count (more than the inline spans on the heap: _parts_release frees them)."""
        cdef Py_ssize_t start, count
        if self._headers_nogil(i, parts):
            return 0
        count = self._range(i, &start)
        parts.heap = <_Span*>PyMem_Malloc(2 * count * sizeof(_Span))
        if parts.heap == NULL:
            raise MemoryError()
        parts.header_keys = parts.heap
        parts.header_values = parts.heap + count
        parts.fields_size_bytes += self._fill(start, count, parts) - 1
        return 0

    def __getitem__(self, Py_ssize_t i):
        """Record i's headers as send() takes them (send_batch's path through send()): a list of (str, bytes or
        None) pairs, or None."""
        cdef Py_ssize_t start, j, count
        cdef _Span key, value
        if not 0 <= i < self.length:
            raise IndexError(i)
        count = self._range(i, &start)
        if not count:
            return None
        pairs = []
        for j in range(start, start + count):
            self.keys._span_nogil(j, &key)
            self.values._span_nogil(j, &value)
            pairs.append((PyUnicode_DecodeUTF8(<const char*>key.ptr, key.size_bytes, NULL),
                          None if value.size_bytes < 0 else (<const char*>value.ptr)[:value.size_bytes]))
        return pairs


cdef object _header_column(object obj, Py_ssize_t n):
    """send_batch's headers: None, a _HeaderColumn for an Arrow list array of structs, or obj (a list path the
    caller checks); SerializationError naming headers for any other Arrow array, InvalidRecordError for a length
    other than n."""
    cdef _HeaderColumn col
    cdef Py_ssize_t i, j, at, start, count
    if obj is None or not _is_arrow(obj) or not _is_arrow_array(obj):
        return obj
    if hasattr(obj, "chunks"):  # ChunkedArray
        obj = obj.chunk(0) if obj.num_chunks == 1 else obj.combine_chunks()
    name = type(obj).__name__
    if name not in ("ListArray", "LargeListArray") or type(obj.values).__name__ != "StructArray":
        raise SerializationError(f"headers must be {_HEADERS_FORM}, not an Arrow {obj.type}")
    struct_type = obj.type.value_type
    names = sorted(struct_type.field(k).name for k in range(struct_type.num_fields))
    if names != ["key", "value"]:
        raise SerializationError(f"headers: an Arrow header must be a struct of fields key and value, not one of "
                                 f"{names}")
    if len(obj) != n:
        raise InvalidRecordError(f"headers has {len(obj)} entries for {n} records")
    structs = obj.values
    key_field = structs.field("key")
    if str(key_field.type) not in _HEADER_KEY_TYPES:
        raise SerializationError(f"headers: an Arrow header key must be string or binary, not {key_field.type}")
    if n and str(key_field.type) in ("binary", "large_binary"):  # the keys these lists hold must be UTF-8
        offsets = obj.offsets
        first, last = offsets[0].as_py(), offsets[n].as_py()
        try:
            key_field.slice(first, last - first).cast("large_string" if str(key_field.type) == "large_binary"
                                                      else "string")
        except ValueError as e:  # pyarrow's ArrowInvalid
            raise SerializationError(f"headers: an Arrow header key must be UTF-8 (Kafka's header keys are "
                                     f"strings): {e}") from None
    col = _HeaderColumn.__new__(_HeaderColumn)
    col.array = obj
    col.length = n
    col.offset = obj.offset
    col.struct_offset = structs.offset
    col.keys = _column(key_field, "headers")
    col.values = _column(structs.field("value"), "headers")
    buffers = obj.buffers()
    if n:
        if obj.null_count:
            PyObject_GetBuffer(buffers[0], &col.views[col.nviews], PyBUF_SIMPLE)
            col.nviews += 1
            col.validity = <const unsigned char*>col.views[col.nviews - 1].buf
        PyObject_GetBuffer(buffers[1], &col.views[col.nviews], PyBUF_SIMPLE)
        col.nviews += 1
        if name == "ListArray":
            col.off32 = <const int32_t*>col.views[col.nviews - 1].buf
        else:
            col.off64 = <const int64_t*>col.views[col.nviews - 1].buf
    if structs.null_count:
        PyObject_GetBuffer(structs.buffers()[0], &col.views[col.nviews], PyBUF_SIMPLE)
        col.nviews += 1
        col.struct_validity = <const unsigned char*>col.views[col.nviews - 1].buf
    if col.struct_validity != NULL or col.keys.validity != NULL:  # look for a null header or key in these lists
        for i in range(n):
            count = col._range(i, &start)
            for j in range(start, start + count):
                at = col.struct_offset + j
                if col.struct_validity != NULL and not (col.struct_validity[at >> 3] >> (at & 7)) & 1:
                    raise SerializationError(f"headers[{i}]: each header must be a (key, value) pair "
                                             f"(the key a str, the value bytes-like, str or None), got None")
                if col.keys.validity != NULL:
                    at = col.keys.offset + j
                    if not (col.keys.validity[at >> 3] >> (at & 7)) & 1:
                        raise SerializationError(f"headers[{i}]: header keys must be str, got NoneType")
    return col
