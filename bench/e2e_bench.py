"""End-to-end producer benchmarks, side by side on one embedded broker: cykafka (send and send_batch), confluent-kafka
(librdkafka), aiokafka and kafka-python, each in its own process (so its CPU time is its own), interleaved round by
round. bench/run.py runs every scenario through this file's workers; this file alone runs one throughput scenario.

    python bench/e2e_bench.py [--records N] [--slow-records M] [--rounds R] [--value-bytes B] [--codec none|lz4|...]
                              [--clients cykafka,cykafka-batch,confluent,aiokafka,kafka-python] [--bootstrap H:P]
                              [--mode throughput|latency|overload] [--rate N] [--busy-us N] [--spin] [--hog]
    python -m cProfile -o e2e.prof bench/e2e_bench.py --worker cykafka --bootstrap HOST:PORT

A worker (--worker CLIENT) measures one client in one --mode:
  throughput  send --records keyed records of --value-bytes as fast as the client goes, wait for every ack;
              prints records, elapsed_s, cpu_s (user+sys of the process), errors;
  latency     send at --rate records/s (linger.ms 0 unless given) and time each record from send to its ack;
              prints p50_ms, p99_ms (the first 10% are warm-up); with --busy-us N the sending thread runs N µs of
              pure Python (holding the GIL) after each send, then sleeps until the next record is due; with
              --spin it spins in pure Python until then instead of sleeping (a caller that never gives up the GIL);
              with --hog another thread of the worker spins in pure Python through the whole timed run and never
              calls the client (the program's other work), the sending thread sleeping between sends;
  overload    as throughput, against a broker slower than the client (bench/run.py puts a throttling proxy in
              front): prints rss_growth_mib (peak RSS - RSS before the first send) and the longest send call.
Same payloads (keyed, B-byte values), same batching (linger.ms, batch.size, the codec) for every client, each in its
own spelling; --settings JSON goes on top into the client's constructor (bench/run.py's PEER_SETTINGS: acks=all and
idempotence for every client); the worker prints the constructor settings it used as "config".
Each client's clock starts once it is connected and a warm-up record is acknowledged.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# measure the installed package: `python -m cProfile` puts the working directory (the source tree) first on sys.path
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

LINGER_MS = 5
BATCH_SIZE = 16384
BATCH_CALL_RECORDS = 10_000  # send_batch call size (an Arrow record batch of a Spark partition, say)
CLIENTS = ("cykafka", "cykafka-batch", "confluent", "aiokafka", "kafka-python")
SLOW = frozenset({"aiokafka", "kafka-python"})
MODULES = {"cykafka": "cykafka", "cykafka-batch": "cykafka", "confluent": "confluent_kafka", "aiokafka": "aiokafka",
           "kafka-python": "kafka"}


def payloads(count: int, value_bytes: int) -> tuple[list[bytes], list[bytes]]:
    keys = [b"key-%06d" % (i * 7919 % 1_000_000) for i in range(1024)]
    values = [(b"%08d" % i + b"v" * value_bytes)[:value_bytes] for i in range(1024)]
    return [keys[i % 1024] for i in range(count)], [values[i % 1024] for i in range(count)]


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Job:
    """One worker's settings, from the command line."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.bootstrap: str = args.bootstrap
        self.codec: str = args.codec
        self.linger_ms: int = args.linger_ms if args.linger_ms is not None else (
            0 if args.mode == "latency" else LINGER_MS)
        self.batch_size: int = args.batch_size
        self.buffer_memory: int = args.buffer_memory
        self.mode: str = args.mode
        self.rate: int = args.rate
        self.busy_s: float = args.busy_us / 1e6
        self.spin: bool = args.spin
        self.hog: bool = args.hog
        self.hogging = False
        self.threads: int = args.threads
        self.settings: dict[str, Any] = json.loads(args.settings or "{}")
        self.used_config: dict[str, Any] = {}
        self.max_block_s = 0.0  # overload: the longest single send/produce call
        self.begin()

    def begin(self) -> None:
        """Starts the clocks: each client calls it once connected, with metadata for the topic and one record
        acknowledged (start-up is not send time)."""
        self.rss_before = rss_bytes()
        self.rusage_before = resource.getrusage(resource.RUSAGE_SELF)
        self.started = time.perf_counter()
        if self.hog and not self.hogging:
            self.hogging = True
            threading.Thread(target=self._hog, daemon=True).start()

    def _hog(self) -> None:
        """--hog: the program's other thread, pure Python holding the GIL until end_hog()."""
        while self.hogging:
            pass

    def end_hog(self) -> None:
        self.hogging = False

    def config(self, scenario_config: dict[str, Any]) -> dict[str, Any]:
        """A client's constructor settings (bootstrap aside): the scenario's batching in the client's spelling, then
        --settings on top; kept for the result."""
        self.used_config = {**scenario_config, **self.settings}
        return self.used_config

    def pacer(self) -> Callable[[int], float]:
        """latency mode: delay_s(i) runs the caller's own work after record i - 1 (busy_s of pure Python, holding
        the GIL) and returns how long to wait until record i is due at `rate` records/s (<= 0: it is late)."""
        started = time.perf_counter()
        interval_s = 1.0 / self.rate
        busy_s = self.busy_s

        def delay_s(i: int) -> float:
            if busy_s and i:
                busy(busy_s)
            return started + i * interval_s - time.perf_counter()

        return delay_s

    def paced(self, sleep: Callable[[float], object] = time.sleep) -> Callable[[int], None]:
        """latency mode: wait(i) returns when record i is due (pacer's delay, spent in sleep; with --spin in a
        pure-Python loop, so the caller never gives up the GIL of its own accord)."""
        delay_s = self.pacer()
        pause = busy if self.spin else sleep

        def wait(i: int) -> None:
            delay = delay_s(i)
            if delay > 0:
                pause(delay)

        return wait


def busy(duration_s: float) -> None:
    """Application work between sends: a pure-Python loop that holds the GIL (no sleep, no I/O) for duration_s."""
    until = time.perf_counter() + duration_s
    while time.perf_counter() < until:
        pass


def latency_percentiles(latencies_s: list[float]) -> dict[str, float]:
    kept = sorted(latencies_s[len(latencies_s) // 10:])  # the first 10% warm up connections and estimators
    if not kept:
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    return {"p50_ms": kept[len(kept) // 2] * 1e3, "p99_ms": kept[min(len(kept) - 1, int(len(kept) * 0.99))] * 1e3}


# -- clients -------------------------------------------------------------------------------------------------------


def cykafka_config(job: Job) -> dict[str, Any]:
    return job.config({"linger.ms": job.linger_ms, "batch.size": job.batch_size, "compression.type": job.codec,
                       "buffer.memory": job.buffer_memory})


def run_cykafka(job: Job, topic: str, keys: list[bytes], values: list[bytes]) -> dict[str, Any]:
    from cykafka import Producer

    with Producer({"bootstrap.servers": job.bootstrap, **cykafka_config(job)}) as producer:
        send = producer.send
        send(topic, values[0], keys[0]).result(60)  # warm-up: metadata and connection before the clock runs
        job.begin()
        if job.mode == "latency":
            sent = [0.0] * len(values)
            latencies: list[float] = []
            wait = job.paced()
            for i, (key, value) in enumerate(zip(keys, values, strict=True)):
                wait(i)
                sent[i] = time.perf_counter()
                send(topic, value, key, on_delivery=lambda _e, _m, i=i: latencies.append(time.perf_counter() - sent[i]))
            producer.flush()
            return {"errors": int(producer.metrics()["record-error-total"]), **latency_percentiles(latencies)}
        if job.mode == "overload":
            for key, value in zip(keys, values, strict=True):
                started = time.perf_counter()
                send(topic, value, key)
                job.max_block_s = max(job.max_block_s, time.perf_counter() - started)
        elif job.threads > 1:  # throughput
            in_threads(job.threads, keys, values, lambda part_keys, part_values: [
                send(topic, value, key) for key, value in zip(part_keys, part_values, strict=True)])
        else:
            for key, value in zip(keys, values, strict=True):
                send(topic, value, key)
        producer.flush()
        return {"errors": int(producer.metrics()["record-error-total"])}


def in_threads(threads: int, keys: list[bytes], values: list[bytes],
               send_all: Callable[[list[bytes], list[bytes]], object]) -> None:
    """--threads N: the records in N equal slices, each sent by its own thread through one shared producer."""
    import threading

    step = -(-len(values) // threads)
    workers = [threading.Thread(target=send_all, args=(keys[i:i + step], values[i:i + step]))
               for i in range(0, len(values), step)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def as_arrow(keys: list[bytes], values: list[bytes]) -> tuple[Any, Any]:
    """The payloads as Arrow binary arrays (made before the clock starts, as a Spark task receives them); the lists
    themselves when pyarrow is missing."""
    try:
        import pyarrow as pa
    except ImportError:
        return keys, values
    return pa.array(keys, type=pa.binary()), pa.array(values, type=pa.binary())


def run_cykafka_batch(job: Job, topic: str, key_column: Any, value_column: Any) -> dict[str, Any]:
    """send_batch with Arrow arrays (zero-copy slices of BATCH_CALL_RECORDS) or lists."""
    from cykafka import Producer

    with Producer({"bootstrap.servers": job.bootstrap, **cykafka_config(job)}) as producer:
        producer.send(topic, b"warm-up", b"key").result(60)  # metadata and connection before the clock runs
        job.begin()
        results = []
        for start in range(0, len(value_column), BATCH_CALL_RECORDS):
            stop = start + BATCH_CALL_RECORDS
            began = time.perf_counter()
            results.append(producer.send_batch(topic, value_column[start:stop], key_column[start:stop]))
            job.max_block_s = max(job.max_block_s, time.perf_counter() - began)
        producer.flush()
        return {"errors": sum(r.failed_count for r in results)}


def run_confluent(job: Job, topic: str, keys: list[bytes], values: list[bytes]) -> dict[str, Any]:
    from confluent_kafka import Producer

    errors = 0

    def on_delivery(err: Any, _msg: Any) -> None:
        nonlocal errors
        if err is not None:
            errors += 1

    producer = Producer({"bootstrap.servers": job.bootstrap, **job.config({
        "linger.ms": job.linger_ms, "batch.size": job.batch_size, "compression.type": job.codec,
        "queue.buffering.max.kbytes": job.buffer_memory // 1024})})
    produce, poll = producer.produce, producer.poll
    produce(topic, values[0], keys[0])  # warm-up: metadata and connection before the clock runs
    producer.flush(60)
    job.begin()
    if job.mode == "latency":
        latencies: list[float] = []
        # --hog: a record every 10 ms; waiting in poll() serves a delivery callback as it comes, not at the next send
        wait = job.paced(poll if job.hog else time.sleep)
        for i, (key, value) in enumerate(zip(keys, values, strict=True)):
            wait(i)
            sent = time.perf_counter()
            produce(topic, value, key, on_delivery=lambda e, _m, sent=sent: latencies.append(time.perf_counter() - sent)
                    if e is None else None)
            poll(0)
        producer.flush()
        return {"errors": len(values) - len(latencies), **latency_percentiles(latencies)}

    def send_all(part_keys: list[bytes], part_values: list[bytes]) -> None:
        for i, (key, value) in enumerate(zip(part_keys, part_values, strict=True)):
            started = time.perf_counter()
            while True:
                try:
                    produce(topic, value, key, on_delivery=on_delivery)
                    break
                except BufferError:  # its queue is full: wait for deliveries (its way of blocking)
                    poll(0.01)
            if job.mode == "overload":
                job.max_block_s = max(job.max_block_s, time.perf_counter() - started)
            if i % 10000 == 0:
                poll(0)

    if job.threads > 1 and job.mode == "throughput":
        in_threads(job.threads, keys, values, send_all)
    else:
        send_all(keys, values)
    producer.flush()
    return {"errors": errors}


def run_aiokafka(job: Job, topic: str, keys: list[bytes], values: list[bytes]) -> dict[str, Any]:
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def main() -> dict[str, Any]:
        producer = AIOKafkaProducer(bootstrap_servers=job.bootstrap, **job.config({
            "linger_ms": job.linger_ms, "max_batch_size": job.batch_size,
            "compression_type": None if job.codec == "none" else job.codec}))
        await producer.start()
        try:
            await producer.send_and_wait(topic, values[0], key=keys[0])  # warm-up before the clock runs
            job.begin()
            if job.mode == "latency":
                latencies: list[float] = []
                delay_s = job.pacer()
                futures = []
                for i, (key, value) in enumerate(zip(keys, values, strict=True)):
                    delay = delay_s(i)  # the busy-caller work blocks the event loop: aiokafka's I/O waits for it
                    if delay > 0:
                        await asyncio.sleep(delay)
                    sent = time.perf_counter()
                    future = await producer.send(topic, value, key=key)
                    future.add_done_callback(lambda f, sent=sent: latencies.append(time.perf_counter() - sent)
                                             if not f.exception() else None)
                    futures.append(future)
                results = await asyncio.gather(*futures, return_exceptions=True)
                return {"errors": sum(isinstance(r, BaseException) for r in results),
                        **latency_percentiles(latencies)}
            futures = [await producer.send(topic, value, key=key) for key, value in zip(keys, values, strict=True)]
            results = await asyncio.gather(*futures, return_exceptions=True)
            return {"errors": sum(isinstance(r, BaseException) for r in results)}
        finally:
            await producer.stop()

    return asyncio.run(main())


def run_kafka_python(job: Job, topic: str, keys: list[bytes], values: list[bytes]) -> dict[str, Any]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=job.bootstrap, **job.config({
        "linger_ms": job.linger_ms, "batch_size": job.batch_size,
        "compression_type": None if job.codec == "none" else job.codec}))
    producer.send(topic, values[0], key=keys[0]).get(60)  # warm-up: metadata and connection before the clock
    job.begin()
    if job.mode == "latency":
        latencies: list[float] = []
        wait = job.paced()
        futures = []
        for i, (key, value) in enumerate(zip(keys, values, strict=True)):
            wait(i)
            sent = time.perf_counter()
            future = producer.send(topic, value, key=key)
            future.add_callback(lambda _m, sent=sent: latencies.append(time.perf_counter() - sent))
            futures.append(future)
        producer.flush()
        producer.close()
        return {"errors": sum(1 for f in futures if f.failed()), **latency_percentiles(latencies)}
    futures = [producer.send(topic, value, key=key) for key, value in zip(keys, values, strict=True)]
    producer.flush()
    producer.close()
    return {"errors": sum(1 for f in futures if f.failed())}


PREPARE: dict[str, Callable[[list[bytes], list[bytes]], tuple[Any, Any]]] = {"cykafka-batch": as_arrow}
RUNNERS: dict[str, Callable[[Job, str, Any, Any], dict[str, Any]]] = {
    "cykafka": run_cykafka, "cykafka-batch": run_cykafka_batch, "confluent": run_confluent,
    "aiokafka": run_aiokafka, "kafka-python": run_kafka_python,
}


# -- worker and parent ---------------------------------------------------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    keys, values = payloads(args.records, args.value_bytes)
    topic = args.topic or f"bench-{args.worker}-{time.monotonic_ns()}"
    importlib.import_module(MODULES[args.worker])  # import time is not send time
    if args.worker in PREPARE:
        keys, values = PREPARE[args.worker](keys, values)
    # the payload lists go to the oldest GC generation now: else every young collection during the run walks
    # their millions of items (a cost of how the bench holds its data, not of the client)
    gc.collect()
    job = Job(args)
    outcome = RUNNERS[args.worker](job, topic, keys, values)
    elapsed_s = time.perf_counter() - job.started
    job.end_hog()
    after = resource.getrusage(resource.RUSAGE_SELF)
    before = job.rusage_before
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss_before = job.rss_before
    result = {"client": args.worker, "records": args.records, "elapsed_s": elapsed_s, "cpu_s": cpu_s, **outcome,
              "config": job.used_config}
    if args.mode == "latency":
        result["busy_us"] = args.busy_us
        result["spin"] = args.spin
        result["hog"] = args.hog
    if args.mode == "overload":
        result["rss_growth_mib"] = (after.ru_maxrss * 1024 - rss_before) / 2**20  # ru_maxrss: KiB on Linux
        result["max_block_s"] = job.max_block_s
    print(json.dumps(result))


def worker_command(client: str, bootstrap: str, records: int, *, value_bytes: int = 100, codec: str = "none",
                   mode: str = "throughput", rate: int = 10_000, busy_us: int = 0, spin: bool = False,
                   hog: bool = False, threads: int = 1, linger_ms: int | None = None, batch_size: int = BATCH_SIZE,
                   buffer_memory: int = 32 * 2**20,
                   settings: dict[str, Any] | None = None, profile_path: str | None = None) -> list[str]:
    """The command line of one worker process (under cProfile when profile_path is given); settings: what the
    client's constructor gets on top of the scenario's batching (bench/run.py's PEER_SETTINGS[client])."""
    command = [sys.executable]
    if profile_path is not None:
        command += ["-m", "cProfile", "-o", profile_path]
    command += [os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap, "--records", str(records),
                "--value-bytes", str(value_bytes), "--codec", codec, "--mode", mode, "--rate", str(rate),
                "--busy-us", str(busy_us), "--batch-size", str(batch_size), "--buffer-memory", str(buffer_memory),
                "--settings", json.dumps(settings or {})]
    if linger_ms is not None:
        command += ["--linger-ms", str(linger_ms)]
    if spin:
        command.append("--spin")
    if hog:
        command.append("--hog")
    if threads > 1:
        command += ["--threads", str(threads)]
    return command


def measure(command: list[str], timeout_s: float = 900) -> dict[str, Any]:
    out = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    if out.returncode != 0:
        raise RuntimeError(f"worker {command[command.index('--worker') + 1]} failed ({out.returncode}):\n"
                           f"{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=500_000)
    p.add_argument("--slow-records", type=int, default=50_000, help="records for aiokafka and kafka-python")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--value-bytes", type=int, default=100)
    p.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    p.add_argument("--clients", default=",".join(CLIENTS))
    p.add_argument("--bootstrap", default=None, help="an existing broker (default: start the embedded one)")
    p.add_argument("--mode", default="throughput", choices=["throughput", "latency", "overload"])
    p.add_argument("--rate", type=int, default=10_000, help="latency mode: records per second")
    p.add_argument("--busy-us", type=int, default=0, help="latency mode: µs of pure-Python work after each send")
    p.add_argument("--spin", action="store_true", help="latency mode: the caller spins in pure Python until each "
                   "record is due instead of sleeping (it never gives up the GIL of its own accord)")
    p.add_argument("--hog", action="store_true", help="latency mode: another thread spins in pure Python through the "
                   "whole run, never calling the client (the sending thread sleeps between sends)")
    p.add_argument("--threads", type=int, default=1, help="throughput mode, cykafka and confluent: the records sent "
                   "by N threads through one producer")
    p.add_argument("--linger-ms", type=int, default=None, help=f"default {LINGER_MS} (latency mode: 0)")
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    p.add_argument("--buffer-memory", type=int, default=32 * 2**20)
    p.add_argument("--settings", default=None, help="JSON: every client's constructor settings on top of the "
                   "scenario's (in its own spelling; default: bench/run.py's PEER_SETTINGS for each client)")
    p.add_argument("--worker", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    p.add_argument("--topic", default=None, help=argparse.SUPPRESS)
    return p


def main() -> None:
    args = parser().parse_args()
    if args.worker:
        if not args.bootstrap:
            parser().error("--worker needs --bootstrap")
        worker(args)
        return
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    from run import peer_settings

    from cykafka.broker import EmbeddedBroker

    broker = None if args.bootstrap else EmbeddedBroker().start()
    bootstrap = args.bootstrap or broker.bootstrap_servers  # type: ignore[union-attr]
    try:
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
        for _ in range(args.rounds):
            for client in clients:
                records = args.slow_records if client in SLOW else args.records
                runs[client].append(measure(worker_command(
                    client, bootstrap, records, value_bytes=args.value_bytes, codec=args.codec, mode=args.mode,
                    rate=args.rate, busy_us=args.busy_us, spin=args.spin, hog=args.hog, threads=args.threads,
                    linger_ms=args.linger_ms, batch_size=args.batch_size, buffer_memory=args.buffer_memory,
                    settings=json.loads(args.settings) if args.settings else peer_settings(client))))
    finally:
        if broker is not None:
            broker.stop()
    rate = {c: statistics.median(r["records"] / r["elapsed_s"] for r in runs[c]) for c in clients}
    cpu_us = {c: statistics.median(r["cpu_s"] / r["records"] * 1e6 for r in runs[c]) for c in clients}
    base = "confluent" if "confluent" in clients else clients[0]
    linger_ms = args.linger_ms if args.linger_ms is not None else LINGER_MS
    print(f"\nend to end, {args.value_bytes}-byte keyed values, codec {args.codec}, linger.ms={linger_ms}"
          f", batch.size={args.batch_size}, median of {args.rounds} interleaved rounds; constructor settings: "
          f"{args.settings or 'bench/run.py PEER_SETTINGS (acks=all, idempotence)'}\n")
    print(f"| client | records | records/s | vs {base} | client CPU µs/record | CPU vs {base} | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for c in clients:
        print(f"| {c} | {runs[c][0]['records']:,} | {rate[c]:,.0f} | {rate[c] / rate[base]:.2f}x | "
              f"{cpu_us[c]:.2f} | {cpu_us[c] / cpu_us[base]:.2f}x | {sum(r['errors'] for r in runs[c])} |")


if __name__ == "__main__":
    main()
