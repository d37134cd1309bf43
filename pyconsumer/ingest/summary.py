"""What an ingest run wrote (per partition and in total, with its times) and the table the
command prints of it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyconsumer.console import format_table, human_bytes
from pyconsumer.ingest.lag import PartitionLag, format_lag


@dataclass(frozen=True)
class PartitionSummary:
    """What this run wrote of one topic-partition."""

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    records: int
    bytes: int          # sum of key and value lengths (null counts 0; typed values: 0)


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
    #: typed values: the raw key + value bytes of the records written, counted as the read
    #: saw them (a decoded column has no length of its own); None: counted over the files
    read_bytes: int | None = None
    #: --mode DROPMALFORMED: the records rejected and left out (None in other runs)
    dropped: int | None = None
    #: the topics the run read records of (also those whose records were all rejected)
    topics: tuple[str, ...] = ()
    #: a table run: what it wrote, e.g. "delta table" (None: the Parquet dataset Spark writes);
    #: its micro-batches are the rounds that committed, its files the data files committed
    table: str | None = None
    #: typed values: the fields of a decoded key or value null in every record written
    null_fields: tuple[str, ...] = ()
    #: per partition, how far behind the latest offsets the run stopped (None: the latest
    #: offsets are not known, as in a Spark-writer batch run)
    lag: list[PartitionLag] | None = None

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def rejected_records(self) -> int:
        return sum(p.records for p in self.rejected)

    @property
    def bytes(self) -> int:
        if self.read_bytes is not None:
            return self.read_bytes
        return sum(p.bytes for p in self.partitions)

    @property
    def all_rejected(self) -> bool:
        """Records were read and every one was rejected (none written to the output)."""
        return self.records == 0 and self.rejected_records + (self.dropped or 0) > 0

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
    """The final table: per partition offsets, records and bytes, then totals and rates (typed
    values: bytes in total only, as read)."""
    per_partition = summary.read_bytes is None
    rows: list[tuple[Any, ...]] = [
        (p.topic, p.partition, f"{p.first_offset}-{p.last_offset}", f"{p.records:,}")
        + ((f"{p.bytes:,}",) if per_partition else ()) for p in summary.partitions]
    rows.append(("total", "", "", f"{summary.records:,}")
                + ((f"{summary.bytes:,}",) if per_partition else ()))
    names: tuple[str, ...] = ("topic", "partition", "offsets", "records")
    right: tuple[bool, ...] = (False, True, False, True)
    if per_partition:
        names, right = names + ("bytes",), right + (True,)
    table = format_table(rows, names, right=right)
    if summary.table is not None:
        rounds = summary.micro_batches
        head = (f"ingest summary ({'continuous' if summary.mode == 'continuous' else 'batch'}; "
                f"{summary.files} data file{'' if summary.files == 1 else 's'} committed to the "
                f"{summary.table} {summary.output}"
                + (f" in {rounds} round{'' if rounds == 1 else 's'}" if summary.mode != "batch" else "")
                + (", stopped by Ctrl-C" if summary.interrupted else "") + "):")
    else:
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
    rates = (f"  {summary.records:,} records, {human_bytes(summary.bytes)} (key + value) in "
             f"{summary.seconds:.2f} s{busy}: {summary.records_per_second:,.0f} records/s, "
             f"{human_bytes(summary.bytes / rate_s if rate_s > 0 else 0)}/s")
    lines = [head, table] + ([] if summary.lag is None else [format_lag(summary.lag)]) + [rates]
    if summary.bad_records is not None:
        lines.append(_format_rejected(summary))
    elif summary.dropped is not None:
        bad = summary.dropped
        lines.append(f"  {summary.records:,} good and {bad:,} rejected record"
                     f"{'' if bad == 1 else 's'} (left out: --mode DROPMALFORMED)")
    return "\n".join(lines)


def summary_problems(summary: IngestSummary, *, allow_all_rejected: bool = False
                     ) -> tuple[list[str], bool]:
    """What the run's records say about its flags, one line each (``warning: ...`` or an
    error), and whether the run fails for it: every record rejected fails unless
    ``allow_all_rejected`` (a format or schema that fits no record is a mistake far more often
    than a wish); fields null in every record written are a warning."""
    lines: list[str] = []
    failed = False
    topics = ", ".join(summary.topics or sorted({p.topic for p in summary.partitions}))
    if summary.all_rejected:
        n = summary.rejected_records + (summary.dropped or 0)
        where = (f"the reason of each is in {summary.bad_records}"
                 if summary.bad_records is not None else
                 "--mode DROPMALFORMED left them out; --bad-records DIR keeps them with the "
                 "reason of each")
        text = (f"every record read was rejected ({n:,} record{'' if n == 1 else 's'} of "
                f"{topics}; none written to {summary.output}): {where}")
        failed = not allow_all_rejected
        lines.append(f"{text} (--allow-all-rejected to exit 0)" if failed else f"warning: {text}")
    if summary.null_fields and summary.records:
        fields = list(summary.null_fields)
        named = fields[0] if len(fields) == 1 else ", ".join(fields[:-1]) + " and " + fields[-1]
        lines.append(f"warning: {named} {'was' if len(fields) == 1 else 'were'} null in "
                     f"{'the' if summary.records == 1 else 'all'} {summary.records:,} record"
                     f"{'' if summary.records == 1 else 's'} written from {topics}: does the "
                     "schema name fields the records have?")
    return lines, failed


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
