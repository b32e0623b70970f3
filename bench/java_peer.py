"""Kafka's Java clients as a bench peer: bench/java/JavaBench.java compiled with `javac` against the kafka-clients jar
that jvm/pom.xml fetches from Maven Central (the version of the Apache Kafka broker the bench runs,
tests/apache_kafka.py NEWEST), cached by its source's hash; and Kafka's own ProducerPerformance / ConsumerPerformance
(kafka-tools, on the same classpath) as a cross-check of the Java figures.

    python bench/java_peer.py          # fetch (once) and compile; prints the classpath

The Java worker takes e2e_bench.py's worker arguments (--mode, --records, --value-bytes, --codec, ...) and prints one
JSON line with the same keys (records, elapsed_s, cpu_s, errors, p50_ms/p99_ms, config), plus its JVM warm-up apart:
startup_s / startup_cpu_s (JVM start to ready, outside the clock) and first_tenth_s / warmup_s (inside it).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "java" / "JavaBench.java"
TESTS = HERE.parent / "tests"
if str(TESTS) not in sys.path:  # tests/apache_kafka.py: the Maven-fetched Kafka and its launcher
    sys.path.append(str(TESTS))

import apache_kafka  # noqa: E402

HEAP = "-Xmx1g"  # kafka-run-class.sh gives its tools 256-512 MiB; a whole 2 M-record run fits in 1 GiB with room
VERSION = apache_kafka.NEWEST


def javac_binary() -> str:
    """The JDK's javac beside the java that runs Kafka (a JRE alone has none)."""
    found = Path(apache_kafka.java_binary()).resolve().parent / "javac"
    if not os.access(found, os.X_OK):
        raise RuntimeError(f"the Java bench peer needs a JDK 17+: no javac beside {found.parent / 'java'}")
    return str(found)


def kafka_clients_jar(version: str = VERSION) -> Path:
    return apache_kafka.kafka_lib(version) / f"kafka-clients-{version}.jar"


def compiled(version: str = VERSION) -> str:
    """The classpath that runs JavaBench: its classes (compiled once per source and Kafka version) and Kafka's lib."""
    lib = apache_kafka.kafka_lib(version)
    digest = hashlib.sha256(SOURCE.read_bytes() + version.encode()).hexdigest()[:16]
    classes = apache_kafka.cache_root() / "bench-classes" / digest
    if not (classes / "JavaBench.class").exists():
        staging = classes.with_name(f"{digest}.{os.getpid()}")
        staging.mkdir(parents=True, exist_ok=True)
        subprocess.run([javac_binary(), "-nowarn", "-d", str(staging), "-cp", str(kafka_clients_jar(version)),
                        str(SOURCE)], check=True, capture_output=True, text=True, timeout=300)
        try:
            staging.rename(classes)
        except OSError:  # another process compiled it first
            shutil.rmtree(staging, ignore_errors=True)
    return f"{classes}{os.pathsep}{lib / '*'}"


def log4j_config() -> Path:
    """Kafka's clients log through slf4j -> log4j2: warnings and errors to stderr, the rest dropped."""
    path = apache_kafka.cache_root() / "bench-log4j2.properties"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("status = error\nappender.err.type = Console\nappender.err.name = ERR\n"
                        "appender.err.target = SYSTEM_ERR\nappender.err.layout.type = PatternLayout\n"
                        "appender.err.layout.pattern = %p %c: %m%n\nrootLogger.level = WARN\n"
                        "rootLogger.appenderRef.err.ref = ERR\n")
    return path


def java(main: str, *args: str, version: str = VERSION) -> list[str]:
    return [apache_kafka.java_binary(), HEAP, f"-Dlog4j2.configurationFile={log4j_config()}", "-cp",
            compiled(version), main, *args]


def settings_args(settings: dict[str, Any]) -> list[str]:
    """--set key=value for each constructor setting (JSON booleans as Java spells them)."""
    out: list[str] = []
    for key, value in settings.items():
        out += ["--set", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    return out


def producer_command(bootstrap: str, records: int, *, value_bytes: int, codec: str, mode: str, rate: int = 10_000,
                     linger_ms: int | None = None, batch_size: int = 16384, buffer_memory: int = 32 * 2**20,
                     settings: dict[str, Any] | None = None, version: str = VERSION) -> list[str]:
    """A Java producer worker (e2e_bench.py's --mode throughput|latency|overload)."""
    command = java("JavaBench", "--worker", "java", "--mode", mode, "--bootstrap", bootstrap, "--records",
                   str(records), "--value-bytes", str(value_bytes), "--codec", codec, "--rate", str(rate),
                   "--batch-size", str(batch_size), "--buffer-memory", str(buffer_memory),
                   *settings_args(settings or {}), version=version)
    if linger_ms is not None:
        command += ["--linger-ms", str(linger_ms)]
    return command


def consumer_command(bootstrap: str, topic: str, partitions: int, records: int,
                     settings: dict[str, Any] | None = None, version: str = VERSION) -> list[str]:
    """A Java consumer worker (consume_bench.py's): assign, from the beginning, CRCs checked."""
    return java("JavaBench", "--worker", "java", "--mode", "consume", "--bootstrap", bootstrap, "--topic", topic,
                "--partitions", str(partitions), "--records", str(records), *settings_args(settings or {}),
                version=version)


# -- Kafka's own perf tools (kafka-tools), once, as a cross-check --------------------------------------------------


def producer_performance(bootstrap: str, topic: str, records: int, value_bytes: int, codec: str,
                         settings: dict[str, Any], version: str = VERSION) -> dict[str, Any]:
    """org.apache.kafka.tools.ProducerPerformance, unthrottled, with the bench's producer settings: its summary line
    (records/s, MB/s, average and percentile latencies). Its records are unkeyed random bytes (the tool's own payload);
    its figure includes its JVM's warm-up (its clock starts at the first send)."""
    props = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in settings.items()]
    command = java("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(records),
                   "--record-size", str(value_bytes), "--throughput", "-1", "--producer-props",
                   f"bootstrap.servers={bootstrap}", f"compression.type={codec}", *props, version=version)
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True)
    line = done.stdout.strip().splitlines()[-1]
    found = re.search(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                      r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th", line)
    if not found:
        raise RuntimeError(f"ProducerPerformance printed {line!r}")
    return {"records": int(found[1]), "records_per_s": float(found[2]), "mb_per_s": float(found[3]),
            "avg_latency_ms": float(found[4]), "p50_ms": float(found[6]), "p99_ms": float(found[8]), "line": line}


def consumer_performance(bootstrap: str, topic: str, records: int, version: str = VERSION) -> dict[str, Any]:
    """org.apache.kafka.tools.ConsumerPerformance (a group subscription from the earliest offset, its own defaults,
    CRCs checked): nMsg.sec (the whole run, the group join included) and fetch.nMsg.sec (without the join) of its
    summary line."""
    config = apache_kafka.cache_root() / "bench-consumer-performance.properties"
    config.write_text("check.crcs=true\n")
    # --messages and --consumer.config: 4.0's names (4.4 still takes them, deprecated, beside --num-records and
    # --command-config)
    command = java("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                   "--messages", str(records), "--timeout", "60000", "--consumer.config", str(config),
                   version=version)
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    at = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    if at is None or at + 1 >= len(lines):
        raise RuntimeError(f"ConsumerPerformance printed {done.stdout[-2000:]!r} {done.stderr[-2000:]!r}")
    header = [h.strip() for h in lines[at].split(",")]
    values = [v.strip() for v in lines[at + 1].split(",")]
    row = dict(zip(header, values, strict=False))
    return {"records": int(float(row["data.consumed.in.nMsg"])), "records_per_s": float(row["nMsg.sec"]),
            "fetch_records_per_s": float(row.get("fetch.nMsg.sec", "nan")), "mb_per_s": float(row["MB.sec"]),
            "line": lines[at + 1], "header": lines[at]}


if __name__ == "__main__":
    print(compiled())
