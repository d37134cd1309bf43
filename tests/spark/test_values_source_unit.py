"""The typed-value options of the Spark source, without a Spark session or a broker: option
names and their checks, the Avro readers the driver pins per topic (FakeSchemaRegistry), the
DataFrame schema made from them, and what travels to executors."""
from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.options import known_option_names, parse_options
from pyconsumer.spark.planning import OffsetRange
from pyconsumer.spark.values import PINS_METADATA_KEY, PinnedSchema, ReaderPins
from pyconsumer.testing import FakeSchemaRegistry
from pyconsumer.values.modes import Mode
from pyconsumer.values.registry import SchemaRegistryUnavailableError
from pyconsumer.values.typed import Format

pytest.importorskip("pyspark")

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "orders"}

V1 = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                 "fields": [{"name": "id", "type": "long"}]})
V2 = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                 "fields": [{"name": "id", "type": "long"},
                            {"name": "qty", "type": "int", "default": 1}]})
OTHER = json.dumps({"type": "record", "name": "Pay", "namespace": "shop",
                    "fields": [{"name": "cents", "type": "long"}]})


@pytest.fixture
def registry() -> Iterator[FakeSchemaRegistry]:
    with FakeSchemaRegistry() as reg:
        yield reg


def _values(**options: str) -> Any:
    parsed = parse_options({**BASE, **options}, streaming=False).values
    assert parsed is not None
    return parsed


def test_option_names_are_case_insensitive_and_map_onto_the_plan() -> None:
    v = _values(VALUEFORMAT="Json", valueschema="a INT", KeyFormat="STRING", MODE="dropMalformed")
    assert (v.value.format, v.value.schema, v.key.format, v.mode) == (
        Format.JSON, "a INT", Format.STRING, Mode.DROPMALFORMED)
    assert v.corrupt_column is None                       # PERMISSIVE only
    plan = v.plan()
    assert plan.value.format is Format.JSON and plan.key.format is Format.STRING
    assert v.plan() is plan                               # one plan per process and options
    assert parse_options(BASE, streaming=True).values is None
    assert {"valueFormat", "keyFormat", "mode", "columnNameOfCorruptRecord"} <= set(known_option_names())


@pytest.mark.parametrize(("options", "message"), [
    ({"valueFormat": "thrift"}, "Option 'valueFormat': must be one of binary, string, json, avro, protobuf, got 'thrift'"),
    ({"valueFormat": "protobuf"}, "Option 'schema.registry.url': valueFormat=protobuf without valueProtobufDescriptorFile or valueSchema reads the message's schema from a Schema Registry"),
    ({"valueFormat": "protobuf", "valueProtobufFraming": "none"}, "Option 'valueProtobufDescriptorFile': valueFormat=protobuf with valueProtobufFraming=none needs the message's descriptors"),
    ({"valueFormat": "avro", "valueProtobufMessage": "a.B"}, "Option 'valueProtobufMessage': applies to valueFormat=protobuf only, not avro"),
    ({"valueFormat": "json", "valueSchema": "a INT", "valueProtobufFraming": "none"}, "Option 'valueProtobufFraming': applies to valueFormat=protobuf only"),
    ({"valueFormat": "protobuf", "valueSchema": "message {"}, "Option 'valueSchema': "),
    ({"valueFormat": "avro", "enums.as.ints": "true", "schema.registry.url": "http://h:1"}, "Option 'enums.as.ints': applies to valueFormat=protobuf or keyFormat=protobuf only"),
    ({"valueFormat": "protobuf", "convert.any.fields.to.json": "true"}, "Option 'convert.any.fields.to.json': is not supported"),
    ({"valueFormat": "protobuf", "valueProtobufDescriptorFile": "/no/such.pb"}, "Option 'valueProtobufDescriptorFile': cannot read the descriptor file /no/such.pb: No such file or directory"),
    ({"keyFormat": ""}, "Option 'keyFormat': must be one of"),
    ({"valueFormat": "json", "valueSchema": "  "}, "Option 'valueSchema': is empty"),
    ({"valueFormat": "json", "valueSchema": '{"type": "record"}'}, "Option 'valueSchema': a JSON schema here is a StructType's JSON"),
    ({"valueFormat": "string", "valueSchema": "a INT"}, "Option 'valueSchema': applies to valueFormat json, avro or protobuf, not string"),
    ({"valueFormat": "avro", "valueAvroFraming": "none"}, "Option 'valueSchema': valueFormat=avro with valueAvroFraming=none needs"),
    ({"valueFormat": "avro", "valueAvroFraming": "magic", "schema.registry.url": "http://h:1"}, "Option 'valueAvroFraming': must be confluent or none, got 'magic'"),
    ({"valueFormat": "json", "valueSchema": "a INT", "valueAvroFraming": "none"}, "Option 'valueAvroFraming': applies to valueFormat=avro or protobuf only"),
    ({"keyFormat": "string", "keySubject": "s"}, "Option 'keySubject': applies to keyFormat=json, avro or protobuf only, not string"),
    ({"valueFormat": "avro", "valueSchema": "[1, 2]", "valueAvroFraming": "none"}, "Option 'valueSchema': is not a usable Avro schema"),
    ({"valueFormat": "avro", "schema.registry.url": "http://h:1", "valueSubjectNameStrategy": "Nope"}, "Option 'valueSubjectNameStrategy': unknown subject name strategy 'Nope'"),
    ({"keyFormat": "avro", "schema.registry.url": "http://h:1", "keySubjectNameStrategy": "TopicRecordNameStrategy"}, "Option 'keySubjectNameStrategy': TopicRecordNameStrategy names the subject after the record"),
    ({"valueFormat": "avro", "schema.registry.url": "http://h:1", "schema.registry.timeout": "soon"}, "Option 'schema.registry.timeout': schema registry setting 'timeout' is a number"),
    ({"valueFormat": "avro", "schema.registry.url": "http://h:1", "schema.registry.basic.auth.user.info": "nocolon"}, "Option 'schema.registry.*': schema registry basic auth user info is 'user:password'"),
    ({"valueFormat": "avro", "schema.registry.url": "kafka://h:1"}, "Option 'schema.registry.url': a schema registry URL is http(s)"),
    ({"schema.registry.url": "http://h:1"}, "Option 'schema.registry.url': a schema registry is only used with valueFormat=json or "
     "valueFormat=avro or valueFormat=protobuf or keyFormat=json or keyFormat=avro or keyFormat=protobuf"),
    ({"valueFormat": "string", "mode": "LENIENT"}, "Option 'mode': must be PERMISSIVE, DROPMALFORMED or FAILFAST (any case), got 'LENIENT'"),
    ({"columnNameOfCorruptRecord": "bad"}, "Option 'columnNameOfCorruptRecord': applies only with valueFormat or keyFormat"),
    ({"valueFormat": "string", "columnNameOfCorruptRecord": ""}, "Option 'columnNameOfCorruptRecord': is empty"),
    ({"valueFormat": "string", "mode": "FAILFAST", "columnNameOfCorruptRecord": "raw"}, "Option 'columnNameOfCorruptRecord': applies to mode PERMISSIVE only, not FAILFAST"),
    ({"valueFormat": "string", "columnNameOfCorruptRecord": "timestamp"}, "the corrupt record column 'timestamp' would replace"),
    ({"valueFormat": "string", "columnNameOfCorruptRecord": "headers"}, "the corrupt record column 'headers' would replace"),
])
def test_bad_options_name_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_options({**BASE, **options}, streaming=False)
    assert message in str(info.value)


def test_readers_are_pinned_per_topic_and_travel_as_text(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", V1)
    registry.register("orders-value", V2)
    registry.register("pay-value", OTHER)
    registry.register("orders-key", json.dumps("string"))
    registry.register("pay-key", json.dumps("long"))
    v = _values(valueFormat="avro", keyFormat="avro", **{"schema.registry.url": registry.url})
    pins = ReaderPins(v)
    got = pins.pin_all(["orders", "pay"])
    assert {t: {c: (p.subject, p.version) for c, p in cols.items()} for t, cols in got.items()} == {
        "orders": {"value": ("orders-value", 2), "key": ("orders-key", 1)},
        "pay": {"value": ("pay-value", 1), "key": ("pay-key", 1)}}
    assert got["orders"]["value"].text == V2
    assert pins.for_topic("orders") is got["orders"]          # asked once per topic
    # a version registered later does not move a pinned topic
    registry.register("orders-value", json.dumps({**json.loads(V2), "fields": [
        *json.loads(V2)["fields"], {"name": "x", "type": "string", "default": ""}]}))
    assert pins.for_topic("orders")["value"].version == 2
    meta = {c: pins.to_metadata(c) for c in ("key", "value")}
    assert ReaderPins.from_metadata(meta) == got
    plan = v.plan(got["orders"])
    assert str(plan.column_type("value", "orders")) == "struct<id: int64, qty: int32>"
    assert str(plan.column_type("key", "orders")) == "string"


def test_a_subject_option_pins_one_reader_for_every_topic(registry: FakeSchemaRegistry) -> None:
    registry.register("shop.Order", V1)
    v = _values(valueFormat="avro", valueSubject="shop.Order",
                valueSubjectNameStrategy="RecordNameStrategy", **{"schema.registry.url": registry.url})
    pins = ReaderPins(v).pin_all(["a", "b"])
    assert pins["a"]["value"] == pins["b"]["value"]
    assert pins["a"]["value"].subject == "shop.Order"


def test_a_new_topic_with_another_type_fails_naming_it(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", V1)
    registry.register("pay-value", OTHER)
    v = _values(valueFormat="avro", **{"schema.registry.url": registry.url})
    pins = ReaderPins(v, same_type=lambda column, t: str(t) == "struct<id: int64>")
    pins.for_topic("orders")
    with pytest.raises(ConfigurationError, match=r"topic 'pay': the latest schema of subject "
                                                 r"'pay-value' \(version 1\) gives the value type"):
        pins.for_topic("pay")


def test_a_registry_that_is_down_is_an_error_not_null_rows(registry: FakeSchemaRegistry) -> None:
    v = _values(valueFormat="avro", **{"schema.registry.url": registry.url,
                                       "schema.registry.max.retries": "0"})
    registry.down()
    with pytest.raises(SchemaRegistryUnavailableError):
        ReaderPins(v).for_topic("orders")


def test_referenced_schemas_are_pinned_with_their_references(registry: FakeSchemaRegistry) -> None:
    from pyconsumer.values.registry import SchemaRegistryClient

    client = SchemaRegistryClient(registry.url)
    client.register("money", json.dumps({"type": "record", "name": "Money", "namespace": "shop",
                                         "fields": [{"name": "cents", "type": "long"}]}))
    client.register("orders-value", json.dumps({
        "type": "record", "name": "Order", "namespace": "shop",
        "fields": [{"name": "total", "type": "shop.Money"}]}), references=(("shop.Money", "money", 1),))
    v = _values(valueFormat="avro", **{"schema.registry.url": registry.url})
    pin = ReaderPins(v).for_topic("orders")["value"]
    assert len(pin.references) == 1
    again = PinnedSchema.from_json(json.loads(json.dumps(pin.to_json())))
    assert str(v.plan({"value": again}).column_type("value", "orders")) == \
        "struct<total: struct<cents: int64>>"


def test_a_json_schema_is_pinned_with_named_references_and_a_given_ddl_wins(
        registry: FakeSchemaRegistry) -> None:
    from pyconsumer.values.registry import SchemaRegistryClient

    client = SchemaRegistryClient(registry.url)
    client.register("money", json.dumps({"type": "object", "properties": {"cents": {"type": "integer"}}}),
                    schema_type="JSON")
    client.register("orders-value", json.dumps({
        "type": "object", "properties": {"id": {"type": "integer"}, "total": {"$ref": "money.json"}},
        "required": ["id"]}), schema_type="JSON", references=(("money.json", "money", 1),))
    v = _values(valueFormat="json", **{"schema.registry.url": registry.url})
    assert v.needs_pins
    pin = ReaderPins(v).for_topic("orders")["value"]
    assert [name for name, _ in pin.references] == ["money.json"]
    again = PinnedSchema.from_json(json.loads(json.dumps(pin.to_json())))
    assert again == pin
    assert str(v.plan({"value": again}).column_type("value", "orders")) == \
        "struct<id: int64, total: struct<cents: int64>>"
    # an Avro subject is not a JSON Schema
    registry.register("pay-value", V1)
    with pytest.raises(ConfigurationError, match=r"the latest schema of subject 'pay-value' \(for "
                                                 r"topic 'pay''s value\) is a AVRO schema, not a JSON Schema"):
        ReaderPins(v).for_topic("pay")
    given = _values(valueFormat="json", valueSchema="id BIGINT", **{"schema.registry.url": registry.url})
    assert not given.needs_pins
    # without a registry or a schema, both ways are named
    with pytest.raises(ConfigurationError) as e:
        _values(valueFormat="json")
    assert str(e.value) == ("Option 'valueSchema': valueFormat=json needs valueSchema (a Spark DDL "
                            "string, or a StructType's JSON), or schema.registry.url to read the subject's "
                            "JSON Schema")


def test_typed_schema_and_what_travels_to_executors(registry: FakeSchemaRegistry) -> None:
    from pyspark.sql.types import StructType

    from pyconsumer.spark.source import KafkaInputPartition, TypedRead, typed_schema

    registry.register("orders-value", V2)
    registry.register("pay-value", OTHER)
    v = _values(valueFormat="avro", keyFormat="string", **{"schema.registry.url": registry.url})
    schema = typed_schema(v, True, ["orders"])
    assert schema.simpleString() == (
        "struct<key:string,value:struct<id:bigint,qty:int>,topic:string,partition:int,"
        "offset:bigint,timestamp:timestamp,timestampType:int,"
        "headers:array<struct<key:string,value:binary>>,_corrupt_record:binary,"
        "_corrupt_record_key:binary>")
    assert all(f.nullable for f in schema["value"].dataType.fields)
    # the pins ride in the value field's metadata, through Spark's JSON form of the schema
    back = StructType.fromJson(json.loads(schema.json()))
    assert json.loads(back["value"].metadata[PINS_METADATA_KEY])["orders"]["version"] == 1
    with pytest.raises(ConfigurationError, match="topics 'orders' and 'pay' have different value"):
        typed_schema(v, False, ["orders", "pay"])
    with pytest.raises(ConfigurationError, match="no topic matches the subscription"):
        typed_schema(v, False, [])

    read = TypedRead(v, back)
    part = read.partition(OffsetRange("orders", 0, 0, 10))
    assert part.pins["value"].text == V2
    # a topic met later, of another type, fails on the driver naming it
    with pytest.raises(ConfigurationError, match="topic 'pay'"):
        read.partition(OffsetRange("pay", 0, 0, 10))
    shipped = pickle.loads(pickle.dumps(read))
    assert shipped.pins is None and shipped.target == read.target
    task = pickle.loads(pickle.dumps(part))
    assert isinstance(task, KafkaInputPartition) and task.pins == part.pins


def test_json_schema_is_nullable_throughout_as_from_json_declares_it() -> None:
    from pyconsumer.spark.source import typed_schema

    v = _values(valueFormat="json", valueSchema="a INT NOT NULL, b ARRAY<STRUCT<c: STRING NOT NULL>>")
    schema = typed_schema(v, False, [])
    assert schema["value"].dataType.simpleString() == "struct<a:int,b:array<struct<c:string>>>"
    assert schema["value"].dataType.fields[0].nullable
    assert schema["value"].dataType["b"].dataType.containsNull
    assert schema["value"].dataType["b"].dataType.elementType["c"].nullable
    assert not schema["value"].metadata


PROTO_V1 = 'syntax = "proto3"; package shop; message Order { int64 id = 1; }'
PROTO_V2 = ('syntax = "proto3"; package shop; import "dep.proto"; '
            'message Order { int64 id = 1; dep.Money total = 2; }')
PROTO_DEP = 'syntax = "proto3"; package dep; message Money { int64 cents = 1; string ccy = 2; }'


def test_a_protobuf_reader_is_pinned_with_its_references_and_from_protobufs_options_apply(
        registry: FakeSchemaRegistry) -> None:
    pytest.importorskip("grpc_tools")
    registry.register("orders-value", PROTO_V1, "PROTOBUF")
    registry.register("dep.proto", PROTO_DEP, "PROTOBUF")
    registry.register("orders-value", PROTO_V2, "PROTOBUF",
                      references=({"name": "dep.proto", "subject": "dep.proto", "version": 1},))
    v = _values(valueFormat="protobuf", valueProtobufMessage="shop.Order",
                **{"schema.registry.url": registry.url, "emit.default.values": "true"})
    assert v.value.options == (("protobuf.emit.default.values", "true"),
                               ("protobuf.message", "shop.Order"))
    pins = ReaderPins(v)
    pin = pins.for_topic("orders")["value"]
    assert (pin.subject, pin.version, pin.references) == ("orders-value", 2, (("dep.proto", PROTO_DEP),))
    registry.register("orders-value", PROTO_V1 + " // v3", "PROTOBUF")
    assert pins.for_topic("orders")["value"].version == 2          # fixed for the query
    plan = v.plan(pins.for_topic("orders"))
    assert str(plan.column_type("value", "orders")) == (
        "struct<id: int64, total: struct<cents: int64, ccy: string>>")
    # the same decode on an executor: a Confluent-framed record of version 2, id 3
    row = b"\x00\x00\x00\x00\x03\x00" + bytes([0x12, 0x02, 0x08, 0x05])   # total.cents = 5
    out = plan.apply(pa.RecordBatch.from_pydict({
        "key": pa.array([None], pa.binary()), "value": pa.array([row], pa.binary()),
        "topic": ["orders"], "partition": pa.array([0], pa.int32()),
        "offset": pa.array([0], pa.int64()),
        "timestamp": pa.array([0], pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([0], pa.int32())}))
    assert out.column("value").to_pylist() == [{"id": 0, "total": {"cents": 5, "ccy": ""}}]


def test_protobuf_nullability_is_from_protobufs(tmp_path: Any) -> None:
    """As from_protobuf declares it (not asNullable): a proto2 required field, repeated elements
    and map values are not null; the value column itself and other fields are."""
    grpc_tools = pytest.importorskip("grpc_tools")
    import subprocess
    import sys
    from pathlib import Path

    from pyconsumer.spark.source import typed_schema
    (tmp_path / "o.proto").write_text(
        'syntax = "proto2"; package shop; message Line { required string sku = 1; optional int32 n = 2; } '
        'message Order { required int64 id = 1; repeated Line lines = 2; map<string, Line> by = 3; '
        'repeated int64 r = 4; }')
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}",
                    f"-I{Path(grpc_tools.__file__).parent / '_proto'}", "--include_imports",
                    f"--descriptor_set_out={tmp_path / 'o.pb'}", "o.proto"], check=True)
    v = _values(valueFormat="protobuf", valueProtobufFraming="none", valueProtobufMessage="shop.Order",
                valueProtobufDescriptorFile=str(tmp_path / "o.pb"))
    value = typed_schema(v, False, [])["value"]
    assert value.nullable
    order = value.dataType
    assert [(f.name, f.nullable) for f in order.fields] == [
        ("id", False), ("lines", True), ("by", True), ("r", True)]
    assert not order["lines"].dataType.containsNull
    assert [(f.name, f.nullable) for f in order["lines"].dataType.elementType.fields] == [
        ("sku", False), ("n", True)]
    assert not order["by"].dataType.valueContainsNull
    assert not order["r"].dataType.containsNull


def test_a_descriptor_file_is_read_on_the_driver_and_travels_with_the_options(tmp_path: Any) -> None:
    grpc_tools = pytest.importorskip("grpc_tools")
    import subprocess
    import sys
    from pathlib import Path
    (tmp_path / "o.proto").write_text(PROTO_V1)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}",
                    f"-I{Path(grpc_tools.__file__).parent / '_proto'}", "--include_imports",
                    f"--descriptor_set_out={tmp_path / 'o.pb'}", "o.proto"], check=True)
    v = _values(valueFormat="protobuf", valueProtobufFraming="none",
                valueProtobufDescriptorFile=str(tmp_path / "o.pb"))
    shipped = pickle.dumps(v)
    (tmp_path / "o.pb").unlink()                  # an executor has no copy of the file
    plan = pickle.loads(shipped).plan()
    assert str(plan.column_type("value", "orders")) == "struct<id: int64>"


def test_a_registry_schema_of_several_messages_needs_one_named(registry: FakeSchemaRegistry) -> None:
    pytest.importorskip("grpc_tools")
    registry.register("orders-value", PROTO_V1 + " message Other { string s = 1; }", "PROTOBUF")
    v = _values(valueFormat="protobuf", **{"schema.registry.url": registry.url})
    with pytest.raises(ConfigurationError, match=r"^Option 'valueProtobufMessage': valueProtobufMessage "
                       r"is needed: the registry's schema has the messages Order, Other"):
        v.plan(ReaderPins(v).for_topic("orders"))
