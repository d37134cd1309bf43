"""fetch/replicas.py: the KIP-392 read replica of each partition, the seam the request side
(which node to fetch from) and the buffer (set from an answer, cleared on errors) share."""
from __future__ import annotations

from typing import Any, cast

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch.replicas import ReadReplicas
from pyconsumer.net.client import NetworkClient
from pyconsumer.structs import PartitionInfo, TopicPartition

TP = TopicPartition("t", 0)


class _Metadata:
    def __init__(self) -> None:
        self.brokers: dict[int, object] = {0: object(), 1: object(), 2: object()}
        self.infos = {TP: PartitionInfo("t", 0, 0, (0, 1, 2), (0, 1, 2), (), 5)}
        self.updates = 0

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        return self.infos.get(tp)

    def request_update(self) -> None:
        self.updates += 1


class _Client:
    def __init__(self) -> None:
        self.metadata = _Metadata()


def make(now: list[float]) -> tuple[ReadReplicas, _Metadata]:
    client = _Client()
    config = ConsumerConfig(bootstrap_servers="localhost:9092", metadata_max_age_ms=1000)
    return ReadReplicas(cast(NetworkClient, client), config, lambda: now[0]), client.metadata


def test_a_replica_holds_for_metadata_max_age_then_the_leader_again() -> None:
    now = [100.0]
    replicas, md = make(now)
    info = md.infos[TP]
    assert replicas.node_for(TP, info, now[0]) == 0            # none chosen: the leader
    replicas.set(TP, 2)
    assert replicas.node_for(TP, info, 100.9) == 2
    now[0] = 100.5
    replicas.set(TP, 2)                                         # named again: still from 100.0
    assert replicas.node_for(TP, info, 100.99) == 2
    assert replicas.node_for(TP, info, 101.0) == 0              # expired: forgotten
    assert replicas.node_for(TP, info, 101.1) == 0 and not replicas.clear(TP)


def test_a_new_leader_an_offline_or_unknown_node_or_a_clear_ends_the_choice() -> None:
    now = [0.0]
    replicas, md = make(now)
    info = md.infos[TP]
    replicas.set(TP, 1)
    assert replicas.node_for(TP, info._replace(leader_epoch=6), 0.1) == 0   # a new leader epoch
    replicas.set(TP, 1)
    assert replicas.node_for(TP, info._replace(offline_replicas=(1,)), 0.1) == 0
    assert md.updates == 1                                      # metadata looked up again
    replicas.set(TP, 1)
    del md.brokers[1]
    assert replicas.node_for(TP, info, 0.1) == 0 and md.updates == 2
    md.brokers[1] = object()
    replicas.set(TP, 1)
    assert replicas.clear(TP) and replicas.node_for(TP, info, 0.1) == 0


def test_no_replica_without_a_leader_and_keep_drops_the_unwanted() -> None:
    now = [0.0]
    replicas, md = make(now)
    other = TopicPartition("t", 1)
    md.infos[other] = PartitionInfo("t", 1, -1, (0, 1), (0, 1))
    replicas.set(other, 1)                                      # no leader: not recorded
    assert not replicas.clear(other)
    replicas.set(TP, 1)
    replicas.keep(lambda tp: tp != TP)
    assert replicas.node_for(TP, md.infos[TP], 0.1) == 0
    kept: dict[str, Any] = {}
    replicas.set(TP, 2)
    replicas.keep(lambda tp: kept.setdefault("asked", tp) == TP)
    assert kept["asked"] == TP and replicas.node_for(TP, md.infos[TP], 0.1) == 2
