"""StickyAssignor and CooperativeStickyAssignor (Java ``AbstractStickyAssignor``).

Goals, in order: (1) as balanced as possible, (2) as close to the previous assignment as
possible. When every member subscribes to the same topics the constrained algorithm runs
(Kafka 3.x ``constrainedAssign``: keep owned partitions up to the quota, deal the rest round
robin to members under quota); otherwise the general one (place each partition with the least
loaded member that can take it, then move partitions while that improves the balance, and keep
the old placement unless the balance score got better).

The previous assignment comes from each member's owned partitions and generation (the
subscription's v1+/v2+ fields, or the user data Java's StickyAssignor writes). Only members of
the highest generation keep their claim; a partition claimed twice in that generation is given
to nobody's claim. Members are visited in sorted order where Java iterates a HashMap, so ties
may resolve differently from Java while every invariant holds.

The cooperative variant withholds, in one round, any partition that moves from one live owner
to another: the owner revokes it first, and the follow-up rebalance hands it over (KIP-429).
"""
from __future__ import annotations

import logging
import struct
from collections.abc import Mapping

from pyconsumer.consumer.group.assignors.base import (
    Assignor,
    GroupAssignment,
    RebalanceProtocol,
    partitions,
)
from pyconsumer.consumer.group.embedded import Subscription
from pyconsumer.structs import TopicPartition

log = logging.getLogger(__name__)

NO_GENERATION = -1


def _tp_key(tp: TopicPartition) -> tuple[str, int]:
    return (tp.topic, tp.partition)


def encode_sticky_user_data(owned: list[TopicPartition], generation: int) -> bytes:
    """Java StickyAssignor user data v1: [topic, [partition]] array, then the generation."""
    grouped: dict[str, list[int]] = {}
    for tp in owned:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(struct.pack(">i", len(grouped)))
    for topic, parts in grouped.items():
        raw = topic.encode()
        out += struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(parts))
        out += b"".join(struct.pack(">i", p) for p in parts)
    out += struct.pack(">i", generation)
    return bytes(out)


def decode_sticky_user_data(data: bytes) -> tuple[list[TopicPartition], int | None]:
    """(previous assignment, generation or None for v0 data); ValueError when malformed."""
    pos = 0

    def take(fmt: str) -> int:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise ValueError("truncated sticky assignor user data")
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += size
        return int(value)

    owned: list[TopicPartition] = []
    for _ in range(take(">i")):
        n = take(">h")
        if n < 0 or pos + n > len(data):
            raise ValueError("bad topic in sticky assignor user data")
        topic = data[pos:pos + n].decode()
        pos += n
        owned += [TopicPartition(topic, take(">i")) for _ in range(take(">i"))]
    generation = take(">i") if pos + 4 <= len(data) else None
    return owned, generation


class _StickyBase(Assignor):
    def _member_data(self, sub: Subscription) -> tuple[list[TopicPartition], int | None]:
        if sub.owned_partitions or sub.generation_id != NO_GENERATION:
            return list(sub.owned_partitions), (None if sub.generation_id == NO_GENERATION
                                                 else sub.generation_id)
        if sub.user_data:
            try:
                return decode_sticky_user_data(sub.user_data)
            except (ValueError, UnicodeDecodeError):
                log.warning("ignoring unreadable sticky assignor user data")
        return [], None

    def _previous_owners(self, partitions_per_topic: Mapping[str, int],
                         subscriptions: Mapping[str, Subscription]
                         ) -> tuple[dict[str, list[TopicPartition]], set[TopicPartition],
                                    dict[TopicPartition, str]]:
        """Owned partitions of the members of the highest generation, the partitions claimed
        by two of them, and partition -> owner."""
        owned: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        doubly: set[TopicPartition] = set()
        owner: dict[TopicPartition, str] = {}
        max_generation = NO_GENERATION
        current: list[str] = []
        for member in sorted(subscriptions):
            parts, generation = self._member_data(subscriptions[member])
            gen = NO_GENERATION if generation is None else generation
            if generation is None and max_generation != NO_GENERATION:
                continue
            if gen < max_generation:
                continue
            if gen > max_generation:
                for dropped in current:
                    owned[dropped].clear()
                current.clear()
                doubly.clear()
                owner.clear()
                max_generation = gen
            current.append(member)
            for tp in parts:
                if tp.topic not in partitions_per_topic or tp.partition >= partitions_per_topic[tp.topic]:
                    continue
                other = owner.get(tp)
                if other is None and tp not in doubly:
                    owner[tp] = member
                    owned[member].append(tp)
                else:
                    log.error("partition %s is claimed by %s and %s in generation %d; "
                              "neither keeps it", tp, other, member, gen)
                    if other is not None:
                        owned[other].remove(tp)
                        del owner[tp]
                    doubly.add(tp)
        return owned, doubly, owner

    def assign(self, partitions_per_topic: Mapping[str, int],
               subscriptions: Mapping[str, Subscription]) -> GroupAssignment:
        if not subscriptions:
            return {}
        owned, doubly, owner = self._previous_owners(partitions_per_topic, subscriptions)
        topic_sets = {frozenset(t for t in s.topics) for s in subscriptions.values()}
        if len(topic_sets) == 1:
            result = self._constrained(partitions_per_topic, subscriptions, owned, doubly)
        else:
            result = self._general(partitions_per_topic, subscriptions, owned)
        return self._adjust(result, owner)

    def _adjust(self, result: GroupAssignment, owner: dict[TopicPartition, str]
                ) -> GroupAssignment:
        return result

    # ------------------------------------------------------------------ constrained

    def _constrained(self, partitions_per_topic: Mapping[str, int],
                     subscriptions: Mapping[str, Subscription],
                     owned: dict[str, list[TopicPartition]],
                     doubly: set[TopicPartition]) -> GroupAssignment:
        topics = sorted(set(next(iter(subscriptions.values())).topics) & set(partitions_per_topic))
        all_parts = [tp for t in topics for tp in partitions(t, partitions_per_topic[t])]
        members = sorted(subscriptions)
        total, n = len(all_parts), len(members)
        min_quota, max_quota = total // n, -(-total // n)
        expected_over = total % n
        over = 0
        assignment: GroupAssignment = {m: [] for m in members}
        assigned: set[TopicPartition] = set()
        under_min: list[str] = []
        at_min: list[str] = []
        for member in members:
            mine = [tp for tp in owned[member] if tp not in doubly]
            if len(mine) < min_quota:
                assignment[member] += mine
                assigned.update(mine)
                under_min.append(member)
            elif len(mine) >= max_quota and over < expected_over:
                over += 1
                if over == expected_over:
                    at_min.clear()
                assignment[member] += mine[:max_quota]
                assigned.update(mine[:max_quota])
            else:
                assignment[member] += mine[:min_quota]
                assigned.update(mine[:min_quota])
                if over < expected_over:
                    at_min.append(member)
        unassigned = [tp for tp in all_parts if tp not in assigned]
        under_min.sort()
        at_min.sort()
        i = 0
        for tp in unassigned:
            if under_min:
                if i >= len(under_min):
                    i = 0
                member = under_min[i]
            elif at_min:
                member = at_min.pop(0)
            else:
                raise RuntimeError("sticky assignor: no member left to take " + str(tp))
            assignment[member].append(tp)
            count = len(assignment[member])
            if member in under_min and count == min_quota:
                under_min.pop(i)              # Java: iterator.remove(); the cursor stays
                at_min.append(member)
            elif member in under_min:
                i += 1
            elif count == max_quota:
                over += 1
        return assignment

    # ------------------------------------------------------------------ general

    def _general(self, partitions_per_topic: Mapping[str, int],
                 subscriptions: Mapping[str, Subscription],
                 owned: dict[str, list[TopicPartition]]) -> GroupAssignment:
        potential: dict[TopicPartition, list[str]] = {}
        member_potential: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        for member in sorted(subscriptions):
            for topic in sorted(set(subscriptions[member].topics)):
                for tp in partitions(topic, partitions_per_topic.get(topic, 0)):
                    potential.setdefault(tp, []).append(member)
                    member_potential[member].append(tp)
        current: GroupAssignment = {m: [] for m in subscriptions}
        for member, parts in owned.items():
            current[member] = [tp for tp in parts if member in potential.get(tp, ())]
        holder = {tp: m for m, parts in current.items() for tp in parts}
        order = sorted(potential, key=lambda tp: (len(potential[tp]), tp.topic, tp.partition))

        def least_loaded(tp: TopicPartition) -> str:
            return min(potential[tp], key=lambda m: (len(current[m]), m))

        for tp in order:                                    # place what nobody holds
            if tp not in holder:
                member = least_loaded(tp)
                current[member].append(tp)
                holder[tp] = member

        def score(assign: GroupAssignment) -> int:
            sizes = sorted(len(v) for v in assign.values())
            return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1:])

        before = {m: list(v) for m, v in current.items()}
        movable = [tp for tp in order if len(potential[tp]) > 1]
        moved = True
        rounds = 0
        while moved and rounds < 10 * max(1, len(movable)):
            moved = False
            rounds += 1
            for tp in movable:
                src = holder[tp]
                dst = least_loaded(tp)
                if len(current[src]) > len(current[dst]) + 1:
                    current[src].remove(tp)
                    current[dst].append(tp)
                    holder[tp] = dst
                    moved = True
        had_any = any(owned.values())
        if had_any and score(current) >= score(before):
            return before                                   # balance did not improve: stick
        return current


class StickyAssignor(_StickyBase):
    """Eager sticky: members report their previous assignment in user data (Java format)."""

    name = "sticky"

    def __init__(self) -> None:
        self.last_assignment: list[TopicPartition] = []
        self.generation = NO_GENERATION

    def subscription_user_data(self, topics: set[str]) -> bytes | None:
        return encode_sticky_user_data(self.last_assignment, self.generation)

    def _member_data(self, sub: Subscription) -> tuple[list[TopicPartition], int | None]:
        # Java StickyAssignor.memberData: the user data first. An eager member revoked
        # everything before it joined, so the subscription's owned partitions are empty even
        # though its generation field is set.
        if sub.user_data:
            try:
                return decode_sticky_user_data(sub.user_data)
            except (ValueError, UnicodeDecodeError):
                log.warning("ignoring unreadable sticky assignor user data")
        return super()._member_data(sub)


class CooperativeStickyAssignor(_StickyBase):
    """Cooperative sticky: partitions moving between live owners are withheld for a round."""

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def _adjust(self, result: GroupAssignment, owner: dict[TopicPartition, str]
                ) -> GroupAssignment:
        return {m: [tp for tp in parts if owner.get(tp, m) == m]
                for m, parts in result.items()}


__all__ = ["CooperativeStickyAssignor", "StickyAssignor", "decode_sticky_user_data",
           "encode_sticky_user_data"]
