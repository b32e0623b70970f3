"""The package as installed: compiled core, one top-level name, no generated C in the wheel."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

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
import cykafka.adapters.compression, cykafka.protocol.produce, cykafka.adapters.socket_transport
import cykafka.adapters.broker_metadata, cykafka.adapters.fake_cluster, cykafka.adapters.clock
print(cykafka.Producer)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_version_has_one_home() -> None:
    assert importlib.metadata.version("cykafka") == cykafka.__version__


def test_messages_point_at_the_docs_url_not_at_a_path() -> None:
    """A message saying "see docs/x.md" names a file that is not in the wheel: messages use errors.DOCS_URL, the
    address pyproject gives as the Documentation URL."""
    import ast

    from cykafka.errors import DOCS_URL

    urls = dict(url.split(", ", 1) for url in importlib.metadata.metadata("cykafka").get_all("Project-URL") or [])
    assert urls["Documentation"] == DOCS_URL
    package_dir = os.path.dirname(cykafka.__file__ or "")
    relative = []
    for folder, _, files in os.walk(package_dir):
        for name in (f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path) as f:
                tree = ast.parse(f.read())
            docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                          if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                          and node.body and isinstance(node.body[0], ast.Expr)}
            relative += [f"{path}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                         if isinstance(node, ast.Constant) and isinstance(node.value, str)
                         and id(node) not in docstrings and "docs/" in node.value
                         and not node.value.startswith("https://")]
    assert not relative, relative


def test_readme_reads_right_on_pypi() -> None:
    """The README is the PyPI page: how to install first, the clone's two commands on the first screen, and only
    absolute links (a relative one breaks on PyPI). Until cykafka is published, `pip install cykafka` fails (issue
    24): the README says so and its first command installs from a clone."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    lines = readme.splitlines()
    first_text = next(line for line in lines if line and not line.startswith(("#", "`", "A ")))
    assert first_text.startswith("cykafka is not on PyPI yet"), first_text
    first_command = next(line for line in lines[lines.index("```bash"):] if line and not line.startswith("`"))
    assert first_command.startswith("git clone https://github.com/cykafka/cykafka"), first_command
    first_screen = "\n".join(lines[:30])
    assert "## From a clone" in first_screen
    assert "bash scripts/demo.sh" in first_screen and "bash scripts/test.sh" in first_screen
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert links and not [link for link in links if not link.startswith("https://")], links
