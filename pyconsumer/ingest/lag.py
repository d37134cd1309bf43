"""How far an ingest run is behind the brokers: per partition, the offsets between where it
stopped and the latest offset, and an estimate of the key and value bytes they hold (from the
bytes per record the run itself read)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyconsumer.console import format_table, human_bytes


@dataclass(frozen=True)
class PartitionLag:
    """One topic-partition: ``records`` offsets behind its latest offset, about ``bytes`` of
    keys and values (``None``: no records of it read to estimate from)."""

    topic: str
    partition: int
    records: int
    bytes: int | None


def partition_lag(latest: Mapping[tuple[str, int], int], reached: Mapping[tuple[str, int], int],
                  bytes_per_record: Mapping[tuple[str, int], float] | float | None = None
                  ) -> list[PartitionLag]:
    """Every partition of ``latest``: ``latest - reached`` offsets behind (0 when the run is
    at or past it), bytes estimated per partition, or with one figure for all."""
    out = []
    for key, off in sorted(latest.items()):
        behind = max(0, off - reached.get(key, 0))
        rate = (bytes_per_record if not isinstance(bytes_per_record, Mapping)
                else bytes_per_record.get(key))
        est = None if rate is None else round(behind * rate)
        out.append(PartitionLag(key[0], key[1], behind, 0 if behind == 0 else est))
    return out


def with_sizes(lags: list[PartitionLag], read: Mapping[tuple[str, int], tuple[int, int]]
               ) -> list[PartitionLag]:
    """``lags`` with the unknown bytes estimated from what the run read: (topic, partition) ->
    (records, key + value bytes); a partition it read nothing of takes the run's average."""
    records = sum(r for r, _ in read.values())
    overall = sum(b for _, b in read.values()) / records if records else None
    out = []
    for lag in lags:
        if lag.bytes is None:
            got = read.get((lag.topic, lag.partition))
            rate = got[1] / got[0] if got and got[0] else overall
            if rate is not None:
                lag = PartitionLag(lag.topic, lag.partition, lag.records,
                                   0 if lag.records == 0 else round(lag.records * rate))
        out.append(lag)
    return out


def total_text(lags: list[PartitionLag]) -> str:
    """``"1,200 records (~16.8 kB)"``: the run's whole lag, for a progress line."""
    records = sum(lag.records for lag in lags)
    sizes = [lag.bytes for lag in lags]
    known = None if any(b is None for b in sizes) else sum(b or 0 for b in sizes)
    return f"{records:,} records" + ("" if known is None else f" (~{human_bytes(known)})")


def format_lag(lags: list[PartitionLag]) -> str:
    """The summary's table of the partitions behind latest (a line when none is)."""
    behind = [lag for lag in lags if lag.records > 0]
    if not behind:
        one = len(lags) == 1
        return (f"  behind latest: none ({len(lags)} partition{'' if one else 's'} at "
                f"{'its' if one else 'their'} latest offset)")
    rows: list[tuple[Any, ...]] = [
        (lag.topic, lag.partition, f"{lag.records:,}",
         "?" if lag.bytes is None else f"{lag.bytes:,}") for lag in behind]
    table = format_table(rows, ("topic", "partition", "records", "bytes (est.)"),
                         right=(False, True, True, True))
    return "\n".join([f"behind latest: {total_text(lags)}", table])
