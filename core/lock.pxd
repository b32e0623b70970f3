# lock.pxd: what lock.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from cpython.pythread cimport PyThread_type_lock

@cython.final
cdef class ClientLock:
    cdef PyThread_type_lock _lock
    cdef bint _held
    cdef bint _hand_back  # a thread that waited for it is marked as wanting the GIL (netio.pyx's handoff)
    cdef int _waiters  # threads blocked acquiring it (changed with the GIL held; read without it as a hint)

    cdef inline void take(self) noexcept
    cdef inline void give(self) noexcept
    cpdef void give_to_waiter(self) noexcept
