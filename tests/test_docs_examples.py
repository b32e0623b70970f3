"""First contact (issue 24): the README's and the docs' examples run as a newcomer copies them, against the test
broker. The only change made to them: the address 127.0.0.1:9092 / localhost:9092 becomes the test broker's (and
in the README's shell block, 9092 a free port: `cykafka broker --port 9092` there starts a broker of its own). The
README's Python blocks run one after the other in one namespace, as pasted into one interpreter; its command-line
block runs in bash as pasted into a terminal, in order. Also: the API reference documents every public class."""

from __future__ import annotations

import inspect
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import cykafka
from cykafka.broker import EmbeddedBroker, free_port
from cykafka.config_spellings import DEBUG_CONTEXTS

ROOT = Path(__file__).resolve().parents[1]
ADDRESSES = ("127.0.0.1:9092", "localhost:9092")


def blocks(path: Path, language: str) -> list[str]:
    """The ```language fenced blocks of a Markdown file, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", path.read_text(), flags=re.S | re.M)


def _at(code: str, bootstrap: str) -> str:
    for address in ADDRESSES:
        code = code.replace(address, bootstrap)
    return code


def _run_python(code: str, namespace: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    exec(compile(code, "<example>", "exec"), namespace)  # the docs' own examples
    return capsys.readouterr().out


def test_the_readme_python_blocks_run_in_order(broker: EmbeddedBroker, capsys: pytest.CaptureFixture[str]) -> None:
    """Block 2 after block 1 raised ProducerClosedError (block 1's `with` had closed the producer it used) and
    needed pyarrow without saying so."""
    found = blocks(ROOT / "README.md", "python")
    assert len(found) == 2
    namespace: dict[str, Any] = {"__name__": "__main__"}
    first = _run_python(_at(found[0], broker.bootstrap_servers), namespace, capsys)
    assert "RecordMetadata(topic='events'" in first and "failed" not in first
    pytest.importorskip("pyarrow")
    assert "not a base dependency" in found[1]  # the block says what it needs
    second = _run_python(_at(found[1], broker.bootstrap_servers), namespace, capsys)
    assert second.splitlines()[0] == "3"


def test_the_readme_command_line_block_runs_as_pasted(tmp_path: Path) -> None:
    """`cykafka broker` chose a free port while the next lines used 127.0.0.1:9092 (the produce line waited 60 s and
    failed). The block as pasted into bash (9092 replaced by a free port), in a fresh directory."""
    (block,) = [b for b in blocks(ROOT / "README.md", "bash") if "cykafka broker --port" in b]
    port = free_port()
    script = "set -e\n" + block.replace("9092", str(port))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert f"bootstrap.servers=127.0.0.1:{port}" in out.stdout
    assert "cykafka produce: 100000 records" in out.stderr and "cykafka produce: 2 records" in out.stderr
    assert re.search(r"^\d \d+ user-2=world$", out.stdout, flags=re.M), out.stdout  # the keyed records
    assert "cykafka consume: 10 records" in out.stderr and "Traceback" not in out.stderr
    assert f"cykafka {cykafka.__version__}" in out.stdout


def test_the_asyncio_example_runs_and_ends(broker: EmbeddedBroker, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/asyncio.md's example waited forever on a fresh broker: getmany took all five records, then `async for`
    waited for a sixth. Bounded here by the test's timeout (a thread would not stop a hang)."""
    (example,) = blocks(ROOT / "docs" / "asyncio.md", "python")[:1]
    code = _at(example, broker.bootstrap_servers)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert len(lines) >= 1 and len(lines[0].split()) == 3  # metadata.offset, the future's offset, the batch's count
    assert lines[0].split()[2] == "3"


def test_the_admin_example_runs(broker: EmbeddedBroker, capsys: pytest.CaptureFixture[str]) -> None:
    (example,) = blocks(ROOT / "docs" / "admin.md", "python")[:1]
    # "orders" made first and waited for: a broker lists a topic a moment after CreateTopics answered (Kafka), and
    # the example's list_topics() right after its create_topics would race that; "audit" is created by the example
    with cykafka.Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics([cykafka.NewTopic("orders", 7)])
        deadline = time.monotonic() + 30
        while "orders" not in admin.list_topics():
            assert time.monotonic() < deadline, "the broker never listed 'orders'"
            time.sleep(0.1)
    out = _run_python(_at(example, broker.bootstrap_servers), {"__name__": "__main__"}, capsys)
    assert "PartitionInfo" in out or "TOPIC_ALREADY_EXISTS" in out, out


def test_the_schema_registry_example_runs(broker: EmbeddedBroker, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("confluent_kafka.schema_registry.avro")
    (example,) = blocks(ROOT / "docs" / "serialization.md", "python")[:1]
    topic = f"users-avro-{os.getpid()}-{id(capsys):x}"  # a topic of its own on the session broker
    out = _run_python(_at(example, broker.bootstrap_servers).replace("users-avro", topic), {"__name__": "__main__"},
                      capsys)
    assert out.splitlines() == ["ada {'name': 'Ada', 'age': 36}", f"['{topic}-value']"], out


def test_the_api_reference_documents_every_public_class() -> None:
    """ConsumerRecord, what poll() hands out, was missing from docs/api (errors are documented by the
    cykafka.errors automodule)."""
    rst = (ROOT / "docs" / "api" / "index.rst").read_text()
    documented = set(re.findall(r"\.\. auto\w+:: (?:cykafka\.)?([\w.]+)", rst))
    classes = [name for name in cykafka.__all__ if inspect.isclass(getattr(cykafka, name))]
    missing = [name for name in classes if name not in documented
               and not issubclass(getattr(cykafka, name), BaseException)]
    assert missing == []
    assert "errors" in documented  # .. automodule:: cykafka.errors


DEBUG_LOGGERS = sorted({name for names in DEBUG_CONTEXTS.values() for name in names})


@pytest.mark.parametrize("index", range(6))
def test_the_observability_examples_run(broker: EmbeddedBroker, capsys: pytest.CaptureFixture[str],
                                        index: int) -> None:
    """docs/observability.md's examples: debug, error_cb (each runs), stats_cb and metrics(), the Prometheus
    collector, OpenTelemetry metrics, tracing (each prints what it shows)."""
    pytest.importorskip("prometheus_client")
    pytest.importorskip("opentelemetry.sdk")
    example = blocks(ROOT / "docs" / "observability.md", "python")[index]
    levels = {name: logging.getLogger(name).level for name in DEBUG_LOGGERS}
    try:
        out = _run_python(_at(example, broker.bootstrap_servers), {"__name__": "__main__"}, capsys)
    finally:
        for name, level in levels.items():  # `debug` sets loggers process-wide: the other tests keep theirs
            logging.getLogger(name).setLevel(level)
    expected = ["", "", "1.0", "org_apache_kafka_producer_record_send_total", "'client_id'", "traced receive"][index]
    assert expected in out, out
