"""TypedDicts of every message body and nested struct. Generated: do not edit.

Made from :mod:`pyconsumer.protocol.declarations` by ``python -m
pyconsumer.protocol.generate_stubs`` (``--check`` exits 1 when this file is stale). Keys are
the codec's dict keys. ``NotRequired``: some version of the struct lacks the field (the
encoder ignores it there; a decoded body still holds it, at its default). ``X | None``: some
version lets it be null, or its default is null. Comments give the versions that have a field
when not all do, those that let it be null when not all do, and declared defaults.
"""
from __future__ import annotations

import sys
import uuid
from typing import TYPE_CHECKING, TypedDict

if sys.version_info >= (3, 11):
    from typing import NotRequired
elif TYPE_CHECKING:   # annotations are strings at run time (PEP 563): only checkers need it
    from typing_extensions import NotRequired


class ApiVersionsRequest(TypedDict):
    """ApiVersionsRequest body: api key 18, v0-4, flexible v3+."""
    client_software_name: NotRequired[str]  # v3+
    client_software_version: NotRequired[str]  # v3+


class ApiVersionsResponse(TypedDict):
    """ApiVersionsResponse body: api key 18, v0-4, flexible v3+."""
    error_code: int
    api_keys: list[ApiVersion]
    throttle_time_ms: NotRequired[int]  # v1+
    supported_features: NotRequired[list[SupportedFeatureKey]]  # v3+, tagged
    finalized_features_epoch: NotRequired[int]  # v3+, tagged, default -1
    finalized_features: NotRequired[list[FinalizedFeatureKey]]  # v3+, tagged
    zk_migration_ready: NotRequired[bool]  # v3+, tagged, default false


class ApiVersion(TypedDict):
    """ApiVersionsResponse.api_keys[]."""
    api_key: int
    min_version: int
    max_version: int


class SupportedFeatureKey(TypedDict):
    """ApiVersionsResponse.supported_features[] (v3+)."""
    name: str
    min_version: int
    max_version: int


class FinalizedFeatureKey(TypedDict):
    """ApiVersionsResponse.finalized_features[] (v3+)."""
    name: str
    max_version_level: int
    min_version_level: int


class MetadataRequest(TypedDict):
    """MetadataRequest body: api key 3, v0-13, flexible v9+."""
    topics: list[MetadataRequestTopic] | None  # null v1+
    allow_auto_topic_creation: NotRequired[bool]  # v4+, default true
    include_cluster_authorized_operations: NotRequired[bool]  # v8-10
    include_topic_authorized_operations: NotRequired[bool]  # v8+


class MetadataRequestTopic(TypedDict):
    """MetadataRequest.topics[]."""
    topic_id: NotRequired[uuid.UUID]  # v10+
    name: str | None  # null v10+


class MetadataResponse(TypedDict):
    """MetadataResponse body: api key 3, v0-13, flexible v9+."""
    throttle_time_ms: NotRequired[int]  # v3+
    brokers: list[MetadataResponseBroker]
    cluster_id: NotRequired[str | None]  # v2+
    controller_id: NotRequired[int]  # v1+, default -1
    topics: list[MetadataResponseTopic]
    cluster_authorized_operations: NotRequired[int]  # v8-10, default -2147483648
    error_code: NotRequired[int]  # v13+


class MetadataResponseBroker(TypedDict):
    """MetadataResponse.brokers[]."""
    node_id: int
    host: str
    port: int
    rack: NotRequired[str | None]  # v1+


class MetadataResponseTopic(TypedDict):
    """MetadataResponse.topics[]."""
    error_code: int
    name: str | None  # null v12+
    topic_id: NotRequired[uuid.UUID]  # v10+
    is_internal: NotRequired[bool]  # v1+, default false
    partitions: list[MetadataResponsePartition]
    topic_authorized_operations: NotRequired[int]  # v8+, default -2147483648


class MetadataResponsePartition(TypedDict):
    """MetadataResponse.topics[].partitions[]."""
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: NotRequired[int]  # v7+, default -1
    replica_nodes: list[int]
    isr_nodes: list[int]
    offline_replicas: NotRequired[list[int]]  # v5+


class FindCoordinatorRequest(TypedDict):
    """FindCoordinatorRequest body: api key 10, v0-6, flexible v3+."""
    key: NotRequired[str]  # v0-3
    key_type: NotRequired[int]  # v1+, default 0
    coordinator_keys: NotRequired[list[str]]  # v4+


class FindCoordinatorResponse(TypedDict):
    """FindCoordinatorResponse body: api key 10, v0-6, flexible v3+."""
    throttle_time_ms: NotRequired[int]  # v1+
    error_code: NotRequired[int]  # v0-3
    error_message: NotRequired[str | None]  # v1-3
    node_id: NotRequired[int]  # v0-3
    host: NotRequired[str]  # v0-3
    port: NotRequired[int]  # v0-3
    coordinators: NotRequired[list[Coordinator]]  # v4+


class Coordinator(TypedDict):
    """FindCoordinatorResponse.coordinators[] (v4+)."""
    key: str
    node_id: int
    host: str
    port: int
    error_code: int
    error_message: str | None


class JoinGroupRequest(TypedDict):
    """JoinGroupRequest body: api key 11, v0-9, flexible v6+."""
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: NotRequired[int]  # v1+, default -1
    member_id: str
    group_instance_id: NotRequired[str | None]  # v5+
    protocol_type: str
    protocols: list[JoinGroupRequestProtocol]
    reason: NotRequired[str | None]  # v8+


class JoinGroupRequestProtocol(TypedDict):
    """JoinGroupRequest.protocols[]."""
    name: str
    metadata: bytes


class JoinGroupResponse(TypedDict):
    """JoinGroupResponse body: api key 11, v0-9, flexible v6+."""
    throttle_time_ms: NotRequired[int]  # v2+
    error_code: int
    generation_id: int  # default -1
    protocol_type: NotRequired[str | None]  # v7+
    protocol_name: str | None
    leader: str | None
    skip_assignment: NotRequired[bool]  # v9+, default false
    member_id: str | None
    members: list[JoinGroupResponseMember]


class JoinGroupResponseMember(TypedDict):
    """JoinGroupResponse.members[]."""
    member_id: str
    group_instance_id: NotRequired[str | None]  # v5+
    metadata: bytes


class SyncGroupRequest(TypedDict):
    """SyncGroupRequest body: api key 14, v0-5, flexible v4+."""
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: NotRequired[str | None]  # v3+
    protocol_type: NotRequired[str | None]  # v5+
    protocol_name: NotRequired[str | None]  # v5+
    assignments: list[SyncGroupRequestAssignment]


class SyncGroupRequestAssignment(TypedDict):
    """SyncGroupRequest.assignments[]."""
    member_id: str
    assignment: bytes


class SyncGroupResponse(TypedDict):
    """SyncGroupResponse body: api key 14, v0-5, flexible v4+."""
    throttle_time_ms: NotRequired[int]  # v1+
    error_code: int
    protocol_type: NotRequired[str | None]  # v5+
    protocol_name: NotRequired[str | None]  # v5+
    assignment: bytes | None


class HeartbeatRequest(TypedDict):
    """HeartbeatRequest body: api key 12, v0-4, flexible v4+."""
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: NotRequired[str | None]  # v3+


class HeartbeatResponse(TypedDict):
    """HeartbeatResponse body: api key 12, v0-4, flexible v4+."""
    throttle_time_ms: NotRequired[int]  # v1+
    error_code: int


class LeaveGroupRequest(TypedDict):
    """LeaveGroupRequest body: api key 13, v0-5, flexible v4+."""
    group_id: str
    member_id: NotRequired[str]  # v0-2
    members: NotRequired[list[MemberIdentity]]  # v3+


class MemberIdentity(TypedDict):
    """LeaveGroupRequest.members[] (v3+)."""
    member_id: str
    group_instance_id: str | None
    reason: NotRequired[str | None]  # v5+


class LeaveGroupResponse(TypedDict):
    """LeaveGroupResponse body: api key 13, v0-5, flexible v4+."""
    throttle_time_ms: NotRequired[int]  # v1+
    error_code: int
    members: NotRequired[list[MemberResponse]]  # v3+


class MemberResponse(TypedDict):
    """LeaveGroupResponse.members[] (v3+)."""
    member_id: str
    group_instance_id: str | None
    error_code: int


class OffsetCommitRequest(TypedDict):
    """OffsetCommitRequest body: api key 8, v0-9, flexible v8+."""
    group_id: str
    generation_id_or_member_epoch: NotRequired[int]  # v1+, default -1
    member_id: NotRequired[str]  # v1+
    group_instance_id: NotRequired[str | None]  # v7+
    retention_time_ms: NotRequired[int]  # v2-4, default -1
    topics: list[OffsetCommitRequestTopic]


class OffsetCommitRequestTopic(TypedDict):
    """OffsetCommitRequest.topics[]."""
    name: str
    partitions: list[OffsetCommitRequestPartition]


class OffsetCommitRequestPartition(TypedDict):
    """OffsetCommitRequest.topics[].partitions[]."""
    partition_index: int
    committed_offset: int
    committed_leader_epoch: NotRequired[int]  # v6+, default -1
    commit_timestamp: NotRequired[int]  # v1, default -1
    committed_metadata: str | None


class OffsetCommitResponse(TypedDict):
    """OffsetCommitResponse body: api key 8, v0-9, flexible v8+."""
    throttle_time_ms: NotRequired[int]  # v3+
    topics: list[OffsetCommitResponseTopic]


class OffsetCommitResponseTopic(TypedDict):
    """OffsetCommitResponse.topics[]."""
    name: str
    partitions: list[OffsetCommitResponsePartition]


class OffsetCommitResponsePartition(TypedDict):
    """OffsetCommitResponse.topics[].partitions[]."""
    partition_index: int
    error_code: int


class OffsetFetchRequest(TypedDict):
    """OffsetFetchRequest body: api key 9, v0-9, flexible v6+."""
    group_id: NotRequired[str]  # v0-7
    topics: NotRequired[list[OffsetFetchRequestTopic] | None]  # v0-7, null v2-7
    groups: NotRequired[list[OffsetFetchRequestGroup]]  # v8+
    require_stable: NotRequired[bool]  # v7+, default false


class OffsetFetchRequestTopic(TypedDict):
    """OffsetFetchRequest.topics[] (v0-7)."""
    name: str
    partition_indexes: list[int]


class OffsetFetchRequestGroup(TypedDict):
    """OffsetFetchRequest.groups[] (v8+)."""
    group_id: str
    member_id: NotRequired[str | None]  # v9+
    member_epoch: NotRequired[int]  # v9+, default -1
    topics: list[OffsetFetchRequestTopics] | None


class OffsetFetchRequestTopics(TypedDict):
    """OffsetFetchRequest.groups[].topics[] (v8+)."""
    name: str
    partition_indexes: list[int]


class OffsetFetchResponse(TypedDict):
    """OffsetFetchResponse body: api key 9, v0-9, flexible v6+."""
    throttle_time_ms: NotRequired[int]  # v3+
    topics: NotRequired[list[OffsetFetchResponseTopic]]  # v0-7
    error_code: NotRequired[int]  # v2-7, default 0
    groups: NotRequired[list[OffsetFetchResponseGroup]]  # v8+


class OffsetFetchResponseTopic(TypedDict):
    """OffsetFetchResponse.topics[] (v0-7)."""
    name: str
    partitions: list[OffsetFetchResponsePartition]


class OffsetFetchResponsePartition(TypedDict):
    """OffsetFetchResponse.topics[].partitions[] (v0-7)."""
    partition_index: int
    committed_offset: int
    committed_leader_epoch: NotRequired[int]  # v5-7, default -1
    metadata: str | None
    error_code: int


class OffsetFetchResponseGroup(TypedDict):
    """OffsetFetchResponse.groups[] (v8+)."""
    group_id: str
    topics: list[OffsetFetchResponseTopics]
    error_code: int  # default 0


class OffsetFetchResponseTopics(TypedDict):
    """OffsetFetchResponse.groups[].topics[] (v8+)."""
    name: str
    partitions: list[OffsetFetchResponsePartitions]


class OffsetFetchResponsePartitions(TypedDict):
    """OffsetFetchResponse.groups[].topics[].partitions[] (v8+)."""
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int  # default -1
    metadata: str | None
    error_code: int


class ListOffsetsRequest(TypedDict):
    """ListOffsetsRequest body: api key 2, v0-10, flexible v6+."""
    replica_id: int
    isolation_level: NotRequired[int]  # v2+
    topics: list[ListOffsetsTopic]
    timeout_ms: NotRequired[int]  # v10+


class ListOffsetsTopic(TypedDict):
    """ListOffsetsRequest.topics[]."""
    name: str
    partitions: list[ListOffsetsPartition]


class ListOffsetsPartition(TypedDict):
    """ListOffsetsRequest.topics[].partitions[]."""
    partition_index: int
    current_leader_epoch: NotRequired[int]  # v4+, default -1
    timestamp: int
    max_num_offsets: NotRequired[int]  # v0, default 1


class ListOffsetsResponse(TypedDict):
    """ListOffsetsResponse body: api key 2, v0-10, flexible v6+."""
    throttle_time_ms: NotRequired[int]  # v2+
    topics: list[ListOffsetsTopicResponse]


class ListOffsetsTopicResponse(TypedDict):
    """ListOffsetsResponse.topics[]."""
    name: str
    partitions: list[ListOffsetsPartitionResponse]


class ListOffsetsPartitionResponse(TypedDict):
    """ListOffsetsResponse.topics[].partitions[]."""
    partition_index: int
    error_code: int
    old_style_offsets: NotRequired[list[int]]  # v0
    timestamp: NotRequired[int]  # v1+, default -1
    offset: NotRequired[int]  # v1+, default -1
    leader_epoch: NotRequired[int]  # v4+, default -1


class FetchRequest(TypedDict):
    """FetchRequest body: api key 1, v0-17, flexible v12+."""
    cluster_id: NotRequired[str | None]  # v12+, tagged
    replica_id: NotRequired[int]  # v0-14, default -1
    replica_state: NotRequired[ReplicaState]  # v15+, tagged
    max_wait_ms: int
    min_bytes: int
    max_bytes: NotRequired[int]  # v3+, default 2147483647
    isolation_level: NotRequired[int]  # v4+, default 0
    session_id: NotRequired[int]  # v7+, default 0
    session_epoch: NotRequired[int]  # v7+, default -1
    topics: list[FetchTopic]
    forgotten_topics_data: NotRequired[list[ForgottenTopic]]  # v7+
    rack_id: NotRequired[str]  # v11+, default ''


class ReplicaState(TypedDict):
    """FetchRequest.replica_state (v15+)."""
    replica_id: int  # default -1
    replica_epoch: int  # default -1


class FetchTopic(TypedDict):
    """FetchRequest.topics[]."""
    topic: NotRequired[str]  # v0-12
    topic_id: NotRequired[uuid.UUID]  # v13+
    partitions: list[FetchPartition]


class FetchPartition(TypedDict):
    """FetchRequest.topics[].partitions[]."""
    partition: int
    current_leader_epoch: NotRequired[int]  # v9+, default -1
    fetch_offset: int
    last_fetched_epoch: NotRequired[int]  # v12+, default -1
    log_start_offset: NotRequired[int]  # v5+, default -1
    partition_max_bytes: int
    replica_directory_id: NotRequired[uuid.UUID]  # v17+, tagged


class ForgottenTopic(TypedDict):
    """FetchRequest.forgotten_topics_data[] (v7+)."""
    topic: NotRequired[str]  # v7-12
    topic_id: NotRequired[uuid.UUID]  # v13+
    partitions: list[int]


class FetchResponse(TypedDict):
    """FetchResponse body: api key 1, v0-17, flexible v12+."""
    throttle_time_ms: NotRequired[int]  # v1+
    error_code: NotRequired[int]  # v7+
    session_id: NotRequired[int]  # v7+, default 0
    responses: list[FetchableTopicResponse]
    node_endpoints: NotRequired[list[NodeEndpoint]]  # v16+, tagged


class FetchableTopicResponse(TypedDict):
    """FetchResponse.responses[]."""
    topic: NotRequired[str]  # v0-12
    topic_id: NotRequired[uuid.UUID]  # v13+
    partitions: list[PartitionData]


class PartitionData(TypedDict):
    """FetchResponse.responses[].partitions[]."""
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: NotRequired[int]  # v4+, default -1
    log_start_offset: NotRequired[int]  # v5+, default -1
    diverging_epoch: NotRequired[FetchResponseEpochEndOffset]  # v12+, tagged
    current_leader: NotRequired[LeaderIdAndEpoch]  # v12+, tagged
    snapshot_id: NotRequired[SnapshotId]  # v12+, tagged
    aborted_transactions: NotRequired[list[AbortedTransaction] | None]  # v4+
    preferred_read_replica: NotRequired[int]  # v11+, default -1
    records: bytes | memoryview | None


class FetchResponseEpochEndOffset(TypedDict):
    """FetchResponse.responses[].partitions[].diverging_epoch (v12+)."""
    epoch: int  # default -1
    end_offset: int  # default -1


class LeaderIdAndEpoch(TypedDict):
    """FetchResponse.responses[].partitions[].current_leader (v12+)."""
    leader_id: int  # default -1
    leader_epoch: int  # default -1


class SnapshotId(TypedDict):
    """FetchResponse.responses[].partitions[].snapshot_id (v12+)."""
    end_offset: int  # default -1
    epoch: int  # default -1


class AbortedTransaction(TypedDict):
    """FetchResponse.responses[].partitions[].aborted_transactions[] (v4+)."""
    producer_id: int
    first_offset: int


class NodeEndpoint(TypedDict):
    """FetchResponse.node_endpoints[] (v16+)."""
    node_id: int
    host: str
    port: int
    rack: str | None


class OffsetForLeaderEpochRequest(TypedDict):
    """OffsetForLeaderEpochRequest body: api key 23, v0-4, flexible v4+."""
    replica_id: NotRequired[int]  # v3+, default -2
    topics: list[OffsetForLeaderTopic]


class OffsetForLeaderTopic(TypedDict):
    """OffsetForLeaderEpochRequest.topics[]."""
    topic: str
    partitions: list[OffsetForLeaderPartition]


class OffsetForLeaderPartition(TypedDict):
    """OffsetForLeaderEpochRequest.topics[].partitions[]."""
    partition: int
    current_leader_epoch: NotRequired[int]  # v2+, default -1
    leader_epoch: int


class OffsetForLeaderEpochResponse(TypedDict):
    """OffsetForLeaderEpochResponse body: api key 23, v0-4, flexible v4+."""
    throttle_time_ms: NotRequired[int]  # v2+
    topics: list[OffsetForLeaderTopicResult]


class OffsetForLeaderTopicResult(TypedDict):
    """OffsetForLeaderEpochResponse.topics[]."""
    topic: str
    partitions: list[OffsetForLeaderEpochResponseEpochEndOffset]


class OffsetForLeaderEpochResponseEpochEndOffset(TypedDict):
    """OffsetForLeaderEpochResponse.topics[].partitions[]."""
    error_code: int
    partition: int
    leader_epoch: NotRequired[int]  # v1+, default -1
    end_offset: int  # default -1


class SaslHandshakeRequest(TypedDict):
    """SaslHandshakeRequest body: api key 17, v0-1, flexible none."""
    mechanism: str


class SaslHandshakeResponse(TypedDict):
    """SaslHandshakeResponse body: api key 17, v0-1, flexible none."""
    error_code: int
    mechanisms: list[str]


class SaslAuthenticateRequest(TypedDict):
    """SaslAuthenticateRequest body: api key 36, v0-2, flexible v2+."""
    auth_bytes: bytes


class SaslAuthenticateResponse(TypedDict):
    """SaslAuthenticateResponse body: api key 36, v0-2, flexible v2+."""
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: NotRequired[int]  # v1+, default 0


class CreateTopicsRequest(TypedDict):
    """CreateTopicsRequest body: api key 19, v0-7, flexible v5+."""
    topics: list[CreatableTopic]
    timeout_ms: int  # default 60000
    validate_only: NotRequired[bool]  # v1+, default false


class CreatableTopic(TypedDict):
    """CreateTopicsRequest.topics[]."""
    name: str
    num_partitions: int
    replication_factor: int
    assignments: list[CreatableReplicaAssignment]
    configs: list[CreatableTopicConfig]


class CreatableReplicaAssignment(TypedDict):
    """CreateTopicsRequest.topics[].assignments[]."""
    partition_index: int
    broker_ids: list[int]


class CreatableTopicConfig(TypedDict):
    """CreateTopicsRequest.topics[].configs[]."""
    name: str
    value: str | None


class CreateTopicsResponse(TypedDict):
    """CreateTopicsResponse body: api key 19, v0-7, flexible v5+."""
    throttle_time_ms: NotRequired[int]  # v2+
    topics: list[CreatableTopicResult]


class CreatableTopicResult(TypedDict):
    """CreateTopicsResponse.topics[]."""
    name: str
    topic_id: NotRequired[uuid.UUID]  # v7+
    error_code: int
    error_message: NotRequired[str | None]  # v1+
    topic_config_error_code: NotRequired[int]  # v5+, tagged
    num_partitions: NotRequired[int]  # v5+, default -1
    replication_factor: NotRequired[int]  # v5+, default -1
    configs: NotRequired[list[CreatableTopicConfigs] | None]  # v5+


class CreatableTopicConfigs(TypedDict):
    """CreateTopicsResponse.topics[].configs[] (v5+)."""
    name: str
    value: str | None
    read_only: bool
    config_source: int  # default -1
    is_sensitive: bool


class DescribeGroupsRequest(TypedDict):
    """DescribeGroupsRequest body: api key 15, v0-5, flexible v5+."""
    groups: list[str]
    include_authorized_operations: NotRequired[bool]  # v3+


class DescribeGroupsResponse(TypedDict):
    """DescribeGroupsResponse body: api key 15, v0-5, flexible v5+."""
    throttle_time_ms: NotRequired[int]  # v1+
    groups: list[DescribedGroup]


class DescribedGroup(TypedDict):
    """DescribeGroupsResponse.groups[]."""
    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedGroupMember]
    authorized_operations: NotRequired[int]  # v3+, default -2147483648


class DescribedGroupMember(TypedDict):
    """DescribeGroupsResponse.groups[].members[]."""
    member_id: str
    group_instance_id: NotRequired[str | None]  # v4+
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class ConsumerGroupHeartbeatRequest(TypedDict):
    """ConsumerGroupHeartbeatRequest body: api key 68, v0-1, flexible v0+."""
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int  # default -1
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: NotRequired[str | None]  # v1+
    server_assignor: str | None
    topic_partitions: list[TopicPartitions] | None


class TopicPartitions(TypedDict):
    """
    ConsumerGroupHeartbeatRequest.topic_partitions[]
    ConsumerGroupHeartbeatResponse.assignment.topic_partitions[]
    """
    topic_id: uuid.UUID
    partitions: list[int]


class ConsumerGroupHeartbeatResponse(TypedDict):
    """ConsumerGroupHeartbeatResponse body: api key 68, v0-1, flexible v0+."""
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None


class Assignment(TypedDict):
    """ConsumerGroupHeartbeatResponse.assignment."""
    topic_partitions: list[TopicPartitions]


class GetTelemetrySubscriptionsRequest(TypedDict):
    """GetTelemetrySubscriptionsRequest body: api key 71, v0, flexible v0+."""
    client_instance_id: uuid.UUID


class GetTelemetrySubscriptionsResponse(TypedDict):
    """GetTelemetrySubscriptionsResponse body: api key 71, v0, flexible v0+."""
    throttle_time_ms: int
    error_code: int
    client_instance_id: uuid.UUID
    subscription_id: int
    accepted_compression_types: list[int]
    push_interval_ms: int
    telemetry_max_bytes: int
    delta_temporality: bool
    requested_metrics: list[str]


class PushTelemetryRequest(TypedDict):
    """PushTelemetryRequest body: api key 72, v0, flexible v0+."""
    client_instance_id: uuid.UUID
    subscription_id: int
    terminating: bool
    compression_type: int
    metrics: bytes


class PushTelemetryResponse(TypedDict):
    """PushTelemetryResponse body: api key 72, v0, flexible v0+."""
    throttle_time_ms: int
    error_code: int


class ConsumerProtocolSubscription(TypedDict):
    """ConsumerProtocolSubscription body: embedded in group messages, v0-3, flexible none."""
    topics: list[str]
    user_data: bytes | None
    owned_partitions: NotRequired[list[TopicPartition]]  # v1+
    generation_id: NotRequired[int]  # v2+, default -1
    rack_id: NotRequired[str | None]  # v3+


class TopicPartition(TypedDict):
    """
    ConsumerProtocolSubscription.owned_partitions[] (v1+)
    ConsumerProtocolAssignment.assigned_partitions[]
    """
    topic: str
    partitions: list[int]


class ConsumerProtocolAssignment(TypedDict):
    """ConsumerProtocolAssignment body: embedded in group messages, v0-3, flexible none."""
    assigned_partitions: list[TopicPartition]
    user_data: bytes | None
