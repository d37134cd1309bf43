"""pyconsumer's KafkaConsumer against the in-process fake cluster (pyconsumer.testing.FakeCluster).

No external broker: every test starts its own FakeCluster on free 127.0.0.1 ports. Data is
appended as record batches built by aiokafka's encoder; records are checked exactly (offset,
key, value, headers, timestamp) in order per partition.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.errors import ErrorCode, KafkaError
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import OffsetAndMetadata, TopicPartition
from pyconsumer.testing import FAST_CONSUMER as FAST, FakeCluster

TP = TopicPartition
Row = tuple[int, Any, Any, list[tuple[str, bytes | None]], int]


def produce(cluster: FakeCluster, topic: str, partition: int, n: int, *, start: int = 0,
            ts: int = 1_700_000_000_000, codec: str = "none") -> list[Row]:
    """One batch of ``n`` records (a null key, a null value and headers mixed in); the rows
    as the consumer must return them."""
    recs = []
    for i in range(start, start + n):
        key = None if i % 5 == 3 else b"k%d" % i
        value = None if i % 7 == 6 else b"%s-%d-v%d" % (topic.encode(), partition, i)
        headers = [("h", b"%d" % i), ("n", None)] if i % 3 == 1 else []
        recs.append((key, value, headers, ts + i))
    offsets = cluster.produce(TP(topic, partition), recs, codec=codec)
    return [(o, k, v, h, t) for o, (k, v, h, t) in zip(offsets, recs)]


def rows(records: list[Any]) -> list[Row]:
    return [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in records]


def consume(consumer: KafkaConsumer, want: dict[TopicPartition, int], timeout: float = 5.0,
            max_records: int | None = None) -> dict[TopicPartition, list[Row]]:
    """Poll until ``want[tp]`` records arrived for each partition (and no more for others)."""
    got: dict[TopicPartition, list[Row]] = {}
    deadline = time.monotonic() + timeout
    while any(len(got.get(tp, [])) < n for tp, n in want.items()):
        counts = {str(k): len(v) for k, v in got.items()}
        assert time.monotonic() < deadline, f"timed out with {counts} of {want}"
        for tp, recs in consumer.poll(50, max_records=max_records).items():
            got.setdefault(tp, []).extend(rows(recs))
    return got


def test_assign_poll_exact_records_from_three_leaders(make_cluster: Callable[..., FakeCluster]
                                                      ) -> None:
    cluster = make_cluster(3)
    cluster.create_topic("t", 3, leaders=[2, 0, 1])
    expected: dict[TopicPartition, list[Row]] = {}
    for p in range(3):
        expected[TP("t", p)] = (produce(cluster, "t", p, 4 + p)
                                + produce(cluster, "t", p, 3, start=4 + p, codec="gzip")
                                + produce(cluster, "t", p, 1, start=7 + p))
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([TP("t", p) for p in range(3)])
        got = consume(c, {tp: len(v) for tp, v in expected.items()}, max_records=3)
        assert got == expected
        assert c.poll(150) == {}
        assert {tp: c.position(tp) for tp in expected} == {TP("t", p): 8 + p for p in range(3)}
    # each partition was fetched from its own leader only
    for r in cluster.requests_of(ApiKey.FETCH):
        for t in r.body["topics"]:
            for p in t["partitions"]:
                assert cluster.partition(TP("t", p["partition"])).leader == r.broker


def test_first_position_lookup_goes_as_soon_as_the_metadata_names_the_leader(
        make_cluster: Callable[..., FakeCluster]) -> None:
    """The first poll() knows no leader yet: the reset waits for the metadata answer, not a
    retry.backoff.ms (here 5 s) after it, and poll() wakes for that answer."""
    cluster = make_cluster(1, topics={"t": 1})
    produce(cluster, "t", 0, 3)
    settings = {**FAST, "retry_backoff_ms": 5000, "retry_backoff_max_ms": 5000}
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **settings) as c:
        c.assign([TP("t", 0)])
        got = c.poll(timeout_ms=3000)
        assert [r.offset for r in got.get(TP("t", 0), [])] == [0, 1, 2]
    lists = cluster.requests_of(ApiKey.LIST_OFFSETS)
    metadata = cluster.requests_of(ApiKey.METADATA)
    assert len(lists) == 1 and lists[0].at - metadata[0].at < 1.0


def test_first_fetch_after_seek_goes_as_soon_as_the_metadata_names_the_leader(
        make_cluster: Callable[..., FakeCluster]) -> None:
    """assign() + seek() leave no position to look up, only a leader to learn: the first
    poll wakes for the metadata answer and fetches (it had waited out its whole timeout and
    returned nothing, so every Spark task's first read on a new consumer lost 500 ms)."""
    cluster = make_cluster(1, topics={"t": 1})
    data = produce(cluster, "t", 0, 4)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([TP("t", 0)])
        c.seek(TP("t", 0), 1)
        got = c.poll(timeout_ms=10_000)
        assert rows(got[TP("t", 0)]) == data[1:]
    assert cluster.requests_of(ApiKey.LIST_OFFSETS) == []


def test_seek_inside_a_batch_back_and_to_the_ends(make_cluster: Callable[..., FakeCluster]
                                                  ) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    tp = TP("t", 0)
    data = produce(cluster, "t", 0, 4) + produce(cluster, "t", 0, 4, start=4) \
        + produce(cluster, "t", 0, 4, start=8)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([tp])
        c.seek(tp, 6)                          # the middle of the batch 4..7
        assert consume(c, {tp: 6}) == {tp: data[6:]}
        c.seek(tp, 1)
        assert consume(c, {tp: 11}) == {tp: data[1:]}
        c.seek_to_end(tp)
        assert c.position(tp) == 12
        more = produce(cluster, "t", 0, 2, start=12)
        assert consume(c, {tp: 2}) == {tp: more}
        cluster.delete_records(TP("t", 0), 4)
        c.seek_to_beginning(tp)
        assert c.position(tp) == 4
        assert consume(c, {tp: 10}) == {tp: data[4:] + more}


def test_end_and_beginning_offsets_and_offsets_for_times(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(2, topics={"t": 2})
    produce(cluster, "t", 0, 5, ts=1000)
    produce(cluster, "t", 1, 3, ts=5000)
    produce(cluster, "t", 1, 4, start=3, ts=5000)
    cluster.delete_records(TP("t", 1), 2)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        tps = [TP("t", 0), TP("t", 1)]
        assert c.end_offsets(tps) == {TP("t", 0): 5, TP("t", 1): 7}
        assert c.beginning_offsets(tps) == {TP("t", 0): 0, TP("t", 1): 2}
        found = c.offsets_for_times({TP("t", 0): 1003, TP("t", 1): 5004})
        assert [(f.offset, f.timestamp) if f else None for f in found.values()] \
            == [(3, 1003), (4, 5004)]
        assert c.offsets_for_times({TP("t", 0): 9999}) == {TP("t", 0): None}


def test_commit_and_committed_in_assign_mode(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(2, topics={"t": 2})
    tp = TP("t", 1)
    data = produce(cluster, "t", 1, 5)
    conf = dict(bootstrap_servers=cluster.bootstrap, group_id="g-assign",
                enable_auto_commit=False, **FAST)
    with KafkaConsumer(**conf) as c:
        c.assign([tp])
        assert c.committed([tp]) == {tp: None}
        assert consume(c, {tp: 5}) == {tp: data}
        c.commit()
        assert cluster.committed("g-assign") == {tp: 5}
        # the position's epoch is the leader epoch stamped on the last batch (0)
        assert c.committed([tp]) == {tp: OffsetAndMetadata(5, "", 0)}
        c.commit({tp: OffsetAndMetadata(2, "half way")})
        assert c.committed([tp]) == {tp: OffsetAndMetadata(2, "half way", None)}
        commits = cluster.requests_of(ApiKey.OFFSET_COMMIT)
        assert [(r.body["generation_id_or_member_epoch"], r.body["member_id"])
                for r in commits] == [(-1, ""), (-1, "")]
        assert {r.broker for r in commits} == {cluster.coordinator_of("g-assign")}
    with KafkaConsumer(**conf) as c:          # a new member starts at the committed offset
        c.assign([tp])
        assert consume(c, {tp: 3}) == {tp: data[2:]}


def test_subscribe_single_member_gets_every_partition_and_commits(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(2, topics={"t": 4})
    expected = {TP("t", p): produce(cluster, "t", p, 2 + p) for p in range(4)}
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g1",
                       client_id="solo", enable_auto_commit=False, **FAST) as c:
        got = consume(c, {tp: len(v) for tp, v in expected.items()})
        assert got == expected
        assert c.assignment() == set(expected)
        g = cluster.group("g1")
        assert g is not None and (g.state, g.generation, g.protocol_name) == ("Stable", 1, "range")
        member = next(iter(g.members))
        assert member.startswith("solo-") and g.leader == member
        joins = cluster.requests_of(ApiKey.JOIN_GROUP)
        assert [r.body["member_id"] for r in joins] == ["", member]   # MEMBER_ID_REQUIRED first
        c.commit()
        assert cluster.committed("g1") == {tp: len(v) for tp, v in expected.items()}
        commit = cluster.requests_of(ApiKey.OFFSET_COMMIT)[-1]
        assert (commit.body["generation_id_or_member_epoch"], commit.body["member_id"]) \
            == (1, member)
    g = cluster.group("g1")
    assert g is not None and (g.state, g.members) == ("Empty", {})
    assert [r.body["members"][0]["member_id"] for r in cluster.requests_of(ApiKey.LEAVE_GROUP)] \
        == [member]


def test_two_members_split_four_partitions_with_range(make_cluster: Callable[..., FakeCluster]
                                                      ) -> None:
    cluster = make_cluster(3, topics={"t": 4})
    conf = dict(bootstrap_servers=cluster.bootstrap, group_id="g2", enable_auto_commit=False,
                **FAST)
    a = KafkaConsumer("t", client_id="a", **conf)
    b = KafkaConsumer("t", client_id="b", **conf)
    try:
        deadline = time.monotonic() + 10
        while not (len(a.assignment()) == 2 and len(b.assignment()) == 2):
            assert time.monotonic() < deadline, (a.assignment(), b.assignment())
            for c in (a, b):
                assert c.poll(20) == {}
        # range over member ids "a-..." < "b-...": a gets 0-1, b gets 2-3
        assert a.assignment() == {TP("t", 0), TP("t", 1)}
        assert b.assignment() == {TP("t", 2), TP("t", 3)}
        g = cluster.group("g2")
        assert g is not None and g.state == "Stable" and len(g.members) == 2
        expected = {TP("t", p): produce(cluster, "t", p, 3 + p) for p in range(4)}
        got: dict[TopicPartition, list[Row]] = {}
        deadline = time.monotonic() + 5
        while sum(map(len, got.values())) < sum(map(len, expected.values())):
            assert time.monotonic() < deadline, got
            for c in (a, b):
                for tp, recs in c.poll(20).items():
                    assert tp in c.assignment()
                    got.setdefault(tp, []).extend(rows(recs))
        assert got == expected
        a.commit()
        b.commit()
        assert cluster.committed("g2") == {tp: len(v) for tp, v in expected.items()}
    finally:
        a.close()
        b.close()


def test_fetch_error_injected_then_records_still_exact(make_cluster: Callable[..., FakeCluster]
                                                       ) -> None:
    cluster = make_cluster(2, topics={"t": 2})
    expected = {TP("t", p): produce(cluster, "t", p, 4) for p in range(2)}
    cluster.inject(ApiKey.FETCH, ErrorCode.NOT_LEADER_OR_FOLLOWER, count=2)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign(list(expected))
        mark = cluster.mark()
        assert consume(c, {tp: 4 for tp in expected}) == expected

        def refreshed() -> bool:
            apis = [r.api for r in cluster.requests[mark:]]
            return ApiKey.METADATA in apis[apis.index(ApiKey.FETCH):]

        # NOT_LEADER_OR_FOLLOWER made the consumer look the leaders up again (after the
        # metadata refresh backoff, which may outlast the consumption of 8 records)
        deadline = time.monotonic() + 3
        while not refreshed() and time.monotonic() < deadline:
            assert c.poll(timeout_ms=50) == {}
        assert refreshed()


def test_leader_moves_with_a_new_epoch(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(2, topics={"t": 1})
    tp = TP("t", 0)
    first = produce(cluster, "t", 0, 3)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, metadata_max_age_ms=60_000,
                       **FAST) as c:
        c.assign([tp])
        assert consume(c, {tp: 3}) == {tp: first}
        assert cluster.move_leader(TP("t", 0), 1) == 1
        mark = cluster.mark()
        second = produce(cluster, "t", 0, 3, start=3)
        assert consume(c, {tp: 3}) == {tp: second}
        assert rows(c.poll(0).get(tp, [])) == []
    fetches = cluster.requests_of(ApiKey.FETCH, after=mark)
    on_new = [r for r in fetches if r.broker == 1]
    assert on_new and all(r.body["topics"][0]["partitions"][0]["current_leader_epoch"] == 1
                          for r in on_new)
    # the batch appended after the move carries the new leader epoch
    assert cluster.partition(TP("t", 0)).epochs == [(0, 0), (1, 3)]


def test_coordinator_moves_between_commits(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(3, topics={"t": 1})
    tp = TP("t", 0)
    cluster.move_coordinator("g-move", 0)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g-move",
                       enable_auto_commit=False, **FAST) as c:
        c.assign([tp])
        c.commit({tp: 1})
        cluster.move_coordinator("g-move", 2)
        mark = cluster.mark()
        c.commit({tp: 2})
        assert cluster.committed("g-move") == {tp: 2}
    commits = cluster.requests_of(ApiKey.OFFSET_COMMIT, after=mark)
    assert [r.broker for r in commits] == [0, 2]          # NOT_COORDINATOR, then the new one
    finds = cluster.requests_of(ApiKey.FIND_COORDINATOR, after=mark)
    assert len(finds) == 1


def test_leader_broker_restarts(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(2, topics={"t": 1})
    tp = TP("t", 0)
    first = produce(cluster, "t", 0, 2)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([tp])
        assert consume(c, {tp: 2}) == {tp: first}
        port = cluster.brokers[0].port
        cluster.stop_broker(0)
        assert c.poll(200) == {}
        second = produce(cluster, "t", 0, 2, start=2)
        cluster.start_broker(0)
        assert cluster.brokers[0].port == port
        assert consume(c, {tp: 2}) == {tp: second}


def unclean_election(cluster: FakeCluster) -> list[Row]:
    """t-0 had offsets 0-9 in leader epoch 0; broker 1 takes over with epoch 1 and a log cut
    at 5, then gets 3 new records (offsets 5-7); they are returned."""
    cluster.truncate(TP("t", 0), 5)
    cluster.move_leader(TP("t", 0), 1)
    return produce(cluster, "t", 0, 3, start=50)


def test_truncation_after_a_leader_change_resumes_where_the_logs_diverge(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(2, topics={"t": 1})
    tp = TP("t", 0)
    produce(cluster, "t", 0, 5)
    produce(cluster, "t", 0, 5, start=5)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap,
                       **{**FAST, "auto_offset_reset": "latest"}) as c:
        c.assign([tp])
        c.seek(tp, 0)
        assert len(consume(c, {tp: 10})[tp]) == 10
        new = unclean_election(cluster)
        assert consume(c, {tp: 3}, timeout=1.5) == {tp: new}
    assert cluster.requests_of(ApiKey.OFFSET_FOR_LEADER_EPOCH)


def test_committed_offset_past_a_truncation_is_validated(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(2, topics={"t": 1})
    tp = TP("t", 0)
    produce(cluster, "t", 0, 5)
    produce(cluster, "t", 0, 5, start=5)
    conf = dict(bootstrap_servers=cluster.bootstrap, group_id="g-trunc", enable_auto_commit=False,
                **{**FAST, "auto_offset_reset": "latest"})
    with KafkaConsumer(**conf) as c:
        c.assign([tp])
        c.seek(tp, 0)
        assert len(consume(c, {tp: 10})[tp]) == 10
        c.commit()
        assert c.committed([tp]) == {tp: OffsetAndMetadata(10, "", 0)}
    new = unclean_election(cluster)
    with KafkaConsumer(**conf) as c:
        c.assign([tp])
        assert consume(c, {tp: 3}, timeout=1.5) == {tp: new}
    assert cluster.requests_of(ApiKey.OFFSET_FOR_LEADER_EPOCH)


def test_a_sync_answered_invalid_request_is_raised_then_the_member_rejoins(
        make_cluster: Callable[..., FakeCluster]) -> None:
    # as Java: an unexpected SyncGroup error is raised from poll(), and the member, still
    # needing to rejoin, joins again at the next poll() and gets its partitions (librdkafka's
    # mock answers a follower's late SyncGroup this way: tests/backends.py names it)
    cluster = make_cluster(1, topics={"t": 2})
    expected = {TP("t", p): produce(cluster, "t", p, 3) for p in range(2)}
    cluster.inject(ApiKey.SYNC_GROUP, ErrorCode.INVALID_REQUEST, count=1)
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g-sync",
                       enable_auto_commit=False, **FAST) as c:
        deadline = time.monotonic() + 5.0
        with pytest.raises(KafkaError, match="INVALID_REQUEST"):
            while time.monotonic() < deadline:
                assert c.poll(50) == {}
        assert consume(c, {tp: len(v) for tp, v in expected.items()}) == expected
        assert c.assignment() == set(expected)
    syncs = cluster.requests_of(ApiKey.SYNC_GROUP)
    assert len(syncs) == 2 and len(cluster.requests_of(ApiKey.JOIN_GROUP)) >= 3
