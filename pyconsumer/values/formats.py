"""The value formats by name: the one registry the consumer's settings, the Spark source and
``pyconsumer ingest`` take a format from.

:data:`FORMATS` maps each name (``binary``, ``string``, ``json``, ``avro``,
``protobuf``) to its
:class:`~pyconsumer.values.format_api.ValueFormat`; :data:`Format` is the enum of those names
(what :class:`~pyconsumer.values.typed.ColumnFormat` holds). A new format is a class and one
line in :data:`FORMATS`.
"""
from __future__ import annotations

import enum
from collections.abc import Callable

from pyconsumer.errors import ConfigurationError
from pyconsumer.values.format_api import ValueFormat
from pyconsumer.values.format_avro import AvroFormat
from pyconsumer.values.format_json import JsonFormat
from pyconsumer.values.format_plain import BinaryFormat, StringFormat
from pyconsumer.values.format_protobuf import ProtobufFormat

__all__ = ["FORMATS", "FRAMINGS", "Format", "DEFAULT_FORMAT", "parse_format", "format_of", "decodes",
           "names_where"]

#: every format by the name users write, in the order messages list them
FORMATS: dict[str, ValueFormat] = {f.name: f for f in (
    BinaryFormat(), StringFormat(), JsonFormat(), AvroFormat(), ProtobufFormat(),
)}

#: a column's format when none is set: the bytes as read
DEFAULT_FORMAT = "binary"

#: every framing some format takes (what value.avro.framing accepts), in the order messages say
FRAMINGS = tuple(dict.fromkeys(fr for f in FORMATS.values() for fr in f.framings))

#: the registered names as an enum (``Format.JSON``, ``Format("json")``), kept for the public API
Format = enum.Enum("Format", [(name.upper(), name) for name in FORMATS])  # type: ignore[misc]


def parse_format(name: str | Format, setting: str) -> Format:
    """``name`` (any case, spaces around) as a :data:`Format`; anything else is refused naming
    ``setting`` and the registered names."""
    if isinstance(name, Format):
        return name
    if isinstance(name, str):
        try:
            return Format(name.strip().lower())
        except ValueError:
            pass
    raise ConfigurationError(f"{setting} must be one of {', '.join(FORMATS)}, not {name!r}")


def format_of(fmt: str | Format) -> ValueFormat:
    """The format object of a :data:`Format` member (or of its registered name)."""
    return FORMATS[Format(fmt).value]


def decodes(name: str | None) -> bool:
    """Whether a column with the format name ``name`` as given (None or "" is the default) is
    decoded: False for binary; an unknown name counts as decoded (it is refused elsewhere)."""
    found = FORMATS.get((name or DEFAULT_FORMAT).lower())
    return found is None or found.decodes


def names_where(test: Callable[[ValueFormat], bool], last: str = "or") -> str:
    """The names of the formats that pass ``test`` for a message: ``avro``, ``json or avro``,
    ``string, json or avro``."""
    names = [name for name, f in FORMATS.items() if test(f)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"
