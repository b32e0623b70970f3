"""Reads: the driver resolves each partition's [start, end) (offsets, timestamps, Spark's offsets JSON, the
checkpoint's ends for streaming), the executors read the ranges as Arrow batches through cached Consumers'
poll_batch, in Spark's Kafka source schema (cykafka/arrow_schema.py spells it once; Spark's StructType comes from
it here). The options' pure half (parsing, ranges, trigger limits): source_options.py.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as ds
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from cykafka.arrow_schema import kafka_source_schema
from cykafka.config import ADMIN_KEYS
from cykafka.consumer import Consumer
from cykafka.errors import (
    ConfigError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
)
from cykafka.ports import TopicPartition
from cykafka.spark.clients import CONSUMERS, ConfigKey
from cykafka.spark.plan import DEFAULT_IDLE_TIMEOUT_MS
from cykafka.spark.source_options import (
    EARLIEST,
    LATEST,
    Bound,
    OffsetRange,
    SourceOptions,
    offset_ranges,
    offsets_json,
    trigger_end,
)

log = logging.getLogger("cykafka.spark")


# -- reads: offsets resolved on the driver, ranges read on the executors ------------------------------------------

READ_BATCH_RECORDS = 65_536  # rows per Arrow batch a read task yields


def source_schema(include_headers: bool) -> StructType:
    """Spark's Kafka source columns (every field nullable, as Spark declares them): the Arrow schema read tasks
    yield (cykafka/arrow_schema.py, its one spelling) as Spark's StructType."""
    return from_arrow_schema(kafka_source_schema(include_headers), prefer_timestamp_ntz=False)


def _task_config(options: SourceOptions) -> ConfigKey:
    """A read task's consumer: the user's kafka.* keys, by assignment, nothing committed, and no position reset:
    an offset out of range is reported (failOnDataLoss decides)."""
    return tuple(sorted({**options.consumer_config_dict, "enable.auto.commit": "false",
                         "auto.offset.reset": "none"}.items()))


@dataclass(frozen=True, slots=True)
class RangePartition(ds.InputPartition):
    """One read task: a Kafka partition's offsets [start, end)."""

    range: OffsetRange


class _Offsets:
    """The driver's offset lookups for a read (one consumer, closed by close(); a test hands in its own)."""

    def __init__(self, options: SourceOptions, consumer: Consumer | None = None) -> None:
        self.options = options
        self.consumer = consumer if consumer is not None else Consumer(dict(_task_config(options)))

    def partitions(self) -> list[TopicPartition]:
        strategy = self.options.consumer_strategy
        if strategy.kind == "assign":
            return list(strategy.partitions)
        if strategy.kind == "subscribe":
            topics: Iterable[str] = strategy.topics
        else:
            from cykafka.admin import Admin  # only for subscribePattern: the planner's import stays the consumer's

            connection = {k: v for k, v in self.options.consumer_config if k in ADMIN_KEYS}
            with Admin(connection) as admin:
                topics = list(admin.list_topics())
        counts = {t: len(self.consumer.partitions_for(t)) for t in topics}
        return strategy.select({t: n for t, n in counts.items() if n})

    def resolve(self, bound: Bound, partitions: list[TopicPartition], *, ending: bool) -> dict[TopicPartition, int]:
        """Offsets of a bound for these partitions; -2/-1 in offsets JSON and timestamps with no offset resolved.
        Earliest and latest offsets are looked up only for the partitions that need them (latest costs a Fetch)."""
        if bound.kind == "earliest":
            return dict(self.consumer.beginning_offsets(partitions))
        if bound.kind == "latest":
            return dict(self.consumer.end_offsets(partitions))
        if bound.kind == "offsets":
            missing = [tp for tp in partitions if tp not in bound.offsets]
            if missing:
                raise ConfigError(f"the offsets JSON names no offset for {_names(missing)}; give every partition "
                                  f"read (-2 earliest, -1 latest)")
            resolved = {tp: bound.offsets[tp] for tp in partitions}
            for marker, lookup in ((EARLIEST, self.consumer.beginning_offsets), (LATEST, self.consumer.end_offsets)):
                marked = [tp for tp, offset in resolved.items() if offset == marker]
                if marked:
                    resolved.update(lookup(marked))
            return resolved
        wanted = {tp: bound.timestamp_ms if bound.kind == "timestamp" else bound.offsets.get(tp) for tp in partitions}
        if any(ts is None for ts in wanted.values()):
            raise ConfigError(f"the timestamps JSON names no timestamp for "
                              f"{_names([tp for tp, ts in wanted.items() if ts is None])}")
        found = self.consumer.offsets_for_times({tp: int(ts) for tp, ts in wanted.items() if ts is not None})
        result = {tp: hit.offset for tp in partitions if (hit := found.get(tp)) is not None}
        unmatched = [tp for tp in partitions if tp not in result]
        if unmatched and not ending and self.options.timestamp_strategy == "error":
            tp = unmatched[0]
            raise KafkaError(f"no offset of {tp.topic}-{tp.partition} has a timestamp >= {wanted[tp]}; set "
                             f"startingOffsetsByTimestampStrategy=latest to start at the end instead")
        if unmatched:  # no record that late: the partition's end
            result.update(self.consumer.end_offsets(unmatched))
        return result

    def checked(self, start: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Starts below a partition's earliest offset (records deleted): failOnDataLoss raises, else they move up."""
        earliest = self.consumer.beginning_offsets(list(start))
        lost = {tp: (offset, earliest[tp]) for tp, offset in start.items() if offset < earliest[tp]}
        if lost and self.options.fail_on_data_loss:
            raise KafkaError(f"records were deleted before they were read ({_lost(lost)}); set the option "
                             f"failOnDataLoss=false to read what is left")
        if lost:
            log.warning("cykafka source: records deleted before they were read (%s)", _lost(lost))
        return {tp: max(offset, earliest[tp]) for tp, offset in start.items()}

    def batch_ranges(self) -> list[RangePartition]:
        """A batch read's plan: each partition's [start, end) from the starting and ending options."""
        assert self.options.ending is not None
        partitions = self.partitions()
        start = self.checked(self.resolve(self.options.starting, partitions, ending=False))
        return _ranges(self.options, start, self.resolve(self.options.ending, partitions, ending=True))

    def close(self) -> None:
        self.consumer.close(10)


def _names(partitions: Iterable[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions))


def _lost(lost: Mapping[TopicPartition, tuple[int, int]]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}: wanted {a}, earliest {b}" for tp, (a, b) in sorted(lost.items()))


def _ranges(options: SourceOptions, start: Mapping[TopicPartition, int],
            end: Mapping[TopicPartition, int]) -> list[RangePartition]:
    return [RangePartition(r) for r in offset_ranges(start, end, min_partitions=options.min_partitions,
                                                     max_records_per_partition=options.max_records_per_partition)]


def read_range(options: SourceOptions, r: OffsetRange) -> Iterator[pa.RecordBatch]:
    """A read task: the records of [start, end) of one partition as Arrow batches, from this worker's cached
    consumer. Offsets with no record (transaction markers, aborted or compacted records) are skipped; records
    deleted before the task reads them raise unless failOnDataLoss=false."""
    import pyarrow.compute as pc  # a read task's, not the planner's (~70 ms to import)

    config = _task_config(options)
    consumer = CONSUMERS.acquire(config, DEFAULT_IDLE_TIMEOUT_MS)
    schema = kafka_source_schema(options.include_headers)
    tp = TopicPartition(r.topic, r.partition)
    try:
        consumer.assign([tp])
        consumer.seek(tp, r.start)
        position = r.start
        stalled_since = time.monotonic()
        while position < r.end:
            try:
                batch = consumer.poll_batch(1.0, max_records=min(READ_BATCH_RECORDS, r.end - position))
            except NoOffsetForPartitionError as e:  # auto.offset.reset=none: the offset is out of range
                if options.fail_on_data_loss:
                    raise KafkaError(f"records of {tp.topic}-{tp.partition} from offset {position} were deleted "
                                     f"before this task read them ({e}); set failOnDataLoss=false to skip them") from e
                log.warning("cykafka source: %s-%d: records from %d deleted before they were read; skipping",
                            tp.topic, tp.partition, position)
                consumer.seek_to_beginning([tp])
                continue
            if batch.num_rows:
                offsets = batch.column("offset")
                keep = int(pc.sum(pc.less(offsets, r.end)).as_py() or 0)
                if keep < batch.num_rows:
                    batch = batch.slice(0, keep)
                if keep:
                    yield pa.RecordBatch.from_arrays(
                        [batch.column(name) for name in schema.names], schema=schema)
                    position = int(offsets[keep - 1].as_py()) + 1
                    stalled_since = time.monotonic()
            position = max(position, min(consumer.position(tp), r.end))  # markers and gaps count as read
            if position < r.end and time.monotonic() - stalled_since > options.poll_timeout_ms / 1000:
                raise _stalled(consumer, options, tp, position, r.end)
    finally:
        try:
            consumer.unassign()
        finally:
            CONSUMERS.release(config, consumer)


def _stalled(consumer: Consumer, options: SourceOptions, tp: TopicPartition, position: int,
             end: int) -> KafkaTimeoutError:
    """A task's range that got no further in kafkaConsumer.pollTimeoutMs. With read_committed, a range that ends
    past the last stable offset waits for an open transaction (the driver's ends never pass it; offsets JSON
    can): the error says so."""
    waited = f"in kafkaConsumer.pollTimeoutMs={options.poll_timeout_ms}"
    if consumer.config.read_committed:
        stable = consumer.end_offsets([tp]).get(tp, end)
        if stable <= position:
            return KafkaTimeoutError(
                f"{tp.topic}-{tp.partition}: offsets {position} to {end} are past the last stable offset {stable}: a "
                f"transaction there is still open {waited} (kafka.isolation.level=read_committed reads only what is "
                f"decided; end the range at the last stable offset, or raise kafkaConsumer.pollTimeoutMs)")
    return KafkaTimeoutError(f"no record of {tp.topic}-{tp.partition} between offsets {position} and {end} arrived "
                             f"{waited}")


class CykafkaReader(ds.DataSourceReader):
    """Batch reads: the driver resolves each partition's [start, end) once; one task per range."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[RangePartition]:
        offsets = _Offsets(self.options)
        try:
            return offsets.batch_ranges()
        finally:
            offsets.close()

    def read(self, partition: ds.InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):  # no ranges (nothing to read): pyspark runs one task anyway,
            return iter(())                            # with a bare InputPartition(None)
        return read_range(self.options, partition.range)


def _as_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets as the checkpoint keeps them: Spark's offsets JSON as a dict."""
    result: dict[str, dict[str, int]] = json.loads(offsets_json(offsets))
    return result


def _from_json(offsets: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {TopicPartition(topic, int(p)): int(o) for topic, parts in offsets.items() for p, o in parts.items()}


try:
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - pyspark < 4.2: availableNow runs one micro-batch of everything
    SupportsTriggerAvailableNow = object  # type: ignore[assignment,misc]


class CykafkaStreamReader(ds.DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reads: offsets live in Spark's checkpoint (Spark's JSON), so a restarted query resumes where it
    stopped; partitions that appear later are read from their earliest offset; maxOffsetsPerTrigger shares each
    micro-batch between partitions as Spark does; with cykafka.commit.group each committed micro-batch's end
    offsets are committed to that consumer group (lag tools see the query). trigger(availableNow=True) reads up to
    the end offsets of the query's start in micro-batches under the same limits, then the query stops."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._offsets: _Offsets | None = None
        self._target: dict[TopicPartition, int] | None = None  # availableNow: the ends at the query's start
        self._last_end: dict[TopicPartition, int] | None = None  # pyspark < 4.2 calls latestOffset() without start
        self._now_s: Callable[[], float] = time.monotonic  # for maxTriggerDelay (a test swaps it)
        self._last_batch_s = self._now_s()

    def _lookups(self) -> _Offsets:
        if self._offsets is None:
            self._offsets = _Offsets(self.options)
        return self._offsets

    def initialOffset(self) -> dict[str, dict[str, int]]:
        lookups = self._lookups()
        start = lookups.resolve(self.options.starting, lookups.partitions(), ending=False)
        self._last_end = start
        return _as_json(start)

    def getDefaultReadLimit(self) -> Any:
        """maxOffsetsPerTrigger as ReadMaxRows, else minOffsetsPerTrigger as ReadMinRows (pyspark has no composite
        limit: with both, the minimum comes from the options)."""
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """trigger(availableNow=True): the query's target is every partition's end offset now (the last stable
        offset with read_committed); micro-batches stop there, records and partitions that come later wait for
        the next run."""
        lookups = self._lookups()
        self._target = dict(lookups.consumer.end_offsets(lookups.partitions()))

    def latestOffset(self, start: dict[str, dict[str, int]] | None = None,
                     limit: Any = None) -> dict[str, dict[str, int]]:
        """The next micro-batch's end. `limit` is the engine's (pyspark >= 4.2; before, no argument: the options
        apply): ReadAllAvailable means no limit, whatever the options say. Under availableNow the ends never pass
        the target and minOffsetsPerTrigger never holds a micro-batch back (the query must reach its target)."""
        lookups = self._lookups()
        begin = _from_json(start) if start is not None else dict(self._last_end or {})
        partitions = list(self._target) if self._target is not None else lookups.partitions()
        new = [tp for tp in partitions if tp not in begin]
        if new:  # a partition that appeared since: from its earliest offset, as Spark
            begin.update(lookups.consumer.beginning_offsets(new))
        latest = dict(self._target) if self._target is not None else dict(lookups.consumer.end_offsets(partitions))
        everything = type(limit).__name__ == "ReadAllAvailable"
        max_rows = None if everything else getattr(limit, "max_rows", self.options.max_offsets_per_trigger)
        min_rows = None if everything or self._target is not None else getattr(
            limit, "min_rows", self.options.min_offsets_per_trigger)
        now_s = self._now_s()
        end = trigger_end(begin, latest, max_offsets=max_rows, min_offsets=min_rows,
                          waited_ms=int((now_s - self._last_batch_s) * 1000),
                          max_delay_ms=self.options.max_trigger_delay_ms)
        if end is None:  # not enough new offsets yet: no new micro-batch
            end = {tp: begin[tp] for tp in latest}
        elif end != {tp: begin[tp] for tp in latest}:
            self._last_batch_s = now_s
        self._last_end = end
        return _as_json(end)

    def partitions(self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]) -> Sequence[RangePartition]:
        begin, until = _from_json(start), _from_json(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            begin.update(self._lookups().consumer.beginning_offsets(new))
        gone = [tp for tp in begin if tp not in until]
        if gone and self.options.fail_on_data_loss:
            raise KafkaError(f"partitions {_names(gone)} are gone (topic deleted?); set failOnDataLoss=false to go on")
        return _ranges(self.options, self._lookups().checked({tp: begin[tp] for tp in until}), until)

    def read(self, partition: ds.InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        return read_range(self.options, partition.range)

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        group = self.options.commit_group
        if group is None:
            return
        config = {**dict(_task_config(self.options)), "group.id": group}
        with Consumer(config) as committer:
            committer.commit({tp: offset for tp, offset in _from_json(end).items()})

    def stop(self) -> None:
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None


