"""enable.partition.eof (librdkafka's end-of-partition event) for a consumer whose poll returns lists: owns when a
partition counts as at its end and that each end is reported once.

The event goes to `partition_eof_cb(TopicPartition, offset)` on the caller's thread, at the end of poll() /
poll_batch() (docs/consumer.md says why a callback and not a marker in the list). A partition is at its end when its
position has reached the end the last Fetch answer gave (the high watermark; with read_committed the last stable
offset); it is reported again only after it fell behind its end (new records came, or a seek back) and reached it
again, as librdkafka does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from cykafka.ports import TopicPartition

log = logging.getLogger("cykafka.consumer")
PartitionEofCallback = Callable[[TopicPartition, int], object]


class EndOfPartition:
    """The partitions at their end since the last report; `report(states)` calls the callback for the new ones."""

    def __init__(self, callback: PartitionEofCallback, read_committed: bool) -> None:
        self.callback = callback
        self.read_committed = read_committed
        self._reported: dict[TopicPartition, int] = {}  # partition -> the end offset it was reported at

    def due(self, states: Mapping[TopicPartition, Any]) -> list[tuple[TopicPartition, int]]:
        """(partition, end offset) of every partition newly at its end; `states` the fetcher's PartitionStates
        (position, high_watermark, last_stable_offset), read under the subscription's lock."""
        due = []
        for tp, state in states.items():
            end = state.last_stable_offset if self.read_committed and state.last_stable_offset >= 0 else \
                state.high_watermark
            if state.position is None or end < 0 or state.position < end:
                self._reported.pop(tp, None)  # behind its end: the next arrival there is news
                continue
            if self._reported.get(tp) != state.position:
                self._reported[tp] = state.position
                due.append((tp, state.position))
        for tp in [tp for tp in self._reported if tp not in states]:
            del self._reported[tp]  # unassigned: forgotten
        return due

    def report(self, due: list[tuple[TopicPartition, int]]) -> None:
        """Calls the callback for each; one that raises is logged at ERROR (the records poll took are not lost)."""
        for tp, offset in due:
            try:
                self.callback(tp, offset)
            except Exception:
                log.exception("partition_eof_cb raised for %s [%s] at offset %s", tp.topic, tp.partition, offset)
