"""send_batch with headers: the cost per row of queueing records (the call, against the in-memory fake cluster) with
2 headers per row given as Python lists, as an Arrow list<struct<key, value>> column turned into lists first (what
the Spark sink did before), and as that Arrow column read in place by the core; a run without headers for scale.

    python bench/headers_bench.py [--rows 200000] [--rounds 5]

Prints the best round's µs per row and rows/s of each form: send_batch's call alone (appends into batches, a fresh
producer per round whose sender does not run; buffer.memory large enough that nothing waits for memory).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from cykafka import Producer
from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.ports import Ports

TOPIC = "bench"
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def _as_lists(column: Any) -> list[Any]:
    """The Arrow column as per-row lists of (key, bytes) pairs (the sink's former _headers_list, in short)."""
    lengths = column.value_lengths().to_pylist()
    entries = column.flatten()
    pairs = list(zip(entries.field("key").to_pylist(), entries.field("value").to_pylist(), strict=True))
    out: list[Any] = []
    position = 0
    for length in lengths:
        out.append(pairs[position:position + length] if length else None)
        position += length or 0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.rows
    values = pa.array([b"v" * 100] * n)
    keys = pa.array([b"key-%d" % (i % 1000) for i in range(n)])
    header_lists = [[("seq", b"%d" % i), ("source", b"spark")] for i in range(n)]
    header_column = pa.array([[{"key": k, "value": v} for k, v in hs] for hs in header_lists], type=HEADERS_TYPE)
    forms: dict[str, Callable[[], Any]] = {
        "no headers": lambda: None,
        "Python lists": lambda: header_lists,
        "Arrow -> lists -> send_batch": lambda: _as_lists(header_column),
        "Arrow, read in place": lambda: header_column,
    }
    print(f"send_batch of {n:,} rows (100-byte value, a key, 2 headers), best of {args.rounds} rounds")
    for name, headers in forms.items():
        best_s = float("inf")
        for _ in range(args.rounds):
            producer = _producer()
            try:
                started = time.perf_counter()
                result = producer.send_batch(TOPIC, values, keys, headers=headers())
                best_s = min(best_s, time.perf_counter() - started)
                assert result.failed_count == 0
            finally:
                producer.close(0)
        print(f"  {name:30s} {best_s / n * 1e6:6.2f} µs/row  {n / best_s:12,.0f} rows/s")


def _producer() -> Producer:
    """A producer on the fake cluster whose sender does not run (only the call is measured: nothing is sent, so the
    sender takes no GIL time from it); the topic's metadata fetched by hand first."""
    clock = ManualClock()
    cluster = FakeCluster(clock, num_brokers=1)
    cluster.create_topic(TOPIC, 4)
    producer = Producer({"bootstrap.servers": "fake:9092", "linger.ms": 1000, "buffer.memory": 1 << 30,
                         "batch.size": 65536, "compression.type": "none"},
                        ports=Ports(transport=cluster, clock=clock, start_sender=False))
    producer._metadata.add_topic(TOPIC, clock.monotonic_ms())
    for _ in range(4):
        producer.sender.run_once()
    return producer

if __name__ == "__main__":
    main()
