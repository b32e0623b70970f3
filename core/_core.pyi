from collections.abc import Sequence
from typing import final

from typing_extensions import Buffer

def crc32c(data: Buffer, crc: int = 0, force: int = -1) -> int: ...
def crc32c_hardware() -> bool: ...

# partitioner.pyx
def murmur2(data: Buffer) -> int:
    """Java Utils.murmur2, signed 32-bit."""

def partition_for_key(key: Buffer, num_partitions: int) -> int:
    """(murmur2(key) & 0x7fffffff) % num_partitions; ValueError if num_partitions <= 0."""

def leader_unavailable(ready_time_ms: int, drain_time_ms: int, partition_availability_timeout_ms: int) -> bool:
    """timeout > 0 and ready_time_ms - drain_time_ms > timeout: leave the leader's partitions out of load stats."""

@final
class NodeLatencyStats:
    ready_time_ms: int
    drain_time_ms: int
    def __init__(self, now_ms: int) -> None: ...
    def update(self, now_ms: int, can_drain: bool) -> None: ...
    def is_unavailable(self, partition_availability_timeout_ms: int) -> bool: ...

@final
class StickyPartitionInfo:
    @property
    def partition(self) -> int: ...
    @property
    def produced_bytes(self) -> int: ...
    def __init__(self, partition: int) -> None: ...

@final
class BuiltInPartitioner:
    """KIP-794 sticky/adaptive partitioner for one topic; seed 0 = derive one per object."""

    @property
    def topic(self) -> str: ...
    @property
    def sticky_batch_size_bytes(self) -> int: ...
    @property
    def sticky_partition(self) -> int: ...
    @property
    def has_load_stats(self) -> bool: ...
    @property
    def load_stats_range_end(self) -> int: ...
    @property
    def cumulative_frequency_table(self) -> list[int]: ...
    @property
    def load_stats_partition_ids(self) -> list[int]: ...
    def __init__(self, topic: str, sticky_batch_size_bytes: int, seed: int = 0) -> None: ...
    def peek_current_partition_info(
        self, available_partitions: Sequence[int] | None, num_partitions: int
    ) -> StickyPartitionInfo: ...
    def peek_current_partition(self, available_partitions: Sequence[int] | None, num_partitions: int) -> int: ...
    def is_partition_changed(self, info: StickyPartitionInfo | None) -> bool: ...
    def update_partition_info(
        self,
        info: StickyPartitionInfo | None,
        appended_bytes: int,
        enable_switch: bool,
        available_partitions: Sequence[int] | None,
        num_partitions: int,
    ) -> bool:
        """Returns True when it switched to a new sticky partition."""
    def update_partition_load_stats(
        self, queue_sizes: Sequence[int] | None, partition_ids: Sequence[int] | None, num_partitions: int = -1
    ) -> None: ...
