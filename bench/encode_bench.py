"""Encode-only micro-bench (no I/O): append N records (10-byte keys, 100-byte values) into batches of batch.size
16384 and close them, with cykafka's RecordBatchBuilder, aiokafka's Cython DefaultRecordBatchBuilder and
kafka-python's pure-Python DefaultRecordBatchBuilder, interleaved round by round in one process.

    python bench/encode_bench.py [--records N] [--slow-records M] [--rounds R] [--codec none|lz4|gzip|snappy|zstd]
                                 [--json]
    python -m cProfile -s cumtime bench/encode_bench.py --records 100000

All builders get the same keys, values and a fixed timestamp (no clock read per record). cykafka reuses one pooled
buffer per batch, as the accumulator does. kafka-python (~100x slower) appends only the first --slow-records
records (its rate is steady-state), so the run stays short under cProfile. Prints medians as a markdown table,
ratios against aiokafka.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# `python -m cProfile` puts the working directory first on sys.path, where the source tree's cykafka/ would shadow
# the installed package (which has core, ports and adapters): measure what is installed.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

from aiokafka.record._crecords import DefaultRecordBatchBuilder as AiokafkaBuilder  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder  # noqa: E402

from cykafka.adapters.compression import compressor_for, decompress  # noqa: E402
from cykafka.core import RecordBatchBuilder, decode_batches  # noqa: E402
from cykafka.ports import CODEC_NAMES  # noqa: E402

BATCH_SIZE_BYTES = 16384
TIMESTAMP_MS = 1_700_000_000_000
DISTINCT = 1024  # distinct key/value objects, cycled


@dataclass
class Run:
    elapsed_s: float
    batches: int
    batch_bytes: int
    first_batch: bytes


def payloads(count: int) -> tuple[list[bytes], list[bytes]]:
    """Deterministic, mildly compressible JSON-ish values of exactly 100 bytes, keys of exactly 10."""
    keys = [b"key-%06d" % (i * 7919 % 1_000_000) for i in range(DISTINCT)]
    values = []
    for i in range(DISTINCT):
        v = b'{"id":%d,"user":"user-%05d","score":%d,"tags":["a","b"],"note":"' % (i, i * 31 % 99991, i * 17 % 1000)
        values.append((v + b"x" * 100)[:99] + b"}")
    assert all(len(k) == 10 for k in keys) and all(len(v) == 100 for v in values)
    keys_all = [keys[i % DISTINCT] for i in range(count)]
    values_all = [values[i % DISTINCT] for i in range(count)]
    return keys_all, values_all


def run_cykafka(keys: Sequence[bytes], values: Sequence[bytes], codec: str) -> Run:
    codec_id = CODEC_NAMES[codec]
    compressor = compressor_for(codec)
    pool_buffer = bytearray(BATCH_SIZE_BYTES)
    batches = batch_bytes = 0
    first = b""
    start = time.perf_counter()
    builder = RecordBatchBuilder(pool_buffer, BATCH_SIZE_BYTES, codec_id)
    append = builder.try_append
    for key, value in zip(keys, values, strict=True):
        if not append(TIMESTAMP_MS, key, value, None):
            view = builder.close(compressor)
            batches += 1
            batch_bytes += len(view)
            if not first:
                first = bytes(view)
            builder = RecordBatchBuilder(pool_buffer, BATCH_SIZE_BYTES, codec_id)
            append = builder.try_append
            append(TIMESTAMP_MS, key, value, None)
    view = builder.close(compressor)
    elapsed_s = time.perf_counter() - start
    return Run(elapsed_s, batches + 1, batch_bytes + len(view), first or bytes(view))


def run_peer(factory: Callable[[], object]) -> Callable[[Sequence[bytes], Sequence[bytes], str], Run]:
    """aiokafka and kafka-python share the builder API: append(offset, ts, key, value, headers) -> None when full."""

    def run(keys: Sequence[bytes], values: Sequence[bytes], codec: str) -> Run:
        batches = batch_bytes = 0
        first = b""
        headers: list[tuple[str, bytes]] = []
        start = time.perf_counter()
        builder = factory(CODEC_NAMES[codec])  # type: ignore[call-arg]
        append = builder.append  # type: ignore[attr-defined]
        offset = 0
        for key, value in zip(keys, values, strict=True):
            if append(offset, TIMESTAMP_MS, key, value, headers) is None:
                data = builder.build()  # type: ignore[attr-defined]
                batches += 1
                batch_bytes += len(data)
                if not first:
                    first = bytes(data)
                builder = factory(CODEC_NAMES[codec])  # type: ignore[call-arg]
                append = builder.append  # type: ignore[attr-defined]
                offset = 0
                append(offset, TIMESTAMP_MS, key, value, headers)
            offset += 1
        data = builder.build()  # type: ignore[attr-defined]
        elapsed_s = time.perf_counter() - start
        return Run(elapsed_s, batches + 1, batch_bytes + len(data), first or bytes(data))

    return run


def aiokafka_builder(codec_id: int) -> object:
    return AiokafkaBuilder(2, codec_id, 0, -1, -1, -1, BATCH_SIZE_BYTES)


def kafka_python_builder(codec_id: int) -> object:
    return KafkaPythonBuilder(2, codec_id, False, -1, -1, -1, BATCH_SIZE_BYTES)


IMPLEMENTATIONS: dict[str, Callable[[Sequence[bytes], Sequence[bytes], str], Run]] = {
    "cykafka RecordBatchBuilder": run_cykafka,
    "aiokafka DefaultRecordBatchBuilder (Cython)": run_peer(aiokafka_builder),
    "kafka-python DefaultRecordBatchBuilder": run_peer(kafka_python_builder),
}
BASELINE = "aiokafka DefaultRecordBatchBuilder (Cython)"
SLOW = {"kafka-python DefaultRecordBatchBuilder"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--slow-records", type=int, default=100_000, help="records for pure-Python kafka-python")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--codec", choices=list(CODEC_NAMES), default="none")
    parser.add_argument("--json", action="store_true", help="print the median records/s per builder as JSON last")
    args = parser.parse_args(argv)
    keys, values = payloads(args.records)
    counts = {name: min(args.records, args.slow_records) if name in SLOW else args.records for name in IMPLEMENTATIONS}

    results: dict[str, list[Run]] = {name: [] for name in IMPLEMENTATIONS}
    for round_no in range(args.rounds):
        for name, run in IMPLEMENTATIONS.items():
            n = counts[name]
            result = run(keys[:n], values[:n], args.codec)
            results[name].append(result)
            print(f"round {round_no + 1}: {name}: {n / result.elapsed_s:,.0f} records/s", file=sys.stderr)

    for name, runs in results.items():  # every builder's output decodes, record for record
        [batch] = decode_batches(runs[0].first_batch, decompress)
        assert batch.codec == CODEC_NAMES[args.codec] or name.startswith("kafka-python"), (name, batch.codec)
        assert batch.records[0].key == keys[0] and batch.records[-1].value == values[len(batch.records) - 1], name

    medians = {name: statistics.median(counts[name] / r.elapsed_s for r in runs) for name, runs in results.items()}
    print(f"\n{args.records:,} records, key 10 B, value 100 B, batch.size {BATCH_SIZE_BYTES}, codec {args.codec}, "
          f"median of {args.rounds} interleaved rounds, Python {sys.version.split()[0]}\n")
    print("| builder | records | records/s | ns/record | batches | batch bytes | vs aiokafka |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rate in medians.items():
        run = results[name][0]
        print(f"| {name} | {counts[name]:,} | {rate:,.0f} | {1e9 / rate:,.0f} | {run.batches:,} | "
              f"{run.batch_bytes:,} | {rate / medians[BASELINE]:.2f}x |")
    if args.json:
        import json

        print(json.dumps(medians))
    return 0


if __name__ == "__main__":
    sys.exit(main())
