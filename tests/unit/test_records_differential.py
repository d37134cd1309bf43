"""decode_records / decode_arrow agree with kafka-python's reader on sets built by independent encoders."""
from __future__ import annotations

import datetime as dt

import pytest

from tests import recordsets as rs

from pyconsumer.errors import CorruptRecordError  # noqa: E402
from pyconsumer.records import CompletedFetch, decode_arrow, decode_records  # noqa: E402


def _check(data: bytes) -> None:
    ref = rs.reference(data)
    got = decode_records(data, "t", 3)
    assert len(got) == len(ref)
    for r, g in zip(ref, got):
        assert g.topic == "t" and g.partition == 3
        assert g.offset == r["offset"]
        assert g.timestamp == (-1 if r["timestamp"] is None else r["timestamp"])
        assert g.timestamp_type == (-1 if r["timestamp_type"] is None else r["timestamp_type"])
        assert g.key == r["key"] and g.value == r["value"]
        assert list(g.headers) == r["headers"]
        assert g.serialized_key_size == (-1 if r["key"] is None else len(r["key"]))
        assert g.serialized_value_size == (-1 if r["value"] is None else len(r["value"]))
    rows = decode_arrow(data, "t", 3, include_headers=True).to_pylist()
    assert len(rows) == len(got)
    for row, g in zip(rows, got):
        assert (row["key"], row["value"], row["offset"], row["partition"], row["topic"]) == (
            g.key, g.value, g.offset, 3, "t")
        assert row["timestampType"] == g.timestamp_type
        if g.timestamp >= 0:
            epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
            assert row["timestamp"] == epoch + dt.timedelta(milliseconds=g.timestamp)
        hdrs = [(h["key"], h["value"]) for h in row["headers"]] if row["headers"] is not None else []
        assert hdrs == list(g.headers)
        if not g.headers:
            assert row["headers"] is None


@pytest.mark.parametrize("codec", list(rs.CODECS_V2))
@pytest.mark.parametrize("builder", ["aio", "kp"])
def test_v2_codecs(codec: str, builder: str) -> None:
    parts = []
    for i, base in enumerate([0, 57, 1000]):
        recs = rs.sample_records(40 + i, seed=base)
        parts.append(rs.aio_v2(recs, codec, base, leader_epoch=i) if builder == "aio"
                     else rs.kp_v2(recs, codec, base))
    _check(b"".join(parts))


@pytest.mark.parametrize("codec", list(rs.CODECS_LEGACY))
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_codecs(codec: str, magic: int) -> None:
    if magic == 0 and codec != "none":
        # kafka-python writes relative inner offsets (a v0 broker writes absolute ones): one set at 0
        if codec == "lz4":
            pytest.importorskip("xxhash", reason="kafka-python's v0 lz4 writer needs xxhash")
        _check(rs.kp_legacy(rs.sample_records(30), 0, codec, 0))
        return
    data = rs.kp_legacy(rs.sample_records(30), magic, codec, 10) + rs.kp_legacy(
        rs.sample_records(5, 9), magic, codec, 40)
    _check(data)


def test_leader_epoch_and_compaction_gap() -> None:
    recs = [(0, 5, b"a", b"1", []), (4, 6, b"b", b"2", [])]
    data = rs.aio_v2(recs, "none", 100, leader_epoch=7)
    got = decode_records(data, "t", 0)
    assert [r.offset for r in got] == [100, 104]
    assert [r.leader_epoch for r in got] == [7, 7]
    _check(data)


@pytest.mark.parametrize("sizes", [[1000, 200], [400, 400, 400]])
def test_max_poll_records(sizes: list[int]) -> None:
    base, parts = 0, []
    for n in sizes:
        parts.append(rs.aio_v2([(i, i, b"k", b"v%d" % (base + i), []) for i in range(n)], "lz4", base))
        base += n
    data = b"".join(parts)
    f = CompletedFetch(data, "t", 0, 0)
    chunks = [f.take_records(500) for _ in range(4)]
    assert [len(c) for c in chunks] == [500, 500, 200, 0]
    assert [r.offset for c in chunks for r in c] == list(range(1200))
    assert f.next_fetch_offset == 1200 and f.is_drained
    f = CompletedFetch(data, "t", 0, 0)
    batches = [f.take_arrow(500) for _ in range(3)]
    assert [b.num_rows for b in batches] == [500, 500, 200]
    assert [o for b in batches for o in b.column("offset").to_pylist()] == list(range(1200))


def test_fetch_offset_mid_batch_and_discard() -> None:
    data = rs.aio_v2([(i, i, None, b"x", []) for i in range(10)], "none", 50)
    f = CompletedFetch(data, "t", 0, 55)
    assert [r.offset for r in f.take_records(3)] == [55, 56, 57]
    f.discard()
    assert f.take_records(10) == []
    assert decode_records(data, "t", 0, fetch_offset=58)[0].offset == 58


def test_crc_mismatch() -> None:
    data = bytearray(rs.aio_v2(rs.sample_records(5), "none", 42))
    data[data.index(b"v0-")] ^= 1  # a payload bit: CRC breaks, structure does not
    with pytest.raises(CorruptRecordError) as ei:
        decode_records(bytes(data), "topic-x", 4)
    assert ei.value.topic == "topic-x" and ei.value.partition == 4 and ei.value.offset == 42
    assert len(decode_records(bytes(data), "topic-x", 4, check_crcs=False)) == 5
