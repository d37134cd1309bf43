"""Follower fetching (KIP-392): which node each partition is fetched from.

A partition whose Fetch answer names a ``preferred_read_replica`` is fetched from that node
until ``metadata.max.age.ms`` has passed, its leader changes, the node leaves the metadata, a
fetch to it fails, or it answers with an error (then the leader is asked again). The request
side picks nodes here; the buffer sets a replica from an answer and clears it on errors.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import NamedTuple

from pyconsumer.config import ConsumerConfig
from pyconsumer.net.client import NetworkClient
from pyconsumer.structs import PartitionInfo, TopicPartition

log = logging.getLogger(__name__)


class _ReadReplica(NamedTuple):
    """A preferred read replica (KIP-392) and what it is valid for."""

    node: int
    expires_at: float                     # monotonic seconds
    leader: tuple[int, int | None]        # the partition's (leader, leader epoch) then


class ReadReplicas:
    """The preferred read replica of each partition that has one."""

    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 clock: Callable[[], float]) -> None:
        self.client = client
        self.config = config
        self._clock = clock
        self._replicas: dict[TopicPartition, _ReadReplica] = {}
        #: bumped on every change of the replicas: with none set, a partition's node follows
        #: the metadata alone, so the request side can keep the nodes it computed
        self.version = 0

    def __bool__(self) -> bool:
        return bool(self._replicas)

    def keep(self, wanted: Callable[[TopicPartition], bool]) -> None:
        """Forget the replicas of the partitions ``wanted`` rejects (no longer assigned)."""
        if self._replicas:
            kept = {tp: r for tp, r in self._replicas.items() if wanted(tp)}
            if len(kept) != len(self._replicas):
                self._replicas = kept
                self.version += 1

    def node_for(self, tp: TopicPartition, info: PartitionInfo, now: float) -> int:
        """Java selectReadReplica: the preferred read replica while it is valid, else the
        leader."""
        replica = self._replicas.get(tp)
        if replica is None:
            return info.leader
        if now >= replica.expires_at or replica.leader != (info.leader, info.leader_epoch):
            del self._replicas[tp]                    # expired, or a new leader
            self.version += 1
            return info.leader
        if replica.node not in self.client.metadata.brokers \
                or replica.node in info.offline_replicas:
            log.debug("read replica %d of %s is offline or unknown; fetching from the leader",
                      replica.node, tp)
            del self._replicas[tp]
            self.version += 1
            self.client.metadata.request_update()
            return info.leader
        return replica.node

    def set(self, tp: TopicPartition, node: int) -> None:
        """A response named ``node`` the replica to fetch ``tp`` from; it holds for
        metadata.max.age.ms from the first time it was named (Java)."""
        old = self._replicas.get(tp)
        if old is not None and old.node == node:
            return
        info = self.client.metadata.partition(tp)
        if info is None or info.leader < 0:
            return
        log.debug("fetching %s from read replica %d (leader %d)", tp, node, info.leader)
        self.version += 1
        self._replicas[tp] = _ReadReplica(
            node, self._clock() + self.config.metadata_max_age_ms / 1000.0,
            (info.leader, info.leader_epoch))

    def clear(self, tp: TopicPartition) -> bool:
        """Fetch ``tp`` from its leader again; True if a read replica was set."""
        if self._replicas.pop(tp, None) is None:
            return False
        self.version += 1
        return True
