"""The Admin's own argument and result types (Java's NewTopic, NewPartitions, TopicDescription, ConfigResource,
ConfigEntry, DeletedRecords, ElectionType and the consumer group listings and descriptions), and the checks of what a
caller hands in (new topics and partitions, configs, names), each raising InvalidArgumentError naming the argument; and
the group descriptions read from their answers (`consumer_group_described`, `classic_group_described`). The values
every client shares (TopicPartition, Node, OffsetAndMetadata, ...) are cykafka.ports.values'.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from cykafka.errors import InvalidArgumentError, KafkaError, ProtocolError
from cykafka.ports.values import Node, PartitionInfo, TopicPartition
from cykafka.protocol.consumer_protocol import PROTOCOL_TYPE, decode_assignment
from cykafka.protocol.error_codes import ErrorCode, error_for
from cykafka.serialization import validate_topic

if TYPE_CHECKING:  # the generated bodies are for mypy only
    from cykafka.protocol.bodies import CreatePartitionsRequestTopicsAssignments


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create. num_partitions / replication_factor -1: the broker's defaults (CreateTopics v4+)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = 1
    config: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """A topic's new partition count (Java's NewPartitions.increaseTo): total_count, more than it has now;
    new_assignments: None (the broker places the replicas) or, per new partition, its replicas' broker ids (the
    first is the preferred leader)."""

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = None

    @classmethod
    def increase_to(cls, total_count: int, new_assignments: Sequence[Sequence[int]] | None = None) -> NewPartitions:
        return cls(total_count, new_assignments)


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    partitions: tuple[PartitionInfo, ...]
    internal: bool = False


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int  # -1: none known
    nodes: tuple[Node, ...]


class ConfigResource(NamedTuple):
    """A config owner: type "topic" (name: the topic), "broker" (name: the broker's node id as a string) or "group"
    (name: the group; e.g. a share group's share.auto.offset.reset, share.record.lock.duration.ms)."""

    type: str
    name: str


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str  # Java's ConfigEntry.ConfigSource name, e.g. DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG
    is_default: bool
    read_only: bool
    is_sensitive: bool


@dataclass(frozen=True, slots=True)
class DeletedRecords:
    low_watermark: int


class ElectionType(enum.IntEnum):
    """Java's ElectionType (its wire values): PREFERRED makes each partition's preferred replica (the first of its
    replicas) leader when it is in sync; UNCLEAN elects a live replica outside the ISR when none in it is live (data
    written since may be lost)."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class ConsumerGroupListing:
    group_id: str
    protocol_type: str  # "consumer" for consumer groups; "" for simple (offsets-only) groups
    state: str | None  # None from brokers before ListGroups v4


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """A group member. partitions: what it owns (a classic group's read from its assignment bytes; a consumer
    group's from ConsumerGroupDescribe); member_epoch and target_partitions (what the broker will give it) only in a
    consumer group (KIP-848)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: bytes  # the raw ConsumerProtocol assignment (classic groups; b"" in a consumer group)
    partitions: tuple[TopicPartition, ...] = ()
    member_epoch: int | None = None
    target_partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    """A group: type "classic" (JoinGroup/SyncGroup, DescribeGroups) or "consumer" (KIP-848, ConsumerGroupDescribe:
    partition_assignor is the broker's assignor, group_epoch its epoch)."""

    group_id: str
    state: str
    protocol_type: str
    partition_assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: int
    type: str = "classic"
    group_epoch: int | None = None


MAX_PARTITIONS_PER_TOPIC = 10_000  # Kafka's controller refuses more per CreateTopics request (KAFKA-17870)


def check_new_topic(topic: object) -> None:
    """A NewTopic whose fields a CreateTopics request can carry and a broker should take, else the error naming the
    field: a valid topic name (the producer's rule: InvalidTopicError), num_partitions -1 (the broker's default) or
    1..MAX_PARTITIONS_PER_TOPIC, replication_factor -1 or 1..32767, config {str: str or None}."""
    if not isinstance(topic, NewTopic):
        raise InvalidArgumentError(f"create_topics takes NewTopic values, got {type(topic).__name__}")
    validate_topic(topic.name)
    for field, value, high in (("num_partitions", topic.num_partitions, MAX_PARTITIONS_PER_TOPIC),
                               ("replication_factor", topic.replication_factor, 2**15 - 1)):
        if isinstance(value, bool) or not isinstance(value, int) or not (value == -1 or 1 <= value <= high):
            raise InvalidArgumentError(f"NewTopic({topic.name!r}).{field} must be an int, -1 (the broker's default) "
                                       f"or 1 to {high}, got {value!r}")
    check_configs(topic.config or {}, f"NewTopic({topic.name!r}).config")


def check_new_partitions(topic: object, new: object) -> list[CreatePartitionsRequestTopicsAssignments] | None:
    """NewPartitions a CreatePartitions request can carry: total_count 1 to 2**31-1, new_assignments None or one
    non-empty list of distinct broker ids (ints >= 0) per new partition; its assignments' request form."""
    if not isinstance(new, NewPartitions):
        raise InvalidArgumentError(f"create_partitions takes {{topic: NewPartitions}}, got {topic!r}: "
                                   f"{type(new).__name__}")
    count = new.total_count
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count < 2**31:
        raise InvalidArgumentError(f"NewPartitions of {topic!r}: total_count must be an int from 1 to 2**31-1 (the "
                                   f"partition count wanted, more than the topic has), got {count!r}")
    if new.new_assignments is None:
        return None
    what = f"NewPartitions of {topic!r}: new_assignments"
    given: object = new.new_assignments
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise InvalidArgumentError(f"{what} must be None or a list of broker id lists, one per new partition, got "
                                   f"{given!r}")
    assignments = [list(replicas) if isinstance(replicas, Iterable) else replicas for replicas in given]
    for replicas in assignments:
        if (not isinstance(replicas, list) or not replicas or len(set(replicas)) != len(replicas)
                or any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in replicas)):
            raise InvalidArgumentError(f"{what}: each new partition's replicas must be a non-empty list of distinct "
                                       f"broker ids (ints >= 0), got {replicas!r}")
    if not assignments or len(assignments) > count:
        raise InvalidArgumentError(f"{what} must name 1 to total_count ({count}) new partitions, one list each, got "
                                   f"{len(assignments)}")
    return [{"broker_ids": replicas} for replicas in assignments]


def check_configs(configs: object, what: str) -> None:
    """{name: value} as a request carries it: str names, str (or None) values; else InvalidArgumentError naming it."""
    if not isinstance(configs, Mapping):
        raise InvalidArgumentError(f"{what} must be a mapping of config names to str values, got "
                                   f"{type(configs).__name__}")
    for name, value in configs.items():
        if not isinstance(name, str) or not (value is None or isinstance(value, str)):
            raise InvalidArgumentError(f"{what}: {name!r} must map to a str value (e.g. '{value}'), got {value!r}")


def checked_names(names: object, what: str) -> list[str]:
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise InvalidArgumentError(f"{what} must be a list of str, got {type(names).__name__}")
    out = list(names)
    bad = [n for n in out if not isinstance(n, str) or not n]
    if bad:
        raise InvalidArgumentError(f"{what} must be non-empty str, got {bad[0]!r}")
    if len(set(out)) != len(out):
        twice = sorted(n for n in set(out) if out.count(n) > 1)
        raise InvalidArgumentError(f"{what} name the same item twice: {twice}")
    return out


# -- the group descriptions' answers ------------------------------------------------------------------------------


def consumer_group_described(group_id: str, a: Mapping[str, Any], node: int) -> ConsumerGroupDescription | KafkaError:
    """A ConsumerGroupDescribe answer's group (a KIP-848 group, type "consumer"), or its error; a group the broker
    does not know as a consumer group is GROUP_ID_NOT_FOUND (Tansu answers every id with epoch -1)."""
    g = next((g for g in a["groups"] if g["group_id"] == group_id), None)
    if g is None:
        return KafkaError(f"group {group_id!r}: the broker's answer left it out")
    if g["error_code"]:
        return error_for(g["error_code"], f"group {group_id!r}: ConsumerGroupDescribe")
    if g["group_epoch"] < 0:  # Tansu answers every group so, existing or not: not a consumer group
        return error_for(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r}: ConsumerGroupDescribe")

    def partitions(assignment: Mapping[str, Any]) -> tuple[TopicPartition, ...]:
        return tuple(sorted(TopicPartition(t["topic_name"], p) for t in assignment["topic_partitions"]
                            for p in t["partitions"]))

    members = tuple(MemberDescription(m["member_id"], m["instance_id"], m["client_id"], m["client_host"], b"",
                                      partitions(m["assignment"]), m["member_epoch"],
                                      partitions(m["target_assignment"])) for m in g["members"])
    return ConsumerGroupDescription(group_id, g["group_state"], "consumer", g["assignor_name"], members, node,
                                    "consumer", g["group_epoch"])


def classic_group_described(group_id: str, a: Mapping[str, Any], node: int) -> ConsumerGroupDescription | KafkaError:
    """A DescribeGroups answer's group (type "classic"), or its error (a "Dead" group: GROUP_ID_NOT_FOUND, as Java's
    admin client); a consumer group member's partitions read from its assignment bytes."""
    g = next((g for g in a["groups"] if g["group_id"] == group_id), None)
    code = ErrorCode.GROUP_ID_NOT_FOUND if g is not None and g["group_state"] == "Dead" else (g or {}).get(
        "error_code", 0)
    if g is None or code:
        return error_for(code, f"group {group_id!r}") if code else KafkaError(
            f"group {group_id!r}: the broker's answer left it out")
    members = tuple(MemberDescription(m["member_id"], m["group_instance_id"], m["client_id"],
                                      m["client_host"], m["member_assignment"],
                                      _assigned(g["protocol_type"], m["member_assignment"]))
                    for m in g["members"])
    return ConsumerGroupDescription(group_id, g["group_state"], g["protocol_type"], g["protocol_data"], members, node)


def _assigned(protocol_type: str, assignment: bytes) -> tuple[TopicPartition, ...]:
    """A classic consumer group member's partitions, read from its assignment bytes (another kind of group: none)."""
    if protocol_type != PROTOCOL_TYPE or not assignment:
        return ()
    try:
        return tuple(sorted(TopicPartition(t, p) for t, p in decode_assignment(assignment)["assigned_partitions"]))
    except ProtocolError:
        return ()
