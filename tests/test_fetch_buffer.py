"""The FetchBuffer's work per call does not grow with what the buffer holds (cykafka/fetch_buffer.py): a caller slow
for a second leaves thousands of small answers there while the network thread goes on adding (the fetcher runs
ahead), so adding an answer reads only its own partition's waiting fetches, and finding the next one to hand out stops
at the first that may go. Counted, not timed: the buffer's deque counts the entries walked."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from cykafka.fetch_buffer import CompletedFetch, FetchBuffer
from cykafka.ports import TopicPartition
from cykafka.subscription_state import PartitionState, SubscriptionState

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


class _CountingDeque(deque[Any]):
    walked = 0  # entries handed out by iteration

    def __iter__(self) -> Iterator[Any]:
        for entry in super().__iter__():
            self.walked += 1
            yield entry


def _buffer(*partitions: TopicPartition) -> FetchBuffer:
    subscriptions = SubscriptionState(1024)
    for tp in partitions:
        subscriptions.states[tp] = PartitionState(fetch_size_bytes=1024, position=0, fetch_offset=0)
    buffer = FetchBuffer(subscriptions)
    buffer.items = _CountingDeque()
    return buffer


def _fetch(tp: TopicPartition, epoch: int = 0) -> CompletedFetch:
    return CompletedFetch(tp, epoch, None, 1, 100, b"", None)  # type: ignore[arg-type]  # the buffer reads no records


def test_adding_an_answer_reads_only_its_own_partitions_waiting_fetches() -> None:
    buffer = _buffer(A, B)
    held_a, held_b = _fetch(A), _fetch(B)
    for item in (held_a, held_b, *(_fetch(B) for _ in range(1000))):
        buffer.add(item)
    buffer.wait(held_a)
    buffer.wait(held_b)
    walked = buffer.items.walked  # type: ignore[attr-defined]
    buffer.add(_fetch(A))
    assert buffer.items.walked == walked  # type: ignore[attr-defined]  # the build before walked all 1,002
    assert not held_a.waiting and held_b.waiting  # A's answer frees A's waiting fetch only
    assert buffer.next_consumable() is held_a


def test_the_next_fetch_to_hand_out_is_found_without_walking_the_rest() -> None:
    buffer = _buffer(A, B)
    first = _fetch(A)
    for item in (first, *(_fetch(A) for _ in range(1000))):
        buffer.add(item)
    assert buffer.next_consumable() is first
    assert buffer.items.walked == 1  # type: ignore[attr-defined]  # the build before copied all 1,001 per call


def test_stale_paused_and_waiting_fetches_are_passed_over_in_order() -> None:
    buffer = _buffer(A, B)
    stale, waiting, after_waiting, other = _fetch(A, epoch=-1), _fetch(A), _fetch(A), _fetch(B)
    for item in (stale, waiting, after_waiting, other):
        buffer.add(item)
    buffer.wait(waiting)
    assert buffer.next_consumable() is other  # A's later fetch waits behind A's waiting one (offsets in order)
    assert stale not in buffer.items  # drained on the way
    buffer.subscriptions.states[B].paused = True
    assert buffer.next_consumable() is None
    buffer.release(waiting)  # fetched again later: it waits no more
    assert not waiting.waiting and buffer.next_consumable() is after_waiting
    buffer.add(_fetch(A))  # nothing of A is waiting: nothing to free
    assert buffer._waiting == {}
