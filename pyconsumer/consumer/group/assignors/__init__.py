"""Partition assignors, by the protocol names Java uses in JoinGroup."""
from __future__ import annotations

from pyconsumer.consumer.group.assignors.base import (
    Assignor,
    GroupAssignment,
    RebalanceProtocol,
    member_sort_key,
)
from pyconsumer.consumer.group.assignors.range import RangeAssignor
from pyconsumer.consumer.group.assignors.roundrobin import RoundRobinAssignor
from pyconsumer.consumer.group.assignors.sticky import CooperativeStickyAssignor, StickyAssignor

ASSIGNORS: dict[str, type[Assignor]] = {
    cls.name: cls
    for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)
}


def assignor_for(name_or_assignor: str | Assignor) -> Assignor:
    """An assignor instance for a protocol name (``range``...) or an Assignor object."""
    if isinstance(name_or_assignor, Assignor):
        return name_or_assignor
    try:
        return ASSIGNORS[name_or_assignor]()
    except KeyError:
        raise ValueError(f"unknown partition assignor {name_or_assignor!r}; known: "
                         f"{', '.join(ASSIGNORS)}") from None


__all__ = ["ASSIGNORS", "Assignor", "CooperativeStickyAssignor", "GroupAssignment",
           "RangeAssignor", "RebalanceProtocol", "RoundRobinAssignor", "StickyAssignor",
           "assignor_for", "member_sort_key"]
