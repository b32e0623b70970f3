# refs: Refs, an owned array of object references in append order that the cyclic garbage collector does not walk
# (a C array in a cdef class's struct field, where a list would be walked entry by entry by every collection that
# reaches its owner). For the references a producer batch keeps to its records' futures (RecordFutures, outside the
# collector) and to the asyncio futures handed out for them (outside it while pending, aiofutures.pyx): hundreds of
# thousands at once in a program sending flat out, each entry a cache miss per collection and nothing the collector
# could free through. Whatever such an array refers to looks referenced from outside to the collector, so a cycle
# through it is freed only once the array lets go (refs_clear): its owner drops it when the batch ends.

from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport Py_DECREF, Py_INCREF, PyObject


cdef int refs_append(Refs* refs, object item) except -1:
    cdef Py_ssize_t capacity
    cdef PyObject** grown
    if refs.count == refs.capacity:
        capacity = max(16, 2 * refs.capacity)
        grown = <PyObject**>PyMem_Realloc(refs.items, capacity * sizeof(PyObject*))
        if grown == NULL:
            raise MemoryError()
        refs.items = grown
        refs.capacity = capacity
    Py_INCREF(item)
    refs.items[refs.count] = <PyObject*>item
    refs.count += 1
    return 0


cdef void refs_clear(Refs* refs) noexcept:
    """Lets go of every reference (emptied first: a deallocation this runs may look at the array again)."""
    cdef Py_ssize_t i
    cdef PyObject** items = refs.items
    cdef Py_ssize_t count = refs.count
    refs.items = NULL
    refs.count = refs.capacity = 0
    for i in range(count):
        Py_DECREF(<object>items[i])
    PyMem_Free(items)
