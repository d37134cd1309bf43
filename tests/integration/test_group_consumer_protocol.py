"""The consumer group protocol (KIP-848, group.protocol=consumer) against librdkafka's mock
cluster, the only test broker with ConsumerGroupHeartbeat (Tansu has no API 68: its refusal is
tested too). The mock assigns with a range assignor over its members in join order, bumps a
member's epoch only once the partitions it gets are free, and expires a silent member after its
consumer session timeout (set short here)."""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.group.consumer_protocol import NO_CONSUMER_PROTOCOL
from pyconsumer.errors import CommitFailedError, ErrorCode, KafkaError, UnsupportedVersionError
from pyconsumer.testing import MockCluster, produce, sample_records
from tests.integration.runners import (  # noqa: F401 - the fixture applies to this module
    Runner,
    close_what_a_failed_test_left,
    tps,
    wait_for,
)
from tests.listeners import Recorder

SESSION_MS = 4000
SETTINGS: dict[str, Any] = {"auto_offset_reset": "earliest", "group_protocol": "consumer"}
CONSUMER_GROUP_HEARTBEAT = 68


@pytest.fixture
def mock(mock_cluster: MockCluster) -> Iterator[MockCluster]:
    mock_cluster.set_group_consumer_session_timeout_ms(SESSION_MS)
    mock_cluster.set_group_consumer_heartbeat_interval_ms(300)
    yield mock_cluster


def consumer(mock: MockCluster, group: str, **extra: Any) -> KafkaConsumer:
    return KafkaConsumer(**{**SETTINGS, **extra}, bootstrap_servers=mock.bootstrap,
                         group_id=group)


def offsets_by_partition(records: list[tuple[TopicPartition, int]]
                         ) -> dict[TopicPartition, list[int]]:
    out: dict[TopicPartition, list[int]] = {}
    for tp, o in records:
        out.setdefault(tp, []).append(o)
    return out


def test_members_split_six_partitions_and_rebalance_incrementally(mock: MockCluster) -> None:
    mock.create_topic("k6", 6)
    delivered = produce(mock.bootstrap, "k6", sample_records(600, partitions=6))
    everything = {(TopicPartition("k6", p), o) for p, o in delivered}
    all6 = tps("k6", 6)

    l1 = Recorder()
    c1 = consumer(mock, "g-split")
    c1.subscribe(["k6"], listener=l1)
    r1 = Runner(c1, commit=True)
    wait_for(lambda: r1.assignment == all6)
    assert l1.calls == [("assigned", all6)]
    wait_for(lambda: len(r1.records) == 600)

    # a second member: c1 revokes exactly the three that move (never everything), and is
    # told about nothing else; c2 gets them once c1 acknowledged
    l2 = Recorder()
    c2 = consumer(mock, "g-split")
    c2.subscribe(["k6"], listener=l2)
    r2 = Runner(c2, commit=True)
    wait_for(lambda: len(r1.assignment) == 3 and len(r2.assignment) == 3)
    assert r1.assignment | r2.assignment == all6
    moved = all6 - r1.assignment
    assert l1.calls == [("assigned", all6), ("revoked", moved), ("assigned", set())]
    assert l2.calls == [("assigned", moved)]

    # a third member: each of the first two revokes exactly what it loses and is given
    # exactly what it gains (the mock's range assignor may move a partition between them);
    # a partition a member keeps appears in none of its listener calls
    l3 = Recorder()
    c3 = consumer(mock, "g-split")
    c3.subscribe(["k6"], listener=l3)
    marks = (len(l1.calls), len(l2.calls))
    r3 = Runner(c3, commit=True)
    wait_for(lambda: [len(r.assignment) for r in (r1, r2, r3)] == [2, 2, 2])
    assert r1.assignment | r2.assignment | r3.assignment == all6
    for listener, runner, before, mark in ((l1, r1, all6 - moved, marks[0]),
                                           (l2, r2, moved, marks[1])):
        calls = listener.calls[mark:]
        revoked = set().union(*(p for kind, p in calls if kind == "revoked"))
        added = set().union(*(p for kind, p in calls if kind == "assigned"))
        assert revoked == before - runner.assignment and revoked
        assert added == runner.assignment - before
        assert not any(p & (before & runner.assignment) for _, p in calls)
        assert {kind for kind, _ in calls} <= {"revoked", "assigned"}
    assert l3.calls == [("assigned", r3.assignment)]

    # partitions that stayed were never paused or re-read: their offsets in the member that
    # kept them are consecutive from the first record (no reset to a committed offset)
    more = produce(mock.bootstrap, "k6", sample_records(120, partitions=6, seed=3))
    everything |= {(TopicPartition("k6", p), o) for p, o in more}
    wait_for(lambda: set(r1.records + r2.records + r3.records) == everything)
    for tp, offs in offsets_by_partition(r1.records).items():
        if tp in r1.assignment:
            assert offs == list(range(offs[0], offs[0] + len(offs))), tp

    # one leaves (close(): epoch -1): its partitions move at once, long before a session ends
    r3.stop()
    start = time.monotonic()
    c3.close()
    wait_for(lambda: len(r1.assignment) + len(r2.assignment) == 6
             and r1.assignment | r2.assignment == all6)
    assert time.monotonic() - start < SESSION_MS / 1000
    assert l3.calls[-1] == ("revoked", r3.assignment)
    for r in (r1, r2):
        r.stop()
    c1.close()
    c2.close()
    seen = r1.records + r2.records + r3.records
    assert set(seen) == everything
    for runner in (r1, r2, r3):
        for offs in offsets_by_partition(runner.records).values():
            assert offs == sorted(offs)


def test_killed_member_partitions_move_after_the_session(mock: MockCluster) -> None:
    """A member that stops heartbeating without leaving (killed) is expired by the broker; the
    survivor then gets its partitions and reads on from the committed offsets: nothing lost."""
    mock.create_topic("kk", 4)
    delivered = produce(mock.bootstrap, "kk", sample_records(200, partitions=4))
    everything = {(TopicPartition("kk", p), o) for p, o in delivered}
    c1 = consumer(mock, "g-kill", enable_auto_commit=False)
    c1.subscribe(["kk"])
    r1 = Runner(c1, commit=True)
    wait_for(lambda: r1.assignment == tps("kk", 4))
    victim = consumer(mock, "g-kill", enable_auto_commit=False)
    victim.subscribe(["kk"])
    rv = Runner(victim, commit=True)
    wait_for(lambda: len(r1.assignment) == 2 and len(rv.assignment) == 2)
    wait_for(lambda: set(r1.records + rv.records) == everything)
    # "kill": the victim's thread stops and its connections close without a leave
    rv._stop.set()
    rv._thread.join(10)
    victim._membership.close()                     # type: ignore[union-attr]
    assert victim._client is not None
    victim._client.close()
    killed_at = time.monotonic()
    more = produce(mock.bootstrap, "kk", sample_records(80, partitions=4, seed=5))
    everything |= {(TopicPartition("kk", p), o) for p, o in more}
    wait_for(lambda: r1.assignment == tps("kk", 4), timeout=SESSION_MS / 1000 + 20)
    assert time.monotonic() - killed_at >= SESSION_MS / 1000 - 1.5   # expiry, not a leave
    wait_for(lambda: set(r1.records + rv.records) >= everything)
    r1.stop()
    c1.close()
    rv.errors.clear()


def test_mixed_group_with_confluent_kafka(mock: MockCluster) -> None:
    ck = pytest.importorskip("confluent_kafka")
    mock.create_topic("mixed", 6)
    delivered = produce(mock.bootstrap, "mixed", sample_records(300, partitions=6))
    everything = {(TopicPartition("mixed", p), o) for p, o in delivered}
    ours = consumer(mock, "g-mixed")
    ours.subscribe(["mixed"])
    r = Runner(ours, commit=True)
    wait_for(lambda: r.assignment == tps("mixed", 6))

    theirs_seen: list[tuple[TopicPartition, int]] = []
    theirs_assignment: list[set[TopicPartition]] = [set()]
    stop = threading.Event()

    def run_theirs() -> None:
        c = ck.Consumer({"bootstrap.servers": mock.bootstrap, "group.id": "g-mixed",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
        c.subscribe(["mixed"])
        try:
            while not stop.is_set():
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    theirs_seen.append((TopicPartition(m.topic(), m.partition()), m.offset()))
                theirs_assignment[0] = {TopicPartition(p.topic, p.partition)
                                        for p in c.assignment()}
        finally:
            c.close()

    t = threading.Thread(target=run_theirs, daemon=True)
    t.start()
    try:
        wait_for(lambda: len(r.assignment) == 3 and len(theirs_assignment[0]) == 3)
        assert r.assignment | theirs_assignment[0] == tps("mixed", 6)
        more = produce(mock.bootstrap, "mixed", sample_records(120, partitions=6, seed=9))
        everything |= {(TopicPartition("mixed", p), o) for p, o in more}
        wait_for(lambda: set(r.records + theirs_seen) >= everything)
        # each partition that moved to confluent-kafka was read on from our commit: nothing lost
        assert {tp for tp, _ in theirs_seen} <= theirs_assignment[0]
    finally:
        stop.set()
        t.join(20)
    # confluent-kafka left: ours gets everything back
    wait_for(lambda: r.assignment == tps("mixed", 6))
    r.stop()
    ours.close()


def test_regex_subscription_picks_up_a_new_topic(mock: MockCluster) -> None:
    mock.create_topic("rx-a", 2)
    mock.create_topic("other", 2)
    listener = Recorder()
    c = consumer(mock, "g-regex", metadata_max_age_ms=500)
    c.subscribe(pattern="^rx-.*", listener=listener)
    r = Runner(c)
    wait_for(lambda: r.assignment == tps("rx-a", 2))
    mock.create_topic("rx-b", 3)
    delivered = produce(mock.bootstrap, "rx-b", sample_records(30, partitions=3))
    wait_for(lambda: r.assignment == tps("rx-a", 2) | tps("rx-b", 3))
    wait_for(lambda: {(tp, o) for tp, o in r.records if tp.topic == "rx-b"}
             == {(TopicPartition("rx-b", p), o) for p, o in delivered})
    r.stop()
    assert listener.calls == [("assigned", tps("rx-a", 2)), ("assigned", tps("rx-b", 3))]
    assert c.subscription() >= {"rx-a", "rx-b"} and "other" not in c.subscription()
    c.close()


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_fenced_member_loses_its_partitions_and_rejoins(mock: MockCluster, code: int) -> None:
    mock.create_topic("fence", 2)
    listener = Recorder()
    with consumer(mock, "g-fence") as c:
        c.subscribe(["fence"], listener=listener)
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        member_id = c.group_metadata().member_id
        mock.push_request_errors(CONSUMER_GROUP_HEARTBEAT, code)
        wait_for(lambda: c.poll(timeout_ms=100) is not None
                 and ("lost", tps("fence", 2)) in listener.calls)
        assert set(listener.threads) == {threading.current_thread().name}    # in poll()
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        assert listener.calls == [("assigned", tps("fence", 2)), ("lost", tps("fence", 2)),
                                  ("assigned", tps("fence", 2))]
        # KIP-1082: the member keeps its id across the rejoin, with a new epoch
        assert c.group_metadata().member_id == member_id
        assert c.group_metadata().generation_id > 0


def test_unsubscribe_leaves_and_subscribe_rejoins(mock: MockCluster) -> None:
    mock.create_topic("unsub", 2)
    listener = Recorder()
    with consumer(mock, "g-unsub") as c:
        c.subscribe(["unsub"], listener=listener)
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        c.unsubscribe()
        assert c.assignment() == set() and c.group_metadata().generation_id == -1
        assert listener.calls == [("assigned", tps("unsub", 2)), ("revoked", tps("unsub", 2))]
        other = consumer(mock, "g-unsub")     # the group is empty: it gets everything at once
        other.subscribe(["unsub"])
        wait_for(lambda: other.poll(timeout_ms=100) is not None and len(other.assignment()) == 2)
        other.close()
        c.subscribe(["unsub"], listener=listener)
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        assert listener.calls[-1] == ("assigned", tps("unsub", 2))


def test_pattern_flags_are_refused(mock: MockCluster) -> None:
    with consumer(mock, "g-flags") as c, pytest.raises(ValueError, match="IGNORECASE.*inline"):
        c.subscribe(pattern=re.compile("abc.*", re.IGNORECASE))


def test_commits_carry_the_member_epoch(mock: MockCluster) -> None:
    """The mock refuses an OffsetCommit whose epoch is not the member's current one
    (STALE_MEMBER_EPOCH): commits succeeding before and after an epoch bump show the epoch
    travels with them; a stale epoch is a CommitFailedError naming it."""
    mock.create_topic("ep", 2)
    delivered = produce(mock.bootstrap, "ep", sample_records(20, partitions=2))
    c1 = consumer(mock, "g-epoch", enable_auto_commit=False)
    c1.subscribe(["ep"])
    seen: set[tuple[TopicPartition, int]] = set()

    def poll1() -> bool:
        seen.update((tp, r.offset) for tp, rs in c1.poll(timeout_ms=100).items() for r in rs)
        return len(seen) == 20
    wait_for(poll1)
    first = c1.group_metadata()
    assert first.generation_id > 0 and first.member_id
    c1.commit()
    assert {tp.partition: om.offset for tp, om in c1.committed(tps("ep", 2)).items()} == {
        p: max(o for q, o in delivered if q == p) + 1 for p in range(2)}

    c2 = consumer(mock, "g-epoch", enable_auto_commit=False)
    c2.subscribe(["ep"])
    r2 = Runner(c2)
    wait_for(lambda: c1.poll(timeout_ms=50) is not None and len(c1.assignment()) == 1
             and len(r2.assignment) == 1)
    wait_for(lambda: c1.poll(timeout_ms=50) is not None
             and c1.group_metadata().generation_id > first.generation_id)
    kept = next(iter(c1.assignment()))
    c1.commit({kept: 5})
    assert c1.committed([kept])[kept].offset == 5   # type: ignore[union-attr]
    mock.push_request_errors(8, ErrorCode.STALE_MEMBER_EPOCH)
    with pytest.raises(CommitFailedError, match="STALE_MEMBER_EPOCH|stale member epoch"):
        c1.commit({kept: 6})
    r2.stop()
    c2.close()
    c1.close()


def test_auto_commit_before_revocation_hands_over_exact_positions(mock: MockCluster) -> None:
    """With auto-commit, the member commits what it consumed before it revokes: the member that
    receives the partitions starts exactly there (no record read twice, none skipped)."""
    mock.create_topic("ac", 2)
    delivered = produce(mock.bootstrap, "ac", sample_records(100, partitions=2))
    c1 = consumer(mock, "g-ac", auto_commit_interval_ms=600000)   # only the revocation commits
    c1.subscribe(["ac"])
    r1 = Runner(c1)
    wait_for(lambda: len(r1.records) == 100)
    c2 = consumer(mock, "g-ac", auto_commit_interval_ms=600000)
    c2.subscribe(["ac"])
    r2 = Runner(c2)
    wait_for(lambda: len(r1.assignment) == 1 and len(r2.assignment) == 1)
    more = produce(mock.bootstrap, "ac", sample_records(40, partitions=2, seed=4))
    everything = {(TopicPartition("ac", p), o) for p, o in delivered + more}
    wait_for(lambda: set(r1.records + r2.records) == everything)
    r1.stop()
    r2.stop()
    assert len(r1.records + r2.records) == len(everything)          # nothing twice
    c2.close()
    c1.close()


def test_static_member_returns_to_its_partitions(mock: MockCluster) -> None:
    """A static member leaves with epoch -2: the broker keeps its assignment, so a new instance
    with the same group.instance.id gets the same partitions and the other member is not
    disturbed."""
    mock.create_topic("st", 4)
    l1 = Recorder()
    c1 = consumer(mock, "g-static", group_instance_id="host-1")
    c1.subscribe(["st"], listener=l1)
    r1 = Runner(c1)
    wait_for(lambda: r1.assignment == tps("st", 4))
    c2 = consumer(mock, "g-static", group_instance_id="host-2")
    c2.subscribe(["st"])
    r2 = Runner(c2)
    wait_for(lambda: len(r1.assignment) == 2 and len(r2.assignment) == 2)
    mine = set(r2.assignment)
    calls = len(l1.calls)
    r2.stop()
    c2.close()
    back = consumer(mock, "g-static", group_instance_id="host-2")
    lb = Recorder()
    back.subscribe(["st"], listener=lb)
    rb = Runner(back)
    wait_for(lambda: rb.assignment == mine)
    time.sleep(1.0)                                  # a few heartbeats of the other member
    assert len(l1.calls) == calls and r1.assignment == tps("st", 4) - mine
    assert lb.calls == [("assigned", mine)]
    rb.stop()
    r1.stop()
    back.close()
    c1.close()


def test_max_poll_interval_leaves_then_rejoins_with_partitions_lost(mock: MockCluster) -> None:
    mock.create_topic("mpi", 2)
    listener = Recorder()
    with consumer(mock, "g-mpi", max_poll_interval_ms=1500) as c:
        c.subscribe(["mpi"], listener=listener)
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        time.sleep(2.5)                     # the heartbeat thread leaves the group meanwhile
        with pytest.raises(CommitFailedError):
            c.commit({TopicPartition("mpi", 0): 0})
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        assert listener.calls == [("assigned", tps("mpi", 2)), ("lost", tps("mpi", 2)),
                                  ("assigned", tps("mpi", 2))]


def test_fatal_heartbeat_error_is_raised_from_every_poll(mock: MockCluster) -> None:
    mock.create_topic("fatal", 1)
    with consumer(mock, "g-fatal") as c:
        c.subscribe(["fatal"])
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 1)
        mock.push_request_errors(CONSUMER_GROUP_HEARTBEAT, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        deadline = time.monotonic() + 10
        with pytest.raises(KafkaError, match="GROUP_AUTHORIZATION_FAILED.*g-fatal"):
            while time.monotonic() < deadline:
                c.poll(timeout_ms=100)
        with pytest.raises(KafkaError, match="GROUP_AUTHORIZATION_FAILED"):
            c.poll(timeout_ms=0)


def test_enforce_rebalance_is_a_no_op(mock: MockCluster, caplog: pytest.LogCaptureFixture
                                      ) -> None:
    mock.create_topic("enf", 2)
    listener = Recorder()
    with consumer(mock, "g-enf") as c:
        c.subscribe(["enf"], listener=listener)
        wait_for(lambda: c.poll(timeout_ms=100) is not None and len(c.assignment()) == 2)
        c.enforce_rebalance("test")
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            c.poll(timeout_ms=100)
        assert listener.calls == [("assigned", tps("enf", 2))]
        assert "no effect with group.protocol=consumer" in caplog.text


def test_tansu_without_the_consumer_protocol_is_refused(tansu: Any) -> None:
    with KafkaConsumer("t", **SETTINGS, bootstrap_servers=tansu.bootstrap,
                       group_id="g-848-tansu") as c:
        deadline = time.monotonic() + 20
        with pytest.raises(UnsupportedVersionError) as info:
            while time.monotonic() < deadline:
                c.poll(timeout_ms=200)
        assert str(info.value).startswith(NO_CONSUMER_PROTOCOL)
