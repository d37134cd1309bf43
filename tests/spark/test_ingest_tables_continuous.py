"""``pyconsumer ingest --table-format delta|iceberg --trigger INTERVAL``: continuous runs into a
table, a round (one commit with the offsets) per trigger, while a producer writes in batches.
Restarted after Ctrl-C between rounds, Ctrl-C during a round (its files written, not committed)
and a ``stop`` Event: every record is in the table exactly once (read back by deltalake and
pyiceberg), the offsets held equal the end offsets and a round with nothing new adds no table
version. In-process runs sharing the session Spark; Ctrl-C is a KeyboardInterrupt raised where
the signal would land (the wait for the next trigger, or the round's commit)."""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import pyconsumer.ingest.tables as tables
from pyconsumer.testing import TansuBroker, produce, sample_records

from tests.spark import test_ingest_tables as base
from tests.spark.sparkdata import Row, expected_rows

pytestmark = pytest.mark.spark

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")

_real_wait = tables._wait


class Producer:
    """Writes a batch of 30 records (two partitions) every 0.3 s until stopped, then one more
    (so a run after stop() has records to read); what it wrote."""

    def __init__(self, bootstrap: str, topic: str, *, seed: int) -> None:
        self.bootstrap, self.topic, self.seed = bootstrap, topic, seed
        self.rows: list[Row] = []
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.batches = 0
        self.stopped = False

    def _batch(self) -> None:
        records = sample_records(30, partitions=2, seed=self.seed + self.batches)
        at = produce(self.bootstrap, self.topic, records)
        self.rows += expected_rows(self.topic, records, at, headers=True)
        self.batches += 1

    def _run(self) -> None:
        try:
            while not self.done.is_set():
                self._batch()
                self.done.wait(0.3)
        except BaseException as exc:   # surfaced by stop()
            self.error = exc

    def start(self) -> Producer:
        self.thread.start()
        return self

    def stop(self) -> list[Row]:
        self.done.set()
        self.thread.join(30)
        assert self.error is None and not self.thread.is_alive()
        if not self.stopped:
            self.stopped = True
            self._batch()
        return base._sorted(self.rows)

    def ends(self) -> dict[int, int]:
        return {p: sum(1 for r in self.rows if r[1] == p) for p in range(2)}


@pytest.fixture
def interrupt(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[], bool]], None]]:
    """Ctrl-C at the wait for the next trigger once ``when()`` holds."""
    real = tables._wait

    def arm(when: Callable[[], bool]) -> None:
        def wait(stop: threading.Event, seconds: float) -> bool:
            if when():
                raise KeyboardInterrupt
            return real(stop, seconds)

        monkeypatch.setattr(tables, "_wait", wait)

    yield arm


def committed_versions(err: str) -> list[int]:
    return [int(v) for v in re.findall(r"^.*round \d+: read and wrote \d+ tasks? in [\d.]+ s, "
                                       r"committed as (?:version|snapshot) (\d+); "
                                       r"behind latest [\d,]+ records(?: \(~[^)]+\))?$",
                                       err, re.M)]


def _round_kinds(err: str) -> list[str]:
    return re.findall(r"round \d+: read and wrote \d+ tasks? in [\d.]+ s, (committed|nothing)",
                      err)


def test_delta_continuous_restarted_three_times_every_record_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest, interrupt: Callable[[Callable[[], bool]], None]) -> None:
    from pyconsumer.ingest import TableTarget, open_table, plan_table_read, source_options
    from pyconsumer.sinks.delta import DeltaSink
    from pyconsumer.spark.options import parse_options

    topic = make_tansu_topic(2)
    table = str(tmp_path / "events")
    args = ["-b", tansu.bootstrap, "-t", topic, "--output", table, "--table-format", "delta",
            "--trigger", "1s", *base.HEADERS]
    producer = Producer(tansu.bootstrap, topic, seed=400).start()
    request.addfinalizer(producer.done.set)
    versions: list[int] = []

    def check_summary(out: str) -> None:
        """The summary counts what the run committed: the table's offsets since the run began."""
        after = base.delta_txns(table, topic, 2)
        assert base.summary_of(out, topic) == {
            p: (f"{before[p]}-{after[p] - 1}", after[p] - before[p])
            for p in range(2) if (after[p] or 0) > before[p]}

    # 1. Ctrl-C between rounds, after three rounds
    before = {0: 0, 1: 0}
    calls = iter(range(1, 100))
    interrupt(lambda: next(calls) == 3)
    code, out, err = base.ingest(capsys, *args)
    assert code == 130, err
    assert "ingest (continuous, every 1s)" in err and "stopped by Ctrl-C" in out
    assert len(_round_kinds(err)) == 3
    versions += committed_versions(err)
    assert versions and deltalake.DeltaTable(table).version() == versions[-1]
    files = len(deltalake.DeltaTable(table).file_uris())
    assert (f"ingest summary (continuous; {files} data file{'s' if files != 1 else ''} committed "
            f"to the Delta table {table} in {len(versions)} round{'s' if len(versions) != 1 else ''}, "
            "stopped by Ctrl-C):") in out
    check_summary(out)

    # 2. Ctrl-C during a round: its files are written, its commit never happens
    before = {p: v or 0 for p, v in base.delta_txns(table, topic, 2).items()}
    real_commit = DeltaSink.commit
    commits = iter(range(1, 100))

    def commit(self: DeltaSink, files: Any, offsets: Any) -> int | None:
        if next(commits) == 2:
            raise KeyboardInterrupt
        return real_commit(self, files, offsets)

    monkeypatch.setattr(tables, "_wait", _real_wait)
    monkeypatch.setattr(DeltaSink, "commit", commit)
    code, out, err = base.ingest(capsys, *args)
    monkeypatch.setattr(DeltaSink, "commit", real_commit)
    assert code == 130, err
    assert "stopped by Ctrl-C" in out
    versions += committed_versions(err)
    assert len(committed_versions(err)) == 1
    dt = deltalake.DeltaTable(table)
    assert dt.version() == versions[-1]
    check_summary(out)
    on_disk = {str(p) for p in Path(table).rglob("*.parquet") if "_delta_log" not in p.parts}
    assert {u.removeprefix("file://") for u in dt.file_uris()} < on_disk              # the interrupted round's files: in no commit

    # 3. a stop Event, called as a function, capped by maxOffsetsPerTrigger
    before = {p: v or 0 for p, v in base.delta_txns(table, topic, 2).items()}
    source = parse_options(source_options(
        bootstrap=tansu.bootstrap, topics=[topic], starting_offsets="earliest",
        ending_offsets=None, options={"includeHeaders": "true", "maxOffsetsPerTrigger": "40"},
        kafka={}), streaming=True)
    read = plan_table_read(source, [topic])
    sink = open_table(TableTarget("delta", table), read.schema)
    stop = threading.Event()
    timer = threading.Timer(4.0, stop.set)
    timer.start()
    first = deltalake.DeltaTable(table).version()
    summary = tables.run_table_ingest_continuous(spark, sink, read, output=table,
                                                 trigger_ms=500, stop=stop)
    timer.join()
    assert summary.interrupted and summary.mode == "continuous"
    dt = deltalake.DeltaTable(table)
    assert summary.micro_batches == dt.version() - first > 0
    after = base.delta_txns(table, topic, 2)
    assert {(s.partition, s.first_offset, s.last_offset + 1, s.records)
            for s in summary.partitions} == {
        (p, before[p], after[p], after[p] - before[p]) for p in range(2)
        if (after[p] or 0) > before[p]}
    held = dict(before)
    for commit_info in reversed(dt.history(summary.micro_batches)):
        moved = {int(k.rsplit(".", 1)[1]): int(v) for k, v in commit_info.items()
                 if k.startswith(f"pyconsumer.offset.{topic}.")}
        assert 0 < sum(v - held[p] for p, v in moved.items()) <= 40
        held.update(moved)
    assert held == after
    versions += list(range(first + 1, dt.version() + 1))

    # 4. the producer stops; the run catches up, a round finds nothing new, then Ctrl-C
    rows = producer.stop()
    ends = producer.ends()
    seen: list[int] = []

    def caught_up() -> bool:
        seen.append(deltalake.DeltaTable(table).version())
        return (len(seen) >= 2 and seen[-1] == seen[-2]
                and base.delta_txns(table, topic, 2) == ends)

    interrupt(caught_up)
    code, out, err = base.ingest(capsys, *args[:-4], "--trigger", "500ms", *base.HEADERS)
    assert code == 130, err
    kinds = _round_kinds(err)
    assert kinds[-1] == "nothing" and "committed" in kinds
    versions += committed_versions(err)

    # every record once, the txn versions are the end offsets, versions 1.. with no gap
    assert base.delta_rows(table) == rows
    assert base.delta_txns(table, topic, 2) == ends
    assert versions == list(range(1, deltalake.DeltaTable(table).version() + 1))
    assert spark.range(3).count() == 3


def test_iceberg_continuous_every_record_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest,
        interrupt: Callable[[Callable[[], bool]], None]) -> None:
    topic = make_tansu_topic(2)
    wh = str(tmp_path / "warehouse")
    args = ["-b", tansu.bootstrap, "-t", topic, "--table-format", "iceberg",
            "--output", "kafka.events", "--warehouse", wh, "--trigger", "500ms", *base.HEADERS]
    producer = Producer(tansu.bootstrap, topic, seed=500).start()
    request.addfinalizer(producer.done.set)
    seen: list[int] = []

    def held() -> dict[int, int]:
        out: dict[int, int] = {}
        for snap in base.iceberg_table(wh, "kafka.events").snapshots():
            props = snap.summary.additional_properties
            out.update({int(k.rsplit(".", 1)[1]): int(v) for k, v in props.items()
                        if k.startswith(f"pyconsumer.offset.{topic}.")})
        return out

    def caught_up() -> bool:
        seen.append(len(base.iceberg_table(wh, "kafka.events").snapshots()))
        if seen[-1] >= 1 and not producer.stopped:
            producer.stop()         # its last batch comes after a commit: a round of its own
            return False
        return (producer.stopped and len(seen) >= 2 and seen[-1] == seen[-2]
                and held() == producer.ends())

    interrupt(caught_up)
    code, out, err = base.ingest(capsys, *args)
    assert code == 130, err
    rows = producer.stop()
    kinds = _round_kinds(err)
    assert kinds[-1] == "nothing" and kinds.count("committed") >= 2
    snapshots = base.iceberg_table(wh, "kafka.events").snapshots()
    assert [s.snapshot_id for s in snapshots] == committed_versions(err)
    assert base.iceberg_rows(wh, "kafka.events") == rows
    assert held() == producer.ends()
    ends = producer.ends()
    assert base.summary_of(out, topic) == {p: (f"0-{ends[p] - 1}", ends[p]) for p in range(2)}


def test_continuous_refusals_before_spark(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    common = ["-b", "127.0.0.1:1", "-t", "t", "--table-format", "delta",
              "--output", str(tmp_path / "d")]
    assert base.ingest(capsys, *common, "--trigger", "1s", "--ending-offsets", "latest") == (
        2, "", "pyconsumer ingest: --ending-offsets is for batch runs (without --trigger)\n")
    assert base.ingest(capsys, *common, "--trigger", "1s", "--checkpoint", str(tmp_path / "c")) == (
        2, "", "pyconsumer ingest: --checkpoint: --table-format delta runs resume from the table, "
               "without it (batch, or continuous with --trigger INTERVAL)\n")
    assert not (tmp_path / "d").exists() and not (tmp_path / "c").exists()
