"""Where each partition's log really ends: ListOffsets(latest), confirmed by a Fetch only on a
broker that needs it.

Apache Kafka answers ListOffsets(latest) with the log end (the last stable offset with
read_committed). A broker that implements the protocol without Kafka's log may not: one
answers the last batch's base offset + 1 (881 where the log ends at 1000), while its Fetch
watermarks are right. Such a broker is told apart by what its ApiVersions answer already
said: KRaft Apache Kafka (3.3+) advertises the finalized feature ``metadata.version``; a
broker that versions no features gets its listed ends checked by one fetch at them (where
the log really ends there, no records come back and the watermark equals it; where it does
not, the watermark is the true end). On Apache Kafka this costs nothing: no fetch, no
connection beyond the ListOffsets one. Used where "from the end" must be exact: the Spark
source's latest offsets and ``pyconsumer consume``'s start.

The fetch runs on a consumer of its own, closed afterwards: a fetch session (KIP-227) kept
across lookups would be answered incrementally, without the unchanged partitions, and their
watermarks would never come.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from pyconsumer.consumer.consumer import KafkaConsumer
from pyconsumer.structs import TopicPartition

__all__ = ["confirm_end_offsets", "end_offsets_exact", "lists_exact_ends"]

log = logging.getLogger(__name__)

#: how long the confirming fetch may take before ListOffsets' answer is used as it is
CONFIRM_TIMEOUT_S = 5.0

#: the finalized feature a broker with Kafka's own log advertises (KRaft Apache Kafka 3.3+)
KAFKA_LOG_FEATURE = "metadata.version"


def lists_exact_ends(consumer: KafkaConsumer) -> bool:
    """Whether every broker the consumer is connected to answers ListOffsets(latest) with the
    true log end: each advertises Kafka's ``metadata.version`` feature."""
    features = {node: f for node, f in consumer.finalized_features().items() if node >= 0}
    return bool(features) and all(KAFKA_LOG_FEATURE in f for f in features.values())


def end_offsets_exact(consumer: KafkaConsumer, partitions: list[TopicPartition],
                      settings: Mapping[str, Any], timeout_ms: float | None = None
                      ) -> dict[TopicPartition, int]:
    """``consumer.end_offsets(partitions)``, each confirmed by a fetch (on a consumer of
    ``settings``) when a broker asked may list ends short of the log's; see the module."""
    listed = consumer.end_offsets(partitions, timeout_ms=timeout_ms)
    if lists_exact_ends(consumer):
        return listed
    log.debug("a broker advertises no %s: confirming the listed end offsets by a fetch",
              KAFKA_LOG_FEATURE)
    return confirm_end_offsets(settings, listed)


def confirm_end_offsets(settings: Mapping[str, Any], listed: Mapping[TopicPartition, int],
                        *, timeout_s: float = CONFIRM_TIMEOUT_S) -> dict[TopicPartition, int]:
    """``listed`` (ListOffsets' latest offsets) with each end raised to the watermark a Fetch
    at it reports, when that is higher. ``settings`` are the consumer settings to fetch with
    (bootstrap, security, isolation level); negative listed offsets are left as they are."""
    parts = [tp for tp, off in listed.items() if off >= 0]
    out = dict(listed)
    if not parts:
        return out
    fetch_settings = {k: v for k, v in settings.items()
                      if k.replace("_", ".") not in ("group.id", "group.instance.id")}
    # a short wait: at the true end a broker holds the fetch that long (no records to send);
    # 1 ms, not 0, which some brokers never answer
    fetch_settings.update({"enable.auto.commit": False, "auto.offset.reset": "none",
                           "fetch.max.wait.ms": 1})
    c = KafkaConsumer(**fetch_settings)
    try:
        committed = c.config.isolation_level == "read_committed"

        def watermark(tp: TopicPartition) -> int | None:
            return c.last_stable_offset(tp) if committed else c.highwater(tp)

        c.assign(parts)
        for tp in parts:
            c.seek(tp, listed[tp])
        deadline = time.monotonic() + timeout_s
        while any(watermark(tp) is None for tp in parts) and time.monotonic() < deadline:
            c.poll_arrow(timeout_ms=50, max_records=1 << 30)
        for tp in parts:
            mark = watermark(tp)
            if mark is None:
                log.warning("No fetch answered for %s within %.0f s; its end offset %d is "
                            "ListOffsets' answer, unconfirmed", tp, timeout_s, listed[tp])
            elif mark > out[tp]:
                out[tp] = mark
        return out
    finally:
        c.close(timeout_ms=5000)
