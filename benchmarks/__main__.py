"""The benchmark suite in one command: ``python -m benchmarks`` (from a clone, after
``pip install -e ".[bench]"``; add ``.[spark]`` and Java 17 for the Spark case).

It starts a broker (``--broker kafka|tansu|both``, default both, one after the other: real
Apache Kafka 4.2.2 with its default thread counts and a 1 GB heap, see brokers.py, and Tansu),
produces the data with confluent-kafka (an independent producer), runs every contender
interleaved in rounds, and writes ``RESULTS.md`` (one table per case and broker: records/s
per contender, ratios to that broker's raw Fetch ceiling, to confluent-kafka, to kafkarrow
and to aiokafka's decoder; the issue's targets with what was measured, met or missed; the
machine, versions, commit and the command) plus PNG charts in ``results/`` next to it.

Cases
* ``decode``: the decoder alone on in-memory record sets (100-byte values, 1,000 records per
  batch, CRC checked; uncompressed and lz4): ``decode_arrow``, ``CompletedFetch.take_records``
  in 500s and ``decode_records`` against aiokafka's Cython reader (bench_decode.py), and the
  peak memory of ``decode_arrow`` against its output.
* ``values``: typed values decoded alone, in memory (issue 25; bench_values.py): Avro
  8-field records (Confluent-framed and bare) through ``values.decode_avro`` against pyruhvro,
  fastavro + ``RecordBatch.from_pylist`` and confluent-kafka's AvroDeserializer; JSON through
  ``values.decode_json`` (clean and with bad rows) against bare ``pyarrow.json`` and
  ``json.loads`` + ``from_pylist``; Protobuf 8-field messages (issue 39; Confluent-framed and
  bare) through ``decode_protobuf`` against ptars and confluent-kafka's ProtobufDeserializer.
  1M records (``--quick`` 200k, ``--records`` sets it).
* ``e2e1`` / ``e2e6``: broker -> Python over 1 and 6 partitions (bench_consume.py), on each
  broker chosen: the raw sequential Fetch loop that only counts batch headers (that broker's
  ceiling), pyconsumer ``poll_arrow`` (with and without decode threads) and ``poll()``,
  confluent-kafka ``consume(10000)``, kafkarrow (Arrow batches of 100,000), aiokafka,
  kafka-python.
* ``e2e6zstd``: the same 6 partitions zstd-compressed, where decoding rather than the broker
  bounds the rate: ``poll_arrow`` with and without decode threads against the raw loop and
  confluent-kafka.
* ``scale``: the same 100 B records over 6, 100, 1,000 and 5,000 partitions (1,000 also as
  three topics), on each broker chosen: the raw Fetch loop (building the same requests), the
  same loop decoding into Arrow (``raw_arrow``), ``poll_arrow``, ``poll()``, confluent-kafka
  and kafkarrow; then, in a fresh process, a consumer assigned every partition at its end:
  microseconds per ``poll(timeout_ms=0)`` and RSS per idle assigned partition (issue 26).
  1,000 partitions of one topic, where the issue's ratios are read, runs at least 7 rounds.
  ``--quick`` stops at 1,000.
* ``spark``: broker -> Spark on Apache Kafka (Tansu only when it alone is chosen): the
  ``pyconsumer`` data source against Spark's own ``format("kafka")`` (connector from
  ``pyconsumer.testing.spark_kafka_jars()``) and a tuple-yielding Python data source over
  confluent-kafka, five workloads (noop, count, agg, from_json + aggregate, Parquet) on 5M x
  100 B and 1M JSON records, plus ``poll_arrow`` in the driver (bench_spark.py, its own
  process); and typed values (issue 25): 1M JSON and 1M Confluent-framed Avro records (a
  Schema Registry in the process) read by ``format('pyconsumer')`` with ``valueFormat``
  against ``format('kafka')`` + ``from_json`` / ``from_avro`` and against the binary read of
  the same topic (noop, count, an aggregate over the typed fields, Parquet). Only when pyspark
  and Java are there, and not with ``--quick`` unless asked for with ``--cases``;
  ``--spark-datasets`` picks the data sets (bytes json json_typed avro_typed protobuf_typed).
* ``spark_scale``: the Spark source on a many-partition topic (issue 26; bench_spark.py's
  ``scale`` set, its own process, on Apache Kafka as the spark case): 1M x 100 B over 1,000
  partitions (``--records`` sets the count) read by ``format('pyconsumer')`` and
  ``format('kafka')``, noop and count, records/s and their ratio, and each source's planning
  time: a planning-only action (``load()`` + ``df.rdd.getNumPartitions()``, no task run) and,
  inside each timed action, the time to its first stage (Spark's status tracker). No target (the
  issue asks for the numbers). Only when pyspark and Java are there, and not with ``--quick``
  unless asked for with ``--cases``. format('kafka') runs 1,000 tasks an action (~11-17 s on
  local[2]); format('pyconsumer') groups small ranges (minRecordsPerPartition, 10 tasks at
  1M records): the run took 8 min on the 2-core machine (a quick one at load ~4 once took 22
  min, format('kafka') then 4.4 min an action).

* ``tables``: Kafka into lakehouse tables on Apache Kafka (bench_tables.py, its own process):
  5M x 100 B and 1M Confluent-framed Avro records (8 fields) over 6 partitions, local[2], each
  run into a fresh table and counted back: ``pyconsumer ingest --table-format``'s Arrow writer
  into Delta, Iceberg and Parquet (Spark tasks write the files from Arrow, one commit with the
  offsets) against ``format('kafka')`` (+ ``from_avro``) and ``format('pyconsumer')`` into
  Spark's own Delta writer (delta-spark) and ``format('kafka')`` into Spark's Parquet writer, with
  ``poll_arrow`` in the driver as the reference; the peak memory of a Spark Python worker and of
  the JVM per contender. Only when pyspark and Java are there, and not with ``--quick`` unless
  asked for with ``--cases``.

``--baseline REV`` also runs the decoder and pyconsumer's end-to-end contenders as built from
another commit, in the same rounds (benchmarks/baseline.py): how a change moved the hot path,
with the machine's drift cancelled (an "x the baseline build" column and a target row each).

``--quick`` runs small sets (a minute or two with the Kafka start: 1.6 min measured at load
14); the full run should take 8-10 minutes on 2 cores without the Spark case (e2e1 and e2e6 on
both brokers, three rounds: 3.9 min measured at load 15), and the Spark case adds ~20 (5M +
1M records, six contenders, five workloads, three rounds: one round of five contenders at a fifth
of the size took 2.6 min at load 5-6; ``--cases spark --quick``: 2.1 min).
The typed Spark sets add a 1M-record Avro topic (written through confluent-kafka's
AvroSerializer) and eleven actions per set and round (not yet timed at full size); the values
case took 0.6 min with ``--quick`` at load 10 (200k records, one round); its full run does 15x
that work (1M records, three rounds).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brokers import BenchBroker

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))          # the scripts import each other by their plain names

CASES = ("decode", "values", "e2e1", "e2e6", "e2e6zstd", "scale", "spark", "spark_scale", "tables")
#: the cases a --quick run leaves out unless --cases names them (a JVM and Spark each)
SLOW_CASES = ("spark", "spark_scale", "tables")


@dataclass
class Case:
    """One table: per-round records/s of each contender, and what its ratios are taken to."""

    name: str
    title: str
    rates: dict[str, list[float]]
    references: list[str]                       # contenders the ratio columns divide by
    descriptions: dict[str, str]
    notes: list[str] = field(default_factory=list)
    broker: str = ""                            # "kafka" / "tansu" for end-to-end cases, "" otherwise
    peers: dict[str, str] = field(default_factory=dict)   # row -> its same-workload reference row
    peer_label: str = "x format('kafka'), same workload"   # the peer column's heading
    #: (target, wanted, measured, met) rows that are not ratios of two contenders (idle polls)
    extra_targets: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: more per-row reference columns after the peer's: (heading, row -> its reference row)
    columns: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def peer_ratio(self, name: str) -> float | None:
        """The median per-round ratio of a row to its peer (Spark: the same workload on
        Spark's own Kafka source)."""
        peer = self.peers.get(name)
        return None if peer is None else self.ratio(name, peer)

    def ratio(self, name: str, reference: str) -> float | None:
        """The median over rounds of the per-round ratio (drift on a shared machine cancels)."""
        if reference not in self.rates or name not in self.rates:
            return None
        return statistics.median(a / b for a, b in zip(self.rates[name], self.rates[reference]))


# ------------------------------------------------------------------ the cases

def run_decode(quick: bool, rounds: int, only: list[str] | None, base: Path | None = None) -> list[Case]:
    import bench_decode
    import gen_data

    mb = 20 if quick else 40
    contenders = {k: v for k, v in bench_decode.CONTENDERS.items()
                  if only is None or k in only or k in ("aio_c", "aio_c_all")}
    descriptions = {
        "aio_c": "aiokafka's Cython reader (MemoryRecords), fields touched",
        "aio_c_all": "the same, every record kept until the end (as decode_records keeps them)",
        "pc_arrow": "pyconsumer decode_arrow: one Arrow RecordBatch",
        "pc_records": "pyconsumer decode_records: every ConsumerRecord at once",
        "pc_fetch500": "pyconsumer CompletedFetch.take_records(500) (the poll() path)",
        "aio_client": "aiokafka's consumer-side PartitionRecords over its reader",
        "kp_raw": "kafka-python's pure-Python MemoryRecords",
    }
    peers: dict[str, str] = {}
    if base is not None:
        import baseline
        for k, fn in bench_decode.baseline_contenders(baseline.extension(base)).items():
            if only is None or "pc_" + k[5:] in contenders:
                contenders[k] = fn
                peers["pc_" + k[5:]] = k
                descriptions[k] = f"the same as pc_{k[5:]}, by the baseline build ({base.name[:12]})"
    cases = []
    for codec in ("none", "lz4"):
        path = gen_data.build("v100", codec, mb)
        data = path.read_bytes()
        per_round: dict[str, list[float]] = {k: [] for k in contenders}
        names = list(contenders)
        bench_decode.measure(data, True, 1, contenders)     # warm-up, not counted: page faults, caches
        for rnd in range(rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]     # rotated each round
            best, _ = bench_decode.measure(data, True, 1, {k: contenders[k] for k in order})
            for k, v in best.items():
                per_round[k].append(v)
        extra, nbytes = bench_decode.peak_memory(path)
        print(f"decode v100 {codec}: " + ", ".join(f"{k} {max(v) / 1e3:,.0f} krec/s" for k, v in per_round.items())
              + f"; decode_arrow peak memory {extra / max(nbytes, 1):.2f}x the output", flush=True)
        cases.append(Case(
            f"decode_{codec}", f"Decode, 100 B values, {codec}, CRC on ({mb} MB record set)",
            per_round, ["aio_c", "aio_c_all"], descriptions,
            [f"decode_arrow peak extra memory: {extra / 1e6:.1f} MB for a {nbytes / 1e6:.1f} MB "
             f"batch = {extra / max(nbytes, 1):.2f}x the output"],
            peers=peers, peer_label=BASELINE_LABEL))
    return cases


def run_values(quick: bool, rounds: int, only: list[str] | None, records: int | None) -> list[Case]:
    """Avro, JSON and Protobuf values decoded alone (bench_values.py): one table each."""
    import bench_values

    n = records or (200_000 if quick else 1_000_000)
    sampled = f"{bench_values.sample_size(n):,}"
    cases = []
    for fmt, build, refs, descriptions, title in (
            ("avro", bench_values.avro_contenders, ["pyruhvro", "ck_avro"], bench_values.AVRO_DESCRIPTIONS,
             f"Avro values decoded alone, {n:,} records of 8 fields (~40 B), into Arrow"),
            ("json", bench_values.json_contenders, ["pyarrow_json", "loads_pylist"],
             bench_values.JSON_DESCRIPTIONS,
             f"JSON values decoded alone, {n:,} objects of 8 fields (~130 B), into an Arrow struct"),
            ("protobuf", bench_values.protobuf_contenders, ["ptars", "ck_protobuf"],
             bench_values.PROTOBUF_DESCRIPTIONS,
             f"Protobuf values decoded alone, {n:,} messages of 8 fields (~50 B), into an Arrow struct")):
        t0 = time.perf_counter()
        contenders, notes = build(n)
        contenders = {k: v for k, v in contenders.items() if only is None or k in only or k in refs}
        print(f"values {fmt}: {n:,} records built in {time.perf_counter() - t0:.1f} s", flush=True)

        def show(rnd: int, name: str, rate: float) -> None:
            print(f"  round {rnd} {name:18s} {rate / 1e3:9,.0f} krec/s", flush=True)

        rates = bench_values.measure(contenders, rounds, report=show)
        sampled_here = [k for k in bench_values.SAMPLED if k in rates]
        if sampled_here:
            notes.append(f"{', '.join(sampled_here)} decode{'s' if len(sampled_here) == 1 else ''} the first "
                         f"{sampled} records only (per-row decoders; rates are per record)")
        notes.append("every rate is the best of 3 runs in a row within a round, on one core "
                     "and no broker")
        cases.append(Case(f"values_{fmt}", title, rates, [r for r in refs if r in rates], descriptions, notes))
    return cases


def have_kafkarrow() -> bool:
    try:
        import kafkarrow  # noqa: F401
    except ImportError:
        return False
    return True


def run_e2e(broker: BenchBroker, partitions: int, quick: bool, rounds: int, only: list[str] | None,
            records: int | None, codec: str = "none", base: Path | None = None) -> Case:
    import bench_consume

    n = records or (300_000 if quick else 1_000_000)
    everyone = ("raw_fetch", "pc_arrow", "pc_arrow_1t", "pc_poll", "pc_poll_large", "ck_consume", "kr_arrow",
                "aio", "kp")
    if codec != "none":      # the decode-bound case: what several decode threads change
        everyone = ("raw_fetch", "pc_arrow", "pc_arrow_1t", "ck_consume")
    names = [k for k in everyone if only is None or k in only]
    notes = []
    if "kr_arrow" in names and not have_kafkarrow():
        names.remove("kr_arrow")
        notes.append("kafkarrow is not installed (pip install -e '.[bench]'): no kr_arrow row")
        print(f"e2e on {broker.title}: kafkarrow is not installed: kr_arrow skipped", flush=True)
    suffix = "" if codec == "none" else codec
    topic = broker.create_topic(f"bench-{partitions}p{suffix}", partitions)
    t0 = time.perf_counter()
    bench_consume.fill(broker.bootstrap, topic, n, partitions, 100, codec)
    print(f"e2e {partitions}p {codec} on {broker.title}: filled {n:,} records in {time.perf_counter() - t0:.1f} s",
          flush=True)

    def show(rnd: int, name: str, got: int, elapsed: float) -> None:
        print(f"  round {rnd} {name:13s} {got:>10,} records {elapsed:6.2f} s {got / elapsed / 1e3:9,.0f} krec/s",
              flush=True)

    # one raw read first, not counted: the broker's fetch path (a JVM's JIT on Kafka) and the
    # page cache warm up before round 0's first contender rather than during it
    t0 = time.perf_counter()
    bench_consume.raw_fetch(broker.bootstrap, topic, partitions, n)
    print(f"  warm-up: one raw Fetch read of the topic in {time.perf_counter() - t0:.2f} s (not counted)", flush=True)
    slow_cap = 50_000 if quick else 200_000
    contenders: dict[str, bench_consume.Contender] = {k: bench_consume.CONTENDERS[k] for k in names}
    descriptions = dict(bench_consume.DESCRIPTIONS)
    peers: dict[str, str] = {}
    if base is not None and codec == "none":
        import baseline
        for k, fn in baseline.e2e_contenders(base).items():
            name, build = k.split("@")
            contenders[k] = fn
            descriptions[k] = (f"{name}, this tree, in a fresh process" if build == "head" else
                               f"{name}, the baseline build ({base.name[:12]}), in a fresh process")
            if build == "head":
                peers[k] = f"{name}@base"
        notes.append("@head / @base: the same contender run by this tree and by the baseline commit, "
                     "each in its own fresh process in the same rounds (the 'x the baseline build' column)")
    rates = bench_consume.measure(broker.bootstrap, topic, partitions, n, contenders, rounds,
                                  slow_cap=slow_cap, report=show)
    if {"aio", "kp"} & set(names):
        notes.append(f"aiokafka and kafka-python read the first {min(n, slow_cap):,} records only (rates are "
                     "per record)")
    storage = "memory storage" if broker.key == "tansu" else "one KRaft node"
    return Case(f"e2e{partitions}{suffix}-{broker.key}",
                f"Broker -> Python, {n:,} x 100 B over {partitions} partition"
                f"{'s' if partitions > 1 else ''}{'' if codec == 'none' else ', ' + codec} "
                f"({broker.title}, {storage})", rates,
                [r for r in ("raw_fetch", "ck_consume", "kr_arrow") + (("pc_arrow_1t",) if codec != "none" else ())
                 if r in names],
                descriptions, notes, broker.key, peers, BASELINE_LABEL)


#: the many-partition case: partitions in all, read from one topic; those also read from three
#: topics (a third of the partitions each)
SCALE_PARTITIONS = (6, 100, 1000, 5000)
SCALE_THREE_TOPICS = (1000,)
SCALE_CONTENDERS = ("raw_fetch", "raw_arrow", "pc_arrow", "pc_poll", "ck_consume", "kr_arrow")
#: issue 26: a poll's own cost with every partition assigned and idle
IDLE_POLL_TARGET_US = 100.0
#: the partition count the issue's ratios are judged at: it runs more rounds (at least this
#: many; its per-round ratio moved 0.5-1.0 between rounds of one run, so three left the
#: median to chance); the other sizes keep --rounds
SCALE_TARGET_PARTITIONS = 1000
SCALE_TARGET_ROUNDS = 7


def run_scale(broker: BenchBroker, quick: bool, rounds: int, only: list[str] | None,
              records: int | None) -> list[Case]:
    """1M x 100 B spread over 6 ... 5,000 partitions (and over three topics): records/s of
    every contender, then a consumer assigned to every partition at its end: microseconds per
    poll(timeout_ms=0) and RSS per idle assigned partition (each in a fresh process)."""
    import bench_consume

    n = records or (300_000 if quick else 1_000_000)
    sizes = SCALE_PARTITIONS[:3] if quick else SCALE_PARTITIONS
    names = [k for k in SCALE_CONTENDERS if only is None or k in only]
    notes: list[str] = []
    if "kr_arrow" in names and not have_kafkarrow():
        names.remove("kr_arrow")
        notes.append("kafkarrow is not installed (pip install -e '.[bench]'): no kr_arrow row")
    cases: list[Case] = []
    idle: dict[int, tuple[float, int, int]] = {}
    for total in sizes:
        for topics in (1, 3) if total in SCALE_THREE_TOPICS else (1,):
            per_topic = total // topics
            names_t = [broker.create_topic(f"scale-{total}p-{topics}t-{i}", per_topic) for i in range(topics)]
            topic = ",".join(names_t)
            t0 = time.perf_counter()
            for i, t in enumerate(names_t):
                bench_consume.fill(broker.bootstrap, t, n // topics + (i < n % topics), per_topic, 100, "none")
            print(f"scale {per_topic * topics}p over {topics} topic(s) on {broker.title}: filled {n:,} "
                  f"records in {time.perf_counter() - t0:.1f} s", flush=True)
            bench_consume.raw_fetch(broker.bootstrap, topic, per_topic, n)       # warm-up, not counted

            def show(rnd: int, name: str, got: int, elapsed: float) -> None:
                print(f"  round {rnd} {name:13s} {got:>10,} records {elapsed:6.2f} s "
                      f"{got / elapsed / 1e3:9,.0f} krec/s", flush=True)

            target = total == SCALE_TARGET_PARTITIONS and topics == 1 and not quick
            rates = bench_consume.measure(broker.bootstrap, topic, per_topic, n,
                                          {k: bench_consume.CONTENDERS[k] for k in names},
                                          max(rounds, SCALE_TARGET_ROUNDS) if target else rounds, report=show)
            case_notes = list(notes)
            if topics == 1:
                us, grown, heap = bench_consume.idle_poll(broker.bootstrap, topic, per_topic)
                idle[total] = (us, grown, heap)
                print(f"  idle: {total} partitions assigned at their end: {us:.1f} us per poll(timeout_ms=0), "
                      f"RSS +{grown / 1e6:.1f} MB, Python heap +{heap / 1e6:.2f} MB", flush=True)
                case_notes.append(f"{total} partitions assigned and idle (at their end): {us:.1f} us per "
                                  f"poll(timeout_ms=0) (mean of 2,000); from assign() on, RSS +{grown / 1e6:.1f} MB, "
                                  f"Python heap (tracemalloc) +{heap / 1e6:.2f} MB")
            cases.append(Case(
                f"scale{total}{'' if topics == 1 else f'x{topics}t'}-{broker.key}",
                f"Broker -> Python, {n:,} x 100 B over {per_topic * topics:,} partitions"
                f"{'' if topics == 1 else f' of {topics} topics'} ({broker.title})",
                rates, [r for r in ("raw_fetch", "raw_arrow", "ck_consume", "kr_arrow") if r in names],
                bench_consume.DESCRIPTIONS, case_notes, broker.key))
    smallest = min(idle)
    for total, (us, grown, heap) in idle.items():
        c = next(c for c in cases if c.name == f"scale{total}-{broker.key}")
        if total != smallest:
            span = total - smallest
            c.notes.append(f"per idle assigned partition: RSS {(grown - idle[smallest][1]) / span / 1e3:.2f} kB, "
                           f"Python heap {(heap - idle[smallest][2]) / span / 1e3:.2f} kB "
                           f"((growth at {total} - at {smallest}) / {span} partitions)")
        if total == max(idle):
            c.extra_targets.append((f"poll() overhead, {total} idle assigned partitions",
                                    f"< {IDLE_POLL_TARGET_US:g} us", f"{us:.1f} us",
                                    "met" if us < IDLE_POLL_TARGET_US else "missed"))
    return cases


#: what the Spark case's rows are (bench_spark.py's contenders and workloads)
SPARK_DESCRIPTIONS = {
    "kafka": "Spark's own source, spark.read.format('kafka')",
    "kafka_tuned": "format('kafka') with our reader's fetch sizes and kafka.max.poll.records 100000",
    "pyconsumer": "spark.read.format('pyconsumer')",
    "tuple": "a tuple-yielding Python data source over confluent-kafka consume()",
    "arrow_mem": "ready Arrow batches from memory, no Kafka: Spark's Python-source path alone",
    "binary": "spark.read.format('pyconsumer'), value left binary",
}
#: the typed sets' contenders (issue 25), where they differ from the above
SPARK_TYPED_DESCRIPTIONS = {
    ("json_typed", "kafka"): "format('kafka') + from_json(value, DDL)",
    ("json_typed", "pyconsumer"): "format('pyconsumer'), valueFormat json, valueSchema DDL",
    ("avro_typed", "kafka"): "format('kafka') + from_avro(substring(value, 6), schema): framing cut off",
    ("avro_typed", "pyconsumer"): "format('pyconsumer'), valueFormat avro, schema.registry.url",
    ("protobuf_typed", "kafka"): "format('kafka') + from_protobuf(substring(value, 7), message, descriptor "
                                 "file): framing cut off",
    ("protobuf_typed", "pyconsumer"): "format('pyconsumer'), valueFormat protobuf, schema.registry.url",
}
SPARK_WORKLOADS = {
    "noop": "write.format('noop')",
    "count": "count()",
    "agg": "groupBy(partition).agg(sum(length(value)))",
    "json": "from_json into 8 typed fields, groupBy(country) over all of them",
    "parquet": "write.parquet",
    "fields": "groupBy(country) over all 8 typed fields (value.*)",
}
#: the issue's Spark targets: pyconsumer / format("kafka") per workload, source / poll_arrow
SPARK_TARGETS = {"noop": 2.0, "count": 2.0, "agg": 2.0, "json": 1.5, "parquet": 1.5}
SPARK_POLL_ARROW_TARGET = 0.8
#: issue 25: a typed read >= 3x Spark's source + from_json/from_avro, and >= 0.7x the binary read
SPARK_TYPED_TARGET = 3.0
SPARK_TYPED_VS_BINARY = 0.7
SPARK_TYPED_SETS = ("json_typed", "avro_typed", "protobuf_typed")
#: issue 26: the many-partition set (the spark_scale case; --spark-datasets when named)
SPARK_SCALE_SET = "scale"
#: bench_spark.py's data sets (its --datasets)
SPARK_DATASETS = ("bytes", "json") + SPARK_TYPED_SETS + (SPARK_SCALE_SET,)


def spark_planning_notes(stdout: str, ds: str) -> list[str]:
    """The notes on a data set's planning from bench_spark.py's ``plan round`` and ``first
    stage round`` lines: per source the median planning-only time (and per round), the tasks
    planned, pyconsumer's time over Spark's; the median time to the first stage per timed row."""
    plans: dict[str, list[float]] = {}
    tasks: dict[str, int] = {}
    for m in re.finditer(r"^plan round \d+ (\w+) (\w+): ([\d.]+) s, (\d+) tasks$", stdout, re.M):
        if m[1] == ds:
            plans.setdefault(m[2], []).append(float(m[3]))
            tasks[m[2]] = int(m[4])
    firsts: dict[str, list[float]] = {}
    unseen = 0
    for m in re.finditer(r"^first stage round \d+ (\w+) (\w+ \w+): (?:([\d.]+) s after|not seen)", stdout, re.M):
        if m[1] == ds:
            if m[3] is None:
                unseen += 1
            else:
                firsts.setdefault(m[2], []).append(float(m[3]))
    notes = []
    if plans:
        per_source = "; ".join(
            f"format('{c}') {statistics.median(ts):.3f} s (rounds: {', '.join(f'{t:.3f}' for t in ts)}), "
            f"{tasks[c]:,} tasks" for c, ts in plans.items())
        ratio = ""
        if "pyconsumer" in plans and "kafka" in plans:
            r = statistics.median(a / b for a, b in zip(plans["pyconsumer"], plans["kafka"]))
            ratio = (f"; format('pyconsumer') takes {r:.2f}x format('kafka')'s time (median of per-round "
                     "ratios; above 1: slower to plan)")
        notes.append("planning, median of a planning-only action per source and round (from just before "
                     "load() until df.rdd.getNumPartitions() returns: the schema, every partition's "
                     "offsets, the tasks planned, the RDD built; no task runs): " + per_source + ratio)
    if firsts or unseen:
        notes.append("time to the first stage inside each timed action, median (from just before load() to "
                     "the submission of the action's first stage in Spark's status tracker: the planning "
                     "above plus the DAG scheduler's, as the rates pay it): "
                     + ", ".join(f"{k} {statistics.median(v):.3f} s" for k, v in firsts.items())
                     + (f" ({unseen} action(s) whose first stage the tracker never showed)" if unseen else ""))
    return notes


def spark_cases(stdout: str, broker: str) -> list[Case]:
    """The Spark cases from bench_spark.py's output: one per data set, rows keyed
    ``<contender> <workload>`` (and ``poll_arrow``), each row's peer the same workload on
    Spark's own source."""
    m = re.search(r"^spark kafka connector: (\S+) \(PySpark (\S+)\)", stdout, re.M)
    connector = f"Spark's Kafka connector {m[1]} in PySpark {m[2]}" if m else "Spark's Kafka connector"
    sets: dict[str, dict[str, list[float]]] = {}
    sizes: dict[str, int] = {}
    partitions = {m[1]: int(m[2].replace(",", "")) for m in
                  re.finditer(r"^dataset (\w+): [\d,]+ records over ([\d,]+) partitions", stdout, re.M)}
    for r in re.finditer(r"^round \d+ (\w+) (.+?)\s+([\d,]+) records\s+([\d.]+) s", stdout, re.M):
        n = int(r[3].replace(",", ""))
        sets.setdefault(r[1], {}).setdefault(r[2].strip(), []).append(n / float(r[4]))
        sizes[r[1]] = n
    what = {"bytes": "x 100 B", "json": "JSON records of ~150 B, 8 fields",
            "json_typed": "JSON records of ~150 B read into 8 typed fields",
            "avro_typed": "Confluent-framed Avro records of 8 fields read into typed fields",
            "protobuf_typed": "Confluent-framed Protobuf messages of 8 fields read into typed fields",
            SPARK_SCALE_SET: "x 100 B"}
    cases = []
    for ds, rates in sets.items():
        descriptions = {"poll_arrow": "pyconsumer poll_arrow in the driver process, no Spark"}
        peers = {}
        for name in rates:
            contender, _, workload = name.partition(" ")
            if workload:
                source = SPARK_TYPED_DESCRIPTIONS.get((ds, contender)) or SPARK_DESCRIPTIONS.get(contender, contender)
                descriptions[name] = f"{source}, {SPARK_WORKLOADS.get(workload, workload)}"
                # on a typed set the binary read is no peer of from_json / from_avro
                if f"kafka {workload}" in rates and not (ds in SPARK_TYPED_SETS and contender == "binary"):
                    peers[name] = f"kafka {workload}"
        notes = ["rates include planning and task start; every row crosses into the JVM (no source "
                 "prunes columns or pushes the count down)",
                 f"{connector}: Maven Central serves no connector for every PySpark release; "
                 "pyconsumer.testing.spark_kafka_version() names the one taken"]
        if ds in SPARK_TYPED_SETS:
            notes += ["the x format('kafka') column divides by Spark's source with from_json / from_avro / "
                      "from_protobuf; the x binary column by format('pyconsumer') of the same topic with "
                      "value left binary",
                      "count(): Spark drops from_json / from_avro / from_protobuf (no column is used), while the typed "
                      "source decodes every value (no source prunes)"]
            # a peer bench_spark.py had to leave out (a connector Maven Central does not serve)
            notes += [f"format('kafka') + {m[2]} is not in this table: {m[3]}" for m in re.finditer(
                r"^(\w+): format\('kafka'\) \+ (\w+) left out: (.*)$", stdout, re.M) if m[1] == ds]
            # a peer's jar from elsewhere than Maven Central (built here from Spark's source)
            notes += [f"format('kafka') + {m[2]}: its jar is not from Maven Central: {m[3]}" for m in re.finditer(
                r"^(\w+): format\('kafka'\) \+ (\w+) jar not from Maven Central: (.*)$", stdout, re.M)
                if m[1] == ds]
        elif ds == SPARK_SCALE_SET:
            notes.append("no target: issue 26 asks for the numbers (records/s and planning time on a "
                         "many-partition topic)")
            notes += spark_planning_notes(stdout, ds)
        else:
            notes.append("the targets divide by format('kafka') as users get it; kafka_tuned is the fairness check")
        columns = []
        if ds in SPARK_TYPED_SETS:      # the typed read against the binary read, same workload
            binary = {name: f"binary {name.partition(' ')[2]}" for name in rates
                      if name.startswith("pyconsumer ") and f"binary {name.partition(' ')[2]}" in rates}
            columns.append(("x binary, same workload", binary))
        cases.append(Case(
            f"spark-{ds}-{broker}",
            f"Broker -> Spark, {sizes[ds]:,} {what.get(ds, '')} over {partitions.get(ds, 6):,} partitions "
            f"(local[2], {connector})",
            rates, [r for r in ("poll_arrow",) if r in rates], descriptions, notes, broker, peers,
            columns=columns))
    return cases


def run_spark(quick: bool, rounds: int, broker: str, datasets: list[str] | None = None,
              scale_records: int | None = None) -> list[Case]:
    """bench_spark.py in its own process (a JVM and Spark's Python workers) on ``broker``;
    its round lines parsed. ``scale_records``: the scale set's records (spark_scale)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("spark: pyspark is not installed (pip install -e '.[spark]'): skipped", flush=True)
        return []
    if shutil.which("java") is None:
        print("spark: no java on PATH (Spark needs Java 17): skipped", flush=True)
        return []
    cmd = [sys.executable, str(HERE / "bench_spark.py"), "--broker", broker,
           "--rounds", str(rounds), "--wait-idle", "0"] + (["--quick"] if quick else []) \
        + (["--datasets", *datasets] if datasets else []) \
        + (["--scale-records", str(scale_records)] if scale_records else [])
    print("spark: " + shlex.join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"bench_spark.py failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-3000:]}")
    cases = spark_cases(proc.stdout, broker)
    if not cases:
        raise RuntimeError(f"bench_spark.py printed no round lines:\n{proc.stdout[-3000:]}")
    return cases


#: the tables case's targets: (label, row, reference row, wanted ratio), per data set
TABLES_TARGETS = (
    ("Arrow writer into Delta vs format('kafka') into Spark's Delta writer", "arrow_delta", "kafka_delta", 4.0),
    ("Arrow writer into Delta vs format('pyconsumer') into Spark's Delta writer", "arrow_delta",
     "pyconsumer_delta", 2.0),
    ("Arrow writer into Delta vs poll_arrow in the driver", "arrow_delta", "poll_arrow", 0.5),
)
TABLES_DESCRIPTIONS = {
    "arrow_delta": "ingest --table-format delta: Spark tasks write the files from Arrow, one Delta commit",
    "arrow_iceberg": "ingest --table-format iceberg: the same into Iceberg (pyiceberg, SQLite catalog)",
    "arrow_parquet": "ingest --table-format parquet: the same into Parquet with pyconsumer's commit log",
    "kafka_delta": "format('kafka') into Spark's Delta writer (delta-spark)",
    "pyconsumer_delta": "format('pyconsumer') into Spark's Delta writer (delta-spark)",
    "kafka_parquet": "format('kafka') into Spark's Parquet writer",
    "poll_arrow": "pyconsumer poll_arrow in the driver process, no Spark, no table",
}


def tables_cases(stdout: str, broker: str) -> list[Case]:
    """The tables cases from bench_tables.py's output: one per data set, each Arrow-writer row's
    peer Spark's own route into the same format where there is one."""
    m = re.search(r"^spark kafka connector: (\S+) \(PySpark (\S+)\)", stdout, re.M)
    connector = f"Spark's Kafka connector {m[1]} in PySpark {m[2]}" if m else "Spark's Kafka connector"
    sets: dict[str, dict[str, list[float]]] = {}
    sizes: dict[str, int] = {}
    for r in re.finditer(r"^round \d+ (\w+) (\w+)\s+([\d,]+) records\s+([\d.]+) s", stdout, re.M):
        n = int(r[3].replace(",", ""))
        sets.setdefault(r[1], {}).setdefault(r[2], []).append(n / float(r[4]))
        sizes[r[1]] = n
    memory: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for r in re.finditer(r"^memory round \d+ (\w+) (\w+): worker (\d+) MB, jvm (\d+) MB", stdout, re.M):
        w, j = memory.setdefault(r[1], {}).setdefault(r[2], ([], []))
        w.append(float(r[3]))
        j.append(float(r[4]))
    what = {"bytes": "x 100 B", "avro_typed": "Confluent-framed Avro records of 8 fields, typed columns"}
    cases = []
    for ds, rates in sets.items():
        peers = {name: peer for name, peer in (("arrow_delta", "kafka_delta"),
                                               ("arrow_parquet", "kafka_parquet"),
                                               ("pyconsumer_delta", "kafka_delta"))
                 if name in rates and peer in rates}
        columns = [("x format('pyconsumer') into Spark's Delta",
                    {name: "pyconsumer_delta" for name in rates if name.startswith("arrow_")
                     and "pyconsumer_delta" in rates})]
        notes = ["each run from the earliest to the latest offsets into a fresh table, counted back by "
                 "deltalake / pyiceberg / pyarrow; rates include Spark's planning and task start",
                 f"{connector}; Spark's Delta writer from delta-spark "
                 "(pyconsumer.testing.delta_spark_jars())"]
        if memory.get(ds):
            notes.append("peak resident memory, largest of the rounds: " + "; ".join(
                f"{name} worker {max(w):.0f} MB, JVM {max(j):.0f} MB" for name, (w, j) in memory[ds].items()))
        cases.append(Case(
            f"tables-{ds}-{broker}",
            f"Broker -> tables, {sizes[ds]:,} {what.get(ds, '')} over 6 partitions (local[2])",
            rates, [r for r in ("poll_arrow",) if r in rates], dict(TABLES_DESCRIPTIONS), notes, broker,
            peers, peer_label="x format('kafka') into the same format", columns=columns))
    return cases


def run_tables(quick: bool, rounds: int, broker: str) -> list[Case]:
    """bench_tables.py in its own process on ``broker``; its round lines parsed."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("tables: pyspark is not installed (pip install -e '.[spark]'): skipped", flush=True)
        return []
    if shutil.which("java") is None:
        print("tables: no java on PATH (Spark needs Java 17): skipped", flush=True)
        return []
    cmd = [sys.executable, str(HERE / "bench_tables.py"), "--broker", broker,
           "--rounds", str(rounds), "--wait-idle", "0"] + (["--quick"] if quick else [])
    print("tables: " + shlex.join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"bench_tables.py failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-3000:]}")
    print(proc.stdout, flush=True)
    cases = tables_cases(proc.stdout, broker)
    if not cases:
        raise RuntimeError(f"bench_tables.py printed no round lines:\n{proc.stdout[-3000:]}")
    return cases


# ------------------------------------------------------------------ the report

def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine(broker_descriptions: list[str]) -> list[tuple[str, str]]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GB"
    except (OSError, ValueError, IndexError):
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                                text=True).stdout.strip() or "?"
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE,
                                capture_output=True, text=True).stdout.splitlines()
        # the suite's own outputs (rewritten by this very run) do not make the code dirty
        dirty = [line for line in status
                 if not line[3:].startswith(("benchmarks/RESULTS.md", "benchmarks/results/"))]
        commit += " (with uncommitted changes)" if dirty else ""
    except OSError:
        commit = "?"
    try:
        import confluent_kafka
        librdkafka = confluent_kafka.libversion()[0]
    except ImportError:
        librdkafka = "?"
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return [
        ("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("commit", commit),
        ("CPU", f"{cpu}, {os.cpu_count()} logical cores, {mem} RAM"),
        ("load average at the start", f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("Python", sys.version.split()[0]),
        ("pyconsumer", _version("pyconsumer")),
        ("confluent-kafka", f"{_version('confluent-kafka')} (librdkafka {librdkafka})"),
        ("aiokafka", _version("aiokafka")),
        ("kafka-python", _version("kafka-python")),
        ("kafkarrow", _version("kafkarrow")),
        ("pyarrow", _version("pyarrow")),
        ("pyspark", _version("pyspark")),
    ] + [("broker", d) for d in broker_descriptions]


#: the end-to-end targets of the issue: (label, contender, reference, wanted ratio)
E2E_TARGETS = (
    ("poll_arrow vs the raw Fetch loop", "pc_arrow", "raw_fetch", 1.0),
    ("poll() vs the raw Fetch loop", "pc_poll", "raw_fetch", 0.8),
    ("poll_arrow vs confluent-kafka consume(10000)", "pc_arrow", "ck_consume", 3.0),
    ("poll_arrow vs kafkarrow", "pc_arrow", "kr_arrow", 5.0),
)
#: issue 25's decode-alone targets: (label, contender, reference, wanted ratio) of the Avro table
VALUES_TARGETS = (
    ("decode_avro (Confluent framing) vs pyruhvro", "pc_avro_confluent", "pyruhvro", 1.0),
    ("decode_avro (bare bodies) vs pyruhvro", "pc_avro_none", "pyruhvro", 1.0),
    ("decode_avro (Confluent framing) vs confluent-kafka's AvroDeserializer", "pc_avro_confluent", "ck_avro", 50.0),
)
#: issue 39's: the Protobuf table's
PROTOBUF_VALUES_TARGETS = (
    ("decode_protobuf (Confluent framing) vs ptars", "pc_protobuf_confluent", "ptars", 1.0),
    ("decode_protobuf (Confluent framing) vs confluent-kafka's ProtobufDeserializer",
     "pc_protobuf_confluent", "ck_protobuf", 50.0),
)
BROKER_TITLES = {"kafka": "Apache Kafka", "tansu": "Tansu"}
#: --baseline: the ratio column's heading, and "not slower" within the machine's per-round noise
BASELINE_LABEL = "x the baseline build"
NOT_SLOWER = 0.95


def targets(cases: dict[str, Case]) -> list[tuple[str, str, str, str, str]]:
    """(target, broker, wanted, measured, met/missed) for the issue's numbers this run measured;
    the end-to-end ones per broker (the issue's are those on Apache Kafka)."""
    rows = []

    def add(label: str, case: str, name: str, ref: str, want: float) -> None:
        c = cases.get(case)
        r = c.ratio(name, ref) if c else None
        if c is not None and r is not None:
            rows.append((label, BROKER_TITLES.get(c.broker, "-"), f">= {want:g}x", f"{r:.2f}x",
                         "met" if r >= want else "missed"))

    add("decode_arrow vs aiokafka's reader, 100 B, none", "decode_none", "pc_arrow", "aio_c", 8)
    add("decode_arrow vs aiokafka's reader, 100 B, lz4", "decode_lz4", "pc_arrow", "aio_c", 4.5)
    add("take_records in 500s vs aiokafka's reader, none", "decode_none", "pc_fetch500", "aio_c", 2.5)
    add("decode_records vs aiokafka's reader, none", "decode_none", "pc_records", "aio_c", 1.5)
    add("decode_records vs aiokafka's reader keeping every record, none", "decode_none", "pc_records",
        "aio_c_all", 1.5)
    for label, name, ref, want in VALUES_TARGETS:
        add(label, "values_avro", name, ref, want)
    for label, name, ref, want in PROTOBUF_VALUES_TARGETS:
        add(label, "values_protobuf", name, ref, want)
    for broker in ("kafka", "tansu"):
        for p in (1, 6):
            for label, name, ref, want in E2E_TARGETS:
                add(f"{label}, {p} partition(s)", f"e2e{p}-{broker}", name, ref, want)
    for broker in ("kafka", "tansu"):
        for ds in ("bytes", "json"):
            for workload, want in SPARK_TARGETS.items():
                add(f"Spark {ds}: format('pyconsumer') vs format('kafka'), {workload}",
                    f"spark-{ds}-{broker}", f"pyconsumer {workload}", f"kafka {workload}", want)
            for workload in ("noop", "count"):
                add(f"Spark {ds}: format('pyconsumer') {workload} vs poll_arrow in the driver",
                    f"spark-{ds}-{broker}", f"pyconsumer {workload}", "poll_arrow", SPARK_POLL_ARROW_TARGET)
    for broker in ("kafka", "tansu"):
        for ds, fn in (("json_typed", "from_json"), ("avro_typed", "from_avro"),
                       ("protobuf_typed", "from_protobuf")):
            for workload in ("noop", "count", "fields", "parquet"):
                add(f"Spark {ds}: typed format('pyconsumer') vs format('kafka') + {fn}, {workload}",
                    f"spark-{ds}-{broker}", f"pyconsumer {workload}", f"kafka {workload}", SPARK_TYPED_TARGET)
            for workload in ("noop", "count", "parquet"):
                add(f"Spark {ds}: typed format('pyconsumer') vs its binary read, {workload}",
                    f"spark-{ds}-{broker}", f"pyconsumer {workload}", f"binary {workload}", SPARK_TYPED_VS_BINARY)
    for broker in ("kafka", "tansu"):
        add("poll_arrow vs confluent-kafka, 1,000 partitions", f"scale1000-{broker}", "pc_arrow", "ck_consume", 2.0)
        add("poll_arrow vs the raw Fetch loop, 1,000 partitions", f"scale1000-{broker}", "pc_arrow", "raw_fetch", 0.9)
        # proposed with issue 26's note: the loop that also decodes its answers into the same
        # Arrow (raw_arrow) does the least a consumer handing out Arrow must do
        add("poll_arrow vs the raw loop decoding into Arrow, 1,000 partitions (proposed)",
            f"scale1000-{broker}", "pc_arrow", "raw_arrow", 1.0)
    for broker in ("kafka", "tansu"):
        for ds, title in (("bytes", "100 B"), ("avro_typed", "Avro")):
            for label, name, ref, want in TABLES_TARGETS:
                add(f"Tables, {title}: {label}", f"tables-{ds}-{broker}", name, ref, want)
    for c in cases.values():
        rows += [(label, BROKER_TITLES.get(c.broker, "-"), want, got, met) for label, want, got, met in c.extra_targets]
    for c in cases.values():    # --baseline: this tree against the baseline commit, same rounds
        if c.peer_label == BASELINE_LABEL:
            for name, base in c.peers.items():
                r = c.ratio(name, base)
                if r is not None:
                    rows.append((f"{name} ({c.name}) vs the baseline build", BROKER_TITLES.get(c.broker, "-"),
                                 f">= {NOT_SLOWER:g}x", f"{r:.2f}x", "met" if r >= NOT_SLOWER else "missed"))
    return rows


def charts(cases: list[Case], out: Path) -> list[Path]:
    try:
        import matplotlib
    except ImportError:
        print("charts: matplotlib is not installed (pip install -e '.[bench]'): none drawn", flush=True)
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for c in cases:
        names = list(c.rates)
        best = [max(c.rates[k]) / 1e6 for k in names]
        ratio_refs = c.references[:3]
        fig, axes = plt.subplots(1, 1 + len(ratio_refs), figsize=(5.5 + 4.5 * len(ratio_refs), 4.2),
                                 squeeze=False)
        ax = axes[0][0]
        colors = ["#1f77b4" if k.startswith("pc_") or k.startswith("source") else "#7f7f7f" for k in names]
        ax.barh(names[::-1], best[::-1], color=colors[::-1])
        ax.set_xlabel("M records/s (best round)")
        for i, v in enumerate(best[::-1]):
            ax.text(v, i, f" {v:.2f}", va="center", fontsize=8)
        ax.set_title("records/s", fontsize=10)
        for j, ref in enumerate(ratio_refs, start=1):
            ax = axes[0][j]
            vals = [c.ratio(k, ref) or 0.0 for k in names]
            ax.barh(names[::-1], vals[::-1], color=colors[::-1])
            ax.axvline(1.0, color="black", linewidth=0.8)
            for i, v in enumerate(vals[::-1]):
                ax.text(v, i, f" {v:.2f}x", va="center", fontsize=8)
            ax.set_xlabel(f"x {ref} (median of per-round ratios)")
            ax.set_title(f"ratio to {ref}", fontsize=10)
        fig.suptitle(c.title, fontsize=11)
        fig.tight_layout()
        path = out / f"{c.name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_results(path: Path, cases: list[Case], pngs: list[Path], command: str, elapsed: float,
                  quick: bool, broker_descriptions: list[str] | None = None) -> None:
    by_name = {c.name: c for c in cases}
    lines = ["# Benchmark results", "",
             "Written by the suite (`benchmarks/__main__.py`); do not edit by hand. Earlier, "
             "hand-run measurements and their analysis are in [HISTORY.md](HISTORY.md).", "",
             f"Command: `{command}` ({elapsed / 60:.1f} min{', quick mode: small sets, one round' if quick else ''})",
             "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in machine(broker_descriptions or [])]
    lines += ["", "Rates are records/s over a whole read (connect, first fetch and the last partial "
              "batch included). Ratios are the median over rounds of the per-round ratio, so a "
              "shared machine's drift cancels; every contender runs once per round, in an order "
              "rotated from round to round. Each broker read runs with the harness's own objects "
              "frozen out of the garbage collector's reach (gc.freeze), so a contender's collections "
              "walk only what it made.", ""]
    rows = targets(by_name)
    if rows:
        lines += ["## Targets (issues 14, 25 and 26)", "",
                  "The end-to-end targets are the issue's on Apache Kafka; Tansu's rows are for comparison.", "",
                  "| target | broker | wanted | measured | met |", "|---|---|---|---|---|"]
        lines += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows]
        lines.append("")
    section = None
    for c in cases:
        if c.broker and c.broker != section:
            section = c.broker
            lines += [f"# On {BROKER_TITLES.get(c.broker, c.broker)}", ""]
        lines += [f"## {c.title}", ""]
        refs = c.references
        peer = ([c.peer_label] if c.peers else []) + [label for label, _ in c.columns]
        lines.append("| contender | what | records/s best | records/s median | "
                     + " | ".join(peer + [f"x {r}" for r in refs]) + " |")
        lines.append("|---|---|---:|---:|" + "---:|" * (len(refs) + len(peer)))
        for k, rs in c.rates.items():
            ratios = (([c.peer_ratio(k)] if c.peers else [])
                      + [c.ratio(k, col[k]) if k in col else None for _, col in c.columns]
                      + [c.ratio(k, r) for r in refs])
            lines.append(f"| {k} | {c.descriptions.get(k, '')} | {max(rs):,.0f} | {statistics.median(rs):,.0f} | "
                         + " | ".join("-" if x is None else f"{x:.2f}" for x in ratios) + " |")
        lines.append("")
        lines += [f"- {n}" for n in c.notes]
        png = path.parent / "results" / f"{c.name}.png"
        if png in pngs:
            lines += ["", f"![{c.title}](results/{c.name}.png)"]
        lines.append("")
    path.write_text("\n".join(lines))


def _parse_results(text: str) -> tuple[list[str], dict[tuple[str, str], tuple[str, ...]],
                                        list[tuple[str, list[str]]]]:
    """A RESULTS.md in parts: the lines before the targets table (or the first case), the
    targets rows by (target, broker), and its groups of "## <case>" sections (each a string of
    lines, heading first) in file order: the cases that use no broker (heading ""), then each
    "# On <broker>" group, a heading that comes twice (the Spark cases' Kafka group) twice."""
    lines = text.splitlines()
    head: list[str] = []
    rows: dict[tuple[str, str], tuple[str, ...]] = {}
    i = 0
    while i < len(lines) and not lines[i].startswith(("## Targets", "## ", "# On ")):
        head.append(lines[i])
        i += 1
    if i < len(lines) and lines[i].startswith("## Targets"):
        i += 1
        while i < len(lines) and not lines[i].startswith(("## ", "# On ")):
            cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            if lines[i].startswith("| ") and len(cells) == 5 and cells[0] != "target" \
                    and not lines[i].startswith("|---"):
                rows[(cells[0], cells[1])] = tuple(cells)
            i += 1
    groups: list[tuple[str, list[str]]] = [("", [])]
    for line in lines[i:]:
        if line.startswith("# On "):
            groups.append((line, []))
        elif line.startswith("## "):
            groups[-1][1].append(line)
        elif groups[-1][1]:
            groups[-1][1][-1] += "\n" + line
    return head, rows, [g for g in groups if g[0] or g[1]]


_MERGED = ("Merged (--merge): the cases this command ran replace theirs; the other sections and "
           "target rows are as in the RESULTS.md before, from the earlier runs: ")


def merge_note(previous: str) -> str:
    """The line saying where a merged RESULTS.md's kept sections come from: the run that wrote
    ``previous`` and, when that was a merge itself, the earlier runs it names (a chain of
    merges keeps naming the full run the untouched sections are from)."""
    before = previous.split("Command: `", 1)[-1].split("`", 1)[0]
    when = next((line.split("|")[2].strip() for line in previous.splitlines()
                 if line.startswith("| date |")), "?")
    commit = next((line.split("|")[2].strip() for line in previous.splitlines()
                   if line.startswith("| commit |")), "?")
    runs = [f"`{before}` ({when}, commit {commit})"]
    for line in previous.splitlines():
        if line.startswith(_MERGED):
            runs += [r for r in line[len(_MERGED):].rstrip(".").split("; ") if r not in runs]
        elif line.startswith("Merged (--merge):") and "from the earlier run " in line:
            older = line.split("from the earlier run ", 1)[1].rstrip(".")       # the first format
            if older not in runs:
                runs.append(older)
    return _MERGED + "; ".join(runs) + "."


def merge_results(old: str, new: str, note: str) -> str:
    """``new`` (a run of some cases) merged into ``old`` (an earlier RESULTS.md): the new run's
    header, then ``note``; its targets rows in place of the old rows of the same target and
    broker (the other old rows kept, in their order); each of its case sections in place of
    the old section of the same title (titles name the broker), where that one stood; the
    other old sections kept where they were; a new section with no old one at the end of the
    last group of its heading (a new group at the end if there is none)."""
    new_head, new_rows, new_groups = _parse_results(new)
    _, old_rows, old_groups = _parse_results(old)
    rows = {**old_rows, **{k: v for k, v in new_rows.items() if k in old_rows}}
    rows.update({k: v for k, v in new_rows.items() if k not in old_rows})

    def title(section: str) -> str:
        return section.split("\n", 1)[0]

    fresh = {title(sec): sec for _, sections in new_groups for sec in sections}
    placed: set[str] = set()
    groups: list[tuple[str, list[str]]] = []
    for heading, sections in old_groups:
        kept = []
        for sec in sections:
            if title(sec) in fresh:
                placed.add(title(sec))
                kept.append(fresh[title(sec)])
            else:
                kept.append(sec)
        groups.append((heading, kept))
    for heading, sections in new_groups:
        added = [sec for sec in sections if title(sec) not in placed]
        if not added:
            continue
        same = [g for g in groups if g[0] == heading]
        if same:
            same[-1][1].extend(added)
        else:
            groups.append((heading, added))
    lines = list(new_head)
    while lines and not lines[-1]:
        lines.pop()
    lines += ["", note, ""]
    if rows:
        lines += ["## Targets (issues 14, 25 and 26)", "",
                  "The end-to-end targets are the issue's on Apache Kafka; Tansu's rows are for comparison.", "",
                  "| target | broker | wanted | measured | met |", "|---|---|---|---|---|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows.values()]
        lines.append("")
    for heading, sections in groups:
        if heading:
            lines += [heading, ""]
        for sec in sections:
            lines.append(sec.rstrip("\n"))
            lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------ main

def brokers_for_spark(choice: str) -> str:
    """The one broker the Spark case runs on: Apache Kafka unless only Tansu was chosen
    (Spark's own source is compared on Kafka; Tansu's short ListOffsets(latest) misleads it)."""
    import brokers
    return "kafka" if "kafka" in brokers.selected(choice) else "tansu"


def chosen_cases(named: list[str] | None, quick: bool) -> list[str]:
    """The cases to run: those ``--cases`` names, else all (but the Spark ones with --quick)."""
    return list(named) if named else [c for c in CASES if c not in SLOW_CASES or not quick]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sets, one round: a minute or two")
    ap.add_argument("--cases", nargs="*", choices=CASES, default=None,
                    help="which cases (default: all; spark and spark_scale only when pyspark and "
                         "Java are there, and not with --quick)")
    ap.add_argument("--broker", choices=["kafka", "tansu", "both"], default="both",
                    help="the broker(s) of the end-to-end cases, one after the other (default both)")
    ap.add_argument("--only", nargs="*", default=None, metavar="CONTENDER",
                    help="only these contenders (the references of each case always run)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per case (default 3, --quick 1)")
    ap.add_argument("--records", type=int, default=None,
                    help="records per end-to-end topic (and of spark_scale's topic)")
    ap.add_argument("--spark-datasets", nargs="*", default=None, choices=SPARK_DATASETS, metavar="SET",
                    help="the spark case's data sets (default: " + " ".join(SPARK_DATASETS[:-1])
                         + f"; {SPARK_SCALE_SET} is the spark_scale case's)")
    ap.add_argument("--out", type=Path, default=HERE, help="where RESULTS.md and results/ go")
    ap.add_argument("--merge", action="store_true",
                    help="keep the sections and target rows of cases not run here from the RESULTS.md "
                         "already in --out (this run's replace theirs)")
    ap.add_argument("--baseline", metavar="REV", default=None,
                    help="also run the decoder and the pyconsumer end-to-end contenders as built from "
                         "this commit, in the same rounds (an 'x the baseline build' column)")
    args = ap.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    chosen = chosen_cases(args.cases, args.quick)
    only = None if args.only is None else list(args.only) + ["aio_c", "raw_fetch", "ck_consume", "kr_arrow"]
    command = "python -m benchmarks " + shlex.join(argv if argv is not None else sys.argv[1:])
    start = time.perf_counter()

    base = None
    if args.baseline:
        import baseline
        base = baseline.prepare(args.baseline)
    cases: list[Case] = []
    if "decode" in chosen:
        cases += run_decode(args.quick, rounds, only, base)
    if "values" in chosen:
        cases += run_values(args.quick, rounds, args.only, args.records)
    e2e = [(int(m[1]), m[2] or "none") for m in (re.fullmatch(r"e2e(\d+)(\D*)", c) for c in chosen)
           if m is not None]
    described: list[str] = []
    if e2e or "scale" in chosen:
        import brokers
        for key in brokers.selected(args.broker):
            t0 = time.perf_counter()
            with brokers.start(key) as broker:
                print(f"{broker.title} up in {time.perf_counter() - t0:.1f} s at {broker.bootstrap}", flush=True)
                described.append(broker.description)
                for p, codec in e2e:
                    cases.append(run_e2e(broker, p, args.quick, rounds, only, args.records, codec, base))
                if "scale" in chosen:
                    cases += run_scale(broker, args.quick, rounds, only, args.records)
    if "spark" in chosen:
        # on Apache Kafka whenever it is chosen (format("kafka") needs a true ListOffsets)
        picked = brokers_for_spark(args.broker)
        cases += run_spark(args.quick, rounds, picked, args.spark_datasets)
    if "spark_scale" in chosen:
        # a SparkSession of its own, after the spark case's has gone
        cases += run_spark(args.quick, rounds, brokers_for_spark(args.broker), [SPARK_SCALE_SET], args.records)
    if "tables" in chosen:
        cases += run_tables(args.quick, rounds, brokers_for_spark(args.broker))

    args.out.mkdir(parents=True, exist_ok=True)
    pngs = charts(cases, args.out / "results")
    results = args.out / "RESULTS.md"
    previous = results.read_text() if args.merge and results.exists() else None
    write_results(results, cases, pngs, command.strip(), time.perf_counter() - start, args.quick, described)
    if previous is not None:
        results.write_text(merge_results(previous, results.read_text(), merge_note(previous)))
    print(f"wrote {results} and {len(pngs)} chart(s) in {args.out / 'results'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
