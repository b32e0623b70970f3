"""Group join time, side by side on one embedded broker: cykafka and confluent-kafka, each in its own process, a fresh
group each round (so no round finds a group to rejoin), interleaved round by round.

    python bench/group_bench.py [--rounds R] [--session-timeout-ms MS] [--clients cykafka,confluent] [--phases]

A worker (--worker CLIENT) subscribes one consumer to a 4-partition topic and times from subscribe() to the first
assignment the consumer hands out in poll (cykafka: its listener's on_partitions_assigned; confluent-kafka: its
on_assign callback), polling every POLL_S. It prints join_ms and, for cykafka with --phases, when each group answer came
(FindCoordinator, JoinGroup, SyncGroup, OffsetFetch; ms after subscribe). Tansu holds a JoinGroup session.timeout.ms / 2
(the "hold"); issue 16's target is join <= hold + 100 ms. bench/run.py --only group runs this file with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

# measure the installed package, not the source tree (see e2e_bench.py)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

CLIENTS = ("cykafka", "confluent")
POLL_S = 0.01
PARTITIONS = 4
TARGET_OVER_HOLD_MS = 100


def run_cykafka(bootstrap: str, topic: str, group: str, session_timeout_ms: int, phases: bool) -> dict[str, Any]:
    from cykafka import Consumer
    from cykafka.core import group as core_group
    from cykafka.protocol import API_NAMES

    answered: list[tuple[str, float]] = []
    if phases:  # when each group answer reached the member (the network thread), for the profile
        on_response = core_group.GroupMember.on_response

        def timed(member: Any, api_key: int, body: Any, now_ms: int) -> None:
            answered.append((API_NAMES[api_key], time.perf_counter()))
            on_response(member, api_key, body, now_ms)

        core_group.GroupMember.on_response = timed  # type: ignore[method-assign]
    assigned_at: list[float] = []

    class Listener:
        def on_partitions_assigned(self, partitions: set[Any]) -> None:
            if partitions and not assigned_at:
                assigned_at.append(time.perf_counter())

    with Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": session_timeout_ms,
                   "enable.auto.commit": False, "auto.offset.reset": "earliest"}) as consumer:
        started = time.perf_counter()
        consumer.subscribe([topic], listener=Listener())
        while not assigned_at:
            consumer.poll(POLL_S)
    result: dict[str, Any] = {"join_ms": (assigned_at[0] - started) * 1000}
    if phases:
        result["phases_ms"] = [(name, round((at - started) * 1000, 1)) for name, at in answered
                               if name != "Heartbeat"]
    return result


def run_confluent(bootstrap: str, topic: str, group: str, session_timeout_ms: int, phases: bool) -> dict[str, Any]:
    from confluent_kafka import Consumer

    assigned_at: list[float] = []

    def on_assign(consumer: Any, partitions: list[Any]) -> None:
        if partitions and not assigned_at:
            assigned_at.append(time.perf_counter())

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": session_timeout_ms,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        started = time.perf_counter()
        consumer.subscribe([topic], on_assign=on_assign)
        while not assigned_at:
            consumer.poll(POLL_S)
        return {"join_ms": (assigned_at[0] - started) * 1000}
    finally:
        consumer.close()


RUNNERS: dict[str, Callable[[str, str, str, int, bool], dict[str, Any]]] = {
    "cykafka": run_cykafka, "confluent": run_confluent}


def measure(client: str, bootstrap: str, topic: str, session_timeout_ms: int, phases: bool) -> dict[str, Any]:
    from consume_bench import run_worker

    return run_worker(client, [os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap,
                               "--topic", topic, "--group", f"join-{uuid.uuid4().hex[:10]}",
                               "--session-timeout-ms", str(session_timeout_ms)] + (["--phases"] if phases else []), 120)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from cykafka import Admin, NewTopic
    from cykafka.broker import EmbeddedBroker

    clients = [c for c in args.clients.split(",") if c]
    runs: dict[str, list[dict[str, Any]]] = {client: [] for client in clients}
    with EmbeddedBroker() as broker:
        topic = "join"
        with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(topic, PARTITIONS)])[topic].result()
        for _ in range(args.rounds):
            for client in clients:
                runs[client].append(measure(client, broker.bootstrap_servers, topic, args.session_timeout_ms,
                                            args.phases))
    return {"session_timeout_ms": args.session_timeout_ms, "hold_ms": args.session_timeout_ms / 2, "runs": runs}


def joins(result: dict[str, Any], client: str) -> tuple[float, float]:
    """Median and max join ms of a client's runs (nan when none worked)."""
    good = [r["join_ms"] for r in result["runs"][client] if "error" not in r]
    return (statistics.median(good), max(good)) if good else (float("nan"), float("nan"))


def table(result: dict[str, Any]) -> str:
    hold = result["hold_ms"]
    lines = [f"### Group join, session.timeout.ms {result['session_timeout_ms']} (Tansu holds a join {hold:.0f} ms), "
             f"{len(next(iter(result['runs'].values()), []))} rounds", "",
             f"| client | join ms median | join ms max | median - hold ms | target ≤ hold + {TARGET_OVER_HOLD_MS} ms |",
             "|---|---:|---:|---:|---|"]
    for client, runs in result["runs"].items():
        median, worst = joins(result, client)
        errors = "; ".join(r["error"] for r in runs if "error" in r)
        lines.append(f"| {client} | {median:.0f} | {worst:.0f} | {median - hold:.0f} | "
                     f"{'met' if median - hold <= TARGET_OVER_HOLD_MS else 'not met'} |"
                     + (f" errors: {errors}" if errors else ""))
    phases = [r["phases_ms"] for r in result["runs"].get("cykafka", []) if "phases_ms" in r]
    if phases:
        lines += ["", "cykafka's group answers (ms after subscribe), per round:", ""]
        lines += ["- " + ", ".join(f"{name} {at:.0f}" for name, at in p) for p in phases]
    return "\n".join(lines) + "\n"


def main() -> int:
    from consume_bench import worker_parser

    parser = worker_parser(__doc__, CLIENTS)
    parser.add_argument("--group", default="")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--phases", action="store_true", help="cykafka: when each group answer came")
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON (for bench/run.py)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(RUNNERS[args.worker](args.bootstrap, args.topic, args.group, args.session_timeout_ms,
                                              args.phases)))
        return 0
    result = run(args)
    print(json.dumps(result) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
