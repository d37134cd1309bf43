"""A rebalance listener that records what it is told, for the group tests."""
from __future__ import annotations

import threading
import time

from pyconsumer.structs import TopicPartition


class Recorder:
    """Each call as (kind, partitions) in ``calls``, with its time.monotonic() in ``times`` and
    the name of the thread that made it in ``threads``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []
        self.times: list[float] = []
        self.threads: list[str] = []

    def _note(self, kind: str, partitions: set[TopicPartition]) -> None:
        self.calls.append((kind, partitions))
        self.times.append(time.monotonic())
        self.threads.append(threading.current_thread().name)

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self._note("revoked", partitions)

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._note("assigned", partitions)

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._note("lost", partitions)
