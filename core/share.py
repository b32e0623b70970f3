"""Share groups (KIP-932), sans-I/O: a share group member's heartbeat state machine and a share session per broker.

Pure Python, no I/O, no clock, no thread: time comes in as `now_ms`, answers as decoded bodies; each method returns
what to send (a request body) or what changed, and the caller (cykafka/share_consumer.py's network thread) acts.

`ShareMember` (Java's ShareMembershipManager, narrowed to what a share member does): the member id is the client's
own (a random id kept for the member's life, KIP-1082); ShareGroupHeartbeat with epoch 0 joins with the subscribed
topic names, later heartbeats carry them only when they changed (null otherwise), every `heartbeat_interval_ms` the
coordinator sets; the answer's assignment (topic ids and partitions) replaces the member's at once (a share member
revokes nothing: records are locked one by one, not partitions). UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH: the
member lost its place, it joins again at epoch 0 with the same id and no assignment. A retriable error (the
coordinator moved or is loading) retries after `retry_backoff_ms`; any other error is fatal (`error`). Epoch -1
leaves.

`ShareSession` (Java's ShareSessionHandler): one per broker. Epoch 0 opens the session with every partition the
member fetches from that broker; the next requests (ShareFetch or ShareAcknowledge, one at a time) carry epoch 1, 2,
... (after 2^31-1 comes 1), only the partitions new to the session and those with acknowledgements, and the
partitions to forget; -1 closes it (the broker then releases what the member still holds there). A session the
broker lost (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH) starts again at epoch 0; acknowledgements never
go at epoch 0 (the broker refuses them there): what was pending fails, and the records come back to the group.

`Acknowledgements`: one partition's acknowledgements as the wire wants them: ranges of consecutive offsets of one
type (0 gap, 1 accept, 2 release, 3 reject, 4 renew: the lock of a record still being processed starts again,
KIP-1222; a ShareAcknowledge carrying one says so with is_renew_ack, which needs v2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from cykafka.errors import AuthenticationError, AuthorizationError, KafkaError, UnsupportedVersionError
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, kinds_of

INT32_MAX = 2**31 - 1
TopicIdPartition = tuple[UUID, int]

# ShareMember states
UNSUBSCRIBED, JOINING, STABLE, LEAVING, LEFT, FATAL = "UNSUBSCRIBED", "JOINING", "STABLE", "LEAVING", "LEFT", "FATAL"


class ShareMember:
    """A share group member's heartbeats (module docstring)."""

    def __init__(self, group_id: str, member_id: str, retry_backoff_ms: int, rack_id: str | None = None) -> None:
        self.group_id = group_id
        self.member_id = member_id
        self.retry_backoff_ms = retry_backoff_ms
        self.rack_id = rack_id
        self.state = UNSUBSCRIBED
        self.epoch = 0
        self.heartbeat_interval_ms = 5000  # until the coordinator says (Java's share group default)
        self.topics: frozenset[str] = frozenset()
        self.assignment: frozenset[TopicIdPartition] = frozenset()
        self.assignment_version = 0  # bumped whenever the assignment changes
        self.error: KafkaError | None = None
        self.in_flight = False
        self._send_topics = True  # the next heartbeat carries the subscription (joining, or it changed)
        self._next_ms = 0

    def subscribe(self, topics: Iterable[str]) -> None:
        """The topics to subscribe to (empty: none; the member leaves the group)."""
        topics = frozenset(topics)
        if topics == self.topics and self.state not in (UNSUBSCRIBED, LEFT):
            return
        self.topics = topics
        if not topics:
            self.leave()
            return
        if self.state in (UNSUBSCRIBED, LEFT):
            self.state, self.epoch = JOINING, 0
        self._send_topics = True
        self._next_ms = 0

    def leave(self) -> None:
        """Leaves the group with the next heartbeat (epoch -1), if it ever joined."""
        if (self.state in (JOINING, STABLE) and self.epoch > 0) or (self.state == JOINING and self.in_flight):
            self.state = LEAVING
            self._next_ms = 0
        elif self.state not in (FATAL, LEAVING):
            self.state = LEFT
        self._set_assignment(frozenset())

    def next_heartbeat(self, now_ms: int) -> dict[str, Any] | None:
        """The ShareGroupHeartbeat body to send now, or None (nothing due, or one in flight)."""
        if self.in_flight or self.state in (UNSUBSCRIBED, LEFT, FATAL) or now_ms < self._next_ms:
            return None
        self.in_flight = True
        if self.state == LEAVING:
            return {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": -1, "rack_id": None,
                    "subscribed_topic_names": None}
        topics = sorted(self.topics) if self._send_topics or self.epoch == 0 else None
        return {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.epoch,
                "rack_id": self.rack_id if self.epoch == 0 else None, "subscribed_topic_names": topics}

    def next_delay_ms(self, now_ms: int) -> int:
        if self.in_flight or self.state in (UNSUBSCRIBED, LEFT, FATAL):
            return 2**31
        return max(0, self._next_ms - now_ms)

    def on_heartbeat(self, body: Mapping[str, Any], now_ms: int) -> KafkaError | None:
        """A heartbeat's answer; returns the error it carried (None: none), which the caller routes by (a moved
        coordinator is looked up again)."""
        self.in_flight = False
        code = body["error_code"]
        if self.state == LEAVING:
            self.state, self.epoch = LEFT, -1
            return error_for(code, body.get("error_message")) if code else None
        if code:
            error = error_for(code, body.get("error_message"))
            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH):
                self._rejoin(now_ms)
            elif error.retriable or kinds_of(code) & (ErrorKind.COORDINATOR_MOVED | ErrorKind.COORDINATOR_LOADING):
                self._next_ms = now_ms + self.retry_backoff_ms
            else:
                self._fail(error)
            return error
        if body.get("member_id"):
            self.member_id = body["member_id"]
        self.epoch = body["member_epoch"]
        self.heartbeat_interval_ms = body["heartbeat_interval_ms"] or self.heartbeat_interval_ms
        self._send_topics = False
        if self.state == JOINING:
            self.state = STABLE
        assignment = body.get("assignment")
        if assignment is not None:
            self._set_assignment(frozenset((t["topic_id"], p) for t in assignment["topic_partitions"]
                                           for p in t["partitions"]))
        self._next_ms = now_ms + self.heartbeat_interval_ms
        return None

    def on_heartbeat_failed(self, error: KafkaError, now_ms: int) -> None:
        """No answer (a lost connection, a timeout) or a request that could not go."""
        self.in_flight = False
        if self.state == LEAVING:
            self.state = LEFT
            return
        if isinstance(error, AuthenticationError | AuthorizationError | UnsupportedVersionError):
            self._fail(error)
        else:  # a lost connection, a timeout, a coordinator not found yet: again after the backoff
            self._next_ms = now_ms + self.retry_backoff_ms

    def fail(self, error: KafkaError) -> None:
        """The member cannot go on (e.g. the broker offers no share groups)."""
        self.in_flight = False
        self._fail(error)

    def _rejoin(self, now_ms: int) -> None:
        self.state, self.epoch, self._send_topics, self._next_ms = JOINING, 0, True, now_ms
        self._set_assignment(frozenset())

    def _fail(self, error: KafkaError) -> None:
        self.state, self.error = FATAL, error
        self._set_assignment(frozenset())

    def _set_assignment(self, assignment: frozenset[TopicIdPartition]) -> None:
        if assignment != self.assignment:
            self.assignment = assignment
            self.assignment_version += 1


def next_epoch(epoch: int) -> int:
    """The share session epoch after `epoch` (0 -> 1, ..., 2^31-1 -> 1; -1 stays)."""
    if epoch < 0:
        return epoch
    return 1 if epoch >= INT32_MAX else epoch + 1


@dataclass(slots=True)
class Acknowledgements:
    """One partition's acknowledgements: offset -> type (module docstring)."""

    types: dict[int, int] = field(default_factory=dict)

    def add(self, offset: int, type_: int) -> None:
        self.types[offset] = type_

    def batches(self) -> list[dict[str, Any]]:
        """Ranges of consecutive offsets of one type, as AcknowledgementBatch bodies."""
        out: list[dict[str, Any]] = []
        for offset in sorted(self.types):
            type_ = self.types[offset]
            if out and out[-1]["last_offset"] == offset - 1 and out[-1]["acknowledge_types"][0] == type_:
                out[-1]["last_offset"] = offset
            else:
                out.append({"first_offset": offset, "last_offset": offset, "acknowledge_types": [type_]})
        return out

    def __len__(self) -> int:
        return len(self.types)


class ShareSession:
    """A member's share session with one broker (module docstring)."""

    def __init__(self, node_id: int, group_id: str) -> None:
        self.node_id = node_id
        self.group_id = group_id
        self.epoch = 0
        self.partitions: set[TopicIdPartition] = set()  # in the session, as the broker knows it
        self.in_flight: dict[TopicIdPartition, Acknowledgements] | None = None  # the acks of the request out
        self._sent_partitions: set[TopicIdPartition] = set()
        self.closed = False
        self._closing = False  # the request in flight closes the session

    def _topics(self, partitions: Iterable[TopicIdPartition],
                acks: Mapping[TopicIdPartition, Acknowledgements]) -> list[dict[str, Any]]:
        by_topic: dict[UUID, list[dict[str, Any]]] = {}
        for tip in sorted(set(partitions) | set(acks), key=lambda t: (str(t[0]), t[1])):
            ack = acks.get(tip)
            by_topic.setdefault(tip[0], []).append(
                {"partition_index": tip[1], "acknowledgement_batches": ack.batches() if ack else []})
        return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()]

    def fetch(self, member_id: str, wanted: Iterable[TopicIdPartition], acks: dict[TopicIdPartition, Acknowledgements],
              *, max_wait_ms: int, min_bytes: int, max_bytes: int, max_records: int) -> dict[str, Any]:
        """The ShareFetch body for the partitions wanted from this broker, carrying acks (none at epoch 0: the caller
        fails them first, see `acks_allowed`)."""
        wanted = set(wanted)
        self._closing = False
        if self.epoch == 0:
            added, forgotten = wanted, set()
        else:
            added, forgotten = wanted - self.partitions, self.partitions - wanted
        self.in_flight, self._sent_partitions = acks, wanted
        forgotten_topics: dict[UUID, list[int]] = {}
        for topic_id, partition in sorted(forgotten, key=lambda t: (str(t[0]), t[1])):
            forgotten_topics.setdefault(topic_id, []).append(partition)
        return {"group_id": self.group_id, "member_id": member_id, "share_session_epoch": self.epoch,
                "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
                "max_records": max_records, "batch_size": max_records,
                "topics": self._topics(added, acks),
                "forgotten_topics_data": [{"topic_id": t, "partitions": ps} for t, ps in forgotten_topics.items()]}

    def acknowledge(self, member_id: str, acks: dict[TopicIdPartition, Acknowledgements], *,
                    close: bool = False, renew: bool = False) -> dict[str, Any]:
        """The ShareAcknowledge body carrying acks; close: with epoch -1, which ends the session; renew: acks holds
        RENEW acknowledgements (is_renew_ack, v2+)."""
        self.in_flight, self._sent_partitions = acks, set(self.partitions)
        self._closing = close
        if close:
            self.closed = True
        body = {"group_id": self.group_id, "member_id": member_id,
                "share_session_epoch": -1 if close else self.epoch, "topics": self._topics((), acks)}
        if renew:
            body["is_renew_ack"] = True
        return body

    @property
    def acks_allowed(self) -> bool:
        """Whether a request now may carry acknowledgements (not at epoch 0)."""
        return self.epoch > 0

    def on_unsent(self) -> None:
        """The request in flight could not be written (RequestEncodeError): the broker never saw it, the epoch
        stays."""
        self.in_flight = None
        if self._closing:
            self.closed, self._closing = False, False

    def on_answer(self, error_code: int | None) -> None:
        """The top-level error code of the answer to the request in flight (None: no answer at all, after which the
        broker's epoch is unknown: start again)."""
        self.in_flight = None
        if error_code == ErrorCode.NONE:
            self.partitions = self._sent_partitions
            self.epoch = next_epoch(self.epoch)
        elif error_code is None or error_code in (ErrorCode.SHARE_SESSION_NOT_FOUND,
                                                  ErrorCode.INVALID_SHARE_SESSION_EPOCH):
            self.epoch, self.partitions = 0, set()
