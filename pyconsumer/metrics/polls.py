"""What a poll listener is told: one :class:`PollEvent` per ``poll()`` / ``poll_arrow()``.

A listener is any object with ``on_poll(event)`` (:class:`PollListener`), added with
``KafkaConsumer.add_poll_listener``. The consumer builds an event only while it has a
listener: without one a poll does no listener work at all, and with one the work is per
drained partition, never per record. ``consumed`` counts what ``records-consumed-total``
counts (records handed out, before interceptors), so the two always agree.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pyconsumer.structs import TopicPartition


@dataclass(frozen=True)
class PollEvent:
    """One poll() or poll_arrow() call, seen when it returns or raises."""

    #: how long the call took, in seconds (the consumer's monotonic clock)
    duration_s: float
    #: records handed out by partition (partitions with none are left out)
    consumed: Mapping[TopicPartition, int]
    #: what the call raised, or None
    error: BaseException | None = None


class PollListener(Protocol):
    """Told of every poll, on the polling thread, after the call ends. An exception it raises
    is logged and dropped: a listener never breaks a poll."""

    def on_poll(self, event: PollEvent) -> None: ...


__all__ = ["PollEvent", "PollListener"]
