"""A 1,000-partition topic on Apache Kafka (issue 26): every record once, in order per
partition, with its exact offset, key and value, through ``poll()`` and ``poll_arrow()``.

The consumer's per-partition bookkeeping is incremental (sets of unsettled and paused
partitions, kept Fetch entries, a rollback journal of the partitions a drain moved); this
checks it loses, repeats or reorders nothing when every partition has data.
"""
from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import KafkaCluster, TestRecord, produce

pytestmark = pytest.mark.kafka

_PARTITIONS = 1000
_PER_PARTITION = 4

Row = tuple[int, bytes | None, bytes | None]


def _expected(bootstrap: str, topic: str) -> dict[int, list[Row]]:
    # records of a partition interleaved with the others' in production order
    records = [TestRecord(b"k%d-%d" % (p, i), b"v%d-%d" % (p, i) * (1 + i), partition=p)
               for i in range(_PER_PARTITION) for p in range(_PARTITIONS)]
    # the first write to each of 1,000 new partitions costs Kafka seconds in all
    delivered = produce(bootstrap, topic, records, timeout=90)
    want: dict[int, list[Row]] = {}
    for rec, (p, offset) in zip(records, delivered):
        want.setdefault(p, []).append((offset, rec.key, rec.value))
    for rows in want.values():
        rows.sort()
    return want


def test_every_record_once_in_order_over_1000_partitions(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    topic = make_kafka_topic(_PARTITIONS)
    want = _expected(kafka.bootstrap, topic)
    assert sum(map(len, want.values())) == _PARTITIONS * _PER_PARTITION
    tps = [TopicPartition(topic, p) for p in range(_PARTITIONS)]
    total = _PARTITIONS * _PER_PARTITION
    # a small response budget: each Fetch answers part of the partitions (fairness order,
    # prefetch and sessions all at work), and poll() drains them over many calls
    settings = kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                     fetch_max_bytes=16384)

    # poll(): small max_records, so partitions are drained over many polls
    got: dict[int, list[Row]] = {}
    with KafkaConsumer(**settings) as c:
        c.assign(tps)
        n, deadline = 0, time.monotonic() + 20
        while n < total:
            assert time.monotonic() < deadline, f"poll() gave {n} of {total} records"
            for tp, recs in c.poll(timeout_ms=200, max_records=333).items():
                assert tp.topic == topic
                got.setdefault(tp.partition, []).extend((r.offset, r.key, r.value)
                                                        for r in recs)
                n += len(recs)
        assert not c.poll(timeout_ms=300)            # nothing more, nothing twice
        positions = {tp.partition: c.position(tp) for tp in tps}
    assert got == want
    assert positions == {p: rows[-1][0] + 1 for p, rows in want.items()}

    # poll_arrow(): rows per partition in offset order, each once
    arrow: dict[int, list[Row]] = {}
    with KafkaConsumer(**settings) as c:
        c.assign(tps)
        n, deadline = 0, time.monotonic() + 20
        while n < total:
            assert time.monotonic() < deadline, f"poll_arrow() gave {n} of {total} rows"
            batch = c.poll_arrow(timeout_ms=200, max_records=1000).to_pydict()
            for p, offset, key, value in zip(batch["partition"], batch["offset"],
                                             batch["key"], batch["value"]):
                arrow.setdefault(p, []).append((offset, key, value))
            n += len(batch["offset"])
        assert c.poll_arrow(timeout_ms=300).num_rows == 0
    assert arrow == want
