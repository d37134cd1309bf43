"""Options of the ``pyconsumer`` Spark data source: parsed and checked like Spark's Kafka source.

The names, meanings, defaults, precedence and checks follow Spark's own Kafka source
(``KafkaSourceProvider``), so a query moves from ``format("kafka")`` to
``format("pyconsumer")`` without changing its options. Pure Python (no pyspark import): it runs
on the driver, on workers and in unit tests.

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

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.values import ValueOptions, parse_value_options, value_option_names
from pyconsumer.spark.planning import DEFAULT_MIN_RECORDS_PER_PARTITION
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

#: in offset JSON (and in :class:`SpecificOffsets`), the earliest offset of the partition
EARLIEST = -2
#: in offset JSON (and in :class:`SpecificOffsets`), the latest offset of the partition
LATEST = -1

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1


# ------------------------------------------------------------------------------- value types


class OffsetSpec:
    """Where a query starts or ends (Spark's ``KafkaOffsetRangeLimit``)."""

    __slots__ = ()


@dataclass(frozen=True)
class EarliestSpec(OffsetSpec):
    """The earliest offset of every partition."""


@dataclass(frozen=True)
class LatestSpec(OffsetSpec):
    """The latest offset (the end) of every partition."""


@dataclass(frozen=True)
class SpecificOffsets(OffsetSpec):
    """An offset per partition; :data:`EARLIEST` (-2) and :data:`LATEST` (-1) are allowed."""

    offsets: dict[TopicPartition, int]


@dataclass(frozen=True)
class SpecificTimestamps(OffsetSpec):
    """A timestamp (ms since the epoch) per partition, resolved with ``offsets_for_times``."""

    timestamps: dict[TopicPartition, int]


@dataclass(frozen=True)
class GlobalTimestamp(OffsetSpec):
    """One timestamp (ms since the epoch) for every partition."""

    timestamp: int


@dataclass(frozen=True)
class Subscribe:
    """Option ``subscribe``: these topics."""

    topics: tuple[str, ...]


@dataclass(frozen=True)
class SubscribePattern:
    """Option ``subscribePattern``: the topics whose whole name matches this (Java) regex."""

    pattern: str


@dataclass(frozen=True)
class Assign:
    """Option ``assign``: exactly these partitions."""

    partitions: tuple[TopicPartition, ...]


Strategy = Subscribe | SubscribePattern | Assign


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
        return _consumer_settings(self.kafka_params)


# --------------------------------------------------------------------------------- option keys

# lower-cased key -> the spelling used in the documentation (and in error messages)
_NAMES: dict[str, str] = {name.lower(): name for name in (
    "assign", "subscribe", "subscribePattern",
    "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets",
    "endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets",
    "startingOffsetsByTimestampStrategy", "failOnDataLoss",
    "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "maxBytesPerTrigger",
    "minPartitions", "maxRecordsPerPartition", "minRecordsPerPartition", "includeHeaders",
    "groupIdPrefix",
    "fetchOffset.numRetries", "fetchOffset.retryIntervalMs", "kafkaConsumer.pollTimeoutMs",
    "commitOffsetsToKafka",
)}

_STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")
_STARTING_KEYS = ("startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets")
_ENDING_KEYS = ("endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets")
_TRIGGER_KEYS = ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay",
                 "maxbytespertrigger")

DEFAULT_MAX_TRIGGER_DELAY = "15m"
DEFAULT_FETCH_OFFSET_NUM_RETRIES = 3
#: what Spark's code uses (KafkaOffsetReaderAdmin/Consumer); its documentation says 10
DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS = 1000
#: Spark falls back to spark.network.timeout (120s)
DEFAULT_POLL_TIMEOUT_MS = 120_000
STREAMING_GROUP_ID_PREFIX = "spark-kafka-source"
BATCH_GROUP_ID_PREFIX = "spark-kafka-relation"

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1000,"1":1000},"topicB":{"0":2000}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'

_GROUP_ID_WARNING = (
    "Kafka option 'kafka.group.id' is set on this query. This is not recommended: concurrent "
    "queries or sources with the same group id interfere with each other, as they are members "
    "of the same consumer group, and a restarted query may be disturbed by its previous run. "
    "Use one query per group id, and/or set 'kafka.session.timeout.ms' small enough that the "
    "previous run's consumers are dead before the query restarts.")


def known_option_names() -> list[str]:
    """The source's option names (``kafka.*`` and ``schema.registry.*`` settings aside), as
    documented."""
    return sorted([*_NAMES.values(), *value_option_names()])


def _name(key: str) -> str:
    """The documented spelling of a lower-cased option key."""
    return _NAMES.get(key, key)


def _fail(key: str, why: str) -> ConfigurationError:
    return ConfigurationError(f"Option '{_name(key)}': {why}")


# ------------------------------------------------------------------------------ value parsers

_INT_RE = re.compile(r"[+-]?[0-9]+")


def _int(text: str, key: str, *, minimum: int, maximum: int = _INT64_MAX,
         what: str = "an integer") -> int:
    """``text`` as an integer (Java's ``toLong``/``toInt``: no spaces, ASCII digits)."""
    if not _INT_RE.fullmatch(text):
        raise _fail(key, f"must be {what}, got {text!r}")
    value = int(text)
    if not minimum <= value <= maximum:
        raise _fail(key, f"must be {what}, got {text!r}")
    return value


def _bool(text: str, key: str) -> bool:
    """``text`` as a boolean: "true" or "false" in any case, nothing else (Scala's
    ``toBoolean``)."""
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    raise _fail(key, f"must be 'true' or 'false', got {text!r}")


def _timestamp(text: str, key: str) -> int:
    """A single timestamp in ms since the epoch (surrounding blanks allowed, as in Spark)."""
    stripped = text.strip()
    if not _INT_RE.fullmatch(stripped):
        raise _fail(key, f"expected a single long value (ms since the epoch), got {text!r}")
    value = int(stripped)
    if not 0 <= value <= _INT64_MAX:
        raise _fail(key, f"a timestamp can't be negative or beyond a long, got {text!r}")
    return value


_TIME_UNITS_US: dict[str, int] = {
    "us": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "min": 60_000_000,
    "h": 3_600_000_000, "d": 86_400_000_000,
}
_DURATION_RE = re.compile(r"(-?[0-9]+)([a-z]+)?")


def _number_and_unit(text: str, pattern: re.Pattern[str], units: Mapping[str, int]
                     ) -> tuple[int, str | None] | None:
    """``<integer><unit>`` (case and surrounding blanks ignored), or None when ``text`` does
    not have that form or names a unit not in ``units``."""
    match = pattern.fullmatch(text.strip().lower())
    if match is None or (match.group(2) is not None and match.group(2) not in units):
        return None
    return int(match.group(1)), match.group(2)


def parse_duration_ms(text: str, option: str) -> int:
    """A Spark time string (``JavaUtils.timeStringAsMs``) in milliseconds.

    ``<integer><unit>`` with unit ``us``, ``ms``, ``s``, ``m``/``min``, ``h`` or ``d``, case and
    surrounding blanks ignored; a bare integer is milliseconds. ``"15m"`` -> 900000,
    ``"500us"`` -> 0 (truncated, as Java's ``TimeUnit.convert``). No space between number and
    unit, no long unit names (``"2 minutes"`` is rejected, as in Spark)."""
    parsed = _number_and_unit(text, _DURATION_RE, _TIME_UNITS_US)
    if parsed is None:
        raise ConfigurationError(
            f"Option '{option}': {text!r} is not a duration; give an integer with a unit: "
            "microseconds (us), milliseconds (ms), seconds (s), minutes (m or min), hours (h) "
            "or days (d), e.g. 50s, 100ms, 15m (a bare integer is milliseconds)")
    micros = parsed[0] * _TIME_UNITS_US[parsed[1] or "ms"]
    ms = abs(micros) // 1000 * (-1 if micros < 0 else 1)    # truncate toward zero
    if not _INT64_MIN <= ms <= _INT64_MAX:
        raise ConfigurationError(f"Option '{option}': duration {text!r} is out of range")
    return ms


_SIZE_UNITS: dict[str, int] = {
    "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30,
    "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50,
}
_SIZE_RE = re.compile(r"([0-9]+)([a-z]+)?")


def parse_size_bytes(text: str, option: str) -> int:
    """A positive size in bytes: an integer, or with a binary unit like Spark's byte strings
    (``b``, ``k``/``kb``, ``m``/``mb``, ``g``/``gb``, ``t``/``tb``, ``p``/``pb``; case and
    surrounding blanks ignored): ``"64m"`` -> 67108864."""
    parsed = _number_and_unit(text, _SIZE_RE, _SIZE_UNITS)
    if parsed is None:
        raise ConfigurationError(
            f"Option '{option}': {text!r} is not a size; give a positive integer number of "
            "bytes, optionally with a unit k, m, g, t or p (powers of 1024), e.g. 1048576, "
            "512k, 64m, 1g")
    size = parsed[0] * _SIZE_UNITS[parsed[1] or "b"]
    if not 0 < size <= _INT64_MAX:
        raise ConfigurationError(f"Option '{option}': size {text!r} must be positive and "
                                 "fit in a long")
    return size


# ------------------------------------------------------------------------------ offsets JSON


class _BadJson(Exception):
    """Internal: what is wrong with a topic -> partition -> number object."""


def _partition_map(obj: object, *, minimum: int, what: str) -> dict[TopicPartition, int]:
    """``{"topic": {"0": n, ...}, ...}`` (already decoded) as ``{TopicPartition: n}``."""
    if not isinstance(obj, Mapping):
        raise _BadJson("not a JSON object of topics")
    out: dict[TopicPartition, int] = {}
    for topic, parts in obj.items():
        if not isinstance(topic, str) or not topic:
            raise _BadJson(f"topic {topic!r} is not a non-empty string")
        if not isinstance(parts, Mapping):
            raise _BadJson(f"topic {topic!r} does not map to an object of partitions")
        for part, value in parts.items():
            if isinstance(part, str) and _INT_RE.fullmatch(part):
                partition = int(part)
            elif isinstance(part, int) and not isinstance(part, bool):
                partition = part
            else:
                raise _BadJson(f"partition {part!r} of topic {topic!r} is not an integer")
            if not 0 <= partition <= _INT32_MAX:
                raise _BadJson(f"partition {part!r} of topic {topic!r} is out of range")
            tp = TopicPartition(topic, partition)
            if isinstance(value, bool) or not isinstance(value, int):
                raise _BadJson(f"the {what} of {tp} is not an integer: {value!r}")
            if not minimum <= value <= _INT64_MAX:
                raise _BadJson(f"the {what} of {tp} is out of range: {value}")
            out[tp] = value
    return out


def _decode_partition_map(text: str, option: str, *, minimum: int, what: str,
                          example: str) -> dict[TopicPartition, int]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigurationError(
            f"Option '{option}': expected JSON like {example}, got {text!r} (not valid JSON "
            f"at character {e.pos + 1})") from None
    try:
        return _partition_map(obj, minimum=minimum, what=what)
    except _BadJson as e:
        raise ConfigurationError(
            f"Option '{option}': expected JSON like {example}, got {text!r} ({e})") from None


def parse_offsets_json(text: str, option: str) -> dict[TopicPartition, int]:
    """``{"t":{"0":23,"1":-1}}`` as ``{TopicPartition("t", 0): 23, ...}``; -2 means earliest,
    -1 latest. A :class:`ConfigurationError` naming ``option`` when it is not that shape."""
    return _decode_partition_map(text, option, minimum=EARLIEST, what="offset",
                                 example=_OFFSETS_EXAMPLE)


def _parse_timestamps_json(text: str, option: str) -> dict[TopicPartition, int]:
    return _decode_partition_map(text, option, minimum=0, what="timestamp",
                                 example=_TIMESTAMPS_EXAMPLE)


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The checkpoint form of ``offsets``: ``{"t": {"0": 23}}``, string partition keys, topics
    and partitions in order (so equal offsets always serialize alike)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets, key=lambda tp: (tp.topic, tp.partition)):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def offsets_from_json(obj: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """The inverse of :func:`offsets_to_json` (``obj`` already decoded); a ``ValueError`` when
    ``obj`` is not that shape."""
    try:
        return _partition_map(obj, minimum=EARLIEST, what="offset")
    except _BadJson as e:
        raise ValueError(f"invalid Kafka source offsets {obj!r}: {e}") from None


def _parse_assign(text: str) -> tuple[TopicPartition, ...]:
    why = f"expected JSON like {_ASSIGN_EXAMPLE}, got {text!r}"
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise _fail("assign", f"{why} ({e})") from None
    if not isinstance(obj, dict):
        raise _fail("assign", why)
    out: dict[TopicPartition, None] = {}       # ordered, without duplicates
    for topic, parts in obj.items():
        if not topic or not isinstance(parts, list):
            raise _fail("assign", why)
        for p in parts:
            if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= _INT32_MAX:
                raise _fail("assign", f"{why} (partition {p!r} of topic {topic!r})")
            out[TopicPartition(topic, p)] = None
    if not out:
        raise _fail("assign", f"no topic partitions to assign in {text!r}")
    return tuple(out)


# ---------------------------------------------------------------------------------- parsing


def _strategy(opts: Mapping[str, str]) -> Strategy:
    given = [k for k in _STRATEGY_KEYS if k in opts]
    names = ", ".join(_name(k) for k in _STRATEGY_KEYS)
    if not given:
        raise ConfigurationError(
            f"One of the options {names} must be specified for the Kafka source")
    if len(given) > 1:
        raise ConfigurationError(
            f"Only one of the options {names} can be specified for the Kafka source, got "
            + ", ".join(_name(k) for k in given))
    key = given[0]
    value = opts[key]
    if key == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise _fail(key, f"no topics to subscribe to in {value!r}")
        return Subscribe(topics)
    if key == "subscribepattern":
        pattern = value.strip()
        if not pattern:
            raise _fail(key, f"the pattern to subscribe to is empty ({value!r})")
        try:
            re.compile(pattern)
        except re.error as e:
            raise _fail(key, f"{pattern!r} is not a regular expression Python can use "
                             f"({e})") from None
        return SubscribePattern(pattern)
    if not value.strip().startswith("{"):
        raise _fail(key, f"no topic partitions to assign: expected JSON like "
                         f"{_ASSIGN_EXAMPLE}, got {value!r}")
    return Assign(_parse_assign(value.strip()))


def _kafka_params(opts: Mapping[str, str]) -> dict[str, str]:
    params = {k[len("kafka."):]: v for k, v in opts.items()
              if k.startswith("kafka.") and len(k) > len("kafka.")}
    if "auto.offset.reset" in params:
        raise ConfigurationError(
            "Option 'kafka.auto.offset.reset': Kafka option 'auto.offset.reset' is not "
            "supported. Set the source option 'startingOffsets' to 'earliest' or 'latest' "
            "instead, to say where to start: the source itself decides which offsets are "
            "read, rather than the Kafka consumer, so that no data is missed when topics or "
            "partitions are added to a subscription. 'startingOffsets' only applies when a new "
            "streaming query starts; a resumed query always continues where it stopped.")
    for name, what in (("key.deserializer", "keys"), ("value.deserializer", "values")):
        if name in params:
            raise ConfigurationError(
                f"Option 'kafka.{name}': Kafka option '{name}' is not supported: {what} are "
                f"read as bytes (binary column) unless the source option "
                f"'{what[:-1]}Format' says otherwise (string, json, avro); or use DataFrame "
                f"operations to deserialize the {what}.")
    if "enable.auto.commit" in params:
        raise ConfigurationError(
            "Option 'kafka.enable.auto.commit': Kafka option 'enable.auto.commit' is not "
            "supported: the source tracks the offsets it has read in the query's checkpoint, "
            "not in Kafka (see the option 'commitOffsetsToKafka' to also commit them to a "
            "group).")
    if "interceptor.classes" in params:
        raise ConfigurationError(
            "Option 'kafka.interceptor.classes': Kafka option 'interceptor.classes' is not "
            "supported: interceptors could change the records, and the source reads them as "
            "raw bytes.")
    if "bootstrap.servers" not in params:
        raise ConfigurationError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring the Kafka "
            "consumer")
    if not params["bootstrap.servers"].strip():
        raise ConfigurationError("Option 'kafka.bootstrap.servers' is empty: give a "
                                 "comma-separated list of host:port")
    return params


def _consumer_settings(params: Mapping[str, str]) -> dict[str, str]:
    settings = dict(params)
    if not settings.get("group.id", "").strip():
        settings.pop("group.id", None)
    settings["enable.auto.commit"] = "false"
    return settings


def _check_consumer_settings(params: Mapping[str, str]) -> None:
    """The ``kafka.*`` options as pyconsumer's consumer takes them, checked now so that a bad
    one fails with its option name instead of later in a driver or task. Unknown settings
    are refused: Spark's Java consumer only logs a warning for them, so a misspelled
    setting silently does nothing there."""
    from pyconsumer.config import ConsumerConfig

    try:
        ConsumerConfig(**_consumer_settings(params))
    except ConfigurationError as e:
        text = str(e)
        named = [k for k in params if re.search(rf"(?<![\w.]){re.escape(k)}(?![\w.])", text)]
        where = ", ".join(f"'kafka.{k}'" for k in named) or "kafka.*"
        raise ConfigurationError(f"Option {where}: {text}") from None


def _ignored(opts: Mapping[str, str], keys: tuple[str, ...], chosen: str) -> None:
    for key in keys:
        if key in opts and key != chosen:
            log.warning("Option %s is ignored as option %s (which takes precedence) is set",
                        _name(key), _name(chosen))


def _offset_spec(opts: Mapping[str, str], keys: tuple[str, str, str],
                 default: OffsetSpec) -> OffsetSpec:
    """The offset spec from the first of (global timestamp, timestamps JSON, offsets) keys
    present, the others being ignored (not even parsed), as in Spark."""
    global_key, by_ts_key, offsets_key = keys
    for key in keys:
        if key in opts:
            _ignored(opts, keys[keys.index(key) + 1:], key)
            break
    if global_key in opts:
        return GlobalTimestamp(_timestamp(opts[global_key], global_key))
    if by_ts_key in opts:
        return SpecificTimestamps(_parse_timestamps_json(opts[by_ts_key].strip(),
                                                         _name(by_ts_key)))
    if offsets_key in opts:
        value = opts[offsets_key].strip()
        if value.lower() == "latest":
            return LatestSpec()
        if value.lower() == "earliest":
            return EarliestSpec()
        if not value.startswith("{"):
            raise _fail(offsets_key, f"expected earliest, latest or JSON like "
                                     f"{_OFFSETS_EXAMPLE}, got {value!r}")
        return SpecificOffsets(parse_offsets_json(value, _name(offsets_key)))
    return default


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
                        start_key: str, end_key: str) -> None:
    if isinstance(starting, LatestSpec):
        raise _fail(start_key, "starting offset can't be 'latest' for batch queries on Kafka")
    if isinstance(starting, SpecificOffsets):
        for tp, off in starting.offsets.items():
            if off == LATEST:
                raise _fail(start_key, f"the starting offset for {tp} can't be latest (-1) "
                                       "for batch queries on Kafka")
    if isinstance(ending, EarliestSpec):
        raise _fail(end_key, "ending offset can't be 'earliest' for batch queries on Kafka")
    if isinstance(ending, SpecificOffsets):
        for tp, off in ending.offsets.items():
            if off == EARLIEST:
                raise _fail(end_key, f"the ending offset for {tp} can't be earliest (-2) "
                                     "for batch queries on Kafka")


def _chosen(opts: Mapping[str, str], keys: tuple[str, ...]) -> str:
    """The key of ``keys`` that decides (the first present; the last one by default)."""
    return next((k for k in keys if k in opts), keys[-1])


def _optional(opts: Mapping[str, str], key: str, parse: Callable[[str, str], int]
              ) -> int | None:
    return parse(opts[key], key) if key in opts else None


def _positive_long(text: str, key: str) -> int:
    return _int(text, key, minimum=1, what="a positive integer")


def parse_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Parse and check the options of a read (``streaming``: a streaming query, else batch).

    Raises :class:`ConfigurationError` naming the offending option and saying why."""
    opts: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(value, str):
            raise ConfigurationError(f"Option '{key}': expected a string value, got "
                                     f"{type(value).__name__} {value!r}")
        opts[str(key).lower()] = value      # the last spelling wins, as in Spark's map

    # -- where to start and end
    strategy_name = opts.get("startingoffsetsbytimestampstrategy", "error")
    by_ts_strategy = strategy_name.lower()
    if by_ts_strategy not in ("error", "latest"):
        raise _fail("startingoffsetsbytimestampstrategy",
                    f"must be 'error' or 'latest', got {strategy_name!r}")

    starting: OffsetSpec
    ending: OffsetSpec
    if streaming:
        for key in _ENDING_KEYS:
            if key in opts:
                kind = "offset" if key == "endingoffsets" else "timestamp"
                raise _fail(key, f"ending {kind} not valid in streaming queries")
        starting = _offset_spec(opts, _STARTING_KEYS, LatestSpec())
        ending = LatestSpec()
    else:
        starting = _offset_spec(opts, _STARTING_KEYS, EarliestSpec())
        ending = _offset_spec(opts, _ENDING_KEYS, LatestSpec())
        _check_batch_limits(starting, ending, _chosen(opts, _STARTING_KEYS),
                            _chosen(opts, _ENDING_KEYS))
        _check_batch_range(starting, ending)

    # -- what to read, and the consumer
    strategy = _strategy(opts)
    kafka_params = _kafka_params(opts)
    group_id = kafka_params.get("group.id")
    default_prefix = STREAMING_GROUP_ID_PREFIX if streaming else BATCH_GROUP_ID_PREFIX
    group_id_prefix = opts.get("groupidprefix", default_prefix)
    if group_id is not None:
        log.warning(_GROUP_ID_WARNING)
        if "groupidprefix" in opts:
            log.warning("Option groupIdPrefix is ignored as option kafka.group.id is set")

    # -- sizes of tasks
    min_partitions = _optional(opts, "minpartitions", lambda text, key: _int(
        text, key, minimum=1, maximum=_INT32_MAX, what="a positive integer"))
    max_records_per_partition = _optional(opts, "maxrecordsperpartition", _positive_long)
    min_records_per_partition = _optional(opts, "minrecordsperpartition", _positive_long)
    if min_records_per_partition is not None and (min_partitions is not None
                                                  or max_records_per_partition is not None):
        log.warning("Option minRecordsPerPartition is ignored as option %s is set: a task per "
                    "range", "minPartitions" if min_partitions is not None
                    else "maxRecordsPerPartition")

    # -- triggers (streaming only; Spark ignores them in batch queries, with a warning)
    max_offsets: int | None = None
    min_offsets: int | None = None
    max_bytes: int | None = None
    max_trigger_delay_ms = parse_duration_ms(DEFAULT_MAX_TRIGGER_DELAY, "maxTriggerDelay")
    if streaming:
        max_offsets = _optional(opts, "maxoffsetspertrigger", _positive_long)
        # 0 means no minimum, as in Spark
        min_offsets = _optional(opts, "minoffsetspertrigger", lambda text, key: _int(
            text, key, minimum=0, what="a non-negative integer"))
        max_bytes = _optional(opts, "maxbytespertrigger",
                              lambda text, key: parse_size_bytes(text, _name(key)))
        if "maxtriggerdelay" in opts:
            max_trigger_delay_ms = parse_duration_ms(opts["maxtriggerdelay"], "maxTriggerDelay")
    else:
        for key in _TRIGGER_KEYS:
            if key in opts:
                log.warning("Option %s is ignored in batch queries", _name(key))
        if "maxoffsetspertrigger" in opts and "minoffsetspertrigger" in opts:
            # Spark still compares them in batch queries (as any two longs)
            max_offsets = _int(opts["maxoffsetspertrigger"], "maxoffsetspertrigger",
                               minimum=_INT64_MIN)
            min_offsets = _int(opts["minoffsetspertrigger"], "minoffsetspertrigger",
                               minimum=_INT64_MIN)
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise ConfigurationError(
            f"Options 'minOffsetsPerTrigger' and 'maxOffsetsPerTrigger': the value of "
            f"minOffsetsPerTrigger ({min_offsets}) is higher than maxOffsetsPerTrigger "
            f"({max_offsets})")
    if not streaming:
        max_offsets = min_offsets = None

    # -- the rest
    commit = _bool(opts.get("commitoffsetstokafka", "false"), "commitoffsetstokafka")
    if commit and not (group_id or "").strip():
        raise _fail("commitoffsetstokafka",
                    "committing offsets to Kafka needs a consumer group: set option "
                    "'kafka.group.id'")

    _check_consumer_settings(kafka_params)
    values = parse_value_options(opts)

    return SourceOptions(
        strategy=strategy,
        kafka_params=kafka_params,
        starting=starting,
        ending=ending,
        starting_by_timestamp_strategy=by_ts_strategy,
        fail_on_data_loss=_bool(opts.get("failondataloss", "true"), "failondataloss"),
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=max_trigger_delay_ms,
        max_bytes_per_trigger=max_bytes,
        min_partitions=min_partitions,
        max_records_per_partition=max_records_per_partition,
        include_headers=_bool(opts.get("includeheaders", "false"), "includeheaders"),
        group_id_prefix=group_id_prefix,
        group_id=group_id,
        fetch_offset_num_retries=_int(
            opts.get("fetchoffset.numretries", str(DEFAULT_FETCH_OFFSET_NUM_RETRIES)),
            "fetchoffset.numretries", minimum=0, maximum=_INT32_MAX,
            what="a non-negative integer"),
        fetch_offset_retry_interval_ms=_int(
            opts.get("fetchoffset.retryintervalms", str(DEFAULT_FETCH_OFFSET_RETRY_INTERVAL_MS)),
            "fetchoffset.retryintervalms", minimum=0, what="a non-negative integer (ms)"),
        poll_timeout_ms=_int(
            opts.get("kafkaconsumer.polltimeoutms", str(DEFAULT_POLL_TIMEOUT_MS)),
            "kafkaconsumer.polltimeoutms", minimum=0, what="a non-negative integer (ms)"),
        commit_offsets_to_kafka=commit,
        streaming=streaming,
        values=values,
        min_records_per_partition=(
            1 if min_partitions is not None or max_records_per_partition is not None
            else min_records_per_partition or DEFAULT_MIN_RECORDS_PER_PARTITION),
    )
