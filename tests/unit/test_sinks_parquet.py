"""The Parquet sink's own log and files: what a log entry holds, the put-if-absent commit and its lost
races, a crash between the log entry and the renames (rolled forward), stale staging removed, and
that plain readers of the folder (pyarrow.dataset) see exactly the committed files.

A crash is simulated by a BaseException raised at the step it stands for: nothing after it runs, as
after a kill -9 (the kill -9 itself is in tests/spark/test_ingest_tables_parquet.py)."""
from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from pyconsumer.records import decode_arrow
from pyconsumer.sinks import DataFile, LocationError, OffsetConflictError, SchemaConflictError, SinkError, TableSink
from pyconsumer.sinks import parquet as parquet_mod
from pyconsumer.sinks.parquet import LOG_DIR, STAGING_DIR, ParquetSink, committed_files, read_parquet_table
from tests.recordsets import kp_v2

HOUR = 3_600_000
T0 = 1_700_000_000_000 - 1_700_000_000_000 % (24 * HOUR)   # 2023-11-14T00:00Z


def records(topic: str, partition: int, first: int, n: int, *, ts: Sequence[int] | None = None) -> pa.RecordBatch:
    stamps = list(ts) if ts is not None else [T0 + i for i in range(n)]
    recs = [(i, stamp, b"k%d" % (first + i), b"v%d" % (first + i), [("h", b"x")]) for i, stamp in enumerate(stamps)]
    return decode_arrow(kp_v2(recs, base_offset=first), topic, partition, include_headers=True)


SCHEMA = records("orders", 0, 0, 1).schema


class Crash(BaseException):
    """The process dies here (a BaseException: no handler of the sink's takes it)."""


def offsets_of(t: pa.Table) -> list[tuple[str, int, int]]:
    if t.num_rows == 0:              # a plain reader of an empty folder finds no columns
        return []
    return sorted(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(), t.column("offset").to_pylist()))


def want(topic: str, partition: int, first: int, n: int) -> list[tuple[str, int, int]]:
    return [(topic, partition, o) for o in range(first, first + n)]


def plain(table: Path) -> pa.Table:
    """The folder as any reader of a Parquet dataset reads it (pyarrow's read_table: Hive partitions)."""
    return pq.read_table(str(table))


def log(table: Path, version: int) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads((table / LOG_DIR / f"{version:020d}.json").read_text())
    return entry


def staged(table: Path) -> list[str]:
    return sorted(str(p.relative_to(table)) for p in (table / STAGING_DIR).rglob("*.parquet"))


def test_the_log_entries_hold_schema_files_and_every_offset(tmp_path: Path) -> None:
    table = tmp_path / "t"
    sink = ParquetSink(str(table), SCHEMA, app_id="job", partition_by=["partition"])
    assert isinstance(sink, TableSink) and sink.commit_noun == "log version"
    assert sorted(os.listdir(table / LOG_DIR)) == ["00000000000000000000.json"]
    first = log(table, 0)
    assert first["operation"] == "create" and first["version"] == 0 and first["files"] == []
    assert first["offsets"] == {} and first["app_id"] == "job"
    assert first["partition_by"] == [{"name": "partition", "source": ["partition"], "transform": "identity"}]
    import base64
    assert pa.ipc.read_schema(pa.py_buffer(base64.b64decode(first["schema"]))).equals(SCHEMA)

    files = sink.write([records("a.b", 0, 40, 3), records("a.b", 2, 7, 1)])
    assert all(f.path.startswith(f"{STAGING_DIR}/") for f in files)
    before = time.time() * 1000
    assert sink.commit(files, {("a.b", 0): 43, ("a.b", 2): 8}) == 1
    entry = log(table, 1)
    assert entry["version"] == 1 and entry["operation"] == "append" and entry["app_id"] == "job"
    assert before - 1000 <= entry["timestamp"] <= time.time() * 1000
    assert entry["offsets"] == {"job": {"a.b": {"0": 43, "2": 8}}}
    by_path = {f["path"]: f for f in entry["files"]}
    assert sorted(p.rpartition("/")[0] for p in by_path) == ["partition=0", "partition=2"]
    one = next(f for f in entry["files"] if f["path"].startswith("partition=0/"))
    assert one["rows"] == 3 and one["partition"] == [["partition", "0"]]
    assert one["offsets"] == [{"topic": "a.b", "partition": 0, "first": 40, "last": 42}]
    assert one["staged"].startswith(f"{STAGING_DIR}/") and one["staged"].endswith(one["path"])
    assert one["size"] == (table / one["path"]).stat().st_size
    assert not (table / one["staged"]).exists()
    # the final paths, the staging folders gone
    assert sorted(committed_files(str(table))) == sorted(str(table / p) for p in by_path)
    assert os.listdir(table / STAGING_DIR) == []

    # the next entry names one partition; its offsets are those of every partition, and of every app
    sink.commit(sink.write([records("a.b", 0, 43, 1)]), {("a.b", 0): 44})
    other = ParquetSink(str(table), SCHEMA, app_id="other", partition_by=["partition"])
    other.commit(other.write([records("c", 0, 0, 2)]), {("c", 0): 2})
    assert log(table, 3)["offsets"] == {"job": {"a.b": {"0": 44, "2": 8}}, "other": {"c": {"0": 2}}}
    assert sink.resume_offsets() == {("a.b", 0): 44, ("a.b", 2): 8}
    assert other.resume_offsets() == {("c", 0): 2}
    # resuming reads the newest entry only
    (table / LOG_DIR / f"{1:020d}.json").write_text("not read")
    assert sink.resume_offsets() == {("a.b", 0): 44, ("a.b", 2): 8}


def test_a_commit_links_a_whole_entry_and_never_replaces_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "t"
    sink = ParquetSink(str(table), SCHEMA)
    seen: list[tuple[dict[str, Any], bool]] = []
    real_link = os.link

    def link(src: Any, dst: Any) -> None:
        # the entry is whole before its name exists
        seen.append((json.loads(Path(src).read_text()), Path(dst).exists()))
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    assert sink.commit(sink.write([records("o", 0, 0, 5)]), {("o", 0): 5}) == 1
    assert [(e["version"], exists) for e, exists in seen] == [(1, False)]
    assert sorted(os.listdir(table / LOG_DIR)) == [f"{v:020d}.json" for v in (0, 1)]   # no temporary left

    # a file system without hard links: a clear refusal, nothing committed, nothing left in the log
    def no_links(src: Any, dst: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    files = sink.write([records("o", 0, 5, 5)])
    with pytest.raises(SinkError, match=r"cannot create the log entry .*00000000000000000002\.json: .*"
                                        r"need a file system with hard links .*use delta or iceberg"):
        sink.commit(files, {("o", 0): 10})
    assert sorted(os.listdir(table / LOG_DIR)) == [f"{v:020d}.json" for v in (0, 1)]
    monkeypatch.undo()
    assert offsets_of(read_parquet_table(str(table))) == want("o", 0, 0, 5)
    assert sink.commit(files, {("o", 0): 10}) == 2            # the staged files are still there
    assert offsets_of(read_parquet_table(str(table))) == want("o", 0, 0, 10)


@pytest.mark.parametrize("winner, outcome", [
    ("other-partition", "next version"), ("same-offsets", "none"), ("overlapping", "conflict")])
def test_a_lost_race_reads_the_log_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         winner: str, outcome: str) -> None:
    """Another writer takes the version this one is linking: it reads the winner's entry and goes on after
    it (other partitions), skips (the same offsets: a rerun) or refuses (overlapping offsets)."""
    table = tmp_path / "t"
    mine, other = ParquetSink(str(table), SCHEMA), ParquetSink(str(table), SCHEMA)
    my_files = mine.write([records("o", 0, 0, 10)])
    other_batch, other_offsets = {
        "other-partition": (records("o", 1, 0, 10), {("o", 1): 10}),
        "same-offsets": (records("o", 0, 0, 10), {("o", 0): 10}),
        "overlapping": (records("o", 0, 0, 5), {("o", 0): 5}),
    }[winner]
    other_files = other.write([other_batch])
    real = parquet_mod._Log.put_if_absent
    tried: list[int] = []

    inside: list[bool] = []

    def racing(log: Any, version: int, entry: dict[str, Any]) -> bool:
        if inside:                                      # the other writer's own commit
            return real(log, version, entry)
        tried.append(version)
        if len(tried) == 1:
            inside.append(True)
            assert other.commit(other_files, other_offsets) == version      # the other wins this version
            inside.clear()
        return real(log, version, entry)

    monkeypatch.setattr(parquet_mod._Log, "put_if_absent", racing)
    if outcome == "conflict":
        with pytest.raises(OffsetConflictError, match=r"offsets from 0, but the table already holds them up to 5"):
            mine.commit(my_files, {("o", 0): 10})
        assert tried == [1]
        assert offsets_of(read_parquet_table(str(table))) == want("o", 0, 0, 5)
        return
    result = mine.commit(my_files, {("o", 0): 10})
    if outcome == "none":
        assert result is None and tried == [1]
        assert staged(table) == []                     # the rerun's files deleted
        assert offsets_of(read_parquet_table(str(table))) == want("o", 0, 0, 10)
    else:
        assert result == 2 and tried == [1, 2]
        assert log(table, 2)["offsets"] == {"pyconsumer": {"o": {"0": 10, "1": 10}}}
        assert offsets_of(read_parquet_table(str(table))) == want("o", 0, 0, 10) + want("o", 1, 0, 10)
    assert offsets_of(plain(table)) == offsets_of(read_parquet_table(str(table)))


def test_a_rerun_returns_none_and_an_overlap_raises(tmp_path: Path) -> None:
    table = tmp_path / "t"
    sink = ParquetSink(str(table), SCHEMA)
    assert sink.commit(sink.write([records("o", 0, 0, 20)]), {("o", 0): 20}) == 1
    again = sink.write([records("o", 0, 0, 20)])
    assert sink.commit(again, {("o", 0): 20}) is None
    assert staged(table) == [] and os.listdir(table / STAGING_DIR) == []
    assert sorted(os.listdir(table / LOG_DIR)) == [f"{v:020d}.json" for v in (0, 1)]
    with pytest.raises(OffsetConflictError, match=r"o\[0\] offsets from 10, but the table already holds them up to 20"):
        sink.commit(sink.write([records("o", 0, 10, 20)]), {("o", 0): 30})
    with pytest.raises(OffsetConflictError, match=r"already holds offsets up to o\[0\]=20 but not o\[1\]=none"):
        sink.commit(sink.write([records("o", 1, 0, 3)]), {("o", 0): 20, ("o", 1): 3})
    assert offsets_of(read_parquet_table(str(table))) == want("o", 0, 0, 20)
    assert offsets_of(plain(table)) == want("o", 0, 0, 20)
    # offsets alone (records that were all transaction markers) move on without a file
    assert sink.commit([], {("o", 0): 25}) == 2
    assert sink.resume_offsets() == {("o", 0): 25} and log(table, 2)["files"] == []


@pytest.mark.parametrize("renamed_before_crash", [0, 1])
def test_a_crash_between_the_log_entry_and_the_renames_is_rolled_forward(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renamed_before_crash: int) -> None:
    table = tmp_path / "t"
    sink = ParquetSink(str(table), SCHEMA, partition_by=["partition"])
    sink.commit(sink.write([records("o", 0, 0, 4)]), {("o", 0): 4})
    files = sink.write([records("o", 0, 4, 6), records("o", 1, 0, 3)])
    assert len(files) == 2
    real_replace = os.replace
    renames: list[str] = []

    def crashing(src: Any, dst: Any) -> None:
        if len(renames) == renamed_before_crash:
            raise Crash()
        renames.append(str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crashing)
    with pytest.raises(Crash):
        sink.commit(files, {("o", 0): 10, ("o", 1): 3})
    monkeypatch.undo()
    # committed (the log says so), its files not all where plain readers look
    assert log(table, 2)["offsets"] == {"pyconsumer": {"o": {"0": 10, "1": 3}}}
    assert len(staged(table)) == 2 - renamed_before_crash
    # plain readers see the first commit and the files renamed before the crash (the limit of renames)
    moved = sum(f.rows for f in files if any(r.endswith(f.path.split("/", 2)[2]) for r in renames))
    assert len(renames) == renamed_before_crash and len(offsets_of(plain(table))) == 4 + moved
    everything = want("o", 0, 0, 10) + want("o", 1, 0, 3)
    # a reader that cannot write there reads the staged files where they are
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(PermissionError(13, "read-only")))
    assert offsets_of(read_parquet_table(str(table))) == everything
    assert len(staged(table)) == 2 - renamed_before_crash
    monkeypatch.undo()
    # the next open completes it
    reopened = ParquetSink(str(table), SCHEMA, partition_by=["partition"])
    assert staged(table) == [] and os.listdir(table / STAGING_DIR) == []
    assert offsets_of(plain(table)) == everything
    assert reopened.resume_offsets() == {("o", 0): 10, ("o", 1): 3}
    assert reopened.commit(reopened.write([records("o", 0, 0, 10)]), {("o", 0): 10}) is None


def test_the_next_commit_rolls_the_crashed_one_forward_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that crashed after its log entry and a writer already open: the second's commit moves
    the first's files before linking its own entry, so only the newest entry ever has staged files."""
    table = tmp_path / "t"
    crashed, survivor = ParquetSink(str(table), SCHEMA), ParquetSink(str(table), SCHEMA)
    real = parquet_mod.roll_forward

    def crash_after_link(root: str, version: int, entry: dict[str, Any], location: str) -> None:
        if version == 1:
            raise Crash()
        real(root, version, entry, location)

    monkeypatch.setattr(parquet_mod, "roll_forward", crash_after_link)
    with pytest.raises(Crash):
        crashed.commit(crashed.write([records("o", 0, 0, 5)]), {("o", 0): 5})
    monkeypatch.undo()
    assert len(staged(table)) == 1 and offsets_of(plain(table)) == []
    moved: list[int] = []

    def watching(root: str, version: int, entry: dict[str, Any], location: str) -> None:
        moved.append(version)
        real(root, version, entry, location)

    monkeypatch.setattr(parquet_mod, "roll_forward", watching)
    assert survivor.commit(survivor.write([records("o", 1, 0, 5)]), {("o", 1): 5}) == 2
    assert moved == [1, 2]
    assert staged(table) == []
    assert offsets_of(plain(table)) == want("o", 0, 0, 5) + want("o", 1, 0, 5)


def test_stale_staging_is_removed_and_a_live_one_kept(tmp_path: Path) -> None:
    table = tmp_path / "t"
    sink = ParquetSink(str(table), SCHEMA, partition_by=["partition"])
    dead = sink.write([records("o", 0, 0, 5)])           # a run that died before its commit
    live = sink.write([records("o", 0, 0, 5)])           # a concurrent run, not committed yet
    two_days_ago = time.time() - 2 * 86400
    dead_folder = table / "/".join(dead[0].path.split("/")[:2])
    for p in [*dead_folder.rglob("*"), dead_folder]:
        os.utime(p, (two_days_ago, two_days_ago))
    ParquetSink(str(table), SCHEMA, partition_by=["partition"])
    assert not dead_folder.exists()
    assert staged(table) == sorted(f.path for f in live)
    # the age is a parameter
    old = time.time() - 120
    for p in (table / STAGING_DIR).rglob("*"):
        os.utime(p, (old, old))
    kept = ParquetSink(str(table), SCHEMA, partition_by=["partition"], stale_staging_seconds=3600)
    assert staged(table) == sorted(f.path for f in live)
    # a commit touches its files (fresh again) before anything else
    assert kept.commit(live, {("o", 0): 5}) == 1
    assert offsets_of(read_parquet_table(str(table))) == want("o", 0, 0, 5)
    # files removed before their commit: the commit fails before writing an entry
    late = sink.write([records("o", 0, 5, 5)])
    for p in (table / STAGING_DIR).rglob("*"):
        os.utime(p, (old, old))
    ParquetSink(str(table), SCHEMA, partition_by=["partition"], stale_staging_seconds=60).resume_offsets()
    with pytest.raises(SinkError, match=r"is gone from the Parquet table .*nothing was committed"):
        sink.commit(late, {("o", 0): 10})
    assert sorted(os.listdir(table / LOG_DIR)) == [f"{v:020d}.json" for v in (0, 1)]


def test_a_schema_or_partitioning_conflict_names_it(tmp_path: Path) -> None:
    table = tmp_path / "t"
    ParquetSink(str(table), SCHEMA, partition_by=["day(timestamp)"])
    other = pa.schema([f if f.name != "offset" else pa.field("offset", pa.string()) for f in SCHEMA])
    with pytest.raises(SchemaConflictError) as e:
        ParquetSink(str(table), other, partition_by=["day(timestamp)"])
    assert str(e.value) == f"column 'offset': the table at {table} takes int64, the sink's schema has string"
    with pytest.raises(SchemaConflictError, match=r"has no column 'headers'"):
        ParquetSink(str(table), SCHEMA.remove(SCHEMA.get_field_index("headers")), partition_by=["day(timestamp)"])
    with pytest.raises(SchemaConflictError, match=r"partitioned by \['timestamp_date'\], the sink by \['topic'\]"):
        ParquetSink(str(table), SCHEMA, partition_by=["topic"])
    with pytest.raises(SchemaConflictError, match=r"partitioned by \['timestamp_date'\], the sink by nothing"):
        ParquetSink(str(table), SCHEMA)
    assert sorted(os.listdir(table / LOG_DIR)) == [f"{0:020d}.json"]
    assert list(table.rglob("*.parquet")) == []


def test_locations_that_cannot_hold_a_table_fail_first(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    with pytest.raises(LocationError, match="cannot write the table location .*afile"):
        ParquetSink(str(tmp_path / "afile"), SCHEMA)
    if os.geteuid() != 0:                               # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(LocationError, match="cannot write the table location"):
            ParquetSink(str(locked / "t"), SCHEMA)
    with pytest.raises(LocationError, match=r"s3://bucket/t .*local or mounted path.*delta or iceberg"):
        ParquetSink("s3://bucket/t", SCHEMA)
    # a dataset without a log (Spark's own writer's, say): its files would be in no commit
    old = tmp_path / "dataset"
    old.mkdir()
    pq.write_table(pa.table({"x": [1]}), old / "part-0.parquet")
    (old / "_SUCCESS").write_text("")
    with pytest.raises(SinkError, match=r"holds _SUCCESS, part-0.parquet but no commit log"):
        ParquetSink(str(old), SCHEMA)
    assert sorted(os.listdir(old)) == ["_SUCCESS", "part-0.parquet"]
    with pytest.raises(SinkError, match="no commit log"):
        committed_files(str(old))
    # a file:// URI is a local path
    sink = ParquetSink(f"file://{tmp_path / 'uri'}", SCHEMA)
    sink.commit(sink.write([records("o", 0, 0, 2)]), {("o", 0): 2})
    assert offsets_of(read_parquet_table(str(tmp_path / "uri"))) == want("o", 0, 0, 2)


def test_partition_folders_in_the_hive_layout(tmp_path: Path) -> None:
    table = tmp_path / "t"
    b = records("orders", 1, 100, 4, ts=[T0 + 5, T0 + HOUR + 1, T0 + 25 * HOUR, T0 + 25 * HOUR + 999])
    sink = ParquetSink(str(table), b.schema, partition_by=["topic", "day(timestamp)", "hour(timestamp)"])
    sink.commit(sink.write([b]), {("orders", 1): 104})
    folders = sorted(str(Path(p).parent.relative_to(table)) for p in committed_files(str(table)))
    assert folders == [
        "topic=orders/timestamp_date=2023-11-14/timestamp_hour=2023-11-14-00",
        "topic=orders/timestamp_date=2023-11-14/timestamp_hour=2023-11-14-01",
        "topic=orders/timestamp_date=2023-11-15/timestamp_hour=2023-11-15-01",
    ]
    # the partition columns are in the folder names only, as Spark's own writer has them
    one = pq.ParquetFile(committed_files(str(table))[0]).schema_arrow
    assert one.names == [n for n in SCHEMA.names if n != "topic"]
    got = read_parquet_table(str(table)).sort_by("offset")
    assert got.schema.names == [*SCHEMA.names, "timestamp_date", "timestamp_hour"]
    assert got.schema.field("timestamp_date").type == pa.date32() and got.schema.field("topic").type == pa.string()
    assert got.column("topic").to_pylist() == ["orders"] * 4
    assert got.column("timestamp_date").to_pylist() == [dt.date(2023, 11, 14)] * 2 + [dt.date(2023, 11, 15)] * 2
    assert got.column("timestamp_hour").to_pylist() == ["2023-11-14-00", "2023-11-14-01"] + ["2023-11-15-01"] * 2
    # plain readers that discover Hive partitions read the same rows (the dates as the names spell them)
    for rows in (pq.read_table(str(table)), ds.dataset(str(table), format="parquet", partitioning="hive").to_table()):
        rows = rows.sort_by("offset")
        assert rows.select(SCHEMA.names).to_pylist() == got.select(SCHEMA.names).to_pylist()
        assert rows.column("timestamp_date").to_pylist() == [str(d) for d in got.column("timestamp_date").to_pylist()]
    pruned = ds.dataset(str(table), format="parquet", partitioning="hive").to_table(
        filter=ds.field("timestamp_hour") == "2023-11-15-01")
    assert sorted(pruned.column("offset").to_pylist()) == [102, 103]
    entry = log(table, 1)
    assert sorted(tuple(map(tuple, f["partition"])) for f in entry["files"])[0] == (
        ("topic", "orders"), ("timestamp_date", "2023-11-14"), ("timestamp_hour", "2023-11-14-00"))


def test_a_struct_field_partition_with_nulls_and_odd_values(tmp_path: Path) -> None:
    value = pa.struct([("country", pa.string())])
    schema = pa.schema([f if f.name != "value" else pa.field("value", value) for f in SCHEMA])
    b = records("o", 0, 0, 3)
    b = b.set_column(b.schema.get_field_index("value"), "value",
                     pa.array([{"country": "São Paulo/x"}, None, {"country": "FR"}], value))
    sink = ParquetSink(str(tmp_path / "t"), schema, partition_by=["value.country"])
    sink.commit(sink.write([b]), {("o", 0): 3})
    folders = sorted(Path(p).parent.name for p in committed_files(str(tmp_path / "t")))
    assert folders == ["value_country=FR", "value_country=S%C3%A3o%20Paulo%2Fx",
                       "value_country=__HIVE_DEFAULT_PARTITION__"]
    # (pyarrow's sort_by cannot take read_table's dictionary column with a null: sorted here)
    got = sorted(plain(tmp_path / "t").to_pylist(), key=lambda r: r["offset"])
    assert [r["value_country"] for r in got] == ["São Paulo/x", None, "FR"]
    exact = read_parquet_table(str(tmp_path / "t")).sort_by("offset")
    assert exact.column("value_country").to_pylist() == ["São Paulo/x", None, "FR"]
    assert exact.column("value").to_pylist() == [{"country": "São Paulo/x"}, None, {"country": "FR"}]


def test_files_roll_at_a_small_target_size(tmp_path: Path) -> None:
    table = tmp_path / "t"
    sink = ParquetSink(str(table), SCHEMA, partition_by=["partition"], target_file_size=8 * 1024)
    files = sink.write([records("o", p, i * 500, 500) for i in range(4) for p in (0, 1)])
    for p in (0, 1):
        mine = [f for f in files if dict(f.partition)["partition"] == str(p)]
        assert len(mine) > 2
        assert all(f.size >= 8 * 1024 for f in mine[:-1])
        assert sum(f.rows for f in mine) == 2000
    assert sink.commit(files, {("o", 0): 2000, ("o", 1): 2000}) == 1
    on_disk = committed_files(str(table))
    assert len(on_disk) == len(files)
    assert sorted(os.path.getsize(p) for p in on_disk) == sorted(f.size for f in files)
    assert offsets_of(plain(table)) == want("o", 0, 0, 2000) + want("o", 1, 0, 2000)


def test_readers_read_only_committed_files_beside_orphans(tmp_path: Path) -> None:
    table = tmp_path / "t"
    sink = ParquetSink(str(table), SCHEMA)
    assert read_parquet_table(str(table)).num_rows == 0
    assert read_parquet_table(str(table)).schema.names == SCHEMA.names
    orphan = sink.write([records("o", 0, 0, 7)])             # written, never committed
    sink.commit(sink.write([records("o", 1, 0, 3)]), {("o", 1): 3})
    assert len(staged(table)) == 1 and (table / orphan[0].path).exists()
    assert offsets_of(read_parquet_table(str(table))) == want("o", 1, 0, 3)
    assert offsets_of(plain(table)) == want("o", 1, 0, 3)
    assert str(table / orphan[0].path) not in committed_files(str(table))
    # the orphan is there, for a reader that asks for the staging folder itself
    assert ds.dataset(str(table / STAGING_DIR), format="parquet").count_rows() == 7


def test_a_file_not_staged_by_write_is_refused(tmp_path: Path) -> None:
    sink = ParquetSink(str(tmp_path / "t"), SCHEMA)
    elsewhere = DataFile("part-x.parquet", 1, 1, (), (), 0)
    with pytest.raises(SinkError, match="was not written by this sink's write"):
        sink.commit([elsewhere], {("o", 0): 1})
