"""KafkaConsumer.poll / poll_arrow on manually assigned partitions, against Tansu and the
librdkafka mock cluster, with data written by confluent-kafka: exact records in exact order
per partition, max.poll.records, seeks, resets, pause/resume, leader moves, wakeup.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import (
    IllegalStateError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    WakeupError,
)
from pyconsumer.testing import CODECS, MockCluster, TansuBroker, TestRecord, produce, sample_records

Row = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]], int]


def expected_rows(topic: str, records: list[TestRecord], delivered: list[tuple[int, int]],
                  ) -> dict[TopicPartition, list[Row]]:
    out: dict[TopicPartition, list[Row]] = {}
    for rec, (partition, offset) in zip(records, delivered):
        assert rec.timestamp_ms is not None
        out.setdefault(TopicPartition(topic, partition), []).append(
            (offset, rec.key, rec.value, list(rec.headers or []), rec.timestamp_ms))
    return {tp: sorted(rows) for tp, rows in out.items()}


def consume(consumer: KafkaConsumer, count: int, timeout: float = 20.0,
            **poll_args: Any) -> dict[TopicPartition, list[Row]]:
    got: dict[TopicPartition, list[Row]] = {}
    deadline = time.monotonic() + timeout
    n = 0
    while n < count and time.monotonic() < deadline:
        for tp, recs in consumer.poll(timeout_ms=500, **poll_args).items():
            for r in recs:
                assert (r.topic, r.partition) == tp
                assert r.timestamp_type == 0
                got.setdefault(tp, []).append((r.offset, r.key, r.value, r.headers, r.timestamp))
            n += len(recs)
    return got


def consume_arrow(consumer: KafkaConsumer, count: int, timeout: float = 20.0
                  ) -> dict[TopicPartition, list[Row]]:
    got: dict[TopicPartition, list[Row]] = {}
    deadline = time.monotonic() + timeout
    n = 0
    while n < count and time.monotonic() < deadline:
        batch = consumer.poll_arrow(timeout_ms=500, include_headers=True)
        for row in batch.to_pylist():
            tp = TopicPartition(row["topic"], row["partition"])
            ts = int(row["timestamp"].timestamp() * 1000)
            headers = [(h["key"], h["value"]) for h in row["headers"] or []]
            got.setdefault(tp, []).append((row["offset"], row["key"], row["value"], headers, ts))
            n += 1
    return got


# ----------------------------------------------------------------------------- exact records

@pytest.mark.parametrize("codec", CODECS)
def test_poll_returns_exactly_what_was_produced_tansu(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str], codec: str) -> None:
    topic = make_tansu_topic(3)
    records = sample_records(900, partitions=3, seed=CODECS.index(codec))
    delivered = produce(tansu.bootstrap, topic, records, compression=codec)
    expected = expected_rows(topic, records, delivered)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign(list(expected))
        assert consume(c, 900) == expected
        assert c.poll(timeout_ms=200) == {}                  # nothing more, nothing twice
        for tp, rows in expected.items():
            assert c.position(tp) == rows[-1][0] + 1


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_poll_arrow_returns_exactly_what_was_produced(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str], codec: str) -> None:
    topic = make_tansu_topic(2)
    records = sample_records(700, partitions=2, seed=11)
    delivered = produce(tansu.bootstrap, topic, records, compression=codec)
    expected = expected_rows(topic, records, delivered)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign(list(expected))
        assert consume_arrow(c, 700) == expected
        empty = c.poll_arrow(timeout_ms=100)
        assert empty.num_rows == 0 and "headers" not in empty.schema.names


@pytest.mark.parametrize("codec", ["zstd", "gzip"])
@pytest.mark.parametrize("partitions", [1, 3])
def test_poll_arrow_with_decode_threads_returns_what_one_thread_does(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str], codec: str, partitions: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Many small compressed batches: with decode.threads=4 every record exactly once, in
    order per partition, batches within max_records, and the positions of one thread. On one
    partition a response is cut into runs decoded on the threads; on 3, buffered partitions
    are written into one batch by one call (take_arrow_many: no batches to concatenate), the
    threads only cutting a partition taken alone."""
    from pyconsumer.consumer.fetch import decode

    runs: list[int] = []
    real = decode.run
    monkeypatch.setattr(decode, "min_bytes", 0)       # small batches: cut them anyway
    monkeypatch.setattr(decode, "run",
                        lambda calls, threads: runs.append(len(calls)) or real(calls, threads))
    topic = make_tansu_topic(partitions)
    records = sample_records(6000, partitions=partitions, seed=21)
    delivered = produce(tansu.bootstrap, topic, records, compression=codec,
                        **{"batch.num.messages": 100, "linger.ms": 5})
    expected = expected_rows(topic, records, delivered)

    def read(threads: int, max_records: int) -> tuple[list[list[dict[str, Any]]], list[int]]:
        batches = []
        with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest",
                           decode_threads=threads, fetch_min_bytes=1_000_000,
                           fetch_max_wait_ms=300) as c:
            c.assign(list(expected))
            n, deadline = 0, time.monotonic() + 30
            while n < 6000 and time.monotonic() < deadline:
                batch = c.poll_arrow(timeout_ms=500, max_records=max_records,
                                     include_headers=True)
                if batch.num_rows:
                    batches.append(batch.to_pylist())
                    n += batch.num_rows
            return batches, [c.position(tp) for tp in expected]

    for max_records in (6000, 1500, 333):
        _, one_positions = read(1, max_records)
        runs.clear()
        many, many_positions = read(4, max_records)
        if partitions == 1:
            assert runs, "nothing was decoded on the decode threads"
        assert sorted(r["offset"] for b in many for r in b) == sorted(
            r[0] for rows in expected.values() for r in rows)
        # (how rows fall into batches depends on when responses arrive: compared per
        # partition) every record once, in order, and the same positions as one thread
        per_tp = {tp: [(r["offset"], r["key"], r["value"]) for b in many for r in b
                       if r["partition"] == tp.partition] for tp in expected}
        assert per_tp == {tp: [(o, k, v) for o, k, v, _, _ in rows]
                          for tp, rows in expected.items()}
        assert many_positions == one_positions == [rows[-1][0] + 1 for rows in expected.values()]
        assert all(len(b) <= max_records for b in many)


def test_poll_against_mock_cluster_three_leaders(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("spread", 6)
    records = sample_records(1200, partitions=6, seed=3)
    delivered = produce(mock_cluster.bootstrap, "spread", records, compression="lz4")
    expected = expected_rows("spread", records, delivered)
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap,
                       auto_offset_reset="earliest") as c:
        c.assign(list(expected))
        assert consume(c, 1200) == expected
        # the mock's end offsets are exact
        assert c.end_offsets(list(expected)) == {tp: len(rows) for tp, rows in expected.items()}
        assert c.beginning_offsets(list(expected)) == {tp: 0 for tp in expected}


# ----------------------------------------------------------------------------- max.poll.records

def test_max_poll_records_500_500_200(tansu: TansuBroker, tansu_topic: str) -> None:
    records = sample_records(1200, partitions=[0], seed=5)
    produce(tansu.bootstrap, tansu_topic, records, compression="lz4", linger_ms=50)
    tp = TopicPartition(tansu_topic, 0)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([tp])
        assert c.position(tp) == 0
        # let one fetch bring everything in before draining
        sizes: list[int] = []
        offsets: list[int] = []
        deadline = time.monotonic() + 20
        while sum(sizes) < 1200 and time.monotonic() < deadline:
            got = c.poll(timeout_ms=1000).get(tp, [])
            if got:
                sizes.append(len(got))
                offsets += [r.offset for r in got]
        assert offsets == list(range(1200))
        assert all(s <= 500 for s in sizes)
        assert sizes == [500, 500, 200]
        batch_sizes = []
        c.seek(tp, 0)
        while sum(batch_sizes) < 1200:
            batch_sizes.append(c.poll_arrow(timeout_ms=1000, max_records=450).num_rows)
        assert batch_sizes == [450, 450, 300]


# ----------------------------------------------------------------------------- positions

def test_seek_seek_to_end_and_new_data(tansu: TansuBroker, tansu_topic: str) -> None:
    tp = TopicPartition(tansu_topic, 0)
    first = sample_records(300, partitions=[0], seed=1)
    produce(tansu.bootstrap, tansu_topic, first)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([tp])
        c.seek(tp, 123)
        got = consume(c, 300 - 123)[tp]
        assert [r[0] for r in got] == list(range(123, 300))
        assert got[0][1] == first[123].key and got[0][2] == first[123].value
        c.seek_to_beginning(tp)
        assert c.position(tp) == 0
        c.seek(tp, 299)
        assert [r[0] for r in consume(c, 1)[tp]] == [299]
        assert c.poll(timeout_ms=100) == {}
        second = sample_records(50, partitions=[0], seed=2)
        produce(tansu.bootstrap, tansu_topic, second)
        got = consume(c, 50)[tp]
        assert [r[0] for r in got] == list(range(300, 350))
        assert [r[2] for r in got] == [r.value for r in second]


def test_latest_is_the_default_reset(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("late", 1)
    tp = TopicPartition("late", 0)
    produce(mock_cluster.bootstrap, "late", sample_records(40, partitions=[0]))
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap) as c:
        c.assign([tp])
        assert c.position(tp) == 40
        assert c.poll(timeout_ms=200) == {}
        produce(mock_cluster.bootstrap, "late", sample_records(5, partitions=[0], seed=9))
        assert [r[0] for r in consume(c, 5)[tp]] == [40, 41, 42, 43, 44]
        c.seek_to_end(tp)
        assert c.position(tp) == 45


def test_no_reset_policy(mock_cluster: MockCluster) -> None:
    # the mock, not Tansu: Tansu answers a fetch past the end with no error and no data
    mock_cluster.create_topic("strict", 1)
    tp = TopicPartition("strict", 0)
    produce(mock_cluster.bootstrap, "strict", sample_records(10, partitions=[0]))
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, auto_offset_reset="none") as c:
        c.assign([tp])
        with pytest.raises(NoOffsetForPartitionError) as info:
            c.poll(timeout_ms=100)
        assert info.value.partitions == {tp}
        assert str(tp) in str(info.value)
        c.seek(tp, 4)                                  # a seek gives it a position
        assert [r[0] for r in consume(c, 6)[tp]] == list(range(4, 10))
        c.seek(tp, 1000)                               # out of range, and no policy
        with pytest.raises(OffsetOutOfRangeError,
                           match=f"Fetch position 1000 is out of range for partition {tp}"):
            for _ in range(20):
                c.poll(timeout_ms=200)
        assert c.position(tp) == 1000                  # nothing skipped silently


@pytest.mark.parametrize("policy, first", [("earliest", 0), ("latest", 10)])
def test_out_of_range_resets_with_the_policy(mock_cluster: MockCluster, policy: str,
                                             first: int) -> None:
    mock_cluster.create_topic("oor", 1)
    tp = TopicPartition("oor", 0)
    produce(mock_cluster.bootstrap, "oor", sample_records(10, partitions=[0]))
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, auto_offset_reset=policy) as c:
        c.assign([tp])
        c.seek(tp, 5000)
        assert c.poll(timeout_ms=500) == {}
        deadline = time.monotonic() + 10
        while c.position(tp) == 5000 and time.monotonic() < deadline:
            c.poll(timeout_ms=100)
        assert c.position(tp) == first
        if policy == "earliest":
            assert [r[0] for r in consume(c, 10)[tp]] == list(range(10))


def test_pause_and_resume(tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(2)
    records = sample_records(200, partitions=2)
    delivered = produce(tansu.bootstrap, topic, records)
    expected = expected_rows(topic, records, delivered)
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([p0, p1])
        c.pause(p0)
        assert c.paused() == {p0}
        got = consume(c, 100)
        assert list(got) == [p1] and got[p1] == expected[p1]
        assert c.poll(timeout_ms=300) == {}
        c.resume(p0)
        assert consume(c, 100) == {p0: expected[p0]}
        with pytest.raises(IllegalStateError, match="No current assignment"):
            c.pause(TopicPartition(topic, 7))


def test_reassign_keeps_positions_of_kept_partitions(tansu: TansuBroker,
                                                     make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(2)
    produce(tansu.bootstrap, topic, sample_records(100, partitions=2))
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([p0])
        c.seek(p0, 20)
        c.assign([p0, p1])
        assert c.assignment() == {p0, p1}
        assert c.position(p0) == 20 and c.position(p1) == 0
        c.assign([])
        assert c.assignment() == set()
        with pytest.raises(IllegalStateError, match="not subscribed to any topics or assigned"):
            c.poll(timeout_ms=0)


# ----------------------------------------------------------------------------- failures

def test_leader_moves_and_broker_goes_down_mid_stream(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("moving", 2)
    records = sample_records(600, partitions=2, seed=21)
    delivered = produce(mock_cluster.bootstrap, "moving", records)
    expected = expected_rows("moving", records, delivered)
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, auto_offset_reset="earliest",
                       reconnect_backoff_ms=20, reconnect_backoff_max_ms=200,
                       metadata_max_age_ms=1000) as c:
        c.assign(list(expected))
        got = consume(c, 200, max_records=50)
        client = c._client
        assert client is not None
        p0 = TopicPartition("moving", 0)
        old = client.metadata.leader_for(p0)
        assert old is not None
        new = next(b for b in (1, 2, 3) if b != old)
        mock_cluster.set_partition_leader("moving", 0, new)
        more = consume(c, 200, max_records=50)
        mock_cluster.broker_down(new)
        mock_cluster.set_partition_leader("moving", 0, next(b for b in (1, 2, 3) if b not in (new,)))
        mock_cluster.set_partition_leader("moving", 1, next(b for b in (1, 2, 3) if b not in (new,)))
        rest = consume(c, 200, max_records=50, timeout=30)
        for part in (more, rest):
            for tp, rows in part.items():
                got.setdefault(tp, []).extend(rows)
        assert got == expected            # no record lost, none twice, in order


def test_wakeup_interrupts_poll(tansu: TansuBroker, tansu_topic: str) -> None:
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(tansu_topic, 0)])
        c.poll(timeout_ms=100)
        timer = threading.Timer(0.3, c.wakeup)
        timer.start()
        started = time.monotonic()
        with pytest.raises(WakeupError):
            c.poll(timeout_ms=10_000)
        assert time.monotonic() - started < 3
        assert c.poll(timeout_ms=50) == {}           # one wakeup, one WakeupError


def test_iteration_yields_records_in_order(tansu: TansuBroker, tansu_topic: str) -> None:
    records = sample_records(50, partitions=[0], seed=4)
    produce(tansu.bootstrap, tansu_topic, records)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest",
                       fetch_max_wait_ms=100) as c:
        c.assign([TopicPartition(tansu_topic, 0)])
        seen = []
        for rec in c:
            seen.append(rec.offset)
            if len(seen) == 50:
                break
        assert seen == list(range(50))


def test_no_long_poll_of_caught_up_partitions_while_others_drain(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fetch holding only caught-up partitions waits fetch.max.wait.ms at the broker, and
    with one fetch per node it would keep the partitions still draining from being fetched
    again: such a fetch must not be sent while the node has other partitions buffered."""
    from pyconsumer.consumer.fetch.request import FetchRequests

    topic = make_tansu_topic(4)
    records = [TestRecord(key=b"%d" % i, value=b"v" * 100, partition=i % 4) for i in range(160_000)]
    produce(tansu.bootstrap, topic, records, linger_ms=20)
    violations: list[str] = []
    sends = [0]
    original = FetchRequests._send

    def checked(self: FetchRequests, node: int, partitions: dict[TopicPartition, tuple[int, int]],
                full: bool = False) -> None:
        sends[0] += 1
        buffered = self._buffered_partitions() - set(partitions)
        states = {tp: self.subscriptions.state(tp) for tp in partitions}
        caught_up = all(st.high_watermark is not None and st.position is not None
                        and st.position.offset >= st.high_watermark for st in states.values())
        if caught_up and buffered:
            violations.append(f"fetch of caught-up {sorted(partitions)} while {sorted(buffered)} buffered")
        original(self, node, partitions, full)

    monkeypatch.setattr(FetchRequests, "_send", checked)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, p) for p in range(4)])
        got = consume(c, 160_000, timeout=60)
    assert sum(len(rows) for rows in got.values()) == 160_000
    assert sends[0] > 4                      # the data did come in several partial responses
    assert violations == []
