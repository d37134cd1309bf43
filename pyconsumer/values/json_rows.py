"""The Python reader of JSON values: one value -> one row by Spark's ``from_json`` rules.

Each value is parsed with numbers kept as their text (range and exactness are judged on what was
written) and converted field by field by a converter compiled once per schema, collecting the
reason of every field that does not convert. :func:`pyconsumer.values.json.decode_json` sends it
the rows its pyarrow fast path must not or could not read; :func:`decode_json_rows` runs it alone
(the reference the fast path is tested against). The rules are listed in
:mod:`pyconsumer.values.json`.
"""

from __future__ import annotations

import base64
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

from pyconsumer.values.result import Decoded
from pyconsumer.values.schema import SchemaError, to_arrow_schema

__all__ = ["check_types", "decode_json_rows", "json_type", "parse_row"]


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
        if isinstance(value, _Constant):
            return _NON_NUMERIC[value.text]
        if single:
            # rounded once from the text, as pyarrow.json and Jackson read a FLOAT (through a
            # double, a number at a float32 midpoint or past the largest float32 could round twice)
            return float(pa.array([value.text], pa.string()).cast(pa.float32())[0].as_py())
        return float(value.text)
    if isinstance(value, str) and value in _NON_NUMERIC:
        return _NON_NUMERIC[value]
    raise _Bad(f"expected a number for {'FLOAT' if single else 'DOUBLE'}, got {_describe(value)}")


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


def check_types(target: pa.DataType) -> None:
    """Refuse a schema holding a type the reader cannot give (a :class:`SchemaError` naming it),
    before any row is read; the converter it builds is kept for the rows."""
    _compile(target)


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


def parse_row(raw: bytes, data_type: pa.StructType) -> tuple[Any, str | None, bool]:
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
    # a lone surrogate makes the whole row malformed, whatever else is wrong: the row could not
    # be given even partially (an Arrow string holds UTF-8 only)
    if "\\u" in text and _has_lone_surrogate(row):
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
        row, reason, malformed = parse_row(raw, target)
        if reason is not None:
            errors[i] = reason
            if not partial_results:
                row = None
            elif malformed:
                row = {}  # Spark: a struct of nulls
        rows.append(row)
    return Decoded(pa.array(rows, type=target), errors)
