"""Position validation after a seek with a leader epoch (KIP-320), against a scripted broker:
OffsetForLeaderEpoch says where the epoch of the last consumed record ends on the leader; a
position past that end means the log was truncated under the consumer."""
from __future__ import annotations

from typing import Any

import pytest

from pyconsumer import KafkaConsumer, OffsetAndMetadata, TopicPartition
from pyconsumer.errors import LogTruncationError
from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, encode_response

from tests import recordsets as rs
from tests.peers import PeerConnection, ScriptedPeer, advertised_api_keys

TP = TopicPartition("t", 0)
RECORDS = b"".join(rs.aio_v2(rs.sample_records(10, seed=s), "none", s) for s in (0, 10, 20))


def make_broker(end_offset: int, epoch_versions: tuple[int, int] = (0, 4),
                seen: list[dict[str, Any]] | None = None) -> Any:
    def broker(conn: PeerConnection) -> None:
        request = conn.read_request()
        assert request is not None and request[0] == ApiKey.API_VERSIONS
        versions = dict(SUPPORTED_VERSIONS)
        versions[ApiKey.OFFSET_FOR_LEADER_EPOCH] = epoch_versions
        conn.send(encode_response(ApiKey.API_VERSIONS, request[1], request[2], {
            "error_code": 0, "api_keys": advertised_api_keys(versions)}))
        def epoch_end(version: int, body: dict[str, Any]) -> dict[str, Any]:
            p = body["topics"][0]["partitions"][0]
            if seen is not None:
                seen.append({"version": version, **p})
            return {"topics": [{"topic": "t", "partitions": [
                {"error_code": 0, "partition": 0, "leader_epoch": p["leader_epoch"],
                 "end_offset": end_offset}]}]}

        def fetch(version: int, body: dict[str, Any]) -> dict[str, Any]:
            offset = body["topics"][0]["partitions"][0]["fetch_offset"]
            return {"responses": [{"topic": "t", "partitions": [
                {"partition_index": 0, "error_code": 0, "high_watermark": 30,
                 "records": RECORDS if offset < 30 else b""}]}]}

        conn.serve({
            ApiKey.METADATA: lambda v, b: conn.one_partition_metadata(leader_epoch=5),
            ApiKey.OFFSET_FOR_LEADER_EPOCH: epoch_end,
            ApiKey.FETCH: fetch,
        })
    return broker


def offsets(c: KafkaConsumer) -> list[int]:
    got: list[int] = []
    for _ in range(20):
        got += [r.offset for r in c.poll(timeout_ms=300).get(TP, [])]
        if got and got[-1] == 29:
            break
    return got


def test_position_within_the_epoch_is_kept() -> None:
    seen: list[dict[str, Any]] = []
    with ScriptedPeer([make_broker(25, seen=seen)]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest") as c:
            c.assign([TP])
            c.topics()                                  # metadata: leader epoch 5
            c.seek(TP, OffsetAndMetadata(20, "", 3))
            assert offsets(c) == list(range(20, 30))
        assert seen == [{"version": 4, "partition": 0, "current_leader_epoch": 5, "leader_epoch": 3}]
        assert not peer.errors, peer.errors


def test_truncation_resets_to_the_divergence_point() -> None:
    with ScriptedPeer([make_broker(15)]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest") as c:
            c.assign([TP])
            c.topics()
            c.seek(TP, OffsetAndMetadata(20, "", 3))
            assert offsets(c) == list(range(15, 30))


def test_truncation_without_reset_policy_raises() -> None:
    with ScriptedPeer([make_broker(15)]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="none") as c:
            c.assign([TP])
            c.topics()
            c.seek(TP, OffsetAndMetadata(20, "", 3))
            with pytest.raises(LogTruncationError) as info:
                for _ in range(20):
                    c.poll(timeout_ms=200)
            assert info.value.divergent_offsets[TP].offset == 15
            assert "Truncated partition detected: t-0 was fetched up to 20" in str(info.value)


def test_brokers_without_v3_are_trusted() -> None:
    seen: list[dict[str, Any]] = []
    with ScriptedPeer([make_broker(0, epoch_versions=(0, 2), seen=seen)]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest") as c:
            c.assign([TP])
            c.topics()
            c.seek(TP, OffsetAndMetadata(20, "", 3))
            assert offsets(c) == list(range(20, 30))
        assert seen == []
