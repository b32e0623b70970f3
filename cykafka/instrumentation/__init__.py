"""OpenTelemetry tracing for cykafka: `CykafkaInstrumentor` (an `opentelemetry_instrumentor` entry point, so
`opentelemetry-instrument` finds it; `CykafkaInstrumentor().instrument()` / `uninstrument()` by hand) and
`process_span(record)`.

What it owns: the spans and the trace context in record headers, as opentelemetry-instrumentation-aiokafka and
-confluent-kafka write them (same span names, kinds, messaging semantic-convention attributes, W3C `traceparent`
header through the global propagator), so a trace crosses between them and cykafka either way:
- `Producer.send` and `AsyncProducer.send`: a PRODUCER span "{topic} send", its context injected into the record's
  headers;
- `Producer.send_batch`: one PRODUCER span "{topic} send" for the call, `messaging.batch.message_count`, its context
  in every record's headers;
- `Consumer.poll` (and AsyncConsumer's getone/getmany/poll): a CONSUMER span "{topic} receive" per record, child
  of the context extracted from its headers (aiokafka's getone);
- `Consumer.poll_batch`: one CONSUMER span "{topic} receive" per batch, the message count, a link to each record's
  extracted context;
- `process_span(record)`: a CONSUMER span "{topic} process" around the caller's work on a record, child of its
  extracted context.
Nothing is wrapped until instrument(): the methods are replaced on the classes then and restored by uninstrument(),
so an uninstrumented client runs exactly its own code. `Producer.send` stays the compiled one: instrument() arms its
trace gate (core/trace_gate.pyx), which calls the send hook here only when there is something to trace (a recording
provider, or the API alone with a span current), so an instrumented send() without an SDK costs ~50 ns more, not a
Python call.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.propagators import textmap
from opentelemetry.trace import Link, NoOpTracerProvider, ProxyTracerProvider, SpanKind
from opentelemetry.trace.propagation import _SPAN_KEY

import cykafka
from cykafka import aio, core
from cykafka.consumer import Consumer
from cykafka.producer import Producer

__all__ = ["CykafkaInstrumentor", "process_span"]

_INSTRUMENTS = ("cykafka >= 0.1",)
# the messaging semantic conventions' attribute names (the values the peers' instrumentations set)
SYSTEM, CLIENT_ID, DESTINATION = "messaging.system", "messaging.client.id", "messaging.destination.name"
PARTITION, KEY, OFFSET = "messaging.destination.partition.id", "messaging.kafka.message.key", \
    "messaging.kafka.message.offset"
OPERATION_NAME, OPERATION_TYPE = "messaging.operation.name", "messaging.operation.type"
GROUP, MESSAGE_ID, BATCH_COUNT = "messaging.consumer.group.name", "messaging.message.id", \
    "messaging.batch.message_count"
SERVER_ADDRESS, SERVER_PORT = "server.address", "server.port"


class _HeadersGetter(textmap.Getter[Any]):
    """Reads (str, bytes | None) header pairs (a record's headers, a dict, or an Arrow headers cell)."""

    def get(self, carrier: Any, key: str) -> list[str] | None:
        items = carrier.items() if isinstance(carrier, Mapping) else carrier or ()
        for item in items:
            name, value = (item["key"], item["value"]) if isinstance(item, Mapping) else item
            if name == key and value is not None:
                return [value.decode() if isinstance(value, bytes | bytearray) else str(value)]
        return None

    def keys(self, carrier: Any) -> list[str]:
        items = carrier.items() if isinstance(carrier, Mapping) else carrier or ()
        return [item["key"] if isinstance(item, Mapping) else item[0] for item in items]


class _HeadersSetter(textmap.Setter[list[tuple[str, bytes]]]):
    def set(self, carrier: list[tuple[str, bytes]], key: str, value: str) -> None:
        carrier.append((key, value.encode()))


_getter, _setter = _HeadersGetter(), _HeadersSetter()


def _server(servers: Sequence[str]) -> tuple[str, int | None]:
    first = servers[0] if servers else ""
    host, _, port = first.rpartition(":")
    return (host, int(port)) if port.isdigit() else (first, None)


def _base(span: trace.Span, servers: Sequence[str], client_id: str, topic: str) -> None:
    host, port = _server(servers)
    span.set_attribute(SYSTEM, "kafka")
    span.set_attribute(SERVER_ADDRESS, host)
    if port is not None:
        span.set_attribute(SERVER_PORT, port)
    span.set_attribute(CLIENT_ID, client_id)
    span.set_attribute(DESTINATION, topic)


def _key_text(key: object) -> str | None:
    if key is None:
        return None
    if isinstance(key, bytes | bytearray):
        try:
            return bytes(key).decode()
        except UnicodeDecodeError:
            return None
    return str(key)


def _with_context(headers: Any, carrier: list[tuple[str, bytes]]) -> list[Any]:
    """A record's headers (None, a dict or pairs) with the trace context's headers added."""
    if headers is None:
        return list(carrier)
    items = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    return items + carrier


_provider: trace.TracerProvider | None = None  # the one instrument() was given (None: the global one)


_SILENT_PROVIDERS = (ProxyTracerProvider, NoOpTracerProvider)  # OpenTelemetry's API alone: no span is recorded


def _no_sdk() -> bool:
    """True while no SDK records spans (OpenTelemetry's API alone): checked once per call, it spares the spans
    nobody records; the caller's own trace context, if any, still goes into the headers."""
    return isinstance(_provider or trace.get_tracer_provider(), _SILENT_PROVIDERS)


@contextlib.contextmanager
def _send_span(tracer: trace.Tracer, producer: Producer, topic: str, key: object, partition: int | None,
               headers: object) -> Iterator[object]:
    """Around one record's send: yields the headers to send it with. The API alone: no span; the caller's current
    trace context, if any, added to the headers. An SDK: a PRODUCER span "{topic} send", current while the record is
    queued, its context added to the headers."""
    if _no_sdk():
        if trace.get_current_span().get_span_context().is_valid:
            carrier: list[tuple[str, bytes]] = []
            propagate.inject(carrier, setter=_setter)
            headers = _with_context(headers, carrier)
        yield headers
        return
    with tracer.start_as_current_span(f"{topic} send", kind=SpanKind.PRODUCER) as span:
        if span.is_recording():
            _base(span, producer.config.bootstrap_servers, producer.config.client_id, topic)
            span.set_attribute(OPERATION_NAME, "send")
            span.set_attribute(OPERATION_TYPE, "publish")
            if partition is not None:
                span.set_attribute(PARTITION, str(partition))
            if (text := _key_text(key)) is not None:
                span.set_attribute(KEY, text)
        carrier = []
        propagate.inject(carrier, setter=_setter)
        yield _with_context(headers, carrier)


def _send_hook(tracer: trace.Tracer) -> Callable[..., Any]:
    """Producer.send's tracing, called by the compiled send() when its trace gate wants it (core/trace_gate.pyx:
    a recording provider, or the API alone with a span current); the record then goes through _send_untraced."""

    def send(self: Producer, topic: str, value: object, key: object, partition: int | None, timestamp_ms: int | None,
             headers: object, on_delivery: Any) -> Any:
        with _send_span(tracer, self, topic, key, partition, headers) as traced:
            return self._send_untraced(topic, value, key, partition, timestamp_ms, traced, on_delivery)

    return send


def _wrap_async_send(tracer: trace.Tracer, original: Callable[..., Any]) -> Callable[..., Any]:
    """AsyncProducer.send: the same span as Producer.send (aiokafka's instrumentation wraps its send the same way),
    asked of the same trace gate first."""

    @functools.wraps(original)
    async def send(self: aio.AsyncProducer, topic: str, value: object = None, key: object = None, *,
                   partition: int | None = None, timestamp_ms: int | None = None, headers: object = None) -> Any:
        if not core.send_trace_wanted():
            return await original(self, topic, value, key, partition=partition, timestamp_ms=timestamp_ms,
                                  headers=headers)
        with _send_span(tracer, self.producer, topic, key, partition, headers) as traced:
            return await original(self, topic, value, key, partition=partition, timestamp_ms=timestamp_ms,
                                  headers=traced)

    return send


def _arm_send_gate(tracer: trace.Tracer | None) -> None:
    """Arms (tracer) or disarms (None) the compiled send()'s trace gate with OpenTelemetry's state: its ContextVar
    runtime context and the global provider; an explicitly given recording provider, or a runtime context of another
    kind, sends every record through the hook."""
    if tracer is None:
        core.arm_send_trace(None)
        return
    runtime = getattr(otel_context, "_RUNTIME_CONTEXT", None)
    context_var = getattr(runtime, "_current_context", None)
    readable = isinstance(context_var, contextvars.ContextVar) and isinstance(_SPAN_KEY, str)
    always = not readable or (_provider is not None and not isinstance(_provider, _SILENT_PROVIDERS))
    core.arm_send_trace(_send_hook(tracer), always, context_var if readable else None, _SPAN_KEY,
                        vars(trace), _SILENT_PROVIDERS)


def _wrap_send_batch(tracer: trace.Tracer, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def send_batch(self: Producer, topic: str, values: Any, keys: Any = None, *, partitions: Any = None,
                   timestamps_ms: Any = None, headers: Any = None) -> Any:
        if _no_sdk() and not trace.get_current_span().get_span_context().is_valid:
            return original(self, topic, values, keys, partitions=partitions, timestamps_ms=timestamps_ms,
                            headers=headers)
        if not hasattr(values, "__len__"):
            values = list(values)
        count = len(values)
        with tracer.start_as_current_span(f"{topic} send", kind=SpanKind.PRODUCER) as span:
            if span.is_recording():
                _base(span, self.config.bootstrap_servers, self.config.client_id, topic)
                span.set_attribute(OPERATION_NAME, "send")
                span.set_attribute(OPERATION_TYPE, "publish")
                span.set_attribute(BATCH_COUNT, count)
            carrier: list[tuple[str, bytes]] = []
            propagate.inject(carrier, setter=_setter)
            if headers is None:
                per_record: list[Any] = [carrier] * count  # one list for all: the batch's one context
            else:
                per_record = [_with_context(h, carrier) for h in headers]
            return original(self, topic, values, keys, partitions=partitions, timestamps_ms=timestamps_ms,
                            headers=per_record)

    return send_batch


def _receive_spans(tracer: trace.Tracer, consumer: Consumer, records: Sequence[Any]) -> None:
    """One "{topic} receive" span per record, child of the context in its headers (ended at once: the receive is
    over when poll returns)."""
    connection = consumer.config.connection
    for record in records:
        parent = propagate.extract(record.headers, getter=_getter)
        span = tracer.start_span(f"{record.topic} receive", context=parent, kind=SpanKind.CONSUMER)
        if span.is_recording():
            _base(span, connection.bootstrap_servers, connection.client_id, record.topic)
            span.set_attribute(OPERATION_NAME, "receive")
            span.set_attribute(OPERATION_TYPE, "receive")
            span.set_attribute(PARTITION, str(record.partition))
            span.set_attribute(OFFSET, record.offset)
            span.set_attribute(MESSAGE_ID, f"{record.topic}.{record.partition}.{record.offset}")
            if consumer.config.group_id is not None:
                span.set_attribute(GROUP, consumer.config.group_id)
            if (text := _key_text(record.key)) is not None:
                span.set_attribute(KEY, text)
        span.end()


def _wrap_poll(tracer: trace.Tracer, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def poll(self: Consumer, timeout: float) -> Any:
        records = original(self, timeout)
        if records and not _no_sdk():
            _receive_spans(tracer, self, records)
        return records

    return poll


def _wrap_poll_records(tracer: trace.Tracer, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def poll_records(consumer: Consumer, timeout_s: float, limit: int) -> Any:
        by_partition = original(consumer, timeout_s, limit)
        if _no_sdk():
            return by_partition
        for records in by_partition.values():
            _receive_spans(tracer, consumer, records)
        return by_partition

    return poll_records


def _wrap_poll_batch(tracer: trace.Tracer, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def poll_batch(self: Consumer, timeout: float, max_records: int | None = None) -> Any:
        batch = original(self, timeout, max_records)
        if batch.num_rows and not _no_sdk():
            links = [Link(c) for c in _batch_contexts(batch)]
            topics = batch.column("topic").unique().to_pylist()
            topic = topics[0] if len(topics) == 1 else "multiple"
            connection = self.config.connection
            with tracer.start_as_current_span(f"{topic} receive", kind=SpanKind.CONSUMER, links=links) as span:
                if span.is_recording():
                    _base(span, connection.bootstrap_servers, connection.client_id, topic)
                    span.set_attribute(OPERATION_NAME, "receive")
                    span.set_attribute(OPERATION_TYPE, "receive")
                    span.set_attribute(BATCH_COUNT, batch.num_rows)
                    if self.config.group_id is not None:
                        span.set_attribute(GROUP, self.config.group_id)
        return batch

    return poll_batch


def _batch_contexts(batch: Any) -> list[trace.SpanContext]:
    """The distinct trace contexts in a poll_batch's headers column, found with Arrow's kernels (no Python object
    per record): a send_batch's records share one."""
    import pyarrow.compute as pc

    pairs = pc.list_flatten(batch.column("headers"))
    if len(pairs) == 0:
        return []
    parents = pairs.filter(pc.equal(pc.struct_field(pairs, "key"), "traceparent"))
    contexts = []
    for value in pc.unique(pc.struct_field(parents, "value")).to_pylist():
        carrier = [("traceparent", value)]
        span_context = trace.get_current_span(propagate.extract(carrier, getter=_getter)).get_span_context()
        if span_context.is_valid:
            contexts.append(span_context)
    return contexts


_tracer: trace.Tracer | None = None


@contextlib.contextmanager
def process_span(record: Any, tracer_provider: trace.TracerProvider | None = None) -> Iterator[trace.Span]:
    """`with process_span(record):` around the caller's work on a consumed record: a CONSUMER span
    "{topic} process", child of the trace context in the record's headers, current while the block runs."""
    tracer = _tracer if tracer_provider is None and _tracer is not None else \
        trace.get_tracer(__name__, cykafka.__version__, tracer_provider)
    parent = propagate.extract(record.headers, getter=_getter)
    with tracer.start_as_current_span(f"{record.topic} process", context=parent, kind=SpanKind.CONSUMER) as span:
        if span.is_recording():
            span.set_attribute(SYSTEM, "kafka")
            span.set_attribute(DESTINATION, record.topic)
            span.set_attribute(OPERATION_NAME, "process")
            span.set_attribute(OPERATION_TYPE, "process")
            span.set_attribute(PARTITION, str(record.partition))
            span.set_attribute(OFFSET, record.offset)
        yield span


# (owner, attribute name, wrapper factory): what instrument() replaces
_TARGETS: list[tuple[Any, str, Callable[[trace.Tracer, Callable[..., Any]], Callable[..., Any]]]] = [
    (Producer, "send_batch", _wrap_send_batch),
    (aio.AsyncProducer, "send", _wrap_async_send),
    (Consumer, "poll", _wrap_poll),
    (Consumer, "poll_batch", _wrap_poll_batch),
    (aio, "_poll_records", _wrap_poll_records),
]


class CykafkaInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Traces cykafka's clients (module docstring): `CykafkaInstrumentor().instrument(tracer_provider=...)`, and
    `uninstrument()` to put the clients' own methods back."""

    _saved: dict[tuple[int, str], tuple[bool, Any]]

    def instrumentation_dependencies(self) -> Collection[str]:
        return _INSTRUMENTS

    def _instrument(self, **kwargs: Any) -> None:
        global _tracer, _provider
        _provider = kwargs.get("tracer_provider")
        tracer = trace.get_tracer(__name__, cykafka.__version__, _provider)
        _tracer = tracer
        _arm_send_gate(tracer)
        self._saved = {}
        for owner, name, wrap in _TARGETS:
            own = name in vars(owner)
            original = getattr(owner, name)
            self._saved[(id(owner), name)] = (own, vars(owner).get(name))
            original_function = original if owner is aio else _unbound(owner, name)
            setattr(owner, name, wrap(tracer, original_function))

    def _uninstrument(self, **kwargs: Any) -> None:
        global _tracer, _provider
        _tracer, _provider = None, None
        _arm_send_gate(None)
        for owner, name, _ in _TARGETS:
            own, value = self._saved.pop((id(owner), name))
            if own:
                setattr(owner, name, value)
            else:  # inherited (Producer.send is the compiled SendPath's): the class's own again
                delattr(owner, name)


def _unbound(owner: type, name: str) -> Callable[..., Any]:
    """The function behind owner.name (a compiled method descriptor called with self first, too)."""
    for klass in owner.__mro__:
        if name in vars(klass):
            found: Callable[..., Any] = vars(klass)[name]
            return found
    raise AttributeError(name)
