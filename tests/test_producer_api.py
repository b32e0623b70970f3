"""The public Producer API: config errors, serializers, headers, interceptors, callbacks, limits, lifecycle.

Driven against the in-memory fake cluster with a real sender thread (SystemClock), and against Tansu where the
README promises it.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import fake_producer

import cykafka
from cykafka import (
    BufferExhaustedError,
    ConfigError,
    InvalidArgumentError,
    InvalidRecordError,
    InvalidTopicError,
    KafkaTimeoutError,
    Producer,
    ProducerClosedError,
    RecordMetadata,
    RecordTooLargeError,
    SerializationError,
)
from cykafka.adapters.clock import SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.broker import EmbeddedBroker
from cykafka.ports import Ports
from cykafka.verify import read_back

T = "api"


@pytest.fixture
def fake() -> Iterator[tuple[Producer, FakeCluster]]:
    cluster = FakeCluster(SystemClock(), num_brokers=2)
    cluster.create_topic(T, 3)
    producer = make(cluster)
    yield producer, cluster
    producer.close(5)


def make(cluster: FakeCluster, **config: Any) -> Producer:
    return fake_producer(cluster, **{"linger.ms": 1, "max.block.ms": 2000, **config})


def test_a_timeout_of_math_inf_has_no_limit_and_one_that_is_not_a_number_is_refused(
        fake: tuple[Producer, FakeCluster]) -> None:
    """As the consumer's calls: math.inf waits without a limit (it raised a bare OverflowError), and a timeout
    that is not a number is an InvalidArgumentError naming it, before anything is done (flush, close, and the wait
    of a pending record's result)."""
    _, cluster = fake
    producer = make(cluster, **{"linger.ms": 60_000})
    future = producer.send(T, b"v", partition=0)
    batch = producer.send_batch(T, [b"a", b"b"], partitions=1)
    for bad in ("1", float("nan"), True, [1]):
        for call in (producer.flush, producer.close, future.result, batch.result):
            with pytest.raises(InvalidArgumentError, match=r"timeout must be a number of seconds \(math.inf"):
                call(bad)  # type: ignore[operator]
    assert not future.done()  # close(bad) closed nothing, flush(bad) sent nothing
    assert producer.flush(math.inf) == 0
    assert future.result(math.inf).partition == 0 and batch.result(float("inf")) == 2
    producer.close(math.inf)
    with pytest.raises(ProducerClosedError):
        producer.send(T, b"x", partition=0)


# -- config --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("config", "message"), [
    ({"linger.ms": -1}, "linger.ms must be in"),
    ({"acks": 2}, "acks must be one of all, -1, 0, 1"),
    ({"compression.type": "brotli"}, "compression.type must be one of none, gzip, snappy, lz4, zstd"),
    ({"batch.size": 0}, "batch.size must be in"),
    ({"lingr.ms": 5}, "unknown config key 'lingr.ms'"),
    ({"enable.idempotence": "yes"}, "enable.idempotence must be true or false"),
    ({"delivery.timeout.ms": 1000}, "delivery.timeout.ms (1000) must be >= linger.ms + request.timeout.ms"),
    ({"bootstrap.servers": "nohostport"}, "bootstrap.servers entries must be host:port"),
])
def test_invalid_config_names_the_key_and_the_accepted_values(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        Producer({"bootstrap.servers": "127.0.0.1:1", **config}, ports=Ports(start_sender=False))
    assert message in str(info.value)


def test_missing_bootstrap_servers() -> None:
    with pytest.raises(ConfigError, match=r"bootstrap\.servers is required"):
        Producer({"linger.ms": 1})


def test_keyword_arguments_with_underscores() -> None:
    cluster = FakeCluster(SystemClock())
    producer = Producer(bootstrap_servers="fake:1", linger_ms=7, batch_size=4096, ports=Ports(transport=cluster))
    try:
        assert (producer.config.linger_ms, producer.config.batch_size) == (7, 4096)
    finally:
        producer.close(1)


# -- records -------------------------------------------------------------------------------------------------------


def test_serializers_headers_and_metadata(fake: tuple[Producer, FakeCluster]) -> None:
    _, cluster = fake
    producer = make(cluster, **{"key.serializer": "str", "value.serializer": "json"})
    try:
        md = producer.send(T, {"a": 1}, key="k", headers={"h": "v", "n": None}, timestamp_ms=123).result(5)
    finally:
        producer.close(5)
    assert isinstance(md, RecordMetadata) and (md.topic, md.timestamp_ms) == (T, 123)
    assert md.serialized_key_size == 1 and md.serialized_value_size == len(b'{"a":1}')
    (stored,) = cluster.log(T, md.partition)
    assert (stored.key, json.loads(stored.value or b""), stored.headers) == (b"k", {"a": 1}, [("h", b"v"), ("n", None)])


def test_int_and_callable_serializers() -> None:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic(T, 1)
    producer = make(cluster, **{"key.serializer": "int", "value.serializer": lambda v: v[::-1].encode()})
    try:
        producer.send(T, "abc", key=-2).result(5)
    finally:
        producer.close(5)
    (stored,) = cluster.log(T, 0)
    assert stored.key == (-2).to_bytes(8, "big", signed=True) and stored.value == b"cba"


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"value": 12}, SerializationError, "value must be bytes"),
    ({"value": b"v", "key": 1.5}, SerializationError, "key must be bytes"),
    ({"value": b"v", "headers": [("k", 5)]}, SerializationError, "header 'k' value must be bytes"),
    ({"value": b"v", "headers": [(1, b"v")]}, SerializationError, "header keys must be str"),
    ({"value": b"v", "headers": "notalist"}, SerializationError, "headers must be"),
    ({"value": b"v", "partition": 3}, InvalidRecordError, "partition 3 is not in the range"),
    ({"value": b"v", "partition": -1}, InvalidRecordError, "partition -1 is not in the range"),
    ({"value": b"v", "timestamp_ms": -5}, InvalidRecordError, "timestamp_ms must be a non-negative int"),
    ({"value": b"v", "on_delivery": 3}, InvalidRecordError, "on_delivery must be callable"),
])
def test_bad_record_arguments_raise_typed_errors_and_queue_nothing(
        fake: tuple[Producer, FakeCluster], kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    producer, cluster = fake
    with pytest.raises(error, match=message):
        producer.send(T, **kwargs)
    assert producer.flush(5) == 0
    assert cluster.all_records(T) == []


@pytest.mark.parametrize("topic", ["", ".", "..", "a" * 250, "bad topic", "bad/topic", 5])
def test_invalid_topic_names(fake: tuple[Producer, FakeCluster], topic: Any) -> None:
    producer, _ = fake
    with pytest.raises(InvalidTopicError):
        producer.send(topic, b"v")


def test_record_larger_than_max_request_size_raises_at_send(fake: tuple[Producer, FakeCluster]) -> None:
    _, cluster = fake
    producer = make(cluster, **{"max.request.size": 1000})
    try:
        with pytest.raises(RecordTooLargeError, match=r"max\.request\.size \(1000\)"):
            producer.send(T, b"x" * 1000)
        producer.send(T, b"x" * 100).result(5)
    finally:
        producer.close(5)


def test_full_buffer_blocks_for_max_block_ms_then_raises_and_loses_nothing_else() -> None:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic(T, 1)
    producer = make(cluster, **{"buffer.memory": 4096, "batch.size": 1024, "max.block.ms": 300})
    try:
        producer.partitions_for(T)
        cluster.unreachable.add(0)
        futures = [producer.send(T, b"x" * 900, partition=0) for _ in range(4)]
        started = time.monotonic()
        with pytest.raises(BufferExhaustedError, match=r"max\.block\.ms"):
            producer.send(T, b"x" * 900, partition=0)
        assert time.monotonic() - started >= 0.25
        cluster.unreachable.clear()
        assert [f.result(10).offset for f in futures] == [0, 1, 2, 3]
    finally:
        producer.close(5)


def test_a_waiting_send_proceeds_when_memory_comes_back() -> None:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic(T, 1)
    producer = make(cluster, **{"buffer.memory": 2048, "batch.size": 1024, "max.block.ms": 10000})
    try:
        producer.partitions_for(T)
        cluster.unreachable.add(0)
        first = [producer.send(T, b"x" * 900, partition=0) for _ in range(2)]
        threading.Timer(0.2, cluster.unreachable.clear).start()
        late = producer.send(T, b"y" * 900, partition=0)  # blocks until the first batches are acknowledged
        assert [f.result(10).offset for f in [*first, late]] == [0, 1, 2]
        assert producer.metrics()["bufferpool-wait-ratio"] > 0
    finally:
        producer.close(5)


# -- callbacks, interceptors, lifecycle ---------------------------------------------------------------------------


def test_callbacks_run_on_the_sender_thread_and_a_raising_one_is_logged(
        fake: tuple[Producer, FakeCluster], caplog: pytest.LogCaptureFixture) -> None:
    producer, _ = fake
    seen: list[tuple[Any, Any, str]] = []

    def raising(err: Any, md: Any) -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="cykafka"):
        producer.send(T, b"1", on_delivery=raising)
        producer.send(T, b"2", on_delivery=lambda e, m: seen.append((e, m, threading.current_thread().name)))
        assert producer.flush(5) == 0
    assert "on_delivery callback raised" in caplog.text
    assert seen[0][0] is None and seen[0][1].offset >= 0 and seen[0][2].startswith("cykafka-sender")


def test_flush_inside_a_callback_is_refused(fake: tuple[Producer, FakeCluster]) -> None:
    producer, _ = fake
    errors: list[BaseException] = []

    def flush_inside(err: Any, md: Any) -> None:
        try:
            producer.flush(1)
        except cykafka.KafkaError as e:
            errors.append(e)

    producer.send(T, b"v", on_delivery=flush_inside).result(5)
    producer.flush(5)
    assert errors and "deadlock" in str(errors[0])


class Recorder:
    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.acked: list[tuple[Any, Any]] = []
        self.closed = False

    def on_send(self, record: Any) -> Any:
        self.sent.append(record.value)
        record.headers = [*(record.headers or []), ("intercepted", b"1")]
        return record

    def on_acknowledgement(self, metadata: Any, error: Any) -> None:
        self.acked.append((metadata, error))

    def close(self) -> None:
        self.closed = True


def test_interceptors_see_sends_and_acknowledgements() -> None:
    cluster = FakeCluster(SystemClock())
    cluster.create_topic(T, 1)
    recorder = Recorder()
    producer = make(cluster, **{"interceptor.classes": [recorder]})
    producer.send(T, b"v").result(5)
    producer.close(5)
    assert recorder.sent == [b"v"] and recorder.acked[0][1] is None and recorder.closed
    assert cluster.log(T, 0)[0].headers == [("intercepted", b"1")]


def test_send_after_close_and_idempotent_close(fake: tuple[Producer, FakeCluster]) -> None:
    producer, _ = fake
    producer.close(5)
    producer.close(5)
    with pytest.raises(ProducerClosedError, match=r"send\(\) after close"):
        producer.send(T, b"v")


def test_partitions_for_and_metrics_names(fake: tuple[Producer, FakeCluster]) -> None:
    producer, _ = fake
    assert [p.partition for p in producer.partitions_for(T)] == [0, 1, 2]
    producer.send(T, b"v").result(5)
    metrics = producer.metrics()
    for name in ("record-send-rate", "batch-size-avg", "compression-rate-avg", "record-queue-time-avg",
                 "request-latency-avg", "record-retry-rate", "record-error-rate", "buffer-available-bytes",
                 "bufferpool-wait-ratio", "requests-in-flight"):
        assert name in metrics
    assert metrics["record-send-total"] == 1 and metrics["batch-size-avg"] > 61


def test_unreachable_bootstrap_fails_within_max_block_ms_naming_the_servers() -> None:
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "max.block.ms": 500})
    try:
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match=r"127\.0\.0\.1:1"):
            producer.send(T, b"v")
        assert time.monotonic() - started < 2
    finally:
        producer.close(1)


def test_readme_usage_example_runs_against_the_embedded_broker(broker: EmbeddedBroker) -> None:
    readme = open(__file__.rsplit("/tests/", 1)[0] + "/README.md").read()
    topic = f"events-{uuid.uuid4().hex[:8]}"  # the session's broker: other tests (the docs' examples) write "events"
    code = readme.split("```python\n", 1)[1].split("```", 1)[0].replace("127.0.0.1:9092", broker.bootstrap_servers)
    exec(compile(code.replace('"events"', f'"{topic}"'), "README.md", "exec"), {})
    assert len(read_back(broker.bootstrap_servers, topic)) == 1001


def test_a_topic_that_does_not_exist_is_named_as_such_after_max_block_ms() -> None:
    """Auto-creation off: the broker answers UNKNOWN_TOPIC_OR_PARTITION. The producer waits max.block.ms as Java's
    waitOnMetadata does (a topic being created answers the same for a moment; docs/delivery.md), then says the topic
    does not exist, with the broker's error as the cause (it said only "not present in metadata")."""
    cluster = FakeCluster(SystemClock(), num_brokers=1, auto_create=False)
    producer = fake_producer(cluster, **{"max.block.ms": 300})
    try:
        started = time.monotonic()
        with pytest.raises(cykafka.KafkaTimeoutError, match="topic 'nowhere' does not exist") as caught:
            producer.send("nowhere", b"v")
        assert time.monotonic() - started < 5
        assert "UNKNOWN_TOPIC_OR_PARTITION" in str(caught.value) and "max.block.ms" in str(caught.value)
        cause = caught.value.__cause__
        assert isinstance(cause, cykafka.errors.BrokerResponseError) and cause.code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    finally:
        producer.close(5)
