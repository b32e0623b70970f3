"""cykafka.compat.aiokafka (issue 31): aiokafka's documented examples (its examples/ simple_produce, simple_consumer,
batch_produce, transactional_produce; its docs' serialize-and-compress, group consumer, manual commit and
transactional consume-process-produce, a rebalance listener with async methods; the calls
reproduced here, only the import and the address changed, plus a short session_timeout_ms for the group ones: Tansu
holds a join for half of it) against the test brokers, printing what aiokafka's would; and a differential test:
the same calls through aiokafka itself and through the compat module on the same broker give the same records,
committed offsets and error types."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import json
import pickle
import random
import re
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

import cykafka
import cykafka.core
from cykafka.compat import aiokafka as compat
from cykafka.compat.aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from cykafka.compat.aiokafka.errors import IllegalOperation, KafkaConfigurationError

GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _run(coro: Any, timeout_s: float = 60) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(timeout_s):
            return await coro

    return asyncio.run(bounded())


def _is_tansu(broker: Any) -> bool:
    return broker.__class__.__name__ == "EmbeddedBroker"


def test_simple_produce_and_consume(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """examples/simple_produce.py (send_and_wait, print(res)) and examples/simple_consumer.py (a consumer of a topic
    without group_id: every partition, `async for msg in consumer: print(msg.value)`)."""
    topic = _topic("test-topic")

    async def send_one() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        try:
            res = await producer.send_and_wait(topic, b"Super message")
            print(res)
        finally:
            await producer.stop()

    async def consume() -> None:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest")
        await consumer.start()
        try:
            async for msg in consumer:
                print(msg.value)
                break  # the example runs forever; one record is what it would print first
        finally:
            await consumer.stop()

    _run(send_one())
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"RecordMetadata(topic='{topic}', partition=") and "offset=0," in line
    assert f"topic_partition=TopicPartition(topic='{topic}', partition=" in line and "timestamp_type=0" in line
    _run(consume())
    assert capsys.readouterr().out == "b'Super message'\n"


def test_batch_produce(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """examples/batch_produce.py: create_batch, append until it answers None, send_batch to a random partition,
    print "N messages sent to partition P"; all 1000 records arrive."""
    topic = _topic("my_topic")

    async def send_many(num: int) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        batch = producer.create_batch()
        i = 0
        while i < num:
            msg = ("Test message %d" % i).encode("utf-8")  # noqa: UP031  (the example's line)
            metadata = batch.append(key=None, value=msg, timestamp=None)
            if metadata is None:
                partitions = await producer.partitions_for(topic)
                partition = random.choice(tuple(partitions))
                await producer.send_batch(batch, topic, partition=partition)
                print("%d messages sent to partition %d" % (batch.record_count(), partition))  # noqa: UP031
                batch = producer.create_batch()
                continue
            i += 1
        partitions = await producer.partitions_for(topic)
        partition = random.choice(tuple(partitions))
        await producer.send_batch(batch, topic, partition=partition)
        print("%d messages sent to partition %d" % (batch.record_count(), partition))  # noqa: UP031
        await producer.stop()

    _run(send_many(1000))
    lines = capsys.readouterr().out.splitlines()
    counts = [int(line.split()[0]) for line in lines]
    assert len(lines) > 1 and sum(counts) == 1000 and all(" messages sent to partition " in x for x in lines)

    async def total() -> int:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
        try:
            tps = [TopicPartition(topic, p) for p in range(4)]
            return sum((await consumer.end_offsets(tps)).values())
        finally:
            await consumer.stop()

    assert _run(total()) == 1000


def test_serialize_and_compress(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/examples/serialize_and_compress.rst: a JSON value_serializer with gzip, a json.loads value_deserializer;
    prints the type and value of each record."""
    topic = _topic("foobar")

    def serializer(value: Any) -> bytes:
        return json.dumps(value).encode()

    def deserializer(serialized: bytes) -> Any:
        return json.loads(serialized)

    async def produce() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, value_serializer=serializer,
                                    compression_type="gzip")
        await producer.start()
        await producer.send(topic, {"a": 123.4, "b": "some string"}, partition=0)  # one partition: in order
        await producer.send(topic, [1, 2, 3, 4], partition=0)
        await producer.stop()

    async def consume() -> None:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers,
                                    value_deserializer=deserializer, auto_offset_reset="earliest")
        await consumer.start()
        data = await consumer.getmany(timeout_ms=10000)
        for _tp, messages in data.items():
            for message in messages:
                print(type(message.value), message.value)
        await consumer.stop()

    _run(produce())
    _run(consume())
    assert capsys.readouterr().out.splitlines() == ["<class 'dict'> {'a': 123.4, 'b': 'some string'}",
                                                    "<class 'list'> [1, 2, 3, 4]"]


@pytest.mark.broker_only("kafka", reason="two members join one group: Tansu holds each join session_timeout_ms / 2")
def test_group_consumer(broker: Any) -> None:
    """docs/examples/group_consumer.rst: two members of TEST_GROUP split a 2-partition topic (each prints its
    partition's two messages), a member of OTHER_GROUP reads all four."""
    topic, test_group, other_group = _topic("some-topic"), _topic("TEST_GROUP"), _topic("OTHER_GROUP")
    admin = cykafka.Admin({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([cykafka.NewTopic(topic, 2)])[topic].result()
    admin.close()

    async def run() -> list[list[tuple[int, bytes]]]:
        consumers = [AIOKafkaConsumer(topic, group_id=group, bootstrap_servers=broker.bootstrap_servers,
                                      auto_offset_reset="earliest", **GROUP)
                     for group in (test_group, test_group, other_group)]
        for consumer in consumers:
            await consumer.start()

        async def settle(consumer: AIOKafkaConsumer, partitions: int) -> None:
            while len(consumer.assignment()) != partitions:  # the group formed (bounded by _run's timeout)
                await consumer.getmany(timeout_ms=200)

        await asyncio.gather(settle(consumers[0], 1), settle(consumers[1], 1), settle(consumers[2], 2))
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        await producer.start()
        for partition, value in ((0, b"message #1"), (0, b"message #2"), (1, b"message #3"), (1, b"message #4")):
            await producer.send(topic, value, partition=partition)
        await producer.stop()

        async def consume(consumer: AIOKafkaConsumer, msg_cnt: int) -> list[tuple[int, bytes]]:
            got = []
            for _ in range(msg_cnt):
                msg = await consumer.getone()
                got.append((msg.partition, msg.value))
            return got

        try:
            return list(await asyncio.gather(consume(consumers[0], 2), consume(consumers[1], 2),
                                             consume(consumers[2], 4)))
        finally:
            for consumer in consumers:
                await consumer.stop()

    first, second, other = _run(run())
    halves = sorted([first, second])
    assert halves == [[(0, b"message #1"), (0, b"message #2")], [(1, b"message #3"), (1, b"message #4")]]
    assert sorted(other) == halves[0] + halves[1]


def test_manual_commit(broker: Any) -> None:
    """docs/examples/manual_commit.rst: a group member with enable_auto_commit=False reads 10 records with getone,
    then commit(): the group's committed offsets cover exactly those 10."""
    topic, group = _topic("foobar"), _topic("some-consumer-group")

    async def produce() -> None:
        async with AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            for i in range(12):
                await producer.send(topic, b"m%d" % i, partition=i % 2)
            await producer.flush()

    async def consume() -> dict[TopicPartition, int | None]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                                    group_id=group, enable_auto_commit=False, **GROUP)
        await consumer.start()
        for _ in range(10):
            await consumer.getone()
        await consumer.commit()
        committed = {tp: await consumer.committed(tp) for tp in (TopicPartition(topic, 0), TopicPartition(topic, 1))}
        await consumer.stop()
        return committed

    _run(produce())
    committed = _run(consume())
    assert sum(offset or 0 for offset in committed.values()) == 10


def test_rebalance_listener(broker: Any) -> None:
    """subscribe(listener=) with aiokafka's ConsumerRebalanceListener, its methods `async def` (as aiokafka's docs'
    local-state consumer has them): called with the assignment, and the revocation on stop()."""
    topic, group = _topic("rebalance"), _topic("group")
    calls: list[tuple[str, set[TopicPartition]]] = []

    class Listener(compat.ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            calls.append(("revoked", set(revoked)))

        async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            await asyncio.sleep(0)  # a coroutine, on the event loop
            calls.append(("assigned", set(assigned)))

    async def run() -> None:
        async with AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
            await producer.send_and_wait(topic, b"x", partition=1)
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group,
                                    auto_offset_reset="earliest", **GROUP)
        consumer.subscribe(topics=[topic], listener=Listener())
        await consumer.start()
        msg = await consumer.getone()
        assert msg.value == b"x" and consumer.highwater(TopicPartition(topic, 1)) == 1
        await consumer.stop()

    _run(run())
    everything = {TopicPartition(topic, p) for p in range(4)}
    assert calls == [("assigned", everything), ("revoked", everything)]


def test_transactional_produce(broker: Any) -> None:
    """examples/transactional_produce.py: start() initialises the transactions; `async with producer.transaction()`
    raising aborts (the ValueError goes through); a read_committed reader sees nothing of it (on Kafka: Tansu shows
    aborted records, docs/compatibility.md)."""
    topic = _topic("test-topic")
    result: list[Any] = []

    async def send_one() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=_topic("txn"))
        await producer.start()
        with pytest.raises(IllegalOperation):  # not in a transaction (aiokafka raises the same)
            await producer.send(topic, b"outside", partition=0)
        try:
            async with producer.transaction():
                res = await producer.send_and_wait(topic, b"Super transactional message", partition=0)
                result.append(res)
                raise ValueError()
        finally:
            await producer.stop()

    with pytest.raises(ValueError):
        _run(send_one())
    assert result[0].offset == 0

    async def read() -> tuple[list[Any], int | None]:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                                    isolation_level="read_committed")
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        try:
            got = await consumer.getmany(timeout_ms=1500)
            return [r.value for records in got.values() for r in records], consumer.last_stable_offset(tp)
        finally:
            await consumer.stop()

    values, stable = _run(read())
    if not _is_tansu(broker):
        assert values == [] and stable == 2  # the aborted record and its marker


def test_transactional_consume_process_produce(broker: Any) -> None:
    """docs/examples/transaction_example.rst: read IN_TOPIC in a read_committed group, count by key and minute,
    produce to OUT_TOPIC and commit the consumed offsets through the producer, in one transaction."""
    in_topic, out_topic, group = _topic("in_topic"), _topic("out_topic"), _topic("processing-group")

    def process_batch(msgs: list[Any]) -> list[tuple[Any, bytes, int]]:
        buckets_by_key: dict[Any, Counter[int]] = defaultdict(Counter)
        for msg in msgs:
            timestamp = (msg.timestamp // 60_000) * 60
            buckets_by_key[msg.key][timestamp] += 1
        res = []
        for key, counts in buckets_by_key.items():
            for timestamp, count in counts.items():
                res.append((key, str(count).encode(), timestamp))
        return res

    async def transactional_process() -> dict[TopicPartition, int | None]:
        async with AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers) as feeder:
            for i in range(6):
                await feeder.send(in_topic, b"x", key=b"k%d" % (i % 2), partition=0, timestamp_ms=120_000)
            await feeder.flush()
        consumer = AIOKafkaConsumer(in_topic, bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                                    group_id=group, isolation_level="read_committed", auto_offset_reset="earliest",
                                    **GROUP)
        await consumer.start()
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, transactional_id=_topic("my-txn-id"))
        await producer.start()
        try:
            msg_batch: dict[TopicPartition, list[Any]] = {}
            while sum(map(len, msg_batch.values())) < 6:  # the example's `while True`, until the 6 records came
                for tp, msgs in (await consumer.getmany(timeout_ms=10_000)).items():
                    msg_batch.setdefault(tp, []).extend(msgs)
            async with producer.transaction():
                commit_offsets = {}
                in_msgs = []
                for tp, msgs in msg_batch.items():
                    in_msgs.extend(msgs)
                    commit_offsets[tp] = msgs[-1].offset + 1
                out_msgs = process_batch(in_msgs)
                for key, value, timestamp in out_msgs:
                    await producer.send(out_topic, value=value, key=key, timestamp_ms=int(timestamp * 1000))
                await producer.send_offsets_to_transaction(commit_offsets, group)
            return {tp: await consumer.committed(tp) for tp in msg_batch}
        finally:
            await consumer.stop()
            await producer.stop()

    committed = _run(transactional_process())
    assert committed == {TopicPartition(in_topic, 0): 6}

    async def read_out() -> list[tuple[bytes, bytes, int]]:
        consumer = AIOKafkaConsumer(out_topic, bootstrap_servers=broker.bootstrap_servers,
                                    auto_offset_reset="earliest", isolation_level="read_committed")
        await consumer.start()
        try:
            got: list[tuple[bytes, bytes, int]] = []
            while len(got) < 2:
                for records in (await consumer.getmany(timeout_ms=5000)).values():
                    got += [(r.key, r.value, r.timestamp) for r in records]
            return sorted(got)
        finally:
            await consumer.stop()

    assert _run(read_out()) == [(b"k0", b"3", 120_000), (b"k1", b"3", 120_000)]


@pytest.mark.broker_only("tansu", reason="stop() ending a waiting iteration is the client's own; one broker shows it")
def test_stop_ends_a_waiting_async_for(broker: Any) -> None:
    """As aiokafka's: `async for msg in consumer` waiting for a record ends (StopAsyncIteration) when another task
    calls stop(); a getone after stop raises ConsumerStoppedError."""
    topic = _topic("quiet")

    async def run() -> list[Any]:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest")
        consumer.assign([TopicPartition(topic, 0)])
        await consumer.start()
        seen: list[Any] = []

        async def iterate() -> None:
            async for msg in consumer:
                seen.append(msg)

        task = asyncio.create_task(iterate())
        with pytest.raises(TimeoutError):  # it waits: the topic is empty
            await asyncio.wait_for(asyncio.shield(task), 0.3)
        await consumer.stop()
        await asyncio.wait_for(task, 10)  # ended, not cancelled
        with pytest.raises(compat.ConsumerStoppedError):
            await consumer.getone()
        return seen

    assert _run(run(), 30) == []


def test_aiokafka_defaults_and_refusals(broker: Any) -> None:
    """aiokafka 0.14's defaults (acks=1 without idempotence, linger_ms=0, request_timeout_ms=40000); an unknown
    kwarg is a TypeError as aiokafka's (and a KafkaConfigurationError, a cykafka KafkaError); commit without a group
    is IllegalOperation; getmany(*partitions) is refused naming it."""

    async def check() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        config = producer.producer.producer.config
        assert (config.acks, config.enable_idempotence, config.linger_ms, config.request_timeout_ms) == \
            (1, False, 0, 40000)
        await producer.stop()
        with pytest.raises(TypeError, match="lingr_ms") as caught:
            AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, lingr_ms=5)
        assert isinstance(caught.value, KafkaConfigurationError) and isinstance(caught.value, cykafka.KafkaError)
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
        with pytest.raises(IllegalOperation, match="group_id"):
            await consumer.commit()
        with pytest.raises(ValueError, match="getmany"):
            await consumer.getmany(TopicPartition("t", 0))
        await consumer.stop()

    _run(check())


# -- differential: aiokafka itself against the compat module, same calls, same broker ---------------------------------


async def _calls(module: Any, broker: Any, topic: str, group: str) -> dict[str, Any]:
    """One sequence of aiokafka calls through `module` (aiokafka, or the compat one)."""
    out: dict[str, Any] = {}
    producer = module.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    await producer.start()
    md = await producer.send_and_wait(topic, b"v0", key=b"k0", partition=0)
    out["metadata"] = (md.partition, md.offset, md.topic_partition.partition)
    future = await producer.send(topic, b"v1", headers=[("h", b"1")], partition=0)
    await producer.send(topic, None, key=b"tombstone", partition=0)
    await producer.flush()
    out["second"] = (await future).offset
    await producer.stop()
    out["closed_send"] = await _error(producer.send(topic, b"x", partition=0))
    try:
        module.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, lingr_ms=5)
        out["unknown_kwarg"] = "no error"
    except Exception as e:
        out["unknown_kwarg"] = "TypeError" if isinstance(e, TypeError) else type(e).__name__
    tp = module.TopicPartition(topic, 0)
    consumer = module.AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group,
                                       enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    consumer.assign([tp])
    records: list[Any] = []
    while len(records) < 3:
        for got in (await consumer.getmany(timeout_ms=1000)).values():
            records += got
    out["records"] = [(r.partition, r.offset, r.key, r.value, list(map(tuple, r.headers)), r.serialized_key_size,
                       r.serialized_value_size) for r in records]
    out["highwater"] = consumer.highwater(tp)
    await consumer.commit({tp: 2})
    out["committed"] = await consumer.committed(tp)
    out["position"] = await consumer.position(tp)
    out["seek_to_committed"] = list((await consumer.seek_to_committed(tp)).values())  # values: topics differ
    out["position_after"] = await consumer.position(tp)
    out["offsets"] = (list((await consumer.beginning_offsets([tp])).values()),
                      list((await consumer.end_offsets([tp])).values()))
    out["for_times"] = [v.offset for v in (await consumer.offsets_for_times({tp: 0})).values()]
    await consumer.stop()
    no_group = module.AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    await no_group.start()
    out["commit_without_group"] = await _error(no_group.commit({tp: 1}))
    with contextlib.suppress(asyncio.CancelledError):  # aiokafka 0.14's stop of a group-less consumer may raise it
        await no_group.stop()
    return out


async def _error(awaitable: Any) -> str:
    try:
        await awaitable
    except Exception as e:
        return type(e).__name__
    return "no error"


def test_aiokafka_and_the_compat_module_agree(broker: Any) -> None:
    """Record metadata, records (partition, offset, key, value, headers, sizes), the high watermark, the committed
    offset, the position, and the error types of three bad calls, aiokafka's against ours."""
    aiokafka = pytest.importorskip("aiokafka")
    topic = _topic("diff")
    theirs = _run(_calls(aiokafka, broker, topic + "-peer", _topic("g")))
    ours = _run(_calls(compat, broker, topic + "-ours", _topic("g")))
    if _is_tansu(broker):  # Tansu's ListOffsets "latest" is the last batch's first offset + 1 (docs/consumer.md):
        theirs.pop("offsets")  # aiokafka believes it (2 when v1 and the tombstone shared a batch); cykafka reads
        assert ours.pop("offsets") == ([0], [3])  # the Fetch high watermark
    assert ours == theirs, (ours, theirs)
    assert ours["records"][0][:4] == (0, 0, b"k0", b"v0") and ours["committed"] == 2 and ours["position"] == 3
    assert ours["seek_to_committed"] == [2] and ours["position_after"] == 2
    assert ours.get("offsets", ([0], [3])) == ([0], [3]) and ours["for_times"] == [0]
    assert ours["closed_send"] == "ProducerClosed" and ours["unknown_kwarg"] == "TypeError"
    assert ours["commit_without_group"] == "IllegalOperation"


# -- records: the C-built ConsumerRecord against aiokafka's dataclass -------------------------------------------------

_RECORD_ARGS = ("t", 1, 7, 1_700_000_000_123, 0, b"k", b"value", None, 1, 5, (("h", b"1"), ("e", b"")))


def test_aiokafka_structs_names_import_from_the_structs_module() -> None:
    """`from aiokafka.structs import TopicPartition` (a common idiom) with only the import changed: the module's names
    that cykafka.compat.aiokafka offers, the same objects."""
    from cykafka.compat.aiokafka import structs

    theirs = pytest.importorskip("aiokafka.structs")
    for name in structs.__all__:
        assert getattr(structs, name) is getattr(compat, name) and hasattr(theirs, name)
    assert set(structs.__all__) == {"ConsumerRecord", "OffsetAndMetadata", "OffsetAndTimestamp", "RecordMetadata",
                                    "TopicPartition"}
    assert structs.TopicPartition("t", 0) == theirs.TopicPartition("t", 0)


def test_the_record_type_behaves_as_aiokafkas_dataclass() -> None:
    """cykafka.compat.aiokafka.ConsumerRecord (built in C) beside aiokafka.structs.ConsumerRecord made of the same
    fields: every attribute, the repr, equality (field by field, with its own class only), unhashable, mutable,
    subscriptable in annotations; a record the C path builds is not tracked by the cyclic GC until a setter stores
    an arbitrary object in it."""
    structs = pytest.importorskip("aiokafka.structs")
    theirs, ours = structs.ConsumerRecord(*_RECORD_ARGS), compat.ConsumerRecord(*_RECORD_ARGS)
    assert [getattr(ours, f.name) for f in dataclasses.fields(theirs)] == list(dataclasses.astuple(theirs))
    assert repr(ours) == repr(theirs)
    assert ours == compat.ConsumerRecord(*_RECORD_ARGS) and ours != compat.ConsumerRecord(
        *_RECORD_ARGS[:2], 8, *_RECORD_ARGS[3:])
    assert (ours == theirs) is False and (theirs == ours) is False  # as two dataclasses of different classes
    for record in (ours, theirs):
        with pytest.raises(TypeError, match="unhashable"):
            hash(record)
    assert compat.ConsumerRecord[bytes, bytes] is not None and pickle.loads(pickle.dumps(ours)) == ours
    built = cykafka.core.aiokafka_record(cykafka.core.ConsumerRecord("t", 1, 7, 1_700_000_000_123, 0, b"k",
                                                                     b"value", [("h", b"1"), ("e", b"")]))
    assert isinstance(built, compat.ConsumerRecord) and built == ours and not gc.is_tracked(built)
    built.value = {"parsed": built}  # aiokafka's is a mutable dataclass; a cycle through it stays collectable
    assert built.value["parsed"] is built and gc.is_tracked(built)


def _fields(record: Any, topic: str) -> tuple[Any, ...]:
    """Every attribute aiokafka's ConsumerRecord has, the topic and the repr made run-independent."""
    return (record.topic == topic, record.partition, record.offset, record.timestamp, record.timestamp_type,
            record.key, record.value, record.checksum, record.serialized_key_size, record.serialized_value_size,
            record.headers, type(record.headers).__name__, repr(record).replace(repr(topic), "'T'"))


async def _records_through(module: Any, broker: Any, topic: str) -> dict[str, Any]:
    """The same log read through getmany(max_records=2), and through getone() and `async for` with deserializers."""
    sent = [(0, b"k0", b"v0", None), (0, None, b"v1", [("h", b"1"), ("e", b"")]), (0, b"k2", None, None),
            (1, b"k3", b"\xff" * 300, [("a", b"x"), ("a", b"y")]), (1, b"", b"", None)]
    producer = module.AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    await producer.start()
    for i, (partition, key, value, headers) in enumerate(sent):
        await producer.send_and_wait(topic, value, key=key, partition=partition, headers=headers,
                                     timestamp_ms=1_700_000_000_000 + i)
    await producer.stop()
    tps = [module.TopicPartition(topic, p) for p in (0, 1)]
    out: dict[str, Any] = {}
    consumer = module.AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest")
    await consumer.start()
    consumer.assign(tps)
    records: list[Any] = []
    sizes: list[int] = []
    while len(records) < len(sent):
        got = await consumer.getmany(timeout_ms=1000, max_records=2)
        assert all(isinstance(tp, module.TopicPartition) and all(r.partition == tp.partition for r in rs)
                   for tp, rs in got.items())
        sizes.append(sum(map(len, got.values())))
        records += [r for rs in got.values() for r in rs]
    await consumer.stop()
    out["getmany"] = sorted(_fields(r, topic) for r in records)
    out["at most max_records"] = max(sizes) <= 2

    def text(data: bytes | None) -> str | None:
        return None if data is None else data.decode("latin-1")

    consumer = module.AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset="earliest",
                                       key_deserializer=text, value_deserializer=text)
    await consumer.start()
    consumer.assign(tps)
    records = [await consumer.getone() for _ in range(2)]
    async for record in consumer:
        records.append(record)
        if len(records) == len(sent):
            break
    await consumer.stop()
    out["getone and async for, deserialized"] = sorted(_fields(r, topic) for r in records)
    return out


def test_aiokafka_and_the_compat_module_hand_out_the_same_records(broker: Any) -> None:
    """Keys, values, nulls, empty ones, headers (repeated keys, empty values), explicit timestamps: every attribute
    and the repr of each record equal aiokafka's for the same log, through getmany(max_records=), getone() and the
    async iterator, with and without deserializers."""
    aiokafka = pytest.importorskip("aiokafka")
    topic = _topic("records")
    theirs = _run(_records_through(aiokafka, broker, topic + "-peer"))
    ours = _run(_records_through(compat, broker, topic + "-ours"))
    assert ours == theirs
    assert ours["at most max_records"] is True and len(ours["getmany"]) == 5
    assert ours["getmany"][0][:10] == (True, 0, 0, 1_700_000_000_000, 0, b"k0", b"v0", None, 2, 2)
    assert ours["getone and async for, deserialized"][1][5:10] == (None, "v1", None, -1, 2)


# -- docs/migrating-aiokafka.md: every snippet runs and prints what the guide says ----------------------------------

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "migrating-aiokafka.md"


def test_the_migration_guide_snippets_run(broker: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Each ```python block of docs/migrating-aiokafka.md, the address made the test broker's (topics made unique
    per run), prints what the text after it says."""
    blocks = re.findall(r"^```python\n(.*?)^```$", GUIDE.read_text(), flags=re.S | re.M)
    suffix = uuid.uuid4().hex[:6]
    expected = [["migrating-aio 0 0", "migrating-aio 0 0 b'k' b'Super message'"],
                ["IllegalOperation IllegalOperation: Requires group_id", "TypeError: True"],
                ["[0, 1, 2]", "[b'v0', b'v1', b'v2']"]]
    assert len(blocks) == len(expected)
    for code, lines in zip(blocks, expected, strict=True):
        code = code.replace("127.0.0.1:9092", broker.bootstrap_servers).replace("migrating-aio", f"mai{suffix}")
        exec(compile(code, str(GUIDE), "exec"), {"__name__": "__main__"})  # the guide's own example
        assert capsys.readouterr().out.replace(f"mai{suffix}", "migrating-aio").splitlines() == lines
    text = GUIDE.read_text()
    for lines in expected:
        assert f"prints `{lines[0]}` then `{lines[1]}`" in text
