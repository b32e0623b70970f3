"""The offset APIs, once for every client: OffsetFetch (request and reader), ListOffsets (request and reader) and
the OffsetCommit reader (a member's request carries its generation: core/group.py builds it; Admin's, from outside
the group, is admin_offset_commit_request).

Owns the bodies' shapes and the reading of their answers into values (cykafka.ports.values) and typed errors (from
the one error table): Admin's list_offsets and list_consumer_group_offsets, the Consumer's committed offsets and
commits and its offset lookups, and the group member's view of its commits' answers all read through here. The error
messages name the group or the call and the partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cykafka.errors import KafkaError
from cykafka.ports.values import ListOffsetsResultInfo, OffsetAndMetadata, TopicPartition
from cykafka.protocol import Request
from cykafka.protocol.apis import LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, offset_commit_topics
from cykafka.protocol.error_codes import error_for

if TYPE_CHECKING:  # the generated bodies are for mypy only
    from cykafka.protocol.bodies import (
        ListOffsetsRequestBody,
        ListOffsetsRequestTopics,
        OffsetFetchRequestBody,
        OffsetFetchRequestTopics,
    )


def by_topic_name(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """(topic, partition) pairs as {topic: [partition, ...]}, in first-seen order: the nesting of request bodies."""
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    return topics

# -- OffsetFetch -------------------------------------------------------------------------------------------------


def offset_fetch_request(group_id: str, partitions: Iterable[tuple[str, int]] | None, *,
                         require_stable: bool = False, member_id: str | None = None,
                         member_epoch: int = -1) -> Request:
    """The group's committed offsets of these partitions (None: every partition it committed), in both forms (v0-7's
    group_id and topics, v8+'s groups); require_stable: wait for pending transactional commits (Java's consumer);
    member_id, member_epoch: a KIP-848 member's (v9), checked by the coordinator (STALE_MEMBER_EPOCH)."""
    topics: list[OffsetFetchRequestTopics] | None = None if partitions is None else [
        {"name": topic, "partition_indexes": indexes}
        for topic, indexes in by_topic_name(sorted(set(partitions))).items()]
    body: OffsetFetchRequestBody = {"group_id": group_id, "topics": topics,
                                    "groups": [{"group_id": group_id, "member_id": member_id,
                                                "member_epoch": member_epoch, "topics": topics}],
                                    "require_stable": require_stable}
    return Request(OFFSET_FETCH.key, body)


def _offset_fetch_group(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The one group's part of an OffsetFetch answer: v8+'s first group, or (v0-7) the body itself."""
    groups = body.get("groups")
    return groups[0] if groups else body


def offset_fetch_error(body: Mapping[str, Any], group_id: str) -> KafkaError | None:
    """An OffsetFetch answer's group-level error (None: none)."""
    code = _offset_fetch_group(body)["error_code"]
    return error_for(code, f"group {group_id!r}: OffsetFetch") if code else None


def read_offset_fetch(body: Mapping[str, Any], group_id: str) -> dict[TopicPartition, OffsetAndMetadata | KafkaError]:
    """An OffsetFetch answer per partition, in partition order: the committed OffsetAndMetadata (offset -1 when none
    is committed) or the partition's typed error; a group-level error raises."""
    error = offset_fetch_error(body, group_id)
    if error is not None:
        raise error
    found: dict[TopicPartition, OffsetAndMetadata | KafkaError] = {}
    for t in _offset_fetch_group(body)["topics"]:
        for p in sorted(t["partitions"], key=lambda p: p["partition_index"]):
            tp = TopicPartition(t["name"], p["partition_index"])
            found[tp] = error_for(p["error_code"], f"group {group_id!r}: OffsetFetch {tp.topic} [{tp.partition}]") \
                if p["error_code"] else OffsetAndMetadata(p["committed_offset"], p["metadata"],
                                                          p["committed_leader_epoch"])
    return found


# -- OffsetCommit -------------------------------------------------------------------------------------------------


def admin_offset_commit_request(group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> Request:
    """An OffsetCommit from outside the group (Java's Admin.alterConsumerGroupOffsets): no generation, no member
    id, so the coordinator takes it only while the group has no members."""
    topics = offset_commit_topics({tp: (om.offset, om.metadata, om.leader_epoch) for tp, om in offsets.items()})
    return Request(OFFSET_COMMIT.key, {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
                                       "group_instance_id": None, "topics": topics})


def read_offset_commit(body: Mapping[str, Any], group_id: str) -> dict[TopicPartition, KafkaError | None]:
    """An OffsetCommit answer per partition: None when committed, else the typed error."""
    return {TopicPartition(t["name"], p["partition_index"]):
            error_for(p["error_code"], f"group {group_id!r}: commit {t['name']} [{p['partition_index']}]")
            if p["error_code"] else None
            for t in body["topics"] for p in t["partitions"]}


def offset_commit_retriable(body: Mapping[str, Any], group_id: str) -> KafkaError | None:
    """An OffsetCommit answer's first retriable error (the coordinator moved or is loading: asked again); the
    others are the partitions' own."""
    return next((e for e in read_offset_commit(body, group_id).values() if e is not None and e.retriable), None)


def offset_commit_codes(body: Mapping[str, Any]) -> set[int]:
    """The distinct error codes of an OffsetCommit answer (0 included when a partition committed)."""
    return {p["error_code"] for t in body["topics"] for p in t["partitions"]}


# -- ListOffsets --------------------------------------------------------------------------------------------------


def list_offsets_request(timestamps: Mapping[TopicPartition, int], *, read_committed: bool) -> Request:
    """The offsets of {partition: timestamp in ms, or LATEST_TIMESTAMP / EARLIEST_TIMESTAMP / MAX_TIMESTAMP} at one
    leader; read_committed: "latest" is the last stable offset."""
    topics: list[ListOffsetsRequestTopics] = [
        {"name": topic, "partitions": [{"partition_index": p, "current_leader_epoch": -1,
                                        "timestamp": timestamps[TopicPartition(topic, p)]} for p in indexes]}
        for topic, indexes in by_topic_name(timestamps).items()]
    body: ListOffsetsRequestBody = {"replica_id": -1, "isolation_level": int(read_committed), "topics": topics}
    return Request(LIST_OFFSETS.key, body)


def read_list_offsets(body: Mapping[str, Any], what: str = "ListOffsets",
                      ) -> dict[TopicPartition, ListOffsetsResultInfo | KafkaError]:
    """A ListOffsets answer per partition: its ListOffsetsResultInfo (offset -1: no record that recent), or the
    partition's typed error."""
    return {TopicPartition(t["name"], p["partition_index"]):
            error_for(p["error_code"], f"{what} {t['name']} [{p['partition_index']}]") if p["error_code"]
            else ListOffsetsResultInfo(p["offset"], p["timestamp"], p["leader_epoch"])
            for t in body["topics"] for p in t["partitions"]}
