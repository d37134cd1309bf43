"""Partitioning expressions over Kafka record batches: a column, a struct field, the day or hour of a timestamp.

Spelled ``topic``, ``partition``, ``value.country`` (a field of a struct column), ``day(timestamp)`` and
``hour(timestamp)``. Delta adds each as a column of its own (``timestamp_date``, ``timestamp_hour``,
``value_country``); Iceberg keeps them as transforms of the source column.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.sinks.base import PartitionValue, SchemaConflictError

Transform = Literal["identity", "day", "hour"]

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
"""A null partition value's folder name, as Hive, Spark and Delta write it."""

_CALL = re.compile(r"^\s*(day|date|hour)\s*\(\s*([\w.]+)\s*\)\s*$")


@dataclass(frozen=True)
class PartitionBy:
    source: tuple[str, ...]
    """The column, or the path of a field inside struct columns."""
    transform: Transform = "identity"

    @property
    def name(self) -> str:
        """The partition column's (Delta) or partition field's (Iceberg) name."""
        base = "_".join(self.source)
        return {"identity": base, "day": f"{base}_date", "hour": f"{base}_hour"}[self.transform]

    def source_array(self, batch: pa.RecordBatch) -> pa.Array:
        array = batch.column(self.source[0])
        for name in self.source[1:]:
            array = pc.struct_field(array, name)
        return array

    def check(self, schema: pa.Schema) -> None:
        """A clear error when the source is missing or of a type the transform cannot take."""
        if self.source[0] not in schema.names:
            raise SchemaConflictError(f"partition by {self.name}: no column {self.source[0]!r} in {schema.names}")
        t = schema.field(self.source[0]).type
        for depth, name in enumerate(self.source[1:], 1):
            if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
                raise SchemaConflictError(
                    f"partition by {self.name}: {'.'.join(self.source[:depth])} is {t}, with no field {name!r}"
                )
            t = t.field(name).type
        if self.transform != "identity" and not pa.types.is_timestamp(t):
            raise SchemaConflictError(f"partition by {self.name}: {'.'.join(self.source)} is {t}, not a timestamp")
        if self.transform == "identity" and not (
            pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_date(t) or pa.types.is_boolean(t)
        ):
            raise SchemaConflictError(
                f"partition by {self.name}: {'.'.join(self.source)} is {t}; partition by a string, integer, "
                "date or boolean (or day()/hour() of a timestamp)"
            )

    def delta_type(self, schema: pa.Schema) -> pa.DataType:
        """The type of the column Delta adds for this partitioning."""
        if self.transform == "day":
            return pa.date32()
        if self.transform == "hour":
            return pa.string()
        t = schema.field(self.source[0]).type
        for name in self.source[1:]:
            t = t.field(name).type
        return t

    def delta_values(self, batch: pa.RecordBatch) -> pa.Array:
        """The values of Delta's column: the source, its UTC date, or its UTC hour as YYYY-MM-DD-HH."""
        array = self.source_array(batch)
        if self.transform == "day":
            return pc.cast(_as_utc(array), pa.date32())
        if self.transform == "hour":
            return pc.strftime(_as_utc(array), format="%Y-%m-%d-%H")
        return array


def _as_utc(array: pa.Array) -> pa.Array:
    # a timestamp without a zone is read as UTC, as Spark's Kafka schema means
    if array.type.tz is None:
        return array.cast(pa.timestamp(array.type.unit, tz="UTC"))
    if array.type.tz not in ("UTC", "+00:00", "Etc/UTC"):
        return array.cast(pa.timestamp(array.type.unit, tz="UTC"))
    return array


def parse_partition_by(spec: str) -> PartitionBy:
    """``topic``, ``value.country``, ``day(timestamp)`` (or ``date(...)``), ``hour(timestamp)``."""
    m = _CALL.match(spec)
    if m:
        fn, path = m.groups()
        return PartitionBy(tuple(path.split(".")), "hour" if fn == "hour" else "day")
    if not re.fullmatch(r"[\w.]+", spec.strip()) or ".." in spec or spec.strip().strip(".") != spec.strip():
        raise ValueError(
            f"partition by {spec!r}: give a column (topic), a struct field (value.country), day(timestamp) "
            "or hour(timestamp)"
        )
    return PartitionBy(tuple(spec.strip().split(".")))


def checked_partitioning(partition_by: Sequence[str | PartitionBy], schema: pa.Schema
                         ) -> list[PartitionBy]:
    """``partition_by`` (expressions or parsed) parsed and each checked against ``schema``."""
    parsed = [p if isinstance(p, PartitionBy) else parse_partition_by(p) for p in partition_by]
    for p in parsed:
        p.check(schema)
    return parsed


def split_rows(
    batch: pa.RecordBatch, keys: Sequence[pa.Array]
) -> Iterator[tuple[tuple[Any, ...], pa.RecordBatch]]:
    """The batch's rows grouped by their values of the key arrays, each group in the batch's order."""
    if not keys:
        yield (), batch
        return
    names = [f"k{i}" for i in range(len(keys))]
    index = pa.table([*keys, pa.array(range(batch.num_rows), pa.int64())], names=[*names, "row"])
    groups = index.group_by(names, use_threads=False).aggregate([("row", "list")])
    key_columns = [groups.column(n).to_pylist() for n in names]
    rows = groups.column("row_list")
    for g in range(groups.num_rows):
        take = pc.sort_indices(rows[g].values)
        yield tuple(col[g] for col in key_columns), batch.take(rows[g].values.take(take))


def hive_schema(schema: pa.Schema, partition_by: Sequence[PartitionBy]) -> pa.Schema:
    """``schema`` and a column for each partitioning that is not a column already (``timestamp_date``
    for day(timestamp), ``value_country`` for value.country): the columns of a Hive-partitioned table."""
    extra = [pa.field(p.name, p.delta_type(schema)) for p in partition_by if p.name not in schema.names]
    return pa.schema([*schema, *extra])


def hive_split(batch: pa.RecordBatch, partition_by: Sequence[PartitionBy]
               ) -> Iterator[tuple[tuple[tuple[str, PartitionValue], ...], pa.RecordBatch]]:
    """The batch with its partition columns added (as hive_schema), its rows grouped by their
    partition: ((name, value as text), ...) and the rows, each group in the batch's order."""
    keys = [p.delta_values(batch) for p in partition_by]
    for p, k in zip(partition_by, keys):
        if p.name not in batch.schema.names:
            batch = batch.append_column(p.name, k)
    for values, rows in split_rows(batch, keys):
        yield tuple((p.name, partition_text(v)) for p, v in zip(partition_by, values)), rows


def partition_text(value: Any) -> PartitionValue:
    """A partition value as Delta's partitionValues and Hive folder names spell it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def hive_directory(partition: tuple[tuple[str, PartitionValue], ...]) -> str:
    """``name=value/...``: Hive-style folders, each value escaped to letters, digits and -_. so that
    it stays one folder (readers unescape %XX), a null as NULL_PARTITION; '' when unpartitioned."""
    return "/".join(
        f"{name}={NULL_PARTITION if v is None else quote(str(v), safe='-_.')}" for name, v in partition
    )
