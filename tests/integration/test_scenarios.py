"""Scenarios written once, run on every backend that can express them (tests/backends.py):
Apache Kafka always, Tansu, librdkafka's mock and the in-process fake where they can.

Each names what it needs with ``@pytest.mark.requires(...)``; the ``backend`` fixture is the
backend of one run. Records are checked exactly: offsets, keys, values, headers, timestamps,
order per partition."""
from __future__ import annotations

import time
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.structs import OffsetAndMetadata
from pyconsumer.testing import SAMPLE_TIMESTAMP_BASE_MS, TestRecord, produce_transactions
from tests.backends import Backend
from tests.integration.runners import (  # noqa: F401 - the fixture applies to this module
    Runner,
    close_what_a_failed_test_left,
    wait_for,
)

Row = tuple[int, int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def data(partitions: int, per_partition: int) -> list[TestRecord]:
    """Records with every shape a record can take: null keys, null values, no headers, several
    headers with a repeated key and a null header value, explicit timestamps."""
    out: list[TestRecord] = []
    for i in range(per_partition):
        for p in range(partitions):
            n = i * partitions + p
            key = None if n % 5 == 0 else b"k%d" % n
            value = None if n % 7 == 3 else b"value-%d-" % n + b"x" * (n % 13)
            headers: list[tuple[str, bytes | None]] = [] if n % 3 == 0 else [
                ("h", b"%d" % n), ("h", None), ("trace", b"t" * (n % 4))]
            out.append(TestRecord(key, value, headers, partition=p, timestamp_ms=SAMPLE_TIMESTAMP_BASE_MS + n))
    return out


def expected(records: list[TestRecord], written: list[tuple[int, int]]) -> dict[int, list[Row]]:
    rows: dict[int, list[Row]] = {}
    for r, (p, offset) in zip(records, written):
        assert r.partition == p
        rows.setdefault(p, []).append((offset, r.timestamp_ms or 0, 0, r.key, r.value, list(r.headers or [])))
    return rows


def consumer(backend: Backend, *topics: str, **settings: Any) -> KafkaConsumer:
    group = settings.get("group_protocol") == "classic"   # the backend's group timings
    return KafkaConsumer(*topics, bootstrap_servers=backend.bootstrap_servers, auto_offset_reset="earliest",
                         **{**(backend.consumer_settings if group else {}), **settings})


def read_rows(c: KafkaConsumer, count: int, timeout: float = 30.0) -> dict[int, list[Row]]:
    rows: dict[int, list[Row]] = {}
    deadline = time.monotonic() + timeout
    while sum(map(len, rows.values())) < count and time.monotonic() < deadline:
        for tp, recs in c.poll(timeout_ms=200).items():
            rows.setdefault(tp.partition, []).extend(
                (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers)) for r in recs)
    return rows


@pytest.mark.requires("codecs", "headers")
@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_exact_records_by_poll(backend: Backend, codec: str) -> None:
    """poll() returns every record exactly, in offset order per partition, across batches
    (max_poll_records smaller than a batch)."""
    topic = backend.create_topic(3)
    records = data(3, 40)
    want = expected(records, backend.produce(topic, records, compression=codec))
    with consumer(backend, max_poll_records=7) as c:
        c.assign([TopicPartition(topic, p) for p in range(3)])
        got = read_rows(c, len(records))
        assert got == want
        assert c.poll(timeout_ms=300) == {}          # nothing more, nothing twice
        assert {p: c.position(TopicPartition(topic, p)) for p in range(3)} == {
            p: want[p][-1][0] + 1 for p in range(3)}


@pytest.mark.requires("codecs", "headers")
def test_exact_records_by_poll_arrow(backend: Backend) -> None:
    """poll_arrow() gives the same rows in Spark's Kafka schema, headers included."""
    topic = backend.create_topic(2)
    records = data(2, 30)
    want = expected(records, backend.produce(topic, records, compression="lz4"))
    got: dict[int, list[Row]] = {}
    with consumer(backend) as c:
        c.assign([TopicPartition(topic, p) for p in range(2)])
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < len(records) and time.monotonic() < deadline:
            batch = c.poll_arrow(timeout_ms=200, include_headers=True)
            for row in batch.to_pylist():
                assert row["topic"] == topic
                got.setdefault(row["partition"], []).append((
                    row["offset"], int(row["timestamp"].timestamp() * 1000) if row["timestamp"] else 0,
                    row["timestampType"], row["key"], row["value"],
                    [(h["key"], h["value"]) for h in row["headers"] or []]))   # null: no headers, as Spark
    assert got == want


@pytest.mark.requires("list_offsets")
def test_seek_and_offset_bounds(backend: Backend) -> None:
    """beginning/end offsets are the log's, and a seek into the middle of a batch returns
    from exactly that offset."""
    topic = backend.create_topic(2)
    records = [TestRecord(b"k", b"v%d" % i, partition=0, timestamp_ms=SAMPLE_TIMESTAMP_BASE_MS + i)
               for i in range(25)]
    written = backend.produce(topic, records, compression="gzip")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with consumer(backend) as c:
        assert c.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
        assert c.end_offsets([tp0, tp1]) == {tp0: 25, tp1: 0}
        c.assign([tp0])
        c.seek(tp0, 17)
        got = read_rows(c, 8)[0]
    assert [(r[0], r[4]) for r in got] == [(o, b"v%d" % o) for _, o in written[17:]]


@pytest.mark.requires("commit")
def test_commit_then_a_new_consumer_resumes_there(backend: Backend) -> None:
    """A committed position (with metadata) is where the next consumer of the group starts."""
    topic = backend.create_topic(1)
    records = [TestRecord(None, b"v%d" % i, partition=0) for i in range(10)]
    backend.produce(topic, records)
    tp = TopicPartition(topic, 0)
    group = f"g-{topic}"
    with consumer(backend, group_id=group, enable_auto_commit=False) as c:
        c.assign([tp])
        got = read_rows(c, 10)[0]
        assert [r[0] for r in got] == list(range(10))
        c.commit({tp: OffsetAndMetadata(6, "half")})
        committed = c.committed([tp])[tp]
        assert committed is not None and committed.offset == 6
        if backend.can("commit_metadata"):
            assert committed.metadata == "half"
    with consumer(backend, group_id=group, enable_auto_commit=False) as c:
        c.assign([tp])
        assert [r[4] for r in read_rows(c, 4)[0]] == [b"v6", b"v7", b"v8", b"v9"]


@pytest.mark.requires("groups_classic", "commit")
def test_classic_group_splits_partitions_and_reads_each_record_once(backend: Backend) -> None:
    """Two members of a classic group with the range assignor: exact halves of four
    partitions, and together every record once."""
    topic = backend.create_topic(4)
    records = [TestRecord(None, b"%d" % i, partition=i % 4) for i in range(80)]
    backend.produce(topic, records)
    group = f"g-{topic}"
    settings: dict[str, Any] = {"group_id": group, "group_protocol": "classic",
                                "partition_assignment_strategy": "range"}
    a = Runner(consumer(backend, topic, **settings), commit=True)
    wait_for(lambda: len(a.assignment) == 4, timeout=60)
    b = Runner(consumer(backend, topic, **settings), commit=True)
    wait_for(lambda: len(a.assignment) == 2 and len(b.assignment) == 2, timeout=60)
    wait_for(lambda: len(set(a.records) | set(b.records)) == 80, timeout=60)
    # both stop polling before either leaves: a member still polling after the other left
    # would rejoin and take all four partitions
    for runner in (a, b):
        runner.stop()
    for runner in (a, b):
        runner.consumer.close()
    ids = sorted([sorted(tp.partition for tp in a.assignment), sorted(tp.partition for tp in b.assignment)])
    assert ids == [[0, 1], [2, 3]]             # range: consecutive halves
    seen = [(tp.partition, o) for tp, o in a.records + b.records]
    # a partition read by a before the rebalance may be read again by b from the last commit,
    # never skipped: every record at least once, and the union is exact
    assert set(seen) == {(i % 4, i // 4) for i in range(80)}


@pytest.mark.requires("groups_consumer")
def test_consumer_protocol_group_shares_partitions(backend: Backend) -> None:
    """Two KIP-848 members split six partitions between them exactly, no partition twice."""
    topic = backend.create_topic(6)
    group = f"g-{topic}"
    settings: dict[str, Any] = {"group_id": group, "group_protocol": "consumer"}
    a = Runner(consumer(backend, topic, **settings))
    b = Runner(consumer(backend, topic, **settings))
    wait_for(lambda: len(a.assignment) == 3 and len(b.assignment) == 3, timeout=60)
    assert a.assignment.isdisjoint(b.assignment)
    assert {tp.partition for tp in a.assignment | b.assignment} == set(range(6))
    for runner in (a, b):
        runner.stop()
        runner.consumer.close()


@pytest.mark.requires("transactions")
def test_read_committed_skips_aborted_transactions(backend: Backend) -> None:
    """With read_committed, records of aborted transactions never surface and the position
    steps over the control markers; read_uncommitted sees every data record."""
    topic = backend.create_topic(1)
    txns = [([TestRecord(None, b"c0", partition=0), TestRecord(None, b"c1", partition=0)], True),
            ([TestRecord(None, b"a0", partition=0), TestRecord(None, b"a1", partition=0)], False),
            ([TestRecord(None, b"c2", partition=0)], True)]
    assert produce_transactions(backend.bootstrap_servers, topic, txns) == [
        [(0, 0), (0, 1)], [(0, 3), (0, 4)], [(0, 6)]]
    tp = TopicPartition(topic, 0)
    with consumer(backend, isolation_level="read_committed") as c:
        c.assign([tp])
        assert [(r[0], r[4]) for r in read_rows(c, 3)[0]] == [(0, b"c0"), (1, b"c1"), (6, b"c2")]
        assert c.poll(timeout_ms=300) == {}
        assert c.position(tp) == 8                 # after c2's commit marker
    with consumer(backend, isolation_level="read_uncommitted") as c:
        c.assign([tp])
        assert [(r[0], r[4]) for r in read_rows(c, 5)[0]] == [
            (0, b"c0"), (1, b"c1"), (3, b"a0"), (4, b"a1"), (6, b"c2")]


@pytest.mark.requires("timestamps")
def test_offsets_for_times_is_exact_inside_a_batch(backend: Backend) -> None:
    """Timestamps out of order inside one batch: the first offset whose timestamp is at least
    the one asked, and None past the last."""
    topic = backend.create_topic(1)
    stamps = [10, 30, 20, 50, 40]
    records = [TestRecord(None, b"%d" % t, partition=0, timestamp_ms=SAMPLE_TIMESTAMP_BASE_MS + t) for t in stamps]
    backend.produce(topic, records)
    tp = TopicPartition(topic, 0)
    with consumer(backend) as c:
        found = {}
        for target in (5, 25, 35, 45):
            got = c.offsets_for_times({tp: SAMPLE_TIMESTAMP_BASE_MS + target})[tp]
            assert got is not None
            found[target] = (got.offset, got.timestamp - SAMPLE_TIMESTAMP_BASE_MS)
        assert found == {5: (0, 10), 25: (1, 30), 35: (3, 50), 45: (3, 50)}
        assert c.offsets_for_times({tp: SAMPLE_TIMESTAMP_BASE_MS + 51})[tp] is None
