"""RoundRobinAssignor: all partitions in topic order, dealt to members in turn."""
from __future__ import annotations

from collections.abc import Mapping

from pyconsumer.consumer.group.assignors.base import Assignor, GroupAssignment, member_sort_key, partitions
from pyconsumer.consumer.group.embedded import Subscription


class RoundRobinAssignor(Assignor):
    """Every partition of every subscribed topic (topics sorted, partitions in order) goes to
    the next member, in member order, that subscribes to its topic; the turn carries over from
    one topic to the next. Balanced (within one) when all members subscribe to the same
    topics."""

    name = "roundrobin"

    def assign(self, partitions_per_topic: Mapping[str, int],
               subscriptions: Mapping[str, Subscription]) -> GroupAssignment:
        out: GroupAssignment = {m: [] for m in subscriptions}
        members = sorted(subscriptions, key=lambda m: member_sort_key(m, subscriptions[m]))
        if not members:
            return out
        topics = sorted({t for sub in subscriptions.values() for t in sub.topics})
        wanted = {m: set(subscriptions[m].topics) for m in members}
        turn = 0
        for topic in topics:
            count = partitions_per_topic.get(topic)
            if count is None:
                continue
            for tp in partitions(topic, count):
                while topic not in wanted[members[turn % len(members)]]:
                    turn += 1
                out[members[turn % len(members)]].append(tp)
                turn += 1
        return out


__all__ = ["RoundRobinAssignor"]
