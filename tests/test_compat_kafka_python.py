"""cykafka.compat.kafka (issue 31): kafka-python 3.x's documented usage (its docs' KafkaProducer, KafkaConsumer and
KafkaAdminClient snippets; the calls reproduced here, only the import changed) against the test brokers, printing
what kafka-python's would; and a differential test: the same calls through kafka-python itself and through the
compat module on the same broker give the same records, committed offsets and error types."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

import cykafka
from cykafka.compat import kafka as compat
from cykafka.compat.kafka import (
    DefaultSerializer,
    JsonSerializer,
    KafkaAdminClient,
    KafkaConsumer,
    KafkaProducer,
    NewTopic,
    OffsetAndMetadata,
    TopicPartition,
)
from cykafka.compat.kafka.errors import (
    IllegalArgumentError,
    IllegalStateError,
    KafkaConfigurationError,
    KafkaError,
    TopicAlreadyExistsError,
)

GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}  # Tansu holds a join session_timeout_ms / 2


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _bootstrap(broker: Any) -> list[str]:
    return [broker.bootstrap_servers]  # a list, as kafka-python's docs write it


def test_the_producer_example(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/high_level.rst's KafkaProducer block: send -> get(timeout=10) -> print topic, partition, offset; keyed
    sends; DefaultSerializer and JsonSerializer; callbacks and errbacks; flush; retries=5."""
    topic = _topic("my-topic")
    producer = KafkaProducer(bootstrap_servers=_bootstrap(broker))
    future = producer.send(topic, b"raw_bytes")
    try:
        record_metadata = future.get(timeout=10)
    except KafkaError:
        pytest.fail("the send failed")
    print(record_metadata.topic)
    print(record_metadata.partition)
    print(record_metadata.offset)
    out = capsys.readouterr().out.split()
    assert out[0] == topic and 0 <= int(out[1]) < 4 and out[2] == "0"
    assert record_metadata.topic_partition == (topic, record_metadata.partition)
    assert record_metadata.serialized_value_size == len(b"raw_bytes") and record_metadata.serialized_key_size == -1
    keyed = producer.send(topic, key=b"foo", value=b"bar").get(timeout=10)
    assert keyed.serialized_key_size == 3

    utf16 = KafkaProducer(bootstrap_servers=_bootstrap(broker), value_serializer=DefaultSerializer("utf-16"))
    utf16.send(topic + "-utf16", "懂不懂").get(timeout=10)
    as_json = KafkaProducer(bootstrap_servers=_bootstrap(broker), value_serializer=JsonSerializer())
    as_json.send(topic, {"key": "value"}, partition=0).get(timeout=10)

    seen: list[Any] = []
    errors: list[BaseException] = []
    for _ in range(100):
        producer.send(topic, b"msg")
    producer.send(topic, b"raw_bytes").add_callback(seen.append).add_errback(errors.append)
    producer.flush()
    assert len(seen) == 1 and seen[0].topic == topic and not errors
    done = producer.send(topic, b"late")
    done.get(timeout=10)
    done.add_callback(seen.append)  # on a final future: called at once, as kafka-python does
    assert seen[-1].offset == done.get().offset

    class Last:  # kafka-python 3.x's Partitioner shape
        def partition(self, topic: str, key: Any, key_bytes: Any, value: Any, value_bytes: Any, metadata: Any) -> int:
            return max(metadata.available_partitions_for_topic(topic))

    for partitioner in (Last(), lambda key_bytes, all_, available: all_[-1]):  # and 2.x's callable
        last = KafkaProducer(bootstrap_servers=_bootstrap(broker), partitioner=partitioner)
        assert last.send(topic, b"to the last", key=b"any").get(timeout=10).partition == 3
        last.close(timeout=10)
    retrying = KafkaProducer(bootstrap_servers=_bootstrap(broker), retries=5)
    assert retrying.producer.config.retries == 5
    for p in (producer, utf16, as_json, retrying):
        p.close(timeout=10)
    with KafkaConsumer(bootstrap_servers=_bootstrap(broker), auto_offset_reset="earliest",
                       value_deserializer=DefaultSerializer("utf-16"), consumer_timeout_ms=5000) as reader:
        reader.subscribe(pattern=f"^{topic}-utf16$")
        assert next(reader).value == "懂不懂"


@pytest.mark.broker_only("kafka", reason="Tansu never answers MESSAGE_TOO_LARGE (docs/compatibility.md)")
def test_a_failed_delivery_reaches_the_errback(broker: Any) -> None:
    """A record the broker refuses (over the topic's max.message.bytes): get() raises kafka-python's
    MessageSizeTooLargeError and add_errback's function gets it; add_callback's does not run."""
    topic = _topic("small")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1,
                                 "configs": {"max.message.bytes": "1000"}}}, wait_for_metadata=True)
    admin.close()
    errors: list[BaseException] = []
    called: list[Any] = []
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        future = producer.send(topic, b"x" * 3000).add_callback(called.append).add_errback(errors.append)
        with pytest.raises(compat.MessageSizeTooLargeError):
            future.get(timeout=30)
        producer.flush(timeout=30)  # the callbacks have run when flush returns
    assert called == [] and len(errors) == 1 and isinstance(errors[0], compat.MessageSizeTooLargeError)
    assert future.failed() and isinstance(future.exception, compat.MessageSizeTooLargeError)


def test_the_producer_defaults_are_kafka_pythons(broker: Any) -> None:
    """kafka-python 3.x: acks=all with idempotence (not 2.x's acks=1), linger_ms=0, its client_id; a kwarg cykafka
    cannot honour, or one kafka-python does not know, is refused naming it (KafkaConfigurationError, a cykafka
    KafkaError and a ValueError: kafka-python's KafkaProducer raises ValueError for an unknown kwarg)."""
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        config = producer.producer.config
        assert (config.acks, config.enable_idempotence, config.linger_ms) == (-1, True, 0)
        assert config.client_id.startswith("kafka-python-producer-")
        producer.send("defaults", b"x").get(timeout=30)
        assert producer.metrics()["producer-metrics"]["record-send-total"] == 1.0
    for bad, named in (({"sasl_kerberos_name": "x"}, "sasl_kerberos_name"), ({"lingr_ms": 5}, "lingr_ms"),
                       ({"acks": 2}, "acks")):
        with pytest.raises(KafkaConfigurationError, match=named) as caught:
            KafkaProducer(bootstrap_servers=broker.bootstrap_servers, **bad)
        assert isinstance(caught.value, cykafka.KafkaError) and isinstance(caught.value, ValueError)
    assert compat.bootstrap(["a", "b:1"]) == "a:9092,b:1"


def test_the_consumer_examples(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/high_level.rst's KafkaConsumer block: a group member iterating (print topic:partition:offset: key= value=),
    manual commits of OffsetAndMetadata(offset + 1, '', -1), auto_offset_reset='earliest' without commits, a
    JsonSerializer value_deserializer, consumer_timeout_ms ending the iteration, subscribe(pattern=...)."""
    topic = f"awesome-{uuid.uuid4().hex[:8]}"
    with KafkaProducer(bootstrap_servers=_bootstrap(broker), value_serializer=JsonSerializer()) as producer:
        for i in range(3):
            producer.send(topic, {"n": i}, key=b"k%d" % i, partition=0)
        producer.flush(timeout=30)
    group = f"my-group-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(topic, group_id=group, bootstrap_servers=_bootstrap(broker), enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=15000, **GROUP)
    for message in consumer:
        print("%s:%d:%d: key=%s value=%s" % (message.topic, message.partition,  # noqa: UP031  (the docs' line)
                                              message.offset, message.key, message.value))
        tp = TopicPartition(message.topic, message.partition)
        consumer.commit({tp: OffsetAndMetadata(message.offset + 1, "", -1)})
        if message.offset == 2:
            break
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{topic}:0:{i}: key=b'k{i}' value=b'{json.dumps({'n': i})}'" for i in range(3)]
    assert consumer.committed(TopicPartition(topic, 0)) == 3
    with_metadata = consumer.committed(TopicPartition(topic, 0), metadata=True)
    assert isinstance(with_metadata, OffsetAndMetadata) and with_metadata[:2] == (3, "")
    consumer.close()

    reader = KafkaConsumer(bootstrap_servers=_bootstrap(broker), auto_offset_reset="earliest",
                           enable_auto_commit=False, value_deserializer=JsonSerializer(), consumer_timeout_ms=1000)
    reader.subscribe(pattern=f"^{re.escape(topic[:12])}.*")  # '^awesome.*', narrowed to this test's topic
    got = [m.value for m in reader]  # StopIteration once 1 s passes without a record
    assert got == [{"n": 0}, {"n": 1}, {"n": 2}]
    with pytest.raises(IllegalStateError, match="Requires group_id"):
        reader.commit()
    reader.close()


def test_rebalance_listener_and_group_admin(broker: Any) -> None:
    """subscribe(listener=ConsumerRebalanceListener) sees the assignment and the revocation on close; the group
    shows in KafkaAdminClient's list_groups (3.x dicts), list_consumer_groups (2.x tuples) and describe_groups;
    highwater after a poll."""
    topic, group = _topic("rebalance"), _topic("group")
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send(topic, b"x", partition=2).get(timeout=30)

    class Listener(compat.ConsumerRebalanceListener):
        def __init__(self) -> None:
            self.calls: list[tuple[str, set[TopicPartition]]] = []

        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            self.calls.append(("revoked", set(revoked)))

        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            self.calls.append(("assigned", set(assigned)))

    listener = Listener()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group,
                             auto_offset_reset="earliest", **GROUP)
    consumer.subscribe(iter([topic]), listener=listener)  # any iterable of names
    got: list[Any] = []
    for _ in range(100):
        for records in consumer.poll(timeout_ms=300).values():
            got += records
        if got:
            break
    everything = {TopicPartition(topic, p) for p in range(4)}
    assert listener.calls[-1] == ("assigned", everything) and got[0].value == b"x"
    assert consumer.highwater(TopicPartition(topic, 2)) == 1
    consumer.commit()  # Tansu lists a group once it has offsets
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    assert {"group_id": group, "protocol_type": "consumer"}.items() <= next(
        g for g in admin.list_groups() if g["group_id"] == group).items()
    assert (group, "consumer") in admin.list_consumer_groups()
    described = admin.describe_groups([group])[group]
    assert described["group_state"] == "Stable" and len(described["members"]) == 1
    consumer.close()
    assert listener.calls[-1] == ("revoked", everything)
    admin.close()


@pytest.mark.broker_only("kafka", reason="two members join one group: Tansu holds each join session_timeout_ms / 2")
def test_consumers_in_parallel_share_the_partitions(broker: Any) -> None:
    """docs/high_level.rst's "Use multiple consumers in parallel": two KafkaConsumer('my-topic', group_id='my-group')
    split the topic's partitions between them."""
    topic, group = _topic("my-topic"), _topic("my-group")
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        producer.send(topic, b"x", partition=0).get(timeout=30)  # the topic exists, with 4 partitions
    consumer1 = KafkaConsumer(topic, group_id=group, bootstrap_servers=broker.bootstrap_servers, **GROUP)
    consumer2 = KafkaConsumer(topic, group_id=group, bootstrap_servers=broker.bootstrap_servers, **GROUP)
    try:
        for _ in range(100):  # both poll until the group has given each its share
            consumer1.poll(timeout_ms=100)
            consumer2.poll(timeout_ms=100)
            if len(consumer1.assignment()) == len(consumer2.assignment()) == 2:
                break
        assert consumer1.assignment() | consumer2.assignment() == {TopicPartition(topic, p) for p in range(4)}
        assert not consumer1.assignment() & consumer2.assignment()
    finally:
        consumer1.close()
        consumer2.close()


def test_poll_and_positions(broker: Any) -> None:
    """poll(timeout_ms, max_records) -> {TopicPartition: [ConsumerRecord]} with kafka-python's record fields;
    seek, seek_to_beginning/end (varargs), position, beginning/end_offsets, offsets_for_times, pause/resume,
    partitions_for_topic, topics()."""
    topic = _topic("poll")
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for i in range(5):
            producer.send(topic, b"v%d" % i, key=b"k", headers=[("h", b"x")], partition=1, timestamp_ms=1000 + i)
        producer.flush(timeout=30)
    tp = TopicPartition(topic, 1)
    with KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        got: list[Any] = []
        for _ in range(50):
            for part, records in consumer.poll(timeout_ms=200, max_records=2).items():
                assert part == tp and len(records) <= 2
                got += records
            if len(got) == 5:
                break
        first = got[0]
        assert first._fields == ("topic", "partition", "leader_epoch", "offset", "timestamp", "timestamp_type",
                                 "key", "value", "headers", "checksum", "serialized_key_size",
                                 "serialized_value_size", "serialized_header_size")
        assert (first.topic, first.partition, first.offset, first.timestamp, first.key, first.value,
                first.headers, first.serialized_key_size, first.serialized_value_size,
                first.serialized_header_size) == (topic, 1, 0, 1000, b"k", b"v0", [("h", b"x")], 1, 2, 2)
        assert consumer.position(tp) == 5
        consumer.seek(tp, 3)
        assert consumer.position(tp) == 3
        consumer.seek_to_beginning(tp)
        assert consumer.position(tp) == 0
        consumer.seek_to_end()
        assert consumer.position(tp) == 5
        assert consumer.beginning_offsets([tp]) == {tp: 0} and consumer.end_offsets([tp]) == {tp: 5}
        if broker.__class__.__name__ != "EmbeddedBroker":  # Tansu answers by its own append time
            assert consumer.offsets_for_times({tp: 1003})[tp].offset == 3
        consumer.pause(tp)
        assert consumer.paused() == {tp}
        consumer.resume(tp)
        assert consumer.paused() == set()
        assert consumer.partitions_for_topic(topic) == {0, 1, 2, 3}
        assert topic in consumer.topics()


def test_transactions(broker: Any) -> None:
    """init/begin/send/send_offsets_to_transaction/commit and abort, kafka-python's calls; a read_committed reader
    sees the committed records only."""
    topic = _topic("txn")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=_topic("tx"))
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"committed", partition=0)
    producer.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)},
                                         compat.ConsumerGroupMetadata(_topic("g")))
    producer.commit_transaction()
    producer.begin_transaction()
    producer.send(topic, b"aborted", partition=0)
    producer.abort_transaction()
    producer.close(timeout=10)
    with pytest.raises(IllegalStateError, match="already closed"):
        producer.send(topic, b"x")
    with KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                       isolation_level="read_committed", consumer_timeout_ms=1000) as reader:
        reader.assign([TopicPartition(topic, 0)])
        values = [m.value for m in reader]
    assert values[0] == b"committed"
    if broker.__class__.__name__ != "EmbeddedBroker":  # Tansu shows aborted records (docs/compatibility.md)
        assert values == [b"committed"]


def test_kafka_admin_names_import_from_the_admin_module_and_describe_configs_takes_their_resource(
        broker: Any) -> None:
    """`from kafka.admin import KafkaAdminClient, NewTopic, ConfigResource, ConfigResourceType`, the common idiom,
    with only the import changed (the admin module named only KafkaAdminClient, and describe_configs failed on
    kafka-python's ConfigResource: it took only (type, name) pairs)."""
    from cykafka.compat.kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    assert NewTopic is compat.NewTopic
    topic = _topic("adminnames")
    admin = KafkaAdminClient(bootstrap_servers=_bootstrap(broker))
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                      topic_configs={"retention.ms": "123456"})])
        by_enum = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        by_name = admin.describe_configs([ConfigResource("topic", topic)])
        assert by_enum[("topic", topic)]["retention.ms"] == by_name[("topic", topic)]["retention.ms"] == "123456"
        with pytest.raises(IllegalArgumentError, match="must be a ConfigResourceType or one of TOPIC, BROKER"):
            ConfigResource("cluster", "x")
    finally:
        admin.close()


def test_the_admin_example(broker: Any) -> None:
    """docs/high_level.rst's KafkaAdminClient block: create_topics by name and from a dict, delete_topics,
    list_groups, list_group_offsets; 2.x's [NewTopic] and TopicAlreadyExistsError on a second create."""
    admin = KafkaAdminClient(bootstrap_servers=_bootstrap(broker))
    first, second, third = _topic("testtopic1"), _topic("testtopic2"), _topic("testtopic3")
    created = admin.create_topics([first], timeout_ms=None, validate_only=False)
    assert created["topics"][0]["name"] == first and created["topics"][0]["error_code"] == 0
    admin.create_topics({second: {"num_partitions": 1, "replication_factor": 1,
                                  "configs": {"max.message.bytes": "1000000"}}}, timeout_ms=None, validate_only=False)
    admin.create_topics([NewTopic(third, num_partitions=2, replication_factor=1)], wait_for_metadata=True)
    admin.wait_for_topics([second])
    with pytest.raises(TopicAlreadyExistsError) as caught:
        admin.create_topics([NewTopic(third, num_partitions=2, replication_factor=1)])
    assert caught.value.errno == 36 and isinstance(caught.value, cykafka.KafkaError)
    described = {t["name"]: t for t in admin.describe_topics([second, third])}
    assert len(described[second]["partitions"]) == 1 and len(described[third]["partitions"]) == 2
    admin.delete_topics([first])
    assert isinstance(admin.list_groups(), list)
    nobody = _topic("nobody")
    assert admin.list_group_offsets([nobody]) == {nobody: {}}
    admin.close()


# -- differential: kafka-python itself against the compat module, same calls, same broker ----------------------------


def _run(kafka: Any, broker: Any, topic: str, group: str) -> dict[str, Any]:
    """One sequence of kafka-python calls through module `kafka` (kafka-python's, or the compat one)."""
    out: dict[str, Any] = {}
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    producer.send(topic, b"v0", key=b"k0", partition=0).get(timeout=30)
    producer.send(topic, b"v1", key=None, headers=[("h", b"1")], partition=0)
    producer.send(topic, None, key=b"tombstone", partition=0)
    producer.flush(timeout=30)
    producer.close(timeout=10)
    out["closed_send"] = _error(lambda: producer.send(topic, b"x"))
    small = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, max_request_size=1000)
    out["too_large"] = _error(lambda: small.send(topic, b"x" * 2000, partition=0))
    out["no_such_partition"] = _error(lambda: small.send(topic, b"x", partition=99))
    small.close(timeout=10)
    out["unknown_producer_kwarg"] = _error(lambda: kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers,
                                                                       lingr_ms=5))
    out["unknown_consumer_kwarg"] = _error(lambda: kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers,
                                                                       lingr_ms=5))
    tp = kafka.TopicPartition(topic, 0)
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group,
                                   enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.assign([tp])
    records: list[Any] = []
    for _ in range(100):
        for got in consumer.poll(timeout_ms=200).values():
            records += got
        if len(records) >= 3:
            break
    out["records"] = [(r.topic, r.partition, r.offset, r.key, r.value, list(r.headers), r.serialized_key_size,
                       r.serialized_value_size) for r in records]
    called: list[Any] = []
    consumer.commit_async({tp: kafka.OffsetAndMetadata(1, "", -1)}, callback=lambda offsets, r: called.append(r))
    for _ in range(50):  # the callback runs inside a later poll
        if called:
            break
        consumer.poll(timeout_ms=100)
    out["async_committed"] = (len(called), isinstance(called[0], Exception), consumer.committed(tp))
    consumer.commit({tp: kafka.OffsetAndMetadata(2, "meta", -1)})
    out["committed"] = consumer.committed(tp)
    out["position"] = consumer.position(tp)
    consumer.close()
    no_group = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    out["commit_without_group"] = _error(lambda: no_group.commit({tp: kafka.OffsetAndMetadata(1, "", -1)}))
    no_group.close()
    return out


def _error(call: Any) -> tuple[str, tuple[str, ...]]:
    """The error a call raised: its class name and the builtin exception types it is."""
    try:
        call()
    except Exception as e:
        builtins = tuple(sorted(t.__name__ for t in type(e).__mro__ if t.__module__ == "builtins"
                                and t not in (object, BaseException, Exception)))
        return type(e).__name__, builtins
    return "no error", ()


def test_kafka_python_and_the_compat_module_agree(broker: Any) -> None:
    """Records (topic, partition, offset, key, value, headers, sizes), the committed offset, the position and the
    error types of three bad calls, kafka-python's against ours. kafka-python's unknown-kwarg ValueError (producer)
    is a KafkaConfigurationError here that is a ValueError too: the types compared are the names for kafka-python's
    own errors and the builtin bases for builtins."""
    kafka = pytest.importorskip("kafka")
    topic = _topic("diff")
    theirs = _run(kafka, broker, topic + "-peer", _topic("g"))
    ours = _run(compat, broker, topic + "-ours", _topic("g"))
    for result in (theirs, ours):
        result["records"] = [(t.rsplit("-", 1)[1] and "T", *rest) for t, *rest in result["records"]]
    assert ours["records"] == theirs["records"] and len(ours["records"]) == 3
    assert (ours["committed"], ours["position"]) == (theirs["committed"], theirs["position"]) == (2, 3)
    assert ours["async_committed"] == theirs["async_committed"] == (1, False, 1)
    assert ours["closed_send"][0] == theirs["closed_send"][0] == "IllegalStateError"
    assert ours["commit_without_group"][0] == theirs["commit_without_group"][0] == "IllegalStateError"
    assert ours["too_large"][0] == theirs["too_large"][0] == "MessageSizeTooLargeError"
    assert theirs["no_such_partition"] == ("ValueError", ("ValueError",))
    assert "ValueError" in ours["no_such_partition"][1]
    assert theirs["unknown_consumer_kwarg"][0] == ours["unknown_consumer_kwarg"][0] == "KafkaConfigurationError"
    assert theirs["unknown_producer_kwarg"] == ("ValueError", ("ValueError",))
    assert "ValueError" in ours["unknown_producer_kwarg"][1]


# -- docs/migrating-kafka-python.md: every snippet runs and prints what the guide says -------------------------------

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "migrating-kafka-python.md"


def _snippets(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", path.read_text(), flags=re.S | re.M)


def test_the_migration_guide_snippets_run(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Each ```python block of docs/migrating-kafka-python.md, the address made the test broker's (topics made
    unique per run), prints what the text after it says."""
    blocks = _snippets(GUIDE)
    suffix = uuid.uuid4().hex[:6]
    expected = [["migrating-kp 0 0", "migrating-kp 0 0 b'k' b'raw_bytes'"],
                ["KafkaConfigurationError names ssl_crlfile: True"],
                ["3", "[b'a', b'b', b'c']"]]
    assert len(blocks) == len(expected)
    for code, lines in zip(blocks, expected, strict=True):
        code = code.replace("127.0.0.1:9092", broker.bootstrap_servers).replace("migrating-kp", f"mkp{suffix}")
        exec(compile(code, str(GUIDE), "exec"), {"__name__": "__main__"})  # the guide's own example
        assert capsys.readouterr().out.replace(f"mkp{suffix}", "migrating-kp").splitlines() == lines
    text = GUIDE.read_text()
    assert "prints `migrating-kp 0 0` then `migrating-kp 0 0 b'k' b'raw_bytes'`" in text
    assert "prints `KafkaConfigurationError names ssl_crlfile: True`" in text and "prints `3` then" in text
