"""CompletedFetch with bad data after good records (issue 9, item 7), and what it reports about
an incomplete trailing batch (item 6).

The good records come first; the cursor must then stay *before* the bad batch: not drained,
``next_fetch_offset`` at the first record not handed out, and every later take raising the
same CorruptRecordError (topic, partition, offset) until the cursor is dropped. Record sets
are written by aiokafka's encoder (tests/recordsets.py) and then damaged by hand.
"""
from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from pyconsumer.errors import CorruptRecordError
from pyconsumer.records import CompletedFetch

from tests import recordsets as rs

GOOD = rs.aio_v2(rs.sample_records(10), "none", 0)              # offsets 0..9
AFTER = rs.aio_v2(rs.sample_records(10, seed=20), "none", 20)   # offsets 20..29


def bad_batch(codec: str) -> bytes:
    """Offsets 10..19 with one bit flipped near the end: inside the CRC-covered bytes and, for
    a compressed batch, inside the compressed frame."""
    buf = bytearray(rs.aio_v2(rs.sample_records(10, seed=10), codec, 10))
    buf[-3] ^= 0x40
    return bytes(buf)


def taker(kind: str, cf: CompletedFetch) -> Callable[[int], list[int]]:
    """take_records or take_arrow, as the list of offsets handed out."""
    if kind == "records":
        return lambda n: [r.offset for r in cf.take_records(n)]
    return lambda n: cf.take_arrow(n).column("offset").to_pylist()


def assert_stuck_at_10(cf: CompletedFetch, take: Callable[[int], list[int]], words: str,
                       at: int) -> None:
    """Stuck before the bad batch; the error says what, at which byte of the record set, and
    names topic, partition and offset (the one message format)."""
    for _ in range(3):                         # it keeps raising: the error is not used up
        assert not cf.is_drained
        assert cf.next_fetch_offset == 10
        with pytest.raises(CorruptRecordError, match=words) as info:
            take(100)
        err = info.value
        assert (err.topic, err.partition, err.offset) == ("t", 3, 10)
        assert str(err).endswith(f" at byte {at} of the record set (topic=t, partition=3, offset=10)")
    assert not cf.is_drained and cf.next_fetch_offset == 10


@pytest.mark.parametrize("kind", ["records", "arrow"])
@pytest.mark.parametrize("codec", ["none", "lz4"])
@pytest.mark.parametrize("tail", [b"", AFTER], ids=["bad-last", "good-after"])
def test_crc_failure_after_good_records_keeps_the_cursor_before_it(
        kind: str, codec: str, tail: bytes) -> None:
    cf = CompletedFetch(GOOD + bad_batch(codec) + tail, "t", 3, 0, check_crcs=True)
    take = taker(kind, cf)
    assert take(100) == list(range(10))
    assert_stuck_at_10(cf, take, "CRC32C mismatch", len(GOOD))


@pytest.mark.parametrize("kind", ["records", "arrow"])
def test_good_records_in_small_takes_then_the_error(kind: str) -> None:
    cf = CompletedFetch(GOOD + bad_batch("none"), "t", 3, 0)
    take = taker(kind, cf)
    assert take(4) == [0, 1, 2, 3]
    assert take(4) == [4, 5, 6, 7]
    assert not cf.is_drained and cf.next_fetch_offset == 8
    assert take(4) == [8, 9]
    assert_stuck_at_10(cf, take, "CRC32C mismatch", len(GOOD))


@pytest.mark.parametrize("kind", ["records", "arrow"])
def test_undecodable_batch_without_crc_check_does_not_move_the_position_past_it(
        kind: str) -> None:
    # CRC checks off: the batch header is accepted (its last offset, 19, is known), then its
    # lz4 frame fails. The position must not jump to 20 when the cursor runs out.
    cf = CompletedFetch(GOOD + bad_batch("lz4"), "t", 3, 0, check_crcs=False)
    take = taker(kind, cf)
    assert take(100) == list(range(10))
    assert_stuck_at_10(cf, take, "Cannot decompress lz4 batch", len(GOOD) + 61)  # its frame


@pytest.mark.parametrize("kind", ["records", "arrow"])
def test_bad_first_batch_raises_at_once_and_again(kind: str) -> None:
    cf = CompletedFetch(bad_batch("none") + AFTER, "t", 3, 10)
    assert_stuck_at_10(cf, taker(kind, cf), "CRC32C mismatch", 0)


def test_discard_ends_a_pending_error() -> None:
    cf = CompletedFetch(GOOD + bad_batch("none"), "t", 3, 0)
    assert len(cf.take_records(100)) == 10
    assert not cf.is_drained
    cf.discard()
    assert cf.is_drained and cf.take_records(100) == [] and cf.next_fetch_offset == 10


# ------------------------------------------------------------------ incomplete trailing batch

def test_incomplete_batch_reports_offset_declared_size_and_bytes_present() -> None:
    whole = rs.aio_v2(rs.sample_records(10, seed=10), "none", 10)
    cf = CompletedFetch(GOOD + whole[:100], "t", 3, 0)
    assert cf.incomplete_batch is None              # not met yet
    assert [r.offset for r in cf.take_records(100)] == list(range(10))
    assert cf.is_drained and cf.next_fetch_offset == 10
    assert cf.incomplete_batch == (10, len(whole), 100)


def test_incomplete_first_batch_is_drained_at_once() -> None:
    whole = rs.aio_v2(rs.sample_records(10, seed=10), "none", 10)
    cf = CompletedFetch(whole[:-1], "t", 3, 10)
    assert cf.is_drained and cf.next_fetch_offset == 10
    assert cf.incomplete_batch == (10, len(whole), len(whole) - 1)
    assert cf.take_records(100) == []


@pytest.mark.parametrize("cut,expect", [(5, (-1, -1, 5)), (9, (10, -1, 9))])
def test_incomplete_header_says_what_it_can(cut: int, expect: tuple[int, int, int]) -> None:
    whole = rs.aio_v2(rs.sample_records(3), "none", 10)
    cf = CompletedFetch(whole[:cut], "t", 3, 10)
    assert cf.is_drained and cf.incomplete_batch == expect


def test_huge_declared_length_is_an_incomplete_batch_of_that_size() -> None:
    buf = bytearray(rs.aio_v2(rs.sample_records(3), "none", 10))
    struct.pack_into(">i", buf, 8, 0x7FFFFFFF)
    cf = CompletedFetch(bytes(buf), "t", 3, 10)
    assert cf.is_drained and cf.incomplete_batch == (10, 12 + 0x7FFFFFFF, len(buf))


@pytest.mark.parametrize("length", [-1, 0, 4])
def test_impossible_short_or_negative_length_is_corruption(length: int) -> None:
    buf = bytearray(rs.aio_v2(rs.sample_records(3), "none", 10))
    struct.pack_into(">i", buf, 8, length)
    cf = CompletedFetch(GOOD + bytes(buf), "t", 3, 0)
    assert len(cf.take_records(100)) == 10
    assert not cf.is_drained
    for _ in range(2):
        with pytest.raises(CorruptRecordError, match=f"Invalid batch length {length} at byte "
                                                     f"{len(GOOD)} of the record set") as info:
            cf.take_records(100)
        assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 3, 10)
    assert cf.next_fetch_offset == 10

