"""The dependency rules of the layout (docs/architecture.md), checked on the sources: cykafka.errors is a leaf, the
ports, the config, the Sender, the transactional requests, the consumer's fetcher, network loop and offset requests,
the request layer and the protocol import no adapter (codec names and level bounds are record-format facts in
cykafka.ports), the protocol imports nothing but the errors, the core nothing but the protocol and the errors (inner
layers, in folders of their own, never the outer package), adapters take narrow settings (never a client's config),
only the composition roots import adapters, and no client's composition root imports another."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _cykafka_imports(path: Path) -> set[str]:
    if path.suffix == ".pyx":  # Cython: its Python-level imports, read as text
        text = path.read_text()
        return {m.group(1) for m in re.finditer(r"^\s*(?:from|import)\s+(cykafka(?:\.\w+)*)", text, re.M)}
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "cykafka":  # from cykafka import protocol
            names.update(f"cykafka.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return {name for name in names if name == "cykafka" or name.startswith("cykafka.")}


PROTOCOL = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "protocol").glob("*.py"))
CORE = sorted(str(p.relative_to(ROOT)) for pattern in ("*.py", "*.pyx") for p in (ROOT / "core").glob(pattern))
REQUEST_LAYER = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "cykafka/requests").glob("*.py"))


@pytest.mark.parametrize("module", ["cykafka/config.py", "ports/__init__.py", "errors/__init__.py",
                                    "cykafka/sender.py", "cykafka/transactions.py", "cykafka/fetcher.py",
                                    "cykafka/consumer_network.py", "cykafka/consumer_group.py",
                                    "cykafka/share_network.py", "cykafka/share_config.py", *REQUEST_LAYER,
                                    *PROTOCOL])
def test_no_adapter_import(module: str) -> None:
    imported = _cykafka_imports(ROOT / module)
    assert not {name for name in imported if name.startswith("cykafka.adapters")}, imported


@pytest.mark.parametrize("module", PROTOCOL)
def test_the_protocol_depends_on_errors_only(module: str) -> None:
    """Ports speak the protocol's types, so the protocol cannot speak the ports' (or anything outer)."""
    imported = _cykafka_imports(ROOT / module)
    assert {name for name in imported if not name.startswith("cykafka.protocol")} <= {"cykafka.errors"}, imported


@pytest.mark.parametrize("module", CORE)
def test_the_core_stands_on_the_protocol_and_errors_only(module: str) -> None:
    """The core's inner layers are folders of their own (protocol/, errors/), never the outer package cykafka/: the
    core imports them, its own modules, and nothing else of cykafka (no port, no adapter, no client)."""
    imported = _cykafka_imports(ROOT / module)
    allowed = ("cykafka.core", "cykafka.protocol", "cykafka.errors")
    assert {name for name in imported if not name.startswith(allowed)} == set(), imported


def test_the_inner_layers_are_top_level_folders() -> None:
    for inner in ("errors", "protocol", "core", "ports", "adapters"):
        assert (ROOT / inner / "__init__.py").is_file() and not (ROOT / "cykafka" / inner).exists(), inner


@pytest.mark.parametrize("module", REQUEST_LAYER)
def test_the_request_layer_stands_on_ports_protocol_and_errors(module: str) -> None:
    """The request layer (cykafka/requests) is plumbing for every client: it imports no client, no config and no
    adapter, only the ports, the protocol, the errors and itself."""
    imported = _cykafka_imports(ROOT / module)
    allowed = ("cykafka.requests", "cykafka.ports", "cykafka.protocol", "cykafka.errors")
    assert {name for name in imported if not name.startswith(allowed)} == set(), imported


def test_errors_is_a_leaf() -> None:
    assert _cykafka_imports(ROOT / "errors/__init__.py") == set()


# The composition roots: they build adapters from a config and wire them to the core (docs/architecture.md).
COMPOSITION_ROOTS = {"cykafka/producer.py", "cykafka/admin.py", "cykafka/consumer.py", "cykafka/broker.py",
                     "cykafka/share_consumer.py",
                     "cykafka/cli.py", *(str(p.relative_to(ROOT)) for p in (ROOT / "cykafka/spark").glob("*.py"))}
_ADAPTER_MAY_IMPORT = ("cykafka.adapters", "cykafka.ports", "cykafka.errors", "cykafka.protocol", "cykafka.core")


# The clients' own composition roots wire one client each: none builds on another (a value two clients share lives in
# cykafka.ports.values, the request plumbing in the request layer). The applications (asyncio, the CLI, the demo,
# Spark) are built on the clients.
CLIENT_ROOTS = ("cykafka/producer.py", "cykafka/consumer.py", "cykafka/admin.py", "cykafka/broker.py",
                "cykafka/share_consumer.py")


@pytest.mark.parametrize("module", CLIENT_ROOTS)
def test_no_client_root_imports_another_composition_root(module: str) -> None:
    roots = {"cykafka.spark", *(f"cykafka.{Path(root).stem}" for root in COMPOSITION_ROOTS if root.count("/") == 1)}
    assert _cykafka_imports(ROOT / module) & roots == set()


@pytest.mark.parametrize("module", sorted(COMPOSITION_ROOTS))
def test_no_composition_root_imports_another_clients_root(module: str) -> None:
    """Not even the applications' roots import each other, but for the clients they are built on (asyncio, the CLI
    and Spark build Producers and Consumers): a root never reaches into another root's wiring."""
    clients = {f"cykafka.{Path(root).stem}" for root in CLIENT_ROOTS}
    others = {f"cykafka.{Path(root).stem}" for root in COMPOSITION_ROOTS if root.count("/") == 1} - clients
    assert _cykafka_imports(ROOT / module) & (others - {f"cykafka.{Path(module).stem}"}) == set()


# The consumer's parts (Java's SubscriptionState, FetchBuffer, FetchCollector, Fetcher, OffsetFetcher,
# TopicMetadataFetcher, ConsumerCoordinator, its lock, waits and poll loop): the Consumer wires them; none of them
# imports it, nor any composition root or adapter.
CONSUMER_PARTS = ("cykafka/subscription_state.py", "cykafka/fetch_buffer.py", "cykafka/fetch_collector.py",
                  "cykafka/fetcher.py", "cykafka/offset_fetcher.py", "cykafka/consumer_coordinator.py",
                  "cykafka/consumer_group.py", "cykafka/consumer_network.py", "cykafka/consumer_lock.py",
                  "cykafka/consumer_waits.py", "cykafka/consumer_poll.py", "cykafka/topic_metadata_fetcher.py")


@pytest.mark.parametrize("module", CONSUMER_PARTS)
def test_the_consumer_parts_do_not_import_the_composition_root(module: str) -> None:
    roots = {"cykafka.spark", *(f"cykafka.{Path(root).stem}" for root in COMPOSITION_ROOTS if root.count("/") == 1)}
    imported = _cykafka_imports(ROOT / module)
    assert imported & roots == set() and not {name for name in imported if name.startswith("cykafka.adapters")}


def test_asyncio_consumer_uses_no_private_member_of_the_consumer() -> None:
    """cykafka.aio's consumer side (AsyncConsumer, its listener wrapper, its poll) stands on the Consumer's public
    seam (poll_into, calling, lent_to, closed): no `x._name` on anything but self."""
    tree = ast.parse((ROOT / "cykafka/aio.py").read_text())
    consumer_side = [node for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)
                     and node.name in ("AsyncConsumer", "_ListenerOnLoop", "_poll_records")]
    assert len(consumer_side) == 3
    private = [f"{ast.unparse(node)} (line {node.lineno})" for side in consumer_side for node in ast.walk(side)
               if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
               and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]
    assert private == []


@pytest.mark.parametrize("module", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "adapters").glob("*.py")))
def test_adapters_depend_on_ports_errors_protocol_and_core_only(module: str) -> None:
    imported = _cykafka_imports(ROOT / module)
    assert {name for name in imported if not name.startswith(_ADAPTER_MAY_IMPORT)} == set(), (
        f"{module} imports beyond ports/errors/protocol/core: it must take narrow settings, not a client's config")


def test_only_composition_roots_import_adapters() -> None:
    importers = {str(p.relative_to(ROOT)) for p in [*(ROOT / "cykafka").rglob("*.py"), *(ROOT / "ports").glob("*.py")]
                 if any(name.startswith("cykafka.adapters") for name in _cykafka_imports(p))}
    assert importers - COMPOSITION_ROOTS == set()
    assert "cykafka/producer.py" in importers  # the scan sees imports inside functions too


def test_transaction_states_are_compared_as_the_enum_never_by_name() -> None:
    """Transaction decisions live in cykafka/transactions.py on the core's TransactionState: no module compares a
    state's name (e.g. `state_name == "IN_TRANSACTION"`)."""
    from cykafka.core import TransactionState

    names = {state.name for state in TransactionState}
    found = []
    for path in sorted((ROOT / "cykafka").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    values = operand.elts if isinstance(operand, ast.Tuple | ast.Set | ast.List) else [operand]
                    found += [f"{path.relative_to(ROOT)}:{node.lineno}" for v in values
                              if isinstance(v, ast.Constant) and v.value in names]
    assert found == []


MAX_MODULE_LINES = 800  # issue 26: a module past this is more than one room; split it by what it owns
CONSUMER_MAX_LINES = 500  # the Consumer is API and wiring: its parts live in their own modules (docs/architecture.md)


def test_no_module_of_the_package_is_too_big_to_read() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "cykafka").rglob("*.py")}
    assert {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES} == {}
    assert sizes["cykafka/consumer.py"] <= CONSUMER_MAX_LINES
