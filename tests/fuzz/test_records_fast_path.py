"""The v2 record parser's fast path (record_v2.pxd v2_fast) against its careful path
(v2_careful): on any bytes, valid or not, both give the same records and the same errors."""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests import recordsets as rs

from pyconsumer import _records
from pyconsumer.errors import CorruptRecordError
from pyconsumer.records import CompletedFetch, decode_arrow, decode_records

FAST = settings(max_examples=150, deadline=4000, suppress_health_check=list(HealthCheck))
# 40 records per batch, so that most records are not within the fast path's slack of the end
VALID = {c: rs.aio_v2(rs.sample_records(40), c, 0) + rs.aio_v2(rs.sample_records(30, 40), c, 40)
         for c in ("none", "lz4")}


@contextmanager
def careful_only() -> Iterator[None]:
    _records._set_v2_fast_path(False)
    try:
        yield
    finally:
        _records._set_v2_fast_path(True)


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return ("ok", fn())
    except CorruptRecordError as e:
        return ("error", str(e), e.topic, e.partition, e.offset)


def _views(data: bytes) -> list[Callable[[], Any]]:
    def records() -> Any:
        return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers,
                 r.serialized_key_size, r.serialized_value_size)
                for r in decode_records(data, "t", 0, check_crcs=False)]

    def takes() -> Any:
        f, out = CompletedFetch(data, "t", 0, 3, check_crcs=False), []
        while not f.is_drained:
            b = f.take_arrow(7)
            if b.num_rows == 0:
                break
            out.append(b.to_pylist())
        return out

    return [records,
            lambda: decode_arrow(data, "t", 0, check_crcs=False).to_pylist(),
            lambda: decode_arrow(data, "t", 0, check_crcs=False, include_headers=True).to_pylist(),
            takes]


def _assert_paths_agree(data: bytes) -> list[Any]:
    fast = [_outcome(v) for v in _views(data)]
    with careful_only():
        careful = [_outcome(v) for v in _views(data)]
    assert fast == careful
    return fast


@FAST
@given(codec=st.sampled_from(sorted(VALID)), edits=st.lists(
    st.tuples(st.integers(0, 100_000), st.integers(0, 255)), min_size=1, max_size=3))
def test_corrupted_records_same_on_both_paths(codec: str, edits: list[tuple[int, int]]) -> None:
    # bytes overwritten anywhere (CRC off, so the record parser sees them): lengths, varints
    # made long or negative, counts, keys running past the record; lz4 payloads mostly stop
    # at decompression, their headers still reach the parser
    data = bytearray(VALID[codec])
    for pos, byte in edits:
        data[61 + pos % (len(data) - 61)] = byte
    _assert_paths_agree(bytes(data))


def _varint(n: int) -> bytes:
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _padded(n: int, width: int) -> bytes:
    # the same varint in `width` bytes: continuation bits on zero groups (valid, as Java
    # reads it, but longer than the fast path takes)
    b = bytearray(_varint(n))
    while len(b) < width:
        b[-1] |= 0x80
        b.append(0)
    return bytes(b)


def test_records_the_fast_path_leaves_to_the_careful_one() -> None:
    # 3-byte varints (a 10 kB value, a 20 s timestamp delta: the fast path's longest), a
    # 2 MiB value and a delta past 2^20 ms (4-byte varints: the careful path's), many headers:
    # every record is read exactly
    recs = [(0, 1_600_000_000_000 + 20_000, b"k3", b"y" * 10_000, [("h", b"z" * 9000)]),
            (1, 1_600_000_000_000, b"k0", b"v" * (2 << 20), []),
            (2, 1_600_000_000_000 + (3 << 20), b"k1", b"small", [("h", b"x")] * 50),
            (3, 1_600_000_000_001, None, b"", []),
            (4, 1_600_000_000_002, b"k4", b"w" * 40, [])]
    data = rs.aio_v2(recs, "none", 100)
    expected = [(100 + d, ts, k, v, h) for d, ts, k, v, h in recs]
    got = _assert_paths_agree(data)
    assert got[0][0] == "ok"
    assert [(o, ts, k, v, h) for o, ts, _, k, v, h, _, _ in got[0][1]] == expected

    # a record whose key length is padded to 5 bytes, followed by enough bytes for the fast
    # path to try it (and leave it to the careful path): read as the same record
    def record(delta: int, klen: bytes, key: bytes, value: bytes) -> bytes:
        body = (b"\x00" + _varint(delta) + _varint(delta) + klen + key + _varint(len(value))
                + value + _varint(0))
        return _varint(len(body)) + body

    records = (record(0, _padded(2, 5), b"k0", b"v" * 40) + record(1, _varint(2), b"k1", b"w" * 40)
               + record(2, _varint(2), b"k2", b"x" * 40))
    header = struct.pack(">hiqqqhii", 0, 2, 7, 9, -1, -1, -1, 3)   # attributes .. count
    batch = struct.pack(">qiib", 200, 4 + 1 + 4 + len(header) + len(records), -1, 2)
    batch += struct.pack(">I", 0) + header + records
    got = _assert_paths_agree(batch)
    assert got[0] == ("ok", [(200, 7, 0, b"k0", b"v" * 40, [], 2, 40),
                             (201, 8, 0, b"k1", b"w" * 40, [], 2, 40),
                             (202, 9, 0, b"k2", b"x" * 40, [], 2, 40)])


@pytest.mark.parametrize("length", [-1, -2, 0, 1, 63])
def test_bad_record_length_same_error_on_both_paths(length: int) -> None:
    # the first record's length (a 1-byte varint) made negative, too short or too long: one
    # CorruptRecordError, worded and named the same whichever path met the record first
    data = bytearray(rs.aio_v2(rs.sample_records(40), "none", 0))
    assert data[61] < 0x80
    data[61] = _varint(length)[0]
    out = _assert_paths_agree(bytes(data))
    assert out[0][0] == "error"
