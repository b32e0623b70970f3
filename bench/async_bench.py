"""asyncio benchmarks (issue 19), side by side on one embedded broker: cykafka.aio's AsyncProducer and AsyncConsumer
against aiokafka's AIOKafkaProducer and AIOKafkaConsumer, each in its own process (its CPU time its own),
interleaved round by round; lz4, --value-bytes values, 10-byte keys over --partitions partitions.

    python bench/async_bench.py [--records N] [--rounds R] [--codec lz4] [--clients produce-cykafka,...]

Produce: one coroutine sends --records records (`await producer.send(...)`, keeping the futures) and yields to the
loop every YIELD_EVERY records (a service's other tasks must run; a coroutine that never yields blocks any loop),
then waits for the acknowledgements in one of three idioms (IDIOMS): `await producer.flush()` (the client name
alone, e.g. produce-cykafka), `await asyncio.gather(*futures)` (-gather) or `for f in futures: await f` (-await);
then counts the failed futures. A fourth, -unkept, is a service's: the futures are not kept, `await
producer.flush()`, then the records that reached the topic are counted (its high watermarks, after the timed window):
a program's list of a million futures is walked by each full garbage collection (~15-25 ms here), the loop's longest
stall in a long run. A probe task ticking every 1 ms records how late each tick is: the event-loop lag p99 / max
while producing (the gather idiom's max is mostly the gather call itself: asyncio's own ~1.5 µs per future, for
either client). Each worker runs a full garbage collection before its timed window: a process's first one (its
imports' objects, 8-13 ms here) would otherwise land in it, a start-up cost a running service paid long before
(docs/asyncio.md). --gc-freeze: then gc.freeze(), as a latency-minded service does once started, so that later full
collections no longer walk the start-up objects (~7 ms each here); with -unkept, the loop's lag in a run of any
length. Same guarantee for both: acks=all, idempotence where the installed aiokafka can have it on Tansu
(bench/run.py's peer_settings), linger 5 ms, 16 KiB batches.
Consume: `getmany(timeout_ms=1000, max_records=CALL_RECORDS)` from the beginning of the topic (written once per run
by cykafka's producer, as bench/consume_bench.py), CRCs checked, touching every value; and consume-cykafka-poll0,
the design AsyncConsumer did not take (the sync Consumer's poll(0) on the loop thread, then a 1 ms sleep when empty),
measured for docs/asyncio.md; the same 1 ms probe ticks meanwhile (ProbedRead). bench/run.py --only async runs
this file with --json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import consume_bench
from consume_bench import Clock

# measure the installed package, not the source tree (see e2e_bench.py)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

CALL_RECORDS = 10_000
YIELD_EVERY = 500
IDIOMS = ("", "-gather", "-await", "-unkept")  # the acknowledgements: flush, gather, each future, flush unkept
PRODUCERS = tuple(f"produce-{client}{idiom}" for idiom in IDIOMS for client in ("cykafka", "aiokafka"))
CLIENTS = (*PRODUCERS, "consume-cykafka", "consume-cykafka-poll0", "consume-aiokafka")
PAIRS = (*((f"produce-cykafka{idiom}", f"produce-aiokafka{idiom}") for idiom in IDIOMS),
         ("consume-cykafka", "consume-aiokafka"), ("consume-cykafka-poll0", "consume-aiokafka"))
BATCHING = {"linger_ms": 5, "batch_size": 16384}


class LagProbe:
    """Ticks every 1 ms on the loop; lags_ms are how late the ticks were."""

    def __init__(self) -> None:
        self.lags_ms: list[float] = []

    async def run(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            self.lags_ms.append(max(0.0, (time.perf_counter() - before) * 1000 - 1))

    def summary(self) -> dict[str, float]:
        lags = sorted(self.lags_ms) or [float("nan")]
        return {"lag_p99_ms": lags[min(len(lags) - 1, int(len(lags) * 0.99))], "lag_max_ms": lags[-1]}


class ProbedRead:
    """consume_bench.read_all with a LagProbe ticking meanwhile (after a full collection, as produce); its summary
    in `lag` once read."""

    def __init__(self, freeze: bool) -> None:
        self.lag: dict[str, float] = {}
        self.freeze = freeze

    async def __call__(self, getmany: Callable[[], Awaitable[dict[Any, list[Any]]]], records: int,
                       clock: Clock) -> int:
        first_collection(self.freeze)
        probe = LagProbe()
        ticking = asyncio.create_task(probe.run())
        await asyncio.sleep(0.01)
        try:
            return await consume_bench.read_all(getmany, records, clock)
        finally:
            ticking.cancel()
            self.lag = probe.summary()


def first_collection(freeze: bool) -> None:
    """The process's first full collection, before the timed window (module docstring); then gc.freeze() with
    --gc-freeze."""
    gc.collect()
    if freeze:
        gc.freeze()


def topic_records(bootstrap: str, topic: str, partitions: int) -> int:
    """The records in topic: the sum of its partitions' high watermarks (from a Fetch: Tansu answers ListOffsets
    "latest" wrongly)."""
    from cykafka import Consumer, TopicPartition

    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)], timeout=60)
    return sum(ends.values())


async def produce(send: Callable[[bytes, bytes], Awaitable[Any]], flush: Callable[[], Awaitable[Any]],
                  args: argparse.Namespace, idiom: str, clock: Clock) -> dict[str, Any]:
    """Sends args.records records after the caller's warm-up record (in the topic already), awaits them as idiom
    says (module docstring); the rate, the loop's lag and the records that failed."""
    records = args.records
    keys = [b"key-%06d" % i for i in range(1024)]
    values = [(b"%08d" % i + b"v" * args.value_bytes)[:args.value_bytes] for i in range(1024)]
    first_collection(args.gc_freeze)
    probe = LagProbe()
    ticking = asyncio.create_task(probe.run())
    await asyncio.sleep(0.01)
    clock.start()
    futures = []
    keep = idiom != "-unkept"
    for i in range(records):
        sent = await send(keys[i % 1024], values[i % 1024])
        if keep:
            futures.append(sent)
        if i % YIELD_EVERY == 0:
            await asyncio.sleep(0)
    if idiom == "-gather":
        await asyncio.gather(*futures, return_exceptions=True)
    elif idiom == "-await":
        for future in futures:
            with contextlib.suppress(Exception):
                await future
    else:
        await flush()
    result = {**clock.result(records), **probe.summary(), "frozen_objects": gc.get_freeze_count()}
    ticking.cancel()
    if keep:
        result["errors"] = sum(1 for f in futures if f.exception() is not None)
    else:  # what did not reach the topic (the warm-up record is there too)
        result["errors"] = records + 1 - await asyncio.to_thread(topic_records, args.bootstrap, args.topic,
                                                                 args.partitions)
    return result


def idiom_of(client: str) -> str:
    return next((idiom for idiom in IDIOMS[1:] if client.endswith(idiom)), "")


def run_produce_cykafka(args: argparse.Namespace, settings: dict[str, Any], clock: Clock) -> dict[str, Any]:
    from cykafka.aio import AsyncProducer

    async def main() -> dict[str, Any]:
        config = {"bootstrap.servers": args.bootstrap, "compression.type": args.codec,
                  "linger.ms": BATCHING["linger_ms"], "batch.size": BATCHING["batch_size"], **settings}
        async with AsyncProducer(config) as producer:
            await producer.send_and_wait(args.topic, b"warm-up")

            def send(key: bytes, value: bytes) -> Awaitable[Any]:
                return producer.send(args.topic, value, key)

            return await produce(send, producer.flush, args, idiom_of(args.worker), clock)

    return asyncio.run(main())


def run_produce_aiokafka(args: argparse.Namespace, settings: dict[str, Any], clock: Clock) -> dict[str, Any]:
    from aiokafka import AIOKafkaProducer

    async def main() -> dict[str, Any]:
        producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap, compression_type=args.codec,
                                    linger_ms=BATCHING["linger_ms"], max_batch_size=BATCHING["batch_size"],
                                    **settings)
        await producer.start()
        try:
            await producer.send_and_wait(args.topic, b"warm-up")

            def send(key: bytes, value: bytes) -> Awaitable[Any]:
                return producer.send(args.topic, value, key=key)

            return await produce(send, producer.flush, args, idiom_of(args.worker), clock)
        finally:
            await producer.stop()

    return asyncio.run(main())


def run_consume_cykafka(args: argparse.Namespace, settings: dict[str, Any], clock: Clock) -> dict[str, Any]:
    from cykafka import TopicPartition
    from cykafka.aio import AsyncConsumer

    read = ProbedRead(args.gc_freeze)

    async def main() -> int:
        async with AsyncConsumer({"bootstrap.servers": args.bootstrap, "auto.offset.reset": "earliest",
                                  "check.crcs": True, "enable.auto.commit": False}) as consumer:
            await consumer.assign([TopicPartition(args.topic, p) for p in range(args.partitions)])
            return await read(lambda: consumer.getmany(timeout_ms=1000, max_records=CALL_RECORDS), args.records,
                              clock)

    return {**clock.result(asyncio.run(main())), **read.lag}  # the clock stopped at the last record


def run_consume_cykafka_poll0(args: argparse.Namespace, settings: dict[str, Any], clock: Clock) -> dict[str, Any]:
    from cykafka import Consumer, TopicPartition
    from cykafka.aio import _poll_records

    read = ProbedRead(args.gc_freeze)

    async def main() -> int:
        with Consumer({"bootstrap.servers": args.bootstrap, "auto.offset.reset": "earliest", "check.crcs": True,
                       "enable.auto.commit": False, "max.poll.records": CALL_RECORDS}) as consumer:
            consumer.assign([TopicPartition(args.topic, p) for p in range(args.partitions)])

            async def getmany() -> dict[Any, list[Any]]:  # AsyncConsumer.getmany's work, on the loop thread
                by_partition = _poll_records(consumer, 0, CALL_RECORDS)
                if not by_partition:
                    await asyncio.sleep(0.001)
                return by_partition

            return await read(getmany, args.records, clock)

    return {**clock.result(asyncio.run(main())), **read.lag}  # the clock stopped at the last record


def run_consume_aiokafka(args: argparse.Namespace, settings: dict[str, Any], clock: Clock) -> dict[str, Any]:
    read = ProbedRead(args.gc_freeze)
    seen = consume_bench.run_aiokafka(args.bootstrap, args.topic, args.partitions, args.records, clock, read)
    return {**clock.result(seen), **read.lag}


RUNNERS: dict[str, Callable[[argparse.Namespace, dict[str, Any], Clock], dict[str, Any]]] = {
    **{f"produce-cykafka{idiom}": run_produce_cykafka for idiom in IDIOMS},
    **{f"produce-aiokafka{idiom}": run_produce_aiokafka for idiom in IDIOMS},
    "consume-cykafka": run_consume_cykafka, "consume-cykafka-poll0": run_consume_cykafka_poll0,
    "consume-aiokafka": run_consume_aiokafka,
}


def settings_for(client: str) -> dict[str, Any]:
    """Producers: acks=all and idempotence, as bench/run.py gives them (less what the installed aiokafka cannot
    have on Tansu); consumers: none beyond the worker's."""
    if not client.startswith("produce-"):
        return {}
    import run as bench_run

    return bench_run.peer_settings(client.removeprefix("produce-").removesuffix(idiom_of(client)))


def measure(client: str, args: argparse.Namespace, bootstrap: str, topic: str) -> dict[str, Any]:
    settings = settings_for(client)
    result = consume_bench.run_worker(client, [
        os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap, "--topic", topic, "--partitions",
        str(args.partitions), "--records", str(args.records), "--value-bytes", str(args.value_bytes), "--codec",
        args.codec, "--settings", json.dumps(settings)] + (["--gc-freeze"] if args.gc_freeze else []))
    return {"client": client, **result, "settings": settings}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from cykafka.broker import EmbeddedBroker

    clients = [c for c in args.clients.split(",") if c]
    runs: dict[str, list[dict[str, Any]]] = {client: [] for client in clients}
    # an existing broker (--bootstrap: e.g. one Apache Kafka node, fresh topics per run), else an embedded Tansu
    with contextlib.nullcontext(args.bootstrap) if args.bootstrap else EmbeddedBroker() as broker:
        bootstrap = broker if isinstance(broker, str) else broker.bootstrap_servers
        run_id = time.monotonic_ns()
        read_topic = f"async-consume-{args.codec}-{run_id}"
        consume_bench.fill(bootstrap, read_topic, args.partitions, args.records, args.value_bytes, args.codec)
        for round_no in range(args.rounds):
            for client in clients:
                topic = read_topic if client.startswith("consume-") else f"async-{client}-{run_id}-{round_no}"
                runs[client].append(measure(client, args, bootstrap, topic))
    return {"codec": args.codec, "records": args.records, "value_bytes": args.value_bytes,
            "partitions": args.partitions, "gc_freeze": args.gc_freeze, "runs": runs}


def rate(result: dict[str, Any], client: str, key: str = "rate") -> float:
    """Median records/s (key "rate"), or of a result field, over a client's good runs (nan when none)."""
    good = [r for r in result["runs"].get(client, []) if "error" not in r and r["records"] and not r.get("errors")]
    if not good:
        return float("nan")
    return statistics.median(r["records"] / r["elapsed_s"] if key == "rate" else r[key] for r in good)


def table(result: dict[str, Any]) -> str:
    lines = [f"### asyncio, {result['value_bytes']} B values, {result['codec']}, {result['partitions']} partitions, "
             f"{result['records']:,} records{', gc.freeze() after start-up' if result.get('gc_freeze') else ''} "
             "(bench/async_bench.py)", "",
             "| client | records/s | CPU µs/record | loop lag p99 ms | loop lag max ms |", "|---|---:|---:|---:|---:|"]
    for client, runs in result["runs"].items():
        errors = "; ".join(str(r.get("error") or f"{r['errors']} failed") for r in runs
                           if "error" in r or r.get("errors"))
        lag = f"{rate(result, client, 'lag_p99_ms'):.2f} | {rate(result, client, 'lag_max_ms'):.1f}"
        cpu = rate(result, client, "cpu_s") / max(1, result["records"]) * 1e6
        lines.append(f"| {client} | {rate(result, client):,.0f} | {cpu:.2f} | {lag} |"
                     + (f" errors: {errors}" if errors else ""))
    lines += ["", "| ratio | records/s |", "|---|---:|"]
    for ours, theirs in PAIRS:
        if ours in result["runs"] and theirs in result["runs"]:
            lines.append(f"| {ours} / {theirs} | {rate(result, ours) / rate(result, theirs):.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = consume_bench.bench_parser(__doc__, CLIENTS, 1_000_000, "unused (bench/run.py passes it to each script)")
    parser.add_argument("--settings", default="{}", help="the producer's settings as JSON (internal)")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="each worker calls gc.freeze() after its first full collection (module docstring)")
    return consume_bench.dispatch(parser.parse_args(), worker, run, table)


def worker(args: argparse.Namespace) -> None:
    print(json.dumps(RUNNERS[args.worker](args, json.loads(args.settings), Clock())))


if __name__ == "__main__":
    sys.exit(main())
