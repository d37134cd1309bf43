"""The group wing: finding the group coordinator and committing offsets
(:class:`ConsumerCoordinator`), and the consumer's membership in its group
(:class:`Membership`, implemented by the classic JoinGroup/SyncGroup protocol and by KIP-848's
consumer protocol), with the heartbeat, the group error table, the assignors and the
reconciliation of broker assignments behind them. The membership owns the member's identity;
the coordinator and the memberships see each other through the protocols of
:mod:`pyconsumer.consumer.group.seams`."""
from __future__ import annotations

from pyconsumer.consumer.group.classic import GroupMembership
from pyconsumer.consumer.group.consumer_protocol import ConsumerProtocolMembership
from pyconsumer.consumer.group.coordinator import CommitCallback, ConsumerCoordinator
from pyconsumer.consumer.group.membership import Membership, MemberState
from pyconsumer.consumer.group.seams import (
    GroupCoordinator,
    GroupMember,
    MemberIdentity,
    MemberStateListener,
)

__all__ = ["CommitCallback", "ConsumerCoordinator", "ConsumerProtocolMembership",
           "GroupCoordinator", "GroupMember", "GroupMembership", "MemberIdentity",
           "MemberState", "MemberStateListener", "Membership"]
