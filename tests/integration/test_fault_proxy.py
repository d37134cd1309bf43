"""The TCP fault proxy of pyconsumer.testing against Tansu: what it forwards, how each fault
looks to the client (the exact error), and that it stops by itself."""
from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import KafkaTimeoutError
from pyconsumer.net.client import NetworkClient, metadata_request_body
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import BrokerInfo
from pyconsumer.testing import FaultProxy, TansuBroker, produce, sample_records


def client_for(bootstrap: str, **settings: Any) -> NetworkClient:
    return NetworkClient(ConsumerConfig(bootstrap_servers=bootstrap, **settings))


def metadata_body(topic: str) -> Callable[[int], dict[str, Any]]:
    return lambda version: metadata_request_body(version, [topic], False)


def test_metadata_through_the_proxy_names_the_proxy(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(2)
    with FaultProxy(tansu.bootstrap) as proxy:
        via, direct = client_for(proxy.bootstrap), client_for(tansu.bootstrap)
        try:
            md, straight = via.update_metadata([topic]), direct.update_metadata([topic])
            assert md.brokers == {111: BrokerInfo(111, "127.0.0.1", proxy.port, None)}
            assert straight.brokers == {111: BrokerInfo(111, "127.0.0.1", tansu.port, None)}
            # the rest of the answer is what the broker said
            assert md.partitions_for(topic) == straight.partitions_for(topic)
            assert md.cluster_id == straight.cluster_id
            assert via.negotiated_versions(-1) == direct.negotiated_versions(-1)
            # later requests to node 111 go through the proxy too
            assert via.request(111, ApiKey.METADATA, metadata_body(topic)).node_id == 111
            assert via.connection(111).node.port == proxy.port  # type: ignore[union-attr]
            assert proxy.stats.rewritten == 2 and proxy.stats.connections == 2
        finally:
            via.close()
            direct.close()


def test_stalls_shorter_and_longer_than_the_request_timeout(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    with FaultProxy(tansu.bootstrap) as proxy:
        client = client_for(proxy.bootstrap, request_timeout_ms=600)
        try:
            client.update_metadata([topic])
            proxy.stall(0.3)                            # shorter: the answer is only late
            started = time.monotonic()
            assert client.request(111, ApiKey.METADATA, metadata_body(topic)).body["topics"][0]["name"] == topic
            assert 0.25 <= time.monotonic() - started < 0.6
            proxy.stall(1.5)                            # longer: the request times out
            started = time.monotonic()
            with pytest.raises(KafkaTimeoutError, match=(
                    r"^METADATA v\d+ to node 111 \(127\.0\.0\.1:\d+\) got no answer within "
                    r"request\.timeout\.ms \(correlation id \d+\); disconnecting$")):
                client.request(111, ApiKey.METADATA, metadata_body(topic))
            assert 0.55 <= time.monotonic() - started < 1.2
            time.sleep(1.0)                             # the stall ends
            assert client.update_metadata([topic]).partitions_for(topic) is not None
            assert proxy.stats.stalls == 2
        finally:
            client.close()


def test_delay_holds_both_directions(tansu: TansuBroker,
                                     make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    with FaultProxy(tansu.bootstrap) as proxy:
        client = client_for(proxy.bootstrap)
        try:
            client.update_metadata([topic])
            proxy.delay(0.2, duration=3.0)
            started = time.monotonic()
            client.request(111, ApiKey.METADATA, metadata_body(topic))
            assert 0.4 <= time.monotonic() - started < 1.0   # request and answer held 0.2 s
        finally:
            client.close()


def test_drop_mid_frame_cuts_a_fetch_response_and_the_consumer_goes_on(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    tp = TopicPartition(topic, 0)
    records = sample_records(400, partitions=[0], seed=87)
    produce(tansu.bootstrap, topic, records[:200])
    got: list[tuple[int, bytes | None, bytes | None]] = []
    with FaultProxy(tansu.bootstrap) as proxy, KafkaConsumer(
            bootstrap_servers=proxy.bootstrap, auto_offset_reset="earliest",
            fetch_max_wait_ms=200, reconnect_backoff_ms=50) as consumer:
        consumer.assign([tp])
        deadline = time.monotonic() + 20
        while len(got) < 200 and time.monotonic() < deadline:
            got += [(r.offset, r.key, r.value) for r in consumer.poll(timeout_ms=200).get(tp, [])]
        # caught up: the next Fetch waits at the broker; its (empty) answer is cut in two
        proxy.drop(mid_frame=True)
        assert consumer.poll(timeout_ms=600) == {}
        client = consumer._client
        assert client is not None
        conn = client.connection(111)
        assert conn is not None
        m = re.fullmatch(r"node 111 \(127\.0\.0\.1:\d+\) closed the connection after (\d+) of "
                         r"(\d+) bytes of a response frame \(truncated frame\)",
                         str(conn.last_error))
        assert m is not None, conn.last_error
        filled, size = int(m[1]), int(m[2])
        assert filled == 4 + (size - 4) // 2              # the proxy's cut: half the body
        assert proxy.stats.mid_frame_cuts == 1
        produce(tansu.bootstrap, topic, records[200:])
        deadline = time.monotonic() + 20
        while len(got) < 400 and time.monotonic() < deadline:
            got += [(r.offset, r.key, r.value) for r in consumer.poll(timeout_ms=200).get(tp, [])]
    assert got == [(i, r.key, r.value) for i, r in enumerate(records)]


def test_the_proxy_stops_by_itself(tansu: TansuBroker) -> None:
    proxy = FaultProxy(tansu.bootstrap, lifetime=0.5).start()
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=2):
        pass
    time.sleep(1.2)
    assert proxy.open_connections == 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
    proxy.close()                                         # harmless after the end
    proxy.close()
