"""`cykafka demo`: the main job until the Spark pipeline lands. Starts the embedded broker, sends N keyed records with
headers through cykafka.Producer, reads them back with an independent consumer and prints a verified summary."""

from __future__ import annotations

import time

from cykafka.broker import EmbeddedBroker
from cykafka.producer import Producer
from cykafka.verify import read_back


def run(records: int = 500_000, value_bytes: int = 100, compression: str = "lz4") -> int:
    with EmbeddedBroker() as broker:
        topic = "cykafka-demo"
        payload = b"v" * value_bytes
        errors: list[BaseException] = []

        def on_delivery(err: BaseException | None, _metadata: object) -> None:
            if err is not None:
                errors.append(err)

        started = time.perf_counter()
        with Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": compression,
                       "linger.ms": 5}) as producer:
            for i in range(records):
                producer.send(topic, payload, key=b"key-%d" % i, headers=[("seq", b"%d" % i)],
                              on_delivery=on_delivery)
            pending = producer.flush(120)
        elapsed_s = time.perf_counter() - started
        read = read_back(broker.bootstrap_servers, topic)
        seqs = {int(r.headers[0][1] or b"-1") for r in read if r.headers}
        ok = not errors and pending == 0 and len(read) == records and seqs == set(range(records))
        print(f"cykafka demo: sent={records} errors={len(errors)} read_back={len(read)} unique={len(seqs)} "
              f"partitions={len({r.partition for r in read})} {records / elapsed_s:,.0f} records/s "
              f"compression={compression} -> {'VERIFIED' if ok else 'MISMATCH'}")
        return 0 if ok else 1
