"""The OTLP writer and the telemetry collector, read back with opentelemetry-proto's own
generated classes (MetricsData and the collector's ExportMetricsServiceRequest)."""
from __future__ import annotations

import math

import pytest

from pyconsumer.metrics import MetricName
from pyconsumer.metrics.otlp import CUMULATIVE, DELTA, DataPoint, Metric, encode_metrics_data
from pyconsumer.metrics.telemetry import TelemetryCollector, selects

metrics_pb2 = pytest.importorskip("opentelemetry.proto.metrics.v1.metrics_pb2")
service_pb2 = pytest.importorskip(
    "opentelemetry.proto.collector.metrics.v1.metrics_service_pb2")

FETCH = "consumer-fetch-manager-metrics"


def _decoded(data: bytes) -> object:
    parsed = metrics_pb2.MetricsData()
    parsed.ParseFromString(data)
    return parsed


def test_a_sum_and_a_gauge_decode_with_opentelemetry_proto() -> None:
    data = encode_metrics_data(
        {"group_id": "g", "client_rack": "r1"}, "pyconsumer", "1.2.3",
        [Metric("org.apache.kafka.a.total",
                (DataPoint(42.0, 2_000_000_000_123, 1_000_000_000_000,
                           {"topic": "t", "partition": "3"}),), DELTA),
         Metric("org.apache.kafka.b.avg", (DataPoint(-1.5, 7, 0, {}),)),
         Metric("org.apache.kafka.c.total", (DataPoint(1e300, 9, 8, {}),), CUMULATIVE)])
    parsed = _decoded(data)
    assert len(parsed.resource_metrics) == 1
    rm = parsed.resource_metrics[0]
    assert [(a.key, a.value.string_value) for a in rm.resource.attributes] == [
        ("group_id", "g"), ("client_rack", "r1")]
    assert len(rm.scope_metrics) == 1
    sm = rm.scope_metrics[0]
    assert (sm.scope.name, sm.scope.version) == ("pyconsumer", "1.2.3")
    a, b, c = sm.metrics
    assert a.name == "org.apache.kafka.a.total" and a.WhichOneof("data") == "sum"
    assert a.sum.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
    assert a.sum.is_monotonic
    (p,) = a.sum.data_points
    assert (p.as_double, p.time_unix_nano, p.start_time_unix_nano) == (
        42.0, 2_000_000_000_123, 1_000_000_000_000)
    assert p.WhichOneof("value") == "as_double"
    assert {kv.key: kv.value.string_value for kv in p.attributes} == {"topic": "t",
                                                                       "partition": "3"}
    assert b.WhichOneof("data") == "gauge"
    (q,) = b.gauge.data_points
    assert (q.as_double, q.time_unix_nano, q.start_time_unix_nano) == (-1.5, 7, 0)
    assert c.sum.aggregation_temporality == metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE
    assert c.sum.data_points[0].as_double == 1e300
    # the same bytes are an ExportMetricsServiceRequest (the same field 1)
    request = service_pb2.ExportMetricsServiceRequest()
    request.ParseFromString(data)
    assert request.resource_metrics[0].scope_metrics[0].metrics[1].name == \
        "org.apache.kafka.b.avg"
    # and the library writes the same bytes for the same message
    assert parsed.SerializeToString(deterministic=True) == data


def test_an_empty_payload_and_non_ascii_text() -> None:
    parsed = _decoded(encode_metrics_data({}, "pyconsumer", "", []))
    sm = parsed.resource_metrics[0].scope_metrics[0]
    assert sm.scope.name == "pyconsumer" and not sm.metrics
    parsed = _decoded(encode_metrics_data({"group_id": "grüppe-✓"}, "s", "v", [
        Metric("m" * 300, (DataPoint(1.0, 1, 0, {"topic": "tö" * 100}),))]))
    rm = parsed.resource_metrics[0]
    assert rm.resource.attributes[0].value.string_value == "grüppe-✓"
    metric = rm.scope_metrics[0].metrics[0]
    assert metric.name == "m" * 300
    assert metric.gauge.data_points[0].attributes[0].value.string_value == "tö" * 100


def test_selection_by_prefix_all_and_none() -> None:
    name = "org.apache.kafka.consumer.fetch.manager.records.consumed.total"
    assert selects(["*"], name)
    assert not selects([], name)
    assert selects(["org.apache.kafka.consumer.fetch"], name)
    assert selects(["x", "org.apache.kafka.consumer."], name)
    assert not selects(["org.apache.kafka.consumer.coordinator"], name)
    assert not selects(["*", "x"], name)        # "*" means all only alone, as Java reads it


def _reading(consumed: float, lag: float, extra: float = math.nan
             ) -> dict[MetricName, float]:
    return {
        MetricName("records-consumed-total", FETCH, {"client-id": "c1"}): consumed,
        MetricName("records-lag", FETCH, {"client-id": "c1", "topic": "t",
                                         "partition": "0"}): lag,
        MetricName("fetch-latency-avg", FETCH, {"client-id": "c1"}): extra,
        MetricName("commit-total", "consumer-coordinator-metrics", {"client-id": "c1"}): 2.0,
    }


def test_the_collector_names_kinds_attributes_and_deltas() -> None:
    clock = iter([100, 250, 400, 500]).__next__
    collector = TelemetryCollector(clock_ns=clock)
    wanted = ["org.apache.kafka.consumer.fetch.manager."]
    first = collector.collect(_reading(10.0, 5.0), wanted, delta=True)
    # selected by prefix (commit-total is not), the NaN gauge left out, in name order
    assert [m.name for m in first] == [
        "org.apache.kafka.consumer.fetch.manager.records.consumed.total",
        "org.apache.kafka.consumer.fetch.manager.records.lag"]
    consumed, lag = first
    assert consumed.temporality == DELTA and lag.temporality is None
    assert consumed.points == (DataPoint(10.0, 100, 100, {}),)
    # client_id is left out; the other tags are attributes, dashes as underscores
    assert lag.points == (DataPoint(5.0, 100, 0, {"partition": "0", "topic": "t"}),)
    second = collector.collect(_reading(25.0, 1.0, 3.0), wanted, delta=True)
    assert second[0].name.endswith("fetch.latency.avg")
    assert second[0].points == (DataPoint(3.0, 250, 0, {}),)
    assert second[1].points == (DataPoint(15.0, 250, 100, {}),)     # the delta since 100
    # cumulative: the value as is, from when it was first collected
    third = collector.collect(_reading(30.0, 1.0), wanted, delta=False)
    assert third[0].name.endswith("records.consumed.total")
    assert third[0].temporality == CUMULATIVE
    assert third[0].points == (DataPoint(30.0, 400, 100, {}),)
    collector.reset()
    fourth = collector.collect(_reading(31.0, 1.0), ["*"], delta=True)
    assert [m.name for m in fourth][0] == "org.apache.kafka.consumer.coordinator.commit.total"
    assert fourth[1].points == (DataPoint(31.0, 500, 500, {}),)      # history forgotten
