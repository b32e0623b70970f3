"""KIP-227 fetch sessions: the client's state machine (core/fetch_session.py, Java's FetchSessionHandler), the consumer
against the fake cluster running sessions as a Kafka broker does (wire mode), and against brokers that offer none
(Tansu, librdkafka's mock cluster: every fetch stays full)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from fakes import fake_cluster, fake_producer

from cykafka import Consumer, Producer, TopicPartition
from cykafka.adapters.clock import ManualClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.core.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, MAX_EPOCH, FetchSession, next_epoch
from cykafka.ports import Ports
from cykafka.protocol import Request
from cykafka.protocol.apis import FETCH
from cykafka.protocol.error_codes import ErrorCode

A, B, C = "a", "b", "c"
OK = ErrorCode.NONE


def _session(partitions: dict[str, tuple[int, int]], session_id: int = 42) -> FetchSession[str, tuple[int, int]]:
    """A session the broker created (id 42) with `partitions`, its next fetch incremental."""
    session: FetchSession[str, tuple[int, int]] = FetchSession()
    plan = session.build(partitions)
    assert (plan.session_id, plan.epoch, plan.to_send, plan.to_forget) == (0, INITIAL_EPOCH, partitions, [])
    assert session.handle_response(OK, session_id, partitions)
    return session


# -- the state machine ------------------------------------------------------------------------------------------------

def test_full_then_incremental_lists_only_added_and_changed_and_forgets_removed() -> None:
    session = _session({A: (0, 100), B: (5, 100)})
    plan = session.build({A: (0, 100), B: (5, 100)})
    assert (plan.session_id, plan.epoch, plan.to_send, plan.to_forget) == (42, 1, {}, [])
    assert plan.partitions == {A: (0, 100), B: (5, 100)} and not plan.full
    assert session.handle_response(OK, 42, [A])  # only partitions with news are named
    plan = session.build({A: (10, 100), C: (0, 100)})  # A moved on, B gone, C new
    assert (plan.epoch, plan.to_send, plan.to_forget) == (2, {A: (10, 100), C: (0, 100)}, [B])
    assert plan.partitions == {A: (10, 100), C: (0, 100)}
    assert session.handle_response(OK, 42, [])
    plan = session.build({A: (10, 200), C: (0, 100)})  # a larger partition_max_bytes is a change too
    assert (plan.epoch, plan.to_send, plan.to_forget) == (3, {A: (10, 200)}, [])


def test_session_id_not_found_starts_over_without_a_session() -> None:
    session = _session({A: (0, 100)})
    session.build({A: (0, 100)})
    assert not session.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    plan = session.build({A: (3, 100)})
    assert (plan.session_id, plan.epoch, plan.to_send) == (0, INITIAL_EPOCH, {A: (3, 100)}) and plan.full


@pytest.mark.parametrize("code", [ErrorCode.INVALID_FETCH_SESSION_EPOCH, ErrorCode.UNKNOWN_SERVER_ERROR])
def test_other_errors_replace_the_session_with_a_full_fetch_naming_it(code: int) -> None:
    session = _session({A: (0, 100), B: (0, 100)})
    session.build({A: (0, 100), B: (0, 100)})
    assert not session.handle_response(code, 0, [])
    plan = session.build({A: (0, 100), B: (0, 100)})  # Java's nextCloseExistingAttemptNew: old id, epoch 0
    assert (plan.session_id, plan.epoch, plan.to_send, plan.to_forget) == (42, 0, {A: (0, 100), B: (0, 100)}, [])
    assert session.handle_response(OK, 43, [A, B])
    assert (session.build({A: (0, 100), B: (0, 100)}).session_id, session.epoch) == (43, 1)


def test_a_lost_answer_replaces_the_session() -> None:
    session = _session({A: (0, 100)})
    session.build({A: (7, 100)})
    session.handle_error()
    plan = session.build({A: (7, 100)})
    assert (plan.session_id, plan.epoch, plan.to_send) == (42, 0, {A: (7, 100)})


def test_the_epoch_wraps_to_one_and_final_stays_final() -> None:
    assert [next_epoch(e) for e in (0, 1, MAX_EPOCH - 1, MAX_EPOCH, FINAL_EPOCH)] == [1, 2, MAX_EPOCH, 1, -1]
    session = _session({A: (0, 100)})
    session.epoch = MAX_EPOCH
    assert session.build({A: (0, 100)}).epoch == MAX_EPOCH
    assert session.handle_response(OK, 42, [])
    assert session.build({A: (0, 100)}).epoch == 1


def test_a_broker_without_sessions_gets_full_fetches_and_may_omit_partitions() -> None:
    session: FetchSession[str, tuple[int, int]] = FetchSession()
    for offset in range(3):
        plan = session.build({A: (offset, 100), B: (0, 100)})
        assert (plan.session_id, plan.epoch, plan.to_send) == (0, 0, {A: (offset, 100), B: (0, 100)})
        assert session.handle_response(OK, 0, [A])


def test_invalid_answers_are_dropped_and_the_next_fetch_is_full() -> None:
    session = _session({A: (0, 100)})
    session.build({A: (0, 100)})
    assert not session.handle_response(OK, 42, [A, B])  # B is not in the session
    assert (session.session_id, session.epoch) == (42, 0)
    session.build({A: (0, 100), B: (0, 100)})
    assert not session.handle_response(OK, 44, [A])  # a session's full answer must name every partition
    assert (session.session_id, session.epoch) == (0, 0)


def test_the_broker_closing_the_session_and_the_client_closing_it() -> None:
    session = _session({A: (0, 100)})
    session.build({A: (0, 100)})
    assert session.handle_response(OK, 0, [A])  # an incremental answer with session 0: the broker closed it
    assert (session.session_id, session.epoch) == (0, 0)
    assert session.close() is None  # nothing to close
    session = _session({A: (0, 100)})
    plan = session.close()
    assert plan is not None and (plan.session_id, plan.epoch, plan.to_send, plan.to_forget) == (42, -1, {}, [])
    assert session.close() is None and session.build({A: (0, 100)}).session_id == 0


# -- the consumer against the fake cluster, sessions run as Kafka runs them ----------------------------------------

TOPIC = "sessions"


def _fetches(cluster: FakeCluster, node_id: int | None = None) -> list[dict[str, Any]]:
    return [r.body for n, r in cluster.requests
            if isinstance(r, Request) and r.api_key == FETCH.key and node_id in (None, n)]


def _listed(body: dict[str, Any]) -> dict[int, int]:
    """partition -> fetch offset of the partitions a Fetch lists."""
    return {p["partition"]: p["fetch_offset"] for t in body["topics"] for p in t["partitions"]}


def _shape(body: dict[str, Any]) -> tuple[int, int, dict[int, int], list[int]]:
    """(session_id, session_epoch, {listed partition: fetch offset}, forgotten partitions) of a Fetch."""
    return (body["session_id"], body["session_epoch"], _listed(body),
            [p for t in body["forgotten_topics_data"] for p in t["partitions"]])


class _Setup:
    """A 2-broker fake cluster in wire mode, 4 partitions (0 and 2 led by node 0, 1 and 3 by node 1), a producer
    and a consumer run by hand under one ManualClock."""

    def __init__(self, wire: dict[int, int] | None = None, **cluster_options: Any) -> None:
        self.clock = ManualClock(auto_tick_ms=1)
        self.cluster = fake_cluster(self.clock, TOPIC, partitions=4, brokers=2, wire=wire or {}, **cluster_options)
        self.producer: Producer = fake_producer(self.cluster, self.clock, topic=TOPIC, **{"linger.ms": 0})
        self.consumer = Consumer({"bootstrap.servers": "fake:9092", "max.poll.records": 1000},
                                 ports=Ports(transport=self.cluster, clock=self.clock, start_sender=False))
        self.consumer.assign([TopicPartition(TOPIC, p) for p in range(4)])
        for p in range(4):
            self.consumer.seek(TopicPartition(TOPIC, p), 0)
        self.written: dict[int, int] = {p: 0 for p in range(4)}

    def write(self, partition: int, count: int) -> None:
        futures = [self.producer.send(TOPIC, b"%d-%d" % (partition, self.written[partition] + i), partition=partition)
                   for i in range(count)]
        for _ in range(50):
            if all(f.done() for f in futures):
                break
            self.clock.advance(10)  # past the producer's retry.backoff.ms when a leader moved
            self.producer.sender.run_once()
        assert [f.result(0).offset for f in futures] == list(range(self.written[partition],
                                                                   self.written[partition] + count))
        self.written[partition] += count

    def read(self, count: int) -> list[tuple[int, int, bytes | None]]:
        """The next `count` records polled, sorted (no more come), within 500 ms of the fake clock."""
        got: list[tuple[int, int, bytes | None]] = []
        for _ in range(100):
            if len(got) >= count:
                break
            got += [(r.partition, r.offset, r.value) for r in self.consumer.poll(0.005)]
        assert len(got) == count, got
        return sorted(got)

    def round(self, counts: dict[int, int]) -> None:
        """Writes counts[p] records to each partition p, then reads exactly those."""
        expected: list[tuple[int, int, bytes | None]] = []
        for partition, count in counts.items():
            expected += _expected(partition, self.written[partition], count)
            self.write(partition, count)
        assert self.read(len(expected)) == sorted(expected)

    def fetches(self, node_id: int, first: int = 0) -> list[tuple[int, int, dict[int, int], list[int]]]:
        return [_shape(b) for b in _fetches(self.cluster, node_id)[first:]]

    def session_id(self, node_id: int) -> int:
        (session_id,) = self.cluster.sessions[node_id]
        return session_id

    def close(self) -> None:
        self.consumer.close(0)
        self.producer.close(0)


def _expected(partition: int, first: int, count: int) -> list[tuple[int, int, bytes]]:
    return [(partition, first + i, b"%d-%d" % (partition, first + i)) for i in range(count)]


def test_the_consumer_fetches_incrementally_from_a_broker_offering_sessions() -> None:
    s = _Setup()
    s.round({0: 5, 1: 3})
    assert s.fetches(0) == [(0, 0, {0: 0, 2: 0}, [])]  # full: open a session
    assert s.fetches(1) == [(0, 0, {1: 0, 3: 0}, [])]
    for count in (4, 1, 1):  # partition 0 moves on, 2 (empty) is implied: the broker keeps its offset
        s.round({0: count})
    s.round({2: 2})
    session_id = s.session_id(0)
    assert s.fetches(0)[1:5] == [(session_id, 1, {0: 5}, []), (session_id, 2, {0: 9}, []),
                                 (session_id, 3, {0: 10}, []), (session_id, 4, {0: 11}, [])]
    assert s.fetches(1)[1][:2] == (s.session_id(1), 1)
    s.close()


def test_pause_forgets_a_partition_resume_and_seek_send_it_again() -> None:
    s = _Setup()
    s.round({0: 2, 2: 2})
    session_id = s.session_id(0)
    s.consumer.pause([TopicPartition(TOPIC, 2)])
    s.write(0, 1)
    s.write(2, 1)
    assert s.read(1) == _expected(0, 2, 1)
    assert s.fetches(0, 1)[0] == (session_id, 1, {0: 2}, [2])
    s.consumer.resume([TopicPartition(TOPIC, 2)])
    s.consumer.seek(TopicPartition(TOPIC, 2), 1)
    assert s.read(2) == _expected(2, 1, 2)  # from the sought offset, through the same session
    assert s.fetches(0, 2)[0] == (session_id, 2, {0: 3, 2: 1}, [])  # 2 added again, 0 moved on
    assert {f[0] for f in s.fetches(0, 1)} == {session_id} == set(s.cluster.sessions[0])
    s.close()


def test_a_moved_leader_takes_the_partition_from_one_session_to_the_other() -> None:
    s = _Setup()
    s.round({0: 2, 1: 1})
    ids = [s.session_id(0), s.session_id(1)]
    seen = [len(s.fetches(n)) for n in (0, 1)]
    s.cluster.move_leader(TOPIC, 0, 1)
    s.round({0: 2})
    # node 0 answers partition 0 NOT_LEADER_OR_FOLLOWER, then is told to forget it; node 1 adds it to its session
    assert s.fetches(0, seen[0])[:2] == [(ids[0], 1, {0: 2}, []), (ids[0], 2, {}, [0])]
    assert next(f for f in s.fetches(1, seen[1]) if 0 in f[2])[::2] == (ids[1], {0: 2})
    assert (s.session_id(0), s.session_id(1)) == (ids[0], ids[1])
    s.close()


@pytest.mark.parametrize("lost", ["evicted", "wrong epoch"])
def test_a_session_the_broker_lost_is_replaced_by_a_full_fetch_at_once(lost: str) -> None:
    """FETCH_SESSION_ID_NOT_FOUND -> a full fetch without a session id; INVALID_FETCH_SESSION_EPOCH -> a full fetch
    naming the old session, which the broker drops (Java: close it, attempt a new one). Both at once: waiting
    retry.backoff.ms would fail read()."""
    s = _Setup()
    s.round({0: 3})
    old_id = s.session_id(0)
    s.consumer._fetcher._retry_backoff_ms = 60_000
    if lost == "evicted":
        s.cluster.evict_fetch_sessions(0)
    else:
        s.cluster.sessions[0][old_id].epoch += 5
    s.round({0: 2})
    full_id = 0 if lost == "evicted" else old_id
    assert s.fetches(0, 1)[:2] == [(old_id, 1, {0: 3}, []), (full_id, 0, {0: 3, 2: 0}, [])]
    assert s.session_id(0) != old_id
    s.close()


def test_a_lost_connection_replaces_the_session() -> None:
    s = _Setup()
    s.round({0: 3})
    session_id = s.session_id(0)
    s.cluster.delay_ms[0] = 10_000  # the next fetch stays in flight, and the connection drops under it
    before = len(s.fetches(0))
    for _ in range(5):
        s.consumer.network.run_once()
    assert s.fetches(0, before) == [(session_id, 1, {0: 3}, [])]
    s.cluster.disconnect(0)
    s.cluster.delay_ms[0] = 0
    s.round({0: 2})
    assert s.fetches(0, before + 1)[0] == (session_id, 0, {0: 3, 2: 0}, [])
    assert s.session_id(0) != session_id
    s.close()


def test_consumer_close_sends_the_final_epoch_to_each_broker() -> None:
    s = _Setup()
    s.round({0: 1, 1: 1})
    ids = [s.session_id(0), s.session_id(1)]
    s.consumer.close(5)
    assert s.consumer._fetcher.sessions_closed
    assert [s.fetches(n)[-1] for n in (0, 1)] == [(ids[0], -1, {}, []), (ids[1], -1, {}, [])]
    assert s.cluster.sessions == {0: {}, 1: {}}
    s.close()


@pytest.mark.parametrize("setup", [{"fetch_sessions": False}, {"wire": {FETCH.key: 6}}], ids=["declined", "fetch-v6"])
def test_a_fake_broker_without_sessions_gets_full_fetches(setup: dict[str, Any]) -> None:
    """A broker declining sessions (session_id 0 answers), or one speaking Fetch v6 (no session fields on the wire)."""
    s = _Setup(**setup)
    s.round({0: 2})
    s.round({0: 2})
    assert s.fetches(0)[:2] == [(0, 0, {0: 0, 2: 0}, []), (0, 0, {0: 2, 2: 0}, [])]
    assert s.cluster.sessions[0] == {}
    s.close()


# -- brokers that offer no sessions --------------------------------------------------------------------------------

@pytest.mark.parametrize("peer", ["broker", "mock_cluster"])
def test_brokers_without_sessions_keep_getting_full_fetches(peer: str, request: pytest.FixtureRequest) -> None:
    """Tansu and librdkafka's mock cluster answer session_id 0: the consumer's sessions stay empty, every fetch
    full, and reading goes on."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    server = request.getfixturevalue(peer)
    topic = f"nosession-{uuid.uuid4().hex[:8]}"
    if peer == "mock_cluster":
        server.create_topic(topic, [1, 2])
    bootstrap = server.bootstrap_servers
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

    def write(first: int, count: int) -> None:
        for i in range(first, first + count):
            producer.produce(topic, b"v%d" % i, partition=i % 2)
        assert producer.flush(30) == 0

    write(0, 20)
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got: list[Any] = []
        for _ in range(100):
            if len(got) >= 20:
                break
            got += consumer.poll(0.2)
        write(20, 20)
        for _ in range(100):
            if len(got) >= 40:
                break
            got += consumer.poll(0.2)
        sessions = consumer._fetcher.sessions
        assert sessions and all((s.session_id, s.epoch) == (0, INITIAL_EPOCH) for s in sessions.values())
    assert sorted(int(r.value[1:]) for r in got) == list(range(40))


# -- Apache Kafka's FetchManager ------------------------------------------------------------------------------------

def _close_session_from_elsewhere(bootstrap: str, session_id: int) -> None:
    """A full Fetch naming `session_id` with the final epoch, on another connection: Kafka drops that session from
    its cache (as it does a session it evicts), while its consumer stays connected."""
    import socket
    import struct

    from cykafka.broker import _recv_exact
    from cykafka.protocol import decode_response, encode_request

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    body = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1024, "isolation_level": 0, "session_id": session_id,
            "session_epoch": FINAL_EPOCH, "topics": [], "forgotten_topics_data": [], "rack_id": ""}
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode_request(FETCH.key, 12, 1, "evictor", body))
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        _, answer = decode_response(FETCH.key, 12, _recv_exact(sock, size))
    assert answer["error_code"] == 0, answer


@pytest.mark.slow
def test_kafka_serves_incremental_fetches_and_a_lost_session_is_replaced(apache_kafka: Any) -> None:
    """Against Kafka's own session cache: the first Fetch is full, the next ones incremental in the session Kafka
    created (its request log shows the session id and rising epochs, and incremental Fetches that list no
    partitions). A session Kafka dropped from its cache (evicted) answers the next incremental Fetch with
    FETCH_SESSION_ID_NOT_FOUND: the consumer sends a full one without a session id at once and gets a new
    session. A restarted broker (a lost connection) gets a full Fetch closing the old id. Reading goes on with
    nothing lost or repeated."""
    import json
    import time

    cluster = apache_kafka(1, loggers={"kafka.request.logger": "DEBUG"}).start()
    try:
        bootstrap, topic = cluster.bootstrap_servers, f"sessions-{uuid.uuid4().hex[:8]}"
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})

        def write(first: int, count: int) -> None:
            for i in range(first, first + count):
                producer.send(topic, b"v%d" % i, partition=i % 2)
            producer.flush(30)

        def read_until(consumer: Consumer, got: list[Any], count: int) -> None:
            for _ in range(300):
                if len(got) >= count:
                    return
                got += consumer.poll(0.1)
            raise AssertionError(f"read {len(got)} of {count}")

        def fetches() -> list[tuple[int, int, int]]:
            """(session id, epoch, partitions listed) of the consumer's Fetches, as Kafka's request log has them."""
            out = []
            text = (cluster.node(1).directory / "server.log").read_text()
            # Kafka may be writing the log's last line as it is read: only whole lines count
            for line in text[:text.rfind("\n") + 1].splitlines():
                if '"requestApiKey":1,' in line and '"cykafka-consumer' in line:
                    request = json.loads(line[line.index("{"):line.rindex("}") + 1])["request"]
                    out.append((request["sessionId"], request["sessionEpoch"],
                                sum(len(t["partitions"]) for t in request["topics"])))
            return out

        def session_id(consumer: Consumer) -> int:
            (session,) = consumer._fetcher.sessions.values()
            return session.session_id

        def logged_since(consumer: Consumer, start: int, wanted: Callable[[list[tuple[int, int, int]]], bool],
                         ) -> list[tuple[int, int, int]]:
            """The Fetches logged after the first `start`, once `wanted` holds for them (Kafka logs a request after
            sending its answer: the consumer may have the answer first), polling meanwhile; bounded."""
            for _ in range(100):
                logged = fetches()[start:]
                if wanted(logged):
                    break
                got.extend(consumer.poll(0.1))
            return logged

        write(0, 20)
        got: list[Any] = []
        with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                       "fetch.max.wait.ms": 100}) as consumer:
            consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
            read_until(consumer, got, 20)
            time.sleep(0.5)  # a few empty incremental fetches
            first_id = session_id(consumer)
            seen = fetches()
            assert first_id != 0 and seen[0] == (0, 0, 2)  # full: asks for a session, names both partitions
            incremental = [f for f in seen[1:] if f[0] == first_id]
            assert [epoch for _, epoch, _ in incremental] == list(range(1, len(incremental) + 1))
            assert any(listed == 0 for _, _, listed in incremental)  # nothing changed: no partition named

            _close_session_from_elsewhere(bootstrap, first_id)
            write(20, 10)
            read_until(consumer, got, 30)
            for _ in range(100):  # (a Fetch waiting at the broker may still have been answered in the old session)
                if session_id(consumer) not in (0, first_id):
                    break
                got += consumer.poll(0.1)
            second_id = session_id(consumer)
            # the next incremental Fetch of the dropped session, then at once a full one without a session id
            evicted = logged_since(consumer, len(seen), lambda fs: any(f[0] == 0 for f in fs))
            at = next((i for i, f in enumerate(evicted) if f[0] == 0), None)
            assert at is not None, (first_id, evicted)
            assert evicted[at - 1][0] == first_id and evicted[at - 1][1] > 0 and evicted[at] == (0, 0, 2)
            assert second_id not in (0, first_id)

            before_restart = len(fetches())
            cluster.restart(1)  # every session and connection gone
            write(30, 10)
            read_until(consumer, got, 40)
            for _ in range(100):
                if session_id(consumer) not in (0, first_id, second_id):
                    break
                got += consumer.poll(0.1)
            # the connection was lost: a full Fetch closing the old session (Java's handleError), then a new one
            restarted = logged_since(consumer, before_restart, lambda fs: (second_id, 0, 2) in fs)
            assert (second_id, 0, 2) in restarted
            assert session_id(consumer) not in (0, first_id, second_id)
        producer.close()
    finally:
        cluster.stop()
    assert sorted(int(r.value[1:]) for r in got) == list(range(40))
