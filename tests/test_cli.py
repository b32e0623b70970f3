"""`cykafka produce` (stdin or a file -> a topic, like kcat -P), `cykafka --version`, `python -m cykafka`: run as a
user runs them, the installed console script in a subprocess, and read back by confluent-kafka's consumer."""

from __future__ import annotations

import fcntl
import importlib.metadata
import io
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import time
import uuid
from pathlib import Path

import pytest

from cykafka.broker import EmbeddedBroker
from cykafka.cli import split_records
from cykafka.verify import read_back

CYKAFKA = str(Path(sys.executable).parent / "cykafka")  # the console script pip installed next to this Python


def _wait_or_dump(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Waits for a CLI started with PYTHONFAULTHANDLER=1 (DUMPING); one that has not ended by then is made to print
    every thread's stack (SIGABRT, faulthandler) and the test fails with that on stderr."""
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"{proc.args} did not end within {timeout_s} s; its threads:\n{err.decode(errors='replace')}")


DUMPING = {**os.environ, "PYTHONFAULTHANDLER": "1"}


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
    for partition in (0, 1):  # kcat's end-of-partition lines (enable.partition.eof), before the summary
        assert f"% Reached end of topic {topic} [{partition}] at offset 5\n".encode() in out.stderr, out.stderr
    assert out.stderr.decode().splitlines()[-1].startswith("cykafka consume: 10 records")


def test_consume_prints_deserialized_keys_and_values(broker: EmbeddedBroker) -> None:
    """--key-deserializer / --value-deserializer (key.deserializer / value.deserializer): decoded, a non-str
    printed as JSON, %S its printed size; a record they cannot read fails the run naming it."""
    from cykafka import Producer

    topic = _topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, "value.serializer": "json",
                   "key.serializer": "int"}) as producer:
        producer.send(topic, {"a": 1}, key=7, partition=0)
        producer.send(topic, "text", key=-8, partition=0)
        assert producer.flush(30) == 0
    out = _consume(broker, topic, "-e", "--key-deserializer", "int", "--value-deserializer", "json", "-f",
                   "%k=%s (%S)\\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == b'7={"a": 1} (8)\n-8=text (4)\n'
    failed = _consume(broker, topic, "-e", "--key-deserializer", "str", "--value-deserializer", "int")
    assert failed.returncode != 0 and failed.stdout == b""
    assert f"value.deserializer raised on {topic} [0] at offset 0".encode() in failed.stderr, failed.stderr


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
    assert out.stderr.splitlines()[-1].startswith("cykafka consume: error: ") and "Traceback" not in out.stderr
    # the connection failure is visible (Python's last-resort handler prints WARNINGs), as kcat's FAIL line
    assert "Connection to node -1 (127.0.0.1:1) could not be established" in out.stderr, out.stderr


def test_consume_progress_bar_on_a_terminal(broker: EmbeddedBroker) -> None:
    out, shown = _on_a_terminal(["consume", _filled(broker), "-b", broker.bootstrap_servers, "-e"])
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 10
    assert b"records/s" in shown.replace(b"records/s) <-", b"")  # tqdm's rate, not just the summary's
    assert b"10 records" in shown


def _filled_big(broker: EmbeddedBroker, records: int = 20_000, value_bytes: int = 200) -> str:
    """A topic of `records` records (value: the record's number, padded to value_bytes) over 4 partitions: megabytes
    of output, more than a pipe holds."""
    topic = _topic()
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
    for i in range(records):
        producer.produce(topic, b"%d" % i + b"." * (value_bytes - len(b"%d" % i)), partition=i % 4)
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return topic


def _committed(broker: EmbeddedBroker, group: str, topic: str) -> dict[int, int]:
    other = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        tps = other.committed([confluent_kafka.TopicPartition(topic, p) for p in range(4)], timeout=20)
    finally:
        other.close()
    return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}


def test_consume_ctrl_c_while_blocked_on_a_slow_pipe_counts_and_commits_what_was_printed(
        broker: EmbeddedBroker) -> None:
    """Probe 8 (issue 24): Ctrl-C while `cykafka consume -G` is blocked writing to a reader that stopped reading.
    The batch in flight was printed at exit (Python flushed its buffer) but neither counted nor committed (12,500
    printed, 12,450 committed): the next run printed those records again. Now the summary and the commit are the
    records printed whole, to the record."""
    topic, group = _filled_big(broker), _topic()
    proc = subprocess.Popen([CYKAFKA, "consume", topic, "-b", broker.bootstrap_servers, "-G", group,
                             "-f", "%p %o %s\\n"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    shown = proc.stdout.read(100_000)  # then the reader stops reading: the pipe fills and the writer blocks
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    shown += proc.stdout.read()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = shown.split(b"\n")[:-1]  # whole lines (a record cut short by the Ctrl-C is not counted)
    assert 0 < len(lines) < 20_000
    summary = err.decode().strip().splitlines()[-1]
    assert f"cykafka consume: {len(lines)} records, " in summary, (len(lines), summary)
    printed: dict[int, int] = {}
    for line in lines:
        partition, offset, _ = line.split(b" ", 2)
        assert int(offset) == printed.get(int(partition), 0)  # every partition's records in order, none skipped
        printed[int(partition)] = int(offset) + 1
    assert _committed(broker, group, topic) == printed
    again = _consume(broker, topic, "-G", group, "-e", "-f", "%p %o\\n")  # the next run starts after them
    assert len(again.stdout.splitlines()) == 20_000 - len(lines)


def test_consume_into_head_ends_quietly(broker: EmbeddedBroker) -> None:
    """`cykafka consume | head` (issue 24): the reader closing the pipe ends the run with exit code 0 and the
    summary, no "Broken pipe" (it ended with exit 1 and BrokenPipeError)."""
    topic = _filled_big(broker)
    out = subprocess.run(["bash", "-c", f"set -o pipefail; {CYKAFKA} consume {topic} -b {broker.bootstrap_servers} "
                                        "| head -n 3"], capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 3
    assert b"Broken pipe" not in out.stderr and b"Traceback" not in out.stderr and b"Exception" not in out.stderr
    assert b"cykafka consume: " in out.stderr and b" records, " in out.stderr


def test_a_ctrl_c_produce_sends_what_it_read_and_prints_its_summary(broker: EmbeddedBroker) -> None:
    """A Ctrl-C'd `cykafka produce` printed no summary (issue 24): now reading stops, what was read is sent and
    waited for, and the summary says so; exit code 130 (the input was not read to its end)."""
    topic = _topic()
    # SIGINT as a terminal gives it: a test run started in the background (bash `cmd &`) ignores SIGINT, its children
    # inherit that, and Python then installs no KeyboardInterrupt handler
    proc = subprocess.Popen([CYKAFKA, "produce", topic, "-b", broker.bootstrap_servers], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=DUMPING,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdin is not None
    proc.stdin.write(b"a\nb\nc\n")
    proc.stdin.flush()
    # read and sent (so the CLI is past its start-up): the next read waits for more input when the Ctrl-C comes;
    # read_back gives [] until the topic exists
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(read_back(broker.bootstrap_servers, topic, timeout_s=5)) < 3:
        time.sleep(0.2)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        _wait_or_dump(proc, 60)  # stdin kept open: the input's end must not race the Ctrl-C (communicate closes it)
    finally:
        proc.kill()
        proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == 130, err
    summary = err.decode().strip().splitlines()[-1]
    assert "cykafka produce: 3 records, 3 bytes" in summary and " 0 errors" in summary, summary
    assert "interrupted" in summary and "Traceback" not in err.decode()
    assert sorted(r.value for r in read_back(broker.bootstrap_servers, topic)) == [b"a", b"b", b"c"]


def test_consume_on_a_terminal_has_no_bar_on_the_records_lines_and_whole_counts(broker: EmbeddedBroker) -> None:
    """Records and bar on one terminal wrote the bar on the records' line: with stdout on the terminal the records
    are the progress, no bar. With stdout redirected the bar counts whole records ("1.00 records" before) and its
    rate is never inverted ("2.45s/ records")."""
    topic = _filled(broker)
    leader, follower = pty.openpty()
    try:
        out = subprocess.run([CYKAFKA, "consume", topic, "-b", broker.bootstrap_servers, "-e"], stdout=follower,
                             stderr=follower, stdin=subprocess.DEVNULL, timeout=120)
        os.close(follower)
        follower = -1
        shown = b""
        while chunk := _read_pty(leader):
            shown += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert out.returncode == 0
    lines = [line for line in shown.split(b"\r\n") if not line.startswith(b"% Reached end of topic")]  # kcat's
    assert sorted(lines[:10]) == sorted(b"v%d" % i for i in range(10)), shown
    assert b"records/s" not in shown.replace(b"records/s) <-", b"")
    _, barred = _on_a_terminal(["consume", topic, "-b", broker.bootstrap_servers, "-e"])
    assert re.search(rb"\r\d+ records \[", barred), barred
    assert b".00 records" not in barred and b"s/ records" not in barred


def test_demo_without_the_spark_extra_raises_missing_dependency_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """`cykafka demo` without pyspark showed a raw ModuleNotFoundError traceback: now MissingDependencyError names
    the extra (and --plain), before the broker starts; the command prints it as one line, exit code 1."""
    from cykafka import MissingDependencyError, demo

    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'cykafka\[spark\]'.*cykafka demo --plain"):
        demo.run_spark(records=10)
    code = ("import sys; sys.modules['pyspark'] = None; from cykafka.cli import main; "
            "sys.exit(main(['demo', '--records', '10']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("cykafka demo: error: cykafka demo runs a Spark pipeline and needs the spark extra")
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_help_says_what_cykafka_is() -> None:
    """`cykafka --help` said "a fast Kafka producer" (the consumer, admin and broker commands came later)."""
    out = subprocess.run([CYKAFKA, "--help"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert "a fast Kafka producer" not in out
    assert "Kafka client for Python (producer, consumer, admin, asyncio, Spark)" in " ".join(out.split())
    for command in ("produce", "consume", "topics", "broker", "demo"):
        assert command in out
