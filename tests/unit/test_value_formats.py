"""The value formats' registry (pyconsumer.values.formats): every format registered by name, an
unknown name refused with the same message by every front end (settings, Spark options,
decode_arrow's arguments), and each format through its one interface: the options it takes or
needs (with the messages of both front ends), its Arrow type, its decoder and its framing.

Avro bodies are written by fastavro (the independent writer)."""
from __future__ import annotations

import io
import json
import struct
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from pyconsumer.config.consumer_config import VALUE_FORMATS
from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.values import parse_value_options
from pyconsumer.values import FORMATS, ColumnFormat, Format, TypedValues, ValueFormat, typed_values
from pyconsumer.values.avro_decode import SchemaId
from pyconsumer.values.format_api import ColumnDecoder, Words
from pyconsumer.values.formats import FRAMINGS, decodes, format_of, names_where, parse_format

USER = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
# Spark's from_avro types: every field nullable
USER_TYPE = pa.struct([("id", pa.int64()), ("name", pa.string())])


def avro_body(record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(USER), record)
    return out.getvalue()


def one_batch(values: list[bytes | None]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(values, pa.binary())], names=["value"])


def decoder(name: str, schema: Any = None, framing: str = "confluent") -> ColumnDecoder:
    spec = ColumnFormat(Format(name), schema, framing)  # type: ignore[arg-type]
    return FORMATS[name].column("value", spec, None, None)


# ------------------------------------------------------------------ the registry


def test_every_format_is_registered_by_its_name_in_the_order_messages_list_them() -> None:
    assert list(FORMATS) == ["binary", "string", "json", "avro", "protobuf"]
    for name, fmt in FORMATS.items():
        assert isinstance(fmt, ValueFormat) and fmt.name == name
        assert format_of(name) is fmt and format_of(Format(name)) is fmt
        assert repr(fmt) == f"<value format {name}>"
    # the public enum is the registry's names, member for member
    assert [(m.name, m.value) for m in Format] == [
        ("BINARY", "binary"), ("STRING", "string"), ("JSON", "json"), ("AVRO", "avro"),
        ("PROTOBUF", "protobuf")]
    # the consumer settings' table sits below the values layer and restates the names: kept equal
    assert VALUE_FORMATS == tuple(FORMATS)
    assert FRAMINGS == ("confluent", "none")


def test_format_names_parse_in_any_case_and_unknown_ones_are_refused_by_every_front_end() -> None:
    assert parse_format(" JSON ", "value.format") is Format.JSON
    assert parse_format(Format.AVRO, "value.format") is Format.AVRO
    with pytest.raises(ConfigurationError) as e:
        parse_format("thrift", "value.format")
    assert str(e.value) == "value.format must be one of binary, string, json, avro, protobuf, not 'thrift'"
    with pytest.raises(ConfigurationError) as e:
        parse_format(3, "key.format")  # type: ignore[arg-type]
    assert str(e.value) == "key.format must be one of binary, string, json, avro, protobuf, not 3"
    with pytest.raises(ConfigurationError) as e:
        TypedValues.from_settings({"key.format": "xml"})
    assert str(e.value) == "key.format must be one of binary, string, json, avro, protobuf, not 'xml'"
    with pytest.raises(ConfigurationError) as e:
        typed_values(value_format="xml")
    assert str(e.value) == "value_format must be one of binary, string, json, avro, protobuf, not 'xml'"
    with pytest.raises(ConfigurationError) as e:
        parse_value_options({"valueformat": "xml"})
    assert str(e.value) == "Option 'valueFormat': must be one of binary, string, json, avro, protobuf, got 'xml'"
    with pytest.raises(ValueError):
        format_of("xml")


def test_which_names_decode_and_the_lists_messages_make_of_them() -> None:
    assert [n for n in FORMATS if decodes(n)] == ["string", "json", "avro", "protobuf"]
    assert not decodes(None) and not decodes("") and not decodes("BINARY")
    assert decodes("Json") and decodes("xml")        # an unknown name is refused elsewhere
    assert names_where(lambda f: f.decodes) == "string, json, avro or protobuf"
    assert names_where(lambda f: f.takes_schema) == "json, avro or protobuf"
    assert names_where(lambda f: f.takes_subject) == "json, avro or protobuf"


# ------------------------------------------------------------------ options, per format


@pytest.mark.parametrize("name, decodes_, schema, subject, framings, registry_type", [
    ("binary", False, False, False, (), ""),
    ("string", True, False, False, (), ""),
    ("json", True, True, True, (), "JSON"),
    ("avro", True, True, True, ("confluent", "none"), "AVRO"),
    ("protobuf", True, True, True, ("confluent", "none"), "PROTOBUF"),
])
def test_the_options_each_format_takes(name: str, decodes_: bool, schema: bool, subject: bool,
                                       framings: tuple[str, ...], registry_type: str) -> None:
    fmt = FORMATS[name]
    assert (fmt.decodes, fmt.takes_schema, fmt.takes_subject, fmt.framings, fmt.schema_type) == (
        decodes_, schema, subject, framings, registry_type)
    for framing in FRAMINGS:
        uses = name in ("avro", "protobuf") and framing == "confluent"
        assert fmt.reads_headers(framing) is uses
        # json reads its schema from the registry only without one given; protobuf with
        # Confluent framing too (with descriptors given, a registry only checks the writers)
        assert fmt.needs_registry(framing, True) is (uses and name == "avro")
        assert fmt.needs_registry(framing, False) is (uses or name == "json")


def test_what_a_format_lacks_in_the_words_of_each_front_end() -> None:
    settings, source = Words("value"), Words("key", source=True)
    assert (settings("format"), settings("schema"), settings("subject"), settings("framing")) == (
        "value.format", "value.schema", "value.subject", "value.avro.framing")
    assert (source("format"), source("schema"), source("subject"), source("framing")) == (
        "keyFormat", "keySchema", "keySubject", "keyAvroFraming")
    json_, avro = FORMATS["json"], FORMATS["avro"]
    assert json_.missing_schema("confluent", settings) is None       # the subject's JSON Schema
    assert json_.missing_registry(settings) == (
        "value.format=json needs value.schema (a Spark DDL string, a StructType or a pyarrow "
        "schema), or schema.registry.url to read the subject's JSON Schema")
    assert json_.missing_registry(source) == (
        "keyFormat=json needs keySchema (a Spark DDL string, or a StructType's JSON), or "
        "schema.registry.url to read the subject's JSON Schema")
    assert avro.missing_schema("confluent", settings) is None        # the registry's latest
    assert avro.missing_schema("none", settings) == (
        "value.format=avro with value.avro.framing=none needs value.schema, the writer's Avro schema")
    assert avro.missing_schema("none", source) == (
        "keyFormat=avro with keyAvroFraming=none needs the writer's Avro schema in keySchema")
    assert avro.missing_registry(settings) == (
        "value.format=avro (Confluent framing) needs schema.registry.url to fetch writer schemas by id")
    assert avro.missing_registry(source) == (
        "keyFormat=avro with Confluent framing reads writer schemas by id from a Schema Registry: "
        "set schema.registry.url (or keyAvroFraming=none with keySchema)")
    for name in ("binary", "string"):
        assert FORMATS[name].missing_schema("confluent", settings) is None


@pytest.mark.parametrize("spec, has_registry, message", [
    (ColumnFormat(Format.STRING, "a INT"), False,
     "value.schema applies to value.format json, avro or protobuf, not string"),
    (ColumnFormat(Format.BINARY, "a INT"), False,
     "value.schema applies to value.format json, avro or protobuf, not binary"),
    (ColumnFormat(Format.STRING, subject="s"), False,
     "value.subject applies to value.format=json, avro or protobuf only"),
    (ColumnFormat(Format.JSON), False, "value.format=json needs value.schema (a Spark DDL string, "
                                       "a StructType or a pyarrow schema), or schema.registry.url "
                                       "to read the subject's JSON Schema"),
    (ColumnFormat(Format.AVRO), False,
     "value.format=avro (Confluent framing) needs schema.registry.url to fetch writer schemas by id"),
    (ColumnFormat(Format.AVRO, framing="none"), True,
     "value.format=avro with value.avro.framing=none needs value.schema, the writer's Avro schema"),
    (ColumnFormat(Format.STRING, framing="magic"), False,  # type: ignore[arg-type]
     "value.avro.framing must be confluent or none, not 'magic'"),
])
def test_a_column_format_is_checked_by_the_shared_rules_and_its_format(
        spec: ColumnFormat, has_registry: bool, message: str) -> None:
    with pytest.raises(ConfigurationError) as e:
        spec.check("value", has_registry)
    assert str(e.value) == message


def test_schema_option_text_is_checked_by_the_format() -> None:
    json_, avro = FORMATS["json"], FORMATS["avro"]
    assert json_.schema_from_text("a INT") == "a INT"              # a DDL is kept as text
    with pytest.raises(ConfigurationError) as e:
        json_.schema_from_text("{not json")
    assert str(e.value).startswith("starts like a StructType's JSON but is not JSON: ")
    with pytest.raises(ConfigurationError) as e:
        json_.schema_from_text('{"type": "record"}')
    assert str(e.value) == ("a JSON schema here is a StructType's JSON "
                            '({"type": "struct", "fields": [...]}); or give a DDL string')
    with pytest.raises(ConfigurationError) as e:
        json_.schema_from_text("a INT,")
    assert str(e.value).startswith("is not a Spark DDL schema: ")
    text = json.dumps(USER)
    assert avro.schema_from_text(text) == text
    with pytest.raises(ConfigurationError) as e:
        avro.schema_from_text("[1, 2]")
    assert str(e.value).startswith("is not a usable Avro schema: ")
    for name in ("binary", "string"):
        with pytest.raises(NotImplementedError):
            FORMATS[name].schema_from_text("a INT")


def test_a_registry_reader_with_its_references_is_parsed_by_the_format() -> None:
    address = {"type": "record", "name": "Address", "namespace": "ex",
               "fields": [{"name": "city", "type": "string"}]}
    person = {"type": "record", "name": "Person", "namespace": "ex",
              "fields": [{"name": "home", "type": "ex.Address"}]}
    avro = FORMATS["avro"]
    reader = avro.registered_reader(json.dumps(person), [("ex.Address", json.dumps(address))])
    spec = ColumnFormat(Format.AVRO, reader, "none")
    assert avro.column("value", spec, None, None).arrow_type("t") == pa.struct(
        [("home", pa.struct([("city", pa.string())]))])
    with pytest.raises(ConfigurationError) as e:
        avro.registered_reader(json.dumps(person), [])
    assert str(e.value) == "unknown type 'ex.Address'"
    json_ = FORMATS["json"]
    doc = {"type": "object", "properties": {"home": {"$ref": "address.json"}}}
    address_doc = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    reader = json_.registered_reader(json.dumps(doc), [("address.json", json.dumps(address_doc))])
    assert reader == pa.schema([("home", pa.struct([pa.field("city", pa.string(), nullable=False)]))])
    # decoded as from_json gives it: every field nullable
    assert json_.column("value", ColumnFormat(Format.JSON, reader), None, None).arrow_type("t") == \
        pa.struct([("home", pa.struct([("city", pa.string())]))])
    with pytest.raises(ConfigurationError) as e:
        json_.registered_reader(json.dumps(doc), [])
    assert str(e.value) == ("#/properties/home: $ref 'address.json' names 'address.json', which is "
                            "not one of the schema's references (none)")
    with pytest.raises(NotImplementedError):
        FORMATS["string"].registered_reader("{}", [])


# ------------------------------------------------------------------ Arrow types and decoders


def test_each_format_s_arrow_type_and_decoder() -> None:
    ids: set[SchemaId] = set()

    binary = decoder("binary")
    raw = pa.array([b"\xff", None], pa.binary())
    assert binary.arrow_type("t") == pa.binary()
    got = binary.decode("t", raw, one_batch([b"\xff", None]), ids)
    assert got.array.to_pylist() == [b"\xff", None] and got.errors == {}

    string = decoder("string")
    assert string.arrow_type("t") == pa.string()
    got = string.decode("t", pa.array([b"h\xc3\xa9", b"\xff"], pa.binary()), one_batch([]), ids)
    assert got.array.to_pylist() == ["h\u00e9", None]
    assert got.errors == {1: "invalid UTF-8 at byte 0: invalid start byte"}

    json_ = decoder("json", "a INT, b STRING")
    assert json_.arrow_type("t") == pa.struct([("a", pa.int32()), ("b", pa.string())])
    # plain JSON, and confluent-kafka's JSONSerializer framing (0x00 + schema id 7) taken off
    values = [b'{"a": 1, "b": "x"}', b"\x00" + struct.pack(">I", 7) + b'{"a": 2}', b"[1", None]
    got = json_.decode("t", pa.array(values, pa.binary()), one_batch(values), ids)
    assert got.array.to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": None}, None, None]
    assert list(got.errors) == [2]
    assert ids == {7}

    avro = decoder("avro", json.dumps(USER), "none")
    assert avro.arrow_type("t") == USER_TYPE
    values = [avro_body({"id": 5, "name": "e"}), b"\x07", None]
    got = avro.decode("t", pa.array(values, pa.binary()), one_batch(values), ids)
    assert got.array.to_pylist() == [{"id": 5, "name": "e"}, None, None]
    assert list(got.errors) == [1]
    assert ids == {7}                       # a bare body names no schema


def test_a_schema_that_does_not_parse_fails_when_the_decoder_is_made() -> None:
    with pytest.raises(ConfigurationError) as e:
        decoder("json", "a INT,")
    assert str(e.value).startswith("value.schema is not a usable JSON schema: ")
    with pytest.raises(ConfigurationError) as e:
        decoder("avro", "[1, 2]", "none")
    assert str(e.value).startswith("value.schema is not a usable Avro schema: ")


def test_the_plan_takes_types_headers_and_topics_from_the_formats() -> None:
    plan = TypedValues(ColumnFormat(Format.JSON, "a INT"), ColumnFormat(Format.STRING))
    assert (plan.column_type("value", "t"), plan.column_type("key", "t")) == (
        pa.struct([("a", pa.int32())]), pa.string())
    assert not plan.reads_headers and not plan.needs_topic("value")
    assert plan.value.kind is FORMATS["json"] and plan.value.decodes
    assert not ColumnFormat().decodes and ColumnFormat().kind is FORMATS["binary"]
    bare = TypedValues(ColumnFormat(Format.AVRO, json.dumps(USER), "none"))
    assert bare.column_type("value", "t") == USER_TYPE
    assert not bare.reads_headers and not bare.needs_topic("value")
