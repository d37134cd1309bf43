"""``pyconsumer ingest``: Kafka topics into a Parquet dataset through Spark and the
pyconsumer source. One job a module: :mod:`~pyconsumer.ingest.options` (the inputs, checked
before Spark starts), :mod:`~pyconsumer.ingest.job` (the batch or streaming run),
:mod:`~pyconsumer.ingest.values` (typed-value flags as source options, the split into good
and rejected records), :mod:`~pyconsumer.ingest.progress` (the live progress line),
:mod:`~pyconsumer.ingest.summary` (what a run wrote, and its table) and
:mod:`~pyconsumer.ingest.tables` (``--table-format delta|iceberg``: Spark tasks write a table's
data files, one commit with the Kafka offsets). The session the job runs on comes from
:mod:`pyconsumer.spark.session`."""
from __future__ import annotations

from pyconsumer.ingest.job import run_ingest, spark_error_message
from pyconsumer.ingest.options import (
    IngestError,
    check_apart,
    check_offsets,
    check_source,
    claim_folders,
    local_path,
    parse_trigger_ms,
    release_folders,
    source_options,
    unknown_source_options,
)
from pyconsumer.ingest.tables import (
    TableRead,
    TableTarget,
    open_table,
    plan_table_read,
    run_table_ingest,
    run_table_ingest_continuous,
)
from pyconsumer.ingest.summary import (
    IngestSummary,
    PartitionSummary,
    format_summary,
    summary_problems,
)

__all__ = [
    "IngestSummary",
    "PartitionSummary",
    "IngestError",
    "run_ingest",
    "format_summary",
    "summary_problems",
    "parse_trigger_ms",
    "source_options",
    "spark_error_message",
    "local_path",
    "claim_folders",
    "release_folders",
    "check_apart",
    "check_offsets",
    "check_source",
    "unknown_source_options",
    "TableRead",
    "TableTarget",
    "open_table",
    "plan_table_read",
    "run_table_ingest",
    "run_table_ingest_continuous",
]
