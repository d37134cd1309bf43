"""Spark benchmark on Apache Kafka: ``format("pyconsumer")`` against Spark's own Kafka source.

One broker (``--broker kafka``, the default: Apache Kafka 4.2.2 via benchmarks/brokers.py with
the broker's default threads and heap; or ``tansu``), two topics filled once by confluent-kafka
(keys ``k%09d``, round-robin over 6 partitions, no compression):

* ``bytes``  5M records of 100-byte values (not all alike, so Parquet sees realistic bytes)
* ``json``   1M JSON objects of ~150 bytes with 8 fields of mixed types (id long, user string,
             amount double, qty int, active boolean, ts timestamp string, score double,
             country string)
* ``json_typed``  the json set's topic (filled once) read into typed columns (issue 25)
* ``avro_typed``  1M Avro records of the same 8 fields (ts a timestamp-millis), written by
             confluent-kafka's AvroSerializer (``pyconsumer.testing.produce_avro``) against a
             Schema Registry (``--registry fake``: pyconsumer.testing's FakeSchemaRegistry in
             this process, the default; ``apicurio``: Apicurio Registry, a JVM), so each value
             is Confluent-framed (0x00 + the 4-byte schema id + the body)
* ``protobuf_typed``  1M Protobuf messages of the same 8 fields (ts a google.protobuf.Timestamp;
             the file built as a descriptor) written by confluent-kafka's ProtobufSerializer
             (``pyconsumer.testing.produce_protobuf``) against the same registry: 0x00 + the id +
             the message-index array (0x00) + the message (issue 39)
* ``scale``  1M records of 100-byte values (as ``bytes``) over 1,000 partitions
             (``--scale-records``, ``--scale-partitions``; issue 26): ``kafka`` and
             ``pyconsumer`` only, noop and count, and the planning time of each source (below).
             Not among the default data sets: ``python -m benchmarks --cases spark_scale`` runs it

One SparkSession (local[2], driver memory 4g, default JVM flags: not the tests' C1-only JIT)
with Spark's own Kafka connector on ``spark.jars`` (``pyconsumer.testing.spark_kafka_jars()``;
Maven Central serves no connector for PySpark 4.3.0, so 4.2.0 runs, as the output says).
Contenders, each with Spark's Kafka schema:

* ``kafka``       ``spark.read.format("kafka")``: Spark's own source (kafka-clients, JVM rows),
                  as users get it
* ``kafka_tuned`` the same with pyconsumer's reader's fetch sizes (``kafka.max.partition.fetch.
                  bytes`` 16 MB, ``kafka.fetch.max.bytes`` 64 MB) and ``kafka.max.poll.records``
                  100000 (default 500): a fairness check
* ``pyconsumer``  ``spark.read.format("pyconsumer")``: Arrow batches from the Cython decoder
* ``tuple``       a Python data source defined below, one tuple per record from
                  confluent-kafka's ``consume()`` (what users write today; librdkafka's
                  fetch.queue.backoff.ms at 10 ms and ``consume(min(10000, left))``, the tuned
                  reader of earlier runs, so its 1 s stalls do not dominate)
* ``arrow_mem``   ready Arrow batches of the bytes set's shape from memory, no Kafka at all
                  (noop, count, agg): what Spark's Python data source path alone costs, the
                  ceiling of any Python source, pyconsumer's included
* ``poll_arrow``  pyconsumer's ``KafkaConsumer.poll_arrow(max_records=100_000)`` over all
                  partitions in this (the driver's) process, no Spark: the ceiling the source is
                  held to

On the typed sets (issue 25) the contenders are, each giving Spark's Kafka schema with
``value`` a struct of the 8 fields:

* ``kafka``       ``format("kafka")`` + ``from_json(value, DDL)`` (json_typed) or
                  ``from_avro(substring(value, 6), schema)`` (avro_typed: the 5-byte framing
                  stripped, spark-avro from Maven Central on ``spark.jars``), or
                  ``from_protobuf(substring(value, 7), "bench.Event", <descriptor set file>)``
                  (protobuf_typed: the 6-byte framing stripped; spark-protobuf from Maven Central,
                  left out with a note where Maven Central does not serve it), as users write it
* ``pyconsumer``  ``format("pyconsumer")`` with ``valueFormat=json`` + ``valueSchema=<DDL>``, or
                  ``valueFormat=avro`` / ``protobuf`` + ``schema.registry.url`` (the reader schema the
                  subject's latest); the default bad-record mode (PERMISSIVE)
* ``binary``      ``format("pyconsumer")`` of the same topic, ``value`` left binary: what the
                  typed read costs over it

Workloads (each a whole Spark action, checked against what was produced):

* ``noop``     ``df.write.format("noop").mode("overwrite").save()``: every row read, nothing kept
* ``count``    ``df.count()`` (no pushdown into either source: every record is read)
* ``agg``      ``groupBy("partition").agg(sum(length("value")))`` (checked: the bytes produced)
* ``json``     ``from_json`` into the 8 typed fields, then per country: count, sums of id, qty,
               amount and of ``active``, max of score and ts, summed user lengths (all fields
               used, so Spark cannot prune the parser; checked against the producer's numbers)
* ``fields``   typed sets: the json workload's aggregate over ``value.*`` (checked likewise)
* ``parquet``  ``df.write.parquet`` (bytes set: the Kafka rows, like ``pyconsumer ingest``; json
               set and typed sets: the 8 parsed fields with partition and offset; ``binary`` on
               a typed set: the Kafka rows); row count checked afterwards

Planning (the ``scale`` set, both sources; no target, the issue asks for the numbers):

* ``plan``         a separate action per source and round: from just before ``load()`` until
                   ``df.rdd.getNumPartitions()`` returns. The driver resolves the schema, looks up
                   every partition's offsets, plans one task per partition (the source's
                   ``partitions()`` in Spark's Python planner for ``pyconsumer``; KafkaRelation's
                   offset lookup for ``kafka``) and builds the RDD; no task runs. Printed as
                   ``plan round R <set> <contender>: S s, T tasks``.
* ``first stage``  inside each timed noop/count action: from just before ``load()`` to the
                   submission time of the action's first stage as Spark's status tracker records
                   it (the action's jobs run under their own job group): the same planning plus
                   the DAG scheduler's, paid as users pay it. Printed as ``first stage round R
                   <set> <contender> <workload>: S s after the action's start``.

On the typed sets ``count()`` lets Spark drop ``from_json`` / ``from_avro`` (nothing uses their
column), while a source's typed column is decoded whether used or not (no source prunes).

Before the rounds an untimed warm-up runs every contender and workload on a fifth of the data
(JIT of Spark's Arrow, Kafka and Parquet paths, Python workers, pyconsumer's consumer cache).
Spark's source names each query's consumers by a new group id, so its executor consumer pool
holds them but a next query does not reuse them; pyconsumer's cache is keyed by settings and
is reused. Rounds are interleaved (every round runs every case once); rates are records/s over
the whole action (planning and task start included). The summary gives best and median, the
median of per-round ratios pyconsumer / kafka per workload, and source / poll_arrow.

Each round line also gives the CPU seconds (from /proc) of the broker, the JVM, Spark's Python
processes and the driver, and of other processes on the machine: on a shared machine
``--wait-idle S`` waits before each case until the cores are idle.

``--profile`` adds one timed read per source and workload on the bytes set: a wrapper source
times each task's ``read_range`` (time inside the generator) against the time Spark holds a
yielded batch, with cProfile inside the workers (``--cprofile``), an in-memory Arrow source
that yields ready batches (Spark's Python-to-JVM Arrow path with no Kafka at all), and
``read_range`` alone in the driver.

    python benchmarks/bench_spark.py --rounds 3 --profile
    python benchmarks/bench_spark.py --quick
    python benchmarks/bench_spark.py --datasets json_typed avro_typed --json-records 100000 \
        --avro-records 100000 --rounds 1
    python benchmarks/bench_spark.py --datasets scale --scale-records 100000 --rounds 1
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import io
import json
import math
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

import brokers       # this folder is sys.path[0]: a script, run as one
import gen_data      # (the same folder)
from bench_consume import produce_bulk
from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.spark.source import KafkaDataSource

KAFKA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
             "timestamp timestamp, timestampType int")
JSON_DDL = ("id long, user string, amount double, qty int, active boolean, ts timestamp, "
            "score double, country string")
COUNTRIES = ("DE", "FR", "US", "JP", "BR", "IN", "NG", "CA")
CONTENDERS = ("kafka", "kafka_tuned", "pyconsumer", "tuple", "arrow_mem", "binary")
#: the typed sets (issue 25): Spark's source + from_json/from_avro, the typed source, its binary read
TYPED_SETS = ("json_typed", "avro_typed", "protobuf_typed")
TYPED_CONTENDERS = ("kafka", "pyconsumer", "binary")
#: the avro_typed set's records: the json set's 8 fields, ts as Avro's timestamp-millis
AVRO_SCHEMA: dict[str, Any] = {"type": "record", "name": "Event", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "user", "type": "string"},
    {"name": "amount", "type": "double"}, {"name": "qty", "type": "int"},
    {"name": "active", "type": "boolean"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "score", "type": "double"}, {"name": "country", "type": "string"}]}
#: the protobuf_typed set's message: the json set's 8 fields (name, FieldDescriptorProto type,
#: message type), ts a Timestamp
PROTOBUF_FIELDS = (("id", 3, ""), ("user", 9, ""), ("amount", 1, ""), ("qty", 5, ""),
                   ("active", 8, ""), ("ts", 11, ".google.protobuf.Timestamp"), ("score", 1, ""),
                   ("country", 9, ""))
PROTOBUF_MESSAGE = "bench.Event"
#: (set, contender) pairs that cannot run here, with why (a connector Maven Central lacks)
UNAVAILABLE: dict[tuple[str, str], str] = {}
#: kafka_tuned: Spark's own source given what pyconsumer's reader sets by default (fetch sizes)
#: and more records per kafka-clients poll (default 500): a third of its JVM CPU and a tenth of
#: the broker's on 2M x 100 B
KAFKA_TUNED = {"kafka.max.partition.fetch.bytes": str(16 << 20),
               "kafka.fetch.max.bytes": str(64 << 20), "kafka.max.poll.records": "100000"}
#: arrow_mem (no Kafka) only where its rows can stand in for the topic's
ARROW_MEM_WORKLOADS = {"bytes": ("noop", "count", "agg")}
WORKLOADS = {"bytes": ("noop", "count", "agg", "parquet"),
             "json": ("noop", "count", "json", "parquet"),
             "json_typed": ("noop", "count", "fields", "parquet"),
             "avro_typed": ("noop", "count", "fields", "parquet"),
             "protobuf_typed": ("noop", "count", "fields", "parquet"),
             "scale": ("noop", "count")}
#: issue 26: the many-partition set, read by Spark's own source and ours, their planning timed
SCALE_SET = "scale"
SCALE_CONTENDERS = ("kafka", "pyconsumer")
#: what runs without --datasets: the scale set is its own suite case (spark_scale)
DEFAULT_DATASETS = tuple(ds for ds in WORKLOADS if ds != SCALE_SET)
#: a binary value has no fields to aggregate
BINARY_WORKLOADS = ("noop", "count", "parquet")


def maven_origin(jar: str, group: str = "org.apache.spark") -> str:
    """The repository the local Maven repository says ``jar`` (artifact-version.jar, copied
    from it) came from: "central", another id, or "" for one installed by hand (mvn install)
    or not found. A peer not from Maven Central is said beside its numbers."""
    name = Path(jar).name
    for marker in (Path.home() / ".m2" / "repository" / group.replace(".", "/")).glob(
            "*/*/_remote.repositories"):
        for line in marker.read_text().splitlines():
            if line.startswith(f"{name}>"):
                return line.split(">", 1)[1].rstrip("=")
    return ""


def runs(ds: str, contender: str, workload: str) -> bool:
    """Whether a contender runs a workload on a data set."""
    if ds == SCALE_SET:
        return contender in SCALE_CONTENDERS and workload in WORKLOADS[ds]
    if (ds, contender) in UNAVAILABLE:
        return False
    if ds in TYPED_SETS:
        return contender in TYPED_CONTENDERS and (contender != "binary" or workload in BINARY_WORKLOADS)
    if contender == "binary":
        return False
    return contender != "arrow_mem" or workload in ARROW_MEM_WORKLOADS.get(ds, ())


# ------------------------------------------------------------------------------ test data

@dataclass
class Dataset:
    """A filled topic and what a correct read of it gives."""

    name: str
    topic: str
    n: int
    partitions: int
    log_end: dict[int, int]
    value_bytes: int                     # sum of the values' lengths
    per_country: dict[str, dict[str, Any]] = field(default_factory=dict)   # json and typed sets
    registry_url: str = ""               # avro_typed, protobuf_typed: where the schema is registered
    descriptor_file: str = ""            # protobuf_typed: its descriptor set, for from_protobuf


def fill_bytes(bootstrap: str, topic: str, n: int, partitions: int, value_size: int) -> Dataset:
    rnd = random.Random(8)
    # values are not all alike, so Parquet (and its compression) sees realistic bytes
    pool = [bytes(rnd.getrandbits(8) for _ in range(max(0, value_size - 10)))
            for _ in range(4096)]
    produce_bulk(bootstrap, topic, n, partitions,
                 lambda i: (b"%010d" % i + pool[i & 4095])[:value_size],
                 linger_ms=50, batch_messages=100_000, queue_messages=2_000_000)
    return Dataset("bytes", topic, n, partitions, log_ends(bootstrap, topic, partitions, n),
                   n * value_size)


def json_value(i: int) -> tuple[bytes, dict[str, Any]]:
    """Record ``i`` of the json set: its bytes and its fields (for the expected results)."""
    h = (i * 2654435761) & 0xFFFFFFFF            # a cheap, fixed scramble of i
    f = {"id": i, "user": f"user-{h % 99991:05d}-{'abcdefghijklmnop'[: 4 + h % 13]}",
         "amount": (h % 1_000_000) / 100, "qty": h % 97, "active": h % 3 != 0,
         "ts": 1_700_000_000_000 + i * 7, "score": (h % 100_003) / 100_003,
         "country": COUNTRIES[h % len(COUNTRIES)]}
    ts = datetime.fromtimestamp(f["ts"] / 1000, tz=timezone.utc)
    stamp = ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"
    active = "true" if f["active"] else "false"
    text = (f'{{"id":{i},"user":"{f["user"]}","amount":{f["amount"]:.2f},"qty":{f["qty"]},'
            f'"active":{active},"ts":"{stamp}","score":{f["score"]!r},'
            f'"country":"{f["country"]}"}}')
    return text.encode(), f


def tally(per: dict[str, dict[str, Any]], f: dict[str, Any]) -> None:
    """Add one record's fields to the per-country expectations of the json/fields workloads."""
    e = per.setdefault(f["country"], {"n": 0, "ids": 0, "qty": 0, "amount": 0.0,
                                      "active": 0, "score": 0.0, "ts": 0, "user": 0})
    e["n"] += 1
    e["ids"] += f["id"]
    e["qty"] += f["qty"]
    e["amount"] += f["amount"]
    e["active"] += f["active"]
    e["score"] = max(e["score"], f["score"])
    e["ts"] = max(e["ts"], f["ts"])
    e["user"] += len(f["user"])


def fill_json(bootstrap: str, topic: str, n: int, partitions: int) -> Dataset:
    values: list[bytes] = []
    per: dict[str, dict[str, Any]] = {}
    for i in range(n):
        v, f = json_value(i)
        values.append(v)
        tally(per, f)
    produce_bulk(bootstrap, topic, n, partitions, values.__getitem__,
                 linger_ms=50, batch_messages=100_000, queue_messages=2_000_000)
    return Dataset("json", topic, n, partitions, log_ends(bootstrap, topic, partitions, n),
                   sum(map(len, values)), per)


def fill_avro(bootstrap: str, topic: str, n: int, partitions: int, registry_url: str) -> Dataset:
    """The json set's records as Confluent-framed Avro: confluent-kafka's AvroSerializer (which
    registers the schema under ``<topic>-value``) through pyconsumer.testing.produce_avro, keys
    ``k%09d``, record i to partition i % partitions (one produce call per partition and chunk,
    so the delivery reports of a million records are never held at once)."""
    import fastavro

    from pyconsumer.testing import produce_avro

    per: dict[str, dict[str, Any]] = {}
    schema = json.dumps(AVRO_SCHEMA)
    chunk = 100_000 * partitions
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        for p in range(partitions):
            ids = range(lo + p, hi, partitions)
            records = []
            for i in ids:
                f = json_value(i)[1]
                tally(per, f)
                records.append(f)
            if records:
                produce_avro(bootstrap, topic, records, schema, registry_url,
                             keys=[b"k%09d" % i for i in ids], partition=p, timeout=300.0,
                             linger_ms=50, batch_num_messages=100_000,
                             queue_buffering_max_messages=2_000_000, acks=1)
    # the framed values' size, estimated from 1,000 records written by fastavro (the agg
    # workload, which checks it exactly, does not run on this set)
    parsed_schema = fastavro.parse_schema(AVRO_SCHEMA)
    sample = range(0, n, max(1, n // 1000))
    body = 0
    for i in sample:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed_schema, json_value(i)[1])
        body += len(buf.getvalue())
    return Dataset("avro_typed", topic, n, partitions, log_ends(bootstrap, topic, partitions, n),
                   n * 5 + body * n // len(sample), per, registry_url)


def protobuf_descriptor_set() -> bytes:
    """The serialized FileDescriptorSet of ``bench/event.proto`` (:data:`PROTOBUF_MESSAGE`, the
    fields of :data:`PROTOBUF_FIELDS`) with the Timestamp file it imports."""
    return gen_data.event_descriptor_set(PROTOBUF_FIELDS)


def fill_protobuf(bootstrap: str, topic: str, n: int, partitions: int, registry_url: str,
                  work: str) -> Dataset:
    """The json set's records as Confluent-framed Protobuf: confluent-kafka's ProtobufSerializer
    (registering ``bench/event.proto`` under ``<topic>-value``) through
    pyconsumer.testing.produce_protobuf, keys ``k%09d``, record i to partition i % partitions
    (one produce call per partition and chunk); the descriptor set written to ``work`` for
    from_protobuf."""
    from pyconsumer.testing import message_classes, produce_protobuf

    described = protobuf_descriptor_set()
    path = os.path.join(work, "bench-event.desc")
    with open(path, "wb") as out:
        out.write(described)
    event = message_classes(described)[PROTOBUF_MESSAGE]
    per: dict[str, dict[str, Any]] = {}
    body = 0
    chunk = 100_000 * partitions
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        for p in range(partitions):
            ids = range(lo + p, hi, partitions)
            records = []
            for i in ids:
                f = json_value(i)[1]
                tally(per, f)
                m = event(id=f["id"], user=f["user"], amount=f["amount"], qty=f["qty"],
                          active=f["active"], score=f["score"], country=f["country"])
                m.ts.seconds, m.ts.nanos = divmod(f["ts"], 1000)[0], f["ts"] % 1000 * 1_000_000
                body += m.ByteSize()
                records.append(m)
            if records:
                produce_protobuf(bootstrap, topic, records, registry_url,
                                 keys=[b"k%09d" % i for i in ids], partition=p, timeout=300.0,
                                 linger_ms=50, batch_num_messages=100_000,
                                 queue_buffering_max_messages=2_000_000, acks=1)
    return Dataset("protobuf_typed", topic, n, partitions, log_ends(bootstrap, topic, partitions, n),
                   n * 6 + body, per, registry_url, path)


def log_ends(bootstrap: str, topic: str, partitions: int, n: int) -> dict[int, int]:
    """Every partition's log end (Tansu 0.6 answers ListOffsets(latest) short: the source's
    OffsetReader confirms ends with a fetch; the tuple reader is handed these)."""
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


# ------------------------------------------------------------------ the tuple reader users write

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
    (``{"0": 833334, ...}``), at most ``limitPerPartition`` records (warm-up), with
    librdkafka's fetch.queue.backoff.ms at 10 ms (default 1 s: a stall each time its queue
    passes queued.min.messages) and no more messages asked for than the range has left (else
    its last ``consume`` waits out the timeout)."""

    def __init__(self, options: dict[str, str]) -> None:
        lower = {k.lower(): v for k, v in options.items()}
        self.bootstrap = lower["bootstrap"]
        self.topic = lower["topic"]
        self.ends = {int(p): int(e) for p, e in json.loads(lower["endoffsets"]).items()}
        self.limit = int(lower.get("limitperpartition", -1))

    def _consumer(self) -> Any:
        from confluent_kafka import Consumer
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": "bench-tuple",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})

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
                msgs = c.consume(num_messages=min(10000, end - position), timeout=1.0)
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
    JSON line per task into the ``bench.profileDir`` option's directory; with
    ``bench.cprofile=true`` also cProfile's stats of the time inside, one file per task."""

    @classmethod
    def name(cls) -> str:
        return "bench_pyconsumer_timed"

    def reader(self, schema: Any) -> DataSourceReader:
        return TimedReader(super().reader(schema), self.options["bench.profileDir"],
                           self.options.get("bench.cprofile", "false") == "true")


class TimedReader(DataSourceReader):
    def __init__(self, inner: DataSourceReader, profile_dir: str, cprofile: bool) -> None:
        self.inner, self.profile_dir, self.cprofile = inner, profile_dir, cprofile

    def partitions(self) -> Any:
        return self.inner.partitions()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import cProfile
        prof = cProfile.Profile() if self.cprofile else None
        t_wall = time.time()
        t_start = time.perf_counter()
        cpu_start = time.process_time()
        it = iter(self.inner.read(partition))
        inside = time.perf_counter() - t_start
        cpu_inside = time.process_time() - cpu_start
        rows = batches = 0
        while True:
            t0, c0 = time.perf_counter(), time.process_time()
            if prof is not None:
                prof.enable()
            try:
                batch = next(it)
            except StopIteration:
                break
            finally:
                if prof is not None:
                    prof.disable()
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
        if prof is not None:
            prof.dump_stats(os.path.join(self.profile_dir, f"{os.getpid()}-{t_wall:.6f}.prof"))


class ArrowMemPartition(InputPartition):
    def __init__(self, index: int, rows: int) -> None:
        super().__init__((index, rows))
        self.index, self.rows = index, rows


class ArrowMemSource(DataSource):
    """Ready Arrow batches in Spark's Kafka schema, no Kafka: what Spark's Python data source
    path (worker -> JVM, Arrow -> rows) costs on its own, the ceiling of any Python source.
    Options: ``rows`` (a JSON list, rows per partition), ``topic``, ``valueSize``,
    ``batchRows``."""

    @classmethod
    def name(cls) -> str:
        return "bench_arrow_mem"

    def schema(self) -> str:
        return KAFKA_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return ArrowMemReader(self.options)


class ArrowMemReader(DataSourceReader):
    def __init__(self, options: Any) -> None:         # Spark's case-insensitive options
        self.rows = [int(r) for r in json.loads(options["rows"])]
        self.topic = options["topic"]
        self.value_size = int(options["valueSize"])
        self.batch_rows = int(options["batchRows"])

    def partitions(self) -> list[InputPartition]:
        return [ArrowMemPartition(i, rows) for i, rows in enumerate(self.rows)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        from pyconsumer.records import kafka_arrow_schema
        assert isinstance(partition, ArrowMemPartition)
        k = self.batch_rows
        # built with vectorised calls (a few ms), so the worker's time is Spark's, not ours
        offsets = pa.array(range(k), pa.int64())
        digits = pc.utf8_lpad(pc.cast(offsets, pa.string()), 9, "0")
        keys = pc.cast(pc.binary_join_element_wise(pa.scalar("k"), digits, ""), pa.binary())
        batch = pa.RecordBatch.from_arrays([
            keys, pa.array([b"v" * self.value_size] * k, pa.binary()),
            pa.repeat(pa.scalar(self.topic, pa.string()), k),
            pa.repeat(pa.scalar(partition.index, pa.int32()), k), offsets,
            pa.repeat(pa.scalar(1_700_000_000_000_000, pa.timestamp("us", tz="UTC")), k),
            pa.repeat(pa.scalar(0, pa.int32()), k)], schema=kafka_arrow_schema(False))
        left = partition.rows
        while left > 0:
            take = min(k, left)
            yield batch if take == k else batch.slice(0, take)
            left -= take


# ------------------------------------------------------------------------------ contenders

def spark_source(spark: Any, fmt: str, bootstrap: str, ds: Dataset,
                 ends: dict[int, int] | None = None, **extra: str) -> Any:
    """``format(fmt)`` (``kafka`` or ``pyconsumer`` or a timed wrapper) over the dataset's
    topic, from the earliest offsets to ``ends`` (default: the latest)."""
    r = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", ds.topic))
    if ends is not None:
        r = r.option("endingOffsets", json.dumps({ds.topic: {str(p): e for p, e in ends.items()}}))
    for k, v in extra.items():
        r = r.option(k, v)
    return r.load()


def tuple_source(spark: Any, bootstrap: str, ds: Dataset, limit: int | None = None) -> Any:
    r = (spark.read.format(TupleKafkaSource.name()).option("bootstrap", bootstrap)
         .option("topic", ds.topic).option("endOffsets", json.dumps(ds.log_end)))
    if limit is not None:
        r = r.option("limitPerPartition", str(limit))
    return r.load()


def reader_of(spark: Any, contender: str, bootstrap: str, ds: Dataset,
              fraction: int | None = None) -> Any:
    """The contender's DataFrame over the whole topic, or over its first 1/``fraction``."""
    per = None if fraction is None else max(1, ds.n // fraction // ds.partitions)
    ends = None if per is None else {p: min(e, per) for p, e in ds.log_end.items()}
    if ds.name in TYPED_SETS:
        return typed_reader(spark, contender, bootstrap, ds, ends)
    if contender == "tuple":
        return tuple_source(spark, bootstrap, ds, per)
    if contender == "arrow_mem":
        return arrow_mem(spark, ds, ends or ds.log_end)
    if contender == "kafka_tuned":
        return spark_source(spark, "kafka", bootstrap, ds, ends, **KAFKA_TUNED)
    return spark_source(spark, contender, bootstrap, ds, ends)


def typed_reader(spark: Any, contender: str, bootstrap: str, ds: Dataset,
                 ends: dict[int, int] | None) -> Any:
    """A typed set's DataFrame: Spark's Kafka schema with ``value`` the 8 fields' struct
    (``kafka``: Spark's source + from_json / from_avro; ``pyconsumer``: our typed source),
    or our source's binary read (``binary``)."""
    if contender == "binary":
        return spark_source(spark, "pyconsumer", bootstrap, ds, ends)
    if contender == "pyconsumer":
        typed = ({"valueFormat": "json", "valueSchema": JSON_DDL} if ds.name == "json_typed" else
                 {"valueFormat": ds.name.split("_")[0], "schema.registry.url": ds.registry_url})
        return spark_source(spark, "pyconsumer", bootstrap, ds, ends, **typed)
    if contender != "kafka":
        raise ValueError(f"{contender} does not read the typed sets (only {', '.join(TYPED_CONTENDERS)})")
    from pyspark.sql import functions as F
    df = spark_source(spark, "kafka", bootstrap, ds, ends)
    if ds.name == "json_typed":
        value = F.from_json(F.col("value").cast("string"), JSON_DDL)
    elif ds.name == "protobuf_typed":
        from pyspark.sql.protobuf.functions import from_protobuf
        # the Confluent prefix (magic byte, 4-byte id, message indexes [0]: one byte 0) cut off
        value = from_protobuf(F.expr("substring(value, 7)"), PROTOBUF_MESSAGE, ds.descriptor_file)
    else:
        from pyspark.sql.avro.functions import from_avro
        # Spark's from_avro reads bare bodies of one writer schema: the Confluent prefix (magic
        # byte + 4-byte id) is cut off first, as users do (substring counts from 1)
        value = from_avro(F.expr("substring(value, 6)"), json.dumps(AVRO_SCHEMA))
    return df.select("key", value.alias("value"), "topic", "partition", "offset", "timestamp",
                     "timestampType")


def arrow_mem(spark: Any, ds: Dataset, ends: dict[int, int], batch_rows: int = 100_000) -> Any:
    """The in-memory Arrow source with the dataset's shape: rows per partition, topic, value
    size (the bytes set's), batches of the pyconsumer reader's size."""
    return (spark.read.format(ArrowMemSource.name())
            .option("rows", json.dumps([ends[p] for p in sorted(ends)]))
            .option("topic", ds.topic).option("valueSize", str(ds.value_bytes // ds.n))
            .option("batchRows", str(batch_rows)).load())


# ------------------------------------------------------------------------------ workloads
# each takes the DataFrame, the dataset and whether to check the result (not on the warm-up's
# partial reads) and raises when the result is wrong

def w_noop(spark: Any, df: Any, ds: Dataset, check: bool) -> None:
    df.write.format("noop").mode("overwrite").save()


def w_count(spark: Any, df: Any, ds: Dataset, check: bool) -> None:
    got = df.count()
    if check and got != ds.n:
        raise RuntimeError(f"{ds.name}: count() gave {got:,}, the topic holds {ds.n:,}")


def w_agg(spark: Any, df: Any, ds: Dataset, check: bool) -> None:
    from pyspark.sql import functions as F
    rows = df.groupBy("partition").agg(F.sum(F.length("value")).alias("bytes")).collect()
    total = sum(r["bytes"] for r in rows)
    if check and total != ds.value_bytes:
        raise RuntimeError(f"{ds.name}: sum(length(value)) = {total:,}, "
                           f"expected {ds.value_bytes:,}")


def parsed(df: Any) -> Any:
    """The json set's 8 typed fields (from_json with its DDL) beside partition and offset."""
    from pyspark.sql import functions as F
    return (df.select(F.from_json(F.col("value").cast("string"), JSON_DDL).alias("j"),
                      "partition", "offset")
            .select("j.*", "partition", "offset"))


def w_json(spark: Any, df: Any, ds: Dataset, check: bool) -> None:
    per_country(parsed(df), ds, check)


def w_fields(spark: Any, df: Any, ds: Dataset, check: bool) -> None:
    """A typed set: the json workload's aggregate over the typed value's fields."""
    per_country(df.select("value.*"), ds, check)


def per_country(fields: Any, ds: Dataset, check: bool) -> None:
    """Per country over the 8 fields (all used, so no reader can skip one), checked against
    what was produced."""
    from pyspark.sql import functions as F
    rows = fields.groupBy("country").agg(
        F.count("*").alias("n"), F.sum("id").alias("ids"), F.sum("qty").alias("qty"),
        F.sum("amount").alias("amount"), F.sum(F.col("active").cast("int")).alias("active"),
        F.max("score").alias("score"), F.max(F.unix_millis("ts")).alias("ts"),
        F.sum(F.length("user")).alias("user")).collect()
    if not check:
        return
    got = {r["country"]: r.asDict() for r in rows}
    if set(got) != set(ds.per_country):
        raise RuntimeError(f"{ds.name}: countries {sorted(got, key=str)}, "
                           f"expected {sorted(ds.per_country)}")
    for country, want in ds.per_country.items():
        have = got[country]
        for k in ("n", "ids", "qty", "active", "score", "ts", "user"):
            if have[k] != want[k]:
                raise RuntimeError(f"{ds.name}: {country} {k} = {have[k]!r}, expected {want[k]!r}")
        # a double sum in another order: equal to rounding
        if not math.isclose(have["amount"], want["amount"], rel_tol=1e-9):
            raise RuntimeError(f"{ds.name}: {country} amount = {have['amount']!r}, "
                               f"expected {want['amount']!r}")


def w_parquet(spark: Any, df: Any, ds: Dataset, check: bool, path: str = "") -> None:
    if ds.name == "json":
        df = parsed(df)
    elif ds.name in TYPED_SETS and isinstance(df.schema["value"].dataType, StructType):
        df = df.select("value.*", "partition", "offset")     # the binary read writes the Kafka rows
    df.write.mode("overwrite").parquet(path)


def check_parquet(spark: Any, path: str, n: int | None) -> None:
    got = spark.read.parquet(path).count()
    shutil.rmtree(path, ignore_errors=True)
    if n is not None and got != n:
        raise RuntimeError(f"Parquet holds {got:,} rows, expected {n:,}")


Workload = Callable[[Any, Any, Dataset, bool], None]
WORKLOAD_FNS: dict[str, Workload] = {"noop": w_noop, "count": w_count, "agg": w_agg,
                                     "json": w_json, "fields": w_fields}


def poll_arrow(bootstrap: str, ds: Dataset) -> None:
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
        tps = [TopicPartition(ds.topic, p) for p in range(ds.partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got = 0
        while got < ds.n:
            got += c.poll_arrow(timeout_ms=1000, max_records=100_000).num_rows
    if got != ds.n:
        raise RuntimeError(f"poll_arrow read {got:,} records, the topic holds {ds.n:,}")


# ------------------------------------------------------------------------------ planning

def plan_only(spark: Any, contender: str, bootstrap: str, ds: Dataset) -> tuple[float, int]:
    """Seconds from just before ``load()`` until ``df.rdd.getNumPartitions()`` returns, and
    the tasks planned: the driver's whole planning (schema, every partition's offsets, one
    task each, the RDD built) with no task run."""
    t0 = time.perf_counter()
    df = reader_of(spark, contender, bootstrap, ds)
    tasks = int(df.rdd.getNumPartitions())
    return time.perf_counter() - t0, tasks


def first_stage_delay(spark: Any, group: str, started: float, wait_s: float = 10.0) -> float | None:
    """Seconds from ``started`` (``time.time()`` at the action's start) to the submission of the
    first stage of the jobs run under job group ``group``, as Spark's status tracker records it
    (None if it never shows). The tracker is fed by Spark's listener bus, which may lag the
    action's return by a little: it is asked again for up to ``wait_s``; the stages are
    submitted in order, so once one shows the first one does."""
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    jtracker = sc._jsc.statusTracker()      # the JVM's: its stage info carries submissionTime
    deadline = time.monotonic() + wait_s
    while True:
        submitted = []
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info is not None else ():
                st = jtracker.getStageInfo(stage)
                if st is not None and st.submissionTime() > 0:       # epoch ms; unset on a skipped stage
                    submitted.append(int(st.submissionTime()))
        if submitted:
            return min(submitted) / 1000 - started
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def plan_line(rnd: int, ds: str, contender: str, seconds: float, tasks: int) -> str:
    """The round's planning line (parsed by python -m benchmarks)."""
    return f"plan round {rnd} {ds} {contender}: {seconds:.3f} s, {tasks} tasks"


def first_stage_line(rnd: int, ds: str, contender: str, workload: str, seconds: float | None) -> str:
    """The timed action's time to its first stage (parsed by python -m benchmarks)."""
    head = f"first stage round {rnd} {ds} {contender} {workload}: "
    if seconds is None:
        return head + "not seen in Spark's status tracker"
    return head + f"{seconds:.3f} s after the action's start"


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
    """CPU seconds spent during a block by the broker, the JVM, Spark's Python processes (workers,
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
        groups = {"broker": 0.0, "jvm": 0.0, "pyworkers": 0.0, "driver": 0.0}
        if self.broker_pid in procs:
            groups["broker"] = sum(procs[self.broker_pid][2:4])
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


def _timed_tasks(pdir: str) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted(glob.glob(os.path.join(pdir, "*.jsonl")))
            for line in open(f)]


def _clear(pdir: str) -> None:
    for f in glob.glob(os.path.join(pdir, "*.jsonl")) + glob.glob(os.path.join(pdir, "*.prof")):
        os.remove(f)


def profile(spark: Any, broker: Any, ds: Dataset, work: str, idle_s: float,
            cprofile: bool) -> None:
    """Where the Spark path's time goes, on one dataset (one run each, after the rounds)."""
    from pyconsumer.spark.options import parse_options
    from pyconsumer.spark.planning import OffsetRange
    from pyconsumer.spark.reader import close_cached_consumers, read_range

    bootstrap = broker.bootstrap
    pdir = os.path.join(work, "profile")
    os.makedirs(pdir, exist_ok=True)
    print(f"\nprofile on the {ds.name} set ({ds.n:,} records; one run each; pyconsumer's tasks "
          f"timed from inside the Python workers)")

    def measure(what: str, make_df: Callable[[], Any], workload: str, timed: bool) -> None:
        _clear(pdir)
        df = make_df()
        if idle_s > 0:
            wait_idle(idle_s)
        q0 = time.time()
        with CpuMeter(broker.pid) as meter:
            WORKLOAD_FNS[workload](spark, df, ds, False)
        q1 = time.time()
        print(f"  {what} {workload}: {meter.wall:.2f} s ({ds.n / meter.wall / 1e3:,.0f} krec/s)")
        print(f"    {meter.line()}")
        if not timed:
            return
        tasks = _timed_tasks(pdir)
        rows = sum(t["rows"] for t in tasks)
        print(f"    {len(tasks)} tasks in {len({t['pid'] for t in tasks})} workers, {rows:,} rows, "
              f"{sum(t['batches'] for t in tasks)} batches; first read() "
              f"{min(t['t0'] for t in tasks) - q0:.2f} s after the action, the last ends "
              f"{q1 - max(t['t1'] for t in tasks):.2f} s before it returns; tasks: " + ", ".join(
                  f"[{t['t0'] - q0:.1f}-{t['t1'] - q0:.1f}]"
                  for t in sorted(tasks, key=lambda t: t["t0"])))
        read_s = sum(t["read_s"] for t in tasks)
        print(f"    summed over tasks: inside read_range {read_s:.2f} s wall, "
              f"{sum(t['read_cpu_s'] for t in tasks):.2f} s CPU; between yields (the worker "
              f"sending the batch to the JVM, waiting for it) {sum(t['spark_s'] for t in tasks):.2f}"
              f" s; worker CPU in read() {sum(t['cpu_s'] for t in tasks):.2f} s")

    opt = {"bench.profileDir": pdir}
    for workload in ("noop", "count"):
        measure("pyconsumer (timed)",
                lambda: spark_source(spark, TimedKafkaSource.name(), bootstrap, ds, **opt),
                workload, True)
        measure("kafka", lambda: spark_source(spark, "kafka", bootstrap, ds), workload, False)
        measure("arrow in memory (no Kafka)", lambda: arrow_mem(spark, ds, ds.log_end),
                workload, False)
    if idle_s > 0:
        wait_idle(idle_s)
    with CpuMeter(broker.pid) as meter:
        poll_arrow(bootstrap, ds)
    print(f"  poll_arrow in the driver: {meter.wall:.2f} s ({ds.n / meter.wall / 1e3:,.0f} krec/s)")
    print(f"    {meter.line()}")
    # read_range alone, every partition one after another in this process, no Spark
    opts = parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": ds.topic},
                         streaming=False)
    got = 0
    if idle_s > 0:
        wait_idle(idle_s)
    with CpuMeter(broker.pid) as meter:
        for p in range(ds.partitions):
            for batch in read_range(OffsetRange(ds.topic, p, 0, ds.log_end[p]), opts):
                got += batch.num_rows
    close_cached_consumers()
    print(f"  read_range in the driver, partitions one by one: {got:,} rows in {meter.wall:.2f} s "
          f"({got / meter.wall / 1e3:,.0f} krec/s)")
    print(f"    {meter.line()}")
    if cprofile:
        _clear(pdir)
        spark_source(spark, TimedKafkaSource.name(), bootstrap, ds, **opt,
                     **{"bench.cprofile": "true"}).write.format("noop").mode("overwrite").save()
        files = sorted(glob.glob(os.path.join(pdir, "*.prof")))
        stats = pstats.Stats(files[0])
        for f in files[1:]:
            stats.add(f)
        print(f"  cProfile of read_range inside the workers, pyconsumer noop, {len(files)} tasks "
              "summed (under the profiler, so slower):")
        stats.sort_stats("tottime").print_stats(25)


# ------------------------------------------------------------------------------ main

def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--broker", choices=brokers.BROKERS, default="kafka")
    ap.add_argument("--records", type=int, default=5_000_000, help="records of the bytes set")
    ap.add_argument("--json-records", type=int, default=1_000_000,
                    help="records of the json set (and json_typed, the same topic)")
    ap.add_argument("--avro-records", type=int, default=1_000_000, help="records of the avro_typed set")
    ap.add_argument("--protobuf-records", type=int, default=1_000_000,
                    help="records of the protobuf_typed set")
    ap.add_argument("--registry", choices=("fake", "apicurio"), default="fake",
                    help="the typed sets' Schema Registry: pyconsumer.testing's FakeSchemaRegistry "
                         "in this process (default) or Apicurio Registry (a JVM, 15-30 s to start)")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--scale-records", type=int, default=1_000_000, help="records of the scale set")
    ap.add_argument("--scale-partitions", type=int, default=1000, help="partitions of the scale set")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--datasets", nargs="*", choices=list(WORKLOADS), default=list(DEFAULT_DATASETS),
                    help="the data sets (default: " + " ".join(DEFAULT_DATASETS) + f"; {SCALE_SET} "
                         "only when named)")
    ap.add_argument("--contenders", nargs="*", choices=CONTENDERS, default=list(CONTENDERS))
    ap.add_argument("--workloads", nargs="*", default=None, metavar="W",
                    help="only these workloads (noop count agg json parquet)")
    ap.add_argument("--no-poll-arrow", action="store_true", help="leave poll_arrow out")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 300k + 100k (+ 100k Avro) records (scale: 100k), 1 round")
    ap.add_argument("--wait-idle", type=float, default=None, metavar="S",
                    help="before each case wait up to S s for the machine to be < 20%% busy "
                         "(shared machines; default 60, 0 with --quick: do not wait)")
    ap.add_argument("--profile", action="store_true",
                    help="after the rounds, where the time goes (bytes set)")
    ap.add_argument("--cprofile", action="store_true",
                    help="with --profile: cProfile read_range inside the workers")
    args = ap.parse_args()
    if args.quick:
        args.records, args.json_records, args.avro_records, args.rounds = 300_000, 100_000, 100_000, 1
        args.protobuf_records = 100_000
        args.scale_records = min(args.scale_records, 100_000)
    if args.wait_idle is None:
        args.wait_idle = 0.0 if args.quick else 60.0
    if args.broker == "tansu" and "kafka" in args.contenders:
        # Tansu 0.6 answers ListOffsets(latest) short: Spark's source would miss records
        args.contenders.remove("kafka")
        print("on Tansu format('kafka') is left out (Tansu's ListOffsets(latest) is short)")

    import confluent_kafka
    import pyarrow
    import pyspark

    from pyconsumer.testing import spark_avro_jar, spark_kafka_jars, spark_kafka_version, spark_protobuf_jar
    from pyconsumer.testing._errors import BrokerStartError
    jars = spark_kafka_jars()
    if "avro_typed" in args.datasets:
        jars.append(spark_avro_jar())          # from_avro, for format("kafka")
    if "protobuf_typed" in args.datasets:
        try:
            jars.append(spark_protobuf_jar())  # from_protobuf, for format("kafka")
            origin = maven_origin(jars[-1])
            if origin != "central":
                print(f"protobuf_typed: format('kafka') + from_protobuf jar not from Maven Central: "
                      f"{Path(jars[-1]).name} came from {origin or 'a local install (mvn install)'}")
        except BrokerStartError as exc:
            UNAVAILABLE[("protobuf_typed", "kafka")] = str(exc).splitlines()[0]
            print(f"protobuf_typed: format('kafka') + from_protobuf left out: {str(exc).splitlines()[0]}")
    print(f"pyspark {pyspark.__version__}, pyarrow {pyarrow.__version__}, confluent-kafka "
          f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
          f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, master {args.master}, "
          f"driver memory {args.driver_memory}")
    # parsed by python -m benchmarks for its table
    print(f"spark kafka connector: {spark_kafka_version()} (PySpark {pyspark.__version__})")

    work = tempfile.mkdtemp(prefix="bench-spark-")
    try:
        with brokers.start(args.broker) as broker, registry(args) as registry_url:
            print(f"broker: {broker.description}")
            sets: list[Dataset] = []
            by_name: dict[str, Dataset] = {}
            # in WORKLOADS' order: json before json_typed, which reads the json set's topic
            for name in sorted(set(args.datasets), key=list(WORKLOADS).index):
                t0 = time.perf_counter()
                if name == "json_typed" and "json" in by_name:
                    sets.append(dataclasses.replace(by_name["json"], name=name))
                    by_name[name] = sets[-1]
                    continue
                partitions = args.scale_partitions if name == SCALE_SET else args.partitions
                topic = broker.create_topic(f"bench-spark-{name}", partitions)
                if name == SCALE_SET:       # the bytes set's records, spread over many partitions
                    sets.append(dataclasses.replace(fill_bytes(
                        broker.bootstrap, topic, args.scale_records, partitions, args.value_size), name=name))
                elif name == "bytes":
                    sets.append(fill_bytes(broker.bootstrap, topic, args.records,
                                           args.partitions, args.value_size))
                elif name == "avro_typed":
                    sets.append(fill_avro(broker.bootstrap, topic, args.avro_records,
                                          args.partitions, registry_url))
                elif name == "protobuf_typed":
                    sets.append(fill_protobuf(broker.bootstrap, topic, args.protobuf_records,
                                              args.partitions, registry_url, work))
                else:
                    sets.append(dataclasses.replace(
                        fill_json(broker.bootstrap, topic, args.json_records, args.partitions), name=name))
                ds = by_name[name] = sets[-1]
                print(f"filled {name}: {ds.n:,} records, {ds.value_bytes / ds.n:.0f} B values "
                      f"on average, {ds.partitions} partitions, in "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)
            for ds in sets:      # parsed by python -m benchmarks for its titles
                print(f"dataset {ds.name}: {ds.n:,} records over {ds.partitions} partitions of {ds.topic}")

            from pyconsumer.spark.session import local_session
            t0 = time.perf_counter()
            spark = local_session(args.master, app_name="bench-spark", fast_jvm=False,
                                  local_dir=os.path.join(work, "spark-local"),
                                  conf={"spark.driver.memory": args.driver_memory,
                                        "spark.jars": ",".join(jars)})
            try:
                run_all(spark, broker, sets, work, args, t0)
            finally:
                spark.stop()     # before the broker: no worker left polling it
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def registry(args: argparse.Namespace) -> Iterator[str]:
    """The typed sets' Schema Registry, when avro_typed or protobuf_typed runs: its URL ("" otherwise)."""
    if "avro_typed" not in args.datasets and "protobuf_typed" not in args.datasets:
        yield ""
        return
    t0 = time.perf_counter()
    if args.registry == "apicurio":
        from pyconsumer.testing import ApicurioRegistry
        with ApicurioRegistry() as apicurio:
            print(f"registry: Apicurio Registry at {apicurio.url}, up in {time.perf_counter() - t0:.1f} s")
            yield apicurio.url
        return
    from pyconsumer.testing import FakeSchemaRegistry
    fake = FakeSchemaRegistry().start()
    try:
        print(f"registry: pyconsumer.testing.FakeSchemaRegistry at {fake.url} (in this process)")
        yield fake.url
    finally:
        fake.stop()


def run_all(spark: Any, broker: Any, sets: list[Dataset], work: str,
            args: argparse.Namespace, t0: float) -> None:
    bootstrap = broker.bootstrap
    for source in (TupleKafkaSource, TimedKafkaSource, ArrowMemSource):
        spark.dataSource.register(source)
    spark.sparkContext.setLogLevel("ERROR")
    print(f"SparkSession in {time.perf_counter() - t0:.1f} s")
    out_path = os.path.join(work, "out.parquet")
    action_start = [0.0]      # time.time() just before the last action's load()

    def case(ds: Dataset, contender: str, workload: str, fraction: int | None
             ) -> Callable[[], None]:
        check = fraction is None

        def run() -> None:
            action_start[0] = time.time()
            df = reader_of(spark, contender, bootstrap, ds, fraction)
            if workload == "parquet":
                w_parquet(spark, df, ds, check, out_path)
            else:
                WORKLOAD_FNS[workload](spark, df, ds, check)
        return run

    plan: list[tuple[str, Dataset, str, str]] = []        # (name, dataset, contender, workload)
    for ds in sets:
        for workload in WORKLOADS[ds.name]:
            if args.workloads is not None and workload not in args.workloads:
                continue
            for contender in args.contenders:
                if not runs(ds.name, contender, workload):
                    continue
                plan.append((f"{ds.name} {contender} {workload}", ds, contender, workload))
        if ds.name == SCALE_SET:         # each source's planning alone, no rate: its own lines
            plan += [(f"{ds.name} {c} plan", ds, c, "plan") for c in args.contenders if c in SCALE_CONTENDERS]
        # the typed sets' poll_arrow is json's; the scale case's poll_arrow is run_scale's
        elif not args.no_poll_arrow and ds.name not in TYPED_SETS:
            plan.append((f"{ds.name} poll_arrow", ds, "poll_arrow", ""))

    # warm-up, not timed: Spark's Python workers, the JIT of the JVM's Kafka, Arrow and Parquet
    # paths (a first full-size read costs up to ~2x JVM CPU), pyconsumer's consumer cache
    t1 = time.perf_counter()
    for _name, ds, contender, workload in plan:
        if contender == "poll_arrow":
            poll_arrow(bootstrap, ds)
            continue
        if workload == "plan":
            plan_only(spark, contender, bootstrap, ds)
            continue
        case(ds, contender, workload, 5)()
        if workload == "parquet":
            check_parquet(spark, out_path, None)
    print(f"warm-up in {time.perf_counter() - t1:.1f} s", flush=True)

    sc = spark.sparkContext
    rates: dict[str, list[float]] = {name: [] for name, _, _, workload in plan if workload != "plan"}
    planned: dict[str, list[float]] = {name: [] for name, _, _, workload in plan if workload == "plan"}
    for rnd in range(args.rounds):
        for name, ds, contender, workload in plan:
            waited = wait_idle(args.wait_idle) if args.wait_idle > 0 else 0.0
            if workload == "plan":
                seconds, tasks = plan_only(spark, contender, bootstrap, ds)
                print(plan_line(rnd, ds.name, contender, seconds, tasks), flush=True)
                planned[name].append(seconds)
                continue
            run = ((lambda ds=ds: poll_arrow(bootstrap, ds)) if contender == "poll_arrow"
                   else case(ds, contender, workload, None))
            # the scale set's actions run under their own job group: their first stage is found
            group = f"bench-{rnd}-{name.replace(' ', '-')}" if ds.name == SCALE_SET else None
            if group is not None:
                sc.setJobGroup(group, name)
            with CpuMeter(broker.pid) as meter:
                run()
            elapsed = meter.wall
            if group is not None:
                sc.setLocalProperty("spark.jobGroup.id", None)       # later actions: no group
                delay = first_stage_delay(spark, group, action_start[0])
                print(first_stage_line(rnd, ds.name, contender, workload, delay), flush=True)
            if workload == "parquet":
                check_parquet(spark, out_path, ds.n)
            rates[name].append(ds.n / elapsed)
            print(f"round {rnd} {name:29s} {ds.n:>11,} records {elapsed:7.2f} s "
                  f"{ds.n / elapsed / 1e3:9,.0f} krec/s   CPU s: " + " ".join(
                      f"{k} {v:.1f}" for k, v in meter.cpu.items())
                  + f", other processes {meter.others:.1f}"
                  + (f" (waited {waited:.0f} s for idle)" if waited > 1.5 else ""),
                  flush=True)

    report(rates, sets)
    for name, times in planned.items():
        print(f"  {name:29s} {statistics.median(times):.3f} s to plan (median; rounds: "
              + ", ".join(f"{t:.3f}" for t in times) + ")")
    if args.profile:
        bytes_set = [ds for ds in sets if ds.name == "bytes"] or sets
        profile(spark, broker, bytes_set[0], work, args.wait_idle, args.cprofile)


def report(rates: dict[str, list[float]], sets: list[Dataset]) -> None:
    print(f"\n{'case':31s} {'krec/s best':>12s} {'krec/s median':>14s}")
    for name, rs in rates.items():
        print(f"{name:31s} {max(rs) / 1e3:12,.0f} {statistics.median(rs) / 1e3:14,.0f}")

    def ratio(a: str, b: str) -> str:
        if a not in rates or b not in rates:
            return "    -"
        per_round = [x / y for x, y in zip(rates[a], rates[b])]
        return f"{statistics.median(per_round):5.2f}x (rounds: " + \
            ", ".join(f"{r:.2f}" for r in per_round) + ")"

    print("\nratios, median of per-round ratios:")
    want = {"noop": 2.0, "count": 2.0, "agg": 2.0, "json": 1.5, "parquet": 1.5}
    for ds in sets:
        for w in WORKLOADS[ds.name]:
            p = f"{ds.name} pyconsumer {w}"
            if p not in rates:
                continue
            if ds.name == SCALE_SET:          # issue 26 asks for the numbers: no target
                print(f"  {ds.name:5s} {w:8s} pyconsumer / kafka {ratio(p, f'{ds.name} kafka {w}')}")
                continue
            if ds.name in TYPED_SETS:         # issue 25: >= 3x Spark's own, within 0.7x of binary
                print(f"  {ds.name:10s} {w:8s} typed / kafka + from_{ds.name[:4]} "
                      f"{ratio(p, f'{ds.name} kafka {w}')}   target >= 3x;  typed / binary "
                      f"{ratio(p, f'{ds.name} binary {w}')}   target >= 0.7x")
                continue
            print(f"  {ds.name:5s} {w:8s} pyconsumer / kafka {ratio(p, f'{ds.name} kafka {w}')}"
                  f"   target >= {want[w]}x;  / kafka_tuned "
                  f"{ratio(p, f'{ds.name} kafka_tuned {w}')};  / tuple {ratio(p, f'{ds.name} tuple {w}')};"
                  f"  / poll_arrow {ratio(p, f'{ds.name} poll_arrow')}")


if __name__ == "__main__":
    main()
