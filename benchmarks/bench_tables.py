"""Kafka into lakehouse tables on Apache Kafka: ingest's Arrow writer against Spark's table writers.

One broker (``--broker kafka``, the default: Apache Kafka via benchmarks/brokers.py), two topics
over 6 partitions filled once by confluent-kafka (bench_spark.py's data sets):

* ``bytes``       5M records of 100-byte values, keys ``k%09d``, Spark's Kafka schema
* ``avro_typed``  1M Confluent-framed Avro records of 8 fields (confluent-kafka's
                  AvroSerializer against a Schema Registry in this process), typed columns

Contenders, each a whole run from the earliest to the latest offsets into a fresh table:

* ``arrow_delta``       ``pyconsumer ingest --table-format delta``'s path (pyconsumer.ingest.
                        tables): Spark tasks read with pyconsumer and write the Parquet data files
                        from the Arrow batches, the driver commits them with the offsets in one
                        Delta commit (deltalake); no row crosses into the JVM
* ``arrow_iceberg``     the same into an Iceberg table (pyiceberg, SQLite catalog)
* ``arrow_parquet``     the same into a Parquet table with pyconsumer's commit log (when the
                        installed pyconsumer has it)
* ``kafka_delta``       ``spark.read.format("kafka")`` (+ ``from_avro(substring(value, 6))`` on the
                        Avro set) into ``write.format("delta")``: Spark's own route (delta-spark)
* ``pyconsumer_delta``  ``spark.read.format("pyconsumer")`` (``valueFormat=avro`` on the Avro set)
                        into ``write.format("delta")``: our source into Spark's Delta writer
* ``kafka_parquet``     ``format("kafka")`` (+ ``from_avro``) into Spark's Parquet writer
* ``poll_arrow``        ``KafkaConsumer.poll_arrow`` in the driver process, no Spark, no table:
                        the reference the Arrow writer is held to (on the Avro set with
                        ``value.format=avro``: decoded into the same typed columns)

Every run is checked: the table read back (deltalake, pyiceberg, pyarrow) holds exactly the
topic's record count. Memory: while each run goes, a sampler reads /proc every 50 ms and the
largest resident set of one Spark Python worker and of the JVM are printed
(``memory round R SET CONTENDER: worker N MB, jvm M MB``).

Output lines parsed by ``python -m benchmarks`` (the ``tables`` case):
``round R SET CONTENDER N records S s``, ``dataset SET: N records over P partitions``,
``memory ...`` and ``spark kafka connector: V (PySpark W)``.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import brokers       # this folder is sys.path[0]: a script, run as one
from bench_spark import (
    CpuMeter,
    Dataset,
    fill_avro,
    fill_bytes,
    poll_arrow,
    registry,
    spark_source,
    typed_reader,
    wait_idle,
)

SETS = ("bytes", "avro_typed")
CONTENDERS = ("arrow_delta", "arrow_iceberg", "arrow_parquet", "kafka_delta", "pyconsumer_delta",
              "kafka_parquet", "poll_arrow")
_PAGE = os.sysconf("SC_PAGE_SIZE")


# ------------------------------------------------------------------------------ memory

def _rss_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _spark_processes() -> tuple[list[int], list[int]]:
    """(the JVMs this process started, the Python processes below them: Spark's workers)."""
    kids: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
        names[int(entry)] = name
    jvms = [p for p in kids.get(os.getpid(), []) if names.get(p) == "java"]
    workers: list[int] = []
    todo = [k for j in jvms for k in kids.get(j, [])]
    while todo:
        pid = todo.pop()
        if names.get(pid, "").startswith("python"):
            workers.append(pid)
        todo.extend(kids.get(pid, []))
    return jvms, workers


class PeakMemory:
    """The largest resident set of one Spark Python worker and of the JVM during a block."""

    def __init__(self, every_s: float = 0.05) -> None:
        self.every_s = every_s
        self.worker = 0
        self.jvm = 0
        self._stop = threading.Event()

    def _sample(self) -> None:
        while not self._stop.is_set():
            jvms, workers = _spark_processes()
            self.jvm = max([self.jvm] + [_rss_of(p) for p in jvms])
            self.worker = max([self.worker] + [_rss_of(p) for p in workers])
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakMemory:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------------------ the contenders

def _typed_options(ds: Dataset) -> dict[str, str]:
    return {"valueFormat": "avro", "schema.registry.url": ds.registry_url} if ds.registry_url else {}


def arrow_table(spark: Any, bootstrap: str, ds: Dataset, fmt: str, where: str) -> int:
    """ingest's table path into a fresh table: the records the run committed."""
    from pyconsumer.ingest import source_options
    from pyconsumer.ingest.tables import TableTarget, open_table, plan_table_read, run_table_ingest
    from pyconsumer.spark.options import parse_options

    opts = source_options(bootstrap=bootstrap, topics=[ds.topic], options=_typed_options(ds))
    read = plan_table_read(parse_options(opts, streaming=False), [ds.topic])
    if fmt == "iceberg":
        target = TableTarget("iceberg", "bench.events", warehouse=where)
    else:
        target = TableTarget(fmt, where)
    sink = open_table(target, read.schema)
    summary = run_table_ingest(spark, sink, read, output=where)
    return sum(p.records for p in summary.partitions)


def spark_read(spark: Any, fmt: str, bootstrap: str, ds: Dataset) -> Any:
    if ds.registry_url:
        return typed_reader(spark, "kafka" if fmt == "kafka" else "pyconsumer", bootstrap, ds, None)
    return spark_source(spark, fmt, bootstrap, ds)


def spark_write(spark: Any, bootstrap: str, ds: Dataset, fmt: str, table: str, where: str) -> None:
    writer = spark_read(spark, fmt, bootstrap, ds).write.mode("overwrite")
    if table == "delta":
        writer.format("delta").save(where)
    else:
        writer.parquet(where)


def count_table(kind: str, where: str) -> int:
    """The table's rows as an independent reader sees them."""
    if kind == "delta":
        import deltalake
        return int(deltalake.DeltaTable(where).to_pyarrow_dataset().count_rows())
    if kind == "iceberg":
        from pyiceberg.catalog.sql import SqlCatalog
        catalog = SqlCatalog("pyconsumer", uri=f"sqlite:///{where}/catalog.db", warehouse=f"file://{where}")
        return int(catalog.load_table("bench.events").scan().to_arrow().num_rows)
    if kind == "pyconsumer_parquet":
        from pyconsumer.sinks.parquet import read_parquet_table  # type: ignore[import-not-found,unused-ignore]
        return int(read_parquet_table(where).num_rows)
    import pyarrow.dataset as pads
    return int(pads.dataset(where, format="parquet").count_rows())


def contender_run(spark: Any, bootstrap: str, ds: Dataset, contender: str, where: str
                  ) -> Callable[[], tuple[str, str]]:
    """A run of the contender into ``where``; returns what to count afterwards (kind, path)."""
    def run() -> tuple[str, str]:
        if contender == "poll_arrow":
            (poll_arrow_typed if ds.registry_url else poll_arrow)(bootstrap, ds)
            return "", ""
        if contender.startswith("arrow_"):
            fmt = contender.removeprefix("arrow_")
            committed = arrow_table(spark, bootstrap, ds, fmt, where)
            if committed != ds.n:
                raise RuntimeError(f"{contender} committed {committed:,} records, the topic holds {ds.n:,}")
            return {"parquet": "pyconsumer_parquet"}.get(fmt, fmt), where
        source, _, table = contender.partition("_")
        spark_write(spark, bootstrap, ds, source, table, where)
        return table, where
    return run


def poll_arrow_typed(bootstrap: str, ds: Dataset) -> None:
    """poll_arrow of the Avro set decoded into typed columns, as the tables get them."""
    from pyconsumer import KafkaConsumer, TopicPartition

    got = 0
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                       value_format="avro", schema_registry_url=ds.registry_url) as c:
        tps = [TopicPartition(ds.topic, p) for p in range(ds.partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        while got < ds.n:
            got += c.poll_arrow(timeout_ms=1000, max_records=100_000).num_rows
    if got != ds.n:
        raise RuntimeError(f"poll_arrow read {got:,} records, the topic holds {ds.n:,}")


def have_parquet_table() -> bool:
    return importlib.util.find_spec("pyconsumer.sinks.parquet") is not None


# ------------------------------------------------------------------------------ the run

def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--broker", choices=brokers.BROKERS, default="kafka")
    ap.add_argument("--records", type=int, default=5_000_000, help="records of the bytes set")
    ap.add_argument("--avro-records", type=int, default=1_000_000, help="records of the avro_typed set")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--datasets", nargs="*", choices=SETS, default=list(SETS))
    ap.add_argument("--contenders", nargs="*", choices=CONTENDERS, default=list(CONTENDERS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--quick", action="store_true", help="smoke run: 300k + 100k records, 1 round")
    ap.add_argument("--wait-idle", type=float, default=None, metavar="S",
                    help="before each run wait up to S s for the machine to be < 20%% busy "
                         "(default 60, 0 with --quick)")
    args = ap.parse_args()
    if args.quick:
        args.records, args.avro_records, args.rounds = 300_000, 100_000, 1
    if args.wait_idle is None:
        args.wait_idle = 0.0 if args.quick else 60.0
    contenders = [c for c in args.contenders if c != "arrow_parquet" or have_parquet_table()]
    if len(contenders) < len(args.contenders):
        print("arrow_parquet left out: this pyconsumer has no Parquet table sink")

    import pyarrow
    import pyspark

    from pyconsumer.testing import delta_spark_conf, spark_avro_jar, spark_kafka_jars, spark_kafka_version
    conf = delta_spark_conf()
    jars = spark_kafka_jars() + conf.pop("spark.jars").split(",")
    if "avro_typed" in args.datasets:
        jars.append(spark_avro_jar())
    print(f"pyspark {pyspark.__version__}, pyarrow {pyarrow.__version__}, Python "
          f"{sys.version.split()[0]}, {os.cpu_count()} CPUs, master {args.master}, "
          f"driver memory {args.driver_memory}")
    print(f"spark kafka connector: {spark_kafka_version()} (PySpark {pyspark.__version__})")
    work = tempfile.mkdtemp(prefix="bench-tables-")
    try:
        # bench_spark's registry: the in-process FakeSchemaRegistry when the Avro set runs
        fake = argparse.Namespace(datasets=args.datasets, registry="fake")
        with brokers.start(args.broker) as broker, registry(fake) as url:
            print(f"broker: {broker.description}")
            sets: list[Dataset] = []
            for name in args.datasets:
                t0 = time.perf_counter()
                topic = broker.create_topic(f"bench-tables-{name}", args.partitions)
                if name == "bytes":
                    sets.append(fill_bytes(broker.bootstrap, topic, args.records, args.partitions,
                                           args.value_size))
                else:
                    sets.append(fill_avro(broker.bootstrap, topic, args.avro_records, args.partitions, url))
                print(f"filled {name}: {sets[-1].n:,} records in {time.perf_counter() - t0:.1f} s", flush=True)
            for ds in sets:
                print(f"dataset {ds.name}: {ds.n:,} records over {ds.partitions} partitions of {ds.topic}")

            from pyconsumer.spark.session import local_session
            conf.update({"spark.driver.memory": args.driver_memory, "spark.jars": ",".join(jars)})
            spark = local_session(args.master, app_name="bench-tables", fast_jvm=False,
                                  local_dir=os.path.join(work, "spark-local"), conf=conf)
            try:
                run_all(spark, broker, sets, contenders, work, args)
            finally:
                spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(spark: Any, broker: Any, sets: list[Dataset], contenders: list[str], work: str,
            args: argparse.Namespace) -> None:
    spark.sparkContext.setLogLevel("ERROR")
    bootstrap = broker.bootstrap
    serial = [0]

    def fresh() -> str:
        serial[0] += 1
        return os.path.join(work, f"table-{serial[0]}")

    def once(ds: Dataset, contender: str) -> tuple[float, PeakMemory, CpuMeter]:
        where = fresh()
        run = contender_run(spark, bootstrap, ds, contender, where)
        with PeakMemory() as memory, CpuMeter(broker.pid) as meter:
            kind, path = run()
        if kind:
            got = count_table(kind, path)
            if got != ds.n:
                raise RuntimeError(f"{ds.name} {contender}: the table holds {got:,} records, "
                                   f"the topic {ds.n:,}")
            shutil.rmtree(path, ignore_errors=True)
        return meter.wall, memory, meter

    # warm-up, not timed: Python workers, the JVM's JIT of the Kafka, Delta and Parquet paths
    t0 = time.perf_counter()
    for ds in sets:
        for contender in contenders:
            once(ds, contender)
    print(f"warm-up in {time.perf_counter() - t0:.1f} s", flush=True)
    for rnd in range(args.rounds):
        # rotated from round to round, so no contender always runs on a warmer or cooler machine
        order = contenders[rnd % len(contenders):] + contenders[:rnd % len(contenders)]
        for ds in sets:
            for contender in order:
                waited = wait_idle(args.wait_idle) if args.wait_idle > 0 else 0.0
                elapsed, memory, meter = once(ds, contender)
                name = f"{ds.name} {contender}"
                print(f"round {rnd} {name:29s} {ds.n:>11,} records {elapsed:7.2f} s "
                      f"{ds.n / elapsed / 1e3:9,.0f} krec/s   CPU s: "
                      + " ".join(f"{k} {v:.1f}" for k, v in meter.cpu.items())
                      + f", other processes {meter.others:.1f}"
                      + (f" (waited {waited:.0f} s for idle)" if waited > 1.5 else ""), flush=True)
                if contender != "poll_arrow":
                    print(f"memory round {rnd} {name}: worker {memory.worker / 2**20:.0f} MB, "
                          f"jvm {memory.jvm / 2**20:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
