"""The offsets a batch run through Spark's writer reads, fixed on the driver before the read, so
that the run can say afterwards how far behind the latest offsets it left each partition.

A latest end moves while the job runs: the read is pinned to the offsets resolved here (the
same ones the source would resolve at planning). An end given as offsets or timestamps reads
as given. Best effort: when the lookup fails the read goes ahead as asked, without a lag, and
the source reports the error itself."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyconsumer.ingest.lag import PartitionLag, partition_lag

if TYPE_CHECKING:
    from pyconsumer.spark.options import SourceOptions
    from pyconsumer.structs import TopicPartition

__all__ = ["BatchRange", "pin_range"]


@dataclass(frozen=True)
class BatchRange:
    """The source options with the end pinned, and each partition's end offset."""

    options: dict[str, str]
    source: SourceOptions
    ends: dict[TopicPartition, int]

    def lag(self, bytes_per_record: float | None) -> list[PartitionLag] | None:
        """Each partition's offsets between the run's end and the latest offset now (None when
        the lookup fails: the run's result does not depend on it)."""
        from pyconsumer.spark.offsets import OffsetReader

        reader = OffsetReader(self.source, role="ingest-lag")
        try:
            latest = reader.latest(self.ends)
        except Exception:
            return None
        finally:
            reader.close()
        return partition_lag({(tp.topic, tp.partition): off for tp, off in latest.items()},
                             {(tp.topic, tp.partition): off for tp, off in self.ends.items()},
                             bytes_per_record)


def pin_range(options: Mapping[str, str]) -> BatchRange | None:
    """The batch read of ``options`` with its end resolved now; None when it cannot be."""
    from pyconsumer.spark.offsets import OffsetReader
    from pyconsumer.spark.options import parse_options
    from pyconsumer.spark.specs import LatestSpec

    try:
        source = parse_options(options, streaming=False)
        reader = OffsetReader(source, role="ingest-range")
        try:
            ends = reader.resolve(source.ending, reader.partitions(), is_start=False,
                                  option="endingOffsets")
        finally:
            reader.close()
    except Exception:
        return None
    pinned = dict(options)
    if isinstance(source.ending, LatestSpec) and ends:
        by_topic: dict[str, dict[str, int]] = {}
        for tp, off in sorted(ends.items()):
            by_topic.setdefault(tp.topic, {})[str(tp.partition)] = off
        pinned["endingOffsets"] = json.dumps(by_topic)
    return BatchRange(pinned, source, ends)
