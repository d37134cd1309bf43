"""The Spark driver of tests/cluster/test_spark_cluster.py, run as its own process.

One JVM holds one SparkContext and the test process may already have the local[2] session, so
a query on the cluster runs here: ``python cluster_driver.py '<json>'``. It prints one JSON
object per line on stdout (``batch`` events of a stream, then ``done``); the rows themselves
go to files the test reads back with pyarrow. Each row carries ``where``, the working directory
of the executor whose task made it (``<worker work dir>/<app id>/<executor id>``).

JSON keys: ``master``, ``bootstrap``, ``topic``, ``scratch`` (the driver's scratch folder), and
``mode``:

* ``batch``: ``spark.read`` of the topic with headers and ``spark_partition_id``, written as an
  Arrow IPC file to ``out``;
* ``stream``: ``spark.readStream`` into a parquet file sink at ``output`` with ``checkpoint``
  and ``maxOffsetsPerTrigger``; ``availableNow`` stops by itself, otherwise it runs until the
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


def session(job: dict[str, Any]) -> Any:
    conf = {
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.extraJavaOptions": FAST_JVM,
        # one executor per worker, and no task before both registered: the spread is exact
        "spark.cores.max": str(job.get("cores", 2)),
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.host": "127.0.0.1",
    }
    return local_session(job["master"], app_name=f"pyconsumer-cluster-{job['mode']}", fast_jvm=True,
                         local_dir=job["scratch"], conf=conf)


def where() -> Any:
    from pyspark.sql import functions as F

    return F.udf(lambda: os.getcwd(), "string").asNondeterministic()()


def batch(spark: Any, job: dict[str, Any]) -> None:
    import pyarrow as pa
    from pyspark.sql import functions as F

    df = (spark.read.format("pyconsumer").option("kafka.bootstrap.servers", job["bootstrap"])
          .option("subscribe", job["topic"]).option("includeHeaders", "true").load()
          .withColumn("spark_partition", F.spark_partition_id()).withColumn("where", where()))
    table = df.toArrow()
    with pa.OSFile(job["out"], "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    say(event="done", rows=table.num_rows)


def stream(spark: Any, job: dict[str, Any]) -> None:
    df = (spark.readStream.format("pyconsumer").option("kafka.bootstrap.servers", job["bootstrap"])
          .option("subscribe", job["topic"]).option("includeHeaders", "true")
          .option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", str(job["max_offsets"])).load()
          .withColumn("where", where()))
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
                say(event="batch", id=p.batchId, rows=p.numInputRows)

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
    say(event="done", batches=sorted(seen), files=files)


def main() -> None:
    job = json.loads(sys.argv[1])
    started = time.monotonic()
    spark = session(job)
    say(event="started", seconds=round(time.monotonic() - started, 1),
        app=spark.sparkContext.applicationId)
    try:
        {"batch": batch, "stream": stream}[job["mode"]](spark, job)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
