"""Exactly-once writes (cykafka.delivery=exactly-once; docs/spark.md, "Exactly-once writes"): each task writes in a
Kafka transaction of its own producer, whose transactional.id is the task's (a retried attempt fences the old one),
and prepares it; the driver commits (or aborts) every task's transaction, oldest first. Streaming records the
micro-batch inside the same transaction, so a replayed micro-batch whose transaction committed is skipped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pyspark import TaskContext
from pyspark.sql import datasource as ds

from cykafka.admin import Admin
from cykafka.config import ADMIN_KEYS, ProducerConfig
from cykafka.errors import KafkaError
from cykafka.producer import Producer
from cykafka.spark.plan import (
    BATCH_ID_PROPERTY,
    EXACTLY_ONCE,
    QUERY_ID_PROPERTY,
    CykafkaCommitMessage,
    PreparedTransaction,
    SinkPlan,
)

log = logging.getLogger("cykafka.spark")


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
    partition 0 of a topic the task wrote), so a replay of a micro-batch whose transaction committed is skipped.

    start() begins it on a thread of its own while the task waits for Spark's first batch (the producer built,
    init_transactions, the replay check: tens of ms per task); begun() waits for that. A task that ends without
    rows does not wait: close() leaves the thread to close its producer when it is done."""

    def __init__(self, plan: SinkPlan, task: TaskIdentity) -> None:
        self.plan, self.task = plan, task
        self.producer: Producer | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._outcome: tuple[Producer | None, BaseException | None] | None = None  # begin()'s, once it is done
        self._abandoned = False  # closed before begin() was done: the thread closes the producer

    def start(self) -> None:
        """begin() on a thread of its own; begun() gets its outcome."""
        self._thread = threading.Thread(target=self._begin_in_background, daemon=True,
                                        name=f"cykafka-begin-{self.task.transactional_id}")
        self._thread.start()

    def _begin_in_background(self) -> None:
        outcome: tuple[Producer | None, BaseException | None]
        try:
            outcome = (self.begin(), None)
        except BaseException as e:  # raised in the task by begun()
            outcome = (None, e)
        with self._lock:
            self._outcome = outcome
            abandoned = self._abandoned
        if abandoned:
            self._close_producer()

    def begun(self) -> Producer | None:
        """The outcome of start()'s begin(): its producer, None for a replayed micro-batch, or its error raised."""
        if self._thread is None:
            return self.begin()
        self._thread.join()
        assert self._outcome is not None
        producer, error = self._outcome
        if error is not None:
            raise error
        return producer

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
        """Leaves a prepared transaction open for the driver; aborts one that was not prepared (Java's close). A
        begin() still running on start()'s thread closes its producer itself when it is done."""
        with self._lock:
            if self._thread is not None and self._outcome is None:
                self._abandoned = True
                return
        self._close_producer()

    def _close_producer(self) -> None:
        if self.producer is not None:
            self.producer.close(self.plan.flush_timeout_ms / 1000)



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


