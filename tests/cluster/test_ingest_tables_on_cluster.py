"""``pyconsumer ingest --table-format delta`` on a Spark standalone cluster (a master and two
workers, each its own JVM; the tasks run in the executors' Python workers, which write the data
files; the CLI's driver commits them), reading from Apache Kafka; the table read back by
deltalake: every record exactly once, also when every task's first attempt dies with its Python
worker (SIGKILL) after writing its files and the cluster retries it.

The executors do not share the driver's environment: the crash point reaches them with the
tasks (the ``mid-task`` files left over prove the crash happened there). Rows are compared whole:
topic, partition, offset, key, value, timestamp (ms), timestampType and headers.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyconsumer.testing import KafkaCluster, SparkStandaloneCluster, produce, sample_records
from pyconsumer.testing._process import _die_with_parent

from tests.cluster.conftest import FAST_JVM
from tests.conftest import unique_topic_name
from tests.spark.sparkdata import Row, expected_rows, table_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

deltalake = pytest.importorskip("deltalake")

#: a safety net for a hung run, not a timed assertion
RUN_TIMEOUT = 240.0
PARTITIONS = 3




def _rows(table: str) -> list[Row]:
    return sorted(table_rows(deltalake.DeltaTable(table).to_pyarrow_table()),
                  key=lambda r: (r[0], r[1], r[2]))


def _committed_files(table: str) -> set[str]:
    return {u.removeprefix("file://") for u in deltalake.DeltaTable(table).file_uris()}


def _files(table: str) -> set[str]:
    return {str(p) for p in Path(table).rglob("*.parquet")}


def _ingest(cluster: SparkStandaloneCluster, args: list[str], cwd: Path,
            crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYCONSUMER_INGEST_CRASH_AT", None)
    if crash_at is not None:
        env["PYCONSUMER_INGEST_CRASH_AT"] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "pyconsumer", "ingest", *args, "--master", cluster.master_url,
         "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.memory=512m",
         # tests only: JVMs that start fast
         "--conf", f"spark.executor.extraJavaOptions={FAST_JVM}",
         "--conf", f"spark.driver.extraJavaOptions={FAST_JVM}"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=cwd,
        preexec_fn=_die_with_parent, env=env)


def test_ingest_delta_on_the_cluster_every_record_once(
        cluster: SparkStandaloneCluster, kafka: KafkaCluster, tmp_path: Path) -> None:
    """One run on the cluster, a Spark task per partition (minRecordsPerPartition 1 and
    minPartitions 3: small tasks would otherwise share a Spark task per core), every task's
    Python worker SIGKILLed in its first attempt once the task's files are written
    (PYCONSUMER_INGEST_CRASH_AT=mid-task): the cluster's task retries (4 attempts) see it
    through, and the table holds the 300 records produced exactly once, its txn versions their
    end offsets, the killed attempts' files in no commit (one run proves both: the clean path
    is each task's second attempt; a second application would cost ~30 s more)."""
    started = time.monotonic()
    topic = kafka.create_topic(unique_topic_name("cluster-delta"), PARTITIONS,
                               config={"retention.ms": "-1"})
    records = sample_records(300, partitions=PARTITIONS, seed=81)
    want = expected_rows(topic, records, produce(kafka.bootstrap_servers, topic, records,
                                                 compression="lz4"), headers=True)
    table = str(tmp_path / "events")
    # the workers (and so the executors) have the environment of this process, without the
    # setting: only the tasks carry it there
    assert "PYCONSUMER_INGEST_CRASH_AT" not in os.environ
    run = _ingest(cluster, ["-b", kafka.bootstrap_servers, "-t", topic, "--output", table,
                            "--table-format", "delta", "-o", "includeHeaders=true",
                            "-o", "minRecordsPerPartition=1", "-o", f"minPartitions={PARTITIONS}"],
                  tmp_path, crash_at="mid-task")
    assert run.returncode == 0, run.stderr[-6000:]
    assert "read and wrote 3 tasks in" in run.stderr and "committed as version 1" in \
        run.stderr, run.stderr
    assert _rows(table) == want and len(want) == 300
    txns = {p: deltalake.DeltaTable(table).transaction_version(f"pyconsumer-{topic}-{p}")
            for p in range(PARTITIONS)}
    assert txns == {p: 100 for p in range(PARTITIONS)}
    kept = _committed_files(table)
    written = _files(table)
    # three tasks, each killed once after writing: their first attempts' files in no commit
    assert len(kept) >= PARTITIONS and kept < written and len(written - kept) >= PARTITIONS, \
        (kept, written)
    print(f"\ncluster start {cluster.startup_seconds:.1f} s, the run "
          f"{time.monotonic() - started:.1f} s", end="")
