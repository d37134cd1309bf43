"""The compiled path of JSON values: one parse of each value, in C, into the Arrow columns.

The one job: compile a struct type into the program of ``json_decode`` (pyconsumer._records,
pyext/json.pyx) once, and decode a column with it, handing the rows it defers to the Python
reader (:mod:`~pyconsumer.values.json_rows`), which gives them, and names every bad row.

The parser gives a row only when it is the Python reader's row: every bad row, and the rare good
row it does not read itself (a schema field's or a MAP's key met twice, a MAP of over 64 entries, a
key over 256 bytes with escapes, a fraction (at any depth) or a key met twice in an object read as
STRING, invalid UTF-8 in a kept string, base64 with line breaks or odd padding, a year outside
2..9998, a zone name, a number over 64 characters, nesting over 64 levels, leading space other
than JSON's), is deferred to it.

Types the program expresses: STRING, BOOLEAN, TINYINT..BIGINT, FLOAT, DOUBLE, DECIMAL
(decimal128), TIMESTAMP (``timestamp[us, UTC]``), TIMESTAMP_NTZ, DATE, BINARY (base64), ARRAY,
MAP with STRING keys, and STRUCT (a struct whose field names are distinct). A schema holding any
other (a MAP with other keys, large lists, strings or binaries) is decoded by the pyarrow path of
:mod:`~pyconsumer.values.json_blocks`, as is a column of values over 2 GiB (large binary offsets).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer import records
from pyconsumer.values.json_rows import parse_row
from pyconsumer.values.result import Decoded

__all__ = ["compiled_program", "decode_compiled"]

#: the Python reader of one row: (value, type) -> (row, reason or None, malformed)
RowReader = Callable[[bytes, pa.StructType], tuple[Any, "str | None", bool]]

# column kinds of pyext/json.pxd (JKind)
_STRUCT, _LIST, _BOOL, _I8, _I16, _I32, _I64, _F32, _F64, _STR, _TS, _DATE, _DEC, _MAP, _TSN, _BIN = range(16)
_INTS = {8: _I8, 16: _I16, 32: _I32, 64: _I64}


def _kind(data_type: pa.DataType) -> int | None:
    """The column kind of a leaf type, or None when the program cannot express it."""
    if pa.types.is_string(data_type):
        return _STR
    if pa.types.is_boolean(data_type):
        return _BOOL
    if pa.types.is_signed_integer(data_type):
        return _INTS.get(data_type.bit_width)
    if pa.types.is_float32(data_type):
        return _F32
    if pa.types.is_float64(data_type):
        return _F64
    if pa.types.is_timestamp(data_type) and data_type.unit == "us" and data_type.tz in ("UTC", None):
        return _TS if data_type.tz else _TSN
    if pa.types.is_binary(data_type):
        return _BIN
    if pa.types.is_date32(data_type):
        return _DATE
    if isinstance(data_type, pa.Decimal128Type):
        return _DEC
    return None


class _Inexpressible(Exception):
    """The type holds one the program cannot build."""


@functools.lru_cache(maxsize=256)
def compiled_program(target: pa.StructType) -> records.JsonProgram | None:
    """The program of ``target`` (built once per type), or None when it holds a type the
    compiled parser cannot build (the module docstring lists them)."""
    specs: list[list[int]] = []
    fields: list[tuple[int, bytes]] = []

    def add(data_type: pa.DataType) -> int:
        at = len(specs)
        if isinstance(data_type, pa.StructType):
            names = [f.name for f in data_type]
            if len(set(names)) != len(names):
                raise _Inexpressible
            specs.append([_STRUCT, -1, 0, len(names), 0, 0])
            # a struct's fields are together in the table, their columns after it
            own = [(len(fields) + i, f) for i, f in enumerate(data_type)]
            fields.extend((0, f.name.encode()) for f in data_type)
            specs[at][2] = own[0][0] if own else len(fields)
            for index, field in own:
                fields[index] = (add(field.type), fields[index][1])
            return at
        if isinstance(data_type, pa.ListType):
            specs.append([_LIST, -1, 0, 0, 0, 0])
            specs[at][1] = add(data_type.value_type)
            return at
        if isinstance(data_type, pa.MapType):
            if not pa.types.is_string(data_type.key_type):
                raise _Inexpressible  # other keys take the text's meaning: the Python reader's
            specs.append([_MAP, -1, 0, 0, 0, 0])
            # its entries: a struct column of the key and the value
            specs[at][1] = add(pa.struct([pa.field("key", data_type.key_type), pa.field("value", data_type.item_type)]))
            return at
        kind = _kind(data_type)
        if kind is None:
            raise _Inexpressible
        if isinstance(data_type, pa.Decimal128Type):
            specs.append([kind, -1, 0, 0, data_type.precision, data_type.scale])
        else:
            specs.append([kind, -1, 0, 0, 0, 0])
        return at

    try:
        add(target)
    except _Inexpressible:
        return None
    return records.JsonProgram(target, [(s[0], s[1], s[2], s[3], s[4], s[5]) for s in specs], fields)


def decode_compiled(data: pa.Array, target: pa.StructType, program: records.JsonProgram, partial_results: bool,
                    read_row: RowReader = parse_row) -> Decoded:
    """``data`` (binary, int32 offsets, no chunks) through ``program``; the rows it defers
    through the Python reader ``read_row`` (:func:`~pyconsumer.values.json_rows.parse_row`),
    with their reasons."""
    array, deferred = records.json_decode(program, data)
    errors: dict[int, str] = {}
    replaced: list[int] = []
    replacements: list[Any] = []
    for i in deferred:
        row, reason, malformed = read_row(data[i].as_py(), target)
        if reason is not None:
            errors[i] = reason
            if not partial_results:
                continue
            if malformed:
                row = {}  # Spark: a struct of nulls
        if row is not None:
            replaced.append(i)
            replacements.append(row)
    if replaced:
        array = _replace(array, target, replaced, replacements)
    return Decoded(array, errors)


def _replace(array: pa.Array, target: pa.StructType, rows: list[int], values: list[Any]) -> pa.Array:
    """``array`` with ``rows`` (ascending) given ``values`` instead (one take over both)."""
    n = len(array)
    at = pa.array(rows, pa.int64())
    index = pc.subtract(pc.cumulative_sum(pa.nulls(n, pa.int64()).fill_null(1)), 1)
    index = pc.replace_with_mask(index, pc.is_in(index, value_set=at), pa.array(range(n, n + len(rows)), pa.int64()))
    return pa.concat_arrays([array, pa.array(values, type=target)]).take(index)
