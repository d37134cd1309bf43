"""Real Apache Kafka Fetch responses decoded by the compiled decoder and by the generic codec
(its reference): every answer the consumer reads is decoded both ways and must be the same
body, with aborted transactions (read_committed over committed, aborted and plain records),
empty answers and the version the broker negotiates (flexible, topic ids); and the consumer
hands out exactly the records written."""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition, protocol
from pyconsumer.protocol import ApiKey
from pyconsumer.records import FetchResponseBody
from pyconsumer.testing import KafkaCluster, TestRecord, produce, produce_transactions

from tests.unit.test_fetch_response_decoder import assert_indexes, generic, typed


def test_every_fetch_answer_decodes_as_the_codec_does(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    topic = make_kafka_topic(3)
    tps = [TopicPartition(topic, p) for p in range(3)]
    b = kafka.bootstrap_servers
    committed = [TestRecord(b"c%d" % i, b"v%d" % i, None, i % 3) for i in range(9)]
    aborted = [TestRecord(b"a%d" % i, b"x", [("h", b"1")], i % 2) for i in range(4)]
    produce_transactions(b, topic, [(committed, True), (aborted, False)],
                         transactional_id=f"tx-{uuid.uuid4().hex[:8]}")
    plain = [TestRecord(None, b"p%d" % i, None, 2) for i in range(3)]
    produce(b, topic, plain, compression="lz4")

    decode = protocol.decode_response
    seen: list[tuple[int, int, int]] = []    # (version, partitions answered, aborted listed)

    def both(api_key: int, version: int, payload: Any) -> tuple[int, dict[str, Any]]:
        out = decode(api_key, version, payload)
        if api_key == ApiKey.FETCH:
            reference = generic(version, bytes(payload))
            assert typed(out[1]) == typed(reference[1]) and out[0] == reference[0]
            assert isinstance(out[1], FetchResponseBody)
            assert_indexes(out[1])
            parts = [p for t in out[1]["responses"] for p in t["partitions"]]
            seen.append((version, len(parts),
                         sum(len(p["aborted_transactions"] or []) for p in parts)))
        return out

    monkeypatch.setattr(protocol, "decode_response", both)
    got: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {0: [], 1: [], 2: []}
    with KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest",
                                               fetch_max_wait_ms=100,
                                               isolation_level="read_committed")) as c:
        c.assign(tps)
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < len(committed) + len(plain):
            assert time.monotonic() < deadline, got
            for tp, rs in c.poll(200).items():
                got[tp.partition] += [(r.offset, r.key, r.value) for r in rs]
        assert c.poll(300) == {}                 # (empty answers decoded too)
    want: dict[int, list[tuple[bytes | None, bytes | None]]] = {0: [], 1: [], 2: []}
    for r in committed + plain:
        want[r.partition or 0].append((r.key, r.value))
    assert {p: [(k, v) for _, k, v in rows] for p, rows in got.items()} == want
    assert all(rows == sorted(rows) for rows in got.values())
    versions = {v for v, _, _ in seen}
    assert versions and min(versions) >= 12, seen          # flexible: tagged fields
    assert any(n for _, _, n in seen), seen                # the aborted transactions listed
