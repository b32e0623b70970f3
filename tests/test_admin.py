"""cykafka.Admin against the embedded broker (Tansu) and librdkafka's mock cluster; the transport's generic-message
seam (cykafka.protocol.Request through the transport's codec). Tansu's quirks these pin: docs/admin.md."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from cykafka import (
    Admin,
    BrokerNotFoundError,
    BrokerResponseError,
    ConfigError,
    ConfigResource,
    Consumer,
    ElectionType,
    InvalidArgumentError,
    InvalidTopicError,
    KafkaError,
    KafkaTimeoutError,
    NewPartitions,
    NewTopic,
    Producer,
    TopicPartition,
    UnsupportedVersionError,
    protocol,
)
from cykafka.broker import EmbeddedBroker
from cykafka.protocol.error_codes import ErrorCode

TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER = 36, 3, 41
INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT = 37, 39
COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR = 14, 16


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture()
def admin(broker: EmbeddedBroker) -> Any:
    with Admin({"bootstrap.servers": broker.bootstrap_servers, "default.api.timeout.ms": 20000}) as a:
        yield a


def _listed(admin: Admin, topic: str, present: bool = True) -> dict[str, Any]:
    """list_topics() once it shows `topic` (or no longer does): Kafka's brokers learn of a topic the controller
    created or deleted a moment after the call returned (Java's Admin does not wait for that either)."""
    deadline = time.monotonic() + 10
    while (topic in (listed := admin.list_topics())) != present:
        assert time.monotonic() < deadline, f"{topic} {'not listed' if present else 'still listed'} after 10 s"
        time.sleep(0.05)
    return listed


def _confluent_topics(bootstrap: str) -> dict[str, int]:
    confluent_admin = pytest.importorskip("confluent_kafka.admin")
    listing = confluent_admin.AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in listing.topics.items()}


# -- the transport seam ---------------------------------------------------------------------------------------------

def test_a_generic_request_goes_through_the_generic_codec() -> None:
    body = {"topic_names": ["a"], "timeout_ms": 5}
    request = protocol.Request(20, body)
    frame = b"".join(bytes(b) for b in protocol.encode_any_request(request, 5, 9, "c"))
    assert frame == protocol.encode_request(20, 5, 9, "c", body)
    answer = {"throttle_time_ms": 0, "responses": [{"name": "a", "error_code": 3, "error_message": None}]}
    wire = protocol.encode_response(20, 5, 9, answer)
    correlation_id, decoded = protocol.decode_any_response(20, 5, wire[4:])
    assert correlation_id == 9 and decoded["responses"][0]["error_code"] == 3


def test_list_offsets_specs_are_the_protocols_named_timestamps() -> None:
    from cykafka.admin import _OFFSET_SPECS
    from cykafka.protocol import apis

    assert _OFFSET_SPECS == {"earliest": apis.EARLIEST_TIMESTAMP, "latest": apis.LATEST_TIMESTAMP,
                             "max_timestamp": apis.MAX_TIMESTAMP} == {"earliest": -2, "latest": -1,
                                                                      "max_timestamp": -3}


# -- config and lifecycle -------------------------------------------------------------------------------------------

def test_config_takes_admin_keys_and_names_an_unknown_one() -> None:
    a = Admin({"bootstrap.servers": "127.0.0.1:1", "client.id": "ops", "request.timeout.ms": 200000})
    try:
        assert a.config.default_api_timeout_ms == 60000  # Java's AdminClient default
        assert a.config.connection.request_timeout_ms == 200000
    finally:
        a.close(0)
    with pytest.raises(ConfigError, match=r"linger\.ms"):
        Admin({"bootstrap.servers": "127.0.0.1:1", "linger.ms": 5})
    with pytest.raises(ConfigError, match=r"no\.such\.key"):
        Admin({"bootstrap.servers": "127.0.0.1:1", "no.such.key": 5})
    with pytest.raises(ConfigError, match=r"default\.api\.timeout\.ms"):
        Admin({"bootstrap.servers": "127.0.0.1:1", "default.api.timeout.ms": -1})


def test_a_call_without_a_broker_times_out_and_a_closed_admin_refuses() -> None:
    with Admin({"bootstrap.servers": "127.0.0.1:1"}) as a:
        with pytest.raises(KafkaTimeoutError, match="Metadata"):
            a.list_topics(timeout_ms=300)
    with pytest.raises(KafkaError, match="closed"):
        a.list_topics(timeout_ms=300)


def test_arguments_are_checked_before_anything_is_sent(admin: Admin) -> None:
    with pytest.raises(InvalidArgumentError, match="NewTopic"):
        admin.create_topics(["x"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="twice"):
        admin.create_topics([NewTopic("x", 1), NewTopic("x", 2)])
    with pytest.raises(InvalidArgumentError, match="list of str"):
        admin.delete_topics("x")
    with pytest.raises(InvalidArgumentError, match="earliest"):
        admin.list_offsets({TopicPartition("x", 0): "newest"})
    with pytest.raises(InvalidArgumentError, match="type one of"):
        admin.describe_configs([ConfigResource("client", "c")])
    with pytest.raises(InvalidArgumentError, match=r"election_type must be ElectionType\.PREFERRED or"):
        admin.elect_leaders("preferred")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="elect_leaders takes an iterable of TopicPartition"):
        admin.elect_leaders(ElectionType.PREFERRED, "x")  # type: ignore[arg-type]


# -- topics ---------------------------------------------------------------------------------------------------------

def test_create_topics_gives_seven_partitions_confirmed_by_another_client(admin: Admin,
                                                                          broker: EmbeddedBroker) -> None:
    topic = _name("seven")
    results = admin.create_topics([NewTopic(topic, 7)])
    assert list(results) == [topic] and results[topic].error is None and results[topic].result() is None
    assert _confluent_topics(broker.bootstrap_servers)[topic] == 7


def test_creating_an_existing_topic_is_a_typed_error_naming_it(admin: Admin) -> None:
    topic, fresh = _name("twice"), _name("fresh")
    admin.create_topics([NewTopic(topic, 1)])[topic].result()
    results = admin.create_topics([NewTopic(topic, 1), NewTopic(fresh, 2)])
    error = results[topic].error
    assert isinstance(error, BrokerResponseError) and error.code == TOPIC_ALREADY_EXISTS
    assert error.name == "TOPIC_ALREADY_EXISTS" and topic in str(error)
    with pytest.raises(BrokerResponseError, match=topic):
        results[topic].result()
    assert results[fresh].error is None  # one item's failure leaves the others alone


def test_validate_only_creates_nothing(admin: Admin, broker: Any) -> None:
    topic = _name("validate")
    assert admin.create_topics([NewTopic(topic, 3)], validate_only=True)[topic].error is None
    if isinstance(broker, EmbeddedBroker):
        assert topic in admin.list_topics()  # Tansu ignores validate_only and creates the topic (docs/admin.md)
    else:
        assert topic not in admin.list_topics()


def test_list_and_describe_topics(admin: Admin) -> None:
    topic, missing = _name("listed"), _name("missing")
    admin.create_topics([NewTopic(topic, 3)])[topic].result()
    listed = _listed(admin, topic)
    assert listed[topic].name == topic and not listed[topic].internal
    assert [p.partition for p in listed[topic].partitions] == [0, 1, 2]
    assert all(p.leader >= 0 and p.topic == topic for p in listed[topic].partitions)
    described = admin.describe_topics([topic, missing])
    assert described[topic].result() == listed[topic]
    error = described[missing].error
    assert isinstance(error, BrokerResponseError) and error.code == UNKNOWN_TOPIC_OR_PARTITION
    assert missing in str(error)
    assert missing not in admin.list_topics()  # describing asks without auto-creation


def test_delete_topics_per_item(admin: Admin, broker: EmbeddedBroker) -> None:
    topic, unknown = _name("deleted"), _name("unknown")
    admin.create_topics([NewTopic(topic, 2)])[topic].result()
    results = admin.delete_topics([topic, unknown])
    assert results[topic].error is None
    error = results[unknown].error
    assert isinstance(error, BrokerResponseError) and error.code == UNKNOWN_TOPIC_OR_PARTITION
    assert unknown in str(error)
    _listed(admin, topic, present=False)
    assert topic not in _confluent_topics(broker.bootstrap_servers)


def _partition_count(admin: Admin, topic: str, count: int) -> int:
    """describe_topics' partition count of topic once it is count (bounded: Kafka's brokers learn of new topics and
    partitions a moment after the controller answered)."""
    deadline = time.monotonic() + 10
    while True:
        described = admin.describe_topics([topic])[topic]
        seen = described.error or len(described.result().partitions)  # an error: not known to the broker yet
        if seen == count:
            return count
        assert time.monotonic() < deadline, f"{topic}: {seen} after 10 s, not {count} partitions"
        time.sleep(0.05)


@pytest.mark.broker_only("kafka", reason="Tansu has no CreatePartitions (test_create_partitions_on_tansu_...)")
def test_create_partitions_grows_a_topic_and_types_each_topics_error(admin: Admin, broker: Any) -> None:
    """A topic grows from 2 to 5 partitions (describe_topics and confluent-kafka see 5); in the same call a count
    that does not grow a topic is INVALID_PARTITIONS, an unknown topic UNKNOWN_TOPIC_OR_PARTITION, a replica on a
    broker that does not exist INVALID_REPLICA_ASSIGNMENT (new_assignments are sent): each names its topic."""
    grown, same, missing, placed = _name("grow"), _name("same"), _name("missing"), _name("placed")
    for result in admin.create_topics([NewTopic(grown, 2), NewTopic(same, 3), NewTopic(placed, 1)]).values():
        result.result()
    results = admin.create_partitions({grown: NewPartitions(5), same: NewPartitions.increase_to(3),
                                       missing: NewPartitions(2), placed: NewPartitions(2, [[999]])})
    assert list(results) == [grown, same, missing, placed] and results[grown].error is None
    for topic, code in ((same, INVALID_PARTITIONS), (missing, UNKNOWN_TOPIC_OR_PARTITION),
                        (placed, INVALID_REPLICA_ASSIGNMENT)):
        error = results[topic].error
        assert isinstance(error, BrokerResponseError) and error.code == code and topic in str(error), error
    assert _partition_count(admin, grown, 5) == 5
    deadline = time.monotonic() + 10
    while (theirs := _confluent_topics(broker.bootstrap_servers)[grown]) != 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    print(f"{grown}: ours 5, confluent-kafka {theirs}")
    assert theirs == 5


@pytest.mark.broker_only("kafka", reason="Tansu has no CreatePartitions")
def test_create_partitions_validate_only_creates_nothing(admin: Admin) -> None:
    """validate_only to 6 answers without error and creates nothing: growing to 3 afterwards succeeds (it would be
    INVALID_PARTITIONS after 6) and describe_topics sees 3."""
    topic = _name("validate-grow")
    admin.create_topics([NewTopic(topic, 2)])[topic].result()
    assert admin.create_partitions({topic: NewPartitions(6)}, validate_only=True)[topic].error is None
    assert admin.create_partitions({topic: NewPartitions(1)}, validate_only=True)[topic].error.code == \
        INVALID_PARTITIONS  # type: ignore[union-attr]  (validation happens)
    admin.create_partitions({topic: NewPartitions(3)})[topic].result()
    assert _partition_count(admin, topic, 3) == 3


@pytest.mark.broker_only("kafka", reason="Tansu has no CreatePartitions")
def test_create_partitions_not_controller_items_are_sent_again_alone(broker: Any) -> None:
    """A CreatePartitions item answered NOT_CONTROLLER goes again, alone, after a metadata update (the proxy says
    NOT_CONTROLLER for the first item once)."""
    from kafka_proxy import KafkaProxy

    first, second = _name("pnc-a"), _name("pnc-b")
    asked: list[list[str]] = []

    def first_item_not_controller(answer: dict[str, Any]) -> dict[str, Any]:
        asked.append(sorted(t["name"] for t in answer["results"]))  # Kafka answers in its own order
        if len(asked) == 1:
            next(t for t in answer["results"] if t["name"] == first).update(error_code=NOT_CONTROLLER,
                                                                             error_message=None)
        return answer

    proxy = KafkaProxy(broker.host, broker.port)
    try:
        proxy.rewrite[protocol.apis.CREATE_PARTITIONS.key] = first_item_not_controller
        with Admin({"bootstrap.servers": proxy.bootstrap_servers, "retry.backoff.ms": 10}) as a:
            for result in a.create_topics([NewTopic(first, 1), NewTopic(second, 1)], timeout_ms=20000).values():
                result.result()
            results = a.create_partitions({first: NewPartitions(2), second: NewPartitions(2)}, timeout_ms=20000)
    finally:
        proxy.close()
    assert asked == [[first, second], [first]]
    assert results[second].error is None
    # the broker had grown it: the second ask says so (INVALID_PARTITIONS: it has 2 already)
    assert getattr(results[first].error, "code", None) in (None, INVALID_PARTITIONS)


@pytest.mark.broker_only("tansu", reason="Kafka speaks CreatePartitions (test_create_partitions_grows_...)")
def test_create_partitions_on_tansu_fails_naming_the_missing_api(admin: Admin) -> None:
    topic = _name("no-grow")
    admin.create_topics([NewTopic(topic, 1)])[topic].result()
    error = admin.create_partitions({topic: NewPartitions(2)})[topic].error
    assert isinstance(error, UnsupportedVersionError), error
    assert "does not support CreatePartitions (API key 37)" in str(error)
    with pytest.raises(UnsupportedVersionError, match="CreatePartitions"):
        admin.create_partitions({topic: NewPartitions(2)})[topic].result()


@pytest.mark.parametrize(("new", "message"), [
    ({"t": 3}, r"create_partitions takes \{topic: NewPartitions\}, got 't': int"),
    ({"t": NewPartitions(0)}, r"NewPartitions of 't': total_count must be an int from 1 to 2\*\*31-1"),
    ({"t": NewPartitions(True)}, r"total_count must be an int"),
    ({"t": NewPartitions(3, [[1], []])}, r"new_assignments: each new partition's replicas must be a non-empty"),
    ({"t": NewPartitions(3, [[1, 1]])}, r"distinct broker ids"),
    ({"t": NewPartitions(3, [["1"]])}, r"broker ids \(ints >= 0\), got \['1'\]"),  # type: ignore[list-item]
    ({"t": NewPartitions(2, [[1], [2], [3]])}, r"must name 1 to total_count \(2\) new partitions"),
    ({"a/b": NewPartitions(2)}, r"characters other than"),
    (["t"], r"create_partitions takes \{topic: NewPartitions\}, got list"),
])
def test_create_partitions_checks_its_arguments_naming_them(new: Any, message: str) -> None:
    with Admin({"bootstrap.servers": "127.0.0.1:1"}) as a:  # nothing is sent: no broker there
        with pytest.raises((InvalidArgumentError, InvalidTopicError), match=message):
            a.create_partitions(new, timeout_ms=100)


# -- cluster and configs --------------------------------------------------------------------------------------------

def test_describe_cluster_matches_another_client(admin: Admin, broker: EmbeddedBroker) -> None:
    confluent_admin = pytest.importorskip("confluent_kafka.admin")
    theirs = confluent_admin.AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    cluster = admin.describe_cluster()
    assert cluster.cluster_id == theirs.cluster_id
    assert cluster.controller_id == theirs.controller_id
    assert {(n.node_id, n.host, n.port) for n in cluster.nodes} == {
        (b.id, b.host, b.port) for b in theirs.brokers.values()}


def test_describe_and_alter_configs(admin: Admin) -> None:
    topic = _name("configs")
    admin.create_topics([NewTopic(topic, 1, config={"cleanup.policy": "compact"})])[topic].result()
    node_id = admin.describe_cluster().nodes[0].node_id
    resource, absent = ConfigResource("topic", topic), ConfigResource("broker", str(node_id + 1000))
    described = admin.describe_configs([resource, absent])
    assert described[resource].result()["cleanup.policy"].value == "compact"
    assert isinstance(described[absent].error, BrokerNotFoundError)
    assert str(node_id + 1000) in str(described[absent].error)
    changed = admin.incremental_alter_configs({resource: [("retention.ms", "set", "123456")]})
    assert changed[resource].error is None
    for _ in range(100):  # Kafka's brokers apply a change when its KRaft record reaches them: bounded wait
        if admin.describe_configs([resource])[resource].result()["retention.ms"].value == "123456":
            break
        time.sleep(0.1)
    assert admin.describe_configs([resource])[resource].result()["retention.ms"].value == "123456"


# -- offsets and records --------------------------------------------------------------------------------------------

def test_list_offsets_earliest_and_by_timestamp(admin: Admin, broker: EmbeddedBroker) -> None:
    topic = _name("offsets")
    admin.create_topics([NewTopic(topic, 2)])[topic].result()
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0}) as producer:
        for i in range(5):
            producer.send(topic, b"v", partition=0, timestamp_ms=1000 + i).result()
    p0, p1, unknown = TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition(topic, 9)
    earliest = admin.list_offsets({p0: "earliest", p1: "earliest", unknown: "earliest"})
    assert earliest[p0].result().offset == 0 and earliest[p1].result().offset == 0
    assert getattr(earliest[unknown].error, "code", None) == UNKNOWN_TOPIC_OR_PARTITION
    by_time = admin.list_offsets({p0: 0})  # before every record: the first offset
    assert by_time[p0].result().offset == 0


def test_list_offsets_latest_on_the_mock_cluster(mock_cluster: Any) -> None:
    mock_cluster.create_topic("latest", [1, 2])
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0}) as producer:
        for _ in range(5):
            producer.send("latest", b"v", partition=0).result()
    with Admin({"bootstrap.servers": mock_cluster.bootstrap_servers, "default.api.timeout.ms": 20000}) as a:
        latest = a.list_offsets({TopicPartition("latest", 0): "latest", TopicPartition("latest", 1): "latest"})
        assert latest[TopicPartition("latest", 0)].result().offset == 5
        assert latest[TopicPartition("latest", 1)].result().offset == 0
        # librdkafka's mock speaks no DeleteRecords: each item carries the error
        deleted = a.delete_records({TopicPartition("latest", 0): 2})
        assert isinstance(deleted[TopicPartition("latest", 0)].error, UnsupportedVersionError)


def test_delete_records_moves_the_log_start(admin: Admin, broker: Any) -> None:
    """On Kafka: DeleteRecords at the leader moves the log start offset; ListOffsets earliest and a consumer from
    the beginning start there; -1 deletes up to the high watermark."""
    if isinstance(broker, EmbeddedBroker):
        pytest.skip("not on tansu: it resets the connection on DeleteRecords "
                    "(test_delete_records_on_tansu_fails_the_call)")
    topic = _name("records")
    admin.create_topics([NewTopic(topic, 2)])[topic].result()
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for i in range(10):
            producer.send(topic, b"%d" % i, partition=i % 2)
    deleted = admin.delete_records({TopicPartition(topic, 0): 3, TopicPartition(topic, 1): -1})
    assert deleted[TopicPartition(topic, 0)].result().low_watermark == 3
    assert deleted[TopicPartition(topic, 1)].result().low_watermark == 5
    earliest = admin.list_offsets({TopicPartition(topic, 0): "earliest", TopicPartition(topic, 1): "earliest"})
    assert [earliest[TopicPartition(topic, p)].result().offset for p in (0, 1)] == [3, 5]
    confluent = pytest.importorskip("confluent_kafka")
    consumer = confluent.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": _name("g")})
    try:
        consumer.assign([confluent.TopicPartition(topic, 0, confluent.OFFSET_BEGINNING)])
        read = [m for m in consumer.consume(10, timeout=10)]
    finally:
        consumer.close()
    assert [(m.offset(), m.value()) for m in read] == [(3, b"6"), (4, b"8")]


@pytest.mark.broker_only("tansu", reason="Kafka speaks DeleteRecords (test_delete_records_moves_the_log_start)")
def test_delete_records_on_tansu_fails_the_call(broker: EmbeddedBroker) -> None:
    """Tansu resets the connection on DeleteRecords (librdkafka's client sees the same): the partition's Result is a
    KafkaTimeoutError naming the API and the last transport error (its leader was asked again until the deadline,
    Java's PartitionLeaderStrategy)."""
    topic = _name("records")
    with Admin({"bootstrap.servers": broker.bootstrap_servers, "default.api.timeout.ms": 20000}) as a:
        a.create_topics([NewTopic(topic, 1)])[topic].result()
        results = a.delete_records({TopicPartition(topic, 0): 0}, timeout_ms=1500)
        with pytest.raises(KafkaTimeoutError, match="DeleteRecords"):
            results[TopicPartition(topic, 0)].result()


# -- consumer groups ------------------------------------------------------------------------------------------------

def test_consumer_groups_list_describe_offsets_delete(admin: Admin, broker: EmbeddedBroker) -> None:
    confluent = pytest.importorskip("confluent_kafka")
    topic, group = _name("grouped"), _name("group")
    admin.create_topics([NewTopic(topic, 2)])[topic].result()
    consumer = confluent.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                                   "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[confluent.TopicPartition(topic, 0, 5), confluent.TopicPartition(topic, 1, 7)],
                        asynchronous=False)
    finally:
        consumer.close()
    assert group in [g.group_id for g in admin.list_consumer_groups()]
    described = admin.describe_consumer_groups([group])[group].result()
    assert described.group_id == group and described.members == () and described.state == "Empty"
    assert described.type == "classic"  # ConsumerGroupDescribe does not know it (Kafka), or is not spoken (Tansu)
    assert described.coordinator in {n.node_id for n in admin.describe_cluster().nodes}
    offsets = admin.list_consumer_group_offsets(group)
    assert {tp: r.result().offset for tp, r in offsets.items()} == {TopicPartition(topic, 0): 5,
                                                                     TopicPartition(topic, 1): 7}
    some = admin.list_consumer_group_offsets(group, [TopicPartition(topic, 1), TopicPartition(topic, 0)])
    assert some[TopicPartition(topic, 1)].result().offset == 7
    assert admin.delete_consumer_groups([group])[group].error is None
    assert group not in [g.group_id for g in admin.list_consumer_groups()]
    assert admin.list_consumer_group_offsets(group) == {}


def test_alter_consumer_group_offsets_sets_an_empty_groups_offsets(admin: Admin, broker: EmbeddedBroker) -> None:
    """Java's alterConsumerGroupOffsets: an empty group's offsets set from outside it (read back by
    confluent-kafka's committed()), refused per partition while the group has a member (UNKNOWN_MEMBER_ID), bad
    arguments typed."""
    confluent = pytest.importorskip("confluent_kafka")
    from cykafka import OffsetAndMetadata

    topic, group = _name("altered"), _name("group")
    admin.create_topics([NewTopic(topic, 2)])[topic].result()
    done = admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): 5,
                                                      TopicPartition(topic, 1): OffsetAndMetadata(7, "m")})
    assert {tp: r.error for tp, r in done.items()} == {TopicPartition(topic, 0): None, TopicPartition(topic, 1): None}
    member = confluent.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                                 "session.timeout.ms": 6000})
    try:
        committed = member.committed([confluent.TopicPartition(topic, 0), confluent.TopicPartition(topic, 1)], 30)
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 5), (1, 7)]
        member.subscribe([topic])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment()
        refused = admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): 9})[TopicPartition(topic, 0)]
        assert isinstance(refused.error, KafkaError) and refused.error.code == ErrorCode.UNKNOWN_MEMBER_ID
    finally:
        member.close()
    assert admin.list_consumer_group_offsets(group)[TopicPartition(topic, 0)].result().offset == 5
    with pytest.raises(InvalidArgumentError, match=r"alter_consumer_group_offsets: the offset of .* must be an int"):
        admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): -5})
    with pytest.raises(InvalidArgumentError, match=r"alter_consumer_group_offsets: offsets must be a mapping"):
        admin.alter_consumer_group_offsets(group, [TopicPartition(topic, 0)])  # type: ignore[arg-type]


# -- cykafka topics ---------------------------------------------------------------------------------------------------

def test_cli_topics_create_list_describe_delete(broker: EmbeddedBroker, capsys: pytest.CaptureFixture[str]) -> None:
    from cykafka import cli

    topic, b = _name("cli"), ["-b", broker.bootstrap_servers]
    assert cli.main(["topics", "create", *b, topic, "-p", "3", "-c", "cleanup.policy=compact"]) == 0
    assert capsys.readouterr().out == f"created {topic}\n"
    assert cli.main(["topics", "create", *b, topic, "-p", "3"]) == cli.EXIT_FAILED
    assert "TOPIC_ALREADY_EXISTS" in capsys.readouterr().err
    assert cli.main(["topics", "list", *b]) == 0
    assert topic in capsys.readouterr().out.split()
    assert cli.main(["topics", "describe", *b, topic]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{topic}\tpartitions=3") and out.count("  partition=") == 3
    assert cli.main(["topics", "delete", *b, topic]) == 0
    assert capsys.readouterr().out == f"deleted {topic}\n"
    assert cli.main(["topics", "delete", *b, topic]) == cli.EXIT_FAILED
    assert "UNKNOWN_TOPIC_OR_PARTITION" in capsys.readouterr().err
    assert cli.main(["topics", "list", *b, "-X", "linger.ms=5"]) == cli.EXIT_USAGE
    assert "linger.ms" in capsys.readouterr().err


def test_list_offsets_asks_again_when_the_leader_moved(mock_cluster: Any) -> None:
    mock_cluster.create_topic("moved", [1])
    with Producer({"bootstrap.servers": mock_cluster.bootstrap_servers, "linger.ms": 0}) as producer:
        for _ in range(3):
            producer.send("moved", b"v", partition=0).result()
    with Admin({"bootstrap.servers": mock_cluster.bootstrap_servers, "default.api.timeout.ms": 20000}) as a:
        mock_cluster.set_leader("moved", 0, 2)
        mock_cluster.push_request_errors(2, [6, 6])  # ListOffsets: NOT_LEADER_OR_FOLLOWER twice, then answered
        latest = a.list_offsets({TopicPartition("moved", 0): "latest"})
        assert latest[TopicPartition("moved", 0)].result().offset == 3


def test_a_topic_the_metadata_does_not_know_yet_is_looked_up_again(broker: EmbeddedBroker) -> None:
    """On KRaft a broker learns of a topic after the controller answered its CreateTopics, so list_offsets right after
    create_topics can meet a Metadata answer without the topic: the partition is looked up again (Java's
    PartitionLeaderStrategy), and one whose topic never appears ends with UNKNOWN_TOPIC_OR_PARTITION at the deadline.
    The proxy says the new topic is unknown in the first two Metadata answers naming it."""
    from kafka_proxy import KafkaProxy

    topic, absent = _name("late"), _name("absent")
    asked: list[str] = []

    def not_known_yet(answer: dict[str, Any]) -> dict[str, Any]:
        for t in answer["topics"]:
            asked.append(t["name"])
            if t["name"] == topic and asked.count(topic) <= 2:
                t.update(error_code=UNKNOWN_TOPIC_OR_PARTITION, partitions=[])
        return answer

    proxy = KafkaProxy(broker.host, broker.port)
    try:
        with Admin({"bootstrap.servers": proxy.bootstrap_servers, "retry.backoff.ms": 10}) as a:
            a.create_topics([NewTopic(topic, 1)], timeout_ms=20000)[topic].result()
            proxy.rewrite[protocol.apis.METADATA.key] = not_known_yet
            found = a.list_offsets({TopicPartition(topic, 0): "earliest"}, timeout_ms=20000)
            missing = a.list_offsets({TopicPartition(absent, 0): "earliest"}, timeout_ms=1000)
    finally:
        proxy.close()
    assert asked.count(topic) >= 3 and found[TopicPartition(topic, 0)].result().offset == 0
    assert asked.count(absent) >= 2  # asked again until the deadline
    assert getattr(missing[TopicPartition(absent, 0)].error, "code", None) == UNKNOWN_TOPIC_OR_PARTITION


def test_close_from_another_thread_ends_a_running_call() -> None:
    import threading

    a = Admin({"bootstrap.servers": "127.0.0.1:1"})  # nothing listens: the call waits for its deadline
    failures: list[BaseException] = []

    def call() -> None:
        try:
            a.list_topics(timeout_ms=600_000)
        except BaseException as e:
            failures.append(e)

    thread = threading.Thread(target=call, daemon=True)  # a failing run must not hang the session
    thread.start()
    a.close(timeout=0.2)
    thread.join(30)
    assert not thread.is_alive()
    assert len(failures) == 1 and isinstance(failures[0], KafkaError) and "closed" in str(failures[0])


# -- what probing found (issue 24) ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("topic", "error", "message"), [
    (NewTopic(".", 1), InvalidTopicError, "must not be empty, '.' or '..'"),
    (NewTopic("..", 1), InvalidTopicError, "must not be empty, '.' or '..'"),
    (NewTopic("a/b", 1), InvalidTopicError, "characters other than"),
    (NewTopic("t", -2), InvalidArgumentError, r"NewTopic\('t'\)\.num_partitions must be an int, -1 .* got -2"),
    (NewTopic("t", 2**31 - 1), InvalidArgumentError, r"num_partitions .* or 1 to 10000, got 2147483647"),
    (NewTopic("t", "3"), InvalidArgumentError, r"NewTopic\('t'\)\.num_partitions must be an int"),  # type: ignore[arg-type]
    (NewTopic("t", 1, 0), InvalidArgumentError, r"replication_factor must be an int, -1 .* got 0"),
    (NewTopic("t", 1, config={"retention.ms": 1000}), InvalidArgumentError,  # type: ignore[dict-item]
     r"NewTopic\('t'\)\.config: 'retention\.ms' must map to a str value \(e\.g\. '1000'\), got 1000"),
])
def test_create_topics_refuses_what_no_broker_should_get_naming_the_field(topic: NewTopic, error: type[Exception],
                                                                           message: str) -> None:
    """Tansu created '.', '..' and 'a/b' (our producer refuses them), took -2 partitions, and crashed on 2**31 - 1
    (a ~192 GiB allocation); "3" and int config values failed in the encoder without naming the field."""
    with Admin({"bootstrap.servers": "127.0.0.1:1"}) as a:
        with pytest.raises(error, match=message):
            a.create_topics([topic], timeout_ms=100)
        with pytest.raises(InvalidArgumentError, match=r"'cleanup\.policy' must map to a str value"):
            a.incremental_alter_configs({ConfigResource("topic", "t"): [("cleanup.policy", "set", 1)]})  # type: ignore[list-item]


def test_timeout_ms_is_an_int_and_the_timeout_message_names_the_one_given() -> None:
    with Admin({"bootstrap.servers": "127.0.0.1:1"}) as a:
        with pytest.raises(InvalidArgumentError, match="timeout_ms must be an int >= 0"):
            a.list_topics(timeout_ms=True)  # was taken as 1 ms
        with pytest.raises(KafkaTimeoutError, match=r"deadline \(timeout_ms 300\)"):  # quoted 60000 always
            a.list_topics(timeout_ms=300)
    with Admin({"bootstrap.servers": "127.0.0.1:1", "default.api.timeout.ms": 400}) as a:
        with pytest.raises(KafkaTimeoutError, match=r"deadline \(default\.api\.timeout\.ms 400\)"):
            a.list_topics()


def test_not_controller_items_are_sent_again_alone(broker: EmbeddedBroker) -> None:
    """A CreateTopics item answered NOT_CONTROLLER goes again, alone, after a metadata update (the others keep their
    outcome). KRaft brokers forward to the controller, so the proxy says NOT_CONTROLLER for the first item once."""
    from kafka_proxy import KafkaProxy

    first, second = _name("nc-a"), _name("nc-b")
    asked: list[list[str]] = []

    def first_item_not_controller(answer: dict[str, Any]) -> dict[str, Any]:
        asked.append([t["name"] for t in answer["topics"]])
        if len(asked) == 1:
            answer["topics"][0].update(error_code=NOT_CONTROLLER, error_message=None)
        return answer

    proxy = KafkaProxy(broker.host, broker.port)
    try:
        proxy.rewrite[protocol.apis.CREATE_TOPICS.key] = first_item_not_controller
        with Admin({"bootstrap.servers": proxy.bootstrap_servers, "retry.backoff.ms": 10}) as a:
            results = a.create_topics([NewTopic(first, 1), NewTopic(second, 1)], timeout_ms=20000)
    finally:
        proxy.close()
    assert asked == [[first, second], [first]]
    assert results[second].error is None
    # the broker had created it: the second ask says so (a broker that answered NOT_CONTROLLER would create it now)
    assert getattr(results[first].error, "code", None) in (None, TOPIC_ALREADY_EXISTS)


def test_a_group_call_answered_not_coordinator_finds_the_coordinator_again(broker: EmbeddedBroker) -> None:
    """OffsetFetch and DescribeGroups answered NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (a fresh Apache Kafka
    answers so while it creates __consumer_offsets: found by the exactly-once replay test) are asked again at the
    coordinator looked up again, as Java's CoordinatorStrategy; they raised at once. The proxy rewrites the first
    answers."""
    from kafka_proxy import KafkaProxy

    group, topic = _name("moving"), _name("t")
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        producer.send(topic, b"v", partition=0).result(30)
    with Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group}) as consumer:
        consumer.commit({TopicPartition(topic, 0): 7})
    answered: dict[str, int] = {"fetch": 0, "describe": 0}

    def offset_fetch(answer: dict[str, Any]) -> dict[str, Any]:
        answered["fetch"] += 1
        if answered["fetch"] <= 2:
            code = (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS)[answered["fetch"] - 1]
            answer["error_code"] = code
            for g in answer.get("groups") or []:
                g["error_code"] = code
        return answer

    def describe_groups(answer: dict[str, Any]) -> dict[str, Any]:
        answered["describe"] += 1
        if answered["describe"] == 1:
            for g in answer["groups"]:
                g["error_code"] = NOT_COORDINATOR
        return answer

    proxy = KafkaProxy(broker.host, broker.port)
    try:
        proxy.rewrite[protocol.apis.OFFSET_FETCH.key] = offset_fetch
        proxy.rewrite[protocol.apis.DESCRIBE_GROUPS.key] = describe_groups
        with Admin({"bootstrap.servers": proxy.bootstrap_servers, "retry.backoff.ms": 10}) as a:
            offsets = a.list_consumer_group_offsets(group, timeout_ms=20000)
            described = a.describe_consumer_groups([group], timeout_ms=20000)
    finally:
        proxy.close()
    assert answered == {"fetch": 3, "describe": 2}
    assert [r.result().offset for r in offsets.values()] == [7]
    assert described[group].error is None, described[group].error
