"""Hypothesis strategies drawn from the protocol descriptions: a value for any API version, field by field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cykafka.protocol import APIS, Api, Field

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "varint": 32, "varlong": 64}
_PRIMITIVES: dict[str, st.SearchStrategy[Any]] = {
    **{name: st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) for name, bits in _INTS.items()},
    "uint16": st.integers(0, 0xFFFF),
    "uuid": st.uuids(),
    "float64": st.floats(allow_nan=False),
    "bool": st.booleans(),
    "string": st.text(max_size=12),
    "bytes": st.binary(max_size=24),
    "records": st.binary(max_size=24),
}

API_VERSIONS = [(a.key, v) for a in APIS.values() for v in a.versions]
# every (api key, version, response?) the descriptions define
ALL_MESSAGES = [(key, v, response) for key, v in API_VERSIONS for response in (False, True)]


def field_values(f: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """Values of one field at this version: its default where the version lacks it."""
    if not f.present(version) or (f.tag is not None and not flexible):
        return st.builds(f.default)
    if f.type == "{}":
        values = struct_values(f.fields, version, flexible)
    elif f.fields:
        values = st.lists(struct_values(f.fields, version, flexible), max_size=3)
    elif f.type.startswith("[]"):
        values = st.lists(_PRIMITIVES[f.item_type], max_size=3)
    else:
        values = _PRIMITIVES[f.type]
    return st.none() | values if f.nullable_in(version) else values


def struct_values(fields: tuple[Field, ...], version: int, flexible: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({f.name: field_values(f, version, flexible) for f in fields})


def message_values(api: Api, version: int, response: bool) -> st.SearchStrategy[dict[str, Any]]:
    return struct_values(api.response if response else api.request, version, api.is_flexible(version))


def message_id(case: tuple[int, int, bool]) -> str:
    key, version, response = case
    return f"{APIS[key].name}-v{version}-{'response' if response else 'request'}"


def each_message(cases: list[tuple[int, int, bool]], max_examples: int) -> Callable[[Callable[..., None]],
                                                                                    Callable[..., None]]:
    """Runs a `test(case, data)` once per (api key, version, response?) case, drawing with hypothesis."""
    def wrap(test: Callable[..., None]) -> Callable[..., None]:
        drawn = settings(max_examples=max_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])(
            given(data=st.data())(test))
        marked: Callable[..., None] = pytest.mark.parametrize("case", cases, ids=message_id)(drawn)
        return marked

    return wrap
