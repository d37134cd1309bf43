"""Committed offsets with manual assignment and a group.id: OffsetFetch/OffsetCommit through
the group coordinator (found with FindCoordinator), sync and async commits, auto-commit, resume
from the committed position, and a coordinator that moves."""
from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from pyconsumer import KafkaConsumer, OffsetAndMetadata, TopicPartition
from pyconsumer.consumer.group.coordinator import COORDINATOR_ID_BASE
from pyconsumer.errors import IllegalStateError, KafkaError
from pyconsumer.testing import MockCluster, TansuBroker, produce, sample_records


def offsets_of(consumer: KafkaConsumer, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
    return {tp: (None if om is None else om.offset) for tp, om in consumer.committed(tps).items()}


def drain(consumer: KafkaConsumer, count: int, **kw: object) -> dict[TopicPartition, list[int]]:
    got: dict[TopicPartition, list[int]] = {}
    deadline = time.monotonic() + 20
    while sum(map(len, got.values())) < count and time.monotonic() < deadline:
        for tp, recs in consumer.poll(timeout_ms=300, **kw).items():  # type: ignore[arg-type]
            got.setdefault(tp, []).extend(r.offset for r in recs)
    return got


@pytest.fixture
def topic(mock_cluster: MockCluster) -> list[TopicPartition]:
    mock_cluster.create_topic("orders", 2)
    produce(mock_cluster.bootstrap, "orders", sample_records(200, partitions=2))
    return [TopicPartition("orders", 0), TopicPartition("orders", 1)]


def test_commit_sync_and_committed(mock_cluster: MockCluster, topic: list[TopicPartition]) -> None:
    p0, p1 = topic
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, group_id="g-sync",
                       auto_offset_reset="earliest", enable_auto_commit=False) as c:
        c.assign([p0])
        assert offsets_of(c, topic) == {p0: None, p1: None}
        got = drain(c, 100)
        assert got == {p0: list(range(100))}
        c.commit()
        assert offsets_of(c, topic) == {p0: 100, p1: None}
        c.commit({p1: OffsetAndMetadata(42, "checkpoint-7"), p0: 60})
        committed = c.committed(topic)
        assert committed[p1] == OffsetAndMetadata(42, "checkpoint-7", committed[p1].leader_epoch)  # type: ignore[union-attr]
        assert committed[p0] is not None and committed[p0].offset == 60
        with pytest.raises(ValueError, match="must be an OffsetAndMetadata or int >= 0"):
            c.commit({p0: -5})


def test_a_new_consumer_resumes_at_the_committed_offset(mock_cluster: MockCluster,
                                                        topic: list[TopicPartition]) -> None:
    p0, p1 = topic
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, group_id="g-resume",
                       enable_auto_commit=False) as c:
        c.commit({p0: 37})
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, group_id="g-resume",
                       auto_offset_reset="earliest", enable_auto_commit=False) as c:
        c.assign(topic)
        assert c.position(p0) == 37          # committed
        assert c.position(p1) == 0           # none committed: auto.offset.reset
        got = drain(c, 163)
        assert got[p0] == list(range(37, 100)) and got[p1] == list(range(100))


def test_auto_commit_on_close_and_by_interval(mock_cluster: MockCluster,
                                              topic: list[TopicPartition]) -> None:
    p0, p1 = topic
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, group_id="g-auto",
                       auto_offset_reset="earliest", auto_commit_interval_ms=100) as c:
        c.assign(topic)
        drain(c, 200, max_records=20)
        with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, group_id="g-auto") as other:
            deadline = time.monotonic() + 10
            while offsets_of(other, topic) != {p0: 100, p1: 100} and time.monotonic() < deadline:
                c.poll(timeout_ms=150)       # the auto-commit goes out from poll()
            assert offsets_of(other, topic) == {p0: 100, p1: 100}
        c.seek(p0, 10)
    # closing committed the position the seek left
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, group_id="g-auto") as other:
        assert offsets_of(other, topic) == {p0: 10, p1: 100}


def test_commit_async_callbacks_run_in_order(mock_cluster: MockCluster,
                                             topic: list[TopicPartition]) -> None:
    p0, _ = topic
    calls: list[tuple[dict[TopicPartition, int], KafkaError | None]] = []

    def record(offsets: dict[TopicPartition, OffsetAndMetadata], error: KafkaError | None) -> None:
        calls.append(({tp: om.offset for tp, om in offsets.items()}, error))

    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, group_id="g-async",
                       auto_offset_reset="earliest", enable_auto_commit=False) as c:
        c.assign([p0])
        c.commit_async({p0: 5}, record)
        c.commit_async({p0: 6}, record)
        c.commit_async({p0: 7}, record)
        deadline = time.monotonic() + 10
        while len(calls) < 3 and time.monotonic() < deadline:
            c.poll(timeout_ms=100)
        assert calls == [({p0: 5}, None), ({p0: 6}, None), ({p0: 7}, None)]
        assert offsets_of(c, [p0]) == {p0: 7}


def test_commit_needs_a_group(mock_cluster: MockCluster) -> None:
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap) as c:
        with pytest.raises(IllegalStateError, match="commit\\(\\) needs a group.id"):
            c.commit({TopicPartition("orders", 0): 1})
        with pytest.raises(IllegalStateError, match="committed\\(\\) needs a group.id"):
            c.committed([TopicPartition("orders", 0)])


def test_coordinator_moves_and_goes_down(mock_cluster: MockCluster,
                                         topic: list[TopicPartition]) -> None:
    p0, _ = topic
    mock_cluster.set_coordinator("group", "g-move", 1)
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap, group_id="g-move",
                       enable_auto_commit=False, reconnect_backoff_ms=20,
                       reconnect_backoff_max_ms=100, request_timeout_ms=3000) as c:
        c.commit({p0: 11})
        coordinator = c._coordinator
        assert coordinator is not None and coordinator.coordinator == COORDINATOR_ID_BASE - 1
        # the mock serves commits on any broker, so say NOT_COORDINATOR (16) explicitly
        mock_cluster.set_coordinator("group", "g-move", 2)
        mock_cluster.push_request_errors(8, 16)
        c.commit({p0: 12})
        assert coordinator.coordinator == COORDINATOR_ID_BASE - 2
        assert offsets_of(c, [p0]) == {p0: 12}
        mock_cluster.set_coordinator("group", "g-move", 3)
        mock_cluster.broker_down(2)                              # the coordinator dies
        c.commit({p0: 13})
        assert coordinator.coordinator == COORDINATOR_ID_BASE - 3
        assert offsets_of(c, [p0]) == {p0: 13}


def test_tansu_standalone_commit_and_resume(tansu: TansuBroker,
                                            make_tansu_topic: Callable[..., str]) -> None:
    name = make_tansu_topic(1)
    tp = TopicPartition(name, 0)
    produce(tansu.bootstrap, name, sample_records(50, partitions=[0]))
    group = f"g-{name}"
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, group_id=group,
                       auto_offset_reset="earliest") as c:
        c.assign([tp])
        assert drain(c, 20, max_records=20) == {tp: list(range(20))}
    # auto-commit on close; Tansu drops commit metadata but keeps the offset
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, group_id=group,
                       auto_offset_reset="earliest") as c:
        assert offsets_of(c, [tp]) == {tp: 20}
        c.assign([tp])
        assert drain(c, 30) == {tp: list(range(20, 50))}
