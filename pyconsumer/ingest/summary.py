"""What an ingest run wrote (per partition and in total, with its times) and the table the
command prints of it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyconsumer.console import format_table, human_bytes


@dataclass(frozen=True)
class PartitionSummary:
    """What this run wrote of one topic-partition."""

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    records: int
    bytes: int          # sum of key and value lengths (null counts 0)


@dataclass
class IngestSummary:
    """What one ingest run wrote: per partition and in total, with the wall time."""

    mode: str                                   # "batch", "availableNow" or "continuous"
    output: str
    partitions: list[PartitionSummary] = field(default_factory=list)
    seconds: float = 0.0                        # reading and writing (not the summary)
    micro_batches: int = 0                      # batches with records (batch mode: 0 or 1)
    files: int = 0                              # Parquet files added to the dataset
    interrupted: bool = False                   # stopped by stop / Ctrl-C
    #: continuous streaming: the time its micro-batches with records took (the rest of
    #: ``seconds`` is waiting for records); the rates are over this, not the wall time
    busy_seconds: float | None = None
    #: --bad-records: the rejected-records dataset, what this run wrote there per partition,
    #: and its files (None / empty / 0 without it)
    bad_records: str | None = None
    rejected: list[PartitionSummary] = field(default_factory=list)
    rejected_files: int = 0
    #: the columns whose bytes ``bytes`` counts: typed (struct) keys and values have no length
    sized: tuple[str, ...] = ("key", "value")

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def rejected_records(self) -> int:
        return sum(p.records for p in self.rejected)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)

    @property
    def rate_seconds(self) -> float:
        """What the rates divide by: the busy time of a continuous run, else the wall time."""
        return self.seconds if self.busy_seconds is None else self.busy_seconds

    @property
    def records_per_second(self) -> float:
        return self.records / self.rate_seconds if self.rate_seconds > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.bytes / 1e6 / self.rate_seconds if self.rate_seconds > 0 else 0.0

    def by_partition(self) -> dict[tuple[str, int], PartitionSummary]:
        return {(p.topic, p.partition): p for p in self.partitions}


def format_summary(summary: IngestSummary) -> str:
    """The final table: per partition offsets, records and bytes, then totals and rates."""
    rows: list[tuple[Any, ...]] = [
        (p.topic, p.partition, f"{p.first_offset}-{p.last_offset}", f"{p.records:,}",
         f"{p.bytes:,}") for p in summary.partitions]
    rows.append(("total", "", "", f"{summary.records:,}", f"{summary.bytes:,}"))
    table = format_table(rows, ("topic", "partition", "offsets", "records", "bytes"),
                         right=(False, True, False, True, True))
    what = {"batch": "batch", "availableNow": "streaming, available now",
            "continuous": "streaming"}.get(summary.mode, summary.mode)
    head = (f"ingest summary ({what}; {summary.files} Parquet file"
            f"{'' if summary.files == 1 else 's'} added to {summary.output}"
            + (f"; {summary.micro_batches} micro-batch"
               f"{'' if summary.micro_batches == 1 else 'es'}" if summary.mode != "batch" else "")
            + (", stopped by Ctrl-C" if summary.interrupted else "") + "):")
    # one unit system for every size in the run (human_bytes: B, kB, MB ...), never "0.0 MB/s"
    busy = ("" if summary.busy_seconds is None else
            f" ({summary.busy_seconds:.2f} s in micro-batches, the rest waiting for records)")
    rate_s = summary.rate_seconds
    sized = " + ".join(summary.sized) if summary.sized else "typed key and value: not counted"
    rates = (f"  {summary.records:,} records, {human_bytes(summary.bytes)} ({sized}) in "
             f"{summary.seconds:.2f} s{busy}: {summary.records_per_second:,.0f} records/s, "
             f"{human_bytes(summary.bytes / rate_s if rate_s > 0 else 0)}/s")
    lines = [head, table, rates]
    if summary.bad_records is not None:
        lines.append(_format_rejected(summary))
    return "\n".join(lines)


def _format_rejected(summary: IngestSummary) -> str:
    """The rejected records' line, and their table when there are any."""
    good, bad = summary.records, summary.rejected_records
    line = (f"  {good:,} good and {bad:,} rejected record{'' if bad == 1 else 's'} "
            f"({summary.rejected_files} Parquet file{'' if summary.rejected_files == 1 else 's'}"
            f" added to {summary.bad_records})")
    if not summary.rejected:
        return line
    rows: list[tuple[Any, ...]] = [
        (p.topic, p.partition, f"{p.first_offset}-{p.last_offset}", f"{p.records:,}")
        for p in summary.rejected]
    table = format_table(rows, ("topic", "partition", "offsets", "rejected"),
                         right=(False, True, False, True))
    return "\n".join([line, "rejected records:", table])
