# peer_records.pxd: what peer_records.pyx declares -- the fields of the peers' record types (aiokafka's
# ConsumerRecord, confluent-kafka's Message). Included by core/pxd/cykafka/core/_core.pxd.

cimport cython

@cython.final
cdef class AIOKafkaRecord:
    cdef public str topic
    cdef public int32_t partition
    cdef public int64_t offset
    cdef public int64_t timestamp  # ms
    cdef public int timestamp_type
    cdef object _key
    cdef object _value
    cdef object _checksum
    cdef public Py_ssize_t serialized_key_size  # -1: null
    cdef public Py_ssize_t serialized_value_size
    cdef object _headers  # a tuple of (str, bytes | None) as fetched

cdef class ConfluentMessage:
    cdef ConsumerRecord _record  # a consumed record: the accessors read it; None for a report or an event
    cdef unsigned char _set  # _SET_* bits: what set_*() replaced on a consumed record
    cdef object _topic
    cdef object _partition
    cdef object _offset
    cdef object _key
    cdef object _value
    cdef object _headers
    cdef object _error
    cdef object _timestamp
    cdef object _latency_s
    cdef object _leader_epoch
