"""The Spark source's options, declared once: one :class:`SourceOption` row per option.

A row gives the option's name as Spark spells it, the :class:`SourceOptions` field it fills,
its parser (its type, and its check), its default and whether it applies to batch queries,
streaming ones or both. :func:`pyconsumer.spark.options.parse_options` reads every row alike;
the checks that involve several options are there. Adding an option is adding a row (and its
field to ``SourceOptions``).

Rows filling the same field are alternatives, listed in order of precedence: the first one
given decides and the others are ignored without being parsed, as in Spark; the last one
carries the field's default. In the fields of :data:`EXCLUSIVE_FIELDS` exactly one must be
given instead.

``kafka.*`` (consumer settings) and the typed-value options (:mod:`pyconsumer.spark.values`)
are not rows: they are families of names, passed on as a whole.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from pyconsumer.spark.option_parsers import (
    ASSIGN,
    BOOLEAN,
    DURATION_MS,
    GLOBAL_TIMESTAMP,
    MILLIS,
    NON_NEGATIVE_INT,
    NON_NEGATIVE_LONG,
    OFFSETS,
    POSITIVE_INT,
    POSITIVE_LONG,
    SIZE_BYTES,
    SUBSCRIBE,
    SUBSCRIBE_PATTERN,
    TEXT,
    TIMESTAMPS,
    OptionParser,
    one_of,
)
from pyconsumer.spark.planning import DEFAULT_MIN_RECORDS_PER_PARTITION

__all__ = ["Applies", "ByMode", "SourceOption", "OPTIONS", "EXCLUSIVE_FIELDS",
           "STREAMING_GROUP_ID_PREFIX", "BATCH_GROUP_ID_PREFIX"]

T = TypeVar("T")

STREAMING_GROUP_ID_PREFIX = "spark-kafka-source"
BATCH_GROUP_ID_PREFIX = "spark-kafka-relation"


class Applies(Enum):
    """The queries an option applies to."""

    BOTH = "batch and streaming"
    STREAMING = "streaming"
    BATCH = "batch"

    def to(self, streaming: bool) -> bool:
        return self is Applies.BOTH or (self is Applies.STREAMING) == streaming


@dataclass(frozen=True)
class ByMode:
    """A default that differs between streaming and batch queries."""

    streaming: str
    batch: str


@dataclass(frozen=True)
class SourceOption(Generic[T]):
    """One option of the source: a row of :data:`OPTIONS`."""

    #: as Spark documents it; keys are compared lower-cased
    name: str
    #: the :class:`~pyconsumer.spark.options.SourceOptions` field it fills
    field: str
    #: its type and its check
    parser: OptionParser[T]
    #: text parsed like a given value; None: the field is None unless the option is given
    default: str | ByMode | None
    doc: str
    applies: Applies = Applies.BOTH
    #: given in a query it does not apply to: refused with this reason; None: ignored with a
    #: warning (Spark's way)
    refused_elsewhere: str | None = None

    @property
    def key(self) -> str:
        """The option's key as PySpark passes it (lower-cased)."""
        return self.name.lower()

    @property
    def type(self) -> str:
        return self.parser.type_name

    def default_text(self, streaming: bool) -> str | None:
        if isinstance(self.default, ByMode):
            return self.default.streaming if streaming else self.default.batch
        return self.default


_BATCH, _STREAMING = Applies.BATCH, Applies.STREAMING
_NO_END_TIMESTAMP = "ending timestamp not valid in streaming queries"
_NO_END_OFFSET = "ending offset not valid in streaming queries"

#: every option of the source, in the order they are checked (an error names the first bad one)
OPTIONS: tuple[SourceOption[Any], ...] = (
    SourceOption("startingOffsetsByTimestampStrategy", "starting_by_timestamp_strategy",
                 one_of("error", "latest"), "error",
                 "What a starting timestamp with no offset at or after it gives: an error, "
                 "or the latest offset"),
    # where to start: by precedence
    SourceOption("startingTimestamp", "starting", GLOBAL_TIMESTAMP, None,
                 "Start every partition at this timestamp (ms since the epoch)"),
    SourceOption("startingOffsetsByTimestamp", "starting", TIMESTAMPS, None,
                 "Start each partition at its timestamp"),
    SourceOption("startingOffsets", "starting", OFFSETS,
                 ByMode(streaming="latest", batch="earliest"),
                 "Start at earliest, latest, or each partition at its offset (-2 earliest, "
                 "-1 latest)"),
    # where to end: by precedence; batch only
    SourceOption("endingTimestamp", "ending", GLOBAL_TIMESTAMP, None,
                 "End every partition at this timestamp (ms since the epoch)",
                 applies=_BATCH, refused_elsewhere=_NO_END_TIMESTAMP),
    SourceOption("endingOffsetsByTimestamp", "ending", TIMESTAMPS, None,
                 "End each partition at its timestamp",
                 applies=_BATCH, refused_elsewhere=_NO_END_TIMESTAMP),
    SourceOption("endingOffsets", "ending", OFFSETS, "latest",
                 "End at latest, or each partition at its offset (-1 latest)",
                 applies=_BATCH, refused_elsewhere=_NO_END_OFFSET),
    # what to read: exactly one
    SourceOption("subscribe", "strategy", SUBSCRIBE, None, "Read these topics"),
    SourceOption("subscribePattern", "strategy", SUBSCRIBE_PATTERN, None,
                 "Read the topics whose whole name matches this regular expression"),
    SourceOption("assign", "strategy", ASSIGN, None, "Read exactly these partitions"),
    SourceOption("groupIdPrefix", "group_id_prefix", TEXT,
                 ByMode(streaming=STREAMING_GROUP_ID_PREFIX, batch=BATCH_GROUP_ID_PREFIX),
                 "Prefix of the consumer group ids Spark would generate (kafka.group.id "
                 "takes precedence)"),
    # sizes of tasks
    SourceOption("minPartitions", "min_partitions", POSITIVE_INT, None,
                 "Split the offset ranges into at least this many tasks"),
    SourceOption("maxRecordsPerPartition", "max_records_per_partition", POSITIVE_LONG, None,
                 "Split the offset ranges into tasks of at most this many offsets"),
    SourceOption("minRecordsPerPartition", "min_records_per_partition", POSITIVE_LONG,
                 str(DEFAULT_MIN_RECORDS_PER_PARTITION),
                 "Group the small ranges of a topic into tasks of at least this many "
                 "offsets (pyconsumer only)"),
    # triggers: streaming only, ignored in batch queries as in Spark
    SourceOption("maxOffsetsPerTrigger", "max_offsets_per_trigger", POSITIVE_LONG, None,
                 "At most this many offsets per micro-batch", applies=_STREAMING),
    SourceOption("minOffsetsPerTrigger", "min_offsets_per_trigger", NON_NEGATIVE_LONG, None,
                 "Wait for this many offsets before a micro-batch (0: no minimum)",
                 applies=_STREAMING),
    SourceOption("maxTriggerDelay", "max_trigger_delay_ms", DURATION_MS, "15m",
                 "The longest wait for minOffsetsPerTrigger", applies=_STREAMING),
    SourceOption("maxBytesPerTrigger", "max_bytes_per_trigger", SIZE_BYTES, None,
                 "At most about this many bytes per micro-batch (pyconsumer only)",
                 applies=_STREAMING),
    SourceOption("commitOffsetsToKafka", "commit_offsets_to_kafka", BOOLEAN, "false",
                 "Also commit the offsets a query has processed to kafka.group.id "
                 "(pyconsumer only)"),
    SourceOption("failOnDataLoss", "fail_on_data_loss", BOOLEAN, "true",
                 "Fail when offsets were lost (deleted, or topics removed), or only warn"),
    SourceOption("includeHeaders", "include_headers", BOOLEAN, "false",
                 "Add the records' headers as a column"),
    SourceOption("fetchOffset.numRetries", "fetch_offset_num_retries", NON_NEGATIVE_INT, "3",
                 "Retries of an offset lookup"),
    # Spark's code waits 1000 ms (KafkaOffsetReaderAdmin/Consumer); its documentation says 10
    SourceOption("fetchOffset.retryIntervalMs", "fetch_offset_retry_interval_ms", MILLIS,
                 "1000", "Wait between the retries of an offset lookup"),
    # Spark falls back to spark.network.timeout (120s)
    SourceOption("kafkaConsumer.pollTimeoutMs", "poll_timeout_ms", MILLIS, "120000",
                 "The longest wait for records in a task"),
)

#: fields whose options exclude each other: exactly one of them must be given
EXCLUSIVE_FIELDS = frozenset({"strategy"})
