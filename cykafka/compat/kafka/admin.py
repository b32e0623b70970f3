"""kafka-python's KafkaAdminClient over cykafka's Admin: topics, partitions, configs, groups and their
offsets, answered in kafka-python's shapes. `from cykafka.compat.kafka.admin import KafkaAdminClient, NewTopic`
works as `from kafka.admin import ...` does (NewPartitions, ConfigResource and ConfigResourceType too).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from cykafka.admin import Admin
from cykafka.admin_types import ConfigResource as _CyConfigResource
from cykafka.admin_types import NewTopic as _CyNewTopic
from cykafka.compat.kafka._config import ADMIN_DEFAULTS, WAIT_FOR_TOPICS_POLL_S, _cy_admin_keys, _now, kafka_config
from cykafka.compat.kafka.errors import _T, KafkaTimeoutError, translated
from cykafka.compat.kafka.structs import (
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OffsetAndMetadata,
)
from cykafka.ports.values import TopicPartition

__all__ = ["ConfigResource", "ConfigResourceType", "KafkaAdminClient", "NewPartitions", "NewTopic"]

# -- admin -------------------------------------------------------------------------------------------------------


class KafkaAdminClient:
    """kafka-python's KafkaAdminClient over cykafka.Admin (topics, groups, configs, partitions); a failed item
    raises its kafka-python error (raise_errors=True, kafka-python's default)."""

    DEFAULT_CONFIG = ADMIN_DEFAULTS

    def __init__(self, **configs: Any) -> None:
        self.config = {**ADMIN_DEFAULTS, **configs}
        kafka = kafka_config(configs, ADMIN_DEFAULTS, _cy_admin_keys(),
                             frozenset({"max_in_flight_requests_per_connection", "allow_auto_create_topics"}))
        with _T:
            self._admin = Admin(kafka)

    @property
    def admin(self) -> Admin:
        """The cykafka.Admin underneath."""
        return self._admin

    def close(self) -> None:
        self._admin.close()

    @staticmethod
    def _raise_first(results: Mapping[Any, Any], raise_errors: bool) -> None:
        if raise_errors:
            for result in results.values():
                if result.error is not None:
                    raise translated(result.error)

    def create_topics(self, new_topics: Any, timeout_ms: int | None = None, validate_only: bool = False,
                      raise_errors: bool = True, wait_for_metadata: bool = False) -> dict[str, Any]:
        """new_topics: [NewTopic], topic names, or {name: {num_partitions, replication_factor, configs}}.
        Returns {'topics': [{'name', 'error_code', 'error_message'}]}. wait_for_metadata: then wait_for_topics."""
        topics: list[_CyNewTopic] = []
        if isinstance(new_topics, Mapping):
            for name, spec in new_topics.items():
                topics.append(_CyNewTopic(name, spec.get("num_partitions", -1), spec.get("replication_factor", -1),
                                          spec.get("configs") or None))
        else:
            for t in new_topics:
                if isinstance(t, str):
                    topics.append(_CyNewTopic(t, -1, -1))
                else:
                    topics.append(_CyNewTopic(t.name, t.num_partitions, t.replication_factor,
                                              t.topic_configs or None))
        with _T:
            results = self._admin.create_topics(topics, validate_only=validate_only, timeout_ms=timeout_ms)
        self._raise_first(results, raise_errors)
        if wait_for_metadata and not validate_only:
            self.wait_for_topics([name for name, r in results.items() if r.error is None])
        return {"topics": [_item(name, r) for name, r in results.items()]}

    def wait_for_topics(self, topic_names: Iterable[str], timeout_ms: int = 10000) -> None:
        """Waits until the metadata lists every topic with a leader for each partition (a broker lists a new topic
        a moment after CreateTopics answered); KafkaTimeoutError after timeout_ms."""
        names = list(topic_names)
        deadline_s = _now() + timeout_ms / 1000
        while True:
            with _T:
                described = self._admin.describe_topics(names)
            if all(r.error is None and r.value is not None and r.value.partitions
                   and all(p.leader >= 0 for p in r.value.partitions) for r in described.values()):
                return
            if _now() >= deadline_s:
                raise KafkaTimeoutError(f"topics {names} not ready after {timeout_ms} ms")
            time.sleep(WAIT_FOR_TOPICS_POLL_S)

    def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None,
                      raise_errors: bool = True) -> dict[str, Any]:
        with _T:
            results = self._admin.delete_topics(list(topics), timeout_ms=timeout_ms)
        self._raise_first(results, raise_errors)
        return {"responses": [_item(name, r) for name, r in results.items()]}

    def create_partitions(self, topic_partitions: Mapping[str, NewPartitions], timeout_ms: int | None = None,
                          validate_only: bool = False, raise_errors: bool = True) -> dict[str, Any]:
        from cykafka.admin_types import NewPartitions as _CyNewPartitions
        asked = {name: _CyNewPartitions(np.total_count, np.new_assignments) for name, np in topic_partitions.items()}
        with _T:
            results = self._admin.create_partitions(asked, validate_only=validate_only, timeout_ms=timeout_ms)
        self._raise_first(results, raise_errors)
        return {"results": [_item(name, r) for name, r in results.items()]}

    def list_topics(self) -> list[str]:
        with _T:
            return list(self._admin.list_topics())

    def describe_topics(self, topics: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """[{'name', 'error_code', 'is_internal', 'partitions': [{'partition_index', 'leader_id', 'leader_epoch',
        'replica_nodes', 'isr_nodes', 'error_code'}]}]"""
        with _T:
            if topics is None:
                found = {name: d for name, d in self._admin.list_topics().items()}
                described: dict[str, Any] = {name: (d, None) for name, d in found.items()}
            else:
                described = {name: (r.value, r.error) for name, r in self._admin.describe_topics(list(topics)).items()}
        out = []
        for name, (d, error) in described.items():
            if error is not None:
                out.append({"name": name, "error_code": error.code, "is_internal": False, "partitions": []})
                continue
            out.append({"name": name, "error_code": 0, "is_internal": d.internal, "partitions": [
                {"partition_index": p.partition, "leader_id": p.leader, "leader_epoch": p.leader_epoch,
                 "replica_nodes": list(p.replicas), "isr_nodes": list(p.isr), "error_code": p.error_code}
                for p in d.partitions]})
        return out

    def list_groups(self, broker_ids: object = None, states_filter: Iterable[str] | None = None,
                    types_filter: object = None) -> list[dict[str, Any]]:
        """kafka-python 3.x's: [{'group_id', 'protocol_type', 'group_state'}] of every group."""
        with _T:
            listed = self._admin.list_consumer_groups(states=states_filter)
        return [{"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state} for g in listed]

    def list_consumer_groups(self, broker_ids: object = None,
                             states: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """kafka-python 2.x's: [(group_id, protocol_type)]."""
        return [(g["group_id"], g["protocol_type"]) for g in self.list_groups(states_filter=states)]

    def describe_groups(self, group_ids: Iterable[str], group_coordinator_id: object = None,
                        include_authorized_operations: bool = False) -> dict[str, dict[str, Any]]:
        """{group_id: {'group_id', 'group_state', 'protocol_type', 'protocol_data', 'members': [{'member_id',
        'group_instance_id', 'client_id', 'client_host', 'member_assignment' (raw bytes)}]}}; a group's error is
        raised (kafka-python: "Any errors are immediately raised")."""
        with _T:
            got = self._admin.describe_consumer_groups(list(group_ids))
        out = {}
        for group_id, result in got.items():
            if result.error is not None:
                raise translated(result.error)
            d = result.result()
            out[group_id] = {"group_id": d.group_id, "group_state": d.state, "protocol_type": d.protocol_type,
                             "protocol_data": d.partition_assignor, "members": [
                                 {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                                  "client_id": m.client_id, "client_host": m.host,
                                  "member_assignment": m.assignment} for m in d.members]}
        return out

    def list_consumer_group_offsets(self, group_id: str, group_coordinator_id: object = None,
                                    partitions: Iterable[TopicPartition] | None = None
                                    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """{TopicPartition: OffsetAndMetadata} of a group's committed offsets (kafka-python 2.x's call)."""
        with _T:
            got = self._admin.list_consumer_group_offsets(group_id, partitions)
        out = {}
        for tp, result in got.items():
            if result.error is not None:
                raise translated(result.error)
            om = result.result()
            out[tp] = OffsetAndMetadata(om.offset, om.metadata or "", om.leader_epoch)
        return out

    def list_group_offsets(self, group_ids: Iterable[str]) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """kafka-python 3.x's: {group_id: {TopicPartition: OffsetAndMetadata}} for each group named."""
        return {g: self.list_consumer_group_offsets(g) for g in group_ids}

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, BaseException | None]:
        with _T:
            got = self._admin.delete_consumer_groups(list(group_ids))
        return {g: None if r.error is None else translated(r.error) for g, r in got.items()}

    delete_consumer_groups = delete_groups

    def describe_configs(self, config_resources: Iterable[Any], include_synonyms: bool = False
                         ) -> dict[tuple[str, str], dict[str, str | None]]:
        """{(type, name): {config name: value}}; a resource is a ConfigResource (kafka-python's or cykafka's) or
        (type, name)."""
        resources = [_cy_resource(r) for r in config_resources]
        with _T:
            got = self._admin.describe_configs(resources)
        out = {}
        for res, result in got.items():
            if result.error is not None:
                raise translated(result.error)
            out[(res.type, res.name)] = {name: entry.value for name, entry in result.result().items()}
        return out


def _cy_resource(resource: Any) -> _CyConfigResource:
    """describe_configs' resource as cykafka's ConfigResource (its type name lower-case: "topic", "broker")."""
    if isinstance(resource, _CyConfigResource):
        return resource
    kind, name = (resource.resource_type, resource.name) if isinstance(resource, ConfigResource) else resource
    return _CyConfigResource((kind.name if isinstance(kind, ConfigResourceType) else str(kind)).lower(), name)


def _item(name: str, result: Any) -> dict[str, Any]:
    error = result.error
    return {"name": name, "error_code": 0 if error is None else error.code,
            "error_message": None if error is None else str(error)}
