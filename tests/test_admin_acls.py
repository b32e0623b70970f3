"""Admin's ACL calls (create_acls, describe_acls, delete_acls: Java's names, filters and value classes) against
Apache Kafka's StandardAuthorizer (the session's `kafka_broker`, super user admin, alice an ordinary user, over
SASL_PLAINTEXT): bindings created, found by literal, prefixed and match filters, deleted with what each filter matched;
alice refused with typed ClusterAuthorizationErrors; the value classes' checks and Java's matching rules; Tansu,
which keeps no ACLs, answers with typed errors naming the API."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from cykafka import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Admin,
    ClusterAuthorizationError,
    InvalidArgumentError,
    PatternType,
    ProtocolError,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    UnsupportedVersionError,
)
from cykafka.acl import CLUSTER_NAME, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE

T = TypeVar("T")
PROPAGATION_S = 10.0  # the authorizer applies ACLs from the metadata log a moment after the controller answered


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _until(value: Callable[[], T], ok: Callable[[T], bool], what: str) -> T:
    deadline = time.monotonic() + PROPAGATION_S
    while not ok(got := value()):
        assert time.monotonic() < deadline, f"not within {PROPAGATION_S} s: {what} (last: {got})"
        time.sleep(0.05)
    return got


def _binding(resource_type: ResourceType, name: str, pattern_type: PatternType, principal: str,
             operation: AclOperation, permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(resource_type, name, pattern_type),
                      AccessControlEntry(principal, "*", operation, permission))


def _topic_filter(name: str | None, pattern_type: PatternType, principal: str | None = None) -> AclBindingFilter:
    return AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, name, pattern_type),
                            AccessControlEntryFilter(principal, None, AclOperation.ANY, AclPermissionType.ANY))


@pytest.fixture()
def admin(kafka_broker: Any) -> Iterator[Admin]:
    with Admin({**kafka_broker.security_config("SASL_PLAINTEXT", user="admin"), "default.api.timeout.ms": 30000}) as a:
        yield a


# -- the values --------------------------------------------------------------------------------------------------

def test_the_enums_are_javas_names_and_wire_codes() -> None:
    """Java 4.4's codes (org.apache.kafka.common.acl / .resource)."""
    assert {e.name: e.code for e in ResourceType} == {"UNKNOWN": 0, "ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4,
                                                      "TRANSACTIONAL_ID": 5, "DELEGATION_TOKEN": 6, "USER": 7}
    assert {e.name: e.code for e in PatternType} == {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
    assert {e.name: e.code for e in AclPermissionType} == {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}
    assert [e.name for e in AclOperation] == [
        "UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS",
        "TWO_PHASE_COMMIT"] and [e.code for e in AclOperation] == list(range(16))
    assert AclOperation.from_code(99) is AclOperation.UNKNOWN


def test_bindings_refuse_filter_words_naming_the_field() -> None:
    with pytest.raises(InvalidArgumentError, match=r"ResourcePattern\.resource_type must not be ANY"):
        ResourcePattern(ResourceType.ANY, "t", PatternType.LITERAL)
    with pytest.raises(InvalidArgumentError, match=r"ResourcePattern\.pattern_type must not be MATCH"):
        ResourcePattern(ResourceType.TOPIC, "t", PatternType.MATCH)
    with pytest.raises(InvalidArgumentError, match=r"AccessControlEntry\.operation must not be ANY"):
        AccessControlEntry("User:a", "*", AclOperation.ANY, AclPermissionType.ALLOW)
    with pytest.raises(InvalidArgumentError, match=r"AccessControlEntry\.permission_type must be a AclPermissionType"):
        AccessControlEntry("User:a", "*", AclOperation.READ, "ALLOW")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"ResourcePattern\.name must be a str"):
        ResourcePattern(ResourceType.TOPIC, None, PatternType.LITERAL)  # type: ignore[arg-type]
    with Admin({"bootstrap.servers": "127.0.0.1:1"}) as a:  # checked before anything is sent
        with pytest.raises(InvalidArgumentError, match="create_acls takes AclBinding values"):
            a.create_acls([AclBindingFilter.ANY])  # type: ignore[list-item]
        with pytest.raises(InvalidArgumentError, match="UNKNOWN"):
            a.create_acls([_binding(ResourceType.UNKNOWN, "t", PatternType.LITERAL, "User:a", AclOperation.READ)])
        with pytest.raises(InvalidArgumentError, match="describe_acls takes AclBindingFilter"):
            a.describe_acls(_binding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a",
                                     AclOperation.READ))  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="delete_acls takes a list"):
            a.delete_acls(AclBindingFilter.ANY)  # type: ignore[arg-type]


def test_filters_match_as_javas() -> None:
    literal = _binding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:a", AclOperation.READ)
    prefixed = _binding(ResourceType.TOPIC, "ord", PatternType.PREFIXED, "User:a", AclOperation.READ)
    wildcard = _binding(ResourceType.TOPIC, WILDCARD_RESOURCE, PatternType.LITERAL, "User:b", AclOperation.WRITE)
    group = _binding(ResourceType.GROUP, "orders", PatternType.LITERAL, "User:a", AclOperation.READ)
    every = [literal, prefixed, wildcard, group]
    assert [b for b in every if AclBindingFilter.ANY.matches(b)] == every
    assert [b for b in every if _topic_filter("orders", PatternType.MATCH).matches(b)] == [literal, prefixed, wildcard]
    assert [b for b in every if _topic_filter("orders", PatternType.ANY).matches(b)] == [literal]
    assert [b for b in every if _topic_filter("ord", PatternType.PREFIXED).matches(b)] == [prefixed]
    assert [b for b in every if _topic_filter(None, PatternType.ANY, "User:b").matches(b)] == [wildcard]
    assert literal.to_filter().matches_at_most_one() and not AclBindingFilter.ANY.matches_at_most_one()
    assert AclBindingFilter.ANY.find_indefinite_field() == "Resource type is ANY."
    assert str(literal) == "(TOPIC:LITERAL:orders: User:a ALLOW READ from *)"


# -- against Kafka's authorizer ------------------------------------------------------------------------------------

def test_create_describe_by_filters_and_delete_what_matched(admin: Admin, kafka_broker: Any) -> None:
    """Bindings on a fresh name: found by a literal filter, a prefixed one, a MATCH filter (every pattern that
    applies to one topic name: its literal ACLs, the prefixes of it) and by principal; delete_acls returns per filter
    the bindings it matched and removed (a resource type ANY, pattern type ANY filter: every pattern of exactly that
    name), and describing again finds only the binding no filter matched; confluent-kafka's AdminClient (another
    client) sees what ours created."""
    base = _name("acl")
    literal = _binding(ResourceType.TOPIC, f"{base}-orders", PatternType.LITERAL, "User:alice", AclOperation.READ)
    literal_deny = _binding(ResourceType.TOPIC, f"{base}-orders", PatternType.LITERAL, "User:bob",
                            AclOperation.WRITE, AclPermissionType.DENY)
    prefixed = _binding(ResourceType.TOPIC, base, PatternType.PREFIXED, "User:alice", AclOperation.DESCRIBE)
    other = _binding(ResourceType.TOPIC, f"{base}-audit", PatternType.LITERAL, "User:alice", AclOperation.WRITE)
    group = _binding(ResourceType.GROUP, base, PatternType.LITERAL, "User:alice", AclOperation.READ)
    created = admin.create_acls([literal, literal_deny, prefixed, other, group, literal])  # the repeat: once
    assert list(created) == [literal, literal_deny, prefixed, other, group]
    assert all(r.error is None for r in created.values()), created
    mine = {literal, literal_deny, prefixed, other, group}
    everything = _until(lambda: set(admin.describe_acls(AclBindingFilter.ANY)), lambda got: mine <= got,
                        "describe_acls(ANY) lists the new bindings")
    assert mine <= everything

    by_literal = set(admin.describe_acls(_topic_filter(f"{base}-orders", PatternType.LITERAL)))
    by_prefixed = set(admin.describe_acls(_topic_filter(base, PatternType.PREFIXED)))
    by_match = set(admin.describe_acls(_topic_filter(f"{base}-orders", PatternType.MATCH)))
    by_principal = {b for b in admin.describe_acls(_topic_filter(None, PatternType.ANY, "User:bob"))}
    print(f"literal {len(by_literal)}, prefixed {len(by_prefixed)}, match {len(by_match)}, "
          f"principal {len(by_principal)}")
    assert by_literal == {literal, literal_deny}
    assert by_prefixed == {prefixed}
    assert {b for b in by_match if b.pattern.name.startswith(base)} == {literal, literal_deny, prefixed}
    assert all(b.pattern.name == WILDCARD_RESOURCE for b in by_match - {literal, literal_deny, prefixed})
    assert literal_deny in by_principal and not by_principal & {literal, prefixed, other, group}

    confluent_admin = pytest.importorskip("confluent_kafka.admin")
    theirs = confluent_admin.AdminClient(kafka_broker.security_config("SASL_PLAINTEXT", user="admin"))
    found = theirs.describe_acls(confluent_admin.AclBindingFilter(
        confluent_admin.ResourceType.TOPIC, f"{base}-orders", confluent_admin.ResourcePatternType.LITERAL, None, None,
        confluent_admin.AclOperation.ANY, confluent_admin.AclPermissionType.ANY)).result(30)
    assert sorted((b.principal, b.operation.name, b.permission_type.name) for b in found) == [
        ("User:alice", "READ", "ALLOW"), ("User:bob", "WRITE", "DENY")]

    deleting = [_topic_filter(f"{base}-orders", PatternType.LITERAL), prefixed.to_filter(),
                _topic_filter(f"{base}-nothing", PatternType.LITERAL),
                AclBindingFilter(ResourcePatternFilter(ResourceType.ANY, base, PatternType.ANY),
                                 AccessControlEntryFilter.ANY)]
    deleted = admin.delete_acls(deleting)
    matched = {f: {(r.binding, r.error) for r in result.result()} for f, result in deleted.items()}
    print({str(f): len(m) for f, m in matched.items()})
    # every filter of one request is matched against the ACLs as they were: the prefixed binding is named by two
    assert matched == {deleting[0]: {(literal, None), (literal_deny, None)}, deleting[1]: {(prefixed, None)},
                       deleting[2]: set(), deleting[3]: {(prefixed, None), (group, None)}}
    _until(lambda: set(admin.describe_acls(AclBindingFilter.ANY)) & mine, lambda left: left == {other},
           "only the binding no filter matched is left")
    assert admin.delete_acls([other.to_filter()])[other.to_filter()].result()[0].binding == other


def test_a_user_without_rights_on_the_cluster_gets_typed_cluster_authorization_errors(admin: Admin,
                                                                                     kafka_broker: Any) -> None:
    """The ACL APIs need ALTER (create, delete) or DESCRIBE (describe) on the cluster. The broker opens resources
    without ACLs to everyone, so the cluster gets two for the test: ALLOW User:* ALL (the broker's own ANONYMOUS
    requests keep their rights) and DENY User:alice ALTER and DESCRIBE; alice's calls then fail per binding / per
    filter / as a whole with ClusterAuthorizationError, admin's (a super user) go on. The cluster's ACLs are deleted
    at the end, with delete_acls."""
    cluster_acls = [_binding(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, WILDCARD_PRINCIPAL,
                             AclOperation.ALL),
                    *(_binding(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL, "User:alice", operation,
                               AclPermissionType.DENY) for operation in (AclOperation.ALTER, AclOperation.DESCRIBE))]
    wanted = _binding(ResourceType.TOPIC, _name("alice"), PatternType.LITERAL, "User:alice", AclOperation.READ)
    config = {**kafka_broker.security_config("SASL_PLAINTEXT", user="alice"), "default.api.timeout.ms": 30000}
    try:
        assert all(r.error is None for r in admin.create_acls(cluster_acls).values())
        with Admin(config) as alice:
            created = _until(lambda: alice.create_acls([wanted])[wanted],
                             lambda r: isinstance(r.error, ClusterAuthorizationError), "alice refused")
            assert isinstance(created.error, ClusterAuthorizationError)
            assert created.error.name == "CLUSTER_AUTHORIZATION_FAILED" and "alice" in str(created.error)
            with pytest.raises(ClusterAuthorizationError, match="DescribeAcls"):
                alice.describe_acls(AclBindingFilter.ANY)
            deleted = alice.delete_acls([AclBindingFilter.ANY])[AclBindingFilter.ANY]
            assert isinstance(deleted.error, ClusterAuthorizationError)
        assert admin.describe_acls(wanted.to_filter()) == []  # nothing of alice's was created
        assert set(cluster_acls) <= set(admin.describe_acls(AclBindingFilter(
            ResourcePatternFilter(ResourceType.CLUSTER, None, PatternType.ANY), AccessControlEntryFilter.ANY)))
    finally:
        removed = admin.delete_acls([b.to_filter() for b in cluster_acls])
        assert all(r.error is None for r in removed.values()), removed
        with Admin(config) as alice:  # the broker has applied the deletion: alice may describe again
            _until(lambda: _describes(alice), bool, "alice may describe ACLs again")


def _describes(admin: Admin) -> bool:
    try:
        admin.describe_acls(AclBindingFilter.ANY)
    except ClusterAuthorizationError:
        return False
    return True


@pytest.mark.broker_only("tansu", reason="Kafka speaks the ACL APIs (the tests above)")
def test_tansu_has_no_acls_and_each_call_says_so_typed(broker: Any) -> None:
    """Tansu keeps no ACLs: it lists CreateAcls v3 but answers it with a null results array (a malformed answer:
    ProtocolError naming the API and version), answers DescribeAcls with none, and lacks DeleteAcls
    (UnsupportedVersionError naming it)."""
    binding = _binding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a", AclOperation.READ)
    with Admin({"bootstrap.servers": broker.bootstrap_servers, "default.api.timeout.ms": 20000}) as a:
        with pytest.raises(ProtocolError, match="CreateAcls v3 response: null array"):
            a.create_acls([binding])
        assert a.describe_acls(AclBindingFilter.ANY) == []
        deleted = a.delete_acls([AclBindingFilter.ANY])[AclBindingFilter.ANY]
        assert isinstance(deleted.error, UnsupportedVersionError)
        assert "does not support DeleteAcls (API key 31)" in str(deleted.error)
