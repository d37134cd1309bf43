"""The ingest's progress on a :class:`~pyconsumer.console.StatusLine`: streaming from each
micro-batch's ``StreamingQueryProgress`` (input rows and rates, the key+value bytes observed
with ``DataFrame.observe`` under :data:`OBSERVATION`, the lag behind the broker), batch from
the SparkContext's status tracker (tasks done of the tasks known so far)."""
from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pyconsumer.console import StatusLine, bar, human_bytes
from pyconsumer.ingest.lag import PartitionLag, partition_lag, total_text
from pyconsumer.ingest.metrics import IngestMetrics

#: the name of the observed metrics of each micro-batch (records, bytes)
OBSERVATION = "pyconsumer_ingest"


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    if isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def _flat(offsets: Mapping[str, Mapping[str, int]]) -> dict[tuple[str, int], int]:
    return {(topic, int(p)): int(off) for topic, parts in offsets.items()
            for p, off in parts.items()}


def _lag(source: Mapping[str, Any], bytes_per_record: float | None) -> list[PartitionLag] | None:
    """Each partition's latestOffset - endOffset, from one source's progress (None when the
    source reported no latest offsets)."""
    latest = _offsets(source.get("latestOffset"))
    if not latest:
        return None
    return partition_lag(_flat(latest), _flat(_offsets(source.get("endOffset"))),
                         bytes_per_record)


def tasks_done(tracker: Any, stage_ids: Sequence[int]) -> tuple[int, int]:
    done = total = 0
    for sid in stage_ids:
        info = tracker.getStageInfo(sid)
        if info is not None:
            done += info.numCompletedTasks
            total += info.numTasks
    return done, total


class StreamProgress:
    """Turns StreamingQueryProgress events into counters and status lines."""

    def __init__(self, status: StatusLine | None, mode: str,
                 metrics: IngestMetrics | None = None) -> None:
        self.status = status
        self.mode = mode
        self.metrics = metrics             # published for scrapes (--metrics-port)
        self.seen: set[tuple[Any, Any]] = set()
        self.counted: set[int] = set()
        self.records = 0
        self.bytes = 0
        # the observed rows' split: bytes of the good rows, rows rejected, topics seen
        self.good_bytes = 0
        self.rejected = 0
        self.topics: set[str] = set()
        self.batches = 0
        self.busy_ms = 0                        # the micro-batches with records, end to end
        self.lag: int | None = None
        #: per partition, after the last micro-batch (bytes from the run's bytes per record)
        self.partition_lag: list[PartitionLag] | None = None
        self.last_rate: float | None = None
        self.started = time.monotonic()

    def take(self, progress: Any) -> None:
        key = (progress["batchId"], progress["timestamp"])
        if key in self.seen:
            return
        self.seen.add(key)
        sources = progress["sources"] or []
        rows = int(progress["numInputRows"] or 0)
        batch_id = int(progress["batchId"])
        fresh = rows > 0 and batch_id not in self.counted
        metrics = (progress["observedMetrics"] or {}).get(OBSERVATION) if fresh else None
        nbytes = int(metrics["bytes"]) if metrics is not None else 0
        if fresh:
            self.records += rows
            self.bytes += nbytes
        lag = _lag(sources[0], self.bytes_per_record) if sources else None
        if lag is not None:
            self.partition_lag = lag
            self.lag = sum(p.records for p in lag)
        if self.metrics is not None:
            if fresh:
                self.metrics.add_batch(
                    rows, nbytes, rejected=int(metrics["rejected"] or 0) if metrics else 0,
                    rate=float(progress["processedRowsPerSecond"] or 0.0))
            if sources:
                self.metrics.set_positions(_flat(_offsets(sources[0].get("endOffset"))), lag)
        if not fresh:
            return
        self.counted.add(batch_id)
        if metrics is not None:
            self.good_bytes += int(metrics["good_bytes"] or 0)
            self.rejected += int(metrics["rejected"] or 0)
            self.topics.update(metrics["topics"] or ())
        self.batches += 1
        self.busy_ms += int(progress["batchDuration"] or 0)
        rate = float(progress["processedRowsPerSecond"] or 0.0)
        self.last_rate = rate
        if self.status is not None:
            self.status.log(
                f"micro-batch {batch_id}: {rows:,} records, {human_bytes(nbytes)} in "
                f"{int(progress['batchDuration'] or 0) / 1000:.1f} s ({rate:,.0f} records/s); "
                f"run total {self.records:,} records, {human_bytes(self.bytes)}"
                + ("" if self.partition_lag is None else
                   f"; behind latest {total_text(self.partition_lag)}"))

    @property
    def bytes_per_record(self) -> float | None:
        """Key and value bytes per record over the run (observed with the records)."""
        return self.bytes / self.records if self.records and self.bytes else None

    def draw(self, tracker: Any) -> None:
        if self.status is None or not self.status.live:
            return
        elapsed = time.monotonic() - self.started
        parts = [f"{self.records:,} records, {human_bytes(self.bytes)}"]
        if self.mode == "availableNow":
            if self.lag is not None and self.records + self.lag > 0:
                parts[0] = (f"{bar(self.records / (self.records + self.lag))} "
                            f"{self.records:,} of {self.records + self.lag:,} records, "
                            f"{human_bytes(self.bytes)}")
            rate = self.records / elapsed if elapsed > 0 else 0.0
            parts.append(f"{rate:,.0f} records/s (run average)")
        elif self.last_rate is not None:
            parts.append(f"last micro-batch {self.last_rate:,.0f} records/s")
        if self.partition_lag is not None and self.mode != "availableNow":
            parts.append(f"behind latest {total_text(self.partition_lag)}")
        done, total = tasks_done(tracker, tracker.getActiveStageIds())
        if total:
            parts.append(f"micro-batch running: tasks {done}/{total}")
        parts.append(f"{elapsed:,.0f} s")
        self.status.update(f"{self.mode}: " + " | ".join(parts))
