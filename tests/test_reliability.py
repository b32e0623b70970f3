"""Faults against a real broker: deadlines hold with a dead broker, expired records fail in time with a typed error,
and the producer recovers when the broker comes back. Every future completes; nothing stays pending."""

from __future__ import annotations

import time
from typing import Any

import pytest

from cykafka import KafkaTimeoutError, Producer, ProducerClosedError
from cykafka.broker import EmbeddedBroker


def _settled(futures: list[Any]) -> tuple[int, int]:
    ok = failed = 0
    for f in futures:
        assert f.done(), "a future is still pending"
        if f.exception(0) is None:
            ok += 1
        else:
            failed += 1
    return ok, failed


def test_flush_and_close_with_a_dead_broker_return_by_their_deadlines() -> None:
    broker = EmbeddedBroker().start()
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 1})
    try:
        producer.send("rel-dead", b"before").result(30)
        broker.kill()
        futures = [producer.send("rel-dead", b"after-%d" % i) for i in range(1000)]
        started = time.monotonic()
        pending = producer.flush(1.0)
        flush_s = time.monotonic() - started
        assert pending == 1000
        assert 0.9 <= flush_s <= 1.1, flush_s
        started = time.monotonic()
        producer.close(1.0)
        close_s = time.monotonic() - started
        assert close_s <= 1.1, close_s
        ok, failed = _settled(futures)
        assert (ok, failed) == (0, 1000)
        with pytest.raises(ProducerClosedError):
            futures[0].result(0)
    finally:
        producer.close(0)
        broker.stop()


def test_unreachable_longer_than_delivery_timeout_fails_in_time_then_recovers() -> None:
    broker = EmbeddedBroker().start()
    config = {"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "delivery.timeout.ms": 2000,
              "request.timeout.ms": 1000, "retry.backoff.max.ms": 200, "reconnect.backoff.max.ms": 200}
    producer = Producer(config)
    try:
        producer.send("rel-gone", b"warm").result(30)
        broker.kill()
        sent_at = time.monotonic()
        futures = [producer.send("rel-gone", b"lost-%d" % i, partition=i % 4) for i in range(2000)]
        for f in futures:
            with pytest.raises(KafkaTimeoutError):
                f.result(10)
        waited_s = time.monotonic() - sent_at
        assert waited_s < 2.0 + 1.5, f"delivery.timeout.ms is 2 s; the last future failed after {waited_s:.1f} s"
        assert _settled(futures) == (0, 2000)
        broker.start()  # same port, empty memory storage
        deadline = time.monotonic() + 30
        while True:
            try:
                md = producer.send("rel-gone", b"back").result(10)
                break
            except KafkaTimeoutError:
                assert time.monotonic() < deadline, "the producer did not recover after the broker came back"
        assert md.offset >= 0
        assert producer.flush(10) == 0
    finally:
        producer.close(5)
        broker.stop()
