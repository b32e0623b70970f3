# BufferPool: buffer.memory accounting for batch buffers (Java BufferPool, without the blocking). Owns a free list of
# poolable_size_bytes bytearrays, the non-pooled remainder (unallocated_memory_bytes) and the FIFO of waiters.
# Invariant: allocated_memory_bytes + available_memory_bytes == total_memory_bytes, always.
# Rules: never blocks, never notifies. Waiters are opaque caller objects (e.g. threading.Condition) kept in FIFO
# order by identity; when memory is short only the head waiter may allocate (no barging), and the methods that free
# memory return the waiter the caller should wake, outside core logic. No clock: max.block.ms is the caller's.

from collections import deque
from types import GenericAlias

cimport cython
from cpython.bytearray cimport PyByteArray_FromStringAndSize
from libc.stdint cimport int64_t


@cython.final
cdef class BufferPool:
    """BufferPool(total_memory_bytes, poolable_size_bytes)\n--\n
    Caller loop (under the producer lock; cond = threading.Condition(lock)):
        buf = pool.try_allocate(size)
        if buf is None:
            pool.enqueue_waiter(cond)
            try:
                while (buf := pool.try_allocate(size, cond)) is None: wait on cond until max.block.ms, else raise
            finally:
                pool.remove_waiter(cond)
        if (w := pool.waiter_to_wake()) is not None: w.notify()
    and on batch completion: if (w := pool.release(buf, size)) is not None: w.notify()."""


    __class_getitem__ = classmethod(GenericAlias)  # BufferPool[threading.Condition] in annotations

    def __cinit__(self, int64_t total_memory_bytes, int64_t poolable_size_bytes):
        if total_memory_bytes < 0:
            raise ValueError(f"total_memory_bytes must be >= 0, got {total_memory_bytes}")
        if poolable_size_bytes < 1:
            raise ValueError(f"poolable_size_bytes must be >= 1, got {poolable_size_bytes}")
        self.total_memory_bytes = total_memory_bytes
        self.poolable_size_bytes = poolable_size_bytes
        self._non_pooled_available_bytes = total_memory_bytes
        self._allocated_bytes = 0
        self._free = deque()
        self._waiters = deque()

    cdef inline int64_t _available(self) noexcept:
        return self._non_pooled_available_bytes + <int64_t>len(self._free) * self.poolable_size_bytes

    cdef inline void _free_up(self, int64_t size_bytes):
        """Java freeUp: drop pooled buffers (newest first) until the non-pooled memory covers size_bytes."""
        while self._non_pooled_available_bytes < size_bytes and len(self._free) > 0:
            self._free.pop()
            self._non_pooled_available_bytes += self.poolable_size_bytes

    cdef inline bint _is_head(self, object waiter):
        return len(self._waiters) > 0 and self._waiters[0] is waiter

    cpdef object try_allocate(self, int64_t size_bytes, object waiter=None):
        """A buffer of size_bytes (a pooled one when size_bytes == poolable_size_bytes and one is free), or None when
        memory is short or other waiters are queued ahead (waiter is not the head). On success a queued waiter is
        taken off the queue. size_bytes > total_memory_bytes raises ValueError (it could never succeed)."""
        cdef object buffer
        if size_bytes < 0:
            raise ValueError(f"size_bytes must be >= 0, got {size_bytes}")
        if size_bytes > self.total_memory_bytes:
            raise ValueError(f"Attempt to allocate {size_bytes} bytes, but there is a hard limit of "
                             f"{self.total_memory_bytes} on memory allocations")
        if len(self._waiters) > 0 and not self._is_head(waiter):
            return None
        if size_bytes == self.poolable_size_bytes and len(self._free) > 0:
            buffer = self._free.popleft()
        elif self._available() >= size_bytes:
            self._free_up(size_bytes)
            self._non_pooled_available_bytes -= size_bytes
            try:
                buffer = PyByteArray_FromStringAndSize(NULL, size_bytes)
            except MemoryError:
                self._non_pooled_available_bytes += size_bytes
                raise
        else:
            return None
        self._allocated_bytes += size_bytes
        if waiter is not None and self._is_head(waiter):
            self._waiters.popleft()
        return buffer

    cpdef object release(self, object buffer, int64_t size_bytes):
        """Give back size_bytes allocated earlier. A buffer of exactly poolable size (len and size_bytes) goes to the
        free list; any other (or None) is dropped and its bytes return to the non-pooled memory. Returns the head
        waiter to wake, or None."""
        if size_bytes < 0:
            raise ValueError(f"size_bytes must be >= 0, got {size_bytes}")
        if size_bytes > self._allocated_bytes:
            raise ValueError(f"release of {size_bytes} bytes but only {self._allocated_bytes} are allocated")
        self._allocated_bytes -= size_bytes
        if (size_bytes == self.poolable_size_bytes and type(buffer) is bytearray
                and len(<bytearray>buffer) == size_bytes):
            self._free.append(buffer)
        else:
            self._non_pooled_available_bytes += size_bytes
        return self.waiter_to_wake()

    cpdef object waiter_to_wake(self):
        """The head waiter if any memory is available for it, else None (Java signalNextWaiterIfMemoryAvailable).
        Ask after an allocation or a waiter's removal so the next waiter does not sleep through free memory."""
        if len(self._waiters) > 0 and self._available() > 0:
            return self._waiters[0]
        return None

    cpdef void enqueue_waiter(self, object waiter) except *:
        """Queue waiter at the tail (a caller that found memory short). Queuing the same object twice is an error."""
        if waiter is None:
            raise ValueError("waiter must not be None")
        for queued in self._waiters:
            if queued is waiter:
                raise ValueError("waiter is already queued")
        self._waiters.append(waiter)

    cpdef object remove_waiter(self, object waiter):
        """Take waiter off the queue (timeout, close, or done); absent is fine. Returns the waiter to wake (the new
        head when memory is available), or None."""
        cdef Py_ssize_t i
        for i in range(len(self._waiters)):
            if self._waiters[i] is waiter:
                del self._waiters[i]
                break
        return self.waiter_to_wake()

    cpdef object head_waiter(self):
        """The longest-waiting waiter, or None."""
        return self._waiters[0] if len(self._waiters) > 0 else None

    @property
    def available_memory_bytes(self):
        """Free memory: unallocated plus the free list (Java availableMemory)."""
        return self._available()

    @property
    def unallocated_memory_bytes(self):
        """Memory neither in use nor in the free list (Java unallocatedMemory)."""
        return self._non_pooled_available_bytes

    @property
    def allocated_memory_bytes(self):
        return self._allocated_bytes

    @property
    def free_buffer_count(self):
        return len(self._free)

    @property
    def queued_waiters(self):
        return len(self._waiters)

    def __repr__(self):
        return (f"BufferPool(total_memory_bytes={self.total_memory_bytes}, "
                f"poolable_size_bytes={self.poolable_size_bytes}, available_memory_bytes={self._available()}, "
                f"queued_waiters={len(self._waiters)})")
