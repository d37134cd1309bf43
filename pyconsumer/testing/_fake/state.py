"""The state a Kafka cluster keeps, as the API handlers read and change it: the brokers,
topics and their logs, classic and consumer protocol groups with their committed offsets,
fetch sessions, racks and group coordinators, and the settings the handlers obey. Everything
is read and changed under ``cond`` (one lock for the cluster); a handler that must wait does
so with :meth:`ClusterState.wait`. :class:`~pyconsumer.testing.FakeCluster` is this state
with the network, the dispatch, the faults and the methods tests call."""
from __future__ import annotations

import itertools
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable

from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey
from pyconsumer.structs import TopicPartition

from .client_metrics import Telemetry
from .common import Body, Hangup, Request
from .consumer_group import ConsumerGroup
from .groups import Group
from .listener import Broker
from .log import Partition, Topic
from .sessions import FetchSession


#: one API's handler as the cluster holds it: (the broker asked, the request) -> the answer
Handler = Callable[[Broker, Request], Body]


class ClusterState:
    def __init__(self, *, max_versions: dict[ApiKey, int] | None, min_session_timeout_ms: int,
                 max_session_timeout_ms: int, initial_rebalance_delay_ms: int,
                 fetch_wait_cap_s: float, auto_create_topics: bool, fetch_sessions: bool,
                 max_fetch_sessions: int) -> None:
        self.cond = threading.Condition(threading.RLock())
        self.brokers: list[Broker] = []
        #: the APIs served (the cluster fills it); ApiVersions advertises their versions
        self.handlers: dict[ApiKey, Handler] = {}
        self.topics: dict[str, Topic] = {}
        self.groups: dict[str, Group] = {}
        #: consumer protocol (KIP-848) groups, see consumer_group.py
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self.max_versions = dict(max_versions or {})
        self.min_session_ms, self.max_session_ms = min_session_timeout_ms, max_session_timeout_ms
        self.initial_rebalance_delay = initial_rebalance_delay_ms / 1000.0
        self.fetch_wait_cap = fetch_wait_cap_s
        self.auto_create_topics = auto_create_topics
        #: False: every fetch is sessionless (a broker whose session cache has no room)
        self.fetch_sessions = fetch_sessions
        self.max_fetch_sessions = max_fetch_sessions
        self.sessions: dict[int, FetchSession] = {}
        self.racks: dict[int, str] = {}
        #: bumped on every append / leader move: wakes waiting fetches
        self.data_version = 0
        self._session_ids = itertools.count(1001)
        self._coordinators: dict[str, int] = {}
        self._closed = threading.Event()
        #: the KIP-714 side (None: the APIs are not offered), set by the cluster
        self.telemetry: Telemetry | None = None

    # ------------------------------------------------------------------ topics

    def create_topic(self, name: str, partitions: int = 1,
                     leaders: Iterable[int] | None = None) -> Topic:
        """Partition i led by ``leaders[i]`` (default: spread round-robin over the brokers)."""
        with self.cond:
            if name in self.topics:
                raise ValueError(f"topic {name!r} already exists")
            lead = list(leaders) if leaders is not None else \
                [i % len(self.brokers) for i in range(partitions)]
            if len(lead) != partitions:
                raise ValueError(f"{partitions} partitions but {len(lead)} leaders for {name!r}")
            topic = Topic(name, uuid.uuid4(), [Partition(n) for n in lead])
            self.topics[name] = topic
            return topic

    def partition(self, tp: TopicPartition) -> Partition:
        t = self.topics.get(tp.topic)
        if t is None or not 0 <= tp.partition < len(t.partitions):
            raise KeyError(f"no partition {tp} in the fake cluster")
        return t.partitions[tp.partition]

    def lookup_topic(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        """The topic by name, or (``name`` None) by id."""
        if name is not None:
            return self.topics.get(name)
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def data_changed(self) -> None:
        """The logs or their leaders changed: wake whatever waits on them."""
        self.data_version += 1
        self.cond.notify_all()

    def check_partition(self, b: Broker, topic: Topic | None, index: int, current_epoch: int,
                        unknown: int = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        follower_ok: bool = False) -> tuple[int, Partition | None]:
        """The leader checks every partition request goes through: (error code, partition)."""
        if topic is None or not 0 <= index < len(topic.partitions):
            return unknown, None
        p = topic.partitions[index]
        # Kafka's order (Partition.localLogWithEpochOrThrow): the epoch, then leadership
        if 0 <= current_epoch < p.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, p
        if current_epoch > p.epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH, p
        if p.leader != b.node_id and not (follower_ok and b.node_id in p.followers):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, p
        return 0, p

    def new_session_id(self) -> int:
        return next(self._session_ids)

    # ------------------------------------------------------------------ groups

    def coordinator_of(self, group_id: str) -> int:
        with self.cond:
            node = self._coordinators.get(group_id)
            if node is None:
                node = zlib.crc32(group_id.encode()) % len(self.brokers)
            return node

    def group(self, group_id: str) -> Group | None:
        with self.cond:
            return self.groups.get(group_id)

    def ensure_group(self, group_id: str) -> Group:
        """The classic group (where offsets are kept, for either protocol), created if needed."""
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """The consumer protocol group (created empty if needed: set its timing first)."""
        with self.cond:
            g = self.consumer_groups.get(group_id)
            if g is None:
                g = self.consumer_groups[group_id] = ConsumerGroup(group_id)
            return g

    # ------------------------------------------------------------------ serving

    def advertised(self) -> dict[ApiKey, tuple[int, int]]:
        out = {}
        for api in self.handlers:
            lo, hi = SUPPORTED_VERSIONS[api]
            hi = min(hi, self.max_versions.get(api, hi))
            if hi >= lo:
                out[api] = (lo, hi)
        return out

    def wait(self, b: Broker, pred: Callable[[], bool], timeout: float) -> bool:
        """Wait under the lock until ``pred()``; False at the timeout. A stopped broker or a
        closed cluster hangs up instead."""
        deadline = time.monotonic() + timeout
        while not pred():
            if not b.running or self._closed.is_set():
                raise Hangup()
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.cond.wait(min(left, 0.05))
        return True


__all__ = ["ClusterState", "Handler"]
