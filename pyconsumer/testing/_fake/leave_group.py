"""LeaveGroup (API key 13): members leave a classic group (one dynamic member before v3, a
batch of members, static ones by group.instance.id, from v3), starting a rebalance."""
from __future__ import annotations

from pyconsumer.errors import ErrorCode

from . import classic
from .common import Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    body, v = req.body, req.version
    gid = body["group_id"]
    leaving = body["members"] if v >= 3 else [{"member_id": body["member_id"],
                                               "group_instance_id": None}]
    if state.coordinator_of(gid) != b.node_id:
        return {"error_code": ErrorCode.NOT_COORDINATOR, "members": []}
    g = state.groups.get(gid)
    results = []
    for x in leaving:
        mid, iid = x["member_id"], x["group_instance_id"]
        code = 0
        if g is None:
            code = ErrorCode.UNKNOWN_MEMBER_ID
        elif iid is not None:
            known = g.static.get(iid)
            if known is None:
                code = ErrorCode.UNKNOWN_MEMBER_ID
            elif mid and known != mid:
                code = ErrorCode.FENCED_INSTANCE_ID
            else:
                classic.remove(state, g, g.members[known])
        elif mid in g.pending:
            del g.pending[mid]
        elif mid not in g.members:
            code = ErrorCode.UNKNOWN_MEMBER_ID
        else:
            classic.remove(state, g, g.members[mid])
        results.append({"member_id": mid, "group_instance_id": iid, "error_code": code})
    if g is not None:
        classic.members_changed(state, g)
    if v < 3:
        return {"error_code": results[0]["error_code"]}
    return {"error_code": 0, "members": results}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"error_code": code, "members": []}
