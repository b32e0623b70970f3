"""cykafka.core: the sans-I/O producer domain, compiled (see _core.pyx). Everything public is re-exported here."""

from cykafka.core import _core
from cykafka.core._core import (
    RECORD_BATCH_OVERHEAD_BYTES,
    DecodedBatch,
    DecodedRecord,
    RecordBatchBuilder,
    crc32c,
    crc32c_hardware,
    decode_batches,
    estimate_size_upper_bound,
    rewrite_producer_state,
)

__all__ = [
    "RECORD_BATCH_OVERHEAD_BYTES",
    "DecodedBatch",
    "DecodedRecord",
    "RecordBatchBuilder",
    "_core",
    "crc32c",
    "crc32c_hardware",
    "decode_batches",
    "estimate_size_upper_bound",
    "rewrite_producer_state",
]
