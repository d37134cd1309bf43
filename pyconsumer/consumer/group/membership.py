"""What a group membership is to the rest of the consumer: the :class:`Membership` protocol
(the interface the KafkaConsumer facade, its poll loop and the coordinator use), the one
:class:`MemberState` enum, and :class:`MembershipBase`, the part both memberships share.

Two siblings implement it: :mod:`pyconsumer.consumer.group.classic` (JoinGroup/SyncGroup) and
:mod:`pyconsumer.consumer.group.consumer_protocol` (KIP-848). Neither imports the other; the
facade picks one by ``group.protocol`` and hands it to the coordinator with
:meth:`~pyconsumer.consumer.group.coordinator.ConsumerCoordinator.attach`. A membership owns
the member's identity and sees the coordinator only as a
:class:`~pyconsumer.consumer.group.seams.GroupCoordinator`; this module does not import the
coordinator's.
"""
from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.group.heartbeat import HeartbeatThread, HeartbeatTimer
from pyconsumer.consumer.group.seams import (
    NO_GENERATION,
    NO_MEMBER_ID,
    GroupCoordinator,
    GroupMember,
    MemberStateListener,
)
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.errors import KafkaError
from pyconsumer.net.client import NetworkClient
from pyconsumer.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)


class MemberState(enum.Enum):
    """A member's state, for both protocols; each membership moves through its own subset."""

    # the classic protocol (Java AbstractCoordinator.MemberState)
    UNJOINED = "unjoined"
    PREPARING_REBALANCE = "preparing_rebalance"
    COMPLETING_REBALANCE = "completing_rebalance"
    # the consumer protocol, KIP-848 (Java MemberState)
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"            # epoch 0 heartbeat to send or in flight
    FENCED = "fenced"              # the broker dropped the member: release, then rejoin
    STALE = "stale"                # left after max.poll.interval.ms: release, then rejoin
    LEAVING = "leaving"            # the leave heartbeat is on its way: no more heartbeats
    FATAL = "fatal"
    # both: a member with a generation (classic) or an epoch (KIP-848)
    STABLE = "stable"


@runtime_checkable
class Membership(GroupMember, Protocol):
    """A consumer's membership in its group, whichever the protocol.

    The facade subscribes, leaves and reports the generation through it; the poll loop
    drives it (:meth:`check_metadata`, :meth:`ensure_active_group`); the coordinator sees it
    as a :class:`~pyconsumer.consumer.group.seams.GroupMember`: it reads the identity, hears
    it change, asks before a commit and tells what group answers said."""

    #: the application's rebalance listener (None: none)
    listener: Any

    @property
    def rejoin_needed(self) -> bool:
        """The application thread has group work to do in poll()."""

    # ------------------------------------------------------------------ facade and poll loop

    def on_subscribe(self, changed: bool) -> None: ...
    def request_rejoin(self, reason: str) -> None: ...
    def on_poll(self, now: float) -> None:
        """The application called poll() (max.poll.interval.ms counts from here)."""
    def check_metadata(self) -> None: ...
    def ensure_active_group(self, deadline: float) -> bool:
        """Join, release lost partitions, reconcile; True when the member is stable."""
    def attention(self) -> bool:
        """Something should wake a waiting poll()."""
    def completed_generation(self) -> tuple[int, str] | None: ...
    def generation_lost(self) -> bool: ...
    def run_listener(self, method: str, partitions: set[TopicPartition]) -> None: ...
    def maybe_leave(self, reason: str, deadline: float | None = None) -> None: ...
    def start_heartbeat_thread(self) -> None: ...
    def stop_heartbeat_thread(self) -> None: ...
    def close(self) -> None: ...


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


class MembershipBase:
    """What both group protocols' memberships share: the group's identity and the listeners
    that hear the member's epoch change, the rebalance listener (run in the application's
    thread with the client lock set aside), the fatal error raised from every poll(), the
    heartbeat poll hook and the background heartbeat thread."""

    def __init__(self, coordinator: GroupCoordinator, client: NetworkClient,
                 config: ConsumerConfig, subscriptions: SubscriptionState,
                 on_unassigned: Callable[[set[TopicPartition]], None],
                 consumed: Callable[[], dict[TopicPartition, OffsetAndMetadata]]) -> None:
        assert config.group_id is not None
        self.group_id: str = config.group_id
        self.group_instance_id: str | None = config.group_instance_id
        self.coordinator = coordinator
        self.client = client
        self.config = config
        self.subscriptions = subscriptions
        self.on_unassigned = on_unassigned    # partitions leaving: drop their buffered data
        self.consumed = consumed              # the owned partitions' positions, to commit
        self.listener: Any = None
        self._fatal: KafkaError | None = None  # raised from every poll() once set
        self._thread: HeartbeatThread | None = None
        self._state_listeners: list[MemberStateListener] = []

    def register_state_listener(self, listener: MemberStateListener) -> None:
        self._state_listeners.append(listener)

    def notify_epoch_change(self, epoch: int, member_id: str) -> None:
        """Tell the listeners the generation or epoch and member id commits carry now
        (``NO_GENERATION``, ``NO_MEMBER_ID``: none). Any thread."""
        for listener in self._state_listeners:
            listener.on_member_epoch_updated(epoch, member_id)

    def notify_no_generation(self) -> None:
        self.notify_epoch_change(NO_GENERATION, NO_MEMBER_ID)

    #: set by each membership (the heartbeat interval is its protocol's)
    timer: HeartbeatTimer

    def on_poll(self, now: float) -> None:
        self.timer.poll(now)

    def heartbeat_step(self, now: float) -> float | None:
        raise NotImplementedError

    def run_listener(self, method: str, partitions: set[TopicPartition]) -> None:
        with self.client.lock.set_aside():       # user code: heartbeats go on meanwhile
            call_listener(self.listener, method, partitions)

    def raise_if_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    def close(self) -> None:
        self.stop_heartbeat_thread()
        self.client.remove_poll_hook(self.heartbeat_step)

    def start_heartbeat_thread(self) -> None:
        if self._thread is None:
            self._thread = HeartbeatThread(self.client, self.group_id)
            self._thread.start()

    def stop_heartbeat_thread(self) -> None:
        if self._thread is not None:
            self._thread.stop()
            self._thread = None


__all__ = ["Membership", "MembershipBase", "MemberState", "RebalanceListener", "call_listener"]
