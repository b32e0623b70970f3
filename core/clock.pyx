# CoreClock: the C-level clock seam. The compiled send path reads time only through one of these, handed in by the
# composition root (cykafka.adapters.clock.core_clock): wall_ms for a record without a timestamp, and an append
# monotonic_ms only when its record starts a batch. SystemCoreClock reads clock_gettime in C (the values SystemClock
# gives, no Python call); PortClock calls any ports.Clock (ManualClock in tests); _FixedClock is a now_ms given as an
# argument (RecordAccumulator.append).

cimport cython
from libc.stdint cimport int64_t


cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clock_id, timespec* tp)
    int CLOCK_REALTIME
    int CLOCK_MONOTONIC


cdef inline int64_t _clock_ms(int clock_id) noexcept nogil:
    cdef timespec ts
    clock_gettime(clock_id, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


cdef class CoreClock:
    """CoreClock()\n--\n
    A clock the compiled core reads from C (abstract: SystemCoreClock, PortClock)."""

    cdef int64_t monotonic_ms(self) except? -1:
        raise NotImplementedError("CoreClock is abstract: use SystemCoreClock or PortClock")

    cdef int64_t wall_ms(self) except? -1:
        raise NotImplementedError("CoreClock is abstract: use SystemCoreClock or PortClock")


@cython.final
cdef class SystemCoreClock(CoreClock):
    """SystemCoreClock()\n--\n
    SystemClock's time read in C: CLOCK_MONOTONIC and CLOCK_REALTIME in ms."""

    cdef int64_t monotonic_ms(self) except? -1:
        return _clock_ms(CLOCK_MONOTONIC)

    cdef int64_t wall_ms(self) except? -1:
        return _clock_ms(CLOCK_REALTIME)


@cython.final
cdef class PortClock(CoreClock):
    """PortClock(clock)\n--\n
    Any ports.Clock, its monotonic_ms() and wall_ms() called from C."""

    def __init__(self, clock):
        self.clock = clock

    cdef int64_t monotonic_ms(self) except? -1:
        return self.clock.monotonic_ms()

    cdef int64_t wall_ms(self) except? -1:
        return self.clock.wall_ms()


@cython.final
cdef class _FixedClock(CoreClock):
    """now_ms as a clock (both readings)."""

    cdef int64_t monotonic_ms(self) except? -1:
        return self.now_ms

    cdef int64_t wall_ms(self) except? -1:
        return self.now_ms


cdef inline _FixedClock _fixed_clock(int64_t now_ms):
    cdef _FixedClock clock = _FixedClock.__new__(_FixedClock)
    clock.now_ms = now_ms
    return clock
