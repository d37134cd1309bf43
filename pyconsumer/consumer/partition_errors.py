"""One table of partition-level error codes: what the consumer does about each, per request.

The partition-level twin of :mod:`pyconsumer.consumer.group.errors` (which classifies the
group coordinator's codes). A partition's answer in a Fetch, ListOffsets, OffsetForLeaderEpoch
or OffsetFetch carries an error code; what to do about it is one of a few actions:

* ``REFRESH_METADATA``: the leader or a replica moved or is not known to be where we asked:
  refresh the metadata and retry the partition (after the backoff);
* ``UNKNOWN_TOPIC``: the broker does not know the topic or partition (it may have been
  deleted): refresh the metadata as above, and say so (a warning, not a debug line);
* ``RETRY``: transient at the broker (our leader epoch is newer than its own, an unknown
  server error while fetching, a transaction committing offsets): retry after the backoff;
* ``RESET_OFFSET``: the position is outside the log: reset it by ``auto.offset.reset``
  (or raise :class:`~pyconsumer.errors.OffsetOutOfRangeError` when that is ``none``);
* ``NO_OFFSET``: not an error for the caller: there is no offset to give (ListOffsets by
  timestamp on a pre-0.10 message format);
* ``FATAL``: raise it to the application (authorization, a corrupt message...); never retried.

Each request has its own table and a default for the codes it does not list, since the Java
consumer's handlers differ (Java ``FetchCollector``, ``OffsetFetcher``, ``OffsetsForLeaderEpoch
Utils``, ``ConsumerCoordinator``). Codes are named by :class:`~pyconsumer.errors.ErrorCode`.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping

from pyconsumer.errors import ErrorCode, for_code
from pyconsumer.protocol import ApiKey


class PartitionAction(enum.Enum):
    NONE = "none"
    REFRESH_METADATA = "refresh_metadata"
    UNKNOWN_TOPIC = "unknown_topic"
    RETRY = "retry"
    RESET_OFFSET = "reset_offset"
    NO_OFFSET = "no_offset"
    FATAL = "fatal"

    @property
    def refreshes_metadata(self) -> bool:
        """The metadata is refreshed before the partition is asked again."""
        return self in (PartitionAction.REFRESH_METADATA, PartitionAction.UNKNOWN_TOPIC)


class _ByErrorClass(enum.Enum):
    """A default taken from the error class: retriable or invalid-metadata codes refresh the
    metadata and retry, any other is fatal."""

    RULE = "by_error_class"


_Default = PartitionAction | _ByErrorClass

#: api -> (code -> action) for the codes the request treats specially (keys are ErrorCode
#: members; typed int so a code read off the wire looks them up)
PARTITION_ERRORS: Mapping[ApiKey, Mapping[int, PartitionAction]] = {
    ApiKey.FETCH: {
        ErrorCode.NOT_LEADER_OR_FOLLOWER: PartitionAction.REFRESH_METADATA,
        ErrorCode.REPLICA_NOT_AVAILABLE: PartitionAction.REFRESH_METADATA,
        ErrorCode.KAFKA_STORAGE_ERROR: PartitionAction.REFRESH_METADATA,
        ErrorCode.FENCED_LEADER_EPOCH: PartitionAction.REFRESH_METADATA,
        ErrorCode.OFFSET_NOT_AVAILABLE: PartitionAction.REFRESH_METADATA,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: PartitionAction.UNKNOWN_TOPIC,
        ErrorCode.UNKNOWN_TOPIC_ID: PartitionAction.UNKNOWN_TOPIC,
        # the broker's leader epoch is older than ours: it has not heard of the new leader yet
        ErrorCode.UNKNOWN_LEADER_EPOCH: PartitionAction.RETRY,
        ErrorCode.UNKNOWN_SERVER_ERROR: PartitionAction.RETRY,
        ErrorCode.OFFSET_OUT_OF_RANGE: PartitionAction.RESET_OFFSET,
    },
    ApiKey.LIST_OFFSETS: {
        # pre-0.10 data has no timestamps to search: no offset, not an error
        ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT: PartitionAction.NO_OFFSET,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED: PartitionAction.FATAL,
    },
    ApiKey.OFFSET_FOR_LEADER_EPOCH: {},
    ApiKey.OFFSET_FETCH: {
        # a transaction is committing offsets for the partition: ask again
        ErrorCode.UNSTABLE_OFFSET_COMMIT: PartitionAction.RETRY,
    },
}

#: api -> the action of a code its table does not list
_DEFAULTS: Mapping[ApiKey, _Default] = {
    ApiKey.FETCH: PartitionAction.FATAL,
    # Java OffsetFetcher: any other partition error is retried after a metadata refresh
    ApiKey.LIST_OFFSETS: PartitionAction.REFRESH_METADATA,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _ByErrorClass.RULE,
    ApiKey.OFFSET_FETCH: PartitionAction.FATAL,
}


def classify(api: ApiKey, code: int) -> PartitionAction:
    """The action for a partition's ``code`` in an answer to ``api`` (NONE for 0). An API
    without a table is a ValueError (its partition errors are not classified here)."""
    table = PARTITION_ERRORS.get(api)
    if table is None:
        raise ValueError(f"no partition error table for {api.name}")
    if not code:
        return PartitionAction.NONE
    action = table.get(code)
    if action is not None:
        return action
    default = _DEFAULTS[api]
    if isinstance(default, PartitionAction):
        return default
    cls = for_code(code)
    return (PartitionAction.REFRESH_METADATA if cls.retriable or cls.invalid_metadata
            else PartitionAction.FATAL)


__all__ = ["PARTITION_ERRORS", "PartitionAction", "classify"]
