"""Truncated, bit-flipped and random record sets: a correct result or CorruptRecordError, nothing else."""
from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests import recordsets as rs

from pyconsumer.errors import CorruptRecordError  # noqa: E402
from pyconsumer.records import CompletedFetch, decode_arrow, decode_records  # noqa: E402

VALID = {c: rs.aio_v2(rs.sample_records(20), c, 0) + rs.aio_v2(rs.sample_records(7, 20), c, 20)
         for c in rs.CODECS_V2}
FAST = settings(max_examples=60, deadline=2000, suppress_health_check=list(HealthCheck))


def _all(data: bytes, crc: bool) -> None:
    for fn in (lambda: decode_records(data, "t", 0, check_crcs=crc),
               lambda: decode_arrow(data, "t", 0, check_crcs=crc, include_headers=True),
               lambda: CompletedFetch(data, "t", 0, 0, check_crcs=crc).take_arrow(5)):
        try:
            fn()
        except CorruptRecordError:
            pass


@FAST
@given(codec=st.sampled_from(list(rs.CODECS_V2)), cut=st.integers(0, 10_000))
def test_truncated(codec: str, cut: int) -> None:
    data = VALID[codec]
    cut %= len(data) + 1
    got = decode_records(data[:cut], "t", 0)
    first = len(VALID[codec]) - len(rs.aio_v2(rs.sample_records(7, 20), codec, 20))
    assert [r.offset for r in got] == (list(range(27)) if cut == len(data)
                                       else list(range(20)) if cut >= first else [])


@FAST
@given(codec=st.sampled_from(list(rs.CODECS_V2)), pos=st.integers(0, 10_000), bit=st.integers(0, 7),
       crc=st.booleans())
def test_bitflip(codec: str, pos: int, bit: int, crc: bool) -> None:
    data = bytearray(VALID[codec])
    data[pos % len(data)] ^= 1 << bit
    _all(bytes(data), crc)


FIRST = {c: len(rs.aio_v2(rs.sample_records(20), c, 0)) for c in rs.CODECS_V2}  # batch 2 starts


@FAST
@given(codec=st.sampled_from(list(rs.CODECS_V2)), second=st.booleans(), pos=st.integers(0, 10_000),
       bit=st.integers(0, 7))
def test_bitflip_in_crc_covered_bytes_is_a_crc_error(codec: str, second: bool, pos: int,
                                                     bit: int) -> None:
    # The stored CRC32C (bytes 17-20 of a batch) and everything it covers (21 to the end):
    # with check_crcs on, one flipped bit there is always caught, before any decompression,
    # and named by its batch's first offset on every path.
    data = bytearray(VALID[codec])
    start, end, base = (FIRST[codec], len(data), 20) if second else (0, FIRST[codec], 0)
    data[start + 17 + pos % (end - start - 17)] ^= 1 << bit
    for fn in (lambda: decode_records(bytes(data), "t", 0),
               lambda: decode_arrow(bytes(data), "t", 0, include_headers=True),
               lambda: decode_arrow(bytes(data), "t", 0),
               lambda: CompletedFetch(bytes(data), "t", 0, base).take_records(100)):
        with pytest.raises(CorruptRecordError, match="CRC32C mismatch") as info:
            fn()
        assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 0, base)


@FAST
@given(blob=st.binary(max_size=300), crc=st.booleans())
def test_random(blob: bytes, crc: bool) -> None:
    _all(blob, crc)


def test_huge_length_does_not_allocate() -> None:
    # a v2 header claiming a 2 GB batch / record count, and a record whose length varint says 2 GB
    data = bytearray(VALID["none"][:200])
    struct.pack_into(">i", data, 8, 0x7FFF_FFF0)
    struct.pack_into(">i", data, 57, 0x7FFF_FFF0)  # record count
    tracemalloc.start()
    for crc in (True, False):
        _all(bytes(data), crc)
        bad = bytearray(VALID["none"])
        struct.pack_into(">i", bad, 57, 0x7FFF_FFF0)
        _all(bytes(bad), crc)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 << 20
