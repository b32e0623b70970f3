"""Small transactions per second (10 records each, committed one after the other): cykafka on Transactions V2 and on
V1, and confluent-kafka (librdkafka speaks V1 only: EndTxn v1), on Apache Kafka (tests/apache_kafka.py, NEWEST): one
node formatted as Kafka 4.x formats by default (transaction.version 2), one formatted with transaction.version=1.
Each client runs in its own process, rounds interleaved, one fresh topic and transactional.id per worker.

    python bench/txn_bench.py [--rounds R] [--transactions N] [--clients cykafka,confluent] [--json]

A worker (--worker CLIENT) initializes its producer, then times N x (begin, 10 sends over 2 partitions, commit) and
prints transactions/s. V2 saves the AddPartitionsToTxn round trip of each transaction (Produce v12 adds the
partitions); issue 27's goal: cykafka V2 >= 1.3 x cykafka V1. bench/run.py --only txn runs this file with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

# measure the installed package, not the source tree (see e2e_bench.py)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

CLIENTS = ("cykafka", "confluent")
RECORDS_PER_TRANSACTION = 10
PARTITIONS = 2
GOAL_V2_OVER_V1 = 1.3


def run_cykafka(bootstrap: str, topic: str, transactions: int) -> dict[str, Any]:
    from cykafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx", "linger.ms": 0})
    producer.init_transactions(60)
    version = "V2" if producer._txn is not None and producer._txn.transaction_v2 else "V1"
    value = b"x" * 100
    started = time.perf_counter()
    for _ in range(transactions):
        producer.begin_transaction()
        for i in range(RECORDS_PER_TRANSACTION):
            producer.send(topic, value, partition=i % PARTITIONS)
        producer.commit_transaction(60)
    elapsed_s = time.perf_counter() - started
    producer.close(30)
    return {"transactions_per_s": transactions / elapsed_s, "protocol": version}


def run_confluent(bootstrap: str, topic: str, transactions: int) -> dict[str, Any]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx", "linger.ms": 0})
    producer.init_transactions(60)
    value = b"x" * 100
    started = time.perf_counter()
    for _ in range(transactions):
        producer.begin_transaction()
        for i in range(RECORDS_PER_TRANSACTION):
            producer.produce(topic, value, partition=i % PARTITIONS)
        producer.commit_transaction(60)
    elapsed_s = time.perf_counter() - started
    producer.flush(30)
    return {"transactions_per_s": transactions / elapsed_s, "protocol": "V1 (librdkafka)"}


RUNNERS = {"cykafka": run_cykafka, "confluent": run_confluent}


def _create_topic(bootstrap: str, topic: str) -> None:
    from cykafka import Admin, NewTopic

    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])


def run(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.append(os.path.join(_ROOT, "tests"))
    import apache_kafka

    clients = args.clients.split(",")
    runs: dict[str, list[dict[str, Any]]] = {}
    clusters = {"transaction.version=2": apache_kafka.KafkaCluster(1),
                "transaction.version=1": apache_kafka.KafkaCluster(1, features={"transaction.version": 1})}
    try:
        for cluster in clusters.values():
            cluster.start()
        for _ in range(args.rounds):
            for site, cluster in clusters.items():
                for client in clients:
                    if client == "confluent" and site != "transaction.version=2":
                        continue  # librdkafka speaks V1 on either: measured on the default (V2) broker
                    topic = f"txn-bench-{uuid.uuid4().hex[:8]}"
                    _create_topic(cluster.bootstrap_servers, topic)
                    out = subprocess.run([sys.executable, __file__, "--worker", client, "--bootstrap",
                                          cluster.bootstrap_servers, "--topic", topic, "--transactions",
                                          str(args.transactions)], capture_output=True, text=True, timeout=600)
                    key = client if client == "confluent" else f"{client} {site}"
                    if out.returncode != 0:
                        runs.setdefault(key, []).append({"error": out.stderr.strip().splitlines()[-1:]})
                        continue
                    runs.setdefault(key, []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        for cluster in clusters.values():
            cluster.stop()
    return {"runs": runs, "transactions": args.transactions, "rounds": args.rounds,
            "load": os.getloadavg(), "cpus": os.cpu_count()}


def medians(result: dict[str, Any]) -> dict[str, float]:
    return {key: statistics.median(r["transactions_per_s"] for r in runs if "transactions_per_s" in r)
            for key, runs in result["runs"].items() if any("transactions_per_s" in r for r in runs)}


def table(result: dict[str, Any]) -> str:
    rates = medians(result)
    load = ", ".join(f"{x:.1f}" for x in result["load"])
    lines = [f"### Small transactions ({RECORDS_PER_TRANSACTION} records each), {result['transactions']} per run, "
             f"{result['rounds']} rounds, Apache Kafka (load average at the end {load}, {result['cpus']} CPUs)", "",
             "| client | protocol | transactions/s median | runs |", "|---|---|---:|---|"]
    for key, runs in result["runs"].items():
        protocol = next((r["protocol"] for r in runs if "protocol" in r), "?")
        each = ", ".join(f"{r['transactions_per_s']:.0f}" if "transactions_per_s" in r else f"error {r['error']}"
                         for r in runs)
        lines.append(f"| {key} | {protocol} | {rates.get(key, float('nan')):.0f} | {each} |")
    v2, v1 = rates.get("cykafka transaction.version=2"), rates.get("cykafka transaction.version=1")
    if v2 and v1:
        lines += ["", f"cykafka V2 / V1: {v2 / v1:.2f}x (goal >= {GOAL_V2_OVER_V1}x: "
                      f"{'met' if v2 / v1 >= GOAL_V2_OVER_V1 else 'not met'})"]
    if v2 and rates.get("confluent"):
        lines.append(f"cykafka V2 / confluent-kafka: {v2 / rates['confluent']:.2f}x")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=CLIENTS)
    parser.add_argument("--bootstrap", default="")
    parser.add_argument("--topic", default="")
    parser.add_argument("--transactions", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON (for bench/run.py)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(RUNNERS[args.worker](args.bootstrap, args.topic, args.transactions)))
        return 0
    result = run(args)
    print(json.dumps(result) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
