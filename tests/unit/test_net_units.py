"""Unit tests of the network layer's pieces that need no socket: backoff, futures, the
metadata cache (leader epochs, unknown topics, full vs partial refresh, age)."""
from __future__ import annotations

import random
import uuid

import pytest

from pyconsumer.errors import KafkaError, UnknownTopicOrPartitionError
from pyconsumer.net.backoff import ExponentialBackoff
from pyconsumer.net.future import Future
from pyconsumer.net.metadata import ClusterMetadata
from pyconsumer.structs import PartitionInfo, TopicPartition


# ----------------------------------------------------------------------------- backoff

def test_backoff_without_jitter_doubles_to_the_ceiling() -> None:
    b = ExponentialBackoff(50, 1000, jitter=0)
    assert [b.backoff_ms(n) for n in range(7)] == [50, 100, 200, 400, 800, 1000, 1000]


def test_backoff_jitter_stays_within_20_percent_and_under_the_ceiling() -> None:
    b = ExponentialBackoff(50, 1000, rng=random.Random(7))
    for attempt in range(12):
        base = min(50 * 2 ** attempt, 1000)
        for _ in range(200):
            v = b.backoff_ms(attempt)
            assert base * 0.8 <= v <= min(base * 1.2, 1000)
    values = {round(b.backoff_ms(0), 6) for _ in range(50)}
    assert len(values) > 40                     # actually random


def test_backoff_constant_when_max_not_above_initial() -> None:
    assert ExponentialBackoff(100, 100).backoff_ms(5) == 100
    assert ExponentialBackoff(100, 10).backoff_ms(3) == 10    # Java >= 3.7: a constant maximum


# ----------------------------------------------------------------------------- future

def test_future_callbacks_and_result() -> None:
    f: Future[int] = Future()
    seen: list[object] = []
    f.add_callback(lambda x: seen.append(x.value))
    assert not f.done
    with pytest.raises(RuntimeError, match="not completed"):
        f.result()
    f.success(3)
    f.add_callback(lambda x: seen.append("late"))
    assert seen == [3, "late"] and f.result() == 3 and f.succeeded()
    with pytest.raises(RuntimeError, match="already completed"):
        f.failure(KafkaError("x"))
    g: Future[int] = Future()
    g.failure(KafkaError("boom"))
    assert g.failed()
    with pytest.raises(KafkaError, match="boom"):
        g.result()


# ----------------------------------------------------------------------------- metadata

def partition(index: int, leader: int, epoch: int = 0, error: int = 0) -> dict[str, object]:
    return {"error_code": error, "partition_index": index, "leader_id": leader,
            "leader_epoch": epoch, "replica_nodes": [1, 2], "isr_nodes": [leader],
            "offline_replicas": []}


def response(*topics: dict[str, object]) -> dict[str, object]:
    return {"brokers": [{"node_id": 1, "host": "a", "port": 9092, "rack": "r1"},
                        {"node_id": 2, "host": "b", "port": 9093, "rack": None}],
            "cluster_id": "c", "controller_id": 2, "topics": list(topics)}


def topic(name: str, *parts: dict[str, object], error: int = 0, internal: bool = False
          ) -> dict[str, object]:
    return {"error_code": error, "name": name, "topic_id": uuid.UUID(int=7),
            "is_internal": internal, "partitions": list(parts)}


def test_metadata_starts_from_bootstrap_nodes() -> None:
    md = ClusterMetadata([("h1", 1), ("h2", 2)])
    assert [(n.node_id, n.host, n.port) for n in md.nodes()] == [(-1, "h1", 1), (-2, "h2", 2)]
    assert not md.bootstrapped and md.time_to_next_update_ms() == 0


def test_metadata_update_and_queries() -> None:
    clock = [100.0]
    md = ClusterMetadata([("h", 1)], max_age_ms=1000, clock=lambda: clock[0])
    md.update(response(topic("t", partition(1, 2, 3), partition(0, 1, 5)),
                       topic("__consumer_offsets", partition(0, 1), internal=True)), None)
    assert [n.node_id for n in md.nodes()] == [1, 2]
    assert md.node(1).rack == "r1" and md.node(-1).host == "h"   # bootstrap still known
    assert md.partitions_for("t") == [
        PartitionInfo("t", 0, 1, (1, 2), (1,), (), 5), PartitionInfo("t", 1, 2, (1, 2), (2,), (), 3)]
    assert md.leader_for(TopicPartition("t", 1)) == 2
    assert md.leader_for(TopicPartition("t", 9)) is None
    assert md.topics["__consumer_offsets"].is_internal
    assert md.topics["t"].topic_id == uuid.UUID(int=7)
    assert md.cluster_id == "c" and md.controller_id == 2
    assert md.time_to_next_update_ms() == 1000
    clock[0] += 0.4
    assert md.time_to_next_update_ms() == pytest.approx(600)
    md.request_update()
    assert md.time_to_next_update_ms() == 0


def test_metadata_keeps_a_newer_leader_epoch() -> None:
    md = ClusterMetadata([("h", 1)])
    md.update(response(topic("t", partition(0, 2, epoch=7))), None)
    # a broker that has not heard of epoch 7 yet answers with epoch 6: ignored, re-asked
    md.update(response(topic("t", partition(0, 1, epoch=6))), None)
    assert md.leader_for(TopicPartition("t", 0)) == 2
    assert md.partitions_for("t")[0].leader_epoch == 7
    assert md.update_requested()
    md.update(response(topic("t", partition(0, 1, epoch=8))), None)
    assert md.leader_for(TopicPartition("t", 0)) == 1 and not md.update_requested()


def test_leader_without_epoch_and_no_leader() -> None:
    md = ClusterMetadata([("h", 1)])
    md.update(response(topic("t", partition(0, -1, epoch=-1))), None)
    assert md.partitions_for("t")[0].leader_epoch is None
    assert md.leader_for(TopicPartition("t", 0)) is None


def test_full_refresh_forgets_deleted_topics_partial_does_not() -> None:
    md = ClusterMetadata([("h", 1)])
    md.update(response(topic("a", partition(0, 1)), topic("b", partition(0, 1))), None)
    md.update(response(topic("a", partition(0, 2))), ["a"])
    assert set(md.topics) == {"a", "b"}
    md.update(response(topic("a", partition(0, 2))), None)
    assert set(md.topics) == {"a"}


def test_topic_errors() -> None:
    md = ClusterMetadata([("h", 1)])
    md.update(response(topic("gone", partition(0, 1))), None)
    md.update(response(topic("gone", error=3), topic("busy", error=5)), ["gone", "busy"])
    assert "gone" not in md.topics
    err = md.topic_error("gone")
    assert isinstance(err, UnknownTopicOrPartitionError) and "topic 'gone'" in str(err)
    assert md.topic_error("busy").retriable
    md.update(response(topic("busy", partition(0, 1))), ["busy"])
    assert md.topic_error("busy") is None


def test_top_level_error_is_raised_and_cache_kept() -> None:
    md = ClusterMetadata([("h", 1)])
    md.update(response(topic("a", partition(0, 1))), None)
    bad = response()
    bad["error_code"] = 58
    with pytest.raises(KafkaError, match="SASL_AUTHENTICATION_FAILED"):
        md.update(bad, None)
    assert set(md.topics) == {"a"}
