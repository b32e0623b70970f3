"""aiokafka.structs' names, for `from cykafka.compat.aiokafka.structs import TopicPartition` where the code said
`from aiokafka.structs import ...`: the same objects as cykafka.compat.aiokafka's (BrokerMetadata and
PartitionMetadata, cluster-metadata internals of aiokafka, are not offered)."""

from cykafka.compat.aiokafka import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    RecordMetadata,
    TopicPartition,
)

__all__ = ["ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "RecordMetadata", "TopicPartition"]
