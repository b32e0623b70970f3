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

@cython.final
cdef class _HeaderColumn:
    cdef object array               # the list array, kept alive (its buffers are borrowed)
    cdef readonly Py_ssize_t length
    cdef Py_ssize_t offset          # the list array's slice offset, in elements
    cdef Py_ssize_t struct_offset   # the struct child's offset (its validity bits), in elements
    cdef const unsigned char* validity         # the lists' (NULL: none null)
    cdef const unsigned char* struct_validity  # the headers' (NULL: none null)
    cdef const int32_t* off32       # list
    cdef const int64_t* off64       # large_list
    cdef _Column keys               # the struct's key and value fields (struct-offset applied)
    cdef _Column values
    cdef Py_buffer views[3]          # list validity, offsets, struct validity
    cdef int nviews

    cdef inline Py_ssize_t _range(self, Py_ssize_t i, Py_ssize_t* start) noexcept nogil
    cdef inline Py_ssize_t _fill(self, Py_ssize_t start, Py_ssize_t count, _Parts* parts) noexcept nogil
    cdef inline bint _headers_nogil(self, Py_ssize_t i, _Parts* parts) noexcept nogil
    cdef int headers(self, Py_ssize_t i, _Parts* parts) except -1
