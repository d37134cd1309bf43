"""The rest of the API: group_metadata(), enforce_rebalance(), list_topics(), highwater(),
poll()'s refusal of a float timeout, and what partitions_for_topic() creates.

Groups against the in-process FakeCluster (its generations count up, as Kafka's, and its
request log shows the JoinGroup reason); records and topics against Tansu and the librdkafka
mock cluster with data written by confluent-kafka.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import IllegalStateError
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import ConsumerGroupMetadata
from pyconsumer.testing import FakeCluster, MockCluster, TansuBroker, TestRecord, produce

TP = TopicPartition
FAST: dict[str, Any] = dict(fetch_max_wait_ms=100, heartbeat_interval_ms=100,
                            session_timeout_ms=3000, retry_backoff_ms=20,
                            reconnect_backoff_ms=20, auto_offset_reset="earliest")


class Listener:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[TopicPartition]]] = []

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("revoked", sorted(partitions)))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.calls.append(("assigned", sorted(partitions)))


def poll_until(c: KafkaConsumer, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        c.poll(timeout_ms=50)


# ----------------------------------------------------------------------------- group_metadata


def test_group_metadata_without_a_group_id_is_an_illegal_state() -> None:
    with KafkaConsumer(bootstrap_servers="127.0.0.1:9") as c:
        with pytest.raises(IllegalStateError) as info:
            c.group_metadata()
        assert str(info.value) == ("group_metadata() needs a group.id: this consumer is not in "
                                   "a consumer group")
        with pytest.raises(IllegalStateError, match=r"^enforce_rebalance\(\) needs a group.id"):
            c.enforce_rebalance()
    with pytest.raises(IllegalStateError, match="^this consumer is closed$"):
        c.group_metadata()


def test_group_metadata_before_joining_connects_to_nothing() -> None:
    with KafkaConsumer(bootstrap_servers="127.0.0.1:9", group_id="g",
                       group_instance_id="i-1") as c:
        assert c.group_metadata() == ConsumerGroupMetadata("g", -1, "", "i-1")
        assert c._client is None


def test_group_metadata_follows_the_generation_and_enforce_rebalance_rejoins() -> None:
    with FakeCluster(1, topics={"t": 2}) as cluster:
        listener = Listener()
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **FAST) as c:
            c.subscribe(["t"], listener=listener)
            assert c.group_metadata() == ConsumerGroupMetadata("g", -1, "", None)
            poll_until(c, lambda: bool(c.assignment()))
            group = cluster.group("g")
            assert group is not None
            [member] = list(group.members)
            first = c.group_metadata()
            assert first == ConsumerGroupMetadata("g", group.generation, member, None)
            assert first.generation_id == 1
            mark = cluster.mark()

            c.enforce_rebalance("scaling out")
            assert cluster.requests_of(ApiKey.JOIN_GROUP, mark) == []   # nothing until poll
            assert c.group_metadata() == first
            poll_until(c, lambda: c.group_metadata().generation_id == 2)
            assert c.group_metadata() == ConsumerGroupMetadata("g", 2, member, None)
            [join] = cluster.requests_of(ApiKey.JOIN_GROUP, mark)
            assert join.version >= 8 and join.body["reason"] == "scaling out"
            assert join.body["member_id"] == member

            mark = cluster.mark()
            c.enforce_rebalance()                               # Java's default reason
            poll_until(c, lambda: c.group_metadata().generation_id == 3)
            [join] = cluster.requests_of(ApiKey.JOIN_GROUP, mark)
            assert join.body["reason"] == "rebalance enforced by user"
        both = [TP("t", 0), TP("t", 1)]
        # eager rebalances: each revokes and reassigns; close() revokes last
        assert listener.calls == [("assigned", both)] + [("revoked", both),
                                                         ("assigned", both)] * 2 + [
            ("revoked", both)]
        assert cluster.errors == []


def test_enforce_rebalance_with_assign_does_nothing() -> None:
    with FakeCluster(1, topics={"t": 1}) as cluster:
        cluster.produce(TP("t", 0), [(b"k", b"v")])
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g", **FAST) as c:
            c.enforce_rebalance("before anything")
            c.assign([TP("t", 0)])
            c.enforce_rebalance("assigned")
            got = []
            deadline = time.monotonic() + 5
            while not got and time.monotonic() < deadline:
                got += [(r.offset, r.value) for r in c.poll(timeout_ms=100).get(TP("t", 0), [])]
            assert got == [(0, b"v")]
            assert c.group_metadata() == ConsumerGroupMetadata("g", -1, "", None)
            with pytest.raises(TypeError, match="reason must be a str or None, got 5"):
                c.enforce_rebalance(5)  # type: ignore[arg-type]
        assert cluster.requests_of(ApiKey.JOIN_GROUP) == []
        assert cluster.errors == []


# ----------------------------------------------------------------------------- topics


def test_list_topics_is_java_list_topics_and_holds_kafka_python_topics(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    a, b = make_tansu_topic(2), make_tansu_topic(1)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap) as c:
        listed = c.list_topics()
        assert listed == c.topics()
        assert {a, b} <= set(listed)                     # kafka-python's topics(): a set
        assert [p.partition for p in listed[a]] == [0, 1]
        assert [p.partition for p in listed[b]] == [0]


def test_partitions_for_topic_creates_only_when_both_sides_allow_it(
        mock_cluster: MockCluster) -> None:
    """The mock cluster auto-creates topics (4 partitions) when the request allows it."""
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap,
                       allow_auto_create_topics=False) as c:
        assert c.partitions_for_topic("fresh") is None
        assert "fresh" not in c.topics()
    with KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap) as c:   # Java's default: true
        assert c.partitions_for_topic("fresh") == {0, 1, 2, 3}
        assert "fresh" in c.topics()
    with FakeCluster(1) as cluster:                     # a broker that does not auto-create
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap) as c:
            assert c.partitions_for_topic("fresh") is None
            assert c.topics() == {}
        assert cluster.errors == []


# ----------------------------------------------------------------------------- poll


def test_poll_refuses_a_float_timeout_and_loses_nothing(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    tp = TP(topic, 0)
    records = [TestRecord(key=b"k%d" % i, value=b"v%d" % i, partition=0) for i in range(3)]
    assert produce(tansu.bootstrap, topic, records) == [(0, 0), (0, 1), (0, 2)]
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([tp])
        for call, value in [(c.poll, 1.0), (c.poll_arrow, 0.5), (c.poll, 1500.0)]:
            started = time.monotonic()
            with pytest.raises(TypeError) as info:
                call(value)
            assert str(info.value) == (
                f"poll(timeout_ms={value!r}): timeout_ms is an int of milliseconds, not a float "
                f"(seconds?): use poll(timeout_ms=1000) to wait one second, or int(...) a "
                f"computed value")
            assert time.monotonic() - started < 0.05         # refused before any waiting
        with pytest.raises(TypeError, match=r"^timeout_ms must be an int of milliseconds, "
                                            r"got True$"):
            c.poll(True)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^timeout_ms must be an int of milliseconds, "
                                            r"got '100'$"):
            c.poll("100")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"^timeout_ms must be >= 0, got -1$"):
            c.poll(-1)
        assert c.highwater(tp) is None                       # nothing fetched yet
        got: list[tuple[int, bytes | None]] = []
        deadline = time.monotonic() + 10
        while len(got) < 3 and time.monotonic() < deadline:
            got += [(r.offset, r.value) for r in c.poll(timeout_ms=500).get(tp, [])]
        assert got == [(0, b"v0"), (1, b"v1"), (2, b"v2")]
        assert c.highwater(tp) == 3 and c.position(tp) == 3
