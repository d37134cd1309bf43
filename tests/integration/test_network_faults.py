"""Network faults under a consuming KafkaConsumer: a broker that goes down and comes back
(librdkafka mock cluster), brokers that cannot be reached at all (no busy loop), and a TCP
fault proxy in front of Tansu that stalls, drops (also mid-frame) and delays the traffic.

Test data is written by confluent-kafka; every test checks the exact records, in order per
partition, with no loss and no duplicate.
"""
from __future__ import annotations

import resource
import time
from collections.abc import Iterable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import MockCluster, TestRecord, free_port, produce, sample_records

#: (offset, key, value) of one record
Row = tuple[int, bytes | None, bytes | None]


def expected_rows(topic: str, records: Iterable[TestRecord], delivered: Iterable[tuple[int, int]],
                  into: dict[TopicPartition, list[Row]] | None = None
                  ) -> dict[TopicPartition, list[Row]]:
    out: dict[TopicPartition, list[Row]] = {} if into is None else into
    for rec, (partition, offset) in zip(records, delivered):
        out.setdefault(TopicPartition(topic, partition), []).append((offset, rec.key, rec.value))
    for rows in out.values():
        rows.sort()
    return out


def poll_until(consumer: KafkaConsumer, got: dict[TopicPartition, list[Row]],
               want: dict[TopicPartition, list[Row]], timeout: float) -> float:
    """Poll into ``got`` until it holds as many rows as ``want`` (or more, or the timeout):
    the time it took."""
    started = time.monotonic()
    total = sum(len(v) for v in want.values())
    while sum(len(v) for v in got.values()) < total and time.monotonic() - started < timeout:
        for tp, recs in consumer.poll(timeout_ms=200).items():
            got.setdefault(tp, []).extend((r.offset, r.key, r.value) for r in recs)
    return time.monotonic() - started


# ----------------------------------------------------------------------------- item 8

def test_partitions_of_a_broker_that_comes_back_are_fetched_again(
        mock_cluster: MockCluster) -> None:
    """Issue 9 item 8. While broker 1 is down the mock drops it from Metadata, so a fetch to it
    fails with "not a known broker"; once it is back its partition must be fetched again within
    seconds, not after metadata.max.age.ms (left at its 300000 default)."""
    topic = "comeback"
    mock_cluster.create_topic(topic, 3)
    for p, broker in enumerate((1, 2, 3)):          # partition p led by broker p + 1
        mock_cluster.set_partition_leader(topic, p, broker)
    parts = [TopicPartition(topic, p) for p in range(3)]

    first = sample_records(300, partitions=3, seed=81)
    want = expected_rows(topic, first, produce(mock_cluster.bootstrap, topic, first))
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, auto_offset_reset="earliest",
                       fetch_max_wait_ms=100) as consumer:
        assert consumer.config.metadata_max_age_ms == 300_000
        consumer.assign(parts)
        poll_until(consumer, got, want, timeout=20)
        assert got == want

        mock_cluster.broker_down(1)
        # the other partitions keep flowing while broker 1 is away
        during = sample_records(200, partitions=[1, 2], seed=82)
        expected_rows(topic, during, produce(mock_cluster.bootstrap, topic, during), into=want)
        poll_until(consumer, got, want, timeout=20)
        assert got == want
        # long enough for the client to notice, refresh metadata (broker 1 is no longer
        # listed) and try partition 0's leader again and again
        mock_cluster.start_request_tracking()
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            assert consumer.poll(timeout_ms=100) == {}
        asked = [r for r in mock_cluster.get_requests() if r.api_key == ApiKey.METADATA]
        mock_cluster.stop_request_tracking()
        # every failed fetch to broker 1 asks for metadata, but the refresh backoff
        # (retry.backoff.ms 100 doubling to retry.backoff.max.ms 1000 while the answers stay
        # the same) spaces the requests: about 6 in 2 s, not one per poll (20)
        assert 1 <= len(asked) <= 10, [r.timestamp_us for r in asked]

        mock_cluster.broker_up(1)
        after = sample_records(300, partitions=3, seed=83)
        expected_rows(topic, after, produce(mock_cluster.bootstrap, topic, after), into=want)
        took = poll_until(consumer, got, want, timeout=15)
        assert {tp: len(rows) for tp, rows in got.items()} == {tp: len(rows) for tp, rows in want.items()}
        assert got == want                    # every record once, in order, per partition
        assert took < 5.0, f"partition 0 came back after {took:.1f} s"


# ----------------------------------------------------------------------------- no busy loop

def cpu_seconds() -> float:
    """CPU time of this thread (the consumer runs in it), user + system."""
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def count_selects(consumer: KafkaConsumer) -> list[int]:
    """Count the network client's select() calls from now on (one list cell)."""
    client = consumer._client
    assert client is not None
    selector: Any = client._selector
    real = selector.select
    calls = [0]

    def select(timeout: float | None = None) -> Any:
        calls[0] += 1
        return real(timeout)

    selector.select = select
    return calls


def idle_poll(consumer: KafkaConsumer, seconds: float) -> tuple[float, int]:
    """Poll for ``seconds`` with nothing to receive: (CPU seconds used, select() calls)."""
    selects = count_selects(consumer)
    cpu = cpu_seconds()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert consumer.poll(timeout_ms=500) == {}
    return cpu_seconds() - cpu, selects[0]


def test_no_busy_loop_while_the_bootstrap_broker_refuses() -> None:
    """Nothing listens on the bootstrap port: the client must sleep through its reconnect
    backoff (here 50 ms doubling to 1 s), not select() with a 0 timeout (it took ~1.8 s of
    CPU in 2 s and 220,000 selects before)."""
    with KafkaConsumer(bootstrap_servers=f"127.0.0.1:{free_port()}",
                       auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("nowhere", 0)])
        cpu, selects = idle_poll(consumer, 2.0)
        client = consumer._client
        assert client is not None
        conn = client.connection(-1)
        assert conn is not None and conn.failures >= 3          # it did keep trying
        assert "ECONNREFUSED" in str(conn.last_error)
    assert cpu < 0.3, f"{cpu:.2f} s of CPU in 2 s while the broker is unreachable"
    assert selects < 200, f"{selects} select() calls in 2 s"


def test_no_busy_loop_while_every_broker_is_down(mock_cluster: MockCluster) -> None:
    """Consuming from a 3-broker cluster, then all three go down: polling stays idle."""
    topic = "alldown"
    mock_cluster.create_topic(topic, 3)
    records = sample_records(30, partitions=3, seed=84)
    want = expected_rows(topic, records, produce(mock_cluster.bootstrap, topic, records))
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, auto_offset_reset="earliest",
                       fetch_max_wait_ms=100) as consumer:
        consumer.assign(list(want))
        poll_until(consumer, got, want, timeout=20)
        assert got == want
        for broker in mock_cluster.broker_ids:
            mock_cluster.broker_down(broker)
        cpu, selects = idle_poll(consumer, 2.0)
    assert cpu < 0.3, f"{cpu:.2f} s of CPU in 2 s while every broker is down"
    assert selects < 200, f"{selects} select() calls in 2 s"
