"""pyconsumer.values.modes: PERMISSIVE, DROPMALFORMED, FAILFAST on a decoded batch."""
from __future__ import annotations

import pyarrow as pa
import pytest

from pyconsumer.errors import ConfigurationError, CorruptRecordError
from pyconsumer.values.json import decode_json
from pyconsumer.values.modes import DEFAULT_CORRUPT_COLUMN, MalformedValueError, Mode, apply_mode, parse_mode
from pyconsumer.values.result import Decoded

RAW = pa.array([b'{"a": 1}', b"oops", None, b'{"a": "x"}', b'{"a": 5}'], pa.binary())


def decoded() -> Decoded:
    return decode_json(RAW, "a INT")


def test_decoded_batch_is_what_the_modes_see() -> None:
    d = decoded()
    assert d.array.to_pylist() == [{"a": 1}, None, None, None, {"a": 5}]
    assert d.errors == {1: "not valid JSON: Expecting value (character 0)",
                        3: "field a: expected an integer for INT, got 'x'"}


@pytest.mark.parametrize("text, mode", [
    ("PERMISSIVE", Mode.PERMISSIVE), ("permissive", Mode.PERMISSIVE), (" DropMalformed ", Mode.DROPMALFORMED),
    ("failFast", Mode.FAILFAST), (Mode.FAILFAST, Mode.FAILFAST),
])
def test_modes_parse_in_any_case(text: str | Mode, mode: Mode) -> None:
    assert parse_mode(text) is mode


@pytest.mark.parametrize("text", ["", "lenient", "FAIL_FAST", None, 3])
def test_an_unknown_mode_lists_the_three(text: object) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_mode(text)  # type: ignore[arg-type]
    assert str(info.value) == f"mode must be one of PERMISSIVE, DROPMALFORMED, FAILFAST (any case), not {text!r}"


def test_permissive_puts_the_raw_bytes_of_bad_rows_aside() -> None:
    d = decoded()
    result = apply_mode(d, RAW, "permissive")
    assert result.values is d.array
    assert result.corrupt is not None and result.corrupt.type == pa.binary()
    assert result.corrupt.to_pylist() == [None, b"oops", None, b'{"a": "x"}', None]
    assert result.keep is None
    assert result.malformed == 2
    assert DEFAULT_CORRUPT_COLUMN == "_corrupt_record"


def test_permissive_without_a_corrupt_column() -> None:
    result = apply_mode(decoded(), RAW, Mode.PERMISSIVE, None)
    assert result.corrupt is None and result.malformed == 2


def test_permissive_with_no_bad_row_still_gives_the_column() -> None:
    raw = pa.array([b'{"a": 1}', None], pa.binary())
    result = apply_mode(decode_json(raw, "a INT"), raw, "PERMISSIVE")
    assert result.corrupt is not None and result.corrupt.to_pylist() == [None, None]
    assert result.malformed == 0


def test_permissive_with_string_raw_values_gives_binary() -> None:
    raw = pa.array(['{"a": 1}', "no"], pa.string())
    result = apply_mode(decode_json(raw, "a INT"), raw, "PERMISSIVE")
    assert result.corrupt is not None and result.corrupt.type == pa.binary()
    assert result.corrupt.to_pylist() == [None, b"no"]


def test_dropmalformed_gives_a_keep_mask_and_the_count() -> None:
    d = decoded()
    result = apply_mode(d, RAW, "DROPMALFORMED")
    assert result.keep is not None and result.keep.to_pylist() == [True, False, True, False, True]
    assert result.values is d.array and result.corrupt is None and result.malformed == 2
    # the tombstone (row 2) stays: a null value is not a bad record
    assert d.array.filter(result.keep).to_pylist() == [{"a": 1}, None, {"a": 5}]


def test_dropmalformed_with_nothing_to_drop() -> None:
    raw = pa.array([b'{"a": 1}'], pa.binary())
    result = apply_mode(decode_json(raw, "a INT"), raw, "DROPMALFORMED")
    assert result.keep is None and result.malformed == 0


def test_failfast_names_topic_partition_offset_and_reason() -> None:
    with pytest.raises(MalformedValueError) as info:
        apply_mode(decoded(), RAW, "FAILFAST", locate=lambda row: ("t", 3, 1230 + row))
    err = info.value
    assert str(err) == "topic t partition 3 offset 1231: not valid JSON: Expecting value (character 0)"
    assert (err.topic, err.partition, err.offset, err.row) == ("t", 3, 1231, 1)
    assert err.reason == "not valid JSON: Expecting value (character 0)"
    assert isinstance(err, CorruptRecordError)


def test_failfast_without_locate_names_the_row() -> None:
    with pytest.raises(MalformedValueError, match=r"^row 1: not valid JSON"):
        apply_mode(decoded(), RAW, "failfast")


def test_failfast_passes_a_clean_batch() -> None:
    raw = pa.array([b'{"a": 1}', None], pa.binary())
    d = decode_json(raw, "a INT")
    result = apply_mode(d, raw, "FAILFAST", locate=lambda row: ("t", 0, row))
    assert result.values is d.array and result.corrupt is None and result.keep is None and result.malformed == 0


def test_mismatched_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match=r"raw values \(4 rows\) and the decoded values \(5 rows\)"):
        apply_mode(decoded(), RAW.slice(1), "PERMISSIVE")
    bogus = Decoded(pa.array([1, 2]), {7: "x"})
    with pytest.raises(ValueError, match="row 7, outside the batch of 2 rows"):
        apply_mode(bogus, pa.array([b"a", b"b"]), "DROPMALFORMED")
    with pytest.raises(ConfigurationError, match="non-empty name"):
        apply_mode(decoded(), RAW, "PERMISSIVE", "")


def test_permissive_takes_chunked_and_view_raw_values() -> None:
    d = decoded()
    for raw in (pa.chunked_array([RAW.slice(0, 2), RAW.slice(2)]), RAW.cast(pa.binary_view())):
        result = apply_mode(d, raw, "PERMISSIVE")
        assert result.corrupt is not None and result.corrupt.type == pa.binary()
        assert result.corrupt.to_pylist() == [None, b"oops", None, b'{"a": "x"}', None]
