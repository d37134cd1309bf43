"""Follower fetching (KIP-392): ``client.rack`` goes out as ``rack_id``; a partition whose Fetch
answer names a ``preferred_read_replica`` is fetched from that broker until the choice
expires (metadata.max.age.ms), fails, or the replica answers OFFSET_OUT_OF_RANGE (then the
leader is asked first: no reset on a replica's word).

Two brokers: the fake cluster (pyconsumer.testing.FakeCluster: racks, followers with their own end
offset; the leader names an in-rack follower that holds the fetch offset, as Kafka's
findPreferredReadReplica) for the exact rules, and librdkafka's mock cluster (a real peer:
its leader names the follower set with set_partition_follower and returns no records then;
request tracking shows which broker got each Fetch).
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FakeCluster, MockCluster, Request, produce
from pyconsumer.testing._produce import TestRecord

TP = TopicPartition("t", 0)
Row = tuple[int, bytes | None]
FAST: dict[str, Any] = dict(fetch_max_wait_ms=50, retry_backoff_ms=20, reconnect_backoff_ms=20,
                            reconnect_backoff_max_ms=200, auto_offset_reset="earliest")


@pytest.fixture
def racked() -> Iterator[FakeCluster]:
    """Three brokers in racks a, b, c; t-0 led by 0, followed by 1 and 2."""
    with FakeCluster(3) as cl:
        cl.create_topic("t", 1, leaders=[0])
        for node, rack in enumerate("abc"):
            cl.set_rack(node, rack)
        cl.set_follower(TP, 1)
        cl.set_follower(TP, 2)
        yield cl
        assert cl.errors == []


def put(cl: FakeCluster, n: int, start: int) -> list[Row]:
    values = [b"v%d" % i for i in range(start, start + n)]
    return list(zip(cl.produce(TP, [(None, v) for v in values]), values))


def poll_until(c: KafkaConsumer, n: int, got: list[Row], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(got) < n:
        assert time.monotonic() < deadline, f"timed out with {got}"
        for recs in c.poll(50).values():
            got.extend((r.offset, r.value) for r in recs)


def fetch_log(cl: FakeCluster, after: int = 0) -> list[tuple[int, int, str]]:
    """(broker, fetch offset of t-0, rack_id) of each Fetch that listed t-0."""
    out = []
    for r in cl.requests_of(ApiKey.FETCH, after):
        for t in r.body["topics"]:
            for p in t["partitions"]:
                out.append((r.broker, p["fetch_offset"], r.body["rack_id"]))
    return out


def closes_session(r: Request) -> bool:
    """A Fetch that only closes a fetch session (close() sends one to each node that has one):
    it fetches nothing, so it is no choice of replica."""
    return r.body["session_id"] != 0 and r.body["session_epoch"] == -1


def brokers_of(cl: FakeCluster, after: int = 0) -> list[int]:
    return [r.broker for r in cl.requests_of(ApiKey.FETCH, after) if not closes_session(r)]


@pytest.mark.parametrize("rack, replica", [("b", 1), ("c", 2), ("z", 0), ("", 0)])
def test_records_come_from_the_in_rack_follower(racked: FakeCluster, rack: str, replica: int
                                                ) -> None:
    expected = put(racked, 5, 0)
    got: list[Row] = []
    with KafkaConsumer(bootstrap_servers=racked.bootstrap, client_rack=rack, **FAST) as c:
        c.assign([TP])
        poll_until(c, 5, got)
        expected += put(racked, 3, 5)
        poll_until(c, 8, got)
        assert c.poll(150) == {}
    assert got == expected
    log = fetch_log(racked)
    assert {r for _, _, r in log} == {rack}                      # client.rack as rack_id
    # the leader names the replica once (with no records); every later fetch goes there
    assert log[0][0] == 0
    assert {b for b, _, _ in log[1:]} == {replica}
    if replica:
        assert [b for b, _, _ in log].count(0) == 1


def test_the_replica_choice_expires_after_metadata_max_age(racked: FakeCluster) -> None:
    expected = put(racked, 3, 0)
    got: list[Row] = []
    with KafkaConsumer(bootstrap_servers=racked.bootstrap, client_rack="b",
                       metadata_max_age_ms=400, **FAST) as c:
        c.assign([TP])
        poll_until(c, 3, got)
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            assert c.poll(50) == {}
    assert got == expected
    to_leader = [r.at for r in racked.requests_of(ApiKey.FETCH) if r.broker == 0 and not closes_session(r)]
    # back to the leader when the choice is 400 ms old, never sooner; then the replica again
    assert len(to_leader) >= 3, to_leader
    assert all(b - a >= 0.4 for a, b in itertools.pairwise(to_leader)), to_leader
    order = brokers_of(racked)
    assert all(nxt == 1 for b, nxt in itertools.pairwise(order) if b == 0), order


def test_out_of_range_on_the_replica_goes_to_the_leader_without_a_reset(
        racked: FakeCluster) -> None:
    expected = put(racked, 10, 0)
    got: list[Row] = []
    with KafkaConsumer(bootstrap_servers=racked.bootstrap, client_rack="b", **FAST) as c:
        c.assign([TP])
        poll_until(c, 10, got)
        mark = racked.mark()
        racked.set_follower(TP, 1, end=4)             # the replica lost its tail
        expected += put(racked, 3, 10)
        poll_until(c, 13, got)
        assert c.poll(150) == {}
    # auto.offset.reset=earliest: a reset on the replica's answer would deliver 0.. again
    assert got == expected
    assert racked.requests_of(ApiKey.LIST_OFFSETS, mark) == []
    log = fetch_log(racked)           # (the replica's OOR may answer a fetch sent earlier)
    first_leader = next(i for i, (b, o, _) in enumerate(log) if b == 0 and o == 10)
    assert (1, 10, "b") in log[:first_leader]
    assert {b for b, _, _ in log[first_leader:]} == {0}   # the leader keeps it: 1 lacks 10+


def test_a_replica_that_goes_down_sends_fetches_back_to_the_leader(racked: FakeCluster
                                                                   ) -> None:
    expected = put(racked, 4, 0)
    got: list[Row] = []
    with KafkaConsumer(bootstrap_servers=racked.bootstrap, client_rack="b", **FAST) as c:
        c.assign([TP])
        poll_until(c, 4, got)
        assert brokers_of(racked)[-1] == 1
        racked.stop_broker(1)
        mark = racked.mark()
        expected += put(racked, 3, 4)
        poll_until(c, 7, got)
        assert c.poll(150) == {}
    assert got == expected
    after = brokers_of(racked, mark)
    # a fetch may have reached the replica as it went down; every later one goes to the leader
    assert after[-1] == 0 and after.count(1) <= 1, after


def test_a_leader_change_forgets_the_replica(racked: FakeCluster) -> None:
    expected = put(racked, 4, 0)
    got: list[Row] = []
    with KafkaConsumer(bootstrap_servers=racked.bootstrap, client_rack="c", **FAST) as c:
        c.assign([TP])
        poll_until(c, 4, got)
        assert brokers_of(racked)[-1] == 2
        racked.move_leader(TP, 1)                     # epoch 1; 2 still follows
        mark = racked.mark()
        expected += put(racked, 3, 4)
        poll_until(c, 7, got)
        assert c.poll(150) == {}
    assert got == expected
    # the replica fences the old epoch; the new leader is asked, names 2 again
    after = [(r.broker, r.body["topics"][0]["partitions"][0]["current_leader_epoch"])
             for r in racked.requests_of(ApiKey.FETCH, mark) if r.body["topics"]]
    assert (1, 1) in after and after[-1] == (2, 1), after


# ------------------------------------------------------------------ librdkafka's mock cluster


def mock_fetches(mc: MockCluster) -> list[int]:
    return [r.broker_id for r in mc.get_requests() if r.api_key == ApiKey.FETCH]


def test_mock_follower_serves_and_the_leader_after_it_goes_down(mock_cluster: MockCluster
                                                                ) -> None:
    mc = mock_cluster
    mc.create_topic("ff", 1, 3)
    mc.set_partition_leader("ff", 0, 1)
    mc.set_partition_follower("ff", 0, 2)
    mc.set_rack(2, "r2")
    tp = TopicPartition("ff", 0)
    first = [TestRecord(b"k%d" % i, b"v%d" % i, partition=0) for i in range(20)]
    assert produce(mc.bootstrap, "ff", first) == [(0, i) for i in range(20)]
    got: list[tuple[int, bytes | None, bytes | None]] = []

    def until(n: int) -> None:
        deadline = time.monotonic() + 10
        while len(got) < n:
            assert time.monotonic() < deadline, got
            for recs in c.poll(100).values():
                got.extend((r.offset, r.key, r.value) for r in recs)

    mc.start_request_tracking()
    with KafkaConsumer(bootstrap_servers=mc.bootstrap, client_rack="r2", **FAST) as c:
        c.assign([tp])
        until(20)
        # the mock's leader answers "read from 2" with no records: all 20 came from 2
        on = mock_fetches(mc)
        assert 2 in on and on[0] == 1, on
        assert on[on.index(2):].count(1) == 0, on
        mc.set_partition_follower("ff", 0, -1)        # as a leader would once 2 is gone
        mc.broker_down(2)
        mc.clear_requests()
        second = [TestRecord(b"k%d" % i, b"v%d" % i, partition=0) for i in range(20, 30)]
        assert produce(mc.bootstrap, "ff", second) == [(0, i) for i in range(20, 30)]
        until(30)
        assert c.poll(200) == {}
        assert 1 in mock_fetches(mc)
    assert got == [(i, b"k%d" % i, b"v%d" % i) for i in range(30)]
