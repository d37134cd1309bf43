"""A classic group's state as Apache Kafka's GroupCoordinator keeps it (its state, generation,
protocol, leader, members, static members, pending joins) and the offsets committed to a group
(of either protocol). The rebalance's transitions are in classic.py."""
from __future__ import annotations

import dataclasses

from pyconsumer.structs import TopicPartition

from .common import Body


@dataclasses.dataclass
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    session_timeout: float          # seconds
    rebalance_timeout: float
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    last_heartbeat: float
    awaiting_join: bool = False
    awaiting_sync: bool = False
    join_result: Body | None = None     # the JoinGroup answer its waiting request takes
    last_join: Body | None = None       # resent to a rejoin during CompletingRebalance
    assignment: bytes = b""


@dataclasses.dataclass
class Committed:
    offset: int
    leader_epoch: int
    metadata: str | None


class Group:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # Kafka's state names: Empty, PreparingRebalance, CompletingRebalance, Stable
        self.state = "Empty"
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader: str | None = None
        self.members: dict[str, Member] = {}
        self.pending: dict[str, float] = {}     # member id given by MEMBER_ID_REQUIRED -> expiry
        self.static: dict[str, str] = {}        # group.instance.id -> member id
        self.pending_sync: set[str] = set()
        self.rebalance_deadline = 0.0
        self.join_not_before = 0.0
        self.sync_deadline = 0.0
        self.offsets: dict[TopicPartition, Committed] = {}

    def __repr__(self) -> str:
        return (f"Group({self.group_id!r}, {self.state}, generation={self.generation}, "
                f"leader={self.leader}, members={list(self.members)})")


__all__ = ["Committed", "Group", "Member"]
