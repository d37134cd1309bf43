"""Every kind of corrupt record set raises CorruptRecordError in the one message format (issue 10,
item 2): what was wrong, at which byte of the record set (and of the decompressed records for a
compressed batch), then topic, partition and offset. The same damage gives the same message on
every path (ConsumerRecords, Arrow, Arrow with headers), since they share one parser.

Batches are written by aiokafka's encoder (tests/recordsets.py) and damaged by hand; the bad
batch follows 10 good records (offsets 0-9), so it starts at byte len(GOOD) with offset 10.
"""
from __future__ import annotations

import re
import struct
from collections.abc import Callable

import crc32c
import pytest
import zstandard

from pyconsumer.errors import CorruptRecordError, UnsupportedCodecError
from pyconsumer.records import decode_arrow, decode_records

from tests import recordsets as rs

GOOD = rs.aio_v2(rs.sample_records(10), "none", 0)
AT = len(GOOD)                                     # where the damaged batch starts
WHERE = "(topic=t, partition=3, offset={})"
HEX = "0x[0-9a-f]{8}"


def batch(codec: str = "none") -> bytearray:
    return bytearray(rs.aio_v2(rs.sample_records(10, seed=10), codec, 10))


def fix_crc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def zigzag(buf: bytes, at: int) -> tuple[int, int]:
    """(value, size) of the zig-zag varint at buf[at]."""
    shift = value = size = 0
    while True:
        b = buf[at + size]
        value |= (b & 0x7F) << shift
        shift += 7
        size += 1
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), size


def flipped() -> bytes:
    buf = batch()
    buf[-3] ^= 0x40
    return bytes(buf)


def length(n: int) -> bytes:
    buf = batch()
    struct.pack_into(">i", buf, 8, n)
    return bytes(buf)


def magic(m: int) -> bytes:
    buf = batch()
    buf[16] = m
    return bytes(buf)


def count(n: int, codec: str = "none") -> bytes:
    buf = batch(codec)
    struct.pack_into(">i", buf, 57, n)
    return fix_crc(buf)


def codec_id(c: int) -> bytes:
    buf = batch()
    struct.pack_into(">h", buf, 21, c)
    return fix_crc(buf)


def record_length_plus_one() -> bytes:
    buf = batch()
    n, size = zigzag(bytes(buf), 61)
    assert size == 1 and 0 < n < 62
    buf[61] = (n + 1) << 1                          # still inside the batch, one byte too long
    return fix_crc(buf)


def trailing_bytes() -> bytes:
    buf = batch() + b"\x00\x00"
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    return fix_crc(buf)


def inflated_size() -> int:
    return len(zstandard.ZstdDecompressor().decompressobj().decompress(bytes(batch("zstd")[61:])))


def corrupt_lz4() -> bytes:
    buf = batch("lz4")
    buf[-3] ^= 0x40
    return bytes(buf)


def legacy_crc() -> bytes:
    buf = bytearray(rs.kp_legacy(rs.sample_records(3), 1, "none", 10))
    buf[-1] ^= 0x01                                 # the last message's last value byte
    return bytes(buf)


# (id, damaged batch, check_crcs, exception class, full message as a regex)
CASES: list[tuple[str, Callable[[], bytes], bool, type[Exception], str]] = [
    ("crc", flipped, True, CorruptRecordError,
     rf"Record batch CRC32C mismatch: stored {HEX}, computed {HEX} at byte {AT} of the record set "
     + re.escape(WHERE.format(10))),
    ("negative-length", lambda: length(-1), True, CorruptRecordError,
     re.escape(f"Invalid batch length -1 at byte {AT} of the record set {WHERE.format(10)}")),
    ("short-v2-length", lambda: length(20), True, CorruptRecordError,
     re.escape(f"Record batch length 20 is smaller than the minimum 49 at byte {AT} of the "
               f"record set {WHERE.format(10)}")),
    ("magic", lambda: magic(7), True, CorruptRecordError,
     re.escape(f"Unknown record batch magic 7 at byte {AT} of the record set {WHERE.format(10)}")),
    ("negative-magic", lambda: magic(0xFF), True, CorruptRecordError,
     re.escape(f"Unknown record batch magic -1 at byte {AT} of the record set {WHERE.format(10)}")),
    ("negative-count", lambda: count(-1), True, CorruptRecordError,
     re.escape(f"Invalid record count -1 at byte {AT} of the record set {WHERE.format(10)}")),
    ("huge-count", lambda: count(2_000_000_000), True, CorruptRecordError,
     re.escape(f"Record count 2000000000 cannot fit in {len(batch()) - 61} bytes of records at "
               f"byte {AT} of the record set {WHERE.format(10)}")),
    ("codec", lambda: codec_id(6), True, UnsupportedCodecError,
     re.escape(f"Unknown compression codec id 6 in record batch at byte {AT} of the record set "
               f"{WHERE.format(10)}")),
    ("record-length", record_length_plus_one, True, CorruptRecordError,
     r"Record length \d+ does not match its fields \(\d+ bytes\) at byte "
     + re.escape(f"{AT + 61} of the record set {WHERE.format(10)}")),
    ("trailing", trailing_bytes, True, CorruptRecordError,
     re.escape(f"Incorrect declared batch size: 2 bytes remain after the last record at byte "
               f"{AT + len(batch())} of the record set {WHERE.format(10)}")),
    ("short-read", lambda: count(11), True, CorruptRecordError,
     re.escape(f"Can't read 1 bytes, 0 left at byte {AT + len(batch())} of the record set "
               f"{WHERE.format(10)}")),
    ("short-read-decompressed", lambda: count(11, "zstd"), True, CorruptRecordError,
     re.escape(f"Can't read 1 bytes, 0 left at byte {inflated_size()} of the records "
               f"decompressed from the batch at byte {AT} of the record set {WHERE.format(10)}")),
    ("undecompressable", corrupt_lz4, False, CorruptRecordError,
     r"Cannot decompress lz4 batch \(.+\) at byte "
     + re.escape(f"{AT + 61} of the record set {WHERE.format(10)}")),
]

PATHS: dict[str, Callable[[bytes, bool], object]] = {
    "records": lambda data, crc: decode_records(data, "t", 3, check_crcs=crc),
    "arrow": lambda data, crc: decode_arrow(data, "t", 3, check_crcs=crc),
    "arrow-headers": lambda data, crc: decode_arrow(data, "t", 3, check_crcs=crc,
                                                   include_headers=True),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("make,crc,cls,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_message_format(path: str, make: Callable[[], bytes], crc: bool,
                            cls: type[Exception], message: str) -> None:
    with pytest.raises(cls) as info:
        PATHS[path](GOOD + make(), crc)
    err = info.value
    assert type(err) is cls
    assert re.fullmatch(message, str(err)), str(err)
    assert (err.topic, err.partition, err.offset) == ("t", 3, 10)


def test_legacy_message_crc_names_the_message() -> None:
    # kafka-python writes three uncompressed v1 messages; the damaged one is the third (offset 12)
    data = legacy_crc()
    pos = 0
    starts = []
    while pos < len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    for decode in (decode_records, decode_arrow):
        with pytest.raises(CorruptRecordError) as info:
            decode(data, "t", 3)
        assert re.fullmatch(rf"Message CRC32 mismatch: stored {HEX}, computed {HEX} at byte "
                            + re.escape(f"{starts[2]} of the record set {WHERE.format(12)}"),
                            str(info.value)), str(info.value)
        assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 3, 12)
