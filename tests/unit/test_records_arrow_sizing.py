"""decode_arrow / take_arrow on compressed sets whose decompressed size is far above the upfront
guess (3x the compressed bytes): the buffers are re-sized after the first compressed batch, and
the output must be exactly what decode_records gives."""
from __future__ import annotations

import struct

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from pyconsumer.records import CompletedFetch, decode_arrow, decode_records

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _record_set(codec: int, batches: int, per: int, vsize: int, plain_every: int = 0) -> bytes:
    parts = []
    for k in range(batches):
        c = 0 if plain_every and k % plain_every == 1 else codec
        b = DefaultRecordBatchBuilder(2, c, 0, -1, -1, -1, 1 << 30)
        for j in range(per):
            i = k * per + j
            key = None if i % 7 == 3 else b"k%06d" % i
            value = None if i % 11 == 5 else (b"%08d" % i) * (vsize // 8) + bytes(i % 5)
            b.append(j, 1_700_000_000_000 + i, key, value, [])
        buf = b.build()
        struct.pack_into(">q", buf, 0, k * per)
        parts.append(bytes(buf))
    return b"".join(parts)


def _rows(recs):
    return [(r.offset, r.timestamp, r.key, r.value) for r in recs]


def _arrow_rows(batch):
    d = batch.to_pydict()
    return [(o, int(t.timestamp() * 1000 + 0.5) if t is not None else None, k, v)
            for o, t, k, v in zip(d["offset"], d["timestamp"], d["key"], d["value"])]


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("vsize,plain_every", [(1024, 0), (64, 0), (512, 3)])
def test_decode_arrow_compressed_large_ratio(codec: str, vsize: int, plain_every: int) -> None:
    data = _record_set(CODECS[codec], batches=12, per=50, vsize=vsize, plain_every=plain_every)
    expected = _rows(decode_records(data, "t", 0))
    assert len(expected) == 600
    batch = decode_arrow(data, "t", 0)
    assert _arrow_rows(batch) == expected
    # drained in chunks (mid-batch stops; the re-projection sees rows_target = max_rows)
    for n in (1, 37, 50, 120):
        f, got = CompletedFetch(data, "t", 0, 0), []
        while not f.is_drained:
            b = f.take_arrow(n)
            assert b.num_rows <= n
            got += _arrow_rows(b)
        assert got == expected


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_decode_arrow_compressed_fetch_offset_mid_set(codec: str) -> None:
    data = _record_set(CODECS[codec], batches=6, per=40, vsize=2048)
    expected = [r for r in _rows(decode_records(data, "t", 0)) if r[0] >= 95]
    assert _arrow_rows(decode_arrow(data, "t", 0, fetch_offset=95)) == expected
