# batchresult.pxd: what batchresult.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from libc.stdint cimport int32_t, uint32_t

cdef class BatchResult
cdef class ProducerBatch

@cython.final
cdef class _Segment:
    cdef BatchResult result
    cdef int32_t first_offset   # relative offset of its first record in its batch
    cdef int32_t count
    cdef Py_ssize_t first_index  # call index of its first record
    cdef uint32_t* indices       # NULL while the call indices are first_index + j
    cdef Py_ssize_t capacity

    cdef int _add(self, Py_ssize_t index) except -1 nogil
    cdef inline Py_ssize_t index_at(self, int32_t j) noexcept

@cython.final
cdef class BatchResult:
    cdef readonly Py_ssize_t record_count
    cdef Py_ssize_t _pending       # records not final yet
    cdef Py_ssize_t _unreleased    # records whose batch has not released its waiters yet
    cdef Py_ssize_t _failed
    cdef list _failures            # (_Segment, error) or (index, error)
    cdef dict _delivered           # (topic, partition) -> records acknowledged there
    cdef object _completion_factory
    cdef object _completion
    cdef bint _released

    cdef int _complete(self, _Segment segment, object error, object topic_partition) except -1
    cdef void _release(self, Py_ssize_t count)
    cpdef void _record_done(self, Py_ssize_t index, object error, object topic_partition=*)
    cpdef object waitable(self)
