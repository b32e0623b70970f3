"""confluent-kafka's value types over cykafka's: owns `TopicPartition` (with its offset and `.error`), `Message`
(one consumed record, delivery report or event; a consumed one wraps cykafka's ConsumerRecord without copying, built
in C: cykafka.core.ConfluentMessage),
the OFFSET_* and TIMESTAMP_* constants, and the metadata values `list_topics()` returns (ClusterMetadata,
BrokerMetadata, TopicMetadata, PartitionMetadata).
"""

from __future__ import annotations

from cykafka.compat.confluent_kafka.error import KafkaError
from cykafka.core import ConfluentMessage

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


Message = ConfluentMessage
"""A record, delivery report or event, as confluent-kafka's Message: accessor methods, `error()` set for an event
(partition EOF) or a failed delivery; a consumed record wraps cykafka's ConsumerRecord, built in C
(cykafka.core.ConfluentMessage)."""


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
