# pool.pxd: what pool.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from libc.stdint cimport int64_t

@cython.final
cdef class BufferPool:
    cdef readonly int64_t total_memory_bytes
    cdef readonly int64_t poolable_size_bytes
    cdef int64_t _non_pooled_available_bytes
    cdef int64_t _allocated_bytes
    cdef object _free  # deque[bytearray], each exactly poolable_size_bytes long
    cdef object _waiters  # deque[object], FIFO

    cdef inline int64_t _available(self) noexcept
    cdef inline void _free_up(self, int64_t size_bytes)
    cdef inline bint _is_head(self, object waiter)
    cpdef object try_allocate(self, int64_t size_bytes, object waiter=*)
    cpdef object release(self, object buffer, int64_t size_bytes)
    cpdef object waiter_to_wake(self)
    cpdef void enqueue_waiter(self, object waiter) except *
    cpdef object remove_waiter(self, object waiter)
    cpdef object head_waiter(self)
