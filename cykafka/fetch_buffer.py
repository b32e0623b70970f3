"""FetchBuffer (Java's): the completed fetches not yet handed out, in arrival order, and the only owner of draining
(taking a completed fetch out of the buffer, whether consumed, stale or fetched again later).

A `CompletedFetch` is one partition's records from one Fetch answer: the compiled decoder (`PartitionFetch`,
cykafka.core) the caller's poll decodes lazily, the seek epoch it was fetched in (an older one is stale: dropped),
the broker that sent it and its size (the Fetcher asks each broker for at most fetch.max.bytes minus what its data
holds here), and for read_committed look-ahead the raw records and the aborted-transaction list (decoded again with
the markers found past it: cykafka/fetch_collector.py).

It also counts each partition's answers (`fetched_ahead`: how far the Fetcher may read ahead of a caller that does
not poll, FETCH_AHEAD_ANSWERS) and bumps `freed` whenever an answer leaves or starts waiting (the collector wakes the
network thread only then: nothing else changes what it may send).

Runs under the SubscriptionState's lock (cykafka/subscription_state.py): the Fetcher adds on the network thread,
the FetchCollector takes on the caller's; every method expects the lock held.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cykafka.core import PartitionFetch
from cykafka.ports import TopicPartition
from cykafka.subscription_state import SubscriptionState

# How far the Fetcher reads ahead of a caller that does not poll, once a partition's answers reach its end (records
# trickling in): a partition holding this many answers the caller has not taken is not fetched again until it takes
# one (Java fetches a partition only with none of its data buffered, librdkafka up to queued.min.messages; behind the
# end, catching up, only the bytes bound holds: cykafka/fetcher.py). Two: the next answer is already in flight or
# here while the caller works on one (a polling caller never waits for a fetch), and a caller busy elsewhere costs two
# answers, not one per Fetch round trip (the network thread spent ~45% of a core filing them at 10,000 records/s:
# docs/consumer.md).
FETCH_AHEAD_ANSWERS = 2


@dataclass(slots=True, eq=False)
class CompletedFetch:
    tp: TopicPartition
    epoch: int
    fetch: PartitionFetch
    node_id: int
    size_bytes: int
    records: bytes  # kept to decode again with the markers found past it (read_committed look-ahead)
    aborted_transactions: Any
    markers_seen: int = 0  # look-ahead markers the fetch was built with
    waiting: bool = False  # blocked on a transaction until more of its partition arrives: not handed out (set by
    # FetchBuffer.wait, cleared by the partition's next answer or the fetch's release)


class FetchBuffer:
    """The completed fetches, shared by the network and the caller's thread under the SubscriptionState's lock."""

    def __init__(self, subscriptions: SubscriptionState) -> None:
        self.subscriptions = subscriptions
        self.items: deque[CompletedFetch] = deque()
        self.buffered_bytes: dict[int, int] = defaultdict(int)  # node id -> bytes of its answers in the buffer
        self.buffered_answers: dict[int, int] = defaultdict(int)  # node id -> its answers (per partition) here
        self.node_changed: Callable[[int], None] | None = None  # told a node's counts after each add and release
        # the waiting fetches by partition: add() reads only its own partition's, not the whole buffer (a caller
        # slow for a second leaves thousands of small answers here, and each add walking them all cost the network
        # thread quadratic time)
        self._waiting: dict[TopicPartition, list[CompletedFetch]] = {}
        self._answers: dict[tuple[TopicPartition, int], int] = {}  # (partition, seek epoch) -> its answers here
        self.freed = 0  # bumped when an answer leaves or starts waiting: the Fetcher may fetch its partition again

    def add(self, item: CompletedFetch) -> None:
        """A partition's new answer; a waiting one of the same partition may find its marker in it."""
        if self._waiting:
            for waiting in self._waiting.pop(item.tp, ()):
                waiting.waiting = False
        self.items.append(item)
        self.buffered_bytes[item.node_id] += item.size_bytes
        self.buffered_answers[item.node_id] += 1
        key = item.tp, item.epoch
        self._answers[key] = self._answers.get(key, 0) + 1
        if self.node_changed is not None:
            self.node_changed(item.node_id)

    def wait(self, item: CompletedFetch) -> None:
        """item is not handed out until its partition's next answer arrives (a transaction's marker may be in it)."""
        if not item.waiting:
            item.waiting = True
            self._waiting.setdefault(item.tp, []).append(item)
            self.freed += 1

    def release(self, item: CompletedFetch) -> None:
        """item leaves the buffer (consumed, stale, or to be fetched again)."""
        self.items.remove(item)
        self.buffered_bytes[item.node_id] -= item.size_bytes
        self.buffered_answers[item.node_id] -= 1
        self.freed += 1
        key = item.tp, item.epoch
        left = self._answers[key] - 1
        if left:
            self._answers[key] = left
        else:
            del self._answers[key]
        if item.waiting:
            item.waiting = False
            waiting = self._waiting[item.tp]
            waiting.remove(item)
            if not waiting:
                del self._waiting[item.tp]
        if self.node_changed is not None:
            self.node_changed(item.node_id)

    def drop_unassigned(self) -> None:
        """Drains what belongs to partitions no longer assigned."""
        states = self.subscriptions.states
        for item in [b for b in self.items if b.tp not in states]:
            self.release(item)

    def next_consumable(self) -> CompletedFetch | None:
        """The first completed fetch poll may hand out; stale ones are drained on the way, and a partition that is
        paused or waits for a transaction's marker holds back its later fetches (offsets go in order)."""
        states = self.subscriptions.states
        held: set[TopicPartition] = set()
        stale: list[CompletedFetch] = []
        found = None
        for item in self.items:  # usually the first: no copy of the buffer per call
            state = states.get(item.tp)
            if state is None or state.epoch != item.epoch:
                stale.append(item)
            elif item.tp in held or item.waiting or state.paused:
                held.add(item.tp)
            else:
                found = item
                break
        for item in stale:
            self.release(item)
        return found

    def later(self, item: CompletedFetch) -> list[CompletedFetch]:
        """The completed fetches of item's partition and seek epoch other than item (fetched past it)."""
        return [b for b in self.items if b.tp == item.tp and b.epoch == item.epoch and b is not item]

    def fetched_ahead(self, tp: TopicPartition, epoch: int) -> bool:
        """tp holds FETCH_AHEAD_ANSWERS answers of its seek epoch the caller has not taken, none waiting for a
        transaction's marker (a waiting one looks ahead within fetch.max.bytes; answers of an older epoch are stale,
        dropped by the caller's next poll): at its end, the Fetcher does not fetch it until the caller takes one."""
        return self._answers.get((tp, epoch), 0) >= FETCH_AHEAD_ANSWERS and tp not in self._waiting

    def room_bytes(self, node_id: int, fetch_max_bytes: int) -> int:
        """What fetch.max.bytes leaves for node_id's next answers."""
        return fetch_max_bytes - self.buffered_bytes[node_id]
