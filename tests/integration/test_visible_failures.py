"""Failures a user can see: what the consumer says, how fast, and at which log level.

* Bootstrap servers that all refuse the connection fail a metadata call (topics(),
  partitions_for(), ...) at once with NoBrokersAvailable naming each address and its error,
  not after default.api.timeout.ms; a server that is merely slow is still waited for.
* A bootstrap list nobody answers is a WARNING once per round over all of its servers (each
  attempt stays at INFO).
* An assigned partition the cluster does not have is a WARNING per metadata answer, and the
  consumer keeps asking (it reads the partition once it exists).
* TLS against a plaintext listener and plaintext against a TLS listener are named as such.
* bootstrap.resolve.timeout.ms: 0 resolves the hosts when the consumer is built; > 0 looks
  them up on first use for at most that long, then fails for good (KIP-909).

Refused ports, scripted peers (tests/peers.py), the in-process FakeCluster and Tansu.
"""
from __future__ import annotations

import logging
import os
import re
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import ConfigurationError, KafkaTimeoutError, NoBrokersAvailable
from pyconsumer.net import NetworkClient
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FakeCluster, TansuBroker, free_port

from tests.peers import PeerConnection, ScriptedPeer

TP = TopicPartition
CERTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "certs")
TLS: dict[str, Any] = {"security_protocol": "SSL",
                       "ssl_truststore_location": os.path.join(CERTS, "ca.pem")}
NO_TLS_ANSWER = ("the TLS handshake got no answer: is security.protocol=SSL right for this "
                 "listener? (a plaintext Kafka listener takes the handshake for the start of a "
                 "huge request and waits for the rest)")


def refused(port: int, node: int) -> str:
    return (f"cannot connect to node {node} (127.0.0.1:{port}) at 127.0.0.1:{port}: "
            f"ECONNREFUSED (Connection refused)")


def server_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(CERTS, "broker.pem"), os.path.join(CERTS, "broker.key"))
    return ctx


def timed(fn: Callable[[], Any]) -> tuple[BaseException, float]:
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        fn()
    return info.value, time.monotonic() - started


# ----------------------------------------------------------------------------- refused: fast

CALLS: dict[str, Callable[[KafkaConsumer], Any]] = {
    "topics": lambda c: c.topics(),
    "list_topics": lambda c: c.list_topics(),
    "partitions_for": lambda c: c.partitions_for("t"),
    "partitions_for_topic": lambda c: c.partitions_for_topic("t"),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_bootstrap_server_refusing_fails_at_once(call: str) -> None:
    """Nothing listens on either port: with default.api.timeout.ms=30 s the call fails in
    well under a second (it waited the whole 30 s before), naming both addresses."""
    p1, p2 = free_port(), free_port()
    with KafkaConsumer(bootstrap_servers=f"127.0.0.1:{p1},127.0.0.1:{p2}",
                       default_api_timeout_ms=30_000) as c:
        error, took = timed(lambda: CALLS[call](c))
    assert isinstance(error, NoBrokersAvailable)
    assert str(error) == (f"every bootstrap server refused the connection (127.0.0.1:{p1}, "
                          f"127.0.0.1:{p2}): {refused(p1, -1)}; {refused(p2, -2)}")
    assert took < 1.0, f"{took:.2f} s"


def test_the_network_client_fails_at_once_too_and_again_on_the_next_call() -> None:
    port = free_port()
    client = NetworkClient(ConsumerConfig(bootstrap_servers=f"127.0.0.1:{port}",
                                          reconnect_backoff_ms=50))
    try:
        for _ in range(2):      # the second call tries again (after the reconnect backoff)
            error, took = timed(lambda: client.update_metadata(timeout_ms=30_000))
            assert isinstance(error, NoBrokersAvailable)
            assert str(error) == (f"every bootstrap server refused the connection "
                                  f"(127.0.0.1:{port}): {refused(port, -1)}")
            assert took < 1.0
        conn = client.connection(-1)
        assert conn is not None and conn.failures == 2
    finally:
        client.close()


def slow_broker(delay: float) -> Callable[[PeerConnection], None]:
    def script(conn: PeerConnection) -> None:
        time.sleep(delay)
        conn.answer_api_versions()
        conn.serve({ApiKey.METADATA: lambda version, body: conn.one_partition_metadata("t")})
    return script


def test_a_slow_bootstrap_server_is_waited_for_while_the_other_refuses() -> None:
    port = free_port()
    with ScriptedPeer([slow_broker(0.4)]) as peer:
        with KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port},{peer.bootstrap}",
                           default_api_timeout_ms=5000) as c:
            started = time.monotonic()
            assert list(c.topics()) == ["t"]
            assert time.monotonic() - started >= 0.35


def test_a_silent_bootstrap_server_is_waited_for_until_the_timeout() -> None:
    """A timeout is not a refusal: the call waits its whole timeout. (Which server is tried
    first is random, as in Java; the short setup timeout makes both be tried either way.)"""
    port = free_port()
    with ScriptedPeer([lambda conn: conn.hold()]) as peer:
        with KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port},{peer.bootstrap}",
                           socket_connection_setup_timeout_ms=300,
                           socket_connection_setup_timeout_max_ms=300) as c:
            error, took = timed(lambda: c.topics(timeout_ms=1000))
    assert isinstance(error, NoBrokersAvailable)
    text = str(error)
    assert text.startswith(f"no broker of 127.0.0.1:{port}, {peer.bootstrap} could be reached "
                           f"within 1000 ms (")
    assert f"node -1: {refused(port, -1)}" in text
    assert (f"node -2: node -2 ({peer.bootstrap}) disconnected: connection setup to node -2 "
            f"({peer.bootstrap}) did not finish within socket.connection.setup.timeout.ms=300 "
            f"(negotiating)") in text
    assert 0.95 <= took < 3.0


# ----------------------------------------------------------------------------- warnings


def test_an_unreachable_bootstrap_list_is_one_warning_per_round(
        caplog: pytest.LogCaptureFixture) -> None:
    """The metadata refresh tries one server after the other (the one that just failed is
    still in its reconnect backoff at the next refresh, so both are tried at once)."""
    p1, p2 = free_port(), free_port()
    started, wall = time.monotonic(), time.time()
    with caplog.at_level(logging.INFO, logger="pyconsumer"):
        with KafkaConsumer(bootstrap_servers=f"127.0.0.1:{p1},127.0.0.1:{p2}",
                           reconnect_backoff_ms=300, reconnect_backoff_max_ms=1000) as c:
            c.assign([TP("t", 0)])
            while time.monotonic() - started < 1.5:
                assert c.poll(timeout_ms=100) == {}
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    attempts = {node: sum(1 for r in caplog.records if r.name == "pyconsumer.net.connection"
                          and r.getMessage().startswith(f"node {node} (127.0.0.1:{port}): "
                                                        f"{refused(port, node)}"))
                for node, port in ((-1, p1), (-2, p2))}
    pattern = re.compile(
        rf"cannot connect to any of bootstrap.servers \(127.0.0.1:{p1}, 127.0.0.1:{p2}\); "
        rf"retrying: {re.escape(refused(p1, -1))}; {re.escape(refused(p2, -2))}")
    assert warnings, "no WARNING while no bootstrap server could be reached"
    for r in warnings:
        assert r.name == "pyconsumer.net.client" and pattern.fullmatch(r.getMessage()), \
            r.getMessage()
    # one per round over both servers: never one per attempt
    assert len(warnings) <= min(attempts.values()), (len(warnings), attempts)
    assert len(warnings) < sum(attempts.values())
    assert warnings[0].created - wall < 0.5


def test_an_assigned_partition_that_does_not_exist_is_a_warning_per_metadata_answer(
        caplog: pytest.LogCaptureFixture) -> None:
    with FakeCluster(1, topics={"t": 2}) as cluster:
        cluster.produce(TP("t", 0), [(b"k0", b"v0"), (b"k1", b"v1")])
        with caplog.at_level(logging.WARNING, logger="pyconsumer"):
            with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                               retry_backoff_ms=50, retry_backoff_max_ms=200,
                               fetch_max_wait_ms=100) as c:
                c.assign([TP("t", 0), TP("t", 5), TP("nowhere", 0)])
                got: list[tuple[TopicPartition, int, bytes | None]] = []
                end = time.monotonic() + 1.2
                while time.monotonic() < end:
                    for tp, records in c.poll(timeout_ms=100).items():
                        got += [(tp, r.offset, r.value) for r in records]
                assert got == [(TP("t", 0), 0, b"v0"), (TP("t", 0), 1, b"v1")]
                asked = len(cluster.requests_of(ApiKey.METADATA))
                messages = [r.getMessage() for r in caplog.records]
                # the consumer keeps asking: once the topic exists it reads it
                cluster.create_topic("nowhere", 1)
                cluster.produce(TP("nowhere", 0), [(None, b"late")])
                caplog.clear()
                end = time.monotonic() + 5
                while not got[2:] and time.monotonic() < end:
                    for tp, records in c.poll(timeout_ms=100).items():
                        got += [(tp, r.offset, r.value) for r in records]
                assert got[2:] == [(TP("nowhere", 0), 0, b"late")]
                caplog.clear()
                end = time.monotonic() + 0.6
                while time.monotonic() < end:
                    assert c.poll(timeout_ms=100) == {}
                later = [r.getMessage() for r in caplog.records]
        assert cluster.errors == []
    t5 = "partition t-5 does not exist in the metadata (topic t has 2 partitions); retrying"
    gone = "partition nowhere-0 does not exist in the metadata (no topic nowhere); retrying"
    assert set(messages) == {t5, gone}
    # once per metadata answer, not per poll; the answers kept coming (metadata retried)
    assert asked >= 4
    assert 3 <= messages.count(t5) <= asked and messages.count(gone) == messages.count(t5)
    assert later and set(later) == {t5}          # nowhere-0 exists now: no more warnings


# ----------------------------------------------------------------------------- TLS vs plaintext


def test_tls_against_a_peer_answering_plaintext_is_named_and_fails_at_once() -> None:
    def plaintext_answer(conn: PeerConnection) -> None:
        conn.sock.recv(10)
        conn.sock.sendall(b"\x00\x00\x00\x04abcd")

    with ScriptedPeer([plaintext_answer]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, default_api_timeout_ms=30_000,
                           **TLS) as c:
            error, took = timed(c.topics)
    assert isinstance(error, NoBrokersAvailable)
    assert str(error).startswith(
        f"every bootstrap server refused the connection ({peer.bootstrap}): TLS handshake with "
        f"node -1 ({peer.bootstrap}) failed: the broker at {peer.bootstrap} answered in "
        f"plaintext to a TLS handshake: is security.protocol=SSL right for this listener? "
        f"([SSL: WRONG_VERSION_NUMBER]")
    assert took < 1.0


def test_tls_against_a_peer_that_closes_names_the_likely_cause() -> None:
    with ScriptedPeer([lambda conn: conn.sock.recv(10)]) as peer:   # reads, then closes
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, **TLS) as c:
            error, _ = timed(lambda: c.topics(timeout_ms=800))
    assert isinstance(error, NoBrokersAvailable)
    # on a loaded machine the deadline may meet a reconnect still in its handshake (the
    # peer has not closed it yet): that attempt is named after the failure
    assert re.fullmatch(
        rf"no broker of {peer.bootstrap} could be reached within 800 ms \(node -1: TLS "
        rf"handshake with node -1 \({peer.bootstrap}\) failed: the broker at {peer.bootstrap} "
        rf"closed the connection without a TLS answer \(.+\): is security.protocol=SSL right "
        rf"for this listener\?(; node -1 \({peer.bootstrap}\): connection still "
        rf"authenticating; the TLS handshake got no answer: .+)?\)", str(error)), str(error)


def test_tls_against_a_real_plaintext_broker_says_the_handshake_got_no_answer(
        tansu: TansuBroker) -> None:
    """Tansu (as Kafka) reads the ClientHello as the length of a huge request and waits."""
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, **TLS) as c:
        error, took = timed(lambda: c.topics(timeout_ms=1000))
    assert isinstance(error, KafkaTimeoutError)
    assert str(error) == (f"metadata not received within 1000 ms (node -1 ({tansu.bootstrap}): "
                          f"connection still authenticating; {NO_TLS_ANSWER})")
    assert 0.95 <= took < 3.0


def test_plaintext_against_a_tls_alert_is_named_and_fails_at_once() -> None:
    def alert(conn: PeerConnection) -> None:
        conn.sock.recv(10)
        conn.sock.sendall(b"\x15\x03\x03\x00\x02\x02\x46")   # fatal alert: protocol_version
        conn.hold()

    with ScriptedPeer([alert]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap,
                           default_api_timeout_ms=30_000) as c:
            error, took = timed(lambda: c.partitions_for("t"))
    assert isinstance(error, NoBrokersAvailable)
    assert str(error) == (
        f"every bootstrap server refused the connection ({peer.bootstrap}): node -1 "
        f"({peer.bootstrap}): the broker at {peer.bootstrap} answered with TLS (a TLS alert "
        f"record) to a plaintext request: is security.protocol=PLAINTEXT right for this "
        f"listener? (a TLS listener needs security.protocol=SSL)")
    assert took < 1.0


def test_plaintext_against_a_tls_listener_that_resets_names_the_likely_cause() -> None:
    with ScriptedPeer([lambda conn: conn.hold()], tls=server_context()) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap) as c:
            error, _ = timed(lambda: c.topics(timeout_ms=800))
    assert isinstance(error, NoBrokersAvailable)
    assert str(error).startswith(f"no broker of {peer.bootstrap} could be reached within 800 ms "
                                 f"(node -1: ")
    assert str(error).endswith(
        " before answering the first request (a TLS or SASL listener closes a plaintext "
        "connection this way: is security.protocol=PLAINTEXT right for this listener?))")


# ----------------------------------------------------------------------------- bootstrap DNS


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """``*.invalid`` does not resolve, ``later.invalid`` resolves to 127.0.0.1 once
    ``state["up"]`` is set; every lookup of a ``.invalid`` name is counted."""
    real = socket.getaddrinfo
    state: dict[str, Any] = {"up": False, "lookups": []}

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".invalid"):
            state["lookups"].append(host)
            if host == "later.invalid" and state["up"]:
                return real("127.0.0.1", port, *args, **kwargs)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield state


def test_no_resolvable_bootstrap_host_fails_at_construction(fake_dns: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        KafkaConsumer(bootstrap_servers="a.invalid:9092,b.invalid:9093")
    assert str(info.value) == (
        "no bootstrap.servers entry resolves: a.invalid:9092 (Name or service not known), "
        "b.invalid:9093 (Name or service not known) (with bootstrap.resolve.timeout.ms > 0 the "
        "consumer would keep trying for that long)")


def test_an_unresolvable_bootstrap_host_is_dropped_with_a_warning(
        fake_dns: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    with FakeCluster(1, topics={"t": 1}) as cluster:
        with caplog.at_level(logging.WARNING, logger="pyconsumer"):
            with KafkaConsumer(bootstrap_servers=f"a.invalid:9092,{cluster.bootstrap}") as c:
                assert fake_dns["lookups"] == ["a.invalid"]      # at construction
                assert list(c.topics(timeout_ms=5000)) == ["t"]
                client = c._client
                assert client is not None
                assert [(n.node_id, n.host, n.port) for n in client.metadata.bootstrap_nodes] \
                    == [(-1, "127.0.0.1", cluster.brokers[0].port)]
        assert [r.getMessage() for r in caplog.records] == [
            "bootstrap.servers: a.invalid:9092 (Name or service not known) did not resolve "
            "and will not be used"]
        assert fake_dns["lookups"] == ["a.invalid"]
        assert cluster.errors == []


def test_a_positive_resolve_timeout_looks_up_on_first_use_then_fails_for_good(
        fake_dns: dict[str, Any]) -> None:
    with KafkaConsumer(bootstrap_servers="a.invalid:9092", bootstrap_resolve_timeout_ms=300,
                       reconnect_backoff_ms=50) as c:
        assert fake_dns["lookups"] == []                       # nothing at construction
        error, took = timed(lambda: c.topics(timeout_ms=5000))
        assert isinstance(error, ConfigurationError)
        assert str(error) == (
            "no bootstrap.servers entry resolved within bootstrap.resolve.timeout.ms=300: "
            "a.invalid:9092 (Name or service not known); this consumer cannot recover: close "
            "it and create a new one once DNS answers or bootstrap.servers is fixed")
        assert 0.28 <= took < 1.0
        assert len(fake_dns["lookups"]) >= 3                   # it kept looking
        again, took = timed(lambda: c.partitions_for("t", timeout_ms=5000))
        assert again is error and took < 0.1


def test_a_positive_resolve_timeout_waits_for_dns(fake_dns: dict[str, Any]) -> None:
    with FakeCluster(1, topics={"t": 1}) as cluster:
        port = cluster.brokers[0].port
        with KafkaConsumer(bootstrap_servers=f"later.invalid:{port}",
                           bootstrap_resolve_timeout_ms=5000, reconnect_backoff_ms=50) as c:
            error, took = timed(lambda: c.partitions_for_topic("t", timeout_ms=300))
            assert isinstance(error, KafkaTimeoutError)
            assert str(error) == (f"metadata not received within 300 ms (no bootstrap.servers "
                                  f"entry resolved yet: later.invalid:{port} (Name or service "
                                  f"not known))")
            fake_dns["up"] = True
            assert c.partitions_for_topic("t", timeout_ms=5000) == {0}
        assert cluster.errors == []
