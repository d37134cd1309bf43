"""Java's metrics library in miniature: metric names, sensors and windowed stats.

A :class:`Sensor` records values into stats, and each
stat is read as one metric named by a :class:`MetricName` (name, group, tags; every metric has
the tag ``client-id``). Times are in milliseconds. Windowed stats (``*-avg``, ``*-max``, ``*-min``,
``*-rate``) keep ``metrics.num.samples`` samples of ``metrics.sample.window.ms`` each, as Java's
SampledStat: a sample older than ``samples * window`` is forgotten, an avg/max/min with no
value in the window is NaN, and a rate divides the window's sum (or count) by the time the
retained samples span, never less than ``samples - 1`` whole windows. ``*-total`` metrics are
cumulative. :func:`find` picks one value out of a ``metrics()`` mapping.

The consumer's own sensors are in :mod:`pyconsumer.consumer.metrics`, its metric names in
:mod:`pyconsumer.metrics.catalog`. The exporters read ``metrics()`` when asked:
:mod:`pyconsumer.metrics.prometheus` (the ``prometheus`` extra) and
:mod:`pyconsumer.metrics.otel` (the ``otel`` extra); the latter also hears each poll through
a poll listener (:mod:`pyconsumer.metrics.polls`). KIP-714 client telemetry reads them too:
:mod:`pyconsumer.metrics.telemetry` selects and shapes what a push carries,
:mod:`pyconsumer.metrics.otlp` writes it as OTLP (the consumer's reporter,
:mod:`pyconsumer.consumer.telemetry`, sends it).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType

from pyconsumer.metrics.polls import PollEvent, PollListener


class MetricName:
    """Java's ``MetricName``: equal (and hashed) by name, group and tags; the description is
    for reading only. Immutable; ``tags`` is a read-only mapping."""

    __slots__ = ("name", "group", "tags", "description", "_key")

    name: str
    group: str
    tags: Mapping[str, str]
    description: str
    _key: tuple[str, str, frozenset[tuple[str, str]]]

    def __init__(self, name: str, group: str, tags: Mapping[str, str] | None = None,
                 description: str = "") -> None:
        frozen = MappingProxyType(dict(tags or {}))
        for attr, value in (("name", name), ("group", group), ("tags", frozen),
                            ("description", description),
                            ("_key", (name, group, frozenset(frozen.items())))):
            object.__setattr__(self, attr, value)

    def __setattr__(self, attr: str, value: object) -> None:
        raise AttributeError("MetricName is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricName):
            return NotImplemented
        return bool(self._key == other._key)

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"MetricName(name={self.name!r}, group={self.group!r}, tags={dict(self.tags)!r})"


# ---------------------------------------------------------------------------- stats
# Times are in ms (monotonic clock). A stat's ``record`` takes the value and the time; its
# ``measure`` the window config and the time.


class _Window:
    """``metrics.num.samples`` and ``metrics.sample.window.ms``."""

    __slots__ = ("samples", "window_ms")

    def __init__(self, samples: int, window_ms: float) -> None:
        self.samples = samples
        self.window_ms = window_ms


class _Sample:
    __slots__ = ("start", "value", "count")

    def __init__(self, start: float, value: float) -> None:
        self.start = start
        self.value = value
        self.count = 0


class _Sampled:
    """Java's SampledStat: ``samples`` windows in a ring; the current one rolls over when
    its window has passed, and a sample as old as all the windows together is reset.

    Each kind's ``record`` is one call with the update written in: a poll() records about a
    dozen stats, so a second call per stat is a measurable part of a 500-record poll."""

    __slots__ = ("_samples", "_current", "_sample")
    initial = 0.0

    def __init__(self) -> None:
        self._samples: list[_Sample] = []
        self._current = 0
        #: the sample being filled (None before the first record)
        self._sample: _Sample | None = None

    def record(self, w: _Window, value: float, now: float) -> None:
        raise NotImplementedError

    def _roll(self, w: _Window, now: float) -> _Sample:
        """The sample to record into at ``now``, its window having passed (or none yet): the
        next one of the ring, reset."""
        samples = self._samples
        if samples:
            self._current = (self._current + 1) % w.samples
        if self._current >= len(samples):
            sample = _Sample(now, self.initial)
            samples.append(sample)
        else:
            sample = samples[self._current]
            sample.start, sample.value, sample.count = now, self.initial, 0
        self._sample = sample
        return sample

    def _purge(self, w: _Window, now: float) -> None:
        expire = w.samples * w.window_ms
        for s in self._samples:
            if now - s.start >= expire:
                s.start, s.value, s.count = now, self.initial, 0

    def measure(self, w: _Window, now: float) -> float:
        self._purge(w, now)
        return self.combine()

    def combine(self) -> float:
        raise NotImplementedError

    def oldest_start(self, now: float) -> float:
        return min((s.start for s in self._samples), default=now)


class _Avg(_Sampled):
    __slots__ = ()

    def record(self, w: _Window, value: float, now: float) -> None:
        sample = self._sample
        if sample is None or now - sample.start >= w.window_ms:
            sample = self._roll(w, now)
        sample.value += value
        sample.count += 1

    def combine(self) -> float:
        count = sum(s.count for s in self._samples)
        return sum(s.value for s in self._samples) / count if count else math.nan


class _Max(_Sampled):
    __slots__ = ()
    initial = -math.inf

    def record(self, w: _Window, value: float, now: float) -> None:
        sample = self._sample
        if sample is None or now - sample.start >= w.window_ms:
            sample = self._roll(w, now)
        if value > sample.value:
            sample.value = value
        sample.count += 1

    def combine(self) -> float:
        seen = [s.value for s in self._samples if s.count]
        return max(seen) if seen else math.nan


class _Min(_Sampled):
    __slots__ = ()
    initial = math.inf

    def record(self, w: _Window, value: float, now: float) -> None:
        sample = self._sample
        if sample is None or now - sample.start >= w.window_ms:
            sample = self._roll(w, now)
        if value < sample.value:
            sample.value = value
        sample.count += 1

    def combine(self) -> float:
        seen = [s.value for s in self._samples if s.count]
        return min(seen) if seen else math.nan


class _WindowedSum(_Avg):
    """The same samples as an average (value summed, events counted), combined as a sum."""

    __slots__ = ()

    def combine(self) -> float:
        return sum(s.value for s in self._samples)


class _WindowedCount(_WindowedSum):
    __slots__ = ()

    def record(self, w: _Window, value: float, now: float) -> None:
        _Avg.record(self, w, 1.0, now)          # counts are rare events: the extra call is fine


class _Rate:
    """Java's Rate: the window's sum (or count) per ``unit_ms`` over the time the retained
    samples span (at least ``samples - 1`` whole windows, at least 1 ms)."""

    __slots__ = ("stat", "unit_ms")

    def __init__(self, stat: _Sampled, unit_ms: float = 1000.0) -> None:
        self.stat = stat
        self.unit_ms = unit_ms

    def record(self, w: _Window, value: float, now: float) -> None:
        self.stat.record(w, value, now)

    def measure(self, w: _Window, now: float) -> float:
        total = self.stat.measure(w, now)          # purges first, as Java's windowSize does
        elapsed = now - self.stat.oldest_start(now)
        full = int(elapsed // w.window_ms)
        if full < w.samples - 1:
            elapsed += (w.samples - 1 - full) * w.window_ms
        return total / (max(elapsed, 1.0) / self.unit_ms)


class _Total:
    """CumulativeSum (or CumulativeCount with ``count``)."""

    __slots__ = ("value", "count")

    def __init__(self, count: bool = False) -> None:
        self.value = 0.0
        self.count = count

    def record(self, w: _Window, value: float, now: float) -> None:
        self.value += 1.0 if self.count else value

    def measure(self, w: _Window, now: float) -> float:
        return self.value


_Stat = _Sampled | _Rate | _Total


#: the record methods of some stats, called (window, value, now)
_Recorders = tuple[Callable[[_Window, float, float], None], ...]


class Sensor:
    """Records a value into each of its stats (one ``record`` call per event)."""

    __slots__ = ("_stats", "_recorders", "_window", "_clock")

    def __init__(self, window: _Window, clock: Callable[[], float]) -> None:
        self._stats: list[_Stat] = []
        #: the bound record methods, a Rate's own stat directly (it only delegates): a
        #: poll() records several sensors, so each call level counts
        self._recorders: list[Callable[[_Window, float, float], None]] = []
        self._window = window
        self._clock = clock

    def add(self, stat: _Stat) -> _Stat:
        self._stats.append(stat)
        self._recorders.append(stat.stat.record if isinstance(stat, _Rate) else stat.record)
        return stat

    @property
    def recorders(self) -> _Recorders:
        """Its stats' record methods (to record into several sensors in one loop)."""
        return tuple(self._recorders)

    def record(self, value: float = 1.0, now: float | None = None) -> None:
        if now is None:
            now = self._clock()
        w = self._window
        for record in self._recorders:
            record(w, value, now)


def find(metrics: Mapping[MetricName, float], name: str, group: str | None = None,
         **tags: str) -> float:
    """The value of the metric called ``name`` (in ``group``) with exactly the tags
    ``tags`` besides ``client-id`` or, when there is no such metric, the one metric whose
    tags include them: ``find(m, "bytes-consumed-total")`` is the all-topics total,
    ``find(m, "records-lag", partition="0")`` the lag of the one partition 0. KeyError when
    none or several match."""
    named = [(m, v) for m, v in metrics.items()
             if m.name == name and (group is None or m.group == group)
             and all(m.tags.get(k) == v for k, v in tags.items())]
    exact = [v for m, v in named if set(m.tags) - {"client-id"} == set(tags)]
    hits = exact or [v for _, v in named]
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} metrics named {name!r} in {group or 'any group'} with "
                       f"tags {tags}")
    return hits[0]


__all__ = ["MetricName", "PollEvent", "PollListener", "Sensor", "find"]
