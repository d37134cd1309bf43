"""Assignor vectors (../shared/reference/consumer-internals-3 §6.6) and invariants checked
with hypothesis, plus the embedded consumer protocol bytes."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyconsumer.consumer.group.assignors import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    assignor_for,
)
from pyconsumer.consumer.group.assignors.sticky import decode_sticky_user_data, encode_sticky_user_data
from pyconsumer.consumer.group.embedded import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from pyconsumer.errors import KafkaProtocolError
from pyconsumer.structs import TopicPartition as TP


def subs(**topics: list[str]) -> dict[str, Subscription]:
    return {m.replace("_", "-"): Subscription(t) for m, t in topics.items()}


def names(assignment: dict[str, list[TP]]) -> dict[str, list[str]]:
    return {m: [f"{tp.topic}-{tp.partition}" for tp in parts] for m, parts in assignment.items()}


# ----------------------------------------------------------------------------- range

def test_r1_range_overloads_the_first_member() -> None:
    got = RangeAssignor().assign({"A": 5, "B": 4}, subs(consumer_0=["A", "B"],
                                                         consumer_1=["A", "B"],
                                                         consumer_2=["A", "B"]))
    assert names(got) == {"consumer-0": ["A-0", "A-1", "B-0", "B-1"],
                          "consumer-1": ["A-2", "A-3", "B-2"],
                          "consumer-2": ["A-4", "B-3"]}


def test_r4_more_members_than_partitions() -> None:
    members = {f"Consumer-{i}": Subscription(["T"]) for i in range(1, 7)}
    got = RangeAssignor().assign({"T": 4}, members)
    assert names(got) == {"Consumer-1": ["T-0"], "Consumer-2": ["T-1"], "Consumer-3": ["T-2"],
                          "Consumer-4": ["T-3"], "Consumer-5": [], "Consumer-6": []}


def test_r6_member_ids_sort_as_strings_and_instance_ids_first() -> None:
    got = RangeAssignor().assign({"t": 3}, {"c2": Subscription(["t"]), "c10": Subscription(["t"])})
    assert names(got) == {"c10": ["t-0", "t-1"], "c2": ["t-2"]}
    static = {"c10": Subscription(["t"]), "c2": Subscription(["t"], group_instance_id="zz")}
    assert names(RangeAssignor().assign({"t": 3}, static)) == {"c2": ["t-0", "t-1"], "c10": ["t-2"]}


def test_r7_range_heterogeneous_and_unknown_topics() -> None:
    got = RangeAssignor().assign({"A": 1, "B": 2, "C": 3}, subs(
        consumer_0=["A", "B"], consumer_1=["A", "B"], consumer_2=["A", "B", "C", "missing"]))
    assert names(got) == {"consumer-0": ["A-0", "B-0"], "consumer-1": ["B-1"],
                          "consumer-2": ["C-0", "C-1", "C-2"]}


# ----------------------------------------------------------------------------- roundrobin

def test_rr1_round_robin_same_subscriptions() -> None:
    got = RoundRobinAssignor().assign({"A": 1, "B": 2, "C": 3}, subs(
        consumer_0=["A", "B", "C"], consumer_1=["A", "B", "C"], consumer_2=["A", "B", "C"]))
    assert names(got) == {"consumer-0": ["A-0", "C-0"], "consumer-1": ["B-0", "C-1"],
                          "consumer-2": ["B-1", "C-2"]}


def test_rr2_round_robin_heterogeneous() -> None:
    got = RoundRobinAssignor().assign({"A": 1, "B": 2, "C": 3}, subs(
        consumer_0=["A", "B"], consumer_1=["A", "B"], consumer_2=["A", "B", "C"]))
    assert names(got) == {"consumer-0": ["A-0"], "consumer-1": ["B-0"],
                          "consumer-2": ["B-1", "C-0", "C-1", "C-2"]}


# ----------------------------------------------------------------------------- sticky

def test_s1_sticky_general_fresh() -> None:
    got = StickyAssignor().assign({"A": 1, "B": 2, "C": 3}, subs(
        consumer_0=["A", "B"], consumer_1=["A", "B"], consumer_2=["A", "B", "C"]))
    assert names(got) == {"consumer-0": ["A-0", "B-1"], "consumer-1": ["B-0"],
                          "consumer-2": ["C-0", "C-1", "C-2"]}


def test_s2_sticky_general_member_leaves() -> None:
    members = {
        "consumer-1": Subscription(["A", "B"], owned_partitions=[TP("B", 0), TP("B", 1)],
                                   generation_id=4),
        "consumer-2": Subscription(["A", "B", "C"], owned_partitions=[TP("C", 0), TP("C", 1),
                                                                       TP("C", 2)],
                                   generation_id=4),
    }
    got = StickyAssignor().assign({"A": 1, "B": 2, "C": 3}, members)
    assert names(got) == {"consumer-1": ["B-0", "B-1", "A-0"],
                          "consumer-2": ["C-0", "C-1", "C-2"]}


def test_s3_sticky_constrained_fresh() -> None:
    got = StickyAssignor().assign({"A": 5, "B": 4}, subs(
        consumer_0=["A", "B"], consumer_1=["A", "B"], consumer_2=["A", "B"]))
    assert names(got) == {"consumer-0": ["A-0", "A-3", "B-1"],
                          "consumer-1": ["A-1", "A-4", "B-2"],
                          "consumer-2": ["A-2", "B-0", "B-3"]}


def owned(parts: dict[str, list[int]], generation: int = 3, topic: str = "t"
          ) -> dict[str, Subscription]:
    return {m: Subscription([topic], owned_partitions=[TP(topic, p) for p in ps],
                            generation_id=generation if ps else -1)
            for m, ps in parts.items()}


def test_s4_sticky_constrained_new_member() -> None:
    got = StickyAssignor().assign({"t": 6}, owned({"c0": [0, 1, 2], "c1": [3, 4, 5], "c2": []}))
    assert names(got) == {"c0": ["t-0", "t-1"], "c1": ["t-3", "t-4"], "c2": ["t-2", "t-5"]}


def test_s4_cooperative_withholds_moving_partitions() -> None:
    got = CooperativeStickyAssignor().assign(
        {"t": 6}, owned({"c0": [0, 1, 2], "c1": [3, 4, 5], "c2": []}))
    # t-2 and t-5 move to c2: first revoked by their owners, given in the next round
    assert names(got) == {"c0": ["t-0", "t-1"], "c1": ["t-3", "t-4"], "c2": []}
    follow_up = CooperativeStickyAssignor().assign(
        {"t": 6}, owned({"c0": [0, 1], "c1": [3, 4], "c2": []}, generation=4))
    assert names(follow_up) == {"c0": ["t-0", "t-1"], "c1": ["t-3", "t-4"], "c2": ["t-2", "t-5"]}


def test_s5_sticky_constrained_member_leaves() -> None:
    got = StickyAssignor().assign({"t": 6}, owned({"c0": [0, 1], "c2": [4, 5]}))
    assert names(got) == {"c0": ["t-0", "t-1", "t-2"], "c2": ["t-4", "t-5", "t-3"]}


def test_older_generation_and_double_claims_lose_their_claim() -> None:
    members = {
        "a": Subscription(["t"], owned_partitions=[TP("t", 0), TP("t", 1)], generation_id=2),
        "b": Subscription(["t"], owned_partitions=[TP("t", 2), TP("t", 3)], generation_id=5),
        "c": Subscription(["t"], owned_partitions=[TP("t", 3)], generation_id=5),
    }
    got = StickyAssignor().assign({"t": 6}, members)
    # a's generation is stale; t-3 is claimed twice in generation 5: nobody keeps those claims
    assert got["b"][0] == TP("t", 2)
    assert sorted(len(v) for v in got.values()) == [2, 2, 2]


def test_sticky_user_data_round_trip() -> None:
    data = encode_sticky_user_data([TP("a", 1), TP("a", 0), TP("b", 7)], 9)
    assert decode_sticky_user_data(data) == ([TP("a", 1), TP("a", 0), TP("b", 7)], 9)
    assert decode_sticky_user_data(data[:-4]) == ([TP("a", 1), TP("a", 0), TP("b", 7)], None)
    with pytest.raises(ValueError):
        decode_sticky_user_data(data[:5])


# ----------------------------------------------------------------------------- invariants

@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, Subscription]]:
    topics = {f"t{i}": draw(st.integers(0, 7)) for i in range(draw(st.integers(1, 4)))}
    members = {}
    same = draw(st.booleans())
    shared = sorted(draw(st.sets(st.sampled_from(sorted(topics)), min_size=1)))
    for j in range(draw(st.integers(1, 6))):
        mine = shared if same else sorted(draw(st.sets(st.sampled_from(sorted(topics)), min_size=1)))
        owned_parts = [TP(t, p) for t in mine for p in range(topics[t]) if draw(st.booleans())]
        members[f"m{j}"] = Subscription(mine, owned_partitions=owned_parts,
                                        generation_id=draw(st.integers(-1, 3)))
    return topics, members


@pytest.mark.parametrize("assignor", [RangeAssignor(), RoundRobinAssignor(), StickyAssignor(),
                                      CooperativeStickyAssignor()], ids=lambda a: a.name)
@settings(max_examples=150, deadline=None)
@given(group=groups())
def test_every_partition_at_most_once_to_a_subscriber(assignor: object, group: tuple[
        dict[str, int], dict[str, Subscription]]) -> None:
    topics, members = group
    got = assignor.assign(topics, members)  # type: ignore[attr-defined]
    assert set(got) == set(members)
    counts = Counter(tp for parts in got.values() for tp in parts)
    assert all(c == 1 for c in counts.values())
    for member, parts in got.items():
        assert all(tp.topic in members[member].topics for tp in parts)
    wanted = {TP(t, p) for s in members.values() for t in s.topics for p in range(topics[t])}
    if not isinstance(assignor, CooperativeStickyAssignor):
        assert set(counts) == wanted                       # everything placed
    if len({frozenset(s.topics) for s in members.values()}) == 1 and not isinstance(
            assignor, (RangeAssignor, CooperativeStickyAssignor)):
        sizes = [len(v) for v in got.values()]
        assert max(sizes) - min(sizes) <= 1                 # balanced


def test_assignor_names() -> None:
    assert [assignor_for(n).name for n in ("range", "roundrobin", "sticky", "cooperative-sticky")] \
        == ["range", "roundrobin", "sticky", "cooperative-sticky"]
    with pytest.raises(ValueError, match="unknown partition assignor 'nope'"):
        assignor_for("nope")


# ----------------------------------------------------------------------------- consumer protocol

def h(text: str) -> bytes:
    return bytes.fromhex("".join(line.split("#")[0] for line in text.splitlines()).replace(" ", ""))


def test_subscription_v3_bytes() -> None:
    expected = h('''
        0003                           # version 3
        00000002 0001 61 0001 62       # topics ["a", "b"]
        00000001 75                    # user data b"u"
        00000001 0001 61 00000002 00000000 00000002   # owned: a-0, a-2
        00000005                       # generation id
        0002 7231                      # rack id "r1"
    ''')
    sub = Subscription(["a", "b"], b"u", [TP("a", 0), TP("a", 2)], 5, "r1")
    assert encode_subscription(sub) == expected
    assert decode_subscription(expected) == sub
    v0 = h("0000 00000001 0001 61 ffffffff")
    assert decode_subscription(v0) == Subscription(["a"])
    assert encode_subscription(Subscription(["a"]), 0) == v0


def test_newer_versions_are_read_as_the_highest_known() -> None:
    v4 = h("0004 00000001 0001 61 ffffffff 00000000 ffffffff ffff") + b"\x01\x02future-field"
    assert decode_subscription(v4) == Subscription(["a"])


def test_assignment_bytes() -> None:
    expected = h("0003 00000002 0001 61 00000001 00000001 0001 62 00000001 00000000 ffffffff")
    assignment = Assignment([TP("a", 1), TP("b", 0)])
    assert encode_assignment(assignment) == expected
    assert decode_assignment(expected) == assignment
    assert decode_assignment(b"") == Assignment([])
    with pytest.raises(KafkaProtocolError, match="ConsumerProtocolAssignment"):
        decode_assignment(b"\x00\x01\x00\x00\x00\x05")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_matches_kafka_python(version: int) -> None:
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSub

    theirs = KpSub(topics=["orders", "audit"], user_data=b"\x00\x01",
                   owned_partitions=[KpSub.TopicPartition(topic="orders", partitions=[3, 1])],
                   generation_id=12, rack_id="rack-b", version=version).encode(version=version)
    ours = Subscription(["orders", "audit"], b"\x00\x01", [TP("orders", 3), TP("orders", 1)],
                        12, "rack-b")
    assert encode_subscription(ours, version) == theirs
    back = decode_subscription(theirs)
    assert back.topics == ["orders", "audit"] and back.user_data == b"\x00\x01"


def test_assignment_matches_kafka_python() -> None:
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment

    theirs = KpAssignment(assigned_partitions=[
        KpAssignment.TopicPartition(topic="orders", partitions=[0, 4]),
        KpAssignment.TopicPartition(topic="audit", partitions=[2])],
        user_data=None, version=3).encode(version=3)
    assert decode_assignment(theirs) == Assignment([TP("orders", 0), TP("orders", 4), TP("audit", 2)])
    assert encode_assignment(decode_assignment(theirs)) == theirs
