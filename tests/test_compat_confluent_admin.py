"""cykafka.compat.confluent_kafka.admin's AdminClient calls over cykafka's Admin (issue 31): describe_topics,
describe_cluster, list_offsets, delete_records, alter_consumer_group_offsets, create_acls, describe_acls,
delete_acls, describe_user_scram_credentials, alter_user_scram_credentials; each sequence of calls run
against the real confluent_kafka on the same broker gives the same values and error codes."""

from __future__ import annotations

import importlib
import threading
import time
import uuid
from types import ModuleType
from typing import Any

import pytest

import cykafka.compat.confluent_kafka as ck
from cykafka import Admin
from cykafka.broker import EmbeddedBroker

pytestmark = pytest.mark.broker


def _name(prefix: str) -> str:
    return f"ck-{prefix}-{uuid.uuid4().hex[:8]}"


def _outcome(future: Any, value: Any = lambda v: v) -> tuple[str, Any]:
    try:
        return "ok", value(future.result(30))
    except Exception as e:
        return type(e).__name__, e.args[0].code()


def _described(kafka: ModuleType, bootstrap: str, topic: str, tansu: bool) -> dict[str, Any]:
    admin = importlib.import_module(kafka.__name__ + ".admin")
    a = admin.AdminClient({"bootstrap.servers": bootstrap})
    seen: dict[str, Any] = {"create": _outcome(a.create_topics([admin.NewTopic(topic, 2, 1)])[topic])}
    p = kafka.Producer({"bootstrap.servers": bootstrap})
    for i, ts in enumerate((1_000, 2_000, 3_000)):
        p.produce(topic, b"v%d" % i, partition=0, timestamp=ts)
    seen["flush"] = p.flush(30)

    def topic_description(d: Any) -> Any:
        return (d.name == topic, d.is_internal, [(i.id, i.leader.id, [r.id for r in i.replicas],
                                                  [r.id for r in i.isr]) for i in d.partitions])

    described = a.describe_topics(kafka.TopicCollection([topic, topic + "-none"]))
    seen["describe topics"] = [_outcome(described[topic], topic_description), _outcome(described[topic + "-none"])]
    seen["describe cluster"] = _outcome(a.describe_cluster(), lambda r: (
        r.controller.id if r.controller is not None else None, [(n.id, n.host, n.port) for n in r.nodes],
        r.cluster_id))
    seen["cluster id"] = a.cluster_id(10) == seen["describe cluster"][1][2]
    specs = {"earliest": admin.OffsetSpec.earliest(), "latest": admin.OffsetSpec.latest(),
             "at 1500 ms": admin.OffsetSpec.for_timestamp(1_500)}
    if not tansu:  # Tansu closes the connection on ListOffsets v7 (max timestamp)
        specs["max timestamp"] = admin.OffsetSpec.max_timestamp()
    for label, spec in specs.items():
        tp = kafka.TopicPartition(topic, 0)
        seen[f"list offsets {label}"] = _outcome(a.list_offsets({tp: spec})[tp], lambda i: (
            i.offset, None if tansu else i.timestamp))  # Tansu answers its clock's time, not the record's
    tp = kafka.TopicPartition(topic, 0)
    seen["list offsets read_committed"] = _outcome(a.list_offsets(
        {tp: admin.OffsetSpec.latest()}, isolation_level=kafka.IsolationLevel.READ_COMMITTED)[tp], lambda i: i.offset)
    if not tansu:  # Tansu closes the connection on DeleteRecords (librdkafka fails at once, cykafka at its deadline)
        tp = kafka.TopicPartition(topic, 0, 2)
        seen["delete records"] = _outcome(a.delete_records([tp])[tp], lambda d: d.low_watermark)
        tp = kafka.TopicPartition(topic, 0)
        seen["earliest after delete"] = _outcome(a.list_offsets({tp: admin.OffsetSpec.earliest()})[tp],
                                                 lambda i: i.offset)
    seen["delete"] = _outcome(a.delete_topics([topic])[topic])
    return seen


def test_describe_list_offsets_and_delete_records_as_confluent_kafka(broker: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    tansu = isinstance(broker, EmbeddedBroker)
    theirs = _described(confluent_kafka, broker.bootstrap_servers, _name("describe-theirs"), tansu)
    ours = _described(ck, broker.bootstrap_servers, _name("describe-ours"), tansu)
    assert ours == theirs
    assert ours["describe topics"][1] == ("KafkaException", ck.KafkaError.UNKNOWN_TOPIC_OR_PART)
    assert ours["cluster id"] and ours["describe cluster"][0] == "ok"
    if not tansu:  # Tansu's answers are its own (docs/admin.md); both clients see them
        assert ours["list offsets earliest"] == ("ok", (0, -1)) and ours["list offsets at 1500 ms"] == ("ok", (1, 2000))
        assert ours["list offsets max timestamp"] == ("ok", (2, 3000))
        assert ours["delete records"] == ("ok", 2) and ours["earliest after delete"] == ("ok", 2)


def _altered(kafka: ModuleType, bootstrap: str, topic: str, group: str) -> dict[str, Any]:
    """alter_consumer_group_offsets on an empty group, read back with list_consumer_group_offsets, then refused
    for a group with a member."""
    admin = importlib.import_module(kafka.__name__ + ".admin")
    a = admin.AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([admin.NewTopic(topic, 2, 1)])[topic].result(30)

    def partitions(r: Any) -> list[Any]:
        return [(tp.topic == topic, tp.partition, tp.offset, tp.metadata, tp.error and tp.error.code())
                for tp in r.topic_partitions]

    request = kafka.ConsumerGroupTopicPartitions(group, [kafka.TopicPartition(topic, 0, 5),
                                                         kafka.TopicPartition(topic, 1, 7, metadata="m")])
    seen: dict[str, Any] = {"altered": _outcome(a.alter_consumer_group_offsets([request])[group], partitions)}
    listed = kafka.ConsumerGroupTopicPartitions(group, [kafka.TopicPartition(topic, 0), kafka.TopicPartition(topic, 1)])
    seen["listed"] = _outcome(a.list_consumer_group_offsets([listed])[group], partitions)
    member = kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000})
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        seen["member joined"] = bool(member.assignment())
        again = kafka.ConsumerGroupTopicPartitions(group, [kafka.TopicPartition(topic, 0, 9)])
        seen["altered with a member"] = _outcome(a.alter_consumer_group_offsets([again])[group], partitions)
    finally:
        member.close()
    return seen


def test_alter_consumer_group_offsets_as_confluent_kafka(broker: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    groups = _name("g-theirs"), _name("g-ours")
    with Admin({"bootstrap.servers": broker.bootstrap_servers}) as native:  # both groups' coordinators loaded
        for group in groups:  # (librdkafka does not retry COORDINATOR_LOAD_IN_PROGRESS here: a fresh Kafka)
            native.list_consumer_group_offsets(group)
    theirs = _altered(confluent_kafka, broker.bootstrap_servers, _name("alter-theirs"), groups[0])
    ours = _altered(ck, broker.bootstrap_servers, _name("alter-ours"), groups[1])
    assert ours == theirs
    if not isinstance(broker, EmbeddedBroker):  # Tansu keeps no commit metadata (both clients read None back)
        assert ours["listed"] == ("ok", [(True, 0, 5, None, None), (True, 1, 7, "m", None)])
    assert ours["member joined"] and ours["altered with a member"][1][0][4] == ck.KafkaError.UNKNOWN_MEMBER_ID


def _acls(kafka: ModuleType, config: dict[str, Any], base: str) -> dict[str, Any]:
    admin = importlib.import_module(kafka.__name__ + ".admin")
    a = admin.AdminClient(config)

    def plain(b: Any) -> tuple[str, ...]:
        return (b.restype.name, b.name.replace(base, "B"), b.resource_pattern_type.name, b.principal, b.host,
                b.operation.name, b.permission_type.name)

    literal = admin.AclBinding(admin.ResourceType.TOPIC, f"{base}-orders", admin.ResourcePatternType.LITERAL,
                               "User:alice", "*", admin.AclOperation.READ, admin.AclPermissionType.ALLOW)
    prefixed = admin.AclBinding(admin.ResourceType.TOPIC, base, admin.ResourcePatternType.PREFIXED, "User:bob", "*",
                                admin.AclOperation.WRITE, admin.AclPermissionType.DENY)
    group = admin.AclBinding("group", base, "literal", "User:alice", "*", "read", "allow")  # names as strings
    created = a.create_acls([literal, prefixed, group])
    seen: dict[str, Any] = {"created": sorted((plain(b), _outcome(f)) for b, f in created.items())}
    orders = admin.AclBindingFilter(admin.ResourceType.TOPIC, f"{base}-orders", admin.ResourcePatternType.MATCH,
                                    None, None, admin.AclOperation.ANY, admin.AclPermissionType.ANY)
    deadline = time.monotonic() + 10  # the authorizer applies ACLs from the metadata log a moment later
    while True:
        found = _outcome(a.describe_acls(orders), lambda bs: sorted(plain(b) for b in bs))
        if found[0] != "ok" or len(found[1]) == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    seen["described by a MATCH filter"] = found
    everything_of_base = [admin.AclBindingFilter(kind, base, admin.ResourcePatternType.ANY, None, None,
                                                 admin.AclOperation.ANY, admin.AclPermissionType.ANY)
                          for kind in (admin.ResourceType.TOPIC, admin.ResourceType.GROUP)]
    orders_literal = admin.AclBindingFilter(admin.ResourceType.TOPIC, f"{base}-orders",
                                            admin.ResourcePatternType.LITERAL, None, None, admin.AclOperation.ANY,
                                            admin.AclPermissionType.ANY)
    filters = [*everything_of_base, orders_literal]
    deleted = a.delete_acls(filters)
    seen["deleted"] = [_outcome(deleted[f], lambda bs: sorted(plain(b) for b in bs)) for f in filters]
    seen["create again"] = _outcome(a.create_acls([literal])[literal])
    a.delete_acls([orders_literal])[orders_literal].result(30)
    return seen


@pytest.mark.broker_only("kafka", reason="Tansu keeps no ACLs; Kafka's StandardAuthorizer does")
def test_acl_calls_as_confluent_kafka(broker: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    config = {**broker.security_config("SASL_PLAINTEXT", user="admin")}
    theirs = _acls(confluent_kafka, config, _name("acl-theirs"))
    ours = _acls(ck, config, _name("acl-ours"))
    assert ours == theirs and ours["create again"] == ("ok", None)
    assert [outcome for _, outcome in ours["created"]] == [("ok", None)] * 3
    assert ours["described by a MATCH filter"] == ("ok", [
        ("TOPIC", "B", "PREFIXED", "User:bob", "*", "WRITE", "DENY"),
        ("TOPIC", "B-orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])
    assert ours["deleted"] == [("ok", [("TOPIC", "B", "PREFIXED", "User:bob", "*", "WRITE", "DENY")]),
                               ("ok", [("GROUP", "B", "LITERAL", "User:alice", "*", "READ", "ALLOW")]),
                               ("ok", [("TOPIC", "B-orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")])]


def _scram(kafka: ModuleType, config: dict[str, Any], user: str) -> dict[str, Any]:
    """Create a user with two mechanisms (one call each: Kafka takes a user once per request), describe it by name
    and among every user, delete one mechanism, delete it again (not found), delete the other."""
    admin = importlib.import_module(kafka.__name__ + ".admin")
    a = admin.AdminClient(config)
    sha256, sha512 = admin.ScramMechanism.SCRAM_SHA_256, admin.ScramMechanism.SCRAM_SHA_512
    seen: dict[str, Any] = {"created": [_outcome(a.alter_user_scram_credentials([admin.UserScramCredentialUpsertion(
        user, admin.ScramCredentialInfo(mechanism, iterations), b"pw-" + user.encode())])[user])
        for mechanism, iterations in ((sha256, 8192), (sha512, 4096))]}

    def infos(d: Any) -> list[tuple[str, int]]:
        return sorted((c.mechanism.name, c.iterations) for c in d.scram_credential_infos)

    deadline = time.monotonic() + 10  # Kafka applies credentials from the metadata log a moment later
    while (found := _outcome(a.describe_user_scram_credentials([user])[user], infos))[0] != "ok" \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    seen["described"] = found
    everyone = a.describe_user_scram_credentials().result(30)
    seen["among every user"] = (infos(everyone[user]), everyone[user].user)
    for step in ("deleted", "deleted again"):
        seen[step] = _outcome(a.alter_user_scram_credentials([admin.UserScramCredentialDeletion(user, sha256)])[user])
    a.alter_user_scram_credentials([admin.UserScramCredentialDeletion(user, sha512)])[user].result(30)
    return seen


@pytest.mark.broker_only("kafka", reason="Tansu keeps no SCRAM credentials")
def test_scram_credential_calls_as_confluent_kafka(broker: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    config = {**broker.security_config("SASL_PLAINTEXT", user="admin")}
    theirs = _scram(confluent_kafka, config, _name("scram-theirs"))
    ours = _scram(ck, config, _name("scram-ours"))
    assert {k: v for k, v in ours.items() if k != "among every user"} == {
        k: v for k, v in theirs.items() if k != "among every user"}
    assert ours["created"] == [("ok", None)] * 2 and ours["deleted"] == ("ok", None)
    assert ours["described"] == ("ok", [("SCRAM_SHA_256", 8192), ("SCRAM_SHA_512", 4096)])
    assert ours["among every user"][0] == ours["described"][1] and ours["deleted again"] == ("KafkaException", 91)
    admin = ck.admin
    client = admin.AdminClient({"bootstrap.servers": "127.0.0.1:1"})
    with pytest.raises(TypeError, match="'password' must be bytes"):
        client.alter_user_scram_credentials([admin.UserScramCredentialUpsertion(
            "u", admin.ScramCredentialInfo(admin.ScramMechanism.SCRAM_SHA_256, 4096), "pw")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Expected at least one alteration"):
        client.alter_user_scram_credentials([])
    with pytest.raises(ValueError, match="iterations"):
        client.alter_user_scram_credentials([admin.UserScramCredentialUpsertion(
            "u", admin.ScramCredentialInfo(admin.ScramMechanism.SCRAM_SHA_256, 10), b"pw")])
    with pytest.raises(TypeError, match="list of String"):
        client.describe_user_scram_credentials("u")  # type: ignore[arg-type]


def test_the_values_refuse_what_confluent_kafka_refuses() -> None:
    admin = ck.admin
    with pytest.raises(ValueError, match="Cannot use enum ANY"):
        admin.AclBinding(admin.ResourceType.ANY, "t", "literal", "User:a", "*", "read", "allow")
    with pytest.raises(TypeError, match="name must be a str"):
        admin.AclBinding("topic", None, "literal", "User:a", "*", "read", "allow")
    assert admin.AclBindingFilter("any", None, "match", None, None, "any", "any").name is None
    with pytest.raises(TypeError, match="TopicCollection"):
        admin.AdminClient({"bootstrap.servers": "127.0.0.1:1"}).describe_topics(["t"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timestamp"):
        admin.OffsetSpec.for_timestamp(-5)


@pytest.mark.parametrize("module", ["cykafka.compat.confluent_kafka", "confluent_kafka"])
def test_poll_returns_once_a_callback_ran_and_counts_them(module: str) -> None:
    """A broker that cannot be reached is reported to error_cb; poll(timeout) returns once that happened with how
    many callbacks ran (confluent-kafka serves them inside poll; cykafka runs them on its threads as they come and
    poll counts them). poll(0) never waits; a timeout that is not a number is refused."""
    kafka = pytest.importorskip(module)
    admin = importlib.import_module(module + ".admin")
    seen: list[Any] = []
    client = admin.AdminClient({"bootstrap.servers": "127.0.0.1:1", "error_cb": seen.append})
    try:
        client.describe_cluster(request_timeout=2)  # cykafka connects when a call needs it (librdkafka at once)
        assert client.poll(10) >= 1
        assert seen and isinstance(seen[0], kafka.KafkaError)
        assert client.poll(0) >= 0
        with pytest.raises(TypeError):
            client.poll("1")
    finally:
        if hasattr(client, "close"):
            client.close()


def test_poll_without_a_timeout_returns_when_the_client_closes() -> None:
    client = ck.admin.AdminClient({"bootstrap.servers": "127.0.0.1:1"})  # no error_cb: no callback ever runs
    assert client.poll(0.05) == 0
    with pytest.raises(TypeError, match="timeout"):
        client.poll(float("nan"))  # confluent-kafka's returns at once
    returned: list[int] = []
    waiting = threading.Thread(target=lambda: returned.append(client.poll()), daemon=True)
    waiting.start()
    client.close()
    waiting.join(10)
    assert returned == [0]
