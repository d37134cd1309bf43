"""OffsetFetch (API key 9): the offsets committed to a group (v8+: to several groups), for the
partitions asked for or (topics null) all of them; -1 where none is committed."""
from __future__ import annotations

from pyconsumer.errors import ErrorCode
from pyconsumer.structs import TopicPartition

from .common import Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    v, body = req.version, req.body
    asked = body["groups"] if v >= 8 else [{"group_id": body["group_id"],
                                             "topics": body["topics"]}]
    groups = []
    for a in asked:
        gid = a["group_id"]
        code = 0 if state.coordinator_of(gid) == b.node_id else ErrorCode.NOT_COORDINATOR
        g = state.groups.get(gid)
        offsets = {} if g is None else g.offsets
        if a["topics"] is None:
            wanted: dict[str, list[int]] = {}
            for tp in offsets:
                wanted.setdefault(tp.topic, []).append(tp.partition)
        else:
            wanted = {t["name"]: t["partition_indexes"] for t in a["topics"]}
        topics = []
        for name, indexes in wanted.items():
            parts = []
            for i in indexes:
                c = offsets.get(TopicPartition(name, i)) if not code else None
                parts.append({"partition_index": i, "error_code": code if v < 2 else 0,
                              "committed_offset": -1 if c is None else c.offset,
                              "committed_leader_epoch": -1 if c is None else c.leader_epoch,
                              "metadata": "" if c is None else c.metadata})
            topics.append({"name": name, "partitions": parts})
        groups.append({"group_id": gid, "error_code": code,
                       "topics": [] if code and v >= 2 else topics})
    if v >= 8:
        return {"groups": groups}
    return {"topics": groups[0]["topics"], "error_code": groups[0]["error_code"]}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    """Per group (v8+), at the top (v2+), or on every partition asked for (v0-1)."""
    v, body = req.version, req.body
    if v >= 8:
        return {"groups": [{"group_id": g["group_id"], "topics": [], "error_code": code}
                           for g in body["groups"]]}
    if v >= 2:
        return {"topics": [], "error_code": code}
    return {"topics": [{"name": t["name"], "partitions": [
        {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": code}
        for p in t["partition_indexes"]]} for t in body["topics"] or []]}
