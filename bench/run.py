"""The whole performance comparison in one command: cykafka (send and send_batch), Kafka's Java clients,
confluent-kafka, aiokafka and kafka-python on the embedded broker (Tansu) and/or Apache Kafka (one KRaft node), every
scenario of docs/performance.md, interleaved rounds, medians and ratios against confluent-kafka and the Java
clients; writes bench/results/results.md (the tables and the targets) and results.png.

    python bench/run.py [--broker tansu|kafka|both] [--rounds R] [--quick] [--only SCENARIO,...] [--profile]
                        [--out DIR]
    python bench/run.py --only java --broker both   # the Java comparison (issue 29) on both brokers
    python -m cProfile -o run.prof bench/run.py --quick

Scenarios (same payloads, same batching config for every client: linger.ms 5, batch.size 16384; the same guarantee:
acks=all and idempotence for every client, PEER_SETTINGS below, printed in the report's header):
  100B-none, 100B-lz4, 1KiB, 10KiB  throughput: records/s and client CPU (user+sys of its own process) per record;
  latency                           send->ack p50/p99 at 10,000 records/s with linger.ms 0;
  latency-busy                      the same, the sending thread busy in pure Python (holding the GIL) for
                                    BUSY_US µs after each send;
  latency-spin                      the same, the sending thread spinning in pure Python until each record is due
                                    (it never sleeps: cykafka's network thread gets the GIL only from send());
  latency-hog                       HOG_RECORDS records at HOG_RATE records/s, linger.ms 0, the sending thread
                                    sleeping between sends while another thread of the program spins in pure Python
                                    all the time and never calls the client (the GIL comes only by CPython's forced
                                    switch, every 5 ms);
  consume-latency                   bench/consume_latency.py: consumer end-to-end latency (send -> received) at
                                    10,000 records/s, the consumer's caller spinning in Python between poll(0)
                                    calls, cykafka against confluent-kafka (issue 32);
  overload                          a throttling proxy makes the broker ~10x slower than the client: peak RSS growth
                                    against buffer.memory (16 MiB here) + 64 MiB, and the longest blocking send;
  encode                            bench/encode_bench.py (append + close, no I/O) against aiokafka's Cython builder;
  consume                           bench/consume_bench.py: cykafka's Consumer (poll, poll_batch) against
                                    confluent-kafka (tuned and default), aiokafka and kafka-python, lz4 and none;
  async                             bench/async_bench.py: cykafka.aio's AsyncProducer and AsyncConsumer against
                                    aiokafka's, lz4, and the event-loop lag while producing.
  group                             bench/group_bench.py: group join time (subscribe to first assignment) of cykafka
                                    and confluent-kafka against Tansu's join hold (session.timeout.ms / 2);
  observability                     bench/observability_bench.py: cykafka's send(), send_batch(), poll() and
                                    poll_batch() plain against tracing installed (API only; SDK without exporter)
                                    and every metrics export on (issue 30's overhead goal: <= 5% slower);
  compat                            bench/compat_bench.py: cykafka.compat's confluent-kafka, kafka-python and
                                    aiokafka layers beside the peers they imitate, produce and consume (issue 31);
  rebalance                         bench/rebalance_bench.py (only when asked: --only rebalance; it starts a Kafka
                                    node): join time and the other members' pause while a member joins, classic vs
                                    KIP-848's consumer protocol, cykafka vs confluent-kafka (issue 27);
  txn                               bench/txn_bench.py (only when asked: --only txn; it starts two Kafka nodes):
                                    small transactions (10 records) per second, cykafka on Transactions V2 and V1
                                    and confluent-kafka, on Apache Kafka at transaction.version 2 and 1;
  java                              the comparison with Kafka's Java clients (bench/java/JavaBench.java, compiled
                                    against the broker version's kafka-clients): the produce scenarios 100B-none,
                                    100B-lz4, 1KiB, 1KiB-lz4 and latency, and consume (lz4, none), with cykafka,
                                    the Java client and confluent-kafka; Kafka's own ProducerPerformance and
                                    ConsumerPerformance once as a cross-check; the goals of issue 29.
Brokers (--broker): tansu (default) gets a fresh broker for every (scenario, round) (its memory storage keeps every
record); kafka is one Apache Kafka node (tests/apache_kafka.py, NEWEST) for the whole run, a fresh topic per worker,
deleted after it (the overload scenario gets its own node per round, advertising the throttling proxy); both runs
the whole selection on Tansu, then on Kafka, one report section each. async and group run on Tansu only.
Each client runs in its own process (bench/e2e_bench.py's workers; the Java client in its own JVM). Ratios are the
median of the per-round ratios (each round measures the clients back to back on one broker). runs.json keeps every
worker's raw result. --profile runs the cykafka workers under cProfile and writes
bench/results/profile/<broker>-<scenario>-<client>.prof and a .txt summary of each.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import async_bench
import compat_bench
import consume_bench
import consume_latency
import e2e_bench as e2e
import group_bench
import java_peer
import observability_bench
import rebalance_bench
import txn_bench
from throttle import ThrottleProxy

from cykafka.broker import EmbeddedBroker, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 2**20
ALL_CLIENTS = ["cykafka", "cykafka-batch", "java", "confluent", "aiokafka", "kafka-python"]
JAVA_CLIENTS = ["cykafka", "cykafka-batch", "java", "confluent"]  # --only java: the clients it compares
BASE = "confluent"
JAVA = "java"  # the second base: Kafka's Java clients (issue 29's goals are ratios against it)
BUSY_US = 50  # latency-busy: the caller's pure-Python work after each send: half of the 100 µs between sends
HOG_RATE = 100  # latency-hog: a record every 10 ms (each send waits for a forced switch to get the GIL)
HOG_RECORDS = 300

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
    # KafkaProducer's own defaults otherwise (max.in.flight 5, its partitioner: murmur2 for keys), as Kafka ships it
    "java": {"acks": "all", "enable.idempotence": True},
}
DISTRIBUTIONS = {"cykafka": "cykafka", "cykafka-batch": "cykafka", "confluent": "confluent-kafka",
                 "aiokafka": "aiokafka", "kafka-python": "kafka-python"}


def installed_version(client: str) -> str:
    if client == JAVA:
        return (f"kafka-clients {java_peer.VERSION} ({java_peer.apache_kafka.OLDEST} on Tansu), Maven Central; "
                f"Java {java_version()}")
    try:
        return importlib.metadata.version(DISTRIBUTIONS[client])
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def java_version() -> str:
    done = subprocess.run([java_peer.apache_kafka.java_binary(), "-version"], capture_output=True, text=True,
                          check=False)
    found = re.search(r'version "([^"]+)"', done.stderr)
    return found[1] if found else "?"


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
    spin: bool = False  # latency: the caller spins in Python until each record is due (never sleeps)
    hog: bool = False  # latency: another thread spins in Python all the time (never calls the client)
    rate: int = 10_000  # latency: records/s
    buffer_memory: int = 32 * MiB
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def command(self, client: str, bootstrap: str, profile_path: str | None, topic: str | None = None,
                java_version: str = java_peer.VERSION) -> list[str]:
        records = self.slow_records if client in e2e.SLOW else self.records
        if client == JAVA:
            command = java_peer.producer_command(bootstrap, records, value_bytes=self.value_bytes, codec=self.codec,
                                                 mode=self.mode, buffer_memory=self.buffer_memory,
                                                 settings=peer_settings(client), version=java_version)
        else:
            command = e2e.worker_command(client, bootstrap, records, value_bytes=self.value_bytes, codec=self.codec,
                                         mode=self.mode, rate=self.rate, busy_us=self.busy_us, spin=self.spin,
                                         hog=self.hog,
                                         buffer_memory=self.buffer_memory,
                                         settings=peer_settings(client), profile_path=profile_path)
        return command + (["--topic", topic] if topic else [])


def scenarios(scale: float) -> list[Scenario]:
    def n(records: int) -> int:
        return max(1000, int(records * scale))

    return [
        Scenario("100B-none", "100-byte values, no compression", ALL_CLIENTS, n(2_000_000), n(50_000)),
        Scenario("100B-lz4", "100-byte values, lz4", ALL_CLIENTS, n(2_000_000), n(50_000), codec="lz4"),
        Scenario("1KiB", "1 KiB values, no compression", ALL_CLIENTS, n(300_000), n(20_000), value_bytes=1024),
        Scenario("1KiB-lz4", "1 KiB values, lz4", JAVA_CLIENTS, n(300_000), n(20_000), value_bytes=1024,
                 codec="lz4"),
        Scenario("10KiB", "10 KiB values, no compression", ALL_CLIENTS, n(20_000), n(5_000), value_bytes=10240),
        Scenario("latency", "10,000 records/s, linger.ms 0",
                 ["cykafka", "java", "confluent", "aiokafka", "kafka-python"], n(30_000), n(30_000),
                 mode="latency"),
        Scenario("latency-busy", f"10,000 records/s, linger.ms 0, the caller busy {BUSY_US} µs in Python after "
                 "each send", ["cykafka", "confluent", "aiokafka"], n(30_000), n(30_000), mode="latency",
                 busy_us=BUSY_US),
        Scenario("latency-spin", "10,000 records/s, linger.ms 0, the caller spinning in Python between sends (it "
                 "never sleeps)", ["cykafka", "confluent"], n(30_000), n(30_000), mode="latency", spin=True),
        Scenario("latency-hog", f"{HOG_RATE} records/s, linger.ms 0, another thread spinning in Python all the time "
                 "(it never calls the client)", ["cykafka", "confluent"], HOG_RECORDS, HOG_RECORDS, mode="latency",
                 hog=True, rate=HOG_RATE),
        Scenario("overload", "overload: broker behind a 6 MB/s proxy, buffer.memory 16 MiB",
                 ["cykafka", "cykafka-batch", "confluent"], n(300_000), n(300_000), mode="overload",
                 throttle_bytes_per_s=6e6, buffer_memory=16 * MiB),
    ]


@dataclass
class Broker:
    """What a round runs against: the clients' bootstrap, the broker's pid (its CPU is read from /proc) and how to
    drop a topic once its worker is done (a no-op where the broker is thrown away after the round)."""
    bootstrap_servers: str
    pid: int | None
    drop: Callable[[str], None] = lambda _topic: None


class Site:
    """A kind of broker for the whole run: `round(throttle)` gives the broker for one (scenario, round)."""
    name = ""
    title = ""
    java_version = java_peer.VERSION  # the Java client's kafka-clients: the Apache Kafka broker's version
    java_note = ""

    @contextmanager
    def round(self, throttle_bytes_per_s: float) -> Iterator[Broker]:
        raise NotImplementedError
        yield

    def shared_bootstrap(self) -> tuple[str, Callable[[], None]]:
        """A broker for the neighbour scripts (consume): its bootstrap and what stops it."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class TansuSite(Site):
    """Tansu (embedded, memory storage): a fresh broker for every (scenario, round), behind the proxy for overload."""
    name = "tansu"
    title = "Tansu (embedded, memory storage)"
    # kafka-clients 4.4 sends ApiVersions v5 (naming the cluster and node) once it knows the cluster, and Tansu drops
    # that connection: its producer never gets past its first batch. 4.0.2 (tests/apache_kafka.py OLDEST) asks v4.
    java_version = java_peer.apache_kafka.OLDEST
    java_note = (f"on Tansu the Java client is kafka-clients {java_peer.apache_kafka.OLDEST}: Tansu drops the "
                 f"connection on {java_peer.VERSION}'s ApiVersions v5 (sent once the cluster id is known)")

    @contextmanager
    def round(self, throttle_bytes_per_s: float) -> Iterator[Broker]:
        proxy: ThrottleProxy | None = None
        if throttle_bytes_per_s:
            broker_port = free_port()
            proxy = ThrottleProxy(broker_port, throttle_bytes_per_s).start()
            broker = EmbeddedBroker(broker_port, advertised_port=proxy.port).start()
            bootstrap = f"127.0.0.1:{proxy.port}"
        else:
            broker = EmbeddedBroker().start()
            bootstrap = broker.bootstrap_servers
        try:
            yield Broker(bootstrap, broker.pid)
        finally:
            broker.stop()
            if proxy is not None:
                proxy.stop()

    def shared_bootstrap(self) -> tuple[str, Callable[[], None]]:
        return "", lambda: None  # the neighbour script starts its own embedded broker


class KafkaSite(Site):
    """Apache Kafka (tests/apache_kafka.py): one KRaft node for the whole run (a start takes seconds and warms its
    JVM), a fresh topic per worker, deleted after it; overload gets a node of its own per round whose advertised
    listener is the throttling proxy."""
    name = "kafka"
    title = (f"Apache Kafka {java_peer.VERSION} (one KRaft node, broker+controller, 1 GiB heap, on-disk log, a fresh "
             "topic per worker)")

    def __init__(self) -> None:
        self.cluster: Any = None

    def _shared(self) -> Any:
        if self.cluster is None:
            self.cluster = java_peer.apache_kafka.KafkaCluster(1).start()
            warm_up(self.cluster)
        return self.cluster

    @contextmanager
    def round(self, throttle_bytes_per_s: float) -> Iterator[Broker]:
        if not throttle_bytes_per_s:
            cluster = self._shared()
            yield Broker(cluster.bootstrap_servers, cluster.pid, lambda topic: delete_topic(cluster, topic))
            return
        cluster = java_peer.apache_kafka.KafkaCluster(1)
        proxy = ThrottleProxy(cluster.port, throttle_bytes_per_s).start()
        cluster.broker_config["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{proxy.port}"
        try:
            cluster.start()
            yield Broker(f"127.0.0.1:{proxy.port}", cluster.pid)
        finally:
            cluster.stop()
            proxy.stop()

    def shared_bootstrap(self) -> tuple[str, Callable[[], None]]:
        return self._shared().bootstrap_servers, lambda: None

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None


def warm_up(cluster: Any, records: int = 400_000) -> None:
    """A new broker's JVM interprets its request paths until the JIT has compiled them: the first client measured
    would pay for that. Before any clock: records through a producer and a consumer (lz4 and none), then the topics
    are dropped."""
    for codec in ("lz4", "none"):
        topic = f"warm-up-{codec}-{time.monotonic_ns()}"
        consume_bench.fill(cluster.bootstrap_servers, topic, 4, records, 100, codec)
        from cykafka import Consumer, TopicPartition

        with Consumer({"bootstrap.servers": cluster.bootstrap_servers, "auto.offset.reset": "earliest"}) as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(4)])
            seen = 0
            while seen < records:
                seen += consumer.poll_batch(1.0, max_records=10_000).num_rows
        delete_topic(cluster, topic)


def delete_topic(cluster: Any, topic: str) -> None:
    """Drops a finished worker's topic (the log on disk and in the page cache stays bounded over a long run)."""
    from cykafka import Admin

    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        for future in admin.delete_topics([topic]).values():
            try:
                future.result()
            except Exception as e:  # a worker that failed early may have made no topic
                print(f"  (topic {topic} not deleted: {e})", file=sys.stderr)


SITES: dict[str, Callable[[], Site]] = {"tansu": TansuSite, "kafka": KafkaSite}


def run_round(scenario: Scenario, round_no: int, profile_dir: str | None, site: Site) -> None:
    """One round: the site's broker for it (a fresh one on Tansu, behind the proxy for overload), every client once;
    the order rotates by round (a broker holding more records answers a little slower: no client is always
    first)."""
    with site.round(scenario.throttle_bytes_per_s) as broker:
        shift = round_no % len(scenario.clients)
        for client in scenario.clients[shift:] + scenario.clients[:shift]:
            profile_path = None
            if profile_dir is not None and client.startswith("cykafka"):
                profile_path = os.path.join(profile_dir, f"{site.name}-{scenario.name}-{client}.prof")
            topic = f"bench-{scenario.name}-{client}-{round_no}-{time.monotonic_ns()}"
            broker_cpu_before_s = process_cpu_s(broker.pid)
            result = e2e.measure(scenario.command(client, broker.bootstrap_servers, profile_path, topic,
                                                  site.java_version))
            # the broker's CPU during the worker's whole run (its start-up and warm-up record included)
            result["broker_cpu_s"] = process_cpu_s(broker.pid) - broker_cpu_before_s
            broker.drop(topic)
            scenario.runs.setdefault(client, []).append(result)
            print(f"  {site.name} {scenario.name} {client}: {summary(scenario, result)}", file=sys.stderr,
                  flush=True)
            if profile_path is not None:
                with open(profile_path[:-5] + ".txt", "w") as out:
                    pstats.Stats(profile_path, stream=out).sort_stats("tottime").print_stats(40)


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
    if key == "steady_rate":  # the Java client without its JIT warm-up: the last 90% of its records (others: rate)
        if "first_tenth_s" not in r:
            return float(r["records"] / r["elapsed_s"])
        return steady_rate(r)
    if key == "cpu_us":
        return float(r["cpu_s"] / r["records"] * 1e6)
    if key == "broker_cpu_us":
        return float(r.get("broker_cpu_s", math.nan) / r["records"] * 1e6)
    return float(r[key])


def steady_rate(r: dict[str, Any]) -> float:
    """A Java run's records/s over the last 90% of its records (after the first tenth, the JIT's warm-up)."""
    return float(0.9 * r["records"] / (r["elapsed_s"] - r["first_tenth_s"]))


def paired(scenario: Scenario, client: str, key: str, base: str = BASE) -> float:
    """Median over rounds of client / base (confluent-kafka, or the Java client) measured in the same round (on the
    same broker, minutes apart): the ratio the targets are about, steadier than a ratio of medians on a noisy
    machine."""
    mine, theirs = scenario.runs.get(client, []), scenario.runs.get(base, [])
    ratios = [value_of(a, key) / value_of(b, key) for a, b in zip(mine, theirs, strict=False) if value_of(b, key)]
    return statistics.median(ratios) if ratios else math.nan


def _run_json(script: str, records: int, slow_records: int, rounds: int, codec: str, timeout_s: int,
              *extra: str) -> Any:
    """Runs a neighbour bench script with --json; its last stdout line, parsed."""
    command = [sys.executable, os.path.join(HERE, script), "--records", str(records), "--slow-records",
               str(slow_records), "--rounds", str(rounds), "--codec", codec, "--json", *extra]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=timeout_s)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_encode(records: int, rounds: int, codec: str) -> dict[str, float]:
    rates: dict[str, float] = _run_json("encode_bench.py", records, max(1000, records // 20), rounds, codec, 1800)
    return rates


def run_async(records: int, rounds: int, codec: str) -> dict[str, Any]:
    result: dict[str, Any] = _run_json("async_bench.py", records, records, rounds, codec, 3600)
    return result


def run_consume(records: int, rounds: int, codec: str, bootstrap: str = "", clients: list[str] | None = None,
                java_version: str = java_peer.VERSION) -> dict[str, Any]:
    """consume_bench.py: on its own embedded broker, or on `bootstrap` (a fresh topic there)."""
    extra = (["--bootstrap", bootstrap] if bootstrap else []) + (["--clients", ",".join(clients)] if clients else [])
    extra += ["--java-version", java_version]
    result: dict[str, Any] = _run_json("consume_bench.py", records, max(1000, records // 10), rounds, codec, 3600,
                                       *extra)
    return result


def run_consume_latency(records: int, rounds: int, bootstrap: str) -> dict[str, Any]:
    """consume_latency.py on `bootstrap` (a fresh topic per round there): the spinning consumer caller."""
    command = [sys.executable, os.path.join(HERE, "consume_latency.py"), "--records", str(records), "--rounds",
               str(rounds), "--bootstrap", bootstrap, "--json"]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=3600)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def consume_latency_targets(result: dict[str, Any] | None) -> str:
    """Issue 32's consumer goal: end-to-end p50 <= 1.0x confluent-kafka's with the caller spinning."""
    if result is None or "cykafka" not in result["runs"] or "confluent" not in result["runs"]:
        return ""
    r = consume_latency.paired(result, "cykafka", "p50_ms")
    return ("| target | measured | met |\n|---|---|---|\n"
            f"| consumer end-to-end p50 vs confluent, {consume_latency.title(result)} | {r:.2f}x (<= 1.0x) | "
            f"{'n/a' if math.isnan(r) else 'yes' if r <= 1.0 else 'NO'} |\n")


def run_crosscheck(bootstrap: str, records: int, version: str) -> dict[str, Any]:
    """Kafka's own ProducerPerformance (100-byte records, lz4, the bench's batching and guarantee) and
    ConsumerPerformance (reading them back), once: the Java figures seen through Kafka's own tools."""
    topic = f"perf-tools-{time.monotonic_ns()}"
    settings = {**PEER_SETTINGS[JAVA], "linger.ms": e2e.LINGER_MS, "batch.size": e2e.BATCH_SIZE}
    produced = java_peer.producer_performance(bootstrap, topic, records, 100, "lz4", settings, version)
    consumed = java_peer.consumer_performance(bootstrap, topic, records, version)
    return {"records": records, "producer": produced, "consumer": consumed, "settings": settings, "version": version}


def _run_script(script: str, *args: str, timeout_s: int = 3600) -> dict[str, Any]:
    """A bench script that starts its own broker, run with --json: its last stdout line, parsed."""
    out = subprocess.run([sys.executable, os.path.join(HERE, script), *args, "--json"], capture_output=True,
                         text=True, check=True, timeout=timeout_s)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_txn(rounds: int, transactions: int) -> dict[str, Any]:
    return _run_script("txn_bench.py", "--rounds", str(rounds), "--transactions", str(transactions), timeout_s=1800)


def run_observability(records: int, rounds: int) -> dict[str, Any]:
    result: dict[str, Any] = _run_json("observability_bench.py", records, records, rounds, "none", 3600)
    return result


def run_compat(records: int, rounds: int) -> dict[str, Any]:
    return _run_script("compat_bench.py", "--records", str(records), "--rounds", str(rounds))


def run_rebalance(rounds: int, settle_s: float) -> dict[str, Any]:
    return _run_script("rebalance_bench.py", "--rounds", str(rounds), "--settle-s", str(settle_s))


def run_group(rounds: int) -> dict[str, Any]:
    return _run_script("group_bench.py", "--rounds", str(rounds), timeout_s=600)


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
            if result["codec"] != codec or client not in result["runs"] or consume_bench.BASE not in result["runs"]:
                continue
            rate, cpu, _ = consume_bench.rates(result, client)
            base_rate, base_cpu, _ = consume_bench.rates(result, consume_bench.BASE)
            r, c = ratio(rate, base_rate), ratio(cpu, base_cpu)
            lines.append(f"| {client}, {codec} | {r:.2f}x (>= {min_rate}x) | {c:.2f}x (<= {max_cpu}x) | "
                         f"{'yes' if r >= min_rate and c <= max_cpu else 'NO'} |")
    return "\n".join(lines) + "\n\n"


# Issue 29's goals against Kafka's Java clients: (what, records/s at least, client CPU per record at most or None)
JAVA_PRODUCE_GOALS = [("cykafka-batch", 1.0, 1.0), ("cykafka", 0.5, None)]
JAVA_CONSUME_GOALS = [("cykafka-batch", 1.0, 1.0), ("cykafka", 0.5, None)]
JAVA_NAMES = {"cykafka-batch": "send_batch", "cykafka": "send()"}
JAVA_CONSUME_NAMES = {"cykafka-batch": "poll_batch", "cykafka": "poll()"}


def consume_paired(result: dict[str, Any], client: str, base: str, key: str) -> float:
    """consume_bench's runs, round by round (the clients of a round read the same topic back to back): the median
    of client / base per round."""
    def value(r: dict[str, Any]) -> float:
        if "error" in r or not r["records"]:
            return math.nan
        if key == "steady_rate" and "first_tenth_s" in r:
            return steady_rate(r)
        return float(r["records"] / r["elapsed_s"] if key in ("rate", "steady_rate") else r["cpu_s"] / r["records"]
                     * 1e6)

    pairs = [ratio(value(a), value(b)) for a, b in zip(result["runs"].get(client, []), result["runs"].get(base, []),
                                                       strict=False)]
    pairs = [p for p in pairs if not math.isnan(p)]
    return statistics.median(pairs) if pairs else math.nan


def java_targets(all_scenarios: list[Scenario], consume: list[dict[str, Any]]) -> str:
    """The goals of issue 29, each a median of per-round ratios against the Java client on this broker."""
    rows: list[str] = []

    def row(label: str, value: float, goal: float, at_most: bool) -> None:
        met = "n/a" if math.isnan(value) else "yes" if (value <= goal if at_most else value >= goal) else "NO"
        rows.append(f"| {label} | {value:.2f}x ({'<=' if at_most else '>='} {goal}x) | {met} |")

    for s in all_scenarios:
        if s.mode != "throughput" or JAVA not in s.runs:
            continue
        for client, min_rate, max_cpu in JAVA_PRODUCE_GOALS:
            if client in s.runs:
                row(f"{JAVA_NAMES[client]} records/s vs Java, {s.name}", paired(s, client, "rate", JAVA), min_rate,
                    False)
                row(f"{JAVA_NAMES[client]} records/s vs Java's steady rate (its warm-up left out), {s.name}",
                    paired(s, client, "steady_rate", JAVA), min_rate, False)
                if max_cpu is not None:
                    row(f"{JAVA_NAMES[client]} client CPU/record vs Java, {s.name}", paired(s, client, "cpu_us", JAVA),
                        max_cpu, True)
    for result in consume:
        if JAVA not in result["runs"]:
            continue
        for client, min_rate, max_cpu in JAVA_CONSUME_GOALS:
            if client in result["runs"]:
                name = f"{JAVA_CONSUME_NAMES[client]}, {result['codec']}"
                row(f"{name} records/s vs Java", consume_paired(result, client, JAVA, "rate"), min_rate, False)
                row(f"{name} records/s vs Java's steady rate (its warm-up left out)",
                    consume_paired(result, client, JAVA, "steady_rate"), min_rate, False)
                if max_cpu is not None:
                    row(f"{name} client CPU/record vs Java", consume_paired(result, client, JAVA, "cpu"), max_cpu,
                        True)
    if not rows:
        return ""
    return "\n".join(["### Goals against Kafka's Java clients (issue 29)", "", "| goal | measured | met |",
                      "|---|---|---|", *rows]) + "\n\n"


def java_warmup(all_scenarios: list[Scenario], consume: list[dict[str, Any]]) -> str:
    """The Java client's JVM warm-up, apart: start-up outside the clock, and inside it the first tenth's excess over
    the steady rate of the other 90%."""
    lines = ["### The Java client's JVM warm-up (medians; start-up is outside the clock, the first tenth inside it)",
             "", "| run | JVM start to ready s | its CPU s | timed run s | first 10% of records s | "
             "beyond the steady rate s | share of the timed run | records/s | steady records/s (last 90%) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    runs = [(s.name, s.runs[JAVA]) for s in all_scenarios if s.mode == "throughput" and JAVA in s.runs]
    runs += [(f"consume {r['codec']}", [x for x in r["runs"][JAVA] if "error" not in x]) for r in consume
             if JAVA in r["runs"]]
    for name, results in runs:
        if not results or "warmup_s" not in results[0]:
            continue

        def med(key: str, results: list[dict[str, Any]] = results) -> float:
            return statistics.median(float(r[key]) for r in results)

        lines.append(f"| {name} | {med('startup_s'):.2f} | {med('startup_cpu_s'):.2f} | {med('elapsed_s'):.2f} | "
                     f"{med('first_tenth_s'):.2f} | {med('warmup_s'):.2f} | "
                     f"{statistics.median(r['warmup_s'] / r['elapsed_s'] for r in results):.0%} | "
                     f"{statistics.median(r['records'] / r['elapsed_s'] for r in results):,.0f} | "
                     f"{statistics.median(steady_rate(r) for r in results):,.0f} |")
    return "\n".join(lines) + "\n\n" if len(lines) > 4 else ""


def crosscheck_table(check: dict[str, Any] | None, java_rate: float, java_consume_rate: float) -> str:
    if not check:
        return ""
    p, c = check["producer"], check["consumer"]
    return "\n".join([
        f"### Cross-check: Kafka's own perf tools (kafka-tools {check['version']}), {check['records']:,} records of "
        "100 B, lz4, once", "",
        "| tool | records/s | the bench's Java worker (median) | notes |", "|---|---:|---:|---|",
        f"| ProducerPerformance | {p['records_per_s']:,.0f} | {java_rate:,.0f} | unkeyed random values, "
        f"{', '.join(f'{k}={v}' for k, v in check['settings'].items())}; its clock starts at the first send (JVM "
        f"warm-up inside); p50 {p['p50_ms']:.0f} ms, p99 {p['p99_ms']:.0f} ms |",
        f"| ConsumerPerformance | {c['records_per_s']:,.0f} (fetch only: {c['fetch_records_per_s']:,.0f}) | "
        f"{java_consume_rate:,.0f} | a group subscription (its join in the first figure), check.crcs=true |",
    ]) + "\n\n"


# -- report ----------------------------------------------------------------------------------------------------------


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def tables(all_scenarios: list[Scenario], encode: dict[str, dict[str, float]], rounds: int) -> str:
    lines: list[str] = []
    throughput = [s for s in all_scenarios if s.mode == "throughput" and s.runs]
    if throughput:
        lines += [f"### Throughput (medians of {rounds} interleaved rounds; ratios: median of the per-round ratios "
                  f"against {BASE} and against the Java client)", "",
                  "| scenario | client | records | records/s | vs confluent | vs Java | client CPU µs/record | "
                  "CPU vs confluent | CPU vs Java | broker CPU µs/record | errors |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for s in throughput:
            for c in s.clients:
                if c not in s.runs:
                    continue
                rate, cpu = median(s, c, "rate"), median(s, c, "cpu_us")
                lines.append(f"| {s.name} | {c} | {s.runs[c][0]['records']:,} | {rate:,.0f} | "
                             f"{paired(s, c, 'rate'):.2f}x | {paired(s, c, 'rate', JAVA):.2f}x | {cpu:.2f} | "
                             f"{paired(s, c, 'cpu_us'):.2f}x | {paired(s, c, 'cpu_us', JAVA):.2f}x | "
                             f"{median(s, c, 'broker_cpu_us'):.2f} | {sum(r['errors'] for r in s.runs[c])} |")
        lines.append("")
    for s in all_scenarios:
        if s.mode == "latency" and s.runs:
            lines += [f"### Latency (send->ack): {s.title}", "",
                      "| client | records | p50 ms | p99 ms | p50 vs confluent | p99 vs confluent | p50 vs Java | "
                      "p99 vs Java | errors |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for c in s.clients:
                if c in s.runs:
                    p50, p99 = median(s, c, "p50_ms"), median(s, c, "p99_ms")
                    lines.append(f"| {c} | {s.runs[c][0]['records']:,} | {p50:.2f} | {p99:.2f} | "
                                 f"{paired(s, c, 'p50_ms'):.3f}x | {paired(s, c, 'p99_ms'):.3f}x | "
                                 f"{paired(s, c, 'p50_ms', JAVA):.3f}x | {paired(s, c, 'p99_ms', JAVA):.3f}x | "
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
        note = missing_idempotence(client) or ("its own JVM (java " + java_peer.HEAP + ", G1); KafkaProducer's and "
                                               "KafkaConsumer's defaults otherwise" if client == JAVA else "")
        lines.append(f"| {client} | {installed_version(client)} | {settings} | {note} |")
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
            goal = 1.0 if s.spin else 1.5  # issue 32: a caller that never gives up the GIL, like with like
            for p in ("p50_ms", "p99_ms"):
                r = paired(s, "cykafka", p)
                check(f"send->ack {p[:3]} vs confluent, {s.title}", r, f"<= {goal}x", r <= goal)
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
    if not rows:
        return ""
    lines = ["### Targets", "", "| target | measured | met |", "|---|---|---|"]
    for label, value, met in rows:
        lines.append(f"| {label} | {value} | {'n/a' if met is None else 'yes' if met else 'NO'} |")
    return "\n".join(lines) + "\n"


def plot(all_scenarios: list[Scenario], path: str, broker_title: str) -> None:
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
    fig.suptitle(f"cykafka vs peers on {broker_title.split(' (')[0]}, {os.cpu_count()} CPUs, Python "
                 f"{sys.version.split()[0]}", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


JAVA_SCENARIOS = ("100B-none", "100B-lz4", "1KiB", "1KiB-lz4", "latency")  # --only java: these, JAVA_CLIENTS


def selected(only: set[str], scale: float) -> list[Scenario]:
    """The scenarios --only names (every one without it); 'java' adds JAVA_SCENARIOS with JAVA_CLIENTS."""
    chosen = []
    for s in scenarios(scale):
        if not only or s.name in only:
            chosen.append(s)
        elif "java" in only and s.name in JAVA_SCENARIOS:
            s.clients = [c for c in s.clients if c in JAVA_CLIENTS]
            chosen.append(s)
    return chosen


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--broker", choices=["tansu", "kafka", "both"], default="tansu",
                        help="Tansu (embedded), Apache Kafka (one KRaft node) or both, one after the other")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a tenth of the records, one round (a smoke run)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every record count")
    parser.add_argument("--only", default="",
                        help="comma-separated scenario names (and/or 'encode', 'consume', 'async', 'group', 'java', "
                             "'observability', 'compat', 'rebalance', 'txn')")
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
    started = time.monotonic()
    load_at_start = load()
    sections: list[str] = []
    raw: dict[str, Any] = {"brokers": {}}
    all_clients: list[str] = []
    for broker_name in (["tansu", "kafka"] if args.broker == "both" else [args.broker]):
        site = SITES[broker_name]()
        chosen = selected(only, scale)
        consume: list[dict[str, Any]] = []
        spinning_consumer: dict[str, Any] | None = None
        crosscheck: dict[str, Any] | None = None
        began, load_before = time.monotonic(), load()
        try:
            for round_no in range(rounds):
                for scenario in chosen:
                    print(f"{site.name} round {round_no + 1}/{rounds}: {scenario.name}", file=sys.stderr, flush=True)
                    run_round(scenario, round_no, profile_dir, site)
            if not only or "consume" in only or "java" in only:
                bootstrap, _ = site.shared_bootstrap()
                clients = None if not only or "consume" in only else JAVA_CLIENTS
                for codec in ("lz4", "none"):
                    print(f"{site.name}: consume {codec}", file=sys.stderr, flush=True)
                    consume.append(run_consume(max(20_000, int(2_000_000 * scale)), rounds, codec, bootstrap,
                                               clients, site.java_version))
            if not only or "consume-latency" in only:
                bootstrap, _ = site.shared_bootstrap()
                print(f"{site.name}: consume-latency", file=sys.stderr, flush=True)
                spinning_consumer = run_consume_latency(max(2_000, int(20_000 * scale)), rounds, bootstrap)
            if not only or "java" in only:
                print(f"{site.name}: Kafka's perf tools", file=sys.stderr, flush=True)
                with site.round(0) as broker:
                    crosscheck = run_crosscheck(broker.bootstrap_servers, max(20_000, int(2_000_000 * scale)),
                                                site.java_version)
        finally:
            site.close()
        java_rate = next((median(s, JAVA, "rate") for s in chosen if s.name == "100B-lz4" and JAVA in s.runs),
                         math.nan)
        java_consume = next((consume_bench.rates(r, JAVA)[0] for r in consume if r["codec"] == "lz4"
                             and JAVA in r["runs"]), math.nan)
        sections.append(
            f"## On {site.title}\n\n{time.monotonic() - began:.0f} s; {load_before} at the start, {load()} at the end "
            f"(2 cores: a load above ~2 means other work shared the machine). The Java client: kafka-clients "
            f"{site.java_version}{'; ' + site.java_note if site.java_note else ''}.\n\n"
            + targets(chosen, {}) + "\n" + consume_targets(consume) + java_targets(chosen, consume)
            + tables(chosen, {}, rounds) + "".join("\n" + consume_bench.table(r) for r in consume) + "\n"
            + ("" if spinning_consumer is None else consume_latency.table(spinning_consumer) + "\n"
               + consume_latency_targets(spinning_consumer) + "\n")
            + java_warmup(chosen, consume) + crosscheck_table(crosscheck, java_rate, java_consume))
        raw["brokers"][site.name] = {"scenarios": {s.name: s.runs for s in chosen}, "consume": consume,
                                     "consume_latency": spinning_consumer, "crosscheck": crosscheck}
        all_clients += [c for c in ALL_CLIENTS if any(c in s.clients for s in chosen) and c not in all_clients]
        if any(s.runs for s in chosen if s.mode == "throughput"):
            plot(chosen, os.path.join(args.out, "results.png" if site.name == "tansu" else f"results-{site.name}.png"),
                 site.title)
    encode: dict[str, dict[str, float]] = {}
    if not only or "encode" in only:
        for codec in ("none", "lz4"):
            encode[codec] = run_encode(max(10_000, int(1_000_000 * scale)), rounds, codec)
    # async_bench.py and group_bench.py start their own embedded broker (group: Tansu's join hold is its subject)
    asyncio_runs: list[dict[str, Any]] = []
    if not only or "async" in only:
        asyncio_runs.append(run_async(max(20_000, int(1_000_000 * scale)), rounds, "lz4"))
    group = run_group(max(3, rounds)) if not only or "group" in only else None
    compat = run_compat(max(1_000, int(200_000 * scale)), rounds) if not only or "compat" in only else None
    rebalance = run_rebalance(rounds if args.quick else max(3, rounds), 1.0 if args.quick else 4.0) \
        if only and "rebalance" in only else None
    txn = run_txn(rounds if args.quick else max(3, rounds), max(20, int(300 * scale))) if only and "txn" in only \
        else None
    observability = (run_observability(max(2_000, int(200_000 * scale)), rounds)
                     if not only or "observability" in only else None)
    header = (f"## Results\n\nbench/run.py --broker {args.broker}{' --only ' + args.only if args.only else ''}"
              f"{' --quick' if args.quick else ''}, {rounds} round(s), {os.cpu_count()} CPUs, Python "
              f"{sys.version.split()[0]}, {time.monotonic() - started:.0f} s; {load_at_start} at the start, {load()} "
              f"at the end\n\n")
    neighbours = ((("\n" + targets([], encode)) if encode else "") + tables([], encode, rounds)
                  + "".join("\n" + async_bench.table(r) for r in asyncio_runs)
                  + ("\n" + group_bench.table(group) if group is not None else "")
                  + ("\n" + compat_bench.table(compat) if compat is not None else "")
                  + ("\n" + rebalance_bench.table(rebalance) if rebalance is not None else "")
                  + ("\n" + txn_bench.table(txn) if txn is not None else "")
                  + ("\n" + observability_bench.table(observability) if observability is not None else ""))
    if neighbours.strip():
        neighbours = "## On Tansu (embedded): encode, asyncio, group join, compat layers, observability\n" + neighbours
    report = header + settings_table(all_clients) + "\n" + "\n".join(sections) + neighbours
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(report)
    with open(os.path.join(args.out, "runs.json"), "w") as f:  # every worker's raw result, for a second look
        json.dump({**raw, "encode": encode, "async": asyncio_runs, "group": group, "compat": compat,
                   "rebalance": rebalance, "txn": txn, "observability": observability}, f, indent=1)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
