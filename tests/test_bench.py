"""bench/ keeps running (tiny sizes, no timing assertions: throughput belongs in bench/): the one-command runner's
report, and the end-to-end workers under `python -m cProfile`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cykafka.broker import EmbeddedBroker

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def test_run_writes_the_report_and_the_targets(tmp_path: object) -> None:
    out = str(tmp_path)
    args = [sys.executable, os.path.join(BENCH, "run.py"), "--only", "encode", "--quick", "--out", out]
    printed = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    report = open(os.path.join(out, "results.md")).read()
    assert "encode-only vs aiokafka's Cython builder, none" in report and report.strip() in printed
    assert set(json.load(open(os.path.join(out, "runs.json")))["encode"]) == {"none", "lz4"}


@pytest.mark.broker
@pytest.mark.parametrize(("client", "mode"), [("cykafka", "throughput"), ("cykafka-batch", "overload"),
                                              ("confluent", "latency")])
def test_workers_run_under_cprofile(broker: EmbeddedBroker, tmp_path: object, client: str, mode: str) -> None:
    profile = os.path.join(str(tmp_path), "worker.prof")
    args = [sys.executable, "-m", "cProfile", "-o", profile, os.path.join(BENCH, "e2e_bench.py"), "--worker", client,
            "--bootstrap", broker.bootstrap_servers, "--records", "2000", "--mode", mode, "--rate", "5000"]
    printed = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    result = json.loads(printed.strip().splitlines()[-1])
    assert result["client"] == client and result["records"] == 2000 and result["errors"] == 0
    assert os.path.getsize(profile) > 0
    if mode == "latency":
        assert result["p99_ms"] >= result["p50_ms"] > 0
    if mode == "overload":
        assert "rss_growth_mib" in result
