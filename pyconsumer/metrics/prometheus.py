"""The consumer's metrics for Prometheus (the ``prometheus`` extra: prometheus-client).

:class:`PrometheusCollector` is a collector for a ``prometheus_client`` registry: each scrape
reads ``metrics()`` of its consumers then and there (nothing is recorded in between, so the
exporter costs the consumer nothing until it is scraped). :func:`serve_prometheus` serves one
consumer's metrics over HTTP in one call.

Names: Java's ``(group, name)`` becomes ``kafka_consumer_<group>_<name>``, the group less
its ``consumer-`` and ``-metrics`` (``consumer-metrics`` adds nothing), dashes as
underscores: ``records-consumed-total`` of ``consumer-fetch-manager-metrics`` is
``kafka_consumer_fetch_manager_records_consumed_total``, ``commit-latency-avg`` of
``consumer-coordinator-metrics`` is ``kafka_consumer_coordinator_commit_latency_avg``,
``last-poll-seconds-ago`` is ``kafka_consumer_last_poll_seconds_ago``. The cumulative
``*-total`` metrics are counters (their samples end in ``_total``), all the others gauges.
Labels are the metric's tags, dashes as underscores (``client_id``, ``topic``, ``partition``;
the topic as Java tags it, '.' as '_'), plus ``group_id`` for a consumer with a group.id.
A metric Java keeps per client and per topic gives both series: the client's has no
``topic`` label.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from wsgiref.simple_server import WSGIServer

from pyconsumer._install import install_hint
from pyconsumer.metrics import MetricName
from pyconsumer.metrics.catalog import METRICS, attribute_name, is_cumulative
from pyconsumer.metrics.source import MetricsSource, checked_source

try:
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.metrics_core import Metric
except ImportError as e:         # an optional extra
    raise ImportError(f"pyconsumer.metrics.prometheus needs prometheus-client, which is not installed: "
                      f"{install_hint('prometheus')}") from e

PREFIX = "kafka_consumer"

_NOT_IN_A_NAME = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(group: str, name: str) -> str:
    """The Prometheus name of Java's metric ``name`` of ``group`` (a counter's family name: its
    samples add ``_total``)."""
    words = group.removesuffix("-metrics").split("-")
    if words[0] == "consumer":
        words = words[1:]
    if is_cumulative(name):
        name = name.removesuffix("-total")
    full = "_".join([PREFIX, *words, name.replace("-", "_")])
    return _NOT_IN_A_NAME.sub("_", full)


def _family(group: str, name: str) -> Metric:
    kind = "counter" if is_cumulative(name) else "gauge"
    return Metric(prometheus_name(group, name), f"Kafka consumer metric {name} ({group})", kind)


def _checked(consumer: MetricsSource) -> MetricsSource:
    checked_source(consumer)
    return consumer


class PrometheusCollector:
    """A ``prometheus_client`` collector of the metrics of one or more consumers, read at
    each scrape. Register it once per registry (it describes every family it can give, so
    a second one on the same registry is refused as a duplicate): to export several
    consumers, give them all to one collector (or :meth:`add` them)."""

    def __init__(self, *consumers: MetricsSource) -> None:
        self._lock = threading.Lock()
        self._consumers: tuple[MetricsSource, ...] = tuple(_checked(c) for c in consumers)
        self._labels: dict[tuple[MetricName, str | None], dict[str, str]] = {}

    def add(self, consumer: MetricsSource) -> None:
        """Export ``consumer`` too, from the next scrape on."""
        checked = _checked(consumer)
        with self._lock:
            self._consumers = (*self._consumers, checked)

    def remove(self, consumer: MetricsSource) -> None:
        """Stop exporting ``consumer`` (ValueError if it is not exported here)."""
        with self._lock:
            kept = [c for c in self._consumers if c is not consumer]
            if len(kept) == len(self._consumers):
                raise ValueError(f"this collector does not export that "
                                 f"{type(consumer).__qualname__}")
            self._consumers = tuple(kept)

    def describe(self) -> list[Metric]:
        """Every family a scrape may give (no samples): the registry checks names with it."""
        return [_family(group, name) for group, names in METRICS.items() for name in names]

    def collect(self) -> list[Metric]:
        """The families of every consumer's metrics now."""
        families: dict[tuple[str, str], Metric] = {}
        labels: dict[tuple[MetricName, str | None], dict[str, str]] = {}
        for consumer in self._consumers:
            self._add_samples(families, consumer.metrics().items(), consumer.group_id, labels)
        # a consumer keeps its metrics' names while their partitions stay assigned: their
        # labels are made once, and those of names no scrape gave any more are let go
        self._labels = labels
        return list(families.values())

    def _add_samples(self, families: dict[tuple[str, str], Metric],
                     metrics: Iterable[tuple[MetricName, float]], group_id: str | None,
                     made: dict[tuple[MetricName, str | None], dict[str, str]]) -> None:
        known = self._labels
        for metric, value in metrics:
            key = (metric.group, metric.name)
            family = families.get(key)
            if family is None:
                family = families[key] = _family(*key)
            labels = known.get((metric, group_id))
            if labels is None:
                labels = {attribute_name(tag): v for tag, v in metric.tags.items()}
                if group_id is not None:
                    labels["group_id"] = group_id
            made[(metric, group_id)] = labels
            sample = family.name + "_total" if family.type == "counter" else family.name
            family.add_sample(sample, labels, value)


class PrometheusServer:
    """The HTTP server of :func:`serve_prometheus` (a daemon thread): ``url`` to scrape,
    :meth:`close` to stop it (also as a context manager)."""

    def __init__(self, httpd: WSGIServer, thread: threading.Thread,
                 registry: CollectorRegistry) -> None:
        self._httpd = httpd
        self._thread = thread
        #: the registry it serves
        self.registry = registry
        address = httpd.server_address
        self.host = str(address[0])
        self.port = int(address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and free the port (waits for the server thread)."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> PrometheusServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_prometheus(consumer: MetricsSource, port: int, addr: str = "127.0.0.1", *,
                     registry: CollectorRegistry | None = None) -> PrometheusServer:
    """Serve ``consumer``'s metrics for Prometheus at ``http://addr:port/metrics`` (port 0:
    any free port, see ``.port``) until ``close()``. The collector goes into ``registry``
    (a new one by default, holding only it)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"serve_prometheus: port must be an int from 0 to 65535 (0: any free "
                         f"port), got {port!r}")
    if registry is None:
        registry = CollectorRegistry(auto_describe=True)
    collector = PrometheusCollector(consumer)
    registry.register(collector)
    try:
        httpd, thread = start_http_server(port, addr, registry)
    except OSError as e:
        registry.unregister(collector)
        raise OSError(e.errno, f"serve_prometheus: cannot listen on {addr}:{port}: "
                               f"{e.strerror or e}") from e
    return PrometheusServer(httpd, thread, registry)


__all__ = ["PrometheusCollector", "PrometheusServer", "prometheus_name",
           "serve_prometheus"]
