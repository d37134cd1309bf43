"""Unit tests of how the network layer paces itself after faults: the metadata refresh
backoff (Java ``Metadata.timeToAllowUpdate``), a request to a broker the metadata no longer
lists, a request whose connection fails at once, and the wait of the client's loop while
every broker is in reconnect backoff. Fake clocks; no broker."""
from __future__ import annotations

from collections.abc import Callable

import pytest

from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import KafkaConnectionError
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.metadata import ClusterMetadata
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FakeCluster, free_port


def answer(leader: int = 1, brokers: tuple[int, ...] = (1, 2)) -> dict[str, object]:
    return {"brokers": [{"node_id": b, "host": "h", "port": 9000 + b, "rack": None}
                        for b in brokers],
            "cluster_id": "c", "controller_id": 1,
            "topics": [{"error_code": 0, "name": "t", "topic_id": None, "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": 0,
                                        "leader_id": leader, "leader_epoch": 3,
                                        "replica_nodes": [1], "isr_nodes": [1],
                                        "offline_replicas": []}]}]}


def within(value: float, base: float) -> bool:
    """``value`` is ``base`` give or take the backoff's 20 % jitter."""
    return base * 0.8 - 1e-6 <= value <= base * 1.2 + 1e-6


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000.0


def test_failed_refreshes_back_off_exponentially_up_to_the_maximum() -> None:
    clock = Clock()
    md = ClusterMetadata([("h", 1)], clock=clock, refresh_backoff_ms=100,
                         refresh_backoff_max_ms=1000)
    assert md.time_to_next_update_ms() == 0          # the first attempt goes at once
    for base in (100, 200, 400, 800, 1000, 1000):
        md.failed_update()
        assert md.update_requested()
        wait = md.time_to_next_update_ms()
        assert within(wait, base) and wait <= 1000
        clock.advance_ms(wait)
        assert md.time_to_next_update_ms() == 0
    md.update(answer(), None)                        # success resets the count
    md.request_update()
    assert within(md.time_to_next_update_ms(), 100)
    md.failed_update()
    assert within(md.time_to_next_update_ms(), 100)


def test_a_requested_refresh_waits_retry_backoff_after_the_last_answer() -> None:
    clock = Clock()
    md = ClusterMetadata([("h", 1)], max_age_ms=5000, clock=clock, refresh_backoff_ms=100,
                         refresh_backoff_max_ms=1000)
    md.update(answer(), None)
    assert md.time_to_next_update_ms() == 5000       # not requested: the age decides
    md.request_update()
    first = md.time_to_next_update_ms()
    assert within(first, 100)
    clock.advance_ms(first)
    assert md.time_to_next_update_ms() == 0


def test_answers_that_change_nothing_back_off_and_a_change_resets() -> None:
    clock = Clock()
    md = ClusterMetadata([("h", 1)], max_age_ms=60_000, clock=clock, refresh_backoff_ms=100,
                         refresh_backoff_max_ms=1000)
    md.update(answer(), None)
    waits = []
    for _ in range(7):
        # a caller still missing something (a leader) asks again; the same answer comes back
        md.request_update()
        waits.append(md.time_to_next_update_ms())
        clock.advance_ms(waits[-1])
        md.update(answer(), None)
    # after a useful answer retry.backoff.ms; then it doubles while nothing changes
    for wait, base in zip(waits, (100, 100, 200, 400, 800, 1000, 1000)):
        assert within(wait, base) and wait <= 1000, waits
    md.request_update()
    clock.advance_ms(md.time_to_next_update_ms())
    md.update(answer(leader=2), None)                # the leader moved: progress
    md.request_update()
    assert within(md.time_to_next_update_ms(), 100)


def test_a_periodic_refresh_does_not_count_as_an_unchanged_answer() -> None:
    clock = Clock()
    md = ClusterMetadata([("h", 1)], max_age_ms=1000, clock=clock, refresh_backoff_ms=100,
                         refresh_backoff_max_ms=1000)
    for _ in range(4):
        md.update(answer(), None)
        assert md.time_to_next_update_ms() == 1000
        clock.advance_ms(1000)
    md.update(answer(), None)
    md.request_update()
    assert within(md.time_to_next_update_ms(), 100)


def client_for(bootstrap: str, clock: Clock) -> NetworkClient:
    return NetworkClient(ConsumerConfig(bootstrap_servers=bootstrap, reconnect_backoff_ms=50,
                                        reconnect_backoff_max_ms=1000),
                         clock=clock)


def test_a_send_to_a_broker_no_longer_listed_asks_for_metadata() -> None:
    clock = Clock()
    client = client_for("127.0.0.1:1", clock)
    try:
        client.metadata.update(answer(brokers=(2,)), ["t"])
        assert not client.metadata.update_requested()
        fut = client.send(1, ApiKey.METADATA, {"topics": []})
        assert fut.failed() and str(fut.exception) == "node 1 is not a known broker"
        assert client.metadata.update_requested()
        # asked for, but spaced by retry.backoff.ms from the last answer
        assert within(client.metadata.time_to_next_update_ms(), 100)
    finally:
        client.close()


def test_a_connection_that_fails_at_once_fails_the_request_at_once() -> None:
    client = client_for("no-such-host.invalid:9092", Clock())
    try:
        fut = client.send(-1, ApiKey.METADATA, {"topics": []})
        assert fut.failed()
        assert isinstance(fut.exception, KafkaConnectionError)
        assert str(fut.exception).startswith("cannot resolve node -1 (no-such-host.invalid:9092)")
        assert client.in_flight_count() == 0          # nothing left queued on a closed socket
    finally:
        client.close()


def test_the_loop_sleeps_until_the_first_reconnect_backoff_ends() -> None:
    clock = Clock()
    client = client_for(f"127.0.0.1:{free_port()}", clock)
    try:
        client.metadata_topics = {"t"}
        conn = client._connection(-1)
        conn.failures = 3
        conn.backoff_until = clock.now + 0.4             # in reconnect backoff for 400 ms
        assert client.least_loaded_node() is None
        assert client.metadata.time_to_next_update_ms() == 0      # an update is due
        assert client._poll_wait(clock.now, None, None) == pytest.approx(0.4)
        clock.advance_ms(400)
        assert client.least_loaded_node() == -1
        assert client._poll_wait(clock.now, None, None) == 0.0    # now it can go
    finally:
        client.close()


def test_a_connection_closed_outside_the_client_frees_its_socket_number(
        make_cluster: Callable[..., FakeCluster]) -> None:
    """The coordinator's connection is closed by the coordinator logic when it moves; the next
    socket the OS opens usually gets the same number, and registering it must not fail on the
    closed one's registration (a KeyError from the selector before the fix)."""
    cluster = make_cluster(2)
    client = NetworkClient(ConsumerConfig(bootstrap_servers=cluster.bootstrap))
    try:
        for first, second in ((-1, -2), (-2, -1)):      # the bootstrap nodes
            fut = client.send(first, ApiKey.METADATA, {"topics": []})
            client.poll(timeout_ms=5000, future=fut)
            assert fut.succeeded()
            conn = client.connection(first)
            assert conn is not None
            number = conn.fileno()
            conn.close(KafkaConnectionError("closed by the coordinator logic"))
            fut = client.send(second, ApiKey.METADATA, {"topics": []})
            assert client.connection(second).fileno() == number   # type: ignore[union-attr]
            client.poll(timeout_ms=5000, future=fut)
            assert fut.succeeded()
            client.connection(second).close(  # type: ignore[union-attr]
                KafkaConnectionError("again"))
    finally:
        client.close()
