"""OpenTelemetry tracing (issue 30, point 3): cykafka.instrumentation.CykafkaInstrumentor's spans, attributes and
W3C trace context in record headers, with the SDK's InMemorySpanExporter, on real brokers; interop both ways with
the real opentelemetry-instrumentation-confluent-kafka; uninstrument() puts the clients' own methods back."""

from __future__ import annotations

import asyncio
import importlib.metadata
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from cykafka import Consumer, Producer, TopicPartition

pytest.importorskip("opentelemetry.sdk.trace")
confluent_kafka = pytest.importorskip("confluent_kafka")
peer = pytest.importorskip("opentelemetry.instrumentation.confluent_kafka")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from cykafka.aio import AsyncConsumer, AsyncProducer  # noqa: E402
from cykafka.core import SendPath  # noqa: E402
from cykafka.instrumentation import CykafkaInstrumentor, process_span  # noqa: E402

POLLS = 100


@pytest.fixture()
def spans() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    CykafkaInstrumentor().instrument(tracer_provider=provider)
    try:
        yield exporter, provider
    finally:
        CykafkaInstrumentor().uninstrument()
        provider.shutdown()


def _topic() -> str:
    return f"traced-{uuid.uuid4().hex[:10]}"


def _consume(consumer: Consumer, count: int) -> list[Any]:
    records: list[Any] = []
    for _ in range(POLLS):
        if len(records) >= count:
            break
        records += consumer.poll(0.5)
    assert len(records) == count
    return records


def _consumer(bootstrap: str, topic: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", "client.id": "traced-c"})
    consumer.assign([TopicPartition(topic, 0)])
    return consumer


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_send_and_receive_spans_share_the_trace(broker: Any, spans: Any) -> None:
    exporter, _ = spans
    topic = _topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "traced-p"}) as producer:
        producer.send(topic, b"v", b"k", partition=0, headers=[("app", b"1")])
        assert producer.flush(30) == 0
    [send] = _named(exporter, f"{topic} send")
    assert send.kind is SpanKind.PRODUCER
    assert dict(send.attributes or {}) | {"server.port": 0} == {
        "messaging.system": "kafka", "server.address": "127.0.0.1", "server.port": 0,
        "messaging.client.id": "traced-p", "messaging.destination.name": topic,
        "messaging.operation.name": "send", "messaging.operation.type": "publish",
        "messaging.destination.partition.id": "0", "messaging.kafka.message.key": "k"}
    with _consumer(broker.bootstrap_servers, topic) as consumer:
        [record] = _consume(consumer, 1)
    assert [name for name, _ in record.headers] == ["app", "traceparent"]
    [receive] = _named(exporter, f"{topic} receive")
    assert receive.kind is SpanKind.CONSUMER
    assert receive.context.trace_id == send.context.trace_id
    assert receive.parent is not None and receive.parent.span_id == send.context.span_id
    attributes = dict(receive.attributes or {})
    assert attributes["messaging.kafka.message.offset"] == 0
    assert attributes["messaging.message.id"] == f"{topic}.0.0"
    assert attributes["messaging.client.id"] == "traced-c" and "messaging.consumer.group.name" not in attributes
    assert attributes["messaging.operation.type"] == "receive"
    with process_span(record):
        pass
    [process] = _named(exporter, f"{topic} process")
    assert process.context.trace_id == send.context.trace_id and process.kind is SpanKind.CONSUMER


def test_send_batch_and_poll_batch_one_span_per_batch_with_links(broker: Any, spans: Any) -> None:
    pytest.importorskip("pyarrow")
    exporter, _ = spans
    topic = _topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        result = producer.send_batch(topic, [b"a", b"b", b"c"], partitions=0)
        assert producer.flush(30) == 0
        assert result.result(30) == 3
    [send] = _named(exporter, f"{topic} send")
    assert (send.attributes or {})["messaging.batch.message_count"] == 3
    with _consumer(broker.bootstrap_servers, topic) as consumer:
        rows = 0
        for _ in range(POLLS):
            if rows >= 3:
                break
            rows += consumer.poll_batch(0.5).num_rows
    assert rows == 3
    receives = _named(exporter, f"{topic} receive")
    assert sum((s.attributes or {})["messaging.batch.message_count"] for s in receives) == 3
    linked = [link.context for s in receives for link in s.links]  # one link per distinct context of a batch
    assert linked and {c.span_id for c in linked} == {send.context.span_id}
    assert all(len(s.links) == 1 for s in receives)


def test_async_consumer_receive_spans(broker: Any, spans: Any) -> None:
    exporter, _ = spans
    topic = _topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        producer.send(topic, b"v", partition=0)
        assert producer.flush(30) == 0

    async def getone() -> Any:
        async with AsyncConsumer({"bootstrap.servers": broker.bootstrap_servers,
                                  "auto.offset.reset": "earliest"}) as consumer:
            await consumer.assign([TopicPartition(topic, 0)])
            return await asyncio.wait_for(consumer.getone(), 30)

    asyncio.run(getone())
    [send] = _named(exporter, f"{topic} send")
    [receive] = _named(exporter, f"{topic} receive")
    assert receive.context.trace_id == send.context.trace_id


def test_async_producer_send_spans(broker: Any, spans: Any) -> None:
    """AsyncProducer.send makes Producer.send's span (docs/observability.md's table), its context in the headers,
    the caller's headers kept."""
    exporter, _ = spans
    topic = _topic()

    async def send() -> None:
        async with AsyncProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
            future = await producer.send(topic, b"v", b"k", partition=0, headers=[("mine", b"1")])
            await asyncio.wait_for(future, 30)

    asyncio.run(send())
    [span] = _named(exporter, f"{topic} send")
    assert span.kind == SpanKind.PRODUCER and span.attributes is not None
    assert span.attributes["messaging.kafka.message.key"] == "k"
    with _consumer(broker.bootstrap_servers, topic) as consumer:
        [record] = _consume(consumer, 1)
    traceparent = f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-{span.context.trace_flags:02x}".encode()
    assert record.headers == [("mine", b"1"), ("traceparent", traceparent)]


def test_a_confluent_kafka_trace_continues_in_cykafka(broker: Any, spans: Any) -> None:
    """confluent-kafka's producer, instrumented by opentelemetry-instrumentation-confluent-kafka, sends; cykafka's
    consumer receives: its receive span is in the send span's trace, its child."""
    exporter, provider = spans
    topic = _topic()
    producer = peer.ConfluentKafkaInstrumentor.instrument_producer(
        confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers}), tracer_provider=provider)
    producer.produce(topic, b"from confluent", partition=0)
    assert producer.flush(30) == 0
    [send] = _named(exporter, f"{topic} send")
    assert send.instrumentation_scope is not None
    assert send.instrumentation_scope.name == "opentelemetry.instrumentation.confluent_kafka"
    with _consumer(broker.bootstrap_servers, topic) as consumer:
        _consume(consumer, 1)
    [receive] = _named(exporter, f"{topic} receive")
    assert receive.instrumentation_scope is not None and receive.instrumentation_scope.name == "cykafka.instrumentation"
    assert receive.context.trace_id == send.context.trace_id
    assert receive.parent is not None and receive.parent.span_id == send.context.span_id


def test_a_cykafka_trace_continues_in_confluent_kafka(broker: Any, spans: Any) -> None:
    """cykafka's producer sends; confluent-kafka's consumer, instrumented by its instrumentation, receives: its
    process span links to cykafka's send span (that instrumentation links, it does not parent)."""
    exporter, provider = spans
    topic = _topic()
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        producer.send(topic, b"from cykafka", partition=0)
        assert producer.flush(30) == 0
    [send] = _named(exporter, f"{topic} send")
    raw = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "traced-peer",
                                    "enable.auto.commit": False})
    raw.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])  # (the proxy has none)
    consumer = peer.ConfluentKafkaInstrumentor.instrument_consumer(raw, tracer_provider=provider)
    try:
        message = None
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.error() is None and message.value() == b"from cykafka"
    finally:
        consumer.close()
    [process] = _named(exporter, f"{topic} process")
    assert [link.context.trace_id for link in process.links] == [send.context.trace_id]
    assert [link.context.span_id for link in process.links] == [send.context.span_id]


def test_uninstrument_puts_the_clients_own_methods_back(tansu_broker: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert "send" not in vars(Producer) and Producer.send is SendPath.send
    originals = (Producer.send_batch, Consumer.poll, Consumer.poll_batch)
    CykafkaInstrumentor().instrument(tracer_provider=provider)
    assert Producer.send is SendPath.send  # the compiled send() stays: its trace gate is armed instead
    CykafkaInstrumentor().uninstrument()
    assert "send" not in vars(Producer) and Producer.send is SendPath.send
    assert (Producer.send_batch, Consumer.poll, Consumer.poll_batch) == originals
    topic = _topic()
    with Producer({"bootstrap.servers": tansu_broker.bootstrap_servers}) as producer:
        producer.send(topic, b"v", partition=0)
        assert producer.flush(30) == 0
    with _consumer(tansu_broker.bootstrap_servers, topic) as consumer:
        [record] = _consume(consumer, 1)
    assert record.headers == [] and exporter.get_finished_spans() == ()
    provider.shutdown()


def test_opentelemetry_instrument_finds_the_instrumentor() -> None:
    [entry] = [e for e in importlib.metadata.entry_points(group="opentelemetry_instrumentor") if e.name == "cykafka"]
    assert entry.load() is CykafkaInstrumentor


def test_without_an_sdk_no_spans_but_the_callers_context_still_travels(tansu_broker: Any) -> None:
    """OpenTelemetry's API alone (no SDK provider: what `opentelemetry-instrument` with nothing configured gives):
    no span is made, a record sent outside any trace has no headers added, and one sent inside the caller's (remote)
    trace carries that trace's context."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)  # no SDK set in this process
    remote = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, is_remote=True,
                         trace_flags=TraceFlags(TraceFlags.SAMPLED))
    topic = _topic()
    CykafkaInstrumentor().instrument()
    try:
        with Producer({"bootstrap.servers": tansu_broker.bootstrap_servers}) as producer:
            producer.send(topic, b"outside", partition=0)
            with trace.use_span(NonRecordingSpan(remote)):
                producer.send(topic, b"inside", partition=0)
            assert producer.flush(30) == 0
        with _consumer(tansu_broker.bootstrap_servers, topic) as consumer:
            outside, inside = _consume(consumer, 2)
    finally:
        CykafkaInstrumentor().uninstrument()
    assert outside.headers == []
    assert inside.headers == [("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]


def test_the_send_trace_gate_calls_the_hook_only_with_something_to_trace(tansu_broker: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled send()'s gate (core/trace_gate.pyx), with OpenTelemetry's API alone: no current span → the
    record goes straight through (no Python hook call: the ~50 ns path of issue 30's overhead goal); a current span →
    the hook (which injects its context); a recording provider set globally after instrument() → the hook for every
    record; disarmed by uninstrument()."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    import cykafka.instrumentation as instrumentation

    hooked: list[str] = []
    real_no_sdk = instrumentation._no_sdk

    def counting_no_sdk() -> bool:  # the hook's first step: one call per record that reached it
        hooked.append("hook")
        return real_no_sdk()

    monkeypatch.setattr(instrumentation, "_no_sdk", counting_no_sdk)
    remote = SpanContext(0x1AF7651916CD43DD8448EB211C80319C, 0xC7AD6B7169203331, is_remote=True,
                         trace_flags=TraceFlags(TraceFlags.SAMPLED))
    topic = _topic()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    CykafkaInstrumentor().instrument()
    try:
        with Producer({"bootstrap.servers": tansu_broker.bootstrap_servers}) as producer:
            for _ in range(3):
                producer.send(topic, b"no span", partition=0)
            assert hooked == []
            with trace.use_span(NonRecordingSpan(remote)):
                producer.send(topic, b"caller's span", partition=0)
            assert hooked == ["hook"]
            with monkeypatch.context() as m:
                m.setattr(trace, "_TRACER_PROVIDER", provider)  # as trace.set_tracer_provider(provider) leaves it
                producer.send(topic, b"sdk", partition=0)
            assert hooked == ["hook", "hook"]
            CykafkaInstrumentor().uninstrument()
            with trace.use_span(NonRecordingSpan(remote)):
                producer.send(topic, b"uninstrumented", partition=0)
            assert hooked == ["hook", "hook"]
            assert producer.flush(30) == 0
        with _consumer(tansu_broker.bootstrap_servers, topic) as consumer:
            records = _consume(consumer, 6)
    finally:
        CykafkaInstrumentor().uninstrument()
        provider.shutdown()
    assert [len(r.headers) for r in records] == [0, 0, 0, 1, 1, 0]
    assert [s.name for s in exporter.get_finished_spans()] == [f"{topic} send"]
