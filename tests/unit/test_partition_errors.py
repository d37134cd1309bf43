"""consumer/partition_errors: the one table of partition-level error actions.

Expected actions are written from the Java consumer's handlers (FetchCollector, OffsetFetcher,
OffsetsForLeaderEpochUtils, ConsumerCoordinator's OffsetFetch handler), not read off the table.
"""
from __future__ import annotations

import pytest

from pyconsumer.consumer.partition_errors import PARTITION_ERRORS, PartitionAction, classify
from pyconsumer.errors import BROKER_ERRORS, ErrorCode
from pyconsumer.protocol import ApiKey

A = PartitionAction
E = ErrorCode
TABLE_NAMES = {name: code for code, name, _, _ in BROKER_ERRORS}


def test_every_code_named_is_a_kafka_error_code() -> None:
    assert set(PARTITION_ERRORS) == {ApiKey.FETCH, ApiKey.LIST_OFFSETS,
                                     ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.OFFSET_FETCH}
    for api, table in PARTITION_ERRORS.items():
        for code, action in table.items():
            assert isinstance(code, ErrorCode), (api, code)
            assert TABLE_NAMES[code.name] == code.value
            assert code != 0, "NONE is no error"
            assert isinstance(action, PartitionAction) and action is not A.NONE, (api, code)


@pytest.mark.parametrize("api", list(PARTITION_ERRORS))
def test_no_error_is_none(api: ApiKey) -> None:
    assert classify(api, 0) is A.NONE


@pytest.mark.parametrize(("code", "action"), [
    (E.NOT_LEADER_OR_FOLLOWER, A.REFRESH_METADATA),
    (E.REPLICA_NOT_AVAILABLE, A.REFRESH_METADATA),
    (E.KAFKA_STORAGE_ERROR, A.REFRESH_METADATA),
    (E.FENCED_LEADER_EPOCH, A.REFRESH_METADATA),
    (E.OFFSET_NOT_AVAILABLE, A.REFRESH_METADATA),
    (E.UNKNOWN_TOPIC_OR_PARTITION, A.UNKNOWN_TOPIC),
    (E.UNKNOWN_TOPIC_ID, A.UNKNOWN_TOPIC),
    (E.UNKNOWN_LEADER_EPOCH, A.RETRY),
    (E.UNKNOWN_SERVER_ERROR, A.RETRY),
    (E.OFFSET_OUT_OF_RANGE, A.RESET_OFFSET),
    (E.TOPIC_AUTHORIZATION_FAILED, A.FATAL),
    (E.CORRUPT_MESSAGE, A.FATAL),
    (E.LEADER_NOT_AVAILABLE, A.FATAL),        # not listed: a fetch raises what it does not know
    (9999, A.FATAL),
])
def test_fetch(code: int, action: PartitionAction) -> None:
    assert classify(ApiKey.FETCH, code) is action


@pytest.mark.parametrize(("code", "action"), [
    (E.UNSUPPORTED_FOR_MESSAGE_FORMAT, A.NO_OFFSET),
    (E.TOPIC_AUTHORIZATION_FAILED, A.FATAL),
    (E.NOT_LEADER_OR_FOLLOWER, A.REFRESH_METADATA),
    (E.LEADER_NOT_AVAILABLE, A.REFRESH_METADATA),
    (E.UNKNOWN_TOPIC_OR_PARTITION, A.REFRESH_METADATA),
    (E.OFFSET_NOT_AVAILABLE, A.REFRESH_METADATA),
    (E.UNKNOWN_SERVER_ERROR, A.REFRESH_METADATA),   # OffsetFetcher retries any other code
    (9999, A.REFRESH_METADATA),
])
def test_list_offsets(code: int, action: PartitionAction) -> None:
    assert classify(ApiKey.LIST_OFFSETS, code) is action


@pytest.mark.parametrize(("code", "action"), [
    (E.FENCED_LEADER_EPOCH, A.REFRESH_METADATA),       # invalid metadata
    (E.UNKNOWN_TOPIC_OR_PARTITION, A.REFRESH_METADATA),
    (E.REQUEST_TIMED_OUT, A.REFRESH_METADATA),         # retriable
    (E.TOPIC_AUTHORIZATION_FAILED, A.FATAL),
    (E.UNKNOWN_SERVER_ERROR, A.FATAL),
    (9999, A.FATAL),
])
def test_offset_for_leader_epoch(code: int, action: PartitionAction) -> None:
    assert classify(ApiKey.OFFSET_FOR_LEADER_EPOCH, code) is action


@pytest.mark.parametrize(("code", "action"), [
    (E.UNSTABLE_OFFSET_COMMIT, A.RETRY),
    (E.UNKNOWN_TOPIC_OR_PARTITION, A.FATAL),
    (E.TOPIC_AUTHORIZATION_FAILED, A.FATAL),
])
def test_offset_fetch(code: int, action: PartitionAction) -> None:
    assert classify(ApiKey.OFFSET_FETCH, code) is action


def test_refreshing_actions() -> None:
    assert {a for a in A if a.refreshes_metadata} == {A.REFRESH_METADATA, A.UNKNOWN_TOPIC}


def test_an_api_without_a_table_is_refused() -> None:
    with pytest.raises(ValueError, match="no partition error table for JOIN_GROUP"):
        classify(ApiKey.JOIN_GROUP, 0)
