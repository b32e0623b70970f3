# The consumer's record decoder: one partition's records section of a Fetch answer, decoded lazily in offset order,
# into ConsumerRecord objects (records()) or straight into an ArrowBatchBuilder's column buffers (arrow_into(), no
# object per record; the builder and its columns: arrow.pyx).
# Rules: the records section is referenced, never copied (a compressed batch is decompressed once, by the
# decompress(codec, bytes-like) callable handed in); the readers of the wire format are the ones records.pyx
# decodes with (_read_batch_header, _batch_size, _read_record_head, _read_bytes_field); anything malformed raises
# CorruptRecordError naming topic, partition and offset; no I/O, no clock.
#
# Offsets: records below fetch_offset are skipped (a fetch answers whole batches), control batches are skipped, a
# trailing partial batch is ignored (answers are cut at max.partition.fetch.bytes). next_offset is the position after
# everything handed out or skipped: what the consumer fetches or commits next; last_epoch is the partition leader
# epoch of the batch it was reached in (-1: none), the epoch the consumer's position carries (KIP-320).
#
# read_committed (docs/consumer.md, "Decoding and read_committed"):
# - the broker sent a non-empty aborted-transaction list: Java's algorithm (CompletedFetch): an aborted (producer,
#   first offset) becomes active once a batch's last offset reaches first offset; a transactional batch of an active
#   producer is dropped; that producer's ABORT marker ends it.
# - no list, or an empty one (Tansu and librdkafka's mock cluster always send an empty one): decided from the markers
#   in this data, then those of markers_after (a fetcher's look-ahead past it). A transactional batch is delivered
#   when its producer's next marker after it is COMMIT, dropped when it is ABORT; with no marker yet, delivery stops
#   at the batch (blocked_on_open_transaction: look ahead from end_offset, or re-fetch from next_offset later).
# Control record (the one record of a control batch): key = version int16, type int16 (0 ABORT, 1 COMMIT).

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.list cimport PyList_Append
from cpython.bytearray cimport PyByteArray_AS_STRING


@cython.final
@cython.freelist(64)
@cython.no_gc  # holds str, bytes, ints and a list of (str, bytes) tuples: not tracked, so the cyclic GC never walks
# the records a caller keeps (that walk cost more than decoding). A cycle a caller builds through `headers` is not
# collected.
cdef class ConsumerRecord:
    """One record read from Kafka. timestamp_type: 0 CreateTime, 1 LogAppendTime (then every record of the batch
    carries the batch's max timestamp, as Java's consumer reports); leader_epoch is None when the batch has none."""


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


    def __init__(self, str topic not None, int32_t partition, object records not None, int64_t fetch_offset, *,
                 bint check_crcs, object decompress, bint read_committed=False, object aborted_transactions=None,
                 object markers_after=None):
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
        self.topic, self.partition, self._decompress = topic, partition, decompress
        self._topic_utf8 = topic.encode("utf-8")
        self._topic_utf8_ptr = <const unsigned char*>PyBytes_AS_STRING(self._topic_utf8)
        self._topic_bytes = len(self._topic_utf8)
        self.fetch_offset = self.next_offset = fetch_offset
        self.last_epoch = -1
        self.check_crcs, self.read_committed = check_crcs, read_committed
        # where the walk is (all zero/False again when __init__ runs twice)
        self._pos = self._batch_index = self._aborted_next = 0
        self._ended = self._in_batch = self._scanned = self.blocked_on_open_transaction = False
        self._aborted = _aborted_list(aborted_transactions) if read_committed else []
        self._aborting = set()
        self._markers_decide = read_committed and not self._aborted
        self._markers_after = _markers_list(markers_after)
        self._end_offset = fetch_offset
        self._walked = False

    def __dealloc__(self):
        self._release()

    cdef void _release(self) noexcept:
        """Lets go of the data (and of a decompressed section): nothing is left to read."""
        self._release_plain()
        self._in_batch = False
        self._data = NULL
        self.bytes_size = 0
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
        self._claim()
        try:
            return not self._ready()
        finally:
            self._busy = False

    cdef int _claim(self) except -1:
        if self._busy:
            raise KafkaError(f"PartitionFetch of topic {self.topic!r} partition {self.partition} is in use by another "
                             f"thread: use one from one thread at a time")
        self._busy = True
        return 0

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
            if last_offset >= self.next_offset:  # the position moves into or past this batch: its epoch
                self.last_epoch = self._batch.partition_leader_epoch
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
            if self._marker(p, size_bytes, &self._batch) == _CONTROL_ABORT:
                self._aborting.discard(self._batch.producer_id)
            return _DROP
        if self._batch.attributes & _ATTR_TRANSACTIONAL and self._batch.producer_id in self._aborting:
            return _DROP
        return _DELIVER

    cdef int _marker(self, const unsigned char* p, Py_ssize_t size_bytes, _BatchHeader* h) except -2:
        """ABORT, COMMIT or -1 (another control type) for the control batch at p (its header h)."""
        cdef int codec = h.attributes & _ATTR_CODEC_MASK
        cdef Py_buffer view
        cdef int kind
        if codec == 0:
            kind = _control_type(p + _HEADER_BYTES, size_bytes - _HEADER_BYTES)
        else:
            if codec > _MAX_CODEC or self._decompress is None:
                raise self._corrupt(f"control batch of codec {codec} cannot be read", h.base_offset)
            start = (p - self._data) + _HEADER_BYTES
            compressed = memoryview(self._records).cast("B")[start:(p - self._data) + size_bytes]
            try:
                plain = self._decompress(codec, compressed)
                PyObject_GetBuffer(plain, &view, PyBUF_SIMPLE)
            except Exception as e:
                raise self._corrupt(f"the control batch does not decompress (codec {codec}): {e!r}",
                                    h.base_offset) from e
            finally:
                compressed.release()
            kind = _control_type(<const unsigned char*>view.buf, view.len)
            PyBuffer_Release(&view)
        if kind == -2:
            raise self._corrupt("malformed control record", h.base_offset)
        return kind

    cdef list _walk_markers(self):
        """Every batch header of the data once, in order: [(producer_id, marker or -1, offset)], where marker is
        ABORT or COMMIT for a transaction marker (its CRC checked when check_crcs). Sets end_offset."""
        cdef const unsigned char* p
        cdef Py_ssize_t pos = 0, remaining, size_bytes
        cdef list walked = []
        cdef int kind
        cdef _BatchHeader h  # not _batch: the walk may come while a batch is being read
        while True:
            remaining = self.bytes_size - pos
            p = self._data + pos
            size_bytes = _batch_size(p, remaining, False)
            if size_bytes < 0:
                break  # the main walk stops or raises here too
            _read_batch_header(p, &h)
            kind = -1
            if h.attributes & _ATTR_CONTROL and h.producer_id >= 0:
                if self.check_crcs and _batch_size(p, remaining, True) < 0:
                    raise self._corrupt(_batch_problem(_BATCH_CRC, p, remaining), h.base_offset)
                kind = self._marker(p, size_bytes, &h)
            walked.append((h.producer_id, kind, h.base_offset))
            self._end_offset = max(self._end_offset,
                                   <int64_t>(<uint64_t>h.base_offset + <uint64_t>h.last_offset_delta)
                                   + 1)
            pos += size_bytes
        self._walked = True
        return walked

    cdef int _scan(self) except -1:
        """Markers decide: each transactional batch is decided by its producer's next marker after it, in this data
        or else in markers_after (COMMIT: deliver, ABORT: drop, none yet: block)."""
        cdef dict next_marker = {}
        cdef Py_ssize_t i
        cdef int kind
        self._scanned = True
        if not self._markers_decide:
            return 0
        for offset, producer_id, commit in sorted(self._markers_after, reverse=True):
            next_marker[producer_id] = _CONTROL_COMMIT if commit else _CONTROL_ABORT
        walked = self._walk_markers()
        decisions = bytearray(len(walked))
        for i in range(len(walked) - 1, -1, -1):
            producer_id, kind, _ = walked[i]
            if kind >= 0:
                next_marker[producer_id] = kind
            else:
                kind = next_marker.get(producer_id, _NO_MARKER)
                decisions[i] = _DELIVER if kind == _CONTROL_COMMIT else _DROP if kind == _CONTROL_ABORT else _BLOCK
        self._decisions = decisions
        return 0

    def transaction_markers(self):
        """The transaction markers in this data, [(offset, producer_id, commit)] in offset order: what a fetcher
        that looks ahead of a blocked partition passes on as markers_after. Reads batch headers only."""
        self._claim()
        try:
            return [(offset, producer_id, kind == _CONTROL_COMMIT)
                    for producer_id, kind, offset in self._walk_markers() if kind >= 0]
        finally:
            self._busy = False

    @property
    def end_offset(self):
        """The offset after the last whole batch of the data (fetch_offset when there is none): where a look-ahead
        fetch starts."""
        if not self._walked:
            self._claim()
            try:
                self._walk_markers()
            finally:
                self._busy = False
        return self._end_offset

    # ---- records ----------------------------------------------------------------------------------------------------

    cdef inline int _parse(self, _Fields* f) noexcept nogil:
        """The fields of the record at _record_pos of the current batch into f; -1 (with f.problem) if malformed."""
        cdef const unsigned char* p = self._section
        cdef Py_ssize_t pos = _read_record_head(p, self._record_pos, self._section_bytes, &f.head)
        if pos < 0:
            f.problem = pos
            f.field = _FIELD_HEAD
            return -1
        f.offset = <int64_t>(<uint64_t>self._batch.base_offset + <uint64_t>f.head.offset_delta)
        pos = _read_bytes_field(p, pos, f.head.end, &f.key, &f.key_bytes)
        if pos < 0:
            f.problem = pos
            f.field = _FIELD_KEY
            return -1
        pos = _read_bytes_field(p, pos, f.head.end, &f.value, &f.value_bytes)
        if pos < 0:
            f.problem = pos
            f.field = _FIELD_VALUE
            return -1
        f.headers_at = pos
        if _skip_headers(p, pos, f.head.end, &f.header_count) != f.head.end:
            f.field = _FIELD_HEADERS
            return -1
        return 0

    cdef inline void _consumed(self, _Fields* f, bint handed_out) noexcept nogil:
        """Moves past the record just parsed."""
        self._record_pos = f.head.end
        self._records_left -= 1
        self._record_index += 1
        if handed_out:
            self.next_offset = f.offset + 1

    cdef inline int64_t _timestamp_ms(self, _Fields* f, bint log_append) noexcept nogil:
        """The record's timestamp: the batch's max timestamp with LogAppendTime (every record carries it, as Java's
        consumer reports), else the batch's base timestamp + the record's delta (wrapping as Java's long sum)."""
        if log_append:
            return self._batch.max_timestamp_ms
        return <int64_t>(<uint64_t>self._batch.base_timestamp_ms + <uint64_t>f.head.timestamp_delta)

    cdef object _problem(self, _Fields* f):
        """The CorruptRecordError for a record _parse refused (or one whose header key is not UTF-8)."""
        cdef const unsigned char* p = self._section
        if f.field == _FIELD_HEAD:
            return self._wrapped(_record_problem(f.problem, self._record_index, &f.head, self._batch.base_offset))
        if f.field == _FIELD_KEY:
            return self._wrapped(_field_problem(f.problem, "key", f.key_bytes, f.head.end - (f.key - p), f.offset))
        if f.field == _FIELD_VALUE:
            return self._wrapped(_field_problem(f.problem, "value", f.value_bytes, f.head.end - (f.value - p),
                                                f.offset))
        if f.field == _FIELD_HEADER_KEY:
            return self._corrupt(f"a header key of record {self._record_index} is not UTF-8", f.offset)
        return self._corrupt(f"record {self._record_index} of the batch at offset {self._batch.base_offset} has "
                             f"malformed headers or trailing bytes", f.offset)

    def records(self, Py_ssize_t max_records):
        """Up to max_records ConsumerRecords, in offset order; [] when done. A CorruptRecordError comes after the
        records before it were handed out (the call that meets it returns those; the next one raises)."""
        cdef list out = []
        if max_records < 0:
            raise InvalidArgumentError(f"max_records must be >= 0, not {max_records}")
        self._claim()
        try:
            self._records_into(out, max_records)
        except CorruptRecordError:
            if out:  # hand out what came before it; nothing after it was consumed, so the next call raises it again
                return out
            raise
        finally:
            self._busy = False
        return out

    cdef int _records_into(self, list out, Py_ssize_t max_records) except -1:
        cdef Py_ssize_t taken = 0
        cdef _Fields f
        cdef ConsumerRecord record
        cdef bint log_append
        cdef Py_ssize_t headers_at
        while taken < max_records and self._ready():
            log_append = (self._batch.attributes & _ATTR_LOG_APPEND_TIME) != 0
            while taken < max_records and self._records_left > 0:
                if self._parse(&f) < 0:
                    raise self._problem(&f)
                if f.offset < self.next_offset:
                    self._consumed(&f, False)
                    continue
                record = ConsumerRecord.__new__(ConsumerRecord)
                record.topic = self.topic
                record.partition = self.partition
                record.offset = f.offset
                record.timestamp_ms = self._timestamp_ms(&f, log_append)
                record.timestamp_type = log_append
                if f.key_bytes >= 0:
                    record.key = PyBytes_FromStringAndSize(<const char*>f.key, f.key_bytes)
                if f.value_bytes >= 0:
                    record.value = PyBytes_FromStringAndSize(<const char*>f.value, f.value_bytes)
                if f.header_count:
                    headers_at = f.headers_at
                    try:
                        record._headers = _decode_headers(self._section, &headers_at, f.head.end,
                                                          self._record_index, f.offset)
                    except CorruptRecordError as e:
                        raise self._wrapped(e) from None
                record._leader_epoch = self._batch.partition_leader_epoch
                PyList_Append(out, record)
                self._consumed(&f, True)
                taken += 1
            if self._records_left == 0:
                self._finish_batch()
        return 0

    # ---- Arrow ------------------------------------------------------------------------------------------------------

    def arrow_into(self, ArrowBatchBuilder builder not None, Py_ssize_t max_records):
        """Appends up to max_records records to builder's columns, in offset order, with the GIL released while a
        batch is read; how many were appended (fewer than asked and not done: the builder is full, finish() it).
        Errors come as in records(): after what came before them was appended."""
        cdef Py_ssize_t appended = 0
        if max_records < 0:
            raise InvalidArgumentError(f"max_records must be >= 0, not {max_records}")
        if builder._busy:
            raise KafkaError("the ArrowBatchBuilder is in use by another thread: use one from one thread at a time")
        self._claim()
        builder._busy = True
        try:
            self._arrow_into(builder, max_records, &appended)
        except (CorruptRecordError, TimestampOverflowError):
            if appended:
                return appended
            raise
        finally:
            self._busy = builder._busy = False
        return appended

    cdef int _arrow_into(self, ArrowBatchBuilder builder, Py_ssize_t max_records, Py_ssize_t* appended) except -1:
        cdef _Fields f
        cdef int status
        while appended[0] < max_records and self._ready():
            with nogil:
                status = self._arrow_batch(&builder.c, max_records, builder.include_headers, appended, &f)
            if status == _ROW_FULL:
                return 0
            if status == _ROW_NO_MEMORY:
                raise MemoryError()
            if status == _ROW_BAD_HEADER_KEY:
                f.field = _FIELD_HEADER_KEY
                raise self._problem(&f)
            if status == _ROW_TIMESTAMP_RANGE:
                raise TimestampOverflowError(
                    f"topic {self.topic!r} partition {self.partition} offset {f.offset}: the record's timestamp "
                    f"{self._timestamp_ms(&f, (self._batch.attributes & _ATTR_LOG_APPEND_TIME) != 0)} ms is beyond "
                    f"what an Arrow timestamp[us] column holds (+-{_ARROW_MAX_TIMESTAMP_MS} ms): read it with "
                    f"poll(), or seek() past it (Spark's own Kafka source fails on it too)")
            if status != _ROW_OK:
                raise self._problem(&f)
            if self._records_left == 0:
                self._finish_batch()
        return 0

    cdef int _arrow_batch(self, _Columns* c, Py_ssize_t max_records, bint include_headers, Py_ssize_t* appended,
                          _Fields* f) noexcept nogil:
        """Appends the current batch's records (up to max_records in all) to c; a _ROW_* outcome, or _ROW_BAD_HEADERS
        with f describing a malformed record."""
        cdef bint log_append = (self._batch.attributes & _ATTR_LOG_APPEND_TIME) != 0
        cdef int timestamp_type = 1 if log_append else 0
        cdef Py_ssize_t rows = self._records_left
        cdef Py_ssize_t row
        cdef int64_t timestamp_ms
        cdef int status
        if rows > max_records - appended[0]:
            rows = max_records - appended[0]
        if _reserve_rows(c, rows, include_headers) < 0:
            return _ROW_NO_MEMORY
        while appended[0] < max_records and self._records_left > 0:
            if self._parse(f) < 0:
                return _ROW_BAD_HEADERS
            if f.offset < self.next_offset:
                self._consumed(f, False)
                continue
            timestamp_ms = self._timestamp_ms(f, log_append)
            if timestamp_ms > _ARROW_MAX_TIMESTAMP_MS or timestamp_ms < -_ARROW_MAX_TIMESTAMP_MS:
                return _ROW_TIMESTAMP_RANGE  # refused, never wrapped: f is the record, not consumed
            if (c.b[_KEY_DATA].size + f.head.length > INT32_MAX or c.b[_VALUE_DATA].size + f.head.length > INT32_MAX
                    or c.b[_TOPIC_DATA].size + self._topic_bytes > INT32_MAX
                    or c.b[_HEADER_KEY_DATA].size + f.head.length > INT32_MAX
                    or c.b[_HEADER_VALUE_DATA].size + f.head.length > INT32_MAX
                    or c.header_entries + f.header_count > INT32_MAX or c.rows == INT32_MAX):
                return _ROW_FULL
            if (_buf_reserve(&c.b[_KEY_DATA], f.key_bytes) or _buf_reserve(&c.b[_VALUE_DATA], f.value_bytes)
                    or _buf_reserve(&c.b[_TOPIC_DATA], self._topic_bytes)):
                return _ROW_NO_MEMORY
            if include_headers and f.header_count:
                status = _append_headers(c, self._section, f.headers_at, f.head.end, f.header_count)
                if status != _ROW_OK:
                    return status
            row = c.rows
            _put_bit(&c.b[_KEY_VALID], row, f.key_bytes >= 0)
            if f.key_bytes < 0:
                c.key_nulls += 1
                f.key_bytes = 0
            _put_span(&c.b[_KEY_OFFSETS], &c.b[_KEY_DATA], f.key, f.key_bytes)
            _put_bit(&c.b[_VALUE_VALID], row, f.value_bytes >= 0)
            if f.value_bytes < 0:
                c.value_nulls += 1
                f.value_bytes = 0
            _put_span(&c.b[_VALUE_OFFSETS], &c.b[_VALUE_DATA], f.value, f.value_bytes)
            _put_span(&c.b[_TOPIC_OFFSETS], &c.b[_TOPIC_DATA], self._topic_utf8_ptr, self._topic_bytes)
            _put_i32(&c.b[_PARTITION], self.partition)
            _put_i64(&c.b[_OFFSET], f.offset)
            _put_i64(&c.b[_TIMESTAMP], timestamp_ms * 1000)
            _put_i32(&c.b[_TIMESTAMP_TYPE], timestamp_type)
            if include_headers:
                _put_bit(&c.b[_HEADERS_VALID], row, f.header_count > 0)
                if f.header_count == 0:
                    c.headers_nulls += 1
                _put_i32(&c.b[_HEADERS_OFFSETS], <int32_t>c.header_entries)
            c.rows += 1
            self._consumed(f, True)
            appended[0] += 1
        return _ROW_OK


cdef list _markers_list(object markers):
    """[(offset, producer_id, commit)] from transaction_markers() answers."""
    if markers is None:
        return []
    try:
        return [(int(offset), int(producer_id), bool(commit)) for offset, producer_id, commit in markers]
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(
            f"markers_after must be a list of (offset, producer_id, commit) from transaction_markers(): {e}") from None


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
