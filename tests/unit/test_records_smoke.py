"""Quick checks of pyconsumer._records (the exhaustive differential/fuzz suite lives elsewhere).

Record sets come from independent writers: aiokafka's DefaultRecordBatchBuilder (magic 2)
and kafka-python's LegacyRecordBatchBuilder (magic 0/1).
"""
from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

from pyconsumer.errors import CorruptRecordError, RecordDeserializationError, UnsupportedCodecError
from pyconsumer.records import (
    CompletedFetch,
    ConsumerRecord,
    decode_arrow,
    decode_records,
    kafka_arrow_schema,
)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
Row = tuple[int, int, Any, Any, list[tuple[str, Any]]]


def v2_batch(
    rows: list[Row], base_offset: int, *, codec: int = 0, epoch: int = -1,
    log_append_time: int | None = None, producer_id: int = -1, transactional: bool = False,
    control: bool = False,
) -> bytes:
    """A magic-2 batch of (offset_delta, timestamp, key, value, headers) rows."""
    b = DefaultRecordBatchBuilder(2, codec, 1 if transactional else 0, producer_id, 0, 0, 1 << 30)
    for delta, ts, key, value, headers in rows:
        b.append(delta, ts, key, value, headers)
    buf = b.build()
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, epoch)         # partition leader epoch: outside the CRC
    if log_append_time is not None or control:
        attrs = struct.unpack_from(">h", buf, 21)[0]
        if log_append_time is not None:
            attrs |= 0x08
            struct.pack_into(">q", buf, 35, log_append_time)
        if control:
            attrs |= 0x20
        struct.pack_into(">h", buf, 21, attrs)
        refresh_crc(buf)
    return bytes(buf)


def refresh_crc(buf: bytearray) -> None:
    import crc32c
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))


def sample_rows(n: int = 7) -> list[Row]:
    rows: list[Row] = []
    for i in range(n):
        key = None if i % 3 == 2 else b"key-%d" % i
        value = None if i % 4 == 3 else b"value-%d-" % i * (i + 1)
        headers = [("h", b"x%d" % i), ("empty", None), ("ünï", b"")] if i % 2 else []
        rows.append((i, 1_700_000_000_000 + i, key, value, headers))
    return rows


@pytest.mark.parametrize("codec", list(CODECS), ids=list(CODECS))
def test_v2_records_exact_fields(codec: str) -> None:
    rows = sample_rows()
    data = v2_batch(rows, 1000, codec=CODECS[codec], epoch=7)
    recs = decode_records(data, "topic-a", 3)
    assert len(recs) == len(rows)
    for rec, (delta, ts, key, value, headers) in zip(recs, rows):
        assert rec == ConsumerRecord("topic-a", 3, 1000 + delta, ts, 0, key, value, headers, 7,
                                     -1 if key is None else len(key),
                                     -1 if value is None else len(value))
        assert rec.leader_epoch == 7 and rec.headers == headers


@pytest.mark.parametrize("codec", list(CODECS), ids=list(CODECS))
def test_v2_arrow_exact_rows(codec: str) -> None:
    import datetime as dt
    rows = sample_rows()
    data = v2_batch(rows, 50, codec=CODECS[codec])
    batch = decode_arrow(data, "topic-a", 1, include_headers=True)
    batch.validate(full=True)
    assert batch.schema == kafka_arrow_schema(True)
    got = batch.to_pylist()
    for row, (delta, ts, key, value, headers) in zip(got, rows):
        assert row == {
            "key": key, "value": value, "topic": "topic-a", "partition": 1, "offset": 50 + delta,
            "timestamp": dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc),
            "timestampType": 0,
            "headers": [{"key": k, "value": v} for k, v in headers] if headers else None,
        }
    assert len(got) == len(rows)
    plain = decode_arrow(data, "topic-a", 1)
    assert plain.schema == kafka_arrow_schema() and plain.num_columns == 7
    assert plain.column("value").to_pylist() == [r[3] for r in rows]


def test_schema_is_sparks() -> None:
    import pyarrow as pa
    s = kafka_arrow_schema(True)
    assert [(f.name, str(f.type), f.nullable) for f in s] == [
        ("key", "binary", True), ("value", "binary", True), ("topic", "string", True),
        ("partition", "int32", True), ("offset", "int64", True),
        ("timestamp", "timestamp[us, tz=UTC]", True), ("timestampType", "int32", True),
        ("headers", "list<item: struct<key: string, value: binary>>", True)]
    assert s.field("headers").type.value_type == pa.struct([("key", pa.string()),
                                                            ("value", pa.binary())])


def test_log_append_time_overrides_record_timestamps() -> None:
    data = v2_batch(sample_rows(3), 0, log_append_time=42)
    recs = decode_records(data, "t", 0)
    assert [(r.timestamp, r.timestamp_type) for r in recs] == [(42, 1)] * 3
    assert decode_arrow(data, "t", 0).column("timestampType").to_pylist() == [1, 1, 1]


def legacy_set(magic: int, codec: int, n: int = 5, base: int = 0) -> bytes:
    b = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i in range(n):
        b.append(base + i, 1000 + i if magic else None, None if i == 2 else b"k%d" % i,
                 None if i == 3 else b"v%d" % i * 10)
    return bytes(b.build())


def kafka_python_view(data: bytes) -> list[tuple[int, int, Any, Any]]:
    out = []
    mr = KpMemoryRecords(data)
    while (batch := mr.next_batch()) is not None:
        for r in batch:
            out.append((r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value))
    return out


@pytest.mark.parametrize("magic,codec", [(m, c) for m in (0, 1) for c in (0, 1, 2)]
                         + [(1, 3)])
def test_legacy_matches_kafka_python(magic: int, codec: int) -> None:
    data = legacy_set(magic, codec, base=10) + legacy_set(magic, codec, base=15)
    recs = decode_records(data, "t", 0)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in recs] == kafka_python_view(data)
    assert [r.offset for r in recs] == list(range(10, 20))
    assert {(r.timestamp_type, r.leader_epoch) for r in recs} == {(magic - 1 if magic else -1,
                                                                  None)}
    arrow = decode_arrow(data, "t", 0)
    assert arrow.column("offset").to_pylist() == list(range(10, 20))
    assert arrow.column("key").to_pylist() == [r.key for r in recs]


def _xxh32(data: bytes) -> int:
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF
    rotl = lambda x, r: ((x << r) | (x >> (32 - r))) & m  # noqa: E731
    assert len(data) < 16
    h = (p5 + len(data)) & m
    i = 0
    while i + 4 <= len(data):
        h = rotl((h + int.from_bytes(data[i:i + 4], "little") * p3) & m, 17) * p4 & m
        i += 4
    for byte in data[i:]:
        h = rotl((h + byte * p5) & m, 11) * p1 & m
    h ^= h >> 15
    h = h * p2 & m
    h ^= h >> 13
    h = h * p3 & m
    return h ^ (h >> 16)


def test_legacy_v0_lz4_with_kafkas_broken_header_checksum() -> None:
    import lz4.frame
    inner = legacy_set(0, 0, n=4, base=100)
    frame = bytearray(lz4.frame.compress(inner, content_checksum=False))
    desc_len = 2 + (8 if frame[4] & 0x08 else 0)
    frame[4 + desc_len] = (_xxh32(bytes(frame[0:4 + desc_len])) >> 8) & 0xFF  # hashes the magic
    body = struct.pack(">bb", 0, 3) + struct.pack(">i", -1) + struct.pack(">i", len(frame)) \
        + bytes(frame)
    msg = struct.pack(">I", zlib.crc32(body)) + body
    data = struct.pack(">qi", 103, len(msg)) + msg
    recs = decode_records(data, "t", 0)
    assert [(r.offset, r.key, r.value) for r in recs] == [
        (o, k, v) for o, _, k, v in kafka_python_view(inner)]


def test_fetch_offset_mid_batch_and_next_fetch_offset() -> None:
    data = v2_batch(sample_rows(10), 100) + v2_batch(sample_rows(5), 110)
    recs = decode_records(data, "t", 0, fetch_offset=104)
    assert [r.offset for r in recs] == list(range(104, 115))
    assert decode_arrow(data, "t", 0, fetch_offset=113).column("offset").to_pylist() == [113, 114]


def test_completed_fetch_drains_500_500_200() -> None:
    data = b"".join(v2_batch([(j, j, b"k", b"v%d" % (i + j), []) for j in range(300)], i,
                             epoch=4) for i in range(0, 1200, 300))
    cf = CompletedFetch(data, "t", 2, 0)
    sizes, offsets = [], []
    while not cf.is_drained:
        recs = cf.take_records(500)
        sizes.append(len(recs))
        offsets += [r.offset for r in recs]
        assert cf.next_fetch_offset == offsets[-1] + 1
    assert sizes == [500, 500, 200] and offsets == list(range(1200))
    assert cf.take_records(500) == [] and cf.last_epoch == 4

    af = CompletedFetch(data, "t", 2, 0)
    batches = [af.take_arrow(500) for _ in range(4)]
    assert [b.num_rows for b in batches] == [500, 500, 200, 0]
    assert [o for b in batches for o in b.column("offset").to_pylist()] == list(range(1200))
    assert af.is_drained and af.next_fetch_offset == 1200


def test_compaction_gap_and_control_batch_advance_next_fetch_offset() -> None:
    # records at deltas 0 and 1 of a batch whose last offset delta is 9 (compacted away)
    gap = bytearray(v2_batch([(0, 1, b"a", b"1", []), (1, 2, b"b", b"2", [])], 20))
    struct.pack_into(">i", gap, 23, 9)
    refresh_crc(gap)
    cf = CompletedFetch(bytes(gap), "t", 0, 20)
    assert [r.offset for r in cf.take_records(10)] == [20, 21]
    assert cf.is_drained and cf.next_fetch_offset == 30
    marker = v2_batch([(0, 5, struct.pack(">hh", 0, 1), b"", [])], 30, producer_id=9,
                      transactional=True, control=True)
    cf = CompletedFetch(bytes(gap) + marker, "t", 0, 20)
    assert [r.offset for r in cf.take_records(10)] == [20, 21]
    assert cf.next_fetch_offset == 31


def test_read_committed_drops_aborted_transactions() -> None:
    def txn(pid: int, base: int, n: int) -> bytes:
        return v2_batch([(j, j, None, b"p%d-%d" % (pid, base + j), []) for j in range(n)], base,
                        producer_id=pid, transactional=True)

    def marker(pid: int, base: int, commit: bool) -> bytes:
        return v2_batch([(0, 0, struct.pack(">hh", 0, 1 if commit else 0), b"", [])], base,
                        producer_id=pid, transactional=True, control=True)

    data = txn(1, 0, 2) + txn(2, 2, 2) + marker(1, 4, False) + marker(2, 5, True) + txn(1, 6, 1)
    aborted = [(1, 0)]
    committed = decode_records(data, "t", 0, isolation_level="read_committed",
                               aborted_transactions=aborted)
    assert [r.offset for r in committed] == [2, 3, 6]
    assert decode_arrow(data, "t", 0, isolation_level="read_committed",
                        aborted_transactions=aborted).column("offset").to_pylist() == [2, 3, 6]
    assert [r.offset for r in decode_records(data, "t", 0)] == [0, 1, 2, 3, 6]


def test_truncated_trailing_batch_is_ignored_but_corruption_raises() -> None:
    a, b = v2_batch(sample_rows(3), 0), v2_batch(sample_rows(3), 3)
    assert [r.offset for r in decode_records(a + b[:-5], "t", 0)] == [0, 1, 2]
    assert decode_arrow(a + b[:30], "t", 0).num_rows == 3
    bad = bytearray(a + b)
    bad[len(a) + 70] ^= 0xFF
    with pytest.raises(CorruptRecordError) as e:
        decode_records(bytes(bad), "t", 5)
    assert (e.value.topic, e.value.partition, e.value.offset) == ("t", 5, 3)
    assert "CRC" in str(e.value)
    with pytest.raises(CorruptRecordError):
        decode_arrow(bytes(bad), "t", 5)
    # the same damage with CRC checks off is caught by the bounds-checked reader or passes
    # as different bytes, but never crashes
    try:
        decode_records(bytes(bad), "t", 5, check_crcs=False)
    except CorruptRecordError:
        pass


def test_unknown_codec_is_named() -> None:
    buf = bytearray(v2_batch(sample_rows(2), 8))
    struct.pack_into(">h", buf, 21, 6)
    refresh_crc(buf)
    with pytest.raises(UnsupportedCodecError, match="codec id 6") as e:
        decode_records(bytes(buf), "t", 0)
    assert e.value.offset == 8


def test_huge_length_fields_do_not_allocate() -> None:
    buf = bytearray(v2_batch(sample_rows(2), 0))
    struct.pack_into(">i", buf, 57, 2_000_000_000)     # record count
    refresh_crc(buf)
    with pytest.raises(CorruptRecordError, match="Record count"):
        decode_records(bytes(buf), "t", 0)
    with pytest.raises(CorruptRecordError):
        decode_arrow(bytes(buf), "t", 0)


def test_deserializer_error_keeps_position() -> None:
    data = v2_batch([(i, i, b"k", b"%d" % i if i != 3 else b"x", []) for i in range(6)], 0)
    cf = CompletedFetch(data, "t", 0, 0, value_deserializer=lambda v: int(v))
    assert [r.value for r in cf.take_records(10)] == [0, 1, 2]
    assert cf.next_fetch_offset == 3
    with pytest.raises(RecordDeserializationError) as e:
        cf.take_records(10)
    assert (e.value.topic, e.value.partition, e.value.offset) == ("t", 0, 3)
    assert cf.next_fetch_offset == 3
    with pytest.raises(RecordDeserializationError, match="value of the record at offset 3"):
        decode_records(data, "t", 0, value_deserializer=lambda v: int(v))
    keys = decode_records(data, "t", 0, key_deserializer=bytes.decode)
    assert [r.key for r in keys] == ["k"] * 6 and keys[0].serialized_key_size == 1


def test_accepts_memoryview_slices_and_bytearray() -> None:
    data = b"junk" + v2_batch(sample_rows(4), 0) + b"tail"
    view = memoryview(bytearray(data))[4:-4]
    assert [r.offset for r in decode_records(view, "t", 0)] == [0, 1, 2, 3]
    assert decode_arrow(bytearray(view), "t", 0).num_rows == 4
    assert decode_records(b"", "t", 0) == [] and decode_arrow(b"", "t", 0).num_rows == 0


@pytest.mark.parametrize("raw", [b"\xc3(", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf0\x9f\x98",
                                 b"\xf4\x90\x80\x80", b"a\xffb", b"\xe2\x82\xac", b"\xc3\xbc"])
def test_invalid_utf8_header_keys_replaced_like_python(raw: bytes) -> None:
    marker = "Q" * len(raw)
    buf = bytearray(v2_batch([(0, 0, None, b"v", [(marker, b"x")])], 0))
    at = bytes(buf).index(marker.encode())
    buf[at:at + len(raw)] = raw
    refresh_crc(buf)
    expected = raw.decode("utf-8", "replace")
    assert decode_records(bytes(buf), "t", 0)[0].headers == [(expected, b"x")]
    batch = decode_arrow(bytes(buf), "t", 0, include_headers=True)
    batch.validate(full=True)
    assert batch.column("headers").to_pylist() == [[{"key": expected, "value": b"x"}]]


def recompress(batch: bytes, codec: int, compress: Any) -> bytes:
    """The same v2 batch with its records section compressed by another library."""
    records = compress(batch[61:])
    buf = bytearray(batch[:61]) + bytearray(records)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    attrs = struct.unpack_from(">h", buf, 21)[0]
    struct.pack_into(">h", buf, 21, (attrs & ~7) | codec)
    refresh_crc(buf)
    return bytes(buf)


def _compressors() -> dict[str, tuple[int, Any]]:
    import gzip

    import cramjam
    import lz4.frame
    import zstandard
    return {
        "snappy-raw": (2, lambda b: bytes(cramjam.snappy.compress_raw(b))),
        "gzip-stdlib": (1, gzip.compress),
        "lz4-frame-content-size": (3, lambda b: lz4.frame.compress(b, store_size=True)),
        "zstd-zstandard": (4, lambda b: zstandard.ZstdCompressor().compress(b)),
    }


@pytest.mark.parametrize("name", list(_compressors()))
def test_other_writers_compressions(name: str) -> None:
    codec, fn = _compressors()[name]
    rows = sample_rows(20)
    data = recompress(v2_batch(rows, 7), codec, fn)
    assert [(r.offset, r.key, r.value, r.headers) for r in decode_records(data, "t", 0)] == [
        (7 + d, k, v, h) for d, _, k, v, h in rows]
    assert decode_arrow(data, "t", 0).column("value").to_pylist() == [r[3] for r in rows]


def test_hostile_count_in_compressed_batch_is_corruption() -> None:
    import cramjam
    buf = bytearray(recompress(v2_batch(sample_rows(3), 0), 3,
                               lambda b: bytes(cramjam.lz4.compress(b))))
    struct.pack_into(">i", buf, 57, 2_000_000_000)
    refresh_crc(buf)
    for decode in (decode_records, decode_arrow):
        with pytest.raises(CorruptRecordError, match="Record count"):
            decode(bytes(buf), "t", 0)


def test_corruption_after_good_records_is_deferred_and_sticky() -> None:
    good, bad = v2_batch(sample_rows(4), 0), bytearray(v2_batch(sample_rows(4), 4))
    bad[70] ^= 0x01
    for take in ("take_records", "take_arrow"):
        cf = CompletedFetch(good + bytes(bad), "t", 0, 0)
        first = getattr(cf, take)(100)
        assert len(first) == 4 and cf.next_fetch_offset == 4
        for _ in range(2):
            with pytest.raises(CorruptRecordError, match="CRC32C") as e:
                getattr(cf, take)(100)
            assert e.value.offset == 4 and cf.next_fetch_offset == 4
    with pytest.raises(CorruptRecordError):
        decode_records(good + bytes(bad), "t", 0)
    with pytest.raises(CorruptRecordError):
        decode_arrow(good + bytes(bad), "t", 0)


def test_legacy_v1_log_append_time_wrapper_stamps_inner_records() -> None:
    data = bytearray(legacy_set(1, 1, n=3, base=0))
    # wrapper: offset(8) size(4) crc(4) magic(1) attributes(1) timestamp(8)
    data[17] |= 0x08
    struct.pack_into(">q", data, 18, 777)
    size = struct.unpack_from(">i", data, 8)[0]
    struct.pack_into(">I", data, 12, zlib.crc32(bytes(data[16:12 + size])))
    recs = decode_records(bytes(data), "t", 0)
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in recs] == [
        (0, 777, 1), (1, 777, 1), (2, 777, 1)]
    bad = bytearray(data)
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC32 mismatch"):
        decode_records(bytes(bad), "t", 0)
    with pytest.raises(CorruptRecordError, match="Cannot decompress gzip"):
        decode_records(bytes(bad), "t", 0, check_crcs=False)   # gzip's own trailer check


def test_completed_fetch_headers_column_per_take() -> None:

    from tests import recordsets as rs

    from pyconsumer.records import CompletedFetch

    data = rs.aio_v2(rs.sample_records(12), "none", 0)
    cf = CompletedFetch(data, "t", 0, 0)
    first = cf.take_arrow(4)
    assert "headers" not in first.schema.names
    cf.set_include_headers(True)
    second = cf.take_arrow(4)
    assert second.schema.names[-1] == "headers"
    assert second.column("offset").to_pylist() == [4, 5, 6, 7]
    expected = [[{"key": k, "value": v} for k, v in r[4]] or None for r in rs.sample_records(12)[4:8]]
    assert second.column("headers").to_pylist() == expected


def test_large_buffers_are_reused_and_accounted() -> None:

    from tests import recordsets as rs

    from pyconsumer._records import native_memory
    from pyconsumer.records import decode_arrow, get_buffer_cache_limit, set_buffer_cache_limit

    data = b"".join(rs.aio_v2([(i, 0, b"k", b"v" * 1000, []) for i in range(1000)], "none", base)
                    for base in range(0, 4000, 1000))
    before = native_memory()[0]
    first = decode_arrow(data, "t", 0)
    held = native_memory()[0] - before
    assert held >= first.column("value").buffers()[2].size
    values = first.column("value").to_pylist()
    del first
    assert native_memory()[0] == before            # every buffer given back
    again = decode_arrow(data, "t", 0)              # reuses the cached block: same content
    assert again.column("value").to_pylist() == values == [b"v" * 1000] * 4000
    limit = get_buffer_cache_limit()
    try:
        set_buffer_cache_limit(0)
        assert get_buffer_cache_limit() == 0
        with pytest.raises(ValueError, match="must be >= 0"):
            set_buffer_cache_limit(-1)
    finally:
        set_buffer_cache_limit(limit)
