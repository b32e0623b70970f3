"""The fetch pump (core/fetch_pump.pyx): the next Fetch written from an answer's batch headers must be, byte for byte,
the request the Fetcher would send once it filed that answer (cykafka/fetcher.py's fetch_request, the FetchSession's
incremental plan, the generic codec), and any answer the Fetcher has to judge in Python must fire nothing."""

from __future__ import annotations

import contextlib
import fcntl
import selectors
import socket
import struct
import termios
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from test_fetch_decode import batch, control, values

from cykafka import Consumer, Producer
from cykafka.adapters.socket_transport import SocketTransport
from cykafka.core import FETCH_PUMP_VERSION, FetchPump, wait_events
from cykafka.core.fetch_session import FetchSession
from cykafka.fetch_buffer import FETCH_AHEAD_ANSWERS
from cykafka.fetcher import Fetcher, fetch_request
from cykafka.ports import TopicPartition
from cykafka.protocol import encode_request
from cykafka.protocol.apis import FETCH
from cykafka.protocol.frames import encode_response

VERSION = FETCH_PUMP_VERSION
SESSION = 77
CLIENT = "pump-test"
MAX_WAIT_MS, MIN_BYTES, FETCH_MAX_BYTES = 500, 1, 50 * 1024 * 1024
Data = tuple[int, int, int]  # (fetch offset, partition max bytes, leader epoch): the Fetcher's session data

# the session's partitions, topics interleaved (by_topic groups them by first appearance)
SESSION_PARTS: dict[TopicPartition, Data] = {
    TopicPartition("a", 0): (100, 1 << 20, 5),
    TopicPartition("b", 3): (7, 1 << 20, -1),
    TopicPartition("a", 1): (0, 4096, 5),
    TopicPartition("c", 0): (42, 1 << 20, 2),
}


def _session(parts: dict[TopicPartition, Data]) -> FetchSession[TopicPartition, Data]:
    session: FetchSession[TopicPartition, Data] = FetchSession()
    session.build(parts)
    assert session.handle_response(0, SESSION, parts)  # the full answer opens the session
    session.build(parts)  # the request in flight: nothing changed
    return session


def _armed(parts: dict[TopicPartition, Data], *, ends: dict[TopicPartition, int] | None = None,
           read_committed: bool = False, rack: str = "", client: str | None = CLIENT, epoch: int = 2) -> FetchPump:
    pump = FetchPump(client)
    pump.arm(9, 10, SESSION, epoch, MAX_WAIT_MS, MIN_BYTES, FETCH_MAX_BYTES, read_committed, rack,
             [(tp.topic, tp.partition, *data, (ends or {}).get(tp, 10**9)) for tp, data in parts.items()],
             FETCH_AHEAD_ANSWERS)
    return pump


def _partition(index: int, records: bytes | None = None, *, error: int = 0, hw: int = 10**9, lso: int = 10**9,
               replica: int = -1, aborted: list[dict[str, int]] | None = None) -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "high_watermark": hw, "last_stable_offset": lso,
            "log_start_offset": 0, "aborted_transactions": aborted, "preferred_read_replica": replica,
            "records": records}


def _answer(topics: dict[str, list[dict[str, Any]]], *, correlation_id: int = 9, session_id: int = SESSION,
            error: int = 0) -> bytes:
    body = {"throttle_time_ms": 0, "error_code": error, "session_id": session_id,
            "responses": [{"topic": t, "partitions": parts} for t, parts in topics.items()]}
    return encode_response(FETCH.key, VERSION, correlation_id, body)[4:]


def _fetcher_request(parts: dict[TopicPartition, Data], new_offsets: dict[TopicPartition, int], *,
                     max_bytes: int = FETCH_MAX_BYTES, read_committed: bool = False, rack: str = "",
                     client: str | None = CLIENT) -> bytes:
    """What cykafka/fetcher.py sends next once the answer moved new_offsets."""
    session = _session(parts)
    assert session.handle_response(0, SESSION, [])  # the answer: the epoch moves on
    wanted = {tp: ((new_offsets[tp], *data[1:]) if tp in new_offsets else data) for tp, data in parts.items()}
    plan = session.build(wanted)
    request = fetch_request(plan.to_send, max_wait_ms=MAX_WAIT_MS, min_bytes=MIN_BYTES, max_bytes=max_bytes,
                            read_committed=read_committed, session_id=plan.session_id, session_epoch=plan.epoch,
                            forgotten=plan.to_forget, rack_id=rack)
    return encode_request(FETCH.key, VERSION, 10, client, request.body)


@pytest.mark.parametrize("client", [CLIENT, None, "ü" * 40])
@pytest.mark.parametrize("rack", ["", "rack-1"])
@pytest.mark.parametrize("read_committed", [False, True])
def test_the_next_fetch_is_the_fetchers_byte_for_byte(client: str | None, rack: str, read_committed: bool) -> None:
    records_a0 = batch(100, values(3)) + batch(103, values(2))  # two batches: after the last, 105
    records_c0 = batch(42, values(1)) + batch(43, values(4))[:-7]  # a partial tail: up to the whole one, 43
    answer = _answer({"c": [_partition(0, records_c0)], "a": [_partition(0, records_a0), _partition(1, b"")],
                      "b": [_partition(3, None)]})
    pump = _armed(SESSION_PARTS, read_committed=read_committed, rack=rack, client=client)
    fired = pump.fire(answer)
    assert pump.refusal is None
    moved = {TopicPartition("a", 0): 105, TopicPartition("c", 0): 43}
    assert fired == _fetcher_request(SESSION_PARTS, moved, read_committed=read_committed, rack=rack, client=client,
                                     max_bytes=FETCH_MAX_BYTES - len(records_a0) - len(records_c0))
    assert pump.fired_offsets() == [("a", 0, 105), ("c", 0, 43)]  # the session's order
    assert not pump.armed  # one answer, one decision


def test_an_answer_without_records_fires_a_fetch_listing_nothing() -> None:
    pump = _armed(SESSION_PARTS)
    fired = pump.fire(_answer({"b": [_partition(3, None, hw=8)]}))
    assert fired == _fetcher_request(SESSION_PARTS, {})
    assert pump.fired_offsets() == []


def test_the_end_is_the_highest_batch_end_and_counts_control_batches() -> None:
    records = batch(100, values(2)) + control(102, 7, True)
    pump = _armed(SESSION_PARTS)
    assert pump.fire(_answer({"a": [_partition(0, records)]})) is not None
    assert pump.fired_offsets() == [("a", 0, 103)]


def test_the_fired_offsets_are_the_next_arms_starting_point() -> None:
    """fire() moves the pump's partitions: a second answer (after a re-arm by the Fetcher) reads from there."""
    pump = _armed(SESSION_PARTS)
    assert pump.fire(_answer({"a": [_partition(0, batch(100, values(3)))]})) is not None
    assert pump.fired_offsets() == [("a", 0, 103)]


@pytest.mark.parametrize(("answer", "refusal"), [
    (_answer({"a": [_partition(0, batch(100, values(1)))]}, correlation_id=8), "an answer to another request"),
    (_answer({}, error=70), "an error code"),  # FETCH_SESSION_ID_NOT_FOUND
    (_answer({"a": [_partition(0, None, error=1)]}), "an error code"),  # OFFSET_OUT_OF_RANGE
    (_answer({"a": [_partition(0, None, error=6)]}), "an error code"),  # NOT_LEADER_OR_FOLLOWER
    (_answer({}, session_id=SESSION + 1), "another fetch session"),
    (_answer({}, session_id=0), "another fetch session"),  # the broker closed the session
    (_answer({"a": [_partition(2, None)]}), "a partition the request did not fetch"),
    (_answer({"d": [_partition(0, None)]}), "a partition the request did not fetch"),
    (_answer({"a": [_partition(0, None, replica=2)]}), "a preferred read replica"),
    (_answer({"a": [_partition(1, batch(0, values(50))[:-5])]}), "records without a whole batch"),
    (_answer({"a": [_partition(0, batch(90, values(3)))]}), "records without a whole batch"),  # nothing past 100
    (_answer({"a": [_partition(0, batch(100, values(1)))]})[:-3], "a truncated or malformed answer"),
    (b"", "a truncated or malformed answer"),
])
def test_answers_the_fetcher_must_judge_fire_nothing(answer: bytes, refusal: str) -> None:
    pump = _armed(SESSION_PARTS)
    assert pump.fire(answer) is None
    assert pump.refusal == refusal
    assert pump.fired_offsets() == []


def test_a_tagged_field_fires_nothing() -> None:
    """A diverging epoch or a new leader (tagged fields of a partition) is the Fetcher's to act on."""
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": SESSION, "responses": [
        {"topic": "a", "partitions": [{**_partition(0, None), "current_leader": {"leader_id": 2, "leader_epoch": 6}}]}]}
    pump = _armed(SESSION_PARTS)
    assert pump.fire(encode_response(FETCH.key, VERSION, 9, body)[4:]) is None
    assert pump.refusal == "a tagged field"


def test_every_truncation_of_an_answer_fires_nothing_and_reads_nothing_past_it() -> None:
    answer = _answer({"a": [_partition(0, batch(100, values(3)), aborted=[{"producer_id": 1, "first_offset": 100}]),
                            _partition(1, None)], "c": [_partition(0, None)]})
    for cut in range(len(answer)):
        pump = _armed(SESSION_PARTS)
        assert pump.fire(answer[:cut]) is None, cut
    assert _armed(SESSION_PARTS).fire(answer) is not None


def test_a_partition_at_its_end_with_an_answer_buffered_is_not_fetched_ahead() -> None:
    """fetcher.py's FETCH_AHEAD_ANSWERS rule: at its end (the answer's high watermark), with the broker's answers
    the caller has not taken, the new one makes two: the Fetcher would not fetch it, nor does the pump."""
    records = batch(100, values(3))
    at_end = _answer({"a": [_partition(0, records, hw=103)]})
    pump = _armed(SESSION_PARTS)
    pump.set_buffered(1, 500)
    assert pump.fire(at_end) is None
    assert pump.refusal == "fetched ahead of the caller"
    pump = _armed(SESSION_PARTS)
    pump.set_buffered(0, 0)  # the caller took it: this answer is the only one
    assert pump.fire(at_end) is not None
    pump = _armed(SESSION_PARTS)
    pump.set_buffered(1, 500)  # catching up (behind the end): only the bytes bound holds
    assert pump.fire(_answer({"a": [_partition(0, records, hw=500)]})) is not None
    pump = _armed(SESSION_PARTS, read_committed=True)
    pump.set_buffered(1, 500)  # read_committed: the end is the last stable offset
    assert pump.fire(_answer({"a": [_partition(0, records, hw=500, lso=103)]})) is None


def test_the_request_asks_for_what_fetch_max_bytes_leaves() -> None:
    records = batch(100, values(3))
    pump = _armed(SESSION_PARTS)
    pump.set_buffered(0, FETCH_MAX_BYTES - len(records) - 10)
    fired = pump.fire(_answer({"a": [_partition(0, records)]}))
    assert fired == _fetcher_request(SESSION_PARTS, {TopicPartition("a", 0): 103}, max_bytes=10)
    pump = _armed(SESSION_PARTS)
    pump.set_buffered(0, FETCH_MAX_BYTES - len(records))
    assert pump.fire(_answer({"a": [_partition(0, records)]})) is None
    assert pump.refusal == "no room in fetch.max.bytes"


def test_disarmed_fires_nothing() -> None:
    pump = _armed(SESSION_PARTS)
    pump.disarm()
    assert pump.fire(_answer({})) is None
    assert pump.refusal == "not armed"
    assert FetchPump(CLIENT).fire(_answer({})) is None


def test_the_epoch_written_is_the_armed_one() -> None:
    pump = _armed(SESSION_PARTS, epoch=2**31 - 1)
    fired = pump.fire(_answer({}))
    assert fired is not None and struct.unpack_from(">i", fired, 4 + 8 + 2 + len(CLIENT) + 1 + 21)[0] == 2**31 - 1


# -- the wait's side (core/netio.pyx): the answer read and the next Fetch written without the GIL -----------------


class _Wired:
    """A pump attached to one end of a socket pair in an epoll set; `broker` is the other end."""

    def __init__(self, pump: FetchPump) -> None:
        self.client, self.broker = socket.socketpair()
        self.client.setblocking(False)
        self.broker.settimeout(5)
        self.selector = selectors.EpollSelector()
        self.selector.register(self.client, selectors.EVENT_READ)
        self.pump = pump
        pump.attach(self.client.fileno())
        pump.idle = True

    def wait(self, timeout_ms: int = 5000) -> list[tuple[int, int]]:
        return wait_events(self.selector.fileno(), timeout_ms, -1, [self.pump])

    def close(self) -> None:
        self.selector.close()
        self.client.close()
        self.broker.close()


@pytest.fixture()
def wired() -> Iterator[_Wired]:
    w = _Wired(_armed(SESSION_PARTS))
    try:
        yield w
    finally:
        w.close()


def _framed(answer: bytes) -> bytes:
    return struct.pack(">i", len(answer)) + answer


A0_RECORDS = batch(100, values(3))
A0_ANSWER = _framed(_answer({"a": [_partition(0, A0_RECORDS)]}))
A0_NEXT = _fetcher_request(SESSION_PARTS, {TopicPartition("a", 0): 103}, max_bytes=FETCH_MAX_BYTES - len(A0_RECORDS))


def test_the_wait_writes_the_next_fetch_as_it_reads_the_answer(wired: _Wired) -> None:
    wired.broker.sendall(A0_ANSWER)
    assert wired.wait() == [(wired.client.fileno(), selectors.EVENT_READ)]
    assert wired.pump.take_fired() == (10, A0_NEXT, len(A0_NEXT))
    assert wired.pump.take_fired() is None
    assert wired.broker.recv(65536) == A0_NEXT  # on the wire before the transport saw the answer
    assert wired.pump.take_stash() == A0_ANSWER  # which the transport reads from the stash
    assert wired.pump.take_stash() == b""


def test_an_answer_in_parts_is_waited_for_and_then_fires(wired: _Wired) -> None:
    """A broker writes a Fetch answer's head and its records separately: the wait reads on for the rest. A thread
    sends the head once the wait waits, the rest once the wait has taken the head off the socket (tries where the
    machine was too busy for that order prove nothing and are repeated)."""
    head, rest = A0_ANSWER[:40], A0_ANSWER[40:]
    for _ in range(10):
        pump = wired.pump = _armed(SESSION_PARTS)
        pump.attach(wired.client.fileno())
        pump.idle = True
        head_alone = threading.Event()

        def send(head_alone: threading.Event = head_alone) -> None:
            time.sleep(0.05)  # the wait is waiting (without the GIL)
            wired.broker.sendall(head)
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                if fcntl.ioctl(wired.client.fileno(), termios.FIONREAD, b"\0\0\0\0") == b"\0\0\0\0":
                    head_alone.set()  # the wait read the head, and no more, off the socket
                    break
            wired.broker.sendall(rest)

        sender = threading.Thread(target=send)
        sender.start()
        wired.wait()
        sender.join()
        if head_alone.is_set():
            assert pump.take_fired() == (10, A0_NEXT, len(A0_NEXT))
            assert pump.take_stash() == A0_ANSWER
            return
        pump.take_stash()
        with contextlib.suppress(BlockingIOError):
            wired.client.recv(65536)
    pytest.fail("the wait never read the head alone")


def test_an_answer_found_whole_at_once_fires_and_one_begun_waits_for_nothing(wired: _Wired) -> None:
    """Ready before the wait (the GIL held): a whole answer fires; one begun is the transport's at once (the wait
    does not hold the GIL for its rest)."""
    wired.broker.sendall(A0_ANSWER)
    time.sleep(0.05)
    wired.wait()
    assert wired.pump.take_fired() == (10, A0_NEXT, len(A0_NEXT))
    wired.pump = pump = _armed(SESSION_PARTS)
    pump.attach(wired.client.fileno())
    pump.idle = True
    wired.broker.recv(65536)
    wired.broker.sendall(A0_ANSWER[:40])
    time.sleep(0.05)
    wired.wait()
    assert pump.take_fired() is None
    assert pump.take_stash() == A0_ANSWER[:40]


def test_the_rest_of_an_answer_is_waited_for_a_bounded_time(wired: _Wired) -> None:
    """An answer whose rest does not come: the wait returns long before its own timeout, with the head in the stash
    for the transport, nothing fired."""
    threading.Timer(0.05, wired.broker.sendall, (A0_ANSWER[:40],)).start()  # once the wait waits
    started = time.monotonic()
    assert wired.wait(timeout_ms=10_000) == [(wired.client.fileno(), selectors.EVENT_READ)]
    assert time.monotonic() - started < 5
    assert wired.pump.take_fired() is None
    assert wired.pump.take_stash() == A0_ANSWER[:40]
    assert wired.pump.armed  # its answer is still to come: the transport's now


def test_a_connection_the_transport_is_using_is_left_to_it(wired: _Wired) -> None:
    """Bytes of the transport's own to write, or a frame it read in part: the wait reads nothing for the pump."""
    wired.pump.idle = False
    wired.broker.sendall(A0_ANSWER)
    assert wired.wait() == [(wired.client.fileno(), selectors.EVENT_READ)]
    assert wired.pump.take_fired() is None
    assert wired.pump.take_stash() == b""
    assert wired.client.recv(65536) == A0_ANSWER


def test_what_a_full_socket_does_not_take_is_left_to_the_transport(wired: _Wired) -> None:
    wired.client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    with contextlib.suppress(BlockingIOError):
        while True:
            wired.client.send(b"x" * 65536)  # the broker reads nothing: the client's buffers fill
    wired.broker.sendall(A0_ANSWER)
    wired.wait()
    fired = wired.pump.take_fired()
    assert fired is not None and fired[1] == A0_NEXT and 0 <= fired[2] < len(A0_NEXT)


def test_frames_before_the_armed_answer_are_passed_over(wired: _Wired) -> None:
    other = _framed(struct.pack(">i", 8) + b"\0" * 12)  # an answer to another request (a heartbeat) first
    wired.broker.sendall(other + A0_ANSWER)
    wired.wait()
    assert wired.pump.take_fired() == (10, A0_NEXT, len(A0_NEXT))
    assert wired.pump.take_stash() == other + A0_ANSWER


# -- the consumer on Apache Kafka: the Fetches its pump sends are the Fetcher's ------------------------------------


@pytest.fixture()
def pumped(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The correlation ids of the Fetches the wait fired, as the transport takes them."""
    fired: list[int] = []
    take = SocketTransport._pumped

    def counted(self: SocketTransport, pump: Any, correlation_id: int, *rest: Any) -> None:
        fired.append(correlation_id)
        take(self, pump, correlation_id, *rest)

    monkeypatch.setattr(SocketTransport, "_pumped", counted)
    return fired


def test_records_trickling_in_come_through_the_pump_in_order(kafka_broker: Any, pumped: list[int]) -> None:
    """One record at a time, each sent once the consumer has the one before: the answers fire the next Fetch (the
    consumer's position and the session agree), every record arrives once, in order."""
    topic = f"pump-{uuid.uuid4().hex[:8]}"
    bootstrap = kafka_broker.bootstrap_servers
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as producer, \
            Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", "check.crcs": True}) as consumer:
        producer.send(topic, b"first", partition=0).result(30)
        consumer.assign([TopicPartition(topic, 0)])
        got = [r.value for r in _poll(consumer, 1)]
        for i in range(60):
            producer.send(topic, b"%d" % i, partition=0).result(30)
            got += [r.value for r in _poll(consumer, 1)]
        assert got == [b"first"] + [b"%d" % i for i in range(60)]
        assert len(pumped) >= 20  # most answers fired the next Fetch (all but the fetched-ahead and the first)


def test_a_paused_partition_is_fetched_by_the_pump_once_at_most(kafka_broker: Any, pumped: list[int]) -> None:
    """Catching up, answer after answer fires the next Fetch; once the caller pauses the partition, the pump is not
    armed again (the Fetcher would not fetch it): at most the Fetch in flight then comes back, not the backlog."""
    topic = f"pump-{uuid.uuid4().hex[:8]}"
    bootstrap = kafka_broker.bootstrap_servers
    tp = TopicPartition(topic, 0)
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1024}) as producer:
        for _ in range(3000):
            producer.send(topic, b"v" * 100, partition=0)
        producer.flush(30)
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                   "max.partition.fetch.bytes": 1024, "max.poll.records": 5}) as consumer:
        consumer.assign([tp])
        assert _poll(consumer, 1)
        consumer.pause([tp])
        fired_at_pause = len(pumped)
        time.sleep(1.0)  # the network thread runs on
        assert len(pumped) - fired_at_pause <= 1
        consumer.resume([tp])
        taken = 5
        while taken < 3000:
            taken += len(_poll(consumer, 1))
        assert taken == 3000


@pytest.mark.parametrize("call", ["seek", "seek_to_beginning", "pause"])
def test_a_seek_or_pause_disarms_the_pump_so_no_fetch_of_the_old_plan_follows(
        kafka_broker: Any, monkeypatch: pytest.MonkeyPatch, call: str) -> None:
    """Caught up, a long poll in flight with the pump armed for the next Fetch at the end: a seek (or a pause) on the
    caller's thread disarms it, so the answer in flight fires no Fetch of the old plan; the next Fetch is the
    Fetcher's, at the new offset. Before, the pump fired one at the old offset first, and the Fetch at the new offset
    waited behind its fetch.max.wait.ms (a seek past the end of Apache Kafka's log reset after 1.0 s, two long
    polls, where Java takes one)."""
    events: list[tuple[str, list[tuple[str, int, int]]]] = []  # the Fetches sent, in order: the pump's, the Fetcher's
    fired_by, request = Fetcher._fired, Fetcher._request

    def fired(self: Fetcher, node_id: int, offsets: list[tuple[str, int, int]]) -> Any:
        events.append(("pump", offsets))
        return fired_by(self, node_id, offsets)

    def planned(self: Fetcher, plan: Any, **kwargs: Any) -> Any:
        events.append(("fetcher", [(tp.topic, tp.partition, data[0]) for tp, data in plan.to_send.items()]))
        return request(self, plan, **kwargs)

    monkeypatch.setattr(Fetcher, "_fired", fired)
    monkeypatch.setattr(Fetcher, "_request", planned)
    topic = f"pump-{uuid.uuid4().hex[:8]}"
    bootstrap = kafka_broker.bootstrap_servers
    tp = TopicPartition(topic, 0)
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for i in range(3):
            producer.send(topic, b"%d" % i, partition=0)
        producer.flush(30)
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                   "fetch.max.wait.ms": 1000}) as consumer:
        consumer.assign([tp])
        assert [r.offset for r in _poll(consumer, 3)] == [0, 1, 2]
        pumps = consumer._fetcher._pumps.values()
        deadline = time.monotonic() + 10
        while not any(pump.core.armed for pump in pumps) and time.monotonic() < deadline:
            time.sleep(0.01)  # the long poll at offset 3 goes out and the pump is armed for its answer
        assert any(pump.core.armed for pump in pumps)
        before = len(events)  # (the answer may come meanwhile: what was sent before the call is not asked about)
        if call == "pause":
            consumer.pause([tp])
        else:
            consumer.seek(tp, 0) if call == "seek" else consumer.seek_to_beginning([tp])
        assert not any(pump.core.armed for pump in pumps)
        if call == "pause":
            time.sleep(1.5)  # the long poll's answer comes and is filed
            assert events[before:] == []
            return
        assert [r.offset for r in _poll(consumer, 3)] == [0, 1, 2]
        assert events[before] == ("fetcher", [(topic, 0, 0)])


def _poll(consumer: Consumer, count: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    assert len(got) >= count
    return got
