"""Avro value decoding: Confluent framing (id, GUID, per-row header ids), the row errors of
bad values (each with its reason), schema resolution errors, and the fuzz: truncated and
mutated bodies give a row error or fastavro's value, never a crash or a wrong row."""
from __future__ import annotations

import io
import json
import random
import struct
import uuid
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

fastavro = pytest.importorskip("fastavro")

from pyconsumer.values.avro import (  # noqa: E402
    AvroSchemaError, Program, SchemaResolutionError, arrow_type, compile_decoder, parse_schema,
    resolve,
)
from pyconsumer.values.avro_decode import (  # noqa: E402
    SchemaId, UnknownSchemaError, WriterSchemas, decode_avro, schema_id_from_header,
)
from pyconsumer import records  # noqa: E402


@pytest.fixture(scope="module")
def avro_mod() -> ModuleType:
    """The compiled decoder every caller uses (pyconsumer._records through records)."""
    return records


V1 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"}]}
V2 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "age", "type": "int", "default": -1}]}
GUID = uuid.UUID("0123456789abcdef0123456789abcdef")


def body(schema: Any, value: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), value)
    return buf.getvalue()


def framed(schema_id: int, schema: Any, value: Any) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + body(schema, value)


def test_several_writer_ids_decode_into_one_reader(avro_mod: ModuleType) -> None:
    source = WriterSchemas({1: V1, 2: V2, GUID: V2}, V2)
    values = [
        framed(1, V1, {"id": 1, "name": "a"}),
        framed(2, V2, {"id": 2, "name": "b", "email": "b@x", "age": 30}),
        None,                                                  # a tombstone
        b"\x01" + GUID.bytes + body(V2, {"id": 3, "name": "c", "email": None, "age": 4}),
        framed(1, V1, {"id": 5, "name": "é"}),
    ]
    got = decode_avro(values, reader=V2, source=source, backend=avro_mod)
    assert got.errors == {}
    assert got.array.type == arrow_type(parse_schema(V2))
    assert got.array.to_pylist() == [
        {"id": 1, "name": "a", "email": None, "age": -1},
        {"id": 2, "name": "b", "email": "b@x", "age": 30},
        None,
        {"id": 3, "name": "c", "email": None, "age": 4},
        {"id": 5, "name": "é", "email": None, "age": -1},
    ]


class CountingSource:
    def __init__(self, inner: WriterSchemas) -> None:
        self.inner = inner
        self.asked: list[SchemaId] = []

    def program_for(self, schema_id: SchemaId) -> Program:
        self.asked.append(schema_id)
        return self.inner.program_for(schema_id)


def test_framing_errors_are_row_errors(avro_mod: ModuleType) -> None:
    source = CountingSource(WriterSchemas({1: V1}, V1))
    good = framed(1, V1, {"id": 7, "name": "ok"})
    values = [good, b"", b"\x00\x00\x01", b"\x07" + good[1:], framed(42, V1, {"id": 1, "name": ""}),
              b"\x01" + bytes(10), b"\x01" + GUID.bytes + good[5:], good + b"\x00\x00",
              good[:-1], b"\x00\x00\x00\x00\x01"]
    got = decode_avro(values, reader=V1, source=source, backend=avro_mod)
    assert got.array.to_pylist() == [{"id": 7, "name": "ok"}] + [None] * 9
    assert got.errors == {
        1: "value of 0 bytes is shorter than its Confluent header",
        2: "value of 3 bytes is shorter than its Confluent header",
        3: "bad magic byte 0x07 (Confluent framing has 0x00 or 0x01)",
        4: "unknown schema id 42",
        5: "value of 11 bytes is shorter than its Confluent header",
        6: f"unknown schema GUID {GUID}",
        7: "2 trailing bytes after the value at byte 9",
        8: "truncated value at byte 7",
        9: "truncated value at byte 5",
    }
    assert sorted(source.asked, key=str) == sorted([1, 42, GUID], key=str)   # once each


def test_a_source_that_fails_is_not_bad_data(avro_mod: ModuleType) -> None:
    class Down:
        def program_for(self, schema_id: SchemaId) -> Program:
            raise ConnectionError("registry down")

    with pytest.raises(ConnectionError, match="registry down"):
        decode_avro([framed(1, V1, {"id": 1, "name": ""})], reader=V1, source=Down(),
                    backend=avro_mod)


def test_header_ids_replace_the_prefix(avro_mod: ModuleType) -> None:
    source = CountingSource(WriterSchemas({1: V1, 2: V2, GUID: V1}, V2))
    values = [body(V1, {"id": 1, "name": "h"}), framed(2, V2, {"id": 2, "name": "p",
                                                              "email": None, "age": 1}),
              body(V1, {"id": 3, "name": "g"}), None]
    ids: list[SchemaId | None] = [1, None, GUID, 1]
    got = decode_avro(values, reader=V2, source=source, schema_ids=ids, backend=avro_mod)
    assert got.errors == {}
    assert got.array.to_pylist() == [
        {"id": 1, "name": "h", "email": None, "age": -1},
        {"id": 2, "name": "p", "email": None, "age": 1},
        {"id": 3, "name": "g", "email": None, "age": -1},
        None,
    ]
    # the bytes of the header rows' bodies are no prefix: no id is looked up from them
    assert sorted(source.asked, key=str) == sorted([1, 2, GUID], key=str)
    got2 = decode_avro(values[:3], reader=V2, source=WriterSchemas({1: V1, 2: V2}, V2),
                       schema_ids=pa.array([1, None, 1], pa.int32()), backend=avro_mod)
    assert got2.errors == {}
    assert [r["name"] for r in got2.array.to_pylist()] == ["h", "p", "g"]


def test_schema_id_from_header() -> None:
    assert schema_id_from_header(b"\x00\x00\x00\x01\x00") == 256
    assert schema_id_from_header(b"\x01" + GUID.bytes) == GUID
    with pytest.raises(ValueError, match="0x00 \\+ 4 bytes"):
        schema_id_from_header(b"\x02\x00")


def test_unframed_values_and_inputs(avro_mod: ModuleType) -> None:
    rows = [{"id": i, "name": str(i)} for i in range(5)]
    bodies = [body(V1, r) for r in rows]
    for values in (bodies, pa.array(bodies, pa.binary()), pa.array(bodies, pa.large_binary()),
                   pa.chunked_array([bodies[:2], bodies[2:]], pa.binary()),
                   pa.array([b"x"] + bodies, pa.binary()).slice(1)):
        got = decode_avro(values, framing="none", writer=V1, backend=avro_mod)
        assert got.errors == {}
        assert got.array.to_pylist() == rows
    empty = decode_avro([], framing="none", writer=V1, backend=avro_mod)
    assert len(empty.array) == 0 and empty.array.type == arrow_type(parse_schema(V1))
    # empty values (no data buffer at all) of a schema that takes no bytes
    nulls = decode_avro(pa.array([b"", b""], pa.binary()), framing="none", writer="null",
                        backend=avro_mod)
    assert nulls.errors == {} and nulls.array.type == pa.null() and len(nulls.array) == 2


def zz(n: int) -> bytes:
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


@pytest.mark.parametrize(("schema", "data", "reason"), [
    ("int", b"\x80\x80\x80\x80\x80\x01", "bad varint (over 10 bytes) at byte 0"),
    ("long", b"\xff" * 10 + b"\x01", "bad varint (over 10 bytes) at byte 0"),
    ("long", b"\xff" * 9 + b"\x02", "varint out of the 64-bit range at byte 0"),
    ("int", b"\xff\xff\xff\xff\x7f", "varint out of the 32-bit range at byte 0"),
    ("long", b"\x80", "truncated value at byte 0"),
    ("string", zz(2) + b"\xff\xfe", "invalid UTF-8 in a string at byte 0"),
    ("string", zz(-1), "negative length at byte 1"),
    ("bytes", zz(5) + b"ab", "truncated value at byte 1"),
    ("boolean", b"\x02", "boolean byte 2 is neither 0 nor 1 at byte 0"),
    (["null", "int"], zz(2), "union index 2 out of range (2 branches) at byte 0"),
    (["null", "int"], zz(-1), "union index -1 out of range (2 branches) at byte 0"),
    ({"type": "enum", "name": "E", "symbols": ["A"]}, zz(1),
     "enum index 1 out of range (1 symbols) at byte 0"),
    ({"type": "array", "items": "long"}, zz(1000) + b"\x00",
     "array or map block of 1000 items cannot fit the 1 bytes left at byte 0"),
    ({"type": "array", "items": "long"}, zz(-2) + zz(-5) + b"\x00\x00\x00",
     "negative block size -5 at byte 0"),
    ({"type": "array", "items": "null"}, zz(2 ** 40) + b"\x00",
     "over 1048576 items that take no bytes in one value at byte 0"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0}, zz(2) + b"\x03\xe8",
     "decimal of 2 bytes exceeds its precision at byte 0"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0},
     zz(17) + b"\x01" + bytes(16), "decimal of 17 bytes needs over 128 bits at byte 0"),
    ({"type": "long", "logicalType": "timestamp-millis"}, zz(2 ** 62),
     f"timestamp {2 ** 62} ms out of range in microseconds at byte 0"),
    ("null", b"\x00", "1 trailing bytes after the value at byte 0"),
])
def test_bad_values_are_row_errors(avro_mod: ModuleType, schema: Any, data: bytes,
                                   reason: str) -> None:
    got = decode_avro([data, None], framing="none", writer=schema, backend=avro_mod)
    assert got.errors == {0: reason}
    assert got.array.to_pylist() == [None, None]


def test_a_bad_row_leaves_no_trace_in_the_good_ones(avro_mod: ModuleType) -> None:
    # the bad row fails deep in a nested list after writing part of it: rolled back
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "s", "type": "string"},
        {"name": "l", "type": {"type": "array", "items": {"type": "map", "values": "string"}}}]}
    good = {"s": "a", "l": [{"k": "v"}, {}]}
    bad = body(schema, {"s": "zz", "l": [{"k": "v", "k2": "w"}]})[:-3]
    got = decode_avro([body(schema, good), bad, body(schema, good)], framing="none",
                      writer=schema, backend=avro_mod)
    got.array.validate(full=True)
    assert got.array.to_pylist() == [good_pylist := {"s": "a", "l": [[("k", "v")], []]},
                                     None, good_pylist]
    assert list(got.errors) == [1]
    assert got.array.field("l").values.to_pylist() == [[("k", "v")], [], [("k", "v")], []]


def test_timestamp_branch_of_a_merged_union_stays_raw(avro_mod: ModuleType) -> None:
    # Spark maps [null, long (timestamp-millis), int] to LongType and keeps the raw value
    schema = ["null", {"type": "long", "logicalType": "timestamp-millis"}, "int"]
    got = decode_avro([zz(1) + zz(5), zz(2) + zz(-3), zz(0)], framing="none", writer=schema,
                      backend=avro_mod)
    assert got.array.type == pa.int64()
    assert got.array.to_pylist() == [5, -3, None]


def test_resolution_errors_name_the_field() -> None:
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "inner", "type": {"type": "record", "name": "I", "fields": [
            {"name": "x", "type": "int"}]}}]}
    writer = {"type": "record", "name": "R", "fields": [
        {"name": "inner", "type": {"type": "record", "name": "I", "fields": [
            {"name": "x", "type": "string"}]}}]}
    with pytest.raises(SchemaResolutionError) as e:
        resolve(parse_schema(writer), parse_schema(reader))
    assert str(e.value) == "value.inner.x: writer string does not resolve to reader int"
    assert e.value.path == "value.inner.x"
    missing = {"type": "record", "name": "R", "fields": [
        {"name": "inner", "type": {"type": "record", "name": "I", "fields": [
            {"name": "x", "type": "string"}, {"name": "y", "type": "long"}]}}]}
    with pytest.raises(SchemaResolutionError, match="^value.inner.y: the reader's field 'y' is "
                                                     "not in the writer's schema and has no "
                                                     "default$"):
        resolve(parse_schema(writer), parse_schema(missing))
    with pytest.raises(SchemaResolutionError, match="record R does not resolve to reader record"):
        resolve(parse_schema(writer), parse_schema(dict(reader, name="Other")))
    # aliases: a renamed record and a renamed field
    renamed = {"type": "record", "name": "S", "aliases": ["R"], "fields": [
        {"name": "inner2", "aliases": ["inner"], "type": {
            "type": "record", "name": "I", "fields": [{"name": "x", "type": "string"}]}}]}
    resolve(parse_schema(writer), parse_schema(renamed))
    with pytest.raises(SchemaResolutionError, match="no branch of the writer's union"):
        resolve(parse_schema(["int", "long"]), parse_schema("string"))
    with pytest.raises(AvroSchemaError, match="recursive schema"):
        compile_decoder(parse_schema({"type": "record", "name": "L", "fields": [
            {"name": "next", "type": ["null", "L"]}]}))


def test_parse_errors_and_references() -> None:
    for bad, match in [({"type": "nope"}, "unknown type 'nope'"), ("Missing", "unknown type"),
                       (["int", "int"], "twice"), ({"type": "enum", "name": "E",
                                                  "symbols": ["A", "A"]}, "distinct"),
                       ({"type": "record", "name": "R", "fields": [
                           {"name": "a", "type": "int", "default": "x"}]}, "default"),
                       ("{not json", "not valid JSON")]:
        with pytest.raises(AvroSchemaError, match=match):
            parse_schema(bad)
    addr = parse_schema({"type": "record", "name": "Address", "namespace": "ex",
                         "fields": [{"name": "city", "type": "string"}]})
    user = parse_schema({"type": "record", "name": "User", "namespace": "ex", "fields": [
        {"name": "home", "type": "Address"}, {"name": "work", "type": "ex.Address"}]},
        named={"ex.Address": addr})
    addr_t = pa.struct([pa.field("city", pa.string())])
    assert arrow_type(user) == pa.struct([pa.field("home", addr_t), pa.field("work", addr_t)])


def test_unknown_schema_error_is_a_lookup_error() -> None:
    with pytest.raises(UnknownSchemaError, match="unknown schema id 3"):
        WriterSchemas({}, V1).program_for(3)
    assert issubclass(UnknownSchemaError, LookupError)


# --------------------------------------------------------------------------- fuzz

FUZZ = {"type": "record", "name": "F", "fields": [
    {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "s", "type": "string"}, {"name": "b", "type": "bytes"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
    {"name": "o", "type": "boolean"},
    {"name": "u", "type": ["null", "string", "long"]},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
    {"name": "x", "type": {"type": "fixed", "name": "X", "size": 3}},
    {"name": "a", "type": {"type": "array", "items": ["null", "int"]}},
    {"name": "m", "type": {"type": "map", "values": {"type": "record", "name": "In",
                                                     "fields": [{"name": "z", "type": "long"}]}}},
    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "dc", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20,
                            "scale": 3}},
]}


def _fuzz_value(rnd: random.Random) -> dict[str, Any]:
    from decimal import Decimal
    return {"i": rnd.randint(-(2 ** 31), 2 ** 31 - 1), "l": rnd.randint(-(2 ** 63), 2 ** 63 - 1),
            "s": "".join(rnd.choice("aé€😀") for _ in range(rnd.randrange(6))),
            "b": rnd.randbytes(rnd.randrange(5)), "f": 1.5, "d": rnd.random(),
            "o": rnd.random() < 0.5, "u": rnd.choice([None, "s", 12]),
            "e": rnd.choice("ABC"), "x": rnd.randbytes(3),
            "a": [rnd.choice([None, 3]) for _ in range(rnd.randrange(4))],
            "m": {str(k): {"z": k} for k in range(rnd.randrange(3))},
            "t": rnd.randint(0, 2 ** 50), "dc": Decimal(rnd.randint(-10 ** 19, 10 ** 19)) / 1000}


def _fa(data: bytes) -> Any:
    """fastavro's read of a whole body (trailing bytes are an error here, as in ours)."""
    buf = io.BytesIO(data)
    parsed = fastavro.parse_schema(FUZZ)
    v = fastavro.schemaless_reader(buf, parsed, parsed)
    if buf.tell() != len(data):
        raise ValueError("trailing bytes")
    return v


def test_fuzz_truncations_and_mutations(avro_mod: ModuleType) -> None:
    rnd = random.Random(2026)
    reader = parse_schema(FUZZ)
    bodies = [body(FUZZ, _fuzz_value(rnd)) for _ in range(40)]
    cases: list[bytes] = []
    for b in bodies:
        cases += [b[:k] for k in range(len(b))]
        for _ in range(60):
            m = bytearray(b)
            for _ in range(rnd.randint(1, 3)):
                m[rnd.randrange(len(m))] = rnd.randrange(256)
            cases.append(bytes(m))
        cases.append(rnd.randbytes(rnd.randrange(1, 40)))
    got = decode_avro(cases, framing="none", writer=FUZZ, backend=avro_mod)
    got.array.validate(full=True)
    rows = got.array.to_pylist()
    from tests.unit.test_values_avro import expected
    good = bad = 0
    for i, data in enumerate(cases):
        try:
            want: Any = expected(_fa(data), reader)
        except Exception:
            want = _FAILED
        if i in got.errors:
            assert rows[i] is None
            bad += 1
            continue
        good += 1
        # reported good: fastavro reads the same value (and must not have failed)
        assert want is not _FAILED, (i, data, rows[i])
        assert rows[i] == pa.array([want], arrow_type(reader)).to_pylist()[0], (i, data)
    assert good > 500 and bad > 2000, (good, bad)   # both paths well exercised


_FAILED = object()


def test_many_distinct_ids_and_guids(avro_mod: ModuleType) -> None:
    rnd = random.Random(5)
    writers: dict[SchemaId, Any] = {}
    values: list[bytes] = []
    want: list[Any] = []
    for i in range(3000):
        sid: SchemaId = uuid.UUID(int=rnd.getrandbits(128)) if i % 7 == 0 else rnd.randrange(2 ** 32)
        known = i % 3 != 0
        if known:
            writers[sid] = V1
        rec = {"id": i, "name": str(i)}
        prefix = (b"\x01" + sid.bytes) if isinstance(sid, uuid.UUID) else (
            b"\x00" + struct.pack(">I", sid))
        values.append(prefix + body(V1, rec))
        want.append(rec if known else None)
    got = decode_avro(values, reader=V1, source=WriterSchemas(writers, V1), backend=avro_mod)
    assert got.array.to_pylist() == want
    assert set(got.errors) == {i for i in range(3000) if i % 3 == 0}
    assert all(r.startswith("unknown schema ") for r in got.errors.values())


def test_fuzz_framing(avro_mod: ModuleType) -> None:
    rnd = random.Random(11)
    good = [framed(1, V1, {"id": i, "name": "n" * (i % 5)}) for i in range(50)]
    cases: list[bytes | None] = []
    for g in good:
        cases += [g[:k] for k in range(len(g))]
        for _ in range(30):
            m = bytearray(g)
            m[rnd.randrange(min(len(m), 8))] = rnd.randrange(256)
            cases.append(bytes(m))
        cases.append(None)
    got = decode_avro(cases, reader=V1, source=WriterSchemas({1: V1}, V1), backend=avro_mod)
    got.array.validate(full=True)
    rows = got.array.to_pylist()
    parsed = fastavro.parse_schema(V1)
    for i, data in enumerate(cases):
        if data is None:
            assert rows[i] is None and i not in got.errors
        elif i not in got.errors:
            assert data[:5] == b"\x00\x00\x00\x00\x01"
            buf = io.BytesIO(data[5:])
            assert rows[i] == fastavro.schemaless_reader(buf, parsed, parsed)
            assert buf.tell() == len(data) - 5
        else:
            assert rows[i] is None


def test_threads_decode_side_by_side(avro_mod: ModuleType) -> None:
    from concurrent.futures import ThreadPoolExecutor
    rows = [{"id": i, "name": "x" * (i % 50)} for i in range(20000)]
    arr = pa.array([body(V1, r) for r in rows], pa.binary())
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(
            lambda _: decode_avro(arr, framing="none", writer=V1, backend=avro_mod), range(8)))
    for r in results:
        assert r.errors == {}
        assert r.array.to_pylist() == rows


def test_logical_types_keep_sparks_raw_values(avro_mod: ModuleType) -> None:
    # Spark copies a uuid string as it is and a time as its number (no day wrap, no check)
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "d", "type": {"type": "int", "logicalType": "date"}}]}
    data = zz(len(b"not-a-uuid")) + b"not-a-uuid" + zz(-5) + zz(-800_000)
    got = decode_avro([data], framing="none", writer=schema, backend=avro_mod)
    assert got.errors == {}
    assert got.array.field("u").to_pylist() == ["not-a-uuid"]
    assert got.array.field("t").to_pylist() == [-5]
    assert got.array.field("d").cast(pa.int32()).to_pylist() == [-800_000]


def test_a_forged_program_is_a_value_error(avro_mod: ModuleType) -> None:
    from array import array

    from pyconsumer.values.avro_decode import _pin
    prog = compile_decoder(parse_schema(V2))
    kinds = [c.kind for c in prog.columns]
    children = [c.children[0] if c.kind == 9 else -1 for c in prog.columns]
    widths = [c.width for c in prog.columns]

    def make(code: list[int], aux: list[int] | None = None, blob: bytes = b"") -> Any:
        return avro_mod.AvroProgram(array("q", code), array("q", prog.aux if aux is None
                                                            else aux), blob, kinds, children,
                                    widths)

    make(prog.code, blob=prog.blob)                           # the real one is fine
    assert _pin(prog, avro_mod).aligned == (True,) * len(kinds)
    for code, match in [
        ([1, 99, 0, 0], "column 99 is not one it can write"),           # STRUCT of no column
        ([4, 0, 0, 1], "column 0 is not one it can write"),             # INT into the struct
        ([14, 1, 0, 0], "union end 0 out of range"),                   # a union that loops
        ([13, -1, 5, 1], "array body"),                                 # a body past the end
        ([15, 0, 10, 0], "default"),                                    # a blob range past it
        ([12, 2, 10 ** 6, 1], "enum table"),
        ([77, 0, 0, 0], "unknown opcode 77"),
    ]:
        with pytest.raises(ValueError, match=match):
            make(code)
    with pytest.raises(ValueError, match="null list"):
        make(prog.code, aux=[0, 0] + prog.aux[2:], blob=prog.blob)
    with pytest.raises(ValueError, match="one kind, child and width"):
        avro_mod.AvroProgram(array("q"), array("q"), b"", [], [], [])


def test_nesting_deeper_than_the_limit_is_a_row_error(avro_mod: ModuleType) -> None:
    # an array of arrays ... 1,100 deep: each level is one body deeper
    schema: Any = "null"
    for _ in range(1100):
        schema = {"type": "array", "items": schema}
    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    try:
        data = b"\x02" * 1100 + b"\x00" * 1100
        got = decode_avro([data, b"\x00"], framing="none", writer=schema, backend=avro_mod)
    finally:
        sys.setrecursionlimit(old)
    assert got.errors == {0: "bodies nested over 1000 deep at byte 1000"}
    assert got.array.to_pylist() == [None, []]


def test_argument_errors(avro_mod: ModuleType) -> None:
    with pytest.raises(ValueError, match='framing="confluent" only'):
        decode_avro([b""], framing="none", writer="null", schema_ids=[1], backend=avro_mod)
    with pytest.raises(ValueError, match="needs the writer schema"):
        decode_avro([b""], framing="none", backend=avro_mod)
    with pytest.raises(ValueError, match="needs a schema source and the reader schema"):
        decode_avro([b""], reader=V1, backend=avro_mod)
    with pytest.raises(TypeError, match="Avro values come as binary"):
        decode_avro(pa.array([1]), framing="none", writer="int", backend=avro_mod)
    other = WriterSchemas({1: "string"}, "string")
    with pytest.raises(ValueError, match="writes string, not the reader schema's"):
        decode_avro([framed(1, "string", "x")], reader=V1, source=other, backend=avro_mod)


def test_a_fetching_source_and_writers_that_do_not_resolve(avro_mod: ModuleType) -> None:
    class NotFound(Exception):
        pass

    bad_writer = {"type": "record", "name": "User", "namespace": "ex", "fields": [
        {"name": "id", "type": "string"}]}
    fetched: list[SchemaId] = []

    def fetch(sid: SchemaId) -> Any:
        fetched.append(sid)
        if sid == 1:
            return json.dumps(V1)
        if sid == 3:
            return bad_writer
        if sid == 4:
            raise ConnectionError("registry down")
        raise NotFound(f"no schema {sid}")

    source = WriterSchemas(fetch, V2, not_found=(NotFound,))
    values = [framed(1, V1, {"id": 1, "name": "a"}), framed(2, V1, {"id": 2, "name": "b"}),
              framed(3, bad_writer, {"id": "x"}), framed(1, V1, {"id": 3, "name": "c"})]
    got = decode_avro(values, reader=V2, source=source, backend=avro_mod)
    assert got.array.to_pylist() == [{"id": 1, "name": "a", "email": None, "age": -1}, None,
                                     None, {"id": 3, "name": "c", "email": None, "age": -1}]
    assert got.errors == {
        1: "unknown schema id 2 (no schema 2)",
        2: "the writer schema of schema id 3 does not resolve to the reader schema: "
           "value.id: writer string does not resolve to reader long",
    }
    assert fetched == [1, 2, 3]                    # each id fetched once
    with pytest.raises(ConnectionError):
        decode_avro([framed(4, V1, {"id": 1, "name": ""})], reader=V2, source=source,
                    backend=avro_mod)


def test_references_in_dependency_order() -> None:
    from pyconsumer.values.avro import parse_with_references
    country = {"type": "enum", "name": "Country", "namespace": "geo", "symbols": ["DE", "FR"]}
    address = {"type": "record", "name": "Address", "namespace": "geo", "fields": [
        {"name": "country", "type": "Country"}]}
    user = {"type": "record", "name": "User", "fields": [
        {"name": "home", "type": "geo.Address"}, {"name": "born", "type": "geo.Country"}]}
    parsed = parse_with_references(json.dumps(user), [json.dumps(country), address])
    assert arrow_type(parsed) == pa.struct([
        pa.field("home", pa.struct([pa.field("country", pa.string())])),
        pa.field("born", pa.string())])
    with pytest.raises(AvroSchemaError, match="unknown type 'Country'"):
        parse_with_references(user, [address, country])          # not in dependency order


def test_confluent_kafkas_serializer_as_the_independent_writer(avro_mod: ModuleType) -> None:
    """confluent-kafka's AvroSerializer frames the values (an id prefix, or the GUID in the
    __value_schema_id header) against its mock registry; the rows come back as written."""
    sr = pytest.importorskip("confluent_kafka.schema_registry")
    mock = pytest.importorskip("confluent_kafka.schema_registry._sync.mock_schema_registry_client")
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    client = mock.MockSchemaRegistryClient({"url": "mock://avro-e"})
    by_prefix = AvroSerializer(client, json.dumps(V1))
    by_header = AvroSerializer(client, json.dumps(V2),
                               conf={"schema.id.serializer": sr.header_schema_id_serializer})
    rows = [{"id": i, "name": f"n{i}", "email": None if i % 2 else f"{i}@x", "age": i}
            for i in range(20)]
    values: list[bytes] = []
    ids: list[SchemaId | None] = []
    for i, row in enumerate(rows):
        headers: list[tuple[str, bytes]] = []
        ctx = SerializationContext("t", MessageField.VALUE, headers)
        if i % 3 == 0:
            values.append(by_prefix(row, ctx))
            ids.append(None)
        else:
            values.append(by_header(row, ctx))
            ids.append(schema_id_from_header(dict(headers)["__value_schema_id"]))

    def fetch(sid: SchemaId) -> str:
        got = (client.get_schema_by_guid(str(sid)) if isinstance(sid, uuid.UUID)
               else client.get_schema(sid))
        return str(got.schema_str)

    out = decode_avro(values, reader=V2, source=WriterSchemas(fetch, V2), schema_ids=ids,
                      backend=avro_mod)
    assert out.errors == {}
    assert out.array.to_pylist() == [
        r if i % 3 else {"id": r["id"], "name": r["name"], "email": None, "age": -1}
        for i, r in enumerate(rows)]
    assert any(isinstance(s, uuid.UUID) for s in ids)


def test_time_micros_wraps_into_the_day_like_spark(avro_mod: ModuleType) -> None:
    # Spark 4.2+ reads time-micros as TIME(6): nanoseconds, wrapped into the day (floor
    # modulo); a value whose nanoseconds overflow 64 bits is a malformed record
    import datetime as dt
    schema = {"type": "array", "items": {"type": "long", "logicalType": "time-micros"}}
    data = zz(4) + zz(5) + zz(-5) + zz(86_400_000_000) + zz(3 * 86_400_000_000 + 7) + zz(0)
    got = decode_avro([data, zz(1) + zz(2 ** 62) + zz(0)], framing="none", writer=schema,
                      backend=avro_mod)
    assert got.array.type == pa.list_(pa.field("element", pa.time64("ns")))
    assert got.array.to_pylist() == [
        [dt.time(0, 0, 0, 5), dt.time(23, 59, 59, 999995), dt.time(0), dt.time(0, 0, 0, 7)],
        None]
    assert got.errors == {1: f"timestamp {2 ** 62} ms out of range in microseconds at byte 1"}
