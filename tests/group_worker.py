"""One member of a consumer group in its own process, for tests/test_consumer_group.py: subscribes to a topic, and
appends to a JSON-lines file each assignment ({"assigned": [partitions]}), each record read ({"record": [partition,
offset]}) and each commit ({"committed": {partition: offset}}, sync after every third non-empty poll, so a member
killed in between has read records it did not commit). Stops on SIGTERM;
the test also kills it with SIGKILL. Usage: group_worker.py BOOTSTRAP TOPIC GROUP OUT [PROTOCOL] (group.protocol:
classic, the default, or consumer)."""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import IO, Any

from cykafka import Consumer, ConsumerRebalanceListener, TopicPartition

RUN_S = 120.0  # bound: the worker stops by itself


class Log(ConsumerRebalanceListener):
    def __init__(self, consumer: Consumer, out: IO[str]) -> None:
        self.consumer, self.out = consumer, out
        self.pending: dict[TopicPartition, int] = {}  # read, not committed yet

    def write(self, **line: Any) -> None:
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        for tp in partitions:  # not committed: the next owner reads them again (at-least-once)
            self.pending.pop(tp, None)
        self.write(assigned=sorted(tp.partition for tp in self.consumer.assignment() - partitions))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.write(assigned=sorted(tp.partition for tp in self.consumer.assignment()))


def main(bootstrap: str, topic: str, group: str, path: str, protocol: str = "classic") -> None:
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    timeouts = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500} if protocol == "classic" else {}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol, **timeouts,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "max.poll.records": 20})
    with open(path, "a") as out:
        log = Log(consumer, out)
        consumer.subscribe([topic], listener=log)
        stop_at = time.monotonic() + RUN_S
        offsets = log.pending
        polls = 0
        while running[0] and time.monotonic() < stop_at:
            records = consumer.poll(0.2)
            for r in records:
                log.write(record=[r.partition, r.offset])
                offsets[TopicPartition(r.topic, r.partition)] = r.offset + 1
            polls += bool(records)
            if offsets and polls % 3 == 0:
                consumer.commit(offsets)
                log.write(committed={tp.partition: o for tp, o in offsets.items()})
                offsets.clear()
        consumer.close(10)


if __name__ == "__main__":
    main(*sys.argv[1:6])
