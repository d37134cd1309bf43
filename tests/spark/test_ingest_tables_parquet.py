"""``pyconsumer ingest --table-format parquet``: Spark tasks stage the data files, the driver commits
them in the table's log (``_pyconsumer_log/``) and moves them where readers look. Reruns, more records
and a kill -9 at the commit's crash points leave every record in the folder exactly once, read back by
plain readers that know nothing of the log (pyarrow's ``read_table`` and ``dataset`` on the folder,
Spark's ``spark.read.parquet``) and by the sink's own ``read_parquet_table``."""
from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.sinks.parquet import LOG_DIR, STAGING_DIR, read_parquet_table
from pyconsumer.testing import TansuBroker, produce, sample_records

from tests.spark.sparkdata import Row, df_rows, expected_rows, table_rows
from tests.spark.test_ingest_tables import _ingest_process, _reap, _sorted, ingest, summary_of

pytestmark = pytest.mark.spark

HEADERS = ["-o", "includeHeaders=true"]


def versions(table: str) -> list[int]:
    return sorted(int(n.removesuffix(".json")) for n in os.listdir(Path(table) / LOG_DIR) if n.endswith(".json"))


def visible_files(table: str) -> list[Path]:
    """The Parquet files a plain reader lists: none under a folder named _... or .... ."""
    return [p for p in Path(table).rglob("*.parquet")
            if not any(part.startswith(("_", ".")) for part in p.relative_to(table).parts)]


def every_reader(spark: Any, table: str) -> list[Row]:
    """The table's rows, after checking that every reader finds the same ones: pyarrow's read_table and
    dataset on the folder (Hive partitions discovered), Spark's Parquet reader, read_parquet_table."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    if not visible_files(table):
        assert read_parquet_table(table).num_rows == 0
        return []
    got = _sorted(table_rows(pq.read_table(table)))
    assert _sorted(table_rows(ds.dataset(table, format="parquet", partitioning="hive").to_table())) == got
    assert df_rows(spark.read.parquet(table)) == got
    assert _sorted(table_rows(read_parquet_table(table))) == got
    return got


def test_parquet_twice_then_more_records_every_record_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_tansu_topic(2)
    first = sample_records(300, partitions=2, seed=81)
    first_at = produce(tansu.bootstrap, topic, first)
    table = str(tmp_path / "events")
    args = ["-b", tansu.bootstrap, "-t", topic, "--output", table, "--table-format", "parquet",
            "--partition-by", "topic", "--partition-by", "day(timestamp)", *HEADERS]

    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("0-149", 150), 1: ("0-149", 150)}
    assert "batch: read and wrote 1 task in" in err and "committed as log version 1" in err
    want = expected_rows(topic, first, first_at, headers=True)
    assert every_reader(spark, table) == want
    assert versions(table) == [0, 1]                      # created (0), one commit (1)
    entry = json.loads((Path(table) / LOG_DIR / f"{1:020d}.json").read_text())
    assert entry["offsets"] == {"pyconsumer": {topic: {"0": 150, "1": 150}}}
    assert {p.parent.parent.name for p in visible_files(table)} == {f"topic={topic}"}
    assert os.listdir(Path(table) / STAGING_DIR) == []

    # a rerun with nothing new: nothing read, no commit
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {} and re.search(r"total\s+0\s", out)
    assert "nothing new to commit" in err
    assert versions(table) == [0, 1]
    assert every_reader(spark, table) == want

    more = sample_records(200, partitions=2, seed=82)
    more_at = produce(tansu.bootstrap, topic, more)
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("150-249", 100), 1: ("150-249", 100)}
    assert every_reader(spark, table) == _sorted(want + expected_rows(topic, more, more_at, headers=True))
    assert versions(table) == [0, 1, 2]

    # the table's own flags: a conflicting partitioning is refused before Spark reads
    code, out, err = ingest(capsys, "-b", tansu.bootstrap, "-t", topic, "--output", table,
                            "--table-format", "parquet", *HEADERS)
    assert (code, out) == (1, "")
    assert err == (f"pyconsumer ingest: the Parquet table at {table} is partitioned by ['topic', "
                   "'timestamp_date'], the sink by nothing\n")
    code, out, err = ingest(capsys, "-b", tansu.bootstrap, "-t", topic, "--output", table,
                            "--table-format", "parquet", "--warehouse", str(tmp_path / "wh"))
    assert (code, out) == (2, "")
    assert err == ("pyconsumer ingest: --warehouse is for --table-format iceberg; a Parquet table "
                   "is its --output path\n")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVMs through /proc")
def test_parquet_kill_9_at_the_commit_crash_points_then_rerun_exactly_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_tansu_topic(2)
    table = str(tmp_path / "events")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = ["-b", tansu.bootstrap, "-t", topic, "--output", table, "--table-format", "parquet",
            *HEADERS]
    app = f"pyconsumer ingest kill {tmp_path.name}"
    produced: list[Row] = []

    def more(n: int, seed: int) -> None:
        records = sample_records(n, partitions=2, seed=seed)
        produced.extend(expected_rows(topic, records, produce(tansu.bootstrap, topic, records),
                                      headers=True))

    # killed after the tasks wrote their files, before the commit: staged, in no log entry, unseen
    more(400, 91)
    proc = _ingest_process(args, app, scratch, "after-files")
    _, err = _reap(proc, app, wait=120)
    assert proc.returncode == -signal.SIGKILL, err
    orphans = sorted((Path(table) / STAGING_DIR).rglob("*.parquet"))
    assert orphans != [] and visible_files(table) == []
    assert versions(table) == [0]
    assert every_reader(spark, table) == []
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic) == {0: ("0-199", 200), 1: ("0-199", 200)}
    assert every_reader(spark, table) == _sorted(produced)
    # the dead run's files stay staged (younger than a day: a live run's could look the same)
    assert sorted((Path(table) / STAGING_DIR).rglob("*.parquet")) == orphans

    # killed right after the commit: the rerun finds everything in and adds nothing
    more(100, 92)
    proc = _ingest_process(args, app, scratch, "after-commit")
    _, err = _reap(proc, app, wait=120)
    assert proc.returncode == -signal.SIGKILL, err
    assert versions(table) == [0, 1, 2]
    assert every_reader(spark, table) == _sorted(produced)
    code, out, err = ingest(capsys, *args)
    assert code == 0 and summary_of(out, topic) == {}, err
    assert versions(table) == [0, 1, 2]
    assert every_reader(spark, table) == _sorted(produced)
    last = json.loads((Path(table) / LOG_DIR / f"{2:020d}.json").read_text())
    assert last["offsets"] == {"pyconsumer": {topic: {"0": 250, "1": 250}}}
