"""DescribeGroups (API key 15): a classic group's state, protocol and members (their metadata
and assignment once the group is Stable); "Dead" for a group the cluster does not know."""
from __future__ import annotations

from pyconsumer.errors import ErrorCode

from .common import HOST, Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    out = []
    for gid in req.body["groups"]:
        if state.coordinator_of(gid) != b.node_id:
            out.append({"error_code": ErrorCode.NOT_COORDINATOR, "group_id": gid})
            continue
        g = state.groups.get(gid)
        if g is None:
            out.append({"error_code": 0, "group_id": gid, "group_state": "Dead"})
            continue
        stable = g.state == "Stable"
        out.append({"error_code": 0, "group_id": gid, "group_state": g.state,
                    "protocol_type": g.protocol_type or "",
                    "protocol_data": (g.protocol_name or "") if stable else "",
                    "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                                 "client_id": m.client_id, "client_host": f"/{HOST}",
                                 "member_metadata": dict(m.protocols).get(
                                     g.protocol_name or "", b"") if stable else b"",
                                 "member_assignment": m.assignment if stable else b""}
                                for m in g.members.values()]})
    return {"groups": out}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"groups": [{"error_code": code, "group_id": g} for g in req.body["groups"]]}
