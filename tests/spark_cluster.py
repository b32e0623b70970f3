"""A real multi-process Spark standalone cluster on 127.0.0.1 for the tests: a master and workers started with pip's
pyspark `sbin/spark-daemon.sh` (pip's pyspark has no start-master.sh), each in its own JVM, their Python workers
running this interpreter; stopped by the same script. `run_job(script)` runs a driver program against it in a
subprocess (a process has one SparkContext, and the tests' shared local session is already one)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# the first lines of a driver program run_job runs: a session on the cluster (PARAMS["master"]), bound to 127.0.0.1,
# format("cykafka") registered; `spark` and `sf` (pyspark.sql.functions) in scope
DRIVER_SESSION = """
from pyspark.sql import SparkSession, functions as sf
from cykafka.spark import register

spark = (SparkSession.builder.master(PARAMS["master"]).appName("cykafka-cluster-test")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false").config("spark.executor.memory", "512m").getOrCreate())
register(spark)
"""


class StandaloneCluster:
    def __init__(self, directory: Path, workers: int = 2) -> None:
        import pyspark

        self.home = Path(pyspark.__file__).parent
        self.directory = directory
        self.workers = workers
        self.port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.env = {**os.environ, "SPARK_HOME": str(self.home), "SPARK_LOG_DIR": str(directory / "logs"),
                    "SPARK_PID_DIR": str(directory / "pids"), "SPARK_WORKER_DIR": str(directory / "work"),
                    "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                    "PYSPARK_DRIVER_PYTHON": sys.executable}

    def _daemon(self, action: str, cls: str, instance: int, *args: str) -> None:
        subprocess.run(["bash", str(self.home / "sbin" / "spark-daemon.sh"), action, cls, str(instance), *args],
                       env=self.env, check=True, capture_output=True, timeout=120)

    def start(self) -> StandaloneCluster:
        self._daemon("start", "org.apache.spark.deploy.master.Master", 1, "--host", "127.0.0.1", "--port",
                     str(self.port), "--webui-port", str(_free_port()))
        for i in range(1, self.workers + 1):
            self._daemon("start", "org.apache.spark.deploy.worker.Worker", i, "--host", "127.0.0.1", "--cores", "1",
                         "--memory", "1g", "--webui-port", str(_free_port()), self.url)
        self._await_workers()
        return self

    def _await_workers(self, timeout_s: float = 120) -> None:
        """Until the master's log shows every worker registered (bounded)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            logs = "".join(p.read_text(errors="replace") for p in (self.directory / "logs").glob("*Master*.out"))
            if logs.count("Registering worker") >= self.workers:
                return
            time.sleep(0.5)
        raise TimeoutError(f"{self.workers} Spark workers did not register with {self.url} in {timeout_s}s")

    def stop(self) -> None:
        for i in range(1, self.workers + 1):
            self._daemon("stop", "org.apache.spark.deploy.worker.Worker", i)
        self._daemon("stop", "org.apache.spark.deploy.master.Master", 1)

    def run_job(self, script: str, **params: Any) -> dict[str, Any]:
        """Runs `script` (Python source; `params` and `master` are in scope as PARAMS) as a driver against this
        cluster; its last stdout line is JSON, returned."""
        program = f"PARAMS = {json.dumps({**params, 'master': self.url})!r}\nimport json\nPARAMS = json.loads(PARAMS)\n"
        done = subprocess.run([sys.executable, "-c", program + script], env=self.env, cwd=self.directory,
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise AssertionError(f"driver failed ({done.returncode}): {done.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result
