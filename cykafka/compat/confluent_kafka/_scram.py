"""confluent-kafka's SCRAM credential values (confluent_kafka.admin's ScramMechanism, ScramCredentialInfo,
UserScramCredentialsDescription, UserScramCredentialAlteration and its Upsertion / Deletion), their translation to
and from cykafka.scram's, and AdminClient.describe_user_scram_credentials / alter_user_scram_credentials over
cykafka's Admin (`describe`, `alter`; admin.py delegates). Input checks raise what confluent-kafka's raise (TypeError
for a wrong type, ValueError for an empty value); the password is salted by cykafka.scram (an invalid iteration
count: InvalidArgumentError, a ValueError)."""

from __future__ import annotations

import concurrent.futures
import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cykafka import scram
from cykafka.compat.confluent_kafka._metadata import timeout_ms
from cykafka.ports.values import Result

if TYPE_CHECKING:
    from cykafka.compat.confluent_kafka.admin import AdminClient


class ScramMechanism(enum.Enum):
    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ScramMechanism):
            return NotImplemented
        return self.value < other.value


class ScramCredentialInfo:
    def __init__(self, mechanism: ScramMechanism, iterations: int) -> None:
        self.mechanism = mechanism
        self.iterations = iterations

    def __repr__(self) -> str:
        return f"ScramCredentialInfo({self.mechanism}, {self.iterations})"


class UserScramCredentialsDescription:
    def __init__(self, user: str, scram_credential_infos: list[ScramCredentialInfo]) -> None:
        self.user = user
        self.scram_credential_infos = scram_credential_infos

    def __repr__(self) -> str:
        return f"UserScramCredentialsDescription({self.user!r}, {self.scram_credential_infos})"


class UserScramCredentialAlteration:
    def __init__(self, user: str) -> None:
        self.user = user


class UserScramCredentialUpsertion(UserScramCredentialAlteration):
    def __init__(self, user: str, scram_credential_info: ScramCredentialInfo, password: bytes,
                 salt: bytes | None = None) -> None:
        super().__init__(user)
        self.scram_credential_info = scram_credential_info
        self.password = password
        self.salt = salt


class UserScramCredentialDeletion(UserScramCredentialAlteration):
    def __init__(self, user: str, mechanism: ScramMechanism) -> None:
        super().__init__(user)
        self.mechanism = mechanism


def _user(user: object) -> str:
    if user is None:
        raise TypeError("'user' cannot be None")
    if not isinstance(user, str):
        raise TypeError("'user' must be a string")
    if not user:
        raise ValueError("'user' cannot be empty")
    return user


def _mechanism(mechanism: object) -> scram.ScramMechanism:
    if not isinstance(mechanism, ScramMechanism):
        raise TypeError("Expected mechanism to be ScramMechanism Type")
    return scram.ScramMechanism(mechanism.value)


def describe(client: AdminClient, users: object, request_timeout: float) -> Any:
    """AdminClient.describe_user_scram_credentials: users None, one Future of {user: description} for every user with
    a credential; a list (each user once), {user: Future[description]}."""
    wanted = None
    if users is not None:
        if not isinstance(users, list):
            raise TypeError("Expected input to be list of String")
        wanted = [_user(u) for u in users]
        if len(set(wanted)) != len(wanted):
            raise ValueError("Duplicate users are not allowed")

    def described() -> Mapping[str, Result[Any]]:
        return client._admin.describe_user_scram_credentials(wanted, timeout_ms=timeout_ms(request_timeout))

    if wanted is None:
        return client._one(lambda: {user: description(r.result()) for user, r in described().items()})
    return client._each(wanted, described, value=description)


def alter(client: AdminClient, alterations: object,
          request_timeout: float) -> dict[str, concurrent.futures.Future[None]]:
    """AdminClient.alter_user_scram_credentials: {user: Future[None]}, one per user altered."""
    if not isinstance(alterations, list):
        raise TypeError("Expected input to be list")
    if not alterations:
        raise ValueError("Expected at least one alteration")
    ours = [alteration(a) for a in alterations]
    return client._each(list(dict.fromkeys(a.user for a in ours)), lambda: client._admin.alter_user_scram_credentials(
        ours, timeout_ms=timeout_ms(request_timeout)))


def alteration(item: object) -> scram.UserScramCredentialAlteration:
    """A confluent-kafka alteration as cykafka.scram's (the password salted there)."""
    if not isinstance(item, UserScramCredentialAlteration):
        raise TypeError("Expected each element of list to be subclass of UserScramCredentialAlteration")
    user = _user(item.user)
    if isinstance(item, UserScramCredentialDeletion):
        return scram.UserScramCredentialDeletion(user, _mechanism(item.mechanism))
    if not isinstance(item, UserScramCredentialUpsertion):
        raise TypeError("Expected each element of list to be an Upsertion or a Deletion")
    if item.password is None:
        raise TypeError("'password' cannot be None")
    if not isinstance(item.password, bytes):
        raise TypeError("'password' must be bytes")
    if not item.password:
        raise ValueError("'password' cannot be empty")
    if item.salt is not None and not isinstance(item.salt, bytes):
        raise TypeError("'salt' must be bytes")
    if item.salt is not None and not item.salt:
        raise ValueError("'salt' can be None but cannot be empty")
    info = item.scram_credential_info
    if not isinstance(info, ScramCredentialInfo):
        raise TypeError("Expected credential_info to be ScramCredentialInfo Type")
    return scram.UserScramCredentialUpsertion(
        user, scram.ScramCredentialInfo(_mechanism(info.mechanism), info.iterations), item.password, item.salt)


def description(ours: scram.UserScramCredentialsDescription) -> UserScramCredentialsDescription:
    return UserScramCredentialsDescription(ours.name, [
        ScramCredentialInfo(ScramMechanism(int(c.mechanism)), c.iterations) for c in ours.credential_infos])
