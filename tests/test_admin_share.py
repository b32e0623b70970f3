"""Admin's share group calls (cykafka/admin_share.py) on Apache Kafka 4.4 with share.version=1 (the `share_kafka`
fixture): the group configs on the GROUP resource, list and describe, the start offsets listed, altered and
deleted, the group deleted; each checked against what a ShareConsumer then reads."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from cykafka import (
    AcknowledgeType,
    Admin,
    BrokerResponseError,
    ConfigResource,
    InvalidArgumentError,
    NewTopic,
    Producer,
    ShareConsumer,
    TopicPartition,
)
from cykafka.admin_share import SharePartitionOffsetInfo
from cykafka.protocol.error_codes import ErrorCode

pytestmark = pytest.mark.slow


def _poll_until(consumer: ShareConsumer, count: int, timeout_s: float = 30) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got.extend(consumer.poll(0.5))
    return got


def _start_offset(admin: Admin, group: str, tp: TopicPartition, want: int) -> SharePartitionOffsetInfo | None:
    """The partition's offsets once its start offset is `want` (the share coordinator writes the state it is
    handed), bounded; else the last seen."""
    info = None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        info = admin.list_share_group_offsets(group).get(tp)
        if info is not None and info.result().start_offset == want:
            return info.result()
        time.sleep(0.2)
    return info.result() if info is not None else None


def test_share_group_admin_configs_list_describe_offsets_alter_delete(share_kafka: Any) -> None:
    bootstrap = share_kafka.bootstrap_servers
    topic, group = f"adm-{uuid.uuid4().hex[:8]}", f"grp-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0)
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
        with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer:
            for i in range(10):
                producer.send(topic, value=str(i).encode())
            producer.flush(30)
        # the group configs, on the GROUP resource
        resource = ConfigResource("group", group)
        changed = admin.incremental_alter_configs({resource: [("share.auto.offset.reset", "set", "earliest"),
                                                              ("share.record.lock.duration.ms", "set", "7000")]})
        assert changed[resource].result() is None
        configs = admin.describe_configs([resource])[resource].result()
        assert configs["share.auto.offset.reset"].value == "earliest"
        assert configs["share.record.lock.duration.ms"].value == "7000"
        assert configs["share.record.lock.duration.ms"].source == "GROUP_CONFIG"

        member = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "adm-member",
                                "share.acknowledgement.mode": "explicit", "max.poll.records": 10})
        member.subscribe([topic])
        try:
            records = _poll_until(member, 10)
            assert [r.offset for r in records] == list(range(10))
            for r in records:  # 0-3 accepted, 4-9 still held
                if r.offset < 4:
                    member.acknowledge(r, AcknowledgeType.ACCEPT)
            assert member.commit_sync(10) == {tp: None}
            listed = admin.list_share_groups()
            assert [(g.group_id, g.state) for g in listed if g.group_id == group] == [(group, "Stable")]
            assert group not in [g.group_id for g in admin.list_share_groups(states=["Empty"])]
            described = admin.describe_share_groups([group])[group].result()
            assert described.state == "Stable" and described.assignor
            [m] = described.members
            assert (m.member_id, m.client_id, m.subscribed_topics, m.assignment) == (
                member.member_id, "adm-member", (topic,), (tp,))
            info = _start_offset(admin, group, tp, 4)
            print(f"start offsets with a member holding 4-9: {info}")
            assert info is not None and info.start_offset == 4
            refused = admin.alter_share_group_offsets(group, {tp: 8})[tp].error
            assert isinstance(refused, BrokerResponseError) and refused.code == ErrorCode.NON_EMPTY_GROUP, refused
            for r in records[4:]:
                member.acknowledge(r, AcknowledgeType.RELEASE)
        finally:
            member.close(10)

        # no members: the start offset moves to 8; a new member reads 8 and 9 only
        assert admin.alter_share_group_offsets(group, {tp: 8})[tp].result() is None
        info = _start_offset(admin, group, tp, 8)
        assert info is not None and info.start_offset == 8
        with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as reader:
            reader.subscribe([topic])
            got = _poll_until(reader, 2)
            assert [(r.offset, r.delivery_count) for r in got] == [(8, 1), (9, 1)]
            assert reader.poll(1.0) == []

        # the topic's state deleted, then the group
        deleted = admin.delete_share_group_offsets(group, [topic])
        assert deleted[topic].result() is None
        assert tp not in admin.list_share_group_offsets(group) or \
            admin.list_share_group_offsets(group)[tp].result().start_offset == -1
        assert admin.delete_share_groups([group])[group].result() is None
        gone = admin.describe_share_groups([group])[group].error
        assert isinstance(gone, BrokerResponseError) and gone.code == ErrorCode.GROUP_ID_NOT_FOUND, gone
        assert group not in [g.group_id for g in admin.list_share_groups()]
        with pytest.raises(InvalidArgumentError, match=r"start offset of .* must be an int >= 0"):
            admin.alter_share_group_offsets(group, {tp: -5})
        with pytest.raises(InvalidArgumentError, match="list of group ids"):
            admin.describe_share_groups(group)
