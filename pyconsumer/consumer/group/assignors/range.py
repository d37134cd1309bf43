"""RangeAssignor: per topic, contiguous ranges in member order (Java's default until 3.x)."""
from __future__ import annotations

from collections.abc import Mapping

from pyconsumer.consumer.group.assignors.base import Assignor, GroupAssignment, member_sort_key, partitions
from pyconsumer.consumer.group.embedded import Subscription


class RangeAssignor(Assignor):
    """For each topic on its own: sort its subscribers, give the first N % C of them
    N // C + 1 partitions and the others N // C, as contiguous ranges. Surplus partitions of
    every topic land on the same first members."""

    name = "range"

    def assign(self, partitions_per_topic: Mapping[str, int],
               subscriptions: Mapping[str, Subscription]) -> GroupAssignment:
        out: GroupAssignment = {m: [] for m in subscriptions}
        by_topic: dict[str, list[str]] = {}
        for member, sub in subscriptions.items():
            for topic in dict.fromkeys(sub.topics):
                by_topic.setdefault(topic, []).append(member)
        for topic in sorted(by_topic):
            count = partitions_per_topic.get(topic)
            if count is None:
                continue
            members = sorted(by_topic[topic], key=lambda m: member_sort_key(m, subscriptions[m]))
            tps = partitions(topic, count)
            per, extra = divmod(count, len(members))
            for i, member in enumerate(members):
                start = per * i + min(i, extra)
                out[member].extend(tps[start:start + per + (1 if i < extra else 0)])
        return out


__all__ = ["RangeAssignor"]
