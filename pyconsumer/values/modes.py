"""Bad-record modes (Spark's words): what a batch looks like once its bad rows are dealt with.

The one job: take a decoder's :class:`~pyconsumer.values.result.Decoded` and the raw values it
came from, and apply the mode the user chose:

- ``PERMISSIVE`` (Spark's default): bad rows keep the decoder's null value; with a corrupt-record
  column (Spark's ``columnNameOfCorruptRecord``, default ``_corrupt_record``) their raw bytes go into
  a binary column, null for good rows;
- ``DROPMALFORMED``: bad rows are dropped; the caller filters every column of the batch with
  ``keep``, and the count goes to its metrics;
- ``FAILFAST``: the first bad row raises :class:`MalformedValueError`, naming topic, partition,
  offset and the reason. Decoders know only row indexes, so the caller passes ``locate``, which maps
  a row index to its ``(topic, partition, offset)``.

A null input (a tombstone) is never a bad row: decoders do not report it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.errors import ConfigurationError, CorruptRecordError
from pyconsumer.values.arrays import ints, row_numbers
from pyconsumer.values.result import Decoded, as_binary

__all__ = ["Mode", "ModeResult", "MalformedValueError", "parse_mode", "apply_mode", "DEFAULT_CORRUPT_COLUMN"]

#: Spark's default name for the column of raw bad records
DEFAULT_CORRUPT_COLUMN = "_corrupt_record"

#: a row index of the batch -> (topic, partition, offset), supplied by the caller
Locate = Callable[[int], tuple[str, int, int]]


class Mode(enum.Enum):
    """What to do with a value that does not decode."""

    PERMISSIVE = "PERMISSIVE"
    DROPMALFORMED = "DROPMALFORMED"
    FAILFAST = "FAILFAST"


def parse_mode(mode: str | Mode) -> Mode:
    """``"permissive"``, ``"DropMalformed"``, ... (any case) -> :class:`Mode`; anything else is a
    :class:`~pyconsumer.errors.ConfigurationError` listing the three."""
    if isinstance(mode, Mode):
        return mode
    if isinstance(mode, str):
        try:
            return Mode[mode.strip().upper()]
        except KeyError:
            pass
    raise ConfigurationError(f"mode must be one of PERMISSIVE, DROPMALFORMED, FAILFAST (any case), not {mode!r}")


class MalformedValueError(CorruptRecordError):
    """FAILFAST met a value that does not decode: ``topic t partition 3 offset 1234: <reason>``.

    ``reason`` is the decoder's reason alone, ``row`` the row index in the batch.
    """

    def __init__(self, reason: str, row: int, topic: str | None, partition: int | None,
                 offset: int | None) -> None:
        super().__init__(reason, topic, partition, offset)
        where = f"row {row}" if topic is None else f"topic {topic} partition {partition} offset {offset}"
        # the message says where first: that is what a user searches the log for
        self.args = (f"{where}: {reason}",)
        self.row = row


class ModeResult(NamedTuple):
    """A batch's values after the mode.

    ``values``: the decoded array, full length (bad rows as the decoder left them: null).
    ``corrupt``: PERMISSIVE with a corrupt column: a binary array, the raw bytes of each bad row and
    null elsewhere; otherwise None. ``keep``: DROPMALFORMED with bad rows: a boolean mask (False =
    drop) for every column of the batch; None when every row stays. ``malformed``: how many bad rows.
    """

    values: pa.Array
    corrupt: pa.Array | None
    keep: pa.Array | None
    malformed: int


def _row_mask(n: int, rows: list[int]) -> pa.Array:
    """A boolean array of length ``n``, True at ``rows``."""
    return pc.is_in(row_numbers(n), value_set=ints(rows))


def apply_mode(
    decoded: Decoded,
    raw: pa.Array | pa.ChunkedArray,
    mode: str | Mode,
    corrupt_column: str | None = DEFAULT_CORRUPT_COLUMN,
    locate: Locate | None = None,
) -> ModeResult:
    """Apply ``mode`` to a decoded batch; ``raw`` is the binary (or string) array it was decoded from.

    ``corrupt_column`` (PERMISSIVE only) is the name the caller gives the raw-bytes column; None
    means no such column. ``locate`` (FAILFAST) maps a row index to (topic, partition, offset) for
    the error; without it the error names the row index.
    """
    chosen = parse_mode(mode)
    n = len(decoded.array)
    if len(raw) != n:
        raise ValueError(f"the raw values ({len(raw)} rows) and the decoded values ({n} rows) differ in length")
    if corrupt_column is not None and not (isinstance(corrupt_column, str) and corrupt_column):
        raise ConfigurationError(f"columnNameOfCorruptRecord must be a non-empty name, not {corrupt_column!r}")
    bad = sorted(decoded.errors)
    if bad and not 0 <= bad[0] <= bad[-1] < n:
        raise ValueError(f"an error names row {bad[0] if bad[0] < 0 else bad[-1]}, outside the batch of {n} rows")

    if chosen is Mode.FAILFAST:
        if bad:
            row = bad[0]
            topic, partition, offset = locate(row) if locate is not None else (None, None, None)
            raise MalformedValueError(decoded.errors[row], row, topic, partition, offset)
        return ModeResult(decoded.array, None, None, 0)

    if chosen is Mode.DROPMALFORMED:
        keep = pc.invert(_row_mask(n, bad)) if bad else None
        return ModeResult(decoded.array, None, keep, len(bad))

    corrupt = None
    if corrupt_column is not None:
        binary = as_binary(raw, "raw values")
        nulls = pa.nulls(n, binary.type)
        corrupt = pc.if_else(_row_mask(n, bad), binary, nulls) if bad else nulls
    return ModeResult(decoded.array, corrupt, None, len(bad))
