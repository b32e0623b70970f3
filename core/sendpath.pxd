# sendpath.pxd: what sendpath.pyx declares -- its cdef classes' fields and C methods, the structs and constants
# they pass -- the contract a reader (and Cython) sees without the code. Included by the module's declarations,
# core/pxd/cykafka/core/_core.pxd (docs/architecture.md: the .pxd contracts).

from cpython.ref cimport PyObject
from libc.stdint cimport int64_t

cdef class SendPath:
    cdef RecordAccumulator _accumulator
    cdef ClientLock _lock               # taken from C; another lock type is called through acquire/release
    cdef object _acquire
    cdef object _release
    cdef CoreClock _clock
    cdef object _wakeup
    cdef bint _wakeup_sent
    cdef bint _fast
    cdef bint _ignore_keys
    cdef int64_t _max_record_bytes
    cdef TransactionManager _transaction  # a transactional producer's: send() checks its state first; else None
    cdef object _snapshot
    cdef dict _partitions
    cdef str _last_topic                # send()'s last topic and its partitions in _snapshot
    cdef object _last_infos
    cdef public bint _closed

    cpdef _sender_loop_started(self, object snapshot)
    cpdef _wake_sender(self)
    cpdef _sender_waits_for_responses(self)
    cdef inline int _take_lock(self) except -1
    cdef inline int _give_lock(self) except -1
    cdef inline object _send(self, object topic, object value, object key, object partition, object timestamp_ms,
                             object headers, object on_delivery, bint block)

cdef struct _OpenRun:
    PyObject** builders         # per partition: the RecordBatchBuilder of the call's open batch there, or NULL
    PyObject** segments         # and the call's _Segment in it
    int open_count
    PyObject* values            # _Column
    PyObject* keys              # _Column
    PyObject* headers           # _HeaderColumn, or NULL (no headers)
    bint keyed
    int fixed_partition
    int num_partitions
    int64_t timestamp_ms
    int64_t max_record_bytes
    bint wake                   # a batch filled up
