"""Planning of the Spark source: how offset ranges become tasks (split_ranges) and how much a
trigger admits (rate_limit, limit_by_bytes).

Plain pytest and hypothesis: no Spark, no broker. The minPartitions / maxRecordsPerPartition
vectors are Spark 4's (KafkaOffsetRangeCalculator: getDividedPartition's piece layout,
getPartCount's half-up rounding, SPARK-36576's two passes that keep small ranges whole).
"""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyconsumer.spark.planning import (
    spread,
    OffsetRange,
    limit_by_bytes,
    rate_limit,
    split_ranges,
    total_offsets,
)
from pyconsumer.structs import TopicPartition

TP = TopicPartition
R = OffsetRange


def sizes(tasks: list[OffsetRange]) -> list[int]:
    return [t.size for t in tasks]


def per_partition(tasks: list[OffsetRange]) -> dict[tuple[str, int], list[tuple[int, int]]]:
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for t in tasks:
        out.setdefault((t.topic, t.partition), []).append((t.start, t.end))
    return out


# ------------------------------------------------------------------------------ split_ranges


def test_default_is_one_task_per_range_sorted() -> None:
    ranges = [R("b", 0, 5, 9), R("a", 1, 0, 3), R("a", 0, 10, 20)]
    assert split_ranges(ranges) == [R("a", 0, 10, 20), R("a", 1, 0, 3), R("b", 0, 5, 9)]


def test_empty_and_inverted_ranges_are_dropped() -> None:
    ranges = [R("t", 0, 5, 5), R("t", 1, 9, 3), R("t", 2, 0, 1)]
    assert split_ranges(ranges) == [R("t", 2, 0, 1)]
    assert split_ranges(ranges, min_partitions=10, max_records_per_partition=1) == \
        [R("t", 2, 0, 1)]
    assert split_ranges([]) == []
    assert split_ranges([R("t", 0, 3, 3)], min_partitions=5) == []


def test_min_partitions_not_above_the_range_count_changes_nothing() -> None:
    ranges = [R("t", p, 0, 100 * (p + 1)) for p in range(3)]
    assert split_ranges(ranges, min_partitions=3) == ranges
    assert split_ranges(ranges, min_partitions=1) == ranges


def test_max_records_per_partition_cuts_like_spark() -> None:
    # ceil(size / max) pieces; each takes remaining // pieces_left (the last ones larger)
    assert split_ranges([R("t", 0, 0, 9000), R("t", 1, 0, 900), R("t", 2, 0, 10)],
                        max_records_per_partition=3000) == [
        R("t", 0, 0, 3000), R("t", 0, 3000, 6000), R("t", 0, 6000, 9000),
        R("t", 1, 0, 900), R("t", 2, 0, 10)]
    assert split_ranges([R("t", 0, 100, 110)], max_records_per_partition=3) == [
        R("t", 0, 100, 102), R("t", 0, 102, 104), R("t", 0, 104, 107), R("t", 0, 107, 110)]
    assert split_ranges([R("t", 0, 0, 10)], max_records_per_partition=10) == [R("t", 0, 0, 10)]
    assert sizes(split_ranges([R("t", 0, 0, 11)], max_records_per_partition=10)) == [5, 6]
    assert sizes(split_ranges([R("t", 0, 0, 5)], max_records_per_partition=1)) == [1] * 5


def test_max_records_per_partition_is_exact_for_huge_ranges() -> None:
    # ceil(size / max) in floats says 1 here (1e17 + 1 rounds to 1e17): one task over the max
    big = 10 ** 17
    tasks = split_ranges([R("t", 0, 0, big + 1)], max_records_per_partition=big)
    assert len(tasks) == 2 and max(sizes(tasks)) <= big


def test_min_partitions_one_range_into_n() -> None:
    # Spark's suite: "1 TopicPartition to N offset ranges"
    assert split_ranges([R("t", 0, 1, 5)], min_partitions=4) == [
        R("t", 0, 1, 2), R("t", 0, 2, 3), R("t", 0, 3, 4), R("t", 0, 4, 5)]
    # never more pieces than offsets
    assert split_ranges([R("t", 0, 0, 3)], min_partitions=10) == [
        R("t", 0, 0, 1), R("t", 0, 1, 2), R("t", 0, 2, 3)]


def test_min_partitions_proportional_to_size() -> None:
    # round(size / total * minPartitions): 500/1500*9 = 3 each
    tasks = split_ranges([R("t", p, 0, 500) for p in range(3)], min_partitions=9)
    assert sizes(tasks) == [166, 167, 167] * 3
    # 300/400*8 = 6 and 100/400*8 = 2
    tasks = split_ranges([R("a", 0, 0, 300), R("b", 0, 0, 100)], min_partitions=8)
    assert {k: len(v) for k, v in per_partition(tasks).items()} == {("a", 0): 6, ("b", 0): 2}


def test_min_partitions_rounds_half_up_like_scala() -> None:
    # 50/100*5 = 2.5: Scala's math.round gives 3 (Python's round would give 2)
    tasks = split_ranges([R("t", 0, 0, 50), R("t", 1, 0, 50)], min_partitions=5)
    assert sizes(tasks) == [16, 17, 17, 16, 17, 17]
    # 5/6*3 = 2.5 -> 3 (split) and 1/6*3 = 0.5 -> 1 (stays whole, where half-even gives 0,
    # raised to 1 anyway); p0 then gets the budget of 3 - 1 = 2
    tasks = split_ranges([R("t", 0, 0, 5), R("t", 1, 0, 1)], min_partitions=3)
    assert tasks == [R("t", 0, 0, 2), R("t", 0, 2, 5), R("t", 1, 0, 1)]


def test_min_partitions_small_ranges_stay_whole_and_leave_the_budget_to_big_ones() -> None:
    # SPARK-36576: p1..p3 round to one task each; p0 gets the 10 - 3 = 7 left (the single
    # pass before it would give p0 round(1000/1030*10) = 10, 13 tasks in all)
    ranges = [R("t", 0, 0, 1000)] + [R("t", p, 0, 10) for p in (1, 2, 3)]
    tasks = split_ranges(ranges, min_partitions=10)
    assert len(tasks) == 10
    assert sizes(tasks) == [142] + [143] * 6 + [10, 10, 10]
    # 800/810*8 rounds to 8, but p1 and p2 take one task each: p0 gets 6, 8 in all
    tasks = split_ranges([R("t", 0, 0, 800), R("t", 1, 0, 5), R("t", 2, 0, 5)],
                         min_partitions=8)
    assert {k: len(v) for k, v in per_partition(tasks).items()} == {
        ("t", 0): 6, ("t", 1): 1, ("t", 2): 1}


def test_min_partitions_is_a_hint_count_may_fall_short() -> None:
    # Spark's suite (SPARK-28489): 29/87*4 rounds to 1 for each, so 3 tasks, not 4
    ranges = [R("t", p, 0, 29) for p in range(3)]
    assert split_ranges(ranges, min_partitions=4) == ranges


def test_max_records_then_min_partitions() -> None:
    # measured on Spark 4.1: 9000/900/10, maxRecordsPerPartition 3000: 5 tasks; then
    # minPartitions 6 keeps 5 (each 3000 piece rounds to one of a budget of 4) ...
    ranges = [R("t", 0, 0, 9000), R("t", 1, 0, 900), R("t", 2, 0, 10)]
    tasks = split_ranges(ranges, max_records_per_partition=3000, min_partitions=6)
    assert sizes(tasks) == [3000, 3000, 3000, 900, 10]
    # ... and minPartitions 7 gives 8 (budget 5: round(3000/9000*5) = 2 per piece)
    tasks = split_ranges(ranges, max_records_per_partition=3000, min_partitions=7)
    assert sizes(tasks) == [1500] * 6 + [900, 10]
    assert max(sizes(tasks)) <= 3000
    # enough pieces after maxRecordsPerPartition: minPartitions has nothing to do
    tasks = split_ranges(ranges, max_records_per_partition=1000, min_partitions=5)
    assert sizes(tasks) == [1000] * 9 + [900, 10]
    # both on equal partitions (tests/spark: 3 x 500, max 400, min 12 -> 12 tasks of 250)
    tasks = split_ranges([R("t", p, 0, 500) for p in range(3)],
                         max_records_per_partition=400, min_partitions=12)
    assert sizes(tasks) == [125] * 12


def _check_cover(ranges: list[OffsetRange], tasks: list[OffsetRange]) -> None:
    """Every offset of every non-empty input range is in exactly one task; tasks are
    contiguous, in order, non-empty, and sorted by topic-partition then offset."""
    assert tasks == sorted(tasks)
    assert all(t.size > 0 for t in tasks)
    want = {(r.topic, r.partition): (r.start, r.end) for r in ranges if r.size > 0}
    got = per_partition(tasks)
    assert set(got) == set(want)
    for key, pieces in got.items():
        start, end = want[key]
        assert pieces[0][0] == start and pieces[-1][1] == end
        for (_, e), (s, _) in zip(pieces, pieces[1:]):
            assert e == s


@st.composite
def range_lists(draw: st.DrawFn) -> list[OffsetRange]:
    n = draw(st.integers(0, 8))
    out = []
    for p in range(n):
        start = draw(st.integers(0, 10 ** 12))
        size = draw(st.one_of(st.integers(-3, 50), st.integers(50, 20_000)))
        out.append(R(draw(st.sampled_from(["a", "b"])), p, start, start + size))
    return out


@settings(max_examples=400, deadline=None)
@given(ranges=range_lists(),
       min_partitions=st.one_of(st.none(), st.integers(1, 64)),
       max_records=st.one_of(st.none(), st.integers(1, 20), st.integers(20, 5000)))
def test_split_covers_every_offset_exactly_once(ranges: list[OffsetRange],
                                                min_partitions: int | None,
                                                max_records: int | None) -> None:
    tasks = split_ranges(ranges, min_partitions=min_partitions,
                         max_records_per_partition=max_records)
    _check_cover(ranges, tasks)
    nonempty = [r for r in ranges if r.size > 0]
    assert len(nonempty) <= len(tasks) <= sum(r.size for r in nonempty)
    if max_records is not None:
        assert all(t.size <= max_records for t in tasks)
        assert len(tasks) >= sum(math.ceil(r.size / max_records) for r in nonempty)
    if min_partitions is None and max_records is None:
        assert tasks == sorted(nonempty)
    if min_partitions is not None and max_records is None:
        if len(nonempty) >= min_partitions:
            assert tasks == sorted(nonempty)
        else:
            # pieces of one range differ by at most one offset, the larger ones last
            for pieces in per_partition(tasks).values():
                lengths = [e - s for s, e in pieces]
                assert max(lengths) - min(lengths) <= 1 and lengths == sorted(lengths)


# --------------------------------------------------------------------------------- rate_limit


def test_rate_limit_within_limit_keeps_the_ends() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 10}
    end = {TP("t", 0): 50, TP("t", 1): 60}
    assert rate_limit(start, end, 100) == end
    assert rate_limit(start, end, 1000) == end


def test_rate_limit_shares_by_backlog() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 1000}
    end = {TP("t", 0): 900, TP("t", 1): 1100}
    assert rate_limit(start, end, 100) == {TP("t", 0): 90, TP("t", 1): 1010}
    # 1000 * 2/3 = 666.67 and 1000 * 1/3 = 333.33: floored
    start = {TP("t", 0): 0, TP("t", 1): 0}
    end = {TP("t", 0): 2000, TP("t", 1): 1000}
    assert rate_limit(start, end, 1000) == {TP("t", 0): 666, TP("t", 1): 333}


def test_rate_limit_small_partitions_get_at_least_one_offset() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 7, TP("t", 2): 3}
    end = {TP("t", 0): 10_000, TP("t", 1): 8, TP("t", 2): 8}
    out = rate_limit(start, end, 100)
    # shares 99.94, 0.0099 and 0.0499: floor the big one, ceil the small ones
    assert out == {TP("t", 0): 99, TP("t", 1): 8, TP("t", 2): 4}
    assert total_offsets(start, out) == 101 <= 100 + 3


def test_rate_limit_never_past_the_end() -> None:
    start = {TP("t", p): 0 for p in range(5)}
    end = {TP("t", p): 1 for p in range(5)}
    assert rate_limit(start, end, 2) == end       # each gets its one offset, 5 > 2
    assert all(rate_limit(start, end, 1)[tp] <= end[tp] for tp in end)


def test_rate_limit_partitions_without_a_start_or_backlog_keep_their_end() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 50, TP("t", 2): 80}
    end = {TP("t", 0): 1000, TP("t", 1): 50, TP("t", 2): 70, TP("new", 0): 500}
    assert rate_limit(start, end, 10) == {TP("t", 0): 10, TP("t", 1): 50, TP("t", 2): 70,
                                          TP("new", 0): 500}


def test_rate_limit_huge_offsets_are_exact() -> None:
    base = (1 << 62)
    start = {TP("t", 0): base, TP("t", 1): base}
    end = {TP("t", 0): base + 3 * 10 ** 15, TP("t", 1): base + 10 ** 15}
    out = rate_limit(start, end, 4 * 10 ** 12)
    assert out == {TP("t", 0): base + 3 * 10 ** 12, TP("t", 1): base + 10 ** 12}


offset_maps = st.dictionaries(
    st.builds(TP, st.sampled_from(["a", "b"]), st.integers(0, 5)),
    st.tuples(st.integers(0, 10 ** 9), st.integers(-5, 10 ** 6)),
    max_size=10)


@settings(max_examples=400, deadline=None)
@given(spans=offset_maps, limit=st.integers(1, 2 * 10 ** 6),
       extra=st.dictionaries(st.builds(TP, st.just("new"), st.integers(0, 3)),
                             st.integers(0, 10 ** 6), max_size=3))
def test_rate_limit_properties(spans: dict[TopicPartition, tuple[int, int]], limit: int,
                               extra: dict[TopicPartition, int]) -> None:
    start = {tp: s for tp, (s, _) in spans.items()}
    end = {tp: s + n for tp, (s, n) in spans.items()} | extra
    out = rate_limit(start, end, limit)
    assert out.keys() == end.keys()
    backlog = {tp: end[tp] - start[tp] for tp in start if end[tp] > start[tp]}
    for tp, e in out.items():
        if tp not in backlog:
            assert e == end[tp]                       # no start, or nothing to read
        else:
            assert start[tp] + 1 <= e <= end[tp]      # progress, never past the end
    admitted = total_offsets(start, out)
    total = sum(backlog.values())
    if total <= limit:
        assert out == end
    else:
        assert limit - len(backlog) <= admitted <= limit + len(backlog)
        # a bigger backlog never gets less
        for a in backlog:
            for b in backlog:
                if backlog[a] >= backlog[b]:
                    assert out[a] - start[a] >= out[b] - start[b]


# ----------------------------------------------------------------------------- limit_by_bytes


def test_limit_by_bytes_within_budget_keeps_the_ends() -> None:
    start = {TP("t", 0): 0}
    end = {TP("t", 0): 100}
    assert limit_by_bytes(start, end, 100 * 50, {TP("t", 0): 50.0}) == end


def test_limit_by_bytes_shares_bytes_by_backlog() -> None:
    # 1000 offsets of 100 B and 100 offsets of 1000 B: the same bytes, half the budget each
    start = {TP("t", 0): 0, TP("t", 1): 0}
    end = {TP("t", 0): 1000, TP("t", 1): 100}
    out = limit_by_bytes(start, end, 20_000, {TP("t", 0): 100.0, TP("t", 1): 1000.0})
    assert out == {TP("t", 0): 100, TP("t", 1): 10}


def test_limit_by_bytes_without_an_estimate_counts_1_kib() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 0}
    end = {TP("t", 0): 100, TP("t", 1): 100}
    out = limit_by_bytes(start, end, 20 * 1024, {TP("t", 1): 1024.0})
    assert out == {TP("t", 0): 10, TP("t", 1): 10}
    # an estimate below one byte counts one byte
    assert limit_by_bytes({TP("t", 0): 0}, {TP("t", 0): 1000}, 100, {TP("t", 0): 0.0}) == \
        {TP("t", 0): 100}


def test_limit_by_bytes_always_admits_one_offset() -> None:
    start = {TP("t", 0): 5, TP("t", 1): 0}
    end = {TP("t", 0): 10, TP("t", 1): 10}
    out = limit_by_bytes(start, end, 1000, {TP("t", 0): 1e6, TP("t", 1): 1e6})
    assert out == {TP("t", 0): 6, TP("t", 1): 1}


def test_limit_by_bytes_partitions_without_a_start_keep_their_end() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 9}
    end = {TP("t", 0): 1000, TP("t", 1): 4, TP("new", 0): 77}
    out = limit_by_bytes(start, end, 10 * 1024, {})
    assert out == {TP("t", 0): 10, TP("t", 1): 4, TP("new", 0): 77}


@settings(max_examples=300, deadline=None)
@given(spans=offset_maps, max_bytes=st.integers(1, 10 ** 9),
       estimates=st.dictionaries(st.builds(TP, st.sampled_from(["a", "b"]), st.integers(0, 5)),
                                 st.floats(0, 1e6, allow_nan=False), max_size=12))
def test_limit_by_bytes_properties(spans: dict[TopicPartition, tuple[int, int]], max_bytes: int,
                                   estimates: dict[TopicPartition, float]) -> None:
    start = {tp: s for tp, (s, _) in spans.items()}
    end = {tp: s + n for tp, (s, n) in spans.items()}
    out = limit_by_bytes(start, end, max_bytes, estimates)
    assert out.keys() == end.keys()
    cost = {tp: max(1.0, estimates.get(tp, 1024.0)) for tp in end}
    backlog = {tp: end[tp] - start[tp] for tp in start if end[tp] > start[tp]}
    for tp, e in out.items():
        if tp not in backlog:
            assert e == end[tp]
        else:
            assert start[tp] + 1 <= e <= end[tp]
    if sum(backlog[tp] * cost[tp] for tp in backlog) <= max_bytes:
        assert out == end
    else:
        admitted = sum((out[tp] - start[tp]) * cost[tp] for tp in backlog)
        # at most the budget, plus one offset for each partition whose share was below one
        assert admitted <= max_bytes * (1 + 1e-9) + sum(cost[tp] for tp in backlog)


# ------------------------------------------------------------------ group_ranges (ours)

def test_small_ranges_of_a_topic_share_tasks_until_min_records() -> None:
    from pyconsumer.spark.planning import group_ranges

    ranges = [OffsetRange("a", p, 0, 40) for p in range(5)] + [OffsetRange("b", 0, 10, 200),
                                                               OffsetRange("b", 1, 0, 30)]
    assert group_ranges(ranges, 100) == [
        tuple(ranges[0:3]), tuple(ranges[3:5]),     # 120 offsets, then the topic's rest
        (ranges[5],), (ranges[6],)]                 # 190 alone reaches 100; then the rest
    assert group_ranges(ranges, 1) == [(r,) for r in ranges]
    assert group_ranges([], 100) == []


def test_pieces_of_one_partition_never_share_a_task() -> None:
    from pyconsumer.spark.planning import group_ranges

    pieces = split_ranges([OffsetRange("t", 0, 0, 30), OffsetRange("t", 1, 0, 4)],
                          max_records_per_partition=10)
    assert [len(task) for task in group_ranges(pieces, 1000)] == [1, 1, 2]   # 0a 0b (0c, 1)


@pytest.mark.parametrize("seed", range(30))
def test_grouping_keeps_every_range_once_in_order(seed: int) -> None:
    import random

    from pyconsumer.spark.planning import group_ranges

    rng = random.Random(seed)
    ranges = split_ranges([OffsetRange(t, p, s, s + rng.randrange(0, 300))
                           for t in ("x", "y") for p in range(rng.randrange(1, 20))
                           for s in [rng.randrange(0, 1000)]],
                          max_records_per_partition=rng.choice([None, 50, 500]))
    least = rng.choice([1, 7, 100, 10_000])
    tasks = group_ranges(ranges, least)
    assert [r for task in tasks for r in task] == ranges
    for i, task in enumerate(tasks):
        assert len({r.topic for r in task}) == 1
        assert len({r.partition for r in task}) == len(task)
        last_of_topic = i + 1 == len(tasks) or tasks[i + 1][0].topic != task[0].topic
        if len(task) > 1:
            # grown only while short of the minimum: all but its last range were
            assert sum(r.size for r in task[:-1]) < least
        if not last_of_topic and tasks[i + 1][0].partition != task[-1].partition:
            assert sum(r.size for r in task) >= least      # closed for being large enough


def test_spread_deals_largest_first_to_the_lightest_and_keeps_order() -> None:
    sizes = {"a": 5, "b": 1, "c": 4, "d": 2, "e": 3}
    groups = spread(list(sizes), 2, sizes.__getitem__)
    assert groups == [["a", "b", "d"], ["c", "e"]]           # loads 8 and 7, each in order
    assert spread(list(sizes), 9, sizes.__getitem__) == [["a"], ["c"], ["e"], ["d"], ["b"]]
    assert spread(list(sizes), 1, sizes.__getitem__) == [list(sizes)]
    assert spread([], 3, len) == []
    equal = spread(list(range(6)), 2, lambda _: 1)
    assert equal == [[0, 2, 4], [1, 3, 5]]


def test_spread_refuses_no_slots() -> None:
    with pytest.raises(ValueError, match="slots must be at least 1, not 0"):
        spread([1], 0, int)
