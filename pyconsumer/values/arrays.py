"""Small Arrow arrays and scalars made from Python values without pyarrow's conversion of
Python objects.

``pa.array([...])``, ``pa.scalar(...)`` and a Python number passed to a compute function go
through that conversion, which tries to import pandas the first time of each kind: half a second
on the first poll where pandas is installed, and a module the poll path has no use for. These
build the buffers themselves (a list of ints is packed by the stdlib's ``array``).
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["ints", "bools", "int_scalar", "bytes_scalar", "binaries", "strings", "lists", "row_numbers"]

_INT64 = pa.int64()
_BINARY = pa.binary()

#: the stdlib array code of each integer width
_CODES = {(8, True): "q", (4, True): "i", (2, True): "h", (1, True): "b",
          (8, False): "Q", (4, False): "I", (2, False): "H", (1, False): "B"}


def ints(values: Iterable[int], type: pa.DataType = _INT64) -> pa.Array:
    """``values`` as an array of the integer ``type`` (no nulls)."""
    code = _CODES[(type.bit_width // 8, pa.types.is_signed_integer(type))]
    packed = array(code, values)
    return pa.Array.from_buffers(type, len(packed), [None, pa.py_buffer(packed)])


def bools(values: Iterable[bool]) -> pa.Array:
    """``values`` as a boolean array (no nulls)."""
    return ints((1 if v else 0 for v in values), pa.uint8()).cast(pa.bool_())


def int_scalar(value: int, type: pa.DataType) -> pa.Scalar:
    """``value`` as a scalar of the integer ``type``."""
    return ints((value,), type)[0]


def bytes_scalar(value: bytes, type: pa.DataType = _BINARY) -> pa.Scalar:
    """``value`` as a scalar of ``type`` (binary or string, large or not)."""
    wide = pa.types.is_large_binary(type) or pa.types.is_large_string(type)
    offsets = ints((0, len(value)), pa.int64() if wide else pa.int32())
    return pa.Array.from_buffers(type, 1, [None, offsets.buffers()[1], pa.py_buffer(value)])[0]


def binaries(values: Sequence[bytes | None], type: pa.DataType = _BINARY) -> pa.Array:
    """``values`` as an array of ``type`` (binary or string, not large), None as null."""
    ends = [0]
    for part in values:
        ends.append(ends[-1] + (len(part) if part is not None else 0))
    valid = None
    if any(v is None for v in values):
        valid = bools(v is not None for v in values).buffers()[1]
    body = b"".join(v for v in values if v is not None)
    return pa.Array.from_buffers(type, len(values),
                                 [valid, ints(ends, pa.int32()).buffers()[1], pa.py_buffer(body)])


def strings(values: Sequence[str | None]) -> pa.Array:
    """``values`` as a string array, None as null."""
    return binaries([None if v is None else v.encode() for v in values], pa.string())


def lists(lengths: Sequence[int], child: pa.Array, type: pa.DataType) -> pa.Array:
    """A list array of ``type`` (no nulls) whose rows take ``lengths`` items of ``child`` in turn."""
    ends = [0]
    for length in lengths:
        ends.append(ends[-1] + length)
    return pa.Array.from_buffers(type, len(lengths), [None, ints(ends, pa.int32()).buffers()[1]],
                                 children=[child])


def row_numbers(n: int) -> pa.Array:
    """0, 1, ..., n - 1 as int64."""
    one = int_scalar(1, pa.int64())
    return pc.subtract(pc.cumulative_sum(pa.nulls(n, pa.int64()).fill_null(one)), one)
