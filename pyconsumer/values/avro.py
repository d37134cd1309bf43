"""Avro schemas for the value decoder: parse, resolve a writer against a reader, map to Arrow.

One job: the schema side of Avro decoding. :func:`parse_schema` reads a schema (JSON text or
parsed JSON, with named references); :func:`arrow_type` gives the Arrow type Spark's
``from_avro`` (SchemaConverters) gives for a reader schema; :func:`compile_decoder` resolves a
writer schema against a reader schema per the Avro specification and turns the pair into a
flat :class:`Program` that the compiled decoder (pyext/avro.pyx) runs over value bytes.
An unresolvable pair raises :class:`SchemaResolutionError` naming the field path.

The program is a list of 4-int instructions ``(op, a, b, c)`` plus an int table (``aux``), a
byte blob (enum symbols and encoded default values) and the reasons of the row errors a program
can raise by itself. Its output columns depend on the reader schema alone, so programs of
several writer schemas against one reader write the same columns (:attr:`Program.layout`).
The opcodes and the column kinds below are mirrored in pyext/avro.pxd.
"""
from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import pyarrow as pa

from pyconsumer.errors import KafkaClientError

__all__ = [
    "AvroSchemaError", "SchemaResolutionError", "Schema", "Primitive", "Record", "Field", "Enum",
    "Fixed", "Array", "Map", "UnionSchema", "parse_schema", "parse_with_references",
    "named_types", "arrow_type", "resolve",
    "compile_decoder", "Program", "ColumnSpec",
]


class AvroSchemaError(KafkaClientError, ValueError):
    """An Avro schema does not parse (unknown type, bad name, bad default, ...)."""


class SchemaResolutionError(AvroSchemaError):
    """A writer schema does not resolve against a reader schema; ``path`` names the field."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.reason = message


# --------------------------------------------------------------------------- schema model

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


@dataclass(eq=False)
class Primitive:
    type: str                      # one of PRIMITIVES
    logical: str | None = None     # a valid logical type only (invalid ones are dropped)
    precision: int = 0             # decimal
    scale: int = 0                 # decimal


@dataclass(eq=False)
class Field:
    name: str
    type: Schema
    has_default: bool = False
    default: object = None
    aliases: tuple[str, ...] = ()


@dataclass(eq=False)
class Record:
    name: str                      # full name
    fields: list[Field] = field(default_factory=list)
    aliases: tuple[str, ...] = ()  # full names


@dataclass(eq=False)
class Enum:
    name: str
    symbols: tuple[str, ...]
    default: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(eq=False)
class Fixed:
    name: str
    size: int
    logical: str | None = None
    precision: int = 0
    scale: int = 0
    aliases: tuple[str, ...] = ()


@dataclass(eq=False)
class Array:
    items: Schema


@dataclass(eq=False)
class Map:
    values: Schema


@dataclass(eq=False)
class UnionSchema:
    branches: list[Schema]


Schema: TypeAlias = Primitive | Record | Enum | Fixed | Array | Map | UnionSchema
Named: TypeAlias = Record | Enum | Fixed


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _describe(s: Schema) -> str:
    if isinstance(s, Primitive):
        return s.type if s.logical is None else f"{s.type} ({s.logical})"
    if isinstance(s, (Record, Enum, Fixed)):
        return f"{type(s).__name__.lower()} {s.name}"
    if isinstance(s, Array):
        return f"array of {_describe(s.items)}"
    if isinstance(s, Map):
        return f"map of {_describe(s.values)}"
    return "union [" + ", ".join(_describe(b) for b in s.branches) + "]"


# --------------------------------------------------------------------------- parsing

class _Parser:
    def __init__(self, named: Mapping[str, Schema]) -> None:
        self.named: dict[str, Schema] = dict(named)

    def fullname(self, name: object, namespace: str | None, what: str) -> str:
        if not isinstance(name, str) or not name:
            raise AvroSchemaError(f"{what} needs a non-empty string name, got {name!r}")
        for part in name.split("."):
            if not part or not (part[0].isalpha() or part[0] == "_") or not all(
                    c.isalnum() or c == "_" for c in part) or not part.isascii():
                raise AvroSchemaError(f"invalid Avro name {name!r}")
        if "." in name or not namespace:
            return name
        return f"{namespace}.{name}"

    def aliases(self, obj: Mapping[str, object], namespace: str | None) -> tuple[str, ...]:
        raw = obj.get("aliases", [])
        if not isinstance(raw, list):
            raise AvroSchemaError(f"aliases must be a list, got {raw!r}")
        return tuple(self.fullname(a, namespace, "an alias") for a in raw)

    def register(self, s: Named) -> None:
        if s.name in PRIMITIVES or s.name in self.named:
            raise AvroSchemaError(f"the name {s.name!r} is defined twice")
        self.named[s.name] = s

    def parse(self, obj: object, namespace: str | None) -> Schema:
        if isinstance(obj, str):
            if obj in PRIMITIVES:
                return Primitive(obj)
            full = obj if "." in obj or not namespace else f"{namespace}.{obj}"
            found = self.named.get(full, self.named.get(obj))
            if found is None:
                raise AvroSchemaError(f"unknown type {obj!r}")
            return found
        if isinstance(obj, list):
            branches = [self.parse(b, namespace) for b in obj]
            seen: set[str] = set()
            for b in branches:
                if isinstance(b, UnionSchema):
                    raise AvroSchemaError("a union may not hold a union directly")
                key = b.name if isinstance(b, (Record, Enum, Fixed)) else type(b).__name__ + (
                    b.type if isinstance(b, Primitive) else "")
                if key in seen:
                    raise AvroSchemaError(f"a union holds {_describe(b)} twice")
                seen.add(key)
            return UnionSchema(branches)
        if not isinstance(obj, dict):
            raise AvroSchemaError(f"not an Avro schema: {obj!r}")
        t = obj.get("type")
        if t in PRIMITIVES:
            return self.primitive(obj, str(t))
        if t == "record" or t == "error":
            return self.record(obj, namespace)
        if t == "enum":
            name = self.fullname(obj.get("name"), self.ns(obj, namespace), "an enum")
            symbols = obj.get("symbols")
            if (not isinstance(symbols, list) or not all(isinstance(x, str) for x in symbols)
                    or len(set(symbols)) != len(symbols)):
                raise AvroSchemaError(f"enum {name}: symbols must be distinct strings")
            default = obj.get("default")
            if default is not None and default not in symbols:
                raise AvroSchemaError(f"enum {name}: default {default!r} is not a symbol")
            e = Enum(name, tuple(symbols), default,
                     self.aliases(obj, name.rpartition(".")[0] or None))
            self.register(e)
            return e
        if t == "fixed":
            name = self.fullname(obj.get("name"), self.ns(obj, namespace), "a fixed")
            size = obj.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise AvroSchemaError(f"fixed {name}: size must be an int >= 0, got {size!r}")
            fx = Fixed(name, size, aliases=self.aliases(obj, name.rpartition(".")[0] or None))
            if obj.get("logicalType") == "decimal":
                p, s = self.decimal(obj)
                if p and p <= math.floor(math.log10(2) * (8 * size - 1)):
                    fx.logical, fx.precision, fx.scale = "decimal", p, s
            elif obj.get("logicalType") == "duration" and size == 12:
                fx.logical = "duration"
            self.register(fx)
            return fx
        if t == "array":
            return Array(self.parse(obj.get("items"), namespace))
        if t == "map":
            return Map(self.parse(obj.get("values"), namespace))
        if isinstance(t, (dict, list)) or (isinstance(t, str) and t not in (
                "record", "error", "enum", "fixed", "array", "map")):
            return self.parse(t, namespace)       # {"type": "some.Name"} or nested
        raise AvroSchemaError(f"unknown Avro type {t!r}")

    @staticmethod
    def ns(obj: Mapping[str, object], namespace: str | None) -> str | None:
        ns = obj.get("namespace", namespace)
        return ns if isinstance(ns, str) and ns else None

    @staticmethod
    def decimal(obj: Mapping[str, object]) -> tuple[int, int]:
        p, s = obj.get("precision"), obj.get("scale", 0)
        if (isinstance(p, int) and isinstance(s, int) and not isinstance(p, bool)
                and not isinstance(s, bool) and p > 0 and 0 <= s <= p):
            return p, s
        return 0, 0                               # invalid: the spec says ignore the logical type

    def primitive(self, obj: Mapping[str, object], t: str) -> Primitive:
        lt = obj.get("logicalType")
        p = Primitive(t)
        if t == "bytes" and lt == "decimal":
            prec, sc = self.decimal(obj)
            if prec:
                p.logical, p.precision, p.scale = "decimal", prec, sc
        elif (t == "int" and lt in ("date", "time-millis")) or (t == "long" and lt in (
                "time-micros", "timestamp-millis", "timestamp-micros", "local-timestamp-millis",
                "local-timestamp-micros")) or (t == "string" and lt == "uuid"):
            p.logical = str(lt)
        return p

    def record(self, obj: Mapping[str, object], namespace: str | None) -> Record:
        name = self.fullname(obj.get("name"), self.ns(obj, namespace), "a record")
        own_ns = name.rpartition(".")[0] or None
        rec = Record(name, aliases=self.aliases(obj, own_ns))
        self.register(rec)                        # before the fields: they may refer to it
        raw = obj.get("fields")
        if not isinstance(raw, list):
            raise AvroSchemaError(f"record {name}: fields must be a list")
        names: set[str] = set()
        for f in raw:
            if not isinstance(f, dict):
                raise AvroSchemaError(f"record {name}: a field must be an object, got {f!r}")
            fname = f.get("name")
            if not isinstance(fname, str) or fname in names:
                raise AvroSchemaError(f"record {name}: bad or repeated field name {fname!r}")
            self.fullname(fname, None, "a field")
            names.add(fname)
            ftype = self.parse(f.get("type"), own_ns)
            fld = Field(fname, ftype, aliases=tuple(str(a) for a in f.get("aliases", [])))
            if "default" in f:
                fld.has_default, fld.default = True, f["default"]
                try:
                    encode_default(ftype, f["default"])
                except AvroSchemaError as e:
                    raise AvroSchemaError(f"record {name}, field {fname}: {e}") from None
            rec.fields.append(fld)
        return rec


def parse_schema(schema: str | Mapping[str, object] | Sequence[object],
                 named: Mapping[str, Schema] | None = None) -> Schema:
    """An Avro schema from JSON text or parsed JSON. ``named`` holds already-parsed named
    schemas (a registry's references) by full name, for the schema to refer to."""
    if isinstance(schema, str):
        obj: object = schema                      # a bare name such as "null" or "a.B"
        if schema.lstrip()[:1] in ("{", "[", '"'):
            try:
                obj = json.loads(schema)
            except json.JSONDecodeError as e:
                raise AvroSchemaError(f"an Avro schema is not valid JSON: {e}") from None
    else:
        obj = schema
    return _Parser(named or {}).parse(obj, None)


def parse_with_references(schema: str | Mapping[str, object] | Sequence[object],
                          references: Sequence[str | Mapping[str, object] | Sequence[object]]
                          ) -> Schema:
    """A schema whose named types come from referenced schemas (a registry's references),
    given in dependency order (a dependency before what uses it): each is parsed with the
    named types of those before it."""
    named: dict[str, Schema] = {}
    for ref in references:
        named.update(named_types(parse_schema(ref, named)))
    return parse_schema(schema, named)


def named_types(schema: Schema) -> dict[str, Schema]:
    """Every named type a schema defines or uses, by full name (to pass on as references)."""
    out: dict[str, Schema] = {}

    def walk(s: Schema) -> None:
        if isinstance(s, (Record, Enum, Fixed)):
            if s.name in out:
                return
            out[s.name] = s
            if isinstance(s, Record):
                for f in s.fields:
                    walk(f.type)
        elif isinstance(s, Array):
            walk(s.items)
        elif isinstance(s, Map):
            walk(s.values)
        elif isinstance(s, UnionSchema):
            for b in s.branches:
                walk(b)
    walk(schema)
    return out


# --------------------------------------------------------------------------- defaults

def _zigzag(n: int) -> bytes:
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def encode_default(s: Schema, v: object) -> bytes:
    """A field's JSON default as Avro binary of its schema (the decoder reads it as a value)."""
    if isinstance(s, Primitive):
        t = s.type
        if t == "null" and v is None:
            return b""
        if t == "boolean" and isinstance(v, bool):
            return b"\x01" if v else b"\x00"
        if t in ("int", "long") and isinstance(v, int) and not isinstance(v, bool):
            lim = 1 << (31 if t == "int" else 63)
            if -lim <= v < lim:
                return _zigzag(v)
        if t in ("float", "double") and isinstance(v, (int, float)) and not isinstance(v, bool):
            return struct.pack("<f" if t == "float" else "<d", float(v))
        if t == "string" and isinstance(v, str):
            b = v.encode()
            return _zigzag(len(b)) + b
        if t == "bytes" and isinstance(v, str):
            try:
                b = v.encode("latin-1")            # JSON defaults of bytes: code points 0-255
            except UnicodeEncodeError:
                pass
            else:
                return _zigzag(len(b)) + b
    elif isinstance(s, Fixed) and isinstance(v, str):
        try:
            b = v.encode("latin-1")
        except UnicodeEncodeError:
            pass
        else:
            if len(b) == s.size:
                return b
    elif isinstance(s, Enum) and v in s.symbols:
        return _zigzag(s.symbols.index(str(v)))
    elif isinstance(s, Array) and isinstance(v, list):
        body = b"".join(encode_default(s.items, x) for x in v)
        return (_zigzag(len(v)) + body + b"\x00") if v else b"\x00"
    elif isinstance(s, Map) and isinstance(v, dict):
        body = b"".join(encode_default(Primitive("string"), str(k)) + encode_default(s.values, x)
                        for k, x in v.items())
        return (_zigzag(len(v)) + body + b"\x00") if v else b"\x00"
    elif isinstance(s, Record) and isinstance(v, dict):
        out = b""
        for f in s.fields:
            if f.name in v:
                out += encode_default(f.type, v[f.name])
            elif f.has_default:
                out += encode_default(f.type, f.default)
            else:
                raise AvroSchemaError(f"default of record {s.name} lacks field {f.name}")
        return out
    elif isinstance(s, UnionSchema):
        # the spec's rule is the first branch; later specs allow any branch that fits
        for i, branch in enumerate(s.branches):
            try:
                return _zigzag(i) + encode_default(branch, v)
            except AvroSchemaError:
                continue
    raise AvroSchemaError(f"default {v!r} does not fit {_describe(s)}")


# --------------------------------------------------------------------------- Arrow types

# column kinds (pyext/avro.pxd K_*)
K_NULL, K_BOOL, K_I32, K_I64, K_F32, K_F64, K_BIN, K_DEC, K_STRUCT, K_LIST = range(10)

_TS = pa.timestamp("us", tz="UTC")


def _union_shape(u: UnionSchema) -> tuple[str, list[Schema]]:
    """How Spark maps a union: 'null' (only null), 'nullable' ([null, T]), 'long'/'double'
    (int+long, float+double), or 'struct' (member0, member1, ... of the non-null branches)."""
    rest = [b for b in u.branches if not (isinstance(b, Primitive) and b.type == "null")]
    if not rest:
        return "null", rest
    if len(rest) == 1:
        return "nullable", rest
    # Spark looks at the Avro types only: [date, long] is a long too
    plain = {b.type for b in rest if isinstance(b, Primitive)}
    if len(plain) == len(rest) == 2 and plain == {"int", "long"}:
        return "long", rest
    if len(plain) == len(rest) == 2 and plain == {"float", "double"}:
        return "double", rest
    return "struct", rest


def _nullable(s: Schema) -> bool:
    """Spark's nullability: null, or a union with a null branch (a union's members are all
    nullable: one is set at a time)."""
    if isinstance(s, Primitive):
        return s.type == "null"
    return isinstance(s, UnionSchema) and any(
        isinstance(b, Primitive) and b.type == "null" for b in s.branches)


def arrow_type(reader: Schema, *, permissive: bool = True) -> pa.DataType:
    """The Arrow type of a reader schema, as Spark's from_avro gives it (SchemaConverters, and
    Spark's own Arrow export of the result, checked against spark-avro 4.2 on Spark 4.3):
    ``[null, T]`` -> T, other unions -> struct<member0, ...>, [int, long] -> int64,
    [float, double] -> float64, enum and uuid -> string, fixed and bytes -> binary, decimal
    -> decimal128(p, s), date -> date32, time-millis -> int32, time-micros -> time64[ns]
    (Spark's TIME(6); wrapped into the day as Spark does), timestamp-millis/micros ->
    timestamp[us, UTC], local-timestamp-* -> timestamp[us], array -> list<element: V>, map ->
    map<string, V>, record -> struct.

    Nullability: ``permissive`` (the decoder's, and from_avro's in its default PERMISSIVE
    mode, which makes the whole type nullable) has every field nullable; otherwise Spark's
    SchemaConverters flags, as from_avro has them in FAILFAST mode (nullable only where the
    Avro type is null or a union with null; union members always). Recursive schemas have
    no Arrow type (AvroSchemaError)."""
    return _Columns(permissive).arrow(reader, ())


def _kind_type(s: Schema) -> tuple[int, pa.DataType]:
    if isinstance(s, Primitive):
        t, lt = s.type, s.logical
        if t == "null":
            return K_NULL, pa.null()
        if t == "boolean":
            return K_BOOL, pa.bool_()
        if t == "int":
            return K_I32, pa.date32() if lt == "date" else pa.int32()
        if t == "long":
            if lt in ("timestamp-millis", "timestamp-micros"):
                return K_I64, _TS
            if lt in ("local-timestamp-millis", "local-timestamp-micros"):
                return K_I64, pa.timestamp("us")
            if lt == "time-micros":
                return K_I64, pa.time64("ns")
            return K_I64, pa.int64()
        if t == "float":
            return K_F32, pa.float32()
        if t == "double":
            return K_F64, pa.float64()
        if lt == "decimal":
            return K_DEC, _decimal(s.precision, s.scale)
        return K_BIN, pa.string() if t == "string" else pa.binary()
    if isinstance(s, Enum):
        return K_BIN, pa.string()
    if isinstance(s, Fixed):
        if s.logical == "decimal":
            return K_DEC, _decimal(s.precision, s.scale)
        return K_BIN, pa.binary()
    raise AssertionError(s)


def _decimal(p: int, s: int) -> pa.DataType:
    if p > 38:
        raise AvroSchemaError(f"decimal precision {p} is over 38 (Spark's and decimal128's limit)")
    return pa.decimal128(p, s)


@dataclass
class ColumnSpec:
    """One output column (an Arrow node) of a program; children by column index."""

    kind: int
    type: pa.DataType
    children: list[int] = field(default_factory=list)
    width: int = 0               # bytes per value of fixed-width kinds


class _Columns:
    """The output columns of a reader schema, numbered in pre-order (0 is the root)."""

    def __init__(self, permissive: bool = True) -> None:
        self.cols: list[ColumnSpec] = []
        self.permissive = permissive

    def nullable(self, s: Schema) -> bool:
        return self.permissive or _nullable(s)

    def arrow(self, s: Schema, stack: tuple[str, ...]) -> pa.DataType:
        if isinstance(s, Record):
            if s.name in stack:
                raise AvroSchemaError(f"recursive schema {s.name} has no Arrow type")
            return pa.struct([pa.field(f.name, self.arrow(f.type, (*stack, s.name)),
                                       nullable=self.nullable(f.type)) for f in s.fields])
        if isinstance(s, Array):
            # "element": the item's name in Spark's Arrow export
            return pa.list_(pa.field("element", self.arrow(s.items, stack),
                                     nullable=self.nullable(s.items)))
        if isinstance(s, Map):
            return pa.map_(pa.string(), pa.field("value", self.arrow(s.values, stack),
                                                 nullable=self.nullable(s.values)))
        if isinstance(s, UnionSchema):
            shape, rest = _union_shape(s)
            if shape == "null":
                return pa.null()
            if shape == "nullable":
                return self.arrow(rest[0], stack)
            if shape == "long":
                return pa.int64()
            if shape == "double":
                return pa.float64()
            return pa.struct([pa.field(f"member{i}", self.arrow(b, stack))
                              for i, b in enumerate(rest)])
        return _kind_type(s)[1]

    def build(self, s: Schema, t: pa.DataType) -> int:
        """Columns for reader schema s of Arrow type t; returns s's column."""
        k = len(self.cols)
        if isinstance(s, Record):
            spec = ColumnSpec(K_STRUCT, t)
            self.cols.append(spec)
            spec.children = [self.build(f.type, t.field(i).type) for i, f in enumerate(s.fields)]
        elif isinstance(s, (Array, Map)):
            spec = ColumnSpec(K_LIST, t)
            self.cols.append(spec)
            if isinstance(s, Array):
                spec.children = [self.build(s.items, t.value_type)]
            else:
                entries = ColumnSpec(K_STRUCT, pa.struct([t.key_field, t.item_field]))
                e = len(self.cols)
                self.cols.append(entries)
                entries.children = [self.build(Primitive("string"), pa.string()),
                                    self.build(s.values, t.item_type)]
                spec.children = [e]
        elif isinstance(s, UnionSchema):
            shape, rest = _union_shape(s)
            if shape == "nullable":
                return self.build(rest[0], t)
            if shape in ("long", "double"):
                self.cols.append(ColumnSpec(K_I64 if shape == "long" else K_F64, t,
                                            width=8))
            elif shape == "null":
                self.cols.append(ColumnSpec(K_NULL, t))
            else:
                spec = ColumnSpec(K_STRUCT, t)
                self.cols.append(spec)
                spec.children = [self.build(b, t.field(i).type) for i, b in enumerate(rest)]
        else:
            kind, _ = _kind_type(s)
            width = {K_I32: 4, K_I64: 8, K_F32: 4, K_F64: 8, K_DEC: 16}.get(kind, 0)
            self.cols.append(ColumnSpec(kind, t, width=width))
        return k


# --------------------------------------------------------------------------- the program

# opcodes (pyext/avro.pxd OP_*)
(OP_NULLS, OP_STRUCT, OP_NULLTYPE, OP_BOOL, OP_INT, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_BYTES,
 OP_FIXED, OP_DEC_BYTES, OP_DEC_FIXED, OP_ENUM, OP_ARRAY, OP_UNION, OP_DEFAULT, OP_FAIL,
 OP_SKIP_VARINT, OP_SKIP_N, OP_SKIP_BYTES) = range(20)

# INT/LONG/FLOAT targets: the column kind written (b) and a multiplier (c)
_NUM_TARGET = {K_I32: 0, K_I64: 1, K_F32: 2, K_F64: 3}


@dataclass
class Program:
    """A compiled (writer, reader) pair: what pyext/avro.pyx runs per value."""

    code: list[int]              # 4 ints per instruction: op, a, b, c
    aux: list[int]               # tables: null lists, union branches, enum maps
    blob: bytes                  # enum symbols (UTF-8) and encoded defaults
    reasons: list[str]           # row errors the program raises itself (OP_FAIL, enums)
    columns: list[ColumnSpec]    # output columns, 0 the root
    arrow_type: pa.DataType      # the root column's type
    layout: str                  # equal for programs that write the same columns
    writer: Schema
    reader: Schema
    #: what users of the program keep with it (the decoder's pinned copy)
    cache: dict[str, object] = field(default_factory=dict, repr=False, compare=False)


class _Compiler:
    def __init__(self, reader: Schema) -> None:
        self.cols = _Columns()
        self.type = self.cols.arrow(reader, ())
        self.cols.build(reader, self.type)
        self.code: list[int] = []
        self.aux: list[int] = []
        self.blob = bytearray()
        self.reasons: list[str] = []
        # aux opens with a (start, count) pair per column, the list of the columns a null
        # there writes a null to; the same for every program of one reader schema
        ncols = len(self.cols.cols)
        self.aux.extend([0, 0] * ncols)
        for k in range(ncols):
            members = self.nullable_members(k)
            self.aux[2 * k:2 * k + 2] = [len(self.aux), len(members)]
            self.aux.extend(members)
        self.symbols: dict[str, tuple[int, int]] = {}
        self.expanding: list[str] = []

    def nullable_members(self, k: int) -> list[int]:
        # a null at a struct is a null at each child too (struct children are row-aligned)
        out = [k]
        spec = self.cols.cols[k]
        if spec.kind == K_STRUCT:
            for c in spec.children:
                out.extend(self.nullable_members(c))
        return out

    def emit(self, op: int, a: int = 0, b: int = 0, c: int = 0) -> int:
        self.code.extend((op, a, b, c))
        return len(self.code) // 4 - 1

    def patch(self, at: int, slot: int, value: int) -> None:
        self.code[at * 4 + slot] = value

    def pc(self) -> int:
        return len(self.code) // 4

    def reason(self, text: str) -> int:
        self.reasons.append(text)
        return len(self.reasons) - 1

    def symbol(self, s: str) -> tuple[int, int]:
        if s not in self.symbols:
            b = s.encode()
            self.symbols[s] = (len(self.blob), len(b))
            self.blob += b
        return self.symbols[s]

    # --- reading a writer value into a reader column

    def value(self, w: Schema, r: Schema, col: int, path: str) -> None:
        if isinstance(w, UnionSchema):
            at = self.emit(OP_UNION, len(w.branches), len(self.aux))
            table = len(self.aux)
            self.aux.extend([0, 0] * len(w.branches))
            for i, wb in enumerate(w.branches):
                start = self.pc()
                try:
                    self.nonunion(wb, r, col, path)
                except SchemaResolutionError as e:
                    # resolvable pairs need only the branches written; a value of this
                    # branch is a row error (the spec: an error when it is read)
                    del self.code[start * 4:]
                    self.emit(OP_FAIL, self.reason(
                        f"writer union branch {i} ({_describe(wb)}) does not resolve: "
                        f"{e.reason}"))
                self.aux[table + 2 * i] = start
                self.aux[table + 2 * i + 1] = self.pc() - start
            self.patch(at, 3, self.pc())
            if all(self.code[self.aux[table + 2 * i] * 4] == OP_FAIL
                   for i in range(len(w.branches))):
                raise SchemaResolutionError(
                    f"no branch of the writer's {_describe(w)} resolves to {_describe(r)}",
                    path)
            return
        self.nonunion(w, r, col, path)

    def nonunion(self, w: Schema, r: Schema, col: int, path: str) -> None:
        if isinstance(r, UnionSchema):
            j = _pick_branch(w, r)
            if j < 0:
                raise SchemaResolutionError(
                    f"writer {_describe(w)} matches no branch of the reader's {_describe(r)}",
                    path)
            rb = r.branches[j]
            shape, rest = _union_shape(r)
            if isinstance(rb, Primitive) and rb.type == "null":
                self.emit(OP_NULLS, col)
            elif shape == "struct":
                m = rest.index(rb)
                spec = self.cols.cols[col]
                self.emit(OP_STRUCT, col)
                for i, c in enumerate(spec.children):
                    if i != m:
                        self.emit(OP_NULLS, c)
                self.direct(w, rb, spec.children[m], f"{path}.member{m}")
            else:
                self.direct(w, rb, col, path)
            return
        self.direct(w, r, col, path)

    def direct(self, w: Schema, r: Schema, col: int, path: str) -> None:
        spec = self.cols.cols[col]
        fail = SchemaResolutionError(
            f"writer {_describe(w)} does not resolve to reader {_describe(r)}", path)
        if isinstance(r, Primitive):
            if not isinstance(w, Primitive):
                raise fail
            wt, rt = w.type, r.type
            if rt == "null":
                if wt != "null":
                    raise fail
                self.emit(OP_NULLTYPE, col)
            elif rt == "boolean":
                if wt != "boolean":
                    raise fail
                self.emit(OP_BOOL, col)
            elif rt in ("int", "long", "float", "double"):
                order = {"int": 0, "long": 1, "float": 2, "double": 3}
                if wt not in order or order[wt] > order[rt]:
                    raise fail
                target = _NUM_TARGET[spec.kind]
                # a timestamp column holds microseconds, a time column nanoseconds; a merged
                # [long, int] union column (Spark's LongType) holds a branch's value as it is
                mul = 1000 if (r.logical in ("timestamp-millis", "local-timestamp-millis")
                               and pa.types.is_timestamp(spec.type)) or (
                    r.logical == "time-micros" and pa.types.is_time(spec.type)) else 1
                op = {"int": OP_INT, "long": OP_LONG, "float": OP_FLOAT,
                      "double": OP_DOUBLE}[wt]
                self.emit(op, col, target, mul)
            elif rt in ("bytes", "string"):
                if wt not in ("bytes", "string"):
                    raise fail
                if spec.kind == K_DEC:
                    if wt != "bytes":
                        raise fail
                    self.emit(OP_DEC_BYTES, col, r.precision)
                else:
                    self.emit(OP_BYTES, col, 1 if pa.types.is_string(spec.type) else 0)
            else:
                raise fail
            return
        if isinstance(r, Record):
            if not isinstance(w, Record) or not _names_match(w, r):
                raise fail
            if r.name in self.expanding:
                raise SchemaResolutionError(f"recursive schema {r.name} is not supported", path)
            self.expanding.append(r.name)
            self.emit(OP_STRUCT, col)
            taken: set[str] = set()
            for wf in w.fields:
                rf_i = _field_for(wf, r)
                if rf_i < 0:
                    self.skip(wf.type, f"{path}.{wf.name}")
                    continue
                rf = r.fields[rf_i]
                taken.add(rf.name)
                self.value(wf.type, rf.type, spec.children[rf_i], f"{path}.{rf.name}")
            for i, rf in enumerate(r.fields):
                if rf.name in taken:
                    continue
                if not rf.has_default:
                    raise SchemaResolutionError(
                        f"the reader's field {rf.name!r} is not in the writer's schema and "
                        f"has no default", f"{path}.{rf.name}")
                blob = encode_default(rf.type, rf.default)
                at = self.emit(OP_DEFAULT, len(self.blob), len(blob))
                self.blob += blob
                start = self.pc()
                self.value(rf.type, rf.type, spec.children[i], f"{path}.{rf.name}")
                self.patch(at, 3, self.pc() - start)
            self.expanding.pop()
            return
        if isinstance(r, Enum):
            if not isinstance(w, Enum) or not _names_match(w, r):
                raise fail
            table = len(self.aux)
            for s in w.symbols:
                if s in r.symbols:
                    off, n = self.symbol(s)
                elif r.default is not None:
                    off, n = self.symbol(r.default)
                else:
                    off, n = -1, self.reason(
                        f"enum symbol {s!r} of {w.name} is not in the reader's {r.name} "
                        f"(which has no default)")
                self.aux.extend((off, n))
            self.emit(OP_ENUM, col, table, len(w.symbols))
            return
        if isinstance(r, Fixed):
            if not isinstance(w, Fixed) or not _names_match(w, r) or w.size != r.size:
                raise fail
            if spec.kind == K_DEC:
                self.emit(OP_DEC_FIXED, col, r.size, r.precision)
            else:
                self.emit(OP_FIXED, col, r.size)
            return
        if isinstance(r, Array):
            if not isinstance(w, Array):
                raise fail
            at = self.emit(OP_ARRAY, col, 0, _min_size(w.items))
            start = self.pc()
            self.value(w.items, r.items, spec.children[0], f"{path}[]")
            self.patch(at, 2, self.pc() - start)
            return
        if isinstance(r, Map):
            if not isinstance(w, Map):
                raise fail
            entries = self.cols.cols[spec.children[0]]
            at = self.emit(OP_ARRAY, col, 0, 1 + _min_size(w.values))
            start = self.pc()
            self.emit(OP_STRUCT, spec.children[0])
            self.emit(OP_BYTES, entries.children[0], 1)
            self.value(w.values, r.values, entries.children[1], f"{path}{{}}")
            self.patch(at, 2, self.pc() - start)
            return
        raise fail

    # --- skipping a writer value no reader field takes

    def skip(self, w: Schema, path: str) -> None:
        if isinstance(w, Primitive):
            t = w.type
            if t in ("int", "long"):
                self.emit(OP_SKIP_VARINT)
            elif t in ("boolean", "float", "double"):
                self.emit(OP_SKIP_N, {"boolean": 1, "float": 4, "double": 8}[t])
            elif t in ("bytes", "string"):
                self.emit(OP_SKIP_BYTES)
        elif isinstance(w, Enum):
            self.emit(OP_SKIP_VARINT)
        elif isinstance(w, Fixed):
            self.emit(OP_SKIP_N, w.size)
        elif isinstance(w, Record):
            if w.name in self.expanding:
                raise SchemaResolutionError(f"recursive schema {w.name} is not supported", path)
            self.expanding.append(w.name)
            for f in w.fields:
                self.skip(f.type, f"{path}.{f.name}")
            self.expanding.pop()
        elif isinstance(w, (Array, Map)):
            inner = w.items if isinstance(w, Array) else w.values
            at = self.emit(OP_ARRAY, -1, 0, _min_size(inner) + (isinstance(w, Map)))
            start = self.pc()
            if isinstance(w, Map):
                self.emit(OP_SKIP_BYTES)
            self.skip(inner, path + "[]")
            self.patch(at, 2, self.pc() - start)
        else:
            at = self.emit(OP_UNION, len(w.branches), len(self.aux))
            table = len(self.aux)
            self.aux.extend([0, 0] * len(w.branches))
            for i, wb in enumerate(w.branches):
                start = self.pc()
                self.skip(wb, path)
                self.aux[table + 2 * i] = start
                self.aux[table + 2 * i + 1] = self.pc() - start
            self.patch(at, 3, self.pc())


def _min_size(s: Schema) -> int:
    """The fewest bytes a value of s takes (bounds an array block's count by the bytes left)."""
    if isinstance(s, Primitive):
        return {"null": 0, "float": 4, "double": 8}.get(s.type, 1)
    if isinstance(s, Fixed):
        return s.size
    if isinstance(s, Record):
        return sum(_min_size(f.type) for f in s.fields) if s.fields else 0
    return 1


def _names_match(w: Record | Enum | Fixed, r: Record | Enum | Fixed) -> bool:
    return (w.name == r.name or _short(w.name) == _short(r.name) or w.name in r.aliases
            or _short(w.name) in {_short(a) for a in r.aliases})


def _field_for(wf: Field, r: Record) -> int:
    for i, rf in enumerate(r.fields):
        if rf.name == wf.name:
            return i
    for i, rf in enumerate(r.fields):
        if wf.name in rf.aliases:
            return i
    return -1


def _pick_branch(w: Schema, r: UnionSchema) -> int:
    """The reader branch a writer (non-union) schema goes to: the first of the same type
    (same name for named types), else the first it promotes to."""
    for j, rb in enumerate(r.branches):
        if _same_kind(w, rb):
            return j
    for j, rb in enumerate(r.branches):
        if _promotes(w, rb):
            return j
    return -1


def _same_kind(w: Schema, r: Schema) -> bool:
    if isinstance(w, Primitive) and isinstance(r, Primitive):
        return w.type == r.type
    if isinstance(w, (Record, Enum, Fixed)) and type(w) is type(r):
        return _names_match(w, r)
    return isinstance(w, (Array, Map)) and type(w) is type(r)


def _promotes(w: Schema, r: Schema) -> bool:
    if not (isinstance(w, Primitive) and isinstance(r, Primitive)):
        return False
    return (w.type, r.type) in {("int", "long"), ("int", "float"), ("int", "double"),
                                ("long", "float"), ("long", "double"), ("float", "double"),
                                ("string", "bytes"), ("bytes", "string")}


def compile_decoder(writer: Schema, reader: Schema | None = None) -> Program:
    """The program that decodes values written with ``writer`` into ``reader``'s Arrow type
    (``reader`` defaults to the writer). SchemaResolutionError if the pair does not resolve."""
    if reader is None:
        reader = writer
    c = _Compiler(reader)
    c.value(writer, reader, 0, "value")
    layout = str(c.type) + "|" + ",".join(str(s.kind) for s in c.cols.cols)
    return Program(c.code, c.aux, bytes(c.blob), c.reasons, c.cols.cols, c.type,
                   layout, writer, reader)


def resolve(writer: Schema, reader: Schema) -> None:
    """Check that ``writer`` resolves against ``reader`` (SchemaResolutionError if not)."""
    compile_decoder(writer, reader)
