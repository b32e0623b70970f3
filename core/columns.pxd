# columns.pxd: what columns.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from libc.stdint cimport int32_t, int64_t

cdef enum:
    _COL_NULL = 0        # no column: every record's field is null
    _COL_LIST = 1        # list of bytes / bytearray / memoryview / str / None
    _COL_OFFSETS32 = 2   # Arrow binary, string
    _COL_OFFSETS64 = 3   # Arrow large_binary, large_string
    _COL_FIXED = 4       # Arrow fixed_size_binary[width]

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

    cdef const unsigned char* _borrow(self, object buffer) except? NULL
    cdef int span(self, Py_ssize_t i, _Span* span, str field) except -1
    cdef inline void _span_nogil(self, Py_ssize_t i, _Span* span) noexcept nogil
