"""Share groups (KIP-932): records/s of 1, 2 and 4 share consumers reading ONE partition, cykafka's ShareConsumer
against Java's KafkaShareConsumer (bench/java/ShareBench.java, compiled against the broker's kafka-clients) and
confluent-kafka's ShareConsumer preview (librdkafka's), each member a process of its own, on the same Apache Kafka
broker (share.version=1) and the same records, the same guarantee (implicit acknowledgement: each poll accepts the
previous one's records).

    python bench/share_bench.py [--records 200000] [--value-bytes 100] [--members 1,2,4] [--bootstrap H:P]
                                [--clients cykafka,java,confluent]

Without --bootstrap it starts a one-node Kafka (tests/apache_kafka.py) and stops it at the end. Each run is a new
share group starting at the earliest offset (the group config share.auto.offset.reset); every member polls with
implicit acknowledgement (each poll accepts the previous one's records) until no record came for 3 s after its
first. A run's rate is the records read / (the latest member's last record - the earliest member's first record):
JVM and interpreter start-up are outside it. Every record must be read exactly once (the sum of the members' counts)
and accepted (the group's lag afterwards, from Admin's list_share_group_offsets, is 0).
CPU is each member process's own (user + system), summed.

    python bench/share_bench.py --worker cykafka|confluent --bootstrap H:P --group G --topic T   # one member
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
MAX_POLL_RECORDS = 500
IDLE_MS = 3000


def worker(bootstrap: str, group: str, topic: str) -> None:
    from cykafka import ShareConsumer

    records = size_bytes = first_ms = last_ms = 0
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "max.poll.records": MAX_POLL_RECORDS})
    consumer.subscribe([topic])
    give_up_ms = time.time() * 1000 + 60_000
    while True:
        got = consumer.poll(0.2)
        now_ms = int(time.time() * 1000)
        if got:
            if not records:
                first_ms = now_ms
            last_ms = now_ms
            records += len(got)
            size_bytes += sum(len(r.value or b"") for r in got)
        elif (now_ms - last_ms >= IDLE_MS) if records else now_ms >= give_up_ms:
            break
    consumer.commit_sync(30)
    consumer.close(30)
    cpu = os.times()
    print(json.dumps({"client": "cykafka", "records": records, "bytes": size_bytes, "first_ms": first_ms,
                      "last_ms": last_ms, "cpu_s": cpu.user + cpu.system}), flush=True)


def confluent_worker(bootstrap: str, group: str, topic: str) -> None:
    """One confluent-kafka ShareConsumer member, measured as the cykafka worker is (poll's list of Messages; a
    Message with error() set is counted apart and ends the run when fatal)."""
    from confluent_kafka import ShareConsumer

    records = size_bytes = first_ms = last_ms = errors = 0
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "implicit", "max.poll.records": MAX_POLL_RECORDS})
    consumer.subscribe([topic])
    give_up_ms = time.time() * 1000 + 60_000
    while True:
        got = consumer.poll(0.2) or []
        now_ms = int(time.time() * 1000)
        good = [m for m in got if m.error() is None]
        errors += len(got) - len(good)
        if good:
            if not records:
                first_ms = now_ms
            last_ms = now_ms
            records += len(good)
            size_bytes += sum(len(m.value() or b"") for m in good)
        elif (now_ms - last_ms >= IDLE_MS) if records else now_ms >= give_up_ms:
            break
    consumer.commit_sync(30)
    consumer.close()
    cpu = os.times()
    print(json.dumps({"client": "confluent", "records": records, "bytes": size_bytes, "first_ms": first_ms,
                      "last_ms": last_ms, "cpu_s": cpu.user + cpu.system, "errors": errors}), flush=True)


def java_command(bootstrap: str, group: str, topic: str) -> list[str]:
    import java_peer

    lib = java_peer.apache_kafka.kafka_lib(java_peer.VERSION)
    source = HERE / "java" / "ShareBench.java"
    classes = java_peer.apache_kafka.cache_root() / "bench-classes" / f"share-{java_peer.VERSION}"
    if not (classes / "ShareBench.class").exists() or (classes / "ShareBench.class").stat().st_mtime < \
            source.stat().st_mtime:
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run([java_peer.javac_binary(), "-nowarn", "-d", str(classes), "-cp",
                        str(java_peer.kafka_clients_jar()), str(source)], check=True, timeout=300)
    return [java_peer.apache_kafka.java_binary(), java_peer.HEAP,
            f"-Dlog4j2.configurationFile={java_peer.log4j_config()}", "-cp", f"{classes}{os.pathsep}{lib / '*'}",
            "ShareBench", "--bootstrap", bootstrap, "--group", group, "--topic", topic, "--max-poll-records",
            str(MAX_POLL_RECORDS), "--idle-ms", str(IDLE_MS)]


def earliest_group(admin: Any, group: str) -> None:
    """share.auto.offset.reset=earliest on the group (IncrementalAlterConfigs on the GROUP resource)."""
    from cykafka import ConfigResource

    resource = ConfigResource("group", group)
    admin.incremental_alter_configs({resource: [("share.auto.offset.reset", "set", "earliest")]})[resource].result()


def run(bootstrap: str, client: str, members: int, topic: str, records: int, admin: Any) -> dict[str, Any]:
    group = f"bench-{client}-{members}-{uuid.uuid4().hex[:6]}"
    earliest_group(admin, group)
    command = (java_command(bootstrap, group, topic) if client == "java" else
               [sys.executable, str(Path(__file__).resolve()), "--worker", client, "--bootstrap", bootstrap,
                "--group", group, "--topic", topic])
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(members)]
    outs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        outs.append(json.loads(out.strip().splitlines()[-1]))
    read = sum(o["records"] for o in outs)
    accepted = start_offset(admin, group, topic, records)
    active = [o for o in outs if o["records"]]
    span_s = (max(o["last_ms"] for o in active) - min(o["first_ms"] for o in active)) / 1000 if active else 0
    return {"client": client, "members": members, "records": read, "expected": records,
            "per_member": [o["records"] for o in outs], "span_s": round(span_s, 3),
            "records_per_s": round(read / span_s) if span_s else None,
            "cpu_s": round(sum(o["cpu_s"] for o in outs), 2), "start_offset_lag_after": accepted}


def start_offset(admin: Any, group: str, topic: str, records: int) -> list[int]:
    """[start offset, lag] of the group on the partition once the members closed (Admin's
    DescribeShareGroupOffsets): lag 0 says every record was accepted; waited for a little (the share coordinator
    writes the state)."""
    from cykafka import TopicPartition

    tp, found = TopicPartition(topic, 0), [-1, -1]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        info = admin.list_share_group_offsets(group).get(tp)
        found = [info.result().start_offset, info.result().lag] if info is not None else [-1, -1]
        if found[1] == 0:
            break
        time.sleep(0.2)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=["cykafka", "confluent"])
    parser.add_argument("--bootstrap")
    parser.add_argument("--group")
    parser.add_argument("--topic")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--members", default="1,2,4")
    parser.add_argument("--clients", default="cykafka,java,confluent")
    args = parser.parse_args()
    if args.worker:
        (worker if args.worker == "cykafka" else confluent_worker)(args.bootstrap, args.group, args.topic)
        return
    from cykafka import Admin, NewTopic, Producer

    cluster = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from apache_kafka import KafkaCluster

        cluster = KafkaCluster(1, features={"share.version": 1}).start()
        bootstrap = cluster.bootstrap_servers
    try:
        admin = Admin({"bootstrap.servers": bootstrap})
        topic = f"share-bench-{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
        value = b"v" * args.value_bytes
        with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
            for _ in range(args.records):
                producer.send(topic, value=value)
            producer.flush(120)
        results = []
        for members in (int(m) for m in args.members.split(",")):
            for client in args.clients.split(","):
                result = run(bootstrap, client, members, topic, args.records, admin)
                print(json.dumps(result), flush=True)
                results.append(result)
        admin.close()
        print(f"\n{args.records} records x {args.value_bytes} B on one partition, max.poll.records "
              f"{MAX_POLL_RECORDS}, implicit acknowledgement; load "
              f"average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{'members':>8} {'client':>8} {'records/s':>10} {'cpu s':>7} {'read':>8}  per member")
        for r in results:
            print(f"{r['members']:>8} {r['client']:>8} {r['records_per_s'] or 0:>10} {r['cpu_s']:>7} "
                  f"{r['records']:>8}  {r['per_member']}")
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
