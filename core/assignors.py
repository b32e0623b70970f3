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
- `cooperative-sticky` (CooperativeStickyAssignor over AbstractStickyAssignor): balanced, keeps what members own,
  and, KIP-429, never gives a partition to a member while another still owns it: such a partition is left out this
  rebalance (its owner revokes it and rejoins) and handed over in the next. Owned partitions count only for members
  of the highest generation present; two members of that generation claiming one partition both lose the claim.
  With identical subscriptions this is Java's `constrainedAssign` step by step, except that members are visited in
  member-id order where Java walks a HashMap. With differing subscriptions it follows Java's `generalAssign` rules
  (keep valid owned partitions, give each unassigned one - fewest eligible members first - to the eligible member
  with the fewest, then move partitions while some member has two more than an eligible other) without Java's
  tie-breaking by previous generations.
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


def _valid_owned(members: Sequence[Member], partition_counts: Mapping[str, int],
                 ) -> tuple[dict[str, list[TP]], set[TP]]:
    """Java's allSubscriptionsEqual bookkeeping: the partitions each member may keep (only members of the highest
    generation keep theirs; a partition of a topic nobody's metadata has, or claimed twice in that generation, is
    nobody's) and the partitions claimed twice."""
    owned: dict[str, list[TP]] = {m.member_id: [] for m in members}
    claimed_by: dict[TP, str] = {}
    doubly: set[TP] = set()
    max_generation = DEFAULT_GENERATION
    top: list[str] = []
    for m in sorted(members, key=lambda m: _java_key(m.member_id)):
        if m.generation < max_generation:
            continue
        if m.generation > max_generation:
            claimed_by.clear()
            doubly.clear()
            for dropped in top:
                owned[dropped].clear()
            top.clear()
            max_generation = m.generation
        top.append(m.member_id)
        for tp in dict.fromkeys(m.owned):
            if tp[0] not in partition_counts or not 0 <= tp[1] < partition_counts[tp[0]]:
                continue
            other = claimed_by.get(tp)
            claimed_by[tp] = m.member_id
            if other is None:
                owned[m.member_id].append(tp)
            else:
                if tp in owned[other]:
                    owned[other].remove(tp)
                doubly.add(tp)
    return owned, doubly


def _constrained(members: Sequence[Member], partition_counts: Mapping[str, int], owned: dict[str, list[TP]],
                 doubly: set[TP]) -> tuple[Assignment, dict[TP, str]]:
    """Java's constrainedAssign (identical subscriptions): keep owned partitions up to the quota, then fill the members
    below minQuota round-robin, then up to maxQuota for as many members as the remainder allows. Returns the
    assignment and the partitions moving from a previous owner (partition -> new member)."""
    all_tps = _all_partitions(members, partition_counts)
    n_members = len(members)
    min_quota, extra = divmod(len(all_tps), n_members)
    max_quota = min_quota + (extra > 0)
    over_min = 0  # members given more than min_quota so far (at most `extra`)
    assignment: Assignment = {m.member_id: [] for m in members}
    revoked: set[TP] = set()
    under: list[str] = []
    exact: list[str] = []
    for member in sorted(owned, key=_java_key):
        keep = [tp for tp in owned[member] if tp not in doubly]
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
        if under:
            if cursor == len(under):
                cursor = 0
            member = under[cursor]
            cursor += 1
        elif exact_queue:
            member = exact_queue.popleft()
        else:
            raise AssertionError(f"cooperative-sticky: no member left for {tp} (quota {min_quota}-{max_quota})")
        assignment[member].append(tp)
        if tp in revoked or tp in doubly:
            transferring[tp] = member
        if len(assignment[member]) == min_quota and under and under[cursor - 1] == member:
            cursor -= 1
            del under[cursor]
            exact_queue.append(member)
    return assignment, transferring


def _general(members: Sequence[Member], partition_counts: Mapping[str, int],
             owned: dict[str, list[TP]]) -> Assignment:
    """Differing subscriptions (see the module docstring)."""
    potential = {m.member_id: {t for t in m.topics if t in partition_counts} for m in members}
    consumers_of: dict[str, list[str]] = {}
    for m in sorted(members, key=lambda m: _java_key(m.member_id)):
        for t in potential[m.member_id]:
            consumers_of.setdefault(t, []).append(m.member_id)
    current = {member: [tp for tp in tps if tp[0] in potential[member]] for member, tps in owned.items()}
    owner = {tp: member for member, tps in current.items() for tp in tps}

    def load_key(member: str) -> tuple[int, bytes]:
        return len(current[member]), _java_key(member)

    by_choice = sorted(_all_partitions(members, partition_counts),
                       key=lambda tp: (len(consumers_of[tp[0]]), _java_key(tp[0]), tp[1]))
    for tp in by_choice:
        if tp not in owner:
            target = min(consumers_of[tp[0]], key=load_key)
            current[target].append(tp)
            owner[tp] = target
    movable = [tp for tp in by_choice if len(consumers_of[tp[0]]) > 1]
    moved = True
    while moved:  # each move lowers the sum of squared loads by >= 2, so this ends
        moved = False
        for tp in movable:
            source, target = owner[tp], min(consumers_of[tp[0]], key=load_key)
            if len(current[source]) > len(current[target]) + 1:
                current[source].remove(tp)
                current[target].append(tp)
                owner[tp] = target
                moved = True
    return current


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
    owned, doubly = _valid_owned(members, {t: n for t, n in partition_counts.items()
                                           if any(t in m.topics for m in members)})
    if all(m.topics == members[0].topics for m in members):  # Java compares the raw topic sets
        assignment, transferring = _constrained(members, partition_counts, owned, doubly)
    else:
        assignment = _general(members, partition_counts, owned)
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
