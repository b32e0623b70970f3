"""The `cykafka` Spark data source (pyspark >= 4.0 Python Data Source API): Kafka reads and writes, batch and
streaming, through Arrow columns, with no JVM connector jar. An application over the clients (it builds Producers,
Consumers and Admin clients); needs the spark extra: pip install 'cykafka[spark]'.

    import cykafka.spark
    cykafka.spark.register(spark)       # format("cykafka") in this SparkSession
    spark = cykafka.spark.local_session()

The package, one room per job:
- plan.py: the sink's options and columns, checked on the driver while Spark plans (Spark's Kafka sink's rules), and
  the plain data a task carries and returns (SinkPlan, CykafkaCommitMessage).
- sink.py: the sink's tasks on the executors (Arrow columns or Rows -> Producer.send_batch, flush, the first delivery
  error raised) and its writer classes.
- exactly_once.py: cykafka.delivery=exactly-once: a transaction per task, prepared there, completed by the driver.
- source.py, source_options.py: reads: the driver's offset lookups and ranges, the executors' Arrow batches; the
  options' pure half.
- clients.py: the per-process Producer and Consumer caches of Spark's Python workers.
- datasource.py: CykafkaDataSource (format("cykafka")), register, local_session.
- faults.py: the cykafka.test.* kill switches, only in the writers a test's options ask for.
Spark's Kafka source schema is spelled once, in cykafka/arrow_schema.py. docs/spark.md says what each option does.
"""

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover - the spark extra is missing
    raise ImportError("cykafka's Spark data source needs pyspark>=4.0 and pyarrow: pip install 'cykafka[spark]'") from e

from typing import TYPE_CHECKING

from cykafka.lazy import lazy_names

# Names load on first use (cykafka/lazy.py): the process that plans a stream's reads imports the source's modules,
# not the sink's, the producer or pyarrow.compute.
if TYPE_CHECKING:
    from cykafka.producer import (
        Producer,
    )
    from cykafka.spark.clients import (
        CONSUMERS,
        PRODUCERS,
        ClientCache,
        ProducerCache,
    )
    from cykafka.spark.datasource import (
        CykafkaDataSource,
        local_session,
        register,
    )
    from cykafka.spark.exactly_once import (
        TaskIdentity,
        complete_transactions,
    )
    from cykafka.spark.plan import (
        EOS_TRANSACTION_TIMEOUT_MS,
        SINK_OPTIONS,
        CykafkaCommitMessage,
        DeliveryError,
        PreparedTransaction,
        SinkPlan,
        SinkSchemaError,
        plan_sink,
    )
    from cykafka.spark.sink import (
        CykafkaArrowWriter,
        CykafkaStreamRowWriter,
        _arrow_columns,
        _row_columns,
        _timestamp_ms_list,
        write_task,
    )
    from cykafka.spark.source import (
        CykafkaReader,
        CykafkaStreamReader,
        _Offsets,
        read_range,
        source_schema,
    )

_HOMES: dict[str, str] = {name: module for module, names in (  # name -> the module it loads from
    ("cykafka.producer", ("Producer",)),
    ("cykafka.spark.clients", ("CONSUMERS", "PRODUCERS", "ClientCache", "ProducerCache")),
    ("cykafka.spark.datasource", ("CykafkaDataSource", "local_session", "register")),
    ("cykafka.spark.exactly_once", ("TaskIdentity", "complete_transactions")),
    ("cykafka.spark.plan", ("EOS_TRANSACTION_TIMEOUT_MS", "SINK_OPTIONS", "CykafkaCommitMessage", "DeliveryError",
                            "PreparedTransaction", "SinkPlan", "SinkSchemaError", "plan_sink")),
    ("cykafka.spark.sink", ("CykafkaArrowWriter", "CykafkaStreamRowWriter", "_arrow_columns", "_row_columns",
                            "_timestamp_ms_list", "write_task")),
    ("cykafka.spark.source", ("CykafkaReader", "CykafkaStreamReader", "_Offsets", "read_range", "source_schema")),
) for name in names}

__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())

__all__ = [
    "CONSUMERS", "EOS_TRANSACTION_TIMEOUT_MS", "PRODUCERS", "SINK_OPTIONS", "ClientCache", "CykafkaArrowWriter",
    "CykafkaCommitMessage", "CykafkaDataSource", "CykafkaReader", "CykafkaStreamReader", "CykafkaStreamRowWriter",
    "DeliveryError", "PreparedTransaction", "Producer", "ProducerCache", "SinkPlan", "SinkSchemaError",
    "TaskIdentity", "_Offsets", "_arrow_columns", "_row_columns", "_timestamp_ms_list", "complete_transactions",
    "local_session", "plan_sink", "read_range", "register", "source_schema", "write_task",
]
