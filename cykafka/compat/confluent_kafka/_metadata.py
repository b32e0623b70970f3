"""list_topics() for the compat Producer, Consumer and AdminClient: owns the cykafka Admin a client asks for
metadata (made on the first call, closed with the client) and turning its answers into ClusterMetadata.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any

from cykafka import errors
from cykafka.admin import Admin
from cykafka.compat.confluent_kafka._types import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata
from cykafka.compat.confluent_kafka.error import KafkaError, error_from, exception_from
from cykafka.config import ADMIN_KEYS
from cykafka.config_spellings import ALIASES


def timeout_ms(timeout_s: float | None) -> int | None:
    """confluent-kafka's timeouts: seconds, None or a negative number for none (then cykafka's default)."""
    if timeout_s is None or timeout_s < 0:
        return None
    return int(timeout_s * 1000)


class MetadataSource:
    """The Admin behind list_topics(), made from the client's connection keys on first use."""

    def __init__(self, cykafka_config: Mapping[str, Any]) -> None:
        self._config = {k: v for k, v in cykafka_config.items() if ALIASES.get(k, k) in ADMIN_KEYS}
        self._admin: Admin | None = None
        self._lock = threading.Lock()

    def admin(self) -> Admin:
        with self._lock:
            if self._admin is None:
                self._admin = Admin(self._config)
                weakref.finalize(self, self._admin.close)
            return self._admin

    def close(self) -> None:
        with self._lock:
            if self._admin is not None:
                self._admin.close()
                self._admin = None

    def list_topics(self, topic: str | None = None, timeout: float | None = -1) -> ClusterMetadata:
        return cluster_metadata(self.admin(), topic, timeout)


def cluster_metadata(admin: Admin, topic: str | None, timeout: float | None) -> ClusterMetadata:
    """ClusterMetadata of every topic, or of one (its TopicMetadata.error set when the cluster has no such topic)."""
    wait_ms = timeout_ms(timeout)
    md = ClusterMetadata()
    try:
        cluster = admin.describe_cluster(timeout_ms=wait_ms)
        if topic is None:
            found = admin.list_topics(timeout_ms=wait_ms)
            descriptions: dict[str, Any] = {name: d for name, d in found.items()}
        else:
            descriptions = {}
            result = admin.describe_topics([topic], timeout_ms=wait_ms)[topic]
            if result.error is not None:
                md.topics[topic] = TopicMetadata(topic, {}, error_from(result.error))
            else:
                descriptions[topic] = result.result()
    except errors.KafkaError as e:
        raise exception_from(e) from e
    md.cluster_id = cluster.cluster_id
    md.controller_id = cluster.controller_id
    md.brokers = {n.node_id: BrokerMetadata(n.node_id, n.host, n.port) for n in cluster.nodes}
    for name, description in descriptions.items():
        md.topics[name] = TopicMetadata(name, {
            p.partition: PartitionMetadata(p.partition, p.leader, list(p.replicas), list(p.isr),
                                           KafkaError(p.error_code) if p.error_code else None)
            for p in description.partitions})
    return md
