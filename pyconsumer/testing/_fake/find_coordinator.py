"""FindCoordinator (API key 10): a group's coordinator (one key before v4, a batch of keys
from v4), COORDINATOR_NOT_AVAILABLE while that broker is stopped."""
from __future__ import annotations

from pyconsumer.errors import ErrorCode

from .common import HOST, Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    keys = [req.body["key"]] if req.version < 4 else req.body["coordinator_keys"]
    found = []
    for key in keys:
        node = state.coordinator_of(key)
        x = state.brokers[node]
        if x.running:
            found.append({"key": key, "node_id": node, "host": HOST, "port": x.port,
                          "error_code": 0, "error_message": None})
        else:
            found.append({"key": key, "node_id": -1, "host": "", "port": -1,
                          "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                          "error_message": f"broker {node} is down"})
    if req.version < 4:
        return {k: v for k, v in found[0].items() if k != "key"}
    return {"coordinators": found}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    if req.version < 4:
        return {"error_code": code, "node_id": -1, "host": "", "port": -1}
    return {"coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1,
                              "error_code": code} for k in req.body["coordinator_keys"]]}
