"""Heartbeat (API key 12): a classic group member's session kept alive; REBALANCE_IN_PROGRESS
tells it to rejoin."""
from __future__ import annotations

import time

from pyconsumer.errors import ErrorCode

from . import classic
from .common import Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    body = req.body
    g = state.groups.get(body["group_id"])
    if state.coordinator_of(body["group_id"]) != b.node_id:
        return {"error_code": ErrorCode.NOT_COORDINATOR}
    code = classic.member_error(g, body["member_id"],
                                body["group_instance_id"] if req.version >= 3 else None,
                                body["generation_id"])
    if code:
        return {"error_code": code}
    assert g is not None
    g.members[body["member_id"]].last_heartbeat = time.monotonic()
    if g.state == "PreparingRebalance":
        return {"error_code": ErrorCode.REBALANCE_IN_PROGRESS}
    return {"error_code": 0}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"error_code": code}
