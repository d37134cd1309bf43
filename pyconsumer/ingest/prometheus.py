"""``pyconsumer ingest --metrics-port``: the run's :class:`IngestMetrics` for Prometheus, read
at each scrape, served on 127.0.0.1 as :mod:`pyconsumer.metrics.prometheus` serves a
consumer's (counters' samples end in ``_total``; ``topic`` and ``partition`` labels)."""
from __future__ import annotations

from pyconsumer.ingest.metrics import IngestMetrics
from pyconsumer.metrics.prometheus import PrometheusServer

try:
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.metrics_core import Metric
except ImportError as e:         # an optional extra; the CLI checks it before Spark starts
    raise ImportError("--metrics-port needs prometheus-client, which is not installed") from e

PREFIX = "pyconsumer_ingest"


def _metric(name: str, text: str, kind: str) -> Metric:
    return Metric(f"{PREFIX}_{name}", text, kind)


class IngestCollector:
    """A ``prometheus_client`` collector of one run's numbers."""

    def __init__(self, metrics: IngestMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> list[Metric]:
        s = self._metrics.snapshot()
        out = []
        for name, value, text in (
                ("records", s.records, "records written"),
                ("bytes", s.bytes, "key and value bytes written"),
                ("micro_batches", s.batches, "micro-batches (or rounds) that wrote records"),
                ("rejected_records", s.rejected, "records rejected (--bad-records, "
                                                 "DROPMALFORMED)")):
            m = _metric(name, text, "counter")
            m.add_sample(m.name + "_total", {}, float(value))
            out.append(m)
        if s.rate is not None:
            rate = _metric("records_per_second", "records per second of the last micro-batch",
                           "gauge")
            rate.add_sample(rate.name, {}, s.rate)
            out.append(rate)
        offset = _metric("offset", "the next offset the run has written up to", "gauge")
        for (topic, partition), off in sorted(s.offsets.items()):
            offset.add_sample(offset.name, {"topic": topic, "partition": str(partition)},
                              float(off))
        lag = _metric("records_lag", "offsets behind the latest offset", "gauge")
        nbytes = _metric("bytes_lag", "estimated key and value bytes behind the latest offset",
                         "gauge")
        for p in s.lag:
            labels = {"topic": p.topic, "partition": str(p.partition)}
            lag.add_sample(lag.name, labels, float(p.records))
            if p.bytes is not None:
                nbytes.add_sample(nbytes.name, labels, float(p.bytes))
        return [*out, offset, lag, nbytes]


def serve_ingest_metrics(metrics: IngestMetrics, port: int, addr: str = "127.0.0.1"
                         ) -> PrometheusServer:
    """Serve ``metrics`` at ``http://addr:port/metrics`` (port 0: any free one) until
    ``close()``."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(IngestCollector(metrics))
    try:
        httpd, thread = start_http_server(port, addr, registry)
    except OSError as e:
        raise OSError(e.errno, f"--metrics-port: cannot listen on {addr}:{port}: "
                               f"{e.strerror or e}") from e
    return PrometheusServer(httpd, thread, registry)
