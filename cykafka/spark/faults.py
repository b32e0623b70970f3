"""Test kill switches (the cykafka.test.* options), kept off the production paths: a plan with none of them gets the
plain writers (sink.py); one with them (`SinkPlan.faults`) gets these subclasses, which add what a test injects
around the same task and commit code: a task that fails (fail_once_marker) or SIGKILLs its Python worker
(kill_once_marker) after its first batch, a streaming driver killed between the Kafka commit and Spark's checkpoint
(kill_driver_after_commit), and each successful task's commit message written as JSON (task_report_dir).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import Row
from pyspark.sql import datasource as ds

from cykafka.producer import Producer
from cykafka.spark.exactly_once import TaskIdentity
from cykafka.spark.plan import CykafkaCommitMessage, DeliveryError, Faults, SinkPlan
from cykafka.spark.sink import (
    HAS_STREAM_ARROW_WRITER,
    AfterBatch,
    CykafkaArrowWriter,
    CykafkaStreamRowWriter,
    StreamArrowWriter,
    _chunks,
    write_task,
)


def _claim(path: str | None) -> bool:
    """True for the first process to create the marker file path (None: never)."""
    if not path:
        return False
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _task_hook(plan: SinkPlan, faults: Faults) -> AfterBatch | None:
    """A task's hook after its first batch, if it claimed a marker (claimed at the task's start): flush, then fail
    (the rows are in Kafka, the task failed) or SIGKILL the Python worker."""
    fail, kill = _claim(faults.fail_once_marker), _claim(faults.kill_once_marker)
    if not (fail or kill):
        return None

    def after_batch(producer: Producer, task: TaskIdentity, sent: int) -> None:
        producer.flush(plan.flush_timeout_ms / 1000)
        if fail:
            raise DeliveryError(f"cykafka.test.fail_once_marker: injected failure of task {task.spark_partition} "
                                f"after {sent} rows")
        os.kill(os.getpid(), signal.SIGKILL)

    return after_batch


def _write(plan: SinkPlan, batches: Any, encoding: str) -> CykafkaCommitMessage:
    """write_task with the plan's faults: the hook, then the task report."""
    faults = plan.faults
    assert faults is not None
    message = write_task(plan, batches, encoding, after_batch=_task_hook(plan, faults))
    if faults.task_report_dir:
        name = f"task-{message.pid}-{message.spark_partition}-{message.attempt}-{time.time_ns()}.json"
        (Path(faults.task_report_dir) / name).write_text(message.to_json())
    return message


def _after_commit(plan: SinkPlan, batch_id: int) -> None:
    """kill_driver_after_commit: the driver dies between the Kafka commit and Spark's checkpoint."""
    assert plan.faults is not None
    if batch_id >= 1 and _claim(plan.faults.kill_driver_marker):
        os.killpg(int(os.environ["CYKAFKA_TEST_DRIVER_PGID"]), signal.SIGKILL)


class FaultyArrowWriter(CykafkaArrowWriter):
    def write(self, iterator: Iterator[Any]) -> CykafkaCommitMessage:
        return _write(self.plan, iterator, "arrow")


class FaultyStreamRowWriter(CykafkaStreamRowWriter):
    def write(self, iterator: Iterator[Row]) -> CykafkaCommitMessage:
        return _write(self.plan, _chunks(iterator), "rows")

    def commit(self, messages: list[ds.WriterCommitMessage | None], batchId: int) -> None:
        super().commit(messages, batchId)
        _after_commit(self.plan, batchId)


if HAS_STREAM_ARROW_WRITER:

    class FaultyStreamArrowWriter(StreamArrowWriter):  # type: ignore[misc]
        def write(self, iterator: Iterator[Any]) -> CykafkaCommitMessage:
            return _write(self.plan, iterator, "arrow")

        def commit(self, messages: list[ds.WriterCommitMessage | None], batchId: int) -> None:
            super().commit(messages, batchId)
            _after_commit(self.plan, batchId)


def writer(plan: SinkPlan) -> ds.DataSourceWriter:
    """The batch writer of a plan with faults."""
    return FaultyArrowWriter(plan)


def stream_writer(plan: SinkPlan) -> ds.DataSourceStreamWriter:
    """The streaming writer of a plan with faults (Arrow on pyspark >= 4.1, Rows before)."""
    chosen: ds.DataSourceStreamWriter = FaultyStreamArrowWriter(plan) if HAS_STREAM_ARROW_WRITER \
        else FaultyStreamRowWriter(plan)
    return chosen
