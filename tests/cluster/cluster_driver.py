"""The Spark driver of tests/cluster/test_spark_cluster.py, run as its own process.

One JVM holds one SparkContext and the test process may already have the local[2] session, so
the queries on the cluster run here: ``python cluster_driver.py MASTER SCRATCH [JARS]`` starts one
application (kept for the whole test module: executors start once) and runs the jobs it reads
from stdin, one JSON object a line. For each it prints JSON events on stdout, each with the
job's ``job`` number (``batch`` events of a stream, then ``done`` or ``failed``); the rows
themselves go to files the test reads back with pyarrow. Each row carries ``where``, the
working directory of the executor whose task made it (``<worker work dir>/<app>/<executor>``).

A job's keys: ``job``, ``bootstrap``, ``topic`` and ``mode``:

* ``batch``: once ``executors`` executors are registered, ``spark.read`` of the topic with
  headers and ``spark_partition_id``, written as an Arrow IPC file to ``out``; ``source`` ``kafka`` reads with Spark's own Kafka source (its jars
  given as JARS, comma-separated) instead of ``pyconsumer``;
* ``stream``: ``spark.readStream`` into a parquet file sink at ``output`` with ``checkpoint``
  and ``maxOffsetsPerTrigger`` (and the trap of :func:`where`); ``availableNow`` stops by itself, otherwise it runs until the
  file ``stop_file`` exists, then processes what is available and stops. ``done`` lists the
  sink's committed files (its ``_spark_metadata`` log, not the directory listing: a task lost
  with its executor may have left a partial file there).
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from pyconsumer.spark.session import local_session

#: executors only need to start fast (tests, not benchmarks)
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"


def say(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def session(master: str, scratch: str, jars: str) -> Any:
    conf = {
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.extraJavaOptions": FAST_JVM,
        # one executor per worker, and no task before both registered: the spread is exact
        "spark.cores.max": "2",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.host": "127.0.0.1",
    }
    if jars:
        # Spark's own Kafka source, for format("kafka"): the executors fetch them from the driver
        conf["spark.jars"] = jars
    return local_session(master, app_name="pyconsumer-cluster-tests", fast_jvm=True,
                         local_dir=scratch, conf=conf)


def where(job: dict[str, Any]) -> Any:
    """The ``where`` column. With ``trap_dir``, ``trap_armed`` and ``trap_sprung``: while the
    file ``trap_armed`` exists, a task on an executor under ``trap_dir`` writes its working
    directory and the partition and offset of the row it is at to ``trap_sprung`` (JSON) and
    stops there, in the middle of its rows, until its executor is killed (so a test kills a
    worker with a task surely running there, and knows a record that task held)."""
    from pyspark.sql import functions as F

    trap_dir: str = job.get("trap_dir", "")
    armed: str = job.get("trap_armed", "")
    sprung: str = job.get("trap_sprung", "")

    def cwd(partition: int, offset: int) -> str:
        here = os.getcwd()
        if trap_dir and here.startswith(trap_dir) and os.path.exists(armed):
            with open(sprung + ".tmp", "w") as f:
                json.dump({"where": here, "partition": partition, "offset": offset}, f)
            os.replace(sprung + ".tmp", sprung)     # the test sees all of it or nothing
            while True:
                time.sleep(1)
        return here

    return F.udf(cwd, "string").asNondeterministic()(F.col("partition"), F.col("offset"))


def wait_for_executors(spark: Any, count: int) -> None:
    """Until ``count`` executors are registered (a worker that came back gets a new one a
    moment after it rejoins the master)."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 120
    while len(tracker.getExecutorInfos()) < count + 1:       # the driver is listed too
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {count} executors after 120 s")
        time.sleep(0.2)


def batch(spark: Any, job: dict[str, Any]) -> None:
    import pyarrow as pa
    from pyspark.sql import functions as F

    wait_for_executors(spark, job.get("executors", 0))
    reader = (spark.read.format(job.get("source", "pyconsumer"))
              .option("kafka.bootstrap.servers", job["bootstrap"])
              .option("subscribe", job["topic"]).option("includeHeaders", "true"))
    for key, value in job.get("options", {}).items():
        reader = reader.option(key, value)
    df = (reader.load()
          .withColumn("spark_partition", F.spark_partition_id()).withColumn("where", where(job)))
    table = df.toArrow()
    with pa.OSFile(job["out"], "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    say(job=job["job"], event="done", rows=table.num_rows)


def stream(spark: Any, job: dict[str, Any]) -> None:
    df = (spark.readStream.format("pyconsumer").option("kafka.bootstrap.servers", job["bootstrap"])
          .option("subscribe", job["topic"]).option("includeHeaders", "true")
          .option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", str(job["max_offsets"])).load()
          .withColumn("where", where(job)))
    writer = (df.writeStream.format("parquet").option("path", job["output"])
              .option("checkpointLocation", job["checkpoint"]))
    available_now = bool(job.get("available_now"))
    if available_now:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    seen: set[int] = set()

    def report() -> None:
        for p in query.recentProgress:
            if p.batchId not in seen and p.numInputRows > 0:
                seen.add(p.batchId)
                say(job=job["job"], event="batch", id=p.batchId, rows=p.numInputRows)

    while not query.awaitTermination(0.2):
        report()
        if not available_now and os.path.exists(job["stop_file"]):
            query.processAllAvailable()
            report()
            query.stop()
            break
    report()
    if query.exception() is not None:
        raise RuntimeError(f"the streaming query failed: {query.exception()}")
    files = sorted(spark.read.parquet(job["output"]).inputFiles())
    say(job=job["job"], event="done", batches=sorted(seen), files=files)


def main() -> None:
    started = time.monotonic()
    spark = session(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
    say(event="started", seconds=round(time.monotonic() - started, 1),
        app=spark.sparkContext.applicationId)
    try:
        for line in sys.stdin:
            job = json.loads(line)
            t0 = time.monotonic()
            try:
                {"batch": batch, "stream": stream}[job["mode"]](spark, job)
            except Exception as exc:  # noqa: BLE001 - the test shows it, the driver goes on
                say(job=job["job"], event="failed", error=f"{type(exc).__name__}: {exc}"[-3000:])
            say(job=job["job"], event="time", seconds=round(time.monotonic() - t0, 1))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
