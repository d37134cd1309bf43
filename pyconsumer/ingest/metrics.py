"""The numbers an ingest run publishes while it goes on (driver side): records, bytes and
micro-batches (or rounds) written, rejected records, the last batch's rate, and per partition
the next offset reached and the lag behind latest. The run updates them; scrapes
(:mod:`pyconsumer.ingest.prometheus`) read a consistent snapshot from another thread."""
from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyconsumer.ingest.lag import PartitionLag


@dataclass(frozen=True)
class IngestSnapshot:
    records: int = 0
    bytes: int = 0
    batches: int = 0
    rejected: int = 0
    #: records per second of the last batch with records (None before one)
    rate: float | None = None
    #: (topic, partition) -> the next offset the run has written up to
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    lag: tuple[PartitionLag, ...] = ()


class IngestMetrics:
    """The live numbers of one run; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now = IngestSnapshot()

    def add_batch(self, records: int, nbytes: int, *, rejected: int = 0,
                  rate: float | None = None) -> None:
        """A micro-batch (or round) with records was written."""
        with self._lock:
            s = self._now
            self._now = IngestSnapshot(s.records + records, s.bytes + nbytes, s.batches + 1,
                                       s.rejected + rejected, rate, s.offsets, s.lag)

    def set_positions(self, reached: Mapping[tuple[str, int], int],
                      lag: list[PartitionLag] | None) -> None:
        """Where the run now is per partition, and how far behind latest (None: unknown)."""
        with self._lock:
            s = self._now
            offsets = {**s.offsets, **reached}
            self._now = IngestSnapshot(s.records, s.bytes, s.batches, s.rejected, s.rate,
                                       offsets, s.lag if lag is None else tuple(lag))

    def snapshot(self) -> IngestSnapshot:
        with self._lock:
            return self._now
