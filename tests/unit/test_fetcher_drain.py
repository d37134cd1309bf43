"""Fetcher.drain over the fake cluster, step by step (tests/unit/fetch_rig.py's rig)."""
from __future__ import annotations

import logging
from typing import Any

import pytest

from pyconsumer.config import OffsetResetStrategy
from pyconsumer.consumer.subscription import FetchState
from pyconsumer.errors import (
    ErrorCode,
    OffsetOutOfRangeError,
    TopicAuthorizationFailedError,
)
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import FakeCluster, Request
from tests.unit.fetch_rig import (  # noqa: F401  (the fixtures cluster and rig)
    T0,
    T1,
    Drained,
    Rig,
    Takes,
    cluster_fixture,
    recs,
    rig_fixture,
)


def test_max_records_across_partitions_in_order(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    assert rig.drain(3) == [(T0, recs(0, 0, 1, 2))]
    assert rig.offsets() == {T0: 3, T1: 0}
    assert rig.drain(3) == [(T0, recs(0, 3, 4)), (T1, recs(1, 0))]
    # a partition whose data ran out goes to the back of the fetch order
    assert rig.subs.assigned_partitions() == [T1, T0]
    assert rig.drain(10) == [(T1, recs(1, 1, 2, 3))]
    assert rig.drain(10) == []
    assert rig.offsets() == {T1: 4, T0: 5}


def test_a_fetch_from_inside_a_batch_starts_at_the_position(rig: Rig) -> None:
    rig.assign({T0: 1, T1: 3})
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 1, 2, 3, 4)), (T1, recs(1, 3))]
    assert rig.offsets() == {T0: 5, T1: 4}


def test_buffered_data_is_not_fetched_again_without_prefetch(rig: Rig) -> None:
    rig.fetcher.prefetch = False              # Java's rule
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    mark = rig.cluster.mark()
    assert rig.fetcher.send_fetches() == 0
    rig.client.poll(timeout_ms=100)
    assert rig.cluster.requests_of(ApiKey.FETCH, after=mark) == []


def produce_more(rig: Rig, tp: TopicPartition, start: int, n: int) -> None:
    rig.cluster.produce(tp, [(None, b"%d-%d" % (tp.partition, i)) for i in range(start, start + n)])


def test_buffered_data_is_fetched_again_from_its_end_once(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    produce_more(rig, T0, 5, 3)
    produce_more(rig, T1, 4, 1)
    mark = rig.cluster.mark()
    rig.fetch()                               # from where the buffered batches end
    [req] = rig.cluster.requests_of(ApiKey.FETCH, after=mark)
    asked = {p["partition"]: p["fetch_offset"] for t in req.body["topics"] for p in t["partitions"]}
    assert asked == {0: 5, 1: 4}
    assert rig.fetcher.send_fetches() == 0    # two responses per partition at the most
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4)), (T1, recs(1, 0, 1, 2, 3)),
                              (T0, recs(0, 5, 6, 7)), (T1, recs(1, 4))]
    assert rig.offsets() == {T0: 8, T1: 5}


def test_a_seek_makes_prefetched_data_stale(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    produce_more(rig, T0, 5, 3)
    rig.fetch()                               # T0 from 5 and T1 from 4, buffered
    assert rig.drain(2) == [(T0, recs(0, 0, 1))]
    rig.subs.seek(T0, 1)                      # back inside the first response
    assert rig.drain(100) == [(T1, recs(1, 0, 1, 2, 3))]       # T0's data both stale
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 1, 2, 3, 4, 5, 6, 7))]
    assert rig.offsets() == {T0: 8, T1: 4}


def test_data_of_a_partition_assigned_away_is_neither_prefetched_nor_returned(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    rig.subs.assign_from_user([T1])            # T0 goes, its data still buffered
    produce_more(rig, T1, 4, 1)
    mark = rig.cluster.mark()
    rig.fetch()
    [req] = rig.cluster.requests_of(ApiKey.FETCH, after=mark)
    assert [(p["partition"], p["fetch_offset"])
            for t in req.body["topics"] for p in t["partitions"]] == [(1, 4)]
    assert rig.drain(100) == [(T1, recs(1, 0, 1, 2, 3)), (T1, recs(1, 4))]


def test_a_paused_partition_is_not_prefetched_and_its_data_is_kept_back(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    rig.subs.pause(T0)
    produce_more(rig, T1, 4, 2)
    mark = rig.cluster.mark()
    rig.fetch()
    [req] = rig.cluster.requests_of(ApiKey.FETCH, after=mark)
    assert [(p["partition"], p["fetch_offset"])
            for t in req.body["topics"] for p in t["partitions"]] == [(1, 4)]
    assert rig.drain(100) == [(T1, recs(1, 0, 1, 2, 3)), (T1, recs(1, 4, 5))]
    rig.subs.resume(T0)
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4))]


def test_a_response_made_stale_by_a_seek_is_dropped(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    rig.subs.seek(T0, 3)
    assert rig.drain(100) == [(T1, recs(1, 0, 1, 2, 3))]
    assert rig.offsets() == {T0: 3, T1: 4}
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 3, 4))]


def test_a_seek_to_the_fetched_offset_keeps_the_response(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    rig.subs.seek(T0, 0)
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4)), (T1, recs(1, 0, 1, 2, 3))]


def test_a_partly_drained_response_is_dropped_after_a_seek(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    assert rig.drain(2) == [(T0, recs(0, 0, 1))]
    rig.subs.seek(T0, 0)
    assert rig.drain(100) == [(T1, recs(1, 0, 1, 2, 3))]
    assert rig.offsets()[T0] == 0
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4))]


def until_drained(rig: Rig, want: int) -> Drained:
    """Drain (fetching when nothing is buffered) until ``want`` records came out."""
    out: Drained = []
    for _ in range(20):
        if sum(len(r) for _, r in out) >= want:
            return out
        if not rig.fetcher.has_available():
            rig.fetch()
        out += rig.drain(100)
    raise AssertionError(f"only {out} after 20 rounds")


@pytest.mark.parametrize("drained_first", [0, 2])
def test_paused_partitions_are_not_returned(rig: Rig, drained_first: int) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    if drained_first:
        assert rig.drain(drained_first) == [(T0, recs(0, 0, 1))]
    rig.subs.pause(T0)
    assert rig.drain(100) == [(T1, recs(1, 0, 1, 2, 3))]
    assert rig.drain(100) == []
    assert rig.offsets() == {T0: drained_first, T1: 4}
    rig.subs.resume(T0)
    # after resume the rest comes exactly once, buffered or fetched again
    assert until_drained(rig, 5 - drained_first) == [(T0, recs(0, *range(drained_first, 5)))]


def test_an_unassigned_partition_is_not_returned(rig: Rig) -> None:
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    rig.subs.assign_from_user([T1])
    assert rig.drain(100) == [(T1, recs(1, 0, 1, 2, 3))]


def test_out_of_range_resets_or_raises(cluster: FakeCluster, rig: Rig) -> None:
    cluster.delete_records(TopicPartition("t", 0), 3)
    rig.subs.default_reset = OffsetResetStrategy("earliest")
    rig.assign({T0: 1})
    rig.fetch()
    assert rig.drain(100) == []
    st = rig.subs.state(T0)
    assert (st.fetch_state, st.reset_strategy) == (FetchState.AWAIT_RESET,
                                                   OffsetResetStrategy("earliest"))
    strict = Rig(cluster, auto_offset_reset="none")
    try:
        strict.assign({T0: 1})
        strict.fetch()
        with pytest.raises(OffsetOutOfRangeError,
                           match=r"Fetch position 1 is out of range for partition t-0 "
                                 r"\(auto.offset.reset=none\)"):
            strict.drain(100)
        assert strict.drain(100) == []            # raised once: the answer is consumed
    finally:
        strict.close()


def test_an_error_after_good_records_surfaces_on_the_next_drain(cluster: FakeCluster,
                                                                rig: Rig) -> None:
    def deny_t1(req: Request) -> dict[str, Any]:
        answer = cluster.default_answer(req)
        for p in answer["responses"][0]["partitions"]:
            if p["partition_index"] == 1:
                p.update(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, records=b"")
        return answer

    cluster.control(ApiKey.FETCH, deny_t1)
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4))]
    with pytest.raises(TopicAuthorizationFailedError, match="fetching t-1 at offset 0"):
        rig.drain(100)
    assert rig.drain(100) == []
    assert rig.offsets() == {T0: 5, T1: 0}


@pytest.mark.parametrize(("code", "level", "refresh"), [
    (ErrorCode.UNKNOWN_SERVER_ERROR, logging.WARNING, False),         # retried
    (ErrorCode.UNKNOWN_LEADER_EPOCH, logging.DEBUG, False),           # retried
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, logging.WARNING, True),
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, logging.DEBUG, True),
])
def test_a_partition_error_fetched_again_logs_at_its_level(
        cluster: FakeCluster, rig: Rig, caplog: pytest.LogCaptureFixture, code: ErrorCode,
        level: int, refresh: bool) -> None:
    def deny_t1(req: Request) -> dict[str, Any]:
        answer = cluster.default_answer(req)
        for p in answer["responses"][0]["partitions"]:
            if p["partition_index"] == 1:
                p.update(error_code=code, records=b"")
        return answer

    cluster.control(ApiKey.FETCH, deny_t1)
    caplog.set_level(logging.DEBUG, logger="pyconsumer.consumer.fetch.buffer")
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    assert not rig.client.metadata.update_requested()
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4))]
    assert rig.drain(100) == []                        # nothing raised: t-1 is fetched again
    assert rig.offsets() == {T0: 5, T1: 0}
    assert rig.client.metadata.update_requested() is refresh
    said = [r.levelno for r in caplog.records
            if r.name == "pyconsumer.consumer.fetch.buffer" and "t-1" in r.getMessage()]
    assert said == [level]


def test_a_partition_with_a_batch_over_the_limit_is_fetched_next() -> None:
    # the request order decides here: sessionless (in a session the broker's order does,
    # tests/unit/test_fetch_session_fake.py)
    with FakeCluster(1, topics={"t": 2}, fetch_sessions=False) as cluster:
        for i in range(12):
            cluster.produce(T0, [(None, b"0-%d" % i)])          # 76-byte batches
        cluster.produce(T1, [(None, b"x" * 500)])               # one 570-byte batch
        rig = Rig(cluster, max_partition_fetch_bytes=200)
        try:
            rig.assign({T0: 0, T1: 0})
            rig.fetch()                  # t-0 first: two batches of it; t-1: nothing fits
            assert rig.drain(100) == [(T0, recs(0, 0, 1))]
            rig.fetch()                  # t-0 read bytes and went last: t-1 is first now
            assert rig.drain(100) == [(T1, [(0, b"x" * 500)]), (T0, recs(0, 2, 3))]
        finally:
            rig.close()
        assert cluster.errors == []


# ------------------------------------------------------------------ where a record set ends

def test_records_end_is_after_the_last_complete_v2_batch() -> None:
    from pyconsumer.records import RecordSetIndex
    from tests import recordsets as rs

    def records_end(records: bytes | memoryview | None, fetch_offset: int) -> int | None:
        return RecordSetIndex(records, fetch_offset).end      # (was fetcher.records_end)

    a = rs.aio_v2(rs.sample_records(3), "none", 10)            # offsets 10-12
    b = rs.aio_v2(rs.sample_records(4), "lz4", 13)             # offsets 13-16
    c = rs.control_batch(17, producer_id=5, commit=True)       # offset 17
    assert records_end(a, 10) == 13
    assert records_end(a + b, 10) == 17
    assert records_end(memoryview(a + b + c), 12) == 18
    assert records_end(a + b[:-1], 10) == 13                    # a partial batch at the end
    assert records_end(a + b[:30], 10) == 13                    # cut inside a header
    assert records_end(a, 13) is None                           # nothing past the position
    assert records_end(b"", 0) is None and records_end(None, 0) is None
    assert records_end(a[:-1], 10) is None                      # no complete batch
    assert records_end(rs.kp_legacy(rs.sample_records(2), 1), 0) is None   # magic 1: unknown
    bad = bytearray(a)
    bad[8:12] = (5).to_bytes(4, "big")                          # a batch length that makes no sense
    assert records_end(bytes(bad), 10) is None


def test_an_empty_answer_does_not_hold_its_partition_back(cluster: FakeCluster,
                                                          rig: Rig) -> None:
    # a broker that caps its response answers the partitions past the cap with no records;
    # such an answer is taken in at once, so the partition is fetched again without waiting
    # for the other partitions' buffered data to drain
    answered: list[int] = []

    def cap(req: Request) -> dict[str, Any]:
        answer = cluster.default_answer(req)
        if not answered:
            for p in answer["responses"][0]["partitions"]:
                if p["partition_index"] == 1:
                    p.update(records=b"")
        answered.append(1)
        return answer

    cluster.control(ApiKey.FETCH, cap)
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    assert rig.subs.state(T1).high_watermark == 4          # its news is in already
    assert rig.drain(2) == [(T0, recs(0, 0, 1))]           # t-0 keeps three buffered
    rig.fetch()                                             # t-1 goes, t-0 is prefetched
    assert rig.drain(100) == [(T0, recs(0, 2, 3, 4)), (T1, recs(1, 0, 1, 2, 3))]
    assert rig.offsets() == {T0: 5, T1: 4}
