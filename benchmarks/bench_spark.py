"""Spark benchmark: the ``pyconsumer`` data source next to a tuple-yielding Python data source.

One Tansu broker (memory://), one topic filled once by confluent-kafka (10-byte keys, 100-byte
values, round-robin over the partitions, no compression), one SparkSession (local[2], driver
memory 4g, default JVM flags), then in interleaved rounds (every round runs every case once):

* ``source``     ``spark.read.format("pyconsumer")`` (Arrow batches from the Cython decoder)
* ``tuple``      what users write today: a Python data source defined below whose reader yields
                 one tuple per record from confluent-kafka's ``Consumer.consume(10000)``
* ``tuned``      the same reader with librdkafka's fetch.queue.backoff.ms at 10 ms (default
                 1 s, a stall each time its queue fills) and ``consume(min(10000, left))`` (an
                 untuned range's last call waits out its 1 s timeout): a fairness check
* ``poll_arrow`` pyconsumer's ``KafkaConsumer.poll_arrow(max_records=100_000)`` over all
                 partitions in this (the driver's) Python process, no Spark

Cases: ``count`` (``df.count()``, checked against the topic's size: a Python data source has
no pushdown, so every row crosses from the Python worker into the JVM), ``agg``
(``groupBy("partition").agg(sum(length("value")))``, checked against records x value size),
``parquet`` (the source written with ``df.write.parquet``, like ``pyconsumer ingest``; the
row count is checked after the clock stops). Rates are records/s over the whole action
(planning and task start included); the table gives the best and the median round, and the
median over rounds of the per-round ratios. Before the rounds an untimed warm-up runs every
path on a fifth of the data (Spark's Python helpers, JIT of the JVM's Arrow/Parquet code).

Each round line also gives the CPU seconds (from /proc) of Tansu, the JVM, Spark's Python
processes and the driver, and of other processes on the machine: on a shared machine a case
waits (``--wait-idle``) until the cores are idle, and a round with other load shows it.

``--profile`` adds one timed read: a wrapper source times each task's ``read_range`` (time
inside the generator) against the time Spark holds a yielded batch, with the task timeline,
and ``read_range`` alone reads every partition in the driver process.

Tansu 0.6 answers ListOffsets(latest) with the last batch's base offset + 1, so the tuple
reader is handed the true log ends (from Fetch watermarks) instead of asking librdkafka.

    python benchmarks/bench_spark.py --records 5000000 --partitions 6 --rounds 5 --profile
    python benchmarks/bench_spark.py --quick
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from bench_consume import produce_bulk  # this folder is sys.path[0]: a script, run as one
from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.spark.source import KafkaDataSource
from pyconsumer.testing import TansuBroker

KAFKA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
             "timestamp timestamp, timestampType int")


# ------------------------------------------------------------------------------ test data

def fill(bootstrap: str, topic: str, n: int, partitions: int, value_size: int
         ) -> dict[int, int]:
    """``n`` records straight from confluent-kafka's Producer: big batches, no per-record
    delivery callback (only failures are reported). Returns the log end of every partition,
    read from Fetch watermarks: Tansu 0.6 answers ListOffsets(latest) with the last batch's
    base offset + 1, which librdkafka's ``get_watermark_offsets`` would pass on."""
    rnd = random.Random(8)
    # values are not all alike, so Parquet (and its compression) sees realistic bytes
    pool = [bytes(rnd.getrandbits(8) for _ in range(max(0, value_size - 10)))
            for _ in range(4096)]
    produce_bulk(bootstrap, topic, n, partitions,
                 lambda i: (b"%010d" % i + pool[i & 4095])[:value_size],
                 linger_ms=50, batch_messages=100_000, queue_messages=2_000_000)
    return log_ends(bootstrap, topic, partitions, n)


def log_ends(bootstrap: str, topic: str, partitions: int, n: int) -> dict[int, int]:
    from pyconsumer.spark.offsets import OffsetReader
    from pyconsumer.spark.options import parse_options

    reader = OffsetReader(parse_options({"kafka.bootstrap.servers": bootstrap,
                                         "subscribe": topic}, streaming=False))
    try:
        ends = reader.latest(TopicPartition(topic, p) for p in range(partitions))
    finally:
        reader.close()
    if sum(ends.values()) != n:
        raise RuntimeError(f"topic holds {sum(ends.values())} records, not {n}: {ends}")
    return {tp.partition: off for tp, off in ends.items()}


# ------------------------------------------------------- (b) the tuple reader users write today

class TupleKafkaPartition(InputPartition):
    def __init__(self, partition: int, start: int, end: int) -> None:
        super().__init__((partition, start, end))
        self.partition, self.start, self.end = partition, start, end


class TupleKafkaSource(DataSource):
    """A plain Python data source over confluent-kafka, one tuple per record."""

    @classmethod
    def name(cls) -> str:
        return "bench_tuple_kafka"

    def schema(self) -> str:
        return KAFKA_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return TupleKafkaReader(dict(self.options))


class TupleKafkaReader(DataSourceReader):
    """Reads each partition from its log start to the ``endOffsets`` option's offset
    (``{"0": 833334, ...}``, given by the benchmark because Tansu's ListOffsets(latest) is
    wrong), at most ``limitPerPartition`` records (warm-up). ``tuned=true``: librdkafka's
    fetch.queue.backoff.ms 10 (as bench_consume.py gives confluent-kafka) and no more
    messages asked for than the range has left."""

    def __init__(self, options: dict[str, str]) -> None:
        lower = {k.lower(): v for k, v in options.items()}
        self.bootstrap = lower["bootstrap"]
        self.topic = lower["topic"]
        self.ends = {int(p): int(e) for p, e in json.loads(lower["endoffsets"]).items()}
        self.limit = int(lower.get("limitperpartition", -1))
        self.tuned = lower.get("tuned", "false") == "true"

    def _consumer(self) -> Any:
        from confluent_kafka import Consumer
        conf = {"bootstrap.servers": self.bootstrap, "group.id": "bench-tuple",
                "enable.auto.commit": False}
        if self.tuned:
            # librdkafka stops fetching for fetch.queue.backoff.ms (1 s) whenever its queue
            # passes queued.min.messages (100k): several 1 s stalls per 833k-record range
            conf["fetch.queue.backoff.ms"] = 10
        return Consumer(conf)

    def partitions(self) -> list[InputPartition]:
        from confluent_kafka import TopicPartition as CkTP
        c = self._consumer()
        try:
            meta = c.list_topics(self.topic, timeout=10).topics[self.topic]
            out: list[InputPartition] = []
            for p in sorted(meta.partitions):
                low, _ = c.get_watermark_offsets(CkTP(self.topic, p), timeout=10)
                high = self.ends[p]
                if self.limit >= 0:
                    high = min(high, low + self.limit)
                if high > low:
                    out.append(TupleKafkaPartition(p, low, high))
            return out
        finally:
            c.close()

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        from confluent_kafka import TopicPartition as CkTP
        assert isinstance(partition, TupleKafkaPartition)
        end = partition.end
        c = self._consumer()
        try:
            c.assign([CkTP(self.topic, partition.partition, partition.start)])
            position = partition.start
            last_progress = time.monotonic()
            while position < end:
                # untuned, the range's last call waits out its timeout for a full 10000
                want = min(10000, end - position) if self.tuned else 10000
                msgs = c.consume(num_messages=want, timeout=1.0)
                if not msgs and time.monotonic() - last_progress > 60:
                    raise TimeoutError(f"no records at {self.topic}-{partition.partition} "
                                       f"offset {position} for 60 s")
                for m in msgs:
                    if m.error():
                        raise RuntimeError(str(m.error()))
                    offset = m.offset()
                    if offset >= end:
                        position = end
                        break
                    ts_type, ts = m.timestamp()
                    # confluent: 1 = CreateTime, 2 = LogAppendTime; Spark: 0 and 1
                    yield (m.key(), m.value(), m.topic(), m.partition(), offset,
                           datetime.fromtimestamp(ts / 1000.0, tz=timezone.utc), ts_type - 1)
                    position = offset + 1
                if msgs:
                    last_progress = time.monotonic()
        finally:
            c.close()


# ------------------------------------------------------------ --profile: where a task's time goes

class TimedKafkaSource(KafkaDataSource):
    """The pyconsumer source with each task timed: time inside ``read_range`` (the generator)
    against time outside it (Spark's worker writing the batch to the JVM, back-pressure), one
    JSON line per task into the ``bench.profileDir`` option's directory."""

    @classmethod
    def name(cls) -> str:
        return "bench_pyconsumer_timed"

    def reader(self, schema: Any) -> DataSourceReader:
        return TimedReader(super().reader(schema), self.options["bench.profileDir"], True)


class TimedTupleSource(TupleKafkaSource):
    """The tuple reader with each task's wall and CPU time written out (no per-row timing)."""

    @classmethod
    def name(cls) -> str:
        return "bench_tuple_kafka_timed"

    def reader(self, schema: Any) -> DataSourceReader:
        return TimedReader(super().reader(schema), self.options["bench.profileDir"], False)


class TimedReader(DataSourceReader):
    def __init__(self, inner: DataSourceReader, profile_dir: str, per_yield: bool) -> None:
        self.inner, self.profile_dir, self.per_yield = inner, profile_dir, per_yield

    def partitions(self) -> Any:
        return self.inner.partitions()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        t_wall = time.time()
        t_start = time.perf_counter()
        cpu_start = time.process_time()
        it = iter(self.inner.read(partition))
        inside = time.perf_counter() - t_start
        cpu_inside = time.process_time() - cpu_start
        rows = batches = 0
        if not self.per_yield:
            for row in it:
                rows += 1
                yield row
        while self.per_yield:
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                batch = next(it)
            except StopIteration:
                inside += time.perf_counter() - t0
                cpu_inside += time.process_time() - c0
                break
            inside += time.perf_counter() - t0
            cpu_inside += time.process_time() - c0
            rows += batch.num_rows
            batches += 1
            yield batch
        total = time.perf_counter() - t_start
        line = {"pid": os.getpid(), "task": repr(partition), "rows": rows, "batches": batches,
                "t0": t_wall, "t1": time.time(),
                "total_s": total, "read_s": inside, "read_cpu_s": cpu_inside,
                "spark_s": total - inside, "cpu_s": time.process_time() - cpu_start}
        with open(os.path.join(self.profile_dir, f"{os.getpid()}.jsonl"), "a") as f:
            f.write(json.dumps(line) + "\n")


# ------------------------------------------------------------------------------ contenders

def pc_reader(spark: Any, bootstrap: str, topic: str, fmt: str = "pyconsumer",
              **extra: str) -> Any:
    r = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic))
    for k, v in extra.items():
        r = r.option(k, v)
    return r.load()


def tuple_reader(spark: Any, bootstrap: str, topic: str, ends: dict[int, int],
                 fmt: str = TupleKafkaSource.name(), **extra: str) -> Any:
    r = (spark.read.format(fmt).option("bootstrap", bootstrap)
         .option("topic", topic).option("endOffsets", json.dumps(ends)))
    for k, v in extra.items():
        r = r.option(k, v)
    return r.load()


def q_count(df: Any, n: int, value_size: int) -> None:
    got = df.count()
    if got != n:
        raise RuntimeError(f"count() gave {got:,}, the topic holds {n:,}")


def q_agg(df: Any, n: int, value_size: int) -> None:
    from pyspark.sql import functions as F
    rows = df.groupBy("partition").agg(F.sum(F.length("value")).alias("bytes")).collect()
    total = sum(r["bytes"] for r in rows)
    if total != n * value_size:
        raise RuntimeError(f"sum(length(value)) = {total:,}, expected {n * value_size:,}")


def poll_arrow(bootstrap: str, topic: str, partitions: int, n: int) -> None:
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got = 0
        while got < n:
            got += c.poll_arrow(timeout_ms=1000, max_records=100_000).num_rows
    if got != n:
        raise RuntimeError(f"poll_arrow read {got:,} records, the topic holds {n:,}")


def to_parquet(spark: Any, df: Any, path: str, n: int) -> None:
    df.write.mode("overwrite").parquet(path)


def check_parquet(spark: Any, path: str, n: int) -> None:
    got = spark.read.parquet(path).count()
    shutil.rmtree(path, ignore_errors=True)
    if got != n:
        raise RuntimeError(f"Parquet holds {got:,} rows, expected {n:,}")


# ------------------------------------------------------------------------------ profile

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _procs() -> dict[int, tuple[str, int, int, int]]:
    """pid -> (comm, ppid, own CPU ticks, reaped children's CPU ticks), from /proc."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        rp = stat.rindex(")")
        fields = stat[rp + 2:].split()
        out[int(d)] = (stat[stat.index("(") + 1:rp], int(fields[1]),
                       int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    return out


def _machine_ticks() -> tuple[int, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]          # all, idle + iowait


def wait_idle(max_s: float, busy_below: float = 0.2) -> float:
    """Wait (up to ``max_s``) until the machine was less than ``busy_below`` busy over one
    second: on a shared machine, start a case when other users' jobs leave the cores free.
    Returns the seconds waited."""
    t0 = time.perf_counter()
    while True:
        a = _machine_ticks()
        time.sleep(1.0)
        b = _machine_ticks()
        total = b[0] - a[0]
        busy = 1.0 - (b[1] - a[1]) / total if total else 0.0
        waited = time.perf_counter() - t0
        if busy < busy_below or waited >= max_s:
            return waited


class CpuMeter:
    """CPU seconds spent during a block by Tansu, the JVM, Spark's Python processes (workers,
    planner; the JVM's descendants) and this (the driver) process, and the machine's busy
    share. Linux only."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid

    def _groups(self) -> dict[str, float]:
        procs = _procs()
        me = os.getpid()
        kids: dict[int, list[int]] = {}
        for pid, (_, ppid, _, _) in procs.items():
            kids.setdefault(ppid, []).append(pid)
        groups = {"tansu": 0.0, "jvm": 0.0, "pyworkers": 0.0, "driver": 0.0}
        if self.broker_pid in procs:
            groups["tansu"] = sum(procs[self.broker_pid][2:4])
        groups["driver"] = procs[me][2]
        for jvm in (p for p in kids.get(me, []) if procs[p][0] == "java"):
            groups["jvm"] += procs[jvm][2]
            groups["pyworkers"] += procs[jvm][3]      # helpers that already exited
            todo = list(kids.get(jvm, []))
            while todo:
                pid = todo.pop()
                groups["pyworkers"] += sum(procs[pid][2:4])
                todo.extend(kids.get(pid, []))
        return groups

    def __enter__(self) -> CpuMeter:
        self.t0 = time.perf_counter()
        self.m0 = _machine_ticks()
        self.g0 = self._groups()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.wall = time.perf_counter() - self.t0
        g1 = self._groups()
        m1 = _machine_ticks()
        self.cpu = {k: max(0.0, g1[k] - self.g0.get(k, 0.0)) / _TICK for k in g1}
        total, idle = m1[0] - self.m0[0], m1[1] - self.m0[1]
        self.busy = 1.0 - idle / total if total else 0.0

    @property
    def ours(self) -> float:
        return sum(self.cpu.values())

    @property
    def others(self) -> float:
        """Core-seconds the machine was busy with processes not ours (other users' load)."""
        return max(0.0, self.busy * (os.cpu_count() or 1) * self.wall - self.ours)

    def line(self) -> str:
        parts = ", ".join(f"{k} {v:.2f}" for k, v in self.cpu.items())
        used = self.busy * (os.cpu_count() or 1) * self.wall
        return (f"CPU s: {parts}; machine busy {self.busy:.0%} of {os.cpu_count()} cores "
                f"({used:.1f} core-s in {self.wall:.2f} s)")


def profile(spark: Any, broker_pid: int | None, bootstrap: str, topic: str, partitions: int,
            n: int, value_size: int, work: str, idle_s: float) -> None:
    from pyconsumer.spark.options import parse_options
    from pyconsumer.spark.planning import OffsetRange
    from pyconsumer.spark.reader import close_cached_consumers, read_range

    pdir = os.path.join(work, "profile")
    os.makedirs(pdir, exist_ok=True)
    ends = log_ends(bootstrap, topic, partitions, n)
    print("\nprofile (one run each; tasks timed from inside the Python workers)")
    runs = (("source count", TimedKafkaSource, q_count, "false"),
            ("source agg", TimedKafkaSource, q_agg, "false"),
            ("tuple count", TimedTupleSource, q_count, "false"),
            ("tuned count", TimedTupleSource, q_count, "true"))
    for what, source, query, tuned in runs:
        for f in glob.glob(os.path.join(pdir, "*.jsonl")):
            os.remove(f)
        opt = {"bench.profileDir": pdir, "tuned": tuned}
        df = (pc_reader(spark, bootstrap, topic, source.name(), **opt)
              if source is TimedKafkaSource else
              tuple_reader(spark, bootstrap, topic, ends, source.name(), **opt))
        if idle_s > 0:
            wait_idle(idle_s)
        q0 = time.time()
        with CpuMeter(broker_pid) as meter:
            query(df, n, value_size)
        q1 = time.time()
        wall = meter.wall
        tasks = [json.loads(line) for f in sorted(glob.glob(os.path.join(pdir, "*.jsonl")))
                 for line in open(f)]
        rows = sum(t["rows"] for t in tasks)
        first = min(t["t0"] for t in tasks) - q0
        last = q1 - max(t["t1"] for t in tasks)
        busy = sum(t["t1"] - t["t0"] for t in tasks)
        print(f"  {what}: {wall:.2f} s ({n / wall / 1e3:,.0f} krec/s); {len(tasks)} tasks "
              f"in {len({t['pid'] for t in tasks})} workers, {rows:,} rows")
        print(f"    timeline: first task read() starts {first:.2f} s after the action, the last "
              f"ends {last:.2f} s before it returns; tasks: " + ", ".join(
                  f"[{t['t0'] - q0:.1f}-{t['t1'] - q0:.1f}]" for t in
                  sorted(tasks, key=lambda t: t["t0"])))
        cpu_s = sum(t["cpu_s"] for t in tasks)
        if source is TimedKafkaSource:
            read_s = sum(t["read_s"] for t in tasks)
            read_cpu = sum(t["read_cpu_s"] for t in tasks)
            print(f"    summed over tasks: inside read_range {read_s:.2f} s wall, {read_cpu:.2f} s "
                  f"CPU ({rows / max(read_s, 1e-9) / 1e3:,.0f} krec/s per task); between "
                  f"yields (Spark's worker sending the batch to the JVM) "
                  f"{sum(t['spark_s'] for t in tasks):.2f} s; worker CPU {cpu_s:.2f} s")
        else:
            print(f"    summed over tasks: {busy:.2f} s in read(), of which {cpu_s:.2f} s CPU of "
                  f"the worker ({rows / max(busy, 1e-9) / 1e3:,.0f} krec/s per task)")
        print(f"    {meter.line()}")
    if idle_s > 0:
        wait_idle(idle_s)
    with CpuMeter(broker_pid) as meter:
        poll_arrow(bootstrap, topic, partitions, n)
    print(f"  poll_arrow in the driver: {meter.wall:.2f} s ({n / meter.wall / 1e3:,.0f} krec/s)")
    print(f"    {meter.line()}")
    # read_range alone, every partition one after another in this process, no Spark
    opts = parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic},
                         streaming=False)
    got = 0
    if idle_s > 0:
        wait_idle(idle_s)
    with CpuMeter(broker_pid) as meter:
        for p in range(partitions):
            for batch in read_range(OffsetRange(topic, p, 0, ends[p]), opts):
                got += batch.num_rows
    close_cached_consumers()
    print(f"  read_range in the driver, partitions one by one: {got:,} rows in {meter.wall:.2f} s "
          f"({got / meter.wall / 1e3:,.0f} krec/s)")
    print(f"    {meter.line()}")


# ------------------------------------------------------------------------------ main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--quick", action="store_true", help="smoke run: 500k records, 1 round")
    ap.add_argument("--wait-idle", type=float, default=None, metavar="S",
                    help="before each case wait up to S s for the machine to be < 20%% busy "
                         "(shared machines; default 60, 0 with --quick: do not wait)")
    ap.add_argument("--only", nargs="*", default=None, metavar="CASE",
                    help="run only these cases (e.g. 'source count' poll_arrow)")
    ap.add_argument("--profile", action="store_true",
                    help="after the rounds, time read_range inside the workers and alone")
    args = ap.parse_args()
    if args.quick:
        args.records, args.rounds = 500_000, 1
    if args.wait_idle is None:
        args.wait_idle = 0.0 if args.quick else 60.0
    n = args.records

    import confluent_kafka
    import pyarrow
    import pyspark
    print(f"pyspark {pyspark.__version__}, pyarrow {pyarrow.__version__}, confluent-kafka "
          f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
          f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, master {args.master}, "
          f"driver memory {args.driver_memory}")

    work = tempfile.mkdtemp(prefix="bench-spark-")
    try:
        with TansuBroker() as broker:
            bootstrap = broker.bootstrap
            topic = broker.create_topic("bench", args.partitions)
            t0 = time.perf_counter()
            log_end = fill(bootstrap, topic, n, args.partitions, args.value_size)
            print(f"filled {n:,} records ({args.value_size} B values, {args.partitions} "
                  f"partitions) in {time.perf_counter() - t0:.1f} s")

            from pyconsumer.spark.session import local_session
            t0 = time.perf_counter()
            spark = local_session(args.master, app_name="bench-spark", fast_jvm=False,
                                  local_dir=os.path.join(work, "spark-local"),
                                  conf={"spark.driver.memory": args.driver_memory})
            try:
                run_all(spark, broker, topic, log_end, work, args, t0)
            finally:
                spark.stop()     # before the broker: no worker left polling it
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(spark: Any, broker: TansuBroker, topic: str, log_end: dict[int, int], work: str,
            args: argparse.Namespace, t0: float) -> None:
    n = args.records
    bootstrap = broker.bootstrap
    spark.dataSource.register(TupleKafkaSource)
    spark.dataSource.register(TimedKafkaSource)
    spark.dataSource.register(TimedTupleSource)
    spark.sparkContext.setLogLevel("ERROR")
    print(f"SparkSession in {time.perf_counter() - t0:.1f} s")

    # warm-up, not timed: Spark's Python helper processes and workers, and the JIT of the
    # JVM's Arrow and Parquet paths (a first full-size read costs up to ~2x JVM CPU)
    t0 = time.perf_counter()
    per = max(1, n // 5 // args.partitions)
    warm = {p: min(e, per) for p, e in log_end.items()}
    ends = json.dumps({topic: {str(p): e for p, e in warm.items()}})
    q_count(pc_reader(spark, bootstrap, topic, endingOffsets=ends), sum(warm.values()), 0)
    q_agg(pc_reader(spark, bootstrap, topic, endingOffsets=ends), sum(warm.values()),
          args.value_size)
    few = {p: min(e, 10_000) for p, e in log_end.items()}
    q_count(tuple_reader(spark, bootstrap, topic, log_end, limitPerPartition="10000"),
            sum(few.values()), 0)
    warm_path = os.path.join(work, "warm.parquet")
    to_parquet(spark, pc_reader(spark, bootstrap, topic, endingOffsets=ends), warm_path,
               sum(warm.values()))
    check_parquet(spark, warm_path, sum(warm.values()))
    poll_arrow(bootstrap, topic, args.partitions, n)
    print(f"warm-up in {time.perf_counter() - t0:.1f} s")

    out_path = os.path.join(work, "out.parquet")
    cases: dict[str, Callable[[], None]] = {
        "source count": lambda: q_count(pc_reader(spark, bootstrap, topic), n, 0),
        "tuple count": lambda: q_count(tuple_reader(spark, bootstrap, topic, log_end), n, 0),
        "source agg": lambda: q_agg(pc_reader(spark, bootstrap, topic), n, args.value_size),
        "tuple agg": lambda: q_agg(tuple_reader(spark, bootstrap, topic, log_end), n,
                                   args.value_size),
        "tuned count": lambda: q_count(tuple_reader(spark, bootstrap, topic, log_end,
                                                    tuned="true"), n, 0),
        "tuned agg": lambda: q_agg(tuple_reader(spark, bootstrap, topic, log_end,
                                                tuned="true"), n, args.value_size),
        "poll_arrow": lambda: poll_arrow(bootstrap, topic, args.partitions, n),
        "source parquet": lambda: to_parquet(spark, pc_reader(spark, bootstrap, topic),
                                             out_path, n),
    }
    if args.only is not None:
        cases = {name: run for name, run in cases.items() if name in args.only}
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for rnd in range(args.rounds):
        for name, run in cases.items():
            waited = wait_idle(args.wait_idle) if args.wait_idle > 0 else 0.0
            with CpuMeter(broker.pid) as meter:
                run()
            elapsed = meter.wall
            if name == "source parquet":
                check_parquet(spark, out_path, n)
            rates[name].append(n / elapsed)
            print(f"round {rnd} {name:15s} {n:>11,} records {elapsed:7.2f} s "
                  f"{n / elapsed / 1e3:9,.0f} krec/s   CPU s: " + " ".join(
                      f"{k} {v:.1f}" for k, v in meter.cpu.items())
                  + f", other processes {meter.others:.1f}"
                  + (f" (waited {waited:.0f} s for idle)" if waited > 1.5 else ""),
                  flush=True)

    report(rates)
    if args.profile:
        profile(spark, broker.pid, bootstrap, topic, args.partitions, n, args.value_size, work,
                args.wait_idle)


def report(rates: dict[str, list[float]]) -> None:
    print(f"\n{'case':16s} {'krec/s best':>12s} {'krec/s median':>14s}")
    for name, rs in rates.items():
        print(f"{name:16s} {max(rs) / 1e3:12,.0f} {statistics.median(rs) / 1e3:14,.0f}")

    def ratio(a: str, b: str) -> str:
        if a not in rates or b not in rates:
            return "    -"
        per_round = [x / y for x, y in zip(rates[a], rates[b])]
        return f"{statistics.median(per_round):5.2f}x (rounds: " + \
            ", ".join(f"{r:.2f}" for r in per_round) + ")"

    print("\nratios, median of per-round ratios:")
    print(f"  source / tuple       count  {ratio('source count', 'tuple count')}   target >= 5x")
    print(f"  source / tuple       agg    {ratio('source agg', 'tuple agg')}   target >= 5x")
    print(f"  source / tuned tuple count  {ratio('source count', 'tuned count')}")
    print(f"  source / tuned tuple agg    {ratio('source agg', 'tuned agg')}")
    print(f"  source / poll_arrow  count  {ratio('source count', 'poll_arrow')}   "
          f"target >= 0.8x")
    print(f"  source / poll_arrow  agg    {ratio('source agg', 'poll_arrow')}   "
          f"target >= 0.8x")
    print(f"  source / poll_arrow  parquet {ratio('source parquet', 'poll_arrow')}")


if __name__ == "__main__":
    main()
