"""The one result type every value decoder returns (JSON, Avro, string).

A decoder never raises for a bad row: it nulls that row in ``array`` and says why in
``errors``, so the bad-record modes (:mod:`pyconsumer.values.modes`) work the same
for every format. A null input (a Kafka tombstone) is a null output, not an error.
"""
from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa

__all__ = ["Decoded", "as_binary"]


class Decoded(NamedTuple):
    """Typed values of one batch and the rows that failed to decode.

    ``array`` has one entry per input row; a bad row is null there. ``errors`` maps a
    row index (into the input) to a reason naming what is wrong, e.g.
    ``"unknown schema id 42"`` or ``"truncated varint at byte 7"``. Row indexes only:
    the caller maps them to topic, partition and offset.
    """

    array: pa.Array
    errors: dict[int, str]


def as_binary(values: pa.Array | pa.ChunkedArray, what: str = "values") -> pa.Array:
    """Raw values as one binary (or large binary) array with offsets: strings are viewed as
    bytes without a copy, view types copied once (the kernels and buffer searches of the
    decoders, and the corrupt-record column, want offsets). Raises TypeError naming
    ``what`` for any other type."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_string(values.type):
        return values.view(pa.binary())
    if pa.types.is_large_string(values.type):
        return values.view(pa.large_binary())
    if pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type):
        return values
    if pa.types.is_binary_view(values.type) or pa.types.is_string_view(values.type):
        return values.cast(pa.binary()) if values.nbytes < (1 << 31) else values.cast(pa.large_binary())
    raise TypeError(f"{what} must be a binary or string array, not {values.type}")
