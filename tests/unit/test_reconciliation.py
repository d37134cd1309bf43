"""The consumer protocol's pure core (pyconsumer.consumer.group.reconciliation): assignment vectors
(what to revoke, add, leave pending) and which fields each heartbeat carries."""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pyconsumer.consumer.group.reconciliation import (
    HeartbeatFields,
    assignment_from_response,
    ids_of,
    plan,
    topic_partitions_field,
)
from pyconsumer.protocol import ApiKey, encode_request
from pyconsumer.structs import TopicPartition

A = uuid.UUID(int=0xA)
B = uuid.UUID(int=0xB)
C = uuid.UUID(int=0xC)
NAMES = {A: "a", B: "b"}


def tp(topic: str, *parts: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in parts}


def test_first_assignment_adds_everything() -> None:
    r = plan(set(), {A: frozenset({0, 1}), B: frozenset({2})}, NAMES)
    assert r.added == tp("a", 0, 1) | tp("b", 2)
    assert r.revoked == frozenset()
    assert r.assigned == r.added
    assert r.assigned_ids == {A: {0, 1}, B: {2}}
    assert r.unresolved == frozenset() and r.changes


def test_incremental_change_revokes_and_adds_only_what_moves() -> None:
    owned = tp("a", 0, 1, 2) | tp("b", 0)
    r = plan(owned, {A: frozenset({0, 1}), B: frozenset({0, 1})}, NAMES)
    assert r.revoked == tp("a", 2)
    assert r.added == tp("b", 1)
    assert r.assigned == tp("a", 0, 1) | tp("b", 0, 1)


def test_revocation_step_returns_the_intersection() -> None:
    # the broker first sends owned ∩ target; nothing is added until others released theirs
    r = plan(tp("a", 0, 1, 2, 3, 4, 5), {A: frozenset({0, 1, 2})}, NAMES)
    assert r.revoked == tp("a", 3, 4, 5) and r.added == frozenset()


def test_empty_assignment_revokes_everything() -> None:
    r = plan(tp("a", 0) | tp("b", 1), {}, NAMES)
    assert r.revoked == tp("a", 0) | tp("b", 1)
    assert r.assigned == frozenset() and r.assigned_ids == {}


def test_same_assignment_changes_nothing() -> None:
    r = plan(tp("a", 0, 1), {A: frozenset({0, 1})}, NAMES)
    assert not r.changes and r.assigned == tp("a", 0, 1)


def test_unknown_topic_id_stays_pending_and_does_not_revoke() -> None:
    r = plan(tp("a", 0), {A: frozenset({0}), C: frozenset({3})}, NAMES)
    assert r.unresolved == {C}
    assert r.revoked == frozenset() and r.added == frozenset()
    assert r.assigned_ids == {A: {0}}
    # once the metadata names it, it is added
    r2 = plan(tp("a", 0), {A: frozenset({0}), C: frozenset({3})}, {**NAMES, C: "c"})
    assert r2.added == tp("c", 3) and r2.unresolved == frozenset()


def test_partitions_of_topics_no_longer_subscribed_are_left_out() -> None:
    # subscribe(["b"]) while the broker's assignment still names a: a is revoked, not kept
    r = plan(tp("a", 0), {A: frozenset({0}), B: frozenset({1})}, NAMES, subscribed={"b"})
    assert r.revoked == tp("a", 0) and r.added == tp("b", 1)
    assert r.assigned_ids == {B: {1}} and r.unresolved == frozenset()


def test_assignment_from_response_merges_and_drops_empty_topics() -> None:
    got = assignment_from_response({"topic_partitions": [
        {"topic_id": A, "partitions": [1, 0]}, {"topic_id": B, "partitions": []},
        {"topic_id": A, "partitions": [2]}]})
    assert got == {A: frozenset({0, 1, 2})}


def test_topic_partitions_field_is_sorted_and_ids_of_skips_unknown_topics() -> None:
    owned = ids_of(tp("b", 3, 1) | tp("a", 0) | tp("zzz", 9), {"a": A, "b": B})
    assert owned == {A: {0}, B: {1, 3}}
    assert topic_partitions_field(owned) == [{"topic_id": A, "partitions": [0]},
                                             {"topic_id": B, "partitions": [1, 3]}]


# ----------------------------------------------------------------------------- heartbeat fields

BASE = dict(group_id="g", member_id="m", instance_id="i-1", rack_id="r1",
            rebalance_timeout_ms=300000, topics={"t2", "t1"}, regex=None,
            server_assignor="uniform", owned={A: {1, 0}})
FULL_KEYS = {"group_id", "member_id", "member_epoch", "instance_id", "rack_id",
             "rebalance_timeout_ms", "server_assignor", "subscribed_topic_names",
             "subscribed_topic_regex", "topic_partitions"}
#: a field's "unchanged" value: what the broker reads when it is not resent
UNCHANGED = {"rebalance_timeout_ms": -1}


def sent(body: Mapping[str, Any]) -> set[str]:
    """The fields a heartbeat carries: those not at their "unchanged" value (null, or -1)."""
    return {k for k, v in body.items() if v is not None and v != UNCHANGED.get(k, None)}


def test_every_body_is_whole_and_unsent_fields_encode_as_left_out() -> None:
    """A body always holds every field of the request, typed; a field not resent is null, so
    the bytes are those of a body that leaves it out (the codec's defaults)."""
    f = HeartbeatFields()
    f.build(member_epoch=0, **BASE)
    f.answered()
    f.send_owned = True
    ack = f.build(member_epoch=3, **BASE)
    assert set(ack) == FULL_KEYS
    left_out = {k: v for k, v in ack.items() if k in sent(ack)}
    for version in (0, 1):
        assert encode_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, 1, "c", ack) == \
            encode_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, 1, "c", left_out)


def test_join_sends_everything_names_and_regex_together() -> None:
    f = HeartbeatFields()
    body = f.build(member_epoch=0, **BASE)
    assert sent(body) == FULL_KEYS
    assert body["subscribed_topic_names"] == ["t1", "t2"]
    assert body["subscribed_topic_regex"] == ""          # never one without the other
    assert body["topic_partitions"] == [{"topic_id": A, "partitions": [0, 1]}]
    assert body["rebalance_timeout_ms"] == 300000 and body["instance_id"] == "i-1"


def test_regex_subscription_sends_no_names() -> None:
    body = HeartbeatFields().build(member_epoch=0, **{**BASE, "topics": (), "regex": "t-.*"})
    assert body["subscribed_topic_names"] == [] and body["subscribed_topic_regex"] == "t-.*"


def test_steady_heartbeat_is_minimal_then_ack_then_subscription() -> None:
    f = HeartbeatFields()
    f.build(member_epoch=0, **BASE)
    f.answered()
    assert sent(f.build(member_epoch=3, **BASE)) == {"group_id", "member_id", "member_epoch"}
    f.answered()
    f.send_owned = True                                   # a reconciliation completed
    ack = f.build(member_epoch=3, **BASE)
    assert sent(ack) == {"group_id", "member_id", "member_epoch", "topic_partitions"}
    f.answered()
    f.send_subscription = True                            # subscribe() again
    sub = f.build(member_epoch=3, **BASE)
    assert sent(sub) == {"group_id", "member_id", "member_epoch", "subscribed_topic_names",
                         "subscribed_topic_regex"}


def test_a_failed_heartbeat_makes_the_next_one_full() -> None:
    f = HeartbeatFields()
    f.build(member_epoch=0, **BASE)
    f.answered()
    f.build(member_epoch=4, **BASE)
    f.failed()
    assert sent(f.build(member_epoch=4, **BASE)) == FULL_KEYS


def test_epoch_zero_is_always_full_and_reset_sends_everything() -> None:
    f = HeartbeatFields()
    f.build(member_epoch=0, **BASE)
    f.answered()
    # the mock keeps a new member at epoch 0 until its partitions are free: still a join
    assert sent(f.build(member_epoch=0, **BASE)) == FULL_KEYS
    f.answered()
    f.reset()
    assert f.full and f.send_owned and f.send_subscription
