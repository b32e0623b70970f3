"""FetchCollector (Java's): turns the FetchBuffer's completed fetches into what poll and poll_batch return, on the
caller's thread.

Owns:
- collecting: up to max_records from the buffer's consumable fetches into a `RecordSink` (a list of records, records
  by partition, an Arrow batch), moving each partition's position (and the leader epoch it was reached in, KIP-320)
  as records are handed out; a partition's error is raised by a collect that took nothing yet (records already taken
  are returned first, never lost);
- the records a poll returns: `build_records`, the one place a fetch becomes ConsumerRecords;
- the decoder of a partition's records (`decoder`, the compiled PartitionFetch with check.crcs, the codecs and
  read_committed; the Fetcher files answers with it);
- read_committed: the decoder drops aborted transactions (the broker's list, or the markers); a fetch blocked on a
  transaction whose marker is not in its data looks ahead (decoded again with the markers of the partition's later
  answers), waits for the next answer, or is fetched again later;
- fetch-size growth: `grow_fetch_size`, the one doubling of a partition's max.partition.fetch.bytes (a batch larger
  than it, a transaction that may not fit), back to the config's once a fetch is done.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from cykafka.config import ConsumerConfig
from cykafka.core import ArrowBatchBuilder, ConsumerRecord, PartitionFetch
from cykafka.errors import KafkaError
from cykafka.fetch_buffer import CompletedFetch, FetchBuffer
from cykafka.ports import Clock, TopicPartition
from cykafka.subscription_state import PartitionState, SubscriptionState

if TYPE_CHECKING:
    from typing_extensions import Buffer

MAX_FETCH_SIZE_BYTES = 2**31 - 1  # the protocol's int32 partition_max_bytes


def grow_fetch_size(state: PartitionState) -> None:
    """The one fetch-size growth: a partition's next fetches ask for twice as much (up to the protocol's int32)."""
    state.fetch_size_bytes = min(2 * state.fetch_size_bytes, MAX_FETCH_SIZE_BYTES)


def build_records(fetch: PartitionFetch, max_records: int) -> list[ConsumerRecord]:
    """The records poll returns, at most max_records of fetch: the one place a Consumer builds them."""
    return fetch.records(max_records)


class RecordSink(Protocol):
    """Where Consumer.poll_into puts records: take(fetch, max_records) takes at most max_records of one partition's
    fetch and returns how many it took (0 with records left: it is full, the poll ends)."""

    def take(self, fetch: PartitionFetch, max_records: int) -> int: ...


class RecordList:
    """A RecordSink collecting ConsumerRecords in poll order (`records`): what Consumer.poll returns."""

    def __init__(self) -> None:
        self.records: list[ConsumerRecord] = []

    def take(self, fetch: PartitionFetch, max_records: int) -> int:
        got = build_records(fetch, max_records)
        self.records.extend(got)
        return len(got)


class RecordsByPartition:
    """A RecordSink collecting ConsumerRecords by partition (`by_partition`, aiokafka's getmany shape): one dict step
    per run of a partition's records, none per record."""

    def __init__(self) -> None:
        self.by_partition: dict[TopicPartition, list[ConsumerRecord]] = {}

    def take(self, fetch: PartitionFetch, max_records: int) -> int:
        got = build_records(fetch, max_records)
        if got:
            first = got[0]
            tp = TopicPartition(first.topic, first.partition)
            records = self.by_partition.get(tp)
            if records is None:
                self.by_partition[tp] = got
            else:
                records.extend(got)
        return len(got)


class ArrowSink:
    """A RecordSink filling an ArrowBatchBuilder in C (what Consumer.poll_batch returns)."""

    def __init__(self, builder: ArrowBatchBuilder) -> None:
        self.builder = builder

    def take(self, fetch: PartitionFetch, max_records: int) -> int:
        return fetch.arrow_into(self.builder, max_records)


class FetchCollector:
    """See the module docstring. `wakeup` tells the network thread there is room in the buffer or a partition to
    fetch again."""

    def __init__(self, config: ConsumerConfig, subscriptions: SubscriptionState, buffer: FetchBuffer, clock: Clock,
                 decompress: Callable[[int, memoryview], Buffer], wakeup: Callable[[], None]) -> None:
        self.config = config
        self.subscriptions = subscriptions
        self.buffer = buffer
        self.clock = clock
        self.decompress = decompress  # codec id, compressed bytes -> bytes: the composition root's codecs
        self.wakeup = wakeup

    def decoder(self, tp: TopicPartition, records: bytes, fetch_offset: int, aborted_transactions: Any,
                markers_after: list[tuple[int, int, bool]] | None = None) -> PartitionFetch:
        """The compiled decoder of one partition's records from a Fetch answer."""
        return PartitionFetch(tp.topic, tp.partition, records, fetch_offset, check_crcs=self.config.check_crcs,
                              decompress=self.decompress, read_committed=self.config.read_committed,
                              aborted_transactions=aborted_transactions, markers_after=markers_after)

    def has_consumable(self) -> bool:
        """With the lock held: a completed fetch poll may hand out now."""
        return self.buffer.next_consumable() is not None

    def collect(self, max_records: int, sink: RecordSink) -> int:
        """Takes up to max_records records from the buffer into sink; returns how many."""
        sub, taken = self.subscriptions, 0
        while taken < max_records:
            with sub.lock:
                if not taken:
                    sub.raise_error()
                item = self.buffer.next_consumable()
                if item is None:
                    break
            try:
                got = sink.take(item.fetch, max_records - taken)  # decoded without the lock: only this thread does
            except KafkaError:
                if taken:
                    break  # the next poll meets it again, first
                raise
            taken += got
            with sub.lock:
                state = sub.states.get(item.tp)
                if state is None or state.epoch != item.epoch:
                    continue
                freed = self.buffer.freed
                if not self._advance(item, state, got):
                    break  # more data, none taken: the sink is full (an Arrow column at 2 GiB), finish it first
                wake = self.buffer.freed != freed and not state.in_flight
            if wake:  # room in the buffer, or a partition to fetch again (else its answer wakes the loop)
                self.wakeup()
        return taken

    def _advance(self, item: CompletedFetch, state: PartitionState, got: int) -> bool:
        """With the lock held, after got records of item were taken: the position moves, and item stays, is decoded
        again (look-ahead), waits, or leaves the buffer. False: the sink took nothing of what is left."""
        fetch = item.fetch
        if fetch.next_offset != state.position:  # moved: the epoch of the batch it was reached in (KIP-320)
            state.position, state.offset_epoch = fetch.next_offset, fetch.last_epoch
        if fetch.blocked_on_open_transaction and self._look_ahead(item, state):
            return True
        if fetch.blocked_on_open_transaction:  # the transaction is open: fetch it again later
            if fetch.bytes_size >= state.fetch_size_bytes:  # a full answer: the transaction may not fit
                grow_fetch_size(state)
            state.seek(fetch.next_offset, offset_epoch=state.offset_epoch)
            state.not_before_ms = self.clock.monotonic_ms() + self.config.retry_backoff_ms
            self.buffer.release(item)
        elif fetch.done:
            state.fetch_size_bytes = self.config.max_partition_fetch_bytes  # grown for a transaction: back
            self.buffer.release(item)
        elif not got:
            return False
        return True

    def _look_ahead(self, item: CompletedFetch, state: PartitionState) -> bool:
        """With the lock held, item blocked on a transaction whose marker is not in its data: decodes it again with
        the markers of the partition's answers fetched past it (the fetcher runs ahead), or leaves it waiting for
        more of them. False when no more can come (the transaction is open at the last stable offset, or the
        broker's buffer room is used up): then it is fetched again later."""
        markers = [marker for b in self.buffer.later(item) for marker in b.fetch.transaction_markers()]
        if len(markers) > item.markers_seen:
            item.fetch = self.decoder(item.tp, item.records, item.fetch.next_offset, item.aborted_transactions,
                                      markers)
            item.markers_seen = len(markers)
            return True
        stable = state.last_stable_offset if state.last_stable_offset >= 0 else state.high_watermark
        room_bytes = self.buffer.room_bytes(item.node_id, self.config.fetch_max_bytes)
        if state.fetch_offset is not None and state.fetch_offset < stable and room_bytes > 0:
            self.buffer.wait(item)  # the next answer of this partition clears it
            return True
        return False
