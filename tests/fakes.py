"""The one way tests build a Producer on the in-memory fake cluster (Kafka's MockClient and MockTime, in our shape).

Under a ManualClock the Sender does not start: the test runs `producer.sender.run_once()` itself, and `topic`'s
metadata and connections are set up by `setup_loops` of them (the clock advancing `step_ms` before each). Under the
system clock (no clock given) the sender thread runs, and `topic`'s metadata is awaited through partitions_for.
Each test module passes its own settings on top of bootstrap.servers.
"""

from __future__ import annotations

from typing import Any

from cykafka.adapters.clock import ManualClock, SystemClock
from cykafka.adapters.fake_cluster import FakeCluster
from cykafka.ports import Clock, Ports
from cykafka.producer import Producer


def fake_cluster(clock: Clock, topic: str | None = None, partitions: int = 4, brokers: int = 3,
                 wire: dict[int, int] | None = None, **options: Any) -> FakeCluster:
    """A fake cluster of `brokers` with `topic` created; wire: None for dict bodies, else wire mode at these API
    versions ({}: our highest)."""
    cluster = FakeCluster(clock, num_brokers=brokers, wire=wire is not None, versions=wire, **options)
    if topic is not None:
        cluster.create_topic(topic, partitions)
    return cluster


def fake_producer(cluster: FakeCluster, clock: Clock | None = None, *, topic: str | None = None,
                  setup_loops: int = 4, step_ms: int = 0, **config: Any) -> Producer:
    by_hand = clock is not None and not isinstance(clock, SystemClock)
    producer = Producer({"bootstrap.servers": "fake:9092", **config},
                        ports=Ports(transport=cluster, clock=clock, start_sender=not by_hand))
    if topic is None:
        return producer
    if not by_hand:
        producer.partitions_for(topic)  # the sender thread fetches it
        return producer
    assert isinstance(clock, ManualClock)
    producer._metadata.add_topic(topic, clock.monotonic_ms())
    for _ in range(setup_loops):  # connect, metadata (and a producer id when idempotent)
        clock.advance(step_ms)
        producer.sender.run_once()
    return producer
