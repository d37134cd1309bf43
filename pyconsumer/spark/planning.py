"""Planning: offset ranges, how they are split into Spark tasks, and how much a trigger admits.

Pure functions (no Spark, no broker), so every rule is unit-tested on its own:

* :func:`split_ranges`: one task per topic-partition range by default; ``maxRecordsPerPartition``
  cuts ranges into pieces of at most that many offsets, then ``minPartitions`` cuts the big
  ranges further in proportion to their size (Spark 4's KafkaOffsetRangeCalculator, piece for
  piece).
* :func:`group_ranges`: our ``minRecordsPerPartition``: consecutive small ranges of one topic
  read by one task (a Python data source task costs Spark tens of ms before it reads a
  record: a thousand one-range tasks of a thousand records spent most of a read there).
* :func:`rate_limit`: ``maxOffsetsPerTrigger`` shared across partitions by volume, so a
  backlog on one partition does not starve the others (Spark's rateLimit).
* :func:`limit_by_bytes`: our ``maxBytesPerTrigger``, the same proration over an estimate of
  bytes per offset.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pyconsumer.structs import TopicPartition

__all__ = ["OffsetRange", "split_ranges", "group_ranges", "DEFAULT_MIN_RECORDS_PER_PARTITION",
           "rate_limit", "limit_by_bytes", "total_offsets", "spread"]

T = TypeVar("T")


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition: what one Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` in ``parts`` contiguous pieces of near-equal size, as Spark's getDividedPartition
    cuts them: each piece takes ``remaining // pieces_left``, so the last ones are one larger
    (10 in 3: 3, 3, 4). Never more pieces than offsets (no empty piece)."""
    parts = max(1, min(parts, r.size))
    out = []
    start, remaining = r.start, r.size
    for i in range(parts):
        step = remaining // (parts - i)
        remaining -= step
        out.append(OffsetRange(r.topic, r.partition, start, start + step))
        start += step
    return out


def _round_half_up(x: float) -> int:
    """Scala's ``math.round`` on a double (half up: 2.5 -> 3), not Python's half-even
    ``round`` (2.5 -> 2)."""
    return math.floor(x + 0.5)


def _part_count(size: int, total: int, min_partitions: int) -> int:
    """Spark's getPartCount: ``max(1, round(size / total * minPartitions))``."""
    return max(1, _round_half_up(size / total * min_partitions))


def split_ranges(ranges: list[OffsetRange], *, min_partitions: int | None = None,
                 max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """The tasks for ``ranges`` (empty ranges dropped), in topic-partition then offset order,
    cut as Spark's KafkaOffsetRangeCalculator cuts them (Spark 4).

    Without options: one task per range. ``max_records_per_partition``: each range is cut into
    ``ceil(size / max)`` pieces, so no task holds more offsets. ``min_partitions``: when there
    are then fewer tasks than that, the extra tasks go to the big ranges in proportion to
    their size, in two passes (SPARK-36576): the ranges whose share
    ``round(size / total * min_partitions)`` is at most one stay whole (and so does every
    piece of their topic-partition), and the others share ``min_partitions`` minus that many
    tasks, each cut into ``max(1, round(size / split_total * budget))`` pieces. The count
    comes close to ``min_partitions`` (a hint, as in Spark: rounding may miss it either way)."""
    todo = sorted(r for r in ranges if r.size > 0)
    if max_records_per_partition is not None:
        todo = [piece for r in todo
                for piece in _cut(r, -(-r.size // max_records_per_partition))]
    if min_partitions is not None and 0 < len(todo) < min_partitions:
        total = sum(r.size for r in todo)
        unsplit = [r for r in todo if _part_count(r.size, total, min_partitions) == 1]
        unsplit_tps = {r.tp for r in unsplit}
        split_total = total - sum(r.size for r in unsplit)
        budget = max(min_partitions - len(unsplit), 1)
        todo = [piece for r in todo
                for piece in (_cut(r, 1) if r.tp in unsplit_tps
                              else _cut(r, _part_count(r.size, split_total, budget)))]
    return todo


#: minRecordsPerPartition's default: a task reads at least this many offsets when the ranges
#: allow it (about 15 ms of our reading, against the tens of ms Spark spends on a Python task)
DEFAULT_MIN_RECORDS_PER_PARTITION = 100_000


def group_ranges(tasks: list[OffsetRange], min_records: int) -> list[tuple[OffsetRange, ...]]:
    """The ranges of :func:`split_ranges` (in its order) grouped into tasks: consecutive ranges
    of one topic share a task until it holds at least ``min_records`` offsets; a range that
    large alone is a task of its own, and a task never holds two ranges of one partition (the
    pieces of a cut range stay separate tasks). ``min_records`` 1: one task per range, as
    Spark's source plans."""
    out: list[tuple[OffsetRange, ...]] = []
    group: list[OffsetRange] = []
    size = 0
    for r in tasks:
        if group and (size >= min_records or r.topic != group[0].topic
                      or group[-1].partition == r.partition):
            out.append(tuple(group))
            group, size = [], 0
        group.append(r)
        size += r.size
    if group:
        out.append(tuple(group))
    return out


def spread(items: Sequence[T], slots: int, size: Callable[[T], int]) -> list[list[T]]:
    """``items`` dealt over ``min(slots, len(items))`` lists, each item in turn (largest first)
    to the list holding the least so far, so the lists' totals are as even as that makes them;
    each list keeps the items' order. (Spark tasks of a table ingest: one per core, each running
    its tasks one after another, instead of one Spark task each: a Python task costs tens of ms
    of scheduling alone.)"""
    if slots < 1:
        raise ValueError(f"slots must be at least 1, not {slots}")
    n = min(slots, len(items))
    loads = [0] * n
    chosen: list[list[int]] = [[] for _ in range(n)]
    for i in sorted(range(len(items)), key=lambda i: -size(items[i])):
        k = min(range(n), key=lambda k: (loads[k], k))
        loads[k] += size(items[i])
        chosen[k].append(i)
    return [[items[i] for i in sorted(c)] for c in chosen]


def total_offsets(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
                  ) -> int:
    """Offsets between ``start`` and ``end`` over the partitions both know."""
    return sum(max(0, e - start[tp]) for tp, e in end.items() if tp in start)


def _prorate(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
             budget: float, cost: Callable[[TopicPartition], float]) -> dict[TopicPartition, int]:
    """``end`` pulled back so that about ``budget`` (offsets times ``cost`` each) lies past
    ``start``, shared in proportion to each partition's backlog; a share under one offset
    is rounded up so small partitions are not starved. Partitions missing from ``start`` keep
    their end."""
    sizes = {tp: (e - start[tp]) * cost(tp) for tp, e in end.items()
             if tp in start and e - start[tp] > 0}
    total = sum(sizes.values())
    if total <= budget:
        return dict(end)
    out = {}
    for tp, e in end.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = e
            continue
        # Spark's order of operations, limit * (size / total): 50 * (58 / 100) is
        # 28.999999999999996 there, so 28 offsets, where 50 * 58 / 100 would give 29
        share = budget * (size / total) / cost(tp)
        take = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(e, start[tp] + take)
    return out


def rate_limit(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
               limit: int) -> dict[TopicPartition, int]:
    """``maxOffsetsPerTrigger``: at most about ``limit`` offsets past ``start``, each
    partition's share proportional to its backlog (at least one offset; the sum may exceed
    ``limit`` by less than one per partition)."""
    return _prorate(start, end, limit, lambda tp: 1)


def limit_by_bytes(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                   max_bytes: int, bytes_per_offset: Mapping[TopicPartition, float]
                   ) -> dict[TopicPartition, int]:
    """``maxBytesPerTrigger``: an estimated ``max_bytes`` past ``start``, shared by backlog
    bytes as :func:`rate_limit` shares offsets. Partitions with no estimate count 1 KiB per
    offset (at least 1 byte)."""
    return _prorate(start, end, max_bytes,
                    lambda tp: max(1.0, bytes_per_offset.get(tp, 1024.0)))
