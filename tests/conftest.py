"""Shared fixtures: the embedded Tansu broker (one per session, stopped by pid even when tests fail)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cykafka.broker import EmbeddedBroker


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    b = EmbeddedBroker().start()
    try:
        yield b
    finally:
        b.stop()
