"""cykafka.core: the sans-I/O producer domain, compiled (see _core.pyx). Everything public is re-exported here."""

from cykafka.core import _core
from cykafka.core._core import (
    BufferPool,
    BuiltInPartitioner,
    DecodedBatch,
    DecodedRecord,
    NodeLatencyStats,
    RECORD_BATCH_OVERHEAD_BYTES,
    RecordBatchBuilder,
    StickyPartitionInfo,
    crc32c,
    crc32c_hardware,
    decode_batches,
    estimate_size_upper_bound,
    leader_unavailable,
    murmur2,
    partition_for_key,
    rewrite_producer_state,
)

__all__ = [
    "BufferPool",
    "BuiltInPartitioner",
    "DecodedBatch",
    "DecodedRecord",
    "NodeLatencyStats",
    "RECORD_BATCH_OVERHEAD_BYTES",
    "RecordBatchBuilder",
    "StickyPartitionInfo",
    "_core",
    "crc32c",
    "crc32c_hardware",
    "decode_batches",
    "estimate_size_upper_bound",
    "leader_unavailable",
    "murmur2",
    "partition_for_key",
    "rewrite_producer_state",
]
