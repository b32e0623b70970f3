"""cykafka.compat.aiokafka: aiokafka 0.14's API (AIOKafkaProducer, AIOKafkaConsumer, TopicPartition, ConsumerRecord,
RecordMetadata, OffsetAndMetadata, ConsumerRebalanceListener, errors) over cykafka.aio's AsyncProducer and
AsyncConsumer. Owns only the translation: aiokafka's kwargs and defaults (acks=1 without idempotence, linger_ms=0,
session_timeout_ms=10000, the round-robin assignor), its call shapes (start() also initialising transactions,
create_batch / send_batch, highwater, sync subscribe / assign / seek / pause), its tuples and its error types (the
kafka-python ones of cykafka.compat.kafka plus aiokafka's own, each a cykafka KafkaError). No protocol work; per
record only what the shape forces: a (de)serializer call where configured, the RecordMetadata future send returns,
one ConsumerRecord per record handed out (built in C from cykafka's, a whole getmany in one pass). `from
cykafka.compat.aiokafka.errors import ...` works as `from aiokafka.errors import ...`, and `.structs` as
`aiokafka.structs`. What differs and why:
docs/migrating-aiokafka.md.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

from cykafka import errors as _cy
from cykafka.aio import AsyncConsumer, AsyncProducer, loop_futures
from cykafka.compat import kafka as _kp
from cykafka.compat.aiokafka import errors as errors
from cykafka.compat.aiokafka.errors import (
    ConsumerStoppedError,
    IllegalOperation,
    ProducerClosed,
    ProducerFenced,
    RecordTooLargeError,
    UnknownArgumentError,
)
from cykafka.compat.kafka import (
    IllegalArgumentError,
    KafkaConfigurationError,
    TopicPartition,
    kafka_config,
)
from cykafka.compat.kafka import _config as _kp_config
from cykafka.consumer import Consumer
from cykafka.core import AIOKafkaRecord, AsyncSends, aiokafka_record, aiokafka_records
from cykafka.core import RecordMetadata as _CyRecordMetadata
from cykafka.ports.values import OffsetAndMetadata as _CyOffsetAndMetadata

__all__ = [
    "AIOKafkaConsumer", "AIOKafkaProducer", "BatchBuilder", "ConsumerRebalanceListener", "ConsumerRecord",
    "OffsetAndMetadata", "OffsetAndTimestamp", "RecordMetadata", "TopicPartition", "errors",
]

def translated(error: BaseException, *, commit: bool = False) -> BaseException:
    """cykafka's error as the aiokafka type its users catch (the original as __cause__)."""
    new: BaseException | None = None
    text = str(error)
    if isinstance(error, _cy.ProducerClosedError):
        new = ProducerClosed(text)
    elif isinstance(error, _cy.ProducerFencedError):
        new = ProducerFenced(text)
    elif isinstance(error, _cy.TransactionStateError):
        new = IllegalOperation(text)
    elif isinstance(error, _cy.RecordTooLargeError):
        new = RecordTooLargeError(text)
    if new is None:
        return _kp.errors.translated(error, commit=commit)
    new.__cause__ = error
    return new


_T = _kp.errors.Translating(translated)  # `with _T:` raises cykafka's errors as aiokafka's
_TC = _kp.errors.Translating(translated, commit=True)

# -- structs -----------------------------------------------------------------------------------------------------


class OffsetAndMetadata(NamedTuple):
    """aiokafka.structs.OffsetAndMetadata."""

    offset: int
    metadata: str


class OffsetAndTimestamp(NamedTuple):
    """aiokafka.structs.OffsetAndTimestamp (offsets_for_times' values)."""

    offset: int
    timestamp: int | None


class RecordMetadata(NamedTuple):
    """What a send's future resolves to (aiokafka's fields; log_start_offset is None: Produce's answer is not
    kept)."""

    topic: str
    partition: int
    topic_partition: TopicPartition
    offset: int
    timestamp: int | None
    timestamp_type: int
    log_start_offset: int | None


ConsumerRecord = AIOKafkaRecord
"""A record as aiokafka hands it out: aiokafka's attributes, repr and equality, built in C for a whole getmany
(cykafka.core.AIOKafkaRecord; aiokafka's is a dataclass)."""


class ConsumerRebalanceListener:
    """aiokafka.abc.ConsumerRebalanceListener: subclass it; the methods may be `async def`."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """Before a rebalance takes these partitions (commit here)."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """After a rebalance, the partitions now assigned."""


def _metadata(md: _CyRecordMetadata) -> RecordMetadata:
    return RecordMetadata(md.topic, md.partition, TopicPartition(md.topic, md.partition), md.offset,
                          md.timestamp_ms, 0, None)


# -- config -------------------------------------------------------------------------------------------------------

_SHARED: dict[str, object] = {
    "loop": None, "bootstrap_servers": "localhost", "metadata_max_age_ms": 300000, "request_timeout_ms": 40000,
    "api_version": None, "retry_backoff_ms": 100, "security_protocol": "PLAINTEXT", "ssl_context": None,
    "connections_max_idle_ms": 540000, "sasl_mechanism": "PLAIN", "sasl_plain_password": None,
    "sasl_plain_username": None, "sasl_kerberos_service_name": "kafka", "sasl_kerberos_domain_name": None,
    "sasl_oauth_token_provider": None,
}
PRODUCER_DEFAULTS: dict[str, object] = {  # aiokafka 0.14 AIOKafkaProducer's
    **_SHARED, "client_id": None, "acks": None, "key_serializer": None, "value_serializer": None,
    "compression_type": None, "max_batch_size": 16384, "partitioner": None, "max_request_size": 1048576,
    "linger_ms": 0, "enable_idempotence": False, "transactional_id": None, "transaction_timeout_ms": 60000,
}
CONSUMER_DEFAULTS: dict[str, object] = {  # aiokafka 0.14 AIOKafkaConsumer's
    **_SHARED, "client_id": None, "group_id": None, "group_instance_id": None, "key_deserializer": None,
    "value_deserializer": None, "fetch_max_wait_ms": 500, "fetch_max_bytes": 52428800, "fetch_min_bytes": 1,
    "max_partition_fetch_bytes": 1048576, "auto_offset_reset": "latest", "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000, "check_crcs": True, "partition_assignment_strategy": None,
    "max_poll_interval_ms": 300000, "rebalance_timeout_ms": None, "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 3000, "consumer_timeout_ms": 200, "max_poll_records": None,
    "exclude_internal_topics": True, "isolation_level": "read_uncommitted", "client_rack": None,
}
_NO_EFFECT = frozenset({"loop", "api_version", "consumer_timeout_ms"})  # aiokafka internals: any value
_producer_ids = itertools.count(1)


def _config(configs: Mapping[str, object], defaults: Mapping[str, object], accepted: frozenset[str],
            handled: set[str]) -> dict[str, object]:
    if configs.get("ssl_context") is not None:
        raise KafkaConfigurationError("ssl_context: cykafka takes files (ssl_cafile...) through its own keys: "
                                      "use cykafka's ssl.ca.location etc. with the native clients")
    kafka = kafka_config({k: v for k, v in configs.items() if k not in _NO_EFFECT},
                         {k: v for k, v in defaults.items() if k not in _NO_EFFECT}, accepted,
                         frozenset(handled | {"sasl_mechanism"}), unknown_error=UnknownArgumentError)
    if str(configs.get("security_protocol", "PLAINTEXT")).startswith("SASL"):
        kafka["sasl.mechanism"] = configs.get("sasl_mechanism", "PLAIN")
    return kafka


def _plain(fn: object) -> Callable[[Any], Any] | None:
    """aiokafka's (de)serializer: a function of the data (called for None too, as aiokafka does)."""
    if fn is not None and not callable(fn):
        raise KafkaConfigurationError(f"serializer {fn!r} is not callable")
    return fn


# -- producer -----------------------------------------------------------------------------------------------------


class BatchBuilder:
    """What create_batch() returns: append(key=, value=, timestamp=, headers=) records (None once max_batch_size is
    reached), then send_batch(batch, topic, partition=...)."""

    _OVERHEAD_BYTES = 21  # a record's worst-case framing in a v2 batch (lengths, deltas, attributes)

    def __init__(self, max_size_bytes: int, key_serializer: Callable[[Any], Any] | None,
                 value_serializer: Callable[[Any], Any] | None) -> None:
        self._max_size_bytes = max_size_bytes
        self._key_serializer, self._value_serializer = key_serializer, value_serializer
        self._records: list[tuple[Any, Any, int | None, Any]] = []
        self._size_bytes = 61  # a batch header
        self._closed = False

    def append(self, *, timestamp: int | None, key: Any, value: Any,
               headers: list[tuple[str, bytes]] | None = None) -> Any:
        """Adds a record; None (nothing added) when the batch is full."""
        if self._closed:
            return None
        if self._key_serializer is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None:
            value = self._value_serializer(value)
        size = self._OVERHEAD_BYTES + len(key or b"") + len(value or b"") + sum(
            len(k) + len(v or b"") + 2 for k, v in headers or ())
        if self._records and self._size_bytes + size > self._max_size_bytes:
            return None
        self._size_bytes += size
        self._records.append((key, value, timestamp, headers or None))
        return types.SimpleNamespace(offset=len(self._records) - 1, size=size, timestamp=timestamp, crc=None)

    def close(self) -> None:
        self._closed = True

    def size(self) -> int:
        return self._size_bytes

    def record_count(self) -> int:
        return len(self._records)


class AIOKafkaProducer:
    """aiokafka's AIOKafkaProducer over cykafka.aio.AsyncProducer: `AIOKafkaProducer(bootstrap_servers=...)`,
    `await start()` (also initialises transactions with a transactional_id), `await send(...)` -> a future of
    RecordMetadata, send_and_wait, create_batch / send_batch, transactions; docs/migrating-aiokafka.md."""

    def __init__(self, **configs: Any) -> None:
        if configs.get("client_id") is None:
            configs = {**configs, "client_id": f"aiokafka-producer-{next(_producer_ids)}"}
        idempotent = bool(configs.get("enable_idempotence")) or configs.get("transactional_id") is not None
        acks = configs.get("acks")
        if acks not in (0, 1, -1, "all", None):
            raise ValueError("Invalid ACKS parameter")
        if idempotent and acks not in ("all", -1, None):
            raise ValueError(f"acks={acks} not supported if enable_idempotence=True")
        if configs.get("compression_type") not in ("gzip", "snappy", "lz4", "zstd", None):
            raise ValueError("Invalid compression type!")
        if configs.get("partitioner") is not None:
            raise KafkaConfigurationError("partitioner: cykafka.compat.aiokafka has only the default partitioner "
                                          "(murmur2 of the key)")
        config = {**configs, "acks": acks if acks is not None else (-1 if idempotent else 1),
                  "enable_idempotence": idempotent}
        kafka = _config(config, PRODUCER_DEFAULTS, _kp_config._cy_producer_keys(),
                        {"key_serializer", "value_serializer", "partitioner"})
        self._key_serializer = _plain(configs.get("key_serializer"))
        self._value_serializer = _plain(configs.get("value_serializer"))
        self._max_batch_size_bytes = int(configs.get("max_batch_size", 16384))
        self._transactional = configs.get("transactional_id") is not None
        with _T:
            self._inner = AsyncProducer(kafka)
        self._closed = False
        # send()'s futures, resolved a batch at a time in C with aiokafka's RecordMetadata (cykafka.aio's way), and
        # the compiled send path that makes them (try_send and the future in one C call)
        self._futures = loop_futures(error_of=translated, metadata_type=RecordMetadata, partition_type=TopicPartition)
        self._sends = AsyncSends()
        self._sends._init_async_sends(self._inner.producer, self._futures, self._inner._on_thread, self._send_waiting,
                                      translated)

    @property
    def producer(self) -> AsyncProducer:
        """The cykafka.aio.AsyncProducer underneath (its send returns cykafka's RecordMetadata: no extra future)."""
        return self._inner

    async def start(self) -> None:
        """aiokafka's start: with a transactional_id also initialises transactions (InitProducerId)."""
        await self._inner.start()
        if self._transactional:
            with _T:
                await self._inner.init_transactions()

    async def stop(self) -> None:
        """Flushes, then closes; a second stop does nothing."""
        if self._closed:
            return
        self._closed = True
        with _T:
            await self._inner.stop()

    async def __aenter__(self) -> AIOKafkaProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def flush(self) -> None:
        """Sends everything queued and awaits it; the futures send() returned before are resolved then."""
        await self._inner.flush()
        settled = self._futures.settled_wait()
        if settled is not None:  # resolved on the loop right after their batch's completion
            await settled

    async def partitions_for(self, topic: str) -> set[int]:
        with _T:
            return {p.partition for p in await self._inner.partitions_for(topic)}

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp_ms: int | None = None,
             headers: list[tuple[str, bytes]] | None = None) -> Awaitable[asyncio.Future[RecordMetadata]]:
        """Queues the record (waiting for metadata or memory); `await` it for a future of its RecordMetadata. Errors
        are raised by the await, as aiokafka's `async def send`'s. The common case is one C call (AsyncSends.send):
        the record is queued by the call, its await is done at once."""
        if value is None and key is None:
            return _raising(IllegalArgumentError("Need at least one: key or value"))
        if self._closed:
            return _raising(ProducerClosed("AIOKafkaProducer is stopped"))
        if self._key_serializer is not None or self._value_serializer is not None:
            try:
                if self._key_serializer is not None:
                    key = self._key_serializer(key)
                if self._value_serializer is not None:
                    value = self._value_serializer(value)
            except Exception as error:
                return _raising(error)
        sent: Awaitable[asyncio.Future[RecordMetadata]] = self._sends.send(
            topic, value, key, partition=partition, timestamp_ms=timestamp_ms, headers=headers)
        return sent

    async def _send_waiting(self, blocked: object, topic: str, value: Any, key: Any, partition: int | None,
                            timestamp_ms: int | None, headers: Any) -> asyncio.Future[RecordMetadata]:
        """send() of a record that must wait for metadata or memory (nothing was queued; no interceptors here, so
        asking again is safe): AsyncProducer.send awaits them; its future is chained (one more hop, off the fast
        path)."""
        with _T:
            inner = await self._inner.send(topic, value, key, partition=partition, timestamp_ms=timestamp_ms,
                                           headers=headers)
        return _chained(inner)

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                            timestamp_ms: int | None = None,
                            headers: list[tuple[str, bytes]] | None = None) -> RecordMetadata:
        future = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await future

    def create_batch(self) -> BatchBuilder:
        return BatchBuilder(self._max_batch_size_bytes, self._key_serializer, self._value_serializer)

    async def send_batch(self, batch: BatchBuilder, topic: str, *, partition: int) -> asyncio.Future[RecordMetadata]:
        """Queues the batch's records to `partition`; a future of the first record's RecordMetadata (its offset is
        the batch's base offset)."""
        batch.close()
        first: asyncio.Future[RecordMetadata] | None = None
        for key, value, timestamp_ms, headers in batch._records:
            future = await self._sends.send(topic, value, key, partition=partition, timestamp_ms=timestamp_ms,
                                            headers=headers)
            if first is None:
                first = future
        if first is None:
            raise IllegalArgumentError("send_batch: the batch is empty")
        return first

    async def begin_transaction(self) -> None:
        self._need_transactional()
        with _T:
            await self._inner.begin_transaction()

    async def commit_transaction(self) -> None:
        self._need_transactional()
        with _T:
            await self._inner.commit_transaction()

    async def abort_transaction(self) -> None:
        self._need_transactional()
        with _T:
            await self._inner.abort_transaction()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """`async with producer.transaction():` begins; commits at the end, aborts when the block raises."""
        await self.begin_transaction()
        try:
            yield
        except BaseException:
            await self.abort_transaction()
            raise
        await self.commit_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
                                          group_id: str) -> None:
        self._need_transactional()
        cy: dict[tuple[str, int], int | _CyOffsetAndMetadata] = {
            TopicPartition(*tp): _CyOffsetAndMetadata(om.offset, om.metadata) if isinstance(om, OffsetAndMetadata)
            else om for tp, om in offsets.items()}
        with _T:
            await self._inner.send_offsets_to_transaction(cy, group_id)

    def _need_transactional(self) -> None:
        if not self._transactional:
            raise IllegalOperation("You need to configure transaction_id to use transactions")


async def _raising(error: BaseException) -> Any:
    """What send() returns for a record refused before it reaches cykafka: its await raises the error."""
    raise error


def _chained(inner: asyncio.Future[_CyRecordMetadata]) -> asyncio.Future[RecordMetadata]:
    """A future of aiokafka's RecordMetadata resolved with `inner` (cykafka's): resolved at once when it is."""
    future: asyncio.Future[RecordMetadata] = inner.get_loop().create_future()

    def done(f: asyncio.Future[_CyRecordMetadata]) -> None:
        if future.done():
            return
        if f.cancelled():
            future.cancel()
        elif (error := f.exception()) is not None:
            future.set_exception(translated(error))
        else:
            future.set_result(_metadata(f.result()))

    if inner.done():
        done(inner)
    else:
        inner.add_done_callback(done)
    return future


# -- consumer -----------------------------------------------------------------------------------------------------


class AIOKafkaConsumer:
    """aiokafka's AIOKafkaConsumer over cykafka.aio.AsyncConsumer: `AIOKafkaConsumer(*topics, **configs)`,
    `await start()`, getone / getmany / `async for`, sync subscribe / assign / seek / pause as aiokafka has them,
    commits, offsets, highwater; docs/migrating-aiokafka.md."""

    def __init__(self, *topics: str, **configs: Any) -> None:
        self._group_id = configs.get("group_id")
        handled = {"key_deserializer", "value_deserializer", "enable_auto_commit", "rebalance_timeout_ms",
                   "max_poll_records", "exclude_internal_topics", "partition_assignment_strategy"}
        kafka = _config(configs, CONSUMER_DEFAULTS, _kp_config._cy_consumer_keys(), handled)
        if configs.get("client_id") is None:
            kafka["client.id"] = "aiokafka-0.14.0"
        strategy = configs.get("partition_assignment_strategy")
        names = ["roundrobin"] if strategy is None else [
            _kp_config._ASSIGNORS.get(str(getattr(a, "name", a)), "") for a in strategy]
        if "" in names:
            raise KafkaConfigurationError(f"partition_assignment_strategy: {strategy!r}: cykafka has the range, "
                                          "roundrobin and cooperative-sticky assignors (by their name)")
        kafka["partition.assignment.strategy"] = ",".join(names)
        if self._group_id is not None:
            kafka["enable.auto.commit"] = bool(configs.get("enable_auto_commit", True))
        if configs.get("max_poll_records") is not None:
            kafka["max.poll.records"] = configs["max_poll_records"]
        if configs.get("exclude_internal_topics", True) is not True:
            raise KafkaConfigurationError("exclude_internal_topics=False: cykafka.compat.aiokafka cannot honour it")
        self._key_deserializer = _plain(configs.get("key_deserializer"))
        self._value_deserializer = _plain(configs.get("value_deserializer"))
        with _T:
            self._inner = AsyncConsumer(kafka)
        self._consumer: Consumer = self._inner.consumer
        self._max_poll_records = self._consumer.config.max_poll_records
        self._pending_subscribe: tuple[Any, Any] | None = None
        self._stopped = False
        self._admin_config = {k: v for k, v in kafka.items() if k in _kp_config._cy_admin_keys()}
        if topics:
            self.subscribe(topics)

    @property
    def consumer(self) -> AsyncConsumer:
        """The cykafka.aio.AsyncConsumer underneath (getmany of cykafka's records; poll_batch to Arrow)."""
        return self._inner

    async def _apply(self) -> None:
        """A subscribe() made since the last await (aiokafka's subscribe is sync; AsyncConsumer's runs on its
        thread)."""
        if self._stopped:
            raise ConsumerStoppedError()
        pending, self._pending_subscribe = self._pending_subscribe, None
        if pending is None:
            return
        if self._group_id is not None:
            with _T:
                await self._inner.subscribe(pending[0], listener=pending[1])
            return
        # no group_id: as aiokafka, every partition of the topics (those the pattern matches now), assigned
        what = pending[0]
        topics = [t for t in await self.topics() if what.match(t)] if isinstance(what, re.Pattern) else what
        consumer = self._consumer
        with _T:
            infos = await asyncio.to_thread(lambda: [p for t in topics for p in consumer.partitions_for(t)])
            consumer.assign([TopicPartition(p.topic, p.partition) for p in infos])

    async def start(self) -> None:
        await self._apply()

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        with _T:
            await self._inner.stop()

    async def __aenter__(self) -> AIOKafkaConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- records ----------------------------------------------------------------------------------------------

    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int | None = None) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to max_records records, waiting up to timeout_ms for some: {TopicPartition: [ConsumerRecord]}."""
        if partitions:
            raise IllegalArgumentError("getmany(*partitions): cykafka.compat.aiokafka reads every assigned partition "
                                       f"(pause() the others); {_cy.DOCS_URL}migrating-aiokafka.md")
        if timeout_ms < 0:
            raise IllegalArgumentError("timeout_ms must not be negative")
        await self._apply()
        try:
            got = await self._inner.getmany(timeout_ms=timeout_ms, max_records=max_records)
        except _cy.KafkaError as e:
            raise self._stopped_or(e) from e
        return aiokafka_records(got, self._key_deserializer, self._value_deserializer)

    def _stopped_or(self, error: BaseException) -> BaseException:
        """ConsumerStoppedError for a call stop() ended (aiokafka's), else the error translated."""
        return ConsumerStoppedError() if self._stopped else translated(error)

    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord:
        """The next record, awaited as long as it takes."""
        if partitions:
            raise IllegalArgumentError("getone(*partitions): cykafka.compat.aiokafka reads every assigned partition "
                                       f"(pause() the others); {_cy.DOCS_URL}migrating-aiokafka.md")
        await self._apply()
        try:
            record = await self._inner.getone()
        except _cy.KafkaError as e:
            raise self._stopped_or(e) from e
        return aiokafka_record(record, self._key_deserializer, self._value_deserializer)

    def __aiter__(self) -> AIOKafkaConsumer:
        return self

    async def __anext__(self) -> ConsumerRecord:
        if self._stopped:
            raise StopAsyncIteration
        try:
            return await self.getone()
        except ConsumerStoppedError:
            raise StopAsyncIteration from None

    # -- subscription and assignment (sync, as aiokafka's) ----------------------------------------------------

    def subscribe(self, topics: Iterable[str] = (), pattern: str | None = None,
                  listener: object | None = None) -> None:
        """topics or a regex pattern, with an optional ConsumerRebalanceListener (methods may be async): applied
        by the next awaited call (start, getone, getmany...)."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        if bool(topic_list) == (pattern is not None):
            raise ValueError("You must choose topics or pattern, but not both")
        self._pending_subscribe = (re.compile(pattern) if pattern is not None else topic_list, listener)

    def subscription(self) -> set[str]:
        if self._pending_subscribe is not None and isinstance(self._pending_subscribe[0], list):
            return set(self._pending_subscribe[0])
        return self._consumer.subscription()

    def unsubscribe(self) -> None:
        self._pending_subscribe = None
        with _T:
            self._consumer.unsubscribe()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        with _T:
            self._consumer.assign([TopicPartition(*tp) for tp in partitions])

    def assignment(self) -> set[TopicPartition]:
        return self._consumer.assignment()

    def seek(self, partition: TopicPartition, offset: int) -> None:
        if not isinstance(offset, int) or offset < 0:
            raise ValueError("Offset must be a positive integer")
        with _T:
            self._consumer.seek(TopicPartition(*partition), offset)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        await self._apply()
        with _T:
            await self._inner.seek_to_beginning(list(partitions) or None)
        return True

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        await self._apply()
        with _T:
            await self._inner.seek_to_end(list(partitions) or None)
        return True

    async def seek_to_committed(self, *partitions: TopicPartition) -> dict[TopicPartition, int | None]:
        """Moves each partition (all assigned ones by default) to its committed offset; returns them."""
        self._need_group()
        tps = list(partitions) or sorted(self._consumer.assignment())
        committed = await self._committed(tps)
        for tp, offset in committed.items():
            if offset is not None:
                self.seek(tp, offset)
        return committed

    def pause(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.pause(list(partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        with _T:
            self._consumer.resume(list(partitions))

    def paused(self) -> set[TopicPartition]:
        return self._consumer.paused()

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's high watermark the last Fetch answer gave (None before one), no request."""
        with _T:
            high = self._consumer.watermarks(TopicPartition(*partition))[1]
        return None if high < 0 else high

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The partition's last stable offset the last Fetch answer gave (None before one), no request."""
        with _T:
            lso = self._consumer.watermarks(TopicPartition(*partition))[2]
        return None if lso < 0 else lso

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The topic's partition ids from the metadata (None when unknown)."""
        with _T:
            try:
                infos = self._consumer.partitions_for(topic, 0.5)
            except _cy.KafkaTimeoutError:
                return None
        return {p.partition for p in infos} or None

    async def topics(self) -> set[str]:
        from cykafka.admin import Admin

        def listed() -> set[str]:
            with Admin(self._admin_config) as admin:
                return set(admin.list_topics())

        with _T:
            return await asyncio.to_thread(listed)

    # -- offsets and commits -------------------------------------------------------------------------------------

    def _need_group(self) -> None:
        if self._group_id is None:
            raise IllegalOperation("Requires group_id")

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata | tuple[int, str]] | None = None
                     ) -> None:
        """Commits the given offsets ({tp: offset | (offset, metadata)}), or the positions after what was handed
        out."""
        self._need_group()
        await self._apply()
        cy = None
        if offsets is not None:
            cy = {TopicPartition(*tp): om if isinstance(om, int) else _CyOffsetAndMetadata(om[0], om[1])
                  for tp, om in offsets.items()}
        with _TC:
            await self._inner.commit(cy)

    async def _committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        with _T:
            got = await self._inner.committed(partitions)
        return {tp: None if om is None else om.offset for tp, om in got.items()}

    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of the partition, None if none."""
        self._need_group()
        await self._apply()
        return (await self._committed([TopicPartition(*partition)]))[TopicPartition(*partition)]

    async def position(self, partition: TopicPartition) -> int:
        await self._apply()
        with _T:
            return await self._inner.position(TopicPartition(*partition))

    async def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        with _T:
            return await self._inner.beginning_offsets([TopicPartition(*tp) for tp in partitions])

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        with _T:
            return await self._inner.end_offsets([TopicPartition(*tp) for tp in partitions])

    async def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        asked = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        with _T:  # AsyncConsumer has no offsets_for_times: the Consumer's, on a worker thread (no poll runs now)
            got = await asyncio.to_thread(self._consumer.offsets_for_times, asked)
        return {tp: None if i is None else OffsetAndTimestamp(i.offset, i.timestamp) for tp, i in got.items()}
