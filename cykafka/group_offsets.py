"""A group's committed offsets as requests and answers: OffsetCommit and OffsetFetch bodies for the generic codec.

One home for both, used by the consumer in assign mode (generation -1, empty member id, as Java's) and by the group
membership once it runs (its generation id and member id).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from cykafka.errors import KafkaError
from cykafka.ports import TopicPartition
from cykafka.protocol import Request
from cykafka.protocol import apis as api
from cykafka.protocol.error_codes import error_for
from cykafka.transactions import OffsetAndMetadata


def find_coordinator_request(group_id: str) -> Request:
    return Request(api.FIND_COORDINATOR.key, {"key": group_id, "key_type": api.COORDINATOR_GROUP,
                                              "coordinator_keys": [group_id]})


def offset_commit_request(group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], *,
                          generation_id: int = -1, member_id: str = "",
                          group_instance_id: str | None = None) -> Request:
    topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for tp, om in offsets.items():
        topics[tp.topic].append({"partition_index": tp.partition, "committed_offset": om.offset,
                                 "committed_leader_epoch": om.leader_epoch, "committed_metadata": om.metadata})
    return Request(api.OFFSET_COMMIT.key, {
        "group_id": group_id, "generation_id": generation_id, "member_id": member_id,
        "group_instance_id": group_instance_id, "retention_time_ms": -1,
        "topics": [{"name": name, "partitions": partitions} for name, partitions in topics.items()]})


def offset_commit_errors(answer: Mapping[str, Any]) -> dict[TopicPartition, KafkaError]:
    """The partitions an OffsetCommit answer failed, with their errors."""
    return {TopicPartition(t["name"], p["partition_index"]): error_for(
        p["error_code"], f"committing {t['name']} [{p['partition_index']}]")
        for t in answer["topics"] for p in t["partitions"] if p["error_code"]}


def offset_fetch_request(group_id: str, partitions: Iterable[TopicPartition], *,
                         require_stable: bool = False) -> Request:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    topics = [{"name": name, "partition_indexes": indexes} for name, indexes in by_topic.items()]
    return Request(api.OFFSET_FETCH.key, {"group_id": group_id, "topics": topics, "require_stable": require_stable,
                                          "groups": [{"group_id": group_id, "topics": topics}]})


def offset_fetch_answer(group_id: str, answer: Mapping[str, Any],
                        ) -> tuple[KafkaError | None, dict[TopicPartition, OffsetAndMetadata | KafkaError | None]]:
    """(the group's error, {partition: its committed offset, None when none is committed, or its error})."""
    found = answer["groups"][0] if answer.get("groups") else answer
    if found.get("error_code"):
        return error_for(found["error_code"], f"fetching the committed offsets of group {group_id!r}"), {}
    out: dict[TopicPartition, OffsetAndMetadata | KafkaError | None] = {}
    for t in found["topics"]:
        for p in t["partitions"]:
            tp = TopicPartition(t["name"], p["partition_index"])
            if p["error_code"]:
                out[tp] = error_for(p["error_code"], f"group {group_id!r} {tp.topic} [{tp.partition}]")
            elif p["committed_offset"] < 0:
                out[tp] = None
            else:
                out[tp] = OffsetAndMetadata(p["committed_offset"], p["metadata"], p["committed_leader_epoch"])
    return None, out
