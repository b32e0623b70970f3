"""cykafka's protocol descriptions against Apache Kafka's own message schemas, version by version.

jvm/tools/SchemaDump.java, compiled against the pinned kafka-clients jar, prints Kafka's request and response
schemas of every API (fields in wire order, types, nullability, tagged fields with their tags). For every API cykafka
describes and every version both speak, the fields cykafka encodes and decodes must be Kafka's: the same names, in
the same order, of the same types, nullable where Kafka's are. A new API description is checked the moment it lands.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cykafka.protocol import API_NAMES, APIS
from cykafka.protocol.schema import Field

pytestmark = pytest.mark.slow

# where cykafka's name for a field is not (yet) Kafka's, the wire being the same: (API, our name) -> Kafka's name
# (Kafka 4 renamed generation_id for KIP-848's member epochs: OffsetCommit's is renamed, TxnOffsetCommit's not yet)
RENAMED = {("TxnOffsetCommit", "generation_id"): "generation_id_or_member_epoch"}
ROOT = Path(__file__).resolve().parent.parent
DUMPER = ROOT / "jvm" / "tools" / "SchemaDump.java"


@pytest.fixture(scope="module")
def kafka_schemas(apache_kafka: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    from apache_kafka import NEWEST, java_binary, kafka_lib

    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac (a JDK) on PATH")
    classpath = f"{kafka_lib(NEWEST)}/*"
    out = tmp_path_factory.mktemp("schemadump")
    subprocess.run([javac, "-d", str(out), "-cp", classpath, str(DUMPER)], check=True, timeout=300)
    dumped = subprocess.run([java_binary(), "-cp", f"{out}:{classpath}", "SchemaDump", *map(str, sorted(APIS))],
                            check=True, capture_output=True, text=True, timeout=300).stdout
    return {entry["key"]: entry for entry in map(json.loads, dumped.splitlines())}


def _ours(api: str, fields: tuple[Field, ...], version: int, flexible: bool) -> list[dict[str, Any]]:
    """Our fields present at `version`, in the shape SchemaDump prints (tagged ones only in flexible versions)."""
    out = []
    for f in fields:
        if not f.present(version) or (f.tag is not None and not flexible):
            continue
        entry: dict[str, Any] = {"name": RENAMED.get((api, f.name), f.name), "nullable": f.nullable_in(version),
                                 "type": f.type}
        if f.fields:
            entry["fields"] = _ours(api, f.fields, version, flexible)
        if f.tag is not None:
            entry["tag"] = f.tag
        out.append(entry)
    return out


def _normal(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kafka's wire order for plain fields; tagged fields by tag (their order on the wire)."""
    plain = [f for f in fields if "tag" not in f]
    tagged = sorted((f for f in fields if "tag" in f), key=lambda f: f["tag"])
    return [{**f, **({"fields": _normal(f["fields"])} if "fields" in f else {})} for f in plain + tagged]


@pytest.mark.parametrize("key", sorted(APIS), ids=[API_NAMES[k] for k in sorted(APIS)])
def test_our_description_is_kafkas_schema_at_every_shared_version(kafka_schemas: dict[int, dict[str, Any]],
                                                                   key: int) -> None:
    described, theirs = APIS[key], kafka_schemas[key]
    shared = [v for v in described.versions if theirs["oldest"] <= v <= theirs["latest"]]
    assert shared, f"{described.name}: no version in common with Kafka's {theirs['oldest']}-{theirs['latest']}"
    problems = []
    for version in shared:
        flexible = described.is_flexible(version)
        for side, ours_fields in (("request", described.request), ("response", described.response)):
            ours = _normal(_ours(described.name, ours_fields, version, flexible))
            kafka = _normal(theirs[side][str(version)])
            if ours != kafka:
                problems.append(f"{described.name} v{version} {side}:\n  ours  {ours}\n  kafka {kafka}")
    assert not problems, "\n".join(problems)
