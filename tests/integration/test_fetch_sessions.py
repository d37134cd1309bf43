"""Fetch sessions (KIP-227) against the real test brokers.

Neither test broker keeps sessions: Tansu 0.6 answers every fetch with session id 0 (and
ignores the epoch), librdkafka's mock echoes the session id it was sent (0). So the consumer
asks for a session on every fetch (id 0, epoch 0, as Java) and, answered 0, goes on with full
fetches listing every partition: never an incremental fetch the broker would misread as a
full one (a broker reading one as full would answer only the partitions it lists). The
incremental path itself is tested on the fake cluster (tests/unit/test_fetch_session_fake.py,
which also compares request sizes with and without a session).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition, protocol
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import MockCluster, TansuBroker, produce
from pyconsumer.testing._produce import TestRecord

Row = tuple[int, bytes | None, bytes | None]


def record_fetches(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The body of every Fetch request encoded from now on, as on the wire (decoded from the
    frame: the consumer's body may hold entries already encoded)."""
    sent: list[dict[str, Any]] = []
    encode, decode = protocol.encode_request, protocol.decode_request

    def spy(api_key: int, version: int, correlation_id: int, client_id: str | None,
            body: dict[str, Any]) -> bytes:
        frame = encode(api_key, version, correlation_id, client_id, body)
        if api_key == ApiKey.FETCH:
            sent.append(decode(frame[4:])[4])
        return frame

    monkeypatch.setattr(protocol, "encode_request", spy)
    return sent


def consume_sessionless(bootstrap: str, topic: str, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [TestRecord(b"k%d" % i, b"v%d" % i, partition=i % 3) for i in range(30)]
    delivered = produce(bootstrap, topic, records)
    expected: dict[TopicPartition, list[Row]] = {}
    for rec, (p, offset) in zip(records, delivered):
        expected.setdefault(TopicPartition(topic, p), []).append((offset, rec.key, rec.value))
    sent = record_fetches(monkeypatch)
    got: dict[TopicPartition, list[Row]] = {}

    def until(n: int) -> None:
        deadline = time.monotonic() + 20
        while sum(map(len, got.values())) < n:
            assert time.monotonic() < deadline, got
            for tp, recs in c.poll(200).items():
                got.setdefault(tp, []).extend((r.offset, r.key, r.value) for r in recs)

    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                       fetch_max_wait_ms=100) as c:
        c.assign(sorted(expected))
        until(30)
        more = [TestRecord(b"m%d" % i, b"w%d" % i, partition=1) for i in range(5)]
        for rec, (_, offset) in zip(more, produce(bootstrap, topic, more)):
            expected[TopicPartition(topic, 1)].append((offset, rec.key, rec.value))
        until(35)
        assert c.poll(300) == {}
    assert got == expected
    assert len(sent) >= 3
    for body in sent:
        assert (body["session_id"], body["session_epoch"]) == (0, 0)
        assert body["forgotten_topics_data"] == []
        assert sorted(p["partition"] for t in body["topics"] for p in t["partitions"]) == \
            [0, 1, 2]


def test_tansu_answers_no_session_and_gets_full_fetches(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    consume_sessionless(tansu.bootstrap, make_tansu_topic(3), monkeypatch)


def test_mock_answers_no_session_and_gets_full_fetches(
        mock_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    mock_cluster.create_topic("fs", 3)
    for p in range(3):                 # one leader: every fetch lists all three
        mock_cluster.set_partition_leader("fs", p, 1)
    consume_sessionless(mock_cluster.bootstrap, "fs", monkeypatch)
