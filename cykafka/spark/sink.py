"""The sink's tasks (executors): a task's rows, as Arrow columns (or Rows on pyspark 4.0 streaming), go to a cached
Producer's send_batch; write() flushes and raises the first delivery error before it returns its commit message
(Spark's workers leave through os._exit: nothing may wait for atexit). The writer classes Spark pickles to executors
hold only the plan; their commit()/abort() run on the driver (exactly_once.py completes the transactions).
"""

from __future__ import annotations

import calendar
import datetime
import itertools
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Row
from pyspark.sql import datasource as ds

from cykafka.core import BatchResult
from cykafka.errors import (
    BatchDeliveryError,
    KafkaTimeoutError,
)
from cykafka.producer import Producer
from cykafka.spark.clients import PRODUCERS
from cykafka.spark.exactly_once import (
    TaskIdentity,
    _abort_outcome,
    _task_identity,
    _TaskTransaction,
    complete_transactions,
)
from cykafka.spark.plan import CykafkaCommitMessage, DeliveryError, PreparedTransaction, SinkPlan, SinkSchemaError

log = logging.getLogger("cykafka.spark")


HAS_STREAM_ARROW_WRITER = hasattr(ds, "DataSourceStreamArrowWriter")  # pyspark >= 4.1

# -- executors: Arrow columns (or rows) -> Producer.send_batch --------------------------------------------------


def _bytes_column(column: Any) -> Any:
    """A binary or string column as send_batch reads it in place (view types, which it does not, are cast)."""
    if pa.types.is_string_view(column.type) or pa.types.is_binary_view(column.type):
        return column.cast(pa.binary())
    return column


_UNIT_PER_MS = {"ms": 1, "us": 1000, "ns": 1_000_000}


def _timestamp_ms_list(column: Any) -> list[int | None]:
    data_type = column.type
    if pa.types.is_timestamp(data_type):
        ints = column.cast(pa.int64())
        if data_type.unit == "s":
            ints = pc.multiply(ints, 1000)
        elif _UNIT_PER_MS[data_type.unit] != 1:
            ints = pc.divide(ints, _UNIT_PER_MS[data_type.unit])
        column = ints
    result: list[int | None] = column.to_pylist()
    return result


def _headers_column(column: Any) -> Any:
    """The headers column as send_batch reads it in place (a list<struct<key, value>> array, no Python object per
    header; view-typed fields, which it does not read, are cast to string / binary)."""
    entry_type = column.type.value_type
    fields = [entry_type.field(i) for i in range(entry_type.num_fields)]
    if any(pa.types.is_string_view(f.type) or pa.types.is_binary_view(f.type) for f in fields):
        struct = pa.struct([pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else
                                     pa.binary() if pa.types.is_binary_view(f.type) else f.type) for f in fields])
        return column.cast(pa.list_(struct))
    return column


@dataclass(slots=True)
class _Columns:
    """One batch as send_batch takes it: value, key and headers are Arrow arrays (the Arrow path, read in place) or
    lists (the row path); the others lists, None entries meaning the default; None: the column is absent."""

    rows: int
    value: Any
    key: Any = None
    topic: list[Any] | None = None
    partition: list[Any] | None = None
    timestamp_ms: list[Any] | None = None
    headers: Any = None


def _arrow_columns(batch: Any, plan: SinkPlan) -> _Columns:
    names = batch.schema.names
    present = plan.columns

    def column(name: str) -> Any:
        return batch.column(names.index(name))

    topics = None
    if plan.topic is None:
        topic_column = column("topic")
        if topic_column.null_count:
            raise SinkSchemaError("cykafka sink: null topic in the data; set .option('topic', ...) or fill the "
                                  "topic column")
        topics = topic_column.to_pylist()
    return _Columns(
        rows=batch.num_rows,
        value=_bytes_column(column("value")),
        key=_bytes_column(column("key")) if "key" in present else None,
        topic=topics,
        partition=column("partition").to_pylist() if "partition" in present else None,
        timestamp_ms=_timestamp_ms_list(column("timestamp")) if "timestamp" in present else None,
        headers=_headers_column(column("headers")) if "headers" in present else None,
    )


def _row_columns(rows: Sequence[Row], plan: SinkPlan) -> _Columns:
    """The row path (pyspark 4.0 streaming, which has no Arrow stream writer): the same columns from Row objects."""
    present = plan.columns

    def values(name: str) -> list[Any] | None:
        return [row[name] for row in rows] if name in present else None

    topics = values("topic") if plan.topic is None else None
    if topics is not None and any(t is None for t in topics):
        raise SinkSchemaError("cykafka sink: null topic in the data; set .option('topic', ...) or fill the topic "
                              "column")
    timestamps = values("timestamp")
    if timestamps is not None:
        timestamps = [_datetime_ms(t, plan.timestamp_ntz) for t in timestamps]
    headers = values("headers")
    if headers is not None:
        headers = [[(h[0], h[1]) for h in hs] if hs else None for hs in headers]
    return _Columns(len(rows), values("value") or [], values("key"), topics, values("partition"), timestamps, headers)


def _datetime_ms(value: datetime.datetime | int | None, ntz: bool) -> int | None:
    if value is None or isinstance(value, int):
        return value
    if ntz:  # wall-clock time read as UTC, as the Arrow path reads timestamp_ntz
        return calendar.timegm(value.timetuple()) * 1000 + value.microsecond // 1000
    return int(value.timestamp() * 1000)  # TimestampType rows are local-time datetimes, as timestamp() reads them


def _take(column: Any, rows: list[int]) -> Any:
    if column is None:
        return None
    if isinstance(column, list):
        return [column[i] for i in rows]
    return column.take(pa.array(rows, type=pa.int64()))


def _send_columns(producer: Producer, plan: SinkPlan, cols: _Columns) -> list[BatchResult]:
    """Queues one batch's rows: one send_batch call per topic (the rows of a topic keep their order)."""
    by_topic: dict[str, list[int] | None]  # None: every row of the batch
    if cols.topic is None:
        assert plan.topic is not None  # plan_sink requires the topic option or the topic column
        by_topic = {plan.topic: None}
    else:
        rows_of: dict[str, list[int]] = {}
        for row, topic in enumerate(cols.topic):
            rows_of.setdefault(topic, []).append(row)
        by_topic = {topic: None if len(rows) == cols.rows else rows for topic, rows in rows_of.items()}
    results = []
    for topic, rows in by_topic.items():
        part = cols if rows is None else _Columns(len(rows), _take(cols.value, rows), _take(cols.key, rows), None,
                                                  _take(cols.partition, rows), _take(cols.timestamp_ms, rows),
                                                  _take(cols.headers, rows))
        results.append(producer.send_batch(topic, part.value, part.key, partitions=part.partition,
                                           timestamps_ms=part.timestamp_ms, headers=part.headers))
    return results


@dataclass(slots=True)
class _TaskDeliveries:
    """A task's send_batch results: wait() flushes and waits until every record is answered; then the counts."""

    results: list[BatchResult] = field(default_factory=list)
    sent: int = 0

    def add(self, results: list[BatchResult]) -> None:
        self.results += results
        self.sent += sum(r.record_count for r in results)

    def wait(self, producer: Producer, timeout_ms: int) -> None:
        deadline_s = time.monotonic() + timeout_ms / 1000
        pending = producer.flush(timeout_ms / 1000)
        for result in self.results:
            try:
                result.result(max(0.0, deadline_s - time.monotonic()))
            except BatchDeliveryError:
                pass  # counted by failed / first_error
            except KafkaTimeoutError:
                unanswered = sum(r.record_count - r.succeeded_count - r.failed_count for r in self.results)
                raise KafkaTimeoutError(
                    f"cykafka sink: {unanswered} of {self.sent} records of this task were not acknowledged within "
                    f"cykafka.flush.timeout.ms ({timeout_ms}); {pending} still queued") from None

    @property
    def failed(self) -> int:
        return sum(r.failed_count for r in self.results)

    @property
    def first_error(self) -> BaseException | None:
        return next((r.errors[0][1] for r in self.results if r.failed_count), None)

    @property
    def acked(self) -> dict[tuple[str, int], int]:
        total: dict[tuple[str, int], int] = {}
        for result in self.results:
            for topic_partition, count in result.delivered_by_partition.items():
                total[topic_partition] = total.get(topic_partition, 0) + count
        return total

class _StderrUnlessHandled(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr for the 'cykafka' logger in a Python worker, silent while the root logger has handlers (Spark's
    python worker logging adds one around each task; that one then shows the record)."""

    def emit(self, record: logging.LogRecord) -> None:
        if not logging.getLogger().handlers:
            super().emit(record)


def _apply_log_level(plan: SinkPlan) -> None:
    if plan.log_level is None:
        return
    root = logging.getLogger("cykafka")  # every component's logger (cykafka.producer, cykafka.network, ...)
    root.setLevel(plan.log_level)
    if not any(isinstance(h, _StderrUnlessHandled) for h in root.handlers):
        handler = _StderrUnlessHandled(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)



AfterBatch = Callable[[Producer, TaskIdentity, int], None]  # (producer, task, rows sent so far): a test's hook


def write_task(plan: SinkPlan, batches: Iterable[Any], encoding: str, task: TaskIdentity | None = None, *,
               after_batch: AfterBatch | None = None) -> CykafkaCommitMessage:
    """One Spark task: sends every row, flushes, raises the first delivery error, returns the commit message.
    `batches` are pyarrow RecordBatches (encoding "arrow") or lists of Rows (encoding "rows"). Exactly-once: the
    rows go in the task's transaction, prepared here and completed by the driver. `task`: tests only (default:
    Spark's TaskContext); `after_batch`: runs after each batch is queued (faults.py's injected failures)."""
    _apply_log_level(plan)
    task = task or _task_identity(plan)
    spark_partition = task.spark_partition
    deliveries = _TaskDeliveries()
    producer: Producer | None = None
    transaction = _TaskTransaction(plan, task) if plan.exactly_once else None
    if transaction is not None:
        transaction.start()  # begins while Spark hands over the first batch
    prepared: PreparedTransaction | None = None
    skipped = False
    rest = iter(batches)
    topics: set[str] = set()
    try:
        for batch in rest:
            cols = _arrow_columns(batch, plan) if encoding == "arrow" else _row_columns(batch, plan)
            if not cols.rows:
                continue
            if producer is None:
                producer = (transaction.begun() if transaction is not None
                            else PRODUCERS.acquire(plan.producer_config, plan.idle_timeout_ms))
                if producer is None:  # a replayed micro-batch, committed already
                    skipped = True
                    for _ in rest:
                        pass
                    break
            deliveries.add(_send_columns(producer, plan, cols))
            topics.update(cols.topic if cols.topic is not None else [plan.topic or ""])
            if after_batch is not None:
                after_batch(producer, task, deliveries.sent)
        if producer is not None:
            deliveries.wait(producer, plan.flush_timeout_ms)
        first_error = deliveries.first_error
        if first_error is not None:
            raise DeliveryError(f"cykafka sink: {deliveries.failed} of {deliveries.sent} records of Spark partition "
                                f"{spark_partition} failed delivery; first error: {first_error!r}",
                                retriable=getattr(first_error, "retriable", False)) from first_error
        if transaction is not None and deliveries.sent:
            prepared = transaction.prepare(topics)
    finally:
        if transaction is not None:
            transaction.close()
        elif producer is not None:
            PRODUCERS.release(plan.producer_config)
    sent = deliveries.sent
    acked = deliveries.acked
    message = CykafkaCommitMessage(spark_partition, task.attempt, sent, acked, encoding, os.getpid(),
                                   producer.config.client_id if producer else "none", prepared, skipped,
                                   task.write_id if plan.exactly_once else None)
    log.info("cykafka: task for Spark partition %d (attempt %d, pid %d, producer %s) wrote %d rows to %s via the "
             "%s writer%s", spark_partition, task.attempt, message.pid, message.producer, sent,
             ",".join(sorted({topic for topic, _ in acked})) or "nothing", encoding,
             f"; skipped: micro-batch {task.batch_id} was committed before" if skipped else "")
    return message


def _chunks(rows: Iterator[Row], size: int = 10_000) -> Iterator[list[Row]]:
    while chunk := list(itertools.islice(rows, size)):
        yield chunk


def _summary(messages: Sequence[ds.WriterCommitMessage | None]) -> str:
    done = [m for m in messages if isinstance(m, CykafkaCommitMessage)]
    per_topic: dict[str, int] = {}
    for message in done:
        for (topic, _), count in message.acked.items():
            per_topic[topic] = per_topic.get(topic, 0) + count
    partitions = len({tp for m in done for tp in m.acked})
    encodings = ",".join(sorted({m.encoding for m in done})) or "none"
    return (f"{sum(m.rows for m in done)} rows from {len(done)} tasks (writer path: {encodings}) into "
            f"{partitions} Kafka partitions; per topic: {per_topic}")



# -- the Spark classes (pickled to executors; they hold only the plan) ---------------------------------------------


class CykafkaArrowWriter(ds.DataSourceArrowWriter):
    """Batch writes: Spark hands each task pyarrow RecordBatches."""

    def __init__(self, plan: SinkPlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> CykafkaCommitMessage:
        return write_task(self.plan, iterator, "arrow")

    def commit(self, messages: list[ds.WriterCommitMessage | None]) -> None:
        _apply_log_level(self.plan)
        complete_transactions(self.plan, messages, commit=True, what="the write")
        log.info("cykafka: committed %s", _summary(messages))

    def abort(self, messages: list[ds.WriterCommitMessage | None]) -> None:
        _apply_log_level(self.plan)
        complete_transactions(self.plan, messages, commit=False, what="the write")
        log.warning("cykafka: write aborted; %s: %s", _abort_outcome(self.plan), _summary(messages))



class _StreamCommitMixin:
    plan: SinkPlan

    def commit(self, messages: list[ds.WriterCommitMessage | None], batchId: int) -> None:
        _apply_log_level(self.plan)
        complete_transactions(self.plan, messages, commit=True, what=f"micro-batch {batchId}")
        skipped = sum(1 for m in messages if isinstance(m, CykafkaCommitMessage) and m.skipped)
        log.info("cykafka: micro-batch %d committed %s%s", batchId, _summary(messages),
                 f" ({skipped} tasks skipped: committed before, replayed)" if skipped else "")

    def abort(self, messages: list[ds.WriterCommitMessage | None], batchId: int) -> None:
        _apply_log_level(self.plan)
        complete_transactions(self.plan, messages, commit=False, what=f"micro-batch {batchId}")
        log.warning("cykafka: micro-batch %d aborted; %s (Spark replays the batch): %s", batchId,
                    _abort_outcome(self.plan), _summary(messages))


class CykafkaStreamRowWriter(_StreamCommitMixin, ds.DataSourceStreamWriter):
    """Streaming writes on pyspark 4.0, whose streaming sink hands tasks Rows only."""

    def __init__(self, plan: SinkPlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Row]) -> CykafkaCommitMessage:
        return write_task(self.plan, _chunks(iterator), "rows")


StreamArrowWriter: Any = None  # CykafkaStreamArrowWriter, where pyspark has DataSourceStreamArrowWriter

if HAS_STREAM_ARROW_WRITER:

    class CykafkaStreamArrowWriter(_StreamCommitMixin, ds.DataSourceStreamArrowWriter):  # type: ignore[misc,name-defined,unused-ignore]
        """Streaming writes on pyspark >= 4.1: each micro-batch task gets pyarrow RecordBatches."""

        def __init__(self, plan: SinkPlan) -> None:
            self.plan = plan

        def write(self, iterator: Iterator[pa.RecordBatch]) -> CykafkaCommitMessage:
            return write_task(self.plan, iterator, "arrow")

    StreamArrowWriter = CykafkaStreamArrowWriter


def writer(plan: SinkPlan) -> ds.DataSourceWriter:
    """The batch writer for a plan (a test's cykafka.test.* faults get faults.py's)."""
    if plan.faults is not None:
        from cykafka.spark import faults

        return faults.writer(plan)
    return CykafkaArrowWriter(plan)


def stream_writer(plan: SinkPlan) -> ds.DataSourceStreamWriter:
    """The streaming writer for a plan: Arrow on pyspark >= 4.1, Rows before (a test's faults get faults.py's)."""
    if plan.faults is not None:
        from cykafka.spark import faults

        return faults.stream_writer(plan)
    chosen: ds.DataSourceStreamWriter = StreamArrowWriter(plan) if HAS_STREAM_ARROW_WRITER \
        else CykafkaStreamRowWriter(plan)
    return chosen


