"""`cykafka.spark.register(spark)`: the Spark data source's public entry points (cykafka.adapters.spark owns them).
Needs the spark extra: pip install 'cykafka[spark]'."""

from cykafka.adapters.spark import (
    CykafkaDataSource,
    DeliveryError,
    ProducerCache,
    SinkSchemaError,
    local_session,
    register,
)

__all__ = ["CykafkaDataSource", "DeliveryError", "ProducerCache", "SinkSchemaError", "local_session", "register"]
