"""kafka-python's kwargs into Kafka's config keys: its defaults, the kwargs with no effect here, the
renamed ones, the bootstrap servers, the (de)serializers (a kwarg cykafka cannot honour is a KafkaConfigurationError
naming it); and the small helpers the clients share (cykafka's key sets, offsets, metrics in kafka-python's shape).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from cykafka.compat.kafka.errors import KafkaConfigurationError, KafkaError
from cykafka.compat.kafka.structs import OffsetAndMetadata
from cykafka.errors import DOCS_URL
from cykafka.metrics import MetricsSnapshot
from cykafka.ports.values import OffsetAndMetadata as _CyOffsetAndMetadata

# -- config: kafka-python's kwargs into Kafka's keys ----------------------------------------------------------------

_INF = float("inf")
# kwargs that change nothing in cykafka (client internals of kafka-python): accepted at any value
_NO_EFFECT = frozenset({
    "api_version", "api_version_auto_timeout_ms", "bootstrap_timeout_ms", "metric_reporters", "metrics_enabled",
    "metrics_num_samples", "metrics_sample_window_ms", "metric_group_prefix", "selector", "kafka_client",
    "socket_options", "receive_message_max_bytes", "enable_incremental_fetch_sessions",
})
_SHARED_DEFAULTS: dict[str, object] = {
    "bootstrap_servers": "localhost", "client_id": None, "request_timeout_ms": 30000, "retry_backoff_ms": 100,
    "reconnect_backoff_ms": 50, "reconnect_backoff_max_ms": 30000, "metadata_max_age_ms": 300000,
    "connections_max_idle_ms": 540000, "receive_buffer_bytes": None, "send_buffer_bytes": None,
    "security_protocol": "PLAINTEXT", "ssl_context": None, "ssl_check_hostname": True, "ssl_cafile": None,
    "ssl_certfile": None, "ssl_keyfile": None, "ssl_crlfile": None, "ssl_password": None, "ssl_ciphers": None,
    "sasl_mechanism": None, "sasl_plain_username": None, "sasl_plain_password": None, "sasl_kerberos_name": None,
    "sasl_kerberos_service_name": "kafka", "sasl_kerberos_domain_name": None, "sasl_oauth_token_provider": None,
    "proxy_url": None, "socks5_proxy": None, "client_dns_lookup": "use_all_dns_ips",
    "allow_auto_create_topics": True, "max_in_flight_requests_per_connection": 5,
    **dict.fromkeys(_NO_EFFECT),
}
PRODUCER_DEFAULTS: dict[str, object] = {  # kafka-python 3.x KafkaProducer's
    **_SHARED_DEFAULTS, "key_serializer": None, "value_serializer": None, "enable_idempotence": True,
    "transactional_id": None, "transaction_timeout_ms": 60000, "delivery_timeout_ms": 120000, "acks": -1,
    "compression_type": None, "retries": _INF, "batch_size": 16384, "linger_ms": 0, "partitioner": None,
    "max_block_ms": 60000, "max_request_size": 1048576,
}
CONSUMER_DEFAULTS: dict[str, object] = {  # kafka-python 3.x KafkaConsumer's
    **_SHARED_DEFAULTS, "client_rack": "", "group_id": None, "group_instance_id": None, "key_deserializer": None,
    "value_deserializer": None, "fetch_max_wait_ms": 500, "fetch_min_bytes": 1, "fetch_max_bytes": 52428800,
    "max_partition_fetch_bytes": 1048576, "auto_offset_reset": "latest", "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000, "default_offset_commit_callback": None, "check_crcs": True,
    "isolation_level": "read_uncommitted", "partition_assignment_strategy": None, "max_poll_records": 500,
    "max_poll_interval_ms": 300000, "session_timeout_ms": 45000, "heartbeat_interval_ms": 3000,
    "consumer_timeout_ms": _INF, "exclude_internal_topics": True,
}
ADMIN_DEFAULTS: dict[str, object] = {**_SHARED_DEFAULTS}
# kwarg -> Kafka's key, for those passed on as they are
_SAME = {
    "client_id": "client.id", "request_timeout_ms": "request.timeout.ms", "retry_backoff_ms": "retry.backoff.ms",
    "reconnect_backoff_ms": "reconnect.backoff.ms", "reconnect_backoff_max_ms": "reconnect.backoff.max.ms",
    "metadata_max_age_ms": "metadata.max.age.ms", "connections_max_idle_ms": "connections.max.idle.ms",
    "receive_buffer_bytes": "receive.buffer.bytes", "send_buffer_bytes": "send.buffer.bytes",
    "security_protocol": "security.protocol", "ssl_check_hostname": "ssl.check.hostname",
    "ssl_cafile": "ssl.ca.location", "ssl_certfile": "ssl.certificate.location", "ssl_keyfile": "ssl.key.location",
    "ssl_password": "ssl.key.password", "sasl_mechanism": "sasl.mechanism", "sasl_plain_username": "sasl.username",
    "sasl_plain_password": "sasl.password", "client_dns_lookup": "client.dns.lookup",
    # producer
    "enable_idempotence": "enable.idempotence", "transactional_id": "transactional.id",
    "transaction_timeout_ms": "transaction.timeout.ms", "delivery_timeout_ms": "delivery.timeout.ms",
    "batch_size": "batch.size", "max_batch_size": "batch.size", "linger_ms": "linger.ms",
    "max_block_ms": "max.block.ms",
    "max_request_size": "max.request.size",
    # consumer
    "group_id": "group.id", "group_instance_id": "group.instance.id", "client_rack": "client.rack",
    "fetch_max_wait_ms": "fetch.max.wait.ms", "fetch_min_bytes": "fetch.min.bytes",
    "fetch_max_bytes": "fetch.max.bytes", "max_partition_fetch_bytes": "max.partition.fetch.bytes",
    "auto_offset_reset": "auto.offset.reset", "auto_commit_interval_ms": "auto.commit.interval.ms",
    "check_crcs": "check.crcs", "isolation_level": "isolation.level",
    "allow_auto_create_topics": "allow.auto.create.topics", "max_poll_records": "max.poll.records",
    "max_poll_interval_ms": "max.poll.interval.ms", "session_timeout_ms": "session.timeout.ms",
    "heartbeat_interval_ms": "heartbeat.interval.ms",
}
_ACKS: dict[object, str] = {-1: "all", "all": "all", 0: "0", 1: "1", "0": "0", "1": "1", "-1": "all"}
_ASSIGNORS = {"range": "range", "roundrobin": "roundrobin", "cooperative-sticky": "cooperative-sticky"}


def bootstrap(servers: object) -> str:
    """kafka-python's bootstrap_servers (a str or a list of 'host[:port]', default port 9092) as Kafka's value."""
    items = [servers] if isinstance(servers, str) else list(servers)  # type: ignore[call-overload]
    out = []
    for item in items:
        for one in str(item).split(","):
            one = one.strip()
            if one and not re.search(r":\d+$", one):
                one += ":9092"
            if one:
                out.append(one)
    return ",".join(out)


def kafka_config(configs: Mapping[str, object], defaults: Mapping[str, object], accepted: frozenset[str],
                 handled: frozenset[str], unknown_error: type[KafkaError] | None = None) -> dict[str, object]:
    """kafka-python (or aiokafka) kwargs as a cykafka config: unknown kwargs (not the peer's: `unknown_error`,
    default KafkaConfigurationError) and ones cykafka cannot honour (not at the peer's default:
    KafkaConfigurationError) are refused naming them. `accepted`: the Kafka keys the client takes; `handled`: kwargs
    the caller deals with itself."""
    unknown = sorted(set(configs) - set(defaults))
    if unknown:
        raise (unknown_error or KafkaConfigurationError)(f"Unrecognized configs: {unknown}")
    out: dict[str, object] = {}
    for name, default in defaults.items():
        value = configs.get(name, default)
        if name in handled or name in _NO_EFFECT:
            continue
        if name == "bootstrap_servers":
            out["bootstrap.servers"] = bootstrap(value)
        elif name == "acks":
            acks = _ACKS.get(value)
            if acks is None:
                raise KafkaConfigurationError(f"acks: {value!r} is none of 0, 1, -1, 'all'")
            out["acks"] = acks
        elif name == "compression_type":
            out["compression.type"] = "none" if value is None else value
        elif name == "retries":
            if value != _INF:
                out["retries"] = value
        elif name == "partition_assignment_strategy":
            if value is not None:
                names = [_ASSIGNORS.get(str(getattr(a, "name", a))) for a in value]  # type: ignore[attr-defined]
                if None in names:
                    raise KafkaConfigurationError(f"partition_assignment_strategy: {value!r}: cykafka has the range, "
                                                  "roundrobin and cooperative-sticky assignors (by their name)")
                out["partition.assignment.strategy"] = ",".join(n for n in names if n)
        elif name in _SAME and _SAME[name] in accepted:
            if value is not None and not (name == "client_rack" and value == ""):
                out[_SAME[name]] = value
        elif value != default:
            raise KafkaConfigurationError(f"{name}={value!r}: cykafka.compat.kafka cannot honour it (only its "
                                          f"default {default!r}); {DOCS_URL}migrating-kafka-python.md")
    return out


def _serializer(serializer: object, what: str) -> Callable[[str, Any, Any], Any] | None:
    """kafka-python's (de)serializer: an object with serialize/deserialize(topic, headers, data), or a function of
    the data alone (called for None too, as kafka-python 3.x does)."""
    if serializer is None:
        return None
    method = getattr(serializer, what, None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(serializer):
        fn = serializer
        return lambda topic, headers, data: fn(data)
    raise KafkaConfigurationError(f"{what[:-3]}er: {serializer!r} is neither callable nor has {what}()")


SELF_ASSIGN_REFRESH_S = 5.0  # a group-less subscription looks for new topics / partitions this often
WAIT_FOR_TOPICS_POLL_S = 0.05  # KafkaAdminClient.wait_for_topics asks the metadata this often
def _cy_producer_keys() -> frozenset[str]:
    from cykafka.config import PRODUCER_KEYS
    return PRODUCER_KEYS


def _cy_consumer_keys() -> frozenset[str]:
    from cykafka.config import CONSUMER_KEYS
    return CONSUMER_KEYS


def _cy_admin_keys() -> frozenset[str]:
    from cykafka.config import ADMIN_KEYS
    return ADMIN_KEYS


def _cy_offset(om: object) -> _CyOffsetAndMetadata | int:
    if isinstance(om, OffsetAndMetadata):
        return _CyOffsetAndMetadata(om.offset, om.metadata, -1 if om.leader_epoch is None else om.leader_epoch)  # type: ignore[arg-type]
    return om  # type: ignore[return-value]


def _grouped(snapshot: MetricsSnapshot) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name, value in snapshot.all.items():
        if len(name.tags) == 1:  # client-id only: a client-level metric
            out.setdefault(name.group, {})[name.name] = value
    return out


def _seconds(timeout_ms: int | None) -> float | None:
    return None if timeout_ms is None else timeout_ms / 1000


def _now() -> float:
    return time.monotonic()


