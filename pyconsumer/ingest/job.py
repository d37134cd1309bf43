"""The ingest job: Kafka topics into a Parquet dataset through Spark and the pyconsumer source.

:func:`run_ingest` is what ``pyconsumer ingest`` runs, on a SparkSession the caller owns:

* **batch** (no checkpoint): ``spark.read.format("pyconsumer")`` from ``startingOffsets`` to
  ``endingOffsets`` (default earliest to latest), appended to the dataset with
  ``df.write.mode("append").parquet``;
* **streaming** (a checkpoint directory): ``spark.readStream.format("pyconsumer")`` into
  Spark's file sink (``writeStream.format("parquet")``; with the checkpoint that is
  exactly-once), either ``once`` (Trigger.AvailableNow: what is there now, then stop) or
  continuously with a processing-time trigger until :attr:`stop` is set (Ctrl-C in the CLI).

With ``bad_records`` (typed values, see :mod:`pyconsumer.ingest.values`) the read is split:
records that decode go to the output, the others to a rejected-records dataset, each record
to exactly one (batch: one cached read written twice; streaming: two file-sink queries).

The summary is computed exactly, with a Spark aggregation over the Parquet files this run
added to the dataset (the committed files after the run minus those before it; for the file
sink these are the files its ``_spark_metadata`` log lists): per partition the first and last
offset, the record count and the key+value bytes. A decoded key or value has no length of its
own: typed reads carry each record's raw size (the source's internal ``columnNameOfRawSize``),
and the bytes are summed as the read goes (``DataFrame.observe``), with the records rejected
and the topics read. A batch write keeps no file without rows (Spark's first task writes one
even when it has none); a file sink lists every file it writes in its log, so those stay.

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
from pyconsumer.ingest.batch_range import pin_range
from pyconsumer.ingest.lag import total_text, with_sizes
from pyconsumer.ingest.options import IngestError, check_apart, parse_trigger_ms, source_options
from pyconsumer.ingest.metrics import IngestMetrics
from pyconsumer.ingest.progress import OBSERVATION, StreamProgress, tasks_done
from pyconsumer.ingest.summary import IngestSummary, PartitionSummary
from pyconsumer.ingest.values import SIZE_COLUMN, ReadPlan, plan_read


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


def _size(df: Any) -> Any:
    """The bytes of a row's key and value, as far as they are bytes or text: a typed (struct)
    column has no length of its own and counts 0."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    size = F.lit(0)
    for name in ("key", "value"):
        kind = df.schema[name].dataType
        if isinstance(kind, BinaryType):
            size = size + F.coalesce(F.length(name), F.lit(0))
        elif isinstance(kind, StringType):         # UTF-8 bytes, not characters
            size = size + F.coalesce(F.octet_length(name), F.lit(0))
    return size


class _Written:
    """What the files a run added hold: per partition, the files with rows, and the fields of
    a decoded key or value that are null in every row."""

    def __init__(self, partitions: list[PartitionSummary], files_with_rows: set[str],
                 null_fields: tuple[str, ...]) -> None:
        self.partitions = partitions
        self.files_with_rows = files_with_rows
        self.null_fields = null_fields


def _summarize(spark: Any, files: Sequence[str]) -> _Written:
    """One aggregation over ``files``: per partition the offsets, records and key+value
    bytes; which files have rows; the non-null count of each field of a struct key or value."""
    if not files:
        return _Written([], set(), ())
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    # the file of each row (a projection: an aggregate may not hold input_file_name itself)
    df = spark.read.parquet(*files).withColumn("_file", F.input_file_name())
    size = _size(df)
    fields = [(column, f.name) for column in ("key", "value")
              if isinstance(df.schema[column].dataType, StructType)
              for f in df.schema[column].dataType.fields]
    present = [F.count(F.col(column).getField(name)).alias(f"present{i}")
               for i, (column, name) in enumerate(fields)]
    rows = (df.groupBy("topic", "partition")
            .agg(F.min("offset").alias("first"), F.max("offset").alias("last"),
                 F.count(F.lit(1)).alias("records"), F.sum(size.cast("long")).alias("bytes"),
                 F.collect_set("_file").alias("files"), *present)
            .collect())
    partitions = sorted((PartitionSummary(r["topic"], int(r["partition"]), int(r["first"]),
                                          int(r["last"]), int(r["records"]), int(r["bytes"] or 0))
                         for r in rows), key=lambda p: (p.topic, p.partition))
    with_rows = {_file_key(f) for r in rows for f in r["files"]}
    null = tuple(f"{column}.{name}" for i, (column, name) in enumerate(fields)
                 if rows and not any(r[f"present{i}"] for r in rows))
    return _Written(partitions, with_rows, null)


def _file_key(path: str) -> str:
    """A data file's path as inputFiles() and input_file_name() both give it (either may
    escape characters as a URI does, and write file:/x or file:///x)."""
    from urllib.parse import unquote

    return re.sub(r"^file:/+", "file:///", unquote(path))


def _drop_empty(spark: Any, files: Sequence[str], with_rows: set[str]) -> list[str]:
    """Delete the files of a batch write that hold no rows (Spark writes its first task's file
    even when that task has none, so a write of no rows still adds one); the others stay."""
    kept = []
    for f in files:
        # counted again alone (from its footer) before it goes: never delete a file with rows
        if _file_key(f) in with_rows or spark.read.parquet(f).count() > 0:
            kept.append(f)
            continue
        fs, p = _hadoop_path(spark, f)
        fs.delete(p, False)             # a local file's .crc goes with it
    return kept


def _metrics(df: Any, plan: ReadPlan) -> list[Any]:
    """The observed metrics of a read: records and key+value bytes read (the raw size column
    for typed values), with a split the rejected rows and the good rows' bytes, the topics."""
    from pyspark.sql import functions as F

    size = (F.col(SIZE_COLUMN) if plan.sized else _size(df)).cast("long")
    good = F.lit(True) if plan.split is None else F.col(plan.split.reason).isNull()
    out = [F.count(F.lit(1)).alias("records"),
           F.coalesce(F.sum(size), F.lit(0)).alias("bytes"),
           F.coalesce(F.sum(F.when(good, size)), F.lit(0)).alias("good_bytes"),
           F.count(F.when(~good, F.lit(1))).alias("rejected"),
           F.collect_set("topic").alias("topics")]
    return out


def _observed(df: Any, plan: ReadPlan) -> Any:
    return df.observe(OBSERVATION, *_metrics(df, plan))


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
    crashed = _WORKER_CRASHED.search(text)
    if crashed:
        # a killed or crashed Python worker: Spark's deepest cause is a bare EOFException
        lost = _LOST_TASK.search(text)
        return "a Spark Python worker exited unexpectedly (crashed)" + (
            f" in {lost.group(1)}" if lost else "") + "; the run committed nothing"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("An error occurred while calling"):
        # py4j's "An error occurred while calling o61.parquet." says nothing: the Java
        # exception's deepest cause with a message does ("java.io.IOException: Mkdirs failed
        # to create ..."); a bare one ("java.io.EOFException") says less than its parents
        causes = [line[len("Caused by:"):].strip() for line in lines
                  if line.startswith("Caused by:")]
        told = [c for c in causes if ": " in c]
        first = next((line.lstrip(": ") for line in lines[1:] if line.startswith(":")), None)
        cause = told[-1] if told else causes[-1] if causes else first
        if cause:
            return _SQLSTATE.sub("", cause)[:500]
    for line in lines:
        line = _SQLSTATE.sub("", line)
        if line:
            return line[:500]
    return type(exc).__name__


_SQLSTATE = re.compile(r"(\s*SQLSTATE: \w+)+\s*$")
_WORKER_CRASHED = re.compile(r"Python worker exited unexpectedly \(crashed\)")
_LOST_TASK = re.compile(r"Lost (task [\d.]+ in stage [\d.]+)")


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
               poll_interval: float = 0.5, bad_records: str | None = None,
               metrics: IngestMetrics | None = None) -> IngestSummary:
    """Ingest Kafka records into the Parquet dataset ``output``; returns what this run wrote.

    Batch without ``checkpoint`` (``ending_offsets`` default latest), streaming with it:
    ``once`` for Trigger.AvailableNow, else a ``trigger`` processing-time trigger until
    ``stop`` is set (or Ctrl-C on the main thread). ``options`` are further Spark Kafka
    source options, ``kafka`` consumer settings (``kafka.`` is added). Progress lines go to
    ``status`` (None: silent). Raises :class:`IngestError` with a one-line reason.

    ``bad_records``: a second Parquet dataset for the records whose typed key or value does not
    decode (``options`` give valueFormat/keyFormat): the read is PERMISSIVE with a reason
    column, the rejected rows (topic, partition, offset, timestamp, timestampType, raw key and
    value, [headers], reason) go there and the others to ``output``, each record to exactly
    one. Batch: the read is cached and written twice, from one plan (the same offset ranges
    and reader schema for both). Streaming: two queries, each with Spark's file sink and its own
    checkpoint (``<checkpoint>/rejected`` for the second), so both stay exactly-once.
    DROPMALFORMED reads the same way and leaves the rejected rows out itself, counting them.

    ``metrics``: a streaming run publishes each micro-batch's numbers there as it goes."""
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
    if bad_records is not None:
        check_apart(output, bad_records)
    opts, plan = plan_read(opts, bad_records is not None)
    trigger_ms = (0 if once else _trigger_ms(trigger)) if streaming else 0
    for flag, path in (("--output", output), ("--bad-records", bad_records)):
        if path is not None:
            _check_dataset(spark, flag, path, streaming)
    before = _committed_files(spark, output)
    before_bad = _committed_files(spark, bad_records) if bad_records is not None else set()
    if streaming:
        assert checkpoint is not None
        summary = _run_stream(spark, opts, output, checkpoint, once, trigger_ms, status,
                              stop or threading.Event(), poll_interval, plan, bad_records,
                              metrics)
    else:
        summary = _run_batch(spark, opts, output, status, poll_interval, plan, bad_records)
    added = sorted(_committed_files(spark, output) - before)
    written = _summarize(spark, added)
    if not streaming:
        # a file sink's log lists every file it wrote: only a batch write's may go
        added = _drop_empty(spark, added, written.files_with_rows)
    summary.files = len(added)
    summary.partitions = written.partitions
    summary.null_fields = written.null_fields
    if summary.lag is not None:
        summary.lag = with_sizes(summary.lag, {(p.topic, p.partition): (p.records, p.bytes)
                                               for p in summary.partitions})
    if bad_records is not None:
        added_bad = sorted(_committed_files(spark, bad_records) - before_bad)
        rejected = _summarize(spark, added_bad)
        if not streaming:
            added_bad = _drop_empty(spark, added_bad, rejected.files_with_rows)
        summary.bad_records = bad_records
        summary.rejected_files = len(added_bad)
        summary.rejected = rejected.partitions
    if not summary.topics:
        summary.topics = tuple(sorted({p.topic for p in summary.partitions + summary.rejected}))
    return summary


def _check_dataset(spark: Any, flag: str, path: str, streaming: bool) -> None:
    """A streaming run appends through Spark's file sink, a batch run without it: a dataset
    takes one kind of run."""
    sink_log = f"{path.rstrip('/')}/_spark_metadata"
    if streaming:
        if _has_data_files(spark, path) and not _exists(spark, sink_log):
            raise IngestError(f"{path} holds a batch dataset; a streaming run writes with "
                              "Spark's file sink and needs a directory of its own")
    elif _exists(spark, sink_log):
        what = "--output" if flag == "--output" else f"another {flag}"
        raise IngestError(f"{path} is a streaming (file sink) dataset: ingest into it with "
                          f"--checkpoint, or choose {what} for batch runs")


def _trigger_ms(trigger: str) -> int:
    try:
        return parse_trigger_ms(trigger)
    except ValueError as exc:
        raise IngestError(f"--trigger: {exc}") from None


def _run_batch(spark: Any, opts: Mapping[str, str], output: str, status: StatusLine | None,
               poll_interval: float, plan: ReadPlan, bad_records: str | None = None
               ) -> IngestSummary:
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
            if status is None:
                continue
            if total:
                status.update(f"batch: {bar(done / total)} tasks {done}/{total} done "
                              f"(read + write), {elapsed:,.0f} s")
            else:                   # the driver resolves offsets and plans the tasks first
                status.update(f"batch: planning the read, {elapsed:,.0f} s")

    watcher = None
    if status is not None and status.live:
        watcher = threading.Thread(target=watch, name="pyconsumer-ingest-progress", daemon=True)
        watcher.start()
    sc.setJobGroup(group, "pyconsumer ingest (batch)")
    metrics: Mapping[str, Any] | None = None
    pinned = None
    try:
        # inside the try: a Ctrl-C while the end is looked up stops the progress thread too
        pinned = pin_range(opts)
        df = spark.read.format("pyconsumer").options(**(opts if pinned is None else pinned.options)).load()
        if not plan.sized:
            df.write.mode("append").parquet(output)
        else:
            metrics = _write_typed(df, plan, output, bad_records)
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
    per_record = None
    if metrics is not None and metrics["records"]:
        per_record = int(metrics["bytes"] or 0) / int(metrics["records"])
    lag = None if pinned is None else pinned.lag(per_record)
    if status is not None:
        try:
            done, total = tasks()
            what = f"{done}/{total} tasks" if total else "done"
        except Exception:
            what = "done"
        status.log(f"batch: read and wrote ({what}) in {seconds:.1f} s"
                   + ("" if lag is None else f"; behind latest {total_text(lag)}"))
    summary = IngestSummary(mode="batch", output=output, seconds=seconds, micro_batches=1)
    summary.lag = lag
    if metrics is not None:
        summary.read_bytes = int(metrics["good_bytes"] or 0)
        summary.dropped = int(metrics["rejected"] or 0) if plan.drops else None
        summary.topics = tuple(sorted(metrics["topics"] or ()))
    return summary


def _write_typed(df: Any, plan: ReadPlan, output: str, bad_records: str | None
                 ) -> Mapping[str, Any]:
    """The good rows to ``output`` (the rejected ones, with --bad-records, to ``bad_records``,
    when there are any), observing what was read; returns the observed metrics.

    With --bad-records the read is cached first: its offset ranges and reader schema are fixed
    once for both writes (two plans could each take a newer "latest"), and Kafka is read and
    decoded once."""
    from pyspark import StorageLevel
    from pyspark.sql import Observation

    observation = Observation(f"{OBSERVATION}_{uuid.uuid4().hex[:8]}")
    if bad_records is None:
        plan.good(df.observe(observation, *_metrics(df, plan))).write.mode("append") \
            .parquet(output)
        return dict(observation.get)
    assert plan.split is not None
    cached = df.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        plan.good(cached.observe(observation, *_metrics(cached, plan))).write.mode("append") \
            .parquet(output)
        metrics = dict(observation.get)
        if metrics["rejected"]:
            plan.split.rejected(cached).write.mode("append").parquet(bad_records)
    finally:
        cached.unpersist()
    return metrics


def _run_stream(spark: Any, opts: Mapping[str, str], output: str, checkpoint: str, once: bool,
                trigger_ms: int, status: StatusLine | None, stop: threading.Event,
                poll_interval: float, plan: ReadPlan, bad_records: str | None = None,
                metrics: IngestMetrics | None = None) -> IngestSummary:
    mode = "availableNow" if once else "continuous"

    def sink(df: Any, path: str, location: str) -> Any:
        writer = (df.writeStream.format("parquet").option("path", path)
                  .option("checkpointLocation", location))
        return (writer.trigger(availableNow=True) if once
                else writer.trigger(processingTime=f"{trigger_ms} milliseconds"))

    def read() -> Any:
        return spark.readStream.format("pyconsumer").options(**opts).load()

    # progress (records read, bytes) is observed on the first query, which sees every record
    writers = [sink(plan.good(_observed(read(), plan)), output, checkpoint)]
    if bad_records is not None:
        assert plan.split is not None
        writers.append(sink(plan.split.rejected(read()), bad_records,
                            f"{checkpoint.rstrip('/')}/rejected"))
    progress = StreamProgress(status, mode, metrics)
    tracker = spark.sparkContext.statusTracker()
    started = time.monotonic()
    interrupted = False
    queries: list[Any] = []

    def stop_all() -> None:
        for q in queries:
            if q.isActive:
                q.stop()

    with _graceful_interrupt(stop, status):
        try:
            for writer in writers:
                queries.append(writer.start())
            while True:
                active = [q for q in queries if q.isActive]
                if active:
                    active[0].awaitTermination(poll_interval)
                for p in queries[0].recentProgress:
                    progress.take(p)
                if any(q.exception() is not None for q in queries):
                    break
                if not any(q.isActive for q in queries):
                    break
                if stop.is_set():
                    interrupted = True
                    break
                try:
                    progress.draw(tracker)
                except Exception:    # progress display is best effort
                    pass
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            # one query failing or a stop ends both: neither runs on alone
            stop_all()
            if status is not None:
                status.clear()
    for p in queries[0].recentProgress:
        progress.take(p)
    for q in queries:
        error = q.exception()
        if error is not None:
            raise IngestError(f"the streaming query failed: {spark_error_message(error)}")
    seconds = time.monotonic() - started
    summary = IngestSummary(mode=mode, output=output, seconds=seconds,
                            micro_batches=progress.batches, interrupted=interrupted,
                            busy_seconds=progress.busy_ms / 1000.0 if mode == "continuous"
                            else None)
    summary.lag = progress.partition_lag
    if plan.sized:
        summary.read_bytes = progress.good_bytes
        summary.dropped = progress.rejected if plan.drops else None
        summary.topics = tuple(sorted(progress.topics))
    return summary
