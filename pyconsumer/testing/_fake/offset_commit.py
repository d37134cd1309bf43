"""OffsetCommit (API key 8): the group checks of Kafka's GroupCoordinator.handleCommitOffsets
(classic groups: generation, member, static instance; consumer protocol groups: the member
epoch), then each partition's offset, leader epoch and metadata kept in the group."""
from __future__ import annotations

import time

from pyconsumer.errors import ErrorCode
from pyconsumer.structs import TopicPartition

from .common import Body, Request
from .groups import Committed
from .listener import Broker
from .state import ClusterState

#: the longest metadata string a commit may carry (Kafka's offset.metadata.max.bytes)
MAX_METADATA = 4096


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    body = req.body
    group_code = _group_error(state, b, body, req.version)
    topics = []
    for t in body["topics"]:
        parts = []
        for cp in t["partitions"]:
            code = group_code
            if not code and t["name"] not in state.topics:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not code and len(cp["committed_metadata"] or "") > MAX_METADATA:
                code = ErrorCode.OFFSET_METADATA_TOO_LARGE
            if not code:
                state.groups[body["group_id"]].offsets[
                    TopicPartition(t["name"], cp["partition_index"])] = Committed(
                        cp["committed_offset"], cp["committed_leader_epoch"],
                        cp["committed_metadata"])
            parts.append({"partition_index": cp["partition_index"], "error_code": code})
        topics.append({"name": t["name"], "partitions": parts})
    return {"topics": topics}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"topics": [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": code}
        for p in t["partitions"]]} for t in req.body["topics"]]}


def _group_error(state: ClusterState, b: Broker, body: Body, v: int) -> int:
    """Kafka's group checks on OffsetCommit (GroupCoordinator.handleCommitOffsets)."""
    gid = body["group_id"]
    gen, mid = body["generation_id_or_member_epoch"], body["member_id"]
    iid = body["group_instance_id"]
    if state.coordinator_of(gid) != b.node_id:
        return int(ErrorCode.NOT_COORDINATOR)
    cg = state.consumer_groups.get(gid)
    if cg is not None:
        state.ensure_group(gid)              # where the offsets are kept
        return cg.commit_error(mid, gen)
    g = state.groups.get(gid)
    if g is None:
        if gen < 0:
            state.ensure_group(gid)          # a group used only to store offsets
            return 0
        return int(ErrorCode.GROUP_ID_NOT_FOUND if v >= 9 else ErrorCode.ILLEGAL_GENERATION)
    if iid is not None and iid in g.static and g.static[iid] != mid:
        return int(ErrorCode.FENCED_INSTANCE_ID)
    if gen < 0 and g.state == "Empty":
        return 0
    if g.state == "CompletingRebalance":
        return int(ErrorCode.REBALANCE_IN_PROGRESS)
    if mid not in g.members:
        return int(ErrorCode.UNKNOWN_MEMBER_ID)
    if gen != g.generation:
        return int(ErrorCode.ILLEGAL_GENERATION)
    g.members[mid].last_heartbeat = time.monotonic()
    return 0
