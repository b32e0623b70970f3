"""client.rack (KIP-392) on a 3-node Apache Kafka cluster whose brokers sit in racks r1, r2, r3 with the rack-aware
replica selector: the Consumer sends its rack in every Fetch, the leader answers with the preferred read replica (the
follower in the consumer's rack), and the consumer fetches from that follower (Java's behaviour), counted per node at
the transport; the records read are the ones written."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

import pytest

from cykafka import Admin, Consumer, NewTopic, Producer, TopicPartition
from cykafka.protocol.apis import FETCH

pytestmark = pytest.mark.slow

RECORDS = 200


def test_the_consumer_fetches_from_the_follower_in_its_rack(apache_kafka: Any) -> None:
    cluster = apache_kafka(3, node_config={1: {"broker.rack": "r1"}, 2: {"broker.rack": "r2"},
                                           3: {"broker.rack": "r3"}},
                           broker_config={"replica.selector.class":
                                          "org.apache.kafka.common.replica.RackAwareReplicaSelector"}).start()
    try:
        topic = f"rack-{uuid.uuid4().hex[:8]}"
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(topic, 1, 3)])[topic].result()
            deadline = time.monotonic() + 30
            while True:
                partition = admin.describe_topics([topic])[topic].result().partitions[0]
                if (partition.leader >= 0 and len(partition.isr) == 3) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        leader = partition.leader
        follower = next(n for n in (1, 2, 3) if n != leader)
        with Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"}) as producer:
            for i in range(RECORDS):
                producer.send(topic, b"v-%d" % i, partition=0)
            producer.flush(30)

        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "client.rack": f"r{follower}",
                             "auto.offset.reset": "earliest"})
        fetches: Counter[int] = Counter()
        racks: set[str] = set()
        transport = consumer._fetcher.transport
        send = transport.send

        def counting_send(node_id: int, request: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(request, "api_key", None) == FETCH.key:
                fetches[node_id] += 1
                racks.add(request.body["rack_id"])
            return send(node_id, request, *args, **kwargs)

        transport.send = counting_send
        try:
            consumer.assign([TopicPartition(topic, 0)])
            values: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(values) < RECORDS and time.monotonic() < deadline:
                values.extend(r.value for r in consumer.poll(0.5))
            follower_fetches_before = fetches[follower]
            for _ in range(3):  # fetching goes on at the follower, not back at the leader
                consumer.poll(0.3)
        finally:
            consumer.close()
        assert values == [b"v-%d" % i for i in range(RECORDS)]
        assert racks == {f"r{follower}"}
        assert fetches[leader] >= 1  # the first Fetch asks the leader, which names the follower
        assert follower_fetches_before >= 1 and fetches[follower] > fetches[leader], (leader, follower, fetches)
    finally:
        cluster.stop()
