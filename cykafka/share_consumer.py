"""ShareConsumer: a member of a share group (KIP-932, "queues for Kafka"), Java's KafkaShareConsumer in Python.

Composition root: builds the transport, the metadata and the network thread (cykafka/consumer_network.py's
NetworkThread looping the request layer's NetworkLoop) around cykafka/share_network.py's ShareNetwork, which drives
core/share.py's ShareMember and ShareSessions. The caller's thread decodes what was fetched (core's PartitionFetch:
the consumer's record decoder) into `ShareRecord`s, keeps the acknowledgements of the records it handed out, and hands
them to the network thread at the next poll, commit or close; the acknowledgement commit callback runs on the caller's
thread, in poll, commit_sync, commit_async and close.

Acknowledgement modes (`share.acknowledgement.mode`, Java's): implicit (default): the records of a poll are accepted
by the next poll, commit or close; explicit: every record of a poll must be acknowledged (`acknowledge(record,
AcknowledgeType.X)`) before the next poll, which otherwise raises IllegalStateError, as Java's does.
RENEW (explicit mode) restarts a record's lock; the broker's answer puts the record back in the next poll (Java's),
or the row in the next poll_batch (acknowledge_batch).
One thread at a time: a call while another thread is inside one raises ConcurrentAccessError (Java's).
docs/share-groups.md says when to use a share group and what it guarantees.
"""

from __future__ import annotations

import base64
import contextlib
import enum
import logging
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import SimpleNamespace, TracebackType
from typing import TYPE_CHECKING, Any

from cykafka.adapters.clock import SystemClock
from cykafka.adapters.compression import decompress
from cykafka.adapters.defaults import consumer_adapters
from cykafka.arrow_schema import kafka_source_schema
from cykafka.consumer_lock import ConsumerLock, one_thread
from cykafka.consumer_network import NetworkThread, stop_network, stop_unclosed
from cykafka.consumer_waits import ConsumerWaits
from cykafka.core import ArrowBatchBuilder, PartitionFetch, network_yield
from cykafka.core.share import Acknowledgements, ShareMember, TopicIdPartition
from cykafka.errors import (
    IllegalStateError,
    InvalidArgumentError,
    KafkaError,
    KafkaTimeoutError,
    RecordDeserializationError,
)
from cykafka.ports import Clock, Ports, TopicPartition
from cykafka.protocol.apis import (
    SHARE_ACKNOWLEDGE_ACCEPT,
    SHARE_ACKNOWLEDGE_GAP,
    SHARE_ACKNOWLEDGE_REJECT,
    SHARE_ACKNOWLEDGE_RELEASE,
    SHARE_ACKNOWLEDGE_RENEW,
)
from cykafka.requests.calls import CallQueue, NetworkLoop
from cykafka.requests.coordinators import Coordinators
from cykafka.requests.routes import Router
from cykafka.serialization import Deserializers, validate_topic
from cykafka.share_config import ShareConsumerConfig
from cykafka.share_network import AckResults, Commit, Fetched, ShareNetwork, ShareState

if TYPE_CHECKING:
    import pyarrow

log = logging.getLogger("cykafka.share")
AcknowledgementCommitCallback = Callable[[dict[TopicPartition, set[int]], KafkaError | None], None]
RecordKey = tuple[str, int, int]  # topic, partition, offset
Where = tuple[int, TopicIdPartition]  # the broker that delivered a record, its partition's topic id


class AcknowledgeType(enum.IntEnum):
    """How a share consumer acknowledges a record (Java's AcknowledgeType): ACCEPT (processed: done), RELEASE (not
    processed: deliver it again, to any member), REJECT (unprocessable: never deliver it again), RENEW (still being
    processed: its acquisition lock starts again, KIP-1222; once the broker took it, a later poll hands the record
    out again, to be acknowledged for good; explicit mode, a broker with ShareAcknowledge v2: Apache Kafka 4.2+)."""

    ACCEPT = SHARE_ACKNOWLEDGE_ACCEPT
    RELEASE = SHARE_ACKNOWLEDGE_RELEASE
    REJECT = SHARE_ACKNOWLEDGE_REJECT
    RENEW = SHARE_ACKNOWLEDGE_RENEW


class ShareRecord:
    """A record delivered to a share group member: a ConsumerRecord's fields plus `delivery_count`, how many times
    the group delivered it (this delivery included: 1 the first time)."""

    __slots__ = ("delivery_count", "headers", "key", "leader_epoch", "offset", "partition", "timestamp_ms",
                 "timestamp_type", "topic", "value")

    def __init__(self, record: Any, delivery_count: int) -> None:
        self.topic: str = record.topic
        self.partition: int = record.partition
        self.offset: int = record.offset
        self.timestamp_ms: int = record.timestamp_ms
        self.timestamp_type: int = record.timestamp_type
        self.key: Any = record.key  # bytes | None, or what key.deserializer made of them
        self.value: Any = record.value
        self.headers: list[tuple[str, bytes | None]] = record.headers
        self.leader_epoch: int | None = record.leader_epoch
        self.delivery_count = delivery_count

    def __repr__(self) -> str:
        return (f"ShareRecord(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
                f"delivery_count={self.delivery_count}, key={self.key!r}, value={self.value!r})")


class _Decoding:
    """Fetched data being handed out on the caller's thread: the records of its acquired ranges, in offset order."""

    def __init__(self, fetched: Fetched, check_crcs: bool) -> None:
        self.fetched = fetched
        first = min(a[0] for a in fetched.acquired)
        self.decoder = PartitionFetch(fetched.tp.topic, fetched.tp.partition, fetched.records, first,
                                      check_crcs=check_crcs, decompress=decompress)
        self.counts = sorted(fetched.acquired)
        self.seen: set[int] = set()

    def delivery_count(self, offset: int) -> int:
        for first, last, count in self.counts:
            if first <= offset <= last:
                return count
        return 0

    def gaps(self) -> list[int]:
        """The acquired offsets with no record (control records, compacted away): acknowledged as gaps."""
        return [o for first, last, _ in self.counts for o in range(first, last + 1) if o not in self.seen]


def _row_record(row: pyarrow.RecordBatch) -> ShareRecord:
    """A renewed row of poll_batch handed out again by poll: as a ShareRecord."""
    fields = row.to_pylist()[0]
    timestamp_us = row.column("timestamp").cast("int64")[0].as_py()
    return ShareRecord(SimpleNamespace(
        topic=fields["topic"], partition=fields["partition"], offset=fields["offset"],
        timestamp_ms=timestamp_us // 1000, timestamp_type=fields["timestampType"], key=fields["key"],
        value=fields["value"], leader_epoch=None,
        headers=[(h["key"], h["value"]) for h in fields.get("headers") or []]), fields["delivery_count"])


def _record_row(record: ShareRecord, schema: pyarrow.Schema) -> pyarrow.RecordBatch:
    """A renewed ShareRecord of poll handed out again by poll_batch: as a one-row RecordBatch of its schema."""
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([{
        "key": record.key, "value": record.value, "topic": record.topic, "partition": record.partition,
        "offset": record.offset, "timestamp": record.timestamp_ms * 1000, "timestampType": record.timestamp_type,
        "headers": [{"key": k, "value": v} for k, v in record.headers], "delivery_count": record.delivery_count}],
        schema=schema)


class ShareConsumer:
    """A share group member (Java's KafkaShareConsumer): subscribe(topics), poll(timeout) -> [ShareRecord],
    acknowledge(record, type), commit_sync / commit_async, close(timeout). One thread at a time (module docstring)."""

    def __init__(self, config: Mapping[str, object] | None = None, /, *, ports: object = None,
                 **kwargs: object) -> None:
        """config: Kafka share consumer keys (group.id required; share.acknowledgement.mode implicit | explicit), as
        a dict and/or keyword arguments with underscores. ports: tests only (cykafka.ports.Ports)."""
        ports = Ports.of(ports)
        self.config = cfg = ShareConsumerConfig.parse(config, **kwargs)
        consumer_cfg = cfg.consumer
        conn = consumer_cfg.connection
        self._clock: Clock = ports.clock or SystemClock()
        self._owns_transport = ports.transport is None
        transport, metadata = consumer_adapters(ports, conn, consumer_cfg.metadata, self._clock)
        self._transport, self._metadata = transport, metadata
        coordinators = Coordinators(transport, consumer_cfg.retry_backoff_ms, dedicated_group_connections=True)
        calls = CallQueue(Router(transport, metadata, coordinators, consumer_cfg.retry_backoff_ms))
        member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        self._member = ShareMember(cfg.group_id, member_id, consumer_cfg.retry_backoff_ms, cfg.client_rack)
        self._state = ShareState()
        self._network = ShareNetwork(self._member, self._state, calls, metadata, self._clock, consumer_cfg,
                                     conn.request_timeout_ms, lambda: None)
        self.network = NetworkLoop(transport, metadata, self._clock, [calls, coordinators, self._network],
                                   conn.request_timeout_ms, coordinators)
        self._callback: AcknowledgementCommitCallback | None = None
        self._decoding: _Decoding | None = None
        self._delivered: dict[RecordKey, Where] = {}  # handed out, not acked
        # acknowledged RENEW, not answered yet: a ShareRecord (acknowledge) or a one-row RecordBatch (acknowledge_batch)
        self._renewing: dict[RecordKey, tuple[Any, Where]] = {}
        self._renewed: list[tuple[Any, Where]] = []  # renewed: the next poll or poll_batch hands them out again
        self._lock = ConsumerLock("ShareConsumer", "KafkaShareConsumer", "share consumer")  # one thread inside
        self._waits = ConsumerWaits(self._clock, self._lock, consumer_cfg.retry_backoff_ms,
                                    consumer_cfg.default_api_timeout_ms, None if ports.start_sender else
                                    self.network.run_once)
        self._acks: dict[int, dict[TopicIdPartition, Acknowledgements]] = {}  # acknowledged, not handed over
        self._deserializers = Deserializers.of(cfg.consumer.key_deserializer, cfg.consumer.value_deserializer)
        self._held: list[tuple[ShareRecord, tuple[int, TopicIdPartition]]] = []  # after a record that failed
        self._thread: NetworkThread | None = None
        if ports.start_sender:
            self._thread = NetworkThread(self.network, name=f"cykafka-share-consumer-{conn.client_id or member_id}")
            self._thread.start()
        # the thread holds no reference to this ShareConsumer: dropped unclosed, it is finalized and its thread stopped
        # (the broker releases its records when the connection closes)
        self._finalizer = weakref.finalize(self, stop_unclosed, conn.client_id or member_id, self._thread,
                                           self.network, transport if self._owns_transport else None)

    # -- subscription -------------------------------------------------------------------------------------------

    @one_thread
    def subscribe(self, topics: Iterable[str]) -> None:
        """Joins the share group reading these topics (replacing the subscription; empty: unsubscribe)."""
        if isinstance(topics, str):
            raise InvalidArgumentError("subscribe takes a list of topic names, not one string")
        names = list(topics)
        for topic in names:
            validate_topic(topic)
        with self._state.lock:
            self._member.subscribe(names)
        self._transport.wakeup()

    @one_thread
    def unsubscribe(self) -> None:
        self.subscribe([])

    @one_thread
    def subscription(self) -> set[str]:
        return set(self._member.topics)

    @property
    def member_id(self) -> str:
        return self._member.member_id

    @one_thread
    def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        """callback(offsets: {TopicPartition: {offset, ...}}, error: KafkaError | None), called on this thread (in
        poll, commit_sync, commit_async and close) once per partition's acknowledgements answered: error None when
        the broker took them, else why not (InvalidRecordStateError: the record's lock had expired)."""
        if callback is not None and not callable(callback):
            raise InvalidArgumentError(f"the acknowledgement commit callback must be callable or None, got "
                                       f"{type(callback).__name__}")
        self._callback = callback

    # -- records and acknowledgements -----------------------------------------------------------------------------

    @one_thread
    def poll(self, timeout: float) -> list[ShareRecord]:
        """The next records acquired for this member, at most max.poll.records; waits up to timeout seconds for some.
        Implicit mode: the records of the previous poll are accepted first. Explicit mode: raises IllegalStateError
        when a record of the previous poll was not acknowledged."""
        out: list[ShareRecord] = []

        def take(limit: int) -> int:
            got = self._take_held(limit) if self._held else self._take(limit)
            out.extend(got)
            return len(got)

        self._poll(timeout, take, self.config.consumer.max_poll_records)
        return out if self._deserializers is None else self._deserialized(out)

    def _deserialized(self, records: list[ShareRecord]) -> list[ShareRecord]:
        """records through key.deserializer / value.deserializer. When one fails it is released to the group (Java's
        ShareConsumer: it is delivered again, to this member or another, until group.share.delivery.count.limit)
        and the records after it are held for the next poll; the records before it are returned, or
        RecordDeserializationError is raised when it was the first."""
        assert self._deserializers is not None
        for index, record in enumerate(records):
            try:
                record.key, record.value = self._deserializers.key_value(record)
            except RecordDeserializationError as error:
                node_id, tip = self._delivered.pop((record.topic, record.partition, record.offset))
                self._acks.setdefault(node_id, {}).setdefault(tip, Acknowledgements()).add(
                    record.offset, SHARE_ACKNOWLEDGE_RELEASE)
                self._held = [(held, self._delivered.pop((held.topic, held.partition, held.offset)))
                              for held in records[index + 1:]] + self._held
                if index:
                    return records[:index]
                raise error
        return records

    def _take_held(self, limit: int) -> list[ShareRecord]:
        """Records held back by a deserializer's failure, handed out again first (still acquired by this member)."""
        taken, self._held = self._held[:limit], self._held[limit:]
        for record, where in taken:
            self._delivered[(record.topic, record.partition, record.offset)] = where
        return [record for record, _ in taken]

    def _poll(self, timeout: float, take: Callable[[int], int], limit: int) -> None:
        """poll's loop: acknowledgements settled and handed over, then take(limit) -> records handed out until some
        came or timeout seconds passed."""
        if not self._member.topics:
            raise IllegalStateError("poll: the share consumer is not subscribed to any topic; subscribe() first")
        network_yield()  # a network thread waiting for the GIL gets it now (core/netio.pyx)
        self._settle_delivered()
        self._hand_over(None)
        deadline_ms = self._waits.deadline(timeout, "timeout", none_is_default=False)
        state = self._state
        while True:
            self._run_callbacks()
            self._raise_error()
            if take(limit):
                with state.lock:  # all handed out: one fetch ahead of the next poll (at most one per poll)
                    if not state.buffer:
                        state.fetch_wanted = state.fetch_ahead = True
                self._transport.wakeup()
                return
            remaining_ms = deadline_ms - self._clock.monotonic_ms()
            with state.lock:  # nothing in hand: the fetch may wait at the broker (this poll's acks are on board)
                state.fetch_wanted, state.fetch_ahead = True, False
            self._transport.wakeup()
            if remaining_ms <= 0:
                return
            with state.lock:
                if not state.buffer and not state.results and state.error is None and self._member.error is None:
                    state.lock.wait(remaining_ms / 1000)

    @one_thread
    def acknowledge(self, record: ShareRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Acknowledges a record of the last poll (explicit mode only): ACCEPT, RELEASE, REJECT or RENEW. It goes to the
        broker with the next poll, commit_sync or commit_async."""
        kind = self._kind("acknowledge", type)  # first: explicit mode, as Java's
        self._acknowledge(record.topic, record.partition, record.offset, kind, record)

    def _kind(self, call: str, type: object) -> AcknowledgeType:
        """The acknowledgement type of a call (explicit mode only)."""
        if not self.config.explicit:
            raise IllegalStateError(f"{call}: implicit acknowledgement of delivery is being used (set "
                                    "share.acknowledgement.mode=explicit to acknowledge records one by one)")
        try:
            return AcknowledgeType(type)  # type: ignore[arg-type]
        except ValueError:
            raise InvalidArgumentError(f"{call}: type must be an AcknowledgeType (ACCEPT, RELEASE, REJECT, RENEW), "
                                       f"got {type!r}") from None

    def _acknowledge(self, topic: str, partition: int, offset: int, kind: AcknowledgeType, again: Any) -> None:
        """One record of the last poll acknowledged; again: what the next poll hands out once a RENEW was answered
        (the ShareRecord, or its one-row RecordBatch)."""
        key = (topic, partition, offset)
        where = self._delivered.pop(key, None)
        if where is None:
            raise IllegalStateError(f"acknowledge: {topic} [{partition}] offset {offset} is not a record of the last "
                                    f"poll still unacknowledged")
        node_id, tip = where
        self._acks.setdefault(node_id, {}).setdefault(tip, Acknowledgements()).add(offset, int(kind))
        if kind == AcknowledgeType.RENEW:
            self._renewing[key] = (again, where)

    def _take_renewed(self, limit: int) -> list[Any]:
        """Up to limit renewed records, handed out again first (this member's still), each as it was acknowledged:
        a ShareRecord or a one-row RecordBatch."""
        taken, self._renewed = self._renewed[:limit], self._renewed[limit:]
        for item, where in taken:
            record = item if isinstance(item, ShareRecord) else item.to_pylist()[0]
            key = (record.topic, record.partition, record.offset) if isinstance(record, ShareRecord) else (
                record["topic"], record["partition"], record["offset"])
            self._delivered[key] = where
        return [item for item, _ in taken]

    @one_thread
    def commit_sync(self, timeout: float | None = None) -> AckResults:
        """Sends the acknowledgements made so far (implicit mode: the last poll's records, accepted) and waits for
        the broker's answer: {TopicPartition: None, or the error of its acknowledgements}. KafkaTimeoutError after
        timeout seconds (default.api.timeout.ms)."""
        if not self.config.explicit:  # explicit mode: what was acknowledged so far (the rest stays held, as Java's)
            self._settle_delivered()
        commit = self._hand_over(Commit(set(self._acks)))
        deadline_ms = self._waits.deadline(timeout, "timeout")
        if commit is not None and not commit.done.wait(max(0, deadline_ms - self._clock.monotonic_ms()) / 1000):
            raise KafkaTimeoutError(f"commit_sync: the acknowledgements were not answered within "
                                    f"{'default.api.timeout.ms' if timeout is None else f'{timeout} s'}")
        self._run_callbacks()
        return dict(commit.results) if commit is not None else {}

    @one_thread
    def commit_async(self) -> None:
        """Sends the acknowledgements made so far without waiting; their results go to the callback."""
        if not self.config.explicit:
            self._settle_delivered()
        self._hand_over(Commit(set(self._acks)))
        self._run_callbacks()

    def _settle_delivered(self) -> None:
        if not self._delivered:
            return
        if self.config.explicit:
            raise IllegalStateError("All records must be acknowledged in explicit acknowledgement mode: "
                                    f"{len(self._delivered)} record(s) of the last poll are not acknowledged")
        for (_topic, _partition, offset), (node_id, tip) in self._delivered.items():
            self._acks.setdefault(node_id, {}).setdefault(tip, Acknowledgements()).add(offset,
                                                                                      SHARE_ACKNOWLEDGE_ACCEPT)
        self._delivered.clear()

    def _hand_over(self, commit: Commit | None) -> Commit | None:
        """The acknowledgements made so far to the network thread; commit: one that waits for their answers."""
        if not self._acks:
            return None
        acks, self._acks = self._acks, {}
        with self._state.lock:
            self._state.hand_over(acks, commit)
        self._transport.wakeup()
        return commit

    def _take(self, limit: int) -> list[ShareRecord]:
        """Up to limit records of the fetched data, decoded here (ShareRecords)."""
        out = [item if isinstance(item, ShareRecord) else _row_record(item) for item in self._take_renewed(limit)]

        def take(decoding: _Decoding, room: int) -> int:
            fetched, taken = decoding.fetched, 0
            for record in decoding.decoder.records(room):
                count = decoding.delivery_count(record.offset)
                if count == 0:
                    continue  # in a batch the broker sent whole: not acquired by this member
                decoding.seen.add(record.offset)
                out.append(ShareRecord(record, count))
                self._delivered[(record.topic, record.partition, record.offset)] = (fetched.node_id, fetched.tip)
                taken += 1
            return taken

        self._drain(limit - len(out), take)
        return out

    def _drain(self, limit: int, take: Callable[[_Decoding, int], int]) -> int:
        """Hands out up to limit records of the fetched data through take(decoding, room) -> records handed out; a
        partition's data leaves the shared buffer once all of it was handed out (until then the network thread
        fetches nothing more from its broker), its acquired offsets without a record acknowledged as gaps."""
        state = self._state
        handed = 0
        while handed < limit:
            with state.lock:
                if not state.buffer:
                    break
                fetched = state.buffer[0]
            decoding = self._decoding
            if decoding is None or decoding.fetched is not fetched:
                decoding = self._decoding = _Decoding(fetched, self.config.consumer.check_crcs)
            left = decoding.counts[-1][1] - decoding.decoder.next_offset + 1  # acquired offsets not handed out
            if not fetched.low and left - (limit - handed) < self.config.consumer.max_poll_records:
                with state.lock:  # what this take leaves would not fill the next poll: the next fetch goes now,
                    fetched.low = True  # its answer on the way while this one is decoded (ShareNetwork._fetch)
                    state.fetch_wanted = state.fetch_ahead = True
                self._transport.wakeup()
            handed += take(decoding, limit - handed)
            if decoding.decoder.done or decoding.decoder.next_offset > decoding.counts[-1][1]:
                self._decoding = None
                gaps = decoding.gaps()
                if gaps:
                    acks = self._acks.setdefault(fetched.node_id, {}).setdefault(fetched.tip, Acknowledgements())
                    for offset in gaps:
                        acks.add(offset, SHARE_ACKNOWLEDGE_GAP)
                with state.lock:
                    state.buffer.remove(fetched)
                self._transport.wakeup()  # its broker may be fetched from again
        return handed

    @one_thread
    def poll_batch(self, timeout: float, max_records: int | None = None) -> pyarrow.RecordBatch:
        """As poll, as one pyarrow.RecordBatch: the Consumer's columns (Spark's Kafka source schema, built in C) and
        delivery_count (int16); empty (with the schema) when no record came in time. Acknowledge its rows with
        acknowledge_batch (explicit mode). Keys and values are the bytes as fetched: ConfigError with
        key.deserializer or value.deserializer set (docs/serialization.md)."""
        import pyarrow as pa

        self.config.consumer.refuse_deserializers("poll_batch")
        limit = self.config.consumer.poll_limit(max_records, "poll_batch")
        schema = kafka_source_schema().append(pa.field("delivery_count", pa.int16()))
        segments: list[Any] = []

        def take_all(room: int) -> int:  # renewed rows first (this member's still), then the fetched data
            renewed = [_record_row(item, schema) if isinstance(item, ShareRecord) else item
                       for item in self._take_renewed(room)]
            segments.extend(renewed)
            return len(renewed) + self._drain(room - len(renewed), take)

        def take(decoding: _Decoding, room: int) -> int:
            builder = ArrowBatchBuilder(kafka_source_schema())
            decoding.decoder.arrow_into(builder, room)
            segment = builder.finish()
            offsets = segment.column("offset").to_pylist()
            counts = [decoding.delivery_count(o) for o in offsets]
            if 0 in counts:  # rows of a batch the broker sent whole, not acquired by this member
                keep = [c > 0 for c in counts]
                segment = segment.filter(pa.array(keep))
                offsets = [o for o, k in zip(offsets, keep, strict=True) if k]
                counts = [c for c in counts if c > 0]
            fetched = decoding.fetched
            for offset in offsets:
                decoding.seen.add(offset)
                self._delivered[(fetched.tp.topic, fetched.tp.partition, offset)] = (fetched.node_id, fetched.tip)
            segments.append(segment.append_column(pa.field("delivery_count", pa.int16()),
                                                  pa.array(counts, pa.int16())))
            return len(offsets)

        self._poll(timeout, take_all, limit)
        if not segments:
            return pa.RecordBatch.from_pylist([], schema=schema)
        return pa.Table.from_batches(segments, schema).combine_chunks().to_batches()[0]

    @one_thread
    def acknowledge_batch(self, batch: pyarrow.RecordBatch, type: AcknowledgeType = AcknowledgeType.ACCEPT,
                          rows: range | None = None) -> None:
        """Acknowledges the rows of a poll_batch batch (all of them, or those of rows: a range of row indexes) as
        one type (explicit mode). RENEW, as acknowledge's: once the broker took it, the next poll_batch hands those
        rows out again (a broker without ShareAcknowledge v2 fails it with UnsupportedVersionError)."""
        kind = self._kind("acknowledge_batch", type)
        picked = batch if rows is None else batch.slice(rows.start, len(rows)) if rows.step == 1 else None
        if picked is None:
            raise InvalidArgumentError("acknowledge_batch: rows must be a range with step 1")
        renew = kind == AcknowledgeType.RENEW
        for row, (topic, partition, offset) in enumerate(zip(
                picked.column("topic").to_pylist(), picked.column("partition").to_pylist(),
                picked.column("offset").to_pylist(), strict=True)):
            self._acknowledge(topic, partition, offset, kind, picked.slice(row, 1) if renew else None)

    def _run_callbacks(self) -> None:
        with self._state.lock:
            results, self._state.results = self._state.results, []
        callback = self._callback
        for offsets, error in results:
            if self._renewing:  # a renewed record goes out again (Java's); one whose renewal failed is the group's
                for tp, tp_offsets in offsets.items():
                    for offset in tp_offsets:
                        renewed = self._renewing.pop((tp.topic, tp.partition, offset), None)
                        if renewed is not None and error is None:
                            self._renewed.append(renewed)
            if callback is not None:
                callback(offsets, error)
            elif error is not None:
                log.warning("share group %s: acknowledgements of %s failed: %s", self.config.group_id,
                            {f"{tp.topic}[{tp.partition}]": sorted(o) for tp, o in offsets.items()}, error)

    def _raise_error(self) -> None:
        error = self._member.error or self._state.error
        if error is not None:
            raise error

    @contextlib.contextmanager
    def calling(self, call: str) -> Iterator[None]:
        """Holds the share consumer for this thread while the block runs, as every public call does (Java's
        KafkaShareConsumer acquireAndEnsureOpen, with a depth: the acknowledgement commit callback's calls are this
        thread's too): IllegalStateError when it is closed (or was made in another process, before a fork()),
        ConcurrentAccessError naming `call` when another thread is inside a call."""
        with self._lock.calling(call):
            yield

    # -- closing --------------------------------------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        """Leaves the group and ends its share sessions within timeout seconds: implicit mode accepts the last
        poll's records, acknowledgements made go with the sessions' last requests, and the broker releases the
        records this member still held (fetched but not handed out, or not acknowledged). Returns by its deadline."""
        if self._lock.closed:
            return
        deadline_ms = self._waits.deadline(timeout, "timeout")
        with self.calling("close"):
            self._close(deadline_ms)

    def _close(self, deadline_ms: int) -> None:
        self._lock.closed = True
        state = self._state
        try:
            if not self.config.explicit:
                self._settle_delivered()
            self._delivered.clear()
            acks, self._acks = self._acks, {}
            with state.lock:
                state.hand_over(acks, None)
                state.closing = True
                self._member.leave()
            self._transport.wakeup()
            if self._thread is not None:
                with state.lock:
                    while not state.closed:
                        remaining_ms = deadline_ms - self._clock.monotonic_ms()
                        if remaining_ms <= 0:
                            break
                        state.lock.wait(min(remaining_ms, 100) / 1000)
            self._run_callbacks()
        finally:
            self._finalizer.detach()
            stop_network(self.network, self._thread, self._transport if self._owns_transport else None,
                         (deadline_ms - self._clock.monotonic_ms()) / 1000)

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

