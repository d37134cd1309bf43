"""The table sinks' contract, run on Delta (deltalake), Iceberg (pyiceberg, SQLite catalog) and Parquet
(a plain dataset with pyconsumer's commit log) alike.

Batches are real record sets (kafka-python's encoder) decoded by pyconsumer into Spark's Kafka schema;
what the tables hold is read back with the formats' own readers and with plain pyarrow over the files
(for Parquet: over the whole folder, as any reader of a dataset would), and compared with the records
as they were encoded.
"""
from __future__ import annotations

import datetime as dt
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")

from deltalake import DeltaTable  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402

from pyconsumer.records import decode_arrow  # noqa: E402
from pyconsumer.sinks import DataFile, OffsetConflictError, SchemaConflictError, TableSink  # noqa: E402
from pyconsumer.sinks import delta as delta_mod  # noqa: E402
from pyconsumer.sinks import iceberg as iceberg_mod  # noqa: E402
from pyconsumer.sinks import parquet as parquet_mod  # noqa: E402
from pyconsumer.sinks.delta import DeltaSink  # noqa: E402
from pyconsumer.sinks.iceberg import IcebergSink  # noqa: E402
from pyconsumer.sinks.parquet import ParquetSink, committed_files, read_parquet_table  # noqa: E402
from tests.recordsets import kp_v2, sample_records  # noqa: E402

TOPIC = "orders"
COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def batch(partition: int, first: int, n: int, seed: int = 0) -> pa.RecordBatch:
    """n records of TOPIC[partition] at offsets first.., with nulls, empties and headers mixed in."""
    return decode_arrow(kp_v2(sample_records(n, seed), base_offset=first), TOPIC, partition, include_headers=True)


def expected(partition: int, first: int, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """The same records as the encoder was given them (not as pyconsumer decoded them)."""
    out = []
    for delta_, ts, key, value, headers in sample_records(n, seed):
        out.append({
            "key": key, "value": value, "topic": TOPIC, "partition": partition, "offset": first + delta_,
            "timestamp": dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc), "timestampType": 0,
            "headers": [{"key": k, "value": v} for k, v in headers] if headers else None,
        })
    return out


SCHEMA = batch(0, 0, 1).schema


class Table:
    """One sink under test and the independent ways to read its table."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind, self.root = kind, root

    def sink(self, schema: pa.Schema = SCHEMA, **kw: Any) -> DeltaSink | IcebergSink | ParquetSink:
        if self.kind == "delta":
            return DeltaSink(str(self.root / "table"), schema, **kw)
        if self.kind == "parquet":
            return ParquetSink(str(self.root / "table"), schema, **kw)
        return IcebergSink("kafka.orders", schema, warehouse=str(self.root / "warehouse"), **kw)

    def read_library(self) -> pa.Table:
        if self.kind == "delta":
            return DeltaTable(str(self.root / "table")).to_pyarrow_table()
        if self.kind == "parquet":
            return read_parquet_table(str(self.root / "table"))
        return self._iceberg().scan().to_arrow()

    def library_view(self, want: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows as the format's library reads them: pyiceberg 0.12's scan rebuilds a null
        list<struct> as [] (apache/iceberg-python#3833, open), though the files hold the null
        (read_files shows it)."""
        if self.kind != "iceberg":
            return want
        return [{**r, "headers": [] if r["headers"] is None else r["headers"]} for r in want]

    def file_paths(self) -> list[str]:
        """The committed data files, as the table's metadata lists them."""
        if self.kind == "delta":
            return [u.removeprefix("file://") for u in DeltaTable(str(self.root / "table")).file_uris()]
        if self.kind == "parquet":
            return committed_files(str(self.root / "table"))
        return [t.file.file_path.removeprefix("file://") for t in self._iceberg().scan().plan_files()]

    def read_files(self) -> pa.Table:
        """The committed files read by plain pyarrow (Delta's partition columns from the folder names);
        for Parquet the table's folder, whatever is in it (staged files are in `_` folders)."""
        if self.kind == "parquet":
            return ds.dataset(str(self.root / "table"), format="parquet", partitioning="hive").to_table()
        part = "hive" if self.kind == "delta" else None
        return ds.dataset(self.file_paths(), format="parquet", partitioning=part).to_table()

    def _iceberg(self) -> Any:
        warehouse = self.root / "warehouse"
        catalog = SqlCatalog("pyconsumer", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
        return catalog.load_table("kafka.orders")


@pytest.fixture(params=["delta", "iceberg", "parquet"])
def table(request: pytest.FixtureRequest, tmp_path: Path) -> Table:
    return Table(request.param, tmp_path)


def rows(t: pa.Table) -> list[dict[str, Any]]:
    got = t.select(COLUMNS).to_pylist()
    return sorted(got, key=lambda r: (r["topic"], r["partition"], r["offset"]))


def write_commit(sink: TableSink, batches: Sequence[pa.RecordBatch], offsets: dict[tuple[str, int], int]) -> int | None:
    return sink.commit(sink.write(batches), offsets)


def test_rows_read_back_exactly_by_the_library_and_by_pyarrow(table: Table) -> None:
    sink = table.sink()
    assert isinstance(sink, TableSink)
    version = write_commit(sink, [batch(0, 100, 30), batch(1, 7, 12, seed=5)], {(TOPIC, 0): 130, (TOPIC, 1): 19})
    assert version is not None
    want = expected(0, 100, 30) + expected(1, 7, 12, seed=5)
    assert rows(table.read_files()) == want
    assert rows(table.read_library()) == table.library_view(want)


def test_resume_offsets_come_from_the_table(table: Table) -> None:
    sink = table.sink(app_id="job")
    assert sink.resume_offsets() == {}
    write_commit(sink, [batch(0, 0, 5), batch(1, 0, 3)], {(TOPIC, 0): 5, (TOPIC, 1): 3})
    write_commit(sink, [batch(0, 5, 4)], {(TOPIC, 0): 9})
    assert table.sink(app_id="job").resume_offsets() == {(TOPIC, 0): 9, (TOPIC, 1): 3}
    # another app's commits come after, and hold their own offsets
    write_commit(table.sink(app_id="other"), [batch(2, 0, 2)], {(TOPIC, 2): 2})
    assert table.sink(app_id="job").resume_offsets() == {(TOPIC, 0): 9, (TOPIC, 1): 3}
    assert table.sink(app_id="other").resume_offsets() == {(TOPIC, 2): 2}


def test_files_written_but_not_committed_then_the_rerun_commits_once(table: Table) -> None:
    sink = table.sink()
    lost = sink.write([batch(0, 0, 20)])           # the process dies here: files, no commit
    assert lost and rows(table.read_library()) == []
    assert write_commit(table.sink(), [batch(0, 0, 20)], {(TOPIC, 0): 20}) is not None
    assert rows(table.read_library()) == table.library_view(expected(0, 0, 20))
    assert not {f.path for f in lost} & {p.rpartition("/")[2] for p in table.file_paths()}


def test_committed_then_the_caller_crashed_so_the_rerun_is_a_no_op(table: Table) -> None:
    sink = table.sink()
    assert write_commit(sink, [batch(0, 0, 20)], {(TOPIC, 0): 20}) is not None
    before = sorted(table.file_paths())
    again = sink.write([batch(0, 0, 20)])
    assert sink.commit(again, {(TOPIC, 0): 20}) is None
    assert rows(table.read_library()) == table.library_view(expected(0, 0, 20))
    assert sorted(table.file_paths()) == before
    # the rerun's own files are gone: nothing half-written stays in the location
    for f in again:
        assert not any(Path(p).name == Path(f.path).name for p in _all_parquet(table.root))


def test_a_commit_repeating_part_of_what_the_table_holds_is_refused(table: Table) -> None:
    sink = table.sink()
    write_commit(sink, [batch(0, 0, 20)], {(TOPIC, 0): 20})
    overlapping = sink.write([batch(0, 10, 20)])
    with pytest.raises(OffsetConflictError, match=r"orders\[0\] offsets from 10.*up to 20"):
        sink.commit(overlapping, {(TOPIC, 0): 30})
    with pytest.raises(OffsetConflictError, match=r"already holds offsets up to orders\[0\]=20 but not orders\[1\]"):
        sink.commit(sink.write([batch(1, 0, 3)]), {(TOPIC, 0): 20, (TOPIC, 1): 3})
    assert rows(table.read_library()) == table.library_view(expected(0, 0, 20))


@pytest.mark.parametrize("same_offsets", [True, False], ids=["same-offsets", "other-partition"])
def test_a_concurrent_writer_wins_the_race(table: Table, monkeypatch: pytest.MonkeyPatch, same_offsets: bool) -> None:
    """The other writer commits between this one's offset check and its commit: this one's first attempt
    conflicts; it re-reads the offsets, then skips (same offsets) or lands after the other (other partition)."""
    mine, other = table.sink(), table.sink()
    my_files = mine.write([batch(0, 0, 10)])
    other_part = 0 if same_offsets else 1
    other_files = other.write([batch(other_part, 0, 10)])
    module = {"delta": delta_mod, "iceberg": iceberg_mod, "parquet": parquet_mod}[table.kind]
    real = module.should_commit
    raced: list[bool] = []

    def racing(held: Any, offsets: Any, files: Sequence[DataFile]) -> bool:
        decision = real(held, offsets, files)
        if not raced:
            raced.append(True)
            assert other.commit(other_files, {(TOPIC, other_part): 10}) is not None
        return decision

    monkeypatch.setattr(module, "should_commit", racing)
    result = mine.commit(my_files, {(TOPIC, 0): 10})
    if same_offsets:
        assert result is None
        assert rows(table.read_library()) == table.library_view(expected(0, 0, 10))
    else:
        assert result is not None
        assert rows(table.read_library()) == table.library_view(expected(0, 0, 10) + expected(1, 0, 10))
        assert table.sink().resume_offsets() == {(TOPIC, 0): 10, (TOPIC, 1): 10}


def test_files_roll_at_the_target_size(table: Table) -> None:
    sink = table.sink(target_file_size=16 * 1024)
    big = [batch(0, i * 500, 500, seed=i) for i in range(6)]
    files = sink.write(big)
    assert len(files) > 2
    for f in files:
        assert Path(_location(table, f)).stat().st_size == f.size
    assert all(f.size >= 16 * 1024 for f in files[:-1])
    assert sum(f.rows for f in files) == 3000
    sink.commit(files, {(TOPIC, 0): 3000})
    assert rows(table.read_files()) == [r for i in range(6) for r in expected(0, i * 500, 500, seed=i)]


def test_the_sink_and_its_files_pickle_as_for_a_spark_task(table: Table) -> None:
    driver = table.sink()
    task = pickle.loads(pickle.dumps(driver))
    files = pickle.loads(pickle.dumps(task.write([batch(0, 0, 8)])))
    assert len(pickle.dumps(files)) < 2000
    assert driver.commit(files, {(TOPIC, 0): 8}) is not None
    assert rows(table.read_library()) == table.library_view(expected(0, 0, 8))


def test_a_batch_of_another_schema_writes_nothing(table: Table) -> None:
    sink = table.sink()
    bad = batch(0, 0, 3).drop_columns(["headers"]).append_column("headers", pa.array(["x"] * 3))
    with pytest.raises(SchemaConflictError, match=r"column 'headers'.*string"):
        sink.write([batch(0, 3, 3), bad])
    assert _all_parquet(table.root) == []


def test_a_table_of_another_schema_is_refused_before_anything_is_written(table: Table) -> None:
    table.sink()
    typed = pa.schema([f if f.name != "value" else pa.field("value", pa.struct([("country", pa.string())]))
                       for f in SCHEMA])
    with pytest.raises(SchemaConflictError) as e:
        table.sink(typed)
    text = str(e.value)
    assert "column 'value'" in text and "binary" in text and "country" in text, text
    assert _all_parquet(table.root) == []


def test_a_location_that_cannot_be_written_fails_first(table: Table, tmp_path: Path) -> None:
    from pyconsumer.sinks import LocationError

    (tmp_path / "afile").write_text("")
    target = Table(table.kind, tmp_path / "afile")
    with pytest.raises(LocationError, match="cannot write the table location .*afile"):
        target.sink()


def test_partition_by_a_field_of_a_typed_value(table: Table) -> None:
    value = pa.struct([("country", pa.string()), ("amount", pa.int64())])
    schema = pa.schema([f if f.name != "value" else pa.field("value", value) for f in SCHEMA])
    countries = ["FR", "São Paulo/x", None, "FR"]
    b = batch(0, 0, 4)
    b = b.set_column(b.schema.get_field_index("value"), "value",
                     pa.array([{"country": c, "amount": i} for i, c in enumerate(countries)], value))
    sink = table.sink(schema, partition_by=["value.country"])
    files = sink.write([b])
    assert sorted((dict(f.partition)["value_country"] or "", f.rows) for f in files) == [
        ("", 1), ("FR", 2), ("São Paulo/x", 1)]
    sink.commit(files, {(TOPIC, 0): 4})
    got = table.read_library().sort_by("offset")
    assert got.column("value").to_pylist() == [{"country": c, "amount": i} for i, c in enumerate(countries)]


def _location(table: Table, f: DataFile) -> str:
    if table.kind in ("delta", "parquet"):
        return str(table.root / "table" / f.path)
    return table._iceberg().location().removeprefix("file://") + "/" + f.path


def _all_parquet(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.parquet"))



def test_two_writers_in_threads_commit_everything_once(table: Table) -> None:
    """Real contention (no hook): each thread commits its partition 8 times, 5 records a time."""
    import threading

    errors: list[BaseException] = []

    def run(partition: int) -> None:
        try:
            sink = table.sink()
            for i in range(8):
                sink.commit(sink.write([batch(partition, i * 5, 5, seed=i)]), {(TOPIC, partition): i * 5 + 5})
        except BaseException as e:  # noqa: B036 - reported by the test thread below
            errors.append(e)

    table.sink()   # the table exists before the race
    threads = [threading.Thread(target=run, args=(p,)) for p in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    want = [r for p in (0, 1) for i in range(8) for r in expected(p, i * 5, 5, seed=i)]
    assert rows(table.read_files()) == sorted(want, key=lambda r: (r["partition"], r["offset"]))
    assert table.sink().resume_offsets() == {(TOPIC, 0): 40, (TOPIC, 1): 40}
