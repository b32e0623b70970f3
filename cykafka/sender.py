"""The Sender: one `run_once(now)` turns queued batches into Produce requests and responses into completed futures.

Depends only on ports (Transport, MetadataSource, Clock) and the core accumulator, like Java's Sender.runOnce. The
producer lock guards the accumulator and the core TransactionManager; callbacks and interceptors run after it is
released. With idempotence/transactions each loop first resolves sequences, bumps the epoch when needed and sends at
most one transactional request (cykafka/transactions.py); while one is in flight no produce data goes out (Java).
`SenderThread` is the thin loop around it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from cykafka.config import ProducerConfig
from cykafka.core import ProducerBatch, RecordAccumulator, RecordFuture, TransactionManager
from cykafka.errors import (
    KafkaError,
    KafkaTimeoutError,
    NetworkError,
    ProducerClosedError,
    ProducerFencedError,
    RecordPurgedError,
    RecordTooLargeError,
    TransactionAbortableError,
    TransactionFatalError,
)
from cykafka.metrics import ProducerMetrics
from cykafka.ports import ClientResponse, Clock, ClusterSnapshot, MetadataSource, Transport, report_error
from cykafka.protocol import ProduceRequest
from cykafka.protocol.error_codes import ErrorCode, ErrorKind, error_for, kinds_of
from cykafka.requests.routes import Coordinator, Router, ready_node
from cykafka.telemetry import TelemetrySource
from cykafka.transactions import V1_MAX_PRODUCE_VERSION, TransactionRequests, TxnHandler

log = logging.getLogger("cykafka.producer")



@dataclass(slots=True)
class _InFlight:
    node_id: int
    batches: dict[tuple[str, int], ProducerBatch]
    sent_ms: int


class Sender:
    """Drives the accumulator against a Transport. Everything it needs comes in through the constructor."""

    def __init__(
        self,
        config: ProducerConfig,
        accumulator: RecordAccumulator,
        transport: Transport,
        metadata: MetadataSource,
        clock: Clock,
        lock: AbstractContextManager[Any],
        metrics: ProducerMetrics,
        on_batch_done: Callable[[ProducerBatch], None] | None = None,
        memory_freed: Callable[[Any], None] | None = None,
        loop_started: Callable[[ClusterSnapshot], None] | None = None,
        metadata_changed: Callable[[], None] | None = None,
        transactions: TransactionRequests | None = None,
        waiting_for_responses: Callable[[], None] | None = None,
        telemetry: TelemetrySource | None = None,
    ) -> None:
        self.config = config
        self.accumulator = accumulator
        self.transport = transport
        self.metadata = metadata
        self.clock = clock
        self.lock = lock
        self.metrics = metrics
        self._on_batch_done = on_batch_done
        self._memory_freed = memory_freed
        self._loop_started = loop_started
        self._metadata_changed = metadata_changed  # after an answer made a new snapshot, or a new auth error
        self._metadata_seen: ClusterSnapshot | None = None
        self._waiting_for_responses = waiting_for_responses  # appends need not wake us until a response comes
        self.telemetry = telemetry  # KIP-714: the producer's metrics pushed to a broker that asks for them
        self._leaders_snapshot: ClusterSnapshot | None = None
        self._leaders: frozenset[int] = frozenset()
        self._disconnects_seen = 0
        self._fatal_reported: BaseException | None = None  # the fatal error error_cb heard (once)
        self._in_flight: dict[tuple[str, int], list[ProducerBatch]] = {}
        self._guarantee_order = config.max_in_flight_requests_per_connection == 1
        self.txn_requests = transactions
        self.txn: TransactionManager | None = transactions.manager if transactions is not None else None
        self._router = None if transactions is None else Router(transport, metadata, transactions.coordinators,
                                                                config.retry_backoff_ms)
        self.keep_transaction_open = False  # prepare_transaction(): close() leaves it for another process
        self._nodes_source: tuple[Any, ...] = ()
        self._nodes: Any = None
        self.running = True
        self.force_close = False
        self.close_deadline_ms: int | None = None  # an unclosed producer's drain: polls end by then
        self._auth_error_seen: KafkaError | None = None
        # records completed (acknowledged, failed, purged) with their callbacks run, counted per batch under the
        # lock before its waiters go: Producer.completed_records
        self.completed_records = 0

    # -- the loop body -----------------------------------------------------------------------------------------

    def run_once(self) -> None:
        now_ms = self.clock.monotonic_ms()
        if self.txn_requests is not None:
            txn_poll_ms = self._run_transactional(now_ms)
            if txn_poll_ms is not None:  # a transactional request is out (or a fatal error): answers only
                self._poll(txn_poll_ms)
                return
        poll_timeout_ms = self._send_producer_data(now_ms)
        if self.telemetry is not None:
            telemetry_ms = self.telemetry.run(now_ms)
            if telemetry_ms is not None:
                poll_timeout_ms = min(poll_timeout_ms, telemetry_ms)
        if self.txn_requests is not None and self.txn is not None:
            with self.lock:
                if self.txn.has_new_partitions:  # ready() just met them: AddPartitionsToTxn goes next loop
                    poll_timeout_ms = 0
                elif self.txn_requests.has_pending_requests:
                    due_ms = self.txn_requests.next_due_delay_ms(now_ms, self._connection_delay_ms)
                    poll_timeout_ms = min(poll_timeout_ms,
                                          due_ms if due_ms is not None else self.config.retry_backoff_ms)
        self._poll(poll_timeout_ms)

    def _poll(self, timeout_ms: int) -> None:
        # at most request.timeout.ms, as Java's NetworkClient (long backoffs up to 2**63-1 ms are valid configs)
        timeout_ms = min(timeout_ms, self.config.request_timeout_ms)
        now_ms = self.clock.monotonic_ms()
        if self.close_deadline_ms is not None:
            timeout_ms = max(0, min(timeout_ms, self.close_deadline_ms - now_ms))
        responses = self.transport.poll(timeout_ms, now_ms)
        record_response = self.metrics.nodes.record_response
        for response in responses:
            record_response(response)
            if response.handler is not None:
                response.handler(response)
        auth_error = self.transport.authentication_error()
        news = auth_error is not self._auth_error_seen
        if news and auth_error is not None:
            self.fail_undrained(auth_error)  # fatal, not retriable: what waits for a connection fails now
        self._auth_error_seen = auth_error  # batches queued later wait for the next attempt (after its backoff)
        if self._metadata_changed is not None:  # the sends waiting for metadata look again now (Java's awaitUpdate)
            snapshot = self.metadata.snapshot()
            if news or snapshot is not self._metadata_seen:
                self._metadata_seen = snapshot
                self._metadata_changed()
        self._report_fatal()  # an answer may have made the producer fatal: error_cb hears it now, not after a poll

    def _report_fatal(self) -> None:
        """error_cb hears a fatal transaction/idempotence error once (read without the lock: one attribute each)."""
        txn = self.txn
        error = txn.last_error if txn is not None and txn.has_fatal_error else None
        if error is None or error is self._fatal_reported:
            return
        self._fatal_reported = error
        report_error(self.config.error_cb, self._fatal_error_for_records(error), log)

    def _update_transport_nodes(self, snapshot: ClusterSnapshot) -> None:
        """The metadata's brokers, plus coordinators metadata does not name."""
        coordinators = self.txn_requests.coordinators.extra_nodes() if self.txn_requests is not None else {}
        source = (snapshot.nodes, tuple(sorted(coordinators.items())))
        if source != self._nodes_source:
            missing = {i: n for i, n in coordinators.items() if i not in snapshot.nodes}
            self._nodes = {**snapshot.nodes, **missing} if missing else snapshot.nodes
            self._nodes_source = source
        self.transport.update_nodes(self._nodes)

    # -- idempotence and transactions --------------------------------------------------------------------------

    def _run_transactional(self, now_ms: int) -> int | None:
        """Java's runOnce prologue: resolve sequences, bump the epoch, fail batches of an aborting or failed
        transaction, send the next transactional request. Returns a poll timeout when no produce data may go out
        this loop, else None."""
        requests, txn = self.txn_requests, self.txn
        assert requests is not None and txn is not None
        aborted: list[ProducerBatch] = []
        abort_error: BaseException | None = None
        with self.lock:
            txn.maybe_resolve_sequences()
            fatal = txn.last_error if txn.has_fatal_error else None
            if fatal is None:
                if txn.bump_idempotent_epoch_and_reset_id_if_needed():
                    requests.init_idempotent_producer_id()
                if requests.in_flight is not None or requests.coordinators.in_flight:  # answers only (Java)
                    return self.config.retry_backoff_ms
                if txn.has_abortable_error or txn.is_aborting:
                    aborted = self.accumulator.abort_unsequenced()
                    abort_error = txn.last_error or TransactionAbortableError(
                        "failing the record: its transaction was aborted")
                handler = requests.next_request(self.accumulator.has_incomplete(), now_ms)
        if fatal is not None:
            self._report_fatal()
            self.abort_all(self._fatal_error_for_records(fatal))
            return self.config.retry_backoff_ms
        for batch in aborted:  # never sent: no sequence to settle (Java's abortUndrainedBatches)
            assert abort_error is not None
            self._fail_batch(batch, abort_error if isinstance(abort_error, KafkaError) else
                             TransactionAbortableError(str(abort_error)), track=False)
        if handler is None:
            return None
        node_id = self._transactional_target(handler, now_ms)
        if node_id is None:
            return self._send_coordinator_lookups(handler, now_ms)
        request = handler.request()
        with self.lock:
            requests.in_flight = handler
        log.debug("sending %s to node %s", handler.describe(), node_id)
        try:
            self.transport.send(node_id, request, now_ms, handler=lambda r: self._handle_transactional(handler, r))
        except KafkaError as e:  # not connected after all (retry), or no version of the API in common (fatal)
            with self.lock:
                requests.in_flight = None
                requests.on_response(handler, ClientResponse(node_id, request, None, None, e, now_ms, now_ms), now_ms)
            return None
        return self.config.retry_backoff_ms

    def _transactional_target(self, handler: TxnHandler, now_ms: int) -> int | None:
        """The node a transactional request goes to (its route: the request layer's Router over the coordinator
        cache), if it can go now; else it is queued again (its coordinator looked up when unknown, when its connection
        failed, or when not ready for request.timeout.ms: Java's awaitReady ends the same ways)."""
        requests, router = self.txn_requests, self._router
        assert requests is not None and router is not None
        route = handler.route
        try:
            known = router.node_for(route, now_ms)  # a coordinator not known yet: its lookup is wanted
        except KafkaError as e:  # the coordinator lookup failed for good
            with self.lock:
                requests.lookup_failed(handler, e)
            return None
        coordinator = isinstance(route, Coordinator)
        if coordinator and known is None:
            with self.lock:
                requests.enqueue(handler)  # goes once its coordinator is known
            return None
        if coordinator:
            self._update_transport_nodes(self.metadata.snapshot())
        node_id = known if coordinator else self.transport.least_loaded_node(now_ms)
        if node_id is not None and ready_node(self.transport, node_id, now_ms,
                                              self.config.retry_backoff_ms)[0] is not None:
            handler.waiting_since_ms = handler.awaiting_node_id = None
            return node_id
        if handler.waiting_since_ms is None:
            handler.waiting_since_ms = now_ms
        with self.lock:
            if coordinator and (now_ms - handler.waiting_since_ms >= self.config.request_timeout_ms
                                or (node_id is not None and self.transport.connection_failed(node_id))):  # it died
                handler.waiting_since_ms = None
                requests.coordinator_moved(route)
            if node_id is None:  # no node to try: back off
                self.metadata.request_update()
                handler.not_before_ms = now_ms + self.config.retry_backoff_ms
            # else it goes as soon as the node is ready (Java awaits the connection; it backs off only after a
            # failure, and a failed connection waits out the transport's reconnect backoff)
            handler.awaiting_node_id = node_id
            requests.enqueue(handler)
        return None

    def _send_coordinator_lookups(self, handler: TxnHandler, now_ms: int) -> int | None:
        """The coordinator lookup a transactional request waits for goes in the transactional slot (Java's
        FindCoordinator, first in its queue): while it is out, answers only; while the broker it would go to is
        still connecting, the request goes on the first loop after that connection is ready (its progress ends the
        poll; retry.backoff.ms at most); when it cannot go yet for another reason (retry.backoff.ms after a failed
        one, no broker), the request waits as long."""
        requests, router = self.txn_requests, self._router
        assert requests is not None and router is not None
        delay_ms = requests.coordinators.send_ready(now_ms)
        if requests.coordinators.in_flight:
            return self.config.retry_backoff_ms
        route = handler.route
        if isinstance(route, Coordinator) and requests.coordinators.get(route) is None:
            try:
                router.node_for(route, now_ms)
            except KafkaError as e:  # its lookup could not even be sent (no FindCoordinator version in common)
                with self.lock:
                    requests.lookup_failed(handler, e)
                return None
            connecting = self.transport.least_loaded_node(now_ms)
            if connecting is not None and not self.transport.ready(connecting, now_ms):
                handler.awaiting_node_id = connecting  # not a whole retry.backoff.ms after the connection is up
            else:
                handler.not_before_ms = max(handler.not_before_ms,
                                            now_ms + min(delay_ms, self.config.retry_backoff_ms))
        return None

    def _connection_delay_ms(self, node_id: int) -> int:
        return self.transport.connection_delay_ms(node_id, self.clock.monotonic_ms())

    def _handle_transactional(self, handler: Any, response: ClientResponse) -> None:
        assert self.txn_requests is not None
        with self.lock:
            self.txn_requests.on_response(handler, response, self.clock.monotonic_ms())

    @staticmethod
    def _fatal_error_for_records(error: BaseException) -> KafkaError:
        if isinstance(error, TransactionFatalError):
            return error
        fatal = TransactionFatalError(f"the producer hit a fatal error: {error}")
        fatal.__cause__ = error
        return fatal

    def _send_producer_data(self, now_ms: int) -> int:
        if self.transport.disconnect_count != self._disconnects_seen:  # the disconnect may come from stale metadata
            self._disconnects_seen = self.transport.disconnect_count
            self.metadata.request_update()
        metadata_delay_ms = self.metadata.maybe_update(now_ms)
        snapshot = self.metadata.snapshot()
        self._update_transport_nodes(snapshot)
        if self._loop_started is not None:
            self._loop_started(snapshot)
        with self.lock:
            ready = self.accumulator.ready(snapshot, now_ms)
        if ready.unknown_leader_topics:
            for topic in ready.unknown_leader_topics:
                self.metadata.add_topic(topic, now_ms)
            self.metadata.request_update()
        not_ready_delay_ms = 2**62
        nodes = set()
        for node_id in ready.ready_nodes:
            node, wait_ms = ready_node(self.transport, node_id, now_ms, self.config.retry_backoff_ms)
            if node is not None:
                nodes.add(node)
            else:
                not_ready_delay_ms = min(not_ready_delay_ms, wait_ms)
        with self.lock:
            drained = self.accumulator.drain(snapshot, nodes, self.config.max_request_size, now_ms)
            for batches in drained.values():
                for batch in batches:
                    self._in_flight.setdefault((batch.topic, batch.partition), []).append(batch)
                    if self._guarantee_order:
                        self.accumulator.mute(batch.topic, batch.partition)
            expired_in_flight = self._expired_in_flight(now_ms)
            expired = self.accumulator.expired_batches(now_ms) + expired_in_flight
            expiry_delay_ms = self.accumulator.next_expiry_delay_ms(now_ms)
        for batch in expired:
            age_ms = now_ms - batch.created_ms
            # a request still out holds views of an in-flight batch's buffer: it goes back to the pool with the answer
            self._fail_sent_batch(batch, KafkaTimeoutError(
                f"Expiring {batch.record_count} record(s) for {batch.topic}-{batch.partition}: {age_ms} ms has "
                f"passed since batch creation (delivery.timeout.ms={self.config.delivery_timeout_ms})"),
                release_buffer=batch not in expired_in_flight)
        for node_id, batches in drained.items():
            self._send_produce_request(node_id, batches, now_ms)
        for topic in {b.topic for batches in drained.values() for b in batches}:
            self.metadata.add_topic(topic, now_ms)  # in use: keep it in metadata (metadata.max.idle.ms)
        if self._waiting_for_responses is not None and self._all_leaders_saturated(snapshot):
            # nothing new can go out before a response arrives, and a response ends the poll: appends need not
            # wake this loop (each wakeup would cost a loop that sends nothing)
            self._waiting_for_responses()
        if any(self.transport.ready(node_id, now_ms) for node_id in nodes):
            return 0  # Java: data is ready to go, poll without waiting (unless those nodes are now at max in flight)
        return max(0, min(ready.next_ready_check_delay_ms, not_ready_delay_ms, expiry_delay_ms, metadata_delay_ms,
                          self.config.request_timeout_ms))

    def _all_leaders_saturated(self, snapshot: ClusterSnapshot) -> bool:
        """Every partition leader has max.in.flight.requests.per.connection requests out."""
        if snapshot is not self._leaders_snapshot:
            self._leaders = frozenset(info.leader for infos in snapshot.partitions.values() for info in infos
                                      if info.leader >= 0)
            self._leaders_snapshot = snapshot
        limit = self.config.max_in_flight_requests_per_connection
        return bool(self._leaders) and all(self.transport.in_flight_count(node) >= limit for node in self._leaders)

    def _expired_in_flight(self, now_ms: int) -> list[ProducerBatch]:
        expired = []
        timeout_ms = self.config.delivery_timeout_ms
        for batches in self._in_flight.values():
            while batches and now_ms - batches[0].created_ms >= timeout_ms:
                expired.append(batches.pop(0))
        return expired

    # -- requests and responses --------------------------------------------------------------------------------

    def _send_produce_request(self, node_id: int, batches: list[ProducerBatch], now_ms: int) -> None:
        by_tp = {(b.topic, b.partition): b for b in batches}
        topics: dict[str, list[tuple[int, Any]]] = {}
        for batch in batches:
            topics.setdefault(batch.topic, []).append((batch.partition, batch.records))
            self.metrics.record_drained(batch, now_ms)
        txn = self.txn
        request = ProduceRequest(
            transactional_id=self.config.transactional_id,
            acks=self.config.acks,
            timeout_ms=self.config.request_timeout_ms,
            topics=[(topic, parts) for topic, parts in topics.items()],
            # a transaction on Transactions V1 stops at v11 (v12 adds the partitions itself: KIP-890, Java's Sender)
            max_version=V1_MAX_PRODUCE_VERSION if txn is not None and txn.is_transactional
            and not txn.transaction_v2 else None,
        )
        in_flight = _InFlight(node_id, by_tp, now_ms)
        self.transport.send(node_id, request, now_ms, handler=lambda r: self._handle_produce(in_flight, r),
                            expect_response=self.config.acks != 0)

    def _handle_produce(self, in_flight: _InFlight, response: ClientResponse) -> None:
        now_ms = self.clock.monotonic_ms()
        self.metrics.record_request_latency(response.received_ms - response.sent_ms)
        if response.error is not None:
            log.debug("produce to node %s failed: %s", in_flight.node_id, response.error)
            for batch in in_flight.batches.values():
                self._complete_batch(batch, response.error, -1, -1, now_ms)
            if isinstance(response.error, NetworkError):
                self.metadata.request_update()
            return
        if response.response is None:  # acks=0: done once written
            for batch in in_flight.batches.values():
                self._complete_batch(batch, None, -1, -1, now_ms)
            return
        seen = set()
        for topic_response in response.response["responses"]:
            name = topic_response["name"]
            for p in topic_response["partition_responses"]:
                tp = (name, p["index"])
                answered = in_flight.batches.get(tp)
                if answered is None:
                    continue
                seen.add(tp)
                code = p["error_code"]
                error = None if code == ErrorCode.NONE else error_for(code, p["error_message"])
                self._complete_batch(answered, error, p["base_offset"], p["log_append_time_ms"], now_ms,
                                     p["log_start_offset"])
        for tp, batch in in_flight.batches.items():
            if tp not in seen:
                self._complete_batch(batch, NetworkError(f"no response for partition {tp[0]}-{tp[1]}"), -1, -1,
                                     now_ms)

    def _complete_batch(self, batch: ProducerBatch, error: KafkaError | None, base_offset: int,
                        log_append_time_ms: int, now_ms: int, log_start_offset: int = -1) -> None:
        self._remove_in_flight(batch)
        if self._guarantee_order:
            with self.lock:
                self.accumulator.unmute(batch.topic, batch.partition)
        txn = self.txn
        code = getattr(error, "code", None)
        if txn is not None and error is not None:
            with self.lock:
                in_log = code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER or txn.is_acknowledged_past(batch)
            if in_log:
                # the broker has this sequence already (DUPLICATE_SEQUENCE_NUMBER: Tansu answers so where Kafka
                # answers success), or acknowledged a later one of ours: delivered, at an offset we cannot know
                error, code, base_offset = None, None, -1
        if batch.is_done:  # expired while in flight: the late answer frees its buffer and settles the sequences
            with self.lock:
                waiter = self.accumulator.deallocate(batch) if batch.pooled_buffer is not None else None
                if txn is not None:
                    if error is None:
                        txn.handle_completed_batch(batch, base_offset)
                    else:
                        txn.remove_in_flight_batch(batch)
            self._wake(waiter)
            return
        if error is None:
            if txn is not None:
                with self.lock:
                    txn.handle_completed_batch(batch, base_offset)
            self._finish(batch, None, base_offset, log_append_time_ms)
            return
        if code == ErrorCode.MESSAGE_TOO_LARGE and batch.record_count > 1:
            with self.lock:
                if txn is not None:
                    txn.remove_in_flight_batch(batch)
                pieces = self.accumulator.split_and_reenqueue(batch)
                waiter = self.accumulator.deallocate(batch)
            log.info("split a batch for %s-%s into %d after MESSAGE_TOO_LARGE", batch.topic, batch.partition, pieces)
            self._wake(waiter)
            return
        if code == ErrorCode.MESSAGE_TOO_LARGE:
            error = RecordTooLargeError(f"the broker rejected a record for {batch.topic}-{batch.partition} as too "
                                        f"large (MESSAGE_TOO_LARGE)", code=ErrorCode.MESSAGE_TOO_LARGE)
        elif kinds_of(code) & ErrorKind.FENCED:
            error = ProducerFencedError(f"{error} (producer id {batch.producer_id}, epoch {batch.producer_epoch})",
                                        code=code)
        with self.lock:
            retry = self._can_retry(batch, error, code, log_start_offset, now_ms)
            if retry:
                self.accumulator.reenqueue(batch, now_ms)
        if retry:
            log.debug("retrying %s (attempt %d): %s", batch, batch.attempts, error)
            self.metrics.record_retry(batch.record_count)
        else:
            # Java: sequences are adjusted only when retries were not exhausted (the broker surely lacks the batch)
            self._fail_batch(batch, error, adjust_sequence_numbers=batch.attempts < self.config.retries)
        if kinds_of(code) & ErrorKind.STALE_METADATA or isinstance(error, NetworkError):
            self.metadata.request_update()

    def _can_retry(self, batch: ProducerBatch, error: KafkaError, code: Any, log_start_offset: int,
                   now_ms: int) -> bool:
        """Called with the lock held (the TransactionManager may request an epoch bump)."""
        if (batch.attempts >= self.config.retries or now_ms - batch.created_ms >= self.config.delivery_timeout_ms
                or self.force_close):
            return False
        retriable = bool(getattr(error, "retriable", False))
        if self.txn is None:
            return retriable
        return self.txn.can_retry(batch, code if isinstance(code, int) else 0, log_start_offset, retriable)

    def _remove_in_flight(self, batch: ProducerBatch) -> None:
        batches = self._in_flight.get((batch.topic, batch.partition))
        if batches is not None and batch in batches:
            batches.remove(batch)

    def _fail_batch(self, batch: ProducerBatch, error: KafkaError, adjust_sequence_numbers: bool = False,
                    track: bool = True, release_buffer: bool = True) -> None:
        if self.txn is not None and track:
            with self.lock:
                self.txn.handle_failed_batch(batch, error, adjust_sequence_numbers)
        self.metrics.record_errors(batch.record_count)
        self._finish(batch, error, -1, -1, release_buffer)

    def _fail_sent_batch(self, batch: ProducerBatch, error: KafkaError, release_buffer: bool = True) -> None:
        """Fails a batch no answer settled (expired, or queued when authentication failed). Sent at least once (it
        has a sequence), whether the broker has it is unknown until the partition drains: its sequence is marked
        unresolved (Java marks only batches in retry; a first attempt may have landed too)."""
        self._fail_batch(batch, error, release_buffer=release_buffer)
        if self.txn is not None and batch.has_sequence:
            with self.lock:
                self.txn.mark_sequence_unresolved(batch)

    def _finish(self, batch: ProducerBatch, error: KafkaError | None, base_offset: int, log_append_time_ms: int,
                release_buffer: bool = True) -> None:
        """Marks the batch final and frees its memory (release_buffer False: when its request answers); then, with the
        lock released, wakes memory waiters, runs interceptors and callbacks, and last releases the batch's waiters."""
        with self.lock:
            reported = batch.given_up  # purge() completed its records already
            with_callbacks = batch.complete(base_offset, log_append_time_ms, error)
            if release_buffer:
                waiter = self.accumulator.deallocate(batch)
            else:
                waiter = None
                self.accumulator.incomplete.discard(batch)
        self._wake(waiter)
        if error is None:
            self.metrics.record_sent(batch)
        if self._on_batch_done is not None and not reported:
            self._on_batch_done(batch)
        for future in with_callbacks:
            run_callback(future)
        if not reported:
            self._count_completed(batch)
        batch.release_waiters()  # last, as Java: flush() returns after the callbacks ran

    def _wake(self, waiter: Any) -> None:
        if waiter is not None and self._memory_freed is not None:
            self._memory_freed(waiter)

    # -- shutdown ----------------------------------------------------------------------------------------------

    def has_pending(self) -> bool:
        with self.lock:
            pending = self.accumulator.has_undrained()
            if self.txn is not None and self.txn_requests is not None:
                pending = pending or (self.txn_requests.has_pending_requests and self.txn.has_ongoing_transaction)
        return pending or any(self._in_flight.values())

    def fail_undrained(self, error: KafkaError) -> None:
        """Fails every queued (not yet sent) batch with `error`; requests in flight finish on their own."""
        with self.lock:
            batches = self.accumulator.abort_undrained()
        for batch in batches:
            if not batch.is_done:
                self._fail_sent_batch(batch, error)

    def purge(self, in_queue: bool, in_flight: bool) -> int:
        """Producer.purge() (librdkafka's rd_kafka_purge): in_queue fails every queued batch never sent with
        RecordPurgedError (removed from its deque, as an aborting transaction's: `abort_unsequenced`); in_flight
        gives up the records of every batch sent and not answered yet (in a request, or queued again for a retry,
        with its sequence): they fail now with RecordPurgedError(in_flight=True) while the batch stays with this
        Sender, which still settles its sequence and its buffer when its answer comes (the records keep the first
        outcome). Callbacks run on the caller's thread. Returns how many records were purged."""
        with self.lock:
            unsent = self.accumulator.abort_unsequenced(keep_sent=True) if in_queue else []
            given_up: list[ProducerBatch] = []
            if in_flight:
                given_up = [b for batches in list(self._in_flight.values()) for b in list(batches)]
                given_up += self.accumulator.sent_batches()
        purged = 0
        queued_error = RecordPurgedError("purged from the queue by Producer.purge(): never sent")
        for batch in unsent:
            if not batch.is_done:
                purged += batch.record_count
                self._fail_batch(batch, queued_error)  # in a transaction: it can no longer commit
        in_flight_error = RecordPurgedError("purged in flight by Producer.purge(): whether the broker appended it "
                                            "is not known", in_flight=True)
        for batch in given_up:
            with self.lock:
                if batch.is_done or batch.given_up:  # answered meanwhile, or listed twice
                    continue
                with_callbacks = batch.give_up(in_flight_error)
            purged += batch.record_count
            if self._on_batch_done is not None:
                self._on_batch_done(batch)
            for future in with_callbacks:
                run_callback(future)
            self._count_completed(batch)
            batch.release_waiters()
        return purged

    def _count_completed(self, batch: ProducerBatch) -> None:
        with self.lock:  # the sender thread and purge()'s caller both count
            self.completed_records += batch.record_count

    def abort_all(self, error: KafkaError) -> None:
        """Fails every queued and in-flight batch with `error` (close deadline passed, or fatal error)."""
        with self.lock:
            batches = self.accumulator.abort_undrained()
        sent = [batch for in_flight in self._in_flight.values() for batch in in_flight]
        self._in_flight.clear()
        for batch in batches:
            if not batch.is_done:
                self._fail_batch(batch, error, track=False)
        for batch in sent:  # their requests may still be out: buffers go back with the answers
            if not batch.is_done:
                self._fail_batch(batch, error, track=False, release_buffer=False)

    def begin_shutdown_abort(self) -> bool:
        """Graceful close with a transaction still open: abort it (Java). False when there is none to abort."""
        if self.txn is None or self.txn_requests is None or self.keep_transaction_open:
            return False
        with self.lock:
            if not self.txn.has_ongoing_transaction:
                return False
            if not self.txn.is_completing:
                log.info("aborting the incomplete transaction of transactional.id %s: the producer is closing",
                         self.txn.transactional_id)
                try:
                    self.txn_requests.begin_abort()
                except KafkaError as e:
                    log.warning("could not abort the open transaction on close: %s", e)
                    return False
        return True


def undelivered_records(batches: list[ProducerBatch]) -> int:
    """How many records of `batches` are not (or not yet) acknowledged."""
    return sum(b.record_count for b in batches if not b.is_done or b.error is not None)


def run_callback(future: RecordFuture) -> None:
    """Runs a record's on_delivery(err, metadata); a raising callback is logged, never propagates."""
    error, metadata = future._callback_args
    callback = future._callback
    if callback is None:
        return
    future._callback = None  # a callback holding its own future would otherwise keep both alive (no GC for futures)
    try:
        callback(error, metadata)
    except BaseException:  # SystemExit, KeyboardInterrupt too: they must not end the sender thread
        log.exception("on_delivery callback raised; ignored")


class SenderThread(threading.Thread):
    """The thin shell: loops Sender.run_once until closed, then drains (or aborts on a forced close). An unexpected
    error is logged once with its traceback; its repeats are counted and summed up every REPEAT_LOG_INTERVAL_MS.
    finish_unclosed(): the Producer was dropped without close(); this thread then closes it on its own."""

    REPEAT_LOG_INTERVAL_MS = 60_000

    def __init__(self, sender: Sender, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.sender = sender
        self.last_error: BaseException | None = None  # the last unexpected error (for timeout messages)
        self._error_key: tuple[type, str] | None = None
        self._error_repeats = 0
        self._error_logged_ms = 0
        self.unclosed = False
        self._budget_ms = 0
        self._transport_to_close: Transport | None = None

    def finish_unclosed(self, budget_ms: int, transport_to_close: Transport | None) -> None:
        """From a finalizer (never blocks, takes no lock): deliver what is queued within budget_ms, fail the rest
        (logging how many), stop, close the transport if the producer owned it."""
        sender = self.sender
        self._transport_to_close = transport_to_close
        self._budget_ms = budget_ms
        sender.close_deadline_ms = sender.clock.monotonic_ms() + budget_ms
        self.unclosed = True
        sender.running = False
        sender.transport.wakeup()

    def run(self) -> None:
        sender = self.sender
        while sender.running:
            self._run_once_logged()
        batches: list[ProducerBatch] = []
        if self.unclosed:  # nobody can append any more: send everything queued now
            with sender.lock:
                sender.accumulator.close()
                batches = list(sender.accumulator.incomplete)
        while not self._out_of_time() and sender.has_pending():
            self._run_once_logged()
        while not self._out_of_time() and sender.begin_shutdown_abort():
            self._run_once_logged()
        telemetry = sender.telemetry
        if telemetry is not None and not sender.force_close and telemetry.state.terminate():
            # KIP-714's last push, terminating=true: bounded by request.timeout.ms (and close's deadline)
            until_ms = sender.clock.monotonic_ms() + sender.config.request_timeout_ms
            while (not self._out_of_time() and telemetry.state.terminating
                   and sender.clock.monotonic_ms() < until_ms):
                self._run_once_logged()
        if sender.force_close:
            if sender.txn_requests is not None:
                with sender.lock:
                    sender.txn_requests.close()
            sender.abort_all(ProducerClosedError("the producer was closed before the record was delivered"))
        self._log_repeats()
        if self.unclosed:
            lost = undelivered_records(batches)
            if lost:
                log.warning("%d record(s) of the unclosed producer %s were not delivered within %d ms; close() or "
                            "flush() a producer to wait for its records", lost, self.name, self._budget_ms)
            if self._transport_to_close is not None:
                self._transport_to_close.close(0)

    def _out_of_time(self) -> bool:
        sender = self.sender
        if (not sender.force_close and sender.close_deadline_ms is not None
                and sender.clock.monotonic_ms() >= sender.close_deadline_ms):
            sender.force_close = True
        return sender.force_close

    def _run_once_logged(self) -> None:
        try:
            self.sender.run_once()
        except BaseException as e:  # nothing ends this thread but close()
            self._unexpected_error(e)
            self.sender.clock.sleep_ms(10)

    def _unexpected_error(self, error: BaseException) -> None:
        self.last_error = error
        now_ms = self.sender.clock.monotonic_ms()
        key = (type(error), str(error))
        if key == self._error_key:
            self._error_repeats += 1
            if now_ms - self._error_logged_ms >= self.REPEAT_LOG_INTERVAL_MS:
                self._log_repeats()
                self._error_logged_ms = now_ms
            return
        self._log_repeats()
        self._error_key, self._error_logged_ms = key, now_ms
        log.error("unexpected error in the sender loop; continuing (repeats are counted, not logged)", exc_info=error)

    def _log_repeats(self) -> None:
        if self._error_repeats and self._error_key is not None:
            log.error("unexpected error in the sender loop repeated %d more time(s): %s: %s", self._error_repeats,
                      self._error_key[0].__name__, self._error_key[1])
        self._error_repeats = 0
