"""Protobuf values decoded by the compiled decoder against the ``protobuf`` runtime's parse of the
same bytes (Spark ``from_protobuf``'s rules applied to it in tests/unit/protobuf_oracle.py):
hypothesis-generated schemas (every scalar type, nesting, packed and unpacked repeated, maps,
oneofs, proto3 optional, proto2 defaults, imports across files, well-known types) and messages,
row for row; the merge and last-one-wins rules of the wire; and the Arrow types against Spark's
SchemaConverters."""
from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("google.protobuf")

from google.protobuf import descriptor_pb2, duration_pb2, timestamp_pb2, wrappers_pb2  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pyconsumer.values.protobuf import (  # noqa: E402
    ProtobufOptions, ProtobufSchemaError, arrow_type, compile_program,
)
from pyconsumer.values.protobuf_decode import decode_protobuf  # noqa: E402
from tests.unit.protobuf_oracle import expected, message_class, pool_of  # noqa: E402

FDP = descriptor_pb2.FieldDescriptorProto
SCALARS = [FDP.TYPE_DOUBLE, FDP.TYPE_FLOAT, FDP.TYPE_INT64, FDP.TYPE_UINT64, FDP.TYPE_INT32,
           FDP.TYPE_FIXED64, FDP.TYPE_FIXED32, FDP.TYPE_BOOL, FDP.TYPE_STRING, FDP.TYPE_BYTES,
           FDP.TYPE_UINT32, FDP.TYPE_SFIXED32, FDP.TYPE_SFIXED64, FDP.TYPE_SINT32, FDP.TYPE_SINT64]
MAP_KEYS = [FDP.TYPE_STRING, FDP.TYPE_INT32, FDP.TYPE_INT64, FDP.TYPE_BOOL, FDP.TYPE_UINT32,
            FDP.TYPE_SINT64, FDP.TYPE_FIXED32]
WKT = {"google/protobuf/timestamp.proto": timestamp_pb2, "google/protobuf/duration.proto": duration_pb2,
       "google/protobuf/wrappers.proto": wrappers_pb2}


def _wkt_files() -> list[descriptor_pb2.FileDescriptorProto]:
    out = []
    for mod in WKT.values():
        fp = descriptor_pb2.FileDescriptorProto()
        mod.DESCRIPTOR.CopyToProto(fp)
        out.append(fp)
    return out


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


# --------------------------------------------------------------------------- schemas

@st.composite
def schemas(draw: st.DrawFn) -> tuple[list[descriptor_pb2.FileDescriptorProto], str]:
    """Two files: dep.proto (a message and an enum, proto3) and main.proto importing it and the
    well-known types, whose Root message has fields of every kind the draw picks."""
    dep = descriptor_pb2.FileDescriptorProto(name="dep.proto", package="dep", syntax="proto3")
    en = dep.enum_type.add(name="Kind")
    for i, n in enumerate(["KIND_ZERO", "KIND_ONE", "KIND_TWO"]):
        en.value.add(name=n, number=[0, 1, 7][i])
    dm = dep.message_type.add(name="Dep")
    dm.field.add(name="x", number=1, type=FDP.TYPE_SINT32, label=FDP.LABEL_OPTIONAL)
    dm.field.add(name="k", number=2, type=FDP.TYPE_ENUM, type_name=".dep.Kind", label=FDP.LABEL_OPTIONAL)
    dm.field.add(name="t", number=3, type=FDP.TYPE_STRING, label=FDP.LABEL_REPEATED)

    proto2 = draw(st.booleans())
    main = descriptor_pb2.FileDescriptorProto(
        name="main.proto", package="m", syntax="proto2" if proto2 else "proto3",
        dependency=["dep.proto", *WKT])
    root = main.message_type.add(name="Root")
    inner = root.nested_type.add(name="Inner")
    inner.field.add(name="a", number=1, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    inner.field.add(name="b", number=2, type=FDP.TYPE_STRING, label=FDP.LABEL_OPTIONAL)
    inner.field.add(name="r", number=3, type=FDP.TYPE_INT64, label=FDP.LABEL_REPEATED)
    number = iter(draw(st.permutations(range(1, 60))))
    count = draw(st.integers(1, 14))
    if proto2 and draw(st.booleans()):      # a group (proto2 only): a struct, as a message
        grp = root.nested_type.add(name="Grp")
        grp.field.add(name="g", number=1, type=FDP.TYPE_SINT64, label=FDP.LABEL_OPTIONAL)
        grp.field.add(name="h", number=2, type=FDP.TYPE_STRING, label=FDP.LABEL_REPEATED)
        root.field.add(name="grp", number=next(number), type=FDP.TYPE_GROUP, type_name=".m.Root.Grp",
                       label=draw(st.sampled_from([FDP.LABEL_OPTIONAL, FDP.LABEL_REPEATED])))
    if draw(st.booleans()):                 # a real oneof (before the synthetic ones)
        root.oneof_decl.add(name="choice")
        root.field.add(name="o_a", number=next(number), type=FDP.TYPE_STRING,
                       label=FDP.LABEL_OPTIONAL, oneof_index=0)
        root.field.add(name="o_b", number=next(number), type=FDP.TYPE_MESSAGE,
                       type_name=".m.Root.Inner", label=FDP.LABEL_OPTIONAL, oneof_index=0)
        root.field.add(name="o_c", number=next(number), type=FDP.TYPE_INT64,
                       label=FDP.LABEL_OPTIONAL, oneof_index=0)
    for k in range(count):
        name = f"f{k}"
        kind = draw(st.sampled_from(["scalar", "scalar", "repeated", "enum", "inner", "dep",
                                     "rep_inner", "map", "time", "wrapper", "optional"]))
        n = next(number)
        if kind in ("scalar", "repeated", "optional"):
            t = draw(st.sampled_from(SCALARS))
            f = root.field.add(name=name, number=n, type=t,
                               label=FDP.LABEL_REPEATED if kind == "repeated" else FDP.LABEL_OPTIONAL)
            if kind == "repeated" and t not in (FDP.TYPE_STRING, FDP.TYPE_BYTES) and draw(st.booleans()):
                f.options.packed = not proto2      # the other encoding than the syntax's default
            if kind == "optional" and not proto2:
                f.proto3_optional = True
                f.oneof_index = len(root.oneof_decl)
                root.oneof_decl.add(name=f"_{name}")
            if kind == "scalar" and proto2 and t == FDP.TYPE_INT32 and draw(st.booleans()):
                f.default_value = "42"
        elif kind == "enum":
            root.field.add(name=name, number=n, type=FDP.TYPE_ENUM, type_name=".dep.Kind",
                           label=draw(st.sampled_from([FDP.LABEL_OPTIONAL, FDP.LABEL_REPEATED])))
        elif kind in ("inner", "rep_inner"):
            root.field.add(name=name, number=n, type=FDP.TYPE_MESSAGE, type_name=".m.Root.Inner",
                           label=FDP.LABEL_REPEATED if kind == "rep_inner" else FDP.LABEL_OPTIONAL)
        elif kind == "dep":
            root.field.add(name=name, number=n, type=FDP.TYPE_MESSAGE, type_name=".dep.Dep",
                           label=FDP.LABEL_OPTIONAL)
        elif kind == "map":
            kt = draw(st.sampled_from(MAP_KEYS))
            vt = draw(st.sampled_from([*SCALARS, "inner", "enum"]))
            entry = root.nested_type.add(name=f"{_camel(name)}Entry")
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=kt, label=FDP.LABEL_OPTIONAL)
            if vt == "inner":
                entry.field.add(name="value", number=2, type=FDP.TYPE_MESSAGE,
                                type_name=".m.Root.Inner", label=FDP.LABEL_OPTIONAL)
            elif vt == "enum":
                entry.field.add(name="value", number=2, type=FDP.TYPE_ENUM,
                                type_name=".dep.Kind", label=FDP.LABEL_OPTIONAL)
            else:
                entry.field.add(name="value", number=2, type=vt, label=FDP.LABEL_OPTIONAL)
            root.field.add(name=name, number=n, type=FDP.TYPE_MESSAGE,
                           type_name=f".m.Root.{_camel(name)}Entry", label=FDP.LABEL_REPEATED)
        elif kind == "time":
            tn = draw(st.sampled_from([".google.protobuf.Timestamp", ".google.protobuf.Duration"]))
            root.field.add(name=name, number=n, type=FDP.TYPE_MESSAGE, type_name=tn,
                           label=draw(st.sampled_from([FDP.LABEL_OPTIONAL, FDP.LABEL_REPEATED])))
        elif kind == "wrapper":
            root.field.add(name=name, number=n, type=FDP.TYPE_MESSAGE,
                           type_name=draw(st.sampled_from([".google.protobuf.Int32Value",
                                                           ".google.protobuf.StringValue"])),
                           label=FDP.LABEL_OPTIONAL)
    return [*_wkt_files(), dep, main], "m.Root"


# --------------------------------------------------------------------------- messages

_INT_RANGES = {FDP.TYPE_INT32: (-(1 << 31), (1 << 31) - 1), FDP.TYPE_SINT32: (-(1 << 31), (1 << 31) - 1),
               FDP.TYPE_SFIXED32: (-(1 << 31), (1 << 31) - 1), FDP.TYPE_UINT32: (0, (1 << 32) - 1),
               FDP.TYPE_FIXED32: (0, (1 << 32) - 1), FDP.TYPE_INT64: (-(1 << 63), (1 << 63) - 1),
               FDP.TYPE_SINT64: (-(1 << 63), (1 << 63) - 1), FDP.TYPE_SFIXED64: (-(1 << 63), (1 << 63) - 1),
               FDP.TYPE_UINT64: (0, (1 << 64) - 1), FDP.TYPE_FIXED64: (0, (1 << 64) - 1)}


def _scalar_value(draw: st.DrawFn, fd: Any) -> Any:
    t = fd.type
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return draw(st.one_of(st.just(0), st.sampled_from([lo, hi, 1, -1 if lo < 0 else 2]),
                              st.integers(lo, hi)))
    if t == FDP.TYPE_BOOL:
        return draw(st.booleans())
    if t == FDP.TYPE_DOUBLE:
        return draw(st.floats(allow_nan=False))
    if t == FDP.TYPE_FLOAT:
        return draw(st.floats(width=32, allow_nan=False))
    if t == FDP.TYPE_STRING:
        return draw(st.text(max_size=6))
    if t == FDP.TYPE_BYTES:
        return draw(st.binary(max_size=6))
    if t == FDP.TYPE_ENUM:
        return draw(st.sampled_from([0, 1, 7] + ([3] if not fd.enum_type.is_closed else [])))
    raise AssertionError(t)


def fill(draw: st.DrawFn, msg: Any, depth: int = 0) -> None:
    name = msg.DESCRIPTOR.full_name
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        # within Spark's range: seconds * 10**6 fits a long (outside it a row is bad)
        msg.seconds = draw(st.integers(-10**10, 10**10))
        msg.nanos = draw(st.integers(0, 999_999_999)) * (
            -1 if name.endswith("Duration") and msg.seconds < 0 else 1)
        return
    for fd in msg.DESCRIPTOR.fields:
        if draw(st.integers(0, 3)) == 0:
            continue
        m = fd.message_type
        if fd.is_repeated and m is not None and m.GetOptions().map_entry:
            kf, vf = m.fields_by_name["key"], m.fields_by_name["value"]
            target = getattr(msg, fd.name)
            for _ in range(draw(st.integers(0, 3))):
                key = _scalar_value(draw, kf)
                if vf.message_type is not None:
                    fill(draw, target[key], depth + 1)
                else:
                    target[key] = _scalar_value(draw, vf)
            continue
        if fd.is_repeated:
            target = getattr(msg, fd.name)
            for _ in range(draw(st.integers(0, 3))):
                if m is not None:
                    fill(draw, target.add(), depth + 1)
                else:
                    target.append(_scalar_value(draw, fd))
            continue
        if m is not None:
            sub = getattr(msg, fd.name)
            sub.SetInParent()
            fill(draw, sub, depth + 1)
            continue
        setattr(msg, fd.name, _scalar_value(draw, fd))


def decode_rows(schema: Any, name: str, values: list[bytes | None],
                opts: ProtobufOptions | None = None) -> tuple[list[Any], dict[int, str]]:
    opts = opts or ProtobufOptions()
    prog = compile_program(schema.message(name), opts)
    d = decode_protobuf(pa.array(values, pa.binary()), prog, framing="none",
                        emit_default_values=opts.emit_default_values)
    assert d.array.type == arrow_type(schema.message(name), opts)
    return d.array.to_pylist(), d.errors


def _normal(row: Any) -> Any:
    """Arrow's to_pylist of a map is a list of pairs, of a timestamp an aware datetime."""
    if isinstance(row, dict):
        return {k: _normal(v) for k, v in row.items()}
    if isinstance(row, list):
        items = [_normal(v) for v in row]
        # a map's entries: the runtime's map iterates in its own order, the wire's is kept here
        return sorted(items, key=lambda kv: kv[0]) if items and isinstance(items[0], tuple) else items
    if isinstance(row, tuple):
        return tuple(_normal(v) for v in row)
    if isinstance(row, datetime.datetime):
        return row.astimezone(datetime.timezone.utc)
    return row


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas(), st.data(), st.booleans(), st.booleans(), st.booleans())
def test_generated_schemas_and_messages_match_the_runtime(
        sch: tuple[list[Any], str], data: st.DataObject, emit: bool, enums_as_ints: bool,
        upcast: bool) -> None:
    files, name = sch
    schema = pool_of(*files)
    cls = message_class(schema.message(name))
    msgs = []
    for _ in range(data.draw(st.integers(1, 4))):
        m = cls()
        fill(data.draw, m)
        msgs.append(m)
    opts = ProtobufOptions(emit_default_values=emit, enums_as_ints=enums_as_ints,
                           upcast_unsigned_ints=upcast)
    wire = [m.SerializeToString(deterministic=True) for m in msgs]
    rows, errors = decode_rows(schema, name, [*wire, None], opts)
    assert errors == {}
    for i, w in enumerate(wire):
        parsed = cls.FromString(w)          # the oracle: the runtime's parse of the bytes
        assert _normal(rows[i]) == expected(parsed, opts), (i, w.hex())
    assert rows[-1] is None


# --------------------------------------------------------------------------- the wire's rules

def _simple_schema(syntax: str = "proto3") -> Any:
    fp = descriptor_pb2.FileDescriptorProto(name="s.proto", package="s", syntax=syntax)
    m = fp.message_type.add(name="S")
    inner = m.nested_type.add(name="In")
    inner.field.add(name="a", number=1, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    inner.field.add(name="r", number=2, type=FDP.TYPE_INT32, label=FDP.LABEL_REPEATED)
    m.field.add(name="n", number=1, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    m.field.add(name="s", number=2, type=FDP.TYPE_STRING, label=FDP.LABEL_OPTIONAL)
    m.field.add(name="in", number=3, type=FDP.TYPE_MESSAGE, type_name=".s.S.In", label=FDP.LABEL_OPTIONAL)
    m.field.add(name="r", number=4, type=FDP.TYPE_SINT64, label=FDP.LABEL_REPEATED)
    return pool_of(fp)


def test_last_one_wins_and_sub_messages_merge_as_the_runtime_parses() -> None:
    schema = _simple_schema()
    cls = message_class(schema.message("s.S"))
    a = cls(n=1, s="x")
    a.__getattribute__("in").a = 5
    a.__getattribute__("in").r.extend([1, 2])
    a.r.extend([-1])
    b = cls(n=2)
    b.__getattribute__("in").r.extend([3])
    b.r.extend([7, 8])
    wire = a.SerializeToString() + b.SerializeToString()   # concatenation is a merge
    rows, errors = decode_rows(schema, "s.S", [wire])
    assert errors == {}
    assert rows[0] == expected(cls.FromString(wire))
    assert rows[0] == {"n": 2, "s": "x", "in": {"a": 5, "r": [1, 2, 3]}, "r": [-1, 7, 8]}


def test_packed_and_unpacked_repeated_both_read() -> None:
    schema = _simple_schema()
    # field 4 (sint64) unpacked twice, then packed: -1, 1, then [2, -2]
    wire = bytes([0x20, 0x01, 0x20, 0x02, 0x22, 0x02, 0x04, 0x03])
    rows, errors = decode_rows(schema, "s.S", [wire])
    assert errors == {} and rows[0]["r"] == [-1, 1, 2, -2]
    assert rows[0]["r"] == list(message_class(schema.message("s.S")).FromString(wire).r)


def test_unknown_fields_are_skipped_of_every_wire_type() -> None:
    schema = _simple_schema()
    # field 9 varint, field 10 fixed64, field 11 bytes, field 12 group (with a varint inside),
    # field 13 fixed32, then n = 3
    wire = bytes([0x48, 0x96, 0x01, 0x51, *range(8), 0x5A, 0x01, 0xFF, 0x63, 0x08, 0x01, 0x64,
                  0x6D, 1, 2, 3, 4, 0x08, 0x03])
    rows, errors = decode_rows(schema, "s.S", [wire])
    assert errors == {}
    assert rows[0] == expected(message_class(schema.message("s.S")).FromString(wire))
    assert rows[0]["n"] == 3


def test_proto3_defaults_are_null_unless_emitted() -> None:
    schema = _simple_schema()
    zero = bytes([0x08, 0x00, 0x12, 0x00])    # n = 0 and s = "" on the wire
    rows, _ = decode_rows(schema, "s.S", [zero, b""])
    assert rows == [{"n": None, "s": None, "in": None, "r": []}] * 2
    rows, _ = decode_rows(schema, "s.S", [zero, b""], ProtobufOptions(emit_default_values=True))
    assert rows == [{"n": 0, "s": "", "in": None, "r": []}] * 2


def test_proto2_optional_present_at_its_default_is_a_value() -> None:
    schema = _simple_schema("proto2")
    rows, _ = decode_rows(schema, "s.S", [bytes([0x08, 0x00]), b""],
                          ProtobufOptions(emit_default_values=True))
    assert rows[0]["n"] == 0 and rows[1]["n"] is None


def test_arrow_types_follow_sparks_schema_converters() -> None:
    fp = descriptor_pb2.FileDescriptorProto(name="t.proto", package="t", syntax="proto3",
                                            dependency=list(WKT))
    m = fp.message_type.add(name="T")
    m.field.add(name="u32", number=1, type=FDP.TYPE_UINT32, label=FDP.LABEL_OPTIONAL)
    m.field.add(name="u64", number=2, type=FDP.TYPE_UINT64, label=FDP.LABEL_OPTIONAL)
    m.field.add(name="ts", number=3, type=FDP.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
                label=FDP.LABEL_OPTIONAL)
    m.field.add(name="d", number=4, type=FDP.TYPE_MESSAGE, type_name=".google.protobuf.Duration",
                label=FDP.LABEL_REPEATED)
    m.field.add(name="w", number=5, type=FDP.TYPE_MESSAGE, type_name=".google.protobuf.Int64Value",
                label=FDP.LABEL_OPTIONAL)
    schema = pool_of(*_wkt_files(), fp)
    desc = schema.message("t.T")
    assert arrow_type(desc) == pa.struct([
        pa.field("u32", pa.int32()), pa.field("u64", pa.int64()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("d", pa.list_(pa.field("element", pa.duration("us"), nullable=False))),
        pa.field("w", pa.struct([pa.field("value", pa.int64())]))])
    up = arrow_type(desc, ProtobufOptions(upcast_unsigned_ints=True, unwrap_wrappers=True))
    assert up.field("u32").type == pa.int64() and up.field("u64").type == pa.decimal128(20, 0)
    assert up.field("w").type == pa.int64()


def _recursive_schema() -> Any:
    fp = descriptor_pb2.FileDescriptorProto(name="r.proto", package="r", syntax="proto3")
    m = fp.message_type.add(name="Person")
    m.field.add(name="name", number=1, type=FDP.TYPE_STRING, label=FDP.LABEL_OPTIONAL)
    m.field.add(name="bff", number=2, type=FDP.TYPE_MESSAGE, type_name=".r.Person", label=FDP.LABEL_OPTIONAL)
    return pool_of(fp)


def test_recursion_is_refused_unless_a_depth_cuts_it() -> None:
    desc = _recursive_schema().message("r.Person")
    with pytest.raises(ProtobufSchemaError, match="recursive reference.*r.Person.bff"):
        arrow_type(desc)
    assert arrow_type(desc, ProtobufOptions(recursive_max_depth=1)) == pa.struct(
        [pa.field("name", pa.string())])
    two = arrow_type(desc, ProtobufOptions(recursive_max_depth=2))
    assert two == pa.struct([pa.field("name", pa.string()),
                             pa.field("bff", pa.struct([pa.field("name", pa.string())]))])
    schema = _recursive_schema()
    cls = message_class(schema.message("r.Person"))
    p = cls(name="a")
    p.bff.name = "b"
    p.bff.bff.name = "c"                       # cut at depth 2: read as an unknown field
    rows, errors = decode_rows(schema, "r.Person", [p.SerializeToString()],
                               ProtobufOptions(recursive_max_depth=2))
    assert errors == {} and rows == [{"name": "a", "bff": {"name": "b"}}]


def _proto2_schema() -> Any:
    fp = descriptor_pb2.FileDescriptorProto(name="p2.proto", package="p2", syntax="proto2")
    en = fp.enum_type.add(name="E")
    en.value.add(name="A", number=1)
    en.value.add(name="B", number=2)
    m = fp.message_type.add(name="M")
    m.field.add(name="req", number=1, type=FDP.TYPE_INT32, label=FDP.LABEL_REQUIRED)
    m.field.add(name="e", number=2, type=FDP.TYPE_ENUM, type_name=".p2.E", label=FDP.LABEL_OPTIONAL)
    m.field.add(name="re", number=3, type=FDP.TYPE_ENUM, type_name=".p2.E", label=FDP.LABEL_REPEATED)
    m.field.add(name="d", number=4, type=FDP.TYPE_STRING, label=FDP.LABEL_OPTIONAL,
                default_value="dflt")
    return pool_of(fp)


def test_proto2_closed_enums_required_fields_and_defaults() -> None:
    schema = _proto2_schema()
    cls = message_class(schema.message("p2.M"))
    # e = 9 (unknown to a closed enum: an unknown field), then re = [1, 9, 2] unpacked
    wire = bytes([0x08, 0x01, 0x10, 0x09, 0x18, 0x01, 0x18, 0x09, 0x18, 0x02])
    missing = bytes([0x10, 0x02])                        # no required field 1
    rows, errors = decode_rows(schema, "p2.M", [wire, missing])
    assert rows[0] == {"req": 1, "e": None, "re": ["A", "B"], "d": "dflt"}
    assert rows[0] == expected(cls.FromString(wire))
    assert rows[1] is None and errors == {1: "required field p2.M.req (number 1, int32) is missing"}
    assert not cls.FromString(missing).IsInitialized()   # Java's parse (Spark's) refuses it


def test_a_oneof_keeps_its_last_member_and_merges_only_after_it() -> None:
    schema = pool_of(*_wkt_files(), next(iter(_oneof_files())))
    cls = message_class(schema.message("o.O"))
    # a = {x: 1}, then s = "z", then a = {y: 2}: the oneof's last member, a = {y: 2} alone
    wire = bytes([0x0A, 0x02, 0x08, 0x01, 0x12, 0x01, 0x7A, 0x0A, 0x02, 0x10, 0x02])
    rows, errors = decode_rows(schema, "o.O", [wire])
    assert errors == {}
    assert rows[0] == expected(cls.FromString(wire)) == {"a": {"x": None, "y": 2}, "s": None}


def _oneof_files() -> list[descriptor_pb2.FileDescriptorProto]:
    fp = descriptor_pb2.FileDescriptorProto(name="o.proto", package="o", syntax="proto3")
    m = fp.message_type.add(name="O")
    inner = m.nested_type.add(name="In")
    inner.field.add(name="x", number=1, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    inner.field.add(name="y", number=2, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    m.oneof_decl.add(name="choice")
    m.field.add(name="a", number=1, type=FDP.TYPE_MESSAGE, type_name=".o.O.In",
                label=FDP.LABEL_OPTIONAL, oneof_index=0)
    m.field.add(name="s", number=2, type=FDP.TYPE_STRING, label=FDP.LABEL_OPTIONAL, oneof_index=0)
    return [fp]


def test_malformed_messages_are_bad_rows_naming_what_and_where() -> None:
    fp = descriptor_pb2.FileDescriptorProto(name="b.proto", package="b", syntax="proto3",
                                            dependency=["google/protobuf/timestamp.proto"])
    m = fp.message_type.add(name="B")
    m.field.add(name="s", number=1, type=FDP.TYPE_STRING, label=FDP.LABEL_OPTIONAL)
    m.field.add(name="f", number=2, type=FDP.TYPE_FIXED32, label=FDP.LABEL_REPEATED)
    m.field.add(name="t", number=3, type=FDP.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
                label=FDP.LABEL_OPTIONAL)
    schema = pool_of(*_wkt_files(), fp)
    deep_group = bytes([0x4B] * 150 + [0x4C] * 150)      # groups of field 9 nested 150 deep
    cases = {
        b"\x0a\x02\xc3\x28": "invalid UTF-8 in string field b.B.s (number 1, string) at byte 2",
        b"\x0a\x05ab": "truncated value at byte 2",
        b"\x08\x01": "field b.B.s (number 1, string) has wire type 0 (varint), which its type "
                     "cannot have at byte 0",
        b"\x12\x03\x01\x02\x03": "packed field b.B.f (number 2, fixed32) of 3 bytes is not a whole "
                                 "number of values at byte 2",
        b"\x1a\x0a\x08\xff\xff\xff\xff\xff\xff\xff\xff\x7f": "field b.B.t (number 3, message): "
            "9223372036854775807 seconds out of range in microseconds at byte 2",
        b"\x0f": "wire type 7 is not a valid wire type here at byte 0",
        b"\x00": "field number 0 out of range at byte 0",
        b"\x4c": "wire type 4 is not a valid wire type here at byte 0",
        b"\x4b\x08\x01": "group of field number 9 has no end at byte 0",
        deep_group: "messages nested over 100 deep at byte 99",   # the message is one level
        b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01": "bad varint (over 10 bytes) at byte 1",
    }
    values = list(cases)
    rows, errors = decode_rows(schema, "b.B", values)
    assert rows == [None] * len(values)
    assert errors == {i: cases[v] for i, v in enumerate(values)}


def test_wrappers_unwrapped_empty_messages_kept_and_map_values_defaulted() -> None:
    fp = descriptor_pb2.FileDescriptorProto(name="w.proto", package="w", syntax="proto3",
                                            dependency=["google/protobuf/wrappers.proto"])
    m = fp.message_type.add(name="W")
    m.nested_type.add(name="Empty")
    m.field.add(name="i", number=1, type=FDP.TYPE_MESSAGE, type_name=".google.protobuf.Int32Value",
                label=FDP.LABEL_OPTIONAL)
    m.field.add(name="e", number=2, type=FDP.TYPE_MESSAGE, type_name=".w.W.Empty",
                label=FDP.LABEL_OPTIONAL)
    entry = m.nested_type.add(name="MEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=FDP.TYPE_STRING, label=FDP.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=FDP.TYPE_MESSAGE,
                    type_name=".google.protobuf.Int32Value", label=FDP.LABEL_OPTIONAL)
    m.field.add(name="m", number=3, type=FDP.TYPE_MESSAGE, type_name=".w.W.MEntry",
                label=FDP.LABEL_REPEATED)
    schema = pool_of(*_wkt_files(), fp)
    # i = {value: 0}, e = {}, m = {"k": <no value>}
    wire = bytes([0x0A, 0x02, 0x08, 0x00, 0x12, 0x00, 0x1A, 0x03, 0x0A, 0x01, 0x6B])
    rows, _ = decode_rows(schema, "w.W", [wire])
    assert rows == [{"i": {"value": None}, "m": [("k", {"value": None})]}]   # e: dropped, as Spark
    opts = ProtobufOptions(unwrap_wrappers=True, retain_empty_messages=True, emit_default_values=True)
    rows, _ = decode_rows(schema, "w.W", [wire, b""], opts)
    assert rows == [{"i": 0, "e": {"__dummy_field_in_empty_struct": None}, "m": [("k", 0)]},
                    {"i": None, "e": None, "m": []}]


def test_proto2_groups_are_structs_as_javas_message_type() -> None:
    fp = descriptor_pb2.FileDescriptorProto(name="g.proto", package="g", syntax="proto2")
    m = fp.message_type.add(name="G")
    grp = m.nested_type.add(name="Item")
    grp.field.add(name="n", number=3, type=FDP.TYPE_INT32, label=FDP.LABEL_OPTIONAL)
    m.field.add(name="item", number=2, type=FDP.TYPE_GROUP, type_name=".g.G.Item",
                label=FDP.LABEL_REPEATED)
    m.field.add(name="one", number=4, type=FDP.TYPE_GROUP, type_name=".g.G.Item",
                label=FDP.LABEL_OPTIONAL)
    schema = pool_of(fp)
    cls = message_class(schema.message("g.G"))
    msg = cls()
    msg.item.add(n=1)
    msg.item.add()
    msg.one.n = 5
    wire = msg.SerializeToString()
    assert arrow_type(schema.message("g.G")) == pa.struct([
        pa.field("item", pa.list_(pa.field("element", pa.struct([pa.field("n", pa.int32())]),
                                           nullable=False))),
        pa.field("one", pa.struct([pa.field("n", pa.int32())]))])
    rows, errors = decode_rows(schema, "g.G", [wire])
    assert errors == {} and rows[0] == expected(cls.FromString(wire)) == {
        "item": [{"n": 1}, {"n": None}], "one": {"n": 5}}


def test_rows_of_one_decode_run_each_their_own_program() -> None:
    from array import array

    from pyconsumer import records
    from pyconsumer.values.protobuf_decode import _assemble, _pin
    fp = descriptor_pb2.FileDescriptorProto(name="two.proto", package="two", syntax="proto3")
    for name, number in (("One", 1), ("Five", 5)):
        fp.message_type.add(name=name).field.add(name="a", number=number, type=FDP.TYPE_INT32,
                                                 label=FDP.LABEL_OPTIONAL)
    schema = pool_of(fp)
    one, five = (compile_program(schema.message(n)) for n in ("two.One", "two.Five"))
    values = pa.array([b"\x08\x07", b"\x28\x09", b"\x08\x07", b"\x28\x09"], pa.binary())
    slots = array("i", [0, 1, 1, 2]).tobytes()
    raw, errors = records.protobuf_decode(values, [_pin(one, records, False), _pin(five, records, False),
                                                   "a reason"], slots, None)
    # row 2 is One's bytes read by Five: field 1 unknown there, so a is unset
    assert _assemble(one, raw).to_pylist() == [{"a": 7}, {"a": 9}, {"a": None}, None]
    assert errors == [(3, "a reason")]



def test_the_decode_entries_refuse_bad_arguments_by_name() -> None:
    from pyconsumer import records
    from pyconsumer.values.avro import compile_decoder, parse_schema
    from pyconsumer.values.avro_decode import _pin as avro_pin
    from pyconsumer.values.protobuf_decode import _pin
    fp = descriptor_pb2.FileDescriptorProto(name="a.proto", package="a", syntax="proto3")
    fp.message_type.add(name="A").field.add(name="a", number=1, type=FDP.TYPE_INT32,
                                            label=FDP.LABEL_OPTIONAL)
    fp.message_type.add(name="B").field.add(name="b", number=1, type=FDP.TYPE_STRING,
                                            label=FDP.LABEL_OPTIONAL)
    schema = pool_of(fp)
    a, b = (_pin(compile_program(schema.message(n)), records, False) for n in ("a.A", "a.B"))
    avro = avro_pin(compile_decoder(parse_schema('"long"')), records)
    values = pa.array([b"\x08\x01", b"\x08\x02"], pa.binary())
    for decode, prog, other, skip_width in ((records.protobuf_decode, a, b, 4),
                                            (records.avro_decode, avro, None, 1)):
        name = decode.__name__
        with pytest.raises(ValueError, match=f"{name} needs at least one compiled program"):
            decode(values, ["only a reason"])
        with pytest.raises(TypeError, match="a program or a reason, got int"):
            decode(values, [prog, 5])
        with pytest.raises(TypeError, match=f"{name} takes a pa.BinaryArray"):
            decode(pa.array([1, 2], pa.int64()), [prog])
        with pytest.raises(ValueError, match="slots: one int32 per value"):
            decode(values, [prog], b"\x00" * 4)
        width = "int32" if skip_width == 4 else "uint8"
        with pytest.raises(ValueError, match=f"skips: one {width} per value"):
            decode(values, [prog], None, b"\x00" * (3 * skip_width))
        if other is not None:
            with pytest.raises(ValueError, match="must share one layout"):
                decode(values, [prog, other])


def test_upcast_widens_uint32_and_uint64_only_as_spark_does() -> None:
    fp = descriptor_pb2.FileDescriptorProto(name="u.proto", package="u", syntax="proto3")
    m = fp.message_type.add(name="U")
    for k, (n, t) in enumerate([("u32", FDP.TYPE_UINT32), ("f32", FDP.TYPE_FIXED32),
                                ("u64", FDP.TYPE_UINT64), ("f64", FDP.TYPE_FIXED64)], 1):
        m.field.add(name=n, number=k, type=t, label=FDP.LABEL_OPTIONAL)
    schema = pool_of(fp)
    opts = ProtobufOptions(upcast_unsigned_ints=True)
    assert arrow_type(schema.message("u.U"), opts) == pa.struct([
        pa.field("u32", pa.int64()), pa.field("f32", pa.int32()),
        pa.field("u64", pa.decimal128(20, 0)), pa.field("f64", pa.int64())])
    msg = message_class(schema.message("u.U"))(u32=(1 << 32) - 1, f32=(1 << 32) - 1,
                                               u64=(1 << 64) - 1, f64=(1 << 64) - 1)
    rows, _ = decode_rows(schema, "u.U", [msg.SerializeToString()], opts)
    assert rows[0] == {"u32": (1 << 32) - 1, "f32": -1, "u64": (1 << 64) - 1, "f64": -1}
