"""ConsumerGroupHeartbeat (API key 68): a consumer protocol (KIP-848) member's heartbeat,
answered by its group's coordinator (consumer_group.py), the group created on first use."""
from __future__ import annotations

import time

from pyconsumer.errors import ErrorCode

from .common import Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    gid = req.body["group_id"]
    if state.coordinator_of(gid) != b.node_id:
        return {"error_code": ErrorCode.NOT_COORDINATOR, "member_epoch": -1}
    g = state.consumer_group(gid)
    return g.heartbeat(req.body, state.topics, time.monotonic())


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    """``code`` with epoch -1; a fenced or unknown member is removed, as a broker would."""
    body = req.body
    g = state.consumer_groups.get(body["group_id"])
    if g is not None and code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
        if g.members.pop(body["member_id"], None) is not None:
            g.set_target(g.manual_target, state.topics)
    return {"error_code": code, "member_epoch": -1}
