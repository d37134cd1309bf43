"""Errors: one table of Kafka broker error codes, and client errors kept apart.

Broker errors are classes generated from ``BROKER_ERRORS`` (code, name, retriable,
description); look one up with :func:`for_code`. Client errors (``KafkaProtocolError``,
``CorruptRecordError``, ...) never carry a broker code.
"""
from __future__ import annotations

from enum import IntEnum
from functools import cache
from typing import Any, ClassVar


class KafkaError(Exception):
    """Base of every pyconsumer error."""

    retriable: ClassVar[bool] = False
    #: the metadata should be refreshed before a retry (leader moved, unknown partition)
    invalid_metadata: ClassVar[bool] = False


# --------------------------------------------------------------------------- client errors


class KafkaClientError(KafkaError):
    """An error raised by this client, not sent by a broker."""


class ConfigurationError(KafkaClientError, ValueError):
    """A setting is unknown, ill-typed or out of range."""


class KafkaProtocolError(KafkaClientError):
    """A peer sent bytes that do not parse as the Kafka protocol (or a frame too large)."""


class CorruptRecordError(KafkaClientError):
    """A record set is malformed, truncated mid-stream or fails its CRC.

    ``topic``, ``partition`` and ``offset`` say where, when known.
    """

    def __init__(
        self,
        message: str,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        where = []
        if topic is not None:
            where.append(f"topic={topic}")
        if partition is not None:
            where.append(f"partition={partition}")
        if offset is not None:
            where.append(f"offset={offset}")
        full = f"{message} ({', '.join(where)})" if where else message
        super().__init__(full)
        self.reason = message
        self.topic = topic
        self.partition = partition
        self.offset = offset


class UnsupportedCodecError(CorruptRecordError):
    """A batch names a compression codec this client does not know."""


class RecordDeserializationError(KafkaClientError):
    """A key or value deserializer raised; ``topic``, ``partition``, ``offset`` name the record.

    The consumer's position stays at that record (seek past it to skip it); the original
    exception is the ``__cause__``.
    """

    def __init__(
        self,
        message: str,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(f"{message} (topic={topic}, partition={partition}, offset={offset})")
        self.topic = topic
        self.partition = partition
        self.offset = offset


class KafkaConnectionError(KafkaClientError):
    """A connection failed, was refused or closed by the peer."""

    retriable = True
    invalid_metadata = True


class AuthenticationError(KafkaClientError):
    """The broker refused who we are (Java ``AuthenticationException``): not retriable; the
    call that needed the connection fails with it, and the connection is retried only after
    the reconnect backoff."""


class SaslAuthenticationError(AuthenticationError):
    """A SASL exchange failed: mechanism not enabled on the broker, bad credentials (with the
    broker's message), a bad server answer, an illegal SASL state. Never carries a secret."""


class SslAuthenticationError(AuthenticationError):
    """A TLS handshake failed (Java ``SslAuthenticationException``): the broker's certificate
    was refused, the broker refused ours, or no protocol or cipher suite is common. Retrying
    cannot help, so the call that needed the connection fails with it at once."""


class KafkaTimeoutError(KafkaClientError):
    """An operation did not finish within its timeout (request.timeout.ms, a poll...)."""

    retriable = True
    #: what was seen meanwhile (each broker's state), for callers that word their own message
    detail: str | None = None


class NoBrokersAvailable(KafkaClientError):
    """None of the bootstrap servers (or known brokers) could be reached."""

    retriable = True
    #: what was seen meanwhile (each broker's state), for callers that word their own message
    detail: str | None = None


class UnsupportedVersionError(KafkaClientError):
    """Client and broker share no version of an API this client needs."""


class IllegalStateError(KafkaClientError):
    """A call made in a state that forbids it (closed consumer, no assignment...)."""


class ConcurrentAccessError(KafkaClientError):
    """A second thread called the consumer while another was inside a call (Java's
    ConcurrentModificationException): a consumer belongs to one thread; only ``wakeup()``
    may be called from elsewhere."""


class WakeupError(KafkaClientError):
    """``wakeup()`` interrupted a blocking call."""


class NoOffsetForPartitionError(KafkaClientError):
    """A partition has no position and ``auto.offset.reset`` is ``none`` (Java
    NoOffsetForPartitionException). ``partitions`` lists them."""

    def __init__(self, message: str, partitions: Any = ()) -> None:
        super().__init__(message)
        self.partitions = set(partitions)


class LogTruncationError(KafkaClientError):
    """The leader's log no longer holds the records before the consumer's position (they were
    truncated after an unclean leader change) and ``auto.offset.reset`` is ``none``.
    ``divergent_offsets`` maps each partition to the first offset known to diverge."""

    def __init__(self, message: str, divergent_offsets: Any = None) -> None:
        super().__init__(message)
        self.divergent_offsets = dict(divergent_offsets or {})


class CommitFailedError(KafkaClientError):
    """A commit failed for good: the group rebalanced (the member's generation is gone), so
    the partitions may now belong to another member. Not retriable (Java
    CommitFailedException)."""


class FetchProgressError(KafkaClientError):
    """A fetch response held bytes for a partition but no complete record batch, so the
    consumer cannot move forward (a batch larger than the broker would send whole, or a log
    cut mid-batch). ``topic``, ``partition`` and ``offset`` say where; the position stays
    there until the application seeks."""

    def __init__(self, message: str, topic: str | None = None, partition: int | None = None,
                 offset: int | None = None) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset


class DataLossError(KafkaClientError):
    """Offsets a Spark query was to read are gone (retention, a deleted topic or partition)
    and ``failOnDataLoss`` is true; the message names topic, partition and offsets."""


# --------------------------------------------------------------------------- broker errors

# Every error code of the Kafka protocol, as Apache Kafka's
# clients/src/main/java/org/apache/kafka/common/protocol/Errors.java defines it (trunk of
# August 2026, last change c274a7348f KAFKA-20395; codes -1..136). Columns: code, Kafka's
# name, retriable, Kafka's description.
# ``retriable`` is True exactly when Java's exception class for the code extends
# RetriableException (directly or through InvalidMetadataException/RefreshRetriableException).
# Code 0 (NONE) is listed for completeness; it gets no class.
BROKER_ERRORS: tuple[tuple[int, str, bool, str], ...] = (
    (-1, "UNKNOWN_SERVER_ERROR", False,
        "The server experienced an unexpected error when processing the request."),
    (0, "NONE", False, ""),
    (1, "OFFSET_OUT_OF_RANGE", False,
        "The requested offset is not within the range of offsets maintained by the server."),
    (2, "CORRUPT_MESSAGE", True,
        "This message has failed its CRC checksum, exceeds the valid size, has a null key for a "
        "compacted topic, or is otherwise corrupt."),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True, "This server does not host this topic-partition."),
    (4, "INVALID_FETCH_SIZE", False, "The requested fetch size is invalid."),
    (5, "LEADER_NOT_AVAILABLE", True,
        "There is no leader for this topic-partition as we are in the middle of a leadership "
        "election."),
    (6, "NOT_LEADER_OR_FOLLOWER", True,
        "For requests intended only for the leader, this error indicates that the broker is not "
        "the current leader. For requests intended for any replica, this error indicates that the"
        " broker is not a replica of the topic partition."),
    (7, "REQUEST_TIMED_OUT", True, "The request timed out."),
    (8, "BROKER_NOT_AVAILABLE", False, "The broker is not available."),
    (9, "REPLICA_NOT_AVAILABLE", True,
        "The replica is not available for the requested topic-partition. Produce/Fetch requests "
        "and other requests intended only for the leader or follower return "
        "NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition."),
    (10, "MESSAGE_TOO_LARGE", False,
        "The request included a message larger than the max message size the server will accept."),
    (11, "STALE_CONTROLLER_EPOCH", False, "The controller moved to another broker."),
    (12, "OFFSET_METADATA_TOO_LARGE", False,
        "The metadata field of the offset request was too large."),
    (13, "NETWORK_EXCEPTION", True, "The server disconnected before a response was received."),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", True,
        "The coordinator is loading and hence can't process requests."),
    (15, "COORDINATOR_NOT_AVAILABLE", True, "The coordinator is not available."),
    (16, "NOT_COORDINATOR", True, "This is not the correct coordinator."),
    (17, "INVALID_TOPIC_EXCEPTION", False,
        "The request attempted to perform an operation on an invalid topic."),
    (18, "RECORD_LIST_TOO_LARGE", False,
        "The request included message batch larger than the configured segment size on the "
        "server."),
    (19, "NOT_ENOUGH_REPLICAS", True,
        "Messages are rejected since there are fewer in-sync replicas than required."),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True,
        "Messages are written to the log, but to fewer in-sync replicas than required."),
    (21, "INVALID_REQUIRED_ACKS", False,
        "Produce request specified an invalid value for required acks."),
    (22, "ILLEGAL_GENERATION", False, "Specified group generation id is not valid."),
    (23, "INCONSISTENT_GROUP_PROTOCOL", False,
        "The group member's supported protocols are incompatible with those of existing members "
        "or first group member tried to join with empty protocol type or empty protocol list."),
    (24, "INVALID_GROUP_ID", False, "The group id is invalid."),
    (25, "UNKNOWN_MEMBER_ID", False, "The coordinator is not aware of this member."),
    (26, "INVALID_SESSION_TIMEOUT", False,
        "The session timeout is not within the range allowed by the broker (as configured by "
        "group.min.session.timeout.ms and group.max.session.timeout.ms)."),
    (27, "REBALANCE_IN_PROGRESS", False, "The group is rebalancing, so a rejoin is needed."),
    (28, "INVALID_COMMIT_OFFSET_SIZE", False, "The committing offset data size is not valid."),
    (29, "TOPIC_AUTHORIZATION_FAILED", False, "Topic authorization failed."),
    (30, "GROUP_AUTHORIZATION_FAILED", False, "Group authorization failed."),
    (31, "CLUSTER_AUTHORIZATION_FAILED", False, "Cluster authorization failed."),
    (32, "INVALID_TIMESTAMP", False, "The timestamp of the message is out of acceptable range."),
    (33, "UNSUPPORTED_SASL_MECHANISM", False,
        "The broker does not support the requested SASL mechanism."),
    (34, "ILLEGAL_SASL_STATE", False, "Request is not valid given the current SASL state."),
    (35, "UNSUPPORTED_VERSION", False, "The version of API is not supported."),
    (36, "TOPIC_ALREADY_EXISTS", False, "Topic with this name already exists."),
    (37, "INVALID_PARTITIONS", False, "Number of partitions is below 1."),
    (38, "INVALID_REPLICATION_FACTOR", False,
        "Replication factor is below 1 or larger than the number of available brokers."),
    (39, "INVALID_REPLICA_ASSIGNMENT", False, "Replica assignment is invalid."),
    (40, "INVALID_CONFIG", False, "Configuration is invalid."),
    (41, "NOT_CONTROLLER", True, "This is not the correct controller for this cluster."),
    (42, "INVALID_REQUEST", False,
        "This most likely occurs because of a request being malformed by the client library or "
        "the message was sent to an incompatible broker. See the broker logs for more details."),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False,
        "The message format version on the broker does not support the request."),
    (44, "POLICY_VIOLATION", False, "Request parameters do not satisfy the configured policy."),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False,
        "The broker received an out of order sequence number."),
    (46, "DUPLICATE_SEQUENCE_NUMBER", False, "The broker received a duplicate sequence number."),
    (47, "INVALID_PRODUCER_EPOCH", False, "Producer attempted to produce with an old epoch."),
    (48, "INVALID_TXN_STATE", False,
        "The producer attempted a transactional operation in an invalid state."),
    (49, "INVALID_PRODUCER_ID_MAPPING", False,
        "The producer attempted to use a producer id which is not currently assigned to its "
        "transactional id."),
    (50, "INVALID_TRANSACTION_TIMEOUT", False,
        "The transaction timeout is larger than the maximum value allowed by the broker (as "
        "configured by transaction.max.timeout.ms)."),
    (51, "CONCURRENT_TRANSACTIONS", True,
        "The producer attempted to update a transaction while another concurrent operation on the"
        " same transaction was ongoing."),
    (52, "TRANSACTION_COORDINATOR_FENCED", False,
        "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the "
        "current coordinator for a given producer."),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, "Transactional Id authorization failed."),
    (54, "SECURITY_DISABLED", False, "Security features are disabled."),
    (55, "OPERATION_NOT_ATTEMPTED", False,
        "The broker did not attempt to execute this operation. This may happen for batched RPCs "
        "where some operations in the batch failed, causing the broker to respond without trying "
        "the rest."),
    (56, "KAFKA_STORAGE_ERROR", True, "Disk error when trying to access log file on the disk."),
    (57, "LOG_DIR_NOT_FOUND", False,
        "The user-specified log directory is not found in the broker config."),
    (58, "SASL_AUTHENTICATION_FAILED", False, "SASL Authentication failed."),
    (59, "UNKNOWN_PRODUCER_ID", False,
        "This exception is raised by the broker if it could not locate the producer metadata "
        "associated with the producerId in question. This could happen if, for instance, the "
        "producer's records were deleted because their retention time had elapsed. Once the last "
        "records of the producerId are removed, the producer's metadata is removed from the "
        "broker, and future appends by the producer will return this exception."),
    (60, "REASSIGNMENT_IN_PROGRESS", False, "A partition reassignment is in progress."),
    (61, "DELEGATION_TOKEN_AUTH_DISABLED", False, "Delegation Token feature is not enabled."),
    (62, "DELEGATION_TOKEN_NOT_FOUND", False, "Delegation Token is not found on server."),
    (63, "DELEGATION_TOKEN_OWNER_MISMATCH", False,
        "Specified Principal is not valid Owner/Renewer."),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False,
        "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on "
        "delegation token authenticated channels."),
    (65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False, "Delegation Token authorization failed."),
    (66, "DELEGATION_TOKEN_EXPIRED", False, "Delegation Token is expired."),
    (67, "INVALID_PRINCIPAL_TYPE", False, "Supplied principalType is not supported."),
    (68, "NON_EMPTY_GROUP", False, "The group is not empty."),
    (69, "GROUP_ID_NOT_FOUND", False, "The group id does not exist."),
    (70, "FETCH_SESSION_ID_NOT_FOUND", True, "The fetch session ID was not found."),
    (71, "INVALID_FETCH_SESSION_EPOCH", True, "The fetch session epoch is invalid."),
    (72, "LISTENER_NOT_FOUND", True,
        "There is no listener on the leader broker that matches the listener on which metadata "
        "request was processed."),
    (73, "TOPIC_DELETION_DISABLED", False, "Topic deletion is disabled."),
    (74, "FENCED_LEADER_EPOCH", True,
        "The leader epoch in the request is older than the epoch on the broker."),
    (75, "UNKNOWN_LEADER_EPOCH", True,
        "The leader epoch in the request is newer than the epoch on the broker."),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", False,
        "The requesting client does not support the compression type of given partition."),
    (77, "STALE_BROKER_EPOCH", False, "Broker epoch has changed."),
    (78, "OFFSET_NOT_AVAILABLE", True,
        "The leader high watermark has not caught up from a recent leader election so the offsets"
        " cannot be guaranteed to be monotonically increasing."),
    (79, "MEMBER_ID_REQUIRED", False,
        "The group member needs to have a valid member id before actually entering a consumer "
        "group."),
    (80, "PREFERRED_LEADER_NOT_AVAILABLE", True, "The preferred leader was not available."),
    (81, "GROUP_MAX_SIZE_REACHED", False, "The group has reached its maximum size."),
    (82, "FENCED_INSTANCE_ID", False,
        "The broker rejected this static consumer since another consumer with the same "
        "group.instance.id has registered with a different member.id."),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True,
        "Eligible topic partition leaders are not available."),
    (84, "ELECTION_NOT_NEEDED", True, "Leader election not needed for topic partition."),
    (85, "NO_REASSIGNMENT_IN_PROGRESS", False, "No partition reassignment is in progress."),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC", False,
        "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed"
        " to it."),
    (87, "INVALID_RECORD", False,
        "This record has failed the validation on broker and hence will be rejected."),
    (88, "UNSTABLE_OFFSET_COMMIT", True, "There are unstable offsets that need to be cleared."),
    (89, "THROTTLING_QUOTA_EXCEEDED", True, "The throttling quota has been exceeded."),
    (90, "PRODUCER_FENCED", False,
        "There is a newer producer with the same transactionalId which fences the current one."),
    (91, "RESOURCE_NOT_FOUND", False,
        "A request illegally referred to a resource that does not exist."),
    (92, "DUPLICATE_RESOURCE", False, "A request illegally referred to the same resource twice."),
    (93, "UNACCEPTABLE_CREDENTIAL", False,
        "Requested credential would not meet criteria for acceptability."),
    (94, "INCONSISTENT_VOTER_SET", False,
        "Indicates that the either the sender or recipient of a voter-only request is not one of "
        "the expected voters."),
    (95, "INVALID_UPDATE_VERSION", False, "The given update version was invalid."),
    (96, "FEATURE_UPDATE_FAILED", False,
        "Unable to update finalized features due to an unexpected server error."),
    (97, "PRINCIPAL_DESERIALIZATION_FAILURE", False,
        "Request principal deserialization failed during forwarding. This indicates an internal "
        "error on the broker cluster security setup."),
    (98, "SNAPSHOT_NOT_FOUND", False, "Requested snapshot was not found."),
    (99, "POSITION_OUT_OF_RANGE", False,
        "Requested position is not greater than or equal to zero, and less than the size of the "
        "snapshot."),
    (100, "UNKNOWN_TOPIC_ID", True, "This server does not host this topic ID."),
    (101, "DUPLICATE_BROKER_REGISTRATION", False, "This broker ID is already in use."),
    (102, "BROKER_ID_NOT_REGISTERED", False, "The given broker ID was not registered."),
    (103, "INCONSISTENT_TOPIC_ID", True,
        "The log's topic ID did not match the topic ID in the request."),
    (104, "INCONSISTENT_CLUSTER_ID", False,
        "The clusterId in the request does not match that found on the server."),
    (105, "TRANSACTIONAL_ID_NOT_FOUND", False, "The transactionalId could not be found."),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", True,
        "The fetch session encountered inconsistent topic ID usage."),
    (107, "INELIGIBLE_REPLICA", False, "The new ISR contains at least one ineligible replica."),
    (108, "NEW_LEADER_ELECTED", False,
        "The AlterPartition request successfully updated the partition state but the leader has "
        "changed."),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", False,
        "The requested offset is moved to tiered storage."),
    (110, "FENCED_MEMBER_EPOCH", False,
        "The member epoch is fenced by the group coordinator. The member must abandon all its "
        "partitions and rejoin."),
    (111, "UNRELEASED_INSTANCE_ID", False,
        "The instance ID is still used by another member in the consumer group. That member must "
        "leave first."),
    (112, "UNSUPPORTED_ASSIGNOR", False,
        "The assignor or its version range is not supported by the consumer group."),
    (113, "STALE_MEMBER_EPOCH", False,
        "The member epoch is stale. The member must retry after receiving its updated member "
        "epoch via the ConsumerGroupHeartbeat API."),
    (114, "MISMATCHED_ENDPOINT_TYPE", False,
        "The request was sent to an endpoint of the wrong type."),
    (115, "UNSUPPORTED_ENDPOINT_TYPE", False, "This endpoint type is not supported yet."),
    (116, "UNKNOWN_CONTROLLER_ID", False, "This controller ID is not known."),
    (117, "UNKNOWN_SUBSCRIPTION_ID", False,
        "Client sent a push telemetry request with an invalid or outdated subscription ID."),
    (118, "TELEMETRY_TOO_LARGE", False,
        "Client sent a push telemetry request larger than the maximum size the broker will "
        "accept."),
    (119, "INVALID_REGISTRATION", False,
        "The controller has considered the broker registration to be invalid."),
    (120, "TRANSACTION_ABORTABLE", False,
        "The server encountered an error with the transaction. The client can abort the "
        "transaction to continue using this transactional ID."),
    (121, "INVALID_RECORD_STATE", False,
        "The record state is invalid. The acknowledgement of delivery could not be completed."),
    (122, "SHARE_SESSION_NOT_FOUND", True, "The share session was not found."),
    (123, "INVALID_SHARE_SESSION_EPOCH", True, "The share session epoch is invalid."),
    (124, "FENCED_STATE_EPOCH", False,
        "The coordinator rejected the request because the state epoch did not match."),
    (125, "INVALID_VOTER_KEY", False, "The voter key doesn't match the receiving replica's key."),
    (126, "DUPLICATE_VOTER", False, "The voter is already part of the set of voters."),
    (127, "VOTER_NOT_FOUND", False, "The voter is not part of the set of voters."),
    (128, "INVALID_REGULAR_EXPRESSION", False, "The regular expression is not valid."),
    (129, "REBOOTSTRAP_REQUIRED", False,
        "Client metadata is stale. The client should rebootstrap to obtain new metadata."),
    (130, "STREAMS_INVALID_TOPOLOGY", False, "The supplied topology is invalid."),
    (131, "STREAMS_INVALID_TOPOLOGY_EPOCH", False, "The supplied topology epoch is invalid."),
    (132, "STREAMS_TOPOLOGY_FENCED", False, "The supplied topology epoch is outdated."),
    (133, "SHARE_SESSION_LIMIT_REACHED", True, "The limit of share sessions has been reached."),
    (134, "GROUP_DELETION_FAILED", False,
        "DeleteGroups could not complete; see the error message on the per-group result for "
        "details."),
    (135, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED", False,
        "The broker could not process the topology description update; see the error message for "
        "details."),
    (136, "CONTROLLER_ID_NOT_REGISTERED", False, "The given controller ID was not registered."),

)

class ErrorCode(IntEnum):
    """Every code of ``BROKER_ERRORS`` by Kafka's name: ``ErrorCode.NOT_COORDINATOR == 16``.

    Codes are compared by name everywhere (no module-level ``_X = 16`` constants). The members
    are spelled out, in the table's order, so type checkers see each name (a misspelt code is a
    mypy error); ``BROKER_ERRORS`` stays the one table (retriable, description, the classes)
    and test_errors holds this list equal to its (code, name) columns.
    """

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133
    GROUP_DELETION_FAILED = 134
    STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED = 135
    CONTROLLER_ID_NOT_REGISTERED = 136


# Codes after which the client refreshes metadata before retrying. These are the codes whose
# Java exception extends InvalidMetadataException, plus UNKNOWN_LEADER_EPOCH and
# OFFSET_NOT_AVAILABLE, which the Java consumer's ListOffsets/OffsetsForLeaderEpoch paths treat
# the same way (retry the partition after a metadata update).
INVALID_METADATA_CODES: frozenset[int] = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.LISTENER_NOT_FOUND,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        ErrorCode.ELECTION_NOT_NEEDED,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)


# Broker class names that would clash with a client error of the same CamelCase name.
_CLASS_NAME_OVERRIDES: dict[int, str] = {
    35: "UnsupportedVersionResponseError",  # the client's UnsupportedVersionError is local
}

_ROWS_BY_CODE: dict[int, tuple[int, str, bool, str]] = {row[0]: row for row in BROKER_ERRORS}

#: code -> generated class, for every code of ``BROKER_ERRORS`` except 0 (NONE)
ERRORS_BY_CODE: dict[int, type[BrokerResponseError]] = {}


def class_name_for(code: int) -> str:
    """The Python class name for a broker error code.

    CamelCase of Kafka's name with an ``Error`` suffix; a trailing ``_ERROR`` or ``_EXCEPTION``
    in Kafka's name is not doubled (KAFKA_STORAGE_ERROR -> KafkaStorageError, NETWORK_EXCEPTION
    -> NetworkError). Code 35 (UNSUPPORTED_VERSION) is ``UnsupportedVersionResponseError`` so it
    does not shadow the client's :class:`UnsupportedVersionError`.
    """
    if code in _CLASS_NAME_OVERRIDES:
        return _CLASS_NAME_OVERRIDES[code]
    name = _ROWS_BY_CODE[code][1]
    for suffix in ("_ERROR", "_EXCEPTION"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return "".join(part.capitalize() for part in name.split("_")) + "Error"


class BrokerResponseError(KafkaError):
    """An error code sent by a broker. Subclasses are generated from ``BROKER_ERRORS``.

    A subclass declared with ``errno=N`` takes its ``message`` (Kafka's UPPER_SNAKE name),
    ``description``, ``retriable`` and ``invalid_metadata`` from row N of the table and is
    registered in ``ERRORS_BY_CODE``; a second class for the same code is refused.
    """

    errno: ClassVar[int] = -1
    message: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    description: ClassVar[str] = ""

    def __init_subclass__(cls, errno: int | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if errno is not None:
            _register(cls, errno)

    def __str__(self) -> str:
        extra = super().__str__()
        base = f"[Error {self.errno}] {self.message}: {self.description}"
        return f"{base} - {extra}" if extra else base


def _register(cls: type[BrokerResponseError], code: int) -> None:
    """Fill a broker error class from its table row and record it (once per code)."""
    row = _ROWS_BY_CODE.get(code)
    if row is None or code == 0:
        raise TypeError(f"{cls.__name__}: {code} is not a Kafka error code of BROKER_ERRORS")
    if code in ERRORS_BY_CODE:
        raise TypeError(
            f"{cls.__name__}: error code {code} is already registered to "
            f"{ERRORS_BY_CODE[code].__name__}"
        )
    expected = class_name_for(code)
    if cls.__name__ != expected:
        raise TypeError(f"class for error code {code} must be named {expected}, not {cls.__name__}")
    _, name, retriable, description = row
    cls.errno = code
    cls.message = name
    cls.description = description
    cls.retriable = retriable
    cls.invalid_metadata = code in INVALID_METADATA_CODES
    if not cls.__doc__:
        cls.__doc__ = f"Kafka error {code} {name}: {description}"
    ERRORS_BY_CODE[code] = cls


# The classes callers name most often, declared so type checkers and IDEs see them; their
# attributes still come from the table. Every other code is generated below.
class UnknownServerError(BrokerResponseError, errno=-1): ...
class OffsetOutOfRangeError(BrokerResponseError, errno=1): ...
class CorruptMessageError(BrokerResponseError, errno=2): ...
class UnknownTopicOrPartitionError(BrokerResponseError, errno=3): ...
class LeaderNotAvailableError(BrokerResponseError, errno=5): ...
class NotLeaderOrFollowerError(BrokerResponseError, errno=6): ...
class RequestTimedOutError(BrokerResponseError, errno=7): ...
class BrokerNotAvailableError(BrokerResponseError, errno=8): ...
class ReplicaNotAvailableError(BrokerResponseError, errno=9): ...
class NetworkError(BrokerResponseError, errno=13): ...
class CoordinatorLoadInProgressError(BrokerResponseError, errno=14): ...
class CoordinatorNotAvailableError(BrokerResponseError, errno=15): ...
class NotCoordinatorError(BrokerResponseError, errno=16): ...
class InvalidTopicError(BrokerResponseError, errno=17): ...
class IllegalGenerationError(BrokerResponseError, errno=22): ...
class InconsistentGroupProtocolError(BrokerResponseError, errno=23): ...
class InvalidGroupIdError(BrokerResponseError, errno=24): ...
class UnknownMemberIdError(BrokerResponseError, errno=25): ...
class InvalidSessionTimeoutError(BrokerResponseError, errno=26): ...
class RebalanceInProgressError(BrokerResponseError, errno=27): ...
class InvalidCommitOffsetSizeError(BrokerResponseError, errno=28): ...
class TopicAuthorizationFailedError(BrokerResponseError, errno=29): ...
class GroupAuthorizationFailedError(BrokerResponseError, errno=30): ...
class ClusterAuthorizationFailedError(BrokerResponseError, errno=31): ...
class UnsupportedSaslMechanismError(BrokerResponseError, errno=33): ...
class IllegalSaslStateError(BrokerResponseError, errno=34): ...
class UnsupportedVersionResponseError(BrokerResponseError, errno=35): ...
class InvalidRequestError(BrokerResponseError, errno=42): ...
class KafkaStorageError(BrokerResponseError, errno=56): ...
class SaslAuthenticationFailedError(BrokerResponseError, errno=58): ...
class GroupIdNotFoundError(BrokerResponseError, errno=69): ...
class FetchSessionIdNotFoundError(BrokerResponseError, errno=70): ...
class InvalidFetchSessionEpochError(BrokerResponseError, errno=71): ...
class FencedLeaderEpochError(BrokerResponseError, errno=74): ...
class UnknownLeaderEpochError(BrokerResponseError, errno=75): ...
class UnsupportedCompressionTypeError(BrokerResponseError, errno=76): ...
class OffsetNotAvailableError(BrokerResponseError, errno=78): ...
class MemberIdRequiredError(BrokerResponseError, errno=79): ...
class GroupMaxSizeReachedError(BrokerResponseError, errno=81): ...
class FencedInstanceIdError(BrokerResponseError, errno=82): ...
class UnstableOffsetCommitError(BrokerResponseError, errno=88): ...
class UnknownTopicIdError(BrokerResponseError, errno=100): ...
class InconsistentTopicIdError(BrokerResponseError, errno=103): ...
class FetchSessionTopicIdError(BrokerResponseError, errno=106): ...
class OffsetMovedToTieredStorageError(BrokerResponseError, errno=109): ...
class FencedMemberEpochError(BrokerResponseError, errno=110): ...
class UnreleasedInstanceIdError(BrokerResponseError, errno=111): ...
class UnsupportedAssignorError(BrokerResponseError, errno=112): ...
class StaleMemberEpochError(BrokerResponseError, errno=113): ...
class InvalidRegularExpressionError(BrokerResponseError, errno=128): ...
class RebootstrapRequiredError(BrokerResponseError, errno=129): ...


def _generate_remaining() -> list[str]:
    """Create a class for every table code not declared above; return all broker class names."""
    names = []
    for code, _name, _retriable, _description in BROKER_ERRORS:
        if code == 0:
            continue  # NONE is success, not an error
        cls_name = class_name_for(code)
        if code not in ERRORS_BY_CODE:
            if cls_name in globals():
                raise TypeError(f"error code {code}: name {cls_name} is already used in this module")
            # type() runs __init_subclass__, which fills and registers the class
            cls = type(cls_name, (BrokerResponseError,), {"__module__": __name__}, errno=code)
            globals()[cls_name] = cls
        names.append(cls_name)
    return names


_BROKER_CLASS_NAMES = _generate_remaining()


@cache
def _unknown_code_class(code: int) -> type[UnknownServerError]:
    # a subclass of UnknownServerError that remembers the code the broker actually sent
    # (Java maps unknown codes to UNKNOWN_SERVER_ERROR, non-retriable)
    return type(
        f"UnknownServerError_{code}".replace("-", "m"),
        (UnknownServerError,),
        {
            "__module__": __name__,
            "errno": code,
            "description": f"Error code {code} is not known to this client "
            f"(a newer broker?); treated as UNKNOWN_SERVER_ERROR.",
        },
    )


def for_code(code: int) -> type[BrokerResponseError]:
    """The error class for a broker error code.

    An unknown code gives a subclass of :class:`UnknownServerError` whose ``errno`` is that code
    (the same class for the same code). Code 0 (NONE) is success: asking for it is a
    ``ValueError``, so check ``if code:`` first, or use :func:`error_for_code`.
    """
    if code == 0:
        raise ValueError("error code 0 (NONE) means success, it has no error class")
    cls = ERRORS_BY_CODE.get(code)
    return cls if cls is not None else _unknown_code_class(code)


def error_for_code(code: int, detail: str | None = None) -> BrokerResponseError | None:
    """An instance of the error for ``code`` (``detail`` e.g. the response's error_message or
    the topic-partition), or None when ``code`` is 0 (NONE)."""
    if code == 0:
        return None
    cls = for_code(code)
    return cls(detail) if detail else cls()


__all__ = [
    "DataLossError",
    "KafkaError",
    "KafkaClientError",
    "ConfigurationError",
    "KafkaProtocolError",
    "CorruptRecordError",
    "UnsupportedCodecError",
    "KafkaConnectionError",
    "AuthenticationError",
    "SaslAuthenticationError",
    "SslAuthenticationError",
    "KafkaTimeoutError",
    "NoBrokersAvailable",
    "UnsupportedVersionError",
    "IllegalStateError",
    "WakeupError",
    "ConcurrentAccessError",
    "NoOffsetForPartitionError",
    "FetchProgressError",
    "CommitFailedError",
    "LogTruncationError",
    "BrokerResponseError",
    "BROKER_ERRORS",
    "ErrorCode",
    "ERRORS_BY_CODE",
    "INVALID_METADATA_CODES",
    "class_name_for",
    "for_code",
    "error_for_code",
    *_BROKER_CLASS_NAMES,
]
