"""The group wing: finding the group coordinator and committing offsets
(:class:`ConsumerCoordinator`), and the consumer's membership in its group
(:class:`Membership`, implemented by the classic JoinGroup/SyncGroup protocol and by KIP-848's
consumer protocol), with the heartbeat, the group error table, the assignors and the
reconciliation of broker assignments behind them."""
from __future__ import annotations

from pyconsumer.consumer.group.classic import GroupMembership
from pyconsumer.consumer.group.consumer_protocol import ConsumerProtocolMembership
from pyconsumer.consumer.group.coordinator import CommitCallback, ConsumerCoordinator
from pyconsumer.consumer.group.membership import Membership, MemberState

__all__ = ["CommitCallback", "ConsumerCoordinator", "ConsumerProtocolMembership",
           "GroupMembership", "MemberState", "Membership"]
