"""Record-set builders for decoder tests, using independent encoders (aiokafka, kafka-python).

aio_v2 (aiokafka) lives in pyconsumer/testing/_encode.py, as the shipped fake cluster uses it."""
from __future__ import annotations

import struct
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder
from kafka.record.memory_records import MemoryRecords

from pyconsumer.testing._encode import CODECS_V2, aio_v2

CODECS_LEGACY = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}

Rec = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def sample_records(n: int, seed: int = 0) -> list[Rec]:
    """(offset_delta, timestamp, key, value, headers) with nulls, empties and headers mixed in."""
    out: list[Rec] = []
    for i in range(n):
        j = i + seed
        key = None if j % 7 == 3 else b"key-%d" % j
        value = None if j % 11 == 5 else (b"" if j % 13 == 4 else b"v%d-" % j * (j % 5 + 1))
        headers: list[tuple[str, bytes | None]] = (
            [("h%d" % j, b"x" * (j % 3)), ("n", None)] if j % 4 == 1 else []
        )
        out.append((i, 1_600_000_000_000 + j, key, value, headers))
    return out


def kp_v2(records: list[Rec], codec: str = "none", base_offset: int = 0) -> bytes:
    b = KpBuilder(2, CODECS_V2[codec], False, -1, -1, -1, 1 << 30)
    for d, ts, k, v, h in records:
        b.append(d, ts, k, v, h)
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    return bytes(buf)


def kp_legacy(records: list[Rec], magic: int, codec: str = "none", base_offset: int = 0) -> bytes:
    b = KpLegacyBuilder(magic, CODECS_LEGACY[codec], 1 << 30)
    for d, ts, k, v, _h in records:
        b.append(d, ts if magic else None, k, v)
    buf = bytearray(b.build())
    if codec == "none":
        # each message has its own offset field; shift them all
        pos = 0
        while pos < len(buf):
            off, size = struct.unpack_from(">qi", buf, pos)
            struct.pack_into(">q", buf, pos, off + base_offset)
            pos += 12 + size
    else:
        struct.pack_into(">q", buf, 0, base_offset + len(records) - 1)
    return bytes(buf)


def reference(data: bytes) -> list[dict[str, Any]]:
    """kafka-python's reading of a record set, skipping control batches."""
    out: list[dict[str, Any]] = []
    mr = MemoryRecords(data)
    while True:
        batch = mr.next_batch()
        if batch is None:
            break
        if getattr(batch, "is_control_batch", False):
            continue
        for r in batch:
            out.append(dict(offset=r.offset, timestamp=r.timestamp, timestamp_type=r.timestamp_type,
                            key=r.key, value=r.value, headers=list(r.headers)))
    return out


def control_batch(base_offset: int, producer_id: int, commit: bool, epoch: int = 0) -> bytes:
    """A transaction marker: transactional + control attribute bits, key = version int16 + type int16."""
    import crc32c

    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)  # version, coordinator epoch
    buf = bytearray(aio_v2([(0, 0, key, value, [])], "none", base_offset,
                           producer_id=producer_id, epoch=epoch, seq=-1, transactional=True))
    attrs = struct.unpack_from(">h", buf, 21)[0] | 0x20
    struct.pack_into(">h", buf, 21, attrs)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)
