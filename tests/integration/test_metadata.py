"""KafkaConsumer's metadata calls and the network client against real brokers: Tansu and a
3-broker librdkafka mock cluster. Topics are created and described by confluent-kafka (an
independent client); pyconsumer must see exactly the same partitions, leaders and replicas.
"""
from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from pyconsumer import KafkaConsumer, PartitionInfo
from pyconsumer.errors import IllegalStateError
from pyconsumer.net.client import NetworkClient
from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey
from pyconsumer.testing import MockCluster, TansuBroker, probe_api_versions


def confluent_view(bootstrap: str, topics: list[str]) -> dict[str, list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]]:
    """(partition, leader, replicas, isr) per topic, as confluent-kafka's AdminClient sees it."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    return {
        t: sorted((p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
                  for p in md.topics[t].partitions.values())
        for t in topics
    }


def our_view(infos: list[PartitionInfo]) -> list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]:
    return [(p.partition, p.leader, p.replicas, p.isr) for p in infos]


def expected_versions(host: str, port: int) -> dict[str, int]:
    """For each API both sides know: the highest version in both ranges (probed raw)."""
    theirs = probe_api_versions(host, port)
    out = {}
    for api, (lo, hi) in SUPPORTED_VERSIONS.items():
        if int(api) in theirs and max(lo, theirs[api][0]) <= min(hi, theirs[api][1]):
            out[api.name] = min(hi, theirs[api][1])
    return out


def dead_address() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"127.0.0.1:{port}"


# ----------------------------------------------------------------------------- Tansu

def test_tansu_topics_and_partitions(tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    names = [make_tansu_topic(n) for n in (1, 3, 5)]
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap) as consumer:
        topics = consumer.topics()
        assert set(names) <= set(topics)
        for name, count in zip(names, (1, 3, 5)):
            assert [p.partition for p in topics[name]] == list(range(count))
            assert consumer.partitions_for_topic(name) == set(range(count))
            assert all(p.leader == tansu.node_id and p.topic == name for p in topics[name])
        assert {n: our_view(topics[n]) for n in names} == confluent_view(tansu.bootstrap, names)


def test_tansu_negotiated_versions(tansu: TansuBroker) -> None:
    host, port = tansu.bootstrap.rsplit(":", 1)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap) as consumer:
        consumer.topics()
        versions = consumer.negotiated_versions()
        assert list(versions) == [-1]              # only the bootstrap connection so far
        assert versions[-1] == expected_versions(host, int(port))
        # what Tansu advertised when this was written (Fetch through v17, flexible Metadata)
        assert versions[-1]["API_VERSIONS"] == 4
        assert versions[-1]["FETCH"] >= 12 and versions[-1]["METADATA"] >= 9


def test_unknown_topic(tansu: TansuBroker) -> None:
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, allow_auto_create_topics=False) as consumer:
        assert consumer.partitions_for_topic("no-such-topic-here") is None
        assert consumer.partitions_for("no-such-topic-here") == []
        assert "no-such-topic-here" not in consumer.topics()


def test_dead_first_bootstrap_server(tansu: TansuBroker, tansu_topic: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import pyconsumer.net.client as client_module

    # least-loaded-node selection starts at a random node: make it start at the dead one
    monkeypatch.setattr(client_module.random, "randrange", lambda n: 0)
    dead = dead_address()
    with KafkaConsumer(bootstrap_servers=f"{dead},{tansu.bootstrap}",
                       reconnect_backoff_ms=50) as consumer:
        started = time.monotonic()
        assert consumer.partitions_for_topic(tansu_topic) == {0}
        assert time.monotonic() - started < 5
        client = consumer._client
        assert client is not None
        first = client.connection(-1)
        assert first is not None and "ECONNREFUSED" in str(first.last_error)
        assert client.is_ready(-2)


def test_close_is_idempotent_and_final(tansu: TansuBroker) -> None:
    consumer = KafkaConsumer(bootstrap_servers=tansu.bootstrap)
    assert consumer._client is None                     # lazy: nothing opened yet
    consumer.topics()
    client = consumer._client
    assert client is not None and client.ready_nodes()
    consumer.close()
    consumer.close()
    assert client.closed and consumer.closed
    with pytest.raises(IllegalStateError, match="this consumer is closed"):
        consumer.topics()
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap) as c2:
        c2.topics()
    assert c2.closed


def test_metadata_refreshes_by_age(tansu: TansuBroker, tansu_topic: str) -> None:
    from pyconsumer.config import ConsumerConfig

    client = NetworkClient(ConsumerConfig(bootstrap_servers=tansu.bootstrap,
                                          metadata_max_age_ms=200))
    try:
        client.metadata_topics = {tansu_topic}
        client.poll(timeout_ms=1100)
        # first fetch at once, then one every 200 ms
        assert 4 <= client.metadata.answers <= 7
        assert client.metadata.partitions_for(tansu_topic) is not None
    finally:
        client.close()


# ----------------------------------------------------------------------------- mock cluster

def test_mock_cluster_topics_leaders_and_versions(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("orders", 6)
    mock_cluster.create_topic("audit", 2)
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap) as consumer:
        topics = consumer.topics()
        assert {n: len(p) for n, p in topics.items()} == {"orders": 6, "audit": 2}
        assert {n: our_view(topics[n]) for n in topics} == \
            confluent_view(mock_cluster.bootstrap, ["orders", "audit"])
        assert {p.leader for p in topics["orders"]} == {1, 2, 3}
        client = consumer._client
        assert client is not None
        assert sorted(b.node_id for b in client.metadata.brokers.values()) == [1, 2, 3]
        for node in (1, 2, 3):                      # talk to every broker by id
            client.request(node, ApiKey.METADATA, {"topics": []})
        versions = consumer.negotiated_versions()
        assert {1, 2, 3} <= set(versions)
        for node in (1, 2, 3):
            b = client.metadata.brokers[node]
            expected = expected_versions(b.host, b.port)
            # the mock refuses ApiVersions v3+ with a malformed body: we fall back to v0
            expected["API_VERSIONS"] = 0
            assert versions[node] == expected


def test_mock_leader_moves_after_broker_down(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("moving", 3)
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, reconnect_backoff_ms=20,
                       reconnect_backoff_max_ms=100, request_timeout_ms=2000) as consumer:
        before = {p.partition: p for p in consumer.partitions_for("moving")}
        old_leader = before[0].leader
        new_leader = next(b for b in (1, 2, 3) if b != old_leader)
        client = consumer._client
        assert client is not None
        # hold a connection to the old leader, then take it down
        client.request(old_leader, ApiKey.METADATA, {"topics": []})
        mock_cluster.broker_down(old_leader)
        mock_cluster.set_partition_leader("moving", 0, new_leader)
        client.metadata.request_update()
        after = {p.partition: p for p in consumer._topic_metadata(["moving"], None)["moving"]}
        assert after[0].leader == new_leader
        assert after[1] == before[1] and after[2] == before[2]
        if before[0].leader_epoch is not None:
            assert after[0].leader_epoch is not None and after[0].leader_epoch > before[0].leader_epoch
        # the mock no longer lists the downed broker; a request to it fails, clearly
        assert sorted(client.metadata.brokers) == sorted({1, 2, 3} - {old_leader})
        fut = client.send(old_leader, ApiKey.METADATA, {"topics": []})
        assert fut.failed()
        assert str(fut.exception) == f"node {old_leader} is not a known broker"


def test_mock_unknown_topic(mock_cluster: MockCluster) -> None:
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap,
                       allow_auto_create_topics=False) as consumer:
        assert consumer.partitions_for_topic("nope") is None
