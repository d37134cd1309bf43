"""Header fields the broker rewrites: LogAppendTime and lastOffsetDelta past the last record (compaction)."""
from __future__ import annotations

import struct

import crc32c

from tests import recordsets as rs

from pyconsumer.records import CompletedFetch, decode_arrow, decode_records  # noqa: E402


def _patch(data: bytes, *, attrs_or: int = 0, last_delta: int | None = None, max_ts: int | None = None) -> bytes:
    buf = bytearray(data)
    struct.pack_into(">h", buf, 21, struct.unpack_from(">h", buf, 21)[0] | attrs_or)
    if last_delta is not None:
        struct.pack_into(">i", buf, 23, last_delta)
    if max_ts is not None:
        struct.pack_into(">q", buf, 35, max_ts)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def test_log_append_time() -> None:
    data = _patch(rs.aio_v2(rs.sample_records(4), "gzip", 10), attrs_or=0x08, max_ts=1_700_000_000_123)
    got = decode_records(data, "t", 0)
    assert [(r.timestamp, r.timestamp_type) for r in got] == [(1_700_000_000_123, 1)] * 4
    assert [(r["timestamp"], r["timestamp_type"]) for r in rs.reference(data)] == [(1_700_000_000_123, 1)] * 4
    assert decode_arrow(data, "t", 0).column("timestampType").to_pylist() == [1] * 4


def test_compaction_gap_next_fetch_offset() -> None:
    # records at deltas 0 and 3; the compacted batch still covers deltas up to 9
    data = _patch(rs.aio_v2([(0, 1, b"a", b"1", []), (3, 2, b"b", b"2", [])], "none", 100), last_delta=9)
    data += rs.aio_v2([(0, 3, b"c", b"3", [])], "none", 110)
    f = CompletedFetch(data, "t", 0, 100)
    assert [r.offset for r in f.take_records(2)] == [100, 103]
    assert f.next_fetch_offset == 104  # like Java: the batch end is applied when the next take passes it
    assert [r.offset for r in f.take_records(5)] == [110]
    assert f.next_fetch_offset == 111
    # a batch whose records were all compacted away still advances the position
    empty = _patch(rs.aio_v2([(0, 1, b"a", b"1", [])], "none", 200), last_delta=4)
    f = CompletedFetch(empty, "t", 0, 201)
    assert f.take_records(5) == [] and f.next_fetch_offset == 205


def test_records_past_last_offset_delta_are_delivered_from_any_fetch_offset() -> None:
    """A batch (valid CRC) whose records run past its lastOffsetDelta: its records are what
    counts, as in Java (which reads a batch's records whatever lastOffsetDelta says). A fetch
    from inside the tail (offset 14, past the header's last offset 13) got nothing, silently,
    and the position never moved past the batch."""
    data = _patch(rs.aio_v2(rs.sample_records(20), "none", 0), last_delta=13)
    data += rs.aio_v2(rs.sample_records(2), "none", 20)
    assert [r.offset for r in decode_records(data, "t", 0, fetch_offset=14)] == list(range(14, 22))
    assert decode_arrow(data, "t", 0, fetch_offset=16).column("offset").to_pylist() == list(range(16, 22))
    f = CompletedFetch(data, "t", 0, 14)
    assert [r.offset for r in f.take_records(6)] == list(range(14, 20))
    assert [r.offset for r in f.take_records(6)] == [20, 21]
    assert f.next_fetch_offset == 22
    # compressed alike
    zdata = _patch(rs.aio_v2(rs.sample_records(20), "gzip", 0), last_delta=13)
    assert [r.offset for r in decode_records(zdata, "t", 0, fetch_offset=18)] == [18, 19]


def test_a_record_fault_names_the_batch_offset_when_its_delta_is_hostile() -> None:
    """A record whose offset delta points below its batch and whose key length is invalid:
    the error names topic, partition and the batch's offset (it named no offset)."""
    import pytest

    from pyconsumer.errors import CorruptRecordError

    buf = bytearray(rs.aio_v2([(0, 1, b"key", b"value", [])], "none", 500))
    pos = 61
    while buf[pos] & 0x80:          # the record's length varint
        pos += 1
    pos += 3                         # past its last byte, the attributes, the timestamp delta
    buf[pos] = 9                     # offset delta: zigzag(-5), offset 495
    buf[pos + 1] = 107               # key length: zigzag(-54)
    data = _patch(bytes(buf))
    for decode in (decode_records, decode_arrow):
        with pytest.raises(CorruptRecordError) as info:
            decode(data, "t", 3)
        assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 3, 500)
        assert str(info.value).startswith("Invalid length -54 at byte ")
