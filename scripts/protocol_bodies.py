"""Writes protocol/bodies.py from the API descriptions (protocol/apis.py): a TypedDict for every API's request and
response body and for each struct nested in them, each field commented with its `about` and versions, so mypy sees
every body's field names where code builds or reads one.

    python scripts/protocol_bodies.py           # rewrites protocol/bodies.py from the installed cykafka.protocol
    python scripts/protocol_bodies.py --check   # exits 1 when protocol/bodies.py is out of date

It reads the installed package (as the tests do): after changing protocol/apis.py, install (scripts/env.sh), then
run it. tests/test_protocol_bodies.py checks the file is up to date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cykafka.protocol.apis import APIS
from cykafka.protocol.schema import MAX_VERSION, Api, Field

OUT = Path(__file__).resolve().parent.parent / "protocol" / "bodies.py"
_SCALARS = {"int8": "int", "int16": "int", "uint16": "int", "int32": "int", "int64": "int", "varint": "int",
            "varlong": "int", "bool": "bool", "float64": "float", "uuid": "UUID", "string": "str"}
_BUFFER = "bytes | bytearray | memoryview"  # what the encoder takes for bytes and records

HEADER = '''"""Typed bodies of every API cykafka speaks, GENERATED from protocol/apis.py by
scripts/protocol_bodies.py: do not edit (tests/test_protocol_bodies.py checks it is up to date).

For mypy only: a request body is a `<Api>RequestBody` (total=False: a field left out takes its default), an answer a
`<Api>ResponseBody` (every field; a version lacking one holds its default); a struct nested in a body is named after
its path (`FetchRequestTopicsPartitions`). Annotate a body literal with its type and mypy checks its field names and
value types; at run time the codec checks them again (protocol/codec.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict
from uuid import UUID
'''


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _versions(low: int, high: int) -> str:
    return f"v{low}+" if high >= MAX_VERSION else f"v{low}" if low == high else f"v{low}-{high}"


def _type(f: Field, nested: str, request: bool) -> str:
    if f.type == "{}":
        text = nested
    elif f.type.startswith("[]"):
        item = nested if f.type == "[]" else _scalar(f.item_type, request)
        text = f"{'Sequence' if request else 'list'}[{item}]"
    else:
        text = _scalar(f.type, request)
    nullable = f.nullable[0] <= f.nullable[1]
    return f"{text} | None" if nullable else text


def _scalar(type_: str, request: bool) -> str:
    if type_ in ("bytes", "records"):
        return _BUFFER if request else "bytes"
    return _SCALARS[type_]


def _classes(name: str, fields: tuple[Field, ...], request: bool, doc: str, out: list[str], top: str = "") -> None:
    """The TypedDict `top` (else `name`) for these fields, after the ones for the structs nested in them (named
    `name` + the field's name)."""
    lines = [f"class {top or name}(TypedDict{', total=False' if request else ''}):", f'    """{doc}"""', ""]
    for f in fields:
        nested = f"{name}{_camel(f.name)}"
        if f.fields:
            _classes(nested, f.fields, request, f"{f.about[:1].upper()}{f.about[1:]}.", out)
        note = f"{f.about} ({_versions(*f.versions)}{', ignorable' if f.ignorable else ''})"
        lines += [f"    # {note}", f"    {f.name}: {_type(f, nested, request)}"]
    out.append("\n".join(lines))


def render() -> str:
    classes: list[str] = []
    for described in sorted(APIS.values(), key=lambda a: a.key):
        api: Api = described
        span = _versions(*api.valid)
        for kind, fields, request in (("Request", api.request, True), ("Response", api.response, False)):
            _classes(f"{api.name}{kind}", fields, request, f"{api.name} (key {api.key}) {kind.lower()} body, {span}.",
                     classes, top=f"{api.name}{kind}Body")
    return HEADER + "\n\n" + "\n\n\n".join(classes) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when protocol/bodies.py is out of date")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date: run python scripts/protocol_bodies.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
