"""Admin's share group calls (KIP-932; Java's Admin listGroups(share), describeShareGroups, listShareGroupOffsets,
alterShareGroupOffsets, deleteShareGroupOffsets, deleteShareGroups), and their result types.

Each call is a function of an `Admin` (cykafka/admin.py delegates to them) driven by the request layer like Admin's
own: a request per group at its coordinator through Admin's `_per_group` (the Fanout) or its Asker, which retry what
the error table says is retriable (a coordinator moved or loading) until the call's deadline; ListGroups goes to
every broker (v5's types filter: only share groups). A group's error that is not retriable is that group's (or each
of its partitions') Result. The group configs a share group takes (`share.auto.offset.reset`,
`share.record.lock.duration.ms`, ...) are Admin's `describe_configs` / `incremental_alter_configs` on a
`ConfigResource("group", name)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cykafka.errors import InvalidArgumentError, KafkaError
from cykafka.ports.values import Result, TopicPartition, checked_partitions
from cykafka.protocol import Request
from cykafka.protocol import apis as api
from cykafka.protocol.error_codes import answer_error, error_for
from cykafka.requests.coordinators import group_coordinator
from cykafka.serialization import validate_topic

if TYPE_CHECKING:
    from cykafka.admin import Admin


@dataclass(frozen=True, slots=True)
class ShareGroupListing:
    group_id: str
    state: str | None  # Empty, Stable, Dead


@dataclass(frozen=True, slots=True)
class ShareMemberDescription:
    member_id: str
    client_id: str
    host: str
    rack_id: str | None
    member_epoch: int
    subscribed_topics: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]  # the partitions it reads from (others may read them too)


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    group_id: str
    state: str  # Empty, Stable, Dead
    group_epoch: int
    assignment_epoch: int
    assignor: str  # the server-side assignor, e.g. "simple"
    members: tuple[ShareMemberDescription, ...]
    coordinator: int


@dataclass(frozen=True, slots=True)
class SharePartitionOffsetInfo:
    """A share group's progress on a partition: its start offset (the records before it are done: acknowledged or
    archived; -1: the group never read the partition), the leader epoch of it, and the lag (records not yet
    delivered and acknowledged; -1: not known, e.g. DescribeShareGroupOffsets v0)."""

    start_offset: int
    leader_epoch: int
    lag: int


def _group_ids(names: object, call: str) -> list[str]:
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise InvalidArgumentError(f"{call} takes a list of group ids, got {names!r}")
    out = list(names)
    for name in out:
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"{call}: a group id must be a non-empty string, got {name!r}")
    return out


def _retriable(code: int, message: str | None, what: str) -> KafkaError | None:
    """A group-level error the Asker should retry (the coordinator moved or is loading), else None: the caller makes
    the others that group's Result."""
    if not code:
        return None
    error = error_for(code, message or what)
    return error if error.retriable else None


def _ask_group(admin: Admin, request: Request, group: str, deadline_ms: int,
               level: Callable[[Mapping[str, Any]], Mapping[str, Any]] = lambda body: body,
               ) -> tuple[Mapping[str, Any], KafkaError | None]:
    """request at group's coordinator, asked again while its group-level error (`level` of the answer) is retriable;
    that group-level part of the answer and its error (None when none)."""
    answer = admin._asker.ask(request, group_coordinator(group), deadline_ms, check=lambda body: _retriable(
        level(body)["error_code"], level(body)["error_message"], f"group {group!r}"))
    part = level(answer.body)
    return part, answer_error(part, f"group {group!r}")


def list_share_groups(admin: Admin, states: Iterable[str] | None, timeout_ms: int | None) -> list[ShareGroupListing]:
    """Every share group on every broker (ListGroups v5 with types_filter ["share"]: Kafka 4.0+)."""
    wanted = None if states is None else _group_ids(states, "list_share_groups' states")
    deadline_ms = admin._deadline(timeout_ms)

    def list_groups() -> list[ShareGroupListing]:
        return sorted((ShareGroupListing(g["group_id"], g["group_state"] or None)
                       for g in admin._listed_groups(wanted, "share", deadline_ms)), key=lambda g: g.group_id)

    return admin._call(list_groups)


def describe_share_groups(admin: Admin, group_ids: Iterable[str],
                          timeout_ms: int | None) -> dict[str, Result[ShareGroupDescription]]:
    """ShareGroupDescribe at each group's coordinator: {group id: Result}; a group that is not a share group (or
    does not exist) gets the broker's error (GROUP_ID_NOT_FOUND)."""
    names = _group_ids(group_ids, "describe_share_groups")
    deadline_ms = admin._deadline(timeout_ms)

    def read(group_id: str, a: Mapping[str, Any], node: int) -> ShareGroupDescription | KafkaError:
        g = next((g for g in a["groups"] if g["group_id"] == group_id), None)
        if g is None:
            return KafkaError(f"group {group_id!r}: the broker's answer left it out")
        if error := answer_error(g, f"group {group_id!r}"):
            return error
        members = tuple(ShareMemberDescription(
            m["member_id"], m["client_id"], m["client_host"], m["rack_id"], m["member_epoch"],
            tuple(m["subscribed_topic_names"]),
            tuple(sorted(TopicPartition(t["topic_name"], p) for t in m["assignment"]["topic_partitions"]
                         for p in t["partitions"]))) for m in g["members"])
        return ShareGroupDescription(group_id, g["group_state"], g["group_epoch"], g["assignment_epoch"],
                                     g["assignor_name"], members, node)

    return admin._call(lambda: admin._per_group(
        names, deadline_ms, lambda g: Request(api.SHARE_GROUP_DESCRIBE.key, {
            "group_ids": [g], "include_authorized_operations": False}), read))


def list_share_group_offsets(admin: Admin, group_id: str, partitions: Iterable[TopicPartition] | None,
                             timeout_ms: int | None) -> dict[TopicPartition, Result[SharePartitionOffsetInfo]]:
    """A share group's start offsets (DescribeShareGroupOffsets at its coordinator): every partition it has state
    for, or the given ones. {TopicPartition: Result}; a group-level error raises."""
    (group,) = _group_ids([group_id], "list_share_group_offsets' group_id")
    tps = None if partitions is None else checked_partitions(partitions, "list_share_group_offsets")
    deadline_ms = admin._deadline(timeout_ms)
    topics = None
    if tps is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"topic_name": t, "partitions": sorted(ps)} for t, ps in by_topic.items()]
    request = Request(api.DESCRIBE_SHARE_GROUP_OFFSETS.key, {"groups": [{"group_id": group, "topics": topics}]})

    def group_of(body: Mapping[str, Any]) -> Mapping[str, Any]:
        return next(g for g in body["groups"] if g["group_id"] == group)

    def fetch() -> dict[TopicPartition, Result[SharePartitionOffsetInfo]]:
        g, error = _ask_group(admin, request, group, deadline_ms, group_of)
        if error is not None:
            raise error
        out: dict[TopicPartition, Result[SharePartitionOffsetInfo]] = {}
        for t in g["topics"]:
            for p in sorted(t["partitions"], key=lambda p: p["partition_index"]):
                tp = TopicPartition(t["topic_name"], p["partition_index"])
                code = p["error_code"]
                out[tp] = Result(error=error_for(code, f"{tp.topic} [{tp.partition}]")) if code else Result(
                    SharePartitionOffsetInfo(p["start_offset"], p["leader_epoch"], p["lag"]))
        return out

    return admin._call(fetch)


def alter_share_group_offsets(admin: Admin, group_id: str, offsets: Mapping[TopicPartition, int],
                              timeout_ms: int | None) -> dict[TopicPartition, Result[None]]:
    """Sets a share group's start offsets (AlterShareGroupOffsets at its coordinator; the group must have no
    members: else each partition's Result holds GROUP_NOT_EMPTY)."""
    (group,) = _group_ids([group_id], "alter_share_group_offsets' group_id")
    tps = checked_partitions(offsets, "alter_share_group_offsets")
    starts = dict(zip(tps, offsets.values(), strict=True))
    for tp, offset in starts.items():
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidArgumentError(f"alter_share_group_offsets: the start offset of {tp} must be an int >= 0, "
                                       f"got {offset!r}")
    deadline_ms = admin._deadline(timeout_ms)
    by_topic: dict[str, list[dict[str, int]]] = {}
    for tp, offset in starts.items():
        by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "start_offset": offset})
    request = Request(api.ALTER_SHARE_GROUP_OFFSETS.key, {"group_id": group, "topics": [
        {"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]})

    def alter() -> dict[TopicPartition, Result[None]]:
        body, error = _ask_group(admin, request, group, deadline_ms)
        if error is not None:
            return {tp: Result(error=error) for tp in tps}
        out: dict[TopicPartition, Result[None]] = {}
        for t in body["responses"]:
            for p in t["partitions"]:
                tp = TopicPartition(t["topic_name"], p["partition_index"])
                out[tp] = Result(None, answer_error(p, f"{tp.topic} [{tp.partition}]"))
        for tp in tps:
            out.setdefault(tp, Result(error=KafkaError(f"{tp}: the broker's answer left it out")))
        return out

    return admin._call(alter)


def delete_share_group_offsets(admin: Admin, group_id: str, topics: Iterable[str],
                               timeout_ms: int | None) -> dict[str, Result[None]]:
    """Deletes a share group's state for whole topics (DeleteShareGroupOffsets at its coordinator; the group must
    have no members). {topic: Result}."""
    (group,) = _group_ids([group_id], "delete_share_group_offsets' group_id")
    if isinstance(topics, str) or not isinstance(topics, Iterable):
        raise InvalidArgumentError(f"delete_share_group_offsets takes a list of topic names, got {topics!r}")
    names = list(topics)
    for topic in names:
        validate_topic(topic)
    deadline_ms = admin._deadline(timeout_ms)
    request = Request(api.DELETE_SHARE_GROUP_OFFSETS.key, {"group_id": group, "topics": [
        {"topic_name": t} for t in names]})

    def delete() -> dict[str, Result[None]]:
        body, error = _ask_group(admin, request, group, deadline_ms)
        if error is not None:
            return {t: Result(error=error) for t in names}
        out: dict[str, Result[None]] = {
            t["topic_name"]: Result(None, answer_error(t, f"topic {t['topic_name']!r}")) for t in body["responses"]}
        for t in names:
            out.setdefault(t, Result(error=KafkaError(f"topic {t!r}: the broker's answer left it out")))
        return out

    return admin._call(delete)


def delete_share_groups(admin: Admin, group_ids: Iterable[str], timeout_ms: int | None) -> dict[str, Result[None]]:
    """Deletes share groups with no members (DeleteGroups at each coordinator): {group id: Result}."""
    return admin._deleted_groups(_group_ids(group_ids, "delete_share_groups"), admin._deadline(timeout_ms))


__all__ = [
    "ShareGroupDescription",
    "ShareGroupListing",
    "ShareMemberDescription",
    "SharePartitionOffsetInfo",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
    "delete_share_groups",
    "describe_share_groups",
    "list_share_group_offsets",
    "list_share_groups",
]
