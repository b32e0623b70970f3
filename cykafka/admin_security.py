"""Admin's security calls: ACLs (Java's createAcls, describeAcls, deleteAcls) and SCRAM credentials
(describeUserScramCredentials, alterUserScramCredentials), each a function of an `Admin` that cykafka/admin.py
delegates to (as cykafka/admin_share.py), driven by Admin's request layer: one request at any broker (Kafka hands what
it must to its controller), per-item results from the answer, the whole answer's error raised typed. The values they
take and return are cykafka/acl.py's and cykafka/scram.py's (no I/O there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cykafka.acl import AclBinding, AclBindingFilter, FilterResult, binding_from_wire, checked_acls, filter_body
from cykafka.errors import KafkaError
from cykafka.ports.values import Result
from cykafka.protocol import Request
from cykafka.protocol import apis as api
from cykafka.protocol.error_codes import answer_error
from cykafka.requests.fanout import Fanout
from cykafka.requests.routes import ANY_BROKER
from cykafka.scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialsDescription,
    alterations_body,
    checked_alterations,
    checked_users,
)

if TYPE_CHECKING:
    from cykafka.admin import Admin
    from cykafka.protocol.bodies import (
        CreateAclsRequestBody,
        CreateAclsRequestCreations,
        DeleteAclsRequestBody,
        DescribeAclsRequestBody,
        DescribeUserScramCredentialsRequestBody,
    )


def create_acls(admin: Admin, acls: Iterable[AclBinding], *,
                timeout_ms: int | None = None) -> dict[AclBinding, Result[None]]:
    """Admin.create_acls (cykafka/admin.py says what it does)."""
    bindings = list(dict.fromkeys(checked_acls(acls, AclBinding, "create_acls")))  # Java's: once each
    deadline_ms = admin._deadline(timeout_ms)

    def build(group: list[AclBinding]) -> Request:
        creations: list[CreateAclsRequestCreations] = [
            {"resource_type": b.pattern.resource_type.code, "resource_name": b.pattern.name,
             "resource_pattern_type": b.pattern.pattern_type.code, "principal": b.entry.principal,
             "host": b.entry.host, "operation": b.entry.operation.code,
             "permission_type": b.entry.permission_type.code} for b in group]
        body: CreateAclsRequestBody = {"creations": creations}
        return Request(api.CREATE_ACLS.key, body)

    def read(group: list[AclBinding], answer: Mapping[str, Any], node: int) -> dict[AclBinding, KafkaError | None]:
        results = answer["results"]
        if len(results) != len(group):
            error = KafkaError(f"CreateAcls: the broker answered {len(results)} results for {len(group)} ACLs")
            return dict.fromkeys(group, error)
        return {b: answer_error(r, f"ACL {b}") for b, r in zip(group, results, strict=True)}

    fanout: Fanout[AclBinding, None] = Fanout(admin._asker, lambda items: dict.fromkeys(items, ANY_BROKER),
                                              build, read, name=lambda b: f"ACL {b}")
    return admin._call(lambda: fanout.run(bindings, deadline_ms))


def describe_acls(admin: Admin, acl_filter: AclBindingFilter, *, timeout_ms: int | None = None) -> list[AclBinding]:
    """Admin.describe_acls (cykafka/admin.py says what it does)."""
    (checked,) = checked_acls([acl_filter], AclBindingFilter, "describe_acls")
    deadline_ms = admin._deadline(timeout_ms)

    def describe() -> list[AclBinding]:
        body: DescribeAclsRequestBody = filter_body(checked)
        answer = admin._ask(Request(api.DESCRIBE_ACLS.key, body), ANY_BROKER, deadline_ms).body
        if error := answer_error(answer, "DescribeAcls"):
            raise error
        return [binding_from_wire(r, e) for r in answer["resources"] for e in r["acls"]]

    return admin._call(describe)


def delete_acls(admin: Admin, filters: Iterable[AclBindingFilter], *,
                timeout_ms: int | None = None) -> dict[AclBindingFilter, Result[list[FilterResult]]]:
    """Admin.delete_acls (cykafka/admin.py says what it does)."""
    wanted = list(dict.fromkeys(checked_acls(filters, AclBindingFilter, "delete_acls")))
    deadline_ms = admin._deadline(timeout_ms)

    def build(group: list[AclBindingFilter]) -> Request:
        body: DeleteAclsRequestBody = {"filters": [filter_body(f) for f in group]}
        return Request(api.DELETE_ACLS.key, body)

    def read(group: list[AclBindingFilter], answer: Mapping[str, Any],
             node: int) -> dict[AclBindingFilter, list[FilterResult] | KafkaError]:
        results = answer["filter_results"]
        if len(results) != len(group):
            return dict.fromkeys(group, KafkaError(f"DeleteAcls: the broker answered {len(results)} results for "
                                                   f"{len(group)} filters"))
        out: dict[AclBindingFilter, list[FilterResult] | KafkaError] = {}
        for f, r in zip(group, results, strict=True):
            error = answer_error(r, f"ACL filter {f}")
            out[f] = error if error is not None else [
                FilterResult(binding := binding_from_wire(m, m), answer_error(m, f"ACL {binding}"))
                for m in r["matching_acls"]]
        return out

    fanout: Fanout[AclBindingFilter, list[FilterResult]] = Fanout(
        admin._asker, lambda items: dict.fromkeys(items, ANY_BROKER), build, read, name=lambda f: f"ACL filter {f}")
    return admin._call(lambda: fanout.run(wanted, deadline_ms))


def describe_user_scram_credentials(admin: Admin, users: Iterable[str] | None = None, *, timeout_ms: int | None = None,
                                    ) -> dict[str, Result[UserScramCredentialsDescription]]:
    """Admin.describe_user_scram_credentials (cykafka/admin.py says what it does)."""
    wanted = checked_users(users)
    deadline_ms = admin._deadline(timeout_ms)

    def describe() -> dict[str, Result[UserScramCredentialsDescription]]:
        body: DescribeUserScramCredentialsRequestBody = {
            "users": [{"name": u} for u in wanted] if wanted else None}
        answer = admin._ask(Request(api.DESCRIBE_USER_SCRAM_CREDENTIALS.key, body), ANY_BROKER, deadline_ms).body
        if error := answer_error(answer, "DescribeUserScramCredentials"):
            raise error
        out: dict[str, Result[UserScramCredentialsDescription]] = {}
        for r in answer["results"]:
            user = r["user"]
            if error := answer_error(r, f"user {user!r}"):
                out[user] = Result(error=error)
            else:
                out[user] = Result(UserScramCredentialsDescription(user, tuple(
                    ScramCredentialInfo(ScramMechanism.from_code(c["mechanism"]), c["iterations"])
                    for c in r["credential_infos"])))
        for user in wanted or ():
            out.setdefault(user, Result(error=KafkaError(f"user {user!r}: the broker's answer left it out")))
        return out

    return admin._call(describe)


def alter_user_scram_credentials(admin: Admin, alterations: Iterable[UserScramCredentialAlteration], *,
                                 timeout_ms: int | None = None) -> dict[str, Result[None]]:
    """Admin.alter_user_scram_credentials (cykafka/admin.py says what it does)."""
    wanted = checked_alterations(alterations)
    deadline_ms = admin._deadline(timeout_ms)
    users = list(dict.fromkeys(a.user for a in wanted))

    def alter() -> dict[str, Result[None]]:
        if not wanted:
            return {}
        answer = admin._ask(Request(api.ALTER_USER_SCRAM_CREDENTIALS.key, alterations_body(wanted)), ANY_BROKER,
                           deadline_ms).body
        answered = {r["user"]: r for r in answer["results"]}
        return {u: Result(None, answer_error(answered[u], f"user {u!r}")) if u in answered
                else Result(error=KafkaError(f"user {u!r}: the broker's answer left it out")) for u in users}

    return admin._call(alter)
