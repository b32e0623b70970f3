# clock.pxd: what clock.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from libc.stdint cimport int64_t

cdef class CoreClock:
    cdef int64_t monotonic_ms(self) except? -1
    cdef int64_t wall_ms(self) except? -1

@cython.final
cdef class SystemCoreClock(CoreClock):
    pass

@cython.final
cdef class PortClock(CoreClock):
    cdef readonly object clock


@cython.final
cdef class _FixedClock(CoreClock):
    cdef int64_t now_ms
