"""SubscriptionState on its own (no broker): assignment kinds, fetch states and positions,
resets, validation, pause/resume and the fairness order, against Java's SubscriptionState."""
from __future__ import annotations

import re

import pytest

from pyconsumer.config import OffsetResetStrategy
from pyconsumer.consumer.subscription import (
    FetchPosition,
    FetchState,
    SubscriptionState,
    SubscriptionType,
)
from pyconsumer.errors import IllegalStateError
from pyconsumer.structs import TopicPartition

EARLIEST = OffsetResetStrategy("earliest")
LATEST = OffsetResetStrategy("latest")
T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
U0 = TopicPartition("u", 0)
EXCLUSIVE = "Subscription to topics, partitions and pattern are mutually exclusive"


@pytest.fixture
def subs() -> SubscriptionState:
    return SubscriptionState(LATEST)


def fetching(subs: SubscriptionState, *offsets: tuple[TopicPartition, int]) -> None:
    for tp, offset in offsets:
        subs.seek(tp, offset)


def test_assign_keeps_order_drops_duplicates_and_keeps_state_of_kept_partitions(
        subs: SubscriptionState) -> None:
    assert subs.assign_from_user([T1, T0, T1])
    assert subs.assigned_partitions() == [T1, T0]
    assert subs.subscription_type is SubscriptionType.USER_ASSIGNED
    subs.seek(T0, 7)
    subs.pause(T0)
    first_id = subs.assignment_id
    assert not subs.assign_from_user([T1, T0])              # the same: nothing changes
    assert subs.assignment_id == first_id
    assert subs.assign_from_user([T0, T2])
    assert subs.assignment_id == first_id + 1
    assert subs.assigned_partitions() == [T0, T2]
    st = subs.state(T0)
    assert (st.fetch_state, st.position, st.paused) == (FetchState.FETCHING,
                                                        FetchPosition(7), True)
    assert subs.state(T2).fetch_state is FetchState.INITIALIZING
    with pytest.raises(IllegalStateError, match=r"No current assignment for partition t-1"):
        subs.state(T1)
    assert subs.assign_from_user([])                        # Java: assign(empty) unsubscribes
    assert (subs.subscription_type, subs.assigned_partitions()) == (SubscriptionType.NONE, [])


def test_assign_subscribe_and_pattern_are_mutually_exclusive(subs: SubscriptionState) -> None:
    subs.assign_from_user([T0])
    with pytest.raises(IllegalStateError, match=EXCLUSIVE):
        subs.subscribe(["t"])
    with pytest.raises(IllegalStateError, match=EXCLUSIVE):
        subs.subscribe_pattern(re.compile("t"))
    subs.unsubscribe()
    assert subs.subscribe(["t", "u"])
    assert not subs.subscribe(["u", "t"])                   # the same set: no change
    assert subs.subscribe(["t"])
    with pytest.raises(IllegalStateError, match=EXCLUSIVE):
        subs.assign_from_user([T0])
    with pytest.raises(IllegalStateError, match=EXCLUSIVE):
        subs.subscribe_pattern(re.compile("t"))
    assert subs.has_auto_assignment


def test_pattern_matches_whole_topic_names(subs: SubscriptionState) -> None:
    subs.subscribe_pattern(re.compile(r"t\d"))
    assert subs.subscription_type is SubscriptionType.AUTO_PATTERN and subs.has_auto_assignment
    assert subs.match_pattern(["t1", "t22", "xt1", "t2", "t"])
    assert subs.subscription == {"t1", "t2"}
    assert not subs.match_pattern(["t2", "t1", "other"])
    assert subs.match_pattern(["t1"])
    assert subs.subscription == {"t1"}
    subs.unsubscribe()
    assert (subs.pattern, subs.subscription, subs.subscription_type) == (None, set(),
                                                                         SubscriptionType.NONE)


def test_group_assignment_only_of_subscribed_topics_and_keeps_state(
        subs: SubscriptionState) -> None:
    subs.subscribe(["t"])
    subs.assign_from_subscribed([T0, T1])
    subs.seek(T1, 3)
    with pytest.raises(IllegalStateError, match=r"assigned u-0, whose topic this consumer did "
                                                r"not subscribe to"):
        subs.assign_from_subscribed([T1, U0])
    assert subs.assigned_partitions() == [T0, T1]          # a refused assignment changes nothing
    subs.assign_from_subscribed([T1, T2])
    assert subs.assigned_partitions() == [T1, T2]
    assert subs.position(T1) == FetchPosition(3)
    assert subs.position(T2) is None


def test_fetch_states_seek_advance_and_validation(subs: SubscriptionState) -> None:
    subs.assign_from_user([T0, T1])
    assert subs.initializing_partitions() == [T0, T1]
    assert not subs.is_fetchable(T0) and not subs.has_all_fetch_positions()
    with pytest.raises(IllegalStateError, match="without a valid current position"):
        subs.advance(T0, 5, None)
    subs.seek(T0, 5)
    assert subs.state(T0).fetch_state is FetchState.FETCHING
    assert subs.fetchable_partitions() == [T0]
    subs.advance(T0, 9, 2)
    assert subs.position(T0) == FetchPosition(9, 2)
    # both epochs known: the position is checked against the leader first (KIP-320)
    subs.seek(T1, 4, offset_epoch=3, leader=1, leader_epoch=5)
    assert subs.state(T1).fetch_state is FetchState.AWAIT_VALIDATION
    assert not subs.is_fetchable(T1)
    assert subs.partitions_needing_validation(0.0) == [T1]
    subs.state(T1).next_retry_time = 100.0
    assert subs.partitions_needing_validation(99.0) == []
    assert subs.partitions_needing_validation(100.0) == [T1]
    subs.complete_validation(T1)
    assert subs.state(T1).fetch_state is FetchState.FETCHING
    assert subs.has_all_fetch_positions()
    # only the offset's epoch known: no validation
    subs.seek(T1, 6, offset_epoch=3)
    assert subs.state(T1).fetch_state is FetchState.FETCHING
    # truncation found: the position moves back, the leader it was checked against stays
    subs.seek(T1, 8, offset_epoch=3, leader=1, leader_epoch=5)
    subs.seek_validated(T1, 6, 2)
    assert subs.position(T1) == FetchPosition(6, 2, 1, 5)
    assert subs.state(T1).fetch_state is FetchState.FETCHING


def test_reset_requests_and_who_wins(subs: SubscriptionState) -> None:
    subs.assign_from_user([T0, T1, T2])
    subs.request_reset(T0)
    subs.request_reset(T1, EARLIEST)
    assert (subs.state(T0).reset_strategy, subs.state(T1).reset_strategy) == (LATEST, EARLIEST)
    assert subs.partitions_needing_reset(0.0) == [T0, T1]
    subs.state(T0).next_retry_time = 10.0
    assert subs.partitions_needing_reset(9.9) == [T1]
    # a ListOffsets answer for another strategy than the one awaited is ignored
    assert not subs.maybe_seek_unvalidated(T1, 0, LATEST, None)
    assert subs.maybe_seek_unvalidated(T1, 4, EARLIEST, 2)
    assert (subs.state(T1).fetch_state, subs.position(T1)) == (FetchState.FETCHING,
                                                               FetchPosition(4, None, None, 2))
    # a user seek before the answer lands wins
    subs.seek(T0, 11)
    assert not subs.maybe_seek_unvalidated(T0, 99, LATEST, None)
    assert subs.position(T0) == FetchPosition(11)
    assert subs.state(T0).reset_strategy is None and subs.state(T0).next_retry_time is None
    # AWAIT_RESET may only go to FETCHING or AWAIT_RESET (Java's transition table)
    subs.request_reset(T2)
    assert not subs.state(T2).transition(FetchState.AWAIT_VALIDATION)
    subs.complete_validation(T2)
    assert subs.state(T2).fetch_state is FetchState.AWAIT_RESET
    assert not subs.maybe_seek_unvalidated(U0, 0, LATEST, None)   # not assigned: ignored


def test_pause_resume_and_fetchable_partitions(subs: SubscriptionState) -> None:
    subs.assign_from_user([T0, T1, T2])
    fetching(subs, (T0, 1), (T1, 2), (T2, 3))
    subs.pause(T1)
    assert subs.fetchable_partitions() == [T0, T2]
    assert subs.paused_partitions() == {T1}
    assert not subs.is_fetchable(T1) and subs.position(T1) == FetchPosition(2)
    subs.seek(T1, 0)                                        # a seek does not resume
    assert subs.paused_partitions() == {T1}
    subs.resume(T1)
    assert subs.fetchable_partitions() == [T0, T1, T2]
    with pytest.raises(IllegalStateError, match="u-0"):
        subs.pause(U0)
    with pytest.raises(IllegalStateError, match="u-0"):
        subs.resume(U0)
    assert not subs.is_fetchable(U0)


def test_move_to_end_orders_fetchable_partitions(subs: SubscriptionState) -> None:
    subs.assign_from_user([T0, T1, T2])
    fetching(subs, (T0, 0), (T1, 0), (T2, 0))
    subs.move_to_end(T0)
    assert subs.fetchable_partitions() == [T1, T2, T0]
    subs.move_to_end(T2)
    assert subs.assigned_partitions() == [T1, T0, T2]
    subs.move_to_end(U0)                                    # not assigned: no-op
    assert subs.assigned_partitions() == [T1, T0, T2]
    subs.request_reset(T0)
    assert subs.fetchable_partitions() == [T1, T2]
    subs.seek(T0, 5)                                        # state changes keep the order
    assert subs.fetchable_partitions() == [T1, T0, T2]


def test_all_unsettled_in_says_whether_every_partition_without_a_position_is_listed(
        subs: SubscriptionState) -> None:
    """What a reset pass checks before its walk: every partition not FETCHING (waiting for a
    reset or a validation, or new) is among those given; FETCHING ones do not count."""
    subs.assign_from_user([T0, T1, T2])
    assert not subs.all_unsettled_in({T0, T1})
    assert subs.all_unsettled_in({T0, T1, T2, U0})
    subs.seek(T2, 5)
    assert subs.all_unsettled_in({T0, T1})
    subs.request_reset(T2)
    assert not subs.all_unsettled_in({T0, T1})
    for tp in (T0, T1, T2):
        subs.seek(tp, 1)
    assert subs.all_unsettled_in(set())
