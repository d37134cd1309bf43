"""Group membership with the classic protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Java's ``AbstractCoordinator`` + ``ConsumerCoordinator`` membership half:

* member states UNJOINED -> PREPARING_REBALANCE -> COMPLETING_REBALANCE -> STABLE;
* before a join, auto-committed offsets are committed; with the EAGER protocol every owned
  partition is revoked (listener ``on_partitions_revoked``), with COOPERATIVE nothing is; a
  member whose generation was reset (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION on any request,
  ``max.poll.interval.ms`` exceeded) has *lost* its partitions, whatever the protocol:
  ``on_partitions_lost``, the assignment cleared, before poll() returns anything;
* the JoinGroup carries one (name, subscription) pair per assignor, in preference order; the
  leader decodes every member's subscription, fetches metadata for all their topics, runs the
  chosen assignor and sends the result with SyncGroup;
* after SyncGroup (COOPERATIVE): partitions no longer assigned are revoked and the member
  rejoins at once, so they can be handed over in the next round; partitions added are
  assigned. EAGER: the whole assignment is assigned;
* error codes are classified once (:mod:`pyconsumer.consumer.group.errors`): retry, the
  coordinator moved (find it again), rejoin, lost, MEMBER_ID_REQUIRED, fatal
  (FENCED_INSTANCE_ID: raised from poll(), and from every poll() after: the member is fenced);
* the member owns its generation and member id (the coordinator hears them change, for the
  commits, through its ``MemberStateListener``);
* static membership: ``group.instance.id`` is sent everywhere; a static member does not leave
  the group on close (its session keeps its partitions until it comes back);
* heartbeats: a poll hook of the network client (:meth:`GroupMembership.heartbeat_step`) runs
  on every network poll, in whichever thread polls: the application's (blocking calls keep
  heartbeating) or the heartbeat thread's between polls (see :mod:`pyconsumer.threads`). It
  finds a lost coordinator again, sends heartbeats on time, marks the coordinator unknown when
  the session passed without an answer, and leaves the group when ``poll()`` was not called
  within ``max.poll.interval.ms``. It only records: the application thread acts.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.group.assignors import Assignor, RebalanceProtocol, assignor_for
from pyconsumer.consumer.group.assignors.sticky import StickyAssignor
from pyconsumer.consumer.group.errors import GroupAction, classify
from pyconsumer.consumer.group.embedded import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from pyconsumer.consumer.group.heartbeat import HeartbeatTimer
from pyconsumer.consumer.group.membership import MembershipBase, MemberState
from pyconsumer.consumer.group.seams import NO_GENERATION, NO_MEMBER_ID, GroupCoordinator
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.errors import (
    CommitFailedError,
    ErrorCode,
    KafkaError,
    KafkaProtocolError,
    RebalanceInProgressError,
    error_for_code,
)
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.deadline import Retry, remaining_ms, retry_until
from pyconsumer.net.future import Future
from pyconsumer.net.responses import body_of
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:  # types only
    from pyconsumer.protocol import bodies

log = logging.getLogger(__name__)


def _named(value: str | None, field: str, answer: str) -> str:
    """A JoinGroup string Kafka never sends null in this ``answer``. The codec reads
    member_id, leader and protocol_name as nullable (an answer with an error code may carry
    nulls); protocol_name is nullable on the wire from v7 (an empty string before), but
    the broker leaves it out only beside an error. A null one here is a broken answer: said
    at once, rather than kept as the member's id or the group's protocol."""
    if value is None:
        raise KafkaProtocolError(f"JoinGroup answered {answer} with a null {field}")
    return value


class _OutOfTime(Exception):
    """The join's deadline passed between rounds (ensure_active_group returns False)."""


class GroupMembership(MembershipBase):
    def __init__(self, coordinator: GroupCoordinator, client: NetworkClient,
                 config: ConsumerConfig, subscriptions: SubscriptionState,
                 on_unassigned: Callable[[set[TopicPartition]], None],
                 consumed: Callable[[], dict[TopicPartition, OffsetAndMetadata]]) -> None:
        super().__init__(coordinator, client, config, subscriptions, on_unassigned, consumed)
        self.assignors: list[Assignor] = [assignor_for(a) for a in
                                          config.partition_assignment_strategy]
        cooperative = all(RebalanceProtocol.COOPERATIVE in a.supported_protocols
                          for a in self.assignors)
        self.protocol = RebalanceProtocol.COOPERATIVE if cooperative else RebalanceProtocol.EAGER
        self.state = MemberState.UNJOINED
        # the member's identity: this membership's alone; the coordinator hears it change
        self._generation = NO_GENERATION
        self._member_id = NO_MEMBER_ID
        self.rejoin_needed = True
        self.rejoin_reason = "initial join"
        self.timer = HeartbeatTimer(
            session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms, now=time.monotonic())
        self._joined_topics: frozenset[str] = frozenset()
        self._metadata_snapshot: dict[str, int] = {}
        self._prepared = False
        self._join_fut: Future[Response] | None = None
        self._sync_fut: Future[Response] | None = None
        client.add_poll_hook(self.heartbeat_step)

    # ------------------------------------------------------------------ state helpers

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def member_id(self) -> str:
        return self._member_id

    def _set_generation(self, generation: int, member_id: str) -> None:
        """The one place the identity changes (any thread): commits carry it from now on."""
        self._generation, self._member_id = generation, member_id
        self.notify_epoch_change(generation, member_id)

    def request_rejoin(self, reason: str) -> None:
        if not self.rejoin_needed:
            log.info("group %s: rejoining: %s", self.group_id, reason)
        self.rejoin_needed = True
        self.rejoin_reason = reason

    def on_subscribe(self, changed: bool) -> None:
        """subscribe() was called; a changed topic list means a rejoin (a pattern's matches
        are checked against the metadata in :meth:`check_metadata`)."""
        if changed:
            self.request_rejoin("the subscription changed")

    def attention(self) -> bool:
        """Wake a waiting poll()? The classic protocol joins inside poll() itself."""
        return False

    def completed_generation(self) -> tuple[int, str] | None:
        """For group_metadata(): the generation of the last completed join ((-1, "") once it
        is lost); None while a rebalance is in progress (the previous one still shows)."""
        if self.generation_lost():
            return -1, ""
        if self.state is MemberState.STABLE:
            return self.generation, self.member_id
        return None

    def _owned(self) -> set[TopicPartition]:
        return set(self.subscriptions.assigned_partitions())

    def reset_generation(self, reason: str) -> None:
        """Forget the generation (any thread: this only records). The owned partitions are
        lost; the application thread hands them back in its next poll()."""
        if self._generation != NO_GENERATION or self._member_id:
            log.info("group %s: resetting the generation (%s)", self.group_id, reason)
        self._set_generation(NO_GENERATION, NO_MEMBER_ID)
        self.state = MemberState.UNJOINED
        self.request_rejoin(reason)

    def generation_lost(self) -> bool:
        return self._generation == NO_GENERATION and not self._member_id

    def handle_lost_partitions(self) -> None:
        """Application thread: a reset generation's partitions are lost (Java onJoinPrepare
        with NO_GENERATION): listener, then the assignment is cleared, buffered data dropped."""
        if not self.generation_lost():
            return
        lost = self._owned()
        if not lost:
            return
        log.info("group %s: partitions lost with the generation: %s", self.group_id,
                 sorted(map(str, lost)))
        self.subscriptions.assign_from_subscribed([])
        self.on_unassigned(lost)
        self.run_listener("on_partitions_lost", lost)

    def on_group_error(self, action: GroupAction, err: KafkaError) -> None:
        """What a group request's answer said about the membership (any thread)."""
        if action is GroupAction.LOST:
            self.reset_generation(str(err))
        elif action is GroupAction.REJOIN:
            self.request_rejoin(str(err))
        elif action is GroupAction.FATAL and getattr(err, "errno", None) \
                == ErrorCode.FENCED_INSTANCE_ID:
            # another instance with our group.instance.id took over: never rejoin
            self._fatal = err
            self.state = MemberState.UNJOINED

    def check_can_commit(self) -> None:
        """Java generationIfStable: a member of a group commits only while stable."""
        if not self.subscriptions.has_auto_assignment:
            return                        # assign(): a standalone commit
        self.raise_if_fatal()
        if self.state is MemberState.STABLE and not self.generation_lost():
            return
        if self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
            raise RebalanceInProgressError(
                f"Offset commit cannot be completed since the group {self.group_id} "
                "is rebalancing: call poll() to complete the rebalance, then commit the "
                "partitions still assigned")
        raise CommitFailedError(
            f"Offset commit cannot be completed since the consumer is not part of an active "
            f"group {self.group_id} for auto partition assignment (its generation "
            f"was reset: {self.rejoin_reason}); it is likely that the consumer was kicked out "
            "of the group (e.g. max.poll.interval.ms exceeded); the offsets were not committed")

    def on_coordinator_found(self) -> None:
        """A (new) coordinator: the session counts from now."""
        self.timer.reset(time.monotonic())

    def _snapshot(self) -> dict[str, int]:
        out = {}
        for topic in self.subscriptions.subscription:
            parts = self.client.metadata.partitions_for(topic)
            if parts is not None:
                out[topic] = len(parts)
        return out

    def check_metadata(self) -> None:
        """Rejoin when the subscription or its topics' partition counts changed."""
        if self.subscriptions.pattern is not None:
            topics = [t for t, md in self.client.metadata.topics.items()
                      if not (md.is_internal and self.config.exclude_internal_topics)]
            if self.subscriptions.match_pattern(topics):
                self.client.metadata_topics = None
        if self.state is MemberState.STABLE:
            if frozenset(self.subscriptions.subscription) != self._joined_topics:
                self.request_rejoin("the subscription changed")
            elif self._snapshot() != self._metadata_snapshot:
                self.request_rejoin("the partition count of a subscribed topic changed")

    # ------------------------------------------------------------------ join

    def _on_join_prepare(self) -> None:
        if self._prepared:
            return
        self._prepared = True
        if self.config.enable_auto_commit and not self.generation_lost():
            try:
                self.coordinator.commit_sync(
                    self.consumed(),
                    time.monotonic() + self.config.default_api_timeout_ms / 1000.0)
            except KafkaError as e:
                log.warning("group %s: commit before rebalance failed: %s",
                            self.group_id, e)
        if self.generation_lost():
            self.handle_lost_partitions()
        elif self.protocol is RebalanceProtocol.EAGER:
            revoked = self._owned()
            self.subscriptions.assign_from_subscribed([])
            if revoked:
                self.on_unassigned(revoked)
                self.run_listener("on_partitions_revoked", revoked)
        self.state = MemberState.PREPARING_REBALANCE

    def _subscription_metadata(self, assignor: Assignor) -> bytes:
        topics = sorted(self.subscriptions.subscription)
        owned = sorted(self._owned(), key=lambda tp: (tp.topic, tp.partition)) \
            if self.protocol is RebalanceProtocol.COOPERATIVE else []
        return encode_subscription(Subscription(
            topics, assignor.subscription_user_data(set(topics)), owned, self.generation,
            self.config.client_rack))

    def ensure_active_group(self, deadline: float) -> bool:
        """Join (or rejoin) if needed, until ``deadline``; True when the member is stable.
        First raises a fatal error and hands back partitions lost with the generation.

        A JoinGroup may wait at the broker for every member (up to the rebalance timeout):
        the requests in flight are kept between calls, so a short poll() does not resend."""
        self.raise_if_fatal()
        self.handle_lost_partitions()
        if not self.rejoin_needed and self.state is MemberState.STABLE:
            return True
        if not self.subscriptions.subscription and self.subscriptions.pattern is None:
            return False
        try:
            return retry_until(deadline, lambda: self._join_round(deadline),
                               wait=lambda ms: self.client.poll(timeout_ms=ms),
                               backoff_ms=self.config.retry_backoff_ms,
                               timeout=lambda last: _OutOfTime())
        except _OutOfTime:
            return False

    def _join_round(self, deadline: float) -> bool:
        """One attempt of :meth:`ensure_active_group`: a JoinGroup/SyncGroup round, or the
        rest of one whose requests are in flight. False when time ran out while waiting;
        Retry when the round failed (the retry driver waits retry.backoff.ms, then the next
        round starts)."""
        if self._join_fut is None and self._sync_fut is None:
            if not self.coordinator.ensure_coordinator_ready(deadline):
                return False
            self._on_join_prepare()
            self.coordinator.metrics.rebalance_started()
            self._join_fut = self._send_join()
        try:
            if self._join_fut is not None:
                if not self._wait(self._join_fut, deadline):
                    return False
                fut, self._join_fut = self._join_fut, None
                self._sync_fut = self._after_join(self.coordinator.response_or_retry(fut))
            assert self._sync_fut is not None
            if not self._wait(self._sync_fut, deadline):
                return False
            fut, self._sync_fut = self._sync_fut, None
            assignment = self._after_sync(self.coordinator.response_or_retry(fut))
        except Retry as r:
            self._join_fut = self._sync_fut = None
            self.coordinator.metrics.rebalance_failed()
            log.debug("group %s: join round failed, retrying: %s",
                      self.group_id, r.error)
            if self.generation_lost() and self._owned():
                self._prepared = False     # hand the lost partitions back first
            raise
        except BaseException:
            # an interrupt (Ctrl-C, wakeup()) while waiting leaves the request in flight:
            # keep it, so the next call resumes the round and close() knows it is pending
            if self._join_fut is not None and self._join_fut.done:
                self._join_fut = None
            if self._sync_fut is not None and self._sync_fut.done:
                self._sync_fut = None
            raise
        self._on_join_complete(assignment)
        return self.state is MemberState.STABLE

    def _wait(self, fut: Future[Response], deadline: float) -> bool:
        self.client.poll(timeout_ms=remaining_ms(deadline), future=fut)
        return fut.done

    def _group_error(self, api: ApiKey, code: int, what: str) -> None:
        """A JoinGroup/SyncGroup error: always ends this round (Retry or raised)."""
        action, err = self.coordinator.group_error(api, code, what)
        assert err is not None
        if action is GroupAction.MEMBER_ID_REQUIRED:
            raise Retry(err, backoff=False)
        self.on_group_error(action, err)
        raise Retry(err)

    def _send_join(self) -> Future[Response]:
        group = self.group_id
        protocols: list[bodies.JoinGroupRequestProtocol] = [
            {"name": a.name, "metadata": self._subscription_metadata(a)} for a in self.assignors]
        member_id, reason = self.member_id, self.rejoin_reason
        instance = self.group_instance_id
        session, rebalance = self.config.session_timeout_ms, self.config.max_poll_interval_ms

        def body(version: int) -> bodies.JoinGroupRequest:
            return {"group_id": group, "session_timeout_ms": session,
                    "rebalance_timeout_ms": rebalance, "member_id": member_id,
                    "group_instance_id": instance, "protocol_type": "consumer",
                    "protocols": protocols, "reason": reason}

        # the broker may hold a JoinGroup until every member rejoined (the rebalance timeout)
        return self.coordinator.send(ApiKey.JOIN_GROUP, body, timeout_ms=rebalance + 5000)

    def _after_join(self, resp: Response) -> Future[Response]:
        body = body_of(resp, ApiKey.JOIN_GROUP)
        code = body["error_code"]
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            # rejoin at once with it (KIP-394)
            self._set_generation(self._generation, _named(body["member_id"], "member_id",
                                                          "MEMBER_ID_REQUIRED"))
        if code:
            self._group_error(ApiKey.JOIN_GROUP, code, "JoinGroup")
        joined = _named(body["member_id"], "member_id", "without error")
        leader = _named(body["leader"], "leader", "without error")
        protocol_name = _named(body["protocol_name"], "protocol_name", "without error")
        self._set_generation(body["generation_id"], joined)
        self.state = MemberState.COMPLETING_REBALANCE
        assignments: list[bodies.SyncGroupRequestAssignment] = []
        if leader == joined and not body.get("skip_assignment", False):
            assignments = self._lead(protocol_name, body["members"])
        group, generation, member_id = self.group_id, self.generation, self.member_id
        instance = self.group_instance_id

        def sync_body(version: int) -> bodies.SyncGroupRequest:
            return {"group_id": group, "generation_id": generation, "member_id": member_id,
                    "group_instance_id": instance, "protocol_type": "consumer",
                    "protocol_name": protocol_name, "assignments": assignments}

        return self.coordinator.send(ApiKey.SYNC_GROUP, sync_body,
                                     timeout_ms=self.config.max_poll_interval_ms + 5000)

    def _after_sync(self, resp: Response) -> Assignment:
        body = body_of(resp, ApiKey.SYNC_GROUP)
        code = body["error_code"]
        if code:
            self._group_error(ApiKey.SYNC_GROUP, code, "SyncGroup")
        return decode_assignment(body["assignment"] or b"")

    def _lead(self, protocol_name: str, members: list[bodies.JoinGroupResponseMember]
              ) -> list[bodies.SyncGroupRequestAssignment]:
        assignor = next((a for a in self.assignors if a.name == protocol_name), None)
        if assignor is None:
            raise KafkaError(f"the group chose assignor {protocol_name!r}, which this member "
                             "does not have")
        subs: dict[str, Subscription] = {}
        for m in members:
            sub = decode_subscription(m["metadata"])
            sub.group_instance_id = m.get("group_instance_id")
            subs[m["member_id"]] = sub
        topics = sorted({t for s in subs.values() for t in s.topics})
        # the whole group waits for this SyncGroup: not bounded by the caller's poll timeout
        metadata = self.client.update_metadata(topics, timeout_ms=self.config.request_timeout_ms)
        counts = {t: len(p) for t in topics if (p := metadata.partitions_for(t))}
        result = assignor.assign(counts, subs)
        log.info("group %s: leader assigned with %s: %s", self.group_id,
                 assignor.name, {m: [str(tp) for tp in tps] for m, tps in result.items()})
        return [{"member_id": m, "assignment": encode_assignment(Assignment(tps))}
                for m, tps in result.items()]

    def _on_join_complete(self, assignment: Assignment) -> None:
        self.coordinator.metrics.rebalance_completed()
        self._prepared = False
        owned = self._owned()
        new = set(assignment.partitions)
        self.rejoin_needed = False
        self.rejoin_reason = ""
        self._joined_topics = frozenset(self.subscriptions.subscription)
        self._metadata_snapshot = self._snapshot()
        self.state = MemberState.STABLE
        self.timer.reset(time.monotonic())
        for a in self.assignors:
            if isinstance(a, StickyAssignor):
                a.last_assignment = list(assignment.partitions)
                a.generation = self.generation
        revoked = owned - new
        self.subscriptions.assign_from_subscribed(assignment.partitions)
        if revoked:
            self.on_unassigned(revoked)
            self.run_listener("on_partitions_revoked", revoked)
            if self.protocol is RebalanceProtocol.COOPERATIVE:
                # hand the revoked partitions over in a follow-up round (KIP-429)
                self.request_rejoin("partitions were revoked in a cooperative rebalance")
        added = new - owned if self.protocol is RebalanceProtocol.COOPERATIVE else new
        self.run_listener("on_partitions_assigned", added)
        log.info("group %s: generation %d, member %s, assigned %s", self.group_id,
                 self.generation, self.member_id, sorted(map(str, new)))

    # ------------------------------------------------------------------ heartbeat

    def heartbeat_step(self, now: float) -> float | None:
        """The network client's poll hook (any thread; only records and sends): returns the
        seconds until it wants to run again, or None when the member is not stable."""
        if self.state is not MemberState.STABLE or self._fatal is not None:
            return None
        coordinator = self.coordinator
        if coordinator.coordinator_unknown():
            coordinator.lookup_if_needed(now)
            return self.config.retry_backoff_ms / 1000.0
        timer = self.timer
        if timer.poll_timeout_expired(now):
            log.warning("group %s: consumer poll timeout has expired: poll() was not called "
                        "within max.poll.interval.ms=%d; leaving the group, its partitions "
                        "are lost", self.group_id, self.config.max_poll_interval_ms)
            self.maybe_leave("consumer poll timeout has expired")
            return None
        if timer.session_expired(now):
            coordinator.mark_coordinator_unknown("no heartbeat answer within session.timeout.ms")
            return self.config.retry_backoff_ms / 1000.0
        if timer.should_heartbeat(now):
            self._send_heartbeat(now)
        return min(timer.time_to_next_heartbeat(now) if not timer.in_flight
                   else self.config.retry_backoff_ms / 1000.0,
                   timer.time_to_poll_timeout(now))

    def _send_heartbeat(self, now: float) -> None:
        group, gen, member = self.group_id, self.generation, self.member_id
        body: bodies.HeartbeatRequest = {"group_id": group, "generation_id": gen,
                                         "member_id": member,
                                         "group_instance_id": self.group_instance_id}
        fut = self.coordinator.send(ApiKey.HEARTBEAT, body)
        self.timer.sent(now)
        self.coordinator.metrics.heartbeat_sent(fut)
        fut.add_callback(lambda f: self._on_heartbeat(f, gen), any_thread=True)

    def _on_heartbeat(self, fut: Future[Response], generation: int) -> None:
        now = time.monotonic()
        if fut.failed():
            self.timer.failed(now)
            err = fut.exception
            if isinstance(err, KafkaError) and err.retriable:
                self.coordinator.mark_coordinator_unknown(f"heartbeat failed: {err}")
            return
        self.timer.received(now)
        assert fut.value is not None
        code = body_of(fut.value, ApiKey.HEARTBEAT)["error_code"]
        if generation != self.generation:
            return                                  # an answer for an older generation
        action = classify(ApiKey.HEARTBEAT, code)
        if action is GroupAction.NONE:
            return
        err = error_for_code(code, f"heartbeat for group {self.group_id}")
        assert err is not None
        if action is GroupAction.COORDINATOR_MOVED:
            self.coordinator.mark_coordinator_unknown(f"heartbeat: {err.message}")
        elif action is GroupAction.RETRY:
            self.timer.failed(now)
        elif action is GroupAction.FATAL and code != ErrorCode.FENCED_INSTANCE_ID:
            log.warning("group %s: heartbeat error %s", self.group_id, err)
            self._fatal = err
        else:
            self.on_group_error(action, err)

    # ------------------------------------------------------------------ leave

    def maybe_leave(self, reason: str, deadline: float | None = None) -> None:
        """LeaveGroup for a dynamic member with a generation; static members keep their
        session (their partitions wait for them). The generation is reset either way, so the
        partitions still owned are lost at the next poll() (any thread; ``deadline``: wait
        for the answer, application thread only)."""
        if (self.group_instance_id is None and self.member_id
                and not self.coordinator.coordinator_unknown()):
            # v0-2 name the member, v3+ list it (the encoder keeps what the version has)
            leave: bodies.LeaveGroupRequest = {
                "group_id": self.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None,
                             "reason": reason}]}
            fut = self.coordinator.send(ApiKey.LEAVE_GROUP, leave)
            fut.add_callback(lambda f: None, any_thread=True)
            # a JoinGroup/SyncGroup in flight is answered first (a broker serves a connection
            # one request at a time), which may take the whole rebalance: a member that was
            # never assigned has nothing to hand over, so it does not wait that long
            joining = any(f is not None and not f.done for f in (self._join_fut, self._sync_fut))
            if deadline is not None and not joining:
                self.client.poll(timeout_ms=remaining_ms(deadline), future=fut, wakeup=False)
        self.reset_generation(reason)

__all__ = ["GroupMembership"]
