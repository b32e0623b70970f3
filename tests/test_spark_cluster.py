"""format("cykafka") on a real Spark standalone cluster (a master and 2 workers, each its own JVM, started with
pyspark's sbin/spark-daemon.sh on 127.0.0.1): a write and a read, the tasks in the workers' Python processes, checked
against an independent consumer."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from spark_cluster import DRIVER_SESSION, StandaloneCluster

from cykafka.broker import EmbeddedBroker
from cykafka.verify import read_back

pytestmark = [pytest.mark.slow, pytest.mark.broker]

DRIVER = DRIVER_SESSION + """
frame = spark.range(0, PARAMS["rows"], numPartitions=4).select(
    sf.col("id").cast("string").cast("binary").alias("key"),
    sf.concat(sf.lit("value-"), sf.col("id").cast("string")).cast("binary").alias("value"))
(frame.write.format("cykafka").option("kafka.bootstrap.servers", PARAMS["bootstrap"])
 .option("topic", PARAMS["topic"]).mode("append").save())
read = (spark.read.format("cykafka").option("kafka.bootstrap.servers", PARAMS["bootstrap"])
        .option("subscribe", PARAMS["topic"]).option("minPartitions", "6").load())
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
summary = read.agg(sf.count("*").alias("rows"), sf.countDistinct("value").alias("distinct")).first()
print(json.dumps({"rows": summary["rows"], "distinct": summary["distinct"], "read_tasks": read.rdd.getNumPartitions(),
                  "executors": executors}))
spark.stop()
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    standalone = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), workers=2).start()
    try:
        yield standalone
    finally:
        standalone.stop()


@pytest.mark.broker_only("kafka", reason="a standalone cluster tests how Spark spreads the work; the brokers' "
                          "differences are tested in local mode")
def test_write_and_read_on_a_standalone_cluster(cluster: StandaloneCluster, broker: EmbeddedBroker,
                                                tmp_path: Path) -> None:
    topic = f"cluster-{uuid.uuid4().hex[:8]}"
    rows = 20_000
    result = cluster.run_job(DRIVER, bootstrap=broker.bootstrap_servers, topic=topic, rows=rows)
    assert result["rows"] == result["distinct"] == rows, result  # every row read once by the cluster's tasks
    assert result["read_tasks"] >= 6 and result["executors"] == 2, result  # one executor per worker JVM
    records = read_back(broker.bootstrap_servers, topic)  # and what the cluster wrote, seen by another client
    assert sorted(r.value for r in records) == sorted(b"value-%d" % i for i in range(rows))
    assert all(r.key == r.value[len(b"value-"):] for r in records if r.value)
