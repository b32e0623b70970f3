"""Compressor adapters (cykafka.ports.Compressor) for a RecordBatch's records section, byte-compatible with Java's.

gzip: a gzip member (zlib, wbits 31), level compression.gzip.level (-1 = zlib default, or 1..9).
snappy: xerial framing as Java's SnappyOutputStream writes it: magic b"\\x82SNAPPY\\x00", int32 version 1, int32
    compatible version 1, then per 32 KiB of input [int32 length][raw snappy block] (big-endian). Reads xerial
    (also concatenated streams) and raw snappy.
lz4: one LZ4 frame as Java's Lz4BlockOutputStream: 64 KiB independent blocks, no block or content checksum, no
    content size; level compression.lz4.level 1..17, default 9 (= the fast compressor, as Java; others use LZ4HC).
zstd: one zstd frame, level compression.zstd.level -131072..22, default 3.

Decompression checks every length field against the bytes present before allocating from it; malformed input
raises CorruptRecordError.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import lz4.frame
import snappy
import zstandard

if TYPE_CHECKING:
    from typing_extensions import Buffer

from cykafka.errors import ConfigError, CorruptRecordError
from cykafka.ports import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NAMES,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    COMPRESSION_TYPES,
    GZIP_LEVEL_DEFAULT,
    GZIP_LEVEL_MAX,
    GZIP_LEVEL_MIN,
    LZ4_LEVEL_DEFAULT,
    LZ4_LEVEL_MAX,
    LZ4_LEVEL_MIN,
    ZSTD_LEVEL_DEFAULT,
    ZSTD_LEVEL_MAX,
    ZSTD_LEVEL_MIN,
    Compressor,
)

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
XERIAL_HEADER: Final = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_INPUT_BYTES: Final = 32 * 1024

# Bounds on what a compressed byte can expand to, to reject a length field before allocating by it:
# a snappy copy op of 3 bytes yields at most 64 bytes; an LZ4 sequence byte at most ~255.
_SNAPPY_MAX_EXPANSION: Final = 24
_LZ4_MAX_EXPANSION: Final = 256

_INT32 = struct.Struct(">i")


def _as_bytes(data: Buffer) -> bytes:
    return data if type(data) is bytes else bytes(data)


def _inflate_concatenated(data: Buffer, new_decompressor: Callable[[], Any], error: type[Exception],
                          codec: str, unit: str) -> bytes:
    """Every member/frame in data, one streaming decompressor each: output grows with what they really hold, and a
    truncated or corrupt one is a CorruptRecordError."""
    rest = _as_bytes(data)
    parts = []
    try:
        while True:
            inflater = new_decompressor()
            parts.append(inflater.decompress(rest))
            if not inflater.eof:
                raise CorruptRecordError(f"{codec} {unit} is truncated")
            rest = inflater.unused_data
            if not rest:
                return b"".join(parts)
    except error as e:
        raise CorruptRecordError(f"{codec} data is corrupt: {e}") from e


class GzipCompressor:
    codec_id = CODEC_GZIP
    name = "gzip"

    def __init__(self, level: int = GZIP_LEVEL_DEFAULT) -> None:
        self.level = level

    def compress(self, data: Buffer) -> bytes:
        deflater = zlib.compressobj(self.level, zlib.DEFLATED, 31)
        return deflater.compress(data) + deflater.flush()

    def decompress(self, data: Buffer) -> bytes:
        """Every gzip member in data (GZIPInputStream reads concatenated members too)."""
        return _inflate_concatenated(data, lambda: zlib.decompressobj(31), zlib.error, "gzip", "data")


def _snappy_raw_decompress(block: bytes) -> bytes:
    # the raw format opens with the uncompressed length as a little-endian base-128 varint
    declared_bytes = 0
    for i in range(min(5, len(block))):
        declared_bytes |= (block[i] & 0x7F) << (7 * i)
        if not block[i] & 0x80:
            break
    else:
        raise CorruptRecordError("snappy block has a malformed length preamble")
    if declared_bytes > _SNAPPY_MAX_EXPANSION * len(block) + 64:
        raise CorruptRecordError(f"snappy block of {len(block)} bytes claims {declared_bytes} uncompressed bytes")
    try:
        out: bytes = snappy.uncompress(block)
    except Exception as e:  # python-snappy raises its own UncompressError and cramjam errors
        raise CorruptRecordError(f"snappy data is corrupt: {e}") from e
    return bytes(out)


class SnappyCompressor:
    codec_id = CODEC_SNAPPY
    name = "snappy"

    def compress(self, data: Buffer) -> bytes:
        view = memoryview(data).cast("B")
        out = [XERIAL_HEADER]
        for start in range(0, len(view), XERIAL_BLOCK_INPUT_BYTES):
            block = bytes(snappy.compress(view[start : start + XERIAL_BLOCK_INPUT_BYTES]))
            out.append(_INT32.pack(len(block)))
            out.append(block)
        return b"".join(out)

    def decompress(self, data: Buffer) -> bytes:
        raw = _as_bytes(data)
        if not raw.startswith(XERIAL_MAGIC):
            return _snappy_raw_decompress(raw)
        if len(raw) < len(XERIAL_HEADER):
            raise CorruptRecordError("xerial snappy header is truncated")
        parts = []
        pos = len(XERIAL_HEADER)
        while pos < len(raw):
            if raw.startswith(XERIAL_MAGIC, pos):  # a concatenated stream
                if len(raw) - pos < len(XERIAL_HEADER):
                    raise CorruptRecordError("xerial snappy header is truncated")
                pos += len(XERIAL_HEADER)
                continue
            if len(raw) - pos < 4:
                raise CorruptRecordError("xerial snappy block length is truncated")
            (block_bytes,) = _INT32.unpack_from(raw, pos)
            pos += 4
            if block_bytes < 0 or block_bytes > len(raw) - pos:
                raise CorruptRecordError(f"xerial snappy block length {block_bytes} exceeds the data")
            parts.append(_snappy_raw_decompress(raw[pos : pos + block_bytes]))
            pos += block_bytes
        return b"".join(parts)


class Lz4Compressor:
    codec_id = CODEC_LZ4
    name = "lz4"

    def __init__(self, level: int = LZ4_LEVEL_DEFAULT) -> None:
        self.level = level
        # Java: the default level uses lz4-java's fast compressor, any other level its high compressor (LZ4HC)
        self._frame_level = 0 if level == LZ4_LEVEL_DEFAULT else level

    def compress(self, data: Buffer) -> bytes:
        out: bytes = lz4.frame.compress(
            data,
            compression_level=self._frame_level,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
        return out

    def decompress(self, data: Buffer) -> bytes:
        raw = _as_bytes(data)
        # frame: magic(4) FLG(1) BD(1) [content size u64 LE when FLG bit 3] HC(1)
        if len(raw) < 7 or raw[:4] != b"\x04\x22\x4d\x18":
            raise CorruptRecordError("lz4 data is not an LZ4 frame")
        if raw[4] & 0x08:
            if len(raw) < 15:
                raise CorruptRecordError("lz4 frame header is truncated")
            content_bytes = int.from_bytes(raw[6:14], "little")
            if content_bytes > _LZ4_MAX_EXPANSION * len(raw):
                raise CorruptRecordError(f"lz4 frame of {len(raw)} bytes claims {content_bytes} content bytes")
        try:
            out, read_bytes = lz4.frame.decompress(raw, return_bytes_read=True)
        except Exception as e:  # lz4 raises RuntimeError for corrupt frames
            raise CorruptRecordError(f"lz4 data is corrupt: {e}") from e
        if read_bytes != len(raw):
            raise CorruptRecordError(f"lz4 frame ends {len(raw) - read_bytes} bytes before the data")
        return bytes(out)


class ZstdCompressor:
    codec_id = CODEC_ZSTD
    name = "zstd"

    def __init__(self, level: int = ZSTD_LEVEL_DEFAULT) -> None:
        self.level = level
        self._compressor = zstandard.ZstdCompressor(level=level)
        self._decompressor = zstandard.ZstdDecompressor()

    def compress(self, data: Buffer) -> bytes:
        out: bytes = self._compressor.compress(memoryview(data))
        return out

    def decompress(self, data: Buffer) -> bytes:
        """Every frame in data, streamed: output grows with what the frames really hold, never by a declared
        content size (Java's zstd-jni writes none; a declared size is only a claim)."""
        return _inflate_concatenated(data, self._decompressor.decompressobj, zstandard.ZstdError, "zstd", "frame")


def _check_level(key: str, level: int, low: int, high: int, default: int) -> int:
    if isinstance(level, bool) or not isinstance(level, int):
        raise ConfigError(f"{key} must be an integer between {low} and {high}, got {level!r}")
    if not (low <= level <= high or level == default):
        allowed = f"{default} or {low}..{high}" if not low <= default <= high else f"{low}..{high}"
        raise ConfigError(f"{key} must be {allowed}, got {level}")
    return level


def compressor_for(name: str, level: int | None = None) -> Compressor | None:
    """The compressor for a compression.type value (None for "none"); level is that codec's compression.X.level."""
    if name == "none":
        if level is not None:
            raise ConfigError("compression.type none takes no compression level")
        return None
    if name == "gzip":
        gzip_level = GZIP_LEVEL_DEFAULT if level is None else level
        return GzipCompressor(
            _check_level("compression.gzip.level", gzip_level, GZIP_LEVEL_MIN, GZIP_LEVEL_MAX, GZIP_LEVEL_DEFAULT)
        )
    if name == "snappy":
        if level is not None:
            raise ConfigError("compression.type snappy takes no compression level")
        return SnappyCompressor()
    if name == "lz4":
        lz4_level = LZ4_LEVEL_DEFAULT if level is None else level
        return Lz4Compressor(
            _check_level("compression.lz4.level", lz4_level, LZ4_LEVEL_MIN, LZ4_LEVEL_MAX, LZ4_LEVEL_DEFAULT)
        )
    if name == "zstd":
        zstd_level = ZSTD_LEVEL_DEFAULT if level is None else level
        return ZstdCompressor(
            _check_level("compression.zstd.level", zstd_level, ZSTD_LEVEL_MIN, ZSTD_LEVEL_MAX, ZSTD_LEVEL_DEFAULT)
        )
    raise ConfigError(f"compression.type must be one of {', '.join(COMPRESSION_TYPES)}; got {name!r}")


_DECOMPRESSORS: dict[int, Compressor] = {
    CODEC_NAMES[name]: compressor
    for name, compressor in (
        ("gzip", GzipCompressor()),
        ("snappy", SnappyCompressor()),
        ("lz4", Lz4Compressor()),
        ("zstd", ZstdCompressor()),
    )
}


def decompress(codec_id: int, data: Buffer) -> bytes:
    """Decompresses a records section by its batch's codec id (the decoder's decompress callback)."""
    compressor = _DECOMPRESSORS.get(codec_id)
    if compressor is None:
        raise CorruptRecordError(f"unknown compression codec id {codec_id}")
    return compressor.decompress(data)
