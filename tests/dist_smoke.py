"""Run by tests/test_dist.py with the Python of a fresh venv holding only `cykafka[broker]` from dist/: the installed
package starts the embedded broker, sends RECORDS keyed records with headers (send_batch and send), and reads them back
with confluent-kafka (cykafka.verify.read_back: check.crcs=true, up to the Fetch high watermark). Prints one line
ending in VERIFIED, or fails."""

from __future__ import annotations

import importlib.util
import sys

import cykafka
from cykafka import Producer
from cykafka.broker import EmbeddedBroker
from cykafka.verify import read_back

RECORDS = 20_000
TOPIC = "dist-smoke"


def main() -> int:
    assert "site-packages" in (cykafka.__file__ or ""), cykafka.__file__
    dev_only = [name for name in ("pytest", "mypy", "hypothesis", "moto", "ruff") if importlib.util.find_spec(name)]
    assert not dev_only, f"the broker extra pulled in dev packages: {dev_only}"
    values = [b"value-%d" % i for i in range(RECORDS)]
    keys = [b"key-%d" % i for i in range(RECORDS)]
    with EmbeddedBroker() as broker:
        with Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": "lz4",
                       "linger.ms": 5}) as producer:
            half = RECORDS // 2
            batch = producer.send_batch(TOPIC, values[:half], keys[:half], headers=[[("n", b"1")]] * half)
            futures = [producer.send(TOPIC, values[i], key=keys[i], headers=[("n", b"1")])
                       for i in range(half, RECORDS)]
            assert producer.flush(60) == 0
            assert batch.result(0) == half
            assert all(f.result(0).offset >= 0 for f in futures)
        records = read_back(broker.bootstrap_servers, TOPIC)
    got = sorted((r.key, r.value) for r in records)
    assert got == sorted(zip(keys, values, strict=True)), f"{len(records)} records read back"
    assert all(r.headers == [("n", b"1")] for r in records)
    print(f"cykafka {cykafka.__version__} from {cykafka.__file__}: sent {RECORDS}, read back {len(records)} in "
          f"{len({r.partition for r in records})} partitions -> VERIFIED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
