# partitioner.pxd: what partitioner.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

cimport cython
from libc.stdint cimport int32_t, int64_t, uint64_t

@cython.final
cdef class NodeLatencyStats:
    cdef public int64_t ready_time_ms
    cdef public int64_t drain_time_ms

    cpdef void update(self, int64_t now_ms, bint can_drain) noexcept
    cpdef bint is_unavailable(self, int64_t partition_availability_timeout_ms) noexcept

@cython.final
cdef class StickyPartitionInfo:
    cdef readonly int32_t partition
    cdef readonly int64_t produced_bytes

@cython.final
cdef class BuiltInPartitioner:
    cdef readonly str topic
    cdef readonly int64_t sticky_batch_size_bytes
    cdef StickyPartitionInfo _sticky
    cdef uint64_t _rng_state
    cdef int64_t* _cft  # cumulative frequency table, _stats_length entries; 0 entries = no stats (uniform)
    cdef int32_t* _stats_partition_ids
    cdef Py_ssize_t _stats_length
    cdef Py_ssize_t _stats_capacity

    cdef inline int32_t _random_int31(self) noexcept
    cdef int32_t _next_partition(self, object available_partitions, int32_t num_partitions) except -1
    cpdef StickyPartitionInfo peek_current_partition_info(self, object available_partitions, int32_t num_partitions)
    cpdef int32_t peek_current_partition(self, object available_partitions, int32_t num_partitions) except -1
    cpdef bint is_partition_changed(self, StickyPartitionInfo info) noexcept
    cpdef bint update_partition_info(self, StickyPartitionInfo info, int64_t appended_bytes, bint enable_switch,
                                     object available_partitions, int32_t num_partitions) except -1
    cdef int _reserve_stats(self, Py_ssize_t n) except -1
    cdef int _build_load_stats(self, Py_ssize_t length, Py_ssize_t num_partitions) except -1
    cdef int set_load_stats(self, const int32_t* queue_sizes, const int32_t* partition_ids, Py_ssize_t length,
                            Py_ssize_t num_partitions) except -1
