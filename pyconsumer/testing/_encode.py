"""Record batches (magic v2) built by an independent encoder: aiokafka's, so what the fake
cluster serves is not pyconsumer's own idea of the format.

aiokafka comes with the ``test`` extra and is imported only when a batch is built; without it
:func:`aio_v2` raises :class:`MissingExtraError` naming ``user``.
"""
from __future__ import annotations

import struct

from ._errors import require_module

__all__ = ["CODECS_V2", "RecordRow", "aio_v2"]

#: codec name -> the compression id of a v2 batch's attributes
CODECS_V2: dict[str, int] = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

#: (offset_delta, timestamp, key, value, headers)
RecordRow = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def aio_v2(records: list[RecordRow], codec: str = "none", base_offset: int = 0, *,
           producer_id: int = -1, epoch: int = -1, seq: int = -1, transactional: bool = False,
           leader_epoch: int = -1, user: str = "aio_v2()") -> bytes:
    """One v2 record batch of ``records`` written by aiokafka's DefaultRecordBatchBuilder,
    with ``base_offset`` and ``leader_epoch`` set (both outside the CRC)."""
    if codec not in CODECS_V2:
        raise ValueError(f"unknown codec {codec!r}: one of {', '.join(CODECS_V2)}")
    require_module(user, "aiokafka")
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, CODECS_V2[codec], transactional, producer_id, epoch, seq, 1 << 30)
    for d, ts, k, v, h in records:
        b.append(d, ts, k, v, h)
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)  # outside the CRC range
    return bytes(buf)
