"""ShareConsumer (KIP-932 share groups) on Apache Kafka 4.4 with share.version=1 (the `share_kafka` fixture: record
lock SHARE_RECORD_LOCK_DURATION_MS, delivery count limit SHARE_DELIVERY_COUNT_LIMIT), and on Tansu, which has no
share groups: the typed error that says so.

Every group starts at the earliest offset (the group config share.auto.offset.reset, set with an
IncrementalAlterConfigs on the GROUP resource before the group's first member joins).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARE_DELIVERY_COUNT_LIMIT, SHARE_RECORD_LOCK_DURATION_MS

from cykafka import (
    AcknowledgeType,
    Admin,
    ConcurrentAccessError,
    ConfigError,
    ConfigResource,
    IllegalStateError,
    InvalidArgumentError,
    InvalidRecordStateError,
    KafkaError,
    NewTopic,
    Producer,
    RecordDeserializationError,
    ShareConsumer,
    ShareGroupsUnsupportedError,
    ShareRecord,
    TopicPartition,
)
from cykafka.ports import Ports

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture()
def share(share_kafka: Any) -> Iterator[Callable[..., tuple[str, str]]]:
    """make(records, batch=...) -> (topic, group): a one-partition topic holding `records` values b"0", b"1", ...
    (produced `batch` per request, so the broker's acquisitions split), and a new group starting at its earliest
    offset."""
    bootstrap = share_kafka.bootstrap_servers
    admin = Admin({"bootstrap.servers": bootstrap})

    def make(records: int, batch: int = 1) -> tuple[str, str]:
        topic, group = _name("share"), _name("workers")
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
        resource = ConfigResource("group", group)
        admin.incremental_alter_configs({resource: [("share.auto.offset.reset", "set", "earliest")]})[
            resource].result()
        with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer:
            for start in range(0, records, batch):
                for i in range(start, min(records, start + batch)):
                    producer.send(topic, value=str(i).encode())
                producer.flush(30)
        return topic, group

    try:
        yield make
    finally:
        admin.close()


def _consumer(share_kafka: Any, group: str, topic: str, **config: object) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": share_kafka.bootstrap_servers, "group.id": group, **config})
    consumer.subscribe([topic])
    return consumer


def _poll_until(consumer: ShareConsumer, count: int, timeout_s: float = 30) -> list[ShareRecord]:
    got: list[ShareRecord] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got.extend(consumer.poll(0.5))
    return got


def test_two_members_on_one_partition_share_its_records_each_accepted_once(share_kafka: Any, share: Any) -> None:
    total = 200
    topic, group = share(total, batch=10)
    accepted: list[tuple[int, KafkaError | None]] = []

    def callback(offsets: dict[TopicPartition, set[int]], error: KafkaError | None) -> None:
        accepted.extend((o, error) for tp_offsets in offsets.values() for o in tp_offsets)

    a = _consumer(share_kafka, group, topic, **{"max.poll.records": 10})
    b = _consumer(share_kafka, group, topic, **{"max.poll.records": 10})
    try:
        a.set_acknowledgement_commit_callback(callback)
        b.set_acknowledgement_commit_callback(callback)
        seen: dict[str, list[int]] = {"a": [], "b": []}
        deadline = time.monotonic() + 60
        while len(seen["a"]) + len(seen["b"]) < total and time.monotonic() < deadline:
            for name, member in (("a", a), ("b", b)):
                seen[name].extend(r.offset for r in member.poll(0.2))
    finally:  # implicit mode: close accepts the last poll's records and reports every answer to the callback
        a.close(10)
        b.close(10)
    print(f"member a read {len(seen['a'])}, member b read {len(seen['b'])} of {total}")
    assert seen["a"] and seen["b"], seen  # both members received records
    assert sorted(seen["a"] + seen["b"]) == list(range(total))  # together every record, none twice
    assert sorted(o for o, _ in accepted) == list(range(total))  # each accepted exactly once
    assert {e for _, e in accepted} == {None}


def test_released_record_comes_back_with_delivery_count_2_and_rejected_never(share_kafka: Any,
                                                                              share: Any) -> None:
    topic, group = share(3, batch=3)
    with _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"}) as consumer:
        first = _poll_until(consumer, 3)
        assert [(r.offset, r.delivery_count) for r in first] == [(0, 1), (1, 1), (2, 1)]
        consumer.acknowledge(first[0], AcknowledgeType.RELEASE)
        consumer.acknowledge(first[1], AcknowledgeType.REJECT)
        consumer.acknowledge(first[2], AcknowledgeType.ACCEPT)
        again = _poll_until(consumer, 1)
        assert [(r.offset, r.delivery_count, r.value) for r in again] == [(0, 2, b"0")]
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        later = _poll_until(consumer, 1, timeout_s=SHARE_RECORD_LOCK_DURATION_MS / 1000 + 3)
        assert later == []  # the rejected (and the accepted) records never come back


def test_a_record_that_fails_to_deserialize_is_released_and_the_others_delivered_once(share_kafka: Any,
                                                                                      share: Any) -> None:
    """Java's ShareConsumer: the record a value.deserializer fails on is released (delivered again until the
    delivery count limit archives it), RecordDeserializationError names it; the records around it are delivered
    once, deserialized. poll_batch refuses deserializers."""
    topic, group = share(3, batch=3)

    def value(data: bytes) -> int:
        if data == b"1":
            raise ValueError("poison")
        return int(data)

    with _consumer(share_kafka, group, topic, **{"value.deserializer": value}) as consumer:
        got: list[ShareRecord] = []
        errors: list[RecordDeserializationError] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (len(got) < 2 or len(errors) < SHARE_DELIVERY_COUNT_LIMIT - 1):
            try:
                got += consumer.poll(0.5)
            except RecordDeserializationError as e:
                errors.append(e)
        quiet_until = time.monotonic() + 3  # archived at the limit: it comes no more
        while time.monotonic() < quiet_until:
            assert consumer.poll(0.5) == []
        assert [(r.offset, r.value, r.delivery_count) for r in got] == [(0, 0, 1), (2, 2, 1)]
        # its first delivery came with record 0 (returned first, nothing raised); each later one raised
        assert [(e.topic, e.partition, e.offset, e.field) for e in errors] == [
            (topic, 0, 1, "value")] * (SHARE_DELIVERY_COUNT_LIMIT - 1)
        with pytest.raises(ConfigError, match=r"value\.deserializer is set"):
            consumer.poll_batch(0.1)


def test_a_record_delivered_delivery_count_limit_times_is_archived(share_kafka: Any, share: Any) -> None:
    topic, group = share(2, batch=2)
    counts = []
    with _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"}) as consumer:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            records = consumer.poll(0.5)
            for record in records:
                if record.offset == 0:
                    counts.append(record.delivery_count)
                    consumer.acknowledge(record, AcknowledgeType.RELEASE)
                else:
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT)
            if len(counts) >= SHARE_DELIVERY_COUNT_LIMIT and not records:
                break
        assert counts == list(range(1, SHARE_DELIVERY_COUNT_LIMIT + 1))  # then archived: never delivered again
        assert _poll_until(consumer, 1, timeout_s=3) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "frozen"])
def test_records_of_a_lost_member_go_to_the_other_none_lost(share_kafka: Any, share: Any, sig: int) -> None:
    """SIGKILL: the dead process's connection closes and the broker releases its records at once; SIGSTOP: its
    connection stays open, and its records come back when their acquisition lock expires."""
    topic, group = share(20, batch=5)
    worker = subprocess.Popen([sys.executable, str(HERE / "share_worker.py"), share_kafka.bootstrap_servers, group,
                               topic], stdout=subprocess.PIPE, text=True)
    try:
        line = worker.stdout.readline() if worker.stdout else ""
        held = json.loads(line)
        assert held, "the worker got no records"
        os.kill(worker.pid, sig)
        lost_at = time.monotonic()
        with _consumer(share_kafka, group, topic) as other:
            counts: dict[int, int] = {}
            back_s: float | None = None
            deadline = time.monotonic() + 30
            while len(counts) < 20 and time.monotonic() < deadline:
                for record in other.poll(0.2):
                    counts[record.offset] = record.delivery_count
                    if record.offset in held and back_s is None:
                        back_s = time.monotonic() - lost_at
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
    print(f"{signal.Signals(sig).name}: the lost member held {held}; they came back to the other member after "
          f"{back_s:.1f} s (lock {SHARE_RECORD_LOCK_DURATION_MS} ms), delivery counts {[counts.get(o) for o in held]}")
    assert sorted(counts) == list(range(20))  # none lost
    assert all(counts[o] == 2 for o in held)  # delivered a second time
    assert set(counts.values()) <= {1, 2}
    assert back_s is not None
    if sig == signal.SIGSTOP:  # not before the lock expired (the broker checks it every few hundred ms)
        assert SHARE_RECORD_LOCK_DURATION_MS / 1000 - 0.5 <= back_s < SHARE_RECORD_LOCK_DURATION_MS / 1000 + 10


def test_implicit_mode_accepts_the_last_poll_records_on_the_next_poll(share_kafka: Any, share: Any) -> None:
    topic, group = share(10, batch=5)
    results: list[tuple[dict[TopicPartition, set[int]], KafkaError | None]] = []
    with _consumer(share_kafka, group, topic, **{"max.poll.records": 5}) as consumer:
        consumer.set_acknowledgement_commit_callback(lambda offsets, error: results.append((offsets, error)))
        with pytest.raises(IllegalStateError, match="implicit acknowledgement"):
            consumer.acknowledge(ShareRecord.__new__(ShareRecord))  # no acknowledge() in implicit mode
        got = _poll_until(consumer, 10)
        assert sorted(r.offset for r in got) == list(range(10))
        assert consumer.commit_sync(10) == {TopicPartition(topic, 0): None}
        assert sorted(o for offsets, e in results for os_ in offsets.values() for o in os_) == list(range(10))
        assert all(e is None for _, e in results)
        assert _poll_until(consumer, 1, timeout_s=SHARE_RECORD_LOCK_DURATION_MS / 1000 + 2) == []  # none again


def test_explicit_mode_poll_without_acknowledging_raises_as_java(share_kafka: Any, share: Any) -> None:
    topic, group = share(3, batch=3)
    with _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"}) as consumer:
        got = _poll_until(consumer, 3)
        consumer.acknowledge(got[0])
        with pytest.raises(IllegalStateError, match="All records must be acknowledged in explicit"):
            consumer.poll(0.1)
        with pytest.raises(IllegalStateError, match="not a record of the last poll"):
            consumer.acknowledge(got[0])  # once only
        consumer.acknowledge(got[1])
        consumer.acknowledge(got[2], AcknowledgeType.ACCEPT)
        assert consumer.poll(0.5) == []


def test_acknowledging_after_the_lock_expired_reports_invalid_record_state(share_kafka: Any, share: Any) -> None:
    topic, group = share(1)
    results: list[tuple[dict[TopicPartition, set[int]], KafkaError | None]] = []
    with _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"}) as consumer:
        consumer.set_acknowledgement_commit_callback(lambda offsets, error: results.append((offsets, error)))
        [record] = _poll_until(consumer, 1)
        time.sleep(SHARE_RECORD_LOCK_DURATION_MS / 1000 + 1.5)  # the lock expires: the record is available again
        consumer.acknowledge(record)
        outcome = consumer.commit_sync(10)
        error = outcome[TopicPartition(topic, 0)]
        assert isinstance(error, InvalidRecordStateError), outcome
        assert results == [({TopicPartition(topic, 0): {0}}, error)]
        [again] = _poll_until(consumer, 1)
        assert (again.offset, again.delivery_count) == (0, 2)
        consumer.acknowledge(again)


def test_a_renewed_record_keeps_its_lock_past_the_lock_duration_then_goes_to_the_other_member(
        share_kafka: Any, share: Any) -> None:
    """RENEW (KIP-1222, ShareAcknowledge v2 with is_renew_ack): while member a renews its record every half lock
    duration, member b (polling all along) never receives it, for 2.5 lock durations; the renewed record comes back
    to a from its next poll, as Java's does. Once a stops renewing, the lock runs out and b gets it, delivery 2."""
    topic, group = share(1)
    lock_s = SHARE_RECORD_LOCK_DURATION_MS / 1000
    results: list[tuple[dict[TopicPartition, set[int]], KafkaError | None]] = []
    a = _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"})
    b = _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        a.set_acknowledgement_commit_callback(lambda offsets, error: results.append((offsets, error)))
        [record] = _poll_until(a, 1)
        assert (record.offset, record.delivery_count) == (0, 1)
        start = time.monotonic()
        renewals, b_got = 0, []
        while time.monotonic() - start < 2.5 * lock_s:
            until = time.monotonic() + lock_s / 2
            while time.monotonic() < until:
                b_got.extend(b.poll(0.2))
            a.acknowledge(record, AcknowledgeType.RENEW)
            assert a.commit_sync(10) == {TopicPartition(topic, 0): None}
            renewals += 1
            [again] = a.poll(5)  # the renewed record, handed out again
            assert (again.offset, again.delivery_count, again.value) == (0, 1, b"0")
            record = again
        print(f"a renewed its record {renewals} times over {time.monotonic() - start:.1f} s "
              f"(lock {lock_s} s); b received {len(b_got)}")
        assert b_got == []  # never redelivered while renewed, well past the lock duration
        assert results == [({TopicPartition(topic, 0): {0}}, None)] * renewals
        # a stops renewing (it holds the record unacknowledged): the lock runs out, b gets it
        moved = _poll_until(b, 1, timeout_s=lock_s + 5)
        assert [(r.offset, r.delivery_count) for r in moved] == [(0, 2)]
        b.acknowledge(moved[0])
        b.commit_sync(10)
    finally:
        a.close(10)
        b.close(10)


def test_renew_is_explicit_mode_only_and_renews_rows_of_a_batch_as_records(share_kafka: Any, share: Any) -> None:
    """acknowledge_batch takes RENEW as acknowledge does (the same path: ShareAcknowledge v2 with is_renew_ack): once
    the broker took it, the renewed rows come back in the next poll_batch, or as ShareRecords in the next poll, and a
    record renewed by acknowledge comes back as a row in the next poll_batch; same offset, same delivery count."""
    topic, group = share(2, batch=2)
    with _consumer(share_kafka, group, topic) as implicit:
        [first, *_] = _poll_until(implicit, 1)
        with pytest.raises(IllegalStateError, match="implicit acknowledgement"):
            implicit.acknowledge(first, AcknowledgeType.RENEW)
    topic, group = share(2, batch=2)
    tp = TopicPartition(topic, 0)
    with _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"}) as consumer:
        batch = consumer.poll_batch(10)
        assert batch.column("offset").to_pylist() == [0, 1]
        consumer.acknowledge_batch(batch, AcknowledgeType.RENEW, rows=range(0, 1))
        consumer.acknowledge_batch(batch, AcknowledgeType.ACCEPT, rows=range(1, 2))
        assert consumer.commit_sync(10) == {tp: None}
        again = consumer.poll_batch(5)  # the renewed row, still this member's
        assert again.column("offset").to_pylist() == [0]
        assert again.column("delivery_count").to_pylist() == [1]
        assert again.column("value").to_pylist() == [b"0"]
        consumer.acknowledge_batch(again, AcknowledgeType.RENEW)
        assert consumer.commit_sync(10) == {tp: None}
        [record] = consumer.poll(5)  # a renewed row through poll: a ShareRecord
        assert (record.offset, record.delivery_count, record.value) == (0, 1, b"0")
        consumer.acknowledge(record, AcknowledgeType.RENEW)
        assert consumer.commit_sync(10) == {tp: None}
        row = consumer.poll_batch(5)  # a renewed ShareRecord through poll_batch: a row
        assert (row.column("offset").to_pylist(), row.column("value").to_pylist()) == ([0], [b"0"])
        consumer.acknowledge_batch(row)
        assert consumer.commit_sync(10) == {tp: None}
        assert consumer.poll_batch(0.5).num_rows == 0  # accepted: gone


def test_a_share_consumer_checks_its_timeouts_and_is_closed_for_every_call_as_java() -> None:
    """The ShareConsumer's calls share the Consumer's waits and lock (cykafka/consumer_waits.py, consumer_lock.py): a
    timeout that is not a number of seconds >= 0 is an InvalidArgumentError naming it (it was a TypeError, or a
    negative one read as 0), and after close() every call raises IllegalStateError (Java's acquireAndEnsureOpen),
    while a second close() returns at once."""
    consumer = ShareConsumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"}, ports=Ports(start_sender=False))
    consumer.subscribe(["t"])
    for bad in (-1, "1", None):
        with pytest.raises(InvalidArgumentError, match="timeout must be a number of seconds >= 0"):
            consumer.poll(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="timeout must be a number of seconds >= 0"):
        consumer.commit_sync(-0.5)
    consumer.close(0.5)
    consumer.close(0.5)
    for call in (consumer.subscription, lambda: consumer.poll(0), consumer.commit_async):
        with pytest.raises(IllegalStateError, match="the share consumer is closed"):
            call()


def test_a_share_consumer_used_from_two_threads_at_once_raises_concurrent_access() -> None:
    """Java's KafkaShareConsumer is for one thread: a call while another thread is inside one (here a waiting poll)
    raises ConcurrentAccessError naming that call; once it returned, another thread may call (no broker: the
    network thread is not started)."""
    consumer = ShareConsumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"}, ports=Ports(start_sender=False))
    consumer.subscribe(["t"])
    inside = threading.Event()
    polled: list[object] = []

    def waiting_poll() -> None:
        inside.set()
        polled.append(consumer.poll(1.5))

    thread = threading.Thread(target=waiting_poll)
    thread.start()
    try:
        assert inside.wait(5)
        time.sleep(0.2)  # the other thread is inside poll, waiting for records
        with pytest.raises(ConcurrentAccessError, match=r"another thread is inside this ShareConsumer's poll\(\)"):
            consumer.poll(0.1)
        with pytest.raises(ConcurrentAccessError):
            consumer.commit_sync(0.1)
    finally:
        thread.join(10)
    assert polled == [[]]
    assert consumer.poll(0) == []  # the first thread left: this one may call
    consumer.close(0)


def _read_all_watching_submits(consumer: ShareConsumer, total: int, watch: Any, *, work_s: float) -> None:
    """Polls until the records 0..total-1 were all read (60 s at most), work_s of work after each poll, each call
    the consumer submits shown to watch(call) first."""
    calls = consumer._network.calls
    submit = calls.submit

    def watched(call: Any, now_ms: int | None = None) -> None:
        watch(call)
        submit(call, now_ms)

    calls.submit = watched  # type: ignore[method-assign]
    got: list[ShareRecord] = []
    deadline = time.monotonic() + 60
    while len(got) < total and time.monotonic() < deadline:
        got.extend(consumer.poll(0.5))
        time.sleep(work_s)
    assert sorted(r.offset for r in got) == list(range(total))


def test_implicit_acknowledgements_ride_the_next_share_fetch(share_kafka: Any, share: Any) -> None:
    """The previous poll's acceptances go with the ShareFetch that follows the caller taking the fetched data (one
    request per batch, as Java's), not in a ShareAcknowledge of their own: counted on the consumer's call queue."""
    total = 2000
    topic, group = share(total, batch=250)  # a fetch acquires whole batches: more than a poll takes
    consumer = _consumer(share_kafka, group, topic, **{"max.poll.records": 100})
    sent: dict[str, int] = {}

    def counting(call: Any) -> None:
        sent[call.what.split(" ")[0]] = sent.get(call.what.split(" ")[0], 0) + 1

    try:
        # the work between polls: the next fetch's answer is in before the next poll hands over acceptances
        _read_all_watching_submits(consumer, total, counting, work_s=0.03)
        fetches, acknowledges = sent.get("ShareFetch", 0), sent.get("ShareAcknowledge", 0)
    finally:
        consumer.close(10)
    print(f"{total} records: {fetches} ShareFetch, {acknowledges} ShareAcknowledge before close")
    assert fetches >= 5
    assert acknowledges <= 1  # without piggy-backing: about one per fetch


def test_the_next_share_fetch_goes_while_the_rest_of_an_answer_would_not_fill_a_poll_and_waits_0_ms(
        share_kafka: Any, share: Any) -> None:
    """A ShareFetch acquires whole batches (250 here) while a poll hands out max.poll.records (200): once what is left
    of an answer (50) would not fill the next poll, the next ShareFetch goes, before the caller takes that rest, so
    its answer is on the way (one round trip less per poll; Fetched.low). Such a fetch ahead of the caller waits 0 ms
    at the broker: one that waited fetch.max.wait.ms for the share partition's record locks held the session and the
    acknowledgements behind it that would free them (4 members on one partition: 1/3 of Java's rate); a fetch for a
    poll that found nothing waits fetch.max.wait.ms. Every record read once."""
    total = 1000
    topic, group = share(total, batch=250)
    consumer = _consumer(share_kafka, group, topic, **{"max.poll.records": 200, "fetch.max.wait.ms": 400})
    fetches: list[tuple[int, int]] = []  # per ShareFetch submitted: records still buffered then, its max_wait_ms
    state = consumer._state

    def watching(call: Any) -> None:
        if call.what.startswith("ShareFetch"):
            fetches.append((sum(f.acquired[-1][1] - f.acquired[0][0] + 1 for f in state.buffer),
                            call.request.body["max_wait_ms"]))

    try:  # the work between polls: the network thread sends what it may meanwhile
        _read_all_watching_submits(consumer, total, watching, work_s=0.05)
    finally:
        consumer.close(10)
    print(f"{total} records: {len(fetches)} ShareFetch, (records buffered, max_wait_ms) when each went: {fetches}")
    ahead = [wait_ms for buffered, wait_ms in fetches if buffered > 0]
    assert len(ahead) >= 2
    assert ahead == [0] * len(ahead)
    assert fetches[0] == (0, 400)  # the first poll found nothing: its fetch waits at the broker


def test_close_releases_held_records_at_once(share_kafka: Any, share: Any) -> None:
    topic, group = share(5, batch=5)
    first = _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"})
    held = _poll_until(first, 5)
    started = time.monotonic()
    first.close(5)
    closed_s = time.monotonic() - started
    assert closed_s < 5
    with _consumer(share_kafka, group, topic) as other:
        got = _poll_until(other, 5, timeout_s=20)
        assert sorted((r.offset, r.delivery_count) for r in got) == [(r.offset, 2) for r in held]


@pytest.mark.broker_only("tansu", reason="Tansu has no share groups: the typed error says the broker lacks them")
def test_a_broker_without_share_groups_raises_a_typed_error(broker: Any) -> None:
    with ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": _name("workers")}) as consumer:
        consumer.subscribe([_name("share")])
        with pytest.raises(ShareGroupsUnsupportedError, match=r"share\.version"):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                consumer.poll(0.5)


def test_config_refuses_consumer_keys_a_share_group_has_no_use_for() -> None:
    from cykafka import ConfigError

    with pytest.raises(ConfigError, match=r"auto\.offset\.reset is not a share consumer key"):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "auto.offset.reset": "earliest"})
    with pytest.raises(ConfigError, match=r"share\.acknowledgement\.mode must be one of implicit, explicit"):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "share.acknowledgement.mode": "x"})
    with pytest.raises(ConfigError, match=r"group\.id is required"):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(ConfigError, match=r"enable\.partition\.eof is not a share consumer key: a share consumer has "
                                          r"no positions"):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "enable.partition.eof": True})




def test_the_worker_pool_of_the_docs_reads_every_record(share_kafka: Any, share: Any) -> None:
    """docs/share-groups.md's worker pool, run as the page has it: four workers, every record read once."""
    text = (HERE.parent / "docs" / "share-groups.md").read_text()
    block = text.split("## A worker pool", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(block, "docs/share-groups.md", "exec"), namespace)
    topic, group = share(100, batch=5)
    stop, threads, results = namespace["run_pool"](
        {"bootstrap.servers": share_kafka.bootstrap_servers, "group.id": group, "max.poll.records": 5}, topic)
    try:
        deadline = time.monotonic() + 60
        while len(results) < 100 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    assert sorted(results, key=int) == [str(i) for i in range(100)]
    assert not any(thread.is_alive() for thread in threads)


def test_a_share_consumer_dropped_unclosed_warns_and_stops_its_thread(share_kafka: Any) -> None:
    import gc
    import threading

    consumer = ShareConsumer({"bootstrap.servers": share_kafka.bootstrap_servers, "group.id": _name("workers")})
    consumer.subscribe([_name("share")])
    thread = consumer._thread
    assert thread is not None and thread.is_alive()
    with pytest.warns(ResourceWarning, match="unclosed"):
        del consumer
        gc.collect()
    thread.join(10)
    assert not thread.is_alive()
    assert thread.name not in {t.name for t in threading.enumerate()}


def test_cli_consume_share_group_prints_its_records_and_releases_those_past_count(share_kafka: Any,
                                                                                   share: Any) -> None:
    topic, group = share(10, batch=10)
    command = [sys.executable, "-m", "cykafka", "consume", topic, "-b", share_kafka.bootstrap_servers,
               "--share-group", group, "-q", "-f", "%s\\n"]
    first = subprocess.run([*command, "-c", "6"], capture_output=True, timeout=60, check=True)
    rest = subprocess.run([*command, "-e"], capture_output=True, timeout=60, check=True)
    printed = first.stdout.split() + rest.stdout.split()
    assert len(first.stdout.split()) == 6
    assert sorted(printed, key=int) == [str(i).encode() for i in range(10)]  # the 4 past -c were released
    assert b"share group" in first.stderr
    refused = subprocess.run([*command, "-o", "beginning"], capture_output=True, timeout=60)
    assert refused.returncode == 2 and b"does not go with --share-group" in refused.stderr


def test_async_share_consumer_polls_and_acknowledges_without_blocking_the_loop(share_kafka: Any, share: Any) -> None:
    import asyncio

    from cykafka.aio import AsyncShareConsumer

    topic, group = share(5, batch=5)

    async def main() -> tuple[list[int], object, int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        beat = asyncio.create_task(ticker())
        async with AsyncShareConsumer({"bootstrap.servers": share_kafka.bootstrap_servers, "group.id": group,
                                       "share.acknowledgement.mode": "explicit"}) as consumer:
            await consumer.subscribe([topic])
            got: list[ShareRecord] = []
            deadline = time.monotonic() + 30
            while len(got) < 5 and time.monotonic() < deadline:
                records = await consumer.poll(0.5)
                for record in records:
                    await consumer.acknowledge(record, AcknowledgeType.ACCEPT)
                got.extend(records)
            outcome = await consumer.commit_sync(10)
        beat.cancel()
        return [r.offset for r in got], outcome, ticks

    offsets, outcome, ticks = asyncio.run(main())
    assert offsets == [0, 1, 2, 3, 4]
    assert outcome == {TopicPartition(topic, 0): None}
    assert ticks > 5  # the loop ran while polls waited


def test_poll_batch_gives_arrow_rows_with_delivery_counts_acknowledged_by_row_ranges(share_kafka: Any,
                                                                                      share: Any) -> None:
    topic, group = share(6, batch=6)
    with _consumer(share_kafka, group, topic, **{"share.acknowledgement.mode": "explicit"}) as consumer:
        batch = None
        deadline = time.monotonic() + 30
        while (batch is None or batch.num_rows == 0) and time.monotonic() < deadline:
            batch = consumer.poll_batch(0.5)
        assert batch is not None and batch.num_rows == 6
        assert batch.schema.names[-1] == "delivery_count" and str(batch.schema.field("delivery_count").type) == "int16"
        assert batch.column("offset").to_pylist() == list(range(6))
        assert batch.column("delivery_count").to_pylist() == [1] * 6
        assert batch.column("value").to_pylist() == [str(i).encode() for i in range(6)]
        consumer.acknowledge_batch(batch, AcknowledgeType.ACCEPT, rows=range(0, 4))
        with pytest.raises(IllegalStateError, match="All records must be acknowledged"):
            consumer.poll_batch(0.1)
        consumer.acknowledge_batch(batch, AcknowledgeType.RELEASE, rows=range(4, 6))
        again = consumer.poll_batch(5)
        while again.num_rows < 2 and time.monotonic() < deadline:
            consumer.acknowledge_batch(again)
            again = consumer.poll_batch(1)
        assert again.column("offset").to_pylist() == [4, 5]
        assert again.column("delivery_count").to_pylist() == [2, 2]
        consumer.acknowledge_batch(again)
        assert consumer.commit_sync(10) == {TopicPartition(topic, 0): None}
