"""cykafka.core: the sans-I/O producer domain, compiled (see _core.pyx). Everything public is re-exported here."""

from cykafka.core import _core
from cykafka.core._core import (
    BufferPool,
    BuiltInPartitioner,
    NodeLatencyStats,
    StickyPartitionInfo,
    crc32c,
    crc32c_hardware,
    leader_unavailable,
    murmur2,
    partition_for_key,
)

__all__ = [
    "BufferPool",
    "BuiltInPartitioner",
    "NodeLatencyStats",
    "StickyPartitionInfo",
    "_core",
    "crc32c",
    "crc32c_hardware",
    "leader_unavailable",
    "murmur2",
    "partition_for_key",
]
