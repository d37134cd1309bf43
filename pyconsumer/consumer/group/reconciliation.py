"""The pure core of the consumer group protocol (KIP-848): what an assignment from the broker
means for the member, and what the next ConsumerGroupHeartbeat must carry. No I/O, no clock:
:mod:`pyconsumer.consumer.group.consumer_protocol` drives it and unit tests feed it vectors.

* The broker sends the member's whole assignment (topic ids and partitions) whenever it changes,
  and only partitions the member may use now: a partition moving from another member arrives
  once that member has revoked it and said so. Reconciling is therefore "become exactly this":
  revoke what the assignment no longer holds, then add what it adds.
* Topic ids are turned into names with the metadata; partitions of an id the metadata does not
  know yet stay pending (reconciled once the metadata knows them), as Java does.
* A heartbeat carries only what changed since the last one the broker answered (Java's
  ``HeartbeatState``): everything when joining or after a failed heartbeat, the owned partitions
  once a reconciliation completed (the acknowledgement), the subscription after it changed.
  Subscribed names and regex always travel together (the regex empty without a pattern):
  a broker never sees one of them change alone. A field not resent is null (the rebalance
  timeout -1): the protocol's "unchanged", so every body is a whole, typed request.
"""
from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyconsumer.structs import TopicPartition

if TYPE_CHECKING:
    from pyconsumer.protocol import bodies

#: MemberEpoch values with a meaning of their own (ConsumerGroupHeartbeatRequest.json)
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2
#: RebalanceTimeoutMs when it is not resent
UNCHANGED_TIMEOUT = -1

TopicIdPartitions = dict[uuid.UUID, frozenset[int]]


def assignment_from_response(assignment: Mapping[str, Any]) -> TopicIdPartitions:
    """ConsumerGroupHeartbeatResponse.Assignment as {topic id: partitions}."""
    out: dict[uuid.UUID, set[int]] = {}
    for t in assignment["topic_partitions"]:
        out.setdefault(t["topic_id"], set()).update(t["partitions"])
    return {tid: frozenset(ps) for tid, ps in out.items() if ps}


def topic_partitions_field(owned: Mapping[uuid.UUID, Iterable[int]]
                           ) -> list[bodies.TopicPartitions]:
    """The request's TopicPartitions: topics by id, partitions sorted (stable bytes)."""
    return [{"topic_id": tid, "partitions": sorted(ps)}
            for tid, ps in sorted(owned.items(), key=lambda kv: str(kv[0])) if ps]


@dataclass(frozen=True)
class Reconciliation:
    """What to do to become the target assignment."""

    revoked: frozenset[TopicPartition]
    added: frozenset[TopicPartition]
    assigned: frozenset[TopicPartition]          # the whole assignment afterwards
    assigned_ids: TopicIdPartitions              # the same by topic id (resolved part only)
    unresolved: frozenset[uuid.UUID]             # topic ids the metadata does not know yet

    @property
    def changes(self) -> bool:
        return bool(self.revoked or self.added)


def plan(owned: Iterable[TopicPartition], target: TopicIdPartitions,
         names: Mapping[uuid.UUID, str],
         subscribed: Collection[str] | None = None) -> Reconciliation:
    """Reconcile ``owned`` with the broker's ``target``. ``names`` must know the topic ids of
    the owned partitions (the caller remembers them): a target id it does not know is left
    pending in ``unresolved``, neither added nor taken as a reason to revoke. With
    ``subscribed``, partitions of other topics are left out (an assignment computed before a
    subscribe() changed the topics: the broker drops them next; the member already has)."""
    owned_set = frozenset(owned)
    resolved: set[TopicPartition] = set()
    assigned_ids: dict[uuid.UUID, frozenset[int]] = {}
    unresolved: set[uuid.UUID] = set()
    for tid, parts in target.items():
        name = names.get(tid)
        if name is None:
            unresolved.add(tid)
            continue
        if subscribed is not None and name not in subscribed:
            continue
        assigned_ids[tid] = parts
        resolved.update(TopicPartition(name, p) for p in parts)
    revoked = owned_set - resolved
    return Reconciliation(revoked=frozenset(revoked), added=frozenset(resolved - owned_set),
                          assigned=frozenset(resolved), assigned_ids=assigned_ids,
                          unresolved=frozenset(unresolved))


def ids_of(partitions: Iterable[TopicPartition], ids: Mapping[str, uuid.UUID]
           ) -> TopicIdPartitions:
    """Owned partitions by topic id (topics without a known id are left out)."""
    out: dict[uuid.UUID, set[int]] = {}
    for tp in partitions:
        tid = ids.get(tp.topic)
        if tid is not None:
            out.setdefault(tid, set()).add(tp.partition)
    return {tid: frozenset(ps) for tid, ps in out.items()}


@dataclass
class HeartbeatFields:
    """Which optional fields the next heartbeat carries (Java's ``HeartbeatState``).

    ``full`` is set to send everything: on (re)join, after a heartbeat failed (the broker may
    not have seen the last one), after the coordinator moved."""

    full: bool = True
    send_subscription: bool = True
    send_owned: bool = True
    #: what the last heartbeat carried, kept until it is answered
    _in_flight: tuple[bool, bool, bool] | None = field(default=None, repr=False)

    def build(self, *, group_id: str, member_id: str, member_epoch: int,
              instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
              topics: Iterable[str], regex: str | None, server_assignor: str | None,
              owned: Mapping[uuid.UUID, Iterable[int]]) -> bodies.ConsumerGroupHeartbeatRequest:
        """The request body; remembers what was sent until :meth:`answered`/:meth:`failed`."""
        full = self.full or member_epoch == JOIN_EPOCH
        subscription = full or self.send_subscription
        body: bodies.ConsumerGroupHeartbeatRequest = {
            "group_id": group_id, "member_id": member_id, "member_epoch": member_epoch,
            # no rack is null: Kafka refuses an empty RackId (INVALID_REQUEST)
            "instance_id": instance_id if full else None,
            "rack_id": (rack_id or None) if full else None,
            "rebalance_timeout_ms": rebalance_timeout_ms if full else UNCHANGED_TIMEOUT,
            "server_assignor": server_assignor if full else None,
            "subscribed_topic_names": sorted(topics) if subscription else None,
            "subscribed_topic_regex": (regex if regex is not None else "") if subscription
            else None,
            "topic_partitions": topic_partitions_field(owned) if full or self.send_owned
            else None,
        }
        self._in_flight = (full, full or self.send_subscription, full or self.send_owned)
        self.full = self.send_subscription = self.send_owned = False
        return body

    def answered(self) -> None:
        self._in_flight = None

    def failed(self) -> None:
        """The broker may not have seen it: send everything next time."""
        self._in_flight = None
        self.full = True

    def reset(self) -> None:
        """A new membership (join, rejoin after fencing): everything again."""
        self._in_flight = None
        self.full = self.send_subscription = self.send_owned = True


__all__ = [
    "HeartbeatFields",
    "JOIN_EPOCH",
    "LEAVE_EPOCH",
    "LEAVE_STATIC_EPOCH",
    "Reconciliation",
    "TopicIdPartitions",
    "UNCHANGED_TIMEOUT",
    "assignment_from_response",
    "ids_of",
    "plan",
    "topic_partitions_field",
]
