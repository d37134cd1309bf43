"""String values -> a string array, a value that is not valid UTF-8 a bad row."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.values.arrays import bools
from pyconsumer.values.result import Decoded, as_binary

__all__ = ["decode_string"]


def decode_string(values: pa.Array | pa.ChunkedArray) -> Decoded:
    """Binary values -> a string array; a value that is not valid UTF-8 is a null row with its reason.

    Valid values are not copied one by one: the whole array is checked by Arrow, and only when
    that fails are the bad rows looked for.
    """
    data = as_binary(values, "JSON values")
    as_string = pa.large_string() if pa.types.is_large_binary(data.type) else pa.string()
    try:
        return Decoded(data.cast(as_string), {})
    except pa.ArrowInvalid:
        pass
    errors: dict[int, str] = {}
    keep: list[bool] = []
    for i, value in enumerate(data.to_pylist()):
        if value is None:
            keep.append(True)
            continue
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors[i] = f"invalid UTF-8 at byte {exc.start}: {exc.reason}"
            keep.append(False)
            continue
        keep.append(True)
    mask = bools(keep)
    cleaned = pc.if_else(mask, data, pa.nulls(len(data), data.type))
    return Decoded(cleaned.cast(as_string), errors)
