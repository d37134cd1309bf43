"""JSON and string values -> typed Arrow arrays, with Spark's ``from_json`` results.

The one job: decode a batch of Kafka values (a binary array, one JSON document per value) into
one struct array of a given schema, reporting every bad row by index instead of failing the batch.

How. The values are joined into one newline-delimited buffer by Arrow kernels (no Python object
per record) and parsed by ``pyarrow.json.read_json`` with the explicit schema, unexpected fields
ignored. ``read_json`` fails a whole block for one bad row. On a batch's first failure one RE2 pass
flags the rows whose text shows a top-level field of the wrong type (a field whose type drifted is
the common case) and sends them to the Python reader; a range that still fails is split (around the
row a parse error names, else in halves) until each bad row stands alone; a lone bad row, and any
row the fast path must not see, is decoded by a Python reader that follows Spark's rules. A call
costs about as much as 20 rows in Python, so past max(64, rows / 64) calls a failing range goes to
the Python reader whole: dense bad rows run at the Python reader's pace (~50k rows/s). Rows kept
off the fast path: those with a raw CR or LF (whitespace between tokens is legal JSON but would
split the row), those not starting with ``{`` (``read_json`` crashes on a top-level ``null``) or not
ending with ``}`` (cut short, most often: cheaper in Python than splitting a failed block), rows
with invalid UTF-8 (``read_json`` copies it unchecked), and every row when the schema has a MAP,
BINARY or TIMESTAMP_NTZ field (``read_json`` builds no maps, keeps base64 text undecoded, shifts a
zoned time into a zone-less one). DATE fields are read by the fast path as text and parsed strictly
as ``YYYY-MM-DD``; other date text goes to the Python reader (pyarrow would shift a zoned time to
UTC, and would take a number as days, where Spark keeps the written day and refuses numbers).

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

import base64
import bisect
import datetime as _dt
import decimal
import functools
import json as _json
import math
import re
import zoneinfo
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from pyconsumer.values.result import Decoded, as_binary
from pyconsumer.values.schema import SchemaError, to_arrow_schema

__all__ = ["decode_json", "decode_string", "decode_json_rows"]

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


class _Bad(Exception):
    """One value cannot take its field's type; the message is the row's reason."""


class _Num:
    """A JSON number kept as its text, so range and exactness are judged on what was written."""

    __slots__ = ("text", "integral")

    def __init__(self, text: str, integral: bool) -> None:
        self.text = text
        self.integral = integral


class _Constant(_Num):
    """``NaN``, ``Infinity`` and ``-Infinity`` written bare (Spark accepts them by default)."""


_DECODER = _json.JSONDecoder(
    parse_int=lambda s: _Num(s, True),
    parse_float=lambda s: _Num(s, False),
    parse_constant=lambda s: _Constant(s, False),
)

_INT_RANGES = {8: "TINYINT", 16: "SMALLINT", 32: "INT", 64: "BIGINT"}
_NON_NUMERIC = {"NaN": math.nan, "Infinity": math.inf, "+Infinity": math.inf, "-Infinity": -math.inf,
                "INF": math.inf, "+INF": math.inf, "-INF": -math.inf}
_FLOAT32_MAX = 3.4028234663852886e38
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

# Spark's DateTimeUtils.stringToDate / stringToTimestamp (the lenient fallback its JSON reader uses)
_DATE_TEXT = re.compile(r"\s*([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ].*)?)?)?\s*", re.DOTALL)
_TIMESTAMP_TEXT = re.compile(
    r"\s*([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2})"
    r"(?:[T ](\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?)?)?)?)?"
    r"\s*(Z|[+-]\d{1,2}(?::?\d{2})?|[A-Za-z][A-Za-z0-9_/+-]*)?\s*"
)


def _json_text(value: Any) -> str:
    """A parsed value back to compact JSON text, as Spark gives a nested value read as STRING."""
    if isinstance(value, _Num):
        return _number_text(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json.dumps(k, ensure_ascii=False)}:{_json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    return _json.dumps(value, ensure_ascii=False)


def _number_text(num: _Num) -> str:
    if num.integral or isinstance(num, _Constant):
        return num.text
    # Spark re-writes a non-integral number through a double (1.50 -> 1.5)
    return _java_double_text(float(num.text))


def _java_double_text(x: float) -> str:
    """Java's ``Double.toString``: plain between 1e-3 and 1e7, ``1.0E10`` style outside."""
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if math.isnan(x):
        return "NaN"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "e" not in text else format(x, "f")
    # the shortest digits that give x back, as d.ddd E exponent
    sign, digits, exponent = decimal.Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) - 1 + exponent
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def _int(value: Any, bits: int) -> int:
    if not isinstance(value, _Num) or isinstance(value, _Constant) or not value.integral:
        raise _Bad(f"expected an integer for {_INT_RANGES[bits]}, got {_describe(value)}")
    number = int(value.text)
    if not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
        raise _Bad(f"{value.text} is out of range for {_INT_RANGES[bits]}")
    return number


def _float(value: Any, single: bool) -> float:
    if isinstance(value, _Num):
        number = float(value.text) if not isinstance(value, _Constant) else _NON_NUMERIC[value.text]
    elif isinstance(value, str) and value in _NON_NUMERIC:
        number = _NON_NUMERIC[value]
    else:
        raise _Bad(f"expected a number for {'FLOAT' if single else 'DOUBLE'}, got {_describe(value)}")
    if single and math.isfinite(number) and abs(number) > _FLOAT32_MAX:
        number = math.copysign(math.inf, number)
    return number


def _decimal(value: Any, data_type: pa.Decimal128Type) -> decimal.Decimal:
    if isinstance(value, _Num) and not isinstance(value, _Constant):
        text = value.text
    elif isinstance(value, str):
        text = value
    else:
        raise _Bad(f"expected a number for DECIMAL({data_type.precision},{data_type.scale}), got {_describe(value)}")
    try:
        number = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        raise _Bad(f"{text!r} is not a decimal number") from None
    if not number.is_finite():
        raise _Bad(f"{text!r} is not a finite decimal")
    if number and number.adjusted() >= data_type.precision - data_type.scale:
        # more integer digits than the type holds (checked before quantize: 1e78 at scale 2
        # needs more digits than any context, and quantize would raise)
        raise _Bad(f"{text} does not fit DECIMAL({data_type.precision},{data_type.scale})")
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        rounded = number.quantize(decimal.Decimal(1).scaleb(-data_type.scale), rounding=decimal.ROUND_HALF_UP)
    if len(rounded.as_tuple().digits) > data_type.precision and rounded != 0:
        raise _Bad(f"{text} does not fit DECIMAL({data_type.precision},{data_type.scale})")
    return rounded


def _timestamp(value: Any, zoned: bool) -> _dt.datetime:
    if zoned and isinstance(value, _Num) and value.integral and not isinstance(value, _Constant):
        seconds = int(value.text)  # Spark reads an integer as seconds since the epoch
        try:
            stamp = _EPOCH + _dt.timedelta(seconds=seconds)
        except OverflowError:
            raise _Bad(f"{value.text} seconds is out of the timestamp range") from None
        return stamp if zoned else stamp.replace(tzinfo=None)
    if not isinstance(value, str):
        raise _Bad(f"expected a timestamp text or integer seconds, got {_describe(value)}")
    m = _TIMESTAMP_TEXT.fullmatch(value)
    if m is None:
        raise _Bad(f"{value!r} is not a timestamp")
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    try:
        stamp = _dt.datetime(int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
                             int(second or 0), int((fraction or "0")[:6].ljust(6, "0")))
    except ValueError as exc:
        raise _Bad(f"{value!r} is not a timestamp: {exc}") from None
    if zone and not zoned:
        raise _Bad(f"{value!r} has a zone, which TIMESTAMP_NTZ refuses")
    if zone and zone[0] in "+-":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        hours, minutes = (digits[:-2], digits[-2:]) if len(digits) > 2 else (digits, "0")
        stamp = stamp - sign * _dt.timedelta(hours=int(hours), minutes=int(minutes))
    elif zone and zone != "Z":
        # a region name (Europe/Paris, UTC, GMT): its offset at that wall-clock time
        try:
            region = zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise _Bad(f"{value!r} names an unknown time zone") from None
        stamp = stamp.replace(tzinfo=region).astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return stamp.replace(tzinfo=_dt.timezone.utc) if zoned else stamp


def _date(value: Any) -> _dt.date:
    if not isinstance(value, str):
        raise _Bad(f"expected a date text, got {_describe(value)}")
    m = _DATE_TEXT.fullmatch(value)
    if m is None:
        raise _Bad(f"{value!r} is not a date")
    try:
        return _dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
    except ValueError as exc:
        raise _Bad(f"{value!r} is not a date: {exc}") from None


def _describe(value: Any) -> str:
    if isinstance(value, _Num):
        return value.text
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:40] + "...")
    return _json.dumps(value)


#: a compiled converter: (parsed JSON value, not None; its path; the row's problems) -> value
_Converter = Callable[[Any, str, list[str]], Any]


class _BadAt(_Bad):
    """A :class:`_Bad` that already names its field (raised through arrays and maps)."""


def _named(exc: _Bad, path: str) -> str:
    return str(exc) if isinstance(exc, _BadAt) else f"field {path or '<value>'}: {exc}"


@functools.lru_cache(maxsize=256)
def _compile(data_type: pa.DataType) -> _Converter:
    """The converter of one type, built once per schema: Spark's rules without a type test per value.

    A struct, at any depth, keeps the fields that convert (each failure goes to ``problems``); any
    other failure raises :class:`_Bad` and takes its whole value with it, up to the nearest struct
    field: a bad number in an array nulls the array, as in Spark.
    """
    if isinstance(data_type, pa.StructType):
        fields = [(f.name, _compile(f.type)) for f in data_type]

        def struct(value: Any, path: str, problems: list[str]) -> Any:
            if type(value) is not dict:
                raise _Bad(f"expected an object, got {_describe(value)}")
            out: dict[str, Any] = {}
            for name, convert in fields:
                item = value.get(name)
                if item is None:
                    out[name] = None
                    continue
                where = f"{path}.{name}" if path else name
                try:
                    out[name] = convert(item, where, problems)
                except _Bad as exc:
                    problems.append(_named(exc, where))
                    out[name] = None
            return out

        return struct
    if isinstance(data_type, (pa.ListType, pa.LargeListType)):
        element = _compile(data_type.value_type)

        def array(value: Any, path: str, problems: list[str]) -> Any:
            if type(value) is not list:
                raise _Bad(f"expected an array, got {_describe(value)}")
            out: list[Any] = []
            for i, item in enumerate(value):
                if item is None:
                    out.append(None)
                    continue
                try:
                    out.append(element(item, f"{path}[{i}]", problems))
                except _Bad as exc:
                    raise _BadAt(_named(exc, f"{path}[{i}]")) from None
            return out

        return array
    if isinstance(data_type, pa.MapType):
        key_type, item = data_type.key_type, _compile(data_type.item_type)

        def mapping(value: Any, path: str, problems: list[str]) -> Any:
            if type(value) is not dict:
                raise _Bad(f"expected an object for a MAP, got {_describe(value)}")
            out: list[Any] = []
            for k, v in value.items():
                try:
                    out.append((_map_key(k, key_type), None if v is None else item(v, f"{path}[{k!r}]", problems)))
                except _Bad as exc:
                    raise _BadAt(_named(exc, f"{path}[{k!r}]")) from None
            return out

        return mapping
    scalar = _scalar_converter(data_type)
    return lambda value, path, problems: scalar(value)


def _map_key(key: str, key_type: pa.DataType) -> Any:
    if pa.types.is_string(key_type) or pa.types.is_large_string(key_type):
        return key
    # a JSON key is always text: other key types take the text's meaning
    return _scalar_converter(key_type)(_Num(key, key.lstrip("-").isdigit()) if _looks_numeric(key) else key)


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _string(value: Any) -> str:
    # Spark gives the JSON text of a non-string value
    return value if type(value) is str else _json_text(value)


def _boolean(value: Any) -> bool:
    if value is True or value is False:
        return bool(value)
    raise _Bad(f"expected true or false, got {_describe(value)}")


def _binary(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _Bad(f"expected base64 text for BINARY, got {_describe(value)}")
    try:
        # Jackson's base64 (Spark's) skips line breaks but wants the padding
        return base64.b64decode(value.replace("\n", "").replace("\r", ""), validate=True)
    except ValueError:
        raise _Bad(f"{_describe(value)} is not base64") from None


def _scalar_converter(data_type: pa.DataType) -> Callable[[Any], Any]:
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return _string
    if pa.types.is_boolean(data_type):
        return _boolean
    if pa.types.is_integer(data_type) and data_type.bit_width in _INT_RANGES and pa.types.is_signed_integer(data_type):
        return functools.partial(_int, bits=data_type.bit_width)
    if pa.types.is_float32(data_type) or pa.types.is_float64(data_type):
        return functools.partial(_float, single=data_type.bit_width == 32)
    if pa.types.is_decimal(data_type) and data_type.bit_width == 128:
        return functools.partial(_decimal, data_type=data_type)
    if pa.types.is_timestamp(data_type) and data_type.unit == "us" and data_type.tz in (None, "UTC"):
        return functools.partial(_timestamp, zoned=data_type.tz is not None)
    if pa.types.is_date32(data_type):
        return _date
    if pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return _binary
    raise SchemaError(f"the type {data_type} is not supported for JSON values (Spark's types map to "
                      "string, boolean, int8-64, float32/64, decimal128, timestamp[us, UTC], timestamp[us], "
                      "date32, binary, list, struct, map)")


def _parse_row(raw: bytes, data_type: pa.StructType) -> tuple[Any, str | None, bool]:
    """One value by Spark's rules -> (row, reason or None, malformed).

    ``row`` is Spark's result: a dict (fields that converted), or None for an empty value;
    ``malformed`` says the text is not a JSON object at all (Spark then gives a struct of nulls).
    """
    text = raw.decode("utf-8", errors="replace")
    start = len(text) - len(text.lstrip())
    if start == len(text):
        return None, None, False  # empty or whitespace: Spark gives null, no error
    try:
        value, end = _DECODER.raw_decode(text, start)
    except _json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} (character {exc.pos})", True
    except RecursionError:
        return None, "not valid JSON: nested too deeply", True
    if not isinstance(value, dict):
        return None, f"not a JSON object: {_describe(value)}", True
    problems: list[str] = []
    row = _compile(data_type)(value, "", problems)
    if not problems and "\\u" in text and _has_lone_surrogate(row):
        return None, "a string holds a lone UTF-16 surrogate escape", True
    return row, (problems[0] if problems else None), False


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def json_type(schema: Any) -> pa.DataType:
    """The type decode_json gives for ``schema``: its struct, every field nullable (a bad or
    missing field is null whatever the DDL's NOT NULL says, as with Spark's from_json)."""
    return _nullable(pa.struct(list(to_arrow_schema(schema))))


def _nullable(data_type: pa.DataType) -> pa.DataType:
    """Every field nullable, as Spark's from_json makes its schema."""
    if isinstance(data_type, pa.StructType):
        return pa.struct([pa.field(f.name, _nullable(f.type), nullable=True) for f in data_type])
    if isinstance(data_type, pa.ListType):
        return pa.list_(_nullable(data_type.value_type))
    if isinstance(data_type, pa.LargeListType):
        return pa.large_list(_nullable(data_type.value_type))
    if isinstance(data_type, pa.MapType):
        return pa.map_(data_type.key_type, _nullable(data_type.item_type))
    return data_type


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
    decodes base64, pyarrow keeps the text) and TIMESTAMP_NTZ (pyarrow shifts a zoned text to
    UTC, Spark refuses it)."""
    return (pa.types.is_map(data_type) or pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type)
            or (pa.types.is_timestamp(data_type) and data_type.tz is None))


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


def decode_json_rows(values: list[bytes | None], schema: Any, *, partial_results: bool = False) -> Decoded:
    """The Python reader alone, row by row (the reference the fast path is tested against)."""
    target = json_type(schema)
    _compile(target)
    rows: list[Any] = []
    errors: dict[int, str] = {}
    for i, raw in enumerate(values):
        if raw is None:
            rows.append(None)
            continue
        row, reason, malformed = _parse_row(raw, target)
        if reason is not None:
            errors[i] = reason
            if not partial_results:
                row = None
            elif malformed:
                row = {}  # Spark: a struct of nulls
        rows.append(row)
    return Decoded(pa.array(rows, type=target), errors)


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
    ``from_json`` gives) and its reason is in ``errors``. ``use_threads`` lets pyarrow parse
    blocks on its own threads (off by default: the callers already decode on several threads).
    """
    target = json_type(schema)
    _compile(target)  # an unsupported type is refused before any row is read
    data = as_binary(values, "JSON values")
    n = len(data)
    if n == 0:
        return Decoded(pa.array([], type=target), {})
    present = data.is_valid()
    if _has(target, _python_only):
        fast = pa.array([False] * n)
    else:
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

    slow_rows: list[int] = pc.indices_nonzero(pc.and_not(present, fast)).to_pylist()
    chunks: list[tuple[int, int, pa.StructArray]] = []
    overridden: list[int] = []  # rows a chunk holds but must not show (see _fast_path)
    if pc.any(fast).as_py():
        # uncovered: rows no pyarrow chunk holds
        chunks, uncovered, overridden = _fast_path(data, fast, target, use_threads)
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
        row, reason, malformed = _parse_row(raw, target)
        if reason is not None:
            errors[i] = reason
            if not partial_results:
                continue
            if malformed:
                row = {}  # Spark: a struct of nulls
        if row is not None:
            replaced.append(i)
            replacements.append(row)
    return Decoded(_assemble(n, target, chunks, uncovered, overridden, fast, replaced, replacements), errors)


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


def _assemble(
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


def _fast_path(
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
        good = pc.or_kleene(array.is_null(), pc.and_kleene(strict, parsed.is_valid()))
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


def decode_string(values: pa.Array | pa.ChunkedArray) -> Decoded:
    """Binary values -> a string array; a value that is not valid UTF-8 is a null row with its reason.

    Valid values are not copied one by one: the whole array is checked by Arrow, and only when
    that fails are the bad rows looked for.
    """
    data = as_binary(values, "JSON values")
    as_string = pa.large_string() if pa.types.is_large_binary(data.type) else pa.string()
    try:
        return Decoded(data.cast(as_string), {})
    except pa.ArrowInvalid:
        pass
    errors: dict[int, str] = {}
    keep: list[bool] = []
    for i, value in enumerate(data.to_pylist()):
        if value is None:
            keep.append(True)
            continue
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors[i] = f"invalid UTF-8 at byte {exc.start}: {exc.reason}"
            keep.append(False)
            continue
        keep.append(True)
    mask = pa.array(keep)
    cleaned = pc.if_else(mask, data, pa.nulls(len(data), data.type))
    return Decoded(cleaned.cast(as_string), errors)
