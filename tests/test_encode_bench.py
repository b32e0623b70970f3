"""bench/encode_bench.py keeps running (tiny sizes, no timing assertions: throughput belongs in bench/)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "encode_bench.py")


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_encode_bench_runs(codec: str) -> None:
    args = [sys.executable, BENCH, "--records", "3000", "--slow-records", "500", "--rounds", "1", "--codec", codec]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "| cykafka RecordBatchBuilder | 3,000 |" in out
    assert "aiokafka" in out and "kafka-python" in out
