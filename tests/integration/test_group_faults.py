"""A group member under faults, against librdkafka's mock cluster (issue 9): the coordinator
moves or its broker goes down (the member finds it again and keeps its partitions), the
application stops polling for longer than max.poll.interval.ms (partitions *lost*, a commit
fails locally), error codes mapped as Java (FENCED_INSTANCE_ID fatal, OffsetCommit
REBALANCE_IN_PROGRESS), and the thread model (blocking calls keep heartbeating, a wakeup
interrupts a commit, a second thread is refused)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import (
    CommitFailedError,
    ConcurrentAccessError,
    ErrorCode,
    FencedInstanceIdError,
    RebalanceInProgressError,
    WakeupError,
)
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import MockCluster, produce, sample_records
from tests.listeners import Recorder

SETTINGS: dict[str, Any] = {
    "auto_offset_reset": "earliest", "session_timeout_ms": 6000, "heartbeat_interval_ms": 300,
    "retry_backoff_ms": 100, "enable_auto_commit": False,
}


def tps(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


def poll_until(c: KafkaConsumer, condition: Callable[[], bool], timeout: float = 30.0,
               seen: list[tuple[TopicPartition, int]] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        for tp, recs in c.poll(timeout_ms=100).items():
            if seen is not None:
                seen.extend((tp, r.offset) for r in recs)


def requests(mc: MockCluster, api: ApiKey) -> list[Any]:
    return [r for r in mc.get_requests() if r.api_key == int(api)]


def joined(mc: MockCluster, topic: str, partitions: int, group: str, **extra: Any
           ) -> tuple[KafkaConsumer, Recorder]:
    listener = Recorder()
    c = KafkaConsumer(**dict(SETTINGS, **extra), bootstrap_servers=mc.bootstrap, group_id=group)
    c.subscribe([topic], listener=listener)
    poll_until(c, lambda: c.assignment() == tps(topic, partitions))
    return c, listener


# ---------------------------------------------------------------------- coordinator moves


def test_coordinator_moves_member_finds_it_again_and_keeps_its_partitions(
        mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("moving", 3)
    mock_cluster.set_coordinator("group", "g-move", 1)
    c, listener = joined(mock_cluster, "moving", 3, "g-move")
    try:
        mock_cluster.start_request_tracking()
        mock_cluster.set_coordinator("group", "g-move", 2)      # broker 1 now: NOT_COORDINATOR
        # longer than the session: without rediscovery the member would be expelled
        end = time.monotonic() + 8.0
        while time.monotonic() < end:
            c.poll(timeout_ms=100)
        assert requests(mock_cluster, ApiKey.FIND_COORDINATOR), "never looked up again"
        beats = [r for r in requests(mock_cluster, ApiKey.HEARTBEAT) if r.broker_id == 2]
        assert len(beats) >= 10, f"only {len(beats)} heartbeats reached the new coordinator"
        assert c.assignment() == tps("moving", 3)
        assert listener.calls == [("assigned", tps("moving", 3))]   # nothing lost or revoked
        c.commit({TopicPartition("moving", 0): 0})                  # the generation is still good
    finally:
        c.close()


def test_coordinator_broker_down_then_up_member_keeps_its_partitions(
        mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("down", 2)
    mock_cluster.set_coordinator("group", "g-down", 3)
    for p in range(2):
        mock_cluster.set_partition_leader("down", p, 1)          # data stays reachable
    c, listener = joined(mock_cluster, "down", 2, "g-down", session_timeout_ms=10_000)
    try:
        mock_cluster.broker_down(3)
        delivered = produce(mock_cluster.bootstrap, "down", sample_records(50, partitions=2))
        seen: list[tuple[TopicPartition, int]] = []
        end = time.monotonic() + 3.0
        while time.monotonic() < end:                            # fetching goes on meanwhile
            for tp, recs in c.poll(timeout_ms=100).items():
                seen.extend((tp, r.offset) for r in recs)
        mock_cluster.start_request_tracking()
        mock_cluster.broker_up(3)
        poll_until(c, lambda: len([r for r in requests(mock_cluster, ApiKey.HEARTBEAT)
                                   if r.broker_id == 3]) >= 3, timeout=10, seen=seen)
        assert sorted(seen) == sorted((TopicPartition("down", p), o) for p, o in delivered)
        assert c.assignment() == tps("down", 2)
        assert listener.calls == [("assigned", tps("down", 2))]
        c.commit()
        assert {tp: om.offset for tp, om in c.committed(tps("down", 2)).items()} == {
            TopicPartition("down", p): sum(1 for q, _ in delivered if q == p) for p in range(2)}
    finally:
        c.close()


# ---------------------------------------------------------------------- max.poll.interval.ms


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_poll_timeout_loses_partitions_for_every_protocol(mock_cluster: MockCluster,
                                                          strategy: str) -> None:
    mock_cluster.create_topic("slow", 2)
    c, listener = joined(mock_cluster, "slow", 2, f"g-slow-{strategy}", max_poll_interval_ms=1000,
                         partition_assignment_strategy=[strategy])
    try:
        mock_cluster.start_request_tracking()
        time.sleep(2.0)                               # no poll: the heartbeat thread leaves
        assert requests(mock_cluster, ApiKey.LEAVE_GROUP), "no LeaveGroup on the poll timeout"
        mock_cluster.clear_requests()
        with pytest.raises(CommitFailedError, match="not part of an active group"):
            c.commit({TopicPartition("slow", 0): 1})
        assert not requests(mock_cluster, ApiKey.OFFSET_COMMIT)     # failed locally
        produce(mock_cluster.bootstrap, "slow", sample_records(10, partitions=2))
        got = c.poll(timeout_ms=0)
        # the next poll hands the partitions back as lost before anything else
        assert listener.calls[:2] == [("assigned", tps("slow", 2)), ("lost", tps("slow", 2))]
        assert "revoked" not in [kind for kind, _ in listener.calls]
        assert got == {} or set(got) <= c.assignment()
        poll_until(c, lambda: c.assignment() == tps("slow", 2))     # and it rejoins
        assert listener.calls[-1] == ("assigned", tps("slow", 2))
    finally:
        c.close()


# ---------------------------------------------------------------------- error mapping


@pytest.mark.parametrize("api", [ApiKey.HEARTBEAT, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP])
def test_fenced_instance_id_is_fatal(mock_cluster: MockCluster, api: ApiKey) -> None:
    mock_cluster.create_topic("fenced", 1)
    c = KafkaConsumer(**SETTINGS, bootstrap_servers=mock_cluster.bootstrap, group_id="g-fenced",
                      group_instance_id="worker-1")
    try:
        if api is ApiKey.HEARTBEAT:
            c.subscribe(["fenced"])
            poll_until(c, lambda: len(c.assignment()) == 1)
        mock_cluster.push_request_errors(int(api), ErrorCode.FENCED_INSTANCE_ID)
        if api is not ApiKey.HEARTBEAT:
            c.subscribe(["fenced"])
        with pytest.raises(FencedInstanceIdError):
            poll_until(c, lambda: False, timeout=10)
        mock_cluster.start_request_tracking()
        with pytest.raises(FencedInstanceIdError):               # and stays fenced
            c.poll(timeout_ms=100)
        time.sleep(0.5)
        assert not requests(mock_cluster, ApiKey.JOIN_GROUP)       # never rejoins
    finally:
        c.close()


def test_commit_fenced_instance_id_is_fatal(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("fenced-c", 1)
    c, _ = joined(mock_cluster, "fenced-c", 1, "g-fenced-c", group_instance_id="w-1")
    try:
        mock_cluster.push_request_errors(int(ApiKey.OFFSET_COMMIT), ErrorCode.FENCED_INSTANCE_ID)
        with pytest.raises(FencedInstanceIdError):
            c.commit({TopicPartition("fenced-c", 0): 0})
        with pytest.raises(FencedInstanceIdError):
            c.poll(timeout_ms=100)
    finally:
        c.close()


def test_commit_during_rebalance_raises_rebalance_in_progress(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("reb", 2)
    c, listener = joined(mock_cluster, "reb", 2, "g-reb")
    try:
        mock_cluster.push_request_errors(int(ApiKey.OFFSET_COMMIT),
                                         ErrorCode.REBALANCE_IN_PROGRESS)
        with pytest.raises(RebalanceInProgressError, match="rebalancing"):
            c.commit({TopicPartition("reb", 0): 0})
        mock_cluster.start_request_tracking()
        poll_until(c, lambda: bool(requests(mock_cluster, ApiKey.JOIN_GROUP)))  # it rejoins
        poll_until(c, lambda: c.assignment() == tps("reb", 2))
        c.commit({TopicPartition("reb", 0): 0})
    finally:
        c.close()


# ---------------------------------------------------------------------- thread model


def test_blocking_commit_keeps_heartbeating(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("busy", 2)
    c, listener = joined(mock_cluster, "busy", 2, "g-busy", session_timeout_ms=6000)
    try:
        # the coordinator keeps answering "loading" for ~9 s (longer than the session): the
        # retries back off 100, 200, 400, 800 ms, then retry.backoff.max.ms (1000) each
        mock_cluster.push_request_errors(int(ApiKey.OFFSET_COMMIT),
                                         *[ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 12)
        mock_cluster.start_request_tracking()
        started = time.monotonic()
        c.commit({TopicPartition("busy", 0): 0}, timeout_ms=30_000)
        took = time.monotonic() - started
        assert took > 6.0, took
        beats = requests(mock_cluster, ApiKey.HEARTBEAT)
        assert len(beats) >= took / 0.3 * 0.5, f"{len(beats)} heartbeats in {took:.1f} s"
        c.poll(timeout_ms=500)
        assert c.assignment() == tps("busy", 2)
        assert listener.calls == [("assigned", tps("busy", 2))]   # never expelled
    finally:
        c.close()


def test_wakeup_interrupts_a_commit(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("wake", 1)
    c, _ = joined(mock_cluster, "wake", 1, "g-wake")
    try:
        mock_cluster.push_request_errors(int(ApiKey.OFFSET_COMMIT),
                                         *[ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 100)
        threading.Timer(0.5, c.wakeup).start()
        started = time.monotonic()
        with pytest.raises(WakeupError):
            c.commit({TopicPartition("wake", 0): 0}, timeout_ms=20_000)
        assert time.monotonic() - started < 5.0
        mock_cluster.clear_request_errors(int(ApiKey.OFFSET_COMMIT))
    finally:
        c.close()


def test_second_thread_is_refused_but_wakeup_is_not(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("two", 1)
    c = KafkaConsumer(**SETTINGS, bootstrap_servers=mock_cluster.bootstrap)
    c.assign([TopicPartition("two", 0)])
    errors: list[BaseException] = []
    in_poll = threading.Event()

    def intruder() -> None:
        in_poll.wait(5)
        time.sleep(0.2)
        try:
            c.assignment()
        except BaseException as e:
            errors.append(e)
        c.wakeup()

    t = threading.Thread(target=intruder)
    t.start()
    in_poll.set()
    with pytest.raises(WakeupError):
        c.poll(timeout_ms=10_000)
    t.join()
    assert len(errors) == 1 and isinstance(errors[0], ConcurrentAccessError)
    assert c.assignment() == {TopicPartition("two", 0)}       # the owner carries on
    c.close()
