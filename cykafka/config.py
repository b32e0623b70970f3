"""Client configuration: Kafka's own keys, Java's defaults, validation that names the key and the accepted values.

One table of keys (VALIDATORS) for every client; PRODUCER_KEYS, CONSUMER_KEYS and ADMIN_KEYS say which client takes
which. `ProducerConfig.parse(dict, **kwargs)` (ConsumerConfig's, AdminConfig's too) accepts dotted Kafka keys
(`linger.ms`) and underscore kwargs (`linger_ms=5`); unknown keys, other clients' keys and invalid values raise
ConfigError at construction. The connection keys every client shares (servers, timeouts, backoffs, security) are
checked by one set of rules (`_check_connection`) and become the ports' narrow settings (`_connection`): Admin and
the Consumer parse their own keys, never through a producer config. Differences from Java's defaults: docs/config.md.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from cykafka import ports  # codec names, level bounds (record-format facts) and the adapters' settings values
from cykafka.config_spellings import ALIASES, DEBUG_CONTEXTS, NOT_ALIASES
from cykafka.errors import DOCS_URL, ConfigError, InvalidArgumentError

log = logging.getLogger("cykafka.config")
Serializer = Callable[[Any], bytes | None]
T = TypeVar("T")
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5
INT16_MAX = 2**15 - 1
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _int(lo: int, hi: int) -> Callable[[str, object], int]:
    """An integer in [lo, hi]. Every int key is bounded as Java types it: _int32 (int) or _int64 (long)."""
    def check(key: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ConfigError(f"{key} must be an integer, got {value!r}")
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{key} must be an integer, got {value!r}") from None
        if not lo <= number <= hi:
            raise ConfigError(f"{key} must be in [{lo}, {hi}], got {number}")
        return number

    return check


def _int32(lo: int, hi: int = INT32_MAX) -> Callable[[str, object], int]:
    return _int(lo, hi)


def _int64(lo: int) -> Callable[[str, object], int]:
    return _int(lo, INT64_MAX)


def _bool(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{key} must be true or false, got {value!r}")


def _choice(*accepted: str) -> Callable[[str, object], str]:
    def check(key: str, value: object) -> str:
        text = str(value).lower() if isinstance(value, str | int) and not isinstance(value, bool) else None
        if text not in accepted:
            raise ConfigError(f"{key} must be one of {', '.join(accepted)}; got {value!r}")
        return text

    return check


def _acks(key: str, value: object) -> int:
    text = str(value).lower() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    mapping = {"all": -1, "-1": -1, "0": 0, "1": 1}
    if text not in mapping:
        raise ConfigError(f"{key} must be one of all, -1, 0, 1; got {value!r}")
    return mapping[text]


def _servers(key: str, value: object) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Sequence) or isinstance(items, bytes):
        raise ConfigError(f"{key} must be a 'host:port,host:port' string or a list of them, got {value!r}")
    servers = tuple(str(s).strip() for s in items if str(s).strip())
    for server in servers:
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or not _host_name_ok(host):
            raise ConfigError(f"{key} entries must be host:port (a host name, IPv4 or [IPv6] address), got "
                              f"{server!r}")
    if not servers:
        raise ConfigError(f"{key} must name at least one host:port")
    return servers


def _host_name_ok(host: str) -> bool:
    """No spaces or control characters, DNS labels of 1-63 characters (what getaddrinfo would refuse)."""
    if not host.isprintable() or any(c.isspace() for c in host):
        return False
    if host.startswith("[") or ":" in host:  # an IPv6 literal
        return True
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return True


def _protocol_str(nullable: bool) -> Callable[[str, object], str | None]:
    """A string the Kafka protocol can carry (UTF-8, at most 32767 bytes); None: unset (None if nullable, else "")."""
    def check(key: str, value: object) -> str | None:
        if value is None:
            return None if nullable else ""
        if not isinstance(value, str) or (nullable and not value):
            raise ConfigError(f"{key} must be a {'non-empty string or None' if nullable else 'string'}, got "
                              f"{value!r}")
        try:
            size_bytes = len(value.encode())
        except UnicodeEncodeError:
            raise ConfigError(f"{key} must be valid text (UTF-8), got {value!r}") from None
        if size_bytes > INT16_MAX:
            raise ConfigError(f"{key} must be at most {INT16_MAX} bytes in UTF-8, got {size_bytes}")
        return value

    return check


def _optional_str(key: str, value: object) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return value
    raise ConfigError(f"{key} must be a non-empty string or None, got {value!r}")


def _callable_or_none(key: str, value: object) -> Any:
    if value is None or callable(value):
        return value
    raise ConfigError(f"{key} must be a callable or None, got {value!r}")


def _secret(key: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(f"{key} must be a string or None, got a {type(value).__name__}")  # never echo the value


def _path(directory_ok: bool) -> Callable[[str, object], str | None]:
    def check(key: str, value: object) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str | os.PathLike):
            raise ConfigError(f"{key} must be a file path, got {value!r}")
        path = os.fspath(value)
        if not (os.path.isfile(path) or (directory_ok and os.path.isdir(path))):
            raise ConfigError(f"{key}: {path!r} does not exist or is not a readable "
                              f"{'file or directory' if directory_ok else 'file'}")
        return str(path)

    return check


def _endpoint_identification(key: str, value: object) -> str:
    text = value.lower() if isinstance(value, str) else None
    if text not in ("https", "", "none"):
        raise ConfigError(f"{key} must be 'https' (verify the broker's hostname) or '' / 'none' (do not); "
                          f"got {value!r}")
    return "https" if text == "https" else ""


SASL_MECHANISMS = ports.SASL_MECHANISMS


def _sasl_mechanism(key: str, value: object) -> str | None:
    text = value.upper() if isinstance(value, str) else None
    if value is None:
        return None
    if text == "GSSAPI":
        raise ConfigError(f"{key}: GSSAPI (Kerberos, Java's default) is not supported by cykafka; accepted: "
                          f"{', '.join(SASL_MECHANISMS)}")
    if text not in SASL_MECHANISMS:
        raise ConfigError(f"{key} must be one of {', '.join(SASL_MECHANISMS)}; got {value!r}")
    return text


def _serializer(key: str, value: object) -> Any:
    if value is None or callable(value) or (isinstance(value, str) and value in ("bytes", "str", "int", "json")):
        return value
    raise ConfigError(f"{key} must be a callable or one of bytes, str, int, json; got {value!r}")


def _deserializer(key: str, value: object) -> Any:
    if value is None or callable(value) or (isinstance(value, str) and value in ("bytes", "str", "int", "json")):
        return value
    raise ConfigError(f"{key} must be a callable (data) or (data, ctx) -> object, e.g. a confluent-kafka "
                      f"Deserializer, or one of bytes, str, int, json; got {value!r}")


def _interceptors(key: str, value: object) -> tuple[Any, ...]:
    items = () if value is None else tuple(value) if isinstance(value, list | tuple) else (value,)
    for item in items:
        if not callable(getattr(item, "on_send", None)):
            raise ConfigError(f"{key} entries must have on_send/on_acknowledgement/close methods, got {item!r}")
    return items




def _debug(key: str, value: object) -> tuple[str, ...]:
    """librdkafka's `debug`: a comma-separated list of its contexts; the loggers they name (DEBUG_CONTEXTS)."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list | tuple) else None
    if items is None:
        raise ConfigError(f"{key} must be a comma-separated list of librdkafka debug contexts "
                          f"({', '.join(DEBUG_CONTEXTS)}), got {value!r}")
    loggers: list[str] = []
    for item in (str(i).strip().lower() for i in items):
        if item and item not in DEBUG_CONTEXTS:
            raise ConfigError(f"{key}: {item!r} is not a librdkafka debug context; accepted: "
                              f"{', '.join(DEBUG_CONTEXTS)}")
        loggers.extend(DEBUG_CONTEXTS.get(item, ()))
    return tuple(dict.fromkeys(loggers))


def apply_debug(loggers: Sequence[str]) -> None:
    """`debug` takes effect: its loggers at DEBUG (Python's logging is process-wide: every client in the process
    then logs those components at DEBUG; give them a handler to see it, e.g. logging.basicConfig())."""
    for name in loggers:
        logging.getLogger(name).setLevel(logging.DEBUG)


# auto.offset.reset: librdkafka's and kafka-python's words for Java's three
_OFFSET_RESET = {"earliest": "earliest", "smallest": "earliest", "beginning": "earliest",
                 "latest": "latest", "largest": "latest", "end": "latest", "none": "none", "error": "none"}


def _offset_reset(key: str, value: object) -> str:
    text = value.lower() if isinstance(value, str) else None
    if text not in _OFFSET_RESET:
        raise ConfigError(f"{key} must be one of earliest, latest, none (librdkafka's smallest/beginning, "
                          f"largest/end and error are taken as those); got {value!r}")
    return _OFFSET_RESET[text]


ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
_JAVA_ASSIGNORS = {"RangeAssignor": "range", "RoundRobinAssignor": "roundrobin",
                   "CooperativeStickyAssignor": "cooperative-sticky"}  # Java's class names (simple or qualified)


def _assignors(key: str, value: object) -> tuple[str, ...]:
    """A list (or comma-separated string) of assignor names, in preference order; Java's class names too."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise ConfigError(f"{key} must be a non-empty list (or comma-separated string) of {', '.join(ASSIGNORS)}; "
                          f"got {value!r}")
    names = []
    for item in items:
        text = str(item).strip()
        name = _JAVA_ASSIGNORS.get(text.rpartition(".")[2], text.lower())
        if name not in ASSIGNORS:
            raise ConfigError(f"{key} entries must be one of {', '.join(ASSIGNORS)}; got {item!r}")
        names.append(name)
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """Validated producer settings; attribute names are the Kafka keys with dots as underscores."""

    bootstrap_servers: tuple[str, ...] = ()
    client_id: str = ""
    acks: int = -1
    linger_ms: int = 5
    batch_size: int = 16384
    buffer_memory: int = 32 * 1024 * 1024
    max_block_ms: int = 60000
    delivery_timeout_ms: int = 120000
    request_timeout_ms: int = 30000
    max_request_size: int = 1024 * 1024
    compression_type: str = "none"
    compression_gzip_level: int = ports.GZIP_LEVEL_DEFAULT
    compression_lz4_level: int = ports.LZ4_LEVEL_DEFAULT
    compression_zstd_level: int = ports.ZSTD_LEVEL_DEFAULT
    retries: int = INT32_MAX
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000
    socket_connection_setup_timeout_ms: int = 10000
    socket_connection_setup_timeout_max_ms: int = 30000
    max_in_flight_requests_per_connection: int = 5
    metadata_max_age_ms: int = 300000
    metadata_max_idle_ms: int = 300000
    allow_auto_create_topics: bool = True
    enable_idempotence: bool = True
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60000
    partitioner_class: Any = None
    partitioner_ignore_keys: bool = False
    partitioner_adaptive_partitioning_enable: bool = True
    partitioner_availability_timeout_ms: int = 0
    send_buffer_bytes: int = 131072
    receive_buffer_bytes: int = 32768
    connections_max_idle_ms: int = 540000
    key_serializer: Any = None
    value_serializer: Any = None
    interceptor_classes: tuple[Any, ...] = ()
    security_protocol: str = "plaintext"
    ssl_ca_location: str | None = None  # None: the system's default CAs
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: str | None = None
    ssl_endpoint_identification_algorithm: str = "https"  # "" turns hostname verification off
    ssl_check_hostname: bool = True
    sasl_mechanism: str | None = None  # required with SASL_*: Java's default GSSAPI is not supported
    sasl_username: str | None = None
    sasl_password: str | None = None
    sasl_oauthbearer_config: str = ""  # passed to oauth_cb
    oauth_cb: Any = None  # oauth_cb(sasl.oauthbearer.config) -> (token, expiry_time_s), like confluent-kafka
    enable_metrics_push: bool = True  # KIP-714: push metrics to a broker whose subscriptions ask for them (Java's)
    error_cb: Any = None  # error_cb(KafkaError): all brokers down, authentication failed, fatal producer errors
    socket_keepalive_enable: bool = False
    client_dns_lookup: str = "use_all_dns_ips"
    debug: tuple[str, ...] = ()  # the loggers librdkafka's debug contexts name (set to DEBUG at construction)
    statistics_interval_ms: int = 0  # stats_cb(metrics as JSON) every this many ms; 0: never (docs/observability.md)
    stats_cb: Any = None
    # which keys the user set explicitly (Java changes some defaults only when a key was left unset)
    user_keys: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def parse(cls, config: Mapping[str, object] | None = None, **kwargs: object) -> ProducerConfig:
        merged, spelled = _given(config, kwargs, PRODUCER_KEYS, "producer")
        librdkafka_timeout = spelled.get("delivery.timeout.ms") == "message.timeout.ms"
        if librdkafka_timeout and str(merged["delivery.timeout.ms"]) == "0":
            merged["delivery.timeout.ms"] = INT32_MAX  # librdkafka's 0: no limit
        values = _validated(merged, spelled)
        _check_connection(values)
        cfg = cls(**values, user_keys=frozenset(merged))  # type: ignore[arg-type]
        if librdkafka_timeout:
            cfg = cfg._librdkafka_message_timeout()
        cfg._check_relations()
        return cfg._resolve_idempotence()

    def _librdkafka_message_timeout(self) -> ProducerConfig:
        """message.timeout.ms (librdkafka) bounds a record's whole delivery, and librdkafka lets it be shorter than a
        request's timeout; Java's delivery.timeout.ms must cover linger.ms + request.timeout.ms. Given as
        message.timeout.ms with request.timeout.ms unset, request.timeout.ms shrinks to fit (a request never
        outlives its records, as in librdkafka); set explicitly, the rule stands and names both keys."""
        fit_ms = self.delivery_timeout_ms - self.linger_ms
        if "request.timeout.ms" in self.user_keys or fit_ms >= self.request_timeout_ms:
            return self
        if fit_ms < 1:
            raise ConfigError(f"message.timeout.ms (cykafka's delivery.timeout.ms, {self.delivery_timeout_ms}) must "
                              f"be greater than linger.ms ({self.linger_ms}): a record must be able to wait for its "
                              f"batch and still be sent")
        return self.replace(request_timeout_ms=fit_ms)

    def _check_relations(self) -> None:
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ConfigError(
                f"delivery.timeout.ms ({self.delivery_timeout_ms}) must be >= linger.ms + request.timeout.ms "
                f"({self.linger_ms} + {self.request_timeout_ms})"
            )
        if self.batch_size > self.buffer_memory:
            raise ConfigError(f"batch.size ({self.batch_size}) must be <= buffer.memory ({self.buffer_memory})")

    def security_settings(self) -> ports.SecuritySettings:
        return _pick(ports.SecuritySettings, self)

    def connection_settings(self) -> ports.ConnectionSettings:
        """The narrow settings the transport takes (adapters never see a whole config)."""
        return _pick(ports.ConnectionSettings, self, security=self.security_settings(),
                     max_response_bytes=ports.MAX_RESPONSE_BYTES)

    def metadata_settings(self) -> ports.MetadataSettings:
        return _pick(ports.MetadataSettings, self)

    def __repr__(self) -> str:
        shown = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _SECRET_FIELDS and value not in (None, ""):
                value = "[hidden]"
            shown.append(f"{f.name}={value!r}")
        return f"ProducerConfig({', '.join(shown)})"

    def _resolve_idempotence(self) -> ProducerConfig:
        """Java's rules: idempotence needs acks=all, retries > 0 and max.in.flight <= 5. Set explicitly (or
        required by transactional.id), a conflict is a ConfigError; on only by default, it turns idempotence off."""
        explicit = "enable.idempotence" in self.user_keys
        if self.transactional_id is not None and explicit and not self.enable_idempotence:
            raise ConfigError("transactional.id requires enable.idempotence=true (or leave enable.idempotence "
                              "unset)")
        if not self.enable_idempotence:
            return self
        conflicts = []
        if self.acks != -1:
            conflicts.append(f"acks={self.acks} (must be all)")
        if self.retries == 0:
            conflicts.append("retries=0 (must be > 0)")
        if self.max_in_flight_requests_per_connection > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
            conflicts.append(f"max.in.flight.requests.per.connection={self.max_in_flight_requests_per_connection} "
                             f"(must be <= {MAX_IN_FLIGHT_FOR_IDEMPOTENCE})")
        if not conflicts:
            return self
        if explicit or self.transactional_id is not None:
            reason = "enable.idempotence=true" if explicit else "transactional.id (which needs idempotence)"
            raise ConfigError(f"{reason} conflicts with {', '.join(conflicts)}")
        log.info("idempotence disabled: enable.idempotence was left at its default and %s", ", ".join(conflicts))
        return self.replace(enable_idempotence=False)

    def replace(self, **changes: object) -> ProducerConfig:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


# the one table of keys; int keys are _int32 where Java's type is int and _int64 where it is long
VALIDATORS: dict[str, Callable[[str, object], object]] = {
    "bootstrap.servers": _servers,
    "client.id": _protocol_str(nullable=False),
    "acks": _acks,
    "linger.ms": _int32(0),
    "batch.size": _int32(1),
    "buffer.memory": _int64(1),
    "max.block.ms": _int64(0),
    "delivery.timeout.ms": _int32(1),
    "request.timeout.ms": _int32(1),
    "max.request.size": _int32(1),
    "compression.type": _choice(*ports.COMPRESSION_TYPES),
    "compression.gzip.level": _int32(ports.GZIP_LEVEL_DEFAULT, ports.GZIP_LEVEL_MAX),  # -1: zlib's
    "compression.lz4.level": _int32(ports.LZ4_LEVEL_MIN, ports.LZ4_LEVEL_MAX),
    "compression.zstd.level": _int32(ports.ZSTD_LEVEL_MIN, ports.ZSTD_LEVEL_MAX),
    "retries": _int32(0),
    "retry.backoff.ms": _int64(0),
    "retry.backoff.max.ms": _int64(0),
    "reconnect.backoff.ms": _int64(0),
    "reconnect.backoff.max.ms": _int64(0),
    "socket.connection.setup.timeout.ms": _int64(0),
    "socket.connection.setup.timeout.max.ms": _int64(0),
    "max.in.flight.requests.per.connection": _int32(1),
    "metadata.max.age.ms": _int64(0),
    "metadata.max.idle.ms": _int64(5000),
    "allow.auto.create.topics": _bool,
    "enable.idempotence": _bool,
    "transactional.id": _protocol_str(nullable=True),
    "transaction.timeout.ms": _int32(1),
    "partitioner.class": _callable_or_none,
    "partitioner.ignore.keys": _bool,
    "partitioner.adaptive.partitioning.enable": _bool,
    "partitioner.availability.timeout.ms": _int64(0),
    "send.buffer.bytes": _int32(-1),
    "receive.buffer.bytes": _int32(-1),
    "connections.max.idle.ms": _int64(-1),
    "key.serializer": _serializer,
    "value.serializer": _serializer,
    "interceptor.classes": _interceptors,
    "security.protocol": _choice("plaintext", "ssl", "sasl_plaintext", "sasl_ssl"),
    "ssl.ca.location": _path(directory_ok=True),
    "ssl.certificate.location": _path(directory_ok=False),
    "ssl.key.location": _path(directory_ok=False),
    "ssl.key.password": _secret,
    "ssl.endpoint.identification.algorithm": _endpoint_identification,
    "ssl.check.hostname": _bool,
    "sasl.mechanism": _sasl_mechanism,
    "sasl.username": _optional_str,
    "sasl.password": _secret,
    "sasl.oauthbearer.config": lambda k, v: "" if v is None else str(v),
    "oauth_cb": _callable_or_none,
    "enable.metrics.push": _bool,
    "error_cb": _callable_or_none,
    "socket.keepalive.enable": _bool,
    "client.dns.lookup": _choice("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"),
    "debug": _debug,
    "statistics.interval.ms": _int32(0),  # confluent-kafka's: stats_cb(json) every interval; 0: never
    "stats_cb": _callable_or_none,
    # the consumer's (Java's ConsumerConfig) and Admin's own keys
    "default.api.timeout.ms": _int32(0),
    "group.id": _protocol_str(nullable=True),
    "group.instance.id": _protocol_str(nullable=True),
    "auto.offset.reset": _offset_reset,
    "enable.auto.commit": _bool,
    "auto.commit.interval.ms": _int32(0),
    "isolation.level": _choice("read_uncommitted", "read_committed"),
    "fetch.min.bytes": _int32(0),
    "fetch.max.wait.ms": _int32(0),
    "fetch.max.bytes": _int32(0),
    "max.partition.fetch.bytes": _int32(0),
    "max.poll.records": _int32(1),
    "session.timeout.ms": _int32(1),
    "heartbeat.interval.ms": _int32(1),
    "max.poll.interval.ms": _int32(1),
    "partition.assignment.strategy": _assignors,
    "group.protocol": _choice("classic", "consumer"),
    "group.remote.assignor": lambda k, v: None if v is None else _choice("uniform", "range")(k, v),
    "check.crcs": _bool,
    "key.deserializer": _deserializer,
    "value.deserializer": _deserializer,
    "enable.partition.eof": _bool,
    "partition_eof_cb": _callable_or_none,
    "client.rack": _protocol_str(nullable=False),
}

# keys only the consumer takes; PRODUCER_KEYS: the others but Admin's and the consumer's default.api.timeout.ms
CONSUMER_ONLY_KEYS = frozenset({
    "group.id", "group.instance.id", "auto.offset.reset", "enable.auto.commit", "auto.commit.interval.ms",
    "isolation.level", "fetch.min.bytes", "fetch.max.wait.ms", "fetch.max.bytes", "max.partition.fetch.bytes",
    "max.poll.records", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
    "partition.assignment.strategy", "check.crcs", "key.deserializer", "value.deserializer", "enable.partition.eof",
    "partition_eof_cb", "client.rack", "group.protocol", "group.remote.assignor",
})
# Java's ConsumerConfig: keys of one group protocol that the other refuses when the user sets them
CLASSIC_PROTOCOL_ONLY_KEYS = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")
CONSUMER_PROTOCOL_ONLY_KEYS = ("group.remote.assignor",)
PRODUCER_KEYS = frozenset(VALIDATORS) - CONSUMER_ONLY_KEYS - {"default.api.timeout.ms"}


def _pick(settings: type[T], config: object, **given: object) -> T:
    """A settings value made of the config's attributes of the same names (ports' settings name them alike)."""
    names = [f.name for f in dataclasses.fields(settings) if f.name not in given]  # type: ignore[arg-type]
    return settings(**{name: getattr(config, name) for name in names}, **given)


def _validated(merged: Mapping[str, object], spelled: Mapping[str, str]) -> dict[str, object]:
    """{attribute name: value} of canonical keys, each through its validator (the one table)."""
    return {key.replace(".", "_"): VALIDATORS[key](_label(key, spelled), value) for key, value in merged.items()}


def _settings(settings: type[T], values: Mapping[str, object], **given: object) -> T:
    """A ports settings value from validated values: those of its field names that were given, its own defaults (Java's,
    the same as the clients' configs') for the rest."""
    names = [f.name for f in dataclasses.fields(settings) if f.name not in given]  # type: ignore[arg-type]
    return settings(**{name: values[name] for name in names if name in values}, **given)


def _check_connection(values: Mapping[str, object]) -> None:
    """The connection keys' rules every client shares (validated values, attribute names): bootstrap.servers given,
    retry.backoff.max.ms >= retry.backoff.ms, and the security keys consistent with security.protocol."""
    if "bootstrap_servers" not in values:
        raise ConfigError("bootstrap.servers is required: a 'host:port,host:port' list of brokers")
    apply_debug(cast(Sequence[str], values.get("debug", ())))  # every client's config passes here once
    if cast(int, values.get("retry_backoff_max_ms", 1000)) < cast(int, values.get("retry_backoff_ms", 100)):
        raise ConfigError("retry.backoff.max.ms must be >= retry.backoff.ms")
    security = _settings(ports.SecuritySettings, values)
    protocol = security.security_protocol.upper()
    given = [key for key in sorted(VALIDATORS) if values.get(key.replace(".", "_")) is not None]
    stray_ssl = [k for k in given if k in _SSL_MATERIAL_KEYS]
    if stray_ssl and not security.uses_ssl:
        raise ConfigError(f"{', '.join(stray_ssl)} set but security.protocol is {protocol}: use SSL or SASL_SSL")
    stray_sasl = [k for k in given if k in _SASL_MATERIAL_KEYS]
    if stray_sasl and not security.uses_sasl:
        raise ConfigError(f"{', '.join(stray_sasl)} set but security.protocol is {protocol}: use SASL_SSL or "
                          f"SASL_PLAINTEXT")
    if security.ssl_key_location is not None and security.ssl_certificate_location is None:
        raise ConfigError("ssl.key.location is set but ssl.certificate.location is not: a client key needs its "
                          "certificate")
    if not security.uses_sasl:
        return
    if security.sasl_mechanism is None:
        raise ConfigError(f"sasl.mechanism is required with security.protocol={protocol} (Java's default GSSAPI "
                          f"is not supported); accepted: {', '.join(SASL_MECHANISMS)}")
    if security.sasl_mechanism == "OAUTHBEARER":
        if security.oauth_cb is None:
            raise ConfigError("sasl.mechanism=OAUTHBEARER needs oauth_cb: a callable taking "
                              "sasl.oauthbearer.config and returning (token, expiry_time_s)")
        return
    if not security.sasl_username:
        raise ConfigError(f"sasl.mechanism={security.sasl_mechanism} needs sasl.username")
    if security.sasl_password is None:
        raise ConfigError(f"sasl.mechanism={security.sasl_mechanism} needs sasl.password")


def _connection(values: Mapping[str, object]) -> tuple[ports.ConnectionSettings, ports.MetadataSettings]:
    """The transport's and the metadata adapter's narrow settings from a client's validated values, checked by the
    rules every client shares: Admin and Consumer build theirs here, with no producer config in between."""
    _check_connection(values)
    return (_settings(ports.ConnectionSettings, values, security=_settings(ports.SecuritySettings, values)),
            _settings(ports.MetadataSettings, values))


# hidden in repr; sasl.oauthbearer.config too: users put client secrets there for their oauth_cb
_SECRET_FIELDS = frozenset({"sasl_password", "ssl_key_password", "sasl_oauthbearer_config"})
# keys that only mean something with SSL / SASL: set with another security.protocol, they are a mistake
_SSL_MATERIAL_KEYS = frozenset({"ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
                                "ssl.key.password"})
_SASL_MATERIAL_KEYS = frozenset({"sasl.mechanism", "sasl.username", "sasl.password", "oauth_cb"})

# Other clients' spellings taken as cykafka's key: only where every value cykafka accepts means the same there (a
# value the other client reads specially, such as librdkafka's 0 = no timeout, fails naming both keys). Why each is
# or is not an alias: docs/migrating.md.


def _given(config: object, kwargs: Mapping[str, object], accepted: frozenset[str],
           client: str) -> tuple[dict[str, object], dict[str, str]]:
    """({canonical key: value}, {canonical key: as the user wrote it}) of a config dict plus underscore kwargs."""
    if config is not None and not isinstance(config, Mapping):
        raise ConfigError(f"the {client} config must be a mapping of Kafka keys to values (a dict such as "
                          f"{{'bootstrap.servers': 'host:9092'}}), got a {type(config).__name__}")
    merged: dict[str, object] = {}
    spelled: dict[str, str] = {}
    for key, value in [*(config or {}).items(), *((k.replace("_", "."), v) for k, v in kwargs.items())]:
        canonical = _canonical(key, accepted, client)
        if spelled.setdefault(canonical, key) != key:
            raise ConfigError(f"{spelled[canonical]} and {key} are both given; they are the same key "
                              f"({canonical}): give one")
        merged[canonical] = value
    return merged, spelled


def _label(key: str, spelled: Mapping[str, str]) -> str:
    return key if spelled[key] == key else f"{spelled[key]} (cykafka's {key})"


def _canonical(key: object, accepted: frozenset[str] | None = None, client: str = "") -> str:
    """The table's name for key (aliases resolved); accepted: the keys this client takes (None: every key)."""
    if not isinstance(key, str):
        raise ConfigError(f"config keys must be str (Kafka's dotted names such as 'linger.ms'), got {key!r}")
    key = ALIASES.get(key, key)
    keys = VALIDATORS if accepted is None else accepted
    if key not in keys:
        instead = NOT_ALIASES.get(key.replace("_", "."))
        if instead is not None:
            raise ConfigError(f"unknown config key {key!r} (another client's): {instead}. Accepted keys: see "
                              f"{DOCS_URL}config.md; other clients' keys: {DOCS_URL}migrating.md")
        # typos only: a hint must not point at a key that merely shares a word (batch.num.messages is no batch.size)
        close = difflib.get_close_matches(key, [*keys, *(a for a, k in ALIASES.items() if k in keys)], n=3,
                                          cutoff=0.8)
        hint = f"; did you mean {' or '.join(close)}" if close else ""
        what = f"config key {key!r} is not a {client} key" if key in VALIDATORS else f"unknown config key {key!r}"
        raise ConfigError(f"{what}{hint}. Accepted keys: see {DOCS_URL}config.md")
    return key


# The keys Admin takes: the connection's (as the producer's, same validators) and Java's default.api.timeout.ms.
ADMIN_KEYS = frozenset({
    "bootstrap.servers", "client.id", "request.timeout.ms", "retry.backoff.ms", "reconnect.backoff.ms",
    "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms",
    "security.protocol", *(key for key in VALIDATORS if key.startswith(("ssl.", "sasl."))), "oauth_cb",
    "error_cb", "socket.keepalive.enable", "client.dns.lookup", "debug",
    "statistics.interval.ms", "stats_cb",
})


@dataclass(frozen=True, slots=True)
class AdminConfig:
    """Validated Admin settings: default.api.timeout.ms (Java's AdminClient key and default), retry.backoff.ms and
    the connection settings the transport takes."""

    default_api_timeout_ms: int
    retry_backoff_ms: int
    connection: ports.ConnectionSettings
    statistics_interval_ms: int = 0
    stats_cb: Any = None

    @classmethod
    def parse(cls, config: Mapping[str, object] | None = None, **kwargs: object) -> AdminConfig:
        if config is not None and not isinstance(config, Mapping):
            raise ConfigError(f"the admin config must be a mapping of Kafka keys to values (a dict such as "
                              f"{{'bootstrap.servers': 'host:9092'}}), got a {type(config).__name__}")
        given = {**(config or {}), **{key.replace("_", "."): value for key, value in kwargs.items()}}
        for key in given:
            if _canonical(key) not in ADMIN_KEYS | {"default.api.timeout.ms"}:
                raise ConfigError(f"config key {key!r} is not an Admin key; Admin takes default.api.timeout.ms, "
                                  f"{', '.join(sorted(k for k in ADMIN_KEYS if not k.startswith(('ssl', 'sasl'))))}"
                                  f" and the ssl.* and sasl.* keys")
        merged, spelled = _given(given, {}, ADMIN_KEYS | {"default.api.timeout.ms"}, "admin")
        values = _validated(merged, spelled)
        connection, _ = _connection(values)
        return cls(cast(int, values.get("default_api_timeout_ms", 60000)), cast(int, values.get("retry_backoff_ms",
                                                                                              100)), connection,
                   cast(int, values.get("statistics_interval_ms", 0)), values.get("stats_cb"))


# The consumer's keys: its own, Admin's (the connection's and default.api.timeout.ms), and the producer's connection
# and metadata keys that Java's consumer has too.
CONSUMER_KEYS = CONSUMER_ONLY_KEYS | ADMIN_KEYS | {
    "default.api.timeout.ms", "retry.backoff.max.ms", "metadata.max.age.ms", "allow.auto.create.topics",
    "send.buffer.bytes", "receive.buffer.bytes", "connections.max.idle.ms", "enable.metrics.push",
}
CONSUMER_RECEIVE_BUFFER_BYTES = 65536  # Java's consumer default (the producer's is 32768)


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """Validated consumer settings (Java's ConsumerConfig keys and defaults); the narrow settings the transport and
    the metadata adapter take, and retry.backoff.ms."""

    connection: ports.ConnectionSettings
    metadata: ports.MetadataSettings
    retry_backoff_ms: int = 100
    group_id: str | None = None
    group_instance_id: str | None = None
    auto_offset_reset: str = "latest"
    enable_auto_commit: bool = False  # Java's default true applies with a group.id (parse resolves it)
    auto_commit_interval_ms: int = 5000
    isolation_level: str = "read_uncommitted"
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52428800
    max_partition_fetch_bytes: int = 1048576
    max_poll_records: int = 500
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    partition_assignment_strategy: tuple[str, ...] = ("range", "cooperative-sticky")
    group_protocol: str = "classic"  # "consumer": KIP-848's protocol (the broker assigns; docs/consumer.md)
    group_remote_assignor: str | None = None  # the broker's assignor for group.protocol=consumer (None: its default)
    check_crcs: bool = True
    default_api_timeout_ms: int = 60000
    key_deserializer: Any = None  # None or "bytes": the bytes as fetched (cykafka/serialization.py)
    value_deserializer: Any = None
    enable_partition_eof: bool = False
    partition_eof_cb: Any = None  # partition_eof_cb(TopicPartition, offset), from poll (cykafka/partition_eof.py)
    client_rack: str = ""
    statistics_interval_ms: int = 0
    stats_cb: Any = None
    enable_metrics_push: bool = True  # KIP-714, as the producer's (Java's consumer default)

    @classmethod
    def parse(cls, config: Mapping[str, object] | None = None, **kwargs: object) -> ConsumerConfig:
        merged, spelled = _given(config, kwargs, CONSUMER_KEYS, "consumer")
        values = _validated(merged, spelled)
        values.setdefault("receive_buffer_bytes", CONSUMER_RECEIVE_BUFFER_BYTES)
        connection, metadata = _connection(values)
        own = {key.replace(".", "_"): values[key.replace(".", "_")] for key in merged
               if key in CONSUMER_ONLY_KEYS or key in ("default.api.timeout.ms", "statistics.interval.ms", "stats_cb",
                                                       "enable.metrics.push")}
        if own.get("group_id") is None:
            if own.get("enable_auto_commit") is True:
                raise ConfigError("enable.auto.commit=true needs a group.id (the offsets are the group's); set "
                                  "group.id or leave enable.auto.commit unset")
            if own.get("group_instance_id") is not None:
                raise ConfigError("group.instance.id needs a group.id")
        else:
            own.setdefault("enable_auto_commit", True)
        if own.get("partition_eof_cb") is not None:
            own.setdefault("enable_partition_eof", True)
        if own.get("enable_partition_eof") and own.get("partition_eof_cb") is None:
            raise ConfigError("enable.partition.eof=true needs partition_eof_cb: a callable (TopicPartition, offset) "
                              f"that poll() calls when a partition's end is reached (poll returns records only: "
                              f"{DOCS_URL}consumer.md)")
        _check_group_protocol(own.get("group_protocol", "classic"), merged, spelled)
        cfg = cls(connection, metadata, cast(int, values.get("retry_backoff_ms", 100)),
                  **own)  # type: ignore[arg-type]
        # a Fetch answer holds up to fetch.max.bytes of records plus one batch past it (KIP-74) and its own fields:
        # the transport takes frames up to fetch.max.bytes + 64 MiB (at least its own 100 MiB)
        cfg = dataclasses.replace(cfg, connection=dataclasses.replace(cfg.connection, max_response_bytes=min(
            INT32_MAX, max(cfg.connection.max_response_bytes, cfg.fetch_max_bytes + 64 * 1024 * 1024))))
        if cfg.heartbeat_interval_ms >= cfg.session_timeout_ms:
            raise ConfigError(f"heartbeat.interval.ms ({cfg.heartbeat_interval_ms}) must be lower than "
                              f"session.timeout.ms ({cfg.session_timeout_ms})")
        if connection.request_timeout_ms <= cfg.fetch_max_wait_ms:
            raise ConfigError(f"request.timeout.ms ({connection.request_timeout_ms}) must be greater than "
                              f"fetch.max.wait.ms ({cfg.fetch_max_wait_ms}): a fetch waits up to fetch.max.wait.ms "
                              f"at the broker")
        return cfg

    @property
    def consumer_protocol(self) -> bool:
        """group.protocol=consumer: the group is KIP-848's (ConsumerGroupHeartbeat), not the classic one."""
        return self.group_protocol == "consumer"

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"

    def poll_limit(self, max_records: int | None, call: str) -> int:
        """A poll call's max_records (an int >= 1; None: max.poll.records), else InvalidArgumentError naming call."""
        if max_records is None:
            return self.max_poll_records
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
            raise InvalidArgumentError(f"{call}: max_records must be an int >= 1 or None (max.poll.records), got "
                                       f"{max_records!r}")
        return max_records

    def refuse_deserializers(self, call: str) -> None:
        """A call that hands out the keys and values as fetched (poll_batch): ConfigError when key.deserializer or
        value.deserializer is set (docs/serialization.md)."""
        for key, spec in (("key.deserializer", self.key_deserializer), ("value.deserializer", self.value_deserializer)):
            if spec not in (None, "bytes"):
                raise ConfigError(f"{call} returns the keys and values as fetched, in Arrow binary columns, and "
                                  f"{key} is set ({spec!r}): use poll() for deserialized records, or leave {key} "
                                  f"unset and decode the column")

def _check_group_protocol(protocol: object, merged: Mapping[str, object], spelled: Mapping[str, str]) -> None:
    """Java's ConsumerConfig.checkUnsupportedConfigs: a key only the other group protocol reads, set by the user, is a
    ConfigError naming it (the consumer protocol's timeouts and assignment are the broker's)."""
    refused = CLASSIC_PROTOCOL_ONLY_KEYS if protocol == "consumer" else CONSUMER_PROTOCOL_ONLY_KEYS
    for key in refused:
        if key in merged and merged[key] is not None:
            label = _label(key, spelled)
            if protocol == "consumer":
                raise ConfigError(f"{label} is not supported with group.protocol=consumer: the broker sets the "
                                  f"session timeout and heartbeat interval (group.consumer.session.timeout.ms, "
                                  f"group.consumer.heartbeat.interval.ms) and assigns the partitions "
                                  f"(group.remote.assignor picks its assignor); leave {label} unset "
                                  f"({DOCS_URL}consumer.md)")
            raise ConfigError(f"{label} is only read with group.protocol=consumer (the broker's assignor, KIP-848); "
                              f"with group.protocol=classic the members assign (partition.assignment.strategy)")
