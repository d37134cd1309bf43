"""Planning: offset ranges, how they are split into Spark tasks, and how much a trigger admits.

Pure functions (no Spark, no broker), so every rule is unit-tested on its own:

* :func:`split_ranges`: one task per topic-partition range by default; ``maxRecordsPerPartition``
  cuts ranges into pieces of at most that many offsets, then ``minPartitions`` cuts the big
  ranges further in proportion to their size (Spark's KafkaOffsetRangeCalculator).
* :func:`rate_limit`: ``maxOffsetsPerTrigger`` shared across partitions by volume, so a
  backlog on one partition does not starve the others (Spark's rateLimit).
* :func:`limit_by_bytes`: our ``maxBytesPerTrigger``, the same proration over an estimate of
  bytes per offset.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from pyconsumer.structs import TopicPartition

__all__ = ["OffsetRange", "split_ranges", "rate_limit", "limit_by_bytes", "total_offsets"]


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
    """``r`` in ``parts`` contiguous pieces of near-equal size (the first ones one larger)."""
    parts = max(1, min(parts, r.size))
    step, extra = divmod(r.size, parts)
    out = []
    start = r.start
    for i in range(parts):
        end = start + step + (1 if i < extra else 0)
        out.append(OffsetRange(r.topic, r.partition, start, end))
        start = end
    return out


def split_ranges(ranges: list[OffsetRange], *, min_partitions: int | None = None,
                 max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """The tasks for ``ranges`` (empty ranges dropped), in topic-partition then offset order.

    Without options: one task per range. ``max_records_per_partition``: no task holds more
    offsets. ``min_partitions``: when there are fewer tasks than that, each range is cut into
    ``max(1, round(size / total * min_partitions))`` pieces, so the count comes close to
    ``min_partitions`` and the big ranges take most of the cuts."""
    todo = sorted(r for r in ranges if r.size > 0)
    if max_records_per_partition is not None:
        todo = [piece for r in todo
                for piece in _cut(r, math.ceil(r.size / max_records_per_partition))]
    if min_partitions is not None and 0 < len(todo) < min_partitions:
        total = sum(r.size for r in todo)
        todo = [piece for r in todo
                for piece in _cut(r, max(1, round(r.size / total * min_partitions)))]
    return todo


def total_offsets(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
                  ) -> int:
    """Offsets between ``start`` and ``end`` over the partitions both know."""
    return sum(max(0, e - start[tp]) for tp, e in end.items() if tp in start)


def rate_limit(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
               limit: int) -> dict[TopicPartition, int]:
    """``end`` pulled back so that at most about ``limit`` offsets lie past ``start``, each
    partition getting a share proportional to its backlog (at least one offset, so small
    partitions are not starved; the sum may exceed ``limit`` by less than one per partition).
    Partitions missing from ``start`` keep their end."""
    sizes = {tp: e - start[tp] for tp, e in end.items() if tp in start and e - start[tp] > 0}
    total = sum(sizes.values())
    if total <= limit:
        return dict(end)
    out = {}
    for tp, e in end.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = e
            continue
        share = limit * size / total
        take = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(e, start[tp] + take)
    return out


def limit_by_bytes(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                   max_bytes: int, bytes_per_offset: Mapping[TopicPartition, float]
                   ) -> dict[TopicPartition, int]:
    """``end`` pulled back so that an estimated ``max_bytes`` lie past ``start``: the byte
    budget is shared by backlog bytes as :func:`rate_limit` shares offsets. Partitions with no
    estimate count 1 KiB per offset."""
    cost = {tp: max(1.0, bytes_per_offset.get(tp, 1024.0)) for tp in end}
    sizes = {tp: (e - start[tp]) * cost[tp] for tp, e in end.items()
             if tp in start and e - start[tp] > 0}
    total = sum(sizes.values())
    if total <= max_bytes:
        return dict(end)
    out = {}
    for tp, e in end.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = e
            continue
        offsets = max_bytes * size / total / cost[tp]
        take = math.ceil(offsets) if offsets < 1 else math.floor(offsets)
        out[tp] = min(e, start[tp] + take)
    return out
