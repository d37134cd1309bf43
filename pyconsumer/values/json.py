"""JSON values -> a typed Arrow struct array, with Spark's ``from_json`` results.

The one job: decode a batch of Kafka values (a binary array, one JSON document per value) into
one struct array of a given schema, reporting every bad row by index instead of failing the batch.

How. Readers share the work, each in its module. The compiled parser
(:mod:`~pyconsumer.values.json_compiled`, pyext/json.pyx) reads every value in C when the schema
holds only types it builds (that module lists them), and leaves to the Python reader the rows it
cannot give exactly. For the other schemas (a MAP with non-STRING keys, large lists), the pyarrow path
(:mod:`~pyconsumer.values.json_blocks`) reads most rows in a few ``pyarrow.json`` calls and isolates
the rows it cannot read. The Python reader (:mod:`~pyconsumer.values.json_rows`) follows Spark's
rules for the rest, one row at a time, with the row's reason. :func:`decode_string` (string values)
is in :mod:`~pyconsumer.values.string`.

What a row gives, checked against Spark 4 ``from_json(col.cast("string"), ddl)`` (session zone UTC):

- a null value (tombstone), an empty or all-whitespace value: a null row, not an error;
- missing fields and JSON nulls: null fields; fields not in the schema: ignored; a repeated key:
  the last one wins; text after the first complete object: ignored (Spark reads only the first);
- a field of the wrong type or out of range (``1.5`` or ``3000000000`` for INT, ``"x"`` for DOUBLE,
  an array element of the wrong type, ...): a row error;
- not a JSON object (``[1]``, ``5``, ``"s"``, ``null``) or not JSON at all: a row error;
- coercions Spark makes, made here too: any number for DOUBLE/FLOAT (overflow to infinity),
  ``NaN``/``Infinity`` bare or quoted, a number or a nested object/array for STRING (its JSON text),
  a quoted number for DECIMAL (rounded half-up to the scale), integer seconds for TIMESTAMP,
  Spark's lenient date/timestamp text (``2024-1-5``, ``2024-01-01T10``, a date for a timestamp,
  offsets and region names such as ``Europe/Paris``), base64 text for BINARY;
- invalid UTF-8 is read with U+FFFD replacements, as ``cast("string")`` does in Spark.

A bad row is null in :attr:`Decoded.array` (the contract of every decoder); with
``partial_results=True`` it holds instead exactly what Spark's ``from_json`` gives: the fields that
converted (a struct of nulls when the text is not a JSON object). Deliberate differences from Spark:
single-quoted strings and keys are bad rows here (Spark's default accepts them); TINYINT values
128..255 are out of range here (Spark wraps them to negative numbers); lone UTF-16 surrogates
escaped in a string are a bad row; a NOT NULL in the schema is not enforced (Spark's ``from_json``
makes every field nullable too); Jackson's size limits, which make Spark call a row malformed
(nesting 1000 deep, a string over 20 M characters, a number over 1000 digits), are not applied by
the fast path (the Python reader gives up near 1000 levels of nesting, as a bad row).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.values.json_compiled import compiled_program, decode_compiled
from pyconsumer.values.json_blocks import assemble, fast_rows, read_fast_rows
from pyconsumer.values.json_rows import check_types, decode_json_rows, json_type, parse_row
from pyconsumer.values.result import Decoded, as_binary
from pyconsumer.values.string import decode_string

# decode_string and decode_json_rows live with their jobs; they stay importable from here
__all__ = ["decode_json", "decode_json_pyarrow", "decode_string", "decode_json_rows"]


def decode_json(
    values: pa.Array | pa.ChunkedArray,
    schema: Any,
    *,
    partial_results: bool = False,
    use_threads: bool = False,
) -> Decoded:
    """Decode JSON values into one struct array of ``schema`` (DDL, StructType or pyarrow schema).

    ``values`` is a binary (or string) array, one JSON document per entry, nulls allowed. The
    result has one row per value; a bad row is null (or, with ``partial_results``, what Spark's
    ``from_json`` gives) and its reason is in ``errors``. The compiled parser reads every schema
    it expresses (:mod:`~pyconsumer.values.json_compiled`), the pyarrow path the others;
    ``use_threads`` lets pyarrow parse blocks on its own threads there (off by default: the
    callers already decode on several threads).
    """
    target = json_type(schema)
    check_types(target)  # an unsupported type is refused before any row is read
    data = as_binary(values, "JSON values")
    if pa.types.is_large_binary(data.type) and data.nbytes < (1 << 31) - (1 << 20):
        data = data.cast(pa.binary())  # the compiled parser reads int32 offsets
    if len(data) and pa.types.is_binary(data.type):
        program = compiled_program(target)
        if program is not None:
            return decode_compiled(data, target, program, partial_results, parse_row)
    return _pyarrow_path(data, target, partial_results, use_threads)


def decode_json_pyarrow(
    values: pa.Array | pa.ChunkedArray,
    schema: Any,
    *,
    partial_results: bool = False,
    use_threads: bool = False,
) -> Decoded:
    """:func:`decode_json` through the pyarrow path alone, whatever the schema (the oracle the
    compiled parser is tested against)."""
    target = json_type(schema)
    check_types(target)
    return _pyarrow_path(as_binary(values, "JSON values"), target, partial_results, use_threads)


def _pyarrow_path(data: pa.Array, target: pa.StructType, partial_results: bool, use_threads: bool) -> Decoded:
    n = len(data)
    if n == 0:
        return Decoded(pa.array([], type=target), {})
    present = data.is_valid()
    fast = fast_rows(data, target)

    slow_rows: list[int] = pc.indices_nonzero(pc.and_not(present, fast)).to_pylist()
    chunks: list[tuple[int, int, pa.StructArray]] = []
    overridden: list[int] = []  # rows a chunk holds but must not show (see read_fast_rows)
    if pc.any(fast).as_py():
        # uncovered: rows no pyarrow chunk holds
        chunks, uncovered, overridden = read_fast_rows(data, fast, target, use_threads)
        slow_rows = sorted(set(slow_rows).union(uncovered, overridden))
    else:
        uncovered = list(range(n))

    # the Python reader for the rows the fast path could not take
    replaced: list[int] = []
    replacements: list[Any] = []
    errors: dict[int, str] = {}
    for i in slow_rows:
        raw = data[i].as_py()
        if raw is None:
            continue  # a tombstone caught in a range that failed: it stays null
        row, reason, malformed = parse_row(raw, target)
        if reason is not None:
            errors[i] = reason
            if not partial_results:
                continue
            if malformed:
                row = {}  # Spark: a struct of nulls
        if row is not None:
            replaced.append(i)
            replacements.append(row)
    return Decoded(assemble(n, target, chunks, uncovered, overridden, fast, replaced, replacements), errors)
