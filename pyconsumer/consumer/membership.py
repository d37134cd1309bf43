"""Group membership with the classic protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Java's ``AbstractCoordinator`` + ``ConsumerCoordinator`` membership half:

* member states UNJOINED -> PREPARING_REBALANCE -> COMPLETING_REBALANCE -> STABLE;
* before a join, auto-committed offsets are committed; with the EAGER protocol every owned
  partition is revoked (listener ``on_partitions_revoked``), with COOPERATIVE nothing is;
* the JoinGroup carries one (name, subscription) pair per assignor, in preference order; the
  leader decodes every member's subscription, fetches metadata for all their topics, runs the
  chosen assignor and sends the result with SyncGroup;
* after SyncGroup (COOPERATIVE): partitions no longer assigned are revoked and the member
  rejoins at once, so they can be handed over in the next round; partitions added are
  assigned. EAGER: the whole assignment is assigned;
* MEMBER_ID_REQUIRED rejoins with the id the broker gave; UNKNOWN_MEMBER_ID and
  ILLEGAL_GENERATION reset the generation (owned partitions are *lost*: ``on_partitions_lost``)
  and rejoin; REBALANCE_IN_PROGRESS (join, sync, heartbeat) rejoins;
* static membership: ``group.instance.id`` is sent everywhere; a static member does not leave
  the group on close (its session keeps its partitions until it comes back);
* heartbeats every ``heartbeat.interval.ms`` from poll() and from a background thread between
  polls; a member that does not call poll() within ``max.poll.interval.ms`` leaves the group.
"""
from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.assignors import Assignor, RebalanceProtocol, assignor_for
from pyconsumer.consumer.assignors.sticky import StickyAssignor
from pyconsumer.consumer.coordinator import ConsumerCoordinator, _Retry
from pyconsumer.consumer.group_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.errors import ErrorCode, KafkaError, error_for_code
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.future import Future
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

_COORDINATOR_GONE = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    PREPARING_REBALANCE = "preparing_rebalance"
    COMPLETING_REBALANCE = "completing_rebalance"
    STABLE = "stable"


class RebalanceListener(Protocol):
    """Java ``ConsumerRebalanceListener``: every method gets a set of TopicPartitions."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None: ...
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None: ...


def call_listener(listener: Any, method: str, partitions: set[TopicPartition]) -> None:
    """Run a rebalance listener method (on_partitions_lost falls back to revoked, as Java)."""
    if listener is None:
        return
    fn = getattr(listener, method, None)
    if fn is None and method == "on_partitions_lost":
        fn = getattr(listener, "on_partitions_revoked", None)   # Java's default for lost
    if fn is None:
        return
    try:
        fn(set(partitions))
    except Exception:
        log.exception("the rebalance listener's %s raised", method)
        raise


class GroupMembership:
    def __init__(self, coordinator: ConsumerCoordinator, client: NetworkClient,
                 config: ConsumerConfig, subscriptions: SubscriptionState,
                 on_unassigned: Callable[[set[TopicPartition]], None],
                 consumed: Callable[[], dict[TopicPartition, OffsetAndMetadata]]) -> None:
        self.coordinator = coordinator
        self.client = client
        self.config = config
        self.subscriptions = subscriptions
        self.on_unassigned = on_unassigned
        self.consumed = consumed             # the owned partitions' positions, to commit
        self.assignors: list[Assignor] = [assignor_for(a) for a in
                                          config.partition_assignment_strategy]
        cooperative = all(RebalanceProtocol.COOPERATIVE in a.supported_protocols
                          for a in self.assignors)
        self.protocol = RebalanceProtocol.COOPERATIVE if cooperative else RebalanceProtocol.EAGER
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.rejoin_reason = "initial join"
        self.listener: Any = None
        self.last_poll = time.monotonic()
        self._next_heartbeat = 0.0
        self._heartbeat_future: Future[Response] | None = None
        self._last_heartbeat_ok = time.monotonic()
        self._joined_topics: frozenset[str] = frozenset()
        self._metadata_snapshot: dict[str, int] = {}
        self._prepared = False
        self._thread: _HeartbeatThread | None = None
        self._join_fut: Future[Response] | None = None
        self._sync_fut: Future[Response] | None = None
        self._pending_reset: str | None = None   # generation lost on the heartbeat thread

    # ------------------------------------------------------------------ state helpers

    @property
    def generation(self) -> int:
        return self.coordinator.generation

    @property
    def member_id(self) -> str:
        return self.coordinator.member_id

    def request_rejoin(self, reason: str) -> None:
        if not self.rejoin_needed:
            log.info("group %s: rejoining: %s", self.coordinator.group_id, reason)
        self.rejoin_needed = True
        self.rejoin_reason = reason

    def _owned(self) -> set[TopicPartition]:
        return set(self.subscriptions.assigned_partitions())

    def _reset_generation(self, reason: str) -> None:
        """The member's generation is gone: its partitions are lost, not revoked."""
        log.info("group %s: resetting the generation (%s)", self.coordinator.group_id, reason)
        self.coordinator.generation = -1
        self.coordinator.member_id = ""
        self.state = MemberState.UNJOINED
        lost = self._owned()
        if lost:
            self.subscriptions.assign_from_subscribed([])
            self.on_unassigned(lost)
            call_listener(self.listener, "on_partitions_lost", lost)
        self.request_rejoin(reason)

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
        if self.config.enable_auto_commit and self.generation >= 0:
            try:
                self.coordinator.commit_sync(
                    self.consumed(),
                    time.monotonic() + self.config.default_api_timeout_ms / 1000.0)
            except KafkaError as e:
                log.warning("group %s: commit before rebalance failed: %s",
                            self.coordinator.group_id, e)
        if self.protocol is RebalanceProtocol.EAGER:
            revoked = self._owned()
            self.subscriptions.assign_from_subscribed([])
            if revoked:
                self.on_unassigned(revoked)
                call_listener(self.listener, "on_partitions_revoked", revoked)
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

        A JoinGroup may wait at the broker for every member (up to the rebalance timeout):
        the requests in flight are kept between calls, so a short poll() does not resend."""
        if self._pending_reset is not None:
            reason, self._pending_reset = self._pending_reset, None
            self._reset_generation(reason)
        if not self.rejoin_needed and self.state is MemberState.STABLE:
            return True
        if not self.subscriptions.subscription and self.subscriptions.pattern is None:
            return False
        while True:
            if self._join_fut is None and self._sync_fut is None:
                if not self.coordinator.ensure_coordinator_ready(deadline):
                    return False
                self._on_join_prepare()
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
            except _Retry as r:
                self._join_fut = self._sync_fut = None
                log.debug("group %s: join round failed, retrying: %s",
                          self.coordinator.group_id, r.error)
                if time.monotonic() >= deadline:
                    return False
                if getattr(r.error, "errno", None) != ErrorCode.MEMBER_ID_REQUIRED:
                    self.client.poll(timeout_ms=min(
                        self.config.retry_backoff_ms,
                        max(0.0, (deadline - time.monotonic()) * 1e3)))
                continue
            except BaseException:
                self._join_fut = self._sync_fut = None
                raise
            self._on_join_complete(assignment)
            return self.state is MemberState.STABLE

    def _wait(self, fut: Future[Response], deadline: float) -> bool:
        self.client.poll(timeout_ms=max(0.0, (deadline - time.monotonic()) * 1000.0), future=fut)
        return fut.done

    def _group_error(self, code: int, what: str) -> None:
        """Membership errors (lost generation, rebalance) here; the coordinator's own
        (loading, moved) through ConsumerCoordinator.check_group_error."""
        err = error_for_code(code, f"{what} for group {self.coordinator.group_id}")
        assert err is not None
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._reset_generation(err.message)
            self._prepared = False
            raise _Retry(err)
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            raise _Retry(err)
        if code == ErrorCode.REQUEST_TIMED_OUT:      # not a coordinator move for a join (as Java)
            raise err
        self.coordinator.check_group_error(code, what)

    def _send_join(self) -> Future[Response]:
        group = self.coordinator.group_id
        protocols = [{"name": a.name, "metadata": self._subscription_metadata(a)}
                     for a in self.assignors]
        member_id, reason = self.member_id, self.rejoin_reason
        instance = self.coordinator.group_instance_id
        session, rebalance = self.config.session_timeout_ms, self.config.max_poll_interval_ms

        def body(version: int) -> dict[str, Any]:
            return {"group_id": group, "session_timeout_ms": session,
                    "rebalance_timeout_ms": rebalance, "member_id": member_id,
                    "group_instance_id": instance, "protocol_type": "consumer",
                    "protocols": protocols, "reason": reason}

        assert self.coordinator.coordinator is not None
        # the broker may hold a JoinGroup until every member rejoined (the rebalance timeout)
        return self.client.send(self.coordinator.coordinator, ApiKey.JOIN_GROUP, body,
                                timeout_ms=rebalance + 5000)

    def _after_join(self, resp: Response) -> Future[Response]:
        body = resp.body
        code = body["error_code"]
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.coordinator.member_id = body["member_id"]
            err = error_for_code(code)
            assert err is not None
            raise _Retry(err)
        if code:
            self._group_error(code, "JoinGroup")
        self.coordinator.generation = body["generation_id"]
        self.coordinator.member_id = body["member_id"]
        self.state = MemberState.COMPLETING_REBALANCE
        protocol_name = body["protocol_name"]
        assignments: list[dict[str, Any]] = []
        if body["leader"] == body["member_id"] and not body.get("skip_assignment", False):
            assignments = self._lead(protocol_name, body["members"])
        group, generation, member_id = self.coordinator.group_id, self.generation, self.member_id
        instance = self.coordinator.group_instance_id

        def sync_body(version: int) -> dict[str, Any]:
            return {"group_id": group, "generation_id": generation, "member_id": member_id,
                    "group_instance_id": instance, "protocol_type": "consumer",
                    "protocol_name": protocol_name, "assignments": assignments}

        assert self.coordinator.coordinator is not None
        return self.client.send(self.coordinator.coordinator, ApiKey.SYNC_GROUP, sync_body,
                                timeout_ms=self.config.max_poll_interval_ms + 5000)

    def _after_sync(self, resp: Response) -> Assignment:
        code = resp.body["error_code"]
        if code:
            self._group_error(code, "SyncGroup")
        return decode_assignment(resp.body["assignment"] or b"")

    def _lead(self, protocol_name: str, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
        log.info("group %s: leader assigned with %s: %s", self.coordinator.group_id,
                 assignor.name, {m: [str(tp) for tp in tps] for m, tps in result.items()})
        return [{"member_id": m, "assignment": encode_assignment(Assignment(tps))}
                for m, tps in result.items()]

    def _on_join_complete(self, assignment: Assignment) -> None:
        self._prepared = False
        owned = self._owned()
        new = set(assignment.partitions)
        self.rejoin_needed = False
        self.rejoin_reason = ""
        self._joined_topics = frozenset(self.subscriptions.subscription)
        self._metadata_snapshot = self._snapshot()
        self.state = MemberState.STABLE
        self._last_heartbeat_ok = time.monotonic()
        self._next_heartbeat = time.monotonic() + self.config.heartbeat_interval_ms / 1000.0
        for a in self.assignors:
            if isinstance(a, StickyAssignor):
                a.last_assignment = list(assignment.partitions)
                a.generation = self.generation
        revoked = owned - new
        self.subscriptions.assign_from_subscribed(assignment.partitions)
        if revoked:
            self.on_unassigned(revoked)
            call_listener(self.listener, "on_partitions_revoked", revoked)
            if self.protocol is RebalanceProtocol.COOPERATIVE:
                # hand the revoked partitions over in a follow-up round (KIP-429)
                self.request_rejoin("partitions were revoked in a cooperative rebalance")
        added = new - owned if self.protocol is RebalanceProtocol.COOPERATIVE else new
        call_listener(self.listener, "on_partitions_assigned", added)
        log.info("group %s: generation %d, member %s, assigned %s", self.coordinator.group_id,
                 self.generation, self.member_id, sorted(map(str, new)))

    # ------------------------------------------------------------------ heartbeat

    def time_to_next_heartbeat_ms(self) -> float:
        if self.state is not MemberState.STABLE:
            return float("inf")
        return max(0.0, (self._next_heartbeat - time.monotonic()) * 1000.0)

    def maybe_heartbeat(self) -> None:
        """Send a heartbeat when one is due and none is in flight; leave the group when the
        application stopped polling for longer than max.poll.interval.ms."""
        if self.state is not MemberState.STABLE or self.coordinator.coordinator_unknown():
            return
        now = time.monotonic()
        if (now - self.last_poll) * 1000.0 > self.config.max_poll_interval_ms:
            log.warning("group %s: poll() was not called within max.poll.interval.ms=%d; "
                        "leaving the group", self.coordinator.group_id,
                        self.config.max_poll_interval_ms)
            self.maybe_leave("consumer poll timeout has expired")
            return
        if (now - self._last_heartbeat_ok) * 1000.0 > self.config.session_timeout_ms:
            self.coordinator.mark_coordinator_unknown("no heartbeat answer within the session")
            return
        if now < self._next_heartbeat or (self._heartbeat_future is not None
                                          and not self._heartbeat_future.done):
            return
        self._next_heartbeat = now + self.config.heartbeat_interval_ms / 1000.0
        group, gen, member = self.coordinator.group_id, self.generation, self.member_id
        instance = self.coordinator.group_instance_id
        assert self.coordinator.coordinator is not None
        fut = self.client.send(self.coordinator.coordinator, ApiKey.HEARTBEAT, {
            "group_id": group, "generation_id": gen, "member_id": member,
            "group_instance_id": instance})
        self._heartbeat_future = fut
        fut.add_callback(lambda f: self._on_heartbeat(f, gen))

    def _on_heartbeat(self, fut: Future[Response], generation: int) -> None:
        if fut.failed():
            err = fut.exception
            if isinstance(err, KafkaError) and err.retriable:
                self.coordinator.mark_coordinator_unknown(f"heartbeat failed: {err}")
            return
        assert fut.value is not None
        code = fut.value.body["error_code"]
        if generation != self.generation:
            return                                  # an answer for an older generation
        if code == 0:
            self._last_heartbeat_ok = time.monotonic()
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self._last_heartbeat_ok = time.monotonic()
            self.request_rejoin("the group is rebalancing")
        elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID):
            # this may run on the heartbeat thread: the listener (on_partitions_lost) must
            # run in the application's poll(), so only note it here
            self._pending_reset = f"heartbeat: {error_for_code(code)}"
            self.request_rejoin(self._pending_reset)
        elif code in _COORDINATOR_GONE:
            self.coordinator.mark_coordinator_unknown(f"heartbeat: {error_for_code(code)}")
        else:
            log.warning("group %s: heartbeat error %s", self.coordinator.group_id,
                        error_for_code(code))

    # ------------------------------------------------------------------ leave

    def maybe_leave(self, reason: str, deadline: float | None = None) -> None:
        """LeaveGroup for a dynamic member with a generation; static members keep their
        session (their partitions wait for them). The generation is reset either way."""
        if (self.coordinator.group_instance_id is None and self.member_id
                and not self.coordinator.coordinator_unknown()):
            group, member = self.coordinator.group_id, self.member_id
            assert self.coordinator.coordinator is not None
            fut = self.client.send(self.coordinator.coordinator, ApiKey.LEAVE_GROUP,
                                   lambda v: {"group_id": group, "member_id": member,
                                              "members": [{"member_id": member,
                                                           "group_instance_id": None,
                                                           "reason": reason}]})
            if deadline is not None:
                self.client.poll(timeout_ms=max(0.0, (deadline - time.monotonic()) * 1e3),
                                 future=fut)
        self.coordinator.generation = -1
        self.coordinator.member_id = ""
        self.state = MemberState.UNJOINED
        self.request_rejoin(reason)

    def start_heartbeat_thread(self, lock: threading.RLock) -> None:
        if self._thread is None:
            self._thread = _HeartbeatThread(self, lock)
            self._thread.start()

    def stop_heartbeat_thread(self) -> None:
        if self._thread is not None:
            self._thread.stop()
            self._thread = None


class _HeartbeatThread(threading.Thread):
    """Keeps the membership alive while the application is between polls."""

    def __init__(self, membership: GroupMembership, lock: threading.RLock) -> None:
        super().__init__(name=f"pyconsumer-heartbeat-{membership.coordinator.group_id}",
                         daemon=True)
        self.membership = membership
        self.lock = lock
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        if self is not threading.current_thread():
            self.join(5)

    def run(self) -> None:
        m = self.membership
        while not self._stop_event.is_set():
            wait = min(m.config.heartbeat_interval_ms, 100) / 1000.0
            if self._stop_event.wait(wait):
                return
            if not self.lock.acquire(timeout=0.05):
                continue                     # poll() is running: it heartbeats itself
            try:
                if m.client.closed:
                    return
                m.maybe_heartbeat()
                m.client.poll(timeout_ms=0)
            except Exception:
                log.exception("heartbeat thread")
            finally:
                self.lock.release()


__all__ = ["GroupMembership", "MemberState", "RebalanceListener"]
