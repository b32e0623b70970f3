"""A share group member in a process of its own, for tests that kill it: joins GROUP on TOPIC (explicit
acknowledgement), polls until it holds records, prints their offsets as one JSON line, then holds them (never
acknowledges) until killed.

    python share_worker.py BOOTSTRAP GROUP TOPIC
"""

from __future__ import annotations

import json
import sys
import time

from cykafka import ShareConsumer


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit", "max.poll.records": 5})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        records = consumer.poll(1.0)
        if records:
            print(json.dumps([r.offset for r in records]), flush=True)
            while True:  # holds them: the test kills this process
                time.sleep(1)
    print("[]", flush=True)


if __name__ == "__main__":
    main()
