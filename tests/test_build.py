"""The package as installed: compiled core, one top-level name, no generated C in the wheel."""

from __future__ import annotations

import importlib.metadata
import os

import cykafka
import cykafka.core
from cykafka.core import _core


def test_core_is_a_compiled_extension() -> None:
    assert _core.__file__ is not None
    assert _core.__file__.endswith(".so"), _core.__file__
    assert cykafka.core.crc32c is _core.crc32c
    assert "cython" in type(_core.crc32c).__name__


def test_installed_from_site_packages_not_the_source_tree() -> None:
    assert "site-packages" in (cykafka.__file__ or ""), cykafka.__file__


def test_only_cykafka_is_installed_at_top_level() -> None:
    files = importlib.metadata.files("cykafka") or []
    tops = set()
    for f in files:
        parts = f.parts
        if parts[0] == "..":  # console scripts in bin/
            continue
        tops.add(parts[0])
    tops = {t for t in tops if not t.endswith(".dist-info")}
    assert tops == {"cykafka"}, tops
    names = [str(f) for f in files]
    assert not [n for n in names if n.endswith((".c", ".pyx", ".h"))], names
    assert "cykafka/py.typed" in names and "cykafka/core/_core.pyi" in names


def test_py_typed_and_stubs_next_to_the_extension() -> None:
    core_dir = os.path.dirname(_core.__file__ or "")
    assert os.path.exists(os.path.join(core_dir, "_core.pyi"))


def test_imports_need_only_the_runtime_dependencies() -> None:
    """Dev-only packages (typing_extensions, the verifiers) must not be needed to import cykafka and its adapters."""
    import subprocess
    import sys

    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('typing_extensions', 'confluent_kafka', 'kafka', 'aiokafka', 'pytest', 'hypothesis'):
            raise ImportError('dev-only package imported at runtime: ' + name)
sys.meta_path.insert(0, Block())
import cykafka, cykafka.cli, cykafka.broker, cykafka.protocol
import cykafka.adapters.compression, cykafka.adapters.kafka_protocol, cykafka.adapters.socket_transport
import cykafka.adapters.broker_metadata, cykafka.adapters.fake_cluster, cykafka.adapters.clock
print(cykafka.Producer)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
