"""pyconsumer.metrics.prometheus, scraped and read back with prometheus-client's own text parser,
on the in-process fake cluster (pyconsumer.testing.FakeCluster).

* Every metric of ``metrics()`` is one sample: ``kafka_consumer_<group>_<name>`` (group less
  ``consumer-`` / ``-metrics``), counters for ``*-total`` and gauges otherwise, labels the tags
  plus ``group_id``, value the metric's; and no other sample.
* A live consumer: records consumed (all topics and per topic) and each partition's lag and
  lead are the known numbers; a scrape after more polls sees the new ones.
* Several consumers in one collector; a second collector on one registry is refused.
* The HTTP endpoint on 127.0.0.1 (port 0) fetched with urllib, and closed; a taken port, a bad
  port and a non-consumer are clear errors.
"""
from __future__ import annotations

import errno
import math
import socket
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from pyconsumer import KafkaConsumer  # noqa: E402
from pyconsumer.metrics import MetricName  # noqa: E402
from pyconsumer.metrics.prometheus import PrometheusCollector, serve_prometheus  # noqa: E402
from pyconsumer.structs import TopicPartition  # noqa: E402
from pyconsumer.testing import FAST_CONSUMER as FAST, FakeCluster  # noqa: E402

from tests.unit.test_metrics_units import append, consume, expected  # noqa: E402

TP = TopicPartition

#: each group's prefix, written out (the mapping the README gives)
PREFIX = {"consumer-fetch-manager-metrics": "kafka_consumer_fetch_manager_",
          "consumer-metrics": "kafka_consumer_",
          "consumer-coordinator-metrics": "kafka_consumer_coordinator_"}

Key = tuple[str, frozenset[tuple[str, str]]]


def parse(text: str) -> tuple[dict[Key, float], dict[str, str]]:
    """(sample name, labels) -> value, and family name -> type, of an exposition."""
    samples: dict[Key, float] = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in samples, f"sample twice: {key}"
            samples[key] = s.value
    return samples, types


def scrape(registry: CollectorRegistry) -> tuple[dict[Key, float], dict[str, str]]:
    return parse(generate_latest(registry).decode())


def expected_samples(metrics: Mapping[MetricName, float], group_id: str | None
                     ) -> dict[Key, float]:
    out: dict[Key, float] = {}
    for m, v in metrics.items():
        labels = {k.replace("-", "_"): t for k, t in m.tags.items()}
        if group_id is not None:
            labels["group_id"] = group_id
        out[(PREFIX[m.group] + m.name.replace("-", "_"), frozenset(labels.items()))] = v
    return out


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


class Frozen:
    """A consumer's metrics as read once (every value fixed, to compare a scrape exactly)."""

    def __init__(self, metrics: Mapping[MetricName, float], group_id: str | None) -> None:
        self._metrics = dict(metrics)
        self.group_id = group_id

    def metrics(self) -> Mapping[MetricName, float]:
        return self._metrics


def labels(client: str, group: str | None = "g-prom", **more: str) -> frozenset[tuple[str, str]]:
    out = {"client_id": client, **more}
    if group is not None:
        out["group_id"] = group
    return frozenset(out.items())


def test_every_metric_is_one_sample_with_its_name_labels_kind_and_value(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1)
    cluster.create_topic("orders.eu", 2)
    p0, p1 = TP("orders.eu", 0), TP("orders.eu", 1)
    append(cluster, p0, 0, 100)
    append(cluster, p1, 0, 30)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g-prom",
                       client_id="prom-1", **FAST) as c:
        c.assign([p0, p1])
        consume(c, 70, max_records=10)
        frozen = Frozen(c.metrics(), "g-prom")
    registry = CollectorRegistry(auto_describe=True)
    registry.register(PrometheusCollector(frozen))
    samples, types = scrape(registry)
    want = expected_samples(frozen.metrics(), "g-prom")
    assert set(samples) == set(want)
    assert all(same(samples[k], v) for k, v in want.items()), \
        {k: (samples[k], v) for k, v in want.items() if not same(samples[k], v)}
    # counters for the cumulative metrics (their family drops _total), gauges otherwise
    for m in frozen.metrics():
        sample = PREFIX[m.group] + m.name.replace("-", "_")
        if m.name.endswith("-total"):
            assert types[sample.removesuffix("_total")] == "counter", m
        else:
            assert types[sample] == "gauge", m
    # the numbers this consumption makes
    assert samples[("kafka_consumer_coordinator_assigned_partitions", labels("prom-1"))] == 2.0
    consumed = samples[("kafka_consumer_fetch_manager_records_consumed_total", labels("prom-1"))]
    assert consumed == 70.0


def test_a_live_consumer_scraped_gives_the_records_consumed_and_each_partitions_lag(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1)
    cluster.create_topic("orders.eu", 2)
    cluster.create_topic("audit", 1)
    p0, p1, a0 = TP("orders.eu", 0), TP("orders.eu", 1), TP("audit", 0)
    append(cluster, p0, 0, 100)
    append(cluster, p1, 0, 30)
    append(cluster, a0, 0, 12)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="live", **FAST) as c:
        c.assign([p0])
        assert consume(c, 40, max_records=40) == {p0: expected(0, 40)}
        c.assign([p0, p1, a0])
        got = consume(c, 102)
        assert got == {p0: expected(40, 60), p1: expected(0, 30), a0: expected(0, 12)}
        append(cluster, p1, 30, 25)             # 25 behind on orders.eu-1 now
        registry = CollectorRegistry(auto_describe=True)
        registry.register(PrometheusCollector(c))
        # the high watermark of orders.eu-1 is learned from a fetch: read 5 of the 25
        assert consume(c, 5, max_records=5) == {p1: expected(30, 5)}
        samples, _ = scrape(registry)
        total = "kafka_consumer_fetch_manager_records_consumed_total"
        assert samples[(total, labels("live", None))] == 147.0
        assert samples[(total, labels("live", None, topic="orders_eu"))] == 135.0
        assert samples[(total, labels("live", None, topic="audit"))] == 12.0
        lag = "kafka_consumer_fetch_manager_records_lag"
        lead = "kafka_consumer_fetch_manager_records_lead"
        partition_lags = {dict(k[1])["partition"] + "@" + dict(k[1])["topic"]: v
                          for k, v in samples.items() if k[0] == lag}
        assert partition_lags == {"0@orders_eu": 0.0, "1@orders_eu": 20.0, "0@audit": 0.0}
        assert samples[(lead, labels("live", None, topic="orders_eu", partition="1"))] == 35.0
        assert samples[(lead, labels("live", None, topic="audit", partition="0"))] == 12.0
        # each against metrics() read now (nothing polls in between)
        now = expected_samples(c.metrics(), None)
        for key in [k for k in now if k[0] in (lag, lead, total)]:
            assert samples[key] == now[key], key
        # no group.id: no group_id label and no coordinator metrics
        assert all("group_id" not in dict(k[1]) for k in samples)
        assert not [k for k in samples if k[0].startswith("kafka_consumer_coordinator_")]
        # the rest read, the next scrape sees it
        assert consume(c, 20) == {p1: expected(35, 20)}
        samples, _ = scrape(registry)
        assert samples[(total, labels("live", None))] == 167.0
        assert samples[(lag, labels("live", None, topic="orders_eu", partition="1"))] == 0.0


def test_one_collector_exports_several_consumers_and_a_second_one_is_refused(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    tp = TP("t", 0)
    append(cluster, tp, 0, 9)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="one", **FAST) as a, \
            KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="two",
                          group_id="g2", **FAST) as b:
        a.assign([tp])
        b.assign([tp])
        consume(a, 9)
        consume(b, 4, max_records=4)
        collector = PrometheusCollector(a)
        collector.add(b)
        registry = CollectorRegistry(auto_describe=True)
        registry.register(collector)
        samples, _ = scrape(registry)
        total = "kafka_consumer_fetch_manager_records_consumed_total"
        assert samples[(total, labels("one", None))] == 9.0
        assert samples[(total, labels("two", "g2"))] == 4.0
        lag = "kafka_consumer_fetch_manager_records_lag"
        assert samples[(lag, labels("one", None, topic="t", partition="0"))] == 0.0
        assert samples[(lag, labels("two", "g2", topic="t", partition="0"))] == 5.0
        with pytest.raises(ValueError) as dup:
            registry.register(PrometheusCollector(b))
        assert str(dup.value).startswith("Duplicated timeseries in CollectorRegistry: ")
        collector.remove(a)
        samples, _ = scrape(registry)
        assert {dict(k[1])["client_id"] for k in samples} == {"two"}
        with pytest.raises(ValueError) as gone:
            collector.remove(a)
        assert str(gone.value) == "this collector does not export that KafkaConsumer"


def fetch(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers["Content-Type"], r.read().decode()


def test_the_endpoint_serves_the_scrape_on_loopback_until_closed(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 2})
    append(cluster, TP("t", 0), 0, 6)
    append(cluster, TP("t", 1), 0, 8)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="http",
                       group_id="g-http", **FAST) as c:
        c.assign([TP("t", 0), TP("t", 1)])
        consume(c, 14)
        server = serve_prometheus(c, 0)
        try:
            assert server.host == "127.0.0.1" and server.port > 0
            assert server.url == f"http://127.0.0.1:{server.port}/metrics"
            status, kind, text = fetch(server.url)
            assert status == 200 and kind.startswith("text/plain")
            samples, types = parse(text)
            assert samples[("kafka_consumer_fetch_manager_records_consumed_total",
                            labels("http", "g-http"))] == 14.0
            assert types["kafka_consumer_fetch_manager_records_consumed"] == "counter"
            assert samples[("kafka_consumer_fetch_manager_records_lag",
                            labels("http", "g-http", topic="t", partition="1"))] == 0.0
            # the endpoint reads metrics() per request: more records, a new number
            append(cluster, TP("t", 0), 6, 3)
            consume(c, 3)
            samples, _ = parse(fetch(server.url)[2])
            assert samples[("kafka_consumer_fetch_manager_records_consumed_total",
                            labels("http", "g-http"))] == 17.0
        finally:
            server.close()
        with pytest.raises(urllib.error.URLError) as refused:
            fetch(server.url)
        assert isinstance(refused.value.reason, ConnectionRefusedError)


def test_bad_endpoint_and_collector_arguments_are_clear_errors(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            registry = CollectorRegistry(auto_describe=True)
            with pytest.raises(OSError) as busy:
                serve_prometheus(c, port, registry=registry)
            assert busy.value.errno == errno.EADDRINUSE
            assert str(busy.value) == (f"[Errno {errno.EADDRINUSE}] serve_prometheus: cannot "
                                       f"listen on 127.0.0.1:{port}: Address already in use")
            # the collector left the registry: it can be served elsewhere
            assert list(registry.collect()) == []
        for bad in (-1, 65536, "9464", True):
            with pytest.raises(ValueError) as e:
                serve_prometheus(c, bad)  # type: ignore[arg-type]
            assert str(e.value) == ("serve_prometheus: port must be an int from 0 to 65535 "
                                    f"(0: any free port), got {bad!r}")
    with pytest.raises(TypeError) as t:
        PrometheusCollector("localhost:9092")  # type: ignore[arg-type]
    assert str(t.value) == ("a str is not a consumer to export: it has no metrics(), group_id "
                            "(a KafkaConsumer has them)")


def test_the_collector_describes_every_family_without_reading_the_consumer() -> None:
    class Untouchable:
        group_id = None

        def metrics(self) -> Mapping[MetricName, float]:
            raise AssertionError("read at registration")

    collector = PrometheusCollector(Untouchable())
    names = {f.name for f in collector.describe()}
    assert {"kafka_consumer_fetch_manager_records_consumed",
            "kafka_consumer_fetch_manager_records_lag", "kafka_consumer_connection_count",
            "kafka_consumer_coordinator_rebalance_latency"} <= names
    assert len(names) == 42
    CollectorRegistry(auto_describe=True).register(collector)
