"""Share groups (KIP-932): records/s of 1, 2 and 4 share consumers reading ONE partition, cykafka's ShareConsumer
against Java's KafkaShareConsumer (bench/java/ShareBench.java, compiled against the broker's kafka-clients), each
member a process of its own, on the same Apache Kafka broker (share.version=1) and the same records.

    python bench/share_bench.py [--records 200000] [--value-bytes 100] [--members 1,2,4] [--bootstrap H:P]

Without --bootstrap it starts a one-node Kafka (tests/apache_kafka.py) and stops it at the end. Each run is a new
share group starting at the earliest offset (the group config share.auto.offset.reset); every member polls with
implicit acknowledgement (each poll accepts the previous one's records) until no record came for 3 s after its
first. A run's rate is the records read / (the latest member's last record - the earliest member's first record):
JVM and interpreter start-up are outside it. Every record must be read exactly once (the sum of the members' counts).
CPU is each member process's own (user + system), summed.

    python bench/share_bench.py --worker cykafka --bootstrap H:P --group G --topic T   # one member (internal)
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
GROUP_RESOURCE = 32  # ConfigResource.Type GROUP
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
    from cykafka.protocol import Request
    from cykafka.protocol.apis import INCREMENTAL_ALTER_CONFIGS
    from cykafka.requests.routes import ANY_BROKER

    body = {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}], "validate_only": False}
    answer = admin._call(lambda: admin._ask(Request(INCREMENTAL_ALTER_CONFIGS.key, body), ANY_BROKER,
                                            admin._deadline(None)))
    codes = [r["error_code"] for r in answer.body["responses"]]
    if codes != [0]:
        raise RuntimeError(f"setting share.auto.offset.reset on {group}: {answer.body}")


def run(bootstrap: str, client: str, members: int, topic: str, records: int, admin: Any) -> dict[str, Any]:
    group = f"bench-{client}-{members}-{uuid.uuid4().hex[:6]}"
    earliest_group(admin, group)
    command = (java_command(bootstrap, group, topic) if client == "java" else
               [sys.executable, str(Path(__file__).resolve()), "--worker", "cykafka", "--bootstrap", bootstrap,
                "--group", group, "--topic", topic])
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(members)]
    outs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        outs.append(json.loads(out.strip().splitlines()[-1]))
    read = sum(o["records"] for o in outs)
    active = [o for o in outs if o["records"]]
    span_s = (max(o["last_ms"] for o in active) - min(o["first_ms"] for o in active)) / 1000 if active else 0
    return {"client": client, "members": members, "records": read, "expected": records,
            "per_member": [o["records"] for o in outs], "span_s": round(span_s, 3),
            "records_per_s": round(read / span_s) if span_s else None,
            "cpu_s": round(sum(o["cpu_s"] for o in outs), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=["cykafka"])
    parser.add_argument("--bootstrap")
    parser.add_argument("--group")
    parser.add_argument("--topic")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--members", default="1,2,4")
    parser.add_argument("--clients", default="cykafka,java")
    args = parser.parse_args()
    if args.worker:
        worker(args.bootstrap, args.group, args.topic)
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
              f"{MAX_POLL_RECORDS}, implicit acknowledgement")
        print(f"{'members':>8} {'client':>8} {'records/s':>10} {'cpu s':>7} {'read':>8}  per member")
        for r in results:
            print(f"{r['members']:>8} {r['client']:>8} {r['records_per_s'] or 0:>10} {r['cpu_s']:>7} "
                  f"{r['records']:>8}  {r['per_member']}")
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
