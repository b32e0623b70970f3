"""KIP-714 client telemetry on the wire: a client's metrics as an OpenTelemetry (OTLP) MetricsData protobuf message,
encoded here (no protobuf dependency: the handful of OTLP messages a push needs), under KIP-714's names
(MetricName.telemetry_name: `org.apache.kafka.producer.record.send.rate` for Java's producer-metrics
`record-send-rate`, `org.apache.kafka.consumer.fetch.manager.records.lag.max` for consumer-fetch-manager-metrics'
`records-lag-max`); and `TelemetrySource`, what the producer's Sender runs each loop and the consumer's network loop
each turn: it sends what core/telemetry.py's ClientTelemetry decides to the least loaded broker. A broker that does
not speak the APIs (no ClientTelemetry plugin among its metric.reporters, Tansu) disables it."""

from __future__ import annotations

import logging
import struct
import weakref
from collections.abc import Callable, Mapping
from typing import Protocol

from cykafka.core.telemetry import PUSH_NEEDED, ClientTelemetry
from cykafka.errors import KafkaError, UnsupportedVersionError
from cykafka.metrics import MetricsSnapshot
from cykafka.ports import ClientResponse, Transport
from cykafka.protocol import Request
from cykafka.protocol.apis import GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY
from cykafka.requests.routes import ready_node

log = logging.getLogger("cykafka.telemetry")

# OTLP's AggregationTemporality
TEMPORALITY_DELTA = 1
TEMPORALITY_CUMULATIVE = 2
_IDLE_MS = 2**31  # nothing to do until told (a subscription's interval, a backoff)


# -- protobuf, the little OTLP needs -------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): a message, a string or bytes."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _fixed64(number: int, value: int) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<Q", value)


def _double(number: int, value: float) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", value)


def _key_value(key: str, value: str) -> bytes:
    """KeyValue{key = 1, value = 2: AnyValue{string_value = 1}}."""
    return _field(1, key.encode()) + _field(2, _field(1, value.encode()))


def otlp_metrics(metrics: Mapping[str, float], *, time_unix_nano: int, start_time_unix_nano: int,
                 resource: Mapping[str, str], scope: str, delta_temporality: bool = False,
                 previous: Mapping[str, float] | None = None) -> bytes:
    """MetricsData{resource_metrics = 1: ResourceMetrics{resource = 1: Resource{attributes = 1}, scope_metrics = 2:
    ScopeMetrics{scope = 1: InstrumentationScope{name = 1}, metrics = 2}}}: one Metric{name = 1} per entry, a
    `...total` a monotonic Sum{data_points = 1, aggregation_temporality = 2, is_monotonic = 3} (delta_temporality:
    the change since `previous`), anything else a Gauge{data_points = 1}; a NumberDataPoint{start_time_unix_nano = 2,
    time_unix_nano = 3, as_double = 4}."""
    encoded = bytearray()
    for name, value in metrics.items():
        if name.endswith(".total"):
            base = (previous or {}).get(name, 0.0) if delta_temporality else 0.0
            point = (_fixed64(2, start_time_unix_nano) + _fixed64(3, time_unix_nano) + _double(4, value - base))
            kind = _field(7, _field(1, point) + _varint(2 << 3) + _varint(
                TEMPORALITY_DELTA if delta_temporality else TEMPORALITY_CUMULATIVE) + _varint(3 << 3) + _varint(1))
        else:
            point = _fixed64(3, time_unix_nano) + _double(4, value)
            kind = _field(5, _field(1, point))
        encoded += _field(2, _field(1, name.encode()) + kind)
    resource_message = b"".join(_field(1, _key_value(k, v)) for k, v in resource.items())
    scope_metrics = _field(1, _field(1, scope.encode())) + bytes(encoded)
    return _field(1, _field(1, resource_message) + _field(2, scope_metrics))


def weak_metrics(client: _HasMetrics) -> Callable[[], MetricsSnapshot | None]:
    """client.metrics() while the client lives (the pushes read it on its network thread, which must not keep the
    client alive); None once it is gone."""
    ref = weakref.ref(client)

    def read() -> MetricsSnapshot | None:
        target = ref()
        return None if target is None else target.metrics()

    return read


class _HasMetrics(Protocol):
    def metrics(self) -> MetricsSnapshot: ...


# -- the request source ----------------------------------------------------------------------------------------


class TelemetrySource:
    """KIP-714 for one client, run by its network loop each turn (`run(now_ms)` -> ms until it has more to do, or
    None; `send_ready`, the request layer's RequestSource). `read_metrics()` gives the client's metrics when a push is
    due (its MetricsSnapshot; {} once the client is gone); the client-level ones the subscriptions ask for go, under
    their KIP-714 names."""

    def __init__(self, transport: Transport, client_type: str, read_metrics: Callable[[], MetricsSnapshot | None],
                 wall_ms: Callable[[], int], retry_backoff_ms: int, resource: Mapping[str, str]) -> None:
        self.transport = transport
        self.client_type = client_type
        self.read_metrics = read_metrics
        self.wall_ms = wall_ms
        self.state = ClientTelemetry(retry_backoff_ms)
        self.resource = dict(resource)
        self.started_unix_nano = wall_ms() * 1_000_000
        self._previous: dict[str, float] = {}
        self._close_asked = False  # another thread's close(): the loop's own thread moves the state (one owner)
        self._close_started = False

    def close(self) -> None:
        """From the client's thread: KIP-714's last push (terminating=true) is to go; the loop's thread sends it on its
        next turn (`closed` once it was answered, or none was needed)."""
        self._close_asked = True

    @property
    def closed(self) -> bool:
        """close() was asked and no last push is to go or out. Read from the client's thread, best effort: a
        subscription answered after this said True may still have its last push sent, unwaited."""
        state = self.state
        return self._close_asked and state.state != PUSH_NEEDED and not state.terminating

    def send_ready(self, now_ms: int) -> int:
        """The request layer's RequestSource: run, and ms until it has more to do."""
        delay_ms = self.run(now_ms)
        return _IDLE_MS if delay_ms is None else delay_ms

    def run(self, now_ms: int) -> int | None:
        state = self.state
        if self._close_asked and not self._close_started:
            self._close_started = True
            state.terminate()
        delay_ms = state.delay_ms(now_ms)
        if delay_ms is None or delay_ms > 0:
            return delay_ms
        node_id, wait_ms = ready_node(self.transport, None, now_ms, state.retry_backoff_ms)
        if node_id is None:
            return wait_ms
        decided = state.request(now_ms)
        if decided is None:
            return state.delay_ms(now_ms)
        kind, body = decided
        if kind == "subscriptions":
            request = Request(GET_TELEMETRY_SUBSCRIPTIONS.key, body)
            handler: Callable[[ClientResponse], None] = self._on_subscriptions
        else:
            request = Request(PUSH_TELEMETRY.key, {**body, "metrics": self._payload()})
            handler = self._on_push
        try:
            self.transport.send(node_id, request, now_ms, handler=handler)
        except UnsupportedVersionError as e:  # the broker has no telemetry plugin (or is not Kafka 3.7+)
            log.debug("client telemetry off: %s", e)
            state.disable()
        except KafkaError as e:  # not connected after all: asked again later
            log.debug("client telemetry: %s not sent: %s", kind, e)
            state.on_failure(now_ms)
        return None

    def _payload(self) -> bytes:
        wanted = {}
        snapshot = self.read_metrics()
        for name, value in (snapshot.all.items() if snapshot is not None else ()):
            full = name.telemetry_name
            if len(name.tags) == 1 and self.state.wants(full):  # client-level (client-id its one tag)
                wanted[full] = float(value)
        payload = otlp_metrics(wanted, time_unix_nano=self.wall_ms() * 1_000_000,
                               start_time_unix_nano=self.started_unix_nano, resource=self.resource,
                               scope=f"org.apache.kafka.{self.client_type}",
                               delta_temporality=self.state.delta_temporality, previous=self._previous)
        self._previous = wanted
        return payload

    def _on_subscriptions(self, response: ClientResponse) -> None:
        if response.response is None:
            self.state.on_failure(response.received_ms)
            return
        self.state.on_subscriptions(response.response, response.received_ms)
        log.debug("client telemetry: subscription %s, %s every %s ms", self.state.subscription_id,
                  self.state.requested_metrics, self.state.push_interval_ms)

    def _on_push(self, response: ClientResponse) -> None:
        if response.response is None:
            self.state.on_failure(response.received_ms)
            return
        self.state.on_push(response.response, response.received_ms)

