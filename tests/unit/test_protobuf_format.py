"""The protobuf format through TypedValues: values written by confluent-kafka's ProtobufSerializer
(Confluent framing with message indexes, or the schema in the __value_schema_id header) into the
in-process registry, read back by the registry's latest schema or a descriptor set file; the
three modes with topic, partition and offset; a message written as another message; an unknown
id (asked once); a registry outage (an error, never null rows); the settings refused by name;
and the framing and body fuzz (no crash, every bad row a reason naming its byte)."""
from __future__ import annotations

import random
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("google.protobuf")
pytest.importorskip("grpc_tools")
cksr = pytest.importorskip("confluent_kafka.schema_registry")

from confluent_kafka.schema_registry import header_schema_id_serializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import unknown_fields  # noqa: E402

from pyconsumer.errors import ConfigurationError  # noqa: E402
from pyconsumer.testing import FakeSchemaRegistry  # noqa: E402
from pyconsumer.values import MalformedValueError, TypedValues  # noqa: E402
from pyconsumer.values.protobuf import ProtobufOptions, compile_program, schema_from_file  # noqa: E402
from pyconsumer.values.protobuf_decode import decode_protobuf  # noqa: E402
from pyconsumer.values.registry import SchemaRegistryClient, SchemaRegistryUnavailableError  # noqa: E402
from tests.unit.protobuf_oracle import expected, message_class  # noqa: E402
from tests.unit.test_values_typed import Row, batch  # noqa: E402

PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string customer = 2;
  repeated Line lines = 3;
  google.protobuf.Timestamp at = 4;
  map<string, int32> tags = 5;
  Status status = 6;
  message Line { string sku = 1; uint32 qty = 2; }
  enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
}
message Refund { int64 order_id = 1; double amount = 2; }
"""


@pytest.fixture(scope="module")
def descriptor_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """shop.proto compiled by protoc (grpcio-tools) into a descriptor set, as a user makes it."""
    d = tmp_path_factory.mktemp("proto")
    (d / "shop.proto").write_text(PROTO)
    import grpc_tools
    wkt = Path(grpc_tools.__file__).parent / "_proto"
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{d}", f"-I{wkt}",
                    "--include_imports", f"--descriptor_set_out={d / 'shop.pb'}", "shop.proto"],
                   check=True, cwd=d)
    return d / "shop.pb"


@pytest.fixture(scope="module")
def classes(descriptor_file: Path) -> dict[str, Any]:
    schema = schema_from_file(str(descriptor_file))
    return {n: message_class(schema.message(f"shop.{n}"))
            for n in ("Order", "Refund", "Order.Line")}


@pytest.fixture
def registry() -> Iterator[FakeSchemaRegistry]:
    with FakeSchemaRegistry() as reg:
        yield reg


def client(reg: FakeSchemaRegistry, **kw: Any) -> SchemaRegistryClient:
    return SchemaRegistryClient(reg.url, **{"retries": 0, "backoff_s": 0.0, **kw})


def serializer(reg: FakeSchemaRegistry, cls: Any, **conf: Any) -> ProtobufSerializer:
    sr = cksr.SchemaRegistryClient({"url": reg.url})
    return ProtobufSerializer(cls, sr, {"use.deprecated.format": False, **conf})


def orders(classes: dict[str, Any]) -> list[Any]:
    Order = classes["Order"]
    a = Order(id=7, customer="ana", status=1)
    a.lines.add(sku="x", qty=2)
    a.lines.add(sku="y", qty=4_000_000_000)
    a.at.seconds, a.at.nanos = 1_700_000_000, 123_456_789
    a.tags["vip"] = 1
    b = Order(id=8)                       # every other field unset: nulls, an empty list and map
    c = Order(customer="", status=0)      # defaults on the wire or not: null as Spark gives them
    return [a, b, c]


def test_confluent_framing_from_the_registry_matches_the_runtime(
        registry: FakeSchemaRegistry, classes: dict[str, Any]) -> None:
    ser = serializer(registry, classes["Order"])
    ctx = SerializationContext("t", MessageField.VALUE)
    msgs = orders(classes)
    values = [ser(m, ctx) for m in msgs]
    assert values[0][0] == 0 and values[0][5] == 0       # magic, id, then index array [0] as 0
    plan = TypedValues.from_settings({"value.format": "protobuf",
                                      "value.protobuf.message": "shop.Order"},
                                     registry=client(registry))
    assert plan is not None
    data: list[Row] = [(i, None, v, []) for i, v in enumerate(values)] + [(3, None, None, [])]
    out = plan.apply(batch(data))
    got = out.column("value").to_pylist()
    assert got[:3] == [expected(classes["Order"].FromString(v[6:])) for v in values]
    assert got[0]["lines"] == [{"sku": "x", "qty": 2}, {"sku": "y", "qty": 4_000_000_000 - (1 << 32)}]
    assert got[1] == {"id": 8, "customer": None, "lines": [], "at": None, "tags": [],
                      "status": None}
    assert got[3] is None
    assert out.column("_corrupt_record").to_pylist() == [None] * 4
    assert plan.snapshot().schema_ids == {1}


def test_a_nested_message_by_its_index_array_and_another_message_is_a_bad_row(
        registry: FakeSchemaRegistry, classes: dict[str, Any], descriptor_file: Path) -> None:
    ctx = SerializationContext("t", MessageField.VALUE)
    line = serializer(registry, classes["Order.Line"])(classes["Order.Line"](sku="s", qty=1), ctx)
    refund = serializer(registry, classes["Refund"], **{"auto.register.schemas": True})(
        classes["Refund"](order_id=1, amount=2.5), ctx)
    assert line[5:7] == b"\x04\x00" and refund[5:7] == b"\x02\x02"    # [0, 0] and [1]
    plan = TypedValues.from_settings({"value.format": "protobuf",
                                      "value.protobuf.message": "shop.Order.Line",
                                      "value.protobuf.descriptor.file": str(descriptor_file)},
                                     registry=client(registry))
    assert plan is not None
    out = plan.apply(batch([(0, None, line, []), (1, None, refund, [])]))
    assert out.column("value").to_pylist() == [{"sku": "s", "qty": 1}, None]
    assert out.column("_corrupt_record").to_pylist() == [None, refund]
    with pytest.raises(MalformedValueError, match=r"^topic t partition 3 offset 1: .*was written as "
                       r"shop\.Refund, not shop\.Order\.Line"):
        TypedValues.from_settings({"value.format": "protobuf", "bad.records.mode": "FAILFAST",
                                   "value.protobuf.message": "shop.Order.Line",
                                   "value.protobuf.descriptor.file": str(descriptor_file)},
                                  registry=client(registry)).apply(
            batch([(0, None, line, []), (1, None, refund, [])]))


def test_the_schema_in_a_header_with_a_bare_value(
        registry: FakeSchemaRegistry, classes: dict[str, Any]) -> None:
    headers: list[tuple[str, bytes]] = []
    ctx = SerializationContext("t", MessageField.VALUE, headers)
    ser = serializer(registry, classes["Order"], **{"schema.id.serializer": header_schema_id_serializer})
    msg = orders(classes)[0]
    value = ser(msg, ctx)
    assert value == msg.SerializeToString() and headers[0][0] == "__value_schema_id"
    plan = TypedValues.from_settings({"value.format": "protobuf"}, registry=client(registry))
    assert plan is not None
    out = plan.apply(batch([(0, None, value, headers)], headers=True))
    assert out.column("value").to_pylist() == [expected(classes["Order"].FromString(value))]


def test_bare_messages_from_a_descriptor_file_in_every_mode(
        classes: dict[str, Any], descriptor_file: Path) -> None:
    good = orders(classes)[0].SerializeToString()
    bad = good[:5]                                    # cut inside a field
    data: list[Row] = [(10, None, good, []), (11, None, bad, []), (12, None, None, [])]
    settings = {"value.format": "protobuf", "value.protobuf.framing": "none",
                "value.protobuf.descriptor.file": str(descriptor_file)}
    out = TypedValues.from_settings(settings).apply(batch(data))  # type: ignore[union-attr]
    assert out.column("value").to_pylist()[1:] == [None, None]
    assert out.column("_corrupt_record").to_pylist() == [None, bad, None]
    plan = TypedValues.from_settings({**settings, "bad.records.mode": "DROPMALFORMED"})
    assert plan is not None
    out = plan.apply(batch(data))
    assert out.column("offset").to_pylist() == [10, 12]
    assert plan.snapshot().dropped == 1
    with pytest.raises(MalformedValueError, match=r"^topic t partition 3 offset 11: truncated value "
                                                  r"at byte \d+"):
        TypedValues.from_settings({**settings, "bad.records.mode": "FAILFAST"}).apply(  # type: ignore[union-attr]
            batch(data))


def test_enums_as_ints_and_emit_default_values(classes: dict[str, Any], descriptor_file: Path) -> None:
    c = orders(classes)[2].SerializeToString()
    plan = TypedValues.from_settings({
        "value.format": "protobuf", "value.protobuf.framing": "none",
        "value.protobuf.descriptor.file": str(descriptor_file),
        "value.protobuf.enums.as.ints": True, "value.protobuf.emit.default.values": "true"})
    assert plan is not None
    got = plan.apply(batch([(0, None, c, [])])).column("value").to_pylist()[0]
    assert got == {"id": 0, "customer": "", "lines": [], "at": None, "tags": [], "status": 0}
    assert got == expected(classes["Order"].FromString(c),
                           ProtobufOptions(enums_as_ints=True, emit_default_values=True))


def test_an_unknown_id_is_a_bad_row_asked_once_and_an_outage_raises(
        registry: FakeSchemaRegistry, classes: dict[str, Any]) -> None:
    ser = serializer(registry, classes["Order"])
    good = ser(orders(classes)[0], SerializationContext("t", MessageField.VALUE))
    unknown = b"\x00" + struct.pack(">I", 999) + good[5:]
    plan = TypedValues.from_settings({"value.format": "protobuf"}, registry=client(registry))
    assert plan is not None
    for _ in range(3):
        out = plan.apply(batch([(5, None, unknown, [])]))
        assert out.column("value").to_pylist() == [None]
        assert out.column("_corrupt_record").to_pylist() == [unknown]
    assert registry.count("GET", "/schemas/ids/999") == 1         # the negative cache
    fresh = TypedValues.from_settings({"value.format": "protobuf"},
                                      registry=client(registry, retries=1, timeout_s=2.0))
    assert fresh is not None
    registry.down()                                  # the reader's schema cannot be fetched
    with pytest.raises(SchemaRegistryUnavailableError):
        fresh.apply(batch([(0, None, good, [])]))
    assert fresh.snapshot().decoded == 0
    registry.up()
    assert fresh.apply(batch([(0, None, good, [])])).column("value").to_pylist()[0]["id"] == 7


def test_settings_are_refused_by_name(descriptor_file: Path) -> None:
    cases = [
        ({"value.format": "json", "value.protobuf.message": "a.B"},
         "value.protobuf.message is set but value.format is json"),
        ({"value.format": "protobuf", "value.protobuf.framing": "none"},
         "value.protobuf.framing=none needs the message's descriptors"),
        ({"value.format": "protobuf", "value.protobuf.descriptor.file": str(descriptor_file),
          "value.protobuf.message": "shop.Nope"}, "no message 'shop.Nope'"),
        ({"value.format": "protobuf", "value.protobuf.descriptor.file": "/no/such.pb"},
         "value.protobuf.descriptor.file: cannot read the descriptor file /no/such.pb"),
        ({"value.format": "protobuf", "value.protobuf.descriptor.file": str(descriptor_file),
          "value.protobuf.recursive.fields.max.depth": "0"},
         "recursive.fields.max.depth must be -1 or 1..10"),
        ({"value.format": "protobuf", "value.schema": "message {"}, "does not compile"),
    ]
    for settings, words in cases:
        with pytest.raises(ConfigurationError, match=words.replace(".", r"\.").replace("(", r"\(")):
            TypedValues.from_settings(settings)


# --------------------------------------------------------------------------- fuzz

def test_framing_and_body_fuzz_never_crash_and_name_the_byte(
        classes: dict[str, Any], descriptor_file: Path) -> None:
    """Mutated framed values: each row decodes exactly as the runtime parses its body, or is a
    bad row with a reason; a reason about the body names a byte inside the value."""
    schema = schema_from_file(str(descriptor_file))
    prog = compile_program(schema.message("shop.Order"))
    Order = classes["Order"]
    base = [b"\x00\x00\x00\x00\x01\x00" + m.SerializeToString() for m in orders(classes)]
    rnd = random.Random(39)
    values: list[bytes] = []
    for _ in range(3000):
        v = bytearray(rnd.choice(base))
        lo = 6 if rnd.random() < 0.8 else 0          # mostly the body, sometimes the prefix
        for _ in range(rnd.randint(1, 4)):
            op = rnd.randrange(4)
            if op == 0 and len(v) > lo:
                v[rnd.randrange(lo, len(v))] = rnd.randrange(256)
            elif op == 1 and len(v) > lo:
                del v[rnd.randrange(lo, len(v)):]
            elif op == 2:
                v.insert(rnd.randrange(min(lo, len(v)), len(v) + 1), rnd.randrange(256))
            else:
                v += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 6)))
        values.append(bytes(v))
    d = decode_protobuf(pa.array(values, pa.binary()), prog, framing="confluent")
    rows = d.array.to_pylist()
    for i, v in enumerate(values):
        if i in d.errors:
            assert rows[i] is None
            reason = d.errors[i]
            at = [int(w) for w in reason.replace(",", " ").split() if w.isdigit()]
            if " at byte " in reason:
                pos = int(reason.rsplit(" at byte ", 1)[1].split()[0])
                assert 0 <= pos <= len(v), (reason, v.hex())
            assert at or "magic" in reason or "index" in reason or "prefix" in reason, reason
            continue
        # decoded: the prefix was readable and the runtime parses the rest the same way
        skip = 5 + _index_length(v[5:])
        parsed = Order.FromString(v[skip:])
        want, got = expected(parsed), dict(rows[i])
        if len(unknown_fields.UnknownFieldSet(parsed)):
            # the runtime (upb) moves a map entry holding an unknown field to the message's
            # unknown fields; Java's DynamicMessage, which Spark reads with, keeps the entry:
            # the decoder does as Spark, so maps are not compared then
            want.pop("tags")
            got.pop("tags")
        assert got == want, (i, v.hex())


def _index_length(b: bytes) -> int:
    """Bytes of a message-index array (the test's own reading: zig-zag varints)."""
    pos, count = 0, None
    vals: list[int] = []
    while True:
        shift = value = 0
        while True:
            byte = b[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        value = (value >> 1) ^ -(value & 1)
        if count is None:
            count = value
            if count == 0:
                return pos
        else:
            vals.append(value)
            if len(vals) == count:
                return pos


def test_decode_arrow_with_protobuf_keys_and_values(
        classes: dict[str, Any], descriptor_file: Path) -> None:
    from pyconsumer.testing._encode import aio_v2
    from pyconsumer.values import decode_arrow
    msgs = orders(classes)
    line = classes["Order.Line"](sku="k", qty=3).SerializeToString()
    rows: Any = [(0, 1_700_000_000_000, line, b"\x00\x00\x00\x00\x01\x00" + msgs[0].SerializeToString(), []),
                 (1, 1_700_000_000_001, b"\xff", b"\x00\x00\x00\x00\x01\x00" + msgs[1].SerializeToString(), [])]
    out = decode_arrow(aio_v2(rows, base_offset=7), "t", 0, value_format="protobuf",
                       key_format="protobuf", key_framing="none",
                       value_options={"protobuf.descriptor.file": str(descriptor_file)},
                       key_options={"protobuf.descriptor.file": str(descriptor_file),
                                    "protobuf.message": "shop.Order.Line"})
    assert out.column("key").to_pylist() == [{"sku": "k", "qty": 3}, None]
    assert out.column("_corrupt_record_key").to_pylist() == [None, b"\xff"]
    assert out.column("value").to_pylist() == [expected(m) for m in msgs[:2]]
    assert out.column("offset").to_pylist() == [7, 8]


def test_the_frame_scan_finds_each_distinct_prefix_and_each_bad_one() -> None:
    from array import array

    from pyconsumer import records
    a = b"\x00\x00\x00\x00\x05\x00"                 # id 5, [0]
    b = b"\x00\x00\x00\x00\x06\x04\x02\x00"         # id 6, [1, 0]
    g = b"\x01" + bytes(range(16)) + b"\x02\x02"    # a GUID, [1]
    values = [a + b"x", b + b"y", a + b"z", a, None, b"\x02abcdef", b"\x00\x00", a[:5] + b"\x04",
              a[:5] + b"\x03\x00", b"bare", g + b"q"]
    headers = [None] * 9 + [b, None]
    slots_b, skips_b, keys = records.protobuf_frame_scan(pa.array(values, pa.binary()),
                                                         pa.array(headers, pa.binary()))
    slots, skips = array("i"), array("i")
    slots.frombytes(slots_b)
    skips.frombytes(skips_b)
    assert keys == [a, b, g]
    assert list(slots) == [0, 1, 0, 0, -1, -12, -11, -13, -13, 1, 2]
    assert list(skips)[:4] == [6, 8, 6, 6] and skips[9] == 0 and skips[10] == 19
    # the why of each bad one: the magic byte, the length, truncated (1), a negative count (2)
    assert (skips[5], skips[6], skips[7], skips[8]) == (2, 2, 1, 2)


def test_without_a_message_named_the_records_name_it(
        registry: FakeSchemaRegistry, classes: dict[str, Any]) -> None:
    """A file of two messages: the records written as its second (indexes [1]) are read as it;
    an empty batch before any record has the first one's type, not fixed."""
    ctx = SerializationContext("t", MessageField.VALUE)
    refund = serializer(registry, classes["Refund"])(classes["Refund"](order_id=4, amount=1.5), ctx)
    plan = TypedValues.from_settings({"value.format": "protobuf"}, registry=client(registry))
    assert plan is not None
    assert str(plan.column_type("value", "t")).startswith("struct<id: int64, customer: string")
    out = plan.apply(batch([(0, None, refund, [])]))
    assert out.column("value").to_pylist() == [{"order_id": 4, "amount": 1.5}]
    assert str(plan.column_type("value", "t")) == "struct<order_id: int64, amount: double>"
    order = serializer(registry, classes["Order"])(orders(classes)[1], ctx)
    out = plan.apply(batch([(1, None, order, [])]))
    assert out.column("value").to_pylist() == [None]          # the message stays fixed
    strict = TypedValues.from_settings({"value.format": "protobuf", "bad.records.mode": "FAILFAST"},
                                       registry=client(registry))
    assert strict is not None
    strict.apply(batch([(0, None, refund, [])]))
    with pytest.raises(MalformedValueError, match=r"offset 1: schema id \d+ with message indexes "
                       r"\[0\] was written as shop\.Order, not shop\.Refund .*value\.protobuf\.message"):
        strict.apply(batch([(1, None, order, [])]))


def test_the_consumer_settings_type_keys_and_values(
        registry: FakeSchemaRegistry, classes: dict[str, Any], descriptor_file: Path) -> None:
    """KafkaConsumer's value.protobuf.* / key.protobuf.* settings, on the in-process fake cluster:
    registry-read values and descriptor-file keys, each record exactly, metrics of schema ids."""
    import time as _time

    from pyconsumer import KafkaConsumer, TopicPartition
    from pyconsumer.testing import FakeCluster
    ser = serializer(registry, classes["Order"])
    ctx = SerializationContext("pt", MessageField.VALUE)
    msgs = orders(classes)
    Line = classes["Order.Line"]
    cluster = FakeCluster(1)
    try:
        cluster.create_topic("pt", 1)
        tp = TopicPartition("pt", 0)
        cluster.produce(tp, [(Line(sku=f"s{i}", qty=i).SerializeToString(), ser(m, ctx), [],
                              1_700_000_000_000 + i) for i, m in enumerate(msgs)]
                        + [(b"\xff", b"\x07", [], 1_700_000_000_009)])
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                           fetch_max_wait_ms=50, schema_registry_url=registry.url,
                           value_format="protobuf", value_protobuf_message="shop.Order",
                           key_format="protobuf", key_protobuf_framing="none",
                           key_protobuf_descriptor_file=str(descriptor_file),
                           key_protobuf_message="shop.Order.Line",
                           key_protobuf_emit_default_values=True) as c:
            c.assign([tp])
            got: list[pa.RecordBatch] = []
            deadline = _time.monotonic() + 10
            while sum(b.num_rows for b in got) < 4:
                assert _time.monotonic() < deadline
                got.append(c.poll_arrow(200))
            table = pa.Table.from_batches([b for b in got if b.num_rows])
            assert table.column("offset").to_pylist() == [0, 1, 2, 3]
            assert table.column("key").to_pylist() == [
                {"sku": f"s{i}", "qty": i} for i in range(3)] + [None]
            assert table.column("value").to_pylist() == [expected(m) for m in msgs] + [None]
            assert table.column("_corrupt_record").to_pylist() == [None] * 3 + [b"\x07"]
            assert table.column("_corrupt_record_key").to_pylist() == [None] * 3 + [b"\xff"]
            from pyconsumer.metrics import find
            assert find(c.metrics(), "schema-ids-seen") == 1.0
    finally:
        cluster.close()
