"""The compiled core's .pxd contracts (docs/architecture.md), checked on the sources: every .pyx that core/_core.pyx
includes has its .pxd beside it, included in the same order by the module's own declarations
(core/pxd/cykafka/core/_core.pxd, where Cython looks for cykafka.core._core's .pxd), declaring exactly its cdef
classes; their fields live only in the .pxd; and the build really used it (a field declared nowhere else is there)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cykafka.core import BufferPool, RecordAccumulator

CORE = Path(__file__).resolve().parent.parent / "core"
INCLUDED = re.findall(r'^include "(\w+)\.pyx"', (CORE / "_core.pyx").read_text(), re.M)
CLASS = re.compile(r"^cdef class (\w+)(?:\(\w+\))?:", re.M)
FIELD = re.compile(r"^    cdef (?!class\b)[^(:]*$")  # a class-level cdef without a parameter list


def class_fields(source: str) -> list[str]:
    """The field declarations in the bodies of `cdef class` blocks (not a function's locals)."""
    fields, in_class = [], False
    for line in source.split("\n"):
        if line and not line[0].isspace() and not line.startswith("#"):
            in_class = CLASS.match(line) is not None
        elif in_class and FIELD.match(line):
            fields.append(line)
    return fields


def test_the_module_declarations_include_each_included_pyx_declarations_in_order() -> None:
    module_pxd = (CORE / "pxd" / "cykafka" / "core" / "_core.pxd").read_text()
    assert len(INCLUDED) >= 13
    assert re.findall(r'^include "(\w+)\.pxd"', module_pxd, re.M) == INCLUDED


@pytest.mark.parametrize("name", INCLUDED)
def test_a_pyx_declares_its_classes_in_its_pxd_and_keeps_no_field(name: str) -> None:
    pyx = (CORE / f"{name}.pyx").read_text()
    pxd = (CORE / f"{name}.pxd").read_text()
    assert CLASS.findall(pyx) == CLASS.findall(pxd)
    assert class_fields(pyx) == [], f"{name}.pyx declares fields; they belong in {name}.pxd"


def test_the_checks_find_a_field_and_a_class() -> None:
    sample = ("cdef int g():\n    cdef int local\n\n@cython.final\ncdef class A(B):\n    cdef readonly int x  # doc\n"
              "    cdef int f(self, int y):\n        cdef int z\n")
    assert CLASS.findall(sample) == ["A"] and class_fields(sample) == ["    cdef readonly int x  # doc"]


def test_the_build_used_the_declarations() -> None:
    """Fields declared only in pool.pxd and accumulator.pxd: without the module's .pxd the extension has none."""
    pool = BufferPool(1024, 256)
    assert (pool.total_memory_bytes, pool.poolable_size_bytes) == (1024, 256)
    assert RecordAccumulator(256, pool).batch_size_bytes == 256
