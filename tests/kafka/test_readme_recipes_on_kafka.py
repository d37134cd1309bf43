"""The README's "Managed Kafka services" recipes, run as written against Apache Kafka.

Only what is the reader's own is substituted: the bootstrap address, the user and secrets (the
environment variables the recipes read), file names, the topic; and the system's CA store,
which the hosted services' public certificates rely on, is the test CA (``SSL_CERT_FILE``, read
by OpenSSL's default verify paths). The SCRAM and PLAIN recipes go to the session cluster's
SASL_SSL listener; the OAuth recipe to a listener Kafka's own OAUTHBEARER validator guards
(test_oauth_on_kafka.py), behind a TLS front (the recipe is SASL_SSL); the mutual-TLS recipe to
a node that requires a client certificate, with stores keytool made; the Spark block reads
the SCRAM recipe through the source. Each reads exact records.
Event Hubs and MSK IAM have no local equivalent: the first is checked to give the credentials of
its Java line, the second's refusal is the README's words.
"""
from __future__ import annotations

import os
import re
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.options import parse_options
from pyconsumer.testing import FaultProxy, KafkaCluster, TestRecord, produce
from tests.conftest import unique_topic_name
from tests.docs.test_readme import block, run
from tests.integration.test_sasl_oauth import CLIENT_ID, CLIENT_SECRET, TokenEndpoint
from tests.kafka.test_oauth_on_kafka import IdentityProvider, idp, oauth_kafka  # noqa: F401 - fixtures
from tests.kafka.test_security_on_kafka import strict_kafka  # noqa: F401 - fixture
from tests.keystores import STORE_PASSWORD, TRUST_PASSWORD, make_stores

pytestmark = pytest.mark.kafka

N = 20
Rows = dict[int, list[tuple[int, bytes | None, bytes | None]]]


#: where a recipe that is only built points (a closed loopback port): its hosted address is
#: never looked up
NOWHERE = "127.0.0.1:9"


def recipe(marker: str, replacements: dict[str, str], bootstrap: str = NOWHERE) -> str:
    """The README block containing ``marker``, its bootstrap address replaced by ``bootstrap``
    and each replacement made (each must be found)."""
    code, found = re.subn(r'("bootstrap\.servers": )"[^"]+"', rf'\1"{bootstrap}"', block(marker))
    assert found == 1, f"the recipe with {marker!r} names no bootstrap.servers"
    for old, new in replacements.items():
        assert old in code, f"{old!r} is no longer in the README's recipe"
        code = code.replace(old, new)
    return code


def records(cluster: KafkaCluster) -> tuple[str, Rows]:
    """A fresh 2-partition topic with N records (confluent-kafka, PLAINTEXT); what a reader
    must get, per partition in offset order."""
    topic = cluster.create_topic(unique_topic_name("recipe"), 2)
    produce(cluster.bootstrap_servers, topic,
            [TestRecord(key=b"k%d" % i, value=b"v%d" % i, partition=i % 2) for i in range(N)])
    return topic, {p: [(i // 2, b"k%d" % i, b"v%d" % i) for i in range(p, N, 2)] for p in (0, 1)}


def read(consumer: KafkaConsumer, seconds: float = 60) -> Rows:
    rows: Rows = {0: [], 1: []}
    deadline = time.monotonic() + seconds
    while sum(map(len, rows.values())) < N and time.monotonic() < deadline:
        for tp, recs in consumer.poll(timeout_ms=500).items():
            rows[tp.partition] += [(r.offset, r.key, r.value) for r in recs]
    return rows


def recipe_settings(code: str) -> dict[str, Any]:
    """The one settings dict a recipe block defines."""
    out: dict[str, Any] = {"os": os}       # the first recipe's import
    assert run(code, out) == []
    (settings,) = [v for k, v in out.items() if isinstance(v, dict) and not k.startswith("__")]
    if "consumer" in out:
        out["consumer"].close()
    return settings


@pytest.fixture
def system_ca(monkeypatch: pytest.MonkeyPatch) -> Callable[[KafkaCluster], None]:
    """Make ``cluster``'s CA the system's (what a public CA is to the hosted services)."""
    def use(cluster: KafkaCluster) -> None:
        monkeypatch.setenv("SSL_CERT_FILE", str(cluster.tls.ca))
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    return use


@pytest.fixture
def sasl_ssl(kafka: KafkaCluster) -> KafkaCluster:
    if "SASL_SSL" not in getattr(kafka, "listeners", ()):
        pytest.skip("needs the SASL_SSL listener of a KafkaCluster of the tests' own")
    return kafka


def test_the_scram_over_tls_recipe(sasl_ssl: KafkaCluster, system_ca: Callable[[KafkaCluster], None],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    topic, expected = records(sasl_ssl)
    system_ca(sasl_ssl)
    monkeypatch.setenv("KAFKA_PASSWORD", "alice-secret")
    code = recipe('"sasl.mechanism": "SCRAM-SHA-512"', {
        '"sasl.username": "ingest"': '"sasl.username": "alice"',
        'KafkaConsumer("orders", group_id="billing"':
            f'KafkaConsumer({topic!r}, group_id={unique_topic_name("billing")!r}, '
            'auto_offset_reset="earliest"'}, sasl_ssl.listener("SASL_SSL"))
    out: dict[str, Any] = {}
    assert run(code, out) == []
    with out["consumer"] as consumer:
        assert read(consumer) == expected
        assert consumer.config.security_protocol == "SASL_SSL"


def test_the_plain_api_key_recipe(sasl_ssl: KafkaCluster, system_ca: Callable[[KafkaCluster], None],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    topic, expected = records(sasl_ssl)
    system_ca(sasl_ssl)
    monkeypatch.setenv("CONFLUENT_API_KEY", "alice")
    monkeypatch.setenv("CONFLUENT_API_SECRET", "alice-secret")
    settings = recipe_settings(recipe('"sasl.username": os.environ["CONFLUENT_API_KEY"]', {},
                                      sasl_ssl.listener("SASL_SSL")))
    with KafkaConsumer(topic, group_id=unique_topic_name("g"), auto_offset_reset="earliest",
                       **settings) as consumer:
        assert read(consumer) == expected


def test_the_event_hubs_recipe_gives_its_java_lines_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    connection = ("Endpoint=sb://my-namespace.servicebus.windows.net/;"
                  "SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=a1b2c3d4e5=")
    monkeypatch.setenv("EVENTHUBS_CONNECTION_STRING", connection)
    settings = recipe_settings(recipe('"sasl.username": "$ConnectionString"', {}))
    ours = ConsumerConfig(**settings)
    java = ConsumerConfig(**{k: v for k, v in settings.items() if not k.startswith("sasl.user")
                             and k != "sasl.password"},
                          **{"sasl.jaas.config":
                             "org.apache.kafka.common.security.plain.PlainLoginModule required "
                             f'username="$ConnectionString" password="{connection}";'})
    assert (ours.sasl_username, ours.sasl_password) == (java.sasl_username, java.sasl_password) \
        == ("$ConnectionString", connection)
    assert (ours.security_protocol, ours.sasl_mechanism) == ("SASL_SSL", "PLAIN")


def test_the_oauth_recipe(oauth_kafka: KafkaCluster, idp: IdentityProvider,  # noqa: F811
                          system_ca: Callable[[KafkaCluster], None],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    topic, expected = records(oauth_kafka)
    system_ca(oauth_kafka)
    # TLS in front of the OAUTHBEARER listener: the broker's certificate, the same SASL inside
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(oauth_kafka.tls.broker_keystore)
    endpoint = TokenEndpoint(token=idp.token)
    monkeypatch.setenv("OAUTH_CLIENT_SECRET", CLIENT_SECRET)
    try:
        with FaultProxy(oauth_kafka.listener("OAUTH"), ssl_context=tls) as front:
            settings = recipe_settings(recipe('"sasl.mechanism": "OAUTHBEARER"', {
                "https://idp.example.com/oauth2/token": endpoint.url,
                'clientId="ingest"': f'clientId="{CLIENT_ID}"'}, front.bootstrap))
            with KafkaConsumer(topic, group_id=unique_topic_name("g"), auto_offset_reset="earliest",
                               **settings) as consumer:
                assert read(consumer) == expected
    finally:
        endpoint.close()
    assert endpoint.requests and all(r["form"]["scope"] == ["kafka"] for r in endpoint.requests)


def test_the_mutual_tls_recipe_with_java_stores(strict_kafka: KafkaCluster,  # noqa: F811
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The node requires a client certificate: the PKCS12 key store's is presented, the JKS
    trust store's CA checks the broker's."""
    pytest.importorskip("jks", reason="the keystores extra reads JKS stores")
    stores = make_stores(tmp_path / "stores", strict_kafka.tls)
    topic, expected = records(strict_kafka)
    monkeypatch.setenv("KEYSTORE_PASSWORD", STORE_PASSWORD)
    monkeypatch.setenv("TRUSTSTORE_PASSWORD", TRUST_PASSWORD)
    settings = recipe_settings(recipe('"security.protocol": "SSL"', {
        "/etc/kafka/client.keystore.p12": str(stores.keystore_p12),
        "/etc/kafka/client.truststore.jks": str(stores.truststore_jks)}, strict_kafka.listener("SSL")))
    with KafkaConsumer(topic, group_id=unique_topic_name("g"), auto_offset_reset="earliest",
                       **settings) as consumer:
        assert read(consumer) == expected


def test_the_spark_form_of_every_recipe_is_taken_by_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Spark block's ``kafka.``-prefixed options of each recipe check as the source checks
    a read's options and reach the consumer as the recipe's own settings (the read itself is
    Spark's: tests/spark run the source end to end)."""
    for name in ("KAFKA_PASSWORD", "CONFLUENT_API_KEY", "CONFLUENT_API_SECRET",
                 "EVENTHUBS_CONNECTION_STRING", "OAUTH_CLIENT_SECRET", "KEYSTORE_PASSWORD",
                 "TRUSTSTORE_PASSWORD"):
        monkeypatch.setenv(name, f"{name.lower()}-value")
    spark_code = block('options = {f"kafka.{name}": value')
    prefix = spark_code.split("\ndf = ")[0]
    for marker in ('"sasl.mechanism": "SCRAM-SHA-512"', '"sasl.username": os.environ["CONFLUENT_API_KEY"]',
                   '"sasl.username": "$ConnectionString"', '"sasl.mechanism": "OAUTHBEARER"',
                   '"security.protocol": "SSL"'):
        settings = recipe_settings(recipe(marker, {}))
        out: dict[str, Any] = {"scram": settings}
        assert run(prefix, out) == []
        options = {**out["options"], "subscribe": "orders"}
        if "ssl.keystore.location" in settings:
            continue    # the stores are read when the options are checked: not on this machine
        parsed = parse_options(options, streaming=False)
        assert {k: v for k, v in parsed.kafka_params.items() if k in settings} == settings


def test_msk_iam_as_java_has_it_is_refused_as_the_readme_says() -> None:
    text = " ".join(open(Path(__file__).resolve().parents[2] / "README.md").read().split())
    said = re.search(r"is refused \(`(sasl\.mechanism 'AWS_MSK_IAM' is not supported)`\)", text)
    assert said, "the README no longer quotes the refusal"
    with pytest.raises(ConfigurationError) as info:
        KafkaConsumer(bootstrap_servers="127.0.0.1:9", security_protocol="SASL_SSL",
                      sasl_mechanism="AWS_MSK_IAM")
    assert str(info.value).startswith(said[1])


def test_the_spark_block_reads_the_scram_recipe_through_the_source(
        spark: Any, sasl_ssl: KafkaCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Spark block, run: the SCRAM recipe in its Aiven form (the line naming the project
    CA taken in, here the test CA: Spark's Python workers do not see this process's
    SSL_CERT_FILE), read through the source over SASL_SSL: the exact records."""
    topic, expected = records(sasl_ssl)
    monkeypatch.setenv("KAFKA_PASSWORD", "alice-secret")
    aiven_line = '    # Aiven: add its project CA (ca.pem from the console): "ssl.truststore.location": "ca.pem",'
    scram = recipe_settings(recipe('"sasl.mechanism": "SCRAM-SHA-512"', {
        '"sasl.username": "ingest"': '"sasl.username": "alice"',
        aiven_line: f'    "ssl.truststore.location": {str(sasl_ssl.tls.ca)!r},'},
        sasl_ssl.listener("SASL_SSL")))
    out: dict[str, Any] = {"scram": scram, "spark": spark}
    code = block('options = {f"kafka.{name}": value')
    assert '.option("subscribe", "orders")' in code
    assert run(code.replace('.option("subscribe", "orders")', f'.option("subscribe", {topic!r})'),
               out) == []
    got = sorted((r.partition, r.offset, r.key, r.value) for r in out["df"].collect())
    assert got == [(p, o, k, v) for p in (0, 1) for o, k, v in expected[p]]
