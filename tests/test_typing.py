"""What a user's type checker and help() see: mypy --strict on user programs, the stub against the compiled module
(mypy.stubtest), signatures and docstrings of the compiled classes, the test-only ports keyword."""

from __future__ import annotations

import dataclasses
import inspect
import pydoc
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cykafka import BatchResult, ConfigError, KafkaError, Producer, RecordFuture, RecordMetadata
from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.ports import ClientResponse, Ports
from cykafka.protocol import ProduceRequest

HERE = Path(__file__).parent

USER_PROGRAM = """
    from cykafka import Admin, Consumer, ConsumerRecord, KafkaError, Producer, RecordMetadata, TopicPartition


    def on_delivery(err: KafkaError | None, md: RecordMetadata | None) -> None:
        if err is not None:
            print("failed:", err, err.retriable)
        elif md is not None:
            print(md.topic, md.partition, md.offset, md.timestamp_ms)


    def produce(config: dict[str, object]) -> None:
        with Producer(**config) as producer:
            future = producer.send("t", b"value", key="k", partition=0, on_delivery=on_delivery)
            metadata: RecordMetadata = future.result(10)
            error: KafkaError | None = future.exception(0)
            print(metadata, error, producer.metrics()["record-send-rate"], producer.partitions_for("t"))
        batch = Producer(config, linger_ms=5).send_batch("t", [b"a", b"b"])
        delivered: int = batch.result(10)
        failures: list[tuple[int, KafkaError]] = batch.errors
        print(delivered, failures)
        with Admin(**config) as admin:
            print(admin.list_topics())
        with Consumer(**config) as consumer:
            consumer.assign([TopicPartition("t", 0)])
            records: list[ConsumerRecord] = consumer.poll(1.0)
            print([(r.offset, r.key, r.value, r.headers) for r in records], consumer.position(TopicPartition("t", 0)))
"""

WRONG_PROGRAM = """
    from cykafka import Producer


    def takes_one(err: object) -> None: ...


    def produce(config: dict[str, object]) -> None:
        producer = Producer(**config)
        producer.send(123)
        producer.send("t", on_delivery=takes_one)
        offset: str = producer.send("t").result().offset
"""


def _mypy(tmp_path: Path, **programs: str) -> tuple[str, int]:
    from mypy import api

    for name, text in programs.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    (tmp_path / "mypy.ini").write_text("[mypy]\n")  # none of the repository's settings: a user's project
    stdout, stderr, status = api.run([
        "--strict", "--config-file", str(tmp_path / "mypy.ini"), "--cache-dir", str(tmp_path / ".mypy_cache"),
        "--python-executable", sys.executable, *(str(tmp_path / f"{name}.py") for name in programs)])
    return stdout + stderr, status


def test_mypy_strict_accepts_the_natural_user_program_and_catches_wrong_arguments(tmp_path: Path) -> None:
    output, status = _mypy(tmp_path, user=USER_PROGRAM, wrong=WRONG_PROGRAM)
    assert "user.py" not in output, output  # the natural callback annotation and Producer(**config) pass
    assert status == 1, output
    wrong = [line for line in output.splitlines() if "wrong.py" in line]
    assert len(wrong) == 3, output
    assert 'Argument 1 to "send" of "SendPath" has incompatible type "int"; expected "str"' in wrong[0]
    assert 'Argument "on_delivery" to "send" of "SendPath" has incompatible type' in wrong[1]
    assert 'expected "Callable[[KafkaError | None, RecordMetadata | None], object] | None"' in wrong[1]
    assert 'Incompatible types in assignment (expression has type "int", variable has type "str")' in wrong[2]


def test_the_stub_matches_the_compiled_module(tmp_path: Path) -> None:
    """mypy.stubtest: every name, signature, default and @final of core/_core.pyi against the built extension."""
    from mypy import stubtest

    flags = ["--allowlist", str(HERE / "stubtest_allowlist.txt")]
    try:  # PEP 800 @disjoint_base (mypy >= 1.18): every cdef class is one; the stub does not mark them
        stubtest.parse_options(["--ignore-disjoint-bases", "x"])
        flags.append("--ignore-disjoint-bases")
    except SystemExit:
        pass
    result = subprocess.run([sys.executable, "-m", "mypy.stubtest", "cykafka.core._core", *flags],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)  # its .mypy_cache there
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("obj", [
    RecordMetadata, RecordMetadata.__eq__, RecordFuture, RecordFuture.result, RecordFuture.exception,
    RecordFuture.done, BatchResult, BatchResult.result, BatchResult.done, Producer.send, Producer.send_batch,
], ids=lambda o: getattr(o, "__qualname__", repr(o)))
def test_inspect_signature_works_on_the_compiled_classes_and_methods(obj: object) -> None:
    inspect.signature(obj)  # type: ignore[arg-type]


def test_signatures_carry_names_types_and_defaults() -> None:
    assert str(inspect.signature(RecordMetadata)) == (
        "(topic, partition, offset, timestamp_ms, serialized_key_size=-1, serialized_value_size=-1)")
    assert str(inspect.signature(RecordFuture.result)) == "(self, timeout: 'float | None' = None) -> 'RecordMetadata'"
    send = inspect.signature(Producer.send)
    assert list(send.parameters) == ["self", "topic", "value", "key", "partition", "timestamp_ms", "headers",
                                     "on_delivery"]
    assert send.parameters["on_delivery"].annotation == (
        "Callable[[KafkaError | None, RecordMetadata | None], object] | None")
    assert send.return_annotation == "RecordFuture"


def test_help_shows_types_and_real_docstrings_and_no_internals() -> None:
    send = pydoc.render_doc(Producer.send, renderer=pydoc.plaintext)
    assert "topic: 'str'" in send and "-> 'RecordFuture'" in send
    assert "See Producer.send" not in send and "max.block.ms" in send
    for cls, documented in [(Producer, ["send(", "send_batch(", "flush(", "metrics("]),
                            (RecordFuture, ["result(", "exception(", "done("]),
                            (BatchResult, ["result(", "errors", "delivered_by_partition"]),
                            (RecordMetadata, ["topic", "offset", "serialized_value_size"])]:
        text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
        for name in documented:
            assert name in text, (cls, name)
        for internal in ["wake_sender", "sender_loop_started", "sender_waits_for_responses", "record_done",
                         "callback_args", " callback\n"]:
            assert internal not in text, (cls, internal)
    for method in [RecordFuture.result, RecordFuture.exception, RecordFuture.done, BatchResult.result,
                   BatchResult.done, Producer.send]:
        assert method.__doc__ and len(method.__doc__) > 40, method


def test_ports_go_through_one_keyword_that_is_checked() -> None:
    cluster = FakeCluster(ManualClock())
    cluster.create_topic("t", 1)
    producer = Producer({"bootstrap.servers": "fake:1"}, ports=Ports(transport=cluster, start_sender=False))
    assert producer.sender.transport is cluster
    producer.close(0)
    with pytest.raises(ConfigError, match=r"ports must be a cykafka\.ports\.Ports .* got FakeCluster"):
        Producer({"bootstrap.servers": "fake:1"}, ports=cluster)  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match=r"transport= is not a config key: .* ports=Ports\(transport=\.\.\.\)"):
        Producer({"bootstrap.servers": "fake:1"}, transport=cluster)


class _OSErrorOnProduce(FakeCluster):
    """A Transport breaking the port's contract: produce requests end with an OSError, which is no KafkaError."""

    def poll(self, timeout_ms: int, now_ms: int) -> list[ClientResponse]:
        return [dataclasses.replace(r, response=None, error=OSError("socket gone"))  # type: ignore[arg-type]
                if isinstance(r.request, ProduceRequest) else r for r in super().poll(timeout_ms, now_ms)]


def test_a_callback_only_ever_sees_a_kafka_error() -> None:
    """Callbacks, futures and BatchResults get a KafkaError even then, with the original error as its cause."""
    clock = ManualClock()
    cluster = _OSErrorOnProduce(clock)
    cluster.create_topic("t", 1)
    producer = Producer({"bootstrap.servers": "fake:1", "linger.ms": 0, "enable.idempotence": False},
                        ports=Ports(transport=cluster, clock=clock, start_sender=False))
    producer._metadata.add_topic("t", clock.monotonic_ms())
    for _ in range(4):  # connect, fetch metadata
        producer.sender.run_once()
    seen: list[object] = []
    future = producer.send("t", b"v", on_delivery=lambda err, md: seen.append(err))
    batch = producer.send_batch("t", [b"a"])
    for _ in range(3):
        producer.sender.run_once()
    error = future.exception(0)
    assert isinstance(error, KafkaError) and isinstance(error.__cause__, OSError), repr(error)
    assert "OSError: socket gone" in str(error)
    assert seen == [error]
    assert batch.errors == [(0, error)]
    producer.close(0)


@pytest.mark.parametrize("package", ["cykafka", "cykafka.spark"])
def test_the_lazy_names_are_the_ones_mypy_sees_and_all_load(package: str) -> None:
    """A package's table of names loaded on first use (cykafka/lazy.py) says what its imports under TYPE_CHECKING
    say to mypy, name for name and module for module; __all__ names only what it has; each name loads."""
    import ast
    import importlib

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__ or "").read_text())
    checked = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    for_mypy = {alias.name: node.module for node in checked.body if isinstance(node, ast.ImportFrom)
                for alias in node.names if node.module != package}
    assert for_mypy == module._HOMES
    eager = set(vars(module))
    assert set(module.__all__) <= eager | set(module._HOMES) | {"aio"}
    for name in module.__all__:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        module.nope  # noqa: B018


def test_the_stream_planners_import_leaves_the_producer_admin_asyncio_and_sink_out() -> None:
    """What Spark's stream-reader planner process imports (format("cykafka")'s data source) stays the consumer's:
    every query starts that process, so each module it need not load is time off every stream (docs/spark.md)."""
    code = ("import sys, cykafka.spark.datasource; print(' '.join(m for m in ('cykafka.producer', 'cykafka.admin', "
            "'asyncio', 'cykafka.spark.sink', 'pyarrow.compute', 'cykafka.protocol.bodies') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert loaded.stdout.split() == [], loaded.stdout
