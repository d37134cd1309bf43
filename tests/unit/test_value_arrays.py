"""pyconsumer.values.arrays builds the same arrays and scalars pyarrow's conversion of Python
values builds (the oracle here), without that conversion."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyconsumer.values import arrays

_INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(),
              pa.uint64()]


@pytest.mark.parametrize("type", _INT_TYPES, ids=str)
@given(data=st.data())
def test_ints_and_int_scalars_equal_pyarrows(type: pa.DataType, data: st.DataObject) -> None:
    bits = type.bit_width
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(type) \
        else (0, (1 << bits) - 1)
    values = data.draw(st.lists(st.integers(lo, hi), max_size=40))
    got = arrays.ints(values, type)
    got.validate(full=True)
    assert got.equals(pa.array(values, type))
    if values:
        assert arrays.int_scalar(values[0], type).equals(pa.scalar(values[0], type))


@given(st.lists(st.booleans(), max_size=70))
def test_bools_equal_pyarrows(values: list[bool]) -> None:
    got = arrays.bools(values)
    got.validate(full=True)
    assert got.equals(pa.array(values, pa.bool_()))


@given(st.lists(st.none() | st.binary(max_size=9), max_size=40))
def test_binaries_equal_pyarrows(values: list[bytes | None]) -> None:
    got = arrays.binaries(values)
    got.validate(full=True)
    assert got.equals(pa.array(values, pa.binary()))


@given(st.lists(st.none() | st.text(max_size=9), max_size=40))
def test_strings_equal_pyarrows(values: list[str | None]) -> None:
    got = arrays.strings(values)
    got.validate(full=True)
    assert got.equals(pa.array(values, pa.string()))


@pytest.mark.parametrize("type", [pa.binary(), pa.string(), pa.large_binary(), pa.large_string()], ids=str)
def test_bytes_scalars_equal_pyarrows(type: pa.DataType) -> None:
    for value in (b"", b"\x00", b"abc"):
        want = pa.scalar(value if pa.types.is_binary(type) or pa.types.is_large_binary(type)
                         else value.decode(), type)
        assert arrays.bytes_scalar(value, type).equals(want)


@given(st.lists(st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)), max_size=3),
                max_size=12))
def test_lists_of_header_entries_equal_pyarrows(rows: list[list[tuple[str, bytes | None]]]) -> None:
    type = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
    pairs = [pair for row in rows for pair in row]
    entries = pa.StructArray.from_arrays(
        [arrays.strings([k for k, _ in pairs]), arrays.binaries([v for _, v in pairs])],
        fields=list(type.value_type))
    got = arrays.lists([len(row) for row in rows], entries, type)
    got.validate(full=True)
    assert got.equals(pa.array([[{"key": k, "value": v} for k, v in row] for row in rows], type))


@pytest.mark.parametrize("n", [0, 1, 5, 1000])
def test_row_numbers(n: int) -> None:
    assert arrays.row_numbers(n).to_pylist() == list(range(n))
