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

#: the name of the observed metrics of each micro-batch (records, bytes)
OBSERVATION = "pyconsumer_ingest"


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    if isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def _lag(source: Mapping[str, Any]) -> int | None:
    """sum(latestOffset - endOffset) over partitions, from one source's progress."""
    latest = _offsets(source.get("latestOffset"))
    end = _offsets(source.get("endOffset"))
    if not latest:
        return None
    lag = 0
    for topic, parts in latest.items():
        for p, off in parts.items():
            lag += max(0, int(off) - int(end.get(topic, {}).get(p, 0)))
    return lag


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

    def __init__(self, status: StatusLine | None, mode: str) -> None:
        self.status = status
        self.mode = mode
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
        self.last_rate: float | None = None
        self.started = time.monotonic()

    def take(self, progress: Any) -> None:
        key = (progress["batchId"], progress["timestamp"])
        if key in self.seen:
            return
        self.seen.add(key)
        sources = progress["sources"] or []
        lag = _lag(sources[0]) if sources else None
        if lag is not None:
            self.lag = lag
        rows = int(progress["numInputRows"] or 0)
        batch_id = int(progress["batchId"])
        if rows == 0 or batch_id in self.counted:
            return
        self.counted.add(batch_id)
        metrics = (progress["observedMetrics"] or {}).get(OBSERVATION)
        nbytes = int(metrics["bytes"]) if metrics is not None else 0
        self.records += rows
        self.bytes += nbytes
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
                + ("" if self.lag is None else f"; lag {self.lag:,}"))

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
        if self.lag is not None and self.mode != "availableNow":
            parts.append(f"lag {self.lag:,}")
        done, total = tasks_done(tracker, tracker.getActiveStageIds())
        if total:
            parts.append(f"micro-batch running: tasks {done}/{total}")
        parts.append(f"{elapsed:,.0f} s")
        self.status.update(f"{self.mode}: " + " | ".join(parts))
