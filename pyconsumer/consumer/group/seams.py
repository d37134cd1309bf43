"""What the group coordinator and a membership see of each other, declared below both so
that neither imports the other.

The membership owns the member's identity (Java's ``MembershipManager``): member id,
generation (classic) or member epoch (KIP-848), group instance id, state. The coordinator
only needs what a commit carries, and hears it change through one narrow listener (Java's
``MemberStateListener``, which the commit manager implements):

* :class:`MemberIdentity`: the identity, read-only;
* :class:`MemberStateListener`: told the generation or epoch and member id commits carry;
* :class:`GroupMember`: what the coordinator asks of its membership;
* :class:`GroupCoordinator`: what a membership asks of the coordinator (find it, send to
  it, classify a group error, commit before a rebalance, the metrics).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, Union

from pyconsumer.consumer.group.errors import GroupAction
from pyconsumer.consumer.metrics import ConsumerMetrics
from pyconsumer.errors import BrokerResponseError, KafkaError
from pyconsumer.net.connection import Response
from pyconsumer.net.future import Future
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from pyconsumer.protocol import bodies

#: what a commit carries outside a group generation (and a consumer that uses assign())
NO_GENERATION = -1
NO_MEMBER_ID = ""

#: the request bodies a membership sends to the coordinator
GroupRequest = Union["bodies.JoinGroupRequest", "bodies.SyncGroupRequest",
                     "bodies.HeartbeatRequest", "bodies.LeaveGroupRequest",
                     "bodies.ConsumerGroupHeartbeatRequest"]


class MemberIdentity(Protocol):
    """The member's identity, owned by its membership and read-only to everyone else."""

    @property
    def group_id(self) -> str: ...
    @property
    def group_instance_id(self) -> str | None:
        """``group.instance.id`` (static membership), None for a dynamic member."""
    @property
    def member_id(self) -> str: ...
    @property
    def generation(self) -> int:
        """The generation (classic) or member epoch (KIP-848)."""


class MemberStateListener(Protocol):
    """Hears the identity a commit carries change (Java ``MemberStateListener``)."""

    def on_member_epoch_updated(self, epoch: int, member_id: str) -> None:
        """The generation or member epoch and member id commits carry from now on;
        ``NO_GENERATION`` and ``NO_MEMBER_ID`` outside a group generation. Any thread."""


class GroupMember(MemberIdentity, Protocol):
    """The coordinator's side of a membership."""

    def register_state_listener(self, listener: MemberStateListener) -> None:
        """``listener`` hears every change of the identity commits carry."""
    def check_can_commit(self) -> None:
        """Raise when a commit cannot be made now (not a stable member)."""
    def on_group_error(self, action: GroupAction, err: KafkaError) -> None:
        """What a group request's answer said about the membership (any thread)."""
    def on_coordinator_found(self) -> None:
        """The coordinator was found (any thread)."""


class GroupCoordinator(Protocol):
    """The membership's side of the coordinator."""

    @property
    def metrics(self) -> ConsumerMetrics: ...

    def coordinator_unknown(self) -> bool: ...
    def mark_coordinator_unknown(self, reason: str) -> None: ...
    def lookup_if_needed(self, now: float) -> None:
        """Non-blocking: look the coordinator up if it is unknown (any thread)."""
    def ensure_coordinator_ready(self, deadline: float) -> bool:
        """Find the coordinator, retrying until ``deadline``; False when time ran out."""
    def send(self, api: ApiKey, body: GroupRequest | Callable[[int], GroupRequest],
             timeout_ms: float | None = None) -> Future[Response]:
        """Send to the coordinator, which must be known (any thread)."""
    def response_or_retry(self, fut: Future[Response]) -> Response:
        """A completed request's response; a retriable failure raises Retry."""
    def group_error(self, api: ApiKey, code: int, what: str, message: str | None = None
                    ) -> tuple[GroupAction, BrokerResponseError | None]:
        """Classify a group error code (retry and coordinator moves raised as Retry)."""
    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                    deadline: float) -> None: ...


__all__ = ["GroupCoordinator", "GroupMember", "GroupRequest", "MemberIdentity",
           "MemberStateListener", "NO_GENERATION", "NO_MEMBER_ID"]
