"""What the exporters need of a consumer, named structurally (a KafkaConsumer is each of
these): its metrics and group id to read (:class:`MetricsSource`), and poll listeners to hear
each poll (:class:`ListenedConsumer`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pyconsumer.metrics import MetricName
from pyconsumer.metrics.polls import PollListener


class MetricsSource(Protocol):
    """A consumer's metrics (Java's names) and its ``group.id`` (None without one)."""

    def metrics(self) -> Mapping[MetricName, float]: ...

    @property
    def group_id(self) -> str | None: ...


class ListenedConsumer(MetricsSource, Protocol):
    """A :class:`MetricsSource` that also tells poll listeners of each poll."""

    def add_poll_listener(self, listener: PollListener) -> None: ...

    def remove_poll_listener(self, listener: PollListener) -> None: ...


def checked_source(consumer: object, *methods: str) -> None:
    """TypeError naming what ``consumer`` lacks of ``metrics()``, ``group_id`` and ``methods``."""
    missing = [f"{m}()" for m in ("metrics", *methods) if not callable(getattr(consumer, m, None))]
    if not hasattr(consumer, "group_id"):
        missing.append("group_id")
    if missing:
        raise TypeError(f"a {type(consumer).__qualname__} is not a consumer to export: it has no "
                        f"{', '.join(missing)} (a KafkaConsumer has them)")


__all__ = ["ListenedConsumer", "MetricsSource", "checked_source"]
