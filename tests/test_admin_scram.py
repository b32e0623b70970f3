"""Admin's SCRAM credential calls (describe_user_scram_credentials, alter_user_scram_credentials: Java's names and
value classes) against Apache Kafka (the session's `kafka_broker`, super user admin over SASL_PLAINTEXT): a user
created with both mechanisms logs in over SCRAM with either (the broker checks the salted password this client
computed), is described with its iterations (by confluent-kafka too), loses one mechanism to a deletion and can no
longer log in with it; per-user broker errors come back typed in that user's Result; bad values are refused before
anything is sent; Tansu, which keeps no credentials, says so typed."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from test_admin_acls import _until  # Kafka applies credentials, as ACLs, from its metadata log a moment later

from cykafka import (
    Admin,
    AuthenticationError,
    BrokerResponseError,
    InvalidArgumentError,
    ProtocolError,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from cykafka.protocol.scram import salted_password

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


@pytest.fixture()
def admin(kafka_broker: Any) -> Iterator[Admin]:
    with Admin({**kafka_broker.security_config("SASL_PLAINTEXT", user="admin"), "default.api.timeout.ms": 30000}) as a:
        yield a


def _logs_in(kafka_broker: Any, user: str, password: str, mechanism: ScramMechanism) -> bool:
    """Whether `user` authenticates over SASL_PLAINTEXT with `mechanism` (a Metadata call any principal may make)."""
    config = {"bootstrap.servers": kafka_broker.listener("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": mechanism.mechanism_name, "sasl.username": user, "sasl.password": password,
              "default.api.timeout.ms": 10000}
    with Admin(config) as a:
        try:
            a.list_topics()
        except AuthenticationError:
            return False
    return True


# -- the values --------------------------------------------------------------------------------------------------

def test_the_values_are_javas_and_refuse_bad_fields_by_name() -> None:
    assert {m.name: int(m) for m in ScramMechanism} == {"UNKNOWN": 0, "SCRAM_SHA_256": 1, "SCRAM_SHA_512": 2}
    assert SHA512.mechanism_name == "SCRAM-SHA-512" and ScramMechanism.from_code(7) is ScramMechanism.UNKNOWN
    up = UserScramCredentialUpsertion("u", ScramCredentialInfo(SHA256, 4096), "pw", salt=b"salt")
    assert up.salted_password == salted_password("sha256", b"pw", b"salt", 4096)  # the login's one rule
    assert "pw" not in repr(up) and "salt=" not in repr(up)
    assert len(UserScramCredentialUpsertion("u", ScramCredentialInfo(SHA512, 4096), b"pw").salt or b"") == 32
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: UserScramCredentialUpsertion("", ScramCredentialInfo(SHA256, 4096), "pw"),
         r"UserScramCredentialUpsertion\.user must be a non-empty str"),
        (lambda: UserScramCredentialUpsertion("u", ScramCredentialInfo(ScramMechanism.UNKNOWN, 4096), "pw"),
         r"ScramCredentialInfo\.mechanism must be ScramMechanism\.SCRAM_SHA_256 or SCRAM_SHA_512"),
        (lambda: UserScramCredentialUpsertion("u", ScramCredentialInfo(SHA256, 4095), "pw"),
         r"ScramCredentialInfo\.iterations must be an int in \[4096, 16384\]"),
        (lambda: UserScramCredentialUpsertion("u", ScramCredentialInfo(SHA256, 16385), "pw"), r"\[4096, 16384\]"),
        (lambda: UserScramCredentialUpsertion("u", ScramCredentialInfo(SHA256, True), "pw"),  # type: ignore[arg-type]
         r"iterations must be an int"),
        (lambda: UserScramCredentialUpsertion("u", ScramCredentialInfo(SHA256, 4096), ""),
         r"password must not be empty"),
        (lambda: UserScramCredentialUpsertion("u", ScramCredentialInfo(SHA256, 4096), 5),  # type: ignore[arg-type]
         r"password must be str or bytes"),
        (lambda: UserScramCredentialUpsertion("u", ScramCredentialInfo(SHA256, 4096), "pw", salt=b""),
         r"salt must be non-empty bytes or None"),
        (lambda: UserScramCredentialUpsertion("u", (SHA256, 4096), "pw"),  # type: ignore[arg-type]
         r"credential_info must be a ScramCredentialInfo"),
        (lambda: UserScramCredentialDeletion("u", "SCRAM-SHA-256"),  # type: ignore[arg-type]
         r"UserScramCredentialDeletion\.mechanism must be"),
        (lambda: UserScramCredentialDeletion(None, SHA256),  # type: ignore[arg-type]
         r"UserScramCredentialDeletion\.user must be a non-empty str"),
    ]
    for make, message in cases:
        with pytest.raises(InvalidArgumentError, match=message):
            make()
    with Admin({"bootstrap.servers": "127.0.0.1:1"}) as a:  # checked before anything is sent
        with pytest.raises(InvalidArgumentError, match="alter_user_scram_credentials takes a list"):
            a.alter_user_scram_credentials(UserScramCredentialDeletion("u", SHA256))  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="takes UserScramCredentialUpsertion or"):
            a.alter_user_scram_credentials(["u"])  # type: ignore[list-item]
        with pytest.raises(InvalidArgumentError, match="users must be a list of user names or None"):
            a.describe_user_scram_credentials("alice")
        with pytest.raises(InvalidArgumentError, match="each of users must be a non-empty str"):
            a.describe_user_scram_credentials([""])
        assert a.alter_user_scram_credentials([]) == {}


# -- against Kafka -----------------------------------------------------------------------------------------------

def test_a_user_created_logs_in_is_described_and_loses_a_deleted_mechanism(admin: Admin, kafka_broker: Any) -> None:
    user, password = f"scram-{uuid.uuid4().hex[:8]}", "s3cret-ü"
    assert not _logs_in(kafka_broker, user, password, SHA256)
    for info, secret in ((ScramCredentialInfo(SHA256, 8192), password), (ScramCredentialInfo(SHA512, 4096),
                                                                          password.encode())):
        created = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(user, info, secret)])
        assert list(created) == [user] and created[user].error is None  # a user once per call (Kafka's rule)
    both = UserScramCredentialsDescription(user, (ScramCredentialInfo(SHA256, 8192), ScramCredentialInfo(SHA512, 4096)))
    described = _until(lambda: admin.describe_user_scram_credentials([user])[user],
                       lambda r: r.error is None, f"{user} described")
    assert sorted(described.result().credential_infos, key=lambda c: int(c.mechanism)) == list(both.credential_infos)
    everyone = admin.describe_user_scram_credentials()
    assert user in everyone and "admin" in everyone  # None: every user with a credential
    for mechanism in (SHA256, SHA512):
        assert _until(lambda m=mechanism: _logs_in(kafka_broker, user, password, m), bool, f"{user} logs in")
    assert not _logs_in(kafka_broker, user, "wrong", SHA256)

    from confluent_kafka import admin as confluent_admin  # an independent client reads what we wrote

    theirs = confluent_admin.AdminClient(kafka_broker.security_config("SASL_PLAINTEXT", user="admin"))
    description = theirs.describe_user_scram_credentials([user])[user].result(30)
    assert sorted((c.mechanism.value, c.iterations) for c in description.scram_credential_infos) == [(1, 8192),
                                                                                                    (2, 4096)]

    deleted = admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, SHA256)])
    assert deleted[user].error is None
    _until(lambda: admin.describe_user_scram_credentials([user])[user].result().credential_infos,
           lambda infos: [c.mechanism for c in infos] == [SHA512], "only SCRAM-SHA-512 left")
    assert _until(lambda: not _logs_in(kafka_broker, user, password, SHA256), bool, "SCRAM-SHA-256 refused")
    assert _logs_in(kafka_broker, user, password, SHA512)
    admin.alter_user_scram_credentials([UserScramCredentialDeletion(user, SHA512)])


def test_per_user_broker_errors_come_back_typed_in_that_users_result(admin: Admin) -> None:
    """A credential that is not there to delete, one user altered twice in one call, a user without
    credentials described: each its own Result's BrokerResponseError with the broker's name; the others go through."""
    fine, missing, twice = (f"{what}-{uuid.uuid4().hex[:8]}" for what in ("fine", "missing", "twice"))
    info = ScramCredentialInfo(SHA256, 4096)
    results = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion(fine, info, "pw"), UserScramCredentialDeletion(missing, SHA512),
        UserScramCredentialUpsertion(twice, info, "a"),
        UserScramCredentialUpsertion(twice, ScramCredentialInfo(SHA512, 4096), "b")])
    assert list(results) == [fine, missing, twice]
    assert results[fine].error is None
    for user, name in ((missing, "RESOURCE_NOT_FOUND"), (twice, "DUPLICATE_RESOURCE")):
        error = results[user].error
        assert isinstance(error, BrokerResponseError) and error.name == name and user in str(error)
    unknown = admin.describe_user_scram_credentials([missing, fine])
    assert isinstance(unknown[missing].error, BrokerResponseError)
    assert unknown[missing].error.name == "RESOURCE_NOT_FOUND"
    admin.alter_user_scram_credentials([UserScramCredentialDeletion(fine, SHA256)])


@pytest.mark.broker_only("tansu", reason="Kafka keeps SCRAM credentials (the tests above)")
def test_tansu_keeps_no_credentials_and_says_so_typed(broker: Any) -> None:
    """Tansu (no SASL) lists both APIs but answers DescribeUserScramCredentials with a null results array (a malformed
    answer: ProtocolError naming the API and version) and AlterUserScramCredentials with one result per user."""
    with Admin({"bootstrap.servers": broker.bootstrap_servers, "default.api.timeout.ms": 20000}) as a:
        with pytest.raises(ProtocolError, match="DescribeUserScramCredentials v0 response: null array"):
            a.describe_user_scram_credentials()
        assert list(a.alter_user_scram_credentials([UserScramCredentialDeletion("u", SHA256)])) == ["u"]
