"""Consumer groups on Apache Kafka, the classic protocol against KIP-848's (group.protocol=consumer), cykafka against
confluent-kafka (librdkafka speaks both): how long a member takes from subscribe() to its first record, and how long
the members already in the group stop reading while a new one joins (issue 27).

    python bench/rebalance_bench.py [--rounds R] [--clients cykafka,confluent] [--protocols classic,consumer]
                                    [--settle-s S] [--json]

One Kafka node (tests/apache_kafka.py, NEWEST; consumer-protocol heartbeats every 1 s), a fresh 6-partition topic and
group per run, records written all along (one every WRITE_EVERY_S, round robin over the partitions). A run: three
members (each a worker process: --worker CLIENT) subscribe; once all three read, --settle-s of steady reading; a fourth
joins; once it reads, --settle-s more; all stop. Each worker prints when it subscribed, when its first record came and
when each of its polls returned records. Join: subscribe to first record, per member. Pause: for the three first
members, the longest time between two reads while the fourth joins (from its subscribe until it reads), against the
longest before it (the steady gap, records coming every few ms). KIP-848's promise: the members that keep their
partitions keep reading (pause about the steady gap); the classic protocol's eager and cooperative rebalances stop them
for a JoinGroup/SyncGroup round. Goal (issue 27): unaffected members' pause 0 ms beyond the steady gap with the consumer
protocol; cykafka's join <= confluent-kafka's. bench/run.py --only rebalance runs this file with --json.
"""

from __future__ import annotations

import argparse
import itertools
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

CLIENTS = ("cykafka", "confluent")
PROTOCOLS = ("classic", "consumer")
PARTITIONS = 6
WRITE_EVERY_S = 0.002
POLL_S = 0.05


def run_cykafka(bootstrap: str, topic: str, group: str, protocol: str, stop_file: str) -> dict[str, Any]:
    from cykafka import Consumer

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                              "auto.offset.reset": "latest", "enable.auto.commit": True}
    if protocol == "classic":
        config["partition.assignment.strategy"] = "cooperative-sticky"  # the classic protocol's best
    with Consumer(config) as consumer:
        subscribed = time.monotonic()
        consumer.subscribe([topic])
        reads: list[float] = []
        while not os.path.exists(stop_file):
            if consumer.poll(POLL_S):
                if not reads:
                    _reading(stop_file)
                reads.append(time.monotonic())
    return {"subscribed": subscribed, "reads": reads}


def run_confluent(bootstrap: str, topic: str, group: str, protocol: str, stop_file: str) -> dict[str, Any]:
    from confluent_kafka import Consumer

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                              "auto.offset.reset": "latest", "enable.auto.commit": True}
    if protocol == "classic":
        config["partition.assignment.strategy"] = "cooperative-sticky"
    consumer = Consumer(config)
    subscribed = time.monotonic()
    consumer.subscribe([topic])
    reads: list[float] = []
    while not os.path.exists(stop_file):
        if any(m.error() is None for m in consumer.consume(1000, POLL_S)):
            if not reads:
                _reading(stop_file)
            reads.append(time.monotonic())
    consumer.close()
    return {"subscribed": subscribed, "reads": reads}


RUNNERS = {"cykafka": run_cykafka, "confluent": run_confluent}


def _reading(stop_file: str) -> None:
    """A member tells the run it reads: a file named after the run's stop file and its pid."""
    open(f"{stop_file}.{os.getpid()}.reading", "w").close()


def _wait_reading(workers: list[subprocess.Popen[str]], stop_file: str, deadline_s: float) -> bool:
    """Until every worker read a record (bounded): True, else False at the deadline."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if all(os.path.exists(f"{stop_file}.{w.pid}.reading") for w in workers):
            return True
        time.sleep(0.05)
    return False


def _start(client: str, bootstrap: str, topic: str, group: str, protocol: str, stop_file: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap,
                             "--topic", topic, "--group", group, "--protocol", protocol, "--stop-file", stop_file],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def one_run(cluster: Any, client: str, protocol: str, settle_s: float, workdir: str) -> dict[str, Any]:
    from cykafka import Admin, NewTopic, Producer

    topic, group = f"rebalance-{uuid.uuid4().hex[:8]}", f"rebalance-{uuid.uuid4().hex[:8]}"
    bootstrap = cluster.bootstrap_servers
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    stop_file = os.path.join(workdir, f"stop-{topic}")
    writing = threading.Event()
    writing.set()

    def write() -> None:
        with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer:
            i = 0
            while writing.is_set():
                producer.send(topic, b"r", partition=i % PARTITIONS)
                i += 1
                time.sleep(WRITE_EVERY_S)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    workers: list[subprocess.Popen[str]] = []
    try:
        workers = [_start(client, bootstrap, topic, group, protocol, stop_file) for _ in range(3)]
        _wait_reading(workers, stop_file, 60)
        time.sleep(settle_s)  # steady reading: its longest gap is the baseline
        fourth_at = time.monotonic()
        workers.append(_start(client, bootstrap, topic, group, protocol, stop_file))
        _wait_reading(workers, stop_file, 60)
        time.sleep(settle_s)
    finally:
        open(stop_file, "w").close()
        results = []
        for worker in workers:
            try:
                out, err = worker.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
                out, err = worker.communicate()
            results.append(json.loads(out.strip().splitlines()[-1]) if worker.returncode == 0 and out.strip()
                           else {"error": (err.strip().splitlines() or [f"exit {worker.returncode}"])[-1]})
        writing.clear()
        writer.join(30)
    return summarize(results, fourth_at, settle_s)


def summarize(results: list[dict[str, Any]], fourth_at: float, settle_s: float) -> dict[str, Any]:
    """Join ms per member; for the first three, the longest gap between reads while the fourth joined (its subscribe
    until its first record) and the longest in the settle_s before it (the steady gap)."""
    if any("error" in r for r in results):
        return {"error": "; ".join(r["error"] for r in results if "error" in r)}
    joins_ms = [(r["reads"][0] - r["subscribed"]) * 1000 if r["reads"] else float("nan") for r in results]
    fourth = results[3]
    window_end = fourth["reads"][0] if fourth["reads"] else fourth_at + 30
    pauses_ms, steady_ms = [], []
    for r in results[:3]:
        reads = r["reads"]
        steady_from = fourth_at - settle_s
        before = [b - a for a, b in itertools.pairwise(reads) if steady_from <= a and b < fourth_at]
        # a gap overlapping the window: from the last read before a time in it to the next read
        during = [b - a for a, b in itertools.pairwise(reads) if b >= fourth_at and a <= window_end]
        steady_ms.append(max(before, default=0.0) * 1000)
        pauses_ms.append(max(during, default=float("nan")) * 1000)
    return {"join_ms": joins_ms, "pause_ms": pauses_ms, "steady_gap_ms": steady_ms,
            "fourth_join_ms": joins_ms[3]}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import tempfile

    sys.path.append(os.path.join(_ROOT, "tests"))
    import apache_kafka

    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as workdir, apache_kafka.KafkaCluster(1) as cluster:
        for _ in range(args.rounds):
            for protocol in args.protocols.split(","):
                for client in args.clients.split(","):
                    runs.setdefault(f"{client} {protocol}", []).append(
                        one_run(cluster, client, protocol, args.settle_s, workdir))
    return {"runs": runs, "rounds": args.rounds, "settle_s": args.settle_s, "load": os.getloadavg()}


def _median(values: list[float]) -> float:
    good = [v for v in values if v == v]
    return statistics.median(good) if good else float("nan")


def table(result: dict[str, Any]) -> str:
    load = ", ".join(f"{x:.1f}" for x in result["load"])
    lines = [f"### Consumer groups on Apache Kafka: classic (cooperative-sticky) vs consumer protocol (KIP-848), "
             f"{result['rounds']} round(s), load average at the end {load}", "",
             "| client, protocol | join ms (median of members) | 4th member's join ms | pause of the 3 others ms "
             "(median of their longest gap) | their steady gap ms | pause beyond steady ms |",
             "|---|---:|---:|---:|---:|---:|"]
    for key, runs in result["runs"].items():
        good = [r for r in runs if "error" not in r]
        errors = "; ".join(r["error"] for r in runs if "error" in r)
        join = _median([j for r in good for j in r["join_ms"][:3]])
        fourth = _median([r["fourth_join_ms"] for r in good])
        pause = _median([p for r in good for p in r["pause_ms"]])
        steady = _median([s for r in good for s in r["steady_gap_ms"]])
        lines.append(f"| {key} | {join:.0f} | {fourth:.0f} | {pause:.0f} | {steady:.0f} | "
                     f"{max(0.0, pause - steady):.0f} |" + (f" errors: {errors}" if errors else ""))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=CLIENTS, help="run one member (internal)")
    parser.add_argument("--bootstrap", default="")
    parser.add_argument("--topic", default="")
    parser.add_argument("--group", default="")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="consumer")
    parser.add_argument("--stop-file", default="")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--settle-s", type=float, default=4.0, help="steady reading before and after the 4th joins")
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON (for bench/run.py)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(RUNNERS[args.worker](args.bootstrap, args.topic, args.group, args.protocol, args.stop_file)))
        return 0
    result = run(args)
    print(json.dumps(result) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
