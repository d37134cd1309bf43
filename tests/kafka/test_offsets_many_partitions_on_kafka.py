"""Offsets of a 1,000-partition topic on Apache Kafka (issue 26), exact for every partition:
``beginning_offsets`` / ``end_offsets`` (log start moved by DeleteRecords on some, empty
partitions, a few records on the others), ``offsets_for_times``, the position resets of a new
assignment (earliest and latest), and the Spark source's batch plan, each in one ListOffsets
round trip per lookup (one broker: one request), not one per partition.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.offsets import OffsetAndTimestamp
from pyconsumer.net.client import NetworkClient
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import KafkaCluster, TestRecord, produce
from tests.conftest import unique_topic_name

pytestmark = pytest.mark.kafka

_PARTITIONS = 1000
T = 1_700_000_000_000


def _count(p: int) -> int:
    return p % 4                     # 0 to 3 records: a quarter of the partitions are empty


def _start(p: int) -> int:
    return 1 if p % 8 == 3 else 0    # DeleteRecords moved these (3 records each) to 1


def _ts(p: int, i: int) -> int:
    return T + p * 10 + i


@pytest.fixture(scope="module")
def many(kafka: KafkaCluster) -> Iterator[str]:
    topic = kafka.create_topic(unique_topic_name(), _PARTITIONS)
    records = [TestRecord(b"k%d-%d" % (p, i), b"v%d-%d" % (p, i), partition=p,
                          timestamp_ms=_ts(p, i))
               for i in range(3) for p in range(_PARTITIONS) if i < _count(p)]
    # the first write to each of 1,000 new partitions costs Kafka seconds in all; a request
    # retried then may land after a later one: idempotence keeps each partition in order
    delivered = produce(kafka.bootstrap, topic, records, timeout=90, enable_idempotence=True)
    assert Counter(p for p, _ in delivered) == {p: _count(p) for p in range(_PARTITIONS)
                                                if _count(p)}
    assert all(o == int(r.key.split(b"-")[1]) for r, (_, o) in zip(records, delivered)
               if r.key is not None)
    kafka.delete_records([(topic, p, 1) for p in range(_PARTITIONS) if _start(p)])
    yield topic


@pytest.fixture
def sends(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Requests sent by every client in the test, by API."""
    counts: Counter[str] = Counter()
    real = NetworkClient.send

    def send(self: NetworkClient, node_id: int, api_key: int, *args: Any, **kwargs: Any) -> Any:
        counts[ApiKey(api_key).name] += 1
        return real(self, node_id, api_key, *args, **kwargs)

    monkeypatch.setattr(NetworkClient, "send", send)
    return counts


def test_beginning_and_end_offsets_of_1000_partitions_are_exact(
        kafka: KafkaCluster, many: str, sends: Counter[str]) -> None:
    tps = [TopicPartition(many, p) for p in range(_PARTITIONS)]
    with KafkaConsumer(**kafka.client_settings()) as c:
        c.partitions_for_topic(many)
        sends.clear()
        for _ in range(2):                           # and again, from the kept metadata
            assert c.beginning_offsets(tps) == {tp: _start(tp.partition) for tp in tps}
            assert c.end_offsets(tps) == {tp: _count(tp.partition) for tp in tps}
        assert sends["LIST_OFFSETS"] == 4            # one request per lookup (one leader)
        # the first record at or after each partition's second timestamp: offset 1 where
        # there is one, None where the partition ends before it
        found = c.offsets_for_times({tp: _ts(tp.partition, 1) for tp in tps})
        assert found == {tp: (OffsetAndTimestamp(1, _ts(tp.partition, 1), found[tp].leader_epoch)
                              if _count(tp.partition) >= 2 else None)
                         for tp in tps}
        assert {ot.leader_epoch for ot in found.values() if ot is not None} == {0}
        # a subset, in any order: exactly the partitions asked
        some = tps[997::-7]
        assert c.end_offsets(some) == {tp: _count(tp.partition) for tp in some}
        assert sends["LIST_OFFSETS"] == 6


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_a_new_assignment_of_1000_partitions_resets_exactly(
        kafka: KafkaCluster, many: str, sends: Counter[str], reset: str) -> None:
    tps = [TopicPartition(many, p) for p in range(_PARTITIONS)]
    want = {tp: (_start if reset == "earliest" else _count)(tp.partition) for tp in tps}
    with KafkaConsumer(**kafka.client_settings(auto_offset_reset=reset,
                                               fetch_max_wait_ms=50)) as c:
        c.assign(tps)
        records = c.poll(timeout_ms=3000) if reset == "earliest" else {}
        got: dict[TopicPartition, int] = {tp: c.position(tp) for tp in tps}
        # earliest: the first poll may have returned records; positions moved past them
        for tp, recs in records.items():
            assert [r.offset for r in recs] == list(range(_start(tp.partition),
                                                          _start(tp.partition) + len(recs)))
            got[tp] -= len(recs)
        assert got == want
        assert sends["LIST_OFFSETS"] == 1            # every reset in one request


def test_spark_plan_of_1000_partitions_is_exact(
        kafka: KafkaCluster, many: str, sends: Counter[str]) -> None:
    pytest.importorskip("pyspark")
    from pyconsumer.spark.options import parse_options
    from pyconsumer.spark.planning import OffsetRange
    from pyconsumer.spark.source import KafkaBatchReader

    options = parse_options({"kafka.bootstrap.servers": kafka.bootstrap, "subscribe": many},
                            streaming=False)
    ranges = KafkaBatchReader(options).plan()
    assert ranges == [OffsetRange(many, p, _start(p), _count(p)) for p in range(_PARTITIONS)
                      if _count(p) > _start(p)]
    # earliest and latest: one ListOffsets each (the ends are then confirmed by a Fetch,
    # sent again until every watermark came: how many depends on timing)
    assert sends["LIST_OFFSETS"] == 2
