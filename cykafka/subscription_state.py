"""SubscriptionState (Java's): what the consumer reads and where it stands, shared by the caller's thread and the
network thread under one lock (`lock`, with the condition `data_ready` the caller waits on). The lock hands the GIL
back (core/lock.pyx `ClientLock(hand_back=True)`): the network thread, having waited for it while the caller's poll()
held it, gets the GIL at the caller's next poll() rather than after a switch interval.

Owns: the assignment (per assigned partition a `PartitionState`: position, fetch offset, leader epochs, KIP-320's
awaiting validation, the seek epoch, paused, backoff, watermarks, a pending reset, an error poll raises) and how the
consumer reads (`subscribed`: group mode, with the rebalance `listener`; the subscribed topics or pattern themselves
are the group member's, core/group.py). Nothing here sends a request or decodes a record: the Fetcher
(cykafka/fetcher.py) fetches for these partitions, the FetchBuffer (cykafka/fetch_buffer.py) holds what came, the
FetchCollector (cykafka/fetch_collector.py) moves positions as records are handed out, the OffsetFetcher
(cykafka/offset_fetcher.py) resolves missing positions and validates them.

`PartitionState`, field by field:
- `position` (the next offset poll returns) and `offset_epoch` (the leader epoch of the batch it was reached in),
  `fetch_offset` (the next offset to fetch: past the position while fetched data waits in the buffer),
  `leader_epoch` (the partition leader's epoch the position was checked against, sent in every Fetch as
  current_leader_epoch), `awaiting_validation` (KIP-320: not fetched until the leader confirms the position),
  `epoch` (bumped by every seek or reset: fetched data and answers of an older epoch are dropped);
- `fetch_size_bytes` (max.partition.fetch.bytes, grown by the FetchCollector's one rule), `paused`, `in_flight`,
  `not_before_ms` (backoff), the watermarks of the last answer, `reset` (earliest / latest / none: resolved by the
  caller's next poll), `error` (raised by the caller's next poll).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from cykafka.core import ClientLock, ConsumerRecord
from cykafka.errors import InvalidArgumentError, KafkaError
from cykafka.ports import TopicPartition, checked_partitions
from cykafka.ports.values import OffsetAndMetadata


def divergence(position: int, end_offset: int, end_epoch: int) -> tuple[int, int] | None:
    """What a leader's OffsetForLeaderEpoch answer (end_offset, end_epoch: where the epoch of the position's last
    record ends in its log) says of the position (Java's SubscriptionState.maybeCompleteValidation): None, the log
    holds it; else the log was truncated under it and (offset, leader epoch) is the first offset known to diverge,
    (-1, -1) when the leader knows no epoch that old (UNDEFINED: where it diverges is unknown)."""
    if end_offset < 0 or end_epoch < 0:
        return -1, -1
    if end_offset < position:
        return end_offset, end_epoch
    return None


@dataclass(slots=True)
class PartitionState:
    fetch_size_bytes: int  # max.partition.fetch.bytes, grown when a batch does not fit
    position: int | None = None
    offset_epoch: int = -1  # leader epoch of the batch the position was reached in (Java's offsetEpoch); -1 unknown
    leader_epoch: int = -1  # the leader's epoch the position was checked against (Fetch current_leader_epoch)
    awaiting_validation: bool = False  # KIP-320: not fetched until OffsetForLeaderEpoch confirms the position
    fetch_offset: int | None = None
    epoch: int = 0
    reset: str | None = None  # "earliest" / "latest": the caller resolves it on its next poll
    paused: bool = False
    in_flight: bool = False
    not_before_ms: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    error: KafkaError | None = None  # raised by the caller's next poll
    # KIP-392: the replica the leader told us to fetch from (client.rack), until the ms given (metadata.max.age.ms
    # after the answer, Java's) or until it errs, or metadata no longer lists it, or its connection fails
    read_replica: int | None = None
    read_replica_until_ms: int = 0

    def seek(self, offset: int | None, reset: str | None = None, *, offset_epoch: int = -1,
             validate: bool = False) -> None:
        """A new position (None: unknown, `reset` says how to find it) reached in leader epoch offset_epoch (-1:
        unknown); fetched data of the old one is dropped. validate: check it with the leader before fetching (a
        committed offset, a seek with a leader epoch, a leader change; needs offset_epoch)."""
        self.position = self.fetch_offset = offset
        self.offset_epoch = offset_epoch if offset is not None else -1
        self.awaiting_validation = validate and offset is not None and offset_epoch >= 0
        self.reset = reset
        self.epoch += 1
        self.not_before_ms = 0


class SubscriptionState:
    """The assigned partitions' states and the way the consumer reads; see the module docstring."""

    def __init__(self, max_partition_fetch_bytes: int) -> None:
        self.lock = ClientLock(hand_back=True)
        self.data_ready = threading.Condition(self.lock)  # type: ignore[arg-type]  # threading.Lock's interface
        self.states: dict[TopicPartition, PartitionState] = {}
        self.subscribed = False  # group mode (subscribe()), else assign()'s partitions or none
        self.listener: object = None  # the rebalance listener of subscribe()
        self._max_partition_fetch_bytes = max_partition_fetch_bytes

    def assigned(self) -> set[TopicPartition]:
        with self.lock:
            return set(self.states)

    def assign(self, tps: Iterable[TopicPartition]) -> None:
        """With the lock held: exactly these partitions; a partition kept keeps its state, a new one has no
        position (resolved by the next poll)."""
        kept = {tp: self.states[tp] for tp in tps if tp in self.states}
        self.states = {tp: kept.get(tp) or PartitionState(self._max_partition_fetch_bytes) for tp in tps}

    def state(self, tp: object, call: str) -> PartitionState:
        """With the lock held: an assigned partition's state; InvalidArgumentError naming `call` otherwise."""
        (checked,) = checked_partitions([tp], call)
        state = self.states.get(checked)
        if state is None:
            raise InvalidArgumentError(f"{call}: {checked} is not assigned to this consumer (assign() it first)")
        return state

    def seek_to(self, partitions: Iterable[TopicPartition] | None, reset: str, call: str) -> None:
        """seek_to_beginning / seek_to_end: the positions become a reset resolved on the next poll."""
        with self.lock:
            tps = list(self.states) if partitions is None else checked_partitions(partitions, call)
            for tp in tps:
                self.state(tp, call).seek(None, reset)

    def set_paused(self, partitions: Iterable[TopicPartition], paused: bool, call: str) -> None:
        tps = checked_partitions(partitions, call)
        with self.lock:
            for tp in tps:
                self.state(tp, call).paused = paused

    def paused(self) -> set[TopicPartition]:
        with self.lock:
            return {tp for tp, state in self.states.items() if state.paused}

    def positions(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The known positions, as offsets to commit (with the leader epoch they were reached in)."""
        with self.lock:
            return {tp: OffsetAndMetadata(s.position, leader_epoch=s.offset_epoch)
                    for tp, s in self.states.items() if s.position is not None}

    def missing_positions(self) -> dict[TopicPartition, tuple[int, str | None]]:
        """{partition: (its seek epoch, its pending reset)} of the partitions without a position."""
        with self.lock:
            return {tp: (s.epoch, s.reset) for tp, s in self.states.items() if s.position is None}

    def rewind(self, records: Iterable[ConsumerRecord]) -> None:
        """Each partition of records (ConsumerRecords handed out in order) sought back to its first one there, when
        its position is past it: they are read again by the next poll (a deserializer failed on the first)."""
        first: dict[TopicPartition, ConsumerRecord] = {}
        for record in records:
            first.setdefault(TopicPartition(record.topic, record.partition), record)
        with self.lock:
            for tp, record in first.items():
                state = self.states.get(tp)
                if state is not None and state.position is not None and state.position > record.offset:
                    epoch = record.leader_epoch
                    state.seek(record.offset, offset_epoch=-1 if epoch is None else epoch)

    def raise_error(self) -> None:
        """With the lock held: raises (and clears) the first partition's pending error."""
        for state in self.states.values():
            if state.error is not None:
                error, state.error = state.error, None
                raise error

    def wake(self) -> None:
        """Wakes the caller waiting in poll (news from the network thread, or a close from another thread)."""
        with self.lock:
            self.data_ready.notify_all()
