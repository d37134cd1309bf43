"""SASL against a real broker: Tansu behind :class:`~pyconsumer.testing.SaslProxy`, a SASL
listener that checks PLAIN passwords and SCRAM proofs (scramp's server side) itself.

Tansu 0.6 has ``--authentication`` (SCRAM users created with ``tansu user create``), but its
users live in the storage engine and the wheel's build has only the memory engine: a user can
only be created on a broker without authentication and is lost on restart, so Tansu cannot
authenticate anyone here. noida-db's Kafka has no SASL. Hence the proxy.

The records are produced by confluent-kafka through the same proxy with the same mechanism,
so the proxy is checked against an independent SASL client (librdkafka) too.
"""
from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import SaslAuthenticationError
from pyconsumer.testing import (
    TANSU_NODE_ID,
    SaslProxy,
    TansuBroker,
    TestRecord,
    produce,
    sample_records,
)

CERTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "certs")
CA = os.path.join(CERTS, "ca.pem")
USERS = {"alice": "alice-Secret-1", "bob": "bob-Secret-2"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

Row = tuple[int, bytes | None, bytes | None]


def server_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(CERTS, "broker.pem"), os.path.join(CERTS, "broker.key"))
    return ctx


@pytest.fixture
def proxy_factory(tansu: TansuBroker) -> Iterator[Callable[..., SaslProxy]]:
    made: list[SaslProxy] = []

    def make(**kwargs: Any) -> SaslProxy:
        kwargs.setdefault("users", USERS)
        proxy = SaslProxy(tansu.bootstrap, lifetime=120.0, **kwargs).start()
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        proxy.close()


def sasl_settings(mechanism: str, user: str = "alice", password: str | None = None,
                  tls: bool = False, **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "security_protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism, "sasl_username": user,
        "sasl_password": USERS[user] if password is None else password,
        "auto_offset_reset": "earliest", "request_timeout_ms": 5000,
        "default_api_timeout_ms": 5000, "fetch_max_wait_ms": 100,
    }
    if tls:
        settings["ssl_truststore_location"] = CA
    settings.update(extra)
    return settings


def produce_via(proxy: SaslProxy, topic: str, records: list[TestRecord], mechanism: str,
                tls: bool = False) -> list[tuple[int, int]]:
    """confluent-kafka (librdkafka's SASL client) through the proxy."""
    conf: dict[str, Any] = {"security.protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT",
                            "sasl.mechanism": mechanism, "sasl.username": "bob",
                            "sasl.password": USERS["bob"]}
    if tls:
        conf["ssl.ca.location"] = CA
    return produce(proxy.bootstrap, topic, records, **conf)


def expected_rows(topic: str, records: list[TestRecord], delivered: list[tuple[int, int]]
                  ) -> dict[TopicPartition, list[Row]]:
    out: dict[TopicPartition, list[Row]] = {}
    for rec, (partition, offset) in zip(records, delivered):
        out.setdefault(TopicPartition(topic, partition), []).append((offset, rec.key, rec.value))
    return {tp: sorted(rows) for tp, rows in out.items()}


def consume(consumer: KafkaConsumer, count: int, timeout: float = 15.0
            ) -> dict[TopicPartition, list[Row]]:
    got: dict[TopicPartition, list[Row]] = {}
    n = 0
    deadline = time.monotonic() + timeout
    while n < count and time.monotonic() < deadline:
        for tp, recs in consumer.poll(timeout_ms=200).items():
            got.setdefault(tp, []).extend((r.offset, r.key, r.value) for r in recs)
            n += len(recs)
    return got


# --------------------------------------------------------------------------- success


@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_consume_exact_records_over_sasl(proxy_factory: Callable[..., SaslProxy],
                                         make_tansu_topic: Callable[..., str],
                                         mechanism: str, tls: bool) -> None:
    proxy = proxy_factory(ssl_context=server_context() if tls else None)
    topic = make_tansu_topic(2)
    records = sample_records(120, partitions=2, seed=len(mechanism) + tls)
    expected = expected_rows(topic, records, produce_via(proxy, topic, records, mechanism, tls))
    produced_users = proxy.sasl_stats.users
    assert produced_users and set(produced_users) == {(mechanism, "bob")}
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap, **sasl_settings(mechanism, tls=tls)) as c:
        c.assign(sorted(expected))
        assert consume(c, 120) == expected
        assert c.poll(timeout_ms=200) == {}
        client = c._client
        assert client is not None
        conns = [client.connection(n.node_id) for n in client.ready_nodes()]
        assert conns and all(x is not None and x.sasl_authentications == 1 for x in conns)
        if tls:
            assert all(x is not None and isinstance(x.sock, ssl.SSLSocket) for x in conns)
    stats = proxy.sasl_stats
    ours = stats.users[len(produced_users):]
    # each of our connections authenticated once as alice, and nothing got through without
    assert ours and set(ours) == {(mechanism, "alice")}
    assert (stats.failures, stats.unauthenticated_requests, stats.unsupported) == (0, 0, 0)


def test_group_consumer_over_sasl_uses_an_authenticated_coordinator_connection(
        proxy_factory: Callable[..., SaslProxy], make_tansu_topic: Callable[..., str]) -> None:
    proxy = proxy_factory()
    topic = make_tansu_topic(2)
    records = sample_records(60, partitions=2, seed=7)
    expected = expected_rows(topic, records, produce_via(proxy, topic, records, "SCRAM-SHA-512"))
    before = len(proxy.sasl_stats.users)
    with KafkaConsumer(topic, bootstrap_servers=proxy.bootstrap, group_id=f"g-{topic}",
                       session_timeout_ms=2000, heartbeat_interval_ms=300,
                       **sasl_settings("SCRAM-SHA-512")) as c:
        assert consume(c, 60, timeout=30.0) == expected
        c.commit()
        committed = c.committed(set(expected))
        assert {tp: om.offset for tp, om in committed.items() if om is not None} == {
            tp: rows[-1][0] + 1 for tp, rows in expected.items()}
        client = c._client
        assert client is not None
        # the coordinator has a connection of its own (node id Integer.MAX_VALUE - broker
        # id, as in Java), authenticated like the others
        coordinator = [n for n in client.ready_nodes() if n.node_id > TANSU_NODE_ID]
        assert coordinator, client.ready_nodes()
        conn = client.connection(coordinator[0].node_id)
        assert conn is not None and conn.sasl_authentications == 1
    stats = proxy.sasl_stats
    assert len(stats.users) - before >= 3           # bootstrap, leader, coordinator
    assert (stats.failures, stats.unauthenticated_requests) == (0, 0)


def test_handshake_v0_raw_tokens(proxy_factory: Callable[..., SaslProxy],
                                 make_tansu_topic: Callable[..., str]) -> None:
    """A listener that speaks only SaslHandshake v0: the tokens go as raw frames."""
    proxy = proxy_factory(handshake_max_version=0)
    topic = make_tansu_topic(1)
    records = sample_records(30, partitions=1, seed=3)
    expected = expected_rows(topic, records, produce(proxy_factory().bootstrap, topic, records,
                                                     **{"security.protocol": "SASL_PLAINTEXT",
                                                        "sasl.mechanism": "PLAIN",
                                                        "sasl.username": "bob",
                                                        "sasl.password": USERS["bob"]}))
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap,
                       **sasl_settings("SCRAM-SHA-256")) as c:
        c.assign(sorted(expected))
        assert consume(c, 30) == expected
    assert proxy.sasl_stats.users and set(proxy.sasl_stats.users) == {("SCRAM-SHA-256", "alice")}


# --------------------------------------------------------------------------- failures


def failing_consumer_run(proxy: SaslProxy, settings: dict[str, Any], topic: str,
                         seconds: float = 2.0) -> tuple[SaslAuthenticationError, float, int, int]:
    """(the first error, seconds until it, errors raised, connection attempts at the proxy)
    over ``seconds`` of a consumer that polls on regardless (as an application loop would)."""
    start = time.monotonic()
    first: SaslAuthenticationError | None = None
    first_at = 0.0
    raised = 0
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap, **settings) as c:
        c.assign([TopicPartition(topic, 0)])
        while time.monotonic() - start < seconds:
            try:
                c.poll(timeout_ms=100)
            except SaslAuthenticationError as e:
                raised += 1
                if first is None:
                    first, first_at = e, time.monotonic() - start
    assert first is not None, "no SaslAuthenticationError"
    return first, first_at, raised, proxy.stats.connections


@pytest.mark.parametrize("mechanism,user,password,words", [
    ("PLAIN", "alice", "wrong-password",
     "SASL PLAIN authentication with node -1 (127.0.0.1:{port}) failed: Authentication "
     "failed: Invalid username or password"),
    ("PLAIN", "mallory", "whatever-pw",
     "SASL PLAIN authentication with node -1 (127.0.0.1:{port}) failed: Authentication "
     "failed: Invalid username or password"),
    ("SCRAM-SHA-256", "alice", "wrong-password",
     "SASL SCRAM-SHA-256 authentication with node -1 (127.0.0.1:{port}) failed: Authentication "
     "failed during authentication due to invalid credentials with SASL mechanism "
     "SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "mallory", "whatever-pw",
     "SASL SCRAM-SHA-512 authentication with node -1 (127.0.0.1:{port}) failed: Authentication "
     "failed during authentication due to invalid credentials with SASL mechanism "
     "SCRAM-SHA-512"),
], ids=["plain-wrong-password", "plain-unknown-user", "scram256-wrong-password",
        "scram512-unknown-user"])
def test_bad_credentials_fail_promptly_without_a_retry_storm(
        proxy_factory: Callable[..., SaslProxy], tansu_topic: str, caplog: pytest.LogCaptureFixture,
        mechanism: str, user: str, password: str, words: str) -> None:
    proxy = proxy_factory()
    settings = sasl_settings(mechanism, user=user, password=password,
                             reconnect_backoff_ms=200, reconnect_backoff_max_ms=1000)
    with caplog.at_level(logging.DEBUG, logger="pyconsumer"):
        error, at, raised, attempts = failing_consumer_run(proxy, settings, tansu_topic)
    assert str(error) == words.format(port=proxy.port)
    assert at < 1.0, f"first error after {at:.2f} s"
    # the reconnect backoff paces the attempts (200, 400, 800 ms...): a handful, not a storm
    assert 2 <= attempts <= 5, attempts
    assert 1 <= raised <= attempts
    assert proxy.sasl_stats.authentications == 0 and proxy.sasl_stats.failures == attempts
    # the password is in no error and no log line
    assert password not in str(error) and password not in repr(error)
    assert caplog.records and not any(password in r.getMessage() for r in caplog.records)


def test_unsupported_mechanism_names_the_enabled_ones(
        proxy_factory: Callable[..., SaslProxy], tansu_topic: str) -> None:
    proxy = proxy_factory(enabled=("PLAIN", "SCRAM-SHA-256"))
    settings = sasl_settings("SCRAM-SHA-512", reconnect_backoff_ms=200,
                             reconnect_backoff_max_ms=1000)
    error, at, raised, attempts = failing_consumer_run(proxy, settings, tansu_topic)
    assert str(error) == (
        f"SASL mechanism SCRAM-SHA-512 (sasl.mechanism) is not enabled on node -1 "
        f"(127.0.0.1:{proxy.port}); the broker enables: PLAIN, SCRAM-SHA-256")
    assert at < 1.0 and 2 <= attempts <= 5 and proxy.sasl_stats.unsupported == attempts


def test_metadata_calls_raise_the_authentication_error(
        proxy_factory: Callable[..., SaslProxy], tansu_topic: str) -> None:
    proxy = proxy_factory()
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap,
                       **sasl_settings("SCRAM-SHA-256", password="nope-nope")) as c:
        start = time.monotonic()
        with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
            c.partitions_for_topic(tansu_topic)
        assert time.monotonic() - start < 1.5
        with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
            c.topics()
    assert proxy.stats.connections <= 3


def test_v0_refusal_is_a_close_reported_as_authentication_failure(
        proxy_factory: Callable[..., SaslProxy], tansu_topic: str) -> None:
    proxy = proxy_factory(handshake_max_version=0)
    settings = sasl_settings("PLAIN", password="wrong-password", reconnect_backoff_ms=200,
                             reconnect_backoff_max_ms=1000)
    error, at, _, attempts = failing_consumer_run(proxy, settings, tansu_topic)
    assert str(error) == (
        f"node -1 (127.0.0.1:{proxy.port}) closed the connection during SASL PLAIN "
        f"authentication (SaslHandshake v0 gives no reason; most likely the credentials were "
        f"refused)")
    assert at < 1.0 and 2 <= attempts <= 5


# --------------------------------------------------------------------------- KIP-368


def test_reauthentication_before_the_session_expires_while_records_flow(
        proxy_factory: Callable[..., SaslProxy], make_tansu_topic: Callable[..., str]) -> None:
    """Session lifetime 1.2 s; for ~4.5 s records are produced in rounds and consumed: every
    connection re-authenticates in place (no new connection, no request after expiry, no SASL
    exchange with a request outstanding) and every record arrives once, in order."""
    lifetime_ms = 1200
    proxy = proxy_factory(session_lifetime_ms=lifetime_ms)
    topic = make_tansu_topic(1)
    tp = TopicPartition(topic, 0)
    got: list[Row] = []
    expected: list[Row] = []
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap,
                       **sasl_settings("SCRAM-SHA-256", fetch_max_wait_ms=200)) as c:
        c.assign([tp])
        connections = -1
        for rnd in range(9):
            records = [TestRecord(key=f"k{rnd}-{i}".encode(), value=f"v{rnd}-{i}".encode(),
                                  partition=0) for i in range(10)]
            delivered = produce(proxy_factory().bootstrap, topic, records, **{
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": "bob", "sasl.password": USERS["bob"]})
            expected += [(o, r.key, r.value) for r, (_, o) in zip(records, delivered)]
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                got += [(r.offset, r.key, r.value) for r in c.poll(timeout_ms=100).get(tp, [])]
            if rnd == 0:
                assert got == expected            # the leader's connection is up by now
                connections = proxy.stats.connections
        got += consume(c, len(expected) - len(got), timeout=5.0).get(tp, [])
        client = c._client
        assert client is not None
        leader = client.connection(TANSU_NODE_ID)
        assert leader is not None
        reauths = leader.sasl_reauthentications
    assert got == expected
    stats = proxy.sasl_stats
    assert proxy.stats.connections == connections      # re-authenticated in place
    assert (stats.expired_requests, stats.interleaved, stats.failures) == (0, 0, 0)
    assert reauths >= 3, reauths                        # ~4.5 s / (0.85..0.95 * 1.2 s)
    assert stats.reauthentications >= reauths
    # each re-authentication of a connection came before its session ran out
    assert leader.sasl_session_lifetime_ms == lifetime_ms


# --------------------------------------------------------------------------- a real refusal


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_tansu_with_authentication_refuses_an_unknown_scram_user(mechanism: str) -> None:
    """Tansu's own SCRAM server (``--authentication``; no user can exist, see the module
    doc): its ``e=unknown-user`` server-final is an authentication error at once, and the
    consumer does not hammer the broker."""
    with TansuBroker(authentication=True) as broker:
        with KafkaConsumer(bootstrap_servers=broker.bootstrap,
                           **sasl_settings(mechanism, reconnect_backoff_ms=200,
                                           reconnect_backoff_max_ms=1000)) as c:
            start = time.monotonic()
            with pytest.raises(SaslAuthenticationError) as info:
                c.topics()
            assert time.monotonic() - start < 1.0
            assert str(info.value) == (
                f"SASL {mechanism} authentication with node -1 ({broker.bootstrap}) failed: "
                f"The server returned an error: unknown-user")
            client = c._client
            assert client is not None
            conn = client.connection(-1)
            assert conn is not None and conn.sasl_authentications == 0


def test_a_sasl_client_against_a_listener_without_sasl(tansu: TansuBroker) -> None:
    """Tansu without --authentication answers SaslHandshake with UNSUPPORTED_SASL_MECHANISM
    (listing the very mechanism asked for): a prompt authentication error that says so."""
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, **sasl_settings("PLAIN")) as c:
        start = time.monotonic()
        with pytest.raises(SaslAuthenticationError) as info:
            c.topics()
        assert time.monotonic() - start < 1.0
    assert str(info.value) == (
        f"SASL mechanism PLAIN (sasl.mechanism) is not enabled on node -1 ({tansu.bootstrap}); "
        f"the broker enables: PLAIN (it lists the mechanism yet refuses it: is SASL enabled on "
        f"this listener?)")
