"""Group membership with the consumer protocol (KIP-848, ``group.protocol=consumer``).

The broker computes the assignment; the member only heartbeats (ConsumerGroupHeartbeat) and
reconciles. Java's ``ConsumerMembershipManager`` + ``ConsumerHeartbeatRequestManager``, in the
threading model of the classic membership (:mod:`pyconsumer.consumer.group.classic`):

* heartbeats are sent by a poll hook of the network client (:meth:`heartbeat_step`, any thread:
  the application's polls, or the heartbeat thread between them); it only sends and records.
  The interval is the broker's (``HeartbeatIntervalMs``); ``session.timeout.ms`` and
  ``heartbeat.interval.ms`` are broker settings with this protocol (refused by the config);
* the member id is the client's own (KIP-1082, a UUID kept for the consumer's lifetime); it
  joins with epoch 0 and the full subscription (topic names, or the regular expression the
  broker evaluates: RE2/J syntax, as Java's ``SubscriptionPattern``), leaves with epoch -1
  (static members -2: the broker keeps their assignment for the session);
* reconciliation runs on the application thread inside poll() (the listener is user code):
  the broker sends the whole assignment whenever it changes, and only partitions usable now;
  the member revokes what it no longer holds (committing first with auto-commit;
  ``on_partitions_revoked`` with exactly those), takes what it adds
  (``on_partitions_assigned`` with exactly those), then acknowledges by sending the
  partitions it owns in the next heartbeat, at once. Partitions that stay are never paused;
* FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the partitions are lost (``on_partitions_lost``,
  before poll() returns anything) and the member rejoins with epoch 0; max.poll.interval.ms
  exceeded: the member leaves, and the next poll() hands the partitions back as lost and
  rejoins; fatal errors (authorization, UNRELEASED_INSTANCE_ID, an unsupported assignor or
  regex, no API 68 at the broker) are raised from every poll();
* the member owns its id and epoch; commits carry the epoch (OffsetCommit's
  GenerationIdOrMemberEpoch) and member id once a heartbeat answer gave them, none while
  joining or out of the group: the coordinator hears them through its
  ``MemberStateListener``; ``group_metadata()`` reports them;
* ``enforce_rebalance()`` does nothing but log, as Java: the broker decides.

The pure parts (what an assignment means, which fields a heartbeat carries) are in
:mod:`pyconsumer.consumer.group.reconciliation`.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.group.errors import GroupAction, classify
from pyconsumer.consumer.group.heartbeat import HeartbeatTimer
from pyconsumer.consumer.group.membership import MembershipBase, MemberState
from pyconsumer.consumer.group.reconciliation import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    UNCHANGED_TIMEOUT,
    HeartbeatFields,
    TopicIdPartitions,
    assignment_from_response,
    plan,
)
from pyconsumer.consumer.group.seams import GroupCoordinator
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.errors import (
    CommitFailedError,
    KafkaError,
    UnsupportedVersionError,
    error_for_code,
)
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.deadline import remaining_ms
from pyconsumer.net.future import Future
from pyconsumer.net.responses import body_of
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from pyconsumer.protocol import bodies

log = logging.getLogger(__name__)

#: Java's message when the cluster lacks ConsumerGroupHeartbeat
NO_CONSUMER_PROTOCOL = (
    "The cluster does not support the new CONSUMER group protocol. Set group.protocol=classic "
    "on the consumer configs to revert to the CLASSIC protocol until the cluster is upgraded.")


class ConsumerProtocolMembership(MembershipBase):
    def __init__(self, coordinator: GroupCoordinator, client: NetworkClient,
                 config: ConsumerConfig, subscriptions: SubscriptionState,
                 on_unassigned: Callable[[set[TopicPartition]], None],
                 consumed: Callable[[], dict[TopicPartition, OffsetAndMetadata]]) -> None:
        super().__init__(coordinator, client, config, subscriptions, on_unassigned, consumed)
        self.member_id = str(uuid.uuid4())       # KIP-1082: the client's own member id
        self.member_epoch = JOIN_EPOCH
        self.state = MemberState.UNSUBSCRIBED
        self.fields = HeartbeatFields()
        # the broker gives the interval; until the first answer, heartbeat at once
        self.timer = HeartbeatTimer(
            session_timeout_ms=float("inf"), heartbeat_interval_ms=0,
            max_poll_interval_ms=config.max_poll_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms, now=time.monotonic())
        self._target: TopicIdPartitions | None = None      # the broker's latest assignment
        self._target_version = 0
        self._reconciled_version = 0
        self._unresolved_seen = -1             # metadata version of the last unresolved plan
        self._owned_ids: dict[str, uuid.UUID] = {}         # topic name -> id, owned topics
        self._owned_by_id: TopicIdPartitions = {}          # what the heartbeats report
        self._lost_reason = ""
        #: bumped whenever a membership ends or starts: answers to older heartbeats are void
        self._incarnation = 0
        #: a new membership's first assignment is reconciled (and the listener told) even
        #: when it is empty, as Java does
        self._first_reconciliation = True
        #: fenced while joining: the next join waits retry.backoff.ms (no hammering)
        self._rejoin_after = 0.0
        client.add_poll_hook(self.heartbeat_step)

    # ------------------------------------------------------------------ what the consumer asks

    @property
    def generation(self) -> int:
        return self.member_epoch

    @property
    def rejoin_needed(self) -> bool:
        """The application thread has group work to do (join, release, reconcile)."""
        return self.state in (MemberState.JOINING, MemberState.FENCED, MemberState.STALE) \
            or self._target_version != self._reconciled_version

    def attention(self) -> bool:
        """Wake a waiting poll(): an assignment to reconcile, partitions to release, an error."""
        return self.state in (MemberState.FENCED, MemberState.STALE, MemberState.FATAL) \
            or self._target_version != self._reconciled_version

    def completed_generation(self) -> tuple[int, str] | None:
        if self.state is MemberState.STABLE and self.member_epoch > 0:
            return self.member_epoch, self.member_id
        return -1, ""

    def generation_lost(self) -> bool:
        return self.state in (MemberState.FENCED, MemberState.STALE)

    def on_subscribe(self, changed: bool) -> None:
        """subscribe() was called: the next heartbeat carries the subscription."""
        self.fields.send_subscription = True
        self.timer.next_due = 0.0
        if self.state is MemberState.UNSUBSCRIBED:
            log.info("group %s: joining with the consumer protocol as member %s",
                     self.group_id, self.member_id)

    def request_rejoin(self, reason: str) -> None:
        log.warning("group %s: enforce_rebalance(%s) has no effect with group.protocol=consumer: "
                    "the broker decides when to reassign", self.group_id, reason)

    def check_metadata(self) -> None:
        """A regular expression is the broker's to evaluate; locally it only names the
        subscription (``subscription()``) with the topics it matches."""
        if self.subscriptions.pattern is not None:
            topics = [t for t, md in self.client.metadata.topics.items()
                      if not (md.is_internal and self.config.exclude_internal_topics)]
            assigned = {tp.topic for tp in self.subscriptions.assigned_partitions()}
            self.subscriptions.match_pattern(topics)
            self.subscriptions.subscription |= assigned

    # ------------------------------------------------------------------ application thread

    def ensure_active_group(self, deadline: float) -> bool:
        """Join, release lost partitions, reconcile the broker's assignment. Never waits for
        the broker: the heartbeat answers arrive while poll() waits for data. True when the
        member holds its whole current assignment."""
        self.raise_if_fatal()
        if self.state in (MemberState.FENCED, MemberState.STALE):
            self._release_lost()
            self._join(self._lost_reason)
        if self.state is MemberState.UNSUBSCRIBED:
            if not self.subscriptions.subscription and self.subscriptions.pattern is None:
                return False
            self._join("subscribed")
        if self.coordinator.coordinator_unknown():
            self.coordinator.lookup_if_needed(time.monotonic())
        if self.state is MemberState.STABLE:
            self._reconcile(deadline)
        return self.state is MemberState.STABLE and not self.attention()

    def _join(self, reason: str) -> None:
        log.info("group %s: member %s joins (epoch 0): %s", self.group_id,
                 self.member_id, reason)
        self._start_over(MemberState.JOINING)
        self._first_reconciliation = True
        self.fields.reset()
        self.timer.next_due = self._rejoin_after
        self.coordinator.metrics.rebalance_started()

    def _release_lost(self) -> None:
        lost = set(self.subscriptions.assigned_partitions())
        self._owned_ids = {}
        self._owned_by_id = {}
        if not lost:
            return
        log.info("group %s: partitions lost (%s): %s", self.group_id,
                 self._lost_reason, sorted(map(str, lost)))
        self.subscriptions.assign_from_subscribed([])
        self.on_unassigned(lost)
        self.run_listener("on_partitions_lost", lost)

    def _topic_names(self) -> dict[uuid.UUID, str]:
        names = {md.topic_id: name for name, md in self.client.metadata.topics.items()
                 if md.topic_id is not None}
        names.update({tid: name for name, tid in self._owned_ids.items()})
        return names

    def _reconcile(self, deadline: float) -> None:
        """Become the broker's latest assignment (application thread)."""
        version, target = self._target_version, self._target
        metadata_version = self.client.metadata.answers   # each answer: ask again
        if target is None:
            return
        if version == self._reconciled_version and not (
                self._unresolved_seen >= 0 and metadata_version != self._unresolved_seen):
            return
        names = self._topic_names()
        owned = set(self.subscriptions.assigned_partitions())
        r = plan(owned, target, names, None if self.subscriptions.pattern is not None
                 else self.subscriptions.subscription)
        if r.unresolved:
            # ids of topics the metadata does not know yet: reconcile the rest now, these
            # once the metadata names them
            log.info("group %s: assignment names topic ids not in the metadata yet: %s",
                     self.group_id, sorted(map(str, r.unresolved)))
            self._unresolved_seen = metadata_version
            self.client.metadata.request_update()
        else:
            self._unresolved_seen = -1
        self._reconciled_version = version
        if not r.changes and self._owned_by_id == r.assigned_ids \
                and (not self._first_reconciliation or r.unresolved):
            return
        self._first_reconciliation = False
        log.info("group %s: member %s epoch %d reconciles: revoke %s, add %s",
                 self.group_id, self.member_id, self.member_epoch,
                 sorted(map(str, r.revoked)), sorted(map(str, r.added)))
        if r.revoked:
            if self.config.enable_auto_commit:
                try:
                    self.coordinator.commit_sync(self.consumed(), deadline_for_commit(
                        self.config.default_api_timeout_ms))
                except KafkaError as e:
                    log.warning("group %s: commit before revoking %s failed: %s",
                                self.group_id, sorted(map(str, r.revoked)), e)
            kept = [tp for tp in self.subscriptions.assigned_partitions() if tp not in r.revoked]
            self.subscriptions.assign_from_subscribed(kept)
            self.on_unassigned(set(r.revoked))
            self.run_listener("on_partitions_revoked", set(r.revoked))
        if self.subscriptions.pattern is not None:
            # the broker's regex chose these topics
            self.subscriptions.subscription |= {tp.topic for tp in r.assigned}
        self.subscriptions.assign_from_subscribed(
            sorted(r.assigned, key=lambda tp: (tp.topic, tp.partition)))
        self._owned_ids = {names[tid]: tid for tid in r.assigned_ids}
        try:
            self.run_listener("on_partitions_assigned", set(r.added))
        finally:
            # acknowledge at once: the broker hands our released partitions to others, and
            # gives us the ones still held elsewhere, only after this
            self._owned_by_id = dict(r.assigned_ids)
            self.fields.send_owned = True
            self.timer.next_due = 0.0
            self.coordinator.metrics.rebalance_completed()

    # ------------------------------------------------------------------ commits

    def check_can_commit(self) -> None:
        if not self.subscriptions.has_auto_assignment:
            return                        # assign(): a standalone commit
        self.raise_if_fatal()
        if self.state is MemberState.STABLE and self.member_epoch > 0:
            return
        raise CommitFailedError(
            f"Offset commit cannot be completed since the consumer is not part of an active "
            f"group {self.group_id} (member {self.member_id}, state "
            f"{self.state.value}{': ' + self._lost_reason if self._lost_reason else ''}); the "
            "offsets were not committed")

    def on_group_error(self, action: GroupAction, err: KafkaError) -> None:
        """A commit's answer: the heartbeat is the authority on membership, so a stale epoch
        or an unknown member here only fails the commit (CommitFailedError)."""
        log.debug("group %s: commit answered %s (%s)", self.group_id, err,
                  action.value)

    def on_coordinator_found(self) -> None:
        self.fields.failed()               # a new coordinator hears everything again
        self.timer.next_due = 0.0

    # ------------------------------------------------------------------ heartbeat (any thread)

    def heartbeat_step(self, now: float) -> float | None:
        """The network client's poll hook: sends a heartbeat when due; returns the seconds
        until it wants to run again, or None when there is nothing to send."""
        if self.state not in (MemberState.JOINING, MemberState.STABLE):
            return None
        coordinator = self.coordinator
        if coordinator.coordinator_unknown():
            coordinator.lookup_if_needed(now)
            return self.config.retry_backoff_ms / 1000.0
        timer = self.timer
        if self.state is MemberState.STABLE and timer.poll_timeout_expired(now):
            log.warning("group %s: consumer poll timeout has expired: poll() was not called "
                        "within max.poll.interval.ms=%d; leaving the group, its partitions "
                        "are lost", self.group_id, self.config.max_poll_interval_ms)
            self._send_leave()
            self._lose(MemberState.STALE, "max.poll.interval.ms exceeded")
            return None
        if timer.should_heartbeat(now):
            self._send_heartbeat(now)
        wait = timer.time_to_next_heartbeat(now) if not timer.in_flight \
            else self.config.retry_backoff_ms / 1000.0
        if self.state is MemberState.STABLE:
            wait = min(wait, timer.time_to_poll_timeout(now))
        return wait

    def _body(self, epoch: int) -> bodies.ConsumerGroupHeartbeatRequest:
        sub = self.subscriptions
        return self.fields.build(
            group_id=self.group_id, member_id=self.member_id, member_epoch=epoch,
            instance_id=self.group_instance_id, rack_id=self.config.client_rack,
            rebalance_timeout_ms=self.config.max_poll_interval_ms,
            topics=() if sub.pattern is not None else sub.subscription,
            regex=sub.pattern.pattern if sub.pattern is not None else None,
            server_assignor=self.config.group_remote_assignor, owned=self._owned_by_id)

    def _send_heartbeat(self, now: float) -> None:
        fut = self.coordinator.send(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                    self._body(self.member_epoch))
        self.timer.sent(now)
        self.coordinator.metrics.heartbeat_sent(fut)
        incarnation = self._incarnation
        fut.add_callback(lambda f: self._on_heartbeat(f, incarnation), any_thread=True)

    def _on_heartbeat(self, fut: Future[Response], incarnation: int) -> None:
        now = time.monotonic()
        if incarnation != self._incarnation \
                or self.state not in (MemberState.JOINING, MemberState.STABLE):
            self.timer.received(now)
            return                                   # an answer for a membership that ended
        if fut.failed():
            self.timer.failed(now)
            self.fields.failed()
            err = fut.exception
            if isinstance(err, UnsupportedVersionError):
                self._set_fatal(UnsupportedVersionError(f"{NO_CONSUMER_PROTOCOL} ({err})"))
            elif isinstance(err, KafkaError) and err.retriable:
                self.coordinator.mark_coordinator_unknown(f"heartbeat failed: {err}")
            else:
                log.warning("group %s: heartbeat failed: %s", self.group_id, err)
            return
        self.timer.received(now)
        assert fut.value is not None
        body = body_of(fut.value, ApiKey.CONSUMER_GROUP_HEARTBEAT)
        code = body["error_code"]
        if code:
            self._on_heartbeat_error(code, body.get("error_message"), now)
            return
        self.fields.answered()
        if member_id := body["member_id"]:
            self.member_id = member_id                # a v0 broker assigns it
        self.member_epoch = body["member_epoch"]
        interval = body["heartbeat_interval_ms"]
        if interval > 0:
            if self.timer.interval != interval / 1000.0:
                self.timer.next_due += interval / 1000.0 - self.timer.interval
            self.timer.interval = interval / 1000.0
        if self.state is MemberState.JOINING:
            log.info("group %s: member %s joined at epoch %d", self.group_id,
                     self.member_id, self.member_epoch)
            self.state = MemberState.STABLE
        self.notify_epoch_change(self.member_epoch, self.member_id)
        if (assignment := body["assignment"]) is not None:
            self._target = assignment_from_response(assignment)
            self._target_version += 1

    def _on_heartbeat_error(self, code: int, message: str | None, now: float) -> None:
        group = self.group_id
        action = classify(ApiKey.CONSUMER_GROUP_HEARTBEAT, code)
        err = error_for_code(code, f"ConsumerGroupHeartbeat of member {self.member_id} in "
                             f"group {group}" + (f": {message}" if message else ""))
        assert err is not None
        if action is GroupAction.COORDINATOR_MOVED:
            self.fields.failed()
            self.coordinator.mark_coordinator_unknown(f"heartbeat: {err.message}")
        elif action is GroupAction.RETRY:
            self.fields.failed()
            self.timer.failed(now)
        elif action is GroupAction.LOST:
            log.warning("group %s: member %s fenced at epoch %d: %s", group, self.member_id,
                        self.member_epoch, err)
            joining = self.state is MemberState.JOINING
            self._rejoin_after = now + self.config.retry_backoff_ms / 1000.0 if joining else 0.0
            self._lose(MemberState.FENCED, str(err))
        else:
            self._set_fatal(err)

    def _lose(self, state: MemberState, reason: str) -> None:
        """The member is out of the group (fenced, or left on the poll timeout): the
        application thread hands its partitions back as lost, then it rejoins."""
        self.state = state
        self._incarnation += 1
        self._lost_reason = reason
        self.member_epoch = JOIN_EPOCH
        self.notify_no_generation()

    def _set_fatal(self, err: KafkaError) -> None:
        log.error("group %s: %s", self.group_id, err)
        self._fatal = err
        self.state = MemberState.FATAL

    # ------------------------------------------------------------------ leave

    def _send_leave(self, deadline: float | None = None) -> None:
        if self.coordinator.coordinator_unknown():
            return
        epoch = LEAVE_STATIC_EPOCH if self.group_instance_id else LEAVE_EPOCH
        # the fields a leave does not need are null (unchanged)
        body: bodies.ConsumerGroupHeartbeatRequest = {
            "group_id": self.group_id, "member_id": self.member_id, "member_epoch": epoch,
            "instance_id": self.group_instance_id, "rack_id": None,
            "rebalance_timeout_ms": UNCHANGED_TIMEOUT, "subscribed_topic_names": None,
            "server_assignor": None, "topic_partitions": None}
        fut = self.coordinator.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, body)
        fut.add_callback(lambda f: None, any_thread=True)
        if deadline is not None:
            self.client.poll(timeout_ms=remaining_ms(deadline), future=fut, wakeup=False)

    def maybe_leave(self, reason: str, deadline: float | None = None) -> None:
        """Leave the group (epoch -1; a static member -2, which keeps its assignment at the
        broker until it returns or its session ends). The caller has revoked the partitions."""
        log.info("group %s: member %s leaves: %s", self.group_id, self.member_id,
                 reason)
        if self.state in (MemberState.JOINING, MemberState.STABLE):
            # Java's LEAVING: the heartbeat thread sends no more, and the answer to one it
            # sent before (UNKNOWN_MEMBER_ID once the leave is through) is for a membership
            # that ended, not a fencing to warn about
            self.state = MemberState.LEAVING
            self._incarnation += 1
            self._send_leave(deadline)
        self._start_over(MemberState.UNSUBSCRIBED)
        self._owned_ids = {}
        self._owned_by_id = {}

    def _start_over(self, state: MemberState) -> None:
        """A membership ends or begins: no epoch, no commits, no assignment pending, and the
        answers to heartbeats already sent are void."""
        self.state = state
        self._incarnation += 1
        self.member_epoch = JOIN_EPOCH
        self.notify_no_generation()
        self._target = None
        self._reconciled_version = self._target_version



def deadline_for_commit(timeout_ms: float) -> float:
    return time.monotonic() + timeout_ms / 1000.0


__all__ = ["ConsumerProtocolMembership", "NO_CONSUMER_PROTOCOL"]
