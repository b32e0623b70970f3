"""ACL values, as Java's org.apache.kafka.common.acl and .resource packages: what `Admin.create_acls`,
`describe_acls` and `delete_acls` take and return.

Owns the enums with Java's names and wire codes (`ResourceType`, `PatternType`, `AclOperation`, `AclPermissionType`),
the bindings (`ResourcePattern` + `AccessControlEntry` = `AclBinding`) and the filters that match them
(`ResourcePatternFilter` + `AccessControlEntryFilter` = `AclBindingFilter`, `AclBindingFilter.ANY`), with Java's
matching rules (`matches`), and the checks Java's constructors make (a binding names one resource and one entry: no
ANY, no MATCH), raised as InvalidArgumentError naming the field; their wire form (`filter_body`,
`binding_from_wire`) and `checked_acls`, the Admin's argument check. No I/O: the Admin turns them into requests.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from cykafka.errors import InvalidArgumentError, KafkaError

if TYPE_CHECKING:  # the generated bodies are for mypy only
    from cykafka.protocol.bodies import DeleteAclsRequestFilters

WILDCARD_RESOURCE = "*"  # ResourcePattern.WILDCARD_RESOURCE: a literal name matching every resource of its type
WILDCARD_PRINCIPAL = "User:*"  # every principal (AclEntry.WILDCARD_PRINCIPAL_STRING)
WILDCARD_HOST = "*"  # every host
CLUSTER_NAME = "kafka-cluster"  # the cluster resource's one name (Java's Resource.CLUSTER_NAME)
_T = TypeVar("_T")


class CodedEnum(enum.IntEnum):
    """An enum whose values are Kafka's wire codes, UNKNOWN = 0; `code` as Java's `code()`, `from_code` as `fromCode`
    (an unknown code is UNKNOWN). The ACL enums' base, and cykafka.scram's ScramMechanism's."""

    @property
    def code(self) -> int:
        return int(self.value)

    @classmethod
    def from_code(cls, code: int) -> Self:
        try:
            return cls(code)
        except ValueError:
            return cls(0)  # UNKNOWN, as Java's fromCode

    @property
    def is_unknown(self) -> bool:
        return self.value == 0


class ResourceType(CodedEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(CodedEnum):
    UNKNOWN = 0
    ANY = 1  # filters only: any pattern type, the name matched exactly
    MATCH = 2  # filters only: the patterns that would apply to the name (literal, wildcard, prefixes of it)
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(CodedEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
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
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(CodedEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    DENY = 2
    ALLOW = 3


def _enum(value: object, kind: type[CodedEnum], field: str) -> None:
    if not isinstance(value, kind):
        raise InvalidArgumentError(f"{field} must be a {kind.__name__}, got {value!r}")


def _str(value: object, field: str, *, nullable: bool) -> None:
    if not (isinstance(value, str) or (nullable and value is None)):
        raise InvalidArgumentError(f"{field} must be a str{' or None (any)' if nullable else ''}, got {value!r}")


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """The resources an ACL applies to: a literal name (WILDCARD_RESOURCE "*": every resource of the type) or a
    prefix. Neither ANY nor MATCH (those are filters' words)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __post_init__(self) -> None:
        _enum(self.resource_type, ResourceType, "ResourcePattern.resource_type")
        _enum(self.pattern_type, PatternType, "ResourcePattern.pattern_type")
        _str(self.name, "ResourcePattern.name", nullable=False)
        if self.resource_type == ResourceType.ANY:
            raise InvalidArgumentError("ResourcePattern.resource_type must not be ANY (a filter's word)")
        if self.pattern_type in (PatternType.ANY, PatternType.MATCH):
            raise InvalidArgumentError(f"ResourcePattern.pattern_type must not be {self.pattern_type.name} (a "
                                       f"filter's word)")

    def to_filter(self) -> ResourcePatternFilter:
        return ResourcePatternFilter(self.resource_type, self.name, self.pattern_type)

    def __str__(self) -> str:
        return f"{self.resource_type.name}:{self.pattern_type.name}:{self.name}"

    @property
    def is_unknown(self) -> bool:
        return self.resource_type.is_unknown or self.pattern_type.is_unknown


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """Matches resource patterns: resource_type ANY, name None (any name), pattern_type ANY (any pattern type, the
    name exactly) or MATCH (every pattern that applies to the name: it literally, the wildcard, prefixes of it)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    ANY: ClassVar[ResourcePatternFilter]

    def __post_init__(self) -> None:
        _enum(self.resource_type, ResourceType, "ResourcePatternFilter.resource_type")
        _enum(self.pattern_type, PatternType, "ResourcePatternFilter.pattern_type")
        _str(self.name, "ResourcePatternFilter.name", nullable=True)

    def __str__(self) -> str:
        return f"{self.resource_type.name}:{self.pattern_type.name}:{'<any>' if self.name is None else self.name}"

    def matches(self, pattern: ResourcePattern) -> bool:
        """Java's ResourcePatternFilter.matches."""
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:  # a MATCH filter
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return pattern.pattern_type == PatternType.PREFIXED and self.name.startswith(pattern.name)

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None

    def find_indefinite_field(self) -> str | None:
        """The first field that lets the filter match more than one pattern (Java's wording), or None."""
        if self.resource_type == ResourceType.ANY:
            return "Resource type is ANY."
        if self.resource_type.is_unknown:
            return "Resource type is UNKNOWN."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type == PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type.is_unknown:
            return "Resource pattern type is UNKNOWN."
        return None

    @property
    def is_unknown(self) -> bool:
        return self.resource_type.is_unknown or self.pattern_type.is_unknown


ResourcePatternFilter.ANY = ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY)


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    """Who may (ALLOW) or may not (DENY) do what from where: principal "User:alice" (WILDCARD_PRINCIPAL: anyone),
    host "*" (any) or an address. Neither operation nor permission_type ANY."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        _str(self.principal, "AccessControlEntry.principal", nullable=False)
        _str(self.host, "AccessControlEntry.host", nullable=False)
        _enum(self.operation, AclOperation, "AccessControlEntry.operation")
        _enum(self.permission_type, AclPermissionType, "AccessControlEntry.permission_type")
        if self.operation == AclOperation.ANY:
            raise InvalidArgumentError("AccessControlEntry.operation must not be ANY (a filter's word)")
        if self.permission_type == AclPermissionType.ANY:
            raise InvalidArgumentError("AccessControlEntry.permission_type must not be ANY (a filter's word)")

    def to_filter(self) -> AccessControlEntryFilter:
        return AccessControlEntryFilter(self.principal, self.host, self.operation, self.permission_type)

    def __str__(self) -> str:
        return f"{self.principal} {self.permission_type.name} {self.operation.name} from {self.host}"

    @property
    def is_unknown(self) -> bool:
        return self.operation.is_unknown or self.permission_type.is_unknown


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    """Matches entries: principal / host None (any), operation / permission_type ANY (any)."""

    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    ANY: ClassVar[AccessControlEntryFilter]

    def __post_init__(self) -> None:
        _str(self.principal, "AccessControlEntryFilter.principal", nullable=True)
        _str(self.host, "AccessControlEntryFilter.host", nullable=True)
        _enum(self.operation, AclOperation, "AccessControlEntryFilter.operation")
        _enum(self.permission_type, AclPermissionType, "AccessControlEntryFilter.permission_type")

    def __str__(self) -> str:
        return (f"{self.principal or '<any principal>'} {self.permission_type.name} {self.operation.name} from "
                f"{self.host or '<any host>'}")

    def matches(self, entry: AccessControlEntry) -> bool:
        """Java's AccessControlEntryFilter.matches."""
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type == AclPermissionType.ANY or self.permission_type == entry.permission_type))

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None

    def find_indefinite_field(self) -> str | None:
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation == AclOperation.ANY:
            return "Operation is ANY"
        if self.operation.is_unknown:
            return "Operation is UNKNOWN"
        if self.permission_type == AclPermissionType.ANY:
            return "Permission type is ANY"
        if self.permission_type.is_unknown:
            return "Permission type is UNKNOWN"
        return None

    @property
    def is_unknown(self) -> bool:
        return self.operation.is_unknown or self.permission_type.is_unknown


AccessControlEntryFilter.ANY = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: an entry bound to a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, ResourcePattern):
            raise InvalidArgumentError(f"AclBinding.pattern must be a ResourcePattern, got {self.pattern!r}")
        if not isinstance(self.entry, AccessControlEntry):
            raise InvalidArgumentError(f"AclBinding.entry must be an AccessControlEntry, got {self.entry!r}")

    def __str__(self) -> str:
        return f"({self.pattern}: {self.entry})"

    def to_filter(self) -> AclBindingFilter:
        """The filter matching exactly this binding (to delete it)."""
        return AclBindingFilter(self.pattern.to_filter(), self.entry.to_filter())

    @property
    def is_unknown(self) -> bool:
        return self.pattern.is_unknown or self.entry.is_unknown


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Matches bindings: its pattern filter and its entry filter both match (`AclBindingFilter.ANY`: every ACL)."""

    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter

    ANY: ClassVar[AclBindingFilter]

    def __post_init__(self) -> None:
        if not isinstance(self.pattern_filter, ResourcePatternFilter):
            raise InvalidArgumentError(f"AclBindingFilter.pattern_filter must be a ResourcePatternFilter, got "
                                       f"{self.pattern_filter!r}")
        if not isinstance(self.entry_filter, AccessControlEntryFilter):
            raise InvalidArgumentError(f"AclBindingFilter.entry_filter must be an AccessControlEntryFilter, got "
                                       f"{self.entry_filter!r}")

    def __str__(self) -> str:
        return f"({self.pattern_filter}: {self.entry_filter})"

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None

    def find_indefinite_field(self) -> str | None:
        return self.pattern_filter.find_indefinite_field() or self.entry_filter.find_indefinite_field()

    @property
    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown or self.entry_filter.is_unknown


AclBindingFilter.ANY = AclBindingFilter(ResourcePatternFilter.ANY, AccessControlEntryFilter.ANY)


@dataclass(frozen=True, slots=True)
class FilterResult:
    """One ACL a delete_acls filter matched (Java's DeleteAclsResult.FilterResult): deleted when error is None."""

    binding: AclBinding
    error: KafkaError | None = None


__all__ = [
    "CLUSTER_NAME", "WILDCARD_HOST", "WILDCARD_PRINCIPAL", "WILDCARD_RESOURCE", "AccessControlEntry",
    "AccessControlEntryFilter", "AclBinding", "AclBindingFilter", "AclOperation", "AclPermissionType", "FilterResult",
    "PatternType",
    "ResourcePattern", "ResourcePatternFilter", "ResourceType",
]


# -- the wire (the Admin's requests and answers) ----------------------------------------------------------------

def checked_acls(items: object, kind: type[_T], call: str) -> list[_T]:
    """ACL bindings or filters as a request can carry them: of kind, no UNKNOWN enum (Java refuses those too), a
    binding naming one resource pattern and entry (its constructors' checks); else InvalidArgumentError naming it."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InvalidArgumentError(f"{call} takes a list of {kind.__name__}, got {type(items).__name__}")
    out = list(items)
    for item in out:
        if not isinstance(item, kind):
            raise InvalidArgumentError(f"{call} takes {kind.__name__} values, got {item!r}")
        if getattr(item, "is_unknown", False):
            raise InvalidArgumentError(f"{call}: {item} has an UNKNOWN type, operation or permission")
    return out


def filter_body(f: AclBindingFilter) -> DeleteAclsRequestFilters:
    """A filter as DeleteAcls carries it (DescribeAcls' body has the same fields)."""
    p, e = f.pattern_filter, f.entry_filter
    return {"resource_type_filter": p.resource_type.code, "resource_name_filter": p.name,
            "pattern_type_filter": p.pattern_type.code, "principal_filter": e.principal, "host_filter": e.host,
            "operation": e.operation.code, "permission_type": e.permission_type.code}


def binding_from_wire(resource: Mapping[str, Any], entry: Mapping[str, Any]) -> AclBinding:
    """A binding from an answer: its resource pattern's fields (resource_type, resource_name, pattern_type) and its
    entry's (principal, host, operation, permission_type), in one row or two."""
    return AclBinding(ResourcePattern(ResourceType.from_code(resource["resource_type"]), resource["resource_name"],
                                      PatternType.from_code(resource["pattern_type"])),
                      AccessControlEntry(entry["principal"], entry["host"], AclOperation.from_code(entry["operation"]),
                                         AclPermissionType.from_code(entry["permission_type"])))
