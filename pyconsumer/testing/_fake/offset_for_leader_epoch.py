"""OffsetForLeaderEpoch (API key 23): per partition, the end offset of a leader epoch (and the
epoch it belongs to), from the partition's leader epoch cache."""
from __future__ import annotations

from .common import Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    topics = []
    for t in req.body["topics"]:
        topic = state.topics.get(t["topic"])
        parts = []
        for op in t["partitions"]:
            code, p = state.check_partition(b, topic, op["partition"],
                                            op["current_leader_epoch"])
            epoch, end = p.end_offset_for(op["leader_epoch"]) \
                if not code and p is not None else (-1, -1)
            parts.append({"error_code": code, "partition": op["partition"],
                          "leader_epoch": epoch, "end_offset": end})
        topics.append({"topic": t["topic"], "partitions": parts})
    return {"topics": topics}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"topics": [{"topic": t["topic"], "partitions": [
        {"partition": p["partition"], "error_code": code} for p in t["partitions"]]}
        for t in req.body["topics"]]}
