"""Parsers of the Spark source's option values: text in, value out, or a ConfigurationError
naming the option and saying why.

Each reads its text as Spark's Kafka source does (Scala's ``toLong``/``toBoolean``, Spark's
time and byte strings, the offsets JSON), a little stricter where noted in
:mod:`pyconsumer.spark.options`. A parser is given the option's documented name, which every
message quotes.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.offsets_json import OFFSETS_EXAMPLE, parse_offsets_json, parse_timestamps_json
from pyconsumer.spark.specs import (
    Assign,
    EarliestSpec,
    GlobalTimestamp,
    LatestSpec,
    OffsetSpec,
    SpecificOffsets,
    SpecificTimestamps,
    Subscribe,
    SubscribePattern,
)
from pyconsumer.structs import TopicPartition

__all__ = [
    "OptionParser", "option_error", "parse_int", "parse_duration_ms", "parse_size_bytes",
    "INT32_MAX", "INT64_MIN", "INT64_MAX",
    "TEXT", "BOOLEAN", "POSITIVE_LONG", "POSITIVE_INT", "NON_NEGATIVE_LONG", "NON_NEGATIVE_INT",
    "MILLIS", "DURATION_MS", "SIZE_BYTES", "one_of",
    "GLOBAL_TIMESTAMP", "TIMESTAMPS", "OFFSETS", "SUBSCRIBE", "SUBSCRIBE_PATTERN", "ASSIGN",
]

T = TypeVar("T")

INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'


@dataclass(frozen=True)
class OptionParser(Generic[T]):
    """How one kind of option value is read: ``type_name`` says it in words (for the table's
    readers), ``parse(text, name)`` reads it, ``name`` being the option's documented name."""

    type_name: str
    parse: Callable[[str, str], T]

    def __call__(self, text: str, name: str) -> T:
        return self.parse(text, name)


def option_error(name: str, why: str) -> ConfigurationError:
    return ConfigurationError(f"Option '{name}': {why}")


# ------------------------------------------------------------------------------- scalars

_INT_RE = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str, name: str, *, minimum: int, maximum: int = INT64_MAX,
              what: str = "an integer") -> int:
    """``text`` as an integer (Java's ``toLong``/``toInt``: no spaces, ASCII digits)."""
    if not _INT_RE.fullmatch(text):
        raise option_error(name, f"must be {what}, got {text!r}")
    value = int(text)
    if not minimum <= value <= maximum:
        raise option_error(name, f"must be {what}, got {text!r}")
    return value


def _integer(type_name: str, *, minimum: int, maximum: int, what: str) -> OptionParser[int]:
    return OptionParser(type_name, lambda text, name: parse_int(
        text, name, minimum=minimum, maximum=maximum, what=what))


def _parse_bool(text: str, name: str) -> bool:
    """``text`` as a boolean: "true" or "false" in any case, nothing else (Scala's
    ``toBoolean``)."""
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    raise option_error(name, f"must be 'true' or 'false', got {text!r}")


def one_of(*choices: str) -> OptionParser[str]:
    """One of ``choices`` in any case, lower-cased."""
    words = " or ".join(f"'{c}'" for c in choices)

    def parse(text: str, name: str) -> str:
        if text.lower() not in choices:
            raise option_error(name, f"must be {words}, got {text!r}")
        return text.lower()
    return OptionParser("string", parse)


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
    if not INT64_MIN <= ms <= INT64_MAX:
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
    if not 0 < size <= INT64_MAX:
        raise ConfigurationError(f"Option '{option}': size {text!r} must be positive and "
                                 "fit in a long")
    return size


TEXT: OptionParser[str] = OptionParser("string", lambda text, name: text)
BOOLEAN = OptionParser("boolean", _parse_bool)
POSITIVE_LONG = _integer("long", minimum=1, maximum=INT64_MAX, what="a positive integer")
POSITIVE_INT = _integer("int", minimum=1, maximum=INT32_MAX, what="a positive integer")
NON_NEGATIVE_LONG = _integer("long", minimum=0, maximum=INT64_MAX,
                             what="a non-negative integer")
NON_NEGATIVE_INT = _integer("int", minimum=0, maximum=INT32_MAX, what="a non-negative integer")
MILLIS = _integer("long (ms)", minimum=0, maximum=INT64_MAX,
                  what="a non-negative integer (ms)")
DURATION_MS = OptionParser("duration (us, ms, s, m, h, d)", parse_duration_ms)
SIZE_BYTES = OptionParser("size (b, k, m, g, t, p)", parse_size_bytes)


# ------------------------------------------------------------------ where to start and end


def _parse_timestamp(text: str, name: str) -> GlobalTimestamp:
    """A single timestamp in ms since the epoch (surrounding blanks allowed, as in Spark)."""
    stripped = text.strip()
    if not _INT_RE.fullmatch(stripped):
        raise option_error(name, f"expected a single long value (ms since the epoch), "
                                 f"got {text!r}")
    value = int(stripped)
    if not 0 <= value <= INT64_MAX:
        raise option_error(name, f"a timestamp can't be negative or beyond a long, got {text!r}")
    return GlobalTimestamp(value)


def _parse_timestamps(text: str, name: str) -> SpecificTimestamps:
    return SpecificTimestamps(parse_timestamps_json(text.strip(), name))


def _parse_offsets(text: str, name: str) -> OffsetSpec:
    """``earliest``, ``latest`` (any case) or offsets per partition in JSON."""
    value = text.strip()
    if value.lower() == "latest":
        return LatestSpec()
    if value.lower() == "earliest":
        return EarliestSpec()
    if not value.startswith("{"):
        raise option_error(name, f"expected earliest, latest or JSON like "
                                 f"{OFFSETS_EXAMPLE}, got {value!r}")
    return SpecificOffsets(parse_offsets_json(value, name))


GLOBAL_TIMESTAMP = OptionParser("long (ms since the epoch)", _parse_timestamp)
TIMESTAMPS = OptionParser("JSON of timestamps per partition", _parse_timestamps)
OFFSETS: OptionParser[OffsetSpec] = OptionParser(
    "earliest, latest or JSON of offsets per partition", _parse_offsets)


# ------------------------------------------------------------------------- what to read


def _parse_subscribe(value: str, name: str) -> Subscribe:
    """Comma-separated topics, blanks around them and empty entries dropped."""
    topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
    if not topics:
        raise option_error(name, f"no topics to subscribe to in {value!r}")
    return Subscribe(topics)


def _parse_subscribe_pattern(value: str, name: str) -> SubscribePattern:
    pattern = value.strip()
    if not pattern:
        raise option_error(name, f"the pattern to subscribe to is empty ({value!r})")
    try:
        re.compile(pattern)
    except re.error as e:
        raise option_error(name, f"{pattern!r} is not a regular expression Python can use "
                                 f"({e})") from None
    return SubscribePattern(pattern)


def _parse_assign(value: str, name: str) -> Assign:
    """``{"topicA":[0,1],"topicB":[2,4]}``: partitions in order, duplicates dropped."""
    if not value.strip().startswith("{"):
        raise option_error(name, f"no topic partitions to assign: expected JSON like "
                                 f"{ASSIGN_EXAMPLE}, got {value!r}")
    text = value.strip()
    why = f"expected JSON like {ASSIGN_EXAMPLE}, got {text!r}"
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise option_error(name, f"{why} ({e})") from None
    if not isinstance(obj, dict):
        raise option_error(name, why)
    out: dict[TopicPartition, None] = {}       # ordered, without duplicates
    for topic, parts in obj.items():
        if not topic or not isinstance(parts, list):
            raise option_error(name, why)
        for p in parts:
            if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= INT32_MAX:
                raise option_error(name, f"{why} (partition {p!r} of topic {topic!r})")
            out[TopicPartition(topic, p)] = None
    if not out:
        raise option_error(name, f"no topic partitions to assign in {text!r}")
    return Assign(tuple(out))


SUBSCRIBE = OptionParser("comma-separated topics", _parse_subscribe)
SUBSCRIBE_PATTERN = OptionParser("regular expression", _parse_subscribe_pattern)
ASSIGN = OptionParser("JSON of partitions per topic", _parse_assign)
