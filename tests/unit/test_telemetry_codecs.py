"""The telemetry payload codecs read back by kafka-python's decoders (Kafka's own formats:
xerial-framed snappy, LZ4 frames of independent blocks), and the frame checksum against the
xxhash package."""
from __future__ import annotations

import os
import struct

import pytest

from pyconsumer.consumer.telemetry import codecs

kafka_codec = pytest.importorskip("kafka.codec")
xxhash = pytest.importorskip("xxhash")

DECODE = {codecs.GZIP: kafka_codec.gzip_decode, codecs.SNAPPY: kafka_codec.snappy_decode,
          codecs.LZ4: kafka_codec.lz4_decode, codecs.ZSTD: kafka_codec.zstd_decode}


@pytest.mark.parametrize("codec", sorted(DECODE))
@pytest.mark.parametrize("size", [1, 1000, 200_000])
def test_each_codec_round_trips(codec: int, size: int) -> None:
    data = (os.urandom(size // 2 + 1) + b"metric" * (size // 12 + 1))[:size]
    assert len(data) == size
    assert DECODE[codec](codecs.compress(codec, data)) == data
    assert codecs.compress(codecs.NONE, data) == data


def test_empty_input() -> None:
    # xerial's stream of nothing is its header alone (kafka-python's reader takes a stream
    # only when longer than that; Kafka's SnappyInputStream reads it as empty)
    assert codecs.compress(codecs.SNAPPY, b"") == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for codec in (codecs.GZIP, codecs.LZ4, codecs.ZSTD):
        assert DECODE[codec](codecs.compress(codec, b"")) == b""


def test_lz4_frames_have_independent_blocks_as_kafka_requires() -> None:
    frame = codecs.compress(codecs.LZ4, os.urandom(70_000) + b"x" * 70_000)
    assert frame[:4] == struct.pack("<I", 0x184D2204)
    flg = frame[4]
    assert flg >> 6 == 1 and flg & 0x20           # version 1, block independence
    assert frame[6] == (xxhash.xxh32_intdigest(frame[4:6]) >> 8) & 0xFF


def test_xxh32_of_short_inputs_matches_xxhash() -> None:
    for n in range(16):
        data = os.urandom(n)
        assert codecs.xxh32_short(data) == xxhash.xxh32_intdigest(data)
    with pytest.raises(ValueError):
        codecs.xxh32_short(b"x" * 16)


def test_the_preferred_codec_is_the_first_accepted_one_we_write() -> None:
    assert codecs.preferred((4, 3, 1, 2)) == codecs.ZSTD
    assert codecs.preferred((7, 2, 1)) == codecs.SNAPPY
    assert codecs.preferred(()) == codecs.NONE
    assert codecs.preferred((0,)) == codecs.NONE
    with pytest.raises(ValueError):
        codecs.compress(9, b"x")
