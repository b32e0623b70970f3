"""Fork safety: a Producer made in a parent works in a multiprocessing fork child (fresh sender thread, transport,
pool) and the parent keeps working; batches queued at fork time are delivered once, by the parent."""

from __future__ import annotations

import multiprocessing
import os
import threading
import uuid

import pytest

from cykafka.broker import EmbeddedBroker
from cykafka.producer import Producer
from cykafka.verify import read_back

pytestmark = pytest.mark.broker


def _child_sends(producer: Producer, topic: str, parent_thread: threading.Thread, count: int) -> None:
    thread = producer._thread
    assert thread is not None and thread.is_alive(), "the child needs its own running sender thread"
    assert thread is not parent_thread and thread.native_id != parent_thread.native_id
    assert threading.current_thread() is not thread
    futures = [producer.send(topic, b"child-%d" % i, key=b"c%d" % i, headers=[("from", b"child")])
               for i in range(count)]
    assert producer.flush(30) == 0, "the child's flush must not wait for the parent's batches"
    for future in futures:
        future.result(timeout=30)
    producer.close(10)


def test_producer_used_in_fork_child_and_parent(broker: EmbeddedBroker) -> None:
    topic = f"fork-{uuid.uuid4().hex[:8]}"
    ctx = multiprocessing.get_context("fork")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 1000})
    try:
        producer.send(topic, b"warmup", headers=[("from", b"parent")]).result(timeout=30)
        # queued, not yet sent (linger.ms=1000) when the child is forked: only the parent may deliver these
        before = [producer.send(topic, b"parent-before-%d" % i, headers=[("from", b"parent")]) for i in range(100)]
        child = ctx.Process(target=_child_sends, args=(producer, topic, producer._thread, 50))
        child.start()
        child.join(60)
        assert child.exitcode == 0, f"child failed with exit code {child.exitcode}"
        after = [producer.send(topic, b"parent-after-%d" % i, headers=[("from", b"parent")]) for i in range(100)]
        assert producer.flush(30) == 0
        for future in before + after:
            future.result(timeout=30)
    finally:
        producer.close(10)
    records = read_back(broker.bootstrap_servers, topic)
    values = sorted(r.value or b"" for r in records)
    assert len(values) == 251, f"expected 1 + 100 + 50 + 100 records exactly once, got {len(values)}"
    assert len(set(values)) == 251
    assert sum(1 for r in records if r.headers == [("from", b"child")]) == 50


def _child_forks_again(producer: Producer, topic: str) -> None:
    # a grandchild: the hook runs on every fork, not once per process tree
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            producer.send(topic, b"grandchild").result(timeout=30)
            producer.close(10)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    producer.send(topic, b"child").result(timeout=30)
    producer.close(10)


def test_producer_survives_nested_forks(broker: EmbeddedBroker) -> None:
    topic = f"fork-nested-{uuid.uuid4().hex[:8]}"
    ctx = multiprocessing.get_context("fork")
    with Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 1}) as producer:
        producer.send(topic, b"parent").result(timeout=30)
        child = ctx.Process(target=_child_forks_again, args=(producer, topic))
        child.start()
        child.join(60)
        assert child.exitcode == 0
        producer.send(topic, b"parent-again").result(timeout=30)
    values = sorted(r.value or b"" for r in read_back(broker.bootstrap_servers, topic))
    assert values == [b"child", b"grandchild", b"parent", b"parent-again"]
