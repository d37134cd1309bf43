"""An Apache Iceberg table sink (pyiceberg): data files from Arrow, committed with their Kafka offsets.

The catalog defaults to pyiceberg's SQL catalog on a SQLite file in the warehouse. Each commit is one
append snapshot whose summary holds every offset this sink reached (``pyconsumer.offset.<topic>.<partition>``
= the next offset to read) and its app id; resuming reads the latest such snapshot, walking back past
other writers' snapshots.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException
from pyiceberg.io.pyarrow import parquet_file_to_data_file, pyarrow_to_schema
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table, TableProperties
from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform, Transform
from pyiceberg.typedef import Record

from pyconsumer.sinks.base import (
    DEFAULT_TARGET_FILE_SIZE,
    DataFile,
    PartitionValue,
    SchemaConflictError,
    SinkError,
    TopicPartitionKey,
)
from pyconsumer.sinks.files import FileRoller, check_writable, delete_files, resolve
from pyconsumer.sinks.offsets import APP_ID_KEY, offset_properties, parse_offset_properties, should_commit
from pyconsumer.sinks.partitioning import PartitionBy, checked_partitioning, split_rows
from pyconsumer.sinks.schema import check_batch_schema

_US_PER_HOUR = 3_600_000_000


class IcebergSink:
    """The Iceberg table ``namespace.name`` in a catalog, created when missing with schema and the partitioning.

    warehouse: a path or URI where new tables go; catalog_uri: the SQL catalog's database
    (default ``sqlite:///<warehouse>/catalog.db``). Holds settings only, so that it pickles into Spark tasks.
    """

    commit_noun = "snapshot"
    format_name = "Iceberg"

    def __init__(
        self,
        table: str,
        schema: pa.Schema,
        *,
        warehouse: str,
        catalog_uri: str | None = None,
        catalog_name: str = "pyconsumer",
        app_id: str = "pyconsumer",
        partition_by: Sequence[str | PartitionBy] = (),
        target_file_size: int = DEFAULT_TARGET_FILE_SIZE,
        max_commit_attempts: int = 20,
    ) -> None:
        if "." not in table:
            raise ValueError(f"Iceberg table {table!r}: give it as namespace.name")
        self.table_name = table
        self.schema = schema
        self.app_id = app_id
        self.target_file_size = target_file_size
        self.max_commit_attempts = max_commit_attempts
        self.partition_by = checked_partitioning(partition_by, schema)
        fs, path = resolve(warehouse)
        check_writable(fs, path, warehouse)
        self.warehouse = warehouse if "://" in warehouse else f"file://{path}"
        self.catalog_uri = catalog_uri or f"sqlite:///{path}/catalog.db"
        self.catalog_name = catalog_name
        self._open_or_create()

    def catalog(self) -> Catalog:
        return SqlCatalog(self.catalog_name, uri=self.catalog_uri, warehouse=self.warehouse)

    def _load(self) -> Table:
        return self.catalog().load_table(self.table_name)

    def _open_or_create(self) -> None:
        try:
            catalog = self.catalog()
            namespace = self.table_name.rpartition(".")[0]
            catalog.create_namespace_if_not_exists(namespace)
            if not catalog.table_exists(self.table_name):
                self._create(catalog)
            table = catalog.load_table(self.table_name)
        except SinkError:
            raise
        except Exception as e:  # the catalog's driver raises its own kinds (SQLAlchemy's, OS errors)
            raise SinkError(f"the Iceberg catalog {self.catalog_uri} cannot open {self.table_name}: {e}") from e
        check_schema(table, self.schema)
        have = _spec_text(table.spec(), table)
        want = [f"{p.name}={self._transform(p)}({'.'.join(p.source)})" for p in self.partition_by]
        if have != want:
            raise SchemaConflictError(
                f"the Iceberg table {self.table_name} is partitioned by {have or 'nothing'}, "
                f"the sink by {want or 'nothing'}"
            )

    def _create(self, catalog: Catalog) -> None:
        # one commit creates the table with its partition spec and name mapping: never half made
        tx = catalog.create_table_transaction(self.table_name, schema=self.schema)
        with tx.update_spec() as spec:
            for p in self.partition_by:
                spec.add_field(".".join(p.source), self._transform(p), p.name)
        # the data files carry no Iceberg field ids: readers match their columns by name
        mapping = tx.table_metadata.schema().name_mapping.model_dump_json()
        tx.set_properties({TableProperties.DEFAULT_NAME_MAPPING: mapping})
        try:
            tx.commit_transaction()
        except Exception:
            if not catalog.table_exists(self.table_name):   # else another writer made it first
                raise

    @staticmethod
    def _transform(p: PartitionBy) -> Transform[Any, Any]:
        return {"identity": IdentityTransform(), "day": DayTransform(), "hour": HourTransform()}[p.transform]

    def resume_offsets(self) -> dict[TopicPartitionKey, int]:
        return self._held(self._load())

    def _held(self, table: Table) -> dict[TopicPartitionKey, int]:
        snapshot = table.current_snapshot()
        while snapshot is not None:
            props = snapshot.summary.additional_properties if snapshot.summary else {}
            if props.get(APP_ID_KEY) == self.app_id:
                return parse_offset_properties(props)
            parent = snapshot.parent_snapshot_id
            snapshot = table.snapshot_by_id(parent) if parent is not None else None
        return {}

    def write(self, batches: Iterable[pa.RecordBatch]) -> list[DataFile]:
        table = self._load()
        spec, iceberg_schema = table.spec(), table.schema()
        fs, root = resolve(table.location())

        def directory(partition: tuple[tuple[str, PartitionValue], ...]) -> str:
            if not partition:
                return "data"
            return "data/" + spec.partition_to_path(Record(*(v for _, v in partition)), iceberg_schema)

        # Iceberg's file metrics (bounds, null counts) are read from the footers: all kept
        roller = FileRoller(fs, root, self.schema, self.target_file_size, directory=directory,
                            footer_bounds=True)
        try:
            for batch in batches:
                check_batch_schema(self.schema, batch.schema, self.table_name)
                keys = [_iceberg_values(p, batch) for p in self.partition_by]
                for values, rows in split_rows(batch, keys):
                    roller.add(tuple((p.name, v) for p, v in zip(self.partition_by, values)), rows)
            return roller.finish()
        except BaseException:
            roller.abort()
            raise

    def commit(self, files: Sequence[DataFile], offsets: Mapping[TopicPartitionKey, int]) -> int | None:
        last: Exception | None = None
        for attempt in range(self.max_commit_attempts):
            table = self._load()
            # the offsets are read again on every attempt: a concurrent writer may have committed them
            held = self._held(table)
            if not should_commit(held, offsets, files):
                fs, root = resolve(table.location())
                delete_files(fs, [f"{root}/{f.path}" for f in files])
                return None
            tx = _without_retries(table).transaction()
            props = offset_properties(self.app_id, {**held, **offsets})
            with tx.update_snapshot(snapshot_properties=props).fast_append() as append:
                for f in files:
                    data_file = parquet_file_to_data_file(table.io, table.metadata, f"{table.location()}/{f.path}")
                    # from the rows themselves: the footer's bounds cannot give a nested field's value
                    # (partition is field 3 of the record, and has no setter of its own)
                    assert data_file[3] is data_file.partition
                    data_file[3] = Record(*(v for _, v in f.partition))
                    append.append_data_file(data_file)
            try:
                committed = tx.commit_transaction()
            except (CommitFailedException, CommitStateUnknownException) as e:
                last = e
                time.sleep(min(0.5, 0.01 * 2**attempt))
                continue
            snapshot = committed.current_snapshot()
            assert snapshot is not None
            return snapshot.snapshot_id
        raise SinkError(
            f"could not commit to the Iceberg table {self.table_name} after {self.max_commit_attempts} "
            f"attempts (concurrent writers): {last}"
        )


def _without_retries(table: Table) -> Table:
    """The table with pyiceberg's own commit retries off, in memory only (the catalog's copy is untouched).

    Its retry would put the snapshot on top of another writer's without re-reading the offsets, so a
    concurrent commit of the same offsets could land twice; the sink retries itself, re-checking them.
    """
    props = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
    metadata = table.metadata.model_copy(update={"properties": props})
    return Table(table.name(), metadata, table.metadata_location, table.io, table.catalog)


def _iceberg_values(p: PartitionBy, batch: pa.RecordBatch) -> pa.Array:
    """The partition values as Iceberg keeps them: the value itself, or days / hours since the epoch."""
    array = p.source_array(batch)
    if p.transform == "day":
        return pc.cast(pc.cast(p.delta_values(batch), pa.date32()), pa.int32())
    if p.transform == "hour":
        micros = pc.cast(pc.floor_temporal(array, unit="hour"), pa.int64())
        return pc.cast(pc.divide(micros, _US_PER_HOUR), pa.int32())
    return array


def _spec_text(spec: PartitionSpec, table: Table) -> list[str]:
    schema = table.schema()
    return [f"{f.name}={f.transform}({schema.find_column_name(f.source_id)})" for f in spec.fields]


def check_schema(table: Table, batches: pa.Schema) -> None:
    """Every column of the batches in the table with the same Iceberg type, and no table column they lack."""
    have = table.schema()
    missing = [n for n in batches.names if n not in {f.name for f in have.fields}]
    if missing:
        raise SchemaConflictError(
            f"the Iceberg table {_name(table)} has no column {missing[0]!r} "
            f"({batches.field(missing[0]).type} in the batches)"
        )
    extra = [f.name for f in have.fields if f.name not in batches.names]
    if extra:
        raise SchemaConflictError(f"the Iceberg table {_name(table)} has columns the batches lack: {', '.join(extra)}")
    for field in batches:
        try:
            want = pyarrow_to_schema(pa.schema([field]), name_mapping=have.name_mapping).fields[0].field_type
        except (ValueError, TypeError) as e:
            raise SchemaConflictError(
                f"column {field.name!r}: the Iceberg table {_name(table)} has "
                f"{have.find_field(field.name).field_type}, the batches have {field.type} ({e})"
            ) from e
        got = have.find_field(field.name).field_type
        if want != got:
            raise SchemaConflictError(
                f"column {field.name!r}: the Iceberg table {_name(table)} has {got}, the batches have {want}"
            )


def _name(table: Table) -> str:
    return ".".join(table.name())
