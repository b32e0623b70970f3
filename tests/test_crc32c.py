"""CRC32C: known vectors, hardware path equals software path on every length and alignment."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from cykafka.core import crc32c, crc32c_hardware


def test_known_vectors() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43


def test_hardware_equals_software_across_the_interleaved_block_sizes() -> None:
    data = os.urandom(3 * 4096 * 3 + 77)
    for start in range(9):
        for end in (start, start + 1, 4096 * 3 + start, len(data) - start):
            view = memoryview(data)[start:end]
            assert crc32c(view, force=1) == crc32c(view, force=0)


@given(st.binary(max_size=20000), st.binary(max_size=100))
def test_incremental_equals_whole(a: bytes, b: bytes) -> None:
    assert crc32c(b, crc32c(a)) == crc32c(a + b)


def test_reports_which_path() -> None:
    assert isinstance(crc32c_hardware(), bool)
