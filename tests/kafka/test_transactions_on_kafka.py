"""Transactions on real Apache Kafka, written by confluent-kafka's transactional producer.

Committed and aborted transactions interleave with plain records over 3 partitions. Kafka
fills Fetch ``aborted_transactions`` and stops read_committed fetches at the last stable offset
(LSO), so read_committed must return exactly the committed and plain records, read_uncommitted
every data record; control markers never surface, yet positions step over them.
"""
from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any


from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import KafkaCluster, TestRecord, produce, produce_transactions

#: partition -> [(offset, key, value, headers)]
Rows = dict[int, list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]]


def consumer(kafka: KafkaCluster, isolation: str, **extra: Any) -> KafkaConsumer:
    return KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                                 isolation_level=isolation, **extra))


def recs(tag: str, parts: tuple[int, ...] = (0, 1, 2), per: int = 2) -> list[TestRecord]:
    return [TestRecord(f"{tag}-k{p}{i}".encode(), None if (p + i) % 3 == 2 else f"{tag}-v{p}{i}".encode(),
                       [("tag", tag.encode()), ("n", None)] if i == 0 else None, p)
            for p in parts for i in range(per)]


def poll_rows(c: KafkaConsumer, count: int, timeout: float = 30.0) -> Rows:
    out: Rows = defaultdict(list)
    got = 0
    deadline = time.monotonic() + timeout
    while got < count:
        assert time.monotonic() < deadline, f"poll() gave {got} of {count}: {dict(out)}"
        for tp, rs in c.poll(200).items():
            out[tp.partition] += [(r.offset, r.key, r.value, list(r.headers)) for r in rs]
            got += len(rs)
    assert c.poll(100) == {}
    return dict(out)


def arrow_rows(c: KafkaConsumer, count: int, timeout: float = 30.0) -> Rows:
    out: Rows = defaultdict(list)
    got = 0
    deadline = time.monotonic() + timeout
    while got < count:
        assert time.monotonic() < deadline, f"poll_arrow() gave {got} of {count}: {dict(out)}"
        batch = c.poll_arrow(200, include_headers=True)
        assert batch.column("timestampType").to_pylist() == [0] * batch.num_rows
        for row in batch.to_pylist():
            out[row["partition"]].append((row["offset"], row["key"], row["value"],
                                          [(h["key"], h["value"]) for h in (row["headers"] or [])]))
        got += batch.num_rows
    assert c.poll_arrow(100).num_rows == 0
    return dict(out)


def expected(records: list[TestRecord], delivered: list[tuple[int, int]]) -> Rows:
    out: Rows = defaultdict(list)
    for r, (p, o) in zip(records, delivered):
        out[p].append((o, r.key, r.value, list(r.headers or [])))
    return {p: sorted(rows, key=lambda x: x[0]) for p, rows in out.items()}


def merge(*parts: Rows) -> Rows:
    out: Rows = defaultdict(list)
    for rows in parts:
        for p, rs in rows.items():
            out[p] += rs
    return {p: sorted(rs, key=lambda x: x[0]) for p, rs in out.items()}


def test_committed_aborted_and_plain_records_over_three_partitions(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """read_committed gives exactly the committed and plain records (poll and poll_arrow),
    read_uncommitted every data record; no control record surfaces, every position ends past
    the last marker, at the end offset (LSO = high watermark once nothing is open)."""
    topic = make_kafka_topic(3)
    tps = [TopicPartition(topic, p) for p in range(3)]
    txid = f"tx-{uuid.uuid4().hex[:8]}"
    b = kafka.bootstrap_servers
    committed1, aborted1 = recs("c1"), recs("a1", (0, 2))
    (d_c1, d_a1) = produce_transactions(b, topic, [(committed1, True), (aborted1, False)],
                                        transactional_id=txid, compression="lz4")
    plain1 = recs("p1", per=1)
    d_p1 = produce(b, topic, plain1, compression="zstd")
    aborted2, committed2 = recs("a2", (1,)), recs("c2", (1, 2), per=3)
    (d_a2, d_c2) = produce_transactions(b, topic, [(aborted2, False), (committed2, True)],
                                        transactional_id=txid, compression="gzip")
    plain2 = recs("p2", (0,), per=1)
    d_p2 = produce(b, topic, plain2)
    committed = merge(expected(committed1, d_c1), expected(plain1, d_p1), expected(committed2, d_c2),
                      expected(plain2, d_p2))
    everything = merge(committed, expected(aborted1, d_a1), expected(aborted2, d_a2))
    # each transaction's marker took an offset in every partition it wrote: p0 has c1 (0, 1),
    # marker 2, a1 (3, 4), marker 5, p1 (6), p2 (7); p1's and p2's last offsets are markers
    assert [r[0] for r in everything[0]] == [0, 1, 3, 4, 6, 7]
    assert [r[0] for r in everything[1]] == [0, 1, 3, 4, 5, 7, 8, 9]
    assert [r[0] for r in everything[2]] == [0, 1, 3, 4, 6, 7, 8, 9]
    ends = {TopicPartition(topic, 0): 8, TopicPartition(topic, 1): 11, TopicPartition(topic, 2): 11}
    with consumer(kafka, "read_uncommitted") as c:
        # the coordinator writes the markers after commit_transaction() returns: wait for the last
        deadline = time.monotonic() + 30
        while c.end_offsets(tps) != ends:            # high watermark
            assert time.monotonic() < deadline, c.end_offsets(tps)
            time.sleep(0.05)

    with consumer(kafka, "read_committed") as c:
        assert c.end_offsets(tps) == ends           # LSO: nothing open
        c.assign(tps)
        assert poll_rows(c, sum(map(len, committed.values()))) == committed
        assert {tp: c.position(tp) for tp in tps} == ends
    with consumer(kafka, "read_committed") as c:
        c.assign(tps)
        assert arrow_rows(c, sum(map(len, committed.values()))) == committed
        assert {tp: c.position(tp) for tp in tps} == ends
    with consumer(kafka, "read_uncommitted") as c:
        c.assign(tps)
        assert poll_rows(c, sum(map(len, everything.values()))) == everything
        assert {tp: c.position(tp) for tp in tps} == ends
    with consumer(kafka, "read_uncommitted") as c:
        c.assign(tps)
        assert arrow_rows(c, sum(map(len, everything.values()))) == everything


def test_an_open_transaction_holds_the_last_stable_offset(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """While a transaction is open, read_committed end_offsets is its first offset (the LSO) and
    nothing from there on is returned, plain records after it included; read_uncommitted sees the
    high watermark and everything. After the commit the held records come, in order."""
    from confluent_kafka import Producer

    topic = make_kafka_topic(1)
    tp = TopicPartition(topic, 0)
    b = kafka.bootstrap_servers
    assert produce(b, topic, [TestRecord(b"k0", b"before", None, 0)]) == [(0, 0)]
    producer = Producer({"bootstrap.servers": b, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}",
                         "linger.ms": 5, "transaction.timeout.ms": 60000})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in (1, 2):
        producer.produce(topic, value=b"open%d" % i, key=b"k%d" % i, partition=0)
    assert producer.flush(30) == 0
    assert produce(b, topic, [TestRecord(b"k3", b"after", None, 0)]) == [(0, 3)]
    with consumer(kafka, "read_committed") as rc, consumer(kafka, "read_uncommitted") as ru:
        assert rc.end_offsets([tp]) == {tp: 1}
        assert ru.end_offsets([tp]) == {tp: 4}
        rc.assign([tp])
        ru.assign([tp])
        assert poll_rows(rc, 1) == {0: [(0, b"k0", b"before", [])]}
        assert rc.position(tp) == 1
        assert poll_rows(ru, 4) == {0: [(0, b"k0", b"before", []), (1, b"k1", b"open1", []),
                                        (2, b"k2", b"open2", []), (3, b"k3", b"after", [])]}
        assert rc.last_stable_offset(tp) == 1
        producer.commit_transaction(30)
        assert poll_rows(rc, 3) == {0: [(1, b"k1", b"open1", []), (2, b"k2", b"open2", []),
                                        (3, b"k3", b"after", [])]}
        assert rc.end_offsets([tp]) == {tp: 5} == ru.end_offsets([tp])   # the commit marker at 4
        deadline = time.monotonic() + 30
        while rc.position(tp) != 5:                  # the marker is stepped over, not returned
            assert time.monotonic() < deadline, rc.position(tp)
            assert rc.poll(100) == {}
    del producer
