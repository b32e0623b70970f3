"""asyncio's own cost per future on this machine, no Kafka client involved: what any producer whose send() returns an
asyncio future pays on top of its own work (docs/asyncio.md, "Numbers"). N futures made with asyncio.Future(loop=)
(what loop.create_future() does, minus its Python-level frame), resolved with set_result, then awaited in each of the
async bench's two idioms that await them: `await asyncio.gather(*futures)` and `for f in futures: await f` (already
resolved). CPU time per future, the garbage collector on (what a program pays) and off (asyncio's calls alone).

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
    marks = [time.process_time()]
    futures = [future_type(loop=loop) for _ in range(count)]
    marks.append(time.process_time())
    for future in futures:
        future.set_result(None)
    marks.append(time.process_time())
    await asyncio.gather(*futures)
    marks.append(time.process_time())
    for future in futures:
        await future
    marks.append(time.process_time())
    names = ("create_us", "resolve_us", "gather_us", "await_each_us")
    return {name: (marks[i + 1] - marks[i]) / count * 1e6 for i, name in enumerate(names)}


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
    print("| collector | create | resolve | gather (call + await) | await each (resolved) |")
    print("|---|---:|---:|---:|---:|")
    for collector, row in result.items():
        print(f"| {collector.replace('_', ' ')} | {row['create_us']:.2f} | {row['resolve_us']:.2f} | "
              f"{row['gather_us']:.2f} | {row['await_each_us']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
