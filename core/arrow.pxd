# arrow.pxd: what arrow.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).


cdef struct _Buf:
    unsigned char* data
    Py_ssize_t size
    Py_ssize_t capacity

cdef enum:  # the buffers of _Columns.b
    _KEY_VALID, _KEY_OFFSETS, _KEY_DATA
    _VALUE_VALID, _VALUE_OFFSETS, _VALUE_DATA
    _TOPIC_OFFSETS, _TOPIC_DATA
    _PARTITION, _OFFSET, _TIMESTAMP, _TIMESTAMP_TYPE
    _HEADERS_VALID, _HEADERS_OFFSETS
    _HEADER_KEY_OFFSETS, _HEADER_KEY_DATA
    _HEADER_VALUE_VALID, _HEADER_VALUE_OFFSETS, _HEADER_VALUE_DATA
    _BUFFERS

cdef struct _Columns:
    Py_ssize_t rows
    Py_ssize_t key_nulls
    Py_ssize_t value_nulls
    Py_ssize_t headers_nulls
    Py_ssize_t header_entries
    Py_ssize_t header_value_nulls
    _Buf b[_BUFFERS]

cdef enum:  # _append_row outcomes
    _ROW_OK = 0
    _ROW_NO_MEMORY = -1
    _ROW_FULL = -2  # an int32 offset would overflow: finish() this builder and go on with another
    _ROW_BAD_HEADER_KEY = -3
    _ROW_BAD_HEADERS = -4
    _ROW_TIMESTAMP_RANGE = -5  # the record's timestamp in microseconds would overflow int64

@cython.final
cdef class _ArrowMemory:
    cdef unsigned char* data
    cdef Py_ssize_t size_bytes

@cython.final
cdef class ArrowBatchBuilder:
    cdef _Columns c
    cdef readonly bint include_headers
    cdef readonly object schema
    cdef bint _busy  # an arrow_into is filling it, maybe without the GIL

    cdef object _take(self, object pa, _Buf* b)
    cdef object _validity(self, object pa, _Buf* b, Py_ssize_t nulls)
