"""The streaming backlog Spark's own Kafka source reports in every progress
(``avgOffsetsBehindLatest``, ``maxOffsetsBehindLatest``, ``minOffsetsBehindLatest``; Databricks'
source also ``estimatedTotalBytesBehindLatest``), for queries reading ``format("pyconsumer")``.

PySpark's Python data source API (4.2) gives a stream reader no way to report custom metrics:
a Python source's ``sources[i].metrics`` stays empty. Its progress does carry ``endOffset`` (the
end of the micro-batch) and ``latestOffset`` (the source's ``reportLatestOffset``: the latest
offsets it saw when planning the batch), which is all Spark's source computes them from, so:

* :func:`source_backlog` gives them for one source entry of ``query.lastProgress``;
* :class:`BacklogListener`, added with ``spark.streams.addListener``, computes them on every
  progress, estimates the bytes behind by sampling the backlog's first records (once per
  partition), logs them and keeps those of each query's recent micro-batches.
"""
from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from pyconsumer.spark.offsets_json import offsets_from_json
from pyconsumer.spark.options import SourceOptions, parse_options
from pyconsumer.spark.planning import OffsetRange
from pyconsumer.spark.reader import bytes_per_offset
from pyconsumer.structs import TopicPartition

__all__ = ["Backlog", "BacklogListener", "backlog", "source_backlog"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backlog:
    """Offsets behind latest per partition after one micro-batch, and the bytes they hold
    (``None`` when not estimated)."""

    behind: dict[TopicPartition, int]
    bytes_behind: float | None = None
    #: where the micro-batch ended, per partition of ``behind`` (where the backlog starts)
    ends: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def min(self) -> int:
        return min(self.behind.values())

    @property
    def max(self) -> int:
        return max(self.behind.values())

    @property
    def avg(self) -> float:
        return sum(self.behind.values()) / len(self.behind)

    def metrics(self) -> dict[str, str]:
        """The numbers under Spark's Kafka source's metric names, as text as Spark gives them
        (empty when no partition is known)."""
        if not self.behind:
            return {}
        out = {"minOffsetsBehindLatest": str(self.min), "maxOffsetsBehindLatest": str(self.max),
               "avgOffsetsBehindLatest": repr(self.avg)}
        if self.bytes_behind is not None:
            out["estimatedTotalBytesBehindLatest"] = str(round(self.bytes_behind))
        return out


def backlog(latest: Mapping[TopicPartition, int], consumed: Mapping[TopicPartition, int],
            bytes_per_offset: Mapping[TopicPartition, float] | None = None) -> Backlog:
    """Spark's rule: every partition of ``latest`` is ``latest - consumed`` behind (a
    partition not consumed yet counts from 0). Bytes: offsets behind times each partition's
    bytes per offset, when every partition with a backlog has an estimate."""
    behind = {tp: off - consumed.get(tp, 0) for tp, off in latest.items()}
    total: float | None = None
    if bytes_per_offset is not None:
        lagging = [tp for tp, n in behind.items() if n > 0]
        if all(tp in bytes_per_offset for tp in lagging):
            total = sum(behind[tp] * bytes_per_offset[tp] for tp in lagging)
    return Backlog(behind, total, {tp: consumed.get(tp, 0) for tp in latest})


def _offsets(value: Any, what: str) -> dict[TopicPartition, int]:
    obj = json.loads(value) if isinstance(value, str) else value
    if not isinstance(obj, Mapping):
        raise ValueError(f"the progress's {what} is {value!r}, not Kafka source offsets")
    return offsets_from_json(obj)


def source_backlog(source: Mapping[str, Any] | Any,
                   bytes_per_offset: Mapping[TopicPartition, float] | None = None) -> Backlog:
    """The backlog after the micro-batch of ``source``: one entry of a progress's
    ``sources`` (a dict of ``query.lastProgress`` or a ``SourceProgress`` of a listener event).
    A ``ValueError`` names the field when the entry has no Kafka offsets there."""
    def get(name: str) -> Any:
        return source.get(name) if isinstance(source, Mapping) else getattr(source, name)

    latest, end = get("latestOffset"), get("endOffset")
    if latest is None:
        raise ValueError("the progress's latestOffset is missing: the source reported no "
                         "latest offsets for this micro-batch")
    return backlog(_offsets(latest, "latestOffset"), _offsets(end, "endOffset"),
                   bytes_per_offset)


class BacklogListener(StreamingQueryListener):
    """Computes Spark's backlog metrics for every progress of every query with a Kafka source.

    ``options`` are the source's options (``kafka.bootstrap.servers`` and the rest): with
    them, the bytes behind are estimated from a sample of each lagging partition's records
    (read once per partition, from where the backlog starts); without them, only the offsets."""

    def __init__(self, options: Mapping[str, str] | None = None, *, keep: int = 100) -> None:
        super().__init__()
        self._options: SourceOptions | None = (
            None if options is None else parse_options(options, streaming=True))
        self._lock = threading.Lock()
        self._bytes_per_offset: dict[TopicPartition, float] = {}
        self._keep = keep
        self._batches: dict[str, dict[int, list[Backlog]]] = {}

    def batches(self, query_id: Any) -> dict[int, list[Backlog]]:
        """Batch id -> the backlog of each Kafka source after it, for the query's last
        ``keep`` progress reports."""
        with self._lock:
            return {k: list(v) for k, v in self._batches.get(str(query_id), {}).items()}

    def _estimates(self, b: Backlog) -> dict[TopicPartition, float] | None:
        if self._options is None:
            return None
        for tp, n in b.behind.items():
            if n > 0 and tp not in self._bytes_per_offset:
                start = b.ends[tp]
                try:
                    estimate = bytes_per_offset(
                        OffsetRange(tp.topic, tp.partition, start, start + n), self._options)
                except Exception as exc:     # a failed sample must not fail the listener bus
                    log.warning("estimating the bytes behind of %s failed: %s", tp, exc)
                    continue
                if estimate is not None:
                    self._bytes_per_offset[tp] = estimate
        return self._bytes_per_offset

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        p = event.progress
        found = []
        for i, source in enumerate(p.sources):
            try:
                offsets_only = source_backlog(source)
            except ValueError:       # not a Kafka source, or no latest offsets yet
                continue
            b = source_backlog(source, self._estimates(offsets_only))
            found.append(b)
            log.info("query %s batch %d source %d backlog: %s", p.id, p.batchId, i,
                     b.metrics())
        with self._lock:
            kept = self._batches.setdefault(str(p.id), {})
            kept[p.batchId] = found
            for old in sorted(kept)[:-self._keep]:
                del kept[old]

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        pass

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        pass

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        pass     # kept for batches() after the query ends
