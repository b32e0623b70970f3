"""asyncio's own cost per future on this machine, no Kafka client involved: what any producer whose send() returns an
asyncio future pays on top of its own work (docs/asyncio.md, "Numbers"). N futures made with asyncio.Future(loop=)
(what loop.create_future() does, minus its Python-level frame), resolved with set_result, then awaited in each of the
async bench's two idioms that await them: `await asyncio.gather(*futures)` and `for f in futures: await f` (already
resolved); then N more gathered while still pending, as the async bench's gather idiom finds most of them, each then
resolved (set_result schedules gather's callback on the loop: a Handle per future) and the gather awaited. CPU time
per future, the garbage collector on (what a program pays) and off (asyncio's calls alone). The last column is the
gather idiom's ceiling: records/s of a client whose send() cost nothing but its future (create + gather pending).

    python bench/asyncio_floor.py [--futures N] [--rounds R] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time


async def _round(count: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    future_type = asyncio.Future
    steps_s: dict[str, float] = {}
    started = time.process_time()

    def step(name: str | None) -> None:
        """The CPU time since the last step is `name`'s (None: not a step of its own)."""
        nonlocal started
        now = time.process_time()
        if name is not None:
            steps_s[name] = now - started
        started = now

    futures = [future_type(loop=loop) for _ in range(count)]
    step("create_us")
    for future in futures:
        future.set_result(None)
    step("resolve_us")
    await asyncio.gather(*futures)
    step("gather_us")
    for future in futures:
        await future
    step("await_each_us")
    futures = [future_type(loop=loop) for _ in range(count)]
    step(None)  # made again: create_us times that
    gathered = asyncio.gather(*futures)
    for future in futures:
        future.set_result(None)
    await gathered
    step("gather_pending_us")
    return {name: seconds / count * 1e6 for name, seconds in steps_s.items()}


def measure(count: int, rounds: int) -> dict[str, dict[str, float]]:
    """Medians over the rounds, with the collector on and off (µs of CPU per future)."""
    result = {}
    for collector in ("gc_on", "gc_off"):
        if collector == "gc_off":
            gc.disable()
        try:
            runs = [asyncio.run(_round(count)) for _ in range(rounds)]
        finally:
            gc.enable()
        result[collector] = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    return result


def ceiling(row: dict[str, float]) -> float:
    """Records/s of the gather idiom for a client whose send() costs nothing but making its future."""
    return 1e6 / (row["create_us"] + row["gather_pending_us"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--futures", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.futures, args.rounds)
    if args.json:
        print(json.dumps({"futures": args.futures, **result}))
        return 0
    print(f"asyncio's own CPU µs per future, {args.futures:,} futures, median of {args.rounds} round(s)")
    print("| collector | create | resolve | gather (call + await) | await each (resolved) | gather pending (call, "
          "resolve, await) | gather idiom's ceiling, records/s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for collector, row in result.items():
        print(f"| {collector.replace('_', ' ')} | {row['create_us']:.2f} | {row['resolve_us']:.2f} | "
              f"{row['gather_us']:.2f} | {row['await_each_us']:.2f} | {row['gather_pending_us']:.2f} | "
              f"{ceiling(row):,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
