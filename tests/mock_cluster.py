"""librdkafka's mock cluster, driven through its C API (rdkafka_mock.h) with ctypes: the brokers of confluent-kafka's
bundled librdkafka, plus the controls its Python package does not expose (leaders, brokers down, injected errors)."""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Sequence

_RD_KAFKA_PRODUCER = 0


def _load() -> ctypes.CDLL:
    import confluent_kafka

    libs = os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs")
    found = glob.glob(os.path.join(libs, "librdkafka*.so*"))
    if not found:
        raise RuntimeError(f"no librdkafka in {libs} (confluent-kafka installed from its manylinux wheel?)")
    lib = ctypes.CDLL(found[0])
    p, s, i32, errors = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int)
    for name, restype, argtypes in [
        ("rd_kafka_conf_new", p, []),
        ("rd_kafka_conf_set", ctypes.c_int, [p, s, s, s, ctypes.c_size_t]),
        ("rd_kafka_new", p, [ctypes.c_int, p, s, ctypes.c_size_t]),
        ("rd_kafka_destroy", None, [p]),
        ("rd_kafka_mock_cluster_new", p, [p, ctypes.c_int]),
        ("rd_kafka_mock_cluster_destroy", None, [p]),
        ("rd_kafka_mock_cluster_bootstraps", s, [p]),
        ("rd_kafka_mock_topic_create", ctypes.c_int, [p, s, ctypes.c_int, ctypes.c_int]),
        ("rd_kafka_mock_partition_set_leader", ctypes.c_int, [p, s, i32, i32]),
        ("rd_kafka_mock_broker_set_down", ctypes.c_int, [p, i32]),
        ("rd_kafka_mock_broker_set_up", ctypes.c_int, [p, i32]),
        ("rd_kafka_mock_broker_set_rtt", ctypes.c_int, [p, i32, ctypes.c_int]),
        ("rd_kafka_mock_push_request_errors_array", None, [p, ctypes.c_int16, ctypes.c_size_t, errors]),
        ("rd_kafka_mock_topic_delete", ctypes.c_int, [p, s]),
        ("rd_kafka_mock_set_apiversion", ctypes.c_int, [p, ctypes.c_int16, ctypes.c_int16, ctypes.c_int16]),
        ("rd_kafka_mock_group_initial_rebalance_delay_ms", None, [p, i32]),
    ]:
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


class MockCluster:
    """`broker_count` mock brokers (ids 1..n) on 127.0.0.1, alive until `close()`."""

    def __init__(self, broker_count: int = 3) -> None:
        self._lib = _load()
        errstr = ctypes.create_string_buffer(512)
        conf = self._lib.rd_kafka_conf_new()
        self._lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))
        self._rk = self._lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not self._rk:
            raise RuntimeError(errstr.value.decode())
        self._cluster = self._lib.rd_kafka_mock_cluster_new(self._rk, broker_count)
        self.bootstrap_servers: str = self._lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()

    def _check(self, err: int, what: str) -> None:
        if err:
            raise RuntimeError(f"mock cluster: {what} failed with error code {err}")

    def create_topic(self, topic: str, leaders: Sequence[int], replication_factor: int = 3) -> None:
        """A topic with one partition per entry of `leaders`, partition i led by broker leaders[i]."""
        self._check(self._lib.rd_kafka_mock_topic_create(self._cluster, topic.encode(), len(leaders),
                                                         replication_factor), f"create {topic}")
        for partition, broker_id in enumerate(leaders):
            self.set_leader(topic, partition, broker_id)

    def recreate_topic(self, topic: str, leaders: Sequence[int], replication_factor: int = 3) -> None:
        """Deletes the topic and creates it again with len(leaders) partitions, empty: the mock has no
        CreatePartitions and no control that adds partitions, so this is how a topic grows here."""
        self._check(self._lib.rd_kafka_mock_topic_delete(self._cluster, topic.encode()), f"delete {topic}")
        self.create_topic(topic, leaders, replication_factor)

    def serve_classic_groups(self, initial_rebalance_delay_ms: int = 100) -> None:
        """Makes the mock's classic group coordinator usable: it advertises JoinGroup v6, SyncGroup v4 and LeaveGroup
        v3-v4 but reads their arrays as pre-flexible int32 counts (JoinGroup, SyncGroup) or not at all (LeaveGroup's
        members), so a client that picks those versions is disconnected; capped to the versions it reads right
        (librdkafka's own consumer sends older ones). Its group.initial.rebalance.delay.ms (3000) is shortened."""
        from cykafka.protocol import apis

        for api_key, max_version in ((apis.JOIN_GROUP.key, 5), (apis.SYNC_GROUP.key, 3), (apis.LEAVE_GROUP.key, 2)):
            self._check(self._lib.rd_kafka_mock_set_apiversion(self._cluster, api_key, 0, max_version),
                        f"cap api {api_key} at v{max_version}")
        self._lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._cluster, initial_rebalance_delay_ms)

    def set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Moves the partition's leadership (and bumps its leader epoch); the old leader answers
        NOT_LEADER_OR_FOLLOWER from now on."""
        self._check(self._lib.rd_kafka_mock_partition_set_leader(self._cluster, topic.encode(), partition, broker_id),
                    f"set leader of {topic}-{partition}")

    def set_broker_up(self, broker_id: int, up: bool) -> None:
        """Down: the broker drops its connections and refuses new ones."""
        set_state = self._lib.rd_kafka_mock_broker_set_up if up else self._lib.rd_kafka_mock_broker_set_down
        self._check(set_state(self._cluster, broker_id), f"set broker {broker_id} {'up' if up else 'down'}")

    def set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        """The broker's answers are held rtt_ms (requests in flight that long; 0: at once)."""
        self._check(self._lib.rd_kafka_mock_broker_set_rtt(self._cluster, broker_id, rtt_ms),
                    f"set broker {broker_id}'s rtt")

    def push_request_errors(self, api_key: int, error_codes: Sequence[int]) -> None:
        """The next len(error_codes) requests of `api_key`, on any broker, are answered with these errors in turn."""
        codes = (ctypes.c_int * len(error_codes))(*error_codes)
        self._lib.rd_kafka_mock_push_request_errors_array(self._cluster, api_key, len(error_codes), codes)

    def close(self) -> None:
        if self._rk:
            self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None
