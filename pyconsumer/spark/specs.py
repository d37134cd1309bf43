"""What a read of the Spark source reads and where it starts and ends, as parsed option values.

The strategies (``subscribe``, ``subscribePattern``, ``assign``: Spark's ``ConsumerStrategy``)
and the offset specs (``startingOffsets``, ``endingOffsets`` and their timestamp forms: Spark's
``KafkaOffsetRangeLimit``). Frozen values, compared by value and pickled to Spark's
Python workers.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyconsumer.structs import TopicPartition

__all__ = [
    "EARLIEST", "LATEST",
    "OffsetSpec", "EarliestSpec", "LatestSpec", "SpecificOffsets", "SpecificTimestamps",
    "GlobalTimestamp",
    "Subscribe", "SubscribePattern", "Assign", "Strategy",
]

#: in offset JSON (and in :class:`SpecificOffsets`), the earliest offset of the partition
EARLIEST = -2
#: in offset JSON (and in :class:`SpecificOffsets`), the latest offset of the partition
LATEST = -1


class OffsetSpec:
    """Where a query starts or ends (Spark's ``KafkaOffsetRangeLimit``)."""

    __slots__ = ()


@dataclass(frozen=True)
class EarliestSpec(OffsetSpec):
    """The earliest offset of every partition."""


@dataclass(frozen=True)
class LatestSpec(OffsetSpec):
    """The latest offset (the end) of every partition."""


@dataclass(frozen=True)
class SpecificOffsets(OffsetSpec):
    """An offset per partition; :data:`EARLIEST` (-2) and :data:`LATEST` (-1) are allowed."""

    offsets: dict[TopicPartition, int]


@dataclass(frozen=True)
class SpecificTimestamps(OffsetSpec):
    """A timestamp (ms since the epoch) per partition, resolved with ``offsets_for_times``."""

    timestamps: dict[TopicPartition, int]


@dataclass(frozen=True)
class GlobalTimestamp(OffsetSpec):
    """One timestamp (ms since the epoch) for every partition."""

    timestamp: int


@dataclass(frozen=True)
class Subscribe:
    """Option ``subscribe``: these topics."""

    topics: tuple[str, ...]


@dataclass(frozen=True)
class SubscribePattern:
    """Option ``subscribePattern``: the topics whose whole name matches this (Java) regex."""

    pattern: str


@dataclass(frozen=True)
class Assign:
    """Option ``assign``: exactly these partitions."""

    partitions: tuple[TopicPartition, ...]


Strategy = Subscribe | SubscribePattern | Assign
