"""What bench/spark_bench.py --jvm needs beside format("cykafka"): Spark's own Kafka connector and a pyspark it runs on.

- The connector: `spark-sql-kafka-0-10_2.13` with `spark-token-provider-kafka-0-10_2.13`, its `kafka-clients` and
  `commons-pool2` (the jars pyspark's own jars/ lacks), fetched by `mvn` from bench/java/spark-kafka-pom.xml into
  `$CYKAFKA_JVM_CACHE/spark-kafka-V/lib` once, handed to Spark through `spark.jars`.
- The pyspark: the connector has to be exactly the running Spark's version, and Maven Central serves it up to
  SPARK_VERSION (4.2.0; not 4.2.1 nor 4.3.0, the project's own pyspark). So the JVM comparison runs on a pinned
  pyspark: a venv under the same cache with `pyspark==SPARK_VERSION` from PyPI, whose `.pth` puts this environment's
  site-packages after its own (the same cykafka build, pyarrow, pandas, confluent-kafka; only pyspark and py4j are
  its own). Both format("kafka") and format("cykafka") run in it, so they share one Spark. The project's pyspark
  (the tests', the other benches') is not touched.

    python bench/spark_jvm.py     # fetch and build both (once); prints the pinned python and the jars
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
POM = HERE / "java" / "spark-kafka-pom.xml"
SPARK_VERSION = "4.2.0"  # the newest spark-sql-kafka-0-10_2.13 on Maven Central
CONNECTOR_ARTIFACTS = ("spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13", "kafka-clients",
                       "commons-pool2")


def cache_root() -> Path:
    return Path(os.environ.get("CYKAFKA_JVM_CACHE") or Path.home() / ".cache" / "cykafka" / "jvm")


def _once(target: Path, build: callable) -> None:  # type: ignore[valid-type]
    """Runs build() into target unless its .complete marker is there; concurrent callers wait on a file lock."""
    done = target / ".complete"
    if done.exists():
        return
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            build()
            done.touch()


def connector_jars(version: str = SPARK_VERSION) -> list[Path]:
    """The connector's jars for Spark `version` (fetched by mvn the first time)."""
    target = cache_root() / f"spark-kafka-{version}"
    lib = target / "lib"

    def fetch() -> None:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("Spark's Kafka connector comes from Maven Central through `mvn`, not on PATH")
        shutil.rmtree(lib, ignore_errors=True)
        command = [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", "-DincludeScope=runtime",
                   f"-Dspark.version={version}", f"-DincludeArtifactIds={','.join(CONNECTOR_ARTIFACTS)}",
                   f"-DoutputDirectory={lib}"]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
        if done.returncode != 0 or not any(lib.glob(f"spark-sql-kafka-0-10_2.13-{version}.jar")):
            raise RuntimeError(f"mvn could not fetch spark-sql-kafka {version}:\n{done.stdout[-3000:]}"
                               f"{done.stderr[-3000:]}")

    _once(target, fetch)
    jars = sorted(lib.glob("*.jar"))
    assert {j.name.rsplit("-", 1)[0] for j in jars} == set(CONNECTOR_ARTIFACTS), jars
    return jars


def pinned_python(version: str = SPARK_VERSION) -> str:
    """A Python with pyspark `version` first on its path and this environment's packages after it: one venv per
    environment (its `.pth` names this environment's site-packages, so another checkout's venv would import that
    checkout's cykafka)."""
    parent = hashlib.sha256(sys.prefix.encode()).hexdigest()[:10]
    target = cache_root() / f"pyspark-{version}-venv-{parent}"
    python = target / "bin" / "python"

    def build() -> None:
        shutil.rmtree(target / "bin", ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(target)], check=True, timeout=300)
        # pyspark first, before the .pth: pip must not see (nor touch) this environment's pyspark
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        f"pyspark=={version}"], check=True, timeout=1800)
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        Path(site, "cykafka-bench-parent-env.pth").write_text("".join(f"{p}\n" for p in ours))
        found = subprocess.run([str(python), "-c", "import pyspark, cykafka; print(pyspark.__version__)"],
                               capture_output=True, text=True, check=True, cwd="/").stdout.strip()
        if found != version:
            raise RuntimeError(f"the pinned venv imports pyspark {found}, not {version}")

    _once(target, build)
    return str(python)


if __name__ == "__main__":
    print(pinned_python())
    print("\n".join(str(jar) for jar in connector_jars()))
