"""The ``pyconsumer`` Spark source on a Spark standalone cluster (a master and two workers, each
its own JVM; executors in their own JVMs with their own Python workers and consumer caches).

The test process may hold the local[2] session already (one JVM, one SparkContext), so every
query on the cluster runs in its own driver process (tests/cluster/cluster_driver.py, or the
``pyconsumer ingest`` CLI). Rows are compared with every column: topic, partition, offset,
key, value, timestamp (ms), timestampType and headers. Which executor (on which worker) made a
row is told by the working directory of its task (``<worker work dir>/<app>/<executor>``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from pyconsumer.testing import (BrokerStartError, KafkaCluster, SparkStandaloneCluster, TestRecord,
                                produce, sample_records, spark_kafka_jars)
from pyconsumer.testing._process import _die_with_parent

from tests.cluster.conftest import FAST_JVM
from tests.conftest import unique_topic_name
from tests.spark.sparkdata import Row, expected_rows, parquet_rows, table_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

DRIVER = Path(__file__).with_name("cluster_driver.py")
#: a safety net for a hung driver, not a timed assertion
DRIVER_TIMEOUT = 240.0
#: while a test waits for a task on a given worker, records are added this often so that the
#: stream keeps starting tasks
FEED_EVERY_S = 5.0




# ------------------------------------------------------------------------------- helpers


class Driver:
    """The cluster_driver.py process of the module: one application on the cluster (its
    executors start once), jobs sent on stdin, JSON events read on a thread as they come."""

    def __init__(self, cluster: SparkStandaloneCluster, scratch: Path, jars: list[str]) -> None:
        self.stderr_path = scratch / "driver-stderr.log"
        self._stderr: IO[bytes] = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([sys.executable, str(DRIVER), cluster.master_url, str(scratch),
                                      ",".join(jars)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, text=True, cwd=scratch,
                                     preexec_fn=_die_with_parent,      # its JVM follows it
                                     # the cluster listens on loopback only: so does the driver
                                     env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
        self.events: list[dict[str, Any]] = []
        self._jobs = 0
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                with self._changed:
                    self.events.append(json.loads(line))
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def submit(self, **job: Any) -> int:
        """Send a job (see cluster_driver.py); its number."""
        self._jobs += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"job": self._jobs, **job}) + "\n")
        self.proc.stdin.flush()
        return self._jobs

    def wait_for(self, accept: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first event ``accept`` takes; fails with the driver's log if the driver exits
        first, or a job fails."""
        deadline = time.monotonic() + DRIVER_TIMEOUT
        with self._changed:
            while True:
                for event in self.events:
                    if event["event"] == "failed":
                        raise AssertionError(f"job {event['job']} failed: {event['error']}")
                    if accept(event):
                        return event
                if not self._reader.is_alive() or time.monotonic() > deadline:
                    raise AssertionError(f"the cluster driver ended (exit {self.proc.poll()}) or "
                                         f"hung without the event; events {self.events}; "
                                         f"stderr:\n{self.log_tail()}")
                self._changed.wait(1.0)

    def job_events(self, job: int, kind: str) -> list[dict[str, Any]]:
        with self._changed:
            return [e for e in self.events if e.get("job") == job and e["event"] == kind]

    def done(self, job: int) -> dict[str, Any]:
        return self.wait_for(lambda e: e.get("job") == job and e["event"] == "done")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()

    def log_tail(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-6000:]


#: why the driver has no format("kafka") (None: it has)
_SPARK_KAFKA_MISSING: str | None = None


class Drivers:
    """The module's driver application, started when a test first needs it. Each worker has
    one core and the driver application takes both (one executor a worker), so a test that
    runs another application (the ingest CLI) closes it first; the next test starts another."""

    def __init__(self, cluster: SparkStandaloneCluster, tmp: pytest.TempPathFactory) -> None:
        global _SPARK_KAFKA_MISSING
        self.cluster = cluster
        self.tmp = tmp
        self.jars: list[str] = []
        try:
            self.jars = spark_kafka_jars()
        except BrokerStartError as exc:
            if os.environ.get("CI"):
                raise
            _SPARK_KAFKA_MISSING = f"Spark's own Kafka source is not available: {exc}"
        self.current: Driver | None = None

    def get(self) -> Driver:
        if self.current is None:
            # not waiting for it here: its JVM and executors start while the Kafka fixture starts
            self.current = Driver(self.cluster, self.tmp.mktemp("cluster-driver"), self.jars)
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


@pytest.fixture(scope="module")
def drivers(cluster: SparkStandaloneCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Drivers]:
    pool = Drivers(cluster, tmp_path_factory)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def driver(drivers: Drivers) -> Driver:
    return drivers.get()


def executor_of(cluster: SparkStandaloneCluster, cwd: str) -> tuple[int, str]:
    """(worker index, executor id) of the task whose working directory was ``cwd``."""
    for i in range(cluster.workers):
        work = cluster.worker_dir(i)
        if Path(cwd).parent.parent == work:
            return i, Path(cwd).name
    raise AssertionError(f"{cwd} is no executor folder of the cluster's workers")


def sink_rows(files: list[str]) -> tuple[list[Row], list[str]]:
    """The rows of the file sink's committed files (sorted) and the ``where`` of each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.concat_tables([pq.read_table(f.removeprefix("file:")) for f in files])
    table = table.sort_by([("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")])
    return table_rows(table), table.column("where").to_pylist()


def assert_contiguous(rows: list[Row], partitions: int, counts: list[int]) -> None:
    for p in range(partitions):
        assert [r[2] for r in rows if r[1] == p] == list(range(counts[p])), f"partition {p}"


def produced(bootstrap: str, topic: str, records: list[TestRecord]) -> list[Row]:
    return expected_rows(topic, records, produce(bootstrap, topic, records, compression="lz4"),
                         headers=True)


# ------------------------------------------------------------------------------- batch


@pytest.fixture(scope="module")
def four_partitions(kafka: KafkaCluster) -> tuple[str, list[Row]]:
    """A 4-partition topic of 200 varied records (null keys and values, headers) and its rows."""
    topic = kafka.create_topic(unique_topic_name("cluster"), 4)
    return topic, produced(kafka.bootstrap_servers, topic, sample_records(200, partitions=4, seed=11))


def read_batch(driver: Driver, kafka: KafkaCluster, topic: str, out: Path, source: str,
               **options: str) -> Any:
    import pyarrow as pa

    # both executors there, also when this runs after the killed-worker test
    driver.done(driver.submit(mode="batch", source=source, bootstrap=kafka.bootstrap_servers,
                              topic=topic, out=str(out), executors=2, options=options))
    return pa.ipc.open_file(str(out)).read_all()


def test_batch_read_on_the_cluster_runs_on_both_workers(
        cluster: SparkStandaloneCluster, driver: Driver, kafka: KafkaCluster,
        four_partitions: tuple[str, list[Row]], tmp_path: Path) -> None:
    """A batch read of a 4-partition topic on the cluster: the rows are exactly what was
    produced, Spark partition i is Kafka partition i in offset order, each made by one
    executor, and the executors of both workers made some (a task per partition:
    minRecordsPerPartition 1; by default these small ranges would share one task)."""
    topic, want = four_partitions
    table = read_batch(driver, kafka, topic, tmp_path / "rows.arrow", "pyconsumer",
                       minRecordsPerPartition="1")
    assert table_rows(table) == want
    partitions = table.column("partition").to_pylist()
    assert table.column("spark_partition").to_pylist() == partitions
    made_by: dict[int, set[tuple[int, str]]] = {}
    for p, cwd in zip(partitions, table.column("where").to_pylist()):
        made_by.setdefault(p, set()).add(executor_of(cluster, cwd))
    assert sorted(made_by) == [0, 1, 2, 3]
    assert all(len(e) == 1 for e in made_by.values()), made_by
    assert {worker for (worker, _), in made_by.values()} == {0, 1}, made_by


def test_spark_kafka_source_reads_the_same_rows_on_the_cluster(
        driver: Driver, kafka: KafkaCluster, four_partitions: tuple[str, list[Row]],
        tmp_path: Path) -> None:
    """Spark's own format("kafka") in the same application (its jars shipped to the executors
    with spark.jars; pyconsumer needs none) reads the same rows: every column, each partition
    in offset order."""
    if _SPARK_KAFKA_MISSING is not None:
        pytest.skip(_SPARK_KAFKA_MISSING)
    topic, want = four_partitions
    got = table_rows(read_batch(driver, kafka, topic, tmp_path / "kafka.arrow", "kafka"))
    assert sorted(got, key=lambda r: (r[1], r[2])) == want
    for p in range(4):
        assert [r for r in got if r[1] == p] == [r for r in want if r[1] == p], f"partition {p}"


# ------------------------------------------------------------------------------- streaming


def test_stream_with_checkpoint_is_exactly_once_across_runs(
        cluster: SparkStandaloneCluster, driver: Driver, kafka: KafkaCluster,
        make_kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    """AvailableNow into a parquet sink with a checkpoint and maxOffsetsPerTrigger 40, on the
    cluster: the first run reads 120 records in three micro-batches of 40 (20 a partition);
    60 more records, a second run from the checkpoint reads only those (40, then 20); the
    sink holds every record exactly once."""
    topic = make_kafka_topic(2)
    bootstrap = kafka.bootstrap_servers
    job = dict(mode="stream", bootstrap=bootstrap, topic=topic, max_offsets=40,
               available_now=True, output=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"))
    want = produced(bootstrap, topic, sample_records(120, partitions=2, seed=21))
    first = driver.submit(**job)
    assert driver.done(first)["batches"] == [0, 1, 2]
    assert [e["rows"] for e in driver.job_events(first, "batch")] == [40, 40, 40]
    want = sorted(want + produced(bootstrap, topic, sample_records(60, partitions=2, seed=22)),
                  key=lambda r: (r[1], r[2]))
    second = driver.submit(**job)
    files = driver.done(second)["files"]
    assert [(e["id"], e["rows"]) for e in driver.job_events(second, "batch")] == [(3, 40), (4, 20)]
    rows, _ = sink_rows(files)
    assert rows == want
    assert_contiguous(rows, 2, [90, 90])


def test_stream_survives_a_killed_worker_exactly_once(
        cluster: SparkStandaloneCluster, driver: Driver, kafka: KafkaCluster,
        make_kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    """A continuous stream (maxOffsetsPerTrigger 30) on the cluster. After its third committed
    micro-batch a task on worker 0 is held in the middle of its rows and worker 0 is SIGKILLed
    with its executor; 300 more records arrive and the worker comes back. The query goes on:
    the sink holds each record exactly once (the 600, and any added while the trap waited for a
    task: every offset of both partitions, no duplicate, no gap), the record the killed task
    held among them, made by another executor (its task ran again there)."""
    topic = make_kafka_topic(2)
    bootstrap = kafka.bootstrap_servers
    stop_file, armed, sprung = tmp_path / "stop", tmp_path / "armed", tmp_path / "sprung"
    want = produced(bootstrap, topic, sample_records(300, partitions=2, seed=31))
    job = driver.submit(mode="stream", bootstrap=bootstrap, topic=topic, max_offsets=30,
                        output=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"),
                        stop_file=str(stop_file), trap_dir=str(cluster.worker_dir(0)),
                        trap_armed=str(armed), trap_sprung=str(sprung))
    try:
        driver.wait_for(lambda e: e.get("job") == job and e["event"] == "batch" and e["id"] >= 2)
        armed.touch()
        deadline = time.monotonic() + DRIVER_TIMEOUT       # a safety net, not a timed assertion
        feed_at, seed = time.monotonic() + FEED_EVERY_S, 100
        while not sprung.exists():
            assert time.monotonic() < deadline, f"no task reached worker 0; {driver.log_tail()}"
            if time.monotonic() >= feed_at:
                # a stream that read everything before the trap was armed runs no more tasks:
                # a few records more start another micro-batch (and are expected like the rest)
                want += produced(bootstrap, topic, sample_records(20, partitions=2, seed=seed))
                feed_at, seed = time.monotonic() + FEED_EVERY_S, seed + 1
            time.sleep(0.1)
        cluster.kill_worker(0)
        armed.unlink()
        held = json.loads(sprung.read_text())
        killed = executor_of(cluster, held["where"])
        assert killed[0] == 0
        want += produced(bootstrap, topic, sample_records(300, partitions=2, seed=32))
        cluster.restart_worker(0)
    finally:
        stop_file.touch()
    files = driver.done(job)["files"]
    rows, where = sink_rows(files)
    assert rows == sorted(want, key=lambda r: (r[1], r[2]))
    assert_contiguous(rows, 2, [sum(1 for r in want if r[1] == p) for p in range(2)])
    at = [i for i, r in enumerate(rows) if (r[1], r[2]) == (held["partition"], held["offset"])]
    assert len(at) == 1, held
    assert executor_of(cluster, where[at[0]]) != killed, (held, where[at[0]])


# ------------------------------------------------------------------------------- the CLI


def test_ingest_command_on_the_cluster(cluster: SparkStandaloneCluster, drivers: Drivers,
                                       kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
                                       tmp_path: Path) -> None:
    """``pyconsumer ingest --master spark://...`` (its own process, as a user runs it) writes
    exactly the produced rows, read back from the Parquet dataset, and sums them up per
    partition."""
    drivers.close()            # the cluster's cores go to the CLI's application
    topic = make_kafka_topic(3)
    want = produced(kafka.bootstrap_servers, topic, sample_records(150, partitions=3, seed=41))
    out = tmp_path / "dataset"
    done = subprocess.run(
        [sys.executable, "-m", "pyconsumer", "ingest", "-b", kafka.bootstrap_servers,
         "--topic", topic, "-o", "includeHeaders=true", "--output", str(out),
         "--master", cluster.master_url,
         "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.memory=512m",
         # tests only: executors that start fast, few shuffle tasks for the summary
         "--conf", f"spark.executor.extraJavaOptions={FAST_JVM}",
         "--conf", "spark.sql.shuffle.partitions=2"],
        capture_output=True, text=True, timeout=DRIVER_TIMEOUT, cwd=tmp_path,
        preexec_fn=_die_with_parent,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert done.returncode == 0, done.stderr[-6000:]
    assert parquet_rows(str(out)) == want
    table = [line.split() for line in done.stdout.splitlines()]
    assert [cells for cells in table if cells[:1] == [topic]] == [
        [topic, str(p), "0-49", "50", f"{sum(len(r[3] or b'') + len(r[4] or b'') for r in want if r[1] == p):,}"]
        for p in range(3)]


# ------------------------------------------------------------------------------- the helper


def test_a_worker_that_cannot_start_is_named_with_its_log(tmp_path: Path) -> None:
    """A worker JVM that exits while starting (an unreadable --memory) fails the start with
    SparkClusterError naming that worker and showing its log's tail; nothing is left behind."""
    if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
        pytest.skip("the cluster tier needs pyspark and Java 17")
    from pyconsumer.testing import SparkClusterError

    cluster = SparkStandaloneCluster(workers=1, memory="lots")
    with pytest.raises(SparkClusterError) as caught:
        cluster.start()
    message = str(caught.value)
    assert message.startswith("the Spark worker 0 exited with code 1 while starting; log "), message
    assert "--memory lots" in message and "Usage: Worker [options] <master>" in message, message
    log = Path(message.split("; log ", 1)[1].split(":\n", 1)[0])
    assert log.name == "worker0.log" and not log.parent.parent.exists()   # the cluster's folder
    assert cluster.folder is None and repr(cluster) == "SparkStandaloneCluster(workers=1, stopped)"
