"""One classifier for the group coordinator's error codes, shared by every group request.

What a code means depends a little on the request (Java's AbstractCoordinator and
ConsumerCoordinator response handlers); what to do about it is one of a few actions:

* ``RETRY``: try the same request again after the backoff (the coordinator is loading, an
  offset commit of a transaction is pending);
* ``COORDINATOR_MOVED``: mark the coordinator unknown, find it again, then retry;
* ``REJOIN``: the group is rebalancing; rejoin (a commit fails with RebalanceInProgressError
  instead: the offsets may now belong to another member);
* ``LOST``: the member's generation is gone (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION): its
  partitions are lost; rejoin as a new member (a commit fails with CommitFailedError);
* ``MEMBER_ID_REQUIRED``: rejoin at once with the member id the broker gave (KIP-394);
* ``FATAL``: raise it to the application (FENCED_INSTANCE_ID: another instance with this
  group.instance.id took over; authorization; a bad setting); never retried.
"""
from __future__ import annotations

import enum

from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import ApiKey


class GroupAction(enum.Enum):
    NONE = "none"
    RETRY = "retry"
    COORDINATOR_MOVED = "coordinator_moved"
    REJOIN = "rejoin"
    LOST = "lost"
    MEMBER_ID_REQUIRED = "member_id_required"
    FATAL = "fatal"


_COMMON: dict[int, GroupAction] = {
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: GroupAction.RETRY,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: GroupAction.COORDINATOR_MOVED,
    ErrorCode.NOT_COORDINATOR: GroupAction.COORDINATOR_MOVED,
    ErrorCode.REBALANCE_IN_PROGRESS: GroupAction.REJOIN,
    ErrorCode.UNKNOWN_MEMBER_ID: GroupAction.LOST,
    ErrorCode.ILLEGAL_GENERATION: GroupAction.LOST,
    ErrorCode.FENCED_INSTANCE_ID: GroupAction.FATAL,
    # consumer protocol (KIP-848): a commit with an old member epoch; the member is fenced
    ErrorCode.STALE_MEMBER_EPOCH: GroupAction.LOST,
    ErrorCode.FENCED_MEMBER_EPOCH: GroupAction.LOST,
}

# where a request differs from the common meaning
_BY_API: dict[ApiKey, dict[int, GroupAction]] = {
    ApiKey.JOIN_GROUP: {
        ErrorCode.MEMBER_ID_REQUIRED: GroupAction.MEMBER_ID_REQUIRED,
        # a JoinGroup that timed out at the broker is answered by rejoining, not by moving
        ErrorCode.REQUEST_TIMED_OUT: GroupAction.RETRY,
    },
    ApiKey.OFFSET_COMMIT: {
        ErrorCode.REQUEST_TIMED_OUT: GroupAction.COORDINATOR_MOVED,
    },
    ApiKey.CONSUMER_GROUP_HEARTBEAT: {
        # everything else (authorization, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
        # INVALID_REGULAR_EXPRESSION, GROUP_MAX_SIZE_REACHED, INVALID_REQUEST) is fatal
        ErrorCode.REQUEST_TIMED_OUT: GroupAction.RETRY,
    },
    ApiKey.OFFSET_FETCH: {
        ErrorCode.UNSTABLE_OFFSET_COMMIT: GroupAction.RETRY,
        ErrorCode.REQUEST_TIMED_OUT: GroupAction.COORDINATOR_MOVED,
    },
}


def classify(api: ApiKey, code: int) -> GroupAction:
    """The action for ``code`` in an answer to ``api`` (any code not listed is FATAL)."""
    if not code:
        return GroupAction.NONE
    specific = _BY_API.get(api)
    if specific is not None and code in specific:
        return specific[code]
    return _COMMON.get(code, GroupAction.FATAL)


__all__ = ["GroupAction", "classify"]
