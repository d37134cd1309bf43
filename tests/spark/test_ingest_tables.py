"""``pyconsumer ingest --table-format delta|iceberg``: Spark tasks write the data files, the
driver commits them with the Kafka offsets once; reruns, more records and a kill -9 at the
commit's crash points leave every record in the table exactly once, read back by deltalake
and pyiceberg (readers independent of the writer's code). In-process runs share the session
Spark; the kill -9 runs are processes of their own (their own JVM)."""
from __future__ import annotations

import dataclasses
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.cli import main
from pyconsumer.testing import TansuBroker, produce, sample_records

from tests.spark.sparkdata import Row, expected_rows, table_rows

pytestmark = pytest.mark.spark

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")

HEADERS = ["-o", "includeHeaders=true"]


def _sorted(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def delta_rows(path: str) -> list[Row]:
    return _sorted(table_rows(deltalake.DeltaTable(path).to_pyarrow_table()))


def delta_txns(path: str, topic: str, partitions: int) -> dict[int, int | None]:
    table = deltalake.DeltaTable(path)
    return {p: table.transaction_version(f"pyconsumer-{topic}-{p}") for p in range(partitions)}


def iceberg_table(warehouse: str, name: str) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("pyconsumer", uri=f"sqlite:///{warehouse}/catalog.db",
                         warehouse=f"file://{warehouse}")
    return catalog.load_table(name)


def iceberg_rows(warehouse: str, name: str) -> list[Row]:
    """The table's rows as pyiceberg's scan reads them, after checking that the committed files
    (the scan's plan) hold the very same rows for pyarrow. pyiceberg reads a null list<struct>
    as [] (apache/iceberg-python#3833, open) though the files hold the null: its rows come back
    with [] turned into None, which the files' check shows to be what is stored."""
    import pyarrow.parquet as pq

    scan = iceberg_table(warehouse, name).scan()
    files = [t.file.file_path.removeprefix("file://") for t in scan.plan_files()]
    stored = _sorted([r for f in files for r in table_rows(pq.read_table(f))])
    scanned = _sorted([r[:7] + (r[7] or None,) for r in table_rows(scan.to_arrow())])
    assert scanned == stored
    return scanned


def ingest(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["ingest", *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def summary_of(out: str, topic: str) -> dict[int, tuple[str, int]]:
    """partition -> (offsets, records) from the summary table the command printed."""
    return {int(p): (offsets, int(n.replace(",", "")))
            for p, offsets, n in re.findall(rf"^\s*{re.escape(topic)}\s+(\d+)\s+(\d+-\d+)\s+([\d,]+)\s",
                                            out, re.M)}


def test_delta_twice_then_more_records_every_record_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_tansu_topic(2)
    first = sample_records(300, partitions=2, seed=21)
    first_at = produce(tansu.bootstrap, topic, first)
    table = str(tmp_path / "events")
    args = ["-b", tansu.bootstrap, "-t", topic, "--output", table, "--table-format", "delta",
            *HEADERS]

    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("0-149", 150), 1: ("0-149", 150)}
    assert re.search(r"total\s+300\s", out)
    assert "batch: read and wrote 1 task in" in err and "committed as version 1" in err
    assert f"ingest summary (batch; 1 data file committed to the Delta table {table}):" in out
    want = expected_rows(topic, first, first_at, headers=True)
    assert delta_rows(table) == want
    assert delta_txns(table, topic, 2) == {0: 150, 1: 150}
    assert deltalake.DeltaTable(table).version() == 1       # created (0), one commit (1)

    # a rerun with nothing new: nothing read, no commit
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {} and re.search(r"total\s+0\s", out)
    assert "nothing new to commit" in err
    assert deltalake.DeltaTable(table).version() == 1
    assert delta_rows(table) == want

    more = sample_records(200, partitions=2, seed=22)
    more_at = produce(tansu.bootstrap, topic, more)
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("150-249", 100), 1: ("150-249", 100)}
    assert delta_rows(table) == _sorted(want + expected_rows(topic, more, more_at, headers=True))
    assert delta_txns(table, topic, 2) == {0: 250, 1: 250}
    history = deltalake.DeltaTable(table).history(1)[0]
    assert {k: v for k, v in history.items() if k.startswith("pyconsumer.")} == {
        "pyconsumer.app-id": "pyconsumer", f"pyconsumer.offset.{topic}.0": "250",
        f"pyconsumer.offset.{topic}.1": "250"}
    assert spark.range(3).count() == 3            # the shared session is still alive


def test_lag_behind_latest_in_the_round_line_and_the_summary(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A run stopped short of latest (--ending-offsets) reports each partition's offsets
    behind latest and their bytes at the bytes per record it read (14: 4-byte keys, 10-byte
    values); a partition it read nothing of has no estimate."""
    from pyconsumer.testing import TestRecord

    topic = make_tansu_topic(3)
    recs = [TestRecord(key=b"k%03d" % i, value=b"v" * 10, partition=p, timestamp_ms=1_000 + i)
            for p, n in ((0, 60), (1, 40), (2, 30)) for i in range(n)]
    produce(tansu.bootstrap, topic, recs)
    table = str(tmp_path / "events")
    ends = '{"%s": {"0": 20, "1": -1, "2": 0}}' % topic
    code, out, err = ingest(capsys, "-b", tansu.bootstrap, "-t", topic, "--output", table,
                            "--table-format", "delta", "--ending-offsets", ends)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("0-19", 20), 1: ("0-39", 40)}
    assert "committed as version 1; behind latest 70 records\n" in err    # p2: no estimate
    behind = re.findall(rf"^\s*{re.escape(topic)}\s+(\d+)\s+([\d,]+)\s+(\S+)$", out, re.M)
    assert "behind latest: 70 records" in out
    assert behind == [("0", "40", "560"), ("2", "30", "?")]

    # the rerun to latest reads the rest: nothing behind, in the line and the summary
    code, out, err = ingest(capsys, "-b", tansu.bootstrap, "-t", topic, "--output", table,
                            "--table-format", "delta")
    assert code == 0, err
    assert "committed as version 2; behind latest 0 records (~0 B)" in err
    assert "behind latest: none (3 partitions at their latest offset)" in out


def test_iceberg_resumes_from_the_table_every_record_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_tansu_topic(2)
    first = sample_records(200, partitions=2, seed=31)
    first_at = produce(tansu.bootstrap, topic, first)
    wh = str(tmp_path / "warehouse")
    args = ["-b", tansu.bootstrap, "-t", topic, "--table-format", "iceberg",
            "--output", "kafka.events", "--warehouse", wh, *HEADERS]

    # the first run stops partition 0 at 40; the next ones go on from the table
    code, out, err = ingest(capsys, *args, "--ending-offsets", '{"%s": {"0": 40, "1": -1}}' % topic)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("0-39", 40), 1: ("0-99", 100)}
    want = expected_rows(topic, first, first_at, headers=True)
    assert iceberg_rows(wh, "kafka.events") == [r for r in want if r[1] == 1 or r[2] < 40]

    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("40-99", 60)}
    assert iceberg_rows(wh, "kafka.events") == want
    snapshots = len(iceberg_table(wh, "kafka.events").snapshots())

    code, out, err = ingest(capsys, *args)
    assert code == 0 and re.search(r"total\s+0\s", out), err
    assert len(iceberg_table(wh, "kafka.events").snapshots()) == snapshots

    more = sample_records(100, partitions=2, seed=32)
    more_at = produce(tansu.bootstrap, topic, more)
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("100-149", 50), 1: ("100-149", 50)}
    assert iceberg_rows(wh, "kafka.events") == _sorted(
        want + expected_rows(topic, more, more_at, headers=True))
    summary = iceberg_table(wh, "kafka.events").current_snapshot().summary.additional_properties
    assert {k: v for k, v in summary.items() if k.startswith("pyconsumer.")} == {
        "pyconsumer.app-id": "pyconsumer", f"pyconsumer.offset.{topic}.0": "150",
        f"pyconsumer.offset.{topic}.1": "150"}


def test_partition_layout_on_disk(spark: Any, tansu: TansuBroker,
                                  make_tansu_topic: Callable[..., str], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    topic = make_tansu_topic(2)
    day = 86_400_000
    base = 1_700_006_400_000             # 2023-11-15T00:00:00Z
    records = [dataclasses.replace(r, timestamp_ms=base + (i % 3) * day + i)
               for i, r in enumerate(sample_records(120, partitions=2, seed=41))]
    at = produce(tansu.bootstrap, topic, records)
    days = {"2023-11-15", "2023-11-16", "2023-11-17"}
    table = str(tmp_path / "by-day")
    code, _, err = ingest(capsys, "-b", tansu.bootstrap, "-t", topic, "--output", table,
                          "--table-format", "delta", "--partition-by", "topic",
                          "--partition-by", "day(timestamp)", "--target-file-size", "64KiB",
                          *HEADERS)
    assert code == 0, err
    folders = {str(p.parent.relative_to(table)) for p in Path(table).rglob("*.parquet")}
    assert folders == {f"topic={topic}/timestamp_date={d}" for d in days}
    for f in Path(table).rglob("*.parquet"):
        date = f.parent.name.split("=")[1]
        stamps = pq.read_table(f).column("timestamp").to_pylist()
        assert {s.strftime("%Y-%m-%d") for s in stamps} == {date}
    dt = deltalake.DeltaTable(table)
    assert dt.metadata().partition_columns == ["topic", "timestamp_date"]
    got = _sorted(table_rows(dt.to_pyarrow_table().drop_columns(["timestamp_date"])))
    assert got == expected_rows(topic, records, at, headers=True)

    wh = str(tmp_path / "warehouse")
    code, _, err = ingest(capsys, "-b", tansu.bootstrap, "-t", topic, "--table-format", "iceberg",
                          "--output", "kafka.by_day", "--warehouse", wh,
                          "--partition-by", "topic", "--partition-by", "day(timestamp)", *HEADERS)
    assert code == 0, err
    location = iceberg_table(wh, "kafka.by_day").location().removeprefix("file://")
    folders = {str(p.parent.relative_to(location)) for p in Path(location).rglob("*.parquet")}
    assert folders == {f"data/topic={topic}/timestamp_date={d}" for d in days}
    assert iceberg_rows(wh, "kafka.by_day") == expected_rows(topic, records, at, headers=True)


def test_typed_json_values_partitioned_by_a_value_field(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from pyconsumer.testing import TestRecord

    topic = make_tansu_topic(2)
    countries = ["de", "fr", "nl"]
    records = [TestRecord(key=b"k%d" % i, partition=i % 2, timestamp_ms=1_700_000_000_000 + i,
                          value=json.dumps({"id": i, "country": countries[i % 3]}).encode()
                          if i != 7 else b"{not json")
               for i in range(60)]
    at = produce(tansu.bootstrap, topic, records)
    table = str(tmp_path / "typed")
    code, out, err = ingest(capsys, "-b", tansu.bootstrap, "-t", topic, "--output", table,
                            "--table-format", "delta", "--value-format", "json",
                            "--value-schema", "id long, country string",
                            "--partition-by", "value.country")
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("0-29", 30), 1: ("0-29", 30)}
    folders = {str(p.parent.relative_to(table)) for p in Path(table).rglob("*.parquet")}
    # the record that does not decode has a null value: its partition value is null
    assert folders == {f"value_country={c}" for c in countries} | {
        "value_country=__HIVE_DEFAULT_PARTITION__"}
    got = sorted(deltalake.DeltaTable(table).to_pyarrow_table().to_pylist(),
                 key=lambda r: (r["partition"], r["offset"]))
    want = sorted(({"partition": p, "offset": o, "key": r.key,
                    "value": None if i == 7 else {"id": i, "country": countries[i % 3]},
                    "_corrupt_record": b"{not json" if i == 7 else None,
                    "value_country": None if i == 7 else countries[i % 3]}
                   for i, (r, (p, o)) in enumerate(zip(records, at))),
                  key=lambda r: (r["partition"], r["offset"]))
    keep = ["partition", "offset", "key", "value", "_corrupt_record", "value_country"]
    assert [{k: r[k] for k in keep} for r in got] == want


def test_bad_input_is_refused_before_spark_reads(spark: Any, tansu: TansuBroker,
                                                 make_tansu_topic: Callable[..., str],
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa

    topic = make_tansu_topic(1)
    produce(tansu.bootstrap, topic, sample_records(10, partitions=1, seed=51))
    common = ["-b", tansu.bootstrap, "-t", topic]

    a_file = tmp_path / "a-file"
    a_file.write_text("not a table")
    code, out, err = ingest(capsys, *common, "--table-format", "delta", "--output", str(a_file))
    assert (code, out) == (1, "")
    assert err.startswith(f"pyconsumer ingest: cannot write the table location {a_file}: ")
    assert err.count("\n") == 1
    assert a_file.read_text() == "not a table"

    if os.geteuid() != 0:          # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        code, out, err = ingest(capsys, *common, "--table-format", "delta",
                                "--output", str(locked / "t"))
        assert (code, out) == (1, "")
        assert err.startswith(f"pyconsumer ingest: cannot write the table location {locked / 't'}: ")
        assert list(locked.iterdir()) == []

    other = str(tmp_path / "other")
    deltalake.write_deltalake(other, pa.table({"key": pa.array(["k"]), "value": pa.array(["v"])}))
    code, out, err = ingest(capsys, *common, "--table-format", "delta", "--output", other)
    assert (code, out) == (1, "")
    assert err == (f"pyconsumer ingest: column 'key': the Delta table at {other} has string, "
                   "the batches have binary\n")
    assert deltalake.DeltaTable(other).version() == 0

    wh = tmp_path / "wh"
    code, out, err = ingest(capsys, *common, "--table-format", "iceberg", "--output", "kafka.t")
    assert (code, out) == (2, "")
    assert err == ("pyconsumer ingest: --table-format iceberg needs --warehouse DIR (where the "
                   "table's files and the default SQLite catalog go)\n")
    code, out, err = ingest(capsys, *common, "--table-format", "iceberg", "--output", "t",
                            "--warehouse", str(wh))
    assert (code, out) == (2, "")
    assert err == ("pyconsumer ingest: --table-format iceberg: --output 't' is the table's name, "
                   "NAMESPACE.NAME (e.g. kafka.events)\n")
    code, out, err = ingest(capsys, *common, "--output", str(tmp_path / "p"),
                            "--partition-by", "topic")
    assert (code, out) == (2, "")
    assert err == "pyconsumer ingest: --partition-by needs --table-format parquet, delta or iceberg\n"
    code, out, err = ingest(capsys, *common, "--table-format", "delta", "--output",
                            str(tmp_path / "d"), "--checkpoint", str(tmp_path / "ck"))
    assert (code, out) == (2, "")
    assert err == ("pyconsumer ingest: --checkpoint: --table-format delta runs resume from the "
                   "table, without it (batch, or continuous with --trigger INTERVAL)\n")
    assert not wh.exists() and not (tmp_path / "p").exists() and not (tmp_path / "d").exists()
    assert not (tmp_path / "ck").exists()


# --------------------------------------------------------------------------- kill -9


def _jvms(app: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if app.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _ingest_process(args: list[str], app: str, scratch: Path, crash_at: str | None
                    ) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(scratch)}     # a killed run's Spark scratch stays here
    env.pop("PYCONSUMER_INGEST_CRASH_AT", None)
    if crash_at is not None:
        env["PYCONSUMER_INGEST_CRASH_AT"] = crash_at
    return subprocess.Popen(
        [sys.executable, "-m", "pyconsumer", "ingest", *args, "--master", "local[2]",
         "--conf", f"spark.app.name={app}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _reap(proc: subprocess.Popen[str], app: str, wait: float = 0) -> tuple[str, str]:
    """The process ended (after ``wait`` seconds at most, else killed) and its JVM gone (it
    exits when its parent dies); the process's stdout and stderr."""
    out = err = ""
    try:
        if wait:
            out, err = proc.communicate(timeout=wait)
    except subprocess.TimeoutExpired:
        pass                    # what was read so far comes with the next communicate()
    if proc.returncode is None:
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate(timeout=30)
    deadline = time.monotonic() + 15
    while _jvms(app) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _jvms(app)
    for pid in left:                 # our run's JVM, by its id
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"the killed run left its JVM ({app})"
    return out, err


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVMs through /proc")
def test_kill_9_at_the_commit_crash_points_then_rerun_exactly_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_tansu_topic(2)
    table = str(tmp_path / "events")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = ["-b", tansu.bootstrap, "-t", topic, "--output", table, "--table-format", "delta",
            *HEADERS]
    app = f"pyconsumer ingest kill {tmp_path.name}"
    produced: list[Row] = []

    def more(n: int, seed: int) -> None:
        records = sample_records(n, partitions=2, seed=seed)
        produced.extend(expected_rows(topic, records, produce(tansu.bootstrap, topic, records),
                                      headers=True))

    # killed after the tasks wrote their files, before the commit: the files are in no commit
    more(400, 61)
    proc = _ingest_process(args, app, scratch, "after-files")
    _, err = _reap(proc, app, wait=120)
    assert proc.returncode == -signal.SIGKILL, err
    assert list(Path(table).rglob("*.parquet")) != []
    assert delta_rows(table) == [] and delta_txns(table, topic, 2) == {0: None, 1: None}
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("0-199", 200), 1: ("0-199", 200)}
    assert delta_rows(table) == _sorted(produced)
    assert delta_txns(table, topic, 2) == {0: 200, 1: 200}

    # killed right after the commit: the rerun finds everything in and adds nothing
    more(100, 62)
    proc = _ingest_process(args, app, scratch, "after-commit")
    _, err = _reap(proc, app, wait=120)
    assert proc.returncode == -signal.SIGKILL, err
    assert delta_rows(table) == _sorted(produced)
    assert delta_txns(table, topic, 2) == {0: 250, 1: 250}
    version = deltalake.DeltaTable(table).version()
    code, out, err = ingest(capsys, *args)
    assert code == 0 and summary_of(out, topic) == {}, err
    assert deltalake.DeltaTable(table).version() == version
    assert delta_rows(table) == _sorted(produced)

    # killed at a random moment of a run (start-up, reading, writing or committing)
    more(300, 63)
    proc = _ingest_process(args, app, scratch, None)
    assert proc.stderr is not None
    proc.stderr.readline()                      # "ingest (batch): ... starting Spark"
    time.sleep(random.Random(tmp_path.name).uniform(2.0, 12.0))
    proc.send_signal(signal.SIGKILL)
    _reap(proc, app)
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert delta_rows(table) == _sorted(produced)
    assert delta_txns(table, topic, 2) == {0: 400, 1: 400}


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVMs through /proc")
def test_iceberg_kill_9_after_the_files_then_rerun_exactly_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_tansu_topic(2)
    records = sample_records(300, partitions=2, seed=71)
    want = expected_rows(topic, records, produce(tansu.bootstrap, topic, records), headers=True)
    wh = str(tmp_path / "warehouse")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = ["-b", tansu.bootstrap, "-t", topic, "--table-format", "iceberg",
            "--output", "kafka.killed", "--warehouse", wh, *HEADERS]
    app = f"pyconsumer ingest kill {tmp_path.name}"
    proc = _ingest_process(args, app, scratch, "after-files")
    _, err = _reap(proc, app, wait=120)
    assert proc.returncode == -signal.SIGKILL, err
    killed = iceberg_table(wh, "kafka.killed")
    assert list(Path(killed.location().removeprefix("file://")).rglob("*.parquet")) != []
    assert killed.snapshots() == []
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("0-149", 150), 1: ("0-149", 150)}
    assert iceberg_rows(wh, "kafka.killed") == want


def test_target_file_size_spellings() -> None:
    from pyconsumer.ingest.tables import parse_size

    assert [parse_size(t) for t in ("134217728", "128MiB", "128MB", "16k", "64KiB", "1.5g")] == [
        134217728, 128 * 2**20, 128 * 10**6, 16 * 1024, 64 * 1024, int(1.5 * 2**30)]
    for bad in ("", "12 parsecs", "100"):
        with pytest.raises(ValueError):
            parse_size(bad)
