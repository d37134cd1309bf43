"""JoinGroup (API key 11): a classic group member joins or rejoins (dynamic members first get
MEMBER_ID_REQUIRED from v4; a static member back with a new id fences the old one) and waits,
under the cluster lock, until the rebalance completes and hands it the generation (the leader
also gets the members' metadata)."""
from __future__ import annotations

import time
import uuid

from pyconsumer.errors import ErrorCode

from . import classic
from .common import Body, Request
from .groups import Member
from .listener import Broker
from .state import ClusterState


def join_error(v: int, code: int, member_id: str) -> Body:
    return {"error_code": code, "generation_id": -1, "protocol_type": None,
            "protocol_name": None if v >= 7 else "", "leader": "", "member_id": member_id,
            "members": []}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return join_error(req.version, code, req.body["member_id"])


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    body, v, now = req.body, req.version, time.monotonic()
    gid, mid = body["group_id"], body["member_id"]
    iid = body["group_instance_id"] if v >= 5 else None
    session = body["session_timeout_ms"]
    rebalance = body["rebalance_timeout_ms"] if v >= 1 else session
    protocols = [(p["name"], bytes(p["metadata"])) for p in body["protocols"]]

    def fail(code: int, member: str = mid) -> Body:
        return join_error(v, code, member)

    if not gid:
        return fail(ErrorCode.INVALID_GROUP_ID)
    if state.coordinator_of(gid) != b.node_id:
        return fail(ErrorCode.NOT_COORDINATOR)
    if not state.min_session_ms <= session <= state.max_session_ms:
        return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
    g = state.ensure_group(gid)
    ptype = body["protocol_type"]
    if not protocols or not ptype or (g.members and (
            ptype != g.protocol_type or not classic.common_protocols(g, protocols))):
        return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)

    def new_member(member_id: str) -> Member:
        m = Member(member_id, iid, req.client_id or "", session / 1000.0, rebalance / 1000.0,
                   ptype, protocols, now)
        g.members[member_id] = m
        if iid is not None:
            g.static[iid] = member_id
        g.protocol_type = ptype
        return m

    if not mid:
        new_id = f"{iid or req.client_id or 'member'}-{uuid.uuid4()}"
        old = g.static.get(iid) if iid is not None else None
        if old is not None and old in g.members:
            # a static member back with a new id: the old id is fenced
            m = g.members.pop(old)
            unchanged = m.protocols == protocols
            m.member_id, m.protocols, m.last_heartbeat = new_id, protocols, now
            g.members[new_id] = m
            g.static[iid] = new_id       # type: ignore[index]
            if g.leader == old:
                g.leader = new_id
            if old in g.pending_sync:
                g.pending_sync.discard(old)
                g.pending_sync.add(new_id)
            if g.state == "Stable" and unchanged and g.leader != new_id:
                return classic.join_answer(g, m)
        elif iid is not None:
            m = new_member(new_id)
        elif v >= 4:
            g.pending[new_id] = now + session / 1000.0
            return fail(ErrorCode.MEMBER_ID_REQUIRED, new_id)
        else:
            m = new_member(new_id)
    elif mid in g.pending:
        del g.pending[mid]
        m = new_member(mid)
    elif mid not in g.members:
        return fail(ErrorCode.UNKNOWN_MEMBER_ID)
    elif iid is not None and g.static.get(iid) != mid:
        return fail(ErrorCode.FENCED_INSTANCE_ID)
    else:
        m = g.members[mid]
        unchanged = m.protocols == protocols
        m.protocols, m.last_heartbeat = protocols, now
        m.session_timeout, m.rebalance_timeout = session / 1000.0, rebalance / 1000.0
        if unchanged and g.state == "CompletingRebalance" and m.last_join is not None:
            return m.last_join
        if unchanged and g.state == "Stable" and mid != g.leader:
            return classic.join_answer(g, m)
    if g.state != "PreparingRebalance":
        classic.prepare_rebalance(state, g)
    m.awaiting_join, m.join_result = True, None
    classic.maybe_complete_join(state, g)
    member_id = m.member_id
    state.wait(b, lambda: m.join_result is not None or g.members.get(member_id) is not m
               or state.coordinator_of(gid) != b.node_id, m.rebalance_timeout + 5)
    if m.member_id != member_id:      # a static member took this id over meanwhile
        return fail(ErrorCode.FENCED_INSTANCE_ID, member_id)
    if m.join_result is not None:
        result, m.join_result = m.join_result, None
        return result
    if state.coordinator_of(gid) != b.node_id:
        return fail(ErrorCode.NOT_COORDINATOR, member_id)
    return fail(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
