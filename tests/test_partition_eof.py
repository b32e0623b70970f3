"""enable.partition.eof (librdkafka's end-of-partition event) against the brokers: partition_eof_cb hears
(TopicPartition, end offset) from poll() once each time the consumer reaches a partition's end, after the records
before it (an empty partition at 0; again after new records arrive); never while records are still ahead."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from cykafka import Consumer, Producer, TopicPartition

pytestmark = pytest.mark.broker


def test_partition_eof_is_reported_once_per_end_reached(broker: Any) -> None:
    topic = f"eof-{uuid.uuid4().hex[:8]}"
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for i in range(3):
            producer.send(topic, b"v-%d" % i, partition=0)
        producer.flush(30)
    events: list[tuple[TopicPartition, int, int]] = []  # (partition, offset, records polled when that poll returned)
    polled: list[Any] = []
    pending: list[tuple[TopicPartition, int]] = []  # heard during the poll running now

    def poll(timeout_s: float) -> None:
        polled.extend(consumer.poll(timeout_s))
        events.extend((tp, offset, len(polled)) for tp, offset in pending)  # the poll's own records count
        pending.clear()

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "smallest",
                         "enable.partition.eof": True,
                         "partition_eof_cb": lambda tp, offset: pending.append((tp, offset))})
    try:
        p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
        consumer.assign([p0, p1])
        deadline = time.monotonic() + 20
        while len({tp for tp, _, _ in events}) < 2 and time.monotonic() < deadline:
            poll(0.3)
        assert [r.value for r in polled] == [b"v-0", b"v-1", b"v-2"]
        assert sorted((tp.partition, offset) for tp, offset, _ in events) == [(0, 3), (1, 0)]
        assert next(seen for tp, _, seen in events if tp == p0) == 3  # heard with the last records, never before
        for _ in range(3):
            poll(0.2)
        assert len(events) == 2  # once per end reached
        with Producer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
            producer.send(topic, b"v-3", partition=0)
            producer.flush(30)
        deadline = time.monotonic() + 20
        while len(events) < 3 and time.monotonic() < deadline:
            poll(0.3)
        assert [r.value for r in polled][-1] == b"v-3"
        assert events[2][:2] == (p0, 4)
    finally:
        consumer.close()


def test_the_async_consumer_reports_the_end_too(broker: Any) -> None:
    import asyncio

    from cykafka.aio import AsyncConsumer

    topic = f"eof-async-{uuid.uuid4().hex[:8]}"
    with Producer({"bootstrap.servers": broker.bootstrap_servers}) as producer:
        for i in range(2):
            producer.send(topic, b"v-%d" % i, partition=0)
        producer.flush(30)
    events: list[tuple[TopicPartition, int]] = []

    async def run() -> list[Any]:
        consumer = AsyncConsumer({"bootstrap.servers": broker.bootstrap_servers, "auto.offset.reset": "earliest",
                                  "partition_eof_cb": lambda tp, offset: events.append((tp, offset))})
        await consumer.start()
        try:
            await consumer.assign([TopicPartition(topic, 0)])
            records: list[Any] = []
            deadline = time.monotonic() + 20
            while not events and time.monotonic() < deadline:
                records.extend(await consumer.poll(0.3))
            return records
        finally:
            await consumer.stop()

    records = asyncio.run(run())
    assert [r.value for r in records] == [b"v-0", b"v-1"]
    assert events == [(TopicPartition(topic, 0), 2)]
