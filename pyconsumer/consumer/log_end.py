"""Where each partition's log really ends: ListOffsets(latest), confirmed by a Fetch.

Some brokers answer ListOffsets(latest) wrongly: Tansu 0.6 gives the last batch's base offset
+ 1 instead of the log end (881 where the log ends at 1000), while its Fetch watermarks are
right. One fetch at the listed end settles it on any broker: where the log really ends
there, no records come back and the high watermark (with read_committed, the last stable
offset) equals it; where it does not, the watermark is the true end. Used where "from the
end" must be exact: the Spark source's latest offsets and ``pyconsumer consume``'s start.

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

__all__ = ["confirm_end_offsets"]

log = logging.getLogger(__name__)

#: how long the confirming fetch may take before ListOffsets' answer is used as it is
CONFIRM_TIMEOUT_S = 5.0


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
    # 1 ms, not 0, which Tansu never answers
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
