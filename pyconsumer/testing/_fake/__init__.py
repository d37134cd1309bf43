"""An in-process scripted Kafka cluster for tests (in the spirit of franz-go's kfake), shipped
as :class:`pyconsumer.testing.FakeCluster` so code built on pyconsumer can be tested without a
broker, Java or Docker.

``FakeCluster(n_brokers)`` listens on 127.0.0.1 (one free port per broker, node ids 0..n-1),
decodes requests with pyconsumer.protocol and answers them with one handler per API (one module
each, below), keeping the state a broker keeps: topics (id, partitions, leader and leader epoch
per partition), a log per partition, committed offsets, a classic group coordinator per group
(JoinGroup/SyncGroup/Heartbeat/LeaveGroup, session expiry, static members, generation checks on
OffsetCommit) following Apache Kafka's GroupCoordinator, and a consumer protocol (KIP-848)
coordinator (:class:`ConsumerGroup`). Produce is not spoken (pyconsumer has no Produce codec):
tests append data with :meth:`FakeCluster.produce`, whose record batches are built by
aiokafka's independent encoder (the ``test`` extra, imported only then; without it produce()
raises MissingExtraError), or append their own batches with :meth:`FakeCluster.append_batch`.

Threads: one accept thread per broker, one thread per connection (requests on a connection
are answered in order, one at a time, as Kafka does) and a ticker for session and rebalance
timeouts. Handlers run under one cluster lock (a Condition); a handler that must wait
(JoinGroup until the rebalance completes, SyncGroup until the leader's assignment, Fetch until
data or max_wait_ms) waits on it, always with a deadline.

Fetch sessions (KIP-227) as Kafka's FetchManager keeps them, per broker: a full fetch with
epoch 0 opens one (``fetch_sessions=False``, or ``max_fetch_sessions`` reached, answers
session id 0), an incremental one must carry the session's epoch (else
INVALID_FETCH_SESSION_EPOCH; an unknown id gets FETCH_SESSION_ID_NOT_FOUND), adds or updates
the partitions it lists, drops its ``forgotten_topics_data`` and is answered with only the
partitions that have records, an error or new watermarks; every session partition is read,
in the session's order, a partition that returned records moving to its end. A full fetch
naming a session closes it (epoch -1: without opening another). :meth:`evict_fetch_sessions`
drops sessions as a full cache would. Follower fetching (KIP-392): :meth:`set_rack`,
:meth:`set_follower`; a leader asked by a consumer (Fetch v11+) whose ``rack_id`` is a
follower's rack answers that follower as ``preferred_read_replica`` with no records, and a
follower serves consumer fetches up to its own end offset (OFFSET_OUT_OF_RANGE past it).

Faults: :meth:`inject` (the next N requests of an API get an error), :meth:`delay`,
:meth:`drop_next` (close the connection instead of answering), :meth:`control` (a test's own
handler), :meth:`move_coordinator`, :meth:`move_leader`, :meth:`stop_broker` /
:meth:`start_broker`, :meth:`truncate`, :meth:`delete_records`. Every request is logged
(:attr:`requests`, :meth:`wait_for_request`). Exceptions inside the fake land in
:attr:`errors`; a test fixture should assert it stays empty. :data:`FAST_CONSUMER` holds
consumer settings with short timers (joins, retries and empty fetches take milliseconds).

Example::

    with FakeCluster(3, topics={"t": 4}) as cluster:        # t-i led by broker i % 3
        cluster.produce(TopicPartition("t", 0), [(b"key", b"value")])
        cluster.inject(ApiKey.HEARTBEAT, ErrorCode.REBALANCE_IN_PROGRESS, count=1)
        consumer = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g")
        ...
        cluster.move_coordinator("g", 2)                    # broker 2 takes the group over
        join = cluster.wait_for_request(lambda r: r.api == ApiKey.JOIN_GROUP and r.broker == 2)

The package's modules, each layer importing only the layers below it:

    client                  RawClient: a connection speaking exact versions, for tests of the fake
    cluster                 FakeCluster: the state plus listeners, dispatch, faults, test methods
    apis                    the dispatch table: API key -> (handler, error shape)
    api_versions, metadata, find_coordinator, fetch, list_offsets, offset_for_leader_epoch,
    offset_commit, offset_fetch, join_group, sync_group, heartbeat, leave_group,
    describe_groups, consumer_group_heartbeat, telemetry
                            one module per API: ``handle(state, broker, request)`` and
                            ``error(state, broker, request, code)``
    classic                 the classic group coordinator's rebalance transitions
    state                   ClusterState: what the handlers read and change, under one lock
    log, groups, consumer_group, sessions, listener, faults, client_metrics
                            topics/partitions/batches; classic groups and committed offsets;
                            the KIP-848 coordinator; fetch sessions; a broker's sockets; rules;
                            the KIP-714 subscription and the pushes received
    common                  Request, Body, the hang-up signal, constants
"""
from __future__ import annotations

from .client import RawClient
from .client_metrics import Push, TelemetrySubscriptionConfig
from .cluster import FakeCluster
from .common import FAST_CONSUMER, Request
from .consumer_group import ConsumerGroup
from .sessions import FetchSession

__all__ = ["FAST_CONSUMER", "ConsumerGroup", "FakeCluster", "FetchSession", "Push", "RawClient",
           "Request", "TelemetrySubscriptionConfig"]
