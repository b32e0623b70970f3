"""SCRAM credential values, as Java's org.apache.kafka.clients.admin classes of the same names: what
`Admin.describe_user_scram_credentials` and `alter_user_scram_credentials` take and return.

Owns `ScramMechanism` (Java's names and wire codes), `ScramCredentialInfo` (a mechanism and its iterations),
`UserScramCredentialsDescription` (a user's credentials, as described), the alterations `UserScramCredentialUpsertion`
(create or replace: the password is salted here, as Java's client does, and only the salt and salted password go to
the broker) and `UserScramCredentialDeletion`, the checks their constructors make (InvalidArgumentError naming the
field and what is accepted), and their wire form (`alterations_body`). No I/O: cykafka/admin_security.py sends them;
the salting is protocol/scram.py's (cykafka.protocol.scram), the login's own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cykafka.acl import CodedEnum
from cykafka.errors import InvalidArgumentError
from cykafka.protocol.scram import CREDENTIAL_MAX_ITERATIONS, SCRAM_HASHES, SCRAM_MIN_ITERATIONS, salted_password

if TYPE_CHECKING:  # the generated bodies are for mypy only
    from cykafka.protocol.bodies import AlterUserScramCredentialsRequestBody

SALT_BYTES = 32  # a random salt of this many bytes when an upsertion names none


class ScramMechanism(CodedEnum):
    """Java's ScramMechanism: wire codes (`from_code`: an unknown one is UNKNOWN, as Java's fromType),
    `mechanism_name` as SASL names it (`sasl.mechanism`)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")


def _mechanism(value: object, what: str) -> ScramMechanism:
    if not isinstance(value, ScramMechanism) or value.is_unknown:
        raise InvalidArgumentError(f"{what} must be ScramMechanism.SCRAM_SHA_256 or SCRAM_SHA_512, got {value!r}")
    return value


def _user(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{what} must be a non-empty str (the user name), got {value!r}")
    return value


@dataclass(frozen=True)
class ScramCredentialInfo:
    """A credential's mechanism and PBKDF2 iterations. Described ones may carry UNKNOWN (a mechanism this client does
    not know); one an upsertion carries is checked there."""

    mechanism: ScramMechanism
    iterations: int


@dataclass(frozen=True)
class UserScramCredentialsDescription:
    """A user's SCRAM credentials, one per mechanism (never the salt or the password)."""

    name: str
    credential_infos: tuple[ScramCredentialInfo, ...]


@dataclass(frozen=True)
class UserScramCredentialUpsertion:
    """Creates or replaces `user`'s credential for credential_info's mechanism. The password (str: UTF-8; or bytes)
    is salted on construction (PBKDF2-HMAC of the mechanism's hash, `iterations` rounds, `salt` or SALT_BYTES random
    bytes); iterations outside Kafka's [4096, 16384] are refused here, as the broker would refuse them."""

    user: str
    credential_info: ScramCredentialInfo
    password: str | bytes = field(repr=False)
    salt: bytes | None = field(default=None, repr=False)
    salted_password: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _user(self.user, "UserScramCredentialUpsertion.user")
        info = self.credential_info
        if not isinstance(info, ScramCredentialInfo):
            raise InvalidArgumentError(f"UserScramCredentialUpsertion.credential_info must be a ScramCredentialInfo, "
                                       f"got {info!r}")
        mechanism = _mechanism(info.mechanism, "ScramCredentialInfo.mechanism")
        if (isinstance(info.iterations, bool) or not isinstance(info.iterations, int)
                or not SCRAM_MIN_ITERATIONS <= info.iterations <= CREDENTIAL_MAX_ITERATIONS):
            raise InvalidArgumentError(f"ScramCredentialInfo.iterations must be an int in [{SCRAM_MIN_ITERATIONS}, "
                                       f"{CREDENTIAL_MAX_ITERATIONS}] (Kafka's bounds), got {info.iterations!r}")
        if isinstance(self.password, str):
            password = self.password.encode()
        elif isinstance(self.password, (bytes, bytearray)):
            password = bytes(self.password)
        else:
            raise InvalidArgumentError(f"UserScramCredentialUpsertion.password must be str or bytes, got "
                                       f"{type(self.password).__name__}")
        if not password:
            raise InvalidArgumentError("UserScramCredentialUpsertion.password must not be empty")
        if self.salt is None:
            object.__setattr__(self, "salt", os.urandom(SALT_BYTES))
        elif not isinstance(self.salt, (bytes, bytearray)) or not self.salt:
            raise InvalidArgumentError(f"UserScramCredentialUpsertion.salt must be non-empty bytes or None (random), "
                                       f"got {self.salt!r}")
        assert self.salt is not None
        object.__setattr__(self, "salted_password", salted_password(
            SCRAM_HASHES[mechanism.mechanism_name], password, bytes(self.salt), info.iterations))


@dataclass(frozen=True)
class UserScramCredentialDeletion:
    """Removes `user`'s credential for `mechanism`."""

    user: str
    mechanism: ScramMechanism

    def __post_init__(self) -> None:
        _user(self.user, "UserScramCredentialDeletion.user")
        _mechanism(self.mechanism, "UserScramCredentialDeletion.mechanism")


UserScramCredentialAlteration = UserScramCredentialUpsertion | UserScramCredentialDeletion


def checked_users(users: object) -> list[str] | None:
    """describe_user_scram_credentials' users: None (every user), or user names, each once in the given order."""
    if users is None:
        return None
    if isinstance(users, (str, bytes)) or not isinstance(users, Iterable):
        raise InvalidArgumentError(f"users must be a list of user names or None (every user), got {users!r}")
    return list(dict.fromkeys(_user(u, "each of users") for u in users))


def checked_alterations(alterations: object) -> list[UserScramCredentialAlteration]:
    if isinstance(alterations, (str, bytes)) or not isinstance(alterations, Iterable):
        raise InvalidArgumentError(f"alter_user_scram_credentials takes a list of UserScramCredentialUpsertion or "
                                   f"UserScramCredentialDeletion, got {type(alterations).__name__}")
    out = list(alterations)
    for item in out:
        if not isinstance(item, (UserScramCredentialUpsertion, UserScramCredentialDeletion)):
            raise InvalidArgumentError(f"alter_user_scram_credentials takes UserScramCredentialUpsertion or "
                                       f"UserScramCredentialDeletion values, got {item!r}")
    return out


def alterations_body(alterations: Iterable[UserScramCredentialAlteration]) -> AlterUserScramCredentialsRequestBody:
    """AlterUserScramCredentials' request body for these alterations, in their order."""
    alterations = list(alterations)
    return {
        "deletions": [{"name": d.user, "mechanism": int(d.mechanism)} for d in alterations
                      if isinstance(d, UserScramCredentialDeletion)],
        "upsertions": [{"name": u.user, "mechanism": int(u.credential_info.mechanism),
                        "iterations": u.credential_info.iterations, "salt": bytes(u.salt or b""),
                        "salted_password": u.salted_password} for u in alterations
                       if isinstance(u, UserScramCredentialUpsertion)]}
