"""The one result type every value decoder returns (JSON, Avro, string).

A decoder never raises for a bad row: it nulls that row in ``array`` and says why in
``errors``, so the bad-record modes (:mod:`pyconsumer.values.modes`) work the same
for every format. A null input (a Kafka tombstone) is a null output, not an error.
"""
from __future__ import annotations

from typing import NamedTuple

import pyarrow as pa

__all__ = ["Decoded"]


class Decoded(NamedTuple):
    """Typed values of one batch and the rows that failed to decode.

    ``array`` has one entry per input row; a bad row is null there. ``errors`` maps a
    row index (into the input) to a reason naming what is wrong, e.g.
    ``"unknown schema id 42"`` or ``"truncated varint at byte 7"``. Row indexes only:
    the caller maps them to topic, partition and offset.
    """

    array: pa.Array
    errors: dict[int, str]
