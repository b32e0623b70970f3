"""OffsetFetcher (Java's OffsetFetcher, with its OffsetsForLeaderEpoch validation): the positions the consumer does not
know, and the offsets it is asked for, on the caller's thread, through the request layer.

Owns:
- resolving missing positions (`resolve_positions`): the group's committed offset (asked through the consumer's
  `committed`), else the partition's pending reset or auto.offset.reset: earliest (ListOffsets), latest (the end offset,
  below), none (NoOffsetForPartitionError); `position` (Consumer.position: resolved now, tried again after a retriable
  failure until its deadline);
- the offset lookups of the API: `list_offsets` (ListOffsets, the request layer's one request and reader,
  cykafka/requests/offsets.py; `beginning_offsets`, `offsets_for_times` on it) and `end_offsets` (the high watermark,
  the last stable offset with read_committed: ListOffsets latest, and from a broker without finalized features, Tansu,
  a one-byte Fetch at its offset: docs/consumer.md says why);
- KIP-320's validation (`validate_positions`): a position whose leader epoch grew is checked with the leader
  (OffsetForLeaderEpoch), and `divergence` (cykafka/subscription_state.py) decides.
Each lookup is a `Fanout` of the request layer: partitions by their leader from the metadata snapshot (one without a
leader is looked up again after a metadata update), retried by the error table until the deadline; a leader that cannot
be asked (it died) sends its partitions back to the lookup. No retry loop here but `position`'s wait for its answer (the
wait Java's position() has). A request still out at the deadline is kept (the Asker's `kept`), so a poll(0) in a loop
makes progress.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

from cykafka.config import ConsumerConfig
from cykafka.errors import (
    InvalidArgumentError,
    KafkaError,
    KafkaTimeoutError,
    LogTruncationError,
    NoOffsetForPartitionError,
    UnsupportedVersionError,
)
from cykafka.fetcher import fetch_request
from cykafka.ports import Clock, ClusterSnapshot, MetadataSource, TopicPartition, by_topic, checked_partitions
from cykafka.ports.values import ListOffsetsResultInfo, OffsetAndMetadata
from cykafka.protocol import Request
from cykafka.protocol import apis as api
from cykafka.protocol.error_codes import error_for
from cykafka.requests.ask import Asker
from cykafka.requests.calls import Call
from cykafka.requests.fanout import LEADER_MOVED, Again, Fanout
from cykafka.requests.offsets import list_offsets_request, read_list_offsets
from cykafka.requests.routes import Broker, Route
from cykafka.subscription_state import SubscriptionState, divergence

T = TypeVar("T")
log = logging.getLogger("cykafka.consumer")
EARLIEST_TIMESTAMP, LATEST_TIMESTAMP = -2, -1  # ListOffsets timestamps
Committed = Callable[[list[TopicPartition], int], Mapping[TopicPartition, OffsetAndMetadata | None]]


class OffsetFetcher:
    """See the module docstring. `committed(partitions, deadline_ms)`: the group's committed offsets;
    `backoff(deadline_ms)`: the consumer's wait before a call tries again (ConsumerWaits.backoff)."""

    def __init__(self, config: ConsumerConfig, subscriptions: SubscriptionState, metadata: MetadataSource,
                 clock: Clock, asker: Asker, committed: Committed, wakeup: Callable[[], None],
                 backoff: Callable[[int], None]) -> None:
        self.config = config
        self.subscriptions = subscriptions
        self.metadata = metadata
        self.clock = clock
        self.asker = asker
        self.committed = committed
        self.wakeup = wakeup
        self.backoff = backoff
        self.kept: dict[Hashable, Call] = {}  # requests still out at a deadline, for the same ones asked again

    # -- positions ----------------------------------------------------------------------------------------------

    def position(self, tp: TopicPartition, deadline_ms: int) -> int:
        """Consumer.position: tp's position, resolved (and validated) now when unknown, tried again after a retriable
        failure (a leader moved under the lookup) until the deadline, as Java's."""
        with self.subscriptions.lock:
            state = self.subscriptions.state(tp, "position")
        while True:
            try:
                self.resolve_positions(deadline_ms)
            except KafkaError as e:
                if isinstance(e, KafkaTimeoutError) or not e.retriable or self.clock.monotonic_ms() >= deadline_ms:
                    raise
                self.backoff(deadline_ms)
                continue
            self.validate_positions()
            with self.subscriptions.lock:
                position = None if state.awaiting_validation else state.position
            if position is not None:
                return position
            if self.clock.monotonic_ms() >= deadline_ms:
                raise KafkaTimeoutError(f"position({tp}): not known before the timeout")
            if state.position is not None:  # its validation is out: wait a little for the answer
                self.backoff(deadline_ms)

    def resolve_positions(self, deadline_ms: int) -> None:
        """Positions of assigned partitions that have none: the committed offset (with a group.id), else
        auto.offset.reset; seek_to_beginning/seek_to_end and OFFSET_OUT_OF_RANGE leave a reset to do here."""
        sub = self.subscriptions
        missing = sub.missing_positions()
        if not missing:
            return
        fresh = [tp for tp, (_, reset) in missing.items() if reset is None]
        committed: Mapping[TopicPartition, OffsetAndMetadata | None] = {}
        if fresh and self.config.group_id is not None:
            committed = self.committed(fresh, deadline_ms)
        resets: dict[str, list[TopicPartition]] = defaultdict(list)
        found: dict[TopicPartition, int] = {}
        epochs: dict[TopicPartition, int] = {}  # a committed offset's leader epoch: validated before fetching
        for tp, (_, reset) in missing.items():
            om = committed.get(tp)
            if om is not None:
                found[tp], epochs[tp] = om.offset, om.leader_epoch
            else:
                resets[reset or self.config.auto_offset_reset].append(tp)
        if resets["none"]:
            with sub.lock:
                for tp in resets["none"]:
                    state = sub.states.get(tp)
                    if state is not None and state.epoch == missing[tp][0]:
                        state.reset = "none"
            raise NoOffsetForPartitionError(
                f"no offset to start from for {', '.join(f'{tp.topic} [{tp.partition}]' for tp in resets['none'])}: "
                f"no committed offset (or it is out of range) and auto.offset.reset is none; seek() first",
                partitions=resets["none"])
        if resets["earliest"]:
            earliest = self.list_offsets(dict.fromkeys(resets["earliest"], EARLIEST_TIMESTAMP), deadline_ms)
            found.update((tp, info.offset) for tp, info in earliest.items())
        if resets["latest"]:
            found.update(self.end_offsets(resets["latest"], deadline_ms))
        with sub.lock:
            for tp, offset in found.items():
                state = sub.states.get(tp)
                if state is not None and state.epoch == missing[tp][0]:
                    epoch = epochs.get(tp, -1)
                    state.seek(offset, offset_epoch=epoch, validate=epoch >= 0)
        self.wakeup()

    def validate_positions(self) -> None:
        """KIP-320, Java's validatePositionsIfNeeded: a partition whose leader epoch grew since its position was
        checked, while the position knows the leader epoch it was read in (or comes with one: a committed offset, a
        seek with an OffsetAndMetadata), is not fetched until its leader answers OffsetForLeaderEpoch: where does that
        epoch end in your log? Never waits: the requests go out, a later call (the poll loop's next turn) takes the
        answers. `divergence` decides: the log holds the position (fetch on), or it was truncated under it: with
        auto.offset.reset the position moves to the first offset known to diverge (the policy's reset when that is
        unknown), with none LogTruncationError is raised, again by each poll until seek(). A broker without the API
        (Tansu) is not asked, nor a partition whose metadata carries no leader epoch: Java skips the check there."""
        snapshot = self.metadata.snapshot()
        now_ms = self.clock.monotonic_ms()
        due = self._positions_to_validate(snapshot, now_ms)
        if not due:
            return
        routes: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in due:
            routes[snapshot.leader(tp.topic, tp.partition)].append(tp)
        truncated: dict[TopicPartition, tuple[int, tuple[int, int]]] = {}
        for node_id, tps in routes.items():
            request = Request(api.OFFSET_FOR_LEADER_EPOCH.key, {"replica_id": -2, "topics": by_topic(tps, lambda tp: {
                "partition": tp.partition, "current_leader_epoch": due[tp][2], "leader_epoch": due[tp][1]},
                topic="topic")})
            try:  # still out: KafkaTimeoutError, its answer taken by a later call
                answer = self.asker.ask(request, Broker(node_id), now_ms, once=True, kept=self.kept).body
            except KafkaTimeoutError:
                continue
            except UnsupportedVersionError:  # the broker cannot check: fetch without (Java)
                answer = {"topics": by_topic(tps, lambda tp: {"partition": tp.partition, "error_code": 0,
                                                              "leader_epoch": due[tp][1], "end_offset": due[tp][0]},
                                             topic="topic")}
            except KafkaError as e:
                if not e.retriable:
                    raise
                self._validation_backoff(tps, now_ms)  # a lost connection, mostly
                continue
            with self.subscriptions.lock:
                for t in answer["topics"]:
                    for p in t["partitions"]:
                        tp = TopicPartition(t["topic"], p["partition"])
                        if tp in due and (found := self._validated(tp, p, due[tp], now_ms)) is not None:
                            truncated[tp] = found
        self.wakeup()
        if truncated:
            raise LogTruncationError(fetch_offsets={tp: position for tp, (position, _) in truncated.items()},
                                     divergent_offsets={tp: d for tp, (_, d) in truncated.items() if d[0] >= 0})

    def _validation_backoff(self, tps: Iterable[TopicPartition], now_ms: int) -> None:
        """A position's check failed in a way worth retrying: again after retry.backoff.ms, with fresh metadata."""
        self.metadata.request_update()
        with self.subscriptions.lock:
            for tp in tps:
                state = self.subscriptions.states.get(tp)
                if state is not None:
                    state.not_before_ms = now_ms + self.config.retry_backoff_ms

    def _positions_to_validate(self, snapshot: ClusterSnapshot, now_ms: int) -> dict[TopicPartition, tuple[int, int,
                                                                                                           int]]:
        """With the metadata's leader epochs: the positions to check now, {partition: (position, its leader epoch,
        the current leader epoch)}; a partition whose leader epoch grew starts awaiting validation here."""
        due: dict[TopicPartition, tuple[int, int, int]] = {}
        with self.subscriptions.lock:
            for tp, state in self.subscriptions.states.items():
                if state.position is None:
                    continue
                parts = snapshot.partitions.get(tp.topic)
                info = parts[tp.partition] if parts is not None and 0 <= tp.partition < len(parts) else None
                leader = info.leader if info is not None else -1
                if info is not None and leader >= 0 and info.leader_epoch > state.leader_epoch:
                    state.leader_epoch = info.leader_epoch
                    if state.offset_epoch >= 0 and not state.awaiting_validation:  # drops what was fetched for it
                        state.seek(state.position, offset_epoch=state.offset_epoch, validate=True)
                if not state.awaiting_validation or now_ms < state.not_before_ms:
                    continue
                if leader < 0:  # wait for the leader (the fetcher does not look at this partition now)
                    self.metadata.add_topic(tp.topic, now_ms)
                    self.metadata.request_update()
                    state.not_before_ms = now_ms + self.config.retry_backoff_ms
                elif state.leader_epoch < 0:  # the broker gives no leader epochs: nothing to check against
                    state.awaiting_validation = False
                else:
                    due[tp] = (state.position, state.offset_epoch, state.leader_epoch)
        return due

    def _validated(self, tp: TopicPartition, p: Mapping[str, Any], asked: tuple[int, int, int],
                   now_ms: int) -> tuple[int, tuple[int, int]] | None:
        """With the lock held: one partition's OffsetForLeaderEpoch answer p to `asked` (position, its epoch, leader
        epoch) applied to its state. Returns (position, divergence) when the log was truncated and auto.offset.reset
        is none (LogTruncationError's)."""
        state = self.subscriptions.states.get(tp)
        if (state is None or not state.awaiting_validation
                or (state.position, state.offset_epoch, state.leader_epoch) != asked):
            return None  # sought, reset or validated since it was asked
        position, offset_epoch, _ = asked
        if p["error_code"]:
            error = error_for(p["error_code"], f"validating the position of {tp.topic} [{tp.partition}] at offset "
                                               f"{position}")
            if not error.retriable:
                raise error
            self.metadata.request_update()  # a stale leader, mostly: again after a backoff
            state.not_before_ms = now_ms + self.config.retry_backoff_ms
            return None
        diverged = divergence(position, p["end_offset"], p["leader_epoch"])
        policy = self.config.auto_offset_reset
        if diverged is None:
            state.awaiting_validation = False
        elif policy == "none":
            log.warning("truncation detected for %s [%s] at offset %s (leader epoch %s): the leader's log ends at %s "
                        "in that epoch, and auto.offset.reset is none", tp.topic, tp.partition, position,
                        offset_epoch, diverged[0])
            state.not_before_ms = now_ms + self.config.retry_backoff_ms
            return position, diverged
        elif diverged[0] < 0:
            log.info("truncation detected for %s [%s] at offset %s (leader epoch %s), the first offset to diverge is "
                     "unknown: resetting the position (auto.offset.reset=%s)", tp.topic, tp.partition, position,
                     offset_epoch, policy)
            state.seek(None, policy)
        else:
            log.info("truncation detected for %s [%s] at offset %s (leader epoch %s): resetting the position to %s, "
                     "the first offset known to diverge (leader epoch %s)", tp.topic, tp.partition, position,
                     offset_epoch, *diverged)
            state.seek(diverged[0], offset_epoch=diverged[1])
        return None

    # -- offsets ------------------------------------------------------------------------------------------------

    def beginning_offsets(self, tps: list[TopicPartition], deadline_ms: int) -> dict[TopicPartition, int]:
        """Each partition's first offset (ListOffsets, earliest)."""
        found = self.list_offsets(dict.fromkeys(tps, EARLIEST_TIMESTAMP), deadline_ms)
        return {tp: info.offset for tp, info in found.items()}

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int],
                          deadline_ms: int) -> dict[TopicPartition, ListOffsetsResultInfo | None]:
        """Consumer.offsets_for_times: each timestamp checked (an int >= 0, ms), then ListOffsets by timestamp;
        None where no record is that recent."""
        tps = checked_partitions(timestamps, "offsets_for_times")
        for tp in tps:
            ts = timestamps[tp]
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise InvalidArgumentError(f"offsets_for_times: the timestamp of {tp} must be an int >= 0 (ms), got "
                                           f"{ts!r}")
        found = self.list_offsets({tp: timestamps[tp] for tp in tps}, deadline_ms)
        return {tp: info if info.offset >= 0 else None for tp, info in found.items()}

    def list_offsets(self, timestamps: Mapping[TopicPartition, int],
                     deadline_ms: int) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """ListOffsets at each partition's leader."""
        def request(tps: list[TopicPartition]) -> Request:
            return list_offsets_request({tp: timestamps[tp] for tp in tps}, read_committed=self.config.read_committed)

        return self._by_leader(list(timestamps), deadline_ms, request,
                               lambda answer: read_list_offsets(answer, "listing offsets of"))

    def end_offsets(self, tps: list[TopicPartition], deadline_ms: int) -> dict[TopicPartition, int]:
        """High watermarks (last stable offsets with read_committed): ListOffsets latest, as Java's, from a broker
        that reports finalized features (Apache Kafka 2.7 on); from the others (Tansu's latest is the last batch's
        first offset + 1) a Fetch at the offset it gave, in range on both, whose answer carries the true watermarks
        (docs/consumer.md)."""
        starts = {tp: info.offset for tp, info in
                  self.list_offsets(dict.fromkeys(tps, LATEST_TIMESTAMP), deadline_ms).items()}
        if self.asker.router.transport.finalized_features().epoch >= 0:
            return starts
        read_committed = self.config.read_committed

        def request(group: list[TopicPartition]) -> Request:  # Tansu answers max_wait_ms=0 with no partitions
            return fetch_request({tp: (starts[tp], 1, -1) for tp in group}, max_wait_ms=1, min_bytes=0, max_bytes=1,
                                 read_committed=read_committed)

        def end(answer: Mapping[str, Any]) -> dict[TopicPartition, int | KafkaError]:
            return {TopicPartition(t["topic"], p["partition_index"]):
                    error_for(p["error_code"], f"reading the end offset of {t['topic']} [{p['partition_index']}]")
                    if p["error_code"] else int(p["last_stable_offset"] if read_committed and p["last_stable_offset"]
                                                >= 0 else p["high_watermark"])
                    for t in answer["responses"] for p in t["partitions"]}

        return self._by_leader(tps, deadline_ms, request, end)

    def _by_leader(self, tps: list[TopicPartition], deadline_ms: int,
                   request: Callable[[list[TopicPartition]], Request],
                   read: Callable[[Mapping[str, Any]], Mapping[TopicPartition, T | KafkaError]],
                   ) -> dict[TopicPartition, T]:
        """One request per leader for its partitions, its answer read per partition (the request layer's Fanout);
        the first partition's error is raised."""
        fanout: Fanout[TopicPartition, T] = Fanout(
            self.asker, self._leaders, request, lambda items, body, node: read(body), moves=LEADER_MOVED,
            name=lambda tp: f"{tp.topic} [{tp.partition}]", reroute=True, kept=self.kept)
        results = fanout.run(tps, deadline_ms)
        return {tp: result.result() for tp, result in results.items()}

    def _leaders(self, items: list[TopicPartition]) -> dict[TopicPartition, Route | KafkaError | Again]:
        """Partitions' routes: their leader in the metadata snapshot; one without is looked up again, after a
        metadata update."""
        snapshot = self.metadata.snapshot()
        now_ms = self.clock.monotonic_ms()
        routes: dict[TopicPartition, Route | KafkaError | Again] = {}
        for tp in items:
            leader = snapshot.leader(tp.topic, tp.partition)
            if leader >= 0:
                routes[tp] = Broker(leader)
            else:
                self.metadata.add_topic(tp.topic, now_ms)
                routes[tp] = Again(KafkaTimeoutError(f"no leader known for {tp} before the deadline (the topic or "
                                                     f"partition may not exist)"))
        if len(routes) > sum(isinstance(r, Broker) for r in routes.values()):
            self.metadata.request_update()
            self.wakeup()
        return routes
