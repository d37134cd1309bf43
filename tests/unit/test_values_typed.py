"""TypedValues, the one plan that types key/value columns of a batch in Spark's Kafka schema, and
values.decode_arrow on top of it: every format (string, json, avro framed by id, by GUID, by
header, unframed), several topics (one reader, readers per topic, readers that disagree), the
negative cache of unknown ids, the reason column, the three modes, the counters, and a registry
outage (an error after the retries, never null rows).

Avro bodies are written by fastavro (the independent writer); the registry is the in-process
FakeSchemaRegistry (the real one runs in tests/kafka)."""
from __future__ import annotations

import datetime
import io
import json
import struct
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from pyconsumer.errors import ConfigurationError
from pyconsumer.records import kafka_arrow_schema
from pyconsumer.testing import FakeSchemaRegistry
from pyconsumer.testing._encode import aio_v2
from pyconsumer.values import (
    ColumnFormat,
    Format,
    MalformedValueError,
    TypedValues,
    decode_arrow,
)
from pyconsumer.values.registry import SchemaRegistryClient, SchemaRegistryUnavailableError

V1 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
# v2 adds a field with a default: v1 records read with it get the default
V2 = {"type": "record", "name": "User", "namespace": "ex", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "email", "type": ["null", "string"], "default": None}]}
USER_V2 = pa.struct([("id", pa.int64()), ("name", pa.string()), ("email", pa.string())])
TS = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)

Row = tuple[int, bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]


def body(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def framed(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + payload


def batch(rows: Sequence[Row], topic: str = "t", partition: int = 3,
          headers: bool = False, topics: list[str] | None = None) -> pa.RecordBatch:
    """Rows (offset, key, value, headers) in Spark's Kafka schema."""
    schema = kafka_arrow_schema(headers)
    n = len(rows)
    cols: dict[str, pa.Array] = {
        "key": pa.array([r[1] for r in rows], pa.binary()),
        "value": pa.array([r[2] for r in rows], pa.binary()),
        "topic": pa.array(topics or [topic] * n, pa.string()),
        "partition": pa.array([partition] * n, pa.int32()),
        "offset": pa.array([r[0] for r in rows], pa.int64()),
        "timestamp": pa.array([TS] * n, pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([0] * n, pa.int32()),
    }
    if headers:
        cols["headers"] = pa.array([[{"key": k, "value": v} for k, v in r[3]] for r in rows],
                                   schema.field("headers").type)
    return pa.RecordBatch.from_arrays([cols[f.name] for f in schema], schema=schema)


@pytest.fixture
def registry() -> Iterator[FakeSchemaRegistry]:
    with FakeSchemaRegistry() as reg:
        yield reg


def client(reg: FakeSchemaRegistry, **kw: Any) -> SchemaRegistryClient:
    return SchemaRegistryClient(reg.url, **{"retries": 0, "backoff_s": 0.0, **kw})


def rows_of(out: pa.RecordBatch, *names: str) -> list[tuple[Any, ...]]:
    cols = [out.column(n).to_pylist() for n in names]
    return list(zip(*cols))


# ------------------------------------------------------------------ string and json


def test_string_values_and_keys_in_every_mode() -> None:
    data: list[Row] = [(10, b"k0", "h\u00e9".encode(), []), (11, b"\xff", b"v1", []),
            (12, b"k2", b"\xc3(", []), (13, None, None, [])]
    plan = TypedValues(ColumnFormat(Format.STRING), ColumnFormat(Format.STRING))
    out = plan.apply(batch(data))
    assert out.schema.field("value").type == pa.string()
    assert out.schema.names[-2:] == ["_corrupt_record", "_corrupt_record_key"]
    assert rows_of(out, "offset", "key", "value", "_corrupt_record", "_corrupt_record_key") == [
        (10, "k0", "h\u00e9", None, None), (11, None, "v1", None, b"\xff"),
        (12, "k2", None, b"\xc3(", None), (13, None, None, None, None)]
    assert (plan.snapshot().decoded, plan.snapshot().malformed) == (4, 2)

    drop = TypedValues(ColumnFormat(Format.STRING), ColumnFormat(Format.STRING),
                       mode="DROPMALFORMED")
    out = drop.apply(batch(data))
    assert out.schema.names == kafka_arrow_schema().names       # no corrupt column
    assert rows_of(out, "offset", "key", "value") == [(10, "k0", "h\u00e9"), (13, None, None)]
    counts = drop.snapshot()
    assert (counts.decoded, counts.malformed, counts.dropped) == (2, 2, 2)

    fail = TypedValues(ColumnFormat(Format.STRING), mode="FAILFAST")
    with pytest.raises(MalformedValueError) as info:
        fail.apply(batch(data))
    e = info.value
    assert (e.topic, e.partition, e.offset, e.row) == ("t", 3, 12, 2)
    assert str(e).startswith("topic t partition 3 offset 12: ")
    assert fail.snapshot().decoded == 0                         # a raising batch counts nothing


def test_json_struct_values_nulls_missing_and_extra_fields_and_a_bad_row() -> None:
    data: list[Row] = [(0, None, b'{"id": 1, "name": "a", "extra": true}', []),
            (1, None, b'{"id": 2}', []),
            (2, None, b'{"id": "x", "name": ', []),
            (3, None, None, []),
            (4, None, b'{"id": 5, "name": null}', [])]
    plan = TypedValues(ColumnFormat(Format.JSON, "id BIGINT, name STRING"),
                       reason_column="_why")
    out = plan.apply(batch(data))
    assert out.schema.field("value").type == pa.struct([("id", pa.int64()), ("name", pa.string())])
    assert out.column("value").to_pylist() == [
        {"id": 1, "name": "a"}, {"id": 2, "name": None}, None, None, {"id": 5, "name": None}]
    assert out.column("_corrupt_record").to_pylist() == [None, None, b'{"id": "x", "name": ',
                                                         None, None]
    why = out.column("_why").to_pylist()
    assert why[:2] == [None, None] and why[3:] == [None, None]
    assert why[2] is not None and why[2].startswith("value: ")
    # the other columns pass through untouched
    assert out.column("timestamp").to_pylist() == [TS] * 5
    assert out.column("partition").to_pylist() == [3] * 5


def test_json_with_confluent_framing_is_read_without_its_prefix() -> None:
    """confluent-kafka's JSONSerializer writes 0x00 + a 4-byte schema id before the JSON text;
    no JSON text starts with NUL, so such values are read without a setting and their ids counted;
    a framed value too short for its id is a bad row, its raw bytes kept."""
    data: list[Row] = [(0, None, b'{"id": 1}', []), (1, None, framed(7, b'{"id": 2}'), []),
                       (2, None, b"\x00\x00\x07", []), (3, None, framed(9, b'{"id": '), [])]
    plan = TypedValues(ColumnFormat(Format.JSON, "id BIGINT"))
    out = plan.apply(batch(data))
    assert rows_of(out, "offset", "value", "_corrupt_record") == [
        (0, {"id": 1}, None), (1, {"id": 2}, None), (2, None, b"\x00\x00\x07"),
        (3, None, framed(9, b'{"id": '))]
    assert plan.snapshot().schema_ids == {7, 9}
    assert plan.snapshot().malformed == 2


def test_json_not_null_fields_are_nullable_in_the_schema_as_in_the_data() -> None:
    """NOT NULL in a DDL does not stop a bad or missing field from being null (as with
    from_json): the plan's schema (an empty poll's) equals the decoded batch's schema."""
    plan = TypedValues(ColumnFormat(Format.JSON, "id BIGINT NOT NULL, s STRUCT<b: INT NOT NULL>"))
    out = plan.apply(batch([(0, None, b'{"s": {}}', [])]))
    assert out.column("value").to_pylist() == [{"id": None, "s": {"b": None}}]
    assert out.schema == plan.schema(kafka_arrow_schema(), ["t"])
    assert all(f.nullable for f in out.schema.field("value").type)


def test_settings_errors_name_the_setting() -> None:
    def refused(settings: dict[str, Any]) -> str:
        with pytest.raises(ConfigurationError) as info:
            TypedValues.from_settings(settings)
        return str(info.value)

    assert refused({"value.format": "json", "value.schema": "a INT, b"}).startswith(
        "value.schema is not a usable JSON schema")
    assert refused({"value.format": "json"}).startswith("value.format=json needs value.schema")
    assert refused({"key.format": "avro", "key.avro.framing": "none",
                    "key.schema": '{"type": "nope"}'}).startswith("key.schema is not a usable Avro")
    assert "needs schema.registry.url" in refused({"value.format": "avro"})
    assert refused({"value.format": "avro", "schema.registry.url": "ftp://x"}).startswith(
        "schema.registry.* settings: ")
    assert refused({"value.format": "avro", "schema.registry.url": "http://h:1",
                    "key.subject.name.strategy": "Nope"}).startswith("key.subject.name.strategy")
    assert "'offset' is already a column" in refused(
        {"value.format": "string", "corrupt.record.column": "offset"})
    assert refused({"value.schema": "a INT"}) == "value.schema is set but value.format is binary"
    assert "xml" in refused({"value.format": "xml"})
    assert TypedValues.from_settings({"value.format": "binary"}) is None


# ------------------------------------------------------------------ avro


def test_avro_writer_versions_by_id_resolve_into_the_subjects_latest(
        registry: FakeSchemaRegistry) -> None:
    v1 = registry.register("t-value", json.dumps(V1))
    v2 = registry.register("t-value", json.dumps(V2))
    data: list[Row] = [(0, None, framed(v1, body(V1, {"id": 1, "name": "a"})), []),
            (1, None, framed(v2, body(V2, {"id": 2, "name": "b", "email": "b@x"})), []),
            (2, None, None, [])]
    plan = TypedValues(ColumnFormat(Format.AVRO), registry=client(registry))
    assert plan.schema(kafka_arrow_schema(), ["t"]).field("value").type == USER_V2
    out = plan.apply(batch(data))
    assert out.column("value").to_pylist() == [
        {"id": 1, "name": "a", "email": None}, {"id": 2, "name": "b", "email": "b@x"}, None]
    assert out.column("_corrupt_record").to_pylist() == [None, None, None]
    assert plan.snapshot().schema_ids == {v1, v2}


def test_avro_guid_framing_header_ids_and_unframed(registry: FakeSchemaRegistry) -> None:
    sid = registry.register("t-value", json.dumps(V2))
    guid = uuid.UUID(registry.guid_of(sid))
    # id 0: a bare body starting 0x00, which must not be read as a prefix id when a header names it
    rec = {"id": 0, "name": "a longer name", "email": None}
    data: list[Row] = [(0, None, b"\x01" + guid.bytes + body(V2, {**rec, "id": 7}), []),
            # the id in a header, a bare body
            (1, None, body(V2, rec), [("__value_schema_id", b"\x00" + struct.pack(">I", sid))]),
            (2, None, body(V2, {**rec, "id": 9}), [("__value_schema_id", b"\x01" + guid.bytes)])]
    plan = TypedValues(ColumnFormat(Format.AVRO, json.dumps(V2)), registry=client(registry))
    assert plan.reads_headers
    out = plan.apply(batch(data, headers=True))
    assert [v["id"] for v in out.column("value").to_pylist()] == [7, 0, 9]
    assert out.column("headers").to_pylist()[1] == [
        {"key": "__value_schema_id", "value": b"\x00" + struct.pack(">I", sid)}]
    assert plan.snapshot().schema_ids == {sid, guid}

    bare = TypedValues(ColumnFormat(Format.AVRO, V1, framing="none"))
    assert not bare.reads_headers
    out = bare.apply(batch([(0, None, body(V1, {"id": 3, "name": "n"}), []),
                            (1, None, b"\x07", [])]))
    assert out.column("value").to_pylist() == [{"id": 3, "name": "n"}, None]
    assert out.column("_corrupt_record").to_pylist() == [None, b"\x07"]


def test_an_unknown_id_is_a_bad_row_asked_once(registry: FakeSchemaRegistry) -> None:
    registry.register("t-value", json.dumps(V1))
    data: list[Row] = [(5, None, framed(999, body(V1, {"id": 1, "name": "a"})), [])]
    plan = TypedValues(ColumnFormat(Format.AVRO, json.dumps(V1)), registry=client(registry),
                       reason_column="why")
    for _ in range(3):
        out = plan.apply(batch(data))
        assert out.column("value").to_pylist() == [None]
        assert out.column("_corrupt_record").to_pylist() == [data[0][2]]
        assert "unknown schema id 999" in out.column("why").to_pylist()[0]
    assert registry.count("GET", "/schemas/ids/999") == 1        # the negative cache
    with pytest.raises(MalformedValueError, match=r"^topic t partition 3 offset 5: .*999"):
        TypedValues(ColumnFormat(Format.AVRO, json.dumps(V1)), registry=client(registry),
                    mode="failfast").apply(batch(data))


def test_a_registry_outage_raises_never_null_rows(registry: FakeSchemaRegistry) -> None:
    sid = registry.register("t-value", json.dumps(V1))
    plan = TypedValues(ColumnFormat(Format.AVRO, json.dumps(V1)),
                       registry=client(registry, retries=1, timeout_s=2.0))
    registry.down()
    data: list[Row] = [(0, None, framed(sid, body(V1, {"id": 1, "name": "a"})), [])]
    with pytest.raises(SchemaRegistryUnavailableError):
        plan.apply(batch(data))
    assert plan.snapshot().decoded == 0
    registry.up()
    assert plan.apply(batch(data)).column("value").to_pylist() == [{"id": 1, "name": "a"}]


def test_several_topics_one_reader_readers_per_topic_and_readers_that_disagree(
        registry: FakeSchemaRegistry) -> None:
    a1 = registry.register("a-value", json.dumps(V1))
    b2 = registry.register("b-value", json.dumps(V2))
    # one given reader: both topics decode into it, rows stay in their order
    rows: list[Row] = [(0, None, framed(a1, body(V1, {"id": 1, "name": "x"})), []),
            (0, None, framed(b2, body(V2, {"id": 2, "name": "y", "email": "e"})), []),
            (1, None, framed(a1, body(V1, {"id": 3, "name": "z"})), [])]
    one = TypedValues(ColumnFormat(Format.AVRO, json.dumps(V2)), registry=client(registry))
    out = one.apply(batch(rows, topics=["a", "b", "a"]))
    assert rows_of(out, "topic", "offset") == [("a", 0), ("a", 1), ("b", 0)]
    assert [v["id"] for v in out.column("value").to_pylist()] == [1, 3, 2]
    # readers from each topic's subject: different types make no one column
    per_topic = TypedValues(ColumnFormat(Format.AVRO), registry=client(registry))
    assert per_topic.column_type("value", "a") != per_topic.column_type("value", "b")
    with pytest.raises(ConfigurationError, match=r"topics \['a', 'b'\] have different value "
                                                 r"reader schemas: set value.schema or value.subject"):
        per_topic.schema(kafka_arrow_schema(), ["a", "b"])
    # the same subject named for all topics: one reader
    registry.register("users", json.dumps(V2))
    shared = TypedValues(ColumnFormat(Format.AVRO, subject="users"), registry=client(registry))
    assert shared.apply(batch(rows, topics=["a", "b", "a"])).schema.field("value").type == USER_V2


# ------------------------------------------------------------------ decode_arrow


def test_decode_arrow_with_formats_equals_the_plan_over_records_decode_arrow(
        registry: FakeSchemaRegistry) -> None:
    sid = registry.register("orders-value", json.dumps(V1))
    rows: Any = [(0, 1_700_000_000_000, b"k0", framed(sid, body(V1, {"id": 1, "name": "a"})), []),
            (1, 1_700_000_000_001, b"k1", body(V1, {"id": 2, "name": "b"}),
             [("__value_schema_id", b"\x00" + struct.pack(">I", sid))]),
            (2, 1_700_000_000_002, None, b"\x00\x00", [])]
    record_set = aio_v2(rows, base_offset=40)
    out = decode_arrow(record_set, "orders", 2, value_format="avro", key_format="string",
                       schema_registry_url=registry.url)
    assert out.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp",
                                "timestampType", "_corrupt_record", "_corrupt_record_key"]
    assert rows_of(out, "offset", "key", "value", "_corrupt_record") == [
        (40, "k0", {"id": 1, "name": "a"}, None), (41, "k1", {"id": 2, "name": "b"}, None),
        (42, None, None, b"\x00\x00")]
    assert out.column("timestamp").to_pylist()[0] == datetime.datetime(
        2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    with_headers = decode_arrow(record_set, "orders", 2, value_format="avro",
                                schema_registry_url=registry.url, include_headers=True,
                                mode="DROPMALFORMED")
    # (a record without headers: null, as records.decode_arrow gives it)
    assert rows_of(with_headers, "offset", "headers") == [
        (40, None), (41, [{"key": "__value_schema_id", "value": b"\x00" + struct.pack(">I", sid)}])]
    with pytest.raises(MalformedValueError, match="^topic orders partition 2 offset 42: "):
        decode_arrow(record_set, "orders", 2, value_format="avro",
                     schema_registry_url=registry.url, mode="FAILFAST")
    # nothing to decode: the typed schema all the same
    empty = decode_arrow(b"", "orders", 2, value_format="json", value_schema="a INT")
    assert empty.num_rows == 0
    assert empty.schema.field("value").type == pa.struct([("a", pa.int32())])
    # binary: exactly records.decode_arrow
    from pyconsumer import records
    assert decode_arrow(record_set, "orders", 2).equals(records.decode_arrow(record_set, "orders", 2))


def test_decode_arrow_argument_errors() -> None:
    with pytest.raises(ValueError, match="value_schema is given but value_format is binary"):
        decode_arrow(b"", "t", 0, value_schema="a INT")
    with pytest.raises(ValueError, match="value_framing must be confluent or none"):
        decode_arrow(b"", "t", 0, value_format="avro", value_framing="magic",
                     value_schema=json.dumps(V1))
    with pytest.raises(ConfigurationError, match="value.format=avro .* needs schema.registry.url"):
        decode_arrow(b"", "t", 0, value_format="avro")
    with pytest.raises(ConfigurationError, match="value_format must be one of"):
        decode_arrow(b"", "t", 0, value_format="xml")
