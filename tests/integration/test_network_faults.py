"""Network faults under a consuming KafkaConsumer: a broker that goes down and comes back
(librdkafka mock cluster), brokers that cannot be reached at all (no busy loop), and a TCP
fault proxy in front of Tansu that stalls, drops (also mid-frame) and delays the traffic
(the proxy test takes about 20 s).

Test data is written by confluent-kafka; every test checks the exact records, in order per
partition, with no loss and no duplicate.
"""
from __future__ import annotations

import collections
import resource
import time
from collections.abc import Callable, Iterable
from typing import Any


from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import (
    FaultInjector,
    FaultProxy,
    MockCluster,
    TansuBroker,
    TestRecord,
    free_port,
    produce,
    sample_records,
)

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


# ----------------------------------------------------------------------------- fault proxy

def test_a_blocking_poll_recovers_from_a_dropped_connection_at_once(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    tp = TopicPartition(topic, 0)
    records = sample_records(110, partitions=[0], seed=88)
    want = expected_rows(topic, records[:100], produce(tansu.bootstrap, topic, records[:100]))
    got: dict[TopicPartition, list[Row]] = {}
    with FaultProxy(tansu.bootstrap, lifetime=60) as proxy, KafkaConsumer(
            bootstrap_servers=proxy.bootstrap, auto_offset_reset="earliest",
            fetch_max_wait_ms=500) as consumer:
        consumer.assign([tp])
        poll_until(consumer, got, want, timeout=20)
        assert got == want
        proxy.drop()                    # the Fetch waiting at the broker fails
        time.sleep(0.1)
        produce(tansu.bootstrap, topic, records[100:])
        started = time.monotonic()
        late = consumer.poll(timeout_ms=3000).get(tp, [])
        took = time.monotonic() - started
    assert [(r.offset, r.key, r.value) for r in late] == [
        (100 + i, r.key, r.value) for i, r in enumerate(records[100:])]
    assert took < 1.5, f"the first records after the drop came after {took:.1f} s"


def test_consume_through_a_proxy_that_stalls_drops_and_delays(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    """50,000 records on 3 partitions, written straight to Tansu by confluent-kafka, read
    through a fault proxy while a seeded schedule injects a fault every 0.2-0.5 s: stalls
    shorter (0.3 to 1 s) and longer (3 s) than request.timeout.ms (2000; a Fetch may take
    2100), drops between frames and inside a response frame, delays of 50 and 300 ms. The
    consumer processes slowly (a short sleep per poll) so that the faults land all along the
    stream. Every record must arrive exactly once, in order per partition, and the whole
    run end within a bound (it takes about 20 s)."""
    topic = make_tansu_topic(3)
    records = sample_records(50_000, partitions=3, seed=85)
    want = expected_rows(topic, records, produce(tansu.bootstrap, topic, records))
    got: dict[TopicPartition, list[Row]] = {tp: [] for tp in want}
    with FaultProxy(tansu.bootstrap, lifetime=120) as proxy, KafkaConsumer(
            bootstrap_servers=proxy.bootstrap, auto_offset_reset="earliest",
            request_timeout_ms=2000, socket_connection_setup_timeout_ms=2000,
            socket_connection_setup_timeout_max_ms=2000, fetch_max_wait_ms=100,
            # small responses (Tansu honours fetch.max.bytes, not the partition limit), so
            # that fetches go on all along and the faults meet them
            fetch_max_bytes=32 * 1024, reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=500) as consumer:
        consumer.assign(list(want))
        injector = FaultInjector(proxy, seed=86, interval=(0.2, 0.5), stalls=(0.3, 0.5, 1.0, 3.0),
                                 delays=((0.05, 1.0), (0.3, 1.0)))
        started = time.monotonic()
        with injector:
            while (sum(len(v) for v in got.values()) < len(records)
                   and time.monotonic() - started < 90):
                # short polls with a little work between them, as an ingestion loop does
                for tp, recs in consumer.poll(timeout_ms=100, max_records=200).items():
                    got[tp].extend((r.offset, r.key, r.value) for r in recs)
                time.sleep(0.02)                 # the application's work on a batch
        took = time.monotonic() - started
        stats = proxy.stats
    faults = injector.counts()
    received = sum(len(v) for v in got.values())
    duplicated = sum(len(v) - len({r[0] for r in v}) for v in got.values())
    lost = sum(len({r[0] for r in want[tp]} - {r[0] for r in got[tp]}) for tp in want)
    print(f"\nproduced {len(records)}, received {received}, lost {lost}, duplicated "
          f"{duplicated}, faults {faults} ({len(injector.log)}), proxy {stats}, {took:.1f} s")
    print("faults:", ", ".join(f"{t:.1f} {k} {a or ''}" for t, k, a in injector.log))
    assert (lost, duplicated) == (0, 0)
    assert got == want                            # exact records, in order per partition
    assert took < 60, f"consumption took {took:.0f} s"
    # the schedule did hit the stream: every kind of fault, cuts inside response frames
    assert set(faults) == set(FaultInjector.KINDS), faults
    assert stats.mid_frame_cuts >= 1 and stats.connections > 3, stats
    assert collections.Counter(a for _, k, a in injector.log if k == "stall")[3.0] >= 1
