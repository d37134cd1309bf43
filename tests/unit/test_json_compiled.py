"""The compiled JSON parser (pyext/json.pyx) against the pyarrow path (pyarrow.json and the Python
reader, :func:`decode_json_pyarrow`): the same rows, the same bad rows and reasons, on fixed edge
cases and on hypothesis-generated schemas and documents; and which rows it reads itself."""
from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pyconsumer import records
from pyconsumer.values.json import decode_json, decode_json_pyarrow, json_type
from pyconsumer.values.json_compiled import compiled_program
from pyconsumer.values.schema import parse_ddl
from tests.unit.json_docs import BASE64, DATES, DECIMALS, FLOATS, INTS, OTHERS, STRINGS, TIMES, documents, schemas, untupled
from tests.unit.test_values_json import CASES, same

UTC = dt.timezone.utc
from tests.unit.test_values_json import DDL, FIELDS  # noqa: E402  (the shared cases' schema)
WIDE = ("i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT, f32 FLOAT, f64 DOUBLE, s STRING, b BOOLEAN, "
        "t TIMESTAMP, d DATE, l ARRAY<ARRAY<STRING>>, st STRUCT<x: INT, y: ARRAY<STRUCT<z: DOUBLE>>>")


def program(ddl: str) -> Any:
    found = compiled_program(json_type(parse_ddl(ddl)))
    assert found is not None
    return found


def deferred(ddl: str, values: list[bytes | None]) -> list[int]:
    """The rows the compiled parser leaves to the Python reader."""
    return list(records.json_decode(program(ddl), pa.array(values, pa.binary()))[1])


def check(values: list[bytes | None], schema: Any) -> None:
    """The compiled path and the pyarrow path agree, in both result modes."""
    arr = pa.array(values, pa.binary())
    assert compiled_program(json_type(schema)) is not None
    for partial in (False, True):
        got = decode_json(arr, schema, partial_results=partial)
        want = decode_json_pyarrow(arr, schema, partial_results=partial)
        assert got.errors == want.errors
        assert got.array.type == want.array.type
        differ = [(values[i], g, w) for i, (g, w) in enumerate(zip(got.array.to_pylist(), want.array.to_pylist()))
                  if not same(untupled(g), untupled(w))]
        assert not differ
        got.array.validate(full=True)


def test_the_shared_cases_agree_with_the_pyarrow_path_together_and_alone() -> None:
    values = [v for v, _, _ in CASES]
    check(values, DDL)
    for value in values:
        check([value], DDL)


def test_rows_the_compiled_parser_gives_itself() -> None:
    values = [b'{"a": 1, "b": -9223372036854775808, "c": 1.5e3, "d": "caf\\u00e9 \\ud83d\\ude00", "e": true, '
              b'"f": [1, null, -2147483648], "g": {"x": 7, "y": 8}, "t": "2024-01-01T01:02:03.123456+02:00", '
              b'"dt": "2024-1-5", "zz": [1, {"q": [null, "s\\n"]}], "c2": NaN}',
              b' \t\r\n{"a":1}trailing', b"", b"  ", None, b'{"t": 1700000000, "c": "-Infinity", "d": "\\u0000"}',
              b'{"dt": "2024-01-31T23:00:00-05:00", "t": "2024-01-01 10", "c": -0}',
              b'{"\\u0061": 5, "\\u00e9t\\u00e9": 1, "\\ud83d\\ude00": [], "\\"": 2}']
    assert deferred(DDL, values) == []
    got = decode_json(pa.array(values, pa.binary()), DDL).array.to_pylist()
    assert got[0] == {"a": 1, "b": -9223372036854775808, "c": 1500.0, "d": "caf\u00e9 \U0001F600", "e": True,
                      "f": [1, None, -2147483648], "g": {"x": 7}, "t": dt.datetime(2023, 12, 31, 23, 2, 3, 123456, tzinfo=UTC),
                      "dt": dt.date(2024, 1, 5), "dec": None}
    assert got[1] == {"a": 1, "b": None, "c": None, "d": None, "e": None, "f": None, "g": None, "t": None, "dt": None,
                      "dec": None}
    assert got[2:5] == [None, None, None]
    assert got[5]["t"] == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert got[5]["c"] == -math.inf and got[5]["d"] == "\x00"
    assert got[6]["dt"] == dt.date(2024, 1, 31) and got[6]["t"] == dt.datetime(2024, 1, 1, 10, tzinfo=UTC)
    assert math.copysign(1, got[6]["c"]) == -1
    assert got[7]["a"] == 5  # an escaped key names its field
    texts = [b'{"d": %s}' % t for t in (b"-12345678901234567890123", b"true", b"false", b"NaN", b"-Infinity", b"0",
                                         b'{ "x" : [1, {"y": null}], "k\\u00e9\\u0001" : "\\/\\"\\ud83d\\ude00" }')]
    assert deferred(DDL, texts) == []
    got = decode_json(pa.array(texts, pa.binary()), DDL).array.to_pylist()
    assert [r["d"] for r in got] == ["-12345678901234567890123", "true", "false", "NaN", "-Infinity", "0",
                                     '{"x":[1,{"y":null}],"k\u00e9\\u0001":"/\\"\U0001F600"}']


def test_rows_left_to_the_python_reader() -> None:
    # every bad row, and the good rows it cannot give exactly: a repeated key, a fraction for
    # STRING (rewritten through a double), bad UTF-8 in a kept string, a zone name, leading space json
    # does not know
    values = [b'{"a": 1, "a": 2}', b'{"\\u0061": 1, "a": 2}', b'{"d": 5.5}', b'{"d": "\xff"}',
              b'{"t": "2024-07-01T00:00:00Europe/Paris"}', b'\x0b{"a": 1}', b'{"a": "1"}', b"[1]",
              b'{"a": 1', b'{"zz": "\\ud800", "a": 1}', b'{"zz": "\xff", "q": 1}']
    assert deferred(DDL, values) == list(range(9))
    check(values, DDL)


@pytest.mark.parametrize("ddl,texts", [
    ("v TINYINT", INTS), ("v SMALLINT", INTS), ("v INT", INTS), ("v BIGINT", INTS),
    ("v FLOAT", FLOATS + INTS), ("v DOUBLE", FLOATS + INTS), ("v STRING", STRINGS + OTHERS),
    ("v TIMESTAMP", TIMES), ("v TIMESTAMP_NTZ", TIMES), ("v DATE", DATES), ("v BINARY", BASE64 + STRINGS), ("v BOOLEAN", ["true", "false", "1", '"true"', "True"] + OTHERS),
    ("v DECIMAL(5,2)", DECIMALS), ("v DECIMAL(38,0)", DECIMALS), ("v DECIMAL(38,38)", DECIMALS),
    ("v DECIMAL(1,1)", DECIMALS), ("v DECIMAL(10,3)", DECIMALS + INTS + FLOATS),
    ("v ARRAY<INT>", ["[]", "[1, null]", "[1, 2.5]", "[[1]]", "[1,]", "[ 1 , 2 ]"] + OTHERS),
    ("v MAP<STRING, INT>", ['{"w": 1}', '{"w": 1, "w": 2}', '{"w": 1, "\\u0077": 2}', '{"w": "x"}', "{}",
                            '{"w": null}', '{"\\ud800": 1}', '{"a": 1, "b": [1]}', "{" + ", ".join(f'"k{i}": {i}' for i in range(70)) + "}"]
     + OTHERS),
    ("v MAP<STRING, ARRAY<STRUCT<w: STRING>>>", ['{"k": [{"w": "x"}, null]}', '{"k": [], "j": null}', '{"k": [{"w": 1}]}']
     + OTHERS),
    ("v STRUCT<w: INT>", ['{"w": 1}', '{"w": 1, "w": 2}', '{"w": "x"}', "{}", '{"x": 1}'] + OTHERS),
])
def test_every_type_at_its_edges(ddl: str, texts: list[str]) -> None:
    values: list[bytes | None] = [f'{{"v": {t}}}'.encode() for t in texts]
    values += [f'{{"v":{t}, "k": 1}}'.encode() for t in texts]
    values += [f'{{"v": {t}'.encode() for t in texts]  # cut short
    check(values, ddl)


def test_numbers_read_exactly_as_python_reads_them() -> None:
    texts = ["0.1", "0.2", "0.30000000000000004", "123456.789", "1e22", "1e23", "9007199254740993",
             "123456789012345.6", "1234567890123456.7", "-1.5e-7", "2.2250738585072011e-308", "5e-324",
             "1.7976931348623159e308", "0.000001", "1e-22", "1.0000000000000002",
             # 16 to 19 digits, and halfway points between doubles among them
             "0.5613031609051728", "0.47619571412857614", "9007199254740993", "9007199254740995",
             "-9007199254740993e-5", "18014398509481985", "9999999999999999999", "1.8446744073709551e19",
             "123456789012345678e-27", "3.1415926535897932384e27", "2.2250738585072014e-308"]
    values = [f'{{"f64": {t}, "f32": {t}}}'.encode() for t in texts]
    got = decode_json(pa.array(values, pa.binary()), WIDE).array.to_pylist()
    assert deferred(WIDE, values) == []
    for text, row in zip(texts, got):
        assert row["f64"] == float(text)
        assert row["f32"] == pa.array([float(text)], pa.float32())[0].as_py() or (
            abs(float(text)) > 3.4028234663852886e38 and math.isinf(row["f32"]))


def test_keys_of_up_to_a_word_and_longer_match_only_their_field() -> None:
    # keys of up to 8 bytes are compared a word at a time: prefixes, one byte more or less,
    # escapes and a key at the value's very end must still match only their own field
    values = [b'{"id":1}', b'{"\\u0069d":2}', b'{"i":3,"id":4}', b'{"idx":5}', b'{"abcdefgh":6,"abcdefghi":7}',
              b'{"abcdefghi":8,"abcdefgh":9}', b'{"abcdefgX":1,"abcdefghX":2}', b'{"x":"a","id":10}', b'{"id":11',
              b'{"\\u0061bcdefgh":13}', b'{"i\\u0064":15}', b'{"":1,"id":16}', b'{"x":"r","id"']
    check(values, "id BIGINT, abcdefgh INT, abcdefghi INT, x STRING")


def test_deep_nesting_is_a_bad_row_not_a_crash() -> None:
    # up to 500 levels the pyarrow path and the compiled one agree (past 64 the Python reader
    # reads the row); deeper, the Python reader gives up, as Spark's Jackson does past 1000
    # levels, where pyarrow.json reads on: a bad row (a deliberate difference from that path)
    shallow = [b'{"a": 1, "zz": ' + b"[" * n + b"]" * n + b"}" for n in (10, 63, 64, 65, 500)]
    shallow += [b'{"g": ' + b'{"x": 1, "q": ' * n + b"1" + b"}" * n + b"}" for n in (10, 70, 400)]
    shallow += [b"[" * 100_000, b'{"a": ' + b"[" * 100_000]
    check(shallow, DDL)
    deep = [b'{"a": 1, "zz": ' + b"[" * n + b"]" * n + b"}" for n in (5000, 100_000)]
    deep += [b'{"g": ' + b'{"x": 1, "q": ' * n + b"1" + b"}" * n + b"}" for n in (2000,)]
    for partial in (False, True):
        got = decode_json(pa.array(deep, pa.binary()), DDL, partial_results=partial)
        assert got.errors == dict.fromkeys(range(3), "not valid JSON: nested too deeply")
        assert got.array.to_pylist() == [{f: None for f in FIELDS} if partial else None] * 3


def test_a_wide_schema_of_every_type() -> None:
    values = [json.dumps({"i8": -128, "i16": 32767, "i32": 5, "i64": -1, "f32": 0.5, "f64": 1e300, "s": "x",
                          "b": False, "t": "2024-02-29T12:00:00Z", "d": "2024-02-29", "l": [["a", None], None, []],
                          "st": {"x": 1, "y": [{"z": 0.25}, None, {}]}}).encode(),
              b'{"l": [["a", 1]]}', b'{"st": {"y": [{"z": "q"}]}}', b'{"st": {"y": {}}}', b"{}"]
    check(values, WIDE)
    assert deferred(WIDE, values) == [2, 3]  # an integer in a list of STRING is its text


def test_slices_chunks_and_strings() -> None:
    values = [b'{"a": %d}' % i for i in range(100)] + [None, b'{"a": "x"}']
    arr = pa.array(values, pa.binary())
    for data in (arr.slice(7, 90), arr.slice(95), pa.chunked_array([arr.slice(0, 50), arr.slice(50)]),
                 arr.cast(pa.string()).slice(3), arr.cast(pa.large_binary()), arr.cast(pa.large_string()).slice(2)):
        got = decode_json(data, DDL)
        want = decode_json_pyarrow(data, DDL)
        assert got.errors == want.errors and got.array.to_pylist() == want.array.to_pylist()


def test_the_spark_differentials_go_through_the_compiled_parser() -> None:
    # tests/spark/test_values_json_vs_spark.py compares decode_json with Spark's from_json on
    # these schemas: the compiled parser is what it checks
    from tests.spark.test_values_json_vs_spark import EXTRA_DDL

    for ddl in (EXTRA_DDL, DDL, "b BINARY, n TIMESTAMP_NTZ, s STRUCT<b: BINARY>"):
        assert compiled_program(json_type(parse_ddl(ddl))) is not None


def test_schemas_the_compiled_parser_leaves_to_pyarrow() -> None:
    for ddl in ("m MAP<INT, STRING>", "s STRUCT<x: ARRAY<MAP<DATE, INT>>>"):
        assert compiled_program(json_type(parse_ddl(ddl))) is None
    assert compiled_program(pa.struct([pa.field("a", pa.large_string())])) is None
    # a struct naming one field twice
    assert compiled_program(pa.struct([pa.field("a", pa.int32()), pa.field("a", pa.string())])) is None


def test_a_malformed_program_is_refused() -> None:
    with pytest.raises(ValueError, match="root struct"):
        records.JsonProgram(pa.struct([]), [], [])
    with pytest.raises(ValueError, match="item column"):
        records.JsonProgram(pa.struct([]), [(0, -1, 0, 1, 0, 0), (1, 0, 0, 0, 0, 0)], [(1, b"a")])
    with pytest.raises(ValueError, match="out of the table"):
        records.JsonProgram(pa.struct([]), [(0, -1, 0, 3, 0, 0)], [])
    with pytest.raises(ValueError, match="not a decimal128"):
        records.JsonProgram(pa.struct([]), [(0, -1, 0, 1, 0, 0), (12, -1, 0, 0, 39, 2)], [(1, b"a")])
    with pytest.raises(TypeError, match="binary or string"):
        records.json_decode(program("a INT"), pa.array([1]))


def test_decimals_given_by_the_compiled_parser() -> None:
    values = [b'{"v": 1.234}', b'{"v": 1.235}', b'{"v": "-1.5"}', b'{"v": 1e2}', b'{"v": -0.005}', b'{"v": 999.994}',
              b'{"v": 0E+10}', b'{"v": 0.00000000000000000000000000000000000000000001}']
    assert deferred("v DECIMAL(5,2)", values) == []
    got = [r["v"] for r in decode_json(pa.array(values, pa.binary()), "v DECIMAL(5,2)").array.to_pylist()]
    assert got == [Decimal(t) for t in ("1.23", "1.24", "-1.50", "100.00", "-0.01", "999.99", "0.00", "0.00")]


GENERATED = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@GENERATED
@given(data=st.data(), schema=schemas())
def test_generated_schemas_and_documents(data: st.DataObject, schema: pa.StructType) -> None:
    values = data.draw(st.lists(documents(schema), min_size=1, max_size=12))
    check(values, pa.schema(list(schema)))


def test_decode_threads_share_one_program() -> None:
    # the parse runs without the GIL on the consumer's decode threads: one program, many
    # threads, each its own columns
    from concurrent.futures import ThreadPoolExecutor

    values = [json.dumps({"a": i, "d": f"row {i}", "f": list(range(i % 5)), "t": i}).encode() for i in range(20_000)]
    values[777] = b'{"a": "bad"}'
    arr = pa.array(values, pa.binary())
    want = decode_json_pyarrow(arr, DDL)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda k: decode_json(arr.slice(k * 5000, 5000), DDL), range(4)))
    assert [r.errors for r in results] == [{777: want.errors[777]}, {}, {}, {}]
    assert pa.concat_arrays([r.array for r in results]).to_pylist() == want.array.to_pylist()
