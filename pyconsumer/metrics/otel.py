"""The consumer's metrics for OpenTelemetry (the ``otel`` extra: opentelemetry-api; an SDK
and an exporter are the application's choice).

``instrument(consumer, meter=None)`` puts two kinds of instruments on ``meter`` (by default
the global MeterProvider's meter ``pyconsumer``):

* Observable instruments over ``metrics()``, read when the SDK collects, named as Kafka's
  own client telemetry (KIP-714) names them: ``org.apache.kafka.`` + the group less
  ``-metrics`` + the name, dashes as dots
  (``org.apache.kafka.consumer.fetch.manager.records.consumed.total``). The cumulative
  ``*-total`` metrics are observable counters, the others observable gauges. Attributes are
  the tags, dashes as underscores (``client_id``, ``topic``, ``partition``), plus ``group_id``
  for a consumer with a group.id. A windowed stat with nothing in its window (NaN in
  ``metrics()``) is not observed: OpenTelemetry takes finite values only.
* The messaging semantic conventions' consumer metrics, fed by a poll listener
  (``KafkaConsumer.add_poll_listener``): ``messaging.client.consumed.messages`` (a counter,
  ``{message}``: the records each poll handed out, per partition, the same count as
  ``records-consumed-total``) and ``messaging.client.operation.duration`` (a histogram, ``s``:
  each poll()'s / poll_arrow()'s duration, empty polls included). Attributes:
  ``messaging.system`` = ``kafka``, ``messaging.operation.name`` = ``poll``,
  ``messaging.operation.type`` = ``receive``, ``messaging.consumer.group.name`` (with a
  group.id), ``error.type`` (the exception's qualified class name, when the poll raised); the
  counter adds ``messaging.destination.name`` and ``messaging.destination.partition.id``; the
  histogram has the destination name only when the poll's records came from one topic, and
  the partition id only when from one partition.

Instruments are made once per meter: every consumer instrumented on the same meter shares
them. Nothing is done per record: the observable ones read ``metrics()`` once per consumer
per collection, the poll listener works per drained partition.
"""
from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType

from pyconsumer._version import __version__
from pyconsumer._install import install_hint
from pyconsumer.metrics import MetricName
from pyconsumer.metrics.catalog import METRICS, attribute_name, is_cumulative, telemetry_name
from pyconsumer.metrics.polls import PollEvent
from pyconsumer.metrics.source import ListenedConsumer, checked_source

try:
    from opentelemetry import metrics as otel_metrics
    from opentelemetry.metrics import CallbackOptions, Counter, Histogram, Meter, Observation
except ImportError as e:         # an optional extra
    raise ImportError(f"pyconsumer.metrics.otel needs opentelemetry-api, which is not installed: "
                      f"{install_hint('otel')}") from e

CONSUMED_MESSAGES = "messaging.client.consumed.messages"
OPERATION_DURATION = "messaging.client.operation.duration"
#: the semantic conventions' advice for messaging.client.operation.duration (seconds)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                    7.5, 10.0)


def unit_of(name: str) -> str:
    """The UCUM unit of Java's consumer metric ``name`` (times in ms as Java keeps them)."""
    if name.endswith("-seconds-ago"):
        return "s"
    if "latency" in name or "time" in name:
        return "ms"
    per = "/h" if name.endswith("-rate-per-hour") else "/s" if name.endswith("-rate") else ""
    if name.startswith("bytes-") or name.startswith("fetch-size"):
        return "By" + per
    return "1" + per


class _Readings:
    """One consumer's ``metrics()``, read once per collection: the first instrument to ask
    in a collection reads them, the others reuse that reading (an instrument asking twice
    means a new collection). Indexed by (group, name)."""

    def __init__(self, consumer: ListenedConsumer) -> None:
        self.consumer = consumer
        self._lock = threading.Lock()
        self._by_name: dict[tuple[str, str], list[tuple[MetricName, float]]] | None = None
        self._asked: set[str] = set()

    def of(self, instrument: str, key: tuple[str, str]) -> list[tuple[MetricName, float]]:
        with self._lock:
            if self._by_name is None or instrument in self._asked:
                self._by_name = _indexed(self.consumer.metrics())
                self._asked = set()
            self._asked.add(instrument)
            return self._by_name.get(key, [])


def _indexed(metrics: Mapping[MetricName, float]
             ) -> dict[tuple[str, str], list[tuple[MetricName, float]]]:
    out: dict[tuple[str, str], list[tuple[MetricName, float]]] = {}
    for metric, value in metrics.items():
        out.setdefault((metric.group, metric.name), []).append((metric, value))
    return out


def _attributes(metric: MetricName, group_id: str | None) -> dict[str, str]:
    attributes = {attribute_name(tag): value for tag, value in metric.tags.items()}
    if group_id is not None:
        attributes["group_id"] = group_id
    return attributes


class _PollRecorder:
    """The poll listener of one consumer: each poll into the semantic-convention instruments."""

    def __init__(self, consumed: Counter, duration: Histogram, group_id: str | None) -> None:
        self._consumed = consumed
        self._duration = duration
        base = {"messaging.system": "kafka", "messaging.operation.name": "poll",
                "messaging.operation.type": "receive"}
        if group_id is not None:
            base["messaging.consumer.group.name"] = group_id
        self._base = base

    def on_poll(self, event: PollEvent) -> None:
        base = self._base
        if event.error is not None:
            kind = type(event.error)
            base = {**base, "error.type": f"{kind.__module__}.{kind.__qualname__}"}
        for tp, count in event.consumed.items():
            self._consumed.add(count, {**base, "messaging.destination.name": tp.topic,
                                       "messaging.destination.partition.id": str(tp.partition)})
        attributes = dict(base)
        topics = {tp.topic for tp in event.consumed}
        if len(topics) == 1:
            attributes["messaging.destination.name"] = topics.pop()
            if len(event.consumed) == 1:
                attributes["messaging.destination.partition.id"] = str(
                    next(iter(event.consumed)).partition)
        self._duration.record(event.duration_s, attributes)


class _MeterInstruments:
    """The instruments on one meter, and the consumers they read."""

    def __init__(self, meter: Meter) -> None:
        self._lock = threading.Lock()
        self._readings: tuple[_Readings, ...] = ()
        self.consumed = meter.create_counter(
            CONSUMED_MESSAGES, unit="{message}",
            description="Number of messages that were delivered to the application.")
        self.duration = meter.create_histogram(
            OPERATION_DURATION, unit="s",
            description="Duration of messaging operation initiated by a producer or consumer "
                        "client.", explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        for group, names in METRICS.items():
            for name in names:
                called = telemetry_name(group, name)
                callbacks = [self._observer(group, name)]
                description = f"Kafka consumer metric {name} ({group})"
                if is_cumulative(name):
                    meter.create_observable_counter(called, callbacks, unit_of(name), description)
                else:
                    meter.create_observable_gauge(called, callbacks, unit_of(name), description)

    def _observer(self, group: str, name: str
                  ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        instrument = telemetry_name(group, name)

        def observe(options: CallbackOptions) -> Iterable[Observation]:
            out = []
            for readings in self._readings:
                group_id = readings.consumer.group_id
                for metric, value in readings.of(instrument, (group, name)):
                    if not math.isnan(value):       # nothing in the window: no value to give
                        out.append(Observation(value, _attributes(metric, group_id)))
            return out
        return observe

    def add(self, consumer: ListenedConsumer) -> None:
        with self._lock:
            if any(r.consumer is consumer for r in self._readings):
                raise ValueError("this consumer is already instrumented on this meter")
            self._readings = (*self._readings, _Readings(consumer))

    def remove(self, consumer: ListenedConsumer) -> None:
        with self._lock:
            self._readings = tuple(r for r in self._readings if r.consumer is not consumer)


#: the instruments made on each meter (instruments of the same name on one meter are made
#: once: the SDK hands back the first ones, with their callbacks)
_ON_METER: weakref.WeakKeyDictionary[Meter, _MeterInstruments] = weakref.WeakKeyDictionary()
_ON_METER_LOCK = threading.Lock()
_default_meter: Meter | None = None


def _instruments_on(meter: Meter | None) -> tuple[Meter, _MeterInstruments]:
    global _default_meter
    with _ON_METER_LOCK:
        if meter is None:
            # one meter for the process: each get_meter() of a proxy provider is a new object
            if _default_meter is None:
                _default_meter = otel_metrics.get_meter("pyconsumer", __version__)
            meter = _default_meter
        instruments = _ON_METER.get(meter)
        if instruments is None:
            instruments = _ON_METER[meter] = _MeterInstruments(meter)
        return meter, instruments


class Instrumentation:
    """A consumer instrumented on a meter (from :func:`instrument`); :meth:`close` stops it
    (also as a context manager). Closing the consumer does not: the gauges keep reading the
    closed consumer's last values until this is closed."""

    def __init__(self, consumer: ListenedConsumer, meter: Meter,
                 instruments: _MeterInstruments) -> None:
        self.consumer = consumer
        self.meter = meter
        self._instruments = instruments
        listener = _PollRecorder(instruments.consumed, instruments.duration, consumer.group_id)
        instruments.add(consumer)
        try:
            consumer.add_poll_listener(listener)
        except BaseException:
            instruments.remove(consumer)
            raise
        self._listener: _PollRecorder | None = listener

    def close(self) -> None:
        """Stop recording and observing the consumer (again: nothing)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            self.consumer.remove_poll_listener(listener)
            self._instruments.remove(self.consumer)

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def instrument(consumer: ListenedConsumer, meter: Meter | None = None) -> Instrumentation:
    """Export ``consumer``'s metrics through OpenTelemetry on ``meter`` (by default the global
    MeterProvider's ``pyconsumer`` meter), from now until the result's ``close()``."""
    checked_source(consumer, "add_poll_listener", "remove_poll_listener")
    if meter is not None and not callable(getattr(meter, "create_observable_gauge", None)):
        raise TypeError(f"instrument: meter must be an opentelemetry.metrics.Meter, got a "
                        f"{type(meter).__qualname__}")
    meter, instruments = _instruments_on(meter)
    return Instrumentation(consumer, meter, instruments)


__all__ = ["CONSUMED_MESSAGES", "DURATION_BUCKETS", "Instrumentation", "OPERATION_DURATION",
           "instrument", "unit_of"]
