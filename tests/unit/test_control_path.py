"""Control-path pieces that need no broker: heartbeat timing, the group error classifier, the
deadline loop, the thread guard and the client lock."""
from __future__ import annotations

import threading

import pytest

from pyconsumer.consumer.group.errors import GroupAction, classify
from pyconsumer.consumer.group.heartbeat import HeartbeatTimer
from pyconsumer.errors import (
    ConcurrentAccessError,
    ErrorCode,
    KafkaTimeoutError,
    NotCoordinatorError,
    WakeupError,
)
from pyconsumer.net.deadline import Retry, deadline_after, remaining_ms, retry_until
from pyconsumer.net.future import Future, defer_callbacks
from pyconsumer.protocol import ApiKey
from pyconsumer.threads import AccessGuard, ClientLock


# ---------------------------------------------------------------------- heartbeat timer


def timer(now: float = 100.0) -> HeartbeatTimer:
    return HeartbeatTimer(session_timeout_ms=10_000, heartbeat_interval_ms=3_000,
                          max_poll_interval_ms=60_000, retry_backoff_ms=100, now=now)


def test_heartbeat_due_after_the_interval_and_not_while_one_is_in_flight() -> None:
    t = timer(100.0)
    assert not t.should_heartbeat(102.9)
    assert t.time_to_next_heartbeat(101.0) == pytest.approx(2.0)
    assert t.should_heartbeat(103.0)
    t.sent(103.0)
    assert not t.should_heartbeat(107.0)            # the first is still unanswered
    t.received(103.2)
    assert not t.should_heartbeat(105.9)
    assert t.should_heartbeat(106.0)                # interval counted from the send
    assert t.time_to_next_heartbeat(110.0) == 0.0


def test_failed_heartbeat_is_retried_after_the_backoff() -> None:
    t = timer(100.0)
    t.sent(103.0)
    t.failed(103.5)
    assert not t.should_heartbeat(103.55)
    assert t.should_heartbeat(103.6)


def test_session_expires_without_answers_and_a_join_resets_it() -> None:
    t = timer(100.0)
    assert not t.session_expired(110.0)
    assert t.session_expired(110.01)
    t.received(109.0)
    assert not t.session_expired(118.9)
    t.reset(200.0)
    assert not t.session_expired(209.9)
    assert t.time_to_next_heartbeat(200.0) == pytest.approx(3.0)


def test_poll_timeout_counts_from_the_last_poll() -> None:
    t = timer(100.0)
    assert not t.poll_timeout_expired(160.0)
    assert t.poll_timeout_expired(160.01)
    t.poll(150.0)
    assert not t.poll_timeout_expired(209.0)
    assert t.time_to_poll_timeout(200.0) == pytest.approx(10.0)
    assert t.time_to_poll_timeout(300.0) == 0.0


# ---------------------------------------------------------------------- group errors


@pytest.mark.parametrize("api, code, action", [
    (ApiKey.HEARTBEAT, 0, GroupAction.NONE),
    (ApiKey.HEARTBEAT, ErrorCode.REBALANCE_IN_PROGRESS, GroupAction.REJOIN),
    (ApiKey.HEARTBEAT, ErrorCode.UNKNOWN_MEMBER_ID, GroupAction.LOST),
    (ApiKey.HEARTBEAT, ErrorCode.ILLEGAL_GENERATION, GroupAction.LOST),
    (ApiKey.HEARTBEAT, ErrorCode.NOT_COORDINATOR, GroupAction.COORDINATOR_MOVED),
    (ApiKey.HEARTBEAT, ErrorCode.COORDINATOR_NOT_AVAILABLE, GroupAction.COORDINATOR_MOVED),
    (ApiKey.HEARTBEAT, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, GroupAction.RETRY),
    (ApiKey.HEARTBEAT, ErrorCode.FENCED_INSTANCE_ID, GroupAction.FATAL),
    (ApiKey.HEARTBEAT, ErrorCode.GROUP_AUTHORIZATION_FAILED, GroupAction.FATAL),
    (ApiKey.JOIN_GROUP, ErrorCode.MEMBER_ID_REQUIRED, GroupAction.MEMBER_ID_REQUIRED),
    (ApiKey.JOIN_GROUP, ErrorCode.REQUEST_TIMED_OUT, GroupAction.RETRY),
    (ApiKey.JOIN_GROUP, ErrorCode.FENCED_INSTANCE_ID, GroupAction.FATAL),
    (ApiKey.JOIN_GROUP, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, GroupAction.FATAL),
    (ApiKey.JOIN_GROUP, ErrorCode.UNKNOWN_MEMBER_ID, GroupAction.LOST),
    (ApiKey.SYNC_GROUP, ErrorCode.REBALANCE_IN_PROGRESS, GroupAction.REJOIN),
    (ApiKey.SYNC_GROUP, ErrorCode.FENCED_INSTANCE_ID, GroupAction.FATAL),
    (ApiKey.SYNC_GROUP, ErrorCode.INVALID_REQUEST, GroupAction.FATAL),      # raised, as Java
    (ApiKey.JOIN_GROUP, ErrorCode.INVALID_REQUEST, GroupAction.FATAL),
    (ApiKey.SYNC_GROUP, ErrorCode.MEMBER_ID_REQUIRED, GroupAction.FATAL),   # only a join asks
    (ApiKey.OFFSET_COMMIT, ErrorCode.REBALANCE_IN_PROGRESS, GroupAction.REJOIN),
    (ApiKey.OFFSET_COMMIT, ErrorCode.UNKNOWN_MEMBER_ID, GroupAction.LOST),
    (ApiKey.OFFSET_COMMIT, ErrorCode.REQUEST_TIMED_OUT, GroupAction.COORDINATOR_MOVED),
    (ApiKey.OFFSET_COMMIT, ErrorCode.FENCED_INSTANCE_ID, GroupAction.FATAL),
    (ApiKey.OFFSET_COMMIT, ErrorCode.OFFSET_METADATA_TOO_LARGE, GroupAction.FATAL),
    (ApiKey.OFFSET_FETCH, ErrorCode.UNSTABLE_OFFSET_COMMIT, GroupAction.RETRY),
    (ApiKey.OFFSET_FETCH, ErrorCode.NOT_COORDINATOR, GroupAction.COORDINATOR_MOVED),
    (ApiKey.OFFSET_FETCH, ErrorCode.GROUP_AUTHORIZATION_FAILED, GroupAction.FATAL),
])
def test_group_error_classifier(api: ApiKey, code: int, action: GroupAction) -> None:
    assert classify(api, code) is action


def test_error_codes_by_name_come_from_the_one_table() -> None:
    assert ErrorCode.NOT_COORDINATOR == 16 == NotCoordinatorError.errno
    assert ErrorCode(82).name == "FENCED_INSTANCE_ID"
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1


# ---------------------------------------------------------------------- deadline loop


def test_retry_until_retries_with_backoff_then_returns() -> None:
    waits: list[float] = []
    attempts = iter([Retry(NotCoordinatorError()), Retry(None, backoff=False), "done"])

    def attempt() -> str:
        outcome = next(attempts)
        if isinstance(outcome, Retry):
            raise outcome
        return outcome

    assert retry_until(deadline_after(10_000), attempt, wait=waits.append, backoff_ms=100,
                       timeout=lambda e: KafkaTimeoutError(str(e))) == "done"
    assert waits == [100]                 # no backoff after a Retry(backoff=False)


def test_retry_until_times_out_naming_the_last_error() -> None:
    def attempt() -> None:
        raise Retry(NotCoordinatorError("OffsetCommit for group g"))

    with pytest.raises(KafkaTimeoutError, match="NOT_COORDINATOR"):
        retry_until(deadline_after(30), attempt, wait=lambda ms: None, backoff_ms=5,
                    timeout=lambda e: KafkaTimeoutError(f"gave up: {e}"))


def test_retry_until_lets_other_errors_through_and_never_waits_past_the_deadline() -> None:
    def wakeup() -> None:
        raise WakeupError("woken")

    with pytest.raises(WakeupError):
        retry_until(deadline_after(1000), wakeup, wait=lambda ms: None, backoff_ms=5,
                    timeout=lambda e: KafkaTimeoutError(""))
    waits: list[float] = []

    def retry() -> None:
        raise Retry(None)

    with pytest.raises(KafkaTimeoutError):
        retry_until(deadline_after(50), retry, wait=waits.append, backoff_ms=10_000,
                    timeout=lambda e: KafkaTimeoutError(""))
    assert waits and all(w <= 50 for w in waits)
    assert remaining_ms(deadline_after(-5)) == 0.0


# ---------------------------------------------------------------------- threads


def test_access_guard_refuses_a_second_thread_but_not_reentry() -> None:
    guard = AccessGuard()
    guard.acquire()
    guard.acquire()                       # a listener calling back into the consumer
    errors: list[BaseException] = []

    def other() -> None:
        try:
            guard.acquire()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=other, name="intruder")
    t.start()
    t.join()
    assert len(errors) == 1 and isinstance(errors[0], ConcurrentAccessError)
    assert "'intruder'" in str(errors[0]) and "wakeup()" in str(errors[0])
    guard.release()
    guard.release()
    t = threading.Thread(target=other)    # free again: another thread may use it now
    t.start()
    t.join()
    assert len(errors) == 1


def test_client_lock_set_aside_lets_another_thread_in_and_restores_depth() -> None:
    lock = ClientLock()
    got: list[bool] = []

    def try_take() -> None:
        ok = lock.acquire(blocking=False)
        got.append(ok)
        if ok:
            lock.release()

    with lock, lock:
        t = threading.Thread(target=try_take)
        t.start()
        t.join()
        with lock.set_aside():
            t = threading.Thread(target=try_take)
            t.start()
            t.join()
        assert lock.held()
        t = threading.Thread(target=try_take)
        t.start()
        t.join()
    assert got == [False, True, False]
    assert not lock.held()
    with pytest.raises(RuntimeError):
        lock.release()


def test_callbacks_completed_on_the_heartbeat_thread_wait_for_the_application() -> None:
    sink: list = []
    seen: list[str] = []
    fut: Future[int] = Future()
    fut.add_callback(lambda f: seen.append("state"))
    fut.add_callback(lambda f: seen.append("heartbeat"), any_thread=True)
    with defer_callbacks(sink):
        fut.success(1)
    assert seen == ["heartbeat"]          # only the thread-safe one ran
    for fn, f in sink:
        fn(f)
    assert seen == ["heartbeat", "state"]


# ---------------------------------------------------------------------- KIP-320


def test_a_leader_epoch_change_sends_the_position_to_validation() -> None:
    from pyconsumer.config import OffsetResetStrategy
    from pyconsumer.consumer.subscription import FetchState, SubscriptionState
    from pyconsumer.structs import TopicPartition

    tp = TopicPartition("t", 0)
    subs = SubscriptionState(OffsetResetStrategy("earliest"))
    subs.assign_from_user([tp])
    subs.seek(tp, 10)                                   # no epoch known: nothing to check
    assert not subs.maybe_validate_for_leader(tp, 1, 5)
    assert subs.state(tp).fetch_state is FetchState.FETCHING
    subs.advance(tp, 20, 5)                             # records of leader epoch 5 consumed
    assert not subs.maybe_validate_for_leader(tp, 1, 5)  # same leader and epoch as recorded
    assert subs.maybe_validate_for_leader(tp, 2, 6)      # new leader epoch: check the position
    st = subs.state(tp)
    assert st.fetch_state is FetchState.AWAIT_VALIDATION
    assert (st.position.offset, st.position.leader, st.position.leader_epoch) == (20, 2, 6)
    subs.complete_validation(tp)
    assert not subs.maybe_validate_for_leader(tp, 2, 6)
    assert not subs.maybe_validate_for_leader(tp, -1, 7)   # no leader now: wait for one
    subs.request_reset(tp)
    assert not subs.maybe_validate_for_leader(tp, 3, 8)    # a reset wins


def test_retry_backoff_grows_to_retry_backoff_max_ms() -> None:
    waits: list[float] = []
    outcomes = iter([Retry(None)] * 5 + ["done"])  # type: ignore[list-item]

    def attempt() -> str:
        outcome = next(outcomes)
        if isinstance(outcome, Retry):
            raise outcome
        return outcome

    retry_until(deadline_after(60_000), attempt, wait=waits.append, backoff_ms=100,
                backoff_max_ms=400, timeout=lambda e: KafkaTimeoutError(""))
    # 100, 200, 400, 400, 400 with +-20 % jitter (KIP-580), never above the maximum
    for got, base in zip(waits, [100, 200, 400, 400, 400]):
        assert base * 0.8 <= got <= min(base * 1.2, 400)
    assert len(waits) == 5
