"""The consumer's record decoder (core/fetch.pyx): PartitionFetch over one partition's records section.

Byte fixtures come from our own RecordBatchBuilder (base offsets and control attributes patched in, CRC redone);
broker tests read what confluent-kafka's producer wrote through a raw Fetch and compare with confluent-kafka's
consumer (cykafka.verify.read_back)."""

from __future__ import annotations

import importlib.util
import pickle
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from cykafka.adapters.compression import compressor_for, decompress
from cykafka.arrow_schema import kafka_source_schema
from cykafka.broker import EmbeddedBroker, _recv_exact
from cykafka.core import ArrowBatchBuilder, ConsumerRecord, PartitionFetch, RecordBatchBuilder, crc32c
from cykafka.errors import CorruptRecordError, InvalidArgumentError, MissingDependencyError
from cykafka.protocol import decode_response, encode_request

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TS = 1_700_000_000_000
Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]


def batch(base_offset: int, records: Iterable[Record], *, codec: str = "none", producer_id: int = -1,
          transactional: bool = False, log_append_time: bool = False, leader_epoch: int = -1,
          timestamp_ms: int = TS) -> bytes:
    """A RecordBatch v2 at base_offset (records get consecutive offsets, timestamps TS, TS+1, ...)."""
    compressor = compressor_for(codec)
    builder = RecordBatchBuilder(bytearray(1 << 16), 1 << 20, compressor.codec_id if compressor else 0,
                                 log_append_time=log_append_time)
    for i, (key, value, headers) in enumerate(records):
        assert builder.try_append(timestamp_ms + i, key, value, headers)
    out = bytearray(builder.close(compressor, producer_id, 0 if producer_id >= 0 else -1,
                                  0 if producer_id >= 0 else -1, transactional))
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, 12, leader_epoch)
    return bytes(out)


def control(offset: int, producer_id: int, commit: bool) -> bytes:
    """A transaction marker: a control batch of one record, key (version 0, type 0 ABORT / 1 COMMIT)."""
    raw = bytearray(batch(offset, [(struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, 0), None)],
                          producer_id=producer_id, transactional=True))
    struct.pack_into(">h", raw, 21, struct.unpack_from(">h", raw, 21)[0] | 0x20)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def values(n: int, start: int = 0) -> list[Record]:
    return [(b"k%d" % i, b"v%d" % i, None) for i in range(start, start + n)]


def fetch(data: bytes, fetch_offset: int = 0, **kwargs: Any) -> PartitionFetch:
    kwargs.setdefault("check_crcs", True)
    kwargs.setdefault("decompress", decompress)
    return PartitionFetch("t", 3, data, fetch_offset, **kwargs)


def drain(part: PartitionFetch, step: int = 1000) -> list[ConsumerRecord]:
    out: list[ConsumerRecord] = []
    for _ in range(10_000):
        got = part.records(step)
        if not got:
            return out
        out += got
    raise AssertionError("records() never ran dry")


def offsets(records: list[ConsumerRecord]) -> list[int]:
    return [r.offset for r in records]


# ---- ConsumerRecord ------------------------------------------------------------------------------------------------

def test_consumer_record_fields_equality_repr_and_pickle() -> None:
    record = ConsumerRecord("t", 1, 5, TS, 0, b"k", None, [("h", b"x")], 7)
    assert (record.topic, record.partition, record.offset, record.timestamp_ms, record.timestamp_type) == \
        ("t", 1, 5, TS, 0)
    assert (record.key, record.value, record.headers, record.leader_epoch) == (b"k", None, [("h", b"x")], 7)
    assert record == ConsumerRecord("t", 1, 5, TS, 0, b"k", None, [("h", b"x")], 7)
    for other in (ConsumerRecord("t", 1, 5, TS, 0, b"k", None, [("h", b"y")], 7),
                  ConsumerRecord("t", 1, 5, TS, 0, b"k", None, [("h", b"x")], None),
                  ConsumerRecord("t", 1, 5, TS, 1, b"k", None, [("h", b"x")], 7),
                  ConsumerRecord("u", 1, 5, TS, 0, b"k", None, [("h", b"x")], 7)):
        assert record != other
    assert "offset=5" in repr(record) and "leader_epoch=7" in repr(record)
    assert pickle.loads(pickle.dumps(record)) == record
    assert ConsumerRecord("t", 0, 0, 0).headers == [] and ConsumerRecord("t", 0, 0, 0).leader_epoch is None
    with pytest.raises(AttributeError):
        record.offset = 6  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(record)


# ---- read_uncommitted ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_records_of_every_codec_with_headers_and_nulls(codec: str) -> None:
    first = [(b"k0", b"v0", [("a", b"1"), ("b", None)]), (None, b"v1", None), (b"k2", None, [("\u00e9", b"")]),
             (None, None, None)]
    data = batch(10, first, codec=codec, leader_epoch=4) + batch(14, values(3, 14), codec=codec)
    part = fetch(data, 10)
    got = drain(part, 2)
    assert got == [
        ConsumerRecord("t", 3, 10, TS, 0, b"k0", b"v0", [("a", b"1"), ("b", None)], 4),
        ConsumerRecord("t", 3, 11, TS + 1, 0, None, b"v1", None, 4),
        ConsumerRecord("t", 3, 12, TS + 2, 0, b"k2", None, [("\u00e9", b"")], 4),
        ConsumerRecord("t", 3, 13, TS + 3, 0, None, None, None, 4),
        ConsumerRecord("t", 3, 14, TS, 0, b"k14", b"v14", None, None),
        ConsumerRecord("t", 3, 15, TS + 1, 0, b"k15", b"v15", None, None),
        ConsumerRecord("t", 3, 16, TS + 2, 0, b"k16", b"v16", None, None),
    ]
    assert part.next_offset == 17 and part.done and part.bytes_size == len(data)


def test_log_append_time_gives_every_record_the_batch_max_timestamp() -> None:
    raw = bytearray(batch(0, values(3), log_append_time=True))
    struct.pack_into(">q", raw, 35, TS + 999)  # the broker sets maxTimestamp to its append time
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    got = drain(fetch(bytes(raw)))
    assert [(r.timestamp_ms, r.timestamp_type) for r in got] == [(TS + 999, 1)] * 3


def test_fetch_offset_in_the_middle_of_a_batch_skips_the_records_before_it() -> None:
    data = batch(0, values(5)) + batch(5, values(5, 5))
    part = fetch(data, 3)
    assert offsets(part.records(3)) == [3, 4, 5]
    assert part.next_offset == 6
    assert offsets(drain(part)) == [6, 7, 8, 9]
    assert offsets(drain(fetch(data, 7))) == [7, 8, 9]
    whole_batch_below = fetch(data, 5)
    assert offsets(drain(whole_batch_below)) == [5, 6, 7, 8, 9]


def test_max_records_and_next_offset_step_by_step() -> None:
    part = fetch(batch(0, values(3)) + batch(3, values(2, 3)))
    assert part.records(0) == [] and part.next_offset == 0 and not part.done
    assert offsets(part.records(2)) == [0, 1] and part.next_offset == 2
    assert offsets(part.records(1)) == [2] and part.next_offset == 3  # batch end reached: moved past it
    assert offsets(part.records(5)) == [3, 4] and part.next_offset == 5 and part.done
    assert part.records(5) == []
    with pytest.raises(InvalidArgumentError, match="max_records"):
        part.records(-1)


def test_a_trailing_partial_batch_is_ignored() -> None:
    whole = batch(0, values(3))
    cut = batch(3, values(4, 3))
    for keep in (1, 11, 12, 40, 61, len(cut) - 1):
        part = fetch(whole + cut[:keep])
        assert offsets(drain(part)) == [0, 1, 2]
        assert part.next_offset == 3 and part.done and not part.blocked_on_open_transaction
    assert drain(fetch(b"")) == [] and fetch(b"").next_offset == 0


def test_control_batches_are_skipped_and_counted_past() -> None:
    data = batch(0, values(2), producer_id=7, transactional=True) + control(2, 7, True) + batch(3, values(1, 3))
    part = fetch(data)
    assert offsets(drain(part)) == [0, 1, 3]
    assert part.next_offset == 4
    ending_in_marker = fetch(batch(0, values(2)) + control(2, 7, False))
    assert offsets(drain(ending_in_marker)) == [0, 1] and ending_in_marker.next_offset == 3


def test_last_epoch_is_the_leader_epoch_of_the_batch_the_position_was_reached_in() -> None:
    """KIP-320: a consumer's position carries the leader epoch of the batch it is in (Java's CompletedFetch
    lastEpoch), also of a marker it moved past; -1 before anything was read and for a batch without an epoch."""
    data = batch(10, values(4, 10), leader_epoch=3) + batch(14, values(2, 14), leader_epoch=5) + batch(16, values(1))
    part = fetch(data, 12)
    assert part.last_epoch == -1
    assert offsets(part.records(1)) == [12] and (part.next_offset, part.last_epoch) == (13, 3)
    assert offsets(part.records(2)) == [13, 14] and (part.next_offset, part.last_epoch) == (15, 5)
    assert offsets(part.records(9)) == [15, 16] and (part.next_offset, part.last_epoch) == (17, -1)
    marker = bytearray(control(2, 7, True))
    struct.pack_into(">i", marker, 12, 6)  # the partition leader epoch is outside the CRC
    ending_in_marker = fetch(batch(0, values(2), producer_id=7, transactional=True, leader_epoch=4) + bytes(marker))
    assert offsets(drain(ending_in_marker)) == [0, 1]
    assert (ending_in_marker.next_offset, ending_in_marker.last_epoch) == (3, 6)


def test_compacted_batch_tail_moves_next_offset_to_the_batch_end() -> None:
    raw = bytearray(batch(0, values(2)))
    struct.pack_into(">i", raw, 23, 4)  # lastOffsetDelta 4: offsets 2-4 were compacted away
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    part = fetch(bytes(raw))
    assert offsets(part.records(2)) == [0, 1] and part.next_offset == 5


def test_records_section_is_referenced_from_any_buffer() -> None:
    data = batch(0, values(3), codec="lz4")
    for holder in (bytearray(data), memoryview(data), memoryview(b"xx" + data)[2:]):
        assert offsets(drain(fetch(holder))) == [0, 1, 2]  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="records must be"):
        PartitionFetch("t", 0, "text", 0, check_crcs=True, decompress=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="decompress"):
        PartitionFetch("t", 0, data, 0, check_crcs=True, decompress=5)  # type: ignore[arg-type]


def test_a_fetch_or_builder_in_use_refuses_a_second_caller() -> None:
    """A call may release the GIL (CRC, Arrow decode): another thread stepping in is refused. Shown re-entrantly,
    from the decompress callback, which runs while the call is under way."""
    data = batch(0, values(2), codec="lz4")
    builder = ArrowBatchBuilder(kafka_source_schema())
    part: PartitionFetch

    def reentrant(codec_id: int, compressed: Any) -> bytes:
        part.records(1)
        return decompress(codec_id, compressed)

    part = fetch(data, decompress=reentrant)
    with pytest.raises(CorruptRecordError, match="in use by another thread"):
        part.records(1)

    def finishing(codec_id: int, compressed: Any) -> bytes:
        builder.finish()
        return decompress(codec_id, compressed)

    if importlib.util.find_spec("pyarrow"):
        with pytest.raises(CorruptRecordError, match="being filled by another thread"):
            fetch(data, decompress=finishing).arrow_into(builder, 1)
    assert offsets(drain(fetch(data))) == [0, 1]  # nothing stays claimed after an error
    fresh = fetch(data)
    assert fresh.arrow_into(builder, 5) == 2 and fresh.done


def test_a_failed_second_init_leaves_nothing_to_read() -> None:
    part = fetch(batch(0, values(3)))
    assert offsets(part.records(1)) == [0]
    with pytest.raises(InvalidArgumentError):
        part.__init__("t", 3, "not bytes", 0, check_crcs=True, decompress=None)  # type: ignore[misc, arg-type]
    assert part.records(10) == [] and part.done and part.bytes_size == 0
    bare = PartitionFetch.__new__(PartitionFetch)
    assert bare.records(10) == [] and bare.done


# ---- corruption ---------------------------------------------------------------------------------------------------

def test_crc_mismatch_names_topic_partition_and_offset() -> None:
    good = batch(0, values(2))
    bad = bytearray(batch(2, values(2, 2)))
    bad[-2] ^= 0x01  # the last value's last byte: "v3" -> "v2"
    part = fetch(good + bytes(bad))
    assert offsets(part.records(10)) == [0, 1]  # what came before is handed out first
    with pytest.raises(CorruptRecordError, match=r"topic 't' partition 3 offset 2: .*CRC32C"):
        part.records(10)
    assert part.next_offset == 2
    with pytest.raises(CorruptRecordError):  # and again: nothing past it was consumed
        part.records(10)
    unchecked = fetch(good + bytes(bad), check_crcs=False)
    assert [r.value for r in drain(unchecked)] == [b"v0", b"v1", b"v2", b"v2"]


def test_malformed_records_raise_corrupt_record_error() -> None:
    good = bytearray(batch(0, values(3)))
    cases = {
        "record length": (61, b"\x7f"),
        "magic": (16, b"\x01"),
        "count": (57, struct.pack(">i", 1000)),
        "codec": (22, bytes([good[22] | 0x07])),
    }
    for name, (at, patch) in cases.items():
        raw = bytearray(good)
        raw[at:at + len(patch)] = patch
        struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
        with pytest.raises(CorruptRecordError, match="topic 't' partition 3"):
            drain(fetch(bytes(raw)))
        assert name
    short = bytearray(good)
    struct.pack_into(">i", short, 8, 10)  # batchLength below the header's
    with pytest.raises(CorruptRecordError, match="smaller than the header"):
        drain(fetch(bytes(short)))
    compressed = batch(0, values(3), codec="lz4")
    with pytest.raises(CorruptRecordError, match="no decompress"):
        drain(fetch(compressed, decompress=None))
    garbled = bytearray(compressed)
    garbled[70:80] = b"\xff" * 10
    with pytest.raises(CorruptRecordError, match="offset 0: lz4 data is corrupt"):
        drain(fetch(bytes(garbled), check_crcs=False))


def test_non_utf8_header_key_is_corrupt() -> None:
    raw = bytearray(batch(0, [(b"k", b"v", [("ab", b"x")])]))
    at = raw.index(b"ab")
    raw[at:at + 2] = b"\xff\xfe"
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    with pytest.raises(CorruptRecordError, match="UTF-8"):
        drain(fetch(bytes(raw)))


# ---- read_committed ------------------------------------------------------------------------------------------------

def committed(data: bytes, aborted: list[tuple[int, int]] | None = None, fetch_offset: int = 0,
              **kwargs: Any) -> PartitionFetch:
    return fetch(data, fetch_offset, read_committed=True, aborted_transactions=aborted, **kwargs)


def interleaved() -> bytes:
    """Producers 1 (committed, offsets 0-1 and 4), 2 (aborted, 2-3), non-transactional 6, markers at 5 and 7."""
    return (batch(0, values(2), producer_id=1, transactional=True)
            + batch(2, values(2, 2), producer_id=2, transactional=True)
            + batch(4, values(1, 4), producer_id=1, transactional=True)
            + control(5, 2, False)
            + batch(6, values(1, 6))
            + control(7, 1, True))


@pytest.mark.parametrize("aborted", [None, [], [(2, 2)]])
def test_read_committed_drops_aborted_and_delivers_committed(aborted: list[tuple[int, int]] | None) -> None:
    part = committed(interleaved(), aborted)
    assert offsets(drain(part)) == [0, 1, 4, 6]
    assert part.next_offset == 8 and part.done and not part.blocked_on_open_transaction


def test_read_uncommitted_sees_every_data_record() -> None:
    assert offsets(drain(fetch(interleaved()))) == [0, 1, 2, 3, 4, 6]


def test_the_brokers_aborted_list_is_trusted_when_it_has_entries() -> None:
    # Java's algorithm: producer 1's batches from offset 0 on are aborted by the list, whatever the markers say
    part = committed(interleaved(), [(1, 0)])
    assert offsets(drain(part)) == [2, 3, 6]
    dict_form = committed(interleaved(), [{"producer_id": 2, "first_offset": 2}])  # type: ignore[list-item]
    assert offsets(drain(dict_form)) == [0, 1, 4, 6]
    with pytest.raises(InvalidArgumentError, match="aborted_transactions"):
        committed(interleaved(), [(1,)])  # type: ignore[list-item]


def test_an_abort_marker_ends_the_listed_transaction() -> None:
    data = (batch(0, values(2), producer_id=1, transactional=True) + control(2, 1, False)
            + batch(3, values(1, 3), producer_id=1, transactional=True) + control(4, 1, True))
    assert offsets(drain(committed(data, [(1, 0)]))) == [3]
    assert offsets(drain(committed(data, [(1, 0), (1, 3)]))) == []


def test_an_open_transaction_blocks_delivery_at_its_first_batch() -> None:
    data = (batch(0, values(1))
            + batch(1, values(2, 1), producer_id=5, transactional=True)  # no marker in this data: open
            + batch(3, values(1, 3), producer_id=6, transactional=True)
            + control(4, 6, True)
            + batch(5, values(1, 5)))
    part = committed(data)
    assert offsets(drain(part)) == [0]
    assert part.blocked_on_open_transaction and part.done and part.next_offset == 1
    # the next fetch from there sees producer 5's marker: everything is decided
    later = committed(data[len(batch(0, values(1))):] + control(6, 5, True), fetch_offset=1)
    assert offsets(drain(later)) == [1, 2, 3, 5] and later.next_offset == 7
    assert not later.blocked_on_open_transaction


def test_a_second_transaction_of_the_same_producer_is_decided_by_its_own_marker() -> None:
    data = (batch(0, values(1), producer_id=1, transactional=True) + control(1, 1, False)
            + batch(2, values(1, 2), producer_id=1, transactional=True) + control(3, 1, True)
            + batch(4, values(1, 4), producer_id=1, transactional=True))
    part = committed(data)
    assert offsets(drain(part)) == [2]
    assert part.blocked_on_open_transaction and part.next_offset == 4


def test_looking_ahead_decides_a_transaction_whose_marker_is_past_the_data() -> None:
    held = (batch(0, values(1)) + batch(1, values(2, 1), producer_id=5, transactional=True)
            + batch(3, values(1, 3), producer_id=6, transactional=True))
    part = committed(held)
    assert offsets(drain(part)) == [0] and part.blocked_on_open_transaction and part.end_offset == 4
    ahead = committed(batch(4, values(1, 4)) + control(5, 6, False) + control(6, 5, True) + control(7, 5, False))
    assert ahead.transaction_markers() == [(5, 6, False), (6, 5, True), (7, 5, False)] and ahead.end_offset == 8
    again = committed(held, fetch_offset=part.next_offset, markers_after=ahead.transaction_markers())
    assert offsets(drain(again)) == [1, 2] and not again.blocked_on_open_transaction and again.next_offset == 4
    partly = committed(held, fetch_offset=1, markers_after=[(6, 5, True)])  # producer 6 still undecided
    assert offsets(drain(partly)) == [1, 2] and partly.blocked_on_open_transaction and partly.next_offset == 3
    with pytest.raises(InvalidArgumentError, match="markers_after"):
        committed(held, markers_after=[(1, 2)])  # type: ignore[list-item]


def test_end_offset_and_markers_leave_the_walk_alone() -> None:
    data = batch(0, values(3)) + control(3, 1, True) + batch(4, values(2, 4))
    part = fetch(data + batch(6, values(5, 6))[:50])  # a partial batch at the end does not count
    assert offsets(part.records(2)) == [0, 1]
    assert part.end_offset == 6 and part.transaction_markers() == [(3, 1, True)]
    assert offsets(drain(part)) == [2, 4, 5]
    assert fetch(b"", 9).end_offset == 9


def test_blocked_never_moves_next_offset_back() -> None:
    data = batch(0, values(4), producer_id=5, transactional=True)
    part = committed(data, fetch_offset=2)
    assert drain(part) == [] and part.blocked_on_open_transaction and part.next_offset == 2


def test_corrupt_marker_is_an_error_before_anything_it_decides_is_handed_out() -> None:
    raw = bytearray(control(1, 1, True))
    raw[-1] ^= 1
    data = batch(0, values(1), producer_id=1, transactional=True) + bytes(raw)
    with pytest.raises(CorruptRecordError, match="offset 1"):
        committed(data).records(10)


# ---- Arrow -------------------------------------------------------------------------------------------------------

def spark_schema(include_headers: bool = True) -> Any:
    """Spark's Kafka source schema (KafkaRecordToRowConverter) as pyspark turns it into Arrow."""
    pytest.importorskip("pyspark")
    from pyspark.sql import types as t
    from pyspark.sql.pandas.types import to_arrow_schema

    fields = [t.StructField("key", t.BinaryType()), t.StructField("value", t.BinaryType()),
              t.StructField("topic", t.StringType()), t.StructField("partition", t.IntegerType()),
              t.StructField("offset", t.LongType()), t.StructField("timestamp", t.TimestampType()),
              t.StructField("timestampType", t.IntegerType())]
    if include_headers:
        fields.append(t.StructField("headers", t.ArrayType(t.StructType([t.StructField("key", t.StringType()),
                                                                       t.StructField("value", t.BinaryType())]))))
    return to_arrow_schema(t.StructType(fields), timezone="UTC")


def rows_of(records: list[ConsumerRecord], include_headers: bool = True) -> list[dict[str, Any]]:
    """What the Arrow batch should hold for these records (headers null when a record has none, as Spark gives)."""
    import datetime

    rows = []
    for r in records:
        row = {"key": r.key, "value": r.value, "topic": r.topic, "partition": r.partition, "offset": r.offset,
               "timestamp": datetime.datetime.fromtimestamp(r.timestamp_ms / 1000, datetime.UTC),
               "timestampType": r.timestamp_type}
        if include_headers:
            row["headers"] = [{"key": k, "value": v} for k, v in r.headers] or None
        rows.append(row)
    return rows


MIXED = [(b"k0", b"v0", [("a", b"1"), ("b", None)]), (None, b"v1", None), (b"k2", None, [("\u00e9", b"")]),
         (None, None, None)]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("include_headers", [True, False])
def test_arrow_batch_equals_the_records(codec: str, include_headers: bool) -> None:
    pa = pytest.importorskip("pyarrow")
    data = (batch(10, MIXED, codec=codec, leader_epoch=2) + batch(14, values(5, 14), codec=codec)
            + control(19, 1, True) + batch(20, values(2, 20), codec=codec, log_append_time=True))
    records = drain(fetch(data, 11))
    builder = ArrowBatchBuilder(kafka_source_schema(include_headers))
    part = fetch(data, 11)
    counts = [part.arrow_into(builder, 3) for _ in range(5)]
    assert sum(counts) == len(records) == 10 and len(builder) == 10 and counts[-1] == 0
    assert part.next_offset == 22 and part.done
    got = builder.finish()
    assert isinstance(got, pa.RecordBatch)
    assert got.schema == spark_schema(include_headers)
    got.validate(full=True)
    assert got.to_pylist() == rows_of(records, include_headers)
    assert len(builder) == 0
    empty = builder.finish()
    assert empty.num_rows == 0 and empty.schema == got.schema


def test_arrow_builder_collects_several_partitions_and_starts_over_after_finish() -> None:
    pytest.importorskip("pyarrow")
    builder = ArrowBatchBuilder(kafka_source_schema())
    one = PartitionFetch("one", 0, batch(0, values(3)), 0, check_crcs=True, decompress=None)
    two = PartitionFetch("two-\u00e9", 7, batch(5, MIXED, codec="zstd"), 6, check_crcs=True, decompress=decompress)
    assert one.arrow_into(builder, 100) == 3 and two.arrow_into(builder, 100) == 3
    first = builder.finish().to_pylist()
    assert [(r["topic"], r["partition"], r["offset"]) for r in first] == \
        [("one", 0, 0), ("one", 0, 1), ("one", 0, 2), ("two-\u00e9", 7, 6), ("two-\u00e9", 7, 7), ("two-\u00e9", 7, 8)]
    again = PartitionFetch("one", 0, batch(3, values(1, 3)), 3, check_crcs=True, decompress=None)
    assert again.arrow_into(builder, 10) == 1
    assert builder.finish().to_pylist() == rows_of([ConsumerRecord("one", 0, 3, TS, 0, b"k3", b"v3")])


def test_arrow_errors_match_records() -> None:
    pytest.importorskip("pyarrow")
    good = batch(0, values(2))
    bad = bytearray(batch(2, values(2, 2)))
    bad[-2] ^= 1
    builder = ArrowBatchBuilder(kafka_source_schema())
    part = fetch(good + bytes(bad))
    assert part.arrow_into(builder, 10) == 2
    with pytest.raises(CorruptRecordError, match=r"topic 't' partition 3 offset 2: .*CRC32C"):
        part.arrow_into(builder, 10)
    raw = bytearray(batch(0, [(b"k", b"v", [("ab", b"x")])]))
    at = raw.index(b"ab")
    raw[at:at + 2] = b"\xc3\x28"  # not UTF-8
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    with pytest.raises(CorruptRecordError, match="not UTF-8"):
        fetch(bytes(raw)).arrow_into(builder, 10)
    assert len(builder) == 2 and builder.finish().num_rows == 2
    # no header column: header keys are not read
    no_headers = ArrowBatchBuilder(kafka_source_schema(include_headers=False))
    assert fetch(bytes(raw)).arrow_into(no_headers, 10) == 1
    with pytest.raises(InvalidArgumentError, match="max_records"):
        fetch(good).arrow_into(builder, -1)


def test_the_builder_takes_the_schema_of_its_columns() -> None:
    pa = pytest.importorskip("pyarrow")
    assert ArrowBatchBuilder(kafka_source_schema()).include_headers
    assert not ArrowBatchBuilder(kafka_source_schema(False)).include_headers
    assert ArrowBatchBuilder(kafka_source_schema()).finish().schema == kafka_source_schema() == spark_schema()
    with pytest.raises(InvalidArgumentError, match="key, value, topic, partition, offset, timestamp, timestampType"):
        ArrowBatchBuilder(pa.schema([pa.field("value", pa.binary())]))


def test_finish_without_pyarrow_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    pytest.importorskip("pyarrow")
    builder = ArrowBatchBuilder(kafka_source_schema())
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"cykafka\[spark\]"):
        builder.finish()


def test_utf8_rules_of_header_keys_in_arrow() -> None:
    pytest.importorskip("pyarrow")
    keys = ["a", "\u00e9", "\u20ac", "\U0001f600", "\uffff"]
    data = batch(0, [(None, None, [(k, b"v") for k in keys])])
    builder = ArrowBatchBuilder(kafka_source_schema())
    assert fetch(data).arrow_into(builder, 1) == 1
    assert [h["key"] for h in builder.finish().column("headers")[0].as_py()] == keys
    for invalid in (b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80a"):
        raw = bytearray(batch(0, [(None, None, [("x" * len(invalid), b"v")])]))
        at = raw.index(b"x" * len(invalid))
        raw[at:at + len(invalid)] = invalid
        struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
        with pytest.raises(CorruptRecordError, match="UTF-8"):
            fetch(bytes(raw)).arrow_into(ArrowBatchBuilder(kafka_source_schema()), 1)
        with pytest.raises(CorruptRecordError, match="UTF-8"):
            fetch(bytes(raw)).records(1)


# ---- against the broker -------------------------------------------------------------------------------------------

def raw_fetch(bootstrap: str, topic: str, partition: int, offset: int, *, isolation_level: int = 0,
              version: int = 11, max_bytes: int = 50 << 20) -> dict[str, Any]:
    """One Fetch for one partition, answered partition entry (records, aborted_transactions, ...)."""
    host, port = bootstrap.rsplit(":", 1)
    body = {"max_wait_ms": 200, "min_bytes": 1, "max_bytes": max_bytes, "isolation_level": isolation_level,
            "session_id": 0, "session_epoch": -1, "rack_id": "",
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                        "partition_max_bytes": max_bytes}]}],
            "forgotten_topics_data": []}
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(encode_request(1, version, 1, "test-fetch-decode", body))
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        _, answer = decode_response(1, version, _recv_exact(sock, size))
    (topic_answer,) = answer["responses"]
    (entry,) = topic_answer["partitions"]
    assert entry["error_code"] == 0, entry
    return dict(entry)


def _batch_spans(records: bytes) -> list[tuple[int, int]]:
    """(first offset, last offset) of each RecordBatch v2 in a Fetch answer's records."""
    spans, at = [], 0
    while at + 27 <= len(records):
        base, length = struct.unpack_from(">qi", records, at)
        (last_delta,) = struct.unpack_from(">i", records, at + 23)  # after epoch, magic, crc, attributes
        spans.append((base, base + last_delta))
        at += 12 + length
    return spans


def read_partition(bootstrap: str, topic: str, partition: int, *, read_committed: bool = False,
                   fetch_bytes: int = 50 << 20, version: int = 11,
                   aborted: Callable[[dict[str, Any]], Any] | None = None) -> list[ConsumerRecord]:
    """Every record of a partition through raw Fetches decoded by PartitionFetch, to the high watermark."""
    out: list[ConsumerRecord] = []
    position = 0
    for _ in range(1000):
        entry = raw_fetch(bootstrap, topic, partition, position, isolation_level=int(read_committed),
                          max_bytes=fetch_bytes, version=version)
        part = PartitionFetch(topic, partition, entry["records"] or b"", position, check_crcs=True,
                              decompress=decompress, read_committed=read_committed,
                              aborted_transactions=aborted(entry) if aborted else entry["aborted_transactions"])
        out += drain(part, 7)
        position = part.next_offset
        if position >= entry["high_watermark"]:
            return out
        if part.blocked_on_open_transaction:
            time.sleep(0.05)
    raise AssertionError(f"{topic}-{partition} did not reach its high watermark")


def as_seen(records: list[ConsumerRecord]) -> list[tuple[Any, ...]]:
    return [(r.partition, r.offset, r.timestamp_ms, r.key, r.value, r.headers) for r in records]


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_batches_read_back_equal(broker: Any, codec: str) -> None:
    from confluent_kafka import Producer

    from cykafka.verify import read_back

    topic = f"fetch-decode-{codec}-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec, "linger.ms": 20,
                         "batch.num.messages": 50})
    for i in range(300):
        producer.produce(topic, key=None if i % 7 == 0 else b"key-%d" % i,
                         value=None if i % 11 == 0 else b"value-%d " % i * (i % 5),
                         headers=[("h", b"%d" % i), ("empty", b""), ("none", None)] if i % 3 == 0 else None,
                         partition=i % 2, timestamp=TS + i)
    assert producer.flush(30) == 0
    expected = read_back(broker.bootstrap_servers, topic)
    ours = [r for p in (0, 1) for r in read_partition(broker.bootstrap_servers, topic, p)]
    assert len(ours) == 300
    assert as_seen(ours) == [(r.partition, r.offset, r.timestamp_ms, r.key, r.value, r.headers) for r in expected]
    assert all(r.topic == topic and r.timestamp_type == 0 for r in ours)
    # a Fetch from the middle of a batch (how the producer batched the records is its business: find one)
    base, _ = next(span for span in _batch_spans(raw_fetch(broker.bootstrap_servers, topic, 0, 0)["records"])
                      if span[1] > span[0])
    entry = raw_fetch(broker.bootstrap_servers, topic, 0, base + 1)
    first = PartitionFetch(topic, 0, entry["records"], base + 1, check_crcs=True, decompress=decompress)
    assert first.records(1)[0].offset == base + 1 and int.from_bytes(entry["records"][:8], "big") == base
    if importlib.util.find_spec("pyarrow"):
        builder = ArrowBatchBuilder(kafka_source_schema())
        for p in (0, 1):
            entry = raw_fetch(broker.bootstrap_servers, topic, p, 0)
            part = PartitionFetch(topic, p, entry["records"], 0, check_crcs=True, decompress=decompress)
            while part.arrow_into(builder, 64):
                pass
        assert builder.finish().to_pylist() == rows_of(ours)


def test_transactions_on_the_broker_read_committed(broker: Any) -> None:
    """Kafka sends its aborted-transaction list; Tansu an empty one (and cuts read_committed answers at the last stable
    offset), so there the markers decide. Both paths over the same log agree: aborted records never appear, committed
    and plain ones do, an open transaction blocks."""
    from confluent_kafka import Producer

    bootstrap = broker.bootstrap_servers
    topic = f"fetch-decode-tx-{uuid.uuid4().hex[:8]}"
    config = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    first = Producer({**config, "transactional.id": f"{topic}-a"})
    second = Producer({**config, "transactional.id": f"{topic}-b"})
    plain = Producer({**config, "compression.type": "lz4"})
    for producer in (first, second):
        producer.init_transactions(30)

    def send(producer: Any, *names: str) -> None:
        for name in names:
            producer.produce(topic, key=name.encode(), value=name.encode(), partition=0)
        assert producer.flush(30) == 0

    first.begin_transaction()
    send(first, "a-commit-1", "a-commit-2")
    second.begin_transaction()
    send(second, "b-abort-1")
    send(plain, "plain-1")
    send(first, "a-commit-3")
    send(second, "b-abort-2")
    first.commit_transaction(30)
    second.abort_transaction(30)
    first.begin_transaction()
    send(first, "a-abort-4")
    first.abort_transaction(30)
    send(plain, "plain-2")
    committed_names = ["a-commit-1", "a-commit-2", "plain-1", "a-commit-3", "plain-2"]

    everything = read_partition(bootstrap, topic, 0)
    assert len(everything) == 8
    producer_ids = {r.key: pid for r, pid in _producer_ids(bootstrap, topic)}
    listed = [(producer_ids[b"b-abort-1"], everything[2].offset), (producer_ids[b"a-abort-4"],
                                                                   everything[6].offset)]
    entry = raw_fetch(bootstrap, topic, 0, 0, isolation_level=1)
    broker_list = sorted((a["producer_id"], a["first_offset"]) for a in entry["aborted_transactions"])
    if isinstance(broker, EmbeddedBroker):
        assert broker_list == []  # what Tansu sends (docs/consumer.md): the markers decide
    else:
        assert broker_list == sorted(listed)  # Kafka's own aborted-transaction list
    expected = [n.encode() for n in committed_names]
    # the broker's answer as it is (Kafka: Java's algorithm over its list; Tansu: the markers)
    assert [r.value for r in read_partition(bootstrap, topic, 0, read_committed=True)] == expected
    # the same log with the list a Kafka broker sends, and with no list at all (the markers): all three agree
    assert [r.value for r in read_partition(bootstrap, topic, 0, read_committed=True,
                                            aborted=lambda _: listed)] == expected
    assert [r.value for r in read_partition(bootstrap, topic, 0, read_committed=True,
                                            aborted=lambda _: None)] == expected

    # an open transaction: read_uncommitted bytes (past the last stable offset) decoded read_committed stop at it
    second.begin_transaction()
    send(second, "b-open-1")
    send(plain, "plain-3")
    entry = raw_fetch(bootstrap, topic, 0, 0)
    part = PartitionFetch(topic, 0, entry["records"], 0, check_crcs=True, decompress=decompress,
                          read_committed=True, aborted_transactions=None)
    assert [r.value for r in drain(part)] == [n.encode() for n in committed_names]
    open_offset = entry["high_watermark"] - 2
    assert part.blocked_on_open_transaction and part.done and part.next_offset == open_offset
    second.commit_transaction(30)
    entry = raw_fetch(bootstrap, topic, 0, open_offset, isolation_level=1)
    later = PartitionFetch(topic, 0, entry["records"], open_offset, check_crcs=True, decompress=decompress,
                           read_committed=True, aborted_transactions=entry["aborted_transactions"])
    assert [r.value for r in drain(later)] == [b"b-open-1", b"plain-3"]
    assert not later.blocked_on_open_transaction


def test_read_committed_on_the_mock_cluster_looks_ahead(mock_cluster: Any) -> None:
    """librdkafka's mock cluster answers one batch per Fetch, with an empty aborted list: a transaction's marker is
    never in the answer that holds its batches, so the fetcher looks ahead for it (markers_after)."""
    from confluent_kafka import Producer

    bootstrap = mock_cluster.bootstrap_servers.split(",")[0]
    mock_cluster.create_topic("tx", [1], 1)
    producer = Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "transactional.id": "decode",
                         "linger.ms": 5})
    producer.init_transactions(30)
    for name, commit in (("c", True), ("a", False), ("d", True)):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("tx", value=b"%s%d" % (name.encode(), i), partition=0)
        assert producer.flush(30) == 0
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    def answer(offset: int) -> dict[str, Any]:
        return raw_fetch(bootstrap, "tx", 0, offset, isolation_level=1)

    def decoder(records: bytes, offset: int, markers: list[tuple[int, int, bool]]) -> PartitionFetch:
        return PartitionFetch("tx", 0, records, offset, check_crcs=False, decompress=decompress,
                              read_committed=True, aborted_transactions=[], markers_after=markers)

    got: list[ConsumerRecord] = []
    position = 0
    for _ in range(100):
        entry = answer(position)
        assert entry["aborted_transactions"] == []
        part = decoder(entry["records"] or b"", position, [])
        got += drain(part)
        markers: list[tuple[int, int, bool]] = []
        look = part.end_offset
        while part.blocked_on_open_transaction and look < entry["high_watermark"]:
            ahead = decoder(answer(look)["records"] or b"", look, [])
            markers += ahead.transaction_markers()
            assert ahead.end_offset > look
            look = ahead.end_offset
            part = decoder(entry["records"], part.next_offset, markers)
            got += drain(part)
        position = part.next_offset
        if position >= entry["high_watermark"]:
            break
    assert [r.value for r in got] == [b"c0", b"c1", b"c2", b"d0", b"d1", b"d2"]


def _producer_ids(bootstrap: str, topic: str) -> list[tuple[ConsumerRecord, int]]:
    """Each record of partition 0 with its batch's producer id (decode_batches reads the headers)."""
    from cykafka.core import decode_batches

    entry = raw_fetch(bootstrap, topic, 0, 0)
    return [(ConsumerRecord(topic, 0, r.offset, r.timestamp_ms, 0, r.key, r.value), b.producer_id)
            for b in decode_batches(entry["records"], decompress, allow_partial=True) for r in b.records]
