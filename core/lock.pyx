# ClientLock: a client's lock with threading.Lock's interface: acquire(blocking, timeout), release(), locked(), a
# context manager, and threading.Condition(lock). The producer's one lock (guards the accumulator and the pool; the
# compiled send path takes it from C, no Python-level call per record) and the consumer's SubscriptionState lock.
# Rules: not reentrant; an uncontended acquire never releases the GIL; a contended one waits with the GIL released
# (the holder may need it to finish), and is not interrupted by signals (holds are short). A holder that takes the
# lock again and again (send_batch's chunks) gives it with give_to_waiter(), so a waiting sender thread gets a turn
# (the underlying lock is not fair: the releasing thread would usually take it again first).
# hand_back (the consumer's): a thread that waited for the lock is then marked as wanting the GIL, as a network
# thread's system call is (netio.pyx), so the application's next poll() hands it over. Without it a consumer's network
# thread that found the caller in poll() holding the lock, while the caller then ran Python without pause, waited for
# the GIL a whole switch interval (5 ms; measured 9 and 17 ms) before it could file the answer it held.

cimport cython
from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)


cdef extern from "<sched.h>" nogil:
    int sched_yield()


cdef extern from "pythread.h":
    ctypedef long long PY_TIMEOUT_T
    int PyThread_acquire_lock_timed(PyThread_type_lock lock, PY_TIMEOUT_T microseconds, int intr_flag) nogil


@cython.final
cdef class ClientLock:

    def __cinit__(self):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError("cannot allocate a lock")

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)
            self._lock = NULL

    def __init__(self, bint hand_back=False):
        self._hand_back = hand_back

    cdef inline void take(self) noexcept:
        cdef int64_t wanted_us = 0
        if not PyThread_acquire_lock(self._lock, NOWAIT_LOCK):
            self._waiters += 1
            with nogil:
                PyThread_acquire_lock(self._lock, WAIT_LOCK)
                if self._hand_back:
                    wanted_us = _wants_gil()
            if self._hand_back:
                _holds_gil(wanted_us)
            self._waiters -= 1
        self._held = True

    cdef inline void give(self) noexcept:
        self._held = False
        PyThread_release_lock(self._lock)

    cpdef void give_to_waiter(self) noexcept:
        """release(); when a thread is blocked on the lock, waits (without the GIL, up to 20000 yields) until one
        of them has taken it, so that this thread's next acquire comes after its turn."""
        cdef int waiters = self._waiters
        cdef int spins = 0
        self.give()
        if waiters:
            with nogil:
                while self._waiters >= waiters and spins < 20000:
                    sched_yield()
                    spins += 1

    def acquire(self, bint blocking=True, double timeout=-1):
        """As threading.Lock.acquire: True once held; False when not blocking or timeout (s) passed first."""
        cdef int acquired
        cdef int64_t wanted_us = 0
        cdef PY_TIMEOUT_T timeout_us
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if timeout < 0 and timeout != -1:
            raise ValueError("timeout value must be a non-negative number")
        if PyThread_acquire_lock(self._lock, NOWAIT_LOCK):
            self._held = True
            return True
        if not blocking:
            return False
        self._waiters += 1
        timeout_us = -1 if timeout == -1 else <PY_TIMEOUT_T>(timeout * 1e6)
        with nogil:
            if timeout_us == -1:
                acquired = PyThread_acquire_lock(self._lock, WAIT_LOCK)
            else:
                acquired = PyThread_acquire_lock_timed(self._lock, timeout_us, 0)
            if self._hand_back:
                wanted_us = _wants_gil()
        if self._hand_back:
            _holds_gil(wanted_us)
        self._waiters -= 1
        if acquired:
            self._held = True
        return acquired == 1

    def release(self):
        if not self._held:
            raise RuntimeError("release unlocked lock")
        self.give()

    def locked(self):
        return self._held

    @property
    def waiting(self):
        """Threads blocked acquiring the lock right now."""
        return self._waiters

    def __enter__(self):
        self.take()
        return True

    def __exit__(self, *exc_info):
        self.give()

    def __repr__(self):
        return f"<ClientLock {'locked' if self._held else 'unlocked'}{', hand_back' if self._hand_back else ''}>"
