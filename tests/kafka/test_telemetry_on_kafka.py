"""KIP-714 client telemetry against Apache Kafka, checked on the broker's side.

The cluster of this module runs a metrics reporter of the test's own (telemetry/
TelemetryRecorder.java, compiled here with javac against the broker's jars and put on its
class path) that implements ClientTelemetry, so the broker offers GetTelemetrySubscriptions
and PushTelemetry and hands it every push, decompressed; it decodes the OTLP payload with the
broker's own classes and writes one line per push. A client-metrics resource (set with
Kafka's kafka-configs tool) subscribes clients whose id starts ``pyc-telemetry-`` to the
fetch manager's metrics and the commit metrics, every second. The session cluster (no
reporter: Kafka offers no telemetry APIs then) and Tansu are the brokers without them.
"""
from __future__ import annotations

import base64
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import IllegalStateError
from pyconsumer.metrics.catalog import METRICS, telemetry_name
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import (
    KafkaCluster,
    MissingToolError,
    TestRecord,
    kafka_jars,
    produce,
    require_tool,
)
from tests.backends import external_kafka, start_or_skip

metrics_pb2 = pytest.importorskip("opentelemetry.proto.metrics.v1.metrics_pb2")

pytestmark = pytest.mark.kafka

RECORDER = Path(__file__).with_name("telemetry") / "TelemetryRecorder.java"
PREFIXES = ["org.apache.kafka.consumer.fetch.manager.", "org.apache.kafka.consumer.coordinator.commit."]
CONSUMED = "org.apache.kafka.consumer.fetch.manager.records.consumed.total"


@dataclass(frozen=True)
class Received:
    """One push as the broker's reporter wrote it down."""

    client_instance_id: str
    client_id: str
    terminating: bool
    content_type: str
    names: list[str]           # decoded by the broker's own OTLP classes
    data: bytes                # the payload, decompressed by the broker

    def decoded(self) -> object:
        parsed = metrics_pb2.MetricsData()
        parsed.ParseFromString(self.data)
        return parsed


@dataclass(frozen=True)
class TelemetryKafka:
    cluster: KafkaCluster
    record: Path

    def received(self, client_id: str) -> list[Received]:
        if not self.record.exists():
            return []
        out = []
        for line in self.record.read_text(encoding="utf-8").splitlines():
            instance, cid, terminating, content_type, names, data = line.split("\t")
            if cid == client_id:
                out.append(Received(instance, cid, terminating == "true", content_type,
                                    names.split(",") if names else [],
                                    base64.b64decode(data)))
        return out


def _compile_recorder(out: Path) -> None:
    javac = require_tool("the telemetry test's broker plugin", "javac")
    done = subprocess.run([javac, "-nowarn", "-cp", f"{kafka_jars()}/*", "-d", str(out),
                           str(RECORDER)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def telemetry_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TelemetryKafka]:
    pytest.importorskip("confluent_kafka")
    if external_kafka():
        pytest.skip("needs a Kafka of its own with a telemetry reporter plugin, not the "
                    f"external one at {external_kafka()}")
    folder = tmp_path_factory.mktemp("telemetry")
    try:
        _compile_recorder(folder / "classes")
    except MissingToolError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the Apache Kafka tier: {exc}", pytrace=False)
        pytest.skip(str(exc))
    record = folder / "pushes.tsv"
    cluster = KafkaCluster(broker_config={"metric.reporters": "TelemetryRecorder",
                                          "pyconsumer.telemetry.file": str(record)},
                           extra_classpath=[folder / "classes"])
    try:
        start_or_skip(cluster)
        cluster.alter_client_metrics("pyconsumer-telemetry", {
            "metrics": PREFIXES, "interval.ms": "1000", "match": ["client_id=pyc-telemetry-.*"]})
        yield TelemetryKafka(cluster, record)
    finally:
        cluster.close()


def _consume(c: KafkaConsumer, n: int, timeout: float = 60.0) -> int:
    got = 0
    deadline = time.monotonic() + timeout
    while got < n:
        assert time.monotonic() < deadline, f"{got} of {n} records"
        got += sum(map(len, c.poll(200).values()))
    return got


def _wait(what: Callable[[], bool], timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, message
        time.sleep(0.1)


def _selected() -> set[str]:
    return {telemetry_name(g, n) for g, names in METRICS.items() for n in names
            if any(telemetry_name(g, n).startswith(p) for p in PREFIXES)}


def test_the_broker_receives_the_subscribed_metrics_and_the_terminating_push(
        telemetry_kafka: TelemetryKafka) -> None:
    kafka = telemetry_kafka.cluster
    topic = kafka.create_topic("telemetry-t", 2)
    produce(kafka.bootstrap, topic, [TestRecord(key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
                                     for i in range(40)])
    client_id = "pyc-telemetry-on"
    c = KafkaConsumer(topic, **kafka.client_settings(
        group_id="g-telemetry", client_id=client_id, auto_offset_reset="earliest",
        fetch_max_wait_ms=100))
    try:
        assert _consume(c, 40) == 40
        c.commit()
        instance = c.client_instance_id(timeout_ms=10_000)
        assert instance is not None
        member_id = c.group_metadata().member_id
        # pushes come every second (the first one 0.5 to 1.5 s after the subscription)
        _wait(lambda: len(telemetry_kafka.received(client_id)) >= 2, 30,
              "no two pushes from our client reached the broker's reporter")
        while c.poll(100):
            pass
    finally:
        c.close()
    _wait(lambda: any(r.terminating for r in telemetry_kafka.received(client_id)), 10,
          "no terminating push on close")
    pushes = telemetry_kafka.received(client_id)
    # Kafka writes a Uuid as URL-safe base64, unpadded
    kafka_uuid = base64.urlsafe_b64encode(instance.bytes).decode().rstrip("=")
    assert {r.client_instance_id for r in pushes} == {kafka_uuid}
    assert [r.terminating for r in pushes] == [False] * (len(pushes) - 1) + [True]
    assert {r.content_type for r in pushes} == {"OTLP"}     # what Kafka 4.2 names it
    selected = _selected()
    for push in pushes:
        # what the broker decoded is what we meant to send: the subscribed metrics only
        assert push.names and set(push.names) <= selected, set(push.names) - selected
        parsed = push.decoded()
        (rm,) = parsed.resource_metrics
        assert {a.key: a.value.string_value for a in rm.resource.attributes} == {
            "group_id": "g-telemetry", "group_member_id": member_id}
        (sm,) = rm.scope_metrics
        assert sm.scope.name == "pyconsumer"
        assert [m.name for m in sm.metrics] == push.names
    late = pushes[-2]
    names = set(late.names)
    for expected in (CONSUMED, "org.apache.kafka.consumer.fetch.manager.bytes.consumed.total",
                     "org.apache.kafka.consumer.fetch.manager.fetch.total",
                     "org.apache.kafka.consumer.fetch.manager.records.lag",
                     "org.apache.kafka.consumer.coordinator.commit.total"):
        assert expected in names, expected
    # the broker asks for deltas: the client-wide records-consumed points add up to every
    # record consumed, once
    total = 0.0
    for push in pushes:
        for m in push.decoded().resource_metrics[0].scope_metrics[0].metrics:
            if m.name == CONSUMED:
                assert m.sum.aggregation_temporality == \
                    metrics_pb2.AGGREGATION_TEMPORALITY_DELTA and m.sum.is_monotonic
                total += sum(p.as_double for p in m.sum.data_points
                             if not {a.key for a in p.attributes})
    assert total == 40.0
    lags = [m for m in late.decoded().resource_metrics[0].scope_metrics[0].metrics
            if m.name.endswith("fetch.manager.records.lag")]
    assert lags[0].WhichOneof("data") == "gauge"
    assert {tuple(sorted((a.key, a.value.string_value) for a in p.attributes))
            for p in lags[0].gauge.data_points} == {
        (("partition", "0"), ("topic", topic)), (("partition", "1"), ("topic", topic))}


def test_no_push_when_disabled(telemetry_kafka: TelemetryKafka) -> None:
    kafka = telemetry_kafka.cluster
    topic = kafka.create_topic("telemetry-off", 1)
    produce(kafka.bootstrap, topic, [TestRecord(value=b"v%d" % i) for i in range(10)])
    client_id = "pyc-telemetry-off"
    with KafkaConsumer(**kafka.client_settings(client_id=client_id, enable_metrics_push=False,
                                               auto_offset_reset="earliest")) as c:
        c.assign([TopicPartition(topic, 0)])
        assert _consume(c, 10) == 10
        with pytest.raises(IllegalStateError, match="enable.metrics.push"):
            c.client_instance_id()
        # three push intervals of a subscribed client, polling all along
        end = time.monotonic() + 3.5
        while time.monotonic() < end:
            c.poll(100)
    assert telemetry_kafka.received(client_id) == []


def test_a_broker_without_telemetry_gives_no_instance_id_and_no_error(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    # the session cluster has no telemetry reporter: Kafka does not offer the APIs then
    topic = make_kafka_topic(1)
    produce(kafka.bootstrap, topic, [TestRecord(value=b"v%d" % i) for i in range(5)])
    with KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest")) as c:
        c.assign([TopicPartition(topic, 0)])
        assert _consume(c, 5) == 5
        versions = next(iter(c.negotiated_versions().values()))
        assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS.name not in versions
        t0 = time.monotonic()
        assert c.client_instance_id(timeout_ms=5000) is None
        assert time.monotonic() - t0 < 4         # telemetry stopped: nothing to wait for
        assert c.poll(100) == {}


def test_a_changed_subscription_is_fetched_again_and_pushed(
        telemetry_kafka: TelemetryKafka) -> None:
    kafka = telemetry_kafka.cluster
    topic = kafka.create_topic("telemetry-resub", 1)
    produce(kafka.bootstrap, topic, [TestRecord(value=b"v%d" % i) for i in range(5)])
    client_id = "pyc-telemetry-resub"
    assigned = "org.apache.kafka.consumer.coordinator.assigned.partitions"
    with KafkaConsumer(topic, **kafka.client_settings(
            group_id="g-telemetry-resub", client_id=client_id, auto_offset_reset="earliest",
            fetch_max_wait_ms=100)) as c:
        assert _consume(c, 5) == 5
        deadline = time.monotonic() + 30
        while not telemetry_kafka.received(client_id):
            assert time.monotonic() < deadline, "no push from our client"
            c.poll(100)
        assert all(assigned not in r.names for r in telemetry_kafka.received(client_id))
        # a second resource for this client alone: its subscription changes, the next push
        # is refused as UNKNOWN_SUBSCRIPTION_ID, the client asks again and pushes the union
        kafka.alter_client_metrics("pyconsumer-telemetry-resub", {
            "metrics": ["org.apache.kafka.consumer.coordinator.assigned."],
            "interval.ms": "1000", "match": [f"client_id={client_id}"]})
        deadline = time.monotonic() + 60
        while not any(assigned in r.names for r in telemetry_kafka.received(client_id)):
            assert time.monotonic() < deadline, "no push of the new subscription's metric"
            c.poll(100)
        instance = c.client_instance_id()
    assert instance is not None
    pushes = telemetry_kafka.received(client_id)
    assert len({r.client_instance_id for r in pushes}) == 1      # the same client instance
    last = [r for r in pushes if not r.terminating][-1]
    assert assigned in last.names and CONSUMED in last.names
