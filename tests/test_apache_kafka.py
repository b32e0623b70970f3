"""Apache Kafka itself: the launcher (tests/apache_kafka.py) and the Kafka 4.x protocol floor (KIP-896).

Kafka 4.0 removed old API versions. For each pinned broker version, every API the codec describes must share a version
with the broker, and the version cykafka negotiates (`negotiate_versions`, the transport's own choice) must lie in the
broker's range: nothing we send may fall below the broker's minimum.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from apache_kafka import NEWEST, OLDEST, KafkaCluster, metadata_node_ids

from cykafka.broker import _recv_exact
from cykafka.protocol import API_NAMES, SUPPORTED_VERSIONS, decode_response, encode_request
from cykafka.protocol.apis import (
    ALTER_SHARE_GROUP_OFFSETS,
    API_VERSIONS,
    DELETE_SHARE_GROUP_OFFSETS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    GET_TELEMETRY_SUBSCRIPTIONS,
    PUSH_TELEMETRY,
    SHARE_ACKNOWLEDGE,
    SHARE_FETCH,
    SHARE_GROUP_DESCRIBE,
    SHARE_GROUP_HEARTBEAT,
    negotiate_versions,
)

pytestmark = pytest.mark.slow

# APIs a Kafka 4.x line older than the one named does not speak in a version we do: what uses them says so at run
# time, typed (share groups: ShareGroupsUnsupportedError; Kafka 4.0/4.1 have only their early-access versions)
NEWER_THAN_OLDEST = {api.key: "4.2" for api in (SHARE_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE,
                                                 SHARE_GROUP_DESCRIBE, DESCRIBE_SHARE_GROUP_OFFSETS,
                                                 ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS)}
# APIs a broker advertises only when configured for them: KIP-714's, only with a ClientTelemetry plugin among its
# metric.reporters (test_telemetry.py starts one); absent, the producer's telemetry turns itself off
ONLY_WHEN_CONFIGURED = {GET_TELEMETRY_SUBSCRIPTIONS.key, PUSH_TELEMETRY.key}


def _api_versions(host: str, port: int) -> dict[str, Any]:
    frame = encode_request(API_VERSIONS.key, 3, 7, "cykafka-test",
                           {"client_software_name": "cykafka", "client_software_version": "test"})
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(frame)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        correlation_id, response = decode_response(API_VERSIONS.key, 3, _recv_exact(s, size))
    assert correlation_id == 7 and response["error_code"] == 0
    return response


@pytest.fixture(scope="module")
def oldest(apache_kafka: type[KafkaCluster]) -> Iterator[KafkaCluster]:
    with apache_kafka(1, version=OLDEST) as cluster:
        yield cluster


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_every_api_we_send_is_within_the_brokers_range(version: str, request: pytest.FixtureRequest) -> None:
    cluster = request.getfixturevalue("oldest" if version == OLDEST else "kafka_broker")
    assert cluster.version == version
    answer = _api_versions(cluster.host, cluster.port)
    ranges = {entry["api_key"]: (entry["min_version"], entry["max_version"]) for entry in answer["api_keys"]}
    chosen = negotiate_versions(answer["api_keys"])
    problems = []
    for key, (ours_min, ours_max) in sorted(SUPPORTED_VERSIONS.items()):
        name = API_NAMES[key]
        if ((key in NEWER_THAN_OLDEST and version.split(".")[:2] < NEWER_THAN_OLDEST[key].split("."))
                or (key in ONLY_WHEN_CONFIGURED and key not in ranges)):
            assert key not in chosen or ranges[key][0] <= chosen[key] <= ranges[key][1]
            continue
        if key not in ranges:
            problems.append(f"{name}: Kafka {version} does not speak it")
            continue
        low, high = ranges[key]
        if key not in chosen:
            problems.append(f"{name}: ours v{ours_min}-{ours_max}, Kafka {version} v{low}-{high}: nothing in common")
        elif not low <= chosen[key] <= high or not ours_min <= chosen[key] <= ours_max:
            problems.append(f"{name}: negotiated v{chosen[key]} outside Kafka {version}'s v{low}-{high}")
        elif ours_min < low:
            # we could speak lower versions than this broker accepts: fine only because negotiation never picks them
            assert chosen[key] >= low
    assert not problems, "\n".join(problems)
    print(f"Kafka {version}: {len(chosen)} APIs negotiated, e.g. "
          + ", ".join(f"{API_NAMES[k]} v{v}" for k, v in sorted(chosen.items())[:6]))


def test_the_launcher_waits_for_metadata_and_kills_by_pid(oldest: KafkaCluster) -> None:
    assert metadata_node_ids(oldest.host, oldest.port) == {1}
    node = oldest.node(1)
    pid = node.pid
    assert pid is not None and node.alive
    oldest.kill(1)
    assert not node.alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    oldest.restart(1)
    assert node.alive and node.pid != pid
    assert metadata_node_ids(oldest.host, oldest.port) == {1}
