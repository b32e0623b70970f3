"""`cykafka produce` (stdin or a file -> a topic, like kcat -P), `cykafka --version`, `python -m cykafka`: run as a
user runs them, the installed console script in a subprocess, and read back by confluent-kafka's consumer."""

from __future__ import annotations

import fcntl
import importlib.metadata
import io
import os
import pty
import struct
import subprocess
import sys
import termios
import uuid
from pathlib import Path

import pytest

from cykafka.broker import EmbeddedBroker
from cykafka.cli import split_records
from cykafka.verify import read_back

CYKAFKA = str(Path(sys.executable).parent / "cykafka")  # the console script pip installed next to this Python


def _topic() -> str:
    return f"cli-{uuid.uuid4().hex[:12]}"


def _produce(broker: EmbeddedBroker, topic: str, *args: str, stdin: bytes = b"",
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CYKAFKA, "produce", topic, "-b", broker.bootstrap_servers, *args],
                          input=stdin.decode(), capture_output=True, text=True, timeout=120)


def test_seq_100000_lines_are_100000_records(broker: EmbeddedBroker) -> None:
    topic = _topic()
    out = subprocess.run(f"seq 1 100000 | {CYKAFKA} produce {topic} -b {broker.bootstrap_servers}", shell=True,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    summary = out.stderr.strip().splitlines()[-1]
    payload_bytes = sum(len(str(i)) for i in range(1, 100_001))
    assert f"100000 records, {payload_bytes} bytes" in summary and " 0 errors" in summary, summary
    assert "records/s" not in out.stderr.replace(summary, "")  # no progress bar when stderr is not a terminal
    records = read_back(broker.bootstrap_servers, topic)
    assert len(records) == 100_000
    assert sorted(int(r.value or b"") for r in records) == list(range(1, 100_001))
    assert {r.key for r in records} == {None} and {len(r.headers) for r in records} == {0}
    assert len({r.partition for r in records}) > 1  # keyless records are spread


def test_key_delimiter_and_headers(broker: EmbeddedBroker) -> None:
    topic = _topic()
    out = _produce(broker, topic, "-K", ":", "-H", "source=cli", "-H", "empty=", "-H", "eq=a=b",
                   stdin=b"k1:v1\nk2:v:2\n:v3\n")
    assert out.returncode == 0, out.stderr
    records = read_back(broker.bootstrap_servers, topic)
    got = sorted((r.key, r.value) for r in records)
    assert got == [(b"", b"v3"), (b"k1", b"v1"), (b"k2", b"v:2")]  # split at the first delimiter only
    assert {tuple(r.headers) for r in records} == {(("source", b"cli"), ("empty", b""), ("eq", b"a=b"))}
    assert "3 records, 11 bytes" in out.stderr


def test_partition_option_sends_every_record_there(broker: EmbeddedBroker) -> None:
    topic = _topic()
    out = _produce(broker, topic, "--partition", "2", "-K", "\\t", stdin=b"".join(b"k%d\tv\n" % i for i in range(50)))
    assert out.returncode == 0, out.stderr
    records = read_back(broker.bootstrap_servers, topic)
    assert len(records) == 50 and {r.partition for r in records} == {2}


def test_file_and_delimiter(broker: EmbeddedBroker, tmp_path: Path) -> None:
    topic = _topic()
    path = tmp_path / "records"
    path.write_bytes(b"a;;b\nc;last")  # an empty record, a newline inside one, no delimiter after the last
    out = subprocess.run([sys.executable, "-m", "cykafka", "produce", topic, "-b", broker.bootstrap_servers,
                          "--file", str(path), "-D", ";"], capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert sorted(r.value for r in read_back(broker.bootstrap_servers, topic)) == [b"", b"a", b"b\nc", b"last"]


def test_a_failed_record_exits_non_zero_and_is_named(broker: EmbeddedBroker) -> None:
    topic = _topic()
    out = _produce(broker, topic, "-X", "max.request.size=1000", stdin=b"small\n" + b"x" * 3000 + b"\nsmall too\n")
    assert out.returncode == 1, out.stderr
    assert "record 2: RecordTooLargeError" in out.stderr
    assert "3 records" in out.stderr and " 1 errors" in out.stderr
    assert "Traceback" not in out.stderr
    assert sorted(r.value for r in read_back(broker.bootstrap_servers, topic)) == [b"small", b"small too"]


def test_a_record_without_the_key_delimiter_fails_alone(broker: EmbeddedBroker) -> None:
    topic = _topic()
    out = _produce(broker, topic, "-K", "=", stdin=b"a=1\nno key\nc=3\n")
    assert out.returncode == 1
    assert "record 2: no key delimiter '='" in out.stderr
    assert [(r.key, r.value) for r in sorted(read_back(broker.bootstrap_servers, topic), key=lambda r: r.key or b"")
            ] == [(b"a", b"1"), (b"c", b"3")]


def test_unreachable_broker_stops_with_a_summary(tmp_path: Path) -> None:
    out = subprocess.run([CYKAFKA, "produce", "t", "-b", "127.0.0.1:1", "-X", "max.block.ms=300"], input="a\nb\n",
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "records 1-2 not sent" in out.stderr and "KafkaTimeoutError" in out.stderr
    assert "2 errors" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["-X", "no.such.key=1"], "unknown config key 'no.such.key'"),
    (["-X", "linger.ms=soon"], "linger.ms must be an integer"),
    (["-X", "linger.ms"], "-X takes NAME=VALUE"),
    (["-H", "novalue"], "-H takes NAME=VALUE"),
    (["-D", ""], "--delimiter must not be empty"),
])
def test_bad_arguments_are_one_clean_line(args: list[str], message: str) -> None:
    out = subprocess.run([CYKAFKA, "produce", "t", "-b", "127.0.0.1:1", *args], input="a\n",
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.startswith("cykafka produce: error: ") and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_config_error_points_at_the_docs_url() -> None:
    out = subprocess.run([CYKAFKA, "produce", "t", "-b", "127.0.0.1:1", "-X", "no.such.key=1"], input="",
                         capture_output=True, text=True, timeout=60)
    assert "see https://github.com/cykafka/cykafka/blob/main/docs/config.md" in out.stderr


def _on_a_terminal(args: list[str], stdin: bytes | None = None) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """Runs cykafka with stderr on a 100-column terminal: (the process, what the terminal showed)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns: room for the bar
    try:
        out = subprocess.run([CYKAFKA, *args], input=stdin, stdout=subprocess.PIPE, stderr=follower, timeout=120,
                             stdin=subprocess.DEVNULL if stdin is None else None)
        os.close(follower)
        follower = -1
        shown = b""
        while chunk := _read_pty(leader):
            shown += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    return out, shown


def test_progress_bar_with_rate_on_a_terminal(broker: EmbeddedBroker) -> None:
    out, shown = _on_a_terminal(["produce", _topic(), "-b", broker.bootstrap_servers], b"1\n2\n3\n")
    assert out.returncode == 0
    assert b"records/s" in shown.replace(b"records/s) ->", b"")  # tqdm's rate, not just the summary's
    assert b"3 records" in shown


def _read_pty(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the terminal's other end is closed and drained
        return b""


def test_version_and_python_m() -> None:
    expected = f"cykafka {importlib.metadata.version('cykafka')}"
    assert subprocess.run([CYKAFKA, "--version"], capture_output=True, text=True, check=True).stdout.strip() == expected
    out = subprocess.run([sys.executable, "-m", "cykafka", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 7, 1 << 20])
def test_split_records_across_reads(chunk_bytes: int) -> None:
    data = b"one||two||||three|four||"
    assert [r for batch in split_records(io.BytesIO(data), b"||", chunk_bytes) for r in batch] == \
        [b"one", b"two", b"", b"three|four"]
    assert [r for batch in split_records(io.BytesIO(b"a\nb"), b"\n", chunk_bytes) for r in batch] == [b"a", b"b"]
    assert list(split_records(io.BytesIO(b""), b"\n", chunk_bytes)) == []


def test_unsent_records_are_counted_once() -> None:
    out = subprocess.run([CYKAFKA, "produce", "t", "-b", "127.0.0.1:1", "-X", "max.block.ms=300", "-K", ":"],
                         input="a:1\nno key\nc:3\n", capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "record 2: no key delimiter" in out.stderr and "records 1-3 not sent" in out.stderr
    assert "3 records" in out.stderr and " 3 errors" in out.stderr, out.stderr


# --- cykafka consume (like kcat -C) ----------------------------------------------------------------------------------

def _consume(broker: EmbeddedBroker, topic: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([CYKAFKA, "consume", topic, "-b", broker.bootstrap_servers, *args], capture_output=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def _filled(broker: EmbeddedBroker) -> str:
    """A topic with records 0..4 in partition 0 and 5..9 in partition 1: key k<i>, value v<i>, header n=<i>."""
    topic = _topic()
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(10):
        producer.produce(topic, b"v%d" % i, b"k%d" % i, partition=i // 5, headers=[("n", b"%d" % i)],
                         timestamp=1_700_000_000_000 + i)
    assert producer.flush(30) == 0
    return topic


confluent_kafka = pytest.importorskip("confluent_kafka")


def test_consume_prints_every_record_in_the_format_and_exits_at_the_end(broker: EmbeddedBroker) -> None:
    topic = _filled(broker)
    out = _consume(broker, topic, "-e", "-f", "%t %p %o %T %k=%s %h %K/%S\\n")
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.decode().splitlines()) == sorted(
        f"{topic} {i // 5} {i % 5} {1_700_000_000_000 + i} k{i}=v{i} n={i} 2/2" for i in range(10))
    assert b"10 records, 40 bytes" in out.stderr and b"Traceback" not in out.stderr


def test_consume_offsets_partition_and_count(broker: EmbeddedBroker) -> None:
    topic = _filled(broker)
    assert _consume(broker, topic, "-p", "1", "-o", "-2", "-e").stdout.splitlines() == [b"v8", b"v9"]
    assert _consume(broker, topic, "-p", "0", "-o", "3", "-e").stdout.splitlines() == [b"v3", b"v4"]
    assert _consume(broker, topic, "-o", "end", "-e").stdout == b""
    assert len(_consume(broker, topic, "-o", "beginning", "-c", "3").stdout.splitlines()) == 3


def test_consume_with_a_group_commits_and_starts_there(broker: EmbeddedBroker) -> None:
    topic, group = _filled(broker), _topic()
    first = _consume(broker, topic, "-G", group, "-p", "0", "-c", "2")
    assert first.returncode == 0 and first.stdout.splitlines() == [b"v0", b"v1"], first.stderr
    other = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        committed = other.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=20)
    finally:
        other.close()
    assert [tp.offset for tp in committed] == [2]
    assert _consume(broker, topic, "-G", group, "-p", "0", "-e").stdout.splitlines() == [b"v2", b"v3", b"v4"]


@pytest.mark.parametrize(("args", "message"), [
    (["-f", "%x"], "-f/--format: unknown field %x"),
    (["-o", "soon"], "-o/--offset takes beginning, end, stored"),
    (["-X", "linger.ms=5"], "config key 'linger.ms' is not a consumer key"),
    (["-c", "-1"], "-c/--count must be >= 0"),
])
def test_consume_bad_arguments_are_one_clean_line(args: list[str], message: str) -> None:
    out = subprocess.run([CYKAFKA, "consume", "t", "-b", "127.0.0.1:1", "-X", "default.api.timeout.ms=2000", *args],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("cykafka consume: error: ") and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_consume_from_an_unreachable_broker_fails_with_exit_1() -> None:
    out = subprocess.run([CYKAFKA, "consume", "t", "-b", "127.0.0.1:1", "-X", "default.api.timeout.ms=500", "-e"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("cykafka consume: error: ") and "Traceback" not in out.stderr


def test_consume_progress_bar_on_a_terminal(broker: EmbeddedBroker) -> None:
    out, shown = _on_a_terminal(["consume", _filled(broker), "-b", broker.bootstrap_servers, "-e"])
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 10
    assert b"records/s" in shown.replace(b"records/s) <-", b"")  # tqdm's rate, not just the summary's
    assert b"10 records" in shown
