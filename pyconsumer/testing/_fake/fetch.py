"""Fetch (API key 1): Kafka's FetchManager picks the fetch session and the partitions to read
(KIP-227: a full fetch with epoch 0 opens a session, an incremental one must carry its epoch,
a full fetch naming a session closes it), then the broker reads them as the leader or, for
consumers (v11+), as a follower (KIP-392: a leader points a consumer in a follower's rack at
that follower), holding the answer up to ``max_wait_ms`` (capped by ``fetch_wait_cap``) until
``min_bytes`` of records are there."""
from __future__ import annotations

import time

from pyconsumer.errors import ErrorCode

from .common import Body, Request
from .listener import Broker
from .log import Partition
from .sessions import FetchSession
from .state import ClusterState

#: errors answered at the top level of a Fetch response (the session's), not per partition
SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                  ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    body, v = req.body, req.version
    context = _context(state, b, body, v)
    if isinstance(context, dict):
        return context                          # a session error
    session, topics = context
    deadline = time.monotonic() + min(body["max_wait_ms"] / 1000.0, state.fetch_wait_cap)
    while True:
        seen = state.data_version
        answer, size, failed = _read(state, b, body, v, topics)
        if size >= max(1, body["min_bytes"]) or failed or time.monotonic() >= deadline:
            break
        left = deadline - time.monotonic()
        # the lambda runs within this iteration: binding ``seen`` late is fine
        state.wait(b, lambda: state.data_version != seen, left)  # noqa: B023
    if session is not None:
        session.answered(answer, v, full=body["session_epoch"] == 0)
    return answer


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    """A session error at the top level; any other on every partition asked for."""
    if code in SESSION_ERRORS:
        return _session_error(code)
    return {"responses": [{"topic": t["topic"], "topic_id": t["topic_id"], "partitions": [
        {"partition_index": p["partition"], "error_code": code, "high_watermark": -1,
         "records": b""} for p in t["partitions"]]} for t in req.body["topics"]]}


def _session_error(code: int) -> Body:
    return {"error_code": code, "session_id": 0, "responses": []}


def _context(state: ClusterState, b: Broker, body: Body, v: int
             ) -> Body | tuple[FetchSession | None, list[Body]]:
    """Kafka's FetchManager.newContext: the session (None: sessionless) and the topics to
    read, in order, or the top-level error answer."""
    sid, epoch = (body["session_id"], body["session_epoch"]) if v >= 7 else (0, -1)
    if epoch in (0, -1):                     # a full fetch
        if sid:
            state.sessions.pop(sid, None)    # a full fetch closes the session it names
        if epoch == -1 or not state.fetch_sessions \
                or len(state.sessions) >= state.max_fetch_sessions:
            return None, body["topics"]
        opened = FetchSession(state.new_session_id(), b.node_id, 1, v >= 13, {})
        opened.update(body["topics"], [], v)
        state.sessions[opened.session_id] = opened
        return opened, body["topics"]
    session = state.sessions.get(sid)
    if session is None or session.broker != b.node_id:
        return _session_error(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != epoch:
        return _session_error(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    if session.uses_topic_ids != (v >= 13):
        return _session_error(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
    session.update(body["topics"], body["forgotten_topics_data"], v)
    if not session.partitions:
        del state.sessions[sid]              # empty: closed, answered sessionless
        return None, body["topics"]
    session.epoch = 1 if epoch == 2**31 - 1 else epoch + 1
    return session, session.to_read()       # read in the session's order


def _read_replica(state: ClusterState, b: Broker, p: Partition, offset: int, rack: str) -> int:
    """Kafka's findPreferredReadReplica, for a consumer in ``rack`` fetching from the
    leader: an in-rack running follower that holds ``offset`` (-1: none, or the leader
    is in that rack itself)."""
    if not rack or state.racks.get(b.node_id) == rack:
        return -1
    for node in p.followers:
        if state.racks.get(node) == rack and state.brokers[node].running \
                and p.log_start <= offset <= p.end_on(node):
            return node
    return -1


def _read(state: ClusterState, b: Broker, body: Body, v: int, topics: list[Body]
          ) -> tuple[Body, int, bool]:
    """One read of ``topics``: the answer, its record bytes, and whether it must go out
    now (an error or a read replica)."""
    budget = body["max_bytes"]
    min_one, size, failed = v >= 3, 0, False
    rack = body.get("rack_id") or "" if v >= 11 else ""
    responses = []
    for t in topics:
        topic = state.lookup_topic(t["topic"] if v <= 12 else None,
                                   None if v <= 12 else t["topic_id"])
        unknown = (ErrorCode.UNKNOWN_TOPIC_ID if v >= 13
                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        parts = []
        for fp in t["partitions"]:
            code, p = state.check_partition(b, topic, fp["partition"],
                                            fp["current_leader_epoch"], unknown,
                                            follower_ok=v >= 11)
            out: Body = {"partition_index": fp["partition"], "error_code": code,
                         "high_watermark": -1, "records": b"",
                         "aborted_transactions": [] if body["isolation_level"] else None}
            if p is not None:
                end = p.end_on(b.node_id)
                out.update(high_watermark=end, last_stable_offset=end,
                           log_start_offset=p.log_start)
                if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    out["current_leader"] = {"leader_id": p.leader, "leader_epoch": p.epoch}
                offset = fp["fetch_offset"]
                if not code and not p.log_start <= offset <= end:
                    code = out["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                replica = -1 if code or p.leader != b.node_id \
                    else _read_replica(state, b, p, offset, rack)
                if replica >= 0:
                    out["preferred_read_replica"] = replica   # and no records
                    failed = True                             # answered at once
                elif not code:
                    limit = max(0, min(fp["partition_max_bytes"], budget))
                    data = p.read(offset, limit, min_one, hard_limit=v < 3,
                                  upto=None if end == p.end else end)
                    if data:
                        min_one = False
                        budget -= len(data)
                        size += len(data)
                    out["records"] = data
            failed = failed or code != 0
            parts.append(out)
        responses.append({"topic": t["topic"], "topic_id": t["topic_id"], "partitions": parts})
    return {"error_code": 0, "session_id": 0, "responses": responses}, size, failed
