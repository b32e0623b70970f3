"""RecordBatch v2: golden interop with kafka-python both ways, round trips, corrupt input, room/size semantics."""

from __future__ import annotations

import array
import struct
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from cykafka.adapters.compression import compressor_for, decompress
from cykafka.core import (
    RECORD_BATCH_OVERHEAD_BYTES,
    RecordBatchBuilder,
    crc32c,
    decode_batches,
    estimate_size_upper_bound,
    rewrite_producer_state,
)
from cykafka.errors import CorruptRecordError

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

Header = tuple[str, bytes | None]
Record = tuple[int, bytes | None, bytes | None, list[Header]]

DETERMINISTIC = settings(derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SAMPLE: list[Record] = [
    (1_700_000_000_000, b"key-0", b"value-0" * 10, []),
    (1_700_000_000_007, None, b"null key", [("trace", b"abc"), ("empty", b""), ("none", None)]),
    (1_699_999_999_000, b"k2", None, []),  # earlier than the base: negative timestamp delta
    (1_700_000_100_000, b"", b"", [("\u00fcnicode-\u2603", b"\x00\xff")]),
    (1_700_000_000_001, None, None, [("h", None)] * 12),  # more headers than the inline slots
]


def build(
    records: Sequence[Record],
    codec: str = "none",
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    buffer_bytes: int = 1 << 20,
) -> bytes:
    builder = RecordBatchBuilder(bytearray(buffer_bytes), 1 << 30, CODEC_IDS[codec])
    for timestamp_ms, key, value, headers in records:
        assert builder.try_append(timestamp_ms, key, value, headers)
    view = builder.close(compressor_for(codec), producer_id, producer_epoch, base_sequence, is_transactional)
    return bytes(view)


def as_tuples(batch_records: Any) -> list[Record]:
    return [(r.timestamp_ms, r.key, r.value, list(r.headers)) for r in batch_records]


# ---- golden: kafka-python reads what we write -------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_decodes_our_batches(codec: str) -> None:
    data = build(SAMPLE, codec, producer_id=4242, producer_epoch=7, base_sequence=1000, is_transactional=True)
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc()
    assert batch.magic == 2
    assert batch.base_offset == 0
    assert batch.leader_epoch == -1
    assert batch.compression_type == CODEC_IDS[codec]
    assert batch.is_transactional and not batch.is_control_batch
    assert batch.timestamp_type == 0
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 7, 1000)
    assert batch.last_offset_delta == len(SAMPLE) - 1
    assert batch.records_count == len(SAMPLE)
    assert batch.first_timestamp == SAMPLE[0][0]
    assert batch.max_timestamp == max(r[0] for r in SAMPLE)
    assert batch.size_in_bytes == len(data)
    decoded = list(batch)
    assert len(decoded) == len(SAMPLE)
    for i, (record, (timestamp_ms, key, value, headers)) in enumerate(zip(decoded, SAMPLE, strict=True)):
        assert record.offset == i
        assert record.timestamp == timestamp_ms
        assert record.key == key
        assert record.value == value
        assert record.headers == headers


@pytest.mark.parametrize("codec", CODECS)
def test_we_decode_kafka_python_batches(codec: str) -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODEC_IDS[codec],
        is_transactional=False,
        producer_id=99,
        producer_epoch=3,
        base_sequence=17,
        batch_size=1 << 20,
    )
    records: list[Record] = []
    for i in range(200):
        key = None if i % 5 == 0 else b"key-%d" % i
        value = None if i % 7 == 0 else b"value %d " % i * 8  # compressible, so kafka-python keeps the codec
        headers: list[Header] = [("n", b"%d" % i), ("null", None)] if i % 3 == 0 else []
        timestamp_ms = 1_600_000_000_000 + (i * 37) % 500 - 100
        assert builder.append(i, timestamp_ms, key, value, headers) is not None
        records.append((timestamp_ms, key, value, headers))
    data = bytes(builder.build())
    [batch] = decode_batches(data, decompress)
    assert batch.codec == CODEC_IDS[codec]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (99, 3, 17)
    assert batch.last_offset_delta == 199
    assert batch.base_timestamp_ms == records[0][0]
    assert batch.max_timestamp_ms == max(r[0] for r in records)
    assert [r.offset for r in batch.records] == list(range(200))
    assert as_tuples(batch.records) == records


def test_batch_fields_decode() -> None:
    data = build(SAMPLE, producer_id=1, producer_epoch=2, base_sequence=3)
    [batch] = decode_batches(data)
    assert batch.base_offset == 0
    assert batch.batch_length == len(data) - 12
    assert batch.partition_leader_epoch == -1
    assert batch.magic == 2
    assert batch.crc == struct.unpack_from(">I", data, 17)[0] == crc32c(data[21:])
    assert batch.attributes == 0 and batch.codec == 0 and batch.timestamp_type == 0
    assert not batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1, 2, 3)
    assert as_tuples(batch.records) == SAMPLE


def test_log_append_time_sets_the_attribute_and_record_timestamps_follow_max() -> None:
    builder = RecordBatchBuilder(bytearray(1024), 1024, log_append_time=True)
    builder.try_append(5, None, b"a", None)
    builder.try_append(9, None, b"b", None)
    [batch] = decode_batches(builder.close(None))
    assert batch.timestamp_type == 1 and batch.attributes & 0x08
    assert [r.timestamp_ms for r in batch.records] == [9, 9]
    assert DefaultRecordBatch(bytes(builder.buffer[: batch.batch_length + 12])).timestamp_type == 1


def test_concatenated_batches_and_partial_tail() -> None:
    first = build(SAMPLE[:2])
    second = build(SAMPLE[2:], "lz4")
    batches = decode_batches(first + second, decompress)
    assert [len(b.records) for b in batches] == [2, 3]
    for cut in (1, 11, 12, 40, 61, len(second) - 1):
        data = first + second[:cut]
        with pytest.raises(CorruptRecordError):
            decode_batches(data, decompress)
        assert len(decode_batches(data, decompress, allow_partial=True)) == 1
    assert decode_batches(b"") == []


def test_empty_batch() -> None:
    builder = RecordBatchBuilder(bytearray(100), 100)
    [batch] = decode_batches(builder.close(None))
    assert batch.records == [] and batch.last_offset_delta == -1 and batch.base_timestamp_ms == -1


# ---- the builder's API ------------------------------------------------------------------------------------------


def test_accepts_any_contiguous_buffer_and_pair_lists() -> None:
    builder = RecordBatchBuilder(bytearray(4096), 4096)
    key = bytearray(b"ba")
    value = memoryview(b"xxmvxx")[2:4]
    header_value = array.array("B", b"ar")
    assert builder.try_append(1, key, value, [["list-pair", header_value]])
    assert builder.try_append(2, memoryview(b"k"), b"v", (("t", b"1"),))
    [batch] = decode_batches(builder.close(None))
    assert as_tuples(batch.records) == [(1, b"ba", b"mv", [("list-pair", b"ar")]), (2, b"k", b"v", [("t", b"1")])]
    key.extend(b"resizable again")  # our export was released


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((1, "str", b"v", None), "key"),
        ((1, b"k", 5, None), "value"),
        ((1, b"k", b"v", b"headers"), "headers"),
        ((1, b"k", b"v", 5), "headers"),
        ((1, b"k", b"v", [("a", b"1", b"2")]), "headers[0]"),
        ((1, b"k", b"v", [b"ab"]), "headers[0]"),
        ((1, b"k", b"v", [(1, b"1")]), "headers[0] key"),
        ((1, b"k", b"v", [("a", "text")]), "header value"),
        ((1, b"k", memoryview(b"abcd")[::2], None), "value"),
    ],
)
def test_type_errors_name_the_field(args: tuple[Any, ...], field: str) -> None:
    builder = RecordBatchBuilder(bytearray(4096), 4096)
    with pytest.raises(TypeError, match=field.replace("[", r"\[").replace("]", r"\]")):
        builder.try_append(*args)
    with pytest.raises(TypeError):
        estimate_size_upper_bound(*args[1:])
    assert builder.record_count == 0 and builder.uncompressed_size_bytes == RECORD_BATCH_OVERHEAD_BYTES


def test_close_is_idempotent_and_appends_after_close_raise() -> None:
    builder = RecordBatchBuilder(bytearray(4096), 4096)
    builder.try_append(1, b"k", b"v", None)
    view = builder.close(None)
    assert builder.close(None) is view
    assert builder.is_closed and builder.is_full
    assert not builder.has_room_for(1, b"k", b"v", None)
    with pytest.raises(RuntimeError):
        builder.try_append(1, b"k", b"v", None)
    assert view.obj is builder.buffer and builder.buffer_is_original  # no copy: a view on the pooled buffer


def test_compressed_close_needs_a_matching_compressor() -> None:
    builder = RecordBatchBuilder(bytearray(4096), 4096, codec=3)
    builder.try_append(1, b"k", b"v", None)
    with pytest.raises(ValueError):
        builder.close(None)
    with pytest.raises(ValueError):
        builder.close(compressor_for("gzip"))
    with pytest.raises(ValueError):
        RecordBatchBuilder(bytearray(10), 10, codec=5)
    with pytest.raises(ValueError):
        RecordBatchBuilder(bytearray(10), 10, codec=1, compression_ratio_estimate=0.0)


def test_decode_needs_decompress_for_compressed_batches() -> None:
    with pytest.raises(ValueError):
        decode_batches(build(SAMPLE, "gzip"))


def record_size(timestamp_delta: int, offset_delta: int, key: bytes | None, value: bytes | None) -> int:
    """DefaultRecord.sizeInBytes for a record without headers (test oracle)."""

    def varint_size(n: int) -> int:
        z = (n << 1) ^ (n >> 63)
        return max(1, (z.bit_length() + 6) // 7)

    def field(b: bytes | None) -> int:
        return 1 if b is None else varint_size(len(b)) + len(b)

    body = 1 + varint_size(timestamp_delta) + varint_size(offset_delta) + field(key) + field(value) + 1
    return varint_size(body) + body


def test_room_semantics_uncompressed() -> None:
    value = b"v" * 100
    write_limit = 1000
    builder = RecordBatchBuilder(bytearray(write_limit), write_limit)
    assert builder.estimated_size_bytes == 61 and not builder.is_full
    appended = 0
    while True:
        size = record_size(0, appended, None, value)
        fits = builder.estimated_size_bytes + size <= write_limit
        assert builder.has_room_for(0, None, value, None) == fits
        assert builder.try_append(0, None, value, None) == fits
        if not fits:
            break
        appended += 1
        assert builder.uncompressed_size_bytes == builder.estimated_size_bytes
    assert builder.record_count == appended == (write_limit - 61) // record_size(0, 1, None, value)
    small = b""
    while builder.try_append(0, None, small, None):
        pass
    assert builder.is_full == (builder.estimated_size_bytes >= write_limit)


def test_first_record_always_fits_and_the_buffer_grows() -> None:
    original = bytearray(64)
    builder = RecordBatchBuilder(original, 64)
    big = bytes(range(256)) * 40
    assert builder.has_room_for(1, b"k", big, None)
    assert builder.try_append(1, b"k", big, None)
    assert builder.is_full
    assert not builder.try_append(2, b"k", b"", None)
    assert not builder.buffer_is_original and builder.buffer is not original
    [batch] = decode_batches(builder.close(None))
    assert batch.records[0].value == big


def f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def test_compressed_estimate_uses_the_ratio_and_the_buffer_grows_past_it() -> None:
    write_limit = 4096
    builder = RecordBatchBuilder(bytearray(write_limit), write_limit, codec=4, compression_ratio_estimate=0.1)
    value = b"abcdefgh" * 12
    while builder.try_append(1, None, value, None):
        records_bytes = builder.uncompressed_size_bytes - 61
        # Java computes records * ratio * 1.05f in float32
        assert builder.estimated_size_bytes == 61 + int(f32(f32(records_bytes * f32(0.1)) * f32(1.05)))
    assert builder.uncompressed_size_bytes > write_limit and not builder.buffer_is_original
    view = builder.close(compressor_for("zstd"))
    assert builder.estimated_size_bytes == len(view)
    assert builder.actual_compression_ratio == (len(view) - 61) / (builder.uncompressed_size_bytes - 61)
    assert builder.actual_compression_ratio < 0.2
    [batch] = decode_batches(view, decompress)
    assert len(batch.records) == builder.record_count
    assert RecordBatchBuilder(bytearray(100), 100).actual_compression_ratio == 1.0


@DETERMINISTIC
@given(
    key=st.none() | st.binary(max_size=300),
    value=st.none() | st.binary(max_size=3000),
    headers=st.lists(st.tuples(st.text(max_size=20), st.none() | st.binary(max_size=50)), max_size=12),
    timestamp_ms=st.integers(-(2**62), 2**62),
    preceding=st.integers(0, 3),
)
def test_estimate_size_upper_bound_covers_the_real_size(
    key: bytes | None, value: bytes | None, headers: list[Header], timestamp_ms: int, preceding: int
) -> None:
    builder = RecordBatchBuilder(bytearray(16384), 1 << 30)
    for _ in range(preceding):
        builder.try_append(0, None, None, None)
    before = builder.uncompressed_size_bytes
    assert builder.try_append(timestamp_ms, key, value, headers)
    record_bytes = builder.uncompressed_size_bytes - before
    assert estimate_size_upper_bound(key, value, headers) >= 61 + record_bytes
    single = RecordBatchBuilder(bytearray(64), 64)
    single.try_append(timestamp_ms, key, value, headers)
    assert estimate_size_upper_bound(key, value, headers) >= len(single.close(None))


def test_estimate_size_upper_bound_matches_java_formula() -> None:
    # 61 + 21 + key(1 + 3) + value(2 + 100) + headers count 1 + ("h": 1 + 1, null: 1)
    assert estimate_size_upper_bound(b"abc", b"v" * 100, [("h", None)]) == 61 + 21 + 4 + 102 + 1 + 3
    assert estimate_size_upper_bound(None, None, None) == 61 + 21 + 1 + 1 + 1


# ---- producer state rewrite (KIP-360 resequencing) --------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_rewrite_producer_state_keeps_the_crc_valid(codec: str) -> None:
    builder = RecordBatchBuilder(bytearray(4096), 4096, CODEC_IDS[codec])
    for timestamp_ms, key, value, headers in SAMPLE:
        builder.try_append(timestamp_ms, key, value, headers)
    view = builder.close(compressor_for(codec), 10, 1, 5)
    rewrite_producer_state(view, 11, 2, 500, True)
    batch = DefaultRecordBatch(bytes(view))
    assert batch.validate_crc()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (11, 2, 500, True)
    assert batch.compression_type == CODEC_IDS[codec]
    rewrite_producer_state(view, 11, 2, 600, False)
    [decoded] = decode_batches(view, decompress)
    assert (decoded.base_sequence, decoded.is_transactional, decoded.codec) == (600, False, CODEC_IDS[codec])
    assert as_tuples(decoded.records) == SAMPLE


def test_rewrite_producer_state_rejects_bad_input() -> None:
    data = bytearray(build(SAMPLE))
    with pytest.raises(TypeError):
        rewrite_producer_state(bytes(data), 1, 1, 1, False)
    data[70] ^= 1
    with pytest.raises(CorruptRecordError):  # never launders a corrupt batch with a fresh CRC
        rewrite_producer_state(data, 1, 1, 1, False)
    with pytest.raises(CorruptRecordError):
        rewrite_producer_state(bytearray(30), 1, 1, 1, False)


# ---- properties -------------------------------------------------------------------------------------------------

records_strategy = st.lists(
    st.tuples(
        st.integers(-(2**40), 2**42),
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=400),
        st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=4),
    ),
    max_size=40,
)


@DETERMINISTIC
@given(records=records_strategy, codec=st.sampled_from(CODECS), producer=st.integers(-1, 2**40))
def test_round_trip(records: list[Record], codec: str, producer: int) -> None:
    data = build(records, codec, producer_id=producer, producer_epoch=3, base_sequence=9, buffer_bytes=128)
    [batch] = decode_batches(data, decompress)
    assert as_tuples(batch.records) == records
    assert batch.producer_id == producer and batch.codec == CODEC_IDS[codec]
    assert DefaultRecordBatch(data).validate_crc()


def reseal(data: bytearray) -> bytearray:
    """Fixes up the CRC so the decoder's record-level checks are reached."""
    if len(data) >= 61:
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return data


def decode_or_corrupt(data: bytes | bytearray) -> None:
    try:
        decode_batches(data, decompress)
    except CorruptRecordError:
        pass


@DETERMINISTIC
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_corrupt_record_error(data: bytes) -> None:
    decode_or_corrupt(data)
    decode_or_corrupt(reseal(bytearray(data)))
    if len(data) >= 61:
        header = bytearray(data)
        struct.pack_into(">iib", header, 8, len(data) - 12, -1, 2)
        decode_or_corrupt(reseal(header))


@DETERMINISTIC
@given(
    codec=st.sampled_from(CODECS),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=4),
    fix_crc=st.booleans(),
)
def test_flipped_bytes_only_raise_corrupt_record_error(
    codec: str, flips: list[tuple[int, int]], fix_crc: bool
) -> None:
    original = build(SAMPLE, codec)
    data = bytearray(original)
    for position, mask in flips:
        data[position % len(data)] ^= mask
    if fix_crc:
        reseal(data)
    elif data[8:12] + data[16:] != original[8:12] + original[16:]:  # CRC32C covers neither offset nor epoch
        with pytest.raises(CorruptRecordError):
            decode_batches(data, decompress)
    decode_or_corrupt(data)


@DETERMINISTIC
@given(codec=st.sampled_from(CODECS), cut=st.integers(0, 10_000))
def test_truncated_batches_raise_corrupt_record_error(codec: str, cut: int) -> None:
    data = build(SAMPLE, codec)
    cut = cut % (len(data) - 1) + 1
    with pytest.raises(CorruptRecordError):
        decode_batches(data[:cut], decompress)
    assert decode_batches(data[:cut], decompress, allow_partial=True) == []
    # a batch whose length field was made to match the cut: only the record section is short
    if cut >= 61:
        short = bytearray(data[:cut])
        struct.pack_into(">i", short, 8, cut - 12)
        with pytest.raises(CorruptRecordError):
            decode_batches(reseal(short), decompress)


def varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def raw_batch(records_section: bytes, count: int, codec: int = 0) -> bytearray:
    header = struct.pack(">qiibIhiqqqhii", 0, 49 + len(records_section), -1, 2, 0, codec, 0, 0, 0, -1, -1, -1, count)
    return reseal(bytearray(header + records_section))


@pytest.mark.parametrize(
    "section",
    [
        varint(2**31 - 1) + b"\x00",  # record length far past the data
        varint(20) + b"\x00" + varint(0) + varint(0) + varint(2**31 - 1) + b"k" * 15,  # key length
        varint(20) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(2**30) + b"v" * 13,  # value length
        varint(20) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(2**31 - 1) + b"h" * 13,
        varint(9) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(1) + varint(2**20) + b"x",
        varint(8) + b"\x00" + varint(0) + varint(0) + varint(-2) + varint(-1) + varint(0) + b"xx",  # key -2
        b"\xff" * 11,  # endless varint
        varint(7) + b"\x00" + b"\xff" * 6,  # endless timestamp varint inside the record
        varint(8) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(1) + varint(1) + b"\xff",
    ],
)
def test_huge_or_invalid_length_fields_raise_before_allocating(section: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_batches(raw_batch(section, 1))


def test_record_count_and_trailing_bytes_are_checked() -> None:
    record = varint(6) + b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(0)
    assert len(decode_batches(raw_batch(record, 1))[0].records) == 1
    for section, count in [(record, 2), (record, 0), (record, -1), (record, 2**31 - 1), (record + b"\x00", 1)]:
        with pytest.raises(CorruptRecordError):
            decode_batches(raw_batch(section, count))
    with pytest.raises(CorruptRecordError):
        decode_batches(raw_batch(record, 1, codec=6), decompress)
    bad_magic = raw_batch(record, 1)
    bad_magic[16] = 1
    with pytest.raises(CorruptRecordError):
        decode_batches(bad_magic)
    huge_length = raw_batch(record, 1)
    struct.pack_into(">i", huge_length, 8, 2**31 - 1)
    with pytest.raises(CorruptRecordError):
        decode_batches(huge_length)
    assert decode_batches(huge_length, allow_partial=True) == []
    negative_length = raw_batch(record, 1)
    struct.pack_into(">i", negative_length, 8, -5)
    with pytest.raises(CorruptRecordError):
        decode_batches(negative_length, allow_partial=True)


def test_decompressor_failures_become_corrupt_record_errors() -> None:
    data = build(SAMPLE, "gzip")

    def broken(codec_id: int, payload: bytes) -> bytes:
        raise OSError("boom")

    with pytest.raises(CorruptRecordError):
        decode_batches(data, broken)
    with pytest.raises(CorruptRecordError):
        decode_batches(data, lambda codec_id, payload: payload[:-3])


def test_builder_made_without_init_is_safe() -> None:
    builder = RecordBatchBuilder.__new__(RecordBatchBuilder)
    assert builder.try_append(3, b"k", b"v", None)
    [batch] = decode_batches(builder.close(None))
    assert as_tuples(batch.records) == [(3, b"k", b"v", [])]
