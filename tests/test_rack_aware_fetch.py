"""client.rack (KIP-392) on a 3-node Apache Kafka cluster whose brokers sit in racks r1, r2, r3 with the rack-aware
replica selector: the Consumer sends its rack in every Fetch, the leader answers with the preferred read replica (the
follower in the consumer's rack), and the consumer fetches from that follower (Java's behaviour), counted per node at
the transport; the records read are the ones written. And the fetcher's own decisions, without a broker: when it
leaves the replica for the leader again."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

import pytest

from cykafka import Admin, Consumer, NewTopic, Producer, TopicPartition
from cykafka.protocol.apis import FETCH

RECORDS = 200


@pytest.mark.slow  # three Apache Kafka nodes
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
            while True:  # the other nodes learn of the topic a moment after the controller answered
                described = admin.describe_topics([topic])[topic]
                partition = None if described.error is not None else described.result().partitions[0]
                if partition is not None and partition.leader >= 0 and len(partition.isr) == 3:
                    break
                assert time.monotonic() < deadline, f"{topic}: no leader with 3 in-sync replicas: {described!r}"
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
        print(f"leader {leader}, follower {follower} (client.rack=r{follower}): Fetches per node {dict(fetches)}")
        assert values == [b"v-%d" % i for i in range(RECORDS)]
        assert racks == {f"r{follower}"}
        assert fetches[leader] >= 1  # the first Fetch asks the leader, which names the follower
        assert follower_fetches_before >= 1 and fetches[follower] > fetches[leader], (leader, follower, fetches)
    finally:
        cluster.stop()


class _Transport:
    def __init__(self) -> None:
        self.failed: set[int] = set()

    def connection_failed(self, node_id: int) -> bool:
        return node_id in self.failed


class _Metadata:
    def request_update(self) -> None:
        pass


def _answer(code: int = 0, replica: int = -1) -> dict[str, Any]:
    return {"error_code": code, "preferred_read_replica": replica, "high_watermark": 10, "log_start_offset": 0,
            "last_stable_offset": 10, "records": b"", "aborted_transactions": None}


@pytest.mark.parametrize("ends", ["connection failed", "not in metadata", "metadata.max.age.ms passed",
                                  "an error from it", "offset out of range on it"])
def test_the_read_replica_holds_until_java_would_leave_it(ends: str) -> None:
    """The fetcher's decisions (no broker): the leader's answer names replica 2; fetches go there until `ends`, then
    back to the leader 1; OFFSET_OUT_OF_RANGE from the replica does not reset the position (the replica may lag)."""
    from cykafka.config import ConsumerConfig
    from cykafka.fetch_buffer import FetchBuffer
    from cykafka.fetcher import Fetcher
    from cykafka.ports import Node
    from cykafka.protocol.error_codes import ErrorCode
    from cykafka.subscription_state import PartitionState, SubscriptionState

    config = ConsumerConfig.parse({"bootstrap.servers": "127.0.0.1:9", "client.rack": "r2",
                                   "metadata.max.age.ms": 60_000})
    transport = _Transport()
    subscriptions = SubscriptionState(config.max_partition_fetch_bytes)
    fetcher = Fetcher(config, subscriptions, FetchBuffer(subscriptions), transport, _Metadata(),  # type: ignore[arg-type]
                      lambda *args: None)  # type: ignore[arg-type,return-value]
    tp, state = TopicPartition("t", 0), PartitionState(fetch_size_bytes=1024, position=5, fetch_offset=5)
    nodes = {1: Node(1, "h", 1), 2: Node(2, "h", 2)}
    fetcher._file(tp, state, _answer(replica=2), 1, 1000)
    assert fetcher._read_replica(tp, state, 1, nodes, 1001) == 2
    assert fetcher._read_replica(tp, state, 1, nodes, 1000 + 59_999) == 2
    now_ms = 2000
    if ends == "connection failed":
        transport.failed.add(2)
    elif ends == "not in metadata":
        nodes = {1: nodes[1]}
    elif ends == "metadata.max.age.ms passed":
        now_ms = 1000 + 60_000
    elif ends == "an error from it":
        fetcher._file(tp, state, _answer(ErrorCode.NOT_LEADER_OR_FOLLOWER), 2, now_ms)
    else:
        fetcher._file(tp, state, _answer(ErrorCode.OFFSET_OUT_OF_RANGE), 2, now_ms)
        assert state.reset is None and state.position == 5  # asks the leader, resets nothing
    assert fetcher._read_replica(tp, state, 1, nodes, now_ms) == 1
    assert state.read_replica is None
