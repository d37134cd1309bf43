"""The classic group coordinator's rebalance, following Apache Kafka's GroupCoordinator: the
transitions JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the ticker share (prepare a
rebalance, complete the join, remove a member, expire sessions and late syncs) and the member
checks Heartbeat and SyncGroup share. Groups are in groups.py; the handlers in join_group.py,
sync_group.py, heartbeat.py and leave_group.py."""
from __future__ import annotations

import time
from collections import Counter

from pyconsumer.errors import ErrorCode

from .common import Body
from .groups import Group, Member
from .state import ClusterState


def common_protocols(g: Group, protocols: list[tuple[str, bytes]]) -> list[str]:
    """The names in ``protocols`` every member of ``g`` supports too, in their order."""
    names = [n for n, _ in protocols]
    for m in g.members.values():
        theirs = {n for n, _ in m.protocols}
        names = [n for n in names if n in theirs]
    return names


def join_answer(g: Group, m: Member) -> Body:
    """The JoinGroup answer member ``m`` gets for the group's current generation."""
    meta = {x.member_id: dict(x.protocols).get(g.protocol_name or "", b"")
            for x in g.members.values()}
    members = [{"member_id": x.member_id, "group_instance_id": x.instance_id,
                "metadata": meta[x.member_id]} for x in g.members.values()]
    return {"error_code": 0, "generation_id": g.generation, "protocol_type": g.protocol_type,
            "protocol_name": g.protocol_name, "leader": g.leader or "",
            "member_id": m.member_id, "skip_assignment": False,
            "members": members if m.member_id == g.leader else []}


def member_error(g: Group | None, mid: str, iid: str | None, generation: int) -> int:
    """The checks Heartbeat and SyncGroup share (after the coordinator check)."""
    if g is None:
        return int(ErrorCode.UNKNOWN_MEMBER_ID)
    if iid is not None and iid in g.static and g.static[iid] != mid:
        return int(ErrorCode.FENCED_INSTANCE_ID)
    if mid not in g.members:
        return int(ErrorCode.UNKNOWN_MEMBER_ID)
    if generation != g.generation:
        return int(ErrorCode.ILLEGAL_GENERATION)
    return 0


def prepare_rebalance(state: ClusterState, g: Group) -> None:
    now = time.monotonic()
    if g.state == "Empty" and state.initial_rebalance_delay:
        g.join_not_before = now + state.initial_rebalance_delay
    g.state = "PreparingRebalance"
    g.rebalance_deadline = now + max((m.rebalance_timeout for m in g.members.values()),
                                     default=0.0)
    state.cond.notify_all()       # waiting SyncGroups answer REBALANCE_IN_PROGRESS


def maybe_complete_join(state: ClusterState, g: Group, force: bool = False) -> None:
    if g.state != "PreparingRebalance" or time.monotonic() < g.join_not_before:
        return
    if force or (all(m.awaiting_join for m in g.members.values()) and not g.pending):
        complete_join(state, g)


def complete_join(state: ClusterState, g: Group) -> None:
    for m in [m for m in g.members.values() if not m.awaiting_join and m.instance_id is None]:
        remove(state, g, m)       # dynamic members that did not rejoin in time
    g.generation += 1
    g.pending_sync.clear()
    if not g.members:
        g.state, g.protocol_name, g.leader = "Empty", None, None
        state.cond.notify_all()
        return
    first = next(iter(g.members.values()))
    candidates = common_protocols(g, first.protocols)
    votes = Counter(next(n for n, _ in m.protocols if n in candidates)
                    for m in g.members.values())
    g.protocol_name = max(candidates, key=lambda n: votes[n])
    if g.leader not in g.members:
        g.leader = next((m.member_id for m in g.members.values() if m.awaiting_join),
                        first.member_id)
    g.state = "CompletingRebalance"
    now = time.monotonic()
    g.sync_deadline = now + max(m.rebalance_timeout for m in g.members.values())
    for m in g.members.values():
        m.assignment, m.last_heartbeat = b"", now
        g.pending_sync.add(m.member_id)
        m.last_join = join_answer(g, m)
        if m.awaiting_join:
            m.join_result, m.awaiting_join = m.last_join, False
    state.cond.notify_all()


def remove(state: ClusterState, g: Group, m: Member) -> None:
    del g.members[m.member_id]
    if m.instance_id is not None and g.static.get(m.instance_id) == m.member_id:
        del g.static[m.instance_id]
    g.pending_sync.discard(m.member_id)
    if g.leader == m.member_id:
        g.leader = None
    state.cond.notify_all()


def members_changed(state: ClusterState, g: Group) -> None:
    if g.state in ("Stable", "CompletingRebalance"):
        prepare_rebalance(state, g)
    maybe_complete_join(state, g)


def tick(state: ClusterState, now: float) -> None:
    """Expire sessions, pending member ids and late syncs; end rebalances past their time."""
    for g in state.groups.values():
        changed = False
        for m in list(g.members.values()):
            if not (m.awaiting_join or m.awaiting_sync) \
                    and now - m.last_heartbeat > m.session_timeout:
                remove(state, g, m)               # session expired
                changed = True
        for pid in [p for p, t in g.pending.items() if now > t]:
            del g.pending[pid]                    # may let a join complete (below)
        if g.pending_sync and g.state in ("CompletingRebalance", "Stable") \
                and now > g.sync_deadline:
            for mid in list(g.pending_sync):      # no SyncGroup within the rebalance timeout
                remove(state, g, g.members[mid])
            changed = True
        if changed:
            members_changed(state, g)
        if g.state == "PreparingRebalance":
            maybe_complete_join(state, g, force=now >= g.rebalance_deadline)


__all__ = ["common_protocols", "complete_join", "join_answer", "maybe_complete_join",
           "member_error", "members_changed", "prepare_rebalance", "remove", "tick"]
