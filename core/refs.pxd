# refs.pxd: what refs.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

from cpython.ref cimport PyObject

cdef struct Refs:
    PyObject** items   # owned references, in append order
    Py_ssize_t count
    Py_ssize_t capacity

# refs_append(&refs, item) and refs_clear(&refs) are refs.pyx's module functions, not declared here: a cdef function
# a .pxd declares is exported as the module's C API (__pyx_capi__), which the .pyi stub check would then have to list
