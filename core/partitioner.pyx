# Partitioning. Keyed records: Java's Utils.murmur2 (seed 0x9747b28c, signed 32-bit) and
# BuiltInPartitioner.partitionForKey = toPositive(murmur2(key)) % num_partitions, so keys land where Java puts them.
# Keyless records (or all, with partitioner.ignore.keys): BuiltInPartitioner, KIP-794 sticky + adaptive, one per topic.
# Rules: a plain state machine. No clock (latency stats take now_ms), no global RNG (a seeded xorshift64* per
# partitioner), no locks (the caller holds the producer lock). The caller passes partition availability and the
# queue sizes RecordAccumulator.ready collects; a custom user partitioner is called by the producer, never from here.

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t


cdef inline int32_t murmur2_ptr(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """Java Utils.murmur2 over p[0:n]: 4-byte little-endian blocks, tail bytes, final avalanche."""
    cdef uint32_t m = 0x5bd1e995
    cdef uint32_t h = (<uint32_t>0x9747b28c) ^ <uint32_t>n
    cdef uint32_t k
    cdef Py_ssize_t i
    cdef Py_ssize_t body_len = n & ~(<Py_ssize_t>3)
    for i in range(0, body_len, 4):
        k = (<uint32_t>p[i]) | ((<uint32_t>p[i + 1]) << 8) | ((<uint32_t>p[i + 2]) << 16) | ((<uint32_t>p[i + 3]) << 24)
        k *= m
        k ^= k >> 24
        k *= m
        h *= m
        h ^= k
    cdef Py_ssize_t tail_len = n & 3
    if tail_len == 3:
        h ^= (<uint32_t>p[body_len + 2]) << 16
    if tail_len >= 2:
        h ^= (<uint32_t>p[body_len + 1]) << 8
    if tail_len >= 1:
        h ^= <uint32_t>p[body_len]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return <int32_t>h


cdef inline int32_t partition_for_key_ptr(const unsigned char* p, Py_ssize_t n, int32_t num_partitions) noexcept nogil:
    """toPositive(murmur2(key)) % num_partitions; num_partitions must be > 0."""
    return (murmur2_ptr(p, n) & 0x7fffffff) % num_partitions


cpdef int32_t murmur2(const unsigned char[::1] data):
    """Java's Utils.murmur2 of a bytes-like object, as a signed 32-bit int."""
    if data is None:
        raise TypeError("murmur2() needs a bytes-like object, not None")
    if data.shape[0] == 0:
        return murmur2_ptr(NULL, 0)
    return murmur2_ptr(&data[0], data.shape[0])


def partition_for_key(const unsigned char[::1] key not None, int32_t num_partitions):
    """The default partition of a serialized key: (murmur2(key) & 0x7fffffff) % num_partitions (Java toPositive)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be > 0, got {num_partitions}")
    if key.shape[0] == 0:
        return partition_for_key_ptr(NULL, 0, num_partitions)
    return partition_for_key_ptr(&key[0], key.shape[0], num_partitions)


cpdef bint leader_unavailable(int64_t ready_time_ms, int64_t drain_time_ms,
                              int64_t partition_availability_timeout_ms) noexcept:
    """Java RecordAccumulator.partitionReady's exclusion test: the leader had data ready but could not drain it for
    longer than partitioner.availability.timeout.ms (0 or less = feature off, never excluded)."""
    return partition_availability_timeout_ms > 0 and ready_time_ms - drain_time_ms > partition_availability_timeout_ms


@cython.final
cdef class NodeLatencyStats:
    """NodeLatencyStats(now_ms)\n--\n
    Per-node times the Sender records (Java NodeLatencyStats): ready_time_ms = last ready() that found the node
    with data to send, drain_time_ms = last time it could also drain (its connection was ready)."""


    def __cinit__(self, int64_t now_ms):
        self.ready_time_ms = now_ms
        self.drain_time_ms = now_ms

    cpdef void update(self, int64_t now_ms, bint can_drain) noexcept:
        """Java updateNodeLatencyStats: drain time first, then ready time."""
        if can_drain:
            self.drain_time_ms = now_ms
        self.ready_time_ms = now_ms

    cpdef bint is_unavailable(self, int64_t partition_availability_timeout_ms) noexcept:
        """True when this node's partitions should be left out of the adaptive load stats."""
        return leader_unavailable(self.ready_time_ms, self.drain_time_ms, partition_availability_timeout_ms)

    def __repr__(self):
        return f"NodeLatencyStats(ready_time_ms={self.ready_time_ms}, drain_time_ms={self.drain_time_ms})"


@cython.final
cdef class StickyPartitionInfo:
    """StickyPartitionInfo(partition)\n--\n
    The current sticky partition and the bytes produced to it since it was chosen (Java StickyPartitionInfo).
    Identity matters: a new object is made on every switch, even to the same partition number."""


    def __cinit__(self, int32_t partition):
        self.partition = partition
        self.produced_bytes = 0

    def __repr__(self):
        return f"StickyPartitionInfo(partition={self.partition}, produced_bytes={self.produced_bytes})"


cdef inline uint64_t _splitmix64(uint64_t x) noexcept nogil:
    x += 0x9e3779b97f4a7c15ULL
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL
    return x ^ (x >> 31)


@cython.final
cdef class BuiltInPartitioner:
    """BuiltInPartitioner(topic, sticky_batch_size_bytes, seed=0)\n--\n
    KIP-794 partitioner for one topic (Java BuiltInPartitioner). Workflow per keyless record, under the lock:
    info = peek_current_partition_info(...); [if the lock was released meanwhile: is_partition_changed(info) ->
    retry]; append; update_partition_info(info, appended_bytes, enable_switch=all batches of that deque full, ...).
    Switches after sticky_batch_size_bytes (up to 2x while the last batch is not full). The next partition is drawn
    from the load stats (inverted queue sizes) when present, else uniformly among available partitions."""


    def __cinit__(self, str topic not None, int64_t sticky_batch_size_bytes, uint64_t seed=0):
        if sticky_batch_size_bytes < 1:
            raise ValueError(f"sticky_batch_size_bytes must be >= 1, got {sticky_batch_size_bytes}")
        self.topic = topic
        self.sticky_batch_size_bytes = sticky_batch_size_bytes
        self._sticky = None
        self._cft = NULL
        self._stats_partition_ids = NULL
        self._stats_length = 0
        self._stats_capacity = 0
        if seed == 0:  # no seed given: per-object, so producers and topics do not all start on one partition
            seed = (<uint64_t><uint32_t>hash(topic)) ^ (<uint64_t>id(self) << 16)
        self._rng_state = _splitmix64(seed)
        if self._rng_state == 0:
            self._rng_state = 0x9e3779b97f4a7c15ULL

    def __dealloc__(self):
        PyMem_Free(self._cft)
        PyMem_Free(self._stats_partition_ids)

    cdef inline int32_t _random_int31(self) noexcept:
        """xorshift64*; 31 non-negative bits like Java's toPositive(nextInt())."""
        cdef uint64_t x = self._rng_state
        x ^= x >> 12
        x ^= x << 25
        x ^= x >> 27
        self._rng_state = x
        return <int32_t>((x * 0x2545f4914f6cdd1dULL) >> 33)

    cdef int32_t _next_partition(self, object available_partitions, int32_t num_partitions) except -1:
        cdef int32_t random = self._random_int31()
        cdef Py_ssize_t n_available, lo, hi, mid
        cdef int64_t weighted
        if self._stats_length == 0:
            n_available = len(available_partitions) if available_partitions is not None else 0
            if n_available > 0:
                return available_partitions[random % n_available]
            if num_partitions <= 0:
                raise ValueError(f"topic {self.topic!r}: no partitions to choose from (num_partitions={num_partitions})")
            return random % num_partitions
        weighted = random % self._cft[self._stats_length - 1]
        lo = 0
        hi = self._stats_length
        while lo < hi:  # first entry strictly greater than weighted
            mid = (lo + hi) >> 1
            if self._cft[mid] <= weighted:
                lo = mid + 1
            else:
                hi = mid
        return self._stats_partition_ids[lo]

    cpdef StickyPartitionInfo peek_current_partition_info(self, object available_partitions, int32_t num_partitions):
        """The current sticky partition, choosing one first if there is none (Java peekCurrentPartitionInfo).
        available_partitions: ids of partitions with a known leader (empty/None -> any of num_partitions)."""
        if self._sticky is None:
            self._sticky = StickyPartitionInfo(self._next_partition(available_partitions, num_partitions))
        return self._sticky

    cpdef int32_t peek_current_partition(self, object available_partitions, int32_t num_partitions) except -1:
        """peek_current_partition_info(...).partition."""
        return self.peek_current_partition_info(available_partitions, num_partitions).partition

    cpdef bint is_partition_changed(self, StickyPartitionInfo info) noexcept:
        """True if the sticky partition moved on since `info` was peeked (None -> False: keyed/explicit record)."""
        return info is not None and info is not self._sticky

    cpdef bint update_partition_info(self, StickyPartitionInfo info, int64_t appended_bytes, bint enable_switch,
                                     object available_partitions, int32_t num_partitions) except -1:
        """Count appended_bytes against the sticky partition; switch once sticky_batch_size_bytes were produced and
        enable_switch (the deque's batches are all full), or unconditionally at 2x. Returns True if it switched.
        info None is a no-op (the record did not use the built-in partitioner)."""
        if info is None:
            return False
        if info is not self._sticky:
            raise ValueError("stale StickyPartitionInfo: check is_partition_changed() under the lock first")
        info.produced_bytes += appended_bytes
        if (info.produced_bytes >= self.sticky_batch_size_bytes and enable_switch) \
                or info.produced_bytes >= 2 * self.sticky_batch_size_bytes:
            self._sticky = StickyPartitionInfo(self._next_partition(available_partitions, num_partitions))
            return True
        return False

    cdef int _reserve_stats(self, Py_ssize_t n) except -1:
        cdef int64_t* cft
        cdef int32_t* ids
        if n <= self._stats_capacity:
            return 0
        cft = <int64_t*>PyMem_Realloc(self._cft, n * sizeof(int64_t))
        if cft == NULL:
            raise MemoryError()
        self._cft = cft
        ids = <int32_t*>PyMem_Realloc(self._stats_partition_ids, n * sizeof(int32_t))
        if ids == NULL:
            raise MemoryError()
        self._stats_partition_ids = ids
        self._stats_capacity = n
        return 0

    cdef int _build_load_stats(self, Py_ssize_t length, Py_ssize_t num_partitions) except -1:
        """_cft[0:length] holds queue sizes and _stats_partition_ids the ids: invert and fold into the CFT in
        place, or drop the stats when adaptive choice is pointless (Java updatePartitionLoadStats)."""
        cdef Py_ssize_t i
        cdef int64_t max_size_plus_1
        cdef bint all_equal = True
        self._stats_length = 0
        if length < 1 or num_partitions < 2:
            return 0
        max_size_plus_1 = self._cft[0]
        for i in range(1, length):
            if self._cft[i] != max_size_plus_1:
                all_equal = False
            if self._cft[i] > max_size_plus_1:
                max_size_plus_1 = self._cft[i]
        max_size_plus_1 += 1
        if all_equal and length == num_partitions:
            return 0
        self._cft[0] = max_size_plus_1 - self._cft[0]
        for i in range(1, length):
            self._cft[i] = max_size_plus_1 - self._cft[i] + self._cft[i - 1]
        self._stats_length = length
        return 0

    cdef int set_load_stats(self, const int32_t* queue_sizes, const int32_t* partition_ids, Py_ssize_t length,
                            Py_ssize_t num_partitions) except -1:
        """C entry for the accumulator: queue sizes and ids of the partitions that have a leader and were not
        excluded (length of them), num_partitions = all partitions of the topic; queue_sizes NULL -> no stats."""
        cdef Py_ssize_t i
        if queue_sizes == NULL:
            self._stats_length = 0
            return 0
        self._reserve_stats(length)
        for i in range(length):
            self._cft[i] = queue_sizes[i]
            self._stats_partition_ids[i] = partition_ids[i]
        return self._build_load_stats(length, num_partitions)

    def update_partition_load_stats(self, object queue_sizes, object partition_ids, Py_ssize_t num_partitions=-1):
        """Python entry of set_load_stats. queue_sizes[i] = batches queued for partition_ids[i], listing only the
        partitions with a leader that were not excluded (leader_unavailable); num_partitions = the topic's partition
        count (default: len(queue_sizes)). queue_sizes None -> drop the stats (adaptive off, or not all deques yet)."""
        cdef Py_ssize_t i, length
        cdef int64_t size
        if queue_sizes is None:
            self._stats_length = 0
            return
        length = len(queue_sizes)
        if partition_ids is None or len(partition_ids) != length:
            raise ValueError("partition_ids must have one id per queue size")
        if num_partitions < 0:
            num_partitions = length
        if num_partitions < length:
            raise ValueError(f"num_partitions ({num_partitions}) < number of queue sizes ({length})")
        self._stats_length = 0
        self._reserve_stats(length)
        for i in range(length):
            size = queue_sizes[i]
            if size < 0:
                raise ValueError(f"queue size must be >= 0, got {size}")
            self._cft[i] = size
            self._stats_partition_ids[i] = partition_ids[i]
        self._build_load_stats(length, num_partitions)

    @property
    def sticky_partition(self):
        """The current sticky partition, -1 before the first peek."""
        return self._sticky.partition if self._sticky is not None else -1

    @property
    def has_load_stats(self):
        return self._stats_length > 0

    @property
    def load_stats_range_end(self):
        """Exclusive end of the weighted random range (last CFT entry), 0 without stats."""
        return self._cft[self._stats_length - 1] if self._stats_length > 0 else 0

    @property
    def cumulative_frequency_table(self):
        return [self._cft[i] for i in range(self._stats_length)]

    @property
    def load_stats_partition_ids(self):
        return [self._stats_partition_ids[i] for i in range(self._stats_length)]

    def __repr__(self):
        return (f"BuiltInPartitioner(topic={self.topic!r}, sticky_batch_size_bytes={self.sticky_batch_size_bytes}, "
                f"sticky_partition={self.sticky_partition}, adaptive={self.has_load_stats})")
