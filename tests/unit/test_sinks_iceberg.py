"""What the Iceberg sink puts in the table's metadata, read back through pyiceberg (SQLite catalog)."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyiceberg")

from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.table import TableProperties  # noqa: E402

from pyconsumer.records import decode_arrow  # noqa: E402
from pyconsumer.sinks import SchemaConflictError, SinkError  # noqa: E402
from pyconsumer.sinks.iceberg import IcebergSink  # noqa: E402
from tests.recordsets import kp_v2  # noqa: E402

HOUR = 3_600_000
T0 = 1_700_000_000_000 - 1_700_000_000_000 % (24 * HOUR)   # 2023-11-14T00:00Z


def records(topic: str, partition: int, first: int, timestamps: list[int]) -> pa.RecordBatch:
    recs = [(i, ts, b"k%d" % i, b"v%d" % i, []) for i, ts in enumerate(timestamps)]
    return decode_arrow(kp_v2(recs, base_offset=first), topic, partition, include_headers=True)


def load(tmp_path: Path, name: str = "kafka.events") -> Any:
    wh = tmp_path / "wh"
    return SqlCatalog("pyconsumer", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}").load_table(name)


def sink(tmp_path: Path, schema: pa.Schema, **kw: Any) -> IcebergSink:
    return IcebergSink("kafka.events", schema, warehouse=str(tmp_path / "wh"), **kw)


def test_snapshot_summary_holds_every_offset_reached(tmp_path: Path) -> None:
    s = sink(tmp_path, records("a.b", 0, 0, [T0]).schema, app_id="job")
    sid = s.commit(s.write([records("a.b", 0, 10, [T0] * 2), records("a.b", 3, 0, [T0])]),
                   {("a.b", 0): 12, ("a.b", 3): 1})
    s.commit(s.write([records("a.b", 0, 12, [T0])]), {("a.b", 0): 13})
    table = load(tmp_path)
    first, second = table.snapshots()
    assert first.snapshot_id == sid and second.parent_snapshot_id == sid
    props = second.summary.additional_properties
    assert props["pyconsumer.app-id"] == "job"
    assert props["pyconsumer.offset.a.b.0"] == "13" and props["pyconsumer.offset.a.b.3"] == "1"
    # pyiceberg's own retries stay as the catalog has them: the sink turns them off in memory only
    assert TableProperties.COMMIT_NUM_RETRIES not in table.properties


def test_resume_walks_back_past_another_writers_snapshots(tmp_path: Path) -> None:
    b = records("orders", 0, 0, [T0] * 4)
    s = sink(tmp_path, b.schema)
    s.commit(s.write([b]), {("orders", 0): 4})
    load(tmp_path).append(pa.Table.from_batches([records("orders", 9, 0, [T0])]),
                          snapshot_properties={"writer": "someone else"})
    assert s.resume_offsets() == {("orders", 0): 4}
    # and the rerun of what is in is still recognised
    assert s.commit(s.write([b]), {("orders", 0): 4}) is None
    assert len(load(tmp_path).scan().to_arrow()) == 5


@pytest.mark.parametrize("spec, values", [
    (["topic", "day(timestamp)"], [("orders", 19675), ("orders", 19676)]),
    (["hour(timestamp)", "partition"], [(472200, 1), (472201, 1), (472225, 1)]),
])
def test_partition_spec_and_values(tmp_path: Path, spec: list[str], values: list[tuple[Any, ...]]) -> None:
    b = records("orders", 1, 100, [T0 + 5, T0 + HOUR + 1, T0 + 25 * HOUR, T0 + 25 * HOUR + 999])
    s = sink(tmp_path, b.schema, partition_by=spec)
    s.commit(s.write([b]), {("orders", 1): 104})
    table = load(tmp_path)
    assert [str(f.transform) for f in table.spec().fields] == [
        {"topic": "identity", "partition": "identity", "day(timestamp)": "day", "hour(timestamp)": "hour"}[x]
        for x in spec]
    got = sorted(tuple(t.file.partition[i] for i in range(len(spec))) for t in table.scan().plan_files())
    assert got == values
    # a reader prunes on them
    day = table.scan(row_filter="timestamp >= '2023-11-15T00:00:00+00:00'").to_arrow()
    assert sorted(day.column("offset").to_pylist()) == [102, 103]
    assert day.column("timestamp").to_pylist()[0].tzinfo is not None


def test_folders_are_the_specs_human_paths(tmp_path: Path) -> None:
    b = records("orders", 1, 0, [T0 + 3 * HOUR])
    s = sink(tmp_path, b.schema, partition_by=["topic", "day(timestamp)"])
    (f,) = s.write([b])
    assert f.path.startswith("data/topic=orders/timestamp_date=2023-11-14/part-")


def test_schema_conflict_names_the_column_and_both_types(tmp_path: Path) -> None:
    b = records("orders", 0, 0, [T0])
    sink(tmp_path, b.schema)
    other = pa.schema([f if f.name != "partition" else pa.field("partition", pa.string()) for f in b.schema])
    with pytest.raises(SchemaConflictError) as e:
        sink(tmp_path, other)
    assert str(e.value) == "column 'partition': the Iceberg table kafka.events has int, the batches have string"
    with pytest.raises(SchemaConflictError, match=r"is partitioned by nothing, the sink by \['topic=identity\(topic\)'\]"):
        sink(tmp_path, b.schema, partition_by=["topic"])
    assert load(tmp_path).snapshots() == []


def test_two_time_transforms_of_one_column_are_refused_with_icebergs_reason(tmp_path: Path) -> None:
    b = records("orders", 0, 0, [T0])
    with pytest.raises(SinkError, match="timestamp_hour conflicts with timestamp_date"):
        sink(tmp_path, b.schema, partition_by=["day(timestamp)", "hour(timestamp)"])


def test_a_catalog_that_cannot_be_opened_fails_first(tmp_path: Path) -> None:
    (tmp_path / "wh").mkdir()
    b = records("orders", 0, 0, [T0])
    with pytest.raises(SinkError, match=r"the Iceberg catalog sqlite:////nonexistent-dir/c.db cannot open kafka.events"):
        sink(tmp_path, b.schema, catalog_uri="sqlite:////nonexistent-dir/c.db")


def test_timestamps_and_offsets_only_commit(tmp_path: Path) -> None:
    b = records("orders", 0, 5, [T0 + 1])
    s = sink(tmp_path, b.schema)
    assert s.commit([], {("orders", 0): 5}) is not None
    assert s.commit(s.write([b]), {("orders", 0): 6}) is not None
    got = load(tmp_path).scan().to_arrow()
    assert got.column("timestamp").to_pylist() == [dt.datetime(2023, 11, 14, 0, 0, 0, 1000, tzinfo=dt.timezone.utc)]
    assert s.resume_offsets() == {("orders", 0): 6}


def test_data_files_keep_bounds_for_distinct_keys_and_values(tmp_path: Path) -> None:
    """Iceberg's file metrics come from the Parquet footers: the Iceberg sink keeps min/max there
    for mostly-distinct binary columns too (the other sinks leave them out of the footer)."""
    batch = records("t", 0, 0, [T0] * 500)
    s = sink(tmp_path, batch.schema)
    s.commit(s.write([batch]), {("t", 0): 500})
    table = load(tmp_path)
    ids = {name: table.schema().find_field(name).field_id for name in ("key", "value", "offset")}
    [task] = table.scan().plan_files()
    assert set(ids.values()) <= set(task.file.lower_bounds) and set(ids.values()) <= set(task.file.upper_bounds)
    assert task.file.lower_bounds[ids["key"]] == b"k0" and task.file.upper_bounds[ids["key"]] == b"k99"
