"""Run by tests/test_fork.py in an interpreter of its own: `python fork_worker.py SCENARIO BOOTSTRAP TOPIC`. A fork
copies the whole process it is made from, and a child is only as safe as every thread it copies, so these tests fork a
process that holds their own clients and nothing another test left behind. Exits 0 when the scenario's checks held
(the test then reads the topic back); otherwise a traceback on stderr and a non-zero exit."""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import sys
import threading
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported inside each scenario: the cached one imports in a chosen order
    from cykafka.producer import Producer


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


def child_and_parent(bootstrap: str, topic: str) -> None:
    """1 warm-up + 100 queued at fork time (the parent's to deliver) + 50 from the child + 100 after, by the parent."""
    from cykafka.producer import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000})
    try:
        producer.send(topic, b"warmup", headers=[("from", b"parent")]).result(timeout=30)
        # queued, not yet sent (linger.ms=1000) when the child is forked: only the parent may deliver these
        before = [producer.send(topic, b"parent-before-%d" % i, headers=[("from", b"parent")]) for i in range(100)]
        child = multiprocessing.get_context("fork").Process(
            target=_child_sends, args=(producer, topic, producer._thread, 50))
        child.start()
        child.join(60)
        assert child.exitcode == 0, f"child failed with exit code {child.exitcode}"
        after = [producer.send(topic, b"parent-after-%d" % i, headers=[("from", b"parent")]) for i in range(100)]
        assert producer.flush(30) == 0
        for future in before + after:
            future.result(timeout=30)
    finally:
        producer.close(10)


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


def nested(bootstrap: str, topic: str) -> None:
    """parent, child, grandchild, parent-again: one record each."""
    from cykafka.producer import Producer

    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 1}) as producer:
        producer.send(topic, b"parent").result(timeout=30)
        child = multiprocessing.get_context("fork").Process(target=_child_forks_again, args=(producer, topic))
        child.start()
        child.join(60)
        assert child.exitcode == 0
        producer.send(topic, b"parent-again").result(timeout=30)


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def cached(bootstrap: str, topic: str, cache_first: bool) -> None:
    """A Spark-cached producer, then fork(): the cache's at-fork hook closes it in the child, before or after the
    producers' own hook rebuilt it (the hooks run in the order their modules were first imported), and the child's
    next acquire builds a producer of its own (1 record). Either way the parent keeps its producer and its connection
    as it was: 10 records before the fork, 10 after, nothing logged."""
    first_use = ["cykafka.spark.clients", "cykafka.producer"]  # each registers its at-fork hook when imported
    for module in first_use if cache_first else reversed(first_use):
        importlib.import_module(module)
    from cykafka.producer import Producer
    from cykafka.spark.clients import PRODUCERS
    kept = _Kept()
    logging.getLogger("cykafka").addHandler(kept)
    config = (("bootstrap.servers", bootstrap), ("linger.ms", "0"))
    producer = PRODUCERS.acquire(config, 60_000)
    assert isinstance(producer, Producer)
    for i in range(10):
        producer.send(topic, b"before-%d" % i).result(timeout=30)
    pid = os.fork()
    if pid == 0:  # the child forgets and closes the parent's producer, and builds its own on the next acquire
        code = 3
        try:
            assert producer._closed and len(PRODUCERS) == 0, "the child's cache kept the parent's producer"
            fresh = PRODUCERS.acquire(config, 60_000)
            assert fresh is not producer
            fresh.send(topic, b"child").result(timeout=30)
            PRODUCERS.release(config)
            PRODUCERS.close_all(10)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child kept the parent's producer or could not send"
    assert PRODUCERS.acquire(config, 60_000) is producer, "the parent keeps its producer"
    PRODUCERS.release(config)
    for i in range(10):
        producer.send(topic, b"after-%d" % i).result(timeout=30)
    PRODUCERS.release(config)
    PRODUCERS.close_all(10)
    assert not kept.records, [r.getMessage() for r in kept.records]


if __name__ == "__main__":
    scenario, bootstrap, topic = sys.argv[1:4]
    if scenario == "child-and-parent":
        child_and_parent(bootstrap, topic)
    elif scenario == "nested":
        nested(bootstrap, topic)
    else:
        cached(bootstrap, topic, cache_first=scenario == "cache-first")
