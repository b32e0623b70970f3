# The consumer's record decoder: one partition's records section of a Fetch answer, decoded lazily in offset order,
# into ConsumerRecord objects (records()) or straight into Arrow column buffers (arrow_into(), no object per record).
# Rules: the records section is referenced, never copied (a compressed batch is decompressed once, by the
# decompress(codec, bytes-like) callable handed in); the readers of the wire format are the ones records.pyx
# decodes with (_read_batch_header, _batch_size, _read_record_head, _read_bytes_field); anything malformed raises
# CorruptRecordError naming topic, partition and offset; no I/O, no clock.
#
# Offsets: records below fetch_offset are skipped (a fetch answers whole batches), control batches are skipped, a
# trailing partial batch is ignored (answers are cut at max.partition.fetch.bytes). next_offset is the position after
# everything handed out or skipped: what the consumer fetches or commits next.
#
# read_committed (docs/consumer.md, "Decoding and read_committed"):
# - the broker sent a non-empty aborted-transaction list: Java's algorithm (CompletedFetch): an aborted (producer,
#   first offset) becomes active once a batch's last offset reaches first offset; a transactional batch of an active
#   producer is dropped; that producer's ABORT marker ends it.
# - no list, or an empty one (Tansu always sends an empty one): decided from the markers in this data. A
#   transactional batch is delivered when its producer's next marker after it is COMMIT, dropped when it is ABORT;
#   with no marker yet, delivery stops at the batch (blocked_on_open_transaction; re-fetch from next_offset later).
# Control record (the one record of a control batch): key = version int16, type int16 (0 ABORT, 1 COMMIT).

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_Append
from cpython.bytearray cimport PyByteArray_AS_STRING


cdef enum:
    _CONTROL_ABORT = 0
    _CONTROL_COMMIT = 1
    _NO_MARKER = 2  # a transaction with no marker in this data yet
    _DELIVER = 0
    _DROP = 1
    _BLOCK = 2
    _CRC_NOGIL_BYTES = 16384  # batches at least this big are checked with the GIL released


@cython.final
@cython.freelist(64)
cdef class ConsumerRecord:
    """One record read from Kafka. timestamp_type: 0 CreateTime, 1 LogAppendTime (then every record of the batch
    carries the batch's max timestamp, as Java's consumer reports); leader_epoch is None when the batch has none."""

    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp_ms
    cdef readonly int timestamp_type
    cdef readonly object key
    cdef readonly object value
    cdef list _headers  # None: no headers (made [] on first access)
    cdef int32_t _leader_epoch  # -1: none

    def __init__(self, str topic not None, int32_t partition, int64_t offset, int64_t timestamp_ms,
                 int timestamp_type=0, key=None, value=None, headers=None, leader_epoch=None):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp_ms = timestamp_ms
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self._headers = None if headers is None else list(headers)
        self._leader_epoch = -1 if leader_epoch is None else leader_epoch

    @property
    def headers(self):
        """[(str, bytes | None)] in the record's order."""
        if self._headers is None:
            self._headers = []
        return self._headers

    @property
    def leader_epoch(self):
        return None if self._leader_epoch < 0 else self._leader_epoch

    def __repr__(self):
        return (f"ConsumerRecord(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
                f"timestamp_ms={self.timestamp_ms}, timestamp_type={self.timestamp_type}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r}, leader_epoch={self.leader_epoch!r})")

    def __eq__(self, other):
        if not isinstance(other, ConsumerRecord):
            return NotImplemented
        cdef ConsumerRecord that = <ConsumerRecord>other
        return (self.offset == that.offset and self.partition == that.partition and self.topic == that.topic
                and self.timestamp_ms == that.timestamp_ms and self.timestamp_type == that.timestamp_type
                and self._leader_epoch == that._leader_epoch and self.key == that.key and self.value == that.value
                and self.headers == that.headers)

    __hash__ = None  # headers is a mutable list

    def __reduce__(self):
        return (ConsumerRecord, (self.topic, self.partition, self.offset, self.timestamp_ms, self.timestamp_type,
                                 self.key, self.value, self._headers, self.leader_epoch))


cdef inline Py_ssize_t _skip_headers(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end,
                                     int64_t* header_count) noexcept nogil:
    """Walks a record's headers section at p[pos:end] without decoding it; the position after it or -1."""
    cdef int64_t i, size_bytes
    cdef const unsigned char* data
    pos = _get_zigzag(p, pos, end, 5, header_count)
    if pos < 0 or header_count[0] < 0 or header_count[0] > (end - pos) // 2:
        return -1
    for i in range(header_count[0]):
        pos = _get_zigzag(p, pos, end, 5, &size_bytes)
        if pos < 0 or size_bytes < 0 or size_bytes > end - pos:
            return -1
        pos = _read_bytes_field(p, pos + size_bytes, end, &data, &size_bytes)
        if pos < 0:
            return -1
    return pos


cdef int _control_type(const unsigned char* section, Py_ssize_t size_bytes) noexcept nogil:
    """ABORT or COMMIT from a control batch's first record; -1 for another control type, -2 when malformed."""
    cdef _RecordHead r
    cdef const unsigned char* key
    cdef int64_t key_bytes
    cdef Py_ssize_t pos = _read_record_head(section, 0, size_bytes, &r)
    if pos < 0:
        return -2
    pos = _read_bytes_field(section, pos, r.end, &key, &key_bytes)
    if pos < 0 or key_bytes < 4 or <int16_t>_get_be16(key) < 0:
        return -2
    cdef int16_t kind = <int16_t>_get_be16(key + 2)
    if kind == _CONTROL_ABORT or kind == _CONTROL_COMMIT:
        return kind
    return -1


@cython.final
cdef class PartitionFetch:
    """One partition's records section from one Fetch answer, decoded lazily in offset order (module comment)."""

    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int64_t fetch_offset
    cdef readonly int64_t next_offset
    cdef readonly bint read_committed
    cdef readonly bint check_crcs
    cdef readonly bint blocked_on_open_transaction
    cdef readonly Py_ssize_t bytes_size
    cdef bytes _topic_utf8
    cdef object _decompress
    cdef object _records
    cdef Py_buffer _view
    cdef bint _has_view
    cdef const unsigned char* _data
    cdef Py_ssize_t _pos  # the next batch's position in _data
    cdef bint _ended  # no batch after _pos can be handed out (end of data, partial batch, or blocked)
    # the batch being read
    cdef bint _in_batch
    cdef _BatchHeader _batch
    cdef Py_buffer _plain_view  # the decompressed records section
    cdef bint _has_plain_view
    cdef const unsigned char* _section
    cdef Py_ssize_t _section_bytes
    cdef Py_ssize_t _record_pos
    cdef int32_t _records_left
    cdef int32_t _record_index
    # read_committed
    cdef bint _markers_decide  # no aborted list from the broker: markers decide (see the module comment)
    cdef bint _scanned
    cdef bytearray _decisions  # per batch in order: _DELIVER, _DROP or _BLOCK (markers decide)
    cdef Py_ssize_t _batch_index
    cdef list _aborted  # [(first_offset, producer_id)] sorted, consumed from _aborted_next
    cdef Py_ssize_t _aborted_next
    cdef set _aborting  # producers whose aborted transaction is under way

    def __init__(self, str topic not None, int32_t partition, object records not None, int64_t fetch_offset, *,
                 bint check_crcs, object decompress, bint read_committed=False, object aborted_transactions=None):
        if decompress is not None and not callable(decompress):
            raise InvalidArgumentError(
                f"decompress must be a callable (codec_id, bytes-like) -> bytes-like or None, not "
                f"{type(decompress).__name__}")
        self._release()
        try:
            PyObject_GetBuffer(records, &self._view, PyBUF_SIMPLE)
        except (TypeError, BufferError, ValueError) as e:
            raise InvalidArgumentError(
                f"records must be a contiguous bytes-like object (bytes, bytearray, memoryview), not "
                f"{type(records).__name__}: {e}") from None
        self._has_view = True
        self._records = records
        self._data = <const unsigned char*>self._view.buf
        self.bytes_size = self._view.len
        self.topic = topic
        self._topic_utf8 = topic.encode("utf-8")
        self.partition = partition
        self.fetch_offset = fetch_offset
        self.next_offset = fetch_offset
        self.check_crcs = check_crcs
        self._decompress = decompress
        self.read_committed = read_committed
        self._pos = 0
        self._ended = False
        self._in_batch = False
        self.blocked_on_open_transaction = False
        self._scanned = False
        self._batch_index = 0
        self._aborted = []
        self._aborted_next = 0
        self._aborting = set()
        self._markers_decide = False
        if read_committed:
            self._aborted = _aborted_list(aborted_transactions)
            self._markers_decide = not self._aborted

    def __dealloc__(self):
        self._release()

    cdef void _release(self) noexcept:
        self._release_plain()
        if self._has_view:
            PyBuffer_Release(&self._view)
            self._has_view = False

    cdef inline void _release_plain(self) noexcept:
        if self._has_plain_view:
            PyBuffer_Release(&self._plain_view)
            self._has_plain_view = False

    def __repr__(self):
        return (f"PartitionFetch(topic={self.topic!r}, partition={self.partition}, fetch_offset={self.fetch_offset}, "
                f"next_offset={self.next_offset}, bytes_size={self.bytes_size}, read_committed={self.read_committed}, "
                f"blocked_on_open_transaction={self.blocked_on_open_transaction})")

    cdef object _corrupt(self, str what, int64_t offset):
        return CorruptRecordError(f"topic {self.topic!r} partition {self.partition} offset {offset}: {what}")

    cdef object _wrapped(self, object error):
        """A records.pyx reader's CorruptRecordError (its message names the offset) with topic and partition."""
        return CorruptRecordError(f"topic {self.topic!r} partition {self.partition}: {error}")

    @property
    def done(self):
        """True when nothing more can be handed out from this data (read to its end, its partial tail, or an open
        transaction). Reads ahead over batches that hand out nothing, so it may raise CorruptRecordError."""
        return not self._ready()

    # ---- batches --------------------------------------------------------------------------------------------------

    cdef inline bint _ready(self) except -1:
        """Positioned on a record to decode (of a batch that is handed out); False at the end."""
        while True:
            if self._in_batch:
                if self._records_left > 0:
                    return True
                self._finish_batch()
            if not self._enter_batch():
                return False

    cdef int _finish_batch(self) except -1:
        cdef int64_t next_offset
        if self._record_pos != self._section_bytes:
            raise self._corrupt(f"{self._section_bytes - self._record_pos} bytes left after the "
                                f"{self._batch.record_count} records of the batch", self._batch.base_offset)
        next_offset = <int64_t>(<uint64_t>self._batch.base_offset + <uint64_t>self._batch.last_offset_delta) + 1
        if next_offset > self.next_offset:
            self.next_offset = next_offset
        self._in_batch = False
        self._release_plain()
        return 0

    cdef bint _enter_batch(self) except -1:
        """Moves to the next batch that hands out records; False when there is none in this data."""
        cdef const unsigned char* p
        cdef Py_ssize_t remaining, size_bytes
        cdef int32_t batch_length
        cdef int64_t last_offset
        cdef int decision, codec
        if self.read_committed and not self._scanned:
            self._scan()
        while not self._ended:
            remaining = self.bytes_size - self._pos
            p = self._data + self._pos
            if remaining < _LOG_OVERHEAD_BYTES:
                self._ended = True
                break
            batch_length = <int32_t>_get_be32(p + 8)
            if batch_length >= _HEADER_BYTES - _LOG_OVERHEAD_BYTES and batch_length > remaining - _LOG_OVERHEAD_BYTES:
                self._ended = True  # a partial batch at the end: the answer was cut at max.partition.fetch.bytes
                break
            if self.check_crcs and remaining >= _CRC_NOGIL_BYTES:
                with nogil:
                    size_bytes = _batch_size(p, remaining, True)
            else:
                size_bytes = _batch_size(p, remaining, self.check_crcs)
            if size_bytes < 0:
                raise self._corrupt(_batch_problem(size_bytes, p, remaining), <int64_t>_get_be64(p))
            _read_batch_header(p, &self._batch)
            last_offset = <int64_t>(<uint64_t>self._batch.base_offset + <uint64_t>self._batch.last_offset_delta)
            decision = self._decide(p, size_bytes) if self.read_committed else _DELIVER
            if decision == _BLOCK:
                self._ended = True
                self.blocked_on_open_transaction = True
                break
            if (decision == _DROP or self._batch.attributes & _ATTR_CONTROL or last_offset < self.next_offset
                    or self._batch.record_count == 0):
                self._pos += size_bytes
                self._batch_index += 1
                if last_offset >= self.next_offset:
                    self.next_offset = last_offset + 1
                continue
            if self._batch.record_count < 0:
                raise self._corrupt(f"negative record count {self._batch.record_count}", self._batch.base_offset)
            codec = self._batch.attributes & _ATTR_CODEC_MASK
            if codec == 0:
                self._section = p + _HEADER_BYTES
                self._section_bytes = size_bytes - _HEADER_BYTES
            else:
                self._inflate(codec, self._pos + _HEADER_BYTES, self._pos + size_bytes)
            if self._batch.record_count > self._section_bytes // 7:
                self._release_plain()
                raise self._corrupt(f"{self._batch.record_count} records claimed in {self._section_bytes} bytes",
                                    self._batch.base_offset)
            self._pos += size_bytes
            self._batch_index += 1
            self._record_pos = 0
            self._record_index = 0
            self._records_left = self._batch.record_count
            self._in_batch = True
            return True
        return False

    cdef int _inflate(self, int codec, Py_ssize_t start, Py_ssize_t end) except -1:
        """Decompresses the records section _data[start:end] of the batch in _batch into _section."""
        if codec > _MAX_CODEC:
            raise self._corrupt(f"unknown codec {codec}", self._batch.base_offset)
        if self._decompress is None:
            raise self._corrupt(f"the batch is compressed (codec {codec}) and no decompress was given",
                                self._batch.base_offset)
        compressed = memoryview(self._records).cast("B")[start:end]
        try:
            plain = self._decompress(codec, compressed)
            PyObject_GetBuffer(plain, &self._plain_view, PyBUF_SIMPLE)
        except CorruptRecordError as e:
            raise self._corrupt(str(e), self._batch.base_offset) from e
        except Exception as e:
            raise self._corrupt(f"the batch does not decompress (codec {codec}): {e!r}", self._batch.base_offset) from e
        finally:
            compressed.release()
        self._has_plain_view = True
        self._section = <const unsigned char*>self._plain_view.buf
        self._section_bytes = self._plain_view.len
        return 0

    # ---- read_committed -------------------------------------------------------------------------------------------

    cdef int _decide(self, const unsigned char* p, Py_ssize_t size_bytes) except -1:
        """_DELIVER, _DROP or _BLOCK for the batch just read into _batch (every batch passes here, in order; again
        after an error, so it changes nothing that a second pass would see differently)."""
        cdef int64_t last_offset
        cdef Py_ssize_t index
        cdef tuple aborted
        if self._markers_decide:
            index = self._batch_index
            if self._batch.attributes & _ATTR_CONTROL:
                return _DROP
            if self._batch.producer_id < 0 or not self._batch.attributes & _ATTR_TRANSACTIONAL:
                return _DELIVER
            if index >= len(self._decisions):  # cannot happen: _scan walked the same batches
                return _BLOCK
            return (<unsigned char*>PyByteArray_AS_STRING(self._decisions))[index]
        if self._batch.producer_id < 0:
            return _DELIVER
        last_offset = <int64_t>(<uint64_t>self._batch.base_offset + <uint64_t>self._batch.last_offset_delta)
        while self._aborted_next < len(self._aborted):
            aborted = <tuple>self._aborted[self._aborted_next]
            if <int64_t>aborted[0] > last_offset:
                break
            self._aborting.add(aborted[1])
            self._aborted_next += 1
        if self._batch.attributes & _ATTR_CONTROL:
            if self._marker(p, size_bytes) == _CONTROL_ABORT:
                self._aborting.discard(self._batch.producer_id)
            return _DROP
        if self._batch.attributes & _ATTR_TRANSACTIONAL and self._batch.producer_id in self._aborting:
            return _DROP
        return _DELIVER

    cdef int _marker(self, const unsigned char* p, Py_ssize_t size_bytes) except -2:
        """ABORT, COMMIT or -1 (another control type) for the control batch at p (its header in _batch)."""
        cdef int codec = self._batch.attributes & _ATTR_CODEC_MASK
        cdef Py_buffer view
        cdef int kind
        if codec == 0:
            kind = _control_type(p + _HEADER_BYTES, size_bytes - _HEADER_BYTES)
        else:
            if codec > _MAX_CODEC or self._decompress is None:
                raise self._corrupt(f"control batch of codec {codec} cannot be read", self._batch.base_offset)
            start = (p - self._data) + _HEADER_BYTES
            compressed = memoryview(self._records).cast("B")[start:(p - self._data) + size_bytes]
            try:
                plain = self._decompress(codec, compressed)
                PyObject_GetBuffer(plain, &view, PyBUF_SIMPLE)
            except Exception as e:
                raise self._corrupt(f"the control batch does not decompress (codec {codec}): {e!r}",
                                    self._batch.base_offset) from e
            finally:
                compressed.release()
            kind = _control_type(<const unsigned char*>view.buf, view.len)
            PyBuffer_Release(&view)
        if kind == -2:
            raise self._corrupt("malformed control record", self._batch.base_offset)
        return kind

    cdef int _scan(self) except -1:
        """Markers decide: walks every batch header of the data once, and decides each transactional batch from its
        producer's next marker after it (COMMIT: deliver, ABORT: drop, none yet: block)."""
        cdef const unsigned char* p
        cdef Py_ssize_t pos = 0, remaining, size_bytes
        cdef list producers = []
        cdef list markers = []
        cdef dict next_marker = {}
        cdef Py_ssize_t i
        cdef int kind
        self._scanned = True
        if not self._markers_decide:
            return 0
        while True:
            remaining = self.bytes_size - pos
            p = self._data + pos
            size_bytes = _batch_size(p, remaining, False)
            if size_bytes < 0:
                break  # the main walk stops or raises here too
            _read_batch_header(p, &self._batch)
            producers.append(self._batch.producer_id)
            kind = -1
            if self._batch.attributes & _ATTR_CONTROL and self._batch.producer_id >= 0:
                if self.check_crcs and _batch_size(p, remaining, True) < 0:
                    raise self._corrupt(_batch_problem(_BATCH_CRC, p, remaining), self._batch.base_offset)
                kind = self._marker(p, size_bytes)
            markers.append(kind)
            pos += size_bytes
        decisions = bytearray(len(producers))
        for i in range(len(producers) - 1, -1, -1):
            if markers[i] >= 0:
                next_marker[producers[i]] = markers[i]
            else:
                kind = next_marker.get(producers[i], _NO_MARKER)
                decisions[i] = _DELIVER if kind == _CONTROL_COMMIT else _DROP if kind == _CONTROL_ABORT else _BLOCK
        self._decisions = decisions
        return 0

    # ---- records ----------------------------------------------------------------------------------------------------

    def records(self, Py_ssize_t max_records):
        """Up to max_records ConsumerRecords, in offset order; [] when done. A CorruptRecordError comes after the
        records before it were handed out (the call that meets it returns those; the next one raises)."""
        cdef list out = []
        if max_records < 0:
            raise InvalidArgumentError(f"max_records must be >= 0, not {max_records}")
        try:
            self._records_into(out, max_records)
        except CorruptRecordError:
            if out:  # hand out what came before it; nothing after it was consumed, so the next call raises it again
                return out
            raise
        return out

    cdef int _records_into(self, list out, Py_ssize_t max_records) except -1:
        cdef Py_ssize_t taken = 0
        cdef _RecordHead r
        cdef Py_ssize_t pos, headers_at
        cdef const unsigned char* p
        cdef const unsigned char* key
        cdef const unsigned char* value
        cdef int64_t key_bytes, value_bytes, header_count, offset
        cdef ConsumerRecord record
        cdef bint log_append
        while taken < max_records and self._ready():
            p = self._section
            log_append = (self._batch.attributes & _ATTR_LOG_APPEND_TIME) != 0
            while taken < max_records and self._records_left > 0:
                pos = _read_record_head(p, self._record_pos, self._section_bytes, &r)
                offset = <int64_t>(<uint64_t>self._batch.base_offset + <uint64_t>r.offset_delta)
                if pos < 0:
                    raise self._wrapped(_record_problem(pos, self._record_index, &r, self._batch.base_offset))
                pos = _read_bytes_field(p, pos, r.end, &key, &key_bytes)
                if pos < 0:
                    raise self._wrapped(_field_problem(pos, "key", key_bytes, r.end - (key - p), offset))
                pos = _read_bytes_field(p, pos, r.end, &value, &value_bytes)
                if pos < 0:
                    raise self._wrapped(_field_problem(pos, "value", value_bytes, r.end - (value - p), offset))
                headers_at = pos
                pos = _skip_headers(p, pos, r.end, &header_count)
                if pos != r.end:
                    raise self._corrupt(f"record {self._record_index} of the batch at offset "
                                        f"{self._batch.base_offset} has malformed headers or trailing bytes", offset)
                if offset < self.next_offset:
                    self._record_pos = r.end
                    self._records_left -= 1
                    self._record_index += 1
                    continue
                record = ConsumerRecord.__new__(ConsumerRecord)
                record.topic = self.topic
                record.partition = self.partition
                record.offset = offset
                if log_append:
                    record.timestamp_ms = self._batch.max_timestamp_ms
                    record.timestamp_type = 1
                else:
                    record.timestamp_ms = <int64_t>(<uint64_t>self._batch.base_timestamp_ms
                                                    + <uint64_t>r.timestamp_delta)
                if key_bytes >= 0:
                    record.key = PyBytes_FromStringAndSize(<const char*>key, key_bytes)
                if value_bytes >= 0:
                    record.value = PyBytes_FromStringAndSize(<const char*>value, value_bytes)
                if header_count:
                    try:
                        record._headers = _decode_headers(p, &headers_at, r.end, self._record_index, offset)
                    except CorruptRecordError as e:
                        raise self._wrapped(e) from None
                record._leader_epoch = self._batch.partition_leader_epoch
                PyList_Append(out, record)
                self._record_pos = r.end
                self._records_left -= 1
                self._record_index += 1
                self.next_offset = offset + 1
                taken += 1
            if self._records_left == 0:
                self._finish_batch()
        return 0


cdef list _aborted_list(object aborted_transactions):
    """[(first_offset, producer_id)] sorted by first offset, from the broker's (producer_id, first_offset) pairs or
    the protocol codec's {"producer_id", "first_offset"} dicts."""
    if aborted_transactions is None:
        return []
    out = []
    try:
        for item in aborted_transactions:
            if isinstance(item, dict):
                producer_id, first_offset = item["producer_id"], item["first_offset"]
            else:
                producer_id, first_offset = item
            out.append((int(first_offset), int(producer_id)))
    except (TypeError, ValueError, KeyError) as e:
        raise InvalidArgumentError(
            f"aborted_transactions must be a list of (producer_id, first_offset) pairs or None: {e}") from None
    out.sort()
    return out
