"""Tables written from Arrow batches with the Kafka offsets in the same atomic commit.

A sink's ``write`` makes Parquet data files and returns small descriptions of them (it can run in a
Spark task); its ``commit`` adds those files and the offsets reached to the table in one commit (run
once, by the driver). ``resume_offsets`` reads back where the table stopped.

``pyconsumer.sinks.parquet`` needs pyarrow alone: a plain Parquet dataset (Hive folders) that any
reader takes, made exactly once by a small commit log of its own (``_pyconsumer_log/``) on a local or
mounted path. The table libraries are optional extras: ``pyconsumer.sinks.delta`` needs ``deltalake``,
``pyconsumer.sinks.iceberg`` needs ``pyiceberg``; this package imports neither.
"""

from pyconsumer.sinks.base import (
    DEFAULT_TARGET_FILE_SIZE,
    DataFile,
    LocationError,
    OffsetConflictError,
    OffsetRange,
    SchemaConflictError,
    SinkError,
    TableSink,
    TopicPartitionKey,
)
from pyconsumer.sinks.partitioning import PartitionBy, parse_partition_by

__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "DataFile",
    "LocationError",
    "OffsetConflictError",
    "OffsetRange",
    "PartitionBy",
    "SchemaConflictError",
    "SinkError",
    "TableSink",
    "TopicPartitionKey",
    "parse_partition_by",
]
