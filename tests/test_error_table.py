"""One error table (issue 15): Kafka's error codes live in protocol/error_codes.py only, and the producer's
decisions come from its classifications."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from cykafka.errors import BrokerResponseError, KafkaError
from cykafka.protocol.error_codes import ERROR_CODES, ERRORS, ErrorCode, ErrorKind, error_for, kinds_of

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "protocol" / "error_codes.py"
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
    folders = ("cykafka", "errors", "protocol", "adapters", "ports", "core")
    return [p for d in folders for p in sorted((ROOT / d).rglob(f"*{suffix}")) if p != TABLE]


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


def test_authorization_codes_build_javas_authorization_classes() -> None:
    from cykafka import (
        AuthorizationError,
        ClusterAuthorizationError,
        GroupAuthorizationError,
        TopicAuthorizationError,
        TransactionalIdAuthorizationError,
    )

    assert {code.name: ERRORS[code].exception for code in ErrorCode if issubclass(ERRORS[code].exception,
                                                                                  AuthorizationError)} == {
        "TOPIC_AUTHORIZATION_FAILED": TopicAuthorizationError,
        "GROUP_AUTHORIZATION_FAILED": GroupAuthorizationError,
        "CLUSTER_AUTHORIZATION_FAILED": ClusterAuthorizationError,
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": TransactionalIdAuthorizationError,
        "DELEGATION_TOKEN_AUTHORIZATION_FAILED": AuthorizationError,
    }
    assert not any(ERRORS[code].retriable for code in ErrorCode if issubclass(ERRORS[code].exception,
                                                                               AuthorizationError))


@pytest.mark.parametrize("code", list(ErrorCode))
def test_the_core_turns_fatal_exactly_on_the_tables_producer_fatal_codes(code: ErrorCode) -> None:
    from test_transaction_manager import append_batch, drain, initialize, setup

    acc, tm = setup()
    initialize(tm)
    append_batch(acc, 0)
    (batch,) = drain(acc)
    tm.handle_failed_batch(batch, error_for(code, "injected"), True)
    assert tm.has_fatal_error is bool(kinds_of(code) & ErrorKind.PRODUCER_FATAL)


# --- the table against Kafka's names and retriable flags (and kafka-python's) ------------------------------------


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [(-1, "UNKNOWN_SERVER_ERROR", False), (2, "CORRUPT_MESSAGE", True), (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
     (6, "NOT_LEADER_OR_FOLLOWER", True), (7, "REQUEST_TIMED_OUT", True), (10, "MESSAGE_TOO_LARGE", False),
     (13, "NETWORK_EXCEPTION", True), (14, "COORDINATOR_LOAD_IN_PROGRESS", True),
     (15, "COORDINATOR_NOT_AVAILABLE", True), (16, "NOT_COORDINATOR", True), (17, "INVALID_TOPIC_EXCEPTION", False),
     (18, "RECORD_LIST_TOO_LARGE", False), (19, "NOT_ENOUGH_REPLICAS", True),
     (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True), (21, "INVALID_REQUIRED_ACKS", False),
     (29, "TOPIC_AUTHORIZATION_FAILED", False), (33, "UNSUPPORTED_SASL_MECHANISM", False),
     (34, "ILLEGAL_SASL_STATE", False), (36, "TOPIC_ALREADY_EXISTS", False),
     (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False), (46, "DUPLICATE_SEQUENCE_NUMBER", False),
     (47, "INVALID_PRODUCER_EPOCH", False), (48, "INVALID_TXN_STATE", False),
     (49, "INVALID_PRODUCER_ID_MAPPING", False), (50, "INVALID_TRANSACTION_TIMEOUT", False),
     (51, "CONCURRENT_TRANSACTIONS", True), (52, "TRANSACTION_COORDINATOR_FENCED", False),
     (56, "KAFKA_STORAGE_ERROR", True), (58, "SASL_AUTHENTICATION_FAILED", False), (59, "UNKNOWN_PRODUCER_ID", False),
     (74, "FENCED_LEADER_EPOCH", True), (75, "UNKNOWN_LEADER_EPOCH", True), (87, "INVALID_RECORD", False),
     (89, "THROTTLING_QUOTA_EXCEEDED", True), (90, "PRODUCER_FENCED", False), (120, "TRANSACTION_ABORTABLE", False),
     (121, "INVALID_RECORD_STATE", False), (122, "SHARE_SESSION_NOT_FOUND", True),
     (123, "INVALID_SHARE_SESSION_EPOCH", True), (124, "FENCED_STATE_EPOCH", False),
     (133, "SHARE_SESSION_LIMIT_REACHED", False)],
)
def test_error_table_matches_kafka(code: int, name: str, retriable: bool) -> None:
    assert ERRORS[code].name == name
    assert ERRORS[code].retriable is retriable
    assert ERROR_CODES[name] == code
    error = error_for(code, "broker says hi")
    assert isinstance(error, BrokerResponseError) and isinstance(error, KafkaError)
    assert (error.code, error.name, error.retriable) == (code, name, retriable)
    assert name in str(error) and "broker says hi" in str(error)


def test_error_table_is_complete_and_consistent() -> None:
    assert set(ERRORS) == set(range(-1, 134))
    assert len(ERROR_CODES) == len(ERRORS)
    assert "not the leader" in str(error_for(6))  # the table's message when the broker sent none
    unknown = error_for(9999)
    assert isinstance(unknown, BrokerResponseError)
    assert (unknown.code, unknown.name, unknown.retriable) == (9999, "UNKNOWN_ERROR_CODE_9999", False)


def test_error_table_retriable_flags_match_kafka_python() -> None:
    import kafka.errors as ke

    for code, info in ERRORS.items():
        theirs = ke.for_code(code)
        if (theirs is ke.UnknownError and code != -1) or code == 2:
            continue  # codes kafka-python does not know; CORRUPT_MESSAGE is retriable in Java, not in kafka-python
        assert bool(getattr(theirs, "retriable", False)) is info.retriable, (code, info.name)
