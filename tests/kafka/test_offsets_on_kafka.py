"""Offsets on real Apache Kafka: ListOffsets (earliest, latest, by timestamp), DeleteRecords and
``auto.offset.reset``, compaction gaps, committed leader epochs, and the versions pyconsumer
negotiates with a 4.2 broker (KIP-896 removed the old ones).

pyconsumer does not expose ListOffsets' max-timestamp spec (-3, KIP-734): offsets_for_times
refuses negative timestamps, so there is nothing of it to prove here.
"""
from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, OffsetAndMetadata, TopicPartition
from pyconsumer.errors import OffsetOutOfRangeError
from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey
from pyconsumer.consumer.offsets import OffsetAndTimestamp
from pyconsumer.testing import ExternalKafka, KafkaCluster, TestRecord, produce

T = 1_700_000_000_000
Seen = list[tuple[int, bytes | None, bytes | None]]


def consumer(kafka: KafkaCluster, **extra: Any) -> KafkaConsumer:
    settings: dict[str, Any] = {"auto_offset_reset": "earliest", "fetch_max_wait_ms": 100}
    settings.update(extra)
    return KafkaConsumer(**kafka.client_settings(**settings))


def read(c: KafkaConsumer, tp: TopicPartition, count: int, timeout: float = 30.0) -> Seen:
    """(offset, key, value) of the next ``count`` records of ``tp``; then nothing more."""
    out: Seen = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        assert time.monotonic() < deadline, f"read {out} of {count} records"
        for got_tp, recs in c.poll(200).items():
            assert got_tp == tp
            out += [(r.offset, r.key, r.value) for r in recs]
    assert c.poll(100) == {}
    return out


def next_poll(c: KafkaConsumer, tp: TopicPartition, timeout: float = 30.0) -> Seen:
    """(offset, key, value) of what the first non-empty poll() returns."""
    deadline = time.monotonic() + timeout
    while True:
        got = c.poll(200)
        if got:
            assert list(got) == [tp]
            return [(r.offset, r.key, r.value) for r in got[tp]]
        assert time.monotonic() < deadline, "no record came"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.2)


def test_list_offsets_earliest_latest_and_by_timestamp(kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """ListOffsets: log start 0, end 9; by time, the first offset whose timestamp is >= the
    asked one, inside a batch of out-of-order timestamps (not the batch base, not the max);
    a time after every record gives None."""
    topic = make_kafka_topic(1)
    tp = TopicPartition(topic, 0)
    first = [T + 10, T + 50, T + 20, T + 40, T + 30, T + 60]      # one batch, out of order
    assert produce(kafka.bootstrap_servers, topic, [TestRecord(b"k", b"v%d" % i, None, 0, ts)
                                                    for i, ts in enumerate(first)], linger_ms=100) == [
        (0, i) for i in range(6)]
    assert produce(kafka.bootstrap_servers, topic, [TestRecord(b"k", b"w%d" % i, None, 0, T + 100 + i)
                                                    for i in range(3)], linger_ms=100) == [(0, i) for i in range(6, 9)]
    with consumer(kafka) as c:
        assert c.beginning_offsets([tp]) == {tp: 0}
        assert c.end_offsets([tp]) == {tp: 9}
        asked = {0: (0, T + 10), T + 10: (0, T + 10), T + 11: (1, T + 50), T + 45: (1, T + 50),
                 T + 51: (5, T + 60), T + 60: (5, T + 60), T + 61: (6, T + 100), T + 102: (8, T + 102)}
        for ts, (offset, found_ts) in asked.items():
            assert c.offsets_for_times({tp: ts}) == {tp: OffsetAndTimestamp(offset, found_ts, 0)}, ts
        assert c.offsets_for_times({tp: T + 103}) == {tp: None}
        with pytest.raises(ValueError, match=re.escape(f"the timestamp for {tp} must be an int >= 0, got -3")):
            c.offsets_for_times({tp: -3})                   # max-timestamp (KIP-734) is not exposed


@pytest.fixture
def trimmed(kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> TopicPartition:
    """Ten records in two batches (0-4, 5-9), then DeleteRecords up to offset 3 (inside the first)."""
    topic = make_kafka_topic(1)
    for lo in (0, 5):
        produce(kafka.bootstrap_servers, topic, [TestRecord(b"k%d" % i, b"v%d" % i, None, 0, T + i)
                                                 for i in range(lo, lo + 5)], linger_ms=50)
    kafka.delete_records([(topic, 0, 3)])
    return TopicPartition(topic, 0)


def test_delete_records_then_reset_earliest_resumes_at_the_new_log_start(
        kafka: KafkaCluster, trimmed: TopicPartition) -> None:
    """After DeleteRecords the log starts at 3; a position below it is out of range, and
    earliest resumes exactly at 3 (mid-batch): no record lost, none before it returned."""
    tp = trimmed
    with consumer(kafka) as c:
        assert c.beginning_offsets([tp]) == {tp: 3}
        assert c.end_offsets([tp]) == {tp: 10}
        assert c.offsets_for_times({tp: 0}) == {tp: OffsetAndTimestamp(3, T + 3, 0)}   # not the deleted 0-2
        c.assign([tp])
        c.seek(tp, 1)
        assert read(c, tp, 7) == [(i, b"k%d" % i, b"v%d" % i) for i in range(3, 10)]
        assert c.position(tp) == 10


def test_delete_records_then_reset_latest_goes_to_the_end(kafka: KafkaCluster, trimmed: TopicPartition) -> None:
    """With latest, an out-of-range position jumps to the end: only records written after come."""
    tp = trimmed
    with consumer(kafka, auto_offset_reset="latest") as c:
        c.assign([tp])
        c.seek(tp, 1)
        deadline = time.monotonic() + 30
        while c.position(tp) != 10:
            assert time.monotonic() < deadline, f"position {c.position(tp)}"
            assert c.poll(100) == {}
        produce(kafka.bootstrap_servers, tp.topic, [TestRecord(b"new", b"n", None, 0)])
        assert read(c, tp, 1) == [(10, b"new", b"n")]


def test_delete_records_with_reset_none_raises_naming_partition_and_offset(
        kafka: KafkaCluster, trimmed: TopicPartition) -> None:
    """With none, the out-of-range position raises OffsetOutOfRangeError naming the partition
    and the offset; the position is left where it was."""
    tp = trimmed
    with consumer(kafka, auto_offset_reset="none") as c:
        c.assign([tp])
        c.seek(tp, 1)
        deadline = time.monotonic() + 30
        with pytest.raises(OffsetOutOfRangeError, match=re.escape(
                f"Fetch position 1 is out of range for partition {tp} (auto.offset.reset=none)")):
            while time.monotonic() < deadline:
                assert c.poll(100) == {}
        assert c.position(tp) == 1
        c.seek(tp, 3)
        assert read(c, tp, 7) == [(i, b"k%d" % i, b"v%d" % i) for i in range(3, 10)]


def test_compacted_topic_keeps_original_offsets_with_gaps(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """After the cleaner ran, exactly the surviving records come, at their original offsets;
    the first batch lost its tail (4, 5) to the cleaner, and positions step over the gaps."""
    topic = make_kafka_topic(1, config={"cleanup.policy": "compact", "segment.ms": "100",
                                        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0"})
    tp = TopicPartition(topic, 0)
    # segments roll by the records' timestamps (1 s apart > segment.ms): each batch its own segment
    a = [TestRecord(b"k%d" % i, b"a%d" % i, None, 0, T + i) for i in range(1, 7)]         # offsets 0-5
    b = [TestRecord(k, v, None, 0, T + 1000 + i) for i, (k, v) in
         enumerate([(b"k1", b"b1"), (b"k5", b"b5"), (b"k6", b"b6")])]                    # offsets 6-8
    r = [TestRecord(b"k9", b"r9", None, 0, T + 2000)]                                     # offset 9, active
    for batch in (a, b, r):
        produce(kafka.bootstrap_servers, topic, batch, linger_ms=100)
    survivors: Seen = [(1, b"k2", b"a2"), (2, b"k3", b"a3"), (3, b"k4", b"a4"),
                       (6, b"k1", b"b1"), (7, b"k5", b"b5"), (8, b"k6", b"b6"), (9, b"k9", b"r9")]

    def offsets_now() -> list[int]:
        with consumer(kafka) as c:
            c.assign([tp])
            got: list[int] = []
            deadline = time.monotonic() + 10
            while c.position(tp) < 10 and time.monotonic() < deadline:
                got += [rec.offset for rec in c.poll(100).get(tp, [])]
            return got

    wait_for(lambda: offsets_now() == [s[0] for s in survivors], "the cleaner compacts the first two segments")
    with consumer(kafka, max_poll_records=3) as c:
        c.assign([tp])
        assert next_poll(c, tp) == survivors[:3]
        assert c.position(tp) == 4                      # the last returned + 1, as Java's fetch collector
        assert next_poll(c, tp) == survivors[3:6]
        assert c.position(tp) == 9
        assert read(c, tp, 1) == survivors[6:]
        assert c.position(tp) == 10
    with consumer(kafka) as c:
        c.assign([tp])
        c.seek(tp, 4)                                   # inside the cleaned tail of the first batch
        assert read(c, tp, 4) == survivors[3:]
        assert c.position(tp) == 10
        assert c.beginning_offsets([tp]) == {tp: 0} and c.end_offsets([tp]) == {tp: 10}


def test_committed_offsets_carry_the_leader_epoch(kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """commit() of the consumed position sends the epoch of the last record read (0 on a fresh
    topic), and Kafka returns it from OffsetFetch; an
    explicit epoch is stored as given; a position from a reset has no epoch (as in Java, whose
    reset positions skip validation), so none is committed for it."""
    topic = make_kafka_topic(2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    produce(kafka.bootstrap_servers, topic, [TestRecord(b"k", b"v%d" % i, None, 0) for i in range(3)])
    group = f"g-{uuid.uuid4().hex[:8]}"
    with consumer(kafka, group_id=group, enable_auto_commit=False) as c:
        c.assign([tp0, tp1])
        got = read(c, tp0, 3)
        assert [o for o, _, _ in got] == [0, 1, 2]
        assert c.committed([tp0, tp1]) == {tp0: None, tp1: None}
        c.commit()
        # tp1 has a position (0, reset to earliest on an empty log) but no record read: no epoch known
        assert c.committed([tp0, tp1]) == {tp0: OffsetAndMetadata(3, "", 0), tp1: OffsetAndMetadata(0, "", None)}
        c.commit({tp1: OffsetAndMetadata(0, "meta", 7)})
        assert c.committed([tp1]) == {tp1: OffsetAndMetadata(0, "meta", 7)}   # stored without a check
    with consumer(kafka, group_id=group, enable_auto_commit=False) as c:
        c.assign([tp0])
        produce(kafka.bootstrap_servers, topic, [TestRecord(b"k", b"v3", None, 0)])
        assert read(c, tp0, 1) == [(3, b"k", b"v3")]    # resumes at the committed offset (epoch 0)


KIP_896_MINIMUM = {ApiKey.FETCH: 4, ApiKey.LIST_OFFSETS: 1, ApiKey.OFFSET_COMMIT: 2, ApiKey.OFFSET_FETCH: 1,
                   ApiKey.OFFSET_FOR_LEADER_EPOCH: 2, ApiKey.METADATA: 0}


def test_negotiated_versions_respect_kafka_4_minimums(kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """Against Kafka 4.2 pyconsumer uses, for each API a consumer needs, the highest version both
    sides speak: never below the broker's minimum (KIP-896), Fetch with topic ids (>= 13)."""
    topic = make_kafka_topic(1)
    tp = TopicPartition(topic, 0)
    leader = kafka.leaders(topic)[0]       # node 1 here; an external cluster's ids are its own
    brokers = {node: kafka.api_versions(node) for node in kafka.node_ids()}
    broker = brokers[leader]
    if isinstance(kafka, ExternalKafka) and broker[int(ApiKey.FETCH)][0] < KIP_896_MINIMUM[ApiKey.FETCH]:
        pytest.skip(f"the external Kafka at {kafka.bootstrap_servers} still speaks Fetch "
                    f"v{broker[int(ApiKey.FETCH)][0]}: the KIP-896 minimums are those of Kafka 4")
    for api, floor in KIP_896_MINIMUM.items():
        assert broker[int(api)][0] >= floor, api.name     # the broker really dropped the old versions
    produce(kafka.bootstrap_servers, topic, [TestRecord(b"k", b"v", None, 0)])
    with consumer(kafka, group_id=f"g-{uuid.uuid4().hex[:8]}", enable_auto_commit=False) as c:
        c.assign([tp])
        assert read(c, tp, 1) == [(0, b"k", b"v")]
        c.commit()
        assert c.committed([tp]) == {tp: OffsetAndMetadata(1, "", 0)}
        versions = c.negotiated_versions()
    assert leader in versions                          # the broker's own connection, by node id
    for node, used in versions.items():
        for api in KIP_896_MINIMUM:
            lo, hi = brokers.get(node, broker)[int(api)]   # a bootstrap connection has no node id
            want = min(hi, SUPPORTED_VERSIONS[api][1])
            assert lo <= used[api.name] == want, (node, api.name, used[api.name], (lo, hi))
    assert versions[leader][ApiKey.FETCH.name] >= 13
