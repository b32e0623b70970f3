# The consumer's records in the peers' own shapes, for the compat layers (cykafka/compat/): aiokafka's ConsumerRecord
# (AIOKafkaRecord, what cykafka.compat.aiokafka hands out) and confluent-kafka's Message (ConfluentMessage, what
# cykafka.compat.confluent_kafka hands out, consumed records as well as delivery reports and events). Built in C from
# the ConsumerRecords the decoder made (fetch.pyx), a whole poll in one C loop: no Python-level call per record but a
# deserializer the user configured.
# Rules: no I/O, no clock; the peers' behaviour is the reference (aiokafka 0.14's dataclass: its attribute names,
# repr, equality, sizes -1 for null; confluent-kafka's Message: accessor methods, headers() None without headers,
# (TIMESTAMP_CREATE_TIME 1 | TIMESTAMP_LOG_APPEND_TIME 2, ms)). Records made here are not tracked by the cyclic GC
# (they hold str, bytes, ints and tuples of those): a setter that stores any other object tracks the record again, so a
# cycle built through it is still collected.

from types import GenericAlias

cimport cython
from cpython.bytes cimport PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_Next, PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM


cdef extern from "Python.h":
    void PyObject_GC_Track(object o)
    void PyObject_GC_UnTrack(object o)
    bint PyObject_GC_IsTracked(object o)


cdef tuple _NO_HEADERS = ()


cdef inline Py_ssize_t _size(object data) except -2:
    """The serialized size of a key or value as fetched: -1 for null (aiokafka's)."""
    if data is None:
        return -1
    if PyBytes_CheckExact(data):
        return PyBytes_GET_SIZE(data)
    return len(data)


cdef inline void _track(object untracked):
    """Puts an object back in the cyclic GC once it may be part of a cycle (a record once a setter ran; aiofutures.pyx:
    a future that failed or was cancelled)."""
    if not PyObject_GC_IsTracked(untracked):
        PyObject_GC_Track(untracked)


@cython.final
@cython.freelist(64)
cdef class AIOKafkaRecord:
    """aiokafka's ConsumerRecord: topic, partition, offset, timestamp (ms), timestamp_type (0 CreateTime, 1
    LogAppendTime), key, value (deserialized when a deserializer is configured), checksum (None: v2 batches carry
    none), serialized_key_size, serialized_value_size (of the bytes fetched; -1 for null), headers (a tuple of
    (str, bytes) pairs). Mutable as aiokafka's dataclass; equal when every field is; unhashable."""

    def __init__(self, str topic not None, int32_t partition, int64_t offset, int64_t timestamp, int timestamp_type,
                 key, value, checksum, Py_ssize_t serialized_key_size, Py_ssize_t serialized_value_size, headers):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self._key = key
        self._value = value
        self._checksum = checksum
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size
        self._headers = headers

    __class_getitem__ = classmethod(GenericAlias)  # ConsumerRecord[bytes, bytes] in annotations, as aiokafka's

    @property
    def key(self):
        return self._key

    @key.setter
    def key(self, key):
        self._key = key
        _track(self)

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, value):
        self._value = value
        _track(self)

    @property
    def checksum(self):
        return self._checksum

    @checksum.setter
    def checksum(self, checksum):
        self._checksum = checksum
        _track(self)

    @property
    def headers(self):
        return self._headers

    @headers.setter
    def headers(self, headers):
        self._headers = headers
        _track(self)

    def __repr__(self):  # the dataclass's
        return (f"ConsumerRecord(topic={self.topic!r}, partition={self.partition!r}, offset={self.offset!r}, "
                f"timestamp={self.timestamp!r}, timestamp_type={self.timestamp_type!r}, key={self._key!r}, "
                f"value={self._value!r}, checksum={self._checksum!r}, "
                f"serialized_key_size={self.serialized_key_size!r}, "
                f"serialized_value_size={self.serialized_value_size!r}, headers={self._headers!r})")

    def __eq__(self, other):
        if not isinstance(other, AIOKafkaRecord):
            return NotImplemented
        cdef AIOKafkaRecord that = <AIOKafkaRecord>other
        return (self.offset == that.offset and self.partition == that.partition and self.topic == that.topic
                and self.timestamp == that.timestamp and self.timestamp_type == that.timestamp_type
                and self.serialized_key_size == that.serialized_key_size
                and self.serialized_value_size == that.serialized_value_size and self._key == that._key
                and self._value == that._value and self._checksum == that._checksum
                and self._headers == that._headers)

    __hash__ = None  # as the (unfrozen) dataclass's

    def __reduce__(self):
        return (AIOKafkaRecord, (self.topic, self.partition, self.offset, self.timestamp, self.timestamp_type,
                                 self._key, self._value, self._checksum, self.serialized_key_size,
                                 self.serialized_value_size, self._headers))


cdef inline AIOKafkaRecord _aiokafka_record(ConsumerRecord record, object key_deserializer,
                                            object value_deserializer):
    cdef AIOKafkaRecord out = AIOKafkaRecord.__new__(AIOKafkaRecord)
    cdef object key = record.key
    cdef object value = record.value
    out.topic = record.topic
    out.partition = record.partition
    out.offset = record.offset
    out.timestamp = record.timestamp_ms
    out.timestamp_type = record.timestamp_type
    out.serialized_key_size = _size(key)
    out.serialized_value_size = _size(value)
    out._headers = _NO_HEADERS if not record._headers else tuple(record._headers)
    if key_deserializer is not None or value_deserializer is not None:
        _track(out)  # a deserializer may return any object
        out._key = key if key_deserializer is None else key_deserializer(key)
        out._value = value if value_deserializer is None else value_deserializer(value)
    else:
        PyObject_GC_UnTrack(out)  # str, bytes, ints and a tuple of (str, bytes) pairs
        out._key = key
        out._value = value
    return out


def aiokafka_record(ConsumerRecord record not None, key_deserializer=None, value_deserializer=None):
    """The record as aiokafka's ConsumerRecord, key and value passed through the deserializers given (called for
    None too, as aiokafka's)."""
    return _aiokafka_record(record, key_deserializer, value_deserializer)


def aiokafka_records(dict by_partition not None, key_deserializer=None, value_deserializer=None):
    """{TopicPartition: [ConsumerRecord]} (AsyncConsumer.getmany's) as {TopicPartition: [AIOKafkaRecord]}, the same
    keys, in one C pass; the deserializers as aiokafka_record's."""
    cdef dict out = {}
    cdef Py_ssize_t pos = 0, i, n
    cdef PyObject* tp
    cdef PyObject* got
    cdef list records, converted
    cdef AIOKafkaRecord record
    while PyDict_Next(by_partition, &pos, &tp, &got):
        records = <list?>got
        n = PyList_GET_SIZE(records)
        converted = PyList_New(n)
        for i in range(n):
            record = _aiokafka_record(<ConsumerRecord?>PyList_GET_ITEM(records, i), key_deserializer,
                                      value_deserializer)
            Py_INCREF(record)
            PyList_SET_ITEM(converted, i, record)
        PyDict_SetItem(out, <object>tp, converted)
    return out


# confluent-kafka's timestamp types
cdef enum:
    _TIMESTAMP_NOT_AVAILABLE = 0
    _TIMESTAMP_CREATE_TIME = 1
    _TIMESTAMP_LOG_APPEND_TIME = 2
    _SET_KEY = 1  # which fields set_*() replaced on a consumed record
    _SET_VALUE = 2
    _SET_HEADERS = 4


@cython.freelist(64)
cdef class ConfluentMessage:
    """confluent-kafka's Message: a consumed record (its fields read from the ConsumerRecord it wraps, nothing
    copied), a delivery report or an event (error() set: partition EOF, a failed delivery). Accessor methods as
    confluent's; set_key / set_value / set_headers replace what the accessors return."""

    def __init__(self, topic=None, partition=None, offset=None, key=None, value=None, headers=None, error=None,
                 timestamp=(_TIMESTAMP_NOT_AVAILABLE, 0), latency=None, leader_epoch=None):
        self._record = None
        self._set = 0
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._headers = headers
        self._error = error
        self._timestamp = timestamp
        self._latency_s = latency
        self._leader_epoch = leader_epoch

    def error(self):
        return self._error

    def topic(self):
        return self._topic if self._record is None else self._record.topic

    def partition(self):
        return self._partition if self._record is None else self._record.partition

    def offset(self):
        return self._offset if self._record is None else self._record.offset

    def key(self):
        return self._key if self._record is None or self._set & _SET_KEY else self._record.key

    def value(self):
        return self._value if self._record is None or self._set & _SET_VALUE else self._record.value

    def headers(self):
        """[(str, bytes | None)], None without headers."""
        if self._record is None or self._set & _SET_HEADERS:
            return self._headers
        return self._record._headers or None

    def timestamp(self):
        """(TIMESTAMP_CREATE_TIME or TIMESTAMP_LOG_APPEND_TIME, ms since the epoch); (TIMESTAMP_NOT_AVAILABLE, 0)."""
        if self._record is None:
            return self._timestamp
        return (_TIMESTAMP_LOG_APPEND_TIME if self._record.timestamp_type else _TIMESTAMP_CREATE_TIME,
                self._record.timestamp_ms)

    def latency(self):
        """A delivery report's time from produce() to its outcome, in seconds; None for a consumed record."""
        return self._latency_s

    def leader_epoch(self):
        return self._leader_epoch if self._record is None else self._record.leader_epoch

    def len(self):
        """The value's length (0 without a value)."""
        value = self.value()
        return 0 if value is None else len(value)

    def __len__(self):
        return self.len()

    def set_key(self, key):
        self._key = key
        self._set |= _SET_KEY
        _track(self)

    def set_value(self, value):
        self._value = value
        self._set |= _SET_VALUE
        _track(self)

    def set_headers(self, headers):
        self._headers = headers
        self._set |= _SET_HEADERS
        _track(self)

    def __repr__(self):
        return (f"Message(topic={self.topic()!r}, partition={self.partition()}, offset={self.offset()}, "
                f"error={self.error()!r})")

    def __reduce__(self):
        return (ConfluentMessage, (self.topic(), self.partition(), self.offset(), self.key(), self.value(),
                                   self.headers(), self._error, self.timestamp(), self._latency_s,
                                   self.leader_epoch()))


cdef inline ConfluentMessage _confluent_message(object record):
    cdef ConfluentMessage out = ConfluentMessage.__new__(ConfluentMessage)
    PyObject_GC_UnTrack(out)  # it holds a ConsumerRecord and Nones until a setter runs
    out._record = <ConsumerRecord?>record
    return out


def confluent_message(ConsumerRecord record not None):
    """The consumed record as confluent-kafka's Message (wrapping it)."""
    return _confluent_message(record)


def confluent_messages(list records not None, Py_ssize_t start, Py_ssize_t stop, dict positions not None):
    """records[start:stop] as confluent-kafka's Messages, in one C pass; positions[(topic, partition)] set to the
    offset after the last of each partition's run (the next offset to hand out)."""
    cdef Py_ssize_t n, i
    cdef list out
    cdef ConsumerRecord record, last = None
    if start < 0:
        start = 0
    if stop > PyList_GET_SIZE(records):
        stop = PyList_GET_SIZE(records)
    n = stop - start if stop > start else 0
    out = PyList_New(n)
    for i in range(n):
        record = <ConsumerRecord?>PyList_GET_ITEM(records, start + i)
        if last is not None and (record.partition != last.partition or record.topic is not last.topic):
            positions[last.topic, last.partition] = last.offset + 1
        last = record
        message = _confluent_message(record)
        Py_INCREF(message)
        PyList_SET_ITEM(out, i, message)
    if last is not None:
        positions[last.topic, last.partition] = last.offset + 1
    return out
