"""cykafka.compat.confluent_kafka (issue 31): confluent-kafka's documented examples (its repository's examples/
producer.py, consumer.py, adminapi.py's topic calls, eos-transactions.py's read-process-write) run with only the import
changed, their calls reproduced here and what they print asserted; and a differential test: the same calls against
the real confluent_kafka and against the compat module on the same broker give the same records, commits and
errors."""

from __future__ import annotations

import functools
import importlib
import io
import logging
import operator
import time
import uuid
from types import ModuleType
from typing import Any

import pytest

import cykafka.compat.confluent_kafka as ck
from cykafka import Producer as NativeProducer
from cykafka.broker import EmbeddedBroker

pytestmark = pytest.mark.broker
FAST_GROUP = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}  # Tansu holds a join session.timeout / 2


def _topic(prefix: str) -> str:
    return f"ck-{prefix}-{uuid.uuid4().hex[:8]}"


def _fill(broker: Any, topic: str, records: list[tuple[bytes | None, bytes]], partition: int = 0) -> None:
    with NativeProducer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for key, value in records:
            producer.send(topic, value, key, partition=partition)
        assert producer.flush(30) == 0


def _poll_until(consumer: Any, done: Any, timeout_s: float = 30.0) -> list[Any]:
    """Messages (records and events) of consumer.poll until done(messages) or the bounded wait ends."""
    seen: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while not done(seen) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            seen.append(msg)
    return seen


# -- examples/producer.py ---------------------------------------------------------------------------------------------

def producer_example(kafka: ModuleType, bootstrap: str, topic: str, lines: list[str], err: io.StringIO) -> None:
    """examples/producer.py's calls: Producer(**conf), produce(callback=) per line with BufferError handled,
    poll(0) after each, len(p), flush()."""
    p = kafka.Producer(**{"bootstrap.servers": bootstrap})

    def delivery_callback(e: Any, msg: Any) -> None:
        if e:
            err.write(f"% Message failed delivery: {e}\n")
        else:
            err.write(f"% Message delivered to {msg.topic()} [{msg.partition()}] @ {msg.offset():o}\n")

    for line in lines:
        try:
            p.produce(topic, line.rstrip(), callback=delivery_callback)
        except BufferError:
            err.write(f"% Local producer queue is full ({len(p)} messages awaiting delivery): try again\n")
        p.poll(0)
    err.write(f"% Waiting for {len(p)} deliveries\n")
    p.flush()


@pytest.mark.broker_only("tansu", reason="the example's calls; the differential tests cover Apache Kafka")
def test_the_producer_example_prints_one_delivery_per_line(broker: Any) -> None:
    topic = _topic("producer-example")
    err = io.StringIO()
    producer_example(ck, broker.bootstrap_servers, topic, ["first\n", "second\n", "third\n"], err)
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("% Waiting for ") and int(lines[0].split()[3]) <= 3
    delivered = [line.removeprefix(f"% Message delivered to {topic} [").split("] @ ") for line in lines[1:]]
    assert len(delivered) == 3 and all(line.startswith("% Message delivered") for line in lines[1:])
    by_partition: dict[str, list[str]] = {}
    for partition, offset in delivered:  # keyless: the partitioner picks; offsets count up in each partition
        by_partition.setdefault(partition, []).append(offset)
    assert sorted(functools.reduce(operator.iadd, by_partition.values(), [])) == sorted(
        str(i) for offsets in by_partition.values() for i in range(len(offsets)))


def test_a_full_queue_raises_buffer_error_at_once_and_poll_serves_reports(broker: Any) -> None:
    """queue.buffering.max.messages (librdkafka's count) is honoured: produce() raises BufferError at once, len()
    counts queued plus unserved reports, poll() serves them on this thread and returns how many."""
    topic = _topic("queue-full")
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "queue.buffering.max.messages": 2})
    reports: list[tuple[Any, int | None]] = []
    p.produce(topic, b"a", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
    p.produce(topic, b"b", partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
    started = time.monotonic()
    with pytest.raises(BufferError):
        p.produce(topic, b"c", partition=0)
    assert time.monotonic() - started < 1.0
    assert len(p) == 2
    served = 0
    deadline = time.monotonic() + 20
    while served < 2 and time.monotonic() < deadline:
        served += p.poll(0.5)
    assert served == 2 and len(p) == 0
    assert [e for e, _ in reports] == [None, None] and sorted(o for _, o in reports) == [0, 1]
    assert p.flush(5) == 0
    for value in (b"d", b"e"):  # no callback anywhere: no report is queued (librdkafka's, without a dr_cb)
        p.produce(topic, value, partition=1)
    deadline = time.monotonic() + 10
    while len(p) and time.monotonic() < deadline:  # delivered leaves the count without any poll()
        time.sleep(0.01)
    assert len(p) == 0 and p.poll(0) == 0
    for value in (b"f", b"g"):  # so the delivered ones no longer fill the queue
        p.produce(topic, value, partition=1)
    assert p.flush(10) == 0


def test_produce_never_waits_for_metadata_and_reports_msg_timed_out_when_it_never_comes() -> None:
    """librdkafka's produce() returns at once with no broker reachable; the record is reported failed later."""
    from cykafka.broker import free_port

    p = ck.Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}", "max.block.ms": 300})
    reports: list[Any] = []
    started = time.monotonic()
    for value in (b"a", b"b"):
        p.produce("nowhere", value, on_delivery=lambda err, msg: reports.append((err.code(), msg.value())))
    assert time.monotonic() - started < 0.2 and len(p) == 2
    deadline = time.monotonic() + 10
    while len(reports) < 2 and time.monotonic() < deadline:
        p.poll(0.1)
    assert reports == [(ck.KafkaError._MSG_TIMED_OUT, b"a"), (ck.KafkaError._MSG_TIMED_OUT, b"b")] and len(p) == 0


def test_logger_receives_cykafkas_log_records_until_the_client_goes() -> None:
    """confluent-kafka's `logger=`: the client's logs go to that logger; not after close() or once the client is
    garbage (a confluent Producer is never closed)."""
    import gc

    from cykafka.broker import free_port

    heard: list[str] = []
    target = logging.getLogger(f"ck-test-{uuid.uuid4().hex[:6]}")
    target.propagate = False

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            heard.append(record.getMessage())

    target.addHandler(Keep())
    p = ck.Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}"}, logger=target)
    logging.getLogger("cykafka.producer").warning("one")
    p.close(0)
    logging.getLogger("cykafka.producer").warning("two")
    p2 = ck.Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}", "logger": target})
    logging.getLogger("cykafka.producer").warning("three")
    p2.flush(0)
    del p2
    gc.collect()
    logging.getLogger("cykafka.producer").warning("four")
    assert heard.count("one") == 1 and heard.count("three") == 1 and "two" not in heard and "four" not in heard


def test_an_unknown_config_key_is_a_kafka_exception_with_invalid_arg_naming_it() -> None:
    with pytest.raises(ck.KafkaException) as caught:
        ck.Producer({"bootstrap.servers": "127.0.0.1:9", "no.such.property": 1})
    error = caught.value.args[0]
    assert isinstance(error, ck.KafkaError) and error.code() == ck.KafkaError._INVALID_ARG
    assert error.name() == "_INVALID_ARG" and "no.such.property" in error.str()
    with pytest.raises(ck.KafkaException) as refused:  # a key cykafka cannot honour says what does the job instead
        ck.Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "queued.min.messages": 10})
    assert refused.value.args[0].code() == ck.KafkaError._INVALID_ARG
    assert "queued.min.messages" in refused.value.args[0].str() and "fetch.max.bytes" in refused.value.args[0].str()
    # KIP-848's protocol passes through (cykafka's consumer speaks both), refusing what only the classic one reads, as
    # librdkafka does
    with pytest.raises(ck.KafkaException) as protocol:
        ck.Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "group.protocol": "consumer",
                     "session.timeout.ms": 10000})
    assert protocol.value.args[0].code() == ck.KafkaError._INVALID_ARG
    assert "session.timeout.ms" in protocol.value.args[0].str()
    for name in ("consumer", "classic"):
        ck.Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "group.protocol": name}).close()


# -- examples/consumer.py ---------------------------------------------------------------------------------------------

@pytest.mark.broker_only("tansu", reason="the example's calls; the differential tests cover Apache Kafka")
def test_the_consumer_example_prints_the_assignment_records_and_end_of_partition(broker: Any) -> None:
    """examples/consumer.py's calls: Consumer(conf, logger=) with default.topic.config, subscribe(on_assign=),
    poll(timeout=1.0) until the end of the partition (enable.partition.eof), msg.error().code(), close()."""
    topic = _topic("consumer-example")
    _fill(broker, topic, [(b"k1", b"one"), (None, b"two")])
    conf = {"bootstrap.servers": broker.bootstrap_servers, "group.id": topic, "session.timeout.ms": 6000,
            "default.topic.config": {"auto.offset.reset": "smallest"}, "enable.partition.eof": True}
    logger = logging.getLogger("consumer")
    c = ck.Consumer(conf, logger=logger)
    out: list[str] = []

    def print_assignment(consumer: Any, partitions: list[Any]) -> None:
        out.append(f"Assignment: {[p.partition for p in partitions]}")

    c.subscribe([topic], on_assign=print_assignment)
    try:
        ends: set[int] = set()
        deadline = time.monotonic() + 30
        while len(ends) < 4 and time.monotonic() < deadline:
            msg = c.poll(timeout=1.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == ck.KafkaError._PARTITION_EOF:
                    out.append(f"% {msg.topic()} [{msg.partition()}] reached end at offset {msg.offset()}")
                    ends.add(msg.partition())
                else:
                    raise ck.KafkaException(msg.error())
            else:
                out.append(f"% {msg.topic()} [{msg.partition()}] at offset {msg.offset()} with key {msg.key()!s}:")
                out.append(str(msg.value()))
    finally:
        c.close()
    assert out[0] == "Assignment: [0, 1, 2, 3]"
    assert out[1:5] == [f"% {topic} [0] at offset 0 with key b'k1':", "b'one'",
                        f"% {topic} [0] at offset 1 with key None:", "b'two'"]
    assert sorted(out[5:]) == sorted([f"% {topic} [0] reached end at offset 2"] +
                                     [f"% {topic} [{p}] reached end at offset 0" for p in (1, 2, 3)])
    with ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": topic}) as again:
        committed = again.committed([ck.TopicPartition(topic, 0)], timeout=10)
    assert committed[0].offset == 2  # close() committed what was handed out (enable.auto.commit)


# -- examples/adminapi.py: create and delete topics, list -------------------------------------------------------------

def test_the_admin_example_creates_lists_and_deletes_topics(broker: Any) -> None:
    """adminapi.py's example_create_topics, example_list and example_delete_topics: {topic: Future} whose result()
    is None or raises KafkaException (a second create: TOPIC_ALREADY_EXISTS)."""
    from cykafka.compat.confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    topics = [_topic("admin-a"), _topic("admin-b")]
    out: list[str] = []
    try:
        for attempt in range(2):
            fs = a.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1) for topic in topics])
            for topic, f in fs.items():
                try:
                    f.result()
                    out.append(f"Topic {topic} created")
                except Exception as e:
                    assert isinstance(e, ck.KafkaException) and attempt == 1
                    assert e.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS
                    out.append(f"Failed to create topic {topic}: {e.args[0].name()}")
        deadline = time.monotonic() + 20
        md = a.list_topics(timeout=10)
        while not set(topics) <= set(md.topics) and time.monotonic() < deadline:  # Kafka lists it a moment later
            md = a.list_topics(timeout=10)
        assert len(md.brokers) == 1 and all(len(md.topics[t].partitions) == 3 for t in topics)
        assert [str(b) for b in md.brokers.values()] == [f"{broker.host}:{broker.port}/{b}" for b in md.brokers]
        fs = a.delete_topics(topics, operation_timeout=30)
        for topic, f in fs.items():
            f.result()
            out.append(f"Topic {topic} deleted")
    finally:
        a.close()
    assert out == [f"Topic {t} created" for t in topics] + [
        f"Failed to create topic {t}: TOPIC_ALREADY_EXISTS" for t in topics] + [f"Topic {t} deleted" for t in topics]


# -- examples/eos-transactions.py: read-process-write ---------------------------------------------------------------

def test_the_eos_transactions_example_copies_the_input_exactly_once(broker: Any) -> None:
    """eos-transactions.py's loop: assign() one partition, enable.partition.eof, a transactional producer
    (init_transactions, begin_transaction, produce(on_delivery=), poll(0)), then send_offsets_to_transaction(
    consumer.position(consumer.assignment()), consumer.consumer_group_metadata()) and commit_transaction()."""
    from base64 import b64encode

    input_topic, output_topic, group_id = _topic("eos-in"), _topic("eos-out"), _topic("eos-group")
    _fill(broker, input_topic, [(b"k%d" % i, b"v%d" % i) for i in range(5)])
    out: list[str] = []
    with ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group_id,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "enable.partition.eof": True}) as consumer:
        consumer.assign([ck.TopicPartition(input_topic, 0)])
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap_servers,
                                "transactional.id": f"eos-transactions.py-{group_id}"})
        producer.init_transactions()
        producer.begin_transaction()
        eof: dict[tuple[str, int], bool] = {}
        msg_cnt = 0
        failed: list[Any] = []
        out.append("=== Starting Consume-Transform-Process loop ===")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            producer.poll(0)
            msg = consumer.poll(timeout=1.0)
            if msg is None:
                continue
            topic, partition = msg.topic(), msg.partition()
            if msg.error():
                if msg.error().code() == ck.KafkaError._PARTITION_EOF:
                    eof[(topic, partition)] = True
                    out.append(f"=== Reached the end of {topic} [{partition}] at {msg.offset()}====")
                    if len(eof) == len(consumer.assignment()):
                        out.append("=== Reached end of input ===")
                        break
                continue
            eof.pop((topic, partition), None)
            msg_cnt += 1
            producer.produce(output_topic, b64encode(msg.value()), b64encode(msg.key()),
                             on_delivery=lambda err, m: failed.append(err) if err else None)
        out.append(f"=== Committing final transaction with {msg_cnt} messages ===")
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata())
        producer.commit_transaction()
        assert failed == [] and len(producer) == 0
        producer.close()
        assert consumer.committed([ck.TopicPartition(input_topic, 0)], timeout=10)[0].offset == 5
    assert out == ["=== Starting Consume-Transform-Process loop ===",
                   f"=== Reached the end of {input_topic} [0] at 5====", "=== Reached end of input ===",
                   "=== Committing final transaction with 5 messages ==="]
    with ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group_id + "-check",
                      "auto.offset.reset": "earliest"}) as check:
        check.assign([ck.TopicPartition(output_topic, p) for p in range(4)])
        copied = [m for m in _poll_until(check, lambda seen: len(seen) >= 5, 20) if not m.error()]
    assert sorted((m.key(), m.value()) for m in copied) == [(b64encode(b"k%d" % i), b64encode(b"v%d" % i))
                                                             for i in range(5)]


# -- differential: the real confluent_kafka and the compat module, the same calls -------------------------------------

def _same_calls(kafka: ModuleType, bootstrap: str, topic: str, group: str) -> dict[str, Any]:
    """One sequence of calls; what each returned or raised, as plain values."""
    seen: dict[str, Any] = {}

    def error_of(call: Any) -> tuple[str, int | None]:
        try:
            call()
        except Exception as e:
            code = e.args[0].code() if e.args and hasattr(e.args[0], "code") else None
            return type(e).__name__, code
        return "no error", None

    seen["unknown key"] = error_of(lambda: kafka.Producer({"bootstrap.servers": bootstrap, "no.such.key": 1}))
    p = kafka.Producer({"bootstrap.servers": bootstrap})
    reports: list[tuple[Any, ...]] = []
    for i in range(4):
        p.produce(topic, value=b"v%d" % i, key=None if i == 3 else b"k%d" % i, partition=i % 2,
                  headers=[("h", b"%d" % i)] if i % 2 else None,
                  on_delivery=lambda err, m: reports.append((err, m.topic() == topic, m.partition(), m.offset(),
                                                             m.key(), m.value())))
    seen["flush"] = p.flush(30)
    producer_md = p.list_topics(topic, timeout=10)
    seen["producer metadata"] = (sorted(producer_md.topics[topic].partitions), len(producer_md.brokers))
    seen["reports"] = sorted(reports, key=lambda r: (r[2], r[3]))
    seen["too large"] = error_of(lambda: p.produce(topic, value=b"x" * 2_000_000, partition=0))
    seen["no such partition"] = error_of(lambda: p.produce(topic, value=b"x", partition=99))
    seen["init without transactional.id"] = error_of(lambda: p.init_transactions(5))
    p.flush(10)
    c = kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                        "enable.auto.commit": False})
    try:
        seen["commit nothing"] = error_of(lambda: c.commit(asynchronous=False))
        seen["store with auto store"] = error_of(lambda: c.store_offsets(offsets=[kafka.TopicPartition(topic, 0, 1)]))
        c.assign([kafka.TopicPartition(topic, 0), kafka.TopicPartition(topic, 1)])
        # records only: a transient error event (librdkafka's, a slow OffsetFetch on a loaded machine) is no record
        msgs = [m for m in c.consume(num_messages=4, timeout=20) if m.error() is None]
        for _ in range(3):  # consume() waits for all 4 up to its timeout; a bounded second look if not
            if len(msgs) < 4:
                msgs += [m for m in c.consume(num_messages=4 - len(msgs), timeout=5) if m.error() is None]
        seen["records"] = sorted((m.topic() == topic, m.partition(), m.offset(), m.key(), m.value(), m.headers(),
                                  m.timestamp()[0], m.error(), len(m), m.latency(),
                                  isinstance(m, kafka.Message)) for m in msgs)
        last_of_0 = max((m for m in msgs if m.partition() == 0), key=lambda m: m.offset())
        seen["commit message"] = [(tp.partition, tp.offset) for tp in c.commit(message=last_of_0,
                                                                                 asynchronous=False)]
        seen["commit offsets"] = [(tp.partition, tp.offset) for tp in c.commit(
            offsets=[kafka.TopicPartition(topic, 1, 1)], asynchronous=False)]
        seen["committed"] = [(tp.partition, tp.offset) for tp in c.committed(
            [kafka.TopicPartition(topic, p) for p in range(3)], timeout=10)]
        seen["position"] = [(tp.partition, tp.offset) for tp in c.position(
            [kafka.TopicPartition(topic, p) for p in range(2)])]
        seen["watermarks"] = c.get_watermark_offsets(kafka.TopicPartition(topic, 1), timeout=10)
        first_ts = min(m.timestamp()[1] for m in msgs)
        seen["offsets for times"] = [(tp.partition, tp.offset) for tp in c.offsets_for_times(
            [kafka.TopicPartition(topic, 0, first_ts), kafka.TopicPartition(topic, 1, 2**41)], timeout=10)]
        md = c.list_topics(topic, timeout=10)
        seen["metadata"] = (sorted(md.topics[topic].partitions), len(md.brokers), md.topics[topic].error)
        c.incremental_unassign([kafka.TopicPartition(topic, 0)])
        seen["after incremental_unassign"] = [(tp.topic == topic, tp.partition) for tp in c.assignment()]
        c.incremental_assign([kafka.TopicPartition(topic, 0, 1)])
        again0 = c.poll(10)
        seen["after incremental_assign"] = (sorted(tp.partition for tp in c.assignment()),
                                            None if again0 is None else (again0.partition(), again0.offset(),
                                                                         again0.key(), again0.value(),
                                                                         again0.headers(), again0.timestamp()[0]))
        c.seek(kafka.TopicPartition(topic, 1, 0))
        again = c.poll(10)
        seen["after seek"] = None if again is None else (again.partition(), again.offset())
    finally:
        c.close()
    seen["after close"] = error_of(lambda: c.poll(0))
    strict = kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group + "-strict",
                             "auto.offset.reset": "error"})
    try:  # no committed offset and no reset allowed: an error event, not an exception
        strict.assign([kafka.TopicPartition(topic, 0)])
        event = strict.poll(10)
        seen["no reset allowed"] = None if event is None else (event.error().code(), event.partition())
    finally:
        strict.close()
    return seen


def test_confluent_kafka_and_the_compat_module_give_the_same_records_commits_and_errors(broker: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    theirs = _same_calls(confluent_kafka, broker.bootstrap_servers, _topic("theirs"), _topic("theirs-group"))
    ours = _same_calls(ck, broker.bootstrap_servers, _topic("ours"), _topic("ours-group"))
    if isinstance(broker, EmbeddedBroker):  # Tansu answers ListOffsets "latest" wrong (docs/consumer.md): librdkafka
        assert theirs.pop("watermarks") != ours.pop("watermarks") == (0, 2)  # asks it; cykafka reads Fetch's
    assert ours == theirs
    assert len(ours["records"]) == 4 and ours["reports"][0] == (None, True, 0, 0, b"k0", b"v0")
    assert ours["unknown key"] == ("KafkaException", ck.KafkaError._INVALID_ARG)
    assert ours["commit nothing"] == ("KafkaException", ck.KafkaError._NO_OFFSET)
    assert ours["no such partition"] == ("KafkaException", ck.KafkaError._UNKNOWN_PARTITION)
    assert ours["init without transactional.id"] == ("KafkaException", ck.KafkaError._NOT_CONFIGURED)
    assert ours["too large"] == ("KafkaException", ck.KafkaError.MSG_SIZE_TOO_LARGE)
    assert ours["store with auto store"] == ("KafkaException", ck.KafkaError._INVALID_ARG)
    assert ours["after close"] == ("RuntimeError", None)
    assert ours["no reset allowed"] == (ck.KafkaError._AUTO_OFFSET_RESET, 0)


def test_a_consumed_message_is_built_in_c_wrapping_the_record_and_its_setters_replace_fields() -> None:
    """Message (cykafka.core.ConfluentMessage): a consumed one reads the ConsumerRecord it wraps, is not tracked by
    the cyclic GC until a setter stores an arbitrary object; consume()'s builder records the offset after each
    partition's run; the constructor the producer's reports use is confluent's."""
    import gc

    from cykafka.core import ConsumerRecord, confluent_message, confluent_messages

    record = ConsumerRecord("t", 1, 41, 1_700_000_000_000, 1, b"k", b"vv", [("h", b"1")], leader_epoch=3)
    message = confluent_message(record)
    assert isinstance(message, ck.Message) and not gc.is_tracked(message)
    assert (message.topic(), message.partition(), message.offset(), message.key(), message.value(),
            message.headers(), message.timestamp(), message.error(), message.latency(), message.leader_epoch(),
            len(message)) == ("t", 1, 41, b"k", b"vv", [("h", b"1")], (ck.TIMESTAMP_LOG_APPEND_TIME,
                                                                       1_700_000_000_000), None, None, 3, 2)
    message.set_value({"parsed": message})
    message.set_headers(None)
    assert message.value()["parsed"] is message and message.headers() is None and gc.is_tracked(message)
    assert message.key() == b"k" and confluent_message(ConsumerRecord("t", 0, 0, 5)).headers() is None
    records = [ConsumerRecord("t", p, o, 0) for p, o in ((0, 5), (0, 6), (1, 2), (0, 9))]
    positions: dict[tuple[str, int], int] = {}
    assert [m.offset() for m in confluent_messages(records, 1, 3, positions)] == [6, 2]
    assert positions == {("t", 0): 7, ("t", 1): 3}
    assert confluent_messages(records, 3, 99, positions)[0].offset() == 9 and positions[("t", 0)] == 10
    report = ck.Message("t", None, None, b"k", b"v", None, ck.KafkaError(ck.KafkaError._MSG_TIMED_OUT))
    assert (report.partition(), report.offset(), report.timestamp(), report.error().code(), len(report)) == \
        (None, None, (ck.TIMESTAMP_NOT_AVAILABLE, 0), ck.KafkaError._MSG_TIMED_OUT, 1)


# -- rebalance callbacks, the offset store, async commits, pause ------------------------------------------------------

@pytest.mark.broker_only("tansu", reason="the compat layer's own bookkeeping; the group protocol is cykafka's")
def test_rebalance_callbacks_the_offset_store_and_on_commit(broker: Any) -> None:
    """on_assign gets (consumer, [TopicPartition]) and may set where each starts (assign() inside it); with
    enable.auto.offset.store=false only store_offsets()'d offsets are committed (commit() and close()); an
    asynchronous commit's outcome reaches on_commit(err, [TopicPartition]) from a later poll(); on_revoke runs on
    close(); pause() gives back the records already fetched after resume()."""
    topic = _topic("rebalance")
    _fill(broker, topic, [(None, b"r%d" % i) for i in range(6)])
    calls: list[tuple[str, list[tuple[int, int]]]] = []
    commits: list[tuple[Any, list[tuple[int, int]]]] = []

    def on_assign(consumer: Any, partitions: list[Any]) -> None:
        calls.append(("assign", [(p.partition, p.offset) for p in partitions]))
        for p in partitions:
            p.offset = 2 if p.partition == 0 else ck.OFFSET_END
        consumer.assign(partitions)

    def on_revoke(consumer: Any, partitions: list[Any]) -> None:  # uses the consumer, also inside close()
        calls.append(("revoke", [(p.partition, p.offset) for p in consumer.position(partitions)]))

    c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": topic, **FAST_GROUP,
                     "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                     "on_commit": lambda err, tps: commits.append((err, [(t.partition, t.offset) for t in tps]))})
    try:
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        first = _poll_until(c, lambda seen: len(seen) >= 1)
        assert calls == [("assign", [(p, ck.OFFSET_INVALID) for p in range(4)])]
        assert (first[0].partition(), first[0].offset(), first[0].value()) == (0, 2, b"r2")  # on_assign's offset
        tp0 = ck.TopicPartition(topic, 0)
        c.pause([tp0])
        assert c.poll(0.3) is None  # r3.. were fetched with r2; paused, they are not handed out
        c.resume([tp0])
        rest = _poll_until(c, lambda seen: len(seen) >= 3)
        assert [m.offset() for m in rest] == [3, 4, 5]  # and come again after resume
        assert c.position([tp0])[0].offset == 6
        with pytest.raises(ck.KafkaException) as nothing:  # nothing stored yet
            c.commit(asynchronous=False)
        assert nothing.value.args[0].code() == ck.KafkaError._NO_OFFSET
        c.store_offsets(message=rest[0])
        c.commit()  # asynchronous: on_commit hears it from a later poll
        deadline = time.monotonic() + 10
        while not commits and time.monotonic() < deadline:
            c.poll(0.2)
        assert commits == [(None, [(0, 4)])]
        c.store_offsets(offsets=[ck.TopicPartition(topic, 0, 5)])
    finally:
        c.close()
    assert calls[-1] == ("revoke", [(0, 6)] + [(p, ck.OFFSET_INVALID) for p in range(1, 4)])
    with ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": topic}) as check:
        assert check.committed([tp0], timeout=10)[0].offset == 5  # close() committed the stored offset, not 6


# -- docs/migrating-confluent-kafka.md ---------------------------------------------------------------------------------

@pytest.mark.broker_only("tansu", reason="the guide's snippets, run as pasted into one interpreter")
def test_the_confluent_migration_guide_snippets_run_and_print_what_it_says(
        broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Every python block of the guide, in order in one namespace, at the test broker (its topic and group names
    made unique to this run); each prints what the text after it says."""
    from test_docs_examples import ROOT, blocks

    found = blocks(ROOT / "docs" / "migrating-confluent-kafka.md", "python")
    assert len(found) == 3
    topic, group = _topic("orders"), _topic("billing")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    printed = []
    for code in found:
        code = code.replace("127.0.0.1:9092", broker.bootstrap_servers).replace('"orders"', repr(topic))
        exec(compile(code.replace('"billing"', repr(group)), "<guide>", "exec"), namespace)  # the guide's own code
        printed.append(capsys.readouterr().out.splitlines())
    assert printed == [["delivered " + topic + " 0 0 None", "b'id-1' b'paid' 0"], ["_INVALID_ARG True"],
                       ["1", "[b'paid', b'shipped']"]]
    with ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group}) as check:
        assert check.committed([ck.TopicPartition(topic, 0)], timeout=10)[0].offset == 1  # the guide's commit


# -- serialization: SerializingProducer, DeserializingConsumer, the built-in serdes -----------------------------------

def test_the_builtin_serdes_write_the_bytes_confluent_kafkas_write() -> None:
    theirs = pytest.importorskip("confluent_kafka.serialization")
    from cykafka.compat.confluent_kafka import serialization as ours

    for name, value in (("StringSerializer", "zoë"), ("IntegerSerializer", -7), ("DoubleSerializer", 2.5)):
        ctx = ours.SerializationContext("t", ours.MessageField.VALUE)
        data = getattr(ours, name)()(value, ctx)
        assert data == getattr(theirs, name)()(value, theirs.SerializationContext("t", theirs.MessageField.VALUE))
        assert getattr(ours, name.replace("Serializer", "Deserializer"))()(data, ctx) == value
    with pytest.raises(ours.SerializationError) as caught:
        ours.IntegerSerializer()(2**40)
    assert isinstance(caught.value, ck.KafkaException)


@pytest.mark.broker_only("tansu", reason="serializers run in the client; the broker sees bytes")
def test_serializing_producer_and_deserializing_consumer_round_trip(broker: Any) -> None:
    """SerializingProducer(key.serializer, value.serializer).produce(topic, key=, value=) and
    DeserializingConsumer.poll() giving the objects back; undecodable data is ValueDeserializationError with the
    Message; an end-of-partition event is ConsumeError (confluent-kafka's DeserializingConsumer raises it)."""
    from cykafka.compat.confluent_kafka.error import ConsumeError, ValueDeserializationError
    from cykafka.compat.confluent_kafka.serialization import (
        IntegerDeserializer,
        IntegerSerializer,
        StringDeserializer,
        StringSerializer,
    )

    topic = _topic("serdes")
    p = ck.SerializingProducer({"bootstrap.servers": broker.bootstrap_servers, "key.serializer": StringSerializer(),
                                "value.serializer": IntegerSerializer()})
    reports: list[tuple[Any, Any]] = []
    p.produce(topic, key="één", value=42, partition=0, on_delivery=lambda e, m: reports.append((m.key(), m.value())))
    p.produce(topic, key=None, value=None, partition=0)
    assert p.flush(20) == 0 and reports == [("één".encode(), (42).to_bytes(4, "big"))]
    _fill(broker, topic, [(None, b"xy")])
    c = ck.DeserializingConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": topic,
                                  "auto.offset.reset": "earliest", "enable.partition.eof": True,
                                  "key.deserializer": StringDeserializer(),
                                  "value.deserializer": IntegerDeserializer()})
    try:
        c.assign([ck.TopicPartition(topic, 0)])
        first = None
        deadline = time.monotonic() + 20
        while first is None and time.monotonic() < deadline:
            first = c.poll(0.5)
        assert first is not None and (first.key(), first.value()) == ("één", 42)
        second = c.poll(10)
        assert second is not None and (second.key(), second.value()) == (None, None)
        with pytest.raises(ValueDeserializationError) as bad:
            c.poll(10)
        assert bad.value.kafka_message.value() == b"xy" and bad.value.args[0].code() == \
            ck.KafkaError._VALUE_DESERIALIZATION
        with pytest.raises(ConsumeError) as eof:
            c.poll(10)
        assert eof.value.args[0].code() == ck.KafkaError._PARTITION_EOF and eof.value.code == eof.value.args[0]
    finally:
        c.close()


# -- AdminClient: configs, partitions, consumer groups ----------------------------------------------------------------

@pytest.mark.broker_only("kafka", reason="Tansu has no CreatePartitions")
def test_admin_configs_partitions_and_consumer_groups(broker: Any) -> None:
    """describe_configs / alter_configs {ConfigResource: Future}, create_partitions, and a group's life:
    list_consumer_groups (one Future of ListConsumerGroupsResult), describe_consumer_groups,
    list_consumer_group_offsets([ConsumerGroupTopicPartitions]), delete_consumer_groups."""
    from cykafka.compat.confluent_kafka.admin import (
        AdminClient,
        ConfigResource,
        ConsumerGroupTopicPartitions,
        NewPartitions,
        NewTopic,
        ResourceType,
    )

    topic, group = _topic("admin-cfg"), _topic("admin-group")
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    try:
        a.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
        resource = ConfigResource(ResourceType.TOPIC, topic)
        resource.set_config("retention.ms", "3600000")
        assert a.alter_configs([resource])[resource].result(20) is None
        deadline = time.monotonic() + 20
        configs = a.describe_configs([ConfigResource("topic", topic)])[resource].result(20)
        while configs["retention.ms"].value != "3600000" and time.monotonic() < deadline:  # applied a moment later
            configs = a.describe_configs([ConfigResource("topic", topic)])[resource].result(20)
        assert configs["retention.ms"].value == "3600000" and not configs["retention.ms"].is_default
        assert configs["cleanup.policy"].is_default and configs["cleanup.policy"].source.name == "DEFAULT_CONFIG"
        assert a.create_partitions([NewPartitions(topic, 3)])[topic].result(20) is None
        deadline = time.monotonic() + 20
        while len(a.list_topics(topic, 10).topics[topic].partitions) < 3 and time.monotonic() < deadline:
            pass
        assert len(a.list_topics(topic, 10).topics[topic].partitions) == 3
        with ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group}) as c:
            c.commit(offsets=[ck.TopicPartition(topic, 1, 7)], asynchronous=False)
        listed = a.list_consumer_groups(request_timeout=20).result(20)
        assert group in [g.group_id for g in listed.valid] and listed.errors == []
        described = a.describe_consumer_groups([group])[group].result(20)
        assert (described.group_id, described.state, described.members) == (group, ck.ConsumerGroupState.EMPTY, [])
        assert group in [g.group_id for g in a.list_consumer_groups(states={ck.ConsumerGroupState.EMPTY}).result(
            20).valid]
        offsets = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(20)
        assert [(tp.topic, tp.partition, tp.offset) for tp in offsets.topic_partitions] == [(topic, 1, 7)]
        assert a.delete_consumer_groups([group])[group].result(20) is None
        with pytest.raises(ck.KafkaException) as gone:
            a.delete_consumer_groups([group])[group].result(20)
        assert gone.value.args[0].code() == ck.KafkaError.GROUP_ID_NOT_FOUND
    finally:
        a.close()


@pytest.mark.broker_only("kafka", reason="Tansu shows aborted records to read_committed consumers")
def test_an_aborted_transaction_is_invisible_to_a_default_consumer(broker: Any) -> None:
    """abort_transaction() after produce(): the records are never seen by a consumer with librdkafka's default
    isolation.level (read_committed); the next committed transaction's are."""
    topic = _topic("abort")
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": topic})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, b"aborted", partition=0)
    p.flush(20)
    p.abort_transaction(20)
    p.begin_transaction()
    p.produce(topic, b"committed", partition=0)
    p.commit_transaction(20)
    with ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": topic,
                      "auto.offset.reset": "earliest", "enable.partition.eof": True}) as c:
        c.assign([ck.TopicPartition(topic, 0)])
        seen = _poll_until(c, lambda msgs: any(m.error() for m in msgs), 20)
    assert [m.value() for m in seen if not m.error()] == [b"committed"]
    assert seen[-1].error().code() == ck.KafkaError._PARTITION_EOF


def _group_calls(kafka: ModuleType, bootstrap: str, topic: str) -> dict[str, Any]:
    """subscribe() with rebalance callbacks, poll() until every record, close(): the callbacks' arguments, the
    records and what the group committed (enable.auto.commit's commit on close)."""
    seen: dict[str, Any] = {"callbacks": []}

    def note(kind: str) -> Any:
        return lambda consumer, partitions: seen["callbacks"].append(
            (kind, sorted((p.partition, p.offset) for p in partitions)))

    c = kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
                        "session.timeout.ms": 6000})
    c.subscribe([topic], on_assign=note("assign"), on_revoke=note("revoke"))
    msgs = _poll_until(c, lambda got: len(got) >= 3, 30)
    seen["records"] = sorted((m.partition(), m.offset(), m.value()) for m in msgs)
    seen["assignment"] = sorted(p.partition for p in c.assignment())
    c.close()
    with kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": topic}) as check:
        seen["committed"] = [(p.partition, p.offset) for p in check.committed(
            [kafka.TopicPartition(topic, p) for p in range(2)], timeout=10)]
    return seen


@pytest.mark.broker_only("kafka", reason="a group on Apache Kafka; Tansu holds each join session.timeout.ms / 2")
def test_confluent_kafka_and_the_compat_module_run_the_same_group(broker: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from cykafka.compat.confluent_kafka.admin import AdminClient, NewTopic

    results = []
    for kafka in (confluent_kafka, ck):
        topic = _topic("group-" + kafka.__name__.rsplit(".", 1)[-1])
        with AdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
        _fill(broker, topic, [(None, b"a"), (None, b"b")], partition=0)
        _fill(broker, topic, [(None, b"c")], partition=1)
        results.append(_group_calls(kafka, broker.bootstrap_servers, topic))
    theirs, ours = results
    assert ours == theirs
    assert ours["committed"] == [(0, 2), (1, 1)] and ours["callbacks"][0] == ("assign", [(0, -1001), (1, -1001)])


def _admin_calls(kafka: ModuleType, bootstrap: str, topic: str) -> dict[str, Any]:
    """AdminClient calls that succeed and fail at the broker: each future's outcome as (type, code)."""
    admin_module = importlib.import_module(kafka.__name__ + ".admin")

    def outcome(future: Any) -> tuple[str, int | None]:
        try:
            future.result(20)
        except Exception as e:
            return type(e).__name__, e.args[0].code()
        return "ok", None

    a = admin_module.AdminClient({"bootstrap.servers": bootstrap})
    seen = {"create": outcome(a.create_topics([admin_module.NewTopic(topic, 2, 1)])[topic]),
            "create again": outcome(a.create_topics([admin_module.NewTopic(topic, 2, 1)])[topic]),
            "delete unknown": outcome(a.delete_topics([topic + "-none"])[topic + "-none"])}
    deadline = time.monotonic() + 20
    while topic not in a.list_topics(timeout=10).topics and time.monotonic() < deadline:
        pass
    md = a.list_topics(topic, timeout=10)
    seen["listed"] = (sorted(md.topics[topic].partitions), len(md.brokers))
    seen["delete"] = outcome(a.delete_topics([topic])[topic])
    return seen


def test_confluent_kafka_and_the_compat_admin_client_give_the_same_outcomes(broker: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    theirs = _admin_calls(confluent_kafka, broker.bootstrap_servers, _topic("admin-theirs"))
    ours = _admin_calls(ck, broker.bootstrap_servers, _topic("admin-ours"))
    assert ours == theirs
    assert ours["create again"] == ("KafkaException", ck.KafkaError.TOPIC_ALREADY_EXISTS)


def test_one_table_maps_cykafkas_errors_onto_librdkafkas_codes_and_flags() -> None:
    from cykafka import errors
    from cykafka.compat.confluent_kafka.error import error_from
    from cykafka.protocol.error_codes import ErrorCode, error_for

    E = ck.KafkaError
    cases = [
        (errors.BufferExhaustedError("full"), E._QUEUE_FULL, (False, True, False)),
        (errors.KafkaTimeoutError("late"), E._TIMED_OUT, (False, True, False)),
        (errors.RecordTooLargeError("big"), E.MSG_SIZE_TOO_LARGE, (False, False, False)),
        (errors.NetworkError("lost"), E._TRANSPORT, (False, True, False)),
        (errors.ProducerFencedError("fenced"), E._FENCED, (True, False, False)),
        (errors.TransactionAbortableError("abort"), E._STATE, (False, False, True)),
        (errors.NoOffsetForPartitionError("none"), E._AUTO_OFFSET_RESET, (False, False, False)),
        (error_for(ErrorCode.NOT_LEADER_OR_FOLLOWER, "moved"), E.NOT_LEADER_FOR_PARTITION, (False, True, False)),
        (ValueError("not ours"), E._FAIL, (False, False, False)),
    ]
    for error, code, (fatal, retriable, abort) in cases:
        value = error_from(error)
        assert (value.code(), value.fatal(), value.retriable(), value.txn_requires_abort()) == (
            code, fatal, retriable, abort), error
    assert error_from(errors.KafkaTimeoutError("late"), timeout_code=E._MSG_TIMED_OUT).name() == "_MSG_TIMED_OUT"
    assert str(E(E._PARTITION_EOF, "end")) == 'KafkaError{code=_PARTITION_EOF,val=-191,str="end"}'
    assert E(3) == E.UNKNOWN_TOPIC_OR_PART == 3 and E(3).name() == "UNKNOWN_TOPIC_OR_PART"
