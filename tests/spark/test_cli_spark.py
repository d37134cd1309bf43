"""``pyconsumer ingest`` and ``pyconsumer demo`` on the shared SparkSession (in-process: a
second JVM would cost ~15 s): the Parquet dataset holds exactly what confluent-kafka produced,
the summary counts it exactly, a checkpointed --once run reads only what is new, and the demo
reads every record it produced and ends with a Delta table holding each of them once (or, without
deltalake, one line saying how to get it)."""
from __future__ import annotations

import io
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.cli import main
from pyconsumer._install import install_hint
from pyconsumer.demo import _demo_values, run_demo
from pyconsumer.console import StatusLine, human_bytes
from pyconsumer.ingest import IngestSummary, format_summary, run_ingest
from pyconsumer.testing import TansuBroker, TestRecord, produce, sample_records

from tests.spark.sparkdata import expected_rows, parquet_rows

pytestmark = pytest.mark.spark


def expected_summary(topic: str, records: list[TestRecord], delivered: list[tuple[int, int]]
                     ) -> dict[tuple[str, int], tuple[int, int, int, int]]:
    """(topic, partition) -> (first offset, last offset, records, key+value bytes)."""
    out: dict[tuple[str, int], list[int]] = {}
    for rec, (partition, offset) in zip(records, delivered):
        size = len(rec.key or b"") + len(rec.value or b"")
        s = out.setdefault((topic, partition), [offset, offset, 0, 0])
        s[0], s[1] = min(s[0], offset), max(s[1], offset)
        s[2] += 1
        s[3] += size
    return {k: (v[0], v[1], v[2], v[3]) for k, v in out.items()}


def got_summary(summary: IngestSummary) -> dict[tuple[str, int], tuple[int, int, int, int]]:
    return {(p.topic, p.partition): (p.first_offset, p.last_offset, p.records, p.bytes)
            for p in summary.partitions}


def test_ingest_batch_writes_what_was_produced(spark: Any, tansu: TansuBroker,
                                               make_tansu_topic: Callable[..., str],
                                               tmp_path: Path) -> None:
    topic = make_tansu_topic(3)
    records = sample_records(900, partitions=3, seed=5)
    delivered = produce(tansu.bootstrap, topic, records, compression="zstd")
    out = str(tmp_path / "dataset")
    status = io.StringIO()
    summary = run_ingest(spark, output=out, bootstrap=tansu.bootstrap, topics=[topic],
                         options={"includeHeaders": "true"},
                         status=StatusLine(status, live=True), poll_interval=0.05)
    assert summary.mode == "batch" and not summary.interrupted
    assert got_summary(summary) == expected_summary(topic, records, delivered)
    assert summary.records == 900 and summary.files >= 1 and summary.seconds > 0
    assert parquet_rows(out) == expected_rows(topic, records, delivered, headers=True)
    text = status.getvalue()
    assert re.search(r"batch: read and wrote \(\d+/\d+ tasks\) in [0-9.]+ s; "
                     r"behind latest 0 records", text)
    assert [(lag.partition, lag.records, lag.bytes) for lag in summary.lag or []] == [
        (0, 0, 0), (1, 0, 0), (2, 0, 0)]
    table = format_summary(summary)
    assert re.search(r"total\s+900\s+" + f"{summary.bytes:,}", table)
    for p in range(3):
        assert re.search(rf"{topic}\s+{p}\s+0-299\s+300\s", table)



def test_ingest_batch_with_nothing_new_adds_nothing(spark: Any, tansu: TansuBroker,
                                                    make_tansu_topic: Callable[..., str],
                                                    tmp_path: Path) -> None:
    topic = make_tansu_topic(2)
    produce(tansu.bootstrap, topic, sample_records(10, partitions=2, seed=4))
    ends = '{"%s": {"0": 5, "1": 5}}' % topic
    summary = run_ingest(spark, output=str(tmp_path / "empty"), bootstrap=tansu.bootstrap,
                         topics=[topic], starting_offsets=ends)
    assert summary.records == 0 and summary.partitions == []
    assert "total" in format_summary(summary)


def test_ingest_command_batch_in_process(spark: Any, tansu: TansuBroker,
                                         make_tansu_topic: Callable[..., str], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_tansu_topic(2)
    records = sample_records(200, partitions=2, seed=9)
    delivered = produce(tansu.bootstrap, topic, records)
    out = str(tmp_path / "cli-dataset")
    # the CLI reuses the session this process already has (and leaves it running)
    code = main(["ingest", "-b", tansu.bootstrap, "--topic", topic, "--output", out,
                 "--ending-offsets", '{"%s": {"0": 50, "1": -1}}' % topic])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    assert re.search(rf"{topic}\s+0\s+0-49\s+50\s", captured.out)
    assert re.search(rf"{topic}\s+1\s+0-99\s+100\s", captured.out)
    assert re.search(r"total\s+150\s", captured.out)
    want = [r for r in expected_rows(topic, records, delivered)
            if r[1] == 1 or r[2] < 50]
    assert parquet_rows(out) == want
    # partition 0 stopped 50 short of its latest offset: its bytes estimated at the 50 read
    read = sum(len(r.key or b"") + len(r.value or b"")
               for r, (p, o) in zip(records, delivered) if p == 0 and o < 50)
    assert f"behind latest: 50 records (~{human_bytes(read)})" in captured.out
    assert re.search(rf"{topic}\s+0\s+50\s+{read:,}\s*$", captured.out, re.MULTILINE)
    assert spark.range(3).count() == 3            # the shared session is still alive


def test_ingest_once_twice_reads_only_the_new_records(spark: Any, tansu: TansuBroker,
                                                      make_tansu_topic: Callable[..., str],
                                                      tmp_path: Path) -> None:
    topic = make_tansu_topic(2)
    out, ck = str(tmp_path / "stream-out"), str(tmp_path / "checkpoint")
    first = sample_records(600, partitions=2, seed=1)
    first_delivered = produce(tansu.bootstrap, topic, first)
    status = io.StringIO()
    one = run_ingest(spark, output=out, checkpoint=ck, once=True, bootstrap=tansu.bootstrap,
                     topics=[topic], options={"maxOffsetsPerTrigger": "250"},
                     status=StatusLine(status, live=False), poll_interval=0.2)
    assert one.mode == "availableNow" and not one.interrupted
    assert got_summary(one) == expected_summary(topic, first, first_delivered)
    assert one.micro_batches == 3              # 600 records, at most 250 per micro-batch
    lines = [line for line in status.getvalue().splitlines() if line.startswith("micro-batch")]
    assert len(lines) == 3 and "\r" not in status.getvalue()   # not a terminal: plain lines
    assert lines[-1].endswith("behind latest 0 records (~0 B)")
    assert "run total 600 records" in lines[-1]

    more = sample_records(300, partitions=2, seed=2)
    more_delivered = produce(tansu.bootstrap, topic, more)
    two = run_ingest(spark, output=out, checkpoint=ck, once=True, bootstrap=tansu.bootstrap,
                     topics=[topic], options={"maxOffsetsPerTrigger": "250"})
    assert got_summary(two) == expected_summary(topic, more, more_delivered)
    assert {p.first_offset for p in two.partitions} == {300}
    assert parquet_rows(out) == sorted(
        expected_rows(topic, first, first_delivered) + expected_rows(topic, more, more_delivered),
        key=lambda r: (r[0], r[1], r[2]))

    # nothing new: no micro-batch, nothing added
    three = run_ingest(spark, output=out, checkpoint=ck, once=True, bootstrap=tansu.bootstrap,
                       topics=[topic])
    assert three.records == 0 and three.micro_batches == 0 and three.files == 0


def test_ingest_stream_reports_lag_per_partition(spark: Any, tansu: TansuBroker,
                                                 make_tansu_topic: Callable[..., str],
                                                 tmp_path: Path) -> None:
    """Each micro-batch's line and the summary give the offsets behind latest per partition,
    and the bytes behind at the run's bytes per record (here 14: 4-byte keys, 10-byte
    values)."""
    from pyconsumer.ingest.lag import PartitionLag
    from pyconsumer.ingest.metrics import IngestMetrics

    topic = make_tansu_topic(2)
    recs = [TestRecord(key=b"k%03d" % i, value=b"v" * 10, partition=p, timestamp_ms=1_000 + i)
            for p in (0, 1) for i in range(300)]
    produce(tansu.bootstrap, topic, recs)
    status = io.StringIO()
    run = run_ingest(spark, output=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"),
                     once=True, bootstrap=tansu.bootstrap, topics=[topic],
                     options={"maxOffsetsPerTrigger": "250"},
                     status=StatusLine(status, live=False), poll_interval=0.2,
                     metrics=(published := IngestMetrics()))
    lines = [line for line in status.getvalue().splitlines() if line.startswith("micro-batch")]
    # 250 offsets a batch, shared evenly: 175 + 175 behind, then 50 + 50, then none
    assert [line.split("; ")[-1] for line in lines] == [
        "behind latest 350 records (~4.9 kB)", "behind latest 100 records (~1.4 kB)",
        "behind latest 0 records (~0 B)"]
    assert run.lag == [PartitionLag(topic, 0, 0, 0), PartitionLag(topic, 1, 0, 0)]
    assert "behind latest: none (2 partitions at their latest offset)" in format_summary(run)
    # what --metrics-port serves of the run
    now = published.snapshot()
    assert (now.records, now.bytes, now.batches, now.rejected) == (600, 8400, 3, 0)
    assert now.offsets == {(topic, 0): 300, (topic, 1): 300}
    assert now.lag == tuple(run.lag)


def test_ingest_continuous_stops_on_request(spark: Any, tansu: TansuBroker,
                                            make_tansu_topic: Callable[..., str],
                                            tmp_path: Path) -> None:
    topic = make_tansu_topic(1)
    records = sample_records(100, partitions=1, seed=3)
    delivered = produce(tansu.bootstrap, topic, records)
    stop = threading.Event()
    status = io.StringIO()

    def stop_after_first_batch() -> None:
        deadline = time.monotonic() + 60
        while "micro-batch" not in status.getvalue() and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()

    watcher = threading.Thread(target=stop_after_first_batch, daemon=True)
    watcher.start()
    summary = run_ingest(spark, output=str(tmp_path / "o"), checkpoint=str(tmp_path / "c"),
                         trigger="500ms", bootstrap=tansu.bootstrap, topics=[topic],
                         status=StatusLine(status, live=False), stop=stop, poll_interval=0.1)
    watcher.join()
    assert summary.mode == "continuous" and summary.interrupted
    assert got_summary(summary) == expected_summary(topic, records, delivered)
    assert "stopped by Ctrl-C" in format_summary(summary)


def test_demo_reads_every_record_and_cleans_up(spark: Any, tmp_path: Path) -> None:
    """The demo's figures, and its last step: the topic in a Delta table (kept here, at the
    path given) holding every produced record once, as deltalake reads it, with the offsets."""
    deltalake = pytest.importorskip("deltalake")
    table = str(tmp_path / "demo-table")
    out = io.StringIO()
    before = set(os.listdir("/tmp"))
    arrow_conf = ("spark.sql.execution.arrow.localRelationThreshold",
                  "spark.sql.execution.arrow.maxRecordsPerBatch")
    conf_before = {key: spark.conf.get(key, None) for key in arrow_conf}
    assert run_demo(records=2000, partitions=3, spark=spark, table=table, out=out) == 0
    # the read back changes two Arrow settings of the session for a while: put back after
    assert {key: spark.conf.get(key, None) for key in arrow_conf} == conf_before
    text = out.getvalue()
    assert re.search(r"records produced\s+2,000", text)
    assert re.search(r"records read into Spark\s+2,000", text)
    assert re.search(r"records/s into Spark\s+[0-9,]+ \(count\)", text)
    assert "df.count() = 2,000" in text
    assert re.search(r"^\s+0\s+667\s+0-666\s", text, re.MULTILINE)     # groupBy partition
    assert re.search(r"^\s+0\s+0\s+0\s+user-0000\s+0\.00\s+2023-11-14 22:13:20\.000$", text,
                     re.MULTILINE)                                      # from_json row
    assert "cleaned up: broker stopped" in text
    port = re.search(r"Tansu broker on 127\.0\.0\.1:(\d+)", text)
    assert port is not None
    left = set(os.listdir("/tmp")) - before
    assert not [name for name in left if name.startswith(f"tansu-{port.group(1)}-")]

    # the Delta table step's lines: the command it runs as, what it wrote, the table read
    # back into Spark per partition beside the offsets the table holds, where it is
    bootstrap = f"127.0.0.1:{port.group(1)}"
    assert (f"  pyconsumer ingest -b {bootstrap} -t pyconsumer-demo --output {table} "
            "--table-format delta --partition-by partition\n") in text
    assert re.search(r"^wrote 2,000 records in [0-9.]+ s \([0-9,]+ records/s\): \d+ Parquet "
                     r"files? \(a folder per Kafka partition\), committed as version 1 with the "
                     r"offsets$", text, re.MULTILINE)
    assert ('spark.createDataFrame(DeltaTable(path).to_pyarrow_table(columns=["partition", '
            '"offset"])).groupBy("partition") in ') in text
    for p, n in ((0, 667), (1, 667), (2, 666)):
        assert re.search(rf"^\s+{p}\s+{n}\s+0-{n - 1}\s+{n}$", text, re.MULTILINE), p
    assert (f"the Delta table at {table} (kept) holds 2,000 records, every record produced "
            f'once: read it with deltalake.DeltaTable("{table}").to_pyarrow_table()\n') in text
    assert re.search(r"records in the Delta table\s+2,000 \(version 1, written at [0-9,]+ "
                     r"records/s\)", text)
    assert "the Delta table removed" not in text     # a table the caller placed stays

    # the table, read by deltalake: every record produced once (record i went to partition
    # i % 3 at offset i // 3), partitioned by partition, the next offsets in its txn actions
    delta = deltalake.DeltaTable(table)
    assert delta.version() == 1 and delta.metadata().partition_columns == ["partition"]
    rows = delta.to_pyarrow_table(columns=["topic", "partition", "offset", "key", "value"]
                                  ).to_pylist()
    assert len(rows) == 2000
    got = sorted((r["partition"], r["offset"], r["topic"], r["key"], r["value"]) for r in rows)
    want = sorted((i % 3, i // 3, "pyconsumer-demo", key.encode(), value.encode())
                  for i, (key, value) in enumerate(_demo_values(2000)))
    assert got == want
    for p, n in ((0, 667), (1, 667), (2, 666)):
        assert sorted(r["offset"] for r in rows if r["partition"] == p) == list(range(n))
        assert delta.transaction_version(f"pyconsumer-pyconsumer-demo-{p}") == n


def test_demo_without_deltalake_skips_the_table_in_one_line(
        spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """deltalake missing (None in sys.modules: its import raises ImportError in this process):
    everything else runs, the table step is one line naming the install command, and no
    folder is made for a table."""
    monkeypatch.setitem(sys.modules, "deltalake", None)
    out = io.StringIO()
    before = set(os.listdir("/tmp"))
    assert run_demo(records=40, partitions=2, spark=spark, out=out) == 0
    text = out.getvalue()
    skip = ("the Delta table step is skipped: it needs deltalake, which is not installed: "
            + install_hint("delta"))
    assert text.count(skip) == 1 and "\n\n" + skip + "\n\nfigures:\n" in text
    assert "pip install -e '.[delta]'" in skip
    assert "Traceback" not in text and "Delta table at" not in text
    assert "records in the Delta table" not in text and "the Delta table removed" not in text
    assert re.search(r"records read into Spark\s+40$", text, re.MULTILINE)
    assert not [e for e in set(os.listdir("/tmp")) - before if e.startswith("pyconsumer-demo-")]


# ----------------------------------------------------------------- typed values: what is counted

DDL = "id long, item string"


def _typed_topic(tansu: TansuBroker, make_tansu_topic: Callable[..., str]
                 ) -> tuple[str, list[TestRecord]]:
    """Partition 0: 40 JSON values with DDL's fields; partition 1: 30 values that are not
    JSON. Keys throughout (UTF-8, two bytes to a character in part)."""
    topic = make_tansu_topic(2)
    good = [TestRecord(key=f"κ{i}".encode(), value=json.dumps({"id": i, "item": "x" * i}).encode(),
                       partition=0, timestamp_ms=1_700_000_000_000 + i) for i in range(40)]
    bad = [TestRecord(key=f"b{i}".encode(), value=b"not json " + b"!" * i, partition=1,
                      timestamp_ms=1_700_000_000_000 + i) for i in range(30)]
    for batch in (good, bad):
        assert {p for p, _ in produce(tansu.bootstrap, topic, batch)} == {batch[0].partition}
    return topic, good + bad


def _raw_bytes(records: list[TestRecord]) -> int:
    return sum(len(r.key or b"") + len(r.value or b"") for r in records)


def _parquet_files(path: Path) -> dict[str, int]:
    """Each Parquet data file of a dataset folder and its row count."""
    import pyarrow.parquet as pq

    return {f.name: pq.ParquetFile(f).metadata.num_rows for f in sorted(path.glob("*.parquet"))}


def test_typed_and_untyped_runs_count_the_same_bytes(spark: Any, tansu: TansuBroker,
                                                     make_tansu_topic: Callable[..., str],
                                                     tmp_path: Path) -> None:
    """The bytes of a typed run are the records' raw key + value bytes as read, as an untyped
    run of the same records counts them (not 0 for a decoded value), batch and streaming;
    with --bad-records the output's bytes are those of the good records."""
    topic, records = _typed_topic(tansu, make_tansu_topic)
    typed = {"valueFormat": "json", "valueSchema": DDL, "keyFormat": "string"}
    untyped = run_ingest(spark, output=str(tmp_path / "u"), bootstrap=tansu.bootstrap,
                         topics=[topic])
    assert (untyped.records, untyped.bytes) == (70, _raw_bytes(records))
    batch = run_ingest(spark, output=str(tmp_path / "t"), bootstrap=tansu.bootstrap,
                       topics=[topic], options=typed)
    assert (batch.records, batch.bytes, batch.read_bytes) == (70, _raw_bytes(records),
                                                              _raw_bytes(records))
    assert batch.null_fields == ()
    stream = run_ingest(spark, output=str(tmp_path / "s"), checkpoint=str(tmp_path / "ck"),
                        once=True, bootstrap=tansu.bootstrap, topics=[topic], options=typed)
    assert (stream.records, stream.bytes) == (70, _raw_bytes(records))
    line = format_summary(stream).splitlines()[-1]
    assert line.startswith(f"  70 records, {human_bytes(_raw_bytes(records))} (key + value) in ")
    split = run_ingest(spark, output=str(tmp_path / "g"), bad_records=str(tmp_path / "b"),
                       bootstrap=tansu.bootstrap, topics=[topic], options=typed)
    assert (split.records, split.rejected_records) == (40, 30)
    assert split.bytes == _raw_bytes(records[:40])


def test_no_empty_parquet_file_in_a_batch_run(spark: Any, tansu: TansuBroker,
                                              make_tansu_topic: Callable[..., str],
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A batch write adds only files with rows, to --output and to --bad-records (Spark's
    first task writes a file even with no row for it); a --bad-records folder this run made
    and wrote nothing to is not left behind."""
    topic, records = _typed_topic(tansu, make_tansu_topic)
    flags = ["--value-format", "json", "--value-schema", DDL]
    out, bad = tmp_path / "out", tmp_path / "bad"
    # a task per partition: one task has no good row, the other no rejected one
    code = main(["ingest", "-b", tansu.bootstrap, "-t", topic, "--output", str(out),
                 "--bad-records", str(bad), "-o", "minRecordsPerPartition=1", *flags])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "batch: read and wrote (4/4 tasks)" in captured.err
    assert "  40 good and 30 rejected records (1 Parquet file added to " in captured.out
    assert list(_parquet_files(out).values()) == [40]
    assert list(_parquet_files(bad).values()) == [30]
    # nothing rejected: no rejected-records file, and the folder made for it goes
    only_good = json.dumps({topic: {"0": -2, "1": 30}})
    code = main(["ingest", "-b", tansu.bootstrap, "-t", topic, "--output", str(out),
                 "--bad-records", str(tmp_path / "none"), "--starting-offsets", only_good,
                 *flags])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "  40 good and 0 rejected records (0 Parquet files added to " in captured.out
    assert list(_parquet_files(out).values()) == [40, 40]
    assert not (tmp_path / "none").exists()


def test_every_record_rejected_exits_1(spark: Any, tansu: TansuBroker,
                                       make_tansu_topic: Callable[..., str], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A format no record fits: exit 1 with one line saying so (not "0 good and 30 rejected"
    and exit 0), unless --allow-all-rejected (a warning then); no Parquet file and no folder in
    --output either way."""
    topic, _ = _typed_topic(tansu, make_tansu_topic)
    bad_only = json.dumps({topic: {"0": 40, "1": -2}})
    base = ["ingest", "-b", tansu.bootstrap, "-t", topic, "--starting-offsets", bad_only,
            "--value-format", "json", "--value-schema", DDL]
    out, bad = tmp_path / "out", tmp_path / "bad"
    code = main([*base, "--output", str(out), "--bad-records", str(bad)])
    captured = capsys.readouterr()
    assert code == 1
    assert "  0 good and 30 rejected records (1 Parquet file added to " in captured.out
    assert captured.err.splitlines()[-1] == (
        f"pyconsumer ingest: every record read was rejected (30 records of {topic}; none "
        f"written to {out}): the reason of each is in {bad} (--allow-all-rejected to exit 0)")
    assert not out.exists() and list(_parquet_files(bad).values()) == [30]

    code = main([*base, "--output", str(out), "--mode", "DROPMALFORMED", "--allow-all-rejected"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "  0 good and 30 rejected records (left out: --mode DROPMALFORMED)" in captured.out
    assert captured.err.splitlines()[-1] == (
        f"pyconsumer ingest: warning: every record read was rejected (30 records of {topic}; "
        f"none written to {out}): --mode DROPMALFORMED left them out; --bad-records DIR keeps "
        "them with the reason of each")
    assert not out.exists()


def test_fields_null_in_every_record_are_named(spark: Any, tansu: TansuBroker,
                                              make_tansu_topic: Callable[..., str],
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A JSON schema whose fields no record has (PERMISSIVE: every field null): exit 0, a
    warning naming them; a field some record has is not named."""
    topic, _ = _typed_topic(tansu, make_tansu_topic)
    out = tmp_path / "out"
    code = main(["ingest", "-b", tansu.bootstrap, "-t", topic, "--output", str(out),
                 "--ending-offsets", json.dumps({topic: {"0": 40, "1": 0}}),
                 "--value-format", "json", "--value-schema", "sku string, id long, qty int"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err.splitlines()[-1] == (
        f"pyconsumer ingest: warning: value.sku and value.qty were null in all 40 records "
        f"written from {topic}: does the schema name fields the records have?")
    assert list(_parquet_files(out).values()) == [40]
