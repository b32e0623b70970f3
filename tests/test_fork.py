"""Fork safety: a Producer made in a parent works in a multiprocessing fork child (fresh sender thread, transport,
pool) and the parent keeps working; batches queued at fork time are delivered once, by the parent; a cached producer
closed in the child (by the Spark client cache's at-fork hook, in either hook order) leaves the parent's connection
alone. Each scenario forks an interpreter of its own (tests/fork_worker.py): forking the test process would copy, and
rebuild in the child, whatever other tests left running in it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from cykafka.broker import EmbeddedBroker
from cykafka.verify import read_back

pytestmark = pytest.mark.broker

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fork_worker.py")


def _run(scenario: str, broker: EmbeddedBroker, topic: str) -> None:
    done = subprocess.run([sys.executable, WORKER, scenario, broker.bootstrap_servers, topic], capture_output=True,
                          text=True, timeout=180, cwd="/")
    assert done.returncode == 0, done.stdout + done.stderr


def test_producer_used_in_fork_child_and_parent(broker: EmbeddedBroker) -> None:
    topic = f"fork-{uuid.uuid4().hex[:8]}"
    _run("child-and-parent", broker, topic)
    records = read_back(broker.bootstrap_servers, topic)
    values = sorted(r.value or b"" for r in records)
    assert len(values) == 251, f"expected 1 + 100 + 50 + 100 records exactly once, got {len(values)}"
    assert len(set(values)) == 251
    assert sum(1 for r in records if r.headers == [("from", b"child")]) == 50


def test_producer_survives_nested_forks(broker: EmbeddedBroker) -> None:
    topic = f"fork-nested-{uuid.uuid4().hex[:8]}"
    _run("nested", broker, topic)
    values = sorted(r.value or b"" for r in read_back(broker.bootstrap_servers, topic))
    assert values == [b"child", b"grandchild", b"parent", b"parent-again"]


@pytest.mark.parametrize("order", ["cache-first", "producer-first"])
def test_a_cached_producer_closed_in_the_child_leaves_the_parents_connection_alone(broker: EmbeddedBroker,
                                                                                    order: str) -> None:
    """close() of a producer the child has not rebuilt yet (the cache's hook ran first) used to shut down and
    unregister the parent's sockets (they share the epoll set): the parent's sender then failed and logged."""
    topic = f"fork-cached-{uuid.uuid4().hex[:8]}"
    _run(order, broker, topic)
    values = sorted(r.value or b"" for r in read_back(broker.bootstrap_servers, topic))
    assert values == sorted([b"before-%d" % i for i in range(10)] + [b"after-%d" % i for i in range(10)] + [b"child"])
