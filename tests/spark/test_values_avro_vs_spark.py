"""decode_avro against Spark's own from_avro (spark-avro from Maven Central) on the same bodies:
the same Arrow type (Spark's Arrow export of the from_avro column) and the same values, for
every Avro type, hypothesis-made schemas, and an evolved writer/reader pair (from_avro's
``avroSchema`` option)."""
from __future__ import annotations

import io
import json
import os
from typing import Any

import pyarrow as pa
import pytest

fastavro = pytest.importorskip("fastavro")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pyconsumer.testing import spark_avro_jar  # noqa: E402
from pyconsumer.values.avro_decode import decode_avro  # noqa: E402
from tests.unit.test_values_avro import schemas, values_for  # noqa: E402

@pytest.fixture(scope="module")
def spark_avro(spark: Any) -> Any:
    """The session with spark-avro added (ADD JAR: the session is shared and already up)."""
    try:
        jar = spark_avro_jar()
    except Exception as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"spark-avro is not available: {exc}")
    spark.sql(f"ADD JAR '{jar}'")
    return spark


def _bodies(schema: Any, values: list[Any]) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for v in values:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, v)
        out.append(buf.getvalue())
    return out


def _spark(spark: Any, bodies: list[bytes], writer: Any, reader: Any = None) -> pa.Array:
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro
    # PERMISSIVE (the default, and the type our decoder gives: all nullable); a record Spark
    # failed would be a struct of nulls here, which no good value equals
    options = {"mode": "PERMISSIVE"}
    if reader is not None:
        options["avroSchema"] = json.dumps(reader)
    df = spark.createDataFrame([(b,) for b in bodies], "value binary")
    out = df.select(from_avro(F.col("value"), json.dumps(writer), options).alias("v"))
    return out.toArrow().column("v").combine_chunks()


def _unordered_maps(t: pa.DataType, v: Any) -> Any:
    """v with every map's entries sorted by key: Avro maps have no order, Spark's reader
    hands them out in its hash map's order, ours in the order written."""
    if v is None:
        return None
    if pa.types.is_map(t):
        return sorted((k, _unordered_maps(t.item_type, x)) for k, x in v)
    if pa.types.is_list(t):
        return [_unordered_maps(t.value_type, x) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: _unordered_maps(t.field(i).type, v[t.field(i).name])
                for i in range(t.num_fields)}
    return v


def _same(spark_col: pa.Array, mine: pa.Array) -> None:
    assert mine.type == spark_col.type
    assert [_unordered_maps(mine.type, r) for r in mine.to_pylist()] == \
        [_unordered_maps(spark_col.type, r) for r in spark_col.to_pylist()]


EVERY = {"type": "record", "name": "Every", "namespace": "t", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
    {"name": "by", "type": "bytes"}, {"name": "s", "type": "string"},
    {"name": "n", "type": "null"},
    {"name": "opt", "type": ["null", "string"]},
    {"name": "u", "type": ["null", "int", "string", {"type": "record", "name": "Sub", "fields": [
        {"name": "x", "type": "long"}]}]},
    {"name": "il", "type": ["int", "long"]}, {"name": "fd", "type": ["float", "double"]},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 4}},
    {"name": "a", "type": {"type": "array", "items": ["null", "long"]}},
    {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
    {"name": "date", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tms", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tus", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "decb", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20,
                              "scale": 4}},
    {"name": "decf", "type": {"type": "fixed", "name": "DF", "size": 8, "logicalType": "decimal",
                              "precision": 18, "scale": 2}},
    {"name": "uuid", "type": {"type": "string", "logicalType": "uuid"}},
]}


# a Spark job an example: no shrinking (minutes); the failing example is printed as drawn
@settings(max_examples=8, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_type_as_spark_reads_it(spark_avro: Any, data: st.DataObject) -> None:
    values = data.draw(st.lists(values_for(EVERY), min_size=1, max_size=8))
    bodies = _bodies(EVERY, values)
    mine = decode_avro(bodies, framing="none", writer=EVERY)
    assert mine.errors == {}
    _same(_spark(spark_avro, bodies, EVERY), mine.array)


@settings(max_examples=25, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_schemas_as_spark_reads_them(spark_avro: Any, data: st.DataObject) -> None:
    # Spark's own Arrow export breaks on lists and maps of the null type (its child lengths
    # come out wrong): those schemas are left out
    schema = data.draw(schemas.filter(lambda s: '"items": "null"' not in json.dumps(s)
                                      and '"values": "null"' not in json.dumps(s)))
    values = data.draw(st.lists(values_for(schema), min_size=1, max_size=5))
    bodies = _bodies(schema, values)
    mine = decode_avro(bodies, framing="none", writer=schema)
    assert mine.errors == {}
    _same(_spark(spark_avro, bodies, schema), mine.array)


def test_an_evolved_pair_as_spark_reads_it(spark_avro: Any) -> None:
    writer = {"type": "record", "name": "User", "fields": [
        {"name": "id", "type": "int"}, {"name": "gone", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y"]}}]}
    reader = {"type": "record", "name": "User", "fields": [
        {"name": "id", "type": "long"},
        {"name": "tags", "type": {"type": "array", "items": "bytes"}},
        {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["Y", "X", "Z"]}},
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "score", "type": "double", "default": 1.5}]}
    values = [{"id": i, "gone": "g" * i, "tags": ["a"] * (i % 3), "kind": "XY"[i % 2]}
              for i in range(10)]
    bodies = _bodies(writer, values)
    mine = decode_avro(bodies, framing="none", writer=writer, reader=reader)
    assert mine.errors == {}
    _same(_spark(spark_avro, bodies, writer, reader), mine.array)
