"""``pyconsumer ingest --table-format parquet|delta|iceberg``: Kafka into a Parquet table (a plain
dataset with pyconsumer's commit log, :mod:`pyconsumer.sinks.parquet`), a Delta Lake or an Iceberg
table, exactly once, batch or continuous, through Spark tasks that write the data files from Arrow
themselves.

The run, on the driver:

1. :func:`open_table` (before Spark starts): the sink (:mod:`pyconsumer.sinks`) opens or creates
   the table with the read's Arrow schema (Spark's Kafka schema, or the typed key / value
   columns), so an unwritable location, a conflicting schema or a catalog that does not answer
   fail before anything is read;
2. :func:`run_table_ingest`: the starting offsets come from the table (``resume_offsets()``;
   partitions it has not seen start at ``--starting-offsets``), the end offsets from the brokers
   (``--ending-offsets``, default latest), both through the source's own
   :class:`~pyconsumer.spark.offsets.OffsetReader`; the ranges are cut into tasks as the source
   cuts them (:mod:`pyconsumer.spark.planning`);
3. ``sc.parallelize(tasks).mapPartitions(...)``: each task reads its ranges with the source's
   reader (:func:`~pyconsumer.spark.reader.read_ranges`, typed by the same
   :class:`~pyconsumer.spark.source.TypedRead` plan as ``format("pyconsumer")``), hands the Arrow
   batches to ``sink.write`` and returns the written files' small descriptions and what it read
   per partition: no row goes through the JVM;
4. one ``sink.commit(files, end_offsets)``: the files and the offsets reached in one table
   commit. A rerun resumes from the table: nothing twice, nothing missed. Files written by a run
   that died before its commit are in no commit, so no reader sees them.

Continuous (``--trigger INTERVAL``, :func:`run_table_ingest_continuous`): steps 2-4 as one
round per trigger until Ctrl-C or a ``stop`` Event, each round reading to the latest offsets
(capped by maxOffsetsPerTrigger as the source's micro-batches are); no checkpoint, the table
holds the offsets.

``PYCONSUMER_INGEST_CRASH_AT`` (internal, for the crash tests only): ``before-files`` (the
offsets resolved, no task run yet), ``after-files`` or ``after-commit`` makes the driver SIGKILL
itself at that point of the run; ``mid-task`` makes a task's Python worker SIGKILL itself once
the sink wrote the task's files, before the task returns them, in the task's first attempt only
(a retry, as Spark's ``spark.task.maxFailures`` or ``local[N,F]`` allow, goes through). The
setting is read on the driver and travels with the tasks, so it reaches every executor.
"""
from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyconsumer.ingest.options import IngestError
from pyconsumer.ingest.lag import PartitionLag, partition_lag, total_text
from pyconsumer.ingest.metrics import IngestMetrics
from pyconsumer.ingest.summary import IngestSummary, PartitionSummary
from pyconsumer.sinks import DEFAULT_TARGET_FILE_SIZE, DataFile, SinkError, TableSink

if TYPE_CHECKING:
    import pyarrow as pa

    from pyconsumer.console import StatusLine
    from pyconsumer.spark.options import SourceOptions
    from pyconsumer.spark.source import KafkaInputPartition, TypedRead

__all__ = ["TABLE_FORMATS", "TableTarget", "TableRead", "open_table", "plan_table_read",
           "run_table_ingest", "run_table_ingest_continuous", "parse_size", "CRASH_ENV"]

TABLE_FORMATS = ("parquet", "delta", "iceberg")

#: internal crash points for the exactly-once tests (see the module's docstring)
CRASH_ENV = "PYCONSUMER_INGEST_CRASH_AT"

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kmgt]?i?b?)\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``134217728``, ``128MiB``, ``128MB`` (10^6), ``16k`` (KiB) -> bytes; ValueError."""
    m = _SIZE.fullmatch(text or "")
    if not m:
        raise ValueError(f"not a size: {text!r} (e.g. 128MiB, 64MB, 1048576)")
    unit = m.group(2).lower().rstrip("b")
    power = " kmgt".index(unit[0]) if unit else 0
    # a bare k/m/g (no B) is binary, as JVM settings read it; KB, MB are decimal
    base = 1024 if (unit.endswith("i") or (unit and not m.group(2).lower().endswith("b"))) else 1000
    size = int(float(m.group(1)) * base**power)
    if size < 1024:
        raise ValueError(f"a target file size of at least 1 KiB, got {text!r}")
    return size


@dataclass(frozen=True)
class TableTarget:
    """Where and how the table is written, as the command line gives it."""

    table_format: str
    #: parquet: the table's path; delta: its path or URI; iceberg: the table's NAMESPACE.NAME
    output: str
    warehouse: str | None = None
    catalog_uri: str | None = None
    partition_by: tuple[str, ...] = ()
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    app_id: str = "pyconsumer"

    def check(self) -> None:
        """The flags that fit the format, before anything is opened."""
        if self.table_format == "iceberg":
            if self.warehouse is None:
                raise IngestError("--table-format iceberg needs --warehouse DIR (where the "
                                  "table's files and the default SQLite catalog go)")
            if "." not in self.output.strip(".") or "/" in self.output:
                raise IngestError(f"--table-format iceberg: --output {self.output!r} is the "
                                  "table's name, NAMESPACE.NAME (e.g. kafka.events)")
        elif self.table_format in ("delta", "parquet"):
            for flag, given in (("--warehouse", self.warehouse), ("--catalog-uri", self.catalog_uri)):
                if given is not None:
                    raise IngestError(f"{flag} is for --table-format iceberg; a "
                                      f"{self.table_format.capitalize()} table is its --output path")
        else:
            raise IngestError(f"--table-format {self.table_format!r}: give parquet, delta or iceberg")


@dataclass
class TableRead:
    """The read's source options, its typed-value plan (None: binary key and value) and the
    Arrow schema of every batch the tasks hand the sink."""

    source: SourceOptions
    typed: TypedRead | None
    schema: pa.Schema


def plan_table_read(source: SourceOptions, topics: Sequence[str]) -> TableRead:
    """The batches' schema as the source would give them: Spark's Kafka schema, or with typed
    values the source's own typed schema (Avro readers pinned now, as the source pins them)."""
    from pyconsumer.records import kafka_arrow_schema
    from pyconsumer.spark.source import TypedRead, typed_schema

    if source.values is None:
        return TableRead(source, None, kafka_arrow_schema(source.include_headers))
    struct = typed_schema(source.values, source.include_headers, topics)
    typed = TypedRead(source.values, struct)
    return TableRead(source, typed, typed.target)


def open_table(target: TableTarget, schema: pa.Schema) -> TableSink:
    """The sink, its table opened or created and checked against ``schema`` (IngestError with
    the sink's one-line reason)."""
    target.check()
    try:
        if target.table_format == "parquet":
            from pyconsumer.sinks.parquet import ParquetSink

            return ParquetSink(target.output, schema, app_id=target.app_id,
                               partition_by=target.partition_by,
                               target_file_size=target.target_file_size)
        if target.table_format == "delta":
            from pyconsumer.sinks.delta import DeltaSink

            return DeltaSink(target.output, schema, app_id=target.app_id,
                             partition_by=target.partition_by,
                             target_file_size=target.target_file_size)
        from pyconsumer.sinks.iceberg import IcebergSink

        assert target.warehouse is not None
        return IcebergSink(target.output, schema, warehouse=target.warehouse,
                           catalog_uri=target.catalog_uri, app_id=target.app_id,
                           partition_by=target.partition_by,
                           target_file_size=target.target_file_size)
    except (SinkError, ValueError) as exc:
        raise IngestError(str(exc)) from None


# --------------------------------------------------------------------------- the tasks


@dataclass
class _TaskResult:
    """What one task returns to the driver: small and picklable."""

    files: list[DataFile]
    #: (topic, partition) -> [first offset, last offset, records, key + value bytes]
    read: dict[tuple[str, int], list[int]] = field(default_factory=dict)


def _count(batch: pa.RecordBatch, seen: dict[tuple[str, int], list[int]]) -> None:
    """Per partition of the batch: offsets, records and the bytes of a binary or text key and
    value (a decoded struct has no length of its own and counts 0, as in the Parquet run)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pyconsumer.sinks.files import single_partition, value_bytes

    texts = [batch.column(name) for name in ("key", "value")
             if pa.types.is_binary(batch.schema.field(name).type) or pa.types.is_string(batch.schema.field(name).type)]
    one = single_partition(batch)
    if one is not None:
        mm = pc.min_max(batch.column("offset"))
        size_sum = sum(value_bytes(c) for c in texts)
        s = seen.setdefault(one, [mm["min"].as_py(), mm["max"].as_py(), 0, 0])
        s[0], s[1] = min(s[0], mm["min"].as_py()), max(s[1], mm["max"].as_py())
        s[2] += batch.num_rows
        s[3] += size_sum
        return
    size: pa.Array | None = None
    for column in texts:
        length = pc.fill_null(pc.cast(pc.binary_length(column), pa.int64()), 0)
        size = length if size is None else pc.add(size, length)
    if size is None:
        size = pa.nulls(batch.num_rows, pa.int64()).fill_null(0)
    t = pa.table([batch.column("topic"), batch.column("partition"), batch.column("offset"), size],
                 names=["topic", "partition", "offset", "size"])
    groups = t.group_by(["topic", "partition"], use_threads=False).aggregate(
        [("offset", "min"), ("offset", "max"), ("offset", "count"), ("size", "sum")])
    for row in groups.to_pylist():
        s = seen.setdefault((row["topic"], row["partition"]),
                            [row["offset_min"], row["offset_max"], 0, 0])
        s[0], s[1] = min(s[0], row["offset_min"]), max(s[1], row["offset_max"])
        s[2] += row["offset_count"]
        s[3] += row["size_sum"] or 0


def _counted(batches: Iterable[pa.RecordBatch], seen: dict[tuple[str, int], list[int]]
             ) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        _count(batch, seen)
        yield batch


def _write_tasks(sink: TableSink, read: TableRead) -> Any:
    """The function each Spark partition runs: its group of tasks (planning.spread) read one
    after another into one sink.write (files shared by the group's partitions), one result."""
    source, typed = read.source, read.typed
    # the driver's crash point, in the closure: executors need not share its environment
    crash_at = os.environ.get(CRASH_ENV)

    def run(groups: Iterable[list[KafkaInputPartition]]) -> Iterator[_TaskResult]:
        from pyconsumer.spark.reader import read_ranges, settle_worker_heap

        from pyconsumer.ingest.prefetch import Prefetched

        settle_worker_heap()
        for group in groups:
            seen: dict[tuple[str, int], list[int]] = {}

            def batches(group: list[KafkaInputPartition] = group,
                        seen: dict[tuple[str, int], list[int]] = seen) -> Iterator[pa.RecordBatch]:
                for task in group:
                    read = (read_ranges(task.ranges, source) if typed is None
                            else typed.read(task, source))
                    yield from _counted(read, seen)

            # fetching and decoding the next batches overlaps the encoding of the current ones
            prefetched = Prefetched(batches, name="pyconsumer-ingest-read")
            try:
                files = sink.write(prefetched)
            finally:
                prefetched.close()
            if crash_at == "mid-task" and files:
                _crash_task()
            yield _TaskResult(files, seen)

    return run


# --------------------------------------------------------------------------- the run


#: offsets a Spark task should hold at least when there are more cores than that makes tasks:
#: a Python task costs ~50 ms of scheduling alone, the time to write ~150k small records, and
#: measured on 6 partitions x 166k-833k records, one Spark task per core beat one per partition
SPARK_TASK_OFFSETS = 2_000_000


def _task_offsets(task: KafkaInputPartition) -> int:
    return sum(r.size for r in task.ranges)


def _spark_tasks(tasks: Sequence[KafkaInputPartition], min_partitions: int | None,
                 cores: int) -> int:
    """How many Spark tasks run ``tasks``: one each when minPartitions asks for them or when
    they are large; small ones packed into one Spark task per core (each running its share in
    turn), or into Spark tasks of SPARK_TASK_OFFSETS offsets where that makes more. Many Spark
    tasks balance better over cores of unequal speed; few cost less scheduling."""
    if min_partitions:
        return len(tasks)
    total = sum(_task_offsets(t) for t in tasks)
    return max(1, min(len(tasks), max(cores, total // SPARK_TASK_OFFSETS)))


def _crash(point: str) -> None:
    if os.environ.get(CRASH_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def _crash_task() -> None:
    """``mid-task``: the task's Python worker SIGKILLs itself, in the task's first attempt."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None or context.attemptNumber() == 0:
        os.kill(os.getpid(), signal.SIGKILL)


def _publish(read: TableRead, offsets: Mapping[tuple[str, int], int],
             status: StatusLine | None) -> None:
    """``-o commitOffsetsToKafka=true``: commit the offsets the table holds to
    ``kafka.group.id``, so that lag tools see the job's progress. The table stays the truth (a
    rerun resumes from it, never from the group), so a failed commit is reported, not fatal."""
    from pyconsumer.spark.offsets import OffsetReader
    from pyconsumer.structs import OffsetAndMetadata, TopicPartition

    if not offsets:
        return
    reader = OffsetReader(read.source, role="ingest-group-commit")
    try:
        reader.consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o)
                                for (t, p), o in sorted(offsets.items())})
    except Exception as exc:        # progress for lag tools must never fail the ingest
        if status is not None:
            status.log(f"commitOffsetsToKafka: committing the table's offsets to group "
                       f"{read.source.group_id!r} failed: {exc}")
    finally:
        reader.close()


def _offsets(read: TableRead, held: Mapping[tuple[str, int], int], *, continuous: bool = False
             ) -> tuple[dict[Any, int], dict[Any, int], dict[Any, int]]:
    """Start, end and latest offsets of every partition read: the start from the table where
    it holds one, else per --starting-offsets; the end per --ending-offsets (default latest),
    or the latest offsets (capped by maxOffsetsPerTrigger) in a continuous run's round."""
    from pyconsumer.spark.offsets import OffsetReader
    from pyconsumer.spark.planning import rate_limit

    o = read.source
    offsets = OffsetReader(o, role="ingest-table")
    try:
        tps = offsets.partitions()
        # resolved for every partition: a JSON spec names them all, held or not
        start = offsets.resolve(o.starting, tps, is_start=True, option="startingOffsets")
        for tp in tps:
            if (tp.topic, tp.partition) in held:
                start[tp] = held[(tp.topic, tp.partition)]
        if continuous:
            latest = offsets.latest(tps)
            end = dict(latest)
            if o.max_offsets_per_trigger is not None:
                end = rate_limit(start, end, o.max_offsets_per_trigger)
        else:
            end = offsets.resolve(o.ending, tps, is_start=False, option="endingOffsets")
            latest = offsets.latest(tps)      # the lag left behind
    finally:
        offsets.close()
    return start, end, latest


@dataclass
class _Round:
    """What one round (the batch run, or one trigger of a continuous run) did."""

    tasks: int
    #: the files committed (none when the round committed nothing)
    files: int
    version: int | None
    #: what the tasks read: (topic, partition) -> [first, last, records, bytes]
    seen: dict[tuple[str, int], list[int]]
    seconds: float
    #: each partition's offsets behind the latest ones when the round ended
    lag: list[PartitionLag]


def _bytes_per_record(read: TableRead, seen: Mapping[tuple[str, int], list[int]]
                      ) -> dict[tuple[str, int], float]:
    """Key and value bytes per record of each partition read (typed values have no byte
    count of their own: none)."""
    if read.typed is not None:
        return {}
    return {tp: s[3] / s[2] for tp, s in seen.items() if s[2] > 0}


def _merge(into: dict[tuple[str, int], list[int]], read: Mapping[tuple[str, int], list[int]]
           ) -> None:
    for tp, s in read.items():
        if tp not in into:
            into[tp] = list(s)
            continue
        t = into[tp]
        t[0], t[1] = min(t[0], s[0]), max(t[1], s[1])
        t[2] += s[2]
        t[3] += s[3]


def _round(spark: Any, sink: TableSink, read: TableRead, *, output: str, label: str,
           continuous: bool, status: StatusLine | None,
           earlier: Mapping[tuple[str, int], list[int]] | None = None,
           metrics: IngestMetrics | None = None) -> _Round:
    """Read from where the table stopped to the end offsets in Spark tasks that write the data
    files, then commit them with the offsets in one table commit (nothing when nothing moved).
    The lag's bytes are estimated from what this round and ``earlier`` ones read; the round's
    numbers are published to ``metrics``."""
    from pyconsumer.errors import KafkaError
    from pyconsumer.spark.offsets import report_data_loss
    from pyconsumer.spark.planning import OffsetRange, group_ranges, split_ranges, spread
    from pyconsumer.spark.source import KafkaInputPartition

    started = time.monotonic()
    o = read.source
    try:
        held = sink.resume_offsets()
        start, end, latest = _offsets(read, held, continuous=continuous)
    except SinkError as exc:
        raise IngestError(str(exc)) from None
    except KafkaError as exc:
        raise IngestError(f"the brokers {o.kafka_params.get('bootstrap.servers')}: {exc}") from None
    ranges = []
    for tp, e in sorted(end.items()):
        if tp not in start:
            continue
        if start[tp] > e:
            report_data_loss(o, f"Partition {tp.topic}-{tp.partition}'s starting offset "
                                f"{start[tp]} (from the table or --starting-offsets) is after "
                                f"its ending offset {e}")
            continue
        ranges.append(OffsetRange(tp.topic, tp.partition, start[tp], e))
    todo = [r for r in ranges if r.size > 0]
    tasks = [KafkaInputPartition(t) if read.typed is None else read.typed.partition(t)
             for t in group_ranges(split_ranges(
                 todo, min_partitions=o.min_partitions,
                 max_records_per_partition=o.max_records_per_partition),
                 o.min_records_per_partition)]
    _crash("before-files")
    results: list[_TaskResult] = []
    if tasks:
        sc = spark.sparkContext
        sc.setJobDescription(f"pyconsumer ingest into {output}")
        try:
            groups = spread(tasks, _spark_tasks(tasks, o.min_partitions, sc.defaultParallelism),
                            _task_offsets)
            results = (sc.parallelize(groups, len(groups))
                       .mapPartitions(_write_tasks(sink, read)).collect())
        finally:
            sc.setJobDescription(None)
    files = [f for r in results for f in r.files]
    _crash("after-files")
    # only partitions that moved: the table refuses a commit that repeats some of its offsets
    offsets = {(r.topic, r.partition): r.end for r in todo}
    version = None
    if offsets:
        try:
            version = sink.commit(files, offsets)
        except SinkError as exc:
            raise IngestError(str(exc)) from None
    _crash("after-commit")
    if o.commit_offsets_to_kafka:
        # what the table now holds, as the group's offsets: for lag tools only
        _publish(read, {(r.topic, r.partition): r.end for r in ranges}, status)
    seconds = time.monotonic() - started
    seen: dict[tuple[str, int], list[int]] = {}
    for r in results:
        _merge(seen, r.read)
    known = {k: list(v) for k, v in (earlier or {}).items()}
    _merge(known, seen)
    lag = partition_lag({(tp.topic, tp.partition): off for tp, off in latest.items()},
                        {(tp.topic, tp.partition): off for tp, off in end.items()},
                        _bytes_per_record(read, known))
    if metrics is not None:
        if version is not None and seen:
            metrics.add_batch(sum(v[2] for v in seen.values()),
                              sum(v[3] for v in seen.values()),
                              rate=sum(v[2] for v in seen.values()) / max(seconds, 1e-9))
        metrics.set_positions({(tp.topic, tp.partition): off for tp, off in end.items()}, lag)
    if status is not None:
        what = (f"committed as {sink.commit_noun} {version}" if version is not None else
                "nothing new to commit" if not offsets else "already committed by another run")
        status.log(f"{label}: read and wrote {len(tasks)} task{'s' if len(tasks) != 1 else ''} "
                   f"in {seconds:.1f} s, {what}; behind latest {total_text(lag)}")
    return _Round(len(tasks), len(files) if version is not None else 0, version, seen, seconds,
                  lag)


def _summarize(summary: IngestSummary, committed: Mapping[tuple[str, int], list[int]],
               read: Mapping[tuple[str, int], list[int]]) -> None:
    summary.partitions = [PartitionSummary(t, p, s[0], s[1], s[2], s[3])
                          for (t, p), s in sorted(committed.items())]
    summary.topics = tuple(sorted({t for t, _ in read}))


def run_table_ingest(spark: Any, sink: TableSink, read: TableRead, *, output: str,
                     status: StatusLine | None = None,
                     metrics: IngestMetrics | None = None) -> IngestSummary:
    """Read from where the table stopped to the end offsets in Spark tasks that write the data
    files, then commit them with the offsets in one table commit; what this run added."""
    r = _round(spark, sink, read, output=output, label="batch", continuous=False, status=status,
               metrics=metrics)
    summary = IngestSummary(mode="batch", output=output, seconds=r.seconds, micro_batches=1,
                            files=r.files, table=f"{sink.format_name} table")
    _summarize(summary, r.seen if r.version is not None else {}, r.seen)
    summary.lag = r.lag
    return summary


def _wait(stop: threading.Event, seconds: float) -> bool:
    """Wait until the next trigger; True when the run is to stop."""
    return stop.wait(max(0.0, seconds))


def run_table_ingest_continuous(spark: Any, sink: TableSink, read: TableRead, *, output: str,
                                trigger_ms: int, stop: threading.Event | None = None,
                                status: StatusLine | None = None,
                                metrics: IngestMetrics | None = None) -> IngestSummary:
    """Rounds every ``trigger_ms`` until ``stop`` is set or Ctrl-C: each resumes from the
    table's offsets, reads to the latest ones (at most about maxOffsetsPerTrigger), writes the
    files in Spark tasks and commits them with the offsets once; a round with nothing new
    commits nothing. A round taking longer than the interval is followed by the next at once,
    so a record waits about one interval (plus a round) before it is committed.

    Ctrl-C during a round leaves its files, if uncommitted, in no commit. The summary counts
    what this run committed over all its rounds (``interrupted``: stopped by ``stop`` or
    Ctrl-C, as a streaming run)."""
    stop = stop if stop is not None else threading.Event()
    started = time.monotonic()
    summary = IngestSummary(mode="continuous", output=output, micro_batches=0, busy_seconds=0.0,
                            table=f"{sink.format_name} table")
    seen: dict[tuple[str, int], list[int]] = {}
    read_any: dict[tuple[str, int], list[int]] = {}
    rounds = 0
    lag: list[PartitionLag] | None = None
    try:
        while not stop.is_set():
            begun = time.monotonic()
            rounds += 1
            r = _round(spark, sink, read, output=output, label=f"round {rounds}",
                       continuous=True, status=status, earlier=read_any, metrics=metrics)
            lag = r.lag
            _merge(read_any, r.seen)
            if r.version is not None:
                summary.micro_batches += 1
                summary.files += r.files
                assert summary.busy_seconds is not None
                summary.busy_seconds += r.seconds
                _merge(seen, r.seen)
            if _wait(stop, trigger_ms / 1000 - (time.monotonic() - begun)):
                break
    except KeyboardInterrupt:
        pass
    summary.interrupted = True
    summary.seconds = time.monotonic() - started
    _summarize(summary, seen, read_any)
    summary.lag = lag
    return summary

