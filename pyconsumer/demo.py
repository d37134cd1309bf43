"""``pyconsumer demo``: start a local Tansu broker (or use one), produce sample JSON records
with confluent-kafka, read them into Spark through the ``pyconsumer`` data source (a few rows
decoded with ``from_json``, a count, a groupBy partition), ingest the topic into a Delta Lake
table as ``pyconsumer ingest --table-format delta`` does and read the table back (deltalake
into Arrow, Arrow into Spark), print the figures, clean up."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyconsumer.console import StatusLine

__all__ = ["run_demo", "produce_demo_records"]


DEMO_VALUE_SCHEMA = "id long, user string, amount double, ts long"


def _demo_values(n: int) -> Any:
    """The demo's JSON values, generated lazily: id, user (1000 users), amount, ts (ms)."""
    users = [f"user-{u:04d}" for u in range(1000)]
    base = 1_700_000_000_000
    for i in range(n):
        u = (i * 7919) % 1000
        amount = ((i * 104729) % 100_000) / 100
        yield users[u], (f'{{"id":{i},"user":"{users[u]}","amount":{amount:.2f},'
                         f'"ts":{base + i * 10}}}')


def produce_demo_records(bootstrap: str, topic: str, n: int, partitions: int) -> int:
    """Produce ``n`` JSON records round robin over ``partitions`` with confluent-kafka,
    batched (linger, 1 MB batches, lz4); returns how many the broker acknowledged."""
    from confluent_kafka import Producer

    errors: list[str] = []

    def on_error(err: Any, msg: Any) -> None:   # delivery.report.only.error: failures only
        if err is not None:
            errors.append(str(err))

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "linger.ms": 50,
        "batch.size": 1_000_000,
        "batch.num.messages": 100_000,
        "compression.type": "lz4",
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "enable.idempotence": False,
        "acks": "all",
        "delivery.report.only.error": True,
        "log_level": 3,
        "on_delivery": on_error,
    })
    produce = producer.produce
    for i, (key, value) in enumerate(_demo_values(n)):
        while True:
            try:
                produce(topic, value.encode(), key.encode(), partition=i % partitions)
                break
            except BufferError:       # local queue full: let deliveries drain
                producer.poll(0.05)
        if i % 20_000 == 0:
            producer.poll(0)
    left = producer.flush(60)
    return n - left - len(errors)


def _tmp_entries() -> set[str]:
    try:
        return set(os.listdir("/tmp"))
    except OSError:
        return set()


#: what the demo's parts make in /tmp when they leave something: the demo's own folder (the
#: Delta table's), the broker's, and Spark's scratch and the JVM's (block managers, unpacked
#: native codecs, perf data), PySpark's
_DEMOS = re.compile(r"^pyconsumer-demo-")
_BROKERS = re.compile(r"^tansu")
_SPARKS = re.compile(r"^(pyconsumer-spark-|spark-|blockmgr-|pyspark-|hsperfdata_|liblz4-java|"
                     r"snappy-|libzstd-jni)")


def _left_by_the_demo(entries: Iterable[str], *, started_spark: bool = True) -> list[str]:
    """The new /tmp entries that are the demo's kind: another process's files are not its
    to report, nor the files of a Spark session the caller gave it."""
    return sorted(e for e in entries
                  if _DEMOS.match(e) or _BROKERS.match(e) or (started_spark and _SPARKS.match(e)))


@dataclasses.dataclass
class _DemoRun:
    """One run of the demo: its settings, what its steps found (the figures), and what the
    cleanup must undo (the broker it started, the topic it created, the table's folder)."""

    records: int
    partitions: int
    table: str | None
    status: StatusLine
    bootstrap: str = ""
    topic: str = ""
    broker: Any = None
    created_topic: str | None = None
    topic_deleted: bool = False
    #: the line shown instead of the Delta table step (None: deltalake can be imported)
    delta_missing: str | None = None
    #: the demo's own folder for the Delta table (None when the caller placed it, or no table)
    workdir: str | None = None
    figures: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def delta(self) -> bool:
        return self.delta_missing is None

    def say(self, text: str = "") -> None:
        self.status.log(text)

    def waiting(self, what: str) -> Any:
        """On a terminal a long step shows the seconds it has taken so far."""
        return self.status.ticking(f"  {what} ...")


def run_demo(*, records: int = 1_000_000, partitions: int = 6, bootstrap: str | None = None,
             topic: str | None = None, master: str = "local[*]", spark: Any = None,
             table: str | None = None, out: IO[str] | None = None) -> int:
    """The demo: broker, sample data, Spark through the pyconsumer source, the topic into a
    Delta table (when deltalake is installed) read back into Spark, figures, cleanup.

    ``bootstrap`` uses an existing broker (a fresh topic is created and deleted); ``spark``
    an existing session (kept open), otherwise one is started in a temporary directory and
    removed; ``table`` a path for the Delta table, which is kept (it must not exist yet),
    otherwise the table is made in a temporary directory of the demo's and removed. Returns 0
    when Spark read every produced record, and the table holds each of them once."""
    out = sys.stdout if out is None else out
    from pyconsumer.console import StatusLine

    if table is not None and os.path.exists(table) and (
            not os.path.isdir(table) or os.listdir(table)):
        raise ValueError(f"the demo's Delta table goes into a new folder: {table} exists")
    demo = _DemoRun(records, partitions, table, StatusLine(out))
    tmp_before = _tmp_entries()
    started = time.perf_counter()
    _prepare_table_folder(demo)
    try:
        _broker_and_topic(demo, bootstrap, topic)
        _produce(demo)
        with _spark_session(demo, spark, master) as session:
            _first_records(demo, session)
            df = _whole_topic(demo, session)
            _count(demo, df)
            _group_by_partition(demo, df)
            _delta_table(demo, session)
        ok = _every_record_read(demo)
    finally:
        _clean_up(demo)
    _say_figures(demo, time.perf_counter() - started)
    _say_cleaned_up(demo, tmp_before, started_spark=spark is None)
    if not ok:
        _say_shortfall(demo)
    return 0 if ok else 1


def _prepare_table_folder(demo: _DemoRun) -> None:
    """Whether deltalake is there; the Delta table's folder, made (before Spark changes
    TMPDIR) only when it is the demo's."""
    demo.delta_missing = _deltalake_missing()
    if demo.delta and demo.table is None:
        demo.workdir = tempfile.mkdtemp(prefix="pyconsumer-demo-")


def _broker_and_topic(demo: _DemoRun, bootstrap: str | None, topic: str | None) -> None:
    """A local Tansu broker started (when no ``bootstrap`` is given) and the topic created."""
    if bootstrap is None:
        from pyconsumer.testing import TansuBroker

        t = time.perf_counter()
        demo.broker = TansuBroker()
        with demo.waiting("starting a local Tansu broker"):
            demo.broker.start()
            demo.bootstrap = demo.broker.bootstrap
            demo.topic = topic or "pyconsumer-demo"
            _create_topic(demo.bootstrap, demo.topic, demo.partitions)
        demo.say(f"started a local Tansu broker on {demo.bootstrap} (memory storage) and created "
                 f"topic '{demo.topic}' with {demo.partitions} partitions "
                 f"({time.perf_counter() - t:.1f} s)")
    else:
        import uuid

        demo.bootstrap = bootstrap
        demo.topic = topic or f"pyconsumer-demo-{uuid.uuid4().hex[:8]}"
        _create_topic(demo.bootstrap, demo.topic, demo.partitions)
        demo.created_topic = demo.topic
        demo.say(f"using the broker at {demo.bootstrap}: created topic '{demo.topic}' with "
                 f"{demo.partitions} partitions")


def _produce(demo: _DemoRun) -> None:
    """The sample records produced with confluent-kafka (figure: produced)."""
    t = time.perf_counter()
    with demo.waiting(f"producing {demo.records:,} JSON records with confluent-kafka"):
        produced = produce_demo_records(demo.bootstrap, demo.topic, demo.records, demo.partitions)
    produce_s = time.perf_counter() - t
    demo.figures["produced"] = produced
    demo.say(f"produced {produced:,} JSON records with confluent-kafka (lz4, round robin) in "
             f"{produce_s:.1f} s ({produced / produce_s:,.0f} records/s)")


@contextlib.contextmanager
def _spark_session(demo: _DemoRun, spark: Any, master: str) -> Iterator[Any]:
    """The caller's session (kept open), or one started for the demo in a temporary directory
    and stopped after (figure: spark_start_s); the pyconsumer source registered in it."""
    from pyconsumer.spark import register

    if spark is not None:
        register(spark)
        yield spark
        return
    from pyconsumer.spark.session import temporary_session

    demo.say(f"\nstarting Spark ({master}) ...")
    t = time.perf_counter()
    with contextlib.ExitStack() as stack:
        with demo.waiting("starting Spark"):
            session = stack.enter_context(temporary_session(master, app_name="pyconsumer demo"))
        demo.figures["spark_start_s"] = time.perf_counter() - t
        demo.say(f"Spark {session.version} ready in {demo.figures['spark_start_s']:.1f} s")
        register(session)
        yield session


def _reader(demo: _DemoRun, session: Any) -> Any:
    """A reader of the pyconsumer source on the demo's broker: one per query, since a
    DataFrameReader's option() changes it."""
    return session.read.format("pyconsumer").option("kafka.bootstrap.servers", demo.bootstrap)


def _first_records(demo: _DemoRun, session: Any) -> None:
    """A few records of partition 0 decoded with from_json: a small query that also starts
    Spark's Python workers."""
    from pyspark.sql import functions as F

    from pyconsumer.console import format_table

    topic = demo.topic
    in_partition_0 = (demo.records + demo.partitions - 1) // demo.partitions
    few = (json.dumps({topic: {"0": 0}}),
           json.dumps({topic: {"0": min(5, in_partition_0)}}))
    t = time.perf_counter()
    with demo.waiting("the first query (it also starts Spark's Python workers)"):
        decoded = (_reader(demo, session).option("assign", json.dumps({topic: [0]}))
                   .option("startingOffsets", few[0]).option("endingOffsets", few[1]).load()
                   .select("partition", "offset",
                           F.from_json(F.col("value").cast("string"),
                                       DEMO_VALUE_SCHEMA).alias("v"))
                   .select("partition", "offset", "v.id", "v.user", "v.amount",
                           F.date_format(F.timestamp_millis("v.ts"),
                                         "yyyy-MM-dd HH:mm:ss.SSS").alias("ts"))
                   .orderBy("offset").collect())
    first_s = time.perf_counter() - t
    demo.say(f"\nthe first records of partition 0 (assign {json.dumps({topic: [0]})}, "
             f"startingOffsets {few[0]}, endingOffsets {few[1]}), value decoded with "
             f"from_json(value, \"{DEMO_VALUE_SCHEMA}\") in {first_s:.2f} s (the first "
             "query also starts Spark's Python workers):")
    demo.say(format_table([(r["partition"], r["offset"], r["id"], r["user"],
                            f"{r['amount']:.2f}", r["ts"])
                           for r in decoded],
                          ("partition", "offset", "id", "user", "amount", "ts"),
                          right=(True, True, True, False, True, False)))


def _whole_topic(demo: _DemoRun, session: Any) -> Any:
    """The DataFrame of the whole topic, which the next queries read."""
    df = _reader(demo, session).option("subscribe", demo.topic).load()
    demo.say(f"\ndf = spark.read.format(\"pyconsumer\")"
             f".option(\"kafka.bootstrap.servers\", \"{demo.bootstrap}\")"
             f".option(\"subscribe\", \"{demo.topic}\").load()")
    return df


def _count(demo: _DemoRun, df: Any) -> None:
    """df.count() (figures: read, count_s)."""
    t = time.perf_counter()
    with demo.waiting("df.count()"):
        count = df.count()
    count_s = time.perf_counter() - t
    demo.figures.update(read=count, count_s=count_s)
    demo.say(f"df.count() = {count:,} in {count_s:.2f} s ({count / count_s:,.0f} records/s)")


def _group_by_partition(demo: _DemoRun, df: Any) -> None:
    """Records, offsets and value bytes per partition (figures: grouped, group_s)."""
    from pyspark.sql import functions as F

    from pyconsumer.console import format_table

    t = time.perf_counter()
    with demo.waiting("df.groupBy(\"partition\")"):
        rows = (df.groupBy("partition")
                .agg(F.count(F.lit(1)).alias("records"),
                     F.min("offset").alias("first"), F.max("offset").alias("last"),
                     F.sum(F.length("value")).alias("value_bytes"))
                .orderBy("partition").collect())
    group_s = time.perf_counter() - t
    grouped = sum(r["records"] for r in rows)
    demo.figures.update(group_s=group_s, grouped=grouped)
    demo.say(f"\ndf.groupBy(\"partition\").agg(count, min/max offset, sum(length(value))) "
             f"in {group_s:.2f} s ({grouped / group_s:,.0f} records/s):")
    demo.say(format_table(
        [(r["partition"], f"{r['records']:,}", f"{r['first']}-{r['last']}",
          f"{r['value_bytes'] or 0:,}") for r in rows],
        ("partition", "records", "offsets", "value bytes"),
        right=(True, True, False, True)))


def _delta_table(demo: _DemoRun, session: Any) -> None:
    """The topic into a Delta table and read back (see :func:`_delta_step`), or the one line
    saying why the step is skipped."""
    if not demo.delta:
        demo.say(f"\n{demo.delta_missing}")
        return
    path = demo.table if demo.table is not None else os.path.join(demo.workdir or "", demo.topic)
    demo.figures.update(_delta_step(session, demo.bootstrap, demo.topic, demo.partitions, path,
                                    produced=demo.figures["produced"],
                                    kept=demo.table is not None, say=demo.say,
                                    waiting=demo.waiting))


def _every_record_read(demo: _DemoRun) -> bool:
    """Spark read every record produced, and the table (when there is one) holds each once."""
    figures = demo.figures
    return (figures.get("read") == figures.get("produced") == demo.records
            and figures.get("grouped") == demo.records
            and (not demo.delta or figures.get("table_ok", False)))


def _clean_up(demo: _DemoRun) -> None:
    """The demo's table folder removed, the topic it created deleted, the broker it started
    stopped (whatever happened before)."""
    if demo.workdir is not None:
        shutil.rmtree(demo.workdir, ignore_errors=True)
    if demo.created_topic is not None:
        try:
            _delete_topic(demo.bootstrap, demo.created_topic)
            demo.topic_deleted = True
        except Exception as exc:
            demo.say(f"(could not delete topic '{demo.created_topic}': {exc})")
    if demo.broker is not None:
        demo.broker.close()


def _say_figures(demo: _DemoRun, total_s: float) -> None:
    """The figures of the run, one aligned line each."""
    figures = demo.figures
    demo.say("\nfigures:")
    read = figures.get("read", 0)
    lines = [("records produced", f"{figures.get('produced', 0):,}"),
             ("records read into Spark", f"{read:,}")]
    if read:
        lines.append(("records/s into Spark", f"{read / figures['count_s']:,.0f} (count), "
                      f"{figures['grouped'] / figures['group_s']:,.0f} (groupBy partition)"))
    if "table_records" in figures:
        lines.append(("records in the Delta table",
                      f"{figures['table_records']:,} (version {figures['table_version']}, "
                      f"written at {figures['table_records'] / figures['ingest_s']:,.0f} "
                      "records/s)"))
    lines.append(("seconds", f"{total_s:.1f} in all"
                  + (f" (Spark start {figures['spark_start_s']:.1f})"
                     if "spark_start_s" in figures else "")))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        demo.say(f"  {k.ljust(width)}  {v}")


def _say_cleaned_up(demo: _DemoRun, tmp_before: set[str], *, started_spark: bool) -> None:
    """What the cleanup did, and what of the demo's kind is left in /tmp."""
    left = _left_by_the_demo(_tmp_entries() - tmp_before, started_spark=started_spark)
    cleaned = "broker stopped, " if demo.broker is not None else ""
    cleaned += f"topic '{demo.created_topic}' deleted, " if demo.topic_deleted else ""
    cleaned += "the Delta table removed, " if demo.workdir is not None else ""
    cleaned += "Spark's temporary directory removed, " if started_spark else ""
    if left:
        demo.say(f"\ncleaned up: {cleaned}but left in /tmp: {', '.join(left)}")
    else:
        demo.say(f"\ncleaned up: {cleaned}nothing of the demo's left in /tmp")


def _say_shortfall(demo: _DemoRun) -> None:
    demo.say(f"Spark read {demo.figures.get('read', 0):,} of {demo.records:,} records"
             + (f", the Delta table holds {demo.figures.get('table_records', 0):,}"
                if demo.delta else "")
             + ": something is wrong")


def _deltalake_missing() -> str | None:
    """The line the demo shows instead of its Delta table step when deltalake cannot be
    imported (None: it can)."""
    try:
        import deltalake  # noqa: F401
    except ImportError:
        from pyconsumer._install import install_hint

        return ("the Delta table step is skipped: it needs deltalake, which is not installed: "
                + install_hint("delta"))
    return None


def _delta_step(spark: Any, bootstrap: str, topic: str, partitions: int, path: str, *,
                produced: int, kept: bool, say: Callable[[str], None],
                waiting: Callable[[str], Any]) -> dict[str, Any]:
    """The topic into a Delta table at ``path`` through ``pyconsumer ingest --table-format
    delta``'s own functions (Spark tasks write the Parquet files from Arrow, the driver commits
    them with the offsets reached in one Delta commit), then the table read back with deltalake
    into Arrow and from Arrow into Spark: records, offsets and the offsets the table holds per
    Kafka partition. Figures: table_records, table_version, ingest_s, and table_ok: the
    table holds the ``produced`` records, each once."""
    from deltalake import DeltaTable
    from pyspark.sql import functions as F

    from pyconsumer.console import format_table
    from pyconsumer.ingest import IngestError, source_options
    from pyconsumer.ingest.tables import TableTarget, open_table, plan_table_read, \
        run_table_ingest
    from pyconsumer.spark.options import parse_options

    say("\nthe topic into a Delta Lake table, as this command does it (Spark tasks write the "
        "Parquet files from Arrow, the driver commits them with the offsets reached in one "
        "Delta commit):")
    say(f"  pyconsumer ingest -b {bootstrap} -t {topic} --output {path} --table-format delta "
        "--partition-by partition")
    t = time.perf_counter()
    try:
        with waiting("writing the Delta table"):
            # the command's own steps: its source options, the table opened (created) for the
            # read's Arrow schema, one batch run
            source = parse_options(source_options(bootstrap=bootstrap, topics=[topic],
                                                  ending_offsets="latest"), streaming=False)
            read = plan_table_read(source, [topic])
            sink = open_table(TableTarget("delta", path, partition_by=("partition",)),
                              read.schema)
            summary = run_table_ingest(spark, sink, read, output=path)
    except IngestError as exc:
        say(f"the Delta table step failed: {exc}")
        return {"table_ok": False}
    ingest_s = time.perf_counter() - t
    version = DeltaTable(path).version()
    say(f"wrote {summary.records:,} records in {ingest_s:.1f} s "
        f"({summary.records / ingest_s:,.0f} records/s): {summary.files} Parquet "
        f"file{'s' if summary.files != 1 else ''} (a folder per Kafka partition), committed "
        f"as version {version} with the offsets")

    t = time.perf_counter()
    with waiting("reading the Delta table back"), _arrow_as_batches(spark, produced):
        arrow = DeltaTable(path).to_pyarrow_table(columns=["partition", "offset"])
        rows = (spark.createDataFrame(arrow).groupBy("partition")
                .agg(F.count(F.lit(1)).alias("records"), F.min("offset").alias("first"),
                     F.max("offset").alias("last"))
                .orderBy("partition").collect())
        resume = {p: o for (tp_topic, p), o in sink.resume_offsets().items()
                  if tp_topic == topic}
    read_s = time.perf_counter() - t
    say(f"\nspark.createDataFrame(DeltaTable(path).to_pyarrow_table(columns=[\"partition\", "
        f"\"offset\"])).groupBy(\"partition\") in {read_s:.2f} s, beside the offsets the "
        f"table's version {version} holds (a rerun goes on from there):")
    say(format_table([(r["partition"], f"{r['records']:,}", f"{r['first']}-{r['last']}",
                       resume.get(r["partition"], "-")) for r in rows],
                     ("partition", "records", "offsets", "next offset in the table"),
                     right=(True, True, False, True)))
    count = arrow.num_rows
    # every offset of every partition once: 0 up to the table's offset, no gap, no repeat
    # (the distinct offsets counted on the Arrow table, in the driver: it takes milliseconds)
    distinct = {g["partition"]: g["offset_count_distinct"] for g in
                arrow.group_by("partition").aggregate([("offset", "count_distinct")]).to_pylist()}
    complete = (sorted(r["partition"] for r in rows) == list(range(partitions))
                and all(r["first"] == 0 and r["records"] == distinct.get(r["partition"])
                        == r["last"] + 1 == resume.get(r["partition"]) for r in rows))
    ok = count == produced == summary.records == sum(r["records"] for r in rows) and complete
    where = "kept" if kept else "removed at the end"
    say(f"the Delta table at {path} ({where}) holds {count:,} records"
        + (", every record produced once" if ok else "")
        + f": read it with deltalake.DeltaTable(\"{path}\").to_pyarrow_table()")
    return {"table_records": count, "table_version": version, "ingest_s": ingest_s,
            "table_ok": ok}


@contextlib.contextmanager
def _arrow_as_batches(spark: Any, rows: int) -> Iterator[None]:
    """While the block runs, ``createDataFrame(arrow_table)`` hands Spark the table as Arrow
    batches (a few per core) that its tasks decode, not as a local relation: below
    spark.sql.execution.arrow.localRelationThreshold (48 MB) Spark copies every row into the
    driver's plan, which for the demo's million rows takes several times as long and hundreds
    of MB of the driver's heap. The session's own settings are put back after."""
    conf = spark.conf
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    wanted = {"spark.sql.execution.arrow.localRelationThreshold": "0",
              "spark.sql.execution.arrow.maxRecordsPerBatch":
                  str(max(10_000, -(-rows // (2 * cores))))}
    saved = {key: conf.get(key, None) for key in wanted}
    for key, value in wanted.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from pyconsumer.testing import wait_for_topic

    # log_level 3: no librdkafka info lines ("Purging ... unserved events") on the terminal
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                            replication_factor=1)], request_timeout=30)
    futures[topic].result(30)
    wait_for_topic(admin, topic, partitions, 30)


def _delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    admin.delete_topics([topic], request_timeout=30)[topic].result(30)
