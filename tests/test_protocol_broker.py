"""The protocol package against a real broker (Tansu): every API the producer speaks, at every version we do, sent
as the transport sends it (`encode_any_request`: Produce by the hand-written hot path, the rest by the generic codec)
and read back as the transport reads it (`decode_any_response`); and the broker's real answers, truncated or
corrupted, only ever decode or raise ProtocolError."""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cykafka.errors import ProtocolError
from cykafka.ports import ClusterSnapshot, Node
from cykafka.protocol import (
    ProduceRequest,
    Request,
    TransportRequest,
    decode_any_response,
    encode_any_request,
)
from cykafka.protocol.apis import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    API_VERSIONS,
    APIS,
    COORDINATOR_TRANSACTION,
    CREATE_TOPICS,
    EARLIEST_TIMESTAMP,
    END_TXN,
    FETCH,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    SASL_HANDSHAKE,
    TXN_OFFSET_COMMIT,
    coordinators_of,
)
from cykafka.protocol.error_codes import ErrorCode

pytestmark = pytest.mark.broker


class Connection:
    """A blocking socket speaking the transport's codec; keeps every response frame for the fuzz tests."""

    def __init__(self, host: str, port: int, frames: list[tuple[int, int, bytes]] | None = None) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.correlation_id = 0
        self.frames = frames if frames is not None else []

    def call(self, request: TransportRequest, version: int) -> dict[str, Any]:
        self.correlation_id += 1
        parts = encode_any_request(request, version, self.correlation_id, "cykafka-test")
        assert self.sock.sendmsg(parts) == sum(len(p) for p in parts)
        size = struct.unpack(">i", self._recv(4))[0]
        frame = self._recv(size)
        self.frames.append((request.api_key, version, frame))
        correlation_id, response = decode_any_response(request.api_key, version, frame)
        assert correlation_id == self.correlation_id
        return response

    def _recv(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def conn(broker: Any) -> Iterator[Connection]:
    c = Connection(broker.host, broker.port)
    yield c
    c.close()


def _fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _metadata(*topics: str) -> Request:
    return Request(METADATA.key, {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": True})


def _create(*topics: tuple[str, int]) -> Request:
    return Request(CREATE_TOPICS.key, {"topics": [{"name": t, "num_partitions": n, "replication_factor": 1}
                                                  for t, n in topics], "timeout_ms": 10000})


def _init_producer_id(transactional_id: str | None = None) -> Request:
    return Request(INIT_PRODUCER_ID.key, {"transactional_id": transactional_id, "transaction_timeout_ms": 60000})


def _fetch(topic: str, *partitions: int) -> Request:
    return Request(FETCH.key, {"max_wait_ms": 100, "min_bytes": 0, "topics": [{"topic": topic, "partitions": [
        {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20} for p in partitions]}]})


def _list_offsets(topic: str, *partitions: tuple[int, int]) -> Request:
    return Request(LIST_OFFSETS.key, {"topics": [{"name": topic, "partitions": [
        {"partition_index": p, "timestamp": ts} for p, ts in partitions]}]})


def _coordinated(conn: Connection, request: Request, version: int) -> dict[str, Any]:
    """The answer to a coordinator's request once the coordinator is there: on a fresh Kafka the first ones answer
    COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS while __transaction_state is created and loaded."""
    waiting = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR)
    answer: dict[str, Any] = {}
    for _ in range(200):
        answer = conn.call(request, version)
        codes = [c["error_code"] for c in coordinators_of(answer)] if request.api_key == FIND_COORDINATOR.key \
            else [answer["error_code"]]
        if not set(codes) & set(waiting):
            return answer
        time.sleep(0.05)
    raise AssertionError(f"no coordinator: {answer}")


def _find_coordinator(key: str) -> Request:
    return Request(FIND_COORDINATOR.key, {"key": key, "key_type": COORDINATOR_TRANSACTION,
                                          "coordinator_keys": [key]})


def _batch(key_prefix: bytes, count: int, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
           transactional: bool = False) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=1 << 20,
    )
    for i in range(count):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=key_prefix + b"-%d" % i, value=b"value-%d" % i,
                       headers=[])
    return bytes(builder.build())


def _partitions(produced: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for t in produced["responses"] for p in t["partition_responses"]]


def _consume(broker: Any, topic: str, partition: int, count: int, committed_only: bool = False) -> list[Any]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": broker.bootstrap_servers, "group.id": _fresh("verify"),
        "enable.auto.commit": False, "check.crcs": True,
        "isolation.level": "read_committed" if committed_only else "read_uncommitted",
    })
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        messages: list[Any] = []
        for _ in range(100):
            if len(messages) >= count:
                break
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
        return messages
    finally:
        consumer.close()


def test_api_versions_every_version(conn: Connection) -> None:
    for version in API_VERSIONS.versions:
        response = conn.call(Request(API_VERSIONS.key, {"client_software_name": "cykafka",
                                                        "client_software_version": "0"}), version)
        assert response["error_code"] == 0
        ranges = {a["api_key"]: (a["min_version"], a["max_version"]) for a in response["api_keys"]}
        for key in (PRODUCE.key, METADATA.key, INIT_PRODUCER_ID.key, END_TXN.key):  # overlapping ranges
            assert ranges[key][0] <= APIS[key].valid[1] and APIS[key].valid[0] <= ranges[key][1]


def _created(conn: Connection, topic: str, partitions: int = 4, version: int = 12) -> dict[str, Any]:
    """Metadata (at `version`) for `topic` until it exists with every partition led, then ListOffsets until every
    leader answers for its partition: Tansu creates a topic at once; Kafka's controller a moment later (the first
    Metadata answers say UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE), and its broker takes the leadership a
    moment after its metadata names it (NOT_LEADER_OR_FOLLOWER meanwhile)."""
    response: dict[str, Any] = {}
    for _ in range(200):
        response = conn.call(_metadata(topic), version)
        (meta_topic,) = response["topics"]
        parts = meta_topic["partitions"]
        if meta_topic["error_code"] == 0 and len(parts) == partitions and all(p["leader_id"] >= 0 for p in parts):
            offsets = conn.call(_list_offsets(topic, *((p, EARLIEST_TIMESTAMP) for p in range(partitions))), 7)
            if all(p["error_code"] == 0 for t in offsets["topics"] for p in t["partitions"]):
                return response
        time.sleep(0.05)
    raise AssertionError(f"{topic} not created with {partitions} led partitions: {response}")


def test_metadata_every_version_auto_creates_a_topic(conn: Connection, broker: Any) -> None:
    for version in METADATA.versions:
        topic = _fresh(f"meta-v{version}")
        response = _created(conn, topic, version=version)
        (meta_topic,) = response["topics"]
        assert (meta_topic["name"], meta_topic["error_code"]) == (topic, 0)
        assert sorted(p["partition_index"] for p in meta_topic["partitions"]) == [0, 1, 2, 3]
        (node,) = response["brokers"]
        assert (node["host"], node["port"]) == (broker.host, broker.port)
        snapshot = ClusterSnapshot.from_metadata(response)
        assert snapshot.nodes == {node["node_id"]: Node(node["node_id"], broker.host, broker.port, node["rack"])}
        assert snapshot.available_partitions(topic) == [0, 1, 2, 3]


def test_create_topics_every_version(conn: Connection) -> None:
    for version in CREATE_TOPICS.versions:
        topic = _fresh(f"create-v{version}")
        response = conn.call(_create((topic, 3)), version)
        assert [(t["name"], t["error_code"]) for t in response["topics"]] == [(topic, 0)]
        assert len(_created(conn, topic, 3)["topics"][0]["partitions"]) == 3
        again = conn.call(_create((topic, 3)), version)
        assert again["topics"][0]["error_code"] == ErrorCode.TOPIC_ALREADY_EXISTS


def test_init_producer_id_idempotent(conn: Connection) -> None:
    for version in (3, 4):  # Tansu's v0-2 are broken
        response = _coordinated(conn, _init_producer_id(), version)
        assert response["error_code"] == 0 and response["producer_id"] >= 0 and response["producer_epoch"] >= 0


def test_produce_every_version_then_consume_with_librdkafka(conn: Connection, broker: Any) -> None:
    topic = _fresh("produce")
    _created(conn, topic)  # auto-create, 4 partitions
    pid = _coordinated(conn, _init_producer_id(), 4)
    producer_id, epoch = pid["producer_id"], pid["producer_epoch"]
    sequences = [0, 0, 0, 0]
    expected: dict[int, list[tuple[int, bytes]]] = {0: [], 1: [], 2: [], 3: []}
    for version in PRODUCE.versions:
        partition = version % 4
        key = b"v%d" % version
        batch = _batch(key, 3, producer_id, epoch, sequences[partition])
        sequences[partition] += 3
        response = conn.call(ProduceRequest(None, -1, 10000, ((topic, ((partition, memoryview(batch)),)),)), version)
        assert [t["name"] for t in response["responses"]] == [topic]
        (p,) = _partitions(response)
        assert (p["index"], p["error_code"]) == (partition, 0), p
        expected[partition] += [(p["base_offset"] + i, key + b"-%d" % i) for i in range(3)]
    batches = []  # one v9 request, several partitions
    for partition in range(4):
        batches.append((partition, _batch(b"multi", 2, producer_id, epoch, sequences[partition])))
        sequences[partition] += 2
    for p in _partitions(conn.call(ProduceRequest(None, -1, 10000, ((topic, tuple(batches)),)), 9)):
        assert p["error_code"] == 0
        expected[p["index"]] += [(p["base_offset"] + i, b"multi-%d" % i) for i in range(2)]
    for partition, records in expected.items():
        messages = _consume(broker, topic, partition, len(records))
        assert [(m.offset(), m.key()) for m in messages] == records


def test_fetch_and_list_offsets_every_version(conn: Connection) -> None:
    from kafka.record.memory_records import MemoryRecords

    topic = _fresh("fetch")
    _created(conn, topic)
    produced = conn.call(ProduceRequest(None, -1, 10000, ((topic, ((0, _batch(b"f", 5)),)),)), 9)
    assert _partitions(produced)[0]["error_code"] == 0
    for version in FETCH.versions:
        (partition,) = conn.call(_fetch(topic, 0), version)["responses"][0]["partitions"]
        assert (partition["error_code"], partition["high_watermark"]) == (0, 5)
        records = MemoryRecords(partition["records"])
        keys = []
        while (batch := records.next_batch()) is not None:
            keys += [record.key for record in batch]
        assert keys == [b"f-%d" % i for i in range(5)]
    for version in LIST_OFFSETS.versions:
        response = conn.call(_list_offsets(topic, (0, EARLIEST_TIMESTAMP)), version)
        (partition,) = response["topics"][0]["partitions"]
        assert (partition["error_code"], partition["offset"]) == (0, 0)


def test_a_transaction_every_version(conn: Connection, broker: Any) -> None:
    topic = _fresh("txn")
    _created(conn, topic)
    committed_keys = []
    for version in range(4):
        txn_id = _fresh(f"txn-v{version}")
        coordinators = coordinators_of(_coordinated(conn, _find_coordinator(txn_id), min(version + 1, 4)))
        assert [c["error_code"] for c in coordinators] == [0]
        init = _coordinated(conn, _init_producer_id(txn_id), 3 + version % 2)
        assert init["error_code"] == 0
        txn = {"transactional_id": txn_id, "producer_id": init["producer_id"],
               "producer_epoch": init["producer_epoch"]}
        added = conn.call(Request(ADD_PARTITIONS_TO_TXN.key, {
            "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": init["producer_id"],
            "v3_and_below_producer_epoch": init["producer_epoch"],
            "v3_and_below_topics": [{"name": topic, "partitions": [0]}]}), version)
        assert [(t["name"], [p["partition_error_code"] for p in t["results_by_partition"]])
                for t in added["results_by_topic_v3_and_below"]] == [(topic, [0])]
        key = b"t%d" % version
        batch = _batch(key, 2, init["producer_id"], init["producer_epoch"], 0, transactional=True)
        produced = conn.call(ProduceRequest(txn_id, -1, 10000, ((topic, ((0, batch),)),)), 9)
        assert _partitions(produced)[0]["error_code"] == 0
        group = _fresh("group")
        assert conn.call(Request(ADD_OFFSETS_TO_TXN.key, {**txn, "group_id": group}), version)["error_code"] == 0
        offsets = conn.call(Request(TXN_OFFSET_COMMIT.key, {**txn, "group_id": group, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1}]}]}), version)
        assert [[p["error_code"] for p in t["partitions"]] for t in offsets["topics"]] == [[0]]
        assert conn.call(Request(END_TXN.key, {**txn, "committed": True}), version)["error_code"] == 0
        committed_keys += [key + b"-0", key + b"-1"]
    messages = _consume(broker, topic, 0, len(committed_keys), committed_only=True)
    assert [m.key() for m in messages] == committed_keys


def test_sasl_handshake_decodes(broker: Any) -> None:
    for version in SASL_HANDSHAKE.versions:
        c = Connection(broker.host, broker.port)
        try:
            assert "error_code" in c.call(Request(SASL_HANDSHAKE.key, {"mechanism": "PLAIN"}), version)
        finally:
            c.close()


# --- malformed input: the broker's real answers, truncated or corrupted, only ever raise ProtocolError ------------


@pytest.fixture(scope="module")
def real_frames(broker: Any) -> list[tuple[int, int, bytes]]:
    """Answers from the broker to every API the producer speaks, at every version we do."""
    frames: list[tuple[int, int, bytes]] = []
    c = Connection(broker.host, broker.port, frames)
    try:
        topic = _fresh("fuzz")
        for version in API_VERSIONS.versions:
            c.call(Request(API_VERSIONS.key, {}), version)
        for version in METADATA.versions:
            c.call(_metadata(topic, _fresh("fuzz")), version)
        for version in CREATE_TOPICS.versions:
            c.call(_create((topic, 2), (_fresh("f"), 1)), version)
        pid = c.call(_init_producer_id(), 4)
        for version in PRODUCE.versions:
            batch = _batch(b"z", 2, pid["producer_id"], pid["producer_epoch"], 2 * (version - 3))
            c.call(ProduceRequest(None, -1, 10000, ((topic, ((0, batch), (5, _batch(b"bad", 1)))),)), version)
        for version in FETCH.versions:
            c.call(_fetch(topic, 0, 1), version)
        for version in LIST_OFFSETS.versions:
            c.call(_list_offsets(topic, (0, -1), (1, EARLIEST_TIMESTAMP)), version)
        for version in FIND_COORDINATOR.versions:
            c.call(_find_coordinator("some-txn"), version)
    finally:
        c.close()
    return frames


def _decodes_or_protocol_error(api_key: int, version: int, data: bytes) -> bool:
    try:
        decode_any_response(api_key, version, data)
    except ProtocolError:
        return False
    return True


def test_every_prefix_of_real_answers_is_a_protocol_error(real_frames: list[tuple[int, int, bytes]]) -> None:
    assert len(real_frames) > 50
    for api_key, version, frame in real_frames:
        assert _decodes_or_protocol_error(api_key, version, frame)
        view = memoryview(frame)
        for size in range(len(frame)):
            with pytest.raises(ProtocolError):
                decode_any_response(api_key, version, view[:size])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_corrupted_real_answers_decode_or_raise_protocol_error(
    real_frames: list[tuple[int, int, bytes]], data: st.DataObject
) -> None:
    api_key, version, frame = data.draw(st.sampled_from(real_frames))
    corrupted = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        if not corrupted:
            break
        index = data.draw(st.integers(0, len(corrupted) - 1))
        corrupted[index] = data.draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80, corrupted[index] ^ 0x01]))
    if data.draw(st.booleans()):
        corrupted += data.draw(st.binary(max_size=4))
    _decodes_or_protocol_error(api_key, version, bytes(corrupted))
