"""pyconsumer.metrics.otel, read back through the OpenTelemetry SDK's InMemoryMetricReader, on the
in-process fake cluster (pyconsumer.testing.FakeCluster).

* The semantic conventions' consumer metrics: ``messaging.client.consumed.messages`` is the
  records consumed per partition with the conventions' attributes, and
  ``messaging.client.operation.duration`` has one observation per poll (in seconds, the
  conventions' buckets; ``error.type`` for a poll that raised).
* The observable instruments: every metric of ``metrics()`` under its KIP-714 name, with its
  tags as attributes (plus ``group_id``), counters for ``*-total``, units from the name; the
  values those of ``metrics()``, read again at each collection.
* Two consumers on one meter share its instruments; close() stops the poll recording;
  instrumenting twice or a non-consumer is a clear error.
* Without a meter, the global MeterProvider's ``pyconsumer`` meter, even when the provider is
  set after instrument() (in a process of its own).
"""
from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.metrics")

from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import (  # noqa: E402
    AggregationTemporality,
    Gauge,
    Histogram,
    InMemoryMetricReader,
    Sum,
)

from pyconsumer import KafkaConsumer  # noqa: E402
from pyconsumer.errors import IllegalStateError  # noqa: E402
from pyconsumer.metrics import MetricName  # noqa: E402
from pyconsumer.metrics.otel import DURATION_BUCKETS, instrument  # noqa: E402
from pyconsumer.structs import TopicPartition  # noqa: E402
from pyconsumer.testing import FAST_CONSUMER as FAST, FakeCluster  # noqa: E402

from tests.unit.test_metrics_units import append, consume  # noqa: E402

TP = TopicPartition

#: KIP-714's name of each group, written out
GROUP = {"consumer-fetch-manager-metrics": "org.apache.kafka.consumer.fetch.manager.",
         "consumer-metrics": "org.apache.kafka.consumer.",
         "consumer-coordinator-metrics": "org.apache.kafka.consumer.coordinator."}

Attrs = frozenset[tuple[str, Any]]


class Read:
    """One collection: each metric's (instrument data, {attributes: point})."""

    def __init__(self, reader: InMemoryMetricReader) -> None:
        data = reader.get_metrics_data()
        assert data is not None
        self.metrics: dict[str, Any] = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    assert m.name not in self.metrics, m.name
                    self.metrics[m.name] = m

    def points(self, name: str) -> dict[Attrs, Any]:
        m = self.metrics.get(name)
        return {} if m is None else {frozenset(p.attributes.items()): p
                                     for p in m.data.data_points}

    def values(self, name: str) -> dict[Attrs, float]:
        return {k: p.value for k, p in self.points(name).items()}


def sdk() -> tuple[InMemoryMetricReader, Any]:
    reader = InMemoryMetricReader()
    return reader, MeterProvider(metric_readers=[reader]).get_meter("test")


def attrs(**kv: str) -> Attrs:
    return frozenset({k.replace("__", "."): v for k, v in kv.items()}.items())


POLL = {"messaging.system": "kafka", "messaging.operation.name": "poll",
        "messaging.operation.type": "receive"}


def semconv(group: str | None = "g-otel", **more: str) -> Attrs:
    out = dict(POLL)
    if group is not None:
        out["messaging.consumer.group.name"] = group
    out.update(more)
    return frozenset(out.items())


def consumed_at(topic: str, partition: int, group: str | None = "g-otel") -> Attrs:
    return semconv(group, **{"messaging.destination.name": topic,
                             "messaging.destination.partition.id": str(partition)})


def test_consumed_messages_and_poll_durations_follow_the_semantic_conventions(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"orders": 2, "audit": 1})
    o0, o1, a0 = TP("orders", 0), TP("orders", 1), TP("audit", 0)
    append(cluster, o0, 0, 17)
    append(cluster, o1, 0, 4)
    append(cluster, a0, 0, 9)
    reader, meter = sdk()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g-otel", **FAST) as c:
        c.assign([o0, o1, a0])
        telemetry = instrument(c, meter)
        polls, got = 0, 0
        timed: dict[Attrs, int] = {}       # polls by the attributes their duration should have
        while got < 30:
            polls += 1
            assert polls < 300
            result = c.poll(50, max_records=6)
            got += sum(len(r) for r in result.values())
            # the destination when all records came from one topic, the partition from one
            where: dict[str, str] = {}
            if len({tp.topic for tp in result}) == 1:
                where["messaging.destination.name"] = next(iter(result)).topic
                if len(result) == 1:
                    where["messaging.destination.partition.id"] = str(next(iter(result)).partition)
            timed[semconv(**where)] = timed.get(semconv(**where), 0) + 1
        read = Read(reader)
        consumed = read.metrics["messaging.client.consumed.messages"]
        assert consumed.unit == "{message}"
        assert consumed.description == "Number of messages that were delivered to the application."
        assert isinstance(consumed.data, Sum) and consumed.data.is_monotonic
        assert read.values("messaging.client.consumed.messages") == {
            consumed_at("orders", 0): 17, consumed_at("orders", 1): 4, consumed_at("audit", 0): 9}
        duration = read.metrics["messaging.client.operation.duration"]
        assert duration.unit == "s" and isinstance(duration.data, Histogram)
        points = read.points("messaging.client.operation.duration")
        assert sum(p.count for p in points.values()) == polls
        for p in points.values():
            assert tuple(p.explicit_bounds) == DURATION_BUCKETS
            assert 0 <= p.min <= p.max < 10 and p.sum >= 0
        assert {k: p.count for k, p in points.items()} == timed
        telemetry.close()


def test_a_poll_that_raises_is_timed_with_its_error_type(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1)
    reader, meter = sdk()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c, instrument(c, meter):
        with pytest.raises(IllegalStateError):
            c.poll(10)
        read = Read(reader)
        [(key, point)] = read.points("messaging.client.operation.duration").items()
        assert key == semconv(None, **{"error.type": "pyconsumer.errors.IllegalStateError"})
        assert point.count == 1
        assert read.values("messaging.client.consumed.messages") == {}


def test_every_metric_is_observed_under_its_kip714_name_with_its_value(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1)
    cluster.create_topic("orders.eu", 2)
    p0, p1 = TP("orders.eu", 0), TP("orders.eu", 1)
    append(cluster, p0, 0, 100)
    append(cluster, p1, 0, 30)
    reader, meter = sdk()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g-otel",
                       client_id="otel-1", enable_auto_commit=False, **FAST) as c:
        c.assign([p0, p1])
        with instrument(c, meter):
            got: dict[TopicPartition, int] = {}
            for _ in range(300):                # until both were fetched: both lags known
                if len(got) == 2 and sum(got.values()) >= 30:
                    break
                for tp, records in c.poll(50, max_records=5).items():
                    assert [r.offset for r in records] == list(
                        range(got.get(tp, 0), got.get(tp, 0) + len(records)))
                    got[tp] = got.get(tp, 0) + len(records)
            assert len(got) == 2 and sum(got.values()) >= 30, got
            behind = {p0: 100 - got[p0], p1: 30 - got[p1]}
            read = Read(reader)
            now = c.metrics()
            by_name: dict[str, dict[Attrs, float]] = {}
            for m, v in now.items():
                if math.isnan(v):                   # nothing in its window: not observed
                    continue
                tags = {k.replace("-", "_"): t for k, t in m.tags.items()}
                tags["group_id"] = "g-otel"
                by_name.setdefault(GROUP[m.group] + m.name.replace("-", "."), {})[
                    frozenset(tags.items())] = v
            for name, want in by_name.items():
                seen = read.values(name)
                assert set(seen) == set(want), name
                # (values that move with the clock or the background aside)
                if not name.endswith((".rate", ".rate.per.hour", ".seconds.ago",
                                      ".connection.count")):
                    assert seen == want, name
                kind = read.metrics[name].data
                if name.endswith(".total"):
                    assert isinstance(kind, Sum) and kind.is_monotonic and \
                        kind.aggregation_temporality == AggregationTemporality.CUMULATIVE, name
                else:
                    assert isinstance(kind, Gauge), name
            observed = {n for n in read.metrics if n.startswith("org.apache.kafka.")}
            assert observed == set(by_name)
            # the NaN ones (no commit, no rebalance yet) are left out, and only they
            assert {(m.group, m.name) for m, v in now.items() if math.isnan(v)} == {
                ("consumer-coordinator-metrics", n) for n in (
                    "commit-latency-avg", "commit-latency-max", "heartbeat-response-time-max",
                    "rebalance-latency-avg", "rebalance-latency-max")}
            fm = "org.apache.kafka.consumer.fetch.manager."
            client = {"client_id": "otel-1", "group_id": "g-otel"}
            assert read.values(fm + "records.consumed.total")[frozenset(client.items())] == \
                float(sum(got.values()))
            assert read.values(fm + "records.lag") == {
                frozenset({**client, "topic": "orders_eu", "partition": str(tp.partition)}.items()):
                float(n) for tp, n in behind.items()}
            units = {n: read.metrics[n].unit for n in (
                fm + "fetch.latency.avg", "org.apache.kafka.consumer.last.poll.seconds.ago",
                fm + "bytes.consumed.total", fm + "bytes.consumed.rate", fm + "records.lag",
                "org.apache.kafka.consumer.coordinator.rebalance.rate.per.hour")}
            assert units == {fm + "fetch.latency.avg": "ms",
                             "org.apache.kafka.consumer.last.poll.seconds.ago": "s",
                             fm + "bytes.consumed.total": "By", fm + "bytes.consumed.rate": "By/s",
                             fm + "records.lag": "1",
                             "org.apache.kafka.consumer.coordinator.rebalance.rate.per.hour": "1/h"}
            # the next collection reads metrics() again
            consume(c, 130 - sum(got.values()))
            read = Read(reader)
            assert read.values(fm + "records.consumed.total")[frozenset(client.items())] == 130.0
            assert set(read.values(fm + "records.lag").values()) == {0.0}


def test_two_consumers_share_a_meters_instruments_and_close_stops_the_recording(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    tp = TP("t", 0)
    append(cluster, tp, 0, 10)
    reader, meter = sdk()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="a", **FAST) as a, \
            KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="b", group_id="gb",
                          **FAST) as b:
        a.assign([tp])
        b.assign([tp])
        ta, tb = instrument(a, meter), instrument(b, meter)
        consume(a, 10)
        consume(b, 3, max_records=3)
        read = Read(reader)
        assert read.values("messaging.client.consumed.messages") == {
            consumed_at("t", 0, None): 10, consumed_at("t", 0, "gb"): 3}
        lag = "org.apache.kafka.consumer.fetch.manager.records.lag"
        assert read.values(lag) == {
            frozenset({"client_id": "a", "topic": "t", "partition": "0"}.items()): 0.0,
            frozenset({"client_id": "b", "group_id": "gb", "topic": "t",
                       "partition": "0"}.items()): 7.0}
        with pytest.raises(ValueError) as twice:
            instrument(a, meter)
        assert str(twice.value) == "this consumer is already instrumented on this meter"
        tb.close()
        tb.close()                                  # again: nothing
        consume(b, 7)
        read = Read(reader)
        assert read.values("messaging.client.consumed.messages")[consumed_at("t", 0, "gb")] == 3
        assert {dict(k).get("client_id") for k in read.values(lag)} == {"a"}
        ta.close()
        instrument(a, meter).close()                # closed: it may be instrumented again


class NotAConsumer:
    group_id = None

    def metrics(self) -> Mapping[MetricName, float]:
        return {}


def test_a_non_consumer_or_a_non_meter_is_a_clear_error(
        make_cluster: Callable[..., FakeCluster]) -> None:
    with pytest.raises(TypeError) as e:
        instrument(NotAConsumer())  # type: ignore[arg-type]
    assert str(e.value) == ("a NotAConsumer is not a consumer to export: it has no "
                            "add_poll_listener(), remove_poll_listener() (a KafkaConsumer has "
                            "them)")
    cluster = make_cluster(1)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        with pytest.raises(TypeError) as m:
            instrument(c, "pyconsumer")  # type: ignore[arg-type]
        assert str(m.value) == ("instrument: meter must be an opentelemetry.metrics.Meter, "
                                "got a str")


GLOBAL_PROVIDER = r'''
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.metrics.otel import instrument
from pyconsumer.testing import FAST_CONSUMER, FakeCluster

with FakeCluster(1, topics={"t": 1}) as cluster:
    cluster.produce(TopicPartition("t", 0), [(b"k%d" % i, b"v%d" % i) for i in range(11)])
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST_CONSUMER) as c:
        c.assign([TopicPartition("t", 0)])
        telemetry = instrument(c)          # before the application sets its provider
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        got = 0
        for _ in range(200):
            got += sum(len(r) for r in c.poll(50).values())
            if got == 11:
                break
        data = reader.get_metrics_data()
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name in ("messaging.client.consumed.messages",
                                  "org.apache.kafka.consumer.fetch.manager.records.consumed.total"):
                        for p in m.data.data_points:
                            if "topic" not in p.attributes:
                                print(sm.scope.name, m.name, p.value)
        telemetry.close()
'''


def test_without_a_meter_the_global_providers_pyconsumer_meter_is_used() -> None:
    """In a process of its own (the global MeterProvider is set once per process), and set
    after instrument(): the API's proxy meter hands the instruments over to it."""
    out = subprocess.run([sys.executable, "-c", GLOBAL_PROVIDER], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.splitlines()) == [
        "pyconsumer messaging.client.consumed.messages 11",
        "pyconsumer org.apache.kafka.consumer.fetch.manager.records.consumed.total 11.0"]
