"""confluent-kafka's ACL values (confluent_kafka.admin's AclBinding, AclBindingFilter, ResourcePatternType,
AclOperation, AclPermissionType; the ResourceType enum lives in admin.py) and their translation to and from
cykafka.acl's, for AdminClient.create_acls / describe_acls / delete_acls."""

from __future__ import annotations

import enum
from typing import Any

from cykafka import acl
from cykafka.compat.confluent_kafka.error import KafkaError, KafkaException


class ResourcePatternType(enum.Enum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.Enum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(enum.Enum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _enum(value: Any, kind: type[enum.Enum], field: str) -> Any:
    """confluent's conversion: the enum itself, or its name as a str (any case)."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and value.upper() in kind.__members__:
        return kind[value.upper()]
    raise TypeError(f"{field} must be a {kind.__name__} or its name, got {value!r}")


class AclBinding:
    """One ACL: restype (ResourceType), name, resource_pattern_type, principal, host, operation, permission_type.
    Equal, hashed and ordered by those."""

    _filter = False

    def __init__(self, restype: Any, name: str | None, resource_pattern_type: Any, principal: str | None,
                 host: str | None, operation: Any, permission_type: Any) -> None:
        from cykafka.compat.confluent_kafka.admin import ResourceType

        self.restype = _enum(restype, ResourceType, "restype")
        self.name = name
        self.resource_pattern_type = _enum(resource_pattern_type, ResourcePatternType, "resource_pattern_type")
        self.principal = principal
        self.host = host
        self.operation = _enum(operation, AclOperation, "operation")
        self.permission_type = _enum(permission_type, AclPermissionType, "permission_type")
        for field in ("name", "principal", "host"):
            value = getattr(self, field)
            if not (isinstance(value, str) or (value is None and self._filter)):
                raise TypeError(f"{field} must be a str, got {value!r}")
        words = {"restype": self.restype.name, "resource_pattern_type": self.resource_pattern_type.name,
                 "operation": self.operation.name, "permission_type": self.permission_type.name}
        forbidden = {"UNKNOWN"} if self._filter else {"UNKNOWN", "ANY", "MATCH"}
        for field, word in words.items():
            if word in forbidden:
                raise ValueError(f"Cannot use enum {word}, value {getattr(self, field).value} in this class")

    def _to_tuple(self) -> tuple[Any, ...]:
        return (self.restype, self.name, self.resource_pattern_type, self.principal, self.host, self.operation,
                self.permission_type)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({','.join(str(v) for v in self._to_tuple())})"

    def __hash__(self) -> int:
        return hash(self._to_tuple())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AclBinding) or type(self) is not type(other):
            return NotImplemented
        return self._to_tuple() == other._to_tuple()

    def __lt__(self, other: AclBinding) -> bool:
        return tuple(v.value if isinstance(v, enum.Enum) else v or "" for v in self._to_tuple()) < tuple(
            v.value if isinstance(v, enum.Enum) else v or "" for v in other._to_tuple())


class AclBindingFilter(AclBinding):
    """Matches ACLs: name, principal or host None (any), the enums ANY (any; resource_pattern_type MATCH: every
    pattern that applies to the name)."""

    _filter = True


def _resource_type(value: Any) -> acl.ResourceType:
    return acl.ResourceType.CLUSTER if value.name == "BROKER" else acl.ResourceType[value.name]


def binding(ours: AclBinding) -> acl.AclBinding:
    try:
        return acl.AclBinding(
            acl.ResourcePattern(_resource_type(ours.restype), str(ours.name),
                                acl.PatternType[ours.resource_pattern_type.name]),
            acl.AccessControlEntry(str(ours.principal), str(ours.host), acl.AclOperation[ours.operation.name],
                                   acl.AclPermissionType[ours.permission_type.name]))
    except KeyError as e:
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, f"{ours!r}: {e} has no Kafka code")) from e


def binding_filter(ours: AclBindingFilter) -> acl.AclBindingFilter:
    return acl.AclBindingFilter(
        acl.ResourcePatternFilter(_resource_type(ours.restype), ours.name,
                                  acl.PatternType[ours.resource_pattern_type.name]),
        acl.AccessControlEntryFilter(ours.principal, ours.host, acl.AclOperation[ours.operation.name],
                                     acl.AclPermissionType[ours.permission_type.name]))


def from_binding(theirs: acl.AclBinding) -> AclBinding:
    """cykafka's binding as confluent's (an operation librdkafka has no name for is UNKNOWN)."""
    from cykafka.compat.confluent_kafka.admin import ResourceType

    kind = theirs.pattern.resource_type.name
    restype = ResourceType.BROKER if kind == "CLUSTER" else ResourceType.__members__.get(kind, ResourceType.UNKNOWN)
    made = AclBinding.__new__(AclBinding)
    made.restype = restype
    made.name = theirs.pattern.name
    made.resource_pattern_type = ResourcePatternType[theirs.pattern.pattern_type.name]
    made.principal = theirs.entry.principal
    made.host = theirs.entry.host
    made.operation = AclOperation.__members__.get(theirs.entry.operation.name, AclOperation.UNKNOWN)
    made.permission_type = AclPermissionType[theirs.entry.permission_type.name]
    return made
