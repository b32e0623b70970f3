"""The dependency rules of the layout (docs/architecture.md), checked on the sources: cykafka.errors is a leaf, the
ports, the config and the consumer's fetcher, network loop and offset requests import no adapter (codec names and
level bounds are record-format facts in cykafka.ports; the Consumer, a composition root, hands the codecs in)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _cykafka_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return {name for name in names if name == "cykafka" or name.startswith("cykafka.")}


@pytest.mark.parametrize("module", ["cykafka/config.py", "ports/__init__.py", "cykafka/errors.py", "cykafka/fetcher.py",
                                    "cykafka/consumer_network.py", "cykafka/group_offsets.py"])
def test_no_adapter_import(module: str) -> None:
    imported = _cykafka_imports(ROOT / module)
    assert not {name for name in imported if name.startswith("cykafka.adapters")}, imported


def test_errors_is_a_leaf() -> None:
    assert _cykafka_imports(ROOT / "cykafka/errors.py") == set()
