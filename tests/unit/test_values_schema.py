"""pyconsumer.values.schema: Spark DDL -> pyarrow schema, StructType and pyarrow input, inference."""
from __future__ import annotations

import pyarrow as pa
import pytest

from pyconsumer.errors import ConfigurationError
from pyconsumer.values.schema import TIMESTAMP, SchemaError, infer_schema, parse_ddl, to_arrow_schema


def test_every_spark_type_maps_to_its_arrow_type() -> None:
    schema = parse_ddl(
        "a BOOLEAN, b TINYINT, c BYTE, d SMALLINT, e SHORT, f INT, g INTEGER, h BIGINT, i LONG, "
        "j FLOAT, k REAL, l DOUBLE, m STRING, n BINARY, o DATE, p TIMESTAMP, q TIMESTAMP_NTZ, "
        "r DECIMAL(10,2), s DECIMAL, t DEC(5), u NUMERIC(38, 38), v VARCHAR(10), w CHAR(3), x TIMESTAMP_LTZ"
    )
    assert [(f.name, f.type) for f in schema] == [
        ("a", pa.bool_()), ("b", pa.int8()), ("c", pa.int8()), ("d", pa.int16()), ("e", pa.int16()),
        ("f", pa.int32()), ("g", pa.int32()), ("h", pa.int64()), ("i", pa.int64()),
        ("j", pa.float32()), ("k", pa.float32()), ("l", pa.float64()), ("m", pa.string()),
        ("n", pa.binary()), ("o", pa.date32()), ("p", pa.timestamp("us", "UTC")), ("q", pa.timestamp("us")),
        ("r", pa.decimal128(10, 2)), ("s", pa.decimal128(10, 0)), ("t", pa.decimal128(5, 0)),
        ("u", pa.decimal128(38, 38)), ("v", pa.string()), ("w", pa.string()), ("x", TIMESTAMP),
    ]
    assert all(f.nullable for f in schema)


def test_the_brief_example_with_nested_types() -> None:
    schema = parse_ddl("id BIGINT, name STRING, tags ARRAY<STRING>, attrs MAP<STRING,INT>, at TIMESTAMP, "
                       "price DECIMAL(10,2), inner STRUCT<a: INT, b: DOUBLE>")
    assert schema == pa.schema([
        ("id", pa.int64()), ("name", pa.string()), ("tags", pa.list_(pa.string())),
        ("attrs", pa.map_(pa.string(), pa.int32())), ("at", pa.timestamp("us", "UTC")),
        ("price", pa.decimal128(10, 2)), ("inner", pa.struct([("a", pa.int32()), ("b", pa.float64())])),
    ])


def test_case_backquotes_not_null_comment_and_colons() -> None:
    schema = parse_ddl("`weird name` int NOT NULL COMMENT 'it\\'s' , `a``b` Array<struct<x:bigint not null>>, "
                       "c: string comment \"q\\\"uote\"")
    assert schema.names == ["weird name", "a`b", "c"]
    assert schema.field("weird name").type == pa.int32()
    assert schema.field("weird name").nullable is False
    assert schema.field("a`b").type == pa.list_(pa.struct([pa.field("x", pa.int64(), nullable=False)]))
    assert schema.field("c").metadata == {b"comment": b'q"uote'}
    assert schema.field("weird name").metadata == {b"comment": b"it's"}


def test_a_lone_struct_type_is_the_whole_schema() -> None:
    assert parse_ddl("STRUCT<a: INT, b: ARRAY<MAP<STRING, DOUBLE>>>") == pa.schema([
        ("a", pa.int32()), ("b", pa.list_(pa.map_(pa.string(), pa.float64())))])
    # a column named "struct" is still a column
    assert parse_ddl("struct INT") == pa.schema([("struct", pa.int32())])
    assert parse_ddl("s STRUCT<>") == pa.schema([("s", pa.struct([]))])


@pytest.mark.parametrize("ddl, message", [
    ("", "the DDL is empty at position 0 (near '')"),
    ("a INT,", "expected a field name at position 6 (near '<end of DDL>')"),
    ("a FOO", "unknown type 'FOO' at position 2 (near 'FOO')"),
    ("a INT b INT", "expected ',' or the end of the fields at position 6 (near 'b')"),
    ("a ARRAY<INT", "expected '>' at position 11 (near '<end of DDL>')"),
    ("a MAP<STRING INT>", "expected ',' at position 13 (near 'INT')"),
    ("a DECIMAL(40,2)", "DECIMAL(40,2) is out of range (precision 1..38, scale <= precision) at position 2 (near 'DECIMAL')"),
    ("a DECIMAL(5,6)", "DECIMAL(5,6) is out of range (precision 1..38, scale <= precision) at position 2 (near 'DECIMAL')"),
    ("a DECIMAL(x)", "expected a whole number at position 10 (near 'x')"),
    ("a INT NOT", "expected NULL after NOT at position 9 (near '<end of DDL>')"),
    ("a INT COMMENT x", "expected a quoted comment at position 14 (near 'x')"),
    ("a INT, A INT, a BIGINT", "duplicate field name 'a' at position 14 (near 'a')"),
    ("a #", "unexpected character in DDL at position 2 (near '#')"),
    ("STRUCT<a: INT> x", "unexpected text after the STRUCT type at position 15 (near 'x')"),
    ("a STRUCT<b INT", "expected ',' or the end of the fields at position 14 (near '<end of DDL>')"),
])
def test_bad_ddl_names_position_and_token(ddl: str, message: str) -> None:
    with pytest.raises(SchemaError) as info:
        parse_ddl(ddl)
    assert str(info.value) == message
    assert isinstance(info.value, ConfigurationError)


def test_error_position_points_into_the_ddl() -> None:
    ddl = "id BIGINT, tags ARRAY<STRNG>"
    with pytest.raises(SchemaError) as info:
        parse_ddl(ddl)
    assert info.value.position == ddl.index("STRNG")
    assert info.value.token == "STRNG"


def test_to_arrow_schema_takes_ddl_arrow_and_rejects_others() -> None:
    arrow = pa.schema([("x", pa.int16())])
    assert to_arrow_schema(arrow) is arrow
    assert to_arrow_schema("x SMALLINT") == arrow
    with pytest.raises(SchemaError, match="not dict"):
        to_arrow_schema({"x": "int"})


def test_a_pyspark_struct_type_maps_like_its_ddl() -> None:
    types = pytest.importorskip("pyspark.sql.types")
    t = types
    struct = t.StructType([
        t.StructField("a", t.IntegerType(), False), t.StructField("b", t.LongType()),
        t.StructField("c", t.ShortType()), t.StructField("d", t.ByteType()), t.StructField("e", t.FloatType()),
        t.StructField("f", t.DoubleType()), t.StructField("g", t.BooleanType()), t.StructField("h", t.StringType()),
        t.StructField("i", t.BinaryType()), t.StructField("j", t.DateType()), t.StructField("k", t.TimestampType()),
        t.StructField("l", t.DecimalType(7, 3)), t.StructField("m", t.ArrayType(t.StringType())),
        t.StructField("n", t.MapType(t.StringType(), t.LongType())),
        t.StructField("o", t.StructType([t.StructField("p", t.IntegerType())])),
    ])
    expected = parse_ddl("a INT NOT NULL, b BIGINT, c SMALLINT, d TINYINT, e FLOAT, f DOUBLE, g BOOLEAN, "
                         "h STRING, i BINARY, j DATE, k TIMESTAMP, l DECIMAL(7,3), m ARRAY<STRING>, "
                         "n MAP<STRING, BIGINT>, o STRUCT<p: INT>")
    assert to_arrow_schema(struct) == expected


def test_inference_follows_spark() -> None:
    schema = infer_schema([
        b'{"n": 1, "x": 1, "s": "a", "arr": [1, 2], "o": {"z": true, "y": null}}',
        b'{"n": 2.5, "x": "text", "big": 123456789012345678901, "nul": null}',
        None, b"not json", b"[1, 2]",
    ])
    assert schema == pa.schema([
        ("arr", pa.list_(pa.int64())), ("big", pa.decimal128(21, 0)), ("n", pa.float64()), ("nul", pa.string()),
        ("o", pa.struct([("y", pa.string()), ("z", pa.bool_())])), ("s", pa.string()), ("x", pa.string()),
    ])


def test_inference_needs_an_object() -> None:
    with pytest.raises(SchemaError, match="no JSON object"):
        infer_schema([b"5", None, b"{"])
