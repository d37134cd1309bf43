"""``pyconsumer ingest --table-format delta|iceberg`` on real Apache Kafka: exactly once across
crashes, read back by deltalake and pyiceberg (readers independent of the writer's code).

* A crash loop: runs of ``python -m pyconsumer ingest`` (each its own process and JVM) on one
  table, the driver SIGKILLed in turn before the tasks write (``before-files``), after they
  wrote their files (``after-files``), right after the commit (``after-commit``), or not at
  all; confluent-kafka's producer adds records between the runs. After every run the table
  holds exactly the records its commits covered (a killed run's files are in no commit), and
  after a final clean run every record produced, once, with the offsets reached as the table's
  txn versions (Delta) or snapshot properties (Iceberg).
* A task's Python worker SIGKILLed once its files are written, before the task returns: with
  task retries (``--master local[2,3]``) the run succeeds, every record once, the killed
  attempt's files in no commit; without (``local[2]``) the run fails with one line, commits
  nothing, and a rerun completes exactly once.
* Confluent-framed Avro (confluent-kafka's AvroSerializer, the Apicurio registry) into a Delta
  table partitioned by a value field and ``day(timestamp)``: the typed fields exact, the folders
  the partitions.

Rows are compared whole: topic, partition, offset, key, value, timestamp (ms), timestampType and
headers.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.cli import main
from pyconsumer.testing import ApicurioRegistry, KafkaCluster, TestRecord, produce, sample_records

from tests.conftest import unique_topic_name
from tests.kafka.test_spark_on_kafka import KEEP
from tests.spark.sparkdata import Row, expected_rows

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")

from tests.spark.test_ingest_tables import (  # noqa: E402 - after the skips: it needs both
    _jvms,
    _sorted,
    delta_rows,
    delta_txns,
    iceberg_rows,
    iceberg_table,
    summary_of,
)

HEADERS = ["-o", "includeHeaders=true"]
PARTITIONS = 3
#: the crash point of run i is CRASH_POINTS[i % 4] (None: a clean run)
CRASH_POINTS = ("before-files", "after-files", "after-commit", None)
#: the driver JVM of each run: C1 only and the serial GC start it faster (tests only)
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: a safety net for a hung run, not a timed assertion
RUN_TIMEOUT = 180.0

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVMs through /proc")


# ------------------------------------------------------------------------------- helpers


@dataclass
class Topic:
    """A topic on the session Kafka and every row produced to it so far."""

    kafka: KafkaCluster
    name: str
    rows: list[Row] = field(default_factory=list)

    def produce(self, n: int, seed: int) -> None:
        records = sample_records(n, partitions=PARTITIONS, seed=seed)
        delivered = produce(self.kafka.bootstrap_servers, self.name, records)
        self.rows = _sorted(self.rows + expected_rows(self.name, records, delivered, headers=True))

    def ends(self) -> dict[int, int]:
        """partition -> the next offset (every partition has records)."""
        return {p: 1 + max(r[2] for r in self.rows if r[1] == p) for p in range(PARTITIONS)}


@dataclass
class Run:
    code: int
    out: str
    err: str
    seconds: float


def ingest_process(args: list[str], scratch: Path, driver: str, *, crash_at: str | None,
                   master: str = "local[2]") -> Run:
    """``python -m pyconsumer ingest ARGS`` in its own process (its own JVM, with the
    ``driver`` JVM flags), with the crash point set or not; its exit code (-9: SIGKILLed) and
    output, once it and its JVM are gone."""
    app = f"pyconsumer ingest on kafka {scratch.name} {time.monotonic_ns()}"
    env = {**os.environ, "TMPDIR": str(scratch)}     # a killed run's Spark scratch stays here
    env.pop("PYCONSUMER_INGEST_CRASH_AT", None)
    if crash_at is not None:
        env["PYCONSUMER_INGEST_CRASH_AT"] = crash_at
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyconsumer", "ingest", *args, "--master", master,
         "--conf", f"spark.app.name={app}", "--conf", f"spark.driver.extraJavaOptions={driver}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=30)
    seconds = time.monotonic() - started
    # a killed driver's JVM exits when its parent is gone (stdin closed): wait for that
    deadline = time.monotonic() + 60
    while _jvms(app) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _jvms(app)
    for pid in left:                 # our run's JVM, by its id
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"the run left its JVM ({app})"
    assert "Traceback" not in err, err
    return Run(proc.returncode, out, err, seconds)


def ingest(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command in this process (the session's Spark)."""
    code = main(["ingest", *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def parquet_files(folder: str) -> set[str]:
    return {str(p) for p in Path(folder).rglob("*.parquet")}


def delta_files(table: str) -> set[str]:
    """The data files of the table's current version (its log's adds)."""
    return {u.removeprefix("file://") for u in deltalake.DeltaTable(table).file_uris()}


def iceberg_files(warehouse: str, name: str) -> set[str]:
    table = iceberg_table(warehouse, name)
    return {t.file.file_path.removeprefix("file://") for t in table.scan().plan_files()}


def iceberg_offsets(warehouse: str, name: str, topic: str) -> dict[int, int] | None:
    snapshot = iceberg_table(warehouse, name).current_snapshot()
    if snapshot is None:
        return None
    props = snapshot.summary.additional_properties
    return {p: int(props[f"pyconsumer.offset.{topic}.{p}"]) for p in range(PARTITIONS)}


@pytest.fixture(scope="module")
def driver_jvm(kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory,
               timings: dict[str, float]) -> str:
    """The JVM flags of the runs' drivers: FAST_JVM, and the classes a first run loaded (Spark's
    own, some thousands) shared from an archive it dumped at its exit (Java's AppCDS), which
    starts each of the module's ~30 JVMs about 3 s sooner. Without an archive (a JVM that cannot
    dump one), FAST_JVM alone; a JVM that cannot use it ignores it (-Xshare:auto)."""
    started = time.monotonic()
    folder = tmp_path_factory.mktemp("driver-cds")
    archive = folder / "spark.jsa"
    topic = kafka.create_topic(unique_topic_name("cds"), 1)
    produce(kafka.bootstrap_servers, topic, sample_records(10, partitions=1, seed=1))
    # -Xlog:disable: the JVM's own log lines (the archive's warnings) stay off the output
    run = ingest_process(["-b", kafka.bootstrap_servers, "-t", topic, "--output",
                          str(folder / "table"), "--table-format", "delta"], folder,
                         f"{FAST_JVM} -XX:ArchiveClassesAtExit={archive} -Xlog:disable",
                         crash_at=None)
    timings["the driver's class archive (one run)"] = time.monotonic() - started
    if run.code != 0 or not archive.is_file():
        return FAST_JVM         # the runs that matter will show what is wrong, if anything
    return f"{FAST_JVM} -XX:SharedArchiveFile={archive} -Xshare:auto -Xlog:disable"


@pytest.fixture(scope="module")
def timings() -> Iterator[dict[str, float]]:
    """Seconds per phase, printed at the module's end (``-s`` shows them)."""
    spent: dict[str, float] = {}
    yield spent
    for name, seconds in spent.items():
        print(f"\n{name}: {seconds:.1f} s", end="")


# ------------------------------------------------------------------------------- crash loops


@needs_proc
@pytest.mark.timeout(600)     # a safety net: 2.5-3 min on 2 busy cores, near the default 300 s
def test_delta_crash_loop_every_record_once(
        spark: Any, kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        driver_jvm: str, timings: dict[str, float]) -> None:
    """20 runs on one Delta table, run i SIGKILLed at CRASH_POINTS[i % 4], 150 more records
    (50 a partition) before each; after each run the table holds exactly the records its
    commits covered and its txn versions are their end offsets; a killed run added a version
    only when killed after its commit, and its files are in the table only then. A final clean
    run (this process) adds the last records: every record once."""
    topic = Topic(kafka, kafka.create_topic(unique_topic_name("crash-delta"), PARTITIONS,
                                            config=KEEP))
    table = str(tmp_path / "events")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = ["-b", kafka.bootstrap_servers, "-t", topic.name, "--output", table,
            "--table-format", "delta", *HEADERS]
    committed: list[Row] = []               # the rows the table's commits cover
    ends: dict[int, int | None] = {p: None for p in range(PARTITIONS)}
    version = None
    started = time.monotonic()
    runs: list[float] = []
    for i in range(20):
        topic.produce(150, seed=1000 + i)
        point = CRASH_POINTS[i % 4]
        on_disk = parquet_files(table)
        run = ingest_process(args, scratch, driver_jvm, crash_at=point)
        runs.append(run.seconds)
        what = f"run {i} ({point or 'clean'})"
        if point is None:
            assert run.code == 0, f"{what}: {run.err}"
            # the run after an after-commit kill: only the records produced since
            assert summary_of(run.out, topic.name) == {
                p: (f"{e - 50}-{e - 1}", 50) for p, e in topic.ends().items()}, what
        else:
            assert run.code == -signal.SIGKILL, f"{what}: {run.code} {run.err}"
        new_files = parquet_files(table) - on_disk
        dt_ = deltalake.DeltaTable(table)
        if point in ("before-files", "after-files"):
            # nothing committed; the files written (after-files) are in no commit
            assert dt_.version() == (0 if version is None else version), what
            assert (new_files != set()) == (point == "after-files"), what
            assert new_files.isdisjoint(delta_files(table)), what
        else:
            committed = topic.rows
            ends = dict(topic.ends())
            assert dt_.version() == (1 if version is None else version + 1), what
            assert new_files != set() and new_files <= delta_files(table), what
            version = dt_.version()
        assert delta_rows(table) == committed, what
        assert delta_txns(table, topic.name, PARTITIONS) == ends, what
    loop = time.monotonic() - started

    topic.produce(150, seed=2000)
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic.name) == {
        p: (f"{e - 50}-{e - 1}", 50) for p, e in topic.ends().items()}
    assert delta_rows(table) == topic.rows
    assert len(topic.rows) == 21 * 150 and len({r[:3] for r in topic.rows}) == 21 * 150
    assert delta_txns(table, topic.name, PARTITIONS) == topic.ends() == {p: 1050 for p in range(3)}
    # 10 committing runs in the loop (after-commit and clean), the final one, the creation (0)
    assert deltalake.DeltaTable(table).version() == 11
    orphans = parquet_files(table) - delta_files(table)
    assert orphans != set()                   # the after-files runs' files, in no commit
    timings["delta crash loop (20 runs)"] = loop
    timings["delta crash loop, slowest run"] = max(runs)
    timings["delta crash loop, mean run"] = sum(runs) / len(runs)


@needs_proc
@pytest.mark.timeout(600)
def test_iceberg_crash_loop_every_record_once(
        spark: Any, kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        driver_jvm: str, timings: dict[str, float]) -> None:
    """The loop with 4 runs (one per crash point) on one Iceberg table (SQLite catalog), read by
    pyiceberg (the 20-run loop above is Delta's; Iceberg shares the run's code): a killed
    run adds a snapshot only when killed after its commit; the current snapshot's offsets are
    the committed end offsets; a final clean run: every record once."""
    topic = Topic(kafka, kafka.create_topic(unique_topic_name("crash-iceberg"), PARTITIONS,
                                            config=KEEP))
    wh = str(tmp_path / "warehouse")
    name = "kafka.crashed"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = ["-b", kafka.bootstrap_servers, "-t", topic.name, "--table-format", "iceberg",
            "--output", name, "--warehouse", wh, *HEADERS]
    committed: list[Row] = []
    ends: dict[int, int] | None = None
    snapshots = 0
    started = time.monotonic()
    for i in range(4):
        topic.produce(150, seed=3000 + i)
        point = CRASH_POINTS[i % 4]
        on_disk = parquet_files(wh)
        run = ingest_process(args, scratch, driver_jvm, crash_at=point)
        what = f"run {i} ({point or 'clean'})"
        assert run.code == (0 if point is None else -signal.SIGKILL), f"{what}: {run.err}"
        if point is None:
            assert summary_of(run.out, topic.name) == {
                p: (f"{e - 50}-{e - 1}", 50) for p, e in topic.ends().items()}, what
        new_files = parquet_files(wh) - on_disk
        if point in ("before-files", "after-files"):
            assert (new_files != set()) == (point == "after-files"), what
            assert new_files.isdisjoint(iceberg_files(wh, name)), what
        else:
            committed, ends = topic.rows, topic.ends()
            snapshots += 1
            assert new_files != set() and new_files <= iceberg_files(wh, name), what
        assert len(iceberg_table(wh, name).snapshots()) == snapshots, what
        assert iceberg_offsets(wh, name, topic.name) == ends, what
        assert iceberg_rows(wh, name) == committed, what
    loop = time.monotonic() - started

    topic.produce(150, seed=4000)
    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic.name) == {
        p: (f"{e - 50}-{e - 1}", 50) for p, e in topic.ends().items()}
    assert iceberg_rows(wh, name) == topic.rows and len(topic.rows) == 5 * 150
    assert iceberg_offsets(wh, name, topic.name) == topic.ends() == {p: 250 for p in range(3)}
    assert len(iceberg_table(wh, name).snapshots()) == snapshots + 1 == 3
    timings["iceberg crash loop (4 runs)"] = loop


# ------------------------------------------------------------------------------- a task killed


@needs_proc
def test_python_worker_killed_mid_task_retried_or_failed(
        spark: Any, kafka: KafkaCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        driver_jvm: str, timings: dict[str, float]) -> None:
    """``mid-task``: each task's Python worker SIGKILLs itself in its first attempt, once the
    sink wrote the task's files. Three tasks (a partition each: minRecordsPerPartition 1).

    Without task retries (``local[2]``) the run fails: exit 1, one line on stderr, nothing
    committed (the written files in no commit); a clean rerun commits every record once. With
    retries (``local[2,3]``) a run with 300 more records succeeds: every record once, the killed
    attempts' files in no commit. Last, the failed run's line says a Python worker crashed
    (Spark's deepest cause, ``java.io.EOFException``, says nothing)."""
    topic = Topic(kafka, kafka.create_topic(unique_topic_name("mid-task"), PARTITIONS,
                                            config=KEEP))
    table = str(tmp_path / "events")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = ["-b", kafka.bootstrap_servers, "-t", topic.name, "--output", table,
            "--table-format", "delta", *HEADERS, "-o", "minRecordsPerPartition=1",
            # a Spark task per partition: small tasks would otherwise share one per core
            "-o", f"minPartitions={PARTITIONS}"]
    topic.produce(300, seed=5000)

    failed = ingest_process(args, scratch, driver_jvm, crash_at="mid-task", master="local[2]")
    assert failed.code == 1 and failed.out == "", failed.err
    lines = failed.err.splitlines()
    error = [line for line in lines if line.startswith("pyconsumer ingest: ")
             and not line.startswith("pyconsumer ingest (batch)")]
    assert len(error) == 1 and lines[-1] == error[0], failed.err
    assert len(error[0]) < 600, error[0]
    written = parquet_files(table)
    assert written != set()                   # the killed task's files, at least
    assert deltalake.DeltaTable(table).version() == 0 and delta_rows(table) == []
    assert delta_txns(table, topic.name, PARTITIONS) == {p: None for p in range(PARTITIONS)}

    code, out, err = ingest(capsys, *args)
    assert code == 0, err
    assert summary_of(out, topic.name) == {p: ("0-99", 100) for p in range(PARTITIONS)}
    assert delta_rows(table) == topic.rows
    assert delta_txns(table, topic.name, PARTITIONS) == topic.ends()
    assert written.isdisjoint(delta_files(table))

    topic.produce(300, seed=5001)
    before = parquet_files(table)
    retried = ingest_process(args, scratch, driver_jvm, crash_at="mid-task", master="local[2,3]")
    assert retried.code == 0, retried.err
    assert summary_of(retried.out, topic.name) == {p: ("100-199", 100) for p in range(PARTITIONS)}
    assert "committed as version 2" in retried.err, retried.err
    assert delta_rows(table) == topic.rows and len(topic.rows) == 600
    assert delta_txns(table, topic.name, PARTITIONS) == topic.ends() == {0: 200, 1: 200, 2: 200}
    new_files = parquet_files(table) - before
    committed_now = delta_files(table) & new_files
    # each of the three tasks wrote its files twice: the killed attempt's are in no commit
    assert len(committed_now) >= PARTITIONS and len(new_files - committed_now) >= PARTITIONS
    timings["mid-task: failed run (local[2])"] = failed.seconds
    timings["mid-task: retried run (local[2,3])"] = retried.seconds
    assert "Python worker exited unexpectedly (crashed)" in error[0], error


# ------------------------------------------------------------------------------- typed values

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "country", "type": "string"},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10,
                                "scale": 2}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "lines", "type": {"type": "array", "items": {
        "type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}}]}
COUNTRIES = ["de", "fr", "nl"]
DAY = 86_400_000
#: 2023-11-15T00:00:00Z
BASE = 1_700_006_400_000
UTC = dt.timezone.utc


def _utc(ts: dt.datetime) -> dt.datetime:
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts


def _ms(ts: dt.datetime) -> int:
    return (_utc(ts) - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(milliseconds=1)


def _order(i: int) -> dict[str, Any]:
    return {"id": i * 1_000_003 - 7, "country": COUNTRIES[i % 3],
            "amount": decimal.Decimal(f"{i * 13 % 997}.{i % 100:02d}"),
            "note": None if i % 4 == 0 else f"nöte {i}",
            "tags": [f"t{j}" for j in range(i % 3)],
            "placed": dt.datetime.fromtimestamp((BASE + i * 60_000) / 1000, tz=UTC),
            "lines": [{"sku": f"sku-{i}-{j}", "qty": j - 1} for j in range(i % 4)]}


def test_avro_values_into_delta_partitioned_by_country_and_day(
        spark: Any, kafka: KafkaCluster, apicurio: ApicurioRegistry, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], timings: dict[str, float]) -> None:
    """90 orders serialized by confluent-kafka's AvroSerializer against the registry (magic 0,
    the schema id, the body), Kafka timestamps on three days, into a Delta table partitioned by
    ``value.country`` and ``day(timestamp)``: one folder per (country, day) holding exactly its
    rows; every typed field read back by deltalake as written (decimal, timestamp-millis, a
    nullable string, arrays of strings and of records)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    started = time.monotonic()
    topic = kafka.create_topic(unique_topic_name("avro-delta"), PARTITIONS, config=KEEP)
    serializer = AvroSerializer(SchemaRegistryClient({"url": apicurio.url}), json.dumps(ORDER))
    orders = [_order(i) for i in range(90)]
    #: three days, each with every country
    stamps = [BASE + (i // 3 % 3) * DAY + i for i in range(len(orders))]
    records = [TestRecord(key=f"order-{i}".encode(), partition=i % PARTITIONS,
                          timestamp_ms=stamps[i],
                          value=serializer(o, SerializationContext(topic, MessageField.VALUE)))
               for i, o in enumerate(orders)]
    assert all(r.value is not None and r.value[0] == 0 for r in records)
    delivered = produce(kafka.bootstrap_servers, topic, records)
    table = str(tmp_path / "orders")
    code, out, err = ingest(capsys, "-b", kafka.bootstrap_servers, "-t", topic, "--output", table,
                            "--table-format", "delta", "--value-format", "avro",
                            "--schema-registry", apicurio.url, "--key-format", "string",
                            "--partition-by", "value.country", "--partition-by", "day(timestamp)")
    assert code == 0, err
    assert summary_of(out, topic) == {p: ("0-29", 30) for p in range(PARTITIONS)}

    def day(ts_ms: int) -> str:
        return dt.datetime.fromtimestamp(ts_ms / 1000, tz=UTC).strftime("%Y-%m-%d")

    want = sorted(({"partition": p, "offset": o, "key": r.key.decode() if r.key else None,
                    "value": orders[i], "timestamp_ms": stamps[i], "timestampType": 0,
                    "value_country": orders[i]["country"], "timestamp_date": day(stamps[i])}
                   for i, (r, (p, o)) in enumerate(zip(records, delivered))),
                  key=lambda r: (r["partition"], r["offset"]))
    dtable = deltalake.DeltaTable(table)
    assert dtable.metadata().partition_columns == ["value_country", "timestamp_date"]
    got = []
    for r in dtable.to_pyarrow_table().to_pylist():
        assert r["topic"] == topic
        got.append({"partition": r["partition"], "offset": r["offset"], "key": r["key"],
                    "value": {**r["value"], "placed": _utc(r["value"]["placed"])},
                    "timestamp_ms": _ms(r["timestamp"]), "timestampType": r["timestampType"],
                    "value_country": r["value_country"],
                    "timestamp_date": str(r["timestamp_date"])})
    got.sort(key=lambda r: (r["partition"], r["offset"]))
    assert got == want

    folders: dict[str, set[tuple[int, int]]] = {}
    import pyarrow.parquet as pq

    for f in Path(table).rglob("*.parquet"):
        rows = pq.read_table(f).select(["partition", "offset"]).to_pylist()
        folders.setdefault(str(f.parent.relative_to(table)), set()).update(
            (r["partition"], r["offset"]) for r in rows)
    assert folders == {
        f"value_country={c}/timestamp_date={d}": {(w["partition"], w["offset"]) for w in want
                                                  if (w["value_country"], w["timestamp_date"]) == (c, d)}
        for c in COUNTRIES for d in ("2023-11-15", "2023-11-16", "2023-11-17")}
    timings["avro into delta"] = time.monotonic() - started
