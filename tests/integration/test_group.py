"""Group membership (classic protocol) against librdkafka's mock cluster: subscribe, the
leader's assignment, rebalances when members join and leave, eager and cooperative listeners,
pattern subscriptions, commits across a rebalance with no record lost or read twice, static
members that do not leave, and the max.poll.interval.ms guard. The mock takes a few seconds to
complete a rebalance, so the loops below wait up to 30 s for a condition."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import IllegalStateError
from pyconsumer.testing import MockCluster, produce, sample_records
from tests.integration.runners import (  # noqa: F401 - the fixture applies to this module
    Runner,
    close_what_a_failed_test_left,
    tps,
    wait_for,
)
from tests.listeners import Recorder

GROUP_SETTINGS: dict[str, Any] = {
    "auto_offset_reset": "earliest", "session_timeout_ms": 6000, "heartbeat_interval_ms": 300,
}


# The mock starts a rebalance as soon as a LeaveGroup arrives; the remaining member learns it
# from its next heartbeat (300 ms) and the mock elects a leader session.timeout.ms - 1 s later.
# Without a LeaveGroup the member first has to expire (session.timeout.ms), and the rebalance
# then waits session.timeout.ms - 1 s more. These bounds separate the two with seconds to spare.
SESSION_S = GROUP_SETTINGS["session_timeout_ms"] / 1000
PROMPT_REVOKE_S = 2.5                 # an expiry cannot start the rebalance before SESSION_S
PROMPT_HAND_OVER_S = SESSION_S + 2.0  # an expiry cannot finish it before 2 * SESSION_S - 1


def assert_prompt_hand_over(leaver: KafkaConsumer, stayer: Runner, listener: Recorder,
                            everything: set[TopicPartition], eager: bool = True) -> None:
    """Close ``leaver`` (a LeaveGroup) and check that ``stayer``, polled by a Runner, soon owns
    ``everything``; an eager stayer must also revoke its partitions at once (a cooperative one
    calls its listener only when the new partitions arrive)."""
    calls_before = len(listener.calls)
    start = time.monotonic()
    leaver.close()
    wait_for(lambda: stayer.assignment == everything, timeout=4 * SESSION_S)
    owned_all = time.monotonic() - start
    first_call = listener.times[calls_before] - start
    assert not eager or first_call < PROMPT_REVOKE_S, (
        f"the remaining member's rebalance began {first_call:.1f} s after the other left: "
        "no LeaveGroup reached the coordinator (session expiry instead)")
    assert owned_all < PROMPT_HAND_OVER_S, (
        f"the remaining member owned every partition only {owned_all:.1f} s after the other left")


def test_one_member_then_two_then_one(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("orders", 4)
    records = sample_records(400, partitions=4)
    delivered = produce(mock_cluster.bootstrap, "orders", records)
    everything = {(TopicPartition("orders", p), o) for p, o in delivered}
    settings = dict(GROUP_SETTINGS, bootstrap_servers=mock_cluster.bootstrap, group_id="g1")

    first_listener = Recorder()
    c1 = KafkaConsumer(**settings)
    c1.subscribe(["orders"], listener=first_listener)
    assert c1.subscription() == {"orders"}
    r1 = Runner(c1, commit=True)
    wait_for(lambda: len(r1.records) >= 100)          # c1 alone owns all four partitions
    assert r1.assignment == tps("orders", 4)
    assert first_listener.calls[0] == ("assigned", tps("orders", 4))

    c2 = KafkaConsumer("orders", **settings)
    r2 = Runner(c2, commit=True)
    wait_for(lambda: len(r1.assignment) == 2 and len(r2.assignment) == 2)
    assert r1.assignment | r2.assignment == tps("orders", 4)
    # eager: everything revoked before the rebalance, then the new share assigned
    assert ("revoked", tps("orders", 4)) in first_listener.calls
    assert first_listener.calls[-1] == ("assigned", r1.assignment)

    wait_for(lambda: len({x for x in r1.records + r2.records}) == 400)
    r2.stop()
    assert_prompt_hand_over(c2, r1, first_listener, tps("orders", 4))   # c2 leaves the group
    more = sample_records(40, partitions=4, seed=8)
    delivered2 = produce(mock_cluster.bootstrap, "orders", more)
    everything |= {(TopicPartition("orders", p), o) for p, o in delivered2}
    wait_for(lambda: {x for x in r1.records + r2.records} == everything)
    r1.stop()
    c1.close()
    seen = r1.records + r2.records
    # committed after every poll: a rebalance may replay records after the last commit, but
    # none is lost; each partition's records arrive in order within each member
    assert {x for x in seen} == everything
    for runner in (r1, r2):
        for p in range(4):
            offsets = [o for tp, o in runner.records if tp.partition == p]
            assert offsets == sorted(offsets)


def test_cooperative_rebalance_revokes_only_what_moves(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("coop", 4)
    settings = dict(GROUP_SETTINGS, bootstrap_servers=mock_cluster.bootstrap, group_id="g-coop",
                    partition_assignment_strategy=["cooperative-sticky"])
    listener = Recorder()
    c1 = KafkaConsumer(**settings)
    c1.subscribe(["coop"], listener=listener)
    r1 = Runner(c1)
    wait_for(lambda: r1.assignment == tps("coop", 4))
    stayer_listener = Recorder()
    c2 = KafkaConsumer(**settings)
    c2.subscribe(["coop"], listener=stayer_listener)
    r2 = Runner(c2)
    wait_for(lambda: len(r1.assignment) == 2 and len(r2.assignment) == 2)
    r1.stop()
    revoked = [p for kind, p in listener.calls if kind == "revoked"]
    assert revoked and all(len(p) == 2 for p in revoked)   # never everything
    assert tps("coop", 4) - r1.assignment == revoked[0]
    kept = r2.assignment
    assert_prompt_hand_over(c1, r2, stayer_listener, tps("coop", 4), eager=False)
    r2.stop()
    # cooperative: c2 never gives anything up and, at the end, gains exactly the other two
    assert {kind for kind, _ in stayer_listener.calls} == {"assigned"}
    assert stayer_listener.calls[-1] == ("assigned", tps("coop", 4) - kept)
    c2.close()


def test_pattern_subscription(mock_cluster: MockCluster) -> None:
    for name in ("pat-a", "pat-b", "other"):
        mock_cluster.create_topic(name, 2)
    with KafkaConsumer(**GROUP_SETTINGS, bootstrap_servers=mock_cluster.bootstrap,
                       group_id="g-pat") as c:
        c.subscribe(pattern=r"pat-.*")
        wait_for(lambda: (c.poll(timeout_ms=100) is not None
                          and c.assignment() == tps("pat-a", 2) | tps("pat-b", 2)))
        assert c.subscription() == {"pat-a", "pat-b"}
        with pytest.raises(IllegalStateError, match="mutually exclusive"):
            c.assign([TopicPartition("other", 0)])


def test_subscribe_needs_a_group_id(mock_cluster: MockCluster) -> None:
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap) as c:
        with pytest.raises(IllegalStateError, match="subscribe\\(\\) needs a group.id"):
            c.subscribe(["t"])


def test_static_member_does_not_leave(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("static", 2)
    c = KafkaConsumer("static", **GROUP_SETTINGS, bootstrap_servers=mock_cluster.bootstrap,
                      group_id="g-static", group_instance_id="worker-1")
    wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
    mock_cluster.start_request_tracking()
    c.close()
    assert 13 not in {r.api_key for r in mock_cluster.get_requests()}   # no LeaveGroup
    dynamic = KafkaConsumer("static", **GROUP_SETTINGS, bootstrap_servers=mock_cluster.bootstrap,
                            group_id="g-dynamic")
    wait_for(lambda: dynamic.poll(timeout_ms=100) is not None and len(dynamic.assignment()) == 2)
    mock_cluster.clear_requests()
    dynamic.close()
    assert 13 in {r.api_key for r in mock_cluster.get_requests()}       # a dynamic one leaves


def test_max_poll_interval_leaves_and_rejoins(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("slow", 2)
    listener = Recorder()
    c = KafkaConsumer(**dict(GROUP_SETTINGS, max_poll_interval_ms=1000, session_timeout_ms=6000),
                      bootstrap_servers=mock_cluster.bootstrap, group_id="g-slow")
    try:
        c.subscribe(["slow"], listener=listener)
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        mock_cluster.start_request_tracking()
        # no poll: after max.poll.interval.ms the heartbeat thread leaves
        wait_for(lambda: 13 in {r.api_key for r in mock_cluster.get_requests()}, timeout=5)
        calls_before = len(listener.calls)
        left = time.monotonic()

        def assigned() -> list[set[TopicPartition]]:
            return [p for kind, p in listener.calls[calls_before:] if kind == "assigned"]

        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(assigned()) > 0)
        rejoined = time.monotonic() - left
        # The leave reached the coordinator, so the old member is gone: the rejoin's first
        # assignment is both partitions, soon. Had it stayed (until its session expires, 6 s),
        # the leader would have given it a partition of the new generation.
        assert assigned()[0] == tps("slow", 2), listener.calls[calls_before:]
        assert rejoined < PROMPT_HAND_OVER_S, f"rejoined {rejoined:.1f} s after leaving"
        wait_for(lambda: c.poll(timeout_ms=100) is not None and c.assignment() == tps("slow", 2))
    finally:
        c.close()


def test_tansu_group_with_flexible_versions(tansu: Any, make_tansu_topic: Callable[..., str]) -> None:
    """Tansu negotiates the flexible group APIs (JoinGroup v9, SyncGroup v5, LeaveGroup v5)."""
    topic = make_tansu_topic(2)
    delivered = produce(tansu.bootstrap, topic, sample_records(60, partitions=2))
    settings = dict(GROUP_SETTINGS, bootstrap_servers=tansu.bootstrap, group_id=f"g-{topic}",
                    session_timeout_ms=2000, heartbeat_interval_ms=300)
    with KafkaConsumer(topic, **settings) as c:
        seen: set[tuple[TopicPartition, int]] = set()
        deadline = time.monotonic() + 30
        while len(seen) < 60 and time.monotonic() < deadline:
            for tp, recs in c.poll(timeout_ms=200).items():
                seen |= {(tp, r.offset) for r in recs}
        assert seen == {(TopicPartition(topic, p), o) for p, o in delivered}
        assert c.assignment() == tps(topic, 2)
        versions = c.negotiated_versions()
        coordinator = next(v for n, v in versions.items() if n > 2**30)
        assert coordinator["JOIN_GROUP"] >= 6 and coordinator["SYNC_GROUP"] >= 4
        c.commit()
        assert {tp: om.offset for tp, om in c.committed(tps(topic, 2)).items()} == {
            TopicPartition(topic, p): 30 for p in range(2)}


def test_lost_generation_calls_on_partitions_lost_in_poll(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("lost", 2)
    listener = Recorder()
    c = KafkaConsumer(**GROUP_SETTINGS, bootstrap_servers=mock_cluster.bootstrap, group_id="g-lost")
    try:
        c.subscribe(["lost"], listener=listener)
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        mock_cluster.push_request_errors(12, 25)          # the next heartbeat: UNKNOWN_MEMBER_ID
        wait_for(lambda: c.poll(timeout_ms=100) is not None and ("lost", tps("lost", 2)) in listener.calls)
        assert set(listener.threads) == {threading.current_thread().name}   # in poll(), not the heartbeat thread
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        assert listener.calls[-1] == ("assigned", tps("lost", 2))
    finally:
        c.close()
