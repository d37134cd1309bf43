"""Metadata (API key 3): the brokers (with their racks), and the topics asked for (or all) with
each partition's leader, leader epoch, replicas and in-sync replicas; unknown topics are
created when ``auto_create_topics`` and the request allows it."""
from __future__ import annotations

import uuid

from pyconsumer.errors import ErrorCode

from .common import HOST, ZERO_UUID, Body, Request
from .listener import Broker
from .state import ClusterState


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    asked = req.body["topics"]
    if asked is None or (req.version == 0 and not asked):
        wanted: list[tuple[str | None, uuid.UUID | None]] = [(n, None) for n in state.topics]
    else:
        wanted = [(t["name"], t.get("topic_id")) for t in asked]
    topics: list[Body] = []
    for name, topic_id in wanted:
        t = state.lookup_topic(name, topic_id)
        if t is None and name is not None and state.auto_create_topics \
                and req.body.get("allow_auto_topic_creation", True):
            t = state.create_topic(name, 1)
        if t is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None \
                else ErrorCode.UNKNOWN_TOPIC_ID
            topics.append({"error_code": code, "name": name,
                           "topic_id": topic_id or ZERO_UUID, "partitions": []})
            continue
        topics.append({"error_code": 0, "name": t.name, "topic_id": t.topic_id,
                       "partitions": [
                           {"error_code": 0, "partition_index": i, "leader_id": p.leader,
                            "leader_epoch": p.epoch,
                            "replica_nodes": [p.leader, *p.followers],
                            "isr_nodes": [p.leader, *(f for f, end in p.followers.items()
                                                      if end is None)],
                            "offline_replicas": []}
                           for i, p in enumerate(t.partitions)]})
    return {"brokers": [{"node_id": x.node_id, "host": HOST, "port": x.port,
                         "rack": state.racks.get(x.node_id)}
                        for x in state.brokers],
            "cluster_id": "fake-cluster", "controller_id": 0, "topics": topics}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    """The usual answer with ``code`` on every topic (and no partitions)."""
    out = handle(state, b, req)
    for t in out["topics"]:
        t["error_code"], t["partitions"] = code, []
    return out
