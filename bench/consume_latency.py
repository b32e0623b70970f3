"""Consumer end-to-end latency with a caller that spins in Python between polls (issue 32), side by side on one
broker: cykafka's Consumer and confluent-kafka's, each in its own process, interleaved round by round.

    python bench/consume_latency.py [--records N] [--rate R] [--rounds K] [--clients cykafka,confluent]
                                    [--no-spin] [--bootstrap HOST:PORT]   # default: an embedded Tansu

A round starts one consumer worker (assigned to partition 0 of a fresh topic, reading from its end) and, once it
says it is ready, one producer process (cykafka, linger.ms 0, an idle caller sleeping between sends) that sends
--records records at --rate records/s, each value holding time.monotonic_ns() at its send (CLOCK_MONOTONIC: one clock
for every process of the machine). The consumer's caller calls poll with a zero timeout (confluent-kafka:
consume(num_messages=500, timeout=0)), then spins SPIN_US µs in pure Python (holding the GIL) before the next call,
and takes each record's latency when the call returns it: send → received, through the producer, the broker and the
consumer. With --no-spin the caller waits in poll(0.1) instead. Prints p50/p99 per client (the first 10% are
warm-up) and the p50/p99 ratios against confluent-kafka, the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time
import uuid
from typing import Any

# measure the installed package, not the source tree (see e2e_bench.py)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

CLIENTS = ("cykafka", "confluent")
SPIN_US = 100  # the caller's pure-Python work between two polls
STAMP = struct.Struct(">q")  # the value's head: time.monotonic_ns() at the send


def spin(duration_s: float) -> None:
    until = time.perf_counter() + duration_s
    while time.perf_counter() < until:
        pass


def percentiles(latencies_s: list[float]) -> dict[str, float]:
    kept = sorted(latencies_s[len(latencies_s) // 10:])
    return {"p50_ms": kept[len(kept) // 2] * 1e3, "p99_ms": kept[min(len(kept) - 1, int(len(kept) * 0.99))] * 1e3}


def consume_cykafka(bootstrap: str, topic: str, records: int, spinning: bool) -> list[float]:
    from cykafka import Consumer, TopicPartition

    latencies: list[float] = []
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "latest", "enable.auto.commit": False,
                   "check.crcs": True}) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.poll(1.0)  # the connection and the position, before the producer starts
        print("ready", flush=True)
        deadline = time.monotonic() + 120
        while len(latencies) < records and time.monotonic() < deadline:
            got = consumer.poll(0 if spinning else 0.1)
            now_ns = time.monotonic_ns()
            for record in got:
                latencies.append((now_ns - STAMP.unpack_from(record.value)[0]) / 1e9)  # type: ignore[arg-type]
            if spinning:
                spin(SPIN_US / 1e6)
    return latencies


def consume_confluent(bootstrap: str, topic: str, records: int, spinning: bool) -> list[float]:
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    latencies: list[float] = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"latency-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "check.crcs": True, "fetch.queue.backoff.ms": 1})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_END)])
        consumer.consume(num_messages=1, timeout=1.0)
        print("ready", flush=True)
        deadline = time.monotonic() + 120
        while len(latencies) < records and time.monotonic() < deadline:
            got = consumer.consume(num_messages=500, timeout=0 if spinning else 0.1)
            now_ns = time.monotonic_ns()
            for message in got:
                if message.error() is None:
                    latencies.append((now_ns - STAMP.unpack_from(message.value())[0]) / 1e9)
            if spinning:
                spin(SPIN_US / 1e6)
    finally:
        consumer.close()
    return latencies


def produce(bootstrap: str, topic: str, records: int, rate: int) -> None:
    from cykafka import Producer

    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer:
        started = time.perf_counter()
        for i in range(records):
            delay = started + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            producer.send(topic, STAMP.pack(time.monotonic_ns()) + b"x" * 92, partition=0)
        producer.flush(60)


def one_round(client: str, bootstrap: str, records: int, rate: int, spinning: bool) -> dict[str, Any]:
    topic = f"latency-{uuid.uuid4().hex[:8]}"
    from cykafka import Producer

    with Producer({"bootstrap.servers": bootstrap}) as producer:  # the topic exists before the consumer assigns it
        producer.send(topic, STAMP.pack(0), partition=0).result(30)
    command = [sys.executable, os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap, "--topic",
               topic, "--records", str(records)] + ([] if spinning else ["--no-spin"])
    consumer = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert consumer.stdout is not None
        if consumer.stdout.readline().strip() != "ready":
            raise RuntimeError(f"{client}'s consumer did not start")
        subprocess.run([sys.executable, os.path.abspath(__file__), "--produce", "--bootstrap", bootstrap, "--topic",
                        topic, "--records", str(records), "--rate", str(rate)], check=True, timeout=300)
        out, _ = consumer.communicate(timeout=180)
    finally:
        if consumer.poll() is None:
            consumer.kill()
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def run(records: int, rate: int, rounds: int, clients: list[str], spinning: bool,
        bootstrap: str | None) -> dict[str, Any]:
    """Interleaved rounds on bootstrap (default: an embedded Tansu of its own): the result bench/run.py stores."""
    from cykafka.broker import EmbeddedBroker

    broker = None if bootstrap else EmbeddedBroker().start()
    address = bootstrap or broker.bootstrap_servers  # type: ignore[union-attr]
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
    try:
        for _ in range(rounds):
            for client in clients:
                runs[client].append(one_round(client, address, records, rate, spinning))
    finally:
        if broker is not None:
            broker.stop()
    return {"records": records, "rate": rate, "rounds": rounds, "spin_us": SPIN_US if spinning else 0, "runs": runs}


def paired(result: dict[str, Any], client: str, key: str) -> float:
    """The median of the per-round ratios client / confluent-kafka for p50_ms or p99_ms."""
    mine, base = result["runs"].get(client, []), result["runs"].get("confluent", [])
    ratios = [a[key] / b[key] for a, b in zip(mine, base, strict=False) if b[key]]
    return statistics.median(ratios) if ratios else float("nan")


def title(result: dict[str, Any]) -> str:
    caller = (f"the caller spinning {result['spin_us']} µs in Python between polls" if result["spin_us"]
              else "the caller waiting in poll")
    return f"{result['records']:,} records at {result['rate']:,} records/s, {caller}"


def table(result: dict[str, Any]) -> str:
    lines = [f"### Consumer end-to-end latency (send → received): {title(result)}", "",
             f"Median of {result['rounds']} interleaved round(s); ratios: the median of the per-round ratios.", "",
             "| client | records | p50 ms | p99 ms | p50 vs confluent | p99 vs confluent |",
             "|---|---:|---:|---:|---:|---:|"]
    for client, rows in result["runs"].items():
        lines.append(f"| {client} | {rows[0]['records']:,} | {statistics.median(r['p50_ms'] for r in rows):.2f} | "
                     f"{statistics.median(r['p99_ms'] for r in rows):.2f} | {paired(result, client, 'p50_ms'):.2f}x | "
                     f"{paired(result, client, 'p99_ms'):.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=20_000)
    p.add_argument("--rate", type=int, default=10_000, help="records/s the producer sends")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clients", default=",".join(CLIENTS))
    p.add_argument("--no-spin", action="store_true", help="the caller waits in poll(0.1) instead of spinning")
    p.add_argument("--bootstrap", default=None, help="an existing broker (default: start the embedded one)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON line (bench/run.py)")
    p.add_argument("--worker", choices=CLIENTS, help=argparse.SUPPRESS)
    p.add_argument("--produce", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--topic", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    spinning = not args.no_spin
    if args.produce:
        produce(args.bootstrap, args.topic, args.records, args.rate)
        return
    if args.worker:
        consume = consume_cykafka if args.worker == "cykafka" else consume_confluent
        latencies = consume(args.bootstrap, args.topic, args.records, spinning)
        print(json.dumps({"client": args.worker, "records": len(latencies), **percentiles(latencies)}))
        return
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    result = run(args.records, args.rate, args.rounds, clients, spinning, args.bootstrap)
    print(json.dumps(result) if args.json else table(result))


if __name__ == "__main__":
    main()
