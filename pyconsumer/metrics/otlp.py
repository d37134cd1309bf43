"""OTLP metrics as protobuf bytes: the ``MetricsData`` message of opentelemetry-proto
(``opentelemetry/proto/metrics/v1/metrics.proto``; the same layout as the collector's
``ExportMetricsServiceRequest``), which KIP-714's PushTelemetry carries.

Only what client telemetry sends is written: one ``ResourceMetrics`` with the resource's
string attributes, one ``ScopeMetrics`` with the scope's name and version, and per metric a
``Sum`` (monotonic, delta or cumulative) or a ``Gauge`` of ``NumberDataPoint``s with string
attributes, start and end times in ns since the epoch and a double value. A protobuf writer
of our own for exactly these messages keeps the consumer free of a protobuf dependency; the
tests decode its output with opentelemetry-proto's generated classes.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: AggregationTemporality values of metrics.proto
DELTA = 1
CUMULATIVE = 2

# protobuf wire types
_VARINT = 0
_FIXED64 = 1
_LEN = 2

_DOUBLE = struct.Struct("<d")
_U64 = struct.Struct("<Q")


@dataclass(frozen=True)
class DataPoint:
    """One ``NumberDataPoint``: a value at ``time_ns``, over the interval from ``start_ns``
    (sums; 0 for gauges, which have none)."""

    value: float
    time_ns: int
    start_ns: int = 0
    attributes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Metric:
    """One ``Metric``: a monotonic ``Sum`` when ``temporality`` is :data:`DELTA` or
    :data:`CUMULATIVE`, a ``Gauge`` when it is None."""

    name: str
    points: tuple[DataPoint, ...]
    temporality: int | None = None


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _len(number: int, payload: bytes) -> bytes:
    return _key(number, _LEN) + _varint(len(payload)) + payload


def _string(number: int, text: str) -> bytes:
    return _len(number, text.encode("utf-8")) if text else b""


def _key_values(number: int, attributes: Mapping[str, str]) -> bytes:
    # KeyValue {key = 1; AnyValue value = 2}, AnyValue {string_value = 1}
    return b"".join(_len(number, _string(1, k) + _len(2, _string(1, v)))
                    for k, v in attributes.items())


def _point(p: DataPoint) -> bytes:
    # NumberDataPoint: start_time_unix_nano = 2, time_unix_nano = 3 (fixed64),
    # as_double = 4 (double), attributes = 7
    out = b""
    if p.start_ns:
        out += _key(2, _FIXED64) + _U64.pack(p.start_ns)
    out += _key(3, _FIXED64) + _U64.pack(p.time_ns)
    out += _key(4, _FIXED64) + _DOUBLE.pack(p.value)
    return out + _key_values(7, p.attributes)


def _metric(m: Metric) -> bytes:
    points = b"".join(_len(1, _point(p)) for p in m.points)
    if m.temporality is None:
        data = _len(5, points)                                  # Gauge {data_points = 1}
    else:
        # Sum {data_points = 1, aggregation_temporality = 2, is_monotonic = 3}
        data = _len(7, points + _key(2, _VARINT) + _varint(m.temporality)
                    + _key(3, _VARINT) + b"\x01")
    return _string(1, m.name) + data


def encode_metrics_data(resource: Mapping[str, str], scope_name: str, scope_version: str,
                        metrics: Iterable[Metric]) -> bytes:
    """``MetricsData{resource_metrics: [{resource, scope_metrics: [{scope, metrics}]}]}``."""
    scope = _string(1, scope_name) + _string(2, scope_version)
    scope_metrics = _len(1, scope) + b"".join(_len(2, _metric(m)) for m in metrics)
    resource_metrics = _len(1, _key_values(1, resource)) + _len(2, scope_metrics)
    return _len(1, resource_metrics)


__all__ = ["CUMULATIVE", "DELTA", "DataPoint", "Metric", "encode_metrics_data"]
