"""The README's Python examples, run as written: extracted from README.md, against the broker
its first example starts (Apache Kafka on the port the examples name, moved to a free one
here), in the order a reader runs them. The only changes are addresses and paths: the port,
the log segment's path, the SASL examples' broker and CA file.

The SASL examples name brokers the reader has (``broker:9093``): they are built, not
connected (pyconsumer connects lazily), with the address and CA file replaced, so a renamed or
mistyped setting in them fails here. The registry OAuth example runs against a local registry
and token endpoint.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.testing import KafkaCluster, free_port

pytestmark = [pytest.mark.kafka]

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def block(marker: str) -> str:
    """The one Python block of the README containing ``marker``."""
    found = [b for b in BLOCKS if marker in b]
    assert len(found) == 1, f"{len(found)} README blocks contain {marker!r}"
    return found[0]


def run(code: str, namespace: dict[str, Any]) -> list[str]:
    """exec ``code`` (a README block) in ``namespace``; the lines it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), namespace)
    return out.getvalue().splitlines()


@pytest.fixture(scope="module")
def setup() -> Iterator[tuple[dict[str, Any], int]]:
    """The README's first example: Apache Kafka with the topic `orders` and 300 records."""
    port = free_port()
    namespace: dict[str, Any] = {}
    code = block("KafkaCluster(port=9092)")
    assert run(code.replace("port=9092", f"port={port}"), namespace) == []
    kafka = namespace["kafka"]
    assert isinstance(kafka, KafkaCluster) and kafka.bootstrap_servers == f"127.0.0.1:{port}"
    try:
        yield namespace, port
    finally:
        kafka.close()


def ends(kafka: KafkaCluster) -> list[int]:
    """The end offset of each partition of `orders`, as confluent-kafka sees it."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkTopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "readme-oracle"})
    try:
        return [c.get_watermark_offsets(CkTopicPartition("orders", p), timeout=10)[1]
                for p in range(3)]
    finally:
        c.close()


def local(code: str, port: int) -> str:
    return code.replace("127.0.0.1:9092", f"127.0.0.1:{port}")


def test_the_use_example(setup: tuple[dict[str, Any], int]) -> None:
    namespace, port = setup
    lines = run(local(block("consumer.poll_arrow("), port), {})
    assert "'orders'" in lines[0]                       # topics()
    assert lines[1] == "{0, 1, 2}"                      # partitions_for_topic("orders")
    produced = {b"order-%d" % i: b'{"id": %d, "amount": %d.5}' % (i, i) for i in range(300)}
    records = [line for line in lines[2:] if line.startswith("orders-")]
    assert records, lines
    for line in records:
        m = re.fullmatch(r"orders-([01]) (\d+) (b'[^']*') (b'[^']*') \[\] (\d+)", line)
        assert m, line
        assert produced[eval(m[3])] == eval(m[4])
    high = ends(namespace["kafka"])
    assert lines[-2] == f"{{TopicPartition(topic='orders', partition=0): {high[0]}}}"
    assert lines[-1].startswith("{TopicPartition(topic='orders', partition=0): OffsetAndMetadata(")


def test_the_log_segment_example(setup: tuple[dict[str, Any], int]) -> None:
    namespace, _ = setup
    kafka: KafkaCluster = namespace["kafka"]
    assert kafka.folder is not None
    segment = kafka.folder / "node1" / "data" / "orders-0" / "00000000000000000000.log"
    code = block("00000000000000000000.log").replace(
        "/var/lib/kafka/data/orders-0/00000000000000000000.log", str(segment))
    out: dict[str, Any] = {}
    assert run(code, out) == []
    high = ends(kafka)[0]
    assert out["batch"].num_rows == high
    assert [r.offset for r in out["records"]] == list(range(high))
    assert all(r.key.startswith(b"order-") for r in out["records"])


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"])
def test_the_sasl_examples_build(setup: tuple[dict[str, Any], int], mechanism: str,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    namespace, port = setup
    kafka: KafkaCluster = namespace["kafka"]
    # (GSSAPI's gssapi package is needed to connect, not to build: it runs without it)
    monkeypatch.setenv("KAFKA_PASSWORD", "alice-secret")
    monkeypatch.setenv("OAUTH_CLIENT_SECRET", "client-Secret-9")
    code = block(f'sasl_mechanism="{mechanism}"')
    code = re.sub(r'bootstrap_servers="[^"]+"', f'bootstrap_servers="127.0.0.1:{port}"', code)
    code = code.replace('"ca.pem"', repr(str(kafka.tls.ca)))
    from pyconsumer import KafkaConsumer

    out: dict[str, Any] = {"os": os, "KafkaConsumer": KafkaConsumer}    # the Use example's imports
    assert run(code, out) == []
    consumer = out["consumer"]
    try:
        assert consumer.config.sasl_mechanism == mechanism
        assert consumer.subscription() == {"orders"}
    finally:
        consumer.close()


def test_the_tls_stores_example(setup: tuple[dict[str, Any], int], tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The Java stores example, with keytool-made stores of the cluster's own PKI in place of
    the paths it names, reaches the cluster's TLS listener."""
    from tests.keystores import STORE_PASSWORD, TRUST_PASSWORD, make_stores

    namespace, _ = setup
    kafka: KafkaCluster = namespace["kafka"]
    stores = make_stores(tmp_path, kafka.tls)
    monkeypatch.setenv("TRUSTSTORE_PASSWORD", TRUST_PASSWORD)
    monkeypatch.setenv("KEYSTORE_PASSWORD", STORE_PASSWORD)
    code = block('"/etc/kafka/truststore.jks"')
    code = re.sub(r'bootstrap_servers="[^"]+"', f'bootstrap_servers="{kafka.listener("SSL")}"', code)
    code = code.replace('"/etc/kafka/truststore.jks"', repr(str(stores.truststore_jks)))
    code = code.replace('"/etc/kafka/client.keystore.p12"', repr(str(stores.keystore_p12)))
    from pyconsumer import KafkaConsumer

    out: dict[str, Any] = {"os": os, "KafkaConsumer": KafkaConsumer}
    assert run(code, out) == []
    consumer = out["consumer"]
    try:
        assert consumer.partitions_for_topic("orders") == {0, 1, 2}
    finally:
        consumer.close()


def test_the_fake_cluster_example() -> None:
    assert run(block("FakeCluster(topics="), {}) == []     # its asserts are the test


def test_the_registry_oauth_example(monkeypatch: pytest.MonkeyPatch) -> None:
    """Built with the registry and the token endpoint replaced by local ones; the consumer's
    registry client then looks a subject up with the endpoint's token."""
    from pyconsumer import KafkaConsumer
    from pyconsumer.testing import FakeSchemaRegistry
    from tests.integration.test_sasl_oauth import TokenEndpoint, signed_jwt

    token = signed_jwt("ingest", scope="schema-registry")
    endpoint = TokenEndpoint(token=lambda scope: token, client_id="ingest")
    monkeypatch.setenv("REGISTRY_CLIENT_SECRET", "client-Secret-9")
    try:
        with FakeSchemaRegistry() as registry:
            registry.require_bearer(token)
            registry.register("payments-value", '{"type": "string"}')
            code = block('schema_registry_bearer_auth_credentials_source="OAUTHBEARER"')
            code = code.replace('"broker:9092"', '"127.0.0.1:9"')
            code = code.replace('"https://registry.example.com"', repr(registry.url))
            code = code.replace('"https://idp.example.com/oauth2/token"', repr(endpoint.url))
            out: dict[str, Any] = {"os": os, "KafkaConsumer": KafkaConsumer}
            assert run(code, out) == []
            with out["consumer"] as consumer:
                plan = consumer._typed
                assert plan is not None and plan.registry is not None
                assert plan.registry.latest("payments-value").schema_text == '{"type": "string"}'
        assert [r["form"]["scope"] for r in endpoint.requests] == [["schema-registry"]]
    finally:
        endpoint.close()


@pytest.mark.spark
def test_the_spark_example(setup: tuple[dict[str, Any], int], spark: Any, tmp_path: Path) -> None:
    """local_session() gets the session the suite runs (one per JVM); the example's relative
    output paths (relative to the JVM's folder, not Python's) are moved to a temporary one."""
    namespace, port = setup
    code = local(block('"out/_checkpoint"'), port)
    for relative in ('"out/orders"', '"out/_checkpoint"'):
        assert relative in code
        code = code.replace(relative, repr(str(tmp_path / relative.strip('"'))))
    out: dict[str, Any] = {}
    assert run(code, out) == []
    high = ends(namespace["kafka"])
    assert out["df"].count() == sum(high) - min(23, high[0])      # partition 0 from offset 23
    rows = out["orders"].orderBy("partition", "offset").collect()
    assert all(r.o.amount == r.o.id + 0.5 for r in rows)
    written = out["spark"].read.parquet(str(tmp_path / "out" / "orders"))
    assert written.count() == sum(high)
    assert (tmp_path / "out" / "_checkpoint" / "offsets").is_dir()


@pytest.mark.spark
def test_the_typed_json_example(setup: tuple[dict[str, Any], int], spark: Any) -> None:
    """Typed values: `orders` read as JSON by the Spark source and by poll_arrow()."""
    _, port = setup
    lines = run(local(block('.option("valueFormat", "json")'), port), {})
    assert lines == ["[Row(key='order-7', amount=7.5)]", "struct<id: int64, amount: double>"]


@pytest.mark.spark
def test_the_typed_avro_example(setup: tuple[dict[str, Any], int], spark: Any) -> None:
    """Typed values: Avro written by confluent-kafka's AvroSerializer, read through the
    in-process registry by the Spark source and by poll_arrow()."""
    pytest.importorskip("confluent_kafka.schema_registry.avro")
    namespace, port = setup
    out: dict[str, Any] = {"kafka": namespace["kafka"]}
    try:
        lines = run(local(block('.option("valueFormat", "avro")'), port), out)
    finally:
        if "registry" in out:
            out["registry"].stop()
    assert lines == [str(sum(i / 4 for i in range(100))), "[", "  0,", "  0.25,", "  0.5", "]"]
