"""The whole performance comparison in one command: cykafka (send and send_batch), confluent-kafka, aiokafka and
kafka-python on the embedded broker (Tansu), every scenario of docs/performance.md, interleaved rounds, medians and
ratios against confluent-kafka; writes bench/results/results.md (the tables and the targets) and results.png.

    python bench/run.py [--rounds R] [--quick] [--only SCENARIO,...] [--profile] [--out DIR]
    python -m cProfile -o run.prof bench/run.py --quick

Scenarios (same payloads, same batching config for every client: linger.ms 5, batch.size 16384; the same guarantee:
acks=all and idempotence for every client, PEER_SETTINGS below, printed in the report's header):
  100B-none, 100B-lz4, 1KiB, 10KiB  throughput: records/s and client CPU (user+sys of its own process) per record;
  latency                           send->ack p50/p99 at 10,000 records/s with linger.ms 0;
  latency-busy                      the same, the sending thread busy in pure Python (holding the GIL) for
                                    BUSY_US µs after each send;
  overload                          a throttling proxy makes the broker ~10x slower than the client: peak RSS growth
                                    against buffer.memory (16 MiB here) + 64 MiB, and the longest blocking send;
  encode                            bench/encode_bench.py (append + close, no I/O) against aiokafka's Cython builder;
  consume                           bench/consume_bench.py: cykafka's Consumer (poll, poll_batch) against
                                    confluent-kafka (tuned and default), aiokafka and kafka-python, lz4 and none;
  async                             bench/async_bench.py: cykafka.aio's AsyncProducer and AsyncConsumer against
                                    aiokafka's, lz4, and the event-loop lag while producing.
  group                             bench/group_bench.py: group join time (subscribe to first assignment) of cykafka
                                    and confluent-kafka against Tansu's join hold (session.timeout.ms / 2).
Each client runs in its own process (bench/e2e_bench.py's workers). Every (scenario, round) gets a fresh broker
(Tansu's memory storage keeps every record). Ratios are the median of the per-round ratios (each round measures
the clients back to back on one broker). runs.json keeps every worker's raw result. --profile runs the cykafka
workers under cProfile and writes bench/results/profile/<scenario>-<client>.prof and a .txt summary of each.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import pstats
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import async_bench
import consume_bench
import e2e_bench as e2e
import group_bench
from throttle import ThrottleProxy

from cykafka.broker import EmbeddedBroker, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 2**20
ALL_CLIENTS = ["cykafka", "cykafka-batch", "confluent", "aiokafka", "kafka-python"]
BASE = "confluent"
BUSY_US = 50  # latency-busy: the caller's pure-Python work after each send: half of the 100 µs between sends

# What each client's constructor gets in every scenario, in its own spelling, on top of the scenario's batching
# (linger.ms, batch.size, codec, buffer memory): one guarantee for all, acks=all with idempotence (each partition's
# records written once, in order, <= 5 requests in flight), and each peer's best settings for it. The one record of
# it: each worker gets its client's entry on its command line (and prints what it used), the report prints it.
CYKAFKA_SETTINGS: dict[str, Any] = {"acks": "all", "enable.idempotence": True,
                                    "max.block.ms": 600_000}  # overload: sends wait for memory as long as a run lasts
PEER_SETTINGS: dict[str, dict[str, Any]] = {
    "cykafka": CYKAFKA_SETTINGS,
    "cykafka-batch": CYKAFKA_SETTINGS,
    # a whole run fits its queue (a full queue raises BufferError: the worker polls and retries); Java's partitioner
    "confluent": {"acks": "all", "enable.idempotence": True, "queue.buffering.max.messages": 2_000_000,
                  "partitioner": "murmur2_random"},
    "aiokafka": {"acks": "all", "enable_idempotence": True},
    "kafka-python": {"acks": "all", "enable_idempotence": True},  # kafka-python >= 2.2 (see missing_idempotence)
}
DISTRIBUTIONS = {"cykafka": "cykafka", "cykafka-batch": "cykafka", "confluent": "confluent-kafka",
                 "aiokafka": "aiokafka", "kafka-python": "kafka-python"}


def installed_version(client: str) -> str:
    try:
        return importlib.metadata.version(DISTRIBUTIONS[client])
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def missing_idempotence(client: str) -> str | None:
    """Why the installed client runs without idempotence on the bench's broker, else None: kafka-python before 2.2
    has none; aiokafka asks for its producer id with InitProducerId v0 only, which Tansu answers with an error (it
    serves v3+)."""
    installed = installed_version(client)
    major_minor = tuple(int(part) for part in re.findall(r"\d+", installed)[:2])
    if client == "kafka-python" and major_minor and major_minor < (2, 2):
        return f"kafka-python {installed} has no idempotence (2.2 added it): runs without"
    if client == "aiokafka" and aiokafka_init_producer_id_version() < 3:
        return (f"aiokafka {installed} sends InitProducerId v0 only, which Tansu (v3+) answers with an error: "
                "runs without idempotence")
    return None


def aiokafka_init_producer_id_version() -> int:
    """The highest InitProducerId version the installed aiokafka sends (-1 when it has none)."""
    try:
        from aiokafka.protocol import transaction
    except ImportError:
        return -1
    versions = transaction.InitProducerIdRequest
    return max(v.API_VERSION for v in getattr(versions, "CLASSES", versions))  # a list of classes before 0.12


def peer_settings(client: str) -> dict[str, Any]:
    """PEER_SETTINGS[client], less what the installed version cannot take (the report says so)."""
    settings = dict(PEER_SETTINGS[client])
    if missing_idempotence(client):
        settings.pop("enable_idempotence")
    return settings


@dataclass
class Scenario:
    name: str
    title: str
    clients: list[str]
    records: int
    slow_records: int
    value_bytes: int = 100
    codec: str = "none"
    mode: str = "throughput"
    throttle_bytes_per_s: float = 0.0  # overload: the proxy's client->broker rate
    busy_us: int = 0  # latency: the caller's pure-Python work after each send
    buffer_memory: int = 32 * MiB
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def command(self, client: str, bootstrap: str, profile_path: str | None) -> list[str]:
        return e2e.worker_command(client, bootstrap, self.slow_records if client in e2e.SLOW else self.records,
                                  value_bytes=self.value_bytes, codec=self.codec, mode=self.mode,
                                  busy_us=self.busy_us, buffer_memory=self.buffer_memory,
                                  settings=peer_settings(client), profile_path=profile_path)


def scenarios(scale: float) -> list[Scenario]:
    def n(records: int) -> int:
        return max(1000, int(records * scale))

    return [
        Scenario("100B-none", "100-byte values, no compression", ALL_CLIENTS, n(2_000_000), n(50_000)),
        Scenario("100B-lz4", "100-byte values, lz4", ALL_CLIENTS, n(2_000_000), n(50_000), codec="lz4"),
        Scenario("1KiB", "1 KiB values, no compression", ALL_CLIENTS, n(100_000), n(20_000), value_bytes=1024),
        Scenario("10KiB", "10 KiB values, no compression", ALL_CLIENTS, n(20_000), n(5_000), value_bytes=10240),
        Scenario("latency", "10,000 records/s, linger.ms 0",
                 ["cykafka", "confluent", "aiokafka", "kafka-python"], n(30_000), n(30_000), mode="latency"),
        Scenario("latency-busy", f"10,000 records/s, linger.ms 0, the caller busy {BUSY_US} µs in Python after "
                 "each send", ["cykafka", "confluent", "aiokafka"], n(30_000), n(30_000), mode="latency",
                 busy_us=BUSY_US),
        Scenario("overload", "overload: broker behind a 6 MB/s proxy, buffer.memory 16 MiB",
                 ["cykafka", "cykafka-batch", "confluent"], n(300_000), n(300_000), mode="overload",
                 throttle_bytes_per_s=6e6, buffer_memory=16 * MiB),
    ]


def run_round(scenario: Scenario, round_no: int, profile_dir: str | None) -> None:
    """One round: a fresh broker (behind the proxy for overload), every client once; the order rotates by round
    (a broker holding more records answers a little slower: no client is always first)."""
    proxy: ThrottleProxy | None = None
    if scenario.throttle_bytes_per_s:
        broker_port = free_port()
        proxy = ThrottleProxy(broker_port, scenario.throttle_bytes_per_s).start()
        broker = EmbeddedBroker(broker_port, advertised_port=proxy.port).start()
        bootstrap = f"127.0.0.1:{proxy.port}"
    else:
        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap_servers
    try:
        shift = round_no % len(scenario.clients)
        for client in scenario.clients[shift:] + scenario.clients[:shift]:
            profile_path = None
            if profile_dir is not None and client.startswith("cykafka"):
                profile_path = os.path.join(profile_dir, f"{scenario.name}-{client}.prof")
            broker_cpu_before_s = process_cpu_s(broker.pid)
            result = e2e.measure(scenario.command(client, bootstrap, profile_path))
            # the broker's CPU during the worker's whole run (its start-up and warm-up record included)
            result["broker_cpu_s"] = process_cpu_s(broker.pid) - broker_cpu_before_s
            scenario.runs.setdefault(client, []).append(result)
            print(f"  {scenario.name} {client}: {summary(scenario, result)}", file=sys.stderr, flush=True)
            if profile_path is not None:
                with open(profile_path[:-5] + ".txt", "w") as out:
                    pstats.Stats(profile_path, stream=out).sort_stats("tottime").print_stats(40)
    finally:
        broker.stop()
        if proxy is not None:
            proxy.stop()


def process_cpu_s(pid: int | None) -> float:
    """user + sys seconds of a process (Linux /proc); NaN where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(scenario: Scenario, r: dict[str, Any]) -> str:
    if scenario.mode == "latency":
        return f"p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, errors {r['errors']}"
    text = f"{r['records'] / r['elapsed_s']:,.0f} records/s, {r['cpu_s'] / r['records'] * 1e6:.2f} µs CPU/record"
    if scenario.mode == "overload":
        text += f", RSS +{r['rss_growth_mib']:.0f} MiB, longest send {r['max_block_s']:.2f} s"
    return text + f", errors {r['errors']}"


def median(scenario: Scenario, client: str, key: str) -> float:
    values = [value_of(r, key) for r in scenario.runs.get(client, [])]
    return statistics.median(values) if values else math.nan


def value_of(r: dict[str, Any], key: str) -> float:
    if key == "rate":
        return float(r["records"] / r["elapsed_s"])
    if key == "cpu_us":
        return float(r["cpu_s"] / r["records"] * 1e6)
    if key == "broker_cpu_us":
        return float(r.get("broker_cpu_s", math.nan) / r["records"] * 1e6)
    return float(r[key])


def paired(scenario: Scenario, client: str, key: str) -> float:
    """Median over rounds of client / confluent-kafka measured in the same round (on the same broker, minutes
    apart): the ratio the targets are about, steadier than a ratio of medians on a noisy machine."""
    mine, theirs = scenario.runs.get(client, []), scenario.runs.get(BASE, [])
    ratios = [value_of(a, key) / value_of(b, key) for a, b in zip(mine, theirs, strict=False) if value_of(b, key)]
    return statistics.median(ratios) if ratios else math.nan


def _run_json(script: str, records: int, slow_records: int, rounds: int, codec: str, timeout_s: int) -> Any:
    """Runs a neighbour bench script with --json; its last stdout line, parsed."""
    command = [sys.executable, os.path.join(HERE, script), "--records", str(records), "--slow-records",
               str(slow_records), "--rounds", str(rounds), "--codec", codec, "--json"]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=timeout_s)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_encode(records: int, rounds: int, codec: str) -> dict[str, float]:
    rates: dict[str, float] = _run_json("encode_bench.py", records, max(1000, records // 20), rounds, codec, 1800)
    return rates


def run_async(records: int, rounds: int, codec: str) -> dict[str, Any]:
    result: dict[str, Any] = _run_json("async_bench.py", records, records, rounds, codec, 3600)
    return result


def run_consume(records: int, rounds: int, codec: str) -> dict[str, Any]:
    result: dict[str, Any] = _run_json("consume_bench.py", records, max(1000, records // 10), rounds, codec, 3600)
    return result


def run_group(rounds: int) -> dict[str, Any]:
    command = [sys.executable, os.path.join(HERE, "group_bench.py"), "--rounds", str(rounds), "--json"]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# The consumer's targets (issue 16), against confluent-kafka with its best setting: (client, codec, records/s at
# least, CPU per record at most)
CONSUME_TARGETS = [("cykafka", "lz4", 1.5, 0.5), ("cykafka", "none", 1.5, 0.5),
                   ("cykafka-batch", "lz4", 5.0, 0.15), ("cykafka-batch", "none", 2.0, 0.15)]


def consume_targets(results: list[dict[str, Any]]) -> str:
    if not results:
        return ""
    lines = ["| consumer target (vs confluent-kafka, fetch.queue.backoff.ms=1) | records/s | CPU/record | met |",
             "|---|---:|---:|---|"]
    for client, codec, min_rate, max_cpu in CONSUME_TARGETS:
        for result in results:
            if result["codec"] != codec or client not in result["runs"]:
                continue
            rate, cpu, _ = consume_bench.rates(result, client)
            base_rate, base_cpu, _ = consume_bench.rates(result, consume_bench.BASE)
            r, c = ratio(rate, base_rate), ratio(cpu, base_cpu)
            lines.append(f"| {client}, {codec} | {r:.2f}x (>= {min_rate}x) | {c:.2f}x (<= {max_cpu}x) | "
                         f"{'yes' if r >= min_rate and c <= max_cpu else 'NO'} |")
    return "\n".join(lines) + "\n\n"


# -- report ----------------------------------------------------------------------------------------------------------


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def tables(all_scenarios: list[Scenario], encode: dict[str, dict[str, float]], rounds: int) -> str:
    lines: list[str] = []
    throughput = [s for s in all_scenarios if s.mode == "throughput" and s.runs]
    if throughput:
        lines += [f"### Throughput (medians of {rounds} interleaved rounds; ratios: median of the per-round ratios "
                  f"against {BASE})", "",
                  "| scenario | client | records | records/s | vs confluent | client CPU µs/record | CPU vs confluent "
                  "| broker CPU µs/record | errors |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for s in throughput:
            for c in s.clients:
                if c not in s.runs:
                    continue
                rate, cpu = median(s, c, "rate"), median(s, c, "cpu_us")
                lines.append(f"| {s.name} | {c} | {s.runs[c][0]['records']:,} | {rate:,.0f} | "
                             f"{paired(s, c, 'rate'):.2f}x | {cpu:.2f} | "
                             f"{paired(s, c, 'cpu_us'):.2f}x | {median(s, c, 'broker_cpu_us'):.2f} | "
                             f"{sum(r['errors'] for r in s.runs[c])} |")
        lines.append("")
    for s in all_scenarios:
        if s.mode == "latency" and s.runs:
            lines += [f"### Latency (send->ack): {s.title}", "",
                      "| client | records | p50 ms | p99 ms | p50 vs confluent | p99 vs confluent | errors |",
                      "|---|---:|---:|---:|---:|---:|---:|"]
            for c in s.clients:
                if c in s.runs:
                    p50, p99 = median(s, c, "p50_ms"), median(s, c, "p99_ms")
                    lines.append(f"| {c} | {s.runs[c][0]['records']:,} | {p50:.2f} | {p99:.2f} | "
                                 f"{paired(s, c, 'p50_ms'):.3f}x | {paired(s, c, 'p99_ms'):.3f}x | "
                                 f"{sum(r['errors'] for r in s.runs[c])} |")
            lines.append("")
        if s.mode == "overload" and s.runs:
            limit = s.buffer_memory / MiB + 64
            lines += [f"### Overload: {s.title}", "", "| client | records | records/s | peak RSS growth MiB | "
                      "limit MiB (buffer.memory + 64) | longest blocking send s | errors |",
                      "|---|---:|---:|---:|---:|---:|---:|"]
            for c in s.clients:
                if c in s.runs:
                    lines.append(f"| {c} | {s.runs[c][0]['records']:,} | {median(s, c, 'rate'):,.0f} | "
                                 f"{max(r['rss_growth_mib'] for r in s.runs[c]):.0f} | {limit:.0f} | "
                                 f"{max(r['max_block_s'] for r in s.runs[c]):.2f} | "
                                 f"{sum(r['errors'] for r in s.runs[c])} |")
            lines.append("")
    if encode:
        lines += ["### Encode only (append + close, no I/O; bench/encode_bench.py)", "",
                  "| codec | builder | records/s | vs aiokafka |", "|---|---|---:|---:|"]
        for codec, rates in encode.items():
            base = rates.get("aiokafka DefaultRecordBatchBuilder (Cython)", math.nan)
            for name, rate in rates.items():
                lines.append(f"| {codec} | {name} | {rate:,.0f} | {ratio(rate, base):.2f}x |")
        lines.append("")
    return "\n".join(lines)


def settings_table(clients: list[str]) -> str:
    """The report header's record of what each client ran with (PEER_SETTINGS as the workers got it)."""
    lines = ["### Settings", "",
             f"Every client gets the scenario's batching in its own spelling (linger.ms {e2e.LINGER_MS}, 0 in the "
             f"latency scenarios; batch.size {e2e.BATCH_SIZE}; the scenario's codec and buffer memory) and these "
             f"constructor settings (bench/run.py PEER_SETTINGS): acks=all with idempotence, so every ratio against "
             f"{BASE} compares the same guarantee (a note says where a client cannot have it here).", "",
             "| client | version | constructor settings | notes |", "|---|---|---|---|"]
    for client in clients:
        settings = ", ".join(f"{key}={value if isinstance(value, str) else json.dumps(value)}"
                             for key, value in peer_settings(client).items())
        lines.append(f"| {client} | {installed_version(client)} | {settings} | {missing_idempotence(client) or ''} |")
    return "\n".join(lines) + "\n"


def targets(all_scenarios: list[Scenario], encode: dict[str, dict[str, float]]) -> str:
    by_name = {s.name: s for s in all_scenarios if s.runs}
    rows: list[tuple[str, str, bool | None]] = []

    def check(label: str, value: float, goal: str, met: bool) -> None:
        rows.append((label, f"{value:.2f}x ({goal})", None if math.isnan(value) else met))

    for name in ("100B-none", "100B-lz4"):
        if name in by_name:
            s = by_name[name]
            r = paired(s, "cykafka", "rate")
            check(f"send() records/s vs confluent, {name}", r, ">= 1.5x", r >= 1.5)
            c = paired(s, "cykafka", "cpu_us")
            check(f"send() client CPU/record vs confluent, {name}", c, "<= 0.5x", c <= 0.5)
            b = paired(s, "cykafka-batch", "rate")
            check(f"send_batch records/s vs confluent, {name}", b, ">= 5x", b >= 5)
    for name in ("1KiB", "10KiB"):
        if name in by_name:
            s = by_name[name]
            r = paired(s, "cykafka", "rate")
            check(f"send() records/s vs confluent, {name}", r, ">= 1.0x", r >= 1.0)
    for s in by_name.values():
        if s.mode == "latency":
            for p in ("p50_ms", "p99_ms"):
                r = paired(s, "cykafka", p)
                check(f"send->ack {p[:3]} vs confluent, {s.title}", r, "<= 1.5x", r <= 1.5)
    if "overload" in by_name:
        s = by_name["overload"]
        limit = s.buffer_memory / MiB + 64
        for c in ("cykafka", "cykafka-batch"):
            if c in s.runs:
                growth = max(r["rss_growth_mib"] for r in s.runs[c])
                rows.append((f"{c} peak RSS growth under overload", f"{growth:.0f} MiB (<= {limit:.0f} MiB)",
                             growth <= limit))
    for codec, rates in encode.items():
        r = ratio(rates.get("cykafka RecordBatchBuilder", math.nan),
                  rates.get("aiokafka DefaultRecordBatchBuilder (Cython)", math.nan))
        check(f"encode-only vs aiokafka's Cython builder, {codec}", r, ">= 2x", r >= 2)
    lines = ["### Targets", "", "| target | measured | met |", "|---|---|---|"]
    for label, value, met in rows:
        lines.append(f"| {label} | {value} | {'n/a' if met is None else 'yes' if met else 'NO'} |")
    return "\n".join(lines) + "\n"


def plot(all_scenarios: list[Scenario], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    throughput = [s for s in all_scenarios if s.mode == "throughput" and s.runs]
    latency = [s for s in all_scenarios if s.mode == "latency" and s.runs]
    panels = 2 + bool(latency)
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.6))
    width = 0.8 / len(ALL_CLIENTS)
    for panel, (key, label) in enumerate([("rate", "records/s vs confluent-kafka (higher is better)"),
                                          ("cpu_us", "client CPU per record vs confluent-kafka (lower is better)")]):
        ax = axes[panel]
        for i, c in enumerate(ALL_CLIENTS):
            ys = [paired(s, c, key) if c in s.runs else 0 for s in throughput]
            ax.bar([x + i * width for x in range(len(throughput))], ys, width, label=c)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xticks([x + width * (len(ALL_CLIENTS) - 1) / 2 for x in range(len(throughput))],
                      [s.name for s in throughput])
        ax.set_yscale("log")
        ax.set_title(f"{label}, log", fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(ALL_CLIENTS), fontsize=9)
    if latency:
        ax = axes[2]
        bars = [(s, c) for s in latency for c in s.clients if c in s.runs]
        for j, p in enumerate(("p50_ms", "p99_ms")):
            ax.bar([x + j * 0.4 for x in range(len(bars))], [median(s, c, p) for s, c in bars], 0.4, label=p[:3])
        ax.set_xticks([x + 0.2 for x in range(len(bars))], [f"{c}\n{s.name}" for s, c in bars], fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("ms (log)")
        ax.set_title(f"send->ack latency, 10k records/s, linger.ms 0 (busy: {BUSY_US} µs of Python per send)",
                     fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(f"cykafka vs peers on Tansu, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a tenth of the records, one round (a smoke run)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every record count")
    parser.add_argument("--only", default="",
                        help="comma-separated scenario names (and/or 'encode', 'consume', 'async', 'group')")
    parser.add_argument("--profile", action="store_true", help="cProfile the cykafka workers")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    scale = args.scale * (0.1 if args.quick else 1.0)
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    os.makedirs(args.out, exist_ok=True)
    profile_dir = os.path.join(args.out, "profile") if args.profile else None
    if profile_dir is not None:
        os.makedirs(profile_dir, exist_ok=True)
    chosen = [s for s in scenarios(scale) if not only or s.name in only]
    started = time.monotonic()
    for round_no in range(rounds):
        for scenario in chosen:
            print(f"round {round_no + 1}/{rounds}: {scenario.name}", file=sys.stderr, flush=True)
            run_round(scenario, round_no, profile_dir)
    encode: dict[str, dict[str, float]] = {}
    if not only or "encode" in only:
        for codec in ("none", "lz4"):
            encode[codec] = run_encode(max(10_000, int(1_000_000 * scale)), rounds, codec)
    consume: list[dict[str, Any]] = []
    if not only or "consume" in only:
        for codec in ("lz4", "none"):
            consume.append(run_consume(max(20_000, int(2_000_000 * scale)), rounds, codec))
    asyncio_runs: list[dict[str, Any]] = []
    if not only or "async" in only:
        asyncio_runs.append(run_async(max(20_000, int(1_000_000 * scale)), rounds, "lz4"))
    group = run_group(max(3, rounds)) if not only or "group" in only else None
    header = (f"## Results\n\nbench/run.py{' --quick' if args.quick else ''}, {rounds} round(s), {os.cpu_count()} "
              f"CPUs, Python {sys.version.split()[0]}, broker Tansu (embedded, memory storage), "
              f"{time.monotonic() - started:.0f} s\n\n")
    clients = [c for c in ALL_CLIENTS if any(c in s.clients for s in chosen)]
    report = (header + settings_table(clients) + "\n" + targets(chosen, encode) + "\n" + consume_targets(consume)
              + tables(chosen, encode, rounds) + "".join("\n" + consume_bench.table(r) for r in consume)
              + "".join("\n" + async_bench.table(r) for r in asyncio_runs)
              + ("\n" + group_bench.table(group) if group is not None else ""))
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(report)
    with open(os.path.join(args.out, "runs.json"), "w") as f:  # every worker's raw result, for a second look
        json.dump({"scenarios": {s.name: s.runs for s in chosen}, "encode": encode, "consume": consume,
                   "async": asyncio_runs, "group": group}, f, indent=1)
    if any(s.runs for s in chosen if s.mode == "throughput"):
        plot(chosen, os.path.join(args.out, "results.png"))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
