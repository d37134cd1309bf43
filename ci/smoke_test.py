"""Smoke test of an installed pyconsumer: the compiled record decoder is there and decodes.

cibuildwheel runs it on every wheel it builds (``test-command`` in pyproject.toml) and
tests/packaging runs it in fresh venvs holding the sdist's and the repaired wheel's installs.
Run it from outside the source tree: a checkout's ``pyconsumer/`` would shadow the install.

It writes two magic-2 record batches (one uncompressed, one zstd, offsets 100-102 and
103-105) with a small encoder of its own (tests/packaging checks the encoder against
aiokafka's and kafka-python's), decodes them with ``decode_records`` and ``decode_arrow``,
compares every field with what was written, and prints one JSON line: the version, the
extension module's name and file, and the decoded records. Exit status 1 on any mismatch.
"""
from __future__ import annotations

import importlib.machinery
import json
import struct
import sys

import cramjam
from crc32c import crc32c

TOPIC = "smoke"
PARTITION = 3
BASE_TIMESTAMP = 1_700_000_000_000
# (offset delta, timestamp, key, value, headers): nulls, an empty value, headers with a null
RECORDS: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
    (0, BASE_TIMESTAMP, b"k0", b"hello", []),
    (1, BASE_TIMESTAMP + 1, None, b"", [("h", b"1"), ("n", None)]),
    (2, BASE_TIMESTAMP + 5, b"k2", None, []),
]
CODEC_NONE = 0
CODEC_ZSTD = 4


def varint(n: int) -> bytes:
    """Kafka's zig-zag varint (the same encoding for varint and varlong)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def sized(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def record(delta: int, timestamp: int, key: bytes | None, value: bytes | None,
           headers: list[tuple[str, bytes | None]]) -> bytes:
    body = (b"\x00" + varint(timestamp - BASE_TIMESTAMP) + varint(delta) + sized(key)
            + sized(value) + varint(len(headers))
            + b"".join(sized(k.encode()) + sized(v) for k, v in headers))
    return varint(len(body)) + body


def batch(base_offset: int, codec: int) -> bytes:
    """One magic-2 batch of RECORDS: no producer id, leader epoch -1, CreateTime."""
    records = b"".join(record(*r) for r in RECORDS)
    if codec == CODEC_ZSTD:
        records = bytes(cramjam.zstd.compress(records))
    after_crc = struct.pack(">hiqqqhii", codec, len(RECORDS) - 1, BASE_TIMESTAMP,
                            RECORDS[-1][1], -1, -1, -1, len(RECORDS)) + records
    crc = crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)            # from the leader epoch to the end
    return struct.pack(">qiibI", base_offset, length, -1, 2, crc) + after_crc


def expected() -> list[list[object]]:
    """[offset, timestamp, key, value, headers] of both batches, bytes as latin-1 text."""
    def text(b: bytes | None) -> str | None:
        return None if b is None else b.decode("latin-1")

    return [[base + d, ts, text(k), text(v), [[hk, text(hv)] for hk, hv in h]]
            for base in (100, 103) for d, ts, k, v, h in RECORDS]


def main() -> int:
    import pyconsumer
    from pyconsumer.records import decode_arrow, decode_records

    # the module the decoder comes from must be a compiled extension, not Python
    ext_name = decode_records.__module__
    ext_file = getattr(sys.modules[ext_name], "__file__", None) or ""
    if not ext_file.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        print(f"smoke: {ext_name} is not a compiled extension: {ext_file!r}", file=sys.stderr)
        return 1

    data = batch(100, CODEC_NONE) + batch(103, CODEC_ZSTD)

    def text(b: bytes | None) -> str | None:
        return None if b is None else b.decode("latin-1")

    got = [[r.offset, r.timestamp, text(r.key), text(r.value),
            [[hk, text(hv)] for hk, hv in r.headers]]
           for r in decode_records(data, TOPIC, PARTITION)]
    if got != expected():
        print(f"smoke: decode_records gave {got}, wrote {expected()}", file=sys.stderr)
        return 1
    bad = [r for r in decode_records(data, TOPIC, PARTITION)
           if (r.topic, r.partition, r.timestamp_type) != (TOPIC, PARTITION, 0)]
    if bad:
        print(f"smoke: wrong topic/partition/timestamp type in {bad}", file=sys.stderr)
        return 1

    table = decode_arrow(data, TOPIC, PARTITION, include_headers=True)
    micros = table.column("timestamp").cast("int64").to_pylist()    # timestamp[us, UTC]
    rows = table.to_pylist()
    # Spark's Kafka schema: a record without headers has null headers, not an empty list
    arrow = [[row["offset"], us // 1000, text(row["key"]), text(row["value"]),
              None if row["headers"] is None
              else [[h["key"], text(h["value"])] for h in row["headers"]]]
             for row, us in zip(rows, micros)]
    if arrow != [r[:4] + [r[4] or None] for r in expected()] or {(row["topic"], row["partition"]) for row in rows} != {
            (TOPIC, PARTITION)}:
        print(f"smoke: decode_arrow gave {rows}, wrote {expected()}", file=sys.stderr)
        return 1

    print(json.dumps({"version": pyconsumer.__version__, "extension": ext_name,
                      "extension_file": ext_file, "records": got}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
