"""Protocol bodies checked (issue 26): a request naming a field its description lacks, or setting one the negotiated
version does not carry, fails to encode instead of encoding as if it were not there; every field says what it is;
protocol/bodies.py (TypedDicts generated from the descriptions) is up to date, and mypy sees the field names."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from cykafka.errors import RequestEncodeError
from cykafka.protocol import APIS, Api, decode_message, encode_message, encode_request
from cykafka.protocol.apis import FIND_COORDINATOR, HEARTBEAT, JOIN_GROUP, OFFSET_FETCH
from cykafka.protocol.consumer_protocol import ASSIGNMENT, SUBSCRIPTION
from cykafka.protocol.schema import Field

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("protocol_bodies", ROOT / "scripts" / "protocol_bodies.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_typed_bodies_are_generated_from_the_descriptions_as_they_are() -> None:
    assert (ROOT / "protocol" / "bodies.py").read_text() == _generator().render(), (
        "protocol/bodies.py is out of date: run python scripts/protocol_bodies.py")


def _fields(fields: tuple[Field, ...], path: str) -> list[tuple[str, Field]]:
    return [item for f in fields for item in [(path + f.name, f), *_fields(f.fields, f"{path}{f.name}.")]]


@pytest.mark.parametrize("described", [*APIS.values(), SUBSCRIPTION, ASSIGNMENT], ids=lambda a: a.name)
def test_every_field_says_what_it_is(described: Api) -> None:
    fields = _fields(described.request, "request.") + _fields(described.response, "response.")
    assert [path for path, f in fields if not f.about.strip()] == []


def test_a_misspelt_field_is_an_error_naming_it() -> None:
    body = {"group_id": "g", "genration_id": 3, "member_id": "m"}
    with pytest.raises(RequestEncodeError, match=r"Heartbeat v4: unknown field\(s\) genration_id"):
        encode_message(HEARTBEAT, 4, body)
    with pytest.raises(RequestEncodeError, match=r"unknown field\(s\) groups\[\]\.topik"):  # nested too
        encode_message(OFFSET_FETCH, 8, {"groups": [{"group_id": "g", "topik": None}]})


def test_a_field_the_version_does_not_carry_is_an_error_unless_ignorable() -> None:
    body = {"group_id": "g", "session_timeout_ms": 10, "member_id": "", "protocol_type": "consumer",
            "protocols": [], "group_instance_id": "static-1"}
    encode_message(JOIN_GROUP, 5, body)  # static membership: v5+
    with pytest.raises(RequestEncodeError, match=r"group_instance_id is set .* this version does not carry it"):
        encode_message(JOIN_GROUP, 4, body)
    dynamic = {**body, "group_instance_id": None, "reason": "a reason"}
    v4 = decode_message(JOIN_GROUP, 4, encode_message(JOIN_GROUP, 4, dynamic))  # its default: fine; reason: ignorable
    assert v4["group_instance_id"] is None and v4["reason"] is None
    assert decode_message(JOIN_GROUP, 8, encode_message(JOIN_GROUP, 8, dynamic))["reason"] == "a reason"


def test_a_body_may_carry_an_old_and_a_new_form_side_by_side() -> None:
    body = {"key": "g", "key_type": 0, "coordinator_keys": ["g"]}
    assert decode_message(FIND_COORDINATOR, 3, encode_message(FIND_COORDINATOR, 3, body))["key"] == "g"
    assert decode_message(FIND_COORDINATOR, 4, encode_message(FIND_COORDINATOR, 4, body))["coordinator_keys"] == ["g"]
    assert encode_request(FIND_COORDINATOR.key, 4, 1, "c", body)  # whole frames too


def test_answers_are_not_checked_so_fakes_may_write_every_version() -> None:
    answer = {"throttle_time_ms": 0, "error_code": 0, "node_id": 1, "host": "h", "port": 9,
              "coordinators": [{"key": "g", "node_id": 1, "host": "h", "port": 9, "error_code": 0}]}
    assert encode_message(FIND_COORDINATOR, 4, answer, response=True)


def test_mypy_sees_the_field_names_of_a_typed_body(tmp_path: Path) -> None:
    program = tmp_path / "bodies_user.py"
    program.write_text(textwrap.dedent("""
        from cykafka.protocol.bodies import HeartbeatRequestBody, OffsetFetchResponseBody

        good: HeartbeatRequestBody = {"group_id": "g", "generation_id": 1, "member_id": "m"}
        bad: HeartbeatRequestBody = {"group_id": "g", "genration_id": 1}

        def committed(answer: OffsetFetchResponseBody) -> int:
            return answer["groups"][0]["topics"][0]["partitions"][0]["comitted_offset"]
    """))
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(program)],
                            capture_output=True, text=True, cwd=tmp_path)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line and "no-any-return" not in line]
    assert len(errors) == 2, result.stdout
    assert '"genration_id"' in errors[0] and ":5:" in errors[0]
    assert '"comitted_offset"' in errors[1] and ":8:" in errors[1]
    good = tmp_path / "bodies_good.py"
    good.write_text(program.read_text().replace("genration_id", "generation_id").replace("comitted", "committed"))
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(good)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout
