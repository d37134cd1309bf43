"""Security against real Apache Kafka's own authenticators: SASL PLAIN and SCRAM (the
broker's credential checks and error messages), SSL and mutual TLS (the broker's JSSE),
KIP-368 re-authentication (the broker's ``connections.max.reauth.ms``) and GSSAPI (the
broker's Krb5LoginModule against the MIT KDC of tests/kdc.py).

Records come from confluent-kafka over PLAINTEXT; pyconsumer reads them over the secured
listener and must give back exactly what was written."""
from __future__ import annotations

import re
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import SaslAuthenticationError, SslAuthenticationError
from pyconsumer.testing import KafkaCluster, TestRecord, produce, sample_records
from pyconsumer.testing._kafka import Kerberos

from tests.backends import start_or_skip
from tests.conftest import KAFKA_USERS, unique_topic_name
from tests.kdc import Kdc, ensure_kerberos

pytestmark = pytest.mark.kafka

#: (offset, key, value, headers, timestamp, timestamp type) of one record
Row = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]], int, int]
CREATE_TIME = 0
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


# --------------------------------------------------------------------------- helpers


def private_cluster(**kwargs: Any) -> KafkaCluster:
    """A started private cluster with the session users, skipping (failing under CI) where
    Java, Maven or openssl is missing, as the session fixtures do."""
    return start_or_skip(KafkaCluster(users=KAFKA_USERS, **kwargs))


def produce_expected(bootstrap: str, topic: str, records: list[TestRecord]
                     ) -> dict[TopicPartition, list[Row]]:
    """Produce ``records`` (explicit timestamps) over PLAINTEXT; the rows a consumer must see,
    per partition in offset order."""
    out: dict[TopicPartition, list[Row]] = {}
    for rec, (partition, offset) in zip(records, produce(bootstrap, topic, records)):
        assert rec.timestamp_ms is not None
        out.setdefault(TopicPartition(topic, partition), []).append(
            (offset, rec.key, rec.value, list(rec.headers or []), rec.timestamp_ms, CREATE_TIME))
    return {tp: sorted(rows, key=lambda r: r[0]) for tp, rows in out.items()}


def consume(consumer: KafkaConsumer, count: int, timeout: float = 30.0
            ) -> dict[TopicPartition, list[Row]]:
    """Poll until ``count`` records arrived (or ``timeout`` s passed): rows per partition in
    the order polled."""
    got: dict[TopicPartition, list[Row]] = {}
    n = 0
    deadline = time.monotonic() + timeout
    while n < count and time.monotonic() < deadline:
        for tp, recs in consumer.poll(timeout_ms=200).items():
            got.setdefault(tp, []).extend(
                (r.offset, r.key, r.value, list(r.headers), r.timestamp, r.timestamp_type)
                for r in recs)
            n += len(recs)
    return got


def sasl(mechanism: str, password: str = KAFKA_USERS["alice"], **extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
        "sasl_username": "alice", "sasl_password": password, "auto_offset_reset": "earliest",
        "fetch_max_wait_ms": 100, "request_timeout_ms": 10000, "default_api_timeout_ms": 10000,
        "reconnect_backoff_ms": 200, "reconnect_backoff_max_ms": 1000}
    settings.update(extra)
    return settings


def ready_connections(consumer: KafkaConsumer) -> list[Any]:
    client = consumer._client
    assert client is not None
    conns = [client.connection(n.node_id) for n in client.ready_nodes()]
    assert conns and all(c is not None for c in conns)
    return conns


def consume_exactly(cluster: KafkaCluster, topic: str, settings: Mapping[str, Any],
                    n: int = 60, partitions: int = 2, seed: int = 0) -> KafkaConsumer:
    """Produce ``n`` sample records, read them all with a consumer of ``settings`` (which the
    caller closes), exactly, and nothing more."""
    expected = produce_expected(cluster.bootstrap_servers, topic,
                                sample_records(n, partitions=partitions, seed=seed))
    c = KafkaConsumer(**settings)
    try:
        c.assign(sorted(expected))
        assert consume(c, n) == expected
        assert c.poll(timeout_ms=300) == {}
    except BaseException:
        c.close()
        raise
    return c


# --------------------------------------------------------------------------- SASL PLAIN / SCRAM


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl_consumes_exact_records(kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
                                     mechanism: str) -> None:
    """PLAIN and both SCRAMs pass Kafka's own authenticator, once per connection, and the
    records come back exactly (offsets, keys, values, headers, timestamps, types)."""
    topic = make_kafka_topic(2)
    settings = kafka.client_settings("SASL_PLAINTEXT", **sasl(mechanism))
    with consume_exactly(kafka, topic, settings, seed=len(mechanism)) as c:
        conns = ready_connections(c)
        assert [(x.sasl_authentications, x.sasl_reauthentications) for x in conns] == \
            [(1, 0)] * len(conns)
        # the broker's default connections.max.reauth.ms=0: no session lifetime, no re-auth
        assert {x.sasl_session_lifetime_ms for x in conns} == {0}


@pytest.mark.parametrize("mechanism,message", [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "Authentication failed during authentication due to invalid credentials "
                      "with SASL mechanism SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "Authentication failed during authentication due to invalid credentials "
                      "with SASL mechanism SCRAM-SHA-512"),
])
def test_a_wrong_password_raises_kafkas_message(kafka: KafkaCluster, kafka_topic: str,
                                                mechanism: str, message: str) -> None:
    """A wrong password: the bounded metadata call raises SaslAuthenticationError carrying
    the broker's own message (not a timeout, not a hang), and the password is nowhere in it."""
    bootstrap = kafka.listener("SASL_PLAINTEXT")
    settings = kafka.client_settings("SASL_PLAINTEXT",
                                     **sasl(mechanism, password="not-alices-password",
                                            default_api_timeout_ms=5000))
    with KafkaConsumer(**settings) as c:
        with pytest.raises(SaslAuthenticationError) as info:
            c.partitions_for_topic(kafka_topic)
    assert str(info.value) == (f"SASL {mechanism} authentication with node -1 ({bootstrap}) "
                               f"failed: {message}")
    assert "not-alices-password" not in repr(info.value)


def test_a_mechanism_the_listener_does_not_enable(kafka: KafkaCluster, kafka_topic: str) -> None:
    """OAUTHBEARER against the PLAIN/SCRAM listener: Kafka refuses the handshake and the
    error names the mechanism, the setting and what the broker enables."""
    bootstrap = kafka.listener("SASL_PLAINTEXT")
    settings = kafka.client_settings(
        "SASL_PLAINTEXT", **sasl("OAUTHBEARER", sasl_username=None, sasl_password=None,
                                 sasl_oauth_token_provider=lambda: "token",
                                 default_api_timeout_ms=5000))
    with KafkaConsumer(**settings) as c:
        with pytest.raises(SaslAuthenticationError) as info:
            c.partitions_for_topic(kafka_topic)
    head = (f"SASL mechanism OAUTHBEARER (sasl.mechanism) is not enabled on node -1 "
            f"({bootstrap}); the broker enables: ")
    text = str(info.value)
    assert text.startswith(head), text
    # in the broker's own order (Kafka 4.2 answers PLAIN, SCRAM-SHA-512, SCRAM-SHA-256)
    assert sorted(text[len(head):].split(", ")) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


# --------------------------------------------------------------------------- TLS


def test_ssl_consumes_exact_records(kafka: KafkaCluster, make_kafka_topic: Callable[..., str]
                                    ) -> None:
    """security.protocol=SSL with the cluster's CA: Kafka's TLS listener, records exact."""
    topic = make_kafka_topic(2)
    settings = kafka.client_settings("SSL", auto_offset_reset="earliest", fetch_max_wait_ms=100)
    assert settings["ssl_truststore_location"] == str(kafka.tls.ca)
    with consume_exactly(kafka, topic, settings, seed=11) as c:
        for conn in ready_connections(c):
            assert isinstance(conn.sock, ssl.SSLSocket)
            assert conn.sock.version() in ("TLSv1.2", "TLSv1.3")


_strict: list[KafkaCluster] = []


def strict_cluster(config: pytest.Config) -> KafkaCluster:
    """A private node whose SSL listener requires a client certificate and whose SASL
    sessions last 3 s (KIP-368), started once per test run and shared with
    test_fetch_sessions_on_kafka.py (which restarts it: neither setting touches its PLAINTEXT
    fetches), closed when the run ends."""
    if not _strict:
        cluster = private_cluster(broker_config={"ssl.client.auth": "required",
                                                 "connections.max.reauth.ms": "3000"})
        _strict.append(cluster)

        def close() -> None:
            _strict.clear()
            cluster.close()

        config.add_cleanup(close)
    cluster = _strict[0]
    if not cluster.is_running(1):        # a failed test left it down
        cluster.restart(1)
    return cluster


@pytest.fixture
def strict_kafka(request: pytest.FixtureRequest) -> KafkaCluster:
    return strict_cluster(request.config)


def test_mutual_tls_with_the_client_certificate(strict_kafka: KafkaCluster) -> None:
    """ssl.client.auth=required: the client certificate and key (PEM text, Java's
    ssl.keystore.certificate.chain / ssl.keystore.key) get the records through."""
    topic = strict_kafka.create_topic(unique_topic_name(), 2)
    tls = strict_kafka.tls
    settings = strict_kafka.client_settings(
        "SSL", auto_offset_reset="earliest", fetch_max_wait_ms=100,
        ssl_keystore_certificate_chain=tls.client_cert.read_text(),
        ssl_keystore_key=tls.client_key.read_text())
    with consume_exactly(strict_kafka, topic, settings, seed=12) as c:
        assert all(isinstance(x.sock, ssl.SSLSocket) for x in ready_connections(c))


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
def test_mutual_tls_without_a_client_certificate_fails_clearly(strict_kafka: KafkaCluster,
                                                               version: str) -> None:
    """No client certificate where the broker requires one: the call fails at once (not
    after its timeout: a refused handshake is an SslAuthenticationError, as in Java) saying the
    TLS handshake with that node failed and why. In TLS 1.3 the broker's refusal arrives only
    after the client's side of the handshake is done, as the alert on the first read."""
    topic = strict_kafka.create_topic(unique_topic_name(), 1)
    bootstrap = strict_kafka.listener("SSL")
    settings = strict_kafka.client_settings("SSL", default_api_timeout_ms=120_000,
                                            ssl_enabled_protocols=version)
    with KafkaConsumer(**settings) as c:
        with pytest.raises(SslAuthenticationError) as info:
            c.partitions_for_topic(topic)
        conn = c._client.connection(-1) if c._client is not None else None
        assert conn is not None and conn.failures == 1      # one handshake, no retries
    text = str(info.value)
    head = re.escape(f"TLS handshake with node -1 ({bootstrap}) failed: ")
    if version == "TLSv1.2":        # refused inside the handshake
        assert re.fullmatch(rf"{head}\[SSL: SSLV3_ALERT_BAD_CERTIFICATE\] sslv3 alert "
                            rf"bad certificate \(_ssl.c:\d+\)", text), text
    else:                           # refused by the alert on the first read after it
        assert re.fullmatch(rf"{head}the broker refused the connection at the end of "
                            rf"the handshake \(SSLV3_ALERT_BAD_CERTIFICATE\): does the listener "
                            rf"require a client certificate \(ssl.client.auth=required\)\? give "
                            rf"one with ssl.keystore.location or ssl.keystore.certificate.chain "
                            rf"and ssl.keystore.key \(\[SSL: SSLV3_ALERT_BAD_CERTIFICATE\] sslv3 "
                            rf"alert bad certificate \(_ssl.c:\d+\)\)", text), text


# --------------------------------------------------------------------------- KIP-368


def test_reauthentication_keeps_the_connection_past_its_session(strict_kafka: KafkaCluster
                                                                ) -> None:
    """connections.max.reauth.ms=3000: Kafka gives each SASL session 3 s and would close a
    connection whose session ran out at its next request. Records flow for > 2 sessions; the
    leader's connection re-authenticates in place (authenticated once, re-authenticated at
    least twice, never reconnected) and every record arrives once, in order."""
    topic = strict_kafka.create_topic(unique_topic_name(), 1)
    tp = TopicPartition(topic, 0)
    settings = strict_kafka.client_settings("SASL_PLAINTEXT", **sasl("SCRAM-SHA-512"))
    expected: list[Row] = []
    got: list[Row] = []
    with KafkaConsumer(**settings) as c:
        c.assign([tp])
        started = time.monotonic()
        rnd = 0
        while time.monotonic() - started < 7.5:      # 2.5 sessions of 3 s
            records = sample_records(10, partitions=[0], seed=rnd)
            expected += produce_expected(strict_kafka.bootstrap_servers, topic, records)[tp]
            got += consume(c, len(expected) - len(got)).get(tp, [])
            rnd += 1
        assert got == expected
        assert c.poll(timeout_ms=300) == {}
        leader = [x for x in ready_connections(c) if x.node.node_id == 1]
        assert len(leader) == 1
        conn = leader[0]
        # Kafka's SaslAuthenticate v1 answer: the session lasts connections.max.reauth.ms
        assert conn.sasl_session_lifetime_ms == 3000
        assert conn.sasl_reauthentications >= 2, conn.sasl_reauthentications
        assert conn.sasl_authentications - conn.sasl_reauthentications == 1   # one connection
        assert conn.failures == 0 and conn.last_error is None


# --------------------------------------------------------------------------- GSSAPI


@pytest.fixture(scope="module")
def kerberos_kafka() -> Iterator[tuple[KafkaCluster, Kdc]]:
    """A private node with a GSSAPI listener whose broker logs in with its own keytab
    (principal kafka/127.0.0.1) at the MIT KDC of tests/kdc.py."""
    why = ensure_kerberos()
    if why is not None:
        pytest.skip(why)
    kdc = Kdc()
    try:
        service = kdc.add_principal("kafka/127.0.0.1")
        kerberos = Kerberos(krb5_conf=kdc.conf, keytab=Path(kdc.keytab("kafka/127.0.0.1")),
                            principal=service)
        cluster = private_cluster(kerberos=kerberos)
        try:
            yield cluster, kdc
        finally:
            cluster.close()
    finally:
        kdc.close()


def test_gssapi_consumes_exact_records(kerberos_kafka: tuple[KafkaCluster, Kdc]) -> None:
    """Kafka's own GSSAPI server (Krb5LoginModule with the broker's keytab) accepts the
    client's service ticket for kafka/127.0.0.1; the records come back exactly."""
    cluster, kdc = kerberos_kafka
    client = kdc.add_principal(f"consumer{time.monotonic_ns()}")
    keytab = kdc.keytab(client.split("@")[0])
    topic = cluster.create_topic(unique_topic_name(), 2)
    settings = cluster.client_settings("GSSAPI", sasl_kerberos_principal=client,
                                       sasl_kerberos_keytab=keytab, auto_offset_reset="earliest",
                                       fetch_max_wait_ms=100)
    assert (settings["security_protocol"], settings["sasl_mechanism"]) == ("SASL_PLAINTEXT",
                                                                           "GSSAPI")
    with consume_exactly(cluster, topic, settings, seed=21) as c:
        conns = ready_connections(c)
        assert [x.sasl_authentications for x in conns] == [1] * len(conns)
    # the broker logged the client in as its principal (Kafka logs a successful GSSAPI
    # authentication with the authorization id at INFO)
    log = cluster[1].log_path.read_text()
    assert f"Successfully authenticated client: authenticationID={client}" in log, log[-3000:]


def test_gssapi_with_a_principal_the_kdc_does_not_know(kerberos_kafka: tuple[KafkaCluster, Kdc]
                                                       ) -> None:
    """A keytab for a principal the KDC has since dropped: no ticket, so the SASL exchange
    fails on the client side with an authentication error, before the broker sees a token."""
    cluster, kdc = kerberos_kafka
    client = kdc.add_principal(f"gone{time.monotonic_ns()}")
    keytab = kdc.keytab(client.split("@")[0])
    kdc._run(["kadmin.local", "-r", client.split("@")[1], "-q", f"delprinc -force {client}"])
    settings = cluster.client_settings("GSSAPI", sasl_kerberos_principal=client,
                                       sasl_kerberos_keytab=keytab, default_api_timeout_ms=5000)
    with KafkaConsumer(**settings) as c:
        with pytest.raises(SaslAuthenticationError,
                           match="GSSAPI authentication to kafka/127.0.0.1 failed getting the "
                                 "client's credentials or a service ticket"):
            c.topics()
