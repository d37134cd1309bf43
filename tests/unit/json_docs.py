"""Hypothesis strategies for the compiled JSON parser's tests: Arrow struct types it expresses,
and JSON texts for them (mostly fitting, often not: wrong types, numbers at the edges of every
type, escapes and surrogates, repeated and unknown keys, odd whitespace, cut or padded texts)."""
from __future__ import annotations

import base64
import json
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

TIMESTAMP = pa.timestamp("us", tz="UTC")
LEAVES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.string(),
          pa.bool_(), TIMESTAMP, pa.date32(), pa.decimal128(5, 2), pa.decimal128(38, 10), pa.decimal128(3, 0),
          pa.timestamp("us"), pa.binary()]
NAMES = ["a", "b", "c", "id", "user", "x", "y", "z", "\u00e9", "a b", ""]


def types(depth: int = 3) -> st.SearchStrategy[pa.DataType]:
    """Leaf types, lists and structs nested up to ``depth``."""
    leaves = st.sampled_from(LEAVES)
    if depth == 0:
        return leaves
    inner = types(depth - 1)
    return st.one_of(leaves, leaves, inner.map(pa.list_), inner.map(lambda t: pa.map_(pa.string(), t)), structs(inner))


def structs(inner: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.StructType]:
    return st.lists(st.tuples(st.sampled_from(NAMES), inner), max_size=5, unique_by=lambda f: f[0]).map(
        lambda fields: pa.struct([pa.field(n, t) for n, t in fields]))


def schemas() -> st.SearchStrategy[pa.StructType]:
    return structs(types(2)).filter(lambda t: t.num_fields > 0)


def _edges(bits: int) -> list[str]:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [str(v) for v in (low, low - 1, high, high + 1, 0, -1, 1)]


INTS = sorted({e for bits in (8, 16, 32, 64) for e in _edges(bits)} | {
    "-0", "1.0", "1e2", "1E+2", "10e-1", "12345678901234567890", "-12345678901234567890", "007", "-", "1.",
    "9" * 40})
FLOATS = ["0.5", "-0.0", "-0", "1e400", "-1e400", "1e-400", "3.4028234663852886e38", "3.4028235e38",
          "3.5e38", "-3.5e38", "1.7976931348623157e308", "4.9e-324", "2.2250738585072014e-308",
          "0.1", "123.456", "123456789012345678", "1.2345678901234567e-7", "9007199254740993",
          "NaN", "Infinity", "-Infinity", '"NaN"', '"Infinity"', '"+Infinity"', '"-Infinity"',
          '"INF"', '"+INF"', '"-INF"', '"inf"', '"1.5"', "1.5e", "0." + "1" * 70, "1" * 30 + ".5"]
TIMES = ['"2024-01-01T00:00:00Z"', '"2024-01-01T01:02:03.123456+02:00"', '"2024-01-01 00:00:00"',
         '"2024-01-01"', '"2024-1-5"', '"2024"', '"2024-06"', '"2024-01-01T10"', '"2024-01-01T10:5"',
         '"2024-02-29T23:59:59.999999999Z"', '"2023-02-29T00:00:00Z"', '"2024-01-01T24:00:00"',
         '"2024-01-01T00:00:60"', '"2024-01-01T00:00:00.Z"', '"2024-01-01T00:00:00.1234567890Z"',
         '"2024-01-01T00:00:00+0530"', '"2024-01-01T00:00:00-530"', '"2024-01-01T00:00:00+5"',
         '"2024-01-01T00:00:00+05:3"', '"2024-01-01T00:00:00+99:99"', '"2024-01-01T00:00:00 UTC"',
         '"2024-07-01T00:00:00Europe/Paris"', '"2024-01-01Z"', '"2024-01-05-01"', '"2024-01+01:00"',
         '"0001-01-01T00:00:00Z"', '"9999-12-31T23:59:59Z"', '"+2024-01-01"', '"20240"', '"2024-13-01"',
         '" 2024-01-01"', '"2024-01-01T"', '"2024-01-01t10"', '"2024-01-01T10:00:00\\u005a"',
         "1700000000", "-1", "0", "1700000000.5", "1e9", "99999999999999", "-62135596800", '"x"']
DECIMALS = ["0", "-0", "1.234", "1.235", "-1.235", "1.2349999", "999.995", "999.994", "-999.995", "1e2", "1E-2",
            "12345.6", "1e+78", "1e-78", "0e5", "0.000", "00", "1.", '"1.5"', '" 1.5"', '"1e2"', '"abc"', '"NaN"',
            "NaN", "Infinity", "true", "[]", '"-0.005"', "9" * 38, "9" * 39, "0." + "9" * 38, "0." + "5" * 40,
            "1" * 60 + "e-58", "-" + "9" * 36 + ".995", "5e-1", "4.9e-1", "0.5e-1", "5e-2"]
BASE64 = ['"aGVsbG8="', '"aGVsbA=="', '"aGVsbG8"', '"aGVsbB=="', '"aGVsbG9="', '"+/+/"', '""', '"===="', '"a=b="',
          '"aGVs\\nbG8="', '"aGVs bG8="', '"aGVsbG8=="', '"AAE="', '"-_-_"', "5", '"\\u0041AAA"', '"AAAA\\r\\n"']
DATES = ['"2024-01-31"', '"2024-1-5"', '"2024-01-31T23:00:00-05:00"', '"2024-01-31 anything"',
         '"2024-01-31T"', '"2024"', '"2024-06"', '"2024-06T10"', '"2024-02-30"', '"0001-01-01"',
         '"9999-12-31"', '"02024-01-01"', '"2024-01-01Z"', '" 2024-01-01 "', "19000", '"x"', '"2024-00-10"']
STRINGS = ['"plain"', '""', '"caf\\u00e9 \\ud83d\\ude00"', '"\\ud800"', '"\\udc00x"', '"\\ud83dx"',
           '"\\ud83d\\u0041"', '"\\u0000"', '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"\\x"', '"\\u12g4"',
           '"tab\there"', '"caf\u00e9"', '"\u4e2d\u6587"', '"\U0001F600"', "123", "1.50", "true", "null",
           '{"k": [1, "v"]}', "[]"]
OTHERS = ["null", "true", "false", '"s"', "[]", "{}", "[1, [2, {}]]", '{"a": {"b": null}}', "1", "-2.5e3",
          "NaN", "tru", "nul", "[1,]", "[1 2]", '{"a" 1}', "{,}", "]", "+1", ".5", "\"\\u00"]


GOOD_TIMES = ['"2024-01-01T00:00:00Z"', '"2024-01-01T01:02:03.123456+02:00"', '"2024-01-01 00:00:00"',
              '"2024-1-5"', '"2024"', '"2024-01-01T10"', '"1999-12-31T23:59:59.9-0530"', "1700000000", "-1"]
GOOD_DATES = ['"2024-01-31"', '"2024-1-5"', '"2024-01-31T23:00:00-05:00"', '"2024"', '"2024-06"', '"2000-02-29"']


def _good(data_type: pa.DataType) -> st.SearchStrategy[str]:
    """Texts that fit a leaf type."""
    if pa.types.is_decimal(data_type):
        whole = data_type.precision - data_type.scale
        return st.decimals(min_value=-(10 ** whole) + 1, max_value=10 ** whole - 1, allow_nan=False,
                           allow_infinity=False, places=data_type.scale + 1).map(str)
    if pa.types.is_integer(data_type):
        bits = data_type.bit_width
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1).map(str)
    if pa.types.is_floating(data_type):
        return st.one_of(st.floats(allow_nan=False, allow_infinity=False).map(repr), st.integers().map(str),
                         st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str))
    if pa.types.is_timestamp(data_type):
        return st.sampled_from(GOOD_TIMES if data_type.tz else [t for t in GOOD_TIMES if t[-2] in "0123456789"])
    if pa.types.is_binary(data_type):
        return st.binary(max_size=10).map(lambda b: '"' + base64.b64encode(b).decode() + '"')
    if pa.types.is_date32(data_type):
        return st.sampled_from(GOOD_DATES)
    if pa.types.is_boolean(data_type):
        return st.sampled_from(["true", "false"])
    return st.builds(json.dumps, st.text(max_size=12).filter(lambda t: not any(0xD800 <= ord(c) < 0xE000 for c in t)),
                     ensure_ascii=st.booleans())


@st.composite
def text_for(draw: st.DrawFn, data_type: pa.DataType, depth: int = 0, clean: bool = False) -> str:
    """A JSON text for a value of ``data_type``: fitting most of the time (always if clean)."""
    kind = draw(st.integers(0, 9))
    if kind == 0 and not clean:
        return draw(st.sampled_from(OTHERS))
    if kind == 1:
        return "null"
    if isinstance(data_type, pa.StructType):
        return draw(object_text(data_type, depth + 1, clean))
    if isinstance(data_type, pa.ListType):
        items = draw(st.lists(text_for(data_type.value_type, depth + 1, clean), max_size=4))
        return "[" + draw(separator()).join(items) + "]"
    if isinstance(data_type, pa.MapType):
        keys = draw(st.lists(st.sampled_from(["k", "a", "", "\\u00e9", "\\\\", "\\ud800", "k2", "\\u006b"]), max_size=4,
                             unique=clean))
        pairs = [f'"{k}": {draw(text_for(data_type.item_type, depth + 1, clean))}' for k in keys]
        return "{" + draw(separator()).join(pairs) + "}"
    if clean or kind < 5:
        return draw(_good(data_type))
    if pa.types.is_integer(data_type):
        return draw(st.one_of(st.sampled_from(INTS), st.integers(-(1 << 64), 1 << 64).map(str)))
    if pa.types.is_floating(data_type):
        return draw(st.one_of(st.sampled_from(FLOATS + INTS), st.floats(allow_nan=False).map(repr),
                              st.floats(width=32, allow_nan=False).map(repr)))
    if pa.types.is_timestamp(data_type):
        return draw(st.sampled_from(TIMES))
    if pa.types.is_binary(data_type):
        return draw(st.one_of(st.sampled_from(BASE64), st.binary(max_size=10).map(
            lambda b: '"' + base64.b64encode(b).decode() + '"')))
    if pa.types.is_decimal(data_type):
        return draw(st.one_of(st.sampled_from(DECIMALS), st.decimals(allow_nan=False, allow_infinity=False).map(str)))
    if pa.types.is_date32(data_type):
        return draw(st.sampled_from(DATES))
    if pa.types.is_boolean(data_type):
        return draw(st.sampled_from(["true", "false", "1", '"true"', "True"]))
    return draw(st.one_of(st.sampled_from(STRINGS),
                          st.builds(json.dumps, st.text(max_size=12), ensure_ascii=st.booleans())))


@st.composite
def separator(draw: st.DrawFn) -> str:
    return draw(st.sampled_from([",", ", ", " ,\n", "\t,\r\n"]))


@st.composite
def object_text(draw: st.DrawFn, data_type: pa.StructType, depth: int = 0, clean: bool = False) -> str:
    """An object for ``data_type``: its fields in any order, some missing, some twice, unknown
    keys between them, whitespace anywhere JSON allows it."""
    pairs: list[tuple[str, str]] = []
    for field in data_type:
        if draw(st.integers(0, 5)) == 0:
            continue
        pairs.append((json.dumps(field.name), draw(text_for(field.type, depth, clean))))
        if not clean and draw(st.integers(0, 15)) == 0:
            pairs.append((json.dumps(field.name), draw(text_for(field.type, depth))))
    for _ in range(draw(st.integers(0, 2))):
        pairs.append((json.dumps(draw(st.sampled_from(["q", "zz", "A", "id2", "\u00e9t\u00e9"]))),
                      draw(st.sampled_from(OTHERS[:10]))))
    if not clean and data_type.num_fields and draw(st.integers(0, 20)) == 0:
        # an escaped key naming a field
        name = data_type[0].name
        pairs.append(('"' + "".join(f"\\u{ord(c):04x}" for c in name) + '"', "null"))
    pairs = draw(st.permutations(pairs))
    space = draw(st.sampled_from(["", " ", "\n", " \t\r\n "]))
    body = draw(separator()).join(f"{k}{space}:{space}{v}" for k, v in pairs)
    return "{" + space + body + space + "}"


@st.composite
def documents(draw: st.DrawFn, data_type: pa.StructType) -> bytes | None:
    """One Kafka value for ``data_type``: an object text, padded, cut or replaced now and then."""
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return None
    if kind == 1:
        return draw(st.binary(max_size=30))
    if kind == 2:
        return draw(st.sampled_from([b"", b"  ", b"\t\n", b"[1]", b"5", b'"s"', b"null", b"\x0b{}", b"\xef\xbb\xbf{}"]))
    text = draw(object_text(data_type)).encode()
    if kind == 3:
        return text[:draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == 4:
        return text + draw(st.sampled_from([b" garbage", b"{", b"\n{}", b"\xff", b" ]"]))
    if kind == 5:
        return draw(st.sampled_from([b" ", b"\n", b"\r\n\t "])) + text
    if kind == 6:
        pos = draw(st.integers(0, len(text)))
        return text[:pos] + draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\\", b'"', b"\xed\xa0\x80"])) + text[pos:]
    if kind >= 12:
        return draw(object_text(data_type, 0, True)).encode()
    return text


def untupled(value: Any) -> Any:
    """A row with its MAP entries (tuples) as lists, for ``same``, which walks lists and dicts."""
    if isinstance(value, (list, tuple)):
        return [untupled(v) for v in value]
    if isinstance(value, dict):
        return {k: untupled(v) for k, v in value.items()}
    return value
