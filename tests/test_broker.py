"""The embedded dev broker: answers ApiVersions on loopback, stops by pid, clear error when missing."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from cykafka.broker import EmbeddedBroker, api_versions_answers, free_port, tansu_binary
from cykafka.errors import BrokerNotFoundError


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie may wait for a PID 1 that never reaps)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_fixture_broker_answers_api_versions(broker: EmbeddedBroker) -> None:
    assert broker.host == "127.0.0.1"
    assert api_versions_answers(broker.host, broker.port)


def test_stop_kills_the_process_by_pid() -> None:
    b = EmbeddedBroker().start()
    pid = b.pid
    assert pid is not None and api_versions_answers(b.host, b.port)
    b.stop()
    assert not _alive(pid)
    assert not api_versions_answers(b.host, b.port, timeout_s=0.2)


def test_broker_dies_with_a_killed_parent() -> None:
    port = free_port()
    code = (f"from cykafka.broker import EmbeddedBroker; import os; b = EmbeddedBroker({port}).start(); "
            "print(b.pid, flush=True); os._exit(0)")  # no atexit, no stop(): only PDEATHSIG can clean up
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    pid = int(out.stdout.split()[0])
    for _ in range(100):
        if not _alive(pid):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"broker pid {pid} outlived its parent")
    assert not api_versions_answers("127.0.0.1", port, timeout_s=0.2)


def test_missing_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CYKAFKA_TANSU", "/nonexistent/tansu")
    with pytest.raises(BrokerNotFoundError, match="not found"):
        tansu_binary()


def test_cli_help_mentions_broker() -> None:
    out = subprocess.run([sys.executable, "-m", "cykafka.cli", "--help"], capture_output=True, text=True, check=True)
    assert "broker" in out.stdout
