"""Security against Apache Kafka's own listeners (the session's `kafka_broker`: SSL, SASL_PLAINTEXT, SASL_SSL, users
admin and alice, StandardAuthorizer): TLS with server verification and client certificates, SASL PLAIN / SCRAM-SHA-256 /
SCRAM-SHA-512, re-authentication when the session lifetime ends (KIP-368), and the authorizer's answers as typed
errors: a topic without WRITE fails its records at once while the producer goes on with its other topics, a group
without READ, a transactional id without WRITE, a wrong password within request.timeout.ms.
ACLs are created with confluent-kafka's AdminClient (an independent client)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from apache_kafka import CLIENT_PRINCIPAL, REAUTH_MS

from cykafka import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    Admin,
    AuthenticationError,
    Consumer,
    GroupAuthorizationError,
    PatternType,
    Producer,
    ResourcePattern,
    ResourceType,
    TopicAuthorizationError,
    TopicPartition,
    TransactionalIdAuthorizationError,
)
from cykafka.errors import SslAuthenticationError
from cykafka.verify import read_back

pytestmark = pytest.mark.slow

confluent_admin = pytest.importorskip("confluent_kafka.admin")


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _acls(kafka: Any, resource_type: ResourceType, name: str, principal: str, permission: AclPermissionType,
          *operations: AclOperation) -> list[AclBinding]:
    """Creates the ACLs (as admin, a super user, with Admin.create_acls) and returns them."""
    bindings = [AclBinding(ResourcePattern(resource_type, name, PatternType.LITERAL),
                           AccessControlEntry(principal, "*", operation, permission)) for operation in operations]
    with Admin(kafka.security_config("SASL_PLAINTEXT", user="admin")) as admin:
        for result in admin.create_acls(bindings, timeout_ms=30000).values():
            result.result()
    time.sleep(0.5)  # the authorizer applies the ACLs from the metadata log
    return bindings


def _allow(kafka: Any, resource_type: ResourceType, name: str, principal: str,
           *operations: AclOperation) -> list[AclBinding]:
    """ACLs allowing `principal` `operations` on one resource: from then on only principals allowed there may use
    it (allow.everyone.if.no.acl.found covers resources without ACLs only)."""
    return _acls(kafka, resource_type, name, principal, AclPermissionType.ALLOW, *operations)


def _deny(kafka: Any, resource_type: ResourceType, name: str, principal: str,
          operation: AclOperation) -> list[AclBinding]:
    return _acls(kafka, resource_type, name, principal, AclPermissionType.DENY, operation)


def _produce_and_read_back(kafka: Any, config: dict[str, Any], records: int = 200) -> None:
    topic = _name("secure")
    with Producer(config) as producer:
        futures = [producer.send(topic, b"v%d" % i, key=b"k%d" % i) for i in range(records)]
        producer.flush(30)
    assert all(f.exception(0) is None for f in futures)
    back = read_back(kafka.bootstrap_servers, topic)
    assert sorted(r.value for r in back) == sorted(b"v%d" % i for i in range(records))


# -- TLS ----------------------------------------------------------------------------------------------------------

def test_tls_verifies_the_brokers_certificate(kafka_broker: Any) -> None:
    _produce_and_read_back(kafka_broker, kafka_broker.security_config("SSL"))
    with pytest.raises(SslAuthenticationError):
        with Producer({**kafka_broker.security_config("SSL"), "ssl.ca.location": str(kafka_broker.pki.other_ca_pem),
                       "max.block.ms": 10000}) as untrusting:
            untrusting.partitions_for("anything")


def test_mutual_tls_names_the_principal_by_the_client_certificate(kafka_broker: Any) -> None:
    """Kafka's SSL principal is the certificate's DN: on a topic open to User:ANONYMOUS (an SSL client without a
    certificate) a DENY for User:CN=cykafka-client refuses the client presenting that certificate."""
    topic = _name("mtls")
    ours = _allow(kafka_broker, ResourceType.TOPIC, topic, "User:ANONYMOUS", AclOperation.ALL)
    ours += _deny(kafka_broker, ResourceType.TOPIC, topic, CLIENT_PRINCIPAL, AclOperation.WRITE)
    confluent = confluent_admin.AdminClient(kafka_broker.security_config("SASL_PLAINTEXT", user="admin"))
    theirs = confluent.describe_acls(confluent_admin.AclBindingFilter(  # another client sees what ours created
        confluent_admin.ResourceType.TOPIC, topic, confluent_admin.ResourcePatternType.LITERAL, None, None,
        confluent_admin.AclOperation.ANY, confluent_admin.AclPermissionType.ANY)).result(30)
    assert sorted((b.principal, b.host, b.operation.name, b.permission_type.name) for b in theirs) == sorted(
        (b.entry.principal, b.entry.host, b.entry.operation.name, b.entry.permission_type.name) for b in ours)
    with Producer(kafka_broker.security_config("SSL", client_certificate=True)) as producer:
        with pytest.raises(TopicAuthorizationError):  # no ALLOW for it there: send() refuses at once
            producer.send(topic, b"by certificate").result(30)
    with Producer(kafka_broker.security_config("SSL")) as anonymous:
        anonymous.send(topic, b"anonymous").result(30)
    _produce_and_read_back(kafka_broker, kafka_broker.security_config("SSL", client_certificate=True))


# -- SASL ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_mechanisms_on_kafkas_listeners(kafka_broker: Any, listener: str, mechanism: str) -> None:
    _produce_and_read_back(kafka_broker, kafka_broker.security_config(listener, user="alice", mechanism=mechanism))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_wrong_password_is_a_typed_error_within_the_request_timeout(kafka_broker: Any, mechanism: str) -> None:
    config = {**kafka_broker.security_config("SASL_SSL", user="alice", mechanism=mechanism),
              "sasl.password": "wrong", "request.timeout.ms": 5000, "max.block.ms": 20000}
    started = time.monotonic()
    with Producer(config) as producer:
        with pytest.raises(AuthenticationError, match="SASL_AUTHENTICATION_FAILED"):
            producer.send(_name("nope"), b"x").result(30)
        took_s = time.monotonic() - started
        again = time.monotonic()
        with pytest.raises(AuthenticationError):  # no retry loop: the next send fails at once
            producer.send(_name("nope"), b"y").result(30)
        assert time.monotonic() - again < 2
    assert took_s < 5, f"{took_s:.1f} s"


def test_reauthentication_when_the_session_lifetime_ends_loses_nothing(kafka_broker: Any,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """SCRAM-SHA-512 sessions on SASL_SSL last REAUTH_MS (connections.max.reauth.ms): a producer sending for three
    lifetimes authenticates again before each ends (a new connection once its requests are answered); every record
    is in the log once, in order."""
    topic = _name("reauth")
    config = {**kafka_broker.security_config("SASL_SSL", user="alice", mechanism="SCRAM-SHA-512"), "linger.ms": 5}
    deadline = time.monotonic() + 3 * REAUTH_MS / 1000
    futures: list[Any] = []
    caplog.set_level("INFO", logger="cykafka")
    with Producer(config) as producer:
        while time.monotonic() < deadline:
            futures += [producer.send(topic, b"%08d" % (len(futures) + i), partition=0) for i in range(50)]
            time.sleep(0.01)
        producer.flush(60)
    assert all(f.exception(0) is None for f in futures)
    renewed = [r for r in caplog.records if "authenticate again" in r.getMessage()]
    values = [r.value for r in read_back(kafka_broker.bootstrap_servers, topic)]
    print(f"sent {len(futures)} records over {3 * REAUTH_MS} ms of {REAUTH_MS} ms sessions; "
          f"sessions renewed: {len(renewed)}; read back {len(values)}")
    assert values == [b"%08d" % i for i in range(len(futures))]
    assert len(renewed) >= 2  # before each lifetime ended, at least the leader's connection


# -- authorization ------------------------------------------------------------------------------------------------

def test_a_topic_without_write_fails_its_records_at_once_and_the_producer_goes_on(kafka_broker: Any) -> None:
    """alice may DESCRIBE `denied` but not WRITE it: its records fail with TopicAuthorizationError from the Produce
    answer, at once, while her records to `allowed` are delivered; on `hidden` she has nothing (not even
    DESCRIBE): send() raises at once from the Metadata answer, not after max.block.ms."""
    denied, allowed, hidden = _name("denied"), _name("allowed"), _name("hidden")
    with Producer(kafka_broker.security_config("SASL_PLAINTEXT", user="admin")) as admin_producer:
        for topic in (denied, allowed, hidden):
            admin_producer.send(topic, b"created").result(30)
    _allow(kafka_broker, ResourceType.TOPIC, denied, "User:alice",
           AclOperation.DESCRIBE)  # ACLs there now: no WRITE for alice
    _allow(kafka_broker, ResourceType.TOPIC, hidden, "User:admin", AclOperation.ALL)
    with Producer(kafka_broker.security_config("SASL_PLAINTEXT", user="alice")) as producer:
        started = time.monotonic()
        refused = [producer.send(denied, b"no %d" % i) for i in range(10)]
        accepted = [producer.send(allowed, b"yes %d" % i) for i in range(10)]
        producer.flush(30)
        took_s = time.monotonic() - started
        for future in refused:
            error = future.exception(0)
            assert isinstance(error, TopicAuthorizationError) and error.code == 29 and not error.retriable
        assert all(f.exception(0) is None for f in accepted)
        assert producer.send(allowed, b"later").result(30).offset >= 10  # still usable
        started_hidden = time.monotonic()
        with pytest.raises(TopicAuthorizationError, match=hidden):
            producer.send(hidden, b"x")
        assert time.monotonic() - started_hidden < 5
        assert producer.send(allowed, b"still").result(30).offset >= 11
    assert took_s < 5, f"refused records took {took_s:.1f} s: retried?"


def test_a_group_without_read_is_a_group_authorization_error(kafka_broker: Any) -> None:
    topic, group = _name("grouped"), _name("locked")
    with Producer(kafka_broker.security_config("SASL_PLAINTEXT", user="admin")) as producer:
        producer.send(topic, b"x").result(30)
    _allow(kafka_broker, ResourceType.GROUP, group, "User:admin", AclOperation.READ)
    consumer = Consumer({**kafka_broker.security_config("SASL_PLAINTEXT", user="alice"), "group.id": group,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        with pytest.raises(GroupAuthorizationError):
            for _ in range(40):
                consumer.poll(0.25)
        with pytest.raises(GroupAuthorizationError):  # committed offsets of that group, too
            consumer.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        consumer.close(5)


def test_a_transactional_id_without_write_is_a_typed_fatal_error(kafka_broker: Any) -> None:
    transactional_id = _name("tx")
    _allow(kafka_broker, ResourceType.TRANSACTIONAL_ID, transactional_id, "User:admin",
           AclOperation.WRITE)
    producer = Producer({**kafka_broker.security_config("SASL_PLAINTEXT", user="alice"),
                         "transactional.id": transactional_id})
    try:
        with pytest.raises(TransactionalIdAuthorizationError):
            producer.init_transactions(20)
        with pytest.raises(TransactionalIdAuthorizationError):  # the producer can only be closed
            producer.begin_transaction()
    finally:
        producer.close(5)
