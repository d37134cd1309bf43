"""Options of the ``pyconsumer`` Spark data source: parsed and checked like Spark's Kafka source.

The names, meanings, defaults, precedence and checks follow Spark's own Kafka source
(``KafkaSourceProvider``), so a query moves from ``format("kafka")`` to
``format("pyconsumer")`` without changing its options. Pure Python (no pyspark import): it runs
on the driver, on workers and in unit tests.

Each option is declared once, as a row of :mod:`pyconsumer.spark.option_table` (its name, the
field it fills, its type and check, its default, batch and/or streaming); this module reads the
rows alike, then makes the checks that involve several options. Errors come in that order: an
option given to a query it does not apply to, each option in the table's order, then the
checks across options.

Option keys are case-insensitive (Spark lower-cases them); values are strings. ``kafka.*``
options are consumer settings, passed on with the prefix stripped. Unknown options are
ignored, as Spark does. Our extension, typed values (``valueFormat``, ``keyFormat``,
``valueSchema``, ``mode``, ``schema.registry.*``, ...), is parsed by
:mod:`pyconsumer.spark.values` into :attr:`SourceOptions.values`.

Where Spark's checks are loose this module is a little stricter, always failing early with the
option's name rather than later inside a query: counts must be positive (minOffsetsPerTrigger
may be 0, as in Spark), offsets in JSON must be >= -2, timestamps >= 0, and in batch queries
starting offsets must not pass ending offsets. It refuses where Spark silently does something
else than asked (tests/kafka/test_spark_vs_kafka_options.py lists each case beside Spark's
answer): maxOffsetsPerTrigger=0 (Spark admits nothing), endingTimestamp in a streaming query
(Spark ignores it), an empty ``assign`` (Spark reads nothing) and unknown ``kafka.*`` settings
(Spark's Java consumer only logs them).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.kafka_params import (
    check_consumer_settings,
    consumer_settings,
    parse_kafka_params,
)
from pyconsumer.spark.offsets_json import (
    offsets_from_json,
    offsets_to_json,
    parse_offsets_json,
)
from pyconsumer.spark.option_parsers import (
    INT64_MIN,
    option_error,
    parse_duration_ms,
    parse_int,
    parse_size_bytes,
)
from pyconsumer.spark.option_table import EXCLUSIVE_FIELDS, OPTIONS, SourceOption
from pyconsumer.spark.planning import DEFAULT_MIN_RECORDS_PER_PARTITION
from pyconsumer.spark.specs import (
    EARLIEST,
    LATEST,
    Assign,
    EarliestSpec,
    GlobalTimestamp,
    LatestSpec,
    OffsetSpec,
    SpecificOffsets,
    SpecificTimestamps,
    Strategy,
    Subscribe,
    SubscribePattern,
)
from pyconsumer.spark.values import ValueOptions, parse_value_options, value_option_names
from pyconsumer.structs import TopicPartition

__all__ = [
    "EARLIEST", "LATEST",
    "OffsetSpec", "EarliestSpec", "LatestSpec", "SpecificOffsets", "SpecificTimestamps",
    "GlobalTimestamp",
    "Subscribe", "SubscribePattern", "Assign", "Strategy",
    "SourceOptions",
    "parse_options", "parse_offsets_json", "offsets_to_json", "offsets_from_json",
    "parse_duration_ms", "parse_size_bytes", "known_option_names",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceOptions:
    """Every option of one read, parsed and checked (see :func:`parse_options`)."""

    strategy: Strategy
    #: the ``kafka.*`` options, prefix stripped, keys lower-cased (Java names)
    kafka_params: dict[str, str]
    #: startingTimestamp > startingOffsetsByTimestamp > startingOffsets; default latest for
    #: streaming, earliest for batch
    starting: OffsetSpec
    #: batch: endingTimestamp > endingOffsetsByTimestamp > endingOffsets, default latest;
    #: streaming: always LatestSpec() (unused)
    ending: OffsetSpec
    #: "error" or "latest": what a timestamp with no matching offset gives at the start
    starting_by_timestamp_strategy: str
    fail_on_data_loss: bool
    #: streaming only (None in batch queries, where Spark ignores it)
    max_offsets_per_trigger: int | None
    #: streaming only (None in batch queries)
    min_offsets_per_trigger: int | None
    #: streaming only: maxTriggerDelay in ms (default 15m; the default in batch queries)
    max_trigger_delay_ms: int
    #: our extension, streaming only (None in batch queries)
    max_bytes_per_trigger: int | None
    min_partitions: int | None
    max_records_per_partition: int | None
    include_headers: bool
    #: "spark-kafka-source" (streaming) or "spark-kafka-relation" (batch) unless given
    group_id_prefix: str
    #: kafka.group.id (also in kafka_params), None unless given
    group_id: str | None
    fetch_offset_num_retries: int
    fetch_offset_retry_interval_ms: int
    poll_timeout_ms: int
    #: our extension: commit the offsets a query has processed to kafka.group.id
    commit_offsets_to_kafka: bool
    streaming: bool
    #: our extension: typed key/value columns (valueFormat, keyFormat, ...); None: binary
    values: ValueOptions | None = None
    #: our extension: small ranges of one topic grouped into tasks of at least this many
    #: offsets (planning.group_ranges); 1 or minPartitions / maxRecordsPerPartition: a task
    #: per range, as Spark
    min_records_per_partition: int = DEFAULT_MIN_RECORDS_PER_PARTITION

    def consumer_settings(self) -> dict[str, str]:
        """Settings (Java names) for a pyconsumer ``KafkaConsumer``: the ``kafka.*`` options,
        with ``group.id`` only when the user gave a non-blank one (Spark's Java consumer
        reads with a blank one as with none), and ``enable.auto.commit`` forced off.
        ``auto.offset.reset`` is left to the caller."""
        return consumer_settings(self.kafka_params)


_GROUP_ID_WARNING = (
    "Kafka option 'kafka.group.id' is set on this query. This is not recommended: concurrent "
    "queries or sources with the same group id interfere with each other, as they are members "
    "of the same consumer group, and a restarted query may be disturbed by its previous run. "
    "Use one query per group id, and/or set 'kafka.session.timeout.ms' small enough that the "
    "previous run's consumers are dead before the query restarts.")


def _rows_by_field() -> dict[str, list[SourceOption[Any]]]:
    by_field: dict[str, list[SourceOption[Any]]] = {}
    for row in OPTIONS:
        by_field.setdefault(row.field, []).append(row)
    return by_field


# the table's rows by the field they fill, in the table's order: alternatives together
_BY_FIELD = _rows_by_field()


def known_option_names() -> list[str]:
    """The source's option names (``kafka.*`` and ``schema.registry.*`` settings aside), as
    documented."""
    return sorted([*(row.name for row in OPTIONS), *value_option_names()])


def parse_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Parse and check the options of a read (``streaming``: a streaming query, else batch).

    Every option of the table first (:mod:`pyconsumer.spark.option_table`), then the checks
    involving several options. Raises :class:`ConfigurationError` naming the offending option
    and saying why."""
    opts = _lower_keys(options)
    fields = _read_table(opts, streaming)
    if not streaming:
        _check_batch_limits(fields["starting"], fields["ending"],
                            _decided_by(opts, "starting"), _decided_by(opts, "ending"))
        _check_batch_range(fields["starting"], fields["ending"])
    kafka_params = parse_kafka_params(opts)
    group_id = kafka_params.get("group.id")
    if group_id is not None:
        log.warning(_GROUP_ID_WARNING)
        if _given(opts, "groupIdPrefix"):
            log.warning("Option groupIdPrefix is ignored as option kafka.group.id is set")
    fields["min_records_per_partition"] = _min_records_per_partition(opts, fields)
    _check_offsets_per_trigger(opts, fields, streaming)
    if fields["commit_offsets_to_kafka"] and not (group_id or "").strip():
        raise option_error("commitOffsetsToKafka",
                           "committing offsets to Kafka needs a consumer group: set option "
                           "'kafka.group.id'")
    check_consumer_settings(kafka_params)
    return SourceOptions(**fields, kafka_params=kafka_params, group_id=group_id,
                         streaming=streaming, values=parse_value_options(opts))


# ------------------------------------------------------------------------ the table's rows


def _lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    opts: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(value, str):
            raise ConfigurationError(f"Option '{key}': expected a string value, got "
                                     f"{type(value).__name__} {value!r}")
        opts[str(key).lower()] = value      # the last spelling wins, as in Spark's map
    return opts


def _given(opts: Mapping[str, str], name: str) -> bool:
    return name.lower() in opts


def _read_table(opts: Mapping[str, str], streaming: bool) -> dict[str, Any]:
    """The fields the table fills: for each, the first of its options given, else its
    default. Options given to a query they do not apply to are refused or ignored first."""
    kind = "streaming" if streaming else "batch"
    for row in OPTIONS:
        if row.key in opts and not row.applies.to(streaming):
            if row.refused_elsewhere is not None:
                raise option_error(row.name, row.refused_elsewhere)
            log.warning("Option %s is ignored in %s queries", row.name, kind)
    fields: dict[str, Any] = {}
    for field, rows in _BY_FIELD.items():
        given = [row for row in rows if row.key in opts and row.applies.to(streaming)]
        if field in EXCLUSIVE_FIELDS:
            _check_exclusive(rows, given)
        if given:
            for other in given[1:]:
                log.warning("Option %s is ignored as option %s (which takes precedence) is set",
                            other.name, given[0].name)
            fields[field] = given[0].parser(opts[given[0].key], given[0].name)
            continue
        last = rows[-1]      # the one that carries the field's default
        text = last.default_text(streaming)
        fields[field] = None if text is None else last.parser(text, last.name)
    return fields


def _check_exclusive(rows: list[SourceOption[Any]], given: list[SourceOption[Any]]) -> None:
    names = ", ".join(row.name for row in rows)
    if not given:
        raise ConfigurationError(
            f"One of the options {names} must be specified for the Kafka source")
    if len(given) > 1:
        raise ConfigurationError(
            f"Only one of the options {names} can be specified for the Kafka source, got "
            + ", ".join(row.name for row in given))


def _decided_by(opts: Mapping[str, str], field: str) -> str:
    """The name of the option that decides ``field``: the first given, else the last one
    (whose default it is)."""
    rows = _BY_FIELD[field]
    return next((row.name for row in rows if row.key in opts), rows[-1].name)


# ------------------------------------------------------------------- across several options


def _check_batch_range(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Batch: per-partition starts and ends must name the same partitions, and no start may
    pass its end (Spark's checkOffsetLimitValidity; -2/-1 are not compared)."""
    if isinstance(starting, SpecificOffsets) and isinstance(ending, SpecificOffsets):
        start, end, what = starting.offsets, ending.offsets, "offset"
        keys = ("startingOffsets", "endingOffsets")
    elif isinstance(starting, SpecificTimestamps) and isinstance(ending, SpecificTimestamps):
        start, end, what = starting.timestamps, ending.timestamps, "timestamp"
        keys = ("startingOffsetsByTimestamp", "endingOffsetsByTimestamp")
    else:
        return
    if start.keys() != end.keys():
        def show(tps: Iterable[TopicPartition]) -> str:
            return "{" + ", ".join(str(tp) for tp in sorted(tps)) + "}"
        raise ConfigurationError(
            f"Options '{keys[0]}' and '{keys[1]}' must name the same topic partitions: "
            f"{show(start)} vs {show(end)}")
    for tp in sorted(start):
        s, e = start[tp], end[tp]
        if s >= 0 and e >= 0 and s > e:
            raise ConfigurationError(
                f"Options '{keys[0]}' and '{keys[1]}': the starting {what} {s} of {tp} is "
                f"greater than its ending {what} {e}")


def _check_batch_limits(starting: OffsetSpec, ending: OffsetSpec,
                        start_name: str, end_name: str) -> None:
    """Batch: a query can't start at the latest offsets nor end at the earliest ones."""
    if isinstance(starting, LatestSpec):
        raise option_error(start_name,
                           "starting offset can't be 'latest' for batch queries on Kafka")
    if isinstance(starting, SpecificOffsets):
        for tp, off in starting.offsets.items():
            if off == LATEST:
                raise option_error(start_name, f"the starting offset for {tp} can't be latest "
                                               "(-1) for batch queries on Kafka")
    if isinstance(ending, EarliestSpec):
        raise option_error(end_name,
                           "ending offset can't be 'earliest' for batch queries on Kafka")
    if isinstance(ending, SpecificOffsets):
        for tp, off in ending.offsets.items():
            if off == EARLIEST:
                raise option_error(end_name, f"the ending offset for {tp} can't be earliest "
                                             "(-2) for batch queries on Kafka")


def _min_records_per_partition(opts: Mapping[str, str], fields: Mapping[str, Any]) -> int:
    """minRecordsPerPartition, unless minPartitions or maxRecordsPerPartition ask for a task
    per range (1), as Spark."""
    if fields["min_partitions"] is not None:
        per_range = "minPartitions"
    elif fields["max_records_per_partition"] is not None:
        per_range = "maxRecordsPerPartition"
    else:
        return int(fields["min_records_per_partition"])
    if _given(opts, "minRecordsPerPartition"):
        log.warning("Option minRecordsPerPartition is ignored as option %s is set: a task per "
                    "range", per_range)
    return 1


def _check_offsets_per_trigger(opts: Mapping[str, str], fields: Mapping[str, Any],
                               streaming: bool) -> None:
    max_offsets: int | None = fields["max_offsets_per_trigger"]
    min_offsets: int | None = fields["min_offsets_per_trigger"]
    if not streaming and _given(opts, "maxOffsetsPerTrigger") and _given(
            opts, "minOffsetsPerTrigger"):
        # Spark still compares them in batch queries (as any two longs)
        max_offsets = parse_int(opts["maxoffsetspertrigger"], "maxOffsetsPerTrigger",
                                minimum=INT64_MIN)
        min_offsets = parse_int(opts["minoffsetspertrigger"], "minOffsetsPerTrigger",
                                minimum=INT64_MIN)
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise ConfigurationError(
            f"Options 'minOffsetsPerTrigger' and 'maxOffsetsPerTrigger': the value of "
            f"minOffsetsPerTrigger ({min_offsets}) is higher than maxOffsetsPerTrigger "
            f"({max_offsets})")
