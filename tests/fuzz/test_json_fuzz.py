"""Fuzzed JSON values through the compiled parser: random bytes, cut, flipped and spliced
documents, deep nesting, escapes and surrogates, numbers at the edges of every type. No crash,
no hang, the pyarrow path's rows and reasons (its bad rows named), the same alone as together."""
from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

from pyconsumer.values.json import decode_json, decode_json_pyarrow
from tests.unit.json_docs import BASE64, DECIMALS, FLOATS, INTS, STRINGS, TIMES, untupled
from tests.unit.test_values_json import same

DDL = ("i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT, f32 FLOAT, f64 DOUBLE, s STRING, b BOOLEAN, "
       "t TIMESTAMP, tn TIMESTAMP_NTZ, bn BINARY, d DATE, dc DECIMAL(10,3), mp MAP<STRING, INT>, l ARRAY<INT>, st STRUCT<x: INT, y: ARRAY<STRUCT<z: STRING>>>")
SEED = json.dumps({"i8": -128, "i16": 32767, "i32": 7, "i64": -9223372036854775808, "f32": 0.5, "f64": 1e-300,
                   "s": "caf\u00e9 \"q\" \U0001F600", "b": True, "t": "2024-02-29T23:59:59.999999+01:00",
                   "d": "2024-1-5", "dc": -1234567.0005, "tn": "2024-01-01 10:00", "bn": "AAE=", "mp": {"a": 1, "b": None}, "l": [1, None, -2], "st": {"x": 1, "y": [{"z": "a\nb"}, None, {}]},
                   "unknown": {"deep": [[1, 2], {"k": "\u2028"}]}}, ensure_ascii=False).encode()
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def agree(values: list[bytes | None]) -> None:
    arr = pa.array(values, pa.binary())
    for partial in (False, True):
        got = decode_json(arr, DDL, partial_results=partial)
        want = decode_json_pyarrow(arr, DDL, partial_results=partial)
        assert got.errors == want.errors
        assert same(untupled(got.array.to_pylist()), untupled(want.array.to_pylist()))
        got.array.validate(full=True)
        # every bad row is named, and only bad rows are null among non-empty values
        assert all(isinstance(reason, str) and reason for reason in got.errors.values())


@FUZZ
@given(st.lists(st.binary(max_size=64), min_size=1, max_size=8))
def test_random_bytes(values: list[bytes]) -> None:
    agree(list(values))
    agree([b"{" + v for v in values])
    agree([b'{"s": "' + v + b'"}' for v in values])


@FUZZ
@given(cut=st.integers(0, len(SEED)), pos=st.integers(0, len(SEED) - 1), bit=st.integers(0, 7),
       insert=st.binary(min_size=1, max_size=4))
def test_cut_flipped_and_spliced(cut: int, pos: int, bit: int, insert: bytes) -> None:
    flipped = bytearray(SEED)
    flipped[pos] ^= 1 << bit
    agree([SEED[:cut], bytes(flipped), SEED[:pos] + insert + SEED[pos:], SEED[:pos] + SEED[pos + 1:], SEED])


@FUZZ
@given(field=st.sampled_from(["i8", "i16", "i32", "i64", "f32", "f64", "s", "t", "tn", "bn", "dc", "mp", "l", "st"]),
       text=st.sampled_from(INTS + FLOATS + STRINGS + TIMES + DECIMALS + BASE64),
       space=st.sampled_from(["", " ", "\n\t", "\r\n "]))
def test_edges_of_every_type(field: str, text: str, space: str) -> None:
    doc = f'{{{space}"{field}"{space}:{space}{text}{space}}}'.encode()
    agree([doc, doc[:-1], doc + b"trailing", f'{{"{field}": [{text}]}}'.encode(),
           f'{{"st": {{"y": [{{"z": {text}}}]}}, "{field}": {text}}}'.encode()])


@FUZZ
@given(depth=st.integers(1, 200), opener=st.sampled_from([b"[", b'{"k":', b'{"st": {"y": [{"z": [']))
def test_nesting(depth: int, opener: bytes) -> None:
    body = opener * depth
    agree([b'{"x": ' + body + b"1", b'{"u": ' + body, body])


@FUZZ
@given(st.lists(st.sampled_from(["\\ud83d", "\\ude00", "\\u0041", "\\u00e9", "\\n", "\\\"", "\\\\", "x",
                                 "\u00e9", "\\u", "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\/"]), max_size=6))
def test_escapes_and_surrogates(parts: list[str]) -> None:
    text = "".join(parts)
    agree([f'{{"s": "{text}"}}'.encode(), f'{{"{text}": 1, "s": "k"}}'.encode(), f'{{"mp": {{"{text}": 1}}}}'.encode(),
           f'{{"st": {{"y": [{{"z": "{text}"}}]}}}}'.encode()])


@FUZZ
@given(st.lists(st.sampled_from(['"i32": 1', '"i32": 2', '"i32": "x"', '"s": "a"', '"s": 5', '"st": {}',
                                 '"st": {"x": 1, "x": 2}', '"q": 1']), max_size=6))
def test_repeated_keys(pairs: list[str]) -> None:
    agree([("{" + ", ".join(pairs) + "}").encode()])
