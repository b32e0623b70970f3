"""`format("cykafka")`: the Data Source Spark registers (reads and writes, batch and streaming), and a local
SparkSession that has it.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import datasource as ds
from pyspark.sql.types import StructType

from cykafka.errors import ConfigError
from cykafka.spark.plan import SOURCE_NAME, plan_sink
from cykafka.spark.source import CykafkaReader, CykafkaStreamReader, source_schema
from cykafka.spark.source_options import (
    parse_source_options,
    wants_headers,
)

log = logging.getLogger("cykafka.spark")


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
        from cykafka.spark.sink import writer  # the sink's modules (the producer's too) only where a query writes

        return writer(plan)

    def streamWriter(self, schema: StructType, overwrite: bool) -> ds.DataSourceStreamWriter:
        # overwrite means output mode "complete": like Spark's Kafka sink, each micro-batch's rows are appended
        from cykafka.spark.sink import stream_writer

        return stream_writer(plan_sink(self.options, schema))


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


__all__ = ["CykafkaDataSource", "local_session", "register"]

