"""The compiled JSON parser against Spark's own ``from_json``: the rows of
test_values_json_vs_spark (whose schema holds a MAP, so that test reads through the pyarrow path)
under the same schema without its MAP, which the compiled parser reads."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from pyconsumer.values.json import decode_json, json_type
from pyconsumer.values.json_compiled import compiled_program
from pyconsumer.values.schema import parse_ddl
from tests.spark.test_values_json_vs_spark import DELIBERATE, EXTRA, _generated
from tests.unit.test_values_json import CASES, DDL, same

COMPILED_DDL = DDL + ", by TINYINT, sh SMALLINT, fl FLOAT, n ARRAY<STRUCT<p: STRING, q: ARRAY<DATE>>>"


def test_compiled_parser_equals_spark_from_json(spark: Any) -> None:
    from pyspark.sql import functions as F

    assert compiled_program(json_type(parse_ddl(COMPILED_DDL))) is not None
    rows: list[bytes | None] = [v for v, _, _ in CASES if v not in DELIBERATE] + EXTRA + _generated(3000, 26)
    frame = spark.createDataFrame([(i, v) for i, v in enumerate(rows)], "i INT, v BINARY")
    result = (frame.select("i", F.from_json(F.col("v").cast("string"), COMPILED_DDL + ", _corrupt_record STRING")
                           .alias("j")).orderBy("i").toArrow())
    theirs = result.column("j").combine_chunks()
    corrupt = theirs.field("_corrupt_record")
    spark_bad = {i for i in range(len(rows)) if corrupt[i].is_valid and theirs[i].is_valid}
    spark_values = pa.StructArray.from_arrays(
        [theirs.field(name) for name in theirs.type.names if name != "_corrupt_record"],
        fields=[f for f in theirs.type if f.name != "_corrupt_record"],
        mask=theirs.is_null(),
    )
    ours = decode_json(pa.array(rows, pa.binary()), COMPILED_DDL, partial_results=True)
    assert ours.array.type == spark_values.type
    mismatches = [(value, ours.array[i].as_py(), spark_values[i].as_py()) for i, value in enumerate(rows)
                  if not same(ours.array[i].as_py(), spark_values[i].as_py())]
    assert mismatches == [], "\n".join(map(repr, mismatches))
    assert set(ours.errors) == spark_bad
    assert len(spark_bad) > 300
