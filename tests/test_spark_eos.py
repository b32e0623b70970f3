"""Exactly-once Spark writes (`cykafka.delivery=exactly-once`, issue 18): a Python worker killed mid-write, a zombie
attempt writing after it was fenced, a streaming driver killed between the Kafka commit and Spark's checkpoint, and
the option's check. What is in Kafka is checked record by record by two readers that apply the commit/abort markers
themselves (Tansu sends no aborted-transaction list): cykafka's Consumer with isolation.level=read_committed, and
raw Fetches decoded by kafka-python's DefaultRecordBatch with the markers applied here."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import pyarrow as pa
from pyspark.sql import functions as sf
from pyspark.sql.types import BinaryType, StructField, StructType

from cykafka import spark as sink
from cykafka.broker import EmbeddedBroker
from cykafka.consumer import Consumer
from cykafka.errors import ConfigError, KafkaError
from cykafka.ports import TopicPartition

PARTITIONS = 4  # Tansu auto-creates topics with 4 partitions


def _fresh(name: str) -> str:
    return f"eos-{name}-{uuid.uuid4().hex[:8]}"


# -- the independent readers --------------------------------------------------------------------------------------


def committed_by_consumer(bootstrap: str, topic: str) -> list[bytes]:
    """Every value a read_committed cykafka Consumer sees (assign mode, to the Fetch high watermark)."""
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    values: list[bytes] = []
    with Consumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(tps)
        end = consumer.end_offsets(tps)
        for _ in range(600):
            if all(consumer.position(tp) >= end[tp] for tp in tps):
                return sorted(values)
            values += [r.value for r in consumer.poll(0.2) if r.value is not None]
    raise AssertionError(f"{topic}: the read_committed consumer did not reach {end}")


def decoded_by_kafka_python(bootstrap: str, topic: str) -> tuple[list[bytes], int]:
    """(values of committed transactions and non-transactional batches, every data record in the log): raw
    Fetches decoded by kafka-python, each transactional batch held until its producer's COMMIT or ABORT marker."""
    from kafka.record.memory_records import MemoryRecords
    from test_fetch_decode import raw_fetch

    committed: list[bytes] = []
    in_log = 0
    for partition in range(PARTITIONS):
        pending: dict[int, list[bytes]] = {}
        position = 0
        for _ in range(1000):
            entry = raw_fetch(bootstrap, topic, partition, position)
            records = MemoryRecords(entry["records"] or b"")
            while (batch := records.next_batch()) is not None:
                if batch.is_control_batch:
                    (marker,) = list(batch)
                    kept = pending.pop(batch.producer_id, [])
                    if marker.commit:
                        committed += kept
                else:
                    values = [record.value for record in batch]
                    in_log += len(values)
                    target = pending.setdefault(batch.producer_id, []) if batch.is_transactional else committed
                    target += values
                position = batch.next_offset
            if position >= entry["high_watermark"]:
                break
        else:
            raise AssertionError(f"{topic}-{partition}: kafka-python did not reach the high watermark")
    return sorted(committed), in_log


SETTLE = b"settle"


def settle(bootstrap: str, topic: str) -> None:
    """Tansu's last stable offset can stay at the start of a transaction that followed one aborted by
    init_transactions while others were open, until the next transaction on the partition completes (measured:
    every transaction committed, the LSO still behind): one committed transaction with a record in each partition
    moves it on. (Kafka needs nothing of the kind.)"""
    with sink.Producer({"bootstrap.servers": bootstrap, "transactional.id": f"settle-{topic}"}) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for partition in range(PARTITIONS):
            producer.send(topic, SETTLE, partition=partition)
        producer.commit_transaction()


def exactly_once(bootstrap: str, topic: str, expected: list[bytes]) -> int:
    """Both readers see every expected value once, nothing else; returns the data records in the log."""
    settle(bootstrap, topic)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with Consumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as committed, \
            Consumer({"bootstrap.servers": bootstrap}) as uncommitted:
        assert committed.end_offsets(tps) == uncommitted.end_offsets(tps), "a transaction is still open"
    by_consumer = [v for v in committed_by_consumer(bootstrap, topic) if v != SETTLE]
    by_kafka_python, in_log = decoded_by_kafka_python(bootstrap, topic)
    by_kafka_python = [v for v in by_kafka_python if v != SETTLE]
    in_log -= PARTITIONS
    assert by_consumer == by_kafka_python
    assert len(by_consumer) == len(expected) and by_consumer == sorted(expected), (
        f"{len(by_consumer)} committed records, {len(set(by_consumer))} distinct, {len(expected)} expected")
    return in_log


# -- the option ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "message"), [
    ({"cykafka.delivery": "exactly_once"}, r"option cykafka.delivery must be one of at-least-once, exactly-once, "
                                           r"got 'exactly_once'"),
    ({"cykafka.delivery": "exactly-once", "kafka.transactional.id": "mine"},
     "option kafka.transactional.id cannot be set with cykafka.delivery=exactly-once"),
    ({"cykafka.delivery": "exactly-once", "kafka.enable.idempotence": "false"}, "idempotence"),
])
def test_the_delivery_option_is_checked_on_the_driver(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        sink.plan_sink({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t", **options},
                       StructType([StructField("value", BinaryType())]))


def test_the_delivery_option_fails_the_write_before_any_task(spark: Any, tmp_path: Path) -> None:
    frame = spark.range(4).select(sf.col("id").cast("string").alias("value"))
    with pytest.raises(Exception, match=r"cykafka\.delivery must be one of at-least-once, exactly-once"):
        (frame.write.format("cykafka").option("kafka.bootstrap.servers", "127.0.0.1:1").option("topic", "t")
         .option("cykafka.delivery", "twice").option("cykafka.test.task_report_dir", str(tmp_path))
         .mode("append").save())
    assert not list(tmp_path.iterdir()), "no task ran"


def test_plans_default_to_at_least_once_and_batch_writers_get_a_job_id() -> None:
    schema = StructType([StructField("value", BinaryType())])
    options = {"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "t"}
    assert sink.plan_sink(options, schema).delivery == "at-least-once"
    writers = [sink.CykafkaDataSource({**options, "cykafka.delivery": "Exactly-Once"}).writer(schema, False)
               for _ in range(2)]
    plans = [w.plan for w in writers]  # type: ignore[attr-defined]
    assert all(p.exactly_once and p.write_id for p in plans) and plans[0].write_id != plans[1].write_id
    assert dict(plans[0].producer_config)["transaction.timeout.ms"] == str(sink.EOS_TRANSACTION_TIMEOUT_MS)


# -- a zombie attempt ---------------------------------------------------------------------------------------------


def _values(prefix: str, count: int) -> list[bytes]:
    return [b"%s-%d" % (prefix.encode(), i) for i in range(count)]


def _batch(values: list[bytes]) -> pa.RecordBatch:
    return pa.record_batch({"value": pa.array(values, type=pa.binary())})


def _plan(bootstrap: str, topic: str) -> sink.SinkPlan:
    """An exactly-once batch write's plan, as writer() makes it on the driver (with a job id)."""
    schema = StructType([StructField("value", BinaryType())])
    writer = sink.CykafkaDataSource({"kafka.bootstrap.servers": bootstrap, "topic": topic, "kafka.linger.ms": "0",
                                     "cykafka.delivery": "exactly-once", "cykafka.flush.timeout.ms": "5000"}
                                    ).writer(schema, False)
    plan: sink.SinkPlan = writer.plan  # type: ignore[attr-defined]
    return plan


def test_a_task_without_rows_does_not_wait_for_its_transaction_to_begin() -> None:
    """Each exactly-once task begins its transaction on a thread while Spark hands over the first batch; a task that
    gets no rows returns at once and leaves that thread to close its producer (here the broker is unreachable, so the
    begin would wait kafka.max.block.ms)."""
    schema = StructType([StructField("value", BinaryType())])
    writer = sink.CykafkaDataSource({"kafka.bootstrap.servers": "127.0.0.1:1", "topic": "nowhere",
                                     "kafka.max.block.ms": "3000", "cykafka.delivery": "exactly-once"}
                                    ).writer(schema, False)
    plan: sink.SinkPlan = writer.plan  # type: ignore[attr-defined]
    started_s = time.monotonic()
    message = sink.write_task(plan, [_batch([])], "arrow", sink.TaskIdentity(0, 0, plan.write_id))
    assert time.monotonic() - started_s < 2
    assert (message.rows, message.transaction, message.producer) == (0, None, "none")


@pytest.mark.broker
def test_a_fenced_zombie_attempt_commits_nothing(broker: EmbeddedBroker) -> None:
    """Attempt 0 of a task writes a batch; Spark gives up on it and attempt 1 runs to the end (its
    init_transactions fences attempt 0 and aborts what it wrote); attempt 0 then goes on writing: its write fails,
    and a message it had prepared earlier cannot be committed either. Only attempt 1's rows are visible."""
    bootstrap = broker.bootstrap_servers
    topic = _fresh("zombie")
    plan = _plan(bootstrap, topic)
    zombie, retry = (sink.TaskIdentity(0, attempt, plan.write_id) for attempt in (0, 1))
    retried: dict[str, sink.CykafkaCommitMessage] = {}

    def zombie_batches() -> Any:
        yield _batch(_values("zombie", 100))
        _await_records_in_log(bootstrap, topic, 100)  # the zombie's first rows are in the log (uncommitted)
        retried["message"] = sink.write_task(plan, [_batch(_values("retry", 100))], "arrow", retry)
        yield _batch(_values("zombie-late", 100))

    with pytest.raises(KafkaError):
        sink.write_task(plan, zombie_batches(), "arrow", zombie)
    message = retried["message"]
    assert message.transaction is not None and message.attempt == 1
    sink.complete_transactions(plan, [message], commit=True, what="the write")
    # a zombie that had prepared before being fenced: its transaction is aborted, committing it fails
    prepared_zombie = sink.write_task(plan, [_batch(_values("prepared-zombie", 10))], "arrow", zombie)
    fencer = sink.write_task(plan, [_batch(_values("fencer", 10))], "arrow", retry)
    with pytest.raises(KafkaError, match="0 of 1 task transactions had committed"):
        sink.complete_transactions(plan, [prepared_zombie], commit=True, what="the zombie's write")
    sink.complete_transactions(plan, [fencer], commit=False, what="the fencer's write")
    in_log = exactly_once(bootstrap, topic, _values("retry", 100))
    assert in_log == 100 + 100 + 10 + 10, "the zombie's and the fencer's rows are in the log, aborted"


def _await_records_in_log(bootstrap: str, topic: str, count: int) -> None:
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        for _ in range(200):
            if sum(consumer.end_offsets(tps).values()) >= count:
                return
            time.sleep(0.05)
    raise AssertionError(f"{count} records did not reach {topic}")


@pytest.mark.broker
def test_abort_aborts_prepared_transactions_and_fences_failed_partitions(broker: EmbeddedBroker) -> None:
    """A failed job: partition 0's task prepared, partition 1's task died with its transaction open (its message is
    None). abort() aborts the first and fences the second (init_transactions aborts what it left open): nothing is
    visible, and read_committed readers are not held back until transaction.timeout.ms."""
    bootstrap = broker.bootstrap_servers
    topic = _fresh("abort")
    plan = _plan(bootstrap, topic)
    done = sink.write_task(plan, [_batch(_values("done", 50))], "arrow", sink.TaskIdentity(0, 0, plan.write_id))
    with sink.Producer({"bootstrap.servers": bootstrap,
                        "transactional.id": sink.TaskIdentity(1, 0, plan.write_id).transactional_id}) as dead:
        dead.init_transactions()
        dead.begin_transaction()
        dead.send_batch(topic, _values("dead", 50))
        dead.prepare_transaction()  # close() now leaves it open, as a killed worker would
    sink.complete_transactions(plan, [done, None], commit=False, what="the write")
    assert exactly_once(bootstrap, topic, []) == 100


@pytest.mark.broker
def test_a_transaction_older_than_its_timeout_is_not_committed(broker: EmbeddedBroker) -> None:
    """The driver sees that the oldest task transaction was prepared longer ago than transaction.timeout.ms (the
    coordinator has aborted it): it commits none of the write's transactions and says why."""
    bootstrap = broker.bootstrap_servers
    topic = _fresh("expired")
    plan = _plan(bootstrap, topic)
    old, fresh = (sink.write_task(plan, [_batch(_values(f"p{p}", 10))], "arrow", sink.TaskIdentity(p, 0, plan.write_id))
                  for p in (0, 1))
    assert old.transaction is not None
    old.transaction = dataclasses.replace(old.transaction, prepared_ms=old.transaction.prepared_ms - 900_000)
    with pytest.raises(KafkaError, match=r"past kafka.transaction.timeout.ms \(900000\), .*; nothing was committed"):
        sink.complete_transactions(plan, [old, fresh], commit=True, what="the write")
    assert exactly_once(bootstrap, topic, []) == 20


def _message(partition: int, prepared_ms: int) -> sink.CykafkaCommitMessage:
    return sink.CykafkaCommitMessage(partition, 0, 1, {}, "arrow", 0, "p", sink.PreparedTransaction(
        f"w-{partition}", 100 + partition, 0, prepared_ms), write_id="w")


def test_the_driver_ends_the_tasks_transactions_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver commits the tasks' transactions oldest first (the first to reach transaction.timeout.ms), in
    whatever order Spark hands it the messages, and the age check reads the oldest one: an expired transaction
    listed after a fresh one still stops the commit (a mutant keeping the messages' order committed it)."""
    ended: list[tuple[str, bool]] = []

    class Completer:
        def __init__(self, config: Any) -> None:
            pass

        def __enter__(self) -> Completer:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def complete_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                                 timeout_s: float) -> None:
            ended.append((transactional_id, commit))

    # the module that makes the completer (cykafka.spark's `exactly_once` attribute is a function of that name)
    monkeypatch.setattr(importlib.import_module("cykafka.spark.exactly_once"), "Producer", Completer)
    plan = _plan("127.0.0.1:1", "t")
    now_ms = time.time_ns() // 1_000_000
    sink.complete_transactions(plan, [_message(0, now_ms - 10), _message(1, now_ms - 30), _message(2, now_ms - 20)],
                               commit=True, what="the write")
    assert ended == [("w-1", True), ("w-2", True), ("w-0", True)]
    ended.clear()
    with pytest.raises(KafkaError, match=r"prepared \d+ ms ago, past kafka.transaction.timeout.ms"):
        sink.complete_transactions(plan, [_message(0, now_ms - 10), _message(1, now_ms - 900_000)], commit=True,
                                   what="the write")
    assert ended == [("w-1", False), ("w-0", False)]  # nothing committed, the oldest aborted first


@pytest.mark.broker
def test_a_replayed_micro_batch_whose_transaction_committed_is_skipped(broker: EmbeddedBroker) -> None:
    """The exactly-once streaming replay skip without Spark (the slow test kills a streaming driver): a task of
    micro-batch 1 commits; the same task of micro-batch 1 again (Spark's replay after a driver died between the
    Kafka commit and its checkpoint) writes nothing and says skipped, and so does micro-batch 0's; micro-batch 2's
    writes."""
    bootstrap = broker.bootstrap_servers
    topic = _fresh("replay")
    plan = dataclasses.replace(_plan(bootstrap, topic), write_id=None)

    def task(batch_id: int, name: str) -> sink.CykafkaCommitMessage:
        identity = sink.TaskIdentity(0, 0, f"cykafka-query-{topic}", batch_id)
        message = sink.write_task(plan, [_batch(_values(name, 10))], "arrow", identity)
        sink.complete_transactions(plan, [message], commit=True, what=f"micro-batch {batch_id}")
        return message

    first = task(1, "batch-1")
    assert not first.skipped and first.transaction is not None
    for batch_id in (1, 0):
        replay = task(batch_id, f"replay-{batch_id}")
        assert replay.skipped and replay.transaction is None and replay.rows == 0, replay
    third = task(2, "batch-2")
    assert not third.skipped and third.rows == 10
    exactly_once(bootstrap, topic, _values("batch-1", 10) + _values("batch-2", 10))


# -- a Python worker killed during a batch write -------------------------------------------------------------------


@pytest.mark.broker
def test_a_killed_python_worker_writes_nothing_twice(spark: Any, broker: EmbeddedBroker, tmp_path: Path) -> None:
    """The first task to claim the marker SIGKILLs its Python worker after sending its rows into its transaction;
    Spark retries the task, whose init_transactions aborts what the dead one left open; the job commits: every row
    once for read_committed readers, the dead attempt's rows in the log, aborted."""
    bootstrap = broker.bootstrap_servers
    topic = _fresh("kill")
    rows = 8_000
    reports = tmp_path / "reports"
    reports.mkdir()
    frame = spark.range(0, rows, numPartitions=4).select(sf.col("id").cast("string").cast("binary").alias("value"))
    (frame.write.format("cykafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
     .option("cykafka.delivery", "exactly-once").option("cykafka.test.kill_once_marker", str(tmp_path / "kill"))
     .option("cykafka.test.task_report_dir", str(reports)).mode("append").save())
    in_log = exactly_once(bootstrap, topic, [b"%d" % i for i in range(rows)])
    assert in_log == rows + rows // 4, "the killed attempt's rows are in the log, aborted"
    tasks = [json.loads(p.read_text()) for p in reports.iterdir()]
    assert sorted(t["spark_partition"] for t in tasks) == [0, 1, 2, 3]
    assert any(t["attempt"] == 1 for t in tasks), "the killed task was retried"
    assert all(t["transaction"] for t in tasks)


# -- a streaming driver killed between the Kafka commit and the checkpoint ----------------------------------------

STREAM_DRIVER = """
import json, os, sys
os.environ["CYKAFKA_TEST_DRIVER_PGID"] = str(os.getpgid(0))
from cykafka.spark import local_session

p = json.loads(sys.argv[1])
spark = local_session("local[2]", "cykafka-eos-stream", conf={"spark.sql.shuffle.partitions": "2"})
source = (spark.readStream.format("cykafka").option("kafka.bootstrap.servers", p["bootstrap"])
          .option("subscribe", p["input"]).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", str(p["per_batch"])).load())
query = (source.select("value").writeStream.format("cykafka").option("kafka.bootstrap.servers", p["bootstrap"])
         .option("topic", p["output"]).option("cykafka.delivery", "exactly-once")
         .option("checkpointLocation", p["checkpoint"]).option("cykafka.test.task_report_dir", p["reports"])
         .option("cykafka.test.kill_driver_after_commit", p["kill_marker"]).start())
query.processAllAvailable()
query.stop()
print(json.dumps({"query_id": str(query.id)}))
spark.stop()
"""


def _run_driver(params: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    process = subprocess.Popen([sys.executable, "-c", STREAM_DRIVER, json.dumps(params)], cwd=params["checkpoint"],
                               start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=300)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever the driver left behind (JVM, Python workers)
        except ProcessLookupError:
            pass
        process.wait(30)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.slow
@pytest.mark.broker
@pytest.mark.broker_only("kafka", reason="two driver runs (~80 s) test the replay skip, which is the client's logic on "
                         "any broker; Tansu's read_committed path is tested by the other exactly-once tests here")
def test_a_streaming_driver_killed_after_the_kafka_commit_writes_nothing_twice(broker: EmbeddedBroker,
                                                                                tmp_path: Path) -> None:
    """Micro-batch 1's commit() commits its transactions, then SIGKILLs the driver's process group before Spark
    writes the batch to the checkpoint's commit log. The restarted query replays micro-batch 1: its tasks find the
    batch recorded in their groups and skip it. Every input row is in the output once, and in the log once."""
    bootstrap = broker.bootstrap_servers
    input_topic, output = _fresh("stream-in"), _fresh("stream-out")
    rows = 1_200
    with sink.Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(rows):
            producer.send(input_topic, b"row-%d" % i, partition=i % PARTITIONS)
    checkpoint, reports = tmp_path / "checkpoint", tmp_path / "reports"
    checkpoint.mkdir()
    reports.mkdir()
    params = {"bootstrap": bootstrap, "input": input_topic, "output": output, "per_batch": rows // 2,
              "checkpoint": str(checkpoint), "reports": str(reports), "kill_marker": str(tmp_path / "kill")}
    killed = _run_driver(params)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert (checkpoint / "offsets" / "1").exists() and not (checkpoint / "commits" / "1").exists(), (
        "the driver died between the Kafka commit of micro-batch 1 and its checkpoint commit")
    first_run = {p.name for p in reports.iterdir()}
    restarted = _run_driver(params)
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    in_log = exactly_once(bootstrap, output, _values("row", rows))
    assert in_log == rows, "nothing was written twice, not even aborted"
    replayed = [json.loads(p.read_text()) for p in reports.iterdir() if p.name not in first_run]
    skipped = [t for t in replayed if t["skipped"]]
    assert skipped and all(not t["transaction"] for t in skipped), "the replayed micro-batch's tasks skipped"


# -- on a standalone cluster --------------------------------------------------------------------------------------

CLUSTER_DRIVER = """
from pyspark.sql import SparkSession, functions as sf
from cykafka.spark import register

spark = (SparkSession.builder.master(PARAMS["master"]).appName("cykafka-eos-cluster-test")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false").config("spark.executor.memory", "512m")
         .config("spark.task.maxFailures", "4").getOrCreate())
register(spark)
frame = spark.range(0, PARAMS["rows"], numPartitions=4).select(
    sf.col("id").cast("string").cast("binary").alias("value"))
(frame.write.format("cykafka").option("kafka.bootstrap.servers", PARAMS["bootstrap"]).option("topic", PARAMS["topic"])
 .option("cykafka.delivery", "exactly-once").option("cykafka.test.kill_once_marker", PARAMS["kill_marker"])
 .option("cykafka.test.task_report_dir", PARAMS["reports"]).mode("append").save())
print(json.dumps({"executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1}))
spark.stop()
"""


@pytest.mark.broker_only("kafka", reason="a standalone cluster tests how Spark spreads the work; the brokers' "
                          "differences are tested in local mode")
@pytest.mark.slow
@pytest.mark.broker
def test_exactly_once_on_a_standalone_cluster(broker: EmbeddedBroker, tmp_path: Path) -> None:
    """The same write on a master and 2 worker JVMs: a Python worker of an executor SIGKILLs itself, Spark retries
    the task on the cluster, every row is committed once."""
    from spark_cluster import StandaloneCluster

    topic = _fresh("cluster")
    rows = 8_000
    reports = tmp_path / "reports"
    reports.mkdir()
    cluster = StandaloneCluster(tmp_path / "cluster", workers=2).start()
    try:
        result = cluster.run_job(CLUSTER_DRIVER, bootstrap=broker.bootstrap_servers, topic=topic, rows=rows,
                                 kill_marker=str(tmp_path / "kill"), reports=str(reports))
    finally:
        cluster.stop()
    assert result["executors"] == 2, result
    tasks = [json.loads(p.read_text()) for p in reports.iterdir()]
    assert sorted(t["spark_partition"] for t in tasks) == [0, 1, 2, 3] and any(t["attempt"] for t in tasks)
    in_log = exactly_once(broker.bootstrap_servers, topic, [b"%d" % i for i in range(rows)])
    assert in_log == rows + rows // 4, "the killed attempt's rows are in the log, aborted"
