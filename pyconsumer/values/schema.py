"""Value schemas: a Spark DDL string, a pyspark StructType or a pyarrow schema -> a pyarrow schema.

The one job: turn what a user writes for ``from_json(col, schema)`` into the pyarrow schema the
decoders fill, with Spark's type mapping (timestamp -> ``timestamp[us, UTC]``, date -> ``date32``,
decimal -> ``decimal128``, tinyint/smallint/int/bigint -> int8/16/32/64, ...).

The DDL forms accepted are those of Spark's ``StructType.fromDDL`` and ``from_json``: a column list
(``"id BIGINT, name STRING NOT NULL COMMENT 'who'"``) or one ``STRUCT<...>`` type; backquoted names
(with ```` `` ```` for a backquote inside); type names in any case; ``NOT NULL``; ``COMMENT``. A bad
DDL raises :class:`SchemaError` naming the position and the token. One deliberate difference: a
name repeated at one level (case-sensitively) is refused, where Spark keeps both fields.

:func:`infer_schema` guesses a schema from a sample of JSON values the way Spark's JSON reader
does; it is meant to run once, on the driver, never per batch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from pyconsumer.errors import ConfigurationError

__all__ = ["SchemaError", "parse_ddl", "to_arrow_schema", "infer_schema", "TIMESTAMP"]

#: Spark's TIMESTAMP (a point in time, shown in the session zone): microseconds, UTC
TIMESTAMP = pa.timestamp("us", tz="UTC")


class SchemaError(ConfigurationError):
    """A value schema that cannot be used: a bad DDL string or an unsupported type.

    ``position`` (0-based, into the DDL) and ``token`` say where, when the DDL is at fault.
    """

    def __init__(self, message: str, position: int | None = None, token: str | None = None) -> None:
        if position is not None:
            message = f"{message} at position {position} (near {token!r})"
        super().__init__(message)
        self.position = position
        self.token = token


_SIMPLE: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "bool": pa.bool_(),
    "tinyint": pa.int8(),
    "byte": pa.int8(),
    "smallint": pa.int16(),
    "short": pa.int16(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "long": pa.int64(),
    "float": pa.float32(),
    "real": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": TIMESTAMP,
    "timestamp_ltz": TIMESTAMP,
    # a wall-clock time without zone: Arrow's zone-less timestamp is the same idea
    "timestamp_ntz": pa.timestamp("us"),
}
_DECIMAL = {"decimal", "dec", "numeric"}
_SIZED_STRING = {"varchar", "char", "character"}

# one token: a backquoted name, a quoted string, a word, a number or one punctuation mark
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<quoted>`(?:[^`]|``)*`)
      | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<word>[A-Za-z0-9_]+)
      | (?P<punct>[<>(),:])
    )""",
    re.VERBOSE | re.DOTALL,
)


class _Tokens:
    """The DDL as a list of (kind, text, position), read front to back."""

    def __init__(self, ddl: str) -> None:
        self.ddl = ddl
        self.items: list[tuple[str, str, int]] = []
        pos = 0
        while True:
            while pos < len(ddl) and ddl[pos].isspace():
                pos += 1
            if pos == len(ddl):
                break
            m = _TOKEN.match(ddl, pos)
            if m is None or m.lastgroup is None:
                raise SchemaError("unexpected character in DDL", pos, ddl[pos])
            self.items.append((m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        if self.i < len(self.items):
            return self.items[self.i]
        return ("end", "<end of DDL>", len(self.ddl))

    def next(self) -> tuple[str, str, int]:
        item = self.peek()
        if item[0] != "end":
            self.i += 1
        return item

    def at_word(self, *words: str) -> bool:
        kind, text, _ = self.peek()
        return kind == "word" and text.lower() in words

    def expect(self, punct: str) -> None:
        kind, text, pos = self.next()
        if kind != "punct" or text != punct:
            raise SchemaError(f"expected {punct!r}", pos, text)

    def fail(self, message: str) -> SchemaError:
        _, text, pos = self.peek()
        return SchemaError(message, pos, text)


def _name(tokens: _Tokens) -> str:
    kind, text, pos = tokens.next()
    if kind == "quoted":
        return text[1:-1].replace("``", "`")
    if kind == "word":
        return text
    raise SchemaError("expected a field name", pos, text)


def _int(tokens: _Tokens) -> int:
    kind, text, pos = tokens.next()
    if kind != "word" or not text.isdigit():
        raise SchemaError("expected a whole number", pos, text)
    return int(text)


def _type(tokens: _Tokens) -> pa.DataType:
    kind, text, pos = tokens.next()
    if kind != "word":
        raise SchemaError("expected a type", pos, text)
    name = text.lower()
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name in _DECIMAL:
        precision, scale = 10, 0  # Spark's default DECIMAL
        if tokens.peek()[1] == "(":
            tokens.next()
            precision = _int(tokens)
            if tokens.peek()[1] == ",":
                tokens.next()
                scale = _int(tokens)
            tokens.expect(")")
        if not 1 <= precision <= 38 or scale > precision:
            raise SchemaError(f"DECIMAL({precision},{scale}) is out of range (precision 1..38, scale <= precision)",
                              pos, text)
        return pa.decimal128(precision, scale)
    if name in _SIZED_STRING:
        # Spark reads VARCHAR(n)/CHAR(n) values as strings
        tokens.expect("(")
        _int(tokens)
        tokens.expect(")")
        return pa.string()
    if name == "array":
        tokens.expect("<")
        element = _type(tokens)
        tokens.expect(">")
        return pa.list_(element)
    if name == "map":
        tokens.expect("<")
        key = _type(tokens)
        tokens.expect(",")
        value = _type(tokens)
        tokens.expect(">")
        return pa.map_(key, value)
    if name == "struct":
        tokens.expect("<")
        fields: list[pa.Field] = []
        if tokens.peek()[1] != ">":
            fields = _fields(tokens, closing=">")
        tokens.expect(">")
        return pa.struct(fields)
    raise SchemaError(f"unknown type {text!r}", pos, text)


def _fields(tokens: _Tokens, closing: str | None) -> list[pa.Field]:
    """``name [:] type [NOT NULL] [COMMENT 'text']`` separated by commas, up to ``closing``."""
    fields: list[pa.Field] = []
    seen: set[str] = set()
    while True:
        _, _, name_pos = tokens.peek()
        name = _name(tokens)
        if tokens.peek() == ("punct", ":", tokens.peek()[2]):
            tokens.next()
        data_type = _type(tokens)
        nullable = True
        metadata: dict[bytes, bytes] | None = None
        while tokens.at_word("not", "comment"):
            if tokens.at_word("not"):
                tokens.next()
                if not tokens.at_word("null"):
                    raise tokens.fail("expected NULL after NOT")
                tokens.next()
                nullable = False
            else:
                tokens.next()
                kind, text, pos = tokens.next()
                if kind != "string":
                    raise SchemaError("expected a quoted comment", pos, text)
                comment = re.sub(r"\\(.)", r"\1", text[1:-1])
                metadata = {b"comment": comment.encode()}
        if name in seen:
            # Spark takes them (and from_json fills only the last); a second field of the same
            # name cannot be addressed in Arrow or Spark, so it is refused here
            raise SchemaError(f"duplicate field name {name!r}", name_pos, name)
        seen.add(name)
        fields.append(pa.field(name, data_type, nullable=nullable, metadata=metadata))
        kind, text, pos = tokens.peek()
        if kind == "punct" and text == ",":
            tokens.next()
            continue
        if (closing is None and kind == "end") or (kind == "punct" and text == closing):
            return fields
        raise SchemaError("expected ',' or the end of the fields", pos, text)


def parse_ddl(ddl: str) -> pa.Schema:
    """A Spark DDL string (``"a INT, b ARRAY<STRING>"`` or ``"STRUCT<a: INT>"``) -> a pyarrow schema.

    Raises :class:`SchemaError` naming the position and token of the first thing wrong.
    """
    tokens = _Tokens(ddl)
    if tokens.peek()[0] == "end":
        raise SchemaError("the DDL is empty", 0, "")
    # a lone STRUCT<...> is the whole record's type (from_json accepts it)
    if tokens.at_word("struct") and len(tokens.items) > 1 and tokens.items[1][1] == "<":
        data_type = _type(tokens)
        if tokens.peek()[0] != "end":
            raise tokens.fail("unexpected text after the STRUCT type")
        assert isinstance(data_type, pa.StructType)
        return pa.schema(list(data_type))
    return pa.schema(_fields(tokens, closing=None))


def _from_spark_type(data_type: Any) -> pa.DataType:
    """A pyspark DataType -> pyarrow, by its ``typeName()`` and attributes (no pyspark import)."""
    name = data_type.typeName()
    if name == "struct":
        return pa.struct(_from_spark_fields(data_type))
    if name == "array":
        return pa.list_(_from_spark_type(data_type.elementType))
    if name == "map":
        return pa.map_(_from_spark_type(data_type.keyType), _from_spark_type(data_type.valueType))
    if name == "decimal":
        return pa.decimal128(data_type.precision, data_type.scale)
    if name in _SIZED_STRING:
        return pa.string()
    spark_names = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}
    simple = _SIMPLE.get(spark_names.get(name, name))
    if simple is None:
        raise SchemaError(f"the Spark type {data_type!r} has no Arrow mapping here")
    return simple


def _from_spark_fields(struct: Any) -> list[pa.Field]:
    return [pa.field(f.name, _from_spark_type(f.dataType), nullable=bool(f.nullable)) for f in struct.fields]


def to_arrow_schema(schema: str | pa.Schema | Any) -> pa.Schema:
    """A DDL string, a pyarrow schema (taken as given) or a pyspark ``StructType`` -> a pyarrow schema."""
    if isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, str):
        return parse_ddl(schema)
    # a pyspark StructType, recognised by its module so pyspark is never imported here
    if type(schema).__module__.startswith("pyspark.") and hasattr(schema, "fields"):
        return pa.schema(_from_spark_fields(schema))
    raise SchemaError(
        f"a value schema is a Spark DDL string, a pyspark StructType or a pyarrow Schema, not {type(schema).__name__}"
    )


# ------------------------------------------------------------------------------------- inference

# Spark's order of numeric widening when two samples disagree
_NUMERIC_RANK = {pa.int64(): 0, pa.float64(): 1}


def _infer_value(value: Any) -> pa.DataType:
    if value is None:
        return pa.null()
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        # Spark infers LongType, beyond it DECIMAL(digits, 0), past 38 digits a double
        if -(2**63) <= value < 2**63:
            return pa.int64()
        digits = len(str(abs(value)))
        return pa.decimal128(digits, 0) if digits <= 38 else pa.float64()
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, list):
        element: pa.DataType = pa.null()
        for item in value:
            element = _merge(element, _infer_value(item))
        return pa.list_(element)
    if isinstance(value, dict):
        return pa.struct([pa.field(k, _infer_value(v)) for k, v in sorted(value.items())])
    raise SchemaError(f"cannot infer a type for {type(value).__name__}")  # pragma: no cover - json gives no other


def _merge(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Spark's ``compatibleType``: equal stays, null gives way, numbers widen, the rest is string."""
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    if a in _NUMERIC_RANK and b in _NUMERIC_RANK:
        return pa.float64()
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        # a long widens as DECIMAL(20,0); a double wins over any decimal
        x, y = (pa.decimal128(20, 0) if t == pa.int64() else t for t in (a, b))
        if pa.types.is_floating(x) or pa.types.is_floating(y):
            return pa.float64()
        if pa.types.is_decimal(x) and pa.types.is_decimal(y):
            scale = max(x.scale, y.scale)
            whole = max(x.precision - x.scale, y.precision - y.scale)
            return pa.decimal128(min(whole + scale, 38), scale)
    if isinstance(a, pa.StructType) and isinstance(b, pa.StructType):
        merged = {f.name: f.type for f in a}
        for f in b:
            merged[f.name] = _merge(merged[f.name], f.type) if f.name in merged else f.type
        return pa.struct([pa.field(k, v) for k, v in sorted(merged.items())])
    if isinstance(a, pa.ListType) and isinstance(b, pa.ListType):
        return pa.list_(_merge(a.value_type, b.value_type))
    return pa.string()


def _finish(data_type: pa.DataType) -> pa.DataType:
    # a type seen only as null is a string, as in Spark
    if pa.types.is_null(data_type):
        return pa.string()
    if isinstance(data_type, pa.StructType):
        return pa.struct([pa.field(f.name, _finish(f.type)) for f in data_type])
    if isinstance(data_type, pa.ListType):
        return pa.list_(_finish(data_type.value_type))
    return data_type


def infer_schema(samples: Iterable[bytes | str | None]) -> pa.Schema:
    """Infer a schema from sample JSON values the way Spark's JSON reader does.

    Integers -> BIGINT (DECIMAL(digits, 0) beyond its range), other numbers -> DOUBLE, text ->
    STRING (no timestamp or date guessing, as Spark's defaults), objects -> structs with fields
    sorted by name, arrays -> arrays of the merged element type, null-only -> STRING; a field seen
    with two types gets the wider one (BIGINT + DOUBLE -> DOUBLE) or STRING. Values that are not
    JSON objects and null values are skipped (Spark would add a ``_corrupt_record`` column for
    them). Python's ``json`` is used rather than pyarrow's inference, which guesses timestamps and
    fails a whole block on a type conflict. Run it once, on the driver, on a small sample: it is a
    Python loop over every value.
    """
    merged: pa.DataType = pa.struct([])
    seen = 0
    for sample in samples:
        if sample is None:
            continue
        try:
            value = json.loads(sample)
        except ValueError:
            continue
        if isinstance(value, dict):
            merged = _merge(merged, _infer_value(value))
            seen += 1
    if not seen:
        raise SchemaError("no JSON object in the sample to infer a schema from")
    finished = _finish(merged)
    assert isinstance(finished, pa.StructType)
    return pa.schema(list(finished))
