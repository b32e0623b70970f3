"""The sink's plan, made on the driver while Spark plans the query: options and columns checked as Spark's Kafka
sink checks them (a bad one fails the query before any task starts), and the plain, picklable data a task carries
(`SinkPlan`) and hands back (`CykafkaCommitMessage`, with an exactly-once task's `PreparedTransaction`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import datasource as ds
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

from cykafka.config import ProducerConfig
from cykafka.errors import (
    ConfigError,
    InvalidTopicError,
    KafkaError,
)
from cykafka.serialization import validate_topic

log = logging.getLogger("cykafka.spark")


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



class SinkSchemaError(KafkaError, ValueError):
    """A DataFrame column has a type the Kafka sink cannot write; raised on the driver while planning."""


class DeliveryError(KafkaError):
    """Records of a Spark task were not acknowledged; the task fails and Spark retries it (at-least-once)."""


# -- options and schema: checked on the driver ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Faults:
    """What the cykafka.test.* options ask a test write to do (faults.py does it); plain data, in the plan."""

    fail_once_marker: str | None = None
    kill_once_marker: str | None = None
    kill_driver_marker: str | None = None
    task_report_dir: str | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Faults | None:
        """None unless a cykafka.test.* option is set (a production write)."""
        faults = cls(options.get("cykafka.test.fail_once_marker"), options.get("cykafka.test.kill_once_marker"),
                     options.get("cykafka.test.kill_driver_after_commit"), options.get("cykafka.test.task_report_dir"))
        return faults if faults != cls() else None


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
    faults: Faults | None = None  # tests only: the cykafka.test.* options (faults.py); None in production
    delivery: str = AT_LEAST_ONCE
    write_id: str | None = None  # exactly-once batch writes: the job's id, made in writer() (streaming: the query's)

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
        faults=Faults.from_options(options),
        delivery=delivery,
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


