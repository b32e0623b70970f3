"""Apache Kafka, the reference broker, for tests, benches and development: jars from Maven Central, KRaft on 127.0.0.1.

What this module owns:
- `kafka_lib(version)`: one flat classpath per Kafka version (`jvm/pom.xml` through `mvn dependency:copy-dependencies`),
  cached under `$CYKAFKA_JVM_CACHE` (default `~/.cache/cykafka/jvm`) and fetched once, under a file lock;
- `KafkaCluster`: formats KRaft storage (`kafka.tools.StorageTool`, SCRAM users and feature levels at format time) and
  starts `kafka.Kafka` processes on free 127.0.0.1 ports:
  * one combined broker+controller node (`nodes=1`); with `security=True` it also listens on SSL (a client
    certificate, when given, names the principal: `User:CN=cykafka-client`), SASL_PLAINTEXT and SASL_SSL (PLAIN,
    SCRAM-SHA-256, SCRAM-SHA-512; users `admin`, a super user, and `alice`); `StandardAuthorizer` with
    `allow.everyone.if.no.acl.found`: a resource without ACLs is open to every principal (the PLAINTEXT listener's
    ANONYMOUS too), one with ACLs only to the principals they allow; SCRAM-SHA-512 sessions on SASL_SSL last
    `REAUTH_MS` (KIP-368 re-authentication);
  * a replicated cluster (`nodes=3`): static quorum (`controller.quorum.voters`), every node broker and controller,
    default replication factor 3, `min.insync.replicas` 2;
  readiness is a Metadata answer listing every node (never a log line); every JVM dies by its pid on `stop()`, at
  interpreter exit and with its parent (PR_SET_PDEATHSIG);
- `python tests/apache_kafka.py [--nodes 3] [--version V] [--security]` (`bash scripts/kafka.sh`): one by hand.

Heap: 1 GiB for one node, 768 MiB each for three (2 cores, 24 GiB). Logs go to the cluster's directory
(`node-N/server.log`, WARN and above unless `log_level=` says otherwise; `loggers={"kafka.request.logger": "DEBUG"}`
logs every request with its API version, a way to prove what a client sent).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cykafka.broker import _die_with_parent, _recv_exact, free_port
from cykafka.errors import BrokerNotFoundError, KafkaTimeoutError, ProtocolError
from cykafka.protocol import decode_response, encode_request
from cykafka.protocol.apis import METADATA

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "jvm" / "pom.xml"

OLDEST = "4.0.2"  # the oldest 4.x line we support
NEWEST = "4.4.0"  # the newest that resolves on Maven Central (jvm/pom.xml's default)
KAFKA_VERSIONS = (OLDEST, NEWEST)

# SASL users (PLAIN in the listeners' JAAS config, SCRAM added at format time); admin is a super user
USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
CLIENT_PRINCIPAL = "User:CN=cykafka-client"  # tests/security_peers.make_pki's client certificate
SUPER_USERS = ("User:admin",)
REAUTH_MS = 6000  # the session lifetime of SCRAM-SHA-512 on SASL_SSL (listener- and mechanism-prefixed config)


def cache_root() -> Path:
    return Path(os.environ.get("CYKAFKA_JVM_CACHE") or Path.home() / ".cache" / "cykafka" / "jvm")


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not os.access(found, os.X_OK):
        raise BrokerNotFoundError("Apache Kafka needs Java 17+: no `java` on PATH (or JAVA_HOME)")
    return found


def kafka_lib(version: str = NEWEST) -> Path:
    """The directory of every jar Kafka `version` runs on (broker, tools, clients, log4j2 + its slf4j binding),
    fetched by Maven into the cache the first time; concurrent callers wait on a file lock."""
    target = cache_root() / f"kafka-{version}"
    lib = target / "lib"
    done = target / ".complete"
    if done.exists():
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerNotFoundError("Apache Kafka's jars come from Maven Central through `mvn`, which is not on PATH")
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return lib
        shutil.rmtree(lib, ignore_errors=True)
        command = [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", "-DincludeScope=runtime",
                   f"-Dkafka.version={version}", f"-DoutputDirectory={lib}"]
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
        if result.returncode != 0 or not any(lib.glob(f"kafka_2.13-{version}.jar")):
            raise BrokerNotFoundError(f"mvn could not fetch Apache Kafka {version}:\n{result.stdout[-3000:]}"
                                      f"{result.stderr[-3000:]}")
        done.touch()
    return lib


def random_cluster_id() -> str:
    """What `StorageTool random-uuid` prints (Kafka's Uuid: base64url, 22 characters, never starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def metadata_node_ids(host: str, port: int, timeout_s: float = 2.0) -> set[int]:
    """The node ids a Metadata v12 answer from host:port lists (empty if it does not answer)."""
    frame = encode_request(METADATA.key, 12, 1, "cykafka-launcher", {"topics": [], "allow_auto_topic_creation": False})
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(frame)
            size = struct.unpack(">i", _recv_exact(s, 4))[0]
            _, response = decode_response(METADATA.key, 12, _recv_exact(s, size))
    except (OSError, ProtocolError):
        return set()
    return {broker["node_id"] for broker in response["brokers"]}


@dataclass
class KafkaNode:
    node_id: int
    directory: Path
    ports: dict[str, int]  # listener name -> port (PLAINTEXT, CONTROLLER; SSL, SASL_PLAINTEXT, SASL_SSL with security)
    process: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = field(default=None, repr=False)
    down: bool = False  # killed or stopped on purpose (kill, stop_node): not waited for until restarted

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.ports['PLAINTEXT']}"


class KafkaCluster:
    """Apache Kafka in KRaft mode on 127.0.0.1: `nodes` combined broker+controller processes. A context manager, or
    start()/stop(); kill(node_id) SIGKILLs one node, restart(node_id) brings it back on its ports and data."""

    def __init__(
        self,
        nodes: int = 1,
        *,
        version: str = NEWEST,
        security: bool = False,
        features: Mapping[str, int] | None = None,
        broker_config: Mapping[str, str] | None = None,
        node_config: Mapping[int, Mapping[str, str]] | None = None,
        heap_mb: int | None = None,
        directory: str | Path | None = None,
        log_level: str = "WARN",
        loggers: Mapping[str, str] | None = None,
        classpath: Iterable[str | Path] = (),
    ) -> None:
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        if security and nodes != 1:
            raise ValueError("security listeners are set up on the single-node cluster only")
        self.version = version
        self.security = security
        self.features = dict(features or {})
        self.broker_config = dict(broker_config or {})
        # node id -> keys for that node only (over broker_config), e.g. {1: {"broker.rack": "a"}, 2: {...}}
        self.node_config = {node_id: dict(keys) for node_id, keys in (node_config or {}).items()}
        self.heap_mb = heap_mb if heap_mb is not None else (1024 if nodes == 1 else 768)
        self.log_level = log_level
        self.loggers = dict(loggers or {})  # logger name -> level, e.g. {"kafka.request.logger": "DEBUG"}
        self.classpath = [str(entry) for entry in classpath]  # after Kafka's jars: a test's broker plugins
        self._own_directory = directory is None
        self.directory = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="cykafka-kafka-"))
        names = ["PLAINTEXT", "CONTROLLER"] + (["SSL", "SASL_PLAINTEXT", "SASL_SSL"] if security else [])
        self.nodes = [KafkaNode(i + 1, self.directory / f"node-{i + 1}", {name: free_port(HOST) for name in names})
                      for i in range(nodes)]
        self.cluster_id = random_cluster_id()
        self.pki: Any = None  # security_peers.Pki when security=True
        self._started = False

    # --- addresses ---------------------------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """PLAINTEXT bootstrap list of every node."""
        return ",".join(node.bootstrap for node in self.nodes)

    def listener(self, name: str) -> str:
        """Bootstrap list for listener `name` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)."""
        return ",".join(f"{HOST}:{node.ports[name]}" for node in self.nodes)

    @property
    def host(self) -> str:
        return HOST

    @property
    def port(self) -> int:
        return self.nodes[0].ports["PLAINTEXT"]

    @property
    def pid(self) -> int | None:
        """The first node's pid (the single node's, for tests that pause the broker with SIGSTOP)."""
        return self.nodes[0].pid

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id - 1]

    def security_config(self, listener: str, *, user: str = "admin", mechanism: str = "PLAIN",
                        client_certificate: bool = False) -> dict[str, Any]:
        """Client config keys for `listener`, as a user would write them."""
        config: dict[str, Any] = {"bootstrap.servers": self.listener(listener), "security.protocol": listener}
        if listener in ("SSL", "SASL_SSL"):
            config["ssl.ca.location"] = str(self.pki.ca_pem)
            if client_certificate:
                config.update({"ssl.certificate.location": str(self.pki.client_cert_pem),
                               "ssl.key.location": str(self.pki.client_key_pem)})
                from security_peers import CLIENT_KEY_PASSWORD
                config["ssl.key.password"] = CLIENT_KEY_PASSWORD
        if listener.startswith("SASL"):
            config.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": USERS[user]})
        return config

    # --- configuration -----------------------------------------------------------------------------------------

    def _properties(self, node: KafkaNode) -> dict[str, str]:
        many = len(self.nodes) > 1
        listeners = {name: f"{name}://{HOST}:{port}" for name, port in node.ports.items()}
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listeners": ",".join(listeners.values()),
            "advertised.listeners": ",".join(v for k, v in listeners.items() if k != "CONTROLLER"),
            "listener.security.protocol.map": ",".join(f"{name}:{'PLAINTEXT' if name == 'CONTROLLER' else name}"
                                                       for name in node.ports),
            "log.dirs": str(node.directory / "data"),
            "num.partitions": "4",  # as Tansu's auto-created topics
            "auto.create.topics.enable": "true",
            "default.replication.factor": "3" if many else "1",
            "min.insync.replicas": "2" if many else "1",
            "offsets.topic.replication.factor": "3" if many else "1",
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": "3" if many else "1",
            "transaction.state.log.min.isr": "2" if many else "1",
            "transaction.state.log.num.partitions": "5",
            "share.coordinator.state.topic.replication.factor": "3" if many else "1",
            "share.coordinator.state.topic.min.isr": "2" if many else "1",
            "group.initial.rebalance.delay.ms": "0",
            "group.min.session.timeout.ms": "1000",  # tests use short session timeouts
            # consumer-protocol groups (KIP-848): the broker sets their heartbeat and session; short, as above
            "group.consumer.heartbeat.interval.ms": "1000",
            "group.consumer.min.heartbeat.interval.ms": "500",
            "group.consumer.session.timeout.ms": "6000",
            "group.consumer.min.session.timeout.ms": "3000",
            "unclean.leader.election.enable": "false",
            "log.segment.bytes": str(64 * 1024 * 1024),
            "log.retention.ms": "-1",  # tests write records with timestamps years old: time retention would delete them
            "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
            "num.network.threads": "2",
            "num.io.threads": "4",
        }
        if many:
            props["controller.quorum.voters"] = ",".join(f"{n.node_id}@{HOST}:{n.ports['CONTROLLER']}"
                                                         for n in self.nodes)
        else:
            props["controller.quorum.bootstrap.servers"] = f"{HOST}:{node.ports['CONTROLLER']}"
        if self.security:
            props.update(self._security_properties(node))
        props.update(self.broker_config)
        props.update(self.node_config.get(node.node_id, {}))
        return props

    def _security_properties(self, node: KafkaNode) -> dict[str, str]:
        assert self.pki is not None
        keystore = node.directory / "server-keystore.pem"
        props = {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": ";".join(SUPER_USERS),
            "allow.everyone.if.no.acl.found": "true",
            "listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms": str(REAUTH_MS),
            "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.pki.ca_pem),
            "ssl.client.auth": "requested",  # a client certificate, when given, names the principal (mTLS)
        }
        users = " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
        for listener in ("sasl_plaintext", "sasl_ssl"):
            prefix = f"listener.name.{listener}"
            props[f"{prefix}.plain.sasl.jaas.config"] = (
                'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                f'password="{USERS["admin"]}" {users};')
            for mechanism in SCRAM_MECHANISMS:
                props[f"{prefix}.{mechanism.lower()}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;")
        return props

    def _write_security_files(self) -> None:
        from security_peers import make_pki

        self.pki = make_pki(self.directory)
        # Kafka's PEM key store: the PKCS#8 key (unencrypted: Java 17 cannot read cryptography's PBES2), then the chain
        chain = self.pki.server_key_pem.read_bytes() + self.pki.server_cert_pem.read_bytes()
        for node in self.nodes:
            (node.directory / "server-keystore.pem").write_bytes(chain)

    def _write_log4j(self, node: KafkaNode) -> Path:
        path = node.directory / "log4j2.properties"
        path.write_text(
            "status = error\n"
            "appender.file.type = File\n"
            "appender.file.name = FILE\n"
            f"appender.file.fileName = {node.directory / 'server.log'}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            f"rootLogger.level = {self.log_level}\n"
            "rootLogger.appenderRef.file.ref = FILE\n"
            + "".join(f"logger.l{i}.name = {name}\nlogger.l{i}.level = {level}\n"
                      for i, (name, level) in enumerate(self.loggers.items()))
        )
        return path

    def _java(self, node: KafkaNode, *args: str, heap_mb: int) -> list[str]:
        return [java_binary(), f"-Xmx{heap_mb}m", f"-Xms{min(heap_mb, 256)}m", "-XX:+UseG1GC",
                "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
                "-cp", ":".join([str(kafka_lib(self.version) / "*"), *self.classpath]), *args]

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def start(self, timeout_s: float = 180.0) -> KafkaCluster:
        if self._started:
            return self
        kafka_lib(self.version)  # fetch before any clock runs
        for node in self.nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            self._write_log4j(node)
        if self.security:
            self._write_security_files()
        atexit.register(self.stop)
        self._started = True
        try:
            self._format()
            for node in self.nodes:
                self._launch(node)
            self.wait_ready(timeout_s)
        except BaseException:
            self.stop(keep_directory=True)
            raise
        return self

    def _format(self) -> None:
        formats = []
        for node in self.nodes:
            props = node.directory / "server.properties"
            props.write_text("".join(f"{k}={v}\n" for k, v in self._properties(node).items()))
            args = ["kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(props), "--ignore-formatted"]
            if len(self.nodes) == 1:
                args.append("--standalone")
            for name, level in self.features.items():
                args += ["--feature", f"{name}={level}"]
            if self.security:
                for mechanism in SCRAM_MECHANISMS:
                    for user, password in USERS.items():
                        args += ["--add-scram", f'{mechanism}=[name="{user}",password="{password}"]']
            out = open(node.directory / "format.log", "wb")
            formats.append((node, out, subprocess.Popen(self._java(node, *args, heap_mb=256), stdout=out,
                                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                         preexec_fn=_die_with_parent)))
        for node, out, process in formats:  # in parallel: each is a JVM start
            code = process.wait(120)
            out.close()
            if code != 0:
                raise BrokerNotFoundError(f"Kafka StorageTool format failed for node {node.node_id} (exit {code}): "
                                          f"{(node.directory / 'format.log').read_text()[-2000:]}")

    def _launch(self, node: KafkaNode) -> None:
        node.log = open(node.directory / "stdout.log", "ab")
        node.down = False
        node.process = subprocess.Popen(
            self._java(node, "kafka.Kafka", str(node.directory / "server.properties"), heap_mb=self.heap_mb),
            stdin=subprocess.DEVNULL, stdout=node.log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)

    def wait_ready(self, timeout_s: float = 120.0, nodes: Iterable[KafkaNode] | None = None) -> None:
        """Until every running node answers Metadata listing every running node."""
        deadline = time.monotonic() + timeout_s
        while True:
            running = [node for node in (nodes or self.nodes) if node.process is not None and not node.down]
            for node in running:
                if not node.alive:
                    raise BrokerNotFoundError(f"Kafka node {node.node_id} exited with {node.process.returncode}; "
                                              f"logs: {node.directory}")
            wanted = {node.node_id for node in self.nodes if node.alive}
            if all(wanted <= metadata_node_ids(HOST, node.ports["PLAINTEXT"]) for node in running):
                return
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"Kafka nodes {sorted(wanted)} not all ready in {timeout_s}s; logs: "
                                        f"{self.directory}")
            time.sleep(0.2)

    def kill(self, node_id: int) -> None:
        """SIGKILL node `node_id` (its data stays for restart)."""
        node = self.node(node_id)
        node.down = True
        if node.process is not None and node.process.poll() is None:
            node.process.send_signal(signal.SIGKILL)
            node.process.wait(30)
        self._close_log(node)

    def stop_node(self, node_id: int, timeout_s: float = 30.0) -> None:
        """Controlled shutdown of node `node_id` (SIGTERM; SIGKILL after timeout_s)."""
        node = self.node(node_id)
        node.down = True
        if node.process is not None and node.process.poll() is None:
            node.process.terminate()
            try:
                node.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(30)
        self._close_log(node)

    def restart(self, node_id: int, timeout_s: float = 120.0) -> None:
        node = self.node(node_id)
        if node.alive:
            self.kill(node_id)
        self._launch(node)
        self.wait_ready(timeout_s)

    @staticmethod
    def _close_log(node: KafkaNode) -> None:
        if node.log is not None:
            node.log.close()
            node.log = None

    def stop(self, keep_directory: bool = False) -> None:
        """Kill every node by pid; remove the directory unless keep_directory or CYKAFKA_KEEP_BROKER_LOG=1."""
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    node.process.wait(30)
            self._close_log(node)
        atexit.unregister(self.stop)
        self._started = False
        keep = keep_directory or os.environ.get("CYKAFKA_KEEP_BROKER_LOG", "") not in ("", "0")
        if self._own_directory and not keep:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/kafka.sh",
        description="Run Apache Kafka (KRaft, jars from Maven Central) on 127.0.0.1 until Ctrl-C.")
    parser.add_argument("--nodes", type=int, default=1, help="1 (default) or 3: RF 3, min.insync.replicas 2")
    parser.add_argument("--version", default=NEWEST, help=f"Kafka version (tested: {', '.join(KAFKA_VERSIONS)})")
    parser.add_argument("--security", action="store_true",
                        help="single node: also SSL, SASL_PLAINTEXT, SASL_SSL listeners, users and an authorizer")
    parser.add_argument("--feature", action="append", default=[], metavar="NAME=LEVEL",
                        help="a feature level at format time, e.g. transaction.version=1 (repeatable)")
    parser.add_argument("--log-level", default="INFO", help="the brokers' log level (default INFO)")
    args = parser.parse_args(argv)
    features = {}
    for item in args.feature:
        name, _, level = item.partition("=")
        features[name] = int(level)
    cluster = KafkaCluster(args.nodes, version=args.version, security=args.security, features=features,
                           log_level=args.log_level)
    started = time.monotonic()
    cluster.start()
    print(f"Apache Kafka {args.version}, {args.nodes} node(s), ready in {time.monotonic() - started:.1f} s")
    print(f"  bootstrap.servers={cluster.bootstrap_servers}")
    if args.security:
        for name in ("SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            print(f"  {name}: {cluster.listener(name)}")
        print(f"  users: {', '.join(f'{u}/{p}' for u, p in USERS.items())} (PLAIN and SCRAM); CA: {cluster.pki.ca_pem}")
    for node in cluster.nodes:
        print(f"  node {node.node_id}: pid {node.pid}, log {node.directory / 'server.log'}")
    try:
        while all(node.alive for node in cluster.nodes):
            time.sleep(1)
        print("a node exited; stopping", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(main())
