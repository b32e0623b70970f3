"""Hostile broker input: mutation fuzzing of the response decoders and the record batch decoder.

    python bench/fuzz_decoders.py [--inputs 1000000] [--seed 1]      # built-in mutator, no extra packages
    python bench/fuzz_decoders.py --atheris [--inputs N]              # coverage-guided, with atheris (if installed)

Seeds are real frames: Produce/Metadata/ApiVersions/InitProducerId responses as the generic codec writes them
(decoded as the transport does: Produce by the hand-written fast path, the rest by the generic codec), and record
batches from our builder for every codec. Mutations: bit flips, byte overwrites, length fields set to huge or
negative values, truncation, insertion, splicing. Every input must decode or raise the typed
error (ProtocolError, CorruptRecordError); anything else, a hang (per-input time budget) or a big allocation
(address space capped) fails the run. tests/test_fuzz.py runs a short version in the suite.
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
from cykafka.core import RecordBatchBuilder, decode_batches  # noqa: E402
from cykafka.errors import CorruptRecordError, ProtocolError  # noqa: E402
from cykafka.protocol import SUPPORTED_VERSIONS, apis, decode_any_response, encode_response  # noqa: E402

TYPED = (ProtocolError, CorruptRecordError)
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
    responses, batches = response_seeds(), batch_seeds()
    counts = {"ok": 0, "typed": 0}
    for i in range(inputs):
        if i % 2:
            api_key, version, frame = responses[rng.randrange(len(responses))]
            data = mutate(frame, rng)
            outcome = check(decode_any_response, api_key, version, data)
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
