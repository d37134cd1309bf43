"""Fetch-path faults (issue 9, items 4, 6, 7).

* Fairness, on Tansu: with a small fetch.max.bytes the broker fills each response in request
  order, so a partition that got nothing must keep its place in the fetch order and only the
  ones that got bytes move to the end; every partition gets records from the first polls on.
* An incomplete first batch at the position, from a scripted broker that behaves like a
  pre-KIP-74 one (it cuts a partition's data at partition_max_bytes, mid-batch): one re-fetch
  asking for the whole batch; a log cut for good or an impossible batch length ends in a
  FetchProgressError naming topic, partition and offset after at most two fetches, never in
  a silent re-fetch loop.
* A corrupt batch after good records: the good records, then CorruptRecordError at every poll
  with the position at the bad batch, and no new Fetch for the partition meanwhile.
"""
from __future__ import annotations

import itertools
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import CorruptRecordError, FetchProgressError
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import TansuBroker, produce, sample_records

from tests import recordsets as rs
from tests.peers import PeerConnection, ScriptedPeer

TP = TopicPartition("t", 0)


# ----------------------------------------------------------------------------- fairness (4)

def test_small_fetch_max_bytes_interleaves_partitions_tansu(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(3)
    records = sample_records(6000, partitions=3, seed=9)
    # many small batches (about 3 KB), so that one response holds a few of them only
    delivered = produce(tansu.bootstrap, topic, records, linger_ms=5, batch_num_messages=20)
    expected: dict[TopicPartition, list[tuple[int, bytes | None, bytes | None]]] = {}
    for rec, (partition, offset) in zip(records, delivered):
        expected.setdefault(TopicPartition(topic, partition), []).append(
            (offset, rec.key, rec.value))
    for rows in expected.values():
        rows.sort()
    assert sorted(len(rows) for rows in expected.values()) == [2000, 2000, 2000]

    got: dict[TopicPartition, list[tuple[int, bytes | None, bytes | None]]] = {}
    turns: list[set[int]] = []                    # the partitions of each non-empty poll
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest",
                       fetch_max_bytes=10_000, max_partition_fetch_bytes=10_000) as c:
        c.assign(sorted(expected))
        deadline = time.monotonic() + 60
        while sum(len(v) for v in got.values()) < 6000 and time.monotonic() < deadline:
            out = c.poll(timeout_ms=1000)
            if not out:
                continue
            turns.append({tp.partition for tp in out})
            for tp, recs in out.items():
                got.setdefault(tp, []).extend((r.offset, r.key, r.value) for r in recs)
        assert c.poll(timeout_ms=200) == {}
    assert got == expected                         # all of them, once, in order per partition
    # each response held a few batches (about 80 records) of one partition: 75 polls or so in
    # all. The partitions take turns from the first poll on (before the fix, the first
    # partition was read to its end, about 25 polls, before the next one got anything). A
    # partition gets at most two responses in a row, its own and the one prefetched from its
    # end: a fetch for the partitions with nothing in hand lists them first, but Tansu fills
    # a response in its own order, not the request's. So any five polls cover all three.
    assert len(turns) > 30, turns
    for i in range(30):
        assert set().union(*turns[i:i + 5]) == {0, 1, 2}, turns[:35]
    assert max(len(list(g)) for _, g in itertools.groupby(tuple(t) for t in turns)) <= 2, \
        turns[:35]


# ------------------------------------------------------------ a scripted pre-KIP-74 broker

class Log:
    """One partition's log as the scripted broker serves it: the bytes from the batch holding
    the fetch offset on, cut at the request's partition_max_bytes (as brokers before KIP-74
    did, mid-batch), and every Fetch it was asked (fetch_offset, partition_max_bytes,
    max_bytes)."""

    def __init__(self, batches: list[tuple[int, bytes]], high_watermark: int) -> None:
        self.batches = batches                 # (base offset, bytes), in offset order
        self.high_watermark = high_watermark
        self.fetches: list[tuple[int, int, int]] = []

    def answer(self, version: int, body: dict[str, Any]) -> dict[str, Any]:
        assert version == 12, "no topic ids in this metadata: Fetch must stay at v12"
        p = body["topics"][0]["partitions"][0]
        offset, limit = p["fetch_offset"], p["partition_max_bytes"]
        self.fetches.append((offset, limit, body["max_bytes"]))
        data = b""
        for i, (_base, raw) in enumerate(self.batches):
            ends = self.batches[i + 1][0] if i + 1 < len(self.batches) else self.high_watermark
            if ends > offset:
                data += raw
        return {"responses": [{"topic": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": self.high_watermark,
             "last_stable_offset": self.high_watermark, "records": data[:limit]}]}]}


def serve(log: Log) -> Callable[[PeerConnection], None]:
    def script(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        conn.serve({
            ApiKey.METADATA: lambda v, b: conn.one_partition_metadata(),
            ApiKey.LIST_OFFSETS: lambda v, b: {"topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "error_code": 0, "offset": 0, "timestamp": -1}]}]},
            ApiKey.FETCH: log.answer,
        })
    return script


def big_batch(base: int, seed: int) -> bytes:
    """Ten records of about 200 bytes each: a batch of about 2 KB."""
    recs = [(i, 1_600_000_000_000 + i, b"k%d" % (base + i), bytes([seed + i]) * 200, [])
            for i in range(10)]
    return rs.aio_v2(recs, "none", base)


def expected_rows(*batches: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r["offset"], r["key"], r["value"]) for r in rs.reference(b"".join(batches))]


def poll_rows(c: KafkaConsumer, arrow: bool, timeout_ms: int = 2000
              ) -> list[tuple[int, bytes | None, bytes | None]]:
    if arrow:
        batch = c.poll_arrow(timeout_ms=timeout_ms)
        return list(zip(batch.column("offset").to_pylist(), batch.column("key").to_pylist(),
                        batch.column("value").to_pylist()))
    return [(r.offset, r.key, r.value) for r in c.poll(timeout_ms=timeout_ms).get(TP, [])]


# ------------------------------------------------------------------ incomplete batches (6)

@pytest.mark.parametrize("arrow", [False, True])
def test_incomplete_first_batch_is_fetched_again_whole(arrow: bool) -> None:
    b0, b1 = big_batch(0, 1), big_batch(10, 50)
    log = Log([(0, b0), (10, b1)], high_watermark=20)
    with ScriptedPeer([serve(log)]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest",
                           max_partition_fetch_bytes=500, fetch_max_bytes=100_000) as c:
            c.assign([TP])
            got: list[tuple[int, bytes | None, bytes | None]] = []
            for _ in range(10):
                got += poll_rows(c, arrow)
                if len(got) >= 20:
                    break
            assert got == expected_rows(b0, b1)
            assert c.position(TP) == 20
        assert not peer.errors, peer.errors
    # each batch: once cut at 500 bytes, once asked whole (at the front of a request whose
    # max_bytes is still fetch.max.bytes); then the consumer is caught up at 20
    assert log.fetches[:4] == [(0, 500, 100_000), (0, len(b0), 100_000),
                               (10, 500, 100_000), (10, len(b1), 100_000)]
    assert all(f == (20, 500, 100_000) for f in log.fetches[4:])


@pytest.mark.parametrize("max_partition_fetch_bytes", [500, 1_048_576])
def test_log_cut_mid_batch_for_good_fails_after_two_fetches(
        max_partition_fetch_bytes: int) -> None:
    b0, b1 = big_batch(0, 1), big_batch(10, 50)
    cut = len(b1) - 20
    log = Log([(0, b0), (10, b1[:cut])], high_watermark=20)    # the log ends mid-batch
    with ScriptedPeer([serve(log)]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest",
                           max_partition_fetch_bytes=max_partition_fetch_bytes) as c:
            c.assign([TP])
            got: list[tuple[int, bytes | None, bytes | None]] = []
            for _ in range(5):
                got += poll_rows(c, arrow=False)
                if len(got) >= 10:
                    break
            assert got == expected_rows(b0)
            for _ in range(3):                    # it stays: no re-fetch loop, no skipping
                with pytest.raises(FetchProgressError) as info:
                    c.poll(timeout_ms=2000)
                message = str(info.value)
                assert "topic=t, partition=0, offset=10" in message
                assert f"declares {len(b1)} bytes but only {cut} arrived" in message
                assert c.position(TP) == 10
            at_10 = [f for f in log.fetches if f[0] == 10]
        assert not peer.errors, peer.errors
    assert len(at_10) == 2, log.fetches
    assert at_10[1][1] == max(len(b1), max_partition_fetch_bytes)


def test_batch_length_0x7fffffff_fails_at_once() -> None:
    b0 = big_batch(0, 1)
    bad = bytearray(big_batch(10, 50))
    struct.pack_into(">i", bad, 8, 0x7FFFFFFF)
    log = Log([(0, b0), (10, bytes(bad))], high_watermark=20)
    with ScriptedPeer([serve(log)]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest") as c:
            c.assign([TP])
            assert poll_rows(c, arrow=False) == expected_rows(b0)
            for _ in range(2):
                with pytest.raises(FetchProgressError) as info:
                    c.poll(timeout_ms=2000)
                message = str(info.value)
                assert "topic=t, partition=0, offset=10" in message
                assert f"declares {12 + 0x7FFFFFFF} bytes" in message
                assert (info.value.topic, info.value.partition, info.value.offset) == ("t", 0, 10)
                assert "max.partition.fetch.bytes=1048576, fetch.max.bytes=52428800" in message
                assert c.position(TP) == 10
        assert not peer.errors, peer.errors
    assert [f[0] for f in log.fetches] == [0, 10], log.fetches


# ------------------------------------------------------------- corrupt after good records (7)

@pytest.mark.parametrize("arrow", [False, True])
def test_corrupt_last_batch_stays_with_the_buffered_data(arrow: bool) -> None:
    good = rs.aio_v2(rs.sample_records(10), "none", 0)
    bad = bytearray(rs.aio_v2(rs.sample_records(10, seed=10), "none", 10))
    bad[-3] ^= 0x40                                # inside the CRC-covered bytes
    log = Log([(0, good + bytes(bad))], high_watermark=20)
    with ScriptedPeer([serve(log)]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, auto_offset_reset="earliest") as c:
            c.assign([TP])
            assert poll_rows(c, arrow) == expected_rows(good)
            # the prefetch sent when the data arrived, from where its batch headers say it
            # ends (the bad batch's header is intact: only decoding finds the CRC wrong)
            deadline = time.monotonic() + 5
            while len(log.fetches) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            for _ in range(3):
                with pytest.raises(CorruptRecordError) as info:
                    poll_rows(c, arrow)
                err = info.value
                assert (err.topic, err.partition, err.offset) == ("t", 0, 10)
                assert "CRC32C mismatch" in str(err)
                assert c.position(TP) == 10
            # the error comes from the data already here: no re-fetch of it, nothing after
            # that one prefetch
            assert [f[0] for f in log.fetches] == [0, 20]
            c.seek(TP, 20)                         # the user's call: skip the bad batch
            assert poll_rows(c, arrow, timeout_ms=200) == []
            assert c.position(TP) == 20
        assert not peer.errors, peer.errors
