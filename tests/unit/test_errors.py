"""The broker error table and the client errors kept apart from it.

Expected rows are written from Apache Kafka's Errors.java and the "Error Codes" table of the
protocol guide (name, code, retriable), not copied from pyconsumer's table.
"""
from __future__ import annotations

import keyword

import pytest

from pyconsumer import errors
from pyconsumer.errors import (
    BROKER_ERRORS,
    ERRORS_BY_CODE,
    BrokerResponseError,
    ErrorCode,
    KafkaClientError,
    UnknownServerError,
    error_for_code,
    for_code,
)

# (code, Kafka name, retriable, invalid_metadata, Python class name)
SAMPLE = [
    (-1, "UNKNOWN_SERVER_ERROR", False, False, "UnknownServerError"),
    (1, "OFFSET_OUT_OF_RANGE", False, False, "OffsetOutOfRangeError"),
    (2, "CORRUPT_MESSAGE", True, False, "CorruptMessageError"),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True, True, "UnknownTopicOrPartitionError"),
    (5, "LEADER_NOT_AVAILABLE", True, True, "LeaderNotAvailableError"),
    (6, "NOT_LEADER_OR_FOLLOWER", True, True, "NotLeaderOrFollowerError"),
    (7, "REQUEST_TIMED_OUT", True, False, "RequestTimedOutError"),
    (8, "BROKER_NOT_AVAILABLE", False, False, "BrokerNotAvailableError"),
    (9, "REPLICA_NOT_AVAILABLE", True, True, "ReplicaNotAvailableError"),
    (10, "MESSAGE_TOO_LARGE", False, False, "MessageTooLargeError"),
    (13, "NETWORK_EXCEPTION", True, True, "NetworkError"),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", True, False, "CoordinatorLoadInProgressError"),
    (15, "COORDINATOR_NOT_AVAILABLE", True, False, "CoordinatorNotAvailableError"),
    (16, "NOT_COORDINATOR", True, False, "NotCoordinatorError"),
    (17, "INVALID_TOPIC_EXCEPTION", False, False, "InvalidTopicError"),
    (19, "NOT_ENOUGH_REPLICAS", True, False, "NotEnoughReplicasError"),
    (22, "ILLEGAL_GENERATION", False, False, "IllegalGenerationError"),
    (25, "UNKNOWN_MEMBER_ID", False, False, "UnknownMemberIdError"),
    (27, "REBALANCE_IN_PROGRESS", False, False, "RebalanceInProgressError"),
    (29, "TOPIC_AUTHORIZATION_FAILED", False, False, "TopicAuthorizationFailedError"),
    (35, "UNSUPPORTED_VERSION", False, False, "UnsupportedVersionResponseError"),
    (41, "NOT_CONTROLLER", True, False, "NotControllerError"),
    (51, "CONCURRENT_TRANSACTIONS", True, False, "ConcurrentTransactionsError"),
    (56, "KAFKA_STORAGE_ERROR", True, True, "KafkaStorageError"),
    (70, "FETCH_SESSION_ID_NOT_FOUND", True, False, "FetchSessionIdNotFoundError"),
    (71, "INVALID_FETCH_SESSION_EPOCH", True, False, "InvalidFetchSessionEpochError"),
    (74, "FENCED_LEADER_EPOCH", True, True, "FencedLeaderEpochError"),
    (75, "UNKNOWN_LEADER_EPOCH", True, True, "UnknownLeaderEpochError"),
    (78, "OFFSET_NOT_AVAILABLE", True, True, "OffsetNotAvailableError"),
    (79, "MEMBER_ID_REQUIRED", False, False, "MemberIdRequiredError"),
    (82, "FENCED_INSTANCE_ID", False, False, "FencedInstanceIdError"),
    (88, "UNSTABLE_OFFSET_COMMIT", True, False, "UnstableOffsetCommitError"),
    (89, "THROTTLING_QUOTA_EXCEEDED", True, False, "ThrottlingQuotaExceededError"),
    (100, "UNKNOWN_TOPIC_ID", True, True, "UnknownTopicIdError"),
    (103, "INCONSISTENT_TOPIC_ID", True, True, "InconsistentTopicIdError"),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", True, False, "FetchSessionTopicIdError"),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", False, False, "OffsetMovedToTieredStorageError"),
    (110, "FENCED_MEMBER_EPOCH", False, False, "FencedMemberEpochError"),
    (113, "STALE_MEMBER_EPOCH", False, False, "StaleMemberEpochError"),
    (122, "SHARE_SESSION_NOT_FOUND", True, False, "ShareSessionNotFoundError"),
    (128, "INVALID_REGULAR_EXPRESSION", False, False, "InvalidRegularExpressionError"),
    (129, "REBOOTSTRAP_REQUIRED", False, False, "RebootstrapRequiredError"),
    (133, "SHARE_SESSION_LIMIT_REACHED", True, False, "ShareSessionLimitReachedError"),
    (136, "CONTROLLER_ID_NOT_REGISTERED", False, False, "ControllerIdNotRegisteredError"),
]


@pytest.mark.parametrize(
    ("code", "name", "retriable", "invalid_metadata", "cls_name"),
    SAMPLE,
    ids=[row[1] for row in SAMPLE],
)
def test_sample_rows(
    code: int, name: str, retriable: bool, invalid_metadata: bool, cls_name: str
) -> None:
    cls = for_code(code)
    assert cls is getattr(errors, cls_name)
    assert cls.__name__ == cls_name
    assert cls.errno == code
    assert cls.message == name
    assert cls.retriable is retriable
    assert cls.invalid_metadata is invalid_metadata
    assert cls.description  # every error row has Kafka's description
    assert issubclass(cls, BrokerResponseError)
    assert cls_name in errors.__all__


def test_exact_descriptions() -> None:
    assert for_code(3).description == "This server does not host this topic-partition."
    assert for_code(27).description == "The group is rebalancing, so a rejoin is needed."
    assert for_code(25).description == "The coordinator is not aware of this member."
    assert for_code(24).description == "The group id is invalid."


def test_table_is_complete_and_contiguous() -> None:
    codes = [row[0] for row in BROKER_ERRORS]
    assert codes == list(range(-1, 137))  # -1 .. CONTROLLER_ID_NOT_REGISTERED(136)
    assert len(BROKER_ERRORS) == 138
    assert BROKER_ERRORS[1] == (0, "NONE", False, "")
    assert len(ERRORS_BY_CODE) == 137  # every code but NONE
    assert 0 not in ERRORS_BY_CODE


def test_no_duplicate_codes_names_or_classes() -> None:
    assert len({row[0] for row in BROKER_ERRORS}) == len(BROKER_ERRORS)
    assert len({row[1] for row in BROKER_ERRORS}) == len(BROKER_ERRORS)
    classes = list(ERRORS_BY_CODE.values())
    assert len(set(classes)) == len(classes)
    assert len({c.__name__ for c in classes}) == len(classes)
    for code, cls in ERRORS_BY_CODE.items():
        assert cls.errno == code
        assert cls.__name__.isidentifier() and not keyword.iskeyword(cls.__name__)
        assert cls.__name__.endswith("Error")
        assert getattr(errors, cls.__name__) is cls
        assert cls.__module__ == "pyconsumer.errors"


def test_error_code_members_are_the_table() -> None:
    """ErrorCode spells its members out for mypy: exactly the table's (code, name) rows, in
    order, so adding a row without its member (or a typo in either) fails here."""
    assert [(m.value, m.name) for m in ErrorCode] == [(c, n) for c, n, _, _ in BROKER_ERRORS]
    assert ErrorCode.NOT_COORDINATOR == 16 and ErrorCode(-1) is ErrorCode.UNKNOWN_SERVER_ERROR
    with pytest.raises(ValueError):
        ErrorCode(137)


def test_table_types() -> None:
    for code, name, retriable, description in BROKER_ERRORS:
        assert type(code) is int and -32768 <= code <= 32767  # int16 on the wire
        assert name.isupper() and " " not in name
        assert type(retriable) is bool
        assert isinstance(description, str)


def test_registration_refuses_a_second_class_for_a_code() -> None:
    with pytest.raises(TypeError, match="already registered to NotLeaderOrFollowerError"):

        class NotLeaderOrFollowerError(BrokerResponseError, errno=6):
            pass

    assert ERRORS_BY_CODE[6] is errors.NotLeaderOrFollowerError


def test_registration_refuses_wrong_name_and_unknown_code() -> None:
    with pytest.raises(TypeError, match="not a Kafka error code"):

        class MadeUpError(BrokerResponseError, errno=4242):
            pass

    with pytest.raises(TypeError, match="not a Kafka error code"):

        class NoneError(BrokerResponseError, errno=0):
            pass

    assert 4242 not in ERRORS_BY_CODE


def test_unknown_code_gives_unknown_server_error_that_remembers_it() -> None:
    cls = for_code(4242)
    assert issubclass(cls, UnknownServerError)
    assert cls is not UnknownServerError
    assert cls.errno == 4242
    assert cls.message == "UNKNOWN_SERVER_ERROR"
    assert cls.retriable is False
    assert "4242" in cls.description
    assert for_code(4242) is cls  # one class per unknown code
    assert for_code(-7).errno == -7
    assert 4242 not in ERRORS_BY_CODE
    with pytest.raises(UnknownServerError):
        raise cls("topic t")


def test_code_zero_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="NONE"):
        for_code(0)
    assert error_for_code(0) is None
    assert not hasattr(errors, "NoneError")


def test_error_for_code_builds_an_instance() -> None:
    err = error_for_code(6, "orders-3")
    assert isinstance(err, errors.NotLeaderOrFollowerError)
    assert str(err).endswith(" - orders-3")
    bare = error_for_code(16)
    assert isinstance(bare, errors.NotCoordinatorError)
    assert str(bare) == "[Error 16] NOT_COORDINATOR: This is not the correct coordinator."


def test_str_of_an_instance() -> None:
    assert (
        str(errors.UnknownMemberIdError())
        == "[Error 25] UNKNOWN_MEMBER_ID: The coordinator is not aware of this member."
    )
    assert str(errors.RebalanceInProgressError("group g")) == (
        "[Error 27] REBALANCE_IN_PROGRESS: The group is rebalancing, so a rejoin is needed."
        " - group g"
    )
    assert str(for_code(4242)()).startswith("[Error 4242] UNKNOWN_SERVER_ERROR: ")


def test_broker_code_35_does_not_shadow_the_client_error() -> None:
    assert errors.UnsupportedVersionError is not for_code(35)
    assert issubclass(errors.UnsupportedVersionError, KafkaClientError)
    assert not issubclass(errors.UnsupportedVersionError, BrokerResponseError)
    assert errors.UnsupportedVersionResponseError.message == "UNSUPPORTED_VERSION"


CLIENT_ERRORS = [
    errors.KafkaClientError,
    errors.ConfigurationError,
    errors.KafkaProtocolError,
    errors.CorruptRecordError,
    errors.UnsupportedCodecError,
    errors.KafkaConnectionError,
    errors.KafkaTimeoutError,
    errors.NoBrokersAvailable,
    errors.UnsupportedVersionError,
    errors.IllegalStateError,
    errors.WakeupError,
]


@pytest.mark.parametrize("cls", CLIENT_ERRORS, ids=lambda c: c.__name__)
def test_client_errors_never_carry_broker_codes(cls: type[Exception]) -> None:
    assert not issubclass(cls, BrokerResponseError)
    assert not hasattr(cls, "errno")
    assert issubclass(cls, errors.KafkaError)


def test_broker_errors_are_not_client_errors() -> None:
    for cls in ERRORS_BY_CODE.values():
        assert not issubclass(cls, KafkaClientError)
        assert issubclass(cls, errors.KafkaError)


def test_corrupt_record_error_names_where() -> None:
    err = errors.CorruptRecordError("CRC mismatch", topic="t", partition=2, offset=17)
    assert str(err) == "CRC mismatch (topic=t, partition=2, offset=17)"
    assert (err.topic, err.partition, err.offset, err.reason) == ("t", 2, 17, "CRC mismatch")
