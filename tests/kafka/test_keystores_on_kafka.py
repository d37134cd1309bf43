"""Java key and trust stores against Apache Kafka's SSL listener with mutual TLS
(``ssl.client.auth=required``, the private node of test_security_on_kafka.py): stores written
by keytool from the cluster's own PKI (tests/keystores.py), the same records as with PEM.

Records come from confluent-kafka over PLAINTEXT; pyconsumer reads them over the TLS listener,
presenting the client certificate from each store, and must give back exactly what was
written.
"""
from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.errors import SslAuthenticationError
from pyconsumer.spark.options import parse_options
from pyconsumer.testing import KafkaCluster, sample_records

from tests.conftest import unique_topic_name
from tests.kafka.test_security_on_kafka import (
    consume,
    produce_expected,
    ready_connections,
    strict_cluster,
)
from tests.keystores import KEY_PASSWORD, STORE_PASSWORD, TRUST_PASSWORD, Stores, make_stores

pytestmark = pytest.mark.kafka

N = 40


@pytest.fixture(scope="module")
def strict_stores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                  ) -> tuple[KafkaCluster, Stores]:
    cluster = strict_cluster(request.config)
    return cluster, make_stores(tmp_path_factory.mktemp("stores"), cluster.tls)


def variants(cluster: KafkaCluster, stores: Stores, pem_store: Path) -> dict[str, dict[str, Any]]:
    """The TLS settings of each way to give the same CA and client certificate."""
    return {
        "JKS": dict(ssl_truststore_location=str(stores.truststore_jks),
                    ssl_truststore_password=TRUST_PASSWORD,
                    ssl_keystore_location=str(stores.keystore_keypass_jks),
                    ssl_keystore_password=STORE_PASSWORD, ssl_key_password=KEY_PASSWORD),
        "PKCS12": dict(ssl_truststore_location=str(stores.truststore_p12),
                       ssl_truststore_type="PKCS12", ssl_truststore_password=TRUST_PASSWORD,
                       ssl_keystore_location=str(stores.keystore_p12),
                       ssl_keystore_type="PKCS12", ssl_keystore_password=STORE_PASSWORD),
        "PEM": dict(ssl_truststore_location=str(cluster.tls.ca), ssl_truststore_type="PEM",
                    ssl_keystore_location=str(pem_store), ssl_keystore_type="PEM"),
    }


def test_the_same_records_with_jks_pkcs12_and_pem_stores(
        strict_stores: tuple[KafkaCluster, Stores], tmp_path: Path) -> None:
    """Kafka requires a client certificate: each store gets the records through, exactly,
    over TLS."""
    cluster, stores = strict_stores
    pem_store = tmp_path / "client-store.pem"
    pem_store.write_text(cluster.tls.client_key.read_text() + cluster.tls.client_cert.read_text())
    topic = cluster.create_topic(unique_topic_name(), 2)
    expected = produce_expected(cluster.bootstrap_servers, topic,
                                sample_records(N, partitions=2, seed=42))
    got = {}
    for name, tls in variants(cluster, stores, pem_store).items():
        settings = cluster.client_settings("SSL", auto_offset_reset="earliest",
                                           fetch_max_wait_ms=100, **tls)
        with KafkaConsumer(**settings) as c:
            c.assign(sorted(expected))
            got[name] = consume(c, N)
            assert c.poll(timeout_ms=300) == {}
            assert all(isinstance(x.sock, ssl.SSLSocket) for x in ready_connections(c))
    assert got == dict.fromkeys(got, expected)
    assert sorted(got) == ["JKS", "PEM", "PKCS12"]


def test_spark_kafka_ssl_options_read_through_the_stores(
        strict_stores: tuple[KafkaCluster, Stores]) -> None:
    """The Spark source's ``kafka.ssl.*`` options, as a Spark job on Java gives them, make the
    consumer the source reads with: the records come back exactly."""
    cluster, stores = strict_stores
    topic = cluster.create_topic(unique_topic_name(), 1)
    expected = produce_expected(cluster.bootstrap_servers, topic,
                                sample_records(N, partitions=1, seed=43))
    options = parse_options({
        "kafka.bootstrap.servers": cluster.listener("SSL"), "subscribe": topic,
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.location": str(stores.truststore_p12),
        "kafka.ssl.truststore.password": TRUST_PASSWORD,
        "kafka.ssl.keystore.location": str(stores.keystore_jks),
        "kafka.ssl.keystore.password": STORE_PASSWORD,
    }, streaming=False)
    settings = {**options.consumer_settings(), "auto.offset.reset": "earliest",
                "fetch.max.wait.ms": 100}
    with KafkaConsumer(**settings) as c:
        c.assign(sorted(expected))
        assert consume(c, N) == expected


def test_a_trust_store_without_the_clusters_ca_is_refused(
        strict_stores: tuple[KafkaCluster, Stores]) -> None:
    """The store is what is trusted, not the system's CAs: a key store of the client (which
    trusts only the client's own certificate) cannot verify the broker."""
    cluster, stores = strict_stores
    settings = cluster.client_settings(
        "SSL", default_api_timeout_ms=30_000,
        ssl_truststore_location=str(stores.keystore_jks), ssl_truststore_password=STORE_PASSWORD,
        ssl_keystore_location=str(stores.keystore_jks), ssl_keystore_password=STORE_PASSWORD)
    with KafkaConsumer(**settings) as c:
        with pytest.raises(SslAuthenticationError) as info:
            c.partitions_for_topic("any")
    assert str(info.value) == (
        f"TLS handshake with node -1 ({cluster.listener('SSL')}) failed: the broker's "
        f"certificate was refused (unable to get local issuer certificate); check "
        f"ssl.truststore.* and ssl.endpoint.identification.algorithm")
