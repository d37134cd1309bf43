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

Progress goes to a :class:`~pyconsumer.console.StatusLine`: streaming from each micro-batch's
``StreamingQueryProgress`` (input rows and rates, the key+value bytes observed in the same
pass with ``DataFrame.observe``, the lag behind the broker from the source's latestOffset);
batch from the SparkContext's status tracker (tasks done of the tasks known so far), which is
all Spark tells about a running batch job.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyconsumer.console import StatusLine, bar, format_table, human_bytes

__all__ = [
    "IngestSummary",
    "PartitionSummary",
    "IngestError",
    "run_ingest",
    "format_summary",
    "parse_trigger_ms",
    "source_options",
    "temporary_session",
    "spark_error_message",
]

#: the name of the observed metrics of each micro-batch (records, bytes)
OBSERVATION = "pyconsumer_ingest"


class IngestError(RuntimeError):
    """The ingest could not run or failed: the message is meant for a terminal."""


@dataclass(frozen=True)
class PartitionSummary:
    """What this run wrote of one topic-partition."""

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    records: int
    bytes: int          # sum of key and value lengths (null counts 0)


@dataclass
class IngestSummary:
    """What one ingest run wrote: per partition and in total, with the wall time."""

    mode: str                                   # "batch", "availableNow" or "continuous"
    output: str
    partitions: list[PartitionSummary] = field(default_factory=list)
    seconds: float = 0.0                        # reading and writing (not the summary)
    micro_batches: int = 0                      # batches with records (batch mode: 0 or 1)
    files: int = 0                              # Parquet files added to the dataset
    interrupted: bool = False                   # stopped by stop / Ctrl-C
    #: continuous streaming: the time its micro-batches with records took (the rest of
    #: ``seconds`` is waiting for records); the rates are over this, not the wall time
    busy_seconds: float | None = None

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)

    @property
    def rate_seconds(self) -> float:
        """What the rates divide by: the busy time of a continuous run, else the wall time."""
        return self.seconds if self.busy_seconds is None else self.busy_seconds

    @property
    def records_per_second(self) -> float:
        return self.records / self.rate_seconds if self.rate_seconds > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.bytes / 1e6 / self.rate_seconds if self.rate_seconds > 0 else 0.0

    def by_partition(self) -> dict[tuple[str, int], PartitionSummary]:
        return {(p.topic, p.partition): p for p in self.partitions}


# --------------------------------------------------------------------------- options


_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(ms|milliseconds?|s|sec|seconds?|m|min|"
                       r"minutes?|h|hours?)?\s*", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "sec": 1000,
            "second": 1000, "seconds": 1000, "m": 60_000, "min": 60_000, "minute": 60_000,
            "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000}


def parse_trigger_ms(text: str) -> int:
    """``"10s"``, ``"500ms"``, ``"1.5 minutes"``, ``"2m"`` -> milliseconds (a bare number is
    seconds). Raises ValueError."""
    m = _DURATION.fullmatch(text or "")
    if not m:
        raise ValueError(f"not a duration: {text!r} (e.g. 10s, 500ms, 1m)")
    unit = (m.group(2) or "s").lower()
    ms = int(round(float(m.group(1)) * _UNIT_MS[unit]))
    if ms <= 0:
        raise ValueError(f"the trigger interval must be positive, got {text!r}")
    return ms


def source_options(*, bootstrap: str | None, topics: Sequence[str] = (),
                   pattern: str | None = None, starting_offsets: str | None = None,
                   ending_offsets: str | None = None, options: Mapping[str, str] | None = None,
                   kafka: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``format("pyconsumer")`` options: explicit arguments, then ``options``
    (Spark Kafka source options, e.g. maxOffsetsPerTrigger), then ``kafka`` (consumer
    settings, given the ``kafka.`` prefix)."""
    opts: dict[str, str] = {}
    if bootstrap:
        opts["kafka.bootstrap.servers"] = bootstrap
    if topics:
        opts["subscribe"] = ",".join(topics)
    if pattern is not None:
        opts["subscribePattern"] = pattern
    if starting_offsets is not None:
        opts["startingOffsets"] = starting_offsets
    if ending_offsets is not None:
        opts["endingOffsets"] = ending_offsets
    for key, value in (options or {}).items():
        opts[key] = str(value)
    for key, value in (kafka or {}).items():
        opts[key if key.lower().startswith("kafka.") else f"kafka.{key}"] = str(value)
    lowered = {k.lower() for k in opts}
    strategies = lowered & {"subscribe", "subscribepattern", "assign"}
    if not strategies:
        raise IngestError("give the topics to read: --topic, --pattern or -o assign=JSON")
    if len(strategies) > 1:
        raise IngestError("give only one of --topic (subscribe), --pattern (subscribePattern) "
                          "and -o assign")
    if "kafka.bootstrap.servers" not in lowered:
        raise IngestError("give the broker: --bootstrap-server HOST:PORT")
    return opts


# --------------------------------------------------------------------------- before Spark
# (checks that take milliseconds here and 10+ s of Spark start-up to fail inside a query)


def local_path(path: str) -> str | None:
    """The file-system path of ``path``, or None for a URI Spark resolves (hdfs://, s3a://)."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path):
        return None
    return path


def claim_folders(folders: Mapping[str, str | None]) -> list[str]:
    """Create the local ``{flag: path}`` folders that do not exist yet, so a path Spark could
    not write fails now, naming its flag; returns the folders created (the top-most of each),
    for :func:`release_folders` after a failed run."""
    created: list[str] = []
    for flag, path in folders.items():
        local = None if path is None else local_path(path)
        if local is None:
            continue
        if "\x00" in local:
            raise IngestError(f"{flag} {path!r}: a path cannot hold a NUL character")
        target = os.path.abspath(local)
        if os.path.isdir(target):
            if not os.access(target, os.W_OK | os.X_OK):
                raise IngestError(f"{flag} {path}: the folder is not writable")
            continue
        if os.path.exists(target):
            raise IngestError(f"{flag} {path} is a file; give a folder (it will hold "
                              f"{'the Parquet files' if flag == '--output' else 'offsets'})")
        top = target
        while not os.path.exists(os.path.dirname(top)):
            top = os.path.dirname(top)
        try:
            os.makedirs(target)
        except OSError as exc:
            raise IngestError(f"{flag} {path}: cannot create the folder: "
                              f"{exc.strerror or exc}") from None
        created.append(top)
    return created


def release_folders(created: Sequence[str]) -> list[str]:
    """After a failed or interrupted run: remove the folders :func:`claim_folders` created
    when they hold no data files (only Spark's hidden ``_x``/``.x`` entries, or nothing);
    returns those removed. A folder with data stays: that data was committed."""
    removed = []
    for top in created:
        data = False
        for _, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
            if any(not f.startswith(("_", ".")) for f in files):
                data = True
                break
        if not data:
            shutil.rmtree(top, ignore_errors=True)
            removed.append(top)
    return removed


def check_source(opts: Mapping[str, str], timeout_ms: int = 10_000) -> list[str]:
    """Ask the cluster, before Spark starts, what the query would: that the brokers answer
    and the topics exist (not created: the check never auto-creates). Returns the topics
    read; IngestError naming the broker or the missing topic (with close matches)."""
    from pyconsumer import KafkaConsumer
    from pyconsumer.console import missing_topic_message
    from pyconsumer.errors import ConfigurationError, KafkaError

    settings: dict[str, Any] = {k[len("kafka."):]: v for k, v in opts.items()
                                if k.lower().startswith("kafka.")}
    settings.update({"allow.auto.create.topics": False, "default.api.timeout.ms": timeout_ms,
                     "client.id": "pyconsumer-ingest-check"})
    settings.pop("group.id", None)
    lowered = {k.lower(): v for k, v in opts.items()}
    try:
        with KafkaConsumer(**settings) as consumer:
            known = consumer.topics()
    except ConfigurationError as exc:
        raise IngestError(str(exc)) from None
    except KafkaError as exc:
        raise IngestError(f"the brokers {opts.get('kafka.bootstrap.servers')} did not answer: "
                          f"{exc}") from None
    if "subscribe" in lowered:
        topics = [t.strip() for t in lowered["subscribe"].split(",") if t.strip()]
        for topic in topics:
            if topic not in known:
                raise IngestError(missing_topic_message(topic, sorted(known)))
        return topics
    if "subscribepattern" in lowered:
        regex = re.compile(lowered["subscribepattern"])
        # as the source reads it: the pattern found anywhere in the name (Spark 4's findFirstIn)
        topics = sorted(t for t in known if regex.search(t))
        if not topics:
            raise IngestError(f"no topic matches --pattern {lowered['subscribepattern']!r}")
        return topics
    return []


def unknown_source_options(options: Mapping[str, str]) -> list[str]:
    """A warning for each ``-o`` option the Kafka source does not know (Spark ignores those
    silently), with the closest known name."""
    import difflib

    from pyconsumer.spark.options import known_option_names

    known = known_option_names()
    lowered = {name.lower(): name for name in known}
    warnings = []
    for key in options:
        if key.lower().startswith("kafka.") or key.lower() in lowered:
            continue
        close = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
        hint = f" (did you mean {lowered[close[0]]}?)" if close else ""
        warnings.append(f"-o {key}: not an option of the Kafka source, ignored{hint}")
    return warnings


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


# --------------------------------------------------------------------------- progress


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    if isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def _lag(source: Mapping[str, Any]) -> int | None:
    """sum(latestOffset - endOffset) over partitions, from one source's progress."""
    latest = _offsets(source.get("latestOffset"))
    end = _offsets(source.get("endOffset"))
    if not latest:
        return None
    lag = 0
    for topic, parts in latest.items():
        for p, off in parts.items():
            lag += max(0, int(off) - int(end.get(topic, {}).get(p, 0)))
    return lag


def _tasks(tracker: Any, stage_ids: Sequence[int]) -> tuple[int, int]:
    done = total = 0
    for sid in stage_ids:
        info = tracker.getStageInfo(sid)
        if info is not None:
            done += info.numCompletedTasks
            total += info.numTasks
    return done, total


class _StreamProgress:
    """Turns StreamingQueryProgress events into counters and status lines."""

    def __init__(self, status: StatusLine | None, mode: str) -> None:
        self.status = status
        self.mode = mode
        self.seen: set[tuple[Any, Any]] = set()
        self.counted: set[int] = set()
        self.records = 0
        self.bytes = 0
        self.batches = 0
        self.busy_ms = 0                        # the micro-batches with records, end to end
        self.lag: int | None = None
        self.last_rate: float | None = None
        self.started = time.monotonic()

    def take(self, progress: Any) -> None:
        key = (progress["batchId"], progress["timestamp"])
        if key in self.seen:
            return
        self.seen.add(key)
        sources = progress["sources"] or []
        lag = _lag(sources[0]) if sources else None
        if lag is not None:
            self.lag = lag
        rows = int(progress["numInputRows"] or 0)
        batch_id = int(progress["batchId"])
        if rows == 0 or batch_id in self.counted:
            return
        self.counted.add(batch_id)
        metrics = (progress["observedMetrics"] or {}).get(OBSERVATION)
        nbytes = int(metrics["bytes"]) if metrics is not None else 0
        self.records += rows
        self.bytes += nbytes
        self.batches += 1
        self.busy_ms += int(progress["batchDuration"] or 0)
        rate = float(progress["processedRowsPerSecond"] or 0.0)
        self.last_rate = rate
        if self.status is not None:
            self.status.log(
                f"micro-batch {batch_id}: {rows:,} records, {human_bytes(nbytes)} in "
                f"{int(progress['batchDuration'] or 0) / 1000:.1f} s ({rate:,.0f} records/s); "
                f"run total {self.records:,} records, {human_bytes(self.bytes)}"
                + ("" if self.lag is None else f"; lag {self.lag:,}"))

    def draw(self, tracker: Any) -> None:
        if self.status is None or not self.status.live:
            return
        elapsed = time.monotonic() - self.started
        parts = [f"{self.records:,} records, {human_bytes(self.bytes)}"]
        if self.mode == "availableNow":
            if self.lag is not None and self.records + self.lag > 0:
                parts[0] = (f"{bar(self.records / (self.records + self.lag))} "
                            f"{self.records:,} of {self.records + self.lag:,} records, "
                            f"{human_bytes(self.bytes)}")
            rate = self.records / elapsed if elapsed > 0 else 0.0
            parts.append(f"{rate:,.0f} records/s (run average)")
        elif self.last_rate is not None:
            parts.append(f"last micro-batch {self.last_rate:,.0f} records/s")
        if self.lag is not None and self.mode != "availableNow":
            parts.append(f"lag {self.lag:,}")
        done, total = _tasks(tracker, tracker.getActiveStageIds())
        if total:
            parts.append(f"micro-batch running: tasks {done}/{total}")
        parts.append(f"{elapsed:,.0f} s")
        self.status.update(f"{self.mode}: " + " | ".join(parts))


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
        return _tasks(tracker, stages)

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
    progress = _StreamProgress(status, mode)
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


# --------------------------------------------------------------------------- output


def format_summary(summary: IngestSummary) -> str:
    """The final table: per partition offsets, records and bytes, then totals and rates."""
    rows: list[tuple[Any, ...]] = [
        (p.topic, p.partition, f"{p.first_offset}-{p.last_offset}", f"{p.records:,}",
         f"{p.bytes:,}") for p in summary.partitions]
    rows.append(("total", "", "", f"{summary.records:,}", f"{summary.bytes:,}"))
    table = format_table(rows, ("topic", "partition", "offsets", "records", "bytes"),
                         right=(False, True, False, True, True))
    what = {"batch": "batch", "availableNow": "streaming, available now",
            "continuous": "streaming"}.get(summary.mode, summary.mode)
    head = (f"ingest summary ({what}; {summary.files} Parquet file"
            f"{'' if summary.files == 1 else 's'} added to {summary.output}"
            + (f"; {summary.micro_batches} micro-batch"
               f"{'' if summary.micro_batches == 1 else 'es'}" if summary.mode != "batch" else "")
            + (", stopped by Ctrl-C" if summary.interrupted else "") + "):")
    # one unit system for every size in the run (human_bytes: B, kB, MB ...), never "0.0 MB/s"
    busy = ("" if summary.busy_seconds is None else
            f" ({summary.busy_seconds:.2f} s in micro-batches, the rest waiting for records)")
    rate_s = summary.rate_seconds
    rates = (f"  {summary.records:,} records, {human_bytes(summary.bytes)} (key + value) in "
             f"{summary.seconds:.2f} s{busy}: {summary.records_per_second:,.0f} records/s, "
             f"{human_bytes(summary.bytes / rate_s if rate_s > 0 else 0)}/s")
    return "\n".join([head, table, rates])


# --------------------------------------------------------------------------- session


_LOG4J2 = """\
# pyconsumer: Spark's log on stderr at one level, without the start-up banner lines.
# PySpark counts as a shell: Spark compares the root level with its shell logger's (WARN
# unless a configured logger covers it) and prints "Setting default log level" when they
# differ; the top-level packages get the same level so that they do not.
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex
{loggers}
"""
_LOG_PACKAGES = ("org", "io", "com", "py4j", "scala", "net", "jdk", "java", "javax")


def _log4j2_properties(level: str) -> str:
    loggers = "\n".join(f"logger.{p}.name = {p}\nlogger.{p}.level = {level}"
                        for p in _LOG_PACKAGES)
    return _LOG4J2.format(level=level, loggers=loggers)


class _QuietPy4J(logging.Filter):
    """While the CLI's session lives: py4j's own log records (tracebacks of a call cut short
    by Ctrl-C, "Error while sending or receiving") are dropped; the CLI reports the failure
    itself. py4j logs some on the root logger (``logging.exception``), some on ``py4j.*``."""

    installed: list[_QuietPy4J] = []

    def filter(self, record: logging.LogRecord) -> bool:
        path = record.pathname.replace(os.sep, "/")
        return "/py4j/" not in path

    def install(self) -> None:
        logging.getLogger().addFilter(self)
        logging.getLogger("py4j").addFilter(self)
        for name in ("py4j.java_gateway", "py4j.clientserver"):
            logging.getLogger(name).addFilter(self)
        _QuietPy4J.installed.append(self)

    @classmethod
    def uninstall_all(cls) -> None:
        while cls.installed:
            f = cls.installed.pop()
            for name in ("", "py4j", "py4j.java_gateway", "py4j.clientserver"):
                logging.getLogger(name).removeFilter(f)


def _kill_children_mentioning(marker: str, timeout: float = 5.0) -> None:
    """Kill (and reap) this process's children whose command line contains ``marker``
    (Linux /proc; elsewhere nothing is done)."""
    if not os.path.isdir("/proc"):
        return
    me, needle = os.getpid(), marker.encode()
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle not in f.read():
                    continue
            os.kill(int(entry), signal.SIGKILL)
            killed.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    deadline = time.monotonic() + timeout
    for pid in killed:
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            time.sleep(0.05)


#: what the JVM prints at every start that says nothing to a user: Spark 4 adds
#: --add-modules=jdk.incubator.vector, and the JVM announces it on stderr (no flag silences it)
_JVM_NOISE = re.compile(r"WARNING: Using incubator modules: ")


@contextmanager
def _jvm_stderr_without(noise: re.Pattern[str]) -> Iterator[None]:
    """Processes started inside get, as stderr, a pipe that a thread copies to this process's
    stderr minus the lines matching ``noise``; this process's own stderr is restored at once.
    The copy runs until the last process holding the pipe (the JVM, its Python workers)
    exits."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):          # no real stderr (embedded): nothing to filter
        yield
        return
    read_end, write_end = os.pipe()
    target = os.dup(saved)                 # the thread's own copy of the real stderr
    os.dup2(write_end, 2)
    os.close(write_end)

    def copy() -> None:
        with os.fdopen(read_end, "rb") as lines, os.fdopen(target, "wb", 0) as out:
            for line in lines:
                if not noise.match(line.decode("utf-8", "replace")):
                    out.write(line)

    thread = threading.Thread(target=copy, name="pyconsumer-jvm-stderr", daemon=True)
    try:
        yield
    finally:
        os.dup2(saved, 2)                  # the pipe's write end now lives in the children only
        os.close(saved)
        thread.start()


@contextmanager
def temporary_session(master: str = "local[*]", *, app_name: str = "pyconsumer",
                      conf: Mapping[str, str] | None = None, fast_jvm: bool = False,
                      log_level: str = "fatal") -> Iterator[Any]:
    """A SparkSession whose scratch files (spark.local.dir, the JVM's and the Python
    workers' temp files, the SQL warehouse) live in one temporary directory that is removed,
    with the session, on exit: nothing is left in /tmp or in the working directory. Spark
    logs to stderr at ``log_level`` (fatal by default: the caller reports failures).
    ``master`` may be a cluster's (``spark://host:7077``): then these settings are the
    driver's, and the executors keep the scratch space and logs their cluster manager gives.

    When this process already has an active SparkSession (a test suite's, a notebook's), that
    one is used as it is (the arguments are ignored) and left running."""
    from pyspark.sql import SparkSession

    from pyconsumer.spark.session import local_session

    active = SparkSession.getActiveSession()
    if active is not None:
        from pyconsumer.spark import register

        register(active)
        yield active
        return
    scratch = tempfile.mkdtemp(prefix="pyconsumer-spark-")
    log_config = os.path.join(scratch, "log4j2.properties")
    with open(log_config, "w", encoding="utf-8") as f:
        f.write(_log4j2_properties(log_level))
    saved_tmpdir = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = scratch           # Python workers and other children
    java_opts = (f"-Dlog4j2.configurationFile=file:{log_config} "
                 "-XX:-UsePerfData")         # no hsperfdata in /tmp
    settings: dict[str, Any] = {"spark.sql.warehouse.dir": os.path.join(scratch, "warehouse")}
    settings.update(conf or {})
    spark = None
    try:
        try:
            with _jvm_stderr_without(_JVM_NOISE):
                spark = local_session(master, app_name=app_name, local_dir=scratch,
                                      fast_jvm=fast_jvm, java_options=java_opts,
                                      conf=settings)
        except BaseException:
            # interrupted (Ctrl-C) or failed while the JVM was starting: PySpark does not stop
            # a JVM it has not connected to yet, and that one would run on (and hold the
            # terminal's pipes) after this process exits
            _kill_children_mentioning(scratch)
            raise
        quiet_py4j = _QuietPy4J()
        quiet_py4j.install()
        if threading.current_thread() is threading.main_thread():
            # PySpark's SIGINT handler cancels jobs through py4j while a py4j call is waiting
            # on the same connection, and logs the tracebacks that causes; a plain
            # KeyboardInterrupt is enough: stop() below cancels what runs
            signal.signal(signal.SIGINT, signal.default_int_handler)
        yield spark
    finally:
        try:
            if spark is not None:
                spark.stop()
        finally:
            _QuietPy4J.uninstall_all()
            if saved_tmpdir is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved_tmpdir
            shutil.rmtree(scratch, ignore_errors=True)
