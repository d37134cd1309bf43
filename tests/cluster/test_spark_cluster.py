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

from pyconsumer.testing import KafkaCluster, SparkStandaloneCluster, TestRecord, produce, sample_records

from tests.spark.sparkdata import Row, expected_rows, parquet_rows, table_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

DRIVER = Path(__file__).with_name("cluster_driver.py")
#: a safety net for a hung driver, not a timed assertion
DRIVER_TIMEOUT = 240.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkStandaloneCluster]:
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("the cluster tier needs pyspark (pip install -e '.[test]')")
    if shutil.which("java") is None:
        pytest.skip("the cluster tier needs Java 17 on PATH")
    with SparkStandaloneCluster(workers=2) as c:
        yield c


# ------------------------------------------------------------------------------- helpers


class Driver:
    """One cluster_driver.py process; its JSON events read on a thread as they come."""

    def __init__(self, cluster: SparkStandaloneCluster, tmp: Path, **job: Any) -> None:
        scratch = tmp / f"driver-{job['mode']}-{time.monotonic_ns()}"
        scratch.mkdir()
        job = {"master": cluster.master_url, "scratch": str(scratch), **job}
        self.stderr_path = scratch / "stderr.log"
        self._stderr: IO[bytes] = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([sys.executable, str(DRIVER), json.dumps(job)],
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     cwd=scratch)
        self.events: list[dict[str, Any]] = []
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

    def wait_for(self, accept: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first event ``accept`` takes; fails with the driver's log if it exits first."""
        deadline = time.monotonic() + DRIVER_TIMEOUT
        with self._changed:
            while True:
                for event in self.events:
                    if accept(event):
                        return event
                if not self._reader.is_alive() or time.monotonic() > deadline:
                    self.proc.kill()
                    raise AssertionError(f"the cluster driver ended (exit {self.proc.poll()}) "
                                         f"without the event; events {self.events}; "
                                         f"stderr:\n{self.log_tail()}")
                self._changed.wait(1.0)

    def done(self) -> dict[str, Any]:
        event = self.wait_for(lambda e: e["event"] == "done")
        assert self.proc.wait(timeout=60) == 0, self.log_tail()
        self._stderr.close()
        return event

    def log_tail(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-6000:]


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


def test_batch_read_on_the_cluster_runs_on_both_workers(
        cluster: SparkStandaloneCluster, kafka: KafkaCluster,
        make_kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    """A batch read of a 4-partition topic on the cluster: the rows are exactly what was
    produced, Spark partition i is Kafka partition i in offset order, each made by one
    executor, and the executors of both workers made some."""
    topic = make_kafka_topic(4)
    want = produced(kafka.bootstrap_servers, topic, sample_records(200, partitions=4, seed=11))
    out = tmp_path / "rows.arrow"
    Driver(cluster, tmp_path, mode="batch", bootstrap=kafka.bootstrap_servers, topic=topic,
           out=str(out)).done()
    import pyarrow as pa

    table = pa.ipc.open_file(str(out)).read_all()
    assert table_rows(table) == want
    partitions = table.column("partition").to_pylist()
    assert table.column("spark_partition").to_pylist() == partitions
    made_by: dict[int, set[tuple[int, str]]] = {}
    for p, cwd in zip(partitions, table.column("where").to_pylist()):
        made_by.setdefault(p, set()).add(executor_of(cluster, cwd))
    assert sorted(made_by) == [0, 1, 2, 3]
    assert all(len(e) == 1 for e in made_by.values()), made_by
    assert {worker for (worker, _), in made_by.values()} == {0, 1}, made_by


# ------------------------------------------------------------------------------- streaming


def test_stream_with_checkpoint_is_exactly_once_across_runs(
        cluster: SparkStandaloneCluster, kafka: KafkaCluster,
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
    first = Driver(cluster, tmp_path, **job)
    assert first.done()["batches"] == [0, 1, 2]
    assert [e["rows"] for e in first.events if e["event"] == "batch"] == [40, 40, 40]
    want = sorted(want + produced(bootstrap, topic, sample_records(60, partitions=2, seed=22)),
                  key=lambda r: (r[1], r[2]))
    second = Driver(cluster, tmp_path, **job)
    files = second.done()["files"]
    assert [(e["id"], e["rows"]) for e in second.events if e["event"] == "batch"] == [(3, 40), (4, 20)]
    rows, _ = sink_rows(files)
    assert rows == want
    assert_contiguous(rows, 2, [90, 90])


def test_stream_survives_a_killed_worker_exactly_once(
        cluster: SparkStandaloneCluster, kafka: KafkaCluster,
        make_kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    """A continuous stream (maxOffsetsPerTrigger 30) on the cluster; after its third committed
    micro-batch worker 0 is SIGKILLed with its executor, 300 more records arrive, the worker
    comes back. The query goes on and the sink holds each of the 600 records exactly once:
    offsets 0..299 in both partitions, no duplicate, no gap; the killed executor had made
    rows, and others made rows too."""
    topic = make_kafka_topic(2)
    bootstrap = kafka.bootstrap_servers
    stop_file = tmp_path / "stop"
    want = produced(bootstrap, topic, sample_records(300, partitions=2, seed=31))
    driver = Driver(cluster, tmp_path, mode="stream", bootstrap=bootstrap, topic=topic,
                    max_offsets=30, output=str(tmp_path / "out"),
                    checkpoint=str(tmp_path / "ck"), stop_file=str(stop_file))
    try:
        driver.wait_for(lambda e: e["event"] == "batch" and e["id"] >= 2)
        cluster.kill_worker(0)
        want += produced(bootstrap, topic, sample_records(300, partitions=2, seed=32))
        cluster.restart_worker(0)
    finally:
        stop_file.touch()
    files = driver.done()["files"]
    rows, where = sink_rows(files)
    assert rows == sorted(want, key=lambda r: (r[1], r[2]))
    assert_contiguous(rows, 2, [300, 300])
    executors = {executor_of(cluster, cwd) for cwd in where}
    workers = sorted({w for w, _ in executors})
    assert 0 in workers, executors                 # worker 0's first executor made rows ...
    assert len(executors) >= 2, executors          # ... and another executor carried on


# ------------------------------------------------------------------------------- the CLI


def test_ingest_command_on_the_cluster(cluster: SparkStandaloneCluster, kafka: KafkaCluster,
                                       make_kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    """``pyconsumer ingest --master spark://...`` (its own process, as a user runs it) writes
    exactly the produced rows, read back from the Parquet dataset, and sums them up per
    partition."""
    topic = make_kafka_topic(3)
    want = produced(kafka.bootstrap_servers, topic, sample_records(150, partitions=3, seed=41))
    out = tmp_path / "dataset"
    done = subprocess.run(
        [sys.executable, "-m", "pyconsumer", "ingest", "-b", kafka.bootstrap_servers,
         "--topic", topic, "--output", str(out), "--master", cluster.master_url,
         "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.memory=512m"],
        capture_output=True, text=True, timeout=DRIVER_TIMEOUT, cwd=tmp_path,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert done.returncode == 0, done.stderr[-6000:]
    assert parquet_rows(str(out)) == want
    lines = done.stdout.splitlines()
    assert [line.split() for line in lines if line.startswith(topic)] == [
        [topic, str(p), "0-49", "50", f"{sum(len(r[3] or b'') + len(r[4] or b'') for r in want if r[1] == p):,}"]
        for p in range(3)]
