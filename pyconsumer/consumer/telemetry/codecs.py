"""Compressing a telemetry payload the way the broker decompresses it (Kafka's record-batch
codecs: ``Compression.wrapForInput``), by Kafka's compression type id.

gzip and zstd are their standard formats; snappy is xerial's stream framing (the header, then
length-prefixed raw blocks), which Kafka's SnappyInputStream reads; lz4 is an LZ4 frame of
independent blocks, no checksums but the descriptor's (Kafka refuses linked blocks, which
cramjam's frame writer makes). cramjam, a dependency already, does the block work.
"""
from __future__ import annotations

import struct

import cramjam

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

#: what we can write, in Kafka's names (ids above); the subscription's order picks among them
SUPPORTED = {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

_SNAPPY_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_SNAPPY_BLOCK = 32 * 1024
_LZ4_MAGIC = struct.pack("<I", 0x184D2204)
#: FLG: version 01, independent blocks, no block or content checksum, no content size
_LZ4_FLG = 0x60
#: BD: 64 KiB blocks at most
_LZ4_BD = 0x40
_LZ4_BLOCK = 64 * 1024

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32_short(data: bytes, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes (an LZ4 frame descriptor's checksum needs no more)."""
    if len(data) >= 16:
        raise ValueError("xxh32_short takes fewer than 16 bytes")
    h = (seed + _P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        (word,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    for byte in data[i:]:
        h = (_rotl((h + byte * _P5) & _M32, 11) * _P1) & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def _lz4_frame(data: bytes) -> bytes:
    descriptor = bytes([_LZ4_FLG, _LZ4_BD])
    out = [_LZ4_MAGIC, descriptor, bytes([(xxh32_short(descriptor) >> 8) & 0xFF])]
    for i in range(0, len(data), _LZ4_BLOCK):
        block = data[i:i + _LZ4_BLOCK]
        packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
        if len(packed) >= len(block):          # incompressible: stored as is, high bit set
            out += [struct.pack("<I", len(block) | 0x80000000), block]
        else:
            out += [struct.pack("<I", len(packed)), packed]
    out.append(b"\x00\x00\x00\x00")
    return b"".join(out)


def _xerial_snappy(data: bytes) -> bytes:
    out = [_SNAPPY_HEADER]
    for i in range(0, len(data), _SNAPPY_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[i:i + _SNAPPY_BLOCK]))
        out += [struct.pack(">i", len(block)), block]
    return b"".join(out)


def compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed with Kafka's compression type ``codec`` (NONE: as is)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        return _xerial_snappy(data)
    if codec == LZ4:
        return _lz4_frame(data)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"no compression type {codec}")


def preferred(accepted: tuple[int, ...]) -> int:
    """The first of the broker's accepted types (its order of preference) that we write;
    NONE when there is none."""
    return next((c for c in accepted if c in SUPPORTED), NONE)


__all__ = ["GZIP", "LZ4", "NONE", "SNAPPY", "SUPPORTED", "ZSTD", "compress", "preferred",
           "xxh32_short"]
