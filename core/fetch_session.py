"""KIP-227 incremental fetch sessions, the client's side (Java's FetchSessionHandler + FetchMetadata), sans-I/O.
Pure Python: it runs once per Fetch request and answer, never per record.

One `FetchSession` per broker node. Each Fetch is built from what the fetcher wants from that node now
({partition: its request data}, data compared by equality: fetch offset, partition max bytes, ...):

- full fetch (epoch 0, INITIAL_EPOCH): every wanted partition is sent; session_id 0 asks for a new session, a
  non-zero one closes that session on the broker and asks for a new one. The answer carries every partition; its
  session_id is the new session (0: the broker offers none, and the next fetch is full again: Tansu, librdkafka's mock);
- incremental fetch (epoch 1, 2, ... wrapping from 2**31 - 1 to 1): only partitions added or whose data changed are
  sent, removed ones go in `forgotten_topics_data`; the broker fetches the others from the offsets it keeps (the last
  ones sent). The answer lists only partitions with news (records, an error, changed watermarks);
- close (epoch -1, FINAL_EPOCH) with the session's id and no partitions: the broker drops the session.

Answers (Java's handleResponse/handleError): FETCH_SESSION_ID_NOT_FOUND, or a session's full answer not naming exactly
its partitions -> the next fetch is full with session_id 0; any other top-level error (INVALID_FETCH_SESSION_EPOCH,
...), a lost connection, a request not sent, an incremental answer naming a partition outside the session -> the next
fetch is full with the old session_id (close it, attempt a new one). An unusable answer is dropped
(`handle_response` returns False).
Unlike Java, a full answer without a session (session_id 0) may omit partitions (no news for them): Java's check
guards a session's bookkeeping, and brokers that offer no sessions owe it nothing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from cykafka.protocol.error_codes import ErrorCode

INVALID_SESSION_ID = 0  # no session
INITIAL_EPOCH = 0  # full fetch: create (or recreate) a session
FINAL_EPOCH = -1  # full fetch without a session; with a session id: close it
MAX_EPOCH = 2**31 - 1

K = TypeVar("K", bound=Hashable)  # a partition
D = TypeVar("D")  # what the request says of it


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: FINAL stays FINAL, the largest int32 wraps to 1 (0 would mean a full fetch)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


@dataclass(frozen=True, slots=True)
class FetchPlan(Generic[K, D]):
    """What one Fetch request carries."""

    session_id: int
    epoch: int
    to_send: dict[K, D]  # the partitions listed in the request
    to_forget: list[K]  # forgotten_topics_data
    partitions: dict[K, D]  # every partition the request fetches (sent and implied): the answer may name these

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSession(Generic[K, D]):
    """One broker node's fetch session: build() before each Fetch to it, then exactly one of handle_response() /
    handle_error() for its answer."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH  # of the next request
        self.partitions: dict[K, D] = {}  # the session's partitions as last sent, in the order the broker has them

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def build(self, wanted: Mapping[K, D]) -> FetchPlan[K, D]:
        """The next Fetch for `wanted`; the session's partitions become `wanted`."""
        if self.full:
            self.partitions = dict(wanted)
            return FetchPlan(self.session_id, self.epoch, dict(wanted), [], dict(self.partitions))
        to_send: dict[K, D] = {}
        to_forget: list[K] = []
        for tp, data in list(self.partitions.items()):
            if tp not in wanted:
                del self.partitions[tp]
                to_forget.append(tp)
            elif wanted[tp] != data:
                self.partitions[tp] = to_send[tp] = wanted[tp]
        for tp, data in wanted.items():
            if tp not in self.partitions:
                self.partitions[tp] = to_send[tp] = data
        return FetchPlan(self.session_id, self.epoch, to_send, to_forget, dict(self.partitions))

    def handle_response(self, error_code: int, session_id: int, answered: Iterable[K]) -> bool:
        """The answer to the last built request: its top-level error code and session_id, the partitions it names.
        False: the answer cannot be used (an error, or partitions missing from a full / extra in an incremental one)."""
        if error_code != ErrorCode.NONE:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.reset()
            else:
                self.epoch = INITIAL_EPOCH  # close the session, attempt a new one
            return False
        names = set(answered)
        if self.full:
            if session_id == INVALID_SESSION_ID:  # no session: partitions it omits just have no news
                self.reset()
                return True
            if names != set(self.partitions):  # Java: a session's full answer names exactly its partitions
                self.reset()
                return False
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
            return True
        if not names <= set(self.partitions):
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:  # the broker closed the session
            self.reset()
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request was not sent or its answer was lost (a disconnect, a timeout): the next fetch is full and
        replaces the session, if the broker still has it."""
        self.epoch = INITIAL_EPOCH

    def reset(self) -> None:
        self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH

    def close(self) -> FetchPlan[K, D] | None:
        """The Fetch that closes the session (epoch -1, no partitions), None without a session; the session is then
        forgotten here, answered or not."""
        if self.session_id == INVALID_SESSION_ID:
            return None
        plan: FetchPlan[K, D] = FetchPlan(self.session_id, FINAL_EPOCH, {}, [], {})
        self.reset()
        self.partitions = {}
        return plan
