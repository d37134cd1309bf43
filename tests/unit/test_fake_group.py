"""The fake cluster's classic group coordinator, checked at the protocol level against what
Apache Kafka's GroupCoordinator answers (RawClient: exact versions, no consumer logic)."""
from __future__ import annotations

import select
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import FakeCluster, RawClient

G = "grp"


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(2, topics={"t": 2}) as c:
        c.move_coordinator(G, 1)
        yield c
        assert c.errors == []


def join_body(member_id: str = "", *, instance: str | None = None, session: int = 10_000,
              rebalance: int = 10_000, meta: bytes = b"m",
              protocols: tuple[str, ...] = ("range",)) -> dict[str, Any]:
    return {"group_id": G, "session_timeout_ms": session, "rebalance_timeout_ms": rebalance,
            "member_id": member_id, "group_instance_id": instance, "protocol_type": "consumer",
            "protocols": [{"name": n, "metadata": meta} for n in protocols]}


def join_new(c: RawClient, **kw: Any) -> dict[str, Any]:
    """MEMBER_ID_REQUIRED, then the join proper; returns the second answer."""
    first = c.call(ApiKey.JOIN_GROUP, 9, join_body(**kw))
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert first["member_id"].startswith(c.client_id + "-")
    return c.call(ApiKey.JOIN_GROUP, 9, join_body(first["member_id"], **kw))


def sync(c: RawClient, gen: int, member: str, assignments: dict[str, bytes] | None = None,
         instance: str | None = None) -> dict[str, Any]:
    return c.call(ApiKey.SYNC_GROUP, 5, {
        "group_id": G, "generation_id": gen, "member_id": member, "group_instance_id": instance,
        "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()]})


def heartbeat(c: RawClient, gen: int, member: str, instance: str | None = None) -> int:
    code: int = c.call(ApiKey.HEARTBEAT, 4, {"group_id": G, "generation_id": gen,
                                             "member_id": member,
                                             "group_instance_id": instance})["error_code"]
    return code


def commit(c: RawClient, gen: int, member: str, offset: int = 1, version: int = 8) -> int:
    out = c.call(ApiKey.OFFSET_COMMIT, version, {
        "group_id": G, "generation_id_or_member_epoch": gen, "member_id": member,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                 "committed_metadata": ""}]}]})
    code: int = out["topics"][0]["partitions"][0]["error_code"]
    return code


def pending(c: RawClient, wait: float = 0.15) -> bool:
    """True while the broker holds the answer to what was sent."""
    readable, _, _ = select.select([c.sock], [], [], wait)
    return not readable


def stable_pair(cluster: FakeCluster, **kw: Any) -> tuple[RawClient, RawClient, str, str, int]:
    """Members a (leader) and b in one generation, synced."""
    a, b = RawClient(cluster, 1, "a"), RawClient(cluster, 1, "b")
    ja = join_new(a, **kw)
    first = b.call(ApiKey.JOIN_GROUP, 9, join_body(**kw))
    b.send(ApiKey.JOIN_GROUP, 9, join_body(first["member_id"], **kw))
    assert pending(b)
    ja2 = a.call(ApiKey.JOIN_GROUP, 9, join_body(ja["member_id"], **kw))
    jb = b.receive()
    gen = ja2["generation_id"]
    assert jb["generation_id"] == gen == 2
    b.send(ApiKey.SYNC_GROUP, 5, {"group_id": G, "generation_id": gen,
                                  "member_id": jb["member_id"], "assignments": []})
    assert sync(a, gen, ja["member_id"], {ja["member_id"]: b"A", jb["member_id"]: b"B"}
                )["assignment"] == b"A"
    assert b.receive()["assignment"] == b"B"
    return a, b, ja["member_id"], jb["member_id"], gen


def test_member_id_required_then_a_lone_member_leads(cluster: FakeCluster) -> None:
    with RawClient(cluster, 1, "solo") as c:
        j = join_new(c, meta=b"sub-a", protocols=("range", "roundrobin"))
        me = j["member_id"]
        assert (j["error_code"], j["generation_id"], j["leader"], j["protocol_name"],
                j["protocol_type"]) == (0, 1, me, "range", "consumer")
        assert j["members"] == [{"member_id": me, "group_instance_id": None, "metadata": b"sub-a"}]
        assert sync(c, 1, me, {me: b"assignment"})["assignment"] == b"assignment"
        assert heartbeat(c, 1, me) == 0
        d = c.call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [G]})["groups"][0]
        assert (d["group_state"], d["protocol_data"], d["members"][0]["member_assignment"]) \
            == ("Stable", "range", b"assignment")


def test_join_below_v4_gets_a_member_id_at_once(cluster: FakeCluster) -> None:
    with RawClient(cluster, 1, "old") as c:
        j = c.call(ApiKey.JOIN_GROUP, 3, join_body())
        assert j["error_code"] == 0 and j["generation_id"] == 1
        assert j["member_id"].startswith("old-") and j["leader"] == j["member_id"]


def test_rebalance_waits_for_every_member_and_the_leader_sync(cluster: FakeCluster) -> None:
    a, b = RawClient(cluster, 1, "a"), RawClient(cluster, 1, "b")
    with a, b:
        ma = join_new(a)["member_id"]
        assert sync(a, 1, ma, {ma: b"all"})["assignment"] == b"all"
        mb = b.call(ApiKey.JOIN_GROUP, 9, join_body())["member_id"]
        b.send(ApiKey.JOIN_GROUP, 9, join_body(mb, meta=b"mb"))
        assert pending(b)                                        # held until a rejoins
        assert heartbeat(a, 1, ma) == ErrorCode.REBALANCE_IN_PROGRESS
        assert commit(a, 1, ma) == 0        # PreparingRebalance: the old generation may commit
        ja = a.call(ApiKey.JOIN_GROUP, 9, join_body(ma, meta=b"ma"))
        jb = b.receive()
        assert (ja["generation_id"], jb["generation_id"], ja["leader"], jb["leader"]) \
            == (2, 2, ma, ma)
        assert [m["member_id"] for m in ja["members"]] == [ma, mb] and jb["members"] == []
        assert [m["metadata"] for m in ja["members"]] == [b"ma", b"mb"]
        b.send(ApiKey.SYNC_GROUP, 5, {"group_id": G, "generation_id": 2, "member_id": mb,
                                      "assignments": []})
        assert pending(b)                                        # held until the leader syncs
        assert commit(a, 2, ma) == ErrorCode.REBALANCE_IN_PROGRESS   # CompletingRebalance
        assert heartbeat(a, 2, ma) == 0
        assert sync(a, 2, ma, {ma: b"p0", mb: b"p1"})["assignment"] == b"p0"
        assert b.receive() == {"throttle_time_ms": 0, "error_code": 0, "protocol_type": "consumer",
                               "protocol_name": "range", "assignment": b"p1"}
        assert heartbeat(a, 1, ma) == ErrorCode.ILLEGAL_GENERATION
        assert heartbeat(a, 2, "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
        assert commit(a, 2, ma, offset=7) == 0
        assert cluster.committed(G) == {TopicPartition("t", 0): 7}


def test_offset_commit_generation_checks(cluster: FakeCluster) -> None:
    with RawClient(cluster, 1, "x") as c:
        assert commit(c, 5, "ghost", version=8) == ErrorCode.ILLEGAL_GENERATION   # no group
        assert commit(c, 5, "ghost", version=9) == ErrorCode.GROUP_ID_NOT_FOUND
        assert commit(c, -1, "", offset=3) == 0          # a group used only to store offsets
        me = join_new(c)["member_id"]
        assert commit(c, -1, "") == ErrorCode.REBALANCE_IN_PROGRESS   # CompletingRebalance
        sync(c, 1, me, {me: b""})
        assert commit(c, -1, "") == ErrorCode.UNKNOWN_MEMBER_ID      # active group, no member
        assert commit(c, 0, me) == ErrorCode.ILLEGAL_GENERATION
        assert commit(c, 1, me, offset=4) == 0
        f = c.call(ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": G, "topics": [
            {"name": "t", "partition_indexes": [0, 1]}]}]})["groups"][0]
        assert [(p["partition_index"], p["committed_offset"], p["error_code"])
                for p in f["topics"][0]["partitions"]] == [(0, 4, 0), (1, -1, 0)]
        old = c.call(ApiKey.OFFSET_FETCH, 5, {"group_id": G, "topics": None})
        assert old["error_code"] == 0 and old["topics"][0]["partitions"][0]["committed_offset"] == 4
    with RawClient(cluster, 0, "y") as wrong:
        assert commit(wrong, 1, me) == ErrorCode.NOT_COORDINATOR
        assert wrong.call(ApiKey.OFFSET_FETCH, 5, {"group_id": G, "topics": None}
                          )["error_code"] == ErrorCode.NOT_COORDINATOR


def test_session_expiry_removes_a_silent_member(cluster: FakeCluster) -> None:
    a, b, ma, mb, gen = stable_pair(cluster, session=400)
    with a, b:
        t0 = time.monotonic()
        code = 0
        while code == 0:                      # a heartbeats, b is silent
            assert time.monotonic() - t0 < 3
            time.sleep(0.05)
            code = heartbeat(a, gen, ma)
        assert code == ErrorCode.REBALANCE_IN_PROGRESS
        assert time.monotonic() - t0 >= 0.35
        j = a.call(ApiKey.JOIN_GROUP, 9, join_body(ma, session=400))
        assert (j["generation_id"], [m["member_id"] for m in j["members"]]) == (gen + 1, [ma])
        assert heartbeat(b, gen, mb) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_rejoin_within_the_rebalance_timeout_is_dropped(
        cluster: FakeCluster) -> None:
    a, b, ma, mb, gen = stable_pair(cluster, rebalance=300)
    with a, b:
        t0 = time.monotonic()
        jb = b.call(ApiKey.JOIN_GROUP, 9, join_body(mb, rebalance=300, meta=b"changed"))
        waited = time.monotonic() - t0
        assert 0.25 <= waited < 2, waited
        assert (jb["generation_id"], jb["leader"], [m["member_id"] for m in jb["members"]]) \
            == (gen + 1, mb, [mb])
        assert heartbeat(a, gen, ma) == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_restart_keeps_the_generation_and_fences_the_old_id(
        cluster: FakeCluster) -> None:
    a, b = RawClient(cluster, 1, "a"), RawClient(cluster, 1, "b")
    with a, b:
        ja = a.call(ApiKey.JOIN_GROUP, 9, join_body(instance="i-a"))   # no MEMBER_ID_REQUIRED
        ma = ja["member_id"]
        assert ja["error_code"] == 0 and ma.startswith("i-a-")
        sync(a, 1, ma, {ma: b"all"}, instance="i-a")
        b.send(ApiKey.JOIN_GROUP, 9, join_body(instance="i-b"))
        assert pending(b)
        ja = a.call(ApiKey.JOIN_GROUP, 9, join_body(ma, instance="i-a"))
        mb = b.receive()["member_id"]
        b.send(ApiKey.SYNC_GROUP, 5, {"group_id": G, "generation_id": 2, "member_id": mb,
                                      "group_instance_id": "i-b", "assignments": []})
        sync(a, 2, ma, {ma: b"A", mb: b"B"}, instance="i-a")
        assert b.receive()["assignment"] == b"B"
    with RawClient(cluster, 1, "b2") as b2:               # b restarts: a new member id
        j = b2.call(ApiKey.JOIN_GROUP, 9, join_body(instance="i-b"))
        new = j["member_id"]
        assert j["error_code"] == 0 and new != mb and j["generation_id"] == 2
        assert sync(b2, 2, new, instance="i-b")["assignment"] == b"B"
        assert heartbeat(b2, 2, mb, instance="i-b") == ErrorCode.FENCED_INSTANCE_ID
        assert heartbeat(b2, 2, new, instance="i-b") == 0
    g = cluster.group(G)
    assert g is not None and (g.state, g.generation) == ("Stable", 2)


def test_leave_group_per_member_results_and_rebalance(cluster: FakeCluster) -> None:
    a, b, ma, mb, gen = stable_pair(cluster)
    with a, b:
        out = b.call(ApiKey.LEAVE_GROUP, 5, {"group_id": G, "members": [
            {"member_id": mb, "group_instance_id": None, "reason": "bye"},
            {"member_id": "ghost", "group_instance_id": None}]})
        assert out["error_code"] == 0
        assert [(m["member_id"], m["error_code"]) for m in out["members"]] == [
            (mb, 0), ("ghost", ErrorCode.UNKNOWN_MEMBER_ID)]
        assert b.call(ApiKey.LEAVE_GROUP, 0, {"group_id": G, "member_id": mb}
                      )["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
        assert heartbeat(a, gen, ma) == ErrorCode.REBALANCE_IN_PROGRESS
        j = a.call(ApiKey.JOIN_GROUP, 9, join_body(ma))
        assert (j["generation_id"], len(j["members"])) == (gen + 1, 1)


def test_coordinator_move_and_stop(cluster: FakeCluster) -> None:
    a, b, ma, mb, gen = stable_pair(cluster)
    with a, b:
        b.send(ApiKey.JOIN_GROUP, 9, join_body(mb, meta=b"x"))      # starts a rebalance
        assert pending(b)
        cluster.move_coordinator(G, 0)
        assert b.receive()["error_code"] == ErrorCode.NOT_COORDINATOR
        assert heartbeat(a, gen, ma) == ErrorCode.NOT_COORDINATOR
        f3 = a.call(ApiKey.FIND_COORDINATOR, 3, {"key": G, "key_type": 0})
        f4 = a.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [G]})
        port = cluster.brokers[0].port
        assert (f3["error_code"], f3["node_id"], f3["port"]) == (0, 0, port)
        assert [(x["key"], x["node_id"], x["port"]) for x in f4["coordinators"]] == [(G, 0, port)]
        cluster.stop_broker(0)
        f = a.call(ApiKey.FIND_COORDINATOR, 3, {"key": G, "key_type": 0})
        assert f["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_join_validation(cluster: FakeCluster) -> None:
    with RawClient(cluster, 1, "v") as c:
        assert c.call(ApiKey.JOIN_GROUP, 9, {**join_body(), "group_id": ""}
                      )["error_code"] == ErrorCode.INVALID_GROUP_ID
        with RawClient(cluster, 0, "w") as w:
            assert w.call(ApiKey.JOIN_GROUP, 9, join_body())["error_code"] \
                == ErrorCode.NOT_COORDINATOR
        join_new(c, protocols=("range",))
        other = c.call(ApiKey.JOIN_GROUP, 9, join_body(protocols=("roundrobin",)))
        assert other["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        unknown = c.call(ApiKey.JOIN_GROUP, 9, join_body("made-up"))
        assert unknown["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    with FakeCluster(1, min_session_timeout_ms=6000) as strict, RawClient(strict) as c:
        assert c.call(ApiKey.JOIN_GROUP, 9, join_body(session=100)
                      )["error_code"] == ErrorCode.INVALID_SESSION_TIMEOUT


def test_a_member_id_never_used_expires_without_a_rebalance(cluster: FakeCluster) -> None:
    with RawClient(cluster, 1, "a") as a, RawClient(cluster, 1, "b") as b:
        ma = join_new(a, session=2000)["member_id"]
        sync(a, 1, ma, {ma: b"all"})
        first = b.call(ApiKey.JOIN_GROUP, 9, join_body(session=200))
        assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED   # b never comes back
        g = cluster.group(G)
        assert g is not None
        cluster.wait_until(lambda: not g.pending, timeout=2, what="the pending id to expire")
        assert heartbeat(a, 1, ma) == 0
        assert (g.state, g.generation, list(g.members)) == ("Stable", 1, [ma])
