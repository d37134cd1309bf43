"""pyconsumer.values.json: decode_json / decode_string, exact values and exact row errors.

The expected values are Spark 4's ``from_json(col.cast("string"), ddl)`` results (checked live in
tests/spark/test_values_json_vs_spark.py); the hypothesis tests compare the pyarrow fast path with
the values the rows were generated from and with the Python reader.
"""
from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyconsumer.values.json import decode_json
from pyconsumer.values.json_rows import decode_json_rows
from pyconsumer.values.string import decode_string

UTC = dt.timezone.utc
DDL = "a INT, b BIGINT, c DOUBLE, d STRING, e BOOLEAN, f ARRAY<INT>, g STRUCT<x: INT>, t TIMESTAMP, dt DATE, dec DECIMAL(5,2)"
FIELDS = ["a", "b", "c", "d", "e", "f", "g", "t", "dt", "dec"]


def row(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(FIELDS)
    out.update(values)
    return out


# (value, Spark's from_json row, or None for a null row; the reason when the row is bad)
CASES: list[tuple[bytes | None, dict[str, Any] | None, str | None]] = [
    (b'{"a": 1}', row(a=1), None),
    (b'{"a": 1, "zz": [1, {"q": 2}]}', row(a=1), None),
    (b'{"a": null, "b": null}', row(), None),
    (b"{}", row(), None),
    (b'{"A": 1}', row(), None),  # names are case-sensitive
    (b'{"a": 1, "a": 2}', row(a=2), None),  # the last key wins
    (b'{"a": 1} {"a": 2}', row(a=1), None),  # Spark reads the first object only
    (b'{"a": 1}garbage', row(a=1), None),
    (b'{"a":\n1,\r\n"b": 2}', row(a=1, b=2), None),  # raw newlines between tokens
    (b'\n {"a": 1}\n', row(a=1), None),
    (b'{"a": -0}', row(a=0), None),
    (b'{"b": -9223372036854775808}', row(b=-9223372036854775808), None),
    (b'{"c": 1}', row(c=1.0), None),
    (b'{"c": -Infinity}', row(c=-math.inf), None),
    (b'{"c": "Infinity"}', row(c=math.inf), None),
    (b'{"c": 1e400}', row(c=math.inf), None),
    (b'{"d": 123}', row(d="123"), None),
    (b'{"d": 1.50}', row(d="1.5"), None),
    (b'{"d": {"x": 1, "y": [true, null, "s"]}}', row(d='{"x":1,"y":[true,null,"s"]}'), None),
    (b'{"d": true}', row(d="true"), None),
    (b'{"d": "\\u00e9\\ud83d\\ude00 caf\xc3\xa9"}', row(d="\u00e9\U0001F600 caf\u00e9"), None),
    (b'{"d": "\xff\xfe"}', row(d="\ufffd\ufffd"), None),  # as cast("string") reads bad UTF-8
    (b'{"f": [1, null]}', row(f=[1, None]), None),
    (b'{"g": {"x": 7, "y": 8}}', row(g={"x": 7}), None),
    (b'{"t": "2024-01-01T00:00:00Z"}', row(t=dt.datetime(2024, 1, 1, tzinfo=UTC)), None),
    (b'{"t": "2024-01-01T01:02:03.123456+02:00"}', row(t=dt.datetime(2023, 12, 31, 23, 2, 3, 123456, tzinfo=UTC)), None),
    (b'{"t": "2024-01-01 00:00:00"}', row(t=dt.datetime(2024, 1, 1, tzinfo=UTC)), None),
    (b'{"t": "2024-01-01"}', row(t=dt.datetime(2024, 1, 1, tzinfo=UTC)), None),
    (b'{"t": 1700000000}', row(t=dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)), None),
    (b'{"dt": "2024-01-31"}', row(dt=dt.date(2024, 1, 31)), None),
    (b'{"dt": "2024-1-5"}', row(dt=dt.date(2024, 1, 5)), None),
    (b'{"dt": "2024-01-31T23:00:00-05:00"}', row(dt=dt.date(2024, 1, 31)), None),  # the written day
    (b'{"dec": 1.234}', row(dec=Decimal("1.23")), None),
    (b'{"dec": 1.235}', row(dec=Decimal("1.24")), None),  # half-up
    (b'{"dec": "1.5"}', row(dec=Decimal("1.50")), None),
    (b'{"dec": 1e2}', row(dec=Decimal("100.00")), None),
    (b"", None, None),
    (b"  \t ", None, None),
    (None, None, None),
    # bad rows: Spark keeps the fields that converted (a struct of nulls when it is not an object)
    (b'{"a": "1", "b": 2}', row(b=2), "field a: expected an integer for INT, got '1'"),
    (b'{"a": 3000000000, "b": 2}', row(b=2), "field a: 3000000000 is out of range for INT"),
    (b'{"a": 1.0}', row(), "field a: expected an integer for INT, got 1.0"),
    (b'{"a": true}', row(), "field a: expected an integer for INT, got true"),
    (b'{"b": 9223372036854775808}', row(), "field b: 9223372036854775808 is out of range for BIGINT"),
    (b'{"c": "1.5"}', row(), "field c: expected a number for DOUBLE, got '1.5'"),
    (b'{"e": "true"}', row(), "field e: expected true or false, got 'true'"),
    (b'{"f": [1, "x", 3], "b": 2}', row(b=2), "field f[1]: expected an integer for INT, got 'x'"),
    (b'{"f": 5}', row(), "field f: expected an array, got 5"),
    (b'{"g": {"x": "y"}, "b": 2}', row(b=2, g={"x": None}), "field g.x: expected an integer for INT, got 'y'"),
    (b'{"t": 1700000000.5}', row(), "field t: expected a timestamp text or integer seconds, got 1700000000.5"),
    (b'{"t": "garbage"}', row(), "field t: 'garbage' is not a timestamp"),
    (b'{"dt": 19000}', row(), "field dt: expected a date text, got 19000"),
    (b'{"dec": 12345.6}', row(), "field dec: 12345.6 does not fit DECIMAL(5,2)"),
    (b"[1, 2]", row(), "not a JSON object: an array"),
    (b'[{"a": 1}]', row(), "not a JSON object: an array"),
    (b"5", row(), "not a JSON object: 5"),
    (b'"str"', row(), "not a JSON object: 'str'"),
    (b"null", row(), "not a JSON object: null"),
    (b'{"a": 1,}', row(), "not valid JSON: Expecting property name enclosed in double quotes (character 8)"),
    (b'{"a": 01}', row(), "not valid JSON: Expecting ',' delimiter (character 7)"),
    (b'{"d": "x\ny"}', row(), "not valid JSON: Invalid control character at (character 8)"),
    (b'{"d": "\\x"}', row(), "not valid JSON: Invalid \\escape (character 7)"),
    (b"{'a': 1}", row(), "not valid JSON: Expecting property name enclosed in double quotes (character 1)"),
    (b'{"d": "\\ud800"}', row(), "a string holds a lone UTF-16 surrogate escape"),
]


def same(a: Any, b: Any) -> bool:
    """Equality in which NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b) and type(a) is type(b)


@pytest.mark.parametrize("partial", [False, True])
def test_every_case_alone_and_all_together(partial: bool) -> None:
    values = [v for v, _, _ in CASES]
    expected = [(r if (partial or reason is None) else None) for _, r, reason in CASES]
    reasons = {i: reason for i, (_, _, reason) in enumerate(CASES) if reason is not None}
    together = decode_json(pa.array(values, pa.binary()), DDL, partial_results=partial)
    assert together.errors == reasons
    got = together.array.to_pylist()
    for i, (value, want) in enumerate(zip(values, expected)):
        assert same(got[i], want), (i, value, got[i], want)
        alone = decode_json(pa.array([value], pa.binary()), DDL, partial_results=partial)
        assert same(alone.array.to_pylist(), [want]), (i, value)
        assert alone.errors == ({0: reasons[i]} if i in reasons else {})
    reference = decode_json_rows(values, DDL, partial_results=partial)
    assert reference.errors == reasons
    assert same(reference.array.to_pylist(), expected)
    assert together.array.type == reference.array.type


def test_one_bad_row_among_ten_thousand_nulls_only_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyconsumer.values.json as module

    python_rows: list[bytes] = []
    parse_row = module.parse_row

    def counting(raw: bytes, data_type: pa.StructType) -> Any:
        python_rows.append(raw)
        return parse_row(raw, data_type)

    monkeypatch.setattr(module, "parse_row", counting)
    values = [json.dumps({"a": i, "d": f"row {i}"}).encode() for i in range(10_000)]
    values[4321] = b'{"a": 1, "d": "broken'
    values[0] = b'{"a": "first"}'
    values[9999] = b"[]"
    decoded = decode_json(pa.array(values, pa.binary()), "a INT, d STRING")
    assert decoded.errors == {
        0: "field a: expected an integer for INT, got 'first'",
        4321: "not valid JSON: Unterminated string starting at (character 14)",
        9999: "not a JSON object: an array",
    }
    got = decoded.array.to_pylist()
    assert got[0] is None and got[4321] is None and got[9999] is None
    assert all(got[i] == {"a": i, "d": f"row {i}"} for i in range(1, 9999) if i != 4321)
    # pyarrow read every good row: the Python reader saw only the three bad ones
    assert python_rows == [values[0], values[4321], values[9999]]


def test_a_lone_top_level_null_does_not_reach_pyarrow() -> None:
    # pyarrow.json crashes the process on a buffer that starts with a top-level null
    for values in ([b"null"], [b" null"], [b"null", b'{"a": 1}'], [b'{"a": 1}', b"null {}"]):
        decoded = decode_json(pa.array(values, pa.binary()), "a INT")
        assert all(reason.startswith("not a JSON object: null") or reason.startswith("not a JSON object")
                   for reason in decoded.errors.values())
        assert len(decoded.errors) == sum(v.strip().startswith(b"null") for v in values)


def test_null_after_an_object_in_one_value_is_ignored_like_spark() -> None:
    decoded = decode_json(pa.array([b'{"a": 1} null', b'{"a": 2}'], pa.binary()), "a INT")
    assert decoded.array.to_pylist() == [{"a": 1}, {"a": 2}]
    assert decoded.errors == {}


def test_map_fields_take_the_python_reader() -> None:
    values = [b'{"m": {"k": 1, "j": null}, "n": 1}', b'{"m": {"k": "v"}, "n": 2}', None, b'{"m": {}}']
    decoded = decode_json(pa.array(values, pa.binary()), "m MAP<STRING, INT>, n BIGINT")
    assert decoded.array.to_pylist() == [{"m": [("k", 1), ("j", None)], "n": 1}, None, None, {"m": [], "n": None}]
    assert decoded.errors == {1: "field m['k']: expected an integer for INT, got 'v'"}


def test_input_kinds_string_large_chunked_and_sliced() -> None:
    values = [b'{"a": 1}', b"bad", b'{"a": 3}', None, b'{"a": 5}']
    want = [{"a": 1}, None, {"a": 3}, None, {"a": 5}]
    for array in (
        pa.array(values, pa.binary()),
        pa.array([v.decode() if v is not None else None for v in values], pa.string()),
        pa.array(values, pa.large_binary()),
        pa.array([v.decode() if v is not None else None for v in values], pa.large_string()),
        pa.chunked_array([pa.array(values[:2], pa.binary()), pa.array(values[2:], pa.binary())]),
        pa.array(values, pa.binary_view()),
        pa.array([v.decode() if v is not None else None for v in values], pa.string_view()),
    ):
        decoded = decode_json(array, "a INT")
        assert decoded.array.to_pylist() == want
        assert list(decoded.errors) == [1]
    sliced = pa.array([b"junk"] + values, pa.binary()).slice(1)
    decoded = decode_json(sliced, "a INT")
    assert decoded.array.to_pylist() == want and list(decoded.errors) == [1]
    # raw newlines found by the buffer search must map to the slice's rows
    lines = pa.array([b'{"a":\n0}', b'{"a": 1}', b'{"a":\r\n2}', b'{"a": 3', b'{"a": 4}', b'{\n"a": 5}'], pa.binary())
    decoded = decode_json(lines.slice(1, 4), "a INT")
    assert decoded.array.to_pylist() == [{"a": 1}, {"a": 2}, None, {"a": 4}]
    assert list(decoded.errors) == [2]
    with pytest.raises(TypeError, match="binary or string array, not int64"):
        decode_json(pa.array([1]), "a INT")


def test_empty_batch_and_all_null_batch() -> None:
    assert decode_json(pa.array([], pa.binary()), "a INT").array.to_pylist() == []
    decoded = decode_json(pa.array([None, None], pa.binary()), "a INT")
    assert decoded.array.to_pylist() == [None, None] and decoded.errors == {}
    assert decoded.array.type == pa.struct([("a", pa.int32())])


def test_a_value_larger_than_pyarrows_block() -> None:
    big = "x" * (3 << 20)
    values = [b'{"a": 1}', json.dumps({"a": 2, "d": big}).encode(), b'{"a": 3}']
    decoded = decode_json(pa.array(values, pa.large_binary()), "a INT, d STRING")
    assert decoded.array.to_pylist() == [{"a": 1, "d": None}, {"a": 2, "d": big}, {"a": 3, "d": None}]


def test_threads_give_the_same_result() -> None:
    values = pa.array([json.dumps({"a": i, "c": i / 3}).encode() for i in range(50_000)] + [b"x"], pa.binary())
    one = decode_json(values, "a INT, c DOUBLE")
    many = decode_json(values, "a INT, c DOUBLE", use_threads=True)
    assert one.array.equals(many.array) and one.errors == many.errors == {50_000: "not valid JSON: Expecting value (character 0)"}


def test_not_null_in_the_schema_is_not_enforced_like_spark() -> None:
    decoded = decode_json(pa.array([b"{}"], pa.binary()), "a INT NOT NULL")
    assert decoded.array.to_pylist() == [{"a": None}]
    assert decoded.array.type.field("a").nullable


# ---------------------------------------------------------------------------------- hypothesis

_SCHEMA = pa.schema([
    ("i", pa.int32()), ("l", pa.int64()), ("s", pa.string()), ("b", pa.bool_()), ("x", pa.float64()),
    ("arr", pa.list_(pa.int64())), ("st", pa.struct([("p", pa.string()), ("q", pa.int16())])),
    ("ts", pa.timestamp("us", "UTC")), ("day", pa.date32()),
])
_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_record = st.fixed_dictionaries({}, optional={
    "i": st.none() | st.integers(-(2**31), 2**31 - 1),
    "l": st.none() | st.integers(-(2**63), 2**63 - 1),
    "s": st.none() | _text,
    "b": st.none() | st.booleans(),
    "x": st.none() | st.floats(allow_nan=False, allow_infinity=False),
    "arr": st.none() | st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), max_size=4),
    "st": st.none() | st.fixed_dictionaries({}, optional={"p": st.none() | _text, "q": st.integers(-(2**15), 2**15 - 1)}),
    "ts": st.none() | st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)),
    "day": st.none() | st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)),
    "extra": st.none() | _text | st.integers(),
})


def _dump(record: dict[str, Any]) -> bytes:
    out = {}
    for key, value in record.items():
        if isinstance(value, dt.datetime):
            value = value.isoformat(sep="T") + "Z"
        elif isinstance(value, dt.date):
            value = value.isoformat()
        out[key] = value
    return json.dumps(out, ensure_ascii=False).encode()


def _expected(record: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in _SCHEMA:
        value = record.get(f.name)
        if f.name == "st" and value is not None:
            value = {"p": value.get("p"), "q": value.get("q")}
        if f.name == "ts" and value is not None:
            value = value.replace(tzinfo=UTC)
        out[f.name] = value
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(_record, max_size=30), garbage=st.lists(st.binary(max_size=12), max_size=3),
       spots=st.lists(st.integers(0, 30), max_size=3))
def test_generated_rows_decode_to_what_was_written(records: list[dict[str, Any]], garbage: list[bytes],
                                                   spots: list[int]) -> None:
    values: list[bytes | None] = [_dump(r) for r in records]
    wanted: list[dict[str, Any] | None] = [_expected(r) for r in records]
    for junk, spot in zip(garbage, spots):
        at = min(spot, len(values))
        values.insert(at, junk)
        wanted.insert(at, None)
    decoded = decode_json(pa.array(values, pa.binary()), _SCHEMA)
    reference = decode_json_rows(values, _SCHEMA)
    assert decoded.errors == reference.errors
    assert same(decoded.array.to_pylist(), reference.array.to_pylist())
    got = decoded.array.to_pylist()
    for i, want in enumerate(wanted):
        if want is not None:
            assert i not in decoded.errors
            assert same(got[i], want), (values[i], got[i], want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=24) | st.sampled_from([
    b'{"a": 1}', b"null", b"{", b"}", b'{"a": [', b"\n", b'{"a": 1}\n{"a": 2}', b"\x00", b'{"a": 9e999}',
    b'{"a": "\\u12"}', b' {"a": 2} ', b"[]", b'{"a": {"b": 1}}', b'{"a": 3,\n"s": "x"}', b'{"a": 1.5}',
    b'{"s": 4}', b"", None,
]), max_size=20))
def test_arbitrary_bytes_never_crash_and_agree_with_the_python_reader(values: list[bytes | None]) -> None:
    decoded = decode_json(pa.array(values, pa.binary()), "a BIGINT, s STRING")
    reference = decode_json_rows(list(values), "a BIGINT, s STRING")
    assert len(decoded.array) == len(values)
    assert decoded.errors == reference.errors
    assert decoded.array.to_pylist() == reference.array.to_pylist()


# ------------------------------------------------------------------------------- decode_string

def test_decode_string_checks_utf8_per_row() -> None:
    values = pa.array([b"caf\xc3\xa9", b"bad \xff byte", None, b"", b"\xc3"], pa.binary())
    decoded = decode_string(values)
    assert decoded.array.type == pa.string()
    assert decoded.array.to_pylist() == ["caf\u00e9", None, None, "", None]
    assert decoded.errors == {1: "invalid UTF-8 at byte 4: invalid start byte", 4: "invalid UTF-8 at byte 0: unexpected end of data"}


def test_decode_string_clean_and_large() -> None:
    decoded = decode_string(pa.array([b"a", None], pa.large_binary()))
    assert decoded.array.type == pa.large_string()
    assert decoded.array.to_pylist() == ["a", None] and decoded.errors == {}


# values of every JSON kind, and text that looks like the typed fields' text, for every field:
# whatever pyarrow accepts must be what the Python reader (Spark's rules) gives
_ANY_DDL = ("i INT, by TINYINT, l BIGINT, x DOUBLE, fl FLOAT, b BOOLEAN, s STRING, dec DECIMAL(6,2), "
            "ts TIMESTAMP, day DATE, arr ARRAY<INT>, st STRUCT<p: DOUBLE, q: ARRAY<DATE>>")
@st.composite
def _timestampish(draw: st.DrawFn) -> str:
    """Date and timestamp text in the forms Spark and pyarrow take, and near misses."""
    when = draw(st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)))
    month = f"{when.month:02d}" if draw(st.booleans()) else str(when.month)
    text = f"{when.year:04d}-{month}-{when.day:02d}"
    shape = draw(st.sampled_from(["date", "hour", "minute", "second", "fraction"]))
    if shape != "date":
        text += draw(st.sampled_from(["T", " ", "t"])) + f"{when.hour:02d}"
        if shape != "hour":
            text += f":{when.minute:02d}"
        if shape in ("second", "fraction"):
            text += f":{when.second:02d}"
        if shape == "fraction":
            text += "." + f"{when.microsecond:06d}{draw(st.integers(0, 999)):03d}"[: draw(st.integers(0, 9))]
    text += draw(st.sampled_from(["", "", "Z", "z", "+05:30", "-0800", "+01", " UTC", "+14:00", "-00:00"]))
    return draw(st.sampled_from(["", " "])) + text + draw(st.sampled_from(["", " "]))


_timestampish_or_junk = _timestampish() | st.from_regex(r"\A[ ]?[+-]?[0-9]{4}(-[0-9]{1,2}(-[0-9]{1,2})?)?[ ]?\Z")
_scalar = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, width=64)
           | st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str) | _timestampish_or_junk | _text)
_json_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["p", "q", "z"]), inner, max_size=3), max_leaves=6)
_any_field = st.sampled_from(["i", "by", "l", "x", "fl", "b", "s", "dec", "ts", "day", "arr", "st", "other"])


def _render(value: Any) -> str:
    """JSON text, with decimals written as bare numbers now and then."""
    if isinstance(value, str) and value.lstrip("-").replace(".", "", 1).isdigit():
        return value
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_render(v) for v in value) + "]"
    return json.dumps(value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(_any_field, _json_value | _timestampish(), max_size=4), min_size=1, max_size=12))
def test_the_fast_path_agrees_with_the_python_reader_on_type_confusion(records: list[dict[str, Any]]) -> None:
    values = [("{" + ",".join(f"{json.dumps(k)}:{_render(v)}" for k, v in r.items()) + "}").encode()
              for r in records]
    for partial in (False, True):
        decoded = decode_json(pa.array(values, pa.binary()), _ANY_DDL, partial_results=partial)
        reference = decode_json_rows(values, _ANY_DDL, partial_results=partial)
        assert decoded.errors == reference.errors
        assert same(decoded.array.to_pylist(), reference.array.to_pylist())


@settings(max_examples=400, deadline=None)
@given(text=_timestampish(), field=st.sampled_from(["ts", "day", "st"]))
def test_pyarrows_date_and_timestamp_text_equals_the_python_readers(text: str, field: str) -> None:
    # alone in its batch, so pyarrow reads it whenever it can (a failure goes to the Python reader)
    value = {"q": [text]} if field == "st" else text
    values = [json.dumps({field: value}).encode()]
    decoded = decode_json(pa.array(values, pa.binary()), _ANY_DDL)
    reference = decode_json_rows(values, _ANY_DDL)
    assert decoded.errors == reference.errors
    assert decoded.array.to_pylist() == reference.array.to_pylist()


def test_dense_bad_rows_past_the_call_budget_are_still_exact() -> None:
    # every third row is bad (alternately a wrong type, with a row number, and an overflow, without):
    # far more failures than pyarrow calls allowed, so whole ranges go to the Python reader
    values = []
    for i in range(6000):
        if i % 3 == 1:
            values.append(b'{"a": "s%d", "b": %d}' % (i, i) if i % 2 else b'{"a": 9999999999%d, "b": %d}' % (i, i))
        else:
            values.append(b'{"a": %d, "b": %d}' % (i, i))
    decoded = decode_json(pa.array(values, pa.binary()), "a INT, b BIGINT", partial_results=True)
    assert decoded.array.to_pylist() == [{"a": None if i % 3 == 1 else i, "b": i} for i in range(6000)]
    assert decoded.errors == {
        i: (f"field a: expected an integer for INT, got 's{i}'" if i % 2 else f"field a: 9999999999{i} is out of range for INT")
        for i in range(1, 6000, 3)
    }


@pytest.mark.parametrize("data_type", [pa.time32("s"), pa.uint32(), pa.timestamp("ms", "UTC"), pa.float16(),
                                       pa.list_(pa.duration("s"))])
def test_a_type_spark_has_no_json_reading_for_is_refused_up_front(data_type: pa.DataType) -> None:
    from pyconsumer.values.schema import SchemaError

    schema = pa.schema([("x", data_type)])
    with pytest.raises(SchemaError, match=r"is not supported for JSON values"):
        decode_json(pa.array([b'{"x": 1}'], pa.binary()), schema)
    with pytest.raises(SchemaError, match=r"is not supported for JSON values"):
        decode_json_rows([b'{"x": 1}'], schema)


def test_a_drifted_field_type_is_screened_out_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # one row in 50 holds a string, one in 70 a float, where the schema wants an INT: after the first
    # failure a regex pass sends them to the Python reader, and pyarrow reads the rest in one call
    import pyarrow.json as pajson

    import pyconsumer.values.json as module

    calls: list[int] = []
    python_rows: list[bytes] = []
    read_json, parse_row = pajson.read_json, module.parse_row

    def counting_read(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return read_json(*args, **kwargs)

    def counting_parse(raw: bytes, data_type: pa.StructType) -> Any:
        python_rows.append(raw)
        return parse_row(raw, data_type)

    monkeypatch.setattr(pajson, "read_json", counting_read)
    monkeypatch.setattr(module, "parse_row", counting_parse)
    # the pyarrow path's screening (the compiled parser reads this schema without pyarrow)
    monkeypatch.setattr(module, "compiled_program", lambda target: None)
    values, want, reasons = [], [], {}
    for i in range(10_000):
        if i % 50 == 0:
            values.append(b'{"n": "%d", "s": "s%d", "z": {"n": "nested"}}' % (i, i))
            reasons[i] = f"field n: expected an integer for INT, got '{i}'"
            want.append(None)
        elif i % 70 == 0:
            values.append(b'{"n": %d.5, "s": "s%d"}' % (i, i))
            reasons[i] = f"field n: expected an integer for INT, got {i}.5"
            want.append(None)
        elif i % 1000 == 1:
            # a nested key of the same name looks suspect too: a good row read in Python, same values
            values.append(b'{"n": %d, "s": "s%d", "z": {"n": "nested"}}' % (i, i))
            want.append({"n": i, "s": f"s{i}"})
        else:
            values.append(b'{"n": %d, "s": "s%d"}' % (i, i))
            want.append({"n": i, "s": f"s{i}"})
    decoded = decode_json(pa.array(values, pa.binary()), "n INT, s STRING")
    assert decoded.array.to_pylist() == want
    assert decoded.errors == reasons
    assert len(calls) == 2  # the failing first read, then one read of everything else
    assert python_rows == [v for i, v in enumerate(values) if i in reasons or i % 1000 == 1]


def test_a_decimal_with_more_integer_digits_than_its_type_is_a_bad_row_on_both_paths() -> None:
    """pyarrow.json checks a number's digits as written, then scales it: 10000 read as
    DECIMAL(6,2) came out as 10000.00 (seven digits) on the fast path while the Python reader
    refused it; and 1e78 made the Python reader's quantize raise. Now both give the same rows
    and the same reason, at any depth (a field, an array element, a struct field)."""
    ddl = "d DECIMAL(6,2), a ARRAY<DECIMAL(6,2)>, s STRUCT<e: DECIMAL(6,2)>"
    values = [b'{"d": 9999.99, "a": [1.5, -9999.99], "s": {"e": 0.01}}',
              b'{"d": 10000}',
              b'{"d": -10000.5}',
              b'{"d": "10000"}',
              b'{"d": 1e4}',
              b'{"d": 1e+78}',
              b'{"d": 9999.995}',
              b'{"a": [1, 10000]}',
              b'{"s": {"e": -99999}}',
              b'{"d": 12.345}']
    for partial in (False, True):
        fast = decode_json(pa.array(values, pa.binary()), ddl, partial_results=partial)
        reference = decode_json_rows(values, ddl, partial_results=partial)
        assert fast.errors == reference.errors
        assert same(fast.array.to_pylist(), reference.array.to_pylist())
    assert sorted(fast.errors) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert fast.errors[1] == "field d: 10000 does not fit DECIMAL(6,2)"
    assert fast.errors[5] == "field d: 1e+78 does not fit DECIMAL(6,2)"
    assert "does not fit DECIMAL(6,2)" in fast.errors[7] and "does not fit" in fast.errors[8]
    rows = decode_json(pa.array(values, pa.binary()), ddl).array.to_pylist()
    assert rows[0] == {"d": Decimal("9999.99"), "a": [Decimal("1.50"), Decimal("-9999.99")],
                       "s": {"e": Decimal("0.01")}}
    assert rows[9] == {"d": Decimal("12.35"), "a": None, "s": None}
    assert all(rows[i] is None for i in range(1, 9))
