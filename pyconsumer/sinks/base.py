"""What every table sink offers, the file description it hands from writer to committer, its errors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import pyarrow as pa

TopicPartitionKey = tuple[str, int]
"""(topic, partition): the key of every offsets mapping here."""

PartitionValue = str | int | None

DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024


@dataclass(frozen=True)
class OffsetRange:
    """The Kafka records of one partition held by a data file: offsets first..last, both included."""

    topic: str
    partition: int
    first: int
    last: int


@dataclass(frozen=True)
class DataFile:
    """A Parquet data file written but not yet committed.

    Plain values only, so that it pickles small: Spark tasks return these to the driver.
    """

    path: str
    """Relative to the table's location (the data files are inside it)."""
    size: int
    rows: int
    partition: tuple[tuple[str, PartitionValue], ...]
    """The table's partition fields and this file's value for each, in the table's order."""
    offsets: tuple[OffsetRange, ...]
    modification_time: int
    """Milliseconds since the epoch, when the file was closed."""
    stats: str = ""
    """Column statistics in the table format's own text, where the format keeps them in the log."""


class SinkError(Exception):
    """A table sink refused or failed an operation; the message says what to change."""


class SchemaConflictError(SinkError):
    """The table's schema and the batches' disagree (raised before anything is written)."""


class LocationError(SinkError):
    """The table's location cannot be written (raised before anything is read or written)."""


class OffsetConflictError(SinkError):
    """A commit's offsets overlap what the table holds without being a rerun of a commit it holds."""


@runtime_checkable
class TableSink(Protocol):
    """A table that takes Arrow batches of Kafka records and commits them with their offsets."""

    commit_noun: str
    """What the number commit returns is called in messages: "version", "snapshot", "log version"."""
    format_name: str
    """The table format's name as users know it ("Delta", "Iceberg", "Parquet")."""

    def resume_offsets(self) -> dict[TopicPartitionKey, int]:
        """The next offset to read for each partition this sink committed, read from the table."""
        ...

    def write(self, batches: Iterable[pa.RecordBatch]) -> list[DataFile]:
        """Write data files from the batches (partitioned, rolled at the target size); commit nothing."""
        ...

    def commit(self, files: Sequence[DataFile], offsets: Mapping[TopicPartitionKey, int]) -> int | None:
        """Add the files and the next offsets in one table commit; its version (Delta, and the Parquet
        sink's log) or snapshot id (Iceberg).

        None when the table already holds these offsets (a rerun): nothing is added, the files are deleted.
        """
        ...
