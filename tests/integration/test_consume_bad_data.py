"""Bad record data on the wire, served by a scripted broker: the consumer hands out every
good record before the corrupt batch, then raises CorruptRecordError naming the topic,
partition and offset, and keeps raising (its position stays at the bad batch) until the user
seeks past it. Nothing is skipped silently."""
from __future__ import annotations

from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import CorruptRecordError
from pyconsumer.protocol import ApiKey

from tests import recordsets as rs
from tests.peers import PeerConnection, ScriptedPeer

TP = TopicPartition("t", 0)


def batches(bad_codec: str) -> list[bytes]:
    recs = rs.sample_records(10)
    good0 = rs.aio_v2(recs, "none", 0)
    bad = bytearray(rs.aio_v2(rs.sample_records(10, seed=10), bad_codec, 10))
    bad[-3] ^= 0x40                              # one bit inside the CRC-covered bytes
    good2 = rs.aio_v2(rs.sample_records(10, seed=20), "none", 20)
    return [good0, bytes(bad), good2]


def broker(conn: PeerConnection, bad_codec: str = "lz4") -> None:
    conn.answer_api_versions()
    sets = batches(bad_codec)
    starts = [0, 10, 20]

    def fetch(version: int, body: dict[str, Any]) -> dict[str, Any]:
        assert version == 12, "no topic ids in this metadata: Fetch must stay at v12"
        offset = body["topics"][0]["partitions"][0]["fetch_offset"]
        data = b"".join(s for s, start in zip(sets, starts) if start + 10 > offset)
        return {"responses": [{"topic": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 30,
             "last_stable_offset": 30, "records": data}]}]}

    conn.serve({
        ApiKey.METADATA: lambda v, b: conn.one_partition_metadata(),
        ApiKey.LIST_OFFSETS: lambda v, b: {"topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "offset": 0, "timestamp": -1}]}]},
        ApiKey.FETCH: fetch,
    })


@pytest.mark.parametrize("arrow", [False, True])
def test_corrupt_batch_stops_the_partition_without_skipping(arrow: bool) -> None:
    with ScriptedPeer([broker]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest") as c:
            c.assign([TP])

            def poll() -> list[int]:
                if arrow:
                    return c.poll_arrow(timeout_ms=2000).column("offset").to_pylist()
                return [r.offset for r in c.poll(timeout_ms=2000).get(TP, [])]

            assert poll() == list(range(10))
            for _ in range(3):                  # again and again: never past the bad batch
                with pytest.raises(CorruptRecordError) as info:
                    poll()
                err = info.value
                assert (err.topic, err.partition, err.offset) == ("t", 0, 10)
                assert "CRC" in str(err)
                assert c.position(TP) == 10
            c.seek(TP, 20)                       # the user decides to skip it
            assert poll() == list(range(20, 30))
        assert not peer.errors, peer.errors


def test_without_crc_checks_a_flipped_bit_is_data_unless_a_codec_notices() -> None:
    def uncompressed(conn: PeerConnection) -> None:
        broker(conn, "none")

    with ScriptedPeer([uncompressed]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest",
                           check_crcs=False) as c:
            c.assign([TP])
            got = []
            for _ in range(20):
                got += c.poll(timeout_ms=1000).get(TP, [])
                if len(got) >= 30:
                    break
            assert [r.offset for r in got] == list(range(30))
            original = rs.sample_records(10, seed=10)[-1][3]
            assert original is not None and got[19].value != original   # Java: no CRC, no check
            assert len(got[19].value) == len(original)
    with ScriptedPeer([broker]) as peer:                                  # lz4: its frame breaks
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest",
                           check_crcs=False) as c:
            c.assign([TP])
            assert [r.offset for r in c.poll(timeout_ms=2000)[TP]] == list(range(10))
            with pytest.raises(CorruptRecordError, match="Cannot decompress lz4 batch") as info:
                c.poll(timeout_ms=2000)
            assert info.value.offset == 10 and c.position(TP) == 10
