"""Numbers per partition in JSON, ``{"topic": {"0": 23, ...}, ...}``: Spark's offsets form.

Read from the options that give offsets or timestamps per partition (``startingOffsets``,
``endingOffsetsByTimestamp``, ...), and written to and read from a streaming query's checkpoint.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.specs import EARLIEST
from pyconsumer.structs import TopicPartition

__all__ = [
    "OFFSETS_EXAMPLE", "TIMESTAMPS_EXAMPLE",
    "parse_offsets_json", "parse_timestamps_json", "offsets_to_json", "offsets_from_json",
]

OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1000,"1":1000},"topicB":{"0":2000}}'

# a partition key: an integer in a string (Java's Integer.parseInt takes a sign)
_PARTITION_KEY_RE = re.compile(r"[+-]?[0-9]+")
_INT32_MAX = (1 << 31) - 1
_INT64_MAX = (1 << 63) - 1


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
            if isinstance(part, str) and _PARTITION_KEY_RE.fullmatch(part):
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
                                 example=OFFSETS_EXAMPLE)


def parse_timestamps_json(text: str, option: str) -> dict[TopicPartition, int]:
    """``{"t":{"0":1000}}`` as ``{TopicPartition("t", 0): 1000}``: ms since the epoch, >= 0."""
    return _decode_partition_map(text, option, minimum=0, what="timestamp",
                                 example=TIMESTAMPS_EXAMPLE)


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
