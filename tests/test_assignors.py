"""The assignors (cykafka.core.assignors): Java's documented examples, and properties over random groups - every
partition assigned exactly once to a member subscribed to its topic, balance, stickiness, and cooperative-sticky's
KIP-429 rule (no partition given while another member still owns it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from cykafka.core.assignors import (
    ASSIGNORS,
    TP,
    Assignment,
    Member,
    RebalanceProtocol,
    cooperative_sticky_assign,
    java_string_hash,
    member_generation,
    range_assign,
    rebalance_protocol,
    round_robin_assign,
    subscription_user_data,
)

ALL_TOPICS = ("t0", "t1", "t2", "t3")


def _m(member_id: str, topics: Sequence[str], owned: Sequence[TP] = (), generation: int = -1,
       instance: str | None = None) -> Member:
    return Member(member_id, frozenset(topics), tuple(owned), generation, instance)


def _tps(text: str) -> list[TP]:
    """"t0p0 t1p2" -> [("t0", 0), ("t1", 2)]"""
    return [(item[:2], int(item[3:])) for item in text.split()]


# -- Java's documented examples -------------------------------------------------------------------------------------

def test_range_javadoc_example() -> None:
    """RangeAssignor's javadoc: C0, C1 on t0, t1 with 3 partitions each."""
    members = [_m("C0", ["t0", "t1"]), _m("C1", ["t0", "t1"])]
    assert range_assign(members, {"t0": 3, "t1": 3}) == {"C0": _tps("t0p0 t0p1 t1p0 t1p1"), "C1": _tps("t0p2 t1p2")}


def test_range_orders_static_members_by_instance_id_first() -> None:
    """RangeAssignor's javadoc on static members: I0 and I1 get what C0 and C1 got, whatever their member ids; a
    member without an instance id comes after those with one."""
    members = [_m("zzz", ["t0", "t1"], instance="I0"), _m("aaa", ["t0", "t1"], instance="I1")]
    assert range_assign(members, {"t0": 3, "t1": 3}) == {"zzz": _tps("t0p0 t0p1 t1p0 t1p1"),
                                                          "aaa": _tps("t0p2 t1p2")}
    mixed = [_m("a-dynamic", ["t0"]), _m("z-static", ["t0"], instance="I9")]
    assert range_assign(mixed, {"t0": 2}) == {"z-static": [("t0", 0)], "a-dynamic": [("t0", 1)]}


def test_roundrobin_javadoc_examples() -> None:
    """RoundRobinAssignor's javadoc: identical subscriptions, then C0 on t0, C1 on t0-t1, C2 on t0-t2."""
    same = [_m("C0", ["t0", "t1"]), _m("C1", ["t0", "t1"])]
    assert round_robin_assign(same, {"t0": 3, "t1": 3}) == {"C0": _tps("t0p0 t0p2 t1p1"),
                                                             "C1": _tps("t0p1 t1p0 t1p2")}
    mixed = [_m("C0", ["t0"]), _m("C1", ["t0", "t1"]), _m("C2", ["t0", "t1", "t2"])]
    assert round_robin_assign(mixed, {"t0": 1, "t1": 2, "t2": 3}) == {
        "C0": _tps("t0p0"), "C1": _tps("t1p0"), "C2": _tps("t1p1 t2p0 t2p1 t2p2")}


def test_sticky_javadoc_examples() -> None:
    """StickyAssignor's javadoc (the algorithm cooperative-sticky shares): four topics of two partitions over three
    members; and the unequal subscriptions, first balanced, then with C0 gone C1 keeps its partitions and takes t0p0."""
    members = [_m(c, ALL_TOPICS) for c in ("C0", "C1", "C2")]
    assert cooperative_sticky_assign(members, dict.fromkeys(ALL_TOPICS, 2)) == {
        "C0": _tps("t0p0 t1p1 t3p0"), "C1": _tps("t0p1 t2p0 t3p1"), "C2": _tps("t1p0 t2p1")}
    counts = {"t0": 1, "t1": 2, "t2": 3}
    mixed = [_m("C0", ["t0"]), _m("C1", ["t0", "t1"]), _m("C2", ["t0", "t1", "t2"])]
    first = cooperative_sticky_assign(mixed, counts)
    assert first == {"C0": _tps("t0p0"), "C1": _tps("t1p0 t1p1"), "C2": _tps("t2p0 t2p1 t2p2")}
    after = [_m("C1", ["t0", "t1"], first["C1"], 1), _m("C2", ["t0", "t1", "t2"], first["C2"], 1)]
    assert cooperative_sticky_assign(after, counts) == {"C1": _tps("t0p0 t1p0 t1p1"), "C2": _tps("t2p0 t2p1 t2p2")}


def test_cooperative_withholds_a_moving_partition_until_the_next_rebalance() -> None:
    """KIP-429: C2 joins C0 and C1; the partitions it will get are only revoked in this rebalance, given next."""
    counts = {"t0": 3, "t1": 3}
    c0, c1 = _tps("t0p0 t0p2 t1p1"), _tps("t0p1 t1p0 t1p2")
    first = cooperative_sticky_assign([_m("C0", ["t0", "t1"], c0, 1), _m("C1", ["t0", "t1"], c1, 1),
                                       _m("C2", ["t0", "t1"])], counts)
    assert first["C2"] == [] and set(first["C0"]) < set(c0) and set(first["C1"]) < set(c1)
    moving = (set(c0) | set(c1)) - set(first["C0"]) - set(first["C1"])
    assert len(moving) == 2
    second = cooperative_sticky_assign([_m(c, ["t0", "t1"], first[c], 2) for c in ("C0", "C1", "C2")], counts)
    assert set(second["C2"]) == moving and second["C0"] == first["C0"] and second["C1"] == first["C1"]


def test_cooperative_generations_decide_conflicting_claims() -> None:
    """A contested claim goes to the higher generation; two members of one generation claiming a partition both lose
    it, and it is withheld (both revoke it) rather than given to either; an uncontested claim stands whatever its
    generation."""
    counts = {"t0": 2}
    stale = cooperative_sticky_assign([_m("A", ["t0"], _tps("t0p0 t0p1"), 3), _m("B", ["t0"], _tps("t0p0"), 2)],
                                      counts)
    assert stale == {"A": _tps("t0p0"), "B": []}  # B's stale claim is void; A's second partition is revoked first
    twice = cooperative_sticky_assign([_m("A", ["t0"], _tps("t0p0"), 3), _m("B", ["t0"], _tps("t0p0 t0p1"), 3)],
                                      counts)
    assert ("t0", 0) not in twice["A"] + twice["B"]  # doubly claimed: withheld this round
    assert twice["B"] == _tps("t0p1")
    older = cooperative_sticky_assign([_m("A", ["t0"], _tps("t0p0"), 3), _m("B", ["t0"], _tps("t0p1"), 1)], counts)
    assert older == {"A": _tps("t0p0"), "B": _tps("t0p1")}


def test_cooperative_a_member_over_its_quota_keeps_its_partitions_in_javas_partition_then_topic_order() -> None:
    """Java's AbstractStickyAssignor.assignOwnedPartitions (Kafka 3.5+) sorts a member's owned partitions by
    partition, then topic, and keeps the first quota of them: C0 owning t0p0 t0p1 t1p0 t1p1 with a newcomer keeps
    t0p0 t1p0 and revokes t0p1 t1p1 (in (topic, partition) order it would keep both of t0 and revoke t1's)."""
    counts = {"t0": 2, "t1": 2}
    first = cooperative_sticky_assign([_m("C0", ["t0", "t1"], _tps("t1p1 t0p1 t1p0 t0p0"), 1),
                                       _m("C1", ["t0", "t1"])], counts)
    assert first == {"C0": _tps("t0p0 t1p0"), "C1": []}  # the revoked two are withheld until C0 gave them up
    second = cooperative_sticky_assign([_m("C0", ["t0", "t1"], first["C0"], 2), _m("C1", ["t0", "t1"], (), 2)],
                                       counts)
    assert second == {"C0": _tps("t0p0 t1p0"), "C1": _tps("t0p1 t1p1")}


def test_java_hash_codes() -> None:
    assert java_string_hash("hello") == 99162322 and java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # over UTF-16 code units


def test_cooperative_visits_members_in_javas_hashmap_order() -> None:
    """Who keeps the extra partition when the quota allows one member more: the first in Java's HashMap order ("q"
    hashes to bucket 1, "b" to bucket 2), not the first by name."""
    members = [_m("b", ["t0"], _tps("t0p0 t0p1"), 1), _m("q", ["t0"], _tps("t0p2 t0p3"), 1), _m("z", ["t0"])]
    assert cooperative_sticky_assign(members, {"t0": 4}) == {"q": _tps("t0p2 t0p3"), "b": _tps("t0p0"), "z": []}


def test_protocols_and_user_data() -> None:
    assert rebalance_protocol(["cooperative-sticky"]) is RebalanceProtocol.COOPERATIVE
    assert rebalance_protocol(["range", "cooperative-sticky"]) is RebalanceProtocol.EAGER  # Java 3's default
    assert subscription_user_data("range", 4) is None
    user_data = subscription_user_data("cooperative-sticky", 4)
    assert member_generation({"generation_id": -1, "user_data": user_data}) == 4  # v0/v1 subscriptions
    assert member_generation({"generation_id": 6, "user_data": user_data}) == 6
    assert member_generation({"generation_id": -1, "user_data": None}) == -1


# -- properties -----------------------------------------------------------------------------------------------------

@st.composite
def groups(draw: st.DrawFn, identical: bool = False) -> tuple[list[Member], dict[str, int]]:
    counts = {t: draw(st.integers(1, 7)) for t in ALL_TOPICS if draw(st.booleans()) or t == "t0"}
    n = draw(st.integers(1, 6))
    ids = draw(st.lists(st.text("abcxyz", min_size=1, max_size=3), min_size=n, max_size=n, unique=True))
    topics_st = st.sets(st.sampled_from((*ALL_TOPICS, "gone")), min_size=1)
    shared = draw(topics_st)
    statics = draw(st.lists(st.sampled_from(["s1", "s2", "s3"]), max_size=n, unique=True))
    instance_of = dict(zip(draw(st.permutations(ids)), statics, strict=False))  # some members are static
    members = [Member(i, frozenset(shared if identical else draw(topics_st)), group_instance_id=instance_of.get(i))
               for i in ids]
    return members, counts


def _check_valid(members: Sequence[Member], counts: Mapping[str, int], result: Assignment,
                 withheld: frozenset[TP] = frozenset()) -> None:
    """Every partition of every subscribed, known topic assigned exactly once (or withheld), to a subscriber."""
    assert set(result) == {m.member_id for m in members}
    topics_of = {m.member_id: m.topics for m in members}
    given_out = [tp for tps in result.values() for tp in tps]
    assert len(given_out) == len(set(given_out))
    for member, tps in result.items():
        assert all(tp[0] in topics_of[member] for tp in tps)
        assert tps == sorted(tps)
    wanted = {(t, p) for m in members for t in m.topics if t in counts for p in range(counts[t])}
    assert set(given_out) | withheld == wanted and not set(given_out) & withheld


def _spread(result: Assignment) -> int:
    sizes = [len(tps) for tps in result.values()]
    return max(sizes) - min(sizes)


@settings(max_examples=200, deadline=None)
@given(groups())
def test_range_and_roundrobin_assign_every_partition_once_to_a_subscriber(group: tuple[list[Member],
                                                                                       dict[str, int]]) -> None:
    members, counts = group
    for assign in (range_assign, round_robin_assign):
        result = assign(members, counts)
        _check_valid(members, counts, result)
        assert assign(list(reversed(members)), counts) == result  # deterministic, whatever the order given


@settings(max_examples=200, deadline=None)
@given(groups(identical=True))
def test_identical_subscriptions_are_balanced(group: tuple[list[Member], dict[str, int]]) -> None:
    members, counts = group
    assert _spread(round_robin_assign(members, counts)) <= 1
    for topic in {t for t in members[0].topics if t in counts}:  # range balances each topic
        per_topic = {m: [tp for tp in tps if tp[0] == topic] for m, tps in range_assign(members, counts).items()}
        assert _spread(per_topic) <= 1
    result = cooperative_sticky_assign(members, counts)
    _check_valid(members, counts, result)
    assert _spread(result) <= 1


@settings(max_examples=200, deadline=None)
@given(groups(), st.data())
def test_cooperative_sticky_is_valid_sticky_and_never_takes_an_owned_partition(
        group: tuple[list[Member], dict[str, int]], data: st.DataObject) -> None:
    members, counts = group
    first = cooperative_sticky_assign(members, counts)  # nobody owns anything: nothing is withheld
    _check_valid(members, counts, first)
    assert cooperative_sticky_assign(list(reversed(members)), counts) == first
    # the membership changes: some leave, newcomers join, the rest own what they got in generation 1
    stay = [m for m in members if data.draw(st.booleans(), label=f"{m.member_id} stays")]
    new = [Member(f"new{i}", m.topics) for i, m in enumerate(members[:data.draw(st.integers(0, 2))])]
    now = [Member(m.member_id, m.topics, tuple(first[m.member_id]), 1, m.group_instance_id) for m in stay] + new
    if not now:
        return
    second = cooperative_sticky_assign(now, counts)
    owner = {tp: m.member_id for m in now for tp in m.owned}
    for member, tps in second.items():  # KIP-429: no partition goes to B while A still owns it
        assert all(owner.get(tp, member) == member for tp in tps)
    given_out = {tp for tps in second.values() for tp in tps}
    wanted = {(t, p) for m in now for t in m.topics if t in counts for p in range(counts[t])}
    withheld = frozenset(wanted - given_out)
    assert withheld <= owner.keys()  # only a partition some member must first revoke is left out
    _check_valid(now, counts, second, withheld)
    if all(m.topics == now[0].topics for m in now):
        total = sum(counts[t] for t in now[0].topics if t in counts)
        min_quota = total // len(now)
        for m in now:  # sticky: a member keeps what it owned, up to its share
            assert len(set(second[m.member_id]) & set(m.owned)) >= min(len(m.owned), min_quota)
    # the next rebalance hands the withheld partitions over; identical subscriptions end balanced
    third = cooperative_sticky_assign([Member(m.member_id, m.topics, tuple(second[m.member_id]), 2,
                                              m.group_instance_id) for m in now], counts)
    _check_valid(now, counts, third)
    if all(m.topics == now[0].topics for m in now):
        assert _spread(third) <= 1


@settings(max_examples=200, deadline=None)
@given(groups())
def test_cooperative_sticky_first_assignment_is_balanced_in_javas_sense(group: tuple[list[Member],
                                                                                    dict[str, int]]) -> None:
    """Java's isBalanced, for any subscriptions: no member could take a partition of one of its topics from a member
    holding two more partitions than it does."""
    members, counts = group
    result = cooperative_sticky_assign(members, counts)
    owner = {tp: member for member, tps in result.items() for tp in tps}
    for m in members:
        for t in m.topics & counts.keys():
            for p in range(counts[t]):
                assert len(result[m.member_id]) + 1 >= len(result[owner[(t, p)]]), (m.member_id, (t, p), result)


@settings(max_examples=100, deadline=None)
@given(groups(identical=True))
def test_a_balanced_owned_assignment_is_kept_as_it_is(group: tuple[list[Member], dict[str, int]]) -> None:
    members, counts = group
    first = cooperative_sticky_assign(members, counts)
    again = cooperative_sticky_assign([Member(m.member_id, m.topics, tuple(first[m.member_id]), 5)
                                       for m in members], counts)
    assert again == first


def test_registry_names_are_javas() -> None:
    assert set(ASSIGNORS) == {"range", "roundrobin", "cooperative-sticky"}
