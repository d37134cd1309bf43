"""The fast path of JSON values: many rows in a few ``pyarrow.json`` calls, bad rows isolated.

The values are joined into one newline-delimited buffer by Arrow kernels (no Python object per
record) and parsed by ``pyarrow.json.read_json`` with the explicit schema, unexpected fields
ignored. ``read_json`` fails a whole block for one bad row. On a batch's first failure one RE2 pass
flags the rows whose text shows a top-level field of the wrong type (a field whose type drifted is
the common case) and sends them to the Python reader; a range that still fails is split (around the
row a parse error names, else in halves) until each bad row stands alone. A call costs about as
much as 20 rows in Python, so past max(64, rows / 64) calls a failing range goes to the Python
reader whole: dense bad rows run at the Python reader's pace (~50k rows/s).

Rows kept off the fast path (:func:`fast_rows`): those with a raw CR or LF (whitespace between
tokens is legal JSON but would split the row), those not starting with ``{`` (``read_json`` crashes
on a top-level ``null``) or not ending with ``}`` (cut short, most often: cheaper in Python than
splitting a failed block), rows with invalid UTF-8 (``read_json`` copies it unchecked), and every
row when the schema has a MAP, BINARY or TIMESTAMP_NTZ field (``read_json`` builds no maps, keeps
base64 text undecoded, shifts a zoned time into a zone-less one). DATE fields are read by the fast
path as text and parsed strictly as ``YYYY-MM-DD``; other date text goes to the Python reader
(pyarrow would shift a zoned time to UTC, and would take a number as days, where Spark keeps the
written day and refuses numbers).
"""

from __future__ import annotations

import bisect
import decimal
import json as _json
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

__all__ = ["assemble", "fast_rows", "read_fast_rows"]

# pyarrow.json's default block is 1 MiB; a row longer than the block cannot be parsed
_MIN_BLOCK = 1 << 20
# pyarrow.json's parse errors end "in row N" (N counted from the block's start)
_ROW_HINT = re.compile(r" in row (\d+)$")
# a failing range this small goes to the Python reader whole instead of being split again
_SMALLEST_RETRY = 4
# after a row pyarrow names as bad, the rows next tried with it: at least this many
_SMALLEST_WINDOW = 256
# the largest range re-read as one block (so that errors give exact row numbers)
_MAX_SINGLE_BLOCK = 8 << 20


def fast_rows(data: pa.Array, target: pa.DataType) -> pa.Array:
    """Per row of ``data`` (binary, no chunks): True when the fast path may read it (see the
    module docstring for the rows it must not see); a null value is False."""
    n = len(data)
    if _has(target, _python_only):
        return pa.array([False] * n)
    starts = pc.starts_with(data, "{")
    if not pc.all(pc.fill_null(starts, True)).as_py():
        starts = pc.or_(starts, pc.match_substring_regex(data, r"^[ \t]*\{"))
    # a value not ending in "}" is most often cut short: the Python reader takes it, not a
    # failing pyarrow block (splitting one costs far more than reading a row in Python)
    ends = pc.ends_with(data, "}")
    if not pc.all(pc.fill_null(ends, True)).as_py():
        ends = pc.or_(ends, pc.match_substring_regex(data, r"\}[ \t]*$"))
    fast = pc.fill_null(pc.and_(starts, ends), False)
    broken = _rows_with_breaks(data)
    if broken:
        fast = pc.and_not(fast, pc.is_in(_row_numbers(n), value_set=pa.array(broken, pa.int64())))
    # pyarrow.json copies string bytes unchecked: invalid UTF-8 must not reach it
    bad_utf8 = _invalid_utf8_rows(data, 0, n)
    if bad_utf8:
        fast = pc.and_not(fast, pc.is_in(_row_numbers(n), value_set=pa.array(bad_utf8, pa.int64())))
    return fast


def _has(data_type: pa.DataType, test: Callable[[pa.DataType], bool]) -> bool:
    if test(data_type):
        return True
    if isinstance(data_type, pa.StructType):
        return any(_has(f.type, test) for f in data_type)
    if isinstance(data_type, (pa.ListType, pa.LargeListType)):
        return _has(data_type.value_type, test)
    if isinstance(data_type, pa.MapType):
        return _has(data_type.key_type, test) or _has(data_type.item_type, test)
    return False


def _python_only(data_type: pa.DataType) -> bool:
    """Types pyarrow.json cannot read as Spark does: MAP (no conversion at all), BINARY (Spark
    decodes base64, pyarrow keeps the text), TIMESTAMP_NTZ (pyarrow shifts a zoned text to
    UTC, Spark refuses it) and a DECIMAL whose scaled digits may pass 38."""
    return (pa.types.is_map(data_type) or pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type)
            or (pa.types.is_timestamp(data_type) and data_type.tz is None)
            # pyarrow checks a decimal's digits as written, then scales it: past 38 digits
            # scaled (12345.6 as DECIMAL(38,38)) it wraps around silently
            or (pa.types.is_decimal(data_type) and data_type.precision + data_type.scale > 38))


def _fast_type(data_type: pa.DataType) -> pa.DataType:
    """The type pyarrow.json reads: dates as text (it refuses date text for date32, takes numbers)."""
    if pa.types.is_date(data_type):
        return pa.string()
    if isinstance(data_type, pa.StructType):
        return pa.struct([pa.field(f.name, _fast_type(f.type)) for f in data_type])
    if isinstance(data_type, pa.ListType):
        return pa.list_(_fast_type(data_type.value_type))
    if isinstance(data_type, pa.LargeListType):
        return pa.large_list(_fast_type(data_type.value_type))
    return data_type


def _row_numbers(n: int) -> pa.Array:
    """0, 1, ..., n - 1 as an int64 array, built by Arrow kernels."""
    return pc.subtract(pc.cumulative_sum(pa.nulls(n, pa.int64()).fill_null(1)), 1)


_LF, _CR = re.compile(b"\n"), re.compile(b"\r")


def _rows_with_breaks(data: pa.Array) -> list[int]:
    """The rows holding a raw CR or LF, found by a byte search over the whole value buffer (a
    literal search there is several times faster than Arrow's per-row substring kernel)."""
    n = len(data)
    offsets = memoryview(data.buffers()[1]).cast("q" if pa.types.is_large_binary(data.type) else "i")
    first, end = offsets[data.offset], offsets[data.offset + n]
    if data.buffers()[2] is None or first == end:
        return []
    body = memoryview(data.buffers()[2])
    rows: set[int] = set()
    for pattern in (_LF, _CR):
        at = first
        while (m := pattern.search(body, at, end)) is not None:
            row = bisect.bisect_right(offsets, m.start(), data.offset, data.offset + n + 1) - 1
            rows.add(row - data.offset)
            at = offsets[row + 1]  # one hit is enough: go on from the next row
    return sorted(rows)


def _invalid_utf8_rows(data: pa.Array, start: int, stop: int) -> list[int]:
    """The rows of ``data[start:stop]`` that are not valid UTF-8: one cast when all are valid,
    halves re-checked when not."""
    text = pa.large_string() if pa.types.is_large_binary(data.type) else pa.string()
    try:
        data.slice(start, stop - start).cast(text)
        return []
    except pa.ArrowInvalid:
        if stop - start == 1:
            return [start]
    middle = (start + stop) // 2
    return _invalid_utf8_rows(data, start, middle) + _invalid_utf8_rows(data, middle, stop)


def assemble(
    n: int,
    target: pa.StructType,
    chunks: list[tuple[int, int, pa.StructArray]],
    uncovered: list[int],
    overridden: list[int],
    fast: pa.Array,
    replaced: list[int],
    replacements: list[Any],
) -> pa.Array:
    """Fast chunks and Python rows -> one array in row order; rows with neither are null."""
    if not replaced and not uncovered and not overridden:
        # the common case: one pass of pyarrow covered every row; off-path rows were "{}"
        whole = pa.concat_arrays([c for _, _, c in chunks]) if len(chunks) > 1 else chunks[0][2]
        return pa.StructArray.from_arrays(whole.flatten(), fields=list(target), mask=pc.invert(fast))
    # the chunks hold every row but the uncovered ones, in row order: a row's place among them is
    # its number less the uncovered rows before it; the Python rows follow the chunks
    parts = [c for _, _, c in chunks]
    held = sum(len(c) for c in parts)
    parts.append(pa.array(replacements, type=target))
    combined = pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
    rows = _row_numbers(n)
    index = rows
    keep = fast
    if uncovered:
        is_uncovered = pc.is_in(rows, value_set=pa.array(uncovered, pa.int64()))
        before = pc.subtract(pc.cumulative_sum(pc.cast(is_uncovered, pa.int64())), pc.cast(is_uncovered, pa.int64()))
        index = pc.subtract(rows, before)
        keep = pc.and_not(keep, is_uncovered)
    if overridden:
        keep = pc.and_not(keep, pc.is_in(rows, value_set=pa.array(overridden, pa.int64())))
    if replaced:
        is_replaced = pc.is_in(rows, value_set=pa.array(replaced, pa.int64()))
        index = pc.replace_with_mask(index, is_replaced, pa.array(range(held, held + len(replaced)), pa.int64()))
        keep = pc.or_(keep, is_replaced)
    index = pc.if_else(keep, index, pa.nulls(n, pa.int64()))
    return combined.take(index)


def _decimal_misfits(values: pa.Array, data_type: pa.DataType) -> pa.Array | None:
    """Per entry of ``values`` (read by pyarrow.json as ``data_type``): True where a decimal
    in it, at any depth, has more digits than its precision; None when it holds no decimal
    with a scale. pyarrow checks a number's digits as written, then scales it: 10000 read as
    DECIMAL(6,2) becomes 10000.00, seven digits, where Spark and the Python reader refuse it.
    Such a row goes to the Python reader (its reason, or its null field)."""
    if pa.types.is_decimal(data_type):
        precision, scale = data_type.precision, data_type.scale
        if scale <= 0:
            return None
        # the digits as written were <= precision: scaled, they fit precision + scale
        wide = precision + scale
        wide_type = pa.decimal128(wide, scale) if wide <= 38 else pa.decimal256(wide, scale)
        widened = values.cast(wide_type)
        limit = decimal.Decimal(10) ** (precision - scale)
        over = pc.or_(pc.greater_equal(widened, pa.scalar(limit, wide_type)),
                      pc.less_equal(widened, pa.scalar(-limit, wide_type)))
        return pc.fill_null(over, False)
    if isinstance(data_type, pa.StructType):
        out = None
        for child, field in zip(values.flatten(), data_type):
            found = _decimal_misfits(child, field.type)
            if found is not None:
                out = found if out is None else pc.or_(out, found)
        return out
    if isinstance(data_type, (pa.ListType, pa.LargeListType)):
        found = _decimal_misfits(values.flatten(), data_type.value_type)
        if found is None:
            return None
        rows = pc.filter(pc.list_parent_indices(values), found)
        return pc.is_in(_row_numbers(len(values)), value_set=rows.cast(pa.int64()))
    return None


def read_fast_rows(
    data: pa.Array, fast: pa.Array, target: pa.StructType, use_threads: bool
) -> tuple[list[tuple[int, int, pa.StructArray]], list[int], list[int]]:
    """pyarrow.json over the fast rows -> (chunks as (first row, end row, array), failed rows (no
    chunk holds them), overridden rows (a chunk holds them but must not show them: a date it
    could not read, a row screened out as a suspect)).

    Rows off the fast path stand in the buffer as ``{}`` so row numbers stay aligned.
    """
    body, offsets, read_options = _lines(data, fast, use_threads)
    fast_schema = pa.schema([pa.field(f.name, _fast_type(f.type)) for f in target])
    parse_options = pajson.ParseOptions(explicit_schema=fast_schema, unexpected_field_behavior="ignore")
    has_dates = _has(target, pa.types.is_date)
    has_decimals = _has(target, lambda t: pa.types.is_decimal(t) and t.scale > 0)

    chunks: list[tuple[int, int, pa.StructArray]] = []
    failed: list[int] = []
    overridden: list[int] = []
    pending = [(0, len(data))]
    first = True
    # a pyarrow call costs ~0.2 ms, the Python reader ~10 us a row: past this many calls, a range
    # that fails goes to the Python reader whole (dense bad rows must not cost a call each)
    budget = max(64, len(data) // 64)
    calls = 0
    screened = False
    while pending:
        start, stop = pending.pop()
        size = offsets[stop] - offsets[start]
        options = read_options
        if not first and read_options.block_size < size <= _MAX_SINGLE_BLOCK:
            # one block per retry, so "in row N" in pyarrow's error counts from this range's start
            # (bounded: pyarrow scans a whole block whatever row fails)
            options = pajson.ReadOptions(use_threads=use_threads, block_size=size + 1)
        single_block = size <= options.block_size
        first = False
        table = None
        hint = None
        calls += 1
        try:
            table = pajson.read_json(pa.BufferReader(body[offsets[start]:offsets[stop]]),
                                     read_options=options, parse_options=parse_options)
        except (pa.ArrowInvalid, UnicodeDecodeError, pa.ArrowNotImplementedError) as exc:
            m = _ROW_HINT.search(str(exc))
            hint = int(m.group(1)) if (m and single_block and int(m.group(1)) < stop - start) else None
        if table is not None and table.num_rows == stop - start:
            chunk = table.to_struct_array().combine_chunks()
            if has_dates:
                chunk, bad = _read_dates(chunk, target)
                overridden.extend(start + i for i in bad.to_pylist())
            if has_decimals:
                misfits = _decimal_misfits(chunk, target)
                if misfits is not None:
                    overridden.extend(start + i for i in pc.indices_nonzero(misfits).to_pylist())
            chunks.append((start, stop, chunk))
            continue
        if not screened:
            # the first failure: rows whose text shows a wrong type go to the Python reader at
            # once, instead of costing a split each (a field whose type drifted, most often)
            screened = True
            suspects = _suspects(data, target)
            newly = pc.and_(fast, suspects) if suspects is not None else None
            if newly is not None and pc.any(newly).as_py():
                # they stay in the buffer as "{}" placeholders: held by chunks, but not shown
                overridden.extend(pc.indices_nonzero(newly).to_pylist())
                fast = pc.and_not(fast, newly)
                body, offsets, read_options = _lines(data, fast, use_threads)
                pending = [(0, len(data))]
                first = True
                continue
        if calls > budget:
            failed.extend(range(start, stop))
            continue
        if hint is not None:
            # a parse error names its row: that row fails, both sides of it are tried again, the
            # rows after it in a window twice as long as the run of good rows before it (dense
            # bad rows, short windows), the rest later
            bad_row = start + hint
            failed.append(bad_row)
            window = max(_SMALLEST_WINDOW, 2 * (hint + 1))
            if bad_row + 1 + window < stop:
                pending.append((bad_row + 1 + window, stop))
            if bad_row + 1 < stop:
                pending.append((bad_row + 1, min(stop, bad_row + 1 + window)))
            if hint > 0:
                pending.append((start, bad_row))
            continue
        if stop - start <= _SMALLEST_RETRY:
            # a conversion error names no row: below a few rows the Python reader is cheaper
            # than more pyarrow calls, and it gives the same values
            failed.extend(range(start, stop))
            continue
        middle = (start + stop) // 2
        # the second half is pushed first so chunks come out in row order
        pending.append((middle, stop))
        pending.append((start, middle))
    chunks.sort(key=lambda c: c[0])
    return chunks, sorted(failed), sorted(set(overridden))


def _lines(data: pa.Array, fast: pa.Array, use_threads: bool) -> tuple[pa.Buffer, memoryview, pajson.ReadOptions]:
    """The fast rows as one NDJSON buffer -> (buffer, row offsets into it, read options).

    Rows off the fast path stand in as ``{}`` so row numbers stay aligned (no copy for that
    when every row is on the path).
    """
    placeholder = pa.scalar(b"{}", type=data.type)
    empty, newline = pa.scalar(b"", type=data.type), pa.scalar(b"\n", type=data.type)
    source = data if pc.all(fast).as_py() else pc.if_else(fast, data, placeholder)
    lines = pc.binary_join_element_wise(source, empty, newline)
    offsets = memoryview(lines.buffers()[1]).cast("q" if pa.types.is_large_binary(lines.type) else "i")
    longest = pc.max(pc.binary_length(lines)).as_py() or 0
    read_options = pajson.ReadOptions(use_threads=use_threads, block_size=max(_MIN_BLOCK, longest + 2))
    return lines.buffers()[2], offsets, read_options


# what may follow a top-level key of each type in a row pyarrow would refuse (a wrong type, or
# more digits than the integer holds); a false alarm only sends a good row to the Python reader
_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


def _suspect_value(data_type: pa.DataType) -> str | None:
    if pa.types.is_integer(data_type):
        digits = str(_DIGITS.get(data_type.bit_width, 19))
        return r'(?:["\[{tf]|-?\d*[.eE]|-?\d{' + digits + "})"
    if pa.types.is_floating(data_type):
        return r'["\[{tf]'
    if pa.types.is_boolean(data_type):
        return r'["\[{0-9-]'
    if pa.types.is_string(data_type) or pa.types.is_timestamp(data_type) or pa.types.is_date(data_type):
        return r'[\[{0-9tf-]'
    if isinstance(data_type, (pa.ListType, pa.LargeListType)):
        return r'["{0-9tf-]'
    if isinstance(data_type, pa.StructType):
        return r'["\[0-9tf-]'
    return None  # decimals: their bounds are not a matter of the first character


def _suspects(data: pa.Array, target: pa.StructType) -> pa.Array | None:
    """Rows whose text shows a top-level field of the wrong type, by one regex pass (RE2)."""
    parts = []
    for field in target:
        value = _suspect_value(field.type)
        if value is not None:
            parts.append(re.escape(_json.dumps(field.name, ensure_ascii=False)) + r"\s*:\s*" + value)
    if not parts:
        return None
    return pc.fill_null(pc.match_substring_regex(data, "|".join(parts)), False)


_STRICT_DATE = r"^\d{4}-\d{2}-\d{2}$"


def _read_dates(array: pa.Array, target: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """Date text read by pyarrow (as strings) -> date32, and the positions in ``array`` of the
    entries holding a date Arrow cannot read strictly as ``YYYY-MM-DD`` (the Python reader takes
    those rows, with Spark's lenient rules). ``array`` is fresh from read_json (offset 0).
    """
    none = pa.array([], pa.int64())
    if pa.types.is_date(target):
        parsed = pc.strptime(array, format="%Y-%m-%d", unit="s", error_is_null=True)
        strict = pc.match_substring_regex(array, _STRICT_DATE)
        # strptime rolls a day past the month's end over (2024-02-30 -> 2024-03-01): written
        # back, such a date differs from its text
        kept = pc.equal(pc.strftime(parsed, format="%Y-%m-%d"), array)
        good = pc.or_kleene(array.is_null(), pc.and_kleene(pc.and_kleene(strict, parsed.is_valid()), kept))
        bad = pc.indices_nonzero(pc.invert(pc.fill_null(good, False)))
        return parsed.cast(pa.date32()), pc.cast(bad, pa.int64())
    if not _has(target, pa.types.is_date):
        return array, none
    if isinstance(target, pa.StructType):
        children, bads = [], []
        for i, field in enumerate(target):
            child, bad = _read_dates(array.field(i), field.type)
            children.append(child)
            bads.append(bad)
        mask = array.is_null() if array.null_count else None
        rebuilt = pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
        return rebuilt, pc.unique(pa.concat_arrays(bads))
    if isinstance(target, (pa.ListType, pa.LargeListType)):
        values, bad = _read_dates(array.values, target.value_type)
        cls = pa.LargeListArray if isinstance(target, pa.LargeListType) else pa.ListArray
        mask = array.is_null() if array.null_count else None
        rebuilt = cls.from_arrays(array.offsets, values, type=target, mask=mask)
        parents = pc.list_parent_indices(array)
        return rebuilt, pc.cast(pc.unique(pc.take(parents, bad)), pa.int64())
    return array, none  # pragma: no cover - maps never reach the fast path
