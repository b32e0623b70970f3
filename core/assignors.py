"""Partition assignors of the classic consumer group protocol, as the group leader runs them: pure functions of the
members' subscriptions and the partition count of each topic, deterministic, matching Java's assignors.

Pure Python on purpose: an assignor runs once per rebalance on the leader, never per record.

    assignor(members: Sequence[Member], partition_counts: Mapping[str, int]) -> {member_id: [(topic, partition)]}

- A partition is a `(topic, partition)` tuple (`cykafka.TopicPartition` is one); each member's list comes back
  sorted. Every member gets an entry, possibly empty. Topics without a partition count (unknown to the metadata) are
  left out, as Java's AbstractPartitionAssignor does.
- Members are ordered as Java's `MemberInfo` orders them: members with a group.instance.id first, by it, then the
  others by member id (strings compare by UTF-16 code units, as Java's `String.compareTo`).
- `range` (RangeAssignor), `roundrobin` (RoundRobinAssignor): eager only; they ignore what members own.
- `cooperative-sticky` (CooperativeStickyAssignor over AbstractStickyAssignor, Kafka 3.5+ without rack data):
  balanced, keeps what members own, and, KIP-429, never gives a partition to a member while another still owns it:
  such a partition is left out this rebalance (its owner revokes it and rejoins) and handed over in the next. When
  two members claim one partition the higher generation keeps it; within one generation both lose the claim.
  Identical subscriptions take Java's ConstrainedAssignmentBuilder, others its GeneralAssignmentBuilder, step by
  step. Where Java walks a HashMap or HashSet the same order is computed (Java's String and TopicPartition hash
  codes, a table sized by the entries it holds), and members come in the JoinGroup answer's order, as Java's leader
  fills its map; a set of moved partitions is ordered by its current size where Java's table may have grown larger.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

TP = tuple[str, int]
Assignment = dict[str, list[TP]]
DEFAULT_GENERATION = -1  # Java's AbstractStickyAssignor.DEFAULT_GENERATION: unknown


class RebalanceProtocol(IntEnum):
    """Java's ConsumerPartitionAssignor.RebalanceProtocol; a consumer uses the highest all its assignors support."""

    EAGER = 0
    COOPERATIVE = 1


@dataclass(frozen=True, slots=True)
class Member:
    """One member's subscription as the leader reads it from JoinGroup: topics, the partitions it owns now
    (cooperative only; eager members own nothing when they join) and the generation they were assigned in."""

    member_id: str
    topics: frozenset[str]
    owned: tuple[TP, ...] = ()
    generation: int = DEFAULT_GENERATION
    group_instance_id: str | None = None


def _java_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def member_order(member: Member) -> tuple[int, bytes, bytes]:
    """Sort key equal to Java's MemberInfo.compareTo: static members first by instance id, then by member id (and
    the member id breaks a tie Java leaves to the input order)."""
    member_key = _java_key(member.member_id)
    if member.group_instance_id is not None:
        return 0, _java_key(member.group_instance_id), member_key
    return 1, member_key, b""


def _sorted_tps(tps: Iterable[TP]) -> list[TP]:
    return sorted(tps, key=lambda tp: (_java_key(tp[0]), tp[1]))


def _all_partitions(members: Sequence[Member], partition_counts: Mapping[str, int]) -> list[TP]:
    """Every partition of every topic someone subscribes to and the metadata knows, sorted (Java's
    allPartitionsSorted)."""
    topics = sorted({t for m in members for t in m.topics if t in partition_counts}, key=_java_key)
    return [(t, p) for t in topics for p in range(partition_counts[t])]


def _finish(result: Assignment) -> Assignment:
    return {member: _sorted_tps(tps) for member, tps in result.items()}


# --- range ----------------------------------------------------------------------------------------------------------


def range_assign(members: Sequence[Member], partition_counts: Mapping[str, int]) -> Assignment:
    """Java's RangeAssignor: per topic, its members in MemberInfo order each take a consecutive range; the first
    (partitions % members) take one more."""
    result: Assignment = {m.member_id: [] for m in members}
    ordered = sorted(members, key=member_order)
    for topic in sorted({t for m in members for t in m.topics}, key=_java_key):
        count = partition_counts.get(topic)
        if count is None:
            continue
        consumers = [m for m in ordered if topic in m.topics]
        per_member, extra = divmod(count, len(consumers))
        for i, m in enumerate(consumers):
            start = per_member * i + min(i, extra)
            result[m.member_id] += [(topic, p) for p in range(start, start + per_member + (i < extra))]
    return _finish(result)


# --- roundrobin -----------------------------------------------------------------------------------------------------


def round_robin_assign(members: Sequence[Member], partition_counts: Mapping[str, int]) -> Assignment:
    """Java's RoundRobinAssignor: all partitions sorted, dealt around the members in MemberInfo order, skipping a
    member not subscribed to the partition's topic."""
    result: Assignment = {m.member_id: [] for m in members}
    ring = sorted(members, key=member_order)
    turn = 0
    for tp in _all_partitions(members, partition_counts):
        while tp[0] not in ring[turn % len(ring)].topics:
            turn += 1
        result[ring[turn % len(ring)].member_id].append(tp)
        turn += 1
    return _finish(result)


# --- cooperative-sticky ---------------------------------------------------------------------------------------------


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 arithmetic)."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def _java_tp_hash(tp: TP) -> int:
    """Java's TopicPartition.hashCode."""
    return _int32(31 * (31 + tp[1]) + java_string_hash(tp[0]))


def _hash_order(items: Sequence[Any], hash_of: Callable[[Any], int]) -> list[Any]:
    """The iteration order of a java.util.HashMap/HashSet holding `items`, put in this order: by bucket (the spread
    hash masked by the table size, which starts at 16 and doubles past a 0.75 load), insertion order within one."""
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2

    def bucket(item: Any) -> int:
        h = hash_of(item) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [item for _, item in sorted(enumerate(items), key=lambda pair: (bucket(pair[1]), pair[0]))]


def _owned_claims(members: Sequence[Member], partition_counts: Mapping[str, int],
                  ) -> tuple[dict[str, list[TP]], set[TP]]:
    """Java's allSubscriptionsEqual bookkeeping: each member's claims on partitions of the assigned topics, where a
    claim contested by a member of a higher generation is dropped and one contested within the same generation is
    dropped for both (and returned among the doubly claimed). Members are visited in Java's HashMap order. A claim on
    a partition that does not exist is dropped too (Java keeps it)."""
    generation = {m.member_id: m.generation for m in members}
    owned: dict[str, list[TP]] = {}
    owner_of: dict[TP, str] = {}
    doubly: set[TP] = set()
    for m in _hash_order(members, lambda m: java_string_hash(m.member_id)):
        mine = owned[m.member_id] = []
        for tp in m.owned:
            if not 0 <= tp[1] < partition_counts.get(tp[0], 0):
                continue
            other = owner_of.get(tp)
            if other is None:
                mine.append(tp)
                owner_of[tp] = m.member_id
            elif m.generation == generation[other]:
                doubly.add(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                owner_of[tp] = m.member_id
            elif m.generation > generation[other]:
                mine.append(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                owner_of[tp] = m.member_id
    return owned, doubly


def _sorted_topics(topics: Iterable[str]) -> list[str]:
    return sorted(topics, key=_java_key)


def _constrained(partition_counts: Mapping[str, int], owned: dict[str, list[TP]],
                 doubly: set[TP]) -> tuple[Assignment, dict[TP, str]]:
    """Java's ConstrainedAssignmentBuilder (identical subscriptions; no racks): each member keeps its owned partitions
    (by partition, then topic) up to minQuota, or maxQuota while fewer than `total % members` members have more than
    minQuota; the rest go round-robin to the members under minQuota (sorted), then one each to members at minQuota.
    Returns the assignment and the partitions moving from a previous owner (partition -> new member)."""
    all_tps = [(t, p) for t in _sorted_topics(partition_counts) for p in range(partition_counts[t])]
    min_quota, extra = divmod(len(all_tps), len(owned))
    max_quota = min_quota + (extra > 0)
    over_min = 0  # members given more than min_quota so far
    assignment: Assignment = {member: [] for member in owned}
    revoked: set[TP] = set()
    under: list[str] = []
    exact: list[str] = []
    for member, claims in owned.items():  # Java's HashMap order, kept by _owned_claims
        keep = [tp for tp in sorted(claims, key=lambda tp: (tp[1], _java_key(tp[0]))) if tp not in doubly]
        if len(keep) < min_quota:
            assignment[member] += keep
            under.append(member)
        elif len(keep) >= max_quota and over_min < extra:
            over_min += 1
            if over_min == extra:
                exact.clear()
            assignment[member] += keep[:max_quota]
            revoked.update(keep[max_quota:])
        else:
            assignment[member] += keep[:min_quota]
            revoked.update(keep[min_quota:])
            if over_min < extra:
                exact.append(member)
    taken = {tp for tps in assignment.values() for tp in tps}
    under.sort(key=_java_key)
    exact_queue = deque(sorted(exact, key=_java_key))
    transferring: dict[TP, str] = {}
    cursor = 0  # Java's iterator over `under`
    for tp in (tp for tp in all_tps if tp not in taken):
        if cursor < len(under):
            member = under[cursor]
            cursor += 1
        elif under:
            member, cursor = under[0], 1
        elif exact_queue:
            member = exact_queue.popleft()
        else:
            raise AssertionError(f"cooperative-sticky: no member left for {tp} (quota {min_quota}-{max_quota})")
        assignment[member].append(tp)
        if tp in revoked or tp in doubly:
            transferring[tp] = member
        if len(assignment[member]) == min_quota and cursor and under[cursor - 1] == member:
            cursor -= 1
            del under[cursor]
            exact_queue.append(member)
    return assignment, transferring


class _General:
    """Java's GeneralAssignmentBuilder without racks (differing subscriptions): keep valid owned partitions, give each
    free one - topics with the fewest eligible members first - to the eligible member with the fewest partitions,
    then move partitions while some member has two more than an eligible other, preferring to move a partition back
    to its owner of an earlier generation and undoing a topic's earlier move between the same two members; keep the
    result only if it is better balanced (Java's balance score)."""

    def __init__(self, members: Sequence[Member], partition_counts: Mapping[str, int],
                 owned: dict[str, list[TP]]) -> None:
        self.counts = dict(partition_counts)
        self.topics_of = {m.member_id: [t for t in m.topics if t in partition_counts] for m in members}
        self.consumers_of: dict[str, list[str]] = {t: [] for t in partition_counts}
        for m in members:
            for t in self.topics_of[m.member_id]:
                self.consumers_of[t].append(m.member_id)
        self.current = {member: list(tps) for member, tps in owned.items()}
        self.owner = {tp: member for member, tps in self.current.items() for tp in tps}
        topics = sorted(partition_counts, key=lambda t: (len(self.consumers_of[t]), _java_key(t)))
        self.sorted_partitions = [(t, p) for t in topics for p in range(partition_counts[t])]
        self.movements: dict[TP, tuple[str, str]] = {}  # partition -> (first source, current destination)
        self.moved_sets: dict[tuple[str, str, str], list[TP]] = {}  # (topic, src, dst) -> partitions, Java set order
        max_generation = max((m.generation for m in members), default=DEFAULT_GENERATION)
        self.previous: dict[TP, tuple[str, int]] = {}  # partition -> its owner in the newest older generation
        for m in _hash_order(members, lambda m: java_string_hash(m.member_id)):
            if m.generation < max_generation:
                for tp in m.owned:
                    if tp not in self.previous or m.generation > self.previous[tp][1]:
                        self.previous[tp] = (m.member_id, m.generation)

    def load(self, member: str) -> tuple[int, bytes]:
        return len(self.current[member]), _java_key(member)

    def max_size(self, member: str) -> int:
        return sum(self.counts[t] for t in self.topics_of[member])

    def build(self) -> Assignment:
        revocation_required = False
        assigned: set[TP] = set()
        for member, tps in self.current.items():
            for tp in list(tps):
                if tp[0] not in self.topics_of[member]:
                    tps.remove(tp)
                    revocation_required = True
                else:
                    assigned.add(tp)
        self.owner = {tp: member for member, tps in self.current.items() for tp in tps}
        unassigned = [tp for tp in self.sorted_partitions if tp not in assigned]
        initializing = not any(self.current.values())
        for tp in unassigned:
            eligible = self.consumers_of[tp[0]]
            if eligible:
                self._put(tp, min(eligible, key=self.load))
        fixed_topics = {t for t, cs in self.consumers_of.items() if len(cs) < 2}
        reassignable = [tp for tp in self.sorted_partitions if tp[0] not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed = {member: self.current.pop(member) for member in list(self.current)
                 if len(self.current[member]) >= self.max_size(member)
                 and all(tp[0] in fixed_topics for tp in self.current[member])}
        before = {member: list(tps) for member, tps in self.current.items()}
        before_owner = dict(self.owner)
        if not revocation_required:
            self._reassign(unassigned)
        moved = self._reassign(reassignable)
        if not initializing and moved and _balance_score(self.current) >= _balance_score(before):
            self.current, self.owner = before, before_owner
        self.current.update(fixed)
        return self.current

    def _put(self, tp: TP, member: str) -> None:
        self.current[member].append(tp)
        self.owner[tp] = member

    def _balanced(self) -> bool:
        sizes = [len(tps) for tps in self.current.values()]
        if not sizes or min(sizes) >= max(sizes) - 1:
            return True
        for member, tps in self.current.items():
            size, mine = len(tps), set(tps)
            if size >= self.max_size(member):
                continue
            for t in self.topics_of[member]:
                for p in range(self.counts[t]):
                    other = self.owner.get((t, p))
                    if (t, p) not in mine and other in self.current and size + 1 < len(self.current[other]):
                        return False
        return True

    def _reassign(self, partitions: Sequence[TP]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._balanced():
                    break
                member = self.owner[tp]
                before = self.previous.get(tp)
                if before is not None and before[0] in self.current and tp[0] in self.topics_of[before[0]] \
                        and len(self.current[member]) > len(self.current[before[0]]) + 1:
                    self._move(tp, before[0])
                    performed = modified = True
                    continue
                if any(len(self.current[member]) > len(self.current[other]) + 1
                       for other in self.consumers_of[tp[0]] if other in self.current):
                    target = min((c for c in self.consumers_of[tp[0]] if c in self.current), key=self.load)
                    self._move(tp, target)
                    performed = modified = True
        return performed

    def _move(self, tp: TP, target: str) -> None:
        """Java's reassignPartition: if a partition of this topic moved from `target` to the current owner before,
        that one moves back instead (stickiness), else `tp` moves."""
        source = self.owner[tp]
        origin = self.movements[tp][0] if tp in self.movements else source
        back = self.moved_sets.get((tp[0], target, origin))
        if back:
            tp = _hash_order(back, _java_tp_hash)[0]
            source = self.owner[tp]
        self._record(tp, source, target)
        self.current[source].remove(tp)
        self.current[target].append(tp)
        self.owner[tp] = target

    def _record(self, tp: TP, source: str, target: str) -> None:
        """Java's PartitionMovements.movePartition."""
        if tp in self.movements:
            first, last = self.movements.pop(tp)
            self.moved_sets[(tp[0], first, last)].remove(tp)
            if first != target:
                self.movements[tp] = (first, target)
                self.moved_sets.setdefault((tp[0], first, target), []).append(tp)
        else:
            self.movements[tp] = (source, target)
            self.moved_sets.setdefault((tp[0], source, target), []).append(tp)


def _balance_score(assignment: Assignment) -> int:
    sizes = [len(tps) for tps in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1:])


def _transferring(members: Sequence[Member], assignment: Assignment) -> dict[TP, str]:
    """Java's computePartitionsTransferringOwnership: partitions added to one member and revoked from another
    (by what members claim to own, generation aside)."""
    added: dict[TP, str] = {}
    revoked: set[TP] = set()
    for m in members:
        owned, assigned = set(m.owned), set(assignment[m.member_id])
        added.update((tp, m.member_id) for tp in assigned - owned)
        revoked |= owned - assigned
    return {tp: member for tp, member in added.items() if tp in revoked}


def cooperative_sticky_assign(members: Sequence[Member], partition_counts: Mapping[str, int]) -> Assignment:
    """Java's CooperativeStickyAssignor (see the module docstring): the sticky assignment, minus every partition that
    changes owner in this rebalance (given to its new member in the next one)."""
    if not members:
        return {}
    counts = {t: n for t, n in partition_counts.items() if any(t in m.topics for m in members)}
    owned, doubly = _owned_claims(members, counts)
    if all(m.topics == members[0].topics for m in members):  # Java compares the raw topic sets
        assignment, transferring = _constrained(counts, owned, doubly)
    else:
        assignment = _General(members, counts, owned).build()
        transferring = _transferring(members, assignment)
    for tp, member in transferring.items():
        assignment[member].remove(tp)
    return _finish(assignment)


# --- the registry ---------------------------------------------------------------------------------------------------

Assignor = Callable[[Sequence[Member], Mapping[str, int]], Assignment]

ASSIGNORS: dict[str, Assignor] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
    "cooperative-sticky": cooperative_sticky_assign,
}
SUPPORTED_PROTOCOLS: dict[str, frozenset[RebalanceProtocol]] = {
    "range": frozenset({RebalanceProtocol.EAGER}),
    "roundrobin": frozenset({RebalanceProtocol.EAGER}),
    "cooperative-sticky": frozenset({RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE}),
}
_GENERATION = struct.Struct(">i")


def rebalance_protocol(assignor_names: Sequence[str]) -> RebalanceProtocol:
    """The protocol a consumer with these assignors follows: the highest every one supports (Java's
    ConsumerCoordinator)."""
    common = frozenset.intersection(*(SUPPORTED_PROTOCOLS[name] for name in assignor_names))
    return max(common)


def subscription_user_data(assignor_name: str, generation: int) -> bytes | None:
    """What an assignor adds to its JoinGroup metadata: cooperative-sticky writes its generation as an int32, as
    Java's does for leaders that read subscriptions older than v2."""
    return _GENERATION.pack(generation) if assignor_name == "cooperative-sticky" else None


def member_generation(subscription: Mapping[str, Any]) -> int:
    """A decoded subscription's generation: its generation_id field (v2+), else cooperative-sticky's int32 user data,
    else DEFAULT_GENERATION (Java's CooperativeStickyAssignor.memberData)."""
    if subscription["generation_id"] >= 0:
        return int(subscription["generation_id"])
    user_data = subscription["user_data"]
    if user_data is not None and len(user_data) >= _GENERATION.size:
        return int(_GENERATION.unpack_from(user_data)[0])
    return DEFAULT_GENERATION
