"""metadata.recovery.strategy (Java's rebootstrap): a consumer whose known brokers all went away
finds the cluster again through bootstrap.servers. The bootstrap address is a proxy standing
for a name (rewrite_addresses off: the Metadata answers name the brokers' own addresses); the
cluster is replaced by another on new ports holding the same records, and the name repointed.
With rebootstrap the consumer reads on, every record once; with none it keeps asking the
brokers it knew and reads nothing more."""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import FakeCluster, FaultProxy

TP = TopicPartition("t", 0)


def records(n: int) -> list[tuple[bytes, bytes]]:
    return [(b"k%d" % i, b"v%d" % i) for i in range(n)]


@pytest.fixture
def first() -> Iterator[FakeCluster]:
    with FakeCluster(1, topics={"t": 1}) as cluster:
        cluster.produce(TP, records(10))
        yield cluster


def read(consumer: KafkaConsumer, until: int, seconds: float) -> list[tuple[int, bytes | None]]:
    got: list[tuple[int, bytes | None]] = []
    deadline = time.monotonic() + seconds
    while len(got) < until and time.monotonic() < deadline:
        for recs in consumer.poll(100).values():
            got += [(r.offset, r.value) for r in recs]
    return got


@pytest.mark.parametrize("strategy", ["rebootstrap", "none"])
def test_a_cluster_whose_brokers_all_moved_is_found_again_through_bootstrap(
        first: FakeCluster, strategy: str) -> None:
    with FaultProxy(first.bootstrap, rewrite_addresses=False) as name, \
            KafkaConsumer(bootstrap_servers=name.bootstrap, metadata_recovery_strategy=strategy,
                          max_poll_records=5, fetch_max_wait_ms=50, reconnect_backoff_ms=20,
                          reconnect_backoff_max_ms=100, request_timeout_ms=2000) as consumer:
        consumer.assign([TP])
        consumer.seek(TP, 0)
        assert read(consumer, 5, 10) == [(i, b"v%d" % i) for i in range(5)]
        through_name = name.stats.connections
        first.close()                                   # every broker it knew is gone
        with FakeCluster(1, topics={"t": 1}) as second:
            second.produce(TP, records(15))             # the same records, and five more
            assert second.bootstrap != first.bootstrap
            name.point_at(second.bootstrap)
            if strategy == "none":
                # what was fetched before the first cluster went, then nothing more: it keeps
                # asking the brokers it knew, never the name
                assert read(consumer, 10, 3) == [(i, b"v%d" % i) for i in range(5, 10)]
                assert name.stats.connections == through_name
                assert consumer.position(TP, timeout_ms=500) == 10
                return
            assert read(consumer, 10, 20) == [(i, b"v%d" % i) for i in range(5, 15)]
            assert name.stats.connections > through_name
            assert consumer.position(TP) == 15
            assert second.errors == []


def test_no_metadata_for_the_trigger_time_rebootstraps_though_the_brokers_answer(
        first: FakeCluster) -> None:
    """The known broker still serves fetches, but its Metadata answers never come in time: after
    metadata.recovery.rebootstrap.trigger.ms of failed attempts the consumer goes back to the
    bootstrap name, which now means another cluster (the records only it has are read)."""
    from pyconsumer.protocol import ApiKey
    from pyconsumer.testing import Request

    with FaultProxy(first.bootstrap, rewrite_addresses=False) as name, \
            KafkaConsumer(bootstrap_servers=name.bootstrap, max_poll_records=5,
                          fetch_max_wait_ms=50, metadata_max_age_ms=100, request_timeout_ms=300,
                          metadata_recovery_rebootstrap_trigger_ms=1000) as consumer:
        consumer.assign([TP])
        consumer.seek(TP, 0)
        assert read(consumer, 5, 10) == [(i, b"v%d" % i) for i in range(5)]

        def late(req: Request) -> None:
            time.sleep(0.6)                             # past request.timeout.ms
            return None

        first.control(ApiKey.METADATA, late)
        with FakeCluster(1, topics={"t": 1}) as second:
            second.produce(TP, records(15))
            name.point_at(second.bootstrap)
            started = time.monotonic()
            assert read(consumer, 10, 20) == [(i, b"v%d" % i) for i in range(5, 15)]
            assert time.monotonic() - started >= 1.0    # not before the trigger time
            assert consumer.position(TP) == 15


def test_a_metadata_answer_listing_no_broker_is_ignored_as_java_ignores_it() -> None:
    """The last broker of a cluster shutting down (or one starting up) may answer Metadata
    with no broker at all. Java's client ignores such an answer (a failed update: asked again
    after the backoff); taking it would forget every known broker and quietly fall back to
    bootstrap.servers, which with metadata.recovery.strategy=none Java never does."""
    from typing import Any, cast

    from pyconsumer.net.metadata import ClusterMetadata
    from pyconsumer.protocol.bodies import MetadataResponse
    from tests.unit.test_metadata_scaling import _answer as answer

    def _answer(n: int, **kw: Any) -> MetadataResponse:
        return cast(MetadataResponse, answer(n, **kw))

    now = [100.0]
    md = ClusterMetadata([("127.0.0.1", 9)], clock=lambda: now[0])
    md.update(_answer(3), ["t"])
    known, version, refreshed = dict(md.brokers), md.update_version, md.last_refresh
    assert sorted(known) == [1, 2, 3] and not md.update_requested()
    now[0] = 101.0
    empty = answer(3)
    empty["brokers"] = []
    md.update(cast(MetadataResponse, empty), ["t"])
    assert md.brokers == known and md.nodes() == list(known.values())
    assert (md.update_version, md.last_refresh) == (version, refreshed)
    assert md.update_requested() and md.failing_since == 101.0
    assert md.time_to_next_update_ms() > 0            # the refresh backoff paces the next ask
    now[0] = 102.0
    md.update(_answer(3, epoch=6), ["t"])
    assert md.failing_since is None and md.last_refresh == 102.0
