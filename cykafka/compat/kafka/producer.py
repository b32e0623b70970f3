"""kafka-python's KafkaProducer over cykafka's Producer: send() -> FutureRecordMetadata with its
callbacks (run on one callback thread), kafka-python's partitioners, transactions.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
from collections.abc import Callable, Mapping
from typing import Any

from cykafka.compat.kafka._config import (
    PRODUCER_DEFAULTS,
    _cy_offset,
    _cy_producer_keys,
    _grouped,
    _serializer,
    kafka_config,
)
from cykafka.compat.kafka.errors import _T, IllegalStateError, KafkaConfigurationError, KafkaTimeoutError, translated
from cykafka.compat.kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, RecordMetadata
from cykafka.completion import Completion
from cykafka.core import RecordFuture
from cykafka.ports.values import ConsumerGroupMetadata as _CyGroupMetadata
from cykafka.ports.values import TopicPartition
from cykafka.producer import Producer

# -- producer ----------------------------------------------------------------------------------------------------

_client_ids = itertools.count(1)


class _CallbackThread:
    """Runs the futures' callbacks added before their record was final, off the sender thread, in order (what a
    batch's Completion hands it: one call per batch, none per record). Duck-types the loop `call_soon_on` takes."""

    def __init__(self, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)

    def call_soon_threadsafe(self, fn: Callable[..., object], *args: object) -> None:
        self._executor.submit(fn, *args)

    def call_soon(self, fn: Callable[..., object], *args: object) -> None:
        self._executor.submit(fn, *args)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class FutureRecordMetadata:
    """What KafkaProducer.send returns: ``get(timeout)`` -> RecordMetadata (or raises the record's error),
    ``add_callback(fn, *args)`` / ``add_errback(fn, *args)`` (each returns the future; called at once when it is
    final already, else on the producer's callback thread), is_done, succeeded(), failed(), value, exception."""

    __slots__ = ("_callbacks", "_future", "_producer", "_sizes")

    def __init__(self, producer: KafkaProducer, future: RecordFuture, sizes: tuple[int, int, int]) -> None:
        self._producer, self._future, self._sizes = producer, future, sizes
        self._callbacks: list[tuple[bool, Callable[..., object], tuple[object, ...]]] | None = None

    def _metadata(self) -> RecordMetadata:
        md = self._future.result(0)
        return RecordMetadata(md.topic, md.partition, TopicPartition(md.topic, md.partition), md.offset,
                              md.timestamp_ms, None, *self._sizes)

    def get(self, timeout: float | None = None) -> RecordMetadata:
        with _T:
            self._future.result(timeout)
            return self._metadata()

    @property
    def is_done(self) -> bool:
        return self._future.done()

    def succeeded(self) -> bool:
        return self._future.done() and self._future.exception(0) is None

    def failed(self) -> bool:
        return self._future.done() and self._future.exception(0) is not None

    @property
    def value(self) -> RecordMetadata | None:
        return self._metadata() if self.succeeded() else None

    @property
    def exception(self) -> BaseException | None:
        if not self._future.done():
            return None
        error = self._future.exception(0)
        return None if error is None else translated(error)

    def add_callback(self, fn: Callable[..., object], *args: object, **kwargs: object) -> FutureRecordMetadata:
        return self._add(True, fn, args, kwargs)

    def add_errback(self, fn: Callable[..., object], *args: object, **kwargs: object) -> FutureRecordMetadata:
        return self._add(False, fn, args, kwargs)

    def add_both(self, fn: Callable[..., object], *args: object, **kwargs: object) -> FutureRecordMetadata:
        return self._add(True, fn, args, kwargs)._add(False, fn, args, kwargs)

    def _add(self, on_success: bool, fn: Callable[..., object], args: tuple[object, ...],
             kwargs: Mapping[str, object]) -> FutureRecordMetadata:
        call = (lambda *a: fn(*a, **kwargs)) if kwargs else fn
        producer = self._producer
        with producer._callbacks_lock:
            completion = self._future.waitable()
            if isinstance(completion, Completion):
                if self._callbacks is None:
                    self._callbacks = []
                    producer._pending_callbacks.add(self)
                    completion.call_soon_on(producer._callback_thread(), self._fire)  # type: ignore[arg-type]
                self._callbacks.append((on_success, call, args))
                return self
        self._run(on_success, call, args)  # final: now, on this thread (kafka-python does the same)
        return self

    def _fire(self) -> None:
        """Runs the callbacks added so far (once: on the callback thread, or in flush() if that comes first)."""
        producer = self._producer
        with producer._callbacks_lock:
            callbacks, self._callbacks = self._callbacks or [], []
            producer._pending_callbacks.discard(self)
        for on_success, call, args in callbacks:
            self._run(on_success, call, args)

    def _run(self, on_success: bool, call: Callable[..., object], args: tuple[object, ...]) -> None:
        error = self._future.exception(0)
        try:
            if on_success and error is None:
                call(*args, self._metadata())
            elif not on_success and error is not None:
                call(*args, translated(error))
        except Exception:  # kafka-python logs and goes on
            import logging
            logging.getLogger(__name__).exception("a FutureRecordMetadata callback raised")


class KafkaProducer:
    """kafka-python's KafkaProducer over cykafka.Producer: `KafkaProducer(bootstrap_servers=..., **configs)` with
    kafka-python's kwargs and defaults (acks=all, idempotence on, linger_ms=0); docs/migrating-kafka-python.md."""

    DEFAULT_CONFIG = PRODUCER_DEFAULTS

    def __init__(self, **configs: Any) -> None:
        self.config = {**PRODUCER_DEFAULTS, **configs}
        if configs.get("client_id") is None:
            configs = {**configs, "client_id": f"kafka-python-producer-{next(_client_ids)}"}
        partitioner = configs.get("partitioner")
        custom = partitioner is not None and type(partitioner).__name__ != "DefaultPartitioner"
        if custom and not (callable(partitioner) or callable(getattr(partitioner, "partition", None))):
            raise KafkaConfigurationError(f"partitioner={partitioner!r} has no partition() and is not callable")
        if configs.get("transactional_id") and configs.get("enable_idempotence") is False:
            raise KafkaConfigurationError("Cannot set transactional_id without enable_idempotence.")
        kafka = kafka_config(configs, PRODUCER_DEFAULTS, _cy_producer_keys(),
                             frozenset({"key_serializer", "value_serializer", "partitioner"}))
        if custom:
            kafka["partitioner.class"] = _partitioner(partitioner)
        self._key_serializer = _serializer(configs.get("key_serializer"), "serialize")
        self._value_serializer = _serializer(configs.get("value_serializer"), "serialize")
        with _T:
            self._producer = Producer(kafka)
        self._closed = False
        self._callbacks: _CallbackThread | None = None
        self._callbacks_lock = threading.Lock()
        self._pending_callbacks: set[FutureRecordMetadata] = set()  # callbacks added before the record was final

    @property
    def producer(self) -> Producer:
        """The cykafka.Producer underneath (its send() is the fast path: no FutureRecordMetadata)."""
        return self._producer

    def _callback_thread(self) -> _CallbackThread:
        """The thread running callbacks (made on first use; called with _callbacks_lock held)."""
        if self._callbacks is None:
            self._callbacks = _CallbackThread(f"{self._producer.config.client_id}-callbacks")
        return self._callbacks

    def _run_callbacks(self) -> None:
        """The callbacks of every final record run before flush() / close() return, as kafka-python's do."""
        with self._callbacks_lock:
            final = [f for f in self._pending_callbacks if f.is_done]
        for future in final:
            future._fire()

    def send(self, topic: str, value: Any = None, key: Any = None, headers: list[tuple[str, bytes]] | None = None,
             partition: int | None = None, timestamp_ms: int | None = None) -> FutureRecordMetadata:
        """Queues a record; returns its FutureRecordMetadata. Serializers run here, on the caller's thread."""
        if self._closed:
            raise IllegalStateError("KafkaProducer already closed!")
        if value is None and key is None:
            raise ValueError("Need at least one: key or value")
        if self._key_serializer is not None:
            key = self._key_serializer(topic, headers or [], key)
        if self._value_serializer is not None:
            value = self._value_serializer(topic, headers or [], value)
        sizes = (-1 if key is None else len(key), -1 if value is None else len(value),
                 sum(len(k.encode()) + len(v or b"") for k, v in headers) if headers else -1)
        with _T:
            future = self._producer.send(topic, value, key, partition=partition, timestamp_ms=timestamp_ms,
                                         headers=headers)
        return FutureRecordMetadata(self, future, sizes)

    def flush(self, timeout: float | None = None) -> None:
        """Sends everything queued and waits for it; KafkaTimeoutError when `timeout` seconds pass first."""
        with _T:
            pending = self._producer.flush(timeout)
        self._run_callbacks()
        if pending:
            raise KafkaTimeoutError(f"Timeout after waiting for {timeout} secs: {pending} records pending")

    def close(self, timeout: float | None = None) -> None:
        """Flushes (up to `timeout` s), then closes; a second close does nothing."""
        if self._closed:
            return
        if timeout is not None and not (0 <= timeout <= threading.TIMEOUT_MAX):
            raise ValueError(f"Invalid timeout: {timeout}")
        self._closed = True
        with _T:
            self._producer.close(timeout)
        self._run_callbacks()
        if self._callbacks is not None:
            self._callbacks.shutdown()

    def __enter__(self) -> KafkaProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partitions_for(self, topic: str) -> set[int]:
        """The topic's partition ids (waiting up to max_block_ms for its metadata)."""
        with _T:
            return {p.partition for p in self._producer.partitions_for(topic)}

    def metrics(self, raw: bool = False) -> dict[str, dict[str, float]]:
        """{group: {name: value}} of the client-level metrics (kafka-python's shape; Java's groups and names, e.g.
        'producer-metrics' / 'record-send-total')."""
        return _grouped(self._producer.metrics())

    def bootstrap_connected(self) -> bool:
        return not self._closed

    # -- transactions ------------------------------------------------------------------------------------------

    def init_transactions(self) -> None:
        if not self._producer.config.transactional_id:
            raise IllegalStateError("Cannot call init_transactions without setting a transactional_id.")
        with _T:
            self._producer.init_transactions()

    def begin_transaction(self) -> None:
        with _T:
            self._producer.begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                    group_metadata: ConsumerGroupMetadata | str) -> None:
        """offsets {TopicPartition: OffsetAndMetadata}; group_metadata: KafkaConsumer.group_metadata() or a group
        id (kafka-python 2.x took the id)."""
        group: _CyGroupMetadata | str
        if isinstance(group_metadata, ConsumerGroupMetadata):
            group = _CyGroupMetadata(group_metadata.group_id or "", group_metadata.generation_id,
                                     group_metadata.member_id, group_metadata.group_instance_id)
        else:
            group = group_metadata
        with _T:
            self._producer.send_offsets_to_transaction({tp: _cy_offset(om) for tp, om in offsets.items()}, group)

    def commit_transaction(self) -> None:
        with _T:
            self._producer.commit_transaction()

    def abort_transaction(self) -> None:
        with _T:
            self._producer.abort_transaction()


class _Partitions:
    """What a kafka-python 3.x Partitioner.partition(...) gets as `metadata`: the topic's partitions (all counted as
    available: cykafka's partitioner.class call does not say which leaders are up)."""

    __slots__ = ("_partitions", "_topic")

    def __init__(self, topic: str, num_partitions: int) -> None:
        self._topic, self._partitions = topic, set(range(num_partitions))

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions if topic == self._topic else None

    available_partitions_for_topic = partitions_for_topic


def _partitioner(partitioner: Any) -> Callable[..., int]:
    """kafka-python's partitioner as cykafka's partitioner.class: 3.x's Partitioner object (partition(topic, key,
    key_bytes, value, value_bytes, metadata)) or 2.x's callable (key_bytes, all_partitions, available_partitions)."""
    method = getattr(partitioner, "partition", None)

    def partition(topic: str, key: object, key_bytes: bytes | None, value: object, value_bytes: bytes | None,
                  num_partitions: int) -> int:
        if method is not None:
            return method(topic, key, key_bytes, value, value_bytes, _Partitions(topic, num_partitions))  # type: ignore[no-any-return]
        partitions = list(range(num_partitions))
        return partitioner(key_bytes, partitions, partitions)  # type: ignore[no-any-return]

    return partition


