"""Hostile broker input: mutation fuzzing of the response decoders and the record batch decoder.

    python bench/fuzz_decoders.py [--inputs 1000000] [--seed 1]      # built-in mutator, no extra packages
    python bench/fuzz_decoders.py --atheris [--inputs N]              # coverage-guided, with atheris (if installed)

Seeds are real frames: Produce/Metadata/ApiVersions/InitProducerId responses as the generic codec writes them
(decoded as the transport does: Produce by the hand-written fast path, the rest by the generic codec), and record
batches from our builder for every codec; the consumer's decoder (PartitionFetch: records() and arrow_into(),
read_uncommitted and read_committed, CRCs checked or not) reads runs of them with transactional batches and
commit/abort markers, and every Arrow batch it builds must pass pyarrow's full validation. Mutations: bit flips, byte
overwrites, length fields set to huge or negative values, truncation, insertion, splicing. Every input must decode or
raise the typed error (ProtocolError, CorruptRecordError); anything else, a hang (per-input time budget) or a big
allocation (address space capped) fails the run. tests/test_fuzz.py runs a short version in the suite.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

from cykafka.adapters.compression import compressor_for, decompress  # noqa: E402
from cykafka.arrow_schema import kafka_source_schema  # noqa: E402
from cykafka.core import ArrowBatchBuilder, PartitionFetch, RecordBatchBuilder, crc32c, decode_batches  # noqa: E402
from cykafka.errors import CorruptRecordError, ProtocolError, TimestampOverflowError  # noqa: E402
from cykafka.protocol import SUPPORTED_VERSIONS, apis, decode_any_response, encode_response  # noqa: E402

TYPED = (ProtocolError, CorruptRecordError, TimestampOverflowError)  # the decoders' typed refusals
SLOW_INPUT_S = 1.0


def response_seeds() -> list[tuple[int, int, bytes]]:
    """(api_key, version, frame after the size prefix) for response shapes the producer reads, written by the
    generic codec at every version we speak (Produce's usual answer and one with record errors, which take the
    hand-written fast path and the generic fallback)."""
    samples: list[tuple[int, dict[str, Any]]] = [
        (apis.API_VERSIONS.key, {"api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                                              for k, (lo, hi) in SUPPORTED_VERSIONS.items()]}),
        (apis.METADATA.key, {
            "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": "rack-a"},
                        {"node_id": 2, "host": "h", "port": 9093}],
            "cluster_id": "c", "controller_id": 1,
            "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "leader_id": 1, "leader_epoch": 5, "replica_nodes": [1, 2], "isr_nodes": [1]},
                {"error_code": 6, "partition_index": 1, "leader_id": 2, "leader_epoch": 3, "replica_nodes": [2],
                 "isr_nodes": [2]}]},
                {"error_code": 3, "name": "missing"}]}),
        (apis.PRODUCE.key, {"responses": [{"name": "t", "partition_responses": [
            {"index": 0, "base_offset": 42, "log_start_offset": 0},
            {"index": 1, "base_offset": 7}]}]}),
        (apis.PRODUCE.key, {"responses": [{"name": "t", "partition_responses": [
            {"index": 0, "base_offset": 42, "log_start_offset": 0},
            {"index": 1, "error_code": 10, "base_offset": -1,
             "record_errors": [{"batch_index": 3, "batch_index_error_message": "too big"}],
             "error_message": "message"}]}]}),
        (apis.INIT_PRODUCER_ID.key, {"producer_id": 1234, "producer_epoch": 5}),
    ]
    seeds = []
    for api_key, body in samples:
        for version in apis.APIS[api_key].versions:
            frame = encode_response(api_key, version, 7, body)
            seeds.append((api_key, version, frame[4:]))
    return seeds


def batch_seeds() -> list[bytes]:
    seeds = []
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        compressor = compressor_for(codec)
        builder = RecordBatchBuilder(bytearray(16384), 16384, compressor.codec_id if compressor else 0)
        for i in range(20):
            builder.try_append(1_700_000_000_000 + i, b"k%d" % i if i % 3 else None, b"v" * (i * 7),
                               [("h", b"x"), ("n", None)] if i % 2 else None)
        seeds.append(bytes(builder.close(compressor, 99, 1, 10)))
    return seeds


def _marker(offset: int, producer_id: int, commit: bool) -> bytes:
    builder = RecordBatchBuilder(bytearray(128), 128, 0)
    builder.try_append(1_700_000_000_000, struct.pack(">hh", 0, int(commit)), struct.pack(">hi", 0, 0), None)
    raw = bytearray(builder.close(None, producer_id, 0, -1, True))
    struct.pack_into(">q", raw, 0, offset)
    struct.pack_into(">h", raw, 21, struct.unpack_from(">h", raw, 21)[0] | 0x20)  # control
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def fetch_seeds() -> list[bytes]:
    """Records sections of a Fetch answer: batches at rising offsets, transactional ones, markers, and a cut tail."""
    seeds = []
    for codec in ("none", "lz4", "zstd"):
        compressor = compressor_for(codec)
        parts, offset = [], 0
        for n, producer_id in ((3, -1), (4, 7), (2, 8), (0, 7), (2, 8), (5, -1)):
            if n == 0:
                parts.append(_marker(offset, producer_id, commit=True))
                offset += 1
                continue
            builder = RecordBatchBuilder(bytearray(4096), 4096, compressor.codec_id if compressor else 0)
            for i in range(n):
                builder.try_append(1_700_000_000_000 + i, b"k%d" % i if i % 2 else None, b"v" * (i * 5),
                                   [("h", b"x"), ("\u00e9", None)] if i % 3 == 0 else None)
            raw = bytearray(builder.close(compressor, producer_id, 0 if producer_id >= 0 else -1,
                                          0 if producer_id >= 0 else -1, producer_id >= 0))
            struct.pack_into(">q", raw, 0, offset)
            parts.append(bytes(raw))
            offset += n
        parts.append(_marker(offset, 8, commit=False))
        whole = b"".join(parts)
        seeds += [whole, whole[:-30]]
    return seeds


def _partition_fetch(check_crcs: bool, read_committed: bool, aborted: list[tuple[int, int]] | None, arrow: bool,
                     data: bytes) -> Any:
    part = PartitionFetch("t", 0, data, 1, check_crcs=check_crcs, decompress=decompress,
                          read_committed=read_committed, aborted_transactions=aborted,
                          markers_after=[(99, 8, True), (100, 7, False)] if arrow else None)
    part.transaction_markers()
    if part.end_offset < 1:
        raise AssertionError(f"end_offset {part.end_offset} is below the fetch offset")
    builder = ArrowBatchBuilder(kafka_source_schema()) if arrow else None
    for _ in range(100_000):  # every call hands out at least one record, or the data is done
        got = part.arrow_into(builder, 64) if builder is not None else len(part.records(64))
        if not got:
            break
    else:
        raise AssertionError("PartitionFetch kept handing out records past its data")
    if not part.done:
        raise AssertionError("PartitionFetch handed out nothing but is not done")
    if builder is not None and _pyarrow is not None:
        builder.finish().validate(full=True)
    return part


try:
    import pyarrow as _pyarrow
except ImportError:  # pragma: no cover - the spark extra is missing: Arrow buffers are built but not validated
    _pyarrow = None


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if not buf:
            buf += rng.randbytes(rng.randint(1, 16))
        elif choice < 0.3:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        elif choice < 0.5:
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif choice < 0.65 and len(buf) >= 4:  # a length/count field made huge or negative
            at = rng.randrange(len(buf) - 3)
            struct.pack_into(">i", buf, at, rng.choice([0x7FFFFFFF, -1, -2, 0x10000000, len(buf) * 1000]))
        elif choice < 0.8:
            del buf[rng.randrange(len(buf)):]
        elif choice < 0.9:
            at = rng.randrange(len(buf) + 1)
            buf[at:at] = rng.randbytes(rng.randint(1, 32))
        else:
            at = rng.randrange(len(buf))
            buf[at:at + 8] = rng.randbytes(8)
    return bytes(buf)


def check(decoder: Callable[..., Any], *args: Any) -> str:
    """'ok' or 'typed' for decoder(*args); raises AssertionError on any other outcome (the input in hex)."""
    started = time.perf_counter()
    try:
        decoder(*args)
        outcome = "ok"
    except TYPED:
        outcome = "typed"
    except Exception as e:
        raise AssertionError(f"{type(e).__name__}: {e} on {decoder.__name__}{args[:-1]}: {args[-1].hex()}") from e
    if time.perf_counter() - started > SLOW_INPUT_S:
        raise AssertionError(f"took {time.perf_counter() - started:.1f}s on {decoder.__name__}: {args[-1].hex()}")
    return outcome


def _decode_batches(data: bytes) -> Any:
    return decode_batches(data, decompress)


def run(inputs: int, seed: int = 1) -> dict[str, int]:
    """Feeds `inputs` mutated frames and batches to the decoders; returns outcome counts."""
    rng = random.Random(seed)
    responses, batches, fetches = response_seeds(), batch_seeds(), fetch_seeds()
    counts = {"ok": 0, "typed": 0}
    for i in range(inputs):
        if i % 2:
            api_key, version, frame = responses[rng.randrange(len(responses))]
            data = mutate(frame, rng)
            outcome = check(decode_any_response, api_key, version, data)
        elif i % 4 == 2:
            data = mutate(fetches[rng.randrange(len(fetches))], rng)
            aborted = rng.choice([None, [], [(8, 0)], [(7, 2), (8, 9)]])
            outcome = check(_partition_fetch, rng.random() < 0.3, rng.random() < 0.5, aborted, i % 8 == 2, data)
        else:
            data = mutate(batches[rng.randrange(len(batches))], rng)
            if rng.random() < 0.2:
                data += mutate(batches[rng.randrange(len(batches))], rng)
            outcome = check(_decode_batches, data)
        counts[outcome] += 1
    return counts


def fuzz_with_atheris(inputs: int) -> None:
    import atheris

    responses = response_seeds()

    def one_input(data: bytes) -> None:
        if not data:
            return
        if data[0] & 1:
            api_key, version, _ = responses[data[0] % len(responses)]
            check(decode_any_response, api_key, version, data[1:])
        elif data[0] & 2:
            check(_partition_fetch, bool(data[0] & 4), bool(data[0] & 8), None if data[0] & 16 else [(8, 0)],
                  bool(data[0] & 32), data[1:])
        else:
            check(_decode_batches, data[1:])

    atheris.instrument_all()  # coverage of the Python decoders (the compiled batch decoder is not instrumented)
    atheris.Setup([sys.argv[0], f"-runs={inputs}", "-max_len=4096"], one_input)
    atheris.Fuzz()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--atheris", action="store_true", help="coverage-guided fuzzing with atheris")
    parser.add_argument("--memory-limit-mib", type=int, default=4096, help="address-space cap (RLIMIT_AS)")
    args = parser.parse_args()
    limit = args.memory_limit_mib * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    started = time.perf_counter()
    if args.atheris:
        fuzz_with_atheris(args.inputs)
        return
    counts = run(args.inputs, args.seed)
    elapsed = time.perf_counter() - started
    print(f"{args.inputs:,} inputs in {elapsed:.1f}s ({args.inputs / elapsed:,.0f}/s): decoded {counts['ok']:,}, "
          f"typed errors {counts['typed']:,}, other exceptions 0, hangs 0, address space capped at "
          f"{args.memory_limit_mib} MiB")


if __name__ == "__main__":
    main()
