"""ListOffsets (API key 2): per partition, the offset (and its timestamp and leader epoch) for
a timestamp: earliest (-2), latest (-1), the record with the largest timestamp (-3, KIP-734),
or the first record at or after a time."""
from __future__ import annotations

from .common import EARLIEST, LATEST, MAX_TIMESTAMP, Body, Request
from .listener import Broker
from .log import Partition
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    topics = []
    for t in req.body["topics"]:
        topic = state.topics.get(t["name"])
        parts = []
        for lp in t["partitions"]:
            code, p = state.check_partition(b, topic, lp["partition_index"],
                                            lp["current_leader_epoch"])
            out: Body = {"partition_index": lp["partition_index"], "error_code": code,
                         "old_style_offsets": [], "timestamp": -1, "offset": -1}
            if not code and p is not None:
                offset, ts = offset_for_time(p, lp["timestamp"])
                out.update(offset=offset, timestamp=ts,
                           old_style_offsets=[offset] if offset >= 0 else [],
                           leader_epoch=p.epoch_at(offset) if offset >= 0 else -1)
            parts.append(out)
        topics.append({"name": t["name"], "partitions": parts})
    return {"topics": topics}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"topics": [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": code, "old_style_offsets": []}
        for p in t["partitions"]]} for t in req.body["topics"]]}


def offset_for_time(p: Partition, ts: int) -> tuple[int, int]:
    """(offset, timestamp) for ListOffsets' ``timestamp``; (-1, -1): no such record."""
    if ts == EARLIEST:
        return p.log_start, -1
    if ts == LATEST:
        return p.end, -1
    stamped = [(off, t) for b in p.batches for off, t in enumerate(b.timestamps, b.base)
               if off >= p.log_start]
    if ts == MAX_TIMESTAMP:
        return max(stamped, key=lambda x: x[1], default=(-1, -1))
    return next(((off, t) for off, t in stamped if t >= ts), (-1, -1))
