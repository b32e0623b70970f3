"""bench/ keeps running (tiny sizes, no timing assertions: throughput belongs in bench/): the one-command runner's
report, the same guarantee (acks=all, idempotence) for every client in every scenario, the busy-caller latency
scenario end to end, the end-to-end workers under `python -m cProfile`, and the JVM comparisons (issue 29: Kafka's
Java clients through `bench/run.py --only java`, Spark's own connector through `bench/spark_bench.py --jvm`) in a
smoke size on both brokers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from cykafka.broker import EmbeddedBroker

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
IDEMPOTENCE_KEY = {"cykafka": "enable.idempotence", "cykafka-batch": "enable.idempotence",
                   "confluent": "enable.idempotence", "aiokafka": "enable_idempotence",
                   "kafka-python": "enable_idempotence", "java": "enable.idempotence"}


@pytest.fixture(scope="module")
def run() -> Any:
    """bench/run.py as a module (it imports its neighbours e2e_bench and throttle by name)."""
    sys.path.insert(0, BENCH)
    try:
        import run as module
    finally:
        sys.path.remove(BENCH)
    return module


def test_every_scenario_runs_every_client_at_acks_all_with_idempotence(run: Any) -> None:
    """The ratios compare one guarantee: each worker's command line carries its client's PEER_SETTINGS, which ask for
    acks=all and idempotence (confluent-kafka at enable.idempotence=true, not librdkafka's non-idempotent default)."""
    assert run.PEER_SETTINGS["confluent"]["enable.idempotence"] is True
    assert run.peer_settings("confluent")["enable.idempotence"] is True
    assert all(run.PEER_SETTINGS[client][IDEMPOTENCE_KEY[client]] is True for client in run.ALL_CLIENTS)
    assert {client for client in run.ALL_CLIENTS if run.missing_idempotence(client)} <= {"aiokafka", "kafka-python"}
    seen = set()
    for scenario in run.scenarios(0.001):
        for client in scenario.clients:
            command = scenario.command(client, "127.0.0.1:9092", None)
            if client == "java":  # --set key=value each, Java's spelling of the same JSON values
                given = [command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "--set"]
                settings = {key: json.loads(value) if value in ("true", "false") else value for key, value in given}
            else:
                settings = json.loads(command[command.index("--settings") + 1])
            assert settings == run.peer_settings(client)
            assert settings["acks"] == "all"
            if not run.missing_idempotence(client):
                assert settings[IDEMPOTENCE_KEY[client]] is True, (scenario.name, client)
            seen.add((scenario.mode, client))
    assert {("throughput", "confluent"), ("latency", "confluent"), ("overload", "confluent"),
            ("latency", "aiokafka"), ("throughput", "kafka-python"), ("throughput", "java"),
            ("latency", "java")} <= seen


def test_run_writes_the_report_and_the_targets(tmp_path: object) -> None:
    out = str(tmp_path)
    args = [sys.executable, os.path.join(BENCH, "run.py"), "--only", "encode", "--quick", "--out", out]
    printed = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    report = open(os.path.join(out, "results.md")).read()
    assert "encode-only vs aiokafka's Cython builder, none" in report and report.strip() in printed
    assert set(json.load(open(os.path.join(out, "runs.json")))["encode"]) == {"none", "lz4"}


def test_the_hog_scenario_runs_both_clients_beside_a_thread_that_never_gives_the_gil_up(run: Any) -> None:
    """latency-hog (issue 32: another thread holds the GIL in Python and never calls the client): cykafka and
    confluent-kafka at HOG_RATE records/s, each worker told --hog (bench/e2e_bench.py starts the spinning thread with
    the clock and stops it after the run)."""
    hog = next(s for s in run.scenarios(1.0) if s.name == "latency-hog")
    assert hog.mode == "latency" and hog.hog and not hog.spin and set(hog.clients) == {"cykafka", "confluent"}
    for client in hog.clients:
        command = hog.command(client, "127.0.0.1:9", None)
        assert "--hog" in command and command[command.index("--rate") + 1] == str(run.HOG_RATE)


@pytest.mark.broker
def test_busy_and_spinning_caller_latency_scenarios_end_to_end(run: Any, tmp_path: object) -> None:
    """latency-busy (the sending thread busy in Python between sends), latency-spin (it spins until each record is
    due) and consume-latency (a consumer whose caller spins between polls) through bench/run.py on its own broker,
    at the smallest size: their tables, their targets against idempotent confluent-kafka (<= 1.5x; <= 1.0x for the
    spinning callers, issue 32), the settings header, and what each worker says it ran with."""
    busy = next(s for s in run.scenarios(1.0) if s.name == "latency-busy")
    spin = next(s for s in run.scenarios(1.0) if s.name == "latency-spin")
    assert busy.mode == "latency" and busy.busy_us > 0 and {"cykafka", "confluent"} <= set(busy.clients)
    assert spin.mode == "latency" and spin.spin and set(spin.clients) == {"cykafka", "confluent"}
    out = str(tmp_path)
    args = [sys.executable, os.path.join(BENCH, "run.py"), "--only", "latency-busy,latency-spin,consume-latency",
            "--quick", "--scale", "0.001", "--out", out]
    printed = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    report = open(os.path.join(out, "results.md")).read()
    assert report.strip() in printed
    for scenario, goal in ((busy, "1.5"), (spin, "1.0")):
        assert f"### Latency (send->ack): {scenario.title}" in report
        for p in ("p50", "p99"):
            assert f"| send->ack {p} vs confluent, {scenario.title} | " in report
            assert f"x (<= {goal}x) |" in report.split(f"| send->ack {p} vs confluent, {scenario.title} | ")[1][:30]
    assert "| confluent | " in report and "enable.idempotence=true" in report.split("### Targets")[0]
    assert "### Consumer end-to-end latency (send → received): 2,000 records at 10,000 records/s, the caller " \
        "spinning 100 µs in Python between polls" in report
    assert "| consumer end-to-end p50 vs confluent, 2,000 records" in report
    tansu = json.load(open(os.path.join(out, "runs.json")))["brokers"]["tansu"]
    for client, rounds in tansu["consume_latency"]["runs"].items():
        (result,) = rounds
        assert result["records"] == 2000 and result["p99_ms"] >= result["p50_ms"] > 0, client
    scenarios = tansu["scenarios"]
    for scenario in (busy, spin):
        runs = scenarios[scenario.name]
        assert set(runs) == set(scenario.clients)
        for client, results in runs.items():
            (result,) = results
            assert result["errors"] == 0 and result["busy_us"] == scenario.busy_us
            assert result["spin"] is scenario.spin
            assert result["p99_ms"] >= result["p50_ms"] > 0
            assert result["config"]["acks"] == "all"
            if run.missing_idempotence(client) is None:
                assert result["config"][IDEMPOTENCE_KEY[client]] is True
            else:  # aiokafka on Tansu (InitProducerId v0): said in the header's notes
                assert IDEMPOTENCE_KEY[client] not in result["config"] and run.missing_idempotence(client) in report


@pytest.mark.broker
@pytest.mark.parametrize(("client", "mode"), [("cykafka", "throughput"), ("cykafka-batch", "overload"),
                                              ("confluent", "latency")])
def test_workers_run_under_cprofile(run: Any, broker: EmbeddedBroker, tmp_path: object, client: str,
                                    mode: str) -> None:
    profile = os.path.join(str(tmp_path), "worker.prof")
    args = [sys.executable, "-m", "cProfile", "-o", profile, os.path.join(BENCH, "e2e_bench.py"), "--worker", client,
            "--bootstrap", broker.bootstrap_servers, "--records", "2000", "--mode", mode, "--rate", "5000",
            "--settings", json.dumps(run.peer_settings(client))]
    printed = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    result = json.loads(printed.strip().splitlines()[-1])
    assert result["client"] == client and result["records"] == 2000 and result["errors"] == 0
    assert run.peer_settings(client).items() <= result["config"].items()
    assert os.path.getsize(profile) > 0
    if mode == "latency":
        assert result["p99_ms"] >= result["p50_ms"] > 0
    if mode == "overload":
        assert "rss_growth_mib" in result


def test_the_consumer_bench_runs_every_client_with_crcs_checked(tmp_path: object) -> None:
    """bench/run.py --only consume: every consumer reads the topic with CRCs checked (librdkafka's default is off),
    and the report carries the consumer targets and a table per codec."""
    sys.path.insert(0, BENCH)
    try:
        import consume_bench
    finally:
        sys.path.remove(BENCH)
    assert all(s.get("check.crcs", s.get("check_crcs")) is True for s in consume_bench.SETTINGS.values())
    report = _run_only("consume", str(tmp_path))
    assert "| cykafka-batch, lz4 |" in report and "### Consume, 100 B values, none" in report
    assert "errors:" not in report  # every client read every record


def test_the_async_bench_runs_every_client(tmp_path: object) -> None:
    """bench/run.py --only async: cykafka.aio and aiokafka, producer and consumer, every record acknowledged or
    read, the loop lag reported while producing, the ratios."""
    report = _run_only("async", str(tmp_path))
    assert "### asyncio, 100 B values, lz4" in report and "| produce-cykafka / produce-aiokafka |" in report
    assert "| consume-cykafka / consume-aiokafka |" in report
    assert "| produce-cykafka-unkept / produce-aiokafka-unkept |" in report  # counted in the topic: no error
    assert "errors:" not in report and "nan" not in report


def test_the_async_bench_freezes_each_workers_start_up_objects_when_asked() -> None:
    """--gc-freeze reaches every worker (its objects after the first full collection are frozen); without it none
    are; the unkept idiom counts the records in the topic."""
    for freeze in (True, False):
        out = subprocess.run([sys.executable, os.path.join(BENCH, "async_bench.py"), "--records", "2000", "--rounds",
                              "1", "--clients", "produce-cykafka-unkept,produce-aiokafka-unkept", "--json"]
                             + (["--gc-freeze"] if freeze else []), capture_output=True, text=True, timeout=300,
                             check=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        assert result["gc_freeze"] is freeze
        for client in ("produce-cykafka-unkept", "produce-aiokafka-unkept"):
            (run,) = result["runs"][client]
            assert run["errors"] == 0 and run["records"] == 2000
            assert (run["frozen_objects"] > 0) is freeze


def test_the_asyncio_floor_bench_measures_each_step_per_future() -> None:
    """bench/asyncio_floor.py (asyncio's own cost per future, docs/asyncio.md): each step timed with the collector on
    and off; gather, a callback scheduled and run per future, costs more than resolving one, whether the futures are
    resolved before the gather or after it."""
    out = subprocess.run([sys.executable, os.path.join(BENCH, "asyncio_floor.py"), "--futures", "20000", "--rounds",
                          "1", "--json"], capture_output=True, text=True, timeout=120, check=True).stdout
    result = json.loads(out)
    assert result["futures"] == 20000 and set(result) == {"futures", "gc_on", "gc_off"}
    for row in (result["gc_on"], result["gc_off"]):
        assert set(row) == {"create_us", "resolve_us", "gather_us", "await_each_us", "gather_pending_us"}
        assert all(value > 0 for value in row.values())
        assert row["gather_us"] > row["resolve_us"] and row["gather_pending_us"] > row["resolve_us"]


def test_the_group_bench_times_both_joins_against_the_hold(tmp_path: object) -> None:
    """bench/run.py --only group: cykafka's and confluent-kafka's join times, each against Tansu's hold."""
    report = _run_only("group", str(tmp_path))
    assert "### Group join, session.timeout.ms 6000 (Tansu holds a join 3000 ms)" in report
    assert "| cykafka |" in report and "| confluent |" in report
    assert "errors:" not in report and "nan" not in report


@pytest.mark.slow
def test_the_compat_bench_runs_each_layer_beside_its_peer(tmp_path: object) -> None:
    """bench/run.py --only compat: each peer's code run with its own import and with cykafka.compat's, produce and
    consume, every record sent and read back (no error row), the ratio against the goal in the report."""
    report = _run_only("compat", str(tmp_path))
    raw = json.load(open(os.path.join(str(tmp_path), "runs.json")))["compat"]
    assert set(raw["runs"]) == {"confluent", "kafka-python", "aiokafka"}
    for peer, runs in raw["runs"].items():
        for key, results in runs.items():
            assert results and all(r.get("records") == raw["records"] for r in results), (peer, key, results)
    assert "### The compat layers beside their peers" in report and "errors:" not in report
    assert "| aiokafka | consume |" in report and "nan" not in report


@pytest.mark.slow
def test_the_rebalance_bench_times_joins_and_pauses(tmp_path: object) -> None:
    """bench/rebalance_bench.py, smoke size (the consumer protocol only: the classic one's joins take seconds more,
    the same code): on a Kafka node, cykafka and confluent-kafka groups, each run's four joins and the three first
    members' pause while the fourth joined, no error."""
    sys.path.insert(0, BENCH)
    try:
        import rebalance_bench
    finally:
        sys.path.remove(BENCH)
    args = [sys.executable, os.path.join(BENCH, "rebalance_bench.py"), "--rounds", "1", "--protocols", "consumer",
            "--settle-s", "0.5", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True, cwd=str(tmp_path))
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    report = rebalance_bench.table(raw)
    assert set(raw["runs"]) == {"cykafka consumer", "confluent consumer"}
    for key, runs in raw["runs"].items():
        for r in runs:
            assert "error" not in r and len(r["join_ms"]) == 4 and all(j > 0 for j in r["join_ms"]), (key, r)
            assert len(r["pause_ms"]) == 3 and all(p >= 0 for p in r["pause_ms"]), (key, r)
    assert "### Consumer groups on Apache Kafka" in report and "| cykafka consumer |" in report


@pytest.mark.slow
def test_the_txn_bench_runs_both_protocols_and_the_peer(tmp_path: object) -> None:
    """bench/run.py --only txn: cykafka on a transaction.version=2 and a =1 Kafka node, and confluent-kafka, each
    committing every transaction (no error row), the V2/V1 ratio and the ratio to the peer reported."""
    report = _run_only("txn", str(tmp_path))
    raw = json.load(open(os.path.join(str(tmp_path), "runs.json")))["txn"]
    assert set(raw["runs"]) == {"cykafka transaction.version=2", "cykafka transaction.version=1", "confluent"}
    for key, runs in raw["runs"].items():
        assert runs and all(r.get("transactions_per_s", 0) > 0 for r in runs), (key, runs)
    assert "### Small transactions" in report and "cykafka V2 / V1:" in report
    assert "cykafka V2 / confluent-kafka:" in report and "error" not in report


def _run_only(scenario: str, out: str) -> str:
    """bench/run.py --only scenario --quick, tiny: its report."""
    args = [sys.executable, os.path.join(BENCH, "run.py"), "--only", scenario, "--quick", "--scale", "0.1",
            "--out", out]
    subprocess.run(args, capture_output=True, text=True, timeout=600, check=True)
    return open(os.path.join(out, "results.md")).read()


@pytest.mark.slow
def test_the_java_comparison_runs_on_apache_kafka(tmp_path: object) -> None:
    """bench/run.py --only java --broker kafka, smoke size: Kafka's Java producer (per record, latency) and consumer
    beside cykafka and confluent-kafka on Apache Kafka, each in its own JVM with its CPU and warm-up reported; the
    goals against Java; Kafka's own ProducerPerformance / ConsumerPerformance. (--broker both runs the same code once
    more on Tansu: the suite's time is better spent elsewhere.)"""
    out = str(tmp_path)
    args = [sys.executable, os.path.join(BENCH, "run.py"), "--only", "java", "--broker", "kafka", "--quick", "--scale",
            "0.05", "--out", out]
    subprocess.run(args, capture_output=True, text=True, timeout=1200, check=True)
    report = open(os.path.join(out, "results.md")).read()
    raw = json.load(open(os.path.join(out, "runs.json")))["brokers"]
    assert set(raw) == {"kafka"}
    for broker, section in raw.items():
        for name in ("100B-none", "100B-lz4", "1KiB", "1KiB-lz4", "latency"):
            runs = section["scenarios"][name]
            assert set(runs) == {"cykafka", "java", "confluent"} | ({"cykafka-batch"} if name != "latency" else set())
            for client, results in runs.items():
                assert results[0]["errors"] == 0, (broker, name, client)
            (java,) = runs["java"]
            assert java["config"]["enable.idempotence"] == "true" and java["config"]["acks"] == "all"
            assert java["cpu_s"] > 0 and java["startup_s"] > 0
        for consumed in section["consume"]:
            assert all("error" not in r for runs in consumed["runs"].values() for r in runs), consumed
            assert consumed["runs"]["java"][0]["value_bytes_read"] == consumed["records"] * 100
        check = section["crosscheck"]
        assert check["producer"]["records"] == check["consumer"]["records"] == check["records"]
    assert report.count("### Goals against Kafka's Java clients (issue 29)") == 1
    assert "| send_batch records/s vs Java, 100B-lz4 |" in report and "| poll_batch, lz4 records/s vs Java |" in report
    assert report.count("### Cross-check: Kafka's own perf tools") == 1
    assert "### The Java client's JVM warm-up" in report and "nan" not in report.split("## On Tansu (embedded)")[0]


@pytest.mark.slow
def test_the_spark_jvm_connector_comparison(tmp_path: object) -> None:
    """bench/spark_bench.py --jvm, smoke size, on Apache Kafka and local[2] (the cluster and Tansu are the same code
    with another master or bootstrap): format("kafka") from Maven-fetched jars on the pinned pyspark beside
    format("cykafka") at-least-once and exactly-once and the write ceiling (a Python sink that only counts); every
    row counted back (the ceiling's by its writers), every read checked (exit 1 if not)."""
    args = [sys.executable, os.path.join(BENCH, "spark_bench.py"), "--jvm", "--broker", "kafka", "--masters", "local",
            "--rows", "2000", "--rounds", "1", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=1200, check=False, cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (result,) = json.loads(done.stdout.strip().splitlines()[-1])
    sys.path.insert(0, BENCH)
    try:
        import spark_jvm
    finally:
        sys.path.remove(BENCH)
    assert result["pyspark"] == spark_jvm.SPARK_VERSION and result["broker"] == "kafka"
    assert set(result["write_s"]) == set(result["stream_s"]) == {
        'format("kafka")', 'format("cykafka")', 'format("cykafka") exactly-once',
        "ceiling: Spark's Python write path alone (Arrow to a no-op writer, no Kafka)"}  # counted by its writers
    assert all(c == [[2000, 2000]] for c in result["write_counted"].values())
    assert all(c == [2000] for c in result["stream_counted"].values())
    assert all(a[0][0] == 2000 for a in result["read_answers"].values())
    assert '| kafka | local | batch read | format("kafka") |' in done.stdout


@pytest.mark.broker
def test_observability_overhead_scenario_runs(tmp_path: object) -> None:
    """bench/run.py --only observability at the smallest size: every variant (plain, instrumented then
    uninstrumented, tracing with the API only and with the SDK, every metrics export on) in every mode (send,
    send_batch, poll, poll_batch) measured, its table in the report (issue 30's overhead goal)."""
    out = str(tmp_path)
    args = [sys.executable, os.path.join(BENCH, "run.py"), "--only", "observability", "--quick", "--scale", "0.001",
            "--out", out]
    printed = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True).stdout
    assert "### Observability overhead" in printed
    result = json.load(open(os.path.join(out, "runs.json")))["observability"]
    assert set(result["runs"]) == {"send", "send_batch", "poll", "poll_batch"}
    for mode, by_variant in result["runs"].items():
        assert set(by_variant) == {"plain", "uninstr", "tracing-api", "tracing-sdk", "metrics"}
        for variant, [measured] in by_variant.items():
            assert measured.get("records") == result["records"] and measured["rate"] > 0, (mode, variant, measured)
        assert result["ratios"][mode]["plain"] == 1.0
