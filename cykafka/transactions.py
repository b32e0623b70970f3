"""Transactional requests (the request half of Java's TransactionManager) and a transactional call's outcome.

`TransactionRequests` queues InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn by
priority, one in flight at a time, and turns each answer into a decision of the core's TransactionManager (state
machine, producer id, partitions). Each request has a route (the request layer's: its transactional id's or group's
coordinator, or any broker); the coordinators are the request layer's one coordinator cache
(cykafka/requests/coordinators.py), whose lookups the Sender sends in the transactional slot, so a FindCoordinator
still holds back the other transactional requests and produce data, as Java's. The Sender sends what `next_request`
returns and calls `on_response`; the Producer's transaction methods enqueue work and wait on a
`TransactionalResult`. Every method that touches the manager runs with the producer lock held.

Transactions V1 or V2 (KIP-890 part 2): the core's `transaction_v2`, read from the transport's finalized features
(`transaction.version` >= 2) after InitProducerId and whenever a transaction completes, as Java's
maybeUpdateTransactionV2Enabled. V2 sends no AddPartitionsToTxn (Produce v12 adds the partitions) and no
AddOffsetsToTxn (TxnOffsetCommit v5 adds the group), and EndTxn v5's answer carries the producer id/epoch of the next
transaction; V1 caps EndTxn and TxnOffsetCommit at v4 (and the Sender Produce at v11), as Java's request builders.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from cykafka.config import ProducerConfig
from cykafka.core import TransactionManager, TransactionState
from cykafka.errors import (
    AuthenticationError,
    AuthorizationError,
    KafkaError,
    KafkaTimeoutError,
    NetworkError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionFatalError,
    TransactionStateError,
)
from cykafka.ports import TRANSACTION_VERSION, ClientResponse, FinalizedFeatures
from cykafka.ports.values import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition, TransactionInfo
from cykafka.protocol import Request
from cykafka.protocol.apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    COORDINATOR_GROUP,
    COORDINATOR_TRANSACTION,
    END_TXN,
    INIT_PRODUCER_ID,
    TXN_OFFSET_COMMIT,
)
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, error_info, kinds_of
from cykafka.requests.coordinators import Coordinators
from cykafka.requests.routes import ANY_BROKER, Coordinator, Route

log = logging.getLogger("cykafka.transactions")

# priorities: the producer id first, then partitions/offsets, EndTxn, an epoch bump last (a coordinator lookup, Java's
# priority 0, goes before all of them: the Sender sends it in the transactional slot when a request waits for it)
PRIORITY_INIT_PRODUCER_ID = 1
PRIORITY_ADD_PARTITIONS_OR_OFFSETS = 2
PRIORITY_END_TXN = 3
PRIORITY_EPOCH_BUMP = 4

ADD_PARTITIONS_RETRY_BACKOFF_MS = 20  # a first AddPartitionsToTxn meeting CONCURRENT_TRANSACTIONS (Java)
# the newest versions a transaction on Transactions V1 may use (the next ones act for AddPartitions/AddOffsetsToTxn or
# bump the epoch: KIP-890 part 2)
V1_MAX_PRODUCE_VERSION = 11
V1_MAX_END_TXN_VERSION = 4
V1_MAX_TXN_OFFSET_COMMIT_VERSION = 4

_E = ErrorCode


class TransactionalResult:
    """The outcome of one transactional operation; the caller waits, the sender thread completes it."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self.error: BaseException | None = None
        self._done = threading.Event()

    @property
    def is_completed(self) -> bool:
        return self._done.is_set()

    def done(self) -> None:
        self._done.set()

    def fail(self, error: BaseException) -> None:
        if not self._done.is_set():
            self.error = error
            self._done.set()

    def wait(self, timeout_s: float | None) -> None:
        """Returns once done; raises its error, or KafkaTimeoutError after `timeout_s` (the operation goes on: call
        the same method again to keep waiting for it)."""
        if not self._done.wait(timeout_s):
            raise KafkaTimeoutError(f"{self.operation} did not complete within {timeout_s} s; it is still in "
                                    f"progress: call it again to wait for it")
        if self.error is not None:
            raise self.error


# -- requests ---------------------------------------------------------------------------------------------------


class TxnHandler:
    """One transactional request: what to send, where, and what its answer means."""

    priority = PRIORITY_ADD_PARTITIONS_OR_OFFSETS
    coordinator_type: int | None = COORDINATOR_TRANSACTION  # None: any node (least loaded)
    is_end_txn = False

    def __init__(self, owner: TransactionRequests, operation: str, result: TransactionalResult | None = None,
                 coordinator_key: str | None = None) -> None:
        self.owner = owner
        self.result = result or TransactionalResult(operation)
        self.coordinator_key = coordinator_key if coordinator_key is not None else owner.transactional_id
        self.is_retry = False
        self.not_before_ms = 0
        self.waiting_since_ms: int | None = None
        self.awaiting_node_id: int | None = None  # goes once this node's connection is ready (no backoff)
        self.retry_backoff_ms = owner.config.retry_backoff_ms
        self.cancelled = False
        self.external = False  # complete_transaction(): not this producer's own transaction

    @property
    def manager(self) -> TransactionManager:
        return self.owner.manager

    @property
    def route(self) -> Route:
        """Where it goes: its coordinator (the transactional id's, or a group's), else any broker."""
        if self.coordinator_type is None or self.coordinator_key is None:
            return ANY_BROKER
        return Coordinator(self.coordinator_type, self.coordinator_key)

    def request(self) -> Request:
        raise NotImplementedError

    def handle(self, response: dict[str, Any]) -> None:
        """The decoded answer (cykafka.protocol's dict; a field its version lacks holds its default)."""
        raise NotImplementedError

    # -- outcomes (Java's TxnRequestHandler) --

    def fatal_error(self, error: KafkaError) -> None:
        self.result.fail(error)
        if not self.external and not self.manager.has_fatal_error:
            self.manager.transition_to_fatal_error(error)
            self.owner.fail_pending(error)

    def abortable_error(self, error: KafkaError) -> None:
        self.result.fail(error)
        if not self.external:
            self.manager.transition_to_abortable_error(error)

    def abortable_error_if_possible(self, error: KafkaError) -> None:
        self.result.fail(error)
        if not self.external:
            self.manager.abortable_error_if_possible(error)
            if self.manager.has_fatal_error:
                self.owner.fail_pending(error)

    def reenqueue(self) -> None:
        self.owner.retry(self, self.owner.now_ms)

    def lookup_coordinator_and_retry(self) -> None:
        self.owner.coordinator_moved(self.route)
        self.reenqueue()

    def handled_coordinator_or_fencing_error(self, code: int, what: str) -> bool:
        """The answers InitProducerId, AddOffsetsToTxn and EndTxn share: the coordinator moved or is busy (look it up
        again, or retry), the producer was fenced (fatal). False for any other code."""
        kinds = kinds_of(code)
        if kinds & ErrorKind.COORDINATOR_MOVED:
            self.lookup_coordinator_and_retry()
        elif kinds & ErrorKind.COORDINATOR_LOADING or code == _E.CONCURRENT_TRANSACTIONS:
            self.reenqueue()
        elif kinds & ErrorKind.FENCED:
            self.fatal_error(_fenced(what))
        else:
            return False
        return True

    def unexpected_error(self, code: int, what: str) -> None:
        self.fatal_error(TransactionFatalError(f"unexpected error in {what}: {_broker_error(code, what)}"))

    def describe(self) -> str:
        return type(self).__name__.lstrip("_")


def _fenced(what: str) -> ProducerFencedError:
    return ProducerFencedError(f"{what}: the producer was fenced by a newer one with the same transactional.id "
                               f"(PRODUCER_FENCED)", code=_E.PRODUCER_FENCED)


def _broker_error(code: int, what: str) -> KafkaError:
    return error_for(code, f"{what} failed")


def _abortable(code: int, what: str) -> TransactionAbortableError:
    return TransactionAbortableError(str(_broker_error(code, what)), code=code)


def _fatal(code: int, what: str) -> KafkaError:
    """The error that makes the producer fatal: the typed AuthorizationError for a denied transactional id or
    cluster operation (Java's), else a TransactionFatalError."""
    error = _broker_error(code, what)
    return error if isinstance(error, AuthorizationError) else TransactionFatalError(str(error), code=code)


class _InitProducerId(TxnHandler):
    def __init__(self, owner: TransactionRequests, is_epoch_bump: bool) -> None:
        super().__init__(owner, "InitProducerId")
        self.is_epoch_bump = is_epoch_bump
        manager = owner.manager
        self.producer_id = manager.producer_id if is_epoch_bump else -1
        self.producer_epoch = manager.producer_epoch if is_epoch_bump else -1
        self.priority = PRIORITY_EPOCH_BUMP if is_epoch_bump else PRIORITY_INIT_PRODUCER_ID
        if not manager.is_transactional:
            self.coordinator_type = None

    def request(self) -> Request:
        manager = self.manager
        timeout_ms = manager.transaction_timeout_ms if manager.is_transactional else 2**31 - 1
        return Request(INIT_PRODUCER_ID.key, {"transactional_id": manager.transactional_id,
                                              "transaction_timeout_ms": timeout_ms, "producer_id": self.producer_id,
                                              "producer_epoch": self.producer_epoch})

    def handle(self, response: dict[str, Any]) -> None:
        code = response["error_code"]
        if self.handled_coordinator_or_fencing_error(code, "InitProducerId"):
            return
        if code == _E.NONE:
            producer_id, producer_epoch = response["producer_id"], response["producer_epoch"]
            self.manager.initialized(producer_id, producer_epoch, self.is_epoch_bump)
            if self.manager.is_transactional and not self.is_epoch_bump:
                self.owner.read_transaction_version(on_initialization=True)
            log.info("producer id %s, epoch %s%s", producer_id, producer_epoch,
                     f" (transactional.id {self.manager.transactional_id})" if self.manager.is_transactional else "")
            self.result.done()
        elif self.is_epoch_bump and code == _E.UNKNOWN_SERVER_ERROR:
            # the broker cannot bump an epoch from the id it gave us (Tansu): a plain InitProducerId for the
            # transactional.id bumps it too; the transaction was already ended
            log.warning("the coordinator refused an epoch bump (UNKNOWN_SERVER_ERROR); re-initializing the "
                        "producer id instead")
            self.is_epoch_bump = False
            self.producer_id = self.producer_epoch = -1
            self.reenqueue()
        elif code in (_E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, _E.CLUSTER_AUTHORIZATION_FAILED):
            self.fatal_error(_fatal(code, "InitProducerId"))
        elif code == _E.TRANSACTION_ABORTABLE:
            self.abortable_error(_abortable(code, "InitProducerId"))
        else:
            self.unexpected_error(code, "InitProducerId")


class _AddPartitions(TxnHandler):
    def __init__(self, owner: TransactionRequests) -> None:
        super().__init__(owner, "AddPartitionsToTxn")
        manager = owner.manager
        self.partitions = manager.take_new_partitions()
        self.producer_id, self.producer_epoch = manager.producer_id, manager.producer_epoch

    def request(self) -> Request:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in self.partitions:
            by_topic.setdefault(topic, []).append(partition)
        assert self.manager.transactional_id is not None
        return Request(ADD_PARTITIONS_TO_TXN.key, {
            "v3_and_below_transactional_id": self.manager.transactional_id,
            "v3_and_below_producer_id": self.producer_id, "v3_and_below_producer_epoch": self.producer_epoch,
            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]})

    def handle(self, response: dict[str, Any]) -> None:
        self.retry_backoff_ms = self.owner.config.retry_backoff_ms
        errors = {(t["name"], p["partition_index"]): p["partition_error_code"]
                  for t in response["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}
        unauthorized: set[str] = set()
        failed = False
        for (topic, _), code in errors.items():
            if code == _E.NONE:
                continue
            kinds = kinds_of(code)
            if kinds & ErrorKind.COORDINATOR_MOVED:
                self.lookup_coordinator_and_retry()
                return
            if code == _E.CONCURRENT_TRANSACTIONS:
                if not self.manager.transaction_started:  # the previous transaction is still completing
                    self.retry_backoff_ms = ADD_PARTITIONS_RETRY_BACKOFF_MS
                self.reenqueue()
                return
            if kinds & ErrorKind.COORDINATOR_LOADING or code == _E.UNKNOWN_TOPIC_OR_PARTITION:
                self.reenqueue()
                return
            if kinds & ErrorKind.FENCED:
                self.fatal_error(_fenced("AddPartitionsToTxn"))
                return
            if kinds & ErrorKind.TXN_FATAL:
                self.fatal_error(_fatal(code, "AddPartitionsToTxn"))
                return
            if kinds & ErrorKind.TXN_ABORTABLE:
                self.abortable_error_if_possible(_abortable(code, "AddPartitionsToTxn"))
                return
            if code == _E.TOPIC_AUTHORIZATION_FAILED:
                unauthorized.add(topic)
            else:
                if code != _E.OPERATION_NOT_ATTEMPTED:
                    log.error("could not add %s to the transaction: %s", topic, _broker_error(code, "add"))
                failed = True
        answered = list(errors) or list(self.partitions)
        self.manager.partitions_not_added(answered)
        if unauthorized:
            self.abortable_error(TransactionAbortableError(f"not authorized to write to topics "
                                                           f"{sorted(unauthorized)} (TOPIC_AUTHORIZATION_FAILED)"))
        elif failed:
            self.abortable_error(TransactionAbortableError(f"could not add partitions to the transaction: "
                                                           f"{ {f'{t}-{p}': c for (t, p), c in errors.items()} }"))
        else:
            self.manager.partitions_added(answered)
            log.debug("added partitions %s to the transaction", answered)
            self.result.done()


class _AddOffsets(TxnHandler):
    def __init__(self, owner: TransactionRequests, offsets: dict[TopicPartition, OffsetAndMetadata],
                 group: ConsumerGroupMetadata) -> None:
        super().__init__(owner, "send_offsets_to_transaction")
        self.offsets = offsets
        self.group = group
        self.producer_id, self.producer_epoch = owner.manager.producer_id, owner.manager.producer_epoch

    def request(self) -> Request:
        assert self.manager.transactional_id is not None
        return Request(ADD_OFFSETS_TO_TXN.key, {
            "transactional_id": self.manager.transactional_id, "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch, "group_id": self.group.group_id})

    def handle(self, response: dict[str, Any]) -> None:
        code = response["error_code"]
        if self.handled_coordinator_or_fencing_error(code, "AddOffsetsToTxn"):
            return
        if code == _E.NONE:
            self.manager.mark_transaction_started()
            self.owner.enqueue(_TxnOffsetCommit(self.owner, self.result, self.offsets, self.group,
                                                self.producer_id, self.producer_epoch))
        elif code == _E.TRANSACTION_ABORTABLE:
            self.abortable_error(_abortable(code, "AddOffsetsToTxn"))
        elif kinds_of(code) & ErrorKind.TXN_ABORTABLE:
            self.abortable_error_if_possible(_abortable(code, "AddOffsetsToTxn"))
        elif code == _E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            self.fatal_error(_fatal(code, "AddOffsetsToTxn"))
        elif code == _E.GROUP_AUTHORIZATION_FAILED:
            self.abortable_error(_abortable(code, "AddOffsetsToTxn"))
        else:
            self.unexpected_error(code, "AddOffsetsToTxn")


class _TxnOffsetCommit(TxnHandler):
    coordinator_type = COORDINATOR_GROUP

    def __init__(self, owner: TransactionRequests, result: TransactionalResult,
                 offsets: dict[TopicPartition, OffsetAndMetadata], group: ConsumerGroupMetadata,
                 producer_id: int, producer_epoch: int) -> None:
        super().__init__(owner, "TxnOffsetCommit", result, coordinator_key=group.group_id)
        self.pending = dict(offsets)
        self.group = group
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        self.v2 = owner.manager.transaction_v2  # v5 adds the group's offsets to the transaction (no AddOffsetsToTxn)

    def request(self) -> Request:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), om in sorted(self.pending.items()):
            by_topic.setdefault(topic, []).append({
                "partition_index": partition, "committed_offset": om.offset,
                "committed_leader_epoch": om.leader_epoch, "committed_metadata": om.metadata})
        assert self.manager.transactional_id is not None
        g = self.group
        return Request(TXN_OFFSET_COMMIT.key, {
            "transactional_id": self.manager.transactional_id, "group_id": g.group_id,
            "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
            "generation_id": g.generation_id, "member_id": g.member_id, "group_instance_id": g.group_instance_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
            max_version=None if self.v2 else V1_MAX_TXN_OFFSET_COMMIT_VERSION)

    def handle(self, response: dict[str, Any]) -> None:
        reloaded = False
        for topic in response["topics"]:
            for p in topic["partitions"]:
                code = p["error_code"]
                kinds = kinds_of(code)
                tp = TopicPartition(topic["name"], p["partition_index"])
                if code == _E.NONE:
                    self.pending.pop(tp, None)
                elif kinds & ErrorKind.COORDINATOR_MOVED or code == _E.REQUEST_TIMED_OUT:
                    if not reloaded:
                        reloaded = True
                        self.owner.coordinator_moved(self.route)
                elif error_info(code).retriable:
                    # loading, an unknown topic, CONCURRENT_TRANSACTIONS (V2: the group joins the transaction while
                    # the previous one completes): retried at the same coordinator, as Java's
                    continue
                elif code in (_E.GROUP_AUTHORIZATION_FAILED, _E.FENCED_INSTANCE_ID, _E.TRANSACTION_ABORTABLE):
                    self.abortable_error(_abortable(code, "TxnOffsetCommit"))
                    break
                elif code in (_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION):
                    self.abortable_error(TransactionAbortableError(
                        f"transactional offset commit failed: the consumer group metadata does not match "
                        f"({_broker_error(code, 'TxnOffsetCommit')})"))
                    break
                elif kinds & ErrorKind.FENCED:
                    self.fatal_error(_fenced("TxnOffsetCommit"))
                    break
                else:
                    self.unexpected_error(code, "TxnOffsetCommit")
                    break
        if self.result.is_completed:
            self.pending.clear()
        elif not self.pending:
            self.result.done()
        else:
            self.reenqueue()


class _EndTxn(TxnHandler):
    priority = PRIORITY_END_TXN
    is_end_txn = True

    def __init__(self, owner: TransactionRequests, commit: bool, transactional_id: str | None = None,
                 producer_id: int | None = None, producer_epoch: int | None = None) -> None:
        key = transactional_id if transactional_id is not None else owner.transactional_id
        super().__init__(owner, f"EndTxn({'commit' if commit else 'abort'})", coordinator_key=key)
        self.commit = commit
        self.transactional_id = key
        manager = owner.manager
        self.producer_id = producer_id if producer_id is not None else manager.producer_id
        self.producer_epoch = producer_epoch if producer_epoch is not None else manager.producer_epoch
        self.v2 = manager.transaction_v2  # the version the transaction started with (v5 bumps the epoch)

    def request(self) -> Request:
        assert self.transactional_id is not None
        return Request(END_TXN.key, {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                                     "producer_epoch": self.producer_epoch, "committed": self.commit},
                       max_version=None if self.v2 else V1_MAX_END_TXN_VERSION)

    def handle(self, response: dict[str, Any]) -> None:
        code = response["error_code"]
        if self.handled_coordinator_or_fencing_error(code, "EndTxn"):
            return
        if code == _E.NONE:
            if not self.external:
                # v5 (V2): the producer id/epoch of the next transaction (-1 below v5; a V1 EndTxn may still end the
                # transaction that ran when the cluster moved to V2)
                self.manager.complete_transaction(response["producer_id"], response["producer_epoch"])
            self.result.done()
        elif code == _E.TRANSACTION_ABORTABLE:
            self.abortable_error(_abortable(code, "EndTxn"))
        elif kinds_of(code) & ErrorKind.TXN_FATAL:
            self.fatal_error(_fatal(code, "EndTxn"))
        elif kinds_of(code) & ErrorKind.TXN_ABORTABLE:
            self.abortable_error_if_possible(_abortable(code, "EndTxn"))
        else:
            self.unexpected_error(code, "EndTxn")


# -- the queue --------------------------------------------------------------------------------------------------


class TransactionRequests:
    """The transactional request queue; every method runs under the producer lock."""

    def __init__(self, manager: TransactionManager, config: ProducerConfig, coordinators: Coordinators,
                 finalized_features: Callable[[], FinalizedFeatures] = FinalizedFeatures) -> None:
        self.manager = manager
        self.finalized_features = finalized_features  # the transport's (V2 is read from transaction.version)
        self.config = config
        self.transactional_id = manager.transactional_id
        self.coordinators = coordinators  # the producer's coordinator cache (the transactional id's, groups')
        self.in_flight: TxnHandler | None = None
        self.pending_result: TransactionalResult | None = None
        self._queue: list[tuple[int, int, TxnHandler]] = []
        self._order = itertools.count()
        self.now_ms = 0  # of the answer being handled: retries back off from it

    # -- what the Producer decides, here in one place on the core's TransactionState (never on a state's name) --

    @property
    def in_transaction(self) -> bool:
        """A transaction is open and not completing: records may go in it, and a commit flushes them first."""
        return self.manager.state == TransactionState.IN_TRANSACTION

    def check_preparable(self) -> None:
        """prepare_transaction(): raises the transaction's error if it failed, TransactionStateError unless one is
        open."""
        self.manager.maybe_fail_with_error()
        if not self.in_transaction:
            raise TransactionStateError(f"prepare_transaction() in state {self.manager.state_name}: no open "
                                        f"transaction")

    def info(self) -> TransactionInfo:
        """What a two-phase committer records: the transactional id, producer id/epoch and state."""
        manager = self.manager
        return TransactionInfo(manager.transactional_id, manager.producer_id, manager.producer_epoch,
                               manager.state_name, manager.has_ongoing_transaction)

    def read_transaction_version(self, on_initialization: bool) -> None:
        """Java's maybeUpdateTransactionV2Enabled: the core decides V1 or V2 from the newest finalized features."""
        features = self.finalized_features()
        was_v2 = self.manager.transaction_v2
        self.manager.update_transaction_version(features.epoch, features.level(TRANSACTION_VERSION),
                                                on_initialization)
        if self.manager.transaction_v2 != was_v2 or on_initialization:
            log.info("transactional.id %s uses Transactions %s (transaction.version %s)", self.transactional_id,
                     "V2" if self.manager.transaction_v2 else "V1", features.level(TRANSACTION_VERSION))

    # -- what the Producer asks for --

    def _cached(self, target: TransactionState, start: Callable[[], TransactionalResult]) -> TransactionalResult:
        """Java's handleCachedTransactionRequestResult: a call repeated after a timeout waits for the same work."""
        if self.pending_result is not None and self.manager.state == target:
            result = self.pending_result
            if result.is_completed:
                self.pending_result = None
            return result
        self.pending_result = start()
        return self.pending_result

    def initialize(self) -> TransactionalResult:
        def start() -> TransactionalResult:
            self.manager.begin_initializing()
            handler = _InitProducerId(self, is_epoch_bump=False)
            self.enqueue(handler)
            return handler.result

        return self._cached(TransactionState.INITIALIZING, start)

    def begin_commit(self) -> TransactionalResult:
        def start() -> TransactionalResult:
            self.manager.begin_commit()
            return self._begin_completing(commit=True, cause=None)

        return self._cached(TransactionState.COMMITTING_TRANSACTION, start)

    def begin_abort(self) -> TransactionalResult:
        def start() -> TransactionalResult:
            cause = self.manager.last_error  # the transition clears it
            self.manager.begin_abort()
            return self._begin_completing(commit=False, cause=cause)

        return self._cached(TransactionState.ABORTING_TRANSACTION, start)

    def _begin_completing(self, commit: bool, cause: BaseException | None) -> TransactionalResult:
        manager = self.manager
        if manager.has_new_partitions:
            self.enqueue(_AddPartitions(self))
        if getattr(cause, "code", None) != _E.INVALID_PRODUCER_ID_MAPPING:
            # (after INVALID_PRODUCER_ID_MAPPING the coordinator takes no EndTxn: re-initialize instead)
            handler = _EndTxn(self, commit)  # at the version the transaction started with
            # then the cluster's newest transaction.version, before the bump decision (a move to V2 bumps: Java)
            self.read_transaction_version(on_initialization=False)
            self.enqueue(handler)
            if not manager.epoch_bump_required:
                return handler.result
        bump = _InitProducerId(self, is_epoch_bump=True)
        self.enqueue(bump)
        return bump.result

    def send_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                     group: ConsumerGroupMetadata) -> TransactionalResult:
        manager = self.manager
        manager.maybe_fail_with_error()
        if not self.in_transaction:
            raise TransactionStateError(f"send_offsets_to_transaction() in state {manager.state_name}: no "
                                        f"transaction is open (begin_transaction() first)")
        handler: TxnHandler
        if manager.transaction_v2:  # TxnOffsetCommit v5 adds the group to the transaction itself
            handler = _TxnOffsetCommit(self, TransactionalResult("send_offsets_to_transaction"), dict(offsets),
                                       group, manager.producer_id, manager.producer_epoch)
            manager.mark_transaction_started()
        else:
            handler = _AddOffsets(self, dict(offsets), group)
        self.enqueue(handler)
        return handler.result

    def complete_external(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          commit: bool) -> TransactionalResult:
        handler = _EndTxn(self, commit, transactional_id, producer_id, producer_epoch)
        handler.external = True
        # another producer's transaction: at the version the cluster runs now (this producer may be idempotent only)
        handler.v2 = self.finalized_features().level(TRANSACTION_VERSION) >= 2
        self.enqueue(handler)
        return handler.result

    def init_idempotent_producer_id(self) -> None:
        self.enqueue(_InitProducerId(self, is_epoch_bump=False))

    # -- queue --

    def enqueue(self, handler: TxnHandler) -> None:
        heapq.heappush(self._queue, (handler.priority, next(self._order), handler))

    def retry(self, handler: TxnHandler, now_ms: int) -> None:
        handler.is_retry = True
        handler.awaiting_node_id = None
        handler.not_before_ms = now_ms + handler.retry_backoff_ms
        self.enqueue(handler)

    def coordinator_moved(self, route: Route) -> None:
        """An answer said the coordinator moved (or it could not be reached): the cache looks it up again when the
        next request needs it."""
        if isinstance(route, Coordinator):
            self.coordinators.forget(route)

    def lookup_failed(self, handler: TxnHandler, error: KafkaError) -> None:
        """handler's coordinator could not be found, for good (the cache's lookup; Java's FindCoordinatorHandler):
        not authorized for the group aborts the transaction; anything else is fatal to the producer, or, for another
        process's transaction (complete_transaction), fails that call only."""
        what = f"could not find the coordinator for {handler.coordinator_key!r}: {error}"
        # a denied transactional id stays its typed AuthorizationError, as Java's
        fatal = error if isinstance(error, AuthorizationError) else TransactionFatalError(what)
        if error.code == _E.GROUP_AUTHORIZATION_FAILED:
            handler.abortable_error(TransactionAbortableError(what, code=error.code))
        elif handler.external:
            handler.cancelled = True
            handler.result.fail(fatal)
        else:
            handler.fatal_error(fatal)

    @property
    def has_pending_requests(self) -> bool:
        return bool(self._queue) or self.in_flight is not None

    def next_due_delay_ms(self, now_ms: int, connection_delay_ms: Callable[[int], int]) -> int | None:
        """ms until the head request may go (None: nothing queued). One awaiting a node's connection may go when it
        is ready: a connection's progress ends the poll, connection_delay_ms(node) (at most retry.backoff.ms)
        bounds the wait."""
        if not self._queue:
            return None
        head = self._queue[0][2]
        delay_ms = max(0, head.not_before_ms - now_ms)
        if head.awaiting_node_id is not None:
            delay_ms = max(delay_ms, min(connection_delay_ms(head.awaiting_node_id), self.config.retry_backoff_ms))
        return delay_ms

    def next_request(self, has_incomplete_batches: bool, now_ms: int) -> TxnHandler | None:
        """Java's nextRequest: AddPartitionsToTxn for new partitions joins the queue; EndTxn waits until every
        batch is complete; in an error state own requests fail (a coordinator lookup, the cache's, may still go)."""
        manager = self.manager
        if manager.has_new_partitions and manager.state in (TransactionState.IN_TRANSACTION,
                                                            TransactionState.COMMITTING_TRANSACTION):
            self.enqueue(_AddPartitions(self))
        while self._queue:
            handler = self._queue[0][2]
            if handler.cancelled:
                heapq.heappop(self._queue)
                continue
            if handler.not_before_ms > now_ms:
                return None
            if handler.is_end_txn and not handler.external and has_incomplete_batches:
                return None
            heapq.heappop(self._queue)
            if not handler.external and manager.has_error:
                handler.result.fail(self._error_for_state())
                continue
            if handler.is_end_txn and not handler.external and not manager.transaction_started:
                # nothing was added to the transaction: nothing to end at the coordinator
                handler.result.done()
                if not manager.has_fatal_error:
                    manager.complete_transaction()
                continue
            return handler
        return None

    def _error_for_state(self) -> KafkaError:
        try:
            self.manager.maybe_fail_with_error()
        except KafkaError as e:
            return e
        return TransactionAbortableError("the transaction is in an error state")

    def fail_pending(self, error: BaseException) -> None:
        """A fatal error: every queued own request and the awaited result fail with it."""
        keep = []
        for item in self._queue:
            if item[2].external:
                keep.append(item)
            else:
                item[2].result.fail(error)
        self._queue = keep
        heapq.heapify(self._queue)
        if self.pending_result is not None:
            self.pending_result.fail(error)

    def close(self) -> None:
        """Forced close: everything still queued fails."""
        error = KafkaError("the producer was closed forcefully")
        for _, _, handler in self._queue:
            handler.result.fail(error)
        self._queue.clear()
        if self.in_flight is not None:
            self.in_flight.result.fail(error)
        if self.pending_result is not None:
            self.pending_result.fail(error)


    def on_response(self, handler: TxnHandler, response: ClientResponse, now_ms: int) -> None:
        """A transactional answer (or the transport's failure) for `handler`."""
        self.now_ms = now_ms
        if self.in_flight is handler:
            self.in_flight = None
        error = response.error
        if error is not None:
            # an idempotent-only producer outlives a failed authentication (the records waiting fail with it, and
            # the producer id is asked for again once the credentials work); a transactional one is fatal, as Java
            retry = isinstance(error, AuthenticationError) and self.manager.transactional_id is None
            if retry or isinstance(error, NetworkError) or getattr(error, "retriable", False):
                log.debug("%s to node %s failed (%s); retrying", handler.describe(), response.node_id, error)
                self.coordinator_moved(handler.route)
                self.retry(handler, now_ms)
            else:
                handler.fatal_error(TransactionFatalError(f"{handler.describe()} failed: {error}"))
            return
        assert response.response is not None  # transactional requests all expect an answer
        handler.handle(response.response)
