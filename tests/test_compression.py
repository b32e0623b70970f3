"""Compressor adapters: round trips, Java's framing (xerial snappy, LZ4 frame flags), config errors, bad input."""

from __future__ import annotations

import gzip
import struct
import zlib

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from cykafka.adapters.compression import (
    GzipCompressor,
    Lz4Compressor,
    SnappyCompressor,
    ZstdCompressor,
    compressor_for,
    decompress,
)
from cykafka.errors import ConfigError, CorruptRecordError
from cykafka.ports import CODEC_NAMES, Compressor

NAMES = ["gzip", "snappy", "lz4", "zstd"]
DETERMINISTIC = settings(derandomize=True, deadline=None)
PAYLOAD = b"".join(b"record %d with some repeated text; " % i for i in range(5000))  # ~180 KB, several blocks


def get(name: str, level: int | None = None) -> Compressor:
    compressor = compressor_for(name, level)
    assert compressor is not None
    return compressor


@pytest.mark.parametrize("name", NAMES)
def test_implements_the_port(name: str) -> None:
    compressor = get(name)
    assert isinstance(compressor, Compressor)
    assert compressor.name == name and compressor.codec_id == CODEC_NAMES[name]
    assert compressor_for("none") is None


@DETERMINISTIC
@given(data=st.binary(max_size=5000) | st.just(PAYLOAD), name=st.sampled_from(NAMES))
def test_round_trip(data: bytes, name: str) -> None:
    compressor = get(name)
    compressed = compressor.compress(memoryview(bytearray(data)))
    assert isinstance(compressed, bytes)
    assert compressor.decompress(compressed) == data
    assert decompress(compressor.codec_id, memoryview(compressed)) == data


@pytest.mark.parametrize("name", NAMES)
def test_kafka_python_reads_ours_and_we_read_kafka_pythons(name: str) -> None:
    ours = get(name).compress(PAYLOAD)
    theirs_decode = {
        "gzip": kafka_codec.gzip_decode,
        "snappy": kafka_codec.snappy_decode,
        "lz4": kafka_codec.lz4_decode,
        "zstd": kafka_codec.zstd_decode,
    }[name]
    theirs_encode = {
        "gzip": kafka_codec.gzip_encode,
        "snappy": kafka_codec.snappy_encode,
        "lz4": kafka_codec.lz4_encode,
        "zstd": kafka_codec.zstd_encode,
    }[name]
    assert theirs_decode(ours) == PAYLOAD
    assert decompress(CODEC_NAMES[name], theirs_encode(PAYLOAD)) == PAYLOAD


def test_snappy_writes_xerial_framing_like_java() -> None:
    data = get("snappy").compress(PAYLOAD)
    assert data[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, chunks = 16, []
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        chunks.append(snappy.uncompress(data[pos + 4 : pos + 4 + length]))
        pos += 4 + length
    assert pos == len(data)
    assert [len(c) for c in chunks[:-1]] == [32 * 1024] * (len(chunks) - 1)
    assert len(chunks) == -(-len(PAYLOAD) // (32 * 1024))
    assert b"".join(chunks) == PAYLOAD


def test_snappy_reads_raw_and_concatenated_xerial() -> None:
    compressor = get("snappy")
    assert compressor.decompress(snappy.compress(PAYLOAD)) == PAYLOAD
    framed = compressor.compress(b"first ")
    assert compressor.decompress(framed + compressor.compress(b"second")) == b"first second"
    assert compressor.decompress(compressor.compress(b"")) == b""


def test_lz4_frame_settings_match_javas_block_output_stream() -> None:
    data = get("lz4").compress(PAYLOAD)
    assert data[:4] == b"\x04\x22\x4d\x18"
    flg, bd = data[4], data[5]
    assert flg >> 6 == 1  # version
    assert flg & 0x20  # independent blocks (Java rejects dependent ones)
    assert not flg & 0x10  # no block checksum
    assert not flg & 0x08  # no content size
    assert not flg & 0x04  # no content checksum
    assert bd == 0x40  # 64 KiB max block
    assert data[-4:] == b"\x00\x00\x00\x00"  # end mark, nothing after it
    info = lz4.frame.get_frame_info(data)
    assert info["block_size"] == 64 * 1024 and not info["block_linked"]


def test_lz4_levels() -> None:
    fast = get("lz4").compress(PAYLOAD)  # level 9: Java's fast compressor
    assert fast == lz4.frame.compress(
        PAYLOAD, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, store_size=False
    )
    for level in (1, 12, 17):
        assert get("lz4", level).decompress(get("lz4", level).compress(PAYLOAD)) == PAYLOAD
    assert len(get("lz4", 12).compress(PAYLOAD)) <= len(fast)


def test_gzip_is_a_gzip_member_and_reads_concatenated_members() -> None:
    data = get("gzip").compress(PAYLOAD)
    assert data[:3] == b"\x1f\x8b\x08"
    assert gzip.decompress(data) == PAYLOAD
    assert len(get("gzip", 9).compress(PAYLOAD)) <= len(get("gzip", 1).compress(PAYLOAD))
    assert get("gzip").decompress(gzip.compress(b"a") + gzip.compress(b"b")) == b"ab"


def test_zstd_reads_frames_without_content_size_and_concatenated_frames() -> None:
    compressor = get("zstd")
    streamed = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    frame = streamed.compress(PAYLOAD) + streamed.flush()
    assert compressor.decompress(frame) == PAYLOAD
    assert compressor.decompress(frame + compressor.compress(b"!")) == PAYLOAD + b"!"
    assert get("zstd", -5).decompress(get("zstd", 22).compress(PAYLOAD)) == PAYLOAD


@pytest.mark.parametrize(
    ("name", "level", "message"),
    [
        ("gzipx", None, "compression.type.*none, gzip, snappy, lz4, zstd"),
        ("GZIP", None, "compression.type"),
        ("gzip", 0, r"compression.gzip.level.*-1 or 1\.\.9"),
        ("gzip", 10, "compression.gzip.level"),
        ("lz4", 0, r"compression.lz4.level.*1\.\.17"),
        ("lz4", 18, "compression.lz4.level"),
        ("zstd", 23, r"compression.zstd.level.*-131072\.\.22"),
        ("zstd", -131073, "compression.zstd.level"),
        ("snappy", 1, "snappy"),
        ("none", 1, "none"),
    ],
)
def test_config_errors_name_the_key_and_accepted_values(name: str, level: int | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        compressor_for(name, level)


def test_levels_at_the_edges_are_accepted() -> None:
    assert isinstance(compressor_for("gzip", -1), GzipCompressor)
    assert isinstance(compressor_for("gzip", 9), GzipCompressor)
    assert isinstance(compressor_for("lz4", 17), Lz4Compressor)
    assert isinstance(compressor_for("zstd", -131072), ZstdCompressor)
    assert isinstance(compressor_for("snappy"), SnappyCompressor)
    with pytest.raises(ConfigError):
        compressor_for("gzip", True)


@DETERMINISTIC
@given(data=st.binary(max_size=400), codec_id=st.integers(1, 4))
def test_garbage_only_raises_corrupt_record_error(data: bytes, codec_id: int) -> None:
    try:
        decompress(codec_id, data)
    except CorruptRecordError:
        pass


@pytest.mark.parametrize("name", NAMES)
def test_truncated_streams_are_corrupt(name: str) -> None:
    compressor = get(name)
    data = compressor.compress(PAYLOAD)
    for cut in (1, 4, len(data) // 2, len(data) - 1):
        with pytest.raises(CorruptRecordError):
            compressor.decompress(data[:-cut])


def test_length_claims_are_rejected_before_allocating() -> None:
    huge_raw_snappy = b"\xff\xff\xff\xff\x0f" + b"\x00" * 16  # claims 4 GiB
    with pytest.raises(CorruptRecordError, match="claims"):
        decompress(CODEC_NAMES["snappy"], huge_raw_snappy)
    with pytest.raises(CorruptRecordError, match="claims"):
        decompress(CODEC_NAMES["snappy"], b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 21) + huge_raw_snappy)
    with pytest.raises(CorruptRecordError):
        decompress(CODEC_NAMES["snappy"], b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 2**31 - 1) + b"x")
    lz4_claiming_2_60 = b"\x04\x22\x4d\x18" + bytes([0x68, 0x40]) + struct.pack("<Q", 2**60) + b"\x00" * 8
    with pytest.raises(CorruptRecordError, match="claims"):
        decompress(CODEC_NAMES["lz4"], lz4_claiming_2_60)
    with pytest.raises(CorruptRecordError):
        decompress(9, b"")
    with pytest.raises(CorruptRecordError):
        decompress(CODEC_NAMES["gzip"], zlib.compress(b"zlib, not gzip"))
