"""confluent-kafka's value types over cykafka's: owns `TopicPartition` (with its offset and `.error`), `Message`
(one consumed record, delivery report or event; a consumed one wraps cykafka's ConsumerRecord without copying),
the OFFSET_* and TIMESTAMP_* constants, and the metadata values `list_topics()` returns (ClusterMetadata,
BrokerMetadata, TopicMetadata, PartitionMetadata).
"""

from __future__ import annotations

from typing import Any

from cykafka.compat.confluent_kafka.error import KafkaError
from cykafka.core import ConsumerRecord

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2

Headers = list[tuple[str, bytes | None]]


class TopicPartition:
    """A topic, partition and offset (OFFSET_INVALID when not set), as confluent-kafka's; `error` is set in
    results that carry one. Equal and hashed by (topic, partition)."""

    __slots__ = ("error", "leader_epoch", "metadata", "offset", "partition", "topic")

    def __init__(self, topic: str, partition: int = -1, offset: int = OFFSET_INVALID, metadata: str | None = None,
                 leader_epoch: int | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.metadata = metadata
        self.leader_epoch = leader_epoch
        self.error: KafkaError | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition) == (other.topic, other.partition)

    def __lt__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __repr__(self) -> str:
        return (f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset},"
                f"leader_epoch={self.leader_epoch},error={self.error!r}}}")

    __str__ = __repr__


class Message:
    """A record, delivery report or event, as confluent-kafka's Message: accessor methods, `error()` set for an
    event (partition EOF) or a failed delivery."""

    __slots__ = (
        "_error",
        "_headers",
        "_key",
        "_latency_s",
        "_leader_epoch",
        "_offset",
        "_partition",
        "_timestamp",
        "_topic",
        "_value",
    )

    def __init__(self, topic: str | None = None, partition: int | None = None, offset: int | None = None,
                 key: Any = None, value: Any = None, headers: Headers | None = None, error: KafkaError | None = None,
                 timestamp: tuple[int, int] = (TIMESTAMP_NOT_AVAILABLE, 0), latency: float | None = None,
                 leader_epoch: int | None = None) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._headers = headers
        self._error = error
        self._timestamp = timestamp
        self._latency_s = latency
        self._leader_epoch = leader_epoch

    def error(self) -> KafkaError | None:
        return self._error

    def topic(self) -> str | None:
        return self._topic

    def partition(self) -> int | None:
        return self._partition

    def offset(self) -> int | None:
        return self._offset

    def key(self) -> Any:
        return self._key

    def value(self) -> Any:
        return self._value

    def headers(self) -> Headers | None:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        """(TIMESTAMP_CREATE_TIME or TIMESTAMP_LOG_APPEND_TIME, ms since the epoch); (TIMESTAMP_NOT_AVAILABLE, 0)."""
        return self._timestamp

    def latency(self) -> float | None:
        """A delivery report's time from produce() to its outcome, in seconds; None for a consumed record."""
        return self._latency_s

    def leader_epoch(self) -> int | None:
        return self._leader_epoch

    def len(self) -> int:
        """The value's length (0 without a value)."""
        value = self.value()
        return 0 if value is None else len(value)

    def __len__(self) -> int:
        return self.len()

    def set_key(self, key: Any) -> None:
        self._key = key

    def set_value(self, value: Any) -> None:
        self._value = value

    def set_headers(self, headers: Headers | None) -> None:
        self._headers = headers

    def __repr__(self) -> str:
        return (f"Message(topic={self.topic()!r}, partition={self.partition()}, offset={self.offset()}, "
                f"error={self.error()!r})")


class _RecordMessage(Message):
    """A consumed record: reads the ConsumerRecord it wraps (nothing copied until asked)."""

    __slots__ = ("_record",)

    def __init__(self, record: ConsumerRecord) -> None:  # the ConsumerRecord holds it all
        self._record = record
        self._error = None
        self._key = self._value = self._headers = _UNSET

    def topic(self) -> str:
        return self._record.topic

    def partition(self) -> int:
        return self._record.partition

    def offset(self) -> int:
        return self._record.offset

    def key(self) -> Any:
        return self._record.key if self._key is _UNSET else self._key

    def value(self) -> Any:
        return self._record.value if self._value is _UNSET else self._value

    def headers(self) -> Headers | None:
        if self._headers is not _UNSET:
            return self._headers
        return self._record.headers or None

    def timestamp(self) -> tuple[int, int]:
        record = self._record
        return (TIMESTAMP_LOG_APPEND_TIME if record.timestamp_type else TIMESTAMP_CREATE_TIME, record.timestamp_ms)

    def latency(self) -> float | None:
        return None

    def leader_epoch(self) -> int | None:
        return self._record.leader_epoch


_UNSET: Any = object()


class BrokerMetadata:
    __slots__ = ("host", "id", "port")

    def __init__(self, broker_id: int, host: str, port: int) -> None:
        self.id = broker_id
        self.host = host
        self.port = port

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


class PartitionMetadata:
    __slots__ = ("error", "id", "isrs", "leader", "replicas")

    def __init__(self, partition_id: int, leader: int, replicas: list[int], isrs: list[int],
                 error: KafkaError | None = None) -> None:
        self.id = partition_id
        self.leader = leader
        self.replicas = replicas
        self.isrs = isrs
        self.error = error

    def __repr__(self) -> str:
        return f"PartitionMetadata({self.id})"


class TopicMetadata:
    __slots__ = ("error", "partitions", "topic")

    def __init__(self, topic: str, partitions: dict[int, PartitionMetadata], error: KafkaError | None = None) -> None:
        self.topic = topic
        self.partitions = partitions
        self.error = error

    def __repr__(self) -> str:
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions)"

    def __str__(self) -> str:
        return self.topic


class ClusterMetadata:
    """What list_topics() returns: `cluster_id`, `controller_id`, `brokers` {id: BrokerMetadata}, `topics`
    {name: TopicMetadata}."""

    __slots__ = ("brokers", "cluster_id", "controller_id", "orig_broker_id", "orig_broker_name", "topics")

    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.brokers: dict[int, BrokerMetadata] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.orig_broker_id = -1
        self.orig_broker_name: str | None = None

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id})"
