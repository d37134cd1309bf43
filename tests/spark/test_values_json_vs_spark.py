"""decode_json against Spark's own ``from_json`` on the same rows: one query, many rows.

The values go to Spark as binary (what a Kafka value is) and are read with
``from_json(value.cast("string"), ddl)``, the line users write today; Spark's result comes back as
Arrow and is compared with ``decode_json(..., partial_results=True)`` row by row. Which rows are bad
is compared too: Spark marks them in a ``_corrupt_record`` column of the schema.
"""
from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer.values.json import decode_json
from tests.unit.test_values_json import CASES, DDL, same

# Spark's defaults accept these; pyconsumer deliberately does not (documented in values/json.py)
DELIBERATE = {
    b"{'a': 1}",  # single quotes
    b'{"by": 200}',  # Spark wraps TINYINT 128..255 to negative numbers
    b'{"d": "\\ud800"}',  # a lone surrogate escape
}

EXTRA_DDL = DDL + ", by TINYINT, sh SMALLINT, fl FLOAT, m MAP<STRING, BIGINT>, n ARRAY<STRUCT<p: STRING, q: ARRAY<DATE>>>"

EXTRA: list[bytes] = [
    # numbers read as STRING: Spark writes them back through a double
    b'{"d": 1e2}', b'{"d": 1E20}', b'{"d": 0.0001}', b'{"d": 123456789.5}', b'{"d": -1.0E-5}', b'{"d": 0.001}',
    b'{"d": 12345678.0}', b'{"d": -0.0}', b'{"d": 100}', b'{"d": -7}', b'{"d": [1.50, {"k": 2.0}]}',
    b'{"d": "\\"quoted\\" \\\\ \\/ \\b\\f\\n\\r\\t"}', b'{"d": {"s": "\\u00e9\\n"}}',
    # timestamps and dates in Spark's lenient forms
    b'{"t": "2024-01-01T00:00:00.123456789Z"}', b'{"t": "2024-01-01T24:00:00"}', b'{"t": "2024-01-01T00:00:00+14:00"}',
    b'{"t": "+2024-01-01"}', b'{"t": "2024-01-01T00:00:00 UTC"}', b'{"t": "2024-01-01T10"}', b'{"t": "20240101"}',
    b'{"t": " 2024-01-01T00:00:00Z "}', b'{"t": "2024-01-01T00:00:00.Z"}', b'{"t": "2024-01-01T00:00:00z"}',
    b'{"t": "2024-01-01T00:00:00-0000"}', b'{"t": "2024-01-01t00:00:00Z"}', b'{"t": "2024"}', b'{"t": "2024-01"}',
    b'{"t": "2024-01-01T00:00:60"}', b'{"t": "9999-12-31T23:59:59.999999Z"}', b'{"t": "0001-01-01T00:00:00Z"}',
    b'{"t": "1969-12-31T23:59:59.999999Z"}', b'{"t": "2024-01-01T00:00:00+01"}', b'{"t": "2024-07-01T00:00:00Europe/Paris"}',
    b'{"dt": "2024-01-01Z"}', b'{"dt": "2024-01-01 "}', b'{"dt": "2024-01-01T"}', b'{"dt": "+2024-01-01"}',
    b'{"t": "2024-06-30T12:34:56.789Z"}', b'{"t": "2024-06-30T12:34:56+0530"}', b'{"t": "2024-06-30T12:34"}',
    b'{"t": "2024-06-30 12:34:56.1234567"}', b'{"t": "2024-6-3"}', b'{"t": "2024-02-30"}', b'{"t": -5}',
    b'{"dt": "2024-02-30"}', b'{"dt": "2024-06"}', b'{"dt": "2024"}', b'{"dt": " 2024-06-30 "}', b'{"dt": "0001-01-01"}',
    # the other integer and float widths
    b'{"by": -128}', b'{"by": 127}', b'{"by": -129}', b'{"sh": 32767}', b'{"sh": -32769}', b'{"fl": 3.5e38}',
    b'{"fl": -1e39}', b'{"fl": "NaN"}',
    # maps and nested arrays of structs
    b'{"m": {"x": 1, "y": null}}', b'{"m": {"x": 1.5}}', b'{"m": []}', b'{"m": {}}',
    b'{"n": [{"p": "a", "q": ["2024-01-01", null]}, null, {"p": 5}]}', b'{"n": [{"q": ["nope"]}]}', b'{"n": {}}',
    b'{"dec": -999.995}', b'{"dec": 999.994}', b'{"dec": 0.005}', b'{"dec": "abc"}', b'{"dec": true}',
]


def _generated(count: int, seed: int) -> list[bytes]:
    """Plausible records with now and then a wrong type, an overflow or a broken byte."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        record: dict[str, Any] = {
            "a": rng.choice([rng.randint(-(2**31), 2**31 - 1), None, rng.randint(2**31, 2**40), "7"]),
            "b": rng.randint(-(2**63), 2**63 - 1),
            "c": rng.choice([rng.uniform(-1e6, 1e6), rng.randint(-10, 10), "x"]),
            "d": rng.choice(["plain", "caf\u00e9", "", str(i), 12]),
            "e": rng.choice([True, False, None, 1]),
            "f": rng.choice([[rng.randint(-5, 5) for _ in range(rng.randint(0, 3))], [1, "z"], None]),
            "g": rng.choice([{"x": rng.randint(-9, 9)}, {"x": "no"}, None, 3]),
            "t": rng.choice(["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123+01:00", 1700000000, "bad"]),
            "dt": rng.choice(["2024-02-29", "2023-02-29", "2024-12-31", None]),
            "dec": rng.choice([round(rng.uniform(-999, 999), 3), "12.345", 123456.7]),
        }
        for key in rng.sample(sorted(record), rng.randint(0, 3)):
            del record[key]
        text = json.dumps(record)
        roll = rng.random()
        if roll < 0.02:
            text = text[: rng.randint(0, len(text))]  # truncated
        elif roll < 0.03:
            text = text.replace(":", ": \n ", 1)  # a raw newline between tokens
        out.append(text.encode())
    return out


def test_decode_json_equals_spark_from_json(spark: Any) -> None:
    from pyspark.sql import functions as F

    rows: list[bytes | None] = [v for v, _, _ in CASES if v not in DELIBERATE] + EXTRA + _generated(3000, 25)
    frame = spark.createDataFrame([(i, v) for i, v in enumerate(rows)], "i INT, v BINARY")
    spark_schema = EXTRA_DDL + ", _corrupt_record STRING"
    result = (frame.select("i", F.from_json(F.col("v").cast("string"), spark_schema).alias("j"))
              .orderBy("i").toArrow())
    theirs = result.column("j").combine_chunks()
    corrupt = theirs.field("_corrupt_record")
    spark_bad = {i for i in range(len(rows)) if corrupt[i].is_valid and theirs[i].is_valid}
    spark_values = pa.StructArray.from_arrays(
        [theirs.field(name) for name in theirs.type.names if name != "_corrupt_record"],
        fields=[f for f in theirs.type if f.name != "_corrupt_record"],
        mask=theirs.is_null(),
    )

    ours = decode_json(pa.array(rows, pa.binary()), EXTRA_DDL, partial_results=True)
    assert ours.array.type == spark_values.type
    mismatches = []
    for i, value in enumerate(rows):
        mine, spark_row = ours.array[i], spark_values[i]
        if not same(mine.as_py(), spark_row.as_py()):
            mismatches.append((value, mine.as_py(), spark_row.as_py()))
    assert mismatches == [], '\n'.join(map(repr, mismatches))
    assert set(ours.errors) == spark_bad
    assert len(spark_bad) > 300  # the generated rows do carry bad ones


def test_python_only_types_equal_spark(spark: Any) -> None:
    """BINARY (base64) and TIMESTAMP_NTZ rows, which decode_json reads without pyarrow."""
    from pyspark.sql import functions as F

    ddl = "b BINARY, n TIMESTAMP_NTZ, s STRUCT<b: BINARY>"
    rows = [
        b'{"b": "aGVsbG8="}', b'{"b": "aGVsbG8"}', b'{"b": "not base64!"}', b'{"b": "aGVs\\nbG8="}', b'{"b": 5}',
        b'{"b": ""}', b'{"s": {"b": "AAE="}}', b'{"n": "2024-01-01T00:00:00"}', b'{"n": "2024-01-01T00:00:00Z"}',
        b'{"n": "2024-01-01T00:00:00+02:00"}', b'{"n": 1700000000}', b'{"n": "2024-01-01"}', b'{"n": "2024-01-01 10:11:12.5"}',
    ]
    frame = spark.createDataFrame([(i, v) for i, v in enumerate(rows)], "i INT, v BINARY")
    theirs = (frame.select("i", F.from_json(F.col("v").cast("string"), ddl + ", _corrupt_record STRING").alias("j"))
              .orderBy("i").toArrow().column("j").combine_chunks())
    ours = decode_json(pa.array(rows, pa.binary()), ddl, partial_results=True)
    for i, value in enumerate(rows):
        spark_row = theirs[i].as_py()
        spark_bad = spark_row.pop("_corrupt_record") is not None
        assert (ours.array[i].as_py(), i in ours.errors) == (spark_row, spark_bad), value


@pytest.mark.parametrize("value", sorted(DELIBERATE))
def test_the_deliberate_differences_are_still_differences(spark: Any, value: bytes) -> None:
    """If Spark ever stops accepting these, the documented differences can go."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(value,)], "v BINARY")
    spark_row = frame.select(F.from_json(F.col("v").cast("string"), EXTRA_DDL).alias("j")).collect()[0].j
    ours = decode_json(pa.array([value], pa.binary()), EXTRA_DDL, partial_results=True)
    assert list(ours.errors) == [0]
    assert spark_row.asDict() != ours.array[0].as_py()


def test_infer_schema_equals_sparks_json_inference(spark: Any) -> None:
    from pyconsumer.values.schema import infer_schema, to_arrow_schema

    samples = [
        '{"n": 1, "x": 1, "s": "a", "arr": [1, 2], "o": {"z": true, "y": null}}',
        '{"n": 2.5, "x": "text", "big": 123456789012345678901, "nul": null, "mix": [1, 2.5], '
        '"t": "2024-01-01T00:00:00Z", "d": "2024-01-01"}',
        '{"big2": 123456789012345678901, "dec": 1.5, "wide": 1234567890123456789012345}',
        '{"big2": 5, "arr2": [[1], [2.5]], "o2": {"a": 1}, "wide": 1.5}',
        '{"o2": {"b": "x"}, "e": [], "deep": [{"k": [null, {"m": 1}]}]}',
        '{"deep": [{"k": [{"m": "s"}]}], "flag": false}',
    ]
    theirs = spark.read.json(spark.sparkContext.parallelize(samples)).schema
    assert infer_schema(s.encode() for s in samples) == to_arrow_schema(theirs)


GOOD_DDL = [
    "id BIGINT, name STRING, tags ARRAY<STRING>, attrs MAP<STRING,INT>, at TIMESTAMP, price DECIMAL(10,2), "
    "inner STRUCT<a: INT, b: DOUBLE>",
    "a int, B Bigint, c tinyint, d smallint, e float, f real, g double, h boolean, i binary, j date",
    "`weird name` INT NOT NULL COMMENT 'a \\'quoted\\' note', `a``b` STRING",
    "s STRUCT<x: ARRAY<MAP<STRING, DECIMAL(38, 38)>>, y STRUCT<z: TIMESTAMP_NTZ NOT NULL>>",
    "STRUCT<a: INT, b: STRING>",
    "d DECIMAL, e DEC(5), n NUMERIC(7, 1), v VARCHAR(10), c CHAR(2), l LONG, sh SHORT, by BYTE, it INTEGER",
    "e STRUCT<>, t TIMESTAMP_LTZ",
    "a: INT, b: STRING",
]
BAD_DDL = ["a INT,", "a FOO", "a INT b INT", "a ARRAY<INT", "a MAP<STRING INT>", "a DECIMAL(40,2)", "a INT NOT",
           "a #", "STRUCT<a: INT> x"]


def _plain(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.remove_metadata() for f in schema])


def test_parse_ddl_reads_ddl_as_spark_does(spark: Any) -> None:
    from pyspark.sql.types import StructType

    from pyconsumer.values.schema import SchemaError, parse_ddl, to_arrow_schema

    for ddl in GOOD_DDL:
        assert _plain(parse_ddl(ddl)) == to_arrow_schema(StructType.fromDDL(ddl)), ddl
    for ddl in BAD_DDL:
        with pytest.raises(SchemaError):
            parse_ddl(ddl)
        with pytest.raises(Exception):  # noqa: B017 - Spark's parse errors have no one class
            StructType.fromDDL(ddl)
