# refs.pxd: what refs.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

from cpython.ref cimport PyObject

cdef struct Refs:
    PyObject** items   # owned references, in append order
    Py_ssize_t count
    Py_ssize_t capacity

cdef int refs_append(Refs* refs, object item) except -1
cdef void refs_clear(Refs* refs) noexcept
