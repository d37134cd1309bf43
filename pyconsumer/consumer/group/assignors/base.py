"""The assignor interface (Java ``ConsumerPartitionAssignor``) and what all assignors share."""
from __future__ import annotations

import enum
from collections.abc import Mapping

from pyconsumer.consumer.group.embedded import Subscription
from pyconsumer.structs import TopicPartition

#: member id -> the partitions it is given
GroupAssignment = dict[str, list[TopicPartition]]


class RebalanceProtocol(enum.Enum):
    """EAGER: every member gives up everything before a rebalance. COOPERATIVE: members keep
    what they still own and only hand over what moves (KIP-429)."""

    EAGER = "eager"
    COOPERATIVE = "cooperative"


class Assignor:
    """Decides, on the group leader, which member consumes which partition.

    ``assign`` gets the partition count of every subscribed topic whose metadata is known and
    every member's Subscription; it returns an entry (possibly empty) for every member.
    """

    name: str = ""
    supported_protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    def assign(self, partitions_per_topic: Mapping[str, int],
               subscriptions: Mapping[str, Subscription]) -> GroupAssignment:
        raise NotImplementedError

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        """Bytes this member adds to its JoinGroup metadata (none by default)."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def member_sort_key(member_id: str, subscription: Subscription) -> tuple[int, str, str]:
    """Java MemberInfo order: members with a group.instance.id first, ordered by it; then the
    others by member id (String order: "c10" < "c2")."""
    if subscription.group_instance_id is not None:
        return (0, subscription.group_instance_id, member_id)
    return (1, member_id, member_id)


def partitions(topic: str, count: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(count)]


__all__ = ["Assignor", "GroupAssignment", "RebalanceProtocol", "member_sort_key", "partitions"]
