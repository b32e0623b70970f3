"""The `cykafka` Spark data source (pyspark >= 4.0 Python Data Source API): DataFrame writes to Kafka, batch and
streaming, encoded from Arrow columns; and the per-process producer cache the executors use. A composition root
like the Producer: Spark drives it, it builds Producers. Needs the spark extra: pip install 'cykafka[spark]'.

Columns, as Spark's Kafka sink: value (binary|string, required), key (binary|string), topic (string), partition (int),
headers (array<struct<key:string,value:binary|string>>), timestamp (timestamp|timestamp_ntz|bigint ms); others are
ignored. Options: `kafka.*` go to the Producer with the prefix stripped, `topic` overrides the column, `cykafka.*` are
ours (SINK_OPTIONS). Schema and options are checked in writer()/streamWriter(), which Spark runs on the driver while
planning, so a bad column or option fails the query before any task starts.

Executors: writers are pickled and carry only plain data. Each Python worker process keeps one Producer per distinct
config (ProducerCache): built on first use, reused by later tasks, dropped in a forked child, closed when idle. Every
task's write() flushes and raises the first delivery error before returning its commit message: Spark's workers leave
through os._exit, so nothing may wait for atexit. Delivery is at-least-once by default: a retried task sends its rows
again. With cykafka.delivery=exactly-once each task writes in a Kafka transaction of its own producer, prepares it, and
the driver's commit() completes them all (docs/spark.md, "Exactly-once writes").
"""

from __future__ import annotations

import calendar
import datetime
import itertools
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext
    from pyspark.sql import Row, SparkSession
    from pyspark.sql import datasource as ds
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        DataType,
        IntegerType,
        LongType,
        StringType,
        StructType,
        TimestampNTZType,
        TimestampType,
    )
except ImportError as e:  # pragma: no cover - the spark extra is missing
    raise ImportError("cykafka's Spark data source needs pyspark>=4.0 and pyarrow: pip install 'cykafka[spark]'") from e

from cykafka.admin import Admin
from cykafka.arrow_schema import kafka_source_schema
from cykafka.config import ADMIN_KEYS, ProducerConfig
from cykafka.consumer import Consumer
from cykafka.core import BatchResult
from cykafka.errors import (
    BatchDeliveryError,
    ConfigError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
)
from cykafka.ports import TopicPartition
from cykafka.producer import Producer
from cykafka.serialization import validate_topic
from cykafka.spark_source import (
    EARLIEST,
    LATEST,
    Bound,
    OffsetRange,
    SourceOptions,
    offset_ranges,
    offsets_json,
    parse_source_options,
    trigger_end,
    wants_headers,
)

log = logging.getLogger("cykafka")

SOURCE_NAME = "cykafka"
KAFKA_PREFIX = "kafka."
# serializers are ours: keys and values are the bytes of binary/string columns, as in Spark's Kafka sink
REJECTED_KAFKA_KEYS = {"key.serializer": "keys", "value.serializer": "values"}
AT_LEAST_ONCE, EXACTLY_ONCE = "at-least-once", "exactly-once"
DELIVERY_MODES = (AT_LEAST_ONCE, EXACTLY_ONCE)
SINK_OPTIONS = {
    "cykafka.delivery": f"{AT_LEAST_ONCE} (default) or {EXACTLY_ONCE}: each task writes in a Kafka transaction that "
                        f"the driver commits once every task is done",
    "cykafka.flush.timeout.ms": "how long each task waits for its records to be acknowledged (default: the "
                                "producer's delivery.timeout.ms + 30000)",
    "cykafka.producer.idle.timeout.ms": "close a worker's cached producer after this long unused (default 600000)",
    "cykafka.log.level": "level of the 'cykafka' logger in Spark's Python workers, e.g. INFO (default: unchanged)",
    "cykafka.test.fail_once_marker": "tests only: the first task to create this file fails after its first batch",
    "cykafka.test.task_report_dir": "tests only: each successful task writes its commit message there as JSON",
    "cykafka.test.kill_once_marker": "tests only: the first task to create this file SIGKILLs its Python worker after "
                                     "its first batch",
    "cykafka.test.kill_driver_after_commit": "tests only: the first micro-batch commit (batch id >= 1) to create this "
                                             "file SIGKILLs the process group $CYKAFKA_TEST_DRIVER_PGID once its "
                                             "transactions are committed",
}
# exactly-once: transaction.timeout.ms unless kafka.transaction.timeout.ms says otherwise (Kafka's default
# transaction.max.timeout.ms): every task's transaction stays open until the driver commits the whole write
EOS_TRANSACTION_TIMEOUT_MS = 900_000
# Spark's local properties of a micro-batch's tasks (StreamExecution.QUERY_ID_KEY, MicroBatchExecution.BATCH_ID_KEY)
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
DEFAULT_IDLE_TIMEOUT_MS = 600_000
_HAS_STREAM_ARROW_WRITER = hasattr(ds, "DataSourceStreamArrowWriter")  # pyspark >= 4.1


class SinkSchemaError(KafkaError, ValueError):
    """A DataFrame column has a type the Kafka sink cannot write; raised on the driver while planning."""


class DeliveryError(KafkaError):
    """Records of a Spark task were not acknowledged; the task fails and Spark retries it (at-least-once)."""


# -- options and schema: checked on the driver ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SinkPlan:
    """What a task needs, as plain picklable data: producer config, topic option, which columns exist."""

    producer_config: tuple[tuple[str, str], ...]
    topic: str | None
    columns: frozenset[str]
    flush_timeout_ms: int
    idle_timeout_ms: int
    timestamp_ntz: bool = False
    log_level: str | None = None
    fail_once_marker: str | None = None
    task_report_dir: str | None = None
    delivery: str = AT_LEAST_ONCE
    write_id: str | None = None  # exactly-once batch writes: the job's id, made in writer() (streaming: the query's)
    kill_once_marker: str | None = None
    kill_driver_marker: str | None = None

    @property
    def exactly_once(self) -> bool:
        return self.delivery == EXACTLY_ONCE

    @property
    def producer_config_dict(self) -> dict[str, str]:
        return dict(self.producer_config)


def _int_option(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        number = int(raw)
    except ValueError:
        raise ConfigError(f"option {key} must be an integer, got {raw!r}") from None
    if number <= 0:
        raise ConfigError(f"option {key} must be > 0, got {number}")
    return number


def plan_sink(options: Mapping[str, str], schema: StructType) -> SinkPlan:
    """Validates options and columns like Spark's Kafka sink; raises ConfigError / SinkSchemaError naming the fix."""
    producer_config: dict[str, str] = {}
    for key, value in options.items():
        key = key.lower()
        if key.startswith(KAFKA_PREFIX):
            name = key[len(KAFKA_PREFIX):]
            if name in REJECTED_KAFKA_KEYS:
                raise ConfigError(f"option {key} is not supported by the cykafka sink: {REJECTED_KAFKA_KEYS[name]} "
                                  f"are written as the bytes of binary or string columns; cast the column instead")
            producer_config[name] = str(value)
        elif key.startswith("cykafka.") and key not in SINK_OPTIONS:
            raise ConfigError(f"unknown option {key}; cykafka options are {', '.join(sorted(SINK_OPTIONS))}")
    if "bootstrap.servers" not in producer_config:
        raise ConfigError("option kafka.bootstrap.servers is required, e.g. .option('kafka.bootstrap.servers', "
                          "'host1:9092,host2:9092')")
    delivery = _delivery_option(options, producer_config)
    parsed = ProducerConfig.parse(producer_config)  # unknown or invalid kafka.* keys fail here, on the driver
    topic = options.get("topic")
    if topic is not None:
        try:
            validate_topic(topic)
        except InvalidTopicError as e:
            raise ConfigError(f"option topic: {e}") from e
    log_level = options.get("cykafka.log.level")
    if log_level is not None and not isinstance(logging.getLevelName(log_level.upper()), int):
        raise ConfigError(f"option cykafka.log.level must be a logging level name (DEBUG, INFO, WARNING, ERROR), "
                          f"got {log_level!r}")
    columns = _check_columns(schema, topic_option=topic is not None)
    return SinkPlan(
        producer_config=tuple(sorted(producer_config.items())),
        topic=topic,
        columns=columns,
        flush_timeout_ms=_int_option(options, "cykafka.flush.timeout.ms", parsed.delivery_timeout_ms + 30_000),
        idle_timeout_ms=_int_option(options, "cykafka.producer.idle.timeout.ms", DEFAULT_IDLE_TIMEOUT_MS),
        timestamp_ntz=any(f.name == "timestamp" and isinstance(f.dataType, TimestampNTZType) for f in schema.fields),
        log_level=log_level.upper() if log_level else None,
        fail_once_marker=options.get("cykafka.test.fail_once_marker"),
        task_report_dir=options.get("cykafka.test.task_report_dir"),
        delivery=delivery,
        kill_once_marker=options.get("cykafka.test.kill_once_marker"),
        kill_driver_marker=options.get("cykafka.test.kill_driver_after_commit"),
    )


def _delivery_option(options: Mapping[str, str], producer_config: dict[str, str]) -> str:
    """cykafka.delivery; exactly-once also checks that a transactional producer can be built from the kafka.* keys
    (idempotence conflicts fail here, on the driver) and sets its transaction.timeout.ms default."""
    raw = options.get("cykafka.delivery", AT_LEAST_ONCE)
    delivery = str(raw).strip().lower()
    if delivery not in DELIVERY_MODES:
        raise ConfigError(f"option cykafka.delivery must be one of {', '.join(DELIVERY_MODES)}, got {raw!r}")
    if delivery == EXACTLY_ONCE:
        if "transactional.id" in producer_config:
            raise ConfigError("option kafka.transactional.id cannot be set with cykafka.delivery=exactly-once: "
                              "each task's transactional.id is derived from the write and its Spark partition")
        producer_config.setdefault("transaction.timeout.ms", str(EOS_TRANSACTION_TIMEOUT_MS))
        ProducerConfig.parse({**producer_config, "transactional.id": "cykafka-plan-check"})
    return delivery


def _is_bytes_type(data_type: DataType) -> bool:
    return isinstance(data_type, BinaryType | StringType)


_EXPECTED = {
    "value": ("binary or string", _is_bytes_type),
    "key": ("binary or string", _is_bytes_type),
    "topic": ("string", lambda t: isinstance(t, StringType)),
    "partition": ("int", lambda t: isinstance(t, IntegerType)),
    "timestamp": ("timestamp, timestamp_ntz or bigint (epoch ms)",
                  lambda t: isinstance(t, TimestampType | TimestampNTZType | LongType)),
    "headers": ("array<struct<key:string,value:binary>>", lambda t: _is_headers_type(t)),
}


def _is_headers_type(data_type: DataType) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    fields = {f.name: f.dataType for f in data_type.elementType.fields}
    return (len(fields) == 2 and isinstance(fields.get("key"), StringType)
            and _is_bytes_type(fields.get("value", LongType())))


def _check_columns(schema: StructType, *, topic_option: bool) -> frozenset[str]:
    names = [f.name for f in schema.fields]
    present: set[str] = set()
    for f in schema.fields:
        expected = _EXPECTED.get(f.name)
        if expected is None:
            continue  # Spark's Kafka sink ignores other columns too
        if names.count(f.name) > 1:
            raise SinkSchemaError(f"cykafka sink: the DataFrame has {names.count(f.name)} columns named {f.name!r}")
        description, accepts = expected
        if not accepts(f.dataType):
            raise SinkSchemaError(f"cykafka sink: column {f.name!r} must be {description}, got "
                                  f"{f.dataType.simpleString()}; cast or rename it")
        present.add(f.name)
    if "value" not in present:
        raise SinkSchemaError(f"cykafka sink: required column 'value' (binary or string) is missing; columns: "
                              f"{', '.join(names) or 'none'}")
    if "topic" not in present and not topic_option:
        raise SinkSchemaError("cykafka sink: no topic: set .option('topic', ...) or add a string column 'topic'")
    return frozenset(present)


# -- the per-process client caches (executors) ---------------------------------------------------------------------


class _Client(Protocol):
    def close(self, timeout: float = ...) -> None: ...


Client = TypeVar("Client", bound=_Client)
ConfigKey = tuple[tuple[str, str], ...]


@dataclass(slots=True)
class _Cached(Generic[Client]):
    client: Client
    idle_timeout_s: float
    users: int = 0
    last_used_s: float = field(default_factory=time.monotonic)


class ClientCache(Generic[Client]):
    """Clients of one kind per distinct config in this process, built on first use and reused by the tasks that
    follow (Spark reuses Python workers). Shared (producers, thread-safe: every task of the config uses one) or
    exclusive (consumers: a task holds one alone; a concurrent task of the same config gets another). Idle ones are
    closed by a daemon reaper thread; after a fork the child forgets the parent's (os.register_at_fork, and a pid
    check for forks that skip Python's hooks) and builds its own."""

    def __init__(self, factory: Callable[[dict[str, str]], Client], kind: str, *, exclusive: bool) -> None:
        self._factory, self._kind, self._exclusive = factory, kind, exclusive
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[ConfigKey, list[_Cached[Client]]] = {}
        self._pid = os.getpid()
        self._wake = threading.Event()
        self._reaper: threading.Thread | None = None

    def acquire(self, config: ConfigKey, idle_timeout_ms: int) -> Client:
        if os.getpid() != self._pid:  # forked without Python's at-fork hooks: the inherited clients are unusable
            self._reset()
        with self._lock:
            entries = self._entries.setdefault(config, [])
            entry = next((e for e in entries if not (self._exclusive and e.users)), None)
            if entry is None:
                entry = _Cached(self._factory(dict(config)), idle_timeout_ms / 1000)
                entries.append(entry)
                log.debug("cykafka: new %s in pid %d", self._kind, self._pid)
            entry.users += 1
            return entry.client

    def release(self, config: ConfigKey, client: Client | None = None) -> None:
        """Gives back a client acquire() returned (exclusive caches need to know which)."""
        with self._lock:
            entry = next((e for e in self._entries.get(config, ()) if client is None or e.client is client), None)
            if entry is None:
                return
            entry.users -= 1
            entry.last_used_s = time.monotonic()
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name=f"cykafka-{self._kind}-reaper", daemon=True)
                self._reaper.start()
        self._wake.set()

    def evict_idle(self, now_s: float | None = None) -> int:
        """Closes clients unused for their idle timeout; returns how many."""
        now_s = time.monotonic() if now_s is None else now_s
        evicted: list[_Cached[Client]] = []
        with self._lock:
            for config, entries in list(self._entries.items()):
                idle = [e for e in entries if e.users == 0 and now_s - e.last_used_s >= e.idle_timeout_s]
                evicted += idle
                kept = [e for e in entries if e not in idle]
                if kept:
                    self._entries[config] = kept
                else:
                    del self._entries[config]
        for entry in evicted:
            log.debug("cykafka: closing an idle %s", self._kind)
            entry.client.close(30)
        return len(evicted)

    def close_all(self, timeout_s: float = 30) -> None:
        with self._lock:
            entries = [e for es in self._entries.values() for e in es]
            self._entries = {}
        for entry in entries:
            entry.client.close(timeout_s)

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._entries.values())

    def _next_eviction_delay_s(self, now_s: float) -> float | None:
        with self._lock:
            due = [e.last_used_s + e.idle_timeout_s - now_s for es in self._entries.values() for e in es
                   if e.users == 0]
        return max(0.0, min(due)) if due else None

    def _reap(self) -> None:
        wake = self._wake
        while True:
            if wake.wait(self._next_eviction_delay_s(time.monotonic())):
                wake.clear()
            try:
                self.evict_idle()
            except Exception:
                log.exception("cykafka: closing an idle %s failed", self._kind)

    def after_fork_in_child(self) -> None:
        # each client's own hook already gave it fresh threads in this child: close those, start over
        entries = [e for es in self._entries.values() for e in es]
        self._reset()
        for entry in entries:
            entry.client.close(0)


class ProducerCache(ClientCache[Producer]):
    """The producers of this process: one per config, shared by its tasks."""

    def __init__(self) -> None:
        super().__init__(Producer, "producer", exclusive=False)


PRODUCERS = ProducerCache()
os.register_at_fork(after_in_child=PRODUCERS.after_fork_in_child)


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


def _headers_list(column: Any) -> list[list[tuple[str, Any]] | None]:
    """Per row a list of (key, bytes) pairs, or None; built from the flattened key and value columns."""
    lengths = column.value_lengths().to_pylist()
    entries = column.flatten()  # the struct entries of this slice, null lists skipped
    names = [entries.type.field(i).name for i in range(entries.type.num_fields)]
    children = dict(zip(names, entries.flatten(), strict=True))
    keys = children["key"]
    if keys.null_count:
        raise SinkSchemaError("cykafka sink: a header has a null key; header keys must be non-null strings")
    values = children["value"]
    if pa.types.is_string(values.type):  # the values as bytes: a view of the same buffers
        values = values.view(pa.binary())
    elif pa.types.is_large_string(values.type):
        values = values.view(pa.large_binary())
    pairs = list(zip(keys.to_pylist(), _bytes_column(values).to_pylist(), strict=True))
    out: list[list[tuple[str, Any]] | None] = []
    position = 0
    for length in lengths:
        if not length:
            out.append(None)
            continue
        out.append(pairs[position:position + length])
        position += length
    return out


@dataclass(slots=True)
class _Columns:
    """One batch as send_batch takes it: value and key are Arrow arrays (the Arrow path, read in place) or lists
    (the row path); the others lists, None entries meaning the default; None: the column is absent."""

    rows: int
    value: Any
    key: Any = None
    topic: list[Any] | None = None
    partition: list[Any] | None = None
    timestamp_ms: list[Any] | None = None
    headers: list[Any] | None = None


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
        headers=_headers_list(column("headers")) if "headers" in present else None,
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


@dataclass(frozen=True, slots=True)
class PreparedTransaction:
    """An exactly-once task's transaction, flushed and left open for the driver: what EndTxn needs, and when it was
    prepared (wall clock ms, to tell a transaction the coordinator has timed out)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    prepared_ms: int


@dataclass
class CykafkaCommitMessage(ds.WriterCommitMessage):
    """One task's result, sent to the driver's commit(): records acknowledged per Kafka (topic, partition); with
    exactly-once the prepared transaction (None: no rows, or `skipped`: a replayed micro-batch already committed)."""

    spark_partition: int
    attempt: int
    rows: int
    acked: dict[tuple[str, int], int]
    encoding: str  # "arrow" or "rows": which writer path encoded the rows
    pid: int
    producer: str  # client.id of the task's producer ("none" when the task had no rows)
    transaction: PreparedTransaction | None = None
    skipped: bool = False
    write_id: str | None = None  # exactly-once: the prefix of the write's transactional.ids

    def to_json(self) -> str:
        acked = {f"{topic}-{partition}": count for (topic, partition), count in sorted(self.acked.items())}
        txn = self.transaction
        return json.dumps({"spark_partition": self.spark_partition, "attempt": self.attempt, "rows": self.rows,
                           "acked": acked, "encoding": self.encoding, "pid": self.pid, "producer": self.producer,
                           "transaction": None if txn is None else [txn.transactional_id, txn.producer_id,
                                                                    txn.producer_epoch],
                           "skipped": self.skipped})


class _StderrUnlessHandled(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr for the 'cykafka' logger in a Python worker, silent while the root logger has handlers (Spark's
    python worker logging adds one around each task; that one then shows the record)."""

    def emit(self, record: logging.LogRecord) -> None:
        if not logging.getLogger().handlers:
            super().emit(record)


def _apply_log_level(plan: SinkPlan) -> None:
    if plan.log_level is None:
        return
    log.setLevel(plan.log_level)
    if not any(isinstance(h, _StderrUnlessHandled) for h in log.handlers):
        handler = _StderrUnlessHandled(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)


def _claim_fail_once_marker(path: str | None) -> bool:
    if not path:
        return False
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class TaskIdentity:
    """Which task this is: its Spark partition and attempt; for exactly-once the write's id (a batch job's, or
    "cykafka-<query id>" of a streaming query) and the micro-batch id (None: a batch job)."""

    spark_partition: int
    attempt: int
    write_id: str | None = None
    batch_id: int | None = None

    @property
    def transactional_id(self) -> str:
        """The same for every attempt of the partition: a new attempt's init_transactions fences the old one."""
        return f"{self.write_id}-{self.spark_partition}"


def _task_identity(plan: SinkPlan) -> TaskIdentity:
    context = TaskContext.get()
    if context is None:
        return TaskIdentity(-1, 0, plan.write_id)
    query_id = context.getLocalProperty(QUERY_ID_PROPERTY)
    batch_id = context.getLocalProperty(BATCH_ID_PROPERTY)
    write_id = plan.write_id or (f"cykafka-{query_id}" if query_id else None)
    if plan.exactly_once and write_id is None:
        raise KafkaError(f"cykafka.delivery={EXACTLY_ONCE}: the task has neither a job id nor a streaming query id "
                         f"(Spark's local property {QUERY_ID_PROPERTY})")
    return TaskIdentity(context.partitionId(), context.attemptNumber(), write_id,
                        int(batch_id) if query_id and batch_id is not None else None)


def _admin_config(plan: SinkPlan) -> dict[str, str]:
    return {k: v for k, v in plan.producer_config if k in ADMIN_KEYS}


class _TaskTransaction:
    """An exactly-once task's transaction, in a producer of its own whose transactional.id is the task's (not the
    worker's cached producer: one transactional.id per producer). Streaming records the micro-batch inside the same
    transaction, as the committed offset `batch_id` of the consumer group named like the transactional.id (on
    partition 0 of a topic the task wrote), so a replay of a micro-batch whose transaction committed is skipped."""

    def __init__(self, plan: SinkPlan, task: TaskIdentity) -> None:
        self.plan, self.task = plan, task
        self.producer: Producer | None = None

    def begin(self) -> Producer | None:
        """init_transactions (fences older attempts, aborts what they left open), then begins; None: this
        micro-batch's transaction of this partition has committed already (a replay), nothing is to be written."""
        self.producer = Producer({**self.plan.producer_config_dict,
                                  "transactional.id": self.task.transactional_id})
        self.producer.init_transactions()
        if self.task.batch_id is not None and self.committed_batch_id() >= self.task.batch_id:
            return None
        self.producer.begin_transaction()
        return self.producer

    def committed_batch_id(self) -> int:
        """The last micro-batch whose transaction of this partition committed (-1: none). Read after
        init_transactions, so no transaction of the partition is still open."""
        with Admin(_admin_config(self.plan)) as admin:
            found = admin.list_consumer_group_offsets(self.task.transactional_id)
        return max((r.value.offset for r in found.values() if r.error is None and r.value is not None), default=-1)

    def prepare(self, topics: set[str]) -> PreparedTransaction:
        assert self.producer is not None
        if self.task.batch_id is not None:
            self.producer.send_offsets_to_transaction({(min(topics), 0): self.task.batch_id},
                                                      self.task.transactional_id)
        info = self.producer.prepare_transaction(self.plan.flush_timeout_ms / 1000)
        return PreparedTransaction(self.task.transactional_id, info.producer_id, info.producer_epoch,
                                   time.time_ns() // 1_000_000)

    def close(self) -> None:
        """Leaves a prepared transaction open for the driver; aborts one that was not prepared (Java's close)."""
        if self.producer is not None:
            self.producer.close(self.plan.flush_timeout_ms / 1000)


def write_task(plan: SinkPlan, batches: Iterable[Any], encoding: str,
               task: TaskIdentity | None = None) -> CykafkaCommitMessage:
    """One Spark task: sends every row, flushes, raises the first delivery error, returns the commit message.
    `batches` are pyarrow RecordBatches (encoding "arrow") or lists of Rows (encoding "rows"). Exactly-once: the
    rows go in the task's transaction, prepared here and completed by the driver. `task`: tests only (default:
    Spark's TaskContext)."""
    _apply_log_level(plan)
    task = task or _task_identity(plan)
    spark_partition = task.spark_partition
    deliveries = _TaskDeliveries()
    producer: Producer | None = None
    transaction = _TaskTransaction(plan, task) if plan.exactly_once else None
    prepared: PreparedTransaction | None = None
    skipped = False
    fail_once = _claim_fail_once_marker(plan.fail_once_marker)
    kill_once = _claim_fail_once_marker(plan.kill_once_marker)
    rest = iter(batches)
    topics: set[str] = set()
    try:
        for batch in rest:
            cols = _arrow_columns(batch, plan) if encoding == "arrow" else _row_columns(batch, plan)
            if not cols.rows:
                continue
            if producer is None:
                producer = (transaction.begin() if transaction is not None
                            else PRODUCERS.acquire(plan.producer_config, plan.idle_timeout_ms))
                if producer is None:  # a replayed micro-batch, committed already
                    skipped = True
                    for _ in rest:
                        pass
                    break
            deliveries.add(_send_columns(producer, plan, cols))
            topics.update(cols.topic if cols.topic is not None else [plan.topic or ""])
            if fail_once:
                producer.flush(plan.flush_timeout_ms / 1000)
                raise DeliveryError(f"cykafka.test.fail_once_marker: injected failure of task {spark_partition} "
                                    f"after {deliveries.sent} rows")
            if kill_once:
                producer.flush(plan.flush_timeout_ms / 1000)
                os.kill(os.getpid(), signal.SIGKILL)
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
    if plan.task_report_dir:
        name = f"task-{message.pid}-{spark_partition}-{task.attempt}-{time.time_ns()}.json"
        report = Path(plan.task_report_dir) / name
        report.write_text(message.to_json())
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


# -- reads: offsets resolved on the driver, ranges read on the executors ------------------------------------------

CONSUMERS: ClientCache[Consumer] = ClientCache(Consumer, "consumer", exclusive=True)
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
        subscription = self.options.subscription
        if subscription.kind == "assign":
            return list(subscription.partitions)
        if subscription.kind == "subscribe":
            topics: Iterable[str] = subscription.topics
        else:
            connection = {k: v for k, v in self.options.consumer_config if k in ADMIN_KEYS}
            with Admin(connection) as admin:
                topics = list(admin.list_topics())
        counts = {t: len(self.consumer.partitions_for(t)) for t in topics}
        return subscription.select({t: n for t, n in counts.items() if n})

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


# -- exactly-once: the driver completes the tasks' transactions ---------------------------------------------------


def _prepared(messages: Sequence[ds.WriterCommitMessage | None]) -> list[PreparedTransaction]:
    """The tasks' prepared transactions, oldest first (the first to reach transaction.timeout.ms)."""
    found = [m.transaction for m in messages if isinstance(m, CykafkaCommitMessage) and m.transaction is not None]
    return sorted(found, key=lambda t: t.prepared_ms)


def complete_transactions(plan: SinkPlan, messages: Sequence[ds.WriterCommitMessage | None], *, commit: bool,
                          what: str) -> None:
    """Exactly-once, on the driver: commits (or aborts) every task's prepared transaction, oldest first. A commit
    that fails (the coordinator aborted the transaction: transaction.timeout.ms passed, or a newer attempt fenced
    it) aborts the ones not committed yet and raises, saying how many had committed. Aborting also fences the
    partitions whose task failed (their message is None), so nothing they left open holds read_committed readers
    back until transaction.timeout.ms."""
    if not plan.exactly_once:
        return
    prepared = _prepared(messages)
    write_id = plan.write_id or next((m.write_id for m in messages if isinstance(m, CykafkaCommitMessage)), None)
    failed = [f"{write_id}-{index}" for index, m in enumerate(messages) if m is None] if write_id else []
    if not prepared and (commit or not failed):
        return
    timeout_s = plan.flush_timeout_ms / 1000
    with Producer(plan.producer_config_dict) as completer:
        if commit and prepared:
            age_ms = time.time_ns() // 1_000_000 - prepared[0].prepared_ms
            timeout_ms = ProducerConfig.parse(plan.producer_config_dict).transaction_timeout_ms
            if age_ms >= timeout_ms:
                _end_all(completer, prepared, commit=False, timeout_s=timeout_s)
                raise KafkaError(f"cykafka sink: {what} was not committed: its oldest task transaction was prepared "
                                 f"{age_ms} ms ago, past kafka.transaction.timeout.ms ({timeout_ms}), so the "
                                 f"coordinator has aborted it; nothing was committed. Raise "
                                 f"kafka.transaction.timeout.ms above the write's duration")
        for done, txn in enumerate(prepared):
            try:
                completer.complete_transaction(txn.transactional_id, txn.producer_id, txn.producer_epoch, commit,
                                               timeout_s)
            except KafkaError as e:
                if not commit:
                    log.warning("cykafka: aborting transaction %s failed: %s", txn.transactional_id, e)
                    continue
                _end_all(completer, prepared[done + 1:], commit=False, timeout_s=timeout_s)
                raise KafkaError(f"cykafka sink: committing {what} failed at transaction {txn.transactional_id} "
                                 f"({e}); {done} of {len(prepared)} task transactions had committed, the rest are "
                                 f"aborted") from e
    if not commit:
        _fence(plan, failed)


def _end_all(completer: Producer, prepared: Sequence[PreparedTransaction], *, commit: bool, timeout_s: float) -> None:
    for txn in prepared:
        try:
            completer.complete_transaction(txn.transactional_id, txn.producer_id, txn.producer_epoch, commit,
                                           timeout_s)
        except KafkaError as e:
            log.warning("cykafka: ending transaction %s failed: %s", txn.transactional_id, e)


def _fence(plan: SinkPlan, transactional_ids: Iterable[str]) -> None:
    """init_transactions for each id: aborts the transaction a failed task left open and fences its attempts."""
    for transactional_id in transactional_ids:
        try:
            with Producer({**plan.producer_config_dict, "transactional.id": transactional_id}) as fencer:
                fencer.init_transactions()
        except KafkaError as e:
            log.warning("cykafka: fencing transactional.id %s failed: %s", transactional_id, e)


def _abort_outcome(plan: SinkPlan) -> str:
    if plan.exactly_once:
        return "the tasks' transactions are aborted, nothing of it is visible to read_committed readers"
    return "records of finished tasks stay in Kafka (at-least-once)"


def _kill_driver_for_test(plan: SinkPlan, batch_id: int) -> None:
    """cykafka.test.kill_driver_after_commit: the driver dies between the Kafka commit and Spark's checkpoint."""
    if batch_id >= 1 and _claim_fail_once_marker(plan.kill_driver_marker):
        os.killpg(int(os.environ["CYKAFKA_TEST_DRIVER_PGID"]), signal.SIGKILL)


class _StreamCommitMixin:
    plan: SinkPlan

    def commit(self, messages: list[ds.WriterCommitMessage | None], batchId: int) -> None:
        _apply_log_level(self.plan)
        complete_transactions(self.plan, messages, commit=True, what=f"micro-batch {batchId}")
        skipped = sum(1 for m in messages if isinstance(m, CykafkaCommitMessage) and m.skipped)
        log.info("cykafka: micro-batch %d committed %s%s", batchId, _summary(messages),
                 f" ({skipped} tasks skipped: committed before, replayed)" if skipped else "")
        _kill_driver_for_test(self.plan, batchId)

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


if _HAS_STREAM_ARROW_WRITER:

    class CykafkaStreamArrowWriter(_StreamCommitMixin, ds.DataSourceStreamArrowWriter):  # type: ignore[misc,name-defined,unused-ignore]
        """Streaming writes on pyspark >= 4.1: each micro-batch task gets pyarrow RecordBatches."""

        def __init__(self, plan: SinkPlan) -> None:
            self.plan = plan

        def write(self, iterator: Iterator[pa.RecordBatch]) -> CykafkaCommitMessage:
            return write_task(self.plan, iterator, "arrow")


class CykafkaDataSource(ds.DataSource):
    """`format("cykafka")`: reads and writes with the options and columns of Spark's Kafka source and sink, batch and
    streaming."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return source_schema(wants_headers(self.options))

    def reader(self, schema: StructType) -> ds.DataSourceReader:
        return CykafkaReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> ds.DataSourceStreamReader:
        return CykafkaStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> ds.DataSourceWriter:
        if overwrite:
            raise ConfigError("cykafka sink: Kafka topics cannot be overwritten; use mode('append')")
        plan = plan_sink(self.options, schema)
        if plan.exactly_once:  # one id for the job, shipped to its tasks inside the writer
            plan = replace(plan, write_id=f"cykafka-{uuid.uuid4().hex}")
        return CykafkaArrowWriter(plan)

    def streamWriter(self, schema: StructType, overwrite: bool) -> ds.DataSourceStreamWriter:
        # overwrite means output mode "complete": like Spark's Kafka sink, each micro-batch's rows are appended
        plan = plan_sink(self.options, schema)
        if _HAS_STREAM_ARROW_WRITER:
            writer: ds.DataSourceStreamWriter = CykafkaStreamArrowWriter(plan)
            return writer
        return CykafkaStreamRowWriter(plan)


def register(spark: SparkSession) -> None:
    """Makes format("cykafka") available in this SparkSession."""
    spark.dataSource.register(CykafkaDataSource)


def local_session(master: str = "local[2]", app_name: str = "cykafka",
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """A local SparkSession on 127.0.0.1 whose Python workers run this interpreter, with format("cykafka")."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        **(conf or {}),
    }
    builder: Any = SparkSession.builder
    builder = builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark: SparkSession = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


__all__ = ["CykafkaDataSource", "DeliveryError", "ProducerCache", "SinkSchemaError", "local_session", "register"]
