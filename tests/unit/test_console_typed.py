"""``pyconsumer consume`` with typed keys and values (-X value.format / key.format: string, json,
avro): each record one exact JSON line, structs as objects, arrays as arrays, maps as objects,
timestamps as ISO-8601 text in UTC, dates as text, decimals as text with their exact digits,
bytes inside a value as the JSON output writes bytes; a bad key or value (PERMISSIVE) prints as
null with its raw bytes in ``_corrupt_record`` / ``_corrupt_record_key``, DROPMALFORMED leaves it
out, FAILFAST ends with exit 1 and one line naming its offset. The command runs in process
against the in-process FakeCluster; Avro bodies are written by fastavro and framed with ids
from the in-process FakeSchemaRegistry, as confluent-kafka's serializer frames them."""
from __future__ import annotations

import datetime
import decimal
import io
import json
import struct
from collections.abc import Iterator
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from pyconsumer import TopicPartition
from pyconsumer.cli import main
from pyconsumer.jsonlines import typed_json
from pyconsumer.testing import FakeCluster, FakeSchemaRegistry

T0 = 1_700_000_000_000
TP = TopicPartition("t", 0)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    c = FakeCluster(1)
    c.create_topic("t", 1)
    yield c
    c.close()
    assert c.errors == [], c.errors


def consume(capsys: pytest.CaptureFixture[str], cluster: FakeCluster, count: int,
            *settings: str) -> tuple[int, list[str], str]:
    """``consume`` from the beginning of t until ``count`` records were printed."""
    args = ["consume", "-b", cluster.bootstrap, "-t", "t", "--from-beginning",
            "--max-messages", str(count), "--timeout-ms", "10000"]
    for setting in settings:
        args += ["-X", setting]
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def line(offset: int, key: Any, value: Any, *, headers: list[list[Any]] | None = None,
         **corrupt: Any) -> dict[str, Any]:
    return {"topic": "t", "partition": 0, "offset": offset, "timestamp": T0 + offset,
            "timestamp_type": "CreateTime", "key": key, "value": value,
            "headers": headers or [], **corrupt}


# --------------------------------------------------------------------------- json


def test_the_json_values_of_the_issue_print_as_json_objects(
        capsys: pytest.CaptureFixture[str], cluster: FakeCluster) -> None:
    cluster.produce(TP, [(b"k0", b'{"id": 1, "amount": 2.5}', [], T0),
                         (b"k1", b'{"id": 2, "amount": 10}', [], T0 + 1)])
    code, lines, err = consume(capsys, cluster, 2, "value.format=json",
                               "value.schema=id long, amount double")
    assert (code, err) == (0, "processed 2 messages\n")
    assert lines == [
        '{"topic": "t", "partition": 0, "offset": 0, "timestamp": 1700000000000, '
        '"timestamp_type": "CreateTime", "key": "k0", "value": {"id": 1, "amount": 2.5}, '
        '"headers": []}',
        '{"topic": "t", "partition": 0, "offset": 1, "timestamp": 1700000000001, '
        '"timestamp_type": "CreateTime", "key": "k1", "value": {"id": 2, "amount": 10.0}, '
        '"headers": []}']


DDL = ("id BIGINT, amount DOUBLE, price DECIMAL(10,2), ratio FLOAT, ok BOOLEAN, at TIMESTAMP, "
       "day DATE, blob BINARY, tags ARRAY<STRING>, attrs MAP<STRING,INT>, "
       "inner STRUCT<x: INT, y: STRING>")
FULL = (b'{"id": 1, "amount": 2.5, "price": "12.3", "ratio": 0.1, "ok": true, '
        b'"at": "2024-01-05T10:00:00.25Z", "day": "2024-01-05", "blob": "AP8=", '
        b'"tags": ["a", "b"], "attrs": {"x": 1}, "inner": {"x": 2, "y": "z"}}')
NULLS = dict.fromkeys(["id", "amount", "price", "ratio", "ok", "at", "day", "blob", "tags",
                       "attrs", "inner"])


def test_every_json_type_and_a_bad_value_and_a_tombstone(
        capsys: pytest.CaptureFixture[str], cluster: FakeCluster) -> None:
    cluster.produce(TP, [
        (b"k0", FULL, [("h", b"v"), ("bin", b"\xff")], T0),
        (b"\xff", b"{bad", [], T0 + 1),                   # not JSON; a key that is not UTF-8
        (None, None, [], T0 + 2),                        # a tombstone is null, not bad
        (b"k3", b'{"amount": "NaN", "at": "2024-01-05T10:00:00.000001Z"}', [], T0 + 3),
        (b"k4", b"\xff\xfe", [], T0 + 4),                # bad bytes shown as base64
    ])
    code, lines, err = consume(capsys, cluster, 5, "value.format=json", f"value.schema={DDL}")
    assert (code, err) == (0, "processed 5 messages\n")
    assert lines[0] == (
        '{"topic": "t", "partition": 0, "offset": 0, "timestamp": 1700000000000, '
        '"timestamp_type": "CreateTime", "key": "k0", "value": {"id": 1, "amount": 2.5, '
        '"price": "12.30", "ratio": 0.1, "ok": true, "at": "2024-01-05T10:00:00.250Z", '
        '"day": "2024-01-05", "blob": {"base64": "AP8="}, "tags": ["a", "b"], '
        '"attrs": {"x": 1}, "inner": {"x": 2, "y": "z"}}, '
        '"headers": [["h", "v"], ["bin", {"base64": "/w=="}]]}')
    assert [json.loads(x) for x in lines[1:]] == [
        line(1, {"base64": "/w=="}, None, _corrupt_record="{bad"),
        line(2, None, None),
        line(3, "k3", {**NULLS, "amount": "NaN", "at": "2024-01-05T10:00:00.000001Z"}),
        line(4, "k4", None, _corrupt_record={"base64": "//4="}),
    ]


def test_dropmalformed_leaves_a_bad_value_out_and_failfast_stops_at_it(
        capsys: pytest.CaptureFixture[str], cluster: FakeCluster) -> None:
    cluster.produce(TP, [(b"k0", b'{"id": 0}', [], T0), (b"k1", b"{bad", [], T0 + 1),
                         (b"k2", b'{"id": 2}', [], T0 + 2)])
    schema = ["value.format=json", "value.schema=id long"]
    code, lines, err = consume(capsys, cluster, 2, *schema, "bad.records.mode=DROPMALFORMED")
    assert (code, err) == (0, "processed 2 messages\n")
    assert [json.loads(x) for x in lines] == [line(0, "k0", {"id": 0}), line(2, "k2", {"id": 2})]
    code, lines, err = consume(capsys, cluster, 3, *schema, "bad.records.mode=FAILFAST")
    assert code == 1
    assert [json.loads(x) for x in lines] == [line(0, "k0", {"id": 0})]
    assert err.startswith("pyconsumer consume: topic t partition 0 offset 1: ")
    assert err.count("\n") == 1 and "Traceback" not in err


# --------------------------------------------------------------------------- string


def test_string_keys_and_values_with_bad_utf8_in_each(
        capsys: pytest.CaptureFixture[str], cluster: FakeCluster) -> None:
    cluster.produce(TP, [(b"k0", b'{"a": 1}', [], T0),
                         (b"\xff", b"fine", [], T0 + 1),
                         (b"k2", b"\xfe\x00", [], T0 + 2),
                         (None, b"", [], T0 + 3)])
    code, lines, err = consume(capsys, cluster, 4, "key.format=string", "value.format=string")
    assert (code, err) == (0, "processed 4 messages\n")
    assert [json.loads(x) for x in lines] == [
        line(0, "k0", '{"a": 1}'),
        line(1, None, "fine", _corrupt_record_key={"base64": "/w=="}),
        line(2, "k2", None, _corrupt_record={"base64": "/gA="}),
        line(3, None, ""),
    ]


# --------------------------------------------------------------------------- avro


ORDER = {"type": "record", "name": "Order", "namespace": "ex", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": ["null", "string"], "default": None},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10,
                               "scale": 2}},
    {"name": "raw", "type": "bytes"},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    {"name": "lines", "type": {"type": "array", "items": {
        "type": "record", "name": "Line",
        "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "tags", "type": {"type": "map", "values": "int"}},
    {"name": "ratio", "type": "float"}]}
KEY = {"type": "record", "name": "OrderKey", "namespace": "ex",
       "fields": [{"name": "shop", "type": "string"}, {"name": "n", "type": "int"}]}


def avro(schema_id: int, schema: Any, record: Any) -> bytes:
    """confluent-kafka's framing: magic 0, the 4-byte schema id, the Avro body."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return b"\x00" + struct.pack(">I", schema_id) + out.getvalue()


def test_avro_keys_and_values_from_a_registry(capsys: pytest.CaptureFixture[str],
                                              cluster: FakeCluster) -> None:
    with FakeSchemaRegistry() as registry:
        value_id = registry.register("t-value", json.dumps(ORDER))
        key_id = registry.register("t-key", json.dumps(KEY))
        order = {"id": 7, "customer": "ann", "day": datetime.date(2024, 1, 5),
                 "at": datetime.datetime(2024, 1, 5, 10, 0, 0, 250000, datetime.timezone.utc),
                 "price": decimal.Decimal("12.30"), "raw": b"\x00\xff", "status": "PAID",
                 "lines": [{"sku": "a", "qty": 2}], "tags": {"x": 1}, "ratio": 0.1}
        cluster.produce(TP, [
            (avro(key_id, KEY, {"shop": "s1", "n": 1}), avro(value_id, ORDER, order), [], T0),
            (b"\x07k", b"\x07junk", [], T0 + 1),         # no Confluent framing: both bad
            (avro(key_id, KEY, {"shop": "s2", "n": 2}), None, [], T0 + 2),
        ])
        code, lines, err = consume(capsys, cluster, 3, "key.format=avro", "value.format=avro",
                                   f"schema.registry.url={registry.url}")
    assert (code, err) == (0, "processed 3 messages\n")
    assert lines[0] == (
        '{"topic": "t", "partition": 0, "offset": 0, "timestamp": 1700000000000, '
        '"timestamp_type": "CreateTime", "key": {"shop": "s1", "n": 1}, "value": {"id": 7, '
        '"customer": "ann", "at": "2024-01-05T10:00:00.250Z", "day": "2024-01-05", '
        '"price": "12.30", "raw": {"base64": "AP8="}, "status": "PAID", '
        '"lines": [{"sku": "a", "qty": 2}], "tags": {"x": 1}, "ratio": 0.1}, "headers": []}')
    assert [json.loads(x) for x in lines[1:]] == [
        line(1, None, None, _corrupt_record="\x07junk", _corrupt_record_key="\x07k"),
        line(2, {"shop": "s2", "n": 2}, None),
    ]


# --------------------------------------------------------------------------- typed_json


@pytest.mark.parametrize(("value", "type_", "expected"), [
    (datetime.datetime(2024, 1, 5, 10, tzinfo=datetime.timezone.utc), pa.timestamp("us", "UTC"),
     "2024-01-05T10:00:00Z"),
    (datetime.datetime(2024, 1, 5, 11, 0, 0, 250001,
                       datetime.timezone(datetime.timedelta(hours=1))),
     pa.timestamp("us", "+01:00"), "2024-01-05T10:00:00.250001Z"),
    (datetime.datetime(2024, 1, 5, 10, 0, 0, 5000), pa.timestamp("us"), "2024-01-05T10:00:00.005"),
    (datetime.date(1999, 12, 31), pa.date32(), "1999-12-31"),
    (datetime.time(8, 30, 0, 120000), pa.time64("us"), "08:30:00.120"),
    (decimal.Decimal("1E-7"), pa.decimal128(10, 7), "0.0000001"),
    (decimal.Decimal("-12.30"), pa.decimal128(10, 2), "-12.30"),
    (float("inf"), pa.float64(), "Infinity"),
    (float("-inf"), pa.float32(), "-Infinity"),
    (float("nan"), pa.float64(), "NaN"),
    (struct.unpack("f", struct.pack("f", 0.1))[0], pa.float32(), 0.1),
    (0.1, pa.float64(), 0.1),
    (True, pa.bool_(), True),
    ([(1, "a"), (2, None)], pa.map_(pa.int32(), pa.string()), {"1": "a", "2": None}),
    ([], pa.map_(pa.string(), pa.string()), {}),
    ([b"\xff", b"ok", None], pa.list_(pa.binary()), [{"base64": "/w=="}, "ok", None]),
    ({"a": [{"b": b"x"}]}, pa.struct([("a", pa.list_(pa.struct([("b", pa.binary(1))])))]),
     {"a": [{"b": "x"}]}),
    (None, pa.struct([("a", pa.int64())]), None),
])
def test_typed_json(value: Any, type_: pa.DataType, expected: Any) -> None:
    assert json.dumps(typed_json(value, type_)) == json.dumps(expected)
