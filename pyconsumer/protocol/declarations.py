"""Every message pyconsumer speaks, declared once as data.

One block per message: a header line ``<Name> <api key> <valid versions> flexible=<versions>``
followed by its fields, indented two spaces per nesting level:
``<Name> <type> <versions> [nullable=<versions>] [tag=<n>@<tagged versions>] [default=<v>]``.
Types are Kafka's: int8/16/32/64, uint16, float64, bool, string, bytes, records, uuid, ``[]T``
for arrays, and a capitalised name for a struct whose fields follow on deeper lines.
Versions are ``N+``, ``A-B``, ``N`` or ``none``. Two deliberate leniencies: SyncGroupResponse's
Assignment and JoinGroupResponse's ProtocolName, Leader and MemberId are read as nullable
(a broker may send nulls beside an error code). Blocks with api key -1 are not requests but
the embedded formats of the consumer group protocol (JoinGroup metadata, SyncGroup assignment).
Field names and versions follow Apache Kafka's
message specs (clients/src/main/resources/common/message/*.json); the codec
(:mod:`pyconsumer.protocol.codec`) reads this table and is the only encoder and decoder.
"""
from __future__ import annotations

DECLARATIONS = """
ApiVersionsRequest 18 0-4 flexible=3+
  ClientSoftwareName string 3+
  ClientSoftwareVersion string 3+
ApiVersionsResponse 18 0-4 flexible=3+
  ErrorCode int16 0+
  ApiKeys []ApiVersion 0+
    ApiKey int16 0+
    MinVersion int16 0+
    MaxVersion int16 0+
  ThrottleTimeMs int32 1+
  SupportedFeatures []SupportedFeatureKey 3+ tag=0@3+
    Name string 3+
    MinVersion int16 3+
    MaxVersion int16 3+
  FinalizedFeaturesEpoch int64 3+ tag=1@3+ default=-1
  FinalizedFeatures []FinalizedFeatureKey 3+ tag=2@3+
    Name string 3+
    MaxVersionLevel int16 3+
    MinVersionLevel int16 3+
  ZkMigrationReady bool 3+ tag=3@3+ default=false
MetadataRequest 3 0-13 flexible=9+
  Topics []MetadataRequestTopic 0+ nullable=1+
    TopicId uuid 10+
    Name string 0+ nullable=10+
  AllowAutoTopicCreation bool 4+ default=true
  IncludeClusterAuthorizedOperations bool 8-10
  IncludeTopicAuthorizedOperations bool 8+
MetadataResponse 3 0-13 flexible=9+
  ThrottleTimeMs int32 3+
  Brokers []MetadataResponseBroker 0+
    NodeId int32 0+
    Host string 0+
    Port int32 0+
    Rack string 1+ nullable=1+ default=null
  ClusterId string 2+ nullable=2+ default=null
  ControllerId int32 1+ default=-1
  Topics []MetadataResponseTopic 0+
    ErrorCode int16 0+
    Name string 0+ nullable=12+
    TopicId uuid 10+
    IsInternal bool 1+ default=false
    Partitions []MetadataResponsePartition 0+
      ErrorCode int16 0+
      PartitionIndex int32 0+
      LeaderId int32 0+
      LeaderEpoch int32 7+ default=-1
      ReplicaNodes []int32 0+
      IsrNodes []int32 0+
      OfflineReplicas []int32 5+
    TopicAuthorizedOperations int32 8+ default=-2147483648
  ClusterAuthorizedOperations int32 8-10 default=-2147483648
  ErrorCode int16 13+
FindCoordinatorRequest 10 0-6 flexible=3+
  Key string 0-3
  KeyType int8 1+ default=0
  CoordinatorKeys []string 4+
FindCoordinatorResponse 10 0-6 flexible=3+
  ThrottleTimeMs int32 1+
  ErrorCode int16 0-3
  ErrorMessage string 1-3 nullable=1-3
  NodeId int32 0-3
  Host string 0-3
  Port int32 0-3
  Coordinators []Coordinator 4+
    Key string 4+
    NodeId int32 4+
    Host string 4+
    Port int32 4+
    ErrorCode int16 4+
    ErrorMessage string 4+ nullable=4+
JoinGroupRequest 11 0-9 flexible=6+
  GroupId string 0+
  SessionTimeoutMs int32 0+
  RebalanceTimeoutMs int32 1+ default=-1
  MemberId string 0+
  GroupInstanceId string 5+ nullable=5+ default=null
  ProtocolType string 0+
  Protocols []JoinGroupRequestProtocol 0+
    Name string 0+
    Metadata bytes 0+
  Reason string 8+ nullable=8+ default=null
JoinGroupResponse 11 0-9 flexible=6+
  ThrottleTimeMs int32 2+
  ErrorCode int16 0+
  GenerationId int32 0+ default=-1
  ProtocolType string 7+ nullable=7+ default=null
  ProtocolName string 0+ nullable=0+
  Leader string 0+ nullable=0+
  SkipAssignment bool 9+ default=false
  MemberId string 0+ nullable=0+
  Members []JoinGroupResponseMember 0+
    MemberId string 0+
    GroupInstanceId string 5+ nullable=5+ default=null
    Metadata bytes 0+
SyncGroupRequest 14 0-5 flexible=4+
  GroupId string 0+
  GenerationId int32 0+
  MemberId string 0+
  GroupInstanceId string 3+ nullable=3+ default=null
  ProtocolType string 5+ nullable=5+ default=null
  ProtocolName string 5+ nullable=5+ default=null
  Assignments []SyncGroupRequestAssignment 0+
    MemberId string 0+
    Assignment bytes 0+
SyncGroupResponse 14 0-5 flexible=4+
  ThrottleTimeMs int32 1+
  ErrorCode int16 0+
  ProtocolType string 5+ nullable=5+ default=null
  ProtocolName string 5+ nullable=5+ default=null
  Assignment bytes 0+ nullable=0+
HeartbeatRequest 12 0-4 flexible=4+
  GroupId string 0+
  GenerationId int32 0+
  MemberId string 0+
  GroupInstanceId string 3+ nullable=3+ default=null
HeartbeatResponse 12 0-4 flexible=4+
  ThrottleTimeMs int32 1+
  ErrorCode int16 0+
LeaveGroupRequest 13 0-5 flexible=4+
  GroupId string 0+
  MemberId string 0-2
  Members []MemberIdentity 3+
    MemberId string 3+
    GroupInstanceId string 3+ nullable=3+ default=null
    Reason string 5+ nullable=5+ default=null
LeaveGroupResponse 13 0-5 flexible=4+
  ThrottleTimeMs int32 1+
  ErrorCode int16 0+
  Members []MemberResponse 3+
    MemberId string 3+
    GroupInstanceId string 3+ nullable=3+
    ErrorCode int16 3+
OffsetCommitRequest 8 0-9 flexible=8+
  GroupId string 0+
  GenerationIdOrMemberEpoch int32 1+ default=-1
  MemberId string 1+
  GroupInstanceId string 7+ nullable=7+ default=null
  RetentionTimeMs int64 2-4 default=-1
  Topics []OffsetCommitRequestTopic 0+
    Name string 0+
    Partitions []OffsetCommitRequestPartition 0+
      PartitionIndex int32 0+
      CommittedOffset int64 0+
      CommittedLeaderEpoch int32 6+ default=-1
      CommitTimestamp int64 1 default=-1
      CommittedMetadata string 0+ nullable=0+
OffsetCommitResponse 8 0-9 flexible=8+
  ThrottleTimeMs int32 3+
  Topics []OffsetCommitResponseTopic 0+
    Name string 0+
    Partitions []OffsetCommitResponsePartition 0+
      PartitionIndex int32 0+
      ErrorCode int16 0+
OffsetFetchRequest 9 0-9 flexible=6+
  GroupId string 0-7
  Topics []OffsetFetchRequestTopic 0-7 nullable=2-7
    Name string 0-7
    PartitionIndexes []int32 0-7
  Groups []OffsetFetchRequestGroup 8+
    GroupId string 8+
    MemberId string 9+ nullable=9+ default=null
    MemberEpoch int32 9+ default=-1
    Topics []OffsetFetchRequestTopics 8+ nullable=8+
      Name string 8+
      PartitionIndexes []int32 8+
  RequireStable bool 7+ default=false
OffsetFetchResponse 9 0-9 flexible=6+
  ThrottleTimeMs int32 3+
  Topics []OffsetFetchResponseTopic 0-7
    Name string 0-7
    Partitions []OffsetFetchResponsePartition 0-7
      PartitionIndex int32 0-7
      CommittedOffset int64 0-7
      CommittedLeaderEpoch int32 5-7 default=-1
      Metadata string 0-7 nullable=0-7
      ErrorCode int16 0-7
  ErrorCode int16 2-7 default=0
  Groups []OffsetFetchResponseGroup 8+
    GroupId string 8+
    Topics []OffsetFetchResponseTopics 8+
      Name string 8+
      Partitions []OffsetFetchResponsePartitions 8+
        PartitionIndex int32 8+
        CommittedOffset int64 8+
        CommittedLeaderEpoch int32 8+ default=-1
        Metadata string 8+ nullable=8+
        ErrorCode int16 8+
    ErrorCode int16 8+ default=0
ListOffsetsRequest 2 0-10 flexible=6+
  ReplicaId int32 0+
  IsolationLevel int8 2+
  Topics []ListOffsetsTopic 0+
    Name string 0+
    Partitions []ListOffsetsPartition 0+
      PartitionIndex int32 0+
      CurrentLeaderEpoch int32 4+ default=-1
      Timestamp int64 0+
      MaxNumOffsets int32 0 default=1
  TimeoutMs int32 10+
ListOffsetsResponse 2 0-10 flexible=6+
  ThrottleTimeMs int32 2+
  Topics []ListOffsetsTopicResponse 0+
    Name string 0+
    Partitions []ListOffsetsPartitionResponse 0+
      PartitionIndex int32 0+
      ErrorCode int16 0+
      OldStyleOffsets []int64 0
      Timestamp int64 1+ default=-1
      Offset int64 1+ default=-1
      LeaderEpoch int32 4+ default=-1
FetchRequest 1 0-17 flexible=12+
  ClusterId string 12+ nullable=12+ tag=0@12+ default=null
  ReplicaId int32 0-14 default=-1
  ReplicaState ReplicaState 15+ tag=1@15+
    ReplicaId int32 15+ default=-1
    ReplicaEpoch int64 15+ default=-1
  MaxWaitMs int32 0+
  MinBytes int32 0+
  MaxBytes int32 3+ default=0x7fffffff
  IsolationLevel int8 4+ default=0
  SessionId int32 7+ default=0
  SessionEpoch int32 7+ default=-1
  Topics []FetchTopic 0+
    Topic string 0-12
    TopicId uuid 13+
    Partitions []FetchPartition 0+
      Partition int32 0+
      CurrentLeaderEpoch int32 9+ default=-1
      FetchOffset int64 0+
      LastFetchedEpoch int32 12+ default=-1
      LogStartOffset int64 5+ default=-1
      PartitionMaxBytes int32 0+
      ReplicaDirectoryId uuid 17+ tag=0@17+
  ForgottenTopicsData []ForgottenTopic 7+
    Topic string 7-12
    TopicId uuid 13+
    Partitions []int32 7+
  RackId string 11+ default=
FetchResponse 1 0-17 flexible=12+
  ThrottleTimeMs int32 1+
  ErrorCode int16 7+
  SessionId int32 7+ default=0
  Responses []FetchableTopicResponse 0+
    Topic string 0-12
    TopicId uuid 13+
    Partitions []PartitionData 0+
      PartitionIndex int32 0+
      ErrorCode int16 0+
      HighWatermark int64 0+
      LastStableOffset int64 4+ default=-1
      LogStartOffset int64 5+ default=-1
      DivergingEpoch EpochEndOffset 12+ tag=0@12+
        Epoch int32 12+ default=-1
        EndOffset int64 12+ default=-1
      CurrentLeader LeaderIdAndEpoch 12+ tag=1@12+
        LeaderId int32 12+ default=-1
        LeaderEpoch int32 12+ default=-1
      SnapshotId SnapshotId 12+ tag=2@12+
        EndOffset int64 0+ default=-1
        Epoch int32 0+ default=-1
      AbortedTransactions []AbortedTransaction 4+ nullable=4+
        ProducerId int64 4+
        FirstOffset int64 4+
      PreferredReadReplica int32 11+ default=-1
      Records records 0+ nullable=0+
  NodeEndpoints []NodeEndpoint 16+ tag=0@16+
    NodeId int32 16+
    Host string 16+
    Port int32 16+
    Rack string 16+ nullable=16+ default=null
OffsetForLeaderEpochRequest 23 0-4 flexible=4+
  ReplicaId int32 3+ default=-2
  Topics []OffsetForLeaderTopic 0+
    Topic string 0+
    Partitions []OffsetForLeaderPartition 0+
      Partition int32 0+
      CurrentLeaderEpoch int32 2+ default=-1
      LeaderEpoch int32 0+
OffsetForLeaderEpochResponse 23 0-4 flexible=4+
  ThrottleTimeMs int32 2+
  Topics []OffsetForLeaderTopicResult 0+
    Topic string 0+
    Partitions []EpochEndOffset 0+
      ErrorCode int16 0+
      Partition int32 0+
      LeaderEpoch int32 1+ default=-1
      EndOffset int64 0+ default=-1
SaslHandshakeRequest 17 0-1 flexible=none
  Mechanism string 0+
SaslHandshakeResponse 17 0-1 flexible=none
  ErrorCode int16 0+
  Mechanisms []string 0+
SaslAuthenticateRequest 36 0-2 flexible=2+
  AuthBytes bytes 0+
SaslAuthenticateResponse 36 0-2 flexible=2+
  ErrorCode int16 0+
  ErrorMessage string 0+ nullable=0+
  AuthBytes bytes 0+
  SessionLifetimeMs int64 1+ default=0
CreateTopicsRequest 19 0-7 flexible=5+
  Topics []CreatableTopic 0+
    Name string 0+
    NumPartitions int32 0+
    ReplicationFactor int16 0+
    Assignments []CreatableReplicaAssignment 0+
      PartitionIndex int32 0+
      BrokerIds []int32 0+
    Configs []CreatableTopicConfig 0+
      Name string 0+
      Value string 0+ nullable=0+
  timeoutMs int32 0+ default=60000
  validateOnly bool 1+ default=false
CreateTopicsResponse 19 0-7 flexible=5+
  ThrottleTimeMs int32 2+
  Topics []CreatableTopicResult 0+
    Name string 0+
    TopicId uuid 7+
    ErrorCode int16 0+
    ErrorMessage string 1+ nullable=0+
    TopicConfigErrorCode int16 5+ tag=0@5+
    NumPartitions int32 5+ default=-1
    ReplicationFactor int16 5+ default=-1
    Configs []CreatableTopicConfigs 5+ nullable=5+
      Name string 5+
      Value string 5+ nullable=5+
      ReadOnly bool 5+
      ConfigSource int8 5+ default=-1
      IsSensitive bool 5+
DescribeGroupsRequest 15 0-5 flexible=5+
  Groups []string 0+
  IncludeAuthorizedOperations bool 3+
DescribeGroupsResponse 15 0-5 flexible=5+
  ThrottleTimeMs int32 1+
  Groups []DescribedGroup 0+
    ErrorCode int16 0+
    GroupId string 0+
    GroupState string 0+
    ProtocolType string 0+
    ProtocolData string 0+
    Members []DescribedGroupMember 0+
      MemberId string 0+
      GroupInstanceId string 4+ nullable=4+ default=null
      ClientId string 0+
      ClientHost string 0+
      MemberMetadata bytes 0+
      MemberAssignment bytes 0+
    AuthorizedOperations int32 3+ default=-2147483648
ConsumerGroupHeartbeatRequest 68 0-1 flexible=0+
  GroupId string 0+
  MemberId string 0+
  MemberEpoch int32 0+
  InstanceId string 0+ nullable=0+ default=null
  RackId string 0+ nullable=0+ default=null
  RebalanceTimeoutMs int32 0+ default=-1
  SubscribedTopicNames []string 0+ nullable=0+ default=null
  SubscribedTopicRegex string 1+ nullable=1+ default=null
  ServerAssignor string 0+ nullable=0+ default=null
  TopicPartitions []TopicPartitions 0+ nullable=0+ default=null
    TopicId uuid 0+
    Partitions []int32 0+
ConsumerGroupHeartbeatResponse 68 0-1 flexible=0+
  ThrottleTimeMs int32 0+
  ErrorCode int16 0+
  ErrorMessage string 0+ nullable=0+ default=null
  MemberId string 0+ nullable=0+ default=null
  MemberEpoch int32 0+
  HeartbeatIntervalMs int32 0+
  Assignment Assignment 0+ nullable=0+ default=null
    TopicPartitions []TopicPartitions 0+
      TopicId uuid 0+
      Partitions []int32 0+
GetTelemetrySubscriptionsRequest 71 0 flexible=0+
  ClientInstanceId uuid 0+
GetTelemetrySubscriptionsResponse 71 0 flexible=0+
  ThrottleTimeMs int32 0+
  ErrorCode int16 0+
  ClientInstanceId uuid 0+
  SubscriptionId int32 0+
  AcceptedCompressionTypes []int8 0+
  PushIntervalMs int32 0+
  TelemetryMaxBytes int32 0+
  DeltaTemporality bool 0+
  RequestedMetrics []string 0+
PushTelemetryRequest 72 0 flexible=0+
  ClientInstanceId uuid 0+
  SubscriptionId int32 0+
  Terminating bool 0+
  CompressionType int8 0+
  Metrics bytes 0+
PushTelemetryResponse 72 0 flexible=0+
  ThrottleTimeMs int32 0+
  ErrorCode int16 0+
ConsumerProtocolSubscription -1 0-3 flexible=none
  Topics []string 0+
  UserData bytes 0+ nullable=0+ default=null
  OwnedPartitions []TopicPartition 1+
    Topic string 1+
    Partitions []int32 1+
  GenerationId int32 2+ default=-1
  RackId string 3+ nullable=3+ default=null
ConsumerProtocolAssignment -1 0-3 flexible=none
  AssignedPartitions []TopicPartition 0+
    Topic string 0+
    Partitions []int32 0+
  UserData bytes 0+ nullable=0+ default=null
"""
