"""The consumer group protocol (KIP-848) against the in-process fake cluster: the exact
heartbeats (what a join carries, what a steady heartbeat leaves out, the acknowledgement),
ownership never shared between members, the broker's interval, coordinator moves, errors the
mock cannot produce (UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR), member epochs in commits,
subscription changes. The fake's coordinator is pyconsumer/testing/_fake/consumer_group.py."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.group.consumer_protocol import ConsumerProtocolMembership
from pyconsumer.errors import CommitFailedError, ErrorCode, KafkaError
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FakeCluster, Request
from tests.listeners import Recorder

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT
SETTINGS: dict[str, Any] = dict(group_protocol="consumer", auto_offset_reset="earliest",
                                fetch_max_wait_ms=100, retry_backoff_ms=20,
                                reconnect_backoff_ms=20, reconnect_backoff_max_ms=200)


def tps(topic: str, *parts: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in parts}


def poll_until(consumers: list[KafkaConsumer], cond: Callable[[], bool],
               timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        for c in consumers:
            c.poll(timeout_ms=20)


def heartbeats(cluster: FakeCluster, member_id: str, after: int = 0) -> list[Request]:
    return [r for r in cluster.requests_of(HB, after) if r.body["member_id"] == member_id]


def test_join_steady_ack_and_the_interval(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 3})
    cluster.consumer_group("g").heartbeat_interval_ms = 1000
    listener = Recorder()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g",
                       group_instance_id="i-1", client_rack="r1", max_poll_interval_ms=60000,
                       group_remote_assignor="uniform", **SETTINGS) as c:
        c.subscribe(["t"], listener=listener)
        poll_until([c], lambda: c.assignment() == tps("t", 0, 1, 2))
        member_id = c.group_metadata().member_id
        tid = cluster.topics["t"].topic_id
        poll_until([c], lambda: len(heartbeats(cluster, member_id)) >= 5, timeout=10)
        hbs = heartbeats(cluster, member_id)
        join = hbs[0].body
        assert join == {"group_id": "g", "member_id": member_id, "member_epoch": 0,
                        "instance_id": "i-1", "rack_id": "r1", "rebalance_timeout_ms": 60000,
                        "subscribed_topic_names": ["t"], "subscribed_topic_regex": "",
                        "server_assignor": "uniform", "topic_partitions": []}
        epoch = c.group_metadata().generation_id
        assert epoch > 0
        # the acknowledgement: the owned partitions, at the new epoch, at once
        ack = hbs[1]
        assert ack.body == {"group_id": "g", "member_id": member_id, "member_epoch": epoch,
                            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1,
                            "subscribed_topic_names": None, "subscribed_topic_regex": None,
                            "server_assignor": None,
                            "topic_partitions": [{"topic_id": tid, "partitions": [0, 1, 2]}]}
        assert ack.at - hbs[0].at < 0.5             # at once, not an interval later
        # then minimal heartbeats, the broker's 1000 ms apart
        for r in hbs[2:]:
            assert r.body["topic_partitions"] is None
            assert r.body["subscribed_topic_names"] is None
        gaps = [b.at - a.at for a, b in zip(hbs[2:], hbs[3:])]
        assert all(0.9 <= g < 1.6 for g in gaps), gaps
        assert listener.calls == [("assigned", tps("t", 0, 1, 2))]


def test_no_partition_is_ever_owned_by_two_members(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 6})
    for p in range(6):
        cluster.produce(TopicPartition("t", p), [(b"k", b"v%d" % i) for i in range(5)])
    group = cluster.consumer_group("g")
    group.heartbeat_interval_ms = 100
    consumers = [KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS)
                 for _ in range(3)]
    try:
        consumers[0].subscribe(["t"])
        poll_until(consumers[:1], lambda: len(consumers[0].assignment()) == 6)
        consumers[1].subscribe(["t"])
        poll_until(consumers[:2], lambda: [len(c.assignment()) for c in consumers[:2]] == [3, 3])
        consumers[2].subscribe(["t"])
        poll_until(consumers, lambda: [len(c.assignment()) for c in consumers] == [2, 2, 2])
        owned = [c.assignment() for c in consumers]
        assert set().union(*owned) == tps("t", *range(6))
        consumers[1].close()
        poll_until([consumers[0], consumers[2]],
                   lambda: len(consumers[0].assignment()) + len(consumers[2].assignment()) == 6)
        assert group.double_owned == []
    finally:
        for c in consumers:
            c.close()


def test_revocation_is_acknowledged_before_the_partitions_move(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 2})
    cluster.consumer_group("g").heartbeat_interval_ms = 100
    l1 = Recorder()
    c1 = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS)
    c2 = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS)
    try:
        c1.subscribe(["t"], listener=l1)
        poll_until([c1], lambda: c1.assignment() == tps("t", 0, 1))
        m1 = c1.group_metadata().member_id
        mark = cluster.mark()
        c2.subscribe(["t"])
        poll_until([c1, c2], lambda: len(c2.assignment()) == 1 and len(c1.assignment()) == 1)
        tid = cluster.topics["t"].topic_id
        acks = [r for r in heartbeats(cluster, m1, mark)
                if r.body["topic_partitions"] is not None]
        assert [{"topic_id": tid, "partitions": [0]}] in [a.body["topic_partitions"]
                                                          for a in acks]
        assert cluster.consumer_group("g").double_owned == []
        assert l1.calls == [("assigned", tps("t", 0, 1)), ("revoked", tps("t", 1)),
                            ("assigned", set())]
    finally:
        c2.close()
        c1.close()


def test_coordinator_move_keeps_the_partitions(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(2, topics={"t": 2})
    cluster.consumer_group("g").heartbeat_interval_ms = 100
    listener = Recorder()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS) as c:
        c.subscribe(["t"], listener=listener)
        poll_until([c], lambda: c.assignment() == tps("t", 0, 1))
        member = c.group_metadata()
        old = cluster.coordinator_of("g")
        mark = cluster.mark()
        cluster.move_coordinator("g", 1 - old)
        poll_until([c], lambda: any(r.broker == 1 - old for r in cluster.requests_of(HB, mark)))
        first_new = next(r for r in cluster.requests_of(HB, mark) if r.broker == 1 - old)
        # the new coordinator hears everything, at the same epoch, owned partitions included
        assert first_new.body["member_epoch"] == member.generation_id
        assert first_new.body["subscribed_topic_names"] == ["t"]
        assert first_new.body["topic_partitions"] is not None
        poll_until([c], lambda: len(cluster.requests_of(HB, mark)) >= 6)
        assert listener.calls == [("assigned", tps("t", 0, 1))]
        assert c.group_metadata().member_id == member.member_id


def test_unreleased_instance_id_is_fatal(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g",
                       group_instance_id="same", **SETTINGS) as c1, \
            KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g",
                          group_instance_id="same", **SETTINGS) as c2:
        c1.subscribe(["t"])
        poll_until([c1], lambda: len(c1.assignment()) == 1)
        c2.subscribe(["t"])
        with pytest.raises(KafkaError, match=r"UNRELEASED_INSTANCE_ID.*group g.*still active"):
            poll_until([c2], lambda: False, timeout=5)
        with pytest.raises(KafkaError, match="UNRELEASED_INSTANCE_ID"):
            c2.poll(timeout_ms=0)
        c1.poll(timeout_ms=0)                         # the first instance is not disturbed
        assert len(c1.assignment()) == 1


def test_unsupported_server_assignor_is_fatal(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g",
                       group_remote_assignor="bogus", **SETTINGS) as c:
        with pytest.raises(KafkaError, match="UNSUPPORTED_ASSIGNOR.*bogus"):
            poll_until([c], lambda: False, timeout=5)


def test_commits_carry_member_id_and_epoch(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    cluster.produce(TopicPartition("t", 0), [(b"k", b"v%d" % i) for i in range(3)])
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g",
                       enable_auto_commit=False, **SETTINGS) as c:
        got: list[int] = []
        poll_until([], lambda: bool(got.extend(
            r.offset for rs in c.poll(timeout_ms=20).values() for r in rs)) or len(got) == 3)
        meta = c.group_metadata()
        mark = cluster.mark()
        c.commit()
        commit = cluster.requests_of(ApiKey.OFFSET_COMMIT, mark)[0].body
        assert commit["generation_id_or_member_epoch"] == meta.generation_id > 0
        assert commit["member_id"] == meta.member_id
        assert cluster.committed("g") == {TopicPartition("t", 0): 3}
        assert cluster.consumer_group("g").offsets_epoch_checks == 1


def test_subscription_change_is_sent_and_reassigned(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"a": 1, "b": 2})
    cluster.consumer_group("g").heartbeat_interval_ms = 100
    listener = Recorder()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS) as c:
        c.subscribe(["a"], listener=listener)
        poll_until([c], lambda: c.assignment() == tps("a", 0))
        mark = cluster.mark()
        c.subscribe(["b"], listener=listener)
        poll_until([c], lambda: c.assignment() == tps("b", 0, 1))
        sent = [r.body for r in cluster.requests_of(HB, mark)
                if r.body["subscribed_topic_names"] is not None]
        assert sent[0]["subscribed_topic_names"] == ["b"]
        assert sent[0]["subscribed_topic_regex"] == ""
        # the broker first takes a-0 back (nothing added yet), then gives b
        assert listener.calls == [("assigned", tps("a", 0)), ("revoked", tps("a", 0)),
                                  ("assigned", set()), ("assigned", tps("b", 0, 1))]


def test_a_commit_crossing_an_epoch_bump_is_retried_with_the_new_epoch(
        make_cluster: Callable[..., FakeCluster]) -> None:
    """The member's acknowledgement and a commit cross: the broker bumps the epoch, refuses the
    commit with STALE_MEMBER_EPOCH, and the heartbeat answer brings the new epoch; the commit
    goes again at once with it. Without a newer epoch, STALE_MEMBER_EPOCH fails the commit."""
    cluster = make_cluster(1, topics={"t": 1})
    group = cluster.consumer_group("g")
    group.heartbeat_interval_ms = 5000       # no heartbeat of its own crosses the scripted one
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g",
                       enable_auto_commit=False, **SETTINGS) as c:
        poll_until([c], lambda: len(c.assignment()) == 1 and any(
            r.body["topic_partitions"] for r in cluster.requests_of(HB)))
        c.poll(timeout_ms=100)                # the acknowledgement's answer
        meta = c.group_metadata()
        calls = []

        def cross(req: Request) -> dict[str, Any] | None:
            calls.append(req.body["generation_id_or_member_epoch"])
            if len(calls) > 1:
                return None
            with cluster.cond:                        # the broker bumped the epoch ...
                group.epoch += 1
                group.members[meta.member_id].epoch = group.epoch
            membership = c._membership                # ... and its heartbeat answer said so
            assert isinstance(membership, ConsumerProtocolMembership)
            membership.member_epoch += 1
            membership.notify_epoch_change(membership.member_epoch, membership.member_id)
            answer = cluster.default_answer(req)
            for t in answer["topics"]:
                for p in t["partitions"]:
                    p["error_code"] = ErrorCode.STALE_MEMBER_EPOCH
            return answer

        remove = cluster.control(ApiKey.OFFSET_COMMIT, cross)
        c.commit({TopicPartition("t", 0): 1})
        remove()
        assert calls == [meta.generation_id, meta.generation_id + 1]
        assert cluster.committed("g") == {TopicPartition("t", 0): 1}
        cluster.inject(ApiKey.OFFSET_COMMIT, ErrorCode.STALE_MEMBER_EPOCH)
        with pytest.raises(CommitFailedError, match="STALE_MEMBER_EPOCH"):
            c.commit({TopicPartition("t", 0): 2})


def test_an_empty_first_assignment_is_still_announced(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    cluster.consumer_group("g").heartbeat_interval_ms = 100
    l2 = Recorder()
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS) as c1, \
            KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS) as c2:
        poll_until([c1], lambda: len(c1.assignment()) == 1)
        c2.subscribe(["t"], listener=l2)
        poll_until([c1, c2], lambda: bool(l2.calls))
        for _ in range(10):
            c1.poll(timeout_ms=20)
            c2.poll(timeout_ms=20)
        assert l2.calls == [("assigned", set())]       # once, as Java's consumer
        assert c2.assignment() == set() and c2.group_metadata().generation_id > 0


def test_a_member_fenced_while_joining_backs_off(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    cluster.inject(HB, ErrorCode.UNKNOWN_MEMBER_ID, count=3)
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g",
                       **{**SETTINGS, "retry_backoff_ms": 200}) as c:
        poll_until([c], lambda: len(c.assignment()) == 1)
        joins = [r.at for r in cluster.requests_of(HB) if r.body["member_epoch"] == 0]
        assert len(joins) == 4
        assert all(b - a >= 0.15 for a, b in zip(joins, joins[1:])), joins


def test_a_heartbeat_answered_after_the_leave_is_not_a_fencing(
        make_cluster: Callable[..., FakeCluster], caplog: pytest.LogCaptureFixture) -> None:
    """A regular heartbeat in flight when the member leaves is answered UNKNOWN_MEMBER_ID
    after the leave: that answer belongs to the membership that ended (no WARNING "fenced",
    no rejoin); the member ends UNSUBSCRIBED."""
    cluster = make_cluster(1, topics={"t": 1})
    cluster.consumer_group("g").heartbeat_interval_ms = 100
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS) as c:
        poll_until([c], lambda: len(c.assignment()) == 1)
        member_id = c.group_metadata().member_id
        late = threading.Event()

        def answer_late(req: Request) -> dict[str, Any] | None:
            if req.body["member_epoch"] <= 0 or late.is_set():
                return None                          # the leave (-1) and later: the default
            late.set()
            time.sleep(0.5)                          # the leave is sent meanwhile
            return {"throttle_time_ms": 0, "error_code": int(ErrorCode.UNKNOWN_MEMBER_ID),
                    "error_message": "member left", "member_id": None, "member_epoch": -1,
                    "heartbeat_interval_ms": 0, "assignment": None}

        cluster.control(HB, answer_late)
        assert late.wait(5.0)                        # a regular heartbeat is in flight
        with caplog.at_level("INFO", logger="pyconsumer"):
            c.unsubscribe()          # waits for the leave's answer, which follows the late one
        membership = c._membership
        assert isinstance(membership, ConsumerProtocolMembership)
        assert membership.state.value == "unsubscribed"
        assert [r.levelname for r in caplog.records if r.levelno >= 30] == []
        assert not [r for r in caplog.records if "fenced" in r.getMessage()]
        leaves = [r for r in heartbeats(cluster, member_id) if r.body["member_epoch"] == -1]
        assert len(leaves) == 1
        assert not [r for r in cluster.requests_of(HB) if r.body["member_epoch"] == 0
                    and r.at > leaves[0].at]      # no rejoin


def test_an_assignment_naming_a_topic_no_longer_subscribed(
        make_cluster: Callable[..., FakeCluster]) -> None:
    """subscribe() changed the topics, and an assignment computed before that still names
    the old one: its partitions are revoked, not kept (nor an IllegalStateError raised)."""
    cluster = make_cluster(1, topics={"a": 1, "b": 1})
    group = cluster.consumer_group("g")
    group.heartbeat_interval_ms = 100
    listener = Recorder()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **SETTINGS) as c:
        c.subscribe(["a"], listener=listener)
        poll_until([c], lambda: c.assignment() == tps("a", 0))
        a, b = cluster.topics["a"].topic_id, cluster.topics["b"].topic_id
        with cluster.cond:                 # the broker's target still gives "a" (and "b")
            group.set_target({c.group_metadata().member_id: {(a, 0), (b, 0)}}, cluster.topics)
        c.subscribe(["b"], listener=listener)
        poll_until([c], lambda: c.assignment() == tps("b", 0))
        assert listener.calls[:2] == [("assigned", tps("a", 0)), ("revoked", tps("a", 0))]
        # b-0 comes with that reconciliation or, when the metadata does not know topic b yet,
        # with the next one
        assert {k for k, _ in listener.calls[2:]} == {"assigned"}
        assert set().union(*(p for _, p in listener.calls[2:])) == tps("b", 0)
