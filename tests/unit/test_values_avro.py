"""pyconsumer.values.avro against fastavro: hypothesis-made schemas and records (every type,
nested, writer/reader pairs evolved per the Avro spec) written by fastavro's
schemaless_writer, decoded by the compiled programs, and held equal, as Arrow, to what
fastavro's schemaless_reader reads with the reader schema."""
from __future__ import annotations

import datetime as dt
import io
import random
import struct
import uuid
from decimal import Context, Decimal
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

fastavro = pytest.importorskip("fastavro")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pyconsumer.values.avro import (  # noqa: E402
    Array, Enum, Fixed, Map, Primitive, Record, Schema, UnionSchema, _union_shape, arrow_type,
    parse_schema,
)
from pyconsumer.values.avro_decode import decode_avro  # noqa: E402
from pyconsumer import records  # noqa: E402

Json = Any


@pytest.fixture(scope="module")
def avro_mod() -> ModuleType:
    """The compiled decoder every caller uses (pyconsumer._records through records)."""
    return records


# --------------------------------------------------------------------------- schemas

LEAVES: list[Json] = [
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
    {"type": "int", "logicalType": "date"},
    {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"},
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "long", "logicalType": "local-timestamp-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"},
    {"type": "string", "logicalType": "uuid"},
    {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
    {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 10},
    {"type": "fixed", "name": "_", "size": 16, "logicalType": "decimal", "precision": 30,
     "scale": 4},
]

leaf = st.sampled_from(LEAVES) | st.builds(
    lambda n: {"type": "enum", "name": "_", "symbols": ["A", "B", "C", "D"][:n]},
    st.integers(1, 4)) | st.builds(
    lambda n: {"type": "fixed", "name": "_", "size": n}, st.integers(0, 6))


def group(s: Json) -> str:
    """Which Python type fastavro reads a value of s as (a union keeps one per group, so the
    branch of a read value is known)."""
    t = s if isinstance(s, str) else s["type"] if isinstance(s, dict) else "union"
    if isinstance(s, dict) and s.get("logicalType"):
        return "logical"      # fastavro's writer takes ints and strings for these: kept out
    return {"int": "int", "long": "int", "float": "float", "double": "float", "bytes": "bytes",
            "fixed": "bytes", "string": "str", "enum": "str", "record": "dict",
            "map": "dict"}.get(t, t)


def base_type(s: Json) -> str:
    """The Avro type of s (a union may hold each once, named types by name)."""
    if isinstance(s, dict):
        return str(s["type"]) + ("" if s["type"] in ("array", "map") else str(id(s)))
    return str(s)


def _record(fields: list[tuple[Json, bool]]) -> Json:
    out = []
    for i, (t, with_default) in enumerate(fields):
        f: dict[str, Any] = {"name": f"f{i}", "type": t}
        d = default_for(t)
        if with_default and d is not _NO:
            f["default"] = d
        out.append(f)
    return {"type": "record", "name": "_", "fields": out}


_NO = object()


def default_for(t: Json) -> Any:
    if isinstance(t, list):
        return None if t[0] == "null" else _NO
    if t in ("int", "long"):
        return 7
    if t == "string":
        return "dflt"
    if t == "boolean":
        return True
    if t == "double":
        return 2.5
    if isinstance(t, dict) and t.get("logicalType"):
        return _NO
    if isinstance(t, dict) and t["type"] == "enum":
        return t["symbols"][-1]
    if isinstance(t, dict) and t["type"] == "array":
        return []
    if isinstance(t, dict) and t["type"] == "map":
        return {}
    return _NO


def _extend(kids: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    plain = kids.filter(lambda k: not isinstance(k, list))
    return st.one_of(
        st.builds(lambda k: {"type": "array", "items": k}, kids),
        st.builds(lambda k: {"type": "map", "values": k}, kids),
        st.builds(_record, st.lists(st.tuples(kids, st.booleans()), min_size=0, max_size=5)),
        plain.filter(lambda k: k != "null").map(lambda k: ["null", k]),
        st.tuples(st.lists(plain.filter(lambda k: k != "null" and group(k) != "logical"),
                           min_size=2, max_size=3,
                           unique_by=(group, base_type)), st.booleans()).map(
            lambda t: (["null"] if t[1] else []) + t[0]),
    )


def name_types(s: Json, counter: list[int]) -> Json:
    """Unique names for the named types (generated as "_")."""
    if isinstance(s, list):
        return [name_types(b, counter) for b in s]
    if not isinstance(s, dict):
        return s
    s = dict(s)
    if s.get("name") == "_":
        counter[0] += 1
        s["name"] = f"T{counter[0]}"
    if s["type"] == "record":
        s["fields"] = [dict(f, type=name_types(f["type"], counter)) for f in s["fields"]]
    elif s["type"] == "array":
        s["items"] = name_types(s["items"], counter)
    elif s["type"] == "map":
        s["values"] = name_types(s["values"], counter)
    return s


schemas = st.recursive(leaf, _extend, max_leaves=10).map(
    lambda s: name_types(_record([(s, False), ("long", False)]), [0]))


# --------------------------------------------------------------------------- values

DAY0 = -719162          # 0001-01-01
DAY_MAX = 2932896       # 9999-12-31
MS_MIN, MS_MAX = -62135596800000, 253402300799999


def values_for(s: Json) -> st.SearchStrategy[Any]:
    if isinstance(s, list):
        return st.one_of([values_for(b) for b in s])
    t = s if isinstance(s, str) else s["type"]
    lt = s.get("logicalType") if isinstance(s, dict) else None
    small = isinstance(s, dict) and s.get("x-small")
    if lt == "date":
        return st.integers(DAY0, DAY_MAX)
    if lt == "time-millis":
        return st.integers(0, 86_399_999)
    if lt == "time-micros":
        return st.integers(0, 86_399_999_999)
    if lt in ("timestamp-millis", "local-timestamp-millis"):
        return st.integers(MS_MIN, MS_MAX)
    if lt in ("timestamp-micros", "local-timestamp-micros"):
        return st.integers(MS_MIN * 1000, MS_MAX * 1000)
    if lt == "uuid":
        return st.uuids().map(str)
    if lt == "decimal":
        p, sc = s["precision"], s["scale"]
        return st.integers(-(10 ** p) + 1, 10 ** p - 1).map(
            lambda u: Decimal(u).scaleb(-sc, context=Context(prec=60)))
    if t == "null":
        return st.none()
    if t == "boolean":
        return st.booleans()
    if t == "int":
        return st.integers(-(2 ** 31), 2 ** 31 - 1)
    if t == "long":
        b = 2 ** 53 if small else 2 ** 63
        return st.integers(-b, b - 1)
    if t == "float":
        return st.floats(width=32, allow_nan=False)
    if t == "double":
        return st.floats(allow_nan=False)
    if t == "bytes":
        if s == "bytes" or not s.get("x-utf8"):
            return st.binary(max_size=20)
        return st.text(max_size=10).map(lambda x: x.encode())
    if t == "string":
        return st.text(max_size=10)
    if t == "enum":
        return st.sampled_from(s["symbols"])
    if t == "fixed":
        return st.binary(min_size=s["size"], max_size=s["size"])
    if t == "array":
        return st.lists(values_for(s["items"]), max_size=4)
    if t == "map":
        return st.dictionaries(st.text(max_size=5), values_for(s["values"]), max_size=4)
    if t == "record":
        return st.fixed_dictionaries({f["name"]: values_for(f["type"]) for f in s["fields"]})
    raise AssertionError(s)


# --------------------------------------------------------------------------- expected

def _branch(v: Any, branches: list[Schema]) -> int:
    """The branch of a reader union fastavro's value v came from (one per group)."""
    for i, b in enumerate(branches):
        if _fits(v, b):
            return i
    raise AssertionError((v, branches))


def _fits(v: Any, b: Schema) -> bool:
    if isinstance(b, Primitive):
        lt = b.logical
        if lt == "date":
            return type(v) is dt.date
        if lt in ("time-millis", "time-micros"):
            return isinstance(v, dt.time)
        if lt and "timestamp" in lt:
            return isinstance(v, dt.datetime) and ((v.tzinfo is None) == lt.startswith("local"))
        if lt == "decimal":
            return isinstance(v, Decimal)
        if lt == "uuid":
            return isinstance(v, uuid.UUID)
        return {"null": v is None, "boolean": isinstance(v, bool),
                "int": isinstance(v, int) and not isinstance(v, bool),
                "long": isinstance(v, int) and not isinstance(v, bool),
                "float": isinstance(v, float), "double": isinstance(v, float),
                "bytes": isinstance(v, bytes), "string": isinstance(v, str)}[b.type]
    if isinstance(b, Enum):
        return isinstance(v, str)
    if isinstance(b, Fixed):
        return isinstance(v, Decimal) if b.logical == "decimal" else isinstance(v, bytes)
    if isinstance(b, (Record, Map)):
        return isinstance(v, dict)
    if isinstance(b, Array):
        return isinstance(v, list)
    return False


def expected(v: Any, s: Schema) -> Any:
    """fastavro's value of reader schema s as the Python value of arrow_type(s)."""
    if isinstance(s, UnionSchema):
        shape, rest = _union_shape(s)
        if v is None or shape == "null":
            return None
        if shape == "nullable":
            return expected(v, rest[0])
        if shape in ("long", "double"):
            return v
        i = _branch(v, rest)
        return {f"member{j}": expected(v, b) if j == i else None for j, b in enumerate(rest)}
    if isinstance(s, Record):
        return {f.name: expected(v[f.name], f.type) for f in s.fields}
    if isinstance(s, Array):
        return [expected(x, s.items) for x in v]
    if isinstance(s, Map):
        return [(k, expected(x, s.values)) for k, x in v.items()]
    if isinstance(s, Primitive):
        if s.logical == "time-millis":
            return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        if s.logical == "uuid":
            return str(v)
        if s.type == "float" and isinstance(v, int):
            return struct.unpack("<f", struct.pack("<f", float(v)))[0]
        if s.type == "double" and isinstance(v, int):
            return float(v)
    return v


def fa_write(schema: Json, value: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), value)
    return buf.getvalue()


def fa_read(body: bytes, writer: Json, reader: Json) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(writer),
                                      fastavro.parse_schema(reader))


def check(avro_mod: ModuleType, writer: Json, reader: Json, values: list[Any]) -> None:
    bodies = [fa_write(writer, v) for v in values]
    want = [expected(fa_read(b, writer, reader), parse_schema(reader)) for b in bodies]
    got = decode_avro(bodies, framing="none", writer=writer, reader=reader, backend=avro_mod)
    got.array.validate(full=True)
    assert got.errors == {}
    want_arr = pa.array(want, arrow_type(parse_schema(reader)))
    assert got.array.type == want_arr.type
    assert got.array.to_pylist() == want_arr.to_pylist()
    assert got.array.equals(want_arr)


# --------------------------------------------------------------------------- evolution

_PROMOTE = {"long": ["int"], "float": ["int", "long"], "double": ["int", "long", "float"],
            "bytes": ["string"], "string": ["bytes"]}


def evolve(reader: Json, rnd: random.Random, counter: list[int]) -> Json:
    """A writer schema that resolves against reader: fields dropped (the reader's default
    fills them) or added (skipped), primitives promoted, enum symbols dropped, nullable
    unions written as their type."""
    if isinstance(reader, str):
        if reader in _PROMOTE and rnd.random() < 0.4:
            w: Json = rnd.choice(_PROMOTE[reader])
            if w == "bytes":
                return {"type": "bytes", "x-utf8": True}
            if w == "long" and reader == "float":
                return {"type": "long", "x-small": True}
            return w
        return reader
    if isinstance(reader, list):
        if reader[0] == "null" and len(reader) == 2 and rnd.random() < 0.3:
            return evolve(reader[1], rnd, counter)
        if len(reader) > 2 and rnd.random() < 0.4:
            # a writer union of some of the reader's branches, in another order
            some = rnd.sample(reader, rnd.randint(2, len(reader)))
            return [b if isinstance(b, str) else evolve(b, rnd, counter) for b in some]
        # a primitive branch is kept: promoting it could repeat another branch ([int, float]
        # -> [int, int], not a union); promotion into unions has its own test below
        return [b if isinstance(b, str) else evolve(b, rnd, counter) for b in reader]
    t = reader["type"]
    if t == "record":
        fields = []
        for f in reader["fields"]:
            if "default" in f and rnd.random() < 0.4:
                continue
            fields.append({"name": f["name"], "type": evolve(f["type"], rnd, counter)})
            if rnd.random() < 0.2:
                counter[0] += 1
                extra = rnd.choice(["int", "string", "double", "boolean",
                                    {"type": "array", "items": "long"},
                                    {"type": "map", "values": ["null", "string"]},
                                    {"type": "record", "name": f"X{counter[0]}",
                                     "fields": [{"name": "a", "type": "bytes"}]}])
                fields.append({"name": f"extra{counter[0]}", "type": extra})
        rnd.shuffle(fields)
        return dict(reader, fields=fields)
    if t == "enum" and len(reader["symbols"]) > 1 and rnd.random() < 0.4:
        return dict(reader, symbols=reader["symbols"][1:])
    if t == "array":
        return dict(reader, items=evolve(reader["items"], rnd, counter))
    if t == "map":
        return dict(reader, values=evolve(reader["values"], rnd, counter))
    return reader


# --------------------------------------------------------------------------- tests

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_same_schema_matches_fastavro(avro_mod: ModuleType, data: st.DataObject) -> None:
    schema = data.draw(schemas)
    values = data.draw(st.lists(values_for(schema), min_size=1, max_size=6))
    check(avro_mod, schema, schema, values)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_evolved_pairs_match_fastavro(avro_mod: ModuleType, data: st.DataObject) -> None:
    reader = data.draw(schemas)
    writer = evolve(reader, random.Random(data.draw(st.integers(0, 2 ** 32))), [0])
    values = data.draw(st.lists(values_for(writer), min_size=1, max_size=6))
    check(avro_mod, writer, reader, values)


REC = {"type": "record", "name": "R", "namespace": "ns", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "score", "type": "double"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "int"}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
    {"name": "opt", "type": ["null", "string"], "default": None},
    {"name": "either", "type": ["int", "string", {"type": "record", "name": "Sub", "fields": [
        {"name": "x", "type": "float"}]}]},
]}


def test_arrow_type_is_sparks_mapping() -> None:
    # what Spark's from_avro gives (its Arrow export), PERMISSIVE: every field nullable
    assert arrow_type(parse_schema(REC)) == pa.struct([
        ("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()),
        ("tags", pa.list_(pa.field("element", pa.string()))),
        ("attrs", pa.map_(pa.string(), pa.int32())),
        ("kind", pa.string()), ("opt", pa.string()),
        ("either", pa.struct([("member0", pa.int32()), ("member1", pa.string()),
                              ("member2", pa.struct([("x", pa.float32())]))])),
    ])

    def req(name: str, typ: pa.DataType) -> pa.Field:
        return pa.field(name, typ, nullable=False)

    # FAILFAST: nullable only where the Avro type is a union with null (SchemaConverters)
    assert arrow_type(parse_schema(REC), permissive=False) == pa.struct([
        req("id", pa.int64()), req("name", pa.string()), req("score", pa.float64()),
        req("tags", pa.list_(req("element", pa.string()))),
        req("attrs", pa.map_(pa.string(), req("value", pa.int32()))),
        req("kind", pa.string()), pa.field("opt", pa.string()),
        req("either", pa.struct([("member0", pa.int32()), ("member1", pa.string()),
                                 ("member2", pa.struct([req("x", pa.float32())]))])),
    ])
    assert arrow_type(parse_schema({"type": "array", "items": ["null", "int"]}),
                      permissive=False) == pa.list_(pa.field("element", pa.int32()))
    one = {str(lt if isinstance(lt, str) else lt.get("logicalType") or lt["type"]):
           arrow_type(parse_schema(lt)) for lt in LEAVES}
    assert one == {
        "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
        "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(),
        "string": pa.string(), "date": pa.date32(), "time-millis": pa.int32(),
        "time-micros": pa.time64("ns"), "timestamp-millis": pa.timestamp("us", "UTC"),
        "timestamp-micros": pa.timestamp("us", "UTC"),
        "local-timestamp-millis": pa.timestamp("us"),
        "local-timestamp-micros": pa.timestamp("us"), "uuid": pa.string(),
        "decimal": pa.decimal128(30, 4),      # (the last decimal of LEAVES)
    }
    assert arrow_type(parse_schema(["int", "long"])) == pa.int64()
    assert arrow_type(parse_schema(["null", "float", "double"])) == pa.float64()
    assert arrow_type(parse_schema(["null"])) == pa.null()
    assert arrow_type(parse_schema({"type": "fixed", "name": "F", "size": 3})) == pa.binary()


def test_record_of_every_kind(avro_mod: ModuleType) -> None:
    values = [
        {"id": 1, "name": "a", "score": 0.5, "tags": ["x", "y"], "attrs": {"k": 1},
         "kind": "B", "opt": "o", "either": 5},
        {"id": -(2 ** 63), "name": "", "score": -1e300, "tags": [], "attrs": {},
         "kind": "C", "opt": None, "either": "s"},
        {"id": 2 ** 63 - 1, "name": "é" * 300, "score": 0.0, "tags": ["z"] * 50,
         "attrs": {str(i): i for i in range(40)}, "kind": "A", "either": {"x": 1.5}},
    ]
    check(avro_mod, REC, REC, values)


def test_merged_unions_and_promotion_into_them(avro_mod: ModuleType) -> None:
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "n", "type": ["null", "int", "long"]},
        {"name": "f", "type": ["float", "double"]}]}
    check(avro_mod, reader, reader, [{"n": 3, "f": 1.5}, {"n": None, "f": 2.25},
                                    {"n": 2 ** 40, "f": 1e300}])
    writer = {"type": "record", "name": "R", "fields": [
        {"name": "n", "type": "int"}, {"name": "f", "type": "float"}]}
    check(avro_mod, writer, reader, [{"n": -4, "f": 0.25}])


def test_defaults_of_every_kind(avro_mod: ModuleType) -> None:
    writer = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "long"},
        {"name": "b", "type": "string", "default": "héllo"},
        {"name": "c", "type": "bytes", "default": "a\u0000"},
        {"name": "d", "type": {"type": "array", "items": "int"}, "default": [1, 2]},
        {"name": "e", "type": {"type": "map", "values": "string"}, "default": {"k": "v"}},
        {"name": "f", "type": ["null", "int"], "default": None},
        {"name": "g", "type": ["int", "null"], "default": 4},
        {"name": "h", "type": {"type": "record", "name": "S", "fields": [
            {"name": "x", "type": "double"}, {"name": "y", "type": "boolean"}]},
         "default": {"x": 1.5, "y": True}},
        {"name": "i", "type": {"type": "enum", "name": "E", "symbols": ["P", "Q"]},
         "default": "Q"},
        {"name": "j", "type": {"type": "fixed", "name": "F", "size": 2}, "default": "ab"},
        {"name": "k", "type": "float", "default": 0.5},
    ]}
    check(avro_mod, writer, reader, [{"a": 1}, {"a": 2}])


def test_bytes_default_is_latin1_per_the_spec(avro_mod: ModuleType) -> None:
    # code points 0-255 are the bytes (the spec, Java, so Spark); fastavro takes UTF-8
    writer = {"type": "record", "name": "R", "fields": []}
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "c", "type": "bytes", "default": "\u00ff\u0000"}]}
    got = decode_avro([b""], framing="none", writer=writer, reader=reader, backend=avro_mod)
    assert got.array.to_pylist() == [{"c": b"\xff\x00"}]
    assert got.errors == {}


def test_enum_symbol_unknown_to_the_reader(avro_mod: ModuleType) -> None:
    writer = {"type": "enum", "name": "E", "symbols": ["A", "B", "Z"]}
    with_default = {"type": "enum", "name": "E", "symbols": ["A", "B", "D"], "default": "D"}
    check(avro_mod, writer, with_default, ["A", "Z", "B"])
    no_default = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
    got = decode_avro([fa_write(writer, "A"), fa_write(writer, "Z")], framing="none",
                      writer=writer, reader=no_default, backend=avro_mod)
    assert got.array.to_pylist() == ["A", None]
    assert got.errors == {1: "enum symbol 'Z' of E is not in the reader's E (which has no "
                             "default) at byte 0"}


def test_writer_union_branch_the_reader_cannot_take(avro_mod: ModuleType) -> None:
    writer = ["null", "string", "int"]
    reader = ["null", "string"]
    got = decode_avro([fa_write(writer, "s"), fa_write(writer, 4), fa_write(writer, None)],
                      framing="none", writer=writer, reader=reader, backend=avro_mod)
    assert got.array.to_pylist() == ["s", None, None]
    assert got.errors == {1: "writer union branch 2 (int) does not resolve: writer int "
                             "matches no branch of the reader's union [null, string] at byte 1"}


def test_large_batches_grow_every_buffer(avro_mod: ModuleType) -> None:
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "s", "type": "string"},
        {"name": "l", "type": {"type": "array", "items": {"type": "map", "values": "bytes"}}}]}
    rnd = random.Random(7)
    values = [{"s": "x" * rnd.randrange(0, 3000),
               "l": [{str(j): bytes([j]) * rnd.randrange(0, 40) for j in range(rnd.randrange(4))}
                     for _ in range(rnd.randrange(6))]} for _ in range(3000)]
    check(avro_mod, schema, schema, values)
