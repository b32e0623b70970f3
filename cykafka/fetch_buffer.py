"""FetchBuffer (Java's): the completed fetches not yet handed out, in arrival order, and the only owner of draining
(taking a completed fetch out of the buffer, whether consumed, stale or fetched again later).

A `CompletedFetch` is one partition's records from one Fetch answer: the compiled decoder (`PartitionFetch`,
cykafka.core) the caller's poll decodes lazily, the seek epoch it was fetched in (an older one is stale: dropped),
the broker that sent it and its size (the Fetcher asks each broker for at most fetch.max.bytes minus what its data
holds here), and for read_committed look-ahead the raw records and the aborted-transaction list (decoded again with
the markers found past it: cykafka/fetch_collector.py).

Runs under the SubscriptionState's lock (cykafka/subscription_state.py): the Fetcher adds on the network thread,
the FetchCollector takes on the caller's; every method expects the lock held.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

from cykafka.core import PartitionFetch
from cykafka.ports import TopicPartition
from cykafka.subscription_state import SubscriptionState


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
        # the waiting fetches by partition: add() reads only its own partition's, not the whole buffer (a caller
        # slow for a second leaves thousands of small answers here, and each add walking them all cost the network
        # thread quadratic time)
        self._waiting: dict[TopicPartition, list[CompletedFetch]] = {}

    def add(self, item: CompletedFetch) -> None:
        """A partition's new answer; a waiting one of the same partition may find its marker in it."""
        if self._waiting:
            for waiting in self._waiting.pop(item.tp, ()):
                waiting.waiting = False
        self.items.append(item)
        self.buffered_bytes[item.node_id] += item.size_bytes

    def wait(self, item: CompletedFetch) -> None:
        """item is not handed out until its partition's next answer arrives (a transaction's marker may be in it)."""
        if not item.waiting:
            item.waiting = True
            self._waiting.setdefault(item.tp, []).append(item)

    def release(self, item: CompletedFetch) -> None:
        """item leaves the buffer (consumed, stale, or to be fetched again)."""
        self.items.remove(item)
        self.buffered_bytes[item.node_id] -= item.size_bytes
        if item.waiting:
            item.waiting = False
            waiting = self._waiting[item.tp]
            waiting.remove(item)
            if not waiting:
                del self._waiting[item.tp]

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

    def room_bytes(self, node_id: int, fetch_max_bytes: int) -> int:
        """What fetch.max.bytes leaves for node_id's next answers."""
        return fetch_max_bytes - self.buffered_bytes[node_id]
