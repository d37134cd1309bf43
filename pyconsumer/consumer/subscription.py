"""SubscriptionState: which partitions this consumer reads and where it stands in each.

Mirrors Java's ``SubscriptionState``/``TopicPartitionState``: one state per assigned
partition, in assignment order (the order fetch requests list them in; a partition that just
returned data moves to the end, for fairness). A partition's fetch state is one of

* INITIALIZING: assigned, no position yet (committed offset or reset still to come);
* FETCHING: has a valid position, may be fetched;
* AWAIT_RESET: needs a ListOffsets reset (``auto.offset.reset``, seek_to_beginning/end);
* AWAIT_VALIDATION: position to be checked against the leader epoch (KIP-320).

with Java's transition table: from AWAIT_RESET only FETCHING or AWAIT_RESET; an invalid
transition is ignored. Positions move only forward through :meth:`advance`, which requires
FETCHING.

Every fetch state and pause change goes through this class, which keeps the partitions that
are not FETCHING and the paused ones as sets beside the assignment: a poll with every
partition settled then asks O(1) questions instead of walking thousands of partitions.
"""
from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Set
from typing import NamedTuple

from pyconsumer.config import OffsetResetStrategy
from pyconsumer.errors import IllegalStateError
from pyconsumer.structs import TopicPartition, tuple_maker


class FetchState(enum.Enum):
    INITIALIZING = "initializing"
    FETCHING = "fetching"
    AWAIT_RESET = "await_reset"
    AWAIT_VALIDATION = "await_validation"


_VALID = {
    FetchState.INITIALIZING: {FetchState.FETCHING, FetchState.AWAIT_RESET,
                              FetchState.AWAIT_VALIDATION},
    FetchState.FETCHING: {FetchState.FETCHING, FetchState.AWAIT_RESET,
                          FetchState.AWAIT_VALIDATION},
    FetchState.AWAIT_RESET: {FetchState.FETCHING, FetchState.AWAIT_RESET},
    FetchState.AWAIT_VALIDATION: {FetchState.FETCHING, FetchState.AWAIT_RESET,
                                  FetchState.AWAIT_VALIDATION},
}


class FetchPosition(NamedTuple):
    """The next offset to fetch, the epoch of the record before it (when known) and the
    leader (node id, epoch) the position was last checked against."""

    offset: int
    offset_epoch: int | None = None
    leader: int | None = None
    leader_epoch: int | None = None


_new_position = tuple_maker(FetchPosition)     # once a poll per partition moved: made in C


class SubscriptionType(enum.Enum):
    NONE = "none"
    AUTO_TOPICS = "auto_topics"
    AUTO_PATTERN = "auto_pattern"
    USER_ASSIGNED = "user_assigned"


class PartitionState:
    __slots__ = ("fetch_state", "position", "high_watermark", "log_start_offset",
                 "last_stable_offset", "paused", "reset_strategy", "next_retry_time",
                 "preferred_read_replica")

    def __init__(self) -> None:
        self.fetch_state = FetchState.INITIALIZING
        self.position: FetchPosition | None = None
        self.high_watermark: int | None = None
        self.log_start_offset: int | None = None
        self.last_stable_offset: int | None = None
        self.paused = False
        self.reset_strategy: OffsetResetStrategy | None = None
        self.next_retry_time: float | None = None      # monotonic seconds
        self.preferred_read_replica: int | None = None

    def transition(self, to: FetchState) -> bool:
        if to in _VALID[self.fetch_state]:
            self.fetch_state = to
            return True
        return False

    @property
    def has_valid_position(self) -> bool:
        return self.fetch_state is FetchState.FETCHING

    def __repr__(self) -> str:
        return (f"PartitionState({self.fetch_state.value}, position={self.position}, "
                f"paused={self.paused})")


_EXCLUSIVE = "Subscription to topics, partitions and pattern are mutually exclusive"


class SubscriptionState:
    def __init__(self, default_reset: OffsetResetStrategy) -> None:
        self.default_reset = default_reset
        self.subscription_type = SubscriptionType.NONE
        self._assignment: dict[TopicPartition, PartitionState] = {}
        #: bumped on every assignment change, so in-flight responses for an older assignment
        #: can be recognised
        self.assignment_id = 0
        #: bumped by every move of a position or fetch state that is not the records handed
        #: out (seek, reset, validation): with assignment_id and the metadata's version, says
        #: whether the positions need looking at again
        self.moves = 0
        #: subscribe(): the topics asked for (AUTO_TOPICS) or matched by the pattern
        self.subscription: set[str] = set()
        self.pattern: re.Pattern[str] | None = None
        #: the assigned partitions not FETCHING, in the order they left FETCHING (assignment
        #: order for a new assignment): what a position pass has to look at
        self._unsettled: dict[TopicPartition, None] = {}
        #: the assigned partitions paused
        self._paused: set[TopicPartition] = set()
        #: bumped whenever the set of fetchable partitions may have changed (not their order)
        self.fetchable_version = 0
        #: while a poll drains (see :meth:`start_journal`), the position each partition had
        #: before its first advance
        self._journal: dict[TopicPartition, FetchPosition] | None = None

    # ------------------------------------------------------------------ assignment

    def _set_type(self, kind: SubscriptionType) -> None:
        if self.subscription_type is SubscriptionType.NONE:
            self.subscription_type = kind
        elif self.subscription_type is not kind:
            raise IllegalStateError(_EXCLUSIVE)

    def assign_from_user(self, partitions: Iterable[TopicPartition]) -> bool:
        """Manual assignment; partitions kept keep their state. True if it changed."""
        wanted = list(dict.fromkeys(partitions))
        if not wanted:
            self.unsubscribe()
            return True
        self._set_type(SubscriptionType.USER_ASSIGNED)
        if list(self._assignment) == wanted:
            return False
        self._set_assignment(wanted)
        return True

    def _set_assignment(self, wanted: list[TopicPartition]) -> None:
        """Partitions kept keep their state; the sets are rebuilt (an assignment change is
        the one moment a walk over every partition is due)."""
        self._assignment = {tp: self._assignment.get(tp) or PartitionState() for tp in wanted}
        self._unsettled = {tp: None for tp, st in self._assignment.items()
                           if st.fetch_state is not FetchState.FETCHING}
        self._paused = {tp for tp, st in self._assignment.items() if st.paused}
        self.assignment_id += 1
        self.fetchable_version += 1

    def _track(self, tp: TopicPartition, st: PartitionState) -> None:
        """Keep the unsettled set in step after ``st``'s fetch state may have changed."""
        if st.fetch_state is FetchState.FETCHING:
            if tp in self._unsettled:
                del self._unsettled[tp]
                self.fetchable_version += 1
        elif tp not in self._unsettled:
            self._unsettled[tp] = None
            self.fetchable_version += 1

    def unsubscribe(self) -> None:
        self._set_assignment([])
        self.subscription_type = SubscriptionType.NONE
        self.subscription = set()
        self.pattern = None

    def subscribe(self, topics: Iterable[str]) -> bool:
        """Subscribe to these topics (group-managed). True if the topic set changed."""
        self._set_type(SubscriptionType.AUTO_TOPICS)
        wanted = set(topics)
        changed = wanted != self.subscription
        self.subscription = wanted
        return changed

    def subscribe_pattern(self, pattern: re.Pattern[str]) -> None:
        self._set_type(SubscriptionType.AUTO_PATTERN)
        self.pattern = pattern

    def match_pattern(self, topics: Iterable[str]) -> bool:
        """Set the subscription to the topics the pattern matches; True if that changed."""
        assert self.pattern is not None
        wanted = {t for t in topics if self.pattern.fullmatch(t)}
        changed = wanted != self.subscription
        self.subscription = wanted
        return changed

    @property
    def has_auto_assignment(self) -> bool:
        return self.subscription_type in (SubscriptionType.AUTO_TOPICS,
                                          SubscriptionType.AUTO_PATTERN)

    def assign_from_subscribed(self, partitions: Iterable[TopicPartition]) -> None:
        """The group's assignment; partitions kept keep their state (cooperative)."""
        wanted = list(dict.fromkeys(partitions))
        for tp in wanted:
            if tp.topic not in self.subscription:
                raise IllegalStateError(
                    f"the group assigned {tp}, whose topic this consumer did not subscribe to")
        self._set_assignment(wanted)

    def assigned_partitions(self) -> list[TopicPartition]:
        return list(self._assignment)

    def positioned_partitions(self) -> list[TopicPartition]:
        """The partitions whose position a new leader may need checked (FETCHING or
        AWAIT_VALIDATION), in assignment order: none while every position is still to be
        found (a new assignment's first polls), without a look at each one's leader."""
        if not self._unsettled:
            return list(self._assignment)
        fetching, validating = FetchState.FETCHING, FetchState.AWAIT_VALIDATION
        return [tp for tp, st in self._assignment.items()
                if st.fetch_state is fetching or st.fetch_state is validating]

    def states(self) -> Mapping[TopicPartition, PartitionState]:
        """Each assigned partition's state (read-only, live): for walks over thousands of
        partitions, one lookup each instead of a call to :meth:`state`."""
        return self._assignment

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._assignment

    def state(self, tp: TopicPartition) -> PartitionState:
        st = self._assignment.get(tp)
        if st is None:
            raise IllegalStateError(f"No current assignment for partition {tp}")
        return st

    def move_to_end(self, tp: TopicPartition) -> None:
        st = self._assignment.pop(tp, None)
        if st is not None:
            self._assignment[tp] = st

    # ------------------------------------------------------------------ fetchability

    def is_fetchable(self, tp: TopicPartition) -> bool:
        st = self._assignment.get(tp)
        return st is not None and not st.paused and st.fetch_state is FetchState.FETCHING

    def fetchable_state(self, tp: TopicPartition) -> PartitionState | None:
        """``tp``'s state when it is fetchable (assigned, not paused, a valid position), else
        None: one lookup where an answer's handling asked is_fetchable, then position."""
        st = self._assignment.get(tp)
        # (has_valid_position spelled out: a property call per partition of every answer)
        return st if st is not None and not st.paused \
            and st.fetch_state is FetchState.FETCHING else None

    def state_or_none(self, tp: TopicPartition) -> PartitionState | None:
        """``tp``'s state, None when it is not assigned (is_assigned and state in one)."""
        return self._assignment.get(tp)

    def fetchable_partitions(self) -> list[TopicPartition]:
        """In assignment (fetch) order."""
        if not self._unsettled and not self._paused:
            return list(self._assignment)      # the common case: a copy, no test per partition
        return [tp for tp, st in self._assignment.items()
                if not st.paused and st.fetch_state is FetchState.FETCHING]

    def position(self, tp: TopicPartition) -> FetchPosition | None:
        return self.state(tp).position

    # ------------------------------------------------------------------ moves

    def seek(self, tp: TopicPartition, offset: int, offset_epoch: int | None = None,
             leader: int | None = None, leader_epoch: int | None = None) -> None:
        """Java seekUnvalidated + validatePosition: FETCHING, or AWAIT_VALIDATION when both
        the offset's epoch and the leader's epoch are known."""
        self._seek(tp, self.state(tp), offset, offset_epoch, leader, leader_epoch)

    def _seek(self, tp: TopicPartition, st: PartitionState, offset: int,
              offset_epoch: int | None, leader: int | None, leader_epoch: int | None) -> None:
        self.moves += 1
        st.position = _new_position((offset, offset_epoch, leader, leader_epoch))
        st.reset_strategy = None
        st.next_retry_time = None
        st.fetch_state = FetchState.FETCHING  # seekValidated, always allowed
        if offset_epoch is not None and leader_epoch is not None:
            st.transition(FetchState.AWAIT_VALIDATION)
        self._track(tp, st)

    def advance(self, tp: TopicPartition, offset: int, offset_epoch: int | None) -> None:
        """Move the position after records were handed out (FETCHING only)."""
        st = self.state(tp)
        position = st.position
        if st.fetch_state is not FetchState.FETCHING or position is None:
            raise IllegalStateError("Cannot set a new position without a valid current position")
        journal = self._journal
        if journal is not None and tp not in journal:
            journal[tp] = position
        # built directly: _replace costs a microsecond, and this runs once a poll per partition
        st.position = _new_position((offset, offset_epoch, position.leader,
                                     position.leader_epoch))

    def start_journal(self) -> dict[TopicPartition, FetchPosition]:
        """From now until :meth:`stop_journal`, remember the position each partition had
        before its first :meth:`advance` (what a poll rolls back when its records do not
        reach the caller): only the partitions that moved, not a copy of every position."""
        self._journal = {}
        return self._journal

    def stop_journal(self) -> None:
        self._journal = None

    def request_reset(self, tp: TopicPartition, strategy: OffsetResetStrategy | None = None
                      ) -> None:
        st = self.state(tp)
        self.moves += 1
        st.fetch_state = FetchState.AWAIT_RESET
        st.reset_strategy = strategy or self.default_reset
        st.next_retry_time = None
        self._track(tp, st)

    def maybe_seek_unvalidated(self, tp: TopicPartition, offset: int,
                               strategy: OffsetResetStrategy, leader_epoch: int | None,
                               leader: int | None = None) -> bool:
        """Apply a ListOffsets answer if the partition still waits for that very reset (a user
        seek in between wins). ``leader`` / ``leader_epoch``: the partition's current leader,
        which the position is taken as checked against (Java's reset builds its FetchPosition
        with metadata.currentLeader): no validation follows, and the next leader check finds
        nothing changed."""
        st = self._assignment.get(tp)
        if st is None or st.fetch_state is not FetchState.AWAIT_RESET \
                or st.reset_strategy != strategy:
            return False
        self._seek(tp, st, offset, None, leader, leader_epoch)
        return True

    def maybe_validate_for_leader(self, tp: TopicPartition, leader: int | None,
                                  leader_epoch: int | None) -> bool:
        """Java maybeValidatePositionForCurrentLeader (KIP-320): when the partition's leader or
        leader epoch differs from the one the position was checked against, remember the new
        one and, if both the position's epoch and the leader's epoch are known, check the
        position again (AWAIT_VALIDATION). True when a validation is now needed."""
        st = self._assignment.get(tp)
        if st is None or st.position is None or leader is None or leader < 0 \
                or st.fetch_state not in (FetchState.FETCHING, FetchState.AWAIT_VALIDATION):
            return False
        if (st.position.leader, st.position.leader_epoch) == (leader, leader_epoch):
            return False
        self.moves += 1
        st.position = st.position._replace(leader=leader, leader_epoch=leader_epoch)
        if st.position.offset_epoch is not None and leader_epoch is not None:
            st.transition(FetchState.AWAIT_VALIDATION)
            st.next_retry_time = None
            self._track(tp, st)
            return True
        return False

    def _unsettled_in(self, state: FetchState) -> list[tuple[TopicPartition, PartitionState]]:
        """The unsettled partitions in ``state``, in assignment order (Java walks its
        assignment): only those partitions are looked at, then put in order."""
        found = [tp for tp in self._unsettled if self._assignment[tp].fetch_state is state]
        if len(found) > 1:        # several at once (a new assignment, a reset): put in order
            wanted = set(found)
            found = [tp for tp in self._assignment if tp in wanted]
        return [(tp, self._assignment[tp]) for tp in found]

    def all_unsettled_in(self, partitions: Set[TopicPartition]) -> bool:
        """Every partition not FETCHING is one of ``partitions`` (a set test, no walk)."""
        return self._unsettled.keys() <= partitions

    def partitions_needing_reset(self, now: float) -> list[TopicPartition]:
        return [tp for tp, st in self._unsettled_in(FetchState.AWAIT_RESET)
                if st.next_retry_time is None or now >= st.next_retry_time]

    def partitions_needing_validation(self, now: float) -> list[TopicPartition]:
        return [tp for tp, st in self._unsettled_in(FetchState.AWAIT_VALIDATION)
                if st.next_retry_time is None or now >= st.next_retry_time]

    def complete_validation(self, tp: TopicPartition) -> None:
        """The position checked out against the leader's log (or cannot be checked)."""
        st = self._assignment.get(tp)
        if st is not None and st.fetch_state is FetchState.AWAIT_VALIDATION \
                and st.position is not None:
            self.moves += 1
            st.transition(FetchState.FETCHING)
            st.next_retry_time = None
            self._track(tp, st)

    def seek_validated(self, tp: TopicPartition, offset: int, offset_epoch: int | None) -> None:
        """Move to a position already known to be on the leader's log (after truncation)."""
        st = self.state(tp)
        self.moves += 1
        leader = st.position.leader if st.position is not None else None
        leader_epoch = st.position.leader_epoch if st.position is not None else None
        st.position = _new_position((offset, offset_epoch, leader, leader_epoch))
        st.fetch_state = FetchState.FETCHING
        st.next_retry_time = None
        self._track(tp, st)

    def initializing_partitions(self) -> list[TopicPartition]:
        return [tp for tp, _ in self._unsettled_in(FetchState.INITIALIZING)]

    def has_all_fetch_positions(self) -> bool:
        return not self._unsettled

    def all_fetching(self) -> bool:
        """Every assigned partition is FETCHING: no reset, validation or committed offset
        to wait for."""
        return not self._unsettled

    # ------------------------------------------------------------------ pause

    def pause(self, tp: TopicPartition) -> None:
        self.state(tp).paused = True
        if tp not in self._paused:
            self._paused.add(tp)
            self.fetchable_version += 1

    def resume(self, tp: TopicPartition) -> None:
        self.state(tp).paused = False
        if tp in self._paused:
            self._paused.discard(tp)
            self.fetchable_version += 1

    def paused_partitions(self) -> set[TopicPartition]:
        return set(self._paused)


__all__ = ["FetchPosition", "FetchState", "PartitionState", "SubscriptionState",
           "SubscriptionType"]
