"""The ingest job: Kafka topics into a Parquet dataset through Spark and the pyconsumer source.

:func:`run_ingest` is what ``pyconsumer ingest`` runs, on a SparkSession the caller owns:

* **batch** (no checkpoint): ``spark.read.format("pyconsumer")`` from ``startingOffsets`` to
  ``endingOffsets`` (default earliest to latest), appended to the dataset with
  ``df.write.mode("append").parquet``;
* **streaming** (a checkpoint directory): ``spark.readStream.format("pyconsumer")`` into
  Spark's file sink (``writeStream.format("parquet")``; with the checkpoint that is
  exactly-once), either ``once`` (Trigger.AvailableNow: what is there now, then stop) or
  continuously with a processing-time trigger until :attr:`stop` is set (Ctrl-C in the CLI).

The summary is computed exactly, with a Spark aggregation over the Parquet files this run
added to the dataset (the committed files after the run minus those before it; for the file
sink these are the files its ``_spark_metadata`` log lists): per partition the first and last
offset, the record count and the key+value bytes.

Progress goes to a :class:`~pyconsumer.console.StatusLine` (see
:mod:`pyconsumer.ingest.progress`).
"""
from __future__ import annotations

import re
import signal
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pyconsumer.console import StatusLine, bar
from pyconsumer.ingest.options import IngestError, parse_trigger_ms, source_options
from pyconsumer.ingest.progress import OBSERVATION, StreamProgress, tasks_done
from pyconsumer.ingest.summary import IngestSummary, PartitionSummary


# --------------------------------------------------------------------------- Spark helpers


def _hadoop_path(spark: Any, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    fs = p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return fs, p


def _exists(spark: Any, path: str) -> bool:
    fs, p = _hadoop_path(spark, path)
    return bool(fs.exists(p))


def _has_data_files(spark: Any, path: str) -> bool:
    """Any file or directory in ``path`` other than Spark's hidden ones (_x, .x)."""
    fs, p = _hadoop_path(spark, path)
    if not fs.exists(p):
        return False
    for status in fs.listStatus(p):
        name = status.getPath().getName()
        if not name.startswith(("_", ".")):
            return True
    return False


def _committed_files(spark: Any, output: str) -> set[str]:
    """The data files a reader of the dataset sees now (with a file sink: those in its
    ``_spark_metadata`` log; otherwise the listing). Empty when there is no dataset yet."""
    if not _exists(spark, output):
        return set()
    # a one-column schema: no footer is read to infer one, and an empty directory is fine
    return set(spark.read.schema("offset long").parquet(output).inputFiles())


def _summarize(spark: Any, files: Sequence[str]) -> list[PartitionSummary]:
    if not files:
        return []
    from pyspark.sql import functions as F

    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    rows = (spark.read.parquet(*files)
            .groupBy("topic", "partition")
            .agg(F.min("offset").alias("first"), F.max("offset").alias("last"),
                 F.count(F.lit(1)).alias("records"), F.sum(size.cast("long")).alias("bytes"))
            .collect())
    return sorted((PartitionSummary(r["topic"], int(r["partition"]), int(r["first"]),
                                    int(r["last"]), int(r["records"]), int(r["bytes"] or 0))
                   for r in rows), key=lambda p: (p.topic, p.partition))


def _observed(df: Any) -> Any:
    from pyspark.sql import functions as F

    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    return df.observe(OBSERVATION, F.count(F.lit(1)).alias("records"),
                      F.coalesce(F.sum(size.cast("long")), F.lit(0)).alias("bytes"))


def spark_error_message(exc: BaseException) -> str:
    """The useful line of a Spark error: the Python exception the data source raised
    (``NoBrokersAvailable: no broker of ... could be reached``), taken from the last Python
    traceback in Spark's message, else the message's first line."""
    text = str(exc)
    at = text.rfind("Traceback (most recent call last):")
    if at >= 0:
        for line in text[at:].splitlines()[1:]:
            if not line or line[0].isspace():
                continue              # the frames are indented; the exception line is not
            m = re.match(r"([A-Za-z_][\w.]*)(?::\s?(.*))?$", line)
            if m:
                name = m.group(1).rsplit(".", 1)[-1]
                message = _SQLSTATE.sub("", m.group(2) or "")
                return f"{name}: {message}" if message else name
            break
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("An error occurred while calling"):
        # py4j's "An error occurred while calling o61.parquet." says nothing: the Java
        # exception's deepest cause does ("java.io.IOException: Mkdirs failed to create ...")
        causes = [line[len("Caused by:"):].strip() for line in lines
                  if line.startswith("Caused by:")]
        first = next((line.lstrip(": ") for line in lines[1:] if line.startswith(":")), None)
        cause = causes[-1] if causes else first
        if cause:
            return _SQLSTATE.sub("", cause)[:500]
    for line in lines:
        line = _SQLSTATE.sub("", line)
        if line:
            return line[:500]
    return type(exc).__name__


_SQLSTATE = re.compile(r"(\s*SQLSTATE: \w+)+\s*$")


@contextmanager
def _graceful_interrupt(stop: threading.Event, status: StatusLine | None) -> Iterator[None]:
    """While streaming, the first Ctrl-C asks the query to stop (the sink keeps exactly what
    committed batches wrote); a second one raises KeyboardInterrupt at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        if status is not None:
            status.log("stopping after Ctrl-C (press it again to abort) ...")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# --------------------------------------------------------------------------- the job


def run_ingest(spark: Any, *, output: str, bootstrap: str | None = None,
               topics: Sequence[str] = (), pattern: str | None = None,
               checkpoint: str | None = None, once: bool = False, trigger: str = "10s",
               starting_offsets: str | None = "earliest", ending_offsets: str | None = None,
               options: Mapping[str, str] | None = None, kafka: Mapping[str, str] | None = None,
               status: StatusLine | None = None, stop: threading.Event | None = None,
               poll_interval: float = 0.5) -> IngestSummary:
    """Ingest Kafka records into the Parquet dataset ``output``; returns what this run wrote.

    Batch without ``checkpoint`` (``ending_offsets`` default latest), streaming with it:
    ``once`` for Trigger.AvailableNow, else a ``trigger`` processing-time trigger until
    ``stop`` is set (or Ctrl-C on the main thread). ``options`` are further Spark Kafka
    source options, ``kafka`` consumer settings (``kafka.`` is added). Progress lines go to
    ``status`` (None: silent). Raises :class:`IngestError` with a one-line reason."""
    streaming = checkpoint is not None
    if not streaming and once:
        raise IngestError("--once needs --checkpoint DIR (it is a streaming run)")
    if streaming and ending_offsets is not None:
        raise IngestError("--ending-offsets is for batch runs; a streaming run reads until "
                          "it is stopped (or, with --once, what is there when it starts)")
    opts = source_options(bootstrap=bootstrap, topics=topics, pattern=pattern,
                          starting_offsets=starting_offsets,
                          ending_offsets=None if streaming else (ending_offsets or "latest"),
                          options=options, kafka=kafka)
    sink_log = f"{output.rstrip('/')}/_spark_metadata"
    if streaming:
        trigger_ms = 0 if once else _trigger_ms(trigger)
        if _has_data_files(spark, output) and not _exists(spark, sink_log):
            raise IngestError(f"{output} holds a batch dataset; a streaming run writes with "
                              "Spark's file sink and needs a directory of its own")
    elif _exists(spark, sink_log):
        raise IngestError(f"{output} is a streaming (file sink) dataset: ingest into it with "
                          "--checkpoint, or choose another --output for batch runs")
    before = _committed_files(spark, output)
    if streaming:
        assert checkpoint is not None
        summary = _run_stream(spark, opts, output, checkpoint, once, trigger_ms, status,
                              stop or threading.Event(), poll_interval)
    else:
        summary = _run_batch(spark, opts, output, status, poll_interval)
    added = sorted(_committed_files(spark, output) - before)
    summary.files = len(added)
    summary.partitions = _summarize(spark, added)
    return summary


def _trigger_ms(trigger: str) -> int:
    try:
        return parse_trigger_ms(trigger)
    except ValueError as exc:
        raise IngestError(f"--trigger: {exc}") from None


def _run_batch(spark: Any, opts: Mapping[str, str], output: str, status: StatusLine | None,
               poll_interval: float) -> IngestSummary:
    sc = spark.sparkContext
    group = f"pyconsumer-ingest-{uuid.uuid4().hex[:8]}"
    tracker = sc.statusTracker()
    done_flag = threading.Event()
    started = time.monotonic()

    def tasks() -> tuple[int, int]:
        stages: list[int] = []
        for job_id in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job_id)
            if info is not None:
                stages.extend(info.stageIds)
        return tasks_done(tracker, stages)

    def watch() -> None:
        while not done_flag.wait(poll_interval):
            try:
                done, total = tasks()
            except Exception:       # the tracker is best effort; never break the job for it
                continue
            elapsed = time.monotonic() - started
            if status is not None and total:
                status.update(f"batch: {bar(done / total)} tasks {done}/{total} done "
                              f"(read + write), {elapsed:,.0f} s")

    watcher = None
    if status is not None and status.live:
        watcher = threading.Thread(target=watch, name="pyconsumer-ingest-progress", daemon=True)
        watcher.start()
    sc.setJobGroup(group, "pyconsumer ingest (batch)")
    try:
        df = spark.read.format("pyconsumer").options(**opts).load()
        df.write.mode("append").parquet(output)
    finally:
        done_flag.set()
        if watcher is not None:
            watcher.join()
        try:
            sc.setLocalProperty("spark.jobGroup.id", None)
            sc.setLocalProperty("spark.job.description", None)
        except Exception:
            pass
    seconds = time.monotonic() - started
    if status is not None:
        try:
            done, total = tasks()
            what = f"{done}/{total} tasks" if total else "done"
        except Exception:
            what = "done"
        status.log(f"batch: read and wrote ({what}) in {seconds:.1f} s")
    return IngestSummary(mode="batch", output=output, seconds=seconds, micro_batches=1)


def _run_stream(spark: Any, opts: Mapping[str, str], output: str, checkpoint: str, once: bool,
                trigger_ms: int, status: StatusLine | None, stop: threading.Event,
                poll_interval: float) -> IngestSummary:
    mode = "availableNow" if once else "continuous"
    df = _observed(spark.readStream.format("pyconsumer").options(**opts).load())
    writer = (df.writeStream.format("parquet").option("path", output)
              .option("checkpointLocation", checkpoint))
    writer = (writer.trigger(availableNow=True) if once
              else writer.trigger(processingTime=f"{trigger_ms} milliseconds"))
    progress = StreamProgress(status, mode)
    tracker = spark.sparkContext.statusTracker()
    started = time.monotonic()
    interrupted = False
    with _graceful_interrupt(stop, status):
        query = writer.start()
        try:
            while True:
                finished = query.awaitTermination(poll_interval)
                for p in query.recentProgress:
                    progress.take(p)
                if finished:
                    break
                if stop.is_set():
                    interrupted = True
                    query.stop()
                    break
                try:
                    progress.draw(tracker)
                except Exception:    # progress display is best effort
                    pass
        except KeyboardInterrupt:
            interrupted = True
            query.stop()
            raise
        finally:
            if status is not None:
                status.clear()
    for p in query.recentProgress:
        progress.take(p)
    error = query.exception()
    if error is not None:
        raise IngestError(f"the streaming query failed: {spark_error_message(error)}")
    seconds = time.monotonic() - started
    return IngestSummary(mode=mode, output=output, seconds=seconds,
                         micro_batches=progress.batches, interrupted=interrupted,
                         busy_seconds=progress.busy_ms / 1000.0 if mode == "continuous"
                         else None)
