"""Spark's Kafka source schema as Arrow, spelled once: the columns `Consumer.poll_batch` returns (filled by the core's
ArrowBatchBuilder, which takes this schema) and the Spark data source declares and yields (its Spark StructType is
derived from this one: cykafka/spark/source.py).

As pyspark turns Spark's Kafka source schema into Arrow, every field nullable: key binary, value binary, topic string,
partition int32, offset int64, timestamp timestamp[us, tz=UTC], timestampType int32, and headers
list<element: struct<key: string, value: binary>> (null for a record without headers). pyarrow comes with the spark
extra: it is imported when the schema is first asked for.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from cykafka.errors import MissingDependencyError

if TYPE_CHECKING:
    import pyarrow


@cache
def kafka_source_schema(include_headers: bool = True) -> pyarrow.Schema:
    """The schema, with or without the headers column."""
    try:
        import pyarrow as pa
    except ImportError:
        raise MissingDependencyError("Arrow record batches need pyarrow: pip install 'cykafka[spark]'") from None
    fields: list[Any] = [
        pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(pa.field("element", header))))
    return pa.schema(fields)
