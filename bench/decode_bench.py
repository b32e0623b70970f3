"""CPU per record of the consumer's record decoder on one Fetch answer's bytes, next to aiokafka's Cython decoder.

    python bench/decode_bench.py [--records 200000] [--rounds 5] [--batch-bytes 16384]

The bytes: --records records of a 10-byte key and a 100-byte value, in batches of --batch-bytes (Java's batch.size
default) from our RecordBatchBuilder, uncompressed and lz4, cut into answers of --answer-bytes (Java's
max.partition.fetch.bytes default) as a Fetch would return them. Each decoder reads every answer with CRCs checked and
touches every value:
- cykafka records(): PartitionFetch.records(500) until done, ConsumerRecord objects;
- cykafka arrow_into(): PartitionFetch.arrow_into(builder, 500) until done, then finish() to a pyarrow.RecordBatch
  (one per answer, as a poll_batch would);
- aiokafka: MemoryRecords -> DefaultRecordBatch (aiokafka.record._crecords), validate_crc(), iterate the records.
µs are process CPU time per record, the best of --rounds after a warm-up round (not wall time). Not a test: numbers
vary by machine; compare the ratios in one run.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time
from collections.abc import Callable

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]

from cykafka.adapters.compression import compressor_for, decompress  # noqa: E402
from cykafka.arrow_schema import kafka_source_schema  # noqa: E402
from cykafka.core import ArrowBatchBuilder, PartitionFetch, RecordBatchBuilder  # noqa: E402

KEY_BYTES, VALUE_BYTES = 10, 100


def answers(records: int, codec: str, batch_bytes: int, answer_bytes: int) -> list[bytes]:
    """One partition's records sections, as Fetch answers of at most answer_bytes (whole batches) would carry them."""
    compressor = compressor_for(codec)
    value = bytes(range(VALUE_BYTES))
    out: list[bytes] = []
    section, offset = bytearray(), 0
    while offset < records:
        builder = RecordBatchBuilder(bytearray(batch_bytes), batch_bytes, compressor.codec_id if compressor else 0)
        n = 0
        while offset + n < records and builder.try_append(1_700_000_000_000 + n, b"key-%06d" % (offset + n),
                                                          value, None):
            n += 1
        batch = bytearray(builder.close(compressor))
        struct.pack_into(">q", batch, 0, offset)
        if section and len(section) + len(batch) > answer_bytes:
            out.append(bytes(section))
            section = bytearray()
        section += batch
        offset += n
    out.append(bytes(section))
    return out


def cykafka_records(sections: list[bytes]) -> int:
    """Value bytes read (every value touched)."""
    value_bytes = 0
    for data in sections:
        part = PartitionFetch("bench", 0, data, 0, check_crcs=True, decompress=decompress)
        while got := part.records(500):
            for record in got:
                value_bytes += len(record.value)
    return value_bytes


def cykafka_arrow(sections: list[bytes]) -> int:
    import pyarrow.compute as pc

    value_bytes = 0
    builder = ArrowBatchBuilder(kafka_source_schema())
    for data in sections:
        part = PartitionFetch("bench", 0, data, 0, check_crcs=True, decompress=decompress)
        while part.arrow_into(builder, 500):
            pass
        value_bytes += pc.sum(pc.binary_length(builder.finish().column("value"))).as_py()
    return value_bytes


def aiokafka_records(sections: list[bytes]) -> int:
    from aiokafka.record.memory_records import MemoryRecords

    value_bytes = 0
    for data in sections:
        records = MemoryRecords(data)
        while (batch := records.next_batch()) is not None:
            if not batch.validate_crc():
                raise AssertionError("aiokafka: CRC mismatch")
            for record in batch:
                value_bytes += len(record.value)
    return value_bytes


def cpu_us_per_record(decoders: list[Callable[[list[bytes]], int]], data: list[bytes], records: int,
                      rounds: int) -> list[float]:
    """Best CPU µs per record of each decoder; rounds interleave the decoders, after one warm-up round (imports,
    and the allocator growing its heap: the first rounds of a process page-fault fresh memory)."""
    best = [float("inf")] * len(decoders)
    for round_index in range(rounds + 1):
        for i, decoder in enumerate(decoders):
            started = time.process_time()
            value_bytes = decoder(data)
            elapsed = time.process_time() - started
            if value_bytes != records * VALUE_BYTES:
                raise AssertionError(f"{decoder.__name__} read {value_bytes} value bytes, not {records * VALUE_BYTES}")
            if round_index:
                best[i] = min(best[i], elapsed)
    return [seconds / records * 1e6 for seconds in best]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-bytes", type=int, default=16384)
    parser.add_argument("--answer-bytes", type=int, default=1 << 20)
    args = parser.parse_args()
    decoders = [("cykafka records()", cykafka_records), ("cykafka arrow_into()", cykafka_arrow),
                ("aiokafka (Cython)", aiokafka_records)]
    print(f"{args.records:,} records, {KEY_BYTES}-byte keys, {VALUE_BYTES}-byte values, {args.batch_bytes}-byte "
          f"batches, {args.answer_bytes}-byte answers; CPU µs per record, best of {args.rounds}")
    print(f"{'codec':<6} " + " ".join(f"{name:>22}" for name, _ in decoders)
          + f" {'records() / aiokafka':>22} {'arrow_into() / aiokafka':>24}")
    for codec in ("none", "lz4"):
        data = answers(args.records, codec, args.batch_bytes, args.answer_bytes)
        results = cpu_us_per_record([decoder for _, decoder in decoders], data, args.records, args.rounds)
        print(f"{codec:<6} " + " ".join(f"{us:>22.3f}" for us in results)
              + f" {results[0] / results[2]:>22.2f} {results[1] / results[2]:>24.2f}")


if __name__ == "__main__":
    main()
