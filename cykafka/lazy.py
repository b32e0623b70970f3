"""Owns a package's names loaded on first use (PEP 562): the package's `__getattr__` and `__dir__`, built from its one
table of name -> module. A name is imported from its module when first asked for, then held as a plain attribute; any
other name is a submodule (the attribute an eager import used to set) or an AttributeError. The package repeats the
table as imports under TYPE_CHECKING for mypy; tests/test_typing.py checks the two agree."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str], namespace: dict[str, Any],
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module `__getattr__` and `__dir__` of `package` (its globals: `namespace`) for the names in `homes`."""
    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return __getattr__, __dir__
