"""What the Delta sink puts in the Delta log, read back through deltalake (not our own log reading)."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("deltalake")

from deltalake import DeltaTable, write_deltalake  # noqa: E402

from pyconsumer.records import decode_arrow  # noqa: E402
from pyconsumer.sinks import SchemaConflictError  # noqa: E402
from pyconsumer.sinks.delta import DeltaSink  # noqa: E402
from tests.recordsets import kp_v2  # noqa: E402

HOUR = 3_600_000


def records(topic: str, partition: int, first: int, timestamps: list[int]) -> pa.RecordBatch:
    recs = [(i, ts, b"k%d" % i, b"v%d" % i, []) for i, ts in enumerate(timestamps)]
    return decode_arrow(kp_v2(recs, base_offset=first), topic, partition, include_headers=True)


T0 = 1_700_000_000_000 - 1_700_000_000_000 % (24 * HOUR)   # 2023-11-14T00:00Z


def test_txn_actions_and_commit_metadata_hold_the_offsets(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path / "t"), records("a.b-c", 0, 0, [T0]).schema, app_id="job")
    version = sink.commit(sink.write([records("a.b-c", 0, 40, [T0] * 3), records("a.b-c", 2, 7, [T0])]),
                          {("a.b-c", 0): 43, ("a.b-c", 2): 8})
    table = DeltaTable(str(tmp_path / "t"))
    assert version == table.version() == 1
    assert table.transaction_version("job-a.b-c-0") == 43
    assert table.transaction_version("job-a.b-c-2") == 8
    info = table.history(1)[0]
    assert info["pyconsumer.app-id"] == "job"
    assert info["pyconsumer.offset.a.b-c.0"] == "43" and info["pyconsumer.offset.a.b-c.2"] == "8"
    # the next commit's metadata lists both partitions though it names only one
    sink.commit(sink.write([records("a.b-c", 0, 43, [T0])]), {("a.b-c", 0): 44})
    info = DeltaTable(str(tmp_path / "t")).history(1)[0]
    assert info["pyconsumer.offset.a.b-c.0"] == "44" and info["pyconsumer.offset.a.b-c.2"] == "8"


def test_partition_folders_values_and_stats(tmp_path: Path) -> None:
    b = records("orders", 1, 100, [T0 + 5, T0 + HOUR + 1, T0 + 25 * HOUR, T0 + 25 * HOUR + 999])
    sink = DeltaSink(str(tmp_path / "t"), b.schema, partition_by=["topic", "day(timestamp)", "hour(timestamp)"])
    sink.commit(sink.write([b]), {("orders", 1): 104})
    folders = sorted(str(p.parent.relative_to(tmp_path / "t")) for p in (tmp_path / "t").rglob("*.parquet"))
    assert folders == [
        "topic=orders/timestamp_date=2023-11-14/timestamp_hour=2023-11-14-00",
        "topic=orders/timestamp_date=2023-11-14/timestamp_hour=2023-11-14-01",
        "topic=orders/timestamp_date=2023-11-15/timestamp_hour=2023-11-15-01",
    ]
    table = DeltaTable(str(tmp_path / "t"))
    assert table.metadata().partition_columns == ["topic", "timestamp_date", "timestamp_hour"]
    got = table.to_pyarrow_table().sort_by("offset")
    assert got.column("timestamp_date").to_pylist() == [dt.date(2023, 11, 14)] * 2 + [dt.date(2023, 11, 15)] * 2
    assert got.column("timestamp_hour").to_pylist() == ["2023-11-14-00", "2023-11-14-01"] + ["2023-11-15-01"] * 2
    adds = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    last = max(adds, key=lambda a: a["num_records"])
    assert last["num_records"] == 2
    assert last["partition.timestamp_hour"] == "2023-11-15-01"
    assert last["min.offset"] == 102 and last["max.offset"] == 103
    assert last["null_count.key"] == 0 and last.get("null_count.headers") is None   # none for nested columns
    # millisecond bounds that still hold the microsecond values
    assert last["min.timestamp"] <= dt.datetime(2023, 11, 15, 1, tzinfo=dt.timezone.utc)
    assert last["max.timestamp"] >= dt.datetime(2023, 11, 15, 1, 0, 0, 999000, tzinfo=dt.timezone.utc)
    # a reader prunes on the partition values the sink gave
    pruned = table.to_pyarrow_table(filters=[("timestamp_date", "=", dt.date(2023, 11, 15))])
    assert sorted(pruned.column("offset").to_pylist()) == [102, 103]


def test_a_table_made_by_another_writer_is_used_when_it_agrees(tmp_path: Path) -> None:
    b = records("orders", 0, 0, [T0] * 3)
    write_deltalake(str(tmp_path / "t"), pa.Table.from_batches([b]).append_column(
        "timestamp_date", pa.array([dt.date(2023, 11, 14)] * 3)), partition_by=["timestamp_date"])
    sink = DeltaSink(str(tmp_path / "t"), b.schema, partition_by=["day(timestamp)"])
    assert sink.resume_offsets() == {}
    sink.commit(sink.write([records("orders", 0, 3, [T0])]), {("orders", 0): 4})
    assert sorted(DeltaTable(str(tmp_path / "t")).to_pyarrow_table().column("offset").to_pylist()) == [0, 1, 2, 3]
    with pytest.raises(SchemaConflictError, match=r"partitioned by \['timestamp_date'\], the sink by \['topic'"):
        DeltaSink(str(tmp_path / "t"), b.schema, partition_by=["topic", "day(timestamp)"])


def test_schema_conflict_names_the_column_and_both_types(tmp_path: Path) -> None:
    b = records("orders", 0, 0, [T0])
    DeltaSink(str(tmp_path / "t"), b.schema)
    other = pa.schema([f if f.name != "offset" else pa.field("offset", pa.string()) for f in b.schema])
    with pytest.raises(SchemaConflictError) as e:
        DeltaSink(str(tmp_path / "t"), other)
    assert str(e.value) == f"column 'offset': the Delta table at {tmp_path / 't'} has long, the batches have string"
    assert DeltaTable(str(tmp_path / "t")).version() == 0


def test_commit_with_offsets_only_advances_them(tmp_path: Path) -> None:
    """Records that were all transaction markers: no file, the offsets still move on."""
    b = records("orders", 0, 0, [T0])
    sink = DeltaSink(str(tmp_path / "t"), b.schema)
    assert sink.commit([], {("orders", 0): 17}) == 1
    assert sink.resume_offsets() == {("orders", 0): 17}
    assert sink.commit([], {("orders", 0): 17}) is None
    assert json.loads(DeltaTable(str(tmp_path / "t")).history(1)[0]["pyconsumer.offset.orders.0"]) == 17
