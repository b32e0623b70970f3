"""The values every client's calls take and return, in one neutral module (cykafka.ports.values): a partition
(`TopicPartition`), a broker (`Node`), a partition's metadata (`PartitionInfo`), an offset to commit
(`OffsetAndMetadata`), a consumer group's generation (`ConsumerGroupMetadata`), a producer's transaction
(`TransactionInfo`), a ListOffsets result (`ListOffsetsResultInfo`) and a per-item outcome (`Result`); and a
call's timeout in seconds (`checked_seconds`; `FOREVER_MS`, the longest deadline: math.inf's).

Plain frozen data, no behaviour beyond checking arguments: the Producer, the Consumer, Admin, the request layer and the
Spark data source all speak these, so none of them imports another client to name a value. `cykafka` re-exports the
public ones; `cykafka.ports` re-exports those that cross the ports (TopicPartition, Node, PartitionInfo).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from cykafka.errors import InvalidArgumentError, KafkaError
from cykafka.protocol.error_codes import ErrorCode

T = TypeVar("T")


FOREVER_MS = 2**62  # an infinite (or absurdly long) timeout: no deadline before the year 146 million


def checked_seconds(timeout: object, name: str, *, none: str | None = "no limit", at_least: float | None = None
                    ) -> float | None:
    """A timeout argument in seconds as a wait takes it: a number, not a bool, not nan, at least `at_least` (when
    given); math.inf, or anything past FOREVER_MS, is None (no limit); None itself is taken (returned) when `none`
    says what it means, else refused. Anything else: InvalidArgumentError naming `name` and what is accepted."""
    if timeout is None and none is not None:
        return None
    if (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout != timeout
            or (at_least is not None and timeout < at_least)):
        raise InvalidArgumentError(f"{name} must be a number of seconds{'' if at_least is None else f' >= {at_least}'}"
                                   f" (math.inf: no limit){'' if none is None else f' or None ({none})'}, got "
                                   f"{timeout!r}")
    return None if timeout * 1000 >= FOREVER_MS else float(timeout)


class TopicPartition(NamedTuple):
    """A topic's partition (`cykafka.TopicPartition`): what Admin and Consumer calls take and return."""

    topic: str
    partition: int


def checked_partitions(partitions: Iterable[object], call: str) -> list[TopicPartition]:
    """partitions as TopicPartitions ((topic, partition) tuples taken too), else InvalidArgumentError naming call."""
    if isinstance(partitions, str | bytes) or not isinstance(partitions, Iterable):
        raise InvalidArgumentError(f"{call} takes an iterable of TopicPartition(topic, partition), got "
                                   f"{type(partitions).__name__}")
    out = [TopicPartition(*tp) if isinstance(tp, tuple) and len(tp) == 2 else tp for tp in partitions]
    for tp in out:
        if not (isinstance(tp, TopicPartition) and isinstance(tp.topic, str) and tp.topic
                and isinstance(tp.partition, int) and not isinstance(tp.partition, bool)
                and 0 <= tp.partition <= 2**31 - 1):
            raise InvalidArgumentError(f"{call} takes TopicPartition(topic, partition) keys (a non-empty topic, a "
                                       f"partition in [0, 2**31 - 1]), got {tp!r}")
    return out  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Node:
    """A broker: the one type for Metadata's `brokers`, ProduceResponse's `node_endpoints` and coordinators."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @classmethod
    def from_body(cls, broker: Mapping[str, Any]) -> Node:
        """From a decoded broker entry (node_id, host, port, rack)."""
        return cls(broker["node_id"], broker["host"], broker["port"], broker.get("rack"))


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition as the metadata describes it (Producer.partitions_for): its leader's node id (-1 while none
    is known) and leader epoch, the replicas' and in-sync replicas' node ids, and the broker's error code for it."""

    topic: str
    partition: int
    leader: int  # node id, -1 when unknown
    leader_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    error_code: int = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A consumer position to commit (or a committed one): the offset of the next record to read."""

    offset: int
    metadata: str | None = None
    leader_epoch: int = -1


def checked_offset(offset: object, what: str) -> OffsetAndMetadata:
    """offset (an int, or an OffsetAndMetadata) as an OffsetAndMetadata a request can carry: the offset in
    [0, 2**63 - 1], metadata a str or None, a leader epoch in [-1, 2**31 - 1]; else InvalidArgumentError naming
    `what` (e.g. "commit: the offset of TopicPartition('t', 0)")."""
    om = offset if isinstance(offset, OffsetAndMetadata) else OffsetAndMetadata(offset)  # type: ignore[arg-type]
    fields = (("", om.offset, 0, 2**63 - 1), (".leader_epoch", om.leader_epoch, -1, 2**31 - 1))
    for name, value, low, high in fields:
        try:
            number = operator.index(value)  # an int, or an int-like (numpy); never a float or a str
        except TypeError:
            number = None
        if isinstance(value, bool) or number is None or not low <= number <= high:
            raise InvalidArgumentError(f"{what}{name} must be an int in [{low}, {high}], got {value!r}")
    if om.metadata is not None and not isinstance(om.metadata, str):
        raise InvalidArgumentError(f"{what}.metadata must be a str or None, got {om.metadata!r}")
    return OffsetAndMetadata(operator.index(om.offset), om.metadata, operator.index(om.leader_epoch))


def checked_offsets(offsets: object, call: str) -> dict[TopicPartition, OffsetAndMetadata]:
    """A {TopicPartition: offset or OffsetAndMetadata} mapping a commit names, each key through checked_partitions and
    each offset through checked_offset; else InvalidArgumentError naming call."""
    if not isinstance(offsets, Mapping):
        raise InvalidArgumentError(f"{call}: offsets must be a mapping of TopicPartition to an offset or "
                                   f"OffsetAndMetadata, got {type(offsets).__name__}")
    return {tp: checked_offset(offset, f"{call}: the offset of {tp}")
            for tp, offset in zip(checked_partitions(offsets, call), offsets.values(), strict=True)}


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """The consumer group whose offsets a transaction commits (Java's ConsumerGroupMetadata). generation_id and
    member_id let the group coordinator fence zombie consumers (KIP-447); the defaults skip that check."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class TransactionInfo:
    """What a two-phase committer records about a producer's transaction: enough to finish it elsewhere with
    `Producer.complete_transaction(transactional_id, producer_id, producer_epoch, commit)`. `state` is the name of
    the producer's transaction state; `in_transaction` whether a transaction was open (begun and not yet ended)."""

    transactional_id: str | None
    producer_id: int
    producer_epoch: int
    state: str
    in_transaction: bool = False


@dataclass(frozen=True, slots=True)
class ListOffsetsResultInfo:
    """One partition's ListOffsets answer: the offset, its record's timestamp, the leader epoch."""

    offset: int
    timestamp: int  # -1 when the broker gives none
    leader_epoch: int  # -1 when unknown


class Result(Generic[T]):
    """One item's outcome (Java's per-item KafkaFuture, complete): the value, or the error that ended it."""

    __slots__ = ("error", "value")

    def __init__(self, value: T | None = None, error: KafkaError | None = None) -> None:
        self.value = value
        self.error = error

    def result(self) -> T:
        """The value, or raises the item's error."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Result(error={self.error!r})" if self.error is not None else f"Result({self.value!r})"


__all__ = ["ConsumerGroupMetadata", "ListOffsetsResultInfo", "Node", "OffsetAndMetadata", "PartitionInfo", "Result",
           "TopicPartition", "TransactionInfo", "checked_partitions"]
