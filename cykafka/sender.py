"""The Sender: one `run_once(now)` turns queued batches into Produce requests and responses into completed futures.

Depends only on ports (Transport, MetadataSource, Clock) and the core accumulator, like Java's Sender.runOnce. The
producer lock guards the accumulator; callbacks and interceptors run after it is released. `SenderThread` is the thin
loop around it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from cykafka.adapters.kafka_protocol import ProduceRequest, ProduceResponse, error_for
from cykafka.config import ProducerConfig
from cykafka.core import ProducerBatch, RecordAccumulator, RecordFuture
from cykafka.errors import KafkaError, KafkaTimeoutError, NetworkError, ProducerClosedError, RecordTooLargeError
from cykafka.metrics import ProducerMetrics
from cykafka.ports import ClientResponse, Clock, ClusterSnapshot, MetadataSource, Transport

log = logging.getLogger("cykafka")

MESSAGE_TOO_LARGE = 10
# errors after which the leader we used is stale (Java: InvalidMetadataException subclasses)
METADATA_ERRORS = frozenset({3, 5, 6, 9, 74, 75, 103})


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
        waiting_for_responses: Callable[[], None] | None = None,
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
        self._waiting_for_responses = waiting_for_responses  # appends need not wake us until a response comes
        self._leaders_snapshot: ClusterSnapshot | None = None
        self._leaders: frozenset[int] = frozenset()
        self._in_flight: dict[tuple[str, int], list[ProducerBatch]] = {}
        self._guarantee_order = config.max_in_flight_requests_per_connection == 1
        self.running = True
        self.force_close = False
        self._auth_error_seen: KafkaError | None = None

    # -- the loop body -----------------------------------------------------------------------------------------

    def run_once(self) -> None:
        now_ms = self.clock.monotonic_ms()
        poll_timeout_ms = self._send_producer_data(now_ms)
        responses = self.transport.poll(poll_timeout_ms, self.clock.monotonic_ms())
        for response in responses:
            if response.handler is not None:
                response.handler(response)
        auth_error = self.transport.authentication_error()
        if auth_error is not None and auth_error is not self._auth_error_seen:
            self.fail_undrained(auth_error)  # fatal, not retriable: what waits for a connection fails now
        self._auth_error_seen = auth_error  # batches queued later wait for the next attempt (after its backoff)

    def _send_producer_data(self, now_ms: int) -> int:
        metadata_delay_ms = self.metadata.maybe_update(now_ms)
        snapshot = self.metadata.snapshot()
        self.transport.update_nodes(snapshot.nodes)
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
            if self.transport.ready(node_id, now_ms):
                nodes.add(node_id)
            else:
                not_ready_delay_ms = min(not_ready_delay_ms, self.transport.connection_delay_ms(node_id, now_ms))
        with self.lock:
            drained = self.accumulator.drain(snapshot, nodes, self.config.max_request_size, now_ms)
            for batches in drained.values():
                for batch in batches:
                    self._in_flight.setdefault((batch.topic, batch.partition), []).append(batch)
                    if self._guarantee_order:
                        self.accumulator.mute(batch.topic, batch.partition)
            expired = self.accumulator.expired_batches(now_ms) + self._expired_in_flight(now_ms)
            expiry_delay_ms = self.accumulator.next_expiry_delay_ms(now_ms)
        for batch in expired:
            age_ms = now_ms - batch.created_ms
            self._fail_batch(batch, KafkaTimeoutError(
                f"Expiring {batch.record_count} record(s) for {batch.topic}-{batch.partition}: {age_ms} ms has "
                f"passed since batch creation (delivery.timeout.ms={self.config.delivery_timeout_ms})"))
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
        request = ProduceRequest(
            transactional_id=self.config.transactional_id,
            acks=self.config.acks,
            timeout_ms=self.config.request_timeout_ms,
            topics=[(topic, parts) for topic, parts in topics.items()],
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
        produce = response.response
        assert isinstance(produce, ProduceResponse)
        seen = set()
        for topic_response in produce.topics:
            for p in topic_response.partitions:
                tp = (topic_response.name, p.partition_index)
                answered = in_flight.batches.get(tp)
                if answered is None:
                    continue
                seen.add(tp)
                error = None if p.error_code == 0 else error_for(p.error_code, p.error_message)
                self._complete_batch(answered, error, p.base_offset, p.log_append_time_ms, now_ms)
        for tp, batch in in_flight.batches.items():
            if tp not in seen:
                self._complete_batch(batch, NetworkError(f"no response for partition {tp[0]}-{tp[1]}"), -1, -1,
                                     now_ms)

    def _complete_batch(self, batch: ProducerBatch, error: Exception | None, base_offset: int,
                        log_append_time_ms: int, now_ms: int) -> None:
        self._remove_in_flight(batch)
        if self._guarantee_order:
            with self.lock:
                self.accumulator.unmute(batch.topic, batch.partition)
        if batch.is_done:  # expired while in flight: the late answer changes nothing
            return
        if error is None:
            self._finish(batch, None, base_offset, log_append_time_ms)
            return
        code = getattr(error, "code", None)
        if code == MESSAGE_TOO_LARGE and batch.record_count > 1:
            with self.lock:
                pieces = self.accumulator.split_and_reenqueue(batch)
                waiter = self.accumulator.deallocate(batch)
            log.info("split a batch for %s-%s into %d after MESSAGE_TOO_LARGE", batch.topic, batch.partition, pieces)
            self._wake(waiter)
            return
        if code == MESSAGE_TOO_LARGE:
            error = RecordTooLargeError(f"the broker rejected a record for {batch.topic}-{batch.partition} as too "
                                        f"large (MESSAGE_TOO_LARGE)", code=MESSAGE_TOO_LARGE)
        if self._can_retry(batch, error, now_ms):
            log.debug("retrying %s (attempt %d): %s", batch, batch.attempts + 1, error)
            self.metrics.record_retry(batch.record_count)
            with self.lock:
                self.accumulator.reenqueue(batch, now_ms)
        else:
            self._fail_batch(batch, error)
        if code in METADATA_ERRORS or isinstance(error, NetworkError):
            self.metadata.request_update()

    def _can_retry(self, batch: ProducerBatch, error: Exception, now_ms: int) -> bool:
        return (
            getattr(error, "retriable", False)
            and batch.attempts < self.config.retries
            and now_ms - batch.created_ms < self.config.delivery_timeout_ms
            and not self.force_close
        )

    def _remove_in_flight(self, batch: ProducerBatch) -> None:
        batches = self._in_flight.get((batch.topic, batch.partition))
        if batches is not None and batch in batches:
            batches.remove(batch)

    def _fail_batch(self, batch: ProducerBatch, error: Exception) -> None:
        self.metrics.record_errors(batch.record_count)
        self._finish(batch, error, -1, -1)

    def _finish(self, batch: ProducerBatch, error: Exception | None, base_offset: int, log_append_time_ms: int) -> None:
        """Marks the batch final and frees its memory; then, with the lock released, wakes memory waiters, runs
        interceptors and callbacks, and last releases the batch's waiters (future.result, flush)."""
        with self.lock:
            with_callbacks = batch.complete(base_offset, log_append_time_ms, error)
            waiter = self.accumulator.deallocate(batch)
        self._wake(waiter)
        if error is None:
            self.metrics.record_sent(batch)
        if self._on_batch_done is not None:
            self._on_batch_done(batch)
        for future in with_callbacks:
            run_callback(future)
        batch.release_waiters()  # last, as Java: flush() returns after the callbacks ran

    def _wake(self, waiter: Any) -> None:
        if waiter is not None and self._memory_freed is not None:
            self._memory_freed(waiter)

    # -- shutdown ----------------------------------------------------------------------------------------------

    def has_pending(self) -> bool:
        with self.lock:
            pending = self.accumulator.has_undrained()
        return pending or any(self._in_flight.values())

    def fail_undrained(self, error: KafkaError) -> None:
        """Fails every queued (not yet sent) batch with `error`; requests in flight finish on their own."""
        with self.lock:
            batches = self.accumulator.abort_undrained()
        for batch in batches:
            if not batch.is_done:
                self._fail_batch(batch, error)

    def abort_all(self, error: KafkaError) -> None:
        """Fails every queued and in-flight batch with `error` (close deadline passed, or fatal error)."""
        with self.lock:
            batches = self.accumulator.abort_undrained()
        for in_flight in list(self._in_flight.values()):
            batches.extend(in_flight)
        self._in_flight.clear()
        for batch in batches:
            if not batch.is_done:
                self._fail_batch(batch, error)


def run_callback(future: RecordFuture) -> None:
    """Runs a record's on_delivery(err, metadata); a raising callback is logged, never propagates."""
    error, metadata = future.callback_args
    callback = future.callback
    if callback is None:
        return
    future.callback = None  # a callback holding its own future would otherwise keep both alive (no GC for futures)
    try:
        callback(error, metadata)
    except Exception:
        log.exception("on_delivery callback raised; ignored")


class SenderThread(threading.Thread):
    """The thin shell: loops Sender.run_once until closed, then drains (or aborts on a forced close)."""

    def __init__(self, sender: Sender, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.sender = sender

    def run(self) -> None:
        sender = self.sender
        while sender.running:
            self._run_once_logged()
        while not sender.force_close and sender.has_pending():
            self._run_once_logged()
        if sender.force_close:
            sender.abort_all(ProducerClosedError("the producer was closed before the record was delivered"))

    def _run_once_logged(self) -> None:
        try:
            self.sender.run_once()
        except Exception:
            log.exception("unexpected error in the sender loop; continuing")
            self.sender.clock.sleep_ms(10)
