"""KafkaConsumer.metrics() against Tansu, with data written by confluent-kafka.

bytes-consumed-total counts record-batch bytes as fetched (see pyconsumer.consumer.metrics): the
test has librdkafka write one record per batch (batch.num.messages=1, uncompressed) and
computes each batch's size from the v2 format itself (61-byte batch header + the record's
varint-framed body), independently of pyconsumer's decoder. Lag after a known backlog,
commit-total after k commits, rebalance-total after one join (Tansu completes a first join
in about session.timeout.ms / 2), and connection-count against the TCP connections this
process holds to the broker (read from /proc).
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.metrics import COORDINATOR_GROUP, FETCH_GROUP
from pyconsumer.metrics import find
from pyconsumer.testing import TansuBroker, TestRecord, produce

GROUP = dict(session_timeout_ms=2000, heartbeat_interval_ms=300, auto_offset_reset="earliest",
             enable_auto_commit=False)


def varint_size(n: int) -> int:
    """Bytes of a zigzag varint (Kafka's record fields)."""
    z = (n << 1) ^ (n >> 63)
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


def single_record_batch_size(key: bytes, value: bytes) -> int:
    """A magic-2 batch holding one record with no headers: the 61-byte header, then the record:
    length, attributes, timestamp delta 0, offset delta 0, key, value, header count 0."""
    body = 1 + 1 + 1 + varint_size(len(key)) + len(key) + varint_size(len(value)) + len(value) + 1
    return 61 + varint_size(body) + body


def consume(consumer: KafkaConsumer, n: int, max_records: int | None = None
            ) -> list[tuple[int, bytes, bytes]]:
    got: list[tuple[int, bytes, bytes]] = []
    deadline = time.monotonic() + 20
    while len(got) < n:
        assert time.monotonic() < deadline, f"got {len(got)} of {n} records"
        limit = None if max_records is None else min(max_records, n - len(got))
        for recs in consumer.poll(200, max_records=limit).values():
            got += [(r.offset, r.key, r.value) for r in recs]
    assert len(got) == n
    return got


def test_records_and_bytes_consumed(tansu: TansuBroker, make_tansu_topic: Callable[..., str]
                                    ) -> None:
    topic = make_tansu_topic(1)
    records = [TestRecord(key=b"key-%d" % i, value=b"v" * (i * 7 % 300), partition=0)
               for i in range(25)]
    produce(tansu.bootstrap, topic, records, batch_num_messages=1, linger_ms=0)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        assert consume(c, 25) == [(i, r.key, r.value) for i, r in enumerate(records)]
        m = c.metrics()
    expected = sum(single_record_batch_size(r.key or b"", r.value or b"") for r in records)
    assert find(m, "records-consumed-total", FETCH_GROUP) == 25.0
    assert find(m, "bytes-consumed-total", FETCH_GROUP) == float(expected)
    assert find(m, "records-consumed-total", FETCH_GROUP, topic=topic) == 25.0
    assert find(m, "bytes-consumed-total", FETCH_GROUP, topic=topic) == float(expected)
    assert find(m, "fetch-total", FETCH_GROUP) >= 1
    assert find(m, "records-lag", FETCH_GROUP, topic=topic, partition="0") == 0.0


def test_lag_after_a_backlog(tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    """Produce 100, consume 40 with max_records: records-lag 60, records-lead 40."""
    topic = make_tansu_topic(1)
    produce(tansu.bootstrap, topic, [TestRecord(value=b"%d" % i, partition=0)
                                     for i in range(100)])
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        got = consume(c, 40, max_records=40)
        assert [(o, v) for o, _, v in got] == [(i, b"%d" % i) for i in range(40)]
        m = c.metrics()
        assert find(m, "records-lag", FETCH_GROUP, partition="0") == 60.0
        assert find(m, "records-lag-max", FETCH_GROUP) == 60.0
        assert find(m, "records-lead", FETCH_GROUP, partition="0") == 40.0
        assert find(m, "records-consumed-total", FETCH_GROUP) == 40.0
        consume(c, 60)
        assert find(c.metrics(), "records-lag", FETCH_GROUP, partition="0") == 0.0


def test_commits_and_a_join(tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(3)
    produce(tansu.bootstrap, topic, [TestRecord(value=b"x", partition=i % 3) for i in range(9)])
    with KafkaConsumer(topic, bootstrap_servers=tansu.bootstrap, group_id=f"g-{topic}",
                       **GROUP) as c:
        m = c.metrics()
        assert find(m, "rebalance-total", COORDINATOR_GROUP) == 0.0
        assert find(m, "last-rebalance-seconds-ago", COORDINATOR_GROUP) == -1.0
        consume(c, 9)
        m = c.metrics()
        assert find(m, "rebalance-total", COORDINATOR_GROUP) == 1.0
        assert find(m, "assigned-partitions", COORDINATOR_GROUP) == 3.0
        assert find(m, "rebalance-latency-total", COORDINATOR_GROUP) > 0
        assert find(m, "commit-total", COORDINATOR_GROUP) == 0.0
        for _ in range(3):
            c.commit()
        m = c.metrics()
        assert find(m, "commit-total", COORDINATOR_GROUP) == 3.0
        assert find(m, "commit-latency-max", COORDINATOR_GROUP) > 0
        assert {tp.partition: om.offset for tp, om in c.committed(c.assignment()).items()
                if om is not None} == {0: 3, 1: 3, 2: 3}


def _sockets_to(port: int) -> int:
    """ESTABLISHED TCP connections of this process to 127.0.0.1:``port`` (from /proc)."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if remote_port == port and fields[3] == "01" and fields[9] in mine:
                    count += 1
    return count


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc")
def test_connection_count(tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    produce(tansu.bootstrap, topic, [TestRecord(value=b"x", partition=0)])
    before = _sockets_to(tansu.port)
    c = KafkaConsumer(bootstrap_servers=tansu.bootstrap, group_id=f"g-{topic}",
                      **GROUP)
    try:
        assert find(c.metrics(), "connection-count") == 0.0
        c.assign([TopicPartition(topic, 0)])
        consume(c, 1)
        c.commit()
        count = find(c.metrics(), "connection-count")
        # the bootstrap connection, the broker's and the group coordinator's
        assert count == float(_sockets_to(tansu.port) - before) == 3.0
    finally:
        c.close()
    assert find(c.metrics(), "connection-count") == 0.0
    assert _sockets_to(tansu.port) == before
