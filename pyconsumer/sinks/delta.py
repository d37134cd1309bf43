"""A Delta Lake table sink (deltalake, delta-rs): data files from Arrow, committed with their Kafka offsets.

Each commit carries, besides the files' ``add`` actions, one ``txn`` action per Kafka partition
(app id ``{app_id}-{topic}-{partition}``, version = the next offset to read), as kafka-delta-ingest
does, and every offset this sink holds in the commit's metadata (``pyconsumer.offset.<topic>.<partition>``).
The txn versions are the truth; the metadata lists which partitions there are.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, CommitProperties, RemoveAction, Transaction

from pyconsumer.sinks.base import (
    DEFAULT_TARGET_FILE_SIZE,
    DataFile,
    SchemaConflictError,
    SinkError,
    TopicPartitionKey,
)
from pyconsumer.sinks.files import ColumnStats, FileRoller, check_writable, delete_files, resolve
from pyconsumer.sinks.offsets import APP_ID_KEY, offset_properties, parse_offset_properties, should_commit
from pyconsumer.sinks.schema import check_batch_schema
from pyconsumer.sinks.partitioning import PartitionBy, checked_partitioning, hive_directory, hive_schema, hive_split


class DeltaSink:
    """A Delta table at location (a path or a URI), created when missing with schema plus its partition columns.

    Holds settings only, so that it pickles into Spark tasks; every call opens the table afresh.
    """

    commit_noun = "version"
    format_name = "Delta"

    def __init__(
        self,
        location: str,
        schema: pa.Schema,
        *,
        app_id: str = "pyconsumer",
        partition_by: Sequence[str | PartitionBy] = (),
        target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
        max_commit_attempts: int = 20,
    ) -> None:
        self.location = location
        self.app_id = app_id
        self.schema = schema
        self.target_file_size = target_file_size
        self.max_commit_attempts = max_commit_attempts
        self.partition_by = checked_partitioning(partition_by, schema)
        self.table_schema = hive_schema(schema, self.partition_by)
        self._fs, self._root = resolve(location)
        self._uri = location if "://" in location else self._root
        check_writable(self._fs, self._root, location)
        self._open_or_create()

    @property
    def partition_columns(self) -> list[str]:
        return [p.name for p in self.partition_by]

    def _open_or_create(self) -> None:
        if not DeltaTable.is_deltatable(self._uri):
            DeltaTable.create(self._uri, self.table_schema, mode="ignore", partition_by=self.partition_columns or None)
        table = DeltaTable(self._uri)
        check_schema(table.schema(), DeltaSchema.from_arrow(self.table_schema), self.location)
        held = table.metadata().partition_columns
        if held != self.partition_columns:
            raise SchemaConflictError(
                f"the Delta table at {self.location} is partitioned by {held or 'nothing'}, "
                f"the sink by {self.partition_columns or 'nothing'}"
            )

    def resume_offsets(self) -> dict[TopicPartitionKey, int]:
        return self._held(DeltaTable(self._uri), ())

    def _held(self, table: DeltaTable, named: Iterable[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        listed = self._last_own_commit_offsets(table)
        out: dict[TopicPartitionKey, int] = {}
        for tp in {*listed, *named}:
            version = table.transaction_version(self._txn_id(tp))
            if version is not None:
                out[tp] = version
        return out

    def _last_own_commit_offsets(self, table: DeltaTable) -> dict[TopicPartitionKey, int]:
        # another writer's commits may come after ours: look further back only when needed
        for limit in (50, None):
            history = table.history(limit)
            for info in history:
                if info.get(APP_ID_KEY) == self.app_id:
                    return parse_offset_properties(info)
            if limit is not None and len(history) < limit:
                break
        return {}

    def _txn_id(self, tp: TopicPartitionKey) -> str:
        return f"{self.app_id}-{tp[0]}-{tp[1]}"

    def write(self, batches: Iterable[pa.RecordBatch]) -> list[DataFile]:
        file_schema = pa.schema([f for f in self.table_schema if f.name not in self.partition_columns])
        roller = FileRoller(
            self._fs, self._root, file_schema, self.target_file_size,
            directory=hive_directory, drop=self.partition_columns, describe=delta_stats,
        )
        try:
            for batch in batches:
                check_batch_schema(self.schema, batch.schema, self.location)
                for partition, rows in hive_split(batch, self.partition_by):
                    roller.add(partition, rows)
            return roller.finish()
        except BaseException:
            roller.abort()
            raise

    def commit(self, files: Sequence[DataFile], offsets: Mapping[TopicPartitionKey, int]) -> int | None:
        actions: list[AddAction | RemoveAction] = [
            AddAction(
                path=f.path,  # as on disk: delta-rs escapes it into the log's URI itself
                size=f.size,
                partition_values={k: None if v is None else str(v) for k, v in f.partition},
                modification_time=f.modification_time,
                data_change=True,
                stats=f.stats,
            )
            for f in files
        ]
        last: Exception | None = None
        for attempt in range(self.max_commit_attempts):
            table = DeltaTable(self._uri)
            read_version = table.version()
            # the offsets are read again on every attempt: a concurrent writer may have committed them
            held = self._held(table, offsets)
            if not should_commit(held, offsets, files):
                delete_files(self._fs, [f"{self._root}/{f.path}" for f in files])
                return None
            now = int(time.time() * 1000)
            try:
                # no retry inside delta-rs: it would not re-check the offsets against the winner's commit
                table.create_write_transaction(
                    actions,
                    "append",
                    self.table_schema,
                    partition_by=self.partition_columns or None,
                    commit_properties=CommitProperties(
                        custom_metadata=dict(offset_properties(self.app_id, {**held, **offsets})),
                        max_commit_retries=0,
                        app_transactions=[Transaction(self._txn_id(tp), nxt, now) for tp, nxt in offsets.items()],
                    ),
                )
            except CommitFailedError as e:
                last = e
                time.sleep(min(0.5, 0.01 * 2**attempt))
                continue
            return read_version + 1
        raise SinkError(
            f"could not commit to the Delta table at {self.location} after {self.max_commit_attempts} "
            f"attempts (concurrent writers): {last}"
        )


def delta_stats(stats: ColumnStats) -> str:
    """The add action's stats: record count, nulls, min and max of the top-level primitive columns."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    for name, lo in stats.mins.items():
        hi = stats.maxs[name]
        if isinstance(lo, dt.datetime):
            mins[name], maxs[name] = _ms(lo, math.floor), _ms(hi, math.ceil)
        elif isinstance(lo, dt.date):
            mins[name], maxs[name] = lo.isoformat(), hi.isoformat()
        elif isinstance(lo, str):
            # long strings would need truncation rules for max; leaving them out is always correct
            if len(lo) <= 32 and len(hi) <= 32:
                mins[name], maxs[name] = lo, hi
        else:
            mins[name], maxs[name] = lo, hi
    return json.dumps({"numRecords": stats.rows, "minValues": mins, "maxValues": maxs, "nullCount": stats.nulls})


def _ms(value: dt.datetime, rounding: Any) -> str:
    # Delta's stats have millisecond timestamps: round the min down and the max up so both stay bounds
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    micros = (aware - epoch) // dt.timedelta(microseconds=1)
    ms = rounding(micros / 1000)
    text = (epoch + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text[:-3] + "Z"


def _delta_type_text(t: Any) -> str:
    """A Delta type in a short readable form (no nullability, no metadata)."""
    def show(j: Any) -> str:
        if isinstance(j, str):
            return j
        kind = j.get("type")
        if kind == "struct":
            return "struct<" + ", ".join(f"{f['name']}: {show(f['type'])}" for f in j["fields"]) + ">"
        if kind == "array":
            return f"array<{show(j['elementType'])}>"
        if kind == "map":
            return f"map<{show(j['keyType'])}, {show(j['valueType'])}>"
        return json.dumps(j)
    return show(json.loads(t.to_json()))


def check_schema(table: DeltaSchema, wanted: DeltaSchema, location: str) -> None:
    """Every column of the sink's schema in the table with the same type, and no column the sink lacks."""
    have = {f.name: _delta_type_text(f.type) for f in table.fields}
    want = {f.name: _delta_type_text(f.type) for f in wanted.fields}
    for name, t in want.items():
        if name not in have:
            raise SchemaConflictError(f"the Delta table at {location} has no column {name!r} ({t} in the batches)")
        if have[name] != t:
            raise SchemaConflictError(
                f"column {name!r}: the Delta table at {location} has {have[name]}, the batches have {t}"
            )
    missing = sorted(set(have) - set(want))
    if missing:
        raise SchemaConflictError(
            f"the Delta table at {location} has columns the batches lack: "
            + ", ".join(f"{n} ({have[n]})" for n in missing)
        )
