"""SyncGroup (API key 14): the leader hands out the assignment and the group becomes Stable;
the other members wait, under the cluster lock, for it (or for the rebalance to start over)."""
from __future__ import annotations

import time

from pyconsumer.errors import ErrorCode

from . import classic
from .common import Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    body, v = req.body, req.version
    gid, mid, gen = body["group_id"], body["member_id"], body["generation_id"]
    if state.coordinator_of(gid) != b.node_id:
        return {"error_code": ErrorCode.NOT_COORDINATOR}
    g = state.groups.get(gid)
    code = classic.member_error(g, mid, body["group_instance_id"] if v >= 3 else None, gen)
    if code:
        return {"error_code": code}
    assert g is not None
    if v >= 5 and ((body["protocol_type"] not in (None, g.protocol_type))
                   or body["protocol_name"] not in (None, g.protocol_name)):
        return {"error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL}
    m = g.members[mid]
    m.last_heartbeat = time.monotonic()
    if g.state == "PreparingRebalance":
        return {"error_code": ErrorCode.REBALANCE_IN_PROGRESS}
    g.pending_sync.discard(mid)
    if g.state == "CompletingRebalance":
        if mid == g.leader:
            given = {a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]}
            for x in g.members.values():
                x.assignment = given.get(x.member_id, b"")
            g.state = "Stable"
            state.cond.notify_all()
        else:
            m.awaiting_sync = True
            try:
                state.wait(b, lambda: g.state != "CompletingRebalance" or g.generation != gen
                           or g.members.get(mid) is not m
                           or state.coordinator_of(gid) != b.node_id,
                           m.rebalance_timeout + 5)
            finally:
                m.awaiting_sync = False
            if state.coordinator_of(gid) != b.node_id:
                return {"error_code": ErrorCode.NOT_COORDINATOR}
            if m.member_id != mid:
                return {"error_code": ErrorCode.FENCED_INSTANCE_ID}
            if g.members.get(mid) is not m:
                return {"error_code": ErrorCode.UNKNOWN_MEMBER_ID}
            if g.generation != gen or g.state != "Stable":
                return {"error_code": ErrorCode.REBALANCE_IN_PROGRESS}
    m.last_heartbeat = time.monotonic()
    return {"error_code": 0, "protocol_type": g.protocol_type,
            "protocol_name": g.protocol_name, "assignment": m.assignment}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"error_code": code}
