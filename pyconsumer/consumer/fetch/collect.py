"""What the drain asks of the poll's result shape (Java's ``FetchCollector``).

One :class:`Collector` per result shape (ConsumerRecords for ``poll()``, Arrow batches for
``poll_arrow()``, typed values on either; :mod:`pyconsumer.consumer.poll` has them) is made by
the consumer facade and handed down to the drain as one object. The drain asks it for its
:class:`Strategy` (how buffered partitions are taken: one at a time, side by side on the
decode threads, or several in one call), then uses its takes and counts; the poll loop asks
it to build the result once positions have moved.
"""
from __future__ import annotations

import enum
from typing import Protocol, TypeVar

from pyconsumer.records import CompletedFetch
from pyconsumer.structs import TopicPartition

T = TypeVar("T")
R_co = TypeVar("R_co", covariant=True)


class Strategy(enum.Enum):
    """How the drain takes the buffered partitions whose records fit in its budget."""

    #: one partition at a time (its take may still use the decode threads inside one cursor)
    ONE_BY_ONE = "one by one"
    #: on the decode threads at once, each with its own take (``Collector.threads`` of them)
    SIDE_BY_SIDE = "side by side"
    #: with one ``Collector.take_many`` call giving one chunk for them all
    MANY = "many"


class Collector(Protocol[T, R_co]):
    """A poll's result shape: chunks of type ``T`` taken from cursors, built into ``R_co``.

    Every strategy gives exactly the records, order and positions of taking the partitions
    one after another with :meth:`take`."""

    @property
    def strategy(self) -> Strategy:
        """How the drain takes several buffered partitions."""
        ...

    @property
    def threads(self) -> int:
        """How many cursors :meth:`take` may run on at once (SIDE_BY_SIDE's group size)."""
        ...

    def take(self, cursor: CompletedFetch, max_records: int) -> T:
        """Up to ``max_records`` records of one partition's cursor, as one chunk."""
        ...

    def count(self, chunk: T) -> int:
        """The records a chunk took from its cursor (what the budget and positions count)."""
        ...

    def take_many(self, cursors: list[CompletedFetch], budgets: list[int]
                  ) -> tuple[T, list[int]]:
        """(MANY only) the cursors taken in turn, each up to its budget, into one chunk, and
        the records each gave: one entry per cursor taken, stopping after the first one not
        drained (records.take_arrow_many's contract)."""
        ...

    def build(self, chunks: list[tuple[TopicPartition, T]]) -> R_co:
        """The poll's result from what the drain took, in drain order."""
        ...


__all__ = ["Collector", "Strategy"]
