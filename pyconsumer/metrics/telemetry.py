"""The consumer's metrics as KIP-714 client telemetry (what a PushTelemetry carries), before
the wire: which metrics a subscription selects and what each one's data point says.

Names are Kafka's telemetry names (:func:`~pyconsumer.metrics.catalog.telemetry_name`:
``org.apache.kafka.consumer.fetch.manager.records.consumed.total``); a subscription's
requested names are prefixes of them (none: nothing; the one name ``*``: everything, as
Java's ClientTelemetryUtils reads them). As Java's KafkaMetricsCollector, the cumulative
``*-total`` metrics are monotonic sums, delta or cumulative as the subscription asks, and
every other metric is a gauge; attributes are the tags, dashes as underscores, less
``client_id`` (the broker knows the client from the request). A sum's interval starts when
the metric was first collected (cumulative) or at the previous push (delta). A NaN (a window
with nothing in it) is left out: OTLP takes finite values. Nothing here runs per record:
:meth:`TelemetryCollector.collect` reads one ``metrics()`` mapping per push.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence

from pyconsumer.metrics import MetricName
from pyconsumer.metrics.catalog import attribute_name, is_cumulative, telemetry_name
from pyconsumer.metrics.otlp import CUMULATIVE, DELTA, DataPoint, Metric

#: the one requested name that selects every metric
ALL_METRICS = "*"
#: labels left out of the points: the broker adds what it knows of the client itself
EXCLUDED_ATTRIBUTES = frozenset({"client_id"})

_Key = tuple[str, frozenset[tuple[str, str]]]


def selects(requested: Sequence[str], name: str) -> bool:
    """Whether a subscription asking for ``requested`` wants the metric called ``name``."""
    if not requested:
        return False
    if len(requested) == 1 and requested[0] == ALL_METRICS:
        return True
    return any(name.startswith(prefix) for prefix in requested)


class TelemetryCollector:
    """Turns ``metrics()`` readings into OTLP metrics, keeping for each sum when it was first
    seen and (for deltas) the value and time of the last push."""

    def __init__(self, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._clock_ns = clock_ns
        self._first_seen: dict[_Key, int] = {}
        self._last: dict[_Key, tuple[int, float]] = {}

    def reset(self) -> None:
        """Forget every sum's history (the subscription's temporality changed)."""
        self._first_seen.clear()
        self._last.clear()

    def collect(self, metrics: Mapping[MetricName, float], requested: Sequence[str],
                delta: bool) -> list[Metric]:
        """The selected metrics of one reading, one OTLP metric per name (a point per tag set),
        in name order."""
        now = self._clock_ns()
        points: dict[str, list[DataPoint]] = {}
        sums: set[str] = set()
        for metric, value in metrics.items():
            name = telemetry_name(metric.group, metric.name)
            if not selects(requested, name) or not math.isfinite(value):
                continue
            attributes = {attribute_name(t): v for t, v in sorted(metric.tags.items())
                          if attribute_name(t) not in EXCLUDED_ATTRIBUTES}
            if is_cumulative(metric.name):
                key = (name, frozenset(attributes.items()))
                start = self._first_seen.setdefault(key, now)
                if delta:
                    last = self._last.get(key)
                    self._last[key] = (now, value)
                    if last is not None:
                        start, value = last[0], value - last[1]
                points.setdefault(name, []).append(DataPoint(value, now, start, attributes))
                sums.add(name)
            else:
                points.setdefault(name, []).append(DataPoint(value, now, 0, attributes))
        temporality = DELTA if delta else CUMULATIVE
        return [Metric(name, tuple(pts), temporality if name in sums else None)
                for name, pts in sorted(points.items())]


__all__ = ["ALL_METRICS", "EXCLUDED_ATTRIBUTES", "TelemetryCollector", "selects"]
