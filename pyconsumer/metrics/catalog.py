"""The consumer's metric names by group (Java's), and the kind of each one.

``*-total`` metrics are cumulative (Java's CumulativeSum / CumulativeCount: they only grow);
every other one is a gauge (a windowed avg/max/min/rate, or a value read when metrics() is
called). The exporters (:mod:`pyconsumer.metrics.prometheus`, :mod:`pyconsumer.metrics.otel`)
declare their instruments from this list, so a metric that appears later (a topic's, a
partition's) already has its instrument.
"""
from __future__ import annotations

import functools

FETCH_GROUP = "consumer-fetch-manager-metrics"
CONSUMER_GROUP = "consumer-metrics"
COORDINATOR_GROUP = "consumer-coordinator-metrics"

#: every metric name pyconsumer reports, by group (per-topic and per-partition ones carry
#: the extra tags ``topic`` / ``topic`` + ``partition``)
METRICS: dict[str, tuple[str, ...]] = {
    FETCH_GROUP: (
        "records-consumed-rate", "records-consumed-total", "bytes-consumed-rate",
        "bytes-consumed-total", "fetch-size-avg", "fetch-size-max", "fetch-latency-avg",
        "fetch-latency-max", "fetch-rate", "fetch-total", "records-lag-max", "records-lead-min",
        "records-lag", "records-lag-avg", "records-lead", "records-lead-avg",
        "records-decoded-total", "records-malformed-total", "records-dropped-total",
        "schema-ids-seen"),
    CONSUMER_GROUP: ("time-between-poll-avg", "time-between-poll-max", "poll-idle-ratio-avg",
                     "last-poll-seconds-ago", "connection-count"),
    COORDINATOR_GROUP: (
        "commit-latency-avg", "commit-latency-max", "commit-rate", "commit-total",
        "heartbeat-response-time-max", "heartbeat-rate", "heartbeat-total",
        "last-heartbeat-seconds-ago", "rebalance-latency-avg", "rebalance-latency-max",
        "rebalance-latency-total", "rebalance-total", "rebalance-rate-per-hour",
        "failed-rebalance-total", "failed-rebalance-rate-per-hour", "last-rebalance-seconds-ago",
        "assigned-partitions"),
}


def is_cumulative(name: str) -> bool:
    """Whether the metric called ``name`` only grows (a counter to an exporter)."""
    return name.endswith("-total")


def telemetry_name(group: str, name: str) -> str:
    """KIP-714's name of a metric (its OpenTelemetry name, as Java's client telemetry names
    it): ``org.apache.kafka.`` + the group less ``-metrics`` + the name, lower case, dashes
    as dots: ``org.apache.kafka.consumer.fetch.manager.records.consumed.total``."""
    if group.endswith("-metrics"):
        group = group[:-len("-metrics")]
    return f"org.apache.kafka.{group}.{name}".lower().replace("-", ".")


@functools.lru_cache(maxsize=256)
def attribute_name(tag: str) -> str:
    """KIP-714's attribute (label) name of a tag: lower case, dashes as underscores
    (``client-id`` -> ``client_id``)."""
    return tag.lower().replace("-", "_")


__all__ = ["CONSUMER_GROUP", "COORDINATOR_GROUP", "FETCH_GROUP", "METRICS", "attribute_name",
           "is_cumulative", "telemetry_name"]
