"""The consumer group protocol (KIP-848) coordinator of :class:`~pyconsumer.testing.FakeCluster`
(its group state and the rules a ConsumerGroupHeartbeat meets; the handler is
consumer_group_heartbeat.py).

Follows Apache Kafka's GroupMetadataManager in what a member sees, kept small:

* a member joins with epoch 0 (a full request: subscription and rebalance timeout, else
  INVALID_REQUEST); the group epoch is bumped whenever members or subscriptions change and the
  target assignment recomputed (per topic, a range over the subscribed members in join order;
  ``server_assignor`` must be None, "uniform" or "range", else UNSUPPORTED_ASSIGNOR);
* a member that owns partitions outside its target is sent owned ∩ target and keeps its epoch
  until it reports (TopicPartitions) that it released them; then its epoch becomes the group
  epoch and it is sent its target minus what other members still own (the rest follows
  once they release it); an assignment is sent only when it differs from the last one sent;
* a heartbeat with an epoch other than the member's is FENCED_MEMBER_EPOCH (the member is
  removed), an unknown member id UNKNOWN_MEMBER_ID; epoch -1 leaves, -2 leaves as a static
  member (its target is kept for the next instance with its group.instance.id); a second
  instance while the first is active gets UNRELEASED_INSTANCE_ID;
* a member silent for ``session_timeout_s`` is removed; OffsetCommit checks the member epoch
  (STALE_MEMBER_EPOCH) through :meth:`ConsumerGroup.commit_error`.

Tests may override the target with :meth:`ConsumerGroup.set_target`.
"""
from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from pyconsumer.errors import ErrorCode

IdPartition = tuple[uuid.UUID, int]


class TopicLike(Protocol):
    name: str
    topic_id: uuid.UUID
    partitions: list[Any]


@dataclasses.dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None
    epoch: int
    topics: list[str]
    regex: str | None
    rebalance_timeout_ms: int
    last_seen: float
    owned: set[IdPartition] = dataclasses.field(default_factory=set)
    target: set[IdPartition] = dataclasses.field(default_factory=set)
    sent: frozenset[IdPartition] | None = None
    left_static: bool = False


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.heartbeat_interval_ms = 200
        self.session_timeout_s = 10.0
        self.manual_target: dict[str, set[IdPartition]] | None = None
        self.offsets_epoch_checks = 0
        #: partitions two members reported owning at once (the protocol forbids it)
        self.double_owned: list[tuple[str, str, IdPartition]] = []

    def __repr__(self) -> str:
        return f"ConsumerGroup({self.group_id!r}, epoch={self.epoch}, members={list(self.members)})"

    # ------------------------------------------------------------------ assignment

    def set_target(self, target: Mapping[str, set[IdPartition]] | None,
                   topics: Mapping[str, TopicLike]) -> None:
        """A test's own target assignment (member id -> partitions); None: the default."""
        self.manual_target = None if target is None else {m: set(p) for m, p in target.items()}
        self._recompute(topics)

    def _subscribed(self, m: ConsumerMember, topics: Mapping[str, TopicLike]) -> list[str]:
        names = [t for t in m.topics if t in topics]
        if m.regex:
            rx = re.compile(m.regex)
            names += [t for t in sorted(topics) if rx.fullmatch(t) and t not in names]
        return names

    def _recompute(self, topics: Mapping[str, TopicLike]) -> None:
        self.epoch += 1
        active = [m for m in self.members.values()]
        if self.manual_target is not None:
            for m in active:
                m.target = set(self.manual_target.get(m.member_id, set()))
            return
        for m in active:
            m.target = set()
        by_topic: dict[str, list[ConsumerMember]] = {}
        for m in active:
            for t in self._subscribed(m, topics):
                by_topic.setdefault(t, []).append(m)
        for t, members in by_topic.items():
            topic = topics[t]
            n = len(topic.partitions)
            per, extra = divmod(n, len(members))
            start = 0
            for i, m in enumerate(members):
                count = per + (1 if i < extra else 0)
                m.target |= {(topic.topic_id, p) for p in range(start, start + count)}
                start += count

    def _next_assignment(self, m: ConsumerMember) -> set[IdPartition]:
        if m.owned - m.target:
            return m.owned & m.target                 # revoke first; the epoch stays
        m.epoch = self.epoch
        held = set().union(*(o.owned for o in self.members.values() if o is not m))
        return m.owned | (m.target - held)

    # ------------------------------------------------------------------ requests

    def heartbeat(self, body: Mapping[str, Any], topics: Mapping[str, TopicLike],
                  now: float) -> dict[str, Any]:
        mid, epoch = body["member_id"], body["member_epoch"]
        if not mid:
            return self._error(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if body["server_assignor"] not in (None, "uniform", "range"):
            return self._error(ErrorCode.UNSUPPORTED_ASSIGNOR,
                               f"Assignor {body['server_assignor']} is not supported.")
        m = self.members.get(mid)
        if epoch < 0:
            if m is not None:
                if epoch == -2 and m.instance_id is not None:
                    m.left_static = True
                    m.owned = set()
                    m.sent = None
                else:
                    del self.members[mid]
                    self._recompute(topics)
            return self._ok(mid, epoch, None)
        if epoch == 0:
            if body["rebalance_timeout_ms"] == -1 or (body["subscribed_topic_names"] is None
                                                     and body["subscribed_topic_regex"] is None):
                return self._error(ErrorCode.INVALID_REQUEST,
                                   "a joining member must send its subscription")
            iid = body["instance_id"]
            if m is None and iid is not None:
                same = next((x for x in self.members.values() if x.instance_id == iid), None)
                if same is not None and not same.left_static:
                    return self._error(ErrorCode.UNRELEASED_INSTANCE_ID,
                                       f"Static member {iid} is still active.")
                if same is not None:                  # the static member comes back
                    del self.members[same.member_id]
                    same.member_id, same.left_static = mid, False
                    self.members[mid] = m = same
            if m is None:
                m = ConsumerMember(mid, iid, 0, [], None, body["rebalance_timeout_ms"], now)
                self.members[mid] = m
                self._update_subscription(m, body)
                self._recompute(topics)
        else:
            if m is None:
                return self._error(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {mid} is unknown.")
            if epoch != m.epoch:
                del self.members[mid]
                self._recompute(topics)
                return self._error(ErrorCode.FENCED_MEMBER_EPOCH,
                                   f"The member epoch {epoch} is not {m.epoch}.")
        m.last_seen = now
        if self._update_subscription(m, body):
            self._recompute(topics)
        if body["topic_partitions"] is not None:
            m.owned = {(t["topic_id"], p) for t in body["topic_partitions"]
                       for p in t["partitions"]}
            for other in self.members.values():
                if other is not m:
                    self.double_owned += [(m.member_id, other.member_id, p)
                                          for p in m.owned & other.owned]
        nxt = frozenset(self._next_assignment(m))
        send = None if nxt == m.sent else nxt
        m.sent = nxt
        return self._ok(mid, m.epoch, send)

    @staticmethod
    def _update_subscription(m: ConsumerMember, body: Mapping[str, Any]) -> bool:
        names, regex = body["subscribed_topic_names"], body["subscribed_topic_regex"]
        changed = False
        if names is not None and sorted(names) != sorted(m.topics):
            m.topics, changed = list(names), True
        if regex is not None and (regex or None) != m.regex:
            m.regex, changed = regex or None, True
        return changed

    def expire(self, now: float, topics: Mapping[str, TopicLike]) -> None:
        gone = [mid for mid, m in self.members.items()
                if now - m.last_seen > self.session_timeout_s]
        for mid in gone:
            del self.members[mid]
        if gone:
            self._recompute(topics)

    def commit_error(self, member_id: str, epoch: int) -> int:
        """OffsetCommit's member checks for a consumer group."""
        if epoch < 0 and not member_id:
            return 0                                  # an admin-style commit
        m = self.members.get(member_id)
        if m is None:
            return int(ErrorCode.UNKNOWN_MEMBER_ID)
        self.offsets_epoch_checks += 1
        return 0 if epoch == m.epoch else int(ErrorCode.STALE_MEMBER_EPOCH)

    def _ok(self, mid: str, epoch: int, assignment: frozenset[IdPartition] | None
            ) -> dict[str, Any]:
        out: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                               "member_id": mid, "member_epoch": epoch,
                               "heartbeat_interval_ms": self.heartbeat_interval_ms,
                               "assignment": None}
        if assignment is not None:
            by_topic: dict[uuid.UUID, list[int]] = {}
            for tid, p in assignment:
                by_topic.setdefault(tid, []).append(p)
            out["assignment"] = {"topic_partitions": [
                {"topic_id": tid, "partitions": sorted(ps)} for tid, ps in by_topic.items()]}
        return out

    def _error(self, code: int, message: str) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
                "member_id": None, "member_epoch": -1, "heartbeat_interval_ms": 0,
                "assignment": None}


__all__ = ["ConsumerGroup", "ConsumerMember", "IdPartition", "TopicLike"]
