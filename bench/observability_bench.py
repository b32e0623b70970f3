"""What observability costs (issue 30's overhead goal: <= 5% slower): cykafka's send() and poll() throughput on one
embedded broker, plain and with each kind of observability on, each (variant, mode) in its own process, variants
interleaved round by round; the ratio to plain is taken per round, its median reported.

    python bench/observability_bench.py [--records N] [--rounds R] [--json]

Variants:
  plain     no instrumentation, no exporter (what a client runs when nothing is installed);
  uninstr   CykafkaInstrumentor().instrument() then uninstrument(): must be plain (wrapping happens at instrument());
  tracing-api  CykafkaInstrumentor installed, no SDK (OpenTelemetry's API alone, as `opentelemetry-instrument`
            without an SDK or exporter configured): its spans are non-recording, no context goes into headers;
  tracing-sdk  CykafkaInstrumentor installed with an SDK TracerProvider and no exporter (spans are made and
            dropped): one span per send() and per received record (one per send_batch / poll_batch call), the
            trace context in every record's headers;
  metrics   every metrics export on: statistics.interval.ms 1000 with a stats_cb, a Prometheus CykafkaCollector and
            an OpenTelemetry CykafkaMetricsObserver (InMemoryMetricReader), both scraped every second by a thread.
Modes: send (N records of 100 B with send(), then flush; records/s over both), send_batch (the same in calls of
BATCH records), poll and poll_batch (N records read from the start of a topic filled once before the rounds, assign
mode). bench/run.py --only observability runs this
file with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

# measure the installed package, not the source tree (see e2e_bench.py)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

VARIANTS = ("plain", "uninstr", "tracing-api", "tracing-sdk", "metrics")
MODES = ("send", "send_batch", "poll", "poll_batch")
BATCH = 1000  # records per send_batch call
GOAL_RATIO = 0.95  # <= 5% slower than plain
VALUE = b"x" * 100
SCRAPE_INTERVAL_S = 1.0


def _observability(variant: str) -> tuple[dict[str, Any], Any]:
    """(config keys to add, a function taking the client that starts exporting and returns a stop function)."""
    if variant in ("tracing-sdk", "tracing-api", "uninstr"):
        from opentelemetry.sdk.trace import TracerProvider

        from cykafka.instrumentation import CykafkaInstrumentor
        CykafkaInstrumentor().instrument(tracer_provider=None if variant == "tracing-api" else TracerProvider())
        if variant == "uninstr":
            CykafkaInstrumentor().uninstrument()
        return {}, lambda client: (lambda: None)
    if variant == "metrics":
        def start(client: Any) -> Any:
            import prometheus_client
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader

            from cykafka.metrics.otel import CykafkaMetricsObserver
            from cykafka.metrics.prometheus import CykafkaCollector
            registry = prometheus_client.CollectorRegistry()
            registry.register(CykafkaCollector(client))
            reader = InMemoryMetricReader()
            CykafkaMetricsObserver(client, meter_provider=MeterProvider(metric_readers=[reader]))
            stopped = threading.Event()

            def scrape() -> None:
                while not stopped.wait(SCRAPE_INTERVAL_S):
                    prometheus_client.generate_latest(registry)
                    reader.get_metrics_data()

            thread = threading.Thread(target=scrape, daemon=True)
            thread.start()
            return lambda: (stopped.set(), thread.join())

        return {"statistics.interval.ms": 1000, "stats_cb": lambda stats: None}, start
    return {}, lambda client: (lambda: None)


def _cpu_s() -> float:
    """This process's CPU seconds (every thread's, user + system): steadier than wall time on a shared machine."""
    times = os.times()
    return times.user + times.system


def worker(variant: str, mode: str, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    from cykafka import Consumer, Producer, TopicPartition

    extra, start = _observability(variant)
    if mode in ("send", "send_batch"):
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **extra})
        producer.send(topic, VALUE)  # metadata and connection before the clock starts
        producer.flush()
        stop = start(producer)
        values = [VALUE] * BATCH
        began, cpu = time.perf_counter(), _cpu_s()
        if mode == "send":
            send = producer.send
            for _ in range(records):
                send(topic, VALUE)
        else:
            for _ in range(records // BATCH):
                producer.send_batch(topic, values)
        producer.flush()
        elapsed, cpu = time.perf_counter() - began, _cpu_s() - cpu
        stop()
        producer.close()
        return {"records": records, "elapsed_s": elapsed, "rate": records / elapsed, "cpu_us": cpu / records * 1e6}
    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", **extra})
    consumer.assign([TopicPartition(topic, p) for p in range(4)])
    stop = start(consumer)
    got = 0
    began, cpu = time.perf_counter(), _cpu_s()
    deadline = began + 300
    while got < records and time.perf_counter() < deadline:
        got += len(consumer.poll(1.0)) if mode == "poll" else consumer.poll_batch(1.0).num_rows
    elapsed, cpu = time.perf_counter() - began, _cpu_s() - cpu
    stop()
    consumer.close()
    return {"records": got, "elapsed_s": elapsed, "rate": got / elapsed, "cpu_us": cpu / max(got, 1) * 1e6}


def _fill(bootstrap: str, topic: str, records: int) -> None:
    from cykafka import Producer
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        for i in range(records):
            producer.send(topic, VALUE, partition=i % 4)
        if producer.flush(120) != 0:
            raise RuntimeError("the poll topic was not filled")


def run(records: int, rounds: int, variants: tuple[str, ...] = VARIANTS, modes: tuple[str, ...] = MODES
        ) -> dict[str, Any]:
    from cykafka.broker import EmbeddedBroker

    broker = EmbeddedBroker().start()
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {m: {v: [] for v in variants} for m in modes}
    try:
        poll_topic = f"obs-poll-{uuid.uuid4().hex[:8]}"
        _fill(broker.bootstrap_servers, poll_topic, records)
        for round_no in range(rounds):
            for mode in modes:
                order = variants if round_no % 2 == 0 else tuple(reversed(variants))
                for variant in order:
                    topic = poll_topic if mode.startswith("poll") else f"obs-send-{uuid.uuid4().hex[:8]}"
                    command = [sys.executable, os.path.abspath(__file__), "--worker", variant, "--mode", mode,
                               "--bootstrap", broker.bootstrap_servers, "--topic", topic, "--records", str(records)]
                    print(f"round {round_no + 1}/{rounds}: {mode} {variant}", file=sys.stderr, flush=True)
                    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
                    if done.returncode != 0:
                        runs[mode][variant].append({"error": done.stderr.strip().splitlines()[-1:]})
                        continue
                    runs[mode][variant].append(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        broker.stop()
    return {"records": records, "rounds": rounds, "runs": runs, "ratios": ratios(runs),
            "cpu_ratios": ratios(runs, "cpu_us")}


def ratios(runs: dict[str, dict[str, list[dict[str, Any]]]], key: str = "rate") -> dict[str, dict[str, float]]:
    """{mode: {variant: median over rounds of variant / plain of the same round}} of key (rate: records/s; cpu_us:
    the client's CPU µs per record, plain / variant, so that above 1 is faster here too)."""
    out: dict[str, dict[str, float]] = {}
    for mode, by_variant in runs.items():
        plain = by_variant["plain"]
        out[mode] = {}
        for variant, measured in by_variant.items():
            per_round = [(m[key] / p[key]) if key == "rate" else (p[key] / m[key])
                         for m, p in zip(measured, plain, strict=False) if m.get(key) and p.get(key)]
            out[mode][variant] = statistics.median(per_round) if per_round else float("nan")
    return out


def table(result: dict[str, Any]) -> str:
    lines = [f"### Observability overhead (bench/observability_bench.py), {result['records']:,} records of 100 B, "
             f"{result['rounds']} rounds, Tansu", "",
             "Ratios are plain's cost over the variant's (1.0: the same; 0.95: 5% slower), the median of the per-round "
             "ratios; CPU: the client process's CPU per record (steadier than wall time on a shared machine).", "",
             "| mode | variant | records/s median | vs plain | CPU µs/record median | vs plain (CPU) | goal ≥ 0.95 "
             "(CPU) |", "|---|---|---:|---:|---:|---:|---|"]
    for mode, by_variant in result["runs"].items():
        for variant, measured in by_variant.items():
            rates = [m["rate"] for m in measured if "rate" in m]
            cpus = [m["cpu_us"] for m in measured if "cpu_us" in m]
            ratio, cpu_ratio = result["ratios"][mode][variant], result["cpu_ratios"][mode][variant]
            lines.append(f"| {mode} | {variant} | {statistics.median(rates) if rates else float('nan'):,.0f} | "
                         f"{ratio:.3f} | {statistics.median(cpus) if cpus else float('nan'):.2f} | {cpu_ratio:.3f} | "
                         f"{'met' if cpu_ratio >= GOAL_RATIO else 'not met'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--slow-records", type=int, default=0, help="(bench/run.py's common arguments; unused)")
    parser.add_argument("--codec", default="none", help="(bench/run.py's common arguments; unused)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated; plain is always run")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated")
    parser.add_argument("--worker", choices=VARIANTS)
    parser.add_argument("--mode", choices=MODES, default="send")
    parser.add_argument("--bootstrap", default="")
    parser.add_argument("--topic", default="")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.mode, args.bootstrap, args.topic, args.records)))
        return 0
    variants = ("plain", *(v for v in args.variants.split(",") if v and v != "plain"))
    result = run(args.records, args.rounds, variants, tuple(m for m in args.modes.split(",") if m))
    print(table(result))
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
