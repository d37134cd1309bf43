"""The ``pyconsumer`` PySpark data source: Spark's Kafka source, read by pyconsumer into Arrow.

``spark.read.format("pyconsumer")`` / ``spark.readStream.format("pyconsumer")`` take Spark's
Kafka source options (:mod:`pyconsumer.spark.options`) and give Spark's Kafka schema. Which
process runs what (PySpark's Python data source API):

* ``partitions()`` (batch) and the stream reader's offset methods run in Python processes
  the JVM starts on the driver: they look offsets up with an :class:`OffsetReader`.
* ``read()`` runs in Python workers, from the pickled reader and one :class:`KafkaInputPartition`
  (a range, or small ranges of one topic grouped: minRecordsPerPartition):
  :func:`~pyconsumer.spark.reader.read_ranges` yields ``pyarrow.RecordBatch``es, which Spark
  takes as they are (no per-row conversion).

Offsets are Spark's JSON (``{"topic": {"0": 23}}``) and live in the query's checkpoint; the
source never relies on Kafka commits (``commitOffsetsToKafka`` only publishes progress).

Typed values (``valueFormat``, ``keyFormat``, ... :mod:`pyconsumer.spark.values`): the schema
has ``value`` / ``key`` typed (and the corrupt record column in PERMISSIVE); ``read()`` applies
the one :class:`~pyconsumer.values.typed.TypedValues` plan to each batch. Avro readers taken
from the registry are pinned on the driver when the schema is made (kept in the ``value`` /
``key`` field's metadata, so reader() plans with the very schemas the DataFrame was typed
with) and travel with each task.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.offsets import OffsetReader, report_data_loss
from pyconsumer.spark.options import (
    SourceOptions,
    offsets_from_json,
    offsets_to_json,
    parse_options,
)
from pyconsumer.spark.planning import (
    OffsetRange,
    group_ranges,
    limit_by_bytes,
    rate_limit,
    split_ranges,
    total_offsets,
)
from pyconsumer.spark.reader import bytes_per_offset, read_ranges, settle_worker_heap
from pyconsumer.spark.values import (
    PINS_METADATA_KEY,
    PinnedSchema,
    ReaderPins,
    ValueOptions,
    declared_type,
    parse_value_options,
)
from pyconsumer.structs import OffsetAndMetadata, TopicPartition

__all__ = ["KafkaDataSource", "KafkaInputPartition", "kafka_schema"]

log = logging.getLogger(__name__)


def kafka_schema(include_headers: bool = False) -> StructType:
    """Spark's Kafka source schema (every field nullable, as Spark declares it)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType([
            StructField("key", StringType()), StructField("value", BinaryType())]))))
    return StructType(fields)


class KafkaInputPartition(InputPartition):
    """One Spark task: offsets ``[start, end)`` of one or more partitions of one topic (small
    ranges grouped, planning.group_ranges), and the Avro reader schemas the driver fixed for
    its topic (column -> pin; empty unless typed Avro)."""

    def __init__(self, ranges: OffsetRange | Sequence[OffsetRange],
                 pins: Mapping[str, PinnedSchema] | None = None) -> None:
        self.ranges = (ranges,) if isinstance(ranges, OffsetRange) else tuple(ranges)
        super().__init__(tuple((r.topic, r.partition, r.start, r.end) for r in self.ranges))
        self.pins = dict(pins or {})

    @property
    def range(self) -> OffsetRange:
        """The task's one range (a task of grouped ranges has no single one)."""
        if len(self.ranges) != 1:
            raise ValueError(f"{self!r} reads {len(self.ranges)} ranges")
        return self.ranges[0]

    def __repr__(self) -> str:
        return "KafkaInputPartition(" + ", ".join(
            f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in self.ranges) + ")"


class TypedRead:
    """What the readers need for typed values: the options, the driver's pins (not sent to
    executors: each partition carries its own) and the Arrow schema Spark expects of a batch."""

    def __init__(self, values: ValueOptions, schema: StructType) -> None:
        from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema

        self.values = values
        # exactly what PySpark compares each returned batch with
        self.target: pa.Schema = to_arrow_schema(schema, timezone="UTC")
        texts = {c: schema[c].metadata[PINS_METADATA_KEY] for c in ("key", "value")
                 if PINS_METADATA_KEY in (schema[c].metadata or {})}
        declared = {c: schema[c].dataType for c in ("key", "value")}
        kinds = {c.column: c.kind for c in values.columns()}

        def same_type(column: str, t: pa.DataType) -> bool:
            return bool(from_arrow_type(declared_type(kinds[column], t)) == declared[column])

        self.pins: ReaderPins | None = ReaderPins(values, ReaderPins.from_metadata(texts), same_type)

    def __getstate__(self) -> dict[str, Any]:
        return {"values": self.values, "target": self.target, "pins": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def partition(self, ranges: OffsetRange | tuple[OffsetRange, ...]) -> KafkaInputPartition:
        assert self.pins is not None, "partitions are planned on the driver"
        task = KafkaInputPartition(ranges)
        task.pins = dict(self.pins.for_topic(task.ranges[0].topic))
        return task

    def read(self, partition: KafkaInputPartition, options: SourceOptions
             ) -> Iterator[pa.RecordBatch]:
        plan = self.values.plan(partition.pins)
        keep_headers = options.include_headers
        names = self.target.names
        for batch in read_ranges(partition.ranges, options,
                                 include_headers=keep_headers or self.values.needs_headers):
            out = plan.apply(batch)
            if out.num_rows == 0:       # DROPMALFORMED dropped every row
                continue
            if not keep_headers and "headers" in out.schema.names:
                out = out.select(names)     # read only for the schema-id headers
            if not out.schema.equals(self.target):
                # nested names and nullability as Spark's Arrow form of the declared schema
                out = out.cast(self.target)
            yield out


def _read(partition: InputPartition, options: SourceOptions, typed: TypedRead | None
          ) -> Iterator[pa.RecordBatch]:
    # with nothing to read, partitions() is empty and PySpark hands read() one
    # InputPartition(None): no records
    if not isinstance(partition, KafkaInputPartition):
        return
    settle_worker_heap()
    if typed is None:
        yield from read_ranges(partition.ranges, options)
    else:
        yield from typed.read(partition, options)


def _topics(options: Mapping[str, str]) -> list[str]:
    """The topics a read names now (a pattern is looked up on the brokers). schema() does not
    know whether the read is a stream: the options are parsed as a batch read's when they end
    it (ending offsets or timestamps), else as a stream's, only to find the topics."""
    from pyconsumer.spark.options import Assign, Subscribe

    batch = any(str(k).lower().startswith("ending") for k in options)
    parsed = parse_options(options, streaming=not batch)
    strategy = parsed.strategy
    if isinstance(strategy, Subscribe):
        return list(strategy.topics)
    if isinstance(strategy, Assign):
        return sorted({tp.topic for tp in strategy.partitions})
    offsets = OffsetReader(parsed)
    try:
        return sorted({tp.topic for tp in offsets.partitions()})
    finally:
        offsets.close()


def typed_schema(values: ValueOptions, include_headers: bool, topics: Sequence[str]
                 ) -> StructType:
    """Spark's Kafka schema with ``key`` / ``value`` typed per ``values`` (nullable throughout
    as from_json and from_avro declare them, or as from_protobuf does: see
    :func:`~pyconsumer.spark.values.declared_type`), the corrupt record column(s) in PERMISSIVE, and
    the Avro readers pinned now kept in the typed fields' metadata."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from pyconsumer.records import kafka_arrow_schema

    base = kafka_arrow_schema(include_headers)
    pins = ReaderPins(values)
    pinned: dict[str, dict[str, PinnedSchema]] = {"": {}}
    if values.needs_pins:
        if not topics:
            raise ConfigurationError(
                "valueFormat/keyFormat avro without valueSchema/keySchema or a subject takes "
                "each topic's subject's latest schema, and no topic matches the subscription "
                "yet: set valueSchema (or keySchema), or valueSubject (or keySubject)")
        pinned = pins.pin_all(topics)
    seen: dict[str, tuple[str, Any]] = {}
    arrow: pa.Schema | None = None
    for topic, topic_pins in pinned.items():
        candidate = values.plan(topic_pins).schema(base, [topic])
        spark_types = from_arrow_schema(candidate)
        for column in ("key", "value"):
            t = spark_types[column].dataType
            if column in seen and seen[column][1] != t:
                raise ConfigurationError(
                    f"topics {seen[column][0]!r} and {topic!r} have different {column} reader "
                    f"schemas ({seen[column][1].simpleString()} vs {t.simpleString()}): set "
                    f"{column}Schema or {column}Subject so they read into one type")
            seen.setdefault(column, (topic, t))
        arrow = arrow or candidate
    assert arrow is not None
    for c in values.columns():
        i = arrow.get_field_index(c.column)
        arrow = arrow.set(i, pa.field(c.column, declared_type(c.kind, arrow.field(c.column).type), True))
    fields = []
    for f in from_arrow_schema(arrow).fields:
        if f.name in ("key", "value") and values.needs_pins:
            meta = pins.to_metadata(f.name)
            if meta != "{}":
                f = StructField(f.name, f.dataType, f.nullable, {PINS_METADATA_KEY: meta})
        fields.append(f)
    return StructType(fields)


def _ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
            ) -> list[OffsetRange]:
    return [OffsetRange(tp.topic, tp.partition, start[tp], e)
            for tp, e in end.items() if tp in start]


class KafkaDataSource(DataSource):
    """``format("pyconsumer")``: Spark's Kafka source options and schema, batch and streaming."""

    @classmethod
    def name(cls) -> str:
        return "pyconsumer"

    def _include_headers(self) -> bool:
        # parse_options rejects anything but true/false (any case); the schema must agree
        return str(self.options.get("includeHeaders", "false")).lower() == "true"

    def schema(self) -> StructType:
        values = parse_value_options({str(k).lower(): v for k, v in self.options.items()})
        if values is None:
            return kafka_schema(self._include_headers())
        topics = _topics(self.options) if values.needs_pins else []
        return typed_schema(values, self._include_headers(), topics)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = parse_options(self.options, streaming=False)
        return KafkaBatchReader(options, _typed(options, schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = parse_options(self.options, streaming=True)
        return KafkaStreamReader(options, _typed(options, schema))


def _typed(options: SourceOptions, schema: StructType) -> TypedRead | None:
    return None if options.values is None else TypedRead(options.values, schema)


class KafkaBatchReader(DataSourceReader):
    """A bounded read: real offsets are resolved first (so even earliest/latest ranges can be
    split by minPartitions / maxRecordsPerPartition), then each range is one or more tasks."""

    def __init__(self, options: SourceOptions, typed: TypedRead | None = None) -> None:
        self.options = options
        self.typed = typed

    def plan(self) -> list[OffsetRange]:
        o = self.options
        offsets = OffsetReader(o)
        try:
            tps = offsets.partitions()
            start = offsets.resolve(o.starting, tps, is_start=True, option="startingOffsets")
            end = offsets.resolve(o.ending, tps, is_start=False, option="endingOffsets")
            ranges = []
            for r in _ranges(start, end):
                if r.start > r.end:
                    report_data_loss(o, f"Partition {r.topic}-{r.partition}'s starting offset "
                                        f"{r.start} is after its ending offset {r.end}")
                    continue
                ranges.append(r)
        finally:
            offsets.close()
        return split_ranges(ranges, min_partitions=o.min_partitions,
                            max_records_per_partition=o.max_records_per_partition)

    def partitions(self) -> Sequence[InputPartition]:
        return [self._partition(task) for task in
                group_ranges(self.plan(), self.options.min_records_per_partition)]

    def _partition(self, task: tuple[OffsetRange, ...]) -> KafkaInputPartition:
        return KafkaInputPartition(task) if self.typed is None else self.typed.partition(task)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self.options, self.typed)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over offset ranges, with Spark's admission control."""

    def __init__(self, options: SourceOptions, typed: TypedRead | None = None) -> None:
        self.options = options
        self.typed = typed
        self._offsets = OffsetReader(options)
        self._target: dict[TopicPartition, int] | None = None     # AvailableNow's end
        self._latest: dict[TopicPartition, int] | None = None     # for reportLatestOffset
        self._last_trigger: float | None = None                   # minOffsetsPerTrigger clock
        self._committed: dict[TopicPartition, int] = {}
        self._bytes_per_offset: dict[TopicPartition, float] = {}

    # --- pickling: only the options (and the typed read) travel to the workers
    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "typed": self.typed}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"], state.get("typed"))   # type: ignore[misc]

    # --- offsets
    def initialOffset(self) -> dict[str, Any]:
        o = self.options
        tps = self._offsets.partitions()
        start = self._offsets.resolve(o.starting, tps, is_start=True, option="startingOffsets")
        return offsets_to_json(start)

    def _fetch_latest(self, start: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Latest offsets of every partition read now; partitions that appeared since
        ``start`` (new partitions, new topics matching the pattern) start at earliest."""
        tps = self._offsets.partitions()
        lost = sorted(set(start) - tps)
        if lost:
            report_data_loss(self.options, "Partitions " + ", ".join(
                f"{t}-{p}" for t, p in lost) + " were deleted")
        return self._offsets.latest(tps)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._fetch_latest({})

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.options
        if o.max_offsets_per_trigger is not None:
            return ReadMaxRows(o.max_offsets_per_trigger)
        if o.max_bytes_per_trigger is not None:
            return ReadMaxBytes(o.max_bytes_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any] | None = None,
                     limit: ReadLimit | None = None) -> dict[str, Any]:
        o = self.options
        begin = offsets_from_json(start or {})
        self._maybe_commit(begin)
        latest = self._target if self._target is not None else self._fetch_latest(begin)
        if self._target is None:
            self._latest = dict(latest)
        else:
            self._latest = self._offsets.latest(latest)
        if start is None:     # PySpark before 4.2: no admission control
            return offsets_to_json(latest)
        new = set(latest) - set(begin)
        if new:
            begin = {**begin, **self._offsets.earliest(new)}
        end = dict(latest)
        now = time.monotonic()
        # minOffsetsPerTrigger: too little for a batch, wait unless maxTriggerDelay passed
        # since the last trigger. As in Spark, a reader's first trigger counts as late
        # (Spark's clock starts at 0: a (re)started query reads what is there at once) and
        # every trigger that is not held back restarts the clock, even with nothing to read.
        # AvailableNow ignores it: Spark's source applies it there too and so ends the query
        # with data unread.
        if o.min_offsets_per_trigger is not None and self._target is None:
            late = (self._last_trigger is None
                    or (now - self._last_trigger) * 1000 >= o.max_trigger_delay_ms)
            if not late and total_offsets(begin, end) < o.min_offsets_per_trigger:
                return start
            self._last_trigger = now
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else o.max_offsets_per_trigger
        if max_rows is not None:
            end = rate_limit(begin, end, max_rows)
        if o.max_bytes_per_trigger is not None:
            end = limit_by_bytes(begin, end, o.max_bytes_per_trigger,
                                 self._estimate_bytes(begin, end))
        return offsets_to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._latest is None else offsets_to_json(self._latest)

    def _estimate_bytes(self, begin: Mapping[TopicPartition, int],
                        end: Mapping[TopicPartition, int]) -> dict[TopicPartition, float]:
        """Bytes per offset of each partition with a backlog, from one small sample read at
        its start (cached: record sizes of a partition change slowly)."""
        for tp, e in end.items():
            b = begin.get(tp)
            if b is None or e <= b or tp in self._bytes_per_offset:
                continue
            estimate = bytes_per_offset(OffsetRange(tp.topic, tp.partition, b, e), self.options)
            if estimate is not None:
                self._bytes_per_offset[tp] = estimate
        return self._bytes_per_offset

    # --- planning and reading
    def partitions(self, start: dict[str, Any], end: dict[str, Any]
                   ) -> Sequence[InputPartition]:
        begin = offsets_from_json(start)
        stop = offsets_from_json(end)
        missing = set(stop) - set(begin)
        if missing:      # partitions added in this batch (a replay: same lookup)
            begin.update({tp: off for tp, off in self._offsets.earliest(missing).items()})
        ranges = []
        for r in _ranges(begin, stop):
            if r.end < r.start:
                report_data_loss(self.options, f"Partition {r.topic}-{r.partition}'s offset "
                                                f"went back from {r.start} to {r.end}")
                continue
            ranges.append(r)
        o = self.options
        return [self._partition(task) for task in group_ranges(split_ranges(
            ranges, min_partitions=o.min_partitions,
            max_records_per_partition=o.max_records_per_partition), o.min_records_per_partition)]

    def _partition(self, task: tuple[OffsetRange, ...]) -> KafkaInputPartition:
        return KafkaInputPartition(task) if self.typed is None else self.typed.partition(task)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(partition, self.options, self.typed)

    # --- progress published to Kafka (opt-in); the checkpoint stays the source of truth
    def _maybe_commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """``start`` of a new batch is the end of the last finished one: with
        commitOffsetsToKafka, commit it to kafka.group.id so lag tools see the progress."""
        if not self.options.commit_offsets_to_kafka or not offsets:
            return
        todo = {tp: off for tp, off in offsets.items() if self._committed.get(tp) != off}
        if not todo:
            return
        try:
            self._offsets.consumer.commit({tp: OffsetAndMetadata(off) for tp, off in todo.items()})
            self._committed.update(todo)
        except Exception as exc:     # publishing progress must never stop the query
            log.warning("commitOffsetsToKafka: committing %s failed: %s", todo, exc)

    def commit(self, end: dict[str, Any]) -> None:
        self._maybe_commit(offsets_from_json(end))

    def stop(self) -> None:
        self._offsets.close()
