"""Shared fixtures: the embedded Tansu broker (one per session, stopped by pid even when tests fail)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cykafka.broker import EmbeddedBroker

sys.path.insert(0, str(Path(__file__).parent))  # test helper modules (security_peers) import by name


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    b = EmbeddedBroker().start()
    try:
        yield b
    finally:
        b.stop()
