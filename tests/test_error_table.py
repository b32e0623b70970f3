"""One error table (issue 15): Kafka's error codes live in cykafka/protocol/error_codes.py only, and the producer's
decisions come from its classifications."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cykafka.errors import BrokerResponseError
from cykafka.protocol.error_codes import ERRORS, ErrorCode, ErrorKind, error_for, kinds_of

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "cykafka" / "protocol" / "error_codes.py"
KAFKA_NAMES = frozenset(ErrorCode.__members__)


def _int_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _ints_in(node: ast.AST) -> bool:
    """An int literal, or a tuple/set/list/frozenset(...) holding one."""
    if _int_literal(node):
        return True
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
        return any(_ints_in(e) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple"):
        return any(_ints_in(a) for a in node.args)
    return False


_CODE_NAME = re.compile(r"(?:^|_)codes?$", re.I)  # code, error_code, topic_config_error_code; not codec


def _codeish(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(_CODE_NAME.search(name))


def _bound(node: ast.Assign | ast.AnnAssign) -> list[tuple[str, ast.AST]]:
    """(name, value) pairs an assignment binds; `a, b = x, y` pairs element by element."""
    assert node.value is not None
    pairs: list[tuple[str, ast.AST]] = []
    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(
                node.value.elts):
            pairs += [(t.id, v) for t, v in zip(target.elts, node.value.elts, strict=True) if isinstance(t, ast.Name)]
        else:
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            pairs += [(e.id, node.value) for e in elts if isinstance(e, ast.Name)]
    return pairs


def error_code_literals(source: str) -> list[str]:
    """Where a Python source holds a Kafka error-code number: a comparison of a *code name with int literals, a
    set of ints named *_CODES/*_ERRORS, a constant named as a Kafka error or *_CODE bound to an int (a
    field's default `error_code: int = 0` too: that is NONE), `code=<int>`
    or error_for(<int>)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_codeish(s) for s in sides) and any(_ints_in(s) for s in sides):
                found.append(f"line {node.lineno}: comparison of an error code with a number")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for name, value in _bound(node):
                if not _ints_in(value):
                    continue
                if (name.lstrip("_") in KAFKA_NAMES or _CODE_NAME.search(name)
                        or (not _int_literal(value) and name.endswith(("_CODES", "_ERRORS")))):
                    found.append(f"line {node.lineno}: {name} holds error-code numbers")
        elif isinstance(node, ast.Call):
            if any(k.arg and _CODE_NAME.search(k.arg) and _int_literal(k.value) for k in node.keywords):
                found.append(f"line {node.lineno}: code=<number>")
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "error_for" and node.args and _int_literal(node.args[0]):
                found.append(f"line {node.lineno}: error_for(<number>)")
    return found


_PYX_CONSTANT = re.compile(r"^\s*(?:cdef\s+\w+\s+)?_?([A-Z][A-Z_]+)\s*=\s*-?\d+\b", re.M)
_PYX_COMPARE = re.compile(r"\b(?:\w+_)?code\s*(?:==|!=|\bin\b)\s*\(?\s*-?\d", re.I)


def pyx_error_code_literals(source: str) -> list[str]:
    """The same for the core's Cython: a C constant named as a Kafka error bound to a number, or a code compared with
    a number."""
    found = [f"{m.group(1)} = <number>" for m in _PYX_CONSTANT.finditer(source) if m.group(1) in KAFKA_NAMES]
    return found + [m.group(0) for m in _PYX_COMPARE.finditer(source)]


def _sources(suffix: str) -> list[Path]:
    return [p for d in ("cykafka", "adapters", "ports", "core") for p in sorted((ROOT / d).rglob(f"*{suffix}"))
            if p != TABLE]


def test_the_scanner_finds_what_it_looks_for() -> None:
    planted = """
METADATA_ERRORS = frozenset({3, 5, 6})
FENCED_CODES = (47, 90)
NONE, MESSAGE_TOO_LARGE = 0, 10
class Response:
    error_code: int = 0
UNSUPPORTED_VERSION_CODE = 35
SHOWN_ERRORS = 5
if response.error_code == 35 and code in (14, 51) or -1 == code:
    raise BrokerResponseError("x", code=90, name="PRODUCER_FENCED")
kp.error_for(6)
error, code, base_offset = None, None, -1
raw_code = tags.get(0)
"""
    assert len(error_code_literals(planted)) == 11
    assert error_code_literals("if code == ErrorCode.NONE or kinds_of(code) & ErrorKind.FENCED: n = 0") == []
    planted_pyx = ("cdef enum:\n    _UNKNOWN_PRODUCER_ID = 59\ncdef int _PRODUCER_FENCED = 90\n"
                   "if error_code == 45:\nif codec != 0:\n")
    assert len(pyx_error_code_literals(planted_pyx)) == 3
    assert pyx_error_code_literals("cdef int _UNKNOWN_PRODUCER_ID = ErrorCode.UNKNOWN_PRODUCER_ID\n") == []


def test_no_module_outside_the_table_holds_an_error_code_number() -> None:
    python, pyx = _sources(".py"), _sources(".pyx")
    assert len(python) > 20 and len(pyx) > 5  # the scan sees the tree
    found = {str(p.relative_to(ROOT)): error_code_literals(p.read_text()) for p in python}
    found |= {str(p.relative_to(ROOT)): pyx_error_code_literals(p.read_text()) for p in pyx}
    assert {path: hits for path, hits in found.items() if hits} == {}


def test_the_table_covers_every_code_once() -> None:
    assert set(ERRORS) == set(ErrorCode)
    assert all(ERRORS[code].name == code.name for code in ErrorCode)
    assert all(issubclass(spec.exception, BrokerResponseError) for spec in ERRORS.values())


def _named(kind: ErrorKind) -> set[str]:
    return {spec.name for spec in ERRORS.values() if spec.kinds & kind}


def test_classifications_are_javas() -> None:
    # Java: the InvalidMetadataException subclasses a Produce answer can carry
    assert _named(ErrorKind.STALE_METADATA) == {
        "UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE", "NOT_LEADER_OR_FOLLOWER", "REPLICA_NOT_AVAILABLE",
        "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "INCONSISTENT_TOPIC_ID"}
    assert _named(ErrorKind.FENCED) == {"INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"}
    # Java's TransactionManager.maybeTransitionToErrorState
    assert _named(ErrorKind.PRODUCER_FATAL) == {
        "CLUSTER_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "PRODUCER_FENCED",
        "INVALID_PRODUCER_EPOCH", "UNSUPPORTED_VERSION"}
    assert _named(ErrorKind.TXN_FATAL) == {"TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "INVALID_TXN_STATE"}
    assert _named(ErrorKind.TXN_ABORTABLE) == {"UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_ID_MAPPING"}
    assert _named(ErrorKind.COORDINATOR_MOVED) == {"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"}
    assert _named(ErrorKind.COORDINATOR_LOADING) == {"COORDINATOR_LOAD_IN_PROGRESS"}
    assert not kinds_of(None) and not kinds_of(9999) and not kinds_of(ErrorCode.NONE)


@pytest.mark.parametrize("code", list(ErrorCode))
def test_error_for_builds_the_tables_exception(code: ErrorCode) -> None:
    spec = ERRORS[code]
    error = error_for(code, None)
    assert type(error) is spec.exception
    assert (error.code, error.name, error.retriable) == (code, code.name, spec.retriable)
    assert str(error) == f"{code.name} ({int(code)}): {spec.message}"


@pytest.mark.parametrize("code", list(ErrorCode))
def test_the_core_turns_fatal_exactly_on_the_tables_producer_fatal_codes(code: ErrorCode) -> None:
    from test_transaction_manager import append_batch, drain, initialize, setup

    acc, tm = setup()
    initialize(tm)
    append_batch(acc, 0)
    (batch,) = drain(acc)
    tm.handle_failed_batch(batch, error_for(code, "injected"), True)
    assert tm.has_fatal_error is bool(kinds_of(code) & ErrorKind.PRODUCER_FATAL)
